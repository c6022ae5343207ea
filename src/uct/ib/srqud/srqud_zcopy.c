/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Zero-copy transfers over UD: see srqud_zcopy.h for the protocol. This
 * file keeps the transfers and runs the sink's rounds; the handlers of the
 * protocol's packets are in srqud_zcopy_rx.c, the verbs in
 * srqud_zengine.c.
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
#include <arpa/inet.h>
#include <string.h>


ucs_status_t uct_srqud_zcopy_init(uct_srqud_iface_t *iface)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;

    z->chunk      = iface->config.mtu;
    z->max_ranges = ucs_min(255, (iface->config.seg_size -
                                  sizeof(uct_srqud_neth_t) -
                                  sizeof(uct_srqud_zhdr_t)) /
                                 sizeof(uct_srqud_zrange_t));
    z->next_id    = 1;
    z->served     = 0;
    ucs_list_head_init(&z->xfers);
    return uct_srqud_zengine_init(iface);
}


void uct_srqud_zcopy_cleanup(uct_srqud_iface_t *iface)
{
    uct_srqud_xfer_t *xfer, *tmp;

    /* the QPs first: after that nothing is in flight, and transfers still
     * there (a peer's, or one a closing user left) can go */
    uct_srqud_zengine_stop(iface);
    ucs_list_for_each_safe(xfer, tmp, &iface->zcopy.xfers, list) {
        xfer->job.in_flight = 0;
        xfer->pqp           = NULL;
        uct_srqud_zcopy_xfer_free(iface, xfer);
    }
    uct_srqud_zengine_cleanup(iface);
}


uct_srqud_xfer_t*
uct_srqud_zcopy_xfer_new(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                         uint8_t type, uint32_t id)
{
    uct_srqud_xfer_t *xfer = ucs_calloc(1, sizeof(*xfer), "srqud_xfer");

    if (xfer == NULL) {
        return NULL;
    }
    xfer->id            = id;
    xfer->type          = type;
    xfer->ep            = ep;
    xfer->status        = UCS_OK;
    xfer->chunk         = iface->zcopy.chunk;
    uct_srqud_chunk_wnd_init(&xfer->wnd, iface->config.zcopy_rq_depth);
    xfer->last_activity = ucs_get_time();
    xfer->job.arg       = xfer;
    ucs_list_add_tail(&iface->zcopy.xfers, &xfer->list);
    if (uct_srqud_zcopy_serves_peer(xfer)) {
        ++ep->peer.xfers;
        ++iface->zcopy.served;
    }
    return xfer;
}


uct_srqud_xfer_t*
uct_srqud_zcopy_xfer_find(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                          uint8_t type, uint32_t id)
{
    uct_srqud_xfer_t *xfer;

    ucs_list_for_each(xfer, &iface->zcopy.xfers, list) {
        if ((xfer->id == id) && (xfer->ep == ep) && (xfer->type == type)) {
            return xfer;
        }
    }
    return NULL;
}


void uct_srqud_zcopy_xfer_free(uct_srqud_iface_t *iface,
                               uct_srqud_xfer_t *xfer)
{
    ucs_assert(xfer->job.in_flight == 0);
    uct_srqud_zengine_job_dequeue(iface, &xfer->job);
    if (xfer->pqp != NULL) {
        uct_srqud_zengine_pool_put(iface, xfer->pqp, xfer->rx.count > 0);
        xfer->pqp = NULL;
    }
    uct_srqud_chunk_rx_cleanup(&xfer->rx);
    if (xfer->region != NULL) {
        uct_srqud_md_region_release(iface->md, xfer->region);
    }
    ucs_free(xfer->job.list);
    ucs_list_del(&xfer->list);
    if (uct_srqud_zcopy_serves_peer(xfer)) {
        --iface->zcopy.served;
        if (xfer->ep != NULL) {
            --xfer->ep->peer.xfers;
        }
    }
    ucs_free(xfer);
}


/* The end of an initiator's transfer: the user's completion runs once no
 * chunk send of it is in flight any more (the HCA reads the buffer) */
