/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * An endpoint's flushes: the queue of them and what completes each (the
 * acknowledgement of its psn, the ep's operations done, the refused puts
 * it reports), uct_ep_flush / uct_iface_flush, and fence; and the end of
 * the send window that completes them (packets acknowledged or given up).
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_ep_tx.h"
#include "srqud_ep_flush.h"

#include <ucs/debug/log.h>


void uct_srqud_ep_deactivate(uct_srqud_ep_t *ep)
{
    if (ep->flags & UCT_SRQUD_EP_FLAG_ACTIVE) {
        /* an acknowledgement kept for the next progress (srqud_back_ack.c)
         * has nothing left to acknowledge: the window is empty, and a later
         * one must not be compared with a psn from before a wrap */
        ep->flags &= ~(UCT_SRQUD_EP_FLAG_ACTIVE | UCT_SRQUD_EP_FLAG_BACK_DUE);
        ucs_list_del(&ep->tx.active_list);
    }
}


/* Give up every unacknowledged packet and flush of the ep */
void uct_srqud_ep_drop_window(uct_srqud_ep_t *ep, ucs_status_t status)
{
    uct_srqud_send_desc_t *desc;

    ucs_queue_for_each_extract(desc, &ep->tx.window, slot.elem, 1) {
        uct_srqud_ep_window_release(desc, status);
    }
    uct_srqud_ep_deactivate(ep);
    uct_srqud_ep_complete_flushes(ep, status);
}


/* @a flush completes with @a status (the first error it learns of) */
static void uct_srqud_ep_flush_fail(uct_srqud_ep_flush_t *flush,
                                    ucs_status_t status)
{
    if (flush->status == UCS_OK) {
        flush->status = status;
    }
}


/* An operation without a completion failed: the user learns it from the
 * next flush of theirs */
static void uct_srqud_ep_flush_pass_error(uct_srqud_ep_t *ep,
                                          ucs_status_t status)
{
    uct_srqud_ep_flush_t *flush;

    ucs_queue_for_each(flush, &ep->tx.flushes, queue) {
        if (flush->kind == UCT_SRQUD_FLUSH_USER) {
            uct_srqud_ep_flush_fail(flush, status);
            return;
        }
    }
    ep->rma_status = status;
}


void uct_srqud_ep_complete_flushes(uct_srqud_ep_t *ep, ucs_status_t status)
{
    uct_srqud_ep_flush_t *flush;
    ucs_status_t comp_status;

    while (!ucs_queue_is_empty(&ep->tx.flushes)) {
        flush = ucs_queue_head_elem_non_empty(&ep->tx.flushes,
                                              uct_srqud_ep_flush_t, queue);
        if ((status == UCS_OK) &&
            (uct_srqud_psn_lt(ep->tx.acked, flush->psn) || (ep->ops > 0))) {
            break;
        }
        ucs_queue_pull_non_empty(&ep->tx.flushes);
        ep->flushes_wait_ops -= flush->wait_ops;
        /* an ep failure, or a put of its own the peer refused */
        comp_status = (status != UCS_OK) ? status : flush->status;
        if (flush->comp != NULL) {
            uct_invoke_completion(flush->comp, comp_status);
        } else if ((status == UCS_OK) && (comp_status != UCS_OK)) {
            uct_srqud_ep_flush_pass_error(ep, comp_status);
        }
        ucs_free(flush);
    }
}


