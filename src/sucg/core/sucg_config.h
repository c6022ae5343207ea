/*
 * SUCG_* environment configuration. Parsing is separated from getenv() so
 * the unit tests can feed values directly.
 */
#ifndef SUCG_CONFIG_H_
#define SUCG_CONFIG_H_

#include "sucg/api/sucg.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    SUCG_RMA_ORDERING_AUTO,   /* fence for staged steps, flush for zero-copy */
    SUCG_RMA_ORDERING_FENCE,
    SUCG_RMA_ORDERING_FLUSH
} sucg_rma_ordering_t;

typedef enum {
    SUCG_STAGED_STEP_AM,      /* one active message, where enabled */
    SUCG_STAGED_STEP_PUT,     /* put, fence, flag put */
    SUCG_STAGED_STEP_TAIL     /* one put whose last 8 bytes are the flag
                                 (allgather_tail.c): only where a put's
                                 bytes land in order, which UCP does not
                                 promise; must be the same on every rank */
} sucg_staged_step_t;

/* How a zero-copy step travels (SUCG_ZCOPY_STEP). Where the transport
 * carries a put as messages the peer's CPU applies (srqud, tcp), UCP's
 * tagged rendezvous moves the same bytes with fewer round trips than a
 * descriptor, a put, a flush and a flag (docs/notes/collectives-
 * measurements.md); over RDMA hardware and shared memory the put wins. */
typedef enum {
    SUCG_ZCOPY_STEP_AUTO,     /* tag where some rank's puts are messages */
    SUCG_ZCOPY_STEP_PUT,      /* put into the peer's rbuf, flush, flag */
    SUCG_ZCOPY_STEP_TAG       /* tagged send into the posted receive */
} sucg_zcopy_step_t;

/* SUCG_ALLGATHER_ZCOPY_THRESH=auto: the threshold follows how a group's
 * staged steps go. One active message carries a step of up to 32 KB in
 * less time than the descriptor, put and flush of a zero-copy step, over
 * srqud, rc_verbs and shared memory alike (docs/notes/collectives-
 * measurements.md); a put, a fence and a flag keep the measured 4 KB. */
#define SUCG_ZCOPY_THRESH_AUTO  SIZE_MAX
#define SUCG_ZCOPY_THRESH_AM    32768
#define SUCG_ZCOPY_THRESH_PUT   4096

typedef struct sucg_config {
    sucg_allgather_algo_t allgather_algo;      /* SUCG_ALLGATHER_ALGO */
    size_t                zcopy_thresh;        /* SUCG_ALLGATHER_ZCOPY_THRESH,
                                                  or SUCG_ZCOPY_THRESH_AUTO */
    size_t                ring_min_bytes;      /* SUCG_RING_MIN_BYTES */
    unsigned              ring_min_ranks;      /* SUCG_RING_MIN_RANKS */
    size_t                group_buffer_size;   /* SUCG_GROUP_BUFFER_SIZE */
    unsigned              rcache_max_entries;  /* SUCG_RCACHE_MAX_ENTRIES */
    size_t                rcache_max_bytes;    /* SUCG_RCACHE_MAX_BYTES */
    sucg_rma_ordering_t   rma_ordering;        /* SUCG_RMA_ORDERING */
    sucg_staged_step_t    staged_step;         /* SUCG_STAGED_STEP */
    sucg_zcopy_step_t     zcopy_step;          /* SUCG_ZCOPY_STEP */
    unsigned              fault_reg_fail;      /* SUCG_FAULT_REG_FAIL, % */
} sucg_config_t;

typedef const char *(*sucg_config_getenv_t)(const char *name, void *arg);

/*
 * Fill @a config from the variables returned by @a get (NULL: unset, use
 * the default). On a bad value writes a message naming the variable into
 * @a err and returns UCS_ERR_INVALID_PARAM.
 */
ucs_status_t sucg_config_parse(sucg_config_t *config, sucg_config_getenv_t get,
                               void *arg, char *err, size_t err_len);

/* From the process environment; prints the error to stderr */
ucs_status_t sucg_config_read(sucg_config_t *config);

void sucg_config_dump(const sucg_config_t *config, FILE *stream);

/* The staged/zero-copy threshold of a group whose staged steps are one
 * message each (@a one_msg: active messages or tail puts, agreed by every
 * rank at creation) or a put and a flag: every rank computes the same */
size_t sucg_config_zcopy_thresh(const sucg_config_t *config, int one_msg);

/* "auto", "ring", ...; NULL if out of range */
const char *sucg_config_algo_name(sucg_allgather_algo_t algo);

/*
 * The AUTO rule: ring when each rank contributes at least ring_min_bytes
 * and there are at least ring_min_ranks ranks, recursive doubling otherwise.
 * Depends only on the configuration, count and size: every rank decides the
 * same.
 */
sucg_allgather_algo_t sucg_config_select(const sucg_config_t *config,
                                         sucg_allgather_algo_t requested,
                                         size_t count, int size);

#ifdef __cplusplus
}
#endif

#endif
