/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_zengine.h"
#include "srqud_chunk.h"
#include "srqud_dev.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <arpa/inet.h>
#include <string.h>


/* Chunk sends between two signaled ones: completions free send slots */
#define UCT_SRQUD_ZSEND_SIGNAL_EVERY  64


static struct ibv_qp*
uct_srqud_zengine_create_qp(uct_srqud_iface_t *iface, struct ibv_cq *cq,
                            unsigned send_wr, unsigned recv_wr)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp *qp;

    memset(&init, 0, sizeof(init));
    init.send_cq          = cq;
    init.recv_cq          = cq;
    init.cap.max_send_wr  = send_wr;
    init.cap.max_recv_wr  = recv_wr;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 3; /* GRH scratch, the chunk, tail scratch */
    if (uct_srqud_dev_ud_qp_create(iface, &init, "zero-copy", &qp) != UCS_OK) {
        return NULL;
    }
    return qp;
}


ucs_status_t uct_srqud_zengine_init(uct_srqud_iface_t *iface)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;

    ucs_queue_head_init(&z->jobs);
    ucs_list_head_init(&z->pool_free);
    z->pool_created = 0;
    z->pool_peak    = 0;
    z->user_jobs    = 0;
    z->sqp          = NULL;
    z->scq          = NULL;
    z->scratch      = NULL;
    z->scratch_mr   = NULL;
    z->markers      = NULL;
    z->pool         = NULL;
    z->marker_count = 0;
    z->marker_head  = 0;
    z->sq_available = 0; /* no send QP: nothing may be posted */

    if (iface->config.zcopy_qps == 0) {
        return UCS_OK; /* zero-copy disabled: the copy path only */
    }

    z->pool    = ucs_calloc(iface->config.zcopy_qps, sizeof(*z->pool),
                            "srqud_zcopy_pool");
    z->markers = ucs_calloc(iface->config.zcopy_sq_depth, sizeof(*z->markers),
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

    z->scq = uct_srqud_dev_cq_create(iface, iface->config.zcopy_sq_depth, NULL,
                                     "zero-copy send");
    if (z->scq == NULL) {
        goto err;
    }

    z->sqp = uct_srqud_zengine_create_qp(iface, z->scq, iface->config.zcopy_sq_depth, 1);
    if (z->sqp == NULL) {
        goto err;
    }
    z->sq_available = iface->config.zcopy_sq_depth;
    return UCS_OK;

err:
    uct_srqud_zengine_cleanup(iface);
    return UCS_ERR_IO_ERROR;
}


static void uct_srqud_zengine_pool_destroy(uct_srqud_pool_qp_t *pqp)
{
    ibv_destroy_qp(pqp->qp);
    ibv_destroy_cq(pqp->cq);
    pqp->qp = NULL;
    pqp->cq = NULL;
}


uct_srqud_pool_qp_t*
uct_srqud_zengine_pool_get(uct_srqud_iface_t *iface, uct_srqud_xfer_t *xfer)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    uct_srqud_pool_qp_t *pqp = NULL;
    uint32_t qkey;
    unsigned i;

    if (!ucs_list_is_empty(&z->pool_free)) {
        pqp = ucs_list_extract_head(&z->pool_free, uct_srqud_pool_qp_t, list);
    } else {
        for (i = 0; i < iface->config.zcopy_qps; ++i) {
            if ((z->pool[i].qp == NULL) && (z->pool[i].xfer == NULL)) {
                pqp = &z->pool[i];
                break;
            }
        }
        if (pqp == NULL) {
            return NULL;
        }
        pqp->cq = uct_srqud_dev_cq_create(iface, iface->config.zcopy_rq_depth,
                                          NULL, "zero-copy pool");
        if (pqp->cq == NULL) {
            return NULL;
        }
        pqp->qp = uct_srqud_zengine_create_qp(iface, pqp->cq, 1, iface->config.zcopy_rq_depth);
        if (pqp->qp == NULL) {
            ibv_destroy_cq(pqp->cq);
            pqp->cq = NULL;
            return NULL;
        }
        ++z->pool_created;
        z->pool_peak = ucs_max(z->pool_peak, z->pool_created);
    }

    /* A Q_Key of its own for this transfer (bit 31 clear: a controlled
     * Q_Key is the privileged one), unlike the interface QP's constant:
     * the device then drops chunks of anyone but the source this transfer
     * told it to, late ones of the QP's earlier transfers included */
    qkey = uct_srqud_secret32(pqp) & UCS_MASK(31);
    if (qkey == UCT_SRQUD_QKEY) {
        qkey ^= 1;
    }
    if (uct_srqud_dev_ud_qp_set_qkey(iface, pqp->qp, qkey,
                                     "zero-copy pool") != UCS_OK) {
        /* a QP that cannot take a key is no use: destroyed (as one with
         * receives still posted), made anew next time */
        uct_srqud_zengine_pool_put(iface, pqp, 1);
        return NULL;
    }
    pqp->qkey = qkey;
    pqp->xfer = xfer;
    ++pqp->gen;
    return pqp;
}


