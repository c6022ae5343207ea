/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_tx.h"
#include "srqud_dev.h"
#include "srqud_watchdog.h"

#include <ucs/datastruct/mpool.inl>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>


/* Most send descriptors a chunk of the pool takes by default */
#define UCT_SRQUD_TX_CHUNK_MAX 1024


/* A send waiting for the doorbell: the work request with its own copy of
 * the gather list, and of the packet when it was inline from the caller's
 * stack (a descriptor's packet stays where it is until its completion) */
typedef struct uct_srqud_tx_batch_wr {
    struct ibv_send_wr       wr;
    struct ibv_sge           sge[1 + UCT_SRQUD_MAX_IOV];
    uint8_t                  inl[UCT_SRQUD_CTL_INLINE_MAX] UCS_V_ALIGNED(8);
} uct_srqud_tx_batch_wr_t;


static void uct_srqud_tx_desc_init(uct_iface_h tl_iface, void *obj,
                                   uct_mem_h memh)
{
    uct_srqud_send_desc_t *desc = obj;

    desc->lkey = uct_srqud_memh_lkey(memh);
}


ucs_status_t uct_srqud_tx_init(uct_srqud_iface_t *iface,
                               const uct_srqud_iface_config_t *config)
{
    uct_srqud_send_desc_t *desc;
    ucs_status_t status;

    iface->tx.available  = iface->config.tx_qlen;
    iface->tx.sn         = 0;
    iface->tx.comp_sn    = 0;
    iface->tx.sig_sn     = 0;
    iface->tx.unsignaled = 0;
    iface->tx.recent     = 0;
    iface->tx.user_sends = 0;
    iface->tx.step_score = 0;
    iface->tx.batch_idle = (iface->config.tx_batch_idle == UCS_CONFIG_ON);
    iface->tx.poll_unsignaled = 0;
    iface->tx.stash_count = 0;
    iface->tx.next_timer = 0;
    iface->tx.qp_error   = 0;
    iface->tx.flushed    = 0;
    iface->tx.batch_count = 0;
    iface->tx.chain      = 0;
    iface->tx.spare_count = 0;
    iface->tx.batch      = ucs_calloc(iface->config.tx_batch,
                                      sizeof(*iface->tx.batch),
                                      "srqud_tx_batch");
    if (iface->tx.batch == NULL) {
        ucs_error("%s: failed to allocate the send batch", iface->md->name);
        return UCS_ERR_NO_MEMORY;
    }
    ucs_queue_head_init(&iface->tx.outstanding);
    ucs_list_head_init(&iface->tx.active_list);
    /* A descriptor is held until its packet is acknowledged, so a stream
     * to one peer holds up to a window of them besides the send queue's: a
     * chunk holds that many by default (TX_BUFS_GROW 0), up to as many as
     * ud_verbs' pool starts with (a large TX_WINDOW must not register it
     * all at open) */
    /* an am_bcopy of several packets is packed into its first
     * descriptor (srqud_ep_am.c) */
    status = uct_iface_mpool_init(&iface->super, &iface->tx.mp,
                                  sizeof(uct_srqud_send_desc_t) +
                                  sizeof(uct_srqud_neth_t) +
                                  iface->config.am_packets *
                                  (iface->config.seg_size -
                                   sizeof(uct_srqud_neth_t)),
                                  sizeof(uct_srqud_send_desc_t),
                                  UCS_SYS_CACHE_LINE_SIZE, &config->tx_mp,
                                  ucs_min(ucs_min(iface->config.tx_qlen +
                                                  iface->config.tx_window,
                                                  UCT_SRQUD_TX_CHUNK_MAX),
                                          (unsigned)config->tx_mp.max_bufs),
                                  uct_srqud_tx_desc_init, "srqud_tx");
    if (status != UCS_OK) {
        ucs_free(iface->tx.batch);
        iface->tx.batch = NULL;
        return status;
    }

    /* The first chunk is allocated and registered now: grown on demand,
     * each chunk was a registration in the middle of the user's sends, a
     * stall of milliseconds on Soft-RoCE (docs/notes/mpi-small-messages.md,
     * "Stalls of a 2-rank broadcast, traced"). A get grows the empty pool
     * by one chunk, of the size the pool chose; on failure the pool still
     * grows on demand. */
    desc = ucs_mpool_get(&iface->tx.mp);
    if (desc != NULL) {
        ucs_mpool_put(desc);
    }
    return UCS_OK;
}


