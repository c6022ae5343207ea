/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Wire formats and constants of the srqud transport.
 */

#ifndef UCT_SRQUD_DEF_H_
#define UCT_SRQUD_DEF_H_

#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>
#include <stdint.h>
#include <stddef.h>


#define UCT_SRQUD_TL_NAME          "srqud"
#define UCT_SRQUD_CONFIG_PREFIX    "SRQUD_"

/* Every UD receive starts with a 40-byte Global Routing Header slot: the HCA
 * writes the GRH there when the packet carries one (always on RoCE), and
 * leaves it undefined otherwise. rxe and mlx5 both do this. */
#define UCT_SRQUD_GRH_LEN          40

/* Q_Key shared by all srqud QPs. The high bit is clear, so it may be set on
 * a send work request by an unprivileged process. */
#define UCT_SRQUD_QKEY             0x1ee75a1dU

/* First byte of every srqud packet. A packet whose first byte differs did
 * not come from srqud (or is corrupt) and is dropped. */
#define UCT_SRQUD_MAGIC            0x5d

/* Smallest and largest IB path MTU in bytes */
#define UCT_SRQUD_MIN_MTU          256
#define UCT_SRQUD_MAX_MTU          4096

/* Largest I/O vector of an operation */
#define UCT_SRQUD_MAX_IOV          8

/* Largest get_zcopy / put_zcopy (2^31 chunks of a 4 KB MTU is far more) */
#define UCT_SRQUD_RMA_MAX_ZCOPY    (1ul << 32)

/* Most sends posted with one doorbell (UCX_SRQUD_TX_BATCH) */
#define UCT_SRQUD_TX_BATCH_MAX     64

/* Most packets of one active message (UCX_SRQUD_AM_PACKETS): a receiver
 * takes chains up to this long from any peer, whatever its own setting */
#define UCT_SRQUD_AM_PACKETS_MAX   4

/* The vendor id Soft-RoCE (rdma_rxe) reports: a device whose every UD
 * doorbell is a system call and a softirq (UCX_SRQUD_AM_PACKETS=auto) */
#define UCT_SRQUD_SOFT_ROCE_VENDOR_ID 0xffffffU

/* UCX_SRQUD_TX_BATCH_AFTER=auto there: sends since the user's last
 * progress that go at once before later ones batch (docs/design.md) */
#define UCT_SRQUD_TX_BATCH_AFTER_SOFT 8

/* Largest control packet sent inline from the stack */
#define UCT_SRQUD_CTL_INLINE_MAX   128

/* Largest am_zcopy header (it is copied into the packet's descriptor) */
#define UCT_SRQUD_AM_ZCOPY_MAX_HDR 128

/* Destination endpoint id of packets that are addressed to the interface,
 * not to an endpoint (connectionless active messages). */
#define UCT_SRQUD_EP_ID_NONE       0xffffffU


/* Packet flags */
enum {
    UCT_SRQUD_PACKET_FLAG_AM      = UCS_BIT(0), /* Carries an active message */
    UCT_SRQUD_PACKET_FLAG_ACK     = UCS_BIT(1), /* ack_psn is valid */
    UCT_SRQUD_PACKET_FLAG_ACK_REQ = UCS_BIT(2), /* Sender asks for an ACK now */
    UCT_SRQUD_PACKET_FLAG_CTL     = UCS_BIT(3), /* ctl holds an opcode */
    UCT_SRQUD_PACKET_FLAG_REL     = UCS_BIT(4), /* In the sequence: psn valid */
    UCT_SRQUD_PACKET_FLAG_BACK_ACK = UCS_BIT(5),/* Ends with an uct_srqud_back_ack_t */
    UCT_SRQUD_PACKET_FLAG_MORE    = UCS_BIT(6), /* A reliable AM whose message
                                                   goes on in the next psn */
    UCT_SRQUD_PACKET_FLAGS_ALL    = UCS_MASK(7)
};


