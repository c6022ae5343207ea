/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * What the files of fuzz_path (the libFuzzer target over srqud's whole
 * receive path, fuzz_path.c) share: its settings, types and state.
 *
 *   fuzz_path.c            the input, srqud's clock and randomness, the
 *                          completions, the invariants and a run
 *   fuzz_path_peers.c      the fake peers' packets and their view of (and
 *                          answers to) srqud's sends
 *   fuzz_path_peers_req.c  the peers' own requests to srqud
 *   fuzz_path_user.c       the user's operations
 */

#ifndef FUZZ_PATH_H_
#define FUZZ_PATH_H_

#include "fake_verbs.h"

#include <uct/api/uct.h>
#include <uct/api/v2/uct_v2.h>
#include <ucs/async/async.h>
#include <ucs/config/global_opts.h>
#include <ucs/time/time.h>
#include <uct/ib/srqud/srqud_def.h>
#include <uct/ib/srqud/srqud_stats.h>

#include <ucs/sys/math.h>
#include <sanitizer/asan_interface.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define CHECK(_cond) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "fuzz_path: %s:%d: %s\n", __FILE__, __LINE__, \
                    #_cond); \
            abort(); \
        } \
    } while (0)

#define TRACE(...) \
    do { \
        if (G.trace) { \
            fprintf(stderr, "  " __VA_ARGS__); \
            fputc('\n', stderr); \
        } \
    } while (0)

#define FAIL(...) \
    do { \
        fprintf(stderr, "fuzz_path: " __VA_ARGS__); \
        fputc('\n', stderr); \
        abort(); \
    } while (0)


/* Settings srqud runs with (small, so that the bounds are reachable) */
#define PASSIVE_MAX      6
#define REFUSALS_MAX     3
#define ZCOPY_QPS        2
#define ZCOPY_RQ_DEPTH   16
#define CHUNK            FV_PORT_MTU
#define ZCOPY_THRESH     (32 * 1024)

#define NREGIONS         5
#define REGION_SIZE      (64 * 1024)
#define NPEERS           4
#define NCONNS           2          /* a peer's connections to srqud */
#define MAX_EPS          6          /* srqud's active eps (the user's) */
#define MAX_SCONN        24         /* srqud's connections, seen by peers */
#define MAX_COMPS        256
#define MAX_JOBS         8          /* chunk sends of peers */
#define MAX_SINKS        8          /* peers sinking srqud's puts */
#define MAX_KEPT         16         /* AM descriptors the user keeps */
#define MAX_PENDING      8
#define MAX_CHUNKS       64         /* REGION_SIZE / CHUNK */
#define EP_ID_NONE       UCT_SRQUD_EP_ID_NONE


/* ------------------------------------------------------------------------
 * The input
 */

typedef struct {
    const uint8_t *p;
    size_t        left;
} input_t;


/* ------------------------------------------------------------------------
 * The state of a run
 */

/* The bytes of a peer's memory at @a addr (salted per writer): what an
 * honest peer sends */
static inline uint8_t pattern(uint64_t addr, uint32_t salt)
{
    uint64_t x = (addr + salt) * 0x9e3779b97f4a7c15ull;

    return (uint8_t)(x >> 56);
}


enum { COMP_FREE, COMP_PENDING, COMP_DONE, COMP_UNUSED };

enum { OP_AM_ZCOPY, OP_PUT, OP_GET, OP_FLUSH, OP_IFLUSH, OP_DEREG };

typedef struct {
    uct_completion_t uc;
    int              state;
    int              kind;       /* OP_xx */
    int              ep;         /* slot, -1: none */
    int              region;     /* local buffer: -1 none */
    uint64_t         addr, len;  /* local buffer */
    uint64_t         raddr;      /* gets: the peer's memory */
    unsigned long    lies_at;    /* dishonest events when issued */
    ucs_status_t     status;
} fz_comp_t;


/* srqud's connection to a peer (an active ep of its), as the peer sees it */
typedef struct {
    int              used;
    int              peer;
    uint32_t         ep_id, token, conn_sn;
    uint32_t         my_id;      /* the peer's passive ep id for it */
    uint16_t         expected;   /* the peer's receiver */
    uint64_t         held[4];    /* psns held ahead of a gap */
    uint64_t         held_seq[256];
    uint32_t         refusal_id;
} sconn_t;


/* A peer's connection to srqud (srqud has a passive ep for it) */
typedef struct {
    uint32_t         my_id;      /* the peer's active ep id */
    uint32_t         token, conn_sn;
    uint16_t         next_psn;
    uint32_t         srqud_id;   /* srqud's passive ep id, from its CREP */
    int              creq_sent;
    uint32_t         next_xfer;
} pconn_t;


typedef struct {
    uint8_t          gid[16];
    uint32_t         qpn, pool_qpn, chunk_qpn;
    uint32_t         pool_qkey;
    pconn_t          conn[NCONNS];
    uint32_t         refusal_ids;
} peer_t;