void uct_srqud_zengine_pool_put(uct_srqud_iface_t *iface,
                                uct_srqud_pool_qp_t *pqp, int posted)
{
    pqp->xfer = NULL;
    if (posted) {
        uct_srqud_zengine_pool_destroy(pqp);
        --iface->zcopy.pool_created;
        return;
    }
    ucs_list_add_tail(&iface->zcopy.pool_free, &pqp->list);
}


void uct_srqud_zengine_stop(uct_srqud_iface_t *iface)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    unsigned i;

    if (z->sqp != NULL) {
        ibv_destroy_qp(z->sqp);
        z->sqp = NULL;
    }
    if (z->pool != NULL) {
        for (i = 0; i < iface->config.zcopy_qps; ++i) {
            if (z->pool[i].qp != NULL) {
                uct_srqud_zengine_pool_destroy(&z->pool[i]);
            }
            z->pool[i].xfer = NULL;
        }
    }
    z->user_jobs    = 0;
    z->marker_count = 0;
}


void uct_srqud_zengine_cleanup(uct_srqud_iface_t *iface)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;

    uct_srqud_zengine_stop(iface);
    if (z->scq != NULL) {
        ibv_destroy_cq(z->scq);
    }
    if (z->scratch_mr != NULL) {
        ibv_dereg_mr(z->scratch_mr);
    }
    ucs_free(z->scratch);
    ucs_free(z->markers);
    ucs_free(z->pool);
    z->pool       = NULL;
    z->markers    = NULL;
    z->scratch    = NULL;
    z->scratch_mr = NULL;
    z->scq        = NULL;
}


void uct_srqud_zengine_submit(uct_srqud_iface_t *iface,
                              uct_srqud_zsend_job_t *job)
{
    job->pos        = 0;
    job->unsignaled = 0;
    job->in_flight  = 0;
    job->queued     = 1;
    ucs_queue_push(&iface->zcopy.jobs, &job->queue);
}


void uct_srqud_zengine_job_dequeue(uct_srqud_iface_t *iface,
                                   uct_srqud_zsend_job_t *job)
{
    if (job->queued) {
        ucs_queue_remove(&iface->zcopy.jobs, &job->queue);
        job->queued = 0;
    }
}


/* Fault injection (tests): is this chunk lost? */
static int uct_srqud_zengine_fault_drop(uct_srqud_iface_t *iface)
{
    uint32_t r = uct_srqud_iface_fault_rand(iface);

    return (iface->config.fault_chunk_drop == UINT32_MAX) ||
           (r < iface->config.fault_drop) ||
           (r < iface->config.fault_chunk_drop);
}


/* Chunks posted by one ibv_post_send: each call is a system call on
 * Soft-RoCE (a doorbell write on hardware), so a round's chunks go in
 * lists (raw UD 4 KB on rxe: 60 MB/s one per call, 83 MB/s 32 per call) */
#define UCT_SRQUD_ZSEND_BATCH 32


/* The next chunks of @a job, at most @a max, as a list of sends into @a wrs
 * and @a sges; which of them are signaled follows the job's count of
 * unsignaled sends and the send queue's room. Returns how many. */
static unsigned uct_srqud_zengine_build(uct_srqud_iface_t *iface,
                                        uct_srqud_zsend_job_t *job,
                                        struct ibv_send_wr *wrs,
                                        struct ibv_sge *sges, unsigned max)
{
    unsigned avail      = iface->zcopy.sq_available;
    unsigned unsignaled = job->unsignaled;
    unsigned i;
    uint32_t n, pos, qpn;
    int signal;

