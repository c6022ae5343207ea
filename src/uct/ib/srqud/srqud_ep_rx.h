/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The receive side of endpoints (srqud_ep_rx.c), for the progress loop.
 */

#ifndef UCT_SRQUD_EP_RX_H_
#define UCT_SRQUD_EP_RX_H_

#include "srqud_ep.h"


/* A checked packet for this interface */
void uct_srqud_ep_rx_packet(uct_srqud_iface_t *iface,
                            uct_srqud_recv_desc_t *desc,
                            const struct ibv_wc *wc, uct_srqud_neth_t *neth,
                            size_t payload_len);

/* A packet for an active ep that the async timer queued */
void uct_srqud_ep_rx_active(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                            const uct_srqud_neth_t *neth, const void *payload,
                            size_t payload_len);

#endif
