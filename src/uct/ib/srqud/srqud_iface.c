/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The interface: its creation from the layers below (device, receive,
 * transmit, zero-copy engine, progress), query, addresses and the UCT
 * operation table. One UD QP per interface (so each UCP worker has its
 * own QP and CQs, while the PD and registrations of the md are shared),
 * fed by one Shared Receive Queue whose buffer pool does not depend on the
 * number of peers.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_compat.h"
#include "srqud_ep_am.h"
#include "srqud_iface.h"
#include "srqud_dev.h"
#include "srqud_ep.h"
#include "srqud_ep_flush.h"
#include "srqud_progress.h"
#include "srqud_proto.h"
#include "srqud_rma.h"
#include "srqud_rx.h"
#include "srqud_rx_chain.h"
#include "srqud_tx.h"
#include "srqud_verbs.h"
#include "srqud_zcopy.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <stdio.h>
#include <string.h>


ucs_status_t uct_srqud_iface_stats_get(uct_iface_h tl_iface,
                                       uct_srqud_iface_stats_t *stats)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);

    uct_srqud_rxpool_state_t pool;

    /* the counters are written by the progress path and the async timer,
     * both under the interface's lock, as is rx.taken. What was polled is
     * told to the pool first, so that its counts add up. */
    uct_srqud_enter(iface);
    uct_srqud_rx_report(iface);
    uct_srqud_rxpool_query(iface->rx.pool, &pool);
    *stats                  = iface->stats;
    stats->srq_limit_events = pool.limit_events;
    stats->srq_refilled     = pool.refilled;
    stats->srq_grows        = pool.grows;
    stats->srq_limit        = pool.limit;
    stats->srq_target       = pool.target;
    stats->srq_users        = pool.users;
    stats->srq_posted       = pool.posted;
    stats->srq_buffers      = pool.allocated;
    stats->srq_free         = pool.nfree;
    stats->srq_lent         = pool.lent;
    stats->srq_lost         = pool.lost;
    stats->rx_taken         = iface->rx.taken;
    stats->share            = iface->config.share;
    stats->zcopy_pool_qps   = iface->zcopy.pool_created;
    stats->zcopy_pool_peak  = iface->zcopy.pool_peak;
    stats->async_busy       = iface->async.wd_busy;
    uct_srqud_leave(iface);
    return UCS_OK;
}


ucs_status_t uct_srqud_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                   uct_completion_t *comp)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    ucs_status_t status;

    UCT_SRQUD_LOCKED(iface, status, uct_srqud_ep_flush_all(iface, comp));

    if (status == UCS_OK) {
        UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    } else if (status == UCS_INPROGRESS) {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
    }
    return status;
}


static ucs_status_t uct_srqud_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    uct_srqud_ep_t *ep;
    unsigned i;

    uct_srqud_enter(iface);
    ucs_ptr_array_for_each(ep, i, &iface->eps) {
        uct_srqud_ep_fence_locked(ep);
    }
    uct_srqud_leave(iface);
    UCT_TL_IFACE_STAT_FENCE(&iface->super);
    return UCS_OK;
}


