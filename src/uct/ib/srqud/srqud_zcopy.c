/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Zero-copy transfers over UD: see srqud_zcopy.h for the protocol.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_zcopy.h"
#include "srqud_ep.h"
#include "srqud_rma.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <arpa/inet.h>
#include <string.h>


/* Chunk sends between two signaled ones: completions free send slots */
#define UCT_SRQUD_ZSEND_SIGNAL_EVERY  64

/* Chunks of one request the source accepts (sanity bound) */
#define UCT_SRQUD_ZCOPY_MAX_LIST      65536

/*
 * A UD QP number has 24 bits. The sink sends its pool QP as (generation <<
 * 24 | QP number), and the source puts the generation in the top byte of
 * every chunk's immediate (the chunk number in the low 24): a chunk of an
 * earlier transfer that served the same pool QP (a late duplicate, a round
 * the sink ended early) would otherwise land in the next transfer's
 * receives as one of its own chunks, and its bytes in the wrong buffer.
 */
#define UCT_SRQUD_ZCOPY_TAG_SHIFT     24
#define UCT_SRQUD_ZCOPY_NUM_MASK      UCS_MASK(UCT_SRQUD_ZCOPY_TAG_SHIFT)


/* ------------------------------------------------------------------------
 * QPs
 */

static ucs_status_t
uct_srqud_zcopy_qp_to_rts(uct_srqud_iface_t *iface, struct ibv_qp *qp)
{
    struct ibv_qp_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state   = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num   = iface->port_num;
    attr.qkey       = UCT_SRQUD_QKEY;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                 IBV_QP_PORT | IBV_QP_QKEY)) {
        goto err;
    }
    attr.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE)) {
        goto err;
    }
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn   = 0;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        goto err;
    }
    return UCS_OK;

err:
    ucs_error("%s: ibv_modify_qp(zero-copy QP) failed: %m", iface->md->name);
    return UCS_ERR_IO_ERROR;
}


static struct ibv_qp*
uct_srqud_zcopy_create_qp(uct_srqud_iface_t *iface, struct ibv_cq *cq,
                          unsigned send_wr, unsigned recv_wr)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp *qp;

    memset(&init, 0, sizeof(init));
    init.qp_type          = IBV_QPT_UD;
    init.send_cq          = cq;
    init.recv_cq          = cq;
    init.cap.max_send_wr  = send_wr;
    init.cap.max_recv_wr  = recv_wr;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 3; /* GRH scratch, the chunk, tail scratch */
    qp = ibv_create_qp(iface->md->pd, &init);
    if (qp == NULL) {
        ucs_error("%s: ibv_create_qp(zero-copy, %u/%u) failed: %m",
                  iface->md->name, send_wr, recv_wr);
        return NULL;
    }

    if (uct_srqud_zcopy_qp_to_rts(iface, qp) != UCS_OK) {
        ibv_destroy_qp(qp);
        return NULL;
    }
    return qp;
}


ucs_status_t uct_srqud_zcopy_init(uct_srqud_iface_t *iface)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;

    z->chunk      = iface->config.mtu;
    z->max_ranges = ucs_min(255, (iface->config.seg_size -
                                  sizeof(uct_srqud_neth_t) -
                                  sizeof(uct_srqud_zhdr_t)) /
                                 sizeof(uct_srqud_zrange_t));
    ucs_queue_head_init(&z->jobs);
    ucs_list_head_init(&z->pool_free);
    ucs_list_head_init(&z->xfers);
    z->next_id      = 1;
    z->pool_created = 0;
    z->user_jobs    = 0;
    z->sqp          = NULL;
    z->scq          = NULL;
    z->scratch      = NULL;
    z->scratch_mr   = NULL;
    z->markers      = NULL;

    if (z->pool_size == 0) {
        return UCS_OK; /* zero-copy disabled: the copy path only */
    }

    z->pool = ucs_calloc(z->pool_size, sizeof(*z->pool), "srqud_zcopy_pool");
    z->markers = ucs_calloc(z->sq_depth, sizeof(*z->markers),
                            "srqud_zcopy_markers");
    /* every receive writes the GRH here, and the last chunk's spare room */
    z->scratch = ucs_malloc(UCT_SRQUD_GRH_LEN + z->chunk, "srqud_zscratch");
    if ((z->pool == NULL) || (z->markers == NULL) || (z->scratch == NULL)) {
        goto err;
    }

    z->scratch_mr = ibv_reg_mr(iface->md->pd, z->scratch,
                               UCT_SRQUD_GRH_LEN + z->chunk,
                               IBV_ACCESS_LOCAL_WRITE);
    if (z->scratch_mr == NULL) {
        ucs_error("%s: ibv_reg_mr(zero-copy scratch) failed: %m",
                  iface->md->name);
        goto err;
    }

    z->scq = ibv_create_cq(iface->md->ctx, z->sq_depth, NULL, NULL, 0);
    if (z->scq == NULL) {
        ucs_error("%s: ibv_create_cq(zero-copy send) failed: %m",
                  iface->md->name);
        goto err;
    }

    z->sqp = uct_srqud_zcopy_create_qp(iface, z->scq, z->sq_depth, 1);
    if (z->sqp == NULL) {
        goto err;
    }
    z->sq_available = z->sq_depth;
    z->marker_head  = 0;
    z->marker_count = 0;
    return UCS_OK;

