/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * UCP-level correctness checks of a UCX transport: what an OpenSHMEM, MPI
 * one-sided or tag-matching user relies on, with data and completion order
 * verified byte for byte. Each check forks an initiator and a target,
 * which exchange worker addresses, rkeys and the
 * expected images over a socketpair; nothing is checked through the
 * transport under test itself. Run the same binary with UCX_TLS=srqud and
 * with UCX's ud_verbs and rc_verbs as references (test/ucp/run.sh).
 *
 *   srqud_ucp_check [-t CHECK]... [-n ROUNDS] [-L BYTES] [-B BOUND] [-P]
 *
 *   -t CHECK  one of the checks below (default: all)
 *   -n N      rounds per RMA check (default 2; a fresh region each round,
 *             the previous one unmapped, so a late write would hit unmapped
 *             memory)
 *   -L BYTES  largest RMA operation (default 20 MiB + 3)
 *   -B BOUND  progress_bound: deliveries one ucp_worker_progress may make
 *             (default 16, srqud's RX_MAX_POLL)
 *   -P        the target never calls ucp_worker_progress during RMA checks
 *             (passive target: only transports with their own progress or
 *             hardware RMA complete then)
 *   -T SEC    a check that has not finished after SEC seconds (default
 *             120) fails as timed out
 *
 * Checks: put_worker_flush put_ep_flush put_explicit get_worker_flush
 * get_ep_flush fence tag am stream close_flush peer_failure progress_bound
 *
 * Prints "CHECK <name> PASS|FAIL <detail>" per check; exit status 0 only if
 * all passed.
 */

#define _GNU_SOURCE
#include <ucp/api/ucp.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#define TAG          0x5eedull
#define AM_ID        7
#define NUM_SMALL    96
#define MSG_COUNT    200      /* tag/am/stream messages */
#define BOUND_COUNT  1000     /* progress_bound messages */


/* no callback, no flags: the caller waits on the request */
static const ucp_request_param_t null_param;

static struct {
    int      rounds;
    size_t   largest;
    unsigned bound;
    int      passive;
    int      timeout;
} opt = { 2, 20 * 1024 * 1024 + 3, 16, 0, 120 };


/* Everything a check's side needs */
typedef struct {
    int           fd;          /* socketpair to the other side */
    int           is_target;
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    int           ep_failed;
    ucs_status_t  ep_status;
} side_t;


static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(3);
}


/* ---- out of band ------------------------------------------------------ */

static void oob_send(side_t *s, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t ret;

    while (len > 0) {
        ret = write(s->fd, p, len);
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            die("oob write: %s", strerror(errno));
        }
        p   += ret;
        len -= ret;
    }
}


static void oob_recv(side_t *s, void *buf, size_t len)
{
    char *p = buf;
    ssize_t ret;

    while (len > 0) {
        ret = read(s->fd, p, len);
        if (ret == 0) {
            die("oob: the other side is gone");
        } else if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            die("oob read: %s", strerror(errno));
        }
        p   += ret;
        len -= ret;
    }
}


static void oob_send_u64(side_t *s, uint64_t v)
{
    oob_send(s, &v, sizeof(v));
}


static uint64_t oob_recv_u64(side_t *s)
{
    uint64_t v;

    oob_recv(s, &v, sizeof(v));
    return v;
}


/* Wait for the other side's next message; progress the worker meanwhile
 * unless passive (then only the transport's own threads work) */
static void oob_wait(side_t *s, int progress)
{
    struct pollfd pfd = { .fd = s->fd, .events = POLLIN };

    for (;;) {
        if (poll(&pfd, 1, progress ? 0 : -1) > 0) {
            return;
        }
        if (progress) {
            ucp_worker_progress(s->worker);
        }
    }
}


/* ---- UCP helpers -------------------------------------------------------- */

static void ep_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    side_t *s = arg;

    s->ep_failed = 1;
    s->ep_status = status;
}


static ucs_status_t wait_req(side_t *s, void *req)
{
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    do {
        ucp_worker_progress(s->worker);
        status = ucp_request_check_status(req);
    } while (status == UCS_INPROGRESS);
    ucp_request_free(req);
    return status;
}


static void side_init(side_t *s, int fd, int is_target, int err_peer)
{
    ucp_params_t params           = {0};
    ucp_worker_params_t wparams   = {0};
    ucp_ep_params_t eparams       = {0};
    ucp_address_t *addr, *peer;
    size_t addr_len;
    uint64_t peer_len;
    ucs_status_t status;

    memset(s, 0, sizeof(*s));
    s->fd        = fd;
    s->is_target = is_target;

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_TAG | UCP_FEATURE_AM |
                        UCP_FEATURE_STREAM;
    status = ucp_init(&params, NULL, &s->context);
    if (status != UCS_OK) {
        die("ucp_init: %s", ucs_status_string(status));
    }

    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(s->context, &wparams, &s->worker);
    if (status != UCS_OK) {
        die("ucp_worker_create: %s", ucs_status_string(status));
    }

    status = ucp_worker_get_address(s->worker, &addr, &addr_len);
    if (status != UCS_OK) {
        die("ucp_worker_get_address: %s", ucs_status_string(status));
    }
    oob_send_u64(s, addr_len);
    oob_send(s, addr, addr_len);
    ucp_worker_release_address(s->worker, addr);

    peer_len = oob_recv_u64(s);
    peer     = malloc(peer_len);
    oob_recv(s, peer, peer_len);

    eparams.field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                              UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                              UCP_EP_PARAM_FIELD_ERR_HANDLER;
    eparams.address         = peer;
    eparams.err_mode        = err_peer ? UCP_ERR_HANDLING_MODE_PEER :
                                         UCP_ERR_HANDLING_MODE_NONE;
    eparams.err_handler.cb  = ep_err_cb;
    eparams.err_handler.arg = s;
    status = ucp_ep_create(s->worker, &eparams, &s->ep);
    if (status != UCS_OK) {
        die("ucp_ep_create: %s", ucs_status_string(status));
    }
    free(peer);

    /* both sides wired up before any check starts */
    status = wait_req(s, ucp_ep_flush_nbx(s->ep, &null_param));
    if (status != UCS_OK) {
        die("initial ep flush: %s", ucs_status_string(status));
    }
    oob_send_u64(s, 1);
    oob_wait(s, 1);
    oob_recv_u64(s);
}


