/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#include "srqud_gid.h"

#include <string.h>


static int uct_srqud_gid_is_zero(const uint8_t *raw)
{
    static const uint8_t zero[16];

    return !memcmp(raw, zero, sizeof(zero));
}


static int uct_srqud_gid_is_v4_mapped(const uint8_t *raw)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

    return !memcmp(raw, prefix, sizeof(prefix));
}


/* ::ffff:127.x.y.z */
static int uct_srqud_gid_is_v4_loopback(const uint8_t *raw)
{
    return uct_srqud_gid_is_v4_mapped(raw) && (raw[12] == 127);
}


static int uct_srqud_gid_is_link_local(const uint8_t *raw)
{
    return (raw[0] == 0xfe) && ((raw[1] & 0xc0) == 0x80);
}


int uct_srqud_gid_score(const uct_srqud_gid_entry_t *entry)
{
    int score;

    if (uct_srqud_gid_is_zero(entry->raw)) {
        return -1;
    }

    /* Measured on rxe over lo (GIDs fe80::..., ::ffff:127.0.0.1, ::1, all
     * v2): only ::1 carries traffic; UD sends from the IPv4 loopback GID
     * never arrive. So an IPv4 loopback GID ranks below IPv6 ones. */
    if (uct_srqud_gid_is_v4_loopback(entry->raw)) {
        score = 2;
    } else if (uct_srqud_gid_is_v4_mapped(entry->raw)) {
        score = 4;
    } else if (!uct_srqud_gid_is_link_local(entry->raw)) {
        score = 3;
    } else {
        score = 1;
    }

    /* The address class weighs less than the RoCE version: a v2 GID of any
     * class beats every v1 GID, since v2 is routable and rxe speaks only v2 */
    if (entry->type == UCT_SRQUD_GID_TYPE_ROCE_V2) {
        score += 10;
    }
    return score;
}


int uct_srqud_gid_select(const uct_srqud_gid_entry_t *entries, size_t num)
{
    int best_index = -1, best_score = -1;
    size_t i;
    int score;

    for (i = 0; i < num; ++i) {
        score = uct_srqud_gid_score(&entries[i]);
        if (score > best_score) {
            best_score = score;
            best_index = (int)i;
        }
    }

    return best_index;
}


void uct_srqud_gid_from_lid(const uint8_t *prefix, uint16_t slid,
                            uint8_t *gid)
{
    memcpy(gid, prefix, 8);
    memset(gid + 8, 0, 8);
    gid[14] = (uint8_t)(slid >> 8);
    gid[15] = (uint8_t)slid;
}
