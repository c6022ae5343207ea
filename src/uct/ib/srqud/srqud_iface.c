/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_iface.h"
#include "srqud_ep.h"
#include "srqud_rma.h"
#include "srqud_gid.h"
#include "srqud_srq.h"
#include "srqud_rel.h"

#include <ucs/arch/bitops.h>
#include <ucs/arch/cpu.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <uct/base/uct_md.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static ucs_config_field_t uct_srqud_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_srqud_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"TX_QUEUE_LEN", "256",
     "Length of the send queue of the UD QP.",
     ucs_offsetof(uct_srqud_iface_config_t, tx_queue_len), UCS_CONFIG_TYPE_UINT},

    {"TX_MAX_POLL", "16",
     "Maximal number of send completions processed in one progress call.",
     ucs_offsetof(uct_srqud_iface_config_t, tx_max_poll), UCS_CONFIG_TYPE_UINT},

    {"RX_MAX_POLL", "16",
     "Maximal number of receive completions processed in one progress call;\n"
     "also the most packets one call delivers of those the async thread\n"
     "queued while the user did not progress.",
     ucs_offsetof(uct_srqud_iface_config_t, rx_max_poll), UCS_CONFIG_TYPE_UINT},

    {"SRQ_SIZE", "1024",
     "Number of receive buffers kept posted on the Shared Receive Queue.\n"
     "It is fixed per interface: it does not grow with the number of peers.",
     ucs_offsetof(uct_srqud_iface_config_t, srq_size), UCS_CONFIG_TYPE_UINT},

    {"SRQ_MAX_SIZE", "8192",
     "When the LIMIT thread finds the SRQ drained again soon after a refill,\n"
     "it raises the number of posted buffers, up to this many.",
     ucs_offsetof(uct_srqud_iface_config_t, srq_max_size), UCS_CONFIG_TYPE_UINT},

    {"SRQ_LIMIT", "auto",
     "SRQ low watermark: below this many buffers the device raises\n"
     "IBV_EVENT_SRQ_LIMIT_REACHED and the LIMIT thread refills the SRQ.\n"
     "\"auto\": BW*10^3/MinPacketSize*t_wakeup (Sur et al., Eq. 5), from the\n"
     "port's link rate and a thread wakeup time measured at start. 0: off.",
     ucs_offsetof(uct_srqud_iface_config_t, srq_limit), UCS_CONFIG_TYPE_ULUNITS},

    {"RX_POST_BATCH", "32",
     "Repost receive buffers to the SRQ in batches of this many.",
     ucs_offsetof(uct_srqud_iface_config_t, rx_post_batch), UCS_CONFIG_TYPE_UINT},

    UCT_IFACE_MPOOL_CONFIG_FIELDS("RX_", -1, 0, "receive",
                                  ucs_offsetof(uct_srqud_iface_config_t, rx_mp),
                                  ""),

    UCT_IFACE_MPOOL_CONFIG_FIELDS("TX_", -1, 128, "send",
                                  ucs_offsetof(uct_srqud_iface_config_t, tx_mp),
                                  ""),

    {"GID_INDEX", "auto",
     "Port GID table index to send from. \"auto\" prefers RoCE v2, then an\n"
     "IPv4-mapped GID, then a non-link-local one (::1 on Soft-RoCE over lo).",
     ucs_offsetof(uct_srqud_iface_config_t, gid_index), UCS_CONFIG_TYPE_ULUNITS},

    {"SL", "0",
     "InfiniBand service level.",
     ucs_offsetof(uct_srqud_iface_config_t, sl), UCS_CONFIG_TYPE_UINT},

    {"TRAFFIC_CLASS", "0",
     "Traffic class of the global routing header.",
     ucs_offsetof(uct_srqud_iface_config_t, traffic_class), UCS_CONFIG_TYPE_UINT},

    {"HOP_LIMIT", "255",
     "Hop limit of the global routing header.",
     ucs_offsetof(uct_srqud_iface_config_t, hop_limit), UCS_CONFIG_TYPE_UINT},

    {"TX_WINDOW", "256",
     "Packets an endpoint may have unacknowledged. A full window queues\n"
     "further sends on the endpoint's pending queue.",
     ucs_offsetof(uct_srqud_iface_config_t, tx_window), UCS_CONFIG_TYPE_UINT},

    {"ACK_THRESH", "32",
     "The receiver acknowledges at least every this many packets, and at\n"
     "the end of every progress call that delivered any.",
     ucs_offsetof(uct_srqud_iface_config_t, ack_thresh), UCS_CONFIG_TYPE_UINT},

    {"ACK_DELAY", "1ms",
     "How long the receiver may hold back an acknowledgement, so that replies\n"
     "and later packets share it. Duplicates, flushes and every ACK_THRESH\n"
     "packets are acknowledged at once.",
     ucs_offsetof(uct_srqud_iface_config_t, ack_delay), UCS_CONFIG_TYPE_TIME},

    {"RTO_MIN", "20ms",
     "Retransmission timeout; it doubles on every expiry up to RTO_MAX and\n"
     "returns to RTO_MIN when an acknowledgement arrives.",
     ucs_offsetof(uct_srqud_iface_config_t, rto_min), UCS_CONFIG_TYPE_TIME},

    {"RTO_MAX", "1s",
     "Largest retransmission timeout.",
     ucs_offsetof(uct_srqud_iface_config_t, rto_max), UCS_CONFIG_TYPE_TIME},

    {"TIMEOUT", "30s",
     "An endpoint whose peer acknowledges nothing for this long fails with\n"
     "UCS_ERR_ENDPOINT_TIMEOUT (reported through the error handler).",
     ucs_offsetof(uct_srqud_iface_config_t, peer_timeout), UCS_CONFIG_TYPE_TIME},

    {"ASYNC_TICK", "10ms",
     "While the application does not progress the worker, UCX's async thread\n"
     "runs this often to acknowledge peers' packets and retransmit lost ones,\n"
     "so that a rank that computes is not taken for dead. At most RTO_MIN,\n"
     "or peers retransmit before the acknowledgement comes.",
     ucs_offsetof(uct_srqud_iface_config_t, async_tick), UCS_CONFIG_TYPE_TIME},

    {"ZCOPY_QPS", "64",
     "UD QPs of the zero-copy pool (each with its own receive queue and CQ):\n"
     "one is bound to each zero-copy transfer this side receives. When none\n"
     "is free a transfer takes the copy path. 0 disables zero-copy.",
     ucs_offsetof(uct_srqud_iface_config_t, zcopy_qps), UCS_CONFIG_TYPE_UINT},

    {"ZCOPY_THRESH", "32k",
     "get_zcopy / put_zcopy of at least this many bytes use the zero-copy\n"
     "protocol; smaller ones are carried in MTU fragments and copied.",
     ucs_offsetof(uct_srqud_iface_config_t, zcopy_thresh),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"ZCOPY_RQ_DEPTH", "512",
     "Receives posted on a pool QP at once: the chunks of one round.",
     ucs_offsetof(uct_srqud_iface_config_t, zcopy_rq_depth),
     UCS_CONFIG_TYPE_UINT},

    {"ZCOPY_SQ_DEPTH", "1024",
     "Send queue of the QP that sends zero-copy chunks.",
     ucs_offsetof(uct_srqud_iface_config_t, zcopy_sq_depth),
     UCS_CONFIG_TYPE_UINT},

    {"STATS_DUMP", "n",
     "Print the interface's counters (retransmissions, SRQ limit events,\n"
     "zero-copy transfers...) on stderr when it closes.",
     ucs_offsetof(uct_srqud_iface_config_t, stats_dump), UCS_CONFIG_TYPE_BOOL},

    {"FAULT_TX_DROP", "0",
     "Testing only: fraction of outgoing packets to drop on purpose, as a\n"
     "lossy fabric would (Soft-RoCE short-circuits traffic to its own\n"
     "addresses, so kernel loss emulation on lo does not reach it).",
     ucs_offsetof(uct_srqud_iface_config_t, fault_tx_drop), UCS_CONFIG_TYPE_DOUBLE},

    {"FAULT_TX_DUP", "0",
     "Testing only: fraction of outgoing packets to send twice.",
     ucs_offsetof(uct_srqud_iface_config_t, fault_tx_dup), UCS_CONFIG_TYPE_DOUBLE},

    {"SEG_SIZE", "auto",
     "Largest packet, network header included. \"auto\" is the port's active\n"
     "MTU; a larger value is refused, since UD drops what exceeds the MTU.",
     ucs_offsetof(uct_srqud_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {NULL}
};


static size_t uct_srqud_mtu_bytes(enum ibv_mtu mtu)
{
    switch (mtu) {
    case IBV_MTU_256:  return 256;
    case IBV_MTU_512:  return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
    default:           return 0;
    }
}


static uct_srqud_gid_type_t
uct_srqud_query_gid_type(uct_srqud_md_t *md, uint8_t port, unsigned index)
{
    char path[256], buf[32];
    FILE *f;

    /* rdma-core 44 has ibv_query_gid_type(), but the sysfs attribute is
     * present on every kernel that has RoCE v2 at all */
    snprintf(path, sizeof(path),
             "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%u",
             ibv_get_device_name(md->ctx->device), port, index);
    f = fopen(path, "r");
    if (f == NULL) {
        return UCT_SRQUD_GID_TYPE_IB;
    }
    if (fgets(buf, sizeof(buf), f) == NULL) {
        buf[0] = '\0';
    }
    fclose(f);
    return (strstr(buf, "v2") != NULL) ? UCT_SRQUD_GID_TYPE_ROCE_V2 :
                                         UCT_SRQUD_GID_TYPE_IB;
}


static ucs_status_t
uct_srqud_iface_select_gid(uct_srqud_iface_t *iface,
                           const struct ibv_port_attr *port_attr,
                           const uct_srqud_iface_config_t *config)
{
    uct_srqud_md_t *md = iface->md;
    uct_srqud_gid_entry_t *entries;
    union ibv_gid gid;
    int i, index;

    if (config->gid_index != UCS_ULUNITS_AUTO) {
        if (config->gid_index >= port_attr->gid_tbl_len) {
            ucs_error("%s:%d: UCX_SRQUD_GID_INDEX=%lu is out of range (table has %d entries)",
                      md->name, iface->port_num, config->gid_index,
                      port_attr->gid_tbl_len);
            return UCS_ERR_INVALID_PARAM;
        }
        index = config->gid_index;
    } else if (!iface->is_roce) {
        index = 0;
    } else {
        entries = ucs_calloc(port_attr->gid_tbl_len, sizeof(*entries),
                             "srqud_gids");
        if (entries == NULL) {
            return UCS_ERR_NO_MEMORY;
        }

        for (i = 0; i < port_attr->gid_tbl_len; ++i) {
            if (ibv_query_gid(md->ctx, iface->port_num, i, &gid) != 0) {
                continue; /* entry stays zero, so it is never chosen */
            }
            memcpy(entries[i].raw, gid.raw, sizeof(gid.raw));
            entries[i].type = uct_srqud_query_gid_type(md, iface->port_num, i);
        }

        index = uct_srqud_gid_select(entries, port_attr->gid_tbl_len);
        ucs_free(entries);
        if (index < 0) {
            ucs_debug("%s:%d: no usable GID", md->name, iface->port_num);
            return UCS_ERR_NO_DEVICE;
        }
    }

    if (ibv_query_gid(md->ctx, iface->port_num, index, &iface->gid) != 0) {
        ucs_error("%s:%d: ibv_query_gid(%d) failed: %m", md->name,
                  iface->port_num, index);
        return UCS_ERR_IO_ERROR;
    }

    if (iface->is_roce &&
        (iface->gid.global.subnet_prefix == 0) &&
        (iface->gid.global.interface_id == 0)) {
        ucs_error("%s:%d: GID index %d is empty (UCX_SRQUD_GID_INDEX)",
                  md->name, iface->port_num, index);
        return UCS_ERR_INVALID_PARAM;
    }

    iface->gid_index = index;
    return UCS_OK;
}


static ucs_status_t uct_srqud_iface_check_config(uct_srqud_iface_t *iface,
                                                 const uct_srqud_iface_config_t *config,
                                                 size_t mtu)
{
    const struct ibv_device_attr *dev_attr = &iface->md->dev_attr;

#define UCT_SRQUD_CHECK_RANGE(_var, _value, _min, _max) \
    if (((_value) < (_min)) || ((_value) > (_max))) { \
        ucs_error("%s: UCX_SRQUD_" _var "=%lu is out of range [%lu..%lu]", \
                  iface->md->name, (unsigned long)(_value), \
                  (unsigned long)(_min), (unsigned long)(_max)); \
        return UCS_ERR_INVALID_PARAM; \
    }

    UCT_SRQUD_CHECK_RANGE("TX_QUEUE_LEN", config->tx_queue_len, 16,
                          dev_attr->max_qp_wr);
    UCT_SRQUD_CHECK_RANGE("SRQ_SIZE", config->srq_size, 16,
                          dev_attr->max_srq_wr);
    UCT_SRQUD_CHECK_RANGE("SRQ_MAX_SIZE", config->srq_max_size,
                          config->srq_size, dev_attr->max_srq_wr);
    if (config->srq_limit != UCS_ULUNITS_AUTO) {
        UCT_SRQUD_CHECK_RANGE("SRQ_LIMIT", config->srq_limit, 0,
                              config->srq_size / 2);
    }
    UCT_SRQUD_CHECK_RANGE("RX_POST_BATCH", config->rx_post_batch, 1,
                          config->srq_size);
    UCT_SRQUD_CHECK_RANGE("TX_MAX_POLL", config->tx_max_poll, 1, 1024);
    UCT_SRQUD_CHECK_RANGE("RX_MAX_POLL", config->rx_max_poll, 1, 1024);
    UCT_SRQUD_CHECK_RANGE("SL", config->sl, 0, 15);
    UCT_SRQUD_CHECK_RANGE("TRAFFIC_CLASS", config->traffic_class, 0, 255);
    UCT_SRQUD_CHECK_RANGE("HOP_LIMIT", config->hop_limit, 1, 255);
    UCT_SRQUD_CHECK_RANGE("TX_WINDOW", config->tx_window, 2, 16384);
    UCT_SRQUD_CHECK_RANGE("ACK_THRESH", config->ack_thresh, 1,
                          config->tx_window);
    if (!(config->ack_delay >= 0) || (config->ack_delay >= config->rto_min)) {
        ucs_error("%s: UCX_SRQUD_ACK_DELAY (%.3fs) must be shorter than "
                  "UCX_SRQUD_RTO_MIN (%.3fs)", iface->md->name,
                  config->ack_delay, config->rto_min);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->rto_min <= 0) || (config->rto_max < config->rto_min) ||
        (config->peer_timeout < config->rto_min)) {
        ucs_error("%s: need 0 < UCX_SRQUD_RTO_MIN (%.3fs) <= UCX_SRQUD_RTO_MAX "
                  "(%.3fs) and RTO_MIN <= UCX_SRQUD_TIMEOUT (%.3fs)",
                  iface->md->name, config->rto_min, config->rto_max,
                  config->peer_timeout);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(config->async_tick > 0) || (config->async_tick > config->rto_min)) {
        ucs_error("%s: UCX_SRQUD_ASYNC_TICK (%.3fs) must be positive and at "
                  "most UCX_SRQUD_RTO_MIN (%.3fs)", iface->md->name,
                  config->async_tick, config->rto_min);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(config->fault_tx_drop >= 0) || (config->fault_tx_drop > 0.5) ||
        !(config->fault_tx_dup >= 0) || (config->fault_tx_dup > 0.5)) {
        ucs_error("%s: UCX_SRQUD_FAULT_TX_DROP (%g) and UCX_SRQUD_FAULT_TX_DUP "
                  "(%g) must be within [0..0.5]", iface->md->name,
                  config->fault_tx_drop, config->fault_tx_dup);
        return UCS_ERR_INVALID_PARAM;
    }
    if (config->seg_size != UCS_MEMUNITS_AUTO) {
        UCT_SRQUD_CHECK_RANGE("SEG_SIZE", config->seg_size,
                              sizeof(uct_srqud_neth_t) + 64, mtu);
    }
    UCT_SRQUD_CHECK_RANGE("ZCOPY_QPS", config->zcopy_qps, 0, 4096);
    UCT_SRQUD_CHECK_RANGE("ZCOPY_RQ_DEPTH", config->zcopy_rq_depth, 16,
                          ucs_min(dev_attr->max_qp_wr, 65535));
    UCT_SRQUD_CHECK_RANGE("ZCOPY_SQ_DEPTH", config->zcopy_sq_depth, 16,
                          dev_attr->max_qp_wr);
    if (config->zcopy_thresh == UCS_MEMUNITS_AUTO) {
        ucs_error("%s: UCX_SRQUD_ZCOPY_THRESH must be a size", iface->md->name);
        return UCS_ERR_INVALID_PARAM;
    }
#undef UCT_SRQUD_CHECK_RANGE
    return UCS_OK;
}


