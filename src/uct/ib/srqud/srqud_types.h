/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The state of an srqud interface and of its endpoints, in one place: the
 * structures every layer reads (descriptors, the interface, endpoints,
 * zero-copy state, the protocol table) and the few inline helpers that
 * belong to them (the lock, fault injection draws, control routing). The
 * functions live in the layer files; docs/design.md draws the layers.
 */

#ifndef UCT_SRQUD_TYPES_H_
#define UCT_SRQUD_TYPES_H_

#include "srqud_config.h"
#include "srqud_def.h"
#include "srqud_hash.h"
#include "srqud_md.h"
#include "srqud_stats.h"
#include "srqud_rel.h"
#include "srqud_rxpool.h"
#include "srqud_sr.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <ucs/datastruct/ptr_array.h>
#include <ucs/datastruct/list.h>
#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <ucs/time/time.h>
#include <ucs/type/spinlock.h>
#include <ucs/sys/sys.h>
#include <infiniband/verbs.h>
#include <string.h>


/* How many completions are stashed when event_arm finds some that arrived
 * before the CQ was armed */
#define UCT_SRQUD_STASH_MAX   16

/* Free receive buffers an interface keeps out of its pool (see rx.cache) */
#define UCT_SRQUD_RX_CACHE_MAX 64


/* Receive descriptors and their layout: srqud_rxpool.h */


enum {
    UCT_SRQUD_DESC_FLAG_IN_SQ     = UCS_BIT(0), /* posted, not completed */
    UCT_SRQUD_DESC_FLAG_IN_WINDOW = UCS_BIT(1)  /* kept for retransmission */
};


/* Send descriptor, followed by the packet (network header first). It is
 * freed when it is neither on the send queue nor in an ep's window.
 * am_zcopy: the packet in the descriptor is only the headers; the payload
 * stays in the user's memory, gathered by zsge[] on every (re)send, and the
 * user's completion runs when the peer has acknowledged it. */
typedef struct uct_srqud_send_desc {
    ucs_queue_elem_t         queue;   /* in tx.outstanding while IN_SQ */
    uct_srqud_tx_slot_t      slot;    /* in ep->tx.window while IN_WINDOW */
    uint64_t                 sn;      /* send sequence number of its WQE */
    uct_completion_t         *comp;   /* am_zcopy: user completion */
    uint32_t                 lkey;
    uint16_t                 length;  /* bytes in the descriptor, neth incl. */
    uint8_t                  flags;
    uint8_t                  num_zsge;/* am_zcopy: user memory entries */
    struct ibv_sge           zsge[UCT_SRQUD_MAX_IOV];
} uct_srqud_send_desc_t;


/* Identifies a remote sender: its port GID, QP and endpoint id */
typedef struct uct_srqud_peer_key {
    uint8_t                  gid[16];
    uint32_t                 qpn;
    uint32_t                 ep_id;
} UCS_S_PACKED uct_srqud_peer_key_t;

#define uct_srqud_peer_key_hash(_key) \
    uct_srqud_hash_fnv1a(&(_key), sizeof(_key))

#define uct_srqud_peer_key_equal(_a, _b) (!memcmp(&(_a), &(_b), sizeof(_a)))

typedef struct uct_srqud_ep   uct_srqud_ep_t;
typedef struct uct_srqud_xfer uct_srqud_xfer_t;

KHASH_INIT(uct_srqud_peer, uct_srqud_peer_key_t, uct_srqud_ep_t*, 1,
           uct_srqud_peer_key_hash, uct_srqud_peer_key_equal)


typedef struct uct_srqud_ah_key {
    uint8_t                  gid[16];
    uint16_t                 lid;
} UCS_S_PACKED uct_srqud_ah_key_t;

#define uct_srqud_ah_key_hash(_key) \
    uct_srqud_hash_fnv1a(&(_key), sizeof(_key))

#define uct_srqud_ah_key_equal(_a, _b) (!memcmp(&(_a), &(_b), sizeof(_a)))

/* One address handle per remote port, shared by all endpoints to it and
 * counted: one no endpoint uses waits among the last few unused ones (a
 * peer that comes back finds it), older ones are destroyed, so that
 * forged source addresses do not pile up handles */
