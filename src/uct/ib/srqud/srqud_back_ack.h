/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Acknowledgements on the way back (srqud_back_ack.c): a passive ep's owed
 * acknowledgement leaves as the trailer of a reliable AM that an active ep
 * of the same interface sends to the same peer, instead of as a packet of
 * its own (the wire format and why: uct_srqud_back_ack_t in srqud_def.h).
 */

#ifndef UCT_SRQUD_BACK_ACK_H_
#define UCT_SRQUD_BACK_ACK_H_

#include "srqud_ep.h"


/* Owing passive eps looked at per send: a peer that replies is normally
 * among the first (ack_list is in the order the acks fell due) */
#define UCT_SRQUD_BACK_ACK_SCAN  8


/**
 * Sender: the acknowledgement an AM of @a ep can take back to its peer.
 * Fills @a back and returns the passive ep whose owed ack it now carries
 * (no longer queued), or NULL if none can ride: none owed to that peer,
 * or one that needs a packet of its own (a SACK, a NACK, a CREP, an ack
 * held for a refused put).
 */
uct_srqud_ep_t *uct_srqud_back_ack_take(uct_srqud_iface_t *iface,
                                        const uct_srqud_ep_t *ep,
                                        uct_srqud_back_ack_t *back);

/* Sender: the AM that carried @a pep's ack was not sent: owe it again */
void uct_srqud_back_ack_untake(uct_srqud_iface_t *iface, uct_srqud_ep_t *pep);

/**
 * Receiver: the trailer of a packet from QP @a src_qpn. Applied to the
 * active ep it names if that ep sends to @a src_qpn with that token;
 * otherwise counted (rx_bad_token) and dropped. On the async thread it is
 * kept for the user's progress, since an acknowledgement completes the
 * user's sends.
 */
void uct_srqud_back_ack_rx(uct_srqud_iface_t *iface, uint32_t src_qpn,
                           const uct_srqud_back_ack_t *back);

/* The user's progress: what the async thread kept */
void uct_srqud_back_ack_progress(uct_srqud_iface_t *iface);

#endif
