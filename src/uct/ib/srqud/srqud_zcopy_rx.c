/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The handlers of the zero-copy protocol's packets (one per opcode and
 * side, routed by srqud_proto.c), and what a source does when its chunks
 * are out.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_ep_flush.h"
#include "srqud_ep_tx.h"
#include "srqud_zcopy.h"
#include "srqud_ep.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>


/* Chunks of one request the source accepts (sanity bound) */
#define UCT_SRQUD_ZCOPY_MAX_LIST      65536


/* The chunk list of a request: ranges, each within a transfer of
 * @a length bytes cut in @a chunk-byte pieces. The length is this side's
 * own where it has one (a put's source): a peer's packet names chunks,
 * never how far they reach. */
static uint32_t *uct_srqud_zcopy_rx_decode(const uct_srqud_zhdr_t *hdr,
                                           size_t pkt_len, uint64_t length,
                                           uint32_t chunk, uint32_t *count_p)
{
    const uct_srqud_zrange_t *r = (const void*)(hdr + 1);
    uct_srqud_chunk_range_t ranges[255];
    uint32_t i, total, *list;

    if ((chunk == 0) || (length == 0) ||
        (uct_srqud_chunk_count(length, chunk) > UCT_SRQUD_ZCOPY_NUM_MASK) ||
        (pkt_len < sizeof(*hdr) + hdr->num_ranges * sizeof(*r))) {
        return NULL;
    }

    for (i = 0; i < hdr->num_ranges; ++i) {
        ranges[i].start = r[i].start;
        ranges[i].count = r[i].count;
    }
    total = uct_srqud_chunk_ranges_check(ranges, hdr->num_ranges,
                                         uct_srqud_chunk_count(length, chunk),
                                         UCT_SRQUD_ZCOPY_MAX_LIST);
    if (total == 0) {
        return NULL;
    }

    list = ucs_malloc(total * sizeof(*list), "srqud_zlist");
    if (list == NULL) {
        return NULL;
    }
    uct_srqud_chunk_ranges_expand(ranges, hdr->num_ranges, list);
    *count_p = total;
    return list;
}


/* Responder of a get, when its chunk sends completed (they are out, and
 * the HCA is done with the memory): ZFIN, and the region is released */
static void uct_srqud_zcopy_rx_get_drained(uct_srqud_iface_t *iface,
                                           uct_srqud_zsend_job_t *job)
{
    uct_srqud_xfer_t *xfer = job->arg;
    uct_srqud_zhdr_t hdr;

    if (xfer->ep != NULL) {
        memset(&hdr, 0, sizeof(hdr));
        hdr.xfer_id = xfer->id;
        hdr.round   = xfer->round;
        hdr.status  = UCS_OK;
        hdr.count   = job->count;
        uct_srqud_ep_tx_answer(iface, xfer->ep, UCT_SRQUD_CTL_ZFIN, &hdr,
                               sizeof(hdr), NULL, 0);
    }
    uct_srqud_zcopy_xfer_free(iface, xfer);
}


/*
 * The sink asks for a new round of a get while chunks of its last one may
 * still wait in our send queue (it ended that round by its timer, which
 * may run out while its request is still being resent). Those would land
 * in the new round's receives, all out of place, and the round after
 * would start behind again: they are not sent.
 */
static void uct_srqud_zcopy_rx_supersede(uct_srqud_iface_t *iface,
                                         uct_srqud_ep_t *ep,
                                         const uct_srqud_zhdr_t *hdr)
{
    uct_srqud_xfer_t *old, *tmp;

    /* earlier rounds cut short still draining are in the list too */
    ucs_list_for_each_safe(old, tmp, &iface->zcopy.xfers, list) {
        if ((old->type != UCT_SRQUD_XFER_GET_SOURCE) || (old->ep != ep) ||
            (old->id != hdr->xfer_id)) {
            continue;
        }
        iface->stats.zcopy_superseded += old->job.count - old->job.pos;
        old->job.count = old->job.pos;
        uct_srqud_zengine_job_dequeue(iface, &old->job);
        if (old->job.in_flight == 0) {
            uct_srqud_zcopy_xfer_free(iface, old);
        }
        /* else its last sends' completion frees it (with a ZFIN of its
         * round, which the sink ignores) */
    }
}


