/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Endpoint life (create, destroy, linger), reliability (acknowledgements,
 * selective repeat, the congestion window of resends, timers, peer
 * failure), keepalive and pending requests. Flush and fence:
 * srqud_ep_flush.c; send primitives: srqud_ep_tx.c; receive side:
 * srqud_ep_rx.c; active messages: srqud_ep_am.c.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_compat.h"
#include "srqud_tx.h"
#include "srqud_ep_tx.h"
#include "srqud_ep.h"
#include "srqud_ep_flush.h"
#include "srqud_dev.h"
#include "srqud_rx.h"
#include "srqud_rx_chain.h"

#include <ucs/datastruct/mpool.inl>
#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>
#include <string.h>


void uct_srqud_ep_free(uct_srqud_ep_t *ep)
{
    UCS_CLASS_DELETE_FUNC_NAME(uct_srqud_ep_t)(&ep->super.super);
}


static void uct_srqud_ep_slot_acked(uct_srqud_tx_slot_t *slot, void *arg)
{
    uct_srqud_ep_window_release(ucs_container_of(slot, uct_srqud_send_desc_t,
                                                 slot), UCS_OK);
}


/* A cumulative acknowledgement up to @a ack_psn. Returns 0 if the ep was
 * destroyed (a lingering ep whose last packet is acknowledged). */
static int uct_srqud_ep_ack_cumulative(uct_srqud_iface_t *iface,
                                       uct_srqud_ep_t *ep,
                                       uct_srqud_psn_t ack_psn,
                                       unsigned *flags_p)
{
    ucs_time_t now = ucs_get_time();
    unsigned flags;

    uct_srqud_sr_release(&ep->tx.window, ack_psn, now, &ep->tx.rtt,
                         uct_srqud_ep_slot_acked, NULL, &flags);
    *flags_p = flags;
    if (flags & UCT_SRQUD_SR_REORDERED) {
        ep->flags |= UCT_SRQUD_EP_FLAG_REORDERS;
    }
    ep->tx.acked         = ack_psn;
    if (uct_srqud_psn_lt(ep->ack_seen, ack_psn)) {
        ep->ack_seen = ack_psn;
    }
    ep->tx.progress_time = now;
    ep->tx.resend_time   = now;
    ep->tx.rto           = uct_srqud_rtt_rto(&ep->tx.rtt, iface->config.rto_min,
                                             iface->config.rto_max);
    if (ucs_queue_is_empty(&ep->tx.window)) {
        uct_srqud_ep_deactivate(ep);
        if (ep->flags & UCT_SRQUD_EP_FLAG_LINGER) {
            /* destroyed by the user, kept until now to deliver its data */
            uct_srqud_ep_free(ep);
            return 0;
        }
    }
    if (!ucs_queue_is_empty(&ep->tx.flushes)) { /* a call an ack saves */
        uct_srqud_ep_complete_flushes(ep, UCS_OK);
    }

    /* The window has room again: requests the dispatcher descheduled for a
     * full window may go */
    if (!ucs_arbiter_group_is_empty(&ep->arb_group)) {
        ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
        uct_srqud_ep_pending_progress(iface);
    }
    return 1;
}


typedef struct {
    uct_srqud_iface_t *iface;
    uct_srqud_ep_t    *ep;
    ucs_time_t        now;
} uct_srqud_ep_resend_arg_t;


static int uct_srqud_ep_resend_slot(uct_srqud_tx_slot_t *slot, void *arg)
{
    uct_srqud_ep_resend_arg_t *ra = arg;
    uct_srqud_send_desc_t *desc   = ucs_container_of(slot,
                                                     uct_srqud_send_desc_t,
                                                     slot);

    ucs_status_t status;

    if ((desc->flags & UCT_SRQUD_DESC_FLAG_IN_SQ) && (desc->num_zsge > 0)) {
        /* the device still reads the user's memory for this one; its
         * completion is signaled and comes first */
        return -1;
    }
    if (!uct_srqud_tx_has_resources(ra->iface) || ra->iface->tx.qp_error) {
        return 0; /* nothing can go now (a failed QP: after its reset) */
    }
    if (desc->flags & UCT_SRQUD_DESC_FLAG_IN_SQ) {
        /* the device may still read it for its first post, unsignaled: a
         * copy goes (the receiver may have learned our id meanwhile) */
        status = uct_srqud_tx_post_copy(ra->iface, ra->ep->ah,
                                        ra->ep->dest_qpn, desc,
                                        ra->ep->dest_ep_id);
    } else {
        uct_srqud_tx_desc_neth(desc)->dest_ep_id = ra->ep->dest_ep_id;
        status = uct_srqud_tx_post_send(ra->iface, ra->ep->ah,
                                        ra->ep->dest_qpn, desc);
    }
    if (status != UCS_OK) {
        return 0;
    }
    slot->send_time = ra->now;
    ++slot->resends;
    ++ra->iface->stats.tx_retransmits;
    return 1;
}


