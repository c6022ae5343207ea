/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The settings' table (UCX_SRQUD_*), their range checks at interface open
 * and the values applied to iface->config.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_config.h"
#include "srqud_compat.h"
#include "srqud_iface.h"

#include <ucs/sys/string.h>

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>
#include <limits.h>


const char *uct_srqud_share_names[] = {
    [UCT_SRQUD_SHARE_PD]   = "pd",
    [UCT_SRQUD_SHARE_TD]   = "td",
    [UCT_SRQUD_SHARE_SRQ]  = "srq",
    [UCT_SRQUD_SHARE_LAST] = NULL
};


ucs_config_field_t uct_srqud_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_srqud_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"TX_QUEUE_LEN", "256",
     "Length of the send queue of the UD QP.",
     ucs_offsetof(uct_srqud_iface_config_t, tx_queue_len), UCS_CONFIG_TYPE_UINT},

    {"TX_BATCH", "16",
     "Sends posted with one doorbell (one ibv_post_send, a system call on\n"
     "Soft-RoCE). While sends of the interface are in the send queue, new\n"
     "ones wait in a batch that goes when it is full, at the next progress\n"
     "or flush, before the user sleeps on the event fd, or from the async\n"
     "thread within TX_HOLD if the user makes no call. A send into an idle\n"
     "queue goes at once. 1: every send at once. At most 64, and half of\n"
     "TX_QUEUE_LEN.",
     ucs_offsetof(uct_srqud_iface_config_t, tx_batch), UCS_CONFIG_TYPE_UINT},

    {"TX_BATCH_AFTER", "auto",
     "Sends since the last progress call that go at once, each with its own\n"
     "doorbell, before later ones batch (TX_BATCH) while the send queue is\n"
     "busy (a number, inf or auto). A batch started outside progress waits\n"
     "until a later send finds it full or older than TX_BATCH_WAIT, the\n"
     "user's next progress, or up to TX_HOLD for the async thread: the last\n"
     "messages of a stream that the user leaves to compute arrive that much\n"
     "later. It pays where a doorbell is a system call (Soft-RoCE), and there\n"
     "only from several sends on: with 8, the packets of a 4 KB message and\n"
     "the messages of a collective step to up to 8 peers leave without\n"
     "waiting, and a stream of sends still batches. auto: 8 on Soft-RoCE;\n"
     "inf on an HCA, where a doorbell is a write to the device: sends outside\n"
     "progress never wait (unless TX_BATCH_IDLE; those a progress call makes\n"
     "still share its doorbell). 0: batch from the first send into a busy\n"
     "queue.",
     ucs_offsetof(uct_srqud_iface_config_t, tx_batch_after), UCS_CONFIG_TYPE_ULUNITS},

    {"TX_BATCH_IDLE", "n",
     "Sends made outside a progress call batch, into an idle queue too and\n"
     "regardless of TX_BATCH_AFTER, and leave with one doorbell at the next\n"
     "progress (or after TX_HOLD). y: every such send; auto: those of a step\n"
     "(the sends between two progress calls) once steps of several sends\n"
     "prevail, as a collective's steps to several peers, while lone sends (a\n"
     "ping-pong's) go at once; measured with TX_BATCH_WAIT=100us. On Soft-RoCE\n"
     "each doorbell of a UD QP also schedules the kernel's completion work, one\n"
     "context switch of its softirq thread per doorbell where ranks share the\n"
     "cores. A batch costs two system calls per progress call for its timer,\n"
     "and the timer's expiries where a rank is descheduled before that call.",
     ucs_offsetof(uct_srqud_iface_config_t, tx_batch_idle), UCS_CONFIG_TYPE_ON_OFF_AUTO},

    {"TX_BATCH_STEP", "3",
     "With TX_BATCH_IDLE=auto, the sends a step needs to count as a step of\n"
     "several (2 to 64). A batch saves a doorbell per send after the first\n"
     "and costs its timer: with 3, steps of two sends (the packets of a 4 KB\n"
     "message, two sends left without a progress call between them) go at\n"
     "once; with 2 they batch too (measured slower at 4 and 8 ranks).",
     ucs_offsetof(uct_srqud_iface_config_t, tx_batch_step), UCS_CONFIG_TYPE_UINT},

    {"TX_BATCH_WAIT", "5us",
     "Longest wait of a send in a batch (TX_BATCH) while the user goes on\n"
     "sending without progress: the first send after that long rings the\n"
     "batch. A sender that never waits (the root of a broadcast) otherwise\n"
     "delivers its messages in bursts of TX_BATCH, and each of its peers\n"
     "waits for a whole batch once every TX_BATCH calls. Longer waits raise\n"
     "a streaming sender's message rate (20us: 1.13-1.19x that of 5us on\n"
     "Soft-RoCE) and its peers' slow calls (2-5x as many above 10x their\n"
     "median at 2 ranks). A batch the user leaves goes after TX_HOLD.",
     ucs_offsetof(uct_srqud_iface_config_t, tx_batch_wait), UCS_CONFIG_TYPE_TIME},

    {"TX_HOLD", "1ms",
     "Longest wait of a batch of sends (TX_BATCH) for its doorbell when the\n"
     "user stops calling: UCX's async thread then posts it (a timer set by\n"
     "the first batch after each progress call; a busy machine adds the\n"
     "thread's wakeup). A sender that goes on sending without progress for\n"
     "longer (a broadcast's root) rings its batches itself, and the timer\n"
     "then wakes the thread for nothing once every TX_HOLD: with 200us a\n"
     "2-rank broadcast on Soft-RoCE took 1.15-1.45x the time of 1ms and its\n"
     "99th percentile 1.3-1.7x. Without an async thread (UCX's poll and\n"
     "signal modes) one to two ASYNC_TICKs. At most ASYNC_TICK.",
     ucs_offsetof(uct_srqud_iface_config_t, tx_hold), UCS_CONFIG_TYPE_TIME},

    {"TX_HOLD_MOVE", "n",
     "A batch that starts in the last quarter of the TX_HOLD timer's wait,\n"
     "from a user that progressed within an ASYNC_TICK, moves the timer on\n"
     "(a system call), so that it expires after a stream of sends, not\n"
     "during it. An expiry during the stream usually finds the async lock\n"
     "taken by a send; UCX's async thread then skips it until the user's\n"
     "next UCP progress, and the timer expires no more: the stream's last\n"
     "batch waits for that progress (a 2-rank broadcast on Soft-RoCE: the\n"
     "leaf's last call 3.6-5.7 ms, with y at most 1.1 ms, its p99 0.78x).\n"
     "Off by default: with y Open MPI's 4-rank broadcast on 2 cores took\n"
     "1.2-1.4x the average time (its p99 level).",
     ucs_offsetof(uct_srqud_iface_config_t, tx_hold_move), UCS_CONFIG_TYPE_BOOL},

    {"TX_CQ_MODERATION", "64",
     "Request a send completion at least every N sends. A data packet\n"
     "posted into an idle send queue (a ping-pong's) needs none: its slot\n"
     "in the send queue, and its descriptor if it is not inline, are\n"
     "freed by the next completion; its copy for retransmission by the\n"
     "acknowledgement. Batched sends (but a message's packets before its\n"
     "last), control packets and am_zcopy's are always signaled. 1: every\n"
     "send. At most half of TX_QUEUE_LEN; with TX_MAX_BUFS set, at most a\n"
     "quarter of it.",
     ucs_offsetof(uct_srqud_iface_config_t, tx_cq_moderation),
     UCS_CONFIG_TYPE_UINT},

    {"TX_MAX_POLL", "16",
     "Maximal number of send completions processed in one progress call.",
     ucs_offsetof(uct_srqud_iface_config_t, tx_max_poll), UCS_CONFIG_TYPE_UINT},

    {"RX_MAX_POLL", "16",
     "Maximal number of receive completions processed in one progress call;\n"
     "also the most packets one call delivers of those the async thread\n"
     "queued while the user did not progress.",
     ucs_offsetof(uct_srqud_iface_config_t, rx_max_poll), UCS_CONFIG_TYPE_UINT},

    {"QUIET_POLLS", "4",
     "Progress calls in a row that, finding nothing else to do, only look at\n"
     "the receive CQ, without reading the clock and running the timers: after\n"
     "a full call, if calls come less than ASYNC_TICK/16 apart, up to this\n"
     "many; the next one looks at everything again (owed acknowledgements,\n"
     "retransmissions, the async watchdog), so timers run at most this many\n"
     "calls late. Where ranks share cores a waiting rank's empty calls take\n"
     "time from the ranks that work. 0: every call looks at everything.",
     ucs_offsetof(uct_srqud_iface_config_t, quiet_polls), UCS_CONFIG_TYPE_UINT},

    {"SRQ_SIZE", "1024",
     "Number of receive buffers kept posted on the Shared Receive Queue.\n"
     "It is fixed per interface: it does not grow with the number of peers.",
     ucs_offsetof(uct_srqud_iface_config_t, srq_size), UCS_CONFIG_TYPE_UINT},

    {"SRQ_MAX_SIZE", "8192",
     "When the LIMIT thread finds the SRQ drained again soon after a refill,\n"
     "it raises the number of posted buffers, up to this many.",
     ucs_offsetof(uct_srqud_iface_config_t, srq_max_size), UCS_CONFIG_TYPE_UINT},

    {"SRQ_LIMIT", "auto",
     "SRQ low watermark: below this many buffers the device raises\n"
     "IBV_EVENT_SRQ_LIMIT_REACHED and the LIMIT thread refills the SRQ.\n"
     "\"auto\": BW*10^3/MinPacketSize*t_wakeup (Sur et al., Eq. 5), from the\n"
     "port's link rate and a thread wakeup time measured at start. 0: off.",
     ucs_offsetof(uct_srqud_iface_config_t, srq_limit), UCS_CONFIG_TYPE_ULUNITS},

    {"RX_POST_BATCH", "32",
     "Repost receive buffers to the SRQ in batches of this many.",
     ucs_offsetof(uct_srqud_iface_config_t, rx_post_batch), UCS_CONFIG_TYPE_UINT},

    {"SHARE", "srq",
     "What the interfaces of one process on a device share (one interface\n"
     "per UCP worker, so per thread with a worker each). All share the\n"
     "device context, PD and registrations.\n"
     " pd  - each its own UD QP, CQs, SRQ and receive buffers.\n"
     " td  - as pd, with each one's QP and CQs in a thread domain of its own\n"
     "       (a dedicated doorbell, no provider locks); on a device without\n"
     "       thread domains (Soft-RoCE) the same as pd, said once.\n"
     " srq - each its own UD QP and CQs, and one SRQ with one receive pool\n"
     "       for all, so receive memory stays flat in threads as in peers.",
     ucs_offsetof(uct_srqud_iface_config_t, share),
     UCS_CONFIG_TYPE_ENUM(uct_srqud_share_names)},

    {"STALLED_MAX", "256",
     "With SHARE=srq: receive buffers the async thread keeps queued for a\n"
     "worker that does not progress. Beyond, it leaves that worker's\n"
     "packets unacknowledged (their senders retransmit once it progresses),\n"
     "so that one stalled thread cannot drain the pool of the others.",
     ucs_offsetof(uct_srqud_iface_config_t, stalled_max), UCS_CONFIG_TYPE_UINT},

    UCT_SRQUD_MPOOL_CONFIG_FIELDS("RX_", -1, 0, "receive",
                                  ucs_offsetof(uct_srqud_iface_config_t, rx_mp),
                                  ""),

    /* grow 0: TX_QUEUE_LEN + TX_WINDOW descriptors a chunk (at most 1024),
     * the first at iface open (srqud_tx.c) */
    UCT_SRQUD_MPOOL_CONFIG_FIELDS("TX_", -1, 0, "send",
                                  ucs_offsetof(uct_srqud_iface_config_t, tx_mp),
                                  ""),

    {"GID_INDEX", "auto",
     "Port GID table index to send from. \"auto\" prefers RoCE v2, then an\n"
     "IPv4-mapped GID, then a non-link-local one (::1 on Soft-RoCE over lo).",
     ucs_offsetof(uct_srqud_iface_config_t, gid_index), UCS_CONFIG_TYPE_ULUNITS},

    {"SL", "0",
     "InfiniBand service level.",
     ucs_offsetof(uct_srqud_iface_config_t, sl), UCS_CONFIG_TYPE_UINT},

    {"TRAFFIC_CLASS", "0",
     "Traffic class of the global routing header.",
     ucs_offsetof(uct_srqud_iface_config_t, traffic_class), UCS_CONFIG_TYPE_UINT},

    {"HOP_LIMIT", "255",
     "Hop limit of the global routing header.",
     ucs_offsetof(uct_srqud_iface_config_t, hop_limit), UCS_CONFIG_TYPE_UINT},

    {"TX_WINDOW", "256",
     "Packets an endpoint may have unacknowledged. A full window queues\n"
     "further sends on the endpoint's pending queue.",
     ucs_offsetof(uct_srqud_iface_config_t, tx_window), UCS_CONFIG_TYPE_UINT},

    {"RX_REORDER", "256",
     "Packets a receiving endpoint may hold ahead of a lost one, so that the\n"
     "sender resends only what was lost (selective repeat), at most 256; 0\n"
     "drops what arrives out of order (the sender then resends it too). The\n"
     "held packets take receive buffers of the SRQ: all endpoints together\n"
     "hold at most half of SRQ_SIZE, and drop beyond that.",
     ucs_offsetof(uct_srqud_iface_config_t, rx_reorder), UCS_CONFIG_TYPE_UINT},

    {"ACK_THRESH", "32",
     "The receiver acknowledges at least every this many packets of a peer,\n"
     "whether or not ACK_DELAY has passed.",
     ucs_offsetof(uct_srqud_iface_config_t, ack_thresh), UCS_CONFIG_TYPE_UINT},

    {"ACK_DELAY", "5ms",
     "How long the receiver may hold back an acknowledgement that no reply\n"
     "takes along (BACK_ACK_DELAY), so that later packets share it: where\n"
     "ranks send around a ring or share cores, with no reply soon enough to\n"
     "carry it, each one that goes alone costs both sides a packet. What a\n"
     "sender waits on is acknowledged at once: duplicates, flushes, am_zcopy\n"
     "sends, half a window; and every ACK_THRESH packets. Shorter than\n"
     "RTO_MIN.",
     ucs_offsetof(uct_srqud_iface_config_t, ack_delay), UCS_CONFIG_TYPE_TIME},

    {"BACK_ACK", "y",
     "An acknowledgement owed to a peer rides on the next active message\n"
     "sent to that peer (10 bytes at its end) instead of going as a packet\n"
     "of its own: a request-reply exchange then sends no acknowledgements.\n"
     "RoCE only (an InfiniBand port without GRH always sends them alone).",
     ucs_offsetof(uct_srqud_iface_config_t, back_ack), UCS_CONFIG_TYPE_BOOL},

    {"BACK_ACK_EVERY", "16",
     "With BACK_ACK, a reply takes the acknowledgement along once this many\n"
     "packets are owed, or once it has waited BACK_ACK_DELAY: a\n"
     "ping-pong then applies one acknowledgement per this many messages, not\n"
     "one per message, and still sends none of its own. At most ACK_THRESH\n"
     "takes effect (the receiver acknowledges alone there). 1: every reply.",
     ucs_offsetof(uct_srqud_iface_config_t, back_ack_every), UCS_CONFIG_TYPE_UINT},

    {"BACK_ACK_DELAY", "500us",
     "With BACK_ACK, a reply takes an owed acknowledgement once it has waited\n"
     "this long (or BACK_ACK_EVERY packets are owed), so that the sender's\n"
     "window stays short; one with no reply to take it goes alone after\n"
     "ACK_DELAY. At most half of ACK_DELAY takes effect.",
     ucs_offsetof(uct_srqud_iface_config_t, back_ack_delay), UCS_CONFIG_TYPE_TIME},

    {"ACK_RIDE", "y",
     "An acknowledgement that no reply took along and that has waited half\n"
     "of ACK_DELAY goes in the doorbell of the user's next active message,\n"
     "to whichever peer, as a packet of its own beside it, instead of\n"
     "ringing one of its own once ACK_DELAY has passed. Where ranks send\n"
     "around a ring no reply comes back; on Soft-RoCE each doorbell of a\n"
     "UD QP is a system call and a wakeup of the softirq thread.",
     ucs_offsetof(uct_srqud_iface_config_t, ack_ride), UCS_CONFIG_TYPE_BOOL},

    {"RTO_MIN", "20ms",
     "Retransmission timeout; it doubles on every expiry up to RTO_MAX and\n"
     "returns to RTO_MIN when an acknowledgement arrives.",
     ucs_offsetof(uct_srqud_iface_config_t, rto_min), UCS_CONFIG_TYPE_TIME},

    {"RTO_MAX", "1s",
     "Largest retransmission timeout.",
     ucs_offsetof(uct_srqud_iface_config_t, rto_max), UCS_CONFIG_TYPE_TIME},

    {"TIMEOUT", "30s",
     "An endpoint whose peer acknowledges nothing for this long fails with\n"
     "UCS_ERR_ENDPOINT_TIMEOUT (reported through the error handler).",
     ucs_offsetof(uct_srqud_iface_config_t, peer_timeout), UCS_CONFIG_TYPE_TIME},

    {"ASYNC_TICK", "10ms",
     "While the application does not progress the worker, UCX's async thread\n"
     "runs this often to acknowledge peers' packets and retransmit lost ones,\n"
     "so that a rank that computes is not taken for dead; it takes over one to\n"
     "two ticks after the last progress (while the application progresses,\n"
     "the thread is not woken). At most RTO_MIN, or peers retransmit before\n"
     "the acknowledgement comes.",
     ucs_offsetof(uct_srqud_iface_config_t, async_tick), UCS_CONFIG_TYPE_TIME},

    {"ZCOPY_QPS", "64",
     "UD QPs of the zero-copy pool (each with its own receive queue and CQ):\n"
     "one is bound to each zero-copy transfer this side receives. When none\n"
     "is free a transfer takes the copy path. 0 disables zero-copy.",
     ucs_offsetof(uct_srqud_iface_config_t, zcopy_qps), UCS_CONFIG_TYPE_UINT},

    {"ZCOPY_THRESH", "32k",
     "get_zcopy / put_zcopy of at least this many bytes use the zero-copy\n"
     "protocol; smaller ones are carried in MTU fragments and copied.",
     ucs_offsetof(uct_srqud_iface_config_t, zcopy_thresh),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"ZCOPY_RQ_DEPTH", "512",
     "Receives posted on a pool QP at once: the chunks of one round.",
     ucs_offsetof(uct_srqud_iface_config_t, zcopy_rq_depth),
     UCS_CONFIG_TYPE_UINT},

    {"ZCOPY_SQ_DEPTH", "1024",
     "Send queue of the QP that sends zero-copy chunks.",
     ucs_offsetof(uct_srqud_iface_config_t, zcopy_sq_depth),
     UCS_CONFIG_TYPE_UINT},

    {"ZCOPY_PEER_JOBS", "64",
     "Zero-copy transfers one peer connection may have this side serve at\n"
     "once (reads of its gets, receives of its puts), all peers together 16\n"
     "times that; beyond, requests take the copy path. A peer with the default\n"
     "ZCOPY_QPS has at most that many at once. Bounds what peers make this\n"
     "side hold.",
     ucs_offsetof(uct_srqud_iface_config_t, zcopy_peer_jobs),
     UCS_CONFIG_TYPE_UINT},

    {"PASSIVE_MAX", "16384",
     "Peers' connections (passive endpoints, about 320 bytes each) an\n"
     "interface keeps. A connection request beyond takes the place of the\n"
     "connection idle longest, if one was idle for PASSIVE_IDLE, and is\n"
     "dropped otherwise (its sender retries).",
     ucs_offsetof(uct_srqud_iface_config_t, passive_max), UCS_CONFIG_TYPE_UINT},

    {"PASSIVE_IDLE", "60s",
     "A peer's connection that received nothing for this long may be freed\n"
     "when PASSIVE_MAX is reached (one that only ever got its request: after\n"
     "4 x RTO_MAX).",
     ucs_offsetof(uct_srqud_iface_config_t, passive_idle), UCS_CONFIG_TYPE_TIME},

    {"RMA_REFUSALS_MAX", "128",
     "Refused puts a peer's connection remembers until the peer confirms it\n"
     "has their errors; beyond, a refused put joins the newest one (its\n"
     "initiator still learns of the failure).",
     ucs_offsetof(uct_srqud_iface_config_t, rma_refusals_max),
     UCS_CONFIG_TYPE_UINT},

    {"STATS_DUMP", "n",
     "Print the interface's counters (retransmissions, SRQ limit events,\n"
     "zero-copy transfers...) on stderr when it closes.",
     ucs_offsetof(uct_srqud_iface_config_t, stats_dump), UCS_CONFIG_TYPE_BOOL},

    {"FAULT_TX_DROP", "0",
     "Testing only: fraction of outgoing packets lost on purpose, as a\n"
     "lossy fabric would lose them: they are sent with a Q_Key the\n"
     "receiving device drops (Soft-RoCE short-circuits traffic to its own\n"
     "addresses, so kernel loss emulation on lo does not reach it).",
     ucs_offsetof(uct_srqud_iface_config_t, fault_tx_drop), UCS_CONFIG_TYPE_DOUBLE},

    {"FAULT_TX_DUP", "0",
     "Testing only: fraction of outgoing packets to send twice.",
     ucs_offsetof(uct_srqud_iface_config_t, fault_tx_dup), UCS_CONFIG_TYPE_DOUBLE},

    {"FAULT_QP_ERROR", "0",
     "Testing only: fraction of sends before which the interface's QP is\n"
     "moved to the error state, as a failed send would (Soft-RoCE does that\n"
     "while the link is down), so that its recovery runs.",
     ucs_offsetof(uct_srqud_iface_config_t, fault_qp_error), UCS_CONFIG_TYPE_DOUBLE},

    {"FAULT_CHUNK_DROP", "0",
     "Testing only: fraction of zero-copy chunks to drop on purpose, besides\n"
     "FAULT_TX_DROP; 1 drops them all (a path that filters the pool QPs'\n"
     "traffic), so that the copy path takes over.",
     ucs_offsetof(uct_srqud_iface_config_t, fault_chunk_drop), UCS_CONFIG_TYPE_DOUBLE},

    {"AM_PACKETS", "auto",
     "Packets of an active message sent by copy (am_bcopy), at most (1 to\n"
     "4, or auto). A larger message goes as several packets with one\n"
     "doorbell, and the receiver copies them out of its buffers to deliver\n"
     "it whole (every interface receives such messages, whatever its own\n"
     "setting). On Soft-RoCE each doorbell of a UD QP is a system call that\n"
     "wakes the kernel's softirq thread, which costs more than the copies:\n"
     "a 4 KB MPI message with its headers is two packets, and 4 KB MPI\n"
     "calls took 0.68-0.94x the time with 2. auto: 2 on Soft-RoCE, 1 on an\n"
     "HCA, where a doorbell costs less than copying the message again.",
     ucs_offsetof(uct_srqud_iface_config_t, am_packets), UCS_CONFIG_TYPE_ULUNITS},

    {"SEG_SIZE", "auto",
     "Largest packet, network header included. \"auto\" is the port's active\n"
     "MTU; a larger value is refused, since UD drops what exceeds the MTU.",
     ucs_offsetof(uct_srqud_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {NULL}
};


ucs_status_t uct_srqud_config_check(const uct_srqud_md_t *md,
                                    const uct_srqud_iface_config_t *config,
                                    size_t mtu)
{
    const struct ibv_device_attr *dev_attr = &md->dev_attr;

#define UCT_SRQUD_CHECK_RANGE(_var, _value, _min, _max) \
    if (((_value) < (_min)) || ((_value) > (_max))) { \
        ucs_error("%s: UCX_SRQUD_" _var "=%lu is out of range [%lu..%lu]", \
                  md->name, (unsigned long)(_value), \
                  (unsigned long)(_min), (unsigned long)(_max)); \
        return UCS_ERR_INVALID_PARAM; \
    }

    UCT_SRQUD_CHECK_RANGE("TX_QUEUE_LEN", config->tx_queue_len, 16,
                          dev_attr->max_qp_wr);
    UCT_SRQUD_CHECK_RANGE("SRQ_SIZE", config->srq_size, 16,
                          dev_attr->max_srq_wr);
    UCT_SRQUD_CHECK_RANGE("SRQ_MAX_SIZE", config->srq_max_size,
                          config->srq_size, dev_attr->max_srq_wr);
    if (config->srq_limit != UCS_ULUNITS_AUTO) {
        UCT_SRQUD_CHECK_RANGE("SRQ_LIMIT", config->srq_limit, 0,
                              config->srq_size / 2);
    }
    UCT_SRQUD_CHECK_RANGE("RX_POST_BATCH", config->rx_post_batch, 1,
                          config->srq_size);
    UCT_SRQUD_CHECK_RANGE("STALLED_MAX", config->stalled_max, 16,
                          config->srq_max_size);
    UCT_SRQUD_CHECK_RANGE("TX_BATCH", config->tx_batch, 1,
                          UCT_SRQUD_TX_BATCH_MAX);
    if ((config->tx_batch_after != UCS_ULUNITS_AUTO) &&
        (config->tx_batch_after != UCS_ULUNITS_INF)) {
        UCT_SRQUD_CHECK_RANGE("TX_BATCH_AFTER", config->tx_batch_after, 0,
                              config->tx_queue_len / 2);
    }
    UCT_SRQUD_CHECK_RANGE("TX_BATCH_STEP", config->tx_batch_step, 2,
                          UCT_SRQUD_TX_BATCH_MAX);
    UCT_SRQUD_CHECK_RANGE("TX_CQ_MODERATION", config->tx_cq_moderation, 1,
                          config->tx_queue_len / 2);
    /* a bounded send pool: room for a message of AM_PACKETS_MAX packets
     * and a chunk of the pool (TX_BUFS_GROW; 0: chosen at open, within
     * the bound) */
    if ((unsigned)config->tx_mp.max_bufs != UINT_MAX) {
        UCT_SRQUD_CHECK_RANGE("TX_MAX_BUFS", config->tx_mp.max_bufs, 16,
                              UINT_MAX - 1);
        UCT_SRQUD_CHECK_RANGE("TX_BUFS_GROW", config->tx_mp.bufs_grow, 0,
                              config->tx_mp.max_bufs);
    }
    UCT_SRQUD_CHECK_RANGE("TX_MAX_POLL", config->tx_max_poll, 1, 1024);
    UCT_SRQUD_CHECK_RANGE("RX_MAX_POLL", config->rx_max_poll, 1, 1024);
    UCT_SRQUD_CHECK_RANGE("QUIET_POLLS", config->quiet_polls, 0, 64);
    UCT_SRQUD_CHECK_RANGE("SL", config->sl, 0, 15);
    UCT_SRQUD_CHECK_RANGE("TRAFFIC_CLASS", config->traffic_class, 0, 255);
    UCT_SRQUD_CHECK_RANGE("HOP_LIMIT", config->hop_limit, 1, 255);
    UCT_SRQUD_CHECK_RANGE("TX_WINDOW", config->tx_window, 2, 16384);
    UCT_SRQUD_CHECK_RANGE("ACK_THRESH", config->ack_thresh, 1,
                          config->tx_window);
    UCT_SRQUD_CHECK_RANGE("BACK_ACK_EVERY", config->back_ack_every, 1,
                          config->tx_window);
    UCT_SRQUD_CHECK_RANGE("RX_REORDER", config->rx_reorder, 0,
                          UCT_SRQUD_SR_SPAN);
    if (!(config->ack_delay >= 0) || (config->ack_delay >= config->rto_min)) {
        ucs_error("%s: UCX_SRQUD_ACK_DELAY (%.3fs) must be shorter than "
                  "UCX_SRQUD_RTO_MIN (%.3fs)", md->name,
                  config->ack_delay, config->rto_min);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->rto_min <= 0) || (config->rto_max < config->rto_min) ||
        (config->peer_timeout < config->rto_min)) {
        ucs_error("%s: need 0 < UCX_SRQUD_RTO_MIN (%.3fs) <= UCX_SRQUD_RTO_MAX "
                  "(%.3fs) and RTO_MIN <= UCX_SRQUD_TIMEOUT (%.3fs)",
                  md->name, config->rto_min, config->rto_max,
                  config->peer_timeout);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(config->tx_hold > 0) || (config->tx_hold > config->async_tick)) {
        ucs_error("%s: UCX_SRQUD_TX_HOLD (%.6fs) must be positive and at "
                  "most UCX_SRQUD_ASYNC_TICK (%.3fs)", md->name,
                  config->tx_hold, config->async_tick);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(config->tx_batch_wait >= 0)) {
        ucs_error("%s: UCX_SRQUD_TX_BATCH_WAIT (%.6fs) must not be negative",
                  md->name, config->tx_batch_wait);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(config->async_tick > 0) || (config->async_tick > config->rto_min)) {
        ucs_error("%s: UCX_SRQUD_ASYNC_TICK (%.3fs) must be positive and at "
                  "most UCX_SRQUD_RTO_MIN (%.3fs)", md->name,
                  config->async_tick, config->rto_min);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(config->fault_tx_drop >= 0) || (config->fault_tx_drop > 0.5) ||
        !(config->fault_tx_dup >= 0) || (config->fault_tx_dup > 0.5) ||
        !(config->fault_qp_error >= 0) || (config->fault_qp_error > 0.5) ||
        !(config->fault_chunk_drop >= 0) || (config->fault_chunk_drop > 1)) {
        ucs_error("%s: UCX_SRQUD_FAULT_TX_DROP (%g), UCX_SRQUD_FAULT_TX_DUP "
                  "(%g) and UCX_SRQUD_FAULT_QP_ERROR (%g) must be within "
                  "[0..0.5], UCX_SRQUD_FAULT_CHUNK_DROP (%g) within [0..1]",
                  md->name, config->fault_tx_drop, config->fault_tx_dup,
                  config->fault_qp_error, config->fault_chunk_drop);
        return UCS_ERR_INVALID_PARAM;
    }
    if (config->seg_size != UCS_MEMUNITS_AUTO) {
        UCT_SRQUD_CHECK_RANGE("SEG_SIZE", config->seg_size,
                              sizeof(uct_srqud_neth_t) + 64, mtu);
    }
    if (config->am_packets != UCS_ULUNITS_AUTO) {
        /* a message must fit the window, or no operation could start */
        UCT_SRQUD_CHECK_RANGE("AM_PACKETS", config->am_packets, 1,
                              ucs_min(UCT_SRQUD_AM_PACKETS_MAX,
                                      config->tx_window));
    }
    UCT_SRQUD_CHECK_RANGE("ZCOPY_QPS", config->zcopy_qps, 0, 4096);
    UCT_SRQUD_CHECK_RANGE("ZCOPY_RQ_DEPTH", config->zcopy_rq_depth, 16,
                          ucs_min(dev_attr->max_qp_wr, 65535));
    UCT_SRQUD_CHECK_RANGE("ZCOPY_SQ_DEPTH", config->zcopy_sq_depth, 16,
                          dev_attr->max_qp_wr);
    UCT_SRQUD_CHECK_RANGE("ZCOPY_PEER_JOBS", config->zcopy_peer_jobs, 1,
                          65536);
    UCT_SRQUD_CHECK_RANGE("PASSIVE_MAX", config->passive_max, 1,
                          UCT_SRQUD_EP_ID_NONE / 2);
    UCT_SRQUD_CHECK_RANGE("RMA_REFUSALS_MAX", config->rma_refusals_max, 1,
                          65536);
    if (!(config->passive_idle > 0)) {
        ucs_error("%s: UCX_SRQUD_PASSIVE_IDLE (%.3fs) must be positive",
                  md->name, config->passive_idle);
        return UCS_ERR_INVALID_PARAM;
    }
    if (config->zcopy_thresh == UCS_MEMUNITS_AUTO) {
        ucs_error("%s: UCX_SRQUD_ZCOPY_THRESH must be a size", md->name);
        return UCS_ERR_INVALID_PARAM;
    }
#undef UCT_SRQUD_CHECK_RANGE
    return UCS_OK;
}


