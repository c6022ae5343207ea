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
 * tail_rx[s] of that collective's half: the flag (the sequence number) at
 * the slot's fixed place SUCG_TAIL_MAX, the data packed range after range
 * just before it (from the multiple of 8 bytes that leaves it room).
 * The sender composes the same bytes in its own tail_tx[s], the put's one
 * contiguous source, which stays untouched until the put completed (the
 * executor waits for every put before the collective ends, and the next
 * one uses the other half). Both ends compute the step's length from the
 * schedule. A step longer than SUCG_TAIL_MAX (a partner's in recursive
 * doubling with extra ranks carries its extra's blocks too, up to twice
 * the nominal size) goes as the group's staged steps would without this
 * option.
 *
 * Why the flag has a fixed place: wherever else the flag lay, bytes of an
 * earlier step of the same half (user data) could hold any value there,
 * the new sequence number included, and the receiver would have to clear
 * the whole slot after every step. At a fixed place it only ever holds an
 * earlier sequence number of this half (or 0, as the buffer starts), and
 * sequence numbers do not repeat: nothing to clear.
 *
 * The receiver copies a step's data into its staging half, whence later
 * steps send it; once no later staged step of this rank sends anything
 * (its last exchange, or an extra rank's result), straight into rbuf (the
 * executor's unstage then skips that step).
 */
#include "sucg/core/sucg_internal.h"

#include <string.h>

/* Room a step of @a len bytes takes before the flag */
static size_t sucg_tail_room(size_t len)
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

/* Does no staged step after this one send from staging? */
static int sucg_tail_sends_done(sucg_coll_h coll)
{
    sucg_group_h g = coll->group;
    sucg_sched_step_t st;
    int s;

    for (s = coll->step + 1; s < coll->nstaged; ++s) {
        sucg_sched_step(coll->kind, g->size, g->rank, s, &st);
        if (st.send_peer >= 0) {
            return 0;
        }
    }
    return 1;
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
           (sucg_tail_room(recv ? sucg_tail_len(st->recv, st->n_recv, m) :
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
    /* the data starts where it ends at the flag */
    size_t room         = sucg_tail_room(sucg_tail_len(st->send, st->n_send,
                                                       m));
    size_t start        = SUCG_TAIL_MAX - room;
    /* mapped here: the peer's slot itself; else my slot, the put's source */
    uint8_t *dst        = (peer->buf_ptr != NULL) ? peer->buf_ptr + roff : tx;
    size_t len          = 0;
    ucp_request_param_t param;
    int i;

    g->ctx->stats.tail_steps++;
    for (i = 0; i < st->n_send; ++i) {
        memcpy(dst + start + len, src + st->send[i].first * m,
               st->send[i].count * m);
        len += st->send[i].count * m;
    }
    if (peer->buf_ptr != NULL) {
        /* stores: the flag a release store after the data */
        __atomic_store_n((uint64_t*)(dst + SUCG_TAIL_MAX), coll->seq,
                         __ATOMIC_RELEASE);
        return UCS_OK;
    }

    memcpy(tx + SUCG_TAIL_MAX, &coll->seq, sizeof(uint64_t));
    sucg_coll_req_param(coll, &param, g->buf_memh);
    return sucg_coll_req_track(coll, ucp_put_nbx(peer->ep, tx + start,
                                                 room + sizeof(uint64_t),
                                                 peer->buf_addr + roff + start,
                                                 peer->buf_rkey, &param));
}

ucs_status_t sucg_tail_recv_step(sucg_coll_h coll, const sucg_sched_step_t *st)
{
    sucg_group_h g  = coll->group;
    size_t m        = coll->params.count;
    uint8_t *rx     = g->buf + sucg_tail_off(g, coll->seq, coll->step, 0);
    uint8_t *dst    = sucg_stage(g, coll->seq);
    size_t off      = SUCG_TAIL_MAX -
                      sucg_tail_room(sucg_tail_len(st->recv, st->n_recv, m));
    int i;

    if (sucg_flag_is(sucg_data_flag(g, coll->seq, coll->step), coll->seq)) {
        return UCS_OK;   /* the sender took another way (its data flag) */
    }
    if (!sucg_flag_is((volatile uint64_t*)(rx + SUCG_TAIL_MAX), coll->seq)) {
        return UCS_INPROGRESS;
    }
    /* nothing sends from staging any more: rbuf at once, not staging and
     * a copy from there at the end */
    if (sucg_tail_sends_done(coll)) {
        dst            = coll->params.rbuf;
        coll->in_rbuf |= UCS_BIT(coll->step);
    }
    for (i = 0; i < st->n_recv; ++i) {
        memcpy(dst + st->recv[i].first * m, rx + off, st->recv[i].count * m);
        off += st->recv[i].count * m;
    }
    return UCS_OK;
}
