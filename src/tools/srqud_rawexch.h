/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * srqud_rawexch (see srqud_rawexch.c): what its two parts share. The
 * ranks, their queues and messages and the calls of MPI's exchanges
 * (srqud_rawexch.c), and the Allgather's RDMA steps, ag_* calls over RC
 * (srqud_rawexch_ag.c).
 */

#ifndef SRQUD_RAWEXCH_H_
#define SRQUD_RAWEXCH_H_

#include "srqud_rawperf.h"
#include "srqud_ranks.h"

#define MAX_NP     RANKS_MAX    /* srqud_ranks.h */
#define WIN        128          /* calls a message may run ahead: > MAX_NP,
                                   > FC_WIN */
#define FC_WIN     64           /* bcast: calls a parent may run ahead */
#define FC_EVERY   16           /* bcast: calls a child credits at once */
#define CREDIT     0x80000000u  /* in a header's sender: a credit */
#define SQ_DEPTH   128
#define SIG_EVERY  16
#define MAX_SIZE   (64u << 10)
#define MAX_CALLS  8
#define AG_STEPS   4            /* recursive doubling's at MAX_NP ranks */
#define AG_HDR     12           /* an ag message's call, rank, kind|step */
#define READ_ID    0x100u       /* in a read's wr_id, beside its QP */

enum { X_SENDRECV, X_ALLTOALL, X_BCAST, X_RDBL, X_AG_SEND, X_AG_RNDV,
       X_AG_PUT, X_AG_TAIL };
extern const char *x_names[MAX_CALLS];   /* the calls' names for -c */
enum { AG_DATA = 1, AG_RTS, AG_FIN };   /* the kinds of an ag message */

typedef struct {
    int      rc, qp_per_peer, chain, np, yield, ncalls, nsizes, calls[MAX_CALLS];
    unsigned msg_pkts;  /* -M: a message's packets to a post */
    int      ag;                /* an ag_* call is asked for */
    size_t   sizes[8], thdr;
    uint64_t iters, warmup;
    unsigned timeout;
    char     dev[64];   /* parse_devport's bound: opts_t's cli_dev */
    int      port, gid_index;
} xopts_t;

_Static_assert(sizeof(((xopts_t*)0)->dev) == sizeof(((opts_t*)0)->cli_dev),
               "parse_devport bounds a device name by opts_t's cli_dev");

typedef struct {
    const xopts_t  *o;
    int            rank;
    const int      *sock;             /* sock[peer]; -1 for itself */
    res_t          r;                 /* device, PD, GID (the setup's) */
    opts_t         ro;
    struct ibv_cq  *cq;
    struct ibv_srq *srq;
    struct ibv_qp  *qp[MAX_NP];       /* UD: qp[0] serves every peer */
    struct ibv_ah  *ah[MAX_NP];
    uint32_t       rqpn[MAX_NP];      /* the peer's QP for our messages */
    struct ibv_mr  *mr;
    uint8_t        *buf;              /* [QP][SQ_DEPTH] send, then slots */
    size_t         stride, slot_len, hdr;
    size_t         pkt_max;           /* UD: the MTU; RC: any message */
    unsigned       npkt;              /* the running size's message as */
    size_t         pkt_len, pkt_long; /* npkt packets of pkt_len bytes,
                                         the first pkt_long one longer */
    unsigned       nqp, slots, max_inline;
    uint64_t       posted[MAX_NP], unsig[MAX_NP], inflight[MAX_NP];
    uint32_t       got[WIN];
    uint64_t       sent[MAX_NP];      /* bcast: calls sent to a child */
    uint64_t       credit[MAX_NP];    /* bcast: calls a child received */
    uint64_t       from_parent;       /* bcast: calls received */
    uint64_t       call;              /* the running call's number */
    int            expect_from;       /* sendrecv: rank-1; bcast: the
                                         parent (the root: np, nobody);
                                         -1: anyone */
    unsigned       steps;             /* rdbl's and ag_*'s: log2(np),
                                         rounded up */
    uint32_t       rd_got[WIN][AG_STEPS];   /* rdbl: packets per step */
    /* ag_* calls: the result (np blocks of the running size; ag_len at the
     * largest), AG_STEPS flags after it, then ag_tail's slots [step][call's
     * parity] of tail_len (the blocks of a last step, then a flag at its
     * end) and as many buffers the writes go from; the peers write into
     * and read from it. What has come for each step of the calls in the
     * window */
    size_t         size;
    int            cur;               /* the running call's kind */
    struct ibv_mr  *agmr;
    uint8_t        *ag;
    size_t         ag_len, tail_off, tail_len, tail_max;
    uint64_t       ag_raddr[MAX_NP];
    uint32_t       ag_rkey[MAX_NP];
    uint32_t       ag_slot[WIN][AG_STEPS];   /* ag_send's data: slot + 1 */
    uint8_t        ag_rts[WIN][AG_STEPS], ag_fin[WIN][AG_STEPS];
    uint8_t        ag_read_done;             /* the running step's read */
} xrank_t;

/* srqud_rawexch.c: the ranks' queues, for the ag_* calls */
int qp_of(const xrank_t *x, int peer);
size_t max_size(const xopts_t *o);
uint8_t *slot_at(const xrank_t *x, uint64_t slot);
int rx_post(xrank_t *x, unsigned slot);
int progress(xrank_t *x, uint64_t *idle);
int sq_room(xrank_t *x, unsigned q);
uint8_t *sq_next(xrank_t *x, int peer, struct ibv_send_wr *wr);
int send_post(xrank_t *x, int peer, struct ibv_send_wr *wr);
void next_call(xrank_t *x);

/* srqud_rawexch_ag.c: the ag_* calls' result, its check and their steps */
int ag_open(xrank_t *x);
void ag_reset(xrank_t *x);
int ag_verify(const xrank_t *x, int call);
int on_ag_recv(xrank_t *x, const struct ibv_wc *wc);
int one_ag(xrank_t *x, int call);

#endif
