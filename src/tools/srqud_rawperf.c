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

#include <infiniband/verbs.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GRH_LEN     40          /* in front of every UD receive */
#define QKEY        0x11111111
#define START_PSN   0x1000
#define INLINE_REQ  64          /* inline bytes asked for at QP creation */
#define WC_BATCH    32
#define PEER_CHECK  0.2         /* s between checks that the peer lives */
#define LOSS_SEC    1.0         /* UD: silence after the sender is done */
#define MAX_RX_MEM  (1ull << 30)
#define MIB         (1024.0 * 1024.0)

typedef struct {
    const char *name;
    int        rc, lat, write;
    size_t     def_size;
} bench_mode_t;

static const bench_mode_t modes[] = {
    {"ud_bw", 0, 0, 0, 4096},       {"ud_msgrate", 0, 0, 0, 8},
    {"ud_lat", 0, 1, 0, 8},         {"rc_write_bw", 1, 0, 1, 65536},
    {"rc_send_bw", 1, 0, 0, 65536},
};
#define NUM_MODES (sizeof(modes) / sizeof(modes[0]))

typedef struct {
    const bench_mode_t *mode;
    char     cli_dev[64], srv_dev[64];
    int      cli_port, srv_port, gid_index;   /* gid_index < 0: auto */
    uint64_t size, iters, warmup;
    unsigned postlist, signal_every, rx_depth, rx_batch, timeout;
    int      inline_send, use_srq, csv;
} opts_t;

typedef struct {
    uint64_t post_send, post_recv, send_comp, recv_comp;
} stats_t;

typedef struct {
    union ibv_gid gid;
    uint64_t      addr;
    uint32_t      qpn, psn, rkey, mtu;
    uint16_t      lid;
} ep_info_t;

enum { CTL_INFO = 1, CTL_READY, CTL_CREDIT, CTL_DONE, CTL_RESULT };

/* Everything that crosses the socketpair; SOCK_SEQPACKET keeps it whole */
typedef struct {
    uint32_t  type, status;
    ep_info_t info;
    uint64_t  count;   /* CREDIT: reposted, DONE: sent, RESULT: received */
    uint64_t  timed_msgs, elapsed_ns;
    stats_t   stats;
} ctl_t;

typedef struct {
    double   sec, half_rtt_us;
    uint64_t msgs;
} result_t;

typedef struct {
    const opts_t       *o;
    int                sock, is_server, has_rx, gid_index;
    struct ibv_context *ctx;
    struct ibv_pd      *pd;
    struct ibv_cq      *scq, *rcq;
    struct ibv_srq     *srq;
    struct ibv_qp      *qp;
    struct ibv_ah      *ah;
    struct ibv_mr      *mr;
    uint8_t            *buf;      /* [tx_len: send/write area][slots] */
    size_t             size, tx_len, slot_len;
    unsigned           slots, nfree, sq_depth, max_inline, send_flags;
    uint32_t           *free_slots;   /* consumed, waiting to be reposted */
    uint8_t            port;
    union ibv_gid      gid;
    uint16_t           lid;
    enum ibv_mtu       mtu;
    uint64_t           max_msg, max_wr;
    ep_info_t          peer;
    struct ibv_send_wr *swr;      /* the postlist, built once */
    struct ibv_sge     *ssge;
    struct ibv_recv_wr *rwr;      /* one repost batch */
    struct ibv_sge     *rsge;
    enum ibv_wr_opcode tx_opcode;
    uint64_t           sq_posted, sq_done;    /* within the current phase */
    uint64_t           tx_total, credit_limit;
    double             last_peer_check;
    stats_t            st;
} res_t;

static const char *g_role = "client";
static double     g_deadline;

static double now_sec(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int fail_msg(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "srqud_rawperf %s: ", g_role);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return -1;
}

static int fail(const char *call, int err)
{
    return fail_msg("%s failed: %s", call, strerror(err));
}