void uct_srqud_zcopy_finish(uct_srqud_iface_t *iface, uct_srqud_xfer_t *xfer,
                            ucs_status_t status)
{
    if (xfer->flags & UCT_SRQUD_XFER_FLAG_DONE) {
        return;
    }

    xfer->flags  |= UCT_SRQUD_XFER_FLAG_DONE;
    xfer->status  = status;
    if (xfer->flags & UCT_SRQUD_XFER_FLAG_SENDING) {
        xfer->job.count = xfer->job.pos; /* post nothing more */
        if (xfer->job.in_flight > 0) {
            return; /* the job's drained callback finishes it */
        }
    }

    if (status == UCS_OK) {
        ++iface->stats.zcopy_xfers;
    }
    if (xfer->ep != NULL) { /* NULL: the ep is gone, and its user told */
        uct_srqud_ep_op_done(iface, xfer->ep);
    }
    if (xfer->comp != NULL) {
        uct_invoke_completion(xfer->comp, status);
    }
    uct_srqud_zcopy_xfer_free(iface, xfer);
}


/* Encode the receives posted on the sink's QP as ranges after @a hdr */
size_t uct_srqud_zcopy_encode_order(uct_srqud_iface_t *iface,
                                    uct_srqud_xfer_t *xfer,
                                    uct_srqud_zhdr_t *hdr,
                                    uct_srqud_zrange_t *ranges)
{
    uct_srqud_chunk_range_t r[255];
    uint32_t order[iface->config.zcopy_rq_depth];
    uint32_t n, nr, encoded, i;

    n       = uct_srqud_chunk_rx_order(&xfer->rx, order, xfer->wnd.window);
    encoded = uct_srqud_chunk_encode(order, n, r, iface->zcopy.max_ranges, &nr);
    for (i = 0; i < nr; ++i) {
        ranges[i].start = r[i].start;
        ranges[i].count = r[i].count;
    }
    hdr->num_ranges     = nr;
    /* the source sends the encoded prefix; later receives wait for the
     * next round */
    xfer->round_posted  = encoded;
    xfer->round_done    = 0;
    xfer->round_sent    = 0;
    return nr * sizeof(*ranges);
}


/* Post receives for the next round on the sink's QP, up to its window
 * (receives left over from the last round count in it) */
static ucs_status_t uct_srqud_zcopy_post_round(uct_srqud_iface_t *iface,
                                               uct_srqud_xfer_t *xfer)
{
    uint32_t chunks[iface->config.zcopy_rq_depth];
    uint32_t n;

    if (xfer->rx.count >= xfer->wnd.window) {
        return UCS_OK;
    }
    n = uct_srqud_chunk_rx_plan(&xfer->rx, chunks,
                                xfer->wnd.window - xfer->rx.count);
    return uct_srqud_zengine_post_recvs(iface, xfer->pqp, xfer->local_addr,
                                        xfer->length, xfer->chunk, xfer->lkey,
                                        chunks, n);
}


/* The sink's request for a round: ZGET from a get's initiator (reliable),
 * ZCTS from a put's sink (unreliable answer) */
static ucs_status_t uct_srqud_zcopy_send_round(uct_srqud_iface_t *iface,
                                               uct_srqud_xfer_t *xfer)
{
    uint8_t buf[sizeof(uct_srqud_zhdr_t) +
                255 * sizeof(uct_srqud_zrange_t)];
    uct_srqud_zhdr_t *hdr = (uct_srqud_zhdr_t*)buf;
    size_t len;

    memset(hdr, 0, sizeof(*hdr));
    hdr->xfer_id     = xfer->id;
    hdr->round       = xfer->round;
    hdr->status      = UCS_OK;
    hdr->qpn         = uct_srqud_zengine_pool_qpn(xfer->pqp);
    hdr->qkey        = xfer->pqp->qkey;
    hdr->rkey        = xfer->rkey;
    hdr->remote_addr = xfer->remote_addr;
    hdr->length      = xfer->length;
    hdr->chunk       = xfer->chunk;
    len              = uct_srqud_zcopy_encode_order(iface, xfer, hdr,
                                                    (void*)(hdr + 1));

    if (xfer->type == UCT_SRQUD_XFER_GET_SINK) {
        return uct_srqud_ep_tx_request(iface, xfer->ep, UCT_SRQUD_CTL_ZGET,
                                       buf, sizeof(*hdr) + len, NULL, 0);
    }
    return uct_srqud_ep_tx_answer(iface, xfer->ep, UCT_SRQUD_CTL_ZCTS,
                                  buf, sizeof(*hdr) + len, NULL, 0);
}


