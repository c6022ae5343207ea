/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Many-to-one at UCP level (issue 16): N sender processes stream tagged
 * messages of one size at one receiver, which keeps a window of receives
 * for any sender posted and checks every byte. The MPI form is
 * mpi_incast.c; this one has no MPI in the way (no pml, no progress
 * thread, no yield when idle), so what it measures is the transport's.
 *
 *   ucp_incast [-n SENDERS] [-s SIZE] [-i ITERS per sender] [-w WINDOW]
 *
 * UCX_TLS / UCX_NET_DEVICES choose the transport, as for any UCP program.
 * Prints "size MBs msgs_per_s" for the receiver's aggregate goodput from
 * the start signal (every sender connected by a first message, the
 * window posted, every sender told to go) to its last completed receive;
 * exit status 1 on a wrong byte, a failed operation or a process that did
 * not finish.
 *
 * The processes are forked before UCX is initialized; the receiver's
 * worker address goes to the senders over pipes, then the start signal
 * (messages sent before it would pile up in the receiver's unexpected
 * queue, and the rate would be that of draining it), and the pipes are the
 * barrier at the end (senders progress until the receiver has everything:
 * a rendezvous needs its sender).
 */

#include <ucp/api/ucp.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_SENDERS 32
#define SEQ_BITS    32
#define WARMUP_SEQ  0xffffffffu /* a sender's first message: connects */

typedef struct {
    int      senders;
    size_t   size;
    unsigned iters;
    unsigned window;
} incast_opts_t;

typedef struct {
    int      done;
    int      failed;
    uint64_t tag;      /* a receive's sender tag */
    size_t   length;   /* and length */
} incast_req_t;


static double now_sec(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return tv.tv_sec + tv.tv_usec * 1e-6;
}


/* The payload of message @a seq of sender @a id: every byte depends on
 * both, so a message delivered to the wrong buffer or torn is seen */
static uint8_t pattern(unsigned id, unsigned seq, size_t i)
{
    return (uint8_t)(id * 31 + seq * 7 + i * 13 + (i >> 8));
}


static void fill(uint8_t *p, size_t n, unsigned id, unsigned seq)
{
    size_t i;

    for (i = 0; i < n; ++i) {
        p[i] = pattern(id, seq, i);
    }
}


static int check(const uint8_t *p, size_t n, unsigned id, unsigned seq)
{
    size_t i;

    for (i = 0; i < n; ++i) {
        if (p[i] != pattern(id, seq, i)) {
            return 0;
        }
    }
    return 1;
}


static void req_init(void *request)
{
    incast_req_t *req = request;

    req->done   = 0;
    req->failed = 0;
}


static void send_cb(void *request, ucs_status_t status, void *user_data)
{
    incast_req_t *req = request;

    req->done   = 1;
    req->failed = (status != UCS_OK);
}


static void recv_cb(void *request, ucs_status_t status,
                    const ucp_tag_recv_info_t *info, void *user_data)
{
    incast_req_t *req = request;

    req->done   = 1;
    req->failed = (status != UCS_OK);
    req->tag    = info->sender_tag;
    req->length = info->length;
}


static int ucp_setup(ucp_context_h *ctx, ucp_worker_h *worker)
{
    ucp_worker_params_t wparams = {0};
    ucp_params_t params         = {0};
    ucs_status_t status;

    params.field_mask   = UCP_PARAM_FIELD_FEATURES |
                          UCP_PARAM_FIELD_REQUEST_SIZE |
                          UCP_PARAM_FIELD_REQUEST_INIT;
    params.features     = UCP_FEATURE_TAG;
    params.request_size = sizeof(incast_req_t);
    params.request_init = req_init;
    status = ucp_init(&params, NULL, ctx);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_init: %s\n", ucs_status_string(status));
        return -1;
    }
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(*ctx, &wparams, worker);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_worker_create: %s\n", ucs_status_string(status));
        ucp_cleanup(*ctx);
        return -1;
    }
    return 0;
}


/* All @a len bytes through a pipe, one way or the other; 0 when done */
static int pipe_io(int fd, void *buf, size_t len, int do_write)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = do_write ? write(fd, p, len) : read(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p   += n;
        len -= n;
    }
    return 0;
}


/* Wait for @a req while progressing; 0 when it completed well */
static int wait_req(ucp_worker_h worker, incast_req_t *req)
{
    int failed;

    while (!req->done) {
        ucp_worker_progress(worker);
    }
    failed = req->failed;
    req->done = 0;
    ucp_request_free(req);
    return failed ? -1 : 0;
}


