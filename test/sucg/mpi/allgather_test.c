/*
 * MPI_Allgather checker for the sucg MPI glue (Open MPI component
 * mca_coll_sucg.so, MPICH PMPI library libsucg_pmpi.so); plain MPI, runs
 * under either MPI with or without the glue.
 *
 *   sucg_mpi_allgather_test [-b max_block_bytes] [-t max_total_bytes] [-q]
 *
 * Communicators: MPI_COMM_WORLD, a duplicate of it used interleaved with it,
 * a split without the last rank (that rank gets MPI_COMM_NULL, so the sucg
 * group counters of the processes drift apart), a split by parity with
 * reversed rank order. Per communicator, block sizes 1 B .. max_block
 * (bounded by max_total = size * block): MPI_BYTE, MPI_IN_PLACE, MPI_INT
 * sent / contiguous derived type received, and a strided (resized vector)
 * receive type with mixed contiguous/strided send types across ranks, also
 * in place. Every byte of every result is checked, and the gaps of strided
 * results must stay untouched.
 *
 * Environment (SUCG_TEST_NOFREE=1: never free receive buffers, debugging):
 *   SUCG_TEST_EXPECT=sucg  every MPI_Allgather on a communicator of size >= 2
 *                          must have gone through sucg: sucg_mpi_get_stats()
 *                          (exported by the component / PMPI library) must
 *                          exist and count exactly one sucg call per call,
 *                          and freeing a communicator must destroy its group
 *   SUCG_TEST_EXPECT=none  no sucg call may have happened
 *   SUCG_TEST_EXPECT=ranks=N,from=B
 *                          exactly the calls on communicators of N ranks
 *                          with blocks of at least B bytes went through
 *                          sucg (a table of one range, coll_sucg_tune or
 *                          SUCG_MPI_TUNE "...:[N]:B-inf")
 *   SUCG_TEST_EXPECT_ZSTEP=put|tag
 *                          this rank's zero-copy steps all went so, and
 *                          some did (sucg_mpi_get_zcopy_steps(): how the
 *                          group's SUCG_ZCOPY_STEP=auto decided)
 *   SUCG_TEST_CORRUPT=R    rank R flips a result byte (negative test)
 *
 * Exit status 0 when everything matched on every rank, 1 otherwise.
 */
#include <mpi.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sucg/mpi/sucg_mpi_stats.h"

enum { EXPECT_ANY, EXPECT_SUCG, EXPECT_NONE, EXPECT_RANGE };
enum { L_BYTES, L_INPLACE, L_TYPES, L_VEC, L_VEC_INPLACE, L_LAST };
static const char *layout_name[] = { "bytes", "in-place", "int/contig2",
                                     "strided", "strided in-place" };

static int g_rank, g_expect = EXPECT_ANY, g_corrupt = -1, g_quiet;
static int g_expect_ranks;          /* EXPECT_RANGE */
static size_t g_expect_from;
static long g_errors, g_checks, g_calls;
static sucg_mpi_get_stats_fn_t g_stats_fn;
static sucg_mpi_zcopy_steps_t g_zsteps;   /* at the end */
static uint64_t g_seed;

static uint8_t pat(int r, size_t j, uint64_t seed)
{
    uint64_t x = (seed * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)r << 40) ^ j;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return (uint8_t)(x >> 32);
}

