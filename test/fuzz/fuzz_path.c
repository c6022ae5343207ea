/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * libFuzzer target over srqud's whole receive path: every file of
 * src/uct/ib/srqud compiled into this binary, run by the stock UCX as an
 * application runs it (component, md, interface, worker, endpoints,
 * registrations), over the fake verbs device of fake_verbs.c. The input is
 * a script of operations, interleaved and stateful:
 *
 * - packets from fake peers (4 hosts, each with an interface QP, a pool QP
 *   and a chunk QP) into srqud's SRQ: raw ones with fields biased toward
 *   valid values, and the peers' own protocol (their connections to
 *   srqud's passive eps: CREQ, AMs with back-ack trailers, RMA_PUT/GET,
 *   ZGET, ZPUT and the chunks and ZFIN that follow a ZCTS);
 * - the peers' answers to what srqud sent them (CREP, ACK/SACK, RMA
 *   replies and refusals, ZCTS, ZACK, the chunks and ZFIN of srqud's gets),
 *   each with a fuzzer-chosen corruption now and then;
 * - the user's operations: endpoints, AM, put/get short/bcopy/zcopy,
 *   flushes (with and without CANCEL), fence, ep_check, pending requests,
 *   registrations and deregistrations, progress, the async tick, time;
 * - the device's: send completions (success or error), lost packets.
 *
 * Checked: every SGE against its registration (fake_verbs.c), chunk sends
 * and receives inside a transfer's buffer, reads past a packet (ASan
 * poisons the rest of an SRQ buffer), completions at most once and never
 * after uct_ep_destroy returned, a get's bytes when its peer told the
 * truth, memory registered without remote write never written by peers,
 * srqud's counters (every receive buffer accounted for), and at the end of
 * each input every verbs object destroyed and (LeakSanitizer) nothing
 * leaked.
 *
 * The target's files: fuzz_path.c (the input, the checks and a run),
 * fuzz_path_peers.c and fuzz_path_peers_req.c (the fake peers),
 * fuzz_path_user.c (the user's operations), fuzz_path.h (what they share).
 *
 *   test/fuzz/run.sh [SECONDS]
 */

#include "fuzz_path.h"


/* ------------------------------------------------------------------------
 * The input
 */

uint8_t in8(input_t *in)
{
    uint8_t v = 0;

    if (in->left > 0) {
        v = *in->p++;
        --in->left;
    }
    return v;
}

/* little endian; the operands' order of evaluation is unspecified */
uint16_t in16(input_t *in)
{
    uint16_t lo = in8(in);

    return lo | ((uint16_t)in8(in) << 8);
}

uint32_t in32(input_t *in)
{
    uint32_t lo = in16(in);

    return lo | ((uint32_t)in16(in) << 16);
}


/* ------------------------------------------------------------------------
 * Time and randomness of srqud (fuzz_path_hooks.h)
 */

static ucs_time_t fz_now;
static uint64_t   fz_rand;

ucs_time_t fuzz_path_clock(void)
{
    return fz_now;
}

static uint64_t fz_next_rand(void)
{
    fz_rand ^= fz_rand << 13;
    fz_rand ^= fz_rand >> 7;
    fz_rand ^= fz_rand << 17;
    return fz_rand;
}

uint64_t fuzz_path_uuid(uint64_t seed)
{
    return fz_next_rand() ^ (seed * 0x9e3779b97f4a7c15ull);
}

ssize_t fuzz_path_getrandom(void *buf, size_t len, unsigned flags)
{
    uint8_t *p = buf;
    size_t i;

    for (i = 0; i < len; ++i) {
        p[i] = (uint8_t)(fz_next_rand() >> 24);
    }
    return len;
}


/* ------------------------------------------------------------------------
 * The state of a run
 */

uint8_t regions_mem[NREGIONS][REGION_SIZE]
    __attribute__((aligned(4096)));
uint8_t shadow[2][REGION_SIZE];   /* R0, R1: never written by peers */


struct fz_state G;


/* ------------------------------------------------------------------------
 * Completions
 */

/* Completions of an ep's operations may come until uct_ep_destroy returns
 * (comps of a destroyed ep are relabeled MAX_EPS + slot then) */
static int ep_may_complete(int slot)
{
    return (slot < 0) ||
           ((slot < MAX_EPS) &&
            (!G.eps[slot].destroyed || G.eps[slot].in_destroy));
}


/* The bytes of a local get that completed: what its peer sent, if no
 * packet in its lifetime lied */
static void comp_check_get(const fz_comp_t *c)
{
    const uint8_t *p = (const uint8_t*)(uintptr_t)c->addr;
    uint64_t i;

    if ((c->status != UCS_OK) || (c->lies_at != G.lies)) {
        return;
    }
    static uint8_t expect[REGION_SIZE];

    for (i = 0; i < c->len; ++i) {
        expect[i] = pattern(c->raddr + i, 0);
    }
    if (memcmp(p, expect, c->len) == 0) {
        return;
    }
    for (i = 0; i < c->len; ++i) {
        if (p[i] != pattern(c->raddr + i, 0)) {
            FAIL("get of %lu bytes from 0x%lx into region %d completed OK, "
                 "but byte %lu is 0x%02x instead of 0x%02x",
                 (unsigned long)c->len, (unsigned long)c->raddr, c->region,
                 (unsigned long)i, p[i], pattern(c->raddr + i, 0));
        }
    }
}


static void comp_cb(uct_completion_t *self)
{
    fz_comp_t *c = ucs_container_of(self, fz_comp_t, uc);

    if (c->state != COMP_PENDING) {
        FAIL("a completion (kind %d, ep %d) called in state %d (twice, or "
             "for an operation that did not return UCS_INPROGRESS)", c->kind,
             c->ep, c->state);
    }
    if (!ep_may_complete(c->ep)) {
        FAIL("a completion (kind %d) of ep slot %d after uct_ep_destroy "
             "returned", c->kind, c->ep);
    }
    c->state  = COMP_DONE;
    c->status = self->status;
    TRACE("completion kind %d ep %d: %s", c->kind, c->ep,
          ucs_status_string(c->status));
    if (c->kind == OP_GET) {
        comp_check_get(c);
        /* its range of R0/R1 holds what the get wrote */
        memcpy(&shadow[c->region][c->addr - (uintptr_t)regions_mem[c->region]],
               (void*)(uintptr_t)c->addr, c->len);
    }
}


fz_comp_t *comp_new(int kind, int ep)
{
    fz_comp_t *c;

    if (G.ncomps == MAX_COMPS) {
        return NULL;
    }
    c = &G.comps[G.ncomps++];
    memset(c, 0, sizeof(*c));
    c->uc.func   = comp_cb;
    c->uc.count  = 1;
    c->uc.status = UCS_OK;
    c->state     = COMP_PENDING;
    c->kind      = kind;
    c->ep        = ep;
    c->region    = -1;
    c->lies_at   = G.lies;
    return c;
}


/* The operation returned: a completion it did not take must not come */
void comp_returned(fz_comp_t *c, ucs_status_t status)
{
    if ((c != NULL) && (status != UCS_INPROGRESS) &&
        (c->state == COMP_PENDING)) {
        c->state = COMP_UNUSED;
        if ((c->kind == OP_GET) && (status == UCS_OK)) {
            c->status = UCS_OK;
            c->state  = COMP_DONE;
            comp_check_get(c);
            memcpy(&shadow[c->region][c->addr -
                                      (uintptr_t)regions_mem[c->region]],
                   (void*)(uintptr_t)c->addr, c->len);
            c->state = COMP_UNUSED;
        }
    }
}


/* Does a pending operation use region @a r (the user may not free it) */
int region_busy(int r)
{
    const fz_comp_t *c;
    unsigned i;

    for (i = 0; i < G.ncomps; ++i) {
        c = &G.comps[i];
        if ((c->state == COMP_PENDING) && (c->region == r)) {
            return 1;
        }
    }
    return 0;
}


/* ------------------------------------------------------------------------
 * Invariants
 */

/* A chunk send must read, a chunk receive write, inside the buffer of a
 * transfer: the user's put (send) or get (receive) in progress, or what a
 * peer's ZGET (send) or ZPUT (receive) named */
static int range_check(int is_send, uint64_t addr, uint64_t len)
{
    const fz_comp_t *c;
    unsigned i;

    for (i = 0; i < G.ncomps; ++i) {
        c = &G.comps[i];
        if ((c->state == COMP_PENDING) &&
            (c->kind == (is_send ? OP_PUT : OP_GET)) && (addr >= c->addr) &&
            (addr + len <= c->addr + c->len)) {
            return 0;
        }
    }
    for (i = 0; i < G.nnamed; ++i) {
        if ((G.named[i].is_get == is_send) && (addr >= G.named[i].addr) &&
            (addr + len <= G.named[i].addr + G.named[i].len)) {
            return 0;
        }
    }
    return -1;
}


void named_add(uint64_t addr, uint64_t len, int is_get)
{
    if (G.nnamed < ucs_static_array_size(G.named)) {
        G.named[G.nnamed].addr   = addr;
        G.named[G.nnamed].len    = len;
        G.named[G.nnamed].is_get = is_get;
        ++G.nnamed;
    }
}

/* R0 and R1 are registered without remote write: outside the user's gets
 * in progress they hold what the last get left */
static void check_shadow(void)
{
    static uint8_t now[REGION_SIZE];
    const fz_comp_t *c;
    unsigned r, i, off;

    for (r = 0; r < 2; ++r) {
        if (G.reg[r].poisoned) {
            continue;
        }
        memcpy(now, regions_mem[r], REGION_SIZE);
        for (i = 0; i < G.ncomps; ++i) {
            c = &G.comps[i];
            if ((c->state == COMP_PENDING) && (c->region == (int)r) &&
                (c->kind == OP_GET)) {
                off = c->addr - (uintptr_t)regions_mem[r];
                memcpy(now + off, shadow[r] + off, c->len);
            }
        }
        if (memcmp(now, shadow[r], REGION_SIZE) == 0) {
            continue;
        }
        for (i = 0; now[i] == shadow[r][i]; ++i) {
        }
        FAIL("region %u (no remote write access) byte %u changed outside "
             "the user's gets: 0x%02x, was 0x%02x", r, i, now[i],
             shadow[r][i]);
    }
}


static void check_stats(void)
{
    uct_srqud_iface_stats_t s;
    unsigned posted, cq;

    if (G.iface == NULL) {
        return;
    }
    CHECK(uct_srqud_iface_stats_get(G.iface, &s) == UCS_OK);
    if (s.srq_buffers != s.srq_free + s.srq_posted + s.srq_lent) {
        FAIL("receive buffers: %lu allocated != %lu free + %u posted + %lu "
             "lent", s.srq_buffers, s.srq_free, s.srq_posted, s.srq_lent);
    }
    posted = fv_recvs_posted(G.qpn);
    cq     = fv_recv_cq_count(G.qpn);
    /* the pool counts a buffer posted until its completion is polled (up
     * to a stash of 16 polled while arming) */
    if ((s.srq_posted < posted + cq) || (s.srq_posted > posted + cq + 16)) {
        FAIL("srqud counts %u buffers posted, the device has %u posted and "
             "%u completed", s.srq_posted, posted, cq);
    }
    CHECK(s.rx_taken >= G.nkept);
    CHECK(s.srq_lent >= s.rx_taken);
    CHECK(s.passive_eps <= PASSIVE_MAX);
    CHECK(s.rma_refusal_records <=
          (unsigned long)s.passive_eps * REFUSALS_MAX);
    CHECK(s.zcopy_pool_qps <= ZCOPY_QPS);
}


/* ------------------------------------------------------------------------
 * A run: open, script, close
 */

static void run_open(uint8_t cfg)
{
    uct_iface_params_t params;
    uct_srqud_iface_addr_t ifa;
    unsigned i, k, c;

    fv_reset();
    memset(&G.async, 0,
           offsetof(typeof(G), trace) - offsetof(typeof(G), async));
    fz_now      = ucs_time_from_sec(1000.0);
    fz_rand     = 0x2545f4914f6cdd1dull;
    G.next_raddr = 0x7f0000000000ull;
    for (i = 0; i < NREGIONS; ++i) {
        memset(regions_mem[i], (int)(0x11 * i), REGION_SIZE);
        fv_user_region(regions_mem[i], REGION_SIZE);
    }
    memcpy(shadow[0], regions_mem[0], REGION_SIZE);
    memcpy(shadow[1], regions_mem[1], REGION_SIZE);
    for (i = 0; i < MAX_PENDING; ++i) {
        G.pending[i].ep = -1;
    }
    for (k = 0; k < NPEERS; ++k) {
        peer_t *p = &G.peers[k];

        memset(p->gid, 0, 16);
        p->gid[10] = 0xff;
        p->gid[11] = 0xff;
        p->gid[12] = 10;
        p->gid[15] = 2 + k;
        p->qpn       = 0x8000 + 0x100 * k;
        p->pool_qpn  = p->qpn + 0x10;
        p->chunk_qpn = p->qpn + 0x20;
        p->pool_qkey = 0x1000 + k;
        for (c = 0; c < NCONNS; ++c) {
            p->conn[c].my_id    = 10 * k + c;
            p->conn[c].token    = 0xa0a00000u + 0x100 * k + c;
            p->conn[c].conn_sn  = 77 + c;
            p->conn[c].srqud_id = EP_ID_NONE;
        }
    }

    CHECK(ucs_async_context_create(UCS_ASYNC_MODE_POLL, &G.async) == UCS_OK);
    CHECK(uct_worker_create(G.async, UCS_THREAD_MODE_SINGLE, &G.worker) ==
          UCS_OK);
    CHECK(uct_md_open(G.component, FV_DEV_NAME, G.md_config[cfg & 1],
                      &G.md) == UCS_OK);

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE |
                                  UCT_IFACE_PARAM_FIELD_RX_HEADROOM |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS |
                                  UCT_IFACE_PARAM_FIELD_CPU_MASK;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "srqud";
    params.mode.device.dev_name = FV_DEV_NAME ":1";
    params.rx_headroom          = 0;
    params.err_handler          = err_handler;
    params.err_handler_arg      = NULL;
    params.err_handler_flags    = 0;
    UCS_CPU_ZERO(&params.cpu_mask);
    CHECK(uct_iface_open(G.md, G.worker, &params, G.iface_config, &G.iface) ==
          UCS_OK);
    CHECK(uct_iface_query(G.iface, &G.attr) == UCS_OK);
    CHECK(uct_iface_get_address(G.iface, (uct_iface_addr_t*)&ifa) == UCS_OK);
    G.qpn = uct_srqud_unpack_qpn(ifa.qp_num);
    for (i = 0; i < 4; ++i) {
        uct_iface_set_am_handler(G.iface, i, am_handler, NULL, 0);
    }
    uct_iface_progress_enable(G.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    G.keep_descs = (cfg >> 1) & 1;
    fv_set_range_check(range_check);
}


static void run_close(void)
{
    char what[256];
    unsigned i;

    release_kept(MAX_KEPT);
    for (i = 0; i < MAX_EPS; ++i) {
        op_ep_destroy(i);
    }
    G.closing = 1;
    uct_iface_close(G.iface);
    G.iface = NULL;
    for (i = 0; i < NREGIONS; ++i) {
        if (G.reg[i].poisoned) {
            region_poison(i, 0);
        }
        if (G.reg[i].memh != NULL) {
            CHECK(uct_md_mem_dereg(G.md, G.reg[i].memh) == UCS_OK);
            G.reg[i].memh = NULL;
        }
    }
    uct_md_close(G.md);
    G.md = NULL;
    uct_worker_destroy(G.worker);
    ucs_async_context_destroy(G.async);
    G.closing = 0;
    if (fv_live_objects(what, sizeof(what)) != 0) {
        FAIL("verbs objects left after the md closed: %s", what);
    }
}


static void advance(uint8_t t)
{
    /* from 1 us to over a minute, in 64 steps */
    fz_now += ucs_time_from_usec(1u << (t % 27)) + (t >> 5);
}


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input_t in = {data, size};
    unsigned ops = 0;
    uint8_t op, a;

    if (size < 1) {
        return 0;
    }
    run_open(in8(&in));

    /* the user registers its memory first */
    for (a = 0; a < NREGIONS; ++a) {
        input_t reg = {(const uint8_t[]){a, 0, 0, 0, 0, 0}, 6};
        op_mem(&reg);
    }

    while ((in.left > 0) && (ops++ < 512)) {
        op = in8(&in);
        TRACE("op %u (%u)", op % 24, op);
        switch (op % 24) {
        case 0:
        case 1:
            raw_packet(&in);
            break;
        case 2:
        case 3:
        case 4:
            peer_request(&in);
            break;
        case 5:
        case 6:
        case 7: {
            uint8_t k = in8(&in) % NPEERS, sel = in8(&in), m = in8(&in),
                    m2 = in8(&in);
            const fv_send_t *s = inbox_pick(k, sel);

            if (s == NULL) {
                complete_sends(0, 0, IBV_WC_SUCCESS);
                s = inbox_pick(k, sel);
            }
            if (s != NULL) {
                peer_receive(k, s, m, m2);
            }
            break;
        }
        case 8: { /* a peer's chunks go on, or a forged one */
            uint8_t j = in8(&in), n, m;

            if (j & 0x80) {
                raw_chunk(&in);
                break;
            }
            n = in8(&in);
            m = in8(&in);
            if (G.jobs[j % MAX_JOBS].used) {
                job_send(&G.jobs[j % MAX_JOBS], 1 + n % 40, m);
            }
            break;
        }
        case 9:
        case 10:
            uct_worker_progress(G.worker);
            if (op & 0x20) {
                uct_worker_progress(G.worker);
                uct_worker_progress(G.worker);
            }
            break;
        case 11:
            advance(in8(&in));
            break;
        case 12: /* the async tick: the user is away */
            fz_now += ucs_time_from_msec(11);
            ucs_async_poll(G.async);
            break;
        case 13: {
            uint8_t sel = in8(&in), n = in8(&in), st = in8(&in);

            complete_sends(sel, 1 + n % 48,
                           ((st & 0xf) == 0xf) ? IBV_WC_LOC_PROT_ERR :
                                                 IBV_WC_SUCCESS);
            break;
        }
        case 14:
            op_ep_create(in8(&in));
            break;
        case 15:
            a = in8(&in);
            if ((a & 3) == 3) {
                op_ep_destroy(ep_slot(a >> 2));
            }
            break;
        case 16:
            op_am(&in);
            break;
        case 17:
        case 18:
            op_rma(&in);
            break;
        case 19:
            op_flush(&in);
            break;
        case 20:
            op_mem(&in);
            break;
        case 21:
            a = in8(&in);
            if (a & 1) {
                release_kept(1 + (a >> 1) % 4);
            } else {
                op_pending(a >> 1);
            }
            break;
        case 22:
            uct_iface_event_arm(G.iface, UCT_EVENT_SEND_COMP |
                                         UCT_EVENT_RECV);
            break;
        default: { /* a packet to a peer is lost */
            uint8_t k = in8(&in) % NPEERS, sel = in8(&in);

            inbox_pick(k, sel);
            break;
        }
        }
        observe();
        check_stats();
    }

    check_shadow();
    if (G.trace) {
        uct_srqud_iface_stats_t st;

        uct_srqud_iface_stats_get(G.iface, &st);
        TRACE("stats: rx %lu tx %lu malformed %lu no_ep %lu bad_token %lu "
              "passive %u zcopy_xfers %lu chunks_sent %lu misplaced %lu "
              "moved %lu refused %lu rma_refused %lu retransmits %lu "
              "failures %lu srq_limit %u limit_events %lu back_taken %lu "
              "async_queued %lu", st.rx_packets, st.tx_packets,
              st.rx_dropped_malformed, st.rx_no_ep, st.rx_bad_token,
              st.passive_eps, st.zcopy_xfers, st.zcopy_chunks_sent,
              st.zcopy_misplaced, st.zcopy_moved, st.zcopy_refused,
              st.rma_refused, st.tx_retransmits, st.ep_failures,
              st.srq_limit, st.srq_limit_events, st.back_acks_taken,
              st.async_queued);
    }
    run_close();
    return 0;
}


int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char *env[][2] = {
        {"UCX_SRQUD_TX_QUEUE_LEN",     "32"},
        {"UCX_SRQUD_TX_CQ_MODERATION", "8"},
        /* the user's streams batch as on Soft-RoCE (auto: never on the
         * fake device, whose vendor id is not Soft-RoCE's) */
        {"UCX_SRQUD_TX_BATCH_AFTER",   "8"},
        /* 16 held, 5 messages of several packets begun (of 6 passive
         * eps): the bounds are reached */
        {"UCX_SRQUD_SRQ_SIZE",         "32"},
        {"UCX_SRQUD_SRQ_MAX_SIZE",     "128"},
        {"UCX_SRQUD_RX_POST_BATCH",    "16"},
        {"UCX_SRQUD_STALLED_MAX",      "16"},
        {"UCX_SRQUD_TX_WINDOW",        "32"},
        {"UCX_SRQUD_ACK_THRESH",       "8"},
        {"UCX_SRQUD_BACK_ACK_EVERY",   "4"},
        {"UCX_SRQUD_RX_REORDER",       "32"},
        {"UCX_SRQUD_ZCOPY_QPS",        "2"},
        {"UCX_SRQUD_ZCOPY_RQ_DEPTH",   "16"},
        /* rounds wait behind a full send queue now and then */
        {"UCX_SRQUD_ZCOPY_SQ_DEPTH",   "32"},
        {"UCX_SRQUD_ZCOPY_PEER_JOBS",  "2"},
        {"UCX_SRQUD_PASSIVE_MAX",      "6"},
        {"UCX_SRQUD_RMA_REFUSALS_MAX", "3"},
        {"UCX_SRQUD_TIMEOUT",          "5s"},
        {"UCX_SRQUD_PASSIVE_IDLE",     "10s"}
    };
    uct_component_h *components;
    unsigned i, n;
    uct_component_attr_t attr;

    for (i = 0; i < ucs_static_array_size(env); ++i) {
        setenv(env[i][0], env[i][1], 0);
    }
    G.trace = (getenv("FUZZ_PATH_TRACE") != NULL);
    /* UCX's own modules (ib, rdmacm, cma) would bring the real verbs */
    ucs_global_opts_set_value("MODULES", "^ib,rdmacm,cma");
    if (getenv("FUZZ_PATH_LOG") == NULL) {
        ucs_global_opts_set_value("LOG_LEVEL", "fatal");
    }

    CHECK(uct_query_components(&components, &n) == UCS_OK);
    for (i = 0; i < n; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, "srqud")) {
            G.component = components[i];
        }
    }
    uct_release_component_list(components);
    if (G.component == NULL) {
        FAIL("the srqud component did not register (its constructor)");
    }

    CHECK(uct_md_config_read(G.component, NULL, NULL, &G.md_config[0]) ==
          UCS_OK);
    CHECK(uct_md_config_read(G.component, NULL, NULL, &G.md_config[1]) ==
          UCS_OK);
    CHECK(uct_config_modify(G.md_config[1], "RCACHE", "no") == UCS_OK);
    fv_reset();
    {
        /* the iface config needs an md */
        uct_md_h md;

        CHECK(uct_md_open(G.component, FV_DEV_NAME, G.md_config[1], &md) ==
              UCS_OK);
        CHECK(uct_md_iface_config_read(md, "srqud", NULL, NULL,
                                       &G.iface_config) == UCS_OK);
        uct_md_close(md);
    }
    return 0;
}