void uct_srqud_ep_put_refused(uct_srqud_ep_t *ep, uint32_t op_id,
                              uct_srqud_psn_t first, uct_srqud_psn_t last,
                              ucs_status_t status)
{
    uct_srqud_ep_flush_t *flush;
    uct_srqud_psn_t prev = 0;
    int have_prev        = 0;
    int reported         = 0;

    if (op_id != 0) {
        /* a copy-path put all sent: its completion; none there: that
         * operation failed already, by another fragment */
        ucs_queue_for_each(flush, &ep->tx.flushes, queue) {
            if ((flush->kind == UCT_SRQUD_FLUSH_OP) &&
                (flush->op_id == op_id)) {
                uct_srqud_ep_flush_fail(flush, status);
                return;
            }
        }
        return;
    }

    /* a put_short/bcopy: the user's flushes that cover one of its psns; a
     * flush covers those sent between the one before it and itself, every
     * psn in (prev, psn]. Refusals a peer could not keep apart name several
     * operations' packets: a copy-path put whose last packet is among them
     * fails too. */
    ucs_queue_for_each(flush, &ep->tx.flushes, queue) {
        if (flush->kind == UCT_SRQUD_FLUSH_OP) {
            if (!uct_srqud_psn_lt(flush->psn, first) &&
                !uct_srqud_psn_lt(last, flush->psn)) {
                uct_srqud_ep_flush_fail(flush, status);
            }
            continue;
        } else if (flush->kind != UCT_SRQUD_FLUSH_USER) {
            continue;
        }
        if (!uct_srqud_psn_lt(flush->psn, first) &&
            (!have_prev || uct_srqud_psn_lt(prev, last))) {
            uct_srqud_ep_flush_fail(flush, status);
            reported = 1;
        }
        prev      = flush->psn;
        have_prev = 1;
    }

    if (!reported) {
        /* sent after the last flush: the next one reports it */
        ep->rma_status = status;
    }
}


void uct_srqud_ep_op_done(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    uct_srqud_ep_flush_t *flush;

    ucs_assert(ep->ops > 0);
    if (--ep->ops > 0) {
        return;
    }

    if (ep->flags & UCT_SRQUD_EP_FLAG_FAILED) {
        /* a cancelling flush waited for the last chunk sends */
        uct_srqud_ep_complete_flushes(ep, ep->fail_status);
        return;
    }

    /* A flush posted while operations were in progress recorded the psn
     * sent then; their later packets (copy-path fragments, a zero-copy put
     * that fell back to the copy path) carry higher ones, and the flush
     * must wait for those too: everything sent until now. Without this a
     * flush completed with up to a window of fragments not yet applied.
     * Operations' own completions were queued after their last packet and
     * keep their psn. */
    if (ep->flushes_wait_ops > 0) {
        ucs_queue_for_each(flush, &ep->tx.flushes, queue) {
            if (flush->wait_ops) {
                flush->psn      = (uct_srqud_psn_t)(ep->tx.next - 1);
                flush->wait_ops = 0;
            }
        }
        ep->flushes_wait_ops = 0;
        if (!ucs_queue_is_empty(&ep->tx.window)) {
            /* someone waits: the peer should not hold its acknowledgement */
            uct_srqud_ep_request_ack(iface, ep);
        }
    }

    if (ep->flags & UCT_SRQUD_EP_FLAG_FENCED) {
        /* what waited behind the fence may go (the user's progress
         * dispatches it) */
        ep->flags &= ~UCT_SRQUD_EP_FLAG_FENCED;
        if (!ucs_arbiter_group_is_empty(&ep->arb_group)) {
            ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
        }
    }
    uct_srqud_ep_complete_flushes(ep, UCS_OK);
}


void uct_srqud_ep_fence_locked(uct_srqud_ep_t *ep)
{
    /* Packets of the reliable stream are applied in order at the peer; what
     * runs beside it (zero-copy transfers, copy-path operations not yet
     * all sent) must be done before anything after the fence starts */
    if (ep->ops > 0) {
        ep->flags |= UCT_SRQUD_EP_FLAG_FENCED;
    }
}


ucs_status_t uct_srqud_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);

    uct_srqud_enter(iface);
    uct_srqud_ep_fence_locked(ep);
    uct_srqud_leave(iface);
    UCT_TL_EP_STAT_FENCE(&ep->super);
    return UCS_OK;
}


/* Queue @a comp to complete when everything sent so far is acknowledged
 * and the ep's RMA operations are done */