static void uct_srqud_iface_recv_desc_init(uct_iface_h tl_iface, void *obj,
                                           uct_mem_h memh)
{
    uct_srqud_recv_desc_t *desc = obj;

    desc->lkey = uct_srqud_memh_lkey(memh);
}


static void uct_srqud_iface_send_desc_init(uct_iface_h tl_iface, void *obj,
                                           uct_mem_h memh)
{
    uct_srqud_send_desc_t *desc = obj;

    desc->lkey = uct_srqud_memh_lkey(memh);
}


void uct_srqud_iface_put_recv_desc(uct_srqud_iface_t *iface,
                                   uct_srqud_recv_desc_t *desc)
{
    /* the LIMIT thread takes buffers from the same pool */
    ucs_spin_lock(&iface->rx.lock);
    ucs_mpool_put_inline(desc);
    ucs_spin_unlock(&iface->rx.lock);
}


static void uct_srqud_iface_release_desc(uct_recv_desc_t *self, void *desc)
{
    uct_srqud_iface_t *iface = ucs_container_of(self, uct_srqud_iface_t,
                                                release_desc);

    uct_srqud_iface_put_recv_desc(iface,
            UCS_PTR_BYTE_OFFSET(desc,
                                -(ptrdiff_t)iface->config.rx_headroom_offset));
}


