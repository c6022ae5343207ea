/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_md.h"
#include "srqud_compat.h"

#include <uct/base/uct_iface.h>
#include "srqud_chunk.h"

#include <ucs/arch/cpu.h>
#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucm/api/ucm.h>
#include <fcntl.h>
#include <string.h>


/* Packed remote key: the verbs rkey, tagged so that a key which was not
 * packed by srqud is recognized on unpack. */
#define UCT_SRQUD_RKEY_TAG      0x5d5dULL
#define UCT_SRQUD_RKEY_TAG_SHIFT 48


static ucs_config_field_t uct_srqud_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_srqud_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"RCACHE", "try",
     "Use the registration cache for memory registrations:\n"
     " yes  - fail if the cache cannot be created\n"
     " try  - use it when available (UCX's memory hooks are needed)\n"
     " no   - register and deregister on every request",
     ucs_offsetof(uct_srqud_md_config_t, rcache_enable),
     UCS_CONFIG_TYPE_TERNARY},

    {"", UCT_SRQUD_RCACHE_CONFIG_DEFAULT, NULL,
     ucs_offsetof(uct_srqud_md_config_t, rcache),
     UCS_CONFIG_TYPE_TABLE(UCT_SRQUD_RCACHE_CONFIG_TABLE)},

    {NULL}
};


static int uct_srqud_md_access_flags(unsigned uct_flags)
{
    /* Local write is needed for any receive. Remote access bits are kept for
     * the zero-copy protocol, which checks them on every remote request. */
    int access = IBV_ACCESS_LOCAL_WRITE;

    if (uct_flags & UCT_MD_MEM_ACCESS_REMOTE_PUT) {
        access |= IBV_ACCESS_REMOTE_WRITE;
    }
    if (uct_flags & UCT_MD_MEM_ACCESS_REMOTE_GET) {
        access |= IBV_ACCESS_REMOTE_READ;
    }
    return access;
}


static ucs_status_t
uct_srqud_md_reg_mr(uct_srqud_md_t *md, void *address, size_t length,
                    unsigned flags, int silent, struct ibv_mr **mr_p)
{
    struct ibv_mr *mr;

    mr = ibv_reg_mr(md->pd, address, length, uct_srqud_md_access_flags(flags));
    if (mr == NULL) {
        ucs_log(silent ? UCS_LOG_LEVEL_DIAG : UCS_LOG_LEVEL_ERROR,
                "%s: ibv_reg_mr(address=%p length=%zu) failed: %m", md->name,
                address, length);
        return UCS_ERR_IO_ERROR;
    }

    *mr_p = mr;
    return UCS_OK;
}


static void uct_srqud_md_dereg_mr(uct_srqud_md_t *md, struct ibv_mr *mr)
{
    int ret = ibv_dereg_mr(mr);

    if (ret != 0) {
        ucs_warn("%s: ibv_dereg_mr() failed: %s", md->name, strerror(ret));
    }
}


/* Into the registry under a random key of its own (reg_lock held) */
static ucs_status_t uct_srqud_md_registry_add(uct_srqud_md_t *md,
                                              uct_srqud_memh_t *memh)
{
    khiter_t it;
    int ret;

    do {
        memh->key = uct_srqud_secret32(memh);
        it        = kh_put(uct_srqud_rkeys, &md->rkeys, memh->key, &ret);
        if (ret == UCS_KH_PUT_FAILED) {
            return UCS_ERR_NO_MEMORY;
        }
    } while ((ret == UCS_KH_PUT_KEY_PRESENT) || (memh->key == 0));
    kh_value(&md->rkeys, it) = memh;
    return UCS_OK;
}


/* Out of the registry: peers can no longer name it (reg_lock held) */
static void uct_srqud_md_registry_del(uct_srqud_md_t *md,
                                      uct_srqud_memh_t *memh)
{
    khiter_t it = kh_get(uct_srqud_rkeys, &md->rkeys, memh->key);

    if ((it != kh_end(&md->rkeys)) && (kh_value(&md->rkeys, it) == memh)) {
        kh_del(uct_srqud_rkeys, &md->rkeys, it);
    }
}


