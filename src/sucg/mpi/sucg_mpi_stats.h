/*
 * Counters of the sucg MPI glue, for tests: both mca_coll_sucg.so and
 * libsucg_pmpi.so export
 *
 *     void sucg_mpi_get_stats(sucg_mpi_stats_t *stats);
 *
 * (the component is dlopen'ed RTLD_GLOBAL, the PMPI library preloaded), so
 * a test finds it with dlsym(RTLD_DEFAULT, "sucg_mpi_get_stats") and learns
 * whether MPI_Allgather really went through sucg.
 */
#ifndef SUCG_MPI_STATS_H_
#define SUCG_MPI_STATS_H_

#include <stdint.h>

#define SUCG_MPI_STATS_VERSION 1

typedef struct sucg_mpi_stats {
    uint64_t version;           /* SUCG_MPI_STATS_VERSION */
    union {
        uint64_t sucg_calls;    /* MPI_Allgather run by sucg */
        uint64_t ucg_calls;     /* its former name: this header is installed,
                                 * programs may still read that field */
    };
    uint64_t fallback_calls;    /* handed to the MPI's own allgather */
    uint64_t packed_calls;      /* sucg calls that packed a datatype */
    uint64_t groups_created;
    uint64_t groups_destroyed;
    uint64_t group_failures;    /* creation failed: communicator falls back */
    uint64_t by_algo[8];        /* sucg_calls per sucg_allgather_algo_t */
} sucg_mpi_stats_t;

typedef void (*sucg_mpi_get_stats_fn_t)(sucg_mpi_stats_t *stats);

/*
 * How this process's zero-copy Allgather steps went (SUCG_ZCOPY_STEP); also
 * exported, found the same way:
 *
 *     void sucg_mpi_get_zcopy_steps(sucg_mpi_zcopy_steps_t *steps);
 */
typedef struct sucg_mpi_zcopy_steps {
    uint64_t by_put;            /* puts straight into a peer's rbuf */
    uint64_t by_tag;            /* tagged sends into its posted receive */
    uint64_t reg_failures;      /* receive buffers not registered: their
                                   senders use tags whatever the group's
                                   way */
} sucg_mpi_zcopy_steps_t;

typedef void (*sucg_mpi_get_zcopy_steps_fn_t)(sucg_mpi_zcopy_steps_t *steps);

#endif
