/*
 * tl/sucg: keeping sucg's registration cache true under MPI.
 *
 * sucg caches the registration of each receive buffer (zero-copy puts land
 * in it). An application that frees a buffer and gets the same addresses
 * back for other memory would otherwise be written through a registration
 * of pages it no longer owns. UCX's memory hooks (UCM) report every unmap
 * (munmap, mremap, shmdt, madvise, brk); the handler only queues the range,
 * because it runs inside the unmapping call, possibly on another thread,
 * where releasing a UCP registration could re-enter the allocator. The
 * queue is applied before each collective (ucc_tl_sucg_rcache_sync). A full
 * queue, or hooks that cannot be installed, drop the whole cache instead:
 * slower, never stale.
 */
#include "tl_sucg.h"
#include "utils/ucc_malloc.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <ucm/api/ucm.h>

#define UCC_TL_SUCG_UNMAPPED_MAX 256

struct ucc_tl_sucg_unmapped {
    pthread_spinlock_t lock;
    int                hooked;    /* the UCM handler is installed */
    int                overflow;  /* ranges were lost: drop everything */
    unsigned           count;
    struct {
        void  *addr;
        size_t len;
    } range[UCC_TL_SUCG_UNMAPPED_MAX];
};

static void ucc_tl_sucg_unmapped_cb(ucm_event_type_t type, ucm_event_t *event,
                                    void *arg)
{
    struct ucc_tl_sucg_unmapped *q = arg;

    pthread_spin_lock(&q->lock);
    if (q->count < UCC_TL_SUCG_UNMAPPED_MAX) {
        q->range[q->count].addr = event->vm_unmapped.address;
        q->range[q->count].len  = event->vm_unmapped.size;
        ++q->count;
    } else {
        q->overflow = 1;
    }
    pthread_spin_unlock(&q->lock);
}

ucc_status_t ucc_tl_sucg_rcache_init(ucc_tl_sucg_context_t *ctx)
{
    struct ucc_tl_sucg_unmapped *q;
    ucs_status_t status;

    q = ucc_calloc(1, sizeof(*q), "tl_sucg_unmapped");
    if (q == NULL) {
        return UCC_ERR_NO_MEMORY;
    }
    pthread_spin_init(&q->lock, PTHREAD_PROCESS_PRIVATE);
    status = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 0,
                                   ucc_tl_sucg_unmapped_cb, q);
    if (status == UCS_OK) {
        q->hooked = 1;
    } else {
        tl_warn(ctx->super.super.lib, "UCX memory hooks unavailable (%s): "
                "receive buffers are registered for each collective",
                ucs_status_string(status));
    }
    ctx->unmapped = q;
    return UCC_OK;
}

void ucc_tl_sucg_rcache_cleanup(ucc_tl_sucg_context_t *ctx)
{
    struct ucc_tl_sucg_unmapped *q = ctx->unmapped;

    if (q == NULL) {
        return;
    }
    if (q->hooked) {
        ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED,
                                ucc_tl_sucg_unmapped_cb, q);
    }
    pthread_spin_destroy(&q->lock);
    ucc_free(q);
    ctx->unmapped = NULL;
}

void ucc_tl_sucg_rcache_sync(ucc_tl_sucg_context_t *ctx)
{
    struct ucc_tl_sucg_unmapped *q = ctx->unmapped;
    struct { void *addr; size_t len; } range[UCC_TL_SUCG_UNMAPPED_MAX];
    unsigned count, i;
    int drop_all;

    /* the common case, without the lock: the unmaps that matter were made
     * by this thread before it started the collective, or by another one
     * that synchronized with it */
    if ((__atomic_load_n(&q->count, __ATOMIC_ACQUIRE) == 0) &&
        !__atomic_load_n(&q->overflow, __ATOMIC_ACQUIRE) && q->hooked) {
        return;
    }
    /* copied out first: releasing a registration may unmap memory, which
     * calls the handler, which takes the lock */
    pthread_spin_lock(&q->lock);
    count    = q->count;
    drop_all = q->overflow || !q->hooked;
    memcpy(range, q->range, count * sizeof(range[0]));
    q->count    = 0;
    q->overflow = 0;
    pthread_spin_unlock(&q->lock);
    if (drop_all) {
        sucg_mem_invalidate(ctx->sucg, NULL, SIZE_MAX);
        return;
    }
    for (i = 0; i < count; ++i) {
        sucg_mem_invalidate(ctx->sucg, range[i].addr, range[i].len);
    }
}