/* A peer's request against the registry; called with reg_lock held */
static ucs_status_t
uct_srqud_md_region_check(uct_srqud_md_t *md, uint32_t rkey, uint64_t address,
                          size_t length, unsigned access,
                          uct_srqud_memh_t **memh_p)
{
    ucs_status_t status = UCS_ERR_INVALID_ADDR;
    uct_srqud_memh_t *memh;
    khiter_t it;

    it = kh_get(uct_srqud_rkeys, &md->rkeys, rkey);
    if (it == kh_end(&md->rkeys)) {
        goto refused;
    }

    /* exactly what this registration asked for: its range, its access */
    memh = kh_value(&md->rkeys, it);
    if ((memh->flags & UCT_SRQUD_MEM_FLAG_DEREG) ||
        !uct_srqud_range_within(memh->address, memh->length, address,
                                length)) {
        goto refused;
    }

    if ((memh->access & access) != access) {
        status = UCS_ERR_REJECTED;
        goto refused;
    }

    *memh_p = memh;
    return UCS_OK;

refused:
    ++md->stats.remote_refused;
    ucs_debug("%s: refused a peer's request for rkey 0x%x [0x%" PRIx64
              ", +%zu) access 0x%x: %s", md->name, rkey, address, length,
              access, ucs_status_string(status));
    return status;
}


ucs_status_t uct_srqud_md_region_acquire(uct_srqud_md_t *md, uint32_t rkey,
                                         uint64_t address, size_t length,
                                         unsigned access,
                                         uct_srqud_memh_t **memh_p)
{
    ucs_status_t status;

    ucs_spin_lock(&md->reg_lock);
    status = uct_srqud_md_region_check(md, rkey, address, length, access,
                                       memh_p);
    if (status == UCS_OK) {
        ++(*memh_p)->inflight;
    }
    ucs_spin_unlock(&md->reg_lock);
    return status;
}


int uct_srqud_md_region_enter(uct_srqud_md_t *md, uct_srqud_memh_t *memh)
{
    ucs_spin_lock(&md->reg_lock);
    if (!(memh->flags & UCT_SRQUD_MEM_FLAG_DEREG)) {
        return 1;
    }
    ucs_spin_unlock(&md->reg_lock);
    return 0;
}


void uct_srqud_md_region_leave(uct_srqud_md_t *md)
{
    ucs_spin_unlock(&md->reg_lock);
}


ucs_status_t uct_srqud_md_remote_copy(uct_srqud_md_t *md, uint32_t rkey,
                                      uint64_t address, void *buf,
                                      size_t length, unsigned access)
{
    void *region_ptr = (void*)(uintptr_t)address;
    uct_srqud_memh_t *memh;
    ucs_status_t status;

    ucs_spin_lock(&md->reg_lock);
    status = uct_srqud_md_region_check(md, rkey, address, length, access,
                                       &memh);
    if (status == UCS_OK) {
        if (access == UCT_MD_MEM_ACCESS_REMOTE_PUT) {
            memcpy(region_ptr, buf, length);
        } else {
            memcpy(buf, region_ptr, length);
        }
    }
    ucs_spin_unlock(&md->reg_lock);
    return status;
}


static void uct_srqud_md_invalidate_cb(void *arg)
{
    uct_invoke_completion((uct_completion_t*)arg, UCS_OK);
}


/* The handle goes, and its hold on the region: the cache keeps the region
 * for later registrations (an invalidation destroys it, and its completion
 * runs then), a region of its own is deregistered now */
static void uct_srqud_md_memh_free(uct_srqud_md_t *md, uct_srqud_memh_t *memh)
{
    uct_completion_t *comp = memh->dereg_comp;
    uct_srqud_mem_t *region = memh->region;

    if (memh->flags & UCT_SRQUD_MEM_FLAG_RCACHE) {
        if (comp != NULL) {
            ucs_rcache_region_invalidate(md->rcache, &region->super,
                                         uct_srqud_md_invalidate_cb, comp);
        }
        ucs_rcache_region_put(md->rcache, &region->super);
        ucs_free(memh);
        return;
    }

    uct_srqud_md_dereg_mr(md, region->mr);
    ucs_free(region);
    ucs_free(memh);
    if (comp != NULL) {
        uct_invoke_completion(comp, UCS_OK);
    }
}


void uct_srqud_md_region_release(uct_srqud_md_t *md, uct_srqud_memh_t *memh)
{
    int free_now;

    ucs_spin_lock(&md->reg_lock);
    free_now = (--memh->inflight == 0) &&
               (memh->flags & UCT_SRQUD_MEM_FLAG_DEREG);
    ucs_spin_unlock(&md->reg_lock);
    if (free_now) {
        uct_srqud_md_memh_free(md, memh);
    }
}


