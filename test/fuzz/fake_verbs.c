/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The fake verbs device of fuzz_path.c (see fake_verbs.h). It defines the
 * libibverbs functions srqud calls; the data path (post_send, post_recv,
 * post_srq_recv, poll_cq, req_notify_cq), which verbs.h inlines through
 * context->ops, goes to the ops table of the fake context. The context is
 * not an extended one (abi_compat is not __VERBS_ABI_IS_EXTENDED), so the
 * inline wrappers of extended verbs (ibv_create_cq_ex, ibv_alloc_td, the
 * extended ibv_query_port) find no op and fall back or fail with
 * EOPNOTSUPP, as with a provider that has none (rxe has no thread domains).
 *
 * Memory checks: ibv_reg_mr records [addr, addr + length) and the access
 * of every lkey; a scatter/gather entry outside its lkey's memory, with an
 * unknown or deregistered lkey, or a receive into memory without local
 * write access aborts the process, so libFuzzer keeps the input. A send's
 * entries are checked when it is posted and again when it goes on the wire
 * (fv_complete_sends: the device reads the memory then, inline data
 * excepted), a receive's when it is posted and when a packet lands in it.
 * A QP reset discards what is posted, as the device does.
 *
 * Receive buffers of the SRQ are poisoned (AddressSanitizer) past the
 * bytes a packet filled when it completes, and unpoisoned when reposted:
 * a read past the packet is caught as if each packet were an allocation of
 * exactly its size.
 *
 * The data path and what the target drives are in fake_verbs_data.c; what
 * both files share, in fake_verbs_int.h.
 */

#include "fake_verbs_int.h"


const uint8_t fv_local_gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
                                  10, 0, 0, 1};

static const uint8_t fv_gid_table[4][16] = {
    {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44,
     0x55},                                               /* link-local */
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}, /* IPv4-mapped */
    {0},                                                  /* empty */
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1} /* loopback */
};

const char *fv_obj_names[FV_OBJ_LAST] = {"context", "pd", "mr", "cq",
                                         "srq", "qp", "ah", "comp_channel"};


struct fv_state fv = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .async_fd = -1
};


static void fv_obj_add(fv_obj_type_t type, void *ptr)
{
    if (fv.nobjs == fv.cap_objs) {
        fv.cap_objs = fv.cap_objs ? 2 * fv.cap_objs : 64;
        fv.objs     = realloc(fv.objs, fv.cap_objs * sizeof(*fv.objs));
        if (fv.objs == NULL) {
            FV_FAIL("out of memory");
        }
    }
    fv.objs[fv.nobjs++] = (fv_obj_t){type, ptr, 1};
}


static void fv_obj_del(fv_obj_type_t type, void *ptr)
{
    unsigned i;

    for (i = 0; i < fv.nobjs; ++i) {
        if ((fv.objs[i].ptr == ptr) && (fv.objs[i].type == type) &&
            fv.objs[i].live) {
            fv.objs[i].live = 0;
            return;
        }
    }
    FV_FAIL("destroying a %s %p that is not live", fv_obj_names[type], ptr);
}


static void fv_wq_init(fv_wq_t *wq, unsigned cap)
{
    wq->cap   = cap;
    wq->head  = 0;
    wq->count = 0;
    wq->ring  = (cap > 0) ? calloc(cap, sizeof(*wq->ring)) : NULL;
    if ((cap > 0) && (wq->ring == NULL)) {
        FV_FAIL("out of memory");
    }
}


/* ------------------------------------------------------------------------
 * Memory: registrations and the checks of scatter/gather entries
 */

static fv_mr_t *fv_mr_of(uint32_t lkey)
{
    uint32_t index = (lkey & 0xffff) - 1;

    if (((lkey >> 16) != 0x5d) || (index >= fv.nmrs)) {
        return NULL;
    }
    return fv.mrs[index];
}