void uct_srqud_tx_cleanup(uct_srqud_iface_t *iface)
{
    uct_srqud_send_desc_t *desc;

    ucs_queue_for_each_extract(desc, &iface->tx.outstanding, queue, 1) {
        desc->flags &= ~UCT_SRQUD_DESC_FLAG_IN_WINDOW; /* its ep is gone */
        uct_srqud_tx_desc_completed(iface, desc);
    }
    while (iface->tx.spare_count > 0) {
        ucs_mpool_put_inline(iface->tx.spare[--iface->tx.spare_count]);
    }
    ucs_mpool_cleanup(&iface->tx.mp, 1);
    ucs_free(iface->tx.batch);
    iface->tx.batch       = NULL;
    iface->tx.batch_count = 0;
}


/* The device needs @a desc (if any) no more: back to the pool, unless an
 * ep's window keeps it for retransmission */
static UCS_F_ALWAYS_INLINE void
uct_srqud_tx_desc_put_unkept(uct_srqud_send_desc_t *desc)
{
    if ((desc != NULL) && !(desc->flags & UCT_SRQUD_DESC_FLAG_IN_WINDOW)) {
        ucs_mpool_put_inline(desc);
    }
}


void uct_srqud_tx_desc_completed(uct_srqud_iface_t *iface,
                                 uct_srqud_send_desc_t *desc)
{
    uct_completion_t *comp = desc->comp;
    ucs_status_t status    = desc->comp_status;

    desc->flags &= ~UCT_SRQUD_DESC_FLAG_IN_SQ;
    if (desc->flags & UCT_SRQUD_DESC_FLAG_IN_WINDOW) {
        return;
    }
    /* acknowledged before the device was done with it: an am_zcopy's
     * completion waited for this one */
    desc->comp = NULL;
    ucs_mpool_put_inline(desc);
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
}


int uct_srqud_tx_posted_zcopy(uct_srqud_iface_t *iface, uint32_t ep_id)
{
    uct_srqud_send_desc_t *desc;

    ucs_queue_for_each(desc, &iface->tx.outstanding, queue) {
        if ((desc->comp != NULL) &&
            (uct_srqud_tx_desc_neth(desc)->src_ep_id == ep_id)) {
            return 1;
        }
    }
    return 0;
}


/* The QP failed or the reset discarded this send: the packet never left.
 * A packet kept for retransmission is known lost here and now, so it goes
 * again as soon as the ep's congestion window allows, without waiting for
 * the peer's acknowledgements to show the hole or for a timeout: those
 * never come when everything after it was flushed too (a burst of resends
 * into a failed QP waited out a backed-off timeout per failure). */
static void uct_srqud_tx_desc_flushed(uct_srqud_iface_t *iface,
                                      uct_srqud_send_desc_t *desc)
{
    if ((desc->flags & UCT_SRQUD_DESC_FLAG_IN_WINDOW) && !desc->slot.sacked) {
        desc->slot.lost   = 1;
        iface->tx.flushed = 1;
    }
    uct_srqud_tx_desc_completed(iface, desc);
}


