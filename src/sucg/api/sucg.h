/*
 * sucg: collectives over the public UCP API.
 *
 * Every exported symbol is prefixed "sucg_" (never "ucg_"): Huawei's UCX fork
 * and old UCX releases export ucg_* symbols, and a process may load both.
 *
 * Model
 *   sucg_context  wraps one UCP context + worker (the caller owns both and
 *                 must keep them alive; the worker must not be used from
 *                 another thread concurrently with sucg calls).
 *   sucg_group    "rank of size" over that worker. Creation is collective:
 *                 every rank calls sucg_group_create() with the same size,
 *                 and groups on one context must be created in the same order
 *                 on all ranks (the creation order gives the group its tag
 *                 space for the point-to-point algorithms).
 *   sucg_coll     one collective operation. init -> start -> test/wait ->
 *                 (start again if persistent) -> free. Collectives on one
 *                 group run in start order, one at a time; every rank must
 *                 start them in the same order (MPI rule).
 *
 * Configuration is read from SUCG_* environment variables at
 * sucg_context_create() (see sucg_config_print()).
 */
#ifndef SUCG_H_
#define SUCG_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <ucp/api/ucp.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Also in each rank's group creation record: ranks of one group must run
 * the same version (5: the record carries SUCG_STAGED_STEP, sucg_stats_t
 * counts tail_steps) */
#define SUCG_API_VERSION 5

typedef struct sucg_context *sucg_context_h;
typedef struct sucg_group   *sucg_group_h;
typedef struct sucg_coll    *sucg_coll_h;

/* Allgather algorithm selection (SUCG_ALLGATHER_ALGO, or per collective). */
typedef enum {
    SUCG_ALLGATHER_AUTO = 0,          /* rules of SUCG_RING_MIN_* */
    SUCG_ALLGATHER_RECURSIVE_DOUBLING,/* RDMA recursive doubling */
    SUCG_ALLGATHER_RING,              /* RDMA ring, zero-copy */
    SUCG_ALLGATHER_P2P_RD,            /* tagged send/recv recursive doubling */
    SUCG_ALLGATHER_P2P_RING,          /* tagged send/recv ring */
    SUCG_ALLGATHER_LAST
} sucg_allgather_algo_t;

/*
 * Out-of-band allgather, called exactly once per sucg_group_create():
 * gather @a len bytes from every rank's @a sbuf into @a rbuf (rank i's data
 * at rbuf + i * len). @a len is the same on every rank. Must be blocking.
 */
typedef ucs_status_t (*sucg_oob_allgather_cb_t)(const void *sbuf, void *rbuf,
                                                size_t len, void *arg);

/* Returns the endpoint to use for @a rank (never called for self); called
 * once per peer by sucg_group_create_post(), before the exchange. */
typedef ucp_ep_h (*sucg_ep_cb_t)(int rank, void *arg);

typedef struct sucg_context_params {
    ucp_context_h ucp_context; /* needs UCP_FEATURE_RMA and UCP_FEATURE_TAG */
    ucp_worker_h  ucp_worker;
} sucg_context_params_t;

typedef struct sucg_group_params {
    int                     rank;
    int                     size;
    /*
     * Endpoints, in order of preference: eps[size] (eps[rank] ignored), else
     * ep_cb, else none: sucg exchanges worker addresses in the same single
     * OOB allgather and creates (and later closes) its own endpoints.
     */
    ucp_ep_h               *eps;
    sucg_ep_cb_t            ep_cb;
    void                   *ep_cb_arg;
    sucg_oob_allgather_cb_t oob_allgather;  /* required by sucg_group_create */
    void                   *oob_arg;
    /*
     * Tag space of the point-to-point algorithms (15 bits used). 0: the
     * context's creation counter, which needs groups created in the same
     * order on every rank; callers with a collective id of their own (a
     * UCC team id, an MPI context id) pass it + 1 here.
     */
    uint32_t                id;
} sucg_group_params_t;

enum {
    /* MPI_IN_PLACE: this rank's block is already at rbuf + rank * count */
    SUCG_COLL_FLAG_IN_PLACE  = 1u << 0,
    /* may be started many times; without it a second start fails */
    SUCG_COLL_FLAG_PERSISTENT = 1u << 1
};

typedef enum {
    SUCG_COLL_ALLGATHER = 0
} sucg_coll_type_t;

typedef struct sucg_coll_params {
    sucg_coll_type_t      type;
    const void           *sbuf;   /* ignored with SUCG_COLL_FLAG_IN_PLACE */
    void                 *rbuf;   /* size * count bytes, host memory */
    size_t                count;  /* bytes contributed by each rank */
    unsigned              flags;  /* SUCG_COLL_FLAG_* */
    sucg_allgather_algo_t algo;   /* AUTO: configuration decides */
} sucg_coll_params_t;

/* Context */
ucs_status_t sucg_context_create(const sucg_context_params_t *params,
                                 sucg_context_h *context_p);
