/*
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * cpu_pauses: how often the machine itself stops a process. PROCS
 * processes (default: one per core) each time UNITS units of the same
 * computation, WORK_US long, with no system call and no I/O between them;
 * a unit that takes 10x its median was stopped by something outside the
 * process (the scheduler, an interrupt, an emulator's host). That rate is
 * the floor under "no call above 10x its median" for any transport on
 * this machine (contrib/bench/mpi-calls.sh):
 *
 *   contrib/softroce/vm-run -- build/bench/cpu_pauses [-p PROCS] [-n UNITS]
 *                                                      [-w WORK_US] [-Y]
 *
 * -Y yields the core after every unit, as MPI ranks do that wait while
 * ranks outnumber the cores. One line per process, then all of them:
 * median, p99 and slowest unit (us), units above 10x the median, above
 * 1 ms, and the first per 10,000 units.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_time.h"

#define CALIBRATE_ROUNDS 9

typedef struct {
    double   median, p99, max;
    unsigned long slow10x, over1ms;
} pauses_t;

static volatile uint64_t sink;

/* the unit: a dependent chain no compiler can shorten */
static void spin(unsigned long k)
{
    uint64_t x = 88172645463325252ull;

    while (k-- > 0) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink = x;
}

/* rounds of the chain per microsecond: the median of timed trials, so
 * that a pause during calibration does not shorten every unit */
static double spins_per_us(void)
{
    double t[CALIBRATE_ROUNDS], t0;
    const unsigned long k = 200000;
    int r;

    for (r = 0; r < CALIBRATE_ROUNDS; ++r) {
        t0 = probe_now_sec();
        spin(k);
        t[r] = probe_now_sec() - t0;
    }
    qsort(t, CALIBRATE_ROUNDS, sizeof(t[0]), probe_cmp_double);
    return k / (t[CALIBRATE_ROUNDS / 2] * 1e6);
}

static void summarize(double *us, unsigned long n, pauses_t *p)
{
    unsigned long i;

    qsort(us, n, sizeof(us[0]), probe_cmp_double);
    memset(p, 0, sizeof(*p));
    p->median = us[n / 2];
    p->p99    = us[(n * 99) / 100];
    p->max    = us[n - 1];
    for (i = 0; i < n; ++i) {
        p->slow10x += (us[i] > 10 * p->median);
        p->over1ms += (us[i] > 1000.0);
    }
}

static void print_line(const char *who, unsigned long n, const pauses_t *p)
{
    printf("%-8s %8lu %10.1f %10.1f %10.1f %8lu %8lu %10.2f\n", who, n,
           p->median, p->p99, p->max, p->slow10x, p->over1ms,
           p->slow10x * 1e4 / n);
    fflush(stdout);
}

/* one process: times its units, prints its line, writes its summary to
 * fd so that the parent can add them up */
static int child(int id, unsigned long n, unsigned long k, int yield, int fd)
{
    double *us = malloc(n * sizeof(*us)), t0;
    unsigned long i;
    pauses_t p;
    char who[16];

    if (us == NULL) {
        fprintf(stderr, "cpu_pauses: out of memory for %lu units\n", n);
        return 1;
    }
    for (i = 0; i < n; ++i) {
        t0 = probe_now_sec();
        spin(k);
        us[i] = (probe_now_sec() - t0) * 1e6;
        if (yield) {
            sched_yield();
        }
    }
    summarize(us, n, &p);
    snprintf(who, sizeof(who), "proc %d", id);
    print_line(who, n, &p);
    free(us);
    return (write(fd, &p, sizeof(p)) == (ssize_t)sizeof(p)) ? 0 : 1;
}

static void usage(void)
{
    fprintf(stderr, "usage: cpu_pauses [-p PROCS] [-n UNITS] [-w WORK_US] [-Y]\n");
}

int main(int argc, char **argv)
{
    long procs = sysconf(_SC_NPROCESSORS_ONLN), i;
    unsigned long n = 100000, k;
    double work_us = 100, rate;
    pauses_t p, all = {0};
    int yield = 0, opt, fds[2], status, rc = 0;

    while ((opt = getopt(argc, argv, "p:n:w:Yh")) != -1) {
        switch (opt) {
        case 'p': procs   = strtol(optarg, NULL, 0); break;
        case 'n': n       = strtoul(optarg, NULL, 0); break;
        case 'w': work_us = strtod(optarg, NULL); break;
        case 'Y': yield   = 1; break;
        default:  usage(); return 2;
        }
    }
    if ((procs < 1) || (procs > 256) || (n < 100) || (work_us <= 0)) {
        usage();
        return 2;
    }
    rate = spins_per_us();
    k    = (unsigned long)(rate * work_us) + 1;
    if (pipe(fds) != 0) {
        perror("cpu_pauses: pipe");
        return 1;
    }
    printf("# %ld processes on %ld cores, %lu units of %.0f us each%s\n",
           procs, sysconf(_SC_NPROCESSORS_ONLN), n, work_us,
           yield ? ", yielding after each" : "");
    printf("%-8s %8s %10s %10s %10s %8s %8s %10s\n", "who", "units",
           "median_us", "p99_us", "max_us", "slow10x", "over1ms",
           "per_10k");
    fflush(stdout);
    for (i = 0; i < procs; ++i) {
        pid_t pid = fork();

        if (pid < 0) {
            perror("cpu_pauses: fork");
            return 1;
        } else if (pid == 0) {
            close(fds[0]);
            _exit(child((int)i, n, k, yield, fds[1]));
        }
    }
    close(fds[1]);
    for (i = 0; i < procs; ++i) {
        if (read(fds[0], &p, sizeof(p)) != (ssize_t)sizeof(p)) {
            fprintf(stderr, "cpu_pauses: a process ended without its summary\n");
            rc = 1;
            break;
        }
        all.median  += p.median;
        all.p99      = (p.p99 > all.p99) ? p.p99 : all.p99;
        all.max      = (p.max > all.max) ? p.max : all.max;
        all.slow10x += p.slow10x;
        all.over1ms += p.over1ms;
    }
    while (wait(&status) > 0) {
        if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
            rc = 1;
        }
    }
    if (rc == 0) {
        /* the processes' mean median, their largest p99 and slowest unit */
        all.median /= procs;
        print_line("all", n * procs, &all);
    }
    return rc;
}
