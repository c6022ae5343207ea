/*
 * Group creation: one ucp_mem_map of the group buffer, one OOB allgather of
 * a fixed-size record per rank carrying the buffer address, its packed rkey,
 * optionally the worker address, and the configuration that must agree on
 * every rank (the algorithm and staged/zero-copy decisions are taken locally
 * from it, so it must be identical everywhere; a mismatch is reported here
 * instead of as a hang later).
 */
#include "sucg/core/sucg_internal.h"
#include "sucg/core/sucg_lanes.h"

#include <stdlib.h>

#define SUCG_OOB_MAGIC        0x53554347u  /* "SUCG" */
#define SUCG_OOB_RECORD_SIZE  4096

/* takes staged steps as active messages (sucg_context_enable_am) */
#define SUCG_OOB_FEATURE_AM      1u
/* reaches a peer whose puts are messages its CPU applies (sucg_lanes.h) */
#define SUCG_OOB_FEATURE_RMA_MSG 2u

typedef struct sucg_oob_record {
    uint32_t magic;
    uint32_t api_version;
    int32_t  rank;
    int32_t  size;
    int32_t  error;          /* this rank failed locally: everyone fails */
    uint32_t rkey_len;
    uint32_t addr_len;       /* 0: no worker address (eps given) */
    uint32_t features;       /* SUCG_OOB_FEATURE_* */
    uint64_t buf_addr;
    uint64_t buf_size;
    /* configuration that must agree */
    uint64_t zcopy_thresh;
    uint64_t ring_min_bytes;
    uint64_t ring_min_ranks;
    uint64_t group_buffer_size;
    uint64_t allgather_algo;
    uint64_t zcopy_step;
    uint64_t staged_step;    /* the group buffer's layout depends on it */
    uint8_t  data[];         /* rkey, then worker address */
} sucg_oob_record_t;

size_t sucg_group_layout_init(sucg_group_layout_t *l, int size,
                              size_t stage_total, int tail)
{
    size_t rd_steps   = sucg_sched_nsteps(SUCG_SCHED_RD, size);
    size_t ring_steps = sucg_sched_nsteps(SUCG_SCHED_RING, size);

    /* data flags: one per step of the longest schedule */
    l->nslots = (rd_steps > ring_steps ? rd_steps : ring_steps);
    if (l->nslots == 0) {
        l->nslots = 1;
    }
    /* descriptor slot = first zero-copy step of a pair: < rd_steps, and 0
     * for the ring (allgather_rdma.c) */
    l->ndesc         = (rd_steps > 0) ? rd_steps : 1;
    l->data_flag_off = 0;
    l->desc_flag_off = l->data_flag_off + l->nslots * sizeof(uint64_t);
    l->desc_off      = (l->desc_flag_off + l->ndesc * sizeof(uint64_t) + 63) &
                       ~(size_t)63;
    l->stage_off     = l->desc_off + l->ndesc * SUCG_DESC_SLOT_SIZE;
    l->stage_size    = (stage_total / 2) & ~(size_t)63;
    /* tail steps are staged steps, which only recursive doubling has */
    l->ntail         = tail ? l->ndesc : 0;
    l->tail_rx_off   = (l->stage_off + l->stage_size + 63) & ~(size_t)63;
    l->tail_tx_off   = l->tail_rx_off + l->ntail * SUCG_TAIL_SLOT_SIZE;
    l->half_size     = l->tail_tx_off + l->ntail * SUCG_TAIL_SLOT_SIZE;
    return 2 * l->half_size;
}

