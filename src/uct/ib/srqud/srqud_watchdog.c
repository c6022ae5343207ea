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


/* The watchdog expires after @a first, then every tick. Setting it clears
 * the expiry count: the next expiry is a new edge. */
static void uct_srqud_watchdog_arm(uct_srqud_iface_t *iface, ucs_time_t first)
{
    struct itimerspec its;

    uct_srqud_watchdog_timespec(&its.it_value, first);
    uct_srqud_watchdog_timespec(&its.it_interval, iface->config.async_tick);
    if (timerfd_settime(iface->async.wd_fd, 0, &its, NULL) != 0) {
        ucs_diag("%s: timerfd_settime(async watchdog) failed: %m",
                 iface->md->name);
    }
}


/* A periodic timerfd expires again only once read: in the thread mutex
 * mode, an expiry the async thread found the lock taken for (UCX queues it
 * for ucs_async_check_miss, which only UCP's progress calls) leaves it
 * stopped until it is set again, or the rescue timer reads it
 * (srqud_progress.c). In the spinlock mode srqud's handler sets it again
 * itself (uct_srqud_watchdog_retry). */
void uct_srqud_watchdog_set(uct_srqud_iface_t *iface, ucs_time_t first,
                            ucs_time_t now)
{
    if (iface->async.wd_fd < 0) {
        return;
    }

    uct_srqud_watchdog_arm(iface, first);
    ++iface->stats.timer_sets;
    iface->async.wd_armed = now;
}


/* @a a is no later than @a b */
static int uct_srqud_watchdog_not_later(const struct timespec *a,
                                        const struct timespec *b)
{
    return (a->tv_sec < b->tv_sec) ||
           ((a->tv_sec == b->tv_sec) && (a->tv_nsec <= b->tv_nsec));
}


void uct_srqud_watchdog_retry(uct_srqud_iface_t *iface)
{
    struct itimerspec cur;
    struct timespec next;
    ucs_time_t wait;

    /* not capped at TX_HOLD while a batch is held: a stream of sends then
     * woke the thread once a TX_HOLD, and Open MPI's 4-rank Bcast on 2
     * cores took 1.3-1.8x the time (docs/notes/mpi-small-messages.md) */
    wait = iface->async.wd_retry;
    ++iface->async.wd_busy;
    iface->async.wd_retry = ucs_min(2 * wait, iface->config.async_tick);

    /* the user may have set it since the expiry (a new batch's TX_HOLD):
     * a nearer expiry stands. Reading it also restarts a periodic timer
     * that expired unread, so the next expiry is a new edge either way. */
    uct_srqud_watchdog_timespec(&next, wait);
    if ((timerfd_gettime(iface->async.wd_fd, &cur) == 0) &&
        ((cur.it_value.tv_sec != 0) || (cur.it_value.tv_nsec != 0)) &&
        uct_srqud_watchdog_not_later(&cur.it_value, &next)) {
        return;
    }

    uct_srqud_watchdog_arm(iface, wait);
}