#define ERR(_fmt, ...) \
    do { \
        if (g_errors++ < 10) { \
            fprintf(stderr, "rank %d: " _fmt "\n", g_rank, ##__VA_ARGS__); \
        } \
    } while (0)

static void stats(sucg_mpi_stats_t *s)
{
    memset(s, 0, sizeof(*s));
    if (g_stats_fn != NULL) {
        g_stats_fn(s);
    }
}

static const char *comm_desc;

/* the same sequence on every rank of a communicator */
static void set_seed(const char *desc)
{
    g_seed = 0;
    while (*desc) {
        g_seed = g_seed * 131 + (uint8_t)*desc++;
    }
}

/* one MPI_Allgather of `bytes` bytes per rank with the given layout */
static void run_case(MPI_Comm comm, size_t bytes, int layout)
{
    int rank, size, r, inplace, k = (int)(bytes / 4);
    size_t j, rsize, e;
    uint8_t *rbuf, *sbuf = NULL, *exp_blk, *p;
    MPI_Datatype vec = MPI_DATATYPE_NULL, vecres = MPI_DATATYPE_NULL;
    MPI_Datatype contig2 = MPI_DATATYPE_NULL, stype, rtype;
    int scount, rcount;
    sucg_mpi_stats_t s0, s1;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    ++g_seed;
    inplace = (layout == L_INPLACE) || (layout == L_VEC_INPLACE);
    rsize   = bytes * size;
    if ((layout == L_VEC) || (layout == L_VEC_INPLACE)) {
        MPI_Type_vector(k, 1, 2, MPI_INT, &vec);
        MPI_Type_create_resized(vec, 0, (MPI_Aint)k * 8, &vecres);
        MPI_Type_commit(&vecres);
        rsize = bytes * 2 * size;
    }
    rbuf    = malloc(rsize);
    exp_blk = malloc(bytes);
    memset(rbuf, 0xEE, rsize);

    /* my data, in the place the layout wants it */
    for (j = 0; j < bytes; ++j) {
        exp_blk[j] = pat(rank, j, g_seed);
    }
    switch (layout) {
    case L_BYTES:
        sbuf  = malloc(bytes);
        memcpy(sbuf, exp_blk, bytes);
        stype = rtype = MPI_BYTE;
        scount = rcount = (int)bytes;
        break;
    case L_INPLACE:
        memcpy(rbuf + bytes * rank, exp_blk, bytes);
        stype  = rtype = MPI_BYTE;
        scount = 0;
        rcount = (int)bytes;
        break;
    case L_TYPES:
        sbuf = malloc(bytes);
        memcpy(sbuf, exp_blk, bytes);
        MPI_Type_contiguous(2, MPI_INT, &contig2);
        MPI_Type_commit(&contig2);
        stype  = MPI_INT;
        scount = k;
        rtype  = contig2;
        rcount = k / 2;
        break;
    case L_VEC:
        rtype  = vecres;
        rcount = 1;
        if (rank % 2) {  /* strided send on odd ranks, plain ints on even */
            sbuf = malloc(bytes * 2);
            memset(sbuf, 0x55, bytes * 2);
            for (e = 0; e < (size_t)k; ++e) {
                memcpy(sbuf + e * 8, exp_blk + e * 4, 4);
            }
            stype  = vecres;
            scount = 1;
        } else {
            sbuf = malloc(bytes);
            memcpy(sbuf, exp_blk, bytes);
            stype  = MPI_INT;
            scount = k;
        }
        break;
    default: /* L_VEC_INPLACE */
        for (e = 0; e < (size_t)k; ++e) {
            memcpy(rbuf + bytes * 2 * rank + e * 8, exp_blk + e * 4, 4);
        }
        stype  = rtype = vecres;
        scount = 0;
        rcount = 1;
        break;
    }

    stats(&s0);
    if (MPI_Allgather(inplace ? MPI_IN_PLACE : sbuf, scount, stype, rbuf,
                      rcount, rtype, comm) != MPI_SUCCESS) {
        ERR("%s: MPI_Allgather(%zu, %s) failed", comm_desc, bytes,
            layout_name[layout]);
    }
    stats(&s1);
    ++g_calls;
    if ((g_corrupt == g_rank) && (g_calls == 1)) {
        rbuf[rsize / 2] ^= 0x01;   /* negative test: must be detected */
    }

    /* every byte */
    for (r = 0; r < size; ++r) {
        for (j = 0; j < bytes; ++j) {
            uint8_t want = pat(r, j, g_seed);
            if ((layout == L_VEC) || (layout == L_VEC_INPLACE)) {
                p = rbuf + bytes * 2 * r + (j / 4) * 8 + (j % 4);
            } else {
                p = rbuf + bytes * r + j;
            }
            if (*p != want) {
                ERR("%s size %d: %zu B %s: rank %d's byte %zu is 0x%02x, "
                    "expected 0x%02x", comm_desc, size, bytes,
                    layout_name[layout], r, j, *p, want);
                break;
            }
        }
        if ((layout == L_VEC) || (layout == L_VEC_INPLACE)) {
            for (e = 0; e < (size_t)k; ++e) {
                p = rbuf + bytes * 2 * r + e * 8 + 4;
                if (memcmp(p, "\xEE\xEE\xEE\xEE", 4) != 0) {
                    ERR("%s: %zu B %s: gap after element %zu of rank %d "
                        "overwritten", comm_desc, bytes, layout_name[layout],
                        e, r);
                    break;
                }
            }
        }
    }
    ++g_checks;

    /* the path taken */
    if (g_expect == EXPECT_SUCG) {
        uint64_t want = (size >= 2) ? 1 : 0;
        if (s1.sucg_calls - s0.sucg_calls != want) {
            ERR("%s size %d: %zu B %s: %llu sucg calls counted, expected %llu",
                comm_desc, size, bytes, layout_name[layout],
                (unsigned long long)(s1.sucg_calls - s0.sucg_calls),
                (unsigned long long)want);
        }
    } else if (g_expect == EXPECT_RANGE) {
        uint64_t want = ((size == g_expect_ranks) && (bytes >= g_expect_from));
        if (s1.sucg_calls - s0.sucg_calls != want) {
            ERR("%s size %d: %zu B %s: %llu sucg calls counted, expected %llu "
                "(sucg for %d ranks from %zu B)", comm_desc, size, bytes,
                layout_name[layout],
                (unsigned long long)(s1.sucg_calls - s0.sucg_calls),
                (unsigned long long)want, g_expect_ranks, g_expect_from);
        }
    } else if (g_expect == EXPECT_NONE) {
        if (s1.sucg_calls != 0) {
            ERR("%s: %llu sucg calls with sucg expected off", comm_desc,
                (unsigned long long)s1.sucg_calls);
        }
    }

    if (!getenv("SUCG_TEST_NOFREE")) free(rbuf);
    free(sbuf);
    free(exp_blk);
    if (vecres != MPI_DATATYPE_NULL) {
        MPI_Type_free(&vecres);
        MPI_Type_free(&vec);
    }
    if (contig2 != MPI_DATATYPE_NULL) {
        MPI_Type_free(&contig2);
    }
}

static const size_t sizes[] = {
    1, 2, 3, 7, 8, 12, 63, 64, 100, 1000, 4092, 4096, 4104, 65536, 65548,
    (1 << 20), (1 << 20) + 8, (8 << 20)
};

static void run_comm(MPI_Comm comm, const char *desc, size_t max_block,
                     size_t max_total)
{
    int size, l;
    size_t i;

    MPI_Comm_size(comm, &size);
    comm_desc = desc;
    set_seed(desc);
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        size_t b = sizes[i];
        if ((b > max_block) || (b * size > max_total)) {
            continue;
        }
        for (l = 0; l < L_LAST; ++l) {
            if ((l == L_TYPES) && (b % 8)) {
                continue;
            }
            if (((l == L_VEC) || (l == L_VEC_INPLACE)) &&
                ((b % 4) || (b > (1 << 20) + 8))) {
                continue;
            }
            run_case(comm, b, l);
        }
    }
}

