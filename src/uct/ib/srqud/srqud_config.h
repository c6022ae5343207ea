/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The interface's settings (UCX_SRQUD_*): the table, the range checks, and
 * how they are applied. Every setting takes one path: table -> checked ->
 * iface->config (srqud_types.h) -> the one file that uses it.
 */

#ifndef UCT_SRQUD_CONFIG_H_
#define UCT_SRQUD_CONFIG_H_

#include "srqud_def.h"

#include <uct/base/uct_iface.h>
#include <ucs/config/parser.h>
#include <ucs/sys/string.h>
#include <limits.h>


typedef struct uct_srqud_iface uct_srqud_iface_t;
typedef struct uct_srqud_md    uct_srqud_md_t;


/* UCX_SRQUD_SHARE: what the interfaces (one per UCP worker, so per thread)
 * of one md share, after Zambre et al. (ICPADS'18); named after what is
 * shared. Every level shares the device context, the PD and registrations
 * (the md's). */
typedef enum {
    UCT_SRQUD_SHARE_PD,   /* own UD QP, CQs, SRQ and receive pool */
    UCT_SRQUD_SHARE_TD,   /* as PD, the QP and CQs in a thread domain of
                             their own (a dedicated doorbell, no provider
                             locks: the paper's Dynamic) */
    UCT_SRQUD_SHARE_SRQ,  /* own UD QP and CQs; one SRQ and receive pool
                             per md and port for all of them */
    UCT_SRQUD_SHARE_LAST
} uct_srqud_share_t;

extern const char *uct_srqud_share_names[];


typedef struct uct_srqud_iface_config {
    uct_iface_config_t       super;
    unsigned                 tx_queue_len;   /* Send queue length */
    unsigned                 tx_max_poll;    /* Send CQ poll batch */
    unsigned                 tx_batch;       /* Sends per doorbell */
    unsigned long            tx_batch_after; /* Sends at once since progress;
                                                UCS_ULUNITS_AUTO: by device */
    int                      tx_batch_idle;  /* ucs_on_off_auto_value_t */
    unsigned                 tx_batch_step;  /* sends of a step of several */
    double                   tx_hold;        /* a batch's longest wait, s */
    int                      tx_hold_move;   /* a stream moves it on */
    double                   tx_batch_wait;  /* ... while the user sends */
    unsigned                 tx_cq_moderation; /* a completion every N */
    unsigned                 rx_max_poll;    /* Receive CQ poll batch */
    unsigned                 quiet_polls;    /* empty progress calls that
                                                only look at the receive CQ */
    unsigned                 srq_size;       /* Receive buffers kept posted */
    unsigned                 srq_max_size;   /* ... grown up to this */
    unsigned long            srq_limit;      /* UCS_ULUNITS_AUTO: Eq. 5 */
    unsigned                 rx_post_batch;  /* Repost receives in batches */
    int                      share;          /* uct_srqud_share_t */
    unsigned                 stalled_max;    /* shared pool: kept for a
                                                worker that stalls */
    uct_iface_mpool_config_t rx_mp;
    uct_iface_mpool_config_t tx_mp;
    unsigned long            gid_index;      /* UCS_ULUNITS_AUTO: pick one */
    unsigned                 sl;
    unsigned                 traffic_class;
    unsigned                 hop_limit;
    size_t                   seg_size;       /* 0: the port's active MTU */
    unsigned long            am_packets;     /* UCS_ULUNITS_AUTO: by device */
    unsigned                 tx_window;      /* unacknowledged packets per ep */
    unsigned                 rx_reorder;     /* held ahead of a gap per ep */
    unsigned                 ack_thresh;     /* ack after this many packets */
    double                   ack_delay;      /* hold an ack at most this, s */
    int                      back_ack;       /* acks ride on replies */
    unsigned                 back_ack_every; /* ... once this many are owed */
    double                   back_ack_delay; /* ... or once waited this, s */
    int                      ack_ride;       /* owed acks join the user's
                                                doorbells */
    double                   rto_min;        /* retransmission timeout, s */
    double                   rto_max;
    double                   peer_timeout;   /* no progress: peer is dead */
    double                   async_tick;     /* async progress period, s */
    unsigned                 zcopy_qps;      /* receive QPs of the pool */
    size_t                   zcopy_thresh;   /* smaller: the copy path */
    unsigned                 zcopy_rq_depth; /* receives per pool QP */
    unsigned                 zcopy_sq_depth; /* chunk send queue */
    unsigned                 zcopy_peer_jobs; /* a peer's transfers here */
    unsigned                 passive_max;    /* peers' connections kept */
    double                   passive_idle;   /* reapable after this long, s */
    unsigned                 rma_refusals_max; /* refusal records per ep */
    int                      stats_dump;     /* counters on stderr at close */
    double                   fault_tx_drop;  /* test: drop this fraction */
    double                   fault_tx_dup;   /* test: send twice */
    double                   fault_qp_error; /* test: QP to error state */
    double                   fault_chunk_drop; /* test: zero-copy chunks */
} uct_srqud_iface_config_t;


extern ucs_config_field_t uct_srqud_config_table[];


/**
 * Check every value against its range and the device's limits; a value out
 * of range fails the interface open with a message naming the variable.
 * @param mtu  the port's active MTU, bytes
 */
ucs_status_t uct_srqud_config_check(const uct_srqud_md_t *md,
                                    const uct_srqud_iface_config_t *config,
                                    size_t mtu);

/* Copy the checked values into iface->config, in the units the code uses */
void uct_srqud_config_apply(uct_srqud_iface_t *iface,
                            const uct_srqud_iface_config_t *config,
                            size_t mtu);


/* Every doorbell of a UD QP on this device is a system call and a softirq
 * (Soft-RoCE): what the settings whose default is "auto" trade against */
static inline int uct_srqud_config_doorbell_is_syscall(uint32_t vendor_id)
{
    return vendor_id == UCT_SRQUD_SOFT_ROCE_VENDOR_ID;
}


/* UCX_SRQUD_TX_BATCH_AFTER as applied: a number as set; "inf", and "auto"
 * on an HCA, never (UINT_MAX: a send outside progress is never held) */
static inline unsigned
uct_srqud_config_tx_batch_after(unsigned long value, uint32_t vendor_id)
{
    if (value == UCS_ULUNITS_AUTO) {
        return uct_srqud_config_doorbell_is_syscall(vendor_id) ?
               UCT_SRQUD_TX_BATCH_AFTER_SOFT : UINT_MAX;
    }
    return (value == UCS_ULUNITS_INF) ? UINT_MAX : (unsigned)value;
}

#endif
