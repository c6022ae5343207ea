/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Plain verbs helpers shared by the transport (srqud_dev.c) and the tools
 * (src/tools): no UCX object, no logging, so that a tool links them with
 * libibverbs alone. Errors are returned as errno values; the caller says
 * what failed in its own words.
 */

#ifndef UCT_SRQUD_VERBS_H_
#define UCT_SRQUD_VERBS_H_

#include <infiniband/verbs.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Steps of uct_srqud_verbs_ud_qp_create(), for the caller's message */
typedef enum {
    UCT_SRQUD_VERBS_QP_CREATE,
    UCT_SRQUD_VERBS_QP_INIT,
    UCT_SRQUD_VERBS_QP_RTR,
    UCT_SRQUD_VERBS_QP_RTS,
    UCT_SRQUD_VERBS_QP_RESET
} uct_srqud_verbs_qp_step_t;


/**
 * Create a UD QP and bring it to RTS (a UD QP needs no peer: INIT with
 * port and Q_Key, RTR, RTS). @a init's qp_type is set here.
 * @return 0, or an errno value with @a step_p naming the failed step (the
 *         QP is destroyed then).
 */
int uct_srqud_verbs_ud_qp_create(struct ibv_pd *pd,
                                 struct ibv_qp_init_attr *init,
                                 uint8_t port, uint32_t qkey,
                                 struct ibv_qp **qp_p,
                                 uct_srqud_verbs_qp_step_t *step_p);

/**
 * Bring a UD QP that went to the error state back to RTS, keeping its QP
 * number (peers address it by that): RESET, which discards its work
 * requests without completions, then as at creation.
 * @return 0, or an errno value with @a step_p naming the failed step.
 */
int uct_srqud_verbs_ud_qp_reset(struct ibv_qp *qp, uint8_t port,
                                uint32_t qkey,
                                uct_srqud_verbs_qp_step_t *step_p);

/* Name of a step, for messages */
const char *uct_srqud_verbs_qp_step_str(uct_srqud_verbs_qp_step_t step);

/* Link bandwidth of a port from its speed and width, bytes per second */
double uct_srqud_verbs_port_bandwidth(const struct ibv_port_attr *attr);

/* Bytes of a path MTU, 0 if unknown */
size_t uct_srqud_verbs_mtu_bytes(enum ibv_mtu mtu);

/**
 * The GID index srqud chooses on its own (see srqud_gid.h): on RoCE the
 * best entry of the port's table, on InfiniBand 0.
 * @return the index, or -1 if no entry is usable.
 */
int uct_srqud_verbs_gid_auto(struct ibv_context *ctx, uint8_t port,
                             const struct ibv_port_attr *attr);

#ifdef __cplusplus
}
#endif

#endif
