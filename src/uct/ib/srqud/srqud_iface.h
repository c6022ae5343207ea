/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The state of an srqud interface, the table of the protocols above its
 * endpoints (srqud_proto.c fills it), and the helpers that belong to them:
 * the lock, fault injection draws, peer-caused log lines, control routing.
 */

#ifndef UCT_SRQUD_IFACE_H_
#define UCT_SRQUD_IFACE_H_

#include "srqud_types.h"


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
        unsigned             chains;      /* messages of several packets
                                             begun, all eps */
        ucs_list_link_t      chain_list;  /* their eps, oldest message
                                             first (srqud_rx_chain.c) */
        void                 *chain_buf;  /* a message of several packets
                                             is delivered from here
                                             (srqud_rx_chain.c) */
    } rx;

    struct {
        ucs_mpool_t          mp;
        int                  available;   /* free send WQEs */
        uint64_t             sn;          /* sends posted */
        uint64_t             comp_sn;     /* sends completed */
        uint64_t             sig_sn;      /* the last signaled send */
        unsigned             unsignaled;  /* posted since a signaled one */
        unsigned             recent;      /* sends posted since the last
                                             progress */
        unsigned             user_sends;  /* sends the user made since its
                                             last progress */
        unsigned             step_score;  /* 0-3: up a step of several
                                             sends, down a step of one */
        int                  batch_idle;  /* the user's sends batch into
                                             an idle queue until its next
                                             progress */
        int                  poll_unsignaled; /* look for completions of
                                             unsignaled sends (a failed QP
                                             completes them in error) */
        ucs_queue_head_t     outstanding; /* descs posted, not completed:
                                             those the HCA may still read
                                             (all but inline unbatched
                                             ones) */
        uct_srqud_send_desc_t *spare[UCT_SRQUD_AM_PACKETS_MAX - 1];
        unsigned             spare_count; /* descs an am_bcopy takes before
                                             its pack for the packets after
                                             its first (srqud_ep_am.c) */
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
        ucs_time_t           batch_start; /* when its first send came */
        int                  chain;       /* the packets being posted batch
                                             and their poster rings them:
                                             one message's, or a message
                                             and the acks riding behind it
                                             (ACK_RIDE) */
    } tx;

    /* Settings as applied by srqud_config.c (see there for each one), and
     * what the device made of them */
    struct {
        unsigned             tx_queue_len;
        unsigned             tx_qlen;     /* the send queue created */
        unsigned             tx_max_poll;
        unsigned             tx_batch;    /* sends per doorbell */
        unsigned             tx_batch_after; /* sends since a progress that
                                             go at once; UINT_MAX: all */
        int                  tx_batch_idle; /* ucs_on_off_auto_value_t:
                                               sends outside progress batch
                                               into an idle queue */
        unsigned             tx_batch_step; /* auto: sends that make a step
                                               one of several */
        unsigned             tx_cq_moderation; /* a completion every N */
        unsigned             rx_max_poll;
        unsigned             quiet_polls;
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
        unsigned             am_packets;  /* packets of an am_bcopy, most */
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
        unsigned             rx_chains_max; /* messages of several packets
                                               begun at once, all eps */
        unsigned             ack_thresh;
        ucs_time_t           ack_delay;
        int                  back_ack;     /* acks ride on replies (RoCE) */
        unsigned             back_ack_every; /* packets owed before one does */
        ucs_time_t           back_ack_delay; /* ... or time waited */
        int                  ack_ride;     /* owed acks join the user's
                                              doorbells (ACK_RIDE) ... */
        ucs_time_t           ack_ride_lead; /* ... once due this soon */
        ucs_time_t           rto_min;
        ucs_time_t           rto_max;
        ucs_time_t           peer_timeout;
        ucs_time_t           async_tick;
        ucs_time_t           tx_hold;     /* a batch's wait for a doorbell
                                             when the user makes no call */
        int                  tx_hold_move; /* TX_HOLD_MOVE */
        ucs_time_t           tx_batch_wait; /* ... while the user sends */
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
        ucs_time_t           wd_retry;      /* the next look of an expiry that
                                               found the lock taken; the async
                                               thread's alone, no lock */
        unsigned long        wd_busy;       /* such expiries: written by the
                                               async thread alone, no lock */
        int                  wd_hold;       /* set for a send batch
                                               (srqud_tx.c), not yet moved
                                               back by the user's progress */
        ucs_time_t           last_progress; /* of the user's progress */
        unsigned             quiet_left;    /* calls that may still only look
                                               at the receive CQ */
        unsigned long        quiet_seen;    /* quiet calls at the last tick */
        int                  active;        /* in the timer callback */
        int                  wake_user;     /* it found work for the user */
        int                  user_progress; /* in the user's progress call */
        int                  ran;           /* it progressed since the user's
                                               last progress: resources the
                                               user saw lacking may be back */
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
    /* the user destroyed the ep (it may linger), or it is freed: nothing
     * of the protocols may refer to it or call its user after (a transfer
     * whose chunk sends are still in flight lets go of it and of the
     * user's completion, which runs now) */
    void                     (*ep_release)(uct_srqud_iface_t *iface,
                                           uct_srqud_ep_t *ep);
} uct_srqud_proto_t;


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


/* The lock if it is free, as UCX's async thread takes it for a handler of
 * the context (ucs/async/thread.c): for a handler UCX calls without one
 * (srqud_progress.c). The thread spinlock mode only. */
static UCS_F_ALWAYS_INLINE int uct_srqud_try_enter(uct_srqud_iface_t *iface)
{
    return ucs_recursive_spin_trylock(
            &iface->super.worker->async->thread.spinlock);
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

#endif
