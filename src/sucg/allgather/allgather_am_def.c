/*
 * The receiver's check of a staged-step active message (allgather_am_def.h).
 */
#include "sucg/allgather/allgather_am_def.h"

#include <string.h>

int sucg_am_parse(const void *buf, size_t len, sucg_am_hdr_t *hdr)
{
    if (len != sizeof(*hdr)) {
        return -1;
    }
    memcpy(hdr, buf, sizeof(*hdr));
    return 0;
}

const char *sucg_am_check(const sucg_am_hdr_t *hdr, size_t data_len,
                          const sucg_am_limits_t *lim)
{
    size_t total = 0;
    unsigned i;

    if ((hdr->seq == 0) || ((hdr->seq != lim->seq) &&
                            (hdr->seq != lim->seq + 1))) {
        return "sequence number neither the current nor the next collective";
    }
    if (hdr->step >= lim->nslots) {
        return "step beyond the group's flags";
    }
    if ((hdr->nranges == 0) || (hdr->nranges > SUCG_SCHED_MAX_RANGES)) {
        return "range count out of bounds";
    }
    for (i = 0; i < hdr->nranges; ++i) {
        if ((hdr->range[i].off > lim->stage_size) ||
            (hdr->range[i].len > lim->stage_size - hdr->range[i].off)) {
            return "range outside the staging copy";
        }
        total += hdr->range[i].len;   /* each <= stage_size: no overflow */
    }
    if (total != data_len) {
        return "payload length differs from its ranges";
    }
    return NULL;
}
