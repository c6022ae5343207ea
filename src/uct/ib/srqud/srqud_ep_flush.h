/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * An endpoint's flushes and the end of its send window (srqud_ep_flush.c):
 * what completes a flush, fence, and the release of acknowledged or
 * given-up packets (inline: every acknowledged packet takes it). Below
 * srqud_ep.c, which creates, times and destroys endpoints.
 */

#ifndef UCT_SRQUD_EP_FLUSH_H_
#define UCT_SRQUD_EP_FLUSH_H_

#include "srqud_ep.h"

#include <ucs/datastruct/mpool.inl>


/* Release a descriptor from the window: the packet is acknowledged (or
 * given up with @a status). An am_zcopy's user completion runs now; the
 * descriptor is freed now, or on its send completion if the HCA still
 * owns it. Runs only from the user's progress (never the async timer). */
static UCS_F_ALWAYS_INLINE void
uct_srqud_ep_window_release(uct_srqud_send_desc_t *desc, ucs_status_t status)
{
    uct_completion_t *comp = desc->comp;

    desc->flags &= ~UCT_SRQUD_DESC_FLAG_IN_WINDOW;
    if (desc->flags & UCT_SRQUD_DESC_FLAG_IN_SQ) {
        /* the device may still read an am_zcopy's payload from the user's
         * memory (a resend): its completion waits for the send's
         * (uct_srqud_tx_desc_completed) */
        desc->comp_status = status;
        return;
    }
    desc->comp = NULL;
    ucs_mpool_put_inline(desc);
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
}

/* The ep has nothing in flight any more: off the interface's active list */
void uct_srqud_ep_deactivate(uct_srqud_ep_t *ep);

/* Complete the queued flushes that are done (all of them, with @a status,
 * if it is an error); queue a flush of kind UCT_SRQUD_FLUSH_xx; give up the
 * ep's unacknowledged packets and flushes */
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


/* RMA / zero-copy operations of an ep: a flush completes after them */
static inline void uct_srqud_ep_op_start(uct_srqud_ep_t *ep)
{
    ++ep->ops;
}

#endif
