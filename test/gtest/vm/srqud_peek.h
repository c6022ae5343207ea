/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * State of an srqud interface that UCT does not show, read by device tests
 * that play a host on the path (one that saw a transfer's control packets).
 * In C: srqud's internal headers are C, not C++.
 */

#ifndef SRQUD_TEST_PEEK_H_
#define SRQUD_TEST_PEEK_H_

#include <uct/api/uct_def.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a chunk needs to land in a zero-copy transfer this side receives */
typedef struct srqud_peek_pool_qp {
    uint32_t qp_num;
    uint32_t qkey;    /* this transfer's */
    uint8_t  gen;     /* the tag in the chunks' immediate */
    uint32_t chunk;   /* chunk size */
} srqud_peek_pool_qp_t;

/* The first pool QP of @a iface bound to a transfer; 0 if there is none */
int srqud_peek_busy_pool_qp(uct_iface_h iface, srqud_peek_pool_qp_t *info);

/* Could @a ep send a packet now: free send queue slots and an open window
 * (what a pending_add that answers BUSY finds) */
int srqud_peek_ep_can_send(uct_ep_h ep);

/* The send descriptor pool of @a iface: chunks allocated, elements in them */
void srqud_peek_tx_pool(uct_iface_h iface, unsigned *chunks, unsigned *elems);

/* Into @a buf, the names of what keeps the next progress call from being
 * a quiet one (srqud_progress.c, uct_srqud_progress_quiet) */
void srqud_peek_quiet_blockers(uct_iface_h iface, char *buf, size_t max);

#ifdef __cplusplus
}
#endif

#endif
