/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * srqud_rawperf: the ceiling of a verbs device, measured with plain verbs
 * (no UCX), to compare UCX transports against at the same MTU and sizes.
 *
 * One process forks a server (the receiver, child) and a client (the
 * sender, parent). Each opens the device itself (the same one by default)
 * and they exchange QP numbers, GIDs, LIDs, rkey and buffer address over a
 * socketpair made before fork(): no TCP/IP at all.
 *
 *   ud_bw        UD SEND streaming, size <= path MTU; receiver-side MB/s
 *   ud_msgrate   ud_bw with 8-byte messages by default
 *   ud_lat       UD SEND ping-pong; median half round trip (spins on CQs)
 *   rc_write_bw  RC RDMA WRITE streaming, any size; the last one carries an
 *                immediate so that the receiver sees the end
 *   rc_send_bw   RC SEND streaming, with the same credits as ud_bw
 *   rc_lat       RC SEND ping-pong, as ud_lat: what the device's UD round
 *                trip costs beside its RC one (the bound of a UD transport)
 *
 * Why postlists and unsignaled sends: on Soft-RoCE (rxe), in a VM above
 * all, every ibv_post_send rings the doorbell with a system call and the
 * kernel then runs the whole transport in software; every signaled send
 * also costs a CQE written and polled. A chain of P work requests per
 * ibv_post_send and one signaled send in N divide those costs by P and N;
 * the counters printed (calls and completions per message) show the rest.
 *
 * UD has no flow control and drops what finds no receive posted, so the
 * receiver returns credits over the socketpair (one message per batch of B
 * reposted receives) and the sender never has more messages in flight than
 * receives it knows are posted.
 *
 *   srqud_rawperf -t ud_bw -s 4096
 *   srqud_rawperf -t rc_write_bw -s 4194304
 *   srqud_rawperf -t ud_lat -s 64 -d rxeA:1 -D rxeB:1 -C
 */

#include "srqud_rawperf.h"


/* The postlist is built once; tx_post only links it and sets flags */
static void tx_prepare(res_t *r)
{
    const bench_mode_t *m = r->o->mode;
    unsigned           i;

    r->tx_opcode  = m->write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
    r->send_flags = (r->o->inline_send && (r->size <= r->max_inline)) ?
                    IBV_SEND_INLINE : 0;
    if (r->o->inline_send && !r->send_flags && !r->is_server)
        fprintf(stderr, "note: -I ignored: size %zu > max_inline_data %u\n",
                r->size, r->max_inline);
    for (i = 0; i < r->o->postlist; i++) {
        r->ssge[i] = (struct ibv_sge){.addr = (uintptr_t)r->buf,
                                      .length = r->size, .lkey = r->mr->lkey};
        r->swr[i].sg_list = &r->ssge[i];
        r->swr[i].num_sge = 1;
        if (m->write) {
            r->swr[i].wr.rdma.remote_addr = r->peer.addr;
            r->swr[i].wr.rdma.rkey        = r->peer.rkey;
        } else if (!m->rc) {
            r->swr[i].wr.ud.ah          = r->ah;
            r->swr[i].wr.ud.remote_qpn  = r->peer.qpn;
            r->swr[i].wr.ud.remote_qkey = QKEY;
        }
    }
}

/* n sends as one chain: one ibv_post_send (one system call on rxe) for n
 * messages. Send j of the phase is signaled when j is a multiple of N or
 * the phase's last, so that one CQE retires N sends. */
static int tx_post(res_t *r, unsigned n, uint64_t phase_len, int imm_last)
{
    struct ibv_send_wr *wr, *bad;
    unsigned           i;
    uint64_t           j;
    int                rc;

    for (i = 0; i < n; i++) {
        wr             = &r->swr[i];
        j              = ++r->sq_posted;
        wr->wr_id      = j;
        wr->send_flags = r->send_flags;
        wr->opcode     = r->tx_opcode;
        wr->next       = (i + 1 < n) ? wr + 1 : NULL;
        if ((j % r->o->signal_every == 0) || (j == phase_len))
            wr->send_flags |= IBV_SEND_SIGNALED;
        if (imm_last && (j == phase_len))
            wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM, wr->imm_data = 0;
    }
    r->tx_total += n;
    r->st.post_send++;
    rc = ibv_post_send(r->qp, r->swr, &bad);
    return rc ? fail_rc("ibv_post_send", rc) : 0;
}

