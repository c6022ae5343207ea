/*
 * Wire format of a staged step sent as one UCP active message (data and
 * completion together), and the receiver's check of it. Pure: no UCP, so
 * that the unit tests run the check on the host.
 *
 * A staged step of the RDMA executor writes block ranges into the peer's
 * staging copy (identity layout, allgather_rdma.c) and then raises the
 * step's flag: a put, a fence and a put of the flag. Over a transport that
 * emulates puts with messages (srqud, tcp) that is two messages and an
 * ordering point. As an active message it is one: the header says where
 * the payload goes in the receiver's staging half, and the receiver's
 * handler copies it there and raises the flag itself.
 */
#ifndef SUCG_ALLGATHER_AM_DEF_H_
#define SUCG_ALLGATHER_AM_DEF_H_

#include "sucg/sched/sucg_sched.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sucg_am_hdr {
    uint64_t seq;        /* collective sequence number: the staging half */
    uint16_t group_id;   /* the receiver's group of that id */
    uint16_t step;       /* whose data flag the handler raises */
    uint16_t nranges;    /* 1..SUCG_SCHED_MAX_RANGES, the payload in order */
    uint16_t pad;
    struct {
        uint32_t off;    /* bytes into the staging copy */
        uint32_t len;
    } range[SUCG_SCHED_MAX_RANGES];
} sucg_am_hdr_t;

/*
 * What the receiving group knows, against which a header is checked (never
 * the header's own word for a size)
 */
typedef struct sucg_am_limits {
    size_t   nslots;      /* data flags per half */
    size_t   stage_size;  /* bytes of a staging half */
    uint64_t seq;         /* the group's last started collective */
} sucg_am_limits_t;

/*
 * The header of a step message, @a len bytes at @a buf (which may be
 * unaligned), into @a hdr; -1 if it is not one of ours by its size
 */
int sucg_am_parse(const void *buf, size_t len, sucg_am_hdr_t *hdr);

/*
 * NULL if the step message (@a hdr and @a data_len payload bytes) fits the
 * group; else why not. A peer is at most one collective ahead of this rank
 * (allgather_rdma.c), so its seq is ours or the next.
 */
const char *sucg_am_check(const sucg_am_hdr_t *hdr, size_t data_len,
                          const sucg_am_limits_t *lim);

#ifdef __cplusplus
}
#endif

#endif
