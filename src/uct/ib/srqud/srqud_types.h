/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The types the layers share: send descriptors, the keys of the
 * interface's tables, and the zero-copy engine's state, which the
 * interface holds. The interface's own state is srqud_iface.h's, an
 * endpoint's srqud_ep.h's.
 */

#ifndef UCT_SRQUD_TYPES_H_
#define UCT_SRQUD_TYPES_H_

#include "srqud_config.h"
#include "srqud_def.h"
#include "srqud_hash.h"
#include "srqud_md.h"
#include "srqud_stats.h"
#include "srqud_rel.h"
#include "srqud_rxpool.h"
#include "srqud_sr.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <ucs/datastruct/ptr_array.h>
#include <ucs/datastruct/list.h>
#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <ucs/time/time.h>
#include <ucs/type/spinlock.h>
#include <ucs/sys/sys.h>
#include <infiniband/verbs.h>
#include <string.h>


/* How many completions are stashed when event_arm finds some that arrived
 * before the CQ was armed */
#define UCT_SRQUD_STASH_MAX   16

/* Free receive buffers an interface keeps out of its pool (see rx.cache) */
#define UCT_SRQUD_RX_CACHE_MAX 64


/* Receive descriptors and their layout: srqud_rxpool.h */


enum {
    UCT_SRQUD_DESC_FLAG_IN_SQ     = UCS_BIT(0), /* posted, not completed */
    UCT_SRQUD_DESC_FLAG_IN_WINDOW = UCS_BIT(1)  /* kept for retransmission */
};


/* Send descriptor, followed by the packet (network header first). It is
 * freed when it is neither on the send queue nor in an ep's window.
 * am_zcopy: the packet in the descriptor is only the headers; the payload
 * stays in the user's memory, gathered by zsge[] on every (re)send, and the
 * user's completion runs when the peer has acknowledged it. */
typedef struct uct_srqud_send_desc {
    ucs_queue_elem_t         queue;   /* in tx.outstanding while IN_SQ */
    uct_srqud_tx_slot_t      slot;    /* in ep->tx.window while IN_WINDOW */
    uint64_t                 sn;      /* send sequence number of its WQE */
    uct_completion_t         *comp;   /* am_zcopy: user completion */
    ucs_status_t             comp_status; /* ... kept for the send's own
                                             completion (still IN_SQ) */
    uint32_t                 lkey;
    uint16_t                 length;  /* bytes in the descriptor, neth incl. */
    uint8_t                  flags;
    uint8_t                  num_zsge;/* am_zcopy: user memory entries */
    struct ibv_sge           zsge[UCT_SRQUD_MAX_IOV];
} uct_srqud_send_desc_t;


/* Identifies a remote sender: its port GID, QP and endpoint id */
typedef struct uct_srqud_peer_key {
    uint8_t                  gid[16];
    uint32_t                 qpn;
    uint32_t                 ep_id;
} UCS_S_PACKED uct_srqud_peer_key_t;

#define uct_srqud_peer_key_hash(_key) \
    uct_srqud_hash_fnv1a(&(_key), sizeof(_key))

#define uct_srqud_peer_key_equal(_a, _b) (!memcmp(&(_a), &(_b), sizeof(_a)))

typedef struct uct_srqud_ep   uct_srqud_ep_t;
typedef struct uct_srqud_xfer uct_srqud_xfer_t;

KHASH_INIT(uct_srqud_peer, uct_srqud_peer_key_t, uct_srqud_ep_t*, 1,
           uct_srqud_peer_key_hash, uct_srqud_peer_key_equal)


typedef struct uct_srqud_ah_key {
    uint8_t                  gid[16];
    uint16_t                 lid;
} UCS_S_PACKED uct_srqud_ah_key_t;

#define uct_srqud_ah_key_hash(_key) \
    uct_srqud_hash_fnv1a(&(_key), sizeof(_key))

#define uct_srqud_ah_key_equal(_a, _b) (!memcmp(&(_a), &(_b), sizeof(_a)))

/* One address handle per remote port, shared by all endpoints to it and
 * counted: one no endpoint uses waits among the last few unused ones (a
 * peer that comes back finds it), older ones are destroyed, so that
 * forged source addresses do not pile up handles */
