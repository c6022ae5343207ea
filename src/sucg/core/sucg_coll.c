/*
 * Collective requests: init/start/test/wait/free, the per-group FIFO, and
 * sucg_progress(), which drives the FIFOs of every group of a context.
 *
 * Progress lives here, not in sucg_context.c, so that calls go one way:
 * this file reads the context's list of groups and runs the algorithms
 * through their ops tables; neither the context nor the algorithms call
 * back into it (their UCP requests are accounted by sucg_coll_req.c).
 *
 * Collectives of a group run one at a time in start order. Besides matching
 * MPI's ordering rule, this is what makes two group-buffer halves enough
 * (see allgather_rdma.c): a rank starts collective n+1 only after n is
 * complete locally, including local completion of all its puts.
 */
#include "sucg/core/sucg_internal.h"

#include <stdlib.h>

SUCG_EXPORT const char *sucg_allgather_algo_name(sucg_allgather_algo_t algo)
{
    const char *name = sucg_config_algo_name(algo);
    return (name != NULL) ? name : "invalid";
}

SUCG_EXPORT ucs_status_t sucg_coll_init(sucg_group_h group,
                                        const sucg_coll_params_t *params,
                                        sucg_coll_h *coll_p)
{
    sucg_coll_h coll;
    size_t total;

    if ((params == NULL) || (params->type != SUCG_COLL_ALLGATHER) ||
        ((unsigned)params->algo >= SUCG_ALLGATHER_LAST) ||
        ((params->count > 0) && (params->rbuf == NULL)) ||
        ((params->count > 0) && !(params->flags & SUCG_COLL_FLAG_IN_PLACE) &&
         (params->sbuf == NULL))) {
        sucg_error("sucg_coll_init: invalid parameters");
        return UCS_ERR_INVALID_PARAM;
    }
    total = params->count * (size_t)group->size;
    if ((group->size > 0) && (total / group->size != params->count)) {
        sucg_error("sucg_coll_init: count * size overflows");
        return UCS_ERR_INVALID_PARAM;
    }

    coll = calloc(1, sizeof(*coll));
    if (coll == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    coll->group  = group;
    coll->params = *params;
    coll->state  = SUCG_COLL_STATE_IDLE;
    coll->status = UCS_OK;
    /* a function of the configuration (checked equal at group creation),
     * count and size only: every rank picks the same algorithm */
    coll->algo   = sucg_config_select(&group->ctx->config, params->algo,
                                      params->count, group->size);
    switch (coll->algo) {
    case SUCG_ALLGATHER_RING:
        coll->kind = SUCG_SCHED_RING;
        coll->ops  = &sucg_allgather_rdma_ops;
        break;
    case SUCG_ALLGATHER_P2P_RD:
        coll->kind = SUCG_SCHED_RD;
        coll->ops  = &sucg_allgather_p2p_ops;
        break;
    case SUCG_ALLGATHER_P2P_RING:
        coll->kind = SUCG_SCHED_RING;
        coll->ops  = &sucg_allgather_p2p_ops;
        break;
    default:
        coll->kind = SUCG_SCHED_RD;
        coll->ops  = &sucg_allgather_rdma_ops;
        break;
    }
    coll->nsteps = sucg_sched_nsteps(coll->kind, group->size);
    *coll_p      = coll;
    return UCS_OK;
}

static void sucg_coll_finish(sucg_coll_h coll, ucs_status_t status)
{
    sucg_group_h g = coll->group;

    if ((status != UCS_OK) && (coll->ops->cleanup != NULL)) {
        coll->ops->cleanup(coll);
    }
    coll->status    = status;
    coll->state     = SUCG_COLL_STATE_DONE;
    g->queue_head   = coll->next;
    if (g->queue_head == NULL) {
        g->queue_tail = NULL;
    }
    coll->next = NULL;
    if (status == UCS_OK) {
        g->ctx->stats.colls_by_algo[coll->algo]++;
    } else {
        sucg_error("allgather (%s, %zu bytes, seq %llu) failed: %s",
                   sucg_allgather_algo_name(coll->algo), coll->params.count,
                   (unsigned long long)coll->seq, ucs_status_string(status));
    }
}

/* Start/progress the collectives of a group in FIFO order while they finish */
static unsigned sucg_group_progress(sucg_group_h g)
{
    unsigned count = 0;
    sucg_coll_h coll;
    ucs_status_t status;

    while ((coll = g->queue_head) != NULL) {
        if (coll->state == SUCG_COLL_STATE_QUEUED) {
            coll->seq         = ++g->seq;
            coll->state       = SUCG_COLL_STATE_RUNNING;
            coll->step        = 0;
            coll->sent        = 0;
            coll->req_status  = UCS_OK;
            coll->outstanding = 0;
            coll->flushing    = 0;
            status            = coll->ops->start(coll);
        } else {
            status = coll->ops->progress(coll);
        }
        if (status == UCS_INPROGRESS) {
            break;
        }
        sucg_coll_finish(coll, status);
        ++count;
    }
    return count;
}

SUCG_EXPORT unsigned sucg_progress(sucg_context_h ctx)
{
    unsigned count = ucp_worker_progress(ctx->ucp_worker);
    sucg_group_h g;

    for (g = ctx->groups; g != NULL; g = g->next) {
        if (g->queue_head != NULL) {
            count += sucg_group_progress(g);
        }
    }
    return count;
}

SUCG_EXPORT ucs_status_t sucg_coll_start(sucg_coll_h coll)
{
    sucg_group_h g = coll->group;

    if ((coll->state == SUCG_COLL_STATE_QUEUED) ||
        (coll->state == SUCG_COLL_STATE_RUNNING)) {
        return UCS_ERR_BUSY;
    }
    if (coll->started_once &&
        !(coll->params.flags & SUCG_COLL_FLAG_PERSISTENT)) {
        sucg_error("sucg_coll_start: collective is not persistent");
        return UCS_ERR_INVALID_PARAM;
    }
    coll->started_once = 1;
    coll->state        = SUCG_COLL_STATE_QUEUED;
    coll->status       = UCS_INPROGRESS;
    coll->next         = NULL;
    if (g->queue_tail != NULL) {
        g->queue_tail->next = coll;
    } else {
        g->queue_head = coll;
    }
    g->queue_tail = coll;
    sucg_group_progress(g);
    return UCS_OK;
}

SUCG_EXPORT ucs_status_t sucg_coll_test(sucg_coll_h coll)
{
    if ((coll->state == SUCG_COLL_STATE_QUEUED) ||
        (coll->state == SUCG_COLL_STATE_RUNNING)) {
        sucg_progress(coll->group->ctx);
    }
    if ((coll->state == SUCG_COLL_STATE_QUEUED) ||
        (coll->state == SUCG_COLL_STATE_RUNNING)) {
        return UCS_INPROGRESS;
    }
    return coll->status;
}

SUCG_EXPORT ucs_status_t sucg_coll_wait(sucg_coll_h coll)
{
    ucs_status_t status;

    while ((status = sucg_coll_test(coll)) == UCS_INPROGRESS) {
    }
    return status;
}

SUCG_EXPORT void sucg_coll_free(sucg_coll_h coll)
{
    if ((coll->state == SUCG_COLL_STATE_QUEUED) ||
        (coll->state == SUCG_COLL_STATE_RUNNING)) {
        /* UCP callbacks still point at it: waiting is the only safe option */
        sucg_warn("sucg_coll_free: collective in progress, waiting for it");
        sucg_coll_wait(coll);
    }
    free(coll);
}

SUCG_EXPORT sucg_allgather_algo_t sucg_coll_algo(sucg_coll_h coll)
{
    return coll->algo;
}

SUCG_EXPORT ucs_status_t sucg_allgather(sucg_group_h group, const void *sbuf,
                                        void *rbuf, size_t count,
                                        unsigned flags)
{
    sucg_coll_params_t params = {
        .type  = SUCG_COLL_ALLGATHER,
        .sbuf  = sbuf,
        .rbuf  = rbuf,
        .count = count,
        .flags = flags & ~SUCG_COLL_FLAG_PERSISTENT,
        .algo  = SUCG_ALLGATHER_AUTO
    };
    sucg_coll_h coll;
    ucs_status_t status;

    status = sucg_coll_init(group, &params, &coll);
    if (status != UCS_OK) {
        return status;
    }
    status = sucg_coll_start(coll);
    if (status == UCS_OK) {
        status = sucg_coll_wait(coll);
    }
    sucg_coll_free(coll);
    return status;
}