static void uct_srqud_tx_complete(uct_srqud_iface_t *iface,
                                  const struct ibv_wc *wc)
{
    uct_srqud_send_desc_t *desc;

    if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
        /* the QP is in the error state now (a flush means it was already):
         * the packets are lost, reliability resends them once
         * uct_srqud_tx_recover() has reset it */
        ++iface->stats.tx_errors;
        iface->tx.qp_error = 1;
        if (wc->status != IBV_WC_WR_FLUSH_ERR) {
            ucs_debug("%s: send completion error: %s", iface->md->name,
                      ibv_wc_status_str(wc->status));
        }
    }

    /* Completions come in posting order, and one stands for the
     * unsignaled sends before it (a failed QP completes every send,
     * signaled or not): their slots are free too. One of a send from
     * before a reset (the device flushes the old queue on its own time)
     * finds its slot counted free by uct_srqud_tx_recover() already. */
    if (ucs_likely(wc->wr_id > iface->tx.comp_sn)) {
        iface->tx.available += (int)(wc->wr_id - iface->tx.comp_sn);
        iface->tx.comp_sn    = wc->wr_id;
    } else {
        ++iface->stats.tx_stale_completions;
    }

    while (!ucs_queue_is_empty(&iface->tx.outstanding)) {
        desc = ucs_queue_head_elem_non_empty(&iface->tx.outstanding,
                                             uct_srqud_send_desc_t, queue);
        if (desc->sn > iface->tx.comp_sn) {
            break;
        }
        ucs_queue_pull_non_empty(&iface->tx.outstanding);
        if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
            uct_srqud_tx_desc_flushed(iface, desc);
        } else {
            uct_srqud_tx_desc_completed(iface, desc);
        }
    }
}


/* The QP failed a send (Soft-RoCE fails them while the link is down; a
 * real HCA may on a local error): reset it, keeping its QP number. The
 * reset discards what is still queued without completions, so the
 * completions that did arrive are taken first and the rest count as done;
 * those packets are lost, as on the wire, and reliability resends them. */
void uct_srqud_tx_recover(uct_srqud_iface_t *iface, int failed)
{
    uct_srqud_send_desc_t *desc;
    struct ibv_wc wcs[64];
    int i, n;

    if (uct_srqud_dev_ud_qp_reset(iface, iface->qp, "interface", failed) !=
        UCS_OK) {
        return; /* still in error: tried again at the next progress */
    }

    /* sends batched after the failure never reached the QP: they are in
     * outstanding, flushed below with the rest */
    iface->tx.batch_count = 0;

    for (i = 0; i < iface->tx.stash_count; ++i) {
        uct_srqud_tx_complete(iface, &iface->tx.stash[i]);
    }
    iface->tx.stash_count = 0;
    while ((n = ibv_poll_cq(iface->send_cq, ucs_static_array_size(wcs),
                            wcs)) > 0) {
        for (i = 0; i < n; ++i) {
            uct_srqud_tx_complete(iface, &wcs[i]);
        }
    }
    ucs_queue_for_each_extract(desc, &iface->tx.outstanding, queue, 1) {
        uct_srqud_tx_desc_flushed(iface, desc);
    }
    iface->tx.comp_sn      = iface->tx.sn;
    iface->tx.sig_sn       = iface->tx.sn;
    iface->tx.unsignaled   = 0;
    iface->tx.recent       = 0;
    iface->tx.available    = iface->config.tx_qlen;
    iface->tx.qp_error     = 0;
}


static void uct_srqud_tx_fault_qp_error(uct_srqud_iface_t *iface)
{
    struct ibv_qp_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_ERR;
    if (ibv_modify_qp(iface->qp, &attr, IBV_QP_STATE) != 0) {
        ucs_warn("%s: fault injection: ibv_modify_qp(ERR) failed: %m",
                 iface->md->name);
    }
}


void uct_srqud_tx_doorbell(uct_srqud_iface_t *iface)
{
    uct_srqud_tx_batch_wr_t *batch = iface->tx.batch;
    unsigned i, count              = iface->tx.batch_count;
    struct ibv_send_wr *bad_wr;
    int ret;

    iface->tx.batch_count = 0;
    if (ucs_unlikely(iface->tx.qp_error) || (count == 0)) {
        /* a failed QP: the batch's sends are in outstanding, and its reset
         * flushes them (uct_srqud_tx_recover) */
        return;
    }

    for (i = 0; i + 1 < count; ++i) {
        batch[i].wr.next = &batch[i + 1].wr;
    }
    batch[count - 1].wr.next = NULL;

    ret = ibv_post_send(iface->qp, &batch[0].wr, &bad_wr);
    ++iface->stats.tx_doorbells;
    if (ucs_unlikely(ret != 0)) {
        /* those before bad_wr were posted and complete; the rest are
         * flushed with the QP's reset at the next progress */
        ucs_debug("%s: ibv_post_send() of %u failed at %ld: %s",
                  iface->md->name, count, (long)(bad_wr - &batch[0].wr),
                  strerror(ret));
        iface->tx.qp_error = 1;
    }
}