typedef struct uct_srqud_ah_entry {
    struct ibv_ah            *ah;
    unsigned                 refcount;
    ucs_list_link_t          unused;  /* in iface->ah_unused, refcount 0 */
    uct_srqud_ah_key_t       key;
} uct_srqud_ah_entry_t;

KHASH_INIT(uct_srqud_ah, uct_srqud_ah_key_t, uct_srqud_ah_entry_t*, 1,
           uct_srqud_ah_key_hash, uct_srqud_ah_key_equal)


/*
 * A UD QP number has 24 bits. The sink sends its pool QP as (generation <<
 * 24 | QP number), and the source puts the generation in the top byte of
 * every chunk's immediate (the chunk number in the low 24): a chunk of an
 * earlier transfer that served the same pool QP (a late duplicate, a round
 * the sink ended early) would otherwise land in the next transfer's
 * receives as one of its own chunks, and its bytes in the wrong buffer.
 */
#define UCT_SRQUD_ZCOPY_TAG_SHIFT     24
#define UCT_SRQUD_ZCOPY_NUM_MASK      UCS_MASK(UCT_SRQUD_ZCOPY_TAG_SHIFT)


/* A receive QP of the pool, bound to one transfer at a time */
typedef struct uct_srqud_pool_qp {
    struct ibv_qp            *qp;
    struct ibv_cq            *cq;
    uct_srqud_xfer_t         *xfer;    /* NULL: free */
    uint8_t                  gen;      /* transfers it served: tags chunks */
    uint32_t                 qkey;     /* this transfer's, see zhdr.qkey */
    ucs_list_link_t          list;     /* in the free list */
} uct_srqud_pool_qp_t;


/* Chunks to send for one request, on the chunk send QP */
typedef struct uct_srqud_zsend_job {
    ucs_queue_elem_t         queue;
    struct ibv_ah            *ah;
    uint32_t                 dest_qpn;
    uint8_t                  tag;       /* the sink's pool QP generation */
    uint32_t                 qkey;      /* the sink's pool QP's Q_Key */
    uint32_t                 lkey;
    uint64_t                 base;      /* local address of chunk 0 */
    uint64_t                 length;    /* of the whole transfer */
    uint32_t                 chunk;     /* chunk size */
    uint32_t                 *list;     /* chunk numbers, in order */
    uint32_t                 count;
    uint32_t                 pos;       /* next to post */
    uint32_t                 unsignaled;/* posted since the last signaled */
    uint32_t                 in_flight; /* posted, completion not seen */
    uint8_t                  queued;    /* in zcopy.jobs: not all posted */
    /* all posted (the source then says ZFIN); all completed (the HCA is
     * done with the memory) */
    void                     (*posted)(uct_srqud_iface_t *iface,
                                       struct uct_srqud_zsend_job *job);
    void                     (*drained)(uct_srqud_iface_t *iface,
                                        struct uct_srqud_zsend_job *job);
    void                     *arg;
} uct_srqud_zsend_job_t;


/* A signaled chunk send and the unsignaled ones before it */
typedef struct uct_srqud_zmarker {
    uct_srqud_zsend_job_t    *job;
    uint32_t                 covered;
} uct_srqud_zmarker_t;


/* Zero-copy state of an interface (settings: iface->config.zcopy_*) */
typedef struct uct_srqud_zcopy {
    /* chunk send QP */
    struct ibv_qp            *sqp;
    struct ibv_cq            *scq;
    unsigned                 sq_available;
    ucs_queue_head_t         jobs;        /* waiting or posting */
    uct_srqud_zmarker_t      *markers;    /* ring: signaled sends in flight */
    unsigned                 marker_head;
    unsigned                 marker_count;
    unsigned                 user_jobs;   /* the user's puts sending */
    /* receive pool */
    uct_srqud_pool_qp_t      *pool;
    unsigned                 pool_created;
    unsigned                 pool_peak;   /* most created at once */
    ucs_list_link_t          pool_free;
    void                     *scratch;    /* GRH slot + a chunk of tail */
    struct ibv_mr            *scratch_mr;
    /* transfers (srqud_zcopy.c) */
    ucs_list_link_t          xfers;
    unsigned                 served;      /* of them, peers' (served here) */
    uint32_t                 next_id;
    uint32_t                 chunk;       /* path MTU */
    unsigned                 max_ranges;  /* per control packet */
} uct_srqud_zcopy_t;

#endif
