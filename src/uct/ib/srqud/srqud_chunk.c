/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#include "srqud_chunk.h"

#include <stdlib.h>
#include <string.h>


#define BIT_WORD(_i)  ((_i) / 64)
#define BIT_MASK(_i)  (1ull << ((_i) % 64))

static inline int uct_srqud_chunk_bit_test(const uint64_t *b, uint32_t i)
{
    return !!(b[BIT_WORD(i)] & BIT_MASK(i));
}

static inline void uct_srqud_chunk_bit_set(uint64_t *b, uint32_t i)
{
    b[BIT_WORD(i)] |= BIT_MASK(i);
}

static inline void uct_srqud_chunk_bit_clear(uint64_t *b, uint32_t i)
{
    b[BIT_WORD(i)] &= ~BIT_MASK(i);
}


int uct_srqud_chunk_rx_init(uct_srqud_chunk_rx_t *rx, uint32_t nchunks,
                            uint32_t depth)
{
    size_t words = (nchunks + 63) / 64 + 1;

    memset(rx, 0, sizeof(*rx));
    rx->nchunks = nchunks;
    rx->depth   = depth;
    rx->valid   = calloc(words, sizeof(uint64_t));
    rx->posted  = calloc(words, sizeof(uint64_t));
    rx->ring      = calloc(depth ? depth : 1, sizeof(uint32_t));
    rx->mis_slot  = calloc(depth ? depth : 1, sizeof(uint32_t));
    rx->mis_chunk = calloc(depth ? depth : 1, sizeof(uint32_t));
    if ((rx->valid == NULL) || (rx->posted == NULL) || (rx->ring == NULL) ||
        (rx->mis_slot == NULL) || (rx->mis_chunk == NULL)) {
        uct_srqud_chunk_rx_cleanup(rx);
        return -1;
    }
    return 0;
}


void uct_srqud_chunk_rx_cleanup(uct_srqud_chunk_rx_t *rx)
{
    free(rx->valid);
    free(rx->posted);
    free(rx->ring);
    free(rx->mis_slot);
    free(rx->mis_chunk);
    rx->valid     = NULL;
    rx->posted    = NULL;
    rx->ring      = NULL;
    rx->mis_slot  = NULL;
    rx->mis_chunk = NULL;
}


static void uct_srqud_chunk_rx_push(uct_srqud_chunk_rx_t *rx, uint32_t chunk)
{
    rx->ring[(rx->head + rx->count) % rx->depth] = chunk;
    ++rx->count;
    uct_srqud_chunk_bit_set(rx->posted, chunk);
}


uint32_t uct_srqud_chunk_rx_plan(uct_srqud_chunk_rx_t *rx, uint32_t *new_chunks,
                                 uint32_t max)
{
    uint32_t n = 0, c;

    /* chunks already posted once and not in place: lost or misplaced */
    while ((rx->scan < rx->next_new) && uct_srqud_chunk_bit_test(rx->valid, rx->scan)) {
        ++rx->scan;
    }
    for (c = rx->scan; (c < rx->next_new) && (rx->count < rx->depth) &&
                       (n < max); ++c) {
        if (!uct_srqud_chunk_bit_test(rx->valid, c) && !uct_srqud_chunk_bit_test(rx->posted, c)) {
            uct_srqud_chunk_rx_push(rx, c);
            new_chunks[n++] = c;
        }
    }

    /* then the ones never posted, in order */
    while ((rx->next_new < rx->nchunks) && (rx->count < rx->depth) &&
           (n < max)) {
        uct_srqud_chunk_rx_push(rx, rx->next_new);
        new_chunks[n++] = rx->next_new++;
    }
    return n;
}


