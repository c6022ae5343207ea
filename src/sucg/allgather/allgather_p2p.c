/*
 * Point-to-point allgather: the same schedules as the RDMA executor, over
 * tagged send/receive. The baseline for comparison, and the fallback that
 * needs no registration, no group-buffer space and no rkeys: the RDMA
 * executor also posts a step's receives and sends here when a receive
 * buffer could not be registered (see allgather_rdma.c).
 *
 * Per step: post the receives, post the sends, wait for all of them, next
 * step (a step's sends may contain what the previous step received). UCP
 * buffers unexpected messages, so no readiness handshake is needed.
 *
 * Tags: bit 63 set (keeps clear of applications that use small tags), group
 * id in bits 48..62, sequence number in 16..47, step*2+range in 0..15. The
 * full tag is matched, so collectives of different groups or sequence
 * numbers never mix. Limits the ring to 32767 ranks.
 */
#include "sucg/core/sucg_internal.h"

static ucp_tag_t sucg_p2p_tag(sucg_coll_h coll, int step, int range)
{
    return (1ull << 63) | ((ucp_tag_t)(coll->group->id & 0x7fff) << 48) |
           ((coll->seq & 0xffffffffull) << 16) |
           ((ucp_tag_t)(step * SUCG_SCHED_MAX_RANGES + range) & 0xffff);
}

static void sucg_p2p_recv_cb(void *request, ucs_status_t status,
                             const ucp_tag_recv_info_t *info, void *user_data)
{
    sucg_coll_h coll = user_data;

    if ((status != UCS_OK) && (coll->req_status == UCS_OK)) {
        coll->req_status = status;
    }
    coll->outstanding--;
    ucp_request_free(request);
}

/* The current step's receives (into rbuf) and/or sends (from rbuf), as
 * @a dirs says; range i of a send matches range i of the peer's receive in
 * the same step (one schedule on both sides) */
ucs_status_t sucg_p2p_post(sucg_coll_h coll, const sucg_sched_step_t *st,
                           unsigned dirs)
{
    sucg_group_h g = coll->group;
    uint8_t *rbuf  = coll->params.rbuf;
    size_t m       = coll->params.count;
    ucp_request_param_t param;
    ucs_status_t status;
    int i;

    for (i = 0; (dirs & SUCG_P2P_RECV) && (i < st->n_recv); ++i) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.recv      = sucg_p2p_recv_cb;
        param.user_data    = coll;
        status = sucg_coll_req_track(coll, ucp_tag_recv_nbx(
                                     g->ctx->ucp_worker,
                                     rbuf + st->recv[i].first * m,
                                     st->recv[i].count * m,
                                     sucg_p2p_tag(coll, coll->step, i),
                                     (ucp_tag_t)-1, &param));
        if (status != UCS_OK) {
            return status;
        }
    }
    for (i = 0; (dirs & SUCG_P2P_SEND) && (i < st->n_send); ++i) {
        sucg_coll_req_param(coll, &param, NULL);
        status = sucg_coll_req_track(coll, ucp_tag_send_nbx(
                                     g->peers[st->send_peer].ep,
                                     rbuf + st->send[i].first * m,
                                     st->send[i].count * m,
                                     sucg_p2p_tag(coll, coll->step, i),
                                     &param));
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

static ucs_status_t sucg_p2p_progress(sucg_coll_h coll)
{
    sucg_group_h g = coll->group;
    sucg_sched_step_t st;
    ucs_status_t status;

    for (;;) {
        if (coll->req_status != UCS_OK) {
            return coll->req_status;
        }
        if (coll->outstanding > 0) {
            return UCS_INPROGRESS;
        }
        if (coll->sent) {
            coll->step++;
            coll->sent = 0;
        }
        if (coll->step >= coll->nsteps) {
            return UCS_OK;
        }
        sucg_sched_step(coll->kind, g->size, g->rank, coll->step, &st);
        status     = sucg_p2p_post(coll, &st, SUCG_P2P_RECV | SUCG_P2P_SEND);
        coll->sent = 1;
        if (status != UCS_OK) {
            return status;
        }
    }
}

static ucs_status_t sucg_p2p_start(sucg_coll_h coll)
{
    sucg_group_h g = coll->group;
    size_t m       = coll->params.count;
    uint8_t *own   = (uint8_t*)coll->params.rbuf + g->rank * m;

    if (!(coll->params.flags & SUCG_COLL_FLAG_IN_PLACE) &&
        (coll->params.sbuf != own)) {
        memcpy(own, coll->params.sbuf, m);
    }
    if (m == 0) {
        return UCS_OK;
    }
    return sucg_p2p_progress(coll);
}

const sucg_coll_ops_t sucg_allgather_p2p_ops = {
    .start    = sucg_p2p_start,
    .progress = sucg_p2p_progress,
    .cleanup  = NULL
};
