/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * A host that speaks srqud's wire protocol by hand: a plain verbs UD QP that
 * sends arbitrary packets to an interface, receives what srqud sends it, and
 * has an srqud address of its own, so that a real interface connects to it
 * as to a peer. The device tests play a malformed, malicious or forging
 * peer with it; nothing of srqud runs on its side.
 */

#ifndef SRQUD_TEST_RAW_H_
#define SRQUD_TEST_RAW_H_

#include "srqud_fixture.h"

extern "C" {
#include <uct/ib/srqud/srqud_def.h>
}

#include <infiniband/verbs.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace srqud_test {

/* One datagram the raw QP received */
struct datagram {
    std::vector<uint8_t> data;       /* what follows the GRH slot */
    uint32_t             byte_len = 0; /* the completion's: GRH slot included */
    uint32_t             src_qp   = 0;
    bool                 with_imm = false;
    uint32_t             imm      = 0; /* host order */

    /* its srqud header, if it starts with one (a zero-copy chunk does
     * not: its bytes are the user's) */
    bool neth(uct_srqud_neth_t *h) const;
    /* what follows the header */
    const uint8_t *payload() const;
    size_t payload_len() const;
};


/*
 * A plain verbs UD QP (Q_Key UCT_SRQUD_QKEY, as every srqud interface QP)
 * aimed at one srqud interface: on that interface's device, or with
 * SRQUD_TEST_INJECT_DEVICE on another one (the far end of the two-host
 * wire, so the packets cross it). Its receive queue has buffers posted for
 * any datagram srqud sends (a control packet or a chunk of up to 4 KB);
 * sends and receives complete on CQs of their own.
 */
class raw_sender {
public:
    ~raw_sender();

    /* aimed at the interface of @a dev_addr / @a iface_addr, opened on
     * @a dev (e.g. rxe0:1); call through ASSERT_NO_FATAL_FAILURE */
    void init(const std::string &dev, const std::vector<uint8_t> &dev_addr,
              const std::vector<uint8_t> &iface_addr);

    /* to the interface's QP, with the Q_Key every srqud interface QP has */
    void send(const void *data, size_t len);
    void send(const std::vector<uint8_t> &packet)
    {
        send(packet.data(), packet.size());
    }

    /* to any QP of the interface's port, with an immediate if @a imm */
    void send_to(const void *data, size_t len, uint32_t qpn, uint32_t qkey,
                 const uint32_t *imm);

    /* the next datagram received, if there is one (failed receives are
     * skipped); the buffer is posted again */
    bool try_recv(datagram &d);

    /* the next datagram within @a timeout_ms of wall time, calling
     * @a progress (the real interface's progress) between polls */
    bool recv(datagram &d, unsigned timeout_ms,
              const std::function<void()> &progress = nullptr);

    /* every datagram received so far, each to @a handler */
    unsigned drain(const std::function<void(const datagram&)> &handler);

    /* its srqud addresses: a real interface connects to this QP with them
     * (iface::connect(peer_dev_addr(), peer_iface_addr(), &ep)) */
    std::vector<uint8_t> peer_dev_addr() const;
    std::vector<uint8_t> peer_iface_addr() const;
    uint32_t qpn() const { return qp->qp_num; }

    ibv_context *ctx  = nullptr;
    ibv_pd      *pd   = nullptr;
    ibv_cq      *cq   = nullptr;    /* sends */
    ibv_cq      *rcq  = nullptr;    /* receives */
    ibv_mr      *mr   = nullptr;    /* buf */
    ibv_mr      *rmr  = nullptr;    /* rbuf */
    ibv_qp      *qp   = nullptr;
    ibv_ah      *ah   = nullptr;
    int         port  = 1;
    uint16_t    lid   = 0;
    bool        is_eth = true;
    ibv_gid     gid;                /* the one it sends from */
    uint32_t    remote_qpn = 0;
    char        buf[4096];

    /* a receive: GRH slot, a chunk of the largest MTU, room for a
     * control packet of a larger segment */
    static const unsigned recv_len   = UCT_SRQUD_GRH_LEN +
                                       UCT_SRQUD_MAX_MTU + 256;
    static const unsigned recv_count = 256;

private:
    void post_recv(unsigned index);

    std::vector<uint8_t> rbuf;
};


/* The receive counters, to say what happened to a packet that went missing */
std::string stats_line(const uct_srqud_iface_stats_t &s);


/* What the fake peer calls its side of a connection */
const uint32_t fake_ep_id = 7;

/* The AM id the receivers' logs take */
const uint8_t am_id = 3;


uct_srqud_neth_t make_neth(uint8_t flags, uint8_t ctl, uint32_t dest_ep_id,
                           uint32_t src_ep_id, uint16_t psn, uint32_t token);

/* A packet: the header, then up to two parts of payload */
std::vector<uint8_t> packet(const uct_srqud_neth_t &neth,
                            const void *a = nullptr, size_t a_len = 0,
                            const void *b = nullptr, size_t b_len = 0);

/* Wall time, to bound waits for what UD may lose (never asserted on) */
bool expired(std::chrono::steady_clock::time_point since, unsigned ms);

/* Send @a pkt until the receiver has it (its rx_packets counts it; UD may
 * lose it: sent again, as the peer's reliability would), then progress
 * the receiver until done() */
bool deliver(raw_sender &peer, iface &receiver, const std::vector<uint8_t> &pkt,
             const std::function<bool()> &done);

