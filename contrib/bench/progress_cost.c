/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * progress_cost: what one progress call that finds nothing costs on a
 * transport, the call a rank waiting for a message makes over and over
 * (where ranks share the cores, time taken from the ranks that work):
 *
 *   progress_cost -t srqud -d rxe0:1 -n 400000 -r 5
 *
 * One interface, no endpoints; R timed loops of N calls each after a
 * warm-up of N/10. Prints one line per loop:
 *
 *   TL ns_per_call quiet_calls early_calls
 *
 * with srqud's counters progress_quiet and progress_early over the loop
 * (0 for other transports). A call that reports work is an error (exit 1):
 * nothing was sent to the interface.
 */

#include "bench_uct.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>


static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}


static void usage(FILE *f)
{
    fprintf(f, "usage: progress_cost -t TL -d DEV [-n CALLS] [-r LOOPS]\n");
}


/* @a n calls; exit(1) if any reported work */
static void progress_loop(const char *tl, uct_iface_h iface, unsigned long n)
{
    unsigned long i;
    unsigned count = 0;

    for (i = 0; i < n; ++i) {
        count += uct_iface_progress(iface);
    }
    if (count != 0) {
        fprintf(stderr, "progress_cost: %s: an idle interface reported work\n",
                tl);
        exit(1);
    }
}


int main(int argc, char **argv)
{
    const char *tl = NULL, *dev = NULL;
    unsigned long calls = 400000, loops = 5, r;
    uct_srqud_iface_stats_t before, after;
    bench_iface_t ifc;
    bench_ctx_t ctx;
    double t0, t1;
    int c;

    while ((c = getopt(argc, argv, "t:d:n:r:h")) != -1) {
        switch (c) {
        case 't': tl = optarg; break;
        case 'd': dev = optarg; break;
        case 'n': calls = strtoul(optarg, NULL, 0); break;
        case 'r': loops = strtoul(optarg, NULL, 0); break;
        case 'h': usage(stdout); return 0;
        default:  usage(stderr); return 2;
        }
    }
    if ((tl == NULL) || (dev == NULL) || (calls == 0) || (loops == 0)) {
        usage(stderr);
        return 2;
    }

    bench_ctx_open(&ctx, tl, dev);
    bench_iface_open(&ctx, &ifc);
    progress_loop(tl, ifc.iface, calls / 10);

    for (r = 0; r < loops; ++r) {
        before = bench_srqud_stats(&ctx, ifc.iface);
        t0     = now_ns();
        progress_loop(tl, ifc.iface, calls);
        t1    = now_ns();
        after = bench_srqud_stats(&ctx, ifc.iface);
        printf("%s %.1f %lu %lu\n", tl, (t1 - t0) / calls,
               after.progress_quiet - before.progress_quiet,
               after.progress_early - before.progress_early);
        fflush(stdout);
    }
    return 0;
}
