/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * threads: N threads x M peers, the way MPI+threads codes use UCP (a worker
 * per thread, as MPICH's VCIs and ucx_perftest -T do). The initiator runs N
 * threads, the target M, each thread with a UCP worker of its own on the
 * side's one context; every initiator worker has an ep to every target
 * worker. Over each of the N x M pairs, at the same time:
 *   - tag messages of 8 B to 130 KB (eager, multi-fragment, rendezvous),
 *     each checksummed by content and matched in order per sender;
 *   - puts into the pair's slot of the target worker's region, completed by
 *     an ep flush, read back with a get and compared; then puts of another
 *     image in pieces, completed by one worker flush over all M peers:
 *     once every initiator thread's flush returned, and before any ep is
 *     closed (a close flushes again), the target compares its regions.
 * A flush that returned before its puts landed, a message delivered to the
 * wrong worker, lost, duplicated or out of order, an ep close that fails,
 * fails the check. With srqud, which
 * of the workers' resources are shared is UCX_SRQUD_SHARE's (run.sh runs
 * every level, under loss too).
 */

#define _GNU_SOURCE
#include "ucp_check.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define THR_MSGS      48            /* tag messages per pair */
#define THR_WINDOW    8             /* sends in flight per initiator thread */
#define THR_SLOT      (96 * 1024 + 5) /* RMA bytes per pair */
#define THR_PIECES    3             /* puts of the second image per pair */
#define THR_MAX       16            /* threads per side */
#define THR_MSG_MAX   (130 * 1024)


/* What a target worker publishes: its address and its region */
typedef struct {
    ucp_address_t *addr;
    size_t        addr_len;
    void          *rkey_buf;
    size_t        rkey_len;
    uint8_t       *region;          /* THR_SLOT bytes per initiator thread */
    ucp_mem_h     memh;
} thr_peer_t;


/* One thread of a side */
typedef struct {
    side_t        *s;
    int           index;
    ucp_worker_h  worker;
    int           failed;           /* CHECK_* */
    char          detail[160];
    int           *stop;            /* the target's threads: set when done
                                       (atomic) */
    /* the initiator's: the target workers to reach, and the points where
     * its threads wait for the target's comparison */
    thr_peer_t    *peers;
    uint64_t      *peer_base;
    pthread_barrier_t *flushed, *compared;
} thr_t;


static uint64_t thr_tag(int i, int j, uint64_t k)
{
    return ((uint64_t)i << 48) | ((uint64_t)j << 40) | k;
}


/* Sizes cycle through eager short, bcopy, zcopy and rendezvous */
static size_t thr_msg_size(int i, int j, uint64_t k)
{
    static const size_t sizes[] = {8, 64, 1000, 4000, 8200, 33000,
                                   THR_MSG_MAX, 0};

    return sizes[(k + i + j) % (sizeof(sizes) / sizeof(sizes[0]))];
}


static uint64_t thr_seed(int i, int j, uint64_t k, int what)
{
    return ((uint64_t)what << 56) ^ thr_tag(i, j, k) ^ 0x7468726561647321ull;
}


static void thr_fail(thr_t *t, int verdict, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void thr_fail(thr_t *t, int verdict, const char *fmt, ...)
{
    va_list ap;

    if (t->failed) {
        return;
    }
    t->failed = verdict;
    va_start(ap, fmt);
    vsnprintf(t->detail, sizeof(t->detail), fmt, ap);
    va_end(ap);
}


/* A request given up on: it stays in UCX, with its buffer, and the side
 * skips its cleanup (see side_fini) */
static void thr_abandon(thr_t *t)
{
    __atomic_fetch_add(&t->s->abandoned, 1, __ATOMIC_RELAXED);
}


static int thr_abandoned(const side_t *s)
{
    return __atomic_load_n(&s->abandoned, __ATOMIC_RELAXED) != 0;
}


/* Progress this thread's worker until @a req completes, or until the
 * check's deadline: UCS_ERR_TIMED_OUT, the request abandoned (its buffer
 * must stay allocated). A tag receive's match goes to @a info if not NULL */
static ucs_status_t thr_wait_info(thr_t *t, void *req, double deadline,
                                  ucp_tag_recv_info_t *info)
{
    unsigned spins = 0;
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    } else if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    for (;;) {
        ucp_worker_progress(t->worker);
        status = (info != NULL) ? ucp_tag_recv_request_test(req, info) :
                                  ucp_request_check_status(req);
        if (status != UCS_INPROGRESS) {
            ucp_request_free(req);
            return status;
        }
        if (((++spins % 1024) == 0) && (now_sec() >= deadline)) {
            thr_abandon(t);
            return UCS_ERR_TIMED_OUT;
        }
    }
}


static ucs_status_t thr_wait(thr_t *t, void *req, double deadline)
{
    return thr_wait_info(t, req, deadline, NULL);
}


static ucp_worker_h thr_worker_create(side_t *s)
{
    ucp_worker_params_t wparams = {0};
    ucp_worker_h worker;
    ucs_status_t status;

    /* a worker per thread, each used by its own thread only */
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(s->context, &wparams, &worker);
    if (status != UCS_OK) {
        die("ucp_worker_create: %s", ucs_status_string(status));
    }
    return worker;
}


/* ---- the target: M workers receiving, their regions written ---------- */

/* A tag receive of this thread's worker, with what was matched, always
 * through a request: UCX 1.13 completes a receive of an unexpected eager
 * message in place without filling recv_info (1.18 fills it), so that
 * immediate completion is ruled out and the request's info read instead */
static ucs_status_t thr_recv(thr_t *t, void *buf, size_t len,
                             ucp_tag_recv_info_t *info, double deadline)
{
    ucp_request_param_t param = {0};
    void *req;

    param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    /* any sender, any tag: the tag says who and which */
    req = ucp_tag_recv_nbx(t->worker, buf, len, 0, 0, &param);
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    } else if (req == NULL) {
        /* cannot be, with NO_IMM_CMPL: nothing says which it was */
        return UCS_ERR_NO_MESSAGE;
    }
    return thr_wait_info(t, req, deadline, info);
}


