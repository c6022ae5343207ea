/*
 * MPI_Allgather latency against message size, in the manner of
 * osu_allgather, for comparing sucg (Open MPI + mca_coll_sucg.so,
 * MPICH + libsucg_pmpi.so) with the MPI libraries' own Allgather. Plain
 * MPI: it measures whatever MPI_Allgather the job runs, and says which
 * (see sucg_path.h). Driven by contrib/bench/ucg-allgather.sh.
 *
 *   sucg_allgather_bench [-s SIZES] [-i ITERS] [-w WARMUP] [-B BUDGET]
 *                        [-f] [-l LABEL]
 *
 *   -s  comma-separated per-rank block sizes in bytes (K/M suffixes)
 *   -i  timed calls per size (default 100), fewer for large sizes so that
 *       ITERS * np * size stays under BUDGET bytes (default 256M), at least 5
 *   -w  untimed calls before (default 10, scaled the same way, at least 2)
 *   -f  a new buffer every call: send and receive buffers are fresh mmap()s,
 *       i.e. new pages that no registration cache can know (the paper's
 *       no-buffer-reuse case); only the MPI_Allgather calls are timed
 *   -l  label printed in the first CSV column
 *
 * Rank 0 prints CSV: label,np,bytes,iters,lat_us,p99_us,path - lat_us is
 * the mean time of one call, the maximum over ranks; p99_us the 99th
 * percentile of the timed calls, the maximum over ranks (an application
 * waits for its slow calls, which a mean hides); path is "ucg:ALGO" when
 * every timed call ran through sucg, "mpi" when none did. The result of the last
 * call of every size is checked byte by byte on every rank; exit status 1
 * on a mismatch.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sucg_path.h"

static const char *default_sizes =
    "4,16,64,256,1K,4K,16K,32K,64K,256K,1M";

static int g_rank, g_size;

static size_t parse_size(const char *s, char **end)
{
    size_t v = strtoull(s, end, 0);

    switch (**end) {
    case 'k': case 'K': v <<= 10; ++*end; break;
    case 'm': case 'M': v <<= 20; ++*end; break;
    }
    return v;
}

static uint8_t pat(int r, size_t j)
{
    return (uint8_t)(r * 131 + j * 7 + 1 + (j >> 8));
}

static void *buf_get(size_t len, int fresh)
{
    void *p;

    if (!fresh) {
        p = malloc(len);
        return p;
    }
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
    return (p == MAP_FAILED) ? NULL : p;
}

static void buf_put(void *p, size_t len, int fresh)
{
    if (fresh) {
        munmap(p, len);
    } else {
        free(p);
    }
}

static long check(const uint8_t *rbuf, size_t bytes)
{
    size_t j;
    int r;

    for (r = 0; r < g_size; ++r) {
        for (j = 0; j < bytes; ++j) {
            if (rbuf[(size_t)r * bytes + j] != pat(r, j)) {
                fprintf(stderr, "rank %d: %zu B: byte %zu of rank %d's block "
                        "is 0x%02x, expected 0x%02x\n", g_rank, bytes, j, r,
                        rbuf[(size_t)r * bytes + j], pat(r, j));
                return 1;
            }
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

/* the 99th percentile of @a n times (nearest rank: below 100 calls, the
 * slowest), sorted in place */
static double p99(double *t, int n)
{
    long k = (99l * n + 99) / 100;

    qsort(t, n, sizeof(*t), cmp_double);
    return t[(k < 1) ? 0 : k - 1];
}

/* one size; returns the number of ranks that saw a wrong result */
static long run_size(size_t bytes, int iters, int warm, int fresh,
                     const char *label)
{
    sucg_mpi_stats_t s0, s1;
    uint8_t *sbuf = NULL, *rbuf = NULL;
    double t = 0, t0, dt, lat, lat_max, tail, tail_max;
    double *times = malloc(iters * sizeof(*times));
    long bad = 0, bad_all;
    char pbuf[64];
    const char *path;
    size_t j;
    int i;

    for (i = 0; i < warm + iters; ++i) {
        if ((i == 0) || fresh) {
            sbuf = buf_get(bytes, fresh);
            rbuf = buf_get(bytes * g_size, fresh);
            if ((sbuf == NULL) || (rbuf == NULL) || (times == NULL)) {
                fprintf(stderr, "rank %d: out of memory\n", g_rank);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            for (j = 0; j < bytes; ++j) {
                sbuf[j] = pat(g_rank, j);
            }
        }
        if (i == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            sucg_path_stats(&s0);
        }
        t0 = MPI_Wtime();
        MPI_Allgather(sbuf, (int)bytes, MPI_BYTE, rbuf, (int)bytes, MPI_BYTE,
                      MPI_COMM_WORLD);
        if (i >= warm) {
            dt              = MPI_Wtime() - t0;
            times[i - warm] = dt;
            t              += dt;
        }
        if (i == warm + iters - 1) {
            bad = check(rbuf, bytes);
        }
        if (fresh || (i == warm + iters - 1)) {
            buf_put(sbuf, bytes, fresh);
            buf_put(rbuf, bytes * g_size, fresh);
        }
    }
    sucg_path_stats(&s1);
    lat  = t / iters * 1e6;
    tail = p99(times, iters) * 1e6;
    free(times);
    MPI_Reduce(&lat, &lat_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&tail, &tail_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&bad, &bad_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    path = sucg_path_name(&s0, &s1, iters, pbuf, sizeof(pbuf));
    if (g_rank == 0) {
        printf("%s,%d,%zu,%d,%.2f,%.2f,%s\n", label, g_size, bytes, iters,
               lat_max, tail_max, path);
        fflush(stdout);
    }
    return bad_all;
}

int main(int argc, char **argv)
{
    const char *sizes = default_sizes, *label = "allgather", *p;
    size_t budget = 256u << 20, bytes;
    int iters = 100, warm = 10, fresh = 0, opt, n, w;
    long bad = 0;
    char *end;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    while ((opt = getopt(argc, argv, "s:i:w:B:fl:")) != -1) {
        switch (opt) {
        case 's': sizes = optarg; break;
        case 'i': iters = atoi(optarg); break;
        case 'w': warm = atoi(optarg); break;
        case 'B': budget = parse_size(optarg, &end); break;
        case 'f': fresh = 1; break;
        case 'l': label = optarg; break;
        default:
            if (g_rank == 0) {
                fprintf(stderr, "usage: %s [-s SIZES] [-i ITERS] [-w WARMUP] "
                        "[-B BUDGET] [-f] [-l LABEL]\n", argv[0]);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if ((iters < 1) || (warm < 0)) {
        if (g_rank == 0) {
            fprintf(stderr, "error: -i must be >= 1 and -w >= 0\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    for (p = sizes; *p != '\0'; p = (*end == ',') ? end + 1 : end) {
        bytes = parse_size(p, &end);
        if ((bytes == 0) || ((*end != ',') && (*end != '\0')) ||
            (bytes * g_size > (size_t)INT32_MAX)) {
            if (g_rank == 0) {
                fprintf(stderr, "error: bad size list '%s' at '%s'\n", sizes,
                        p);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        n = iters;
        if ((size_t)n * bytes * g_size > budget) {
            n = (int)(budget / (bytes * g_size));
        }
        n = (n < 5) ? 5 : n;
        w = (warm * n + iters - 1) / iters;
        w = ((warm > 0) && (w < 2)) ? 2 : w;
        bad += run_size(bytes, n, w, fresh, label);
    }
    MPI_Finalize();
    return bad ? 1 : 0;
}
