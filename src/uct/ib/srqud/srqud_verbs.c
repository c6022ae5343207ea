/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#include "srqud_verbs.h"
#include "srqud_gid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* One state transition; @a step_p names it for the caller's message */
static int uct_srqud_verbs_qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                                     enum ibv_qp_state state, int mask,
                                     uct_srqud_verbs_qp_step_t step,
                                     uct_srqud_verbs_qp_step_t *step_p)
{
    attr->qp_state = state;
    *step_p        = step;
    return ibv_modify_qp(qp, attr, IBV_QP_STATE | mask);
}


/* RESET -> INIT (port, Q_Key) -> RTR -> RTS: a UD QP needs no peer */
static int uct_srqud_verbs_ud_qp_ready(struct ibv_qp *qp, uint8_t port,
                                       uint32_t qkey,
                                       uct_srqud_verbs_qp_step_t *step_p)
{
    struct ibv_qp_attr attr;
    int ret;

    memset(&attr, 0, sizeof(attr)); /* P_Key index 0, send PSN 0 */
    attr.port_num = port;
    attr.qkey     = qkey;
    ret = uct_srqud_verbs_qp_modify(qp, &attr, IBV_QPS_INIT,
                                    IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                    IBV_QP_QKEY, UCT_SRQUD_VERBS_QP_INIT,
                                    step_p);
    if (ret == 0) {
        ret = uct_srqud_verbs_qp_modify(qp, &attr, IBV_QPS_RTR, 0,
                                        UCT_SRQUD_VERBS_QP_RTR, step_p);
    }
    if (ret == 0) {
        ret = uct_srqud_verbs_qp_modify(qp, &attr, IBV_QPS_RTS,
                                        IBV_QP_SQ_PSN, UCT_SRQUD_VERBS_QP_RTS,
                                        step_p);
    }
    return ret;
}


int uct_srqud_verbs_ud_qp_create(struct ibv_pd *pd,
                                 struct ibv_qp_init_attr *init,
                                 uint8_t port, uint32_t qkey,
                                 struct ibv_qp **qp_p,
                                 uct_srqud_verbs_qp_step_t *step_p)
{
    struct ibv_qp *qp;
    int ret;

    init->qp_type = IBV_QPT_UD;
    *step_p       = UCT_SRQUD_VERBS_QP_CREATE;
    qp            = ibv_create_qp(pd, init);
    if (qp == NULL) {
        return (errno != 0) ? errno : ENOMEM;
    }

    ret = uct_srqud_verbs_ud_qp_ready(qp, port, qkey, step_p);
    if (ret != 0) {
        ibv_destroy_qp(qp);
        return ret;
    }

    *qp_p = qp;
    return 0;
}


int uct_srqud_verbs_ud_qp_reset(struct ibv_qp *qp, uint8_t port,
                                uint32_t qkey,
                                uct_srqud_verbs_qp_step_t *step_p)
{
    struct ibv_qp_attr attr = {0};
    int ret;

    ret = uct_srqud_verbs_qp_modify(qp, &attr, IBV_QPS_RESET, 0,
                                    UCT_SRQUD_VERBS_QP_RESET, step_p);
    return (ret != 0) ? ret : uct_srqud_verbs_ud_qp_ready(qp, port, qkey,
                                                          step_p);
}


const char *uct_srqud_verbs_qp_step_str(uct_srqud_verbs_qp_step_t step)
{
    switch (step) {
    case UCT_SRQUD_VERBS_QP_CREATE: return "ibv_create_qp(UD)";
    case UCT_SRQUD_VERBS_QP_INIT:   return "ibv_modify_qp(INIT)";
    case UCT_SRQUD_VERBS_QP_RTR:    return "ibv_modify_qp(RTR)";
    case UCT_SRQUD_VERBS_QP_RESET:  return "ibv_modify_qp(RESET)";
    default:                        return "ibv_modify_qp(RTS)";
    }
}


double uct_srqud_verbs_port_bandwidth(const struct ibv_port_attr *attr)
{
    double lane_gbps, encoding = 64.0 / 66.0;
    unsigned width;

    switch (attr->active_speed) {
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

    switch (attr->active_width) {
    case 1:  width = 1;  break;
    case 2:  width = 4;  break;
    case 4:  width = 8;  break;
    case 8:  width = 12; break;
    case 16: width = 2;  break;
    default: width = 1;  break;
    }

    return lane_gbps * width * encoding * 1e9 / 8.0;
}


size_t uct_srqud_verbs_mtu_bytes(enum ibv_mtu mtu)
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


/* rdma-core 44 has ibv_query_gid_type(), but the sysfs attribute is
 * present on every kernel that has RoCE v2 at all */
static uct_srqud_gid_type_t
uct_srqud_verbs_gid_type(struct ibv_context *ctx, uint8_t port, int index)
{
    char path[256], buf[32];
    FILE *f;

    snprintf(path, sizeof(path),
             "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d",
             ibv_get_device_name(ctx->device), port, index);
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


int uct_srqud_verbs_gid_auto(struct ibv_context *ctx, uint8_t port,
                             const struct ibv_port_attr *attr)
{
    uct_srqud_gid_entry_t *entries;
    union ibv_gid gid;
    int i, index;

    if (attr->link_layer != IBV_LINK_LAYER_ETHERNET) {
        return 0;
    }

    entries = calloc(attr->gid_tbl_len, sizeof(*entries));
    if (entries == NULL) {
        return -1;
    }
    for (i = 0; i < attr->gid_tbl_len; ++i) {
        if (ibv_query_gid(ctx, port, i, &gid) != 0) {
            continue; /* entry stays zero, so it is never chosen */
        }
        memcpy(entries[i].raw, gid.raw, sizeof(gid.raw));
        entries[i].type = uct_srqud_verbs_gid_type(ctx, port, i);
    }

    index = uct_srqud_gid_select(entries, attr->gid_tbl_len);
    free(entries);
    return index;
}