    for (i = 0; (i < max) && (job->pos + i < job->count); ++i) {
        pos    = job->pos + i;
        n      = job->list[pos];
        signal = (pos + 1 == job->count) ||
                 (unsignaled + 1 >= UCT_SRQUD_ZSEND_SIGNAL_EVERY) ||
                 (avail == 1);

        /* fault injection (tests): lost on the wire; sent to a QP number
         * that does not exist, so the send still completes */
        qpn = job->dest_qpn;
        if (ucs_unlikely(iface->config.fault_drop |
                         iface->config.fault_chunk_drop) &&
            uct_srqud_zengine_fault_drop(iface)) {
            qpn = 0xffffff;
            ++iface->stats.fault_dropped;
        }

        sges[i].addr              = job->base + (uint64_t)n * job->chunk;
        sges[i].length            = uct_srqud_chunk_len(job->length,
                                                        job->chunk, n);
        sges[i].lkey              = job->lkey;
        memset(&wrs[i], 0, sizeof(wrs[i]));
        wrs[i].wr_id              = (uintptr_t)job;
        wrs[i].sg_list            = &sges[i];
        wrs[i].num_sge            = 1;
        wrs[i].opcode             = IBV_WR_SEND_WITH_IMM;
        wrs[i].imm_data           = htonl(((uint32_t)job->tag <<
                                           UCT_SRQUD_ZCOPY_TAG_SHIFT) | n);
        wrs[i].send_flags         = signal ? IBV_SEND_SIGNALED : 0;
        wrs[i].wr.ud.ah           = job->ah;
        wrs[i].wr.ud.remote_qpn   = qpn;
        wrs[i].wr.ud.remote_qkey  = job->qkey;
        wrs[i].next               = &wrs[i + 1];
        --avail;
        unsignaled = signal ? 0 : (unsignaled + 1);
    }
    if (i > 0) {
        wrs[i - 1].next = NULL;
    }
    return i;
}


/* @a num sends of @a wrs went to the QP: count them in flight, and put a
 * marker behind each signaled one (its completion frees the slots of the
 * unsignaled ones before it: completions come in posting order) */
static void uct_srqud_zengine_posted(uct_srqud_iface_t *iface,
                                     uct_srqud_zsend_job_t *job,
                                     const struct ibv_send_wr *wrs,
                                     unsigned num)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    unsigned i;

    for (i = 0; i < num; ++i) {
        --z->sq_available;
        ++job->pos;
        ++job->in_flight;
        ++job->unsignaled;
        if (wrs[i].send_flags & IBV_SEND_SIGNALED) {
            z->markers[(z->marker_head + z->marker_count) %
                       iface->config.zcopy_sq_depth] =
                    (uct_srqud_zmarker_t){job, job->unsignaled};
            ++z->marker_count;
            job->unsignaled = 0;
        }
    }
}


unsigned uct_srqud_zengine_send(uct_srqud_iface_t *iface)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    struct ibv_send_wr wrs[UCT_SRQUD_ZSEND_BATCH], *bad_wr;
    struct ibv_sge sges[UCT_SRQUD_ZSEND_BATCH];
    uct_srqud_zsend_job_t *job;
    unsigned count = 0, num, posted;
    int ret;

    while (!ucs_queue_is_empty(&z->jobs) && (z->sq_available > 0)) {
        job = ucs_queue_head_elem_non_empty(&z->jobs, uct_srqud_zsend_job_t,
                                            queue);
        while ((job->pos < job->count) && (z->sq_available > 0)) {
            num = uct_srqud_zengine_build(iface, job, wrs, sges,
                                          ucs_min(UCT_SRQUD_ZSEND_BATCH,
                                                  z->sq_available));
            ret = ibv_post_send(z->sqp, wrs, &bad_wr);
            /* on an error the sends before bad_wr were posted */
            posted = (ret == 0) ? num : (unsigned)(bad_wr - wrs);
            uct_srqud_zengine_posted(iface, job, wrs, posted);
            count += posted;
            ++iface->stats.zcopy_posts;
            if (ret != 0) {
                ucs_error("%s: ibv_post_send(chunk) failed: %s",
                          iface->md->name, strerror(ret));
                job->count = job->pos; /* give up the rest: resent later */
                break;
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
        if ((job->in_flight == 0) && (job->drained != NULL)) {
            /* cut short, and its sends all completed before: done (it may
             * be freed) */
            job->drained(iface, job);
        }
    }
    return count;
}


/* The oldest signaled send is done, with the unsignaled ones before it */
static void uct_srqud_zengine_marker_done(uct_srqud_iface_t *iface)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    uct_srqud_zmarker_t *m;
    uct_srqud_zsend_job_t *job;

    ucs_assert(z->marker_count > 0);
    m                = &z->markers[z->marker_head];
    z->marker_head   = (z->marker_head + 1) % iface->config.zcopy_sq_depth;
    --z->marker_count;
    job              = m->job;
    z->sq_available += m->covered;
    job->in_flight  -= m->covered;
    if (job->in_flight > 0) {
        return;
    }
    if (job->queued && (job->pos >= job->count)) {
        /* cut short while it waited for room in the send queue: nothing
         * of it is left to post */
        uct_srqud_zengine_job_dequeue(iface, job);
    }
    if (!job->queued && (job->drained != NULL)) {
        job->drained(iface, job);
    }
}