/* Verbs calls return an errno value; a few return -1 and set errno */
static int fail_rc(const char *call, int rc)
{
    return fail(call, rc > 0 ? rc : (errno ? errno : EIO));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static void usage(FILE *f)
{
    fprintf(f,
"Usage: srqud_rawperf [options]\n"
"  -t MODE      ud_bw (default), ud_msgrate, ud_lat, rc_write_bw, rc_send_bw\n"
"  -d DEV:PORT  client (sender) device, default rxe0:1\n"
"  -D DEV:PORT  server (receiver) device, default the same as -d\n"
"  -g INDEX     GID index on both sides; default auto: the GID ::1 if the\n"
"               port has it (rxe over lo), else the first non-zero GID that\n"
"               is not link-local fe80::, else index 0\n"
"  -s SIZE      message size (k/m suffixes); UD: payload, clamped to the\n"
"               active MTU. Default 4096 ud_bw, 8 ud_msgrate/ud_lat,\n"
"               65536 rc_*\n"
"  -n ITERS     timed messages; default 20000 UD, 10000 ud_lat,\n"
"               128 MiB / SIZE within [100, 20000] for RC\n"
"  -w WARMUP    untimed messages first; default ITERS/10, at most 1000\n"
"  -p POSTLIST  work requests per ibv_post_send (default 32)\n"
"  -c N         signal one send in N (default 64)\n"
"  -r DEPTH     receives kept posted (default 512)\n"
"  -b BATCH     receives reposted per ibv_post_recv = one credit message\n"
"               (default 32)\n"
"  -S           receive through an SRQ instead of the QP's receive queue\n"
"  -I           send inline when SIZE <= the QP's max_inline_data\n"
"  -T SECONDS   both sides give up with an error after this (default 60)\n"
"  -C           also print a CSV line: mode,size,iters,postlist,\n"
"               signal_every,seconds,MBps,Mmsgps,post_send_calls,\n"
"               post_recv_calls,send_completions,recv_completions,\n"
"               half_rtt_us (ud_lat only, else 0)\n"
"Counters cover the timed part, both processes summed. MB = 2^20 bytes.\n"
"Examples: srqud_rawperf -t ud_bw -s 4096\n"
"          srqud_rawperf -t rc_write_bw -s 4194304\n");
}

static int parse_devport(const char *s, char *dev, int *port)
{
    const char *colon = strchr(s, ':');
    size_t     n      = colon ? (size_t)(colon - s) : strlen(s);

    if ((n == 0) || (n >= sizeof(((opts_t*)0)->cli_dev)))
        return -1;
    memcpy(dev, s, n);
    dev[n] = '\0';
    *port  = colon ? atoi(colon + 1) : 1;
    return ((*port >= 1) && (*port <= 255)) ? 0 : -1;
}

/* A number with an optional k/m suffix, within [min, max] */
static int parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
    char *end;

    errno = 0;
    *v    = strtoull(s, &end, 0);
    if ((*end == 'k') || (*end == 'K'))
        *v <<= 10, end++;
    else if ((*end == 'm') || (*end == 'M'))
        *v <<= 20, end++;
    return (errno || (end == s) || *end || (*v < min) || (*v > max)) ? -1 : 0;
}

/* Defaults that depend on the mode and size, then the cross-checks */
static int opts_finish(opts_t *o, int have_srv_dev)
{
    if (!have_srv_dev) {
        strcpy(o->srv_dev, o->cli_dev);
        o->srv_port = o->cli_port;
    }
    if (!o->size)
        o->size = o->mode->def_size;
    if (!o->iters) {
        o->iters = o->mode->lat ? 10000 : !o->mode->rc ? 20000 :
                   min_u64(20000, (128ull << 20) / o->size);
        o->iters = (o->iters < 100) ? 100 : o->iters;
    }
    if (o->warmup == UINT64_MAX)
        o->warmup = min_u64(o->iters / 10, 1000);
    if (o->rx_batch > o->rx_depth)
        return fail_msg("-b %u is larger than -r %u", o->rx_batch, o->rx_depth);
    if (o->mode->rc && !o->mode->write && (o->size * o->rx_depth > MAX_RX_MEM))
        return fail_msg("-s x -r is over 1 GiB of receive buffers: lower -r");
    return 0;
}

