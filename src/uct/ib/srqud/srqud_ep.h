/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * srqud endpoint. An endpoint created by the user ("active") sends; the
 * first packet it sends is a CREQ carrying its id, on which the receiving
 * interface creates an internal "passive" endpoint for that sender. The
 * passive endpoint delivers in order and acknowledges; its CREP tells the
 * active one the passive id, which later packets address directly.
 *
 * Per peer: the endpoint structure, an address handle shared per remote
 * port, and only the packets in flight. No receive resources.
 */

#ifndef UCT_SRQUD_EP_H_
#define UCT_SRQUD_EP_H_

#include "srqud_iface.h"
#include "srqud_rel.h"


enum {
    UCT_SRQUD_EP_FLAG_PASSIVE    = UCS_BIT(0), /* created for a remote sender */
    UCT_SRQUD_EP_FLAG_CREQ_SENT  = UCS_BIT(1),
    UCT_SRQUD_EP_FLAG_CONNECTED  = UCS_BIT(2), /* knows the remote ep id */
    UCT_SRQUD_EP_FLAG_FAILED     = UCS_BIT(3),
    UCT_SRQUD_EP_FLAG_ACK_QUEUED = UCS_BIT(4), /* in iface->rx.ack_list */
    UCT_SRQUD_EP_FLAG_ACTIVE     = UCS_BIT(5), /* in iface->tx.active_list */
    UCT_SRQUD_EP_FLAG_CREP_DUE   = UCS_BIT(6), /* passive: CREP not yet sent */
    UCT_SRQUD_EP_FLAG_ACK_NOW    = UCS_BIT(7), /* the queued ack may not wait */
    UCT_SRQUD_EP_FLAG_LINGER     = UCS_BIT(8), /* destroyed by the user, kept
                                                  until its data is acked */
    UCT_SRQUD_EP_FLAG_CONN_SN    = UCS_BIT(9), /* passive: conn_sn is known */
    UCT_SRQUD_EP_FLAG_IN_PENDING = UCS_BIT(10),/* one of its pending requests
                                                 is being dispatched */
    UCT_SRQUD_EP_FLAG_FENCED     = UCS_BIT(11) /* a fence waits for ops */
};


/* Flush waiting for the acknowledgement of a psn (and for the ep's RMA
 * operations) */
typedef struct uct_srqud_ep_flush {
    ucs_queue_elem_t         queue;
    uct_srqud_psn_t          psn;
    uint8_t                  wait_ops;  /* posted while operations ran: their
                                           later packets count too */
    uct_completion_t         *comp;
} uct_srqud_ep_flush_t;


typedef struct uct_srqud_ep {
    uct_base_ep_t            super;
    struct ibv_ah            *ah;
    uint32_t                 dest_qpn;
    uint32_t                 ep_id;        /* index in iface->eps */
    uint32_t                 dest_ep_id;   /* remote id, or EP_ID_NONE */
    /* Incarnation: an active ep's number, sent in its CREQ; a passive ep
     * keeps its peer's. An ep id is reused after its ep is gone, so a CREQ
     * with another number from the same (address, ep id) starts over. */
    uint32_t                 conn_sn;
    uint32_t                 flags;        /* UCT_SRQUD_EP_FLAG_xx */
    ucs_status_t             fail_status;  /* with FLAG_FAILED */
    ucs_status_t             rma_status;   /* a refused put, for the next
                                              flush */
    uint32_t                 ops;          /* RMA / zero-copy operations in
                                              progress (flush waits) */
    uint32_t                 flushes_wait_ops; /* flushes with wait_ops */
    uint32_t                 rma_refused_op; /* the last one reported */
    struct {
        uct_srqud_psn_t      next;         /* psn of the next packet */
        uct_srqud_psn_t      acked;        /* last acknowledged psn */
        ucs_queue_head_t     window;       /* unacknowledged descs, psn order */
        ucs_queue_head_t     flushes;      /* uct_srqud_ep_flush_t */
        ucs_time_t           progress_time;/* last new ack (or first send) */
        ucs_time_t           resend_time;  /* last (re)send of the window */
        ucs_time_t           rto;          /* current retransmission timeout */
        ucs_list_link_t      active_list;  /* in iface->tx.active_list */
    } tx;
    struct {
        uct_srqud_psn_t      expected;     /* next psn to deliver */
        unsigned             unacked;      /* delivered since the last ack */
        ucs_time_t           nack_time;    /* when the last NACK went out */
        ucs_time_t           ack_time;     /* when the owed ack was queued */
        ucs_list_link_t      ack_list;     /* in iface->rx.ack_list */
    } rx;
    ucs_arbiter_group_t      arb_group;    /* pending requests */
    uct_srqud_peer_key_t     peer_key;     /* passive: key in iface->peers */
} uct_srqud_ep_t;


UCS_CLASS_DECLARE_NEW_FUNC(uct_srqud_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_srqud_ep_t, uct_ep_t);

/* uct_ep_create / uct_ep_destroy (which lingers, see srqud_ep.c) */
ucs_status_t uct_srqud_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);

