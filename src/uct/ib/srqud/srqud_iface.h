/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * srqud interface: one UD QP per UCT interface (so each UCP worker has its
 * own QP and CQs, while the PD and registrations of the md are shared), fed
 * by one Shared Receive Queue whose buffer pool does not depend on the
 * number of peers.
 */

#ifndef UCT_SRQUD_IFACE_H_
#define UCT_SRQUD_IFACE_H_

#include "srqud_def.h"
#include "srqud_md.h"
#include "srqud_stats.h"
#include "srqud_zcopy.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <ucs/datastruct/ptr_array.h>
#include <ucs/datastruct/list.h>
#include <ucs/async/async.h>
#include <ucs/time/time.h>
#include <ucs/type/spinlock.h>
#include <infiniband/verbs.h>
#include <string.h>


/* How many completions are stashed when event_arm finds some that arrived
 * before the CQ was armed */
#define UCT_SRQUD_STASH_MAX   16


typedef struct uct_srqud_iface_config {
    uct_iface_config_t       super;
    unsigned                 tx_queue_len;   /* Send queue length */
    unsigned                 tx_max_poll;    /* Send CQ poll batch */
    unsigned                 rx_max_poll;    /* Receive CQ poll batch */
    unsigned                 srq_size;       /* Receive buffers kept posted */
    unsigned                 srq_max_size;   /* ... grown up to this */
    unsigned long            srq_limit;      /* UCS_ULUNITS_AUTO: Eq. 5 */
    unsigned                 rx_post_batch;  /* Repost receives in batches */
    uct_iface_mpool_config_t rx_mp;
    uct_iface_mpool_config_t tx_mp;
    unsigned long            gid_index;      /* UCS_ULUNITS_AUTO: pick one */
    unsigned                 sl;
    unsigned                 traffic_class;
    unsigned                 hop_limit;
    size_t                   seg_size;       /* 0: the port's active MTU */
    unsigned                 tx_window;      /* unacknowledged packets per ep */
    unsigned                 ack_thresh;     /* ack after this many packets */
    double                   ack_delay;      /* hold an ack at most this, s */
    double                   rto_min;        /* retransmission timeout, s */
    double                   rto_max;
    double                   peer_timeout;   /* no progress: peer is dead */
    double                   async_tick;     /* async progress period, s */
    unsigned                 zcopy_qps;      /* receive QPs of the pool */
    size_t                   zcopy_thresh;   /* smaller: the copy path */
    unsigned                 zcopy_rq_depth; /* receives per pool QP */
    unsigned                 zcopy_sq_depth; /* chunk send queue */
    int                      stats_dump;     /* counters on stderr at close */
    double                   fault_tx_drop;  /* test: drop this fraction */
    double                   fault_tx_dup;   /* test: send twice */
} uct_srqud_iface_config_t;


/* Receive descriptor, the head of each receive buffer. Layout:
 *
 *  desc                       rx_headroom_offset        rx_payload_offset
 *  |                          |                         |
 *  +--------------------------+----------+--------------+-----------------+
 *  | uct_srqud_recv_desc_t    | ...      | GRH | neth   | payload         |
 *  +--------------------------+----------+--------------+-----------------+
 *                                        ^ rx_hdr_offset: receive SGE start
 *
 * The GRH and network header are parsed before the AM handler runs; after
 * that UCP may use the same bytes as its headroom (uct_recv_desc_t pointer
 * and user headroom end exactly at the payload). */
typedef struct uct_srqud_recv_desc {
    ucs_queue_elem_t         queue;        /* in iface->async.rx_q */
    struct uct_srqud_ep      *ep;          /* queued: its active ep, or NULL
                                              for an AM to deliver */
    uint32_t                 payload_len;  /* queued AM */
    uint32_t                 lkey;
} uct_srqud_recv_desc_t;


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
    ucs_queue_elem_t         window;  /* in ep->tx.window while IN_WINDOW */
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

static UCS_F_ALWAYS_INLINE khint32_t
uct_srqud_peer_key_hash(uct_srqud_peer_key_t key)
{
    const uint8_t *p = (const uint8_t*)&key;
    khint32_t h      = 2166136261u;
    size_t i;

    for (i = 0; i < sizeof(key); ++i) {
        h = (h ^ p[i]) * 16777619u;
    }
    return h;
}

