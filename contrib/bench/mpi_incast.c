/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Many-to-one: every rank but 0 streams messages at rank 0 at once, the
 * receive pattern that is hardest for a shared receive queue (all senders'
 * packets compete for one pool of buffers). Rank 0 pre-posts a window of
 * MPI_ANY_SOURCE receives and checks every byte.
 *
 *   mpirun -np N mpi_incast [-m MIN] [-M MAX] [-i ITERS] [-w WINDOW]
 *
 * Prints "size MBs msgs_per_s" per size (powers of 4 from MIN to MAX): the
 * receiver's aggregate goodput from the first to the last message; exit
 * status 1 if a byte arrived wrong.
 */

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static void fill(uint8_t *p, size_t n, unsigned seed)
{
    size_t i;
    for (i = 0; i < n; ++i) {
        p[i] = (uint8_t)(seed * 13 + i * 5);
    }
}


static int bad_bytes(const uint8_t *p, size_t n, unsigned seed)
{
    size_t i;
    for (i = 0; i < n; ++i) {
        if (p[i] != (uint8_t)(seed * 13 + i * 5)) {
            return 1;
        }
    }
    return 0;
}


int main(int argc, char **argv)
{
    size_t min = 64, max = 64 << 10, size;
    int iters = 200, window = 32, c, i, k, rank, np, bad = 0, all_bad;
    MPI_Request *reqs;
    MPI_Status st;
    uint8_t *bufs;
    double t;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    while ((c = getopt(argc, argv, "m:M:i:w:")) != -1) {
        switch (c) {
        case 'm': min    = strtoul(optarg, NULL, 0); break;
        case 'M': max    = strtoul(optarg, NULL, 0); break;
        case 'i': iters  = atoi(optarg); break;
        case 'w': window = atoi(optarg); break;
        default:  MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (np < 2) {
        fprintf(stderr, "mpi_incast: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    reqs = calloc(window, sizeof(*reqs));
    bufs = malloc((size_t)window * max);
    if ((reqs == NULL) || (bufs == NULL)) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        printf("size MBs msgs_per_s\n");
    }

    for (size = min; size <= max; size *= 4) {
        /* iters messages from every sender, window at a time */
        long total = (long)iters * (np - 1), got = 0;
        fill(bufs, size, rank);
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        if (rank == 0) {
            int posted = 0;
            for (k = 0; (k < window) && (posted < total); ++k, ++posted) {
                MPI_Irecv(bufs + (size_t)k * size, size, MPI_BYTE,
                          MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &reqs[k]);
            }
            while (got < total) {
                MPI_Waitany(window, reqs, &k, &st);
                bad |= bad_bytes(bufs + (size_t)k * size, size, st.MPI_SOURCE);
                ++got;
                if (posted < total) {
                    MPI_Irecv(bufs + (size_t)k * size, size, MPI_BYTE,
                              MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &reqs[k]);
                    ++posted;
                }
            }
            t = MPI_Wtime() - t;
            printf("%zu %.2f %.0f\n", size, total * size / t / 1e6, total / t);
            fflush(stdout);
        } else {
            for (i = 0; i < iters; i += window) {
                int n = (iters - i < window) ? iters - i : window;
                for (k = 0; k < n; ++k) {
                    MPI_Isend(bufs, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
                              &reqs[k]);
                }
                MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
            }
        }
    }

    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if ((rank == 0) && all_bad) {
        fprintf(stderr, "mpi_incast: wrong bytes received\n");
    }
    free(bufs);
    free(reqs);
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