static void *target_thread(void *arg)
{
    thr_t *t                  = arg;
    int n                     = opt.init_threads;
    ucp_tag_recv_info_t info;
    uint64_t next[THR_MAX]    = {0}, k, got = 0;
    uint8_t *buf              = malloc(THR_MSG_MAX);
    uint8_t *want             = malloc(THR_MSG_MAX);
    double deadline           = check_deadline();
    ucs_status_t status;
    int i;

    while (got < (uint64_t)n * THR_MSGS) {
        status = thr_recv(t, buf, THR_MSG_MAX, &info, deadline);
        if (status != UCS_OK) {
            thr_fail(t, CHECK_FAIL, "worker %d: receive %" PRIu64 " of %" PRIu64
                     ": %s", t->index, got, (uint64_t)n * THR_MSGS,
                     ucs_status_string(status));
            if (status == UCS_ERR_TIMED_OUT) {
                buf = NULL; /* still posted: UCX may yet write it */
            }
            break;
        }
        ++got;
        i = (int)(info.sender_tag >> 48);
        k = info.sender_tag & 0xffffffffffull;
        if ((i >= n) || (((info.sender_tag >> 40) & 0xff) != (uint64_t)t->index)) {
            thr_fail(t, CHECK_DATA_ERROR, "worker %d: tag 0x%" PRIx64
                     " meant for another worker", t->index, info.sender_tag);
            continue;
        }
        if (k != next[i]) {
            thr_fail(t, CHECK_DATA_ERROR, "worker %d: from thread %d message %"
                     PRIu64 ", expected %" PRIu64 " (out of order or lost)",
                     t->index, i, k, next[i]);
        }
        next[i] = k + 1;
        if (info.length != thr_msg_size(i, t->index, k)) {
            thr_fail(t, CHECK_DATA_ERROR, "worker %d: message %d/%" PRIu64
                     " of %zu bytes, sent %zu", t->index, i, k, info.length,
                     thr_msg_size(i, t->index, k));
            continue;
        }
        fill_random(want, info.length, thr_seed(i, t->index, k, 0));
        if (memcmp(buf, want, info.length)) {
            thr_fail(t, CHECK_DATA_ERROR, "worker %d: message %d/%" PRIu64
                     " (%zu bytes): wrong data", t->index, i, k, info.length);
        }
    }
    /* the initiators' RMA needs this worker's progress (UD) until they are
     * done with it and have closed their eps (a flushing close: everything
     * they sent has arrived) */
    while (!__atomic_load_n(t->stop, __ATOMIC_ACQUIRE)) {
        ucp_worker_progress(t->worker);
    }
    /* a message beyond the last one expected (a duplicate of the last)
     * would sit unmatched */
    for (i = 0; i < 1000; ++i) {
        ucp_worker_progress(t->worker);
    }
    if (ucp_tag_probe_nb(t->worker, 0, 0, 0, &info) != NULL) {
        thr_fail(t, CHECK_DATA_ERROR, "worker %d: a message beyond the %"
                 PRIu64 " expected: tag 0x%" PRIx64 ", %zu bytes", t->index,
                 (uint64_t)n * THR_MSGS, info.sender_tag, info.length);
    }
    free(buf);
    free(want);
    return NULL;
}