static int sender(const incast_opts_t *o, unsigned id, int addr_fd,
                  int done_fd)
{
    ucp_request_param_t param = {0};
    incast_req_t **reqs;
    ucp_ep_params_t eparams = {0};
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_address_t *addr;
    size_t addr_len;
    uint8_t *bufs, go;
    ucp_ep_h ep;
    void *status_ptr;
    unsigned seq, slot;
    int rc = 1;

    if (pipe_io(addr_fd, &addr_len, sizeof(addr_len), 0) != 0 ||
        (addr = malloc(addr_len)) == NULL ||
        pipe_io(addr_fd, addr, addr_len, 0) != 0) {
        fprintf(stderr, "sender %u: no address from the receiver\n", id);
        return 1;
    }
    if (ucp_setup(&ctx, &worker) != 0) {
        return 1;
    }

    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = addr;
    if (ucp_ep_create(worker, &eparams, &ep) != UCS_OK) {
        fprintf(stderr, "sender %u: ucp_ep_create failed\n", id);
        goto out;
    }

    bufs = malloc(o->size * o->window);
    reqs = calloc(o->window, sizeof(*reqs));
    if (bufs == NULL || reqs == NULL) {
        goto out;
    }

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    param.cb.send      = send_cb;

    /* connected before the clock starts: the first message's wireup is
     * not the stream's */
    status_ptr = ucp_tag_send_nbx(ep, bufs, (o->size < 8) ? o->size : 8,
                                  ((uint64_t)id << SEQ_BITS) | WARMUP_SEQ,
                                  &param);
    if (UCS_PTR_IS_ERR(status_ptr) ||
        ((status_ptr != NULL) && (wait_req(worker, status_ptr) != 0))) {
        fprintf(stderr, "sender %u: the first message failed\n", id);
        goto out;
    }
    if (pipe_io(addr_fd, &go, 1, 0) != 0) {
        fprintf(stderr, "sender %u: no start signal\n", id);
        goto out;
    }
    for (seq = 0; seq < o->iters; ++seq) {
        slot = seq % o->window;
        if (reqs[slot] != NULL) {
            if (wait_req(worker, reqs[slot]) != 0) {
                fprintf(stderr, "sender %u: send %u failed\n", id,
                        seq - o->window);
                goto out;
            }
            reqs[slot] = NULL;
        }
        fill(bufs + slot * o->size, o->size, id, seq);
        status_ptr = ucp_tag_send_nbx(ep, bufs + slot * o->size, o->size,
                                      ((uint64_t)id << SEQ_BITS) | seq,
                                      &param);
        if (UCS_PTR_IS_ERR(status_ptr)) {
            fprintf(stderr, "sender %u: send %u: %s\n", id, seq,
                    ucs_status_string(UCS_PTR_STATUS(status_ptr)));
            goto out;
        }
        reqs[slot] = status_ptr;
    }
    for (slot = 0; slot < o->window; ++slot) {
        if ((reqs[slot] != NULL) && (wait_req(worker, reqs[slot]) != 0)) {
            fprintf(stderr, "sender %u: a send failed\n", id);
            goto out;
        }
    }

    /* the receiver may still fetch (a rendezvous) or need acknowledging:
     * progress until it says it has everything */
    fcntl(done_fd, F_SETFL, O_NONBLOCK);
    for (;;) {
        ssize_t n = read(done_fd, &go, 1);
        if (n == 1) {
            break;
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            fprintf(stderr, "sender %u: the receiver is gone\n", id);
            goto out;
        }
        ucp_worker_progress(worker);
    }
    rc = (go == 1) ? 0 : 1;

out:
    /* the receiver has all it wants: close without waiting on it */
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    return rc;
}


