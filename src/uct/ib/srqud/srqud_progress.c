/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_ep_rx.h"
#include "srqud_back_ack.h"
#include "srqud_progress.h"
#include "srqud_dev.h"
#include "srqud_ep.h"
#include "srqud_proto.h"
#include "srqud_rel.h"
#include "srqud_rx.h"
#include "srqud_rx_chain.h"
#include "srqud_tx.h"
#include "srqud_watchdog.h"

#include <ucs/debug/log.h>
#include <string.h>
#include <sys/timerfd.h>
#include <errno.h>
#include <unistd.h>


/* The async rescue timer's period, in ticks (100 ms by default, the
 * period of UCX's ud's async timer) */
#define UCT_SRQUD_ASYNC_RESCUE_TICKS 10

/* The shortest first look again at an expiry that found the lock taken */
#define UCT_SRQUD_WD_RETRY_MIN       ucs_time_from_usec(100)


static void uct_srqud_progress_rx_one(uct_srqud_iface_t *iface,
                                      const struct ibv_wc *wc)
{
    uct_srqud_recv_desc_t *desc = (void*)(uintptr_t)wc->wr_id;
    uct_srqud_neth_t *neth;
    size_t payload_len;
    ucs_status_t status;

    if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
        if (wc->status != IBV_WC_WR_FLUSH_ERR) {
            ++iface->stats.rx_errors;
            ucs_error("%s: receive completion error: %s", iface->md->name,
                      ibv_wc_status_str(wc->status));
        }
        goto out_put;
    }

    neth   = uct_srqud_rx_neth(iface, desc);
    status = uct_srqud_neth_check(neth, wc->byte_len, UCT_AM_ID_MAX,
                                  &payload_len);
    if (ucs_unlikely(status != UCS_OK)) {
        ++iface->stats.rx_dropped_malformed;
        ucs_debug("%s: dropped a malformed packet of %u bytes from qp 0x%x: %s",
                  iface->md->name, wc->byte_len, wc->src_qp,
                  ucs_status_string(status));
        goto out_put;
    }

    ++iface->stats.rx_packets;
    uct_srqud_ep_rx_packet(iface, desc, wc, neth, payload_len);
    return;

out_put:
    uct_srqud_rx_desc_put(iface, desc);
}


/* What the async timer accepted, in arrival order, before anything newer;
 * at most RX_MAX_POLL per call, as packets from the CQ, so that one
 * progress call costs the same however long the user was away */
static unsigned uct_srqud_progress_async_rx(uct_srqud_iface_t *iface)
{
    uct_srqud_recv_desc_t *desc;
    unsigned count = 0;

    while (!ucs_queue_is_empty(&iface->async.rx_q) &&
           (count < iface->config.rx_max_poll)) {
        desc = ucs_queue_pull_elem_non_empty(&iface->async.rx_q,
                                             uct_srqud_recv_desc_t, queue);
        --iface->async.queued;
        if (ucs_unlikely((desc->ep == NULL) &&
                         (uct_srqud_rx_neth(iface, desc)->flags &
                          UCT_SRQUD_PACKET_FLAG_MORE))) {
            count += uct_srqud_rx_chain_deliver_queued(iface, desc);
        } else if (desc->ep == NULL) {
            uct_srqud_rx_deliver_am(iface, desc, desc->payload_len);
        } else {
            uct_srqud_ep_rx_active(iface, desc->ep,
                                   uct_srqud_rx_neth(iface, desc),
                                   uct_srqud_rx_payload(iface, desc),
                                   desc->payload_len);
            uct_srqud_rx_desc_put(iface, desc);
        }
        ++count;
    }
    return count;
}


static unsigned uct_srqud_progress_rx(uct_srqud_iface_t *iface)
{
    struct ibv_wc wcs[UCT_SRQUD_STASH_MAX + UCT_SRQUD_RX_POLL_MAX];
    unsigned i, count;

    if (ucs_unlikely(!ucs_queue_is_empty(&iface->async.rx_q)) &&
        !iface->async.active) {
        return uct_srqud_progress_async_rx(iface);
    }

    count = uct_srqud_rx_poll(iface, wcs, ucs_static_array_size(wcs));
    for (i = 0; i < count; ++i) {
        uct_srqud_progress_rx_one(iface, &wcs[i]);
    }
    uct_srqud_rx_refill(iface);
    return count;
}


