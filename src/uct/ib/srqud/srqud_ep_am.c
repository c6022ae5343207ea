/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Active messages. Every message is kept until acknowledged, so even
 * "short" messages are copied into a registered descriptor; the send
 * itself is inline when the packet fits. The four operations share one
 * path: uct_srqud_ep_am_desc_get(), fill, uct_srqud_ep_am_send().
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_back_ack.h"
#include "srqud_ep_tx.h"
#include "srqud_ep_am.h"
#include "srqud_ep.h"

#include <ucs/datastruct/mpool.inl>
#include <ucs/debug/log.h>
#include <uct/base/uct_iov.inl>
#include <string.h>


/* May the ep send, and a descriptor with the AM header filled in */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srqud_ep_am_desc_get(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                         uint8_t id, uct_srqud_send_desc_t **desc_p)
{
    uct_srqud_send_desc_t *desc;
    uct_srqud_neth_t *neth;
    ucs_status_t status;

    status = uct_srqud_ep_tx_user_check(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    desc = ucs_mpool_get_inline(&iface->tx.mp);
    if (ucs_unlikely(desc == NULL)) {
        UCT_TL_IFACE_STAT_TX_NO_DESC(&iface->super);
        return UCS_ERR_NO_RESOURCE;
    }

    neth           = uct_srqud_tx_desc_neth(desc);
    neth->flags    = UCT_SRQUD_PACKET_FLAG_AM;
    neth->am_id    = id;
    neth->ctl      = UCT_SRQUD_CTL_NONE;
    desc->num_zsge = 0;
    desc->comp     = NULL;
    *desc_p        = desc;
    return UCS_OK;
}


/* Send a filled descriptor of @a length payload bytes after the header;
 * on failure it goes back to the pool */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srqud_ep_am_send(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                     uct_srqud_send_desc_t *desc, size_t length)
{
    uct_srqud_ep_t *pep = NULL;
    uct_srqud_back_ack_t back;
    ucs_status_t status;
    int ride;

    desc->length = sizeof(uct_srqud_neth_t) + length;

    /* an ack this side owes the peer goes along, at the end (not after
     * an am_zcopy's user data, which the packet gathers last), once one
     * may be due: enough packets owed, or BACK_ACK_DELAY passed since
     * the first was queued (ack_due, that time plus ACK_DELAY, is then at
     * most ACK_DELAY - BACK_ACK_DELAY away), or one due at once (ack_due
     * 0) */
    if (!ucs_list_is_empty(&iface->rx.ack_list) && iface->config.back_ack &&
        (iface->rx.carry_due ||
         uct_srqud_ep_ack_due_within(iface, iface->config.ack_delay -
                                            iface->config.back_ack_delay)) &&
        (desc->num_zsge == 0) &&
        (desc->length + sizeof(back) <= iface->config.seg_size)) {
        pep = uct_srqud_back_ack_take(iface, ep, &back);
        if (pep != NULL) {
            memcpy(UCS_PTR_BYTE_OFFSET(uct_srqud_tx_desc_neth(desc),
                                       desc->length), &back, sizeof(back));
            desc->length += sizeof(back);
            uct_srqud_tx_desc_neth(desc)->flags |=
                    UCT_SRQUD_PACKET_FLAG_BACK_ACK;
        }
    }

    /* acks owed to other peers (or that no trailer could take) go in
     * this message's doorbell, behind it, rather than ring their own
     * later. The batch is rung here, also one the message joined (a
     * message's earlier packets, held sends): in it, the message's age
     * check (TX_BATCH_WAIT) is skipped, and rides are rare. */
    ride = uct_srqud_ep_acks_ride_due(iface);
    if (ucs_unlikely(ride)) {
        iface->tx.chain = 1;
    }

    status = uct_srqud_ep_tx_reliable(iface, ep, desc);
    if (ucs_unlikely(ride)) {
        if (status == UCS_OK) {
            uct_srqud_ep_acks_ride(iface);
        }
        iface->tx.chain = 0;
        uct_srqud_tx_ring(iface);
    }
    if (ucs_unlikely(status != UCS_OK)) {
        if (pep != NULL) {
            uct_srqud_back_ack_untake(iface, pep);
        }
        ucs_mpool_put_inline(desc);
    }
    return status;
}


static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srqud_ep_am_short_locked(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             uint8_t id, uint64_t hdr, const void *buffer,
                             unsigned length)
{
    uct_srqud_send_desc_t *desc;
    uint8_t *payload;
    ucs_status_t status;

    status = uct_srqud_ep_am_desc_get(iface, ep, id, &desc);
    if (status != UCS_OK) {
        return status;
    }

    payload = (uint8_t*)(uct_srqud_tx_desc_neth(desc) + 1);
    memcpy(payload, &hdr, sizeof(hdr));
    if (length > 0) { /* buffer may be NULL then */
        memcpy(payload + sizeof(hdr), buffer, length);
    }
    status = uct_srqud_ep_am_send(iface, ep, desc, sizeof(hdr) + length);
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, sizeof(hdr) + length);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id, payload,
                       sizeof(hdr) + length, "TX: AM_SHORT");
    return UCS_OK;
}