static int receiver(const incast_opts_t *o, int addr_fds[], int done_fds[])
{
    ucp_request_param_t param = {0};
    unsigned long total = (unsigned long)o->senders * o->iters, got = 0;
    unsigned long count[MAX_SENDERS] = {0};
    incast_req_t **reqs;
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_address_t *addr;
    size_t addr_len;
    uint8_t *bufs, verdict, go = 1;
    double t_first = 0, t_last = 0;
    unsigned slot, id, seq, bad = 0, posted = 0;
    int i, rc = 1;

    if (ucp_setup(&ctx, &worker) != 0) {
        return 1;
    }
    if (ucp_worker_get_address(worker, &addr, &addr_len) != UCS_OK) {
        goto out;
    }
    for (i = 0; i < o->senders; ++i) {
        pipe_io(addr_fds[i], &addr_len, sizeof(addr_len), 1);
        pipe_io(addr_fds[i], addr, addr_len, 1);
    }
    ucp_worker_release_address(worker, addr);

    bufs = malloc(o->size * o->window);
    reqs = calloc(o->window, sizeof(*reqs));
    if (bufs == NULL || reqs == NULL) {
        goto out;
    }

    /* always a request, so that the callback has the tag */
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv      = recv_cb;

    /* every sender's first message (any sender, that sequence number) */
    for (i = 0; i < o->senders; ++i) {
        reqs[0] = ucp_tag_recv_nbx(worker, bufs, o->size, WARMUP_SEQ,
                                   0xffffffffull, &param);
        if (UCS_PTR_IS_ERR(reqs[0]) || (wait_req(worker, reqs[0]) != 0)) {
            fprintf(stderr, "receiver: no first message\n");
            goto out;
        }
        reqs[0] = NULL;
    }

    /* a window of receives from anyone; each completed one is checked and
     * posted again while more are to come */
    for (slot = 0; (slot < o->window) && (posted < total); ++slot, ++posted) {
        reqs[slot] = ucp_tag_recv_nbx(worker, bufs + slot * o->size, o->size,
                                      0, 0, &param);
        if (UCS_PTR_IS_ERR(reqs[slot])) {
            goto out;
        }
    }
    t_first = now_sec();
    for (i = 0; i < o->senders; ++i) {
        pipe_io(addr_fds[i], &go, 1, 1);
    }

    while (got < total) {
        ucp_worker_progress(worker);
        for (slot = 0; slot < o->window; ++slot) {
            if ((reqs[slot] == NULL) || !reqs[slot]->done) {
                continue;
            }
            if (reqs[slot]->failed) {
                fprintf(stderr, "receiver: a receive failed\n");
                goto out;
            }
            id  = (unsigned)(reqs[slot]->tag >> SEQ_BITS);
            seq = (unsigned)reqs[slot]->tag;
            if ((id >= (unsigned)o->senders) ||
                (reqs[slot]->length != o->size) ||
                !check(bufs + slot * o->size, o->size, id, seq)) {
                ++bad;
            } else {
                ++count[id];
            }
            t_last = now_sec();
            ++got;
            reqs[slot]->done = 0;
            ucp_request_free(reqs[slot]);
            reqs[slot] = NULL;
            if (posted < total) {
                reqs[slot] = ucp_tag_recv_nbx(worker, bufs + slot * o->size,
                                              o->size, 0, 0, &param);
                if (UCS_PTR_IS_ERR(reqs[slot])) {
                    goto out;
                }
                ++posted;
            }
        }
    }

    /* every sender's messages, each once (a window's receives complete
     * in any order, so the check is of the counts, not of the order) */
    for (i = 0; i < o->senders; ++i) {
        if (count[i] != o->iters) {
            fprintf(stderr, "receiver: %lu good messages of sender %d, "
                    "%u sent\n", count[i], i, o->iters);
            ++bad;
        }
    }

    if (got > 0 && t_last > t_first) {
        printf("%zu %.2f %.0f\n", o->size,
               got * o->size / (t_last - t_first) / 1e6,
               got / (t_last - t_first));
    }
    if (bad > 0) {
        fprintf(stderr, "receiver: %u of %lu messages wrong\n", bad, got);
    }
    rc = (bad > 0);

out:
    /* 1: all well; the senders exit 1 on anything else */
    verdict = (rc == 0) ? 1 : 2;
    for (i = 0; i < o->senders; ++i) {
        pipe_io(done_fds[i], &verdict, 1, 1);
    }
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    return rc;
}


int main(int argc, char **argv)
{
    incast_opts_t o = {3, 65536, 200, 8};
    int addr_pipe[MAX_SENDERS][2], done_pipe[MAX_SENDERS][2];
    int addr_fds[MAX_SENDERS], done_fds[MAX_SENDERS];
    pid_t pids[MAX_SENDERS];
    int c, i, rc, status;

    while ((c = getopt(argc, argv, "n:s:i:w:")) != -1) {
        switch (c) {
        case 'n': o.senders = atoi(optarg); break;
        case 's': o.size    = strtoul(optarg, NULL, 0); break;
        case 'i': o.iters   = strtoul(optarg, NULL, 0); break;
        case 'w': o.window  = strtoul(optarg, NULL, 0); break;
        default:
            fprintf(stderr, "usage: %s [-n SENDERS] [-s SIZE] [-i ITERS] "
                    "[-w WINDOW]\n", argv[0]);
            return 2;
        }
    }
    if ((o.senders < 1) || (o.senders > MAX_SENDERS) || (o.size == 0) ||
        (o.iters == 0) || (o.window == 0)) {
        fprintf(stderr, "bad options\n");
        return 2;
    }

    for (i = 0; i < o.senders; ++i) {
        if (pipe(addr_pipe[i]) != 0 || pipe(done_pipe[i]) != 0) {
            perror("pipe");
            return 1;
        }
    }
    fflush(stdout);
    for (i = 0; i < o.senders; ++i) {
        pids[i] = fork();
        if (pids[i] == 0) {
            rc = sender(&o, i, addr_pipe[i][0], done_pipe[i][0]);
            _exit(rc);
        }
        close(addr_pipe[i][0]);
        close(done_pipe[i][0]);
        addr_fds[i] = addr_pipe[i][1];
        done_fds[i] = done_pipe[i][1];
    }

    rc = receiver(&o, addr_fds, done_fds);
    for (i = 0; i < o.senders; ++i) {
        close(done_fds[i]);
        if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            fprintf(stderr, "sender %d did not finish well\n", i);
            rc = 1;
        }
    }
    return rc;
}
