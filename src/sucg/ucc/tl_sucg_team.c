/*
 * tl/sucg: the team, a sucg group created without blocking.
 *
 * create_post only records the parameters: it must neither block nor fail
 * on one rank alone. create_test then steps through
 *   CONNECT   endpoints to every member (from UCC's context addresses) and
 *             this rank's group record (sucg_group_create_post: the group
 *             buffer registered, its address and rkey packed)
 *   EXCHANGE  a UCC service allgather of the records
 *   AGREE     sucg_group_create_complete, then a service allreduce (MIN)
 *             of the outcome: a team exists on all members or on none,
 *             since a rank without it would run UCC's other algorithm
 *             while the rest wait in ours
 * Local failures before AGREE still take part in every exchange.
 */
#include "tl_sucg.h"
#include "sucg/mpi/sucg_mpi_tune.h"   /* sucg_mpi_tune_tl_is_shm */
#include "coll_score/ucc_coll_score.h"
#include "core/ucc_team.h"
#include "utils/ucc_malloc.h"

/*
 * Where this TL is faster than tl/ucp's allgathers by default, from the
 * benchmark (contrib/bench/ucc-allgather.sh; NEWS, issue 12): over shared
 * memory, rd at every size for 2 ranks and, for 4 and 8, up to 64 KB and
 * from 1 MB in all (it lost at 32 KB per rank); over rc_verbs and srqud
 * (Soft-RoCE) nowhere beyond the spread. So the ranges are raised for
 * teams whose every peer is reached over shared memory only, and for the
 * team sizes measured; UCC_TL_SUCG_TUNE adds to or overrides them.
 */
#define UCC_TL_SUCG_BUILTIN_TUNE_SHM \
    "allgather:[2]:0-inf:@rd:20#" \
    "allgather:[4,8]:0-64K:@rd:20#" \
    "allgather:[4,8]:1M-inf:@rd:20"

/* Whether every lane of every endpoint of the team is a shared-memory
 * transport (an endpoint that cannot say: no) */
static int ucc_tl_sucg_team_shm_only(ucc_tl_sucg_team_t *team)
{
    ucp_transport_entry_t entries[16];
    ucp_ep_attr_t attr;
    ucc_rank_t r;
    unsigned i;

    for (r = 0; r < UCC_TL_TEAM_SIZE(team); ++r) {
        if (r == UCC_TL_TEAM_RANK(team)) {
            continue;
        }
        attr.field_mask             = UCP_EP_ATTR_FIELD_TRANSPORTS;
        attr.transports.entries     = entries;
        attr.transports.num_entries = ucs_static_array_size(entries);
        attr.transports.entry_size  = sizeof(entries[0]);
        if ((team->eps[r] == NULL) ||
            (ucp_ep_query(team->eps[r], &attr) != UCS_OK) ||
            (attr.transports.num_entries == 0)) {
            return 0;
        }
        for (i = 0; i < attr.transports.num_entries; ++i) {
            if (!sucg_mpi_tune_tl_is_shm(entries[i].transport_name)) {
                return 0;
            }
        }
    }
    return UCC_TL_TEAM_SIZE(team) > 1;
}

UCC_CLASS_INIT_FUNC(ucc_tl_sucg_team_t, ucc_base_context_t *tl_context,
                    const ucc_base_team_params_t *params)
{
    ucc_tl_sucg_context_t *ctx = ucc_derived_of(tl_context,
                                                ucc_tl_sucg_context_t);

    UCC_CLASS_CALL_SUPER_INIT(ucc_tl_team_t, &ctx->super, params);
    self->state   = UCC_TL_SUCG_TEAM_CONNECT;
    self->group   = NULL;
    self->eps     = NULL;
    self->records = NULL;
    self->req     = NULL;
    tl_debug(tl_context->lib, "posted tl team: %p", self);
    return UCC_OK;
}

UCC_CLASS_CLEANUP_FUNC(ucc_tl_sucg_team_t)
{
    tl_debug(self->super.super.context->lib, "finalizing tl team: %p", self);
    if (self->req != NULL) {
        ucc_service_coll_finalize(self->req);
    }
    if (self->group != NULL) {
        /* the endpoints belong to the context (shared by its teams) */
        sucg_group_destroy(self->group);
    }
    ucc_free(self->records);
    ucc_free(self->eps);
}

UCC_CLASS_DEFINE_DELETE_FUNC(ucc_tl_sucg_team_t, ucc_base_team_t);
UCC_CLASS_DEFINE(ucc_tl_sucg_team_t, ucc_tl_team_t);

