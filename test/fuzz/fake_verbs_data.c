/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The data path of the fake verbs device (fake_verbs.c, fake_verbs.h):
 * the work queues, the device's own access to memory, completion queues,
 * posted receives and sends, the send logs, and what the target drives
 * (fv_deliver and the rest of fake_verbs.h).
 */

#include "fake_verbs_int.h"


/* ------------------------------------------------------------------------
 * QPs by number, work queue rings
 */

static fv_qp_t *fv_qp_find(uint32_t qpn)
{
    unsigned i;
    fv_qp_t *qp;

    for (i = 0; i < fv.nobjs; ++i) {
        if ((fv.objs[i].type == FV_OBJ_QP) && fv.objs[i].live) {
            qp = fv.objs[i].ptr;
            if (qp->qp.qp_num == qpn) {
                return qp;
            }
        }
    }
    return NULL;
}


static fv_wqe_t *fv_wq_push(fv_wq_t *wq)
{
    fv_wqe_t *w = &wq->ring[(wq->head + wq->count) % wq->cap];

    ++wq->count;
    return w;
}


static fv_wqe_t *fv_wq_pop(fv_wq_t *wq)
{
    fv_wqe_t *w = &wq->ring[wq->head];

    wq->head = (wq->head + 1) % wq->cap;
    --wq->count;
    return w;
}


/* ------------------------------------------------------------------------
 * Memory: the device's reads and writes
 */

static int fv_is_user(uint64_t addr, uint64_t len)
{
    unsigned i;

    for (i = 0; i < fv.nuser; ++i) {
        if ((addr >= fv.user[i].addr) &&
            (addr + len <= fv.user[i].addr + fv.user[i].len)) {
            return 1;
        }
    }
    return 0;
}


/* The device's access to the user's pinned pages: not the process's */
__attribute__((no_sanitize("address")))
static void fv_dma_copy(volatile uint8_t *dst, const volatile uint8_t *src,
                        size_t len)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        dst[i] = src[i];
    }
}


static void fv_dma_read(void *dst, uint64_t addr, size_t len)
{
    if (fv_is_user(addr, len)) {
        fv_dma_copy(dst, (const void*)(uintptr_t)addr, len);
    } else {
        memcpy(dst, (const void*)(uintptr_t)addr, len);
    }
}


static void fv_dma_write(uint64_t addr, const void *src, size_t len)
{
    if (fv_is_user(addr, len)) {
        fv_dma_copy((void*)(uintptr_t)addr, src, len);
    } else {
        memcpy((void*)(uintptr_t)addr, src, len);
    }
}


/* ------------------------------------------------------------------------
 * Completion queues: the data path
 */

static void fv_cq_push(fv_cq_t *cq, const struct ibv_wc *wc)
{
    fv_channel_t *ch;

    if (cq->count == cq->cap) {
        FV_FAIL("CQ overrun: %u entries", cq->cap);
    }
    cq->ring[(cq->head + cq->count) % cq->cap] = *wc;
    ++cq->count;
    if (cq->armed && (cq->cq.channel != NULL)) {
        uint64_t one = 1;

        cq->armed   = 0;
        ch          = (fv_channel_t*)cq->cq.channel;
        ch->last_cq = cq;
        ++ch->events;
        if (write(ch->ch.fd, &one, sizeof(one)) != sizeof(one)) {
            FV_FAIL("write(channel) failed");
        }
    }
}


int fv_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
    fv_cq_t *cq = (fv_cq_t*)ibcq;
    int n = 0;

    pthread_mutex_lock(&fv.lock);
    while ((n < num) && (cq->count > 0)) {
        wc[n++]  = cq->ring[cq->head];
        cq->head = (cq->head + 1) % cq->cap;
        --cq->count;
    }
    pthread_mutex_unlock(&fv.lock);
    return n;
}


int fv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
    ((fv_cq_t*)ibcq)->armed = 1;
    return 0;
}


/* ------------------------------------------------------------------------
 * Receives
 */

/* Receives: every entry within its registration, with local write; the
 * buffer is the device's (and unpoisoned) until its completion */
static int fv_post_rq(const char *what, fv_wq_t *rq, unsigned max_sge,
                      int srq, struct ibv_recv_wr *wr,
                      struct ibv_recv_wr **bad_wr)
{
    fv_wqe_t *w;
    int i;