static UCS_F_ALWAYS_INLINE unsigned
uct_srqud_progress_tx(uct_srqud_iface_t *iface)
{
    unsigned count = uct_srqud_tx_poll(iface);

    if (ucs_unlikely(iface->tx.flushed)) {
        uct_srqud_ep_resend_flushed(iface);
    }

    /* pending requests call the user: not from the async timer */
    if ((count > 0) && !iface->async.active) {
        uct_srqud_ep_pending_progress(iface);
    }
    return count;
}


static UCS_F_ALWAYS_INLINE unsigned
uct_srqud_progress_locked(uct_srqud_iface_t *iface, ucs_time_t now)
{
    unsigned count;

    /* what the user batched since the last call leaves before anything
     * else is looked at; a send before this call counts as gone (the
     * next send into the queue goes at once, TX_BATCH_AFTER counts anew) */
    uct_srqud_tx_ring(iface);
    iface->tx.recent = 0;

    count = uct_srqud_progress_rx(iface) +
            uct_srqud_progress_tx(iface);

    /* acks that came back while the async thread ran */
    if (ucs_unlikely(iface->async.back_due) && !iface->async.active) {
        uct_srqud_back_ack_progress(iface);
    }

    /* the protocols (zero-copy, copy-path RMA) complete user operations
     * in the user's progress; the async thread runs what calls nobody */
    if (uct_srqud_proto_pending(iface)) {
        count += iface->proto->progress(iface, now, iface->async.active);
    }

    /* groups scheduled since the last dispatch (a fence released, a
     * window reopened by a queued acknowledgement): the user's progress
     * sends them, whatever else happened in this call */
    if (!iface->async.active &&
        ucs_unlikely(!ucs_arbiter_is_empty(&iface->tx.arbiter))) {
        uct_srqud_ep_pending_progress(iface);
    }

    /* owed acks held back for a reply to carry: looked at when the
     * first of them falls due, not in every call */
    if (!ucs_list_is_empty(&iface->rx.ack_list) &&
        (now >= iface->rx.ack_due)) {
        uct_srqud_ep_acks_send(iface, now);
    }

    if (!ucs_list_is_empty(&iface->tx.active_list) &&
        (now >= iface->tx.next_timer)) {
        uct_srqud_ep_timers_check(iface, now);
        iface->tx.next_timer      = now + iface->config.rto_min / 4;
        /* a failed QP shows in the completions of unsignaled sends too:
         * looked for at the next poll */
        iface->tx.poll_unsignaled = 1;
        if (!iface->async.active) {
            uct_srqud_ep_pending_progress(iface);
        }
    }

    /* what this call sent (acknowledgements, resends, pending requests)
     * leaves with one doorbell, before the call returns */
    uct_srqud_tx_ring(iface);
    return count;
}


/* The watchdog expires two ticks from @a now, then every tick, until the
 * user's progress (once a tick) or a held send batch sets it again */
static void uct_srqud_progress_watchdog_set(uct_srqud_iface_t *iface,
                                            ucs_time_t now)
{
    uct_srqud_watchdog_set(iface, 2 * iface->config.async_tick, now);
    iface->async.wd_hold = 0;
}


/* Nothing but the receive CQ can have work for this call: no sends of the
 * user's since its last progress (a step to end, a batch to ring), nothing
 * the async thread left (queued packets, acks to send back, a run that
 * freed resources), no stashed completions, no send completion to wait
 * for, no protocol or pending request to run */
static UCS_F_ALWAYS_INLINE int
uct_srqud_progress_quiet(uct_srqud_iface_t *iface)
{
    return ((iface->tx.user_sends | iface->tx.batch_count | iface->tx.recent |
             iface->rx.stash_count | (unsigned)iface->async.ran |
             (unsigned)iface->async.back_due |
             (unsigned)iface->async.wd_hold |
             (unsigned)iface->tx.flushed) == 0) &&
           uct_srqud_tx_cq_idle(iface) &&
           ucs_queue_is_empty(&iface->async.rx_q) &&
           !uct_srqud_proto_pending(iface) &&
           ucs_arbiter_is_empty(&iface->tx.arbiter);
}


