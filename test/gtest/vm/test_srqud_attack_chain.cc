/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Messages of several packets from a peer that does not play by the
 * protocol (the fake peer of srqud_raw.h against a real interface):
 * malformed ones are dropped, unfinished ones give way to others without
 * loss, and an ack asked for within one comes with its last packet.
 */

#include "srqud_raw.h"

extern "C" {
#include <uct/ib/srqud/srqud_rel.h>   /* UCT_SRQUD_SR_SPAN */
}

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>


using namespace srqud_test;

/* A packet of a message of several: @a len bytes of @a data, AM id @a id,
 * flagged MORE if @a more */
static std::vector<uint8_t> chain_piece(const fake_conn &c, uint16_t psn,
                                        uint8_t id, bool more,
                                        const uint8_t *data, size_t len)
{
    std::vector<uint8_t> p = c.reliable(UCT_SRQUD_PACKET_FLAG_AM |
                                        (more ? UCT_SRQUD_PACKET_FLAG_MORE : 0),
                                        0, psn, data, len);
    p[offsetof(uct_srqud_neth_t, am_id)] = id;
    return p;
}


/* Packet @a psn of a two-packet message of fill_seq_msg(@a seq) (208
 * bytes), its first or its last, asking for an ack if @a ack_req */
static std::vector<uint8_t> half_message(const fake_conn &f, uint16_t psn,
                                         uint64_t seq, bool first,
                                         bool ack_req)
{
    std::vector<uint8_t> m(8 + 200);
    fill_seq_msg(m.data(), m.size(), seq);
    std::vector<uint8_t> p = first ?
            chain_piece(f, psn, am_id, true, m.data(), 100) :
            chain_piece(f, psn, am_id, false, m.data() + 100, 108);
    if (ack_req) {
        p[offsetof(uct_srqud_neth_t, flags)] |= UCT_SRQUD_PACKET_FLAG_ACK_REQ;
    }
    return p;
}


/* The receiver of the chain attacks: an SRQ of 64 (32 buffers held, 10
 * messages begun at once) and messages of up to two packets */
class srqud_attack_chain : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_NO_FATAL_FAILURE(a.open());
    }

    uct_srqud_iface_stats_t stats() const
    {
        return srqud_stats(a.receiver->handle);
    }

    /* deliver()'s end when the packet's arrival is all to wait for */
    static bool received()
    {
        return true;
    }

    /* the ack psns the receiver sends @a f while progressing @a rounds
     * times */
    std::vector<int> acks_to(const fake_conn &f, int rounds = 200000)
    {
        std::vector<int> acks;
        for (int i = 0; i < rounds; ++i) {
            a.receiver->progress();
            peer.drain([&](const datagram &d) {
                uct_srqud_neth_t h;
                if (d.neth(&h) && (h.dest_ep_id == f.ep_id) &&
                    (h.flags & UCT_SRQUD_PACKET_FLAG_ACK)) {
                    acks.push_back(h.ack_psn);
                }
            });
        }
        return acks;
    }

    env_guard  srq{"UCX_SRQUD_SRQ_SIZE", "64"};
    env_guard  chains{"UCX_SRQUD_AM_PACKETS", "2"};
    attacked   a;
    am_log     &log{a.log};
    raw_sender &peer{a.peer};
};


/*
 * A message of several packets (MORE on all but its last) is held until its
 * last packet is in. A peer that breaks the sender's rules has the message
 * counted and dropped, nothing of it left held, and its connection goes on:
 * more than UCT_SRQUD_AM_PACKETS_MAX packets, another AM id within the
 * message, or a request between its packets.
 */
