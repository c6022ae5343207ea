/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The receive pool: a Shared Receive Queue, the registered buffers that
 * feed it and their accounting, the low watermark and the LIMIT refill.
 * An interface has its own pool, or (UCX_SRQUD_SHARE=srq) shares one with
 * every interface of its md on the same port: each worker's UD QP is
 * attached to that one SRQ, so the receive memory of a process is flat in
 * its threads as it already is in its peers. A packet completes on the CQ
 * of the QP it arrived on, so receives stay on their own worker.
 *
 * Locking: the pool's lock covers its free list, its counters and posting
 * on the SRQ. Interfaces keep a small cache of free buffers of their own
 * (srqud_rx.c) and come here in batches, so a buffer released by a worker
 * takes no lock shared with the other workers.
 */

#ifndef UCT_SRQUD_RXPOOL_H_
#define UCT_SRQUD_RXPOOL_H_

#include "srqud_md.h"

#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue_types.h>
#include <ucs/time/time.h>
#include <ucs/type/spinlock.h>
#include <infiniband/verbs.h>


/* Receive descriptor, the head of each receive buffer. Layout:
 *
 *  desc                       rx_headroom_offset        rx_payload_offset
 *  |                          |                         |
 *  +--------------------------+----------+--------------+-----------------+
 *  | uct_srqud_recv_desc_t    | ...      | GRH | neth   | payload         |
 *  +--------------------------+----------+--------------+-----------------+
 *                                        ^ rx_hdr_offset: receive SGE start
 *
 * The GRH and network header are parsed before the AM handler runs; after
 * that UCP may use the same bytes as its headroom (uct_recv_desc_t pointer
 * and user headroom end exactly at the payload). */
typedef struct uct_srqud_recv_desc {
    ucs_queue_elem_t         queue;        /* in iface->async.rx_q; free:
                                              the pool's free list */
    struct uct_srqud_ep      *ep;          /* queued: its active ep, or NULL
                                              for an AM to deliver */
    uint32_t                 payload_len;  /* queued AM */
    uint32_t                 lkey;
} uct_srqud_recv_desc_t;


/* What the buffers look like and how the SRQ is kept: interfaces share a
 * pool only when they agree on all of it (the workers of one UCP context
 * do: same settings, same headroom) */
typedef struct uct_srqud_rxpool_params {
    size_t                   elem_size;      /* descriptor to payload end */
    size_t                   payload_offset; /* from the descriptor */
    size_t                   align;          /* of the payload */
    unsigned                 hdr_offset;     /* receive SGE start */
    unsigned                 post_len;       /* receive SGE length */
    unsigned                 size;           /* SRQ_SIZE: posted at first */
    unsigned                 max_size;       /* SRQ_MAX_SIZE */
    unsigned                 cq_len;         /* each user's receive CQ */
    unsigned                 limit;          /* armed watermark, 0: off */
    unsigned                 grow;           /* buffers per later slab */
    unsigned long            max_bufs;       /* buffers in all, at most */
} uct_srqud_rxpool_params_t;


typedef struct uct_srqud_rxpool {
    ucs_list_link_t          list;         /* md->rxpools, when listed */
    uct_srqud_md_t           *md;
    uint8_t                  port_num;
    int                      listed;       /* on md->rxpools for other
                                              interfaces to join (SHARE=
                                              srq); whether any did is
                                              uct_srqud_rxpool_is_shared */
    unsigned                 users;        /* interfaces attached */
    uct_srqud_rxpool_params_t params;
    struct ibv_srq           *srq;
    ucs_spinlock_t           lock;
    ucs_queue_head_t         free;         /* uct_srqud_recv_desc_t */
    ucs_list_link_t          slabs;        /* registered memory */
    /* Every buffer is in exactly one place:
     *   allocated == nfree + posted + lent */
    unsigned long            allocated;
    unsigned long            nfree;
    unsigned                 posted;       /* on the SRQ, completion not
                                              polled by an interface */
    unsigned long            lent;         /* polled or taken by interfaces,
                                              not given back */
    unsigned long            lost;         /* not given back by an
                                              interface that closed */
    unsigned                 target;       /* buffers to keep posted */
    unsigned                 limit;        /* armed SRQ limit, 0: off */
    ucs_time_t               last_limit_event;
    unsigned long            limit_events;
    unsigned long            refilled;
    unsigned long            grows;
    double                   t_wakeup;     /* measured by the first user */
} uct_srqud_rxpool_t;


/* A snapshot of a pool, for the interface's counters */
typedef struct uct_srqud_rxpool_state {
    unsigned                 users;
    unsigned                 posted;
    unsigned                 target;
    unsigned                 limit;
    unsigned long            allocated;
    unsigned long            nfree;
    unsigned long            lent;
    unsigned long            lost;
    unsigned long            limit_events;
    unsigned long            refilled;
    unsigned long            grows;
} uct_srqud_rxpool_state_t;


/**
 * The pool of @a md's port @a port_num: with @a share, the one its other
 * interfaces use when the parameters agree, else a new one (posted to its
 * size, armed, its LIMIT events routed from the md). @a measure_wakeup is
 * called, and @a params->limit computed from it, only for a new pool.
 */
ucs_status_t uct_srqud_rxpool_attach(uct_srqud_md_t *md, uint8_t port_num,
                                     int share,
                                     const uct_srqud_rxpool_params_t *params,
                                     unsigned (*limit_cb)(void *arg,
                                                          double *t_wakeup),
                                     void *limit_arg,
                                     uct_srqud_rxpool_t **pool_p);

/**
 * An interface leaves: @a taken is what it still holds of the pool after
 * giving back all it could (a user's descriptor not released). The last
 * user destroys the SRQ and the buffers.
 */
void uct_srqud_rxpool_detach(uct_srqud_rxpool_t *pool, unsigned long taken);

/* Up to @a max free buffers for an interface (lent to it) */
unsigned uct_srqud_rxpool_get(uct_srqud_rxpool_t *pool,
                              uct_srqud_recv_desc_t **descs, unsigned max);

/* Buffers an interface gives back */
void uct_srqud_rxpool_put(uct_srqud_rxpool_t *pool,
                          uct_srqud_recv_desc_t **descs, unsigned count);

/**
 * Post an interface's buffers on the SRQ, at most while fewer than the
 * target are posted. Returns how many went; the rest stay the caller's.
 */
unsigned uct_srqud_rxpool_post(uct_srqud_rxpool_t *pool,
                               uct_srqud_recv_desc_t **descs, unsigned count);

/* An interface polled @a count completions: those buffers are lent to it */
void uct_srqud_rxpool_polled(uct_srqud_rxpool_t *pool, unsigned count);

/* How many buffers the SRQ lacks to reach its target */
static UCS_F_ALWAYS_INLINE unsigned
uct_srqud_rxpool_missing(const uct_srqud_rxpool_t *pool)
{
    /* read without the lock: a stale value posts a batch early or late */
    unsigned posted = __atomic_load_n(&pool->posted, __ATOMIC_RELAXED);
    unsigned target = __atomic_load_n(&pool->target, __ATOMIC_RELAXED);

    return (posted < target) ? (target - posted) : 0;
}

void uct_srqud_rxpool_query(uct_srqud_rxpool_t *pool,
                            uct_srqud_rxpool_state_t *state);

/* Whether other interfaces receive into this pool too (read without the
 * lock, on the receive path) */
static UCS_F_ALWAYS_INLINE int
uct_srqud_rxpool_is_shared(const uct_srqud_rxpool_t *pool)
{
    return __atomic_load_n(&pool->users, __ATOMIC_RELAXED) > 1;
}

#endif