static ucs_status_t uct_srqud_iface_query(uct_iface_h tl_iface,
                                          uct_iface_attr_t *iface_attr)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    ucs_status_t status;
    double port_bw;
    size_t max_packet, rma_put, rma_get;

    uct_base_iface_query(&iface->super, iface_attr);

    max_packet = iface->config.seg_size - sizeof(uct_srqud_neth_t);

    iface_attr->cap.flags       = UCT_IFACE_FLAG_AM_SHORT |
                                  UCT_IFACE_FLAG_AM_BCOPY |
                                  UCT_IFACE_FLAG_AM_ZCOPY |
                                  UCT_IFACE_FLAG_PUT_SHORT |
                                  UCT_IFACE_FLAG_PUT_BCOPY |
                                  UCT_IFACE_FLAG_PUT_ZCOPY |
                                  UCT_IFACE_FLAG_GET_BCOPY |
                                  UCT_IFACE_FLAG_GET_ZCOPY |
                                  UCT_IFACE_FLAG_EP_CHECK |
                                  UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                                  UCT_IFACE_FLAG_PENDING |
                                  UCT_IFACE_FLAG_CB_SYNC |
                                  UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                                  UCT_SRQUD_IFACE_FLAG_INTER_NODE;
    /* One wakeup mechanism: the callback when the user gave one (UCP
     * does), which also tells of a peer timeout while the user sleeps;
     * otherwise the completion channel's fd */
    iface_attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                                  UCT_IFACE_FLAG_EVENT_RECV |
                                  ((iface->async.event_cb != NULL) ?
                                   UCT_IFACE_FLAG_EVENT_ASYNC_CB :
                                   UCT_IFACE_FLAG_EVENT_FD);

    iface_attr->cap.am.max_short = ucs_min(iface->config.max_inline,
                                           iface->config.seg_size) -
                                   sizeof(uct_srqud_neth_t);
    iface_attr->cap.am.max_bcopy = iface->config.am_packets * max_packet;
    /* am_short_iov copies the vector into the packet; am_zcopy gathers it
     * with one scatter/gather entry each, after the headers */
    iface_attr->cap.am.max_iov   = iface->config.zcopy_max_iov;
    iface_attr->cap.am.max_zcopy = max_packet;
    iface_attr->cap.am.min_zcopy = 0;
    iface_attr->cap.am.max_hdr   = ucs_min(UCT_SRQUD_AM_ZCOPY_MAX_HDR,
                                           max_packet);
    iface_attr->cap.am.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;

    /* RMA: short and bcopy in one packet; zcopy of any size (zero-copy
     * from UCX_SRQUD_ZCOPY_THRESH, the copy path below), one buffer */
    rma_put = iface->config.seg_size - sizeof(uct_srqud_neth_t) -
              sizeof(uct_srqud_rma_hdr_t);
    rma_get = iface->config.seg_size - sizeof(uct_srqud_neth_t) -
              sizeof(uct_srqud_rma_reply_t);
    iface_attr->cap.put.max_short       = rma_put;
    iface_attr->cap.put.max_bcopy       = rma_put;
    iface_attr->cap.put.min_zcopy       = 0;
    iface_attr->cap.put.max_zcopy       = UCT_SRQUD_RMA_MAX_ZCOPY;
    iface_attr->cap.put.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    iface_attr->cap.put.align_mtu       = uct_srqud_verbs_mtu_bytes(iface->path_mtu);
    iface_attr->cap.put.max_iov         = 1;
    iface_attr->cap.get.max_short       = 0;
    iface_attr->cap.get.max_bcopy       = rma_get;
    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = UCT_SRQUD_RMA_MAX_ZCOPY;
    iface_attr->cap.get.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    iface_attr->cap.get.align_mtu       = uct_srqud_verbs_mtu_bytes(iface->path_mtu);
    iface_attr->cap.get.max_iov         = 1;
    iface_attr->cap.am.align_mtu = uct_srqud_verbs_mtu_bytes(iface->path_mtu);

    iface_attr->device_addr_len  = sizeof(uct_srqud_device_addr_t);
    iface_attr->iface_addr_len   = sizeof(uct_srqud_iface_addr_t);
    iface_attr->ep_addr_len      = 0;
    iface_attr->max_conn_priv    = 0;

    status = uct_srqud_dev_port_bandwidth(iface, &port_bw);
    if (status != UCS_OK) {
        return status;
    }

    /* A UD send costs about what an RC send does on the wire, plus the
     * software header; RoCE adds the Ethernet/UDP encapsulation. */
    iface_attr->latency            = ucs_linear_func_make(
                                         iface->is_roce ? 900e-9 : 700e-9, 0);
    iface_attr->overhead           = 80e-9;
    iface_attr->bandwidth.dedicated = 0;
    iface_attr->bandwidth.shared   = port_bw * max_packet /
                                     (max_packet + 40 /* GRH */ +
                                      sizeof(uct_srqud_neth_t));
    iface_attr->priority           = 0;
    iface_attr->dev_num_paths      = 1;
    return UCS_OK;
}


