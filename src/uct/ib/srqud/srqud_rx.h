/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Receive: an interface's side of its receive pool (srqud_rxpool.h: the
 * SRQ, the buffers, the watermark and LIMIT refill), the cache of free
 * buffers, polling the receive CQ and delivering AMs.
 */

#ifndef UCT_SRQUD_RX_H_
#define UCT_SRQUD_RX_H_

#include "srqud_rxpool.h"
#include "srqud_iface.h"

#include <uct/base/uct_iface.h>
#include <ucs/debug/log.h>


/* Buffers, their first posting and the watermark (Eq. 5) */
ucs_status_t uct_srqud_rx_init(uct_srqud_iface_t *iface,
                               const uct_srqud_iface_config_t *config,
                               const uct_iface_params_t *params,
                               const struct ibv_port_attr *port_attr);

/* At close, after the QP is gone: every buffer back to the pool */
void uct_srqud_rx_cleanup(uct_srqud_iface_t *iface);


/* Repost up to @a max buffers on the SRQ (uct_srqud_rx_refill) */
void uct_srqud_rx_post(uct_srqud_iface_t *iface, unsigned max);

/* What was polled goes to the pool's and the interface's counts (the
 * interface's lock held) */
void uct_srqud_rx_report(uct_srqud_iface_t *iface);

/* Completions taken from the receive CQ in one call at most (besides the
 * stashed ones), whatever UCX_SRQUD_RX_MAX_POLL says */
#define UCT_SRQUD_RX_POLL_MAX  64


/* The completions event_arm polled while arming (uct_srqud_rx_poll) */
unsigned uct_srqud_rx_unstash(uct_srqud_iface_t *iface, struct ibv_wc *wcs,
                              unsigned max);

/* A full cache gives half of it back to the pool (uct_srqud_rx_desc_put) */
void uct_srqud_rx_cache_half(uct_srqud_iface_t *iface);

/* Drop the packets the async thread queued for an ep that goes away */
void uct_srqud_rx_purge_ep(uct_srqud_iface_t *iface, const void *ep);

/* Give up the packets a passive ep holds ahead of a gap (the ep goes
 * away) */
void uct_srqud_rx_reorder_release(uct_srqud_iface_t *iface,
                                  uct_srqud_reorder_t **reorder_p);


/* The GRH, where the receive's scatter entry starts */
static UCS_F_ALWAYS_INLINE void*
uct_srqud_rx_hdr(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc)
{
    return UCS_PTR_BYTE_OFFSET(desc, iface->config.rx_hdr_offset);
}


static UCS_F_ALWAYS_INLINE uct_srqud_neth_t*
uct_srqud_rx_neth(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc)
{
    return UCS_PTR_BYTE_OFFSET(uct_srqud_rx_hdr(iface, desc),
                               UCT_SRQUD_GRH_LEN);
}


static UCS_F_ALWAYS_INLINE void*
uct_srqud_rx_payload(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc)
{
    return UCS_PTR_BYTE_OFFSET(desc, iface->config.rx_payload_offset);
}


/* Up to @a max completions from the receive CQ into @a wcs; their count */
static UCS_F_ALWAYS_INLINE unsigned
uct_srqud_rx_poll_cq(uct_srqud_iface_t *iface, struct ibv_wc *wcs,
                     unsigned max)
{
    int ret = ibv_poll_cq(iface->recv_cq, max, wcs);

    if (ucs_unlikely(ret < 0)) {
        ucs_fatal("%s: ibv_poll_cq(recv) failed: %d", iface->md->name, ret);
    }
    return ret;
}


/* Receive completions: those event_arm or a quiet progress call stashed
 * first, then the CQ's. The
 * stash is empty on nearly every call, and a busy-polling user makes
 * millions of them: inline, no calls for nothing. */
static UCS_F_ALWAYS_INLINE unsigned
uct_srqud_rx_poll(uct_srqud_iface_t *iface, struct ibv_wc *wcs, unsigned max)
{
    unsigned count = 0;

    if (ucs_unlikely(iface->rx.stash_count > 0)) {
        count = uct_srqud_rx_unstash(iface, wcs, max);
    }

    count += uct_srqud_rx_poll_cq(iface, wcs + count,
                                  ucs_min(ucs_min(iface->config.rx_max_poll,
                                                  UCT_SRQUD_RX_POLL_MAX),
                                          max - count));

    /* Buffers leave the SRQ when the completion is polled: lent to us,
     * told to the pool with the next refill (uct_srqud_rx_report) */
    iface->rx.polled += count;
    return count;
}


/* Give a receive buffer back: to the interface's cache, under the
 * interface's lock */
static UCS_F_ALWAYS_INLINE void
uct_srqud_rx_desc_put(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc)
{
    if (ucs_unlikely(iface->rx.cache_count == UCT_SRQUD_RX_CACHE_MAX)) {
        uct_srqud_rx_cache_half(iface);
    }
    iface->rx.cache[iface->rx.cache_count++] = desc;
}


/* Does AM id @a am_id have a handler: a peer's AM to an id nobody listens
 * on is counted and dropped, with a log line a second at most */
static UCS_F_ALWAYS_INLINE int
uct_srqud_rx_am_handled(uct_srqud_iface_t *iface, uint8_t am_id)
{
    if (ucs_likely(iface->super.am[am_id].cb != iface->am_stub)) {
        return 1;
    }
    ++iface->stats.rx_no_handler;
    if (uct_srqud_iface_log_allowed(iface)) {
        ucs_diag("%s: active message id %u without a handler dropped "
                 "(%lu more since the last report)", iface->md->name,
                 am_id, iface->log_suppressed);
        iface->log_suppressed = 0;
    }
    return 0;
}


/* Invoke the AM handler for a received packet */
static UCS_F_ALWAYS_INLINE void
uct_srqud_rx_deliver_am(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc,
                        size_t payload_len)
{
    const uct_srqud_neth_t *neth = uct_srqud_rx_neth(iface, desc);
    void *payload                = uct_srqud_rx_payload(iface, desc);
    ucs_status_t status;

    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, neth->am_id,
                       payload, payload_len, "RX: AM");
    if (ucs_unlikely(!uct_srqud_rx_am_handled(iface, neth->am_id))) {
        uct_srqud_rx_desc_put(iface, desc);
        return;
    }
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


/* Repost when a batch's worth is missing (after polling): the pool's count
 * and what this interface polled since it last told the pool */
static UCS_F_ALWAYS_INLINE void uct_srqud_rx_refill(uct_srqud_iface_t *iface)
{
    unsigned missing = uct_srqud_rxpool_missing(iface->rx.pool) +
                       iface->rx.polled;

    if (ucs_unlikely(missing >= iface->config.rx_post_batch)) {
        uct_srqud_rx_post(iface, missing);
    }
}

#endif