void uct_srqud_iface_deliver_am(uct_srqud_iface_t *iface,
                                uct_srqud_recv_desc_t *desc,
                                size_t payload_len)
{
    const uct_srqud_neth_t *neth = UCS_PTR_BYTE_OFFSET(
            uct_srqud_iface_rx_hdr(iface, desc), UCT_SRQUD_GRH_LEN);
    void *payload = UCS_PTR_BYTE_OFFSET(desc, iface->config.rx_payload_offset);
    ucs_status_t status;

    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, neth->am_id,
                       payload, payload_len, "RX: AM");
    status = uct_iface_invoke_am(&iface->super, neth->am_id, payload,
                                 payload_len, UCT_CB_PARAM_FLAG_DESC);
    if (status == UCS_INPROGRESS) {
        /* The user keeps the buffer and releases it with
         * uct_iface_release_desc(); from here on the bytes before the
         * payload are the user's headroom */
        uct_recv_desc(UCS_PTR_BYTE_OFFSET(desc,
                                          iface->config.rx_headroom_offset)) =
                &iface->release_desc;
        return;
    }

    uct_srqud_iface_put_recv_desc(iface, desc);
}


/* Post up to @a max buffers; with @a to_target, only while fewer than the
 * target are posted (the progress path), else unconditionally (the LIMIT
 * thread, which knows the SRQ is nearly empty) */
static ucs_status_t uct_srqud_iface_srq_post_n(uct_srqud_iface_t *iface,
                                               unsigned max, int to_target)
{
    struct ibv_recv_wr wrs[32], *bad_wr;
    struct ibv_sge sges[32];
    uct_srqud_recv_desc_t *desc;
    unsigned count, total = 0;
    ucs_status_t status = UCS_OK;
    int ret;

    ucs_spin_lock(&iface->rx.lock);
    while ((total < max) &&
           (!to_target || (iface->rx.posted < iface->rx.target))) {
        count = 0;
        while ((count < ucs_static_array_size(wrs)) && (total + count < max) &&
               (!to_target || (iface->rx.posted + count < iface->rx.target))) {
            desc = ucs_mpool_get_inline(&iface->rx.mp);
            if (desc == NULL) {
                status = UCS_ERR_NO_MEMORY;
                break;
            }

            sges[count].addr   = (uintptr_t)uct_srqud_iface_rx_hdr(iface, desc);
            sges[count].length = UCT_SRQUD_GRH_LEN + iface->config.seg_size;
            sges[count].lkey   = desc->lkey;
            wrs[count].wr_id   = (uintptr_t)desc;
            wrs[count].sg_list = &sges[count];
            wrs[count].num_sge = 1;
            wrs[count].next    = &wrs[count + 1];
            ++count;
        }

        if (count == 0) {
            break;
        }

        wrs[count - 1].next = NULL;
        ret = ibv_post_srq_recv(iface->srq, wrs, &bad_wr);
        if (ret != 0) {
            ucs_error("%s: ibv_post_srq_recv() failed: %s", iface->md->name,
                      strerror(ret));
            /* return what was not posted */
            for (; bad_wr != NULL; bad_wr = bad_wr->next, --count) {
                ucs_mpool_put_inline((void*)(uintptr_t)bad_wr->wr_id);
            }
            iface->rx.posted += count;
            total            += count;
            status            = UCS_ERR_IO_ERROR;
            break;
        }

        iface->rx.posted += count;
        total            += count;
        if (status != UCS_OK) {
            break;
        }
    }
    ucs_spin_unlock(&iface->rx.lock);

    return status;
}


ucs_status_t uct_srqud_iface_srq_post(uct_srqud_iface_t *iface, unsigned max)
{
    return uct_srqud_iface_srq_post_n(iface, max, 1);
}


static ucs_status_t uct_srqud_iface_arm_srq(uct_srqud_iface_t *iface)
{
    struct ibv_srq_attr attr;
    int ret;

    if (iface->rx.limit == 0) {
        return UCS_OK;
    }

    attr.srq_limit = iface->rx.limit;
    ret = ibv_modify_srq(iface->srq, &attr, IBV_SRQ_LIMIT);
    if (ret != 0) {
        ucs_error("%s: ibv_modify_srq(limit=%u) failed: %s", iface->md->name,
                  iface->rx.limit, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}


/*
 * The LIMIT thread: runs on UCX's async thread, which blocks on the
 * device's async fd, under md->iface_lock (so the interface cannot be
 * closed meanwhile). Fewer than rx.limit buffers are left on the SRQ; the
 * others were consumed whether or not the progress path has polled their
 * completions yet, so the refill is counted from the target, not from
 * rx.posted.
 */
void uct_srqud_iface_srq_event(uct_srqud_iface_t *iface,
                               enum ibv_event_type event_type)
{
    ucs_time_t now = ucs_get_time();
    unsigned grow, refill;

    if (event_type != IBV_EVENT_SRQ_LIMIT_REACHED) {
        ucs_error("%s: SRQ error event %s", iface->md->name,
                  ibv_event_type_str(event_type));
        return;
    }

    ucs_spin_lock(&iface->rx.lock);
    ++iface->stats.srq_limit_events;

    /* Drained again within a few wakeups of the last refill: the receiver
     * is not keeping up, so keep more buffers posted (as MVAPICH2 does) */
    grow = 0;
    if ((iface->rx.last_limit_event != 0) &&
        (uct_srqud_time_since(now, iface->rx.last_limit_event) <
         ucs_time_from_msec(10)) &&
        (iface->rx.target < iface->config.srq_max_size)) {
        grow = ucs_min(iface->rx.target / 4 + 1,
                       iface->config.srq_max_size - iface->rx.target);
        iface->rx.target += grow;
        ++iface->stats.srq_grows;
    }
    iface->rx.last_limit_event = now;

    /* At most rx.limit buffers remain: posting target - limit keeps the SRQ
     * within target <= srq_max_size, the SRQ's capacity. Completions of
     * posted buffers wait in the receive CQ until the receiver polls, so
     * never post more than the CQ can hold. */
    refill = iface->rx.target - iface->rx.limit;
    if (iface->rx.posted + refill > iface->config.rx_cq_len) {
        refill = (iface->rx.posted < iface->config.rx_cq_len) ?
                 (iface->config.rx_cq_len - iface->rx.posted) : 0;
    }
    ucs_spin_unlock(&iface->rx.lock);

    uct_srqud_iface_srq_post_n(iface, refill, 0);
    iface->stats.srq_refilled += refill;
    uct_srqud_iface_arm_srq(iface);
    ucs_debug("%s: SRQ limit: refilled %u, target %u (grew %u)",
              iface->md->name, refill, iface->rx.target, grow);
}


ucs_status_t uct_srqud_iface_stats_get(uct_iface_h tl_iface,
                                       uct_srqud_iface_stats_t *stats)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);

    ucs_spin_lock(&iface->rx.lock);
    *stats            = iface->stats;
    stats->srq_limit  = iface->rx.limit;
    stats->srq_target = iface->rx.target;
    ucs_spin_unlock(&iface->rx.lock);
    return UCS_OK;
}


ucs_status_t uct_srqud_iface_get_ah(uct_srqud_iface_t *iface,
                                    const uct_srqud_device_addr_t *dev_addr,
                                    struct ibv_ah **ah_p)
{
    struct ibv_ah_attr ah_attr;
    uct_srqud_ah_key_t key;
    struct ibv_ah *ah;
    khiter_t it;
    int ret;

    memset(&key, 0, sizeof(key));
    memcpy(key.gid, dev_addr->gid, sizeof(key.gid));
    key.lid = dev_addr->lid;

    it = kh_get(uct_srqud_ah, &iface->ah_hash, key);
    if (it != kh_end(&iface->ah_hash)) {
        *ah_p = kh_value(&iface->ah_hash, it);
        return UCS_OK;
    }

    memset(&ah_attr, 0, sizeof(ah_attr));
    ah_attr.port_num  = iface->port_num;
    ah_attr.sl        = iface->config.sl;
    ah_attr.dlid      = dev_addr->lid;
    if (iface->is_roce ||
        memcmp(dev_addr->gid, iface->gid.raw, 8) /* other subnet */) {
        ah_attr.is_global          = 1;
        memcpy(ah_attr.grh.dgid.raw, dev_addr->gid, sizeof(dev_addr->gid));
        ah_attr.grh.sgid_index     = iface->gid_index;
        ah_attr.grh.hop_limit      = iface->config.hop_limit;
        ah_attr.grh.traffic_class  = iface->config.traffic_class;
    }

    ah = ibv_create_ah(iface->md->pd, &ah_attr);
    if (ah == NULL) {
        ucs_error("%s:%d: ibv_create_ah() failed: %m", iface->md->name,
                  iface->port_num);
        return UCS_ERR_INVALID_ADDR;
    }

    it = kh_put(uct_srqud_ah, &iface->ah_hash, key, &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        ibv_destroy_ah(ah);
        return UCS_ERR_NO_MEMORY;
    }

    kh_value(&iface->ah_hash, it) = ah;
    *ah_p = ah;
    return UCS_OK;
}