    pthread_mutex_lock(&fv.lock);
    for (; wr != NULL; wr = wr->next) {
        if ((wr->num_sge < 0) || ((unsigned)wr->num_sge > max_sge)) {
            *bad_wr = wr;
            pthread_mutex_unlock(&fv.lock);
            return EINVAL;
        }
        if (rq->count == rq->cap) {
            *bad_wr = wr;
            pthread_mutex_unlock(&fv.lock);
            return ENOMEM;
        }
        w          = fv_wq_push(rq);
        w->wr_id   = wr->wr_id;
        w->num_sge = wr->num_sge;
        w->inl     = 0;
        for (i = 0; i < wr->num_sge; ++i) {
            w->sge[i].addr   = wr->sg_list[i].addr;
            w->sge[i].length = wr->sg_list[i].length;
            w->sge[i].lkey   = wr->sg_list[i].lkey;
            fv_sge_check(what, &w->sge[i], 1);
            if (!fv_is_user(w->sge[i].addr, w->sge[i].length)) {
                ASAN_UNPOISON_MEMORY_REGION((void*)(uintptr_t)w->sge[i].addr,
                                            w->sge[i].length);
            }
        }
        if (!srq && (fv.range_check != NULL) && (wr->num_sge >= 2) &&
            fv.range_check(0, w->sge[1].addr, w->sge[1].length)) {
            FV_FAIL("%s: chunk receive [0x%lx, +%u) is outside every "
                    "transfer's buffer", what, (unsigned long)w->sge[1].addr,
                    w->sge[1].length);
        }
    }
    pthread_mutex_unlock(&fv.lock);
    return 0;
}


int fv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad_wr)
{
    fv_srq_t *srq = (fv_srq_t*)ibsrq;

    return fv_post_rq("ibv_post_srq_recv", &srq->rq, srq->max_sge, 1, wr,
                      bad_wr);
}


/* ------------------------------------------------------------------------
 * Sends
 */

static fv_send_t *fv_log_next(int chunk)
{
    fv_send_t *s;

    if (chunk) {
        s = &fv.chunks[fv.nchunks % FV_CHUNK_LOG];
        memset(s, 0, offsetof(fv_send_t, data));
        s->seq = ++fv.nchunks;
    } else {
        s = &fv.sends[fv.nsends % FV_SEND_LOG];
        memset(s, 0, offsetof(fv_send_t, data));
        s->seq = ++fv.nsends;
    }
    return s;
}


/* The send goes on the wire now: the device reads the memory (which must
 * still be registered) and the packet is recorded for the target */
static void fv_send_transmit(fv_qp_t *qp, const fv_wqe_t *w)
{
    uint8_t chunk_buf[FV_MAX_PKT];
    fv_send_t *s;
    uint8_t *dst;
    int i;

    s           = fv_log_next(w->with_imm);
    s->src_qpn  = qp->qp.qp_num;
    memcpy(s->dgid, w->dgid, 16);
    s->dest_qpn = w->dest_qpn;
    s->qkey     = w->qkey;
    s->with_imm = w->with_imm;
    s->imm      = w->imm;
    s->len      = w->total;
    s->addr     = (w->num_sge > 0) ? w->sge[0].addr : 0;
    dst         = w->with_imm ? chunk_buf : s->data;
    if (w->inl) {
        memcpy(dst, w->inl_data, w->total);
        return;
    }
    for (i = 0; i < w->num_sge; ++i) {
        fv_sge_check("send (transmission)", &w->sge[i], 0);
        fv_dma_read(dst, w->sge[i].addr, w->sge[i].length);
        dst += w->sge[i].length;
    }
}


static void fv_send_complete(fv_qp_t *qp, const fv_wqe_t *w,
                             enum ibv_wc_status status, int force)
{
    struct ibv_wc wc;

    if (status == IBV_WC_SUCCESS) {
        fv_send_transmit(qp, w);
    }
    if (!w->signaled && !force) {
        return;
    }
    memset(&wc, 0, sizeof(wc));
    wc.wr_id  = w->wr_id;
    wc.status = status;
    wc.opcode = IBV_WC_SEND;
    wc.qp_num = qp->qp.qp_num;
    fv_cq_push((fv_cq_t*)qp->qp.send_cq, &wc);
}


int fv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
                 struct ibv_send_wr **bad_wr)
{
    fv_qp_t *qp = (fv_qp_t*)ibqp;
    fv_wqe_t *w;
    uint32_t total;
    uint8_t *dst;
    int i, inl;