static void check_destroyed(uint64_t destroyed0, uint64_t want, const char *what)
{
    sucg_mpi_stats_t s;

    if (g_expect != EXPECT_SUCG) {
        return;
    }
    stats(&s);
    if (s.groups_destroyed - destroyed0 != want) {
        ERR("%s: %llu groups destroyed, expected %llu", what,
            (unsigned long long)(s.groups_destroyed - destroyed0),
            (unsigned long long)want);
    }
}

/* SUCG_TEST_EXPECT_ZSTEP: every zero-copy step went as @a want, and some */
static void check_zcopy_steps(const char *want)
{
    sucg_mpi_get_zcopy_steps_fn_t fn;
    uint64_t wanted, other;

    fn = (sucg_mpi_get_zcopy_steps_fn_t)dlsym(RTLD_DEFAULT,
                                              "sucg_mpi_get_zcopy_steps");
    if (fn != NULL) {
        fn(&g_zsteps);
    }
    if (want == NULL) {
        return;
    }
    if (fn == NULL) {
        ERR("SUCG_TEST_EXPECT_ZSTEP=%s but sucg_mpi_get_zcopy_steps is not "
            "loaded", want);
        return;
    }
    if (strcmp(want, "put") && strcmp(want, "tag")) {
        ERR("SUCG_TEST_EXPECT_ZSTEP=%s: put or tag", want);
        return;
    }
    wanted = !strcmp(want, "put") ? g_zsteps.by_put : g_zsteps.by_tag;
    other  = !strcmp(want, "put") ? g_zsteps.by_tag : g_zsteps.by_put;
    /* a buffer that could not be registered is sent to by tag anyway */
    if ((wanted == 0) || ((other != 0) && !(!strcmp(want, "put") &&
                                            (g_zsteps.reg_failures != 0)))) {
        ERR("zero-copy steps: %llu by put, %llu by tag (%llu registrations "
            "failed); expected them all by %s",
            (unsigned long long)g_zsteps.by_put,
            (unsigned long long)g_zsteps.by_tag,
            (unsigned long long)g_zsteps.reg_failures, want);
    }
}