/* Completions arrive in order: the last signaled wr_id retires all before */
static int tx_poll(res_t *r)
{
    struct ibv_wc wc[WC_BATCH];
    int           i, n = ibv_poll_cq(r->scq, WC_BATCH, wc);

    if (n < 0)
        return fail_msg("ibv_poll_cq(send CQ) failed: %d", n);
    for (i = 0; i < n; i++) {
        if (wc[i].status != IBV_WC_SUCCESS)
            return fail_msg("send completion: %s (send %" PRIu64 ")",
                            ibv_wc_status_str(wc[i].status), wc[i].wr_id);
        r->sq_done = wc[i].wr_id;
    }
    r->st.send_comp += n;
    return n;
}

/* Called when idle: the deadline turns a lost UD packet or a dead peer
 * into an error, not a hang; the peer is checked only every PEER_CHECK. */
static int watchdog(res_t *r, const char *what)
{
    struct pollfd p = {.fd = r->sock, .events = 0};
    double        t = now_sec();

    if (t > g_deadline)
        return fail_msg("timed out (-T %u) waiting for %s", r->o->timeout,
                        what);
    if (t - r->last_peer_check < PEER_CHECK)
        return 0;
    r->last_peer_check = t;
    return ((poll(&p, 1, 0) > 0) && (p.revents & (POLLHUP | POLLERR))) ?
           fail_msg("the peer exited while waiting for %s", what) : 0;
}

/* Post the last n free slots (or one empty receive for WRITE_WITH_IMM) */
static int rx_post(res_t *r, unsigned n)
{
    struct ibv_recv_wr *wr, *bad;
    uint32_t           slot;
    unsigned           i;
    int                rc;

    for (i = 0; i < n; i++) {
        wr          = &r->rwr[i];
        slot        = r->slots ? r->free_slots[--r->nfree] : 0;
        r->rsge[i]  = (struct ibv_sge){.length = r->slot_len,
                                       .lkey = r->mr->lkey,
                                       .addr = (uintptr_t)(r->buf + r->tx_len +
                                               (size_t)slot * r->slot_len)};
        wr->wr_id   = slot;
        wr->sg_list = &r->rsge[i];
        wr->num_sge = r->slots ? 1 : 0;
        wr->next    = (i + 1 < n) ? wr + 1 : NULL;
    }
    r->st.post_recv++;
    rc = r->srq ? ibv_post_srq_recv(r->srq, r->rwr, &bad) :
                  ibv_post_recv(r->qp, r->rwr, &bad);
    return rc ? fail_rc(r->srq ? "ibv_post_srq_recv" : "ibv_post_recv", rc)
              : 0;
}

static int rx_prepost(res_t *r)
{
    for (r->nfree = 0; r->nfree < r->slots; r->nfree++)
        r->free_slots[r->nfree] = r->nfree;
    if (!r->slots)
        return rx_post(r, 1);
    while (r->nfree) {
        if (rx_post(r, min_u64(r->nfree, r->o->rx_batch)))
            return -1;
    }
    return 0;
}

static int rx_poll(res_t *r)
{
    struct ibv_wc wc[WC_BATCH];
    int           i, n = ibv_poll_cq(r->rcq, WC_BATCH, wc);

    if (n < 0)
        return fail_msg("ibv_poll_cq(receive CQ) failed: %d", n);
    for (i = 0; i < n; i++) {
        if (wc[i].status != IBV_WC_SUCCESS)
            return fail_msg("receive completion: %s",
                            ibv_wc_status_str(wc[i].status));
        if (r->slots && (wc[i].byte_len != r->slot_len))
            return fail_msg("received %u bytes, expected %zu (GRH included"
                            " on UD)", wc[i].byte_len, r->slot_len);
        if (!r->slots && (wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM))
            return fail_msg("unexpected receive opcode %d", wc[i].opcode);
        if (r->slots)
            r->free_slots[r->nfree++] = wc[i].wr_id;
    }
    r->st.recv_comp += n;
    return n;
}

/* Reposts whole batches only: one ibv_post_recv per B messages. Returns
 * the number reposted, which is what the sender may be credited. */
static int rx_replenish(res_t *r)
{
    int done = 0;

    for (; r->nfree >= r->o->rx_batch; done += r->o->rx_batch) {
        if (rx_post(r, r->o->rx_batch))
            return -1;
    }
    return done;
}

