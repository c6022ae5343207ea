/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_ep_flush.h"
#include "srqud_ep_tx.h"
#include "srqud_ep.h"
#include "srqud_rma.h"
#include "srqud_rma_refusal.h"
#include "srqud_zcopy.h"
#include "srqud_tx.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <uct/base/uct_iov.inl>
#include <string.h>


/* Requests of one get kept outstanding on the copy path */
#define UCT_SRQUD_RMA_GET_OUTSTANDING  32


static size_t uct_srqud_rma_put_frag(uct_srqud_iface_t *iface)
{
    return iface->config.seg_size - sizeof(uct_srqud_neth_t) -
           sizeof(uct_srqud_rma_hdr_t);
}


static size_t uct_srqud_rma_get_frag(uct_srqud_iface_t *iface)
{
    return iface->config.seg_size - sizeof(uct_srqud_neth_t) -
           sizeof(uct_srqud_rma_reply_t);
}


static ucs_status_t
uct_srqud_rma_send_put(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                       const void *data, size_t length, uint64_t remote_addr,
                       uint32_t rkey, uint32_t op_id)
{
    uct_srqud_rma_hdr_t hdr;

    hdr.remote_addr = remote_addr;
    hdr.rkey        = rkey;
    hdr.length      = length;
    hdr.op_id       = op_id;
    hdr.frag        = 0;
    return uct_srqud_ep_tx_request(iface, ep, UCT_SRQUD_CTL_RMA_PUT, &hdr,
                                   sizeof(hdr), data, length);
}


ucs_status_t uct_srqud_rma_put_short(uct_ep_h tl_ep, const void *buffer,
                                     unsigned length, uint64_t remote_addr,
                                     uct_rkey_t rkey)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, uct_srqud_rma_put_frag(iface), "put_short");

    UCT_SRQUD_LOCKED(iface, status,
                     uct_srqud_ep_user_must_wait(ep) ? UCS_ERR_NO_RESOURCE :
                     uct_srqud_rma_send_put(iface, ep, buffer, length,
                                            remote_addr, rkey, 0));
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super, PUT, SHORT, length);
    }
    return status;
}


ssize_t uct_srqud_rma_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                void *arg, uint64_t remote_addr,
                                uct_rkey_t rkey)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    uint8_t buf[UCT_SRQUD_MAX_MTU];
    ucs_status_t status;
    size_t length;

    length = pack_cb(buf, arg);
    ucs_assertv(length <= uct_srqud_rma_put_frag(iface),
                "put_bcopy: packed %zu, max %zu", length,
                uct_srqud_rma_put_frag(iface));

    UCT_SRQUD_LOCKED(iface, status,
                     uct_srqud_ep_user_must_wait(ep) ? UCS_ERR_NO_RESOURCE :
                     uct_srqud_rma_send_put(iface, ep, buf, length,
                                            remote_addr, rkey, 0));
    if (status != UCS_OK) {
        return status;
    }
    UCT_TL_EP_STAT_OP(&ep->super, PUT, BCOPY, length);
    return length;
}


/* ------------------------------------------------------------------------
 * Copy-path operations
 */

