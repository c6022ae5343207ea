/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * A fake verbs device for the whole-path fuzz target (fuzz_path.c): the
 * libibverbs entry points srqud calls, defined here and linked into the
 * fuzz binary instead of libibverbs, over an in-memory device of one RoCE
 * port. Every scatter/gather entry srqud posts is checked against the
 * memory its lkey was registered for (abort() otherwise); a send goes on
 * the wire when the target completes it (the device reads the memory
 * then, inline data excepted) and is recorded for the target to answer;
 * the target delivers packets into posted receives with fv_deliver().
 */

#ifndef SRQUD_FUZZ_FAKE_VERBS_H_
#define SRQUD_FUZZ_FAKE_VERBS_H_

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#define FV_DEV_NAME       "fake0"
#define FV_PORT_MTU       1024          /* IBV_MTU_1024 */
#define FV_GRH_LEN        40
#define FV_MAX_PKT        FV_PORT_MTU   /* a UD payload is at most the MTU */
#define FV_SEND_LOG       512           /* control sends remembered */
#define FV_CHUNK_LOG      1024          /* chunk sends remembered */

/* The port GID srqud picks (index 1 of the table: ::ffff:10.0.0.1) */
extern const uint8_t fv_local_gid[16];

/* A send srqud posted (IBV_WR_SEND on its interface QP, or a zero-copy
 * chunk: IBV_WR_SEND_WITH_IMM on its chunk QP), as the wire would carry it */
typedef struct fv_send {
    uint64_t seq;          /* posting order, from 1 */
    uint32_t src_qpn;      /* srqud's QP */
    uint8_t  dgid[16];     /* from the address handle */
    uint32_t dest_qpn;
    uint32_t qkey;
    int      with_imm;
    uint32_t imm;          /* host order */
    uint64_t addr;         /* chunk sends: where the single SGE read */
    uint32_t len;          /* bytes sent */
    uint8_t  data[FV_MAX_PKT]; /* control sends only */
} fv_send_t;

/* Per input: forget every object (the previous input destroyed them) and
 * every record */
void fv_reset(void);

/* Live device objects (QPs, CQs, SRQs, MRs, AHs, PDs, channels,
 * contexts): 0 once srqud has closed everything */
unsigned fv_live_objects(char *what, size_t max);

/* Memory of the target's own (user) regions: the device reads and writes
 * them without the sanitizer (pinned pages: the user may have unmapped,
 * i.e. poisoned, a region whose MR srqud still holds) */
void fv_user_region(const void *addr, size_t len);

/* Sends recorded since fv_reset(): control sends and chunk sends have
 * their own logs; index from 0, the oldest kept first */
uint64_t fv_send_total(void);            /* control sends posted so far */
const fv_send_t *fv_send_get(uint64_t seq); /* NULL if too old or unknown */
uint64_t fv_chunk_total(void);
const fv_send_t *fv_chunk_get(uint64_t seq);

/* Complete the oldest @a n send work requests of the QP @a qpn (srqud's
 * interface QP or chunk QP) with @a status; a failed one moves the QP to
 * the error state, which flushes the rest. Returns how many completed. */
unsigned fv_complete_sends(uint32_t qpn, unsigned n,
                           enum ibv_wc_status status);
/* The QPs with send work requests waiting, at most @a max */
unsigned fv_send_qps(uint32_t *qpns, unsigned max);
/* The QPs with receives of their own posted (srqud's pool QPs) */
unsigned fv_recv_qps(uint32_t *qpns, unsigned max);
/* Send work requests waiting for completion on @a qpn */
unsigned fv_sends_pending(uint32_t qpn);

/* Deliver a packet to the QP @a dest_qpn as the fabric would: the oldest
 * receive of its SRQ (or of its own receive queue) gets a GRH with
 * @a src_gid and the packet, and its CQ a completion. @a grh_mode 0: an
 * IPv6 GRH, 1: a GRH that does not parse, 2: no GRH flag.
 * Returns 0, or -1 when the device drops it (no such QP, wrong Q_Key, no
 * receive posted). */
int fv_deliver(uint32_t dest_qpn, const uint8_t *src_gid, uint32_t src_qpn,
               uint32_t qkey, int with_imm, uint32_t imm, int grh_mode,
               const void *data, size_t len);

/* Receives posted on @a qpn (its SRQ's for an SRQ QP) */
unsigned fv_recvs_posted(uint32_t qpn);
/* Completions waiting in the receive CQ of @a qpn */
unsigned fv_recv_cq_count(uint32_t qpn);
/* Does @a qpn exist, and with which Q_Key */
int fv_qp_exists(uint32_t qpn, uint32_t *qkey);

/* A hook the target sets: every chunk receive (pool QPs) srqud posts and
 * every chunk send, to check that they stay inside a transfer's buffer.
 * Returns 0 to accept; otherwise the fake aborts. */
typedef int (*fv_range_check_t)(int is_send, uint64_t addr, uint64_t len);
void fv_set_range_check(fv_range_check_t cb);

/* Counters of the fake, for the target's invariants */
typedef struct fv_stats {
    unsigned long srq_limit_events;
    unsigned long recv_len_errors;
} fv_stats_t;
void fv_get_stats(fv_stats_t *s);

#endif
