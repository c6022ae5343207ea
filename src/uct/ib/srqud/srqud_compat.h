/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Every difference between the UCX versions srqud builds against, in one
 * place. srqud is compiled against UCX's internal headers (uct_md_ops_t,
 * uct_iface_internal_ops_t, rcache, config macros), which change between
 * minor releases; the rest of the transport is written once, against the
 * names defined here. The supported versions are the ones configure
 * accepts (SRQUD_UCX_SUPPORTED in configure.ac); the "since" version of
 * each item below was checked against the UCX release tags, see
 * docs/notes/ucx-compat-notes.md for the references.
 *
 * Rules: no other srqud file tests a UCX version; an item here is either a
 * name (type, table, flag) or an adapter with the signature that version's
 * op table expects, calling a version-neutral srqud function.
 */

#ifndef UCT_SRQUD_COMPAT_H_
#define UCT_SRQUD_COMPAT_H_

#include "srqud_def.h"

#include <uct/api/uct.h>
#include <uct/api/version.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/memory/rcache.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/type/param.h>


#define SRQUD_UCX_VER(_maj, _min) (((_maj) << 8) | (_min))
#define SRQUD_UCX_VERSION         SRQUD_UCX_VER(UCT_VERNO_MAJOR, UCT_VERNO_MINOR)
#define SRQUD_UCX_AT_LEAST(_maj, _min) \
    (SRQUD_UCX_VERSION >= SRQUD_UCX_VER(_maj, _min))

/* What srqud was built against, for the load-time check (srqud_module.c) */
#define SRQUD_UCX_BUILT_MAJOR     UCT_VERNO_MAJOR
#define SRQUD_UCX_BUILT_MINOR     UCT_VERNO_MINOR
#define SRQUD_UCX_BUILT_PATCH     UCT_VERNO_PATCH


/* ------------------------------------------------------------------------
 * Configuration
 */

#if SRQUD_UCX_AT_LEAST(1, 17)
/* every UCS_CONFIG_TYPE_xx holds its address since 1.17; weak as every
 * symbol that only some versions have and that a table holds (bound at
 * load time, unlike a call): a module built for another UCX must load far
 * enough to refuse itself with a message (srqud_module.c) */
#  pragma weak ucs_config_doc_nop
#endif

#if SRQUD_UCX_AT_LEAST(1, 14)
/* 1.14 added MAX_CHUNK_SIZE and GROW_FACTOR; the values are the ib
 * transports' (uct/ib/base/ib_iface.c) */
#  define UCT_SRQUD_MPOOL_CONFIG_FIELDS(_prefix, _max, _grow, _name, _off, _desc) \
    UCT_IFACE_MPOOL_CONFIG_FIELDS(_prefix, _max, _grow, 128m, 1.0, _name, \
                                  _off, _desc)
#else
#  define UCT_SRQUD_MPOOL_CONFIG_FIELDS(_prefix, _max, _grow, _name, _off, _desc) \
    UCT_IFACE_MPOOL_CONFIG_FIELDS(_prefix, _max, _grow, _name, _off, _desc)
#endif


/* Registration cache settings: the md's own table up to 1.13, UCS's from
 * 1.16, where the address alignment is no longer a setting (1.17 passes it
 * to ucs_rcache_get) */
#if SRQUD_UCX_AT_LEAST(1, 16)
typedef ucs_rcache_config_t uct_srqud_rcache_config_t;
#  define UCT_SRQUD_RCACHE_CONFIG_TABLE   ucs_config_rcache_table
#  define UCT_SRQUD_RCACHE_CONFIG_DEFAULT ""
/* weak: see ucs_config_doc_nop above */
#  pragma weak ucs_config_rcache_table
#else
typedef uct_md_rcache_config_t uct_srqud_rcache_config_t;
#  define UCT_SRQUD_RCACHE_CONFIG_TABLE   uct_md_config_rcache_table
#  define UCT_SRQUD_RCACHE_CONFIG_DEFAULT "RCACHE_ADDR_ALIGN=16"
#  pragma weak uct_md_config_rcache_table
#endif