/*
 * An acknowledgement on the way back. Every connection has two endpoints
 * per side (the active ep that sends, the passive one that receives from
 * the peer's active ep), so a reply travels on another connection than
 * the request it answers, and its header cannot acknowledge the request.
 * A reliable AM may end with this trailer instead: the cumulative ack of
 * the sender's passive ep, addressed to the receiver's active ep that
 * feeds it. In a request-reply exchange the reply then carries the ack,
 * as ud_verbs' single ep does, and no acknowledgement packet goes either
 * way. The receiver applies it only to its active ep of that id that
 * sends to the packet's source QP with that token (a third party cannot
 * forge one without the token, which never leaves the connection's two
 * hosts).
 */
typedef struct uct_srqud_back_ack {
    uint32_t ep_id;       /* the receiver's active ep */
    uint32_t token;       /* that ep's connection token */
    uint16_t psn;         /* cumulative: last in-order psn received */
} UCS_S_PACKED uct_srqud_back_ack_t;


/* Control opcodes (neth.ctl, with FLAG_CTL) */
enum {
    UCT_SRQUD_CTL_NONE = 0,
    UCT_SRQUD_CTL_CREQ = 1,  /* reliable, psn 0: opens the receiver's side */
    UCT_SRQUD_CTL_CREP = 2,  /* unreliable: carries the receiver's ep id */
    UCT_SRQUD_CTL_NACK = 3,  /* unreliable: ack_psn + 1 is missing; SACK */
    UCT_SRQUD_CTL_ACK  = 4,  /* unreliable: pure acknowledgement; SACK */
    UCT_SRQUD_CTL_NOP  = 5,  /* reliable, no payload: keepalive (ep_check) */
    /* RMA and zero-copy (srqud_rma.c, srqud_zcopy.c). The side that issued
     * the operation (initiator) sends reliably over its ep; the other side
     * answers with unreliable packets, and the initiator asks again when an
     * answer does not come. */
    UCT_SRQUD_CTL_RMA_PUT   = 6,  /* rel: write these bytes at (addr, rkey) */
    UCT_SRQUD_CTL_RMA_GET   = 7,  /* rel: send me bytes at (addr, rkey) */
    UCT_SRQUD_CTL_RMA_REPLY = 8,  /* unrel: a get's bytes, or its refusal */
    UCT_SRQUD_CTL_ZGET      = 9,  /* rel: send these chunks to my pool QP */
    UCT_SRQUD_CTL_ZPUT      = 10, /* rel: post your memory for my chunks */
    UCT_SRQUD_CTL_ZCTS      = 11, /* unrel: posted; send these chunks there */
    UCT_SRQUD_CTL_ZFIN      = 12, /* get: unrel, put: rel: chunks sent */
    UCT_SRQUD_CTL_ZACK      = 13, /* unrel: a put's data is all in place */
    /* A refused RMA_PUT (srqud_rma_refusal.c). Its acknowledgement goes
     * only with the refusal, until the initiator says it has the refusal:
     * a put is never acknowledged without its error. */
    UCT_SRQUD_CTL_RMA_REFUSE = 14, /* unrel: this put was refused */
    UCT_SRQUD_CTL_RMA_SEEN   = 15, /* unrel, to the passive ep: refusal in */
    UCT_SRQUD_CTL_LAST
};


/* Payload of an ACK, NACK or CREP from a receiver that holds packets ahead
 * of a gap (selective repeat, srqud_sr.h): bit (psn % 256) is set for each
 * psn after ack_psn + 1 it holds. */
typedef struct uct_srqud_sack {
    uint64_t map[4];
} UCS_S_PACKED uct_srqud_sack_t;


/* RMA_PUT / RMA_GET header (data follows an RMA_PUT) */
typedef struct uct_srqud_rma_hdr {
    uint64_t remote_addr;
    uint32_t rkey;
    uint32_t length;
    uint32_t op_id;       /* echoed in the reply */
    uint32_t frag;        /* RMA_GET: fragment of the operation */
} UCS_S_PACKED uct_srqud_rma_hdr_t;


