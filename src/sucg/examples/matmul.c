/*
 * Distributed matrix multiplication with MPI_Allgather, the application
 * kernel of Sur et al. (HiPC'05: 256x256, 8 processes, 37 % faster with
 * their RDMA Allgather).
 *
 * C = A * B, N x N doubles, p ranks, N divisible by p. Rank r owns rows
 * [r*N/p, (r+1)*N/p) of A, B and C. Every iteration B changes (a new
 * right-hand side, as in an iterative solver), so each rank gathers the
 * whole of B with one MPI_Allgather of its N/p rows (N*N/p doubles) and
 * then computes its rows of C.
 *
 *   sucg_matmul [-n N] [-i ITERS] [-w WARMUP] [-f]
 *
 *   -f  a new receive buffer for B every iteration (fresh mmap: nothing to
 *       reuse a registration of)
 *
 * Prints (rank 0) one CSV line: np,n,iters,iter_us,allgather_us,max_err,path
 * - times are means per iteration, maximum over ranks. C is checked on
 * every rank against a product computed from a locally generated B; exit
 * status 1 on a mismatch.
 */
#define _GNU_SOURCE
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sucg_path.h"

static double a_elem(int i, int j)
{
    return (double)((i * 7 + j * 3) % 11) - 5.0;
}

static double b_elem(int i, int j, int it)
{
    return (double)((i * 5 + j * 13 + it) % 17) * 0.25 - 2.0;
}

/* c[rows x n] = a[rows x n] * b[n x n], i-k-j order (unit stride in b, c) */
static void gemm(int rows, int n, const double *a, const double *b, double *c)
{
    int i, j, k;

    for (i = 0; i < rows; ++i) {
        double *ci = c + (size_t)i * n;
        memset(ci, 0, sizeof(double) * n);
        for (k = 0; k < n; ++k) {
            const double aik = a[(size_t)i * n + k];
            const double *bk = b + (size_t)k * n;
            for (j = 0; j < n; ++j) {
                ci[j] += aik * bk[j];
            }
        }
    }
}

static double *alloc_doubles(size_t n, int fresh)
{
    void *p;

    if (fresh) {
        p = mmap(NULL, n * sizeof(double), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        p = (p == MAP_FAILED) ? NULL : p;
    } else {
        p = malloc(n * sizeof(double));
    }
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

int main(int argc, char **argv)
{
    int n = 256, iters = 50, warm = 5, fresh = 0, rank, size, rows, opt;
    int it, i, j, last;
    double *a, *bloc, *b = NULL, *c, *ref, *bref;
    double t_iter = 0, t_ag = 0, t0, t1, v[2], vmax[2], err = 0, err_max;
    sucg_mpi_stats_t s0, s1;
    char pbuf[64];
    const char *path;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "n:i:w:f")) != -1) {
        switch (opt) {
        case 'n': n = atoi(optarg); break;
        case 'i': iters = atoi(optarg); break;
        case 'w': warm = atoi(optarg); break;
        case 'f': fresh = 1; break;
        default:
            if (rank == 0) {
                fprintf(stderr, "usage: %s [-n N] [-i ITERS] [-w WARMUP] "
                        "[-f]\n", argv[0]);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if ((n <= 0) || (n % size) || (iters < 1) || (warm < 0)) {
        if (rank == 0) {
            fprintf(stderr, "error: N=%d must be a positive multiple of the "
                    "number of ranks (%d); ITERS >= 1, WARMUP >= 0\n", n, size);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    rows = n / size;
    a    = alloc_doubles((size_t)rows * n, 0);
    bloc = alloc_doubles((size_t)rows * n, 0);
    c    = alloc_doubles((size_t)rows * n, 0);
    for (i = 0; i < rows; ++i) {
        for (j = 0; j < n; ++j) {
            a[(size_t)i * n + j] = a_elem(rank * rows + i, j);
        }
    }

    last = warm + iters - 1;
    for (it = 0; it <= last; ++it) {
        if (it == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            sucg_path_stats(&s0);
        }
        if ((b == NULL) || fresh) {
            b = alloc_doubles((size_t)n * n, fresh);
        }
        for (i = 0; i < rows; ++i) {      /* this iteration's rows of B */
            for (j = 0; j < n; ++j) {
                bloc[(size_t)i * n + j] = b_elem(rank * rows + i, j, it);
            }
        }
        t0 = MPI_Wtime();
        MPI_Allgather(bloc, rows * n, MPI_DOUBLE, b, rows * n, MPI_DOUBLE,
                      MPI_COMM_WORLD);
        t1 = MPI_Wtime();
        gemm(rows, n, a, b, c);
        if (it >= warm) {
            t_ag   += t1 - t0;
            t_iter += MPI_Wtime() - t0;
        }
        if (fresh && (it != last)) {
            munmap(b, sizeof(double) * n * n);
        }
    }
    sucg_path_stats(&s1);

    /* reference: the whole B of the last iteration generated locally */
    bref = alloc_doubles((size_t)n * n, 0);
    ref  = alloc_doubles((size_t)rows * n, 0);
    for (i = 0; i < n; ++i) {
        for (j = 0; j < n; ++j) {
            bref[(size_t)i * n + j] = b_elem(i, j, last);
        }
    }
    gemm(rows, n, a, bref, ref);
    for (i = 0; i < rows * n; ++i) {
        err = fmax(err, fabs(ref[i] - c[i]));
    }

    v[0] = t_iter / iters * 1e6;
    v[1] = t_ag / iters * 1e6;
    MPI_Reduce(v, vmax, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&err, &err_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    path = sucg_path_name(&s0, &s1, iters, pbuf, sizeof(pbuf));
    if (rank == 0) {
        printf("%d,%d,%d,%.1f,%.1f,%g,%s\n", size, n, iters, vmax[0], vmax[1],
               err_max, path);
    }
    if (fresh) {
        munmap(b, sizeof(double) * n * n);
    } else {
        free(b);
    }
    free(a);
    free(bloc);
    free(c);
    free(bref);
    free(ref);
    MPI_Finalize();
    /* same operations in the same order: the product must be exact */
    return (err_max == 0) ? 0 : 1;
}