static ucs_status_t
uct_srqud_md_rcache_mem_reg_cb(void *context, ucs_rcache_t *rcache, void *arg,
                               ucs_rcache_region_t *rregion, uint16_t rc_flags)
{
    uct_srqud_md_t *md      = context;
    uct_srqud_mem_t *region = ucs_derived_of(rregion, uct_srqud_mem_t);
    unsigned flags          = *(unsigned*)arg;

    /* the cache may hand this region to any later request, so it is
     * registered for all access; peers are checked against each handle */
    return uct_srqud_md_reg_mr(md, (void*)rregion->super.start,
                               rregion->super.end - rregion->super.start,
                               flags | UCT_MD_MEM_ACCESS_ALL,
                               (rc_flags & UCS_RCACHE_MEM_REG_HIDE_ERRORS) ||
                               (flags & UCT_MD_MEM_FLAG_HIDE_ERRORS),
                               &region->mr);
}


static void uct_srqud_md_rcache_mem_dereg_cb(void *context, ucs_rcache_t *rcache,
                                             ucs_rcache_region_t *rregion)
{
    uct_srqud_mem_t *region = ucs_derived_of(rregion, uct_srqud_mem_t);

    /* no handle holds it any more, transfers included */
    uct_srqud_md_dereg_mr(context, region->mr);
}


static void uct_srqud_md_rcache_dump_region_cb(void *context, ucs_rcache_t *rcache,
                                               ucs_rcache_region_t *rregion,
                                               char *buf, size_t max)
{
    uct_srqud_mem_t *region = ucs_derived_of(rregion, uct_srqud_mem_t);

    snprintf(buf, max, "lkey 0x%x", region->mr->lkey);
}


static ucs_rcache_ops_t uct_srqud_md_rcache_ops = {
    .mem_reg     = uct_srqud_md_rcache_mem_reg_cb,
    .mem_dereg   = uct_srqud_md_rcache_mem_dereg_cb,
    .dump_region = uct_srqud_md_rcache_dump_region_cb,
    UCT_SRQUD_RCACHE_OPS_COMPAT
};


static ucs_status_t uct_srqud_md_mem_reg_flags(uct_md_h uct_md, void *address,
                                               size_t length, unsigned flags,
                                               uct_mem_h *memh_p)
{
    uct_srqud_md_t *md = ucs_derived_of(uct_md, uct_srqud_md_t);
    ucs_rcache_region_t *rregion;
    uct_srqud_memh_t *memh;
    ucs_status_t status;

    if (length == 0) {
        return UCS_ERR_INVALID_PARAM;
    }

    memh = ucs_calloc(1, sizeof(*memh), "srqud_memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memh->address = (uintptr_t)address;
    memh->length  = length;
    memh->access  = flags & UCT_MD_MEM_ACCESS_ALL;

    if (md->rcache != NULL) {
        status = uct_srqud_compat_rcache_get(md->rcache, address, length,
                                             &flags, &rregion);
        if (status != UCS_OK) {
            goto err_free;
        }
        memh->region = ucs_derived_of(rregion, uct_srqud_mem_t);
        memh->flags  = UCT_SRQUD_MEM_FLAG_RCACHE;
    } else {
        memh->region = ucs_calloc(1, sizeof(*memh->region), "srqud_mem");
        if (memh->region == NULL) {
            status = UCS_ERR_NO_MEMORY;
            goto err_free;
        }
        status = uct_srqud_md_reg_mr(md, address, length, flags,
                                     flags & UCT_MD_MEM_FLAG_HIDE_ERRORS,
                                     &memh->region->mr);
        if (status != UCS_OK) {
            ucs_free(memh->region);
            goto err_free;
        }
    }
    memh->mr = memh->region->mr;

    ucs_spin_lock(&md->reg_lock);
    status = uct_srqud_md_registry_add(md, memh);
    ucs_spin_unlock(&md->reg_lock);
    if (status != UCS_OK) {
        uct_srqud_md_memh_free(md, memh);
        return status;
    }
    *memh_p = memh;
    return UCS_OK;

err_free:
    ucs_free(memh);
    return status;
}


/* Invalidation is for memory peers may write or read (UCX's contract since
 * 1.15: UNSUPPORTED otherwise), and, where UCX asks for it, only of a
 * registration whose key was packed for it (INVALID_PARAM otherwise) */
static ucs_status_t uct_srqud_md_invalidate_check(uct_srqud_md_t *md,
                                                  uct_srqud_memh_t *memh)
{
    ucs_status_t status = UCS_OK;

    ucs_spin_lock(&md->reg_lock);
    if (UCT_SRQUD_INVALIDATE_NEEDS_PACK) {
        if (!(memh->access & (UCT_MD_MEM_ACCESS_REMOTE_PUT |
                              UCT_MD_MEM_ACCESS_REMOTE_GET))) {
            status = UCS_ERR_UNSUPPORTED;
        } else if (!(memh->flags & UCT_SRQUD_MEM_FLAG_PACKED_INVALIDATE)) {
            status = UCS_ERR_INVALID_PARAM;
        }
    }
    ucs_spin_unlock(&md->reg_lock);
    return status;
}


static ucs_status_t
uct_srqud_md_mem_dereg(uct_md_h uct_md, const uct_md_mem_dereg_params_t *params)
{
    uct_srqud_md_t *md = ucs_derived_of(uct_md, uct_srqud_md_t);
    uct_srqud_memh_t *memh;
    uct_completion_t *comp;
    ucs_status_t status;
    int free_now;

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 1);

    memh = params->memh;
    comp = (UCT_MD_MEM_DEREG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0) &
            UCT_MD_MEM_DEREG_FLAG_INVALIDATE) ? params->comp : NULL;
    if (comp != NULL) {
        status = uct_srqud_md_invalidate_check(md, memh);
        if (status != UCS_OK) {
            return status;
        }
    }

    /* From now on the memory may be unmapped: peers can no longer name it,
     * and a transfer in progress stops copying (region_enter); it keeps
     * the handle, the region and its MR until the HCA is done. Taking
     * reg_lock also waits for a copy in progress. */
    ucs_spin_lock(&md->reg_lock);
    uct_srqud_md_registry_del(md, memh);
    memh->flags     |= UCT_SRQUD_MEM_FLAG_DEREG;
    memh->dereg_comp = comp;
    free_now         = (memh->inflight == 0);
    ucs_spin_unlock(&md->reg_lock);
    if (free_now) {
        uct_srqud_md_memh_free(md, memh);
    }
    return UCS_OK;
}


