/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Reliability over UD: pure logic of sequence numbers, windows and timers,
 * unit-tested on the host. The policy is go-back-N: the receiver delivers
 * only the next expected packet, drops anything ahead of it and answers a
 * gap with a NACK; the sender resends from the first unacknowledged packet
 * on a NACK or when its retransmission timer expires. Out-of-order arrival
 * is rare on one UD path, and go-back-N needs no reorder buffer, so receive
 * memory per peer stays constant.
 */

#ifndef UCT_SRQUD_REL_H_
#define UCT_SRQUD_REL_H_

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


typedef enum {
    UCT_SRQUD_RX_DELIVER,    /* the next expected packet */
    UCT_SRQUD_RX_DUPLICATE,  /* already delivered: drop, re-acknowledge */
    UCT_SRQUD_RX_GAP         /* ahead of the expected one: drop, NACK */
} uct_srqud_rx_verdict_t;


static inline uct_srqud_rx_verdict_t
uct_srqud_rx_classify(uct_srqud_psn_t expected, uct_srqud_psn_t psn)
{
    if (psn == expected) {
        return UCT_SRQUD_RX_DELIVER;
    }
    return uct_srqud_psn_lt(psn, expected) ? UCT_SRQUD_RX_DUPLICATE :
                                             UCT_SRQUD_RX_GAP;
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


/* Exponential backoff of the retransmission timeout */
static inline uint64_t uct_srqud_rto_backoff(uint64_t rto, uint64_t max)
{
    return (rto >= max / 2) ? max : rto * 2;
}

#endif
