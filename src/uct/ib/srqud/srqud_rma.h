/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * RMA over UD. UD has no RDMA, so:
 *  - put_short / put_bcopy are one reliable RMA_PUT packet; the peer checks
 *    (address, rkey) against its md's registry and copies the bytes in when
 *    it accepts the packet, so a flush (acknowledgement) means the data is
 *    in place. A refused put is answered, and its acknowledgement travels
 *    only with that answer (srqud_rma_refusal.c): the next flush of the ep
 *    completes with the error, always.
 *  - get_bcopy is a reliable RMA_GET; the peer answers the bytes
 *    (RMA_REPLY, unreliable; asked again after a timeout).
 *  - get_zcopy / put_zcopy: this file decides. From UCX_SRQUD_ZCOPY_THRESH
 *    the zero-copy protocol of srqud_zcopy.c; below it, or when no pool QP
 *    is free (here, or at a put's sink: the fallback this file hands to
 *    the zero-copy protocol), the same RMA_GET / RMA_PUT packets carry it
 *    in MTU fragments ("copy path"): never a failure for lack of a
 *    zero-copy resource.
 */

#ifndef UCT_SRQUD_RMA_H_
#define UCT_SRQUD_RMA_H_

#include "srqud_ep.h"


/* An operation on the copy path */
typedef struct uct_srqud_rma_op {
    ucs_list_link_t          list;       /* iface->rma_ops */
    uct_srqud_ep_t           *ep;
    uint32_t                 id;
    uint8_t                  is_get;
    ucs_status_t             status;
    uct_completion_t         *comp;
    uct_unpack_callback_t    unpack_cb;  /* get_bcopy */
    void                     *unpack_arg;
    uint8_t                  *local;     /* get: destination, put: source */
    uint64_t                 remote_addr;
    uint32_t                 rkey;
    size_t                   length;
    uint32_t                 frag_size;
    uint32_t                 nfrags;
    uint32_t                 next;       /* next fragment to send / ask */
    uint32_t                 received;   /* get: fragments in */
    uint64_t                 *got;       /* get: bitmap of fragments in */
    ucs_time_t               asked_time; /* get: last request */
} uct_srqud_rma_op_t;


ucs_status_t uct_srqud_rma_put_short(uct_ep_h tl_ep, const void *buffer,
                                     unsigned length, uint64_t remote_addr,
                                     uct_rkey_t rkey);

ssize_t uct_srqud_rma_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                void *arg, uint64_t remote_addr,
                                uct_rkey_t rkey);

ucs_status_t uct_srqud_rma_get_bcopy(uct_ep_h tl_ep,
                                     uct_unpack_callback_t unpack_cb, void *arg,
                                     size_t length, uint64_t remote_addr,
                                     uct_rkey_t rkey, uct_completion_t *comp);

ucs_status_t uct_srqud_rma_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                     size_t iovcnt, uint64_t remote_addr,
                                     uct_rkey_t rkey, uct_completion_t *comp);

ucs_status_t uct_srqud_rma_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                     size_t iovcnt, uint64_t remote_addr,
                                     uct_rkey_t rkey, uct_completion_t *comp);

/* Handlers of the control routes (srqud_proto.c): a peer's RMA_PUT and
 * RMA_GET, accepted in order on its passive ep; the RMA_REPLY to this
 * side's request, on the active ep that asked */
void uct_srqud_rma_rx_put(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                          const void *payload, size_t length);

void uct_srqud_rma_rx_get(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                          const void *payload, size_t length);

void uct_srqud_rma_rx_reply(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                            const void *payload, size_t length);

/* The initiator (srqud_rma.c): a peer's RMA_REFUSE, which fails the put
 * still sending or the flush that reports it, answered by RMA_SEEN */
void uct_srqud_rma_rx_refuse(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             const void *payload, size_t length);

/* Copy-path operations: send what waits for resources, ask again */
unsigned uct_srqud_rma_progress(uct_srqud_iface_t *iface, ucs_time_t now);

/* The ep failed or goes away: its copy-path operations end */
void uct_srqud_rma_ep_cleanup(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                              ucs_status_t status);

#endif
