/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The two sides of a check: their UCP setup and teardown, the socket they
 * talk over (never the transport under test), waiting for requests, and the
 * deterministic data both sides generate from a seed.
 */

#define _GNU_SOURCE
#include "ucp_check.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


const ucp_request_param_t null_param = {0};

/* where a side's die() also puts its message (see die_into) */
static char *die_detail;
static size_t die_max;


void die_into(char *detail, size_t max)
{
    die_detail = detail;
    die_max    = max;
}


void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (die_detail != NULL) {
        va_start(ap, fmt);
        vsnprintf(die_detail, die_max, fmt, ap);
        va_end(ap);
    }
    exit(CHECK_DIED);
}


/* ---- out of band ------------------------------------------------------ */

void oob_send(side_t *s, const void *buf, size_t len)
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


void oob_recv(side_t *s, void *buf, size_t len)
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


void oob_send_u64(side_t *s, uint64_t v)
{
    oob_send(s, &v, sizeof(v));
}


uint64_t oob_recv_u64(side_t *s)
{
    uint64_t v;

    oob_recv(s, &v, sizeof(v));
    return v;
}


/* Wait for the other side's next message; progress the worker meanwhile
 * unless passive (then only the transport's own threads work) */
void oob_wait(side_t *s, int progress)
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


/* Whether the other side has said something (or is gone), without waiting */
int oob_ready(side_t *s)
{
    struct pollfd pfd = { .fd = s->fd, .events = POLLIN };

    return poll(&pfd, 1, 0) > 0;
}


/* ---- UCP helpers ------------------------------------------------------ */

double now_sec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}


/* When a check that waits for an event (an error, a dead peer) gives up:
 * ahead of the driver's deadline, so that the check reports what it saw
 * rather than being killed as a hang */
double check_deadline(void)
{
    return now_sec() + opt.timeout * 0.75;
}


static void ep_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    side_t *s = arg;

    s->ep_failed = 1;
    s->ep_status = status;
}


/* As wait_req, but at @a deadline (a now_sec() time; 0: none) returns
 * UCS_INPROGRESS with the request still outstanding, so that a transport
 * that never completes it cannot hang a check that waits for an error. The
 * caller may wait again, or give up on it: count it in s->abandoned (see
 * side_fini) and leave its buffer allocated. */
ucs_status_t wait_req_until(side_t *s, void *req, double deadline)
{
    unsigned spins = 0;
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    for (;;) {
        ucp_worker_progress(s->worker);
        status = ucp_request_check_status(req);
        if (status != UCS_INPROGRESS) {
            break;
        }
        /* the clock now and then: progress is the hot loop */
        if ((deadline > 0) && ((++spins % 1024) == 0) &&
            (now_sec() >= deadline)) {
            return UCS_INPROGRESS;
        }
    }
    ucp_request_free(req);
    return status;
}


ucs_status_t wait_req(side_t *s, void *req)
{
    return wait_req_until(s, req, 0);
}


/* Progress until the ep's error handler has run, or @a deadline: UCP fails
 * the requests first and calls the handler from a later progress */
int wait_ep_error(side_t *s, double deadline)
{
    while (!s->ep_failed && (now_sec() < deadline)) {
        ucp_worker_progress(s->worker);
    }
    return s->ep_failed;
}


/* The variable that names this side's devices and its value, NULL when
 * unset: the two sides of a check may sit on two devices joined by a wire */
static const char *side_devices(const side_t *s, const char **var)
{
    const char *value;

    *var  = s->is_target ? "SRQUD_CHECK_TARGET_DEVICES" :
                           "SRQUD_CHECK_INIT_DEVICES";
    value = getenv(*var);
    return ((value != NULL) && (value[0] != '\0')) ? value : NULL;
}


/* die() for what may come of this side's devices: a wrong name leaves UCX
 * no transport to the peer, which says nothing about the name */
static void __attribute__((noreturn))
side_die(const side_t *s, const char *what, ucs_status_t status)
{
    const char *var, *devices = side_devices(s, &var);

    if (devices != NULL) {
        die("%s: %s (%s=%s)", what, ucs_status_string(status), var, devices);
    }
    die("%s: %s", what, ucs_status_string(status));
}


/* The UCP context, on this side's devices if they are named */
static void side_context_create(side_t *s)
{
    ucp_params_t params  = {0};
    ucp_config_t *config = NULL;
    const char *var, *devices;
    ucs_status_t status;

    devices = side_devices(s, &var);
    if (devices != NULL) {
        status = ucp_config_read(NULL, NULL, &config);
        if (status != UCS_OK) {
            die("ucp_config_read: %s", ucs_status_string(status));
        }
        status = ucp_config_modify(config, "NET_DEVICES", devices);
        if (status != UCS_OK) {
            side_die(s, "ucp_config_modify", status);
        }
    }

    params.field_mask        = UCP_PARAM_FIELD_FEATURES |
                               UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features          = UCP_FEATURE_RMA | UCP_FEATURE_TAG |
                               UCP_FEATURE_AM | UCP_FEATURE_STREAM;
    /* workers of several threads on one context (threads) */
    params.mt_workers_shared = opt.mt_context;
    status = ucp_init(&params, config, &s->context);
    if (config != NULL) {
        ucp_config_release(config);
    }
    if (status != UCS_OK) {
        side_die(s, "ucp_init", status);
    }
}


