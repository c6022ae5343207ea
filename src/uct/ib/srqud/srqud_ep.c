/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_ep.h"

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


/* Release a descriptor from the window; it is freed now, or on its send
 * completion if the HCA still owns it */
static void uct_srqud_ep_window_release(uct_srqud_send_desc_t *desc)
{
    desc->flags &= ~UCT_SRQUD_DESC_FLAG_IN_WINDOW;
    if (!(desc->flags & UCT_SRQUD_DESC_FLAG_IN_SQ)) {
        ucs_mpool_put_inline(desc);
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

    while (!ucs_queue_is_empty(&ep->tx.flushes)) {
        flush = ucs_queue_head_elem_non_empty(&ep->tx.flushes,
                                              uct_srqud_ep_flush_t, queue);
        if ((status == UCS_OK) &&
            uct_srqud_psn_lt(ep->tx.acked, flush->psn)) {
            break;
        }
        ucs_queue_pull_non_empty(&ep->tx.flushes);
        uct_invoke_completion(flush->comp, status);
        ucs_free(flush);
    }
}


/* A cumulative acknowledgement up to @a ack_psn */
static void uct_srqud_ep_process_ack(uct_srqud_iface_t *iface,
                                     uct_srqud_ep_t *ep, uct_srqud_psn_t ack_psn)
{
    uct_srqud_send_desc_t *desc;

    if (!uct_srqud_tx_ack_is_new(ep->tx.next, ep->tx.acked, ack_psn)) {
        return;
    }

    while (!ucs_queue_is_empty(&ep->tx.window)) {
        desc = ucs_queue_head_elem_non_empty(&ep->tx.window,
                                             uct_srqud_send_desc_t, window);
        if (!uct_srqud_psn_le(uct_srqud_send_desc_neth(desc)->psn, ack_psn)) {
            break;
        }
        ucs_queue_pull_non_empty(&ep->tx.window);
        uct_srqud_ep_window_release(desc);
    }

    ep->tx.acked         = ack_psn;
    ep->tx.progress_time = ucs_get_time();
    ep->tx.resend_time   = ep->tx.progress_time;
    ep->tx.rto           = iface->config.rto_min;
    if (ucs_queue_is_empty(&ep->tx.window)) {
        uct_srqud_ep_deactivate(ep);
    }
    uct_srqud_ep_complete_flushes(ep, UCS_OK);

    /* The window has room again: requests the dispatcher descheduled for a
     * full window may go */
    if (!ucs_arbiter_group_is_empty(&ep->arb_group)) {
        ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
        uct_srqud_iface_progress_pending(iface);
    }
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
    uct_srqud_send_desc_t *desc;

    if (ep->flags & UCT_SRQUD_EP_FLAG_FAILED) {
        return;
    }

    ucs_debug("%s: ep %p to qpn 0x%x failed: %s (%u unacknowledged)",
              iface->md->name, ep, ep->dest_qpn, ucs_status_string(status),
              uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked));

    ep->flags |= UCT_SRQUD_EP_FLAG_FAILED;
    ++iface->stats.ep_failures;
    ucs_queue_for_each_extract(desc, &ep->tx.window, window, 1) {
        uct_srqud_ep_window_release(desc);
    }
    uct_srqud_ep_deactivate(ep);
    uct_srqud_ep_complete_flushes(ep, status);

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
        /* No acknowledgement for this long: the peer is gone */
        if ((now - ep->tx.progress_time) >= iface->config.peer_timeout) {
            uct_srqud_ep_set_failed(iface, ep, UCS_ERR_ENDPOINT_TIMEOUT);
            continue;
        }

        if ((now - ep->tx.resend_time) < ep->tx.rto) {
            continue;
        }

        ++iface->stats.tx_timeouts;
        uct_srqud_ep_resend_window(iface, ep);
        ep->tx.resend_time = now;
        ep->tx.rto         = uct_srqud_rto_backoff(ep->tx.rto,
                                                   iface->config.rto_max);
    }
}