/* A put's sink answers without the round machinery (errors, ZACK) */
void uct_srqud_zcopy_send_status(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 uint8_t ctl, uint32_t id, uint16_t round,
                                 ucs_status_t status)
{
    uct_srqud_zhdr_t hdr;

    memset(&hdr, 0, sizeof(hdr));
    hdr.xfer_id = id;
    hdr.round   = round;
    hdr.status  = status;
    uct_srqud_ep_tx_answer(iface, ep, ctl, &hdr, sizeof(hdr), NULL, 0);
}


/*
 * A get that zero-copy cannot finish (its chunks stopped arriving though
 * the peer answers, or its receives could not be posted): what is still
 * missing comes over the copy path, which completes the user's request.
 * The pool QP is destroyed first, with its receives, so that no late
 * chunk lands on bytes the copy path has written. Never a failure the
 * peer's liveness does not justify.
 */
void uct_srqud_zcopy_get_fallback(uct_srqud_iface_t *iface,
                                  uct_srqud_xfer_t *xfer, const char *why)
{
    uct_srqud_ep_t *ep         = xfer->ep;
    uct_completion_t *comp     = xfer->comp;
    uct_srqud_zcopy_fallback_t fallback = xfer->fallback;
    uint64_t addr = xfer->local_addr, remote = xfer->remote_addr;
    uint32_t rkey = xfer->rkey, first, last;
    uint64_t offset, end;

    if (!uct_srqud_chunk_rx_missing(&xfer->rx, &first, &last)) {
        first = last = 0; /* cannot happen: a done get has finished */
    }
    offset = (uint64_t)first * xfer->chunk;
    end    = ucs_min(xfer->length, (uint64_t)(last + 1) * xfer->chunk);
    ucs_diag("%s: zero-copy get %u: %s after %u rounds, %u of %u chunks "
             "in place: bytes %lu..%lu go the copy path", iface->md->name,
             xfer->id, why, xfer->round, xfer->rx.valid_count,
             xfer->rx.nchunks, (unsigned long)offset, (unsigned long)end);
    ++iface->stats.zcopy_stalled;

    xfer->comp = NULL;
    uct_srqud_zcopy_xfer_free(iface, xfer);
    fallback(iface, ep, 1, (void*)(uintptr_t)(addr + offset), end - offset,
             remote + offset, rkey, comp);
    uct_srqud_ep_op_done(iface, ep);
}


/* Start a round of the sink: post, then ask */
void uct_srqud_zcopy_next_round(uct_srqud_iface_t *iface,
                                uct_srqud_xfer_t *xfer)
{
    ucs_status_t status;

    ++xfer->round;
    xfer->flags &= ~UCT_SRQUD_XFER_FLAG_FIN;
    if (xfer->round > 1) {
        ++iface->stats.zcopy_rounds_extra;
    }
    status = uct_srqud_zcopy_post_round(iface, xfer);
    if (status != UCS_OK) {
        if (xfer->type == UCT_SRQUD_XFER_GET_SINK) {
            uct_srqud_zcopy_get_fallback(iface, xfer, "receives not posted");
            return;
        }
        xfer->status = status;
    }

    xfer->last_activity = ucs_get_time();
    if (uct_srqud_zcopy_send_round(iface, xfer) != UCS_OK) {
        /* a get's request waits for send resources; a put's answer is
         * asked for again by its initiator */
        if (xfer->type == UCT_SRQUD_XFER_GET_SINK) {
            xfer->flags |= UCT_SRQUD_XFER_FLAG_CTL_DUE;
        }
    }
}


