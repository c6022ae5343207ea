/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#include "srqud_watermark.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <math.h>


unsigned uct_srqud_watermark(double bw_mbs, size_t min_packet,
                             double t_wakeup_ms, unsigned srq_size)
{
    double packets;
    unsigned max = srq_size / 2;

    if ((min_packet == 0) || !(bw_mbs > 0) || !(t_wakeup_ms > 0)) {
        return (max > 0) ? 1 : 0;
    }

    packets = bw_mbs * 1e3 / (double)min_packet * t_wakeup_ms;
    if (packets < 1) {
        return 1;
    }
    if (packets > max) {
        return max;
    }
    return (unsigned)ceil(packets);
}


#define UCT_SRQUD_WAKEUP_ROUNDS 15

typedef struct {
    int ping, pong;
} uct_srqud_wakeup_fds_t;


static void *uct_srqud_watermark_wakeup_thread(void *arg)
{
    uct_srqud_wakeup_fds_t *fds = arg;
    uint64_t v;
    int i;

    for (i = 0; i < UCT_SRQUD_WAKEUP_ROUNDS; ++i) {
        if (read(fds->ping, &v, sizeof(v)) != sizeof(v)) {
            break;
        }
        if (write(fds->pong, &v, sizeof(v)) != sizeof(v)) {
            break;
        }
    }
    return NULL;
}


static int uct_srqud_watermark_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}


static double uct_srqud_wakeup_value = -1;

static void uct_srqud_watermark_measure_once(void)
{
    double rtt[UCT_SRQUD_WAKEUP_ROUNDS];
    uct_srqud_wakeup_fds_t fds;
    struct timespec t0, t1;
    pthread_t thread;
    uint64_t v = 1;
    int i, n = 0;

    fds.ping = eventfd(0, 0);
    fds.pong = eventfd(0, 0);
    if ((fds.ping < 0) || (fds.pong < 0) ||
        (pthread_create(&thread, NULL, uct_srqud_watermark_wakeup_thread, &fds) != 0)) {
        goto out;
    }

    for (i = 0; i < UCT_SRQUD_WAKEUP_ROUNDS; ++i) {
        /* let the thread go back to sleep first */
        usleep(200);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if ((write(fds.ping, &v, sizeof(v)) != sizeof(v)) ||
            (read(fds.pong, &v, sizeof(v)) != sizeof(v))) {
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        rtt[n++] = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    }
    if (n < UCT_SRQUD_WAKEUP_ROUNDS) {
        /* unblock the thread if we stopped early */
        for (i = n; i < UCT_SRQUD_WAKEUP_ROUNDS; ++i) {
            (void)!write(fds.ping, &v, sizeof(v));
        }
    }
    pthread_join(thread, NULL);

    if (n > 0) {
        qsort(rtt, n, sizeof(rtt[0]), uct_srqud_watermark_cmp_double);
        uct_srqud_wakeup_value = rtt[n / 2] / 2;
    }

out:
    if (fds.ping >= 0) {
        close(fds.ping);
    }
    if (fds.pong >= 0) {
        close(fds.pong);
    }
    if (uct_srqud_wakeup_value <= 0) {
        uct_srqud_wakeup_value = 50e-6; /* a typical Linux wakeup */
    }
}


double uct_srqud_watermark_measure_wakeup(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, uct_srqud_watermark_measure_once);
    return uct_srqud_wakeup_value;
}