/* A batch starts in the last quarter of the wait of the timer set for an
 * earlier one, before it expires, and the user progressed within the last
 * tick: it is here, sending. Away from progress for a tick, the expiry is
 * the watchdog's too (ASYNC_TICK). */
static UCS_F_ALWAYS_INLINE int
uct_srqud_tx_hold_defer(uct_srqud_iface_t *iface, ucs_time_t now)
{
    ucs_time_t waited = uct_srqud_time_since(now, iface->async.wd_armed);

    return (waited >= iface->config.tx_hold - (iface->config.tx_hold / 4)) &&
           (waited < iface->config.tx_hold) &&
           (uct_srqud_time_since(now, iface->async.last_progress) <
            iface->config.async_tick);
}


/* A batch starts (its time, for TX_BATCH_WAIT): if the user made it, the
 * async thread posts it within TX_HOLD unless the user rings it first (a
 * full or aged batch, progress, flush), so that the last sends of a burst
 * do not wait for the user's next call, however long it computes. The
 * first batch since the user's last progress sets the timer, the user's
 * progress, which rings the batch, moves it back (srqud_progress.c): two
 * system calls per progress, not per batch. An expiry during a stream
 * wakes the async thread for nothing, on a core of the ranks, or, most of
 * the time, finds the async lock taken by a send (a broadcast's root on
 * Soft-RoCE spends most of its time in its doorbell's system call): UCX's
 * thread then leaves it to the user's next UCP progress, and the unread
 * timerfd expires no more, so the stream's last batch waits for that
 * progress, or the rescue timer's 100 ms. With TX_HOLD_MOVE a user that
 * goes on sending moves the timer on, once in the last quarter of its
 * wait, so that it expires after the stream (not the default: Open MPI's
 * 4-rank Bcast on 2 cores took 1.2-1.4x the average time). The
 * user's progress and the async thread ring their own batches before
 * they return. */
static void uct_srqud_tx_batch_start(uct_srqud_iface_t *iface)
{
    ucs_time_t now = ucs_get_time();

    /* a message's packets ring their batch themselves; without an async
     * thread (UCX's poll mode) there is no timer to set, and a hold that
     * only the async tick clears would make every progress call full */
    if (!iface->tx.chain && !iface->async.user_progress &&
        !iface->async.active && (iface->async.wd_fd >= 0)) {
        if (!iface->async.wd_hold) {
            uct_srqud_watchdog_set(iface, iface->config.tx_hold, now);
            iface->async.wd_hold = 1;
        } else if (iface->config.tx_hold_move &&
                   uct_srqud_tx_hold_defer(iface, now)) {
            ++iface->stats.tx_hold_deferred;
            uct_srqud_watchdog_set(iface, iface->config.tx_hold, now);
            /* the system call is not the batch's wait (TX_BATCH_WAIT) */
            now = ucs_get_time();
        }
    }
    iface->tx.batch_start = now;
}


/* The batch goes with this send: it is full, it holds the last free WQEs
 * (whose completions the next sends wait for), or its first send has
 * waited TX_BATCH_WAIT. A sender that never progresses (a broadcast's
 * root) would otherwise deliver bursts of TX_BATCH, and its peer would
 * wait for a whole batch once every TX_BATCH messages. Not by age within
 * a message's packets, whose last one rings (a slow copy between them
 * would split the message's doorbell). */
static UCS_F_ALWAYS_INLINE int uct_srqud_tx_batch_due(uct_srqud_iface_t *iface)
{
    return (iface->tx.batch_count == iface->config.tx_batch) ||
           (iface->tx.available <= 0) ||
           (!iface->tx.chain &&
            (uct_srqud_time_since(ucs_get_time(), iface->tx.batch_start) >=
             iface->config.tx_batch_wait));
}


/* Into the batch: a copy of the request, its gather list, and of the
 * packet if it is inline from the caller's stack */
