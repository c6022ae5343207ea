/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The two-sided checks: tag, AM and stream messages in order and intact,
 * the bound on what one progress call delivers, and messages across a link
 * that goes down (link_down). Messages are checksummed by content: message
 * i is filled from a seed of i and starts with i.
 */

#define _GNU_SOURCE
#include "ucp_check.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define TAG              0x5eedull
#define AM_ID            7
#define MSG_COUNT        200  /* tag/am/stream messages */
#define MSG_SIZE_MAX     (2 * 1024 * 1024)     /* msg_size() stays below */
#define BOUND_COUNT      1000 /* progress_bound messages */
#define LINK_WINDOW      4    /* link_down sends in flight */
#define LINK_CANCEL_WAIT 10.0 /* s; the driver gives the target 30 */


/* ---- messages --------------------------------------------------------- */

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


int check_tag(side_t *s, int mode, char *detail, size_t max)
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


int check_am(side_t *s, int mode, char *detail, size_t max)
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
int check_stream(side_t *s, int mode, char *detail, size_t max)
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


int check_progress_bound(side_t *s, int mode, char *detail, size_t max)
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


/* ---- link_down -------------------------------------------------------- */

/* The initiator's wait for the send in @a slot of its window; the buffer
 * stays while the send is pending, as UCX may still read it */
static ucs_status_t link_send_wait(side_t *s, void **reqs, void **bufs,
                                   size_t slot, double deadline)
{
    ucs_status_t status = wait_req_until(s, reqs[slot], deadline);

    if (status != UCS_INPROGRESS) {
        free(bufs[slot]);
        bufs[slot] = NULL;
    }
    return status;
}


/* Sends, LINK_WINDOW in flight, until the ep fails or the deadline; then the
 * rest of the window, which UCP completes with the ep's error, and "done"
 * to the target */
static int link_down_initiator(side_t *s, int target_gone, char *detail,
                               size_t max)
{
    void *reqs[LINK_WINDOW] = {NULL};
    void *bufs[LINK_WINDOW] = {NULL};
    double deadline         = check_deadline();
    /* for the sends posted in time: a slow one must not fail the check */
    double drain            = deadline + opt.timeout / 8.0;
    ucs_status_t status     = UCS_OK;
    uint64_t seq            = 0;
    ucs_status_t ret;
    size_t slot, i, len;

    while (!s->ep_failed && (now_sec() < deadline)) {
        slot = seq % LINK_WINDOW;
        if (bufs[slot] != NULL) {
            /* the window is full: its oldest send first; still pending at
             * the deadline, it is waited for with the rest below */
            status = link_send_wait(s, reqs, bufs, slot, deadline);
            if (status != UCS_OK) {
                status = (status == UCS_INPROGRESS) ? UCS_OK : status;
                break;
            }
        }
        len        = msg_size(seq);
        bufs[slot] = malloc(len);
        msg_fill(bufs[slot], len, seq);
        reqs[slot] = ucp_tag_send_nbx(s->ep, bufs[slot], len, TAG,
                                      &null_param);
        ++seq;
    }
    for (i = 0; i < LINK_WINDOW; ++i) {
        slot = (seq + i) % LINK_WINDOW;                /* oldest first */
        if (bufs[slot] != NULL) {
            ret    = link_send_wait(s, reqs, bufs, slot, drain);
            status = (status == UCS_OK) ? ret : status;
            s->abandoned += (ret == UCS_INPROGRESS);
        }
    }
    if (UCS_STATUS_IS_ERR(status)) {
        wait_ep_error(s, drain);
    }
    if (!target_gone) {
        oob_send_u64(s, seq);
    }
    if (!s->ep_failed) {
        snprintf(detail, max, "no endpoint error within %d s (%" PRIu64
                 " messages posted; sends: %s)", opt.timeout * 3 / 4, seq,
                 ucs_status_string(status));
        return CHECK_FAIL;
    }
    snprintf(detail, max, "%" PRIu64 " messages posted; sends: %s, ep "
             "error: %s", seq, ucs_status_string(status),
             ucs_status_string(s->ep_status));
    return CHECK_PASS;
}


/* A receive of the target: complete, failed, or once the initiator says it
 * is done (the message may never come) cancelled. A matched rendezvous is
 * not cancelled but ends when its ep fails; UCS_INPROGRESS if that has not
 * happened within LINK_CANCEL_WAIT, the request (and its buffer) abandoned
 * (see side_fini). */
static ucs_status_t link_recv_wait(side_t *s, void *req,
                                   ucp_tag_recv_info_t *info)
{
    double deadline = 0;                     /* set by the cancel */
    unsigned spins  = 0;
    ucs_status_t status;

    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    for (;;) {
        ucp_worker_progress(s->worker);
        status = ucp_tag_recv_request_test(req, info);
        if (status != UCS_INPROGRESS) {
            break;
        }
        if ((++spins % 256) != 0) {
            continue;   /* the socket and the clock now and then only */
        } else if (deadline == 0) {
            if (oob_ready(s)) {
                ucp_request_cancel(s->worker, req);
                deadline = now_sec() + LINK_CANCEL_WAIT;
            }
        } else if (now_sec() >= deadline) {
            ++s->abandoned;
            return UCS_INPROGRESS;
        }
    }
    ucp_request_free(req);
    return status;
}


/* One receive at a time into the largest buffer, so that a message other
 * than the next one shows in its length or its first bytes */
static int link_down_target(side_t *s, char *detail, size_t max)
{
    ucp_request_param_t param = {0};
    void *buf                 = malloc(MSG_SIZE_MAX);
    int verdict               = CHECK_PASS;
    uint64_t seq              = 0;
    ucp_tag_recv_info_t info;
    ucs_status_t status;
    uint64_t posted;
    void *req;

    /* a request even when matched at once: UCX 1.13 leaves recv_info
     * unset then, the request has the length */
    param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    for (;; ++seq) {
        req    = ucp_tag_recv_nbx(s->worker, buf, MSG_SIZE_MAX, TAG,
                                  (ucp_tag_t)-1, &param);
        status = link_recv_wait(s, req, &info);
        if (status != UCS_OK) {
            break;
        }
        if (info.length != msg_size(seq)) {
            snprintf(detail, max, "message %" PRIu64 ": %zu bytes, not %zu "
                     "(another message: lost or out of order)", seq,
                     info.length, msg_size(seq));
            verdict = CHECK_DATA_ERROR;
            break;
        } else if (msg_check(buf, info.length, seq, detail, max,
                             "message")) {
            verdict = CHECK_DATA_ERROR;
            break;
        }
    }
    oob_wait(s, 1);                          /* "done", if not come yet */
    posted = oob_recv_u64(s);
    if (verdict == CHECK_PASS) {
        snprintf(detail, max, "%" PRIu64 " of %" PRIu64 " messages received "
                 "and verified, then %s", seq, posted,
                 ucs_status_string(status));
    }
    if (status != UCS_INPROGRESS) {
        free(buf);
    }
    return verdict;
}


/* link_down: checksummed tag messages stream to the target until the
 * initiator's ep reports an error, which a script causes by taking the link
 * between the two devices down for longer than the transport's timeout.
 * Messages lost with the link are no failure; a message the target got
 * damaged, out of order or twice is, and so is no error by the deadline. */
int check_link_down(side_t *s, int mode, char *detail, size_t max)
{
    /* LINK_TARGET_GONE: nobody to tell "done" */
    return s->is_target ? link_down_target(s, detail, max) :
                          link_down_initiator(s, mode == LINK_TARGET_GONE,
                                              detail, max);
}
