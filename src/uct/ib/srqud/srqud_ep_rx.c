/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The receive side of endpoints: which ep a packet is for (creating the
 * passive ep of a new sender), in-order acceptance and acknowledgement on
 * passive eps, acknowledgements and answers on active eps. Control packets
 * of the protocols above are routed by the table of srqud_proto.c.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_ep_tx.h"
#include "srqud_ep_rx.h"
#include "srqud_back_ack.h"
#include "srqud_ep.h"
#include "srqud_dev.h"
#include "srqud_proto.h"
#include "srqud_rx.h"
#include "srqud_rx_chain.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>



/*
 * Every host on the fabric can send a CREQ, so passive eps are bounded
 * (UCX_SRQUD_PASSIVE_MAX): at the bound, a new peer takes the place of a
 * passive ep that heard nothing for PASSIVE_IDLE, or for 4 x RTO_MAX if it
 * never heard more than its CREQ (a real peer's first data follows its
 * CREQ within a retransmission timeout; a forged request's never comes).
 * The reaper looks at a few eps per request in a round over all of them
 * (the clock algorithm): one heard since its last look goes to the back
 * with its clock reset, so a look costs no time stamp per packet and a
 * flood of requests no scan of every ep.
 */
#define UCT_SRQUD_PASSIVE_REAP_LOOKS  32

static int uct_srqud_ep_rx_reap(uct_srqud_iface_t *iface)
{
    ucs_time_t now = ucs_get_time();
    uct_srqud_ep_t *ep;
    ucs_time_t idle;
    unsigned n;

    for (n = 0; (n < UCT_SRQUD_PASSIVE_REAP_LOOKS) &&
                (n < iface->passive.count); ++n) {
        ep = ucs_list_head(&iface->passive.list, uct_srqud_ep_t, peer.list);
        ucs_list_del(&ep->peer.list);
        ucs_list_add_tail(&iface->passive.list, &ep->peer.list);
        if (ep->flags & UCT_SRQUD_EP_FLAG_HEARD) {
            ep->flags          &= ~UCT_SRQUD_EP_FLAG_HEARD;
            ep->peer.idle_since = now;
            continue;
        }
        idle = (ep->flags & UCT_SRQUD_EP_FLAG_ESTABLISHED) ?
               iface->config.passive_idle : 4 * iface->config.rto_max;
        /* zero-copy transfers it serves are its peer's work in progress */
        if ((uct_srqud_time_since(now, ep->peer.idle_since) < idle) ||
            (ep->peer.xfers > 0)) {
            continue;
        }
        ucs_debug("%s: passive ep %p id %u of qpn 0x%x ep %u idle: reaped",
                  iface->md->name, ep, ep->ep_id, ep->dest_qpn,
                  ep->dest_ep_id);
        ++iface->stats.passive_reaped;
        uct_srqud_ep_free(ep);
        return 1;
    }
    return 0;
}