static int rx_wait(res_t *r, const char *what)
{
    int n;

    while ((n = rx_poll(r)) == 0) {
        if (watchdog(r, what))
            return -1;
    }
    return ((n < 0) || (rx_replenish(r) < 0)) ? -1 : 0;
}

/* How many sends may go now: the postlist, what the phase has left, free
 * send queue entries and, with credits, receives known to be posted. */
static unsigned tx_room(res_t *r, uint64_t len, int credits)
{
    uint64_t n = min_u64(r->o->postlist, len - r->sq_posted);

    n = min_u64(n, r->sq_depth - (r->sq_posted - r->sq_done));
    return credits ? min_u64(n, r->credit_limit - r->tx_total) : n;
}

/* Out of room: reap send completions, else take credits. When only
 * credits are missing and no signaled send is in flight (no CQE can come),
 * block on the socket rather than spin: leave the CPU to rxe's kernel. */
static int tx_wait(res_t *r, int credits)
{
    unsigned N = r->o->signal_every;
    ctl_t    m;
    int      n = tx_poll(r), t;

    if (n != 0)
        return (n < 0) ? -1 : 0;
    if (credits && (r->credit_limit == r->tx_total)) {
        t = ctl_pump(r, (r->sq_posted / N * N <= r->sq_done) ? 0.01 : 0, &m);
        if ((t < 0) || (t == CTL_CREDIT))
            return (t < 0) ? -1 : 0;
        if (t != 0)
            return fail_msg("unexpected control message %d", t);
    }
    return watchdog(r, credits ? "credits or send completions" :
                                 "send completions");
}

/* len sends, at most the send queue depth (and the credits) in flight */
static int tx_phase(res_t *r, uint64_t len, int credits, int imm_last)
{
    unsigned n;

    r->sq_posted = r->sq_done = 0;
    while (r->sq_done < len) {
        n = (r->sq_posted < len) ? tx_room(r, len, credits) : 0;
        if (n ? tx_post(r, n, len, imm_last) :
                tx_wait(r, credits && (r->sq_posted < len)))
            return -1;
    }
    return 0;
}

/* Wait until send 'upto' of the phase is known complete */
static int tx_drain(res_t *r, uint64_t upto)
{
    while (r->sq_done < upto) {
        if ((tx_poll(r) < 0) || watchdog(r, "send completions"))
            return -1;
    }
    return 0;
}

/* One send of the ping-pong, once a send queue entry is free (depth >= N:
 * a full queue always holds a signaled send) */
static int tx_one(res_t *r, uint64_t phase_len)
{
    if ((r->sq_posted >= r->sq_depth) &&
        tx_drain(r, r->sq_posted - r->sq_depth + 1))
        return -1;
    return (tx_post(r, 1, phase_len, 0) || (tx_poll(r) < 0)) ? -1 : 0;
}

/* Nothing arrived: once the sender has said DONE, LOSS_SEC of silence
 * means UD lost the rest; otherwise the deadline decides. */
static int srv_idle(res_t *r, double t_last, uint64_t *sent, uint64_t got)
{
    double t = now_sec();
    ctl_t  m;
    int    ty;

    if (!*sent && (t - t_last > PEER_CHECK)) {
        if ((ty = ctl_pump(r, 0, &m)) < 0)
            return -1;
        if (ty == CTL_DONE)
            *sent = m.count;
    }
    if (*sent && (t - t_last > LOSS_SEC))
        return fail_msg("the sender is done but only %" PRIu64 " of %" PRIu64
                        " messages arrived: the rest were lost", got, *sent);
    return watchdog(r, "messages");
}

/* Receiver of ud_bw/rc_send_bw: the clock starts when the warmup is in
 * (or at the first arrival) and stops at the last arrival. */
static int srv_stream(res_t *r, ctl_t *res)
{
    const opts_t *o = r->o;
    uint64_t     total = o->warmup + o->iters, sent = 0, t0_got = 0;
    uint64_t     start = o->warmup ? o->warmup : 1;
    double       t0 = 0, t_last = now_sec();
    ctl_t        credit = {.type = CTL_CREDIT};
    int          n, k;

    while (res->count < total) {
        if ((n = rx_poll(r)) <= 0) {
            if ((n < 0) || srv_idle(r, t_last, &sent, res->count))
                return -1;
            continue;
        }
        res->count += n;
        t_last      = now_sec();
        if (!t0_got && (res->count >= start)) {
            t0     = t_last;
            t0_got = res->count;
            memset(&r->st, 0, sizeof(r->st));
        }
        if ((k = rx_replenish(r)) < 0)
            return -1;
        credit.count = k;
        if ((k > 0) && ctl_send(r, &credit))
            return -1;
    }
    res->timed_msgs = res->count - t0_got;
    res->elapsed_ns = (t_last - t0) * 1e9;
    return 0;
}