/* The log holds @a count messages, intact and in order, and no more come
 * once a wrongly accepted packet has had the chance to show */
void expect_only(iface &receiver, const am_log &log, unsigned count);


/*
 * The fake peer as the initiator of a connection to a real interface (the
 * receiver): its CREQ opens a passive ep there, whose id the answer names;
 * then reliable packets of its own making.
 */
class fake_conn {
public:
    fake_conn(raw_sender &p, iface &r, uint32_t ep, uint32_t t, uint32_t sn) :
        peer(p), receiver(r), ep_id(ep), token(t), conn_sn(sn)
    {
    }

    /* The CREQ, until the receiver answers it: the CREP, or the ack of a
     * repeated CREQ, names the passive ep (its src_ep_id) and carries this
     * connection's token */
    bool connect()
    {
        uct_srqud_neth_t h = make_neth(UCT_SRQUD_PACKET_FLAG_CTL |
                                       UCT_SRQUD_PACKET_FLAG_REL,
                                       UCT_SRQUD_CTL_CREQ,
                                       UCT_SRQUD_EP_ID_NONE, ep_id, 0, token);
        const std::vector<uint8_t> creq = packet(h, &conn_sn, sizeof(conn_sn));
        datagram d;

        for (int attempt = 0; attempt < 5; ++attempt) {
            peer.send(creq);
            while (peer.recv(d, 2000, [&] { receiver.progress(); })) {
                if (d.neth(&h) && (h.dest_ep_id == ep_id) &&
                    (h.token == token) &&
                    (h.flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
                    ((h.ctl == UCT_SRQUD_CTL_CREP) ||
                     (h.ctl == UCT_SRQUD_CTL_ACK))) {
                    passive_id = h.src_ep_id;
                    on_datagram(d);
                    return true;
                }
            }
        }
        ADD_FAILURE() << "no answer to the CREQ of ep " << ep_id << ": "
                      << stats_line(srqud_stats(receiver.handle));
        return false;
    }

    /* A reliable packet to the passive ep */
    std::vector<uint8_t> reliable(uint8_t flags, uint8_t ctl, uint16_t psn,
                                  const void *a, size_t a_len,
                                  const void *b = nullptr,
                                  size_t b_len = 0) const
    {
        uct_srqud_neth_t h = make_neth(flags | UCT_SRQUD_PACKET_FLAG_REL, ctl,
                                       passive_id, ep_id, psn, token);
        return packet(h, a, a_len, b, b_len);
    }

    /* A reliable AM carrying fill_seq_msg(@a seq) */
    std::vector<uint8_t> am(uint16_t psn, uint64_t seq) const
    {
        std::vector<uint8_t> msg(8 + 100);
        fill_seq_msg(msg.data(), msg.size(), seq);
        std::vector<uint8_t> p = reliable(UCT_SRQUD_PACKET_FLAG_AM, 0, psn,
                                          msg.data(), msg.size());
        p[offsetof(uct_srqud_neth_t, am_id)] = am_id;
        return p;
    }

    /* The receiver's acknowledgement, from any packet of its passive ep */
    void on_datagram(const datagram &d)
    {
        uct_srqud_neth_t h;

        if (d.neth(&h) && (h.dest_ep_id == ep_id) && (h.token == token) &&
            (h.flags & UCT_SRQUD_PACKET_FLAG_ACK) && (h.ack_psn != 0xffff)) {
            acked = std::max(acked, (int)h.ack_psn);
        }
    }

    /*
     * Reliable packets @a first..@a last, make(psn) each, as srqud's sender
     * sends them: in order, a window of 32 at a time, the last asking for
     * an ack; while the receiver takes none, again from the first one it
     * has not (one was lost). @a accepted: the last psn the receiver took
     * in order. False if it got nowhere for a long while.
     */
    bool send_stream(int first, int last,
                     const std::function<std::vector<uint8_t>(uint16_t)> &make,
                     const std::function<int()> &accepted,
                     const std::function<void(const datagram&)> &handler)
    {
        unsigned stalls = 0;

        while (accepted() < last) {
            const int before = accepted();
            const int from   = std::max(before + 1, first);
            const int to     = std::min(from + 31, last);
            for (int psn = from; psn <= to; ++psn) {
                std::vector<uint8_t> p = make((uint16_t)psn);
                if (psn == to) {
                    p[offsetof(uct_srqud_neth_t, flags)] |=
                            UCT_SRQUD_PACKET_FLAG_ACK_REQ;
                }
                peer.send(p);
                if (::testing::Test::HasFatalFailure()) {
                    return false;
                }
            }
            for (unsigned long n = 0; (n < 400000) && (accepted() < to); ++n) {
                receiver.progress();
                peer.drain(handler);
            }
            if (accepted() > before) {
                stalls = 0;
            } else if (++stalls > 50) {
                return false;
            }
        }
        return true;
    }

    raw_sender     &peer;
    iface          &receiver;
    const uint32_t ep_id;
    const uint32_t token;
    const uint32_t conn_sn;
    uint32_t       passive_id = UCT_SRQUD_EP_ID_NONE;
    int            acked      = -1;
};



/* A real interface (the receiver) with an AM log on am_id and the fake
 * peer aimed at it: where the tests that attack a receiver start */
struct attacked {
    /* call through ASSERT_NO_FATAL_FAILURE */
    void open();

    uct_ctx                ctx;
    std::unique_ptr<iface> receiver;
    am_log                 log{1};
    raw_sender             peer;
};


} // namespace srqud_test

#endif
