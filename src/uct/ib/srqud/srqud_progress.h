/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The progress loop and the async side: the user's progress (receive,
 * send completions, protocols, pending requests, acknowledgements,
 * timers), the same run by UCX's async thread while the user does not
 * progress (as UCX's ud does: peers' packets are acknowledged and
 * retransmissions go on while the application computes; what would call
 * the user back is queued for its next progress), and event arming for a
 * user that sleeps.
 */

#ifndef UCT_SRQUD_PROGRESS_H_
#define UCT_SRQUD_PROGRESS_H_

#include "srqud_ep.h"


/* The async timer, and the completion channel's handler if the user gave
 * an event callback */
ucs_status_t uct_srqud_progress_init(uct_srqud_iface_t *iface);

/* Stops both; returns after a callback that is running */
void uct_srqud_progress_cleanup(uct_srqud_iface_t *iface);

unsigned uct_srqud_progress(uct_iface_h tl_iface);

ucs_status_t uct_srqud_progress_event_fd_get(uct_iface_h tl_iface, int *fd_p);

ucs_status_t uct_srqud_progress_event_arm(uct_iface_h tl_iface,
                                          unsigned events);

#endif