static int parse_opts(int argc, char **argv, opts_t *o)
{
    int      c, have_srv_dev = 0;
    unsigned i;
    uint64_t v;

    *o = (opts_t){.mode = &modes[0], .cli_dev = "rxe0", .cli_port = 1,
                  .gid_index = -1, .warmup = UINT64_MAX, .postlist = 32,
                  .signal_every = 64, .rx_depth = 512, .rx_batch = 32,
                  .timeout = 60};
    while ((c = getopt(argc, argv, "t:d:D:g:s:n:w:p:c:r:b:SIT:Ch")) != -1) {
        switch (c) {
        case 't':
            for (i = 0; (i < NUM_MODES) && strcmp(modes[i].name, optarg); i++);
            if (i == NUM_MODES)
                return fail_msg("unknown mode '%s' (see -h)", optarg);
            o->mode = &modes[i];
            break;
        case 'd':
        case 'D':
            if (parse_devport(optarg, c == 'd' ? o->cli_dev : o->srv_dev,
                              c == 'd' ? &o->cli_port : &o->srv_port))
                return fail_msg("bad -%c '%s': want DEV[:PORT]", c, optarg);
            have_srv_dev |= (c == 'D');
            break;
        case 'S': o->use_srq = 1;     break;
        case 'I': o->inline_send = 1; break;
        case 'C': o->csv = 1;         break;
        case 'h': usage(stdout);      exit(0);
        case '?': usage(stderr);      return -1;
        default:   /* the numbers */
            if (parse_num(optarg, strchr("wg", c) ? 0 : 1,
                          strchr("snw", c) ? (1ull << 40) : (1u << 20), &v))
                return fail_msg("bad value '%s' for -%c", optarg, c);
            switch (c) {
            case 'g': o->gid_index    = v; break;
            case 's': o->size         = v; break;
            case 'n': o->iters        = v; break;
            case 'w': o->warmup       = v; break;
            case 'p': o->postlist     = v; break;
            case 'c': o->signal_every = v; break;
            case 'r': o->rx_depth     = v; break;
            case 'b': o->rx_batch     = v; break;
            case 'T': o->timeout      = v; break;
            }
        }
    }
    if (optind != argc)
        return fail_msg("unexpected argument '%s'", argv[optind]);
    return opts_finish(o, have_srv_dev);
}

/* ::1 is what works on rxe over lo; then any routable GID; else index 0 */
static int gid_rank(const union ibv_gid *g)
{
    static const uint8_t loopback[16] = {[15] = 1}, zero[16];

    if (!memcmp(g->raw, loopback, 16))
        return 2;
    return (!memcmp(g->raw, zero, 16) ||
            ((g->raw[0] == 0xfe) && ((g->raw[1] & 0xc0) == 0x80))) ? 0 : 1;
}

static int gid_pick(res_t *r, int want, int tbl_len)
{
    static const uint8_t zero[16];
    int                  i, rank, best = 0, best_rank = 0, rc;
    union ibv_gid        g;

    for (i = 0; (want < 0) && (i < tbl_len) && (best_rank < 2); i++) {
        /* empty entries fail or read as zero: either way, skipped */
        if ((ibv_query_gid(r->ctx, r->port, i, &g) == 0) &&
            ((rank = gid_rank(&g)) > best_rank))
            best = i, best_rank = rank;
    }
    r->gid_index = (want < 0) ? best : want;
    if ((rc = ibv_query_gid(r->ctx, r->port, r->gid_index, &r->gid)))
        return fail_rc("ibv_query_gid", rc);
    if (!memcmp(r->gid.raw, zero, 16))
        return fail_msg("GID index %d is empty (try -g)", r->gid_index);
    return 0;
}

