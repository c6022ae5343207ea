/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The line srqud_rawexch and contrib/bench's uct_exch print for each call
 * and size, the format contrib/bench/mpi_calls.c's rows share:
 *
 *   CALL SIZE avg_us p50_us p99_us max_us slow10x over1ms
 *
 * over every rank's timed calls (slow10x: above 10x the median).
 */

#ifndef SRQUD_CALLS_REPORT_H_
#define SRQUD_CALLS_REPORT_H_

#include <stdio.h>
#include <stdlib.h>

static inline int calls_report_cmp(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

/* Sorts the @a n samples (us) and prints their line */
static inline void calls_report_line(const char *call, size_t size,
                                     double *all, size_t n)
{
    double sum = 0;
    int    slow = 0, over1ms = 0;
    size_t i;

    qsort(all, n, sizeof(*all), calls_report_cmp);
    for (i = 0; i < n; ++i) {
        sum     += all[i];
        slow    += all[i] > 10 * all[n / 2];
        over1ms += all[i] > 1000;
    }
    printf("%s %zu %.2f %.2f %.2f %.2f %d %d\n", call, size, sum / n,
           all[n / 2], all[(size_t)(0.99 * (n - 1))], all[n - 1], slow,
           over1ms);
}

/* The lines of every call and size: @a samples holds, per call (@a calls,
 * named by @a names) and then per size, @a n samples */
static inline void calls_report(const char *const *names, const int *calls,
                                int ncalls, const size_t *sizes, int nsizes,
                                double *samples, size_t n)
{
    int c, s, k = 0;

    for (c = 0; c < ncalls; ++c) {
        for (s = 0; s < nsizes; ++s, ++k) {
            calls_report_line(names[calls[c]], sizes[s],
                              samples + (size_t)k * n, n);
        }
    }
    fflush(stdout);
}

#endif
