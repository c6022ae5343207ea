/*
 * Internal structures of sucg. Not installed.
 */
#ifndef SUCG_INTERNAL_H_
#define SUCG_INTERNAL_H_

#include "sucg/api/sucg.h"
#include "sucg/core/sucg_config.h"
#include "sucg/core/sucg_rcache.h"
#include "sucg/sched/sucg_sched.h"
#include "sucg/allgather/allgather_am_def.h"

#include <string.h>

/* The UCC TL compiles sucg into itself with SUCG_EXPORT defined empty, so
 * that its copy stays private beside a process's libsucg */
#ifndef SUCG_EXPORT
#define SUCG_EXPORT __attribute__((visibility("default")))
#endif

#define sucg_error(_fmt, ...) \
    fprintf(stderr, "[sucg] error: " _fmt "\n", ## __VA_ARGS__)
#define sucg_warn(_fmt, ...) \
    fprintf(stderr, "[sucg] warning: " _fmt "\n", ## __VA_ARGS__)

/*
 * Zero-copy descriptor: where a rank's receive buffer is, for one
 * collective. Written by the receiver into the sender's group buffer (see
 * allgather_rdma.c). Fixed-size slot; the packed rkey must fit.
 */
#define SUCG_DESC_SLOT_SIZE  512
typedef struct sucg_desc {
    uint64_t addr;      /* remote rbuf address */
    uint64_t reg_id;    /* receiver's registration id: sender-side rkey cache key */
    uint32_t rkey_len;
    uint32_t pad;
    uint8_t  rkey[];    /* packed rkey */
} sucg_desc_t;
#define SUCG_DESC_RKEY_MAX (SUCG_DESC_SLOT_SIZE - sizeof(sucg_desc_t))

/* Per-peer cache of unpacked rkeys of that peer's receive buffers */
#define SUCG_PEER_RKEY_CACHE 4
typedef struct sucg_peer {
    ucp_ep_h   ep;
    uint64_t   buf_addr;   /* peer's group buffer */
    ucp_rkey_h buf_rkey;
    uint8_t   *buf_ptr;    /* ... mapped in our address space (shared
                              memory, ucp_rkey_ptr), else NULL: writes
                              there are stores, see allgather_rdma.c */
    int        tail_ok;    /* staged steps to it may go as one put with
                              the flag last (allgather_tail.c) */
    struct {
        uint64_t   reg_id;  /* 0: empty */
        uint64_t   last_use;
        ucp_rkey_h rkey;
    } rcache[SUCG_PEER_RKEY_CACHE];
} sucg_peer_t;

struct sucg_context {
    ucp_context_h  ucp_context;
    ucp_worker_h   ucp_worker;
    sucg_config_t  config;
    sucg_rcache_t  rcache;
    sucg_group_h   groups;       /* list, walked by sucg_progress() */
    uint16_t       next_group_id;
    uint64_t       rkey_tick;
    unsigned       fault_seed;   /* rand_r state of SUCG_FAULT_REG_FAIL */
    int            am_enabled;   /* sucg_context_enable_am() registered */
    uint16_t       am_id;        /* ... this handler id */
    sucg_stats_t   stats;
};

/*
 * Group buffer, registered once (one ucp_mem_map) at group creation and
 * exchanged with one OOB allgather. Two halves, used by collectives of odd
 * and even sequence numbers (double buffering, see allgather_rdma.c for why
 * two are enough). Layout of one half:
 *
 *   data_flag[nslots]   u64  flag of the data of step s, value = seq
 *   desc_flag[ndesc]    u64  flag of descriptor slot d, value = seq
 *   desc[ndesc]         SUCG_DESC_SLOT_SIZE each
 *   stage[stage_size]   staging copy of the result (identity layout)
 *   tail_rx[ntail]      SUCG_TAIL_SLOT_SIZE each, SUCG_STAGED_STEP=tail
 *   tail_tx[ntail]      only: a peer's step s lands in my tail_rx[s], its
 *                       flag at the slot's offset SUCG_TAIL_MAX and its
 *                       data just before; tail_tx[s] is where I compose
 *                       mine (a put reads one contiguous source)
 */
/* Largest tail step, and its slot: the data, the flag, aligned */
#define SUCG_TAIL_MAX        32768
#define SUCG_TAIL_SLOT_SIZE  (SUCG_TAIL_MAX + 64)

typedef struct sucg_group_layout {
    size_t half_size;
    size_t nslots;
    size_t ndesc;
    size_t data_flag_off;
    size_t desc_flag_off;
    size_t desc_off;
    size_t stage_off;
    size_t stage_size;
    size_t ntail;          /* tail slots per direction, 0 without tail */
    size_t tail_rx_off;
    size_t tail_tx_off;
} sucg_group_layout_t;

struct sucg_group {
    sucg_context_h      ctx;
    sucg_group_h        next;       /* in ctx->groups */
    int                 rank;
    int                 size;
    uint16_t            id;         /* tag space of the p2p algorithms,
                                       and of step messages */
    int                 am;         /* every rank takes staged steps as
                                       active messages */
    int                 zcopy_tag;  /* zero-copy steps go by tag
                                       (SUCG_ZCOPY_STEP, agreed) */
    int                 tail;       /* SUCG_STAGED_STEP=tail (agreed): the
                                       tail slots exist; a sender takes
                                       them per peer (tail_ok) */
    int                 own_eps;
    sucg_peer_t        *peers;
    ucp_mem_h           buf_memh;
    uint8_t            *buf;
    size_t              buf_size;
    sucg_group_layout_t layout;
    uint64_t            seq;        /* collectives started */
    sucg_coll_h         queue_head; /* started, in order; head is running */
    sucg_coll_h         queue_tail;
    /* between sucg_group_create_post and _complete */
    struct sucg_oob_record *create_rec;   /* this rank's record */
    ucs_status_t        create_status;    /* of the local part */
};

typedef enum {
    SUCG_COLL_STATE_IDLE,
    SUCG_COLL_STATE_QUEUED,
    SUCG_COLL_STATE_RUNNING,
    SUCG_COLL_STATE_DONE
} sucg_coll_state_t;

typedef struct sucg_coll_ops {
    ucs_status_t (*start)(sucg_coll_h coll);     /* when it becomes head */
    ucs_status_t (*progress)(sucg_coll_h coll);  /* UCS_INPROGRESS until done */
    void         (*cleanup)(sucg_coll_h coll);   /* on error/free mid-way */
} sucg_coll_ops_t;

#define SUCG_P2P_MAX_REQS (2 * SUCG_SCHED_MAX_RANGES)

/* Staged steps that may go as active messages; later ones (only with a
 * huge SUCG_ALLGATHER_ZCOPY_THRESH) are puts */
#define SUCG_AM_MAX_STEPS 16
typedef struct sucg_am_tx {
    sucg_am_hdr_t hdr;
    ucp_dt_iov_t  iov[SUCG_SCHED_MAX_RANGES];
} sucg_am_tx_t;

struct sucg_coll {
    sucg_group_h          group;
    sucg_coll_params_t    params;
    sucg_allgather_algo_t algo;
    sucg_sched_kind_t     kind;
    int                   nsteps;
    const sucg_coll_ops_t *ops;
    sucg_coll_state_t     state;
    ucs_status_t          status;
    int                   started_once;
    sucg_coll_h           next;        /* in group queue */

    /* per run */
    uint64_t              seq;
    int                   step;
    int                   sent;        /* 0: nothing, 1: data, 2: flag sent */
    unsigned              flushing;    /* ep flushes in flight */
    unsigned              outstanding; /* UCP requests in flight */
    ucs_status_t          req_status;  /* first failed request */

    /* RDMA */
    int                   nstaged;     /* leading steps using the group buffer */
    int                   in_stage;    /* received data still in staging */
    uint64_t              in_rbuf;     /* staged steps whose data went to
                                          rbuf at once (tail steps), by bit */
    sucg_rcache_entry_t  *rreg;        /* rbuf registration */
    uint64_t              flag_src;    /* source of flag puts (= seq) */
    uint8_t               desc_src[SUCG_DESC_SLOT_SIZE]; /* my descriptor */
    size_t                desc_len;
    int                   tagged_rx;   /* zero-copy steps come by tagged
                                          messages: the group takes them
                                          so, or rbuf is not registered */
    int                   step_noflag; /* this step's data went by tag or
                                          as an active message: no flag */
    int                   rx_posted;   /* this step's tagged receives posted */
    sucg_am_tx_t          am_tx[SUCG_AM_MAX_STEPS]; /* step messages in flight */

    /* P2P */
    void                 *reqs[SUCG_P2P_MAX_REQS];
    int                   nreqs;
};

/* Group buffer helpers */
static inline size_t sucg_half_off(sucg_group_h g, uint64_t seq)
{
    return (seq & 1) * g->layout.half_size;
}

static inline volatile uint64_t *sucg_data_flag(sucg_group_h g, uint64_t seq,
                                                int slot)
{
    return (volatile uint64_t*)(g->buf + sucg_half_off(g, seq) +
                                g->layout.data_flag_off) + slot;
}

static inline volatile uint64_t *sucg_desc_flag(sucg_group_h g, uint64_t seq,
                                                int slot)
{
    return (volatile uint64_t*)(g->buf + sucg_half_off(g, seq) +
                                g->layout.desc_flag_off) + slot;
}

static inline uint8_t *sucg_desc_slot(sucg_group_h g, uint64_t seq, int slot)
{
    return g->buf + sucg_half_off(g, seq) + g->layout.desc_off +
           (size_t)slot * SUCG_DESC_SLOT_SIZE;
}

static inline uint8_t *sucg_stage(sucg_group_h g, uint64_t seq)
{
    return g->buf + sucg_half_off(g, seq) + g->layout.stage_off;
}

/* Offset of tail slot @a step of half @a seq, receive or compose side */
static inline size_t sucg_tail_off(sucg_group_h g, uint64_t seq, int step,
                                   int tx)
{
    return sucg_half_off(g, seq) +
           (tx ? g->layout.tail_tx_off : g->layout.tail_rx_off) +
           (size_t)step * SUCG_TAIL_SLOT_SIZE;
}

/* Acquire load of a flag: data behind it is read only after the flag */
static inline int sucg_flag_is(volatile uint64_t *flag, uint64_t value)
{
    return __atomic_load_n((uint64_t*)flag, __ATOMIC_ACQUIRE) == value;
}

/*
 * UCP requests of a running collective (sucg_coll_req.c): parameters whose
 * callback accounts the request to @a coll, and tracking of what
 * ucp_*_nbx() returned (outstanding count, first error).
 */
void         sucg_coll_req_param(sucg_coll_h coll, ucp_request_param_t *param,
                                 ucp_mem_h memh);
ucs_status_t sucg_coll_req_track(sucg_coll_h coll, ucs_status_ptr_t sptr);

/* Staged steps as active messages: the handler (core/sucg_am_rx.c), the
 * send (allgather/allgather_am.c) */
void         sucg_am_disable(sucg_context_h ctx);
ucs_status_t sucg_am_send_step(sucg_coll_h coll, const sucg_sched_step_t *st,
                               ucp_ep_h ep);

/* Algorithms */
extern const sucg_coll_ops_t sucg_allgather_rdma_ops;
extern const sucg_coll_ops_t sucg_allgather_p2p_ops;

/* One step's tagged receives and/or sends (allgather_p2p.c), also used by
 * the RDMA executor for a receiver whose buffer could not be registered */
#define SUCG_P2P_RECV 1u
#define SUCG_P2P_SEND 2u
ucs_status_t sucg_p2p_post(sucg_coll_h coll, const sucg_sched_step_t *st,
                           unsigned dirs);

/* Group geometry, as used by the layout and by the group creation; @a tail:
 * with the slots of SUCG_STAGED_STEP=tail */
size_t sucg_group_layout_init(sucg_group_layout_t *l, int size,
                              size_t stage_total, int tail);

/* Staged steps as one put with the flag last (allgather_tail.c): may step
 * @a st of @a coll go so (@a recv: as the receiver sees it; the sender
 * also asks its peer's tail_ok, set at group creation), its send, and its
 * receive (UCS_INPROGRESS until the flag came; then the data is in the
 * staging copy) */
int          sucg_tail_step(sucg_coll_h coll, const sucg_sched_step_t *st,
                            int recv);
ucs_status_t sucg_tail_send_step(sucg_coll_h coll, const sucg_sched_step_t *st);
ucs_status_t sucg_tail_recv_step(sucg_coll_h coll, const sucg_sched_step_t *st);

#endif