static void uct_srqud_tx_batch_add(uct_srqud_iface_t *iface,
                                   const struct ibv_send_wr *wr,
                                   int from_stack)
{
    uct_srqud_tx_batch_wr_t *bwr = &iface->tx.batch[iface->tx.batch_count++];
    int i;

    ucs_assert(iface->tx.batch_count <= iface->config.tx_batch);
    ucs_assert(wr->num_sge <= ucs_static_array_size(bwr->sge));
    bwr->wr         = *wr;
    bwr->wr.sg_list = bwr->sge;
    for (i = 0; i < wr->num_sge; ++i) {
        bwr->sge[i] = wr->sg_list[i];
    }
    if (from_stack) {
        ucs_assert((wr->num_sge == 1) &&
                   (wr->sg_list[0].length <= sizeof(bwr->inl)));
        memcpy(bwr->inl, (void*)(uintptr_t)wr->sg_list[0].addr,
               wr->sg_list[0].length);
        bwr->sge[0].addr = (uintptr_t)bwr->inl;
    }
}


/* A provider may refuse sends on a QP in the error state: the packet is
 * lost then, and the QP is reset at the next progress */
static void uct_srqud_tx_post_failed(uct_srqud_iface_t *iface,
                                     uct_srqud_send_desc_t *desc, int ret)
{
    ucs_debug("%s: ibv_post_send() failed: %s", iface->md->name,
              strerror(ret));
    iface->tx.qp_error = 1;
    if (desc != NULL) {
        uct_srqud_tx_desc_flushed(iface, desc);
    }
}


/* Completions come in posting order: the sequence number frees
 * descriptors without a per-WQE table */
static UCS_F_ALWAYS_INLINE void
uct_srqud_tx_wr_seq(uct_srqud_iface_t *iface, struct ibv_send_wr *wr)
{
    wr->wr_id             = iface->tx.sn + 1;
    wr->next              = NULL;
    wr->opcode            = IBV_WR_SEND;
    wr->wr.ud.remote_qkey = UCT_SRQUD_QKEY;
}


/* @a num_wr sends are in the queue (or the batch) */
static UCS_F_ALWAYS_INLINE void
uct_srqud_tx_posted(uct_srqud_iface_t *iface, int num_wr)
{
    iface->tx.sn        += num_wr;
    iface->tx.available -= num_wr;
    iface->tx.recent    += num_wr;
    /* a step of the user's (TX_BATCH_IDLE=auto), not its progress' acks
     * and resends, nor the async thread's */
    iface->tx.user_sends += !(iface->async.user_progress |
                              iface->async.active);
    ++iface->stats.tx_packets;
}


/* The device reads @a desc (if any) after the post: it waits in
 * outstanding for the completion of its send or a later one */
static UCS_F_ALWAYS_INLINE void
uct_srqud_tx_desc_hold(uct_srqud_iface_t *iface, uct_srqud_send_desc_t *desc)
{
    if (desc != NULL) {
        desc->sn     = iface->tx.sn;
        desc->flags |= UCT_SRQUD_DESC_FLAG_IN_SQ;
        ucs_queue_push(&iface->tx.outstanding, &desc->queue);
    }
}


/* @a num_wr unsignaled sends are in the queue: the next completion frees
 * their slots, and @a desc if the device reads it after the post
 * (@a held), else the packet is in the work request */
static UCS_F_ALWAYS_INLINE void
uct_srqud_tx_posted_unsignaled(uct_srqud_iface_t *iface,
                               uct_srqud_send_desc_t *desc, int num_wr,
                               int held)
{
    iface->tx.unsignaled  += num_wr;
    ++iface->stats.tx_unsignaled;
    if (held) {
        uct_srqud_tx_desc_hold(iface, desc);
    } else {
        uct_srqud_tx_desc_put_unkept(desc);
    }
}


/* Fault injection (tests), after the request is filled in: the number
 * of requests to post, 2 when @a dup_wr, the same packet, follows it. The
 * QP may fail first, as a send that hits a downed link does on Soft-RoCE:
 * this send is flushed, and the next progress resets the QP. */
