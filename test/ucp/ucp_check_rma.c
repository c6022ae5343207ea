/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The one-sided checks: put and get with every completion form, fence, and
 * a peer that dies with RMA outstanding (peer_failure, peer_kill). The
 * target exposes a fresh region, the initiator operates on it, and the
 * target's bytes are compared with the initiator's image of them.
 */

#define _GNU_SOURCE
#include "ucp_check.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>


#define NUM_SMALL    96


/* ---- RMA: the operations of a round ----------------------------------- */

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


/* ---- RMA: regions and rounds ------------------------------------------ */

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


/* A round of put or get as either side sees it */
typedef struct {
    rma_op_t   ops[NUM_SMALL + 4];
    size_t     n;
    size_t     len;       /* of the target's region */
    region_t   r;         /* the target's: the region */
    uint64_t   base;      /* the initiator's: the region's address, */
    ucp_rkey_h rkey;      /* its rkey */
    uint8_t    *image;    /* and what it holds before the round */
} rma_round_t;


/* The start of a round: its operations from @a ops_seed, and a fresh region
 * filled from @a seed, which the target maps and the initiator gets the
 * rkey and an image of. The target returns when the initiator reports its
 * operations completed (progressing meanwhile unless passive). */
static void round_begin(side_t *s, rma_round_t *rd, uint64_t ops_seed,
                        uint64_t seed)
{
    rd->n = rma_ops_make(ops_seed, rd->ops, &rd->len);
    if (s->is_target) {
        region_map(s, &rd->r, rd->len);
        fill_random(rd->r.base, rd->len, seed);
        region_send_rkey(s, &rd->r);
        oob_wait(s, !opt.passive);
        oob_recv_u64(s);                       /* "completed" */
        return;
    }
    rd->rkey  = region_recv_rkey(s, &rd->base);
    rd->image = malloc(rd->len);
    fill_random(rd->image, rd->len, seed);
}


/* ---- RMA: issue and complete ------------------------------------------ */

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
    ucs_status_t status, req_status;
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
        /* kept in every mode: after a flush each op must also have
         * succeeded (UCP completes a failed op's request with the error and
         * still completes the flush; freeing the request at once would
         * turn a failed get into wrong data with success) */
        reqs[i] = req;
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
            reqs[i] = NULL;
        }
        if (status == UCS_OK) {
            status = wait_req(s, ucp_worker_flush_nbx(s->worker, &null_param));
        }
        break;
    }

    /* after the flush: every op's own status (a flush does not fail for
     * an op that did) */
    for (i = 0; i < n; ++i) {
        if (reqs[i] == NULL) {
            continue;
        }
        req_status = wait_req(s, reqs[i]);
        if ((req_status != UCS_OK) && (result == UCS_OK)) {
            fprintf(stderr, "rma: %s %zu of %zu (%zu bytes at %zu) failed: "
                    "%s\n", is_get ? "get" : "put", i, n, ops[i].length,
                    ops[i].offset, ucs_status_string(req_status));
            result = req_status;
        }
    }
    free(reqs);
    return (status != UCS_OK) ? status : result;
}


/* put: the initiator writes random bytes into a fresh target region; after
 * the completion the target snapshots its region at once and compares it
 * with the initiator's image */
int check_put(side_t *s, int mode, char *detail, size_t max)
{
    int round, failed = 0;
    uint8_t *src, *snap;
    uint64_t verdict;
    ucs_status_t status;
    rma_round_t rd;

    for (round = 0; round < opt.rounds; ++round) {
        round_begin(s, &rd, 1000 + round, 77 + round);
        if (s->is_target) {
            snap = malloc(rd.len);
            memcpy(snap, rd.r.base, rd.len);   /* before anything else runs */
            rd.image = malloc(rd.len);
            oob_recv(s, rd.image, rd.len);
            verdict = compare(snap, rd.image, rd.len, detail, max);
            if (verdict) {
                report_ops(rd.ops, rd.n, snap, rd.image);
            }
            oob_send_u64(s, verdict);
            if (verdict) {
                oob_send(s, detail, max);
            }
            free(snap);
            free(rd.image);
            region_unmap(s, &rd.r);
            failed |= verdict;
            if ((mode == FLUSH_CLOSE) || failed) {
                break; /* as the initiator */
            }
            continue;
        }

        /* the target's bytes after the round */
        src = malloc(rd.len);
        fill_random(src, rd.len, 5000 + round);
        ops_apply(rd.image, src, rd.ops, rd.n);
        status = rma_issue(s, 0, mode, rd.ops, rd.n, src, rd.base, rd.rkey);
        oob_send_u64(s, 1);
        oob_send(s, rd.image, rd.len);
        verdict = oob_recv_u64(s);
        if (verdict) {
            oob_recv(s, detail, max);
            failed = 1;
        } else if (status != UCS_OK) {
            snprintf(detail, max, "round %d: completion status %s", round,
                     ucs_status_string(status));
            failed = 1;
        }
        if (rd.rkey != NULL) {
            ucp_rkey_destroy(rd.rkey);
        }
        free(src);
        free(rd.image);
        if (mode == FLUSH_CLOSE) {
            break; /* the ep is gone */
        }
        if (failed) {
            break;
        }
    }
    return failed;
}


