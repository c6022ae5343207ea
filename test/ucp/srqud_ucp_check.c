/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * UCP-level correctness checks of a UCX transport: what an OpenSHMEM, MPI
 * one-sided or tag-matching user relies on, with data and completion order
 * verified byte for byte. Each check forks an initiator and a target,
 * which exchange worker addresses, rkeys and the
 * expected images over a socketpair; nothing is checked through the
 * transport under test itself. Run the same binary with UCX_TLS=srqud and
 * with UCX's ud_verbs and rc_verbs as references (test/ucp/run.sh).
 *
 *   srqud_ucp_check [-t CHECK]... [-n ROUNDS] [-L BYTES] [-B BOUND] [-P]
 *                   [-T SEC] [-W NxM]
 *
 *   -t CHECK  one of the checks below (default: all but those run only
 *             when named)
 *   -n N      rounds per RMA check (default 2; a fresh region each round,
 *             the previous one unmapped, so a late write would hit unmapped
 *             memory)
 *   -L BYTES  largest RMA operation (default 20 MiB + 3); peer_kill's
 *             operations are all this large
 *   -B BOUND  progress_bound: deliveries one ucp_worker_progress may make
 *             (default 16, srqud's RX_MAX_POLL)
 *   -P        the target never calls ucp_worker_progress during RMA checks
 *             (passive target: only transports with their own progress or
 *             hardware RMA complete then)
 *   -T SEC    a check that has not finished after SEC seconds (default
 *             120) fails as timed out; peer_kill and link_down, which wait
 *             for an error, give up after 3/4 of it with their own verdict
 *   -W NxM    threads: the initiator's and the target's threads (default
 *             3x3), each with a UCP worker of its own
 *
 * Checks: put_worker_flush put_ep_flush put_explicit get_worker_flush
 * get_ep_flush fence tag am stream close_flush peer_failure force_close
 * progress_bound,
 * and only when named:
 *   peer_kill  the target kills itself (SIGKILL) in the middle of large puts
 *              and gets, each followed by an ep flush: the initiator's
 *              operations must fail and its error handler run
 *   link_down  tag messages stream to the target until the initiator's ep
 *              fails, when a script has taken the link between the two
 *              sides down for longer than the transport's timeout (no error
 *              by the deadline fails); every message the target got must
 *              be intact and in order
 *   target_gone  link_down, where the script kills the target (SIGKILL)
 *              and removes its device instead: the initiator's ep must
 *              fail the same way
 *   threads    N initiator threads x M target threads, a worker each, tag
 *              messages and RMA between every pair at once, checksummed
 *              (ucp_check_threads.c)
 *
 * Environment, for two sides on two devices joined by a wire:
 *   SRQUD_CHECK_INIT_DEVICES, SRQUD_CHECK_TARGET_DEVICES
 *             the initiator's, the target's UCX_NET_DEVICES (unset or
 *             empty: UCX's own)
 *   SRQUD_CHECK_SYNC=FILE
 *             the initiator creates FILE (empty) when a check's sides are
 *             wired up and its traffic is about to start, for a script
 *             that then breaks something (takes a link down); run one
 *             check with it
 *
 * Prints "CHECK <name> PASS|FAIL <detail>" per check; exit status 0 only if
 * all passed.
 */

#define _GNU_SOURCE
#include "ucp_check.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


check_opt_t opt = {
    .rounds  = 2,
    .largest = 20 * 1024 * 1024 + 3,
    .bound   = 16,
    .passive = 0,
    .timeout = 120,
    .init_threads   = 3,
    .target_threads = 3
};


/* ---- the checks ------------------------------------------------------- */

enum {
    /* the peer is expected to fail: PEER error mode, and the target's exit
     * status tells nothing, but for wrong data received */
    CHECK_FLAG_ERR_PEER    = 1 << 0,
    /* the target ends by SIGKILL, its own */
    CHECK_FLAG_TARGET_KILL = 1 << 1,
    /* not in the default run: it needs an outside event (link_down), is
     * meant for the two-host wire (peer_kill) or for a level of sharing
     * (threads) */
    CHECK_FLAG_NAMED       = 1 << 2,
    /* several workers on the side's context, driven by threads */
    CHECK_FLAG_THREADS     = 1 << 3
};


typedef struct {
    const char *name;
    check_fn_t fn;
    int        mode;     /* the check's FLUSH_* */
    unsigned   flags;    /* CHECK_FLAG_* */
} check_t;


static const check_t checks[] = {
    {"put_worker_flush", check_put,            FLUSH_WORKER,        0},
    {"put_ep_flush",     check_put,            FLUSH_EP,            0},
    {"put_explicit",     check_put,            FLUSH_NONE_EXPLICIT, 0},
    {"get_worker_flush", check_get,            FLUSH_WORKER,        0},
    {"get_ep_flush",     check_get,            FLUSH_EP,            0},
    {"fence",            check_fence,          0,                   0},
    {"tag",              check_tag,            0,                   0},
    {"am",               check_am,             0,                   0},
    {"stream",           check_stream,         0,                   0},
    {"close_flush",      check_put,            FLUSH_CLOSE,         0},
    {"peer_failure",     check_peer_failure,   0, CHECK_FLAG_ERR_PEER},
    {"force_close",      check_force_close,    0, CHECK_FLAG_ERR_PEER},
    {"progress_bound",   check_progress_bound, 0,                   0},
    {"peer_kill",        check_peer_kill,      0, CHECK_FLAG_ERR_PEER |
                                                  CHECK_FLAG_TARGET_KILL |
                                                  CHECK_FLAG_NAMED},
    {"link_down",        check_link_down,      LINK_DOWN,
                                                  CHECK_FLAG_ERR_PEER |
                                                  CHECK_FLAG_NAMED},
    {"target_gone",      check_link_down,      LINK_TARGET_GONE,
                                                  CHECK_FLAG_ERR_PEER |
                                                  CHECK_FLAG_TARGET_KILL |
                                                  CHECK_FLAG_NAMED},
    {"threads",          check_threads,        0, CHECK_FLAG_THREADS |
                                                  CHECK_FLAG_NAMED},
    {NULL}
};


static const check_t *check_find(const char *name)
{
    const check_t *check;

    for (check = checks; check->name != NULL; ++check) {
        if (!strcmp(check->name, name)) {
            return check;
        }
    }
    return NULL;
}


/* ---- driver ----------------------------------------------------------- */

/* Fork one side of a check; it reports through @a detail (shared) and its
 * exit status */
static pid_t fork_side(const check_t *check, int fd, int other_fd,
                       int is_target, char *detail, size_t max)
{
    int err_peer = !!(check->flags & CHECK_FLAG_ERR_PEER);
    side_t s;
    int verdict;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid != 0) {
        if (pid < 0) {
            die("fork: %s", strerror(errno));
        }
        return pid;
    }
    close(other_fd);
    die_into(detail, max);
    opt.mt_context = !!(check->flags & CHECK_FLAG_THREADS);
    side_init(&s, fd, is_target, err_peer);
    verdict = check->fn(&s, check->mode, detail, max);
    if (!err_peer) {
        side_fence(&s);
    }
    side_fini(&s);
    _exit((verdict == CHECK_DATA_ERROR) ? verdict :
          (verdict != CHECK_PASS) ? CHECK_FAIL : CHECK_PASS);
}