/* Everything, under the lock: receive completions a quiet call found wait
 * in the stash, ahead of the CQ's */
static unsigned uct_srqud_progress_full(uct_srqud_iface_t *iface)
{
    ucs_time_t now;
    unsigned count;

    /* read the clock under the lock: the async timer may have stamped
     * endpoints while this thread waited for it */
    now = ucs_get_time();
    /* Quiet calls leave last_progress and the watchdog where the last full
     * call set them: they follow only calls that came close together (a
     * sixteenth of a tick apart), or a user progressing once a millisecond
     * would seem away to the async thread and wake it */
    iface->async.quiet_left    =
            (uct_srqud_time_since(now, iface->async.last_progress) <
             iface->config.async_tick / 16) ? iface->config.quiet_polls : 0;
    iface->async.last_progress = now;
    iface->async.ran           = 0;

    /* The user is here: the watchdog moves two ticks ahead, once a tick
     * (one system call a tick instead of a wakeup of the async thread),
     * and at once if a send batch had set it sooner (this call rings the
     * batch: the async thread need not wake for it) */
    if ((iface->async.wd_fd >= 0) &&
        (iface->async.wd_hold ||
         (uct_srqud_time_since(now, iface->async.wd_armed) >=
          iface->config.async_tick))) {
        uct_srqud_progress_watchdog_set(iface, now);
    }

    /* what it sends (pending requests, acknowledgements) leaves before it
     * returns: no batch timer for those */
    uct_srqud_tx_step_end(iface);
    iface->async.user_progress = 1;
    count = uct_srqud_progress_locked(iface, now);
    iface->async.user_progress = 0;
    return count;
}


/*
 * The user's progress. A rank waiting for a message calls it over and over
 * (and where ranks share cores yields in between), so a call that finds
 * nothing should cost little more than a look at the receive CQ, as
 * rc_verbs' does: up to QUIET_POLLS calls in a row only look at it while
 * nothing else is outstanding and the calls come close together, without
 * reading the clock and running the timers (under an emulator the clock
 * alone costs about as much as the look).
 */
unsigned uct_srqud_progress(uct_iface_h tl_iface)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    unsigned count;

    uct_srqud_enter(iface);
    if ((iface->async.quiet_left > 0) && uct_srqud_progress_quiet(iface)) {
        --iface->async.quiet_left;
        /* the stash was empty: the full call takes these first */
        iface->rx.stash_count = uct_srqud_rx_poll_cq(
                iface, iface->rx.stash,
                ucs_min(iface->config.rx_max_poll, UCT_SRQUD_STASH_MAX));
        if (ucs_likely(iface->rx.stash_count == 0)) {
            ++iface->stats.progress_quiet;
            uct_srqud_leave(iface);
            return 0;
        }
        ++iface->stats.progress_early;
    }

    count = uct_srqud_progress_full(iface);
    uct_srqud_leave(iface);
    return count;
}


/* A completion arrived on a CQ the user armed before sleeping: wake it */
static void uct_srqud_progress_channel_event(int fd,
                                             ucs_event_set_types_t events,
                                             void *arg)
{
    uct_srqud_iface_t *iface = arg;

    uct_srqud_dev_cq_events_drain(iface);
    iface->async.event_cb(iface->async.event_arg, 0);
}


/*
 * The async tick: UCX's async thread, under the worker's async lock.
 * While the user progresses the interface it has nothing to do. Otherwise
 * it receives (accepting and acknowledging in order, queueing what must
 * reach the user), sends owed acknowledgements and retransmits.
 */