int check_get(side_t *s, int mode, char *detail, size_t max)
{
    int round, failed = 0;
    uint8_t *dst, *want;
    ucs_status_t status;
    rma_round_t rd;

    for (round = 0; round < opt.rounds; ++round) {
        round_begin(s, &rd, 2000 + round, 99 + round);
        if (s->is_target) {
            region_unmap(s, &rd.r);
            continue;
        }

        /* the target's bytes, read into a buffer of 0xa5 */
        dst  = malloc(rd.len);
        want = malloc(rd.len);
        memset(dst, 0xa5, rd.len);
        memset(want, 0xa5, rd.len);
        ops_apply(want, rd.image, rd.ops, rd.n);
        status = rma_issue(s, 1, mode, rd.ops, rd.n, dst, rd.base, rd.rkey);
        /* compared before the target may change or unmap anything */
        if (compare(dst, want, rd.len, detail, max)) {
            failed = 1;
        } else if (status != UCS_OK) {
            snprintf(detail, max, "completion status %s",
                     ucs_status_string(status));
            failed = 1;
        }
        oob_send_u64(s, 1);
        ucp_rkey_destroy(rd.rkey);
        free(rd.image);
        free(dst);
        free(want);
        if (failed) {
            /* the target waits for the rounds we skip */
            for (++round; round < opt.rounds; ++round) {
                rd.rkey = region_recv_rkey(s, &rd.base);
                ucp_rkey_destroy(rd.rkey);
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

int check_fence(side_t *s, int mode, char *detail, size_t max)
{
    size_t len = 64 + (size_t)FENCE_BLOCKS * FENCE_BLOCK;
    volatile uint64_t *flag;
    uint8_t *want, *src;
    uint64_t seen = 0, k, base, verdict = 0;
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
        while (!oob_ready(s)) {
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
                        snprintf(detail, max, "flag %" PRIu64 " seen "
                                 "before block %" PRIu64 " was complete", k,
                                 seen + 1);
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


/* ---- a peer that dies ------------------------------------------------- */

/* The initiator's verdict on a dead peer: @a what (@a detail starts with
 * @a prefix) ended with @a status, which must be an error, and the ep's
 * error handler must have run by @a deadline (a UCX may call it after it
 * failed the requests) */
static int peer_dead_verdict(side_t *s, const char *prefix, const char *what,
                             ucs_status_t status, double deadline,
                             char *detail, size_t max)
{
    if (status == UCS_OK) {
        snprintf(detail, max, "%s%s towards a dead peer returned OK", prefix,
                 what);
        return CHECK_FAIL;
    }
    if (!wait_ep_error(s, deadline)) {
        snprintf(detail, max, "%s%s failed (%s) but the error handler did "
                 "not run", prefix, what, ucs_status_string(status));
        return CHECK_FAIL;
    }
    snprintf(detail, max, "%s%s: %s, ep error: %s", prefix, what,
             ucs_status_string(status), ucs_status_string(s->ep_status));
    return CHECK_PASS;
}


/* peer_failure: the target dies with RMA outstanding towards it; the
 * initiator's flush must end with an error, not hang or crash */
int check_peer_failure(side_t *s, int mode, char *detail, size_t max)
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
    /* no grace for the handler, as this check always had: UCP 1.13 calls
     * it in the same step that fails the requests */
    return peer_dead_verdict(s, "", "flush", status, 0, detail, max);
}


/* The target of peer_kill: killed in the middle of a transfer, so that no
 * exit path of this process (or of UCX) tells the peer anything */
static void peer_kill_target(side_t *s)
{
    region_t r;
    double end;

    region_map(s, &r, opt.largest);
    region_send_rkey(s, &r);
    /* progressing: a transport without hardware RMA needs the target */
    oob_wait(s, 1);
    oob_recv_u64(s);                       /* the first one is posted */
    /* some 20 ms into the transfers, still serving them to the end */
    end = now_sec() + 0.02;
    while (now_sec() < end) {
        ucp_worker_progress(s->worker);
    }
    raise(SIGKILL);
    die("still alive after SIGKILL");
}


/* peer_kill: the target kills itself (SIGKILL) while large puts and gets,
 * each with an ep flush, stream towards it. The initiator's operations or
 * flushes must fail and its error handler run before the deadline, where a
 * transport that lost the peer silently would flush OK forever; a hang is
 * the driver's timeout. */
int check_peer_kill(side_t *s, int mode, char *detail, size_t max)
{
    size_t len          = opt.largest;
    ucs_status_t status = UCS_OK;
    uint64_t done       = 0;
    const char *what;
    char prefix[64];
    double deadline;
    uint64_t base;
    ucp_rkey_h rkey;
    uint8_t *buf;
    void *req;

    if (s->is_target) {
        peer_kill_target(s);
    }

    rkey     = region_recv_rkey(s, &base);
    buf      = calloc(1, len); /* one for both: one operation at a time */
    deadline = check_deadline();
    do {
        what = (done & 1) ? "get" : "put";
        req  = (done & 1) ?
               ucp_get_nbx(s->ep, buf, len, base, rkey, &null_param) :
               ucp_put_nbx(s->ep, buf, len, base, rkey, &null_param);
        if (done == 0) {
            oob_send_u64(s, 1);
        }
        status = wait_req(s, req);
        if (status == UCS_OK) {
            what   = "flush";
            status = wait_req(s, ucp_ep_flush_nbx(s->ep, &null_param));
        }
        done += (status == UCS_OK);
    } while ((status == UCS_OK) && (now_sec() < deadline));
    ucp_rkey_destroy(rkey);
    free(buf);

    if (status == UCS_OK) {
        snprintf(detail, max, "no error within %d s: %" PRIu64 " operations "
                 "and flushes towards a killed peer completed",
                 opt.timeout * 3 / 4, done);
        return CHECK_FAIL;
    }
    snprintf(prefix, sizeof(prefix), "%" PRIu64 " operations of %zu bytes, "
             "then ", done, len);
    return peer_dead_verdict(s, prefix, what, status, deadline, detail, max);
}


/* force_close: an operation's callback counts its calls */
static void force_close_cb(void *request, ucs_status_t status, void *user_data)
{
    ++*(unsigned*)user_data;
}


#define FORCE_CLOSE_OPS  4

/* force_close: the initiator closes its ep in force mode while large puts
 * and gets are in flight (zero-copy chunk sends still reading its buffers,
 * chunks still landing in them), then frees the buffers at once, as an
 * application may once the close is done, and goes on progressing. Every
 * operation must complete exactly once, and nothing may touch the ep or
 * the buffers after the close (the device tests run this check under
 * AddressSanitizer too). */
int check_force_close(side_t *s, int mode, char *detail, size_t max)
{
    const size_t len = (opt.largest < (4ul << 20)) ? opt.largest : (4ul << 20);
    unsigned calls[FORCE_CLOSE_OPS] = {0};
    ucp_request_param_t param = {0};
    void *req, *bufs[FORCE_CLOSE_OPS], *reqs[FORCE_CLOSE_OPS];
    ucp_rkey_h rkey;
    uint64_t base;
    region_t r;
    double end;
    int i;

    if (s->is_target) {
        region_map(s, &r, FORCE_CLOSE_OPS * len);
        region_send_rkey(s, &r);
        oob_wait(s, 1);          /* serving the transfers until the end */
        oob_recv_u64(s);
        region_unmap(s, &r);
        return CHECK_PASS;
    }

    rkey = region_recv_rkey(s, &base);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = force_close_cb;
    for (i = 0; i < FORCE_CLOSE_OPS; ++i) {
        bufs[i] = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (bufs[i] == MAP_FAILED) {
            die("mmap %zu: %s", len, strerror(errno));
        }
        fill_random(bufs[i], len, i);
        param.user_data = &calls[i];
        req = (i % 2) ?
              ucp_get_nbx(s->ep, bufs[i], len, base + i * len, rkey, &param) :
              ucp_put_nbx(s->ep, bufs[i], len, base + i * len, rkey, &param);
        if (!UCS_PTR_IS_PTR(req)) {
            ++calls[i];          /* done at once, or failed at once */
            req = NULL;
        }
        reqs[i] = req;
    }

    /* some of the transfers under way (whether they are depends on the
     * scheduler; the check's outcome does not) */
    end = now_sec() + 0.05;
    while (now_sec() < end) {
        ucp_worker_progress(s->worker);
    }

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    wait_req(s, ucp_ep_close_nbx(s->ep, &param));
    s->ep = NULL;
    for (i = 0; i < FORCE_CLOSE_OPS; ++i) {
        munmap(bufs[i], len);
    }
    ucp_rkey_destroy(rkey);

    /* late chunk completions and answers find nothing of the ep; every
     * request completes (UCP's force close cancels what was not done) */
    end = now_sec() + 1.0;
    while (now_sec() < end) {
        ucp_worker_progress(s->worker);
    }
    oob_send_u64(s, 1);
    for (i = 0; i < FORCE_CLOSE_OPS; ++i) {
        if (reqs[i] == NULL) {
            continue;
        }
        if (ucp_request_check_status(reqs[i]) == UCS_INPROGRESS) {
            snprintf(detail, max, "%s %d still in progress after the close",
                     (i % 2) ? "get" : "put", i);
            return CHECK_FAIL;
        }
        ucp_request_free(reqs[i]);
    }

    for (i = 0; i < FORCE_CLOSE_OPS; ++i) {
        if (calls[i] != 1) {
            snprintf(detail, max, "%s %d completed %u times",
                     (i % 2) ? "get" : "put", i, calls[i]);
            return CHECK_FAIL;
        }
    }
    snprintf(detail, max, "%d operations of %zu bytes, each completed once",
             FORCE_CLOSE_OPS, len);
    return CHECK_PASS;
}