/* In an RMA op id: the op is a get (its initiator ignores a refusal that
 * arrives after the op completed) */
#define UCT_SRQUD_RMA_OP_GET 0x80000000u


/* RMA_REPLY header (an RMA_GET's data follows) */
typedef struct uct_srqud_rma_reply {
    uint32_t op_id;
    uint32_t frag;
    int8_t   status;      /* ucs_status_t: UCS_OK with the data, or why the
                             get was refused */
} UCS_S_PACKED uct_srqud_rma_reply_t;


/* RMA_REFUSE: a put the passive side refused. Sent again with every
 * acknowledgement until RMA_SEEN names its id; the ack it carries reaches
 * at most the packet before the ep's next refused put. */
typedef struct uct_srqud_rma_refusal {
    uint32_t op_id;       /* the put's op id (0: put_short / put_bcopy) */
    uint32_t id;          /* the refusal's number at the refusing iface,
                             rising; repeats carry the same. 0: sent
                             without the hold (no memory for it) */
    uint16_t first_psn;   /* the refused packets: one for a put_short, */
    uint16_t last_psn;    /* any of an operation's fragments in between */
    int8_t   status;      /* ucs_status_t */
} UCS_S_PACKED uct_srqud_rma_refusal_t;


/* RMA_SEEN: the initiator has refusal @a id; sent for every RMA_REFUSE */
typedef struct uct_srqud_rma_seen {
    uint32_t id;
} UCS_S_PACKED uct_srqud_rma_seen_t;


/* A list of chunk ranges (start, count), in the order of the sink's
 * receives: what the source must send, in that order */
typedef struct uct_srqud_zrange {
    uint32_t start;
    uint16_t count;
} UCS_S_PACKED uct_srqud_zrange_t;


/* ZGET / ZPUT / ZCTS / ZFIN / ZACK header. ZGET and ZCTS carry ranges. */
typedef struct uct_srqud_zhdr {
    uint32_t xfer_id;     /* the initiator's transfer */
    uint16_t round;       /* retransmission round, from 1 */
    int8_t   status;      /* answers: ucs_status_t */
    uint8_t  num_ranges;  /* zrange entries that follow */
    uint32_t qpn;         /* ZGET, ZCTS: the sink's pool QP */
    uint32_t qkey;        /* ZGET, ZCTS: the Q_Key that pool QP takes for
                             this transfer (random, drawn per transfer):
                             the device drops chunks without it, so a host
                             that never saw this header cannot forge one */
    uint32_t rkey;        /* ZGET, ZPUT: the remote region */
    uint64_t remote_addr;
    uint64_t length;      /* the whole transfer */
    uint32_t chunk;       /* chunk size (ZGET, ZPUT: at most; ZCTS: used) */
    uint32_t count;       /* ZFIN: chunks sent this round */
} UCS_S_PACKED uct_srqud_zhdr_t;


/**
 * Network header: the first bytes of every packet after the GRH slot.
 * Multi-byte fields are in host order; srqud does not mix endianness.
 */
typedef struct uct_srqud_neth {
    uint8_t  magic;       /* UCT_SRQUD_MAGIC */
    uint8_t  flags;       /* UCT_SRQUD_PACKET_FLAG_xx */
    uint8_t  am_id;       /* Active message id, when FLAG_AM */
    uint8_t  ctl;         /* UCT_SRQUD_CTL_xx, when FLAG_CTL */
    uint32_t dest_ep_id;  /* Receiver's endpoint id or EP_ID_NONE */
    uint32_t src_ep_id;   /* Sender's endpoint id */
    uint16_t psn;         /* Packet sequence number, when FLAG_REL */
    uint16_t ack_psn;     /* Last in-order psn received, when FLAG_ACK */
    uint32_t token;       /* The connection's secret: random, chosen by the
                             active ep, sent in its CREQ, carried by every
                             packet of the connection both ways. A sender
                             off the path cannot inject by guessing ep ids
                             and sequence numbers (it would also need 32
                             random bits it never saw). */
} UCS_S_PACKED uct_srqud_neth_t;


