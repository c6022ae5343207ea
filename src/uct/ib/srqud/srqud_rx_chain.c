/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Active messages of several packets, received (srqud_rx_chain.h).
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_rx_chain.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>


/* The longest message: a chain of the most packets, each at most what a
 * receive buffer takes */
static size_t uct_srqud_rx_chain_max(const uct_srqud_iface_t *iface)
{
    return UCT_SRQUD_AM_PACKETS_MAX *
           (iface->config.seg_size - sizeof(uct_srqud_neth_t));
}


ucs_status_t uct_srqud_rx_chain_init(uct_srqud_iface_t *iface)
{
    iface->rx.chain_buf = ucs_malloc(uct_srqud_rx_chain_max(iface),
                                     "srqud_chain_buf");
    if (iface->rx.chain_buf == NULL) {
        ucs_error("%s: failed to allocate the chain buffer", iface->md->name);
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}


void uct_srqud_rx_chain_cleanup(uct_srqud_iface_t *iface)
{
    ucs_free(iface->rx.chain_buf);
    iface->rx.chain_buf = NULL;
}


/* The ep's message is whole, dropped or given up: off the interface's
 * list of those begun */
static void uct_srqud_rx_chain_end(uct_srqud_iface_t *iface,
                                   uct_srqud_ep_t *ep)
{
    if (ep->rx.chain_count > 0) {
        ucs_list_del(&ep->rx.chain_list);
        --iface->rx.chains;
        ep->rx.chain_count = 0;
    }
}


/*
 * The oldest unfinished message gives way. None of its packets was
 * acknowledged: they go back, and its ep expects the first one again,
 * which its sender resends (the oldest unacknowledged packet always goes
 * again at a timeout, and after it the others, even those a SACK showed
 * held before they joined the message: uct_srqud_sr_resend_expired). What
 * the ep holds ahead of a gap stays: it was held within the span after
 * the message's first packet (uct_srqud_ep_rx_span).
 */
static void uct_srqud_rx_chain_evict(uct_srqud_iface_t *iface)
{
    uct_srqud_ep_t *ep = ucs_list_head(&iface->rx.chain_list, uct_srqud_ep_t,
                                       rx.chain_list);

    /* a request between a message's packets drops the message
     * (uct_srqud_ep_rx_accept): they are all the ep accepted since */
    ucs_assert((uct_srqud_psn_t)(ep->rx.expected - ep->rx.chain_psn) ==
               ep->rx.chain_count);
    ucs_debug("%s: passive ep %p id %u: an unfinished message of %u packets "
              "from psn %u gives way to a new one", iface->md->name, ep,
              ep->ep_id, ep->rx.chain_count, ep->rx.chain_psn);
    ep->rx.expected = ep->rx.chain_psn;
    uct_srqud_rx_chain_release(iface, ep);
    ++iface->stats.rx_chain_evicted;
}


/* A message of several packets begins at @a psn on @a ep; at the
 * interface's bound, the oldest one begun gives way */
static void uct_srqud_rx_chain_begin(uct_srqud_iface_t *iface,
                                     uct_srqud_ep_t *ep, uct_srqud_psn_t psn)
{
    if (iface->rx.chains >= iface->config.rx_chains_max) {
        uct_srqud_rx_chain_evict(iface);
    }
    ep->rx.chain_psn = psn;
    ucs_list_add_tail(&iface->rx.chain_list, &ep->rx.chain_list);
    ++iface->rx.chains;
}


/* A whole chain, its packets in order: copied out, its buffers back, and
 * the handler called with the copy (no descriptor to keep: the handler
 * copies what it needs) */
static void uct_srqud_rx_chain_deliver(uct_srqud_iface_t *iface,
                                       uct_srqud_recv_desc_t **descs,
                                       unsigned count)
{
    uint8_t am_id = uct_srqud_rx_neth(iface, descs[0])->am_id;
    size_t length = 0;
    ucs_status_t status;
    unsigned i;

    for (i = 0; i < count; ++i) {
        /* each at most a receive buffer's payload, and at most
         * UCT_SRQUD_AM_PACKETS_MAX of them (uct_srqud_rx_chain_accept) */
        ucs_assert(length + descs[i]->payload_len <=
                   uct_srqud_rx_chain_max(iface));
        memcpy(UCS_PTR_BYTE_OFFSET(iface->rx.chain_buf, length),
               uct_srqud_rx_payload(iface, descs[i]), descs[i]->payload_len);
        length += descs[i]->payload_len;
        uct_srqud_rx_desc_put(iface, descs[i]);
    }

    ++iface->stats.rx_am_chains;
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, am_id,
                       iface->rx.chain_buf, length, "RX: AM of %u packets",
                       count);
    if (ucs_unlikely(!uct_srqud_rx_am_handled(iface, am_id))) {
        return;
    }
    status = uct_iface_invoke_am(&iface->super, am_id, iface->rx.chain_buf,
                                 length, 0);
    if (ucs_unlikely(status == UCS_INPROGRESS)) {
        /* a handler may keep only what it is given as a descriptor */
        ucs_error("%s: AM id %u handler kept a message given without a "
                  "descriptor", iface->md->name, am_id);
    }
}