static ucs_status_t sucg_group_alloc_buffer(sucg_group_h g)
{
    sucg_context_h ctx = g->ctx;
    ucp_mem_map_params_t mp;
    ucp_mem_attr_t attr;
    ucs_status_t status;

    g->buf_size   = sucg_group_layout_init(&g->layout, g->size,
                                           ctx->config.group_buffer_size,
                                           ctx->config.staged_step ==
                                           SUCG_STAGED_STEP_TAIL);
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                    UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.address    = NULL;
    mp.length     = g->buf_size;
    mp.flags      = UCP_MEM_MAP_ALLOCATE;
    status        = ucp_mem_map(ctx->ucp_context, &mp, &g->buf_memh);
    if (status != UCS_OK) {
        sucg_error("group buffer: ucp_mem_map(%zu bytes) failed: %s",
                   g->buf_size, ucs_status_string(status));
        return status;
    }
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
    status          = ucp_mem_query(g->buf_memh, &attr);
    if (status != UCS_OK) {
        ucp_mem_unmap(ctx->ucp_context, g->buf_memh);
        return status;
    }
    g->buf = attr.address;
    /* flags start at 0 and sequence numbers at 1: no stale match */
    memset(g->buf, 0, g->buf_size);
    return UCS_OK;
}

/*
 * Does this rank reach a peer whose puts are messages (srqud, tcp, UCP's
 * emulation)? Read from the endpoints the caller gave; with endpoints of
 * sucg's own, created after the exchange, the answer is no (puts).
 */
/* 1: @a ep's puts are messages; 0: they are RDMA; -1: its lanes unread */
static int sucg_group_ep_rma_msg(ucp_ep_h ep)
{
    sucg_lane_t lanes[SUCG_LANES_MAX];
    int n = sucg_ep_lanes(ep, lanes, SUCG_LANES_MAX);

    return (n > 0) ? sucg_lanes_rma_by_messages(lanes, n) : -1;
}

static int sucg_group_rma_msg(sucg_group_h g)
{
    int r;

    if (g->ctx->config.zcopy_step != SUCG_ZCOPY_STEP_AUTO) {
        return 0;   /* not asked */
    }
    for (r = 0; r < g->size; ++r) {
        if ((g->peers[r].ep != NULL) &&
            (sucg_group_ep_rma_msg(g->peers[r].ep) == 1)) {
            return 1;
        }
    }
    return 0;
}

/*
 * Which peers take staged steps as one put with the flag last
 * (SUCG_STAGED_STEP=tail, allgather_tail.c says why): those whose buffer
 * is mapped here, and those reached by RDMA, read from the endpoint's
 * lanes once it exists (sucg's own endpoints too, unlike the record's
 * answer above). Each sender decides alone: the receiver watches both.
 */
static void sucg_group_tail_peers(sucg_group_h g)
{
    sucg_peer_t *peer;
    int r;

    for (r = 0; r < g->size; ++r) {
        peer = &g->peers[r];
        if ((r == g->rank) || (peer->ep == NULL)) {
            continue;
        }
        peer->tail_ok = (peer->buf_ptr != NULL) ||
                        (sucg_group_ep_rma_msg(peer->ep) == 0);
    }
}

static void sucg_group_fill_record(sucg_group_h g, sucg_oob_record_t *rec,
                                   const void *rkey, size_t rkey_len,
                                   const void *addr, size_t addr_len)
{
    const sucg_config_t *c = &g->ctx->config;

    rec->magic             = SUCG_OOB_MAGIC;
    rec->api_version       = SUCG_API_VERSION;
    rec->rank              = g->rank;
    rec->size              = g->size;
    rec->buf_addr          = (uintptr_t)g->buf;
    rec->buf_size          = g->buf_size;
    rec->zcopy_thresh      = c->zcopy_thresh;
    rec->ring_min_bytes    = c->ring_min_bytes;
    rec->ring_min_ranks    = c->ring_min_ranks;
    rec->group_buffer_size = c->group_buffer_size;
    rec->allgather_algo    = c->allgather_algo;
    rec->zcopy_step        = c->zcopy_step;
    rec->staged_step       = c->staged_step;
    rec->features          = (g->ctx->am_enabled ? SUCG_OOB_FEATURE_AM : 0) |
                             (sucg_group_rma_msg(g) ? SUCG_OOB_FEATURE_RMA_MSG :
                                                      0);
    if (sizeof(*rec) + rkey_len + addr_len > SUCG_OOB_RECORD_SIZE) {
        sucg_error("group: rkey (%zu) + worker address (%zu) exceed the OOB "
                   "record (%d bytes)", rkey_len, addr_len, SUCG_OOB_RECORD_SIZE);
        rec->error = 1;
        return;
    }
    if (rkey_len > SUCG_DESC_RKEY_MAX) {
        /* user buffer rkeys are as large: zero-copy would not fit a slot */
        sucg_error("group: packed rkey of %zu bytes exceeds %zu", rkey_len,
                   SUCG_DESC_RKEY_MAX);
        rec->error = 1;
        return;
    }
    rec->rkey_len = rkey_len;
    rec->addr_len = addr_len;
    memcpy(rec->data, rkey, rkey_len);
    memcpy(rec->data + rkey_len, addr, addr_len);
}

