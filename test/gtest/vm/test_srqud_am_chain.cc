/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Device tests of multi-packet active messages (UCX_SRQUD_AM_PACKETS):
 * chains share a doorbell, arrive whole, and wait in pending when refused.
 */

#include "srqud_am.h"

#include <vector>

using namespace srqud_test;

namespace {

/* Messages of up to three packets (UCX_SRQUD_AM_PACKETS=3, on any device);
 * with @a two_workers the receiver's worker progresses only when the test
 * says, and its async thread takes the packets meanwhile */
class srqud_am_chain : public srqud_am {
public:
    explicit srqud_am_chain(bool two_workers = false) :
        srqud_am(two_workers)
    {
    }

protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_AM_PACKETS", "3");
        set_env("UCX_SRQUD_TIMEOUT", "10s");
    }

    /* one packet's payload (am_zcopy's limit) */
    size_t packet() const
    {
        return sender->attr.cap.am.max_zcopy;
    }

    /* single packets and chains of two and three, in turn */
    std::vector<size_t> sizes() const
    {
        return {16, packet() + 1, 100, packet() + 64, 2 * packet() - 1,
                packet(), 2 * packet(), 2 * packet() + 1, 3 * packet() - 1,
                3 * packet()};
    }

    /* sends sizes() @a rounds times, then flushes progressing the sender
     * only; returns the messages' lengths by sequence number */
    void send_rounds(int rounds, std::map<uint64_t, size_t> &sent)
    {
        uint64_t seq = 0;

        for (int round = 0; round < rounds; ++round) {
            for (size_t len : sizes()) {
                ++seq;
                sent[seq] = len;
                send_retry([&] { return send_bcopy(seq, len); });
            }
        }
        flush_all();
    }

    void expect_lengths(const std::map<uint64_t, size_t> &sent)
    {
        for (const auto &s : sent) {
            EXPECT_EQ(s.second, log.lengths[s.first]) << "seq " << s.first;
        }
    }

    unsigned long chains(const std::map<uint64_t, size_t> &sent) const
    {
        unsigned long n = 0;
        for (const auto &s : sent) {
            n += (s.second > packet());
        }
        return n;
    }
};


/* The sender sends chains, the receiver none (UCX_SRQUD_AM_PACKETS=1):
 * the setting is each side's, as between an HCA's auto and Soft-RoCE's */
class srqud_am_chain_to_one : public srqud_am_chain {
protected:
    void between_opens() override
    {
        /* the guard of setup_env() restores the variable */
        ASSERT_EQ(0, setenv("UCX_SRQUD_AM_PACKETS", "1", 1));
    }
};


class srqud_am_chain_async : public srqud_am_chain {
public:
    srqud_am_chain_async() : srqud_am_chain(true) {}
};


/* A window of 8 packets: after the CREQ and two messages of three, room
 * for one packet is left, not for a third message */
class srqud_am_chain_window : public srqud_am_chain {
protected:
    void setup_env() override
    {
        srqud_am_chain::setup_env();
        set_env("UCX_SRQUD_TX_WINDOW", "8");
        set_env("UCX_SRQUD_ACK_THRESH", "4");
        set_env("UCX_SRQUD_BACK_ACK_EVERY", "4");
    }
};

} // namespace


/* A message above one packet goes as its packets with one doorbell, and
 * arrives whole, intact, in order and of its length */
TEST_F(srqud_am_chain, bcopy_chains_share_a_doorbell_and_arrive_whole)
{
    ASSERT_EQ(3 * packet(), sender->attr.cap.am.max_bcopy);
    const uct_srqud_iface_stats_t before = srqud_stats(sender->handle);
    std::map<uint64_t, size_t> sent;

    ASSERT_NO_FATAL_FAILURE(send_rounds(30, sent));
    ASSERT_NO_FATAL_FAILURE(expect_received(sent.size()));
    expect_lengths(sent);

    const uct_srqud_iface_stats_t after = srqud_stats(sender->handle);
    const uct_srqud_iface_stats_t rx    = srqud_stats(receiver->handle);
    EXPECT_EQ(chains(sent), after.tx_am_chains - before.tx_am_chains);
    EXPECT_EQ(chains(sent), rx.rx_am_chains);
    EXPECT_EQ(0u, rx.rx_chain_bad);
    /* one doorbell a message at most, plus the CREQ's and the resends' */
    const unsigned long doorbells = after.tx_doorbells - before.tx_doorbells;
    const unsigned long resends   = after.tx_retransmits -
                                    before.tx_retransmits;
    EXPECT_LE(doorbells, sent.size() + resends + 4)
        << doorbells << " doorbells for " << sent.size() << " messages, "
        << (after.tx_packets - before.tx_packets) << " packets";
}

