/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * A refused put must reach its initiator as an error: the put's completion
 * (copy path) or the ep's next flush (put_short / put_bcopy) reports it.
 * Both complete on the acknowledgement of the put's packet, and the refusal
 * is an unreliable answer: lost, or overtaken by a later plain ack, it used
 * to leave a put that wrote nothing reported as done.
 *
 * So the passive ep that refuses a put holds its acknowledgement back:
 * every ack it owes goes as the refusal (RMA_REFUSE, which the initiator
 * handles before the ack it carries), and any other packet acknowledges at
 * most the packet before. The initiator answers each RMA_REFUSE with
 * RMA_SEEN; the first RMA_SEEN ends the hold. A lost RMA_REFUSE or RMA_SEEN
 * costs a retransmission timeout: the initiator resends what is not
 * acknowledged, and the duplicates make the passive ep send the refusal
 * again. Refusals are errors, rare by nature; this costs nothing else.
 *
 * Several refused puts of one ep are kept in arrival order; the refusal of
 * the oldest acknowledges up to the packet before the next one, so no put
 * is acknowledged ahead of its own refusal, and the initiator learns which
 * packets were refused, for the flush that covers them. Refusals of one
 * copy-path operation (its fragments) merge: it fails once. put_shorts
 * never merge: each may belong to another flush. Their number is bounded
 * by the initiator's window (acks stop at the oldest), and, for an
 * initiator that never answers, by UCX_SRQUD_RMA_REFUSALS_MAX per passive
 * ep: beyond it a refused put joins the ep's newest record, whose flush
 * then fails for it too. A record lives until its RMA_SEEN or until the
 * passive ep goes. Each ep keeps its own records, so that finding one
 * never walks another peer's.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_rma_refusal.h"
#include "srqud_ep.h"
#include "srqud_ep_tx.h"
#include "srqud_rel.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>


typedef struct uct_srqud_rma_refusal_rec {
    ucs_list_link_t          list;    /* ep->peer.refusals */
    uint32_t                 id;
    uint32_t                 op_id;
    uct_srqud_psn_t          first;   /* the refused packets */
    uct_srqud_psn_t          last;
    ucs_status_t             status;
} uct_srqud_rma_refusal_rec_t;


/* The oldest refusal of @a ep after @a from (NULL: from the start) */
static uct_srqud_rma_refusal_rec_t*
uct_srqud_rma_refusal_next(uct_srqud_ep_t *ep,
                           uct_srqud_rma_refusal_rec_t *from)
{
    ucs_list_link_t *link = (from == NULL) ? ep->peer.refusals.next :
                                             from->list.next;

    return (link == &ep->peer.refusals) ? NULL :
           ucs_container_of(link, uct_srqud_rma_refusal_rec_t, list);
}


static ucs_status_t
uct_srqud_rma_refusal_post(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                           uint32_t id, uint32_t op_id, uct_srqud_psn_t first,
                           uct_srqud_psn_t last, ucs_status_t status,
                           uct_srqud_psn_t ack_psn)
{
    uct_srqud_rma_refusal_t refusal;

    refusal.op_id     = op_id;
    refusal.id        = id;
    refusal.first_psn = first;
    refusal.last_psn  = last;
    refusal.status    = status;
    return uct_srqud_ep_tx_answer_acking(iface, ep, UCT_SRQUD_CTL_RMA_REFUSE,
                                         ack_psn, &refusal, sizeof(refusal));
}


/* Send the ep's oldest refusal, with the ack of everything up to its next
 * refused put (also what the ep sends for any ack it owes while held) */
ucs_status_t uct_srqud_rma_refusal_send(uct_srqud_iface_t *iface,
                                        uct_srqud_ep_t *ep)
{
    uct_srqud_rma_refusal_rec_t *rec, *next;
    uct_srqud_psn_t ack_psn;

    rec = uct_srqud_rma_refusal_next(ep, NULL);
    ucs_assert(rec != NULL);
    next    = uct_srqud_rma_refusal_next(ep, rec);
    ack_psn = (next != NULL) ? next->first - 1 : uct_srqud_ep_rx_accepted(ep);
    return uct_srqud_rma_refusal_post(iface, ep, rec->id, rec->op_id,
                                      rec->first, rec->last, rec->status,
                                      ack_psn);
}