/* A peer sends chunks to one of srqud's pool QPs: a get srqud issued
 * (answered with ZFIN from the peer's passive side), or a put the peer
 * issued, after srqud's ZCTS (ZFIN from the peer's connection) */
typedef struct {
    int              used;
    int              peer;
    int              is_put;     /* the peer's put (else srqud's get) */
    int              sc;         /* get: the sconn; put: the peer's conn */
    uint32_t         xfer_id;
    uint16_t         round;
    uint32_t         dest_qpn, qkey;
    uint8_t          tag;
    uint64_t         base, length;
    uint32_t         chunk;
    uint32_t         list[MAX_CHUNKS * 2];
    uint32_t         count, pos;
    uint32_t         salt;
} job_t;


/* A peer that sinks srqud's put_zcopy */
typedef struct {
    int              used;
    int              peer;
    int              sc;
    uint32_t         xfer_id;
    uint16_t         round;
    uint64_t         length;
    uint32_t         chunk, tag;
    uint64_t         got[MAX_CHUNKS / 64 + 1];
} sink_t;


typedef struct {
    uct_pending_req_t req;
    int               ep;        /* -1: free */
} fz_pending_t;


typedef struct {
    uct_mem_h        memh;
    uint64_t         rkey;
    unsigned         off, len;   /* the registered part */
    int              poisoned;
    unsigned         access;
} region_t;


/* srqud's memory: the user's regions (fuzz_path.c) */
extern uint8_t regions_mem[NREGIONS][REGION_SIZE]
    __attribute__((aligned(4096)));
extern uint8_t shadow[2][REGION_SIZE];   /* R0, R1: never written by peers */


/* The state of the run (fuzz_path.c) */
struct fz_state {
    /* once */
    uct_component_h       component;
    uct_md_config_t       *md_config[2];   /* rcache try / no */
    uct_iface_config_t    *iface_config;
    /* per input */
    ucs_async_context_t   *async;
    uct_worker_h          worker;
    uct_md_h              md;
    uct_iface_h           iface;
    uct_iface_attr_t      attr;
    uint32_t              qpn;           /* srqud's interface QP */
    int                   closing;
    struct {
        uct_ep_h          ep;
        int               peer;
        int               destroyed;     /* completions must not come */
        int               in_destroy;
    } eps[MAX_EPS];
    fz_comp_t             comps[MAX_COMPS];
    unsigned              ncomps;
    sconn_t               sconn[MAX_SCONN];
    peer_t                peers[NPEERS];
    job_t                 jobs[MAX_JOBS];
    sink_t                sinks[MAX_SINKS];
    region_t              reg[NREGIONS];
    void                  *kept[MAX_KEPT];
    unsigned              nkept;
    int                   keep_descs;
    fz_pending_t          pending[MAX_PENDING];
    uint64_t              seen_sends, seen_chunks;
    uint64_t              answered[FV_SEND_LOG / 64]; /* by seq % LOG */
    unsigned long         lies;          /* dishonest packets so far */
    unsigned long         am_bytes;
    unsigned              err_cbs;
    uint64_t              next_raddr;
    struct {
        uint64_t          addr, len;
        int               is_get;    /* a peer's ZGET (else ZPUT) */
    } named[64];                     /* what peers' requests named */
    unsigned              nnamed;
    int                   trace;         /* FUZZ_PATH_TRACE */
};

extern struct fz_state G;


/* fuzz_path.c */
uint8_t in8(input_t *in);
uint16_t in16(input_t *in);
uint32_t in32(input_t *in);
fz_comp_t *comp_new(int kind, int ep);
void comp_returned(fz_comp_t *c, ucs_status_t status);
int region_busy(int r);
void named_add(uint64_t addr, uint64_t len, int is_get);

/* fuzz_path_peers.c */
void neth_mutate(uct_srqud_neth_t *n, uint8_t m);
size_t neth_fill(uint8_t *pkt, uint8_t flags, uint8_t ctl,
                 uint8_t am_id, uint32_t dest, uint32_t src,
                 uint16_t psn, uint16_t ack_psn, uint32_t token);
void send_to_srqud(int k, const uint8_t *pkt, size_t len);
void peer_receive(int k, const fv_send_t *s, uint8_t m, uint8_t m2);
void observe(void);
const fv_send_t *inbox_pick(int k, unsigned sel);
void complete_sends(unsigned sel, unsigned n, enum ibv_wc_status st);
void job_send(job_t *j, unsigned n, uint8_t m);

/* fuzz_path_peers_req.c */
void peer_request(input_t *in);
void raw_packet(input_t *in);
void raw_chunk(input_t *in);

/* fuzz_path_user.c */
ucs_status_t am_handler(void *arg, void *data, size_t length,
                        unsigned flags);
ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status);
void release_kept(unsigned n);
int ep_slot(uint8_t sel);
void op_ep_create(uint8_t sel);
void op_ep_destroy(int s);
void op_rma(input_t *in);
void op_am(input_t *in);
void op_flush(input_t *in);
void op_pending(uint8_t sel);
void region_poison(int r, int on);
void op_mem(input_t *in);

#endif
