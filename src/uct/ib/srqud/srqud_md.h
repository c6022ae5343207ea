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
#include "srqud_compat.h"

#include <uct/base/uct_md.h>
#include <ucs/memory/rcache.h>
#include <ucs/type/spinlock.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/khash.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <sys/random.h>
#include <ucs/sys/sys.h>


/* Told of an SRQ's async events (srqud_rx.c's LIMIT refill) */
typedef void (*uct_srqud_md_srq_cb_t)(void *arg, enum ibv_event_type event);

typedef struct uct_srqud_md_srq_listener {
    ucs_list_link_t          list;
    struct ibv_srq           *srq;
    uct_srqud_md_srq_cb_t    cb;
    void                     *arg;
} uct_srqud_md_srq_listener_t;


typedef struct uct_srqud_md_config {
    uct_md_config_t          super;
    ucs_ternary_auto_value_t rcache_enable;  /* Use the registration cache */
    uct_srqud_rcache_config_t rcache;        /* Registration cache tuning */
} uct_srqud_md_config_t;


/**
 * A registration: its verbs MR. With the registration cache it is the
 * cache's region, which UCX may stretch and share among registrations of
 * overlapping ranges (so its MR has every access); without, it belongs to
 * one user registration.
 */
typedef struct uct_srqud_mem {
    ucs_rcache_region_t super;
    struct ibv_mr       *mr;
} uct_srqud_mem_t;


/**
 * Memory handle: one user registration, what peers may reach of it and
 * under which key. The packed remote key names the handle, never the
 * region: a peer is served exactly the range and access this registration
 * asked for, while it stands, whatever the cache made of the region. Keys
 * are random, so that a refused request tells a peer nothing about other
 * keys. A peer's request in progress holds the handle (inflight): the
 * handle, and through it the region and its MR, outlive a deregistration
 * until the HCA is done with the memory.
 */
typedef struct uct_srqud_memh {
    struct ibv_mr       *mr;        /* the region's (first: fast paths read
                                       its lkey) */
    uct_srqud_mem_t     *region;
    uint64_t            address;    /* the range registered */
    size_t              length;
    uint32_t            access;     /* UCT_MD_MEM_ACCESS_xx asked for */
    uint32_t            key;        /* what peers name: the packed rkey */
    uint32_t            flags;      /* UCT_SRQUD_MEM_FLAG_xx */
    uint32_t            inflight;   /* peers' requests using it */
    uct_completion_t    *dereg_comp;/* invalidate: when inflight is done */
} uct_srqud_memh_t;


enum {
    UCT_SRQUD_MEM_FLAG_RCACHE      = UCS_BIT(0), /* region is the cache's */
    UCT_SRQUD_MEM_FLAG_DEREG       = UCS_BIT(2), /* deregistered: free when
                                                  * idle, refuse requests */
    UCT_SRQUD_MEM_FLAG_PACKED_INVALIDATE = UCS_BIT(3) /* a key was packed
                                                       * for invalidation */
};


KHASH_MAP_INIT_INT(uct_srqud_rkeys, uct_srqud_memh_t*)


typedef struct uct_srqud_md {
    uct_md_t                super;
    struct ibv_context      *ctx;
    struct ibv_pd           *pd;
    struct ibv_device_attr  dev_attr;
    ucs_rcache_t            *rcache;      /* NULL if disabled */
    int                     async_fd_registered;
    /* Who wants the device's SRQ events (one per interface): the async
     * thread walks it, so it is protected by listener_lock. The md knows
     * no interface. */
    ucs_recursive_spinlock_t listener_lock;
    ucs_list_link_t         listeners;
    /* Receive pools its interfaces share (UCX_SRQUD_SHARE=srq,
     * srqud_rxpool.c): the lock is held while one is created */
    pthread_mutex_t         rxpools_lock;
    ucs_list_link_t         rxpools;
    /* UCX_SRQUD_SHARE=td on a device without thread domains: said once */
    int                     td_fallback_logged;
    /* Registered regions by remote key (any thread registers, any worker
     * checks peers' requests) */
    ucs_spinlock_t          reg_lock;
    khash_t(uct_srqud_rkeys) rkeys;
    struct {
        unsigned long       async_events;  /* async events seen on the device */
        unsigned long       remote_refused;/* peers' requests refused */
    } stats;
    char                    name[UCT_MD_NAME_MAX];
} uct_srqud_md_t;


extern uct_component_t uct_srqud_component;


/* Route the async events of @a srq to @a cb (until unlisten, which waits
 * for a callback in progress) */
ucs_status_t uct_srqud_md_srq_listen(uct_srqud_md_t *md, struct ibv_srq *srq,
                                     uct_srqud_md_srq_cb_t cb, void *arg);

void uct_srqud_md_srq_unlisten(uct_srqud_md_t *md, struct ibv_srq *srq);


/**
 * A peer's request names [address, address + length) with @a rkey and needs
 * @a access (UCT_MD_MEM_ACCESS_REMOTE_GET/PUT). On success the region is
 * held until uct_srqud_md_region_release(); its lkey serves the transfer.
 * Anything else is refused: unknown key, range outside the region (or
 * wrapping), access the user did not grant, region being invalidated.
 */
ucs_status_t uct_srqud_md_region_acquire(uct_srqud_md_t *md, uint32_t rkey,
                                         uint64_t address, size_t length,
                                         unsigned access,
                                         uct_srqud_memh_t **memh_p);

void uct_srqud_md_region_release(uct_srqud_md_t *md, uct_srqud_memh_t *memh);


/**
 * The CPU copies of a peer's request (a put's bytes, a get's answer, moving
 * misplaced zero-copy chunks) run between enter and leave, under the
 * registry lock: a deregistration that returned before enter makes enter
 * fail (the user may have unmapped the memory), one that comes later waits
 * until leave. Keep the section short (at most a round of chunk moves).
 */
int uct_srqud_md_region_enter(uct_srqud_md_t *md, uct_srqud_memh_t *memh);

void uct_srqud_md_region_leave(uct_srqud_md_t *md);


/**
 * A peer's put of @a length bytes at @a address, or its get into @a buf:
 * checked as by uct_srqud_md_region_acquire() and copied under the
 * registry lock (see uct_srqud_md_region_enter()).
 */
ucs_status_t uct_srqud_md_remote_copy(uct_srqud_md_t *md, uint32_t rkey,
                                      uint64_t address, void *buf,
                                      size_t length, unsigned access);


/* 32 bits other hosts cannot predict (connection tokens, zero-copy Q_Keys):
 * the kernel's random numbers, or UCX's mix of time, pid and @a salt */
static inline uint32_t uct_srqud_secret32(const void *salt)
{
    uint32_t secret;

    if (getrandom(&secret, sizeof(secret), GRND_NONBLOCK) != sizeof(secret)) {
        secret = (uint32_t)ucs_generate_uuid((uintptr_t)salt);
    }
    return secret;
}


static UCS_F_ALWAYS_INLINE uint32_t uct_srqud_memh_lkey(uct_mem_h memh)
{
    return ((uct_srqud_memh_t*)memh)->mr->lkey;
}

#endif
