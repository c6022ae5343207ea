/*
 * The lanes of a UCP endpoint, read from UCP's own description of it
 * (ucp_ep_print_info; ucp_ep_query has no transports before UCX 1.14).
 * The parsing is text alone, so that the unit tests feed it the lines of
 * each UCX release; the MPI glue (which transports reach a peer) and the
 * group (whether a put to a peer is a message) both read it.
 */
#ifndef SUCG_LANES_H_
#define SUCG_LANES_H_

#include <ucp/api/ucp.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SUCG_LANE_TL_LEN 32
/* lanes of one endpoint: UCP_MAX_LANES is 16 in UCX 1.13, more later */
#define SUCG_LANES_MAX   64

typedef struct sucg_lane {
    char tl[SUCG_LANE_TL_LEN];   /* "srqud", "rc_verbs", "cma", ... */
    int  rma_bw;                 /* UCP puts and gets large data on it */
} sucg_lane_t;

/*
 * The transport lanes in @a text, at most @a max into @a lanes; returns how
 * many. A lane's line reads "lane[N]: RSC:TRANSPORT/DEVICE.PATH md[M] ...
 * [rma_bw#K] ..." in UCX 1.13 to 1.22; connection-manager lanes ("lane[N]:
 * cm ...") carry no data and are left out.
 */
int sucg_lanes_parse(const char *text, sucg_lane_t *lanes, int max);

/* The same for @a ep, from ucp_ep_print_info(); 0 if it cannot be read */
int sucg_ep_lanes(ucp_ep_h ep, sucg_lane_t *lanes, int max);

/*
 * Does a put over these lanes travel as messages that the peer's CPU
 * applies: no lane for large RMA (UCP then emulates it with active
 * messages), or one over a transport that implements its puts so (srqud
 * over UD, tcp)?
 */
int sucg_lanes_rma_by_messages(const sucg_lane_t *lanes, int n);

#ifdef __cplusplus
}
#endif

#endif
