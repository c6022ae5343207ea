/*
 * A staged step as one put whose last 8 bytes are its flag
 * (SUCG_STAGED_STEP=tail), for the RDMA executor (allgather_rdma.c).
 *
 * What it saves: a staged step by put is the data, an ordering point and
 * the flag; as an active message it is one message, but the receiver's CPU
 * runs a handler. Here it is one RDMA write that the receiver's CPU does
 * not see until it polls: over rc_verbs a UCP put ping-pong (which polls
 * the last bytes of the put, as this does) takes 0.72x a tagged message's
 * time at 8 B and 0.71x at 32 KB (contrib/bench/results/put-vs-tag.txt).
 *
 * What it assumes: that the receiver sees a put's last bytes no earlier
 * than the bytes before them. RDMA writes on InfiniBand and RoCE HCAs are
 * placed in order in practice, and ucx_perftest's put_lat relies on it,
 * but neither the IB specification nor UCP promises it; a peer whose
 * buffer is mapped here (a memcpy, then a release store) and UCP's
 * emulation over active messages (tcp with sucg's own endpoints) keep it.
 * srqud does not: its zero-copy puts (from 32 KB) land chunks in the order
 * they arrive and move misplaced ones home later. So a sender takes the
 * tail only to a peer whose buffer is mapped here or whose endpoint's RMA
 * lanes are not messages (sucg_lanes_rma_by_messages: srqud, tcp or no RMA
 * lane); to the others its steps go as they would without the option (one
 * active message, there one message too). The choice is the sender's: the
 * receiver of a step that may be a tail watches both the tail slot and the
 * step's data flag, which the other ways raise. Hence an option, not a
 * default.
 *
 * Layout (sucg_internal.h): step s of a collective lands in the receiver's
 * tail_rx[s] of that collective's half, the data packed range after range
 * and the flag (the sequence number) at the next multiple of 8 bytes; the
 * sender composes the
 * same bytes in its own tail_tx[s], the put's one contiguous source, which
 * stays untouched until the put completed (the executor waits for every
 * put before the collective ends, and the next one uses the other half).
 * Both ends compute the step's length from the schedule. A step longer
 * than SUCG_TAIL_MAX (a partner's in recursive doubling with extra ranks
 * carries its extra's blocks too, up to twice the nominal size) goes as
 * the group's staged steps would without this option.
 *
 * Why the receiver clears the slot: the flag's place moves with the step's
 * length, and the bytes of an earlier, longer step of the same half (user
 * data) may hold any value there, the new sequence number included. After
 * copying the data out the receiver zeroes the data and the flag, before
 * the peer can write that half again (the double-buffering argument of
 * allgather_rdma.c); sequence numbers start at 1, so 0 never matches.
 */
#include "sucg/core/sucg_internal.h"

#include <string.h>

/* Where a step of @a len bytes has its flag */
static size_t sucg_tail_flag_off(size_t len)
{
    return (len + 7) & ~(size_t)7;
}

/* Bytes of @a n ranges of @a m bytes per block */
static size_t sucg_tail_len(const sucg_range_t *r, int n, size_t m)
{
    size_t len = 0;
    int i;

    for (i = 0; i < n; ++i) {
        len += r[i].count * m;
    }
    return len;
}

int sucg_tail_step(sucg_coll_h coll, const sucg_sched_step_t *st, int recv)
{
    sucg_group_h g = coll->group;
    size_t m       = coll->params.count;

    /* both ends of the step compute the same length: the sender from its
     * send ranges, the receiver from the same ranges as its receive */
    return g->tail && (coll->step < coll->nstaged) &&
           (recv || g->peers[st->send_peer].tail_ok) &&
           ((size_t)coll->step < g->layout.ntail) &&
           (sucg_tail_flag_off(recv ? sucg_tail_len(st->recv, st->n_recv, m) :
                                      sucg_tail_len(st->send, st->n_send, m)) <=
            SUCG_TAIL_MAX);
}

ucs_status_t sucg_tail_send_step(sucg_coll_h coll, const sucg_sched_step_t *st)
{
    sucg_group_h g      = coll->group;
    sucg_peer_t *peer   = &g->peers[st->send_peer];
    size_t m            = coll->params.count;
    const uint8_t *src  = sucg_stage(g, coll->seq);
    size_t roff         = sucg_tail_off(g, coll->seq, coll->step, 0);
    uint8_t *tx         = g->buf + sucg_tail_off(g, coll->seq, coll->step, 1);
    /* mapped here: the peer's slot itself; else my slot, the put's source */
    uint8_t *dst        = (peer->buf_ptr != NULL) ? peer->buf_ptr + roff : tx;
    size_t len          = 0;
    ucp_request_param_t param;
    int i;

    g->ctx->stats.tail_steps++;
    for (i = 0; i < st->n_send; ++i) {
        memcpy(dst + len, src + st->send[i].first * m, st->send[i].count * m);
        len += st->send[i].count * m;
    }
    len = sucg_tail_flag_off(len);
    if (peer->buf_ptr != NULL) {
        /* stores: the flag a release store after the data */
        __atomic_store_n((uint64_t*)(dst + len), coll->seq, __ATOMIC_RELEASE);
        return UCS_OK;
    }

    memcpy(tx + len, &coll->seq, sizeof(uint64_t));
    sucg_coll_req_param(coll, &param, g->buf_memh);
    return sucg_coll_req_track(coll, ucp_put_nbx(peer->ep, tx,
                                                 len + sizeof(uint64_t),
                                                 peer->buf_addr + roff,
                                                 peer->buf_rkey, &param));
}

ucs_status_t sucg_tail_recv_step(sucg_coll_h coll, const sucg_sched_step_t *st)
{
    sucg_group_h g  = coll->group;
    size_t m        = coll->params.count;
    uint8_t *rx     = g->buf + sucg_tail_off(g, coll->seq, coll->step, 0);
    uint8_t *stage  = sucg_stage(g, coll->seq);
    size_t len      = sucg_tail_flag_off(sucg_tail_len(st->recv, st->n_recv,
                                                       m));
    size_t off      = 0;
    int i;

    if (sucg_flag_is(sucg_data_flag(g, coll->seq, coll->step), coll->seq)) {
        return UCS_OK;   /* the sender took another way (its data flag) */
    }
    if (!sucg_flag_is((volatile uint64_t*)(rx + len), coll->seq)) {
        return UCS_INPROGRESS;
    }
    for (i = 0; i < st->n_recv; ++i) {
        memcpy(stage + st->recv[i].first * m, rx + off, st->recv[i].count * m);
        off += st->recv[i].count * m;
    }
    memset(rx, 0, len + sizeof(uint64_t));
    return UCS_OK;
}