/* Fill the header and post a packet from an ep */
static ucs_status_t
uct_srqud_ep_send_ctl(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                      uint8_t ctl, int flags)
{
    uct_srqud_send_desc_t *desc;
    uct_srqud_neth_t *neth;
    ucs_status_t status;

    if (!uct_srqud_iface_has_tx_resources(iface)) {
        return UCS_ERR_NO_RESOURCE;
    }

    desc = ucs_mpool_get_inline(&iface->tx.mp);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    neth             = uct_srqud_send_desc_neth(desc);
    neth->magic      = UCT_SRQUD_MAGIC;
    neth->flags      = UCT_SRQUD_PACKET_FLAG_CTL | flags;
    neth->am_id      = 0;
    neth->ctl        = ctl;
    neth->dest_ep_id = ep->dest_ep_id;
    neth->src_ep_id  = ep->ep_id;
    neth->psn        = 0;
    neth->ack_psn    = (uct_srqud_psn_t)(ep->rx.expected - 1);
    desc->length     = sizeof(*neth);
    desc->flags      = 0;

    status = uct_srqud_iface_post_send(iface, ep->ah, ep->dest_qpn, desc);
    if (status != UCS_OK) {
        ucs_mpool_put_inline(desc);
    }
    return status;
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
        return UCS_ERR_ENDPOINT_TIMEOUT;
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

    desc = ucs_mpool_get_inline(&iface->tx.mp);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    uct_srqud_send_desc_neth(desc)->flags = UCT_SRQUD_PACKET_FLAG_CTL |
                                            UCT_SRQUD_PACKET_FLAG_ACK_REQ;
    uct_srqud_send_desc_neth(desc)->ctl   = UCT_SRQUD_CTL_CREQ;
    uct_srqud_send_desc_neth(desc)->am_id = 0;
    desc->length                          = sizeof(uct_srqud_neth_t);
    status = uct_srqud_ep_send_reliable(iface, ep, desc);
    if (status != UCS_OK) {
        ucs_mpool_put_inline(desc);
        return status;
    }

    ep->flags |= UCT_SRQUD_EP_FLAG_CREQ_SENT;
    return uct_srqud_iface_has_tx_resources(iface) ? UCS_OK :
                                                     UCS_ERR_NO_RESOURCE;
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
    return desc;
}


/* Every message is kept until acknowledged, so even "short" messages are
 * copied into a registered descriptor; the send itself is inline when the
 * packet fits. */
ucs_status_t uct_srqud_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t hdr,
                                   const void *buffer, unsigned length)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    uct_srqud_send_desc_t *desc;
    uint8_t *payload;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(sizeof(uct_srqud_neth_t) + sizeof(hdr) + length, 0,
                     ucs_min(iface->config.max_inline, iface->config.seg_size),
                     "am_short");

    status = uct_srqud_ep_tx_check(iface, ep);
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


ucs_status_t uct_srqud_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                       const uct_iov_t *iov, size_t iovcnt)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    uct_srqud_send_desc_t *desc;
    size_t length;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    length = uct_iov_total_length(iov, iovcnt);
    UCT_CHECK_LENGTH(sizeof(uct_srqud_neth_t) + length, 0,
                     ucs_min(iface->config.max_inline, iface->config.seg_size),
                     "am_short_iov");

    status = uct_srqud_ep_tx_check(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    desc = uct_srqud_ep_am_desc(iface, id);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    uct_iov_to_buffer(iov, iovcnt, NULL, uct_srqud_send_desc_neth(desc) + 1,
                      length);
    desc->length = sizeof(uct_srqud_neth_t) + length;
    status       = uct_srqud_ep_send_reliable(iface, ep, desc);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, length);
    return UCS_OK;
}


ssize_t uct_srqud_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                              uct_pack_callback_t pack_cb, void *arg,
                              unsigned flags)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    uct_srqud_send_desc_t *desc;
    ucs_status_t status;
    size_t length;

    UCT_CHECK_AM_ID(id);

    status = uct_srqud_ep_tx_check(iface, ep);
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


ucs_status_t uct_srqud_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                      unsigned flags)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);

    /* Resources are there now and nothing is queued ahead: the caller may
     * send right away */
    if (!(ep->flags & UCT_SRQUD_EP_FLAG_FAILED) &&
        uct_srqud_iface_has_tx_resources(iface) &&
        (uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked) <
         iface->config.tx_window) &&
        ucs_arbiter_group_is_empty(&ep->arb_group)) {
        return UCS_ERR_BUSY;
    }

    ucs_arbiter_elem_init((ucs_arbiter_elem_t*)req->priv);
    ucs_arbiter_group_push_elem(&ep->arb_group,
                                (ucs_arbiter_elem_t*)req->priv);
    ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
    UCT_TL_EP_STAT_PEND(&ep->super);
    return UCS_OK;
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

    status = req->func(req);
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
    uct_srqud_purge_args_t args = {cb, arg};

    ucs_arbiter_group_purge(&uct_srqud_ep_iface(ep)->tx.arbiter,
                            &ep->arb_group, uct_srqud_ep_purge_cb, &args);
}


