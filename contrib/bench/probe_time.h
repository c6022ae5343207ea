/*
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Timing helpers of the machine probes in contrib/bench (copy_speed,
 * cpu_pauses): programs without UCX or verbs, so no library to share.
 */
#ifndef SRQUD_BENCH_PROBE_TIME_H
#define SRQUD_BENCH_PROBE_TIME_H

#include <time.h>

static inline double probe_now_sec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* qsort's comparison of doubles */
static inline int probe_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

#endif
