/*
 * mca_coll_sucg.so: Open MPI 4.1 "coll" component running MPI_Allgather
 * through sucg, built outside the Open MPI tree against its devel
 * headers and loaded from a component directory:
 *
 *   mpirun --mca mca_base_component_path DIR:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 ...
 *
 * MCA parameters (ompi_info --param coll sucg --level 9):
 *   coll_sucg_priority  (40: above tuned's 30; negative disables)
 *   coll_sucg_enable    (1)
 *   coll_sucg_tune      where sucg runs: communicator sizes, per-rank block
 *                       bytes, transports (sucg_mpi_tune.h; default
 *                       SUCG_MPI_TUNE_DEFAULT_OMPI, the measured wins); every
 *                       other call goes to the previous module (tuned)
 *   coll_sucg_min_bytes / coll_sucg_max_bytes  per-rank block bytes bounds
 *   coll_sucg_verbose   (0; 1 groups, 2 every call and the sucg config)
 *
 * The module only provides coll_allgather. At enable it saves (and retains)
 * the previous module's allgather, which is both the fallback and the
 * out-of-band allgather of the sucg group: the group is created on the first
 * MPI_Allgather of the communicator that sucg handles, and destroyed with
 * the module (the communicator's destruction). sucg runs on its own UCP
 * context/worker/endpoints (sucg_mpi.c), not on pml ucx's.
 */
#include "ompi_config.h"
#include "mpi.h"
#include "ompi/constants.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"

#include "sucg/mpi/sucg_mpi.h"

typedef struct mca_coll_sucg_module {
    mca_coll_base_module_t               super;
    ompi_communicator_t                 *comm;
    mca_coll_base_module_allgather_fn_t  prev_allgather;
    mca_coll_base_module_t              *prev_allgather_module;
    sucg_mpi_comm_t                     *state;
} mca_coll_sucg_module_t;

static int sucg_priority  = 40;
static int sucg_enable    = 1;
static unsigned long sucg_min_bytes = 1;
static unsigned long sucg_max_bytes = (unsigned long)-1;
static int sucg_verbose   = 0;
static char *sucg_tune    = SUCG_MPI_TUNE_DEFAULT_OMPI;
static int sucg_closed    = 0;

static int  mca_coll_sucg_register(void);
static int  mca_coll_sucg_open(void);
static int  mca_coll_sucg_close(void);
static int  mca_coll_sucg_init_query(bool enable_progress_threads,
                                     bool enable_mpi_threads);
static mca_coll_base_module_t *
            mca_coll_sucg_comm_query(ompi_communicator_t *comm, int *priority);

OMPI_DECLSPEC extern mca_coll_base_component_2_0_0_t mca_coll_sucg_component;

__attribute__((visibility("default")))
mca_coll_base_component_2_0_0_t mca_coll_sucg_component = {
    .collm_version = {
        MCA_COLL_BASE_VERSION_2_0_0,
        .mca_component_name            = "sucg",
        MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
        .mca_open_component            = mca_coll_sucg_open,
        .mca_close_component           = mca_coll_sucg_close,
        .mca_register_component_params = mca_coll_sucg_register,
    },
    .collm_data = {
        MCA_BASE_METADATA_PARAM_CHECKPOINT
    },
    .collm_init_query = mca_coll_sucg_init_query,
    .collm_comm_query = mca_coll_sucg_comm_query,
};

