/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * srqud endpoint. An endpoint created by the user ("active") sends; the
 * first packet it sends is a CREQ carrying its id, on which the receiving
 * interface creates an internal "passive" endpoint for that sender. The
 * passive endpoint delivers in order and acknowledges; its CREP tells the
 * active one the passive id, which later packets address directly.
 *
 * Per peer: the endpoint structure, an address handle shared per remote
 * port, and only the packets in flight. No receive resources.
 */

#ifndef UCT_SRQUD_EP_H_
#define UCT_SRQUD_EP_H_

#include "srqud_iface.h"


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
        uct_srqud_psn_t      ack_asked;    /* tx.next when a flush without a
                                              completion last asked for an
                                              ack (it is polled) */
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
        ucs_queue_head_t     chain;        /* accepted packets of a message
                                              whose last one is to come
                                              (srqud_rx_chain.c) */
        unsigned             chain_count;
        uct_srqud_psn_t      chain_psn;    /* its first packet's: acks stay
                                              below it */
        ucs_list_link_t      chain_list;   /* in iface->rx.chain_list */
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


/* The last psn a passive ep may acknowledge: what it accepted in order,
 * short of a message of several packets whose last one is to come (it may
 * give way to another's and be resent: srqud_rx_chain.h) */
static UCS_F_ALWAYS_INLINE uct_srqud_psn_t
uct_srqud_ep_rx_accepted(const uct_srqud_ep_t *ep)
{
    return (uct_srqud_psn_t)(((ep->rx.chain_count > 0) ? ep->rx.chain_psn :
                                                         ep->rx.expected) - 1);
}


/* The interface of an endpoint */
static UCS_F_ALWAYS_INLINE uct_srqud_iface_t*
uct_srqud_ep_iface(uct_srqud_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_srqud_iface_t);
}


UCS_CLASS_DECLARE_NEW_FUNC(uct_srqud_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_srqud_ep_t, uct_ep_t);


/* uct_ep_create / uct_ep_destroy (which lingers, see srqud_ep.c) */
ucs_status_t uct_srqud_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);

void uct_srqud_ep_destroy(uct_ep_h tl_ep);

/* Free an ep now (passive and lingering ones at interface close, a
 * lingering one whose data is acknowledged) */
void uct_srqud_ep_free(uct_srqud_ep_t *ep);

ucs_status_t uct_srqud_ep_check(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp);

ucs_status_t uct_srqud_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                      unsigned flags);

void uct_srqud_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                                void *arg);

/* Dispatch the pending requests of the interface's eps (user's progress) */
void uct_srqud_ep_pending_progress(uct_srqud_iface_t *iface);

/* The interface QP's reset flushed packets kept for retransmission
 * (srqud_tx.c marked them lost): each ep resends its own as its congestion
 * window, restarted small, allows */
void uct_srqud_ep_resend_flushed(uct_srqud_iface_t *iface);

/* An acknowledgement: cumulative up to @a ack_psn, and with @a sack (or
 * NULL) what the receiver holds beyond; resends what it shows lost.
 * Returns 0 if the ep was freed (a lingering ep whose last packet is
 * acknowledged). */
int uct_srqud_ep_process_ack(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             uct_srqud_psn_t ack_psn,
                             const uct_srqud_sack_t *sack);


/* An acknowledgement the async thread received and queued for the user's
 * progress (applying it completes sends: user callbacks). It tells the
 * timers what the ack will: the peer answers, and what @a sack shows
 * held needs no resend. Without it a user away for longer than a
 * retransmission timeout had its window resent by the async timer while
 * the acks for it waited in the queue, every copy a duplicate. */
void uct_srqud_ep_ack_seen(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                           uct_srqud_psn_t ack_psn,
                           const uct_srqud_sack_t *sack);

/* Queue an acknowledgement (@a now: it may not wait for ACK_DELAY) */
void uct_srqud_ep_queue_ack(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                            int now);

/* The same, inline for the packet that finds one queued already (all but
 * the first of a ping-pong's BACK_ACK_EVERY) */