typedef struct uct_srqud_ah_entry {
    struct ibv_ah            *ah;
    unsigned                 refcount;
    ucs_list_link_t          unused;  /* in iface->ah_unused, refcount 0 */
    uct_srqud_ah_key_t       key;
} uct_srqud_ah_entry_t;

KHASH_INIT(uct_srqud_ah, uct_srqud_ah_key_t, uct_srqud_ah_entry_t*, 1,
           uct_srqud_ah_key_hash, uct_srqud_ah_key_equal)


/*
 * A UD QP number has 24 bits. The sink sends its pool QP as (generation <<
 * 24 | QP number), and the source puts the generation in the top byte of
 * every chunk's immediate (the chunk number in the low 24): a chunk of an
 * earlier transfer that served the same pool QP (a late duplicate, a round
 * the sink ended early) would otherwise land in the next transfer's
 * receives as one of its own chunks, and its bytes in the wrong buffer.
 */
#define UCT_SRQUD_ZCOPY_TAG_SHIFT     24
#define UCT_SRQUD_ZCOPY_NUM_MASK      UCS_MASK(UCT_SRQUD_ZCOPY_TAG_SHIFT)


/* A receive QP of the pool, bound to one transfer at a time */
typedef struct uct_srqud_pool_qp {
    struct ibv_qp            *qp;
    struct ibv_cq            *cq;
    uct_srqud_xfer_t         *xfer;    /* NULL: free */
    uint8_t                  gen;      /* transfers it served: tags chunks */
    uint32_t                 qkey;     /* this transfer's, see zhdr.qkey */
    ucs_list_link_t          list;     /* in the free list */
} uct_srqud_pool_qp_t;


/* Chunks to send for one request, on the chunk send QP */
typedef struct uct_srqud_zsend_job {
    ucs_queue_elem_t         queue;
    struct ibv_ah            *ah;
    uint32_t                 dest_qpn;
    uint8_t                  tag;       /* the sink's pool QP generation */
    uint32_t                 qkey;      /* the sink's pool QP's Q_Key */
    uint32_t                 lkey;
    uint64_t                 base;      /* local address of chunk 0 */
    uint64_t                 length;    /* of the whole transfer */
    uint32_t                 chunk;     /* chunk size */
    uint32_t                 *list;     /* chunk numbers, in order */
    uint32_t                 count;
    uint32_t                 pos;       /* next to post */
    uint32_t                 unsignaled;/* posted since the last signaled */
    uint32_t                 in_flight; /* posted, completion not seen */
    uint8_t                  queued;    /* in zcopy.jobs: not all posted */
    /* all posted (the source then says ZFIN); all completed (the HCA is
     * done with the memory) */
    void                     (*posted)(uct_srqud_iface_t *iface,
                                       struct uct_srqud_zsend_job *job);
    void                     (*drained)(uct_srqud_iface_t *iface,
                                        struct uct_srqud_zsend_job *job);
    void                     *arg;
} uct_srqud_zsend_job_t;


/* A signaled chunk send and the unsignaled ones before it */
typedef struct uct_srqud_zmarker {
    uct_srqud_zsend_job_t    *job;
    uint32_t                 covered;
} uct_srqud_zmarker_t;


/* Zero-copy state of an interface (settings: iface->config.zcopy_*) */
typedef struct uct_srqud_zcopy {
    /* chunk send QP */
    struct ibv_qp            *sqp;
    struct ibv_cq            *scq;
    unsigned                 sq_available;
    ucs_queue_head_t         jobs;        /* waiting or posting */
    uct_srqud_zmarker_t      *markers;    /* ring: signaled sends in flight */
    unsigned                 marker_head;
    unsigned                 marker_count;
    unsigned                 user_jobs;   /* the user's puts sending */
    /* receive pool */
    uct_srqud_pool_qp_t      *pool;
    unsigned                 pool_created;
    unsigned                 pool_peak;   /* most created at once */
    ucs_list_link_t          pool_free;
    void                     *scratch;    /* GRH slot + a chunk of tail */
    struct ibv_mr            *scratch_mr;
    /* transfers (srqud_zcopy.c) */
    ucs_list_link_t          xfers;
    uint32_t                 next_id;
    uint32_t                 chunk;       /* path MTU */
    unsigned                 max_ranges;  /* per control packet */
} uct_srqud_zcopy_t;


