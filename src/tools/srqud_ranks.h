/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * What srqud_rawexch and contrib/bench's uct_exch share around their
 * exchanges: the lists of calls and sizes on their command lines, and
 * ranks forked from one process, joined by a mesh of socket pairs (for
 * addresses and barriers), each dying with the parent and each a file's
 * end to the others when it dies.
 */

#ifndef SRQUD_RANKS_H_
#define SRQUD_RANKS_H_

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define RANKS_MAX 16

/* A rank's work: @a sock[q] is its end of the pair to rank q (-1 at
 * itself); non-zero fails the run */
typedef int (*ranks_main_t)(int rank, const int *sock, void *arg);

/* "a,b,c" of @a names[0..nnames) into @a calls (at most @a max); NULL, or
 * the first name unknown or one too many */
static inline const char *ranks_parse_calls(char *arg, const char *const *names,
                                    int nnames, int *calls, int *ncalls,
                                    int max)
{
    char *tok, *save = NULL;
    int   i;

    for (tok = strtok_r(arg, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; (i < nnames) && strcmp(tok, names[i]); ++i);
        if ((i == nnames) || (*ncalls == max)) {
            return tok;
        }
        calls[(*ncalls)++] = i;
    }
    return NULL;
}

/* "8,1k,0x1000,1M" into @a sizes (at most @a max), each within [min,
 * maxsize]; NULL, or the first size out of range, malformed or one too
 * many */
static inline const char *ranks_parse_sizes(char *arg, size_t min, size_t maxsize,
                                    size_t *sizes, int *nsizes, int max)
{
    char          *tok, *save = NULL, *end;
    unsigned long v;

    for (tok = strtok_r(arg, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        errno = 0;
        v     = strtoul(tok, &end, 0);
        if ((*end == 'k') || (*end == 'K')) {
            v <<= 10;
            ++end;
        } else if ((*end == 'm') || (*end == 'M')) {
            v <<= 20;
            ++end;
        }
        if (errno || (end == tok) || *end || (v < min) || (v > maxsize) ||
            (*nsizes == max)) {
            return tok;
        }
        sizes[(*nsizes)++] = v;
    }
    return NULL;
}

/* Rank @a p keeps its end of each of its pairs in @a sock, with a receive
 * timeout of @a timeout s, and closes every other end (p < 0: all), so
 * that a rank that dies is an end of file to the others */
static inline void ranks_mesh_keep(const char *prog, int (*sv)[RANKS_MAX][2],
                                   int np, int p, int *sock, unsigned timeout)
{
    struct timeval tv = {.tv_sec = timeout};
    int            a, b, mine;

    for (a = 0; a < np; ++a) {
        for (b = a + 1; b < np; ++b) {
            mine = (a == p) ? 0 : (b == p) ? 1 : -1;
            if (mine != 0) {
                close(sv[a][b][0]);
            }
            if (mine != 1) {
                close(sv[a][b][1]);
            }
            if (mine < 0) {
                continue;
            }
            sock[(a == p) ? b : a] = sv[a][b][mine];
            if (setsockopt(sv[a][b][mine], SOL_SOCKET, SO_RCVTIMEO, &tv,
                           sizeof(tv))) {
                fprintf(stderr, "%s rank %d: setsockopt(SO_RCVTIMEO): %m\n",
                        prog, p);
            }
        }
    }
    if (p >= 0) {
        sock[p] = -1;
    }
}

/* Forks @a np ranks running @a fn and waits for them; 0 when every one
 * returned 0. A rank that fails or dies is named on stderr after @a prog. */
static inline int ranks_run(const char *prog, int np, unsigned timeout,
                            ranks_main_t fn, void *arg)
{
    int   (*sv)[RANKS_MAX][2], sock[RANKS_MAX], p, q, status, failed = 0;
    pid_t pid[RANKS_MAX];

    if ((np < 1) || (np > RANKS_MAX)) {
        fprintf(stderr, "%s: %d ranks: 1 to %d\n", prog, np, RANKS_MAX);
        return -1;
    }
    if ((sv = calloc(RANKS_MAX, sizeof(*sv))) == NULL) {
        fprintf(stderr, "%s: calloc: %s\n", prog, strerror(ENOMEM));
        return -1;
    }
    for (p = 0; p < np; ++p) {
        for (q = p + 1; q < np; ++q) {
            if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[p][q])) {
                fprintf(stderr, "%s: socketpair: %m\n", prog);
                return -1;
            }
        }
    }
    fflush(NULL);
    for (p = 0; p < np; ++p) {
        if ((pid[p] = fork()) < 0) {
            fprintf(stderr, "%s: fork: %m\n", prog);
            return -1;   /* the ranks forked die with us (PDEATHSIG) */
        }
        if (pid[p] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            ranks_mesh_keep(prog, sv, np, p, sock, timeout);
            _exit(fn(p, sock, arg) ? 1 : 0);
        }
    }
    ranks_mesh_keep(prog, sv, np, -1, sock, timeout);   /* every end */
    free(sv);
    for (p = 0; p < np; ++p) {
        while (waitpid(pid[p], &status, 0) < 0) {
            if (errno != EINTR) {
                fprintf(stderr, "%s: waitpid: %m\n", prog);
                return -1;
            }
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status)) {
            fprintf(stderr, "%s: rank %d %s %d\n", prog, p,
                    WIFEXITED(status) ? "exited with status" :
                                        "died of signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) :
                                        WTERMSIG(status));
            failed = 1;
        }
    }
    return failed;
}

#endif
