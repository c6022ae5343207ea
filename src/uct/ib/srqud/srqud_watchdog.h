/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The async watchdog: one timerfd per interface, watched by UCX's async
 * thread (srqud_progress.c creates it and runs what its expiries call
 * for). It says when the async thread must next look at the interface:
 * two ticks after the user's last progress (the user is away), or sooner
 * when a send waits in a batch for a doorbell (srqud_tx.c).
 */

#ifndef UCT_SRQUD_WATCHDOG_H_
#define UCT_SRQUD_WATCHDOG_H_

#include "srqud_iface.h"


/* The watchdog expires @a first from @a now, then every ASYNC_TICK, until
 * it is set again. No-op without one (async modes without a thread). */
void uct_srqud_watchdog_set(uct_srqud_iface_t *iface, ucs_time_t first,
                            ucs_time_t now);


/* An expiry found the user inside a call: the watchdog expires again after
 * async.wd_retry, which doubles up to ASYNC_TICK, unless it is set to
 * expire sooner. Called without the lock,
 * by the async thread: it touches the timerfd and the fields only that
 * thread writes. */
void uct_srqud_watchdog_retry(uct_srqud_iface_t *iface);

#endif