/* Every slot holds its initiator thread's second image; the first that
 * does not is said in @a detail */
static int target_verify_regions(thr_peer_t *peers, char *detail,
                                 size_t max)
{
    uint8_t *want = malloc(THR_SLOT);
    int i, j, verdict = CHECK_PASS;

    for (j = 0; j < opt.target_threads; ++j) {
        for (i = 0; i < opt.init_threads; ++i) {
            fill_random(want, THR_SLOT, thr_seed(i, j, 0, 2));
            if (memcmp(peers[j].region + (size_t)i * THR_SLOT, want,
                       THR_SLOT)) {
                char d[64];

                compare(peers[j].region + (size_t)i * THR_SLOT, want,
                        THR_SLOT, d, sizeof(d));
                if (verdict == CHECK_PASS) {
                    snprintf(detail, max, "worker %d: slot of thread %d "
                             "after its worker flush: %s", j, i, d);
                }
                verdict = CHECK_DATA_ERROR;
            }
        }
    }
    free(want);
    return verdict;
}


static int threads_target(side_t *s, char *detail, size_t max)
{
    int m = opt.target_threads, j, verdict = CHECK_PASS;
    thr_t thr[THR_MAX];
    thr_peer_t peers[THR_MAX];
    pthread_t tid[THR_MAX];
    int stop = 0, regions;
    char regions_detail[192];
    ucp_mem_map_params_t mp = {0};
    ucs_status_t status;
    size_t length = (size_t)opt.init_threads * THR_SLOT;

    memset(thr, 0, sizeof(thr));
    memset(peers, 0, sizeof(peers));
    for (j = 0; j < m; ++j) {
        thr[j].s      = s;
        thr[j].index  = j;
        thr[j].stop   = &stop;
        thr[j].worker = thr_worker_create(s);
        status = ucp_worker_get_address(thr[j].worker, &peers[j].addr,
                                        &peers[j].addr_len);
        if (status != UCS_OK) {
            die("ucp_worker_get_address: %s", ucs_status_string(status));
        }
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        mp.length     = length;
        mp.flags      = UCP_MEM_MAP_ALLOCATE;
        status = ucp_mem_map(s->context, &mp, &peers[j].memh);
        if (status != UCS_OK) {
            die("ucp_mem_map: %s", ucs_status_string(status));
        }
        {
            ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};

            ucp_mem_query(peers[j].memh, &attr);
            peers[j].region = attr.address;
        }
        memset(peers[j].region, 0xee, length);
        status = ucp_rkey_pack(s->context, peers[j].memh, &peers[j].rkey_buf,
                               &peers[j].rkey_len);
        if (status != UCS_OK) {
            die("ucp_rkey_pack: %s", ucs_status_string(status));
        }
        oob_send_u64(s, peers[j].addr_len);
        oob_send(s, peers[j].addr, peers[j].addr_len);
        oob_send_u64(s, (uintptr_t)peers[j].region);
        oob_send_u64(s, peers[j].rkey_len);
        oob_send(s, peers[j].rkey_buf, peers[j].rkey_len);
    }
    for (j = 0; j < m; ++j) {
        pthread_create(&tid[j], NULL, target_thread, &thr[j]);
    }
    /* every initiator thread's worker flush returned, no ep closed yet:
     * what the flushes completed must be here (this thread compares, the
     * workers' threads go on progressing). The socket is waited on
     * without progress: this side's own worker carries nothing now, and
     * a thread more spinning on 2 cores slows the ones that work */
    oob_wait(s, 0);
    oob_recv_u64(s);
    regions = target_verify_regions(peers, regions_detail,
                                    sizeof(regions_detail));
    oob_send_u64(s, regions);
    /* the initiator's eps closed (flushing: all it sent has arrived) */
    oob_wait(s, 0);
    oob_recv_u64(s);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (j = 0; j < m; ++j) {
        pthread_join(tid[j], NULL);
    }
    if (regions != CHECK_PASS) {
        verdict = regions;
        snprintf(detail, max, "%s", regions_detail);
    }
    for (j = 0; j < m; ++j) {
        if (thr[j].failed && (verdict == CHECK_PASS)) {
            verdict = thr[j].failed;
            snprintf(detail, max, "%s", thr[j].detail);
        }
    }
    oob_send_u64(s, verdict);
    if (thr_abandoned(s)) {
        return verdict;
    }
    for (j = 0; j < m; ++j) {
        ucp_rkey_buffer_release(peers[j].rkey_buf);
        ucp_worker_release_address(thr[j].worker, peers[j].addr);
        ucp_mem_unmap(s->context, peers[j].memh);
        ucp_worker_destroy(thr[j].worker);
    }
    return verdict;
}