uint32_t uct_srqud_chunk_rx_complete(uct_srqud_chunk_rx_t *rx, uint32_t imm,
                                     int length_ok, int *in_place)
{
    uint32_t chunk;

    if (rx->count == 0) {
        *in_place = 0;
        return UINT32_MAX;
    }

    chunk    = rx->ring[rx->head];
    rx->head = (rx->head + 1) % rx->depth;
    --rx->count;
    uct_srqud_chunk_bit_clear(rx->posted, chunk);

    *in_place = (imm == chunk) && length_ok;
    if (*in_place && !uct_srqud_chunk_bit_test(rx->valid, chunk)) {
        uct_srqud_chunk_bit_set(rx->valid, chunk);
        ++rx->valid_count;
    } else if (!*in_place && length_ok && (imm < rx->nchunks) &&
               (rx->mis_count < rx->depth)) {
        rx->mis_slot[rx->mis_count]  = chunk;
        rx->mis_chunk[rx->mis_count] = imm;
        ++rx->mis_count;
    }
    return chunk;
}


/* The index of the not-yet-done move reading @a slot, or -1 */
static int uct_srqud_chunk_reader(const uct_srqud_chunk_rx_t *rx,
                                  const uint8_t *done, uint32_t slot)
{
    uint32_t i;

    for (i = 0; i < rx->mis_count; ++i) {
        if (!done[i] && (rx->mis_slot[i] == slot)) {
            return (int)i;
        }
    }
    return -1;
}


/* Every move whose chunk's place holds nothing still to be moved, until
 * none is left (chains unwind from their free end); returns the new count
 * of @a moves */
static uint32_t uct_srqud_chunk_settle_chains(uct_srqud_chunk_rx_t *rx,
                                              uint8_t *done,
                                              uct_srqud_chunk_move_t *moves,
                                              uint32_t n)
{
    uint32_t i, c;
    int progress;

    do {
        progress = 0;
        for (i = 0; i < rx->mis_count; ++i) {
            c = rx->mis_chunk[i];
            if (done[i] || uct_srqud_chunk_bit_test(rx->valid, c)) {
                done[i] = 1; /* a duplicate moved there already */
                continue;
            }
            /* the place still holds a misplaced chunk to move first */
            if (uct_srqud_chunk_reader(rx, done, c) >= 0) {
                continue;
            }
            moves[n].from_slot  = rx->mis_slot[i];
            moves[n].chunk      = c;
            moves[n].temp_chunk = 0;
            ++n;
            uct_srqud_chunk_bit_set(rx->valid, c);
            ++rx->valid_count;
            done[i]  = 1;
            progress = 1;
        }
    } while (progress);
    return n;
}


/* Does following "the move whose slot is my chunk's place" from move @a i
 * come back to it (a cycle), rather than end? */
static int uct_srqud_chunk_is_cycle(const uct_srqud_chunk_rx_t *rx,
                                    const uint8_t *done, uint32_t i)
{
    uint32_t steps, j = i;
    int next;

    for (steps = 0; steps < rx->mis_count; ++steps) {
        next = uct_srqud_chunk_reader(rx, done, rx->mis_chunk[j]);
        if (next < 0) {
            return 0;
        }
        if ((uint32_t)next == i) {
            return 1;
        }
        j = next;
    }
    return 0;
}