void uct_srqud_zcopy_rx_zget(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             const void *payload, size_t length)
{
    const uct_srqud_zhdr_t *hdr = payload;
    uct_srqud_xfer_t *xfer;
    uct_srqud_zhdr_t fin;
    ucs_status_t status;
    uint32_t count;
    uint32_t *list;

    memset(&fin, 0, sizeof(fin));
    fin.xfer_id = hdr->xfer_id;
    fin.round   = hdr->round;

    if (iface->zcopy.sqp == NULL) {
        status = UCS_ERR_UNSUPPORTED;
        goto err;
    }
    if ((hdr->chunk < UCT_SRQUD_ZCOPY_MIN_CHUNK) ||
        (hdr->chunk > iface->zcopy.chunk)) {
        status = UCS_ERR_INVALID_PARAM;
        goto err_refused;
    }
    list = uct_srqud_zcopy_rx_decode(hdr, length, hdr->length, hdr->chunk,
                                     &count);
    if (list == NULL) {
        status = UCS_ERR_INVALID_PARAM;
        goto err_refused;
    }

    uct_srqud_zcopy_rx_supersede(iface, ep, hdr);
    if (!uct_srqud_zcopy_may_serve(iface, ep)) {
        /* a peer's reads beyond its share: it takes the copy path */
        ucs_free(list);
        status = UCS_ERR_BUSY;
        goto err_refused;
    }
    xfer = uct_srqud_zcopy_xfer_new(iface, ep, UCT_SRQUD_XFER_GET_SOURCE,
                                    hdr->xfer_id);
    if (xfer == NULL) {
        ucs_free(list);
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    /* the peer names our memory: it must be registered for remote reads */
    status = uct_srqud_md_region_acquire(iface->md, hdr->rkey,
                                         hdr->remote_addr, hdr->length,
                                         UCT_MD_MEM_ACCESS_REMOTE_GET,
                                         &xfer->region);
    if (status != UCS_OK) {
        ucs_free(list);
        uct_srqud_zcopy_xfer_free(iface, xfer);
        goto err;
    }

    xfer->round        = hdr->round;
    xfer->flags       |= UCT_SRQUD_XFER_FLAG_SENDING;
    xfer->job.ah       = ep->ah;
    xfer->job.dest_qpn = hdr->qpn & UCT_SRQUD_ZCOPY_NUM_MASK;
    xfer->job.tag      = hdr->qpn >> UCT_SRQUD_ZCOPY_TAG_SHIFT;
    xfer->job.qkey     = hdr->qkey;
    xfer->job.lkey     = xfer->region->mr->lkey;
    xfer->job.base     = hdr->remote_addr;
    xfer->job.length   = hdr->length;
    xfer->job.chunk    = hdr->chunk;
    xfer->job.list     = list;
    xfer->job.count    = count;
    xfer->job.posted   = NULL;
    xfer->job.drained  = uct_srqud_zcopy_rx_get_drained;
    uct_srqud_zengine_submit(iface, &xfer->job);
    uct_srqud_zengine_send(iface);
    return;

err_refused:
    ++iface->stats.zcopy_refused;
err:
    fin.status = status;
    uct_srqud_ep_tx_answer(iface, ep, UCT_SRQUD_CTL_ZFIN, &fin, sizeof(fin),
                           NULL, 0);
}


/* A put's sink repeats its current answer */
static void uct_srqud_zcopy_rx_repeat(uct_srqud_iface_t *iface,
                                      uct_srqud_xfer_t *xfer)
{
    uint8_t buf[sizeof(uct_srqud_zhdr_t) +
                255 * sizeof(uct_srqud_zrange_t)];
    uct_srqud_zhdr_t *hdr = (uct_srqud_zhdr_t*)buf;
    uint32_t posted = xfer->round_posted, done = xfer->round_done;
    uint32_t sent   = xfer->round_sent;
    size_t len;

    if (xfer->flags & UCT_SRQUD_XFER_FLAG_DONE) {
        uct_srqud_zcopy_send_status(iface, xfer->ep, UCT_SRQUD_CTL_ZACK,
                                    xfer->id, xfer->round, xfer->status);
        return;
    }

    memset(hdr, 0, sizeof(*hdr));
    hdr->xfer_id = xfer->id;
    hdr->round   = xfer->round;
    hdr->status  = UCS_OK;
    hdr->qpn     = uct_srqud_zengine_pool_qpn(xfer->pqp);
    hdr->qkey    = xfer->pqp->qkey;
    hdr->length  = xfer->length;
    hdr->chunk   = xfer->chunk;
    len          = uct_srqud_zcopy_encode_order(iface, xfer, hdr,
                                                (void*)(hdr + 1));
    /* a repeat: the round's counts stay */
    xfer->round_posted = posted;
    xfer->round_done   = done;
    xfer->round_sent   = sent;
    uct_srqud_ep_tx_answer(iface, xfer->ep, UCT_SRQUD_CTL_ZCTS, buf,
                           sizeof(*hdr) + len, NULL, 0);
}


void uct_srqud_zcopy_rx_zput(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             const void *payload, size_t length)
{
    const uct_srqud_zhdr_t *hdr = payload;
    uct_srqud_xfer_t *xfer;
    ucs_status_t status;
    uint32_t chunk;

    xfer = uct_srqud_zcopy_xfer_find(iface, ep, UCT_SRQUD_XFER_PUT_SINK,
                                     hdr->xfer_id);
    if (xfer != NULL) {
        uct_srqud_zcopy_rx_repeat(iface, xfer); /* asked again */
        return;
    }

    chunk = ucs_min(hdr->chunk, iface->zcopy.chunk);
    if (iface->zcopy.pool == NULL) {
        status = UCS_ERR_BUSY;
        goto err;
    }
    /* the bitmaps of the chunks are the sink's memory: a chunk of a byte
     * would make them an eighth of the transfer */
    if ((chunk < UCT_SRQUD_ZCOPY_MIN_CHUNK) || (hdr->length == 0) ||
        (uct_srqud_chunk_count(hdr->length, chunk) >
         UCT_SRQUD_ZCOPY_NUM_MASK)) {
        ++iface->stats.zcopy_refused;
        status = UCS_ERR_INVALID_PARAM;
        goto err;
    }
    if (!uct_srqud_zcopy_may_serve(iface, ep)) {
        ++iface->stats.zcopy_refused;
        status = UCS_ERR_BUSY; /* the initiator takes the copy path */
        goto err;
    }

    xfer = uct_srqud_zcopy_xfer_new(iface, ep, UCT_SRQUD_XFER_PUT_SINK,
                                    hdr->xfer_id);
    if (xfer == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    /* the peer names our memory: it must be registered for remote writes */
    status = uct_srqud_md_region_acquire(iface->md, hdr->rkey,
                                         hdr->remote_addr, hdr->length,
                                         UCT_MD_MEM_ACCESS_REMOTE_PUT,
                                         &xfer->region);
    if (status != UCS_OK) {
        uct_srqud_zcopy_xfer_free(iface, xfer);
        goto err;
    }

    xfer->local_addr = hdr->remote_addr;
    xfer->length     = hdr->length;
    xfer->lkey       = xfer->region->mr->lkey;
    xfer->chunk      = chunk;
    xfer->pqp        = uct_srqud_zengine_pool_get(iface, xfer);
    if ((xfer->pqp == NULL) ||
        (uct_srqud_chunk_rx_init(&xfer->rx,
                                 uct_srqud_chunk_count(xfer->length, chunk),
                                 iface->config.zcopy_rq_depth) != 0)) {
        /* no pool QP free: the initiator takes the copy path */
        uct_srqud_zcopy_xfer_free(iface, xfer);
        status = UCS_ERR_BUSY;
        goto err;
    }

    xfer->progress_time = ucs_get_time();
    uct_srqud_zcopy_next_round(iface, xfer);
    return;

err:
    uct_srqud_zcopy_send_status(iface, ep, UCT_SRQUD_CTL_ZCTS, hdr->xfer_id, 0,
                                status);
}


/* Initiator of a put, when its chunk sends completed: ZFIN (see
 * uct_srqud_zcopy_round_over()), or the end the transfer waited for */
static void uct_srqud_zcopy_rx_put_drained(uct_srqud_iface_t *iface,
                                           uct_srqud_zsend_job_t *job)
{
    uct_srqud_xfer_t *xfer = job->arg;

    --iface->zcopy.user_jobs;
    xfer->flags &= ~UCT_SRQUD_XFER_FLAG_SENDING;
    if (xfer->flags & UCT_SRQUD_XFER_FLAG_DONE) {
        xfer->flags &= ~UCT_SRQUD_XFER_FLAG_DONE;
        uct_srqud_zcopy_finish(iface, xfer, xfer->status);
        return;
    }
    uct_srqud_zcopy_put_request(iface, xfer); /* ZFIN */
}


/* ZFIN to a put's sink: its source sent a round */
void uct_srqud_zcopy_rx_zfin_put(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 const void *payload, size_t length)
{
    const uct_srqud_zhdr_t *hdr = payload;
    uct_srqud_xfer_t *xfer;

    xfer = uct_srqud_zcopy_xfer_find(iface, ep, UCT_SRQUD_XFER_PUT_SINK,
                                     hdr->xfer_id);
    if (xfer == NULL) {
        /* finished long ago, or never started */
        uct_srqud_zcopy_send_status(iface, ep, UCT_SRQUD_CTL_ZACK,
                                    hdr->xfer_id, hdr->round, UCS_ERR_NO_ELEM);
    } else if ((xfer->flags & UCT_SRQUD_XFER_FLAG_DONE) ||
               (hdr->round != xfer->round)) {
        uct_srqud_zcopy_rx_repeat(iface, xfer);
    } else {
        xfer->flags        |= UCT_SRQUD_XFER_FLAG_FIN;
        xfer->round_sent    = hdr->count;
        xfer->last_activity = ucs_get_time();
    }
}


/* ZFIN to a get's sink: its source sent a round, or refused */
void uct_srqud_zcopy_rx_zfin_get(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 const void *payload, size_t length)
{
    const uct_srqud_zhdr_t *hdr = payload;
    uct_srqud_xfer_t *xfer;
    ucs_status_t status;

    xfer = uct_srqud_zcopy_xfer_find(iface, ep, UCT_SRQUD_XFER_GET_SINK,
                                     hdr->xfer_id);
    if ((xfer == NULL) || (xfer->flags & UCT_SRQUD_XFER_FLAG_DONE) ||
        (hdr->round != xfer->round)) {
        return;
    }
    status = uct_srqud_ep_peer_status(iface, hdr->status);
    if (status == UCS_ERR_BUSY) {
        /* the source serves enough of our reads already */
        uct_srqud_zcopy_get_fallback(iface, xfer, "the peer is busy");
        return;
    } else if (status != UCS_OK) {
        ucs_debug("%s: get %u refused by the peer: %s", iface->md->name,
                  xfer->id, ucs_status_string(status));
        uct_srqud_zcopy_finish(iface, xfer, status);
        return;
    }
    xfer->flags        |= UCT_SRQUD_XFER_FLAG_FIN;
    xfer->round_sent    = hdr->count;
    xfer->last_activity = ucs_get_time();
}


/* The sink has no pool QP free: the put goes the copy path (never a
 * failure), which the caller of uct_srqud_zcopy_start() provided */
static void uct_srqud_zcopy_rx_zcts_busy(uct_srqud_iface_t *iface,
                                         uct_srqud_ep_t *ep,
                                         uct_srqud_xfer_t *xfer)
{
    uct_completion_t *comp = xfer->comp;

    xfer->comp = NULL;
    xfer->fallback(iface, ep, 0, (void*)(uintptr_t)xfer->local_addr,
                   xfer->length, xfer->remote_addr, xfer->rkey, comp);
    uct_srqud_ep_op_done(iface, ep);
    uct_srqud_zcopy_xfer_free(iface, xfer);
}


/* ZCTS to a put's source: the sink posted a round, send these chunks */
void uct_srqud_zcopy_rx_zcts(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             const void *payload, size_t length)
{
    const uct_srqud_zhdr_t *hdr = payload;
    uct_srqud_xfer_t *xfer;
    uint32_t *list, count;
    ucs_status_t status;

    xfer = uct_srqud_zcopy_xfer_find(iface, ep, UCT_SRQUD_XFER_PUT_SOURCE,
                                     hdr->xfer_id);
    if ((xfer == NULL) || (xfer->flags & UCT_SRQUD_XFER_FLAG_DONE)) {
        return;
    }
    xfer->last_activity = ucs_get_time(); /* the sink answers */
    if (xfer->flags & UCT_SRQUD_XFER_FLAG_SENDING) {
        /* a round is going out: its chunk sends read the user's buffer
         * until they complete, and nothing the sink says ends it before */
        if (hdr->round > xfer->round) {
            ++iface->stats.zcopy_refused;
        }
        return;
    }
    status = uct_srqud_ep_peer_status(iface, hdr->status);
    if (status == UCS_ERR_BUSY) {
        /* only the first answer may send the put the copy path */
        if (xfer->round != 0) {
            ++iface->stats.zcopy_refused;
            return;
        }
        uct_srqud_zcopy_rx_zcts_busy(iface, ep, xfer);
        return;
    } else if (status != UCS_OK) {
        uct_srqud_zcopy_finish(iface, xfer, status);
        return;
    }
    if (hdr->round <= xfer->round) {
        return; /* a repeat */
    }
    /* the chunks the sink names are of this put: its length and a chunk
     * no larger than the one offered, whatever the packet says */
    list = NULL;
    if ((hdr->length == xfer->length) &&
        (hdr->chunk >= UCT_SRQUD_ZCOPY_MIN_CHUNK) &&
        (hdr->chunk <= xfer->chunk)) {
        list = uct_srqud_zcopy_rx_decode(hdr, length, xfer->length,
                                         hdr->chunk, &count);
    }
    if (list == NULL) {
        ++iface->stats.zcopy_refused;
        uct_srqud_zcopy_finish(iface, xfer, UCS_ERR_INVALID_PARAM);
        return;
    }
    ucs_free(xfer->job.list);
    xfer->round        = hdr->round;
    xfer->chunk        = hdr->chunk;
    xfer->flags       |= UCT_SRQUD_XFER_FLAG_SENDING;
    xfer->job.ah       = ep->ah;
    xfer->job.dest_qpn = hdr->qpn & UCT_SRQUD_ZCOPY_NUM_MASK;
    xfer->job.tag      = hdr->qpn >> UCT_SRQUD_ZCOPY_TAG_SHIFT;
    xfer->job.qkey     = hdr->qkey;
    xfer->job.lkey     = xfer->lkey;
    xfer->job.base     = xfer->local_addr;
    xfer->job.length   = xfer->length;
    xfer->job.chunk    = xfer->chunk;
    xfer->job.list     = list;
    xfer->job.count    = count;
    xfer->job.posted   = NULL;
    xfer->job.drained  = uct_srqud_zcopy_rx_put_drained;
    ++iface->zcopy.user_jobs;
    uct_srqud_zengine_submit(iface, &xfer->job);
    uct_srqud_zengine_send(iface);
}


/* ZACK to a put's source: the sink has it all, or failed */
void uct_srqud_zcopy_rx_zack(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             const void *payload, size_t length)
{
    const uct_srqud_zhdr_t *hdr = payload;
    uct_srqud_xfer_t *xfer;

    xfer = uct_srqud_zcopy_xfer_find(iface, ep, UCT_SRQUD_XFER_PUT_SOURCE,
                                     hdr->xfer_id);
    if ((xfer != NULL) && !(xfer->flags & UCT_SRQUD_XFER_FLAG_DONE)) {
        uct_srqud_zcopy_finish(iface, xfer,
                               uct_srqud_ep_peer_status(iface, hdr->status));
    }
}