static uct_srqud_ep_t*
uct_srqud_ep_rx_create_passive(uct_srqud_iface_t *iface,
                               const uct_srqud_peer_key_t *key, uint16_t slid,
                               uint32_t token)
{
    uct_srqud_device_addr_t dev_addr;
    uct_srqud_iface_addr_t iface_addr;
    uct_ep_params_t params;
    uct_srqud_ep_t *ep;
    uct_ep_h tl_ep;
    khiter_t it;
    int ret;

    if ((iface->passive.count >= iface->config.passive_max) &&
        !uct_srqud_ep_rx_reap(iface)) {
        ++iface->stats.passive_refused;
        return NULL;
    }

    dev_addr.flags = iface->is_roce ? UCT_SRQUD_ADDR_FLAG_ETH : 0;
    dev_addr.lid   = slid;
    memcpy(dev_addr.gid, key->gid, sizeof(dev_addr.gid));
    uct_srqud_pack_qpn(iface_addr.qp_num, key->qpn);

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = &iface->super.super;
    params.dev_addr   = (const uct_device_addr_t*)&dev_addr;
    params.iface_addr = (const uct_iface_addr_t*)&iface_addr;
    if (UCS_CLASS_NEW_FUNC_NAME(uct_srqud_ep_t)(&params, &tl_ep) != UCS_OK) {
        return NULL;
    }

    ep              = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    ep->flags      |= UCT_SRQUD_EP_FLAG_PASSIVE | UCT_SRQUD_EP_FLAG_CREP_DUE;
    ep->dest_ep_id  = key->ep_id;
    ep->peer_key    = *key;
    ep->token       = token;
    ep->peer.idle_since = ucs_get_time();
    ucs_list_add_tail(&iface->passive.list, &ep->peer.list);
    ++iface->passive.count;
    ++iface->stats.passive_eps;

    /* a new incarnation of a known peer ep takes the key over; the old
     * passive ep keeps its connection (its id and token) until reaped */
    it = kh_put(uct_srqud_peer, &iface->peers, *key, &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        uct_srqud_ep_free(ep);
        return NULL;
    }
    kh_value(&iface->peers, it) = ep;

    ucs_debug("%s: passive ep %p id %u for qpn 0x%x ep %u", iface->md->name,
              ep, ep->ep_id, key->qpn, key->ep_id);
    return ep;
}


/* A CREQ of another incarnation than the one @a ep has: the peer's ep id
 * was reused after its ep went */
static int uct_srqud_ep_rx_new_incarnation(uct_srqud_iface_t *iface,
                                           const uct_srqud_ep_t *ep,
                                           uct_srqud_recv_desc_t *desc,
                                           size_t payload_len)
{
    uint32_t conn_sn;

    if (!(ep->flags & UCT_SRQUD_EP_FLAG_CONN_SN) ||
        (payload_len < sizeof(conn_sn))) {
        return 0;
    }
    memcpy(&conn_sn, uct_srqud_rx_payload(iface, desc), sizeof(conn_sn));
    return conn_sn != ep->conn_sn;
}


/*
 * Does the packet carry its connection's token? A host that forges the
 * peer's address can only guess it: a connection takes at most
 * UCT_SRQUD_TOKEN_GUESSES_MAX wrong ones, so that a guess succeeds with a
 * chance below 2^-16. Beyond, it ends as a peer's reset would: a passive
 * ep goes (its peer's next packets find no ep, and its ep times out), an
 * active one fails (the user reconnects, with a new token). On the async
 * thread, which must not call the user, the next wrong token in the user's
 * progress ends it.
 */
static int uct_srqud_ep_rx_token_ok(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep,
                                    const uct_srqud_neth_t *neth)
{
    if (ucs_likely(neth->token == ep->token)) {
        return 1;
    }
    ++iface->stats.rx_bad_token;
    if ((++ep->peer.bad_tokens < UCT_SRQUD_TOKEN_GUESSES_MAX) ||
        (ep->flags & UCT_SRQUD_EP_FLAG_FAILED)) {
        return 0;
    }
    if (uct_srqud_iface_log_allowed(iface)) {
        ucs_diag("%s: ep %p to qpn 0x%x: %u packets with a wrong token, "
                 "the connection ends (%lu more since the last report)",
                 iface->md->name, ep, ep->dest_qpn, ep->peer.bad_tokens,
                 iface->log_suppressed);
        iface->log_suppressed = 0;
    }
    if (ep->flags & UCT_SRQUD_EP_FLAG_PASSIVE) {
        ++iface->stats.token_resets;
        uct_srqud_ep_free(ep);
    } else if (!iface->async.active) {
        ++iface->stats.token_resets;
        uct_srqud_ep_set_failed(iface, ep, UCS_ERR_CONNECTION_RESET);
    }
    return 0;
}


