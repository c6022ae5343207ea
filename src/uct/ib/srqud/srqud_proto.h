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

#include "srqud_types.h"


extern const uct_srqud_proto_t uct_srqud_proto;


#endif
