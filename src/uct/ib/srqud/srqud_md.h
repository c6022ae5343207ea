/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * srqud memory domain: one per verbs device. It owns the verbs context and
 * the protection domain, so srqud is independent of UCX's "ib" component
 * (whose device consumes IBV_EVENT_SRQ_LIMIT_REACHED on its own async fd),
 * and it keeps the registered regions that remote requests are checked
 * against.
 */

#ifndef UCT_SRQUD_MD_H_
#define UCT_SRQUD_MD_H_

#include "srqud_def.h"

#include <uct/base/uct_md.h>
#include <ucs/memory/rcache.h>
#include <ucs/type/spinlock.h>
#include <ucs/datastruct/list.h>
#include <infiniband/verbs.h>


typedef struct uct_srqud_iface uct_srqud_iface_t;


typedef struct uct_srqud_md_config {
    uct_md_config_t          super;
    ucs_ternary_auto_value_t rcache_enable;  /* Use the registration cache */
    uct_md_rcache_config_t   rcache;         /* Registration cache tuning */
} uct_srqud_md_config_t;


/**
 * Memory handle. When the registration cache is used the handle is the
 * cache region itself; otherwise the region part is unused.
 */
typedef struct uct_srqud_mem {
    ucs_rcache_region_t super;
    struct ibv_mr       *mr;
    uint32_t            flags;      /* UCT_SRQUD_MEM_FLAG_xx */
} uct_srqud_mem_t;


enum {
    UCT_SRQUD_MEM_FLAG_RCACHE = UCS_BIT(0)
};


typedef struct uct_srqud_md {
    uct_md_t                super;
    struct ibv_context      *ctx;
    struct ibv_pd           *pd;
    struct ibv_device_attr  dev_attr;
    ucs_rcache_t            *rcache;      /* NULL if disabled */
    int                     async_fd_registered;
    /* Interfaces opened on this md, to route device async events
     * (SRQ limit, port changes) to them. Protected by iface_lock, since the
     * async thread walks it. */
    ucs_recursive_spinlock_t iface_lock;
    ucs_list_link_t         iface_list;
    struct {
        unsigned long       async_events;  /* async events seen on the device */
    } stats;
    char                    name[UCT_MD_NAME_MAX];
} uct_srqud_md_t;


extern uct_component_t uct_srqud_component;


void uct_srqud_md_iface_attach(uct_srqud_md_t *md, uct_srqud_iface_t *iface);

void uct_srqud_md_iface_detach(uct_srqud_md_t *md, uct_srqud_iface_t *iface);


static UCS_F_ALWAYS_INLINE uint32_t uct_srqud_memh_lkey(uct_mem_h memh)
{
    return ((uct_srqud_mem_t*)memh)->mr->lkey;
}

#endif
