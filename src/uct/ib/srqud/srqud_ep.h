/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * srqud endpoint: an address handle (shared through the interface's cache)
 * and the remote QP number. It holds no receive resources, so memory per
 * peer stays a few dozen bytes.
 */

#ifndef UCT_SRQUD_EP_H_
#define UCT_SRQUD_EP_H_

#include "srqud_iface.h"


typedef struct uct_srqud_ep {
    uct_base_ep_t            super;
    struct ibv_ah            *ah;
    uint32_t                 dest_qpn;
    uint32_t                 dest_ep_id;
    uint16_t                 psn;          /* next psn to send */
    ucs_arbiter_group_t      arb_group;    /* pending requests */
} uct_srqud_ep_t;


UCS_CLASS_DECLARE_NEW_FUNC(uct_srqud_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_srqud_ep_t, uct_ep_t);


ucs_status_t uct_srqud_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t hdr,
                                   const void *buffer, unsigned length);

ucs_status_t uct_srqud_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                       const uct_iov_t *iov, size_t iovcnt);

ssize_t uct_srqud_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                              uct_pack_callback_t pack_cb, void *arg,
                              unsigned flags);

ucs_status_t uct_srqud_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                      unsigned flags);

void uct_srqud_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                                void *arg);

ucs_status_t uct_srqud_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp);

ucs_arbiter_cb_result_t
uct_srqud_ep_dispatch_pending(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                              ucs_arbiter_elem_t *elem, void *arg);

#endif