err:
    uct_srqud_zcopy_cleanup(iface);
    return UCS_ERR_IO_ERROR;
}


static void uct_srqud_zcopy_pool_destroy(uct_srqud_pool_qp_t *pqp)
{
    ibv_destroy_qp(pqp->qp);
    ibv_destroy_cq(pqp->cq);
    pqp->qp = NULL;
    pqp->cq = NULL;
}


/* A pool QP for a sink, created on first use; NULL if all are busy */
static uct_srqud_pool_qp_t*
uct_srqud_zcopy_pool_get(uct_srqud_iface_t *iface, uct_srqud_xfer_t *xfer)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    uct_srqud_pool_qp_t *pqp = NULL;
    unsigned i;

    if (!ucs_list_is_empty(&z->pool_free)) {
        pqp = ucs_list_extract_head(&z->pool_free, uct_srqud_pool_qp_t, list);
    } else {
        for (i = 0; i < z->pool_size; ++i) {
            if ((z->pool[i].qp == NULL) && (z->pool[i].xfer == NULL)) {
                pqp = &z->pool[i];
                break;
            }
        }
        if (pqp == NULL) {
            return NULL;
        }
        pqp->cq = ibv_create_cq(iface->md->ctx, z->rq_depth, NULL, NULL, 0);
        if (pqp->cq == NULL) {
            return NULL;
        }
        pqp->qp = uct_srqud_zcopy_create_qp(iface, pqp->cq, 1, z->rq_depth);
        if (pqp->qp == NULL) {
            ibv_destroy_cq(pqp->cq);
            pqp->cq = NULL;
            return NULL;
        }
        ++z->pool_created;
    }

    pqp->xfer = xfer;
    ++pqp->gen;
    return pqp;
}


/* Back to the pool. Receives still posted name the transfer's buffer,
 * which is about to be returned to its user: such a QP is destroyed (a
 * new one is created when needed) */
static void uct_srqud_zcopy_pool_put(uct_srqud_iface_t *iface,
                                     uct_srqud_pool_qp_t *pqp, int posted)
{
    pqp->xfer = NULL;
    if (posted) {
        uct_srqud_zcopy_pool_destroy(pqp);
        --iface->zcopy.pool_created;
        return;
    }
    ucs_list_add_tail(&iface->zcopy.pool_free, &pqp->list);
}


void uct_srqud_zcopy_cleanup(uct_srqud_iface_t *iface)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    uct_srqud_xfer_t *xfer, *tmp;
    unsigned i;

    /* the QPs first: after that nothing is in flight, and transfers still
     * there (a peer's, or one a closing user left) can go */
    if (z->sqp != NULL) {
        ibv_destroy_qp(z->sqp);
        z->sqp = NULL;
    }
    if (z->pool != NULL) {
        for (i = 0; i < z->pool_size; ++i) {
            if (z->pool[i].qp != NULL) {
                uct_srqud_zcopy_pool_destroy(&z->pool[i]);
            }
            z->pool[i].xfer = NULL;
        }
    }
    z->user_jobs = 0;
    ucs_list_for_each_safe(xfer, tmp, &z->xfers, list) {
        xfer->job.in_flight = 0;
        xfer->pqp           = NULL;
        uct_srqud_zcopy_xfer_free(iface, xfer);
    }
    z->marker_count = 0;

    if (z->scq != NULL) {
        ibv_destroy_cq(z->scq);
    }
    if (z->scratch_mr != NULL) {
        ibv_dereg_mr(z->scratch_mr);
    }
    ucs_free(z->scratch);
    ucs_free(z->markers);
    ucs_free(z->pool);
    z->pool    = NULL;
    z->markers = NULL;
    z->scratch = NULL;
    z->sqp     = NULL;
    z->scq     = NULL;
}


/* ------------------------------------------------------------------------
 * Sending chunks
 */