uint32_t uct_srqud_chunk_rx_settle(uct_srqud_chunk_rx_t *rx,
                                   uct_srqud_chunk_move_t *moves)
{
    uint8_t done[rx->mis_count + 1];
    uint32_t i, n, c;

    /* a move is possible if its chunk is not in place, has no receive
     * posted (no packet can land there any more), and the slot it landed
     * in is not also in place (it is: a stale duplicate) */
    for (i = 0; i < rx->mis_count; ++i) {
        c       = rx->mis_chunk[i];
        done[i] = uct_srqud_chunk_bit_test(rx->valid, c) || uct_srqud_chunk_bit_test(rx->posted, c) ||
                  uct_srqud_chunk_bit_test(rx->valid, rx->mis_slot[i]);
    }

    n = uct_srqud_chunk_settle_chains(rx, done, moves, 0);

    /* What is left is cycles: each chunk's place holds the next one's.
     * One goes to the temporary, which frees its slot for the chunk that
     * belongs there, and so on around; it goes home last. */
    for (i = 0; i < rx->mis_count; ++i) {
        if (done[i] || !uct_srqud_chunk_is_cycle(rx, done, i)) {
            continue;
        }
        c                   = rx->mis_chunk[i];
        moves[n].from_slot  = rx->mis_slot[i];
        moves[n].chunk      = UCT_SRQUD_CHUNK_TEMP;
        moves[n].temp_chunk = c;
        ++n;
        done[i] = 1;
        n       = uct_srqud_chunk_settle_chains(rx, done, moves, n);
        /* The cycle unwound: what held c's place has left it. Unless a
         * duplicate of c, elsewhere in the round, went home meanwhile (on
         * a wire that reorders and resends, the same chunk lands twice):
         * then the temporary is dropped, c must not count twice. */
        if (uct_srqud_chunk_bit_test(rx->valid, c) ||
            (uct_srqud_chunk_reader(rx, done, c) >= 0)) {
            continue;
        }
        moves[n].from_slot  = UCT_SRQUD_CHUNK_TEMP;
        moves[n].chunk      = c;
        moves[n].temp_chunk = c;
        ++n;
        uct_srqud_chunk_bit_set(rx->valid, c);
        ++rx->valid_count;
    }

    rx->mis_count = 0;
    return n;
}


int uct_srqud_chunk_rx_missing(const uct_srqud_chunk_rx_t *rx,
                               uint32_t *first_p, uint32_t *last_p)
{
    uint32_t first = rx->scan, last = rx->nchunks;

    if (uct_srqud_chunk_rx_done(rx)) {
        return 0;
    }
    while (uct_srqud_chunk_bit_test(rx->valid, first)) {
        ++first;
    }
    while (uct_srqud_chunk_bit_test(rx->valid, last - 1)) {
        --last;
    }
    *first_p = first;
    *last_p  = last - 1;
    return 1;
}


uint32_t uct_srqud_chunk_rx_order(const uct_srqud_chunk_rx_t *rx,
                                  uint32_t *chunks, uint32_t max)
{
    uint32_t i, n = (rx->count < max) ? rx->count : max;

    for (i = 0; i < n; ++i) {
        chunks[i] = rx->ring[(rx->head + i) % rx->depth];
    }
    return n;
}


uint32_t uct_srqud_chunk_encode(const uint32_t *chunks, uint32_t num,
                                uct_srqud_chunk_range_t *ranges,
                                uint32_t max_ranges, uint32_t *num_ranges_p)
{
    uint32_t i, r = 0;

    for (i = 0; i < num; ++i) {
        if ((r > 0) &&
            (chunks[i] == ranges[r - 1].start + ranges[r - 1].count)) {
            ++ranges[r - 1].count;
            continue;
        }
        if (r == max_ranges) {
            break;
        }
        ranges[r].start = chunks[i];
        ranges[r].count = 1;
        ++r;
    }
    *num_ranges_p = r;
    return i;
}


uint32_t uct_srqud_chunk_ranges_check(const uct_srqud_chunk_range_t *ranges,
                                      uint32_t num_ranges, uint32_t nchunks,
                                      uint32_t max_total)
{
    uint64_t total = 0;
    uint32_t i;

    for (i = 0; i < num_ranges; ++i) {
        if ((ranges[i].count == 0) || (ranges[i].start >= nchunks) ||
            (ranges[i].count > nchunks - ranges[i].start)) {
            return 0;
        }
        total += ranges[i].count;
    }
    return (total > max_total) ? 0 : (uint32_t)total;
}


void uct_srqud_chunk_ranges_expand(const uct_srqud_chunk_range_t *ranges,
                                   uint32_t num_ranges, uint32_t *chunks)
{
    uint32_t i, j, n = 0;

    for (i = 0; i < num_ranges; ++i) {
        for (j = 0; j < ranges[i].count; ++j) {
            chunks[n++] = ranges[i].start + j;
        }
    }
}
