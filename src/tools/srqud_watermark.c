/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * srqud_watermark: the experiment of Fig. 6 of Sur, Chai, Jin, Panda
 * (IPDPS'06) on a verbs device, and the SRQ limit it recommends.
 *
 * 1. Round trip through the SRQ: a UD send into a QP fed by an SRQ, timed
 *    until the receive completion is polled (the HCA's part of a message).
 * 2. The same send when the SRQ is at its limit: timed until the thread
 *    blocked on the device's async fd wakes up with
 *    IBV_EVENT_SRQ_LIMIT_REACHED (the HCA raising the event plus the
 *    kernel/thread wakeup: what srqud's LIMIT thread pays before it can
 *    refill).
 * t_wakeup = (2) - (1); Eq. 5 then gives the limit:
 *    watermark = BW * 10^3 / MinPacketSize * t_wakeup    (BW MB/s, t ms)
 *
 *   srqud_watermark [-d DEV[:PORT]] [-g GID_INDEX] [-n ITERS] [-s SRQ_SIZE]
 *
 * Prints a table; the last line is "recommended UCX_SRQUD_SRQ_LIMIT=N".
 */

#include <uct/ib/srqud/srqud_gid.h>
#include <uct/ib/srqud/srqud_verbs.h>
#include <uct/ib/srqud/srqud_watermark.h>

#include <infiniband/verbs.h>

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define QKEY       0x11111111
#define MSG_LEN    64
#define GRH_LEN    40
#define BUF_LEN    (GRH_LEN + MSG_LEN)
#define MAX_ITERS  100000

typedef struct {
    struct ibv_context *ctx;
    struct ibv_pd      *pd;
    struct ibv_cq      *send_cq, *recv_cq;
    struct ibv_srq     *srq;
    struct ibv_qp      *tx_qp, *rx_qp;
    struct ibv_ah      *ah;
    struct ibv_mr      *mr;
    uint8_t            *buf;       /* [0]: send buffer, then receive slots */
    unsigned           slots;
    unsigned           next_slot;
    uint8_t            port;
    int                gid_index;
    /* the event thread */
    pthread_t          thread;
    volatile int       event_seen;
    volatile int       stop;
    struct timespec    event_time;
} wm_t;


static double now_sec(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}


static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}


static double median(double *v, int n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return v[n / 2];
}


static void die(const char *what)
{
    fprintf(stderr, "srqud_watermark: %s: %s\n", what, strerror(errno));
    exit(1);
}


/* The paper's LIMIT thread, reduced to taking the time of each event */
static void *event_thread(void *arg)
{
    wm_t *wm = arg;
    struct ibv_async_event ev;

    while (!wm->stop) {
        if (ibv_get_async_event(wm->ctx, &ev) != 0) {
            break;
        }
        if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
            clock_gettime(CLOCK_MONOTONIC, &wm->event_time);
            __sync_synchronize();
            wm->event_seen = 1;
        }
        ibv_ack_async_event(&ev);
    }
    return NULL;
}


static void post_recv(wm_t *wm, unsigned count)
{
    struct ibv_recv_wr wr, *bad;
    struct ibv_sge sge;

    while (count-- > 0) {
        unsigned slot = 1 + (wm->next_slot++ % wm->slots);
        sge.addr   = (uintptr_t)(wm->buf + (size_t)slot * BUF_LEN);
        sge.length = BUF_LEN;
        sge.lkey   = wm->mr->lkey;
        wr.wr_id   = slot;
        wr.next    = NULL;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        if (ibv_post_srq_recv(wm->srq, &wr, &bad) != 0) {
            die("ibv_post_srq_recv");
        }
    }
}