static void uct_srqud_iface_rx_one(uct_srqud_iface_t *iface,
                                   const struct ibv_wc *wc)
{
    uct_srqud_recv_desc_t *desc = (void*)(uintptr_t)wc->wr_id;
    uct_srqud_neth_t *neth;
    size_t payload_len;
    ucs_status_t status;

    if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
        if (wc->status != IBV_WC_WR_FLUSH_ERR) {
            ++iface->stats.rx_errors;
            ucs_error("%s: receive completion error: %s", iface->md->name,
                      ibv_wc_status_str(wc->status));
        }
        goto out_put;
    }

    neth   = UCS_PTR_BYTE_OFFSET(uct_srqud_iface_rx_hdr(iface, desc),
                                 UCT_SRQUD_GRH_LEN);
    status = uct_srqud_neth_check(neth, wc->byte_len, UCT_AM_ID_MAX,
                                  &payload_len);
    if (ucs_unlikely(status != UCS_OK)) {
        ++iface->stats.rx_dropped_malformed;
        ucs_debug("%s: dropped a malformed packet of %u bytes from qp 0x%x: %s",
                  iface->md->name, wc->byte_len, wc->src_qp,
                  ucs_status_string(status));
        goto out_put;
    }

    ++iface->stats.rx_packets;
    uct_srqud_ep_rx_packet(iface, desc, wc, neth, payload_len);
    return;

out_put:
    uct_srqud_iface_put_recv_desc(iface, desc);
}


/* What the async timer accepted, in arrival order, before anything newer;
 * at most RX_MAX_POLL per call, as packets from the CQ, so that one
 * progress call costs the same however long the user was away */
static unsigned uct_srqud_iface_async_rx_dispatch(uct_srqud_iface_t *iface)
{
    uct_srqud_recv_desc_t *desc;
    unsigned count = 0;

    while (!ucs_queue_is_empty(&iface->async.rx_q) &&
           (count < iface->config.rx_max_poll)) {
        desc = ucs_queue_pull_elem_non_empty(&iface->async.rx_q,
                                             uct_srqud_recv_desc_t, queue);
        if (desc->ep == NULL) {
            uct_srqud_iface_deliver_am(iface, desc, desc->payload_len);
        } else {
            uct_srqud_ep_rx_active(iface, desc->ep,
                                   UCS_PTR_BYTE_OFFSET(
                                       uct_srqud_iface_rx_hdr(iface, desc),
                                       UCT_SRQUD_GRH_LEN),
                                   UCS_PTR_BYTE_OFFSET(desc,
                                       iface->config.rx_payload_offset),
                                   desc->payload_len);
            uct_srqud_iface_put_recv_desc(iface, desc);
        }
        ++count;
    }
    return count;
}


static unsigned uct_srqud_iface_rx_progress(uct_srqud_iface_t *iface)
{
    struct ibv_wc wcs[64];
    unsigned i, count;
    int ret;

    if (ucs_unlikely(!ucs_queue_is_empty(&iface->async.rx_q)) &&
        !iface->async.active) {
        return uct_srqud_iface_async_rx_dispatch(iface);
    }

    count = iface->rx.stash_count;
    for (i = 0; i < count; ++i) {
        uct_srqud_iface_rx_one(iface, &iface->rx.stash[i]);
    }
    iface->rx.stash_count = 0;

    ret = ibv_poll_cq(iface->recv_cq,
                      ucs_min(iface->config.rx_max_poll, ucs_static_array_size(wcs)),
                      wcs);
    if (ucs_unlikely(ret < 0)) {
        ucs_fatal("%s: ibv_poll_cq(recv) failed: %d", iface->md->name, ret);
    }

    /* Buffers leave the SRQ when the completion is polled */
    if (ret + count > 0) {
        ucs_spin_lock(&iface->rx.lock);
        iface->rx.posted -= ret + count;
        ucs_spin_unlock(&iface->rx.lock);
    }

    for (i = 0; i < ret; ++i) {
        uct_srqud_iface_rx_one(iface, &wcs[i]);
    }

    if ((iface->rx.posted < iface->rx.target) &&
        (iface->rx.target - iface->rx.posted >= iface->config.rx_post_batch)) {
        uct_srqud_iface_srq_post(iface, UINT_MAX);
    }

    return count + ret;
}


static void uct_srqud_iface_tx_complete(uct_srqud_iface_t *iface,
                                        const struct ibv_wc *wc)
{
    uct_srqud_send_desc_t *desc;

    if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
        ++iface->stats.tx_errors;
        if (wc->status != IBV_WC_WR_FLUSH_ERR) {
            ucs_error("%s: send completion error: %s", iface->md->name,
                      ibv_wc_status_str(wc->status));
        }
    }

    /* Every send is signaled, so completions come in posting order */
    iface->tx.comp_sn = wc->wr_id;
    ++iface->tx.available;

    while (!ucs_queue_is_empty(&iface->tx.outstanding)) {
        desc = ucs_queue_head_elem_non_empty(&iface->tx.outstanding,
                                             uct_srqud_send_desc_t, queue);
        if (desc->sn > iface->tx.comp_sn) {
            break;
        }
        ucs_queue_pull_non_empty(&iface->tx.outstanding);
        uct_srqud_send_desc_completed(iface, desc);
    }
}


/* Post one send work request (fault injection for tests applies here);
 * @a desc, if any, is freed by the completion */
static ucs_status_t uct_srqud_iface_post_wr(uct_srqud_iface_t *iface,
                                           struct ibv_send_wr *wr,
                                           uct_srqud_send_desc_t *desc)
{
    struct ibv_send_wr dup_wr, *bad_wr;
    int ret, num_wr = 1;

    /* Fault injection (tests): the packet is "sent" and lost on the wire */
    if (ucs_unlikely(iface->config.fault_drop != 0) &&
        (uct_srqud_iface_fault_rand(iface) < iface->config.fault_drop)) {
        ++iface->stats.fault_dropped;
        if ((desc != NULL) && !(desc->flags & UCT_SRQUD_DESC_FLAG_IN_WINDOW)) {
            ucs_mpool_put_inline(desc);
        }
        return UCS_OK;
    }

    /* Every send is signaled: completions then come in posting order, and
     * the sequence number frees descriptors without a per-WQE table */
    wr->wr_id              = iface->tx.sn + 1;
    wr->next               = NULL;
    wr->opcode             = IBV_WR_SEND;
    wr->send_flags        |= IBV_SEND_SIGNALED;
    wr->wr.ud.remote_qkey  = UCT_SRQUD_QKEY;

    /* Fault injection (tests): the same packet twice; the descriptor is
     * released by the completion of the second */
    if (ucs_unlikely(iface->config.fault_dup != 0) &&
        (iface->tx.available >= 2) &&
        (uct_srqud_iface_fault_rand(iface) < iface->config.fault_dup)) {
        dup_wr       = *wr;
        dup_wr.wr_id = iface->tx.sn + 2;
        wr->next     = &dup_wr;
        num_wr       = 2;
        ++iface->stats.fault_duplicated;
    }

    ret = ibv_post_send(iface->qp, wr, &bad_wr);
    if (ucs_unlikely(ret != 0)) {
        ucs_error("%s: ibv_post_send() failed: %s", iface->md->name,
                  strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    iface->tx.sn        += num_wr;
    iface->tx.available -= num_wr;
    ++iface->stats.tx_packets;
    if (desc != NULL) {
        desc->sn     = iface->tx.sn;
        desc->flags |= UCT_SRQUD_DESC_FLAG_IN_SQ;
        ucs_queue_push(&iface->tx.outstanding, &desc->queue);
    }
    return UCS_OK;
}


ucs_status_t uct_srqud_iface_post_send(uct_srqud_iface_t *iface,
                                       struct ibv_ah *ah, uint32_t dest_qpn,
                                       uct_srqud_send_desc_t *desc)
{
    struct ibv_sge sge[1 + UCT_SRQUD_MAX_IOV];
    struct ibv_send_wr wr;
    uint8_t i;

    sge[0].addr = (uintptr_t)uct_srqud_send_desc_neth(desc);
    sge[0].length = desc->length;
    sge[0].lkey = desc->lkey;
    for (i = 0; i < desc->num_zsge; ++i) {
        sge[1 + i] = desc->zsge[i]; /* am_zcopy payload in user memory */
    }
    wr.sg_list          = sge;
    wr.num_sge          = 1 + desc->num_zsge;
    wr.send_flags       = ((desc->num_zsge == 0) &&
                           (desc->length <= iface->config.max_inline)) ?
                          IBV_SEND_INLINE : 0;
    wr.wr.ud.ah         = ah;
    wr.wr.ud.remote_qpn = dest_qpn;
    return uct_srqud_iface_post_wr(iface, &wr, desc);
}


ucs_status_t uct_srqud_iface_post_inline(uct_srqud_iface_t *iface,
                                         struct ibv_ah *ah, uint32_t dest_qpn,
                                         const void *packet, size_t length)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    ucs_assert(length <= iface->config.max_inline);
    sge.addr            = (uintptr_t)packet;
    sge.length          = length;
    sge.lkey            = 0; /* inline data needs no key */
    wr.sg_list          = &sge;
    wr.num_sge          = 1;
    wr.send_flags       = IBV_SEND_INLINE;
    wr.wr.ud.ah         = ah;
    wr.wr.ud.remote_qpn = dest_qpn;
    return uct_srqud_iface_post_wr(iface, &wr, NULL);
}


static unsigned uct_srqud_iface_tx_progress(uct_srqud_iface_t *iface)
{
    struct ibv_wc wcs[64];
    unsigned i, count;
    int ret;

    count = iface->tx.stash_count;
    for (i = 0; i < count; ++i) {
        uct_srqud_iface_tx_complete(iface, &iface->tx.stash[i]);
    }
    iface->tx.stash_count = 0;

    if (iface->tx.sn != iface->tx.comp_sn) {
        ret = ibv_poll_cq(iface->send_cq,
                          ucs_min(iface->config.tx_max_poll,
                                  ucs_static_array_size(wcs)),
                          wcs);
        if (ucs_unlikely(ret < 0)) {
            ucs_fatal("%s: ibv_poll_cq(send) failed: %d", iface->md->name, ret);
        }

        for (i = 0; i < ret; ++i) {
            uct_srqud_iface_tx_complete(iface, &wcs[i]);
        }
        count += ret;
    }

    /* pending requests call the user: not from the async timer */
    if ((count > 0) && !iface->async.active) {
        uct_srqud_iface_progress_pending(iface);
    }
    return count;
}


void uct_srqud_iface_progress_pending(uct_srqud_iface_t *iface)
{
    if (uct_srqud_iface_has_tx_resources(iface)) {
        ucs_arbiter_dispatch(&iface->tx.arbiter, 1,
                             uct_srqud_ep_dispatch_pending, NULL);
    }
}


static unsigned uct_srqud_iface_progress_locked(uct_srqud_iface_t *iface,
                                                ucs_time_t now)
{
    unsigned count;

    count = uct_srqud_iface_rx_progress(iface) +
            uct_srqud_iface_tx_progress(iface);

    /* zero-copy and copy-path RMA complete user operations: the user's
     * progress only */
    if (!iface->async.active) {
        if (ucs_unlikely(!ucs_list_is_empty(&iface->zcopy.xfers) ||
                         !ucs_queue_is_empty(&iface->zcopy.jobs) ||
                         iface->zcopy.marker_count)) {
            count += uct_srqud_zcopy_progress(iface);
        }
        if (ucs_unlikely(!ucs_list_is_empty(&iface->rma.ops))) {
            count += uct_srqud_rma_progress(iface, now);
        }
    } else if (iface->zcopy.marker_count ||
               !ucs_queue_is_empty(&iface->zcopy.jobs) ||
               !ucs_list_is_empty(&iface->zcopy.xfers)) {
        count += uct_srqud_zcopy_async_progress(iface);
    }

    /* groups scheduled since the last dispatch (a fence released, a
     * window reopened by a queued acknowledgement): the user's progress
     * sends them, whatever else happened in this call */
    if (!iface->async.active &&
        ucs_unlikely(!ucs_arbiter_is_empty(&iface->tx.arbiter))) {
        uct_srqud_iface_progress_pending(iface);
    }

    if (ucs_likely(ucs_list_is_empty(&iface->rx.ack_list) &&
                   ucs_list_is_empty(&iface->tx.active_list))) {
        return count;
    }

    if (!ucs_list_is_empty(&iface->rx.ack_list)) {
        uct_srqud_iface_send_acks(iface, now);
    }

    if (!ucs_list_is_empty(&iface->tx.active_list)) {
        if (now >= iface->tx.next_timer) {
            uct_srqud_iface_check_timers(iface, now);
            iface->tx.next_timer = now + iface->config.rto_min / 4;
            if (!iface->async.active) {
                uct_srqud_iface_progress_pending(iface);
            }
        }
    }

    return count;
}


static unsigned uct_srqud_iface_progress(uct_iface_h tl_iface)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    ucs_time_t now;
    unsigned count;

    uct_srqud_enter(iface);
    /* read the clock under the lock: the async timer may have stamped
     * endpoints while this thread waited for it */
    now                        = ucs_get_time();
    iface->async.last_progress = now;
    count = uct_srqud_iface_progress_locked(iface, now);
    uct_srqud_leave(iface);
    return count;
}


