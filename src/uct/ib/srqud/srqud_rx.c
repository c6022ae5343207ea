/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_rx.h"
#include "srqud_dev.h"
#include "srqud_rel.h"
#include "srqud_verbs.h"
#include "srqud_watermark.h"

#include <ucs/datastruct/mpool.inl>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <string.h>


static void uct_srqud_rx_desc_init(uct_iface_h tl_iface, void *obj,
                                   uct_mem_h memh)
{
    uct_srqud_recv_desc_t *desc = obj;

    desc->lkey = uct_srqud_memh_lkey(memh);
}


void uct_srqud_rx_desc_put(uct_srqud_iface_t *iface,
                           uct_srqud_recv_desc_t *desc)
{
    /* the LIMIT thread takes buffers from the same pool */
    ucs_spin_lock(&iface->rx.lock);
    ucs_mpool_put_inline(desc);
    ucs_spin_unlock(&iface->rx.lock);
}


static void uct_srqud_rx_release_desc(uct_recv_desc_t *self, void *desc)
{
    uct_srqud_iface_t *iface = ucs_container_of(self, uct_srqud_iface_t,
                                                release_desc);

    uct_srqud_rx_desc_put(iface,
            UCS_PTR_BYTE_OFFSET(desc,
                                -(ptrdiff_t)iface->config.rx_headroom_offset));
}


void uct_srqud_rx_deliver_am(uct_srqud_iface_t *iface,
                             uct_srqud_recv_desc_t *desc,
                             size_t payload_len)
{
    const uct_srqud_neth_t *neth = uct_srqud_rx_neth(iface, desc);
    void *payload                = uct_srqud_rx_payload(iface, desc);
    ucs_status_t status;

    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, neth->am_id,
                       payload, payload_len, "RX: AM");
    status = uct_iface_invoke_am(&iface->super, neth->am_id, payload,
                                 payload_len, UCT_CB_PARAM_FLAG_DESC);
    if (status == UCS_INPROGRESS) {
        /* The user keeps the buffer and releases it with
         * uct_iface_release_desc(); from here on the bytes before the
         * payload are the user's headroom */
        uct_recv_desc(UCS_PTR_BYTE_OFFSET(desc,
                                          iface->config.rx_headroom_offset)) =
                &iface->release_desc;
        return;
    }

    uct_srqud_rx_desc_put(iface, desc);
}


/* Post up to @a max buffers; with @a to_target, only while fewer than the
 * target are posted (the progress path), else unconditionally (the LIMIT
 * thread, which knows the SRQ is nearly empty) */
static ucs_status_t uct_srqud_rx_srq_post_n(uct_srqud_iface_t *iface,
                                            unsigned max, int to_target)
{
    struct ibv_recv_wr wrs[32], *bad_wr;
    struct ibv_sge sges[32];
    uct_srqud_recv_desc_t *desc;
    unsigned count, total = 0;
    ucs_status_t status = UCS_OK;
    int ret;

    ucs_spin_lock(&iface->rx.lock);
    while ((total < max) &&
           (!to_target || (iface->rx.posted < iface->rx.target))) {
        count = 0;
        while ((count < ucs_static_array_size(wrs)) && (total + count < max) &&
               (!to_target || (iface->rx.posted + count < iface->rx.target))) {
            desc = ucs_mpool_get_inline(&iface->rx.mp);
            if (desc == NULL) {
                status = UCS_ERR_NO_MEMORY;
                break;
            }

            sges[count].addr   = (uintptr_t)uct_srqud_rx_hdr(iface, desc);
            sges[count].length = UCT_SRQUD_GRH_LEN + iface->config.seg_size;
            sges[count].lkey   = desc->lkey;
            wrs[count].wr_id   = (uintptr_t)desc;
            wrs[count].sg_list = &sges[count];
            wrs[count].num_sge = 1;
            wrs[count].next    = &wrs[count + 1];
            ++count;
        }

        if (count == 0) {
            break;
        }

        wrs[count - 1].next = NULL;
        ret = ibv_post_srq_recv(iface->srq, wrs, &bad_wr);
        if (ret != 0) {
            ucs_error("%s: ibv_post_srq_recv() failed: %s", iface->md->name,
                      strerror(ret));
            /* return what was not posted */
            for (; bad_wr != NULL; bad_wr = bad_wr->next, --count) {
                ucs_mpool_put_inline((void*)(uintptr_t)bad_wr->wr_id);
            }
            iface->rx.posted += count;
            total            += count;
            status            = UCS_ERR_IO_ERROR;
            break;
        }

        iface->rx.posted += count;
        total            += count;
        if (status != UCS_OK) {
            break;
        }
    }
    ucs_spin_unlock(&iface->rx.lock);

    return status;
}


ucs_status_t uct_srqud_rx_srq_post(uct_srqud_iface_t *iface, unsigned max)
{
    return uct_srqud_rx_srq_post_n(iface, max, 1);
}


