/*
 * sucg in MPI: shared glue (see sucg_mpi.h).
 *
 * Group ids. sucg gives each group of a context the next id of a per-context
 * counter, and its tagged (p2p) algorithms put that id into the tag, so the
 * ids of one group must agree on all its ranks. MPI communicators are not
 * created in the same order on every process (MPI_Comm_split with
 * MPI_UNDEFINED, overlapping subcommunicators, lazy creation), so the
 * counters drift apart. At group creation the ranks therefore allgather
 * their counters and those behind advance theirs to the maximum by creating
 * and destroying size-1 groups (purely local; no data path involved), then
 * all create the group with the same id, which is confirmed by a second
 * small allgather. (An explicit id in sucg_group_params_t would remove the
 * size-1 groups; see README.md.)
 */
#include "sucg/mpi/sucg_mpi.h"
#include "sucg/core/sucg_lanes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUCG_MPI_EXPORT __attribute__((visibility("default")))

sucg_mpi_config_t sucg_mpi_config = {
    .enable    = 1,
    .min_bytes = 1,
    .max_bytes = (size_t)-1,
    .verbose   = 0,
    .progress  = NULL
};

static struct {
    int              state;      /* 0: not yet, 1: ready, -1: failed */
    ucp_context_h    ucp;
    ucp_worker_h     worker;
    sucg_context_h   ctx;
    uint64_t         ngroups;    /* sucg_group_create calls = next group id */
    sucg_mpi_comm_t *live;
    sucg_mpi_stats_t stats;
    ucp_address_t   *addr;       /* my worker address */
    size_t           addr_len;
    struct sucg_mpi_ep {         /* endpoints by peer worker address, */
        void        *addr;       /* shared by all groups, closed at   */
        size_t       len;        /* finalize only                     */
        ucp_ep_h     ep;
    }               *eps;
    size_t           neps, eps_cap;
} g_sucg_mpi;

#define SUCG_MPI_LOG(_lvl, _fmt, ...) \
    do { \
        if (sucg_mpi_config.verbose >= (_lvl)) { \
            fprintf(stderr, "[sucg-mpi] " _fmt "\n", ##__VA_ARGS__); \
        } \
    } while (0)

SUCG_MPI_EXPORT void sucg_mpi_get_stats(sucg_mpi_stats_t *stats)
{
    *stats         = g_sucg_mpi.stats;
    stats->version = SUCG_MPI_STATS_VERSION;
}

SUCG_MPI_EXPORT void sucg_mpi_get_zcopy_steps(sucg_mpi_zcopy_steps_t *steps)
{
    sucg_stats_t st;

    memset(steps, 0, sizeof(*steps));
    if (g_sucg_mpi.state > 0) {
        sucg_stats_get(g_sucg_mpi.ctx, &st);
        steps->by_put       = st.zcopy_puts;
        steps->by_tag       = st.tagged_tx_steps;
        steps->reg_failures = st.reg_failures;
    }
}

static size_t sucg_mpi_env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    char *end;
    unsigned long long x;

    if ((v == NULL) || (*v == '\0')) {
        return dflt;
    }
    x = strtoull(v, &end, 0);
    switch (*end) {
    case 'k': case 'K': x <<= 10; ++end; break;
    case 'm': case 'M': x <<= 20; ++end; break;
    case 'g': case 'G': x <<= 30; ++end; break;
    }
    if (*end != '\0') {
        fprintf(stderr, "[sucg-mpi] warning: %s='%s' is not a size, using "
                "%zu\n", name, v, dflt);
        return dflt;
    }
    return x;
}

void sucg_mpi_config_from_env(void)
{
    const char *tune;

    sucg_mpi_config.enable    = (int)sucg_mpi_env_size("SUCG_MPI_ENABLE", 1);
    sucg_mpi_config.min_bytes = sucg_mpi_env_size("SUCG_MPI_MIN_BYTES", 1);
    sucg_mpi_config.max_bytes = sucg_mpi_env_size("SUCG_MPI_MAX_BYTES",
                                                  (size_t)-1);
    sucg_mpi_config.verbose   = (int)sucg_mpi_env_size("SUCG_MPI_VERBOSE", 0);
    tune = getenv("SUCG_MPI_TUNE");
    sucg_mpi_config_tune((tune != NULL) ? tune : SUCG_MPI_TUNE_DEFAULT_MPICH,
                         "SUCG_MPI_TUNE");
}

