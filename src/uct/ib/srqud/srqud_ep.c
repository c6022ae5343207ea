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


static UCS_F_ALWAYS_INLINE void
uct_srqud_ep_fill_neth(uct_srqud_ep_t *ep, uct_srqud_neth_t *neth, uint8_t am_id)
{
    neth->magic      = UCT_SRQUD_MAGIC;
    neth->flags      = UCT_SRQUD_PACKET_FLAG_AM;
    neth->am_id      = am_id;
    neth->reserved   = 0;
    neth->dest_ep_id = ep->dest_ep_id;
    neth->psn        = ep->psn++;
    neth->ack_psn    = 0;
}


/* Post one send on the interface QP. Every send is signaled: completions
 * then arrive in posting order, which frees descriptors and completes
 * flushes without a per-WQE table. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srqud_ep_post(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                  struct ibv_sge *sge, int num_sge, int send_flags)
{
    struct ibv_send_wr wr, *bad_wr;
    int ret;

    wr.wr_id             = ++iface->tx.sn;
    wr.next              = NULL;
    wr.sg_list           = sge;
    wr.num_sge           = num_sge;
    wr.opcode            = IBV_WR_SEND;
    wr.send_flags        = IBV_SEND_SIGNALED | send_flags;
    wr.wr.ud.ah          = ep->ah;
    wr.wr.ud.remote_qpn  = ep->dest_qpn;
    wr.wr.ud.remote_qkey = UCT_SRQUD_QKEY;

    ret = ibv_post_send(iface->qp, &wr, &bad_wr);
    if (ucs_unlikely(ret != 0)) {
        --iface->tx.sn;
        ucs_error("%s: ibv_post_send() failed: %s", iface->md->name,
                  strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    --iface->tx.available;
    ++iface->stats.tx_packets;
    return UCS_OK;
}


ucs_status_t uct_srqud_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t hdr,
                                   const void *buffer, unsigned length)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srqud_iface_t);
    uct_srqud_neth_t neth;
    struct ibv_sge sge[3];
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(sizeof(neth) + sizeof(hdr) + length, 0,
                     ucs_min(iface->config.max_inline, iface->config.seg_size),
                     "am_short");

    if (!uct_srqud_iface_has_tx_resources(iface)) {
        UCS_STATS_UPDATE_COUNTER(ep->super.stats, UCT_EP_STAT_NO_RES, 1);
        return UCS_ERR_NO_RESOURCE;
    }

    uct_srqud_ep_fill_neth(ep, &neth, id);
    sge[0].addr   = (uintptr_t)&neth;
    sge[0].length = sizeof(neth);
    sge[1].addr   = (uintptr_t)&hdr;
    sge[1].length = sizeof(hdr);
    sge[2].addr   = (uintptr_t)buffer;
    sge[2].length = length;

    /* Inline: the HCA copies the data at post time, so stack buffers and
     * the user's buffer are free to reuse on return */
    status = uct_srqud_ep_post(iface, ep, sge, (length > 0) ? 3 : 2,
                               IBV_SEND_INLINE);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, sizeof(hdr) + length);
        uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id, &hdr,
                           sizeof(hdr) + length, "TX: AM_SHORT");
    }
    return status;
}


ucs_status_t uct_srqud_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                       const uct_iov_t *iov, size_t iovcnt)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srqud_iface_t);
    size_t max               = ucs_min(iface->config.max_inline,
                                       iface->config.seg_size);
    uint8_t packet[max];
    uct_srqud_neth_t *neth   = (uct_srqud_neth_t*)packet;
    size_t length;
    struct ibv_sge sge;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    length = uct_iov_total_length(iov, iovcnt);
    UCT_CHECK_LENGTH(sizeof(*neth) + length, 0, max, "am_short_iov");

    if (!uct_srqud_iface_has_tx_resources(iface)) {
        UCS_STATS_UPDATE_COUNTER(ep->super.stats, UCT_EP_STAT_NO_RES, 1);
        return UCS_ERR_NO_RESOURCE;
    }

    uct_srqud_ep_fill_neth(ep, neth, id);
    uct_iov_to_buffer(iov, iovcnt, NULL, neth + 1, length);

    sge.addr   = (uintptr_t)packet;
    sge.length = sizeof(*neth) + length;
    sge.lkey   = 0;
    status     = uct_srqud_ep_post(iface, ep, &sge, 1, IBV_SEND_INLINE);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, length);
    }
    return status;
}