static UCS_F_ALWAYS_INLINE void
uct_srqud_ep_schedule_ack(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep, int now)
{
    if (!now && ((ep->flags & (UCT_SRQUD_EP_FLAG_ACK_QUEUED |
                               UCT_SRQUD_EP_FLAG_CREP_DUE)) ==
                 UCT_SRQUD_EP_FLAG_ACK_QUEUED)) {
        return;
    }
    uct_srqud_ep_queue_ack(iface, ep, now);
}

/* Send acknowledgements owed by passive endpoints: the urgent ones, and
 * those delayed for UCX_SRQUD_ACK_DELAY by @a now (all of them if @a now is
 * UCS_TIME_INFINITY) */
void uct_srqud_ep_acks_send(uct_srqud_iface_t *iface, ucs_time_t now);

/* Does an owed acknowledgement fall due (ACK_DELAY after it was queued)
 * within @a within of the last progress, by that call's clock, or is one
 * due at once? What a reply (BACK_ACK) and a ride (ACK_RIDE) ask before
 * they take owed acks along, without reading the clock. */
static UCS_F_ALWAYS_INLINE int
uct_srqud_ep_ack_due_within(const uct_srqud_iface_t *iface, ucs_time_t within)
{
    return iface->async.last_progress + within >= iface->rx.ack_due;
}

/* Does an owed acknowledgement go in the doorbell of the user's active
 * message being sent (ACK_RIDE)? One has waited half of ACK_DELAY (by the
 * clock of the last progress, as BACK_ACK reads it) or is due at once, and
 * the send is the user's own and its message's last packet: a progress
 * call rings what it sends in one doorbell anyway. Not into a failed QP:
 * the acks would count as sent and be lost; the progress that resets it
 * sends them after. */
static UCS_F_ALWAYS_INLINE int
uct_srqud_ep_acks_ride_due(uct_srqud_iface_t *iface)
{
    return !ucs_list_is_empty(&iface->rx.ack_list) && iface->config.ack_ride &&
           uct_srqud_ep_ack_due_within(iface, iface->config.ack_ride_lead) &&
           !iface->tx.chain && !iface->async.user_progress &&
           !iface->async.active && !iface->tx.qp_error;
}

/* Send the acknowledgements uct_srqud_ep_acks_ride_due found, into the
 * send batch of the user's message (they count as neither the user's
 * sends nor recent ones) */
void uct_srqud_ep_acks_ride(uct_srqud_iface_t *iface);

/* Retransmission timers and peer failure detection */
void uct_srqud_ep_timers_check(uct_srqud_iface_t *iface, ucs_time_t now);

/* The ep fails with @a status: its operations end, the user's error
 * handler runs (a lingering ep is freed); from the user's progress only */
void uct_srqud_ep_set_failed(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             ucs_status_t status);

/* Wrong tokens a connection takes before it ends (srqud_ep_rx.c) */
#define UCT_SRQUD_TOKEN_GUESSES_MAX  65536

ucs_arbiter_cb_result_t
uct_srqud_ep_dispatch_pending(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                              ucs_arbiter_elem_t *elem, void *arg);



/* A status code from a peer's packet, for a user's completion: the codes
 * srqud itself sends pass, anything else (a positive code, one no srqud
 * sends) is counted and becomes UCS_ERR_IO_ERROR, so that a peer never
 * makes an operation complete with a code UCX does not give it */
static inline ucs_status_t uct_srqud_ep_peer_status(uct_srqud_iface_t *iface,
                                                    int8_t status)
{
    switch (status) {
    case UCS_OK:
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR:
    case UCS_ERR_NO_ELEM:
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_UNSUPPORTED:
    case UCS_ERR_BUSY:
    case UCS_ERR_CANCELED:
    case UCS_ERR_REJECTED:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_NO_DEVICE:
        return (ucs_status_t)status;
    default:
        ++iface->stats.peer_status_invalid;
        return UCS_ERR_IO_ERROR;
    }
}

#endif