static void side_fini(side_t *s)
{
    ucp_request_param_t param = {0};

    if (s->ep != NULL) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = s->ep_failed ? UCP_EP_CLOSE_FLAG_FORCE : 0;
        wait_req(s, ucp_ep_close_nbx(s->ep, &param));
    }
    ucp_worker_destroy(s->worker);
    ucp_cleanup(s->context);
}


/* A barrier over the socket that keeps both workers progressing, so that a
 * side's close or flush can complete */
static void side_barrier(side_t *s)
{
    oob_send_u64(s, 2);
    oob_wait(s, 1);
    oob_recv_u64(s);
}


/* ---- deterministic data ------------------------------------------------- */

static uint64_t rng_next(uint64_t *state)
{
    /* splitmix64: a seed gives the same stream on both sides */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}


static void fill_random(void *buf, size_t len, uint64_t seed)
{
    uint8_t *p = buf;
    uint64_t v = 0;
    size_t i;

    for (i = 0; i < len; ++i) {
        if ((i % 8) == 0) {
            v = rng_next(&seed);
        }
        p[i] = (uint8_t)(v >> ((i % 8) * 8));
    }
}


/* Report where two images differ */
static int compare(const uint8_t *got, const uint8_t *want, size_t len,
                   char *detail, size_t max)
{
    size_t i, first = SIZE_MAX, count = 0;

    for (i = 0; i < len; ++i) {
        if (got[i] != want[i]) {
            if (first == SIZE_MAX) {
                first = i;
            }
            ++count;
        }
    }
    if (count == 0) {
        return 0;
    }
    snprintf(detail, max, "%zu of %zu bytes differ, first at offset %zu",
             count, len, first);
    return 1;
}


/* ---- RMA: the operations of a round -------------------------------------- */

typedef struct {
    size_t offset;
    size_t length;
} rma_op_t;


/* Even rounds: mixed sizes, many small ones (put_short, bcopy, the copy
 * path below srqud's ZCOPY_THRESH) and a few large ones up to opt.largest.
 * Odd rounds: a burst of 128 B .. 33 KB ones, more than a send window
 * holds. At unaligned, non-overlapping offsets, in a shuffled order. */
static size_t rma_ops_make(uint64_t seed, rma_op_t *ops, size_t *region_len)
{
    const size_t large[] = {256 * 1024 + 13, 1024 * 1024 + 777,
                            4 * 1024 * 1024 - 5, opt.largest};
    int burst = seed & 1;
    size_t n = 0, offset = 0, i, j, len;
    rma_op_t tmp;

    for (i = 0; i < NUM_SMALL + 4; ++i) {
        if (burst) {
            len = 128 + rng_next(&seed) % (33 * 1024);
        } else if (i < NUM_SMALL) {
            /* log-uniform 1 B .. 64 KiB */
            len = (size_t)1 << (rng_next(&seed) % 17);
            len += rng_next(&seed) % len;
        } else {
            len = large[i - NUM_SMALL];
            if (len > opt.largest) {
                continue;
            }
        }
        offset       += rng_next(&seed) % 61; /* unaligned gaps */
        ops[n].offset = offset;
        ops[n].length = len;
        offset       += len;
        ++n;
    }
    for (i = n - 1; i > 0; --i) {
        j      = rng_next(&seed) % (i + 1);
        tmp    = ops[i];
        ops[i] = ops[j];
        ops[j] = tmp;
    }
    *region_len = offset + 64;
    return n;
}


typedef struct {
    void      *base;
    size_t    length;
    ucp_mem_h memh;
} region_t;


static void region_map(side_t *s, region_t *r, size_t length)
{
    ucp_mem_map_params_t mp = {0};
    ucs_status_t status;

    r->length = length;
    r->base   = mmap(NULL, length, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r->base == MAP_FAILED) {
        die("mmap %zu: %s", length, strerror(errno));
    }
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                    UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address    = r->base;
    mp.length     = length;
    status = ucp_mem_map(s->context, &mp, &r->memh);
    if (status != UCS_OK) {
        die("ucp_mem_map: %s", ucs_status_string(status));
    }
}


/* The target gives up the region, as an application frees a window: a
 * write arriving after this must never reach the (unmapped) memory */
static void region_unmap(side_t *s, region_t *r)
{
    ucp_mem_unmap(s->context, r->memh);
    munmap(r->base, r->length);
}


static void region_send_rkey(side_t *s, region_t *r)
{
    void *rkey_buf;
    size_t rkey_len;
    ucs_status_t status;

    status = ucp_rkey_pack(s->context, r->memh, &rkey_buf, &rkey_len);
    if (status != UCS_OK) {
        die("ucp_rkey_pack: %s", ucs_status_string(status));
    }
    oob_send_u64(s, (uintptr_t)r->base);
    oob_send_u64(s, rkey_len);
    oob_send(s, rkey_buf, rkey_len);
    ucp_rkey_buffer_release(rkey_buf);
}


