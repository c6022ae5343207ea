/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * MPI test of a UCX transport, for Open MPI (pml ucx) and MPICH (ch4:ucx):
 * run it with UCX_TLS=srqud,self and every byte below crosses srqud.
 *
 *   1. point-to-point, 0 B to 4 MB (eager, multi-fragment, rendezvous),
 *      ring exchange with nonblocking calls, every byte checked
 *   2. MPI_ANY_SOURCE / MPI_ANY_TAG receives, attributed by status
 *   3. many outstanding nonblocking operations at once
 *   4. collectives: Bcast, Allreduce, Alltoall, Allgather, Barrier
 *
 * Exit status 0 only if every check passed on every rank. Options:
 *   -m BYTES  largest point-to-point message (default 4 MiB)
 *   -i N      iterations of the point-to-point sweep (default 2)
 *   -o N      outstanding operations per rank in phase 3 (default 512)
 *   -T SEC    soak: repeat all phases until SEC seconds have passed; rank 0
 *             prints each round's time and every rank's resident memory
 *             (VmRSS), which must stay flat
 *   -t N      5. threads: MPI_THREAD_MULTIPLE, N threads per rank, each with
 *             a communicator of its own (MPI_Comm_dup), ring exchanges of
 *             1 B to -m bytes at once, every byte checked; an MPI that does
 *             not provide MPI_THREAD_MULTIPLE fails the test
 */

#include <mpi.h>

#include <pthread.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_rank, g_size;
static unsigned long g_checks, g_errors;

#define CHECK(_cond, ...) \
    do { \
        ++g_checks; \
        if (!(_cond)) { \
            ++g_errors; \
            if (g_errors <= 20) { \
                fprintf(stderr, "rank %d: FAILED %s:%d: ", g_rank, __FILE__, \
                        __LINE__); \
                fprintf(stderr, __VA_ARGS__); \
                fputc('\n', stderr); \
            } \
        } \
    } while (0)


/* Deterministic bytes for (source, destination, tag, length) */
static void fill(uint8_t *buf, size_t len, int src, int dst, int tag)
{
    uint64_t x = ((uint64_t)src << 40) ^ ((uint64_t)dst << 20) ^
                 ((uint64_t)tag * 0x9e3779b97f4a7c15ull) ^ len ^ 1;
    size_t i;

    for (i = 0; i < len; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
}


/* Number of bytes that differ from fill() */
static size_t count_bad(const uint8_t *buf, size_t len, int src, int dst,
                        int tag)
{
    uint8_t *expected = malloc(len ? len : 1);
    size_t i, bad = 0;

    fill(expected, len, src, dst, tag);
    for (i = 0; i < len; ++i) {
        bad += (buf[i] != expected[i]);
    }
    free(expected);
    return bad;
}


static void phase_p2p(size_t max_size, int iters)
{
    static const size_t fixed[] = {0, 1, 7, 8, 63, 64, 100, 1000, 2048, 4095,
                                   4096, 4097, 8192, 16383, 65536, 100000,
                                   262144, 1048576 + 3};
    size_t sizes[32], nsizes = 0, i;
    int next = (g_rank + 1) % g_size;
    int prev = (g_rank - 1 + g_size) % g_size;
    uint8_t *sbuf, *rbuf;
    MPI_Request reqs[2];
    MPI_Status st[2];
    int it, count;

    for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); ++i) {
        if (fixed[i] <= max_size) {
            sizes[nsizes++] = fixed[i];
        }
    }
    if (max_size > fixed[sizeof(fixed) / sizeof(fixed[0]) - 1]) {
        sizes[nsizes++] = max_size;
    }

    sbuf = malloc(max_size + 1);
    rbuf = malloc(max_size + 1);
    for (it = 0; it < iters; ++it) {
        for (i = 0; i < nsizes; ++i) {
            int tag = (int)(it * 64 + i);
            fill(sbuf, sizes[i], g_rank, next, tag);
            memset(rbuf, 0xee, sizes[i] + 1);
            MPI_Irecv(rbuf, (int)sizes[i], MPI_BYTE, prev, tag, MPI_COMM_WORLD,
                      &reqs[0]);
            MPI_Isend(sbuf, (int)sizes[i], MPI_BYTE, next, tag, MPI_COMM_WORLD,
                      &reqs[1]);
            MPI_Waitall(2, reqs, st);
            MPI_Get_count(&st[0], MPI_BYTE, &count);
            CHECK((size_t)count == sizes[i], "p2p size %zu: got %d bytes",
                  sizes[i], count);
            CHECK(count_bad(rbuf, sizes[i], prev, g_rank, tag) == 0,
                  "p2p size %zu from %d: payload corrupt", sizes[i], prev);
            CHECK(rbuf[sizes[i]] == 0xee, "p2p size %zu: wrote past the end",
                  sizes[i]);
        }
    }
    free(sbuf);
    free(rbuf);
}


