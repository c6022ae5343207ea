/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Memory of one process against the number of peers it talks to (Sur et
 * al., IPDPS'06, Fig. 7-9), at the UCT level, for any transport:
 *
 *   mem_peers -t TL -d DEV -n MAX_PEERS [-p PEER_PROCS]
 *
 * The measured process (the "hub") opens one interface with the
 * transport's configuration. PEER_PROCS child processes open MAX_PEERS
 * interfaces between them, each a distinct peer (its own QP), configured
 * small through PEER_UCX_* variables (PEER_UCX_X=v becomes UCX_X=v in the
 * children). The hub then connects to 1, 2, 4, ... MAX_PEERS of them, and
 * every connection carries one active message each way (so that
 * connection state exists on both sides: srqud's receiving endpoints, RC's
 * connected QPs). After each step it prints, in kB, its resident memory
 * (VmRSS), its pinned memory (VmPin: what the HCA has registered), and the
 * verbs queues the device maps into it (all, and the resident part):
 *
 *   tl peers rss_kb pin_kb qmap_kb qmap_rss_kb
 */

#include "bench_uct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#define AM_ID      5
#define ADDR_MAX   64

/* Addresses of one peer and of the hub's endpoint to it, in memory shared
 * by all processes */
typedef struct {
    volatile int ready;           /* the peer's addresses are published */
    volatile int hub_ep_ready;    /* CONNECT_TO_EP: the hub's ep address */
    volatile int replied;         /* the peer has sent its reply */
    uint8_t      dev_addr[ADDR_MAX];
    uint8_t      iface_addr[ADDR_MAX];
    uint8_t      ep_addr[ADDR_MAX];      /* peer's ep to the hub */
    uint8_t      hub_ep_addr[ADDR_MAX];  /* hub's ep to the peer */
} peer_slot_t;

typedef struct {
    volatile int  done;
    uint8_t       hub_dev_addr[ADDR_MAX];
    uint8_t       hub_iface_addr[ADDR_MAX];
    volatile int  hub_ready;
    peer_slot_t   peers[];
} shared_t;

#define MAX_PEER_PROCS 64

static shared_t *g_shm;
static unsigned g_received;
static pid_t g_pids[MAX_PEER_PROCS];   /* the peer processes forked */
static unsigned g_nprocs;


/* A peer process that exited before the end (its interface did not open,
 * a connect failed) never sets the flags the hub waits for: end the run
 * with the reason instead of waiting forever */
static void check_peers_alive(void)
{
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);

    if (pid <= 0) {
        return;
    }
    fprintf(stderr, "mem_peers: peer process %d exited before the end (%s "
            "%d); its error is above\n", (int)pid,
            WIFEXITED(status) ? "exit status" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    for (unsigned p = 0; p < g_nprocs; ++p) {
        if (g_pids[p] != pid) {
            kill(g_pids[p], SIGTERM);
        }
    }
    exit(1);
}


static ucs_status_t count_handler(void *arg, void *data, size_t length,
                                  unsigned flags)
{
    ++*(unsigned*)arg;
    return UCS_OK;
}


static void print_mem(const char *tl, unsigned peers)
{
    bench_mem_t m = bench_mem_read();

    printf("%s %u %lu %lu %lu %lu\n", tl, peers, m.rss_kb, m.pin_kb, m.qmap_kb,
           m.qrss_kb);
    fflush(stdout);
}


static uct_ep_h connect_iface(uct_iface_h iface, const uint8_t *dev_addr,
                              const uint8_t *iface_addr)
{
    uct_ep_params_t params;
    uct_ep_h ep;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = iface;
    params.dev_addr   = (const uct_device_addr_t*)dev_addr;
    params.iface_addr = (const uct_iface_addr_t*)iface_addr;
    bench_check(uct_ep_create(&params, &ep), "ep create (to iface)");
    return ep;
}


static uct_ep_h create_p2p_ep(uct_iface_h iface, uint8_t *ep_addr)
{
    uct_ep_params_t params;
    uct_ep_h ep;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    params.iface      = iface;
    bench_check(uct_ep_create(&params, &ep), "ep create");
    bench_check(uct_ep_get_address(ep, (uct_ep_addr_t*)ep_addr), "ep address");
    return ep;
}


static void send_one(bench_ctx_t *ctx, uct_ep_h ep)
{
    uint64_t payload = 0x5eed;
    ucs_status_t status;

    while ((status = uct_ep_am_short(ep, AM_ID, 0, &payload,
                                     sizeof(payload))) == UCS_ERR_NO_RESOURCE) {
        uct_worker_progress(ctx->worker);
    }
    bench_check(status, "am_short");
}


/* A child: the peers i with i % nprocs == rank */
static void peer_main(const char *tl, const char *dev, unsigned n,
                      unsigned nprocs, unsigned rank)
{
    unsigned count = (n - rank + nprocs - 1) / nprocs, k, i;
    bench_iface_t *ifaces = calloc(count, sizeof(*ifaces));
    uct_ep_h *eps         = calloc(count, sizeof(*eps));
    unsigned *received    = calloc(count, sizeof(*received));
    int to_ep;
    bench_ctx_t ctx;

    bench_apply_env("PEER_");
    bench_ctx_open(&ctx, tl, dev);
    for (k = 0; k < count; ++k) {
        i = rank + k * nprocs;
        bench_iface_open(&ctx, &ifaces[k]);
        bench_check(uct_iface_set_am_handler(ifaces[k].iface, AM_ID,
                                             count_handler, &received[k], 0),
                    "am handler");
        to_ep = !(ifaces[k].attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE);
        memcpy(g_shm->peers[i].dev_addr, ifaces[k].dev_addr, ADDR_MAX);
        memcpy(g_shm->peers[i].iface_addr, ifaces[k].iface_addr, ADDR_MAX);
        if (to_ep) {
            eps[k] = create_p2p_ep(ifaces[k].iface, g_shm->peers[i].ep_addr);
        }
        __sync_synchronize();
        g_shm->peers[i].ready = 1;
    }

    while (!g_shm->hub_ready) {
        usleep(1000);
    }

    /* answer every hub message with one of ours */
    while (!g_shm->done) {
        uct_worker_progress(ctx.worker);
        for (k = 0; k < count; ++k) {
            i = rank + k * nprocs;
            if ((received[k] == 0) || g_shm->peers[i].replied) {
                continue;
            }
            if (eps[k] == NULL) {
                eps[k] = connect_iface(ifaces[k].iface, g_shm->hub_dev_addr,
                                       g_shm->hub_iface_addr);
            }
            send_one(&ctx, eps[k]);
            g_shm->peers[i].replied = 1;
        }
        /* CONNECT_TO_EP: the hub published its ep, connect ours to it */
        for (k = 0; k < count; ++k) {
            i = rank + k * nprocs;
            if ((eps[k] != NULL) && g_shm->peers[i].hub_ep_ready == 1) {
                bench_check(uct_ep_connect_to_ep(eps[k],
                        (uct_device_addr_t*)g_shm->hub_dev_addr,
                        (uct_ep_addr_t*)g_shm->peers[i].hub_ep_addr),
                        "connect_to_ep (peer)");
                g_shm->peers[i].hub_ep_ready = 2;
            }
        }
    }

    for (k = 0; k < count; ++k) {
        if (eps[k] != NULL) {
            uct_ep_destroy(eps[k]);
        }
        uct_iface_close(ifaces[k].iface);
    }
    _exit(0);
}


int main(int argc, char **argv)
{
    const char *tl = "srqud", *dev = "rxe0:1";
    unsigned n = 64, nprocs = 4, connected = 0, step, i, p;
    bench_iface_t hub;
    bench_ctx_t ctx;
    uct_ep_h *eps;
    int c, to_ep, status;

    while ((c = getopt(argc, argv, "t:d:n:p:")) != -1) {
        switch (c) {
        case 't': tl     = optarg; break;
        case 'd': dev    = optarg; break;
        case 'n': n      = strtoul(optarg, NULL, 0); break;
        case 'p': nprocs = strtoul(optarg, NULL, 0); break;
        default:
            fprintf(stderr, "usage: mem_peers -t TL -d DEV -n MAX_PEERS "
                    "[-p PEER_PROCS]\n");
            return 2;
        }
    }
    if ((n == 0) || (nprocs == 0) || (nprocs > n) ||
        (nprocs > MAX_PEER_PROCS)) {
        fprintf(stderr, "mem_peers: need 0 < PEER_PROCS <= MAX_PEERS, "
                "PEER_PROCS <= %d\n", MAX_PEER_PROCS);
        return 2;
    }

    g_shm = mmap(NULL, sizeof(*g_shm) + n * sizeof(peer_slot_t),
                 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_shm == MAP_FAILED) {
        perror("mmap");
        return 1;
    }

    /* peers first, before this process touches UCX (no fork after init) */
    for (p = 0; p < nprocs; ++p) {
        g_pids[p] = fork();
        if (g_pids[p] == 0) {
            /* a hub that exits (its own error) takes its peers along */
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            peer_main(tl, dev, n, nprocs, p);
        }
        if (g_pids[p] < 0) {
            perror("mem_peers: fork");
            break;
        }
        g_nprocs = p + 1;
    }
    if (g_nprocs < nprocs) {
        for (p = 0; p < g_nprocs; ++p) {
            kill(g_pids[p], SIGTERM);
        }
        return 1;
    }

    bench_ctx_open(&ctx, tl, dev);
    bench_iface_open(&ctx, &hub);
    bench_check(uct_iface_set_am_handler(hub.iface, AM_ID, count_handler,
                                         &g_received, 0), "am handler");
    to_ep = !(hub.attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    memcpy(g_shm->hub_dev_addr, hub.dev_addr, ADDR_MAX);
    memcpy(g_shm->hub_iface_addr, hub.iface_addr, ADDR_MAX);
    __sync_synchronize();
    g_shm->hub_ready = 1;
    for (i = 0; i < n; ++i) {
        while (!g_shm->peers[i].ready) {
            check_peers_alive();
            usleep(1000);
        }
    }

    eps = calloc(n, sizeof(*eps));
    print_mem(tl, 0);
    for (step = 1; connected < n; step = (step * 2 > n) ? n : step * 2) {
        for (; connected < step; ++connected) {
            i = connected;
            if (to_ep) {
                eps[i] = create_p2p_ep(hub.iface, g_shm->peers[i].hub_ep_addr);
                bench_check(uct_ep_connect_to_ep(eps[i],
                        (uct_device_addr_t*)g_shm->peers[i].dev_addr,
                        (uct_ep_addr_t*)g_shm->peers[i].ep_addr),
                        "connect_to_ep (hub)");
                __sync_synchronize();
                g_shm->peers[i].hub_ep_ready = 1;
                while (g_shm->peers[i].hub_ep_ready != 2) {
                    uct_worker_progress(ctx.worker);
                    check_peers_alive();
                }
            } else {
                eps[i] = connect_iface(hub.iface, g_shm->peers[i].dev_addr,
                                       g_shm->peers[i].iface_addr);
            }
            send_one(&ctx, eps[i]);
            /* at most 32 sends unacknowledged: the send buffer pool's high
             * water mark then depends on this bench's bursts, not on N */
            if ((connected % 32) == 31) {
                while (uct_iface_flush(hub.iface, 0, NULL) == UCS_INPROGRESS) {
                    uct_worker_progress(ctx.worker);
                }
            }
        }
        /* every peer so far answered, and our messages are acknowledged */
        while (g_received < connected) {
            uct_worker_progress(ctx.worker);
            check_peers_alive();
        }
        while (uct_iface_flush(hub.iface, 0, NULL) == UCS_INPROGRESS) {
            uct_worker_progress(ctx.worker);
        }
        print_mem(tl, connected);
    }

    g_shm->done = 1;
    for (i = 0; i < n; ++i) {
        uct_ep_destroy(eps[i]);
    }
    uct_iface_close(hub.iface);
    for (p = 0; p < nprocs; ++p) {
        wait(&status);
    }
    return 0;
}