/* The alignment of cached regions; 16 is the old RCACHE_ADDR_ALIGN default
 * and UCS_RCACHE_MIN_ALIGNMENT of later versions */
#define UCT_SRQUD_RCACHE_ALIGN 16


static UCS_F_ALWAYS_INLINE void
uct_srqud_compat_rcache_params(ucs_rcache_params_t *params,
                               const uct_srqud_rcache_config_t *config)
{
#if SRQUD_UCX_AT_LEAST(1, 16)
    ucs_rcache_set_params(params, config);
#else
    uct_md_set_rcache_params(params, config);
    params->max_alignment = ucs_get_page_size();
#endif
#if SRQUD_UCX_AT_LEAST(1, 21)
    /* 1.21 updates the LRU list under a read lock unless told that nothing
     * else serializes the cache; srqud's md is shared by all workers */
    params->flags |= UCS_RCACHE_FLAG_NEED_LRU_LOCK;
#endif
}


static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srqud_compat_rcache_get(ucs_rcache_t *rcache, void *address, size_t length,
                            void *arg, ucs_rcache_region_t **region_p)
{
#if SRQUD_UCX_AT_LEAST(1, 17)
    return ucs_rcache_get(rcache, address, length, UCT_SRQUD_RCACHE_ALIGN,
                          PROT_READ | PROT_WRITE, arg, region_p);
#else
    return ucs_rcache_get(rcache, address, length, PROT_READ | PROT_WRITE,
                          arg, region_p);
#endif
}


#if SRQUD_UCX_AT_LEAST(1, 18)
/* 1.18 calls merge, unchecked, when a new registration overlaps a cached
 * region. Nothing to merge: the old region keeps its MR and registry entry
 * until its last holder puts it, the new one gets its own. */
#  define UCT_SRQUD_RCACHE_OPS_COMPAT \
    .merge = (void*)ucs_empty_function,
#else
#  define UCT_SRQUD_RCACHE_OPS_COMPAT
#endif


/* ------------------------------------------------------------------------
 * Memory domain: what the md reports, and op signatures
 */

/* The md's capabilities in a version-neutral form; the query adapter copies
 * them into the attribute struct of the running version */
typedef struct uct_srqud_md_caps {
    uint64_t           flags;          /* UCT_MD_FLAG_xx */
    uint64_t           mem_types;      /* registration and access */
    size_t             max_alloc;
    size_t             max_reg;
    size_t             rkey_packed_size;
    ucs_linear_func_t  reg_cost;
} uct_srqud_md_caps_t;


#if SRQUD_UCX_AT_LEAST(1, 15)
/* UCP (1.15+) asks for INVALIDATE_RMA, not INVALIDATE, on the rendezvous
 * lanes of endpoints with peer error handling; the UCT contract that comes
 * with it: a deregistration with INVALIDATE needs a key packed with
 * UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA (test_md::test_reg_mem). */
#  define UCT_SRQUD_MD_FLAG_INVALIDATE_RMA UCT_MD_FLAG_INVALIDATE_RMA
#  define UCT_SRQUD_MKEY_PACK_INVALIDATE   UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA
#  define UCT_SRQUD_MKEY_PACK_UNSUPPORTED  (UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO | \
                                            UCT_MD_MKEY_PACK_FLAG_EXPORT)
#  define UCT_SRQUD_INVALIDATE_NEEDS_PACK  1
#else
#  define UCT_SRQUD_MD_FLAG_INVALIDATE_RMA 0
#  define UCT_SRQUD_MKEY_PACK_INVALIDATE   UCT_MD_MKEY_PACK_FLAG_INVALIDATE
#  define UCT_SRQUD_MKEY_PACK_UNSUPPORTED  0
#  define UCT_SRQUD_INVALIDATE_NEEDS_PACK  0
#endif


/* Soft-RoCE and unknown topologies: every CPU is "near" the device */
static UCS_F_ALWAYS_INLINE void uct_srqud_compat_all_cpus(ucs_cpu_set_t *cpus)
{
    long cpu;

    UCS_CPU_ZERO(cpus);
    for (cpu = 0; cpu < ucs_sys_get_num_cpus(); ++cpu) {
        UCS_CPU_SET(cpu, cpus);
    }
}

