/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Zero-copy transfers over UD (Koop, Sur, Panda, Cluster'07), behind
 * uct_ep_get_zcopy / uct_ep_put_zcopy.
 *
 * The data sink takes a QP from the interface's pool (each with its own
 * receive queue and CQ, not the SRQ) and posts the destination buffer on
 * it, one receive per MTU-sized chunk, behind 40 bytes of GRH scratch. The
 * source sends the chunks from its registered memory with
 * IBV_WR_SEND_WITH_IMM (immediate = chunk number) on the interface's send
 * QP for chunks, signalling only the last of a batch, then says how many
 * it sent (ZFIN). The sink checks each completion against the receive it
 * consumed (srqud_chunk.h), puts misplaced chunks home by a local copy, and
 * asks again for what is missing, in the order of its receives, until the
 * buffer is complete.
 *
 *   get: this side is the sink. ZGET (reliable) names the peer's memory
 *        and the chunks; the peer checks the request against its md's
 *        registry, sends, ZFIN (unreliable). Next rounds: ZGET again.
 *   put: the peer is the sink. ZPUT (reliable) names the peer's memory;
 *        the peer checks it, posts it, answers ZCTS (unreliable: pool QP,
 *        chunks); this side sends, ZFIN (reliable); the peer answers ZCTS
 *        for a next round or ZACK when complete; only then the put
 *        completes. Without a free pool QP, the copy path (RMA_PUT).
 *
 * The initiator drives: an answer that does not come within the
 * retransmission timeout makes it ask again. A transfer whose peer is gone
 * fails with its endpoint and returns its pool QP.
 */

#ifndef UCT_SRQUD_ZCOPY_H_
#define UCT_SRQUD_ZCOPY_H_

#include "srqud_chunk.h"
#include "srqud_def.h"
#include "srqud_md.h"

#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue.h>
#include <ucs/time/time.h>
#include <infiniband/verbs.h>


typedef struct uct_srqud_ep uct_srqud_ep_t;
typedef struct uct_srqud_xfer uct_srqud_xfer_t;


/* A receive QP of the pool, bound to one transfer at a time */
typedef struct uct_srqud_pool_qp {
    struct ibv_qp            *qp;
    struct ibv_cq            *cq;
    uct_srqud_xfer_t         *xfer;    /* NULL: free */
    uint8_t                  gen;      /* transfers it served: tags chunks */
    ucs_list_link_t          list;     /* in the free list */
} uct_srqud_pool_qp_t;


/* Chunks to send for one request, on the chunk send QP */
typedef struct uct_srqud_zsend_job {
    ucs_queue_elem_t         queue;
    struct ibv_ah            *ah;
    uint32_t                 dest_qpn;
    uint8_t                  tag;       /* the sink's pool QP generation */
    uint32_t                 lkey;
    uint64_t                 base;      /* local address of chunk 0 */
    uint64_t                 length;    /* of the whole transfer */
    uint32_t                 chunk;     /* chunk size */
    uint32_t                 *list;     /* chunk numbers, in order */
    uint32_t                 count;
    uint32_t                 pos;       /* next to post */
    uint32_t                 unsignaled;/* posted since the last signaled */
    uint32_t                 in_flight; /* posted, completion not seen */
    uint8_t                  queued;    /* in zcopy.jobs: not all posted */
    /* all posted (the source then says ZFIN); all completed (the HCA is
     * done with the memory) */
    void                     (*posted)(uct_srqud_iface_t *iface,
                                       struct uct_srqud_zsend_job *job);
    void                     (*drained)(uct_srqud_iface_t *iface,
                                        struct uct_srqud_zsend_job *job);
    void                     *arg;
} uct_srqud_zsend_job_t;


/* A signaled chunk send and the unsignaled ones before it */
typedef struct uct_srqud_zmarker {
    uct_srqud_zsend_job_t    *job;
    uint32_t                 covered;
} uct_srqud_zmarker_t;


enum {
    UCT_SRQUD_XFER_GET_SINK,    /* get_zcopy: this side receives */
    UCT_SRQUD_XFER_PUT_SOURCE,  /* put_zcopy: this side sends */
    UCT_SRQUD_XFER_PUT_SINK,    /* a peer's put_zcopy: this side receives */
    UCT_SRQUD_XFER_GET_SOURCE   /* a peer's get_zcopy: this side sends */
};