static size_t uct_srqud_zcopy_chunk_len(uint64_t length, uint32_t chunk,
                                        uint32_t n)
{
    return ucs_min((uint64_t)chunk, length - (uint64_t)n * chunk);
}


static uint32_t uct_srqud_zcopy_nchunks(uint64_t length, uint32_t chunk)
{
    return (length + chunk - 1) / chunk;
}


static void uct_srqud_zcopy_job_submit(uct_srqud_iface_t *iface,
                                       uct_srqud_zsend_job_t *job)
{
    job->pos        = 0;
    job->unsignaled = 0;
    job->in_flight  = 0;
    job->queued     = 1;
    ucs_queue_push(&iface->zcopy.jobs, &job->queue);
}


/* Post what fits on the chunk send QP, job after job in order */
static unsigned uct_srqud_zcopy_send_progress(uct_srqud_iface_t *iface)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    struct ibv_send_wr wr, *bad_wr;
    uct_srqud_zsend_job_t *job;
    struct ibv_sge sge;
    unsigned count = 0;
    uint32_t n, qpn;
    int signal, ret;

    while (!ucs_queue_is_empty(&z->jobs) && (z->sq_available > 0)) {
        job = ucs_queue_head_elem_non_empty(&z->jobs, uct_srqud_zsend_job_t,
                                            queue);
        while ((job->pos < job->count) && (z->sq_available > 0)) {
            n      = job->list[job->pos];
            signal = (job->pos + 1 == job->count) ||
                     (job->unsignaled + 1 >= UCT_SRQUD_ZSEND_SIGNAL_EVERY) ||
                     (z->sq_available == 1);

            /* fault injection (tests): lost on the wire; sent to a QP
             * number that does not exist, so the send still completes */
            qpn = job->dest_qpn;
            if (ucs_unlikely(iface->config.fault_drop != 0) &&
                (uct_srqud_iface_fault_rand(iface) <
                 iface->config.fault_drop)) {
                qpn = 0xffffff;
                ++iface->stats.fault_dropped;
            }

            sge.addr              = job->base + (uint64_t)n * job->chunk;
            sge.length            = uct_srqud_zcopy_chunk_len(job->length,
                                                              job->chunk, n);
            sge.lkey              = job->lkey;
            memset(&wr, 0, sizeof(wr));
            wr.wr_id              = (uintptr_t)job;
            wr.sg_list            = &sge;
            wr.num_sge            = 1;
            wr.opcode             = IBV_WR_SEND_WITH_IMM;
            wr.imm_data           = htonl(((uint32_t)job->tag <<
                                           UCT_SRQUD_ZCOPY_TAG_SHIFT) | n);
            wr.send_flags         = signal ? IBV_SEND_SIGNALED : 0;
            wr.wr.ud.ah           = job->ah;
            wr.wr.ud.remote_qpn   = qpn;
            wr.wr.ud.remote_qkey  = UCT_SRQUD_QKEY;
            ret = ibv_post_send(z->sqp, &wr, &bad_wr);
            if (ret != 0) {
                ucs_error("%s: ibv_post_send(chunk) failed: %s",
                          iface->md->name, strerror(ret));
                job->count = job->pos; /* give up the rest: resent later */
                break;
            }

            --z->sq_available;
            ++job->pos;
            ++job->in_flight;
            ++job->unsignaled;
            ++count;
            if (signal) {
                /* this completion frees the slots of all unsignaled ones
                 * before it: completions come in posting order */
                z->markers[(z->marker_head + z->marker_count) % z->sq_depth] =
                        (uct_srqud_zmarker_t){job, job->unsignaled};
                ++z->marker_count;
                job->unsignaled = 0;
            }
        }

        if (job->pos < job->count) {
            break; /* send queue full */
        }

        ucs_queue_pull_non_empty(&z->jobs);
        job->queued                     = 0;
        iface->stats.zcopy_chunks_sent += job->count;
        if (job->posted != NULL) {
            job->posted(iface, job);
        }
    }
    return count;
}


static unsigned uct_srqud_zcopy_send_completions(uct_srqud_iface_t *iface)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    uct_srqud_zsend_job_t *job;
    uct_srqud_zmarker_t *m;
    struct ibv_wc wcs[16];
    int i, n;

    if (z->marker_count == 0) {
        return 0;
    }

    n = ibv_poll_cq(z->scq, ucs_static_array_size(wcs), wcs);
    for (i = 0; i < n; ++i) {
        if (wcs[i].status != IBV_WC_SUCCESS) {
            ucs_error("%s: chunk send completion: %s", iface->md->name,
                      ibv_wc_status_str(wcs[i].status));
        }
        ucs_assert(z->marker_count > 0);
        m                = &z->markers[z->marker_head];
        z->marker_head   = (z->marker_head + 1) % z->sq_depth;
        --z->marker_count;
        job              = m->job;
        z->sq_available += m->covered;
        job->in_flight  -= m->covered;
        if ((job->in_flight == 0) && !job->queued &&
            (job->drained != NULL)) {
            job->drained(iface, job);
        }
    }
    return (n > 0) ? n : 0;
}