UCT_SRQUD_MD_MEM_REG_DEFINE(uct_srqud_md_mem_reg, uct_srqud_md_mem_reg_flags)


static ucs_status_t
uct_srqud_md_mkey_pack_flags(uct_md_h uct_md, uct_mem_h uct_memh,
                             unsigned pack_flags, void *rkey_buffer)
{
    uct_srqud_md_t *md    = ucs_derived_of(uct_md, uct_srqud_md_t);
    uct_srqud_memh_t *memh = uct_memh;
    uint64_t packed        = ((uint64_t)UCT_SRQUD_RKEY_TAG <<
                              UCT_SRQUD_RKEY_TAG_SHIFT) | memh->key;

    /* no atomics, no keys exported to other processes' mds */
    if (pack_flags & UCT_SRQUD_MKEY_PACK_UNSUPPORTED) {
        return UCS_ERR_UNSUPPORTED;
    }

    if (pack_flags & UCT_SRQUD_MKEY_PACK_INVALIDATE) {
        ucs_spin_lock(&md->reg_lock);
        memh->flags |= UCT_SRQUD_MEM_FLAG_PACKED_INVALIDATE;
        ucs_spin_unlock(&md->reg_lock);
    }

    memcpy(rkey_buffer, &packed, sizeof(packed));
    return UCS_OK;
}

UCT_SRQUD_MD_MKEY_PACK_DEFINE(uct_srqud_md_mkey_pack, uct_srqud_md_mkey_pack_flags)


static ucs_status_t uct_srqud_md_rkey_unpack_buf(const void *rkey_buffer,
                                                 uct_rkey_t *rkey_p,
                                                 void **handle_p)
{
    uint64_t packed;

    memcpy(&packed, rkey_buffer, sizeof(packed));
    if ((packed >> UCT_SRQUD_RKEY_TAG_SHIFT) != UCT_SRQUD_RKEY_TAG) {
        ucs_error("srqud: remote key 0x%" PRIx64 " was not packed by srqud",
                  packed);
        return UCS_ERR_INVALID_PARAM;
    }

    *rkey_p   = (uint32_t)packed;
    *handle_p = NULL;
    return UCS_OK;
}

