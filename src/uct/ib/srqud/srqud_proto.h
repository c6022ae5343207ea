/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The protocols above the endpoint (copy-path RMA: srqud_rma.c, zero-copy:
 * srqud_zcopy.c) as the endpoint sees them: one table that routes each
 * control opcode to its handler with the least length it needs, and the
 * hooks that progress, a flush and an ep's end call. The endpoint calls
 * them through iface->proto, never by name, so the protocols build on the
 * endpoint and not the other way round.
 */

#ifndef UCT_SRQUD_PROTO_H_
#define UCT_SRQUD_PROTO_H_

#include "srqud_zcopy.h"
#include "srqud_ep.h"


extern const uct_srqud_proto_t uct_srqud_proto;


/* Has a protocol anything to progress: a zero-copy transfer or job, or a
 * copy-path RMA operation. Checked inline by the progress loop, so that
 * a call with none (a ping-pong's) skips the table's indirect call. */
static UCS_F_ALWAYS_INLINE int uct_srqud_proto_pending(uct_srqud_iface_t *iface)
{
    return uct_srqud_zcopy_active(iface) || !ucs_list_is_empty(&iface->rma.ops);
}


#endif
