/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_ep.h"
#include "srqud_rma.h"

#include <ucs/datastruct/mpool.inl>
#include <ucs/debug/log.h>
#include <uct/base/uct_iov.inl>
#include <string.h>


static UCS_F_ALWAYS_INLINE uct_srqud_iface_t*
uct_srqud_ep_iface(uct_srqud_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_srqud_iface_t);
}


static void uct_srqud_ep_activate(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    if (!(ep->flags & UCT_SRQUD_EP_FLAG_ACTIVE)) {
        ep->flags           |= UCT_SRQUD_EP_FLAG_ACTIVE;
        ep->tx.progress_time = ucs_get_time();
        ep->tx.resend_time   = ep->tx.progress_time;
        ep->tx.rto           = iface->config.rto_min;
        ucs_list_add_tail(&iface->tx.active_list, &ep->tx.active_list);
    }
}


static void uct_srqud_ep_deactivate(uct_srqud_ep_t *ep)
{
    if (ep->flags & UCT_SRQUD_EP_FLAG_ACTIVE) {
        ep->flags &= ~UCT_SRQUD_EP_FLAG_ACTIVE;
        ucs_list_del(&ep->tx.active_list);
    }
}


/* Release a descriptor from the window: the packet is acknowledged (or
 * given up with @a status). An am_zcopy's user completion runs now; the
 * descriptor is freed now, or on its send completion if the HCA still
 * owns it. Runs only from the user's progress (never the async timer). */
static void uct_srqud_ep_window_release(uct_srqud_send_desc_t *desc,
                                        ucs_status_t status)
{
    uct_completion_t *comp = desc->comp;

    desc->flags &= ~UCT_SRQUD_DESC_FLAG_IN_WINDOW;
    desc->comp   = NULL;
    if (!(desc->flags & UCT_SRQUD_DESC_FLAG_IN_SQ)) {
        ucs_mpool_put_inline(desc);
    }
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
}


void uct_srqud_send_desc_completed(uct_srqud_iface_t *iface,
                                   uct_srqud_send_desc_t *desc)
{
    desc->flags &= ~UCT_SRQUD_DESC_FLAG_IN_SQ;
    if (!(desc->flags & UCT_SRQUD_DESC_FLAG_IN_WINDOW)) {
        ucs_mpool_put_inline(desc);
    }
}


static void uct_srqud_ep_complete_flushes(uct_srqud_ep_t *ep,
                                          ucs_status_t status)
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
        comp_status = status;
        if ((comp_status == UCS_OK) && (ep->rma_status != UCS_OK)) {
            /* a put the peer refused: reported once */
            comp_status    = ep->rma_status;
            ep->rma_status = UCS_OK;
        }
        uct_invoke_completion(flush->comp, comp_status);
        ucs_free(flush);
    }
}


void uct_srqud_ep_op_done(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    uct_srqud_ep_flush_t *flush;

    ucs_assert(ep->ops > 0);
    if (--ep->ops > 0) {
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


/* Give up every unacknowledged packet and flush of the ep */
static void uct_srqud_ep_drop_window(uct_srqud_ep_t *ep, ucs_status_t status)
{
    uct_srqud_send_desc_t *desc;

    ucs_queue_for_each_extract(desc, &ep->tx.window, window, 1) {
        uct_srqud_ep_window_release(desc, status);
    }
    uct_srqud_ep_deactivate(ep);
    uct_srqud_ep_complete_flushes(ep, status);
}


static void uct_srqud_ep_free(uct_srqud_ep_t *ep)
{
    UCS_CLASS_DELETE_FUNC_NAME(uct_srqud_ep_t)(&ep->super.super);
}


/* A cumulative acknowledgement up to @a ack_psn. Returns 0 if the ep was
 * destroyed (a lingering ep whose last packet is acknowledged). */
static int uct_srqud_ep_process_ack(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep, uct_srqud_psn_t ack_psn)
{
    uct_srqud_send_desc_t *desc;

    if (!uct_srqud_tx_ack_is_new(ep->tx.next, ep->tx.acked, ack_psn)) {
        return 1;
    }

    while (!ucs_queue_is_empty(&ep->tx.window)) {
        desc = ucs_queue_head_elem_non_empty(&ep->tx.window,
                                             uct_srqud_send_desc_t, window);
        if (!uct_srqud_psn_le(uct_srqud_send_desc_neth(desc)->psn, ack_psn)) {
            break;
        }
        ucs_queue_pull_non_empty(&ep->tx.window);
        uct_srqud_ep_window_release(desc, UCS_OK);
    }

    ep->tx.acked         = ack_psn;
    ep->tx.progress_time = ucs_get_time();
    ep->tx.resend_time   = ep->tx.progress_time;
    ep->tx.rto           = iface->config.rto_min;
    if (ucs_queue_is_empty(&ep->tx.window)) {
        uct_srqud_ep_deactivate(ep);
        if (ep->flags & UCT_SRQUD_EP_FLAG_LINGER) {
            /* destroyed by the user, kept until now to deliver its data */
            uct_srqud_ep_free(ep);
            return 0;
        }
    }
    uct_srqud_ep_complete_flushes(ep, UCS_OK);

    /* The window has room again: requests the dispatcher descheduled for a
     * full window may go */
    if (!ucs_arbiter_group_is_empty(&ep->arb_group)) {
        ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
        uct_srqud_iface_progress_pending(iface);
    }
    return 1;
}


/* Go-back-N: resend every unacknowledged packet that the HCA does not
 * still hold, in order */
static unsigned uct_srqud_ep_resend_window(uct_srqud_iface_t *iface,
                                           uct_srqud_ep_t *ep)
{
    uct_srqud_send_desc_t *desc;
    unsigned count = 0;

    ucs_queue_for_each(desc, &ep->tx.window, window) {
        if (desc->flags & UCT_SRQUD_DESC_FLAG_IN_SQ) {
            continue;
        }
        if (!uct_srqud_iface_has_tx_resources(iface)) {
            break;
        }
        /* the receiver may have learned our id meanwhile */
        uct_srqud_send_desc_neth(desc)->dest_ep_id = ep->dest_ep_id;
        if (uct_srqud_iface_post_send(iface, ep->ah, ep->dest_qpn, desc) !=
            UCS_OK) {
            break;
        }
        ++count;
    }

    iface->stats.tx_retransmits += count;
    return count;
}


static void uct_srqud_ep_set_failed(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep, ucs_status_t status)
{
    if (ep->flags & UCT_SRQUD_EP_FLAG_FAILED) {
        return;
    }

    ucs_debug("%s: ep %p to qpn 0x%x failed: %s (%u unacknowledged)",
              iface->md->name, ep, ep->dest_qpn, ucs_status_string(status),
              uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked));

    ep->flags      |= UCT_SRQUD_EP_FLAG_FAILED;
    ep->fail_status = status;
    ++iface->stats.ep_failures;
    uct_srqud_ep_drop_window(ep, status);
    uct_srqud_rma_ep_cleanup(iface, ep, status);

    if (ep->flags & UCT_SRQUD_EP_FLAG_LINGER) {
        /* nobody to tell: the user destroyed it already */
        uct_srqud_ep_free(ep);
        return;
    }

    status = uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                     status);
    if (status != UCS_OK) {
        ucs_error("%s: peer at qpn 0x%x stopped answering (no error handler "
                  "set): %s", iface->md->name, ep->dest_qpn,
                  ucs_status_string(status));
    }
}