struct uct_srqud_iface {
    uct_base_iface_t         super;
    uct_srqud_md_t           *md;
    uint8_t                  port_num;
    uint8_t                  gid_index;
    uint8_t                  is_roce;
    uint16_t                 lid;
    union ibv_gid            gid;
    enum ibv_mtu             path_mtu;
    struct ibv_comp_channel  *comp_channel;
    struct ibv_cq            *send_cq;
    struct ibv_cq            *recv_cq;
    struct ibv_qp            *qp;
    struct ibv_td            *td;         /* SHARE=td: its thread domain */
    struct ibv_pd            *qp_pd;      /* the md's PD, or a parent
                                             domain of it with td */
    khash_t(uct_srqud_ah)    ah_hash;
    ucs_list_link_t          ah_unused;   /* uct_srqud_ah_entry_t, oldest
                                             first */
    unsigned                 ah_unused_count;
    khash_t(uct_srqud_peer)  peers;       /* passive eps by remote sender */
    ucs_ptr_array_t          eps;         /* all eps by id */

    struct {
        /* The receive pool (its own, or shared by the md's interfaces) and
         * a cache of free buffers of its own; the cache and the counts
         * below are the interface's lock's (a descriptor the user kept
         * and releases from another thread takes it too) */
        uct_srqud_rxpool_t   *pool;
        unsigned             cache_count;
        uct_srqud_recv_desc_t *cache[UCT_SRQUD_RX_CACHE_MAX];
        unsigned long        taken;       /* lent by the pool: cached,
                                             polled, held, queued, user's */
        unsigned             polled;      /* polled, not yet told to the
                                             pool and taken (the
                                             interface's lock; see
                                             uct_srqud_rx_report) */
        unsigned             stash_count;
        struct ibv_wc        stash[UCT_SRQUD_STASH_MAX];
        ucs_list_link_t      ack_list;    /* passive eps owing an ack */
        ucs_time_t           ack_due;     /* none of them is due before */
        int                  carry_due;   /* one reached BACK_ACK_EVERY
                                             packets since a send looked */
        unsigned             held;        /* in reorder buffers, all eps */
    } rx;

    struct {
        ucs_mpool_t          mp;
        int                  available;   /* free send WQEs */
        uint64_t             sn;          /* sends posted */
        uint64_t             comp_sn;     /* sends completed */
        uint64_t             sig_sn;      /* the last signaled send */
        unsigned             unsignaled;  /* posted since a signaled one */
        int                  unsig_recent;/* an unsignaled send was posted
                                             since the last progress */
        int                  poll_unsignaled; /* look for completions of
                                             unsignaled sends (a failed QP
                                             completes them in error) */
        ucs_queue_head_t     outstanding; /* descs posted, not completed:
                                             those the HCA may still read
                                             (all but the unsignaled) */
        ucs_list_link_t      active_list; /* eps with unacknowledged packets */
        ucs_time_t           next_timer;  /* next retransmission check */
        ucs_arbiter_t        arbiter;     /* endpoints with pending requests */
        int                  qp_error;    /* a send failed: the QP is in the
                                             error state until reset */
        int                  flushed;     /* the reset flushed packets kept
                                             for retransmission: their slots
                                             are marked lost */
        unsigned             stash_count;
        struct ibv_wc        stash[UCT_SRQUD_STASH_MAX];
        /* sends waiting for one doorbell (srqud_tx.c): already counted in
         * sn and available, their descriptors in outstanding */
        struct uct_srqud_tx_batch_wr *batch;
        unsigned             batch_count;
    } tx;