ucc_status_t ucc_tl_sucg_team_destroy(ucc_base_team_t *tl_team)
{
    /* one call: Open MPI 4.1.4's coll/ucc does not call again on
     * UCC_INPROGRESS */
    UCC_CLASS_DELETE_FUNC_NAME(ucc_tl_sucg_team_t)(tl_team);
    return UCC_OK;
}

static ucc_subset_t ucc_tl_sucg_team_subset(ucc_tl_sucg_team_t *team)
{
    ucc_subset_t s;

    s.map    = UCC_TL_TEAM_MAP(team);
    s.myrank = UCC_TL_TEAM_RANK(team);
    return s;
}

/* CONNECT: endpoints and the local half of the group; any failure is
 * carried in the record, never returned before the exchange */
static ucc_status_t ucc_tl_sucg_team_connect(ucc_tl_sucg_team_t *team)
{
    ucc_tl_sucg_context_t *ctx = UCC_TL_SUCG_TEAM_CTX(team);
    ucc_rank_t size            = UCC_TL_TEAM_SIZE(team);
    ucc_rank_t me              = UCC_TL_TEAM_RANK(team);
    sucg_group_params_t gp     = {0};
    const void *record;
    size_t len;
    ucc_rank_t r;
    void *addr;

    team->eps = ucc_calloc(size, sizeof(*team->eps), "tl_sucg_team_eps");
    if (team->eps == NULL) {
        return UCC_ERR_NO_MEMORY;  /* nothing exchanged yet on any rank */
    }
    for (r = 0; r < size; ++r) {
        if (r == me) {
            continue;
        }
        addr = ucc_get_team_ep_addr(UCC_TL_CORE_CTX(team),
                                    UCC_TL_CORE_TEAM(team),
                                    ucc_ep_map_eval(UCC_TL_TEAM_MAP(team), r),
                                    ucc_tl_sucg.super.super.id);
        /* a missing endpoint stays NULL: sucg marks the record failed */
        ucc_tl_sucg_peer_ep(ctx, addr, &team->eps[r]);
    }
    gp.rank = me;
    gp.size = size;
    gp.eps  = team->eps;
    /* the UCC team id is the same on all members: the tags of the p2p
     * algorithms do not depend on the order teams are created in */
    gp.id   = (uint32_t)team->super.super.params.id + 1;
    if (sucg_group_create_post(ctx->sucg, &gp, &team->group, &record,
                               &len) != UCS_OK) {
        return UCC_ERR_NO_MEMORY;
    }
    team->records = ucc_malloc(len * size, "tl_sucg_team_records");
    if (team->records == NULL) {
        return UCC_ERR_NO_MEMORY;
    }
    if (size == 1) {
        /* UCC has no service team for one process: nothing to exchange */
        memcpy(team->records, record, len);
        return UCC_OK;
    }
    return ucc_service_allgather(UCC_TL_CORE_TEAM(team), (void*)record,
                                 team->records, len,
                                 ucc_tl_sucg_team_subset(team), &team->req);
}

/* the pending service collective is done (none pending: a team of one) */
static ucc_status_t ucc_tl_sucg_team_req_done(ucc_tl_sucg_team_t *team)
{
    ucc_status_t status;

    if (team->req == NULL) {
        return UCC_OK;
    }
    status = ucc_service_coll_test(team->req);

    if (status == UCC_INPROGRESS) {
        return status;
    }
    ucc_service_coll_finalize(team->req);
    team->req = NULL;
    return status;
}

/* EXCHANGE done: this rank's outcome, then the vote on it */
static ucc_status_t ucc_tl_sucg_team_vote(ucc_tl_sucg_team_t *team,
                                          ucc_status_t exchanged)
{
    ucc_status_t status = exchanged;

    if (status == UCC_OK) {
        status = ucs_status_to_ucc_status(
            sucg_group_create_complete(team->group, team->records));
        if (status != UCC_OK) {
            team->group = NULL;   /* destroyed by complete */
        }
    }
    team->ok = (status == UCC_OK);
    ucc_free(team->records);
    team->records = NULL;
    if (UCC_TL_TEAM_SIZE(team) == 1) {
        team->all_ok = team->ok;
        return UCC_OK;
    }
    return ucc_service_allreduce(UCC_TL_CORE_TEAM(team), &team->ok,
                                 &team->all_ok, UCC_DT_INT32, 1, UCC_OP_MIN,
                                 ucc_tl_sucg_team_subset(team), &team->req);
}