void uct_srqud_ep_destroy(uct_ep_h tl_ep);


ucs_status_t uct_srqud_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t hdr,
                                   const void *buffer, unsigned length);

ucs_status_t uct_srqud_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                       const uct_iov_t *iov, size_t iovcnt);

ssize_t uct_srqud_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                              uct_pack_callback_t pack_cb, void *arg,
                              unsigned flags);

ucs_status_t uct_srqud_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                   const void *header, unsigned header_length,
                                   const uct_iov_t *iov, size_t iovcnt,
                                   unsigned flags, uct_completion_t *comp);

ucs_status_t uct_srqud_ep_check(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp);

ucs_status_t uct_srqud_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                      unsigned flags);

void uct_srqud_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                                void *arg);

ucs_status_t uct_srqud_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp);

ucs_arbiter_cb_result_t
uct_srqud_ep_dispatch_pending(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                              ucs_arbiter_elem_t *elem, void *arg);

/* Control packets with a payload, for the RMA and zero-copy protocols: a
 * reliable request over the ep's window, or an unreliable answer */
ucs_status_t uct_srqud_ep_send_request(uct_srqud_iface_t *iface,
                                       uct_srqud_ep_t *ep, uint8_t ctl,
                                       const void *hdr, size_t hdr_len,
                                       const void *data, size_t data_len);

ucs_status_t uct_srqud_ep_send_answer(uct_srqud_iface_t *iface,
                                      uct_srqud_ep_t *ep, uint8_t ctl,
                                      const void *hdr, size_t hdr_len,
                                      const void *data, size_t data_len);

/* A new operation must not overtake requests the user queued on the ep's
 * pending group: UCP relies on it for ordering, and its flushes count on
 * everything queued before them being sent before they complete. The
 * request being dispatched is the exception: it is the head. */
static inline int uct_srqud_ep_queued_ahead(const uct_srqud_ep_t *ep)
{
    return !ucs_arbiter_group_is_empty((ucs_arbiter_group_t*)&ep->arb_group) &&
           !(ep->flags & UCT_SRQUD_EP_FLAG_IN_PENDING);
}


/* After a fence, the ep's new operations wait until those before it are
 * done: copy-path ones all sent (then the ordered stream applies them in
 * order), zero-copy ones acknowledged by the sink */
static inline int uct_srqud_ep_user_must_wait(const uct_srqud_ep_t *ep)
{
    /* a failed ep answers with its error at once, whatever waits */
    return !(ep->flags & UCT_SRQUD_EP_FLAG_FAILED) &&
           (uct_srqud_ep_queued_ahead(ep) ||
            ((ep->flags & UCT_SRQUD_EP_FLAG_FENCED) && (ep->ops > 0)));
}


/* RMA / zero-copy operations of an ep: a flush completes after them */
static inline void uct_srqud_ep_op_start(uct_srqud_ep_t *ep)
{
    ++ep->ops;
}

void uct_srqud_ep_op_done(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep);

/* Later operations of the ep wait until the current ones are done */
void uct_srqud_ep_fence_locked(uct_srqud_ep_t *ep);

ucs_status_t uct_srqud_ep_fence(uct_ep_h tl_ep, unsigned flags);

/* @a comp completes when what the ep sent so far is acknowledged (with
 * the error of a refused put, if any) */
ucs_status_t uct_srqud_ep_add_rma_flush(uct_srqud_iface_t *iface,
                                        uct_srqud_ep_t *ep,
                                        uct_completion_t *comp);

/* Flush of every endpoint of the interface (called locked) */
ucs_status_t uct_srqud_iface_flush_eps(uct_srqud_iface_t *iface,
                                       uct_completion_t *comp);

/* Receive path: a checked packet for this interface */
void uct_srqud_ep_rx_packet(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc,
                            const struct ibv_wc *wc, uct_srqud_neth_t *neth,
                            size_t payload_len);

/* Send acknowledgements owed by passive endpoints: the urgent ones, and
 * those delayed for UCX_SRQUD_ACK_DELAY by @a now (all of them if @a now is
 * UCS_TIME_INFINITY) */
void uct_srqud_iface_send_acks(uct_srqud_iface_t *iface, ucs_time_t now);

/* Ask the peer of every endpoint with unacknowledged packets to ack now */
void uct_srqud_ep_request_ack(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep);

/* Retransmission timers and peer failure detection */
void uct_srqud_iface_check_timers(uct_srqud_iface_t *iface, ucs_time_t now);

/* A packet for an active ep that the async timer queued */
void uct_srqud_ep_rx_active(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                            const uct_srqud_neth_t *neth, const void *payload,
                            size_t payload_len);

/* Send completion of a descriptor */
void uct_srqud_send_desc_completed(uct_srqud_iface_t *iface,
                                   uct_srqud_send_desc_t *desc);

/* Free an ep at interface close (passive and lingering ones) */
void uct_srqud_ep_destroy_internal(uct_srqud_ep_t *ep);

#endif