void fv_sge_check(const char *what, const fv_sge_t *sge, int write)
{
    fv_mr_t *mr;
    uint64_t start, end;

    if (sge->length == 0) {
        return;
    }
    mr = fv_mr_of(sge->lkey);
    if (mr == NULL) {
        FV_FAIL("%s: sge [0x%lx, +%u) with unknown lkey 0x%x", what,
                (unsigned long)sge->addr, sge->length, sge->lkey);
    }
    if (!mr->live) {
        FV_FAIL("%s: sge [0x%lx, +%u) with lkey 0x%x of a deregistered MR",
                what, (unsigned long)sge->addr, sge->length, sge->lkey);
    }
    start = (uintptr_t)mr->mr.addr;
    end   = start + mr->mr.length;
    if ((sge->addr < start) || (sge->addr + sge->length > end) ||
        (sge->addr + sge->length < sge->addr)) {
        FV_FAIL("%s: sge [0x%lx, +%u) outside its MR [0x%lx, +%zu) (lkey "
                "0x%x)", what, (unsigned long)sge->addr, sge->length,
                (unsigned long)start, mr->mr.length, sge->lkey);
    }
    if (write && !(mr->access & IBV_ACCESS_LOCAL_WRITE)) {
        FV_FAIL("%s: receive into MR lkey 0x%x without local write", what,
                sge->lkey);
    }
}


struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                uint64_t iova, unsigned int access)
{
    fv_mr_t *mr;

    if ((length == 0) || (addr == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    if (fv.nmrs == FV_MAX_MR) {
        errno = ENOMEM;
        return NULL;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    mr->mr.context = pd->context;
    mr->mr.pd      = pd;
    mr->mr.addr    = addr;
    mr->mr.length  = length;
    mr->mr.lkey    = (0x5d << 16) | (fv.nmrs + 1);
    mr->mr.rkey    = mr->mr.lkey ^ 0x11110000;
    mr->live       = 1;
    mr->access     = access;
    fv.mrs[fv.nmrs++] = mr;
    fv_obj_add(FV_OBJ_MR, mr);
    return &mr->mr;
}


struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
                            int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, access);
}


int ibv_dereg_mr(struct ibv_mr *ibmr)
{
    fv_mr_t *mr = (fv_mr_t*)ibmr;

    if ((fv_mr_of(ibmr->lkey) != mr) || !mr->live) {
        FV_FAIL("ibv_dereg_mr of an MR that is not live");
    }
    mr->live = 0; /* kept: its lkey is known dead */
    fv_obj_del(FV_OBJ_MR, mr);
    return 0;
}


/* ------------------------------------------------------------------------
 * Device, context, port
 */

struct ibv_device **ibv_get_device_list(int *num_devices)
{
    struct ibv_device **list = calloc(2, sizeof(*list));

    if (list == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (fv.device.name[0] == '\0') {
        snprintf(fv.device.name, sizeof(fv.device.name), "%s", FV_DEV_NAME);
        snprintf(fv.device.dev_name, sizeof(fv.device.dev_name), "uverbs0");
        fv.device.node_type      = IBV_NODE_CA;
        fv.device.transport_type = IBV_TRANSPORT_IB;
    }
    list[0] = &fv.device;
    if (num_devices != NULL) {
        *num_devices = 1;
    }
    return list;
}


void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}


const char *ibv_get_device_name(struct ibv_device *device)
{
    return device->name;
}


struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    struct ibv_context *ctx = calloc(1, sizeof(*ctx));

    if (ctx == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ctx->device             = device;
    ctx->ops.poll_cq        = fv_poll_cq;
    ctx->ops.req_notify_cq  = fv_req_notify_cq;
    ctx->ops.post_send      = fv_post_send;
    ctx->ops.post_recv      = fv_post_recv;
    ctx->ops.post_srq_recv  = fv_post_srq_recv;
    ctx->cmd_fd             = -1;
    ctx->async_fd           = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ctx->num_comp_vectors   = 1;
    ctx->abi_compat         = NULL; /* not extended */
    pthread_mutex_init(&ctx->mutex, NULL);
    if (ctx->async_fd < 0) {
        free(ctx);
        return NULL;
    }
    fv.async_fd = ctx->async_fd;
    fv.ctx      = ctx;
    fv_obj_add(FV_OBJ_CTX, ctx);
    return ctx;
}


int ibv_close_device(struct ibv_context *ctx)
{
    fv_obj_del(FV_OBJ_CTX, ctx);
    close(ctx->async_fd);
    fv.async_fd = -1;
    fv.ctx      = NULL;
    pthread_mutex_destroy(&ctx->mutex);
    free(ctx);
    return 0;
}


int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
    memset(attr, 0, sizeof(*attr));
    snprintf(attr->fw_ver, sizeof(attr->fw_ver), "0.0.0");
    attr->max_mr_size     = 1ull << 40;
    attr->page_size_cap   = 4096;
    attr->vendor_id       = 0x5d;
    attr->max_qp          = 1024;
    attr->max_qp_wr       = FV_MAX_QP_WR;
    attr->max_sge         = FV_MAX_SGE;
    attr->max_cq          = 1024;
    attr->max_cqe         = 1 << 20;
    attr->max_mr          = FV_MAX_MR;
    attr->max_pd          = 64;
    attr->max_ah          = 1 << 16;
    attr->max_srq         = 64;
    attr->max_srq_wr      = FV_MAX_QP_WR;
    attr->max_srq_sge     = FV_MAX_SGE;
    attr->phys_port_cnt   = 1;
    return 0;
}