static int res_open(res_t *r, const char *dev, int port)
{
    struct ibv_device      **list;
    struct ibv_port_attr   pa;
    struct ibv_device_attr da;
    int                    i, n, rc, err = 0;

    if (!(list = ibv_get_device_list(&n)))
        return fail("ibv_get_device_list", errno);
    for (i = 0; (i < n) && strcmp(ibv_get_device_name(list[i]), dev); i++);
    if ((i < n) && !(r->ctx = ibv_open_device(list[i])))
        err = errno;
    ibv_free_device_list(list);
    if (i == n)
        return fail_msg("device %s not found (see ibv_devices)", dev);
    if (!r->ctx)
        return fail("ibv_open_device", err);
    r->port = port;
    if ((rc = ibv_query_port(r->ctx, r->port, &pa)))
        return fail_rc("ibv_query_port", rc);
    if ((rc = ibv_query_device(r->ctx, &da)))
        return fail_rc("ibv_query_device", rc);
    if (pa.state != IBV_PORT_ACTIVE)
        return fail_msg("%s:%d is %s, not ACTIVE", dev, port,
                        ibv_port_state_str(pa.state));
    r->lid     = pa.lid;
    r->mtu     = pa.active_mtu;
    r->max_msg = pa.max_msg_sz;
    r->max_wr  = da.max_qp_wr;
    if (gid_pick(r, r->o->gid_index, pa.gid_tbl_len))
        return -1;
    return (r->pd = ibv_alloc_pd(r->ctx)) ? 0 : fail("ibv_alloc_pd", errno);
}

/* Sizes, once both ports' MTUs are known (UD payload <= the path MTU) */
static int res_plan(res_t *r)
{
    const opts_t *o  = r->o;
    unsigned     mtu = 128u << r->mtu, deep;   /* IBV_MTU_256 == 1 */

    r->size = o->size;
    if (!o->mode->rc && (r->size > mtu)) {
        if (!r->is_server)
            fprintf(stderr, "note: size %zu clamped to the path MTU %u\n",
                    r->size, mtu);
        r->size = mtu;
    }
    if (r->size > r->max_msg)
        return fail_msg("size %zu is over the port's max_msg_sz %" PRIu64,
                        r->size, r->max_msg);
    r->has_rx   = o->mode->lat || r->is_server;
    r->slots    = (o->mode->lat || (r->is_server && !o->mode->write)) ?
                  o->rx_depth : 0;
    r->slot_len = r->size + (o->mode->rc ? 0 : GRH_LEN);
    r->tx_len   = (r->size + 63) & ~(size_t)63;
    /* room for two signal intervals (and two postlists) in flight */
    deep        = 2 * ((o->signal_every > o->postlist) ? o->signal_every :
                       o->postlist);
    r->sq_depth = min_u64((deep < 256) ? 256 : deep, r->max_wr);
    if (r->sq_depth < o->signal_every)
        return fail_msg("-c %u is over the send queue depth %u",
                        o->signal_every, r->sq_depth);
    return 0;
}

static int qp_create(res_t *r)
{
    struct ibv_qp_init_attr qa = {
        .send_cq = r->scq, .recv_cq = r->rcq, .srq = r->srq,
        .qp_type = r->o->mode->rc ? IBV_QPT_RC : IBV_QPT_UD,
        .cap     = {.max_send_wr = r->sq_depth,
                    .max_recv_wr = r->srq ? 0 : (r->slots ? r->slots : 1),
                    .max_send_sge = 1, .max_recv_sge = 1,
                    .max_inline_data = INLINE_REQ},
    };

    if (!(r->qp = ibv_create_qp(r->pd, &qa)))
        return fail("ibv_create_qp", errno);
    r->max_inline = qa.cap.max_inline_data;   /* what the device granted */
    return 0;
}