/* Hold the ep's acks below its oldest refusal, or release them */
static void uct_srqud_rma_refusal_hold(uct_srqud_iface_t *iface,
                                       uct_srqud_ep_t *ep)
{
    uct_srqud_rma_refusal_rec_t *rec = uct_srqud_rma_refusal_next(ep, NULL);

    if (rec != NULL) {
        ep->flags        |= UCT_SRQUD_EP_FLAG_ACK_HELD;
        ep->rx.ack_limit  = rec->first - 1;
    } else {
        ep->flags &= ~UCT_SRQUD_EP_FLAG_ACK_HELD;
    }
}


static void uct_srqud_rma_refusal_free(uct_srqud_iface_t *iface,
                                       uct_srqud_ep_t *ep,
                                       uct_srqud_rma_refusal_rec_t *rec)
{
    ucs_list_del(&rec->list);
    --ep->peer.refusals_count;
    --iface->stats.rma_refusal_records;
    ucs_free(rec);
}


void uct_srqud_rma_refusal_add(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                               uint32_t op_id, ucs_status_t status)
{
    /* the packet being accepted: rx.expected already counts it */
    uct_srqud_psn_t psn = ep->rx.expected - 1;
    uct_srqud_rma_refusal_rec_t *rec, *last;

    ++iface->stats.rma_refused;
    if (op_id != 0) {
        ucs_list_for_each(rec, &ep->peer.refusals, list) {
            if (rec->op_id == op_id) {
                rec->last = psn; /* the operation fails once */
                return;
            }
        }
    }

    last = ucs_list_is_empty(&ep->peer.refusals) ? NULL :
           ucs_list_tail(&ep->peer.refusals, uct_srqud_rma_refusal_rec_t,
                         list);
    if ((last != NULL) &&
        (ep->peer.refusals_count >= iface->config.rma_refusals_max)) {
        /* an initiator that does not take its refusals: what it sends
         * after fails with the newest one, which then names packets, not
         * one operation (the initiator fails every flush among them) */
        if (last->op_id != op_id) {
            last->op_id = 0;
        }
        last->last = psn;
        ++iface->stats.rma_refusals_merged;
        return;
    }

    rec = ucs_malloc(sizeof(*rec), "srqud_refusal");
    if (rec == NULL) {
        ucs_error("%s: no memory to hold the ack of a refused put; its "
                  "refusal goes once, unheld", iface->md->name);
        uct_srqud_rma_refusal_post(iface, ep, 0, op_id, psn, psn, status,
                                   uct_srqud_ep_tx_ack_limit(ep));
        return;
    }
    rec->op_id  = op_id;
    rec->first  = psn;
    rec->last   = psn;
    rec->status = status;
    if (++iface->rma.next_refusal_id == 0) {
        iface->rma.next_refusal_id = 1; /* 0: sent without the hold */
    }
    rec->id = iface->rma.next_refusal_id;
    ucs_list_add_tail(&ep->peer.refusals, &rec->list);
    ++ep->peer.refusals_count;
    ++iface->stats.rma_refusal_records;

    if (last != NULL) {
        return; /* it goes when those before it are seen */
    }

    /* the first one: acks stop before it, and it goes now, or with the
     * next ack the ep sends */
    uct_srqud_rma_refusal_hold(iface, ep);
    if (uct_srqud_rma_refusal_send(iface, ep) != UCS_OK) {
        uct_srqud_ep_schedule_ack(iface, ep, 1);
    }
}


void uct_srqud_rma_rx_seen(uct_srqud_iface_t *iface, uct_srqud_ep_t *ep,
                           const void *payload, size_t length)
{
    const uct_srqud_rma_seen_t *seen = payload;
    uct_srqud_rma_refusal_rec_t *rec;

    rec = uct_srqud_rma_refusal_next(ep, NULL);
    if ((rec == NULL) || (rec->id != seen->id)) {
        return; /* a repeat, for a refusal already released */
    }

    uct_srqud_rma_refusal_free(iface, ep, rec);
    uct_srqud_rma_refusal_hold(iface, ep);
    /* the next refusal, or the ack held back until now */
    uct_srqud_ep_schedule_ack(iface, ep, 1);
}


void uct_srqud_rma_refusal_release(uct_srqud_iface_t *iface,
                                   uct_srqud_ep_t *ep)
{
    uct_srqud_rma_refusal_rec_t *rec;

    while ((rec = uct_srqud_rma_refusal_next(ep, NULL)) != NULL) {
        uct_srqud_rma_refusal_free(iface, ep, rec);
    }
    ep->flags &= ~UCT_SRQUD_EP_FLAG_ACK_HELD;
}