    /* Settings as applied by srqud_config.c (see there for each one), and
     * what the device made of them */
    struct {
        unsigned             tx_queue_len;
        unsigned             tx_qlen;     /* the send queue created */
        unsigned             tx_max_poll;
        unsigned             tx_batch;    /* sends per doorbell */
        unsigned             tx_cq_moderation; /* a completion every N */
        unsigned             rx_max_poll;
        unsigned             srq_size;
        unsigned             srq_max_size;
        unsigned long        srq_limit;   /* UCS_ULUNITS_AUTO: Eq. 5 */
        unsigned long        gid_index;   /* UCS_ULUNITS_AUTO: chosen */
        unsigned             rx_cq_len;   /* receive CQ entries */
        unsigned             rx_post_batch;
        int                  share;       /* uct_srqud_share_t, as applied:
                                             td falls back to pd */
        unsigned             stalled_max;
        unsigned long        rx_max_bufs; /* RX_MAX_BUFS, -1: no bound */
        unsigned             rx_grow;     /* RX_BUFS_GROW */
        size_t               seg_size;    /* payload of one packet, neth incl. */
        size_t               mtu;         /* the port's active MTU, bytes */
        int                  stats_dump;
        size_t               max_inline;
        unsigned             zcopy_max_iov; /* am_zcopy payload entries */
        unsigned             rx_payload_offset;
        unsigned             rx_hdr_offset;
        unsigned             rx_headroom_offset;
        unsigned             sl;
        unsigned             traffic_class;
        unsigned             hop_limit;
        unsigned             tx_window;
        unsigned             rx_reorder;  /* span an ep may hold */
        unsigned             rx_held_max; /* held by all eps at most */
        unsigned             rx_held_ep_max; /* ... by one */
        unsigned             ack_thresh;
        ucs_time_t           ack_delay;
        int                  back_ack;     /* acks ride on replies (RoCE) */
        unsigned             back_ack_every; /* packets owed before one does */
        ucs_time_t           rto_min;
        ucs_time_t           rto_max;
        ucs_time_t           peer_timeout;
        ucs_time_t           async_tick;
        unsigned             zcopy_qps;   /* receive QPs of the pool */
        size_t               zcopy_thresh;
        unsigned             zcopy_rq_depth;
        unsigned             zcopy_sq_depth;
        unsigned             zcopy_peer_jobs; /* a peer's transfers here */
        unsigned             passive_max;  /* passive eps kept */
        ucs_time_t           passive_idle; /* reapable after this long */
        unsigned             rma_refusals_max; /* records per passive ep */
        int                  fault_tx;     /* any of the next three */
        uint32_t             fault_drop;   /* out of 2^32; 0: off */
        uint32_t             fault_dup;
        uint32_t             fault_qp_error;
        uint32_t             fault_chunk_drop; /* chunks: out of 2^32 - 1,
                                                  the maximum drops all */
    } config;

    uint64_t                 fault_rand;   /* xorshift state */
    uint32_t                 conn_sn;      /* next active ep's incarnation */

    /* Progress on UCX's async thread while the user does not progress
     * (as UCX's ud does): peers' packets are acknowledged and timers run
     * even while the application computes; what would call the user back
     * (AM handlers, completions of our own sends) is queued for the next
     * user progress. Everything is under the worker's async lock. */
    struct {
        int                  timer_id;      /* UCX timer: the tick, or the
                                               watchdog's rescue */
        int                  wd_fd;         /* watchdog timerfd, watched by the
                                               async thread (thread modes) */
        ucs_time_t           wd_armed;      /* when the watchdog was last set */
        ucs_time_t           last_progress; /* of the user's progress */
        int                  active;        /* in the timer callback */
        int                  wake_user;     /* it found work for the user */
        ucs_queue_head_t     rx_q;          /* uct_srqud_recv_desc_t */
        unsigned             queued;        /* in rx_q */
        int                  back_due;      /* eps with FLAG_BACK_DUE */
        uct_async_event_cb_t event_cb;      /* wakes a sleeping user (UCP) */
        void                 *event_arg;
    } async;

    /* Zero-copy transfers (srqud_zengine.c, srqud_zcopy.c) and copy-path
     * RMA operations (srqud_rma.c) */
    uct_srqud_zcopy_t        zcopy;
    struct {
        ucs_list_link_t      ops;         /* uct_srqud_rma_op_t */
        uint32_t             next_id;
        uint32_t             next_refusal_id;
    } rma;

    /* Passive eps (peers' connections), at most config.passive_max: in the
     * order the reaper looks at them (srqud_ep_rx.c) */
    struct {
        ucs_list_link_t      list;
        unsigned             count;
    } passive;

    uct_srqud_iface_stats_t  stats;