static uct_srqud_rma_op_t*
uct_srqud_rma_op_new(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep, int is_get,
                     void *local, size_t length, uint64_t remote_addr,
                     uint32_t rkey, uct_completion_t *comp)
{
    uct_srqud_rma_op_t *op = ucs_calloc(1, sizeof(*op), "srqud_rma_op");

    if (op == NULL) {
        return NULL;
    }

    /* never 0 (put_short/bcopy); a get's has UCT_SRQUD_RMA_OP_GET set, so
     * that a refusal that outlives its op is known for a get's */
    if (++iface->rma.next_id & UCT_SRQUD_RMA_OP_GET) {
        iface->rma.next_id = 1;
    }
    op->ep          = ep;
    op->id          = iface->rma.next_id | (is_get ? UCT_SRQUD_RMA_OP_GET : 0);
    op->is_get      = is_get;
    op->status      = UCS_OK;
    op->comp        = comp;
    op->local       = local;
    op->remote_addr = remote_addr;
    op->rkey        = rkey;
    op->length      = length;
    op->frag_size   = is_get ? uct_srqud_rma_get_frag(iface) :
                               uct_srqud_rma_put_frag(iface);
    op->nfrags      = ucs_max(1, (length + op->frag_size - 1) / op->frag_size);
    if (is_get) {
        op->got = ucs_calloc((op->nfrags + 63) / 64, sizeof(uint64_t),
                             "srqud_rma_got");
        if (op->got == NULL) {
            ucs_free(op);
            return NULL;
        }
    }
    ucs_list_add_tail(&iface->rma.ops, &op->list);
    uct_srqud_ep_op_start(ep);
    return op;
}


static void uct_srqud_rma_op_complete(uct_srqud_iface_t *iface,
                                      uct_srqud_rma_op_t *op,
                                      ucs_status_t status)
{
    ucs_list_del(&op->list);
    uct_srqud_ep_op_done(iface, op->ep);
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }
    ucs_free(op->got);
    ucs_free(op);
}


static size_t uct_srqud_rma_frag_len(const uct_srqud_rma_op_t *op,
                                     uint32_t frag)
{
    size_t offset = (size_t)frag * op->frag_size;

    return ucs_min(op->frag_size, op->length - offset);
}


/* Put fragments until all are sent; the last one's acknowledgement
 * completes the operation (with an error if the peer refused one) */
static unsigned uct_srqud_rma_put_progress(uct_srqud_iface_t *iface,
                                           uct_srqud_rma_op_t *op)
{
    unsigned count = 0;
    ucs_status_t status;

    while (op->next < op->nfrags) {
        status = uct_srqud_rma_send_put(iface, op->ep,
                                        op->local + (size_t)op->next *
                                                    op->frag_size,
                                        uct_srqud_rma_frag_len(op, op->next),
                                        op->remote_addr +
                                        (uint64_t)op->next * op->frag_size,
                                        op->rkey, op->id);
        if (status == UCS_ERR_NO_RESOURCE) {
            return count;
        } else if (status != UCS_OK) {
            uct_srqud_rma_op_complete(iface, op, status);
            return count;
        }
        ++op->next;
        ++count;
    }

    /* all sent: the ep's flush machinery completes it when acknowledged */
    ucs_list_del(&op->list);
    uct_srqud_ep_op_done(iface, op->ep);
    status = uct_srqud_ep_add_rma_flush(iface, op->ep, op->id, op->comp);
    if ((status != UCS_OK) && (op->comp != NULL)) {
        uct_invoke_completion(op->comp, status);
    }
    ucs_free(op);
    return count;
}


static unsigned uct_srqud_rma_get_progress(uct_srqud_iface_t *iface,
                                           uct_srqud_rma_op_t *op,
                                           ucs_time_t now)
{
    uct_srqud_rma_hdr_t hdr;
    unsigned count = 0;
    ucs_status_t status;
    uint32_t first;

    /* no answer for a while: ask again for what is missing */
    if ((op->next > 0) && (op->received < op->next) &&
        (uct_srqud_time_since(now, op->asked_time) >= iface->config.rto_min)) {
        for (first = 0; first < op->nfrags; ++first) {
            if (!(op->got[first / 64] & UCS_BIT(first % 64))) {
                break;
            }
        }
        op->next = first;
    }

    while ((op->next < op->nfrags) &&
           (op->next < op->received + UCT_SRQUD_RMA_GET_OUTSTANDING)) {
        if (op->got[op->next / 64] & UCS_BIT(op->next % 64)) {
            ++op->next;
            continue;
        }
        hdr.remote_addr = op->remote_addr + (uint64_t)op->next * op->frag_size;
        hdr.rkey        = op->rkey;
        hdr.length      = uct_srqud_rma_frag_len(op, op->next);
        hdr.op_id       = op->id;
        hdr.frag        = op->next;
        status = uct_srqud_ep_tx_request(iface, op->ep, UCT_SRQUD_CTL_RMA_GET,
                                         &hdr, sizeof(hdr), NULL, 0);
        if (status == UCS_ERR_NO_RESOURCE) {
            break;
        } else if (status != UCS_OK) {
            uct_srqud_rma_op_complete(iface, op, status);
            return count;
        }
        op->asked_time = now;
        ++op->next;
        ++count;
    }
    return count;
}


