/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Selective repeat: the sender's window of unacknowledged packets and the
 * receiver's reorder buffer. Pure logic on plain structures (no verbs, no
 * interface), shared by the endpoints and the host unit tests, which run
 * both ends over simulated lossy, reordering and duplicating channels.
 *
 * Sender: a packet is resent when the receiver's selective acknowledgements
 * show it missing while at least UCT_SRQUD_SR_DUPTHRESH later ones arrived
 * (fast retransmit; fewer when fewer were sent after it), or when it was
 * sent a retransmission timeout ago and nothing acknowledged it. A resent
 * packet goes again only when a packet sent after it arrived, or on the
 * timeout: acknowledgements of the same hole do not multiply it.
 */

#ifndef UCT_SRQUD_SR_H_
#define UCT_SRQUD_SR_H_

#include "srqud_rel.h"

#include <ucs/datastruct/queue.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Later packets that must have arrived before a missing one is taken for
 * lost rather than overtaken (TCP's duplicate-ack threshold) */
#define UCT_SRQUD_SR_DUPTHRESH  3


/* A packet in the sender's window (embedded in its send descriptor) */
typedef struct uct_srqud_tx_slot {
    ucs_queue_elem_t elem;       /* in the window, psn order */
    uint64_t         send_time;  /* last (re)send */
    uct_srqud_psn_t  psn;
    uint8_t          sacked;     /* the receiver holds it */
    uint8_t          resends;    /* times sent again */
    uint8_t          passed;     /* later ones arrived while it was missing */
    uint8_t          lost;       /* a timeout gave it up: resent as the
                                    congestion window lets it */
    uint8_t          acked;      /* a cumulative ack covers it (sacked
                                    too); released by the user's progress */
} uct_srqud_tx_slot_t;


/* What an acknowledgement told the sender (uct_srqud_sr_release) */
enum {
    UCT_SRQUD_SR_REORDERED = UCS_BIT(0), /* a packet sent once arrived after
                                            later ones: the path reorders */
    UCT_SRQUD_SR_SPURIOUS  = UCS_BIT(1)  /* a packet a timeout gave up
                                            arrived though it was never
                                            resent: the timeout was early */
};


/* Resend one slot: > 0 resent, < 0 skipped (cannot be resent now), 0 stop
 * the scan (no send resources) */
typedef int (*uct_srqud_sr_resend_cb_t)(uct_srqud_tx_slot_t *slot, void *arg);


/**
 * Mark the slots a selective acknowledgement covers. @a ack_psn is the
 * acknowledgement's own cumulative psn, which its map is relative to: an
 * older acknowledgement (reordered, duplicated) read against the sender's
 * newer one would mark packets the receiver does not hold. Returns how
 * many were newly marked.
 */
unsigned uct_srqud_sr_sack(ucs_queue_head_t *window, uct_srqud_psn_t ack_psn,
                           const uint64_t *map);


/**
 * A cumulative acknowledgement up to @a ack_psn that cannot be applied yet
 * (the async thread leaves releases to the user's progress): the slots it
 * covers are marked acked, so that neither a timeout nor fast retransmit
 * resends them meanwhile. Returns how many were newly marked.
 */
unsigned uct_srqud_sr_mark_acked(ucs_queue_head_t *window,
                                 uct_srqud_psn_t ack_psn, unsigned *flags_p);


/**
 * After a timeout (F-RTO's question, RFC 5682, asked of the SACK marks):
 * does the receiver hold a packet the timeout gave up and nobody resent?
 * Then the original arrived and the timeout was spurious: a peer that was
 * slow to answer (a process waiting for a core), not a path that lost a
 * burst.
 */
int uct_srqud_sr_lost_arrived(ucs_queue_head_t *window);


/**
 * Undo a spurious timeout: no slot is marked lost any more (what was
 * given up is on its way). Returns how many marks were cleared.
 */
unsigned uct_srqud_sr_undo_timeout(ucs_queue_head_t *window);


/**
 * The cumulative part of an acknowledgement: take every slot up to
 * @a ack_psn out of the window, oldest first, and hand each to @a release.
 * The newest slot that was never resent gives a round-trip sample into
 * @a rtt (Karn: a resent packet's ack may answer either copy). *flags_p
 * (if not NULL) gets UCT_SRQUD_SR_xx. Returns how many slots were released.
 * Inline: with @a release known where it is called, each slot costs a
 * few instructions, not a call through a pointer (one per packet sent).
 */
static UCS_F_ALWAYS_INLINE unsigned
uct_srqud_sr_release(ucs_queue_head_t *window, uct_srqud_psn_t ack_psn,
                     uint64_t now, uct_srqud_rtt_t *rtt,
                     void (*release)(uct_srqud_tx_slot_t *slot, void *arg),
                     void *arg, unsigned *flags_p)
{
    uct_srqud_tx_slot_t *slot;
    uint64_t sample = 0;
    unsigned count  = 0;
    unsigned flags  = 0;

    while (!ucs_queue_is_empty(window)) {
        slot = ucs_queue_head_elem_non_empty(window, uct_srqud_tx_slot_t, elem);
        if (!uct_srqud_psn_le(slot->psn, ack_psn)) {
            break;
        }
        if (slot->resends == 0) {
            sample = uct_srqud_time_since(now, slot->send_time);
            if (slot->passed) {
                flags |= UCT_SRQUD_SR_REORDERED; /* late, not lost */
            }
            if (slot->lost) {
                flags |= UCT_SRQUD_SR_SPURIOUS;
            }
        }
        ucs_queue_pull_non_empty(window);
        release(slot, arg);
        ++count;
    }

    if (sample != 0) {
        uct_srqud_rtt_sample(rtt, sample);
    }
    if (flags_p != NULL) {
        *flags_p = flags;
    }
    return count;
}


/**
 * Fast retransmit: resend the slots the acknowledgements show lost: at
 * least UCT_SRQUD_SR_DUPTHRESH later ones arrived (fewer at the tail) and
 * one of them was sent @a reo_wnd or more after it (RACK's reordering
 * window, RFC 8985). The callback sets the slot's send_time. Returns how
 * many were resent.
 */
unsigned uct_srqud_sr_resend_lost(ucs_queue_head_t *window, uint64_t reo_wnd,
                                  uct_srqud_sr_resend_cb_t cb, void *arg);


/**
 * Retransmission timeout: the slots not known to have arrived that were
 * (re)sent at least @a rto before @a now are lost (and the oldest not
 * acked, always; all of them, held or not, when that oldest one had been
 * resent already: the receiver may have given up what it held);
 * up to @a budget of them are resent now, oldest first, the others by
 * uct_srqud_sr_resend_marked() as acknowledgements open the congestion
 * window. Returns how many were resent.
 */
unsigned uct_srqud_sr_resend_expired(ucs_queue_head_t *window, uint64_t now,
                                     uint64_t rto, unsigned budget,
                                     uct_srqud_sr_resend_cb_t cb, void *arg);

/* Resend up to @a budget slots a timeout marked lost, oldest first */
unsigned uct_srqud_sr_resend_marked(ucs_queue_head_t *window, unsigned budget,
                                    uct_srqud_sr_resend_cb_t cb, void *arg);

/* What is in the network as far as the sender knows: slots neither held
 * by the receiver nor given up by a timeout (RFC 6675's pipe) */
unsigned uct_srqud_sr_pipe(ucs_queue_head_t *window, unsigned *lost_p);


/*
 * Congestion window of an ep's channel (RFC 5681, its timeout part). A
 * clean path keeps it at the send window (@a max), so nothing changes
 * there. A retransmission timeout means the path lost a whole burst (a
 * full queue: a rate-limited wire, an SRQ without buffers, a QP in the
 * error state): the window restarts at UCT_SRQUD_CC_MIN packets, with half
 * of what was in flight as the slow-start threshold, and grows back with
 * the acknowledgements, doubling per round trip up to the threshold, then
 * by a packet per acknowledgement. Resending a whole window into the queue
 * that just overflowed would overflow it again. It paces the resends of
 * what a timeout gave up; new packets are bounded by the send window only
 * (srqud_ep_tx.h says why).
 */
#define UCT_SRQUD_CC_MIN  4

static inline void uct_srqud_cc_timeout(uint16_t *cwnd, uint16_t *ssthresh,
                                        unsigned in_flight)
{
    *ssthresh = (in_flight / 2 > UCT_SRQUD_CC_MIN) ? in_flight / 2 :
                                                     UCT_SRQUD_CC_MIN;
    *cwnd     = UCT_SRQUD_CC_MIN;
}

static inline void uct_srqud_cc_acked(uint16_t *cwnd, uint16_t ssthresh,
                                      unsigned acked, unsigned max)
{
    unsigned cw = *cwnd;

    if (acked == 0) {
        return;
    }
    cw += (cw < ssthresh) ? acked : 1;
    *cwnd = (cw < max) ? cw : max;
}


/* The receiver's packets held ahead of a gap; allocated at the first one,
 * freed when the gap is filled, so an idle peer costs a pointer */
typedef struct uct_srqud_reorder {
    uint64_t  map[UCT_SRQUD_SR_WORDS];   /* sent as the SACK */
    unsigned  count;
    void      *slot[UCT_SRQUD_SR_SPAN];  /* by psn modulo the span */
} uct_srqud_reorder_t;


static inline void uct_srqud_reorder_hold(uct_srqud_reorder_t *ro,
                                          uct_srqud_psn_t psn, void *pkt)
{
    uct_srqud_sack_set(ro->map, psn);
    ro->slot[psn % UCT_SRQUD_SR_SPAN] = pkt;
    ++ro->count;
}


/* The held packet @a psn (the next expected one), or NULL */
static inline void* uct_srqud_reorder_take(uct_srqud_reorder_t *ro,
                                           uct_srqud_psn_t psn)
{
    void *pkt;

    if ((ro == NULL) || !uct_srqud_sack_test(ro->map, psn)) {
        return NULL;
    }
    uct_srqud_sack_clear(ro->map, psn);
    pkt = ro->slot[psn % UCT_SRQUD_SR_SPAN];
    --ro->count;
    return pkt;
}


/* Give up every held packet (a new incarnation of the peer, close): @a cb
 * releases each */
void uct_srqud_reorder_drain(uct_srqud_reorder_t *ro,
                             void (*cb)(void *pkt, void *arg), void *arg);

#ifdef __cplusplus
}
#endif

#endif