/* The packets marked lost go again as far as the congestion window lets
 * them (after a timeout, or after a failed QP discarded them) */
static void uct_srqud_ep_resend_within_cwnd(uct_srqud_ep_t *ep,
                                            uct_srqud_ep_resend_arg_t *ra)
{
    unsigned pipe, lost;

    pipe = uct_srqud_sr_pipe(&ep->tx.window, &lost);
    if ((lost > 0) && (pipe < ep->tx.cwnd)) {
        uct_srqud_sr_resend_marked(&ep->tx.window, ep->tx.cwnd - pipe,
                                   uct_srqud_ep_resend_slot, ra);
    }
}


/* After a timeout: the congestion window grows with what @a acked, and
 * the packets the timeout gave up go as far as it lets them */
static void uct_srqud_ep_cc_acked(uct_srqud_iface_t *iface,
                                  uct_srqud_ep_t *ep, unsigned acked)
{
    uct_srqud_ep_resend_arg_t ra = {iface, ep, ucs_get_time()};

    uct_srqud_cc_acked(&ep->tx.cwnd, ep->tx.ssthresh, acked,
                       iface->config.tx_window);
    if (ucs_queue_is_empty(&ep->tx.window) ||
        (ep->flags & UCT_SRQUD_EP_FLAG_FAILED)) {
        return;
    }
    uct_srqud_ep_resend_within_cwnd(ep, &ra);
}


/* An acknowledgement after a timeout: if it shows that a packet the
 * timeout gave up arrived without a resend (@a flags from the release, or
 * the SACK marks), the timeout was spurious and is undone: nothing is
 * lost, the window is whole again (it paces resends only). Otherwise
 * what it acknowledged opens the congestion window. */
static void uct_srqud_ep_recover(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 unsigned acked, unsigned flags)
{
    if ((flags & UCT_SRQUD_SR_SPURIOUS) ||
        uct_srqud_sr_lost_arrived(&ep->tx.window)) {
        uct_srqud_sr_undo_timeout(&ep->tx.window);
        ep->tx.cwnd = iface->config.tx_window;
        ++iface->stats.tx_timeouts_undone;
        return;
    }
    uct_srqud_ep_cc_acked(iface, ep, acked);
}


void uct_srqud_ep_resend_flushed(uct_srqud_iface_t *iface)
{
    uct_srqud_ep_resend_arg_t ra = {iface, NULL, ucs_get_time()};
    uct_srqud_ep_t *ep;
    unsigned lost;

    if (iface->tx.qp_error) {
        return; /* the reset failed: sends would be lost, try later */
    }
    iface->tx.flushed = 0;
    ucs_list_for_each(ep, &iface->tx.active_list, tx.active_list) {
        if (ep->flags & UCT_SRQUD_EP_FLAG_FAILED) {
            continue;
        }
        uct_srqud_sr_pipe(&ep->tx.window, &lost);
        if (lost == 0) {
            continue;
        }
        /* the path lost a burst, as a timeout says: start small, so that
         * a QP that fails again loses a few packets, not a window */
        uct_srqud_cc_timeout(&ep->tx.cwnd, &ep->tx.ssthresh,
                             uct_srqud_tx_in_flight(ep->tx.next,
                                                    ep->tx.acked));
        ra.ep = ep;
        uct_srqud_ep_resend_within_cwnd(ep, &ra);
        /* resent now: a timeout counts from here */
        ep->tx.resend_time = ra.now;
    }
}


/* What an acknowledgement says beyond its cumulative part, the same from
 * the user's progress and from the async thread: the packets @a sack
 * shows held need not go again, and they tell a spurious timeout; then,
 * after a timeout, the recovery (@a acked newly acknowledged, @a flags
 * UCT_SRQUD_SR_xx of the marks); last, what it shows missing behind
 * enough held ones is lost: resent at once, once per round trip. Inline:
 * without a SACK and out of recovery (a ping-pong's acks) it is two tests,
 * not a call */
