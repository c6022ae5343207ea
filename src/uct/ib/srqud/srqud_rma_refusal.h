/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Refused puts, the passive side (srqud_rma_refusal.c): a put it refused
 * holds the ep's acks until the initiator has the refusal; the ack an ep
 * with held acks owes; the initiator's RMA_SEEN; the ep's refusals
 * dropped when it goes. The initiator's side is in srqud_rma.c.
 */

#ifndef UCT_SRQUD_RMA_REFUSAL_H_
#define UCT_SRQUD_RMA_REFUSAL_H_

#include "srqud_ep.h"


void uct_srqud_rma_refusal_add(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                               uint32_t op_id, ucs_status_t status);

ucs_status_t uct_srqud_rma_refusal_send(uct_srqud_iface_t *iface,
                                        uct_srqud_ep_t *ep);

void uct_srqud_rma_rx_seen(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                           const void *payload, size_t length);

void uct_srqud_rma_refusal_release(uct_srqud_iface_t *iface,
                                   uct_srqud_ep_t *ep);

#endif