static int uct_srqud_tx_fault(uct_srqud_iface_t *iface, struct ibv_send_wr *wr,
                              struct ibv_send_wr *dup_wr)
{
    /* lost as on the wire: the device sends it (and reads a descriptor it
     * is not inline from, which a resend must not post again before its
     * completion), the receiving device drops it for its Q_Key */
    if ((iface->config.fault_drop != 0) &&
        (uct_srqud_iface_fault_rand(iface) < iface->config.fault_drop)) {
        ++iface->stats.fault_dropped;
        wr->wr.ud.remote_qkey = UCT_SRQUD_QKEY ^ 1;
        return 1;
    }

    if ((iface->config.fault_qp_error != 0) &&
        (uct_srqud_iface_fault_rand(iface) < iface->config.fault_qp_error)) {
        uct_srqud_tx_fault_qp_error(iface);
    }

    /* signaled as the first; a descriptor in the send queue is released
     * by the completion of the second. Not within a message of several
     * packets: the room its next ones were checked for is theirs */
    if ((iface->config.fault_dup != 0) && (iface->tx.available >= 2) &&
        !iface->tx.chain &&
        (uct_srqud_iface_fault_rand(iface) < iface->config.fault_dup)) {
        *dup_wr       = *wr;
        dup_wr->wr_id = iface->tx.sn + 2;
        wr->next      = dup_wr;
        ++iface->stats.fault_duplicated;
        return 2;
    }
    return 1;
}


/* Post one send work request, or batch it for one doorbell with the next
 * ones; @a desc, if any, is freed by the completion */
static ucs_status_t uct_srqud_tx_post_wr(uct_srqud_iface_t *iface,
                                         struct ibv_send_wr *wr,
                                         uct_srqud_send_desc_t *desc)
{
    struct ibv_send_wr dup_wr, *bad_wr;
    int ret, batched, signaled, num_wr = 1;

    /* The QP is in the error state until the next progress resets it: the
     * packet cannot leave; kept for retransmission, it goes after the
     * reset (uct_srqud_tx_desc_flushed) */
    if (ucs_unlikely(iface->tx.qp_error)) {
        if (desc != NULL) {
            uct_srqud_tx_desc_flushed(iface, desc);
        }
        return UCS_OK;
    }

    uct_srqud_tx_wr_seq(iface, wr);

    /* Each ibv_post_send is a system call on Soft-RoCE (a doorbell write
     * on an HCA): while earlier sends are still in the queue, this one can
     * wait for the next ones and share a doorbell with them. A send into
     * an idle queue goes at once, so that a lone message (a ping-pong's)
     * waits for nothing. */
    batched = uct_srqud_tx_batches(iface);

    /* A completion is requested for an am_zcopy's packet (the user's
     * completion waits until the device no longer reads the user's
     * memory), for a batched send but a message's packets before its last
     * (a signaled send in the queue is what keeps the next ones batching)
     * and every tx_cq_moderation sends, whose completion frees the slots
     * of the unsignaled ones before it. A packet the device reads from its
     * descriptor after the post (not inline, or batched) waits in
     * outstanding for that completion; an inline one is freed by the
     * acknowledgement. Signaled, a ping-pong's message above the inline
     * size cost the device a completion and the next progress a poll of
     * the send CQ (about 250 instructions at 1 KB). Packets in no window
     * (control packets, resend copies) are signaled: a failed QP shows in
     * the completions of unsignaled sends only when they are polled, which
     * the timers of an ep with packets in flight make happen
     * (srqud_progress.c), and an interface that only acknowledges has
     * none; a copy's completion frees it and the descriptors held before
     * it. */
    signaled = (batched && !iface->tx.chain) || (desc == NULL) ||
               !(desc->flags & UCT_SRQUD_DESC_FLAG_IN_WINDOW) ||
               (desc->num_zsge > 0) || uct_srqud_tx_completion_due(iface);
    if (signaled) {
        wr->send_flags |= IBV_SEND_SIGNALED;
    } else {
        wr->send_flags &= ~IBV_SEND_SIGNALED;
    }

    if (ucs_unlikely(iface->config.fault_tx)) {
        num_wr = uct_srqud_tx_fault(iface, wr, &dup_wr);
    }

    if (batched) {
        if (iface->tx.batch_count + num_wr > iface->config.tx_batch) {
            uct_srqud_tx_doorbell(iface);
        }
        if (iface->tx.batch_count == 0) {
            uct_srqud_tx_batch_start(iface);
        }
        uct_srqud_tx_batch_add(iface, wr, desc == NULL);
        if (num_wr == 2) {
            uct_srqud_tx_batch_add(iface, &dup_wr, desc == NULL);
        }
    } else {
        ret = ibv_post_send(iface->qp, wr, &bad_wr);
        ++iface->stats.tx_doorbells;
        if (ucs_unlikely(ret != 0)) {
            uct_srqud_tx_post_failed(iface, desc, ret);
            return UCS_OK;
        }
    }

    uct_srqud_tx_posted(iface, num_wr);
    if (signaled) {
        iface->tx.sig_sn     = iface->tx.sn;
        iface->tx.unsignaled = 0;
        uct_srqud_tx_desc_hold(iface, desc);
    } else {
        uct_srqud_tx_posted_unsignaled(iface, desc, num_wr,
                                       batched ||
                                       !(wr->send_flags & IBV_SEND_INLINE));
    }

    if ((iface->tx.batch_count > 0) && uct_srqud_tx_batch_due(iface)) {
        uct_srqud_tx_doorbell(iface);
    }
    return UCS_OK;
}


