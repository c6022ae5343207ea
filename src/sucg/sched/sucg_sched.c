/*
 * Recursive doubling and ring allgather schedules.
 *
 * Recursive doubling (Thakur/Rabenseifner; the RDMA variant of Sur et al.,
 * HiPC'05) needs a power-of-two size. For other sizes we use the standard
 * "fold in" of the extra ranks, which keeps every transfer contiguous in at
 * most two ranges:
 *
 *   P = 2^L <= size < 2^(L+1), E = size - P extra ranks (P..size-1);
 *   extra rank P+i is paired with "partner" i (i < E).
 *   step 0      (pre):  extra P+i sends its block to partner i.
 *   step 1..L   (rd):   the P ranks run recursive doubling; step s = k+1
 *                       exchanges with rank ^ 2^k. A rank v owns, before
 *                       step k, the blocks of the 2^k-aligned group of v,
 *                       i.e. [b, b+2^k) with b = v & ~(2^k - 1), plus the
 *                       blocks of their extras [P+b, P+min(b+2^k, E)).
 *   step L+1    (post): partner i sends everything except block P+i to
 *                       extra P+i (two ranges: before and after it).
 *
 * Cost: L+2 steps with extras, L without (steps 0 and L+1 then are empty),
 * vs Bruck's ceil(log2 size) steps; we chose the fold-in because Bruck
 * rotates the result (a final local shift of the whole receive buffer, or
 * non-final placement of RDMA writes), while the fold-in writes every block
 * once at its final position, which is what zero-copy puts need.
 *
 * Ring: p-1 steps; in step s rank r sends block (r - s) to r+1 and receives
 * block (r - s - 1) from r-1 (mod p).
 */
#include "sucg_sched.h"

int sucg_sched_nsteps(sucg_sched_kind_t kind, int size)
{
    if (size <= 1) {
        return 0;
    }
    if (kind == SUCG_SCHED_RING) {
        return size - 1;
    }
    return sucg_sched_log2(size) + 2;
}

size_t sucg_sched_nominal_blocks(sucg_sched_kind_t kind, int size, int step)
{
    int L;

    if (kind == SUCG_SCHED_RING) {
        return 1;
    }
    L = sucg_sched_log2(size);
    if (step == 0) {
        return 1;
    } else if (step <= L) {
        return (size_t)1 << (step - 1);
    }
    return (size_t)size;
}

static void sucg_sched_add(sucg_range_t *r, int *n, uint32_t first,
                           uint32_t count)
{
    if (count > 0) {
        r[*n].first = first;
        r[*n].count = count;
        ++(*n);
    }
}

/* Blocks owned by power-of-two rank v before recursive doubling round k */
static void sucg_sched_rd_chunk(int P, int E, int v, int k, sucg_range_t *r,
                                int *n)
{
    int b   = v & ~((1 << k) - 1);
    int end = b + (1 << k);

    sucg_sched_add(r, n, b, 1u << k);
    if (b < E) {
        sucg_sched_add(r, n, P + b, (end < E ? end : E) - b);
    }
}

static void sucg_sched_rd_step(int size, int rank, int step,
                               sucg_sched_step_t *st)
{
    int L = sucg_sched_log2(size);
    int P = 1 << L;
    int E = size - P;
    int peer;

    if (step == 0) {
        if (rank >= P) {
            st->send_peer = rank - P;
            sucg_sched_add(st->send, &st->n_send, rank, 1);
        } else if (rank < E) {
            st->recv_peer = rank + P;
            sucg_sched_add(st->recv, &st->n_recv, rank + P, 1);
        }
    } else if (step <= L) {
        if (rank < P) {
            peer          = rank ^ (1 << (step - 1));
            st->send_peer = peer;
            st->recv_peer = peer;
            sucg_sched_rd_chunk(P, E, rank, step - 1, st->send, &st->n_send);
            sucg_sched_rd_chunk(P, E, peer, step - 1, st->recv, &st->n_recv);
        }
    } else if (step == L + 1) {
        /* everything but the extra's own block */
        if (rank < E) {
            st->send_peer = rank + P;
            sucg_sched_add(st->send, &st->n_send, 0, rank + P);
            sucg_sched_add(st->send, &st->n_send, rank + P + 1,
                           size - (rank + P) - 1);
        } else if (rank >= P) {
            st->recv_peer = rank - P;
            sucg_sched_add(st->recv, &st->n_recv, 0, rank);
            sucg_sched_add(st->recv, &st->n_recv, rank + 1, size - rank - 1);
        }
    }
}

static void sucg_sched_ring_step(int size, int rank, int step,
                                 sucg_sched_step_t *st)
{
    st->send_peer = (rank + 1) % size;
    st->recv_peer = (rank + size - 1) % size;
    sucg_sched_add(st->send, &st->n_send, (rank - step + size) % size, 1);
    sucg_sched_add(st->recv, &st->n_recv,
                   (rank - step - 1 + 2 * size) % size, 1);
}

void sucg_sched_step(sucg_sched_kind_t kind, int size, int rank, int step,
                     sucg_sched_step_t *st)
{
    st->send_peer = -1;
    st->recv_peer = -1;
    st->n_send    = 0;
    st->n_recv    = 0;
    if ((step < 0) || (step >= sucg_sched_nsteps(kind, size))) {
        return;
    }
    if (kind == SUCG_SCHED_RING) {
        sucg_sched_ring_step(size, rank, step, st);
    } else {
        sucg_sched_rd_step(size, rank, step, st);
    }
}