static void uct_srqud_progress_async_tick(uct_srqud_iface_t *iface,
                                          ucs_time_t now)
{
    unsigned count = 0, n;
    unsigned long quiet;

    ++iface->stats.async_ticks;

    /* sends the user batched and left there to compute: they leave after
     * TX_HOLD (the watchdog was set for them), or within two ticks of its
     * last progress without a watchdog (holding the lock, this thread
     * does not run inside one of the user's calls) */
    if (iface->tx.batch_count > 0) {
        ++iface->stats.tx_hold_posted;
        uct_srqud_tx_doorbell(iface);
    }
    iface->async.wd_hold = 0;   /* the next batch sets it again */

    if (uct_srqud_time_since(now, iface->async.last_progress) <
        iface->config.async_tick) {
        return;
    }

    /* quiet calls leave last_progress behind: any since the last tick mean
     * the user is here, its next full call moves the watchdog on */
    quiet = iface->stats.progress_quiet + iface->stats.progress_early;
    if (quiet != iface->async.quiet_seen) {
        iface->async.quiet_seen = quiet;
        return;
    }

    iface->async.active    = 1;
    iface->async.wake_user = 0;
    iface->async.ran       = 1;
    do {
        n      = uct_srqud_progress_locked(iface, now);
        count += n;
    } while ((n > 0) && (count < iface->config.rx_cq_len));
    iface->async.active = 0;

    if (count > 0) {
        ++iface->stats.async_progress;
    }

    /* Packets queued for the user's handlers, or a peer that timed out: a
     * user asleep in its event loop (UCP's wakeup) must come and look. A
     * completion already raised an event on the CQ channel; a timeout
     * raises none. */
    if (iface->async.wake_user && (iface->async.event_cb != NULL)) {
        iface->async.event_cb(iface->async.event_arg, 0);
    }
}


/* The async handler, for all of its callers:
 * - the watchdog's expiry: the user has not progressed for one to two
 *   ticks (or has just come back); it expires every tick for as long as
 *   the user stays away, and the user's progress moves it on. A periodic
 *   timer woke the async thread every tick even while the user polled:
 *   under TCG each wakeup cost a ping-pong as much as a few round trips
 *   (NEWS, issue 10);
 * - the rescue timer, every RESCUE_TICKS ticks (as UCX's ud's async timer,
 *   100 ms): a watchdog stopped by a missed expiry is read here, so it
 *   expires again. Without it a user that stopped progressing just after
 *   such an expiry (a UCT user sending without progress) had no async
 *   progress;
 * - without an async thread (poll, signal: a wakeup costs no context
 *   switch), a periodic UCX timer every tick, and no watchdog. */
static void uct_srqud_progress_async_timer(int id,
                                           ucs_event_set_types_t events,
                                           void *arg)
{
    uct_srqud_iface_t *iface = arg;
    uint64_t expired;

    /* reading lets the periodic timerfd expire again (and edge-triggered,
     * the next expiry is the next event) */
    if ((iface->async.wd_fd >= 0) &&
        (read(iface->async.wd_fd, &expired, sizeof(expired)) < 0) &&
        (errno != EAGAIN)) {
        ucs_diag("%s: read(async watchdog) failed: %m", iface->md->name);
    }

    uct_srqud_progress_async_tick(iface, ucs_get_time());
}


/* The first look again at an expiry that found the user inside a call: a
 * quarter of TX_HOLD, a held batch's wait */
static ucs_time_t uct_srqud_progress_wd_retry_first(uct_srqud_iface_t *iface)
{
    return ucs_max(iface->config.tx_hold / 4, UCT_SRQUD_WD_RETRY_MIN);
}


/* The watchdog's expiry in UCX's thread spinlock mode, where UCX calls this
 * without the context, so without the lock. Through the context, an expiry
 * that found the lock taken (a streaming root is inside its doorbell's
 * system call most of the time) waited in UCX's missed queue for the user's
 * next UCP progress, and the unread timerfd expired no more: a root that
 * went computing after its stream held its last batch until its next MPI
 * call, or the rescue timer's 10 ticks. Here such an expiry sets the timer
 * to look again after a quarter of TX_HOLD, doubling up to a tick, unless
 * the user set it to expire sooner since: a stream wakes the thread a few
 * times, then once a tick, and a batch waits at most that long once the
 * user has left its call. */
