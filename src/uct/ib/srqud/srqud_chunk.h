/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Zero-copy over UD (Koop, Sur, Panda, Cluster'07): pure logic, unit-tested
 * on the host.
 *
 * The data sink posts the destination buffer on a QP of its own, one
 * receive per MTU-sized chunk. A UD receive queue hands arriving packets to
 * its work requests in posting order, whatever the packet: so if chunk 5 is
 * lost, chunk 6 lands in the buffer posted for chunk 5. Each chunk carries
 * its number in the immediate data, so the sink knows, per completion,
 * whether the packet landed in its own place ("valid") or elsewhere
 * ("misplaced"). After a round it asks the source to send again exactly
 * what is missing, in the order of the receives then posted: the ones left
 * over from the round, then newly posted ones. The paper resent the whole
 * message; resending only what is missing was its future work.
 */

#ifndef UCT_SRQUD_CHUNK_H_
#define UCT_SRQUD_CHUNK_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Is [addr, addr + len) inside [start, start + size)? Never wraps. */
static inline int uct_srqud_range_within(uint64_t start, uint64_t size,
                                         uint64_t addr, uint64_t len)
{
    return (addr >= start) && (len <= size) && ((addr - start) <= (size - len));
}


/* Chunks of a transfer of @a length bytes cut in @a chunk-byte pieces */
static inline uint32_t uct_srqud_chunk_count(uint64_t length, uint32_t chunk)
{
    return (length + chunk - 1) / chunk;
}


/* Bytes of chunk @a n: the last one may be short */
static inline size_t uct_srqud_chunk_len(uint64_t length, uint32_t chunk,
                                         uint32_t n)
{
    uint64_t rest = length - (uint64_t)n * chunk;

    return (rest < chunk) ? rest : chunk;
}


/* Receive side of one transfer: where each chunk stands, and the receives
 * posted on the QP in order */
typedef struct uct_srqud_chunk_rx {
    uint32_t  nchunks;     /* chunks of the transfer */
    uint32_t  valid_count; /* chunks whose data is in place */
    uint64_t  *valid;      /* bitmap: data in place */
    uint64_t  *posted;     /* bitmap: a receive for it is on the QP */
    uint32_t  *ring;       /* the posted receives: chunk of each, in order */
    uint32_t  depth;       /* receives the QP holds */
    uint32_t  head;        /* ring index of the oldest posted receive */
    uint32_t  count;       /* posted receives not completed */
    uint32_t  next_new;    /* first chunk never posted */
    uint32_t  scan;        /* first chunk that may be missing */
    /* misplaced packets since the last settle: which receive (slot) got
     * which chunk */
    uint32_t  *mis_slot;
    uint32_t  *mis_chunk;
    uint32_t  mis_count;
} uct_srqud_chunk_rx_t;


/* A local copy that puts a misplaced chunk where it belongs. A cycle of
 * chunks that took each other's receives (a reordering wire makes them)
 * goes through a one-chunk temporary: the first chunk of the cycle is
 * saved there (chunk == UCT_SRQUD_CHUNK_TEMP, from_slot its slot), the
 * others move home, and it goes home last (from_slot ==
 * UCT_SRQUD_CHUNK_TEMP). The length of either is the chunk's own, so the
 * save names it in temp_chunk. */
#define UCT_SRQUD_CHUNK_TEMP  UINT32_MAX

typedef struct uct_srqud_chunk_move {
    uint32_t from_slot;    /* the receive buffer it landed in, or TEMP */
    uint32_t chunk;        /* where it belongs, or TEMP */
    uint32_t temp_chunk;   /* a save to TEMP: the chunk saved */
} uct_srqud_chunk_move_t;


/* 0, or -1 if out of memory */
int uct_srqud_chunk_rx_init(uct_srqud_chunk_rx_t *rx, uint32_t nchunks,
                            uint32_t depth);

void uct_srqud_chunk_rx_cleanup(uct_srqud_chunk_rx_t *rx);


/**
 * Fill the QP up to its depth: missing chunks first (consumed by a
 * misplaced or lost packet earlier), then chunks never posted. Their
 * numbers are written to @a new_chunks (at most @a max), in posting order.
 * @return how many receives to post now.
 */
uint32_t uct_srqud_chunk_rx_plan(uct_srqud_chunk_rx_t *rx, uint32_t *new_chunks,
                                 uint32_t max);


/**
 * The oldest posted receive completed with a packet carrying chunk number
 * @a imm; @a length_ok: its length is that chunk's. Returns the chunk the
 * receive was posted for, and sets *in_place if the packet was that chunk.
 * A misplaced packet is remembered for uct_srqud_chunk_rx_settle().
 */
uint32_t uct_srqud_chunk_rx_complete(uct_srqud_chunk_rx_t *rx, uint32_t imm,
                                     int length_ok, int *in_place);


/**
 * End of a round (no packet can land in the buffers it names any more):
 * misplaced chunks whose own place is free (not in place, no receive
 * posted for it) are moved there by a local copy instead of being resent;
 * moves are returned in an order that never overwrites data still to be
 * moved (chains backwards; a cycle through the temporary, see above). The
 * caller copies; the chunks are then counted in place.
 * @return the number of moves written to @a moves (at most twice the
 *         misplaced count of the round, which @a moves must hold:
 *         UCT_SRQUD_CHUNK_MOVES_MAX(depth)).
 */
uint32_t uct_srqud_chunk_rx_settle(uct_srqud_chunk_rx_t *rx,
                                   uct_srqud_chunk_move_t *moves);

/* Moves one settle may return for a QP of @a depth receives: every
 * misplaced chunk once, and a save and a restore per cycle (of 2 or more) */
#define UCT_SRQUD_CHUNK_MOVES_MAX(_depth)  (2 * (_depth))


/* Chunks to request from the source, in the order of the posted receives:
 * the whole ring. Returns how many were written (at most @a max). */
uint32_t uct_srqud_chunk_rx_order(const uct_srqud_chunk_rx_t *rx,
                                  uint32_t *chunks, uint32_t max);


static inline int uct_srqud_chunk_rx_done(const uct_srqud_chunk_rx_t *rx)
{
    return rx->valid_count == rx->nchunks;
}


/**
 * The chunks not in place yet lie within [*first_p, *last_p].
 * @return 0 if none is missing.
 */
int uct_srqud_chunk_rx_missing(const uct_srqud_chunk_rx_t *rx,
                               uint32_t *first_p, uint32_t *last_p);


/* Fewest receives a round asks for, however lossy the path */
#define UCT_SRQUD_CHUNK_WINDOW_MIN  16

/* Receives added per round once the window has been cut (probing up to
 * where the path overflowed, as TCP's congestion avoidance) */
#define UCT_SRQUD_CHUNK_WINDOW_STEP 2


/**
 * How many receives a round of the sink asks for. UD has no flow control:
 * a round is one burst from the source, and a burst longer than a queue on
 * the path (a switch buffer, a shaper) loses its tail, and the source's
 * ZFIN behind it; each lost chunk shifts every later one out of place, so
 * an oversized round gains little and is sent again.
 */
typedef struct uct_srqud_chunk_wnd {
    uint32_t window;  /* the next round asks for this many */
    uint32_t thresh;  /* half the window of the last overflow */
} uct_srqud_chunk_wnd_t;


/* The whole receive queue, until the path shows it cannot take it */
static inline void uct_srqud_chunk_wnd_init(uct_srqud_chunk_wnd_t *wnd,
                                            uint32_t max)
{
    wnd->window = max;
    wnd->thresh = max;
}


/**
 * After a round that asked for @a asked chunks and got @a arrived. A round
 * that lost more than an eighth, or whose ZFIN never came (@a fin_lost: it
 * ended by the sink's timer with receives left), halves the window; random
 * loss below that (resent selectively anyway) does not shrink it. A round
 * that used the window and lost nothing much grows it: doubling back up to
 * the threshold, then a few receives per round.
 */
static inline void uct_srqud_chunk_wnd_update(uct_srqud_chunk_wnd_t *wnd,
                                              uint32_t asked, uint32_t arrived,
                                              int fin_lost, uint32_t max)
{
    uint32_t min = (max < UCT_SRQUD_CHUNK_WINDOW_MIN) ?
                   max : UCT_SRQUD_CHUNK_WINDOW_MIN;
    uint32_t w;

    if (asked == 0) {
        return;
    }
    if ((arrived < asked) &&
        (fin_lost || ((asked - arrived) * 8 > asked))) {
        w           = wnd->window / 2;
        wnd->window = (w < min) ? min : w;
        wnd->thresh = wnd->window;
        return;
    }
    if (asked < wnd->window) {
        return; /* the transfer's tail: says nothing about a larger round */
    }
    w = (wnd->window < wnd->thresh) ?
        ((2 * wnd->window < wnd->thresh) ? 2 * wnd->window : wnd->thresh) :
        wnd->window + UCT_SRQUD_CHUNK_WINDOW_STEP;
    wnd->window = (w > max) ? max : w;
}


/**
 * Encode a list of chunk numbers as ranges (start, count): at most
 * @a max_ranges. Returns the number of list entries encoded (a prefix).
 */
typedef struct uct_srqud_chunk_range {
    uint32_t start;
    uint32_t count;
} uct_srqud_chunk_range_t;

uint32_t uct_srqud_chunk_encode(const uint32_t *chunks, uint32_t num,
                                uct_srqud_chunk_range_t *ranges,
                                uint32_t max_ranges, uint32_t *num_ranges_p);


/**
 * Check ranges that a peer sent: each one non-empty and within the
 * transfer's @a nchunks, and at most @a max_total chunks in all.
 * @return the number of chunks they name, 0 if they are not valid.
 */
uint32_t uct_srqud_chunk_ranges_check(const uct_srqud_chunk_range_t *ranges,
                                      uint32_t num_ranges, uint32_t nchunks,
                                      uint32_t max_total);

/* The chunk numbers of checked ranges, in order, into @a chunks */
void uct_srqud_chunk_ranges_expand(const uct_srqud_chunk_range_t *ranges,
                                   uint32_t num_ranges, uint32_t *chunks);

#ifdef __cplusplus
}
#endif

#endif
