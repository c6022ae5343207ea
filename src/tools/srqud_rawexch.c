/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * srqud_rawexch: what the device itself makes of an MPI exchange among N
 * processes, with plain verbs (no UCX, no reliability of our own): the
 * bound a UD transport is held to where ranks share the cores.
 *
 * srqud_rawperf's ud_lat and rc_lat compare one UD round trip with one RC
 * round trip between two spinning processes. With 4 or 8 ranks on 2 cores
 * the time of a call is mostly the scheduler's, and what a rank's message
 * costs the kernel (RC: the responder and its acknowledgements, in the
 * kernel; UD: a route lookup per packet) decides how much of the other
 * ranks' time it takes. This program runs the calls' own traffic:
 *
 *   sendrecv   each rank sends to rank+1 and receives from rank-1
 *   alltoall   each rank sends to every other rank and receives from each
 *   bcast      rank 0's message down a binary tree (rank r's children are
 *              2r+1 and 2r+2): the tree Open MPI's tuned Bcast takes
 *              below 64 B at 4 to 15 ranks and up to 2 KB at 4 to 7. A
 *              parent runs at most FC_WIN calls ahead of a child, which
 *              returns a credit every FC_EVERY calls: in a loop of Bcasts
 *              nothing else stops the root, and a UD receive with no
 *              buffer is a lost packet (a transport's window, here one
 *              8-byte message per FC_EVERY calls, over UD and RC alike)
 *   rdbl       recursive doubling (2^k ranks): in step k rank r and r^2^k
 *              swap one message, the steps of Open MPI's tuned Allgather
 *              below 32 ranks and of its Allreduce at 4 to 15 ranks up to
 *              8 KB, and of MPICH's short ones
 *
 * and, over RC, an Allgather by recursive doubling (2^k ranks: in step k
 * rank r and r^2^k swap the 2^k blocks each holds), its steps as MPI and
 * sucg move them, to tell what the device allows an RDMA step to save:
 *
 *   ag_send    each step one send (a header, the blocks), which the
 *              receiver copies out of its receive buffer: an eager message
 *   ag_rndv    each step a rendezvous: a request to send, the receiver's
 *              RDMA read into its result, a message that it is done, as
 *              UCX's tagged rendezvous over rc_verbs
 *   ag_put     each step an RDMA write into the peer's result and one of a
 *              flag after it, posted together; the receiver polls the flag
 *              (a zero-copy put with its completion, to an address known
 *              beforehand and with no word from the receiver that it is
 *              done with it: a bound no real step reaches)
 *   ag_tail    each step one RDMA write of the blocks with the flag right
 *              after them into a slot of the peer's, which polls the flag
 *              and copies the blocks out (sucg's SUCG_STAGED_STEP=tail: one
 *              packet up to the MTU; the sender copies into the write's
 *              buffer first); slots and buffers alternate by the call's
 *              parity, as a partner runs at most one call ahead
 *
 * After a size's timed calls the ranks spoil the others' blocks and run one
 * more call, whose result is checked byte for byte (every call moves the
 * same bytes, so only a result built from spoiled ones tells that a step
 * went on before its data had come).
 *
 *   -t ud      one UD QP per rank and an address handle per peer
 *   -t rc      one RC QP per pair of ranks, as rc_verbs connects them
 *   -H BYTES   a transport's header on every message (UCP's tag and the
 *              transport's own): over UD a message of more than the MTU
 *              goes as several packets, each posted alone as a UD
 *              transport posts them, so an MPI message of 4 KB is two
 *              packets here as for srqud and ud_verbs; over RC it stays
 *              one send, which the device splits
 *
 * One process forks the N ranks; they exchange QP numbers and GIDs over a
 * mesh of socketpairs made before fork(). A rank receives through one SRQ;
 * sends go one ibv_post_send each (a system call on rxe, as for every UCX
 * transport), inline up to the QP's limit, one in SIG_EVERY signaled. A
 * rank whose CQ is empty calls sched_yield(), as Open MPI's ranks do when
 * they exceed the cores (-Y: spin, as MPICH's). Every call is timed alone,
 * back to back, as contrib/bench/mpi_calls.c times MPI's, and the output
 * has its format: one line per call and size,
 *
 *   CALL SIZE avg_us p50_us p99_us max_us slow10x over1ms
 *
 * over every rank's calls. Each message carries its call's number and its
 * sender: a message from the wrong rank or out of the window is an error.
 *
 *   srqud_rawexch -t ud -N 4 -c sendrecv,alltoall -s 8,1K
 */

#include "srqud_rawexch.h"
#include "srqud_calls_report.h"

#include <sched.h>
#include <sys/mman.h>

const char *x_names[MAX_CALLS] = {"sendrecv", "alltoall", "bcast", "rdbl",
                                  "ag_send", "ag_rndv", "ag_put", "ag_tail"};


static const bench_mode_t ud_mode = {"ud_exch", 0, 0, 0, 8};
static const bench_mode_t rc_mode = {"rc_exch", 1, 0, 0, 8};


int qp_of(const xrank_t *x, int peer)
{
    return (x->o->rc || x->o->qp_per_peer) ? peer : 0;
}

size_t max_size(const xopts_t *o)
{
    size_t m = 0;
    int    i;

    for (i = 0; i < o->nsizes; i++)
        m = (o->sizes[i] > m) ? o->sizes[i] : m;
    return m;
}

/* The packets of a message of SIZE bytes and the header (-H), once per
 * size: near-equal lengths, so that every packet holds the 8-byte header
 * the receiver checks */
static void set_size(xrank_t *x, size_t size)
{
    size_t m = size + x->o->thdr;

    x->size     = size;
    x->npkt     = (unsigned)((m + x->pkt_max - 1) / x->pkt_max);
    x->pkt_len  = m / x->npkt;
    x->pkt_long = m % x->npkt;
}

static int sock_xfer(xrank_t *x, int peer, void *out, void *in, size_t len)
{
    ssize_t n;

    if (send(x->sock[peer], out, len, MSG_NOSIGNAL) != (ssize_t)len)
        return fail("send(socketpair)", errno ? errno : EPIPE);
    n = recv(x->sock[peer], in, len, MSG_WAITALL);
    if (n == (ssize_t)len)
        return 0;
    return (n == 0) ? fail_msg("rank %d exited", peer) :
           fail("recv(socketpair)", (n < 0) ? errno : EPROTO);
}

/* Every rank past this point before any goes on */
static int barrier(xrank_t *x)
{
    char a = 1, b;
    int  p;

    for (p = 0; p < x->o->np; p++) {
        if ((p != x->rank) && sock_xfer(x, p, &a, &b, 1))
            return -1;
    }
    return 0;
}

/* Receive buffer SLOT, after the send rings */
uint8_t *slot_at(const xrank_t *x, uint64_t slot)
{
    return x->buf + x->nqp * SQ_DEPTH * x->stride + slot * x->slot_len;
}

int rx_post(xrank_t *x, unsigned slot)
{
    struct ibv_sge     sge = {.addr   = (uintptr_t)slot_at(x, slot),
                              .length = x->slot_len, .lkey = x->mr->lkey};
    struct ibv_recv_wr wr  = {.wr_id = slot, .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad;
    int                rc  = ibv_post_srq_recv(x->srq, &wr, &bad);

    return rc ? fail_rc("ibv_post_srq_recv", rc) : 0;
}

static int setup(xrank_t *x)
{
    const xopts_t            *o = x->o;
    size_t                   msg = max_size(o) + o->thdr, pkt;
    struct ibv_srq_init_attr sa;
    ep_info_t                out, in[MAX_NP];
    unsigned                 q, i;
    int                      p, ud_connected = 0;
    size_t                   len;

    x->ro = (opts_t){.mode = o->rc ? &rc_mode : &ud_mode,
                     .gid_index = o->gid_index};
    x->r.o = &x->ro;
    if (res_open(&x->r, o->dev, o->port))
        return -1;
    x->pkt_max  = o->rc ? msg : (128u << x->r.mtu);
    set_size(x, max_size(o));
    pkt         = (msg < x->pkt_max) ? msg : x->pkt_max;
    x->nqp      = (o->rc || o->qp_per_peer) ? (unsigned)o->np : 1;
    x->hdr      = o->rc ? 0 : GRH_LEN;
    x->stride   = (pkt + 63) & ~(size_t)63;
    x->slot_len = x->hdr + pkt;
    for (x->steps = 0; (1 << x->steps) < o->np; x->steps++);
    /* a sendrecv message runs at most np calls ahead, an alltoall one 1,
     * a bcast one FC_WIN; each of their packets takes a slot, and a
     * bcast's credits from two children one each */
    x->slots    = (8 * o->np + FC_WIN + 16) * x->npkt;
    for (i = 0; i < (unsigned)o->ncalls; i++) {   /* ag_send's last step */
        if ((o->calls[i] == X_AG_SEND) &&
            (x->slot_len < AG_HDR + max_size(o) * o->np / 2))
            x->slot_len = AG_HDR + max_size(o) * o->np / 2;
    }
    len         = x->nqp * SQ_DEPTH * x->stride + x->slots * x->slot_len;
    if (posix_memalign((void**)&x->buf, 4096, len))
        return fail("posix_memalign", ENOMEM);
    memset(x->buf, 0, len);
    if (!(x->mr = ibv_reg_mr(x->r.pd, x->buf, len, IBV_ACCESS_LOCAL_WRITE)))
        return fail("ibv_reg_mr", errno);
    if (o->ag && ag_open(x))
        return -1;
    if (!(x->cq = ibv_create_cq(x->r.ctx, x->nqp * SQ_DEPTH + x->slots,
                                NULL, NULL, 0)))
        return fail("ibv_create_cq", errno);
    sa = (struct ibv_srq_init_attr){.attr = {.max_wr = x->slots,
                                             .max_sge = 1}};
    if (!(x->srq = ibv_create_srq(x->r.pd, &sa)))
        return fail("ibv_create_srq", errno);
    x->max_inline = INLINE_REQ;
    for (q = 0; q < x->nqp; q++) {
        struct ibv_qp_init_attr qa = {
            .send_cq = x->cq, .recv_cq = x->cq, .srq = x->srq,
            .qp_type = o->rc ? IBV_QPT_RC : IBV_QPT_UD,
            .cap     = {.max_send_wr = SQ_DEPTH, .max_send_sge = 2,
                        .max_recv_sge = 1, .max_inline_data = INLINE_REQ},
        };

        if ((x->nqp > 1) && (q == (unsigned)x->rank))
            continue;   /* no QP to itself */
        if (!(x->qp[q] = ibv_create_qp(x->r.pd, &qa)))
            return fail("ibv_create_qp", errno);
        if (qa.cap.max_inline_data < x->max_inline)
            x->max_inline = qa.cap.max_inline_data;
    }
    for (i = 0; i < x->slots; i++) {
        if (rx_post(x, i))
            return -1;
    }
    for (p = 0; p < o->np; p++) {
        if (p == x->rank)
            continue;
        /* what the peer sends to: our UD QP, or our RC QP for it */
        out = (ep_info_t){.gid = x->r.gid, .lid = x->r.lid,
                          .qpn = x->qp[qp_of(x, p)]->qp_num,
                          .psn = START_PSN, .mtu = x->r.mtu,
                          .addr = (uintptr_t)x->ag,
                          .rkey = x->agmr ? x->agmr->rkey : 0};
        if (sock_xfer(x, p, &out, &in[p], sizeof(out)))
            return -1;
        x->rqpn[p]     = in[p].qpn;
        x->ag_raddr[p] = in[p].addr;
        x->ag_rkey[p]  = in[p].rkey;
        x->r.mtu   = (in[p].mtu < (uint32_t)x->r.mtu) ?
                     (enum ibv_mtu)in[p].mtu : x->r.mtu;
    }
    /* the setup brings one QP to RTS towards x->r.peer; UD's address
     * handle for that peer comes with it, the others' are made here */
    for (p = 0; p < o->np; p++) {
        if (p == x->rank)
            continue;
        x->r.peer = in[p];
        if ((x->nqp > 1) || !ud_connected) {   /* each QP once */
            x->r.qp = x->qp[qp_of(x, p)];
            if (qp_connect(&x->r))
                return -1;
            ud_connected = 1;
        }
        if (!o->rc) {
            x->ah[p] = x->r.ah ? x->r.ah : ah_create(&x->r, &in[p]);
            x->r.ah  = NULL;
            if (!x->ah[p])
                return -1;
        }
    }
    x->r.qp = NULL;   /* ours to destroy, not the setup's */
    return 0;
}

static void teardown(xrank_t *x)
{
    unsigned q;
    int      p;

    for (p = 0; p < MAX_NP; p++) {
        if (x->ah[p] && ibv_destroy_ah(x->ah[p]))
            fail("ibv_destroy_ah", errno);
    }
    for (q = 0; q < MAX_NP; q++) {
        if (x->qp[q] && ibv_destroy_qp(x->qp[q]))
            fail("ibv_destroy_qp", errno);
    }
    if (x->srq && ibv_destroy_srq(x->srq))
        fail("ibv_destroy_srq", errno);
    if (x->cq && ibv_destroy_cq(x->cq))
        fail("ibv_destroy_cq", errno);
    if (x->mr && ibv_dereg_mr(x->mr))
        fail("ibv_dereg_mr", errno);
    if (x->agmr && ibv_dereg_mr(x->agmr))
        fail("ibv_dereg_mr", errno);
    free(x->buf);
    free(x->ag);
    x->buf = NULL;
    x->ag  = NULL;
    res_close(&x->r);
}

/* A child's credit: the calls it has received from us (hdr[0], modulo
 * 2^32), from a child */
static int on_credit(xrank_t *x, const uint32_t *hdr, uint32_t len)
{
    uint32_t child = hdr[1] & ~CREDIT, ahead;

    if ((len != sizeof(uint32_t) * 2) || (child == 0) ||
        (child >= (uint32_t)x->o->np) || ((child - 1) / 2 != (uint32_t)x->rank))
        return fail_msg("a credit of %u bytes from rank %u", len, child);
    ahead = (uint32_t)x->sent[child] - hdr[0];   /* sent, not credited */
    if (ahead > x->sent[child] - x->credit[child])
        return fail_msg("rank %u credits %u calls, %" PRIu64 " were sent",
                        child, hdr[0], x->sent[child]);
    x->credit[child] = x->sent[child] - ahead;
    return 0;
}

/* rdbl: a packet of step k comes from rank^2^k (a partner of a later step
 * may run ahead of the one we wait for, so each step counts its own) */
static int on_rdbl_recv(xrank_t *x, const uint32_t *hdr)
{
    uint32_t d = hdr[1] ^ (uint32_t)x->rank;
    unsigned k;

    for (k = 0; (k < x->steps) && (d != (1u << k)); k++);
    if (k == x->steps)
        return fail_msg("call %u: a message from rank %u, no partner",
                        hdr[0], hdr[1]);
    x->rd_got[hdr[0] % WIN][k]++;
    return 0;
}

/* One completion: a send's retires SIG_EVERY sends of its QP; a receive
 * is checked, counted for its call (or its child's credit) and its buffer
 * posted again */
static int on_wc(xrank_t *x, const struct ibv_wc *wc)
{
    const uint8_t *b;
    uint32_t      hdr[2];

    if (wc->status != IBV_WC_SUCCESS)
        return fail_msg("%s completion: %s", (wc->opcode & IBV_WC_RECV) ?
                        "receive" : "send", ibv_wc_status_str(wc->status));
    if (wc->opcode == IBV_WC_RDMA_READ) {   /* signaled alone */
        x->inflight[wc->wr_id & ~(uint64_t)READ_ID]--;
        x->ag_read_done = 1;
        return 0;
    }
    if (!(wc->opcode & IBV_WC_RECV)) {
        x->inflight[wc->wr_id] -= SIG_EVERY;
        return 0;
    }
    if (wc->wr_id >= x->slots)
        return fail_msg("receive of slot %" PRIu64, (uint64_t)wc->wr_id);
    if (wc->byte_len < x->hdr + sizeof(hdr))
        return fail_msg("receive of %u bytes", wc->byte_len);
    b = slot_at(x, wc->wr_id) + x->hdr;
    memcpy(hdr, b, sizeof(hdr));
    /* a bcast's last credits may come while the next call kind runs */
    if (hdr[1] & CREDIT) {
        if (on_credit(x, hdr, wc->byte_len - (uint32_t)x->hdr))
            return -1;
        return rx_post(x, (unsigned)wc->wr_id);
    }
    if (x->cur >= X_AG_SEND)
        return on_ag_recv(x, wc);
    if ((wc->byte_len != x->hdr + x->pkt_len) &&
        ((x->pkt_long == 0) || (wc->byte_len != x->hdr + x->pkt_len + 1)))
        return fail_msg("receive of %u bytes, expected %zu", wc->byte_len,
                        x->hdr + x->pkt_len);
    if ((hdr[0] - (uint32_t)x->call >= WIN) || (hdr[1] >= (uint32_t)x->o->np) ||
        ((x->expect_from >= 0) && (hdr[1] != (uint32_t)x->expect_from)))
        return fail_msg("call %" PRIu64 ": a message of call %u from rank %u",
                        x->call, hdr[0], hdr[1]);
    if (x->cur != X_RDBL) {
        x->got[hdr[0] % WIN]++;
    } else if (on_rdbl_recv(x, hdr)) {
        return -1;
    }
    return rx_post(x, (unsigned)wc->wr_id);
}

static int poll_some(xrank_t *x)
{
    struct ibv_wc wc[WC_BATCH];
    int           n = ibv_poll_cq(x->cq, WC_BATCH, wc), i;

    if (n < 0)
        return fail_msg("ibv_poll_cq failed");
    for (i = 0; i < n; i++) {
        if (on_wc(x, &wc[i]))
            return -1;
    }
    return n;
}

/* Waits for completions; an empty CQ yields the core unless -Y */
int progress(xrank_t *x, uint64_t *idle)
{
    int n = poll_some(x);

    if (n != 0)
        return (n < 0) ? -1 : 0;
    if (x->o->yield)
        sched_yield();
    if ((++*idle % 4096 == 0) && (now_sec() > g_deadline))
        return fail_msg("timed out in call %" PRIu64 " (%u of its messages "
                        "here)", x->call, x->got[x->call % WIN]);
    return 0;
}

/* Room in queue pair Q's send queue for a chain of MAX_NP besides what is
 * posted: the posted sends then hold a signaled one, whose completion
 * makes more room */
int sq_room(xrank_t *x, unsigned q)
{
    uint64_t idle = 0;

    while (x->inflight[q] >= SQ_DEPTH - MAX_NP) {
        if (progress(x, &idle))
            return -1;
    }
    return 0;
}

/* A send (or write) to @a peer counted in its queue: WR gets its id and
 * flags (one in SIG_EVERY signaled); its buffer in the ring, or NULL */
uint8_t *sq_next(xrank_t *x, int peer, struct ibv_send_wr *wr)
{
    unsigned q = qp_of(x, peer);
    uint8_t  *b;

    if (sq_room(x, q))
        return NULL;
    /* a buffer is written again only after SQ_DEPTH later sends: by then
     * its send has completed (sq_room) */
    b   = x->buf + (q * SQ_DEPTH + x->posted[q] % SQ_DEPTH) * x->stride;
    *wr = (struct ibv_send_wr){.wr_id = q, .opcode = IBV_WR_SEND};
    if (++x->unsig[q] == SIG_EVERY) {
        wr->send_flags = IBV_SEND_SIGNALED;
        x->unsig[q]    = 0;
    }
    x->posted[q]++;
    x->inflight[q]++;
    return b;
}

/* A packet of LEN bytes to @a peer with header H0 H1 (the running call's
 * number and our rank, or a credit), into wr and sge; posted by
 * send_post, alone or chained */
static int send_prep(xrank_t *x, int peer, size_t len, uint32_t h0,
                     uint32_t h1, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
    uint32_t hdr[2] = {h0, h1};
    uint8_t  *b     = sq_next(x, peer, wr);

    if (!b)
        return -1;
    memcpy(b, hdr, sizeof(hdr));
    memset(b + sizeof(hdr), (int)(x->call + x->rank), len - sizeof(hdr));
    *sge = (struct ibv_sge){.addr = (uintptr_t)b, .length = len,
                            .lkey = x->mr->lkey};
    wr->sg_list = sge;
    wr->num_sge = 1;
    if (len <= x->max_inline)
        wr->send_flags |= IBV_SEND_INLINE;
    if (!x->o->rc) {
        wr->wr.ud.ah          = x->ah[peer];
        wr->wr.ud.remote_qpn  = x->rqpn[peer];
        wr->wr.ud.remote_qkey = QKEY;
    }
    return 0;
}

int send_post(xrank_t *x, int peer, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *bad;
    int                rc = ibv_post_send(x->qp[qp_of(x, peer)], wr, &bad);

    return rc ? fail_rc("ibv_post_send", rc) : 0;
}

/* Waits for N packets of the running call */
static int await_packets(xrank_t *x, unsigned n)
{
    uint64_t idle = 0;

    while (x->got[x->call % WIN] < n) {
        if (progress(x, &idle))
            return -1;
    }
    return 0;
}

/* The running call is done: its window slot serves call + WIN */
void next_call(xrank_t *x)
{
    x->got[x->call % WIN] = 0;
    x->call++;
}

/* Sends gathered for one ibv_post_send, linked: up to max */
typedef struct {
    struct ibv_send_wr wr[MAX_NP];
    struct ibv_sge     sge[MAX_NP];
    unsigned           n, max;
} post_chain_t;

/* Packet K of the running call's message to @a peer, added to @a ch, which
 * is posted once it holds its max */
static int chain_add(xrank_t *x, int peer, post_chain_t *ch, unsigned k)
{
    if (send_prep(x, peer, x->pkt_len + (k < x->pkt_long), (uint32_t)x->call,
                  (uint32_t)x->rank, &ch->wr[ch->n], &ch->sge[ch->n]))
        return -1;
    if (ch->n > 0)
        ch->wr[ch->n - 1].next = &ch->wr[ch->n];
    if (++ch->n < ch->max)
        return 0;
    ch->n = 0;
    return send_post(x, peer, &ch->wr[0]);
}

/* What @a ch holds, posted (to @a peer's QP) */
static int chain_flush(xrank_t *x, int peer, post_chain_t *ch)
{
    if (ch->n == 0)
        return 0;
    ch->n = 0;
    return send_post(x, peer, &ch->wr[0]);
}

/* A message of the running call to @a peer: its packets, up to -M of
 * them to a post (one each by default, as ud_verbs posts them) */
static int send_msg(xrank_t *x, int peer)
{
    post_chain_t ch = {.n = 0, .max = x->o->msg_pkts};
    unsigned     k;

    for (k = 0; k < x->npkt; k++) {
        if (chain_add(x, peer, &ch, k))
            return -1;
    }
    return chain_flush(x, peer, &ch);
}

/* Bcast call x->call: the parent's message (rank 0 has none), then one to
 * each child the credits allow; a credit to the parent every FC_EVERY */
static int one_bcast(xrank_t *x)
{
    int                parent = (x->rank - 1) / 2, c;
    uint64_t           idle   = 0;
    struct ibv_send_wr wr;
    struct ibv_sge     sge;

    /* the root hears credits only: no rank sends it a call's message */
    x->expect_from = (x->rank > 0) ? parent : x->o->np;
    if ((x->rank > 0) && await_packets(x, x->npkt))
        return -1;
    for (c = 2 * x->rank + 1; (c <= 2 * x->rank + 2) && (c < x->o->np); c++) {
        while (x->sent[c] - x->credit[c] >= FC_WIN) {
            if (progress(x, &idle))
                return -1;
        }
        if (send_msg(x, c))
            return -1;
        x->sent[c]++;
    }
    if ((x->rank > 0) && (++x->from_parent % FC_EVERY == 0) &&
        (send_prep(x, parent, sizeof(uint32_t) * 2,
                   (uint32_t)x->from_parent, (uint32_t)x->rank | CREDIT,
                   &wr, &sge) ||
         send_post(x, parent, &wr)))
        return -1;
    next_call(x);
    return 0;
}

/* rdbl call x->call: each step's message to rank^2^k, then its partner's */
static int one_rdbl(xrank_t *x)
{
    uint64_t idle = 0;
    uint32_t *got = x->rd_got[x->call % WIN];
    unsigned k;

    x->expect_from = -1;   /* on_rdbl_recv checks the sender */
    for (k = 0; k < x->steps; k++) {
        if (send_msg(x, x->rank ^ (1 << k)))
            return -1;
        while (got[k] < x->npkt) {
            if (progress(x, &idle))
                return -1;
        }
        got[k] = 0;
    }
    next_call(x);
    return 0;
}

/* Call number x->call: its sends, then its receives. With -P (one UD QP)
 * the packets go as chains of up to MAX_NP sends, otherwise one post each */
static int one_call(xrank_t *x, int call)
{
    int          np    = x->o->np, next = (x->rank + 1) % np, i, peers;
    int          chain = x->o->chain && (x->nqp == 1), peer;
    post_chain_t ch    = {.n = 0, .max = MAX_NP};
    unsigned     k;

    if (call == X_BCAST)
        return one_bcast(x);
    if (call == X_RDBL)
        return one_rdbl(x);
    if (call >= X_AG_SEND)
        return one_ag(x, call);
    peers          = (call == X_SENDRECV) ? 1 : np - 1;
    x->expect_from = (call == X_SENDRECV) ? (x->rank + np - 1) % np : -1;
    for (i = 1; i <= peers; i++) {   /* rank+1 first, as a pairwise order */
        peer = (x->rank + i) % np;
        if (!chain) {
            if (send_msg(x, peer))
                return -1;
            continue;
        }
        /* one UD QP: a chain may hold packets to several peers */
        for (k = 0; k < x->npkt; k++) {
            if (chain_add(x, peer, &ch, k))
                return -1;
        }
    }
    if (chain_flush(x, next, &ch))
        return -1;
    if (await_packets(x, (unsigned)peers * x->npkt))
        return -1;
    next_call(x);
    return 0;
}

/* ag_*, after a size's timed calls: the others' blocks spoiled and one
 * more call, which must bring every byte back (a step that went on before
 * its data had come would forward spoiled ones) */
static int ag_check(xrank_t *x)
{
    if (barrier(x))   /* every rank's last call has landed everywhere */
        return -1;
    ag_reset(x);
    if (barrier(x) || one_call(x, x->cur) || barrier(x))
        return -1;
    return ag_verify(x, x->cur);
}

/* A rank: every call and size, warmup then timed into t[ITERS] each */
static int rank_main(xrank_t *x, double *samples)
{
    const xopts_t *o = x->o;
    uint64_t      i, k = 0;
    int           c, s;
    double        t0;

    if (setup(x))
        return -1;
    for (c = 0; c < o->ncalls; c++) {
        x->cur = o->calls[c];
        for (s = 0; s < o->nsizes; s++, k++) {
            set_size(x, o->sizes[s]);
            if (x->cur >= X_AG_SEND)
                ag_reset(x);
            /* a size's calls must not meet the last size's messages, nor
             * the peers' ag_* writes our reset */
            if (barrier(x))
                return -1;
            for (i = 0; i < o->warmup; i++) {
                if (one_call(x, o->calls[c]))
                    return -1;
            }
            if (barrier(x))   /* the timed calls start together */
                return -1;
            for (i = 0; i < o->iters; i++) {
                t0 = now_sec();
                if (one_call(x, o->calls[c]))
                    return -1;
                samples[(k * o->np + x->rank) * o->iters + i] =
                    (now_sec() - t0) * 1e6;
            }
            if ((x->cur >= X_AG_SEND) && ag_check(x))
                return -1;
        }
    }
    /* a peer's QP stays until every rank has all it expects */
    return barrier(x);
}

static void usage(FILE *f)
{
    fprintf(f,
"Usage: srqud_rawexch [options]\n"
"  -t ud|rc     UD QPs with address handles, or RC QPs per pair (default ud)\n"
"  -Q           UD: a QP per peer, as RC, instead of one per rank\n"
"  -P           UD, one QP: a call's packets as one chain (one\n"
"               ibv_post_send per %d), as a transport batching them would\n"
"               post (sendrecv and alltoall; bcast posts each alone)\n"
"  -M K         a message's packets K to a post (default 1), as srqud\n"
"               with UCX_SRQUD_AM_PACKETS=K posts them (every call)\n"
"  -N NP        ranks, 2 to %d (default 4)\n"
"  -c CALLS     sendrecv,alltoall,bcast,rdbl (default sendrecv,alltoall;\n"
"               rdbl: recursive doubling, 2, 4, 8 or 16 ranks); with -t rc\n"
"               and as many ranks also ag_send, ag_rndv, ag_put,\n"
"               ag_tail: an Allgather by recursive doubling, its\n"
"               steps eager sends, rendezvous reads, RDMA writes and a\n"
"               flag's, or one write with its flag last (SIZE: a rank's\n"
"               block; -H does not apply)\n"
"  -s SIZES     bytes per message, comma-separated, k suffix, 8 to 64k\n"
"               (default 8)\n"
"  -H BYTES     a transport's header on every message, 0 to 256 (default\n"
"               0); UD: more than the MTU goes as several packets\n"
"  -n ITERS     timed calls per call and size (default 1000)\n"
"  -w WARMUP    untimed calls first (default 200, as mpi_calls)\n"
"  -Y           spin on an empty CQ instead of sched_yield()\n"
"  -d DEV:PORT  device (default rxe0:1); -g INDEX its GID (default auto)\n"
"  -T SECONDS   every rank gives up with an error after this (default 300)\n",
            MAX_NP, MAX_NP);
}

/* A number option within [min, max] */
static int parse_opt_num(int c, uint64_t min, uint64_t max, uint64_t *v)
{
    return parse_num(optarg, min, max, v) ?
           fail_msg("bad value '%s' for -%c", optarg, c) : 0;
}

static int parse(int argc, char **argv, xopts_t *o)
{
    const char *bad;
    uint64_t   v;
    int        c, rc = 0;

    *o = (xopts_t){.np = 4, .msg_pkts = 1, .iters = 1000, .warmup = 200,
                   .yield = 1, .timeout = 300, .dev = "rxe0", .port = 1,
                   .gid_index = -1};
    while (!rc && ((c = getopt(argc, argv, "t:QPM:N:c:s:H:n:w:Yd:g:T:h")) != -1)) {
        switch (c) {
        case 't':
            if (strcmp(optarg, "ud") && strcmp(optarg, "rc"))
                return fail_msg("bad -t '%s': ud or rc", optarg);
            o->rc = !strcmp(optarg, "rc");
            break;
        case 'N':
            rc = parse_opt_num(c, 2, MAX_NP, &v);
            o->np = (int)v;
            break;
        case 'n': rc = parse_opt_num(c, 1, 1ull << 32, &o->iters);  break;
        case 'H':
            rc = parse_opt_num(c, 0, 256, &v);
            o->thdr = v;
            break;
        case 'w': rc = parse_opt_num(c, 0, 1ull << 32, &o->warmup); break;
        case 'T':
            rc = parse_opt_num(c, 1, 86400, &v);
            o->timeout = (unsigned)v;
            break;
        case 'g':
            rc = parse_opt_num(c, 0, 255, &v);
            o->gid_index = (int)v;
            break;
        case 'Y': o->yield       = 0; break;
        case 'Q': o->qp_per_peer = 1; break;
        case 'P': o->chain       = 1; break;
        case 'M':
            rc = parse_opt_num(c, 1, MAX_NP, &v);
            o->msg_pkts = (unsigned)v;
            break;
        case 'c':
            if ((bad = ranks_parse_calls(optarg, x_names, MAX_CALLS,
                                         o->calls, &o->ncalls, MAX_CALLS)))
                return fail_msg("bad call '%s' in -c", bad);
            break;
        case 's':
            if ((bad = ranks_parse_sizes(optarg, 8, MAX_SIZE, o->sizes,
                                         &o->nsizes, 8)))
                return fail_msg("bad size '%s' in -s", bad);
            break;
        case 'd':
            if (parse_devport(optarg, o->dev, &o->port))
                return fail_msg("bad -d '%s': want DEV[:PORT]", optarg);
            break;
        case 'h': usage(stdout); exit(0);
        default:  usage(stderr); return -1;
        }
    }
    if (rc)
        return -1;
    if (optind != argc)
        return fail_msg("unexpected argument '%s'", argv[optind]);
    if (!o->ncalls) {
        o->calls[0] = X_SENDRECV, o->calls[1] = X_ALLTOALL, o->ncalls = 2;
    }
    if (!o->nsizes)
        o->sizes[o->nsizes++] = 8;
    for (c = 0; c < o->ncalls; c++) {
        o->ag |= o->calls[c] >= X_AG_SEND;
        if ((o->calls[c] == X_RDBL) && (o->np & (o->np - 1)))
            return fail_msg("rdbl needs 2, 4, 8 or 16 ranks, not %d", o->np);
    }
    if (o->ag && !o->rc)
        return fail_msg("ag_* calls need -t rc");
    if (o->ag && (o->np & (o->np - 1)))
        return fail_msg("ag_* calls need 2, 4, 8 or 16 ranks, not %d", o->np);
    return 0;
}

typedef struct {
    const xopts_t *o;
    double        *samples;
} run_args_t;

static int run_rank(int p, const int *sock, void *arg)
{
    const run_args_t *a = arg;
    static char      role[32];
    xrank_t          x  = {.o = a->o, .rank = p, .sock = sock,
                           .expect_from = -1};
    int              rc;

    snprintf(role, sizeof(role), "rank %d", p);
    g_role = role;
    rc     = rank_main(&x, a->samples);
    teardown(&x);
    return rc;
}

int main(int argc, char **argv)
{
    xopts_t    o;
    run_args_t a;
    int        failed;
    size_t     n;

    g_prog = "srqud_rawexch";
    g_role = "main";
    if (parse(argc, argv, &o))
        return 2;
    n         = (size_t)o.ncalls * o.nsizes * o.np * o.iters * sizeof(double);
    a.o       = &o;
    a.samples = mmap(NULL, n, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (a.samples == MAP_FAILED) {
        fail("mmap", ENOMEM);
        return 1;
    }
    g_deadline = now_sec() + o.timeout;
    failed     = ranks_run(g_prog, o.np, o.timeout, run_rank, &a);
    if (!failed)
        calls_report(x_names, o.calls, o.ncalls, o.sizes, o.nsizes,
                     a.samples, (size_t)o.np * o.iters);
    return failed ? 1 : 0;
}