static UCS_F_ALWAYS_INLINE void
uct_srqud_ep_ack_selective(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                           uct_srqud_psn_t ack_psn,
                           const uct_srqud_sack_t *sack, unsigned acked,
                           unsigned flags)
{
    uct_srqud_ep_resend_arg_t ra;
    uint64_t map[UCT_SRQUD_SR_WORDS];
    int with_sack;

    with_sack = (sack != NULL) && !ucs_queue_is_empty(&ep->tx.window) &&
                !(ep->flags & UCT_SRQUD_EP_FLAG_FAILED);
    if (with_sack) {
        memcpy(map, sack->map, sizeof(map)); /* unaligned in the packet */
        uct_srqud_sr_sack(&ep->tx.window, ack_psn, map);
    }

    if (ucs_unlikely(ep->tx.cwnd < iface->config.tx_window)) {
        uct_srqud_ep_recover(iface, ep, acked, flags);
    }

    if (with_sack) {
        ra.iface = iface;
        ra.ep    = ep;
        ra.now   = ucs_get_time();
        iface->stats.tx_fast_retransmits +=
                uct_srqud_sr_resend_lost(&ep->tx.window,
                                         uct_srqud_reo_wnd(&ep->tx.rtt,
                                                           ep->flags &
                                                           UCT_SRQUD_EP_FLAG_REORDERS),
                                         uct_srqud_ep_resend_slot, &ra);
    }
}


int uct_srqud_ep_process_ack(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             uct_srqud_psn_t ack_psn,
                             const uct_srqud_sack_t *sack)
{
    unsigned acked = 0, flags = 0;

    if (uct_srqud_tx_ack_is_new(ep->tx.next, ep->tx.acked, ack_psn)) {
        /* what the async thread saw of it grew the window already */
        if (uct_srqud_psn_lt(ep->ack_seen, ack_psn)) {
            acked = (uct_srqud_psn_t)(ack_psn - ep->ack_seen);
        }
        if (!uct_srqud_ep_ack_cumulative(iface, ep, ack_psn, &flags)) {
            return 0;
        }
    } else if (ack_psn == ep->tx.acked) {
        /* nothing new, but the peer is there: a worker that does not
         * progress and holds its share of a shared receive pool says so
         * (srqud_ep_rx.c); it computes, it has not gone */
        ep->tx.progress_time = ucs_get_time();
    }

    uct_srqud_ep_ack_selective(iface, ep, ack_psn, sack, acked, flags);
    return 1;
}


void uct_srqud_ep_ack_seen(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                           uct_srqud_psn_t ack_psn,
                           const uct_srqud_sack_t *sack)
{
    unsigned acked = 0, flags = 0;

    if (ep->flags & UCT_SRQUD_EP_FLAG_FAILED) {
        return;
    }

    if (uct_srqud_tx_ack_is_new(ep->tx.next, ep->ack_seen, ack_psn)) {
        /* the peer answers: a timeout counts from now, as it would had
         * the ack been applied */
        acked                = (uct_srqud_psn_t)(ack_psn - ep->ack_seen);
        ep->ack_seen         = ack_psn;
        ep->tx.progress_time = ucs_get_time();
        ep->tx.resend_time   = ep->tx.progress_time;
    }

    /* what it acknowledges, and what it shows held, is not resent by a
     * timeout meanwhile (the user's progress releases the slots); after a
     * timeout it opens the congestion window or undoes a spurious one, as
     * in the user's progress: a timeout on this thread resends a
     * congestion window, not every expired packet */
    if (uct_srqud_psn_lt(ack_psn, ep->tx.acked) ||
        !uct_srqud_psn_lt(ack_psn, ep->tx.next)) {
        sack = NULL; /* older than what was applied, or nonsense */
    } else {
        uct_srqud_sr_mark_acked(&ep->tx.window, ack_psn, &flags);
    }
    uct_srqud_ep_ack_selective(iface, ep, ack_psn, sack, acked, flags);
}


/* What the sender's side looked like when its peer went silent: tells a
 * peer that really stopped from a sender that stopped resending
 * (UCX_LOG_LEVEL=diag) */
static void uct_srqud_ep_log_window(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep, ucs_time_t now)
{
    unsigned n = 0, sacked = 0, lost = 0, in_sq = 0;
    uct_srqud_send_desc_t *desc;
    uct_srqud_tx_slot_t *slot, *oldest = NULL;

    if (!ucs_log_is_enabled(UCS_LOG_LEVEL_DIAG)) {
        return;
    }
    ucs_queue_for_each(slot, &ep->tx.window, elem) {
        desc    = ucs_container_of(slot, uct_srqud_send_desc_t, slot);
        oldest  = (oldest == NULL) ? slot : oldest;
        sacked += slot->sacked;
        lost   += slot->lost;
        in_sq  += !!(desc->flags & UCT_SRQUD_DESC_FLAG_IN_SQ);
        ++n;
    }
    ucs_diag("%s: ep %p to qpn 0x%x: psn next %u acked %u, window %u "
             "(sacked %u, lost %u, in the send queue %u), cwnd %u ssthresh "
             "%u, rto %.1f ms; oldest: psn %u, %u resends, sent %.1f ms ago; "
             "iface: tx available %u, qp_error %d, resets %lu, timeouts %lu",
             iface->md->name, ep, ep->dest_qpn, ep->tx.next, ep->tx.acked, n,
             sacked, lost, in_sq, ep->tx.cwnd, ep->tx.ssthresh,
             ucs_time_to_msec(ep->tx.rto),
             (oldest != NULL) ? oldest->psn : 0,
             (oldest != NULL) ? oldest->resends : 0,
             (oldest != NULL) ?
                     ucs_time_to_msec(uct_srqud_time_since(now,
                                                           oldest->send_time)) :
                     0.0,
             iface->tx.available, iface->tx.qp_error, iface->stats.qp_resets,
             iface->stats.tx_timeouts);
}