void uct_srqud_iface_check_timers(uct_srqud_iface_t *iface, ucs_time_t now)
{
    uct_srqud_ep_t *ep, *tmp;

    ucs_list_for_each_safe(ep, tmp, &iface->tx.active_list, tx.active_list) {
        /* No acknowledgement for this long: the peer is gone. Reported from
         * the user's progress only, since it calls the user back. */
        if (uct_srqud_time_since(now, ep->tx.progress_time) >=
            iface->config.peer_timeout) {
            if (!iface->async.active) {
                uct_srqud_ep_set_failed(iface, ep, UCS_ERR_ENDPOINT_TIMEOUT);
            } else {
                iface->async.wake_user = 1; /* a sleeping user must hear */
            }
            continue;
        }

        if (uct_srqud_time_since(now, ep->tx.resend_time) < ep->tx.rto) {
            continue;
        }

        ++iface->stats.tx_timeouts;
        uct_srqud_ep_resend_window(iface, ep);
        ep->tx.resend_time = now;
        ep->tx.rto         = uct_srqud_rto_backoff(ep->tx.rto,
                                                   iface->config.rto_max);
    }
}


/* Fill the header and post an unreliable control packet from an ep, with
 * an optional payload in two parts (header, data) */
static ucs_status_t
uct_srqud_ep_send_ctl_data(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                           uint8_t ctl, int flags, const void *hdr,
                           size_t hdr_len, const void *data, size_t data_len)
{
    size_t length = sizeof(uct_srqud_neth_t) + hdr_len + data_len;
    uint8_t packet[UCT_SRQUD_CTL_INLINE_MAX] UCS_V_ALIGNED(8);
    uct_srqud_send_desc_t *desc;
    uct_srqud_neth_t *neth;
    ucs_status_t status;

    if (!uct_srqud_iface_has_tx_resources(iface)) {
        return UCS_ERR_NO_RESOURCE;
    }

    /* inline from the stack when it fits (acknowledgements always do):
     * no descriptor needed, see uct_srqud_iface_post_inline() */
    if (ucs_likely((length <= iface->config.max_inline) &&
                   (length <= sizeof(packet)))) {
        neth = (uct_srqud_neth_t*)packet;
        desc = NULL;
    } else {
        desc = ucs_mpool_get_inline(&iface->tx.mp);
        if (desc == NULL) {
            return UCS_ERR_NO_RESOURCE;
        }
        neth           = uct_srqud_send_desc_neth(desc);
        desc->length   = length;
        desc->flags    = 0;
        desc->num_zsge = 0;
        desc->comp     = NULL;
    }

    neth->magic      = UCT_SRQUD_MAGIC;
    neth->flags      = UCT_SRQUD_PACKET_FLAG_CTL | flags;
    neth->am_id      = 0;
    neth->ctl        = ctl;
    neth->dest_ep_id = ep->dest_ep_id;
    neth->src_ep_id  = ep->ep_id;
    neth->psn        = 0;
    neth->ack_psn    = (uct_srqud_psn_t)(ep->rx.expected - 1);
    memcpy(neth + 1, hdr, hdr_len);
    memcpy(UCS_PTR_BYTE_OFFSET(neth + 1, hdr_len), data, data_len);

    if (desc == NULL) {
        return uct_srqud_iface_post_inline(iface, ep->ah, ep->dest_qpn, neth,
                                           length);
    }

    status = uct_srqud_iface_post_send(iface, ep->ah, ep->dest_qpn, desc);
    if (status != UCS_OK) {
        ucs_mpool_put_inline(desc);
    }
    return status;
}


static ucs_status_t
uct_srqud_ep_send_ctl(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                      uint8_t ctl, int flags)
{
    return uct_srqud_ep_send_ctl_data(iface, ep, ctl, flags, NULL, 0, NULL, 0);
}


ucs_status_t uct_srqud_ep_send_answer(uct_srqud_iface_t *iface,
                                      uct_srqud_ep_t *ep, uint8_t ctl,
                                      const void *hdr, size_t hdr_len,
                                      const void *data, size_t data_len)
{
    /* acknowledges what this (passive) ep received, on the way */
    return uct_srqud_ep_send_ctl_data(iface, ep, ctl, UCT_SRQUD_PACKET_FLAG_ACK,
                                      hdr, hdr_len, data, data_len);
}


/* Put a filled reliable packet into the window and send it */
static ucs_status_t
uct_srqud_ep_send_reliable(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                           uct_srqud_send_desc_t *desc)
{
    uct_srqud_neth_t *neth = uct_srqud_send_desc_neth(desc);
    ucs_status_t status;

    neth->magic      = UCT_SRQUD_MAGIC;
    neth->flags     |= UCT_SRQUD_PACKET_FLAG_REL;
    neth->dest_ep_id = ep->dest_ep_id;
    neth->src_ep_id  = ep->ep_id;
    neth->psn        = ep->tx.next;
    neth->ack_psn    = 0;
    /* ask for an ack when half the window is used, so the window never
     * waits for the receiver's progress loop */
    if (uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked) ==
        iface->config.tx_window / 2) {
        neth->flags |= UCT_SRQUD_PACKET_FLAG_ACK_REQ;
    }
    desc->flags = UCT_SRQUD_DESC_FLAG_IN_WINDOW;

    status = uct_srqud_iface_post_send(iface, ep->ah, ep->dest_qpn, desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    ++ep->tx.next;
    ucs_queue_push(&ep->tx.window, &desc->window);
    uct_srqud_ep_activate(iface, ep);
    return UCS_OK;
}


static UCS_F_ALWAYS_INLINE uct_srqud_send_desc_t*
uct_srqud_ep_ctl_desc(uct_srqud_iface_t *iface, uint8_t ctl)
{
    uct_srqud_send_desc_t *desc = ucs_mpool_get_inline(&iface->tx.mp);

    if (ucs_unlikely(desc == NULL)) {
        return NULL;
    }

    uct_srqud_send_desc_neth(desc)->flags = UCT_SRQUD_PACKET_FLAG_CTL |
                                            UCT_SRQUD_PACKET_FLAG_ACK_REQ;
    uct_srqud_send_desc_neth(desc)->ctl   = ctl;
    uct_srqud_send_desc_neth(desc)->am_id = 0;
    desc->length                          = sizeof(uct_srqud_neth_t);
    desc->num_zsge                        = 0;
    desc->comp                            = NULL;
    return desc;
}