    uct_recv_desc_t          release_desc;
    uct_am_callback_t        am_stub;     /* UCT's handler of an AM id the
                                             user set none for (it logs a
                                             backtrace per message) */
    ucs_time_t               log_time;    /* the last peer-caused log line */
    unsigned long            log_suppressed; /* ... and those held back */

    /* The protocols above the endpoint (srqud_proto.c): control opcodes and
     * what an ep's end or a flush asks of them */
    const struct uct_srqud_proto *proto;
};


/* A control packet's payload for the handler of its opcode */
typedef void (*uct_srqud_ctl_handler_t)(uct_srqud_iface_t *iface,
                                        uct_srqud_ep_t *ep,
                                        const void *payload, size_t length);


enum {
    /* runs before the packet's acknowledgement is processed (an error for
     * an operation the acknowledgement would complete) */
    UCT_SRQUD_CTL_ROUTE_BEFORE_ACK = UCS_BIT(0),
    /* a request without a psn (RMA_SEEN): handled when it arrives, out of
     * the ep's sequence */
    UCT_SRQUD_CTL_ROUTE_UNSEQUENCED = UCS_BIT(1)
};


typedef struct uct_srqud_ctl_route {
    const char               *name;
    size_t                   min_length;  /* shorter: dropped as malformed */
    unsigned                 flags;       /* UCT_SRQUD_CTL_ROUTE_xx */
    uct_srqud_ctl_handler_t  request;     /* a peer's request, accepted in
                                             order on its passive ep */
    uct_srqud_ctl_handler_t  answer;      /* an answer to this side, on the
                                             active ep that asked */
} uct_srqud_ctl_route_t;


typedef struct uct_srqud_proto {
    uct_srqud_ctl_route_t    routes[UCT_SRQUD_CTL_LAST]; /* by opcode */
    /* @a async: from the async thread, only what calls nobody */
    unsigned                 (*progress)(uct_srqud_iface_t *iface,
                                         ucs_time_t now, int async);
    /* nothing of this side in progress (flush, event_arm) */
    int                      (*idle)(uct_srqud_iface_t *iface);
    /* the ep failed or goes away: its operations end with @a status */
    void                     (*ep_cleanup)(uct_srqud_iface_t *iface,
                                           uct_srqud_ep_t *ep,
                                           ucs_status_t status);
    /* a passive ep with UCT_SRQUD_EP_FLAG_ACK_HELD owes an ack: what goes
     * instead (the refusal the held ack must travel with) */
    ucs_status_t             (*ack_held)(uct_srqud_iface_t *iface,
                                         uct_srqud_ep_t *ep);
    /* the ep is freed: nothing of the protocols may refer to it after
     * (a transfer whose chunk sends are still in flight lets go of it and
     * of the user's completion, which runs now) */
    void                     (*ep_release)(uct_srqud_iface_t *iface,
                                           uct_srqud_ep_t *ep);
} uct_srqud_proto_t;


enum {
    UCT_SRQUD_EP_FLAG_PASSIVE    = UCS_BIT(0), /* created for a remote sender */
    UCT_SRQUD_EP_FLAG_CREQ_SENT  = UCS_BIT(1),
    UCT_SRQUD_EP_FLAG_CONNECTED  = UCS_BIT(2), /* knows the remote ep id */
    UCT_SRQUD_EP_FLAG_FAILED     = UCS_BIT(3),
    UCT_SRQUD_EP_FLAG_ACK_QUEUED = UCS_BIT(4), /* in iface->rx.ack_list */
    UCT_SRQUD_EP_FLAG_ACTIVE     = UCS_BIT(5), /* in iface->tx.active_list */
    UCT_SRQUD_EP_FLAG_CREP_DUE   = UCS_BIT(6), /* passive: CREP not yet sent */
    UCT_SRQUD_EP_FLAG_ACK_NOW    = UCS_BIT(7), /* the queued ack may not wait */
    UCT_SRQUD_EP_FLAG_LINGER     = UCS_BIT(8), /* destroyed by the user, kept
                                                  until its data is acked */
    UCT_SRQUD_EP_FLAG_CONN_SN    = UCS_BIT(9), /* passive: conn_sn is known */
    UCT_SRQUD_EP_FLAG_IN_PENDING = UCS_BIT(10),/* one of its pending requests
                                                 is being dispatched */
    UCT_SRQUD_EP_FLAG_FENCED     = UCS_BIT(11),/* a fence waits for ops */
    UCT_SRQUD_EP_FLAG_GAP        = UCS_BIT(12),/* passive: a packet arrived
                                                  ahead of a gap since the
                                                  last ack (goes as NACK) */
    UCT_SRQUD_EP_FLAG_REORDERS   = UCS_BIT(13),/* its path was seen to reorder:
                                                 RACK's window applies */
    UCT_SRQUD_EP_FLAG_ACK_HELD   = UCS_BIT(14),/* passive: acks reach at most
                                                 rx.ack_limit, but with a
                                                 refused put's answer */
    UCT_SRQUD_EP_FLAG_BACK_DUE   = UCS_BIT(15),/* active: the async thread
                                                 kept an ack that came back
                                                 (back_psn) for the user's
                                                 progress */
    UCT_SRQUD_EP_FLAG_HEARD      = UCS_BIT(16),/* passive: a packet came since
                                                 the reaper last looked */
    UCT_SRQUD_EP_FLAG_ESTABLISHED = UCS_BIT(17) /* passive: heard more than
                                                  its CREQ */
};