static ucs_status_t uct_srqud_rx_srq_arm(uct_srqud_iface_t *iface)
{
    struct ibv_srq_attr attr;
    int ret;

    if (iface->rx.limit == 0) {
        return UCS_OK;
    }

    attr.srq_limit = iface->rx.limit;
    ret = ibv_modify_srq(iface->srq, &attr, IBV_SRQ_LIMIT);
    if (ret != 0) {
        ucs_error("%s: ibv_modify_srq(limit=%u) failed: %s", iface->md->name,
                  iface->rx.limit, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}


/*
 * The LIMIT thread: runs on UCX's async thread, which blocks on the
 * device's async fd; the md calls it under its listener lock (so the
 * interface cannot be closed meanwhile). Fewer than rx.limit buffers are left on the SRQ; the
 * others were consumed whether or not the progress path has polled their
 * completions yet, so the refill is counted from the target, not from
 * rx.posted.
 */
static void uct_srqud_rx_srq_event(void *arg, enum ibv_event_type event_type)
{
    uct_srqud_iface_t *iface = arg;
    ucs_time_t now           = ucs_get_time();
    unsigned grow, refill;

    if (event_type != IBV_EVENT_SRQ_LIMIT_REACHED) {
        ucs_error("%s: SRQ error event %s", iface->md->name,
                  ibv_event_type_str(event_type));
        return;
    }

    ucs_spin_lock(&iface->rx.lock);
    ++iface->stats.srq_limit_events;

    /* Drained again within a few wakeups of the last refill: the receiver
     * is not keeping up, so keep more buffers posted (as MVAPICH2 does) */
    grow = 0;
    if ((iface->rx.last_limit_event != 0) &&
        (uct_srqud_time_since(now, iface->rx.last_limit_event) <
         ucs_time_from_msec(10)) &&
        (iface->rx.target < iface->config.srq_max_size)) {
        grow = ucs_min(iface->rx.target / 4 + 1,
                       iface->config.srq_max_size - iface->rx.target);
        iface->rx.target += grow;
        ++iface->stats.srq_grows;
    }
    iface->rx.last_limit_event = now;

    /* At most rx.limit buffers remain: posting target - limit keeps the SRQ
     * within target <= srq_max_size, the SRQ's capacity. Completions of
     * posted buffers wait in the receive CQ until the receiver polls, so
     * never post more than the CQ can hold. */
    refill = iface->rx.target - iface->rx.limit;
    if (iface->rx.posted + refill > iface->config.rx_cq_len) {
        refill = (iface->rx.posted < iface->config.rx_cq_len) ?
                 (iface->config.rx_cq_len - iface->rx.posted) : 0;
    }
    ucs_spin_unlock(&iface->rx.lock);

    uct_srqud_rx_srq_post_n(iface, refill, 0);
    iface->stats.srq_refilled += refill;
    uct_srqud_rx_srq_arm(iface);
    ucs_debug("%s: SRQ limit: refilled %u, target %u (grew %u)",
              iface->md->name, refill, iface->rx.target, grow);
}


ucs_status_t uct_srqud_rx_init(uct_srqud_iface_t *iface,
                               const uct_srqud_iface_config_t *config,
                               const uct_iface_params_t *params,
                               const struct ibv_port_attr *port_attr)
{
    size_t rx_headroom, hdr_len, am_align, am_align_offset;
    ucs_status_t status;

    iface->rx.posted           = 0;
    iface->rx.stash_count      = 0;
    iface->rx.target           = iface->config.srq_size;
    iface->rx.last_limit_event = 0;
    iface->rx.held             = 0;
    iface->release_desc.cb     = uct_srqud_rx_release_desc;
    ucs_list_head_init(&iface->rx.ack_list);

    /* the layout in srqud_types.h */
    rx_headroom = (params->field_mask & UCT_IFACE_PARAM_FIELD_RX_HEADROOM) ?
                  params->rx_headroom : 0;
    hdr_len     = UCT_SRQUD_GRH_LEN + sizeof(uct_srqud_neth_t);
    iface->config.rx_payload_offset  = sizeof(uct_srqud_recv_desc_t) +
                                       ucs_max(sizeof(uct_recv_desc_t) +
                                               rx_headroom, hdr_len);
    iface->config.rx_hdr_offset      = iface->config.rx_payload_offset -
                                       hdr_len;
    iface->config.rx_headroom_offset = iface->config.rx_payload_offset -
                                       rx_headroom;

    /* The payload is aligned as the user asks (UCT_IFACE_PARAM_FIELD_AM_
     * ALIGNMENT), by default to a cache line */
    status = uct_iface_param_am_alignment(params, iface->config.seg_size,
                                          iface->config.rx_payload_offset,
                                          iface->config.rx_payload_offset,
                                          &am_align, &am_align_offset);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_iface_mpool_init(&iface->super, &iface->rx.mp,
                                  iface->config.rx_payload_offset +
                                  iface->config.seg_size -
                                  sizeof(uct_srqud_neth_t),
                                  am_align_offset, am_align, &config->rx_mp,
                                  iface->config.srq_size,
                                  uct_srqud_rx_desc_init, "srqud_rx");
    if (status != UCS_OK) {
        return status;
    }

    /* Buffers for the initial posting and one refill's worth more: the
     * LIMIT thread must not wait for memory registration when it refills */
    ucs_mpool_grow(&iface->rx.mp, 2 * iface->config.srq_size);

    status = uct_srqud_rx_srq_post(iface, iface->config.srq_size);
    if (status != UCS_OK) {
        goto err_mp;
    }

    /* The watermark (Eq. 5) */
    iface->stats.t_wakeup = uct_srqud_watermark_measure_wakeup();
    if (iface->config.srq_limit == UCS_ULUNITS_AUTO) {
        iface->rx.limit = uct_srqud_watermark(
                uct_srqud_verbs_port_bandwidth(port_attr) / 1e6,
                UCT_SRQUD_MIN_WIRE_PACKET, iface->stats.t_wakeup * 1e3,
                iface->config.srq_size);
    } else {
        iface->rx.limit = iface->config.srq_limit;
    }

    status = uct_srqud_rx_srq_arm(iface);
    if (status != UCS_OK) {
        goto err_mp;
    }

    /* the md's async thread calls the LIMIT refill from now on */
    status = uct_srqud_md_srq_listen(iface->md, iface->srq,
                                     uct_srqud_rx_srq_event, iface);
    if (status != UCS_OK) {
        goto err_mp;
    }
    return UCS_OK;

err_mp:
    /* buffers posted before the failure go away with the SRQ */
    uct_srqud_dev_destroy_queues(iface);
    ucs_mpool_cleanup(&iface->rx.mp, 0);
    return status;
}


void uct_srqud_rx_cleanup(uct_srqud_iface_t *iface)
{
    uct_srqud_recv_desc_t *desc;

    ucs_queue_for_each_extract(desc, &iface->async.rx_q, queue, 1) {
        uct_srqud_rx_desc_put(iface, desc);
    }
    /* buffers that were posted on the SRQ are not returned to the pool */
    ucs_mpool_cleanup(&iface->rx.mp, 0);
}


unsigned uct_srqud_rx_poll(uct_srqud_iface_t *iface, struct ibv_wc *wcs,
                           unsigned max)
{
    unsigned count = ucs_min(iface->rx.stash_count, max);
    int ret;

    memcpy(wcs, iface->rx.stash, count * sizeof(*wcs));
    memmove(iface->rx.stash, iface->rx.stash + count,
            (iface->rx.stash_count - count) * sizeof(*wcs));
    iface->rx.stash_count -= count;

    ret = ibv_poll_cq(iface->recv_cq,
                      ucs_min(ucs_min(iface->config.rx_max_poll,
                                      UCT_SRQUD_RX_POLL_MAX), max - count),
                      wcs + count);
    if (ucs_unlikely(ret < 0)) {
        ucs_fatal("%s: ibv_poll_cq(recv) failed: %d", iface->md->name, ret);
    }
    count += ret;

    /* Buffers leave the SRQ when the completion is polled */
    if (count > 0) {
        ucs_spin_lock(&iface->rx.lock);
        iface->rx.posted -= count;
        ucs_spin_unlock(&iface->rx.lock);
    }
    return count;
}


void uct_srqud_rx_refill(uct_srqud_iface_t *iface)
{
    if ((iface->rx.posted < iface->rx.target) &&
        (iface->rx.target - iface->rx.posted >= iface->config.rx_post_batch)) {
        uct_srqud_rx_srq_post(iface, UINT_MAX);
    }
}


void uct_srqud_rx_purge_ep(uct_srqud_iface_t *iface, const void *ep)
{
    uct_srqud_recv_desc_t *desc;
    ucs_queue_iter_t iter;

    ucs_queue_for_each_safe(desc, iter, &iface->async.rx_q, queue) {
        if (desc->ep == ep) {
            ucs_queue_del_iter(&iface->async.rx_q, iter);
            uct_srqud_rx_desc_put(iface, desc);
        }
    }
}


static void uct_srqud_rx_unhold(void *pkt, void *arg)
{
    uct_srqud_iface_t *iface = arg;

    --iface->rx.held;
    uct_srqud_rx_desc_put(iface, pkt);
}


/* Give up the packets a passive ep holds ahead of a gap (a new incarnation
 * of its peer starts over; the ep goes away) */
void uct_srqud_rx_reorder_release(uct_srqud_iface_t *iface,
                                  uct_srqud_ep_t *ep)
{
    if (ep->rx.reorder != NULL) {
        uct_srqud_reorder_drain(ep->rx.reorder, uct_srqud_rx_unhold, iface);
        ucs_free(ep->rx.reorder);
        ep->rx.reorder = NULL;
    }
}
