/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Reliability over UD: pure logic of sequence numbers, windows and timers,
 * unit-tested on the host. The policy is selective repeat (srqud_sr.h): the
 * receiver delivers in order, holds what arrives ahead of a gap (up to
 * UCT_SRQUD_SR_SPAN packets) and says in its acknowledgements which packets
 * it holds; the sender resends only what is missing. Go-back-N resent a
 * whole window for each loss: about 18 packets per lost one at 5 % loss.
 */

#ifndef UCT_SRQUD_REL_H_
#define UCT_SRQUD_REL_H_

#include <stddef.h>
#include <stdint.h>

typedef uint16_t uct_srqud_psn_t;


/* a < b in 16-bit sequence space */
static inline int uct_srqud_psn_lt(uct_srqud_psn_t a, uct_srqud_psn_t b)
{
    return (int16_t)(uint16_t)(a - b) < 0;
}


static inline int uct_srqud_psn_le(uct_srqud_psn_t a, uct_srqud_psn_t b)
{
    return (a == b) || uct_srqud_psn_lt(a, b);
}


/* Packets a receiver may hold ahead of a gap, and the span of a selective
 * acknowledgement: one bit per packet, indexed by psn modulo the span. Held
 * packets are always within the span after the next expected one, so the
 * ring never aliases. */
#define UCT_SRQUD_SR_SPAN   256
#define UCT_SRQUD_SR_WORDS  (UCT_SRQUD_SR_SPAN / 64)


static inline int uct_srqud_sack_test(const uint64_t *map, uct_srqud_psn_t psn)
{
    unsigned bit = psn % UCT_SRQUD_SR_SPAN;

    return (map[bit / 64] >> (bit % 64)) & 1;
}


static inline void uct_srqud_sack_set(uint64_t *map, uct_srqud_psn_t psn)
{
    unsigned bit = psn % UCT_SRQUD_SR_SPAN;

    map[bit / 64] |= 1ull << (bit % 64);
}


static inline void uct_srqud_sack_clear(uint64_t *map, uct_srqud_psn_t psn)
{
    unsigned bit = psn % UCT_SRQUD_SR_SPAN;

    map[bit / 64] &= ~(1ull << (bit % 64));
}


/* Does a selective acknowledgement (cumulative @a ack_psn, @a map) say that
 * @a psn arrived? */
static inline int uct_srqud_sack_covers(uct_srqud_psn_t ack_psn,
                                        const uint64_t *map,
                                        uct_srqud_psn_t psn)
{
    uint16_t ahead = (uint16_t)(psn - ack_psn);

    if ((ahead == 0) || (ahead > UCT_SRQUD_SR_SPAN)) {
        return uct_srqud_psn_le(psn, ack_psn);
    }
    return uct_srqud_sack_test(map, psn);
}


typedef enum {
    UCT_SRQUD_RX_DELIVER,    /* the next expected packet */
    UCT_SRQUD_RX_DUPLICATE,  /* delivered or held already: drop, re-ack */
    UCT_SRQUD_RX_HOLD,       /* ahead of a gap, within the span: keep it */
    UCT_SRQUD_RX_BEYOND      /* too far ahead to keep: drop, ack the state */
} uct_srqud_rx_verdict_t;


/* @a held: the receiver's map of held packets, NULL if it holds none;
 * @a span: how far ahead it may hold (at most UCT_SRQUD_SR_SPAN; 1 drops
 * everything out of order, as go-back-N does) */
static inline uct_srqud_rx_verdict_t
uct_srqud_rx_classify(uct_srqud_psn_t expected, uct_srqud_psn_t psn,
                      const uint64_t *held, unsigned span)
{
    uint16_t ahead = (uint16_t)(psn - expected);

    if (ahead == 0) {
        return UCT_SRQUD_RX_DELIVER;
    }
    if (uct_srqud_psn_lt(psn, expected)) {
        return UCT_SRQUD_RX_DUPLICATE;
    }
    if (ahead >= span) {
        return UCT_SRQUD_RX_BEYOND;
    }
    return ((held != NULL) && uct_srqud_sack_test(held, psn)) ?
           UCT_SRQUD_RX_DUPLICATE : UCT_SRQUD_RX_HOLD;
}


/* Packets sent and not acknowledged; @a acked is the last acknowledged psn
 * (next - 1 when nothing is outstanding) */
static inline unsigned uct_srqud_tx_in_flight(uct_srqud_psn_t next,
                                              uct_srqud_psn_t acked)
{
    return (uint16_t)(next - acked - 1);
}


/* Does a cumulative ack for @a ack_psn acknowledge anything new? It must
 * be after @a acked and before @a next; anything else is stale or bogus. */
static inline int uct_srqud_tx_ack_is_new(uct_srqud_psn_t next,
                                          uct_srqud_psn_t acked,
                                          uct_srqud_psn_t ack_psn)
{
    return uct_srqud_psn_lt(acked, ack_psn) && uct_srqud_psn_lt(ack_psn, next);
}


/* Time from @a then to @a now; 0 if @a then is later (a stamp taken after
 * the caller read the clock, e.g. by the async thread meanwhile) */
static inline uint64_t uct_srqud_time_since(uint64_t now, uint64_t then)
{
    return (now > then) ? (now - then) : 0;
}


/* Smoothed round trip and its variation (RFC 6298), in the caller's time
 * unit; srtt 0: no sample yet */
typedef struct uct_srqud_rtt {
    uint64_t srtt;
    uint64_t rttvar;
} uct_srqud_rtt_t;


static inline void uct_srqud_rtt_sample(uct_srqud_rtt_t *rtt, uint64_t sample)
{
    uint64_t err;

    if (sample == 0) {
        sample = 1;
    }
    if (rtt->srtt == 0) {
        rtt->srtt   = sample;
        rtt->rttvar = sample / 2;
        return;
    }
    err          = (rtt->srtt > sample) ? (rtt->srtt - sample) :
                                          (sample - rtt->srtt);
    rtt->rttvar  = rtt->rttvar - rtt->rttvar / 4 + err / 4;
    rtt->srtt    = rtt->srtt - rtt->srtt / 8 + sample / 8;
}


/* Retransmission timeout from the measured round trips, within [min, max].
 * min stays a floor: on a loaded host the receiver's progress, not the
 * wire, sets the time to an acknowledgement, and it varies more than the
 * samples show. */
static inline uint64_t uct_srqud_rtt_rto(const uct_srqud_rtt_t *rtt,
                                         uint64_t min, uint64_t max)
{
    uint64_t rto = rtt->srtt + 4 * rtt->rttvar;

    return (rto < min) ? min : (rto > max) ? max : rto;
}


/* RACK's reordering window (RFC 8985: min_rtt / 4 once reordering was
 * seen, else 0): a quarter of the smoothed round trip on a path that
 * @a reorders; 0 before the first sample */
static inline uint64_t uct_srqud_reo_wnd(const uct_srqud_rtt_t *rtt,
                                         int reorders)
{
    return reorders ? rtt->srtt / 4 : 0;
}


/* Exponential backoff of the retransmission timeout */
static inline uint64_t uct_srqud_rto_backoff(uint64_t rto, uint64_t max)
{
    return (rto >= max / 2) ? max : rto * 2;
}

#endif