/* Sink: completions of chunk receives */
static unsigned uct_srqud_zcopy_sink_poll(uct_srqud_iface_t *iface,
                                          uct_srqud_xfer_t *xfer,
                                          ucs_status_t *status_p)
{
    struct ibv_wc wcs[32];
    uint32_t imm, slot;
    size_t payload, len_imm, len_slot;
    int i, n, in_place;

    *status_p = UCS_OK;
    n = uct_srqud_zengine_poll(xfer->pqp, wcs, ucs_static_array_size(wcs));
    for (i = 0; i < n; ++i) {
        slot = xfer->rx.ring[xfer->rx.head];
        /* The chunk is judged by the receive the ring says comes next; the
         * device says which it consumed (wr_id = its chunk). Should they
         * ever differ, every chunk from here would be taken for another's
         * and its bytes left in the wrong place with the transfer
         * reported complete: fail it loudly instead. */
        if (ucs_unlikely((xfer->rx.count == 0) || (wcs[i].wr_id != slot))) {
            ucs_error("%s: zero-copy transfer %u: the receive of chunk %lu "
                      "completed where chunk %u was expected (%u posted)",
                      iface->md->name, xfer->id, (unsigned long)wcs[i].wr_id,
                      slot, xfer->rx.count);
            *status_p = UCS_ERR_IO_ERROR;
            return i;
        }
        if ((wcs[i].status != IBV_WC_SUCCESS) ||
            !(wcs[i].wc_flags & IBV_WC_WITH_IMM) ||
            (wcs[i].byte_len < UCT_SRQUD_GRH_LEN)) {
            imm     = UINT32_MAX;
            payload = 0;
        } else {
            imm     = ntohl(wcs[i].imm_data);
            payload = wcs[i].byte_len - UCT_SRQUD_GRH_LEN;
            if ((imm >> UCT_SRQUD_ZCOPY_TAG_SHIFT) != xfer->pqp->gen) {
                /* another transfer's: this receive counts as lost, its
                 * chunk is asked for again */
                ++iface->stats.zcopy_stale;
                imm     = UINT32_MAX;
                payload = 0;
            } else {
                imm &= UCT_SRQUD_ZCOPY_NUM_MASK;
            }
        }
        len_slot = uct_srqud_chunk_len(xfer->length, xfer->chunk, slot);
        len_imm  = (imm < xfer->rx.nchunks) ?
                   uct_srqud_chunk_len(xfer->length, xfer->chunk, imm) : 0;
        uct_srqud_chunk_rx_complete(&xfer->rx, imm,
                                    (payload == len_imm) &&
                                    (payload <= len_slot), &in_place);
        if (!in_place) {
            ++iface->stats.zcopy_misplaced;
        }
        ++xfer->round_done;
    }
    if (n > 0) {
        xfer->last_activity = ucs_get_time();
    }
    return n;
}


/* Sink: is the round over? Everything asked for came; or the source said
 * how many it sent (ZFIN goes after its sends completed, so the chunks are
 * on their way or in) and they came or stopped coming. Without a ZFIN the
 * source may be busy sending other transfers' chunks before ours: only a
 * long silence ends the round (a lost ZFIN). Ending rounds early makes
 * the source send chunks twice, which then land in the wrong receives. */
static int uct_srqud_zcopy_round_over(uct_srqud_iface_t *iface,
                                      uct_srqud_xfer_t *xfer, ucs_time_t now)
{
    ucs_time_t idle = uct_srqud_time_since(now, xfer->last_activity);

    if (xfer->round_done >= xfer->round_posted) {
        return 1;
    }
    if (xfer->flags & UCT_SRQUD_XFER_FLAG_FIN) {
        return (xfer->round_done >= xfer->round_sent) ||
               (idle >= iface->config.rto_min / 4);
    }
    return idle >= iface->config.rto_max;
}


/* Where a move reads or writes: a chunk's place in the user's buffer, or
 * the temporary that breaks a cycle */
static void *uct_srqud_zcopy_move_addr(const uct_srqud_xfer_t *xfer,
                                       uint32_t where, void *temp)
{
    return (where == UCT_SRQUD_CHUNK_TEMP) ? temp :
           (void*)(uintptr_t)(xfer->local_addr + (uint64_t)where * xfer->chunk);
}