void sucg_mpi_config_tune(const char *str, const char *var)
{
    char err[160];

    if (sucg_mpi_tune_parse(str, &sucg_mpi_config.tune, err,
                            sizeof(err)) != 0) {
        fprintf(stderr, "[sucg-mpi] warning: %s='%s': %s; MPI_Allgather is "
                "the MPI's own\n", var, str, err);
    }
}

/* ---- process-wide UCP context ----------------------------------------- */

static int sucg_mpi_ctx_get(void)
{
    ucp_params_t up = {0};
    ucp_worker_params_t wp = {0};
    sucg_context_params_t cp;
    ucp_config_t *cfg;
    ucs_status_t status;

    if (g_sucg_mpi.state != 0) {
        return g_sucg_mpi.state > 0;
    }
    g_sucg_mpi.state = -1;
    /*
     * MPI gives us no free() hook, so cached registrations of user rbufs
     * go stale when the application frees and reallocates them; measured:
     * heap corruption with UCX_TLS=tcp,self (test/sucg/mpi/run.sh, -b 1M,
     * np 5). No registration cache unless the user asks for one, under
     * the variable's name or its former one (UCG_*, see sucg_config.c).
     */
    if (getenv("UCG_RCACHE_MAX_ENTRIES") == NULL) {
        setenv("SUCG_RCACHE_MAX_ENTRIES", "0", 0);
    }
    status = ucp_config_read(NULL, NULL, &cfg);
    if (status != UCS_OK) {
        goto err;
    }
    up.field_mask = UCP_PARAM_FIELD_FEATURES;
    up.features   = UCP_FEATURE_RMA | UCP_FEATURE_TAG | UCP_FEATURE_AM;
    status        = ucp_init(&up, cfg, &g_sucg_mpi.ucp);
    ucp_config_release(cfg);
    if (status != UCS_OK) {
        goto err;
    }
    wp.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(g_sucg_mpi.ucp, &wp, &g_sucg_mpi.worker);
    if (status != UCS_OK) {
        ucp_cleanup(g_sucg_mpi.ucp);
        goto err;
    }
    status = ucp_worker_get_address(g_sucg_mpi.worker, &g_sucg_mpi.addr,
                                    &g_sucg_mpi.addr_len);
    if (status != UCS_OK) {
        ucp_worker_destroy(g_sucg_mpi.worker);
        ucp_cleanup(g_sucg_mpi.ucp);
        goto err;
    }
    cp.ucp_context = g_sucg_mpi.ucp;
    cp.ucp_worker  = g_sucg_mpi.worker;
    status = sucg_context_create(&cp, &g_sucg_mpi.ctx);
    if (status != UCS_OK) {
        ucp_worker_release_address(g_sucg_mpi.worker, g_sucg_mpi.addr);
        ucp_worker_destroy(g_sucg_mpi.worker);
        ucp_cleanup(g_sucg_mpi.ucp);
        goto err;
    }
    /* staged steps as one message each; the worker is ours alone, so any
     * id is free. Without it (reported) the steps are puts. */
    (void)sucg_context_enable_am(g_sucg_mpi.ctx, 0);
    if (sucg_mpi_config.verbose >= 2) {
        sucg_config_print(g_sucg_mpi.ctx, stderr);
    }
    g_sucg_mpi.state = 1;
    return 1;

err:
    fprintf(stderr, "[sucg-mpi] error: UCP/sucg context: %s; MPI_Allgather "
            "falls back\n", ucs_status_string(status));
    return 0;
}