/* A completion arrived on a CQ the user armed before sleeping: wake it */
static void uct_srqud_iface_channel_event(int fd, ucs_event_set_types_t events,
                                          void *arg)
{
    uct_srqud_iface_t *iface = arg;
    struct ibv_cq *cq;
    void *cq_ctx;

    while (ibv_get_cq_event(iface->comp_channel, &cq, &cq_ctx) == 0) {
        ibv_ack_cq_events(cq, 1);
    }
    iface->async.event_cb(iface->async.event_arg, 0);
}


/*
 * The async timer: UCX's async thread, under the worker's async lock.
 * While the user progresses the interface it has nothing to do. Otherwise
 * it receives (accepting and acknowledging in order, queueing what must
 * reach the user), sends owed acknowledgements and retransmits.
 */
static void uct_srqud_iface_async_timer(int id, ucs_event_set_types_t events,
                                        void *arg)
{
    uct_srqud_iface_t *iface = arg;
    ucs_time_t now           = ucs_get_time();
    unsigned count = 0, n;

    if (uct_srqud_time_since(now, iface->async.last_progress) <
        iface->async.tick) {
        return;
    }

    iface->async.active    = 1;
    iface->async.wake_user = 0;
    do {
        n      = uct_srqud_iface_progress_locked(iface, now);
        count += n;
    } while ((n > 0) && (count < iface->config.rx_cq_len));
    iface->async.active = 0;

    if (count > 0) {
        ++iface->stats.async_progress;
    }

    /* Packets queued for the user's handlers, or a peer that timed out: a
     * user asleep in its event loop (UCP's wakeup) must come and look. A
     * completion already raised an event on the CQ channel; a timeout
     * raises none. */
    if (iface->async.wake_user && (iface->async.event_cb != NULL)) {
        iface->async.event_cb(iface->async.event_arg, 0);
    }
}


ucs_status_t uct_srqud_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                   uct_completion_t *comp)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    ucs_status_t status;

    uct_srqud_enter(iface);
    status = uct_srqud_iface_flush_eps(iface, comp);
    uct_srqud_leave(iface);

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


static ucs_status_t uct_srqud_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);

    *fd_p = iface->comp_channel->fd;
    return UCS_OK;
}


/* Arm a CQ; a completion that arrived before arming raises no event, so look
 * once more and keep what was found for the next progress call. */
static int uct_srqud_iface_arm_cq(uct_srqud_iface_t *iface, struct ibv_cq *cq,
                                  struct ibv_wc *stash, unsigned *stash_count)
{
    int ret;

    ret = ibv_req_notify_cq(cq, 0);
    if (ret != 0) {
        ucs_error("%s: ibv_req_notify_cq() failed: %s", iface->md->name,
                  strerror(ret));
        return -1;
    }

    ret = ibv_poll_cq(cq, UCT_SRQUD_STASH_MAX - *stash_count,
                      stash + *stash_count);
    if (ret < 0) {
        return -1;
    }
    *stash_count += ret;
    return ret;
}


static ucs_status_t uct_srqud_iface_event_arm_locked(uct_srqud_iface_t *iface,
                                                     unsigned events)
{
    struct ibv_cq *cq;
    void *cq_ctx;
    int ret;

    /* Consume the events already delivered on the channel */
    while (ibv_get_cq_event(iface->comp_channel, &cq, &cq_ctx) == 0) {
        ibv_ack_cq_events(cq, 1);
    }

    if ((iface->rx.stash_count > 0) || (iface->tx.stash_count > 0) ||
        !ucs_queue_is_empty(&iface->async.rx_q)) {
        return UCS_ERR_BUSY;
    }

    /* zero-copy chunks complete on CQs without a channel, and the copy
     * path runs timers: keep polling while any is in progress */
    if (!ucs_list_is_empty(&iface->rma.ops) || !uct_srqud_zcopy_idle(iface)) {
        return UCS_ERR_BUSY;
    }

    if (!ucs_arbiter_is_empty(&iface->tx.arbiter) &&
        uct_srqud_iface_has_tx_resources(iface)) {
        return UCS_ERR_BUSY;
    }

    /* The user goes to sleep: acknowledgements held back for a reply to
     * carry go now. Unacknowledged packets of ours need no polling: an
     * acknowledgement arrives on the armed receive CQ, and the async timer
     * retransmits while the user sleeps. */
    if (!ucs_list_is_empty(&iface->rx.ack_list)) {
        uct_srqud_iface_send_acks(iface, UCS_TIME_INFINITY);
        if (!ucs_list_is_empty(&iface->rx.ack_list)) {
            return UCS_ERR_BUSY; /* no send resources for them yet */
        }
    }

    if (events & UCT_EVENT_RECV) {
        ret = uct_srqud_iface_arm_cq(iface, iface->recv_cq, iface->rx.stash,
                                     &iface->rx.stash_count);
        if (ret != 0) {
            return (ret > 0) ? UCS_ERR_BUSY : UCS_ERR_IO_ERROR;
        }
    }

    if ((events & UCT_EVENT_SEND_COMP) && (iface->tx.sn != iface->tx.comp_sn)) {
        ret = uct_srqud_iface_arm_cq(iface, iface->send_cq, iface->tx.stash,
                                     &iface->tx.stash_count);
        if (ret != 0) {
            return (ret > 0) ? UCS_ERR_BUSY : UCS_ERR_IO_ERROR;
        }
    }

    return UCS_OK;
}


static ucs_status_t uct_srqud_iface_event_arm(uct_iface_h tl_iface,
                                              unsigned events)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    ucs_status_t status;

    uct_srqud_enter(iface);
    status = uct_srqud_iface_event_arm_locked(iface, events);
    uct_srqud_leave(iface);
    return status;
}