static void send_one(wm_t *wm)
{
    struct ibv_send_wr wr, *bad;
    struct ibv_sge sge;
    struct ibv_wc wc;
    int n;

    sge.addr              = (uintptr_t)wm->buf;
    sge.length            = MSG_LEN;
    sge.lkey              = wm->mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.sg_list            = &sge;
    wr.num_sge            = 1;
    wr.opcode             = IBV_WR_SEND;
    wr.send_flags         = IBV_SEND_SIGNALED;
    wr.wr.ud.ah           = wm->ah;
    wr.wr.ud.remote_qpn   = wm->rx_qp->qp_num;
    wr.wr.ud.remote_qkey  = QKEY;
    if (ibv_post_send(wm->tx_qp, &wr, &bad) != 0) {
        die("ibv_post_send");
    }
    do {
        n = ibv_poll_cq(wm->send_cq, 1, &wc);
    } while (n == 0);
    if ((n < 0) || (wc.status != IBV_WC_SUCCESS)) {
        fprintf(stderr, "srqud_watermark: send failed: %s\n",
                (n < 0) ? "poll" : ibv_wc_status_str(wc.status));
        exit(1);
    }
}


static void wait_recv(wm_t *wm)
{
    struct ibv_wc wc;
    double deadline = now_sec() + 5;
    int n;

    do {
        n = ibv_poll_cq(wm->recv_cq, 1, &wc);
        if ((n == 0) && (now_sec() > deadline)) {
            fprintf(stderr, "srqud_watermark: no receive completion in 5 s "
                    "(wrong GID? try -g)\n");
            exit(1);
        }
    } while (n == 0);
    if ((n < 0) || (wc.status != IBV_WC_SUCCESS)) {
        fprintf(stderr, "srqud_watermark: receive failed\n");
        exit(1);
    }
}


static void arm(wm_t *wm, unsigned limit)
{
    struct ibv_srq_attr attr = {.srq_limit = limit};

    if (ibv_modify_srq(wm->srq, &attr, IBV_SRQ_LIMIT) != 0) {
        die("ibv_modify_srq(IBV_SRQ_LIMIT)");
    }
}


static struct ibv_qp *create_ud_qp(wm_t *wm, struct ibv_cq *scq,
                                   struct ibv_cq *rcq, struct ibv_srq *srq)
{
    struct ibv_qp_init_attr init;
    uct_srqud_verbs_qp_step_t step;
    struct ibv_qp *qp;

    memset(&init, 0, sizeof(init));
    init.send_cq          = scq;
    init.recv_cq          = rcq;
    init.srq              = srq;
    init.cap.max_send_wr  = 16;
    init.cap.max_recv_wr  = srq ? 0 : 16;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    errno = uct_srqud_verbs_ud_qp_create(wm->pd, &init, wm->port, QKEY, &qp,
                                         &step);
    if (errno != 0) {
        die(uct_srqud_verbs_qp_step_str(step));
    }
    return qp;
}


static int choose_gid(wm_t *wm, const struct ibv_port_attr *pattr)
{
    return uct_srqud_verbs_gid_auto(wm->ctx, wm->port, pattr);
}


static void usage(void)
{
    fprintf(stderr,
            "usage: srqud_watermark [-d DEV[:PORT]] [-g GID_INDEX] [-n ITERS] "
            "[-s SRQ_SIZE]\n"
            "  Measures the LIMIT thread's wakeup (Sur et al., Fig. 6) and "
            "prints the\n  SRQ limit of Eq. 5 for UCX_SRQUD_SRQ_LIMIT.\n");
    exit(2);
}