/* The lone data packet into an idle queue (a ping-pong's), not an
 * am_zcopy's: what uct_srqud_tx_post_wr decides for it (no batch, no
 * completion), without the cases it does not have */
static UCS_F_ALWAYS_INLINE int
uct_srqud_tx_lone(const uct_srqud_iface_t *iface,
                  const uct_srqud_send_desc_t *desc)
{
    return (desc->flags & UCT_SRQUD_DESC_FLAG_IN_WINDOW) &&
           (desc->num_zsge == 0) && !uct_srqud_tx_batches(iface) &&
           !uct_srqud_tx_completion_due(iface) &&
           !iface->tx.qp_error && !iface->config.fault_tx;
}


/* Post the lone packet (uct_srqud_tx_lone) at once, unsignaled: a
 * descriptor the device reads after the post (@a wr not inline) waits in
 * outstanding for a later completion */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srqud_tx_post_lone(uct_srqud_iface_t *iface, struct ibv_send_wr *wr,
                       uct_srqud_send_desc_t *desc)
{
    struct ibv_send_wr *bad_wr;
    int ret;

    uct_srqud_tx_wr_seq(iface, wr);
    ret = ibv_post_send(iface->qp, wr, &bad_wr);
    ++iface->stats.tx_doorbells;
    if (ucs_unlikely(ret != 0)) {
        uct_srqud_tx_post_failed(iface, desc, ret);
        return UCS_OK;
    }
    uct_srqud_tx_posted(iface, 1);
    uct_srqud_tx_posted_unsignaled(iface, desc, 1,
                                   !(wr->send_flags & IBV_SEND_INLINE));
    return UCS_OK;
}


ucs_status_t uct_srqud_tx_post_send(uct_srqud_iface_t *iface,
                                    struct ibv_ah *ah, uint32_t dest_qpn,
                                    uct_srqud_send_desc_t *desc)
{
    struct ibv_sge sge[1 + UCT_SRQUD_MAX_IOV];
    struct ibv_send_wr wr;
    uint8_t i;

    sge[0].addr         = (uintptr_t)uct_srqud_tx_desc_neth(desc);
    sge[0].length       = desc->length;
    sge[0].lkey         = desc->lkey;
    wr.sg_list          = sge;
    wr.wr.ud.ah         = ah;
    wr.wr.ud.remote_qpn = dest_qpn;

    if (ucs_likely(uct_srqud_tx_lone(iface, desc))) {
        wr.num_sge    = 1;
        wr.send_flags = (desc->length <= iface->config.max_inline) ?
                        IBV_SEND_INLINE : 0;
        return uct_srqud_tx_post_lone(iface, &wr, desc);
    }

    for (i = 0; i < desc->num_zsge; ++i) {
        sge[1 + i] = desc->zsge[i]; /* am_zcopy payload in user memory */
    }
    wr.num_sge    = 1 + desc->num_zsge;
    wr.send_flags = ((desc->num_zsge == 0) &&
                     (desc->length <= iface->config.max_inline)) ?
                    IBV_SEND_INLINE : 0;
    return uct_srqud_tx_post_wr(iface, &wr, desc);
}


