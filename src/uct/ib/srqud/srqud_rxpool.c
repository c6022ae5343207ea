/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_rxpool.h"
#include "srqud_rel.h"

#include <ucs/datastruct/queue.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <string.h>


/* Registered memory for a number of buffers: the pool's own, not an
 * interface's, since a shared pool outlives the interface that made it */
typedef struct uct_srqud_rxpool_slab {
    ucs_list_link_t          list;
    void                     *base;
    struct ibv_mr            *mr;
} uct_srqud_rxpool_slab_t;


/* posted, target and users are written under the lock, and read without it on the
 * fast path (uct_srqud_rxpool_missing, the stalled-worker check): atomic
 * so that such a read sees a whole value */
static UCS_F_ALWAYS_INLINE void uct_srqud_rxpool_count(unsigned *counter,
                                                       int delta)
{
    __atomic_store_n(counter, *counter + delta, __ATOMIC_RELAXED);
}


/* Called with the lock held (or before anyone else sees the pool) */
static ucs_status_t uct_srqud_rxpool_grow(uct_srqud_rxpool_t *pool,
                                          unsigned count)
{
    const uct_srqud_rxpool_params_t *p = &pool->params;
    size_t elem, pad, length;
    uct_srqud_rxpool_slab_t *slab;
    uct_srqud_recv_desc_t *desc;
    unsigned i;
    int ret;

    if (pool->allocated + count > p->max_bufs) {
        count = (pool->allocated < p->max_bufs) ?
                (p->max_bufs - pool->allocated) : 0;
    }
    if (count == 0) {
        return UCS_ERR_NO_MEMORY;
    }

    /* every payload aligned: elements are a multiple of the alignment, and
     * the first starts where its payload falls on the alignment */
    elem   = (p->elem_size + p->align - 1) / p->align * p->align;
    pad    = (p->align - (p->payload_offset % p->align)) % p->align;
    length = pad + (size_t)count * elem;

    slab = ucs_malloc(sizeof(*slab), "srqud_rxpool_slab");
    if (slab == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    ret = ucs_posix_memalign(&slab->base, ucs_max(p->align, UCS_SYS_CACHE_LINE_SIZE),
                             length, "srqud_rx_buffers");
    if (ret != 0) {
        ucs_free(slab);
        return UCS_ERR_NO_MEMORY;
    }

    slab->mr = ibv_reg_mr(pool->md->pd, slab->base, length,
                          IBV_ACCESS_LOCAL_WRITE);
    if (slab->mr == NULL) {
        ucs_error("%s: registering %zu bytes of receive buffers failed: %m",
                  pool->md->name, length);
        ucs_free(slab->base);
        ucs_free(slab);
        return UCS_ERR_IO_ERROR;
    }

    for (i = 0; i < count; ++i) {
        desc       = UCS_PTR_BYTE_OFFSET(slab->base, pad + (size_t)i * elem);
        desc->lkey = slab->mr->lkey;
        ucs_queue_push(&pool->free, &desc->queue);
    }
    ucs_list_add_tail(&pool->slabs, &slab->list);
    pool->allocated += count;
    pool->nfree     += count;
    return UCS_OK;
}


static unsigned uct_srqud_rxpool_take(uct_srqud_rxpool_t *pool,
                                      uct_srqud_recv_desc_t **descs,
                                      unsigned max)
{
    unsigned count = 0;

    while (count < max) {
        if (ucs_queue_is_empty(&pool->free) &&
            (uct_srqud_rxpool_grow(pool, pool->params.grow) != UCS_OK)) {
            break;
        }
        descs[count++] = ucs_queue_pull_elem_non_empty(&pool->free,
                                                       uct_srqud_recv_desc_t,
                                                       queue);
    }
    pool->nfree -= count;
    return count;
}


static void uct_srqud_rxpool_give(uct_srqud_rxpool_t *pool,
                                  uct_srqud_recv_desc_t **descs,
                                  unsigned count)
{
    unsigned i;

    for (i = 0; i < count; ++i) {
        ucs_queue_push(&pool->free, &descs[i]->queue);
    }
    pool->nfree += count;
}


/* Post @a count buffers (the lock held); what the SRQ refuses is left in
 * descs[] from the returned index on */
static unsigned uct_srqud_rxpool_post_locked(uct_srqud_rxpool_t *pool,
                                             uct_srqud_recv_desc_t **descs,
                                             unsigned count)
{
    struct ibv_recv_wr wrs[32], *bad_wr;
    struct ibv_sge sges[32];
    unsigned done = 0, n, i;
    int ret;

    while (done < count) {
        n = ucs_min(count - done, ucs_static_array_size(wrs));
        for (i = 0; i < n; ++i) {
            sges[i].addr   = (uintptr_t)UCS_PTR_BYTE_OFFSET(descs[done + i],
                                                pool->params.hdr_offset);
            sges[i].length = pool->params.post_len;
            sges[i].lkey   = descs[done + i]->lkey;
            wrs[i].wr_id   = (uintptr_t)descs[done + i];
            wrs[i].sg_list = &sges[i];
            wrs[i].num_sge = 1;
            wrs[i].next    = &wrs[i + 1];
        }
        wrs[n - 1].next = NULL;

        ret = ibv_post_srq_recv(pool->srq, wrs, &bad_wr);
        if (ret != 0) {
            ucs_error("%s: ibv_post_srq_recv() failed: %s", pool->md->name,
                      strerror(ret));
            n = bad_wr - wrs;
            uct_srqud_rxpool_count(&pool->posted, n);
            return done + n;
        }
        uct_srqud_rxpool_count(&pool->posted, n);
        done += n;
    }
    return done;
}


/* Post @a count free buffers (the lock held); fewer when memory runs out
 * or the SRQ refuses */
static unsigned uct_srqud_rxpool_fill(uct_srqud_rxpool_t *pool,
                                      unsigned count)
{
    uct_srqud_recv_desc_t *descs[64];
    unsigned n, posted, total = 0;

    while (total < count) {
        n = uct_srqud_rxpool_take(pool, descs,
                                  ucs_min(count - total,
                                          ucs_static_array_size(descs)));
        if (n == 0) {
            break;
        }
        posted = uct_srqud_rxpool_post_locked(pool, descs, n);
        uct_srqud_rxpool_give(pool, descs + posted, n - posted);
        total += posted;
        if (posted < n) {
            break;
        }
    }
    return total;
}


static ucs_status_t uct_srqud_rxpool_arm(uct_srqud_rxpool_t *pool)
{
    struct ibv_srq_attr attr;
    int ret;

    if (pool->limit == 0) {
        return UCS_OK;
    }

    attr.srq_limit = pool->limit;
    ret = ibv_modify_srq(pool->srq, &attr, IBV_SRQ_LIMIT);
    if (ret != 0) {
        ucs_error("%s: ibv_modify_srq(limit=%u) failed: %s", pool->md->name,
                  pool->limit, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}


/*
 * The LIMIT thread: runs on UCX's async thread, which blocks on the
 * device's async fd; the md calls it under its listener lock (so the pool
 * cannot be destroyed meanwhile). Fewer than limit buffers are left on the
 * SRQ; the others were consumed whether or not their interfaces have
 * polled the completions yet, so the refill is counted from the target,
 * not from posted.
 */
static void uct_srqud_rxpool_event(void *arg, enum ibv_event_type event_type)
{
    uct_srqud_rxpool_t *pool = arg;
    ucs_time_t now           = ucs_get_time();
    unsigned grow, refill, total;

    if (event_type != IBV_EVENT_SRQ_LIMIT_REACHED) {
        ucs_error("%s: SRQ error event %s", pool->md->name,
                  ibv_event_type_str(event_type));
        return;
    }

    ucs_spin_lock(&pool->lock);
    ++pool->limit_events;

    /* Drained again within a few wakeups of the last refill: the receivers
     * are not keeping up, so keep more buffers posted (as MVAPICH2 does) */
    grow = 0;
    if ((pool->last_limit_event != 0) &&
        (uct_srqud_time_since(now, pool->last_limit_event) <
         ucs_time_from_msec(10)) &&
        (pool->target < pool->params.max_size)) {
        grow = ucs_min(pool->target / 4 + 1,
                       pool->params.max_size - pool->target);
        uct_srqud_rxpool_count(&pool->target, grow);
        ++pool->grows;
    }
    pool->last_limit_event = now;

    /* At most limit buffers remain: posting target - limit keeps the SRQ
     * within target <= max_size, its capacity. Completions of posted
     * buffers wait in a receive CQ until its interface polls, and all of
     * them may be for one interface: never post more than one CQ holds. */
    refill = pool->target - pool->limit;
    if (pool->posted + refill > pool->params.cq_len) {
        refill = (pool->posted < pool->params.cq_len) ?
                 (pool->params.cq_len - pool->posted) : 0;
    }

    total = uct_srqud_rxpool_fill(pool, refill);
    pool->refilled += total;
    uct_srqud_rxpool_arm(pool);
    ucs_spin_unlock(&pool->lock);

    ucs_debug("%s: SRQ limit: refilled %u of %u, target %u (grew %u)",
              pool->md->name, total, refill, pool->target, grow);
}


static int uct_srqud_rxpool_params_equal(const uct_srqud_rxpool_params_t *a,
                                         const uct_srqud_rxpool_params_t *b)
{
    /* limit is the pool's, computed once: not part of the agreement */
    return (a->elem_size == b->elem_size) &&
           (a->payload_offset == b->payload_offset) &&
           (a->align == b->align) && (a->hdr_offset == b->hdr_offset) &&
           (a->post_len == b->post_len) && (a->size == b->size) &&
           (a->max_size == b->max_size) && (a->cq_len == b->cq_len) &&
           (a->grow == b->grow) && (a->max_bufs == b->max_bufs);
}


static void uct_srqud_rxpool_destroy(uct_srqud_rxpool_t *pool)
{
    uct_srqud_rxpool_slab_t *slab, *tmp;

    if (pool->srq != NULL) {
        /* waits for a LIMIT refill under way; a pool that failed to
         * create was not listened to, which it takes as nothing to do */
        uct_srqud_md_srq_unlisten(pool->md, pool->srq);
        /* buffers still posted go with it */
        ibv_destroy_srq(pool->srq);
    }
    ucs_list_for_each_safe(slab, tmp, &pool->slabs, list) {
        ibv_dereg_mr(slab->mr);
        ucs_free(slab->base);
        ucs_free(slab);
    }
    ucs_spinlock_destroy(&pool->lock);
    ucs_free(pool);
}


static ucs_status_t
uct_srqud_rxpool_create(uct_srqud_md_t *md, uint8_t port_num, int share,
                        const uct_srqud_rxpool_params_t *params,
                        unsigned (*limit_cb)(void*, double*), void *limit_arg,
                        uct_srqud_rxpool_t **pool_p)
{
    struct ibv_srq_init_attr srq_init_attr;
    uct_srqud_rxpool_t *pool;
    ucs_status_t status;

    pool = ucs_calloc(1, sizeof(*pool), "srqud_rxpool");
    if (pool == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    pool->md       = md;
    pool->port_num = port_num;
    pool->listed   = share;
    pool->users    = 1;
    pool->params   = *params;
    pool->target   = params->size;
    ucs_spinlock_init(&pool->lock, 0);
    ucs_queue_head_init(&pool->free);
    ucs_list_head_init(&pool->slabs);
    ucs_list_head_init(&pool->list);

    memset(&srq_init_attr, 0, sizeof(srq_init_attr));
    srq_init_attr.attr.max_wr  = params->max_size;
    srq_init_attr.attr.max_sge = 1;
    pool->srq = ibv_create_srq(md->pd, &srq_init_attr);
    if (pool->srq == NULL) {
        ucs_error("%s: ibv_create_srq(%u) failed: %m", md->name,
                  params->max_size);
        status = UCS_ERR_IO_ERROR;
        goto err;
    }

    /* Buffers for the initial posting and one refill's worth more: the
     * LIMIT thread must not wait for memory registration when it refills */
    status = uct_srqud_rxpool_grow(pool, 2 * params->size);
    if (status != UCS_OK) {
        goto err;
    }

    if (uct_srqud_rxpool_fill(pool, params->size) < params->size) {
        status = UCS_ERR_IO_ERROR;
        goto err;
    }

    /* The watermark (Eq. 5), from the first user's port and wakeup */
    pool->limit = limit_cb(limit_arg, &pool->t_wakeup);
    status      = uct_srqud_rxpool_arm(pool);
    if (status != UCS_OK) {
        goto err;
    }

    /* the md's async thread calls the LIMIT refill from now on */
    status = uct_srqud_md_srq_listen(md, pool->srq, uct_srqud_rxpool_event,
                                     pool);
    if (status != UCS_OK) {
        goto err;
    }

    *pool_p = pool;
    return UCS_OK;

err:
    uct_srqud_rxpool_destroy(pool);
    return status;
}


ucs_status_t uct_srqud_rxpool_attach(uct_srqud_md_t *md, uint8_t port_num,
                                     int share,
                                     const uct_srqud_rxpool_params_t *params,
                                     unsigned (*limit_cb)(void*, double*),
                                     void *limit_arg,
                                     uct_srqud_rxpool_t **pool_p)
{
    uct_srqud_rxpool_t *pool;
    ucs_status_t status;

    if (!share) {
        return uct_srqud_rxpool_create(md, port_num, 0, params, limit_cb,
                                       limit_arg, pool_p);
    }

    /* held while creating, so that two workers opening at once make one */
    pthread_mutex_lock(&md->rxpools_lock);
    ucs_list_for_each(pool, &md->rxpools, list) {
        if ((pool->port_num == port_num) &&
            uct_srqud_rxpool_params_equal(&pool->params, params)) {
            ucs_spin_lock(&pool->lock);
            uct_srqud_rxpool_count(&pool->users, 1);
            ucs_spin_unlock(&pool->lock);
            pthread_mutex_unlock(&md->rxpools_lock);
            ucs_debug("%s:%d: sharing receive pool %p (%u users)", md->name,
                      port_num, pool, pool->users);
            *pool_p = pool;
            return UCS_OK;
        }
        ucs_debug("%s:%d: receive pool %p has other settings: not shared",
                  md->name, port_num, pool);
    }

    status = uct_srqud_rxpool_create(md, port_num, 1, params, limit_cb,
                                     limit_arg, pool_p);
    if (status == UCS_OK) {
        ucs_list_add_tail(&md->rxpools, &(*pool_p)->list);
    }
    pthread_mutex_unlock(&md->rxpools_lock);
    return status;
}


void uct_srqud_rxpool_detach(uct_srqud_rxpool_t *pool, unsigned long taken)
{
    uct_srqud_md_t *md = pool->md;
    int listed         = pool->listed; /* the pool may be gone below */
    unsigned users;

    if (listed) {
        pthread_mutex_lock(&md->rxpools_lock);
    }

    ucs_spin_lock(&pool->lock);
    if (taken > 0) {
        /* a descriptor the user kept: it stays allocated until the pool
         * goes, but no interface will give it back */
        ucs_warn("%s:%d: an interface closed holding %lu receive buffers",
                 md->name, pool->port_num, taken);
        pool->lent -= taken;
        pool->lost += taken;
    }
    uct_srqud_rxpool_count(&pool->users, -1);
    users = pool->users;
    ucs_spin_unlock(&pool->lock);

    if (users == 0) {
        if (listed) {
            ucs_list_del(&pool->list);
        }
        uct_srqud_rxpool_destroy(pool);
    }

    if (listed) {
        pthread_mutex_unlock(&md->rxpools_lock);
    }
}


unsigned uct_srqud_rxpool_get(uct_srqud_rxpool_t *pool,
                              uct_srqud_recv_desc_t **descs, unsigned max)
{
    unsigned count;

    ucs_spin_lock(&pool->lock);
    count       = uct_srqud_rxpool_take(pool, descs, max);
    pool->lent += count;
    ucs_spin_unlock(&pool->lock);
    return count;
}


void uct_srqud_rxpool_put(uct_srqud_rxpool_t *pool,
                          uct_srqud_recv_desc_t **descs, unsigned count)
{
    ucs_spin_lock(&pool->lock);
    uct_srqud_rxpool_give(pool, descs, count);
    pool->lent -= count;
    ucs_spin_unlock(&pool->lock);
}


unsigned uct_srqud_rxpool_post(uct_srqud_rxpool_t *pool,
                               uct_srqud_recv_desc_t **descs, unsigned count)
{
    unsigned posted;

    ucs_spin_lock(&pool->lock);
    if (pool->posted + count > pool->target) {
        count = (pool->posted < pool->target) ? (pool->target - pool->posted) :
                0;
    }
    posted      = uct_srqud_rxpool_post_locked(pool, descs, count);
    pool->lent -= posted;
    ucs_spin_unlock(&pool->lock);
    return posted;
}


void uct_srqud_rxpool_polled(uct_srqud_rxpool_t *pool, unsigned count)
{
    ucs_spin_lock(&pool->lock);
    uct_srqud_rxpool_count(&pool->posted, -(int)count);
    pool->lent += count;
    ucs_spin_unlock(&pool->lock);
}


void uct_srqud_rxpool_query(uct_srqud_rxpool_t *pool,
                            uct_srqud_rxpool_state_t *state)
{
    ucs_spin_lock(&pool->lock);
    state->users        = pool->users;
    state->posted       = pool->posted;
    state->target       = pool->target;
    state->limit        = pool->limit;
    state->allocated    = pool->allocated;
    state->nfree        = pool->nfree;
    state->lent         = pool->lent;
    state->lost         = pool->lost;
    state->limit_events = pool->limit_events;
    state->refilled     = pool->refilled;
    state->grows        = pool->grows;
    ucs_spin_unlock(&pool->lock);
}
