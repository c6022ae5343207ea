/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * srqud_rawperf (see srqud_rawperf.c): what its two parts share. The setup
 * (srqud_rawperf_setup.c: options, the device, queues, the socketpair) and
 * the measurement (srqud_rawperf.c: posting, polling, the modes, main).
 * srqud_rawexch (srqud_rawexch.c) uses the setup's device, addresses, QP
 * connection and messages.
 */

#ifndef SRQUD_RAWPERF_H_
#define SRQUD_RAWPERF_H_

#include <infiniband/verbs.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GRH_LEN     40          /* in front of every UD receive */
#define QKEY        0x11111111
#define START_PSN   0x1000
#define INLINE_REQ  64          /* inline bytes asked for at QP creation */
#define WC_BATCH    32
#define PEER_CHECK  0.2         /* s between checks that the peer lives */
#define LOSS_SEC    1.0         /* UD: silence after the sender is done */
#define MAX_RX_MEM  (1ull << 30)
#define MIB         (1024.0 * 1024.0)

typedef struct {
    const char *name;
    int        rc, lat, write;
    size_t     def_size;
} bench_mode_t;


typedef struct {
    const bench_mode_t *mode;
    char     cli_dev[64], srv_dev[64];
    int      cli_port, srv_port, gid_index;   /* gid_index < 0: auto */
    uint64_t size, iters, warmup;
    unsigned postlist, signal_every, rx_depth, rx_batch, timeout;
    int      inline_send, use_srq, csv;
} opts_t;

typedef struct {
    uint64_t post_send, post_recv, send_comp, recv_comp;
} stats_t;

typedef struct {
    union ibv_gid gid;
    uint64_t      addr;
    uint32_t      qpn, psn, rkey, mtu;
    uint16_t      lid;
} ep_info_t;

enum { CTL_INFO = 1, CTL_READY, CTL_CREDIT, CTL_DONE, CTL_RESULT };

/* Everything that crosses the socketpair; SOCK_SEQPACKET keeps it whole */
typedef struct {
    uint32_t  type, status;
    ep_info_t info;
    uint64_t  count;   /* CREDIT: reposted, DONE: sent, RESULT: received */
    uint64_t  timed_msgs, elapsed_ns;
    stats_t   stats;
} ctl_t;

typedef struct {
    double   sec, half_rtt_us;
    uint64_t msgs;
} result_t;

typedef struct {
    const opts_t       *o;
    int                sock, is_server, has_rx, gid_index;
    struct ibv_context *ctx;
    struct ibv_pd      *pd;
    struct ibv_cq      *scq, *rcq;
    struct ibv_srq     *srq;
    struct ibv_qp      *qp;
    struct ibv_ah      *ah;
    struct ibv_mr      *mr;
    uint8_t            *buf;      /* [tx_len: send/write area][slots] */
    size_t             size, tx_len, slot_len;
    unsigned           slots, nfree, sq_depth, max_inline, send_flags;
    uint32_t           *free_slots;   /* consumed, waiting to be reposted */
    uint8_t            port;
    union ibv_gid      gid;
    uint16_t           lid;
    enum ibv_mtu       mtu;
    uint64_t           max_msg, max_wr;
    ep_info_t          peer;
    struct ibv_send_wr *swr;      /* the postlist, built once */
    struct ibv_sge     *ssge;
    struct ibv_recv_wr *rwr;      /* one repost batch */
    struct ibv_sge     *rsge;
    enum ibv_wr_opcode tx_opcode;
    uint64_t           sq_posted, sq_done;    /* within the current phase */
    uint64_t           tx_total, credit_limit;
    double             last_peer_check;
    stats_t            st;
} res_t;

/* The program and the side this process plays ("client", "server",
 * "rank N"), for messages */
extern const char *g_prog, *g_role;
/* Absolute time (now_sec) after which waiting is an error (-T) */
extern double     g_deadline;

/* Helpers: monotonic seconds; an error line (prefixed with the role), -1 */
double now_sec(void);
int fail_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int fail(const char *call, int err);
int fail_rc(const char *call, int rc);
uint64_t min_u64(uint64_t a, uint64_t b);
/* qsort order of doubles (the samples' median and percentiles) */
int cmp_double(const void *a, const void *b);
/* DEV[:PORT] (port 1 by default), and a number with an optional k/m
 * suffix within [min, max]: 0, or -1 if malformed */
int parse_devport(const char *s, char *dev, int *port);
int parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *v);

/* Options; 0, or -1 after the usage or an error was printed */
int parse_opts(int argc, char **argv, opts_t *o);

/* The device, its queues and buffers for one side, and their release */
int res_open(res_t *r, const char *dev, int port);
int res_plan(res_t *r);
int res_alloc(res_t *r);
void res_close(res_t *r);

/* Control messages over the socketpair; QP information exchanged, then
 * the QP brought to RTS towards the peer */
int ctl_send(res_t *r, ctl_t *m);
int ctl_pump(res_t *r, double timeout, ctl_t *m);
int ctl_expect(res_t *r, uint32_t type, ctl_t *m);
void ctl_wait_close(res_t *r);
int exchange(res_t *r);
int qp_connect(res_t *r);
/* The address of a peer's port, as a QP's path or a UD address handle */
void ah_attr_fill(const res_t *r, const ep_info_t *peer,
                  struct ibv_ah_attr *ah);
struct ibv_ah *ah_create(const res_t *r, const ep_info_t *peer);

#endif
