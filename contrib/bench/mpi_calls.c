/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Every call timed alone: small-message MPI latency as applications feel
 * it, the average and the slow calls, not only the median.
 *
 *   mpirun -np P mpi_calls [-c CALLS] [-s SIZES] [-n ITERS] [-w WARMUP]
 *
 * CALLS, comma-separated (default all): pingpong (ranks 0 and 1, half the
 * round trip; other ranks wait), sendrecv (a ring: each rank sends to the
 * next and receives from the previous, as IMB's Sendrecv), alltoall,
 * allgather, allreduce (MPI_SUM over SIZE/4 ints), bcast (root 0). SIZES
 * in bytes per rank, comma-separated, K suffix (default 8,1K,4K). The
 * calls run back to back, as in IMB and OSU, without a barrier between
 * them. Not in the default list: burst, rank 0 sending 8 messages with
 * MPI_Send and then computing 5 ms without an MPI call while rank 1
 * receives them (after a barrier; rank 1's time to the 8th): what a
 * transport that held sends for the sender's next call would show.
 *
 * One line per call and size on rank 0:
 *   CALL SIZE avg_us p50_us p99_us max_us slow10x over1ms
 * over every rank's calls (pingpong: rank 0's), where slow10x counts the
 * calls above 10x the median and over1ms those above 1 ms. Before the
 * timed calls each call runs once with data of its own and every received
 * byte is checked; exit status 1 if one was wrong.
 */

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CALL_PINGPONG, CALL_SENDRECV, CALL_ALLTOALL, CALL_ALLGATHER,
       CALL_ALLREDUCE, CALL_BCAST, CALL_BURST, CALL_LAST };

static const char *call_names[CALL_LAST] = {
    "pingpong", "sendrecv", "alltoall", "allgather", "allreduce", "bcast",
    "burst"
};

#define BURST_MSGS       8
#define BURST_COMPUTE_S  0.005

static int g_rank, g_size;
static double g_burst_t0;   /* rank 1: when the burst's barrier ended */
static unsigned char *g_send, *g_recv;


/* The byte rank @a r puts at offset @a i of its block for the check */
static unsigned char pattern(int r, size_t i)
{
    return (unsigned char)(r * 31 + i * 7 + 1);
}


