/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Sizes of the per-peer objects of srqud, ud_verbs and rc_verbs in the UCX
 * build at hand, for the memory model (contrib/bench/mem_model.py). Built
 * with UCX's internal headers, like the srqud module.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/ib/srqud/srqud_ep.h>
#include <uct/ib/ud/verbs/ud_verbs.h>
#include <uct/ib/rc/verbs/rc_verbs.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_user_rxe.h>
#include <stdio.h>

int main(void)
{
    printf("srqud_ep %zu\n", sizeof(uct_srqud_ep_t));
    printf("srqud_send_desc %zu\n", sizeof(uct_srqud_send_desc_t));
    printf("srqud_recv_desc %zu\n", sizeof(uct_srqud_recv_desc_t));
    printf("srqud_peer_key %zu\n", sizeof(uct_srqud_peer_key_t));
    printf("ud_verbs_ep %zu\n", sizeof(uct_ud_verbs_ep_t));
    printf("rc_verbs_ep %zu\n", sizeof(uct_rc_verbs_ep_t));
    /* Soft-RoCE's send work queue entry; the kernel appends its gather list
     * or inline data, max(max_sge * 16, max_inline) bytes */
    printf("rxe_send_wqe %zu\n", sizeof(struct rxe_send_wqe));
    return 0;
}
