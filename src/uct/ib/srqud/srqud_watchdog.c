/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_watchdog.h"

#include <ucs/debug/log.h>
#include <sys/timerfd.h>


static void uct_srqud_watchdog_timespec(struct timespec *ts, ucs_time_t t)
{
    uint64_t nsec = ucs_time_to_usec(t) * 1000ull;

    ts->tv_sec  = nsec / 1000000000ull;
    ts->tv_nsec = nsec % 1000000000ull;
}


/* A periodic timerfd expires again only once read: an expiry the async
 * thread found the lock taken for (UCX queues it for ucs_async_check_miss,
 * which only UCP's progress calls) leaves it stopped until it is set again,
 * or the rescue timer reads it (srqud_progress.c) */
void uct_srqud_watchdog_set(uct_srqud_iface_t *iface, ucs_time_t first,
                            ucs_time_t now)
{
    struct itimerspec its;

    if (iface->async.wd_fd < 0) {
        return;
    }

    uct_srqud_watchdog_timespec(&its.it_value, first);
    uct_srqud_watchdog_timespec(&its.it_interval, iface->config.async_tick);
    if (timerfd_settime(iface->async.wd_fd, 0, &its, NULL) != 0) {
        ucs_diag("%s: timerfd_settime(async watchdog) failed: %m",
                 iface->md->name);
    }
    ++iface->stats.timer_sets;
    iface->async.wd_armed = now;
}