/* Wait for a side until the deadline; 0 if it is still running */
static int wait_side(pid_t pid, int *wstatus, time_t deadline)
{
    pid_t ret;

    for (;;) {
        ret = waitpid(pid, wstatus, WNOHANG);
        if (ret == pid) {
            return 1;
        } else if ((ret < 0) && (errno != EINTR)) {
            die("waitpid: %s", strerror(errno));
        }
        if (time(NULL) >= deadline) {
            return 0;
        }
        usleep(10000);
    }
}


/* Whether the target's end fails the check: where the peer is expected to
 * fail, only a SIGKILL that was not planned or wrong data it received */
static int target_failed(const check_t *check, int wstatus)
{
    if (WIFSIGNALED(wstatus)) {
        return !(check->flags & CHECK_FLAG_TARGET_KILL) ||
               (WTERMSIG(wstatus) != SIGKILL);
    } else if (check->flags & CHECK_FLAG_ERR_PEER) {
        return WEXITSTATUS(wstatus) == CHECK_DATA_ERROR;
    }
    return WEXITSTATUS(wstatus) != CHECK_PASS;
}


static int run_check(const check_t *check)
{
    const size_t max = 256;
    char *detail;        /* [0]: the initiator's, [max]: the target's */
    struct timespec t0, t1;
    int sv[2], ws_init = 0, ws_target = 0, done_init, done_target, failed;
    time_t deadline;
    pid_t init_pid, target_pid;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* what the sides have to say, readable after they exited or crashed */
    detail = mmap(NULL, 2 * max, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (detail == MAP_FAILED) {
        die("mmap: %s", strerror(errno));
    }
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        die("socketpair: %s", strerror(errno));
    }
    sync_reset();
    target_pid = fork_side(check, sv[1], sv[0], 1, detail + max, max);
    init_pid   = fork_side(check, sv[0], sv[1], 0, detail, max);
    close(sv[0]);
    close(sv[1]);

    /* a hang is a failure of this check, not of the whole run */
    deadline    = time(NULL) + opt.timeout;
    done_init   = wait_side(init_pid, &ws_init, deadline);
    done_target = wait_side(target_pid, &ws_target,
                            done_init ? time(NULL) + 30 : deadline);
    failed      = 0;
    if (!done_init || !done_target) {
        kill(init_pid, SIGKILL);
        kill(target_pid, SIGKILL);
        waitpid(init_pid, NULL, 0);
        waitpid(target_pid, NULL, 0);
        if (!done_init) {
            snprintf(detail, max, "timed out after %d s (initiator did not "
                     "finish)", opt.timeout);
        } else {
            snprintf(detail, max, "the target did not finish within 30 s of "
                     "the initiator");
        }
        failed = 1;
    } else if (WIFSIGNALED(ws_init)) {
        snprintf(detail, max, "initiator killed by signal %d (%s)",
                 WTERMSIG(ws_init), strsignal(WTERMSIG(ws_init)));
        failed = 1;
    } else if (WIFSIGNALED(ws_target) && target_failed(check, ws_target)) {
        snprintf(detail, max, "target killed by signal %d (%s)",
                 WTERMSIG(ws_target), strsignal(WTERMSIG(ws_target)));
        failed = 1;
    } else if (WEXITSTATUS(ws_init) != 0) {
        failed = 1;
    } else if (target_failed(check, ws_target)) {
        if (!detail[max]) {
            snprintf(detail + max, max, "exited with %d",
                     WEXITSTATUS(ws_target));
        }
        failed = 1;
    }

    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("CHECK %s %s %.1fs %s%s%s\n", check->name, failed ? "FAIL" : "PASS",
           (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9, detail,
           detail[max] ? "; target: " : "", detail + max);
    fflush(stdout);
    munmap(detail, 2 * max);
    return failed;
}


static int usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [-t CHECK]... [-n ROUNDS] [-L BYTES] "
            "[-B BOUND] [-P] [-T SECONDS] [-W NxM]\n", argv0);
    return 2;
}


