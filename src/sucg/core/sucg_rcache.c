/*
 * LRU registration cache. A linear list: the bound is small (default 64
 * entries) and a lookup is cheap compared with the collective it serves;
 * an interval tree would be the next step if the bound had to grow.
 */
#include "sucg/core/sucg_rcache.h"

#include <stdlib.h>

static void sucg_rcache_unlink(sucg_rcache_t *rc, sucg_rcache_entry_t *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->cached     = 0;
    rc->nentries--;
    rc->nbytes   -= e->end - e->start;
}

static void sucg_rcache_push_front(sucg_rcache_t *rc, sucg_rcache_entry_t *e)
{
    e->next             = rc->head.next;
    e->prev             = &rc->head;
    rc->head.next->prev = e;
    rc->head.next       = e;
    e->cached           = 1;
}

static void sucg_rcache_destroy_entry(sucg_rcache_t *rc, sucg_rcache_entry_t *e)
{
    rc->ops->dereg(rc->arg, e);
    free(e);
}

void sucg_rcache_init(sucg_rcache_t *rc, const sucg_rcache_ops_t *ops,
                      void *arg, unsigned max_entries, size_t max_bytes)
{
    rc->head.next   = rc->head.prev = &rc->head;
    rc->ops         = ops;
    rc->arg         = arg;
    rc->max_entries = max_entries;
    rc->max_bytes   = max_bytes;
    rc->nentries    = 0;
    rc->nbytes      = 0;
    rc->next_id     = 1;
    rc->hits        = rc->misses = rc->evictions = 0;
}

void sucg_rcache_cleanup(sucg_rcache_t *rc)
{
    sucg_rcache_entry_t *e;

    /* referenced entries here would be a bug of the caller; drop them all */
    while (rc->head.next != &rc->head) {
        e = rc->head.next;
        sucg_rcache_unlink(rc, e);
        sucg_rcache_destroy_entry(rc, e);
    }
}

/* Evict unreferenced entries from the LRU end until @a need fits */
static void sucg_rcache_make_room(sucg_rcache_t *rc, size_t need)
{
    sucg_rcache_entry_t *e, *prev;

    for (e = rc->head.prev; e != &rc->head; e = prev) {
        prev = e->prev;
        if ((rc->nentries < rc->max_entries) &&
            (rc->nbytes + need <= rc->max_bytes)) {
            break;
        }
        if (e->refcount == 0) {
            sucg_rcache_unlink(rc, e);
            sucg_rcache_destroy_entry(rc, e);
            rc->evictions++;
        }
    }
}

ucs_status_t sucg_rcache_get(sucg_rcache_t *rc, void *addr, size_t len,
                             sucg_rcache_entry_t **entry_p)
{
    uintptr_t start = (uintptr_t)addr & ~(uintptr_t)(SUCG_RCACHE_ALIGN - 1);
    uintptr_t end   = ((uintptr_t)addr + len + SUCG_RCACHE_ALIGN - 1) &
                      ~(uintptr_t)(SUCG_RCACHE_ALIGN - 1);
    sucg_rcache_entry_t *e;
    ucs_status_t status;

    for (e = rc->head.next; e != &rc->head; e = e->next) {
        if ((e->start <= start) && (end <= e->end)) {
            /* move to front: most recently used */
            e->prev->next = e->next;
            e->next->prev = e->prev;
            sucg_rcache_push_front(rc, e);
            e->refcount++;
            rc->hits++;
            *entry_p = e;
            return UCS_OK;
        }
    }

    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    e->start = start;
    e->end   = end;
    e->id    = rc->next_id++;
    status   = rc->ops->reg(rc->arg, e);
    if (status != UCS_OK) {
        free(e);
        return status;
    }
    rc->misses++;
    e->refcount = 1;

    /* Too big or caching disabled: a private registration, dropped at put */
    if ((rc->max_entries == 0) || (end - start > rc->max_bytes)) {
        e->cached = 0;
        *entry_p  = e;
        return UCS_OK;
    }

    sucg_rcache_make_room(rc, end - start);
    sucg_rcache_push_front(rc, e);
    rc->nentries++;
    rc->nbytes += end - start;
    *entry_p    = e;
    return UCS_OK;
}

void sucg_rcache_put(sucg_rcache_t *rc, sucg_rcache_entry_t *e)
{
    if (--e->refcount > 0) {
        return;
    }
    if (!e->cached) {
        sucg_rcache_destroy_entry(rc, e);
        return;
    }
    /* over the bound because everything was referenced: shrink now */
    if ((rc->nentries > rc->max_entries) || (rc->nbytes > rc->max_bytes)) {
        sucg_rcache_make_room(rc, 0);
    }
}

void sucg_rcache_invalidate(sucg_rcache_t *rc, void *addr, size_t len)
{
    uintptr_t start = (uintptr_t)addr, end = start + len;
    sucg_rcache_entry_t *e, *next;

    for (e = rc->head.next; e != &rc->head; e = next) {
        next = e->next;
        if ((e->start < end) && (start < e->end)) {
            sucg_rcache_unlink(rc, e);
            if (e->refcount == 0) {
                sucg_rcache_destroy_entry(rc, e);
            } /* else destroyed by the last put, never found again */
        }
    }
}
