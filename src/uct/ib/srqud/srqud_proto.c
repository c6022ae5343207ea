/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_proto.h"
#include "srqud_rma.h"
#include "srqud_rma_refusal.h"
#include "srqud_zcopy.h"


static unsigned uct_srqud_proto_progress(uct_srqud_iface_t *iface,
                                         ucs_time_t now, int async)
{
    unsigned count = 0;

    if (async) {
        return uct_srqud_zcopy_active(iface) ?
               uct_srqud_zcopy_async_progress(iface) : 0;
    }

    if (uct_srqud_zcopy_active(iface)) {
        count += uct_srqud_zcopy_progress(iface);
    }
    if (!ucs_list_is_empty(&iface->rma.ops)) {
        count += uct_srqud_rma_progress(iface, now);
    }
    return count;
}


static int uct_srqud_proto_idle(uct_srqud_iface_t *iface)
{
    return ucs_list_is_empty(&iface->rma.ops) && uct_srqud_zcopy_idle(iface);
}


static void uct_srqud_proto_ep_cleanup(uct_srqud_iface_t *iface,
                                       uct_srqud_ep_t *ep, ucs_status_t status)
{
    uct_srqud_rma_ep_cleanup(iface, ep, status);
    uct_srqud_zcopy_ep_cleanup(iface, ep, status);
}



#define UCT_SRQUD_ROUTE(_ctl, _min, _flags, _request, _answer) \
    [UCT_SRQUD_CTL_##_ctl] = {#_ctl, _min, _flags, _request, _answer}

const uct_srqud_proto_t uct_srqud_proto = {
    .routes = {
        /* CREQ, CREP, ACK, NACK, NOP: the endpoint's own (srqud_ep_rx.c) */
        UCT_SRQUD_ROUTE(RMA_PUT, sizeof(uct_srqud_rma_hdr_t), 0,
                        uct_srqud_rma_rx_put, NULL),
        UCT_SRQUD_ROUTE(RMA_GET, sizeof(uct_srqud_rma_hdr_t), 0,
                        uct_srqud_rma_rx_get, NULL),
        UCT_SRQUD_ROUTE(RMA_REPLY, sizeof(uct_srqud_rma_reply_t),
                        UCT_SRQUD_CTL_ROUTE_BEFORE_ACK,
                        NULL, uct_srqud_rma_rx_reply),
        UCT_SRQUD_ROUTE(ZGET, sizeof(uct_srqud_zhdr_t), 0,
                        uct_srqud_zcopy_rx_zget, NULL),
        UCT_SRQUD_ROUTE(ZPUT, sizeof(uct_srqud_zhdr_t), 0,
                        uct_srqud_zcopy_rx_zput, NULL),
        UCT_SRQUD_ROUTE(ZCTS, sizeof(uct_srqud_zhdr_t), 0,
                        NULL, uct_srqud_zcopy_rx_zcts),
        /* a put's source says it sent a round (request); a get's source
         * says the same, or refuses (answer) */
        UCT_SRQUD_ROUTE(ZFIN, sizeof(uct_srqud_zhdr_t), 0,
                        uct_srqud_zcopy_rx_zfin_put, uct_srqud_zcopy_rx_zfin_get),
        UCT_SRQUD_ROUTE(ZACK, sizeof(uct_srqud_zhdr_t), 0,
                        NULL, uct_srqud_zcopy_rx_zack),
        UCT_SRQUD_ROUTE(RMA_REFUSE, sizeof(uct_srqud_rma_refusal_t),
                        UCT_SRQUD_CTL_ROUTE_BEFORE_ACK,
                        NULL, uct_srqud_rma_rx_refuse),
        UCT_SRQUD_ROUTE(RMA_SEEN, sizeof(uct_srqud_rma_seen_t),
                        UCT_SRQUD_CTL_ROUTE_UNSEQUENCED,
                        uct_srqud_rma_rx_seen, NULL)
    },
    .progress   = uct_srqud_proto_progress,
    .idle       = uct_srqud_proto_idle,
    .ep_cleanup = uct_srqud_proto_ep_cleanup,
    .ack_held   = uct_srqud_rma_refusal_send,
    .ep_release = uct_srqud_zcopy_ep_release
};