int main(int argc, char **argv)
{
    const char *dev_arg = NULL;
    unsigned iters = 200, srq_size = 1024, i, limit;
    double *lat, *wake, t0, rtt, wakeup, eventfd_wakeup, bw;
    struct ibv_device **list;
    struct ibv_port_attr pattr;
    struct ibv_ah_attr ah_attr;
    char devname[64];
    wm_t wm;
    int c, n, gid_opt = -1;
    char *colon;

    memset(&wm, 0, sizeof(wm));
    wm.port = 1;
    while ((c = getopt(argc, argv, "d:g:n:s:h")) != -1) {
        switch (c) {
        case 'd': dev_arg  = optarg; break;
        case 'g': gid_opt  = atoi(optarg); break;
        case 'n': iters    = strtoul(optarg, NULL, 0); break;
        case 's': srq_size = strtoul(optarg, NULL, 0); break;
        default:  usage();
        }
    }
    if ((iters < 5) || (iters > MAX_ITERS) || (srq_size < 16)) {
        fprintf(stderr, "srqud_watermark: -n must be in [5..%d], -s >= 16\n",
                MAX_ITERS);
        return 2;
    }

    list = ibv_get_device_list(&n);
    if ((list == NULL) || (n == 0)) {
        fprintf(stderr, "srqud_watermark: no verbs device\n");
        return 1;
    }
    devname[0] = '\0';
    if (dev_arg != NULL) {
        snprintf(devname, sizeof(devname), "%s", dev_arg);
        if ((colon = strchr(devname, ':')) != NULL) {
            *colon  = '\0';
            wm.port = atoi(colon + 1);
        }
    }
    for (i = 0; i < (unsigned)n; ++i) {
        if ((devname[0] == '\0') ||
            !strcmp(devname, ibv_get_device_name(list[i]))) {
            wm.ctx = ibv_open_device(list[i]);
            break;
        }
    }
    if (wm.ctx == NULL) {
        fprintf(stderr, "srqud_watermark: device %s not found\n", devname);
        return 1;
    }
    snprintf(devname, sizeof(devname), "%s",
             ibv_get_device_name(wm.ctx->device));
    ibv_free_device_list(list);

    if (ibv_query_port(wm.ctx, wm.port, &pattr) != 0) {
        die("ibv_query_port");
    }
    wm.gid_index = (gid_opt >= 0) ? gid_opt : choose_gid(&wm, &pattr);
    if (wm.gid_index < 0) {
        fprintf(stderr, "srqud_watermark: no usable GID\n");
        return 1;
    }

    wm.slots   = 64;
    wm.pd      = ibv_alloc_pd(wm.ctx);
    wm.send_cq = ibv_create_cq(wm.ctx, 16, NULL, NULL, 0);
    wm.recv_cq = ibv_create_cq(wm.ctx, 128, NULL, NULL, 0);
    if (!wm.pd || !wm.send_cq || !wm.recv_cq) {
        die("verbs resources");
    }
    struct ibv_srq_init_attr sattr = {.attr = {.max_wr = 64, .max_sge = 1}};
    wm.srq = ibv_create_srq(wm.pd, &sattr);
    if (wm.srq == NULL) {
        die("ibv_create_srq");
    }
    wm.buf = calloc(wm.slots + 1, BUF_LEN);
    wm.mr  = ibv_reg_mr(wm.pd, wm.buf, (size_t)(wm.slots + 1) * BUF_LEN,
                        IBV_ACCESS_LOCAL_WRITE);
    if (wm.mr == NULL) {
        die("ibv_reg_mr");
    }
    wm.tx_qp = create_ud_qp(&wm, wm.send_cq, wm.send_cq, NULL);
    wm.rx_qp = create_ud_qp(&wm, wm.send_cq, wm.recv_cq, wm.srq);

    memset(&ah_attr, 0, sizeof(ah_attr));
    ah_attr.port_num = wm.port;
    ah_attr.dlid     = pattr.lid;
    if (pattr.link_layer == IBV_LINK_LAYER_ETHERNET) {
        ah_attr.is_global          = 1;
        ah_attr.grh.sgid_index     = wm.gid_index;
        ah_attr.grh.hop_limit      = 64;
        if (ibv_query_gid(wm.ctx, wm.port, wm.gid_index,
                          &ah_attr.grh.dgid) != 0) {
            die("ibv_query_gid");
        }
    }
    wm.ah = ibv_create_ah(wm.pd, &ah_attr);
    if (wm.ah == NULL) {
        die("ibv_create_ah");
    }

    lat  = calloc(iters, sizeof(*lat));
    wake = calloc(iters, sizeof(*wake));

    /* 1. through the SRQ, with buffers to spare and no limit armed */
    post_recv(&wm, 32);
    for (i = 0; i < iters + 10; ++i) {
        t0 = now_sec();
        send_one(&wm);
        wait_recv(&wm);
        if (i >= 10) {                  /* warm-up */
            lat[i - 10] = now_sec() - t0;
        }
        post_recv(&wm, 1);
    }
    rtt = median(lat, iters);

    /* 2. the SRQ holds 2 buffers and its limit is 2: each send takes one
     *    and raises the event; time it to the thread's wakeup */
    pthread_create(&wm.thread, NULL, event_thread, &wm);
    usleep(10000);
    for (i = 0; i < 30; ++i) {          /* 32 posted: leave exactly 2 */
        send_one(&wm);
        wait_recv(&wm);
    }
    for (i = 0; i < iters; ++i) {
        wm.event_seen = 0;
        arm(&wm, 2);
        usleep(2000);                    /* let the thread go to sleep */
        t0 = now_sec();
        send_one(&wm);
        while (!wm.event_seen) {
            if (now_sec() - t0 > 5) {
                fprintf(stderr, "srqud_watermark: no SRQ limit event in 5 s "
                        "(does %s support IBV_SRQ_LIMIT?)\n", devname);
                return 1;
            }
        }
        __sync_synchronize();
        wake[i] = (wm.event_time.tv_sec + wm.event_time.tv_nsec * 1e-9) - t0;
        wait_recv(&wm);
        post_recv(&wm, 1);
    }
    wm.stop = 1;
    wakeup  = median(wake, iters);
    /* wake the thread for the last time: arm and consume once more */
    arm(&wm, 64);
    send_one(&wm);
    pthread_join(wm.thread, NULL);

    eventfd_wakeup = uct_srqud_watermark_measure_wakeup();
    bw             = uct_srqud_verbs_port_bandwidth(&pattr) / 1e6;
    limit          = uct_srqud_watermark(bw, UCT_SRQUD_MIN_WIRE_PACKET,
                                         (wakeup - rtt) * 1e3, srq_size);

    printf("device                               %s:%d (GID index %d)\n",
           devname, wm.port, wm.gid_index);
    printf("link bandwidth                       %.0f MB/s\n", bw);
    printf("smallest srqud packet on the wire    %d B\n",
           UCT_SRQUD_MIN_WIRE_PACKET);
    printf("send -> SRQ receive completion       %8.1f us (median of %u)\n",
           rtt * 1e6, iters);
    printf("send -> LIMIT thread woken by event  %8.1f us (median of %u)\n",
           wakeup * 1e6, iters);
    printf("t_wakeup (difference)                %8.1f us\n",
           (wakeup - rtt) * 1e6);
    printf("thread wakeup over an eventfd        %8.1f us (srqud's "
           "UCX_SRQUD_SRQ_LIMIT=auto estimate)\n", eventfd_wakeup * 1e6);
    printf("Eq. 5 limit with t_wakeup            %u (SRQ size %u)\n", limit,
           srq_size);
    printf("Eq. 5 limit with the eventfd wakeup  %u\n",
           uct_srqud_watermark(bw, UCT_SRQUD_MIN_WIRE_PACKET,
                               eventfd_wakeup * 1e3, srq_size));
    printf("recommended UCX_SRQUD_SRQ_LIMIT=%u\n", limit);

    ibv_destroy_qp(wm.tx_qp);
    ibv_destroy_qp(wm.rx_qp);
    ibv_destroy_ah(wm.ah);
    ibv_destroy_srq(wm.srq);
    ibv_dereg_mr(wm.mr);
    ibv_destroy_cq(wm.send_cq);
    ibv_destroy_cq(wm.recv_cq);
    ibv_dealloc_pd(wm.pd);
    ibv_close_device(wm.ctx);
    free(wm.buf);
    free(lat);
    free(wake);
    return 0;
}