ssize_t uct_srqud_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                              uct_pack_callback_t pack_cb, void *arg,
                              unsigned flags)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srqud_iface_t);
    uct_srqud_send_desc_t *desc;
    uct_srqud_neth_t *neth;
    struct ibv_sge sge;
    ucs_status_t status;
    size_t length;

    UCT_CHECK_AM_ID(id);

    if (!uct_srqud_iface_has_tx_resources(iface)) {
        UCS_STATS_UPDATE_COUNTER(ep->super.stats, UCT_EP_STAT_NO_RES, 1);
        return UCS_ERR_NO_RESOURCE;
    }

    desc = ucs_mpool_get_inline(&iface->tx.mp);
    if (ucs_unlikely(desc == NULL)) {
        UCT_TL_IFACE_STAT_TX_NO_DESC(&iface->super);
        return UCS_ERR_NO_RESOURCE;
    }

    neth   = (uct_srqud_neth_t*)(desc + 1);
    length = pack_cb(neth + 1, arg);
    ucs_assertv(length <= iface->config.seg_size - sizeof(*neth),
                "am_bcopy: packed %zu bytes, max %zu", length,
                iface->config.seg_size - sizeof(*neth));
    uct_srqud_ep_fill_neth(ep, neth, id);

    sge.addr   = (uintptr_t)neth;
    sge.length = sizeof(*neth) + length;
    sge.lkey   = desc->lkey;

    status = uct_srqud_ep_post(iface, ep, &sge, 1,
                               (sge.length <= iface->config.max_inline) ?
                               IBV_SEND_INLINE : 0);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
        return status;
    }

    desc->sn = iface->tx.sn;
    ucs_queue_push(&iface->tx.outstanding, &desc->queue);
    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, length);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id, neth + 1,
                       length, "TX: AM_BCOPY");
    return length;
}


ucs_status_t uct_srqud_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                      unsigned flags)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srqud_iface_t);

    /* Resources are there now and nothing is queued ahead: the caller may
     * send right away */
    if (uct_srqud_iface_has_tx_resources(iface) &&
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
    uct_pending_req_t *req   = ucs_container_of(elem, uct_pending_req_t, priv);
    ucs_status_t status;

    if (!uct_srqud_iface_has_tx_resources(iface)) {
        return UCS_ARBITER_CB_RESULT_STOP;
    }

    status = req->func(req);
    if (status == UCS_OK) {
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    } else if (status == UCS_INPROGRESS) {
        return UCS_ARBITER_CB_RESULT_NEXT_GROUP;
    }

    /* UCS_ERR_NO_RESOURCE: the interface ran out again */
    return UCS_ARBITER_CB_RESULT_STOP;
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
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srqud_iface_t);
    uct_srqud_purge_args_t args = {cb, arg};

    ucs_arbiter_group_purge(&iface->tx.arbiter, &ep->arb_group,
                            uct_srqud_ep_purge_cb, &args);
}


ucs_status_t uct_srqud_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp)
{
    uct_srqud_ep_t *ep = ucs_derived_of(tl_ep, uct_srqud_ep_t);

    if (!ucs_arbiter_group_is_empty(&ep->arb_group)) {
        if (flags & UCT_FLUSH_FLAG_CANCEL) {
            /* The user purges pending requests itself after a cancel */
            return UCS_ERR_NO_RESOURCE;
        }
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
        return UCS_ERR_NO_RESOURCE;
    }

    /* Sends of all endpoints share one in-order send queue, so the
     * interface's position covers this endpoint */
    return uct_srqud_iface_flush(tl_ep->iface, 0, comp);
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

    self->dest_qpn   = uct_srqud_unpack_qpn(iface_addr->qp_num);
    self->dest_ep_id = UCT_SRQUD_EP_ID_NONE;
    self->psn        = 0;
    ucs_arbiter_group_init(&self->arb_group);

    ucs_debug("%s: ep %p to qpn 0x%x", iface->md->name, self, self->dest_qpn);
    return UCS_OK;
}


static UCS_CLASS_CLEANUP_FUNC(uct_srqud_ep_t)
{
    /* UCP purges pending requests before it destroys an endpoint; anything
     * left is dropped here so that the arbiter holds no dangling group */
    uct_srqud_ep_pending_purge(&self->super.super, NULL, NULL);
    ucs_arbiter_group_cleanup(&self->arb_group);
}


UCS_CLASS_DEFINE(uct_srqud_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_srqud_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_srqud_ep_t, uct_ep_t);
