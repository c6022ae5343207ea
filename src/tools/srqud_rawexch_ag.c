/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * srqud_rawexch's ag_* calls (see srqud_rawexch.c): an Allgather by
 * recursive doubling over RC, each step an eager send, a rendezvous read,
 * an RDMA write and a flag's, or one write with its flag last; the result
 * checked byte for byte after every size.
 */

#include "srqud_rawexch.h"

/* ag_*: rank R's block, byte I, in every rank's result */
static uint8_t ag_byte(int r, size_t i)
{
    return (uint8_t)(r * 131 + i * 7 + 1);
}

static volatile uint64_t *ag_flags(const xrank_t *x)
{
    return (volatile uint64_t*)(x->ag + x->ag_len);
}

/* ag_tail's slot (SEND 0) or write buffer (SEND 1) of step K, call CALL;
 * its offset in the region */
static size_t ag_tail_at(const xrank_t *x, int send, unsigned k,
                         uint64_t call)
{
    return x->tail_off + (((size_t)send * AG_STEPS + k) * 2 + (call & 1)) *
                         x->tail_len;
}

/* The result, flags and ag_tail's slots, open to the peers' writes and
 * reads */
int ag_open(xrank_t *x)
{
    const xopts_t *o = x->o;
    size_t        len;

    x->ag_len   = (o->np * max_size(o) + 63) & ~(size_t)63;
    x->tail_off = x->ag_len + 64;   /* after AG_STEPS flags */
    x->tail_max = (o->np / 2 * max_size(o) + 7) & ~(size_t)7;
    x->tail_len = (x->tail_max + sizeof(uint64_t) + 63) & ~(size_t)63;
    len         = ag_tail_at(x, 2, 0, 0);
    if (posix_memalign((void**)&x->ag, 4096, len))
        return fail("posix_memalign", ENOMEM);
    memset(x->ag, 0, len);
    x->agmr = ibv_reg_mr(x->r.pd, x->ag, len, IBV_ACCESS_LOCAL_WRITE |
                         IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    return x->agmr ? 0 : fail("ibv_reg_mr", errno);
}

/* Before a size's calls and its last check: our block, and the others'
 * spoiled (every byte differs from the right one) */
void ag_reset(xrank_t *x)
{
    size_t i;
    int    r;

    for (r = 0; r < x->o->np; r++) {
        for (i = 0; i < x->size; i++)
            x->ag[r * x->size + i] = (r == x->rank) ? ag_byte(r, i) :
                                     (uint8_t)~ag_byte(r, i);
    }
}

/* After a size's last call: every rank's block, byte for byte */
int ag_verify(const xrank_t *x, int call)
{
    size_t i;
    int    r;

    for (r = 0; r < x->o->np; r++) {
        for (i = 0; i < x->size; i++) {
            if (x->ag[r * x->size + i] != ag_byte(r, i))
                return fail_msg("%s %zu: rank %d's block, byte %zu: 0x%02x, "
                                "expected 0x%02x", x_names[call],
                                x->size, r, i, x->ag[r * x->size + i],
                                ag_byte(r, i));
        }
    }
    return 0;
}

/* An ag message: the step's partner and a call in the window only. Data
 * stays in its buffer until the call gets to its step */
int on_ag_recv(xrank_t *x, const struct ibv_wc *wc)
{
    uint32_t h[3], kind, step, w;
    uint8_t  *seen;

    if (wc->byte_len < AG_HDR)
        return fail_msg("receive of %u bytes", wc->byte_len);
    memcpy(h, slot_at(x, wc->wr_id), sizeof(h));
    kind = h[2] >> 8;
    step = h[2] & 0xff;
    w    = h[0] % WIN;
    if ((step >= x->steps) || (kind < AG_DATA) || (kind > AG_FIN) ||
        (h[1] != (uint32_t)(x->rank ^ (1 << step))) ||
        (h[0] - (uint32_t)x->call >= WIN))
        return fail_msg("call %" PRIu64 ": a message of kind %u, call %u, "
                        "step %u from rank %u", x->call, kind, h[0], step,
                        h[1]);
    if (wc->byte_len != AG_HDR + ((kind == AG_DATA) ? x->size << step : 0))
        return fail_msg("step %u: a message of %u bytes", step, wc->byte_len);
    if (kind == AG_DATA) {
        if (x->ag_slot[w][step])
            return fail_msg("call %u step %u: data twice", h[0], step);
        x->ag_slot[w][step] = (uint32_t)wc->wr_id + 1;
        return 0;
    }
    seen = (kind == AG_RTS) ? &x->ag_rts[w][step] : &x->ag_fin[w][step];
    if (*seen)
        return fail_msg("call %u step %u: kind %u twice", h[0], step, kind);
    *seen = 1;
    return rx_post(x, (unsigned)wc->wr_id);
}

/* An ag message of the running call to @a peer: KIND, STEP and LEN bytes
 * of the result at OFF (the data of ag_send) */
static int ag_msg(xrank_t *x, int peer, unsigned kind, unsigned step,
                  size_t off, size_t len)
{
    uint32_t           h[3] = {(uint32_t)x->call, (uint32_t)x->rank,
                               kind << 8 | step};
    struct ibv_send_wr wr;
    struct ibv_sge     sge[2];
    uint8_t            *b   = sq_next(x, peer, &wr);

    if (!b)
        return -1;
    memcpy(b, h, sizeof(h));
    sge[0]     = (struct ibv_sge){.addr = (uintptr_t)b, .length = AG_HDR,
                                  .lkey = x->mr->lkey};
    sge[1]     = (struct ibv_sge){.addr = (uintptr_t)(x->ag + off),
                                  .length = (uint32_t)len,
                                  .lkey = x->agmr->lkey};
    wr.sg_list = sge;
    wr.num_sge = len ? 2 : 1;
    if (AG_HDR + len <= x->max_inline)
        wr.send_flags |= IBV_SEND_INLINE;
    return send_post(x, peer, &wr);
}

/* Waits until *SEEN (set by on_ag_recv or a read's completion) */
static int ag_await(xrank_t *x, volatile uint8_t *seen)
{
    uint64_t idle = 0;

    while (!*seen) {
        if (progress(x, &idle))
            return -1;
    }
    return 0;
}

/* ag_send's step K: our blocks out, the partner's copied in from its
 * receive buffer, as an eager message lands */
static int ag_send_step(xrank_t *x, unsigned k, int peer, size_t mine,
                        size_t theirs, size_t len)
{
    uint32_t *slot = &x->ag_slot[x->call % WIN][k];
    uint64_t idle  = 0;

    if (ag_msg(x, peer, AG_DATA, k, mine, len))
        return -1;
    while (!*slot) {
        if (progress(x, &idle))
            return -1;
    }
    memcpy(x->ag + theirs, slot_at(x, *slot - 1) + AG_HDR, len);
    if (rx_post(x, *slot - 1))
        return -1;
    *slot = 0;
    return 0;
}

/* ag_rndv's step K: a request; on the partner's, a read of its blocks
 * straight into the result, then our answer; and the partner's answer
 * that it has read ours */
static int ag_rndv_step(xrank_t *x, unsigned k, int peer, size_t theirs,
                        size_t len)
{
    unsigned           q = qp_of(x, peer), w = x->call % WIN;
    struct ibv_sge     sge = {.addr = (uintptr_t)(x->ag + theirs),
                              .length = (uint32_t)len, .lkey = x->agmr->lkey};
    struct ibv_send_wr wr  = {.wr_id = READ_ID | q, .sg_list = &sge,
                              .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
                              .send_flags = IBV_SEND_SIGNALED,
                              .wr.rdma = {.remote_addr = x->ag_raddr[peer] +
                                                         theirs,
                                          .rkey = x->ag_rkey[peer]}};

    if (ag_msg(x, peer, AG_RTS, k, 0, 0) || ag_await(x, &x->ag_rts[w][k]) ||
        sq_room(x, q))
        return -1;
    x->ag_rts[w][k] = 0;
    x->ag_read_done = 0;
    x->inflight[q]++;
    if (send_post(x, peer, &wr) || ag_await(x, &x->ag_read_done) ||
        ag_msg(x, peer, AG_FIN, k, 0, 0) || ag_await(x, &x->ag_fin[w][k]))
        return -1;
    x->ag_fin[w][k] = 0;
    return 0;
}

/* ag_put's step K: our blocks written into the partner's result and the
 * call's number into its flag K, one post; then the partner's flag. A
 * flag may already hold a later call's number: that partner's blocks are
 * the same bytes */
static int ag_put_step(xrank_t *x, unsigned k, int peer, size_t mine,
                       size_t len)
{
    uint64_t           flag = x->call + 1, idle = 0;
    struct ibv_sge     sge[2];
    struct ibv_send_wr wr[2];
    int                i;

    for (i = 0; i < 2; i++) {
        if (!sq_next(x, peer, &wr[i]))
            return -1;
        wr[i].opcode         = IBV_WR_RDMA_WRITE;
        wr[i].sg_list        = &sge[i];
        wr[i].num_sge        = 1;
        wr[i].wr.rdma.rkey   = x->ag_rkey[peer];
    }
    sge[0] = (struct ibv_sge){.addr = (uintptr_t)(x->ag + mine),
                              .length = (uint32_t)len, .lkey = x->agmr->lkey};
    sge[1] = (struct ibv_sge){.addr = (uintptr_t)&flag,
                              .length = sizeof(flag)};
    wr[0].wr.rdma.remote_addr = x->ag_raddr[peer] + mine;
    wr[1].wr.rdma.remote_addr = x->ag_raddr[peer] + x->ag_len +
                                k * sizeof(flag);
    wr[1].send_flags         |= IBV_SEND_INLINE;
    if (len <= x->max_inline)
        wr[0].send_flags |= IBV_SEND_INLINE;
    wr[0].next = &wr[1];
    if (send_post(x, peer, &wr[0]))
        return -1;
    while (ag_flags(x)[k] < x->call + 1) {
        if (progress(x, &idle))
            return -1;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);   /* the data, after its flag */
    return 0;
}

/* ag_tail's step K: our blocks and the call's number, right after them
 * at the slot's fixed flag place, in one write into the partner's slot;
 * then the partner's flag in ours, and its blocks copied out. The flag's
 * place only ever holds this parity's earlier calls' numbers */
static int ag_tail_step(xrank_t *x, unsigned k, int peer, size_t mine,
                        size_t theirs, size_t len)
{
    size_t             room = (len + 7) & ~(size_t)7;
    size_t             src  = ag_tail_at(x, 1, k, x->call) + x->tail_max -
                              room;
    size_t             dst  = ag_tail_at(x, 0, k, x->call) + x->tail_max;
    uint64_t           flag = x->call + 1, idle = 0;
    volatile uint64_t  *got = (volatile uint64_t*)(x->ag + dst);
    struct ibv_sge     sge;
    struct ibv_send_wr wr;

    if (!sq_next(x, peer, &wr))
        return -1;
    memcpy(x->ag + src, x->ag + mine, len);
    memcpy(x->ag + src + room, &flag, sizeof(flag));
    sge        = (struct ibv_sge){.addr = (uintptr_t)(x->ag + src),
                                  .length = (uint32_t)(room + sizeof(flag)),
                                  .lkey = x->agmr->lkey};
    wr.opcode  = IBV_WR_RDMA_WRITE;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = x->ag_raddr[peer] + dst - room;
    wr.wr.rdma.rkey        = x->ag_rkey[peer];
    if (room + sizeof(flag) <= x->max_inline)
        wr.send_flags |= IBV_SEND_INLINE;
    if (send_post(x, peer, &wr))
        return -1;
    while (*got != flag) {
        if (progress(x, &idle))
            return -1;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);   /* the data, after its flag */
    memcpy(x->ag + theirs, x->ag + dst - room, len);
    return 0;
}

/* ag_* call x->call: recursive doubling's steps, each of the call's kind */
int one_ag(xrank_t *x, int call)
{
    unsigned k;
    int      peer;
    size_t   len, mine, theirs;
    int      rc;

    for (k = 0; k < x->steps; k++) {
        peer   = x->rank ^ (1 << k);
        len    = x->size << k;
        mine   = (size_t)((x->rank >> k) << k) * x->size;
        theirs = (size_t)((peer >> k) << k) * x->size;
        rc     = (call == X_AG_SEND) ?
                 ag_send_step(x, k, peer, mine, theirs, len) :
                 (call == X_AG_RNDV) ?
                 ag_rndv_step(x, k, peer, theirs, len) :
                 (call == X_AG_PUT) ? ag_put_step(x, k, peer, mine, len) :
                 ag_tail_step(x, k, peer, mine, theirs, len);
        if (rc)
            return -1;
    }
    next_call(x);
    return 0;
}