static const char *sync_path(void)
{
    const char *path = getenv("SRQUD_CHECK_SYNC");

    return ((path != NULL) && (path[0] != '\0')) ? path : NULL;
}


/* Before a check's sides start: a file left from before would tell the
 * script too early, one the initiator cannot create would leave it waiting
 * (and the check to time out) */
void sync_reset(void)
{
    const char *path = sync_path();
    char *copy;

    if (path == NULL) {
        return;
    }
    if ((unlink(path) != 0) && (errno != ENOENT)) {
        die("SRQUD_CHECK_SYNC %s: %s", path, strerror(errno));
    }
    copy = strdup(path);
    if (access(dirname(copy), W_OK | X_OK) != 0) {
        die("SRQUD_CHECK_SYNC %s: %s", path, strerror(errno));
    }
    free(copy);
}


/* Tell a driving script that traffic is about to start (it may then take a
 * link down): the initiator creates the file that SRQUD_CHECK_SYNC names */
static void side_signal_sync(side_t *s)
{
    const char *path = sync_path();
    int fd;

    if (s->is_target || (path == NULL)) {
        return;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        die("SRQUD_CHECK_SYNC %s: %s", path, strerror(errno));
    }
    close(fd);
}


void side_init(side_t *s, int fd, int is_target, int err_peer)
{
    ucp_worker_params_t wparams   = {0};
    ucp_ep_params_t eparams       = {0};
    ucp_address_t *addr, *peer;
    size_t addr_len;
    uint64_t peer_len;
    ucs_status_t status;

    memset(s, 0, sizeof(*s));
    s->fd        = fd;
    s->is_target = is_target;
    s->err_peer  = err_peer;

    side_context_create(s);

    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(s->context, &wparams, &s->worker);
    if (status != UCS_OK) {
        side_die(s, "ucp_worker_create", status);
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
        side_die(s, "ucp_ep_create", status);
    }
    free(peer);

    /* both sides wired up before any check starts */
    status = wait_req(s, ucp_ep_flush_nbx(s->ep, &null_param));
    if (status != UCS_OK) {
        side_die(s, "initial ep flush", status);
    }
    oob_send_u64(s, 1);
    oob_wait(s, 1);
    oob_recv_u64(s);
    side_signal_sync(s);
}


void side_fini(side_t *s)
{
    ucp_request_param_t param = {0};

    if (s->abandoned) {
        /* UCX would have to abort requests it still runs, which some of
         * 1.13's protocols assert on, or wait for them: the process exit
         * releases everything */
        return;
    }
    if (s->ep != NULL) {
        /* a flushing close towards a peer that is gone, or cut off, would
         * wait for the transport's timeout, or for good */
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = (s->ep_failed || s->err_peer) ?
                             UCP_EP_CLOSE_FLAG_FORCE : 0;
        wait_req(s, ucp_ep_close_nbx(s->ep, &param));
    }
    ucp_worker_destroy(s->worker);
    ucp_cleanup(s->context);
}


/* A barrier over the socket that keeps both workers progressing, so that a
 * side's close or flush can complete */
void side_barrier(side_t *s)
{
    oob_send_u64(s, 2);
    oob_wait(s, 1);
    oob_recv_u64(s);
}


/*
 * The fence before the closes. A flushing close completes when this side's
 * packets are acknowledged, and the peer acknowledges only while its
 * endpoint exists: a side that closed and left at once left the other's
 * last packets, when an acknowledgement was lost on the wire, resending
 * into nothing until the transport's timeout (seen in the 30-minute soak).
 * So both sides first flush (each waits until its own packets are
 * acknowledged, while progressing), then meet; after that nothing is
 * outstanding in either direction and the closes have nothing to wait
 * for. MPI_Finalize fences the same way before it disconnects.
 */
void side_fence(side_t *s)
{
    ucp_request_param_t param = {0};

    /* a failed flush is the check's to report, not the fence's */
    (void)wait_req(s, ucp_worker_flush_nbx(s->worker, &param));
    side_barrier(s);
}


/* ---- deterministic data ----------------------------------------------- */

uint64_t rng_next(uint64_t *state)
{
    /* splitmix64: a seed gives the same stream on both sides */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}


void fill_random(void *buf, size_t len, uint64_t seed)
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
int compare(const uint8_t *got, const uint8_t *want, size_t len,
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
