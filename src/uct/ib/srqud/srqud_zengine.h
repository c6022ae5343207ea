/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The send engine of zero-copy transfers (the protocol is srqud_zcopy.c):
 *  - the chunk send QP, on which jobs (lists of chunks of registered
 *    memory) are posted in order as IBV_WR_SEND_WITH_IMM, in lists of up
 *    to 32 per ibv_post_send, one signaled send in
 *    UCT_SRQUD_ZSEND_SIGNAL_EVERY, its completion freeing the slots of the
 *    unsignaled ones before it;
 *  - the pool of receive QPs (each with its own receive queue and CQ, not
 *    the SRQ), one bound to each transfer this side receives, on which the
 *    destination buffer is posted chunk by chunk behind 40 bytes of GRH
 *    scratch.
 * Every verbs call of zero-copy is in this file.
 */

#ifndef UCT_SRQUD_ZENGINE_H_
#define UCT_SRQUD_ZENGINE_H_

#include "srqud_iface.h"


/* The send QP, the pool and the scratch buffer (nothing with ZCOPY_QPS=0) */
ucs_status_t uct_srqud_zengine_init(uct_srqud_iface_t *iface);

/* Destroy every QP: nothing is in flight after this */
void uct_srqud_zengine_stop(uct_srqud_iface_t *iface);

/* The rest, after stop and after the transfers are gone */
void uct_srqud_zengine_cleanup(uct_srqud_iface_t *iface);

/* A pool QP for a transfer, created on first use; NULL if all are busy */
uct_srqud_pool_qp_t*
uct_srqud_zengine_pool_get(uct_srqud_iface_t *iface, uct_srqud_xfer_t *xfer);

/* Back to the pool; with receives still @a posted (they name the
 * transfer's buffer, about to go back to its user) the QP is destroyed */
void uct_srqud_zengine_pool_put(uct_srqud_iface_t *iface,
                                uct_srqud_pool_qp_t *pqp, int posted);

/* Post receives for @a chunks of a buffer on a pool QP */
ucs_status_t uct_srqud_zengine_post_recvs(uct_srqud_iface_t *iface,
                                          uct_srqud_pool_qp_t *pqp,
                                          uint64_t base, uint64_t length,
                                          uint32_t chunk, uint32_t lkey,
                                          const uint32_t *chunks, uint32_t n);

/* Receive completions of a pool QP */
int uct_srqud_zengine_poll(uct_srqud_pool_qp_t *pqp, struct ibv_wc *wcs,
                           int max);

/* Queue a job; posting starts with the next uct_srqud_zengine_send() */
void uct_srqud_zengine_submit(uct_srqud_iface_t *iface,
                              uct_srqud_zsend_job_t *job);

/* Post what fits on the chunk send QP, job after job in order */
unsigned uct_srqud_zengine_send(uct_srqud_iface_t *iface);

/* Chunk send completions: slots back, drained jobs called back */
unsigned uct_srqud_zengine_send_completions(uct_srqud_iface_t *iface);

/* Take a job that is still queued off the queue (its transfer ends) */
void uct_srqud_zengine_job_dequeue(uct_srqud_iface_t *iface,
                                   uct_srqud_zsend_job_t *job);


/* The pool QP as the sink names it to the source: generation and number */
static inline uint32_t uct_srqud_zengine_pool_qpn(const uct_srqud_pool_qp_t *pqp)
{
    return ((uint32_t)pqp->gen << UCT_SRQUD_ZCOPY_TAG_SHIFT) | pqp->qp->qp_num;
}

/* The chunk QP reset: every posted send is gone (the device reads none of
 * their memory any more) and counted done; the sinks ask again for what
 * they miss. After a failed send, and when an ep goes with sends of its
 * transfers still posted. */
void uct_srqud_zengine_recover(uct_srqud_iface_t *iface, int failed);

#endif