/*
 * Can the ep send one reliable packet (two if the CREQ is still due)?
 * Sends the CREQ first when needed.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srqud_ep_tx_check(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    uct_srqud_send_desc_t *desc;
    ucs_status_t status;

    if (ucs_unlikely(ep->flags & UCT_SRQUD_EP_FLAG_FAILED)) {
        return ep->fail_status;
    }

    if (!uct_srqud_iface_has_tx_resources(iface) ||
        (uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked) >=
         iface->config.tx_window)) {
        UCS_STATS_UPDATE_COUNTER(ep->super.stats, UCT_EP_STAT_NO_RES, 1);
        return UCS_ERR_NO_RESOURCE;
    }

    if (ucs_likely(ep->flags & UCT_SRQUD_EP_FLAG_CREQ_SENT)) {
        return UCS_OK;
    }

    desc = uct_srqud_ep_ctl_desc(iface, UCT_SRQUD_CTL_CREQ);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    memcpy(uct_srqud_send_desc_neth(desc) + 1, &ep->conn_sn,
           sizeof(ep->conn_sn));
    desc->length += sizeof(ep->conn_sn);

    status = uct_srqud_ep_send_reliable(iface, ep, desc);
    if (status != UCS_OK) {
        ucs_mpool_put_inline(desc);
        return status;
    }

    ep->flags |= UCT_SRQUD_EP_FLAG_CREQ_SENT;
    return uct_srqud_iface_has_tx_resources(iface) ? UCS_OK :
                                                     UCS_ERR_NO_RESOURCE;
}


/* The same for a user's new operation, which must also wait behind the
 * ep's pending requests and an unfinished fence (see srqud_ep.h) */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srqud_ep_user_tx_check(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    if (ucs_unlikely(uct_srqud_ep_user_must_wait(ep))) {
        UCS_STATS_UPDATE_COUNTER(ep->super.stats, UCT_EP_STAT_NO_RES, 1);
        return UCS_ERR_NO_RESOURCE;
    }
    return uct_srqud_ep_tx_check(iface, ep);
}


ucs_status_t uct_srqud_ep_send_request(uct_srqud_iface_t *iface,
                                       uct_srqud_ep_t *ep, uint8_t ctl,
                                       const void *hdr, size_t hdr_len,
                                       const void *data, size_t data_len)
{
    uct_srqud_send_desc_t *desc;
    ucs_status_t status;

    ucs_assert(sizeof(uct_srqud_neth_t) + hdr_len + data_len <=
               iface->config.seg_size);

    status = uct_srqud_ep_tx_check(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    desc = uct_srqud_ep_ctl_desc(iface, ctl);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    memcpy(uct_srqud_send_desc_neth(desc) + 1, hdr, hdr_len);
    memcpy(UCS_PTR_BYTE_OFFSET(uct_srqud_send_desc_neth(desc) + 1, hdr_len),
           data, data_len);
    desc->length += hdr_len + data_len;

    status = uct_srqud_ep_send_reliable(iface, ep, desc);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
    }
    return status;
}


static UCS_F_ALWAYS_INLINE uct_srqud_send_desc_t*
uct_srqud_ep_am_desc(uct_srqud_iface_t *iface, uint8_t id)
{
    uct_srqud_send_desc_t *desc = ucs_mpool_get_inline(&iface->tx.mp);

    if (ucs_unlikely(desc == NULL)) {
        UCT_TL_IFACE_STAT_TX_NO_DESC(&iface->super);
        return NULL;
    }

    uct_srqud_send_desc_neth(desc)->flags = UCT_SRQUD_PACKET_FLAG_AM;
    uct_srqud_send_desc_neth(desc)->am_id = id;
    uct_srqud_send_desc_neth(desc)->ctl   = UCT_SRQUD_CTL_NONE;
    desc->num_zsge                        = 0;
    desc->comp                            = NULL;
    return desc;
}


/* Every message is kept until acknowledged, so even "short" messages are
 * copied into a registered descriptor; the send itself is inline when the
 * packet fits. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srqud_ep_am_short_locked(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             uint8_t id, uint64_t hdr, const void *buffer,
                             unsigned length)
{
    uct_srqud_send_desc_t *desc;
    uint8_t *payload;
    ucs_status_t status;

    status = uct_srqud_ep_user_tx_check(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    desc = uct_srqud_ep_am_desc(iface, id);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    payload = (uint8_t*)(uct_srqud_send_desc_neth(desc) + 1);
    memcpy(payload, &hdr, sizeof(hdr));
    memcpy(payload + sizeof(hdr), buffer, length);
    desc->length = sizeof(uct_srqud_neth_t) + sizeof(hdr) + length;

    status = uct_srqud_ep_send_reliable(iface, ep, desc);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, sizeof(hdr) + length);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id, payload,
                       sizeof(hdr) + length, "TX: AM_SHORT");
    return UCS_OK;
}


ucs_status_t uct_srqud_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t hdr,
                                   const void *buffer, unsigned length)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(sizeof(uct_srqud_neth_t) + sizeof(hdr) + length, 0,
                     ucs_min(iface->config.max_inline, iface->config.seg_size),
                     "am_short");

    uct_srqud_enter(iface);
    status = uct_srqud_ep_am_short_locked(iface, ep, id, hdr, buffer, length);
    uct_srqud_leave(iface);
    return status;
}


static ucs_status_t
uct_srqud_ep_am_short_iov_locked(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 uint8_t id, const uct_iov_t *iov,
                                 size_t iovcnt, size_t length)
{
    uct_srqud_send_desc_t *desc;
    ucs_iov_iter_t iov_iter;
    ucs_status_t status;

    status = uct_srqud_ep_user_tx_check(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    desc = uct_srqud_ep_am_desc(iface, id);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    ucs_iov_iter_init(&iov_iter);
    uct_iov_to_buffer(iov, iovcnt, &iov_iter,
                      uct_srqud_send_desc_neth(desc) + 1, length);
    desc->length = sizeof(uct_srqud_neth_t) + length;
    status       = uct_srqud_ep_send_reliable(iface, ep, desc);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, length);
    return UCS_OK;
}


ucs_status_t uct_srqud_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                       const uct_iov_t *iov, size_t iovcnt)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ucs_status_t status;
    size_t length;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (unsigned long)UCT_SRQUD_MAX_IOV, "am_short_iov");
    length = uct_iov_total_length(iov, iovcnt);
    UCT_CHECK_LENGTH(sizeof(uct_srqud_neth_t) + length, 0,
                     ucs_min(iface->config.max_inline, iface->config.seg_size),
                     "am_short_iov");

    uct_srqud_enter(iface);
    status = uct_srqud_ep_am_short_iov_locked(iface, ep, id, iov, iovcnt,
                                              length);
    uct_srqud_leave(iface);
    return status;
}


static ssize_t
uct_srqud_ep_am_bcopy_locked(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             uint8_t id, uct_pack_callback_t pack_cb,
                             void *arg)
{
    uct_srqud_send_desc_t *desc;
    ucs_status_t status;
    size_t length;

    status = uct_srqud_ep_user_tx_check(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    desc = uct_srqud_ep_am_desc(iface, id);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    length = pack_cb(uct_srqud_send_desc_neth(desc) + 1, arg);
    ucs_assertv(length <= iface->config.seg_size - sizeof(uct_srqud_neth_t),
                "am_bcopy: packed %zu bytes, max %zu", length,
                iface->config.seg_size - sizeof(uct_srqud_neth_t));
    desc->length = sizeof(uct_srqud_neth_t) + length;

    status = uct_srqud_ep_send_reliable(iface, ep, desc);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, length);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id,
                       uct_srqud_send_desc_neth(desc) + 1, length,
                       "TX: AM_BCOPY");
    return length;
}


ssize_t uct_srqud_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                              uct_pack_callback_t pack_cb, void *arg,
                              unsigned flags)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ssize_t ret;

    UCT_CHECK_AM_ID(id);

    uct_srqud_enter(iface);
    ret = uct_srqud_ep_am_bcopy_locked(iface, ep, id, pack_cb, arg);
    uct_srqud_leave(iface);
    return ret;
}


/*
 * am_zcopy: the header goes into the descriptor, the payload is gathered
 * from the user's registered memory by the HCA, on the first send and on
 * every retransmission; so the user's buffer is released (completion) only
 * when the peer has acknowledged the packet.
 */