    pthread_mutex_lock(&fv.lock);
    for (; wr != NULL; wr = wr->next) {
        if ((ibqp->state != IBV_QPS_RTS) && (ibqp->state != IBV_QPS_ERR)) {
            goto einval;
        }
        if ((wr->num_sge < 0) ||
            ((unsigned)wr->num_sge > qp->cap.max_send_sge) ||
            ((wr->opcode != IBV_WR_SEND) &&
             (wr->opcode != IBV_WR_SEND_WITH_IMM)) ||
            (wr->wr.ud.ah == NULL)) {
            goto einval;
        }
        if (qp->sq.count == qp->sq.cap) {
            *bad_wr = wr;
            pthread_mutex_unlock(&fv.lock);
            return ENOMEM;
        }

        inl   = !!(wr->send_flags & IBV_SEND_INLINE);
        total = 0;
        for (i = 0; i < wr->num_sge; ++i) {
            total += wr->sg_list[i].length;
        }
        if (inl && (total > qp->cap.max_inline_data)) {
            goto einval;
        }
        if (total > FV_MAX_PKT) {
            FV_FAIL("a UD send of %u bytes, more than the MTU (%u)", total,
                    FV_MAX_PKT);
        }

        w           = fv_wq_push(&qp->sq);
        w->wr_id    = wr->wr_id;
        w->signaled = !!(wr->send_flags & IBV_SEND_SIGNALED);
        w->num_sge  = wr->num_sge;
        w->inl      = inl;
        w->with_imm = (wr->opcode == IBV_WR_SEND_WITH_IMM);
        w->imm      = w->with_imm ? ntohl(wr->imm_data) : 0;
        w->dest_qpn = wr->wr.ud.remote_qpn;
        w->qkey     = wr->wr.ud.remote_qkey;
        w->total    = total;
        memcpy(w->dgid, ((fv_ah_t*)wr->wr.ud.ah)->dgid, 16);
        dst = w->inl_data;
        for (i = 0; i < wr->num_sge; ++i) {
            w->sge[i].addr   = wr->sg_list[i].addr;
            w->sge[i].length = wr->sg_list[i].length;
            w->sge[i].lkey   = wr->sg_list[i].lkey;
            if (inl) {
                /* inline: the bytes are copied now, the key is not used */
                memcpy(dst, (const void*)(uintptr_t)w->sge[i].addr,
                       w->sge[i].length);
                dst += w->sge[i].length;
            } else {
                fv_sge_check("ibv_post_send", &w->sge[i], 0);
            }
        }
        if (w->with_imm && (fv.range_check != NULL) && (w->num_sge > 0) &&
            fv.range_check(1, w->sge[0].addr, total)) {
            FV_FAIL("chunk send [0x%lx, +%u) is outside every transfer's "
                    "buffer", (unsigned long)w->sge[0].addr, total);
        }

        if (ibqp->state == IBV_QPS_ERR) {
            /* a QP in the error state flushes what is posted */
            fv_wq_pop(&qp->sq);
            fv_send_complete(qp, w, IBV_WC_WR_FLUSH_ERR, 1);
        }
    }
    pthread_mutex_unlock(&fv.lock);
    return 0;

einval:
    *bad_wr = wr;
    pthread_mutex_unlock(&fv.lock);
    return EINVAL;
}


int fv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
                 struct ibv_recv_wr **bad_wr)
{
    fv_qp_t *qp = (fv_qp_t*)ibqp;

    if ((ibqp->srq != NULL) || (ibqp->state == IBV_QPS_RESET)) {
        *bad_wr = wr;
        return EINVAL;
    }
    return fv_post_rq("ibv_post_recv", &qp->rq, qp->cap.max_recv_sge, 0, wr,
                      bad_wr);
}


/* ------------------------------------------------------------------------
 * What the target drives
 */

void fv_reset(void)
{
    unsigned i;

    for (i = 0; i < fv.nmrs; ++i) {
        free(fv.mrs[i]); /* dead ones: kept until now for their lkeys */
        fv.mrs[i] = NULL;
    }
    fv.nmrs     = 0;
    fv.nobjs    = 0;
    fv.next_qpn = 0x11;
    fv.nsends   = 0;
    fv.nchunks  = 0;
    fv.nuser    = 0;
    memset(&fv.stats, 0, sizeof(fv.stats));
    if (fv.sends == NULL) {
        fv.sends  = calloc(FV_SEND_LOG, sizeof(*fv.sends));
        fv.chunks = calloc(FV_CHUNK_LOG, sizeof(*fv.chunks));
        if ((fv.sends == NULL) || (fv.chunks == NULL)) {
            FV_FAIL("out of memory");
        }
    }
}


