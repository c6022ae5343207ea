/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Message rate and resources of THREADS threads, each with a UCT worker
 * and interface of its own (as UCP gives each thread of an MPI+threads
 * code), after Zambre et al. (ICPADS'18):
 *
 *   threads_rate -t TL -d DEV -T THREADS -n MSGS [-s PAYLOAD] [-c]
 *
 * Two processes: the receiver (this one, measured) and the sender (a
 * child), THREADS threads each; sender thread i streams MSGS am_short
 * messages (8-byte header + PAYLOAD bytes) to receiver thread i, after a
 * flushed warm-up of 200 (connection made, pools warm). The rate is
 * THREADS * MSGS over the time from the start signal to the last receiver
 * thread's last message. The workers of a process share one md
 * (one device context and PD), unless -c: a device context (md) per
 * thread, the paper's "MPI everywhere". What srqud shares beyond is
 * UCX_SRQUD_SHARE (pd, td, srq).
 *
 * Prints one line, after setup, of the receiver's resources, then the rate:
 *   tl threads msgs payload rate_mmps rss_kb pin_kb qmap_kb qps cqs srqs
 *   srq_users srq_buffers srq_posted rss_other_kb
 * (rss_other_kb: the Rss of every mapping but the device queues; see
 * bench_mem_t)
 * qps/cqs/srqs are the receiver's verbs objects as the kernel lists them
 * (rdma resource show, -1 if it cannot tell).
 */

#include "bench_uct.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define AM_ID     7
#define ADDR_MAX  64
#define MAX_T     64

typedef struct {
    volatile int  rx_ready, tx_ready, rx_ep_pub, tx_ep_pub;
    uint8_t       rx_dev[ADDR_MAX], rx_iface[ADDR_MAX], rx_ep[ADDR_MAX];
    uint8_t       tx_dev[ADDR_MAX], tx_ep[ADDR_MAX];
    volatile double t_end;
} lane_shm_t;

typedef struct {
    volatile int  go, done, flushed, warm;
    volatile double t_start;
    lane_shm_t    lanes[MAX_T];
} shm_t;

typedef struct {
    bench_ctx_t   ctx;
    bench_iface_t s;
    uct_ep_h      ep;
    unsigned      index;
    volatile unsigned long received;
} lane_t;

/* Messages each sender sends and flushes before the timed part: the
 * connection is made (srqud's CREQ/CREP, passive endpoint), pools warm */
#define WARMUP    200

static shm_t *g_shm;
static unsigned long g_msgs;
static size_t g_payload;


static ucs_status_t count_handler(void *arg, void *data, size_t length,
                                  unsigned flags)
{
    ++((lane_t*)arg)->received;
    return UCS_OK;
}


static void lanes_open(const char *tl, const char *dev, unsigned nthreads,
                       int ctx_per_thread, bench_ctx_t *owner, lane_t *lanes)
{
    unsigned i;

    bench_ctx_open(owner, tl, dev);
    for (i = 0; i < nthreads; ++i) {
        if (ctx_per_thread) {
            bench_ctx_open(&lanes[i].ctx, tl, dev);
        } else {
            bench_ctx_worker(&lanes[i].ctx, owner);
        }
        bench_iface_open(&lanes[i].ctx, &lanes[i].s);
        lanes[i].index    = i;
        lanes[i].received = 0;
        lanes[i].ep       = NULL;
        bench_check(uct_iface_set_am_handler(lanes[i].s.iface, AM_ID,
                                             count_handler, &lanes[i], 0),
                    "am handler");
    }
}


static uct_ep_h ep_create(lane_t *l, const uint8_t *dev, const uint8_t *iface)
{
    uct_ep_params_t params;
    uct_ep_h ep;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    params.iface      = l->s.iface;
    if (iface != NULL) {
        params.field_mask |= UCT_EP_PARAM_FIELD_DEV_ADDR |
                             UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.dev_addr    = (const uct_device_addr_t*)dev;
        params.iface_addr  = (const uct_iface_addr_t*)iface;
    }
    bench_check(uct_ep_create(&params, &ep), "ep create");
    return ep;
}


/* CONNECT_TO_EP (rc): a lane's ep to the peer's, once it is published */
static void ep_connect(lane_t *l, const uint8_t *dev, const uint8_t *ep,
                       volatile int *published)
{
    while (!*published) {
        usleep(1000);
    }
    bench_check(uct_ep_connect_to_ep(l->ep, (const uct_device_addr_t*)dev,
                                     (const uct_ep_addr_t*)ep),
                "connect_to_ep");
}


static int to_ep(const lane_t *l)
{
    return !(l->s.attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE);
}


/* @a count messages, then a flush: all acknowledged */
static void send_flush(lane_t *l, unsigned long count)
{
    uint64_t payload[8] = {0};
    unsigned long sent = 0;
    ucs_status_t status;

    while (sent < count) {
        status = uct_ep_am_short(l->ep, AM_ID, sent, payload, g_payload);
        if (status == UCS_OK) {
            ++sent;
        } else if (status == UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(l->ctx.worker);
        } else {
            bench_check(status, "am_short");
        }
    }
    while (uct_ep_flush(l->ep, 0, NULL) != UCS_OK) {
        uct_worker_progress(l->ctx.worker);
    }
}


static void *sender_thread(void *arg)
{
    lane_t *l = arg;

    send_flush(l, WARMUP);
    __sync_fetch_and_add(&g_shm->warm, 1);
    while (!g_shm->go) {
        uct_worker_progress(l->ctx.worker);
    }
    send_flush(l, g_msgs);
    __sync_fetch_and_add(&g_shm->flushed, 1);
    while (!g_shm->done) {
        uct_worker_progress(l->ctx.worker);
    }
    return NULL;
}


static void *receiver_thread(void *arg)
{
    lane_t *l = arg;

    while (l->received < WARMUP + g_msgs) {
        uct_worker_progress(l->ctx.worker);
    }
    g_shm->lanes[l->index].t_end = bench_now_ms();
    /* acknowledgements the senders wait for */
    while (!g_shm->done) {
        uct_worker_progress(l->ctx.worker);
    }
    return NULL;
}


static void threads_start(pthread_t *th, lane_t *lanes, unsigned n,
                          void *(*fn)(void*))
{
    unsigned i;

    for (i = 0; i < n; ++i) {
        if (pthread_create(&th[i], NULL, fn, &lanes[i]) != 0) {
            fprintf(stderr, "threads_rate: pthread_create failed\n");
            exit(1);
        }
    }
}


static void threads_join(pthread_t *th, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; ++i) {
        pthread_join(th[i], NULL);
    }
}


