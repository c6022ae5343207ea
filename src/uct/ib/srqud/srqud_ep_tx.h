/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * An endpoint's send primitives (srqud_ep_tx.c) and the checks every
 * operation makes first (inline: the fast path).
 */

#ifndef UCT_SRQUD_EP_TX_H_
#define UCT_SRQUD_EP_TX_H_

#include "srqud_rel.h"
#include "srqud_tx.h"
#include "srqud_ep.h"


/* The first packet in the window of an ep not ACTIVE (the caller tests
 * the flag): its timers start, and it joins the active list */
void uct_srqud_ep_tx_activate(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep);

/* A descriptor for a reliable control packet that asks for an ack */
uct_srqud_send_desc_t*
uct_srqud_ep_tx_ctl_desc(uct_srqud_iface_t *iface, uint8_t ctl);

/* An unreliable control packet without payload (ACK, NACK, CREP) */
ucs_status_t uct_srqud_ep_tx_ctl(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 uint8_t ctl, int flags);

/* Ask the peer to acknowledge now (an active ep) */
ucs_status_t uct_srqud_ep_request_ack(uct_srqud_iface_t *iface,
                                      uct_srqud_ep_t *ep);

/* An acknowledgement (ACK, NACK or CREP) of a passive ep, with the
 * selective part when it holds packets ahead of a gap */
ucs_status_t uct_srqud_ep_tx_ack(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 uint8_t ctl);

/* The CREQ, first packet of an active ep */
ucs_status_t uct_srqud_ep_tx_creq(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep);

/* Control packets with a payload, for the RMA and zero-copy protocols: a
 * reliable request over the ep's window, or an unreliable answer */
ucs_status_t uct_srqud_ep_tx_request(uct_srqud_iface_t *iface,
                                     uct_srqud_ep_t *ep, uint8_t ctl,
                                     const void *hdr, size_t hdr_len,
                                     const void *data, size_t data_len);

ucs_status_t uct_srqud_ep_tx_answer(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep, uint8_t ctl,
                                    const void *hdr, size_t hdr_len,
                                    const void *data, size_t data_len);

/* What a passive ep's packets acknowledge: all it accepted, or less while
 * a refused put's ack is held (srqud_rma_refusal.c) */
uct_srqud_psn_t uct_srqud_ep_tx_ack_limit(const uct_srqud_ep_t *ep);

/* An answer that acknowledges up to @a ack_psn: a refused put's refusal,
 * past the ep's held ack limit */
ucs_status_t uct_srqud_ep_tx_answer_acking(uct_srqud_iface_t *iface,
                                           uct_srqud_ep_t *ep, uint8_t ctl,
                                           uct_srqud_psn_t ack_psn,
                                           const void *hdr, size_t hdr_len);

/* An unreliable control packet from an active ep to its peer's passive ep,
 * outside the sequence (RMA_SEEN) */
ucs_status_t uct_srqud_ep_tx_notice(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep, uint8_t ctl,
                                    const void *hdr, size_t hdr_len);



/* May the ep put one more packet on the wire: fewer than the send window
 * unacknowledged. The congestion window paces retransmissions only (see
 * srqud_sr.h): gating new sends with it too made a peer's death fill UCP's
 * pending queues, whose requests UCX 1.13's protocols v2 cannot abort
 * (ucs_empty_function_do_assert, the peer_failure check) */
static UCS_F_ALWAYS_INLINE int
uct_srqud_ep_tx_window_open(const uct_srqud_iface_t *iface,
                            const uct_srqud_ep_t *ep)
{
    return uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked) <
           iface->config.tx_window;
}


/* ... and the window for a user's operation, which may take AM_PACKETS
 * packets (see uct_srqud_tx_user_resources) */
static UCS_F_ALWAYS_INLINE int
uct_srqud_ep_tx_user_window_open(const uct_srqud_iface_t *iface,
                                 const uct_srqud_ep_t *ep)
{
    return uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked) +
           iface->config.am_packets <= iface->config.tx_window;
}


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


/* Can the ep send one reliable packet (two if the CREQ is still due)?
 * Sends the CREQ first when needed. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srqud_ep_tx_check(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    if (ucs_unlikely(ep->flags & UCT_SRQUD_EP_FLAG_FAILED)) {
        return ep->fail_status;
    }

    if (!uct_srqud_tx_has_resources(iface) ||
        !uct_srqud_ep_tx_window_open(iface, ep)) {
        UCS_STATS_UPDATE_COUNTER(ep->super.stats, UCT_EP_STAT_NO_RES, 1);
        return UCS_ERR_NO_RESOURCE;
    }

    if (ucs_likely(ep->flags & UCT_SRQUD_EP_FLAG_CREQ_SENT)) {
        return UCS_OK;
    }
    return uct_srqud_ep_tx_creq(iface, ep);
}


/* The same for a user's new operation, which must also wait behind the
 * ep's pending requests and an unfinished fence, and have room for the
 * most packets one takes once the CREQ is out */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srqud_ep_tx_user_check(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    ucs_status_t status;

    if (ucs_unlikely(uct_srqud_ep_user_must_wait(ep))) {
        UCS_STATS_UPDATE_COUNTER(ep->super.stats, UCT_EP_STAT_NO_RES, 1);
        return UCS_ERR_NO_RESOURCE;
    }

    status = uct_srqud_ep_tx_check(iface, ep);
    if (ucs_likely(status == UCS_OK) &&
        ucs_unlikely(!uct_srqud_tx_user_resources(iface) ||
                     !uct_srqud_ep_tx_user_window_open(iface, ep))) {
        UCS_STATS_UPDATE_COUNTER(ep->super.stats, UCT_EP_STAT_NO_RES, 1);
        return UCS_ERR_NO_RESOURCE;
    }
    return status;
}


/* Put a filled reliable packet into the window and send it. Inline: every
 * message's path, a call and its saved registers fewer a send */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srqud_ep_tx_reliable(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                         uct_srqud_send_desc_t *desc)
{
    uct_srqud_neth_t *neth = uct_srqud_tx_desc_neth(desc);
    ucs_status_t status;

    neth->magic      = UCT_SRQUD_MAGIC;
    neth->flags     |= UCT_SRQUD_PACKET_FLAG_REL;
    neth->dest_ep_id = ep->dest_ep_id;
    neth->src_ep_id  = ep->ep_id;
    neth->psn        = ep->tx.next;
    neth->ack_psn    = 0;
    neth->token      = ep->token;
    /* ask for an ack when half the window is used, so the window never
     * waits for the receiver's progress loop */
    if (uct_srqud_tx_in_flight(ep->tx.next, ep->tx.acked) ==
        iface->config.tx_window / 2) {
        neth->flags |= UCT_SRQUD_PACKET_FLAG_ACK_REQ;
    }
    desc->flags          = UCT_SRQUD_DESC_FLAG_IN_WINDOW;
    /* before the post: a QP found failed marks the slot lost there */
    desc->slot.psn       = ep->tx.next;
    desc->slot.sacked    = 0;
    desc->slot.resends   = 0;
    desc->slot.passed    = 0;
    desc->slot.lost      = 0;
    desc->slot.acked     = 0;
    desc->slot.send_time = ucs_get_time();

    status = uct_srqud_tx_post_send(iface, ep->ah, ep->dest_qpn, desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    ++ep->tx.next;
    ucs_queue_push(&ep->tx.window, &desc->slot.elem);
    if (!(ep->flags & UCT_SRQUD_EP_FLAG_ACTIVE)) {
        uct_srqud_ep_tx_activate(iface, ep);
    }
    return UCS_OK;
}

#endif
