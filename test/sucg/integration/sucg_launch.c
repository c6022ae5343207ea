/*
 * Integration test of sucg: forks N ranks on this host, wires them
 * with an out-of-band allgather over a shared anonymous mapping (no
 * network), runs allgathers over UCP (whatever UCX_TLS says: tcp over
 * loopback, shared memory, ...) and verifies every byte.
 *
 *   sucg_launch -n NRANKS [-m MAX_TOTAL_BYTES] [-t TIMEOUT_S] [-a ALGO]...
 *               [-C RANK]   deliberately corrupt one received byte on RANK
 *                           (self-test of the checker: must exit non-zero)
 *               [-B ITERS]  benchmark instead: average latency per algorithm
 *                           and size (persistent collective, same buffers)
 *               [-R RANK]   every receive-buffer registration on RANK fails
 *                           (SUCG_FAULT_REG_FAIL=100 there only): its
 *                           zero-copy steps must arrive by tagged messages
 *               [-S am|put|tail] how staged steps must have gone: every
 *                           one as an active message, as puts, or as one
 *                           put with its flag last (but steps beyond
 *                           SUCG_TAIL_MAX of a rank count with extras)
 *
 * Exits 0 only if every rank verified every collective.
 */
#define _GNU_SOURCE
#include "sucg/api/sucg.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS     64
#define OOB_SLOT_MAX  (64 * 1024)

/* Shared between all ranks (MAP_SHARED|MAP_ANONYMOUS before fork) */
typedef struct shared {
    volatile int  count;        /* barrier arrivals */
    volatile int  generation;   /* barrier epoch */
    volatile int  abort;        /* some rank failed: everyone stop waiting */
    uint8_t       slots[MAX_RANKS * OOB_SLOT_MAX];
} shared_t;

static shared_t    *sh;
static int          nranks, my_rank;
static ucp_worker_h g_worker;   /* progressed while waiting in barriers */

static void die(const char *what)
{
    fprintf(stderr, "rank %d: FATAL: %s\n", my_rank, what);
    sh->abort = 1;
    exit(2);
}

/* Sense-reversing barrier; yields: more ranks than cores */
static void barrier(void)
{
    int gen = sh->generation;

    if (__atomic_add_fetch(&sh->count, 1, __ATOMIC_ACQ_REL) == nranks) {
        sh->count = 0;
        __atomic_store_n(&sh->generation, gen + 1, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&sh->generation, __ATOMIC_ACQUIRE) == gen) {
        if (sh->abort) {
            die("another rank aborted");
        }
        /* peers may need our worker for wire-up or tcp put delivery */
        if (g_worker != NULL) {
            ucp_worker_progress(g_worker);
        }
        sched_yield();
    }
}

static ucs_status_t oob_allgather(const void *sbuf, void *rbuf, size_t len,
                                  void *arg)
{
    int r;

    if (len > OOB_SLOT_MAX) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    memcpy(sh->slots + (size_t)my_rank * OOB_SLOT_MAX, sbuf, len);
    barrier();
    for (r = 0; r < nranks; ++r) {
        memcpy((uint8_t*)rbuf + (size_t)r * len,
               sh->slots + (size_t)r * OOB_SLOT_MAX, len);
    }
    barrier();   /* slots may be overwritten by the next call */
    return UCS_OK;
}

/* Content of rank @a r's block in iteration @a iter, byte @a o */
static inline uint8_t pat(int r, unsigned iter, size_t o)
{
    uint64_t x = ((uint64_t)r << 40) ^ ((uint64_t)iter << 24) ^ o;
    x *= 0x9e3779b97f4a7c15ull;
    return (uint8_t)(x >> 56);
}

static void fill(uint8_t *p, int r, unsigned iter, size_t m)
{
    size_t o;
    for (o = 0; o < m; ++o) {
        p[o] = pat(r, iter, o);
    }
}

static int corrupt_rank = -1;
static int reg_fail_rank = -1;
static const char *staged_want;   /* -S */
static long errors;

static void verify(const char *what, const uint8_t *rbuf, size_t m,
                   unsigned iter)
{
    size_t o, bad = 0, first = (size_t)-1;
    int r;

    for (r = 0; r < nranks; ++r) {
        for (o = 0; o < m; ++o) {
            if (rbuf[r * m + o] != pat(r, iter, o)) {
                if (first == (size_t)-1) {
                    first = r * m + o;
                }
                ++bad;
            }
        }
    }
    if (bad) {
        fprintf(stderr, "rank %d: MISMATCH %s count=%zu iter=%u: %zu bad bytes, "
                "first at %zu (block %zu offset %zu): got 0x%02x want 0x%02x\n",
                my_rank, what, m, iter, bad, first, first / m, first % m,
                rbuf[first], pat((int)(first / m), iter, first % m));
        ++errors;
    }
}