static void sender_main(const char *tl, const char *dev, unsigned n, int cpt)
{
    lane_t *lanes = calloc(n, sizeof(*lanes));
    pthread_t th[MAX_T];
    bench_ctx_t owner;
    unsigned i;

    lanes_open(tl, dev, n, cpt, &owner, lanes);
    for (i = 0; i < n; ++i) {
        lane_shm_t *ls = &g_shm->lanes[i];
        while (!ls->rx_ready) {
            usleep(1000);
        }
        memcpy(ls->tx_dev, lanes[i].s.dev_addr, ADDR_MAX);
        if (to_ep(&lanes[i])) {
            lanes[i].ep = ep_create(&lanes[i], NULL, NULL);
            bench_check(uct_ep_get_address(lanes[i].ep,
                                           (uct_ep_addr_t*)ls->tx_ep),
                        "ep address");
            __sync_synchronize();
            ls->tx_ep_pub = 1;
            ep_connect(&lanes[i], ls->rx_dev, ls->rx_ep, &ls->rx_ep_pub);
        } else {
            lanes[i].ep = ep_create(&lanes[i], ls->rx_dev, ls->rx_iface);
        }
        __sync_synchronize();
        ls->tx_ready = 1;
    }
    threads_start(th, lanes, n, sender_thread);
    threads_join(th, n);
    _exit(0);
}


static long rdma_count(const char *what)
{
    char cmd[128];
    long count = -1;
    FILE *f;

    snprintf(cmd, sizeof(cmd),
             "rdma resource show %s 2>/dev/null | grep -c ' pid %d '", what,
             (int)getpid());
    f = popen(cmd, "r");
    if ((f == NULL) || (fscanf(f, "%ld", &count) != 1)) {
        count = -1;
    }
    if (f != NULL) {
        pclose(f);
    }
    return count;
}