/*
 * Endpoints are ours, not sucg's: sucg closes the endpoints it creates with a
 * flush-mode ucp_ep_close_nbx() in sucg_group_destroy(), which over tcp
 * waits for the peer's worker - a peer already back in MPI (not progressing
 * this worker) then hangs the MPI_Comm_free. Here endpoints live until
 * finalize and are closed in force mode (local).
 */
static ucp_ep_h sucg_mpi_ep_get(const void *addr, size_t len)
{
    ucp_ep_params_t ep_params;
    struct sucg_mpi_ep *e;
    size_t i;

    for (i = 0; i < g_sucg_mpi.neps; ++i) {
        e = &g_sucg_mpi.eps[i];
        if ((e->len == len) && !memcmp(e->addr, addr, len)) {
            return e->ep;
        }
    }
    if (g_sucg_mpi.neps == g_sucg_mpi.eps_cap) {
        size_t cap = g_sucg_mpi.eps_cap ? 2 * g_sucg_mpi.eps_cap : 16;
        e = realloc(g_sucg_mpi.eps, cap * sizeof(*e));
        if (e == NULL) {
            return NULL;
        }
        g_sucg_mpi.eps     = e;
        g_sucg_mpi.eps_cap = cap;
    }
    e       = &g_sucg_mpi.eps[g_sucg_mpi.neps];
    e->addr = malloc(len);
    if (e->addr == NULL) {
        return NULL;
    }
    memcpy(e->addr, addr, len);
    e->len               = len;
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = e->addr;
    if (ucp_ep_create(g_sucg_mpi.worker, &ep_params, &e->ep) != UCS_OK) {
        free(e->addr);
        return NULL;
    }
    ++g_sucg_mpi.neps;
    return e->ep;
}

static void sucg_mpi_eps_close(void)
{
    ucp_request_param_t param = {0};
    size_t i;
    void *req;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    for (i = 0; i < g_sucg_mpi.neps; ++i) {
        req = ucp_ep_close_nbx(g_sucg_mpi.eps[i].ep, &param);
        if (UCS_PTR_IS_PTR(req)) {
            while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                ucp_worker_progress(g_sucg_mpi.worker);
            }
            ucp_request_free(req);
        }
        free(g_sucg_mpi.eps[i].addr);
    }
    free(g_sucg_mpi.eps);
    g_sucg_mpi.eps  = NULL;
    g_sucg_mpi.neps = g_sucg_mpi.eps_cap = 0;
}

void sucg_mpi_finalize(void)
{
    while (g_sucg_mpi.live != NULL) {
        sucg_mpi_comm_free(g_sucg_mpi.live);
    }
    if (g_sucg_mpi.state > 0) {
        sucg_mpi_eps_close();
        ucp_worker_release_address(g_sucg_mpi.worker, g_sucg_mpi.addr);
        sucg_context_destroy(g_sucg_mpi.ctx);
        ucp_worker_destroy(g_sucg_mpi.worker);
        ucp_cleanup(g_sucg_mpi.ucp);
    }
    g_sucg_mpi.state = 0;
}

/* ---- groups ----------------------------------------------------------- */

static ucs_status_t sucg_mpi_self_oob(const void *sbuf, void *rbuf, size_t len,
                                      void *arg)
{
    memcpy(rbuf, sbuf, len);
    return UCS_OK;
}

static ucp_ep_h sucg_mpi_no_ep(int rank, void *arg)
{
    return NULL;   /* never called for a size-1 group */
}

static ucs_status_t sucg_mpi_comm_oob(const void *sbuf, void *rbuf, size_t len,
                                      void *arg)
{
    sucg_mpi_comm_t *c = arg;

    return (c->oob(sbuf, rbuf, (int)len, c->oob_arg) == MPI_SUCCESS) ?
           UCS_OK : UCS_ERR_IO_ERROR;
}

static ucs_status_t sucg_mpi_group_create(const sucg_group_params_t *params,
                                          sucg_group_h *group_p)
{
    ++g_sucg_mpi.ngroups;
    return sucg_group_create(g_sucg_mpi.ctx, params, group_p);
}