void uct_srqud_ep_set_failed(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             ucs_status_t status)
{
    if (ep->flags & UCT_SRQUD_EP_FLAG_FAILED) {
        return;
    }
    if (status == UCS_ERR_ENDPOINT_TIMEOUT) {
        uct_srqud_ep_log_window(iface, ep, ucs_get_time());
    }

    ucs_debug("%s: ep %p to qpn 0x%x failed: %s (%u unacknowledged)",
              iface->md->name, ep, ep->dest_qpn, ucs_status_string(status),
              uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked));

    ep->flags      |= UCT_SRQUD_EP_FLAG_FAILED;
    ep->fail_status = status;
    ++iface->stats.ep_failures;
    uct_srqud_ep_drop_window(ep, status);
    iface->proto->ep_cleanup(iface, ep, status);

    if (ep->flags & UCT_SRQUD_EP_FLAG_LINGER) {
        /* nobody to tell: the user destroyed it already */
        uct_srqud_ep_free(ep);
        return;
    }

    status = uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                     status);
    if (status != UCS_OK) {
        ucs_error("%s: peer at qpn 0x%x stopped answering (no error handler "
                  "set): %s", iface->md->name, ep->dest_qpn,
                  ucs_status_string(status));
    }
}


void uct_srqud_ep_timers_check(uct_srqud_iface_t *iface, ucs_time_t now)
{
    uct_srqud_ep_resend_arg_t ra = {iface, NULL, now};
    uct_srqud_ep_t *ep, *tmp;

    ucs_list_for_each_safe(ep, tmp, &iface->tx.active_list, tx.active_list) {
        /* No acknowledgement for this long: the peer is gone. Reported from
         * the user's progress only, since it calls the user back. */
        if (uct_srqud_time_since(now, ep->tx.progress_time) >=
            iface->config.peer_timeout) {
            if (!iface->async.active) {
                uct_srqud_ep_set_failed(iface, ep, UCS_ERR_ENDPOINT_TIMEOUT);
            } else {
                iface->async.wake_user = 1; /* a sleeping user must hear */
            }
            continue;
        }

        /* everything it sent is acknowledged, the acks still queued for
         * the user (uct_srqud_ep_ack_seen): nothing is in the network */
        if (ep->ack_seen == (uct_srqud_psn_t)(ep->tx.next - 1)) {
            continue;
        }

        if (uct_srqud_time_since(now, ep->tx.resend_time) < ep->tx.rto) {
            continue;
        }

        /* what the receiver does not hold and had a timeout to answer:
         * lost, and the path's queue with it; resent as the congestion
         * window grows back */
        ++iface->stats.tx_timeouts;
        ra.ep  = ep;
        uct_srqud_cc_timeout(&ep->tx.cwnd, &ep->tx.ssthresh,
                             uct_srqud_tx_in_flight(ep->tx.next,
                                                    ep->tx.acked));
        /* A congestion window's worth goes now, the rest as acks open
         * it, on the async thread too (uct_srqud_ep_ack_seen): a spurious
         * timeout (a peer that waited for a core) costs a few duplicates,
         * not a window of them */
        uct_srqud_sr_resend_expired(&ep->tx.window, now, ep->tx.rto,
                                    ep->tx.cwnd, uct_srqud_ep_resend_slot,
                                    &ra);
        ep->tx.resend_time = now;
        ep->tx.rto         = uct_srqud_rto_backoff(ep->tx.rto,
                                                   iface->config.rto_max);
    }
}


ucs_status_t uct_srqud_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                      unsigned flags)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ucs_status_t status      = UCS_OK;

    uct_srqud_enter(iface);

    /* Resources are there now and nothing is queued ahead: the caller may
     * send right away. Unless the async thread ran since the user's last
     * progress: it may have freed what the caller's send just lacked, and
     * a request refused for lack of resources must be taken (the user's
     * next progress dispatches it). */
    if (!(ep->flags & UCT_SRQUD_EP_FLAG_FAILED) && !iface->async.ran &&
        uct_srqud_tx_user_resources(iface) &&
        uct_srqud_ep_tx_user_window_open(iface, ep) &&
        ucs_arbiter_group_is_empty(&ep->arb_group) &&
        !uct_srqud_ep_user_must_wait(ep)) {
        status = UCS_ERR_BUSY;
        goto out;
    }

    ucs_arbiter_elem_init((ucs_arbiter_elem_t*)req->priv);
    ucs_arbiter_group_push_elem(&ep->arb_group,
                                (ucs_arbiter_elem_t*)req->priv);
    ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
    UCT_TL_EP_STAT_PEND(&ep->super);
