/*
 * Which path did MPI_Allgather take? The sucg glue (Open MPI's
 * mca_coll_sucg.so, MPICH's LD_PRELOADed libsucg_pmpi.so) exports
 * sucg_mpi_get_stats(); without it nothing went through sucg. Used by the
 * examples to label their numbers with what was really measured.
 */
#ifndef SUCG_EXAMPLES_PATH_H_
#define SUCG_EXAMPLES_PATH_H_

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "sucg/mpi/sucg_mpi_stats.h"

static const char *sucg_path_algo_names[] = {
    "auto", "recursive_doubling", "ring", "p2p_rd", "p2p_ring"
};

static inline void sucg_path_stats(sucg_mpi_stats_t *s)
{
    sucg_mpi_get_stats_fn_t fn;

    memset(s, 0, sizeof(*s));
    fn = (sucg_mpi_get_stats_fn_t)dlsym(RTLD_DEFAULT, "sucg_mpi_get_stats");
    if (fn != NULL) {
        fn(s);
    }
}

/*
 * "ucg:ALGO" if all @a calls between @a s0 and @a s1 ran through sucg with one
 * algorithm, "mpi" if none did, "mixed" otherwise. The label keeps the
 * library's former name: contrib/bench/ucg-allgather.sh and the CSV files
 * it wrote match on "ucg:".
 */
static inline const char *sucg_path_name(const sucg_mpi_stats_t *s0,
                                         const sucg_mpi_stats_t *s1,
                                         unsigned long calls, char *buf,
                                         size_t len)
{
    unsigned long n = (unsigned long)(s1->sucg_calls - s0->sucg_calls);
    int a;

    if (n == 0) {
        return "mpi";
    }
    for (a = 1; a < 5; ++a) {
        if ((n == calls) && (s1->by_algo[a] - s0->by_algo[a] == n)) {
            snprintf(buf, len, "ucg:%s", sucg_path_algo_names[a]);
            return buf;
        }
    }
    return "mixed";
}

#endif
