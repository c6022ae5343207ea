/*
 * UCP's description of an endpoint's lanes (sucg_lanes.h).
 */
#include "sucg/core/sucg_lanes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Transports whose put_zcopy is a protocol of messages, not RDMA */
static const char *const sucg_lanes_msg_rma_tls[] = {"srqud", "tcp", NULL};

/* Where @a needle starts in the @a len bytes at @a s, or NULL */
static const char *sucg_lanes_find(const char *s, size_t len,
                                   const char *needle)
{
    size_t n = strlen(needle), i;

    for (i = 0; i + n <= len; ++i) {
        if (!memcmp(s + i, needle, n)) {
            return s + i;
        }
    }
    return NULL;
}

/* One line: a transport lane into @a lane; 0 if the line is none */
static int sucg_lanes_parse_line(const char *line, size_t len,
                                 sucg_lane_t *lane)
{
    const char *end = line + len, *p;
    char head[128], fmt[32];
    size_t n;
    int rsc;

    p = sucg_lanes_find(line, len, "lane[");
    p = (p != NULL) ? sucg_lanes_find(p, end - p, "]:") : NULL;
    if (p == NULL) {
        return 0;
    }
    /* the lane's head ("N:TRANSPORT/"), NUL-terminated for sscanf, which
     * must not run into the next line */
    p += 2;
    n  = (size_t)(end - p);
    n  = (n < sizeof(head)) ? n : sizeof(head) - 1;
    memcpy(head, p, n);
    head[n] = '\0';
    snprintf(fmt, sizeof(fmt), " %%d:%%%d[^/ ]", SUCG_LANE_TL_LEN - 1);
    if (sscanf(head, fmt, &rsc, lane->tl) != 2) {
        return 0;
    }
    lane->rma_bw = (sucg_lanes_find(p, end - p, " rma_bw#") != NULL);
    return 1;
}

int sucg_lanes_parse(const char *text, sucg_lane_t *lanes, int max)
{
    const char *line = text, *end;
    int n = 0;

    while ((line != NULL) && (*line != '\0') && (n < max)) {
        end = strchr(line, '\n');
        n  += sucg_lanes_parse_line(line, (end != NULL) ? (size_t)(end - line) :
                                                          strlen(line),
                                    &lanes[n]);
        line = (end != NULL) ? end + 1 : NULL;
    }
    return n;
}

int sucg_ep_lanes(ucp_ep_h ep, sucg_lane_t *lanes, int max)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f;
    int n;

    f = open_memstream(&text, &len);
    if (f == NULL) {
        return 0;
    }
    ucp_ep_print_info(ep, f);
    if (fclose(f) != 0) {
        free(text);
        return 0;
    }
    n = sucg_lanes_parse(text, lanes, max);
    free(text);
    return n;
}

int sucg_lanes_rma_by_messages(const sucg_lane_t *lanes, int n)
{
    int i, k, rma_bw = 0;

    for (i = 0; i < n; ++i) {
        if (!lanes[i].rma_bw) {
            continue;
        }
        rma_bw = 1;
        for (k = 0; sucg_lanes_msg_rma_tls[k] != NULL; ++k) {
            if (!strcmp(lanes[i].tl, sucg_lanes_msg_rma_tls[k])) {
                return 1;
            }
        }
    }
    return !rma_bw;
}