/* ---- the initiator: N threads, each to every target worker ---------- */

/* Tag messages to all M peers, THR_WINDOW in flight */
static void init_send_tags(thr_t *t, ucp_ep_h *eps, double deadline)
{
    ucp_request_param_t param = {0};
    void *reqs[THR_WINDOW] = {0}, *bufs[THR_WINDOW] = {0};
    int m = opt.target_threads, j, slot = 0, w;
    ucs_status_t status;
    uint64_t k;
    size_t len;

    for (k = 0; k < THR_MSGS; ++k) {
        for (j = 0; j < m; ++j) {
            if (bufs[slot] != NULL) {
                status = thr_wait(t, reqs[slot], deadline);
                if (status != UCS_ERR_TIMED_OUT) {
                    free(bufs[slot]); /* else UCX may still read it */
                }
                bufs[slot] = NULL;
                if (status != UCS_OK) {
                    thr_fail(t, CHECK_FAIL, "thread %d: send: %s", t->index,
                             ucs_status_string(status));
                    return;
                }
            }
            len        = thr_msg_size(t->index, j, k);
            bufs[slot] = malloc(len ? len : 1);
            fill_random(bufs[slot], len, thr_seed(t->index, j, k, 0));
            reqs[slot] = ucp_tag_send_nbx(eps[j], bufs[slot], len,
                                          thr_tag(t->index, j, k), &param);
            slot       = (slot + 1) % THR_WINDOW;
        }
    }
    for (w = 0; w < THR_WINDOW; ++w) {
        if (bufs[w] != NULL) {
            status = thr_wait(t, reqs[w], deadline);
            if (status != UCS_ERR_TIMED_OUT) {
                free(bufs[w]);
            }
            if (status != UCS_OK) {
                thr_fail(t, CHECK_FAIL, "thread %d: send: %s", t->index,
                         ucs_status_string(status));
            }
        }
    }
}


/* Put image 1 into the pair's slot, flush the ep, get it back; then image
 * 2 in pieces, completed by the caller's worker flush */