/* Find the endpoint a packet is for; NULL drops it, counted as a bad token
 * or as having no endpoint here (rx_no_ep: an unknown or gone endpoint, one
 * of another peer, data that overtook a lost CREQ) */
static uct_srqud_ep_t*
uct_srqud_ep_rx_find(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc,
                     const struct ibv_wc *wc, const uct_srqud_neth_t *neth,
                     size_t payload_len)
{
    uct_srqud_peer_key_t key;
    uct_srqud_ep_t *ep;
    khiter_t it;
    int is_creq;
    void *ptr;

    if (neth->dest_ep_id != UCT_SRQUD_EP_ID_NONE) {
        if (!ucs_ptr_array_lookup(&iface->eps, neth->dest_ep_id, ptr)) {
            goto no_ep;
        }
        ep = ptr;
        /* Only the peer of this ep may address it */
        if ((ep->dest_qpn != wc->src_qp) ||
            ((ep->dest_ep_id != UCT_SRQUD_EP_ID_NONE) &&
             (ep->dest_ep_id != neth->src_ep_id))) {
            goto no_ep;
        }
        if (!uct_srqud_ep_rx_token_ok(iface, ep, neth)) {
            return NULL;
        }
        ep->flags |= UCT_SRQUD_EP_FLAG_HEARD | UCT_SRQUD_EP_FLAG_ESTABLISHED;
        return ep;
    }

    /* Not yet connected: the sender is known by its address and ep id */
    memset(&key, 0, sizeof(key));
    if (uct_srqud_dev_src_gid(iface, wc, uct_srqud_rx_hdr(iface, desc),
                              key.gid) != UCS_OK) {
        goto no_ep;
    }
    key.qpn   = wc->src_qp;
    key.ep_id = neth->src_ep_id;

    is_creq = (neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
              (neth->ctl == UCT_SRQUD_CTL_CREQ) && (neth->psn == 0);
    it      = kh_get(uct_srqud_peer, &iface->peers, key);
    if (it != kh_end(&iface->peers)) {
        ep = kh_value(&iface->peers, it);
        if (!is_creq) {
            if (!uct_srqud_ep_rx_token_ok(iface, ep, neth)) {
                return NULL;
            }
            ep->flags |= UCT_SRQUD_EP_FLAG_HEARD |
                         UCT_SRQUD_EP_FLAG_ESTABLISHED;
            return ep;
        }
        if (!uct_srqud_ep_rx_new_incarnation(iface, ep, desc, payload_len)) {
            /* its CREQ again: uct_srqud_ep_rx_creq() checks its token */
            ep->flags |= UCT_SRQUD_EP_FLAG_HEARD;
            return ep;
        }
        /* A new incarnation opens a connection of its own and cannot touch
         * the established one: a host that forges the peer's address
         * without its token gets nothing of it */
    }

    /* Only a connection request opens a new passive endpoint; data that
     * overtook a lost CREQ is dropped and resent after it */
    if (!is_creq) {
        goto no_ep;
    }

    ep = uct_srqud_ep_rx_create_passive(iface, &key, wc->slid, neth->token);
    if (ep != NULL) {
        return ep;
    }

no_ep:
    ++iface->stats.rx_no_ep;
    return NULL;
}


/* The selective part of an acknowledgement, if it has one */
static const uct_srqud_sack_t*
uct_srqud_ep_rx_sack(const uct_srqud_neth_t *neth, const void *payload,
                     size_t payload_len)
{
    if (!(neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) ||
        (payload_len != sizeof(uct_srqud_sack_t))) {
        return NULL;
    }
    switch (neth->ctl) {
    case UCT_SRQUD_CTL_ACK:
    case UCT_SRQUD_CTL_NACK:
    case UCT_SRQUD_CTL_CREP:
        return payload;
    default:
        return NULL;
    }
}


/*
 * A packet for an ep of ours that sends (acknowledgements, NACKs, the
 * CREP). Its effects call the user back (send completions, flushes,
 * pending requests, errors), so the async timer queues it for the user's
 * progress instead (see uct_srqud_ep_rx_packet).
 */
void uct_srqud_ep_rx_active(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                            const uct_srqud_neth_t *neth, const void *payload,
                            size_t payload_len)
{
    const uct_srqud_ctl_route_t *route = NULL;

    if ((neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
        !(ep->flags & UCT_SRQUD_EP_FLAG_FAILED)) {
        route = uct_srqud_proto_route(iface, neth->ctl, payload_len, 0);
    }

    /* a refused put's answer carries the ack of that put: the error must
     * be known before the ack completes the flush waiting for it */
    if ((route != NULL) && (route->flags & UCT_SRQUD_CTL_ROUTE_BEFORE_ACK)) {
        route->answer(iface, ep, payload, payload_len);
        route = NULL;
    }

    if ((neth->flags & UCT_SRQUD_PACKET_FLAG_ACK) &&
        !uct_srqud_ep_process_ack(iface, ep, neth->ack_psn,
                                  uct_srqud_ep_rx_sack(neth, payload,
                                                       payload_len))) {
        return; /* lingering ep done and freed */
    }

    if (route != NULL) {
        /* answers to this side's RMA and zero-copy requests; not to an ep
         * that failed meanwhile (a completion the ack ran may have
         * cancelled it) */
        if (!(ep->flags & UCT_SRQUD_EP_FLAG_FAILED)) {
            route->answer(iface, ep, payload, payload_len);
        }
        return;
    }

    if ((neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
        (neth->ctl == UCT_SRQUD_CTL_CREP) &&
        (ep->dest_ep_id == UCT_SRQUD_EP_ID_NONE)) {
        ep->dest_ep_id = neth->src_ep_id;
        ep->flags     |= UCT_SRQUD_EP_FLAG_CONNECTED;
    }
}


/* A CREQ: the first one of the passive ep's incarnation, or a retransmitted
 * one, which carries the number and token it had (a new incarnation gets
 * a passive ep of its own, uct_srqud_ep_rx_find) */
static int uct_srqud_ep_rx_creq(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                uct_srqud_recv_desc_t *desc, size_t payload_len)
{
    uint32_t conn_sn;

    if (payload_len < sizeof(conn_sn)) {
        return 0;
    }
    memcpy(&conn_sn, uct_srqud_rx_payload(iface, desc), sizeof(conn_sn));

    if (!(ep->flags & UCT_SRQUD_EP_FLAG_CONN_SN)) {
        ep->flags  |= UCT_SRQUD_EP_FLAG_CONN_SN;
        ep->conn_sn = conn_sn;
    } else if ((ep->conn_sn != conn_sn) ||
               (ep->token != uct_srqud_rx_neth(iface, desc)->token)) {
        /* not from the peer of this connection */
        ++iface->stats.rx_bad_token;
        return 0;
    }
    return 1;
}


/* Keep a packet that arrived ahead of a gap; 0 if it cannot be kept */
static int uct_srqud_ep_rx_hold(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                uct_srqud_recv_desc_t *desc,
                                const uct_srqud_neth_t *neth,
                                size_t payload_len)
{
    /* held buffers are the SRQ's: a bound keeps enough of them posted for
     * the other peers, and one peer's gap that never fills takes at most
     * half of them */
    if ((iface->rx.held >= iface->config.rx_held_max) ||
        ((ep->rx.reorder != NULL) &&
         (ep->rx.reorder->count >= iface->config.rx_held_ep_max))) {
        return 0;
    }
    if (ep->rx.reorder == NULL) {
        ep->rx.reorder = ucs_calloc(1, sizeof(*ep->rx.reorder),
                                    "srqud_reorder");
        if (ep->rx.reorder == NULL) {
            return 0;
        }
    }
    desc->payload_len = payload_len;
    uct_srqud_reorder_hold(ep->rx.reorder, neth->psn, desc);
    ++iface->rx.held;
    ++iface->stats.rx_held;
    return 1;
}


/* The span an ep holds in (less than this many past the expected packet):
 * RX_REORDER, within the SACK's span after what it acknowledges. An
 * unfinished message of several packets keeps that behind the expected
 * packet (uct_srqud_ep_rx_accepted), and may be given up, the ep expecting
 * its first packet again; a packet held further would be outside the
 * SACK's span, and its bit would read as one of the message's. */
static UCS_F_ALWAYS_INLINE unsigned
uct_srqud_ep_rx_span(const uct_srqud_iface_t *iface, const uct_srqud_ep_t *ep)
{
    return ucs_min(iface->config.rx_reorder,
                   UCT_SRQUD_SR_SPAN - ep->rx.chain_count);
}


/* A peer's request to a passive ep, to its route's handler: in sequence
 * (@a unsequenced 0, a reliable packet accepted in order) or outside it (an
 * unreliable one, RMA_SEEN); each route takes one kind only */
static void uct_srqud_ep_rx_request(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep,
                                    uct_srqud_recv_desc_t *desc,
                                    const uct_srqud_neth_t *neth,
                                    size_t payload_len, int unsequenced)
{
    const uct_srqud_ctl_route_t *route;

    route = uct_srqud_proto_route(iface, neth->ctl, payload_len, 1);
    if ((route != NULL) &&
        (!(route->flags & UCT_SRQUD_CTL_ROUTE_UNSEQUENCED) == !unsequenced)) {
        route->request(iface, ep, uct_srqud_rx_payload(iface, desc),
                       payload_len);
    }
}


/* The common packet of a passive ep, which both the fast path of
 * uct_srqud_ep_rx_packet and uct_srqud_ep_rx_passive accept at once: a
 * reliable AM (maybe asking for an ack), the next one expected, nothing
 * held ahead of a gap, in the user's progress (the async thread queues) */
static UCS_F_ALWAYS_INLINE int
uct_srqud_ep_rx_next_am(const uct_srqud_iface_t *iface,
                        const uct_srqud_ep_t *ep, const uct_srqud_neth_t *neth)
{
    return ((neth->flags & ~UCT_SRQUD_PACKET_FLAG_ACK_REQ) ==
            (UCT_SRQUD_PACKET_FLAG_AM | UCT_SRQUD_PACKET_FLAG_REL)) &&
           (neth->psn == ep->rx.expected) && (ep->rx.reorder == NULL) &&
           !iface->async.active;
}


/* The next expected packet of a passive ep: acknowledge and hand it on */
static UCS_F_ALWAYS_INLINE void
uct_srqud_ep_rx_accept(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                       uct_srqud_recv_desc_t *desc,
                       const uct_srqud_neth_t *neth, size_t payload_len)
{
    ++ep->rx.expected;
    uct_srqud_ep_schedule_ack(iface, ep,
                              (++ep->rx.unacked >= iface->config.ack_thresh) ||
                              (neth->flags & UCT_SRQUD_PACKET_FLAG_ACK_REQ));
    if (ep->rx.unacked >= iface->config.back_ack_every) {
        iface->rx.carry_due = 1; /* the next AM to that peer takes it */
    }

    if (!(neth->flags & UCT_SRQUD_PACKET_FLAG_AM)) {
        /* a peer's RMA or zero-copy request, in order with its AMs;
         * handled now, even on the async thread: it writes or reads
         * registered memory and answers, it calls no user callback. None
         * comes within a message of several packets: its answer would
         * acknowledge them */
        if (ucs_unlikely(ep->rx.chain_count > 0)) {
            uct_srqud_rx_chain_drop(iface, ep);
        }
        uct_srqud_ep_rx_request(iface, ep, desc, neth, payload_len, 0);
        uct_srqud_rx_desc_put(iface, desc);
        return;
    }

    if (ucs_unlikely(uct_srqud_rx_chain_takes(ep, neth))) {
        /* a packet of a message of several */
        uct_srqud_rx_chain_accept(iface, ep, desc, neth, payload_len);
        return;
    }

    if (iface->async.active) {
        /* accepted and acknowledged; the handler runs in the user's
         * progress, in order with what arrives later */
        desc->ep          = NULL;
        desc->payload_len = payload_len;
        ucs_queue_push(&iface->async.rx_q, &desc->queue);
        ++iface->async.queued;
        ++iface->stats.async_queued;
        iface->async.wake_user = 1;
        return;
    }

    uct_srqud_rx_deliver_am(iface, desc, payload_len);
}


/* A packet for a passive ep (the receiving side of a peer's active ep):
 * in-order delivery, selective repeat and acknowledgement, safe on the
 * async timer */
static void uct_srqud_ep_rx_passive(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                    uct_srqud_recv_desc_t *desc,
                                    const uct_srqud_neth_t *neth,
                                    size_t payload_len)
{
    uct_srqud_rx_verdict_t verdict;

    if (uct_srqud_ep_rx_next_am(iface, ep, neth)) {
        uct_srqud_ep_rx_accept(iface, ep, desc, neth, payload_len);
        return;
    }

    if ((neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
        (neth->ctl == UCT_SRQUD_CTL_ACK) &&
        (neth->flags & UCT_SRQUD_PACKET_FLAG_ACK_REQ)) {
        uct_srqud_ep_schedule_ack(iface, ep, 1);
    }

    if (!(neth->flags & UCT_SRQUD_PACKET_FLAG_REL)) {
        if (neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) {
            uct_srqud_ep_rx_request(iface, ep, desc, neth, payload_len, 1);
        }
        goto out_put;
    }

    if ((neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
        (neth->ctl == UCT_SRQUD_CTL_CREQ) &&
        !uct_srqud_ep_rx_creq(iface, ep, desc, payload_len)) {
        goto out_put;
    }

    if (ucs_unlikely(iface->async.active &&
                     (neth->flags & UCT_SRQUD_PACKET_FLAG_AM) &&
                     (iface->async.queued >=
                      (uct_srqud_rxpool_is_shared(iface->rx.pool) ?
                       iface->config.stalled_max :
                       iface->config.srq_max_size)))) {
        /* This worker does not progress and holds its share of a pool
         * other workers receive into (or, with a pool of its own, as many
         * buffers as the SRQ may ever hold: peers must not grow it without
         * bound while the user computes): neither accepted nor held ahead
         * of a gap (which would take buffers as well), and no NACK (the
         * sender would only resend at once). The sender resends until
         * this worker progresses again; the repeated ack of what was
         * accepted tells it that its peer is alive. */
        ++iface->stats.rx_stalled_dropped;
        uct_srqud_ep_schedule_ack(iface, ep, 0);
        goto out_put;
    }

    verdict = uct_srqud_rx_classify(ep->rx.expected, neth->psn,
                                    (ep->rx.reorder != NULL) ?
                                    ep->rx.reorder->map : NULL,
                                    uct_srqud_ep_rx_span(iface, ep));
    switch (verdict) {
    case UCT_SRQUD_RX_DUPLICATE:
        /* our ack was lost, or the sender resent early: say it again */
        ++iface->stats.rx_duplicates;
        uct_srqud_ep_schedule_ack(iface, ep, 1);
        goto out_put;
    case UCT_SRQUD_RX_HOLD:
    case UCT_SRQUD_RX_BEYOND:
        /* a gap: the sender learns what is missing (NACK) */
        ++iface->stats.rx_out_of_order;
        ep->flags |= UCT_SRQUD_EP_FLAG_GAP;
        if ((verdict == UCT_SRQUD_RX_HOLD) &&
            uct_srqud_ep_rx_hold(iface, ep, desc, neth, payload_len)) {
            /* at once while the sender needs it to see a loss (the first
             * packets behind a hole, or a new hole); later ones follow at
             * the usual pace, instead of one NACK per packet */
            uct_srqud_ep_schedule_ack(iface, ep,
                    (ep->rx.reorder->count <= UCT_SRQUD_SR_DUPTHRESH) ||
                    !uct_srqud_sack_test(ep->rx.reorder->map,
                                         (uct_srqud_psn_t)(neth->psn - 1)) ||
                    (++ep->rx.unacked >= iface->config.ack_thresh));
            return;
        }
        ++iface->stats.rx_reorder_dropped;
        uct_srqud_ep_schedule_ack(iface, ep, 1);
        goto out_put;
    case UCT_SRQUD_RX_DELIVER:
        break;
    }

    uct_srqud_ep_rx_accept(iface, ep, desc, neth, payload_len);

    /* the gap is filled: what was held behind it follows, in order */
    while ((desc = uct_srqud_reorder_take(ep->rx.reorder,
                                          ep->rx.expected)) != NULL) {
        --iface->rx.held;
        uct_srqud_ep_rx_accept(iface, ep, desc, uct_srqud_rx_neth(iface, desc),
                               desc->payload_len);
    }
    if ((ep->rx.reorder != NULL) && (ep->rx.reorder->count == 0)) {
        ucs_free(ep->rx.reorder);
        ep->rx.reorder = NULL;
    }
    return;

out_put:
    uct_srqud_rx_desc_put(iface, desc);
}


void uct_srqud_ep_rx_packet(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc,
                            const struct ibv_wc *wc, uct_srqud_neth_t *neth,
                            size_t payload_len)
{
    uct_srqud_back_ack_t back;
    uct_srqud_ep_t *ep;
    int has_back;

    ep = uct_srqud_ep_rx_find(iface, desc, wc, neth, payload_len);
    if (ep == NULL) {
        uct_srqud_rx_desc_put(iface, desc);
        return;
    }

    if (ep->flags & UCT_SRQUD_EP_FLAG_PASSIVE) {
        /* The common packet, which carries no ack back: accepted without
         * uct_srqud_ep_rx_passive's other cases' tests */
        if (ucs_likely(uct_srqud_ep_rx_next_am(iface, ep, neth))) {
            uct_srqud_ep_rx_accept(iface, ep, desc, neth, payload_len);
            return;
        }

        /* an ack it brought back is for one of our active eps; applied
         * after the packet, whose handler may destroy that ep, from a
         * copy, since the handler may keep or reuse the buffer */
        has_back = !!(neth->flags & UCT_SRQUD_PACKET_FLAG_BACK_ACK);
        if (has_back) {
            memcpy(&back, UCS_PTR_BYTE_OFFSET(uct_srqud_rx_payload(iface,
                                                                  desc),
                                              payload_len), sizeof(back));
        }
        uct_srqud_ep_rx_passive(iface, ep, desc, neth, payload_len);
        if (has_back) {
            uct_srqud_back_ack_rx(iface, wc->src_qp, &back);
        }
        return;
    }

    if (iface->async.active) {
        if (neth->flags & UCT_SRQUD_PACKET_FLAG_ACK) {
            uct_srqud_ep_ack_seen(iface, ep, neth->ack_psn,
                                  uct_srqud_ep_rx_sack(neth,
                                          uct_srqud_rx_payload(iface, desc),
                                          payload_len));
        }
        desc->ep          = ep;
        desc->payload_len = payload_len;
        ucs_queue_push(&iface->async.rx_q, &desc->queue);
        ++iface->async.queued;
        ++iface->stats.async_queued;
        iface->async.wake_user = 1;
        return;
    }

    uct_srqud_ep_rx_active(iface, ep, neth, uct_srqud_rx_payload(iface, desc),
                           payload_len);
    uct_srqud_rx_desc_put(iface, desc);
}

