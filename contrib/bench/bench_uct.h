/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Helpers of the UCT-level benchmarks (flowctl, mem_peers): open the md
 * and interfaces of a transport on a device by name, read srqud's counters.
 */

#ifndef SRQUD_BENCH_UCT_H_
#define SRQUD_BENCH_UCT_H_

#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include "../../src/uct/ib/srqud/srqud_stats.h"

#include <stdint.h>

/* An async context, a worker and the md that serves TL on DEV */
typedef struct {
    const char          *tl;
    const char          *dev;    /* e.g. rxe0:1 */
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_md_h            md;
} bench_ctx_t;

typedef struct {
    uct_iface_h         iface;
    uct_iface_attr_t    attr;
    uint8_t             dev_addr[64], iface_addr[64];
} bench_iface_t;

/* exit(1) with a message unless UCS_OK */
void bench_check(ucs_status_t status, const char *what);

/* DEV: DEV:PORT for an IB device (its md is named after it), or any
 * other device of TL (lo for tcp) */
void bench_ctx_open(bench_ctx_t *ctx, const char *tl, const char *dev);

/* another async context and worker on the md of @a owner: a thread's
 * own worker, as UCP gives each thread of an MPI+threads code */
void bench_ctx_worker(bench_ctx_t *ctx, const bench_ctx_t *owner);

/* one more interface of the context's transport, progress enabled */
void bench_iface_open(bench_ctx_t *ctx, bench_iface_t *iface);

/* srqud's counters of an interface, zeros for other transports */
uct_srqud_iface_stats_t bench_srqud_stats(const bench_ctx_t *ctx,
                                          uct_iface_h iface);

double bench_now_ms(void);

/* The process's memory, kB: VmRSS, VmPin (what the device registered), and
 * the verbs queues the device maps into it (/dev/infiniband/uverbs* in
 * smaps: on Soft-RoCE the kernel allocates them whole, while RSS counts
 * only the pages touched), all and resident */
typedef struct {
    unsigned long rss_kb;
    unsigned long pin_kb;
    unsigned long qmap_kb;
    unsigned long qrss_kb;
    /* Rss of every other mapping, from the page tables: VmRSS counts a
     * device queue's pages (as file pages) only once they are mapped in,
     * which Soft-RoCE's queues are some time after their creation, so
     * VmRSS + qmap_kb counts them twice or once depending on when it is
     * read; rss_other_kb + qmap_kb counts them once */
    unsigned long rss_other_kb;
} bench_mem_t;

bench_mem_t bench_mem_read(void);

/* Every PREFIX_UCX_X=v in the environment also becomes UCX_X=v: settings
 * for one role of the benchmark only (the receiver's, the peers') */
void bench_apply_env(const char *prefix);

#endif
