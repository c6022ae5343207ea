/*
 * sucg in MPI: the part shared by the Open MPI coll component
 * (coll_sucg.c -> mca_coll_sucg.so) and the MPICH PMPI library
 * (sucg_pmpi.c -> libsucg_pmpi.so). Compiled once per MPI, against that
 * MPI's mpi.h; uses only the public MPI API (PMPI_ entry points).
 *
 * One UCP context + worker per process, created on first use and owned
 * here (sucg creates its own endpoints from worker addresses exchanged in the
 * group's single OOB allgather). Per communicator one sucg group, created
 * on the first MPI_Allgather that takes the sucg path (a collective point:
 * every rank of the communicator takes the same decision there).
 */
#ifndef SUCG_MPI_H_
#define SUCG_MPI_H_

#include <mpi.h>
#include <stdint.h>
#include "sucg/api/sucg.h"
#include "sucg/mpi/sucg_mpi_stats.h"
#include "sucg/mpi/sucg_mpi_tune.h"

#define SUCG_MPI_FALLBACK  (-1)   /* caller runs its fallback allgather */

/* blocking allgather of len bytes per rank over the communicator, using the
 * MPI's own (fallback) implementation; returns MPI_SUCCESS or an MPI error */
typedef int (*sucg_mpi_oob_fn_t)(const void *sbuf, void *rbuf, int len,
                                 void *arg);

typedef struct sucg_mpi_comm {
    MPI_Comm          comm;
    int               rank;
    int               size;
    int               state;     /* 0: no group yet, 1: ready, -1: failed */
    sucg_group_h      group;
    sucg_mpi_oob_fn_t oob;
    void             *oob_arg;
    sucg_mpi_tune_mask_t  tune_ok;  /* ranges whose transport holds on
                                     * every rank (agreed at group creation) */
    struct sucg_mpi_comm *next;  /* live list, for finalize */
} sucg_mpi_comm_t;

typedef struct sucg_mpi_config {
    int    enable;       /* 0: always fall back */
    size_t min_bytes;    /* per-rank block bytes below: fall back */
    size_t max_bytes;    /* above: fall back */
    int    verbose;
    void (*progress)(void);  /* extra progress while waiting, may be NULL */
    sucg_mpi_tune_t tune;    /* where sucg runs (sucg_mpi_config_tune) */
} sucg_mpi_config_t;

extern sucg_mpi_config_t sucg_mpi_config;

/* read SUCG_MPI_{ENABLE,MIN_BYTES,MAX_BYTES,VERBOSE,TUNE} into
 * sucg_mpi_config */
void sucg_mpi_config_from_env(void);

/* sucg_mpi_config.tune from @a str (the MPI's SUCG_MPI_TUNE_DEFAULT_* when
 * the user set none); a bad table is reported naming @a var, and sucg then
 * runs nowhere */
void sucg_mpi_config_tune(const char *str, const char *var);

/* per-communicator state; rank/size from the communicator */
sucg_mpi_comm_t *sucg_mpi_comm_new(MPI_Comm comm, sucg_mpi_oob_fn_t oob,
                                   void *oob_arg);
void             sucg_mpi_comm_free(sucg_mpi_comm_t *c);

/*
 * MPI_Allgather on an intra-communicator. Returns SUCG_MPI_FALLBACK when the
 * caller must run its fallback (the decision depends only on the
 * configuration, communicator size, per-rank block bytes and the
 * transports all ranks agreed on, identical on every rank), else an MPI
 * error code. Non-contiguous datatypes are packed
 * locally (contiguity may differ between ranks; the decision must not).
 */
int sucg_mpi_allgather(sucg_mpi_comm_t *c, const void *sbuf, int scount,
                       MPI_Datatype sdtype, void *rbuf, int rcount,
                       MPI_Datatype rdtype);

/* destroy every group still alive and the UCP context (at finalize) */
void sucg_mpi_finalize(void);

#endif
