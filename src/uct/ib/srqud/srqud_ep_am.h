/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Active messages of an endpoint (srqud_ep_am.c): UCT operations.
 */

#ifndef UCT_SRQUD_EP_AM_H_
#define UCT_SRQUD_EP_AM_H_

#include "srqud_ep.h"


ucs_status_t uct_srqud_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t hdr,
                                   const void *buffer, unsigned length);

ucs_status_t uct_srqud_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                       const uct_iov_t *iov, size_t iovcnt);

ssize_t uct_srqud_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                              uct_pack_callback_t pack_cb, void *arg,
                              unsigned flags);

ucs_status_t uct_srqud_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                   const void *header, unsigned header_length,
                                   const uct_iov_t *iov, size_t iovcnt,
                                   unsigned flags, uct_completion_t *comp);



#endif