#if SRQUD_UCX_AT_LEAST(1, 16)
/* reg_alignment since 1.16: 0 would make UCP (1.17+) align every range to
 * address 0 */
#  define UCT_SRQUD_MD_ATTR_REG_ALIGNMENT(_attr) (_attr)->reg_alignment = 1
#else
#  define UCT_SRQUD_MD_ATTR_REG_ALIGNMENT(_attr) ((void)(_attr))
#endif

#if SRQUD_UCX_AT_LEAST(1, 14)
/* v2 attributes: UCT zeroed the struct, and what stays 0 means "not
 * supported" */
#  define UCT_SRQUD_MD_QUERY_DEFINE(_name, _caps_func) \
    static ucs_status_t _name(uct_md_h md, uct_md_attr_v2_t *attr) \
    { \
        uct_srqud_md_caps_t caps; \
        \
        _caps_func(md, &caps); \
        attr->flags            = caps.flags; \
        attr->reg_mem_types    = caps.mem_types; \
        attr->access_mem_types = caps.mem_types; \
        /* UCP's datatype iterator asserts that every md it registers \
         * through is cacheable when its own registration cache is on */ \
        attr->cache_mem_types  = caps.mem_types; \
        attr->max_alloc        = caps.max_alloc; \
        attr->max_reg          = caps.max_reg; \
        attr->rkey_packed_size = caps.rkey_packed_size; \
        attr->reg_cost         = caps.reg_cost; \
        UCT_SRQUD_MD_ATTR_REG_ALIGNMENT(attr); \
        uct_srqud_compat_all_cpus(&attr->local_cpus); \
        return UCS_OK; \
    }
#else
#  define UCT_SRQUD_MD_QUERY_DEFINE(_name, _caps_func) \
    static ucs_status_t _name(uct_md_h md, uct_md_attr_t *attr) \
    { \
        uct_srqud_md_caps_t caps; \
        \
        _caps_func(md, &caps); \
        memset(&attr->cap, 0, sizeof(attr->cap)); \
        attr->cap.flags            = caps.flags; \
        attr->cap.reg_mem_types    = caps.mem_types; \
        attr->cap.access_mem_types = caps.mem_types; \
        attr->cap.max_alloc        = caps.max_alloc; \
        attr->cap.max_reg          = caps.max_reg; \
        attr->rkey_packed_size     = caps.rkey_packed_size; \
        attr->reg_cost             = caps.reg_cost; \
        ucs_strncpy_zero(attr->component_name, UCT_SRQUD_TL_NAME, \
                         sizeof(attr->component_name)); \
        uct_srqud_compat_all_cpus(&attr->local_cpus); \
        return UCS_OK; \
    }
#endif


/* mem_reg: flags in a params struct since 1.14 */
#if SRQUD_UCX_AT_LEAST(1, 14)
#  define UCT_SRQUD_MD_MEM_REG_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, void *address, size_t length, \
                              const uct_md_mem_reg_params_t *params, \
                              uct_mem_h *memh_p) \
    { \
        return _impl(md, address, length, \
                     UCT_MD_MEM_REG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0), \
                     memh_p); \
    }
#else
#  define UCT_SRQUD_MD_MEM_REG_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, void *address, size_t length, \
                              unsigned flags, uct_mem_h *memh_p) \
    { \
        return _impl(md, address, length, flags, memh_p); \
    }
#endif


/* mkey_pack: the region's address and length since 1.16 (unused: a key
 * names a whole registration) */
#if SRQUD_UCX_AT_LEAST(1, 16)
#  define UCT_SRQUD_MKEY_PACK_RANGE_ARGS void *address, size_t length,
#else
#  define UCT_SRQUD_MKEY_PACK_RANGE_ARGS
#endif
#define UCT_SRQUD_MD_MKEY_PACK_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, uct_mem_h memh, \
                              UCT_SRQUD_MKEY_PACK_RANGE_ARGS \
                              const uct_md_mkey_pack_params_t *params, \
                              void *buffer) \
    { \
        return _impl(md, memh, \
                     UCS_PARAM_VALUE(UCT_MD_MKEY_PACK_FIELD, params, flags, \
                                     FLAGS, 0), \
                     buffer); \
    }


