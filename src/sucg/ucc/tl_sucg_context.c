/*
 * tl/sucg: the context. A UCP context and worker of its own, because sucg
 * uses only public UCP and tl/ucp's worker lives in tl/ucp's private
 * structures (whose layout changes between UCC releases). The cost is a
 * second set of UCX interfaces per process; the worker address goes into
 * UCC's context address exchange, so teams need no exchange of their own
 * to connect.
 */
#include "tl_sucg.h"
#include "utils/ucc_malloc.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/*
 * Packed context address: the worker address with its length in front
 * (the core hands every TL's blob back as is, ucc_get_team_ep_addr)
 */
typedef struct ucc_tl_sucg_ctx_addr {
    uint64_t len;
    uint8_t  worker_addr[];
} ucc_tl_sucg_ctx_addr_t;

static unsigned ucc_tl_sucg_progress(void *arg)
{
    ucc_tl_sucg_context_t *ctx = arg;

    return sucg_progress(ctx->sucg);
}

/*
 * sucg orders a staged step's data before its flag (both puts into the
 * peer's group buffer, same ep and rkey) with ucp_worker_fence(). UCX >=
 * 1.14 with protocols v2 makes that a "strong" fence by default: a
 * blocking flush of every ep of the worker, a round trip per step taken
 * inside UCC's progress (over srqud in the VM, 4 B allgathers 5x slower
 * than tl/ucp's). With one RMA lane per ep both puts take the same
 * transport endpoint, where the weak fence (uct_iface_fence) orders them,
 * as UCX 1.13's only fence did. The TL owns this UCP context; a user's
 * UCX_FENCE_MODE or UCX_MAX_RMA_LANES is left as it is, and a UCX without
 * fence modes (< 1.14) has nothing to change.
 */
static void ucc_tl_sucg_ucp_config_fence(ucc_tl_sucg_context_t *self,
                                         ucp_config_t *config)
{
    static const char *set[][2] = {{"FENCE_MODE", "weak"},
                                   {"MAX_RMA_LANES", "1"}};
    ucs_status_t status;
    size_t i;

    if ((getenv("UCX_FENCE_MODE") != NULL) ||
        (getenv("UCX_MAX_RMA_LANES") != NULL)) {
        return;   /* the user chose: both or nothing */
    }
    for (i = 0; i < ucs_static_array_size(set); ++i) {
        status = ucp_config_modify(config, set[i][0], set[i][1]);
        if ((status != UCS_OK) && (status != UCS_ERR_NO_ELEM)) {
            tl_debug(self->super.super.lib, "UCX_%s=%s: %s", set[i][0],
                     set[i][1], ucs_status_string(status));
        }
    }
}

static ucc_status_t ucc_tl_sucg_ucp_open(ucc_tl_sucg_context_t *self)
{
    ucp_params_t ucp_params       = {0};
    ucp_worker_params_t wk_params = {0};
    ucp_config_t *ucp_config;
    ucs_status_t status;

    status = ucp_config_read(NULL, NULL, &ucp_config);
    if (status != UCS_OK) {
        return ucs_status_to_ucc_status(status);
    }
    ucc_tl_sucg_ucp_config_fence(self, ucp_config);
    ucp_params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
    ucp_params.features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AM;
    ucp_params.name       = "UCC_TL_SUCG";
    status = ucp_init(&ucp_params, ucp_config, &self->ucp_context);
    ucp_config_release(ucp_config);
    if (status != UCS_OK) {
        tl_error(self->super.super.lib, "ucp_init failed: %s",
                 ucs_status_string(status));
        return ucs_status_to_ucc_status(status);
    }
    wk_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wk_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(self->ucp_context, &wk_params,
                               &self->ucp_worker);
    if (status == UCS_OK) {
        status = ucp_worker_get_address(self->ucp_worker, &self->worker_addr,
                                        &self->worker_addr_len);
    }
    if (status != UCS_OK) {
        tl_error(self->super.super.lib, "ucp worker: %s",
                 ucs_status_string(status));
        return ucs_status_to_ucc_status(status);
    }
    return UCC_OK;
}

static void ucc_tl_sucg_ucp_close(ucc_tl_sucg_context_t *self)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags        = UCP_EP_CLOSE_FLAG_FORCE};
    size_t i;
    void *req;

    /* at context destroy every team is gone: nothing is in flight that a
     * flushing close would have to wait for, and a peer may have exited */
    for (i = 0; i < self->npeers; ++i) {
        req = ucp_ep_close_nbx(self->peers[i].ep, &param);
        if (UCS_PTR_IS_PTR(req)) {
            while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                ucp_worker_progress(self->ucp_worker);
            }
            ucp_request_free(req);
        }
        ucc_free(self->peers[i].addr);
    }
    ucc_free(self->peers);
    if (self->worker_addr != NULL) {
        ucp_worker_release_address(self->ucp_worker, self->worker_addr);
    }
    if (self->ucp_worker != NULL) {
        ucp_worker_destroy(self->ucp_worker);
    }
    if (self->ucp_context != NULL) {
        ucp_cleanup(self->ucp_context);
    }
}