static void phase_any_source(void)
{
    const int per_peer = 4;
    int seen[1024] = {0};
    uint8_t buf[3000];
    MPI_Status st;
    int i, j, count;

    if (g_rank == 0) {
        for (i = 0; i < (g_size - 1) * per_peer; ++i) {
            MPI_Recv(buf, sizeof(buf), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                     MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK((st.MPI_SOURCE > 0) && (st.MPI_SOURCE < g_size),
                  "any-source: bad source %d", st.MPI_SOURCE);
            CHECK(count == 100 * (st.MPI_TAG + 1) + st.MPI_SOURCE,
                  "any-source: %d bytes from %d tag %d", count, st.MPI_SOURCE,
                  st.MPI_TAG);
            CHECK(count_bad(buf, count, st.MPI_SOURCE, 0, st.MPI_TAG) == 0,
                  "any-source: payload from %d tag %d corrupt", st.MPI_SOURCE,
                  st.MPI_TAG);
            /* messages of one sender arrive in order (MPI non-overtaking) */
            CHECK(st.MPI_TAG == seen[st.MPI_SOURCE % 1024],
                  "any-source: from %d tag %d, expected tag %d", st.MPI_SOURCE,
                  st.MPI_TAG, seen[st.MPI_SOURCE % 1024]);
            ++seen[st.MPI_SOURCE % 1024];
        }
        for (j = 1; j < g_size; ++j) {
            CHECK(seen[j % 1024] == per_peer, "any-source: %d of %d from %d",
                  seen[j % 1024], per_peer, j);
        }
    } else {
        for (i = 0; i < per_peer; ++i) {
            count = 100 * (i + 1) + g_rank;
            fill(buf, count, g_rank, 0, i);
            MPI_Send(buf, count, MPI_BYTE, 0, i, MPI_COMM_WORLD);
        }
    }
}


/* Every rank exchanges @a n messages with every other rank, all posted at
 * once: receives first for half of them, sends, then the rest */
static void phase_outstanding(int n)
{
    int peers = g_size - 1, p, k, idx = 0, nreq, count;
    size_t len, off;
    uint8_t *sbuf, *rbuf;
    size_t *roff;
    MPI_Request *reqs;
    MPI_Status *st;

    if (peers == 0) {
        return;
    }

    /* sizes cycle through short, bcopy and multi-packet ones */
#define OUT_LEN(_k) ((size_t)(((_k) * 131) % 9000))
    sbuf = malloc((size_t)n * 9000);
    rbuf = malloc((size_t)n * peers * 9000);
    roff = malloc(sizeof(*roff) * n * peers);
    reqs = malloc(sizeof(*reqs) * 2 * n * peers);
    st   = malloc(sizeof(*st) * 2 * n * peers);

    for (k = 0, off = 0; k < n; ++k) {
        len = OUT_LEN(k);
        fill(sbuf + off, len, g_rank, -1, k);
        off += len;
    }

    off = 0;
    for (p = 0; p < g_size; ++p) {
        if (p == g_rank) {
            continue;
        }
        for (k = 0; k < n; ++k) {
            roff[(p < g_rank ? p : p - 1) * n + k] = off;
            MPI_Irecv(rbuf + off, (int)OUT_LEN(k), MPI_BYTE, p, k,
                      MPI_COMM_WORLD, &reqs[idx++]);
            off += OUT_LEN(k);
        }
    }
    for (p = 0; p < g_size; ++p) {
        if (p == g_rank) {
            continue;
        }
        for (k = 0, off = 0; k < n; ++k) {
            MPI_Isend(sbuf + off, (int)OUT_LEN(k), MPI_BYTE, p, k,
                      MPI_COMM_WORLD, &reqs[idx++]);
            off += OUT_LEN(k);
        }
    }
    nreq = idx;
    MPI_Waitall(nreq, reqs, st);

    for (p = 0, idx = 0; p < g_size; ++p) {
        if (p == g_rank) {
            continue;
        }
        for (k = 0; k < n; ++k, ++idx) {
            MPI_Get_count(&st[idx], MPI_BYTE, &count);
            CHECK((size_t)count == OUT_LEN(k), "outstanding: %d bytes", count);
            CHECK(count_bad(rbuf + roff[idx], OUT_LEN(k), p, -1, k) == 0,
                  "outstanding: message %d from %d corrupt", k, p);
        }
    }
#undef OUT_LEN
    free(sbuf);
    free(rbuf);
    free(roff);
    free(reqs);
    free(st);
}


static void phase_collectives(void)
{
    const int bcast_len = 1 << 20, a2a = 1000;
    uint8_t *buf = malloc(bcast_len);
    uint8_t *sbuf, *rbuf;
    long *vals, *sums;
    int root, i, p;

    /* Bcast from every root */
    for (root = 0; root < g_size; ++root) {
        if (g_rank == root) {
            fill(buf, bcast_len, root, -2, 0);
        } else {
            memset(buf, 0, bcast_len);
        }
        MPI_Bcast(buf, bcast_len, MPI_BYTE, root, MPI_COMM_WORLD);
        CHECK(count_bad(buf, bcast_len, root, -2, 0) == 0,
              "bcast from %d corrupt", root);
    }

    /* Allreduce: sum of (rank + 1) * i */
    vals = malloc(sizeof(long) * 4096);
    sums = malloc(sizeof(long) * 4096);
    for (i = 0; i < 4096; ++i) {
        vals[i] = (long)(g_rank + 1) * i;
    }
    MPI_Allreduce(vals, sums, 4096, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < 4096; ++i) {
        CHECK(sums[i] == (long)i * g_size * (g_size + 1) / 2,
              "allreduce[%d] = %ld", i, sums[i]);
    }

    /* Alltoall and Allgather of patterned blocks */
    sbuf = malloc((size_t)a2a * g_size);
    rbuf = malloc((size_t)a2a * g_size);
    for (p = 0; p < g_size; ++p) {
        fill(sbuf + (size_t)p * a2a, a2a, g_rank, p, 7);
    }
    MPI_Alltoall(sbuf, a2a, MPI_BYTE, rbuf, a2a, MPI_BYTE, MPI_COMM_WORLD);
    for (p = 0; p < g_size; ++p) {
        CHECK(count_bad(rbuf + (size_t)p * a2a, a2a, p, g_rank, 7) == 0,
              "alltoall block from %d corrupt", p);
    }
    fill(sbuf, a2a, g_rank, -3, 9);
    MPI_Allgather(sbuf, a2a, MPI_BYTE, rbuf, a2a, MPI_BYTE, MPI_COMM_WORLD);
    for (p = 0; p < g_size; ++p) {
        CHECK(count_bad(rbuf + (size_t)p * a2a, a2a, p, -3, 9) == 0,
              "allgather block from %d corrupt", p);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    free(vals);
    free(sums);
    free(sbuf);
    free(rbuf);
}


/* Phase 5: one thread of a rank, on its own communicator */
typedef struct {
    int           id;
    MPI_Comm      comm;
    size_t        max_size;
    int           iters;
    unsigned long checks, errors;   /* the thread's own: CHECK is not */
} thread_arg_t;

static void *thread_ring(void *p)
{
    thread_arg_t *a = p;
    int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
    int it, k = 0, tag;
    uint8_t *sbuf = malloc(a->max_size), *rbuf = malloc(a->max_size);
    MPI_Request reqs[2];
    MPI_Status sts[2];
    size_t len, bad;

    for (it = 0; it < a->iters; ++it) {
        for (len = 1; len <= a->max_size; len *= 4, ++k) {
            tag = a->id * 1000 + k;
            fill(sbuf, len, g_rank, next, tag);
            memset(rbuf, 0, len);
            MPI_Irecv(rbuf, (int)len, MPI_BYTE, prev, tag, a->comm, &reqs[0]);
            MPI_Isend(sbuf, (int)len, MPI_BYTE, next, tag, a->comm, &reqs[1]);
            MPI_Waitall(2, reqs, sts);
            ++a->checks;
            bad = count_bad(rbuf, len, prev, g_rank, tag);
            if (bad > 0) {
                if (++a->errors <= 5) {
                    fprintf(stderr, "rank %d thread %d: %zu of %zu bytes "
                            "wrong from rank %d (tag %d)\n", g_rank, a->id,
                            bad, len, prev, tag);
                }
            }
        }
    }
    free(sbuf);
    free(rbuf);
    return NULL;
}

static void phase_threads(int n, size_t max_size, int iters)
{
    thread_arg_t *args = calloc(n, sizeof(*args));
    pthread_t *th      = calloc(n, sizeof(*th));
    int i;

    for (i = 0; i < n; ++i) {
        args[i].id       = i;
        args[i].max_size = max_size;
        args[i].iters    = iters;
        MPI_Comm_dup(MPI_COMM_WORLD, &args[i].comm);
    }
    for (i = 0; i < n; ++i) {
        CHECK(pthread_create(&th[i], NULL, thread_ring, &args[i]) == 0,
              "pthread_create %d", i);
    }
    for (i = 0; i < n; ++i) {
        pthread_join(th[i], NULL);
        g_checks += args[i].checks;
        g_errors += args[i].errors;
        MPI_Comm_free(&args[i].comm);
    }
    free(args);
    free(th);
}


/* This process's resident set, kB (0 if unknown) */
static long rss_kb(void)
{
    char line[256];
    long kb = 0;
    FILE *f = fopen("/proc/self/status", "r");

    while ((f != NULL) && (fgets(line, sizeof(line), f) != NULL)) {
        if (sscanf(line, "VmRSS: %ld", &kb) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kb;
}


/* After a soak round: every rank's VmRSS on one line of rank 0; whether
 * another round starts (rank 0's clock decides for all) */
static int soak_next(int round, double t0, int seconds)
{
    long rss = rss_kb(), *all = NULL;
    double now = MPI_Wtime();
    int more, i;

    if (g_rank == 0) {
        all = malloc(sizeof(*all) * g_size);
    }
    MPI_Gather(&rss, 1, MPI_LONG, all, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("soak round %d at %.0f s, %lu checks, %lu failed, VmRSS kB:",
               round, now - t0, g_checks, g_errors);
        for (i = 0; i < g_size; ++i) {
            printf(" %ld", all[i]);
        }
        printf("\n");
        fflush(stdout);
        free(all);
    }
    more = (now - t0) < seconds;
    MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return more;
}


int main(int argc, char **argv)
{
    size_t max_size = 4u << 20;
    int iters = 2, outstanding = 512, soak = 0, round = 0, threads = 0, c;
    int provided = MPI_THREAD_SINGLE;
    unsigned long totals[2], local[2];
    double t0;

    /* -t asks for MPI_THREAD_MULTIPLE, which MPI_Init_thread must know */
    for (c = 1; c < argc; ++c) {
        if (!strncmp(argv[c], "-t", 2)) {
            threads = 1;
        }
    }
    if (threads) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);

    while ((c = getopt(argc, argv, "m:i:o:T:t:")) != -1) {
        switch (c) {
        case 'm': max_size = strtoul(optarg, NULL, 0); break;
        case 'i': iters = atoi(optarg); break;
        case 'o': outstanding = atoi(optarg); break;
        case 'T': soak = atoi(optarg); break;
        case 't': threads = atoi(optarg); break;
        default:
            if (g_rank == 0) {
                fprintf(stderr, "usage: %s [-m max_bytes] [-i iters] "
                        "[-o outstanding] [-T soak_seconds] [-t threads]\n", argv[0]);
            }
            MPI_Finalize();
            return 2;
        }
    }

    /* not a skip: a thread test the MPI cannot run has failed */
    CHECK((threads == 0) || (provided == MPI_THREAD_MULTIPLE),
          "MPI_THREAD_MULTIPLE asked for, %d provided", provided);
    if ((threads > 0) && (provided != MPI_THREAD_MULTIPLE)) {
        threads = 0;
    }

    /* a barrier between phases: the any-source receives of one would
     * otherwise match the next phase's messages */
    t0 = MPI_Wtime();
    do {
        phase_p2p(max_size, iters);
        MPI_Barrier(MPI_COMM_WORLD);
        phase_any_source();
        MPI_Barrier(MPI_COMM_WORLD);
        phase_outstanding(outstanding);
        MPI_Barrier(MPI_COMM_WORLD);
        phase_collectives();
        if (threads > 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            phase_threads(threads, max_size, iters);
        }
    } while ((soak > 0) && soak_next(++round, t0, soak));

    local[0] = g_checks;
    local[1] = g_errors;
    MPI_Allreduce(local, totals, 2, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("srqud_mpi_test: %d ranks, %lu checks, %lu failed: %s\n", g_size,
               totals[0], totals[1], (totals[1] == 0) ? "PASS" : "FAIL");
    }
    MPI_Finalize();
    return (totals[1] == 0) ? 0 : 1;
}