static ucs_status_t
uct_srqud_ep_am_zcopy_locked(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             uint8_t id, const void *header,
                             unsigned header_length, const uct_iov_t *iov,
                             size_t iovcnt, size_t length,
                             uct_completion_t *comp)
{
    uct_srqud_send_desc_t *desc;
    ucs_status_t status;
    size_t i;

    status = uct_srqud_ep_user_tx_check(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    desc = uct_srqud_ep_am_desc(iface, id);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    memcpy(uct_srqud_send_desc_neth(desc) + 1, header, header_length);
    desc->length = sizeof(uct_srqud_neth_t) + header_length;
    for (i = 0; i < iovcnt; ++i) {
        if (iov[i].length * iov[i].count == 0) {
            continue;
        }
        desc->zsge[desc->num_zsge].addr   = (uintptr_t)iov[i].buffer;
        desc->zsge[desc->num_zsge].length = iov[i].length * iov[i].count;
        desc->zsge[desc->num_zsge].lkey   = uct_srqud_memh_lkey(iov[i].memh);
        ++desc->num_zsge;
    }

    status = uct_srqud_ep_send_reliable(iface, ep, desc);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
        return status;
    }

    /* set after the send succeeded: a failed send never calls it */
    desc->comp = comp;
    ++iface->stats.am_zcopy;
    UCT_TL_EP_STAT_OP(&ep->super, AM, ZCOPY, header_length + length);
    return UCS_INPROGRESS;
}


ucs_status_t uct_srqud_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                   const void *header, unsigned header_length,
                                   const uct_iov_t *iov, size_t iovcnt,
                                   unsigned flags, uct_completion_t *comp)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ucs_status_t status;
    size_t i, length;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (unsigned long)iface->config.zcopy_max_iov,
                       "am_zcopy");
    UCT_CHECK_LENGTH(header_length, 0, UCT_SRQUD_AM_ZCOPY_MAX_HDR,
                     "am_zcopy header");
    length = uct_iov_total_length(iov, iovcnt);
    UCT_CHECK_LENGTH(sizeof(uct_srqud_neth_t) + header_length + length, 0,
                     iface->config.seg_size, "am_zcopy");
    for (i = 0; i < iovcnt; ++i) {
        if ((iov[i].length * iov[i].count != 0) &&
            ((iov[i].memh == UCT_MEM_HANDLE_NULL) ||
             ((iov[i].count > 1) && (iov[i].stride != iov[i].length)))) {
            ucs_error("%s: am_zcopy needs registered, contiguous iov entries",
                      iface->md->name);
            return UCS_ERR_INVALID_PARAM;
        }
    }

    uct_srqud_enter(iface);
    status = uct_srqud_ep_am_zcopy_locked(iface, ep, id, header, header_length,
                                          iov, iovcnt, length, comp);
    uct_srqud_leave(iface);
    return status;
}


ucs_status_t uct_srqud_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                      unsigned flags)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ucs_status_t status      = UCS_OK;

    uct_srqud_enter(iface);

    /* Resources are there now and nothing is queued ahead: the caller may
     * send right away */
    if (!(ep->flags & UCT_SRQUD_EP_FLAG_FAILED) &&
        uct_srqud_iface_has_tx_resources(iface) &&
        (uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked) <
         iface->config.tx_window) &&
        ucs_arbiter_group_is_empty(&ep->arb_group) &&
        !uct_srqud_ep_user_must_wait(ep)) {
        status = UCS_ERR_BUSY;
        goto out;
    }

    ucs_arbiter_elem_init((ucs_arbiter_elem_t*)req->priv);
    ucs_arbiter_group_push_elem(&ep->arb_group,
                                (ucs_arbiter_elem_t*)req->priv);
    ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
    UCT_TL_EP_STAT_PEND(&ep->super);
out:
    uct_srqud_leave(iface);
    return status;
}


ucs_arbiter_cb_result_t
uct_srqud_ep_dispatch_pending(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                              ucs_arbiter_elem_t *elem, void *arg)
{
    uct_srqud_iface_t *iface = ucs_container_of(arbiter, uct_srqud_iface_t,
                                                tx.arbiter);
    uct_srqud_ep_t *ep       = ucs_container_of(group, uct_srqud_ep_t,
                                                arb_group);
    uct_pending_req_t *req   = ucs_container_of(elem, uct_pending_req_t, priv);
    ucs_status_t status;

    if (!uct_srqud_iface_has_tx_resources(iface)) {
        return UCS_ARBITER_CB_RESULT_STOP;
    }

    /* A full window blocks this endpoint only */
    if (!(ep->flags & UCT_SRQUD_EP_FLAG_FAILED) &&
        (uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked) >=
         iface->config.tx_window)) {
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }

    ep->flags |= UCT_SRQUD_EP_FLAG_IN_PENDING;
    status     = req->func(req);
    ep->flags &= ~UCT_SRQUD_EP_FLAG_IN_PENDING;
    if (status == UCS_OK) {
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    } else if (status == UCS_INPROGRESS) {
        return UCS_ARBITER_CB_RESULT_NEXT_GROUP;
    }

    return uct_srqud_iface_has_tx_resources(iface) ?
           UCS_ARBITER_CB_RESULT_DESCHED_GROUP : UCS_ARBITER_CB_RESULT_STOP;
}


typedef struct {
    uct_pending_purge_callback_t cb;
    void                         *arg;
} uct_srqud_purge_args_t;


static ucs_arbiter_cb_result_t
uct_srqud_ep_purge_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                      ucs_arbiter_elem_t *elem, void *arg)
{
    uct_srqud_purge_args_t *args = arg;
    uct_pending_req_t *req       = ucs_container_of(elem, uct_pending_req_t,
                                                    priv);

    if (args->cb != NULL) {
        args->cb(req, args->arg);
    }
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}


