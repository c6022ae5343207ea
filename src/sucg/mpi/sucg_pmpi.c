/*
 * libsucg_pmpi.so: MPI_Allgather through sucg for any MPI with a PMPI
 * interface (built and tested with MPICH 4.0.2):
 *
 *     LD_PRELOAD=libsucg_pmpi.so mpirun.mpich -np 4 ./app
 *
 * The per-communicator state hangs off a communicator attribute (keyval
 * with a null copy function: a duplicate gets its own group) and is freed
 * by the keyval's delete callback, i.e. on MPI_Comm_free. MPI_Finalize
 * first waits for all ranks (barrier), then frees the remaining groups and
 * the UCP context. Everything this library does not handle (inter-
 * communicators, calls outside the ranges of SUCG_MPI_TUNE (default
 * SUCG_MPI_TUNE_DEFAULT_MPICH, the measured wins; sucg_mpi_tune.h) or
 * SUCG_MPI_{MIN,MAX}_BYTES, SUCG_MPI_ENABLE=0, MPI_THREAD_MULTIPLE) is
 * PMPI_Allgather.
 */
#include "sucg/mpi/sucg_mpi.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define SUCG_PMPI_EXPORT __attribute__((visibility("default")))

static int g_keyval = MPI_KEYVAL_INVALID;
static int g_disabled = -1;   /* -1: not decided yet */
static int g_finalized;       /* states freed: delete callbacks do nothing */

static int sucg_pmpi_oob(const void *sbuf, void *rbuf, int len, void *arg)
{
    return PMPI_Allgather(sbuf, len, MPI_BYTE, rbuf, len, MPI_BYTE,
                          *(MPI_Comm*)arg);
}

static int sucg_pmpi_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    if (!g_finalized) {
        sucg_mpi_comm_free(attr);
    }
    return MPI_SUCCESS;
}

/*
 * Called every 64 polls while sucg waits. MPICH has no progress hook worth
 * calling here (sucg runs on its own worker), but when ranks outnumber
 * cores a rank spinning through its time slice delays the very peer it
 * waits for: measured on 2 cores, np=8 test/sucg/mpi/run.sh took 43 s
 * without yielding. With a free core sched_yield() returns at once.
 */
static void sucg_pmpi_yield(void)
{
    sched_yield();
}

static int sucg_pmpi_disabled(void)
{
    int provided;

    if (g_disabled < 0) {
        sucg_mpi_config_from_env();
        sucg_mpi_config.progress = sucg_pmpi_yield;
        PMPI_Query_thread(&provided);
        /* the sucg worker is single-threaded */
        g_disabled = !sucg_mpi_config.enable ||
                     (provided == MPI_THREAD_MULTIPLE);
        if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, sucg_pmpi_delete,
                                    &g_keyval, NULL) != MPI_SUCCESS) {
            g_disabled = 1;
        }
    }
    return g_disabled;
}

static sucg_mpi_comm_t *sucg_pmpi_comm(MPI_Comm comm)
{
    sucg_mpi_comm_t *c;
    int flag, inter;

    PMPI_Comm_get_attr(comm, g_keyval, &c, &flag);
    if (flag) {
        return c;
    }
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) {
        return NULL;
    }
    c = sucg_mpi_comm_new(comm, sucg_pmpi_oob, NULL);
    if (c == NULL) {
        return NULL;
    }
    c->oob_arg = &c->comm;
    PMPI_Comm_set_attr(comm, g_keyval, c);
    return c;
}

SUCG_PMPI_EXPORT int MPI_Allgather(const void *sbuf, int scount,
                                   MPI_Datatype sdtype, void *rbuf, int rcount,
                                   MPI_Datatype rdtype, MPI_Comm comm)
{
    sucg_mpi_comm_t *c;
    int rc;

    if (!sucg_pmpi_disabled() && (comm != MPI_COMM_NULL)) {
        c = sucg_pmpi_comm(comm);   /* NULL: inter-communicator */
        if (c != NULL) {
            rc = sucg_mpi_allgather(c, sbuf, scount, sdtype, rbuf, rcount,
                                    rdtype);
            if (rc != SUCG_MPI_FALLBACK) {
                return rc;
            }
        }
    }
    return PMPI_Allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}

SUCG_PMPI_EXPORT int MPI_Finalize(void)
{
    if (g_disabled == 0) {
        /* no peer may still be putting into our memory */
        PMPI_Barrier(MPI_COMM_WORLD);
        /* the delete callbacks of world and self run inside PMPI_Finalize
         * on their own; free the groups while the library is still up */
        PMPI_Comm_delete_attr(MPI_COMM_WORLD, g_keyval);
        sucg_mpi_finalize();   /* communicators never freed */
        g_finalized = 1;
        PMPI_Comm_free_keyval(&g_keyval);
    }
    return PMPI_Finalize();
}