#define uct_srqud_peer_key_equal(_a, _b) (!memcmp(&(_a), &(_b), sizeof(_a)))

typedef struct uct_srqud_ep uct_srqud_ep_t;

KHASH_INIT(uct_srqud_peer, uct_srqud_peer_key_t, uct_srqud_ep_t*, 1,
           uct_srqud_peer_key_hash, uct_srqud_peer_key_equal)


typedef struct uct_srqud_ah_key {
    uint8_t                  gid[16];
    uint16_t                 lid;
} UCS_S_PACKED uct_srqud_ah_key_t;

static UCS_F_ALWAYS_INLINE khint32_t
uct_srqud_ah_key_hash(uct_srqud_ah_key_t key)
{
    const uint8_t *p = (const uint8_t*)&key;
    khint32_t h      = 2166136261u;
    size_t i;

    for (i = 0; i < sizeof(key); ++i) {
        h = (h ^ p[i]) * 16777619u;
    }
    return h;
}

#define uct_srqud_ah_key_equal(_a, _b) (!memcmp(&(_a), &(_b), sizeof(_a)))

/* One address handle per remote port, shared by all endpoints to it */
KHASH_INIT(uct_srqud_ah, uct_srqud_ah_key_t, struct ibv_ah*, 1,
           uct_srqud_ah_key_hash, uct_srqud_ah_key_equal)


struct uct_srqud_iface {
    uct_base_iface_t         super;
    uct_srqud_md_t           *md;
    ucs_list_link_t          md_list;     /* entry in md->iface_list */
    uint8_t                  port_num;
    uint8_t                  gid_index;
    uint8_t                  is_roce;
    uint16_t                 lid;
    union ibv_gid            gid;
    enum ibv_mtu             path_mtu;
    struct ibv_comp_channel  *comp_channel;
    struct ibv_cq            *send_cq;
    struct ibv_cq            *recv_cq;
    struct ibv_srq           *srq;
    struct ibv_qp            *qp;
    khash_t(uct_srqud_ah)    ah_hash;
    khash_t(uct_srqud_peer)  peers;       /* passive eps by remote sender */
    ucs_ptr_array_t          eps;         /* all eps by id */

    struct {
        ucs_mpool_t          mp;
        /* The SRQ is posted from the progress path and, later, from the
         * watermark thread: lock protects mp gets and SRQ posts. */
        ucs_spinlock_t       lock;
        unsigned             posted;      /* posted, completion not polled */
        unsigned             target;      /* buffers to keep posted */
        unsigned             limit;       /* armed SRQ limit, 0: off */
        ucs_time_t           last_limit_event;
        unsigned             stash_count;
        struct ibv_wc        stash[UCT_SRQUD_STASH_MAX];
        ucs_list_link_t      ack_list;    /* passive eps owing an ack */
    } rx;

    struct {
        ucs_mpool_t          mp;
        int                  available;   /* free send WQEs */
        uint64_t             sn;          /* sends posted */
        uint64_t             comp_sn;     /* sends completed */
        ucs_queue_head_t     outstanding; /* descs posted, not completed */
        ucs_list_link_t      active_list; /* eps with unacknowledged packets */
        ucs_time_t           next_timer;  /* next retransmission check */
        ucs_arbiter_t        arbiter;     /* endpoints with pending requests */
        unsigned             stash_count;
        struct ibv_wc        stash[UCT_SRQUD_STASH_MAX];
    } tx;

    struct {
        unsigned             tx_qlen;
        unsigned             tx_max_poll;
        unsigned             rx_max_poll;
        unsigned             srq_size;
        unsigned             srq_max_size;
        unsigned             rx_cq_len;   /* receive CQ entries */
        unsigned             rx_post_batch;
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
        unsigned             ack_thresh;
        ucs_time_t           ack_delay;
        ucs_time_t           rto_min;
        ucs_time_t           rto_max;
        ucs_time_t           peer_timeout;
        uint32_t             fault_drop;   /* out of 2^32; 0: off */
        uint32_t             fault_dup;
    } config;

