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
 * This file is the protocol's state; srqud_zcopy.c runs the transfers and
 * the sink's rounds, srqud_zcopy_rx.c handles the packets (one handler per
 * opcode and side), srqud_zengine.c does the verbs. Whether a transfer
 * uses zero-copy at all is decided in srqud_rma.c.
 *
 * The initiator drives: an answer that does not come within the
 * retransmission timeout makes it ask again. A transfer whose peer is gone
 * fails with its endpoint and returns its pool QP.
 */

#ifndef UCT_SRQUD_ZCOPY_H_
#define UCT_SRQUD_ZCOPY_H_

#include "srqud_chunk.h"
#include "srqud_ep.h"
#include "srqud_zengine.h"


/* A get whose chunks stopped landing for this many RTO_MAX goes the copy
 * path (rounds end by RTO_MAX when their ZFIN is lost: a few of them) */
#define UCT_SRQUD_ZCOPY_STALL_RTOS 4

/* Smallest chunk a peer may ask for: the smallest path MTU. The chunk
 * bitmaps of a transfer are the receiving side's memory, 1/4 of its
 * length with a chunk of one byte. */
#define UCT_SRQUD_ZCOPY_MIN_CHUNK  UCT_SRQUD_MIN_MTU


/* The copy path that takes over a transfer: a put whose sink has no pool
 * QP free, a get whose chunks stopped arriving */
typedef void (*uct_srqud_zcopy_fallback_t)(uct_srqud_iface_t *iface,
                                           uct_srqud_ep_t *ep, int is_get,
                                           void *buffer, size_t length,
                                           uint64_t remote_addr, uint32_t rkey,
                                           uct_completion_t *comp);


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
    uct_srqud_memh_t         *region;   /* responder: the registration the
                                           peer named, checked */
    /* sink */
    uct_srqud_pool_qp_t      *pqp;
    uct_srqud_chunk_rx_t     rx;
    uint32_t                 round_posted;   /* receives the round asked for */
    uint32_t                 round_done;     /* of them completed */
    uint32_t                 round_sent;     /* ZFIN: the source sent */
    uct_srqud_chunk_wnd_t    wnd;            /* receives a round asks for */
    /* source */
    uint32_t                 remote_qpn;     /* the sink's pool QP */
    uct_srqud_zsend_job_t    job;
    ucs_time_t               last_activity;
    ucs_time_t               progress_time;  /* sink: last chunk in place */
    uint32_t                 rx_progress_count; /* valid chunks then */
    uct_srqud_zcopy_fallback_t fallback;    /* initiator: the copy path */
};


/* ------------------------------------------------------------------------
 * For the interface and the protocol table
 */

ucs_status_t uct_srqud_zcopy_init(uct_srqud_iface_t *iface);

void uct_srqud_zcopy_cleanup(uct_srqud_iface_t *iface);

/* Chunk completions, rounds and timers; from the user's progress */
unsigned uct_srqud_zcopy_progress(uct_srqud_iface_t *iface);

/* From the async thread: chunk sends of peers' gets, peers' puts */
unsigned uct_srqud_zcopy_async_progress(uct_srqud_iface_t *iface);

/* Nothing in progress (flush, event_arm) */
int uct_srqud_zcopy_idle(uct_srqud_iface_t *iface);

/* The ep failed or goes away: its transfers end with @a status */
void uct_srqud_zcopy_ep_cleanup(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                ucs_status_t status);

/* The ep is freed: transfers still sending let go of it */
void uct_srqud_zcopy_ep_release(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep);

/* A get that cannot go on by zero copy: the rest by the copy path */
void uct_srqud_zcopy_get_fallback(uct_srqud_iface_t *iface,
                                  uct_srqud_xfer_t *xfer, const char *why);


/* Transfers this side serves for a peer (counted per ep: a peer's share is
 * UCX_SRQUD_ZCOPY_PEER_JOBS; all peers' together at most 16 shares, since
 * one host may open many connections) */
#define UCT_SRQUD_ZCOPY_SERVED_SHARES 16