void uct_srqud_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                                void *arg)
{
    uct_srqud_ep_t *ep          = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface    = uct_srqud_ep_iface(ep);
    uct_srqud_purge_args_t args = {cb, arg};

    uct_srqud_enter(iface);
    ucs_arbiter_group_purge(&iface->tx.arbiter, &ep->arb_group,
                            uct_srqud_ep_purge_cb, &args);
    uct_srqud_leave(iface);
}


/* Queue @a comp to complete when everything sent so far is acknowledged
 * and the ep's RMA operations are done */
static ucs_status_t uct_srqud_ep_add_flush(uct_srqud_iface_t *iface,
                                           uct_srqud_ep_t *ep,
                                           uct_completion_t *comp,
                                           int wait_ops)
{
    uct_srqud_ep_flush_t *flush;

    flush = ucs_malloc(sizeof(*flush), "srqud_ep_flush");
    if (flush == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    flush->psn      = (uct_srqud_psn_t)(ep->tx.next - 1);
    flush->comp     = comp;
    flush->wait_ops = wait_ops && (ep->ops > 0);
    ep->flushes_wait_ops += flush->wait_ops;
    ucs_queue_push(&ep->tx.flushes, &flush->queue);
    if (!ucs_queue_is_empty(&ep->tx.window)) {
        uct_srqud_ep_request_ack(iface, ep);
    }
    return UCS_OK;
}


ucs_status_t uct_srqud_ep_add_rma_flush(uct_srqud_iface_t *iface,
                                        uct_srqud_ep_t *ep,
                                        uct_completion_t *comp)
{
    if (comp == NULL) {
        /* the caller asked for no completion (UCT allows a NULL comp for
         * zcopy operations); a refusal is still reported by the next flush */
        return UCS_OK;
    }
    if (ucs_queue_is_empty(&ep->tx.window) && (ep->ops == 0)) {
        uct_invoke_completion(comp, ep->rma_status);
        ep->rma_status = UCS_OK;
        return UCS_OK;
    }
    return uct_srqud_ep_add_flush(iface, ep, comp, 0);
}


static ucs_status_t
uct_srqud_ep_flush_locked(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                          unsigned flags, uct_completion_t *comp)
{
    ucs_status_t status;

    if (ep->flags & UCT_SRQUD_EP_FLAG_FAILED) {
        return ep->fail_status;
    }

    /* Cancel: give up what is not acknowledged; the ep is unusable after */
    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        ep->flags      |= UCT_SRQUD_EP_FLAG_FAILED;
        ep->fail_status = UCS_ERR_CANCELED;
        uct_srqud_ep_drop_window(ep, UCS_ERR_CANCELED);
        UCT_TL_EP_STAT_FLUSH(&ep->super);
        return UCS_OK;
    }

    /* As UCX's ud: no flush while the ep could not send or has requests
     * queued (unless this flush is the one being dispatched), so that it
     * does not overtake operations that wait for resources */
    if (!uct_srqud_iface_has_tx_resources(iface) ||
        (uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked) >=
         iface->config.tx_window) || uct_srqud_ep_queued_ahead(ep)) {
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
        status = uct_srqud_ep_add_flush(iface, ep, comp, 1);
        if (status != UCS_OK) {
            return status;
        }
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

    uct_srqud_enter(iface);
    status = uct_srqud_ep_flush_locked(iface, ep, flags, comp);
    uct_srqud_leave(iface);
    return status;
}


ucs_status_t uct_srqud_iface_flush_eps(uct_srqud_iface_t *iface,
                                       uct_completion_t *comp)
{
    uct_srqud_ep_t *ep;
    unsigned count = 0, i;
    ucs_status_t status;

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
        ucs_list_is_empty(&iface->rma.ops) && uct_srqud_zcopy_idle(iface)) {
        return UCS_OK;
    }

    if (comp != NULL) {
        ucs_ptr_array_for_each(ep, i, &iface->eps) {
            if (ucs_queue_is_empty(&ep->tx.window) && (ep->ops == 0)) {
                continue;
            }
            status = uct_srqud_ep_add_flush(iface, ep, comp, 1);
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
    }
    return UCS_INPROGRESS;
}


/*
 * Keepalive: a reliable packet without payload. It is retransmitted like
 * data, so a peer that does not acknowledge it within UCX_SRQUD_TIMEOUT
 * fails the endpoint through the error handler. An ep with packets in
 * flight is watched already.
 */
ucs_status_t uct_srqud_ep_check(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    uct_srqud_send_desc_t *desc;
    ucs_status_t status;

    UCT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);

    uct_srqud_enter(iface);
    if ((ep->flags & UCT_SRQUD_EP_FLAG_FAILED) ||
        !ucs_queue_is_empty(&ep->tx.window)) {
        status = UCS_OK;
        goto out;
    }

    status = uct_srqud_ep_tx_check(iface, ep);
    if (status != UCS_OK) {
        /* no send resources: the packets using them are watched */
        status = (status == UCS_ERR_NO_RESOURCE) ? UCS_OK : status;
        goto out;
    }

    if (!ucs_queue_is_empty(&ep->tx.window)) {
        ++iface->stats.keepalives; /* the CREQ just sent is the probe */
        status = UCS_OK;
        goto out;
    }

    desc = uct_srqud_ep_ctl_desc(iface, UCT_SRQUD_CTL_NOP);
    if (desc == NULL) {
        status = UCS_OK;
        goto out;
    }

    status = uct_srqud_ep_send_reliable(iface, ep, desc);
    if (status != UCS_OK) {
        ucs_mpool_put_inline(desc);
    } else {
        ++iface->stats.keepalives;
    }
out:
    uct_srqud_leave(iface);
    return status;
}


/* ------------------------------------------------------------------------
 * Receive side
 */

/* Acknowledgements are delayed (UCX_SRQUD_ACK_DELAY) so that a
 * request-reply exchange, where the reply already proves delivery to the
 * application, does not carry an extra packet each way; they go at once
 * for a duplicate, a request (ACK_REQ: half window, flush), a CREQ, or
 * every ACK_THRESH packets. */
static void uct_srqud_ep_schedule_ack(uct_srqud_iface_t *iface,
                                      uct_srqud_ep_t *ep, int now)
{
    if (!(ep->flags & UCT_SRQUD_EP_FLAG_ACK_QUEUED)) {
        ep->flags     |= UCT_SRQUD_EP_FLAG_ACK_QUEUED;
        ep->rx.ack_time = ucs_get_time();
        ucs_list_add_tail(&iface->rx.ack_list, &ep->rx.ack_list);
    }
    if (now || (ep->flags & UCT_SRQUD_EP_FLAG_CREP_DUE)) {
        ep->flags |= UCT_SRQUD_EP_FLAG_ACK_NOW;
    }
}