/* advance the context's group id counter by one: local */
static void sucg_mpi_burn_group_id(void)
{
    sucg_group_params_t p = {0};
    sucg_group_h g;

    p.rank          = 0;
    p.size          = 1;
    p.ep_cb         = sucg_mpi_no_ep;
    p.oob_allgather = sucg_mpi_self_oob;
    if (sucg_mpi_group_create(&p, &g) == UCS_OK) {
        sucg_group_destroy(g);
    }
}

typedef struct {
    int64_t ok;
    int64_t id;
    int64_t addr_len;
    int64_t tune_ok;     /* sucg_mpi_tune_mask_t */
} sucg_mpi_agree_t;

_Static_assert(SUCG_MPI_TUNE_NAME_LEN >= SUCG_LANE_TL_LEN,
               "a lane's transport name fits the table's");

/* The transports of an endpoint's lanes, each once; returns how many */
static int sucg_mpi_ep_tls(ucp_ep_h ep, char (*names)[SUCG_MPI_TUNE_NAME_LEN],
                           int max)
{
    sucg_lane_t lanes[SUCG_LANES_MAX];
    int n = 0, nl, i, k, dup;

    nl = sucg_ep_lanes(ep, lanes, SUCG_LANES_MAX);
    for (i = 0; (i < nl) && (n < max); ++i) {
        for (dup = 0, k = 0; k < n; ++k) {
            dup = dup || !strcmp(names[k], lanes[i].tl);
        }
        if (!dup) {
            memcpy(names[n++], lanes[i].tl, sizeof(lanes[i].tl));
        }
    }
    return n;
}

/* The ranges whose transport holds for every peer of this rank */
static sucg_mpi_tune_mask_t sucg_mpi_tune_local(sucg_mpi_comm_t *c,
                                                ucp_ep_h *eps)
{
    sucg_mpi_tune_mask_t mask = (sucg_mpi_tune_mask_t)-1;
    char names[16][SUCG_MPI_TUNE_NAME_LEN];
    const char *tls[16];
    int r, n, k;

    for (k = 0; k < 16; ++k) {
        tls[k] = names[k];
    }
    for (r = 0; r < c->size; ++r) {
        if (r == c->rank) {
            continue;
        }
        n = (eps[r] != NULL) ? sucg_mpi_ep_tls(eps[r], names, 16) : 0;
        mask &= sucg_mpi_tune_peer(&sucg_mpi_config.tune, tls, n);
        if (sucg_mpi_config.verbose >= 2) {
            fprintf(stderr, "[sucg-mpi] rank %d/%d: peer %d over", c->rank,
                    c->size, r);
            for (k = 0; k < n; ++k) {
                fprintf(stderr, " %s", tls[k]);
            }
            fprintf(stderr, "\n");
        }
    }
    return mask;
}

/* Collective over c->comm; on return c->state is 1 or -1 on every rank
 * alike, unless an MPI error is returned. */