void uct_srqud_rx_chain_accept(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                               uct_srqud_recv_desc_t *desc,
                               const uct_srqud_neth_t *neth,
                               size_t payload_len)
{
    uct_srqud_recv_desc_t *descs[UCT_SRQUD_AM_PACKETS_MAX], *held;
    unsigned i, count;
    int ack_now;

    desc->ep          = NULL;
    desc->payload_len = payload_len;

    /* a chain goes on with packets of its AM id, and ends within
     * UCT_SRQUD_AM_PACKETS_MAX packets: the sender's own rule, so another
     * is a peer's error; its chain goes, and what follows starts anew.
     * Whatever this interface sends (AM_PACKETS), it takes chains: a
     * peer's setting, or its device's auto, may differ from ours */
    held = (ep->rx.chain_count > 0) ?
           ucs_queue_head_elem_non_empty(&ep->rx.chain, uct_srqud_recv_desc_t,
                                         queue) : NULL;
    if ((held != NULL) &&
        ((neth->am_id != uct_srqud_rx_neth(iface, held)->am_id) ||
         ((neth->flags & UCT_SRQUD_PACKET_FLAG_MORE) &&
          (ep->rx.chain_count + 1 >= UCT_SRQUD_AM_PACKETS_MAX)))) {
        uct_srqud_rx_chain_drop(iface, ep);
        uct_srqud_rx_desc_put(iface, desc);
        return;
    }

    if (neth->flags & UCT_SRQUD_PACKET_FLAG_MORE) {
        if (ep->rx.chain_count == 0) {
            uct_srqud_rx_chain_begin(iface, ep, neth->psn);
        }
        ucs_queue_push(&ep->rx.chain, &desc->queue);
        ++ep->rx.chain_count;
        return;
    }

    /* the last packet: the message is whole, and acknowledged now; asked
     * for an ack on an earlier packet (half the sender's window), the
     * sender has it at once still */
    count   = 0;
    ack_now = 0;
    ucs_queue_for_each_extract(held, &ep->rx.chain, queue, 1) {
        ack_now        |= uct_srqud_rx_neth(iface, held)->flags &
                          UCT_SRQUD_PACKET_FLAG_ACK_REQ;
        descs[count++]  = held;
    }
    descs[count++] = desc;
    uct_srqud_rx_chain_end(iface, ep);
    if (ack_now) {
        uct_srqud_ep_schedule_ack(iface, ep, 1);
    }

    if (iface->async.active) {
        /* queued together, in order with what the ep accepted before and
         * after: the user's progress delivers them as one */
        for (i = 0; i < count; ++i) {
            ucs_queue_push(&iface->async.rx_q, &descs[i]->queue);
        }
        iface->async.queued      += count;
        iface->stats.async_queued += count;
        iface->async.wake_user    = 1;
        return;
    }

    uct_srqud_rx_chain_deliver(iface, descs, count);
}


unsigned uct_srqud_rx_chain_deliver_queued(uct_srqud_iface_t *iface,
                                           uct_srqud_recv_desc_t *first)
{
    uct_srqud_recv_desc_t *descs[UCT_SRQUD_AM_PACKETS_MAX];
    unsigned count = 1;

    /* the chain's others follow it, the last without MORE */
    descs[0] = first;
    while ((uct_srqud_rx_neth(iface, descs[count - 1])->flags &
            UCT_SRQUD_PACKET_FLAG_MORE) &&
           (count < UCT_SRQUD_AM_PACKETS_MAX) &&
           !ucs_queue_is_empty(&iface->async.rx_q)) {
        descs[count++] = ucs_queue_pull_elem_non_empty(&iface->async.rx_q,
                                                       uct_srqud_recv_desc_t,
                                                       queue);
        --iface->async.queued;
    }
    ucs_assert(!(uct_srqud_rx_neth(iface, descs[count - 1])->flags &
                 UCT_SRQUD_PACKET_FLAG_MORE));

    uct_srqud_rx_chain_deliver(iface, descs, count);
    return count - 1;
}


void uct_srqud_rx_chain_release(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    uct_srqud_recv_desc_t *desc;

    ucs_queue_for_each_extract(desc, &ep->rx.chain, queue, 1) {
        uct_srqud_rx_desc_put(iface, desc);
    }
    uct_srqud_rx_chain_end(iface, ep);
}


void uct_srqud_rx_chain_drop(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep)
{
    ++iface->stats.rx_chain_bad;
    if (uct_srqud_iface_log_allowed(iface)) {
        ucs_diag("%s: a peer's active message of several packets dropped: "
                 "more than %u, of several AM ids, or with a request "
                 "between its packets (%lu more log lines since the last)",
                 iface->md->name, UCT_SRQUD_AM_PACKETS_MAX,
                 iface->log_suppressed);
        iface->log_suppressed = 0;
    }
    uct_srqud_rx_chain_release(iface, ep);
}