ucs_status_t uct_srqud_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp)
{
    uct_srqud_ep_t *ep = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_ep_flush_t *flush;

    if (ep->flags & UCT_SRQUD_EP_FLAG_FAILED) {
        return UCS_ERR_ENDPOINT_TIMEOUT;
    }

    if (!ucs_arbiter_group_is_empty(&ep->arb_group)) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
        return UCS_ERR_NO_RESOURCE;
    }

    if (ucs_queue_is_empty(&ep->tx.window)) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
        return UCS_OK;
    }

    if (comp != NULL) {
        flush = ucs_malloc(sizeof(*flush), "srqud_ep_flush");
        if (flush == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        flush->psn  = (uct_srqud_psn_t)(ep->tx.next - 1);
        flush->comp = comp;
        ucs_queue_push(&ep->tx.flushes, &flush->queue);
        uct_srqud_ep_request_ack(uct_srqud_ep_iface(ep), ep);
    }

    UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    return UCS_INPROGRESS;
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
            ((now - ep->rx.ack_time) < iface->config.ack_delay)) {
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
        UCS_CLASS_DELETE_FUNC_NAME(uct_srqud_ep_t)(tl_ep);
        return NULL;
    }
    kh_value(&iface->peers, it) = ep;

    ucs_debug("%s: passive ep %p id %u for qpn 0x%x ep %u", iface->md->name,
              ep, ep->ep_id, key->qpn, key->ep_id);
    return ep;
}


void uct_srqud_ep_destroy_passive(uct_srqud_ep_t *ep)
{
    UCS_CLASS_DELETE_FUNC_NAME(uct_srqud_ep_t)(&ep->super.super);
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


void uct_srqud_ep_rx_packet(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc,
                            const struct ibv_wc *wc, uct_srqud_neth_t *neth,
                            size_t payload_len)
{
    uct_srqud_ep_t *ep;
    ucs_status_t status;
    void *payload;

    ep = uct_srqud_rx_find_ep(iface, desc, wc, neth);
    if (ep == NULL) {
        ++iface->stats.rx_dropped_malformed;
        goto out_put;
    }

    if (neth->flags & UCT_SRQUD_PACKET_FLAG_ACK) {
        uct_srqud_ep_process_ack(iface, ep, neth->ack_psn);
    }

    if (neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) {
        switch (neth->ctl) {
        case UCT_SRQUD_CTL_CREP:
            if (ep->dest_ep_id == UCT_SRQUD_EP_ID_NONE) {
                ep->dest_ep_id = neth->src_ep_id;
                ep->flags     |= UCT_SRQUD_EP_FLAG_CONNECTED;
            }
            break;
        case UCT_SRQUD_CTL_ACK:
            if (neth->flags & UCT_SRQUD_PACKET_FLAG_ACK_REQ) {
                uct_srqud_ep_schedule_ack(iface, ep, 1);
            }
            break;
        case UCT_SRQUD_CTL_NACK:
            /* Every packet behind a loss draws a NACK until the resent one
             * arrives: answer once per round trip, not once per NACK */
            if ((ucs_get_time() - ep->tx.resend_time) >=
                iface->config.rto_min / 4) {
                uct_srqud_ep_resend_window(iface, ep);
                ep->tx.resend_time = ucs_get_time();
            }
            break;
        default:
            break;
        }
    }

    if (!(neth->flags & UCT_SRQUD_PACKET_FLAG_REL)) {
        goto out_put;
    }

    switch (uct_srqud_rx_classify(ep->rx.expected, neth->psn)) {
    case UCT_SRQUD_RX_DUPLICATE:
        /* our ack was lost: say it again */
        ++iface->stats.rx_duplicates;
        uct_srqud_ep_schedule_ack(iface, ep, 1);
        goto out_put;
    case UCT_SRQUD_RX_GAP:
        ++iface->stats.rx_out_of_order;
        if ((ucs_get_time() - ep->rx.nack_time) >= iface->config.rto_min / 2) {
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
        goto out_put;
    }

    payload = UCS_PTR_BYTE_OFFSET(desc, iface->config.rx_payload_offset);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, neth->am_id,
                       payload, payload_len, "RX: AM");
    status = uct_iface_invoke_am(&iface->super, neth->am_id, payload,
                                 payload_len, UCT_CB_PARAM_FLAG_DESC);
    if (status == UCS_INPROGRESS) {
        /* The user keeps the buffer and releases it with
         * uct_iface_release_desc() */
        uct_recv_desc(UCS_PTR_BYTE_OFFSET(desc,
                                          iface->config.rx_headroom_offset)) =
                &iface->release_desc;
        return;
    }

out_put:
    ucs_spin_lock(&iface->rx.lock);
    ucs_mpool_put_inline(desc);
    ucs_spin_unlock(&iface->rx.lock);
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
    self->flags        = 0;
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
    uct_srqud_send_desc_t *desc;
    khiter_t it;

    /* UCP flushes and purges pending requests before it destroys an
     * endpoint; whatever is left is dropped here */
    uct_srqud_ep_pending_purge(&self->super.super, NULL, NULL);
    ucs_arbiter_group_cleanup(&self->arb_group);

    ucs_queue_for_each_extract(desc, &self->tx.window, window, 1) {
        uct_srqud_ep_window_release(desc);
    }
    uct_srqud_ep_complete_flushes(self, UCS_ERR_CANCELED);
    uct_srqud_ep_deactivate(self);
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
