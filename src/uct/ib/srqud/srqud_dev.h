/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The device layer: the one place that opens a port, chooses the GID and
 * MTU, and creates the verbs objects of an interface (thread domain,
 * completion channel, CQs, the UD QP, address handles; the SRQ is the
 * receive pool's, srqud_rxpool.c), and the one UD QP create function
 * that the interface and the zero-copy pool use (srqud_verbs.c, shared with
 * the tools). The protocol files reach verbs through this layer and
 * srqud_rx.c / srqud_tx.c / srqud_zengine.c only.
 */

#ifndef UCT_SRQUD_DEV_H_
#define UCT_SRQUD_DEV_H_

#include "srqud_iface.h"


/* The port of "<device>:<port>": active, its link layer, LID and MTU */
ucs_status_t uct_srqud_dev_port_open(uct_srqud_iface_t *iface,
                                     const char *dev_name,
                                     struct ibv_port_attr *port_attr,
                                     size_t *mtu_p);

/* The GID to send from: UCX_SRQUD_GID_INDEX, or chosen (srqud_gid.h) */
ucs_status_t uct_srqud_dev_select_gid(uct_srqud_iface_t *iface,
                                      const struct ibv_port_attr *port_attr);

/* Thread domain (SHARE=td), completion channel and CQs, from
 * iface->config */
ucs_status_t uct_srqud_dev_create(uct_srqud_iface_t *iface);

/* The UD QP, attached to the receive pool's SRQ (after uct_srqud_rx_init) */
ucs_status_t uct_srqud_dev_create_qp(uct_srqud_iface_t *iface);

/* The QP: nothing is received or sent on it after this */
void uct_srqud_dev_destroy_queues(uct_srqud_iface_t *iface);

/* The rest (address handles, CQs, channel, domains), after the QP */
void uct_srqud_dev_destroy(uct_srqud_iface_t *iface);

/* A CQ (@a what names it in the error message); NULL on failure */
struct ibv_cq *uct_srqud_dev_cq_create(uct_srqud_iface_t *iface, unsigned cqe,
                                       struct ibv_comp_channel *channel,
                                       const char *what);

/* The link bandwidth of the interface's port now, bytes per second */
ucs_status_t uct_srqud_dev_port_bandwidth(uct_srqud_iface_t *iface,
                                          double *bw_p);

/* A UD QP in RTS on the interface's port (logs what failed) */
ucs_status_t uct_srqud_dev_ud_qp_create(uct_srqud_iface_t *iface,
                                        struct ibv_qp_init_attr *init,
                                        const char *what,
                                        struct ibv_qp **qp_p);

/* A UD QP of the interface that went to the error state (a send failed:
 * on Soft-RoCE, while the link was down) back to RTS with its QP number;
 * its work requests are gone without completions. Logs the first of a
 * series at warning level (a link that stays down fails every retry). */
ucs_status_t uct_srqud_dev_ud_qp_reset(uct_srqud_iface_t *iface,
                                       struct ibv_qp *qp, const char *what,
                                       int failed);

/* A new Q_Key for a UD QP in RTS: packets with another one are dropped by
 * the device from then on (logs a failure) */
ucs_status_t uct_srqud_dev_ud_qp_set_qkey(uct_srqud_iface_t *iface,
                                          struct ibv_qp *qp, uint32_t qkey,
                                          const char *what);

/* The address handle already created for @a dev_addr, or NULL */
struct ibv_ah *uct_srqud_dev_ah_find(uct_srqud_iface_t *iface,
                                     const uct_srqud_device_addr_t *dev_addr);

/* Address handles no ep uses kept for a peer that comes back; beyond,
 * the oldest is destroyed */
#define UCT_SRQUD_AH_UNUSED_MAX 256

/* The address handle of a remote port, shared by all eps to it: a
 * reference, given back with uct_srqud_dev_ah_put() */
ucs_status_t uct_srqud_dev_ah_get(uct_srqud_iface_t *iface,
                                  const uct_srqud_device_addr_t *dev_addr,
                                  uct_srqud_ah_entry_t **entry_p);

void uct_srqud_dev_ah_put(uct_srqud_iface_t *iface,
                          uct_srqud_ah_entry_t *entry);


/* The source GID of a received packet, from the GRH the HCA wrote */
ucs_status_t uct_srqud_dev_src_gid(uct_srqud_iface_t *iface,
                                   const struct ibv_wc *wc, const void *grh,
                                   uint8_t *gid);

/* Consume the events already delivered on the completion channel */
void uct_srqud_dev_cq_events_drain(uct_srqud_iface_t *iface);

/* Arm a CQ; a completion that arrived before arming raises no event, so
 * look once more and stash what was found. Returns the number stashed, or
 * -1 on error. */
int uct_srqud_dev_cq_arm(uct_srqud_iface_t *iface, struct ibv_cq *cq,
                         struct ibv_wc *stash, unsigned *stash_count);

/* The active ports of the md's device, as UCT devices */
ucs_status_t uct_srqud_dev_query_tl_devices(uct_md_h tl_md,
                                            uct_tl_device_resource_t **tl_devices_p,
                                            unsigned *num_tl_devices_p);


/* Same link layer and, on InfiniBand, same subnet: a LID means nothing
 * outside its subnet */
static UCS_F_ALWAYS_INLINE int
uct_srqud_dev_is_reachable(uct_srqud_iface_t *iface,
                           const uct_srqud_device_addr_t *dev_addr)
{
    if (!!(dev_addr->flags & UCT_SRQUD_ADDR_FLAG_ETH) != iface->is_roce) {
        return 0;
    }

    return iface->is_roce || !memcmp(dev_addr->gid, iface->gid.raw, 8);
}

#endif