/* ------------------------------------------------------------------------
 * Transfers
 */

static uct_srqud_xfer_t*
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
    xfer->last_activity = ucs_get_time();
    xfer->job.arg       = xfer;
    ucs_list_add_tail(&iface->zcopy.xfers, &xfer->list);
    return xfer;
}


static uct_srqud_xfer_t*
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
    if (xfer->job.queued) {
        ucs_queue_remove(&iface->zcopy.jobs, &xfer->job.queue);
        xfer->job.queued = 0;
    }
    if (xfer->pqp != NULL) {
        uct_srqud_zcopy_pool_put(iface, xfer->pqp, xfer->rx.count > 0);
        xfer->pqp = NULL;
    }
    uct_srqud_chunk_rx_cleanup(&xfer->rx);
    if (xfer->region != NULL) {
        uct_srqud_md_region_release(iface->md, xfer->region);
    }
    ucs_free(xfer->job.list);
    ucs_list_del(&xfer->list);
    ucs_free(xfer);
}


/* The end of an initiator's transfer: the user's completion runs once no
 * chunk send of it is in flight any more (the HCA reads the buffer) */
static void uct_srqud_zcopy_finish(uct_srqud_iface_t *iface,
                                   uct_srqud_xfer_t *xfer,
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
    uct_srqud_ep_op_done(iface, xfer->ep);
    if (xfer->comp != NULL) {
        uct_invoke_completion(xfer->comp, status);
    }
    uct_srqud_zcopy_xfer_free(iface, xfer);
}


/* Encode the receives posted on the sink's QP as ranges after @a hdr */
static size_t uct_srqud_zcopy_encode_order(uct_srqud_iface_t *iface,
                                           uct_srqud_xfer_t *xfer,
                                           uct_srqud_zhdr_t *hdr,
                                           uct_srqud_zrange_t *ranges)
{
    uct_srqud_chunk_range_t r[255];
    uint32_t order[iface->zcopy.rq_depth];
    uint32_t n, nr, encoded, i;

    n       = uct_srqud_chunk_rx_order(&xfer->rx, order, iface->zcopy.rq_depth);
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


/* Post receives for the next round on the sink's QP */
static ucs_status_t uct_srqud_zcopy_post_round(uct_srqud_iface_t *iface,
                                               uct_srqud_xfer_t *xfer)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    uint32_t chunks[z->rq_depth];
    struct ibv_recv_wr wrs[32], *bad_wr;
    struct ibv_sge sges[32][3];
    uint32_t n, i, k, c;
    size_t len;
    int ret;

    n = uct_srqud_chunk_rx_plan(&xfer->rx, chunks, z->rq_depth);
    for (i = 0; i < n; i += k) {
        for (k = 0; (k < 32) && (i + k < n); ++k) {
            c   = chunks[i + k];
            len = uct_srqud_zcopy_chunk_len(xfer->length, xfer->chunk, c);
            sges[k][0].addr   = (uintptr_t)z->scratch;
            sges[k][0].length = UCT_SRQUD_GRH_LEN;
            sges[k][0].lkey   = z->scratch_mr->lkey;
            sges[k][1].addr   = xfer->local_addr + (uint64_t)c * xfer->chunk;
            sges[k][1].length = len;
            sges[k][1].lkey   = xfer->lkey;
            /* a full chunk that lands in the short last receive (it was
             * misplaced) spills here instead of failing the receive */
            sges[k][2].addr   = (uintptr_t)z->scratch + UCT_SRQUD_GRH_LEN;
            sges[k][2].length = xfer->chunk - len;
            sges[k][2].lkey   = z->scratch_mr->lkey;
            wrs[k].wr_id      = c;
            wrs[k].sg_list    = sges[k];
            wrs[k].num_sge    = (len < xfer->chunk) ? 3 : 2;
            wrs[k].next       = &wrs[k + 1];
        }
        wrs[k - 1].next = NULL;
        ret = ibv_post_recv(xfer->pqp->qp, wrs, &bad_wr);
        if (ret != 0) {
            ucs_error("%s: ibv_post_recv(zero-copy) failed: %s",
                      iface->md->name, strerror(ret));
            return UCS_ERR_IO_ERROR;
        }
    }
    return UCS_OK;
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
    hdr->qpn         = ((uint32_t)xfer->pqp->gen << UCT_SRQUD_ZCOPY_TAG_SHIFT) |
                       xfer->pqp->qp->qp_num;
    hdr->rkey        = xfer->rkey;
    hdr->remote_addr = xfer->remote_addr;
    hdr->length      = xfer->length;
    hdr->chunk       = xfer->chunk;
    len              = uct_srqud_zcopy_encode_order(iface, xfer, hdr,
                                                    (void*)(hdr + 1));

    if (xfer->type == UCT_SRQUD_XFER_GET_SINK) {
        return uct_srqud_ep_send_request(iface, xfer->ep, UCT_SRQUD_CTL_ZGET,
                                         buf, sizeof(*hdr) + len, NULL, 0);
    }
    return uct_srqud_ep_send_answer(iface, xfer->ep, UCT_SRQUD_CTL_ZCTS,
                                    buf, sizeof(*hdr) + len, NULL, 0);
}


