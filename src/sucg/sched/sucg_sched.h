/*
 * Allgather schedules as pure functions of (size, rank, step).
 *
 * A schedule says, for one rank and one step, to whom it sends which blocks
 * and from whom it receives which blocks. Blocks are in units of the
 * per-rank contribution (block i = rank i's data, at rbuf + i * count), and
 * every transfer lands at its final position, so the executors (RDMA or
 * tagged) only translate block ranges to byte ranges.
 *
 * Both executors and the unit tests rely on two properties, checked by
 * test/sucg/unit/test_sched.cc for size 1..33 (and more):
 *   - pairing: in step s, rank a sends ranges R to b iff b receives R from a
 *     in the same step s (so step numbers identify transfers on both sides);
 *   - causality: what a rank sends in step s it owns before step s.
 * No dynamic state, no allocation: a step is recomputed when needed.
 */
#ifndef SUCG_SCHED_H_
#define SUCG_SCHED_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SUCG_SCHED_MAX_RANGES 2

typedef struct sucg_range {
    uint32_t first;   /* first block */
    uint32_t count;   /* number of blocks */
} sucg_range_t;

typedef struct sucg_sched_step {
    int          send_peer;   /* -1: nothing to send in this step */
    int          recv_peer;   /* -1: nothing to receive */
    int          n_send;
    int          n_recv;
    sucg_range_t send[SUCG_SCHED_MAX_RANGES];
    sucg_range_t recv[SUCG_SCHED_MAX_RANGES];
} sucg_sched_step_t;

typedef enum {
    SUCG_SCHED_RD,    /* recursive doubling, extra ranks folded in */
    SUCG_SCHED_RING
} sucg_sched_kind_t;

/* floor(log2(size)) and the largest power of two <= size */
static inline int sucg_sched_log2(int size)
{
    int l = 0;
    while ((2 << l) <= size) {
        ++l;
    }
    return l;
}

/* Number of steps; the same on every rank (some steps are empty for some) */
int    sucg_sched_nsteps(sucg_sched_kind_t kind, int size);

/* Fill @a step for @a rank */
void   sucg_sched_step(sucg_sched_kind_t kind, int size, int rank, int step,
                       sucg_sched_step_t *st);

/*
 * Nominal size of a step in blocks: a function of (kind, size, step) only,
 * never of the rank, so every rank takes the same staged/zero-copy decision
 * for a given transfer. It is the size of the exchanged block of the
 * algorithm description (2^(k-1) * m in recursive doubling step k).
 */
size_t sucg_sched_nominal_blocks(sucg_sched_kind_t kind, int size, int step);

/* Number of blocks in the ranges */
static inline size_t sucg_sched_blocks(const sucg_range_t *r, int n)
{
    size_t b = 0;
    int i;
    for (i = 0; i < n; ++i) {
        b += r[i].count;
    }
    return b;
}

#ifdef __cplusplus
}
#endif

#endif