out:
    uct_srqud_leave(iface);
    return status;
}


ucs_arbiter_cb_result_t
uct_srqud_ep_dispatch_pending(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                              ucs_arbiter_elem_t *elem, void *arg)
{
    uct_srqud_iface_t *iface = ucs_container_of(arbiter, uct_srqud_iface_t,
                                                tx.arbiter);
    uct_srqud_ep_t *ep       = ucs_container_of(group, uct_srqud_ep_t,
                                                arb_group);
    uct_pending_req_t *req   = ucs_container_of(elem, uct_pending_req_t, priv);
    ucs_status_t status;

    if (!uct_srqud_tx_user_resources(iface)) {
        return UCS_ARBITER_CB_RESULT_STOP;
    }

    /* A full window blocks this endpoint only */
    if (!(ep->flags & UCT_SRQUD_EP_FLAG_FAILED) &&
        !uct_srqud_ep_tx_user_window_open(iface, ep)) {
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }

    ep->flags |= UCT_SRQUD_EP_FLAG_IN_PENDING;
    status     = req->func(req);
    ep->flags &= ~UCT_SRQUD_EP_FLAG_IN_PENDING;
    if (status == UCS_OK) {
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    } else if (status == UCS_INPROGRESS) {
        return UCS_ARBITER_CB_RESULT_NEXT_GROUP;
    }

    return uct_srqud_tx_user_resources(iface) ?
           UCS_ARBITER_CB_RESULT_DESCHED_GROUP : UCS_ARBITER_CB_RESULT_STOP;
}


void uct_srqud_ep_pending_progress(uct_srqud_iface_t *iface)
{
    if (uct_srqud_tx_user_resources(iface)) {
        ucs_arbiter_dispatch(&iface->tx.arbiter, 1,
                             uct_srqud_ep_dispatch_pending, NULL);
    }
}


typedef struct {
    uct_pending_purge_callback_t cb;
    void                         *arg;
} uct_srqud_purge_args_t;


static ucs_arbiter_cb_result_t
uct_srqud_ep_purge_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                      ucs_arbiter_elem_t *elem, void *arg)
{
    uct_srqud_purge_args_t *args = arg;
    uct_pending_req_t *req       = ucs_container_of(elem, uct_pending_req_t,
                                                    priv);

    if (args->cb != NULL) {
        args->cb(req, args->arg);
    }
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}


void uct_srqud_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                                void *arg)
{
    uct_srqud_ep_t *ep          = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface    = uct_srqud_ep_iface(ep);
    uct_srqud_purge_args_t args = {cb, arg};

    uct_srqud_enter(iface);
    ucs_arbiter_group_purge(&iface->tx.arbiter, &ep->arb_group,
                            uct_srqud_ep_purge_cb, &args);
    uct_srqud_leave(iface);
}


/* The answer to a check whose probe (or earlier data) is in the window: with
 * a completion, the ack of what is there completes it with UCS_OK, a peer
 * timeout with the failure; without one, failure is reported through the
 * interface's error handler only */
static ucs_status_t uct_srqud_ep_check_pending(uct_srqud_iface_t *iface,
                                               uct_srqud_ep_t *ep,
                                               uct_completion_t *comp)
{
    ucs_status_t status;

    if (comp == NULL) {
        return UCS_OK;
    }

    status = uct_srqud_ep_add_flush(iface, ep, comp, 0, UCT_SRQUD_FLUSH_CHECK,
                                    0);
    return (status == UCS_OK) ? UCS_INPROGRESS : status;
}


/*
 * Keepalive: a reliable packet without payload. It is retransmitted like
 * data, so a peer that does not acknowledge it within UCX_SRQUD_TIMEOUT
 * fails the endpoint through the error handler. An ep with packets in
 * flight is watched already.
 */