/* One call of @a call with @a size bytes per rank */
static void call_once(int call, size_t size)
{
    int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
    int i;

    switch (call) {
    case CALL_PINGPONG:
        if (g_rank == 0) {
            MPI_Send(g_send, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(g_recv, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else if (g_rank == 1) {
            MPI_Recv(g_recv, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(g_send, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
        break;
    case CALL_SENDRECV:
        MPI_Sendrecv(g_send, (int)size, MPI_BYTE, next, 2, g_recv, (int)size,
                     MPI_BYTE, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
    case CALL_ALLTOALL:
        MPI_Alltoall(g_send, (int)size, MPI_BYTE, g_recv, (int)size, MPI_BYTE,
                     MPI_COMM_WORLD);
        break;
    case CALL_ALLGATHER:
        MPI_Allgather(g_send, (int)size, MPI_BYTE, g_recv, (int)size,
                      MPI_BYTE, MPI_COMM_WORLD);
        break;
    case CALL_ALLREDUCE:
        /* ints: Open MPI 4.1.4's op/avx saturates sums of unsigned chars */
        MPI_Allreduce(g_send, g_recv, (int)(size / sizeof(int)), MPI_INT,
                      MPI_SUM, MPI_COMM_WORLD);
        break;
    case CALL_BCAST:
        MPI_Bcast(g_rank == 0 ? g_send : g_recv, (int)size, MPI_BYTE, 0,
                  MPI_COMM_WORLD);
        break;
    case CALL_BURST:
        MPI_Barrier(MPI_COMM_WORLD);
        g_burst_t0 = MPI_Wtime();
        for (i = 0; (g_rank <= 1) && (i < BURST_MSGS); ++i) {
            if (g_rank == 0) {
                MPI_Send(g_send, (int)size, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
            } else {
                MPI_Recv(g_recv, (int)size, MPI_BYTE, 0, 3, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            }
        }
        while ((g_rank == 0) && (MPI_Wtime() - g_burst_t0 < BURST_COMPUTE_S)) {
        }
        break;
    }
}


/* The byte expected at @a i of the receive buffer after @a call, or -1 where
 * the call leaves it alone on this rank */
static int expected(int call, size_t size, size_t i)
{
    int prev = (g_rank + g_size - 1) % g_size, r, sum;
    size_t blk = i / size, off = i % size;

    switch (call) {
    case CALL_PINGPONG:
        if (g_rank > 1 || i >= size) {
            return -1;
        }
        return pattern(1 - g_rank, i);
    case CALL_SENDRECV:
        return (i < size) ? pattern(prev, i) : -1;
    case CALL_ALLTOALL:
        /* block blk came from rank blk, which sent us its block g_rank */
        return pattern((int)blk, (size_t)g_rank * size + off);
    case CALL_ALLGATHER:
        return pattern((int)blk, off);
    case CALL_ALLREDUCE:
        /* the sum of the ints of every rank, byte by byte (host order) */
        if (i >= size / sizeof(int) * sizeof(int)) {
            return -1;
        }
        for (sum = 0, r = 0; r < g_size; ++r) {
            sum += pattern(r, i / sizeof(int));
        }
        return ((unsigned char*)&sum)[i % sizeof(int)];
    case CALL_BCAST:
        return (g_rank == 0 || i >= size) ? -1 : pattern(0, i);
    case CALL_BURST:
        return (g_rank != 1 || i >= size) ? -1 : pattern(0, i);
    }
    return -1;
}


/* One call with checked data; 0 if every byte this rank received is right */
static int check_call(int call, size_t size)
{
    size_t total = size * (size_t)g_size, i;
    int bad = 0, e;

    for (i = 0; i < total; ++i) {
        /* alltoall sends a block per peer: rank r's byte at i is pattern(r, i) */
        g_send[i] = (call == CALL_ALLTOALL) ? pattern(g_rank, i) :
                    (i < size) ? pattern(g_rank, i) : 0;
    }
    if (call == CALL_ALLREDUCE) {
        for (i = 0; i < size / sizeof(int); ++i) {
            ((int*)g_send)[i] = pattern(g_rank, i);
        }
    }
    memset(g_recv, 0xee, total);
    call_once(call, size);
    for (i = 0; i < total; ++i) {
        e = expected(call, size, i);
        if ((e >= 0) && (g_recv[i] != (unsigned char)e)) {
            if (!bad) {
                fprintf(stderr, "rank %d: %s %zu: byte %zu is 0x%02x, "
                        "expected 0x%02x\n", g_rank, call_names[call], size,
                        i, g_recv[i], e);
            }
            bad = 1;
        }
    }
    return bad;
}


static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}


/* Timed calls; rank 0 prints the line. Returns 1 if the check failed. */
static int measure(int call, size_t size, int iters, int warmup)
{
    double *t = calloc((size_t)iters, sizeof(*t)), *all = NULL, sum = 0, t0;
    int i, n, bad, anybad, slow = 0, over1ms = 0;

    if (t == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    bad = check_call(call, size);
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (i = 0; i < warmup; ++i) {
        call_once(call, size);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < iters; ++i) {
        t0 = MPI_Wtime();
        call_once(call, size);
        if (call == CALL_BURST) {
            t0 = g_burst_t0;   /* from the barrier's end */
        }
        t[i] = (MPI_Wtime() - t0) * 1e6;
        if (call == CALL_PINGPONG) {
            t[i] /= 2;
        }
    }
    if (g_rank == 0) {
        all = malloc(sizeof(*all) * (size_t)iters * (size_t)g_size);
        if (all == NULL) {
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Gather(t, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    if (g_rank == 0) {
        /* pingpong: rank 0's half round trips; burst: rank 1's receiving;
         * the rest: every rank's calls */
        n = ((call == CALL_PINGPONG) || (call == CALL_BURST)) ? iters :
            iters * g_size;
        if (call == CALL_BURST) {
            memmove(all, all + iters, sizeof(*all) * (size_t)iters);
        }
        qsort(all, (size_t)n, sizeof(*all), cmp_double);
        for (i = 0; i < n; ++i) {
            sum += all[i];
            slow    += all[i] > 10 * all[n / 2];
            over1ms += all[i] > 1000;
        }
        printf("%s %zu %.2f %.2f %.2f %.2f %d %d\n", call_names[call], size,
               sum / n, all[n / 2], all[(size_t)(0.99 * (n - 1))], all[n - 1],
               slow, over1ms);
        fflush(stdout);
        free(all);
    }
    free(t);
    return anybad;
}


static size_t parse_size(const char *s)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);

    if ((*end == 'K') || (*end == 'k')) {
        v <<= 10;
        ++end;
    }
    if ((end == s) || ((*end != '\0') && (*end != ',')) || (v == 0) ||
        (v > (1ul << 24))) {
        return 0;
    }
    return v;
}


static void usage(void)
{
    if (g_rank == 0) {
        fprintf(stderr, "usage: mpi_calls [-c CALLS] [-s SIZES] [-n ITERS] "
                "[-w WARMUP]\n");
    }
    MPI_Finalize();
    exit(2);
}


/* The item after the one @a s points at in a comma-separated list; NULL
 * after the last */
static const char *list_next(const char *s)
{
    const char *comma = strchr(s, ',');

    return (comma != NULL) ? comma + 1 : NULL;
}


/* The call named by the list item at @a s; CALL_LAST if none is */
static int call_of(const char *s)
{
    size_t len = strcspn(s, ",");
    int call;

    for (call = 0; call < CALL_LAST; ++call) {
        if ((strlen(call_names[call]) == len) &&
            !strncmp(s, call_names[call], len)) {
            break;
        }
    }
    return call;
}


int main(int argc, char **argv)
{
    const char *calls = "pingpong,sendrecv,alltoall,allgather,allreduce,bcast";
    const char *sizes = "8,1K,4K", *s;
    size_t size[64], max = 0;
    int call[64], ncalls = 0, nsizes = 0;
    int iters = 10000, warmup = 200, opt, i, j, bad = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    while ((opt = getopt(argc, argv, "c:s:n:w:")) != -1) {
        switch (opt) {
        case 'c': calls  = optarg; break;
        case 's': sizes  = optarg; break;
        case 'n': iters  = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        default:  usage();
        }
    }
    if ((iters < 1) || (warmup < 0) || (g_size < 2)) {
        usage();
    }
    /* both lists checked before anything runs */
    for (s = sizes; s != NULL; s = list_next(s)) {
        if ((nsizes == 64) || ((size[nsizes] = parse_size(s)) == 0)) {
            usage();
        }
        max = (size[nsizes] > max) ? size[nsizes] : max;
        ++nsizes;
    }
    for (s = calls; s != NULL; s = list_next(s)) {
        if ((ncalls == 64) || ((call[ncalls] = call_of(s)) == CALL_LAST)) {
            usage();
        }
        ++ncalls;
    }
    g_send = malloc(max * (size_t)g_size);
    g_recv = malloc(max * (size_t)g_size);
    if ((g_send == NULL) || (g_recv == NULL)) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (g_rank == 0) {
        printf("call size avg_us p50_us p99_us max_us slow10x over1ms\n");
    }
    for (i = 0; i < ncalls; ++i) {
        for (j = 0; j < nsizes; ++j) {
            bad |= measure(call[i], size[j], iters, warmup);
        }
    }
    free(g_send);
    free(g_recv);
    MPI_Finalize();
    return bad;
}