TEST_F(srqud_attack_chain, malformed_chains_are_dropped)
{
    iface &receiver = *a.receiver;

    std::vector<uint8_t> msg(8 + 3000);
    fill_seq_msg(msg.data(), msg.size(), 1);
    fake_conn c(peer, receiver, 5, 0x5eed0f01, 9);
    ASSERT_TRUE(c.connect());
    uint16_t psn = 1;
    /* the next packet of 100 bytes, AM id @a id, flagged MORE if @a more */
    auto piece = [&](uint8_t id, bool more) {
        return deliver(peer, receiver,
                       chain_piece(c, psn++, id, more, msg.data(), 100),
                       received);
    };

    /* a message of two packets arrives whole */
    ASSERT_TRUE(deliver(peer, receiver,
                        chain_piece(c, psn++, am_id, true, msg.data(), 1000),
                        received));
    EXPECT_EQ(0u, log.count) << "a message's first packet was delivered alone";
    ASSERT_TRUE(deliver(peer, receiver,
                        chain_piece(c, psn++, am_id, false, msg.data() + 1000,
                              msg.size() - 1000),
                        [&] { return log.count >= 1; }))
        << stats_line(stats());
    EXPECT_EQ(msg.size(), log.lengths[1]);
    EXPECT_EQ(1u, stats().rx_am_chains);

    /* UCT_SRQUD_AM_PACKETS_MAX packets, each saying more follow */
    for (unsigned i = 0; i < UCT_SRQUD_AM_PACKETS_MAX; ++i) {
        ASSERT_TRUE(piece(am_id, true));
    }
    EXPECT_EQ(1u, stats().rx_chain_bad);

    /* another AM id within a message */
    ASSERT_TRUE(piece(am_id, true));
    ASSERT_TRUE(piece(am_id + 1, false));
    EXPECT_EQ(2u, stats().rx_chain_bad);

    /* a request within a message (its answer would acknowledge the
     * message's packets before its last) */
    ASSERT_TRUE(piece(am_id, true));
    ASSERT_TRUE(deliver(peer, receiver,
                        c.reliable(UCT_SRQUD_PACKET_FLAG_CTL, UCT_SRQUD_CTL_NOP,
                                   psn++, nullptr, 0),
                        received));
    EXPECT_EQ(3u, stats().rx_chain_bad);

    /* the connection goes on */
    ASSERT_TRUE(deliver(peer, receiver, c.am(psn++, 2),
                        [&] { return log.count >= 2; }))
        << stats_line(stats());
    expect_only(receiver, log, 2);
}


/*
 * A peer that starts messages of several packets on many connections and
 * ends none has at most rx_chains_max of them held (half the SRQ in
 * buffers, each message counted as UCT_SRQUD_AM_PACKETS_MAX - 1): beyond,
 * the oldest gives way. Nothing of an unfinished message is acknowledged,
 * so one that gave way arrives whole when its sender sends it again, and
 * another connection's message arrives at once. An ep with a message open
 * holds packets ahead of a gap only within the SACK's span after what it
 * acknowledges.
 */
TEST_F(srqud_attack_chain, unfinished_chains_give_way_without_loss)
{
    iface &receiver = *a.receiver;

    fake_conn c(peer, receiver, 5, 0x5eed0f01, 9);
    ASSERT_TRUE(c.connect());
    uint16_t psn = 1;

    /* the first packets ask for an ack */
    auto piece = [](const fake_conn &f, uint16_t psn, uint64_t seq,
                    bool first) {
        return half_message(f, psn, seq, first, first);
    };

    /* 40 connections each begin a message and do not end it; the first
     * also sends packets far ahead. Their numbers are out of the log's
     * order (never delivered), but for the last one's: 1 */
    const unsigned long evicted = stats().rx_chain_evicted;
    std::vector<std::unique_ptr<fake_conn>> conns;
    for (uint32_t i = 0; i < 40; ++i) {
        conns.emplace_back(new fake_conn(peer, receiver, 100 + i,
                                         0x7a110000 + i, 1));
        fake_conn &f = *conns.back();
        ASSERT_TRUE(f.connect());
        ASSERT_TRUE(deliver(peer, receiver,
                            piece(f, 1, (i == 39) ? 1 : 1000 + i, true),
                            received));
        if (i > 0) {
            continue;
        }
        /* psn 2 is expected and the ack stays at 0: 256 is the farthest
         * it may hold (the SACK's span after the ack), 257 is beyond */
        const unsigned long dropped = stats().rx_reorder_dropped;
        const unsigned long held    = stats().rx_held;
        ASSERT_TRUE(deliver(peer, receiver, f.am(UCT_SRQUD_SR_SPAN + 1, 999),
                            received));
        EXPECT_EQ(dropped + 1, stats().rx_reorder_dropped)
            << "held outside the span after its ack";
        ASSERT_TRUE(deliver(peer, receiver, f.am(UCT_SRQUD_SR_SPAN, 999),
                            received));
        EXPECT_EQ(held + 1, stats().rx_held);
    }
    EXPECT_GE(stats().rx_chain_evicted, evicted + 40 - 10)
        << "more than 10 messages held: " << stats_line(stats());

    /* the last one is held, and not acknowledged before its last packet
     * (a repeated first packet draws an ack at once) */
    fake_conn &last = *conns.back();
    acks_to(last);
    ASSERT_TRUE(deliver(peer, receiver, piece(last, 1, 1, true), received));
    std::vector<int> acks = acks_to(last);
    ASSERT_FALSE(acks.empty()) << "a repeated packet drew no ack";
    for (int a : acks) {
        EXPECT_EQ(0, a) << "a message's first packet acknowledged alone";
    }

    /* another connection begins a message while 10 are held: taken at
     * once, the oldest held giving way */
    ASSERT_TRUE(deliver(peer, receiver, piece(c, psn++, 2, true), received));
    EXPECT_GE(stats().rx_chain_evicted, evicted + 40 - 10 + 1)
        << stats_line(stats());

    /* the last connection's last packet: delivered whole, and
     * acknowledged; then the other's */
    ASSERT_TRUE(deliver(peer, receiver, piece(last, 2, 1, false),
                        [&] { return log.count >= 1; }))
        << stats_line(stats());
    EXPECT_EQ(208u, log.lengths[1]);
    acks = acks_to(last);
    EXPECT_NE(acks.end(), std::find(acks.begin(), acks.end(), 2))
        << "a whole message not acknowledged: " << stats_line(stats());
    ASSERT_TRUE(deliver(peer, receiver, piece(c, psn++, 2, false),
                        [&] { return log.count >= 2; }))
        << stats_line(stats());

    /* the first connection's message gave way long ago: sent again, it
     * arrives whole (its first packet of another number was not kept) */
    fake_conn &first = *conns.front();
    ASSERT_TRUE(deliver(peer, receiver, piece(first, 1, 3, true), received));
    ASSERT_TRUE(deliver(peer, receiver, piece(first, 2, 3, false),
                        [&] { return log.count >= 3; }))
        << stats_line(stats());
    EXPECT_EQ(208u, log.lengths[3]);

    /* and nothing else came */
    ASSERT_TRUE(deliver(peer, receiver, c.am(psn++, 4),
                        [&] { return log.count >= 4; }))
        << stats_line(stats());
    expect_only(receiver, log, 4);
}


