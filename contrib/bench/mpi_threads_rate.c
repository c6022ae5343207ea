/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * MPI+threads message rate (issue 11): 2 ranks, T threads each, thread k
 * on a communicator of its own (MPICH with VCIs gives each such
 * communicator a VCI, so a UCP worker, so a srqud interface; one VCI
 * serialises them all). Rank 0's thread k posts a window of W MPI_Isend of
 * SIZE bytes to rank 1's thread k, which posts W MPI_Irecv; after each
 * window the receiver answers with an empty message, as OSU's
 * osu_mbw_mr does. Every message's first and last bytes are checked.
 *
 *   mpirun -np 2 mpi_threads_rate [-t THREADS] [-n MSGS] [-w WINDOW] [-s SIZE]
 *
 * Prints one CSV line on rank 0:
 *   threads,size,msgs,seconds,rate_mmps,vcis
 * msgs: in all, over the threads; seconds: from a barrier to the last
 * thread's end; vcis: MPIR_CVAR_CH4_NUM_VCIS as set (empty: not set).
 */

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


typedef struct {
    int       index;
    MPI_Comm  comm;
    long      windows;
    double    end;
    int       errors;
} thread_arg_t;

static int rank, window = 64, size = 8;


static void *run(void *varg)
{
    thread_arg_t *a   = varg;
    MPI_Request *reqs = malloc(sizeof(*reqs) * window);
    /* not MPI_STATUSES_IGNORE: gcc 12 takes MPICH's (MPI_Status*)1 for an
     * array of size 0 and warns */
    MPI_Status *sts   = malloc(sizeof(*sts) * window);
    char *bufs        = malloc((size_t)window * (size ? size : 1));
    long w;
    int i;

    for (w = 0; w < a->windows; ++w) {
        for (i = 0; i < window; ++i) {
            char *b = bufs + (size_t)i * size;

            if (rank == 0) {
                if (size > 0) {
                    b[0] = b[size - 1] = (char)(w + i + a->index);
                }
                MPI_Isend(b, size, MPI_CHAR, 1, i, a->comm, &reqs[i]);
            } else {
                MPI_Irecv(b, size, MPI_CHAR, 0, i, a->comm, &reqs[i]);
            }
        }
        MPI_Waitall(window, reqs, sts);
        if (rank == 0) {
            MPI_Recv(NULL, 0, MPI_CHAR, 1, window, a->comm, MPI_STATUS_IGNORE);
        } else {
            for (i = 0; (i < window) && (size > 0); ++i) {
                char *b = bufs + (size_t)i * size;
                char v  = (char)(w + i + a->index);

                a->errors += (b[0] != v) || (b[size - 1] != v);
            }
            MPI_Send(NULL, 0, MPI_CHAR, 0, window, a->comm);
        }
    }
    a->end = MPI_Wtime();
    free(sts);
    free(reqs);
    free(bufs);
    return NULL;
}


/* One timed round of every thread: the time from a barrier to the last
 * thread's end, and the data errors */
static double round_of(thread_arg_t *args, int threads, long windows,
                       int *errors)
{
    pthread_t *tids = malloc(sizeof(*tids) * threads);
    double start, end = 0;
    int k;

    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    for (k = 0; k < threads; ++k) {
        args[k].windows = windows;
        pthread_create(&tids[k], NULL, run, &args[k]);
    }
    for (k = 0; k < threads; ++k) {
        pthread_join(tids[k], NULL);
        end      = (args[k].end > end) ? args[k].end : end;
        *errors += args[k].errors;
        args[k].errors = 0;
    }
    free(tids);
    return end - start;
}


int main(int argc, char **argv)
{
    int threads = 1, provided, nranks, k, c, errors = 0, all_errors = 0;
    long msgs = 100000, windows;
    thread_arg_t *args;
    double t, tmax;
    const char *vcis;

    while ((c = getopt(argc, argv, "t:n:w:s:")) != -1) {
        switch (c) {
        case 't': threads = atoi(optarg); break;
        case 'n': msgs = atol(optarg); break;
        case 'w': window = atoi(optarg); break;
        case 's': size = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-t threads] [-n msgs] [-w window] "
                    "[-s size]\n", argv[0]);
            return 2;
        }
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if ((provided != MPI_THREAD_MULTIPLE) || (nranks != 2) || (threads < 1) ||
        (window < 1) || (size < 0)) {
        if (rank == 0) {
            fprintf(stderr, "mpi_threads_rate: needs 2 ranks, "
                    "MPI_THREAD_MULTIPLE (got %d), threads >= 1\n", provided);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* a communicator per thread, made in order on both ranks: MPICH hands
     * them VCIs 1..T in turn (vci = sequence number mod NUM_VCIS) */
    args = calloc(threads, sizeof(*args));
    for (k = 0; k < threads; ++k) {
        args[k].index = k;
        MPI_Comm_dup(MPI_COMM_WORLD, &args[k].comm);
    }
    windows = msgs / threads / window;
    if (windows < 1) {
        windows = 1;
    }
    /* warm-up: every worker wired up, buffers registered */
    round_of(args, threads, (windows / 10) + 1, &errors);
    t = round_of(args, threads, windows, &errors);
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        vcis = getenv("MPIR_CVAR_CH4_NUM_VCIS");
        msgs = windows * window * threads;
        printf("%d,%d,%ld,%.4f,%.4f,%s\n", threads, size, msgs, tmax,
               msgs / tmax / 1e6, vcis ? vcis : "");
        if (all_errors) {
            fprintf(stderr, "mpi_threads_rate: %d messages with wrong data\n",
                    all_errors);
        }
    }
    for (k = 0; k < threads; ++k) {
        MPI_Comm_free(&args[k].comm);
    }
    free(args);
    MPI_Finalize();
    return all_errors ? 1 : 0;
}