/* Sink: end of a round; misplaced chunks are copied home */
static ucs_status_t uct_srqud_zcopy_settle(uct_srqud_iface_t *iface,
                                           uct_srqud_xfer_t *xfer)
{
    uct_srqud_chunk_move_t
        moves[UCT_SRQUD_CHUNK_MOVES_MAX(iface->config.zcopy_rq_depth)];
    uint8_t temp[UCT_SRQUD_MAX_MTU] UCS_V_ALIGNED(64);
    uint32_t n, i;
    size_t len;

    ucs_assert(xfer->chunk <= sizeof(temp));

    n = uct_srqud_chunk_rx_settle(&xfer->rx, moves);
    if (n == 0) {
        return UCS_OK;
    }

    /* CPU copies within the user's memory: only while it is registered
     * (the HCA's writes go to pinned pages, these go to whatever is
     * mapped at the address after a deregistration and munmap) */
    if ((xfer->region != NULL) &&
        !uct_srqud_md_region_enter(iface->md, xfer->region)) {
        return UCS_ERR_CANCELED;
    }
    for (i = 0; i < n; ++i) {
        len = uct_srqud_chunk_len(xfer->length, xfer->chunk,
                                  (moves[i].chunk == UCT_SRQUD_CHUNK_TEMP) ?
                                  moves[i].temp_chunk : moves[i].chunk);
        memcpy(uct_srqud_zcopy_move_addr(xfer, moves[i].chunk, temp),
               uct_srqud_zcopy_move_addr(xfer, moves[i].from_slot, temp),
               len);
        /* a cycle's save is not a chunk home yet: its restore counts */
        iface->stats.zcopy_moved += (moves[i].chunk != UCT_SRQUD_CHUNK_TEMP);
    }
    if (xfer->region != NULL) {
        uct_srqud_md_region_leave(iface->md);
    }
    return UCS_OK;
}


/* Sink: the transfer ends with an error; a put's initiator learns it from
 * the ZACK (and asks again on a lost one: the record answers) */
static void uct_srqud_zcopy_sink_fail(uct_srqud_iface_t *iface,
                                      uct_srqud_xfer_t *xfer,
                                      ucs_status_t status)
{
    if (xfer->type == UCT_SRQUD_XFER_GET_SINK) {
        uct_srqud_zcopy_finish(iface, xfer, status);
        return;
    }
    xfer->status = status;
    uct_srqud_zcopy_send_status(iface, xfer->ep, UCT_SRQUD_CTL_ZACK, xfer->id,
                                xfer->round, status);
    uct_srqud_zcopy_done_record(iface, xfer);
}


static unsigned uct_srqud_zcopy_sink_progress(uct_srqud_iface_t *iface,
                                              uct_srqud_xfer_t *xfer,
                                              ucs_time_t now)
{
    ucs_status_t status;
    unsigned count = uct_srqud_zcopy_sink_poll(iface, xfer, &status);

    if (ucs_unlikely(status != UCS_OK)) {
        uct_srqud_zcopy_sink_fail(iface, xfer, status);
        return count + 1;
    }
    if (xfer->flags & UCT_SRQUD_XFER_FLAG_CTL_DUE) {
        return count; /* the round's request has not gone out yet */
    }

    if (!uct_srqud_zcopy_round_over(iface, xfer, now)) {
        return count;
    }

    if (uct_srqud_zcopy_settle(iface, xfer) != UCS_OK) {
        /* the region was deregistered under the transfer */
        uct_srqud_zcopy_sink_fail(iface, xfer, UCS_ERR_CANCELED);
        return count + 1;
    }
    if (!uct_srqud_chunk_rx_done(&xfer->rx)) {
        uct_srqud_chunk_wnd_update(&xfer->wnd, xfer->round_posted,
                                   ucs_min(xfer->round_done,
                                           xfer->round_posted),
                                   !(xfer->flags & UCT_SRQUD_XFER_FLAG_FIN),
                                   iface->config.zcopy_rq_depth);
        uct_srqud_zcopy_next_round(iface, xfer);
        return count + 1;
    }

    if (xfer->type == UCT_SRQUD_XFER_GET_SINK) {
        uct_srqud_zcopy_finish(iface, xfer, UCS_OK);
    } else {
        /* a put's sink: all in place (whatever an earlier round's post
         * reported); its initiator completes on ZACK, and a repeated ZFIN
         * is answered with the same status */
        xfer->status = UCS_OK;
        uct_srqud_zcopy_send_status(iface, xfer->ep, UCT_SRQUD_CTL_ZACK,
                                    xfer->id, xfer->round, UCS_OK);
        uct_srqud_zcopy_done_record(iface, xfer);
    }
    return count + 1;
}