/* A put's sink answers without the round machinery (errors, ZACK) */
static void uct_srqud_zcopy_send_status(uct_srqud_iface_t *iface,
                                        uct_srqud_ep_t *ep, uint8_t ctl,
                                        uint32_t id, uint16_t round,
                                        ucs_status_t status)
{
    uct_srqud_zhdr_t hdr;

    memset(&hdr, 0, sizeof(hdr));
    hdr.xfer_id = id;
    hdr.round   = round;
    hdr.status  = status;
    uct_srqud_ep_send_answer(iface, ep, ctl, &hdr, sizeof(hdr), NULL, 0);
}


/* Start a round of the sink: post, then ask */
static void uct_srqud_zcopy_next_round(uct_srqud_iface_t *iface,
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
                                          uct_srqud_xfer_t *xfer)
{
    struct ibv_wc wcs[32];
    uint32_t imm, slot;
    size_t payload, len_imm, len_slot;
    int i, n, in_place;

    n = ibv_poll_cq(xfer->pqp->cq, ucs_static_array_size(wcs), wcs);
    for (i = 0; i < n; ++i) {
        slot = xfer->rx.ring[xfer->rx.head];
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
        len_slot = uct_srqud_zcopy_chunk_len(xfer->length, xfer->chunk, slot);
        len_imm  = (imm < xfer->rx.nchunks) ?
                   uct_srqud_zcopy_chunk_len(xfer->length, xfer->chunk, imm) : 0;
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
    return (n > 0) ? n : 0;
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


static void uct_srqud_zcopy_done_record(uct_srqud_iface_t *iface,
                                        uct_srqud_xfer_t *xfer);


/* Sink: end of a round; misplaced chunks are copied home */
static ucs_status_t uct_srqud_zcopy_settle(uct_srqud_iface_t *iface,
                                   uct_srqud_xfer_t *xfer)
{
    uct_srqud_chunk_move_t moves[iface->zcopy.rq_depth];
    uint32_t n, i;
    size_t len;

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
        len = uct_srqud_zcopy_chunk_len(xfer->length, xfer->chunk,
                                        moves[i].chunk);
        memcpy((void*)(uintptr_t)(xfer->local_addr +
                                  (uint64_t)moves[i].chunk * xfer->chunk),
               (void*)(uintptr_t)(xfer->local_addr +
                                  (uint64_t)moves[i].from_slot * xfer->chunk),
               len);
    }
    if (xfer->region != NULL) {
        uct_srqud_md_region_leave(iface->md);
    }
    iface->stats.zcopy_moved += n;
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
    unsigned count = uct_srqud_zcopy_sink_poll(iface, xfer);

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
static void uct_srqud_zcopy_done_record(uct_srqud_iface_t *iface,
                                        uct_srqud_xfer_t *xfer)
{
    xfer->flags |= UCT_SRQUD_XFER_FLAG_DONE;
    if (xfer->pqp != NULL) {
        uct_srqud_zcopy_pool_put(iface, xfer->pqp, xfer->rx.count > 0);
        xfer->pqp = NULL;
    }
    uct_srqud_chunk_rx_cleanup(&xfer->rx);
    if (xfer->region != NULL) {
        uct_srqud_md_region_release(iface->md, xfer->region);
        xfer->region = NULL;
    }
    xfer->last_activity = ucs_get_time();
}


/* The chunk list of a request: ranges, each within the transfer */
static uint32_t *uct_srqud_zcopy_decode(const uct_srqud_zhdr_t *hdr,
                                        size_t length, uint32_t chunk,
                                        uint32_t *count_p)
{
    const uct_srqud_zrange_t *r = (const void*)(hdr + 1);
    uint32_t nchunks, total = 0, i, j, *list;

    if ((chunk == 0) ||
        (length < sizeof(*hdr) + hdr->num_ranges * sizeof(*r))) {
        return NULL;
    }

    nchunks = uct_srqud_zcopy_nchunks(hdr->length, chunk);
    for (i = 0; i < hdr->num_ranges; ++i) {
        if ((r[i].count == 0) || (r[i].start >= nchunks) ||
            (r[i].count > nchunks - r[i].start)) {
            return NULL;
        }
        total += r[i].count;
    }
    if ((total == 0) || (total > UCT_SRQUD_ZCOPY_MAX_LIST)) {
        return NULL;
    }

    list = ucs_malloc(total * sizeof(*list), "srqud_zlist");
    if (list == NULL) {
        return NULL;
    }
    for (i = 0, total = 0; i < hdr->num_ranges; ++i) {
        for (j = 0; j < r[i].count; ++j) {
            list[total++] = r[i].start + j;
        }
    }
    *count_p = total;
    return list;
}


/* Responder of a get, when its chunk sends completed (they are out, and
 * the HCA is done with the memory): ZFIN, and the region is released */
static void uct_srqud_zcopy_get_source_drained(uct_srqud_iface_t *iface,
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
        uct_srqud_ep_send_answer(iface, xfer->ep, UCT_SRQUD_CTL_ZFIN, &hdr,
                                 sizeof(hdr), NULL, 0);
    }
    uct_srqud_zcopy_xfer_free(iface, xfer);
}


static void uct_srqud_zcopy_rx_zget(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep,
                                    const uct_srqud_zhdr_t *hdr, size_t length)
{
    uct_srqud_xfer_t *xfer;
    uct_srqud_zhdr_t fin;
    ucs_status_t status;
    uint32_t count;
    uint32_t *list;

    memset(&fin, 0, sizeof(fin));
    fin.xfer_id = hdr->xfer_id;
    fin.round   = hdr->round;

    list = uct_srqud_zcopy_decode(hdr, length, hdr->chunk, &count);
    if ((list == NULL) || (hdr->chunk > iface->zcopy.chunk) ||
        (iface->zcopy.sqp == NULL)) {
        status = (iface->zcopy.sqp == NULL) ? UCS_ERR_UNSUPPORTED :
                                              UCS_ERR_INVALID_PARAM;
        goto err;
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
    xfer->job.lkey     = xfer->region->mr->lkey;
    xfer->job.base     = hdr->remote_addr;
    xfer->job.length   = hdr->length;
    xfer->job.chunk    = hdr->chunk;
    xfer->job.list     = list;
    xfer->job.count    = count;
    xfer->job.posted   = NULL;
    xfer->job.drained  = uct_srqud_zcopy_get_source_drained;
    uct_srqud_zcopy_job_submit(iface, &xfer->job);
    uct_srqud_zcopy_send_progress(iface);
    return;

err:
    fin.status = status;
    uct_srqud_ep_send_answer(iface, ep, UCT_SRQUD_CTL_ZFIN, &fin, sizeof(fin),
                             NULL, 0);
}


/* A put's sink repeats its current answer */
static void uct_srqud_zcopy_put_sink_answer(uct_srqud_iface_t *iface,
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
    hdr->qpn     = ((uint32_t)xfer->pqp->gen << UCT_SRQUD_ZCOPY_TAG_SHIFT) |
                   xfer->pqp->qp->qp_num;
    hdr->length  = xfer->length;
    hdr->chunk   = xfer->chunk;
    len          = uct_srqud_zcopy_encode_order(iface, xfer, hdr,
                                                (void*)(hdr + 1));
    /* a repeat: the round's counts stay */
    xfer->round_posted = posted;
    xfer->round_done   = done;
    xfer->round_sent   = sent;
    uct_srqud_ep_send_answer(iface, xfer->ep, UCT_SRQUD_CTL_ZCTS, buf,
                             sizeof(*hdr) + len, NULL, 0);
}


static void uct_srqud_zcopy_rx_zput(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep,
                                    const uct_srqud_zhdr_t *hdr)
{
    uct_srqud_xfer_t *xfer;
    ucs_status_t status;
    uint32_t chunk;

    xfer = uct_srqud_zcopy_xfer_find(iface, ep, UCT_SRQUD_XFER_PUT_SINK,
                                     hdr->xfer_id);
    if (xfer != NULL) {
        uct_srqud_zcopy_put_sink_answer(iface, xfer); /* asked again */
        return;
    }

    chunk = ucs_min(hdr->chunk, iface->zcopy.chunk);
    if ((chunk == 0) || (hdr->length == 0) || (iface->zcopy.pool == NULL)) {
        status = (iface->zcopy.pool == NULL) ? UCS_ERR_BUSY :
                                               UCS_ERR_INVALID_PARAM;
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
    xfer->pqp        = uct_srqud_zcopy_pool_get(iface, xfer);
    if ((xfer->pqp == NULL) ||
        (uct_srqud_chunk_rx_init(&xfer->rx,
                                 uct_srqud_zcopy_nchunks(xfer->length, chunk),
                                 iface->zcopy.rq_depth) != 0)) {
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


void uct_srqud_zcopy_rx_request(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                uint8_t ctl, const uct_srqud_zhdr_t *hdr,
                                size_t length)
{
    uct_srqud_xfer_t *xfer;

    switch (ctl) {
    case UCT_SRQUD_CTL_ZGET:
        uct_srqud_zcopy_rx_zget(iface, ep, hdr, length);
        break;
    case UCT_SRQUD_CTL_ZPUT:
        uct_srqud_zcopy_rx_zput(iface, ep, hdr);
        break;
    case UCT_SRQUD_CTL_ZFIN:
        /* a put's source sent a round */
        xfer = uct_srqud_zcopy_xfer_find(iface, ep, UCT_SRQUD_XFER_PUT_SINK,
                                         hdr->xfer_id);
        if (xfer == NULL) {
            /* finished long ago, or never started */
            uct_srqud_zcopy_send_status(iface, ep, UCT_SRQUD_CTL_ZACK,
                                        hdr->xfer_id, hdr->round,
                                        UCS_ERR_NO_ELEM);
        } else if ((xfer->flags & UCT_SRQUD_XFER_FLAG_DONE) ||
                   (hdr->round != xfer->round)) {
            uct_srqud_zcopy_put_sink_answer(iface, xfer);
        } else {
            xfer->flags        |= UCT_SRQUD_XFER_FLAG_FIN;
            xfer->round_sent    = hdr->count;
            xfer->last_activity = ucs_get_time();
        }
        break;
    default:
        break;
    }
}


/* Initiator of a put: its request for a round (ZPUT first, then ZFIN) */
static ucs_status_t uct_srqud_zcopy_put_request(uct_srqud_iface_t *iface,
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
    status = uct_srqud_ep_send_request(iface, xfer->ep,
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


/* Initiator of a put, when its chunk sends completed: ZFIN (see
 * uct_srqud_zcopy_round_over()), or the end the transfer waited for */
static void uct_srqud_zcopy_put_source_drained(uct_srqud_iface_t *iface,
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


void uct_srqud_zcopy_rx_answer(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                               uint8_t ctl, const uct_srqud_zhdr_t *hdr,
                               size_t length)
{
    uct_completion_t *comp;
    uct_srqud_xfer_t *xfer;
    uint32_t *list, count;

    switch (ctl) {
    case UCT_SRQUD_CTL_ZFIN:
        /* a get's source sent a round, or refused */
        xfer = uct_srqud_zcopy_xfer_find(iface, ep, UCT_SRQUD_XFER_GET_SINK,
                                         hdr->xfer_id);
        if ((xfer == NULL) || (xfer->flags & UCT_SRQUD_XFER_FLAG_DONE) ||
            (hdr->round != xfer->round)) {
            return;
        }
        if (hdr->status != UCS_OK) {
            ucs_debug("%s: get %u refused by the peer: %s", iface->md->name,
                      xfer->id, ucs_status_string((ucs_status_t)hdr->status));
            uct_srqud_zcopy_finish(iface, xfer, (ucs_status_t)hdr->status);
            return;
        }
        xfer->flags        |= UCT_SRQUD_XFER_FLAG_FIN;
        xfer->round_sent    = hdr->count;
        xfer->last_activity = ucs_get_time();
        break;
    case UCT_SRQUD_CTL_ZCTS:
        xfer = uct_srqud_zcopy_xfer_find(iface, ep, UCT_SRQUD_XFER_PUT_SOURCE,
                                         hdr->xfer_id);
        if ((xfer == NULL) || (xfer->flags & UCT_SRQUD_XFER_FLAG_DONE)) {
            return;
        }
        xfer->last_activity = ucs_get_time();
        if (hdr->status == UCS_ERR_BUSY) {
            /* the peer has no pool QP free: the copy path, never a
             * failure; the put's completion moves to it */
            ++iface->stats.zcopy_fallbacks;
            comp        = xfer->comp;
            xfer->comp  = NULL;
            if ((uct_srqud_rma_put_copy(iface, ep,
                                       (void*)(uintptr_t)xfer->local_addr,
                                       xfer->length, xfer->remote_addr,
                                       xfer->rkey, comp) != UCS_INPROGRESS) &&
                (comp != NULL)) {
                uct_invoke_completion(comp, UCS_ERR_NO_MEMORY);
            }
            uct_srqud_ep_op_done(iface, ep);
            uct_srqud_zcopy_xfer_free(iface, xfer);
            return;
        } else if (hdr->status != UCS_OK) {
            uct_srqud_zcopy_finish(iface, xfer, (ucs_status_t)hdr->status);
            return;
        }
        if ((hdr->round <= xfer->round) ||
            (xfer->flags & UCT_SRQUD_XFER_FLAG_SENDING)) {
            return; /* a repeat, or a round while one is still going out */
        }
        list = uct_srqud_zcopy_decode(hdr, length, hdr->chunk, &count);
        if ((list == NULL) || (hdr->chunk > xfer->chunk)) {
            ucs_free(list);
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
        xfer->job.lkey     = xfer->lkey;
        xfer->job.base     = xfer->local_addr;
        xfer->job.length   = xfer->length;
        xfer->job.chunk    = xfer->chunk;
        xfer->job.list     = list;
        xfer->job.count    = count;
        xfer->job.posted   = NULL;
        xfer->job.drained  = uct_srqud_zcopy_put_source_drained;
        ++iface->zcopy.user_jobs;
        uct_srqud_zcopy_job_submit(iface, &xfer->job);
        uct_srqud_zcopy_send_progress(iface);
        break;
    case UCT_SRQUD_CTL_ZACK:
        xfer = uct_srqud_zcopy_xfer_find(iface, ep, UCT_SRQUD_XFER_PUT_SOURCE,
                                         hdr->xfer_id);
        if ((xfer != NULL) && !(xfer->flags & UCT_SRQUD_XFER_FLAG_DONE)) {
            uct_srqud_zcopy_finish(iface, xfer, (ucs_status_t)hdr->status);
        }
        break;
    default:
        break;
    }
}


ucs_status_t uct_srqud_zcopy_start(uct_srqud_iface_t *iface,
                                   uct_srqud_ep_t *ep, int is_get,
                                   void *buffer, size_t length, uint32_t lkey,
                                   uint64_t remote_addr, uint32_t rkey,
                                   uct_completion_t *comp)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    uct_srqud_xfer_t *xfer;

    if (z->sqp == NULL) {
        return UCS_ERR_BUSY; /* zero-copy disabled (UCX_SRQUD_ZCOPY_QPS=0) */
    }
    if (uct_srqud_zcopy_nchunks(length, z->chunk) > UCT_SRQUD_ZCOPY_NUM_MASK) {
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

    if (!is_get) {
        uct_srqud_zcopy_put_request(iface, xfer); /* ZPUT, or when it can */
        return UCS_INPROGRESS;
    }

    xfer->pqp         = uct_srqud_zcopy_pool_get(iface, xfer);
    if ((xfer->pqp == NULL) ||
        (uct_srqud_chunk_rx_init(&xfer->rx,
                                 uct_srqud_zcopy_nchunks(length, xfer->chunk),
                                 z->rq_depth) != 0)) {
        uct_srqud_ep_op_done(iface, ep);
        uct_srqud_zcopy_xfer_free(iface, xfer);
        return UCS_ERR_BUSY; /* the caller takes the copy path */
    }

    uct_srqud_zcopy_next_round(iface, xfer);
    return UCS_INPROGRESS;
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
            } else if (uct_srqud_time_since(now, xfer->progress_time) >=
                       2 * iface->config.peer_timeout) {
                /* rounds come and go and nothing arrives, though the peer
                 * answers (a dead one fails the ep first, and its
                 * transfers with it): a get fails, a put's sink gives up
                 * its resources */
                if (xfer->type == UCT_SRQUD_XFER_GET_SINK) {
                    uct_srqud_zcopy_finish(iface, xfer,
                                           UCS_ERR_ENDPOINT_TIMEOUT);
                } else {
                    uct_srqud_zcopy_xfer_free(iface, xfer);
                }
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
        count = uct_srqud_zcopy_send_completions(iface) +
                uct_srqud_zcopy_send_progress(iface);
    }
    return count + uct_srqud_zcopy_xfers_progress(iface, 1);
}


unsigned uct_srqud_zcopy_progress(uct_srqud_iface_t *iface)
{
    return uct_srqud_zcopy_send_completions(iface) +
           uct_srqud_zcopy_send_progress(iface) +
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
