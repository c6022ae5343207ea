/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * GID selection, and the key address of a sender without a GRH. Pure
 * logic, unit-tested on the host.
 *
 * RoCE ports list one GID per IP address of the netdev and RoCE version.
 * UCX's ib transports default to index 0, which on rxe over "lo" is a
 * link-local fe80:: address that lo does not have, so traffic goes nowhere.
 * srqud picks, in order of preference: RoCE v2 over v1, then an
 * IPv4-mapped address, then any other non-link-local address (::1 on lo),
 * then the IPv4 loopback (which does not carry UD traffic on rxe), then
 * link-local; ties go to the lowest index. On InfiniBand ports the GID
 * is only used for global routing, and index 0 is the port GID.
 */

#ifndef UCT_SRQUD_GID_H_
#define UCT_SRQUD_GID_H_

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    UCT_SRQUD_GID_TYPE_IB,        /* InfiniBand or RoCE v1 */
    UCT_SRQUD_GID_TYPE_ROCE_V2
} uct_srqud_gid_type_t;


typedef struct uct_srqud_gid_entry {
    uint8_t              raw[16];
    uct_srqud_gid_type_t type;
} uct_srqud_gid_entry_t;


/**
 * Score of one GID for RoCE; a negative score means unusable.
 */
int uct_srqud_gid_score(const uct_srqud_gid_entry_t *entry);


/**
 * Choose a GID index among @a num entries of a RoCE port.
 * @return the index, or -1 if no entry is usable.
 */
int uct_srqud_gid_select(const uct_srqud_gid_entry_t *entries, size_t num);


/**
 * The address a passive endpoint's key holds for a sender on the same
 * InfiniBand subnet whose packets come without a GRH: the subnet @a prefix
 * (8 bytes) and, where the interface id would be, the sender's @a slid
 * (the packet tells nothing else). Two senders with the same QP number
 * and endpoint id on different LIDs are then different peers. Only the
 * prefix decides an address handle's routing, so the LID bytes change
 * nothing there.
 */
void uct_srqud_gid_from_lid(const uint8_t *prefix, uint16_t slid,
                            uint8_t *gid);

#ifdef __cplusplus
}
#endif

#endif