ucs_status_t uct_srqud_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t hdr,
                                   const void *buffer, unsigned length)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(sizeof(uct_srqud_neth_t) + sizeof(hdr) + length, 0,
                     ucs_min(iface->config.max_inline, iface->config.seg_size),
                     "am_short");

    UCT_SRQUD_LOCKED(iface, status,
                     uct_srqud_ep_am_short_locked(iface, ep, id, hdr, buffer,
                                                  length));
    return status;
}


static ucs_status_t
uct_srqud_ep_am_short_iov_locked(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                                 uint8_t id, const uct_iov_t *iov,
                                 size_t iovcnt, size_t length)
{
    uct_srqud_send_desc_t *desc;
    ucs_iov_iter_t iov_iter;
    ucs_status_t status;

    status = uct_srqud_ep_am_desc_get(iface, ep, id, &desc);
    if (status != UCS_OK) {
        return status;
    }

    ucs_iov_iter_init(&iov_iter);
    uct_iov_to_buffer(iov, iovcnt, &iov_iter,
                      uct_srqud_tx_desc_neth(desc) + 1, length);
    status = uct_srqud_ep_am_send(iface, ep, desc, length);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, length);
    }
    return status;
}


ucs_status_t uct_srqud_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                       const uct_iov_t *iov, size_t iovcnt)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ucs_status_t status;
    size_t length;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (unsigned long)UCT_SRQUD_MAX_IOV, "am_short_iov");
    length = uct_iov_total_length(iov, iovcnt);
    UCT_CHECK_LENGTH(sizeof(uct_srqud_neth_t) + length, 0,
                     ucs_min(iface->config.max_inline, iface->config.seg_size),
                     "am_short_iov");

    UCT_SRQUD_LOCKED(iface, status,
                     uct_srqud_ep_am_short_iov_locked(iface, ep, id, iov,
                                                      iovcnt, length));
    return status;
}


/*
 * Send an am_bcopy the user packed into the first descriptor, which is
 * large enough for AM_PACKETS packets. A message above one packet: the
 * bytes beyond the first packet are copied into spare descriptors (taken
 * before the pack), every packet but the last is flagged MORE, and all go
 * with one doorbell (on Soft-RoCE each doorbell is a system call and a
 * softirq thread's wakeup). Each packet is reliable on its own; the
 * receiver delivers the message once its last packet is in
 * (srqud_rx_chain.c).
 */
static void
uct_srqud_ep_am_bcopy_send(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                            uct_srqud_send_desc_t *first, size_t length)
{
    size_t chunk          = iface->config.seg_size - sizeof(uct_srqud_neth_t);
    /* an empty message is one packet too */
    unsigned i, count     = ucs_max(ucs_div_round_up(length, chunk), (size_t)1);
    const uint8_t *packed = (const uint8_t*)(uct_srqud_tx_desc_neth(first) +
                                             1);
    uct_srqud_send_desc_t *descs[UCT_SRQUD_AM_PACKETS_MAX];
    ucs_status_t status;
    int ring;

    ucs_assert((count >= 1) && (count <= iface->config.am_packets) &&
               (count <= iface->tx.spare_count + 1));
    descs[0] = first;
    for (i = 1; i < count; ++i) {
        descs[i] = iface->tx.spare[--iface->tx.spare_count];
        *uct_srqud_tx_desc_neth(descs[i]) = *uct_srqud_tx_desc_neth(first);
        descs[i]->num_zsge = 0;
        descs[i]->comp     = NULL;
        memcpy(uct_srqud_tx_desc_neth(descs[i]) + 1, packed + (i * chunk),
               ucs_min(chunk, length - (i * chunk)));
    }

    /* the last packet rings the batch, unless sends were batched before:
     * their doorbell (progress, TX_BATCH_WAIT, TX_HOLD) takes these too */
    ring = (count > 1) && (iface->tx.batch_count == 0);
    for (i = 0; i < count; ++i) {
        iface->tx.chain = (i + 1 < count);
        if (iface->tx.chain) {
            uct_srqud_tx_desc_neth(descs[i])->flags |=
                    UCT_SRQUD_PACKET_FLAG_MORE;
        }
        /* cannot fail: the room was checked (uct_srqud_ep_tx_user_check),
         * and a send the QP refuses is kept for retransmission */
        status = uct_srqud_ep_am_send(iface, ep, descs[i],
                                      ucs_min(chunk, length - (i * chunk)));
        ucs_assertv(status == UCS_OK, "packet %u of %u: %s", i, count,
                    ucs_status_string(status));
        (void)status;
    }
    iface->tx.chain = 0;
    if (ring) {
        uct_srqud_tx_ring(iface);
    }
    iface->stats.tx_am_chains += (count > 1);
}