static int srv_lat(res_t *r, ctl_t *res)
{
    uint64_t i, total = r->o->warmup + r->o->iters;

    r->sq_posted = r->sq_done = 0;
    for (i = 0; i < total; i++, res->count++) {
        if (i == r->o->warmup)
            memset(&r->st, 0, sizeof(r->st));
        if (rx_wait(r, "a ping") || tx_one(r, total))
            return -1;
    }
    return tx_drain(r, total);
}

/* Nothing to time here (the sender times its completions): nap between
 * polls rather than spin, so that rxe's kernel side keeps the CPU. */
static int srv_write(res_t *r, ctl_t *res)
{
    struct timespec nap = {0, 50000};
    int             n;

    while ((n = rx_poll(r)) == 0) {
        if (watchdog(r, "the RDMA WRITE with immediate"))
            return -1;
        nanosleep(&nap, NULL);
    }
    res->count = (n > 0);
    return (n < 0) ? -1 : 0;
}

static int srv_run(res_t *r)
{
    const bench_mode_t *m   = r->o->mode;
    ctl_t              res  = {.type = CTL_RESULT};
    uint64_t           want = m->write ? 1 : r->o->warmup + r->o->iters;
    int                rc;

    rc = m->lat ? srv_lat(r, &res) : m->write ? srv_write(r, &res) :
         srv_stream(r, &res);
    if (rc)
        fprintf(stderr, "srqud_rawperf server: %" PRIu64 " of %" PRIu64
                " messages arrived%s\n", res.count, want, res.count ? "" :
                " (is the GID right? see -g)");
    res.status = (rc != 0);
    res.stats  = r->st;
    rc         = ctl_send(r, &res) ? -1 : rc;
    ctl_wait_close(r);
    return rc;
}

/* Two phases, the warmup one completed before the clock starts */
static int cli_stream(res_t *r, ctl_t *res, result_t *out)
{
    const opts_t *o      = r->o;
    int          credits = !o->mode->write;
    ctl_t        done    = {.type = CTL_DONE};
    double       t0;

    r->credit_limit = o->rx_depth;
    if (o->warmup && tx_phase(r, o->warmup, credits, 0))
        return -1;
    memset(&r->st, 0, sizeof(r->st));
    t0 = now_sec();
    if (tx_phase(r, o->iters, credits, o->mode->write))
        return -1;
    out->sec   = now_sec() - t0;
    out->msgs  = o->iters;
    done.count = r->tx_total;
    if (credits && ctl_send(r, &done))
        return -1;
    return ctl_expect(r, CTL_RESULT, res);
}

static int cli_lat(res_t *r, ctl_t *res, result_t *out)
{
    const opts_t *o = r->o;
    uint64_t     i, total = o->warmup + o->iters;
    double       *rtt = malloc(o->iters * sizeof(*rtt)), t, t0 = now_sec();
    int          ret = -1;

    if (!rtt)
        return fail("malloc", ENOMEM);
    r->sq_posted = r->sq_done = 0;
    for (i = 0; i < total; i++) {
        if (i == o->warmup) {
            memset(&r->st, 0, sizeof(r->st));
            t0 = now_sec();
        }
        t = now_sec();
        if (tx_one(r, total) || rx_wait(r, "a pong"))
            goto out;
        if (i >= o->warmup)
            rtt[i - o->warmup] = now_sec() - t;
    }
    out->sec  = now_sec() - t0;
    out->msgs = o->iters;
    qsort(rtt, o->iters, sizeof(*rtt), cmp_double);
    out->half_rtt_us = rtt[o->iters / 2] / 2 * 1e6;
    if (!tx_drain(r, total))
        ret = ctl_expect(r, CTL_RESULT, res);
out:
    free(rtt);
    return ret;
}

