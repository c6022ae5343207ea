/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * srqud_rawperf's setup: options, the verbs device and queues, the control
 * messages over the socketpair, connecting the QPs.
 */

#include "srqud_rawperf.h"

static const bench_mode_t modes[] = {
    {"ud_bw", 0, 0, 0, 4096},       {"ud_msgrate", 0, 0, 0, 8},
    {"ud_lat", 0, 1, 0, 8},         {"rc_write_bw", 1, 0, 1, 65536},
    {"rc_send_bw", 1, 0, 0, 65536}, {"rc_lat", 1, 1, 0, 8},
};
#define NUM_MODES (sizeof(modes) / sizeof(modes[0]))

const char *g_prog = "srqud_rawperf";
const char *g_role = "client";
double     g_deadline;

double now_sec(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int fail_msg(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s %s: ", g_prog, g_role);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return -1;
}

int fail(const char *call, int err)
{
    return fail_msg("%s failed: %s", call, strerror(err));
}

/* Verbs calls return an errno value; a few return -1 and set errno */
int fail_rc(const char *call, int rc)
{
    return fail(call, rc > 0 ? rc : (errno ? errno : EIO));
}

uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static void usage(FILE *f)
{
    fprintf(f,
"Usage: srqud_rawperf [options]\n"
"  -t MODE      ud_bw (default), ud_msgrate, ud_lat, rc_write_bw, rc_send_bw,\n"
"               rc_lat\n"
"  -d DEV:PORT  client (sender) device, default rxe0:1\n"
"  -D DEV:PORT  server (receiver) device, default the same as -d\n"
"  -g INDEX     GID index on both sides; default auto: the GID ::1 if the\n"
"               port has it (rxe over lo), else the first non-zero GID that\n"
"               is not link-local fe80::, else index 0\n"
"  -s SIZE      message size (k/m suffixes); UD: payload, clamped to the\n"
"               active MTU. Default 4096 ud_bw, 8 ud_msgrate/ud_lat/rc_lat,\n"
"               65536 the other rc_*\n"
"  -n ITERS     timed messages; default 20000 UD, 10000 ud_lat/rc_lat,\n"
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
"               half_rtt_us (ud_lat and rc_lat only, else 0)\n"
"Counters cover the timed part, both processes summed. MB = 2^20 bytes.\n"
"Examples: srqud_rawperf -t ud_bw -s 4096\n"
"          srqud_rawperf -t rc_write_bw -s 4194304\n");
}

int parse_devport(const char *s, char *dev, int *port)
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
int parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *v)
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

int parse_opts(int argc, char **argv, opts_t *o)
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

int res_open(res_t *r, const char *dev, int port)
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
int res_plan(res_t *r)
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

int res_alloc(res_t *r)
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

void res_close(res_t *r)
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

int ctl_send(res_t *r, ctl_t *m)
{
    ssize_t n = send(r->sock, m, sizeof(*m), MSG_NOSIGNAL);

    return (n == sizeof(*m)) ? 0 :
           fail("send(socketpair)", (n < 0) ? errno : EPIPE);
}

/* One control message within timeout seconds: its type, 0 if none came,
 * -1 on error. Credits are absorbed here, whoever is waiting. */
int ctl_pump(res_t *r, double timeout, ctl_t *m)
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

int ctl_expect(res_t *r, uint32_t type, ctl_t *m)
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
void ctl_wait_close(res_t *r)
{
    struct pollfd p = {.fd = r->sock, .events = POLLIN};
    ctl_t         m;

    while ((now_sec() < g_deadline) && (poll(&p, 1, 1000) >= 0)) {
        if ((p.revents & (POLLHUP | POLLERR)) ||
            ((p.revents & POLLIN) && (recv(r->sock, &m, sizeof(m), 0) <= 0)))
            break;
    }
}

int exchange(res_t *r)
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

void ah_attr_fill(const res_t *r, const ep_info_t *peer,
                  struct ibv_ah_attr *ah)
{
    *ah = (struct ibv_ah_attr){.dlid = peer->lid, .port_num = r->port,
                               .is_global = 1};   /* RoCE needs the GRH */
    ah->grh.dgid       = peer->gid;
    ah->grh.sgid_index = r->gid_index;
    ah->grh.hop_limit  = 64;
}

struct ibv_ah *ah_create(const res_t *r, const ep_info_t *peer)
{
    struct ibv_ah_attr a;
    struct ibv_ah      *ah;

    ah_attr_fill(r, peer, &a);
    if (!(ah = ibv_create_ah(r->pd, &a)))
        fail("ibv_create_ah", errno);
    return ah;
}

static int qp_modify(res_t *r, struct ibv_qp_attr *a, int mask, const char *s)
{
    int rc = ibv_modify_qp(r->qp, a, IBV_QP_STATE | mask);

    return rc ? fail_msg("ibv_modify_qp(%s) failed: %s", s,
                         strerror((rc > 0) ? rc : errno)) : 0;
}

int qp_connect(res_t *r)
{
    int                is_rc = r->o->mode->rc;
    struct ibv_qp_attr ini = {.qp_state = IBV_QPS_INIT, .port_num = r->port,
                              .qkey = QKEY,
                              .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
                                                 IBV_ACCESS_REMOTE_READ};
    struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR, .path_mtu = r->mtu,
                              .dest_qp_num = r->peer.qpn,
                              .rq_psn = r->peer.psn, .max_dest_rd_atomic = 1,
                              .min_rnr_timer = 12};
    struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .sq_psn = START_PSN,
                              .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
                              .max_rd_atomic = 1};

    ah_attr_fill(r, &r->peer, &rtr.ah_attr);
    if (qp_modify(r, &ini, IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                  (is_rc ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY), "INIT") ||
        qp_modify(r, &rtr, !is_rc ? 0 : IBV_QP_AV | IBV_QP_PATH_MTU |
                  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, "RTR") ||
        qp_modify(r, &rts, IBV_QP_SQ_PSN | (!is_rc ? 0 : IBV_QP_TIMEOUT |
                  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                  IBV_QP_MAX_QP_RD_ATOMIC), "RTS"))
        return -1;
    return (!is_rc && !(r->ah = ah_create(r, &r->peer))) ? -1 : 0;
}