unsigned uct_srqud_rma_progress(uct_srqud_iface_t *iface, ucs_time_t now)
{
    uct_srqud_rma_op_t *op, *tmp;
    unsigned count = 0;

    ucs_list_for_each_safe(op, tmp, &iface->rma.ops, list) {
        count += op->is_get ? uct_srqud_rma_get_progress(iface, op, now) :
                              uct_srqud_rma_put_progress(iface, op);
    }
    return count;
}


static ucs_status_t
uct_srqud_rma_put_copy(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                       const void *buffer, size_t length, uint64_t remote_addr,
                       uint32_t rkey, uct_completion_t *comp)
{
    uct_srqud_rma_op_t *op;

    op = uct_srqud_rma_op_new(iface, ep, 0, (void*)buffer, length, remote_addr,
                              rkey, comp);
    if (op == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    ++iface->stats.rma_copy_ops;
    uct_srqud_rma_put_progress(iface, op);
    return UCS_INPROGRESS;
}


static ucs_status_t
uct_srqud_rma_get_copy(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                       void *buffer, size_t length, uint64_t remote_addr,
                       uint32_t rkey, uct_unpack_callback_t unpack_cb,
                       void *arg, uct_completion_t *comp)
{
    uct_srqud_rma_op_t *op;

    op = uct_srqud_rma_op_new(iface, ep, 1, buffer, length, remote_addr, rkey,
                              comp);
    if (op == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    op->unpack_cb  = unpack_cb;
    op->unpack_arg = arg;
    op->asked_time = ucs_get_time();
    uct_srqud_rma_get_progress(iface, op, op->asked_time);
    return UCS_INPROGRESS;
}


ucs_status_t uct_srqud_rma_get_bcopy(uct_ep_h tl_ep,
                                     uct_unpack_callback_t unpack_cb, void *arg,
                                     size_t length, uint64_t remote_addr,
                                     uct_rkey_t rkey, uct_completion_t *comp)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, uct_srqud_rma_get_frag(iface), "get_bcopy");

    uct_srqud_enter(iface);
    if (ep->flags & UCT_SRQUD_EP_FLAG_FAILED) {
        status = ep->fail_status;
    } else if (!uct_srqud_tx_has_resources(iface) ||
               uct_srqud_ep_user_must_wait(ep)) {
        status = UCS_ERR_NO_RESOURCE;
    } else {
        status = uct_srqud_rma_get_copy(iface, ep, NULL, length, remote_addr,
                                        rkey, unpack_cb, arg, comp);
    }
    uct_srqud_leave(iface);
    if (status == UCS_INPROGRESS) {
        UCT_TL_EP_STAT_OP(&ep->super, GET, BCOPY, length);
    }
    return status;
}


/* A get or put of registered memory in MTU fragments, copied */
static ucs_status_t uct_srqud_rma_copy(uct_srqud_iface_t *iface,
                                       uct_srqud_ep_t *ep, int is_get,
                                       void *buffer, size_t length,
                                       uint64_t remote_addr, uint32_t rkey,
                                       uct_completion_t *comp)
{
    return is_get ?
           uct_srqud_rma_get_copy(iface, ep, buffer, length, remote_addr,
                                  rkey, NULL, NULL, comp) :
           uct_srqud_rma_put_copy(iface, ep, buffer, length, remote_addr,
                                  rkey, comp);
}