static void uct_srqud_progress_watchdog_event(int fd,
                                              ucs_event_set_types_t events,
                                              void *arg)
{
    uct_srqud_iface_t *iface = arg;

    if (!uct_srqud_try_enter(iface)) {
        uct_srqud_watchdog_retry(iface);
        return;
    }
    iface->async.wd_retry = uct_srqud_progress_wd_retry_first(iface);
    uct_srqud_progress_async_timer(fd, events, iface);
    uct_srqud_leave(iface);
}


ucs_status_t uct_srqud_progress_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);

    *fd_p = iface->comp_channel->fd;
    return UCS_OK;
}




static ucs_status_t
uct_srqud_progress_event_arm_locked(uct_srqud_iface_t *iface, unsigned events)
{
    int ret;

    /* The user goes to sleep: what it batched must be on the wire, or
     * the answers it sleeps for are never sent */
    uct_srqud_tx_ring(iface);

    /* Consume the events already delivered on the channel */
    uct_srqud_dev_cq_events_drain(iface);

    if ((iface->rx.stash_count > 0) || (iface->tx.stash_count > 0) ||
        !ucs_queue_is_empty(&iface->async.rx_q)) {
        return UCS_ERR_BUSY;
    }

    /* zero-copy chunks complete on CQs without a channel, and the copy
     * path runs timers: keep polling while any is in progress */
    if (!iface->proto->idle(iface)) {
        return UCS_ERR_BUSY;
    }

    if (!ucs_arbiter_is_empty(&iface->tx.arbiter) &&
        uct_srqud_tx_user_resources(iface)) {
        return UCS_ERR_BUSY;
    }

    /* The user goes to sleep: acknowledgements held back for a reply to
     * carry go now. Unacknowledged packets of ours need no polling: an
     * acknowledgement arrives on the armed receive CQ, and the async timer
     * retransmits while the user sleeps. */
    if (!ucs_list_is_empty(&iface->rx.ack_list)) {
        uct_srqud_ep_acks_send(iface, UCS_TIME_INFINITY);
        /* a batch (TX_BATCH_IDLE, a busy queue) would hold them while the
         * user sleeps */
        uct_srqud_tx_ring(iface);
        if (!ucs_list_is_empty(&iface->rx.ack_list)) {
            return UCS_ERR_BUSY; /* no send resources for them yet */
        }
    }

    if (events & UCT_EVENT_RECV) {
        ret = uct_srqud_dev_cq_arm(iface, iface->recv_cq, iface->rx.stash,
                                   &iface->rx.stash_count);
        if (ret != 0) {
            return (ret > 0) ? UCS_ERR_BUSY : UCS_ERR_IO_ERROR;
        }
    }

    if ((events & UCT_EVENT_SEND_COMP) && (iface->tx.sn != iface->tx.comp_sn)) {
        ret = uct_srqud_dev_cq_arm(iface, iface->send_cq, iface->tx.stash,
                                   &iface->tx.stash_count);
        if (ret != 0) {
            return (ret > 0) ? UCS_ERR_BUSY : UCS_ERR_IO_ERROR;
        }
    }

    return UCS_OK;
}


ucs_status_t uct_srqud_progress_event_arm(uct_iface_h tl_iface,
                                          unsigned events)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    ucs_status_t status;

    uct_srqud_enter(iface);
    status = uct_srqud_progress_event_arm_locked(iface, events);
    uct_srqud_leave(iface);
    return status;
}


/* UCX's async thread calls @a cb when @a fd has an event; @a what names
 * the fd in the error */
static ucs_status_t
uct_srqud_progress_watch_fd(uct_srqud_iface_t *iface,
                            ucs_async_context_t *async,
                            ucs_async_mode_t mode, int fd,
                            ucs_event_set_types_t events,
                            ucs_async_event_cb_t cb, const char *what)
{
    ucs_status_t status;

    status = ucs_async_set_event_handler(mode, fd, events, cb, iface, async);
    if (status != UCS_OK) {
        ucs_error("%s: failed to watch the %s: %s", iface->md->name, what,
                  ucs_status_string(status));
    }
    return status;
}


/* The watchdog's timerfd, watched by UCX's async thread; on failure
 * nothing of it is left (wd_fd < 0) */