int (ibv_query_port)(struct ibv_context *ctx, uint8_t port,
                     struct _compat_ibv_port_attr *compat)
{
    struct ibv_port_attr *attr = (struct ibv_port_attr*)compat;

    /* the inline wrapper zeroed the whole struct ibv_port_attr */
    if (port != 1) {
        errno = EINVAL;
        return EINVAL;
    }
    attr->state        = IBV_PORT_ACTIVE;
    attr->max_mtu      = IBV_MTU_4096;
    attr->active_mtu   = IBV_MTU_1024;
    attr->gid_tbl_len  = 4;
    attr->max_msg_sz   = 1 << 30;
    attr->pkey_tbl_len = 1;
    attr->lid          = 0;
    attr->link_layer   = IBV_LINK_LAYER_ETHERNET;
    attr->active_width = 2;   /* 4x */
    attr->active_speed = 32;  /* EDR */
    attr->phys_state   = 5;   /* LinkUp */
    return 0;
}


int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index,
                  union ibv_gid *gid)
{
    if ((port != 1) || (index < 0) || (index >= 4)) {
        errno = EINVAL;
        return -1;
    }
    memcpy(gid->raw, fv_gid_table[index], 16);
    return 0;
}


struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
    struct ibv_pd *pd = calloc(1, sizeof(*pd));

    if (pd == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    pd->context = ctx;
    fv_obj_add(FV_OBJ_PD, pd);
    return pd;
}


int ibv_dealloc_pd(struct ibv_pd *pd)
{
    fv_obj_del(FV_OBJ_PD, pd);
    free(pd);
    return 0;
}


const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    switch (status) {
    case IBV_WC_SUCCESS:      return "success";
    case IBV_WC_LOC_LEN_ERR:  return "local length error";
    case IBV_WC_LOC_QP_OP_ERR:return "local QP operation error";
    case IBV_WC_LOC_PROT_ERR: return "local protection error";
    case IBV_WC_WR_FLUSH_ERR: return "Work Request Flushed Error";
    default:                  return "fake error";
    }
}


const char *ibv_event_type_str(enum ibv_event_type event)
{
    switch (event) {
    case IBV_EVENT_SRQ_LIMIT_REACHED: return "SRQ limit reached";
    case IBV_EVENT_SRQ_ERR:           return "SRQ catastrophic error";
    default:                          return "unknown";
    }
}


/* ------------------------------------------------------------------------
 * Async events: raised by the fake (SRQ limit), handled by srqud's md on
 * UCX's async thread, which watches the context's async fd
 */