/* A transfer zero-copy gave up after it started (a put whose sink has no
 * pool QP free, a get whose chunks stopped landing): the copy path takes
 * it over, with the user's completion */
static void uct_srqud_rma_zcopy_fallback(uct_srqud_iface_t *iface,
                                         uct_srqud_ep_t *ep, int is_get,
                                         void *buffer, size_t length,
                                         uint64_t remote_addr, uint32_t rkey,
                                         uct_completion_t *comp)
{
    ucs_status_t status;

    ++iface->stats.zcopy_fallbacks;
    status = uct_srqud_rma_copy(iface, ep, is_get, buffer, length,
                                remote_addr, rkey, comp);
    if ((status != UCS_INPROGRESS) && (comp != NULL)) {
        uct_invoke_completion(comp, status);
    }
}


/* A single contiguous, registered buffer (what UCP's rendezvous and RMA
 * pass); its lkey comes from the memory handle */
static ucs_status_t
uct_srqud_rma_check_iov(uct_srqud_iface_t *iface, const uct_iov_t *iov,
                        size_t iovcnt, const char *name)
{
    UCT_CHECK_IOV_SIZE(iovcnt, 1ul, name);
    if ((iov[0].count > 1) && (iov[0].stride != iov[0].length)) {
        ucs_error("%s: %s needs a contiguous buffer", iface->md->name, name);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}


static ucs_status_t
uct_srqud_rma_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                    uint64_t remote_addr, uct_rkey_t rkey,
                    uct_completion_t *comp, int is_get)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    size_t length;
    ucs_status_t status;

    status = uct_srqud_rma_check_iov(iface, iov, iovcnt,
                                     is_get ? "get_zcopy" : "put_zcopy");
    if (status != UCS_OK) {
        return status;
    }
    length = iov[0].length * iov[0].count;

    uct_srqud_enter(iface);
    if (ep->flags & UCT_SRQUD_EP_FLAG_FAILED) {
        status = ep->fail_status;
        goto out;
    }
    if (!uct_srqud_tx_has_resources(iface) ||
        uct_srqud_ep_user_must_wait(ep)) {
        status = UCS_ERR_NO_RESOURCE;
        goto out;
    }

    /* the decision: zero-copy from UCX_SRQUD_ZCOPY_THRESH (and registered
     * memory, whose lkey the chunks are sent with) */
    if ((length >= iface->config.zcopy_thresh) &&
        (iov[0].memh != UCT_MEM_HANDLE_NULL)) {
        status = uct_srqud_zcopy_start(iface, ep, is_get, iov[0].buffer,
                                       length, uct_srqud_memh_lkey(iov[0].memh),
                                       remote_addr, rkey, comp,
                                       uct_srqud_rma_zcopy_fallback);
        if (status != UCS_ERR_BUSY) {
            goto out;
        }
        /* no pool QP free here, or too many chunks: the copy path, never
         * a failure */
        ++iface->stats.zcopy_fallbacks;
    }

    status = uct_srqud_rma_copy(iface, ep, is_get, iov[0].buffer, length,
                                remote_addr, rkey, comp);
out:
    uct_srqud_leave(iface);
    return status;
}


ucs_status_t uct_srqud_rma_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                     size_t iovcnt, uint64_t remote_addr,
                                     uct_rkey_t rkey, uct_completion_t *comp)
{
    ucs_status_t status = uct_srqud_rma_zcopy(tl_ep, iov, iovcnt,
                                              remote_addr, rkey, comp, 0);

    if (!UCS_STATUS_IS_ERR(status)) {
        UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), PUT, ZCOPY,
                          uct_iov_total_length(iov, iovcnt));
    }
    return status;
}