int main(int argc, char **argv)
{
    size_t max_block = 8 << 20, max_total = 32 << 20;
    MPI_Comm dup, split_a, split_b;
    sucg_mpi_stats_t s;
    const char *env;
    long errors, checks;
    double t0;
    int size, opt, sa;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "b:t:q")) != -1) {
        switch (opt) {
        case 'b': max_block = strtoull(optarg, NULL, 0); break;
        case 't': max_total = strtoull(optarg, NULL, 0); break;
        case 'q': g_quiet = 1; break;
        default:
            if (g_rank == 0) {
                fprintf(stderr, "usage: %s [-b max_block] [-t max_total] [-q]\n",
                        argv[0]);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    env = getenv("SUCG_TEST_EXPECT");
    if (env != NULL) {
        g_expect = !strcmp(env, "sucg") ? EXPECT_SUCG :
                   !strcmp(env, "none") ? EXPECT_NONE : EXPECT_ANY;
        if (sscanf(env, "ranks=%d,from=%zu", &g_expect_ranks,
                   &g_expect_from) == 2) {
            g_expect = EXPECT_RANGE;
        } else if (g_expect == EXPECT_ANY) {
            ERR("SUCG_TEST_EXPECT=%s: sucg, none or ranks=N,from=B", env);
        }
    }
    if ((env = getenv("SUCG_TEST_CORRUPT")) != NULL) {
        g_corrupt = atoi(env);
    }
    g_stats_fn = (sucg_mpi_get_stats_fn_t)dlsym(RTLD_DEFAULT,
                                                "sucg_mpi_get_stats");
    if ((g_expect != EXPECT_ANY) && (g_expect != EXPECT_NONE) &&
        (g_stats_fn == NULL)) {
        ERR("SUCG_TEST_EXPECT=sucgbut sucg_mpi_get_stats is not loaded "
            "(component / PMPI library missing)");
    }
    t0 = MPI_Wtime();

    run_comm(MPI_COMM_WORLD, "world", max_block, max_total);

    /* a duplicate used interleaved with world: a group each */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    stats(&s);
    run_comm(dup, "dup", 4096, max_total);
    run_comm(MPI_COMM_WORLD, "world again", 4096, max_total);
    MPI_Comm_free(&dup);
    check_destroyed(s.groups_destroyed, size >= 2, "MPI_Comm_free(dup)");

    /* without the last rank: it creates no group here */
    MPI_Comm_split(MPI_COMM_WORLD, (g_rank == size - 1) ? MPI_UNDEFINED : 0,
                   0, &split_a);
    /* parity, reversed rank order */
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, -g_rank, &split_b);
    if (split_a != MPI_COMM_NULL) {
        run_comm(split_a, "split without last", max_block, max_total);
    }
    run_comm(split_b, "split by parity", max_block, max_total);
    if (split_a != MPI_COMM_NULL) {
        MPI_Comm_size(split_a, &sa);
        stats(&s);
        MPI_Comm_free(&split_a);
        check_destroyed(s.groups_destroyed, sa >= 2, "MPI_Comm_free(split)");
    }
    MPI_Comm_size(split_b, &sa);
    stats(&s);
    MPI_Comm_free(&split_b);
    check_destroyed(s.groups_destroyed, sa >= 2, "MPI_Comm_free(parity)");

    /* world still works after the others are gone */
    comm_desc = "world last";
    set_seed(comm_desc);
    run_case(MPI_COMM_WORLD, 4096, L_BYTES);

    check_zcopy_steps(getenv("SUCG_TEST_EXPECT_ZSTEP"));
    stats(&s);
    MPI_Reduce(&g_errors, &errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&g_checks, &checks, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(&errors, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if ((g_rank == 0) && (!g_quiet || errors)) {
        printf("allgather_test: np=%d, %ld checks, %ld errors, %.1f s; rank 0: "
               "%llu sucg calls (rd %llu ring %llu p2p_rd %llu p2p_ring %llu), "
               "%llu fallback, %llu packed, %llu groups, zero-copy steps "
               "%llu by put %llu by tag%s\n", size, checks,
               errors, MPI_Wtime() - t0, (unsigned long long)s.sucg_calls,
               (unsigned long long)s.by_algo[1],
               (unsigned long long)s.by_algo[2],
               (unsigned long long)s.by_algo[3],
               (unsigned long long)s.by_algo[4],
               (unsigned long long)s.fallback_calls,
               (unsigned long long)s.packed_calls,
               (unsigned long long)s.groups_created,
               (unsigned long long)g_zsteps.by_put,
               (unsigned long long)g_zsteps.by_tag,
               g_stats_fn ? "" : " (no sucg glue loaded)");
    }
    MPI_Finalize();
    return errors ? 1 : 0;
}