UCC_CLASS_INIT_FUNC(ucc_tl_sucg_context_t,
                    const ucc_base_context_params_t *params,
                    const ucc_base_config_t *config)
{
    ucc_tl_sucg_context_config_t *cfg =
        ucc_derived_of(config, ucc_tl_sucg_context_config_t);
    sucg_context_params_t sp;
    ucc_status_t status;

    UCC_CLASS_CALL_SUPER_INIT(ucc_tl_context_t, &cfg->super, params->context);
    memcpy(&self->cfg, cfg, sizeof(*cfg));
    /* UCC's classes are not zeroed; the error path below relies on it */
    self->ucp_context     = NULL;
    self->ucp_worker      = NULL;
    self->worker_addr     = NULL;
    self->worker_addr_len = 0;
    self->sucg            = NULL;
    self->peers           = NULL;
    self->npeers          = 0;
    self->peers_cap       = 0;
    self->unmapped        = NULL;
    if (params->thread_mode == UCC_THREAD_MULTIPLE) {
        /* sucg drives one single-threaded worker; refusing the context
         * drops this TL only (see get_lib_attr) */
        tl_debug(self->super.super.lib, "UCC_THREAD_MULTIPLE: tl/sucg "
                 "supports single and funneled threading only, not used");
        return UCC_ERR_NOT_SUPPORTED;
    }
    status = ucc_tl_sucg_ucp_open(self);
    if (status != UCC_OK) {
        goto err;
    }
    status = ucc_tl_sucg_rcache_init(self);
    if (status != UCC_OK) {
        goto err;
    }
    sp.ucp_context = self->ucp_context;
    sp.ucp_worker  = self->ucp_worker;
    status = ucs_status_to_ucc_status(sucg_context_create(&sp, &self->sucg));
    if (status != UCC_OK) {
        tl_error(self->super.super.lib, "sucg_context_create failed");
        goto err;
    }
    /* staged steps as one message each; the worker is the TL's alone, so
     * any id is free. Without it (reported) the steps are puts. */
    (void)sucg_context_enable_am(self->sucg, 0);
    status = ucc_mpool_init(&self->task_mp, 0, sizeof(ucc_tl_sucg_task_t), 0,
                            UCC_CACHE_LINE_SIZE, 8, UINT_MAX,
                            &ucc_coll_task_mpool_ops, params->thread_mode,
                            "tl_sucg_task_mp");
    if (status != UCC_OK) {
        goto err_sucg;
    }
    /* the core runs registered progress only while its queue is empty:
     * tasks progress sucg themselves (tl_sucg_allgather.c); this keeps the
     * worker answering peers between collectives */
    status = ucc_context_progress_register(params->context,
                                           ucc_tl_sucg_progress, self);
    if (status != UCC_OK) {
        goto err_mpool;
    }
    tl_debug(self->super.super.lib, "initialized tl context: %p", self);
    return UCC_OK;

err_mpool:
    ucc_mpool_cleanup(&self->task_mp, 1);
err_sucg:
    sucg_context_destroy(self->sucg);
err:
    ucc_tl_sucg_rcache_cleanup(self);
    ucc_tl_sucg_ucp_close(self);
    return status;
}

UCC_CLASS_CLEANUP_FUNC(ucc_tl_sucg_context_t)
{
    tl_debug(self->super.super.lib, "finalizing tl context: %p", self);
    ucc_context_progress_deregister(self->super.super.ucc_context,
                                    ucc_tl_sucg_progress, self);
    ucc_mpool_cleanup(&self->task_mp, 1);
    sucg_context_destroy(self->sucg);
    ucc_tl_sucg_rcache_cleanup(self);
    ucc_tl_sucg_ucp_close(self);
}