    uint64_t                 fault_rand;   /* xorshift state */
    uint32_t                 conn_sn;      /* next active ep's incarnation */

    /* Progress on UCX's async thread while the user does not progress
     * (as UCX's ud does): peers' packets are acknowledged and timers run
     * even while the application computes; what would call the user back
     * (AM handlers, completions of our own sends) is queued for the next
     * user progress. Everything is under the worker's async lock. */
    struct {
        int                  timer_id;
        ucs_time_t           tick;
        ucs_time_t           last_progress; /* of the user's progress */
        int                  active;        /* in the timer callback */
        int                  wake_user;     /* it found work for the user */
        ucs_queue_head_t     rx_q;          /* uct_srqud_recv_desc_t */
        uct_async_event_cb_t event_cb;      /* wakes a sleeping user (UCP) */
        void                 *event_arg;
    } async;

    /* Zero-copy transfers (srqud_zcopy.c) and copy-path RMA operations
     * (srqud_rma.c) */
    uct_srqud_zcopy_t        zcopy;
    struct {
        ucs_list_link_t      ops;         /* uct_srqud_rma_op_t */
        uint32_t             next_id;
    } rma;

    uct_srqud_iface_stats_t  stats;

    uct_recv_desc_t          release_desc;
};


ucs_status_t uct_srqud_iface_srq_post(uct_srqud_iface_t *iface, unsigned max);

/* Give a receive buffer back to the pool */
void uct_srqud_iface_put_recv_desc(uct_srqud_iface_t *iface,
                                   uct_srqud_recv_desc_t *desc);

/* Invoke the AM handler for a received packet */
void uct_srqud_iface_deliver_am(uct_srqud_iface_t *iface,
                                uct_srqud_recv_desc_t *desc,
                                size_t payload_len);

/* Link bandwidth of a port, bytes per second */
double uct_srqud_port_bandwidth(const struct ibv_port_attr *port_attr);

void uct_srqud_iface_srq_event(uct_srqud_iface_t *iface,
                               enum ibv_event_type event_type);

ucs_status_t uct_srqud_iface_get_ah(uct_srqud_iface_t *iface,
                                    const uct_srqud_device_addr_t *dev_addr,
                                    struct ibv_ah **ah_p);

void uct_srqud_iface_progress_pending(uct_srqud_iface_t *iface);

ucs_status_t uct_srqud_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                   uct_completion_t *comp);

ucs_status_t uct_srqud_iface_post_send(uct_srqud_iface_t *iface,
                                       struct ibv_ah *ah, uint32_t dest_qpn,
                                       uct_srqud_send_desc_t *desc);

/* A packet copied into the work request (control packets): needs no
 * descriptor, so acknowledgements go out even when every descriptor is
 * waiting in a window for one */
ucs_status_t uct_srqud_iface_post_inline(uct_srqud_iface_t *iface,
                                         struct ibv_ah *ah, uint32_t dest_qpn,
                                         const void *packet, size_t length);


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


static UCS_F_ALWAYS_INLINE int
uct_srqud_iface_has_tx_resources(uct_srqud_iface_t *iface)
{
    return iface->tx.available > 0;
}


/* Same link layer and, on InfiniBand, same subnet: a LID means nothing
 * outside its subnet */
static UCS_F_ALWAYS_INLINE int
uct_srqud_iface_is_reachable_addr(uct_srqud_iface_t *iface,
                                  const uct_srqud_device_addr_t *dev_addr)
{
    if (!!(dev_addr->flags & UCT_SRQUD_ADDR_FLAG_ETH) != iface->is_roce) {
        return 0;
    }

    return iface->is_roce || !memcmp(dev_addr->gid, iface->gid.raw, 8);
}


static UCS_F_ALWAYS_INLINE uct_srqud_neth_t*
uct_srqud_send_desc_neth(uct_srqud_send_desc_t *desc)
{
    return (uct_srqud_neth_t*)(desc + 1);
}


static UCS_F_ALWAYS_INLINE void*
uct_srqud_iface_rx_hdr(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc)
{
    return UCS_PTR_BYTE_OFFSET(desc, iface->config.rx_hdr_offset);
}

#endif