static ucp_rkey_h region_recv_rkey(side_t *s, uint64_t *base)
{
    ucp_rkey_h rkey;
    uint64_t len;
    void *buf;
    ucs_status_t status;

    *base = oob_recv_u64(s);
    len   = oob_recv_u64(s);
    buf   = malloc(len);
    oob_recv(s, buf, len);
    status = ucp_ep_rkey_unpack(s->ep, buf, &rkey);
    if (status != UCS_OK) {
        die("ucp_ep_rkey_unpack: %s", ucs_status_string(status));
    }
    free(buf);
    return rkey;
}


/* Which operations did not land (on stderr, for the log) */
static void report_ops(const rma_op_t *ops, size_t n, const uint8_t *got,
                       const uint8_t *want)
{
    size_t i, j, bad, first;

    for (i = 0; i < n; ++i) {
        bad   = 0;
        first = 0;
        for (j = 0; j < ops[i].length; ++j) {
            if (got[ops[i].offset + j] != want[ops[i].offset + j]) {
                first = bad ? first : j;
                ++bad;
            }
        }
        if (bad) {
            fprintf(stderr, "  op %zu (issued %zu of %zu): offset %zu length "
                    "%zu: %zu bytes differ, first at +%zu\n", i, i, n,
                    ops[i].offset, ops[i].length, bad, first);
        }
    }
}


/* What the operations of a round leave in @a dst: their bytes of @a src */
static void ops_apply(uint8_t *dst, const uint8_t *src, const rma_op_t *ops,
                      size_t n)
{
    size_t i;

    for (i = 0; i < n; ++i) {
        memcpy(dst + ops[i].offset, src + ops[i].offset, ops[i].length);
    }
}


/* The target's start of a round: a fresh region of @a len bytes filled
 * from @a seed, its rkey to the initiator; returns when the initiator
 * reports its operations completed (progressing meanwhile unless passive) */
static void target_round_begin(side_t *s, region_t *r, size_t len,
                               uint64_t seed)
{
    region_map(s, r, len);
    fill_random(r->base, len, seed);
    region_send_rkey(s, r);
    oob_wait(s, !opt.passive);
    oob_recv_u64(s);                           /* "completed" */
}


/* The initiator's start of a round: the target's region (@a base, the
 * returned rkey) and in @a *image what it holds before the round (filled
 * from the same @a seed as the target's) */
static ucp_rkey_h initiator_round_begin(side_t *s, size_t len, uint64_t seed,
                                        uint64_t *base, uint8_t **image)
{
    ucp_rkey_h rkey = region_recv_rkey(s, base);

    *image = malloc(len);
    fill_random(*image, len, seed);
    return rkey;
}


enum { FLUSH_WORKER, FLUSH_EP, FLUSH_NONE_EXPLICIT, FLUSH_CLOSE };


static void explicit_cb(void *request, ucs_status_t status, void *user_data)
{
    ucs_status_t *result = user_data;

    if (status != UCS_OK) {
        *result = status;
    }
}


/* Issue every op of the round, then complete them as @a mode says */
static ucs_status_t rma_issue(side_t *s, int is_get, int mode,
                              const rma_op_t *ops, size_t n, uint8_t *local,
                              uint64_t remote_base, ucp_rkey_h rkey)
{
    ucp_request_param_t param = {0};
    ucs_status_t result       = UCS_OK;
    void **reqs               = calloc(n, sizeof(void*));
    ucs_status_t status;
    void *req;
    size_t i;

    if (mode == FLUSH_NONE_EXPLICIT) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send      = explicit_cb;
        param.user_data    = &result;
    }

    for (i = 0; i < n; ++i) {
        if (is_get) {
            req = ucp_get_nbx(s->ep, local + ops[i].offset, ops[i].length,
                              remote_base + ops[i].offset, rkey, &param);
        } else {
            req = ucp_put_nbx(s->ep, local + ops[i].offset, ops[i].length,
                              remote_base + ops[i].offset, rkey, &param);
        }
        if (UCS_PTR_IS_ERR(req)) {
            free(reqs);
            return UCS_PTR_STATUS(req);
        }
        if (mode == FLUSH_NONE_EXPLICIT) {
            reqs[i] = req;
        } else if (req != NULL) {
            /* implicit completion: the flush below is the only guarantee */
            ucp_request_free(req);
        }
    }

    switch (mode) {
    case FLUSH_WORKER:
        status = wait_req(s, ucp_worker_flush_nbx(s->worker,
                                                  &null_param));
        break;
    case FLUSH_EP:
        status = wait_req(s, ucp_ep_flush_nbx(s->ep, &null_param));
        break;
    case FLUSH_CLOSE:
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = 0; /* flush mode */
        status = wait_req(s, ucp_ep_close_nbx(s->ep, &param));
        s->ep  = NULL;
        break;
    default:
        /* a request's completion only means the local buffer may be
         * reused; the data is remote after a flush */
        status = UCS_OK;
        for (i = 0; i < n; ++i) {
            if ((reqs[i] != NULL) && (wait_req(s, reqs[i]) != UCS_OK)) {
                status = UCS_ERR_IO_ERROR;
            }
        }
        if (status == UCS_OK) {
            status = wait_req(s, ucp_worker_flush_nbx(s->worker, &null_param));
        }
        break;
    }
    free(reqs);
    return (status != UCS_OK) ? status : result;
}


/* put: the initiator writes random bytes into a fresh target region; after
 * the completion the target snapshots its region at once and compares it
 * with the initiator's image */