static ucs_status_t
uct_srqud_progress_watchdog_init(uct_srqud_iface_t *iface,
                                 ucs_async_context_t *async)
{
    ucs_async_context_t *context;
    ucs_async_event_cb_t cb;
    ucs_status_t status;
    int fd;

    fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) {
        ucs_error("%s: timerfd_create(async watchdog) failed: %m",
                  iface->md->name);
        return UCS_ERR_IO_ERROR;
    }

    /* in the spinlock mode srqud's handler takes the lock itself, called
     * without the context; the mutex mode (under valgrind) goes through
     * UCX's context */
    if (async->mode == UCS_ASYNC_MODE_THREAD_SPINLOCK) {
        context = NULL;
        cb      = uct_srqud_progress_watchdog_event;
    } else {
        context = async;
        cb      = uct_srqud_progress_async_timer;
    }
    status = uct_srqud_progress_watch_fd(iface, context, async->mode, fd,
                                         UCS_EVENT_SET_EVREAD |
                                         UCS_EVENT_SET_EDGE_TRIGGERED, cb,
                                         "async watchdog");
    if (status != UCS_OK) {
        close(fd);
        return status;
    }

    iface->async.wd_fd = fd;
    uct_srqud_progress_watchdog_set(iface, ucs_get_time());
    return UCS_OK;
}


ucs_status_t uct_srqud_progress_init(uct_srqud_iface_t *iface)
{
    ucs_async_context_t *async = iface->super.worker->async;
    ucs_time_t interval;
    ucs_status_t status;

    iface->async.timer_id  = -1;
    iface->async.wd_fd     = -1;
    iface->async.wd_armed  = 0;
    iface->async.wd_retry  = uct_srqud_progress_wd_retry_first(iface);
    iface->async.wd_busy   = 0;
    iface->async.wd_hold   = 0;
    iface->async.active    = 0;
    iface->async.wake_user = 0;
    iface->async.ran       = 0;
    iface->async.user_progress = 0;
    iface->async.back_due  = 0;
    iface->async.last_progress = 0;
    iface->async.quiet_left    = 0;
    iface->async.quiet_seen    = 0;

    /* Wakeups through the user's callback: UCX's async thread watches the
     * channel (its CQs are armed only by event_arm, when the user is about
     * to sleep, so a busy user pays nothing) */
    if (iface->async.event_cb != NULL) {
        status = uct_srqud_progress_watch_fd(iface, async, async->mode,
                                             iface->comp_channel->fd,
                                             UCS_EVENT_SET_EVREAD,
                                             uct_srqud_progress_channel_event,
                                             "completion channel");
        if (status != UCS_OK) {
            return status;
        }
    }

    /* With an async thread, a watchdog that the user's progress keeps
     * moving ahead: the thread wakes only once the user is away; the
     * timer is then only its rescue */
    interval = iface->config.async_tick;
    if ((async->mode == UCS_ASYNC_MODE_THREAD_SPINLOCK) ||
        (async->mode == UCS_ASYNC_MODE_THREAD_MUTEX)) {
        status = uct_srqud_progress_watchdog_init(iface, async);
        if (status != UCS_OK) {
            uct_srqud_progress_cleanup(iface);
            return status;
        }
        interval *= UCT_SRQUD_ASYNC_RESCUE_TICKS;
    }

    status = ucs_async_add_timer(async->mode, interval,
                                 uct_srqud_progress_async_timer, iface, async,
                                 &iface->async.timer_id);
    if (status != UCS_OK) {
        ucs_error("%s: failed to add the async progress timer: %s",
                  iface->md->name, ucs_status_string(status));
        uct_srqud_progress_cleanup(iface);
    }
    return status;
}


void uct_srqud_progress_cleanup(uct_srqud_iface_t *iface)
{
    if (iface->async.timer_id >= 0) {
        ucs_async_remove_handler(iface->async.timer_id, 1);
        iface->async.timer_id = -1;
    }
    if (iface->async.wd_fd >= 0) {
        ucs_async_remove_handler(iface->async.wd_fd, 1);
        close(iface->async.wd_fd);
        iface->async.wd_fd = -1;
    }
    if (iface->async.event_cb != NULL) {
        ucs_async_remove_handler(iface->comp_channel->fd, 1);
    }
}
