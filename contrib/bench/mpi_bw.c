/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Point-to-point latency, uni- and bi-directional bandwidth between ranks
 * 0 and 1 (as osu_latency, osu_bw, osu_bibw do), every message checked:
 *
 *   mpirun -np 2 mpi_bw [-m MIN] [-M MAX] [-i ITERS] [-w WINDOW] [-c]
 *
 * Prints "size lat_us bw_MBs bibw_MBs" per size (powers of 4 from MIN to
 * MAX); with -c also "kcpus_bw kcpus_bibw": the CPUs of the whole machine
 * kept busy in the kernel on average during each bandwidth phase (system,
 * irq and softirq time in /proc/stat: on Soft-RoCE every packet's work,
 * sending, copying and delivering, is there; the ranks' user time is not
 * counted, since they poll and would fill every CPU whatever the load).
 * Exit status 1 if a byte arrived wrong.
 */

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_rank, g_bad;


/* Jiffies of all CPUs in the kernel (system, irq, softirq) and in all (the
 * first line of /proc/stat); 0 if it cannot be read */
static void cpu_jiffies(unsigned long long *busy, unsigned long long *total)
{
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    int i;

    *busy = *total = 0;
    if (f == NULL) {
        return;
    }
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
               &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
        for (i = 0; i < 8; ++i) {
            *total += v[i];
        }
        *busy = v[2] + v[5] + v[6];
    }
    fclose(f);
}


/* CPUs busy in the kernel on average since @a busy0 / @a total0 */
static double cpus_busy_since(unsigned long long busy0,
                              unsigned long long total0, int ncpus)
{
    unsigned long long busy, total;

    cpu_jiffies(&busy, &total);
    return (total > total0) ?
           (double)(busy - busy0) / (double)(total - total0) * ncpus : 0;
}


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
    int iters = 50, window = 16, cpus = 0, c, i, w, peer, bad;
    int ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    unsigned long long busy0, total0;
    double cpus_bw = 0, cpus_bibw = 0;
    MPI_Request *reqs;
    uint8_t *sbuf, *rbuf;
    double t, lat = 0, bw = 0, bibw = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    while ((c = getopt(argc, argv, "m:M:i:w:c")) != -1) {
        switch (c) {
        case 'm': min    = strtoul(optarg, NULL, 0); break;
        case 'M': max    = strtoul(optarg, NULL, 0); break;
        case 'i': iters  = atoi(optarg); break;
        case 'w': window = atoi(optarg); break;
        case 'c': cpus   = 1; break;
        default: MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    peer = 1 - g_rank;
    sbuf = malloc(max * window);
    rbuf = malloc(max * window);
    reqs = malloc(sizeof(*reqs) * 2 * window);
    if (g_rank == 0) {
        printf("%10s %10s %10s %10s", "size", "lat_us", "bw_MBs", "bibw_MBs");
        printf(cpus ? " %10s %10s\n" : "\n", "kcpus_bw", "kcpus_bibw");
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
            cpu_jiffies(&busy0, &total0);
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
            bw      = (double)size * window * n / (MPI_Wtime() - t) / 1e6;
            cpus_bw = cpus_busy_since(busy0, total0, ncpus);
            if (g_rank == 1) {
                for (w = 0; w < window; ++w) {
                    check(rbuf + w * size, size, (unsigned)size);
                }
            }

            /* bi-directional: both send a window and receive one */
            MPI_Barrier(MPI_COMM_WORLD);
            cpu_jiffies(&busy0, &total0);
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
            bibw      = 2.0 * size * window * n / (MPI_Wtime() - t) / 1e6;
            cpus_bibw = cpus_busy_since(busy0, total0, ncpus);
            for (w = 0; w < window; ++w) {
                check(rbuf + w * size, size, (unsigned)size);
            }
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (g_rank == 0) {
            printf("%10zu %10.1f %10.1f %10.1f", size, lat, bw, bibw);
            printf(cpus ? " %10.2f %10.2f\n" : "\n", cpus_bw, cpus_bibw);
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