static int check_put(side_t *s, int mode, char *detail, size_t max)
{
    rma_op_t ops[NUM_SMALL + 4];
    size_t n, len;
    int round, failed = 0;
    region_t r;
    uint8_t *image, *src, *snap;
    uint64_t base, verdict;
    ucp_rkey_h rkey;
    ucs_status_t status;

    for (round = 0; round < opt.rounds; ++round) {
        n = rma_ops_make(1000 + round, ops, &len);
        if (s->is_target) {
            target_round_begin(s, &r, len, 77 + round);
            snap = malloc(len);
            memcpy(snap, r.base, len);         /* before anything else runs */
            image = malloc(len);
            oob_recv(s, image, len);
            verdict = compare(snap, image, len, detail, max);
            if (verdict) {
                report_ops(ops, n, snap, image);
            }
            oob_send_u64(s, verdict);
            if (verdict) {
                oob_send(s, detail, max);
            }
            free(snap);
            free(image);
            region_unmap(s, &r);
            failed |= verdict;
            if ((mode == FLUSH_CLOSE) || failed) {
                break; /* as the initiator */
            }
            continue;
        }

        /* the target's bytes after the round */
        rkey = initiator_round_begin(s, len, 77 + round, &base, &image);
        src  = malloc(len);
        fill_random(src, len, 5000 + round);
        ops_apply(image, src, ops, n);
        status = rma_issue(s, 0, mode, ops, n, src, base, rkey);
        oob_send_u64(s, 1);
        oob_send(s, image, len);
        verdict = oob_recv_u64(s);
        if (verdict) {
            oob_recv(s, detail, max);
            failed = 1;
        } else if (status != UCS_OK) {
            snprintf(detail, max, "round %d: completion status %s", round,
                     ucs_status_string(status));
            failed = 1;
        }
        if (rkey != NULL) {
            ucp_rkey_destroy(rkey);
        }
        free(src);
        free(image);
        if (mode == FLUSH_CLOSE) {
            break; /* the ep is gone */
        }
        if (failed) {
            break;
        }
    }
    return failed;
}


static int check_get(side_t *s, int mode, char *detail, size_t max)
{
    rma_op_t ops[NUM_SMALL + 4];
    size_t n, len;
    int round, failed = 0;
    region_t r;
    uint8_t *image, *dst, *want;
    uint64_t base;
    ucp_rkey_h rkey;
    ucs_status_t status;

    for (round = 0; round < opt.rounds; ++round) {
        n = rma_ops_make(2000 + round, ops, &len);
        if (s->is_target) {
            target_round_begin(s, &r, len, 99 + round);
            region_unmap(s, &r);
            continue;
        }

        /* the target's bytes, read into a buffer of 0xa5 */
        rkey = initiator_round_begin(s, len, 99 + round, &base, &image);
        dst  = malloc(len);
        want = malloc(len);
        memset(dst, 0xa5, len);
        memset(want, 0xa5, len);
        ops_apply(want, image, ops, n);
        status = rma_issue(s, 1, mode, ops, n, dst, base, rkey);
        /* compared before the target may change or unmap anything */
        if (compare(dst, want, len, detail, max)) {
            failed = 1;
        } else if (status != UCS_OK) {
            snprintf(detail, max, "completion status %s",
                     ucs_status_string(status));
            failed = 1;
        }
        oob_send_u64(s, 1);
        ucp_rkey_destroy(rkey);
        free(image);
        free(dst);
        free(want);
        if (failed) {
            /* the target waits for the rounds we skip */
            for (++round; round < opt.rounds; ++round) {
                rkey = region_recv_rkey(s, &base);
                ucp_rkey_destroy(rkey);
                oob_send_u64(s, 1);
            }
        }
    }
    return failed;
}


/* fence: block k (its own bytes) then, after ucp_worker_fence, flag = k.
 * Whenever the target sees flag k, blocks 1..k must be complete. */
#define FENCE_BLOCKS 24
#define FENCE_BLOCK  (96 * 1024 + 11)

static int check_fence(side_t *s, char *detail, size_t max)
{
    size_t len = 64 + (size_t)FENCE_BLOCKS * FENCE_BLOCK;
    volatile uint64_t *flag;
    uint8_t *want, *src;
    uint64_t seen = 0, k, base, verdict = 0;
    struct pollfd pfd;
    ucp_rkey_h rkey;
    ucs_status_t status;
    region_t r;

    want = malloc(len);
    fill_random(want, len, 4242);
    memset(want, 0, 64);

    if (s->is_target) {
        region_map(s, &r, len);
        memset(r.base, 0, len);
        flag = r.base;
        region_send_rkey(s, &r);
        pfd.fd     = s->fd;
        pfd.events = POLLIN;
        while (poll(&pfd, 1, 0) == 0) {
            if (!opt.passive) {
                ucp_worker_progress(s->worker);
            }
            k = *flag;
            if (k > seen) {
                __sync_synchronize();
                for (; seen < k; ++seen) {
                    if (!verdict &&
                        memcmp((uint8_t*)r.base + 64 + seen * FENCE_BLOCK,
                               want + 64 + seen * FENCE_BLOCK,
                               FENCE_BLOCK)) {
                        snprintf(detail, max, "flag %" PRIu64 " seen before "
                                 "block %" PRIu64 " was complete", k, seen + 1);
                        verdict = 1;
                    }
                }
            }
        }
        oob_recv_u64(s);
        if (!verdict && (*flag != FENCE_BLOCKS)) {
            snprintf(detail, max, "flag %" PRIu64 " after the flush",
                     (uint64_t)*flag);
            verdict = 1;
        }
        oob_send_u64(s, verdict);
        oob_send(s, detail, max);
        region_unmap(s, &r);
        free(want);
        return verdict;
    }

    rkey = region_recv_rkey(s, &base);
    src  = malloc(len);
    memcpy(src, want, len);
    status = UCS_OK;
    for (k = 1; (k <= FENCE_BLOCKS) && (status == UCS_OK); ++k) {
        *(uint64_t*)src = k;
        status = ucp_put_nbi(s->ep, src + 64 + (k - 1) * FENCE_BLOCK,
                             FENCE_BLOCK, base + 64 + (k - 1) * FENCE_BLOCK,
                             rkey);
        if (!UCS_STATUS_IS_ERR(status)) {
            status = ucp_worker_fence(s->worker);
        }
        if (!UCS_STATUS_IS_ERR(status)) {
            /* from its own buffer: the bytes are read when it is sent */
            status = wait_req(s, ucp_put_nbx(s->ep, src, sizeof(uint64_t),
                                             base, rkey,
                                             &null_param));
        }
        if (!UCS_STATUS_IS_ERR(status)) {
            status = ucp_worker_fence(s->worker);
        }
    }
    if (status == UCS_OK) {
        status = wait_req(s, ucp_worker_flush_nbx(s->worker,
                                                  &null_param));
    }
    oob_send_u64(s, 1);
    verdict = oob_recv_u64(s);
    oob_recv(s, detail, max);
    if (!verdict && (status != UCS_OK)) {
        snprintf(detail, max, "status %s", ucs_status_string(status));
        verdict = 1;
    }
    ucp_rkey_destroy(rkey);
    free(src);
    free(want);
    return verdict;
}


