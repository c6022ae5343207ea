/*
 * tl/sucg: Allgather tasks. Each UCC task is one sucg collective: the
 * algorithms themselves are sucg's (src/sucg/allgather), shared with sucg's
 * own API, Open MPI's coll/sucg and the MPICH PMPI library.
 */
#include "tl_sucg.h"
#include "core/ucc_dt.h"
#include "utils/ucc_coll_utils.h"

enum {
    UCC_TL_SUCG_ALLGATHER_ALG_AUTO,
    UCC_TL_SUCG_ALLGATHER_ALG_RD,
    UCC_TL_SUCG_ALLGATHER_ALG_RING,
    UCC_TL_SUCG_ALLGATHER_ALG_P2P_RD,
    UCC_TL_SUCG_ALLGATHER_ALG_P2P_RING,
    UCC_TL_SUCG_ALLGATHER_ALG_LAST
};

ucc_base_coll_alg_info_t
    ucc_tl_sucg_allgather_algs[UCC_TL_SUCG_ALLGATHER_ALG_LAST + 1] = {
        [UCC_TL_SUCG_ALLGATHER_ALG_AUTO] =
            {.id   = UCC_TL_SUCG_ALLGATHER_ALG_AUTO,
             .name = "auto",
             .desc = "sucg's own choice (SUCG_RING_MIN_BYTES/_RANKS)"},
        [UCC_TL_SUCG_ALLGATHER_ALG_RD] =
            {.id   = UCC_TL_SUCG_ALLGATHER_ALG_RD,
             .name = "rd",
             .desc = "RDMA recursive doubling through the pre-registered "
                     "team buffer, zero-copy above SUCG_ALLGATHER_ZCOPY_THRESH"},
        [UCC_TL_SUCG_ALLGATHER_ALG_RING] =
            {.id   = UCC_TL_SUCG_ALLGATHER_ALG_RING,
             .name = "ring",
             .desc = "RDMA ring, zero-copy into the peers' receive buffers"},
        [UCC_TL_SUCG_ALLGATHER_ALG_P2P_RD] =
            {.id   = UCC_TL_SUCG_ALLGATHER_ALG_P2P_RD,
             .name = "p2p_rd",
             .desc = "recursive doubling over tagged send/receive"},
        [UCC_TL_SUCG_ALLGATHER_ALG_P2P_RING] =
            {.id   = UCC_TL_SUCG_ALLGATHER_ALG_P2P_RING,
             .name = "p2p_ring",
             .desc = "ring over tagged send/receive"},
        [UCC_TL_SUCG_ALLGATHER_ALG_LAST] = {.id = 0, .name = NULL, .desc = NULL}};

static const sucg_allgather_algo_t ucc_tl_sucg_algo[] = {
    [UCC_TL_SUCG_ALLGATHER_ALG_AUTO]     = SUCG_ALLGATHER_AUTO,
    [UCC_TL_SUCG_ALLGATHER_ALG_RD]       = SUCG_ALLGATHER_RECURSIVE_DOUBLING,
    [UCC_TL_SUCG_ALLGATHER_ALG_RING]     = SUCG_ALLGATHER_RING,
    [UCC_TL_SUCG_ALLGATHER_ALG_P2P_RD]   = SUCG_ALLGATHER_P2P_RD,
    [UCC_TL_SUCG_ALLGATHER_ALG_P2P_RING] = SUCG_ALLGATHER_P2P_RING};

static ucc_status_t ucc_tl_sucg_allgather_start(ucc_coll_task_t *coll_task)
{
    ucc_tl_sucg_task_t *task = ucc_derived_of(coll_task, ucc_tl_sucg_task_t);
    ucc_tl_sucg_team_t *team = ucc_derived_of(coll_task->team,
                                              ucc_tl_sucg_team_t);
    ucs_status_t status;

    status = sucg_coll_start(task->coll);
    if (status != UCS_OK) {
        task->super.status = ucs_status_to_ucc_status(status);
        return task->super.status;
    }
    task->super.status = UCC_INPROGRESS;
    return ucc_progress_queue_enqueue(UCC_TL_CORE_CTX(team)->pq, &task->super);
}