ucs_status_t uct_srqud_rma_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                     size_t iovcnt, uint64_t remote_addr,
                                     uct_rkey_t rkey, uct_completion_t *comp)
{
    ucs_status_t status = uct_srqud_rma_zcopy(tl_ep, iov, iovcnt,
                                              remote_addr, rkey, comp, 1);

    if (!UCS_STATUS_IS_ERR(status)) {
        UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), GET, ZCOPY,
                          uct_iov_total_length(iov, iovcnt));
    }
    return status;
}


/* ------------------------------------------------------------------------
 * The peer's side
 */

static void uct_srqud_rma_refuse_get(uct_srqud_iface_t *iface,
                                     uct_srqud_ep_t *ep,
                                     const uct_srqud_rma_hdr_t *hdr,
                                     ucs_status_t status)
{
    uct_srqud_rma_reply_t reply;

    reply.op_id  = hdr->op_id;
    reply.frag   = hdr->frag;
    reply.status = status;
    /* best effort: the initiator asks again, and is refused again */
    uct_srqud_ep_tx_answer(iface, ep, UCT_SRQUD_CTL_RMA_REPLY, &reply,
                           sizeof(reply), NULL, 0);
}


void uct_srqud_rma_rx_put(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                          const void *payload, size_t length)
{
    const uct_srqud_rma_hdr_t *hdr = payload;
    ucs_status_t status;

    if (hdr->length != length - sizeof(*hdr)) {
        uct_srqud_rma_refusal_add(iface, ep, hdr->op_id, UCS_ERR_INVALID_PARAM);
        return;
    }

    /* checked and copied in one step, so that a deregistration (and the
     * user's munmap after it) cannot slip in between */
    status = uct_srqud_md_remote_copy(iface->md, hdr->rkey, hdr->remote_addr,
                                      (void*)(hdr + 1), hdr->length,
                                      UCT_MD_MEM_ACCESS_REMOTE_PUT);
    if (status != UCS_OK) {
        uct_srqud_rma_refusal_add(iface, ep, hdr->op_id, status);
    }
}


void uct_srqud_rma_rx_get(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                          const void *payload, size_t length)
{
    const uct_srqud_rma_hdr_t *hdr = payload;
    uint8_t data[UCT_SRQUD_MAX_MTU];
    uct_srqud_rma_reply_t reply;
    ucs_status_t status;

    if (hdr->length > uct_srqud_rma_get_frag(iface)) {
        uct_srqud_rma_refuse_get(iface, ep, hdr, UCS_ERR_INVALID_PARAM);
        return;
    }

    status = uct_srqud_md_remote_copy(iface->md, hdr->rkey, hdr->remote_addr,
                                      data, hdr->length,
                                      UCT_MD_MEM_ACCESS_REMOTE_GET);
    if (status != UCS_OK) {
        uct_srqud_rma_refuse_get(iface, ep, hdr, status);
        return;
    }

    reply.op_id  = hdr->op_id;
    reply.frag   = hdr->frag;
    reply.status = UCS_OK;
    /* if it cannot go now, the requester asks again after its timeout */
    uct_srqud_ep_tx_answer(iface, ep, UCT_SRQUD_CTL_RMA_REPLY, &reply,
                           sizeof(reply), data, hdr->length);
}


static uct_srqud_rma_op_t*
uct_srqud_rma_op_find(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                      uint32_t id)
{
    uct_srqud_rma_op_t *op;

    ucs_list_for_each(op, &iface->rma.ops, list) {
        if ((op->id == id) && (op->ep == ep)) {
            return op;
        }
    }
    return NULL;
}


