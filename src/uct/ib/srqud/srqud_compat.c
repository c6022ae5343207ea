/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The operations a newer UCX calls that an older one does not have (see
 * srqud_compat.h). Each answers from srqud's own state; none is a stub.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_compat.h"
#include "srqud_dev.h"
#include "srqud_ep.h"

#include <ucs/type/param.h>
#include <stdarg.h>
#include <stdio.h>


#if SRQUD_UCX_AT_LEAST(1, 16)
ucs_status_t uct_srqud_compat_rkey_compare(uct_component_t *component,
                                           uct_rkey_t rkey1, uct_rkey_t rkey2,
                                           const uct_rkey_compare_params_t *params,
                                           int *result)
{
    /* an unpacked key is the verbs rkey itself: UCX's value comparison
     * (a call, not an address in the component table, so that a module
     * built for this version still loads into another one and refuses
     * itself there with a message, see srqud_module.c) */
    return uct_base_rkey_compare(component, rkey1, rkey2, params, result);
}
#endif


#if SRQUD_UCX_AT_LEAST(1, 15)
static void UCS_F_PRINTF(2, 3)
uct_srqud_compat_info(const uct_iface_is_reachable_params_t *params,
                      const char *fmt, ...)
{
    char *buf  = UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params,
                                 info_string, INFO_STRING, NULL);
    size_t len = UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params,
                                 info_string_length, INFO_STRING_LENGTH, 0);
    va_list ap;

    if ((buf == NULL) || (len == 0)) {
        return;
    }

    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}


/* Whether the address lengths the caller knows (1.18+) are srqud's */
static int
uct_srqud_compat_addr_lengths_ok(const uct_iface_is_reachable_params_t *params)
{
#if SRQUD_UCX_AT_LEAST(1, 18)
    if ((params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH) &&
        (params->device_addr_length != sizeof(uct_srqud_device_addr_t))) {
        uct_srqud_compat_info(params, "device address of %zu bytes, srqud's "
                              "has %zu", params->device_addr_length,
                              sizeof(uct_srqud_device_addr_t));
        return 0;
    }
    if ((params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR) &&
        (params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR_LENGTH) &&
        (params->iface_addr_length != sizeof(uct_srqud_iface_addr_t))) {
        uct_srqud_compat_info(params, "interface address of %zu bytes, srqud's "
                              "has %zu", params->iface_addr_length,
                              sizeof(uct_srqud_iface_addr_t));
        return 0;
    }
#endif
    return 1;
}


int uct_srqud_compat_iface_is_reachable_v2(
        const uct_iface_h tl_iface,
        const uct_iface_is_reachable_params_t *params)
{
    uct_srqud_iface_t *iface = ucs_derived_of(tl_iface, uct_srqud_iface_t);
    const uct_srqud_device_addr_t *dev_addr;
    uct_iface_reachability_scope_t scope;

    if (!(params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR) ||
        (params->device_addr == NULL)) {
        uct_srqud_compat_info(params, "no device address");
        return 0;
    }

    if (!uct_srqud_compat_addr_lengths_ok(params)) {
        return 0;
    }

    dev_addr = (const uct_srqud_device_addr_t*)params->device_addr;
    if (dev_addr->flags & ~UCT_SRQUD_ADDR_FLAG_ETH) {
        uct_srqud_compat_info(params, "unknown device address flags 0x%x",
                              dev_addr->flags);
        return 0;
    }

    if (!uct_srqud_dev_is_reachable(iface, dev_addr)) {
        uct_srqud_compat_info(params, "%s",
                              (!!(dev_addr->flags & UCT_SRQUD_ADDR_FLAG_ETH) !=
                               iface->is_roce) ?
                              "different link layer" : "different IB subnet");
        return 0;
    }

    if ((params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR) &&
        (params->iface_addr != NULL) &&
        (uct_srqud_unpack_qpn(((const uct_srqud_iface_addr_t*)
                               params->iface_addr)->qp_num) == 0)) {
        /* QP 0 is the subnet management QP, never a UD data QP */
        uct_srqud_compat_info(params, "invalid QP number 0");
        return 0;
    }

    /* UCP asks for the device scope to find endpoints within one host: one
     * port (same GID, and LID on InfiniBand) is one device */
    scope = UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params, scope, SCOPE,
                            UCT_IFACE_REACHABILITY_SCOPE_NETWORK);
    if ((scope == UCT_IFACE_REACHABILITY_SCOPE_DEVICE) &&
        (memcmp(dev_addr->gid, iface->gid.raw, sizeof(dev_addr->gid)) ||
         (!iface->is_roce && (dev_addr->lid != iface->lid)))) {
        uct_srqud_compat_info(params, "another device");
        return 0;
    }

    return 1;
}
#endif


#if SRQUD_UCX_AT_LEAST(1, 16)
int uct_srqud_compat_ep_is_connected(const uct_ep_h tl_ep,
                                     const uct_ep_is_connected_params_t *params)
{
    uct_srqud_ep_t *ep       = ucs_derived_of(tl_ep, uct_srqud_ep_t);
    uct_srqud_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srqud_iface_t);
    const uct_srqud_iface_addr_t *iface_addr;
    int connected;

    UCT_EP_IS_CONNECTED_CHECK_DEV_IFACE_ADDRS(params);

    /* connected to (device, interface) when its packets go to that QP
     * through that port's address handle (one per remote port) */
    iface_addr = (const uct_srqud_iface_addr_t*)params->iface_addr;
    uct_srqud_enter(iface);
    connected  = (uct_srqud_unpack_qpn(iface_addr->qp_num) == ep->dest_qpn) &&
                 (ep->ah != NULL) &&
                 (uct_srqud_dev_ah_find(iface, (const uct_srqud_device_addr_t*)
                                        params->device_addr) == ep->ah);
    uct_srqud_leave(iface);
    return connected;
}
#endif


#if SRQUD_UCX_AT_LEAST(1, 22) || (SRQUD_UCX_VERSION == SRQUD_UCX_VER(1, 20))
ucs_status_t uct_srqud_compat_iface_query_v2(uct_iface_h tl_iface,
                                             uct_iface_attr_v2_t *attr)
{
    /* no v2 capabilities (scatter-gather put, device endpoints): UCX's
     * base answer, called rather than stored, as above */
    return uct_iface_base_query_v2(tl_iface, attr);
}
#endif