static ucs_status_t sucg_group_check_record(sucg_group_h g, int r,
                                            const sucg_oob_record_t *rec,
                                            const sucg_oob_record_t *mine)
{
    if ((rec->magic != SUCG_OOB_MAGIC) || (rec->rank != r) ||
        (rec->size != g->size) || (rec->api_version != SUCG_API_VERSION)) {
        sucg_error("group: bad OOB record from rank %d (rank %d size %d, "
                   "expected size %d): is the OOB allgather correct?",
                   r, rec->rank, rec->size, g->size);
        return UCS_ERR_INVALID_PARAM;
    }
    if (rec->error) {
        sucg_error("group: rank %d failed to create the group", r);
        return UCS_ERR_NO_RESOURCE;
    }
#define SUCG_CHECK_SAME(_field, _var) \
    if (rec->_field != mine->_field) { \
        sucg_error("group: %s differs between rank %d (%llu) and rank %d " \
                   "(%llu): it must be the same on every rank", _var, r, \
                   (unsigned long long)rec->_field, g->rank, \
                   (unsigned long long)mine->_field); \
        return UCS_ERR_INVALID_PARAM; \
    }
    SUCG_CHECK_SAME(zcopy_thresh, "SUCG_ALLGATHER_ZCOPY_THRESH");
    SUCG_CHECK_SAME(ring_min_bytes, "SUCG_RING_MIN_BYTES");
    SUCG_CHECK_SAME(ring_min_ranks, "SUCG_RING_MIN_RANKS");
    SUCG_CHECK_SAME(group_buffer_size, "SUCG_GROUP_BUFFER_SIZE");
    SUCG_CHECK_SAME(allgather_algo, "SUCG_ALLGATHER_ALGO");
    SUCG_CHECK_SAME(zcopy_step, "SUCG_ZCOPY_STEP");
    SUCG_CHECK_SAME(staged_step, "SUCG_STAGED_STEP");
#undef SUCG_CHECK_SAME
    return UCS_OK;
}

static void sucg_group_release(sucg_group_h g)
{
    ucp_request_param_t param = {0};
    sucg_group_h *p;
    void *req;
    int r, i;

    /* first: closing endpoints below progresses the worker, whose step
     * messages must no longer find this group */
    for (p = &g->ctx->groups; *p != NULL; p = &(*p)->next) {
        if (*p == g) {
            *p = g->next;
            break;
        }
    }
    if (g->peers != NULL) {
        for (r = 0; r < g->size; ++r) {
            for (i = 0; i < SUCG_PEER_RKEY_CACHE; ++i) {
                if (g->peers[r].rcache[i].reg_id != 0) {
                    ucp_rkey_destroy(g->peers[r].rcache[i].rkey);
                }
            }
            if (g->peers[r].buf_rkey != NULL) {
                ucp_rkey_destroy(g->peers[r].buf_rkey);
            }
        }
        for (r = 0; g->own_eps && (r < g->size); ++r) {
            if (g->peers[r].ep == NULL) {
                continue;
            }
            /* flush mode: our last puts reach the peer before the close */
            req = ucp_ep_close_nbx(g->peers[r].ep, &param);
            if (UCS_PTR_IS_PTR(req)) {
                while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                    ucp_worker_progress(g->ctx->ucp_worker);
                }
                ucp_request_free(req);
            }
        }
        free(g->peers);
    }
    if (g->buf_memh != NULL) {
        ucp_mem_unmap(g->ctx->ucp_context, g->buf_memh);
    }
    free(g->create_rec);
    free(g);
}