UCT_SRQUD_RKEY_UNPACK_DEFINE(uct_srqud_md_rkey_unpack, uct_srqud_md_rkey_unpack_buf)


static void uct_srqud_md_caps(uct_md_h uct_md, uct_srqud_md_caps_t *caps)
{
    uct_srqud_md_t *md = ucs_derived_of(uct_md, uct_srqud_md_t);

    caps->flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH |
                             UCT_MD_FLAG_NEED_RKEY | UCT_MD_FLAG_INVALIDATE |
                             UCT_SRQUD_MD_FLAG_INVALIDATE_RMA;
    caps->mem_types        = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    /* No UCT_MD_FLAG_ALLOC, so nothing allocates through it; the value is
     * the bound UCX's ib md reports too, and UCT's own tests size their
     * buffers by it (0 made them skip every transfer) */
    caps->max_alloc        = SIZE_MAX;
    caps->max_reg          = md->dev_attr.max_mr_size;
    caps->rkey_packed_size = sizeof(uint64_t);
    /* 16us + 0.06ns/byte is what UCX assumes for IB registrations; the cache
     * makes repeated registrations of the same buffer nearly free */
    caps->reg_cost         = (md->rcache != NULL) ?
                             ucs_linear_func_make(50e-9, 0) :
                             ucs_linear_func_make(16e-6, 0.06e-9);
}

UCT_SRQUD_MD_QUERY_DEFINE(uct_srqud_md_query, uct_srqud_md_caps)