void uct_srqud_iface_send_acks(uct_srqud_iface_t *iface, ucs_time_t now)
{
    uct_srqud_ep_t *ep, *tmp;
    uint8_t ctl;

    ucs_list_for_each_safe(ep, tmp, &iface->rx.ack_list, rx.ack_list) {
        if (!(ep->flags & UCT_SRQUD_EP_FLAG_ACK_NOW) &&
            (now != UCS_TIME_INFINITY) &&
            (uct_srqud_time_since(now, ep->rx.ack_time) <
             iface->config.ack_delay)) {
            continue;
        }
        ctl = (ep->flags & UCT_SRQUD_EP_FLAG_CREP_DUE) ? UCT_SRQUD_CTL_CREP :
                                                         UCT_SRQUD_CTL_ACK;
        if (uct_srqud_ep_send_ctl(iface, ep, ctl, UCT_SRQUD_PACKET_FLAG_ACK) !=
            UCS_OK) {
            return; /* no send resources: try on the next progress */
        }
        ++iface->stats.acks_sent;
        ep->flags     &= ~(UCT_SRQUD_EP_FLAG_ACK_QUEUED |
                           UCT_SRQUD_EP_FLAG_ACK_NOW |
                           UCT_SRQUD_EP_FLAG_CREP_DUE);
        ep->rx.unacked = 0;
        ucs_list_del(&ep->rx.ack_list);
    }
}


void uct_srqud_ep_request_ack(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    /* best effort: the retransmission timer covers a lost request */
    uct_srqud_ep_send_ctl(iface, ep, UCT_SRQUD_CTL_ACK,
                          UCT_SRQUD_PACKET_FLAG_ACK_REQ);
}


/* The source GID of a received packet, from the GRH the HCA wrote */
static ucs_status_t uct_srqud_rx_src_gid(uct_srqud_iface_t *iface,
                                         const struct ibv_wc *wc,
                                         const void *grh, uint8_t *gid)
{
    struct ibv_ah_attr ah_attr;

    if (!(wc->wc_flags & IBV_WC_GRH)) {
        if (iface->is_roce) {
            return UCS_ERR_INVALID_ADDR;
        }
        memcpy(gid, iface->gid.raw, 8); /* same subnet, by LID */
        memset(gid + 8, 0, 8);
        return UCS_OK;
    }

    /* rdma-core decodes both IPv6 and IPv4 (RoCE v2) headers */
    if (ibv_init_ah_from_wc(iface->md->ctx, iface->port_num,
                            (struct ibv_wc*)wc, (struct ibv_grh*)grh,
                            &ah_attr) != 0) {
        return UCS_ERR_INVALID_ADDR;
    }
    memcpy(gid, ah_attr.grh.dgid.raw, 16);
    return UCS_OK;
}


static uct_srqud_ep_t*
uct_srqud_ep_create_passive(uct_srqud_iface_t *iface,
                            const uct_srqud_peer_key_t *key, uint16_t slid)
{
    uct_srqud_device_addr_t dev_addr;
    uct_srqud_iface_addr_t iface_addr;
    uct_ep_params_t params;
    uct_srqud_ep_t *ep;
    uct_ep_h tl_ep;
    khiter_t it;
    int ret;

    dev_addr.flags = iface->is_roce ? UCT_SRQUD_ADDR_FLAG_ETH : 0;
    dev_addr.lid   = slid;
    memcpy(dev_addr.gid, key->gid, sizeof(dev_addr.gid));
    uct_srqud_pack_qpn(iface_addr.qp_num, key->qpn);

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = &iface->super.super;
    params.dev_addr   = (const uct_device_addr_t*)&dev_addr;
    params.iface_addr = (const uct_iface_addr_t*)&iface_addr;
    if (UCS_CLASS_NEW_FUNC_NAME(uct_srqud_ep_t)(&params, &tl_ep) != UCS_OK) {
        return NULL;
    }

    ep              = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    ep->flags      |= UCT_SRQUD_EP_FLAG_PASSIVE | UCT_SRQUD_EP_FLAG_CREP_DUE;
    ep->dest_ep_id  = key->ep_id;
    ep->peer_key    = *key;

    it = kh_put(uct_srqud_peer, &iface->peers, *key, &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        uct_srqud_ep_free(ep);
        return NULL;
    }
    kh_value(&iface->peers, it) = ep;

    ucs_debug("%s: passive ep %p id %u for qpn 0x%x ep %u", iface->md->name,
              ep, ep->ep_id, key->qpn, key->ep_id);
    return ep;
}


/* Find the endpoint a packet is for; NULL drops it */
static uct_srqud_ep_t*
uct_srqud_rx_find_ep(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc,
                     const struct ibv_wc *wc, const uct_srqud_neth_t *neth)
{
    uct_srqud_peer_key_t key;
    uct_srqud_ep_t *ep;
    khiter_t it;
    void *ptr;

    if (neth->dest_ep_id != UCT_SRQUD_EP_ID_NONE) {
        if (!ucs_ptr_array_lookup(&iface->eps, neth->dest_ep_id, ptr)) {
            return NULL;
        }
        ep = ptr;
        /* Only the peer of this ep may address it */
        if ((ep->dest_qpn != wc->src_qp) ||
            ((ep->dest_ep_id != UCT_SRQUD_EP_ID_NONE) &&
             (ep->dest_ep_id != neth->src_ep_id))) {
            return NULL;
        }
        return ep;
    }

    /* Not yet connected: the sender is known by its address and ep id */
    memset(&key, 0, sizeof(key));
    if (uct_srqud_rx_src_gid(iface, wc, uct_srqud_iface_rx_hdr(iface, desc),
                             key.gid) != UCS_OK) {
        return NULL;
    }
    key.qpn   = wc->src_qp;
    key.ep_id = neth->src_ep_id;

    it = kh_get(uct_srqud_peer, &iface->peers, key);
    if (it != kh_end(&iface->peers)) {
        return kh_value(&iface->peers, it);
    }

    /* Only a connection request opens a new passive endpoint; data that
     * overtook a lost CREQ is dropped and resent after it */
    if (!(neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) ||
        (neth->ctl != UCT_SRQUD_CTL_CREQ) || (neth->psn != 0)) {
        return NULL;
    }

    return uct_srqud_ep_create_passive(iface, &key, wc->slid);
}


/*
 * A packet for an ep of ours that sends (acknowledgements, NACKs, the
 * CREP). Its effects call the user back (send completions, flushes,
 * pending requests, errors), so the async timer queues it for the user's
 * progress instead (see uct_srqud_ep_rx_packet).
 */