void         sucg_context_destroy(sucg_context_h context);
/*
 * The context's UCP context has UCP_FEATURE_AM: a small (staged) step of
 * the RDMA algorithms then goes as one active message with id @a am_id
 * (sucg registers its handler on the worker; the id must be free), data and
 * completion together, instead of a put, an ordering point and a flag put
 * (three operations where puts are emulated by messages). A group uses it
 * when every rank enabled it. Call before creating groups.
 * SUCG_STAGED_STEP=put keeps the puts (and registers nothing); =tail takes
 * one put with the flag last to peers reached by RDMA, these messages to
 * the others.
 */
ucs_status_t sucg_context_enable_am(sucg_context_h context, uint16_t am_id);
/* Progress UCP and every started collective; returns nonzero if anything moved */
unsigned     sucg_progress(sucg_context_h context);
void         sucg_config_print(sucg_context_h context, FILE *stream);

/*
 * Forget cached registrations overlapping [addr, addr+len). Call before
 * freeing (munmap/free) a buffer that was used as a collective rbuf, when
 * the allocator may hand the same addresses back (see README: the cache
 * cannot see free() on its own).
 */
void         sucg_mem_invalidate(sucg_context_h context, void *addr, size_t len);

/* Group (collective call; the OOB allgather is used once, here) */
ucs_status_t sucg_group_create(sucg_context_h context,
                               const sucg_group_params_t *params,
                               sucg_group_h *group_p);
/*
 * The same in two halves, for callers whose allgather is non-blocking (a
 * UCC service collective): _post does the local part and returns this
 * rank's record (*len bytes, the same on every rank, valid until _complete
 * or _destroy); the caller allgathers the records (rank i's at
 * rbuf + i * len) and passes them to _complete. A local failure in _post
 * still yields a group and a record (marked failed, so every rank fails
 * _complete the same way and nobody waits for it); oob_allgather is not
 * used. _complete destroys the group on failure.
 */
ucs_status_t sucg_group_create_post(sucg_context_h context,
                                    const sucg_group_params_t *params,
                                    sucg_group_h *group_p,
                                    const void **record, size_t *len);
ucs_status_t sucg_group_create_complete(sucg_group_h group,
                                        const void *records);

/*
 * Local. No collective may be in progress on the group, and peers must be
 * done with it (e.g. all ranks completed their last collective and passed a
 * barrier) - a peer could otherwise still put into our group buffer.
 */
void         sucg_group_destroy(sucg_group_h group);

/* Collectives */
ucs_status_t sucg_coll_init(sucg_group_h group, const sucg_coll_params_t *params,
                            sucg_coll_h *coll_p);
ucs_status_t sucg_coll_start(sucg_coll_h coll);
/* UCS_OK when done, UCS_INPROGRESS, or an error; progresses the context */
ucs_status_t sucg_coll_test(sucg_coll_h coll);
ucs_status_t sucg_coll_wait(sucg_coll_h coll);
void         sucg_coll_free(sucg_coll_h coll);   /* must not be in progress */

/* The algorithm the collective will run (after AUTO resolution) */
sucg_allgather_algo_t sucg_coll_algo(sucg_coll_h coll);
const char  *sucg_allgather_algo_name(sucg_allgather_algo_t algo);

/* Blocking convenience: init + start + wait + free */
ucs_status_t sucg_allgather(sucg_group_h group, const void *sbuf, void *rbuf,
                            size_t count, unsigned flags);

/* Statistics, for tests and tuning */
typedef struct sucg_stats {
    uint64_t rcache_hits;
    uint64_t rcache_misses;       /* = ucp_mem_map calls for user buffers */
    uint64_t rcache_evictions;
    uint64_t rkey_unpacks;        /* remote rbuf rkeys unpacked */
    uint64_t rkey_unpack_hits;    /* remote rbuf rkeys found unpacked */
    uint64_t staged_puts;         /* puts (stores where mapped) into a
                                     peer's group buffer */
    uint64_t zcopy_puts;          /* puts straight into a peer's rbuf */
    uint64_t colls_by_algo[SUCG_ALLGATHER_LAST];
    uint64_t reg_failures;        /* rbuf registrations that failed */
    uint64_t tagged_rx_steps;     /* zero-copy steps received by tag (the
                                     group takes them so, SUCG_ZCOPY_STEP,
                                     or rbuf could not be registered) */
    uint64_t tagged_tx_steps;     /* ... sent by tag */
    uint64_t am_steps;            /* staged steps sent as one active message */
    uint64_t am_dropped;          /* step messages that failed the check */
    uint64_t tail_steps;          /* staged steps sent as one put with the
                                     flag last (SUCG_STAGED_STEP=tail) */
} sucg_stats_t;

void sucg_stats_get(sucg_context_h context, sucg_stats_t *stats);

#ifdef __cplusplus
}
#endif

#endif