ucs_status_t uct_srqud_ep_add_flush(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep, uct_completion_t *comp,
                                    int wait_ops, uint8_t kind, uint32_t op_id)
{
    uct_srqud_ep_flush_t *flush;

    flush = ucs_malloc(sizeof(*flush), "srqud_ep_flush");
    if (flush == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    flush->psn      = (uct_srqud_psn_t)(ep->tx.next - 1);
    flush->comp     = comp;
    flush->kind     = kind;
    flush->op_id    = op_id;
    flush->status   = UCS_OK;
    if (kind == UCT_SRQUD_FLUSH_USER) {
        /* refused puts sent after the previous flush, already known */
        flush->status  = ep->rma_status;
        ep->rma_status = UCS_OK;
    }
    flush->wait_ops = wait_ops && (ep->ops > 0);
    ep->flushes_wait_ops += flush->wait_ops;
    ucs_queue_push(&ep->tx.flushes, &flush->queue);
    if (!ucs_queue_is_empty(&ep->tx.window)) {
        uct_srqud_ep_request_ack(iface, ep);
    }
    return UCS_OK;
}


/* A flush without a completion is polled: it asks for an acknowledgement
 * once per packet sent since, not per poll. Requests and AMs do not ask
 * (a reply or ACK_THRESH brings the ack), so without this it would wait
 * for ACK_DELAY. */
static void uct_srqud_ep_flush_ask(uct_srqud_iface_t *iface,
                                   uct_srqud_ep_t *ep)
{
    if (!(ep->flags & UCT_SRQUD_EP_FLAG_FAILED) &&
        !ucs_queue_is_empty(&ep->tx.window) &&
        (ep->tx.ack_asked != ep->tx.next) &&
        (uct_srqud_ep_request_ack(iface, ep) == UCS_OK)) {
        ep->tx.ack_asked = ep->tx.next;   /* else the next poll asks */
    }
}


ucs_status_t uct_srqud_ep_add_rma_flush(uct_srqud_iface_t *iface,
                                        uct_srqud_ep_t *ep, uint32_t op_id,
                                        uct_completion_t *comp)
{
    if (ucs_queue_is_empty(&ep->tx.window) && (ep->ops == 0)) {
        /* all acknowledged, so a refusal of it came first and ended the
         * operation: it was not refused */
        if (comp != NULL) {
            uct_invoke_completion(comp, UCS_OK);
        }
        return UCS_OK;
    }
    /* without a completion too (UCT allows a NULL comp for zcopy
     * operations): a refusal then goes to the user's next flush */
    return uct_srqud_ep_add_flush(iface, ep, comp, 0, UCT_SRQUD_FLUSH_OP,
                                  op_id);
}


static ucs_status_t
uct_srqud_ep_flush_locked(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                          unsigned flags, uct_completion_t *comp)
{
    ucs_status_t status;

    /* batched sends leave now: a flush is where the user waits for them */
    uct_srqud_tx_ring(iface);

    if (ep->flags & UCT_SRQUD_EP_FLAG_FAILED) {
        return ep->fail_status;
    }

    /* Cancel: give up what is not acknowledged, and the ep's RMA and
     * zero-copy operations; the ep is unusable after. Chunk sends already
     * posted read the user's memory until they complete: UCP destroys the
     * ep (and the user may free the memory) once this flush is done, so
     * it waits for them. */
    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        ep->flags      |= UCT_SRQUD_EP_FLAG_FAILED;
        ep->fail_status = UCS_ERR_CANCELED;
        /* am_zcopy sends posted still read the user's memory: the QP is
         * reset first, so that their completions run now */
        if (uct_srqud_tx_posted_zcopy(iface, ep->ep_id)) {
            uct_srqud_tx_recover(iface, 0);
        }
        uct_srqud_ep_drop_window(ep, UCS_ERR_CANCELED);
        iface->proto->ep_cleanup(iface, ep, UCS_ERR_CANCELED);
        if (ep->ops == 0) {
            UCT_TL_EP_STAT_FLUSH(&ep->super);
            return UCS_OK;
        }
        if (comp != NULL) {
            status = uct_srqud_ep_add_flush(iface, ep, comp, 0,
                                            UCT_SRQUD_FLUSH_USER, 0);
            if (status != UCS_OK) {
                return status;
            }
        }
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
        return UCS_INPROGRESS;
    }

    /* As UCX's ud: no flush while the ep could not send or has requests
     * queued (unless this flush is the one being dispatched), so that it
     * does not overtake operations that wait for resources */
    if (!uct_srqud_tx_has_resources(iface) ||
        !uct_srqud_ep_tx_window_open(iface, ep) ||
        uct_srqud_ep_queued_ahead(ep)) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
        return UCS_ERR_NO_RESOURCE;
    }

    if (ucs_queue_is_empty(&ep->tx.window) && (ep->ops == 0)) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
        if (ep->rma_status != UCS_OK) {
            status         = ep->rma_status;
            ep->rma_status = UCS_OK;
            return status;
        }
        return UCS_OK;
    }

    if (comp != NULL) {
        status = uct_srqud_ep_add_flush(iface, ep, comp, 1,
                                        UCT_SRQUD_FLUSH_USER, 0);
        if (status != UCS_OK) {
            return status;
        }
    } else {
        uct_srqud_ep_flush_ask(iface, ep);
    }

    UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    return UCS_INPROGRESS;
}