static void maybe_corrupt(uint8_t *rbuf, size_t m)
{
    /* flip a byte of a block received from another rank */
    if ((my_rank == corrupt_rank) && (m > 0)) {
        rbuf[((my_rank + 1) % nranks) * m + m / 2] ^= 0x5a;
        corrupt_rank = -1;   /* once */
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        fprintf(stderr, "rank %d: %s: %s\n", my_rank, what,
                ucs_status_string(status));
        die(what);
    }
}

static uint8_t *alloc_buf(size_t len)
{
    uint8_t *p = malloc(len ? len : 1);
    if (p == NULL) {
        die("malloc");
    }
    memset(p, 0xee, len);   /* a missing block can never look right */
    return p;
}

/*
 * Wait, yielding the core when ranks outnumber cores: a spinning rank would
 * otherwise take the time slice of the peer it waits for.
 */
static int oversubscribed;

static ucs_status_t coll_wait(sucg_coll_h coll)
{
    ucs_status_t status;

    while ((status = sucg_coll_test(coll)) == UCS_INPROGRESS) {
        if (oversubscribed) {
            sched_yield();
        }
    }
    return status;
}

/* One collective, blocking */
static void run_one(sucg_group_h group, sucg_allgather_algo_t algo,
                    const uint8_t *sbuf, uint8_t *rbuf, size_t m,
                    unsigned flags)
{
    sucg_coll_params_t p = {
        .type = SUCG_COLL_ALLGATHER, .sbuf = sbuf, .rbuf = rbuf, .count = m,
        .flags = flags, .algo = algo
    };
    sucg_coll_h coll;

    check(sucg_coll_init(group, &p, &coll), "sucg_coll_init");
    check(sucg_coll_start(coll), "sucg_coll_start");
    check(coll_wait(coll), "sucg_coll_wait");
    sucg_coll_free(coll);
}

static const char *algo_name(sucg_allgather_algo_t a)
{
    return sucg_allgather_algo_name(a);
}

/*
 * For one (algorithm, count):
 *  1. fresh buffers, out of place
 *  2. fresh buffer, in place
 *  3. persistent collective on one buffer pair, started 3 times with new
 *     data each time (repeated buffers: registration cache hits)
 *  4. three non-blocking collectives started back to back on different
 *     buffers, then waited (queueing, both group-buffer halves in flight)
 */
static void run_case(sucg_context_h ctx, sucg_group_h group,
                     sucg_allgather_algo_t algo, size_t m, unsigned *iter)
{
    char what[96];
    uint8_t *sbuf, *rbuf, *rb[3], *sb[3];
    sucg_coll_params_t p;
    sucg_coll_h coll, colls[3];
    int i, k;

    snprintf(what, sizeof(what), "%s/fresh", algo_name(algo));
    sbuf = alloc_buf(m);
    rbuf = alloc_buf(m * nranks);
    fill(sbuf, my_rank, ++*iter, m);
    run_one(group, algo, sbuf, rbuf, m, 0);
    maybe_corrupt(rbuf, m);
    verify(what, rbuf, m, *iter);
    sucg_mem_invalidate(ctx, rbuf, m * nranks);
    free(rbuf);
    free(sbuf);

    snprintf(what, sizeof(what), "%s/in-place", algo_name(algo));
    rbuf = alloc_buf(m * nranks);
    fill(rbuf + my_rank * m, my_rank, ++*iter, m);
    run_one(group, algo, NULL, rbuf, m, SUCG_COLL_FLAG_IN_PLACE);
    verify(what, rbuf, m, *iter);
    sucg_mem_invalidate(ctx, rbuf, m * nranks);
    free(rbuf);

    snprintf(what, sizeof(what), "%s/persistent", algo_name(algo));
    sbuf = alloc_buf(m);
    rbuf = alloc_buf(m * nranks);
    p = (sucg_coll_params_t){ .type = SUCG_COLL_ALLGATHER, .sbuf = sbuf,
                              .rbuf = rbuf, .count = m,
                              .flags = SUCG_COLL_FLAG_PERSISTENT, .algo = algo };
    check(sucg_coll_init(group, &p, &coll), "sucg_coll_init");
    for (i = 0; i < 3; ++i) {
        fill(sbuf, my_rank, ++*iter, m);
        memset(rbuf, 0xee, m * nranks);
        check(sucg_coll_start(coll), "sucg_coll_start");
        check(coll_wait(coll), "sucg_coll_wait");
        verify(what, rbuf, m, *iter);
    }
    sucg_coll_free(coll);
    sucg_mem_invalidate(ctx, rbuf, m * nranks);
    free(rbuf);
    free(sbuf);

    snprintf(what, sizeof(what), "%s/nonblocking", algo_name(algo));
    for (k = 0; k < 3; ++k) {
        sb[k] = alloc_buf(m);
        rb[k] = alloc_buf(m * nranks);
        fill(sb[k], my_rank, *iter + 1 + k, m);
        p = (sucg_coll_params_t){ .type = SUCG_COLL_ALLGATHER, .sbuf = sb[k],
                                  .rbuf = rb[k], .count = m, .algo = algo };
        check(sucg_coll_init(group, &p, &colls[k]), "sucg_coll_init");
        check(sucg_coll_start(colls[k]), "sucg_coll_start");
    }
    for (k = 2; k >= 0; --k) {   /* waiting out of order is allowed */
        check(coll_wait(colls[k]), "sucg_coll_wait");
    }
    for (k = 0; k < 3; ++k) {
        verify(what, rb[k], m, *iter + 1 + k);
        sucg_coll_free(colls[k]);
        sucg_mem_invalidate(ctx, rb[k], m * nranks);
        free(rb[k]);
        free(sb[k]);
    }
    *iter += 3;
}

