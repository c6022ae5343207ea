/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_peek.h"

#include <uct/ib/srqud/srqud_zcopy.h>
#include <uct/ib/srqud/srqud_ep_tx.h>
#include <uct/ib/srqud/srqud_proto.h>

#include <stdio.h>


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


void srqud_peek_quiet_blockers(uct_iface_h tl_iface, char *buf, size_t max)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    const struct {
        const char *name;
        int        set;
    } c[] = {
        {"user_sends",       iface->tx.user_sends != 0},
        {"batch_count",      iface->tx.batch_count != 0},
        {"recent",           iface->tx.recent != 0},
        {"rx_stash",         iface->rx.stash_count != 0},
        {"async_ran",        iface->async.ran != 0},
        {"back_due",         iface->async.back_due != 0},
        {"wd_hold",          iface->async.wd_hold != 0},
        {"flushed",          iface->tx.flushed != 0},
        {"tx_stash",         iface->tx.stash_count != 0},
        {"signaled_pending", uct_srqud_tx_signaled_pending(iface)},
        {"poll_unsignaled",  iface->tx.poll_unsignaled != 0},
        {"qp_error",         iface->tx.qp_error != 0},
        {"async_rx_q",       !ucs_queue_is_empty(&iface->async.rx_q)},
        {"proto_pending",    uct_srqud_proto_pending(iface)},
        {"arbiter",          !ucs_arbiter_is_empty(&iface->tx.arbiter)},
        {"no_quiet_left",    iface->async.quiet_left == 0}
    };
    size_t i, len = 0;

    buf[0] = '\0';
    for (i = 0; (i < sizeof(c) / sizeof(c[0])) && (len + 1 < max); ++i) {
        if (c[i].set) {
            len += snprintf(buf + len, max - len, " %s", c[i].name);
        }
    }
}