static void init_rma(thr_t *t, ucp_ep_h ep, ucp_rkey_h rkey, int j,
                     uint8_t *image, uint8_t *back, double deadline)
{
    uint64_t remote = t->peer_base[j] + (uint64_t)t->index * THR_SLOT;
    size_t piece    = THR_SLOT / THR_PIECES, off, len;
    ucs_status_t status;
    char d[96];
    void *req;
    int p;

    fill_random(image, THR_SLOT, thr_seed(t->index, j, 0, 1));
    status = thr_wait(t, ucp_put_nbx(ep, image, THR_SLOT, remote, rkey,
                                     &null_param), deadline);
    if (status == UCS_OK) {
        status = thr_wait(t, ucp_ep_flush_nbx(ep, &null_param), deadline);
    }
    if (status == UCS_OK) {
        memset(back, 0, THR_SLOT);
        status = thr_wait(t, ucp_get_nbx(ep, back, THR_SLOT, remote, rkey,
                                         &null_param), deadline);
    }
    if (status != UCS_OK) {
        thr_fail(t, CHECK_FAIL, "thread %d to worker %d: put/flush/get: %s",
                 t->index, j, ucs_status_string(status));
        return;
    }
    if (compare(back, image, THR_SLOT, d, sizeof(d))) {
        thr_fail(t, CHECK_FAIL, "thread %d to worker %d: get after ep flush: "
                 "%s", t->index, j, d);
        return;
    }
    /* image 2: pieces left in flight, the worker flush completes them */
    fill_random(image, THR_SLOT, thr_seed(t->index, j, 0, 2));
    for (p = 0; p < THR_PIECES; ++p) {
        off = p * piece;
        len = (p == THR_PIECES - 1) ? THR_SLOT - off : piece;
        req = ucp_put_nbx(ep, image + off, len, remote + off, rkey,
                          &null_param);
        if (UCS_PTR_IS_ERR(req)) {
            thr_fail(t, CHECK_FAIL, "thread %d to worker %d: put: %s",
                     t->index, j, ucs_status_string(UCS_PTR_STATUS(req)));
            return;
        } else if (req != NULL) {
            /* released now, completed by the worker flush */
            ucp_request_free(req);
        }
    }
}


static void *init_thread(void *arg)
{
    thr_t *t                = arg;
    int m                   = opt.target_threads, j;
    double deadline         = check_deadline();
    ucp_ep_h eps[THR_MAX]   = {0};
    ucp_rkey_h rkeys[THR_MAX] = {0};
    uint8_t *images[THR_MAX] = {0};
    uint8_t *back           = malloc(THR_SLOT);
    ucp_ep_params_t ep_params;
    ucp_request_param_t close_param = {0};
    ucs_status_t status;

    for (j = 0; j < m; ++j) {
        memset(&ep_params, 0, sizeof(ep_params));
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address    = t->peers[j].addr;
        status = ucp_ep_create(t->worker, &ep_params, &eps[j]);
        if (status == UCS_OK) {
            status = ucp_ep_rkey_unpack(eps[j], t->peers[j].rkey_buf,
                                        &rkeys[j]);
        }
        if (status != UCS_OK) {
            thr_fail(t, CHECK_FAIL, "thread %d to worker %d: ep/rkey: %s",
                     t->index, j, ucs_status_string(status));
            goto out;
        }
        images[j] = malloc(THR_SLOT);
    }
    init_send_tags(t, eps, deadline);
    for (j = 0; (j < m) && !t->failed; ++j) {
        init_rma(t, eps[j], rkeys[j], j, images[j], back, deadline);
    }
    if (!t->failed) {
        status = thr_wait(t, ucp_worker_flush_nbx(t->worker, &null_param),
                          deadline);
        if (status != UCS_OK) {
            thr_fail(t, CHECK_FAIL, "thread %d: worker flush: %s", t->index,
                     ucs_status_string(status));
        }
    }
out:
    /* every thread's worker flush returned (or failed): the target compares
     * its regions before any ep is closed, since a close flushes again */
    pthread_barrier_wait(t->flushed);
    pthread_barrier_wait(t->compared);
    for (j = 0; (j < m) && !thr_abandoned(t->s); ++j) {
        if (eps[j] != NULL) {
            /* a flushing close: the target still progresses */
            status = thr_wait(t, ucp_ep_close_nbx(eps[j], &close_param),
                              deadline);
            if (status != UCS_OK) {
                thr_fail(t, CHECK_FAIL, "thread %d to worker %d: ep close: "
                         "%s", t->index, j, ucs_status_string(status));
            }
        }
    }
    if (thr_abandoned(t->s)) {
        /* requests left in UCX may still use the keys and the images */
        return NULL;
    }
    for (j = 0; j < m; ++j) {
        if (rkeys[j] != NULL) {
            ucp_rkey_destroy(rkeys[j]);
        }
        free(images[j]);
    }
    free(back);
    return NULL;
}