static int res_alloc(res_t *r)
{
    const opts_t             *o = r->o;
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = r->slots, .max_sge = 1}};
    size_t                   len = r->tx_len + (size_t)r->slots * r->slot_len;

    if (posix_memalign((void**)&r->buf, 4096, len))
        return fail("posix_memalign", ENOMEM);
    memset(r->buf, 0xa5, len);
    if (!(r->mr = ibv_reg_mr(r->pd, r->buf, len, IBV_ACCESS_LOCAL_WRITE |
                                                 IBV_ACCESS_REMOTE_WRITE)))
        return fail("ibv_reg_mr", errno);
    if (!(r->scq = ibv_create_cq(r->ctx, r->sq_depth, NULL, NULL, 0)) ||
        !(r->rcq = ibv_create_cq(r->ctx, r->slots + 1, NULL, NULL, 0)))
        return fail("ibv_create_cq", errno);
    if (o->use_srq && r->slots && !(r->srq = ibv_create_srq(r->pd, &sa)))
        return fail("ibv_create_srq", errno);
    r->swr        = calloc(o->postlist, sizeof(*r->swr));
    r->ssge       = calloc(o->postlist, sizeof(*r->ssge));
    r->rwr        = calloc(o->rx_batch, sizeof(*r->rwr));
    r->rsge       = calloc(o->rx_batch, sizeof(*r->rsge));
    r->free_slots = calloc(r->slots + 1, sizeof(*r->free_slots));
    if (!r->swr || !r->ssge || !r->rwr || !r->rsge || !r->free_slots)
        return fail("calloc", ENOMEM);
    return qp_create(r);
}

static void check(const char *call, int rc)
{
    if (rc)
        fail_rc(call, rc);
}

static void res_close(res_t *r)
{
    if (r->ah)  check("ibv_destroy_ah", ibv_destroy_ah(r->ah));
    if (r->qp)  check("ibv_destroy_qp", ibv_destroy_qp(r->qp));
    if (r->srq) check("ibv_destroy_srq", ibv_destroy_srq(r->srq));
    if (r->scq) check("ibv_destroy_cq", ibv_destroy_cq(r->scq));
    if (r->rcq) check("ibv_destroy_cq", ibv_destroy_cq(r->rcq));
    if (r->mr)  check("ibv_dereg_mr", ibv_dereg_mr(r->mr));
    if (r->pd)  check("ibv_dealloc_pd", ibv_dealloc_pd(r->pd));
    if (r->ctx) check("ibv_close_device", ibv_close_device(r->ctx));
    free(r->buf), free(r->swr), free(r->ssge);
    free(r->rwr), free(r->rsge), free(r->free_slots);
}

static int ctl_send(res_t *r, ctl_t *m)
{
    ssize_t n = send(r->sock, m, sizeof(*m), MSG_NOSIGNAL);

    return (n == sizeof(*m)) ? 0 :
           fail("send(socketpair)", (n < 0) ? errno : EPIPE);
}

/* One control message within timeout seconds: its type, 0 if none came,
 * -1 on error. Credits are absorbed here, whoever is waiting. */
static int ctl_pump(res_t *r, double timeout, ctl_t *m)
{
    struct pollfd p  = {.fd = r->sock, .events = POLLIN};
    int           rc = poll(&p, 1, (int)(timeout * 1000));
    ssize_t       n;

    if (rc <= 0)
        return ((rc == 0) || (errno == EINTR)) ? 0 :
               fail("poll(socketpair)", errno);
    n = recv(r->sock, m, sizeof(*m), 0);
    if ((n == 0) || ((n < 0) && (errno == ECONNRESET)))
        return fail_msg("the peer process exited");
    if (n < 0)
        return fail("recv(socketpair)", errno);
    if (n != sizeof(*m))
        return fail_msg("short control message (%zd bytes)", n);
    if (m->type == CTL_CREDIT)
        r->credit_limit += m->count;
    return (int)m->type;
}