/* ---- two-sided ------------------------------------------------------------ */

/* Message sizes: eager, multi-fragment and rendezvous */
static size_t msg_size(uint64_t i)
{
    uint64_t seed = 31337 + i;
    size_t len    = (size_t)1 << (rng_next(&seed) % 21); /* to 1 MiB */

    return len + rng_next(&seed) % len;
}


static void msg_fill(void *buf, size_t len, uint64_t seq)
{
    fill_random(buf, len, seq * 7919 + 1);
    if (len >= sizeof(uint64_t)) {
        memcpy(buf, &seq, sizeof(seq));
    }
}


static int msg_check(const void *buf, size_t len, uint64_t seq, char *detail,
                     size_t max, const char *what)
{
    uint8_t *want = malloc(len);
    int bad;

    msg_fill(want, len, seq);
    bad = (len > 0) && memcmp(buf, want, len);
    if (bad) {
        snprintf(detail, max, "%s %" PRIu64 " (%zu bytes): wrong data%s", what,
                 seq, len, ((len >= 8) && (*(uint64_t*)buf != seq)) ?
                 " (another message: out of order)" : "");
    }
    free(want);
    return bad;
}


/* The sending side of a two-sided check: every request completed (the
 * first error reported), then the receiver's verdict */
static int sender_finish(side_t *s, void **reqs, size_t n, char *detail,
                         size_t max)
{
    uint64_t verdict = 0;
    ucs_status_t status;
    size_t i;

    for (i = 0; i < n; ++i) {
        status = wait_req(s, reqs[i]);
        if ((status != UCS_OK) && !verdict) {
            snprintf(detail, max, "send %zu: %s", i,
                     ucs_status_string(status));
            verdict = 1;
        }
    }
    side_barrier(s);
    return verdict | oob_recv_u64(s);
}


static int check_tag(side_t *s, char *detail, size_t max)
{
    ucp_request_param_t param = {0};
    ucs_status_t status;
    uint64_t i, verdict = 0;
    size_t len;
    void *buf;

    if (!s->is_target) {
        /* all sent at once, then completed */
        void **reqs = calloc(MSG_COUNT, sizeof(void*));
        void **bufs = calloc(MSG_COUNT, sizeof(void*));

        for (i = 0; i < MSG_COUNT; ++i) {
            len     = msg_size(i);
            bufs[i] = malloc(len);
            msg_fill(bufs[i], len, i);
            reqs[i] = ucp_tag_send_nbx(s->ep, bufs[i], len, TAG, &param);
        }
        verdict = sender_finish(s, reqs, MSG_COUNT, detail, max);
        for (i = 0; i < MSG_COUNT; ++i) {
            free(bufs[i]);
        }
        free(reqs);
        free(bufs);
        return verdict;
    }

    /* one receive at a time: the i-th match must be the i-th send */
    for (i = 0; i < MSG_COUNT; ++i) {
        len    = msg_size(i);
        buf    = malloc(len);
        status = wait_req(s, ucp_tag_recv_nbx(s->worker, buf, len, TAG,
                                              (ucp_tag_t)-1, &param));
        if (!verdict) {
            if (status != UCS_OK) {
                snprintf(detail, max, "receive %" PRIu64 ": %s", i,
                         ucs_status_string(status));
                verdict = 1;
            } else {
                verdict = msg_check(buf, len, i, detail, max, "message");
            }
        }
        free(buf);
    }
    side_barrier(s);
    oob_send_u64(s, verdict);
    return verdict;
}


typedef struct {
    side_t   *s;
    uint64_t next;        /* next expected message */
    uint64_t done;        /* data complete */
    int      failed;
    char     *detail;
    size_t   max;
} am_state_t;

static am_state_t am_state;


static void am_data_cb(void *request, ucs_status_t status, size_t length,
                       void *user_data)
{
    if ((status != UCS_OK) && !am_state.failed) {
        snprintf(am_state.detail, am_state.max, "rendezvous data: %s",
                 ucs_status_string(status));
        am_state.failed = 1;
    }
}


typedef struct {
    uint64_t seq;
    void     *buf;
    size_t   len;
    void     *req;
} am_rndv_t;

static am_rndv_t am_rndv[MSG_COUNT];


