/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * An endpoint's send primitives, shared by the AM operations and the
 * protocols (copy-path RMA, zero-copy): reliable packets through the ep's
 * window, unreliable control packets (acknowledgements, answers), and the
 * resource check that sends the CREQ first.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_ep_tx.h"
#include "srqud_rel.h"
#include "srqud_tx.h"

#include <ucs/datastruct/mpool.inl>
#include <ucs/debug/log.h>
#include <string.h>


void uct_srqud_ep_tx_activate(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    ep->flags           |= UCT_SRQUD_EP_FLAG_ACTIVE;
    ep->tx.progress_time = ucs_get_time();
    ep->tx.resend_time   = ep->tx.progress_time;
    ep->tx.rto           = uct_srqud_rtt_rto(&ep->tx.rtt, iface->config.rto_min,
                                             iface->config.rto_max);
    ucs_list_add_tail(&iface->tx.active_list, &ep->tx.active_list);
}


/* What a passive ep acknowledges: all it accepted, or less while a
 * refused put's acknowledgement waits for its refusal to arrive */
uct_srqud_psn_t uct_srqud_ep_tx_ack_limit(const uct_srqud_ep_t *ep)
{
    uct_srqud_psn_t accepted = uct_srqud_ep_rx_accepted(ep);

    if (ucs_unlikely(ep->flags & UCT_SRQUD_EP_FLAG_ACK_HELD) &&
        uct_srqud_psn_lt(ep->rx.ack_limit, accepted)) {
        return ep->rx.ack_limit;
    }
    return accepted;
}


/* Fill the header and post an unreliable control packet from an ep, with
 * an optional payload in two parts (header, data) */
static ucs_status_t
uct_srqud_ep_tx_ctl_data(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                         uint8_t ctl, int flags, uct_srqud_psn_t ack_psn,
                         const void *hdr, size_t hdr_len, const void *data,
                         size_t data_len)
{
    size_t length = sizeof(uct_srqud_neth_t) + hdr_len + data_len;
    uint8_t packet[UCT_SRQUD_CTL_INLINE_MAX] UCS_V_ALIGNED(8);
    uct_srqud_send_desc_t *desc;
    uct_srqud_neth_t *neth;
    ucs_status_t status;

    if (!uct_srqud_tx_has_resources(iface)) {
        return UCS_ERR_NO_RESOURCE;
    }

    /* inline from the stack when it fits (acknowledgements always do):
     * no descriptor needed, see uct_srqud_tx_post_inline() */
    if (ucs_likely((length <= iface->config.max_inline) &&
                   (length <= sizeof(packet)))) {
        neth = (uct_srqud_neth_t*)packet;
        desc = NULL;
    } else {
        desc = ucs_mpool_get_inline(&iface->tx.mp);
        if (desc == NULL) {
            return UCS_ERR_NO_RESOURCE;
        }
        neth           = uct_srqud_tx_desc_neth(desc);
        desc->length   = length;
        desc->flags    = 0;
        desc->num_zsge = 0;
        desc->comp     = NULL;
    }

    neth->magic      = UCT_SRQUD_MAGIC;
    neth->flags      = UCT_SRQUD_PACKET_FLAG_CTL | flags;
    neth->am_id      = 0;
    neth->ctl        = ctl;
    neth->dest_ep_id = ep->dest_ep_id;
    neth->src_ep_id  = ep->ep_id;
    neth->psn        = 0;
    neth->ack_psn    = ack_psn;
    neth->token      = ep->token;
    if (hdr_len > 0) { /* hdr and data may be NULL then */
        memcpy(neth + 1, hdr, hdr_len);
    }
    if (data_len > 0) {
        memcpy(UCS_PTR_BYTE_OFFSET(neth + 1, hdr_len), data, data_len);
    }

    if (desc == NULL) {
        return uct_srqud_tx_post_inline(iface, ep->ah, ep->dest_qpn, neth,
                                        length);
    }

    status = uct_srqud_tx_post_send(iface, ep->ah, ep->dest_qpn, desc);
    if (status != UCS_OK) {
        ucs_mpool_put_inline(desc);
    }
    return status;
}


ucs_status_t uct_srqud_ep_tx_ctl(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 uint8_t ctl, int flags)
{
    return uct_srqud_ep_tx_ctl_data(iface, ep, ctl, flags,
                                    uct_srqud_ep_tx_ack_limit(ep), NULL, 0,
                                    NULL, 0);
}


ucs_status_t uct_srqud_ep_request_ack(uct_srqud_iface_t *iface,
                                      uct_srqud_ep_t *ep)
{
    /* best effort: the retransmission timer covers a lost request */
    ucs_status_t status = uct_srqud_ep_tx_ctl(iface, ep, UCT_SRQUD_CTL_ACK,
                                              UCT_SRQUD_PACKET_FLAG_ACK_REQ);

    if (status == UCS_OK) {
        ++iface->stats.ack_requests;
    }
    return status;
}