double uct_srqud_port_bandwidth(const struct ibv_port_attr *port_attr)
{
    double lane_gbps, encoding = 64.0 / 66.0;
    unsigned width;

    switch (port_attr->active_speed) {
    case 1:   lane_gbps = 2.5;     encoding = 8.0 / 10.0; break; /* SDR */
    case 2:   lane_gbps = 5.0;     encoding = 8.0 / 10.0; break; /* DDR */
    case 4:   lane_gbps = 10.0;    encoding = 8.0 / 10.0; break; /* QDR */
    case 8:   lane_gbps = 10.3125; break;                        /* FDR10 */
    case 16:  lane_gbps = 14.0625; break;                        /* FDR */
    case 32:  lane_gbps = 25.78125; break;                       /* EDR */
    case 64:  lane_gbps = 53.125;  break;                        /* HDR */
    case 128: lane_gbps = 106.25;  break;                        /* NDR */
    default:  lane_gbps = 10.0;    break;
    }

    switch (port_attr->active_width) {
    case 1:  width = 1;  break;
    case 2:  width = 4;  break;
    case 4:  width = 8;  break;
    case 8:  width = 12; break;
    case 16: width = 2;  break;
    default: width = 1;  break;
    }

    return lane_gbps * width * encoding * 1e9 / 8.0;
}


static ucs_status_t uct_srqud_iface_query(uct_iface_h tl_iface,
                                          uct_iface_attr_t *iface_attr)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    struct ibv_port_attr port_attr;
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
                                  UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE;
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
    iface_attr->cap.am.max_bcopy = max_packet;
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
    iface_attr->cap.put.align_mtu       = uct_srqud_mtu_bytes(iface->path_mtu);
    iface_attr->cap.put.max_iov         = 1;
    iface_attr->cap.get.max_short       = 0;
    iface_attr->cap.get.max_bcopy       = rma_get;
    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = UCT_SRQUD_RMA_MAX_ZCOPY;
    iface_attr->cap.get.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    iface_attr->cap.get.align_mtu       = uct_srqud_mtu_bytes(iface->path_mtu);
    iface_attr->cap.get.max_iov         = 1;
    iface_attr->cap.am.align_mtu = uct_srqud_mtu_bytes(iface->path_mtu);

    iface_attr->device_addr_len  = sizeof(uct_srqud_device_addr_t);
    iface_attr->iface_addr_len   = sizeof(uct_srqud_iface_addr_t);
    iface_attr->ep_addr_len      = 0;
    iface_attr->max_conn_priv    = 0;

    if (ibv_query_port(iface->md->ctx, iface->port_num, &port_attr) != 0) {
        return UCS_ERR_IO_ERROR;
    }

    /* A UD send costs about what an RC send does on the wire, plus the
     * software header; RoCE adds the Ethernet/UDP encapsulation. */
    iface_attr->latency            = ucs_linear_func_make(
                                         iface->is_roce ? 900e-9 : 700e-9, 0);
    iface_attr->overhead           = 80e-9;
    iface_attr->bandwidth.dedicated = 0;
    iface_attr->bandwidth.shared   = uct_srqud_port_bandwidth(&port_attr) *
                                     max_packet / (max_packet + 40 /* GRH */ +
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
           uct_srqud_iface_is_reachable_addr(iface, dev_addr);
}


static ucs_status_t uct_srqud_iface_create_qp(uct_srqud_iface_t *iface,
                                              const uct_srqud_iface_config_t *config)
{
    struct ibv_qp_init_attr qp_init_attr;
    struct ibv_qp_attr qp_attr;
    int ret;

    memset(&qp_init_attr, 0, sizeof(qp_init_attr));
    qp_init_attr.qp_type             = IBV_QPT_UD;
    qp_init_attr.send_cq             = iface->send_cq;
    qp_init_attr.recv_cq             = iface->recv_cq;
    qp_init_attr.srq                 = iface->srq;
    qp_init_attr.sq_sig_all          = 0;
    qp_init_attr.cap.max_send_wr     = config->tx_queue_len;
    /* the descriptor (headers) and the am_zcopy payload entries */
    qp_init_attr.cap.max_send_sge    = ucs_min(1 + UCT_SRQUD_MAX_IOV,
                                               iface->md->dev_attr.max_sge);
    qp_init_attr.cap.max_inline_data = 128;

    iface->qp = ibv_create_qp(iface->md->pd, &qp_init_attr);
    if (iface->qp == NULL) {
        /* some devices have less inline space: retry without */
        qp_init_attr.cap.max_inline_data = 0;
        iface->qp = ibv_create_qp(iface->md->pd, &qp_init_attr);
    }
    if (iface->qp == NULL) {
        ucs_error("%s: ibv_create_qp(UD, srq) failed: %m", iface->md->name);
        return UCS_ERR_IO_ERROR;
    }

    iface->config.max_inline    = qp_init_attr.cap.max_inline_data;
    iface->config.tx_qlen       = qp_init_attr.cap.max_send_wr;
    iface->config.zcopy_max_iov = ucs_min(qp_init_attr.cap.max_send_sge,
                                          1 + UCT_SRQUD_MAX_IOV) - 1;

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.qp_state   = IBV_QPS_INIT;
    qp_attr.pkey_index = 0;
    qp_attr.port_num   = iface->port_num;
    qp_attr.qkey       = UCT_SRQUD_QKEY;
    ret = ibv_modify_qp(iface->qp, &qp_attr,
                        IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                        IBV_QP_QKEY);
    if (ret != 0) {
        ucs_error("%s: ibv_modify_qp(INIT) failed: %s", iface->md->name,
                  strerror(ret));
        goto err;
    }

    qp_attr.qp_state = IBV_QPS_RTR;
    ret = ibv_modify_qp(iface->qp, &qp_attr, IBV_QP_STATE);
    if (ret != 0) {
        ucs_error("%s: ibv_modify_qp(RTR) failed: %s", iface->md->name,
                  strerror(ret));
        goto err;
    }

    qp_attr.qp_state = IBV_QPS_RTS;
    qp_attr.sq_psn   = 0;
    ret = ibv_modify_qp(iface->qp, &qp_attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
    if (ret != 0) {
        ucs_error("%s: ibv_modify_qp(RTS) failed: %s", iface->md->name,
                  strerror(ret));
        goto err;
    }

    return UCS_OK;

err:
    ibv_destroy_qp(iface->qp);
    iface->qp = NULL;
    return UCS_ERR_IO_ERROR;
}


static void uct_srqud_iface_vfs_refresh(uct_iface_h iface)
{
}


static uct_iface_ops_t uct_srqud_iface_tl_ops;

static uct_iface_internal_ops_t uct_srqud_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = uct_srqud_iface_vfs_refresh,
    .ep_query            = (uct_ep_query_func_t)ucs_empty_function_return_unsupported,
    .ep_invalidate       = (uct_ep_invalidate_func_t)ucs_empty_function_return_unsupported
};


