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

#include "srqud_ep_flush.h"


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