ucs_status_t uct_srqud_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ucs_status_t status;

    UCT_SRQUD_LOCKED(iface, status,
                     uct_srqud_ep_flush_locked(iface, ep, flags, comp));
    return status;
}


ucs_status_t uct_srqud_ep_flush_all(uct_srqud_iface_t *iface,
                                    uct_completion_t *comp)
{
    uct_srqud_ep_t *ep;
    unsigned count = 0, i;
    ucs_status_t status;

    uct_srqud_tx_ring(iface);

    /* Requests queued on pending groups are operations of this interface
     * too, not yet sent: UCP's worker flush completes as soon as every
     * interface says UCS_OK here, so it must not while any waits (they
     * wait when the send queue or an ep's window was full, or for the
     * user's progress after the async thread freed room). A flush with a
     * completion cannot be ordered after them: the caller asks again. */
    ucs_ptr_array_for_each(ep, i, &iface->eps) {
        /* a failed ep's requests are the user's to purge, never sent */
        if (!(ep->flags & UCT_SRQUD_EP_FLAG_FAILED) &&
            !ucs_arbiter_group_is_empty(&ep->arb_group)) {
            return (comp == NULL) ? UCS_INPROGRESS : UCS_ERR_NO_RESOURCE;
        }
    }

    /* Done when every endpoint's packets are acknowledged (only endpoints
     * with unacknowledged packets are on the active list; lingering ones,
     * destroyed by the user, count too: their data is still on its way)
     * and no RMA or zero-copy operation is in progress */
    if (ucs_list_is_empty(&iface->tx.active_list) &&
        iface->proto->idle(iface)) {
        return UCS_OK;
    }

    if (comp != NULL) {
        ucs_ptr_array_for_each(ep, i, &iface->eps) {
            if (ucs_queue_is_empty(&ep->tx.window) && (ep->ops == 0)) {
                continue;
            }
            status = uct_srqud_ep_add_flush(iface, ep, comp, 1,
                                            UCT_SRQUD_FLUSH_USER, 0);
            if (status != UCS_OK) {
                return status;
            }
            ++count;
        }
        if (count == 0) {
            /* responder-side work only (a peer's transfer): not ours to
             * wait for */
            return UCS_OK;
        }
        /* the caller counted one completion; each endpoint delivers one */
        comp->count += count - 1;
    } else {
        /* the endpoints with unacknowledged packets */
        ucs_list_for_each(ep, &iface->tx.active_list, tx.active_list) {
            uct_srqud_ep_flush_ask(iface, ep);
        }
    }
    return UCS_INPROGRESS;
}