SUCG_EXPORT ucs_status_t
sucg_group_create_post(sucg_context_h ctx, const sucg_group_params_t *params,
                       sucg_group_h *group_p, const void **record, size_t *len)
{
    void *rkey_buf       = NULL;
    size_t rkey_len      = 0;
    ucp_address_t *waddr = NULL;
    size_t waddr_len     = 0;
    ucs_status_t lstatus;
    sucg_group_h g;
    int r;

    if ((params == NULL) || (params->size < 1) || (params->rank < 0) ||
        (params->rank >= params->size)) {
        sucg_error("sucg_group_create: need 0 <= rank < size");
        return UCS_ERR_INVALID_PARAM;
    }

    g = calloc(1, sizeof(*g));
    if (g == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    g->ctx        = ctx;
    g->rank       = params->rank;
    g->size       = params->size;
    g->id         = (params->id != 0) ? (uint16_t)(params->id - 1) :
                                        ctx->next_group_id++;
    g->peers      = calloc(g->size, sizeof(*g->peers));
    g->create_rec = calloc(1, SUCG_OOB_RECORD_SIZE);
    if ((g->peers == NULL) || (g->create_rec == NULL)) {
        /* before the exchange: every rank fails the same way or hangs; out
         * of memory here is not worth a protocol */
        sucg_group_release(g);
        return UCS_ERR_NO_MEMORY;
    }
    for (r = 0; r < g->size; ++r) {
        if (r == g->rank) {
            continue;
        }
        /* before the exchange: the record says what the endpoints carry */
        g->peers[r].ep = (params->eps != NULL) ? params->eps[r] :
                         (params->ep_cb != NULL) ?
                         params->ep_cb(r, params->ep_cb_arg) : NULL;
    }

    /*
     * Local failures from here on still take part in the exchange (with
     * error set): the other ranks must not wait for us forever.
     */
    lstatus = sucg_group_alloc_buffer(g);
    if (lstatus == UCS_OK) {
        lstatus = ucp_rkey_pack(ctx->ucp_context, g->buf_memh, &rkey_buf,
                                &rkey_len);
    }
    if ((lstatus == UCS_OK) && (params->eps == NULL) &&
        (params->ep_cb == NULL)) {
        g->own_eps = 1;
        lstatus    = ucp_worker_get_address(ctx->ucp_worker, &waddr,
                                            &waddr_len);
    }
    if (lstatus == UCS_OK) {
        sucg_group_fill_record(g, g->create_rec, rkey_buf, rkey_len, waddr,
                               waddr_len);
    } else {
        sucg_group_fill_record(g, g->create_rec, NULL, 0, NULL, 0);
        g->create_rec->error = 1;
    }
    g->create_status = lstatus;
    if (waddr != NULL) {
        ucp_worker_release_address(ctx->ucp_worker, waddr);
    }
    if (rkey_buf != NULL) {
        ucp_rkey_buffer_release(rkey_buf);
    }
    /* listed before the exchange: a peer done with it first may send a
     * step message at once (sucg_am_rx.c) */
    g->next     = ctx->groups;
    ctx->groups = g;
    *group_p    = g;
    *record     = g->create_rec;
    *len        = SUCG_OOB_RECORD_SIZE;
    return UCS_OK;
}

/* peer r's endpoint, from the record when sucg creates its own */
static ucs_status_t sucg_group_connect(sucg_group_h g, int r,
                                      const sucg_oob_record_t *rec)
{
    ucp_ep_params_t ep_params;
    ucs_status_t status;

    if (g->own_eps) {
        if (rec->addr_len == 0) {
            sucg_error("group: rank %d sent no worker address", r);
            return UCS_ERR_INVALID_PARAM;
        }
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address    = (ucp_address_t*)(rec->data + rec->rkey_len);
        status = ucp_ep_create(g->ctx->ucp_worker, &ep_params, &g->peers[r].ep);
        if (status != UCS_OK) {
            sucg_error("group: ucp_ep_create to rank %d failed: %s", r,
                       ucs_status_string(status));
            return status;
        }
    }
    if (g->peers[r].ep == NULL) {
        sucg_error("group: no endpoint for rank %d", r);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

SUCG_EXPORT ucs_status_t sucg_group_create_complete(sucg_group_h g,
                                                    const void *records)
{
    const uint8_t *all = records;
    const sucg_oob_record_t *rec;
    ucs_status_t status = g->create_status;
    void *mapped;
    int r, rma_msg;

    g->am   = 1;
    rma_msg = 0;
    for (r = 0; (status == UCS_OK) && (r < g->size); ++r) {
        rec     = (const sucg_oob_record_t*)(all + (size_t)r *
                                             SUCG_OOB_RECORD_SIZE);
        status  = sucg_group_check_record(g, r, rec, g->create_rec);
        g->am   = g->am && (rec->features & SUCG_OOB_FEATURE_AM);
        rma_msg = rma_msg || (rec->features & SUCG_OOB_FEATURE_RMA_MSG);
        if ((status != UCS_OK) || (r == g->rank)) {
            continue;
        }
        status = sucg_group_connect(g, r, rec);
        if (status != UCS_OK) {
            break;
        }
        g->peers[r].buf_addr = rec->buf_addr;
        status = ucp_ep_rkey_unpack(g->peers[r].ep, rec->data,
                                    &g->peers[r].buf_rkey);
        if (status != UCS_OK) {
            sucg_error("group: cannot unpack the rkey of rank %d: %s", r,
                       ucs_status_string(status));
        } else {
            g->peers[r].buf_ptr = (ucp_rkey_ptr(g->peers[r].buf_rkey,
                                                rec->buf_addr,
                                                &mapped) == UCS_OK) ?
                                  mapped : NULL;
        }
    }
    /* every rank saw every record: all decide alike */
    g->tail      = (g->ctx->config.staged_step == SUCG_STAGED_STEP_TAIL);
    g->zcopy_tag = (g->ctx->config.zcopy_step == SUCG_ZCOPY_STEP_TAG) ||
                   ((g->ctx->config.zcopy_step == SUCG_ZCOPY_STEP_AUTO) &&
                    rma_msg);
    free(g->create_rec);
    g->create_rec = NULL;
    if (status != UCS_OK) {
        sucg_group_release(g);
        return status;
    }
    if (g->tail) {
        sucg_group_tail_peers(g);   /* the endpoints exist now, own ones too */
    }
    return UCS_OK;
}

SUCG_EXPORT ucs_status_t sucg_group_create(sucg_context_h ctx,
                                           const sucg_group_params_t *params,
                                           sucg_group_h *group_p)
{
    const void *record;
    sucg_group_h g;
    ucs_status_t status;
    size_t len;
    void *all;

    if ((params == NULL) || (params->oob_allgather == NULL)) {
        sucg_error("sucg_group_create: need oob_allgather");
        return UCS_ERR_INVALID_PARAM;
    }
    status = sucg_group_create_post(ctx, params, &g, &record, &len);
    if (status != UCS_OK) {
        return status;
    }
    all = calloc(g->size, len);
    if (all == NULL) {
        sucg_group_release(g);
        return UCS_ERR_NO_MEMORY;
    }
    status = params->oob_allgather(record, all, len, params->oob_arg);
    if (status != UCS_OK) {
        sucg_error("group: OOB allgather failed: %s", ucs_status_string(status));
        sucg_group_release(g);
    } else {
        status = sucg_group_create_complete(g, all);
    }
    free(all);
    if (status == UCS_OK) {
        *group_p = g;
    }
    return status;
}

SUCG_EXPORT void sucg_group_destroy(sucg_group_h g)
{
    if (g->queue_head != NULL) {
        sucg_warn("group destroyed with collectives in progress");
    }
    sucg_group_release(g);
}