void uct_srqud_rma_rx_reply(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                            const void *payload, size_t length)
{
    const uct_srqud_rma_reply_t *reply = payload;
    uct_srqud_rma_op_t *op;
    ucs_status_t status;
    size_t data_len;

    op       = uct_srqud_rma_op_find(iface, ep, reply->op_id);
    data_len = length - sizeof(*reply);
    status   = uct_srqud_ep_peer_status(iface, reply->status);
    if (status != UCS_OK) {
        ucs_debug("%s: peer refused get op %u fragment %u: %s",
                  iface->md->name, reply->op_id, reply->frag,
                  ucs_status_string(status));
        /* none: a fragment of a get that completed meanwhile, asked for
         * again before its first answer came; the user may have released
         * the memory since, nothing failed */
        if ((op != NULL) && op->is_get) {
            uct_srqud_rma_op_complete(iface, op, status);
        }
        return;
    }

    if ((op == NULL) || !op->is_get || (reply->frag >= op->nfrags) ||
        (op->got[reply->frag / 64] & UCS_BIT(reply->frag % 64)) ||
        (data_len != uct_srqud_rma_frag_len(op, reply->frag))) {
        return; /* stale or duplicate answer */
    }

    op->got[reply->frag / 64] |= UCS_BIT(reply->frag % 64);
    ++op->received;
    if (op->unpack_cb != NULL) {
        op->unpack_cb(op->unpack_arg, reply + 1, data_len);
    } else {
        memcpy(op->local + (size_t)reply->frag * op->frag_size, reply + 1,
               data_len);
    }
    if (op->received == op->nfrags) {
        uct_srqud_rma_op_complete(iface, op, UCS_OK);
    }
}


static void uct_srqud_rma_put_refused(uct_srqud_iface_t *iface,
                                      uct_srqud_ep_t *ep, uint32_t op_id,
                                      uct_srqud_psn_t first,
                                      uct_srqud_psn_t last,
                                      ucs_status_t status)
{
    uct_srqud_rma_op_t *op = NULL;

    if (op_id != 0) {
        op = uct_srqud_rma_op_find(iface, ep, op_id);
    }
    if ((op != NULL) && !op->is_get) {
        /* still sending: it ends now, with the error */
        uct_srqud_rma_op_complete(iface, op, status);
        return;
    }
    uct_srqud_ep_put_refused(ep, op_id, first, last, status);
}


/* The initiator: an RMA_REFUSE, handled before the ack it carries */
void uct_srqud_rma_rx_refuse(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             const void *payload, size_t length)
{
    const uct_srqud_rma_refusal_t *refusal = payload;
    uct_srqud_rma_seen_t seen;
    ucs_status_t status;

    if (refusal->id != 0) {
        /* every time: a lost RMA_SEEN leaves the peer sending it again */
        seen.id = refusal->id;
        uct_srqud_ep_tx_notice(iface, ep, UCT_SRQUD_CTL_RMA_SEEN, &seen,
                               sizeof(seen));
        /* ids rise: a repeat, or a late copy of an older one */
        if ((int32_t)(refusal->id - ep->rma_refusal_id) <= 0) {
            return;
        }
        ep->rma_refusal_id = refusal->id;
    }

    /* a refusal is an error, whatever code it names */
    status = uct_srqud_ep_peer_status(iface, refusal->status);
    if (status == UCS_OK) {
        status = UCS_ERR_IO_ERROR;
    }
    ucs_debug("%s: peer refused put op %u (psn %u..%u): %s", iface->md->name,
              refusal->op_id, refusal->first_psn, refusal->last_psn,
              ucs_status_string(status));
    uct_srqud_rma_put_refused(iface, ep, refusal->op_id, refusal->first_psn,
                              refusal->last_psn, status);
}


void uct_srqud_rma_ep_cleanup(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                              ucs_status_t status)
{
    uct_srqud_rma_op_t *op, *tmp;

    uct_srqud_rma_refusal_release(iface, ep);

    ucs_list_for_each_safe(op, tmp, &iface->rma.ops, list) {
        if (op->ep == ep) {
            uct_srqud_rma_op_complete(iface, op, status);
        }
    }
}