ucc_status_t ucc_tl_sucg_team_create_test(ucc_base_team_t *tl_team)
{
    ucc_tl_sucg_team_t *team = ucc_derived_of(tl_team, ucc_tl_sucg_team_t);
    ucc_base_lib_t *lib      = UCC_TL_TEAM_LIB(team);
    ucc_status_t status;

    switch (team->state) {
    case UCC_TL_SUCG_TEAM_CONNECT:
        status = ucc_tl_sucg_team_connect(team);
        if (status != UCC_OK) {
            tl_error(lib, "team %p: cannot start the group exchange: %s",
                     team, ucc_status_string(status));
            team->state = UCC_TL_SUCG_TEAM_FAILED;
            return status;
        }
        team->state = UCC_TL_SUCG_TEAM_EXCHANGE;
        /* fall through */
    case UCC_TL_SUCG_TEAM_EXCHANGE:
        status = ucc_tl_sucg_team_req_done(team);
        if (status == UCC_INPROGRESS) {
            return status;
        }
        status = ucc_tl_sucg_team_vote(team, status);
        if (status != UCC_OK) {
            team->state = UCC_TL_SUCG_TEAM_FAILED;
            return status;
        }
        team->state = UCC_TL_SUCG_TEAM_AGREE;
        /* fall through */
    case UCC_TL_SUCG_TEAM_AGREE:
        status = ucc_tl_sucg_team_req_done(team);
        if (status == UCC_INPROGRESS) {
            return status;
        }
        if ((status != UCC_OK) || !team->all_ok) {
            tl_debug(lib, "team %p: the group failed on %s", team,
                     team->ok ? "another rank" : "this rank");
            team->state = UCC_TL_SUCG_TEAM_FAILED;
            return (status != UCC_OK) ? status : UCC_ERR_NO_RESOURCE;
        }
        team->state = UCC_TL_SUCG_TEAM_READY;
        tl_debug(lib, "team %p ready: rank %u of %u", team,
                 UCC_TL_TEAM_RANK(team), UCC_TL_TEAM_SIZE(team));
        return UCC_OK;
    case UCC_TL_SUCG_TEAM_READY:
        return UCC_OK;
    default:
        return UCC_ERR_NO_RESOURCE;
    }
}

ucc_status_t ucc_tl_sucg_team_get_scores(ucc_base_team_t *tl_team,
                                         ucc_coll_score_t **score_p)
{
    ucc_tl_sucg_team_t *team     = ucc_derived_of(tl_team, ucc_tl_sucg_team_t);
    ucc_base_context_t *ctx      = UCC_TL_TEAM_CTX(team);
    ucc_memory_type_t mem_type   = UCC_MEMORY_TYPE_HOST;
    ucc_coll_score_team_info_t info;
    ucc_coll_score_t *score;
    ucc_status_t status;

    info.alg_fn              = ucc_tl_sucg_alg_id_to_init;
    info.default_score       = UCC_TL_SUCG_DEFAULT_SCORE;
    info.init                = ucc_tl_sucg_coll_init;
    info.num_mem_types       = 1;
    info.supported_mem_types = &mem_type;
    info.supported_colls     = UCC_TL_SUCG_SUPPORTED_COLLS;
    info.size                = UCC_TL_TEAM_SIZE(team);

    status = ucc_coll_score_build_default(tl_team, UCC_TL_SUCG_DEFAULT_SCORE,
                                          ucc_tl_sucg_coll_init,
                                          UCC_TL_SUCG_SUPPORTED_COLLS,
                                          &mem_type, 1, &score);
    if (status != UCC_OK) {
        return status;
    }
    if (ucc_tl_sucg_team_shm_only(team)) {
        tl_debug(UCC_TL_TEAM_LIB(team), "shared memory only: %s",
                 UCC_TL_SUCG_BUILTIN_TUNE_SHM);
        status = ucc_coll_score_update_from_str(UCC_TL_SUCG_BUILTIN_TUNE_SHM,
                                                &info, tl_team, score);
        if (status != UCC_OK) {
            goto err;
        }
    }
    if (strlen(ctx->score_str) > 0) {
        status = ucc_coll_score_update_from_str(ctx->score_str, &info,
                                                tl_team, score);
        /* a bad user string is reported by the parser and ignored, as
         * every UCC TL does */
        if ((status < 0) && (status != UCC_ERR_INVALID_PARAM) &&
            (status != UCC_ERR_NOT_SUPPORTED)) {
            goto err;
        }
    }
    *score_p = score;
    return UCC_OK;
err:
    ucc_coll_score_free(score);
    return status;
}