static ssize_t
uct_srqud_ep_am_bcopy_locked(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             uint8_t id, uct_pack_callback_t pack_cb,
                             void *arg)
{
    size_t chunk = iface->config.seg_size - sizeof(uct_srqud_neth_t);
    uct_srqud_send_desc_t *desc, *spare;
    ucs_status_t status;
    size_t length;

    status = uct_srqud_ep_am_desc_get(iface, ep, id, &desc);
    if (status != UCS_OK) {
        return status;
    }

    /* the descriptors of the packets after the first, before the pack
     * (once packed, the message must go): kept between messages, so that
     * a message of one packet takes none from the pool */
    while (ucs_unlikely(iface->tx.spare_count + 1 < iface->config.am_packets)) {
        spare = ucs_mpool_get_inline(&iface->tx.mp);
        if (ucs_unlikely(spare == NULL)) {
            UCT_TL_IFACE_STAT_TX_NO_DESC(&iface->super);
            ucs_mpool_put_inline(desc);
            return UCS_ERR_NO_RESOURCE;
        }
        iface->tx.spare[iface->tx.spare_count++] = spare;
    }

    length = pack_cb(uct_srqud_tx_desc_neth(desc) + 1, arg);
    ucs_assertv(length <= iface->config.am_packets * chunk,
                "am_bcopy: packed %zu bytes, max %zu", length,
                iface->config.am_packets * chunk);
    uct_srqud_ep_am_bcopy_send(iface, ep, desc, length);

    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, length);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id,
                       uct_srqud_tx_desc_neth(desc) + 1, length,
                       "TX: AM_BCOPY");
    return length;
}


ssize_t uct_srqud_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                              uct_pack_callback_t pack_cb, void *arg,
                              unsigned flags)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ssize_t ret;

    UCT_CHECK_AM_ID(id);

    UCT_SRQUD_LOCKED(iface, ret,
                     uct_srqud_ep_am_bcopy_locked(iface, ep, id, pack_cb, arg));
    return ret;
}


/*
 * am_zcopy: the header goes into the descriptor, the payload is gathered
 * from the user's registered memory by the HCA, on the first send and on
 * every retransmission; so the user's buffer is released (completion) only
 * when the peer has acknowledged the packet.
 */
static ucs_status_t
uct_srqud_ep_am_zcopy_locked(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                             uint8_t id, const void *header,
                             unsigned header_length, const uct_iov_t *iov,
                             size_t iovcnt, size_t length,
                             uct_completion_t *comp)
{
    uct_srqud_send_desc_t *desc;
    ucs_status_t status;
    size_t i;

    status = uct_srqud_ep_am_desc_get(iface, ep, id, &desc);
    if (status != UCS_OK) {
        return status;
    }

    if (header_length > 0) {
        memcpy(uct_srqud_tx_desc_neth(desc) + 1, header, header_length);
    }
    /* the user's buffer is released by the acknowledgement: asked for at
     * once, not after ACK_DELAY (an MPI_Send waits for it) */
    if (comp != NULL) {
        uct_srqud_tx_desc_neth(desc)->flags |= UCT_SRQUD_PACKET_FLAG_ACK_REQ;
    }
    for (i = 0; i < iovcnt; ++i) {
        if (iov[i].length * iov[i].count == 0) {
            continue;
        }
        desc->zsge[desc->num_zsge].addr   = (uintptr_t)iov[i].buffer;
        desc->zsge[desc->num_zsge].length = iov[i].length * iov[i].count;
        desc->zsge[desc->num_zsge].lkey   = uct_srqud_memh_lkey(iov[i].memh);
        ++desc->num_zsge;
    }

    /* the descriptor holds the headers only; the payload is gathered */
    status = uct_srqud_ep_am_send(iface, ep, desc, header_length);
    if (status != UCS_OK) {
        return status;
    }

    /* set after the send succeeded: a failed send never calls it */
    desc->comp = comp;
    ++iface->stats.am_zcopy;
    UCT_TL_EP_STAT_OP(&ep->super, AM, ZCOPY, header_length + length);
    return UCS_INPROGRESS;
}


ucs_status_t uct_srqud_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                   const void *header, unsigned header_length,
                                   const uct_iov_t *iov, size_t iovcnt,
                                   unsigned flags, uct_completion_t *comp)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);
    ucs_status_t status;
    size_t i, length;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (unsigned long)iface->config.zcopy_max_iov,
                       "am_zcopy");
    UCT_CHECK_LENGTH(header_length, 0, UCT_SRQUD_AM_ZCOPY_MAX_HDR,
                     "am_zcopy header");
    length = uct_iov_total_length(iov, iovcnt);
    UCT_CHECK_LENGTH(sizeof(uct_srqud_neth_t) + header_length + length, 0,
                     iface->config.seg_size, "am_zcopy");
    for (i = 0; i < iovcnt; ++i) {
        if ((iov[i].length * iov[i].count != 0) &&
            ((iov[i].memh == UCT_MEM_HANDLE_NULL) ||
             ((iov[i].count > 1) && (iov[i].stride != iov[i].length)))) {
            ucs_error("%s: am_zcopy needs registered, contiguous iov entries",
                      iface->md->name);
            return UCS_ERR_INVALID_PARAM;
        }
    }

    UCT_SRQUD_LOCKED(iface, status,
                     uct_srqud_ep_am_zcopy_locked(iface, ep, id, header,
                                                  header_length, iov, iovcnt,
                                                  length, comp));
    return status;
}

