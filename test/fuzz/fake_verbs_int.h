/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The internals the two files of the fake verbs device share (fake_verbs.h
 * is its interface to fuzz_path):
 *
 *   fake_verbs.c       the device, context, PD, MR, CQ, SRQ, QP and AH
 *                      objects and the checks of scatter/gather entries
 *   fake_verbs_data.c  the data path: posting sends and receives,
 *                      completions, the send log, delivery, and what the
 *                      target drives
 */

#ifndef SRQUD_FUZZ_FAKE_VERBS_INT_H_
#define SRQUD_FUZZ_FAKE_VERBS_INT_H_

#include "fake_verbs.h"

#include <sanitizer/asan_interface.h>

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>


#define FV_FAIL(...) \
    do { \
        fprintf(stderr, "fake_verbs: " __VA_ARGS__); \
        fputc('\n', stderr); \
        abort(); \
    } while (0)

#define FV_MAX_MR      4096
#define FV_MAX_SGE     32
#define FV_MAX_QP_WR   16384
#define FV_MIN(_a, _b) (((_a) < (_b)) ? (_a) : (_b))
#define FV_MAX(_a, _b) (((_a) > (_b)) ? (_a) : (_b))


typedef enum {
    FV_OBJ_CTX, FV_OBJ_PD, FV_OBJ_MR, FV_OBJ_CQ, FV_OBJ_SRQ, FV_OBJ_QP,
    FV_OBJ_AH, FV_OBJ_CHANNEL, FV_OBJ_LAST
} fv_obj_type_t;

extern const char *fv_obj_names[FV_OBJ_LAST];


typedef struct fv_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
} fv_sge_t;


typedef struct fv_wqe {
    uint64_t wr_id;
    int      signaled;
    int      num_sge;
    int      inl;
    fv_sge_t sge[FV_MAX_SGE];
    /* sends: where to, and an inline packet's bytes (copied at the post) */
    uint8_t  dgid[16];
    uint32_t dest_qpn, qkey, imm, total;
    int      with_imm;
    uint8_t  inl_data[256];
} fv_wqe_t;


/* A ring of work requests */
typedef struct fv_wq {
    fv_wqe_t *ring;
    unsigned cap, head, count;
} fv_wq_t;


typedef struct fv_mr {
    struct ibv_mr mr;
    int           live;
    int           access;
} fv_mr_t;


typedef struct fv_cq {
    struct ibv_cq cq;
    struct ibv_wc *ring;
    unsigned      cap, head, count;
    int           armed;
    int           live;
} fv_cq_t;


typedef struct fv_srq {
    struct ibv_srq srq;
    fv_wq_t        rq;
    unsigned       max_sge;
    unsigned       limit;       /* armed, 0: not */
    int            live;
} fv_srq_t;


typedef struct fv_qp {
    struct ibv_qp qp;
    struct ibv_qp_cap cap;
    uint32_t      qkey;
    fv_wq_t       sq;
    fv_wq_t       rq;           /* without an SRQ */
    int           live;
} fv_qp_t;


typedef struct fv_ah {
    struct ibv_ah ah;
    uint8_t       dgid[16];
} fv_ah_t;


typedef struct fv_channel {
    struct ibv_comp_channel ch;
    unsigned      events;       /* CQ events not yet taken */
    fv_cq_t       *last_cq;
} fv_channel_t;


/* Every object ever created in this input, for lookups and leak checks */
typedef struct fv_obj {
    fv_obj_type_t type;
    void          *ptr;
    int           live;
} fv_obj_t;

/* The device: its objects, registrations, send logs and async events */
struct fv_state {
    pthread_mutex_t   lock;
    struct ibv_device device;
    struct ibv_device *list[2];
    fv_obj_t          *objs;
    unsigned          nobjs, cap_objs;
    fv_mr_t           *mrs[FV_MAX_MR];
    unsigned          nmrs;
    uint32_t          next_qpn;
    fv_send_t         *sends;   /* ring of FV_SEND_LOG */
    uint64_t          nsends;
    fv_send_t         *chunks;  /* ring of FV_CHUNK_LOG */
    uint64_t          nchunks;
    struct { uint64_t addr, len; } user[16];
    unsigned          nuser;
    fv_range_check_t  range_check;
    fv_stats_t        stats;
    /* async events: the md's handler runs on UCX's async thread */
    int               async_fd;
    struct ibv_async_event pending_event;
    int               event_pending;
    unsigned long     events_raised, events_acked;
    struct ibv_context *ctx;    /* the open context (one at a time) */
};

extern struct fv_state fv;


/* fake_verbs.c */
void fv_sge_check(const char *what, const fv_sge_t *sge, int write);
void fv_raise_async_event(struct ibv_async_event *event);

/* fake_verbs_data.c: the data path of the context's ops */
int fv_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc);
int fv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
int fv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
                 struct ibv_send_wr **bad_wr);
int fv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
                 struct ibv_recv_wr **bad_wr);
int fv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad_wr);

#endif
