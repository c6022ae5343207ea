/*
 * The receiving half of staged steps sent as one active message
 * (allgather_am_def.h for the format, allgather/allgather_am.c sends): the
 * context's handler checks a step message against its group, copies the
 * payload into the group's staging half and raises the step's flag.
 *
 * Why the handler may write: a peer's message for collective n lands in the
 * half of n, exactly where its put would have, so the double-buffering
 * argument of allgather_rdma.c holds unchanged. Why the receiver sees data
 * before the flag: UCP calls the handler from ucp_worker_progress() on the
 * thread that then polls the flag; the release store only matters to a
 * caller progressing from another thread.
 *
 * A group is on the context's list from sucg_group_create_post() on, so a
 * message from a peer that completed the creation first finds it.
 */
#include "sucg/core/sucg_internal.h"

static sucg_group_h sucg_am_group(sucg_context_h ctx, uint16_t id)
{
    sucg_group_h g;

    for (g = ctx->groups; g != NULL; g = g->next) {
        if ((g->id == id) && (g->buf != NULL)) {
            return g;
        }
    }
    return NULL;
}

static void sucg_am_drop(sucg_context_h ctx, const char *why)
{
    if (ctx->stats.am_dropped++ == 0) {
        sucg_error("dropped a step message from a peer: %s (logged once)",
                   why);
    }
}

static ucs_status_t sucg_am_recv_cb(void *arg, const void *header,
                                    size_t header_length, void *data,
                                    size_t length,
                                    const ucp_am_recv_param_t *param)
{
    sucg_context_h ctx = arg;
    const uint8_t *src = data;
    sucg_am_limits_t lim;
    sucg_am_hdr_t hdr;
    const char *why;
    sucg_group_h g;
    unsigned i;

    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        /* ours are sent eager: the data is here, in the callback */
        sucg_am_drop(ctx, "a rendezvous message");
        return UCS_OK;
    }
    if (sucg_am_parse(header, header_length, &hdr) != 0) {
        sucg_am_drop(ctx, "header of another size");
        return UCS_OK;
    }
    g = sucg_am_group(ctx, hdr.group_id);
    if (g == NULL) {
        sucg_am_drop(ctx, "no group of that id");
        return UCS_OK;
    }
    lim.nslots     = g->layout.nslots;
    lim.stage_size = g->layout.stage_size;
    lim.seq        = g->seq;
    why            = sucg_am_check(&hdr, length, &lim);
    if (why != NULL) {
        sucg_am_drop(ctx, why);
        return UCS_OK;
    }
    for (i = 0; i < hdr.nranges; ++i) {
        memcpy(sucg_stage(g, hdr.seq) + hdr.range[i].off, src,
               hdr.range[i].len);
        src += hdr.range[i].len;
    }
    __atomic_store_n((uint64_t*)sucg_data_flag(g, hdr.seq, hdr.step), hdr.seq,
                     __ATOMIC_RELEASE);
    return UCS_OK;
}

static ucs_status_t sucg_am_set_handler(sucg_context_h ctx, uint16_t id,
                                        ucp_am_recv_callback_t cb)
{
    ucp_am_handler_param_t p;

    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                   UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG |
                   UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    p.id         = id;
    p.cb         = cb;
    p.arg        = ctx;
    p.flags      = UCP_AM_FLAG_WHOLE_MSG;
    return ucp_worker_set_am_recv_handler(ctx->ucp_worker, &p);
}

SUCG_EXPORT ucs_status_t sucg_context_enable_am(sucg_context_h ctx,
                                                uint16_t am_id)
{
    ucs_status_t status;

    if (ctx->config.staged_step == SUCG_STAGED_STEP_PUT) {
        return UCS_OK;   /* the user chose puts: nothing registered */
    }
    if (ctx->groups != NULL) {
        sucg_error("sucg_context_enable_am: groups exist already");
        return UCS_ERR_INVALID_PARAM;
    }
    status = sucg_am_set_handler(ctx, am_id, sucg_am_recv_cb);
    if (status != UCS_OK) {
        sucg_error("sucg_context_enable_am: active message id %u: %s",
                   am_id, ucs_status_string(status));
        return status;
    }
    ctx->am_enabled = 1;
    ctx->am_id      = am_id;
    return UCS_OK;
}

void sucg_am_disable(sucg_context_h ctx)
{
    if (ctx->am_enabled) {
        /* the worker is the caller's and outlives the context */
        (void)sucg_am_set_handler(ctx, ctx->am_id, NULL);
        ctx->am_enabled = 0;
    }
}
