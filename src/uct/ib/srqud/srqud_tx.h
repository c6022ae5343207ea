/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Transmit: send descriptors, posting to the interface's UD QP (inline
 * when the packet fits; batched for one doorbell while the queue is
 * busy), fault injection for tests, send completions.
 * Completions arrive in posting order, so a sequence number frees
 * descriptors without a table per WQE, and a completion frees the slots of
 * the unsignaled sends before it (UCX_SRQUD_TX_CQ_MODERATION).
 */

#ifndef UCT_SRQUD_TX_H_
#define UCT_SRQUD_TX_H_

#include "srqud_iface.h"


ucs_status_t uct_srqud_tx_init(uct_srqud_iface_t *iface,
                               const uct_srqud_iface_config_t *config);

/* At close, after the QP is gone: outstanding descriptors go back */
void uct_srqud_tx_cleanup(uct_srqud_iface_t *iface);

/* Post a descriptor's packet; the descriptor is freed by its completion
 * unless an ep's window keeps it */
ucs_status_t uct_srqud_tx_post_send(uct_srqud_iface_t *iface,
                                    struct ibv_ah *ah, uint32_t dest_qpn,
                                    uct_srqud_send_desc_t *desc);

/* A copy of a window descriptor's packet (not an am_zcopy's), addressed
 * to ep @a dest_ep_id: a resend while the device may still read the
 * descriptor for its last post, whose completion only a later signaled
 * send brings */
ucs_status_t uct_srqud_tx_post_copy(uct_srqud_iface_t *iface,
                                    struct ibv_ah *ah, uint32_t dest_qpn,
                                    const uct_srqud_send_desc_t *desc,
                                    uint32_t dest_ep_id);

/* A packet copied into the work request (control packets): needs no
 * descriptor, so acknowledgements go out even when every descriptor is
 * waiting in a window for one */
ucs_status_t uct_srqud_tx_post_inline(uct_srqud_iface_t *iface,
                                      struct ibv_ah *ah, uint32_t dest_qpn,
                                      const void *packet, size_t length);

/* Post the batched sends with one doorbell (see UCX_SRQUD_TX_BATCH):
 * called when the batch is full, by progress (first and last, so that
 * what the user and the call itself sent leaves before it returns),
 * flushes, event_arm and the async timer */
void uct_srqud_tx_doorbell(uct_srqud_iface_t *iface);

static UCS_F_ALWAYS_INLINE void uct_srqud_tx_ring(uct_srqud_iface_t *iface)
{
    if (iface->tx.batch_count > 0) {
        uct_srqud_tx_doorbell(iface);
    }
}

/* Send completions (and those stashed by event_arm); returns how many
 * (uct_srqud_tx_poll, below, calls it when there can be any) */
unsigned uct_srqud_tx_poll_cq(uct_srqud_iface_t *iface);

/* The HCA is done with a descriptor */
void uct_srqud_tx_desc_completed(uct_srqud_iface_t *iface,
                                 uct_srqud_send_desc_t *desc);


static UCS_F_ALWAYS_INLINE int
uct_srqud_tx_has_resources(uct_srqud_iface_t *iface)
{
    return iface->tx.available > 0;
}


/* Free send WQEs for a user's operation: as many as the most packets one
 * takes (an am_bcopy of AM_PACKETS). What the operations check, what
 * pending_add answers BUSY to and what dispatches pending requests must be
 * the same, or a request refused for lack of resources is sent again at
 * once (BUSY) or dispatched only to be refused again. */
static UCS_F_ALWAYS_INLINE int
uct_srqud_tx_user_resources(const uct_srqud_iface_t *iface)
{
    return iface->tx.available >= (int)iface->config.am_packets;
}


/* A signaled send has not completed yet */
static UCS_F_ALWAYS_INLINE int
uct_srqud_tx_signaled_pending(const uct_srqud_iface_t *iface)
{
    return (int64_t)(iface->tx.sig_sn - iface->tx.comp_sn) > 0;
}


/* Earlier sends may still be in the send queue: a signaled one has not
 * completed, or one went since the last progress */
static UCS_F_ALWAYS_INLINE int uct_srqud_tx_busy(const uct_srqud_iface_t *iface)
{
    return uct_srqud_tx_signaled_pending(iface) || (iface->tx.recent > 0);
}


