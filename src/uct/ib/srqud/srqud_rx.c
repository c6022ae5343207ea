/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_rx.h"
#include "srqud_rxpool.h"
#include "srqud_rel.h"
#include "srqud_verbs.h"
#include "srqud_watermark.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <string.h>


/* Buffers polled since the last report leave the pool's posted count for
 * the interface's taken one. Done once per refill batch, not per poll: a
 * ping-pong took the pool's lock and another for every message. Until
 * then the pool counts them posted, which errs on the safe side: other
 * interfaces and the LIMIT thread post up to a batch fewer, never more
 * than a CQ holds. */
void uct_srqud_rx_report(uct_srqud_iface_t *iface)
{
    if (iface->rx.polled > 0) {
        uct_srqud_rxpool_polled(iface->rx.pool, iface->rx.polled);
        iface->rx.taken  += iface->rx.polled;
        iface->rx.polled  = 0;
    }
}


/* Free buffers an interface keeps for itself: puts and reposts take only
 * its own lock, and the pool's lock once per batch */
static void uct_srqud_rx_cache_trim(uct_srqud_iface_t *iface, unsigned keep)
{
    unsigned n;

    if (iface->rx.cache_count > keep) {
        /* the pool counts what it gets back as lent first */
        uct_srqud_rx_report(iface);
        n = iface->rx.cache_count - keep;
        uct_srqud_rxpool_put(iface->rx.pool, iface->rx.cache + keep, n);
        iface->rx.cache_count = keep;
        iface->rx.taken      -= n;
    }
}


void uct_srqud_rx_cache_half(uct_srqud_iface_t *iface)
{
    uct_srqud_rx_cache_trim(iface, UCT_SRQUD_RX_CACHE_MAX / 2);
}


static void uct_srqud_rx_release_desc(uct_recv_desc_t *self, void *desc)
{
    uct_srqud_iface_t *iface = ucs_container_of(self, uct_srqud_iface_t,
                                                release_desc);

    /* any thread that holds a delivered descriptor may release it: under
     * the interface's lock, as UCX's ud does, which every other user of
     * the cache holds already */
    uct_srqud_enter(iface);
    uct_srqud_rx_desc_put(iface,
            UCS_PTR_BYTE_OFFSET(desc,
                                -(ptrdiff_t)iface->config.rx_headroom_offset));
    uct_srqud_leave(iface);
}


/* Repost up to @a max buffers on the SRQ: the cache's, topped up from the
 * pool; what the SRQ does not take (at its target) stays in the cache */
void uct_srqud_rx_post(uct_srqud_iface_t *iface, unsigned max)
{
    unsigned count, got, posted;

    uct_srqud_rx_report(iface);
    count = ucs_min(max, UCT_SRQUD_RX_CACHE_MAX);
    if (iface->rx.cache_count < count) {
        got = uct_srqud_rxpool_get(iface->rx.pool,
                                   iface->rx.cache + iface->rx.cache_count,
                                   count - iface->rx.cache_count);
        iface->rx.cache_count += got;
        iface->rx.taken       += got;
        count                  = ucs_min(count, iface->rx.cache_count);
    }

    /* the last ones cached: the most recently used, the warmest */
    posted = uct_srqud_rxpool_post(iface->rx.pool,
                                   iface->rx.cache + iface->rx.cache_count -
                                   count, count);
    if (posted < count) {
        /* keep the unposted ones at the end of the cache */
        memmove(iface->rx.cache + iface->rx.cache_count - count,
                iface->rx.cache + iface->rx.cache_count - count + posted,
                (count - posted) * sizeof(*iface->rx.cache));
    }
    iface->rx.cache_count -= posted;
    iface->rx.taken       -= posted;
}


/* The watermark (Eq. 5), for a new pool: from this port's link rate and a
 * wakeup time measured now */
typedef struct {
    uct_srqud_iface_t           *iface;
    const struct ibv_port_attr  *port_attr;
} uct_srqud_rx_limit_arg_t;

static unsigned uct_srqud_rx_limit(void *arg, double *t_wakeup)
{
    const uct_srqud_rx_limit_arg_t *la = arg;
    uct_srqud_iface_t *iface            = la->iface;

    *t_wakeup = uct_srqud_watermark_measure_wakeup();
    if (iface->config.srq_limit != UCS_ULUNITS_AUTO) {
        return iface->config.srq_limit;
    }
    return uct_srqud_watermark(
            uct_srqud_verbs_port_bandwidth(la->port_attr) / 1e6,
            UCT_SRQUD_MIN_WIRE_PACKET, *t_wakeup * 1e3,
            iface->config.srq_size);
}