int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
    uint64_t v;
    int ret = -1;

    pthread_mutex_lock(&fv.lock);
    if (fv.event_pending) {
        *event           = fv.pending_event;
        fv.event_pending = 0;
        ret              = 0;
    } else {
        if (read(ctx->async_fd, &v, sizeof(v)) < 0) {
            /* nothing: EAGAIN */
        }
        errno = EAGAIN;
    }
    pthread_mutex_unlock(&fv.lock);
    return ret;
}


void ibv_ack_async_event(struct ibv_async_event *event)
{
    __atomic_add_fetch(&fv.events_acked, 1, __ATOMIC_SEQ_CST);
}


/* Raise an async event and wait for the async thread to handle it: the
 * main thread does nothing meanwhile, so the run stays reproducible */
void fv_raise_async_event(struct ibv_async_event *event)
{
    uint64_t one = 1;
    struct timespec ts = {0, 20000};
    unsigned long target;
    int i;

    pthread_mutex_lock(&fv.lock);
    fv.pending_event = *event;
    fv.event_pending = 1;
    target           = ++fv.events_raised;
    pthread_mutex_unlock(&fv.lock);
    if (write(fv.async_fd, &one, sizeof(one)) != sizeof(one)) {
        FV_FAIL("write(async fd) failed");
    }
    for (i = 0; i < 250000; ++i) { /* 5 s */
        if (__atomic_load_n(&fv.events_acked, __ATOMIC_SEQ_CST) >= target) {
            return;
        }
        nanosleep(&ts, NULL);
    }
    FV_FAIL("an SRQ limit event was not handled within 5 s");
}


/* ------------------------------------------------------------------------
 * Completion queues and channels
 */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
    fv_channel_t *ch = calloc(1, sizeof(*ch));

    if (ch == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ch->ch.context = ctx;
    ch->ch.fd      = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ch->ch.refcnt  = 0;
    if (ch->ch.fd < 0) {
        free(ch);
        return NULL;
    }
    fv_obj_add(FV_OBJ_CHANNEL, ch);
    return &ch->ch;
}


int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    fv_channel_t *ch = (fv_channel_t*)channel;

    if (channel->refcnt != 0) {
        FV_FAIL("destroying a completion channel with %d CQs",
                channel->refcnt);
    }
    fv_obj_del(FV_OBJ_CHANNEL, ch);
    close(channel->fd);
    free(ch);
    return 0;
}


struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe,
                             void *cq_context,
                             struct ibv_comp_channel *channel, int comp_vector)
{
    fv_cq_t *cq;

    if ((cqe <= 0) || (cqe > (1 << 20))) {
        errno = EINVAL;
        return NULL;
    }
    cq = calloc(1, sizeof(*cq));
    if (cq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    cq->ring = calloc(cqe, sizeof(*cq->ring));
    if (cq->ring == NULL) {
        free(cq);
        errno = ENOMEM;
        return NULL;
    }
    cq->cap           = cqe;
    cq->cq.context    = ctx;
    cq->cq.channel    = channel;
    cq->cq.cq_context = cq_context;
    cq->cq.cqe        = cqe;
    cq->live          = 1;
    if (channel != NULL) {
        ++channel->refcnt;
    }
    fv_obj_add(FV_OBJ_CQ, cq);
    return &cq->cq;
}


int ibv_destroy_cq(struct ibv_cq *ibcq)
{
    fv_cq_t *cq = (fv_cq_t*)ibcq;
    unsigned i;

    for (i = 0; i < fv.nobjs; ++i) {
        if ((fv.objs[i].type == FV_OBJ_QP) && fv.objs[i].live) {
            fv_qp_t *qp = fv.objs[i].ptr;
            if ((qp->qp.send_cq == ibcq) || (qp->qp.recv_cq == ibcq)) {
                FV_FAIL("destroying a CQ a live QP 0x%x uses",
                        qp->qp.qp_num);
            }
        }
    }
    fv_obj_del(FV_OBJ_CQ, cq);
    if (ibcq->channel != NULL) {
        --ibcq->channel->refcnt;
    }
    free(cq->ring);
    free(cq);
    return 0;
}


int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                     void **cq_context)
{
    fv_channel_t *ch = (fv_channel_t*)channel;
    uint64_t v;

    if (ch->events == 0) {
        errno = EAGAIN;
        return -1;
    }
    --ch->events;
    if (ch->events == 0) {
        if (read(channel->fd, &v, sizeof(v)) < 0) {
            /* drained already */
        }
    }
    *cq         = &ch->last_cq->cq;
    *cq_context = ch->last_cq->cq.cq_context;
    return 0;
}