UCC_CLASS_DEFINE(ucc_tl_sucg_context_t, ucc_tl_context_t);

ucc_status_t ucc_tl_sucg_get_context_attr(const ucc_base_context_t *context,
                                          ucc_base_ctx_attr_t *attr)
{
    ucc_tl_sucg_context_t *ctx = ucc_derived_of(context, ucc_tl_sucg_context_t);
    /* taken before the clear, which zeroes everything but the mask */
    ucc_tl_sucg_ctx_addr_t *addr = attr->attr.ctx_addr;

    ucc_base_ctx_attr_clear(attr);
    if (attr->attr.mask & UCC_CONTEXT_ATTR_FIELD_CTX_ADDR_LEN) {
        attr->attr.ctx_addr_len = sizeof(*addr) + ctx->worker_addr_len;
    }
    if (attr->attr.mask & UCC_CONTEXT_ATTR_FIELD_CTX_ADDR) {
        addr->len = ctx->worker_addr_len;
        memcpy(addr->worker_addr, ctx->worker_addr, ctx->worker_addr_len);
    }
    return UCC_OK;
}

ucc_status_t ucc_tl_sucg_peer_ep(ucc_tl_sucg_context_t *ctx, const void *addr,
                                 ucp_ep_h *ep_p)
{
    const ucc_tl_sucg_ctx_addr_t *a = addr;
    ucp_ep_params_t ep_params;
    ucc_tl_sucg_peer_t *peer;
    ucs_status_t status;
    size_t i;

    if ((a == NULL) || (a->len == 0)) {
        tl_error(ctx->super.super.lib, "a peer has no tl/sucg address");
        return UCC_ERR_INVALID_PARAM;
    }
    /* linear: teams are created rarely, and a peer is looked up once per
     * team it is in */
    for (i = 0; i < ctx->npeers; ++i) {
        if ((ctx->peers[i].addr_len == a->len) &&
            !memcmp(ctx->peers[i].addr, a->worker_addr, a->len)) {
            *ep_p = ctx->peers[i].ep;
            return UCC_OK;
        }
    }
    if (ctx->npeers == ctx->peers_cap) {
        size_t cap = ctx->peers_cap ? 2 * ctx->peers_cap : 16;
        peer = ucc_realloc(ctx->peers, cap * sizeof(*peer), "tl_sucg_peers");
        if (peer == NULL) {
            return UCC_ERR_NO_MEMORY;
        }
        ctx->peers     = peer;
        ctx->peers_cap = cap;
    }
    peer       = &ctx->peers[ctx->npeers];
    peer->addr = ucc_malloc(a->len, "tl_sucg_peer_addr");
    if (peer->addr == NULL) {
        return UCC_ERR_NO_MEMORY;
    }
    memcpy(peer->addr, a->worker_addr, a->len);
    peer->addr_len       = a->len;
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = (const ucp_address_t*)peer->addr;
    status = ucp_ep_create(ctx->ucp_worker, &ep_params, &peer->ep);
    if (status != UCS_OK) {
        tl_error(ctx->super.super.lib, "ucp_ep_create: %s",
                 ucs_status_string(status));
        ucc_free(peer->addr);
        return ucs_status_to_ucc_status(status);
    }
    ++ctx->npeers;
    *ep_p = peer->ep;
    return UCC_OK;
}

ucc_status_t ucc_tl_sucg_mem_map(const ucc_base_context_t *context,
                                 ucc_mem_map_mode_t mode,
                                 ucc_mem_map_memh_t *memh,
                                 ucc_mem_map_tl_t *tl_h)
{
    /* user handles are not used: receive buffers go through the cache */
    return UCC_ERR_NOT_SUPPORTED;
}

ucc_status_t ucc_tl_sucg_mem_unmap(const ucc_base_context_t *context,
                                   ucc_mem_map_mode_t mode,
                                   ucc_mem_map_tl_t *tl_h)
{
    return UCC_ERR_NOT_SUPPORTED;
}

ucc_status_t ucc_tl_sucg_memh_pack(const ucc_base_context_t *context,
                                   ucc_mem_map_mode_t mode,
                                   ucc_mem_map_tl_t *tl_h, void **pack_buffer)
{
    return UCC_ERR_NOT_SUPPORTED;
}