static ucs_status_t
uct_srqud_iface_get_device_address(uct_iface_h tl_iface,
                                   uct_device_addr_t *addr)
{
    uct_srqud_iface_t *iface        = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    uct_srqud_device_addr_t *dev_addr = (uct_srqud_device_addr_t*)addr;

    dev_addr->flags = iface->is_roce ? UCT_SRQUD_ADDR_FLAG_ETH : 0;
    dev_addr->lid   = iface->lid;
    memcpy(dev_addr->gid, iface->gid.raw, sizeof(dev_addr->gid));
    return UCS_OK;
}


static ucs_status_t uct_srqud_iface_get_address(uct_iface_h tl_iface,
                                                uct_iface_addr_t *addr)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);

    uct_srqud_pack_qpn(((uct_srqud_iface_addr_t*)addr)->qp_num,
                       iface->qp->qp_num);
    return UCS_OK;
}


static int uct_srqud_iface_is_reachable(const uct_iface_h tl_iface,
                                        const uct_device_addr_t *addr,
                                        const uct_iface_addr_t *iface_addr)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    const uct_srqud_device_addr_t *dev_addr = (const void*)addr;

    return (dev_addr != NULL) &&
           uct_srqud_dev_is_reachable(iface, dev_addr);
}


static void uct_srqud_iface_vfs_refresh(uct_iface_h iface)
{
}


static uct_iface_ops_t uct_srqud_iface_tl_ops;

static uct_iface_internal_ops_t uct_srqud_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = uct_srqud_iface_vfs_refresh,
    .ep_query            = (uct_ep_query_func_t)ucs_empty_function_return_unsupported,
    .ep_invalidate       = (uct_ep_invalidate_func_t)ucs_empty_function_return_unsupported,
    UCT_SRQUD_INTERNAL_OPS_COMPAT
};


/* What the constructor sets before anything can fail: UCS classes are not
 * zeroed on allocation, and the cleanup path looks at these */
static void uct_srqud_iface_init_state(uct_srqud_iface_t *self,
                                       uct_srqud_md_t *md,
                                       const uct_iface_params_t *params)
{
    self->md           = md;
    self->proto        = &uct_srqud_proto;
    self->comp_channel = NULL;
    self->send_cq      = NULL;
    self->recv_cq      = NULL;
    self->qp           = NULL;
    self->td           = NULL;
    self->qp_pd        = md->pd;
    self->rx.pool      = NULL;
    memset(&self->stats, 0, sizeof(self->stats));
    ucs_list_head_init(&self->rma.ops);
    self->rma.next_id  = 0;
    self->rma.next_refusal_id = 0;
    ucs_list_head_init(&self->passive.list);
    self->passive.count = 0;
    self->fault_rand   = ucs_get_time() | 1;
    /* random start: a process that reuses a dead one's QP number and ep
     * ids must not look like that process to its peers */
    self->conn_sn      = ucs_generate_uuid((uintptr_t)self);
    uct_iface_set_async_event_params(params, &self->async.event_cb,
                                     &self->async.event_arg);
    ucs_queue_head_init(&self->async.rx_q);
    self->async.queued = 0;
    ucs_ptr_array_init(&self->eps, "srqud_eps");
    kh_init_inplace(uct_srqud_peer, &self->peers);
    kh_init_inplace(uct_srqud_ah, &self->ah_hash);
    ucs_list_head_init(&self->ah_unused);
    self->ah_unused_count = 0;
    ucs_arbiter_init(&self->tx.arbiter);
}


static void uct_srqud_iface_cleanup_state(uct_srqud_iface_t *self)
{
    kh_destroy_inplace(uct_srqud_peer, &self->peers);
    ucs_ptr_array_cleanup(&self->eps, 0);
    ucs_arbiter_cleanup(&self->tx.arbiter);
}