static void ucc_tl_sucg_allgather_progress(ucc_coll_task_t *coll_task)
{
    ucc_tl_sucg_task_t *task = ucc_derived_of(coll_task, ucc_tl_sucg_task_t);
    /* progresses the TL's worker too: UCC calls registered progress
     * functions only while its queue is empty */
    ucs_status_t status      = sucg_coll_test(task->coll);

    task->super.status = (status == UCS_INPROGRESS) ? UCC_INPROGRESS :
                         ucs_status_to_ucc_status(status);
}

static ucc_status_t ucc_tl_sucg_allgather_finalize(ucc_coll_task_t *coll_task)
{
    ucc_tl_sucg_task_t *task = ucc_derived_of(coll_task, ucc_tl_sucg_task_t);

    sucg_coll_free(task->coll);
    ucc_mpool_put(task);
    return UCC_OK;
}

/*
 * Argument checks. The ones that can tell a broken call on this rank alone
 * return UCC_ERR_INVALID_PARAM (UCC gives it to the user); what sucg does
 * not do returns UCC_ERR_NOT_SUPPORTED so that UCC takes the next TL, and
 * depends only on what every rank of a correct program passes alike (a
 * fallback on some ranks only would hang the others).
 */
static ucc_status_t ucc_tl_sucg_allgather_check(const ucc_coll_args_t *args,
                                                ucc_rank_t size,
                                                size_t *block_p)
{
    size_t dst_dt, src_dt, block;

    if (args->dst.info.mem_type != UCC_MEMORY_TYPE_HOST ||
        (!UCC_IS_INPLACE(*args) &&
         (args->src.info.mem_type != UCC_MEMORY_TYPE_HOST))) {
        return UCC_ERR_NOT_SUPPORTED;
    }
    if (!UCC_DT_IS_PREDEFINED(args->dst.info.datatype) ||
        (!UCC_IS_INPLACE(*args) &&
         !UCC_DT_IS_PREDEFINED(args->src.info.datatype))) {
        return UCC_ERR_NOT_SUPPORTED;
    }
    if (args->dst.info.count % size) {
        return UCC_ERR_INVALID_PARAM;   /* no equal blocks: not an allgather */
    }
    dst_dt = ucc_dt_size(args->dst.info.datatype);
    block  = (args->dst.info.count / size) * dst_dt;
    if (!UCC_IS_INPLACE(*args)) {
        src_dt = ucc_dt_size(args->src.info.datatype);
        if (args->src.info.count * src_dt != block) {
            return UCC_ERR_INVALID_PARAM;
        }
    }
    *block_p = block;
    return UCC_OK;
}

static ucc_status_t ucc_tl_sucg_allgather_init(ucc_base_coll_args_t *coll_args,
                                               ucc_base_team_t *tl_team,
                                               ucc_coll_task_t **task_h,
                                               int alg)
{
    ucc_tl_sucg_team_t *team   = ucc_derived_of(tl_team, ucc_tl_sucg_team_t);
    ucc_tl_sucg_context_t *ctx = UCC_TL_SUCG_TEAM_CTX(team);
    const ucc_coll_args_t *args = &coll_args->args;
    sucg_coll_params_t cp       = {0};
    ucc_tl_sucg_task_t *task;
    ucc_status_t status;
    size_t block;

    if (args->coll_type != UCC_COLL_TYPE_ALLGATHER) {
        return UCC_ERR_NOT_SUPPORTED;
    }
    status = ucc_tl_sucg_allgather_check(args, UCC_TL_TEAM_SIZE(team), &block);
    if (status != UCC_OK) {
        tl_debug(UCC_TL_TEAM_LIB(team), "allgather not taken: %s",
                 ucc_status_string(status));
        return status;
    }
    /* freed memory leaves the registration cache before it is looked up */
    ucc_tl_sucg_rcache_sync(ctx);

    task = ucc_mpool_get(&ctx->task_mp);
    if (task == NULL) {
        return UCC_ERR_NO_MEMORY;
    }
    ucc_coll_task_init(&task->super, coll_args, tl_team);
    cp.type  = SUCG_COLL_ALLGATHER;
    cp.sbuf  = UCC_IS_INPLACE(*args) ? NULL : args->src.info.buffer;
    cp.rbuf  = args->dst.info.buffer;
    cp.count = block;
    cp.flags = (UCC_IS_INPLACE(*args) ? SUCG_COLL_FLAG_IN_PLACE : 0) |
               (UCC_IS_PERSISTENT(*args) ? SUCG_COLL_FLAG_PERSISTENT : 0);
    cp.algo  = ucc_tl_sucg_algo[alg];
    status   = ucs_status_to_ucc_status(sucg_coll_init(team->group, &cp,
                                                       &task->coll));
    if (status != UCC_OK) {
        ucc_mpool_put(task);
        return status;
    }
    task->super.post     = ucc_tl_sucg_allgather_start;
    task->super.progress = ucc_tl_sucg_allgather_progress;
    task->super.finalize = ucc_tl_sucg_allgather_finalize;
    *task_h              = &task->super;
    return UCC_OK;
}

