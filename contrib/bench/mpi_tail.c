/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * A stream's tail: the root of a broadcast stream goes computing after its
 * last MPI_Bcast, as an application's root does, and the other ranks wait
 * for that last message. A transport that holds sends for a doorbell must
 * post them without the root's next call.
 *
 *   mpirun -np P mpi_tail [-n CALLS] [-r ROUNDS] [-c COMPUTE_MS] [-s SIZE]
 *
 * Each round: a barrier; CALLS MPI_Bcasts of SIZE bytes from rank 0, back
 * to back (default 400 of 8 B); then rank 0 computes COMPUTE_MS (default
 * 50) without an MPI call while the others time their last MPI_Bcast (the
 * tail). A round before the timed ones warms up. Every received byte is
 * checked; exit status 1 if one was wrong. On rank 0, over every other
 * rank's rounds:
 *   tails N p50_us p90_us max_us over1ms other_p50_us
 * where other_p50_us is the median of the rounds' other calls.
 */

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}


/* Busy, as computation is: no MPI call, no sleep */
static void compute(double seconds)
{
    double end = now_s() + seconds;
    volatile unsigned long spin = 0;

    while (now_s() < end) {
        ++spin;
    }
}


static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}


/* One round; on the other ranks @a tail and @a others (CALLS - 1 of them)
 * get the calls' times in seconds. Returns the wrong bytes received. */
static int round_run(int rank, int calls, size_t size, double compute_s,
                     unsigned char *buf, double *tail, double *others)
{
    int bad = 0, i;
    size_t j;
    double t0;

    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < calls; ++i) {
        if (rank == 0) {
            memset(buf, (unsigned char)(i + 1), size);
        }
        t0 = now_s();
        MPI_Bcast(buf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            continue;
        }
        if (i == calls - 1) {
            *tail = now_s() - t0;
        } else {
            others[i] = now_s() - t0;
        }
        for (j = 0; j < size; ++j) {
            bad += buf[j] != (unsigned char)(i + 1);
        }
    }
    if (rank == 0) {
        compute(compute_s);
    }
    return bad;
}


int main(int argc, char **argv)
{
    int calls = 400, rounds = 20, rank, size_world, opt, r, n, over1ms = 0;
    int bad = 0, anybad;
    double compute_ms = 50, tail = 0, *others, *tails, *all, other_p50;
    size_t size = 8;
    unsigned char *buf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size_world);
    while ((opt = getopt(argc, argv, "n:r:c:s:")) != -1) {
        switch (opt) {
        case 'n': calls      = atoi(optarg); break;
        case 'r': rounds     = atoi(optarg); break;
        case 'c': compute_ms = atof(optarg); break;
        case 's': size       = strtoul(optarg, NULL, 0); break;
        default:
            if (rank == 0) {
                fprintf(stderr, "usage: mpi_tail [-n CALLS] [-r ROUNDS] "
                        "[-c COMPUTE_MS] [-s SIZE]\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if ((calls < 2) || (rounds < 1) || (size < 1) || (size_world < 2)) {
        if (rank == 0) {
            fprintf(stderr, "mpi_tail: 2 ranks, 2 calls, a round and a "
                    "byte at least\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    buf    = malloc(size);
    others = calloc((size_t)(calls - 1) * rounds, sizeof(double));
    tails  = malloc(sizeof(double) * rounds);
    all    = malloc(sizeof(double) * rounds * size_world);
    if ((buf == NULL) || (others == NULL) || (tails == NULL) || (all == NULL)) {
        fprintf(stderr, "mpi_tail: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    bad += round_run(rank, calls, size, compute_ms / 1e3, buf, &tail, others);
    for (r = 0; r < rounds; ++r) {
        bad += round_run(rank, calls, size, compute_ms / 1e3, buf, &tails[r],
                         others + (size_t)r * (calls - 1));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        memset(tails, 0, sizeof(double) * rounds);
    }
    MPI_Gather(tails, rounds, MPI_DOUBLE, all, rounds, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    /* the median of a leaf's other calls: rank 1's, as a scale */
    n = (calls - 1) * rounds;
    qsort(others, n, sizeof(double), cmp_double);
    other_p50 = others[n / 2];
    if (rank == 1) {
        MPI_Send(&other_p50, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Recv(&other_p50, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        n = rounds * (size_world - 1);
        qsort(all + rounds, n, sizeof(double), cmp_double);
        for (r = 0; r < n; ++r) {
            over1ms += all[rounds + r] > 1e-3;
        }
        printf("tails %d p50_us %.1f p90_us %.1f max_us %.1f over1ms %d "
               "other_p50_us %.1f\n", n, all[rounds + n / 2] * 1e6,
               all[rounds + (n * 9) / 10] * 1e6, all[rounds + n - 1] * 1e6,
               over1ms, other_p50 * 1e6);
        if (anybad) {
            printf("mpi_tail: %d wrong bytes received\n", anybad);
        }
    }

    free(all);
    free(tails);
    free(others);
    free(buf);
    MPI_Finalize();
    return anybad ? 1 : 0;
}