/* A put's sink is complete: its resources go back, the record stays a
 * while to answer a repeated ZFIN (a ZACK may be lost) */
void uct_srqud_zcopy_done_record(uct_srqud_iface_t *iface,
                                 uct_srqud_xfer_t *xfer)
{
    xfer->flags |= UCT_SRQUD_XFER_FLAG_DONE;
    if (xfer->pqp != NULL) {
        uct_srqud_zengine_pool_put(iface, xfer->pqp, xfer->rx.count > 0);
        xfer->pqp = NULL;
    }
    uct_srqud_chunk_rx_cleanup(&xfer->rx);
    if (xfer->region != NULL) {
        uct_srqud_md_region_release(iface->md, xfer->region);
        xfer->region = NULL;
    }
    xfer->last_activity = ucs_get_time();
}



/* Initiator of a put: its request for a round (ZPUT first, then ZFIN) */
ucs_status_t uct_srqud_zcopy_put_request(uct_srqud_iface_t *iface,
                                         uct_srqud_xfer_t *xfer)
{
    uct_srqud_zhdr_t hdr;
    ucs_status_t status;

    memset(&hdr, 0, sizeof(hdr));
    hdr.xfer_id     = xfer->id;
    hdr.round       = xfer->round;
    hdr.rkey        = xfer->rkey;
    hdr.remote_addr = xfer->remote_addr;
    hdr.length      = xfer->length;
    hdr.chunk       = xfer->chunk;
    hdr.count       = xfer->job.count;
    status = uct_srqud_ep_tx_request(iface, xfer->ep,
                                     (xfer->round == 0) ? UCT_SRQUD_CTL_ZPUT :
                                                            UCT_SRQUD_CTL_ZFIN,
                                       &hdr, sizeof(hdr), NULL, 0);
    if (status == UCS_OK) {
        xfer->flags        &= ~UCT_SRQUD_XFER_FLAG_CTL_DUE;
        xfer->last_activity = ucs_get_time();
    } else {
        xfer->flags |= UCT_SRQUD_XFER_FLAG_CTL_DUE;
    }
    return status;
}




ucs_status_t uct_srqud_zcopy_start(uct_srqud_iface_t *iface,
                                   uct_srqud_ep_t *ep, int is_get,
                                   void *buffer, size_t length, uint32_t lkey,
                                   uint64_t remote_addr, uint32_t rkey,
                                   uct_completion_t *comp,
                                   uct_srqud_zcopy_fallback_t fallback)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    uct_srqud_xfer_t *xfer;

    if (z->sqp == NULL) {
        return UCS_ERR_BUSY; /* zero-copy disabled (UCX_SRQUD_ZCOPY_QPS=0) */
    }
    if (uct_srqud_chunk_count(length, z->chunk) > UCT_SRQUD_ZCOPY_NUM_MASK) {
        return UCS_ERR_BUSY; /* chunk numbers have 24 bits: the copy path */
    }

    xfer = uct_srqud_zcopy_xfer_new(iface, ep,
                                    is_get ? UCT_SRQUD_XFER_GET_SINK :
                                             UCT_SRQUD_XFER_PUT_SOURCE,
                                    z->next_id++);
    if (xfer == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    uct_srqud_ep_op_start(ep);
    xfer->comp          = comp;
    xfer->local_addr    = (uintptr_t)buffer;
    xfer->length        = length;
    xfer->lkey          = lkey;
    xfer->remote_addr   = remote_addr;
    xfer->rkey          = rkey;
    xfer->progress_time = ucs_get_time();
    xfer->fallback      = fallback;

    if (!is_get) {
        uct_srqud_zcopy_put_request(iface, xfer); /* ZPUT, or when it can */
        return UCS_INPROGRESS;
    }

    xfer->pqp         = uct_srqud_zengine_pool_get(iface, xfer);
    if ((xfer->pqp == NULL) ||
        (uct_srqud_chunk_rx_init(&xfer->rx,
                                 uct_srqud_chunk_count(length, xfer->chunk),
                                 iface->config.zcopy_rq_depth) != 0)) {
        uct_srqud_ep_op_done(iface, ep);
        uct_srqud_zcopy_xfer_free(iface, xfer);
        return UCS_ERR_BUSY; /* the caller takes the copy path */
    }

    uct_srqud_zcopy_next_round(iface, xfer);
    return UCS_INPROGRESS;
}


