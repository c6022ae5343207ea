/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Counters of an srqud interface, for tests and benchmarks:
 *   void *h = dlopen("libuct_srqud.so.0", RTLD_NOLOAD | RTLD_LAZY);
 *   uct_srqud_iface_stats_get_func_t get = dlsym(h, "uct_srqud_iface_stats_get");
 */

#ifndef UCT_SRQUD_STATS_H_
#define UCT_SRQUD_STATS_H_

#include <uct/api/uct_def.h>
#include <ucs/type/status.h>

typedef struct uct_srqud_iface_stats {
    unsigned long rx_packets;
    unsigned long rx_dropped_malformed; /* failed the header check, or too
                                           short for their control opcode */
    unsigned long rx_errors;
    unsigned long tx_packets;
    unsigned long tx_doorbells;       /* ibv_post_send calls on the
                                         interface's QP (TX_BATCH sends
                                         share one) */
    unsigned long tx_errors;
    unsigned long srq_limit_events;   /* LIMIT events handled */
    unsigned long srq_refilled;       /* buffers posted by the LIMIT thread */
    unsigned long srq_grows;          /* times the posted count was raised */
    unsigned long rx_duplicates;
    unsigned long rx_out_of_order;    /* arrived ahead of a gap */
    unsigned long tx_retransmits;
    unsigned long tx_timeouts;
    unsigned long acks_sent;
    unsigned long nacks_sent;
    unsigned long ep_failures;
    unsigned long fault_dropped;
    unsigned long fault_duplicated;
    unsigned long async_progress;     /* async timer runs that did work */
    unsigned long async_queued;       /* packets it queued for the user */
    unsigned long keepalives;         /* ep_check probes sent */
    unsigned long am_zcopy;           /* am_zcopy sends (payload not copied) */
    unsigned long ep_lingered;        /* destroyed eps kept until acked */
    unsigned long zcopy_xfers;        /* zero-copy gets/puts it issued, done */
    unsigned long zcopy_chunks_sent;  /* chunks posted by this side */
    unsigned long zcopy_misplaced;    /* chunks that landed elsewhere */
    unsigned long zcopy_moved;        /* ... copied home at round end */
    unsigned long zcopy_rounds_extra; /* rounds after the first */
    unsigned long zcopy_fallbacks;    /* no pool QP: the copy path */
    unsigned long rma_copy_ops;       /* puts on the copy path */
    unsigned long zcopy_stale;        /* chunks of an earlier transfer on
                                         the same pool QP, dropped */
    unsigned long tx_fast_retransmits;/* resent because SACKs showed them
                                         lost (in tx_retransmits too) */
    unsigned long rx_held;            /* arrived ahead of a gap, kept */
    unsigned long rx_reorder_dropped; /* ahead of a gap, could not be kept */
    unsigned long rx_bad_token;       /* not carrying their connection's
                                         token: dropped */
    unsigned long qp_resets;          /* QPs brought back from the error
                                         state after a failed send */
    unsigned long rx_no_ep;           /* well-formed, but no endpoint here
                                         takes them: unknown or gone ep,
                                         another peer's, data ahead of
                                         its lost CREQ; dropped */
    unsigned long zcopy_stalled;      /* gets whose chunks stopped landing,
                                         finished over the copy path */
    unsigned long zcopy_superseded;   /* chunk sends of a get's round cut
                                         short by the sink's next round */
    unsigned long zcopy_posts;        /* ibv_post_send calls for chunks
                                         (lists of up to 32) */
    unsigned long rma_refused;        /* peers' put packets refused here */
    unsigned long rx_stalled_dropped; /* AMs left unacknowledged while this
                                         worker did not progress and held
                                         its share of a shared pool */
    unsigned long back_acks_sent;     /* acks that left as an AM's trailer
                                         instead of a packet of their own */
    unsigned long back_acks_taken;    /* such trailers applied here */
    unsigned long tx_timeouts_undone; /* timeouts found spurious: a packet
                                         they gave up arrived unresent */
    unsigned long async_ticks;        /* async ticks run (the watchdog
                                         expired, or the timer of a
                                         thread-less async context) */
    unsigned long tx_unsignaled;      /* sends posted without a completion
                                         (TX_CQ_MODERATION) */
    unsigned long tx_stale_completions; /* of sends from before a reset */
    unsigned long tx_hold_posted;     /* send batches the async thread
                                         posted: the user made no call for
                                         TX_HOLD after them */
    unsigned long tx_user_steps;      /* the user's progress calls after
                                         sends of its own */
    unsigned long tx_idle_steps;      /* of those, steps whose sends
                                         batched into an idle queue
                                         (TX_BATCH_IDLE) */
    unsigned long progress_quiet;     /* progress calls that only looked at
                                         the receive CQ and found nothing
                                         (QUIET_POLLS) */
    unsigned long progress_early;     /* ... and found completions there,
                                         then made a full call */
    unsigned long timer_sets;         /* the watchdog set (a system call):
                                         by progress once a tick, and for
                                         send batches (TX_HOLD) */
    unsigned long ack_requests;       /* acks asked for at once (flushes,
                                         the ops they wait for) */
    /* bounds on what peers can make this interface hold (threat model in
     * docs/design.md) */
    unsigned long passive_reaped;     /* idle passive eps freed to make room
                                         for a new peer (PASSIVE_MAX) */
    unsigned long passive_refused;    /* CREQs dropped: PASSIVE_MAX passive
                                         eps and none idle */
    unsigned long rma_refusals_merged;/* refused puts beyond a passive ep's
                                         RMA_REFUSALS_MAX records, joined to
                                         its newest record */
    unsigned long zcopy_refused;      /* zero-copy requests and answers
                                         refused: outside the transfer, over
                                         a bound, or out of turn */
    unsigned long token_resets;       /* connections ended after
                                         UCT_SRQUD_TOKEN_GUESSES_MAX wrong
                                         tokens */
    unsigned long rx_no_handler;      /* AMs to an id without a handler:
                                         dropped */
    unsigned long peer_status_invalid;/* status codes from a peer that are
                                         no error srqud sends: reported as
                                         UCS_ERR_IO_ERROR */
    unsigned long tx_am_chains;       /* am_bcopy messages sent as several
                                         packets with one doorbell
                                         (AM_PACKETS) */
    unsigned long rx_am_chains;       /* ... received whole and delivered */
    unsigned long rx_chain_bad;       /* ... dropped: a packet of another
                                         AM id, more than
                                         UCT_SRQUD_AM_PACKETS_MAX, or a
                                         request between its packets */
    unsigned long rx_chain_evicted;   /* ... unfinished, given up for a
                                         new one at the bound of those
                                         begun (never acknowledged: the
                                         sender resends them) */
    unsigned long acks_ridden;        /* acks and nacks (in acks_sent,
                                         nacks_sent) that went in the
                                         doorbell of a user's AM instead
                                         of one of their own (ACK_RIDE) */
    unsigned long tx_hold_deferred;   /* TX_HOLD timers moved on by a new
                                         batch: the user went on sending */
    unsigned long async_busy;         /* watchdog expiries that found the
                                         user inside a call: looked at
                                         again later (srqud_progress.c) */
    unsigned long tx_resend_copies;   /* resends that went as a copy: the
                                         device could still read the
                                         descriptor for its unsignaled
                                         first post */
    /* current state */
    unsigned      passive_eps;        /* passive eps (peers' connections) */
    unsigned      rma_refusal_records;/* refused puts awaiting RMA_SEEN */
    unsigned      srq_limit;          /* armed limit, 0: disabled */
    unsigned      srq_target;         /* buffers kept posted */
    double        t_wakeup;           /* measured LIMIT thread wakeup, s */
    /* the receive pool (shared by srq_users interfaces with SHARE=srq):
     * srq_buffers == srq_free + srq_posted + srq_lent, always */
    unsigned      srq_users;
    unsigned      srq_posted;         /* on the SRQ */
    unsigned long srq_buffers;        /* allocated */
    unsigned long srq_free;
    unsigned long srq_lent;           /* held by its interfaces */
    unsigned long srq_lost;           /* not given back by an interface
                                         that closed (a user's descriptor) */
    unsigned long rx_taken;           /* of srq_lent, this interface's */
    int           share;              /* UCX_SRQUD_SHARE as applied:
                                         0 pd, 1 td, 2 srq */
    /* the zero-copy pool: QPs (each with its CQ) made on demand, one per
     * transfer this interface receives at once, kept for the next */
    unsigned      zcopy_pool_qps;
    unsigned      zcopy_pool_peak;
} uct_srqud_iface_stats_t;

typedef ucs_status_t (*uct_srqud_iface_stats_get_func_t)(
        uct_iface_h iface, uct_srqud_iface_stats_t *stats);

ucs_status_t uct_srqud_iface_stats_get(uct_iface_h iface,
                                       uct_srqud_iface_stats_t *stats);

#endif
