/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Receive: an interface's side of its receive pool (srqud_rxpool.h: the
 * SRQ, the buffers, the watermark and LIMIT refill), the cache of free
 * buffers, polling the receive CQ and delivering AMs.
 */

#ifndef UCT_SRQUD_RX_H_
#define UCT_SRQUD_RX_H_

#include "srqud_types.h"


/* Buffers, their first posting and the watermark (Eq. 5) */
ucs_status_t uct_srqud_rx_init(uct_srqud_iface_t *iface,
                               const uct_srqud_iface_config_t *config,
                               const uct_iface_params_t *params,
                               const struct ibv_port_attr *port_attr);

/* At close, after the QP is gone: every buffer back to the pool */
void uct_srqud_rx_cleanup(uct_srqud_iface_t *iface);


/* Repost when a batch's worth is missing (after polling) */
void uct_srqud_rx_refill(uct_srqud_iface_t *iface);

/* Completions taken from the receive CQ in one call at most (besides the
 * stashed ones), whatever UCX_SRQUD_RX_MAX_POLL says */
#define UCT_SRQUD_RX_POLL_MAX  64


/**
 * Take up to @a max receive completions: those event_arm stashed, then the
 * CQ's. The buffers leave the SRQ's count here.
 */
unsigned uct_srqud_rx_poll(uct_srqud_iface_t *iface, struct ibv_wc *wcs,
                           unsigned max);

/* Give a receive buffer back to the pool */
void uct_srqud_rx_desc_put(uct_srqud_iface_t *iface,
                           uct_srqud_recv_desc_t *desc);

/* Invoke the AM handler for a received packet */
void uct_srqud_rx_deliver_am(uct_srqud_iface_t *iface,
                             uct_srqud_recv_desc_t *desc, size_t payload_len);

/* Drop the packets the async thread queued for an ep that goes away */
void uct_srqud_rx_purge_ep(uct_srqud_iface_t *iface, const void *ep);

/* Give up the packets a passive ep holds ahead of a gap (a new incarnation
 * of its peer starts over; the ep goes away) */
void uct_srqud_rx_reorder_release(uct_srqud_iface_t *iface,
                                  uct_srqud_ep_t *ep);


/* The GRH, where the receive's scatter entry starts */
static UCS_F_ALWAYS_INLINE void*
uct_srqud_rx_hdr(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc)
{
    return UCS_PTR_BYTE_OFFSET(desc, iface->config.rx_hdr_offset);
}


static UCS_F_ALWAYS_INLINE uct_srqud_neth_t*
uct_srqud_rx_neth(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc)
{
    return UCS_PTR_BYTE_OFFSET(uct_srqud_rx_hdr(iface, desc),
                               UCT_SRQUD_GRH_LEN);
}


static UCS_F_ALWAYS_INLINE void*
uct_srqud_rx_payload(uct_srqud_iface_t *iface, uct_srqud_recv_desc_t *desc)
{
    return UCS_PTR_BYTE_OFFSET(desc, iface->config.rx_payload_offset);
}

#endif