/* md op slots a version adds or removes. UCT calls each present slot
 * without a NULL check, so every one is filled. */
#if SRQUD_UCX_AT_LEAST(1, 16)
#  define UCT_SRQUD_MD_OPS_SOCKADDR
#else
#  define UCT_SRQUD_MD_OPS_SOCKADDR \
    .is_sockaddr_accessible = (uct_md_is_sockaddr_accessible_func_t) \
                              ucs_empty_function_return_zero_int,
#endif
#if SRQUD_UCX_AT_LEAST(1, 14)
#  define UCT_SRQUD_MD_OPS_ATTACH \
    .mem_attach = (uct_md_mem_attach_func_t) \
                  ucs_empty_function_return_unsupported,
#else
#  define UCT_SRQUD_MD_OPS_ATTACH
#endif
#if SRQUD_UCX_AT_LEAST(1, 21)
#  define UCT_SRQUD_MD_OPS_ELEM_PACK \
    .mem_elem_pack = (uct_md_mem_elem_pack_func_t) \
                     ucs_empty_function_return_unsupported,
#else
#  define UCT_SRQUD_MD_OPS_ELEM_PACK
#endif
#define UCT_SRQUD_MD_OPS_COMPAT \
    UCT_SRQUD_MD_OPS_SOCKADDR UCT_SRQUD_MD_OPS_ATTACH UCT_SRQUD_MD_OPS_ELEM_PACK


/* ------------------------------------------------------------------------
 * Component
 */

/* rkey_unpack: unpack parameters (the system device) since 1.19 */
#if SRQUD_UCX_AT_LEAST(1, 19)
#  define UCT_SRQUD_RKEY_UNPACK_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_component_t *component, \
                              const void *rkey_buffer, \
                              const uct_rkey_unpack_params_t *params, \
                              uct_rkey_t *rkey_p, void **handle_p) \
    { \
        return _impl(rkey_buffer, rkey_p, handle_p); \
    }
#else
#  define UCT_SRQUD_RKEY_UNPACK_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_component_t *component, \
                              const void *rkey_buffer, uct_rkey_t *rkey_p, \
                              void **handle_p) \
    { \
        return _impl(rkey_buffer, rkey_p, handle_p); \
    }
#endif

#if SRQUD_UCX_AT_LEAST(1, 16)
/* called by ucp_rkey_compare() with no NULL check */
ucs_status_t uct_srqud_compat_rkey_compare(uct_component_t *component,
                                           uct_rkey_t rkey1, uct_rkey_t rkey2,
                                           const uct_rkey_compare_params_t *params,
                                           int *result);
#  define UCT_SRQUD_COMPONENT_COMPAT \
    .rkey_compare = uct_srqud_compat_rkey_compare,
#else
#  define UCT_SRQUD_COMPONENT_COMPAT
#endif


/* ------------------------------------------------------------------------
 * Interface and endpoint
 */

#if SRQUD_UCX_AT_LEAST(1, 18)
/* without it UCP (1.18+) takes an endpoint whose lanes lack it for an
 * intra-node one: wrong rendezvous threshold, left out of NET_ONLY
 * worker addresses */
#  define UCT_SRQUD_IFACE_FLAG_INTER_NODE UCT_IFACE_FLAG_INTER_NODE
#else
#  define UCT_SRQUD_IFACE_FLAG_INTER_NODE 0
#endif


/* uct_ep_check(): 1.22 allows a completion ("peer status not known yet is
 * reported through comp"); earlier versions reject one */
#if SRQUD_UCX_AT_LEAST(1, 22)
#  define UCT_SRQUD_EP_CHECK_PARAMS(_flags, _comp) \
    UCT_EP_KEEPALIVE_CHECK_PARAM(_flags)