static int sucg_mpi_comm_group_create(sucg_mpi_comm_t *c)
{
    sucg_mpi_agree_t mine, *all;
    sucg_group_params_t p = {0};
    ucs_status_t status = UCS_ERR_NO_RESOURCE;
    int64_t max_id = 0, max_len = 0;
    uint8_t *addrs = NULL;
    ucp_ep_h *eps  = NULL;
    int ok = 1, rc, r;

    all = calloc(c->size, sizeof(*all));
    eps = calloc(c->size, sizeof(*eps));
    if ((all == NULL) || (eps == NULL)) {
        free(all);
        free(eps);
        return MPI_ERR_NO_MEM;
    }
    mine.ok       = sucg_mpi_ctx_get();
    mine.id       = (int64_t)g_sucg_mpi.ngroups;
    mine.addr_len = mine.ok ? (int64_t)g_sucg_mpi.addr_len : 0;
    mine.tune_ok  = 0;   /* agreed in the confirmation below */
    rc            = c->oob(&mine, all, sizeof(mine), c->oob_arg);
    if (rc != MPI_SUCCESS) {
        goto out;
    }
    for (r = 0; r < c->size; ++r) {
        ok      = ok && all[r].ok;
        max_id  = (all[r].id > max_id) ? all[r].id : max_id;
        max_len = (all[r].addr_len > max_len) ? all[r].addr_len : max_len;
    }
    if (ok) {
        /* worker addresses -> (shared) endpoints; an endpoint failure is
         * only known locally: it travels in the confirmation below */
        addrs = calloc(c->size + 1, max_len);
        if (addrs == NULL) {
            rc = MPI_ERR_NO_MEM;   /* peers are stuck anyway */
            goto out;
        }
        memcpy(addrs + c->size * max_len, g_sucg_mpi.addr, g_sucg_mpi.addr_len);
        rc = c->oob(addrs + c->size * max_len, addrs, (int)max_len, c->oob_arg);
        if (rc != MPI_SUCCESS) {
            goto out;
        }
        for (r = 0; r < c->size; ++r) {
            if (r != c->rank) {
                /* NULL fails sucg_group_create here only (after its OOB) */
                eps[r] = sucg_mpi_ep_get(addrs + r * max_len, all[r].addr_len);
            }
        }
    }
    if (ok) {
        while ((int64_t)g_sucg_mpi.ngroups < max_id) {
            sucg_mpi_burn_group_id();
        }
        mine.id         = (int64_t)g_sucg_mpi.ngroups;
        mine.tune_ok    = (int64_t)sucg_mpi_tune_local(c, eps);
        p.rank          = c->rank;
        p.size          = c->size;
        p.eps           = eps;
        p.oob_allgather = sucg_mpi_comm_oob;
        p.oob_arg       = c;
        /* collective: fails on every rank alike (sucg shares local errors) */
        status  = sucg_mpi_group_create(&p, &c->group);
        mine.ok = (status == UCS_OK);
        /* confirm the ids agree (a hang later would be worse) */
        rc = c->oob(&mine, all, sizeof(mine), c->oob_arg);
        if (rc != MPI_SUCCESS) {
            goto out;
        }
        c->tune_ok = (sucg_mpi_tune_mask_t)-1;
        for (r = 0; r < c->size; ++r) {
            ok = ok && all[r].ok && (all[r].id == mine.id);
            c->tune_ok &= (sucg_mpi_tune_mask_t)all[r].tune_ok;
        }
        if (!ok && (status == UCS_OK)) {
            sucg_group_destroy(c->group);
        }
    }
    if (ok) {
        c->state = 1;
        ++g_sucg_mpi.stats.groups_created;
        SUCG_MPI_LOG(1, "rank %d/%d: group created (id %lld), ranges "
                     "0x%x of the table hold on every rank", c->rank,
                     c->size, (long long)mine.id, (unsigned)c->tune_ok);
    } else {
        c->state = -1;
        c->group = NULL;
        ++g_sucg_mpi.stats.group_failures;
        if (c->rank == 0) {
            fprintf(stderr, "[sucg-mpi] warning: no sucg group for a "
                    "communicator of size %d; MPI_Allgather falls back\n",
                    c->size);
        }
    }
out:
    free(all);
    free(eps);
    free(addrs);
    return rc;
}

sucg_mpi_comm_t *sucg_mpi_comm_new(MPI_Comm comm, sucg_mpi_oob_fn_t oob,
                                   void *oob_arg)
{
    sucg_mpi_comm_t *c = calloc(1, sizeof(*c));

    if (c == NULL) {
        return NULL;
    }
    c->comm    = comm;
    c->oob     = oob;
    c->oob_arg = oob_arg;
    PMPI_Comm_rank(comm, &c->rank);
    PMPI_Comm_size(comm, &c->size);
    c->next         = g_sucg_mpi.live;
    g_sucg_mpi.live = c;
    return c;
}

