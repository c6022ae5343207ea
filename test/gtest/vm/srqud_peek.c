/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_peek.h"

#include <uct/ib/srqud/srqud_zcopy.h>
#include <uct/ib/srqud/srqud_ep_tx.h>


int srqud_peek_busy_pool_qp(uct_iface_h tl_iface, srqud_peek_pool_qp_t *info)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    const uct_srqud_pool_qp_t *pqp;
    unsigned i;

    for (i = 0; i < iface->config.zcopy_qps; ++i) {
        pqp = &iface->zcopy.pool[i];
        if ((pqp->qp != NULL) && (pqp->xfer != NULL)) {
            info->qp_num = pqp->qp->qp_num;
            info->qkey   = pqp->qkey;
            info->gen    = pqp->gen;
            info->chunk  = pqp->xfer->chunk;
            return 1;
        }
    }
    return 0;
}


int srqud_peek_ep_can_send(uct_ep_h tl_ep)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = uct_srqud_ep_iface(ep);

    return uct_srqud_tx_has_resources(iface) &&
           uct_srqud_ep_tx_window_open(iface, ep);
}


void srqud_peek_tx_pool(uct_iface_h tl_iface, unsigned *chunks, unsigned *elems)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    const ucs_mpool_chunk_t *chunk;

    *chunks = 0;
    *elems  = 0;
    for (chunk = iface->tx.mp.data->chunks; chunk != NULL;
         chunk = chunk->next) {
        ++*chunks;
        *elems += chunk->num_elems;
    }
}
