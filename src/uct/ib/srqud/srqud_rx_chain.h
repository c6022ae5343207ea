/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Receiving an active message of several packets (UCX_SRQUD_AM_PACKETS):
 * its packets are consecutive in the sender's sequence, every one but the
 * last flagged MORE. A passive ep holds the accepted ones until the last
 * is in; the message is then copied into the interface's chain buffer and
 * delivered whole. A peer decides nothing about what is allocated: a
 * message holds at most UCT_SRQUD_AM_PACKETS_MAX - 1 of the SRQ's buffers,
 * and at most rx_chains_max are begun on the interface (a budget apart
 * from the reorder buffers'). Nothing of an unfinished message is
 * acknowledged (uct_srqud_ep_rx_accepted), so at that bound the oldest one
 * gives way to the new one without loss: its packets go back, its ep
 * expects its first packet again, and its sender resends them. A peer
 * that begins messages on many connections and ends none therefore keeps
 * no one else's out: it can only make a message that is open at that
 * moment go again, and a real sender's packets of a message leave with
 * one doorbell and arrive together (open longer only while one of them
 * is lost). Every interface takes them, whatever its own AM_PACKETS:
 * that setting is what it sends, and its peers' may differ.
 */

#ifndef UCT_SRQUD_RX_CHAIN_H_
#define UCT_SRQUD_RX_CHAIN_H_

#include "srqud_ep.h"
#include "srqud_rx.h"


/* The chain buffer, for the longest message a peer may send */
ucs_status_t uct_srqud_rx_chain_init(uct_srqud_iface_t *iface);

void uct_srqud_rx_chain_cleanup(uct_srqud_iface_t *iface);

/* An accepted AM of a passive ep that starts or continues a chain */
void uct_srqud_rx_chain_accept(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                               uct_srqud_recv_desc_t *desc,
                               const uct_srqud_neth_t *neth,
                               size_t payload_len);

/* The user's progress found a chain's first packet at the head of what
 * the async thread accepted (its others follow it there): deliver it
 * whole; returns the packets it took off the queue after @a first */
unsigned uct_srqud_rx_chain_deliver_queued(uct_srqud_iface_t *iface,
                                           uct_srqud_recv_desc_t *first);

/* The packets of the ep's unfinished chain go back (the ep goes, or the
 * chain was dropped or gave way) */
void uct_srqud_rx_chain_release(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep);

/* A peer broke the sender's rules within a message (another AM id, too
 * many packets, a request between its packets): what it holds is dropped
 * and counted, the connection goes on */
void uct_srqud_rx_chain_drop(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep);


/* Does this in-order AM start or continue a chain */
static UCS_F_ALWAYS_INLINE int
uct_srqud_rx_chain_takes(const uct_srqud_ep_t *ep, const uct_srqud_neth_t *neth)
{
    return (neth->flags & UCT_SRQUD_PACKET_FLAG_MORE) || (ep->rx.chain_count > 0);
}

#endif