unsigned fv_live_objects(char *what, size_t max)
{
    unsigned i, n = 0, live[FV_OBJ_LAST] = {0}, t;
    size_t off = 0;

    for (i = 0; i < fv.nobjs; ++i) {
        if (fv.objs[i].live) {
            ++live[fv.objs[i].type];
            ++n;
        }
    }
    if (what != NULL) {
        what[0] = '\0';
        for (t = 0; t < FV_OBJ_LAST; ++t) {
            if (live[t] && (off < max)) {
                off += snprintf(what + off, max - off, "%u %s ", live[t],
                                fv_obj_names[t]);
            }
        }
    }
    return n;
}


void fv_user_region(const void *addr, size_t len)
{
    if (fv.nuser < 16) {
        fv.user[fv.nuser].addr = (uintptr_t)addr;
        fv.user[fv.nuser].len  = len;
        ++fv.nuser;
    }
}


uint64_t fv_send_total(void)
{
    return fv.nsends;
}


const fv_send_t *fv_send_get(uint64_t seq)
{
    if ((seq == 0) || (seq > fv.nsends) || (fv.nsends - seq >= FV_SEND_LOG)) {
        return NULL;
    }
    return &fv.sends[(seq - 1) % FV_SEND_LOG];
}


uint64_t fv_chunk_total(void)
{
    return fv.nchunks;
}


const fv_send_t *fv_chunk_get(uint64_t seq)
{
    if ((seq == 0) || (seq > fv.nchunks) ||
        (fv.nchunks - seq >= FV_CHUNK_LOG)) {
        return NULL;
    }
    return &fv.chunks[(seq - 1) % FV_CHUNK_LOG];
}


unsigned fv_complete_sends(uint32_t qpn, unsigned n, enum ibv_wc_status status)
{
    fv_qp_t *qp;
    unsigned done = 0;
    fv_wqe_t *w;

    pthread_mutex_lock(&fv.lock);
    qp = fv_qp_find(qpn);
    if (qp == NULL) {
        pthread_mutex_unlock(&fv.lock);
        return 0;
    }
    while ((done < n) && (qp->sq.count > 0)) {
        w = fv_wq_pop(&qp->sq);
        if (status == IBV_WC_SUCCESS) {
            fv_send_complete(qp, w, IBV_WC_SUCCESS, 0);
        } else {
            /* the failed send completes, signaled or not; the QP is in the
             * error state and flushes the rest */
            fv_send_complete(qp, w, status, 1);
            qp->qp.state = IBV_QPS_ERR;
            while (qp->sq.count > 0) {
                fv_send_complete(qp, fv_wq_pop(&qp->sq), IBV_WC_WR_FLUSH_ERR,
                                 1);
                ++done;
            }
        }
        ++done;
    }
    pthread_mutex_unlock(&fv.lock);
    return done;
}


/* The live QPs with posted sends (@a recv 0), or with receives of their
 * own (@a recv 1: not on an SRQ) */
static unsigned fv_qps_with(int recv, uint32_t *qpns, unsigned max)
{
    unsigned i, n = 0;
    fv_qp_t *qp;

    for (i = 0; (i < fv.nobjs) && (n < max); ++i) {
        if ((fv.objs[i].type != FV_OBJ_QP) || !fv.objs[i].live) {
            continue;
        }
        qp = fv.objs[i].ptr;
        if (recv ? ((qp->qp.srq == NULL) && (qp->rq.count > 0)) :
                   (qp->sq.count > 0)) {
            qpns[n++] = qp->qp.qp_num;
        }
    }
    return n;
}


unsigned fv_send_qps(uint32_t *qpns, unsigned max)
{
    return fv_qps_with(0, qpns, max);
}


unsigned fv_recv_qps(uint32_t *qpns, unsigned max)
{
    return fv_qps_with(1, qpns, max);
}


unsigned fv_sends_pending(uint32_t qpn)
{
    fv_qp_t *qp = fv_qp_find(qpn);

    return (qp != NULL) ? qp->sq.count : 0;
}


int fv_qp_exists(uint32_t qpn, uint32_t *qkey)
{
    fv_qp_t *qp = fv_qp_find(qpn);

    if ((qp != NULL) && (qkey != NULL)) {
        *qkey = qp->qkey;
    }
    return qp != NULL;
}


unsigned fv_recvs_posted(uint32_t qpn)
{
    fv_qp_t *qp = fv_qp_find(qpn);

    if (qp == NULL) {
        return 0;
    }
    return (qp->qp.srq != NULL) ? ((fv_srq_t*)qp->qp.srq)->rq.count :
                                  qp->rq.count;
}


unsigned fv_recv_cq_count(uint32_t qpn)
{
    fv_qp_t *qp = fv_qp_find(qpn);

    return (qp != NULL) ? ((fv_cq_t*)qp->qp.recv_cq)->count : 0;
}


