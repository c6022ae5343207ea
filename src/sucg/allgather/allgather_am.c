/*
 * A staged step as one active message (allgather_am_def.h for the format,
 * core/sucg_am_rx.c receives it): called by the RDMA executor for a staged
 * step when every rank of the group takes them so.
 */
#include "sucg/core/sucg_internal.h"

ucs_status_t sucg_am_send_step(sucg_coll_h coll, const sucg_sched_step_t *st,
                               ucp_ep_h ep)
{
    sucg_group_h g    = coll->group;
    sucg_am_tx_t *tx  = &coll->am_tx[coll->step];
    size_t m          = coll->params.count;
    uint8_t *stage    = sucg_stage(g, coll->seq);
    ucp_request_param_t param;
    const void *buf;
    size_t count;
    int i;

    /* header and iov live until the send completes: one pair per step */
    memset(&tx->hdr, 0, sizeof(tx->hdr));
    tx->hdr.seq      = coll->seq;
    tx->hdr.group_id = g->id;
    tx->hdr.step     = (uint16_t)coll->step;
    tx->hdr.nranges  = (uint16_t)st->n_send;
    for (i = 0; i < st->n_send; ++i) {
        tx->hdr.range[i].off = (uint32_t)(st->send[i].first * m);
        tx->hdr.range[i].len = (uint32_t)(st->send[i].count * m);
        tx->iov[i].buffer    = stage + tx->hdr.range[i].off;
        tx->iov[i].length    = tx->hdr.range[i].len;
    }
    sucg_coll_req_param(coll, &param, NULL);
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    param.flags         = UCP_AM_SEND_FLAG_EAGER;
    if (st->n_send == 1) {
        buf   = tx->iov[0].buffer;
        count = tx->iov[0].length;
    } else {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
        param.datatype      = ucp_dt_make_iov();
        buf                 = tx->iov;
        count               = st->n_send;
    }
    g->ctx->stats.am_steps++;
    return sucg_coll_req_track(coll, ucp_am_send_nbx(ep, g->ctx->am_id,
                                                     &tx->hdr, sizeof(tx->hdr),
                                                     buf, count, &param));
}