ucs_status_t uct_srqud_rx_init(uct_srqud_iface_t *iface,
                               const uct_srqud_iface_config_t *config,
                               const uct_iface_params_t *params,
                               const struct ibv_port_attr *port_attr)
{
    uct_srqud_rx_limit_arg_t limit_arg = { iface, port_attr };
    size_t rx_headroom, hdr_len, am_align, am_align_offset;
    uct_srqud_rxpool_params_t pool_params;
    ucs_status_t status;

    iface->rx.pool             = NULL;
    iface->rx.cache_count      = 0;
    iface->rx.taken            = 0;
    iface->rx.polled           = 0;
    iface->rx.stash_count      = 0;
    iface->rx.held             = 0;
    iface->rx.chains           = 0;
    ucs_list_head_init(&iface->rx.chain_list);
    iface->rx.chain_buf        = NULL;
    iface->release_desc.cb     = uct_srqud_rx_release_desc;
    ucs_list_head_init(&iface->rx.ack_list);
    iface->rx.ack_due  = UCS_TIME_INFINITY;
    iface->rx.carry_due = 0;

    /* the layout in srqud_rxpool.h */
    rx_headroom = (params->field_mask & UCT_IFACE_PARAM_FIELD_RX_HEADROOM) ?
                  params->rx_headroom : 0;
    hdr_len     = UCT_SRQUD_GRH_LEN + sizeof(uct_srqud_neth_t);
    /* a multiple of 8: the payload is aligned, and the descriptor before
     * it must be too */
    iface->config.rx_payload_offset  = (sizeof(uct_srqud_recv_desc_t) +
                                        ucs_max(sizeof(uct_recv_desc_t) +
                                                rx_headroom, hdr_len) + 7) &
                                       ~(size_t)7;
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

    memset(&pool_params, 0, sizeof(pool_params));
    pool_params.elem_size      = iface->config.rx_payload_offset +
                                 iface->config.seg_size -
                                 sizeof(uct_srqud_neth_t);
    /* what UCX's memory pools refuse (UCT's tests ask for it) */
    if ((am_align == 0) || !ucs_is_pow2(am_align) ||
        (am_align_offset > pool_params.elem_size)) {
        ucs_error("%s: invalid AM alignment %zu (offset %zu)",
                  iface->md->name, am_align, am_align_offset);
        return UCS_ERR_INVALID_PARAM;
    }
    pool_params.payload_offset = am_align_offset;
    pool_params.align          = am_align;
    pool_params.hdr_offset     = iface->config.rx_hdr_offset;
    pool_params.post_len       = UCT_SRQUD_GRH_LEN + iface->config.seg_size;
    pool_params.size           = iface->config.srq_size;
    pool_params.max_size       = iface->config.srq_max_size;
    pool_params.cq_len         = iface->config.rx_cq_len;
    pool_params.grow           = iface->config.rx_grow;
    pool_params.max_bufs       = iface->config.rx_max_bufs;
    status = uct_srqud_rxpool_attach(iface->md, iface->port_num,
                                     iface->config.share ==
                                     UCT_SRQUD_SHARE_SRQ,
                                     &pool_params, uct_srqud_rx_limit,
                                     &limit_arg, &iface->rx.pool);
    if (status != UCS_OK) {
        return status;
    }

    iface->stats.t_wakeup = iface->rx.pool->t_wakeup;
    return UCS_OK;
}


void uct_srqud_rx_cleanup(uct_srqud_iface_t *iface)
{
    struct ibv_wc wcs[UCT_SRQUD_RX_POLL_MAX];
    uct_srqud_recv_desc_t *desc;
    unsigned i, count;

    if (iface->rx.pool == NULL) {
        return;
    }

    /* The QP is gone: what it received and nobody polled is in the CQ and
     * the stash, and goes back to the pool, as what the async thread
     * queued does */
    do {
        count = uct_srqud_rx_poll(iface, wcs, ucs_static_array_size(wcs));
        for (i = 0; i < count; ++i) {
            uct_srqud_rx_desc_put(iface, (void*)(uintptr_t)wcs[i].wr_id);
        }
    } while (count > 0);

    ucs_queue_for_each_extract(desc, &iface->async.rx_q, queue, 1) {
        uct_srqud_rx_desc_put(iface, desc);
    }
    iface->async.queued = 0;

    uct_srqud_rx_report(iface);
    uct_srqud_rx_cache_trim(iface, 0);

    uct_srqud_rxpool_detach(iface->rx.pool, iface->rx.taken);
    iface->rx.pool = NULL;
}


unsigned uct_srqud_rx_unstash(uct_srqud_iface_t *iface, struct ibv_wc *wcs,
                              unsigned max)
{
    unsigned count = ucs_min(iface->rx.stash_count, max);

    memcpy(wcs, iface->rx.stash, count * sizeof(*wcs));
    memmove(iface->rx.stash, iface->rx.stash + count,
            (iface->rx.stash_count - count) * sizeof(*wcs));
    iface->rx.stash_count -= count;
    return count;
}


void uct_srqud_rx_purge_ep(uct_srqud_iface_t *iface, const void *ep)
{
    uct_srqud_recv_desc_t *desc;
    ucs_queue_iter_t iter;

    ucs_queue_for_each_safe(desc, iter, &iface->async.rx_q, queue) {
        if (desc->ep == ep) {
            ucs_queue_del_iter(&iface->async.rx_q, iter);
            --iface->async.queued;
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


/* Give up the packets a passive ep holds ahead of a gap (the ep goes
 * away) */
void uct_srqud_rx_reorder_release(uct_srqud_iface_t *iface,
                                  uct_srqud_reorder_t **reorder_p)
{
    if (*reorder_p != NULL) {
        uct_srqud_reorder_drain(*reorder_p, uct_srqud_rx_unhold, iface);
        ucs_free(*reorder_p);
        *reorder_p = NULL;
    }
}