/* Average latency of one persistent allgather, max over ranks */
static void bench(sucg_group_h group, sucg_allgather_algo_t *algos, int nalgos,
                  int iters, size_t max_total)
{
    static const size_t counts[] = { 8, 64, 512, 4096, 16384, 65536, 262144,
                                     1048576 };
    double *lat = (double*)sh->slots;   /* per rank, in the OOB area */
    sucg_coll_params_t p;
    sucg_coll_h coll;
    uint8_t *sbuf, *rbuf;
    size_t ci, m;
    double t0 = 0, worst;
    int a, i, r, warm = 5;

    if (my_rank == 0) {
        printf("%10s", "bytes");
        for (a = 0; a < nalgos; ++a) {
            printf(" %18s", algo_name(algos[a]));
        }
        printf("   (usec, max over %d ranks)\n", nranks);
    }
    for (ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
        m = counts[ci];
        if (m * nranks > max_total) {
            break;
        }
        if (my_rank == 0) {
            printf("%10zu", m);
        }
        for (a = 0; a < nalgos; ++a) {
            sbuf = alloc_buf(m);
            rbuf = alloc_buf(m * nranks);
            p = (sucg_coll_params_t){ .type = SUCG_COLL_ALLGATHER,
                                      .sbuf = sbuf, .rbuf = rbuf, .count = m,
                                      .flags = SUCG_COLL_FLAG_PERSISTENT,
                                      .algo = algos[a] };
            check(sucg_coll_init(group, &p, &coll), "sucg_coll_init");
            fill(sbuf, my_rank, 1, m);
            barrier();
            for (i = 0; i < warm + iters; ++i) {
                if (i == warm) {
                    t0 = now();
                }
                check(sucg_coll_start(coll), "sucg_coll_start");
                check(coll_wait(coll), "sucg_coll_wait");
            }
            lat[my_rank] = (now() - t0) / iters * 1e6;
            verify("bench", rbuf, m, 1);
            barrier();
            for (worst = 0, r = 0; r < nranks; ++r) {
                worst = lat[r] > worst ? lat[r] : worst;
            }
            barrier();
            if (my_rank == 0) {
                printf(" %18.1f", worst);
                fflush(stdout);
            }
            sucg_coll_free(coll);
            free(rbuf);
            free(sbuf);
        }
        if (my_rank == 0) {
            printf("\n");
        }
    }
}

static int bench_iters;

/* Whether the user set a sucg variable, under its name or its former UCG_* */
/* A SUCG_ variable's value, or its former UCG_ name's */
static const char *config_value(const char *name)
{
    return (getenv(name) != NULL) ? getenv(name) : getenv(name + 1);
}

static int config_set(const char *name)
{
    return config_value(name) != NULL;
}

