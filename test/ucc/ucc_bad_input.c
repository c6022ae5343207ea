/*
 * Bad input to UCC's allgather with tl/sucg selected (run with
 * UCC_TL_SUCG_TUNE=allgather:inf, under mpirun; test/ucc/run.sh):
 *
 *   counts       a destination count that is no multiple of the team size,
 *                and a source count that is not the block: both refused by
 *                ucc_collective_init with UCC_ERR_INVALID_PARAM (size >= 2)
 *   usable       a good allgather on the same team afterwards, checked;
 *                and one of count 0 (succeeds, nothing to check)
 *   no_group     a context whose ranks disagree on SUCG_GROUP_BUFFER_SIZE:
 *                sucg's group cannot be created on any rank, so the team
 *                comes without tl/sucg; UCC's own allgather runs, correct
 *   self_team    a team of one process (MPI_COMM_SELF) per rank, checked
 *
 * Prints "ucc_bad_input: N passed, M failed" on rank 0; exit status 1 on
 * any failure on any rank.
 */
#include <mpi.h>
#include <ucc/api/ucc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank, g_size, g_pass, g_fail;

#define CHECK(_cond, _fmt, ...) \
    do { \
        if (_cond) { \
            ++g_pass; \
        } else { \
            ++g_fail; \
            fprintf(stderr, "rank %d: FAIL " _fmt "\n", g_rank, ##__VA_ARGS__); \
        } \
    } while (0)

static ucc_status_t oob_allgather(void *sbuf, void *rbuf, size_t len,
                                  void *info, void **req)
{
    MPI_Request *r = malloc(sizeof(*r));

    MPI_Iallgather(sbuf, (int)len, MPI_BYTE, rbuf, (int)len, MPI_BYTE,
                   (MPI_Comm)(uintptr_t)info, r);
    *req = r;
    return UCC_OK;
}

static ucc_status_t oob_test(void *req)
{
    int done;

    MPI_Test((MPI_Request*)req, &done, MPI_STATUS_IGNORE);
    return done ? UCC_OK : UCC_INPROGRESS;
}

static ucc_status_t oob_free(void *req)
{
    free(req);
    return UCC_OK;
}

static void oob_of(ucc_oob_coll_t *oob, MPI_Comm comm)
{
    int r, n;

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    oob->allgather = oob_allgather;
    oob->req_test  = oob_test;
    oob->req_free  = oob_free;
    oob->coll_info = (void*)(uintptr_t)comm;
    oob->n_oob_eps = n;
    oob->oob_ep    = r;
}

static ucc_context_h context_create(ucc_lib_h lib, MPI_Comm comm)
{
    ucc_context_params_t p = {0};
    ucc_context_config_h cfg;
    ucc_context_h ctx;

    if (ucc_context_config_read(lib, NULL, &cfg) != UCC_OK) {
        return NULL;
    }
    p.mask = UCC_CONTEXT_PARAM_FIELD_OOB;
    oob_of(&p.oob, comm);
    if (ucc_context_create(lib, &p, cfg, &ctx) != UCC_OK) {
        ctx = NULL;
    }
    ucc_context_config_release(cfg);
    return ctx;
}

static ucc_team_h team_create(ucc_context_h ctx, MPI_Comm comm)
{
    ucc_team_params_t p = {0};
    ucc_status_t status;
    ucc_team_h team;

    p.mask = UCC_TEAM_PARAM_FIELD_OOB;
    oob_of(&p.oob, comm);
    if (ucc_team_create_post(&ctx, 1, &p, &team) != UCC_OK) {
        return NULL;
    }
    while ((status = ucc_team_create_test(team)) == UCC_INPROGRESS) {
        ucc_context_progress(ctx);
    }
    return (status == UCC_OK) ? team : NULL;
}

/* allgather of count int32 per rank; UCC_OK and the result checked, or
 * the status of ucc_collective_init */
static ucc_status_t allgather(ucc_context_h ctx, ucc_team_h team, int rank,
                              int size, size_t count, size_t dst_count,
                              int *bad_elems)
{
    int32_t *src = malloc(count * sizeof(*src) + 4);
    int32_t *dst = malloc(dst_count * sizeof(*dst) + 4);
    ucc_coll_args_t a = {0};
    ucc_coll_req_h req;
    ucc_status_t status;
    size_t i;

    for (i = 0; i < count; ++i) {
        src[i] = (int32_t)(rank * 1000003 + i);
    }
    memset(dst, 0xee, dst_count * sizeof(*dst));
    a.coll_type            = UCC_COLL_TYPE_ALLGATHER;
    a.src.info.buffer      = src;
    a.src.info.count       = count;
    a.src.info.datatype    = UCC_DT_INT32;
    a.src.info.mem_type    = UCC_MEMORY_TYPE_HOST;
    a.dst.info.buffer      = dst;
    a.dst.info.count       = dst_count;
    a.dst.info.datatype    = UCC_DT_INT32;
    a.dst.info.mem_type    = UCC_MEMORY_TYPE_HOST;
    status = ucc_collective_init(&a, &req, team);
    if (status == UCC_OK) {
        status = ucc_collective_post(req);
        if (status == UCC_OK) {
            while ((status = ucc_collective_test(req)) == UCC_INPROGRESS) {
                ucc_context_progress(ctx);
            }
        }
        ucc_collective_finalize(req);
        *bad_elems = 0;
        for (i = 0; (status == UCC_OK) && (i < (size_t)size * count); ++i) {
            if (dst[i] != (int32_t)((i / count) * 1000003 + i % count)) {
                ++*bad_elems;
            }
        }
    }
    free(src);
    free(dst);
    return status;
}

int main(int argc, char **argv)
{
    ucc_lib_params_t lp = {.mask = UCC_LIB_PARAM_FIELD_THREAD_MODE,
                           .thread_mode = UCC_THREAD_SINGLE};
    ucc_lib_config_h lcfg;
    ucc_context_h ctx, ctx2;
    ucc_team_h team, team2, self_team;
    ucc_lib_h lib;
    ucc_status_t st;
    int bad = -1, total_fail;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if ((ucc_lib_config_read(NULL, NULL, &lcfg) != UCC_OK) ||
        (ucc_init(&lp, lcfg, &lib) != UCC_OK)) {
        fprintf(stderr, "rank %d: ucc_init failed\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    ucc_lib_config_release(lcfg);
    ctx  = context_create(lib, MPI_COMM_WORLD);
    team = (ctx != NULL) ? team_create(ctx, MPI_COMM_WORLD) : NULL;
    CHECK(team != NULL, "world team");
    if (team == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* counts: refused before anything is sent, on the rank that has them */
    if (g_size >= 2) {
        st = allgather(ctx, team, g_rank, g_size, 100, 100 * g_size + 1, &bad);
        CHECK(st == UCC_ERR_INVALID_PARAM, "dst count %d not a multiple of %d: %s",
              100 * g_size + 1, g_size, ucc_status_string(st));
        st = allgather(ctx, team, g_rank, g_size, 99, 100 * g_size, &bad);
        CHECK(st == UCC_ERR_INVALID_PARAM, "src count 99, block 100: %s",
              ucc_status_string(st));
    }
    st = allgather(ctx, team, g_rank, g_size, 4096, 4096 * g_size, &bad);
    CHECK((st == UCC_OK) && (bad == 0), "usable: allgather after the errors: %s, %d bad",
          ucc_status_string(st), bad);
    /* nothing to gather is no error (UCC may not even ask a TL) */
    st = allgather(ctx, team, g_rank, g_size, 0, 0, &bad);
    CHECK(st == UCC_OK, "zero count: %s", ucc_status_string(st));

    /* a team whose sucg group fails everywhere: UCC's algorithm runs */
    if (g_size >= 2) {
        setenv("SUCG_GROUP_BUFFER_SIZE", (g_rank == 0) ? "1m" : "2m", 1);
        ctx2  = context_create(lib, MPI_COMM_WORLD);
        unsetenv("SUCG_GROUP_BUFFER_SIZE");
        team2 = (ctx2 != NULL) ? team_create(ctx2, MPI_COMM_WORLD) : NULL;
        CHECK(team2 != NULL, "no_group: team created without tl/sucg");
        if (team2 != NULL) {
            st = allgather(ctx2, team2, g_rank, g_size, 1000, 1000 * g_size, &bad);
            CHECK((st == UCC_OK) && (bad == 0), "no_group: allgather: %s, %d bad",
                  ucc_status_string(st), bad);
            while (ucc_team_destroy(team2) == UCC_INPROGRESS) {
                ucc_context_progress(ctx2);
            }
        }
        if (ctx2 != NULL) {
            ucc_context_destroy(ctx2);
        }
        /* and the first context still works */
        st = allgather(ctx, team, g_rank, g_size, 777, 777 * g_size, &bad);
        CHECK((st == UCC_OK) && (bad == 0), "usable after no_group: %s, %d bad",
              ucc_status_string(st), bad);
    }

    /* a team of one */
    self_team = team_create(ctx, MPI_COMM_SELF);
    CHECK(self_team != NULL, "self_team created");
    if (self_team != NULL) {
        st = allgather(ctx, self_team, 0, 1, 5000, 5000, &bad);
        CHECK((st == UCC_OK) && (bad == 0), "self_team: allgather: %s, %d bad",
              ucc_status_string(st), bad);
        while (ucc_team_destroy(self_team) == UCC_INPROGRESS) {
            ucc_context_progress(ctx);
        }
    }

    while (ucc_team_destroy(team) == UCC_INPROGRESS) {
        ucc_context_progress(ctx);
    }
    ucc_context_destroy(ctx);
    ucc_finalize(lib);
    MPI_Allreduce(&g_fail, &total_fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("ucc_bad_input: np=%d, %d passed, %d failed\n", g_size, g_pass,
               total_fail);
    }
    MPI_Finalize();
    return total_fail ? 1 : 0;
}
