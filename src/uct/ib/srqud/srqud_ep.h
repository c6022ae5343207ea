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

#include "srqud_types.h"


UCS_CLASS_DECLARE_NEW_FUNC(uct_srqud_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_srqud_ep_t, uct_ep_t);


static UCS_F_ALWAYS_INLINE uct_srqud_iface_t*
uct_srqud_ep_iface(uct_srqud_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_srqud_iface_t);
}


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

/* Shared by srqud_ep.c and srqud_ep_flush.c: complete the queued flushes
 * that are done (all of them, with @a status, if it is an error); queue a
 * flush of kind UCT_SRQUD_FLUSH_xx; give up the ep's unacknowledged
 * packets and flushes */
void uct_srqud_ep_complete_flushes(uct_srqud_ep_t *ep, ucs_status_t status);

ucs_status_t uct_srqud_ep_add_flush(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep, uct_completion_t *comp,
                                    int wait_ops, uint8_t kind, uint32_t op_id);

void uct_srqud_ep_drop_window(uct_srqud_ep_t *ep, ucs_status_t status);

ucs_status_t uct_srqud_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp);

/* Flush of every endpoint of the interface (called locked) */
ucs_status_t uct_srqud_ep_flush_all(uct_srqud_iface_t *iface,
                                    uct_completion_t *comp);

/* Copy-path put @a op_id is all sent: @a comp completes when what the ep
 * sent so far is acknowledged, with the put's refusal if it was refused
 * (NULL: the refusal goes to the user's next flush) */
ucs_status_t uct_srqud_ep_add_rma_flush(uct_srqud_iface_t *iface,
                                        uct_srqud_ep_t *ep, uint32_t op_id,
                                        uct_completion_t *comp);

/* The peer refused put @a op_id (0: put_short/bcopy in psns [first,
 * last]), not in progress any more: the queued flush that reports it */
void uct_srqud_ep_put_refused(uct_srqud_ep_t *ep, uint32_t op_id,
                              uct_srqud_psn_t first, uct_srqud_psn_t last,
                              ucs_status_t status);

/* Later operations of the ep wait until the current ones are done */
void uct_srqud_ep_fence_locked(uct_srqud_ep_t *ep);

ucs_status_t uct_srqud_ep_fence(uct_ep_h tl_ep, unsigned flags);

void uct_srqud_ep_op_done(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep);

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

/* Queue an acknowledgement (@a now: it may not wait for ACK_DELAY) */
void uct_srqud_ep_schedule_ack(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                               int now);

/* Send acknowledgements owed by passive endpoints: the urgent ones, and
 * those delayed for UCX_SRQUD_ACK_DELAY by @a now (all of them if @a now is
 * UCS_TIME_INFINITY) */
void uct_srqud_ep_acks_send(uct_srqud_iface_t *iface, ucs_time_t now);

/* Retransmission timers and peer failure detection */
void uct_srqud_ep_timers_check(uct_srqud_iface_t *iface, ucs_time_t now);

ucs_arbiter_cb_result_t
uct_srqud_ep_dispatch_pending(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                              ucs_arbiter_elem_t *elem, void *arg);


/* RMA / zero-copy operations of an ep: a flush completes after them */
static inline void uct_srqud_ep_op_start(uct_srqud_ep_t *ep)
{
    ++ep->ops;
}


#endif