static int threads_initiator(side_t *s, char *detail, size_t max)
{
    int n = opt.init_threads, m = opt.target_threads, i, j;
    int verdict = CHECK_PASS;
    thr_t thr[THR_MAX];
    thr_peer_t peers[THR_MAX];
    uint64_t base[THR_MAX], regions;
    pthread_t tid[THR_MAX];
    pthread_barrier_t flushed, compared;

    memset(peers, 0, sizeof(peers));
    for (j = 0; j < m; ++j) {
        peers[j].addr_len = oob_recv_u64(s);
        peers[j].addr     = malloc(peers[j].addr_len);
        oob_recv(s, peers[j].addr, peers[j].addr_len);
        base[j]           = oob_recv_u64(s);
        peers[j].rkey_len = oob_recv_u64(s);
        peers[j].rkey_buf = malloc(peers[j].rkey_len);
        oob_recv(s, peers[j].rkey_buf, peers[j].rkey_len);
    }
    memset(thr, 0, sizeof(thr));
    for (i = 0; i < n; ++i) {
        thr[i].s         = s;
        thr[i].index     = i;
        thr[i].peers     = peers;
        thr[i].peer_base = base;
        thr[i].flushed   = &flushed;
        thr[i].compared  = &compared;
        thr[i].worker    = thr_worker_create(s);
    }
    pthread_barrier_init(&flushed, NULL, n + 1);
    pthread_barrier_init(&compared, NULL, n + 1);
    for (i = 0; i < n; ++i) {
        pthread_create(&tid[i], NULL, init_thread, &thr[i]);
    }
    /* every worker flush returned, no ep closed: the target compares */
    pthread_barrier_wait(&flushed);
    oob_send_u64(s, 1);
    regions = oob_recv_u64(s);
    pthread_barrier_wait(&compared);
    for (i = 0; i < n; ++i) {
        pthread_join(tid[i], NULL);
    }
    /* eps closed: the target stops, then says what it received */
    oob_send_u64(s, 2);
    for (i = 0; i < n; ++i) {
        if (thr[i].failed && (verdict == CHECK_PASS)) {
            verdict = thr[i].failed;
            snprintf(detail, max, "%s", thr[i].detail);
        }
    }
    if ((regions != CHECK_PASS) && (verdict == CHECK_PASS)) {
        verdict = CHECK_FAIL;
        snprintf(detail, max, "puts a worker flush completed had not landed "
                 "(the target says where)");
    }
    if (oob_recv_u64(s) != CHECK_PASS) {
        verdict = CHECK_FAIL;
    }
    pthread_barrier_destroy(&flushed);
    pthread_barrier_destroy(&compared);
    if (!thr_abandoned(s)) {
        for (i = 0; i < n; ++i) {
            ucp_worker_destroy(thr[i].worker);
        }
    }
    for (j = 0; j < m; ++j) {
        free(peers[j].addr);
        free(peers[j].rkey_buf);
    }
    return verdict;
}


int check_threads(side_t *s, int mode, char *detail, size_t max)
{
    if ((opt.init_threads < 1) || (opt.init_threads > THR_MAX) ||
        (opt.target_threads < 1) || (opt.target_threads > THR_MAX)) {
        die("threads: -W %dx%d: 1 to %d threads a side", opt.init_threads,
            opt.target_threads, THR_MAX);
    }
    return s->is_target ? threads_target(s, detail, max) :
                          threads_initiator(s, detail, max);
}
