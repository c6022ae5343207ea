/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Acknowledgements on the way back (srqud_back_ack.h).
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_back_ack.h"
#include "srqud_ep.h"
#include "srqud_ep_tx.h"
#include "srqud_rel.h"

#include <string.h>


/* Does passive @a pep receive from the interface @a ep sends to? Both send
 * to the peer's interface QP and keep the peer's GID in peer_key. Only on
 * RoCE: over InfiniBand without a GRH a passive ep knows its peer's
 * subnet and LID (uct_srqud_gid_from_lid), not the port GID the active
 * ep was given, and a wrong match would hand one peer's token to
 * another. */
static int uct_srqud_back_ack_same_peer(const uct_srqud_iface_t *iface,
                                        const uct_srqud_ep_t *ep,
                                        const uct_srqud_ep_t *pep)
{
    return iface->is_roce && (pep->dest_qpn == ep->dest_qpn) &&
           !memcmp(pep->peer_key.gid, ep->peer_key.gid,
                   sizeof(pep->peer_key.gid));
}


uct_srqud_ep_t *uct_srqud_back_ack_take(uct_srqud_iface_t *iface,
                                        const uct_srqud_ep_t *ep,
                                        uct_srqud_back_ack_t *back)
{
    unsigned scanned = 0;
    uct_srqud_ep_t *pep;

    /* looked: another peer's due ack is flagged again by its next packet,
     * or leaves alone (ACK_THRESH, ACK_DELAY) */
    iface->rx.carry_due = 0;
    ucs_list_for_each(pep, &iface->rx.ack_list, rx.ack_list) {
        if (++scanned > UCT_SRQUD_BACK_ACK_SCAN) {
            break;
        }
        if (!uct_srqud_back_ack_same_peer(iface, ep, pep)) {
            continue;
        }
        if ((pep->flags & (UCT_SRQUD_EP_FLAG_CREP_DUE |
                           UCT_SRQUD_EP_FLAG_GAP |
                           UCT_SRQUD_EP_FLAG_ACK_HELD)) ||
            (pep->rx.reorder != NULL)) {
            /* the trailer is cumulative only */
            break;
        }
        /* the clock as the last progress read it: a stamp of a little
         * later only delays this ack by as much */
        if ((pep->rx.unacked < iface->config.back_ack_every) &&
            !(pep->flags & UCT_SRQUD_EP_FLAG_ACK_NOW) &&
            (uct_srqud_time_since(iface->async.last_progress,
                                  pep->rx.ack_time) <
             iface->config.back_ack_delay)) {
            /* not due yet: a later reply takes it, for more packets.
             * Applying an ack costs its receiver a few hundred
             * instructions (a lookup, the token, the window); one per
             * message was most of what a ping-pong spent in srqud. */
            continue;
        }
        back->ep_id = pep->dest_ep_id;
        back->token = pep->token;
        back->psn   = uct_srqud_ep_tx_ack_limit(pep);
        pep->flags &= ~(UCT_SRQUD_EP_FLAG_ACK_QUEUED |
                        UCT_SRQUD_EP_FLAG_ACK_NOW);
        pep->rx.unacked = 0;
        ucs_list_del(&pep->rx.ack_list);
        if (ucs_list_is_empty(&iface->rx.ack_list)) {
            /* nothing owed: else ack_due stayed at the taken ack's time,
             * and every later send scanned the list until a progress
             * call passed it (uct_srqud_ep_acks_send sets it again) */
            iface->rx.ack_due = UCS_TIME_INFINITY;
        }
        ++iface->stats.back_acks_sent;
        return pep;
    }
    return NULL;
}


void uct_srqud_back_ack_untake(uct_srqud_iface_t *iface, uct_srqud_ep_t *pep)
{
    --iface->stats.back_acks_sent;
    uct_srqud_ep_schedule_ack(iface, pep, 1);
}


void uct_srqud_back_ack_rx(uct_srqud_iface_t *iface, uint32_t src_qpn,
                           const uct_srqud_back_ack_t *back)
{
    uct_srqud_ep_t *ep;
    void *ptr;

    if (!ucs_ptr_array_lookup(&iface->eps, back->ep_id, ptr)) {
        ++iface->stats.rx_no_ep; /* gone since: nothing left to ack */
        return;
    }
    ep = ptr;
    if ((ep->flags & UCT_SRQUD_EP_FLAG_PASSIVE) || (ep->dest_qpn != src_qpn) ||
        (ep->token != back->token)) {
        ++iface->stats.rx_bad_token;
        return;
    }

    ++iface->stats.back_acks_taken;
    if (!(ep->flags & UCT_SRQUD_EP_FLAG_ACTIVE)) {
        return; /* its window is empty: a resent packet's old trailer */
    }
    if (iface->async.active) {
        /* the newest one wins: a trailer may arrive out of order */
        if (!(ep->flags & UCT_SRQUD_EP_FLAG_BACK_DUE) ||
            uct_srqud_psn_lt(ep->back_psn, back->psn)) {
            ep->back_psn = back->psn;
        }
        ep->flags               |= UCT_SRQUD_EP_FLAG_BACK_DUE;
        uct_srqud_ep_ack_seen(iface, ep, back->psn, NULL);
        iface->async.back_due    = 1;
        iface->async.wake_user   = 1;
        return;
    }
    uct_srqud_ep_process_ack(iface, ep, back->psn, NULL);
}


void uct_srqud_back_ack_progress(uct_srqud_iface_t *iface)
{
    uct_srqud_ep_t *ep;
    int found;

    /* an ack runs the user's completions, which may destroy eps: look
     * again from the start after each one */
    iface->async.back_due = 0;
    do {
        found = 0;
        ucs_list_for_each(ep, &iface->tx.active_list, tx.active_list) {
            if (ep->flags & UCT_SRQUD_EP_FLAG_BACK_DUE) {
                ep->flags &= ~UCT_SRQUD_EP_FLAG_BACK_DUE;
                uct_srqud_ep_process_ack(iface, ep, ep->back_psn, NULL);
                found = 1;
                break;
            }
        }
    } while (found);
}