static int ctl_expect(res_t *r, uint32_t type, ctl_t *m)
{
    double left;
    int    t;

    do {
        if ((left = g_deadline - now_sec()) <= 0)
            return fail_msg("timed out waiting for the peer (message %u)",
                            type);
        if ((t = ctl_pump(r, (left > 1) ? 1 : left, m)) < 0)
            return -1;
    } while ((t == 0) || ((t == CTL_CREDIT) && (type != CTL_CREDIT)));
    return (t == (int)type) ? 0 :
           fail_msg("unexpected control message %d (wanted %u)", t, type);
}

/* The server keeps its QP until the client is done: an RC ACK or a last UD
 * completion must not race with the peer's teardown. */
static void ctl_wait_close(res_t *r)
{
    struct pollfd p = {.fd = r->sock, .events = POLLIN};
    ctl_t         m;

    while ((now_sec() < g_deadline) && (poll(&p, 1, 1000) >= 0)) {
        if ((p.revents & (POLLHUP | POLLERR)) ||
            ((p.revents & POLLIN) && (recv(r->sock, &m, sizeof(m), 0) <= 0)))
            break;
    }
}

static int exchange(res_t *r)
{
    ctl_t m = {.type = CTL_INFO, .info = {.mtu = r->mtu}};

    if (r->qp)
        m.info = (ep_info_t){.gid = r->gid, .addr = (uintptr_t)r->buf,
                             .qpn = r->qp->qp_num, .psn = START_PSN,
                             .rkey = r->mr->rkey, .mtu = r->mtu,
                             .lid = r->lid};
    if (ctl_send(r, &m) || ctl_expect(r, CTL_INFO, &m))
        return -1;
    r->peer = m.info;
    r->mtu  = (m.info.mtu < (uint32_t)r->mtu) ? m.info.mtu : r->mtu;
    return 0;
}

static int qp_modify(res_t *r, struct ibv_qp_attr *a, int mask, const char *s)
{
    int rc = ibv_modify_qp(r->qp, a, IBV_QP_STATE | mask);

    return rc ? fail_msg("ibv_modify_qp(%s) failed: %s", s,
                         strerror((rc > 0) ? rc : errno)) : 0;
}

static int qp_connect(res_t *r)
{
    int                is_rc = r->o->mode->rc;
    struct ibv_qp_attr ini = {.qp_state = IBV_QPS_INIT, .port_num = r->port,
                              .qkey = QKEY,
                              .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
    struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR, .path_mtu = r->mtu,
                              .dest_qp_num = r->peer.qpn,
                              .rq_psn = r->peer.psn, .max_dest_rd_atomic = 1,
                              .min_rnr_timer = 12};
    struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .sq_psn = START_PSN,
                              .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
                              .max_rd_atomic = 1};
    struct ibv_ah_attr *ah = &rtr.ah_attr;

    ah->dlid           = r->peer.lid;
    ah->port_num       = r->port;
    ah->is_global      = 1;   /* RoCE needs the GRH; IB accepts it */
    ah->grh.dgid       = r->peer.gid;
    ah->grh.sgid_index = r->gid_index;
    ah->grh.hop_limit  = 64;
    if (qp_modify(r, &ini, IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                  (is_rc ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY), "INIT") ||
        qp_modify(r, &rtr, !is_rc ? 0 : IBV_QP_AV | IBV_QP_PATH_MTU |
                  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, "RTR") ||
        qp_modify(r, &rts, IBV_QP_SQ_PSN | (!is_rc ? 0 : IBV_QP_TIMEOUT |
                  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                  IBV_QP_MAX_QP_RD_ATOMIC), "RTS"))
        return -1;
    if (!is_rc && !(r->ah = ibv_create_ah(r->pd, ah)))
        return fail("ibv_create_ah", errno);
    return 0;
}

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