/* An interface that sends single packets receives messages of several:
 * what it sends is its own setting, what its peers send is theirs */
TEST_F(srqud_am_chain_to_one, one_packet_interface_receives_chains_whole)
{
    ASSERT_EQ(3 * packet(), sender->attr.cap.am.max_bcopy);
    ASSERT_EQ(packet(), receiver->attr.cap.am.max_bcopy);
    std::map<uint64_t, size_t> sent;

    ASSERT_NO_FATAL_FAILURE(send_rounds(10, sent));
    ASSERT_NO_FATAL_FAILURE(expect_received(sent.size()));
    expect_lengths(sent);
    EXPECT_EQ(chains(sent), srqud_stats(receiver->handle).rx_am_chains);
    EXPECT_EQ(0u, srqud_stats(receiver->handle).rx_chain_bad);
}

/* Chains the receiver's async thread accepted while the user was away are
 * delivered whole by the user's progress, in order with the single packets
 * queued around them */
TEST_F(srqud_am_chain_async, bcopy_chains_accepted_while_away_arrive_whole)
{
    std::map<uint64_t, size_t> sent;

    /* the flush completes only once the receiver's async thread has
     * accepted and acknowledged everything */
    ASSERT_NO_FATAL_FAILURE(send_rounds(10, sent));
    EXPECT_EQ(0u, log.count); /* nothing was delivered behind its back */
    EXPECT_GT(srqud_stats(receiver->handle).async_queued, 0u);

    ASSERT_NO_FATAL_FAILURE(expect_received(sent.size()));
    expect_lengths(sent);
    EXPECT_EQ(chains(sent), srqud_stats(receiver->handle).rx_am_chains);
}

/* An am_bcopy refused for want of room for its packets is queued by
 * pending_add (not answered BUSY, which has the caller send again at once
 * to be refused again, for as long as nothing else frees the room), and
 * the dispatch sends it once the room is there */
TEST_F(srqud_am_chain_window, bcopy_refused_for_its_packets_waits_in_pending)
{
    async_hold hold(ctx.async); /* nothing is acknowledged meanwhile */
    uint64_t seq = 0;
    ucs_status_t status;

    while ((status = send_bcopy(seq + 1, 3 * packet())) == UCS_OK) {
        ++seq;
        ASSERT_LT(seq, 100u);
    }
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
    ASSERT_EQ(2u, seq);

    pending_send req(this, seq + 1, 3 * packet());
    ASSERT_UCS_OK(uct_ep_pending_add(ep, &req.super, 0));
    hold.release();

    ASSERT_TRUE(progress_until(*sender, [&] { return req.done; }));
    ++seq;
    flush_all();
    ASSERT_NO_FATAL_FAILURE(expect_received(seq));
}

/* An empty am_bcopy is one packet with AM_PACKETS above 1 too, delivered
 * empty, and no message of several */
TEST_F(srqud_am_chain, bcopy_of_nothing_is_one_packet)
{
    const uint8_t empty_id = AM_ID + 2;
    struct seen {
        unsigned count  = 0;
        size_t   length = 1;
    } s;
    ASSERT_UCS_OK(uct_iface_set_am_handler(receiver->handle, empty_id,
            [](void *arg, void *data, size_t length,
               unsigned flags) -> ucs_status_t {
                seen *p = static_cast<seen*>(arg);
                ++p->count;
                p->length = length;
                return UCS_OK;
            }, &s, 0));
    const uct_srqud_iface_stats_t before = srqud_stats(sender->handle);

    ssize_t sent = -1;
    send_retry([&] {
        sent = uct_ep_am_bcopy(ep, empty_id,
                               [](void *dest, void *arg) -> size_t {
                                   return 0;
                               }, nullptr, 0);
        return (sent < 0) ? (ucs_status_t)sent : UCS_OK;
    });
    EXPECT_EQ(0, sent);
    flush_all();

    ASSERT_TRUE(progress_until(*receiver, [&] { return s.count > 0; }));
    EXPECT_EQ(1u, s.count);
    EXPECT_EQ(0u, s.length);
    EXPECT_EQ(before.tx_am_chains, srqud_stats(sender->handle).tx_am_chains);
}