static int mca_coll_sucg_register(void)
{
    mca_base_component_t *c = &mca_coll_sucg_component.collm_version;

    (void)mca_base_component_var_register(c, "priority",
        "Priority of the sucg coll component (negative: never used)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &sucg_priority);
    (void)mca_base_component_var_register(c, "enable",
        "Run MPI_Allgather through sucg (0: component not used)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &sucg_enable);
    (void)mca_base_component_var_register(c, "min_bytes",
        "Smallest per-rank block (bytes) handled by sucg; smaller ones go to "
        "the previous module. Must be equal on all ranks",
        MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &sucg_min_bytes);
    (void)mca_base_component_var_register(c, "max_bytes",
        "Largest per-rank block (bytes) handled by sucg. Must be equal on "
        "all ranks",
        MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &sucg_max_bytes);
    (void)mca_base_component_var_register(c, "tune",
        "Where MPI_Allgather runs through sucg: TRANSPORT:[SIZES]:LO-HI "
        "ranges separated by '#' (e.g. rc_verbs:[4-8]:1M-inf#shm:[2]:0-inf; "
        "'*' for any transport or size; empty: nowhere). Must be equal on "
        "all ranks",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &sucg_tune);
    (void)mca_base_component_var_register(c, "verbose",
        "1: report group creation/destruction, 2: every call and the sucg "
        "configuration",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &sucg_verbose);
    return OMPI_SUCCESS;
}

static void mca_coll_sucg_progress(void)
{
    opal_progress();
}

static int mca_coll_sucg_open(void)
{
    sucg_mpi_config.enable    = sucg_enable;
    sucg_mpi_config.min_bytes = sucg_min_bytes;
    sucg_mpi_config.max_bytes = sucg_max_bytes;
    sucg_mpi_config.verbose   = sucg_verbose;
    sucg_mpi_config_tune((sucg_tune != NULL) ? sucg_tune : "", "coll_sucg_tune");
    /* keep pml and the other engines moving while sucg spins */
    sucg_mpi_config.progress  = mca_coll_sucg_progress;
    sucg_closed               = 0;
    return OMPI_SUCCESS;
}

static int mca_coll_sucg_close(void)
{
    /* after ompi_comm_finalize: frees what communicators left behind */
    sucg_mpi_finalize();
    sucg_closed = 1;
    return OMPI_SUCCESS;
}

static int mca_coll_sucg_init_query(bool enable_progress_threads,
                                    bool enable_mpi_threads)
{
    /* the sucg worker is single-threaded: no MPI_THREAD_MULTIPLE */
    if (!sucg_enable || enable_mpi_threads) {
        return OMPI_ERR_NOT_SUPPORTED;
    }
    return OMPI_SUCCESS;
}

/* ---- module ----------------------------------------------------------- */

static void mca_coll_sucg_module_construct(mca_coll_sucg_module_t *m)
{
    m->comm                  = NULL;
    m->prev_allgather        = NULL;
    m->prev_allgather_module = NULL;
    m->state                 = NULL;
}

static void mca_coll_sucg_module_destruct(mca_coll_sucg_module_t *m)
{
    if ((m->state != NULL) && !sucg_closed) {
        sucg_mpi_comm_free(m->state);
    }
    m->state = NULL;
    if (m->prev_allgather_module != NULL) {
        OBJ_RELEASE(m->prev_allgather_module);
    }
}

OBJ_CLASS_INSTANCE(mca_coll_sucg_module_t, mca_coll_base_module_t,
                   mca_coll_sucg_module_construct,
                   mca_coll_sucg_module_destruct);

static int mca_coll_sucg_oob(const void *sbuf, void *rbuf, int len, void *arg)
{
    mca_coll_sucg_module_t *m = arg;

    return m->prev_allgather(sbuf, len, MPI_BYTE, rbuf, len, MPI_BYTE,
                             m->comm, m->prev_allgather_module);
}

static int mca_coll_sucg_allgather(const void *sbuf, int scount,
                                   struct ompi_datatype_t *sdtype, void *rbuf,
                                   int rcount, struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module)
{
    mca_coll_sucg_module_t *m = (mca_coll_sucg_module_t*)module;
    int rc;

    if (m->state == NULL) {
        m->state = sucg_mpi_comm_new(comm, mca_coll_sucg_oob, m);
    }
    if (m->state != NULL) {
        rc = sucg_mpi_allgather(m->state, sbuf, scount, sdtype, rbuf, rcount,
                                rdtype);
        if (rc != SUCG_MPI_FALLBACK) {
            return rc;
        }
    }
    return m->prev_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                             m->prev_allgather_module);
}

static int mca_coll_sucg_module_enable(mca_coll_base_module_t *module,
                                       struct ompi_communicator_t *comm)
{
    mca_coll_sucg_module_t *m = (mca_coll_sucg_module_t*)module;

    /* modules are enabled in increasing priority: c_coll holds the best
     * allgather below us */
    if ((comm->c_coll == NULL) || (comm->c_coll->coll_allgather == NULL) ||
        (comm->c_coll->coll_allgather_module == NULL)) {
        opal_output(0, "coll/sucg: no previous allgather on %s",
                    comm->c_name);
        return OMPI_ERROR;
    }
    m->comm                  = comm;
    m->prev_allgather        = comm->c_coll->coll_allgather;
    m->prev_allgather_module = comm->c_coll->coll_allgather_module;
    OBJ_RETAIN(m->prev_allgather_module);
    return OMPI_SUCCESS;
}

static mca_coll_base_module_t *
mca_coll_sucg_comm_query(ompi_communicator_t *comm, int *priority)
{
    mca_coll_sucg_module_t *m;

    /* uniform over the communicator: size and inter-ness */
    if (!sucg_enable || (sucg_priority < 0) || OMPI_COMM_IS_INTER(comm) ||
        (ompi_comm_size(comm) < 2)) {
        return NULL;
    }
    m = OBJ_NEW(mca_coll_sucg_module_t);
    if (m == NULL) {
        return NULL;
    }
    m->super.coll_module_enable = mca_coll_sucg_module_enable;
    m->super.coll_allgather     = mca_coll_sucg_allgather;
    *priority                   = sucg_priority;
    return &m->super;
}