int main(int argc, char **argv)
{
    const char *tl = "srqud", *dev = "rxe0:1";
    unsigned n = 1, i, users = 0;
    unsigned long buffers = 0, posted = 0;
    long qps, cqs, srqs;
    pthread_t th[MAX_T];
    int c, cpt = 0, status;
    double t_last = 0;
    bench_ctx_t owner;
    bench_mem_t mem;
    lane_t *lanes;
    pid_t pid;

    g_msgs    = 100000;
    g_payload = 0;
    while ((c = getopt(argc, argv, "t:d:T:n:s:c")) != -1) {
        switch (c) {
        case 't': tl = optarg; break;
        case 'd': dev = optarg; break;
        case 'T': n = atoi(optarg); break;
        case 'n': g_msgs = strtoul(optarg, NULL, 0); break;
        case 's': g_payload = strtoul(optarg, NULL, 0); break;
        case 'c': cpt = 1; break;
        default:
            fprintf(stderr, "usage: %s -t TL -d DEV -T THREADS -n MSGS "
                    "[-s PAYLOAD] [-c]\n", argv[0]);
            return 2;
        }
    }
    if ((n < 1) || (n > MAX_T) || (g_payload > sizeof(uint64_t[8]))) {
        fprintf(stderr, "threads_rate: 1 <= THREADS <= %d, PAYLOAD <= 64\n",
                MAX_T);
        return 2;
    }

    g_shm = mmap(NULL, sizeof(*g_shm), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    memset(g_shm, 0, sizeof(*g_shm));

    pid = fork();
    if (pid == 0) {
        sender_main(tl, dev, n, cpt);
    }

    lanes = calloc(n, sizeof(*lanes));
    lanes_open(tl, dev, n, cpt, &owner, lanes);
    for (i = 0; i < n; ++i) {
        lane_shm_t *ls = &g_shm->lanes[i];
        memcpy(ls->rx_dev, lanes[i].s.dev_addr, ADDR_MAX);
        memcpy(ls->rx_iface, lanes[i].s.iface_addr, ADDR_MAX);
        if (to_ep(&lanes[i])) {
            lanes[i].ep = ep_create(&lanes[i], NULL, NULL);
            bench_check(uct_ep_get_address(lanes[i].ep,
                                           (uct_ep_addr_t*)ls->rx_ep),
                        "ep address");
        }
        __sync_synchronize();
        ls->rx_ready = 1;
        ls->rx_ep_pub = 1;
        if (to_ep(&lanes[i])) {
            ep_connect(&lanes[i], ls->tx_dev, ls->tx_ep, &ls->tx_ep_pub);
        }
        while (!ls->tx_ready) {
            uct_worker_progress(lanes[i].ctx.worker);
        }
    }

    /* the receiver's resources, all set up */
    mem = bench_mem_read();
    for (i = 0; i < n; ++i) {
        uct_srqud_iface_stats_t st = bench_srqud_stats(&lanes[i].ctx,
                                                       lanes[i].s.iface);
        if (st.srq_users > 0) {
            /* a shared pool counted once: 1/users of it per interface */
            buffers += st.srq_buffers / st.srq_users;
            posted  += st.srq_posted / st.srq_users;
            users    = st.srq_users;
        }
    }
    qps  = rdma_count("qp");
    cqs  = rdma_count("cq");
    srqs = rdma_count("srq");

    /* the receivers run from here; the clock starts once every sender
     * has its warm-up acknowledged */
    threads_start(th, lanes, n, receiver_thread);
    while ((unsigned)g_shm->warm < n) {
        usleep(100);
    }
    g_shm->t_start = bench_now_ms();
    __sync_synchronize();
    g_shm->go = 1;
    for (i = 0; i < n; ++i) {
        while (g_shm->lanes[i].t_end == 0) {
            usleep(100);
        }
        if (g_shm->lanes[i].t_end > t_last) {
            t_last = g_shm->lanes[i].t_end;
        }
    }
    while ((unsigned)g_shm->flushed < n) {
        usleep(100);
    }
    g_shm->done = 1;
    threads_join(th, n);
    waitpid(pid, &status, 0);

    printf("%s %u %lu %zu %.4f %lu %lu %lu %ld %ld %ld %u %lu %lu %lu\n", tl,
           n, g_msgs, g_payload,
           (double)n * g_msgs / ((t_last - g_shm->t_start) * 1e3),
           mem.rss_kb, mem.pin_kb, mem.qmap_kb, qps, cqs, srqs, users,
           buffers, posted, mem.rss_other_kb);
    return (WIFEXITED(status) && (WEXITSTATUS(status) == 0)) ? 0 : 1;
}