static int rank_main(size_t max_total, sucg_allgather_algo_t *algos,
                     int nalgos, int quick)
{
    static const size_t counts[] = { 1, 3, 8, 100, 1000, 4095, 4096, 4097,
                                     12345, 65536, 300000, 1048576,
                                     1048576 + 13, 4 << 20, 8 << 20 };
    ucp_params_t up = { 0 };
    ucp_worker_params_t wp = { 0 };
    ucp_config_t *config;
    ucp_context_h ucp;
    sucg_context_params_t cp;
    sucg_group_params_t gp = { 0 };
    sucg_context_h ctx;
    sucg_group_h group;
    sucg_stats_t st;
    unsigned iter = 0;
    int ran_rd_zcopy = 0, zcopy_tag;
    size_t ci, m;
    int a;
    double t0;

    if (my_rank == reg_fail_rank) {
        setenv("SUCG_FAULT_REG_FAIL", "100", 1);
    }
    check(ucp_config_read(NULL, NULL, &config), "ucp_config_read");
    up.field_mask = UCP_PARAM_FIELD_FEATURES;
    up.features   = UCP_FEATURE_RMA | UCP_FEATURE_TAG | UCP_FEATURE_AM;
    check(ucp_init(&up, config, &ucp), "ucp_init");
    ucp_config_release(config);
    wp.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    check(ucp_worker_create(ucp, &wp, &g_worker), "ucp_worker_create");

    cp.ucp_context = ucp;
    cp.ucp_worker  = g_worker;
    check(sucg_context_create(&cp, &ctx), "sucg_context_create");
    /* an id other than 0: a caller's worker may have handlers of its own */
    check(sucg_context_enable_am(ctx, 7), "sucg_context_enable_am");
    gp.rank          = my_rank;
    gp.size          = nranks;
    gp.oob_allgather = oob_allgather;
    check(sucg_group_create(ctx, &gp, &group), "sucg_group_create");

    t0 = now();
    for (a = 0; (a < nalgos) && !bench_iters; ++a) {
        for (ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
            m = counts[ci];
            if (m * nranks > max_total) {
                continue;
            }
            if (quick && (ci % 2) && (m > 4097)) {
                continue;
            }
            run_case(ctx, group, algos[a], m, &iter);
            if ((algos[a] == SUCG_ALLGATHER_RECURSIVE_DOUBLING) &&
                (m > 32768)) {
                /* above the auto SUCG_ALLGATHER_ZCOPY_THRESH (32 KB where
                 * staged steps are active messages, sucg_config.h) */
                ran_rd_zcopy = 1;
            }
        }
        if (my_rank == 0) {
            printf("  %-18s n=%d ok so far (%.2f s)\n", algo_name(algos[a]),
                   nranks, now() - t0);
            fflush(stdout);
        }
    }

    if (bench_iters) {
        bench(group, algos, nalgos, bench_iters, max_total);
    }
    sucg_stats_get(ctx, &st);
    barrier();   /* nobody still writes into our group buffer */
    sucg_group_destroy(group);
    barrier();   /* endpoints closed everywhere before workers go away */
    if (my_rank == 0) {
        printf("  rank0 stats: staged_puts=%llu am_steps=%llu tail_steps=%llu "
               "zcopy_puts=%llu "
               "tagged_tx_steps=%llu "
               "rcache hits=%llu misses=%llu rkey unpacks=%llu hits=%llu "
               "colls rd=%llu ring=%llu p2p_rd=%llu p2p_ring=%llu\n",
               (unsigned long long)st.staged_puts,
               (unsigned long long)st.am_steps,
               (unsigned long long)st.tail_steps,
               (unsigned long long)st.zcopy_puts,
               (unsigned long long)st.tagged_tx_steps,
               (unsigned long long)st.rcache_hits,
               (unsigned long long)st.rcache_misses,
               (unsigned long long)st.rkey_unpacks,
               (unsigned long long)st.rkey_unpack_hits,
               (unsigned long long)st.colls_by_algo[SUCG_ALLGATHER_RECURSIVE_DOUBLING],
               (unsigned long long)st.colls_by_algo[SUCG_ALLGATHER_RING],
               (unsigned long long)st.colls_by_algo[SUCG_ALLGATHER_P2P_RD],
               (unsigned long long)st.colls_by_algo[SUCG_ALLGATHER_P2P_RING]);
    }
    /* the paths the test claims to cover must have run: zero-copy steps
     * by put (with the caches) or, where the group takes them so, by tag
     * (sucg_launch's own endpoints: only when SUCG_ZCOPY_STEP=tag says so) */
    zcopy_tag = (config_value("SUCG_ZCOPY_STEP") != NULL) &&
                !strcasecmp(config_value("SUCG_ZCOPY_STEP"), "tag");
    if (ran_rd_zcopy && (nranks > 1) && !config_set("SUCG_ALLGATHER_ZCOPY_THRESH") &&
        !config_set("SUCG_GROUP_BUFFER_SIZE") && !config_set("SUCG_RCACHE_MAX_ENTRIES") &&
        !config_set("SUCG_FAULT_REG_FAIL") && (reg_fail_rank < 0) &&
        ((st.staged_puts + st.am_steps + st.tail_steps == 0) ||
         (zcopy_tag ? ((st.tagged_tx_steps == 0) || (st.tagged_rx_steps == 0) ||
                       (st.zcopy_puts != 0) || (st.rcache_misses != 0)) :
                      ((st.zcopy_puts == 0) || (st.tagged_tx_steps != 0) ||
                       (st.rcache_hits == 0) || (st.rkey_unpack_hits == 0))))) {
        fprintf(stderr, "rank %d: recursive doubling did not use staged steps "
                "and zero-copy steps %s (puts %llu, by tag %llu sent %llu "
                "received, rcache hits %llu misses %llu, rkey hits %llu)\n",
                my_rank, zcopy_tag ? "by tag only" :
                "by put with rcache and rkey cache",
                (unsigned long long)st.zcopy_puts,
                (unsigned long long)st.tagged_tx_steps,
                (unsigned long long)st.tagged_rx_steps,
                (unsigned long long)st.rcache_hits,
                (unsigned long long)st.rcache_misses,
                (unsigned long long)st.rkey_unpack_hits);
        ++errors;
    }
    if ((staged_want != NULL) && (nranks > 1) &&
        (!strcmp(staged_want, "am") ?
                 ((st.am_steps == 0) || (st.staged_puts + st.tail_steps != 0)) :
         /* with extra ranks a partner's step carries its extra's blocks
          * too, beyond SUCG_TAIL_MAX for the largest staged sizes: those
          * go as a message or as put and flag */
         !strcmp(staged_want, "tail") ?
                 ((st.tail_steps == 0) ||
                  ((st.staged_puts + st.am_steps != 0) &&
                   !(nranks & (nranks - 1)))) :
                 ((st.staged_puts == 0) || (st.am_steps + st.tail_steps != 0)))) {
        fprintf(stderr, "rank %d: staged steps not all as %s: puts %llu, active "
                "messages %llu, tail puts %llu\n", my_rank, staged_want,
                (unsigned long long)st.staged_puts, (unsigned long long)st.am_steps,
                (unsigned long long)st.tail_steps);
        ++errors;
    }
    if (st.am_dropped != 0) {
        fprintf(stderr, "rank %d: %llu step messages dropped\n", my_rank,
                (unsigned long long)st.am_dropped);
        ++errors;
    }
    if (my_rank == reg_fail_rank) {
        printf("  rank%d (registrations fail) stats: reg_failures=%llu "
               "tagged_rx_steps=%llu zcopy_puts=%llu\n", my_rank,
               (unsigned long long)st.reg_failures,
               (unsigned long long)st.tagged_rx_steps,
               (unsigned long long)st.zcopy_puts);
        /* every zero-copy step received must have come by tag */
        if ((nranks > 1) && ((st.reg_failures == 0) || (st.tagged_rx_steps == 0))) {
            fprintf(stderr, "rank %d: registrations were to fail, but "
                    "reg_failures=%llu tagged_rx_steps=%llu\n", my_rank,
                    (unsigned long long)st.reg_failures,
                    (unsigned long long)st.tagged_rx_steps);
            ++errors;
        }
    }
    sucg_context_destroy(ctx);
    ucp_worker_destroy(g_worker);
    g_worker = NULL;
    ucp_cleanup(ucp);
    return errors ? 1 : 0;
}