static ucs_status_t am_cb(void *arg, const void *header, size_t header_length,
                          void *data, size_t length,
                          const ucp_am_recv_param_t *param)
{
    ucp_request_param_t rparam = {0};
    uint64_t seq;

    memcpy(&seq, header, sizeof(seq));
    if ((seq != am_state.next) && !am_state.failed) {
        snprintf(am_state.detail, am_state.max, "message %" PRIu64
                 " arrived when %" PRIu64 " was expected", seq, am_state.next);
        am_state.failed = 1;
    }
    ++am_state.next;
    if ((length != msg_size(seq)) && !am_state.failed) {
        snprintf(am_state.detail, am_state.max, "message %" PRIu64
                 ": %zu bytes", seq, length);
        am_state.failed = 1;
        return UCS_OK;
    }
    if (seq >= MSG_COUNT) {
        return UCS_OK;
    }
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        am_rndv[seq].seq  = seq;
        am_rndv[seq].len  = length;
        am_rndv[seq].buf  = malloc(length);
        rparam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
        rparam.cb.recv_am   = am_data_cb;
        am_rndv[seq].req  = ucp_am_recv_data_nbx(am_state.s->worker, data,
                                                 am_rndv[seq].buf, length,
                                                 &rparam);
        return UCS_INPROGRESS;
    }
    if (!am_state.failed &&
        msg_check(data, length, seq, am_state.detail, am_state.max,
                  "message")) {
        am_state.failed = 1;
    }
    ++am_state.done;
    return UCS_OK;
}


static int check_am(side_t *s, char *detail, size_t max)
{
    ucp_request_param_t param = {0};
    ucp_am_handler_param_t hp = {0};
    ucs_status_t status;
    uint64_t i, verdict = 0;
    size_t len;

    if (!s->is_target) {
        void **reqs = calloc(MSG_COUNT, sizeof(void*));
        void **bufs = calloc(MSG_COUNT, sizeof(void*));
        uint64_t *hdrs = calloc(MSG_COUNT, sizeof(uint64_t));

        for (i = 0; i < MSG_COUNT; ++i) {
            len     = msg_size(i);
            bufs[i] = malloc(len);
            hdrs[i] = i;
            msg_fill(bufs[i], len, i);
            reqs[i] = ucp_am_send_nbx(s->ep, AM_ID, &hdrs[i], sizeof(hdrs[i]),
                                      bufs[i], len, &param);
        }
        verdict = sender_finish(s, reqs, MSG_COUNT, detail, max);
        for (i = 0; i < MSG_COUNT; ++i) {
            free(bufs[i]);
        }
        free(reqs);
        free(bufs);
        free(hdrs);
        return verdict;
    }

    memset(&am_state, 0, sizeof(am_state));
    am_state.s      = s;
    am_state.detail = detail;
    am_state.max    = max;
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                    UCP_AM_HANDLER_PARAM_FIELD_CB;
    hp.id         = AM_ID;
    hp.cb         = am_cb;
    status = ucp_worker_set_am_recv_handler(s->worker, &hp);
    if (status != UCS_OK) {
        die("ucp_worker_set_am_recv_handler: %s", ucs_status_string(status));
    }
    while (am_state.next < MSG_COUNT) {
        ucp_worker_progress(s->worker);
    }
    for (i = 0; i < MSG_COUNT; ++i) {
        if (am_rndv[i].buf == NULL) {
            continue;
        }
        status = UCS_OK;
        if (!UCS_PTR_IS_ERR(am_rndv[i].req)) {
            status = wait_req(s, am_rndv[i].req);
        } else {
            status = UCS_PTR_STATUS(am_rndv[i].req);
        }
        if (!am_state.failed) {
            if (status != UCS_OK) {
                snprintf(detail, max, "rendezvous %" PRIu64 ": %s", i,
                         ucs_status_string(status));
                am_state.failed = 1;
            } else if (msg_check(am_rndv[i].buf, am_rndv[i].len, i, detail,
                                 max, "rendezvous message")) {
                am_state.failed = 1;
            }
        }
        free(am_rndv[i].buf);
        am_rndv[i].buf = NULL;
    }
    side_barrier(s);
    verdict = am_state.failed;
    oob_send_u64(s, verdict);
    return verdict;
}


/* stream: one byte stream sent in messages of mixed sizes, received in
 * pieces of other sizes; every byte in order */
static int check_stream(side_t *s, char *detail, size_t max)
{
    ucp_request_param_t param = {0};
    size_t total = 0, got = 0, len, i, piece;
    uint8_t *all, *rx;
    uint64_t verdict = 0, seed = 555;
    ucs_status_t status;
    void *req;

    for (i = 0; i < MSG_COUNT; ++i) {
        total += msg_size(i) % (128 * 1024) + 1;
    }
    all = malloc(total);
    fill_random(all, total, 8888);

    if (!s->is_target) {
        void **reqs = calloc(MSG_COUNT, sizeof(void*));
        size_t off  = 0;

        for (i = 0; i < MSG_COUNT; ++i) {
            len     = msg_size(i) % (128 * 1024) + 1;
            reqs[i] = ucp_stream_send_nbx(s->ep, all + off, len, &param);
            off    += len;
        }
        verdict = sender_finish(s, reqs, MSG_COUNT, detail, max);
        free(reqs);
        free(all);
        return verdict;
    }

    rx = malloc(total);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
    while (got < total) {
        piece = rng_next(&seed) % 100000 + 1;
        if (piece > total - got) {
            piece = total - got;
        }
        req   = ucp_stream_recv_nbx(s->ep, rx + got, piece, &len, &param);
        if (req != NULL) {
            status = wait_req(s, req);
            if (status != UCS_OK) {
                snprintf(detail, max, "receive at %zu: %s", got,
                         ucs_status_string(status));
                verdict = 1;
                break;
            }
            len = piece;
        }
        got += len;
    }
    if (!verdict) {
        verdict = compare(rx, all, total, detail, max);
    }
    free(rx);
    free(all);
    side_barrier(s);
    oob_send_u64(s, verdict);
    return verdict;
}