void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
}


/* ------------------------------------------------------------------------
 * SRQ
 */

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
                               struct ibv_srq_init_attr *attr)
{
    fv_srq_t *srq;

    if ((attr->attr.max_wr == 0) || (attr->attr.max_wr > FV_MAX_QP_WR) ||
        (attr->attr.max_sge > FV_MAX_SGE)) {
        errno = EINVAL;
        return NULL;
    }
    srq = calloc(1, sizeof(*srq));
    if (srq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    srq->srq.context     = pd->context;
    srq->srq.srq_context = attr->srq_context;
    srq->srq.pd          = pd;
    srq->max_sge         = attr->attr.max_sge;
    srq->live            = 1;
    fv_wq_init(&srq->rq, attr->attr.max_wr);
    fv_obj_add(FV_OBJ_SRQ, srq);
    return &srq->srq;
}


int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
                   int mask)
{
    fv_srq_t *srq = (fv_srq_t*)ibsrq;

    if (mask & IBV_SRQ_MAX_WR) {
        return EINVAL; /* not resizable */
    }
    if (mask & IBV_SRQ_LIMIT) {
        if (attr->srq_limit > srq->rq.cap) {
            return EINVAL;
        }
        pthread_mutex_lock(&fv.lock);
        srq->limit = attr->srq_limit;
        pthread_mutex_unlock(&fv.lock);
    }
    return 0;
}


int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
    fv_srq_t *srq = (fv_srq_t*)ibsrq;
    unsigned i;

    for (i = 0; i < fv.nobjs; ++i) {
        if ((fv.objs[i].type == FV_OBJ_QP) && fv.objs[i].live &&
            (((fv_qp_t*)fv.objs[i].ptr)->qp.srq == ibsrq)) {
            FV_FAIL("destroying an SRQ a live QP uses");
        }
    }
    fv_obj_del(FV_OBJ_SRQ, srq);
    free(srq->rq.ring);
    free(srq);
    return 0;
}


/* ------------------------------------------------------------------------
 * QPs and address handles
 */

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    fv_qp_t *qp;

    if ((attr->qp_type != IBV_QPT_UD) || (attr->send_cq == NULL) ||
        (attr->recv_cq == NULL) || (attr->cap.max_send_wr > FV_MAX_QP_WR) ||
        (attr->cap.max_recv_wr > FV_MAX_QP_WR) ||
        (attr->cap.max_send_sge > FV_MAX_SGE) ||
        (attr->cap.max_recv_sge > FV_MAX_SGE) ||
        (attr->cap.max_inline_data > 256)) {
        errno = EINVAL;
        return NULL;
    }
    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    qp->qp.context    = pd->context;
    qp->qp.qp_context = attr->qp_context;
    qp->qp.pd         = pd;
    qp->qp.send_cq    = attr->send_cq;
    qp->qp.recv_cq    = attr->recv_cq;
    qp->qp.srq        = attr->srq;
    qp->qp.qp_num     = fv.next_qpn++;
    qp->qp.state      = IBV_QPS_RESET;
    qp->qp.qp_type    = IBV_QPT_UD;
    qp->cap           = attr->cap;
    qp->live          = 1;
    fv_wq_init(&qp->sq, FV_MAX(attr->cap.max_send_wr, 1));
    fv_wq_init(&qp->rq, (attr->srq == NULL) ?
                        FV_MAX(attr->cap.max_recv_wr, 1) : 0);
    fv_obj_add(FV_OBJ_QP, qp);
    return &qp->qp;
}