/* A receiver that holds back its acks for 5 s (ACK_DELAY; RTO_MIN above
 * it, as the configuration requires) */
class srqud_attack_chain_acks : public srqud_attack_chain {
protected:
    /* UCX_SRQUD_ACK_DELAY's, in seconds */
    static double ack_delay()
    {
        return 5.0;
    }

    env_guard rto_min{"UCX_SRQUD_RTO_MIN", "10s"};
    env_guard rto_max{"UCX_SRQUD_RTO_MAX", "10s"};
    env_guard delay{"UCX_SRQUD_ACK_DELAY", "5s"};
};


/*
 * An ack asked for on a packet of a message (the sender's window half
 * full) cannot come before the message's last packet, since nothing of an
 * unfinished message is acknowledged; it comes with that last packet, not
 * ACK_DELAY later. A sender whose window waits on it would otherwise stall
 * for ACK_DELAY on every such message.
 */
TEST_F(srqud_attack_chain_acks, an_ack_asked_within_a_message_comes_at_its_end)
{
    iface &receiver = *a.receiver;
    fake_conn c(peer, receiver, 5, 0x5eed0f01, 9);
    ASSERT_TRUE(c.connect());

    /* a whole message, then the first packet of another asking for an ack:
     * nothing beyond the first message is acknowledged */
    ASSERT_TRUE(deliver(peer, receiver, half_message(c, 1, 1, true, false),
                        received));
    ASSERT_TRUE(deliver(peer, receiver, half_message(c, 2, 1, false, false),
                        [&] { return log.count >= 1; }));
    ASSERT_TRUE(deliver(peer, receiver, half_message(c, 3, 2, true, true),
                        received));
    for (int ack : acks_to(c)) {
        EXPECT_GE(2, ack) << "an unfinished message acknowledged";
    }

    /* its last packet, which does not ask: the ack of both comes before
     * ACK_DELAY has passed (the test fails only if its thread is kept off
     * the cores for that long) */
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(deliver(peer, receiver, half_message(c, 4, 2, false, false),
                        [&] { return log.count >= 2; }));
    bool acked = false;
    while (!acked &&
           !expired(start, (unsigned)(ack_delay() * 1000) + 1000)) {
        for (int ack : acks_to(c, 1000)) {
            acked |= (ack == 4);
        }
    }
    const double waited = std::chrono::duration<double>(
            std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(acked) << stats_line(stats());
    EXPECT_LT(waited, ack_delay()) << "the ack waited for ACK_DELAY";
    EXPECT_EQ(208u, log.lengths[2]);
    expect_only(receiver, log, 2);
}
