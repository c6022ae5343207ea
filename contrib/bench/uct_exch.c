/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * uct_exch: MPI's small-message exchanges among N processes at the UCT
 * level, each message one active message of a transport (am_short up to
 * its limit, am_bcopy beyond), every call timed alone:
 *
 *   sendrecv   each rank sends to rank+1 and receives from rank-1
 *   rdbl       recursive doubling (2^k ranks): in step k rank r and r^2^k
 *              swap one message (MPI's Allgather and short Allreduce)
 *
 * The rung between srqud_rawexch (the same exchanges over plain verbs: what
 * the device allows) and contrib/bench/mpi_calls.c (through UCP and an MPI
 * library): whether a UD transport's distance from the device's bound is
 * the transport's or the layers' above it. A rank whose progress finds
 * nothing yields the core (Open MPI's ranks do so where they exceed the
 * cores; -Y spins). One process forks the ranks; they exchange addresses
 * over socket pairs. Output as srqud_rawexch's, one line per call and size:
 *
 *   CALL SIZE avg_us p50_us p99_us max_us slow10x over1ms
 *
 *   uct_exch -t srqud -d rxe0:1 -N 4 -c sendrecv,rdbl -s 8,1k
 *
 * Over srqud each rank then prints its interface's packets, doorbells and
 * acknowledgements on stderr, a line starting with '#'. A message from a
 * rank that is not the step's partner, of another length or too far ahead
 * is an error (exit 1).
 */

#include "bench_uct.h"
#include "../../src/tools/srqud_calls_report.h"
#include "../../src/tools/srqud_ranks.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define AM_ID     5
#define MAX_NP    RANKS_MAX
#define MAX_STEPS 4
#define WIN       64        /* calls a message may run ahead */
#define MAX_SIZE  8192

enum { C_SENDRECV, C_RDBL, C_COUNT };
static const char *c_names[C_COUNT] = {"sendrecv", "rdbl"};

typedef struct {
    const char *tl, *dev;
    int        np, yield, calls[C_COUNT], ncalls, nsizes;
    size_t     sizes[8];
    unsigned   iters, warmup, timeout;
} opts_t;

typedef struct {
    const opts_t  *o;
    int           rank;
    const int     *sock;    /* sock[peer]: its end of the mesh */
    bench_ctx_t   ctx;
    bench_iface_t ifc;
    uct_ep_h      ep[MAX_NP];
    unsigned      steps;
    uint64_t      call;
    size_t        size;
    int           failed;
    uint32_t      got[WIN][MAX_STEPS];
    uint8_t       buf[MAX_SIZE];
} rank_t;

/* A message's first 8 bytes: its call (low 32 bits), sender, step */
static uint64_t hdr_make(uint64_t call, int rank, unsigned step)
{
    return (uint32_t)call | ((uint64_t)rank << 32) | ((uint64_t)step << 48);
}


static int full_io(int fd, void *p, size_t len, int out)
{
    ssize_t n;

    while (len > 0) {
        n = out ? write(fd, p, len) : read(fd, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p    = (uint8_t*)p + n;
        len -= (size_t)n;
    }
    return 0;
}


static void exchange_out(rank_t *r, const void *out, size_t len)
{
    int p;

    for (p = 0; p < r->o->np; ++p) {
        if ((p != r->rank) && full_io(r->sock[p], (void*)out, len, 1)) {
            fprintf(stderr, "uct_exch rank %d: write to %d failed\n",
                    r->rank, p);
            exit(1);
        }
    }
}


/* Sends @a out to every peer and reads theirs into @a in[peer] */
static void exchange(rank_t *r, const void *out, void *in, size_t len)
{
    int p;

    exchange_out(r, out, len);
    for (p = 0; p < r->o->np; ++p) {
        if ((p != r->rank) &&
            full_io(r->sock[p], (uint8_t*)in + p * len, len, 0)) {
            fprintf(stderr, "uct_exch rank %d: read from %d failed\n",
                    r->rank, p);
            exit(1);
        }
    }
}




static ucs_status_t am_handler(void *arg, void *data, size_t length,
                               unsigned flags)
{
    rank_t   *r = arg;
    uint64_t h;
    uint32_t call, from, step;

    memcpy(&h, data, sizeof(h));
    call = (uint32_t)h;
    from = (uint32_t)(h >> 32) & 0xffff;
    step = (uint32_t)(h >> 48);
    if ((length != r->size) || (call - (uint32_t)r->call >= WIN) ||
        (step >= MAX_STEPS) || (from >= (uint32_t)r->o->np)) {
        fprintf(stderr, "uct_exch rank %d: call %lu: %zu bytes of call %u "
                "step %u from %u\n", r->rank, (unsigned long)r->call, length,
                call, step, from);
        r->failed = 1;
        return UCS_OK;
    }
    r->got[call % WIN][step]++;
    return UCS_OK;
}


static size_t pack_cb(void *dest, void *arg)
{
    rank_t *r = arg;

    memcpy(dest, r->buf, r->size);
    return r->size;
}


static void progress(rank_t *r)
{
    if (!uct_worker_progress(r->ctx.worker) && r->o->yield) {
        sched_yield();
    }
    if (r->failed) {
        exit(1);
    }
}


/* Every rank here, each progressing while it waits: a peer may need our
 * acknowledgements (or a send of ours still queued) to get here */
static void barrier(rank_t *r)
{
    uint8_t b = 0, in[MAX_NP];
    int     p, left = r->o->np - 1;
    ssize_t n;

    exchange_out(r, &b, 1);
    memset(in, 0, sizeof(in));
    while (left > 0) {
        for (p = 0; p < r->o->np; ++p) {
            if ((p == r->rank) || in[p]) {
                continue;
            }
            n = recv(r->sock[p], &b, 1, MSG_DONTWAIT);
            if (n == 1) {
                in[p] = 1;
                --left;
            } else if ((n == 0) || ((errno != EAGAIN) && (errno != EINTR))) {
                fprintf(stderr, "uct_exch rank %d: rank %d is gone\n",
                        r->rank, p);
                exit(1);
            }
        }
        progress(r);
    }
}


/* One message of the running size to @a peer, step @a step */
static void send_to(rank_t *r, int peer, unsigned step)
{
    uint64_t     h = hdr_make(r->call, r->rank, step);
    ucs_status_t status;
    ssize_t      len;

    memcpy(r->buf, &h, sizeof(h));
    for (;;) {
        if (r->size <= r->ifc.attr.cap.am.max_short) {
            status = uct_ep_am_short(r->ep[peer], AM_ID, h, r->buf + sizeof(h),
                                     (unsigned)(r->size - sizeof(h)));
        } else {
            len    = uct_ep_am_bcopy(r->ep[peer], AM_ID, pack_cb, r, 0);
            status = (len < 0) ? (ucs_status_t)len : UCS_OK;
        }
        if (status != UCS_ERR_NO_RESOURCE) {
            break;
        }
        progress(r);
    }
    bench_check(status, "am send");
}


static void await_step(rank_t *r, unsigned step)
{
    uint32_t *got = &r->got[r->call % WIN][step];

    while (*got == 0) {
        progress(r);
    }
    --*got;
}


static void one_call(rank_t *r, int call)
{
    int      np = r->o->np;
    unsigned k;

    if (call == C_SENDRECV) {
        send_to(r, (r->rank + 1) % np, 0);
        await_step(r, 0);
    } else {
        for (k = 0; k < r->steps; ++k) {
            send_to(r, r->rank ^ (1 << k), k);
            await_step(r, k);
        }
    }
    ++r->call;
}


/* An ep to every peer: to its ep, or to its interface */
static void connect_all(rank_t *r)
{
    const uct_iface_attr_t *a    = &r->ifc.attr;
    size_t                 dlen  = a->device_addr_len;
    size_t                 ilen  = a->iface_addr_len, elen = a->ep_addr_len;
    /* to an ep where the transport can, as UCP connects ud_verbs and
     * rc_verbs (ud_verbs' eps made to each other's interfaces at once
     * time out in their handshake); srqud and tcp to the interface */
    int                    to_if = !(a->cap.flags &
                                     UCT_IFACE_FLAG_CONNECT_TO_EP);
    uint8_t                *dev  = calloc(MAX_NP, dlen + 1);
    uint8_t                *ifa  = calloc(MAX_NP, ilen + 1);
    uint8_t                *epa  = calloc((size_t)MAX_NP * MAX_NP, elen + 1);
    uint8_t                *mine = calloc(MAX_NP, elen + 1);
    uct_ep_params_t        ep_params;
    int                    p;

    exchange(r, r->ifc.dev_addr, dev, dlen);
    exchange(r, r->ifc.iface_addr, ifa, ilen);
    for (p = 0; p < r->o->np; ++p) {
        if (p == r->rank) {
            continue;
        }
        memset(&ep_params, 0, sizeof(ep_params));
        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        ep_params.iface      = r->ifc.iface;
        if (to_if) {
            ep_params.field_mask |= UCT_EP_PARAM_FIELD_DEV_ADDR |
                                    UCT_EP_PARAM_FIELD_IFACE_ADDR;
            ep_params.dev_addr    = (uct_device_addr_t*)(dev + p * dlen);
            ep_params.iface_addr  = (uct_iface_addr_t*)(ifa + p * ilen);
        }
        bench_check(uct_ep_create(&ep_params, &r->ep[p]), "ep create");
        if (!to_if) {
            bench_check(uct_ep_get_address(r->ep[p],
                                           (uct_ep_addr_t*)(mine + p * elen)),
                        "ep address");
        }
    }
    if (!to_if) {
        /* every rank's ep addresses, [rank][peer] */
        exchange(r, mine, epa, (size_t)MAX_NP * elen);
        for (p = 0; p < r->o->np; ++p) {
            if (p != r->rank) {
                bench_check(uct_ep_connect_to_ep(r->ep[p],
                        (uct_device_addr_t*)(dev + p * dlen),
                        (uct_ep_addr_t*)(epa + ((size_t)p * MAX_NP + r->rank) *
                                                elen)), "ep connect");
            }
        }
    }
    free(dev);
    free(ifa);
    free(epa);
    free(mine);
}


static void rank_main(rank_t *r, double *samples)
{
    const opts_t *o = r->o;
    unsigned     i, k = 0;
    int          c, s, p;
    double       t0;

    bench_ctx_open(&r->ctx, o->tl, o->dev);
    bench_iface_open(&r->ctx, &r->ifc);
    bench_check(uct_iface_set_am_handler(r->ifc.iface, AM_ID, am_handler, r,
                                         0), "am handler");
    for (r->steps = 0; (1 << r->steps) < o->np; ++r->steps);
    connect_all(r);
    barrier(r);   /* every ep connected before the first send */
    for (c = 0; c < o->ncalls; ++c) {
        for (s = 0; s < o->nsizes; ++s, ++k) {
            r->size = o->sizes[s];
            /* no message of the last size may meet this one's */
            barrier(r);
            for (i = 0; i < o->warmup; ++i) {
                one_call(r, o->calls[c]);
            }
            barrier(r);
            for (i = 0; i < o->iters; ++i) {
                t0 = bench_now_ms();
                one_call(r, o->calls[c]);
                samples[((size_t)k * o->np + r->rank) * o->iters + i] =
                        (bench_now_ms() - t0) * 1e3;
            }
        }
    }
    /* what we sent has landed before a peer's ep goes */
    for (p = 0; p < o->np; ++p) {
        while ((p != r->rank) &&
               (uct_ep_flush(r->ep[p], 0, NULL) == UCS_INPROGRESS)) {
            progress(r);
        }
    }
    barrier(r);
    if (!strcmp(o->tl, "srqud")) {
        /* what each message cost in packets and doorbells (system calls on
         * Soft-RoCE), on stderr: the rows on stdout are the table's */
        uct_srqud_iface_stats_t st = bench_srqud_stats(&r->ctx, r->ifc.iface);

        fprintf(stderr, "# srqud rank %d: tx_packets %lu doorbells %lu "
                "acks_sent %lu acks_ridden %lu back_acks_sent %lu\n",
                r->rank, st.tx_packets, st.tx_doorbells, st.acks_sent,
                st.acks_ridden, st.back_acks_sent);
    }
}


static void usage(FILE *f)
{
    fprintf(f,
"Usage: uct_exch [options]\n"
"  -t TL        transport (default srqud)\n"
"  -d DEV:PORT  device (default rxe0:1)\n"
"  -N NP        ranks, 2 to %d (default 4)\n"
"  -c CALLS     sendrecv,rdbl (default both; rdbl: 2, 4, 8 or 16 ranks)\n"
"  -s SIZES     bytes per message, comma-separated, k suffix, 8 to %d\n"
"               (default 8)\n"
"  -n ITERS     timed calls per call and size (default 1000)\n"
"  -w WARMUP    untimed calls first (default 200)\n"
"  -Y           spin when progress finds nothing instead of yielding\n"
"  -T SECONDS   every rank dies after this (default 600)\n",
            MAX_NP, MAX_SIZE);
}


static int parse(int argc, char **argv, opts_t *o)
{
    const char *bad;
    int        c;

    *o = (opts_t){.tl = "srqud", .dev = "rxe0:1", .np = 4, .yield = 1,
                  .iters = 1000, .warmup = 200, .timeout = 600};
    while ((c = getopt(argc, argv, "t:d:N:c:s:n:w:T:Yh")) != -1) {
        switch (c) {
        case 't': o->tl = optarg; break;
        case 'd': o->dev = optarg; break;
        case 'N': o->np = atoi(optarg); break;
        case 'n': o->iters = (unsigned)atoi(optarg); break;
        case 'w': o->warmup = (unsigned)atoi(optarg); break;
        case 'T': o->timeout = (unsigned)atoi(optarg); break;
        case 'Y': o->yield = 0; break;
        case 'c':
            if ((bad = ranks_parse_calls(optarg, c_names, C_COUNT, o->calls,
                                         &o->ncalls, C_COUNT)) != NULL) {
                fprintf(stderr, "uct_exch: bad call '%s' in -c\n", bad);
                return -1;
            }
            break;
        case 's':
            if ((bad = ranks_parse_sizes(optarg, 8, MAX_SIZE, o->sizes,
                                         &o->nsizes, 8)) != NULL) {
                fprintf(stderr, "uct_exch: bad size '%s' in -s\n", bad);
                return -1;
            }
            break;
        case 'h': usage(stdout); exit(0);
        default:  usage(stderr); return -1;
        }
    }
    if ((o->np < 2) || (o->np > MAX_NP) || (o->iters < 1) || !o->timeout) {
        fprintf(stderr, "uct_exch: need 2 to %d ranks, 1 call or more and "
                "a timeout\n", MAX_NP);
        return -1;
    }
    if (!o->ncalls) {
        o->calls[0] = C_SENDRECV, o->calls[1] = C_RDBL, o->ncalls = 2;
    }
    if (!o->nsizes) {
        o->sizes[o->nsizes++] = 8;
    }
    for (c = 0; c < o->ncalls; ++c) {
        if ((o->calls[c] == C_RDBL) && (o->np & (o->np - 1))) {
            fprintf(stderr, "uct_exch: rdbl needs 2, 4, 8 or 16 ranks\n");
            return -1;
        }
    }
    return 0;
}


typedef struct {
    const opts_t *o;
    double       *samples;
} run_args_t;

static int run_rank(int p, const int *sock, void *arg)
{
    const run_args_t *a = arg;
    static rank_t    r;

    alarm(a->o->timeout);   /* a rank waiting for a dead one: killed */
    r.o    = a->o;
    r.rank = p;
    r.sock = sock;
    rank_main(&r, a->samples);
    return 0;
}


int main(int argc, char **argv)
{
    opts_t     o;
    run_args_t a;
    size_t     n;
    int        failed;

    if (parse(argc, argv, &o)) {
        return 2;
    }
    n         = (size_t)o.ncalls * o.nsizes * o.np * o.iters * sizeof(double);
    a.o       = &o;
    a.samples = mmap(NULL, n, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (a.samples == MAP_FAILED) {
        perror("uct_exch: mmap");
        return 1;
    }
    failed = ranks_run("uct_exch", o.np, o.timeout, run_rank, &a);
    if (!failed) {
        calls_report(c_names, o.calls, o.ncalls, o.sizes, o.nsizes,
                     a.samples, (size_t)o.np * o.iters);
    }
    return failed ? 1 : 0;
}