void sucg_mpi_comm_free(sucg_mpi_comm_t *c)
{
    sucg_mpi_comm_t **p;

    for (p = &g_sucg_mpi.live; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    if (c->state > 0) {
        /* local: every rank completed its last collective on the group
         * (each waits for all data put into it and flushes its own puts) */
        sucg_group_destroy(c->group);
        ++g_sucg_mpi.stats.groups_destroyed;
        SUCG_MPI_LOG(1, "rank %d/%d: group destroyed", c->rank, c->size);
    }
    free(c);
}

/* ---- datatypes -------------------------------------------------------- */

static int sucg_mpi_dt_named(MPI_Datatype dt)
{
    int ni, na, nd, comb;

    PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb);
    return comb == MPI_COMBINER_NAMED;
}

/*
 * Contiguous and in type-map order: the memory bytes are the packed bytes.
 * Predefined types, and contiguous/dup of such, with no lb/ub games.
 */
static int sucg_mpi_dt_contig(MPI_Datatype dt)
{
    MPI_Aint lb, ext, tlb, text, aints[1];
    MPI_Datatype types[1];
    int ni, na, nd, comb, size, ints[1], ret;

    PMPI_Type_size(dt, &size);
    PMPI_Type_get_extent(dt, &lb, &ext);
    PMPI_Type_get_true_extent(dt, &tlb, &text);
    if ((lb != 0) || (tlb != 0) || (ext != size) || (text != size)) {
        return 0;
    }
    PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb);
    if (comb == MPI_COMBINER_NAMED) {
        return 1;
    }
    if (((comb != MPI_COMBINER_CONTIGUOUS) && (comb != MPI_COMBINER_DUP)) ||
        (ni > 1) || (na > 0) || (nd != 1)) {
        return 0;
    }
    PMPI_Type_get_contents(dt, ni, na, nd, ints, aints, types);
    ret = sucg_mpi_dt_contig(types[0]);
    if (!sucg_mpi_dt_named(types[0])) {
        PMPI_Type_free(&types[0]);
    }
    return ret;
}

/* ---- allgather -------------------------------------------------------- */

static int sucg_mpi_run(sucg_mpi_comm_t *c, const void *sbuf, void *rbuf,
                        size_t bytes, unsigned flags)
{
    sucg_coll_params_t p = {0};
    sucg_coll_h coll;
    ucs_status_t status;
    sucg_allgather_algo_t algo;
    unsigned n = 0;

    p.type  = SUCG_COLL_ALLGATHER;
    p.sbuf  = sbuf;
    p.rbuf  = rbuf;
    p.count = bytes;
    p.flags = flags;
    p.algo  = SUCG_ALLGATHER_AUTO;
    status  = sucg_coll_init(c->group, &p, &coll);
    if (status != UCS_OK) {
        goto err;
    }
    algo   = sucg_coll_algo(coll);
    status = sucg_coll_start(coll);
    if (status == UCS_OK) {
        while ((status = sucg_coll_test(coll)) == UCS_INPROGRESS) {
            if ((sucg_mpi_config.progress != NULL) && ((++n & 63) == 0)) {
                sucg_mpi_config.progress();
            }
        }
    }
    sucg_coll_free(coll);
    if (status != UCS_OK) {
        goto err;
    }
    ++g_sucg_mpi.stats.sucg_calls;
    if ((unsigned)algo < 8) {
        ++g_sucg_mpi.stats.by_algo[algo];
    }
    SUCG_MPI_LOG(2, "rank %d/%d: allgather %zu bytes by %s", c->rank,
                 c->size, bytes, sucg_allgather_algo_name(algo));
    return MPI_SUCCESS;

err:
    fprintf(stderr, "[sucg-mpi] error: rank %d/%d: sucg allgather of %zu bytes "
            "failed: %s\n", c->rank, c->size, bytes, ucs_status_string(status));
    return MPI_ERR_INTERN;
}