/* A hung run is read from its ranks' stacks, taken before the kill */
static void print_rank_stacks(const pid_t *pids, int count)
{
    char cmd[256];

    if (system("command -v gdb > /dev/null 2>&1") != 0) {
        fprintf(stderr, "launcher: no gdb here, no stacks of the ranks\n");
        return;
    }
    fflush(stderr);
    for (int k = 0; k < count; ++k) {
        snprintf(cmd, sizeof(cmd),
                 "gdb -p %d -batch -ex 'thread apply all bt 40' 2>&1 "
                 "</dev/null | grep -E '^(Thread|#)' | sed 's/^/  rank %d: /' >&2",
                 (int)pids[k], k);
        if (system(cmd) != 0) {
            fprintf(stderr, "launcher: no stacks of rank %d\n", k);
        }
    }
}


static void usage(void)
{
    fprintf(stderr, "usage: sucg_launch -n NRANKS [-m MAX_TOTAL] [-t TIMEOUT] "
            "[-a auto|recursive_doubling|ring|p2p_rd|p2p_ring]... [-q] [-C RANK] "
            "[-B ITERS] [-R RANK] [-S am|put|tail]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    sucg_allgather_algo_t algos[8];
    int nalgos = 0, timeout = 120, quick = 0, opt, r, status, failed = 0;
    size_t max_total = 16u << 20;
    pid_t pids[MAX_RANKS], pid;
    double t0;

    nranks = 0;
    while ((opt = getopt(argc, argv, "n:m:t:a:qC:B:R:S:")) != -1) {
        switch (opt) {
        case 'n': nranks = atoi(optarg); break;
        case 'm': max_total = strtoull(optarg, NULL, 0); break;
        case 't': timeout = atoi(optarg); break;
        case 'q': quick = 1; break;
        case 'C': corrupt_rank = atoi(optarg); break;
        case 'B': bench_iters = atoi(optarg); break;
        case 'R': reg_fail_rank = atoi(optarg); break;
        case 'S': staged_want = optarg; break;
        case 'a':
            for (r = 0; r < SUCG_ALLGATHER_LAST; ++r) {
                if (!strcmp(optarg, sucg_allgather_algo_name(r))) {
                    break;
                }
            }
            if ((r == SUCG_ALLGATHER_LAST) || (nalgos == 8)) {
                usage();
            }
            algos[nalgos++] = r;
            break;
        default:
            usage();
        }
    }
    if ((nranks < 1) || (nranks > MAX_RANKS)) {
        usage();
    }
    if ((nalgos == 0) && bench_iters) {
        algos[nalgos++] = SUCG_ALLGATHER_RECURSIVE_DOUBLING;
        algos[nalgos++] = SUCG_ALLGATHER_P2P_RD;
        algos[nalgos++] = SUCG_ALLGATHER_RING;
        algos[nalgos++] = SUCG_ALLGATHER_P2P_RING;
    } else if (nalgos == 0) {
        algos[nalgos++] = SUCG_ALLGATHER_RECURSIVE_DOUBLING;
        algos[nalgos++] = SUCG_ALLGATHER_RING;
        algos[nalgos++] = SUCG_ALLGATHER_P2P_RD;
        algos[nalgos++] = SUCG_ALLGATHER_P2P_RING;
        algos[nalgos++] = SUCG_ALLGATHER_AUTO;
    }

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    oversubscribed = nranks > sysconf(_SC_NPROCESSORS_ONLN);
    t0 = now();
    for (r = 0; r < nranks; ++r) {
        pid = fork();
        if (pid == 0) {
            my_rank = r;
            exit(rank_main(max_total, algos, nalgos, quick));
        }
        pids[r] = pid;
    }

    /* bounded: a hang is a failure, not a stuck CI job */
    for (r = 0; r < nranks; ) {
        pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
                fprintf(stderr, "launcher: pid %d failed (%s %d)\n", pid,
                        WIFEXITED(status) ? "exit" : "signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) :
                                            WTERMSIG(status));
                failed = 1;
                sh->abort = 1;
            }
            ++r;
            continue;
        }
        if (now() - t0 > timeout) {
            fprintf(stderr, "launcher: timeout after %d s, killing ranks\n",
                    timeout);
            print_rank_stacks(pids, nranks);
            for (int k = 0; k < nranks; ++k) {
                kill(pids[k], SIGKILL);
            }
            failed = 1;
            t0 = now() + 1e9;   /* reap what remains */
        }
        usleep(10000);
    }
    if (t0 > now()) {   /* timed out: t0 was pushed into the future */
        printf("sucg_launch n=%d: FAILED (timeout after %d s)\n", nranks,
               timeout);
    } else {
        printf("sucg_launch n=%d: %s (%.2f s)\n", nranks,
               failed ? "FAILED" : "PASSED", now() - t0);
    }
    return failed;
}
