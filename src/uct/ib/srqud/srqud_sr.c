/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Selective repeat: the scans of the sender's window (srqud_sr.h).
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_sr.h"

#include <ucs/sys/math.h>


unsigned uct_srqud_sr_sack(ucs_queue_head_t *window, uct_srqud_psn_t ack_psn,
                           const uint64_t *map)
{
    uct_srqud_tx_slot_t *slot;
    unsigned marked = 0;

    ucs_queue_for_each(slot, window, elem) {
        if (!slot->sacked && uct_srqud_sack_covers(ack_psn, map, slot->psn)) {
            slot->sacked = 1;
            ++marked;
        }
    }
    return marked;
}


/* A slot a timeout gave up and nobody resent, now known to have arrived */
static UCS_F_ALWAYS_INLINE int
uct_srqud_sr_slot_spurious(const uct_srqud_tx_slot_t *slot)
{
    return slot->lost && (slot->resends == 0);
}


unsigned uct_srqud_sr_mark_acked(ucs_queue_head_t *window,
                                 uct_srqud_psn_t ack_psn, unsigned *flags_p)
{
    uct_srqud_tx_slot_t *slot;
    unsigned marked = 0;
    unsigned flags  = 0;

    ucs_queue_for_each(slot, window, elem) {
        if (!uct_srqud_psn_le(slot->psn, ack_psn)) {
            break;
        }
        if (!slot->acked) {
            if (uct_srqud_sr_slot_spurious(slot)) {
                flags |= UCT_SRQUD_SR_SPURIOUS;
            }
            slot->acked  = 1;
            slot->sacked = 1;
            slot->lost   = 0;
            ++marked;
        }
    }
    if (flags_p != NULL) {
        *flags_p = flags;
    }
    return marked;
}


int uct_srqud_sr_lost_arrived(ucs_queue_head_t *window)
{
    uct_srqud_tx_slot_t *slot;

    ucs_queue_for_each(slot, window, elem) {
        if (slot->sacked && uct_srqud_sr_slot_spurious(slot)) {
            return 1;
        }
    }
    return 0;
}


unsigned uct_srqud_sr_undo_timeout(ucs_queue_head_t *window)
{
    uct_srqud_tx_slot_t *slot;
    unsigned cleared = 0;

    ucs_queue_for_each(slot, window, elem) {
        cleared   += slot->lost;
        slot->lost = 0;
    }
    return cleared;
}


unsigned uct_srqud_sr_resend_lost(ucs_queue_head_t *window, uint64_t reo_wnd,
                                  uct_srqud_sr_resend_cb_t cb, void *arg)
{
    unsigned total = 0, sacked_total = 0, seen = 0, sacked_seen = 0;
    unsigned after, sacked_after, resent = 0;
    uint64_t newest_sacked = 0;
    uct_srqud_tx_slot_t *slot;
    int ret;

    ucs_queue_for_each(slot, window, elem) {
        ++total;
        if (slot->sacked) {
            ++sacked_total;
            newest_sacked = ucs_max(newest_sacked, slot->send_time);
        }
    }
    if (sacked_total == 0) {
        return 0;
    }

    ucs_queue_for_each(slot, window, elem) {
        ++seen;
        if (slot->sacked) {
            if (++sacked_seen == sacked_total) {
                break; /* nothing after this one is known to have arrived */
            }
            continue;
        }
        after        = total - seen;
        sacked_after = sacked_total - sacked_seen;
        slot->passed = 1;
        if (sacked_after < ucs_max(1, ucs_min(UCT_SRQUD_SR_DUPTHRESH, after))) {
            continue;
        }
        /* A resent packet is lost again only if a packet sent after it
         * arrived (RACK, RFC 8985): the acknowledgements that still show
         * the hole may have left before the resent copy arrived, and it
         * may wait behind a window of packets on the wire */
        if ((slot->resends > 0) && (newest_sacked <= slot->send_time)) {
            continue;
        }
        /* On a path that reorders (jitter, multipath) packets sent close
         * together swap: there a hole counts as a loss only once a packet
         * sent a reordering window after it has arrived. Without it, a
         * wire that reorders within a round trip makes nearly every packet
         * look lost (host simulation, 3 +- 2 ms: 1.7 spurious resends per
         * packet). On a path not seen to reorder the window is 0: a loss
         * is resent at once, not after a timer. */
        if (newest_sacked < slot->send_time + reo_wnd) {
            continue;
        }
        ret = cb(slot, arg);
        if (ret == 0) {
            break;
        } else if (ret > 0) {
            slot->lost = 0; /* sent again: not for the timeout's list */
            ++resent;
        }
    }
    return resent;
}


unsigned uct_srqud_sr_resend_marked(ucs_queue_head_t *window, unsigned budget,
                                    uct_srqud_sr_resend_cb_t cb, void *arg)
{
    uct_srqud_tx_slot_t *slot;
    unsigned resent = 0;
    int ret;

    ucs_queue_for_each(slot, window, elem) {
        if (!slot->lost) {
            continue;
        }
        if (slot->sacked) {
            slot->lost = 0; /* it arrived after all */
            continue;
        }
        if (resent >= budget) {
            break;
        }
        ret = cb(slot, arg);
        if (ret == 0) {
            break;
        } else if (ret > 0) {
            slot->lost = 0;
            ++resent;
        }
    }
    return resent;
}


unsigned uct_srqud_sr_resend_expired(ucs_queue_head_t *window, uint64_t now,
                                     uint64_t rto, unsigned budget,
                                     uct_srqud_sr_resend_cb_t cb, void *arg)
{
    uct_srqud_tx_slot_t *slot;
    int oldest = 1, revoke = 0, expired;

    ucs_queue_for_each(slot, window, elem) {
        if (slot->acked) {
            continue; /* delivered: only its release is still to come */
        }
        expired = uct_srqud_time_since(now, slot->send_time) >= rto;
        /* The oldest one is never held: the receiver would have delivered
         * it and moved the cumulative ack past it. Resending it whatever
         * its mark says keeps one wrong mark from stalling the stream.
         * Resent already and still not acknowledged a timeout later, the
         * receiver has not moved: what it said it held, it may have
         * given up since (a message of several packets that gave way,
         * srqud_rx_chain.c), so no mark is trusted this time (RFC 2018,
         * section 8: a receiver may renege) */
        if (oldest) {
            revoke = expired && (slot->resends > 0);
        }
        if ((oldest || revoke || !slot->sacked) && expired) {
            slot->lost   = 1;
            slot->sacked = 0;
        }
        oldest = 0;
    }
    return uct_srqud_sr_resend_marked(window, budget, cb, arg);
}


unsigned uct_srqud_sr_pipe(ucs_queue_head_t *window, unsigned *lost_p)
{
    uct_srqud_tx_slot_t *slot;
    unsigned pipe = 0, lost = 0;

    ucs_queue_for_each(slot, window, elem) {
        if (slot->sacked) {
            continue;
        }
        if (slot->lost) {
            ++lost;
        } else {
            ++pipe;
        }
    }
    *lost_p = lost;
    return pipe;
}


void uct_srqud_reorder_drain(uct_srqud_reorder_t *ro,
                             void (*cb)(void *pkt, void *arg), void *arg)
{
    unsigned i;

    for (i = 0; (i < UCT_SRQUD_SR_SPAN) && (ro->count > 0); ++i) {
        if (uct_srqud_sack_test(ro->map, i)) {
            uct_srqud_sack_clear(ro->map, i);
            --ro->count;
            cb(ro->slot[i], arg);
        }
    }
}