static inline int uct_srqud_zcopy_may_serve(const uct_srqud_iface_t *iface,
                                            const uct_srqud_ep_t *ep)
{
    return (ep->peer.xfers < iface->config.zcopy_peer_jobs) &&
           (iface->zcopy.served < UCT_SRQUD_ZCOPY_SERVED_SHARES *
                                  iface->config.zcopy_peer_jobs);
}


static inline int uct_srqud_zcopy_serves_peer(const uct_srqud_xfer_t *xfer)
{
    return (xfer->type == UCT_SRQUD_XFER_GET_SOURCE) ||
           (xfer->type == UCT_SRQUD_XFER_PUT_SINK);
}

/**
 * Start a get_zcopy or put_zcopy of registered memory.
 * @return UCS_INPROGRESS, or UCS_ERR_BUSY when zero-copy cannot take it
 *         (disabled, no pool QP free for a get, too many chunks): the
 *         caller takes the copy path. A put's sink without a free pool QP
 *         is answered later: then @a fallback takes it over.
 */
ucs_status_t uct_srqud_zcopy_start(uct_srqud_iface_t *iface,
                                   uct_srqud_ep_t *ep, int is_get,
                                   void *buffer, size_t length, uint32_t lkey,
                                   uint64_t remote_addr, uint32_t rkey,
                                   uct_completion_t *comp,
                                   uct_srqud_zcopy_fallback_t fallback);

/* Handlers of the control routes (srqud_zcopy_rx.c) */
void uct_srqud_zcopy_rx_zget(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             const void *payload, size_t length);

void uct_srqud_zcopy_rx_zput(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             const void *payload, size_t length);

void uct_srqud_zcopy_rx_zfin_put(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 const void *payload, size_t length);

void uct_srqud_zcopy_rx_zfin_get(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 const void *payload, size_t length);

void uct_srqud_zcopy_rx_zcts(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             const void *payload, size_t length);

void uct_srqud_zcopy_rx_zack(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             const void *payload, size_t length);


/* Is anything of zero-copy going on (a cheap test for the progress loop) */
static UCS_F_ALWAYS_INLINE int uct_srqud_zcopy_active(uct_srqud_iface_t *iface)
{
    return !ucs_list_is_empty(&iface->zcopy.xfers) ||
           !ucs_queue_is_empty(&iface->zcopy.jobs) ||
           (iface->zcopy.marker_count != 0);
}


/* ------------------------------------------------------------------------
 * Within zero-copy: transfers (srqud_zcopy.c) for the handlers
 */

uct_srqud_xfer_t*
uct_srqud_zcopy_xfer_new(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                         uint8_t type, uint32_t id);

uct_srqud_xfer_t*
uct_srqud_zcopy_xfer_find(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                          uint8_t type, uint32_t id);

void uct_srqud_zcopy_xfer_free(uct_srqud_iface_t *iface,
                               uct_srqud_xfer_t *xfer);

/* The end of an initiator's transfer: the user's completion */
void uct_srqud_zcopy_finish(uct_srqud_iface_t *iface, uct_srqud_xfer_t *xfer,
                            ucs_status_t status);

/* Sink: post and ask for the next round */
void uct_srqud_zcopy_next_round(uct_srqud_iface_t *iface,
                                uct_srqud_xfer_t *xfer);

/* The receives posted on the sink's QP, as ranges after @a hdr */
size_t uct_srqud_zcopy_encode_order(uct_srqud_iface_t *iface,
                                    uct_srqud_xfer_t *xfer,
                                    uct_srqud_zhdr_t *hdr,
                                    uct_srqud_zrange_t *ranges);

/* An answer without the round machinery (errors, ZACK) */
void uct_srqud_zcopy_send_status(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 uint8_t ctl, uint32_t id, uint16_t round,
                                 ucs_status_t status);

/* Initiator of a put: ZPUT, then ZFIN for each round */
ucs_status_t uct_srqud_zcopy_put_request(uct_srqud_iface_t *iface,
                                         uct_srqud_xfer_t *xfer);

/* A put's sink is complete or failed: a record stays to answer repeats */
void uct_srqud_zcopy_done_record(uct_srqud_iface_t *iface,
                                 uct_srqud_xfer_t *xfer);

#endif
