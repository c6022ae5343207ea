/*
 * Context: configuration, registration cache, the UCP handles and the list
 * of groups. Progress of the groups is sucg_progress() in sucg_coll.c: the
 * context knows no collectives, it only holds the list they are found in.
 */
#include "sucg/core/sucg_internal.h"

#include <stdlib.h>
#include <unistd.h>

static ucs_status_t sucg_context_reg(void *arg, sucg_rcache_entry_t *e)
{
    sucg_context_h ctx = arg;
    ucp_mem_map_params_t mp;
    ucp_mem_h memh;
    ucs_status_t status;

    if ((ctx->config.fault_reg_fail > 0) &&
        ((unsigned)(rand_r(&ctx->fault_seed) % 100) <
         ctx->config.fault_reg_fail)) {
        return UCS_ERR_NO_MEMORY;   /* what a memlock limit would give */
    }
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                    UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address    = (void*)e->start;
    mp.length     = e->end - e->start;
    status        = ucp_mem_map(ctx->ucp_context, &mp, &memh);
    if (status != UCS_OK) {
        return status;   /* the collective logs it, once per context */
    }
    /* packed once per registration: every collective sends it to peers */
    status = ucp_rkey_pack(ctx->ucp_context, memh, &e->rkey_buf, &e->rkey_len);
    if (status != UCS_OK) {
        ucp_mem_unmap(ctx->ucp_context, memh);
        return status;
    }
    e->memh = memh;
    return UCS_OK;
}

static void sucg_context_dereg(void *arg, sucg_rcache_entry_t *e)
{
    sucg_context_h ctx = arg;

    ucp_rkey_buffer_release(e->rkey_buf);
    ucp_mem_unmap(ctx->ucp_context, (ucp_mem_h)e->memh);
}

static const sucg_rcache_ops_t sucg_context_rcache_ops = {
    .reg   = sucg_context_reg,
    .dereg = sucg_context_dereg
};

SUCG_EXPORT ucs_status_t
sucg_context_create(const sucg_context_params_t *params,
                    sucg_context_h *context_p)
{
    sucg_context_h ctx;
    ucs_status_t status;

    if ((params == NULL) || (params->ucp_context == NULL) ||
        (params->ucp_worker == NULL)) {
        sucg_error("sucg_context_create: ucp_context and ucp_worker are required");
        return UCS_ERR_INVALID_PARAM;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = sucg_config_read(&ctx->config);
    if (status != UCS_OK) {
        free(ctx);
        return status;
    }
    ctx->fault_seed  = (unsigned)getpid();
    ctx->ucp_context = params->ucp_context;
    ctx->ucp_worker  = params->ucp_worker;
    sucg_rcache_init(&ctx->rcache, &sucg_context_rcache_ops, ctx,
                     ctx->config.rcache_max_entries,
                     ctx->config.rcache_max_bytes);
    *context_p = ctx;
    return UCS_OK;
}

SUCG_EXPORT void sucg_context_destroy(sucg_context_h ctx)
{
    if (ctx->groups != NULL) {
        sucg_warn("context destroyed with groups alive");
    }
    sucg_am_disable(ctx);
    sucg_rcache_cleanup(&ctx->rcache);
    free(ctx);
}

SUCG_EXPORT void sucg_config_print(sucg_context_h ctx, FILE *stream)
{
    sucg_config_dump(&ctx->config, stream);
}

SUCG_EXPORT void sucg_mem_invalidate(sucg_context_h ctx, void *addr, size_t len)
{
    sucg_rcache_invalidate(&ctx->rcache, addr, len);
}

SUCG_EXPORT void sucg_stats_get(sucg_context_h ctx, sucg_stats_t *stats)
{
    *stats                  = ctx->stats;
    stats->rcache_hits      = ctx->rcache.hits;
    stats->rcache_misses    = ctx->rcache.misses;
    stats->rcache_evictions = ctx->rcache.evictions;
}