static ucs_status_t uct_srqud_parse_dev_name(const char *dev_name,
                                             const char *md_name,
                                             uint8_t *port_p)
{
    const char *colon = strrchr(dev_name, ':');
    char *end;
    unsigned long port;

    if ((colon == NULL) || (strncmp(dev_name, md_name, colon - dev_name) != 0) ||
        (strlen(md_name) != (size_t)(colon - dev_name))) {
        ucs_error("srqud: device '%s' does not belong to %s", dev_name, md_name);
        return UCS_ERR_NO_DEVICE;
    }

    port = strtoul(colon + 1, &end, 10);
    if ((*end != '\0') || (port == 0) || (port > 255)) {
        ucs_error("srqud: invalid port in device name '%s'", dev_name);
        return UCS_ERR_NO_DEVICE;
    }

    *port_p = port;
    return UCS_OK;
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
    struct ibv_srq_init_attr srq_init_attr;
    size_t rx_headroom, hdr_len, mtu, am_align, am_align_offset;
    ucs_status_t status;
    int flags;

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

    /* UCS classes are not zeroed on allocation */
    self->md               = md;
    self->rx.posted        = 0;
    self->rx.stash_count   = 0;
    self->tx.available     = 0;
    self->tx.sn            = 0;
    self->tx.comp_sn       = 0;
    self->tx.stash_count   = 0;
    self->comp_channel     = NULL;
    self->send_cq          = NULL;
    self->recv_cq          = NULL;
    self->srq              = NULL;
    self->qp               = NULL;
    ucs_list_head_init(&self->md_list);
    ucs_queue_head_init(&self->tx.outstanding);
    ucs_list_head_init(&self->tx.active_list);
    ucs_list_head_init(&self->rx.ack_list);
    self->tx.next_timer    = 0;
    ucs_list_head_init(&self->rma.ops);
    self->rma.next_id      = 0;
    self->zcopy.pool       = NULL;
    self->async.timer_id   = -1;
    self->async.active     = 0;
    self->async.wake_user  = 0;
    uct_iface_set_async_event_params(params, &self->async.event_cb,
                                     &self->async.event_arg);
    self->async.last_progress = 0;
    ucs_queue_head_init(&self->async.rx_q);
    ucs_ptr_array_init(&self->eps, "srqud_eps");
    kh_init_inplace(uct_srqud_peer, &self->peers);
    ucs_arbiter_init(&self->tx.arbiter);
    ucs_spinlock_init(&self->rx.lock, 0);
    kh_init_inplace(uct_srqud_ah, &self->ah_hash);
    memset(&self->stats, 0, sizeof(self->stats));
    self->release_desc.cb = uct_srqud_iface_release_desc;

    if (self->super.worker->async == NULL) {
        ucs_error("srqud: the UCT worker needs an async context");
        status = UCS_ERR_INVALID_PARAM;
        goto err;
    }

    status = uct_srqud_parse_dev_name(params->mode.device.dev_name, md->name,
                                      &self->port_num);
    if (status != UCS_OK) {
        goto err;
    }

    if (ibv_query_port(md->ctx, self->port_num, &port_attr) != 0) {
        ucs_error("%s: ibv_query_port(%d) failed: %m", md->name, self->port_num);
        status = UCS_ERR_NO_DEVICE;
        goto err;
    }

    if (port_attr.state != IBV_PORT_ACTIVE) {
        ucs_error("%s:%d: port is not active", md->name, self->port_num);
        status = UCS_ERR_NO_DEVICE;
        goto err;
    }

    self->is_roce  = (port_attr.link_layer == IBV_LINK_LAYER_ETHERNET);
    self->lid      = port_attr.lid;
    self->path_mtu = port_attr.active_mtu;
    mtu            = uct_srqud_mtu_bytes(port_attr.active_mtu);
    if (mtu == 0) {
        ucs_error("%s:%d: unknown active MTU %d", md->name, self->port_num,
                  port_attr.active_mtu);
        status = UCS_ERR_NO_DEVICE;
        goto err;
    }

    status = uct_srqud_iface_check_config(self, config, mtu);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_srqud_iface_select_gid(self, &port_attr, config);
    if (status != UCS_OK) {
        goto err;
    }

    self->config.srq_size      = config->srq_size;
    self->config.srq_max_size  = config->srq_max_size;
    self->config.rx_cq_len     = 2 * config->srq_max_size;
    self->rx.target            = config->srq_size;
    self->rx.last_limit_event  = 0;
    self->config.rx_post_batch = config->rx_post_batch;
    self->config.tx_max_poll   = config->tx_max_poll;
    self->config.rx_max_poll   = config->rx_max_poll;
    self->config.sl            = config->sl;
    self->config.traffic_class = config->traffic_class;
    self->config.hop_limit     = config->hop_limit;
    self->config.seg_size      = (config->seg_size == UCS_MEMUNITS_AUTO) ?
                                 mtu : config->seg_size;
    self->config.mtu           = mtu;
    self->config.stats_dump    = config->stats_dump;
    self->zcopy.pool_size      = config->zcopy_qps;
    self->zcopy.thresh         = config->zcopy_thresh;
    self->zcopy.rq_depth       = config->zcopy_rq_depth;
    self->zcopy.sq_depth       = config->zcopy_sq_depth;
    self->config.tx_window     = config->tx_window;
    self->config.ack_thresh    = config->ack_thresh;
    self->config.rto_min       = ucs_time_from_sec(config->rto_min);
    self->config.ack_delay     = ucs_time_from_sec(config->ack_delay);
    self->config.rto_max       = ucs_time_from_sec(config->rto_max);
    self->config.peer_timeout  = ucs_time_from_sec(config->peer_timeout);
    self->async.tick           = ucs_time_from_sec(config->async_tick);
    self->config.fault_drop    = (uint32_t)(config->fault_tx_drop * 4294967295.0);
    self->config.fault_dup     = (uint32_t)(config->fault_tx_dup * 4294967295.0);
    self->fault_rand           = ucs_get_time() | 1;
    /* random start: a process that reuses a dead one's QP number and ep
     * ids must not look like that process to its peers */
    self->conn_sn              = ucs_generate_uuid((uintptr_t)self);
    if (self->config.fault_drop || self->config.fault_dup) {
        ucs_warn("%s: fault injection on: dropping %g and duplicating %g of "
                 "sent packets", md->name, config->fault_tx_drop,
                 config->fault_tx_dup);
    }

    self->comp_channel = ibv_create_comp_channel(md->ctx);
    if (self->comp_channel == NULL) {
        ucs_error("%s: ibv_create_comp_channel() failed: %m", md->name);
        status = UCS_ERR_IO_ERROR;
        goto err;
    }

    flags = fcntl(self->comp_channel->fd, F_GETFL);
    if ((flags < 0) ||
        (fcntl(self->comp_channel->fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        ucs_error("%s: failed to make the completion channel non-blocking: %m",
                  md->name);
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_channel;
    }

    /* Wakeups through the user's callback: UCX's async thread watches the
     * channel (its CQs are armed only by event_arm, when the user is about
     * to sleep, so a busy user pays nothing) */
    if (self->async.event_cb != NULL) {
        status = ucs_async_set_event_handler(self->super.worker->async->mode,
                                             self->comp_channel->fd,
                                             UCS_EVENT_SET_EVREAD,
                                             uct_srqud_iface_channel_event,
                                             self, self->super.worker->async);
        if (status != UCS_OK) {
            ucs_error("%s: failed to watch the completion channel: %s",
                      md->name, ucs_status_string(status));
            goto err_destroy_channel;
        }
    }

    self->send_cq = ibv_create_cq(md->ctx, config->tx_queue_len, NULL,
                                  self->comp_channel, 0);
    if (self->send_cq == NULL) {
        ucs_error("%s: ibv_create_cq(send, %u) failed: %m", md->name,
                  config->tx_queue_len);
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_channel;
    }

    self->recv_cq = ibv_create_cq(md->ctx, self->config.rx_cq_len, NULL,
                                  self->comp_channel, 0);
    if (self->recv_cq == NULL) {
        ucs_error("%s: ibv_create_cq(recv, %u) failed: %m", md->name,
                  self->config.rx_cq_len);
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_send_cq;
    }

    memset(&srq_init_attr, 0, sizeof(srq_init_attr));
    srq_init_attr.attr.max_wr  = config->srq_max_size;
    srq_init_attr.attr.max_sge = 1;
    self->srq = ibv_create_srq(md->pd, &srq_init_attr);
    if (self->srq == NULL) {
        ucs_error("%s: ibv_create_srq(%u) failed: %m", md->name,
                  config->srq_max_size);
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_recv_cq;
    }

    status = uct_srqud_iface_create_qp(self, config);
    if (status != UCS_OK) {
        goto err_destroy_srq;
    }
    self->tx.available = self->config.tx_qlen;

    /* Receive buffers: see the layout in srqud_iface.h */
    rx_headroom = (params->field_mask & UCT_IFACE_PARAM_FIELD_RX_HEADROOM) ?
                  params->rx_headroom : 0;
    hdr_len     = UCT_SRQUD_GRH_LEN + sizeof(uct_srqud_neth_t);
    self->config.rx_payload_offset  = sizeof(uct_srqud_recv_desc_t) +
                                      ucs_max(sizeof(uct_recv_desc_t) +
                                              rx_headroom, hdr_len);
    self->config.rx_hdr_offset      = self->config.rx_payload_offset - hdr_len;
    self->config.rx_headroom_offset = self->config.rx_payload_offset -
                                      rx_headroom;

    /* The payload is aligned as the user asks (UCT_IFACE_PARAM_FIELD_AM_
     * ALIGNMENT), by default to a cache line */
    status = uct_iface_param_am_alignment(params, self->config.seg_size,
                                          self->config.rx_payload_offset,
                                          self->config.rx_payload_offset,
                                          &am_align, &am_align_offset);
    if (status != UCS_OK) {
        goto err_destroy_qp;
    }

    status = uct_iface_mpool_init(&self->super, &self->rx.mp,
                                  self->config.rx_payload_offset +
                                  self->config.seg_size -
                                  sizeof(uct_srqud_neth_t),
                                  am_align_offset, am_align, &config->rx_mp,
                                  config->srq_size,
                                  uct_srqud_iface_recv_desc_init, "srqud_rx");
    if (status != UCS_OK) {
        goto err_destroy_qp;
    }

    status = uct_iface_mpool_init(&self->super, &self->tx.mp,
                                  sizeof(uct_srqud_send_desc_t) +
                                  self->config.seg_size,
                                  sizeof(uct_srqud_send_desc_t),
                                  UCS_SYS_CACHE_LINE_SIZE, &config->tx_mp,
                                  self->config.tx_qlen,
                                  uct_srqud_iface_send_desc_init, "srqud_tx");
    if (status != UCS_OK) {
        goto err_cleanup_rx_mp;
    }

    /* Buffers for the initial posting and one refill's worth more: the
     * LIMIT thread must not wait for memory registration when it refills */
    ucs_mpool_grow(&self->rx.mp, 2 * self->config.srq_size);

    status = uct_srqud_iface_srq_post(self, self->config.srq_size);
    if (status != UCS_OK) {
        goto err_cleanup_tx_mp;
    }

    /* The watermark (Eq. 5) */
    self->stats.t_wakeup = uct_srqud_measure_wakeup();
    if (config->srq_limit == UCS_ULUNITS_AUTO) {
        self->rx.limit = uct_srqud_watermark(
                uct_srqud_port_bandwidth(&port_attr) / 1e6,
                UCT_SRQUD_MIN_WIRE_PACKET, self->stats.t_wakeup * 1e3,
                config->srq_size);
    } else {
        self->rx.limit = config->srq_limit;
    }
    status = uct_srqud_iface_arm_srq(self);
    if (status != UCS_OK) {
        goto err_cleanup_tx_mp;
    }

    status = uct_srqud_zcopy_init(self);
    if (status != UCS_OK) {
        goto err_cleanup_tx_mp;
    }

    status = ucs_async_add_timer(self->super.worker->async->mode, self->async.tick,
                                 uct_srqud_iface_async_timer, self,
                                 self->super.worker->async,
                                 &self->async.timer_id);
    if (status != UCS_OK) {
        ucs_error("%s: failed to add the async progress timer: %s", md->name,
                  ucs_status_string(status));
        uct_srqud_zcopy_cleanup(self);
        goto err_cleanup_tx_mp;
    }

    uct_srqud_md_iface_attach(md, self);

    ucs_debug("%s:%d: srqud iface %p qpn 0x%x gid_index %d mtu %zu srq %u "
              "limit %u (t_wakeup %.1f us) inline %zu", md->name,
              self->port_num, self, self->qp->qp_num, self->gid_index, mtu,
              self->config.srq_size, self->rx.limit,
              self->stats.t_wakeup * 1e6, self->config.max_inline);
    return UCS_OK;

err_cleanup_tx_mp:
    ucs_mpool_cleanup(&self->tx.mp, 1);
err_cleanup_rx_mp:
    /* buffers posted before the failure go away with the SRQ */
    ibv_destroy_qp(self->qp);
    self->qp = NULL;
    ibv_destroy_srq(self->srq);
    self->srq = NULL;
    ucs_mpool_cleanup(&self->rx.mp, 0);
err_destroy_qp:
    if (self->qp != NULL) {
        ibv_destroy_qp(self->qp);
    }
err_destroy_srq:
    if (self->srq != NULL) {
        ibv_destroy_srq(self->srq);
    }
err_destroy_recv_cq:
    ibv_destroy_cq(self->recv_cq);
err_destroy_send_cq:
    ibv_destroy_cq(self->send_cq);
err_destroy_channel:
    if (self->async.event_cb != NULL) {
        ucs_async_remove_handler(self->comp_channel->fd, 1);
    }
    ibv_destroy_comp_channel(self->comp_channel);
err:
    kh_destroy_inplace(uct_srqud_peer, &self->peers);
    ucs_ptr_array_cleanup(&self->eps, 0);
    kh_destroy_inplace(uct_srqud_ah, &self->ah_hash);
    ucs_spinlock_destroy(&self->rx.lock);
    ucs_arbiter_cleanup(&self->tx.arbiter);
    return status;
}


/* The counters, at close: in the debug log, or on stderr with
 * UCX_SRQUD_STATS_DUMP=y (how tests and benchmarks see what UCP did) */
static void uct_srqud_iface_print_stats(uct_srqud_iface_t *iface)
{
    const uct_srqud_iface_stats_t *s = &iface->stats;
    char line[1024];

    snprintf(line, sizeof(line),
             "rx %lu tx %lu malformed %lu retransmits %lu timeouts %lu "
             "dups %lu gaps %lu acks %lu nacks %lu failures %lu "
             "srq_limit_events %lu srq_refilled %lu srq_grows %lu "
             "async_progress %lu async_queued %lu keepalives %lu "
             "am_zcopy %lu lingered %lu zcopy_xfers %lu zcopy_chunks_sent %lu "
             "zcopy_misplaced %lu zcopy_moved %lu zcopy_rounds_extra %lu "
             "zcopy_fallbacks %lu rma_copy_ops %lu fault_dropped %lu "
             "fault_duplicated %lu zcopy_stale %lu",
             s->rx_packets, s->tx_packets, s->rx_dropped_malformed,
             s->tx_retransmits, s->tx_timeouts, s->rx_duplicates,
             s->rx_out_of_order, s->acks_sent, s->nacks_sent, s->ep_failures,
             s->srq_limit_events, s->srq_refilled, s->srq_grows,
             s->async_progress, s->async_queued, s->keepalives, s->am_zcopy,
             s->ep_lingered, s->zcopy_xfers, s->zcopy_chunks_sent,
             s->zcopy_misplaced, s->zcopy_moved, s->zcopy_rounds_extra,
             s->zcopy_fallbacks, s->rma_copy_ops, s->fault_dropped,
             s->fault_duplicated, s->zcopy_stale);
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
    uct_srqud_recv_desc_t *rdesc;
    uct_srqud_send_desc_t *desc;
    uct_srqud_ep_t *ep;
    struct ibv_ah *ah;
    unsigned i;

    /* After this, the async thread no longer sees the interface: the
     * removal waits for a running callback */
    ucs_async_remove_handler(self->async.timer_id, 1);
    if (self->async.event_cb != NULL) {
        ucs_async_remove_handler(self->comp_channel->fd, 1);
    }
    uct_srqud_md_iface_detach(self->md, self);

    uct_srqud_enter(self);
    ucs_queue_for_each_extract(rdesc, &self->async.rx_q, queue, 1) {
        uct_srqud_iface_put_recv_desc(self, rdesc);
    }

    /* transfers still going (peers' ones; the user's eps are gone): their
     * QPs go first, so that nothing is in flight when they are freed */
    uct_srqud_zcopy_cleanup(self);

    /* Passive endpoints belong to the interface, and so do endpoints the
     * user destroyed that were still lingering */
    ucs_ptr_array_for_each(ep, i, &self->eps) {
        uct_srqud_ep_destroy_internal(ep);
    }
    kh_destroy_inplace(uct_srqud_peer, &self->peers);
    ucs_ptr_array_cleanup(&self->eps, 0);
    uct_srqud_leave(self);

    uct_srqud_iface_print_stats(self);

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    ibv_destroy_qp(self->qp);
    ibv_destroy_srq(self->srq);

    ucs_queue_for_each_extract(desc, &self->tx.outstanding, queue, 1) {
        desc->flags &= ~UCT_SRQUD_DESC_FLAG_IN_WINDOW; /* its ep is gone */
        uct_srqud_send_desc_completed(self, desc);
    }

    kh_foreach_value(&self->ah_hash, ah, ibv_destroy_ah(ah));
    kh_destroy_inplace(uct_srqud_ah, &self->ah_hash);

    ibv_destroy_cq(self->recv_cq);
    ibv_destroy_cq(self->send_cq);
    ibv_destroy_comp_channel(self->comp_channel);

    ucs_mpool_cleanup(&self->tx.mp, 1);
    /* buffers that were posted on the SRQ are not returned to the pool */
    ucs_mpool_cleanup(&self->rx.mp, 0);
    ucs_spinlock_destroy(&self->rx.lock);
    ucs_arbiter_cleanup(&self->tx.arbiter);
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
    .ep_put_short             = uct_srqud_ep_put_short,
    .ep_put_bcopy             = uct_srqud_ep_put_bcopy,
    .ep_put_zcopy             = uct_srqud_ep_put_zcopy,
    .ep_get_bcopy             = uct_srqud_ep_get_bcopy,
    .ep_get_zcopy             = uct_srqud_ep_get_zcopy,
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
    .iface_progress           = uct_srqud_iface_progress,
    .iface_event_fd_get       = uct_srqud_iface_event_fd_get,
    .iface_event_arm          = uct_srqud_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_srqud_iface_t),
    .iface_query              = uct_srqud_iface_query,
    .iface_get_device_address = uct_srqud_iface_get_device_address,
    .iface_get_address        = uct_srqud_iface_get_address,
    .iface_is_reachable       = uct_srqud_iface_is_reachable
};


static ucs_status_t
uct_srqud_query_tl_devices(uct_md_h tl_md,
                           uct_tl_device_resource_t **tl_devices_p,
                           unsigned *num_tl_devices_p)
{
    uct_srqud_md_t *md = ucs_derived_of(tl_md, uct_srqud_md_t);
    uct_tl_device_resource_t *devices;
    struct ibv_port_attr port_attr;
    unsigned num_devices = 0;
    uint8_t port;

    devices = ucs_calloc(md->dev_attr.phys_port_cnt, sizeof(*devices),
                         "srqud_tl_devices");
    if (devices == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    for (port = 1; port <= md->dev_attr.phys_port_cnt; ++port) {
        if ((ibv_query_port(md->ctx, port, &port_attr) != 0) ||
            (port_attr.state != IBV_PORT_ACTIVE)) {
            continue;
        }

        ucs_snprintf_zero(devices[num_devices].name,
                          sizeof(devices[num_devices].name), "%s:%d",
                          md->name, port);
        devices[num_devices].type       = UCT_DEVICE_TYPE_NET;
        devices[num_devices].sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
        ++num_devices;
    }

    if (num_devices == 0) {
        ucs_free(devices);
        devices = NULL;
    }

    *tl_devices_p     = devices;
    *num_tl_devices_p = num_devices;
    return UCS_OK;
}


UCT_TL_DEFINE_ENTRY(&uct_srqud_component, srqud, uct_srqud_query_tl_devices,
                    uct_srqud_iface_t, UCT_SRQUD_CONFIG_PREFIX,
                    uct_srqud_iface_config_table, uct_srqud_iface_config_t);

/* Registered from the library constructor, so that both dlopen() by UCX and
 * LD_PRELOAD on a UCX that does not know the module work. */
UCT_SINGLE_TL_INIT(&uct_srqud_component, srqud, ctor,,)