ucs_status_t uct_srqud_tx_post_copy(uct_srqud_iface_t *iface,
                                    struct ibv_ah *ah, uint32_t dest_qpn,
                                    const uct_srqud_send_desc_t *desc,
                                    uint32_t dest_ep_id)
{
    uct_srqud_send_desc_t *copy;

    ucs_assert(desc->num_zsge == 0);
    copy = ucs_mpool_get_inline(&iface->tx.mp);
    if (ucs_unlikely(copy == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    memcpy(uct_srqud_tx_desc_neth(copy), desc + 1, /* its packet */
           desc->length);
    uct_srqud_tx_desc_neth(copy)->dest_ep_id = dest_ep_id;
    copy->length   = desc->length;
    copy->num_zsge = 0;
    copy->comp     = NULL;
    copy->flags    = 0;   /* in no window: freed by its completion */
    ++iface->stats.tx_resend_copies;
    return uct_srqud_tx_post_send(iface, ah, dest_qpn, copy);
}


ucs_status_t uct_srqud_tx_post_inline(uct_srqud_iface_t *iface,
                                      struct ibv_ah *ah, uint32_t dest_qpn,
                                      const void *packet, size_t length)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    ucs_assert(length <= iface->config.max_inline);
    sge.addr            = (uintptr_t)packet;
    sge.length          = length;
    sge.lkey            = 0; /* inline data needs no key */
    wr.sg_list          = &sge;
    wr.num_sge          = 1;
    wr.send_flags       = IBV_SEND_INLINE;
    wr.wr.ud.ah         = ah;
    wr.wr.ud.remote_qpn = dest_qpn;
    return uct_srqud_tx_post_wr(iface, &wr, NULL);
}


unsigned uct_srqud_tx_poll_cq(uct_srqud_iface_t *iface)
{
    struct ibv_wc wcs[64];
    unsigned i, count, max;
    int ret, poll;

    count = iface->tx.stash_count;
    for (i = 0; i < count; ++i) {
        uct_srqud_tx_complete(iface, &iface->tx.stash[i]);
    }
    iface->tx.stash_count = 0;

    poll = uct_srqud_tx_signaled_pending(iface) ||
           (iface->tx.poll_unsignaled && (iface->tx.sn != iface->tx.comp_sn));
    /* the look the timers asked for is this one, also when every send
     * has completed and there is nothing to look for: a flag left set
     * would make every progress call a full one until the next send */
    iface->tx.poll_unsignaled = 0;
    if (poll) {
        max = ucs_min(iface->config.tx_max_poll, ucs_static_array_size(wcs));
        /* Batched sends are signaled, so a sender that streams and
         * progresses only when the queue is out of slots finds up to one
         * completion per send: TX_MAX_POLL of them a call and it was out
         * again within TX_MAX_POLL sends, progressing for each few (a
         * 2-rank broadcast's root, docs/notes/mpi-small-messages.md).
         * While more than half the queue is taken, the CQ is polled until
         * it is empty or half the queue is free; each completion frees at
         * least one slot. */
        do {
            ret = ibv_poll_cq(iface->send_cq, max, wcs);
            if (ucs_unlikely(ret < 0)) {
                ucs_fatal("%s: ibv_poll_cq(send) failed: %d",
                          iface->md->name, ret);
            }

            for (i = 0; i < ret; ++i) {
                uct_srqud_tx_complete(iface, &wcs[i]);
            }
            count += ret;
        } while ((ret == (int)max) &&
                 (iface->tx.available < (int)iface->config.tx_qlen / 2));
    }

    if (ucs_unlikely(iface->tx.qp_error)) {
        uct_srqud_tx_recover(iface, 1);
    }
    return count;
}