#else
#  define UCT_SRQUD_EP_CHECK_PARAMS(_flags, _comp) \
    UCT_EP_KEEPALIVE_CHECK_PARAM(_flags, _comp)
#endif


/* Internal ops a version adds, each called by UCT/UCP without a NULL check.
 * The real ones are in srqud_compat.c. */
#if SRQUD_UCX_AT_LEAST(1, 14)
#  define UCT_SRQUD_INTERNAL_OPS_14 \
    .ep_connect_to_ep_v2 = (uct_ep_connect_to_ep_v2_func_t) \
                           ucs_empty_function_return_unsupported,
#else
#  define UCT_SRQUD_INTERNAL_OPS_14
#endif

#if SRQUD_UCX_AT_LEAST(1, 15)
int uct_srqud_compat_iface_is_reachable_v2(
        const uct_iface_h tl_iface,
        const uct_iface_is_reachable_params_t *params);
#  define UCT_SRQUD_INTERNAL_OPS_15 \
    .iface_is_reachable_v2 = uct_srqud_compat_iface_is_reachable_v2,
#else
#  define UCT_SRQUD_INTERNAL_OPS_15
#endif

#if SRQUD_UCX_AT_LEAST(1, 16)
int uct_srqud_compat_ep_is_connected(const uct_ep_h tl_ep,
                                     const uct_ep_is_connected_params_t *params);
#  define UCT_SRQUD_INTERNAL_OPS_16 \
    .ep_is_connected = uct_srqud_compat_ep_is_connected,
#else
#  define UCT_SRQUD_INTERNAL_OPS_16
#endif

#if SRQUD_UCX_AT_LEAST(1, 20)
#  define UCT_SRQUD_INTERNAL_OPS_20 \
    .ep_get_device_ep = (uct_ep_get_device_ep_func_t) \
                        ucs_empty_function_return_unsupported,
#else
#  define UCT_SRQUD_INTERNAL_OPS_20
#endif

#if SRQUD_UCX_AT_LEAST(1, 22) || (SRQUD_UCX_VERSION == SRQUD_UCX_VER(1, 20))
/* UCP's protocol selection queries it for every put lane (1.20, 1.22+;
 * 1.21 does not have it) */
ucs_status_t uct_srqud_compat_iface_query_v2(uct_iface_h tl_iface,
                                             uct_iface_attr_v2_t *attr);
#  define UCT_SRQUD_INTERNAL_OPS_QUERY_V2 \
    .iface_query_v2 = uct_srqud_compat_iface_query_v2,
#else
#  define UCT_SRQUD_INTERNAL_OPS_QUERY_V2
#endif

#if SRQUD_UCX_AT_LEAST(1, 22)
#  define UCT_SRQUD_INTERNAL_OPS_22 \
    .ep_put_sgl_zcopy = (uct_ep_put_sgl_zcopy_func_t) \
                        ucs_empty_function_return_unsupported,
#else
#  define UCT_SRQUD_INTERNAL_OPS_22
#endif

#if SRQUD_UCX_AT_LEAST(1, 23)
/* UCX's development branch (the devel row) asserts at iface init that
 * ep_outstanding_purge is set, and calls ep_get_sgl_zcopy unchecked */
#  define UCT_SRQUD_INTERNAL_OPS_23 \
    .ep_get_sgl_zcopy     = (uct_ep_get_sgl_zcopy_func_t) \
                            ucs_empty_function_return_unsupported, \
    .ep_outstanding_purge = (uct_ep_outstanding_purge_func_t) \
                            ucs_empty_function_return_unsupported,
#else
#  define UCT_SRQUD_INTERNAL_OPS_23
#endif

#define UCT_SRQUD_INTERNAL_OPS_COMPAT \
    UCT_SRQUD_INTERNAL_OPS_QUERY_V2 UCT_SRQUD_INTERNAL_OPS_14 \
    UCT_SRQUD_INTERNAL_OPS_15 UCT_SRQUD_INTERNAL_OPS_16 \
    UCT_SRQUD_INTERNAL_OPS_20 UCT_SRQUD_INTERNAL_OPS_22 \
    UCT_SRQUD_INTERNAL_OPS_23

#endif