/* Nothing of ours to the peer is unacknowledged, or an acknowledgement
 * came lately: a silent peer is left to the ep's timeout, which fails the
 * ep and its transfers */
static int uct_srqud_zcopy_peer_answers(uct_srqud_iface_t *iface,
                                        const uct_srqud_ep_t *ep,
                                        ucs_time_t now)
{
    return !(ep->flags & UCT_SRQUD_EP_FLAG_ACTIVE) ||
           (uct_srqud_time_since(now, ep->tx.progress_time) <
            iface->config.rto_max);
}


/* Transfers' rounds, timeouts and answers. @a peers_only: on the async
 * thread, only the sinks of peers' puts, which never call the user, so
 * that a target that computes (an OpenSHMEM or MPI window target) lets
 * puts into its memory complete. */
static unsigned uct_srqud_zcopy_xfers_progress(uct_srqud_iface_t *iface,
                                               int peers_only)
{
    uct_srqud_xfer_t *xfer, *tmp;
    unsigned count = 0;
    ucs_time_t now;

    if (ucs_list_is_empty(&iface->zcopy.xfers)) {
        return 0;
    }

    now = ucs_get_time();
    ucs_list_for_each_safe(xfer, tmp, &iface->zcopy.xfers, list) {
        if (peers_only && (xfer->type != UCT_SRQUD_XFER_PUT_SINK)) {
            continue;
        }
        switch (xfer->type) {
        case UCT_SRQUD_XFER_GET_SINK:
        case UCT_SRQUD_XFER_PUT_SINK:
            if (xfer->flags & UCT_SRQUD_XFER_FLAG_DONE) {
                /* a put's sink record: forgotten after a while */
                if (uct_srqud_time_since(now, xfer->last_activity) >
                    4 * iface->config.rto_max) {
                    uct_srqud_zcopy_xfer_free(iface, xfer);
                }
                break;
            }
            if ((xfer->flags & UCT_SRQUD_XFER_FLAG_CTL_DUE) &&
                (uct_srqud_zcopy_send_round(iface, xfer) == UCS_OK)) {
                xfer->flags        &= ~UCT_SRQUD_XFER_FLAG_CTL_DUE;
                xfer->last_activity = now;
            }
            if (xfer->rx.valid_count != xfer->rx_progress_count) {
                xfer->rx_progress_count = xfer->rx.valid_count;
                xfer->progress_time     = now;
            } else if ((xfer->type == UCT_SRQUD_XFER_GET_SINK) &&
                       (uct_srqud_time_since(now, xfer->progress_time) >=
                        UCT_SRQUD_ZCOPY_STALL_RTOS * iface->config.rto_max) &&
                       uct_srqud_zcopy_peer_answers(iface, xfer->ep, now)) {
                /* rounds come and go and no chunk lands, though the peer
                 * answers (a dead one fails the ep first, and its
                 * transfers with it) */
                uct_srqud_zcopy_get_fallback(iface, xfer, "no chunk landed");
                break;
            } else if ((xfer->type == UCT_SRQUD_XFER_PUT_SINK) &&
                       (uct_srqud_time_since(now, xfer->progress_time) >=
                        2 * iface->config.peer_timeout)) {
                /* a put's sink gives up its resources; the initiator's
                 * next ZFIN learns it (a get's sink never gets here
                 * without its completion: a silent peer fails the ep
                 * first, and its transfers with it) */
                uct_srqud_zcopy_xfer_free(iface, xfer);
                break;
            }
            count += uct_srqud_zcopy_sink_progress(iface, xfer, now);
            break;
        case UCT_SRQUD_XFER_PUT_SOURCE:
            if (xfer->flags & (UCT_SRQUD_XFER_FLAG_DONE |
                               UCT_SRQUD_XFER_FLAG_SENDING)) {
                break;
            }
            /* no answer to ZPUT / ZFIN within the timeout: ask again */
            if ((xfer->flags & UCT_SRQUD_XFER_FLAG_CTL_DUE) ||
                (uct_srqud_time_since(now, xfer->last_activity) >=
                 iface->config.rto_min)) {
                uct_srqud_zcopy_put_request(iface, xfer);
            }
            break;
        default:
            break;
        }
    }
    return count;
}


