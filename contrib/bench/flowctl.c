/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Flow control under a burst (Sur et al., IPDPS'06, Fig. 10), at the UCT
 * level: the receiver opens its interface, "computes" (does not progress)
 * for COMPUTE_MS while the sender sends a burst of N active messages, then
 * progresses until all N have arrived. Reported: the time spent in that
 * final wait, whether every message arrived intact and in order, and for
 * srqud the device drops (packets sent but never received), the sender's
 * retransmissions and the LIMIT thread's work.
 *
 *   flowctl -t TL -d DEV -n N [-c COMPUTE_MS] [-s PAYLOAD]
 *
 * One line of output: "tl n wait_ms received bad in_order drops retx
 * limit_events refilled". Configure each side with UCX_* variables; the
 * receiver's can be given apart as RX_UCX_* (e.g. RX_UCX_SRQUD_SRQ_LIMIT=0).
 */

#include "bench_uct.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define AM_ID 3

typedef struct {
    uint64_t count, bad, next;
    int      in_order;
} rx_t;

static const char *g_tl, *g_dev;


static void payload_fill(uint8_t *p, size_t len, uint64_t seq)
{
    size_t i;
    for (i = 0; i < len; ++i) {
        p[i] = (uint8_t)(seq * 131 + i * 7);
    }
}


static ucs_status_t rx_handler(void *arg, void *data, size_t length,
                               unsigned flags)
{
    rx_t *rx = arg;
    uint8_t expected[4096];
    uint64_t seq;

    memcpy(&seq, data, sizeof(seq));
    if (length > sizeof(seq)) {
        payload_fill(expected, length - sizeof(seq), seq);
        if (memcmp(expected, (uint8_t*)data + sizeof(seq),
                   length - sizeof(seq))) {
            ++rx->bad;
        }
    }
    if (seq != rx->next) {
        rx->in_order = 0;
    }
    rx->next = seq + 1;
    ++rx->count;
    return UCS_OK;
}


int main(int argc, char **argv)
{
    unsigned long n = 10000, compute_ms = 500, i, spins;
    size_t payload = 56;
    int to_parent[2], to_child[2], c, status;
    uint64_t res[6];
    pid_t pid;

    g_tl  = "srqud";
    g_dev = "rxe0:1";
    while ((c = getopt(argc, argv, "t:d:n:c:s:")) != -1) {
        switch (c) {
        case 't': g_tl       = optarg; break;
        case 'd': g_dev      = optarg; break;
        case 'n': n          = strtoul(optarg, NULL, 0); break;
        case 'c': compute_ms = strtoul(optarg, NULL, 0); break;
        case 's': payload    = strtoul(optarg, NULL, 0); break;
        default:
            fprintf(stderr, "usage: flowctl -t TL -d DEV -n N [-c MS] [-s BYTES]\n");
            return 2;
        }
    }
    if ((payload > 2048) || (strchr(g_dev, ':') == NULL)) {
        fprintf(stderr, "flowctl: payload up to 2048 bytes, device DEV:PORT\n");
        return 2;
    }

    if ((pipe(to_parent) != 0) || (pipe(to_child) != 0)) {
        return 1;
    }
    pid = fork();
    if (pid == 0) {
        bench_ctx_t ctx;
        bench_iface_t rx_side;
        rx_t rx = {0, 0, 0, 1};
        uct_srqud_iface_stats_t st;
        double t0, wait_ms;
        char go;

        bench_apply_env("RX_");   /* the receiver's own settings */
        bench_ctx_open(&ctx, g_tl, g_dev);
        bench_iface_open(&ctx, &rx_side);
        bench_check(uct_iface_set_am_handler(rx_side.iface, AM_ID, rx_handler,
                                             &rx, 0), "am handler");
        (void)!write(to_parent[1], rx_side.dev_addr, sizeof(rx_side.dev_addr));
        (void)!write(to_parent[1], rx_side.iface_addr,
                     sizeof(rx_side.iface_addr));
        /* receives are posted; now compute without progressing */
        (void)!read(to_child[0], &go, 1);
        usleep(compute_ms * 1000);
        t0 = bench_now_ms();
        for (spins = 0; (rx.count < n) && (spins < 4000000000ul); ++spins) {
            uct_worker_progress(ctx.worker);
        }
        wait_ms = bench_now_ms() - t0;
        st      = bench_srqud_stats(&ctx, rx_side.iface);
        res[0]  = rx.count;
        res[1]  = rx.bad + ((rx.count == n) ? 0 : 1);
        res[2]  = rx.in_order;
        res[3]  = (uint64_t)(wait_ms * 1000);
        res[4]  = st.srq_limit_events;
        res[5]  = st.rx_packets;
        (void)!write(to_parent[1], res, sizeof(res));
        (void)!write(to_parent[1], &st.srq_refilled, sizeof(st.srq_refilled));
        (void)!read(to_child[0], &go, 1);
        _exit(0);
    }

    /* only the child writes to the parent and reads from it: a receiver
     * that fails is then seen (end of file) instead of waited for */
    close(to_parent[1]);
    close(to_child[0]);
    {
        bench_ctx_t ctx;
        bench_iface_t tx_side;
        uint8_t dev_addr[64], iface_addr[64], buf[2048 + 8];
        uct_ep_params_t ep_params;
        uct_srqud_iface_stats_t st;
        uint64_t refilled = 0;
        ssize_t got = 0, k;
        uct_ep_h ep;
        ucs_status_t s;

        bench_ctx_open(&ctx, g_tl, g_dev);
        bench_iface_open(&ctx, &tx_side);
        if ((read(to_parent[0], dev_addr, sizeof(dev_addr)) != sizeof(dev_addr)) ||
            (read(to_parent[0], iface_addr, sizeof(iface_addr)) !=
             sizeof(iface_addr))) {
            return 1;
        }
        memset(&ep_params, 0, sizeof(ep_params));
        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                               UCT_EP_PARAM_FIELD_DEV_ADDR |
                               UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.iface      = tx_side.iface;
        ep_params.dev_addr   = (uct_device_addr_t*)dev_addr;
        ep_params.iface_addr = (uct_iface_addr_t*)iface_addr;
        bench_check(uct_ep_create(&ep_params, &ep), "ep create");

        (void)!write(to_child[1], "g", 1);
        for (i = 0; i < n; ++i) {
            uint64_t seq = i;
            memcpy(buf, &seq, sizeof(seq));
            payload_fill(buf + 8, payload, seq);
            for (spins = 0;
                 (s = uct_ep_am_short(ep, AM_ID, seq, buf + 8, payload)) ==
                 UCS_ERR_NO_RESOURCE; ++spins) {
                uct_worker_progress(ctx.worker);
            }
            bench_check(s, "am_short");
        }
        fcntl(to_parent[0], F_SETFL, O_NONBLOCK);
        while (got < (ssize_t)(sizeof(res) + sizeof(refilled))) {
            uct_worker_progress(ctx.worker);
            k = read(to_parent[0],
                     (got < (ssize_t)sizeof(res)) ? (char*)res + got :
                     (char*)&refilled + (got - sizeof(res)),
                     (got < (ssize_t)sizeof(res)) ? sizeof(res) - got :
                     sizeof(refilled) - (got - sizeof(res)));
            if (k > 0) {
                got += k;
            } else if (k == 0) {
                fprintf(stderr, "flowctl: the receiver exited without results\n");
                return 1;
            }
        }
        st = bench_srqud_stats(&ctx, tx_side.iface);
        (void)!write(to_child[1], "x", 1);
        waitpid(pid, &status, 0);

        /* drops: packets the device took from the wire but had no buffer
         * for (srqud: sent minus received, Soft-RoCE loses nothing else) */
        printf("%s %lu %.1f %lu %lu %lu %ld %lu %lu %lu\n", g_tl, n,
               res[3] / 1000.0, (unsigned long)res[0], (unsigned long)res[1],
               (unsigned long)res[2],
               strcmp(g_tl, "srqud") ? -1L : (long)(st.tx_packets - res[5]),
               (unsigned long)st.tx_retransmits, (unsigned long)res[4],
               (unsigned long)refilled);
        uct_ep_destroy(ep);
        return (res[1] == 0) && res[2] ? 0 : 1;
    }
}
