/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * What the parts of srqud_ucp_check share: a side of a check (its UCP
 * context, worker and ep, and the socket to the other side), the options,
 * and the checks themselves. See srqud_ucp_check.c for what each check does.
 */

#ifndef SRQUD_UCP_CHECK_H_
#define SRQUD_UCP_CHECK_H_

#include <ucp/api/ucp.h>

#include <stddef.h>
#include <stdint.h>


/* The command line; the checks read it, main() sets it */
typedef struct {
    int      rounds;     /* RMA rounds per check */
    size_t   largest;    /* largest RMA operation */
    unsigned bound;      /* deliveries one ucp_worker_progress may make */
    int      passive;    /* the target does not progress during RMA */
    int      timeout;    /* seconds a check may take */
    int      init_threads;   /* threads: the initiator's threads */
    int      target_threads; /* threads: the target's */
    int      mt_context;     /* the side's context serves several workers */
} check_opt_t;

extern check_opt_t opt;


/* Everything a check's side needs */
typedef struct {
    int           fd;          /* socketpair to the other side */
    int           is_target;
    int           err_peer;    /* the peer may fail: PEER error mode */
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    int           ep_failed;   /* the ep's error handler ran */
    ucs_status_t  ep_status;
    unsigned      abandoned;   /* requests given up on, still in UCX */
} side_t;


/* A side's verdict, which is also its exit status */
enum {
    CHECK_PASS       = 0,
    CHECK_FAIL       = 1,
    CHECK_DIED       = 3,  /* die(): the side could not go on */
    CHECK_DATA_ERROR = 4   /* received wrong data: a failure even in checks
                            * where the target's end tells nothing else */
};


/* How the RMA of a round is completed */
enum {
    FLUSH_WORKER,
    FLUSH_EP,
    FLUSH_NONE_EXPLICIT,
    FLUSH_CLOSE
};


/* link_down's modes: the link goes down; the target is killed and its
 * device removed (target_gone) */
enum {
    LINK_DOWN,
    LINK_TARGET_GONE
};


/* One RMA operation of a round, relative to the target's region */
typedef struct {
    size_t offset;
    size_t length;
} rma_op_t;


/* Memory the target exposes for a round */
typedef struct {
    void      *base;
    size_t    length;
    ucp_mem_h memh;
} region_t;


/* no callback, no flags: the caller waits on the request */
extern const ucp_request_param_t null_param;


/* ---- ucp_check_side.c: the two sides, their socket and their data ---- */

void die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
/* A side's die() says why in its check's line, too: @a detail */
void die_into(char *detail, size_t max);

void oob_send(side_t *s, const void *buf, size_t len);
void oob_recv(side_t *s, void *buf, size_t len);
void oob_send_u64(side_t *s, uint64_t v);
uint64_t oob_recv_u64(side_t *s);
void oob_wait(side_t *s, int progress);
int oob_ready(side_t *s);

double now_sec(void);
double check_deadline(void);
ucs_status_t wait_req(side_t *s, void *req);
ucs_status_t wait_req_until(side_t *s, void *req, double deadline);
int wait_ep_error(side_t *s, double deadline);

void side_init(side_t *s, int fd, int is_target, int err_peer);
void side_fini(side_t *s);
void side_barrier(side_t *s);
void side_fence(side_t *s);
void sync_reset(void);

uint64_t rng_next(uint64_t *state);
void fill_random(void *buf, size_t len, uint64_t seed);
int compare(const uint8_t *got, const uint8_t *want, size_t len,
            char *detail, size_t max);


/* ---- the checks: each side of a check runs the same function ----------
 * @a mode is a FLUSH_* for put and get, unused by the others; the result is
 * a CHECK_* verdict, @a detail says why (at most @a max bytes) */

typedef int (*check_fn_t)(side_t *s, int mode, char *detail, size_t max);

/* ucp_check_rma.c */
int check_put(side_t *s, int mode, char *detail, size_t max);
int check_get(side_t *s, int mode, char *detail, size_t max);
int check_fence(side_t *s, int mode, char *detail, size_t max);
int check_peer_failure(side_t *s, int mode, char *detail, size_t max);
int check_peer_kill(side_t *s, int mode, char *detail, size_t max);
int check_force_close(side_t *s, int mode, char *detail, size_t max);

/* ucp_check_msg.c */
int check_tag(side_t *s, int mode, char *detail, size_t max);
int check_am(side_t *s, int mode, char *detail, size_t max);
int check_stream(side_t *s, int mode, char *detail, size_t max);
int check_progress_bound(side_t *s, int mode, char *detail, size_t max);
int check_link_down(side_t *s, int mode, char *detail, size_t max);

/* ucp_check_threads.c */
int check_threads(side_t *s, int mode, char *detail, size_t max);

#endif