ucs_status_t uct_srqud_ep_check(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    uct_srqud_send_desc_t *desc;
    ucs_status_t status;

    UCT_SRQUD_EP_CHECK_PARAMS(flags, comp);

    uct_srqud_enter(iface);
    if (ep->flags & UCT_SRQUD_EP_FLAG_FAILED) {
        /* known, and already reported to the error handler */
        status = UCS_OK;
        goto out;
    }

    if (!ucs_queue_is_empty(&ep->tx.window)) {
        status = uct_srqud_ep_check_pending(iface, ep, comp);
        goto out;
    }

    status = uct_srqud_ep_tx_check(iface, ep);
    if (status != UCS_OK) {
        /* no send resources: the packets using them are watched */
        status = (status == UCS_ERR_NO_RESOURCE) ? UCS_OK : status;
        goto out;
    }

    if (!ucs_queue_is_empty(&ep->tx.window)) {
        ++iface->stats.keepalives; /* the CREQ just sent is the probe */
        status = uct_srqud_ep_check_pending(iface, ep, comp);
        goto out;
    }

    desc = uct_srqud_ep_tx_ctl_desc(iface, UCT_SRQUD_CTL_NOP);
    if (desc == NULL) {
        status = UCS_OK;
        goto out;
    }

    status = uct_srqud_ep_tx_reliable(iface, ep, desc);
    if (status != UCS_OK) {
        ucs_mpool_put_inline(desc);
    } else {
        ++iface->stats.keepalives;
        status = uct_srqud_ep_check_pending(iface, ep, comp);
    }
out:
    uct_srqud_leave(iface);
    return status;
}


/* ------------------------------------------------------------------------
 * Receive side
 */

/* Acknowledgements are delayed (UCX_SRQUD_ACK_DELAY) so that a
 * request-reply exchange, where the reply already proves delivery to the
 * application, does not carry an extra packet each way; they go at once
 * for a duplicate, a request (ACK_REQ: half window, flush), a CREQ, or
 * every ACK_THRESH packets. */
void uct_srqud_ep_queue_ack(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                            int now)
{
    if (!(ep->flags & UCT_SRQUD_EP_FLAG_ACK_QUEUED)) {
        ep->flags     |= UCT_SRQUD_EP_FLAG_ACK_QUEUED;
        ep->rx.ack_time = ucs_get_time();
        ucs_list_add_tail(&iface->rx.ack_list, &ep->rx.ack_list);
        iface->rx.ack_due = ucs_min(iface->rx.ack_due,
                                    ep->rx.ack_time + iface->config.ack_delay);
    }
    if (now || (ep->flags & UCT_SRQUD_EP_FLAG_CREP_DUE)) {
        ep->flags        |= UCT_SRQUD_EP_FLAG_ACK_NOW;
        iface->rx.ack_due = 0;
    }
}


void uct_srqud_ep_acks_send(uct_srqud_iface_t *iface, ucs_time_t now)
{
    uct_srqud_ep_t *ep, *tmp;
    uint8_t ctl;

    /* the earliest of those left queued (a send resource missing leaves
     * the rest due now) */
    iface->rx.ack_due = UCS_TIME_INFINITY;
    ucs_list_for_each_safe(ep, tmp, &iface->rx.ack_list, rx.ack_list) {
        if (!(ep->flags & UCT_SRQUD_EP_FLAG_ACK_NOW) &&
            (now != UCS_TIME_INFINITY) &&
            (uct_srqud_time_since(now, ep->rx.ack_time) <
             iface->config.ack_delay)) {
            iface->rx.ack_due = ucs_min(iface->rx.ack_due,
                                        ep->rx.ack_time +
                                        iface->config.ack_delay);
            continue;
        }
        ctl = (ep->flags & UCT_SRQUD_EP_FLAG_CREP_DUE) ? UCT_SRQUD_CTL_CREP :
              (ep->flags & UCT_SRQUD_EP_FLAG_GAP)      ? UCT_SRQUD_CTL_NACK :
                                                         UCT_SRQUD_CTL_ACK;
        if (uct_srqud_ep_tx_ack(iface, ep, ctl) != UCS_OK) {
            iface->rx.ack_due = 0;
            return; /* no send resources: try on the next progress */
        }
        if (ctl == UCT_SRQUD_CTL_NACK) {
            ++iface->stats.nacks_sent;
        } else {
            ++iface->stats.acks_sent;
        }
        ep->flags     &= ~(UCT_SRQUD_EP_FLAG_ACK_QUEUED |
                           UCT_SRQUD_EP_FLAG_ACK_NOW |
                           UCT_SRQUD_EP_FLAG_CREP_DUE |
                           UCT_SRQUD_EP_FLAG_GAP);
        ep->rx.unacked = 0;
        ucs_list_del(&ep->rx.ack_list);
    }
}


/* As the next progress would send them ACK_DELAY / 2 from its last one:
 * those queued that long before the last progress, and the urgent ones.
 * They are not the user's sends: a step of one message and an ack is a
 * step of one (TX_BATCH_IDLE=auto), and acks to the 7 peers of an
 * Alltoall do not make its next sends wait for a batch (TX_BATCH_AFTER) */