int main(int argc, char **argv)
{
    const check_t *selected[64], *check;
    int nselected = 0, failed = 0, c, i;

    while ((c = getopt(argc, argv, "t:n:L:B:PT:W:")) != -1) {
        switch (c) {
        case 't':
            check = check_find(optarg);
            if (check == NULL) {
                fprintf(stderr, "unknown check %s\n", optarg);
                return usage(argv[0]);
            }
            if (nselected < 64) {
                selected[nselected++] = check;
            }
            break;
        case 'n':
            opt.rounds = atoi(optarg);
            break;
        case 'L':
            opt.largest = strtoull(optarg, NULL, 0);
            break;
        case 'B':
            opt.bound = atoi(optarg);
            break;
        case 'P':
            opt.passive = 1;
            break;
        case 'T':
            opt.timeout = atoi(optarg);
            break;
        case 'W':
            if (sscanf(optarg, "%dx%d", &opt.init_threads,
                       &opt.target_threads) != 2) {
                return usage(argv[0]);
            }
            break;
        default:
            return usage(argv[0]);
        }
    }
    signal(SIGPIPE, SIG_IGN);

    if (nselected == 0) {
        for (check = checks; check->name != NULL; ++check) {
            if (!(check->flags & CHECK_FLAG_NAMED)) {
                failed |= run_check(check);
            }
        }
    } else {
        for (i = 0; i < nselected; ++i) {
            failed |= run_check(selected[i]);
        }
    }
    return failed ? 1 : 0;
}
