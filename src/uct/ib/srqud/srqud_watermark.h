/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * SRQ low-watermark flow control (Sur, Chai, Jin, Panda, IPDPS'06).
 *
 * The SRQ is armed with a limit: when fewer buffers than that remain, the
 * HCA raises IBV_EVENT_SRQ_LIMIT_REACHED on the device's async fd, and the
 * thread blocked on it (UCX's async thread, our "LIMIT thread") posts
 * buffers and re-arms the limit, which fires only once. A receiver that is
 * busy computing therefore does not run its SRQ dry and lose packets.
 *
 * The limit must cover what can arrive while that thread wakes up (Eq. 5):
 *   watermark = BW * 10^3 / MinPacketSize * t_wakeup
 * with BW in MB/s, MinPacketSize in bytes and t_wakeup in ms, i.e. the
 * number of smallest packets the link delivers during one wakeup.
 */

#ifndef UCT_SRQUD_WATERMARK_H_
#define UCT_SRQUD_WATERMARK_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of the smallest srqud packet on the wire: transport headers (LRH or
 * Ethernet+IP+UDP, BTH, DETH, ICRC...), srqud's header, an 8-byte AM header */
#define UCT_SRQUD_MIN_WIRE_PACKET  (70 + 16 + 8)


/**
 * Eq. 5 of the paper.
 * @param bw_mbs        link bandwidth, MB/s
 * @param min_packet    smallest packet, bytes
 * @param t_wakeup_ms   time for the LIMIT thread to wake up, ms
 * @param srq_size      buffers posted on the SRQ
 * @return the SRQ limit, at least 1 and at most half the SRQ (a limit near
 *         the SRQ size would fire continuously)
 */
unsigned uct_srqud_watermark(double bw_mbs, size_t min_packet,
                             double t_wakeup_ms, unsigned srq_size);


/**
 * Wakeup latency of a thread blocked on a file descriptor, in seconds:
 * half the median round trip of a ping-pong between two threads over
 * eventfds. Measured once per process.
 */
double uct_srqud_watermark_measure_wakeup(void);

#ifdef __cplusplus
}
#endif

#endif