void uct_srqud_ep_acks_ride(uct_srqud_iface_t *iface)
{
    unsigned long sent = iface->stats.acks_sent + iface->stats.nacks_sent;
    unsigned user_sends = iface->tx.user_sends;
    unsigned recent     = iface->tx.recent;

    uct_srqud_ep_acks_send(iface, iface->async.last_progress +
                                  iface->config.ack_ride_lead);
    iface->tx.user_sends      = user_sends;
    iface->tx.recent          = recent;
    iface->stats.acks_ridden += iface->stats.acks_sent +
                                iface->stats.nacks_sent - sent;
}



static UCS_CLASS_INIT_FUNC(uct_srqud_ep_t, const uct_ep_params_t *params)
{
    uct_srqud_iface_t *iface = ucs_derived_of(params->iface, uct_srqud_iface_t);
    const uct_srqud_device_addr_t *dev_addr;
    const uct_srqud_iface_addr_t *iface_addr;
    ucs_status_t status;

    if (!ucs_test_all_flags(params->field_mask,
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR)) {
        ucs_error("srqud: endpoints connect to an interface address only");
        return UCS_ERR_UNSUPPORTED;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    dev_addr   = (const void*)params->dev_addr;
    iface_addr = (const void*)params->iface_addr;

    if (!uct_srqud_dev_is_reachable(iface, dev_addr)) {
        ucs_error("%s: remote address is not reachable from this port",
                  iface->md->name);
        return UCS_ERR_UNREACHABLE;
    }

    status = uct_srqud_dev_ah_get(iface, dev_addr, &self->ah_entry);
    if (status != UCS_OK) {
        return status;
    }
    self->ah = self->ah_entry->ah;

    self->dest_qpn     = uct_srqud_unpack_qpn(iface_addr->qp_num);
    self->dest_ep_id   = UCT_SRQUD_EP_ID_NONE;
    self->conn_sn      = iface->conn_sn++;
    self->token        = uct_srqud_secret32(self);
    self->flags        = 0;
    self->fail_status  = UCS_OK;
    self->rma_status   = UCS_OK;
    self->rma_refusal_id = 0;
    self->ops          = 0;
    self->tx.next      = 0;
    self->tx.acked     = (uct_srqud_psn_t)-1;
    self->tx.ack_asked = (uct_srqud_psn_t)-1;
    self->tx.cwnd      = iface->config.tx_window;
    self->tx.ssthresh  = iface->config.tx_window;
    self->tx.rto       = iface->config.rto_min;
    self->tx.rtt.srtt  = 0;
    self->tx.rtt.rttvar = 0;
    self->tx.progress_time = 0;
    self->tx.resend_time   = 0;
    self->rx.expected  = 0;
    self->rx.ack_limit = 0;
    self->rx.unacked   = 0;
    self->rx.reorder   = NULL;
    ucs_queue_head_init(&self->rx.chain);
    self->rx.chain_count = 0;
    self->rx.chain_psn   = 0;
    self->rx.ack_time  = 0;
    ucs_queue_head_init(&self->tx.window);
    ucs_queue_head_init(&self->tx.flushes);
    self->flushes_wait_ops = 0;
    ucs_arbiter_group_init(&self->arb_group);
    ucs_list_head_init(&self->peer.refusals);
    self->peer.refusals_count = 0;
    self->peer.bad_tokens     = 0;
    self->peer.xfers          = 0;
    self->peer.idle_since     = 0;
    self->back_psn     = 0;
    self->ack_seen     = self->tx.acked;
    /* the peer's port: a passive ep gets its whole key later; an active
     * one is matched by it (and dest_qpn) with the passive ep of the same
     * peer, whose owed acks its AMs take back (srqud_back_ack.c) */
    memset(&self->peer_key, 0, sizeof(self->peer_key));
    memcpy(self->peer_key.gid, dev_addr->gid, sizeof(self->peer_key.gid));

    self->ep_id = ucs_ptr_array_insert(&iface->eps, self);
    if (self->ep_id >= UCT_SRQUD_EP_ID_NONE) {
        ucs_ptr_array_remove(&iface->eps, self->ep_id);
        uct_srqud_dev_ah_put(iface, self->ah_entry);
        ucs_error("%s: too many endpoints", iface->md->name);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    ucs_debug("%s: ep %p id %u to qpn 0x%x", iface->md->name, self,
              self->ep_id, self->dest_qpn);
    return UCS_OK;
}


static UCS_CLASS_CLEANUP_FUNC(uct_srqud_ep_t)
{
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(self);
    khiter_t it;

    ucs_arbiter_group_purge(&iface->tx.arbiter, &self->arb_group,
                            uct_srqud_ep_purge_cb,
                            &(uct_srqud_purge_args_t){NULL, NULL});
    ucs_arbiter_group_cleanup(&self->arb_group);

    uct_srqud_ep_drop_window(self, UCS_ERR_CANCELED);
    iface->proto->ep_cleanup(iface, self, UCS_ERR_CANCELED);
    iface->proto->ep_release(iface, self);
    uct_srqud_rx_purge_ep(iface, self);
    uct_srqud_rx_reorder_release(iface, &self->rx.reorder);
    uct_srqud_rx_chain_release(iface, self);
    if (self->flags & UCT_SRQUD_EP_FLAG_ACK_QUEUED) {
        ucs_list_del(&self->rx.ack_list);
    }
    if (self->flags & UCT_SRQUD_EP_FLAG_PASSIVE) {
        /* the key may name a newer incarnation of the peer's ep by now */
        it = kh_get(uct_srqud_peer, &iface->peers, self->peer_key);
        if ((it != kh_end(&iface->peers)) &&
            (kh_value(&iface->peers, it) == self)) {
            kh_del(uct_srqud_peer, &iface->peers, it);
        }
        ucs_list_del(&self->peer.list);
        --iface->passive.count;
        --iface->stats.passive_eps;
    }
    ucs_ptr_array_remove(&iface->eps, self->ep_id);
    uct_srqud_dev_ah_put(iface, self->ah_entry);
}


UCS_CLASS_DEFINE(uct_srqud_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_srqud_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_srqud_ep_t, uct_ep_t);


ucs_status_t uct_srqud_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    uct_srqud_iface_t *iface = ucs_derived_of(params->iface, uct_srqud_iface_t);
    ucs_status_t status;

    UCT_SRQUD_LOCKED(iface, status,
                     UCS_CLASS_NEW_FUNC_NAME(uct_srqud_ep_t)(params, ep_p));
    return status;
}


/*
 * Destroying an ep whose packets are not all acknowledged would lose them
 * if one needs a retransmission: UCP closes endpoints in force mode without
 * a flush, and a UCT user may destroy right after sending. So such an ep
 * lingers, invisible to the user, until its window is acknowledged or the
 * peer times out. An am_zcopy in the window refers to the user's memory,
 * which the user may free after the destroy: its payload is copied into
 * the descriptor first, and the user's completion runs now.
 */
void uct_srqud_ep_destroy(uct_ep_h tl_ep)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    uct_srqud_send_desc_t *desc;
    uct_completion_t *comp;
    void *dst;
    uint8_t i;

    uct_srqud_enter(iface);

    ucs_arbiter_group_purge(&iface->tx.arbiter, &ep->arb_group,
                            uct_srqud_ep_purge_cb,
                            &(uct_srqud_purge_args_t){NULL, NULL});
    /* RMA and zero-copy operations end now, their completions run now:
     * their memory is the user's, whether the ep lingers or not */
    iface->proto->ep_cleanup(iface, ep, UCS_ERR_CANCELED);
    iface->proto->ep_release(iface, ep);
    uct_srqud_ep_complete_flushes(ep, UCS_ERR_CANCELED);

    /* so do its am_zcopy completions; a posted send of one still reads
     * the user's memory: the QP is reset first (its sends are lost, and
     * resent, a lingering ep's from copies) */
    if (uct_srqud_tx_posted_zcopy(iface, ep->ep_id)) {
        uct_srqud_tx_recover(iface, 0);
    }

    if ((ep->flags & UCT_SRQUD_EP_FLAG_FAILED) ||
        ucs_queue_is_empty(&ep->tx.window)) {
        uct_srqud_ep_free(ep);
        goto out;
    }

    ucs_queue_for_each(desc, &ep->tx.window, slot.elem) {
        dst = UCS_PTR_BYTE_OFFSET(uct_srqud_tx_desc_neth(desc),
                                  desc->length);
        for (i = 0; i < desc->num_zsge; ++i) {
            memcpy(dst, (void*)(uintptr_t)desc->zsge[i].addr,
                   desc->zsge[i].length);
            dst           = UCS_PTR_BYTE_OFFSET(dst, desc->zsge[i].length);
            desc->length += desc->zsge[i].length;
        }
        desc->num_zsge = 0;
        comp           = desc->comp;
        desc->comp     = NULL;
        if (comp != NULL) {
            uct_invoke_completion(comp, UCS_OK);
        }
    }

    ep->flags |= UCT_SRQUD_EP_FLAG_LINGER;
    ++iface->stats.ep_lingered;
    ucs_debug("%s: ep %p destroyed with %u packets unacknowledged: lingering",
              iface->md->name, ep,
              uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked));
out:
    uct_srqud_leave(iface);
}