/* On the async thread: chunk sends of peers' gets go on and end with
 * their ZFIN, peers' puts land, while the user computes; the user's own
 * transfers complete to the user, so they wait for its progress */
unsigned uct_srqud_zcopy_async_progress(uct_srqud_iface_t *iface)
{
    unsigned count = 0;

    if (iface->zcopy.user_jobs == 0) {
        count = uct_srqud_zengine_send_completions(iface) +
                uct_srqud_zengine_send(iface);
    }
    return count + uct_srqud_zcopy_xfers_progress(iface, 1);
}


unsigned uct_srqud_zcopy_progress(uct_srqud_iface_t *iface)
{
    return uct_srqud_zengine_send_completions(iface) +
           uct_srqud_zengine_send(iface) +
           uct_srqud_zcopy_xfers_progress(iface, 0);
}


int uct_srqud_zcopy_idle(uct_srqud_iface_t *iface)
{
    uct_srqud_xfer_t *xfer;

    ucs_list_for_each(xfer, &iface->zcopy.xfers, list) {
        if (!(xfer->flags & UCT_SRQUD_XFER_FLAG_DONE)) {
            return 0;
        }
    }
    return ucs_queue_is_empty(&iface->zcopy.jobs) &&
           (iface->zcopy.marker_count == 0);
}


void uct_srqud_zcopy_ep_cleanup(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                ucs_status_t status)
{
    uct_srqud_xfer_t *xfer, *tmp;

    ucs_list_for_each_safe(xfer, tmp, &iface->zcopy.xfers, list) {
        if (xfer->ep != ep) {
            continue;
        }
        switch (xfer->type) {
        case UCT_SRQUD_XFER_GET_SINK:
        case UCT_SRQUD_XFER_PUT_SOURCE:
            if (!(xfer->flags & UCT_SRQUD_XFER_FLAG_DONE)) {
                uct_srqud_zcopy_finish(iface, xfer, status);
            }
            break;
        case UCT_SRQUD_XFER_GET_SOURCE:
            /* stop posting; the drained callback frees it */
            xfer->job.count = xfer->job.pos;
            if (xfer->job.in_flight == 0) {
                uct_srqud_zcopy_xfer_free(iface, xfer);
            }
            break;
        default:
            uct_srqud_zcopy_xfer_free(iface, xfer);
            break;
        }
    }
}


void uct_srqud_zcopy_ep_release(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    uct_srqud_xfer_t *xfer, *tmp;

    /* uct_srqud_zcopy_ep_cleanup() ended them all; what is left waits for
     * its chunk sends to complete. A transfer of the user's completes now,
     * as UCX's transports complete a destroyed ep's operations, and the
     * user may then deregister and free the buffer: so the chunk QP is
     * reset, and the device reads none of it any more (other transfers
     * lose the chunks they had posted, which their sinks ask for again).
     * The drained callbacks then finish the transfers, in the user's
     * context: an initiator's ep is the user's, destroyed or failed from
     * its calls. */
    ucs_list_for_each(xfer, &iface->zcopy.xfers, list) {
        if ((xfer->ep == ep) && !uct_srqud_zcopy_serves_peer(xfer)) {
            uct_srqud_zengine_recover(iface, 0);
            break;
        }
    }

    /* a peer's transfers hold their region until their sends drain, and
     * free themselves then, without the ep */
    ucs_list_for_each_safe(xfer, tmp, &iface->zcopy.xfers, list) {
        if (xfer->ep == ep) {
            ucs_assert(uct_srqud_zcopy_serves_peer(xfer) &&
                       (xfer->job.in_flight > 0));
            if (uct_srqud_zcopy_serves_peer(xfer)) {
                --ep->peer.xfers;
            }
            xfer->ep = NULL;
        }
    }
}