/* A chunk send failed (Soft-RoCE fails them while the link is down): the
 * QP is in the error state, and its flushed sends complete whether they
 * were signaled or not, so completions no longer match the markers. Reset
 * it (its work requests are gone), drop what its CQ still holds, and take
 * every send as done: those chunks are lost, the sink asks for them again. */
void uct_srqud_zengine_recover(uct_srqud_iface_t *iface, int failed)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    uct_srqud_zsend_job_t *job;
    struct ibv_wc wcs[16];
    ucs_status_t status;

    status = uct_srqud_dev_ud_qp_reset(iface, z->sqp, "zero-copy send",
                                       failed);
    while (ibv_poll_cq(z->scq, ucs_static_array_size(wcs), wcs) > 0) {
    }
    while (z->marker_count > 0) {
        uct_srqud_zengine_marker_done(iface);
    }
    /* the job being posted: its unsignaled sends have no marker yet */
    if (!ucs_queue_is_empty(&z->jobs)) {
        job = ucs_queue_head_elem_non_empty(&z->jobs, uct_srqud_zsend_job_t,
                                            queue);
        job->in_flight  -= job->unsignaled;
        job->unsignaled  = 0;
    }
    /* if even the reset failed, no chunk is sent any more: the transfers
     * end by their endpoints' timeout */
    z->sq_available = (status == UCS_OK) ? iface->config.zcopy_sq_depth : 0;
}


unsigned uct_srqud_zengine_send_completions(uct_srqud_iface_t *iface)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    struct ibv_wc wcs[16];
    int i, n;

    if (z->marker_count == 0) {
        return 0;
    }

    n = ibv_poll_cq(z->scq, ucs_static_array_size(wcs), wcs);
    for (i = 0; i < n; ++i) {
        if (ucs_unlikely(wcs[i].status != IBV_WC_SUCCESS)) {
            ++iface->stats.tx_errors;
            ucs_debug("%s: chunk send completion: %s", iface->md->name,
                      ibv_wc_status_str(wcs[i].status));
            uct_srqud_zengine_recover(iface, 1);
            break;
        }
        uct_srqud_zengine_marker_done(iface);
    }
    return (n > 0) ? n : 0;
}


/* ------------------------------------------------------------------------
 * Transfers
 */


ucs_status_t uct_srqud_zengine_post_recvs(uct_srqud_iface_t *iface,
                                          uct_srqud_pool_qp_t *pqp,
                                          uint64_t base, uint64_t length,
                                          uint32_t chunk, uint32_t lkey,
                                          const uint32_t *chunks, uint32_t n)
{
    uct_srqud_zcopy_t *z = &iface->zcopy;
    struct ibv_recv_wr wrs[32], *bad_wr;
    struct ibv_sge sges[32][3];
    uint32_t i, k, c;
    size_t len;
    int ret;

    for (i = 0; i < n; i += k) {
        for (k = 0; (k < 32) && (i + k < n); ++k) {
            c   = chunks[i + k];
            len = uct_srqud_chunk_len(length, chunk, c);
            sges[k][0].addr   = (uintptr_t)z->scratch;
            sges[k][0].length = UCT_SRQUD_GRH_LEN;
            sges[k][0].lkey   = z->scratch_mr->lkey;
            sges[k][1].addr   = base + (uint64_t)c * chunk;
            sges[k][1].length = len;
            sges[k][1].lkey   = lkey;
            /* a full chunk that lands in the short last receive (it was
             * misplaced) spills here instead of failing the receive */
            sges[k][2].addr   = (uintptr_t)z->scratch + UCT_SRQUD_GRH_LEN;
            sges[k][2].length = chunk - len;
            sges[k][2].lkey   = z->scratch_mr->lkey;
            wrs[k].wr_id      = c;
            wrs[k].sg_list    = sges[k];
            wrs[k].num_sge    = (len < chunk) ? 3 : 2;
            wrs[k].next       = &wrs[k + 1];
        }
        wrs[k - 1].next = NULL;
        ret = ibv_post_recv(pqp->qp, wrs, &bad_wr);
        if (ret != 0) {
            ucs_error("%s: ibv_post_recv(zero-copy) failed: %s",
                      iface->md->name, strerror(ret));
            return UCS_ERR_IO_ERROR;
        }
    }
    return UCS_OK;
}


int uct_srqud_zengine_poll(uct_srqud_pool_qp_t *pqp, struct ibv_wc *wcs,
                           int max)
{
    int n = ibv_poll_cq(pqp->cq, max, wcs);

    return (n > 0) ? n : 0;
}