/* Link layer of the device address */
enum {
    UCT_SRQUD_ADDR_FLAG_ETH   = UCS_BIT(0)   /* RoCE: route by GID only */
};


/**
 * Device address: what is needed to build an address handle to the peer.
 */
typedef struct uct_srqud_device_addr {
    uint8_t  flags;       /* UCT_SRQUD_ADDR_FLAG_xx */
    uint16_t lid;         /* IB only */
    uint8_t  gid[16];
} UCS_S_PACKED uct_srqud_device_addr_t;


/**
 * Interface address: the QP number of the interface's main UD QP.
 */
typedef struct uct_srqud_iface_addr {
    uint8_t  qp_num[3];
} UCS_S_PACKED uct_srqud_iface_addr_t;


static inline void uct_srqud_pack_qpn(uint8_t *dst, uint32_t qpn)
{
    dst[0] = qpn & 0xff;
    dst[1] = (qpn >> 8) & 0xff;
    dst[2] = (qpn >> 16) & 0xff;
}


static inline uint32_t uct_srqud_unpack_qpn(const uint8_t *src)
{
    return src[0] | ((uint32_t)src[1] << 8) | ((uint32_t)src[2] << 16);
}


/**
 * Check a received packet. @a len is the byte count reported by the
 * completion, GRH slot included. Returns UCS_OK and the AM payload length,
 * or an error for a packet that must be dropped.
 */
static inline ucs_status_t
uct_srqud_neth_check(const uct_srqud_neth_t *neth, size_t len,
                     unsigned am_id_max, size_t *payload_len_p)
{
    if (len < UCT_SRQUD_GRH_LEN + sizeof(*neth)) {
        return UCS_ERR_MESSAGE_TRUNCATED;
    }

    if ((neth->magic != UCT_SRQUD_MAGIC) ||
        (neth->flags & ~UCT_SRQUD_PACKET_FLAGS_ALL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    if ((neth->flags & UCT_SRQUD_PACKET_FLAG_AM) && (neth->am_id >= am_id_max)) {
        return UCS_ERR_INVALID_PARAM;
    }

    if ((neth->flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
        ((neth->ctl == UCT_SRQUD_CTL_NONE) || (neth->ctl >= UCT_SRQUD_CTL_LAST))) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* exactly one of AM and CTL */
    if (!(neth->flags & UCT_SRQUD_PACKET_FLAG_AM) ==
        !(neth->flags & UCT_SRQUD_PACKET_FLAG_CTL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    *payload_len_p = len - UCT_SRQUD_GRH_LEN - sizeof(*neth);

    /* only a reliable AM is continued by the next packet of its sequence */
    if ((neth->flags & UCT_SRQUD_PACKET_FLAG_MORE) &&
        (!(neth->flags & UCT_SRQUD_PACKET_FLAG_AM) ||
         !(neth->flags & UCT_SRQUD_PACKET_FLAG_REL))) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* only a reliable AM carries an ack back, at its end */
    if (neth->flags & UCT_SRQUD_PACKET_FLAG_BACK_ACK) {
        if (!(neth->flags & UCT_SRQUD_PACKET_FLAG_AM) ||
            !(neth->flags & UCT_SRQUD_PACKET_FLAG_REL)) {
            return UCS_ERR_INVALID_PARAM;
        }
        if (*payload_len_p < sizeof(uct_srqud_back_ack_t)) {
            return UCS_ERR_MESSAGE_TRUNCATED;
        }
        *payload_len_p -= sizeof(uct_srqud_back_ack_t);
    }
    return UCS_OK;
}

#endif
