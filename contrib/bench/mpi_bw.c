/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Point-to-point latency, uni- and bi-directional bandwidth between ranks
 * 0 and 1 (as osu_latency, osu_bw, osu_bibw do), every message checked:
 *
 *   mpirun -np 2 mpi_bw [-m MIN] [-M MAX] [-i ITERS] [-w WINDOW]
 *
 * Prints "size lat_us bw_MBs bibw_MBs" per size (powers of 4 from MIN to
 * MAX); exit status 1 if a byte arrived wrong.
 */

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_rank, g_bad;


static void fill(uint8_t *p, size_t n, unsigned seed)
{
    size_t i;
    for (i = 0; i < n; ++i) {
        p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 12));
    }
}


static void check(const uint8_t *p, size_t n, unsigned seed)
{
    size_t i;
    for (i = 0; i < n; i += (n > 65536) ? 4093 : 1) {
        if (p[i] != (uint8_t)(seed * 31 + i * 7 + (i >> 12))) {
            ++g_bad;
            return;
        }
    }
    if (n && (p[n - 1] != (uint8_t)(seed * 31 + (n - 1) * 7 + ((n - 1) >> 12)))) {
        ++g_bad;
    }
}


int main(int argc, char **argv)
{
    size_t min = 1024, max = 4 << 20, size;
    int iters = 50, window = 16, c, i, w, peer, bad;
    MPI_Request *reqs;
    uint8_t *sbuf, *rbuf;
    double t, lat = 0, bw = 0, bibw = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    while ((c = getopt(argc, argv, "m:M:i:w:")) != -1) {
        switch (c) {
        case 'm': min    = strtoul(optarg, NULL, 0); break;
        case 'M': max    = strtoul(optarg, NULL, 0); break;
        case 'i': iters  = atoi(optarg); break;
        case 'w': window = atoi(optarg); break;
        default: MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    peer = 1 - g_rank;
    sbuf = malloc(max * window);
    rbuf = malloc(max * window);
    reqs = malloc(sizeof(*reqs) * 2 * window);
    if (g_rank == 0) {
        printf("%10s %10s %10s %10s\n", "size", "lat_us", "bw_MBs", "bibw_MBs");
    }

    for (size = min; size <= max; size *= 4) {
        int n = (size >= (1 << 20)) ? ((iters / 4) ? iters / 4 : 1) : iters;

        if (g_rank < 2) {
            fill(sbuf, size, (unsigned)size);

            /* latency: ping-pong */
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
            for (i = 0; i < n; ++i) {
                if (g_rank == 0) {
                    MPI_Send(sbuf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                    MPI_Recv(rbuf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(rbuf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                    MPI_Send(sbuf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                }
            }
            lat = (MPI_Wtime() - t) / n / 2 * 1e6;
            check(rbuf, size, (unsigned)size);

            /* bandwidth: a window of sends from 0, an ack from 1 */
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
            for (i = 0; i < n; ++i) {
                for (w = 0; w < window; ++w) {
                    if (g_rank == 0) {
                        MPI_Isend(sbuf, size, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
                                  &reqs[w]);
                    } else {
                        MPI_Irecv(rbuf + w * size, size, MPI_BYTE, peer, 2,
                                  MPI_COMM_WORLD, &reqs[w]);
                    }
                }
                MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
                if (g_rank == 0) {
                    MPI_Recv(NULL, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                } else {
                    MPI_Send(NULL, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
                }
            }
            bw = (double)size * window * n / (MPI_Wtime() - t) / 1e6;
            if (g_rank == 1) {
                for (w = 0; w < window; ++w) {
                    check(rbuf + w * size, size, (unsigned)size);
                }
            }

            /* bi-directional: both send a window and receive one */
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
            for (i = 0; i < n; ++i) {
                for (w = 0; w < window; ++w) {
                    MPI_Irecv(rbuf + w * size, size, MPI_BYTE, peer, 4,
                              MPI_COMM_WORLD, &reqs[w]);
                }
                for (w = 0; w < window; ++w) {
                    MPI_Isend(sbuf, size, MPI_BYTE, peer, 4, MPI_COMM_WORLD,
                              &reqs[window + w]);
                }
                MPI_Waitall(2 * window, reqs, MPI_STATUSES_IGNORE);
            }
            bibw = 2.0 * size * window * n / (MPI_Wtime() - t) / 1e6;
            for (w = 0; w < window; ++w) {
                check(rbuf + w * size, size, (unsigned)size);
            }
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (g_rank == 0) {
            printf("%10zu %10.1f %10.1f %10.1f\n", size, lat, bw, bibw);
            fflush(stdout);
        }
    }

    MPI_Allreduce(&g_bad, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if ((g_rank == 0) && bad) {
        printf("mpi_bw: %d messages arrived wrong\n", bad);
    }
    free(sbuf);
    free(rbuf);
    free(reqs);
    MPI_Finalize();
    return bad ? 1 : 0;
}