/* peer_failure: the target dies with RMA outstanding towards it; the
 * initiator's flush must end with an error, not hang or crash */
static int check_peer_failure(side_t *s, char *detail, size_t max)
{
    rma_op_t ops[NUM_SMALL + 4];
    size_t n, len;
    uint8_t *src;
    uint64_t base;
    ucp_rkey_h rkey;
    ucs_status_t status;
    region_t r;

    n = rma_ops_make(3000, ops, &len);
    if (s->is_target) {
        region_map(s, &r, len);
        region_send_rkey(s, &r);
        oob_recv_u64(s);
        _exit(0); /* gone, without closing anything */
    }

    rkey = region_recv_rkey(s, &base);
    src  = malloc(len);
    fill_random(src, len, 1);
    oob_send_u64(s, 1);
    usleep(200000);
    status = rma_issue(s, 0, FLUSH_EP, ops, n, src, base, rkey);
    ucp_rkey_destroy(rkey);
    free(src);
    if (status == UCS_OK) {
        snprintf(detail, max, "flush towards a dead peer returned OK");
        return 1;
    }
    if (!s->ep_failed) {
        snprintf(detail, max, "flush failed (%s) but the error handler did "
                 "not run", ucs_status_string(status));
        return 1;
    }
    snprintf(detail, max, "flush: %s, ep error: %s", ucs_status_string(status),
             ucs_status_string(s->ep_status));
    return 0;
}


/* progress_bound: BOUND_COUNT small messages arrive while the receiver does
 * not progress; one ucp_worker_progress may then deliver at most opt.bound,
 * and all arrive in order afterwards */
static uint64_t bound_next, bound_done;
static int bound_failed;

static void bound_cb(void *request, ucs_status_t status,
                     const ucp_tag_recv_info_t *info, void *user_data)
{
    uint64_t seq = *(uint64_t*)user_data;

    if ((status != UCS_OK) || (seq != bound_next)) {
        bound_failed = 1;
    }
    ++bound_next;
    ++bound_done;
}


static int check_progress_bound(side_t *s, char *detail, size_t max)
{
    ucp_request_param_t param = {0};
    uint64_t *bufs, i, first;
    void **reqs;
    ucs_status_t status;

    bufs = calloc(BOUND_COUNT, sizeof(uint64_t));
    reqs = calloc(BOUND_COUNT, sizeof(void*));
    if (!s->is_target) {
        oob_recv_u64(s);                    /* receives are posted */
        for (i = 0; i < BOUND_COUNT; ++i) {
            bufs[i] = i;
            reqs[i] = ucp_tag_send_nbx(s->ep, &bufs[i], sizeof(bufs[i]), TAG,
                                       &param);
        }
        /* on their way; the receiver's transport takes them in meanwhile
         * (its async thread, or its device), the receiver does not
         * progress. Completions are waited for after: a transport with
         * credits (rc) needs the receiver's progress to send them all. */
        usleep(300000);
        oob_send_u64(s, 1);
        for (i = 0; i < BOUND_COUNT; ++i) {
            status = wait_req(s, reqs[i]);
            if (status != UCS_OK) {
                die("send %" PRIu64 ": %s", i, ucs_status_string(status));
            }
        }
        side_barrier(s);
        free(bufs);
        free(reqs);
        return oob_recv_u64(s);
    }

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv      = bound_cb;
    for (i = 0; i < BOUND_COUNT; ++i) {
        param.user_data = &bufs[i];
        reqs[i] = ucp_tag_recv_nbx(s->worker, &bufs[i], sizeof(bufs[i]), TAG,
                                   (ucp_tag_t)-1, &param);
    }
    oob_send_u64(s, 1);
    oob_recv_u64(s);                         /* all sent */
    ucp_worker_progress(s->worker);
    first = bound_done;
    while (bound_done < BOUND_COUNT) {
        ucp_worker_progress(s->worker);
    }
    for (i = 0; i < BOUND_COUNT; ++i) {
        ucp_request_free(reqs[i]);
    }
    if (bound_failed) {
        snprintf(detail, max, "messages out of order or failed");
    } else if ((first == 0) || (first > opt.bound)) {
        snprintf(detail, max, "one progress call delivered %" PRIu64
                 " of %d waiting messages (bound %u)", first, BOUND_COUNT,
                 opt.bound);
        bound_failed = 1;
    } else {
        snprintf(detail, max, "first progress call delivered %" PRIu64, first);
    }
    side_barrier(s);
    oob_send_u64(s, bound_failed);
    free(bufs);
    free(reqs);
    return bound_failed;
}


/* ---- driver ---------------------------------------------------------------- */

static const char *checks[] = {
    "put_worker_flush", "put_ep_flush", "put_explicit", "get_worker_flush",
    "get_ep_flush", "fence", "tag", "am", "stream", "close_flush",
    "peer_failure", "progress_bound", NULL
};