void fv_set_range_check(fv_range_check_t cb)
{
    fv.range_check = cb;
}


void fv_get_stats(fv_stats_t *s)
{
    *s = fv.stats;
}


int fv_deliver(uint32_t dest_qpn, const uint8_t *src_gid, uint32_t src_qpn,
               uint32_t qkey, int with_imm, uint32_t imm, int grh_mode,
               const void *data, size_t len)
{
    uint8_t pkt[FV_GRH_LEN + FV_MAX_PKT];
    struct ibv_async_event event;
    struct ibv_grh *grh = (struct ibv_grh*)pkt;
    size_t total, off, n, room;
    fv_srq_t *srq = NULL;
    struct ibv_wc wc;
    fv_wqe_t *w;
    fv_wq_t *rq;
    fv_qp_t *qp;
    int i, raise = 0;

    if (len > FV_MAX_PKT) {
        return -1; /* the fabric carries at most the MTU */
    }

    pthread_mutex_lock(&fv.lock);
    qp = fv_qp_find(dest_qpn);
    if ((qp == NULL) || (qp->qp.state < IBV_QPS_RTR) ||
        (qp->qp.state == IBV_QPS_ERR) || (qkey != qp->qkey)) {
        pthread_mutex_unlock(&fv.lock);
        return -1; /* the device drops it before a receive is consumed */
    }
    if (qp->qp.srq != NULL) {
        srq = (fv_srq_t*)qp->qp.srq;
        rq  = &srq->rq;
    } else {
        rq = &qp->rq;
    }
    if (rq->count == 0) {
        pthread_mutex_unlock(&fv.lock);
        return -1; /* receiver not ready: dropped */
    }

    /* the GRH slot: an IPv6 header with the source and destination GIDs */
    memset(pkt, 0, FV_GRH_LEN);
    grh->version_tclass_flow = htonl((grh_mode == 1) ? (4u << 28) :
                                                       (6u << 28));
    grh->paylen              = htons(len);
    grh->next_hdr            = 0x1b;
    grh->hop_limit           = 64;
    memcpy(grh->sgid.raw, src_gid, 16);
    memcpy(grh->dgid.raw, fv_local_gid, 16);
    memcpy(pkt + FV_GRH_LEN, data, len);
    total = FV_GRH_LEN + len;

    w = fv_wq_pop(rq);
    memset(&wc, 0, sizeof(wc));
    wc.wr_id    = w->wr_id;
    wc.opcode   = IBV_WC_RECV;
    wc.qp_num   = qp->qp.qp_num;
    wc.src_qp   = src_qpn;
    wc.slid     = 0;
    wc.wc_flags = (grh_mode == 2) ? 0 : IBV_WC_GRH;
    if (with_imm) {
        wc.wc_flags |= IBV_WC_WITH_IMM;
        wc.imm_data  = htonl(imm);
    }

    room = 0;
    for (i = 0; i < w->num_sge; ++i) {
        room += w->sge[i].length;
    }
    if (total > room) {
        /* the receive is too small: consumed with an error */
        ++fv.stats.recv_len_errors;
        wc.status   = IBV_WC_LOC_LEN_ERR;
        wc.byte_len = 0;
    } else {
        wc.status   = IBV_WC_SUCCESS;
        wc.byte_len = total;
        off         = 0;
        for (i = 0; i < w->num_sge; ++i) {
            /* still registered, as when it was posted */
            fv_sge_check("receive", &w->sge[i], 1);
            n = FV_MIN(total - off, w->sge[i].length);
            if (n > 0) {
                fv_dma_write(w->sge[i].addr, pkt + off, n);
            }
            /* SRQ buffers: the bytes past the packet are nobody's */
            if ((srq != NULL) && (w->sge[i].length > n)) {
                ASAN_POISON_MEMORY_REGION(
                        (void*)(uintptr_t)(w->sge[i].addr + n),
                        w->sge[i].length - n);
            }
            off += n;
        }
    }
    fv_cq_push((fv_cq_t*)qp->qp.recv_cq, &wc);

    if ((srq != NULL) && (srq->limit > 0) && (rq->count < srq->limit)) {
        /* the watermark: one event, then disarmed until set again */
        srq->limit = 0;
        ++fv.stats.srq_limit_events;
        memset(&event, 0, sizeof(event));
        event.event_type  = IBV_EVENT_SRQ_LIMIT_REACHED;
        event.element.srq = &srq->srq;
        raise             = 1;
    }
    pthread_mutex_unlock(&fv.lock);

    if (raise) {
        fv_raise_async_event(&event);
    }
    return 0;
}