int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
    fv_qp_t *qp = (fv_qp_t*)ibqp;
    enum ibv_qp_state cur = ibqp->state, next;

    pthread_mutex_lock(&fv.lock);
    next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
    if (mask & IBV_QP_STATE) {
        switch (next) {
        case IBV_QPS_RESET:
            qp->sq.count = qp->sq.head = 0; /* discarded, no completions */
            qp->rq.count = qp->rq.head = 0;
            break;
        case IBV_QPS_INIT:
            if ((cur != IBV_QPS_RESET) && (cur != IBV_QPS_INIT)) {
                goto einval;
            }
            break;
        case IBV_QPS_RTR:
            if (cur != IBV_QPS_INIT) {
                goto einval;
            }
            break;
        case IBV_QPS_RTS:
            if ((cur != IBV_QPS_RTR) && (cur != IBV_QPS_RTS)) {
                goto einval;
            }
            break;
        case IBV_QPS_ERR:
            break;
        default:
            goto einval;
        }
    } else if ((mask & IBV_QP_QKEY) && (cur != IBV_QPS_RTS) &&
               (cur != IBV_QPS_INIT) && (cur != IBV_QPS_RTR)) {
        goto einval;
    }
    if (mask & IBV_QP_QKEY) {
        qp->qkey = attr->qkey;
    }
    ibqp->state = next;
    pthread_mutex_unlock(&fv.lock);
    return 0;

einval:
    pthread_mutex_unlock(&fv.lock);
    return EINVAL;
}


int ibv_destroy_qp(struct ibv_qp *ibqp)
{
    fv_qp_t *qp = (fv_qp_t*)ibqp;

    pthread_mutex_lock(&fv.lock);
    qp->live = 0;
    fv_obj_del(FV_OBJ_QP, qp);
    pthread_mutex_unlock(&fv.lock);
    free(qp->sq.ring);
    free(qp->rq.ring);
    free(qp);
    return 0;
}


struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    static const uint8_t zero[16];
    fv_ah_t *ah;

    /* RoCE: every address handle has a GRH, to a GID that is not zero */
    if (!attr->is_global || !memcmp(attr->grh.dgid.raw, zero, 16) ||
        (attr->port_num != 1) || (attr->grh.sgid_index >= 4)) {
        errno = EINVAL;
        return NULL;
    }
    ah = calloc(1, sizeof(*ah));
    if (ah == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ah->ah.context = pd->context;
    ah->ah.pd      = pd;
    memcpy(ah->dgid, attr->grh.dgid.raw, 16);
    fv_obj_add(FV_OBJ_AH, ah);
    return &ah->ah;
}


int ibv_destroy_ah(struct ibv_ah *ah)
{
    fv_obj_del(FV_OBJ_AH, ah);
    free(ah);
    return 0;
}


int ibv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port_num,
                        struct ibv_wc *wc, struct ibv_grh *grh_p,
                        struct ibv_ah_attr *ah_attr)
{
    struct ibv_grh grh;

    /* the GRH slot sits where the receive SGE starts, 60 bytes before an
     * aligned payload: read it as rdma-core's byte-wise parsing does */
    memcpy(&grh, grh_p, sizeof(grh));
    memset(ah_attr, 0, sizeof(*ah_attr));
    if (!(wc->wc_flags & IBV_WC_GRH) ||
        ((ntohl(grh.version_tclass_flow) >> 28) != 6)) {
        errno = EINVAL;
        return -1;
    }
    ah_attr->is_global     = 1;
    ah_attr->port_num      = port_num;
    ah_attr->dlid          = wc->slid;
    ah_attr->grh.hop_limit = grh.hop_limit;
    memcpy(ah_attr->grh.dgid.raw, grh.sgid.raw, 16);
    return 0;
}
