/*
 * Registration cache for user receive buffers.
 *
 * A collective on a buffer already registered (the same pages, or a
 * sub-range of a registered region) takes the cached registration. Bounded
 * by entries and bytes; the least recently used unreferenced entry goes
 * first. Registration is done through callbacks so the LRU logic is unit
 * tested without UCP.
 *
 * Limitation (documented in README): without memory hooks, the cache cannot
 * see free()/munmap(). If a buffer is freed and the allocator returns the
 * same virtual addresses for new memory, the cached registration may pin or
 * describe the old pages (on RDMA devices: data lands in the old physical
 * pages). Users that free collective buffers must call sucg_mem_invalidate()
 * first, or set SUCG_RCACHE_MAX_ENTRIES=0 (register every call). With the tcp
 * and shared-memory transports registrations address virtual memory, so
 * reuse is harmless there.
 */
#ifndef SUCG_RCACHE_H_
#define SUCG_RCACHE_H_

#include <stddef.h>
#include <stdint.h>
#include <ucs/type/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sucg_rcache_entry sucg_rcache_entry_t;

struct sucg_rcache_entry {
    sucg_rcache_entry_t *prev, *next;  /* LRU list, head = most recent */
    uintptr_t            start, end;   /* registered range, page aligned */
    uint64_t             id;           /* unique per registration, never 0 */
    unsigned             refcount;
    int                  cached;       /* in the list (else freed at put) */
    void                *memh;         /* ucp_mem_h */
    void                *rkey_buf;     /* packed rkey */
    size_t               rkey_len;
};

typedef struct sucg_rcache_ops {
    ucs_status_t (*reg)(void *arg, sucg_rcache_entry_t *e);   /* fill memh.. */
    void         (*dereg)(void *arg, sucg_rcache_entry_t *e);
} sucg_rcache_ops_t;

typedef struct sucg_rcache {
    sucg_rcache_entry_t      head;     /* sentinel */
    const sucg_rcache_ops_t *ops;
    void                    *arg;
    unsigned                 max_entries;
    size_t                   max_bytes;
    unsigned                 nentries;
    size_t                   nbytes;
    uint64_t                 next_id;
    uint64_t                 hits, misses, evictions;
} sucg_rcache_t;

#define SUCG_RCACHE_ALIGN 4096

void         sucg_rcache_init(sucg_rcache_t *rc, const sucg_rcache_ops_t *ops,
                              void *arg, unsigned max_entries, size_t max_bytes);
void         sucg_rcache_cleanup(sucg_rcache_t *rc);
/* Registered region covering [addr, addr+len), referenced until put */
ucs_status_t sucg_rcache_get(sucg_rcache_t *rc, void *addr, size_t len,
                             sucg_rcache_entry_t **entry_p);
void         sucg_rcache_put(sucg_rcache_t *rc, sucg_rcache_entry_t *e);
/* Drop entries overlapping the range (deferred while referenced) */
void         sucg_rcache_invalidate(sucg_rcache_t *rc, void *addr, size_t len);

#ifdef __cplusplus
}
#endif

#endif