/* Flush waiting for the acknowledgement of a psn (and for the ep's RMA
 * operations) */
typedef struct uct_srqud_ep_flush {
    ucs_queue_elem_t         queue;
    uct_srqud_psn_t          psn;
    uint8_t                  wait_ops;  /* posted while operations ran: their
                                           later packets count too */
    uint8_t                  kind;      /* UCT_SRQUD_FLUSH_xx */
    uint32_t                 op_id;     /* FLUSH_OP: the copy-path put */
    ucs_status_t             status;    /* a refused put it reports */
    uct_completion_t         *comp;     /* NULL: an op without completion */
} uct_srqud_ep_flush_t;


/* What a queued flush completes, and so which refused puts it reports */
enum {
    UCT_SRQUD_FLUSH_USER,   /* uct_ep_flush / uct_iface_flush: the refused
                               put_short/bcopy sent before it */
    UCT_SRQUD_FLUSH_OP,     /* a copy-path put, all sent: its own refusal */
    UCT_SRQUD_FLUSH_CHECK   /* uct_ep_check: none */
};


typedef struct uct_srqud_ep {
    uct_base_ep_t            super;
    struct ibv_ah            *ah;
    uct_srqud_ah_entry_t     *ah_entry;    /* the cache's, for ah */
    uint32_t                 dest_qpn;
    uint32_t                 ep_id;        /* index in iface->eps */
    uint32_t                 dest_ep_id;   /* remote id, or EP_ID_NONE */
    /* Incarnation: an active ep's number, sent in its CREQ; a passive ep
     * keeps its peer's. An ep id is reused after its ep is gone, so a CREQ
     * with another number from the same (address, ep id) starts over. */
    uint32_t                 conn_sn;
    uint32_t                 token;        /* neth.token of the connection */
    uint32_t                 flags;        /* UCT_SRQUD_EP_FLAG_xx */
    ucs_status_t             fail_status;  /* with FLAG_FAILED */
    ucs_status_t             rma_status;   /* a refused put sent after the
                                              last flush, for the next */
    uct_srqud_psn_t          back_psn;     /* active, with FLAG_BACK_DUE: an
                                              ack that came back */
    uct_srqud_psn_t          ack_seen;     /* active: the newest cumulative
                                              ack received, applied or still
                                              queued by the async thread;
                                              never behind tx.acked */
    uint32_t                 ops;          /* RMA / zero-copy operations in
                                              progress (flush waits) */
    uint32_t                 flushes_wait_ops; /* flushes with wait_ops */
    uint32_t                 rma_refusal_id; /* the last RMA_REFUSE taken
                                                (repeats are ignored) */
    struct {
        uct_srqud_psn_t      next;         /* psn of the next packet */
        uct_srqud_psn_t      acked;        /* last acknowledged psn */
        uint16_t             cwnd;         /* congestion window, packets
                                              (srqud_sr.h); the send window
                                              on a clean path */
        uint16_t             ssthresh;
        ucs_queue_head_t     window;       /* unacknowledged descs, psn order */
        ucs_queue_head_t     flushes;      /* uct_srqud_ep_flush_t */
        ucs_time_t           progress_time;/* last new ack (or first send) */
        ucs_time_t           resend_time;  /* last timeout or new ack */
        ucs_time_t           rto;          /* current retransmission timeout */
        uct_srqud_rtt_t      rtt;          /* measured round trips */
        ucs_list_link_t      active_list;  /* in iface->tx.active_list */
    } tx;
    struct {
        uct_srqud_psn_t      expected;     /* next psn to deliver */
        uct_srqud_psn_t      ack_limit;    /* with FLAG_ACK_HELD */
        unsigned             unacked;      /* delivered since the last ack */
        uct_srqud_reorder_t  *reorder;     /* packets held ahead of a gap */
        ucs_time_t           ack_time;     /* when the owed ack was queued */
        ucs_list_link_t      ack_list;     /* in iface->rx.ack_list */
    } rx;
    ucs_arbiter_group_t      arb_group;    /* pending requests */
    uct_srqud_peer_key_t     peer_key;     /* passive: key in iface->peers */
    /* passive: what its peer makes this side hold, and its place in the
     * reaper's round */
    struct {
        ucs_list_link_t      list;         /* in iface->passive.list */
        ucs_time_t           idle_since;   /* heard nothing since, at least */
        ucs_list_link_t      refusals;     /* uct_srqud_rma_refusal_rec_t,
                                              oldest first */
        unsigned             refusals_count;
        unsigned             xfers;        /* zero-copy transfers it serves */
        unsigned             bad_tokens;   /* packets with a wrong token */
    } peer;
} uct_srqud_ep_t;