enum {
    UCT_SRQUD_XFER_FLAG_CTL_DUE  = UCS_BIT(0), /* a reliable request to send */
    UCT_SRQUD_XFER_FLAG_FIN      = UCS_BIT(1), /* the round's ZFIN is in */
    UCT_SRQUD_XFER_FLAG_SENDING  = UCS_BIT(2), /* a send job is active */
    UCT_SRQUD_XFER_FLAG_ACKED    = UCS_BIT(3), /* put: the peer has it all */
    UCT_SRQUD_XFER_FLAG_DONE     = UCS_BIT(4)  /* finished, to be freed */
};


struct uct_srqud_xfer {
    ucs_list_link_t          list;      /* iface->zcopy.xfers */
    uint32_t                 id;        /* the initiator's number */
    uint8_t                  type;      /* UCT_SRQUD_XFER_xx */
    uint8_t                  flags;     /* UCT_SRQUD_XFER_FLAG_xx */
    uint16_t                 round;
    ucs_status_t             status;
    uct_srqud_ep_t           *ep;       /* initiator: its ep; responder: the
                                           passive ep of the initiator */
    uct_completion_t         *comp;     /* initiator: the user's */
    uint64_t                 local_addr;
    uint64_t                 length;
    uint32_t                 lkey;
    uint64_t                 remote_addr;
    uint32_t                 rkey;
    uint32_t                 chunk;     /* chunk size */
    uct_srqud_mem_t          *region;   /* responder: the checked region */
    /* sink */
    uct_srqud_pool_qp_t      *pqp;
    uct_srqud_chunk_rx_t     rx;
    uint32_t                 round_posted;   /* receives the round asked for */
    uint32_t                 round_done;     /* of them completed */
    uint32_t                 round_sent;     /* ZFIN: the source sent */
    /* source */
    uint32_t                 remote_qpn;     /* the sink's pool QP */
    uct_srqud_zsend_job_t    job;
    ucs_time_t               last_activity;
    ucs_time_t               progress_time;  /* sink: last chunk in place */
    uint32_t                 rx_progress_count; /* valid chunks then */
};


typedef struct uct_srqud_zcopy {
    /* chunk send QP */
    struct ibv_qp            *sqp;
    struct ibv_cq            *scq;
    unsigned                 sq_available;
    ucs_queue_head_t         jobs;        /* waiting or posting */
    uct_srqud_zmarker_t      *markers;    /* ring: signaled sends in flight */
    unsigned                 marker_head;
    unsigned                 marker_count;
    unsigned                 user_jobs;   /* the user's puts sending */
    /* receive pool */
    uct_srqud_pool_qp_t      *pool;
    unsigned                 pool_size;   /* UCX_SRQUD_ZCOPY_QPS */
    unsigned                 pool_created;
    ucs_list_link_t          pool_free;
    void                     *scratch;    /* GRH slot + a chunk of tail */
    struct ibv_mr            *scratch_mr;
    /* transfers */
    ucs_list_link_t          xfers;
    uint32_t                 next_id;
    uint32_t                 chunk;       /* path MTU */
    unsigned                 rq_depth;    /* receives per pool QP */
    unsigned                 sq_depth;
    size_t                   thresh;      /* UCX_SRQUD_ZCOPY_THRESH */
    unsigned                 max_ranges;  /* per control packet */
} uct_srqud_zcopy_t;


ucs_status_t uct_srqud_zcopy_init(uct_srqud_iface_t *iface);

void uct_srqud_zcopy_cleanup(uct_srqud_iface_t *iface);

/* Poll chunk completions, run rounds and timers; from the user's progress */
unsigned uct_srqud_zcopy_progress(uct_srqud_iface_t *iface);

/* From the async thread: chunk sends of peers' gets */
unsigned uct_srqud_zcopy_async_progress(uct_srqud_iface_t *iface);

/* Nothing in progress (flush, event_arm) */
int uct_srqud_zcopy_idle(uct_srqud_iface_t *iface);

/* A control packet of the zero-copy protocol for this side (rx) */
void uct_srqud_zcopy_rx_request(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                uint8_t ctl, const uct_srqud_zhdr_t *hdr,
                                size_t length);

void uct_srqud_zcopy_rx_answer(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                               uint8_t ctl, const uct_srqud_zhdr_t *hdr,
                               size_t length);

/* The ep failed or goes away: its transfers end with @a status */
void uct_srqud_zcopy_ep_cleanup(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                ucs_status_t status);

void uct_srqud_zcopy_xfer_free(uct_srqud_iface_t *iface,
                               uct_srqud_xfer_t *xfer);

ucs_status_t uct_srqud_zcopy_start(uct_srqud_iface_t *iface,
                                   uct_srqud_ep_t *ep, int is_get,
                                   void *buffer, size_t length, uint32_t lkey,
                                   uint64_t remote_addr, uint32_t rkey,
                                   uct_completion_t *comp);

#endif