void uct_srqud_config_apply(uct_srqud_iface_t *iface,
                            const uct_srqud_iface_config_t *config,
                            size_t mtu)
{
    unsigned tx_max_bufs;

    iface->config.tx_queue_len   = config->tx_queue_len;
    iface->config.srq_size       = config->srq_size;
    iface->config.srq_max_size   = config->srq_max_size;
    iface->config.srq_limit      = config->srq_limit;
    /* every posted buffer may complete before the receiver polls */
    iface->config.rx_cq_len      = 2 * config->srq_max_size;
    iface->config.rx_post_batch  = config->rx_post_batch;
    iface->config.share          = config->share;
    iface->config.stalled_max    = config->stalled_max;
    iface->config.rx_max_bufs    = config->rx_mp.max_bufs;
    iface->config.rx_grow        = (config->rx_mp.bufs_grow > 0) ?
                                   config->rx_mp.bufs_grow : 256;
    iface->config.tx_max_poll    = config->tx_max_poll;
    /* a send above the inline size holds its descriptor until a later
     * completion: in a bounded send pool those take a quarter at most,
     * the rest is for the windows, which acknowledgements empty */
    tx_max_bufs                    = config->tx_mp.max_bufs; /* -1: none */
    iface->config.tx_cq_moderation = (tx_max_bufs != UINT_MAX) ?
            ucs_min(config->tx_cq_moderation, ucs_max(1u, tx_max_bufs / 4)) :
            config->tx_cq_moderation;
    /* a batch holds at most half the send queue: the other half takes
     * the acknowledgements and resends of the call that fills it */
    iface->config.tx_batch       = ucs_min(config->tx_batch,
                                           config->tx_queue_len / 2);
    iface->config.tx_batch_after = uct_srqud_config_tx_batch_after(
            config->tx_batch_after, iface->md->dev_attr.vendor_id);
    iface->config.tx_batch_idle  = config->tx_batch_idle;
    iface->config.tx_batch_step  = config->tx_batch_step;
    iface->config.rx_max_poll    = config->rx_max_poll;
    iface->config.quiet_polls    = config->quiet_polls;
    iface->config.gid_index      = config->gid_index;
    iface->config.sl             = config->sl;
    iface->config.traffic_class  = config->traffic_class;
    iface->config.hop_limit      = config->hop_limit;
    iface->config.seg_size       = (config->seg_size == UCS_MEMUNITS_AUTO) ?
                                   mtu : config->seg_size;
    iface->config.mtu            = mtu;
    iface->config.am_packets     = (config->am_packets != UCS_ULUNITS_AUTO) ?
                                   config->am_packets :
                                   uct_srqud_config_doorbell_is_syscall(
                                           iface->md->dev_attr.vendor_id) ?
                                   ucs_min(2, config->tx_window) : 1;
    iface->config.stats_dump     = config->stats_dump;
    iface->config.zcopy_qps      = config->zcopy_qps;
    iface->config.zcopy_thresh   = config->zcopy_thresh;
    iface->config.zcopy_rq_depth = config->zcopy_rq_depth;
    iface->config.zcopy_sq_depth = config->zcopy_sq_depth;
    iface->config.zcopy_peer_jobs = config->zcopy_peer_jobs;
    iface->config.passive_max    = config->passive_max;
    iface->config.passive_idle   = ucs_time_from_sec(config->passive_idle);
    iface->config.rma_refusals_max = config->rma_refusals_max;
    iface->config.tx_window      = config->tx_window;
    iface->config.rx_reorder     = config->rx_reorder;
    iface->config.rx_held_max    = config->srq_size / 2;
    iface->config.rx_held_ep_max = ucs_max(iface->config.rx_held_max / 2,
                                           UCT_SRQUD_SR_DUPTHRESH + 1);
    /* a budget of its own, not the reorder buffers': packets held ahead of
     * gaps must not keep a message's first packet out, which may be the
     * one that fills a gap; each message counts its most packets */
    iface->config.rx_chains_max  = ucs_max(iface->config.rx_held_max /
                                           (UCT_SRQUD_AM_PACKETS_MAX - 1), 1);
    iface->config.ack_thresh     = config->ack_thresh;
    iface->config.rto_min        = ucs_time_from_sec(config->rto_min);
    iface->config.ack_delay      = ucs_time_from_sec(config->ack_delay);
    iface->config.back_ack       = config->back_ack;
    iface->config.back_ack_every = ucs_min(config->back_ack_every,
                                           config->ack_thresh);
    iface->config.back_ack_delay = ucs_time_from_sec(
            ucs_min(config->back_ack_delay, config->ack_delay / 2));
    /* with TX_BATCH 1 nothing shares a doorbell */
    iface->config.ack_ride       = config->ack_ride &&
                                   (iface->config.tx_batch > 1);
    iface->config.ack_ride_lead  = ucs_time_from_sec(config->ack_delay / 2);
    iface->config.rto_max        = ucs_time_from_sec(config->rto_max);
    iface->config.peer_timeout   = ucs_time_from_sec(config->peer_timeout);
    iface->config.async_tick     = ucs_time_from_sec(config->async_tick);
    iface->config.tx_hold        = ucs_time_from_sec(config->tx_hold);
    iface->config.tx_hold_move   = config->tx_hold_move;
    iface->config.tx_batch_wait  = ucs_time_from_sec(config->tx_batch_wait);
    iface->config.fault_drop     = (uint32_t)(config->fault_tx_drop *
                                              4294967295.0);
    iface->config.fault_dup      = (uint32_t)(config->fault_tx_dup *
                                              4294967295.0);
    iface->config.fault_qp_error = (uint32_t)(config->fault_qp_error *
                                              4294967295.0);
    iface->config.fault_chunk_drop = (uint32_t)(config->fault_chunk_drop *
                                                4294967295.0);
    iface->config.fault_tx       = iface->config.fault_drop ||
                                   iface->config.fault_dup ||
                                   iface->config.fault_qp_error;
    if (iface->config.fault_tx || iface->config.fault_chunk_drop) {
        ucs_warn("%s: fault injection on: dropping %g, duplicating %g of "
                 "sent packets, QP error before %g of sends, dropping %g of "
                 "zero-copy chunks", iface->md->name, config->fault_tx_drop,
                 config->fault_tx_dup, config->fault_qp_error,
                 config->fault_chunk_drop);
    }
}