static int run_side(const char *name, side_t *s, char *detail, size_t max)
{
    if (!strcmp(name, "put_worker_flush")) {
        return check_put(s, FLUSH_WORKER, detail, max);
    } else if (!strcmp(name, "put_ep_flush")) {
        return check_put(s, FLUSH_EP, detail, max);
    } else if (!strcmp(name, "put_explicit")) {
        return check_put(s, FLUSH_NONE_EXPLICIT, detail, max);
    } else if (!strcmp(name, "close_flush")) {
        return check_put(s, FLUSH_CLOSE, detail, max);
    } else if (!strcmp(name, "get_worker_flush")) {
        return check_get(s, FLUSH_WORKER, detail, max);
    } else if (!strcmp(name, "get_ep_flush")) {
        return check_get(s, FLUSH_EP, detail, max);
    } else if (!strcmp(name, "fence")) {
        return check_fence(s, detail, max);
    } else if (!strcmp(name, "tag")) {
        return check_tag(s, detail, max);
    } else if (!strcmp(name, "am")) {
        return check_am(s, detail, max);
    } else if (!strcmp(name, "stream")) {
        return check_stream(s, detail, max);
    } else if (!strcmp(name, "peer_failure")) {
        return check_peer_failure(s, detail, max);
    } else if (!strcmp(name, "progress_bound")) {
        return check_progress_bound(s, detail, max);
    }
    die("unknown check %s", name);
    return 1;
}


/* Fork one side of a check; it reports through @a detail (shared) and its
 * exit status */
static pid_t fork_side(const char *name, int fd, int other_fd, int is_target,
                       int err_peer, char *detail, size_t max)
{
    side_t s;
    int failed;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid != 0) {
        if (pid < 0) {
            die("fork: %s", strerror(errno));
        }
        return pid;
    }
    close(other_fd);
    side_init(&s, fd, is_target, err_peer);
    failed = run_side(name, &s, detail, max);
    if (!err_peer) {
        side_barrier(&s);
    }
    side_fini(&s);
    _exit(failed ? 1 : 0);
}


/* Wait for a side until the deadline; 0 if it is still running */
static int wait_side(pid_t pid, int *wstatus, time_t deadline)
{
    pid_t ret;

    for (;;) {
        ret = waitpid(pid, wstatus, WNOHANG);
        if (ret == pid) {
            return 1;
        } else if ((ret < 0) && (errno != EINTR)) {
            die("waitpid: %s", strerror(errno));
        }
        if (time(NULL) >= deadline) {
            return 0;
        }
        usleep(10000);
    }
}


static int run_check(const char *name)
{
    const size_t max = 256;
    int err_peer     = !strcmp(name, "peer_failure");
    char *detail;        /* [0]: the initiator's, [max]: the target's */
    struct timespec t0, t1;
    int sv[2], ws_init = 0, ws_target = 0, done_init, done_target, failed;
    time_t deadline;
    pid_t init_pid, target_pid;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* what the sides have to say, readable after they exited or crashed */
    detail = mmap(NULL, 2 * max, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (detail == MAP_FAILED) {
        die("mmap: %s", strerror(errno));
    }
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        die("socketpair: %s", strerror(errno));
    }
    target_pid = fork_side(name, sv[1], sv[0], 1, err_peer, detail + max, max);
    init_pid   = fork_side(name, sv[0], sv[1], 0, err_peer, detail, max);
    close(sv[0]);
    close(sv[1]);

    /* a hang is a failure of this check, not of the whole run */
    deadline    = time(NULL) + opt.timeout;
    done_init   = wait_side(init_pid, &ws_init, deadline);
    done_target = wait_side(target_pid, &ws_target, done_init ? time(NULL) + 30 :
                                                                deadline);
    failed      = 0;
    if (!done_init || !done_target) {
        kill(init_pid, SIGKILL);
        kill(target_pid, SIGKILL);
        waitpid(init_pid, NULL, 0);
        waitpid(target_pid, NULL, 0);
        snprintf(detail, max, "timed out after %d s (%s did not finish)",
                 opt.timeout, !done_init ? "initiator" : "target");
        failed = 1;
    } else if (WIFSIGNALED(ws_init)) {
        snprintf(detail, max, "initiator killed by signal %d (%s)",
                 WTERMSIG(ws_init), strsignal(WTERMSIG(ws_init)));
        failed = 1;
    } else if (WIFSIGNALED(ws_target)) {
        snprintf(detail, max, "target killed by signal %d (%s)",
                 WTERMSIG(ws_target), strsignal(WTERMSIG(ws_target)));
        failed = 1;
    } else if (WEXITSTATUS(ws_init) != 0) {
        failed = 1;
    } else if (!err_peer && (WEXITSTATUS(ws_target) != 0)) {
        if (!detail[max]) {
            snprintf(detail + max, max, "exited with %d",
                     WEXITSTATUS(ws_target));
        }
        failed = 1;
    }

    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("CHECK %s %s %.1fs %s%s%s\n", name, failed ? "FAIL" : "PASS",
           (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9, detail,
           detail[max] ? "; target: " : "", detail + max);
    fflush(stdout);
    munmap(detail, 2 * max);
    return failed;
}


int main(int argc, char **argv)
{
    const char *selected[64];
    int nselected = 0, failed = 0, c, i;

    while ((c = getopt(argc, argv, "t:n:L:B:PT:")) != -1) {
        switch (c) {
        case 't':
            if (nselected < 64) {
                selected[nselected++] = optarg;
            }
            break;
        case 'n':
            opt.rounds = atoi(optarg);
            break;
        case 'L':
            opt.largest = strtoull(optarg, NULL, 0);
            break;
        case 'B':
            opt.bound = atoi(optarg);
            break;
        case 'P':
            opt.passive = 1;
            break;
        case 'T':
            opt.timeout = atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: %s [-t CHECK]... [-n ROUNDS] [-L BYTES] "
                    "[-B BOUND] [-P] [-T SECONDS]\n", argv[0]);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);

    if (nselected == 0) {
        for (i = 0; checks[i] != NULL; ++i) {
            failed |= run_check(checks[i]);
        }
    } else {
        for (i = 0; i < nselected; ++i) {
            failed |= run_check(selected[i]);
        }
    }
    return failed ? 1 : 0;
}