/* Fault injection (tests): a xorshift draw out of 2^32 */
static UCS_F_ALWAYS_INLINE uint32_t
uct_srqud_iface_fault_rand(uct_srqud_iface_t *iface)
{
    uint64_t x = iface->fault_rand;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    iface->fault_rand = x;
    return (uint32_t)(x >> 32);
}


/* A log line a peer's packet causes: at most one a second, with the count
 * of those held back, so that a host on the fabric cannot fill the log */
static inline int uct_srqud_iface_log_allowed(uct_srqud_iface_t *iface)
{
    ucs_time_t now = ucs_get_time();

    if (uct_srqud_time_since(now, iface->log_time) < ucs_time_from_sec(1.0)) {
        ++iface->log_suppressed;
        return 0;
    }
    iface->log_time = now;
    return 1;
}


/* Every entry point runs under the worker's async lock, which the async
 * progress timer also holds */
static UCS_F_ALWAYS_INLINE void uct_srqud_enter(uct_srqud_iface_t *iface)
{
    UCS_ASYNC_BLOCK(iface->super.worker->async);
}


static UCS_F_ALWAYS_INLINE void uct_srqud_leave(uct_srqud_iface_t *iface)
{
    UCS_ASYNC_UNBLOCK(iface->super.worker->async);
}


/* An entry point: _ret = _call, under the lock */
#define UCT_SRQUD_LOCKED(_iface, _ret, _call) \
    do { \
        uct_srqud_enter(_iface); \
        (_ret) = (_call); \
        uct_srqud_leave(_iface); \
    } while (0)


/* The route of a control packet that has a handler for this side, or NULL;
 * too short for its handler: counted as malformed and NULL */
static UCS_F_ALWAYS_INLINE const uct_srqud_ctl_route_t*
uct_srqud_proto_route(uct_srqud_iface_t *iface, uint8_t ctl, size_t length,
                      int is_request)
{
    const uct_srqud_ctl_route_t *route;

    if (ctl >= UCT_SRQUD_CTL_LAST) {
        return NULL;
    }

    route = &iface->proto->routes[ctl];
    if ((is_request ? route->request : route->answer) == NULL) {
        return NULL;
    }

    if (ucs_unlikely(length < route->min_length)) {
        ++iface->stats.rx_dropped_malformed;
        ucs_debug("%s: dropped a %s of %zu bytes", iface->md->name,
                  route->name, length);
        return NULL;
    }
    return route;
}

/* The interface of an endpoint */
static UCS_F_ALWAYS_INLINE uct_srqud_iface_t*
uct_srqud_ep_iface(uct_srqud_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_srqud_iface_t);
}

#endif