/* The port, the settings and the GID: what the device layer needs */
static ucs_status_t
uct_srqud_iface_configure(uct_srqud_iface_t *self,
                          const uct_iface_params_t *params,
                          const uct_srqud_iface_config_t *config,
                          struct ibv_port_attr *port_attr)
{
    ucs_status_t status;
    size_t mtu;

    if (self->super.worker->async == NULL) {
        ucs_error("srqud: the UCT worker needs an async context");
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_srqud_dev_port_open(self, params->mode.device.dev_name,
                                     port_attr, &mtu);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_srqud_config_check(self->md, config, mtu);
    if (status != UCS_OK) {
        return status;
    }

    uct_srqud_config_apply(self, config, mtu);
    return uct_srqud_dev_select_gid(self, port_attr);
}


static UCS_CLASS_INIT_FUNC(uct_srqud_iface_t, uct_md_h tl_md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_srqud_iface_config_t *config = ucs_derived_of(tl_config,
                                                            uct_srqud_iface_config_t);
    uct_srqud_md_t *md = ucs_derived_of(tl_md, uct_srqud_md_t);
    struct ibv_port_attr port_attr;
    ucs_status_t status;

    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("srqud: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_srqud_iface_tl_ops,
                              &uct_srqud_iface_internal_ops, tl_md, worker,
                              params, tl_config
                              UCS_STATS_ARG((params->field_mask &
                                             UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                                            params->stats_root : NULL)
                              UCS_STATS_ARG(params->mode.device.dev_name));

    uct_srqud_iface_init_state(self, md, params);
    self->am_stub        = self->super.am[0].cb; /* every id's, for now */
    self->log_time       = 0;
    self->log_suppressed = 0;

    status = uct_srqud_iface_configure(self, params, config, &port_attr);
    if (status != UCS_OK) {
        goto err_dev;
    }

    status = uct_srqud_dev_create(self);
    if (status != UCS_OK) {
        goto err_dev;
    }

    status = uct_srqud_rx_init(self, config, params, &port_attr);
    if (status != UCS_OK) {
        goto err_dev;
    }

    status = uct_srqud_rx_chain_init(self);
    if (status != UCS_OK) {
        goto err_rx;
    }

    status = uct_srqud_dev_create_qp(self);
    if (status != UCS_OK) {
        goto err_rx;
    }

    status = uct_srqud_tx_init(self, config);
    if (status != UCS_OK) {
        goto err_qp;
    }

    status = uct_srqud_zcopy_init(self);
    if (status != UCS_OK) {
        goto err_tx;
    }

    status = uct_srqud_progress_init(self);
    if (status != UCS_OK) {
        goto err_zcopy;
    }

    ucs_debug("%s:%d: srqud iface %p qpn 0x%x gid_index %d mtu %zu srq %u "
              "limit %u (t_wakeup %.1f us) inline %zu", md->name,
              self->port_num, self, self->qp->qp_num, self->gid_index,
              self->config.mtu, self->config.srq_size, self->rx.pool->limit,
              self->stats.t_wakeup * 1e6, self->config.max_inline);
    return UCS_OK;

err_zcopy:
    uct_srqud_zcopy_cleanup(self);
err_tx:
    uct_srqud_tx_cleanup(self);
err_qp:
    uct_srqud_dev_destroy_queues(self);
err_rx:
    uct_srqud_rx_chain_cleanup(self);
    uct_srqud_rx_cleanup(self);
err_dev:
    uct_srqud_dev_destroy(self);
    uct_srqud_iface_cleanup_state(self);
    return status;
}


/* The counters, at close: in the debug log, or on stderr with
 * UCX_SRQUD_STATS_DUMP=y (how tests and benchmarks see what UCP did) */
static void uct_srqud_iface_print_stats(uct_srqud_iface_t *iface)
{
    uct_srqud_iface_stats_t stats, *s = &stats;
    char line[2048];

    uct_srqud_iface_stats_get(&iface->super.super, s);
    snprintf(line, sizeof(line),
             "rx %lu tx %lu malformed %lu retransmits %lu timeouts %lu "
             "dups %lu gaps %lu acks %lu nacks %lu failures %lu "
             "srq_limit_events %lu srq_refilled %lu srq_grows %lu "
             "async_progress %lu async_queued %lu keepalives %lu "
             "am_zcopy %lu lingered %lu zcopy_xfers %lu zcopy_chunks_sent %lu "
             "zcopy_misplaced %lu zcopy_moved %lu zcopy_rounds_extra %lu "
             "zcopy_fallbacks %lu rma_copy_ops %lu fault_dropped %lu "
             "fault_duplicated %lu zcopy_stale %lu fast_retransmits %lu "
             "held %lu reorder_dropped %lu bad_token %lu qp_resets %lu "
             "no_ep %lu zcopy_stalled %lu zcopy_superseded %lu zcopy_posts %lu "
             "rma_refused %lu stalled_dropped %lu srq_users %u srq_buffers %lu "
             "zcopy_pool_qps %u zcopy_pool_peak %u doorbells %lu "
             "back_acks_sent %lu back_acks_taken %lu timeouts_undone %lu "
             "async_ticks %lu unsignaled %lu stale_completions %lu "
             "hold_posted %lu user_steps %lu idle_steps %lu timer_sets %lu "
             "ack_requests %lu tx_am_chains %lu rx_am_chains %lu "
             "rx_chain_bad %lu rx_chain_evicted %lu acks_ridden %lu "
             "hold_deferred %lu async_busy %lu resend_copies %lu "
             "progress_quiet %lu progress_early %lu",
             s->rx_packets, s->tx_packets, s->rx_dropped_malformed,
             s->tx_retransmits, s->tx_timeouts, s->rx_duplicates,
             s->rx_out_of_order, s->acks_sent, s->nacks_sent, s->ep_failures,
             s->srq_limit_events, s->srq_refilled, s->srq_grows,
             s->async_progress, s->async_queued, s->keepalives, s->am_zcopy,
             s->ep_lingered, s->zcopy_xfers, s->zcopy_chunks_sent,
             s->zcopy_misplaced, s->zcopy_moved, s->zcopy_rounds_extra,
             s->zcopy_fallbacks, s->rma_copy_ops, s->fault_dropped,
             s->fault_duplicated, s->zcopy_stale, s->tx_fast_retransmits,
             s->rx_held, s->rx_reorder_dropped, s->rx_bad_token,
             s->qp_resets, s->rx_no_ep, s->zcopy_stalled,
             s->zcopy_superseded, s->zcopy_posts, s->rma_refused,
             s->rx_stalled_dropped, s->srq_users, s->srq_buffers,
             s->zcopy_pool_qps, s->zcopy_pool_peak, s->tx_doorbells,
             s->back_acks_sent, s->back_acks_taken, s->tx_timeouts_undone,
             s->async_ticks, s->tx_unsignaled, s->tx_stale_completions,
             s->tx_hold_posted, s->tx_user_steps, s->tx_idle_steps,
             s->timer_sets, s->ack_requests, s->tx_am_chains,
             s->rx_am_chains, s->rx_chain_bad, s->rx_chain_evicted,
             s->acks_ridden, s->tx_hold_deferred, s->async_busy,
             s->tx_resend_copies, s->progress_quiet, s->progress_early);
    if (iface->config.stats_dump) {
        fprintf(stderr, "srqud %s:%d iface %p: %s\n", iface->md->name,
                iface->port_num, iface, line);
    } else {
        ucs_debug("%s:%d: srqud iface %p closing: %s", iface->md->name,
                  iface->port_num, iface, line);
    }
}


static UCS_CLASS_CLEANUP_FUNC(uct_srqud_iface_t)
{
    uct_srqud_ep_t *ep;
    unsigned i;

    /* After this, the async thread no longer sees the interface: the
     * removals wait for a running callback */
    uct_srqud_progress_cleanup(self);

    uct_srqud_enter(self);
    /* transfers still going (peers' ones; the user's eps are gone): their
     * QPs go first, so that nothing is in flight when they are freed */
    uct_srqud_zcopy_cleanup(self);

    /* What this side received and still owes an acknowledgement for is
     * acknowledged before it goes: a peer's flush (a closing UCP ep)
     * would otherwise resend into the void until UCX_SRQUD_TIMEOUT and
     * end in an error for packets that had arrived. Best effort, as the
     * batched sends below. */
    uct_srqud_ep_acks_send(self, UCS_TIME_INFINITY);

    /* Passive endpoints belong to the interface, and so do endpoints the
     * user destroyed that were still lingering */
    ucs_ptr_array_for_each(ep, i, &self->eps) {
        uct_srqud_ep_free(ep);
    }
    /* sends still batched go, best effort, while QP and address handles
     * exist */
    uct_srqud_tx_ring(self);
    uct_srqud_leave(self);

    uct_srqud_iface_print_stats(self);

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    uct_srqud_dev_destroy_queues(self);
    uct_srqud_tx_cleanup(self);
    uct_srqud_rx_chain_cleanup(self);
    uct_srqud_rx_cleanup(self);
    uct_srqud_dev_destroy(self);
    uct_srqud_iface_cleanup_state(self);
}


UCS_CLASS_DEFINE(uct_srqud_iface_t, uct_base_iface_t);

static UCS_CLASS_DEFINE_NEW_FUNC(uct_srqud_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);

static UCS_CLASS_DEFINE_DELETE_FUNC(uct_srqud_iface_t, uct_iface_t);


static uct_iface_ops_t uct_srqud_iface_tl_ops = {
    .ep_am_short              = uct_srqud_ep_am_short,
    .ep_am_short_iov          = uct_srqud_ep_am_short_iov,
    .ep_am_bcopy              = uct_srqud_ep_am_bcopy,
    .ep_am_zcopy              = uct_srqud_ep_am_zcopy,
    .ep_put_short             = uct_srqud_rma_put_short,
    .ep_put_bcopy             = uct_srqud_rma_put_bcopy,
    .ep_put_zcopy             = uct_srqud_rma_put_zcopy,
    .ep_get_bcopy             = uct_srqud_rma_get_bcopy,
    .ep_get_zcopy             = uct_srqud_rma_get_zcopy,
    .ep_pending_add           = uct_srqud_ep_pending_add,
    .ep_pending_purge         = uct_srqud_ep_pending_purge,
    .ep_flush                 = uct_srqud_ep_flush,
    .ep_fence                 = uct_srqud_ep_fence,
    .ep_check                 = uct_srqud_ep_check,
    .ep_create                = uct_srqud_ep_create,
    .ep_destroy               = uct_srqud_ep_destroy,
    .ep_get_address           = (uct_ep_get_address_func_t)ucs_empty_function_return_unsupported,
    .ep_connect_to_ep         = (uct_ep_connect_to_ep_func_t)ucs_empty_function_return_unsupported,
    .iface_flush              = uct_srqud_iface_flush,
    .iface_fence              = uct_srqud_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_srqud_progress,
    .iface_event_fd_get       = uct_srqud_progress_event_fd_get,
    .iface_event_arm          = uct_srqud_progress_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_srqud_iface_t),
    .iface_query              = uct_srqud_iface_query,
    .iface_get_device_address = uct_srqud_iface_get_device_address,
    .iface_get_address        = uct_srqud_iface_get_address,
    .iface_is_reachable       = uct_srqud_iface_is_reachable
};


UCT_TL_DEFINE_ENTRY(&uct_srqud_component, srqud, uct_srqud_dev_query_tl_devices,
                    uct_srqud_iface_t, UCT_SRQUD_CONFIG_PREFIX,
                    uct_srqud_config_table, uct_srqud_iface_config_t);