/* The send decisions, each made here once for every path that posts:
 * does a send wait for the next ones (the queue is busy: they share a
 * doorbell; a send into an idle queue goes at once, so that a lone
 * message waits for nothing), and may it go without a completion (one at
 * least every TX_CQ_MODERATION sends frees the slots of those before).
 * Outside progress the first TX_BATCH_AFTER sends since the last one go at
 * once even into a busy queue: a batch started there costs two system
 * calls for its timer (srqud_tx.c), and the async thread's wakeup when the
 * user is descheduled before its next progress, more than it saves until
 * it holds several sends, and the fragments of one message (a 4 KB MPI
 * message is two packets) or a collective step's messages would wait for
 * the next progress. On an HCA (TX_BATCH_AFTER=auto there) a doorbell is
 * a write to the device, cheaper than a timer: sends outside progress never
 * batch, and a stream's last message waits for nothing (UINT_MAX).
 * TX_BATCH_IDLE makes the user's sends batch, all or
 * those of steps where steps of several sends prevail
 * (uct_srqud_tx_step_end), for devices where each doorbell costs a
 * context switch (Soft-RoCE's UD sends). The packets of one message
 * (AM_PACKETS) always share one. */
static UCS_F_ALWAYS_INLINE int
uct_srqud_tx_batches(const uct_srqud_iface_t *iface)
{
    return (iface->config.tx_batch > 1) &&
           ((iface->tx.batch_count > 0) || iface->tx.batch_idle ||
            iface->tx.chain ||
            (uct_srqud_tx_busy(iface) &&
             ((iface->tx.recent >= iface->config.tx_batch_after) ||
              iface->async.user_progress || iface->async.active)));
}


/* The user's progress ends its step, the sends it made since the last
 * one. With TX_BATCH_IDLE=auto the next step's sends batch from the
 * first, into an idle queue, once steps of several sends prevail: a score
 * goes up for a step of TX_BATCH_STEP sends or more and down for a
 * smaller one, and batching takes two more of the first than of the
 * second. So an Alltoall's steps to several peers and a broadcast root's
 * share a doorbell (with TX_BATCH_STEP 2 so do the packets of a message
 * above the MTU), while a ping-pong's lone packets go at once and pay no
 * hold timer, and so do steps of one and two sends in turn (a recursive
 * doubling's, where a send left without progress joins the next step),
 * which following the last step alone would always mispredict. */
static UCS_F_ALWAYS_INLINE void uct_srqud_tx_step_end(uct_srqud_iface_t *iface)
{
    if (iface->tx.user_sends == 0) {
        return;
    }

    ++iface->stats.tx_user_steps;
    iface->stats.tx_idle_steps += iface->tx.batch_idle;
    if (iface->config.tx_batch_idle == UCS_CONFIG_AUTO) {
        if (iface->tx.user_sends >= iface->config.tx_batch_step) {
            iface->tx.step_score += (iface->tx.step_score < 3);
        } else {
            iface->tx.step_score -= (iface->tx.step_score > 0);
        }
        iface->tx.batch_idle = (iface->tx.step_score >= 2);
    }
    iface->tx.user_sends = 0;
}


static UCS_F_ALWAYS_INLINE int
uct_srqud_tx_completion_due(const uct_srqud_iface_t *iface)
{
    return iface->tx.unsignaled + 2 > iface->config.tx_cq_moderation;
}


static UCS_F_ALWAYS_INLINE uct_srqud_neth_t*
uct_srqud_tx_desc_neth(uct_srqud_send_desc_t *desc)
{
    return (uct_srqud_neth_t*)(desc + 1);
}


/* No send completion can be waiting: none stashed, no signaled send
 * outstanding, no reason to look for those of unsignaled ones */
static UCS_F_ALWAYS_INLINE int
uct_srqud_tx_cq_idle(const uct_srqud_iface_t *iface)
{
    return (iface->tx.stash_count == 0) &&
           !uct_srqud_tx_signaled_pending(iface) &&
           !iface->tx.poll_unsignaled && !iface->tx.qp_error;
}


/* Send completions, when there can be any: a ping-pong's sends are
 * unsignaled, and its progress calls need not look at the send CQ */
static UCS_F_ALWAYS_INLINE unsigned uct_srqud_tx_poll(uct_srqud_iface_t *iface)
{
    if (ucs_likely(uct_srqud_tx_cq_idle(iface))) {
        return 0;
    }
    return uct_srqud_tx_poll_cq(iface);
}

/* Does a posted send of ep @a ep_id read an am_zcopy's payload from the
 * user's memory (one whose completion waits for it)? */
int uct_srqud_tx_posted_zcopy(uct_srqud_iface_t *iface, uint32_t ep_id);

/* The QP reset: what is posted is discarded (the device reads no more of
 * it) and counts as lost, reliability resends it. After a failed send,
 * and when an ep goes whose am_zcopy payload a posted send still reads. */
void uct_srqud_tx_recover(uct_srqud_iface_t *iface, int failed);

#endif