#define UCC_TL_SUCG_ALG_INIT(_name, _alg) \
    static ucc_status_t ucc_tl_sucg_allgather_init_##_name( \
        ucc_base_coll_args_t *coll_args, ucc_base_team_t *team, \
        ucc_coll_task_t **task_h) \
    { \
        return ucc_tl_sucg_allgather_init(coll_args, team, task_h, _alg); \
    }
UCC_TL_SUCG_ALG_INIT(rd, UCC_TL_SUCG_ALLGATHER_ALG_RD)
UCC_TL_SUCG_ALG_INIT(ring, UCC_TL_SUCG_ALLGATHER_ALG_RING)
UCC_TL_SUCG_ALG_INIT(p2p_rd, UCC_TL_SUCG_ALLGATHER_ALG_P2P_RD)
UCC_TL_SUCG_ALG_INIT(p2p_ring, UCC_TL_SUCG_ALLGATHER_ALG_P2P_RING)

ucc_status_t ucc_tl_sucg_coll_init(ucc_base_coll_args_t *coll_args,
                                   ucc_base_team_t *team,
                                   ucc_coll_task_t **task_h)
{
    return ucc_tl_sucg_allgather_init(coll_args, team, task_h,
                                      UCC_TL_SUCG_ALLGATHER_ALG_AUTO);
}

ucc_status_t ucc_tl_sucg_alg_id_to_init(int alg_id, const char *alg_id_str,
                                        ucc_coll_type_t coll_type,
                                        ucc_memory_type_t mem_type,
                                        ucc_base_coll_init_fn_t *init)
{
    static const ucc_base_coll_init_fn_t inits[] = {
        [UCC_TL_SUCG_ALLGATHER_ALG_AUTO]     = ucc_tl_sucg_coll_init,
        [UCC_TL_SUCG_ALLGATHER_ALG_RD]       = ucc_tl_sucg_allgather_init_rd,
        [UCC_TL_SUCG_ALLGATHER_ALG_RING]     = ucc_tl_sucg_allgather_init_ring,
        [UCC_TL_SUCG_ALLGATHER_ALG_P2P_RD]   = ucc_tl_sucg_allgather_init_p2p_rd,
        [UCC_TL_SUCG_ALLGATHER_ALG_P2P_RING] = ucc_tl_sucg_allgather_init_p2p_ring};
    int i;

    /* mem_type is not looked at: a TUNE string without one asks for every
     * type, and the scores cover host memory only anyway */
    if (coll_type != UCC_COLL_TYPE_ALLGATHER) {
        return UCC_ERR_NOT_SUPPORTED;
    }
    if (alg_id_str != NULL) {
        alg_id = -1;
        for (i = 0; i < UCC_TL_SUCG_ALLGATHER_ALG_LAST; ++i) {
            if (!strcmp(alg_id_str, ucc_tl_sucg_allgather_algs[i].name)) {
                alg_id = i;
            }
        }
    }
    if ((alg_id < 0) || (alg_id >= UCC_TL_SUCG_ALLGATHER_ALG_LAST)) {
        return UCC_ERR_INVALID_PARAM;
    }
    *init = inits[alg_id];
    return UCC_OK;
}
