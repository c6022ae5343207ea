/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_dev.h"
#include "srqud_gid.h"
#include "srqud_verbs.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>


static ucs_status_t uct_srqud_dev_parse_name(const char *dev_name,
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


ucs_status_t uct_srqud_dev_port_open(uct_srqud_iface_t *iface,
                                     const char *dev_name,
                                     struct ibv_port_attr *port_attr,
                                     size_t *mtu_p)
{
    uct_srqud_md_t *md = iface->md;
    ucs_status_t status;

    status = uct_srqud_dev_parse_name(dev_name, md->name, &iface->port_num);
    if (status != UCS_OK) {
        return status;
    }

    if (ibv_query_port(md->ctx, iface->port_num, port_attr) != 0) {
        ucs_error("%s: ibv_query_port(%d) failed: %m", md->name,
                  iface->port_num);
        return UCS_ERR_NO_DEVICE;
    }

    if (port_attr->state != IBV_PORT_ACTIVE) {
        ucs_error("%s:%d: port is not active", md->name, iface->port_num);
        return UCS_ERR_NO_DEVICE;
    }

    iface->is_roce  = (port_attr->link_layer == IBV_LINK_LAYER_ETHERNET);
    iface->lid      = port_attr->lid;
    iface->path_mtu = port_attr->active_mtu;
    *mtu_p          = uct_srqud_verbs_mtu_bytes(port_attr->active_mtu);
    if (*mtu_p == 0) {
        ucs_error("%s:%d: unknown active MTU %d", md->name, iface->port_num,
                  port_attr->active_mtu);
        return UCS_ERR_NO_DEVICE;
    }
    return UCS_OK;
}


ucs_status_t uct_srqud_dev_select_gid(uct_srqud_iface_t *iface,
                                      const struct ibv_port_attr *port_attr)
{
    uct_srqud_md_t *md = iface->md;
    int index;

    if (iface->config.gid_index != UCS_ULUNITS_AUTO) {
        if (iface->config.gid_index >= port_attr->gid_tbl_len) {
            ucs_error("%s:%d: UCX_SRQUD_GID_INDEX=%lu is out of range (table has %d entries)",
                      md->name, iface->port_num, iface->config.gid_index,
                      port_attr->gid_tbl_len);
            return UCS_ERR_INVALID_PARAM;
        }
        index = iface->config.gid_index;
    } else {
        index = uct_srqud_verbs_gid_auto(md->ctx, iface->port_num, port_attr);
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


ucs_status_t uct_srqud_dev_ud_qp_create(uct_srqud_iface_t *iface,
                                        struct ibv_qp_init_attr *init,
                                        const char *what,
                                        struct ibv_qp **qp_p)
{
    uct_srqud_verbs_qp_step_t step;
    int ret;

    ret = uct_srqud_verbs_ud_qp_create(iface->md->pd, init, iface->port_num,
                                       UCT_SRQUD_QKEY, qp_p, &step);
    if (ret != 0) {
        ucs_error("%s: %s of the %s QP failed: %s", iface->md->name,
                  uct_srqud_verbs_qp_step_str(step), what, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}


ucs_status_t uct_srqud_dev_ud_qp_set_qkey(uct_srqud_iface_t *iface,
                                          struct ibv_qp *qp, uint32_t qkey,
                                          const char *what)
{
    struct ibv_qp_attr attr;
    int ret;

    /* RTS to RTS: a UD QP may change its Q_Key without leaving RTS */
    memset(&attr, 0, sizeof(attr));
    attr.qkey = qkey;
    ret       = ibv_modify_qp(qp, &attr, IBV_QP_QKEY);
    if (ret != 0) {
        ucs_error("%s: setting the Q_Key of the %s QP 0x%x failed: %s",
                  iface->md->name, what, qp->qp_num, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}


ucs_status_t uct_srqud_dev_ud_qp_reset(uct_srqud_iface_t *iface,
                                       struct ibv_qp *qp, const char *what,
                                       int failed)
{
    uct_srqud_verbs_qp_step_t step;
    int ret;

    if (failed) {
        ++iface->stats.qp_resets;
        ucs_log(ucs_is_pow2(iface->stats.qp_resets) ? UCS_LOG_LEVEL_WARN :
                                                      UCS_LOG_LEVEL_DEBUG,
                "%s: the %s QP 0x%x failed a send, resetting it (%lu resets)",
                iface->md->name, what, qp->qp_num, iface->stats.qp_resets);
    } else {
        ucs_debug("%s: the %s QP 0x%x is reset: its posted sends read "
                  "memory their user gets back", iface->md->name, what,
                  qp->qp_num);
    }
    ret = uct_srqud_verbs_ud_qp_reset(qp, iface->port_num, UCT_SRQUD_QKEY,
                                      &step);
    if (ret != 0) {
        ucs_error("%s: %s of the %s QP failed: %s", iface->md->name,
                  uct_srqud_verbs_qp_step_str(step), what, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}


struct ibv_cq *uct_srqud_dev_cq_create(uct_srqud_iface_t *iface, unsigned cqe,
                                       struct ibv_comp_channel *channel,
                                       const char *what)
{
    struct ibv_cq *cq = ibv_create_cq(iface->md->ctx, cqe, NULL, channel, 0);

    if (cq == NULL) {
        ucs_error("%s: ibv_create_cq(%s, %u) failed: %m", iface->md->name,
                  what, cqe);
    }
    return cq;
}


ucs_status_t uct_srqud_dev_port_bandwidth(uct_srqud_iface_t *iface,
                                          double *bw_p)
{
    struct ibv_port_attr port_attr;

    /* asked each time: a port's speed may change (auto-negotiation) */
    if (ibv_query_port(iface->md->ctx, iface->port_num, &port_attr) != 0) {
        return UCS_ERR_IO_ERROR;
    }
    *bw_p = uct_srqud_verbs_port_bandwidth(&port_attr);
    return UCS_OK;
}


ucs_status_t uct_srqud_dev_create_qp(uct_srqud_iface_t *iface)
{
    struct ibv_qp_init_attr init;
    uct_srqud_verbs_qp_step_t step;
    int ret;

    memset(&init, 0, sizeof(init));
    init.send_cq             = iface->send_cq;
    init.recv_cq             = iface->recv_cq;
    init.srq                 = iface->rx.pool->srq;
    init.sq_sig_all          = 0;
    init.cap.max_send_wr     = iface->config.tx_queue_len;
    /* the descriptor (headers) and the am_zcopy payload entries */
    init.cap.max_send_sge    = ucs_min(1 + UCT_SRQUD_MAX_IOV,
                                       iface->md->dev_attr.max_sge);
    init.cap.max_inline_data = 128;

    ret = uct_srqud_verbs_ud_qp_create(iface->qp_pd, &init, iface->port_num,
                                       UCT_SRQUD_QKEY, &iface->qp, &step);
    if ((ret != 0) && (step == UCT_SRQUD_VERBS_QP_CREATE)) {
        /* some devices have less inline space: retry without */
        init.cap.max_inline_data = 0;
        ret = uct_srqud_verbs_ud_qp_create(iface->qp_pd, &init,
                                           iface->port_num, UCT_SRQUD_QKEY,
                                           &iface->qp, &step);
    }
    if (ret != 0) {
        ucs_error("%s: %s (UD, srq) failed: %s", iface->md->name,
                  uct_srqud_verbs_qp_step_str(step), strerror(ret));
        iface->qp = NULL;
        return UCS_ERR_IO_ERROR;
    }

    iface->config.max_inline    = init.cap.max_inline_data;
    iface->config.tx_qlen       = init.cap.max_send_wr;
    iface->config.zcopy_max_iov = ucs_min(init.cap.max_send_sge,
                                          1 + UCT_SRQUD_MAX_IOV) - 1;
    return UCS_OK;
}


static ucs_status_t uct_srqud_dev_create_channel(uct_srqud_iface_t *iface)
{
    int flags;

    iface->comp_channel = ibv_create_comp_channel(iface->md->ctx);
    if (iface->comp_channel == NULL) {
        ucs_error("%s: ibv_create_comp_channel() failed: %m", iface->md->name);
        return UCS_ERR_IO_ERROR;
    }

    flags = fcntl(iface->comp_channel->fd, F_GETFL);
    if ((flags < 0) ||
        (fcntl(iface->comp_channel->fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        ucs_error("%s: failed to make the completion channel non-blocking: %m",
                  iface->md->name);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}


/*
 * SHARE=td: the QP and CQs of this interface in a thread domain of their
 * own, through a parent domain of the md's PD (so the md's registrations
 * still serve them). A provider without thread domains (rxe answers
 * EOPNOTSUPP) gets plain objects, as with SHARE=pd: said once per md, and
 * iface->config.share tells which it got.
 */
static void uct_srqud_dev_thread_domain(uct_srqud_iface_t *iface)
{
    uct_srqud_md_t *md = iface->md;
    struct ibv_parent_domain_init_attr pd_attr;
    struct ibv_td_init_attr td_attr;
    struct ibv_pd *parent;

    memset(&td_attr, 0, sizeof(td_attr));
    iface->td = ibv_alloc_td(md->ctx, &td_attr);
    if (iface->td != NULL) {
        memset(&pd_attr, 0, sizeof(pd_attr));
        pd_attr.pd = md->pd;
        pd_attr.td = iface->td;
        parent     = ibv_alloc_parent_domain(md->ctx, &pd_attr);
        if (parent != NULL) {
            iface->qp_pd = parent;
            return;
        }
        ibv_dealloc_td(iface->td);
        iface->td = NULL;
    }

    if (!md->td_fallback_logged) {
        md->td_fallback_logged = 1;
        ucs_info("%s: UCX_SRQUD_SHARE=td: the device has no thread domains "
                 "(%m); each worker gets plain QPs and CQs, as with pd",
                 md->name);
    }
    iface->config.share = UCT_SRQUD_SHARE_PD;
}


static struct ibv_cq *uct_srqud_dev_iface_cq(uct_srqud_iface_t *iface,
                                             unsigned cqe, const char *what)
{
    struct ibv_cq_init_attr_ex attr;
    struct ibv_cq_ex *cq;

    if (iface->td == NULL) {
        return uct_srqud_dev_cq_create(iface, cqe, iface->comp_channel, what);
    }

    /* in the interface's parent domain: the provider skips its CQ lock */
    memset(&attr, 0, sizeof(attr));
    attr.cqe           = cqe;
    attr.channel       = iface->comp_channel;
    attr.wc_flags      = IBV_WC_STANDARD_FLAGS;
    attr.comp_mask     = IBV_CQ_INIT_ATTR_MASK_PD;
    attr.parent_domain = iface->qp_pd;
    cq = ibv_create_cq_ex(iface->md->ctx, &attr);
    if (cq == NULL) {
        ucs_error("%s: ibv_create_cq_ex(%s, %u, parent domain) failed: %m",
                  iface->md->name, what, cqe);
        return NULL;
    }
    return ibv_cq_ex_to_cq(cq);
}


ucs_status_t uct_srqud_dev_create(uct_srqud_iface_t *iface)
{
    ucs_status_t status;

    iface->qp_pd = iface->md->pd;
    if (iface->config.share == UCT_SRQUD_SHARE_TD) {
        uct_srqud_dev_thread_domain(iface);
    }

    status = uct_srqud_dev_create_channel(iface);
    if (status != UCS_OK) {
        return status;
    }

    iface->send_cq = uct_srqud_dev_iface_cq(iface, iface->config.tx_queue_len,
                                            "send");
    if (iface->send_cq == NULL) {
        return UCS_ERR_IO_ERROR;
    }

    iface->recv_cq = uct_srqud_dev_iface_cq(iface, iface->config.rx_cq_len,
                                            "recv");
    if (iface->recv_cq == NULL) {
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}


void uct_srqud_dev_destroy_queues(uct_srqud_iface_t *iface)
{
    if (iface->qp != NULL) {
        ibv_destroy_qp(iface->qp);
        iface->qp = NULL;
    }
}


void uct_srqud_dev_destroy(uct_srqud_iface_t *iface)
{
    uct_srqud_ah_entry_t *entry;

    uct_srqud_dev_destroy_queues(iface);
    kh_foreach_value(&iface->ah_hash, entry, {
        ibv_destroy_ah(entry->ah);
        ucs_free(entry);
    });
    kh_destroy_inplace(uct_srqud_ah, &iface->ah_hash);
    if (iface->recv_cq != NULL) {
        ibv_destroy_cq(iface->recv_cq);
    }
    if (iface->send_cq != NULL) {
        ibv_destroy_cq(iface->send_cq);
    }
    if (iface->comp_channel != NULL) {
        ibv_destroy_comp_channel(iface->comp_channel);
    }
    if (iface->td != NULL) {
        ibv_dealloc_pd(iface->qp_pd);
        ibv_dealloc_td(iface->td);
    }
}


static void uct_srqud_dev_ah_key(const uct_srqud_device_addr_t *dev_addr,
                                 uct_srqud_ah_key_t *key)
{
    memset(key, 0, sizeof(*key));
    memcpy(key->gid, dev_addr->gid, sizeof(key->gid));
    key->lid = dev_addr->lid;
}


static uct_srqud_ah_entry_t*
uct_srqud_dev_ah_lookup(uct_srqud_iface_t *iface,
                        const uct_srqud_device_addr_t *dev_addr)
{
    uct_srqud_ah_key_t key;
    khiter_t it;

    uct_srqud_dev_ah_key(dev_addr, &key);
    it = kh_get(uct_srqud_ah, &iface->ah_hash, key);
    return (it == kh_end(&iface->ah_hash)) ? NULL :
           kh_value(&iface->ah_hash, it);
}


struct ibv_ah *uct_srqud_dev_ah_find(uct_srqud_iface_t *iface,
                                     const uct_srqud_device_addr_t *dev_addr)
{
    uct_srqud_ah_entry_t *entry = uct_srqud_dev_ah_lookup(iface, dev_addr);

    return (entry == NULL) ? NULL : entry->ah;
}


ucs_status_t uct_srqud_dev_ah_get(uct_srqud_iface_t *iface,
                                  const uct_srqud_device_addr_t *dev_addr,
                                  uct_srqud_ah_entry_t **entry_p)
{
    struct ibv_ah_attr ah_attr;
    uct_srqud_ah_entry_t *entry;
    struct ibv_ah *ah;
    khiter_t it;
    int ret;

    entry = uct_srqud_dev_ah_lookup(iface, dev_addr);
    if (entry != NULL) {
        if (entry->refcount++ == 0) {
            ucs_list_del(&entry->unused);
            --iface->ah_unused_count;
        }
        *entry_p = entry;
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

    entry = ucs_malloc(sizeof(*entry), "srqud_ah");
    if (entry == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    ah = ibv_create_ah(iface->md->pd, &ah_attr);
    if (ah == NULL) {
        /* also for a peer's forged address: not a line per packet */
        if (uct_srqud_iface_log_allowed(iface)) {
            ucs_error("%s:%d: ibv_create_ah() failed: %m (%lu more since the "
                      "last report)", iface->md->name, iface->port_num,
                      iface->log_suppressed);
            iface->log_suppressed = 0;
        }
        ucs_free(entry);
        return UCS_ERR_INVALID_ADDR;
    }

    uct_srqud_dev_ah_key(dev_addr, &entry->key);
    it = kh_put(uct_srqud_ah, &iface->ah_hash, entry->key, &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        ibv_destroy_ah(ah);
        ucs_free(entry);
        return UCS_ERR_NO_MEMORY;
    }

    entry->ah                   = ah;
    entry->refcount             = 1;
    kh_value(&iface->ah_hash, it) = entry;
    *entry_p                    = entry;
    return UCS_OK;
}


void uct_srqud_dev_ah_put(uct_srqud_iface_t *iface,
                          uct_srqud_ah_entry_t *entry)
{
    khiter_t it;

    ucs_assert(entry->refcount > 0);
    if (--entry->refcount > 0) {
        return;
    }

    ucs_list_add_tail(&iface->ah_unused, &entry->unused);
    if (++iface->ah_unused_count <= UCT_SRQUD_AH_UNUSED_MAX) {
        return;
    }

    /* the oldest unused one goes; no send uses it any more (a zero-copy
     * job that outlives its ep holds a reference of its own) */
    entry = ucs_list_extract_head(&iface->ah_unused, uct_srqud_ah_entry_t,
                                  unused);
    --iface->ah_unused_count;
    it = kh_get(uct_srqud_ah, &iface->ah_hash, entry->key);
    if (it != kh_end(&iface->ah_hash)) {
        kh_del(uct_srqud_ah, &iface->ah_hash, it);
    }
    ibv_destroy_ah(entry->ah);
    ucs_free(entry);
}


ucs_status_t uct_srqud_dev_src_gid(uct_srqud_iface_t *iface,
                                   const struct ibv_wc *wc,
                                   const void *grh, uint8_t *gid)
{
    struct ibv_ah_attr ah_attr;

    if (!(wc->wc_flags & IBV_WC_GRH)) {
        if (iface->is_roce) {
            return UCS_ERR_INVALID_ADDR;
        }
        uct_srqud_gid_from_lid(iface->gid.raw, wc->slid, gid);
        return UCS_OK;
    }

    /* rdma-core decodes both IPv6 and IPv4 (RoCE v2) headers */
    if (ibv_init_ah_from_wc(iface->md->ctx, iface->port_num,
                            (struct ibv_wc*)wc, (struct ibv_grh*)grh,
                            &ah_attr) != 0) {
        return UCS_ERR_INVALID_ADDR;
    }
    memcpy(gid, ah_attr.grh.dgid.raw, 16);
    return UCS_OK;
}


void uct_srqud_dev_cq_events_drain(uct_srqud_iface_t *iface)
{
    struct ibv_cq *cq;
    void *cq_ctx;

    while (ibv_get_cq_event(iface->comp_channel, &cq, &cq_ctx) == 0) {
        ibv_ack_cq_events(cq, 1);
    }
}


int uct_srqud_dev_cq_arm(uct_srqud_iface_t *iface, struct ibv_cq *cq,
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


ucs_status_t
uct_srqud_dev_query_tl_devices(uct_md_h tl_md,
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