static void report(const res_t *r, const result_t *out)
{
    const opts_t  *o   = r->o;
    const stats_t *s   = &r->st;
    double        sec  = (out->sec > 0) ? out->sec : 1e-9;
    double        per  = (double)o->iters;   /* the sender's timed count */
    double        mbps = out->msgs * (double)r->size / MIB / sec;
    double        mmps = out->msgs / sec / 1e6;

    printf("%s size %zu iters %" PRIu64 " postlist %u signal 1/%u%s%s: ",
           o->mode->name, r->size, o->iters, o->postlist, o->signal_every,
           (r->send_flags & IBV_SEND_INLINE) ? " inline" : "",
           (o->use_srq && !o->mode->write) ? " srq" : "");
    if (o->mode->lat)
        printf("%.2f us median half round trip, ", out->half_rtt_us);
    printf("%.1f MB/s %.4f Mmsg/s in %.3f s; per message: %.3f post_send "
           "%.3f post_recv %.3f send CQE %.3f recv CQE\n", mbps, mmps, sec,
           s->post_send / per, s->post_recv / per, s->send_comp / per,
           s->recv_comp / per);
    if (o->csv)
        printf("%s,%zu,%" PRIu64 ",%u,%u,%.6f,%.3f,%.6f,%" PRIu64 ",%" PRIu64
               ",%" PRIu64 ",%" PRIu64 ",%.3f\n", o->mode->name, r->size,
               o->iters, o->postlist, o->signal_every, sec, mbps, mmps,
               s->post_send, s->post_recv, s->send_comp, s->recv_comp,
               out->half_rtt_us);
    fflush(stdout);
}

static int cli_run(res_t *r)
{
    const bench_mode_t *m  = r->o->mode;
    ctl_t              res = {0};
    result_t           out = {0};

    if (m->lat ? cli_lat(r, &res, &out) : cli_stream(r, &res, &out))
        return -1;
    if (res.status)
        return fail_msg("the server failed after %" PRIu64 " messages",
                        res.count);
    if (!m->lat && !m->write) {   /* the receiver's clock is the one */
        out.sec  = res.elapsed_ns * 1e-9;
        out.msgs = res.timed_msgs;
    }
    r->st.post_send += res.stats.post_send;
    r->st.post_recv += res.stats.post_recv;
    r->st.send_comp += res.stats.send_comp;
    r->st.recv_comp += res.stats.recv_comp;
    report(r, &out);
    return 0;
}

static int run_side(const opts_t *o, int sock, int is_server)
{
    res_t r = {.o = o, .sock = sock, .is_server = is_server};
    ctl_t ready = {.type = CTL_READY};
    int   rc;

    rc = res_open(&r, is_server ? o->srv_dev : o->cli_dev,
                  is_server ? o->srv_port : o->cli_port) ||
         exchange(&r) ||   /* first the MTUs, to size everything */
         res_plan(&r) || res_alloc(&r) ||
         exchange(&r) ||   /* then QPN, PSN, GID, LID, addr, rkey */
         qp_connect(&r);
    if (!rc) {
        tx_prepare(&r);
        /* both sides' receives are posted before anything flows */
        rc = (r.has_rx && rx_prepost(&r)) ||
             (is_server ? ctl_send(&r, &ready) :
                          ctl_expect(&r, CTL_READY, &ready)) ||
             (is_server ? srv_run(&r) : cli_run(&r));
    }
    close(sock);
    res_close(&r);
    return rc ? -1 : 0;
}

int main(int argc, char **argv)
{
    opts_t o;
    int    sv[2], status, rc;
    pid_t  pid;

    if (parse_opts(argc, argv, &o))
        return 2;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv)) {
        fail("socketpair", errno);
        return 1;
    }
    g_deadline = now_sec() + o.timeout;
    fflush(NULL);
    if ((pid = fork()) < 0) {
        fail("fork", errno);
        return 1;
    }
    if (pid == 0) {
        close(sv[0]);
        prctl(PR_SET_PDEATHSIG, SIGTERM);   /* never outlive the client */
        g_role = "server";
        _exit(run_side(&o, sv[1], 1) ? 1 : 0);
    }
    close(sv[1]);
    rc = run_side(&o, sv[0], 0);
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fail("waitpid", errno);
            return 1;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "srqud_rawperf: the server %s %d\n",
                WIFEXITED(status) ? "exited with status" : "died of signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        rc = -1;
    }
    return rc ? 1 : 0;
}