ucs_status_t uct_srqud_md_srq_listen(uct_srqud_md_t *md, struct ibv_srq *srq,
                                     uct_srqud_md_srq_cb_t cb, void *arg)
{
    uct_srqud_md_srq_listener_t *listener;

    listener = ucs_malloc(sizeof(*listener), "srqud_srq_listener");
    if (listener == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    listener->srq = srq;
    listener->cb  = cb;
    listener->arg = arg;
    ucs_recursive_spin_lock(&md->listener_lock);
    ucs_list_add_tail(&md->listeners, &listener->list);
    ucs_recursive_spin_unlock(&md->listener_lock);
    return UCS_OK;
}


void uct_srqud_md_srq_unlisten(uct_srqud_md_t *md, struct ibv_srq *srq)
{
    uct_srqud_md_srq_listener_t *listener, *tmp;

    ucs_recursive_spin_lock(&md->listener_lock);
    ucs_list_for_each_safe(listener, tmp, &md->listeners, list) {
        if (listener->srq == srq) {
            ucs_list_del(&listener->list);
            ucs_free(listener);
        }
    }
    ucs_recursive_spin_unlock(&md->listener_lock);
}


/*
 * Verbs async events of the device. They arrive on the context's async fd,
 * which UCX's async thread watches for us. SRQ events go to whoever
 * listens to that SRQ.
 */
static void uct_srqud_md_async_event_cb(int fd, ucs_event_set_types_t events,
                                        void *arg)
{
    uct_srqud_md_t *md = arg;
    uct_srqud_md_srq_listener_t *listener;
    struct ibv_async_event event;

    while (ibv_get_async_event(md->ctx, &event) == 0) {
        ++md->stats.async_events;
        switch (event.event_type) {
        case IBV_EVENT_SRQ_LIMIT_REACHED:
        case IBV_EVENT_SRQ_ERR:
            ucs_recursive_spin_lock(&md->listener_lock);
            ucs_list_for_each(listener, &md->listeners, list) {
                if (listener->srq == event.element.srq) {
                    listener->cb(listener->arg, event.event_type);
                }
            }
            ucs_recursive_spin_unlock(&md->listener_lock);
            break;
        case IBV_EVENT_PORT_ACTIVE:
        case IBV_EVENT_PORT_ERR:
            ucs_debug("%s: port %d: %s", md->name, event.element.port_num,
                      ibv_event_type_str(event.event_type));
            break;
        default:
            ucs_debug("%s: async event: %s", md->name,
                      ibv_event_type_str(event.event_type));
            break;
        }
        ibv_ack_async_event(&event);
    }
}


static void uct_srqud_md_close(uct_md_h uct_md)
{
    uct_srqud_md_t *md = ucs_derived_of(uct_md, uct_srqud_md_t);

    if (!ucs_list_is_empty(&md->listeners)) {
        /* a user error; their async events are not routed any more */
        ucs_warn("%s: closing the md with %zu interfaces still open",
                 md->name, ucs_list_length(&md->listeners));
    }

    if (md->async_fd_registered) {
        ucs_async_remove_handler(md->ctx->async_fd, 1);
    }
    if (md->rcache != NULL) {
        ucs_rcache_destroy(md->rcache);
    }
    if (kh_size(&md->rkeys) != 0) {
        ucs_debug("%s: %u regions still registered at close", md->name,
                  kh_size(&md->rkeys));
    }
    kh_destroy_inplace(uct_srqud_rkeys, &md->rkeys);
    ucs_spinlock_destroy(&md->reg_lock);
    ibv_dealloc_pd(md->pd);
    ibv_close_device(md->ctx);
    ucs_recursive_spinlock_destroy(&md->listener_lock);
    pthread_mutex_destroy(&md->rxpools_lock);
    ucs_free(md);
}


static uct_md_ops_t uct_srqud_md_ops = {
    .close                  = uct_srqud_md_close,
    .query                  = uct_srqud_md_query,
    .mem_alloc              = (uct_md_mem_alloc_func_t)ucs_empty_function_return_unsupported,
    .mem_free               = (uct_md_mem_free_func_t)ucs_empty_function_return_unsupported,
    .mem_advise             = (uct_md_mem_advise_func_t)ucs_empty_function_return_unsupported,
    .mem_reg                = uct_srqud_md_mem_reg,
    .mem_dereg              = uct_srqud_md_mem_dereg,
    .mem_query              = (uct_md_mem_query_func_t)ucs_empty_function_return_unsupported,
    .mkey_pack              = uct_srqud_md_mkey_pack,
    .detect_memory_type     = (uct_md_detect_memory_type_func_t)ucs_empty_function_return_unsupported,
    UCT_SRQUD_MD_OPS_COMPAT
};


static ucs_status_t
uct_srqud_md_rcache_init(uct_srqud_md_t *md, const uct_srqud_md_config_t *config)
{
    ucs_rcache_params_t params;
    ucs_status_t status;

    if (config->rcache_enable == UCS_NO) {
        return UCS_OK;
    }

    uct_srqud_compat_rcache_params(&params, &config->rcache);
    params.region_struct_size = sizeof(uct_srqud_mem_t);
    params.ucm_events         = UCM_EVENT_VM_UNMAPPED;
    params.context            = md;
    params.ops                = &uct_srqud_md_rcache_ops;

    status = ucs_rcache_create(&params, md->name, NULL, &md->rcache);
    if (status == UCS_OK) {
        return UCS_OK;
    }

    md->rcache = NULL;
    if (config->rcache_enable == UCS_YES) {
        ucs_error("%s: failed to create the registration cache (UCX_SRQUD_RCACHE=yes): %s",
                  md->name, ucs_status_string(status));
        return status;
    }

    ucs_debug("%s: registration cache unavailable (%s), registering directly",
              md->name, ucs_status_string(status));
    return UCS_OK;
}


static ucs_status_t
uct_srqud_md_open(uct_component_t *component, const char *md_name,
                  const uct_md_config_t *uct_config, uct_md_h *md_p)
{
    const uct_srqud_md_config_t *config = ucs_derived_of(uct_config,
                                                         uct_srqud_md_config_t);
    struct ibv_device **dev_list, *dev = NULL;
    uct_srqud_md_t *md;
    ucs_status_t status;
    int i, num_devices, flags;

    dev_list = ibv_get_device_list(&num_devices);
    if (dev_list == NULL) {
        ucs_debug("srqud: no verbs devices: %m");
        return UCS_ERR_NO_DEVICE;
    }

    for (i = 0; i < num_devices; ++i) {
        if (!strcmp(ibv_get_device_name(dev_list[i]), md_name)) {
            dev = dev_list[i];
            break;
        }
    }

    if (dev == NULL) {
        ucs_debug("srqud: device %s not found", md_name);
        status = UCS_ERR_NO_DEVICE;
        goto out_free_list;
    }

    md = ucs_calloc(1, sizeof(*md), "srqud_md");
    if (md == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto out_free_list;
    }

    md->super.ops       = &uct_srqud_md_ops;
    md->super.component = &uct_srqud_component;
    ucs_strncpy_zero(md->name, md_name, sizeof(md->name));
    ucs_list_head_init(&md->listeners);
    ucs_recursive_spinlock_init(&md->listener_lock, 0);
    ucs_list_head_init(&md->rxpools);
    pthread_mutex_init(&md->rxpools_lock, NULL);
    ucs_spinlock_init(&md->reg_lock, 0);
    kh_init_inplace(uct_srqud_rkeys, &md->rkeys);

    md->ctx = ibv_open_device(dev);
    if (md->ctx == NULL) {
        ucs_error("srqud: ibv_open_device(%s) failed: %m", md_name);
        status = UCS_ERR_IO_ERROR;
        goto err_free_md;
    }

    if (ibv_query_device(md->ctx, &md->dev_attr) != 0) {
        ucs_error("%s: ibv_query_device() failed: %m", md_name);
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    md->pd = ibv_alloc_pd(md->ctx);
    if (md->pd == NULL) {
        ucs_error("%s: ibv_alloc_pd() failed: %m", md_name);
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    status = uct_srqud_md_rcache_init(md, config);
    if (status != UCS_OK) {
        goto err_dealloc_pd;
    }

    /* Watch the device's async events ourselves: the SRQ limit event is the
     * heart of srqud's receive-side flow control. */
    flags = fcntl(md->ctx->async_fd, F_GETFL);
    if ((flags < 0) ||
        (fcntl(md->ctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        ucs_error("%s: failed to make the async fd non-blocking: %m", md_name);
        status = UCS_ERR_IO_ERROR;
        goto err_rcache;
    }

    status = ucs_async_set_event_handler(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                         md->ctx->async_fd,
                                         UCS_EVENT_SET_EVREAD,
                                         uct_srqud_md_async_event_cb, md,
                                         NULL);
    if (status != UCS_OK) {
        ucs_error("%s: failed to watch verbs async events: %s", md_name,
                  ucs_status_string(status));
        goto err_rcache;
    }
    md->async_fd_registered = 1;

    ucs_debug("%s: srqud md opened, rcache %s", md_name,
              (md->rcache != NULL) ? "on" : "off");
    *md_p  = &md->super;
    status = UCS_OK;
    goto out_free_list;

err_rcache:
    if (md->rcache != NULL) {
        ucs_rcache_destroy(md->rcache);
    }
err_dealloc_pd:
    ibv_dealloc_pd(md->pd);
err_close:
    ibv_close_device(md->ctx);
err_free_md:
    kh_destroy_inplace(uct_srqud_rkeys, &md->rkeys);
    ucs_spinlock_destroy(&md->reg_lock);
    ucs_recursive_spinlock_destroy(&md->listener_lock);
    ucs_free(md);
out_free_list:
    ibv_free_device_list(dev_list);
    return status;
}


static ucs_status_t
uct_srqud_md_query_resources(uct_component_t *component,
                             uct_md_resource_desc_t **resources_p,
                             unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources;
    struct ibv_device **dev_list;
    int i, num_devices;

    *resources_p     = NULL;
    *num_resources_p = 0;

    dev_list = ibv_get_device_list(&num_devices);
    if ((dev_list == NULL) || (num_devices == 0)) {
        ucs_debug("srqud: no verbs devices found");
        if (dev_list != NULL) {
            ibv_free_device_list(dev_list);
        }
        return UCS_OK;
    }

    resources = ucs_calloc(num_devices, sizeof(*resources), "srqud_md_rsc");
    if (resources == NULL) {
        ibv_free_device_list(dev_list);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < num_devices; ++i) {
        ucs_strncpy_zero(resources[i].md_name, ibv_get_device_name(dev_list[i]),
                         sizeof(resources[i].md_name));
    }

    ibv_free_device_list(dev_list);
    *resources_p     = resources;
    *num_resources_p = num_devices;
    return UCS_OK;
}


uct_component_t uct_srqud_component = {
    .query_md_resources = uct_srqud_md_query_resources,
    .md_open            = uct_srqud_md_open,
    .cm_open            = (uct_component_cm_open_func_t)ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_srqud_md_rkey_unpack,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)ucs_empty_function_return_unsupported,
    .rkey_release       = (uct_component_rkey_release_func_t)ucs_empty_function_return_success,
    UCT_SRQUD_COMPONENT_COMPAT
    .name               = UCT_SRQUD_TL_NAME,
    .md_config          = {
        .name           = "srqud memory domain",
        .prefix         = UCT_SRQUD_CONFIG_PREFIX,
        .table          = uct_srqud_md_config_table,
        .size           = sizeof(uct_srqud_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_srqud_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)ucs_empty_function
};