void uct_srqud_ep_rx_active(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                            const uct_srqud_neth_t *neth, const void *payload,
                            size_t payload_len)
{
    /* a refused put's answer carries the ack of that put: the error must
     * be known before the ack completes the flush waiting for it */
    if ((neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
        (neth->ctl == UCT_SRQUD_CTL_RMA_REPLY) &&
        !(ep->flags & UCT_SRQUD_EP_FLAG_FAILED)) {
        uct_srqud_rma_rx_answer(iface, ep, neth->ctl, payload, payload_len);
    }

    if ((neth->flags & UCT_SRQUD_PACKET_FLAG_ACK) &&
        !uct_srqud_ep_process_ack(iface, ep, neth->ack_psn)) {
        return; /* lingering ep done and freed */
    }

    if (!(neth->flags & UCT_SRQUD_PACKET_FLAG_CTL)) {
        return;
    }

    switch (neth->ctl) {
    case UCT_SRQUD_CTL_CREP:
        if (ep->dest_ep_id == UCT_SRQUD_EP_ID_NONE) {
            ep->dest_ep_id = neth->src_ep_id;
            ep->flags     |= UCT_SRQUD_EP_FLAG_CONNECTED;
        }
        break;
    case UCT_SRQUD_CTL_NACK:
        /* Every packet behind a loss draws a NACK until the resent one
         * arrives: answer once per round trip, not once per NACK */
        if (uct_srqud_time_since(ucs_get_time(), ep->tx.resend_time) >=
            iface->config.rto_min / 4) {
            uct_srqud_ep_resend_window(iface, ep);
            ep->tx.resend_time = ucs_get_time();
        }
        break;
    case UCT_SRQUD_CTL_ZCTS:
    case UCT_SRQUD_CTL_ZFIN:
    case UCT_SRQUD_CTL_ZACK:
        /* answers to this side's RMA and zero-copy requests */
        if (!(ep->flags & UCT_SRQUD_EP_FLAG_FAILED)) {
            uct_srqud_rma_rx_answer(iface, ep, neth->ctl, payload,
                                    payload_len);
        }
        break;
    default:
        break;
    }
}


/* A CREQ: the first one of an incarnation of the peer's ep, a retransmitted
 * one, or the first one of a new incarnation that reuses the ep id of one
 * that is gone (then the sequence starts over) */
static void uct_srqud_ep_rx_creq(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 uct_srqud_recv_desc_t *desc,
                                 size_t payload_len)
{
    uint32_t conn_sn;

    if (payload_len < sizeof(conn_sn)) {
        return;
    }
    memcpy(&conn_sn, UCS_PTR_BYTE_OFFSET(desc, iface->config.rx_payload_offset),
           sizeof(conn_sn));

    if (!(ep->flags & UCT_SRQUD_EP_FLAG_CONN_SN)) {
        ep->flags  |= UCT_SRQUD_EP_FLAG_CONN_SN;
        ep->conn_sn = conn_sn;
    } else if (ep->conn_sn != conn_sn) {
        ucs_debug("%s: passive ep %p: new incarnation %u of qpn 0x%x ep %u",
                  iface->md->name, ep, conn_sn, ep->dest_qpn, ep->dest_ep_id);
        ep->conn_sn     = conn_sn;
        ep->rx.expected = 0;
        ep->rx.unacked  = 0;
        ep->flags      |= UCT_SRQUD_EP_FLAG_CREP_DUE;
    }
}


/* A packet for a passive ep (the receiving side of a peer's active ep):
 * in-order acceptance and acknowledgement, safe on the async timer */
static void uct_srqud_ep_rx_passive(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                    uct_srqud_recv_desc_t *desc,
                                    const uct_srqud_neth_t *neth,
                                    size_t payload_len)
{
    if ((neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
        (neth->ctl == UCT_SRQUD_CTL_ACK) &&
        (neth->flags & UCT_SRQUD_PACKET_FLAG_ACK_REQ)) {
        uct_srqud_ep_schedule_ack(iface, ep, 1);
    }

    if (!(neth->flags & UCT_SRQUD_PACKET_FLAG_REL)) {
        goto out_put;
    }

    if ((neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
        (neth->ctl == UCT_SRQUD_CTL_CREQ)) {
        uct_srqud_ep_rx_creq(iface, ep, desc, payload_len);
    }

    switch (uct_srqud_rx_classify(ep->rx.expected, neth->psn)) {
    case UCT_SRQUD_RX_DUPLICATE:
        /* our ack was lost: say it again */
        ++iface->stats.rx_duplicates;
        uct_srqud_ep_schedule_ack(iface, ep, 1);
        goto out_put;
    case UCT_SRQUD_RX_GAP:
        ++iface->stats.rx_out_of_order;
        if (uct_srqud_time_since(ucs_get_time(), ep->rx.nack_time) >=
            iface->config.rto_min / 2) {
            ep->rx.nack_time = ucs_get_time();
            if (uct_srqud_ep_send_ctl(iface, ep, UCT_SRQUD_CTL_NACK,
                                      UCT_SRQUD_PACKET_FLAG_ACK) == UCS_OK) {
                ++iface->stats.nacks_sent;
            }
        }
        goto out_put;
    case UCT_SRQUD_RX_DELIVER:
        break;
    }

    ++ep->rx.expected;
    uct_srqud_ep_schedule_ack(iface, ep,
                              (++ep->rx.unacked >= iface->config.ack_thresh) ||
                              (neth->flags & UCT_SRQUD_PACKET_FLAG_ACK_REQ));

    if (!(neth->flags & UCT_SRQUD_PACKET_FLAG_AM)) {
        if (neth->ctl >= UCT_SRQUD_CTL_RMA_PUT) {
            /* a peer's RMA or zero-copy request, in order with its AMs;
             * handled now, even on the async thread: it writes or reads
             * registered memory and answers, it calls no user callback */
            uct_srqud_rma_rx_request(iface, ep, neth->ctl,
                                     UCS_PTR_BYTE_OFFSET(desc,
                                         iface->config.rx_payload_offset),
                                     payload_len);
        }
        goto out_put;
    }

    if (iface->async.active) {
        /* accepted and acknowledged; the handler runs in the user's
         * progress, in order with what arrives later */
        desc->ep          = NULL;
        desc->payload_len = payload_len;
        ucs_queue_push(&iface->async.rx_q, &desc->queue);
        ++iface->stats.async_queued;
        iface->async.wake_user = 1;
        return;
    }

    uct_srqud_iface_deliver_am(iface, desc, payload_len);
    return;

out_put:
    uct_srqud_iface_put_recv_desc(iface, desc);
}


void uct_srqud_ep_rx_packet(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc,
                            const struct ibv_wc *wc, uct_srqud_neth_t *neth,
                            size_t payload_len)
{
    uct_srqud_ep_t *ep;

    ep = uct_srqud_rx_find_ep(iface, desc, wc, neth);
    if (ep == NULL) {
        ++iface->stats.rx_dropped_malformed;
        uct_srqud_iface_put_recv_desc(iface, desc);
        return;
    }

    if (ep->flags & UCT_SRQUD_EP_FLAG_PASSIVE) {
        uct_srqud_ep_rx_passive(iface, ep, desc, neth, payload_len);
        return;
    }

    if (iface->async.active) {
        desc->ep          = ep;
        desc->payload_len = payload_len;
        ucs_queue_push(&iface->async.rx_q, &desc->queue);
        ++iface->stats.async_queued;
        iface->async.wake_user = 1;
        return;
    }

    uct_srqud_ep_rx_active(iface, ep, neth,
                           UCS_PTR_BYTE_OFFSET(desc,
                                               iface->config.rx_payload_offset),
                           payload_len);
    uct_srqud_iface_put_recv_desc(iface, desc);
}


/* Drop queued packets of an ep that goes away */
static void uct_srqud_ep_purge_async_rx(uct_srqud_iface_t *iface,
                                        uct_srqud_ep_t *ep)
{
    uct_srqud_recv_desc_t *desc;
    ucs_queue_iter_t iter;

    ucs_queue_for_each_safe(desc, iter, &iface->async.rx_q, queue) {
        if (desc->ep == ep) {
            ucs_queue_del_iter(&iface->async.rx_q, iter);
            uct_srqud_iface_put_recv_desc(iface, desc);
        }
    }
}


static UCS_CLASS_INIT_FUNC(uct_srqud_ep_t, const uct_ep_params_t *params)
{
    uct_srqud_iface_t *iface = ucs_derived_of(params->iface, uct_srqud_iface_t);
    const uct_srqud_device_addr_t *dev_addr;
    const uct_srqud_iface_addr_t *iface_addr;
    ucs_status_t status;

    if (!ucs_test_all_flags(params->field_mask,
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR)) {
        ucs_error("srqud: endpoints connect to an interface address only");
        return UCS_ERR_UNSUPPORTED;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    dev_addr   = (const void*)params->dev_addr;
    iface_addr = (const void*)params->iface_addr;

    if (!uct_srqud_iface_is_reachable_addr(iface, dev_addr)) {
        ucs_error("%s: remote address is not reachable from this port",
                  iface->md->name);
        return UCS_ERR_UNREACHABLE;
    }

    status = uct_srqud_iface_get_ah(iface, dev_addr, &self->ah);
    if (status != UCS_OK) {
        return status;
    }

    self->dest_qpn     = uct_srqud_unpack_qpn(iface_addr->qp_num);
    self->dest_ep_id   = UCT_SRQUD_EP_ID_NONE;
    self->conn_sn      = iface->conn_sn++;
    self->flags        = 0;
    self->fail_status  = UCS_OK;
    self->rma_status   = UCS_OK;
    self->rma_refused_op = 0;
    self->ops          = 0;
    self->tx.next      = 0;
    self->tx.acked     = (uct_srqud_psn_t)-1;
    self->tx.rto       = iface->config.rto_min;
    self->tx.progress_time = 0;
    self->tx.resend_time   = 0;
    self->rx.expected  = 0;
    self->rx.unacked   = 0;
    self->rx.nack_time = 0;
    self->rx.ack_time  = 0;
    ucs_queue_head_init(&self->tx.window);
    ucs_queue_head_init(&self->tx.flushes);
    self->flushes_wait_ops = 0;
    ucs_arbiter_group_init(&self->arb_group);
    memset(&self->peer_key, 0, sizeof(self->peer_key));

    self->ep_id = ucs_ptr_array_insert(&iface->eps, self);
    if (self->ep_id >= UCT_SRQUD_EP_ID_NONE) {
        ucs_ptr_array_remove(&iface->eps, self->ep_id);
        ucs_error("%s: too many endpoints", iface->md->name);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    ucs_debug("%s: ep %p id %u to qpn 0x%x", iface->md->name, self,
              self->ep_id, self->dest_qpn);
    return UCS_OK;
}


static UCS_CLASS_CLEANUP_FUNC(uct_srqud_ep_t)
{
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(self);
    khiter_t it;

    ucs_arbiter_group_purge(&iface->tx.arbiter, &self->arb_group,
                            uct_srqud_ep_purge_cb,
                            &(uct_srqud_purge_args_t){NULL, NULL});
    ucs_arbiter_group_cleanup(&self->arb_group);

    uct_srqud_ep_drop_window(self, UCS_ERR_CANCELED);
    uct_srqud_rma_ep_cleanup(iface, self, UCS_ERR_CANCELED);
    uct_srqud_ep_purge_async_rx(iface, self);
    if (self->flags & UCT_SRQUD_EP_FLAG_ACK_QUEUED) {
        ucs_list_del(&self->rx.ack_list);
    }
    if (self->flags & UCT_SRQUD_EP_FLAG_PASSIVE) {
        it = kh_get(uct_srqud_peer, &iface->peers, self->peer_key);
        if (it != kh_end(&iface->peers)) {
            kh_del(uct_srqud_peer, &iface->peers, it);
        }
    }
    ucs_ptr_array_remove(&iface->eps, self->ep_id);
}


UCS_CLASS_DEFINE(uct_srqud_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_srqud_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_srqud_ep_t, uct_ep_t);


ucs_status_t uct_srqud_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    uct_srqud_iface_t *iface = ucs_derived_of(params->iface, uct_srqud_iface_t);
    ucs_status_t status;

    uct_srqud_enter(iface);
    status = UCS_CLASS_NEW_FUNC_NAME(uct_srqud_ep_t)(params, ep_p);
    uct_srqud_leave(iface);
    return status;
}


/*
 * Destroying an ep whose packets are not all acknowledged would lose them
 * if one needs a retransmission: UCP closes endpoints in force mode without
 * a flush, and a UCT user may destroy right after sending. So such an ep
 * lingers, invisible to the user, until its window is acknowledged or the
 * peer times out. An am_zcopy in the window refers to the user's memory,
 * which the user may free after the destroy: its payload is copied into
 * the descriptor first, and the user's completion runs now.
 */
void uct_srqud_ep_destroy(uct_ep_h tl_ep)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    uct_srqud_send_desc_t *desc;
    uct_completion_t *comp;
    void *dst;
    uint8_t i;

    uct_srqud_enter(iface);

    ucs_arbiter_group_purge(&iface->tx.arbiter, &ep->arb_group,
                            uct_srqud_ep_purge_cb,
                            &(uct_srqud_purge_args_t){NULL, NULL});
    /* RMA and zero-copy operations end now: their memory is the user's */
    uct_srqud_rma_ep_cleanup(iface, ep, UCS_ERR_CANCELED);
    uct_srqud_ep_complete_flushes(ep, UCS_ERR_CANCELED);

    if ((ep->flags & UCT_SRQUD_EP_FLAG_FAILED) ||
        ucs_queue_is_empty(&ep->tx.window)) {
        uct_srqud_ep_free(ep);
        goto out;
    }

    ucs_queue_for_each(desc, &ep->tx.window, window) {
        dst = UCS_PTR_BYTE_OFFSET(uct_srqud_send_desc_neth(desc),
                                  desc->length);
        for (i = 0; i < desc->num_zsge; ++i) {
            memcpy(dst, (void*)(uintptr_t)desc->zsge[i].addr,
                   desc->zsge[i].length);
            dst           = UCS_PTR_BYTE_OFFSET(dst, desc->zsge[i].length);
            desc->length += desc->zsge[i].length;
        }
        desc->num_zsge = 0;
        comp           = desc->comp;
        desc->comp     = NULL;
        if (comp != NULL) {
            uct_invoke_completion(comp, UCS_OK);
        }
    }

    ep->flags |= UCT_SRQUD_EP_FLAG_LINGER;
    ++iface->stats.ep_lingered;
    ucs_debug("%s: ep %p destroyed with %u packets unacknowledged: lingering",
              iface->md->name, ep,
              uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked));
out:
    uct_srqud_leave(iface);
}


void uct_srqud_ep_destroy_internal(uct_srqud_ep_t *ep)
{
    uct_srqud_ep_free(ep);
}