ucs_status_t uct_srqud_ep_tx_ack(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 uint8_t ctl)
{
    ucs_status_t status;

    UCS_STATIC_ASSERT(sizeof(uct_srqud_sack_t) ==
                      UCT_SRQUD_SR_WORDS * sizeof(uint64_t));

    /* a refused put's ack travels only with its refusal; a CREP still
     * goes, acknowledging less */
    if (ucs_unlikely(ep->flags & UCT_SRQUD_EP_FLAG_ACK_HELD)) {
        status = iface->proto->ack_held(iface, ep);
        if ((status != UCS_OK) || (ctl != UCT_SRQUD_CTL_CREP)) {
            return status;
        }
    }

    /* with packets held ahead of a gap, say which: the sender resends
     * only the others */
    if (ep->rx.reorder != NULL) {
        return uct_srqud_ep_tx_ctl_data(iface, ep, ctl,
                                        UCT_SRQUD_PACKET_FLAG_ACK,
                                        uct_srqud_ep_tx_ack_limit(ep),
                                        ep->rx.reorder->map,
                                        sizeof(uct_srqud_sack_t), NULL, 0);
    }
    return uct_srqud_ep_tx_ctl(iface, ep, ctl, UCT_SRQUD_PACKET_FLAG_ACK);
}


ucs_status_t uct_srqud_ep_tx_answer(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep, uint8_t ctl,
                                    const void *hdr, size_t hdr_len,
                                    const void *data, size_t data_len)
{
    /* acknowledges what this (passive) ep received, on the way */
    return uct_srqud_ep_tx_ctl_data(iface, ep, ctl, UCT_SRQUD_PACKET_FLAG_ACK,
                                    uct_srqud_ep_tx_ack_limit(ep), hdr, hdr_len,
                                    data, data_len);
}


ucs_status_t uct_srqud_ep_tx_answer_acking(uct_srqud_iface_t *iface,
                                           uct_srqud_ep_t *ep, uint8_t ctl,
                                           uct_srqud_psn_t ack_psn,
                                           const void *hdr, size_t hdr_len)
{
    return uct_srqud_ep_tx_ctl_data(iface, ep, ctl, UCT_SRQUD_PACKET_FLAG_ACK,
                                    ack_psn, hdr, hdr_len, NULL, 0);
}


ucs_status_t uct_srqud_ep_tx_notice(uct_srqud_iface_t *iface,
                                    uct_srqud_ep_t *ep, uint8_t ctl,
                                    const void *hdr, size_t hdr_len)
{
    /* from an active ep: it receives nothing in sequence to acknowledge */
    return uct_srqud_ep_tx_ctl_data(iface, ep, ctl, 0, 0, hdr, hdr_len, NULL,
                                    0);
}


uct_srqud_send_desc_t*
uct_srqud_ep_tx_ctl_desc(uct_srqud_iface_t *iface, uint8_t ctl)
{
    uct_srqud_send_desc_t *desc = ucs_mpool_get_inline(&iface->tx.mp);

    if (ucs_unlikely(desc == NULL)) {
        return NULL;
    }

    uct_srqud_tx_desc_neth(desc)->flags = UCT_SRQUD_PACKET_FLAG_CTL |
                                            UCT_SRQUD_PACKET_FLAG_ACK_REQ;
    uct_srqud_tx_desc_neth(desc)->ctl   = ctl;
    uct_srqud_tx_desc_neth(desc)->am_id = 0;
    desc->length                          = sizeof(uct_srqud_neth_t);
    desc->num_zsge                        = 0;
    desc->comp                            = NULL;
    return desc;
}


ucs_status_t uct_srqud_ep_tx_creq(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    uct_srqud_send_desc_t *desc;
    ucs_status_t status;

    desc = uct_srqud_ep_tx_ctl_desc(iface, UCT_SRQUD_CTL_CREQ);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    memcpy(uct_srqud_tx_desc_neth(desc) + 1, &ep->conn_sn,
           sizeof(ep->conn_sn));
    desc->length += sizeof(ep->conn_sn);

    status = uct_srqud_ep_tx_reliable(iface, ep, desc);
    if (status != UCS_OK) {
        ucs_mpool_put_inline(desc);
        return status;
    }

    ep->flags |= UCT_SRQUD_EP_FLAG_CREQ_SENT;
    return uct_srqud_tx_has_resources(iface) ? UCS_OK : UCS_ERR_NO_RESOURCE;
}


ucs_status_t uct_srqud_ep_tx_request(uct_srqud_iface_t *iface,
                                     uct_srqud_ep_t *ep, uint8_t ctl,
                                     const void *hdr, size_t hdr_len,
                                     const void *data, size_t data_len)
{
    uct_srqud_send_desc_t *desc;
    ucs_status_t status;

    ucs_assert(sizeof(uct_srqud_neth_t) + hdr_len + data_len <=
               iface->config.seg_size);

    status = uct_srqud_ep_tx_check(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    desc = uct_srqud_ep_tx_ctl_desc(iface, ctl);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* No ack asked for: a request's answer carries it (a get's reply, ZCTS,
     * ZFIN), and a put's matters only to a flush, which asks for it. Asked
     * for, every put of a put ping-pong drew a packet of its own: UCP
     * put_lat 8 B took 2.8x tag_lat's time. */
    uct_srqud_tx_desc_neth(desc)->flags &= ~UCT_SRQUD_PACKET_FLAG_ACK_REQ;

    if (hdr_len > 0) {
        memcpy(uct_srqud_tx_desc_neth(desc) + 1, hdr, hdr_len);
    }
    if (data_len > 0) {
        memcpy(UCS_PTR_BYTE_OFFSET(uct_srqud_tx_desc_neth(desc) + 1, hdr_len),
               data, data_len);
    }
    desc->length += hdr_len + data_len;

    status = uct_srqud_ep_tx_reliable(iface, ep, desc);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
    }
    return status;
}