int sucg_mpi_allgather(sucg_mpi_comm_t *c, const void *sbuf, int scount,
                       MPI_Datatype sdtype, void *rbuf, int rcount,
                       MPI_Datatype rdtype)
{
    int in_place = (sbuf == MPI_IN_PLACE);
    uint8_t *ubuf, *stmp = NULL;
    const void *s = NULL;
    MPI_Aint rlb, rext;
    unsigned flags = 0;
    int tsize, rcontig, rc, pos, r;
    sucg_mpi_tune_mask_t tune;
    size_t bytes;

    /* the decision: identical on every rank of the communicator. A group
     * is created only for a call that a range of the table may take, and
     * the transports' part of the ranges is agreed on there */
    PMPI_Type_size(rdtype, &tsize);
    bytes = (size_t)rcount * (size_t)tsize;
    tune  = sucg_mpi_tune_match(&sucg_mpi_config.tune, c->size, bytes);
    if (!sucg_mpi_config.enable || (c->size < 2) || (bytes == 0) ||
        (bytes < sucg_mpi_config.min_bytes) ||
        (bytes > sucg_mpi_config.max_bytes) || (c->state < 0) ||
        (tune == 0) || (bytes * c->size > (size_t)INT32_MAX)) {
        ++g_sucg_mpi.stats.fallback_calls;
        return SUCG_MPI_FALLBACK;
    }
    if (c->state == 0) {
        rc = sucg_mpi_comm_group_create(c);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    }
    if ((c->state < 0) || !(tune & c->tune_ok)) {
        ++g_sucg_mpi.stats.fallback_calls;
        return SUCG_MPI_FALLBACK;
    }

    /* local from here on: pack whatever is not plain bytes */
    rcontig = sucg_mpi_dt_contig(rdtype);
    PMPI_Type_get_extent(rdtype, &rlb, &rext);
    ubuf = rbuf;
    if (!rcontig) {
        ubuf = malloc(bytes * c->size);
        if (ubuf == NULL) {
            return MPI_ERR_NO_MEM;
        }
    }
    rc = MPI_SUCCESS;
    if (in_place) {
        flags = SUCG_COLL_FLAG_IN_PLACE;
        if (!rcontig) {
            pos = 0;
            rc  = PMPI_Pack((uint8_t*)rbuf + (MPI_Aint)c->rank * rcount * rext,
                            rcount, rdtype, ubuf + bytes * c->rank, (int)bytes,
                            &pos, c->comm);
        }
    } else if (sucg_mpi_dt_contig(sdtype)) {
        s = sbuf;
    } else {
        /* pack straight into my block when the result is a temporary */
        stmp = rcontig ? malloc(bytes) : NULL;
        pos  = 0;
        if (rcontig && (stmp == NULL)) {
            return MPI_ERR_NO_MEM;
        }
        rc = PMPI_Pack(sbuf, scount, sdtype,
                       rcontig ? stmp : ubuf + bytes * c->rank, (int)bytes,
                       &pos, c->comm);
        if (rcontig) {
            s = stmp;
        } else {
            flags = SUCG_COLL_FLAG_IN_PLACE;
        }
    }
    /*
     * A pack error is local, but the peers are already committed to the
     * collective: run it anyway (with whatever bytes we have) and report.
     */
    r = sucg_mpi_run(c, s, ubuf, bytes, flags);
    if (rc == MPI_SUCCESS) {
        rc = r;
    }
    if (!rcontig || (stmp != NULL)) {
        ++g_sucg_mpi.stats.packed_calls;
    }
    if (!rcontig) {
        for (r = 0; (r < c->size) && (rc == MPI_SUCCESS); ++r) {
            pos = 0;
            rc  = PMPI_Unpack(ubuf + bytes * r, (int)bytes, &pos,
                              (uint8_t*)rbuf + (MPI_Aint)r * rcount * rext,
                              rcount, rdtype, c->comm);
        }
        /* the registration cache cannot see free() */
        sucg_mem_invalidate(g_sucg_mpi.ctx, ubuf, bytes * c->size);
        free(ubuf);
    }
    if (stmp != NULL) {
        sucg_mem_invalidate(g_sucg_mpi.ctx, stmp, bytes);
        free(stmp);
    }
    return rc;
}
