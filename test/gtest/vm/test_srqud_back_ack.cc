/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Device tests of acknowledgements on the way back (srqud_back_ack.c): in a
 * request-reply exchange the reply carries the request's acknowledgement,
 * and no acknowledgement packet goes either way.
 */

#include "srqud_fixture.h"

#include <unistd.h>

using namespace srqud_test;

namespace {

const uint8_t PING = 11;
const uint8_t PONG = 12;

/* A sender and a receiver with an endpoint each way; an ack is held for
 * 90 ms (below RTO_MIN, raised to 100 ms), so that it leaves alone only if
 * no reply comes within that time: a VM that stalls a few milliseconds
 * does not send one */
class srqud_back_ack : public ::testing::Test, public iface_pair {
public:
    explicit srqud_back_ack(bool two_workers = false) :
        iface_pair(two_workers), pongs(1) {}

    void TearDown() override
    {
        if (back_ep != nullptr) {
            uct_ep_destroy(back_ep);
            back_ep = nullptr;
        }
    }

    void open(const char *back_ack, const char *every = "1")
    {
        set_env("UCX_SRQUD_RTO_MIN", "100ms");
        set_env("UCX_SRQUD_ACK_DELAY", "90ms");
        set_env("UCX_SRQUD_BACK_ACK_DELAY", "45ms");
        set_env("UCX_SRQUD_BACK_ACK", back_ack);
        set_env("UCX_SRQUD_BACK_ACK_EVERY", every);
        ASSERT_NO_FATAL_FAILURE(open_pair(PING, 1));
        ASSERT_UCS_OK(pongs.attach(*sender, PONG));
        ASSERT_UCS_OK(receiver->connect(*sender, &back_ep));
    }

    static ucs_status_t send(uct_ep_h ep, uint8_t id, uint64_t seq)
    {
        uint8_t payload[16];

        fill_pattern(payload, sizeof(payload), seq);
        return uct_ep_am_short(ep, id, seq, payload, sizeof(payload));
    }

    /* @a n pings, each answered by a pong before the next */
    void ping_pong(unsigned n)
    {
        for (uint64_t seq = 1; seq <= n; ++seq) {
            ASSERT_UCS_OK(send(ep, PING, seq));
            ASSERT_TRUE(progress_both_until([&] { return log.count == seq; }))
                << "ping " << seq;
            ASSERT_UCS_OK(send(back_ep, PONG, seq));
            ASSERT_TRUE(progress_both_until([&] { return pongs.count == seq; }))
                << "pong " << seq;
        }
        EXPECT_EQ(0u, log.bad);
        EXPECT_EQ(0u, pongs.bad);
        EXPECT_TRUE(log.in_order());
        EXPECT_TRUE(pongs.in_order());
    }

    /* both endpoints flushed: every packet acknowledged */
    void flush_both()
    {
        ASSERT_TRUE(progress_both_until([&] {
            return (uct_ep_flush(ep, 0, NULL) == UCS_OK) &&
                   (uct_ep_flush(back_ep, 0, NULL) == UCS_OK);
        }));
    }

    /* @a n ping-pongs with BACK_ACK=@a back_ack, flushed; both sides'
     * counters after it */
    void exchange(const char *back_ack, unsigned n, const char *every = "1")
    {
        ASSERT_NO_FATAL_FAILURE(open(back_ack, every));
        ASSERT_NO_FATAL_FAILURE(ping_pong(n));
        ASSERT_NO_FATAL_FAILURE(flush_both());
        s = srqud_stats(sender->handle);
        r = srqud_stats(receiver->handle);
    }

    /* every trailer sent was taken by the right ep, and besides them only
     * the CREP and the flushes' acks went: nothing was resent */
    void expect_no_ack_packets() const
    {
        EXPECT_EQ(r.back_acks_sent, s.back_acks_taken);
        EXPECT_EQ(s.back_acks_sent, r.back_acks_taken);
        EXPECT_LE(r.acks_sent, 3u);
        EXPECT_LE(s.acks_sent, 3u);
        EXPECT_EQ(0u, s.rx_bad_token + r.rx_bad_token);
        EXPECT_EQ(0u, s.tx_retransmits + r.tx_retransmits);
    }

    am_log                  pongs;
    uct_ep_h                back_ep = nullptr;
    uct_srqud_iface_stats_t s, r;   /* sender's, receiver's */
};


class srqud_back_ack_2w : public srqud_back_ack {
public:
    srqud_back_ack_2w() : srqud_back_ack(true) {}
};

} // namespace


/* With BACK_ACK_EVERY=1 every ping's ack rides on its pong and every
 * pong's on the next ping; only the last pong's leaves alone. Both sides' data arrive intact and in
 * order, and both windows drain. */
TEST_F(srqud_back_ack, replies_carry_the_acks)
{
    const unsigned n = 200;

    ASSERT_NO_FATAL_FAILURE(exchange("y", n));
    /* the receiver's first ack is the CREP, which has a packet of its own;
     * each side may also owe one when a flush asks */
    EXPECT_GE(r.back_acks_sent, n - 2);
    EXPECT_GE(s.back_acks_sent, n - 2);
    ASSERT_NO_FATAL_FAILURE(expect_no_ack_packets());
}

/* By default a reply takes the ack along once BACK_ACK_EVERY (16) packets
 * are owed (the exchange is far quicker than BACK_ACK_DELAY): one ack
 * applied per 16 messages, still none sent alone but for the flushes */
TEST_F(srqud_back_ack, replies_carry_every_sixteenth_ack)
{
    const unsigned n = 200;

    ASSERT_NO_FATAL_FAILURE(exchange("y", n, "16"));
    EXPECT_GE(r.back_acks_sent, n / 16 - 1);
    EXPECT_LE(r.back_acks_sent, n / 16 + 1);
    EXPECT_GE(s.back_acks_sent, n / 16 - 1);
    EXPECT_LE(s.back_acks_sent, n / 16 + 1);
    ASSERT_NO_FATAL_FAILURE(expect_no_ack_packets());
}

/* The control: with BACK_ACK=n the same exchange acknowledges with packets
 * of their own (every ACK_THRESH packets at the latest) */
TEST_F(srqud_back_ack, off_acks_with_packets_of_their_own)
{
    const unsigned n = 200;

    ASSERT_NO_FATAL_FAILURE(exchange("n", n));
    EXPECT_EQ(0u, r.back_acks_sent + s.back_acks_sent);
    EXPECT_GE(r.acks_sent, n / 32);
    EXPECT_GE(s.acks_sent, n / 32);
}

/* A pong that comes back while the sender computes: its async thread takes
 * the ack it carries and keeps it; the sender's next progress applies it,
 * and the ping's window is empty without any other packet */
TEST_F(srqud_back_ack_2w, kept_by_the_async_thread_for_the_next_progress)
{
    ASSERT_NO_FATAL_FAILURE(open("y"));
    ASSERT_NO_FATAL_FAILURE(ping_pong(3)); /* connected both ways */
    ASSERT_NO_FATAL_FAILURE(flush_both());

    const unsigned long acks  = srqud_stats(receiver->handle).acks_sent;
    ASSERT_UCS_OK(send(ep, PING, 4));
    ASSERT_TRUE(progress_until(*receiver, [&] { return log.count == 4; }));
    const unsigned long taken = srqud_stats(sender->handle).back_acks_taken;
    ASSERT_UCS_OK(send(back_ep, PONG, 4));

    /* only the sender's async thread runs on its side from here */
    for (int i = 0; (i < 500) &&
                    (srqud_stats(sender->handle).back_acks_taken == taken);
         ++i) {
        receiver->progress();
        usleep(10000);
    }
    ASSERT_EQ(taken + 1, srqud_stats(sender->handle).back_acks_taken)
        << "the sender's async thread did not take the pong's ack in 5 s";

    sender->progress();
    EXPECT_EQ(UCS_OK, uct_ep_flush(ep, 0, NULL));
    EXPECT_EQ(acks, srqud_stats(receiver->handle).acks_sent);
    EXPECT_EQ(4u, pongs.count);
}


namespace {

/* ACK_RIDE: the receiver owes the ping's ack; no trailer takes it
 * (BACK_ACK=n, as for a peer it sends nothing to), and ACK_DELAY is long
 * (3 s, RTO_MIN 4 s) so that it cannot leave alone while the test looks,
 * however slow the machine. Once it has waited half of ACK_DELAY by the
 * receiver's progress, the receiver's next AM takes it into its doorbell. */
class srqud_ack_ride : public srqud_back_ack {
public:
    void open_ride(const char *ride)
    {
        set_env("UCX_SRQUD_ACK_RIDE", ride);
        set_env("UCX_SRQUD_RTO_MIN", "4s");
        set_env("UCX_SRQUD_RTO_MAX", "4s");
        set_env("UCX_SRQUD_ACK_DELAY", "3s");
        set_env("UCX_SRQUD_BACK_ACK", "n");
        ASSERT_NO_FATAL_FAILURE(open_pair(PING, 1));
        ASSERT_UCS_OK(pongs.attach(*sender, PONG));
        ASSERT_UCS_OK(receiver->connect(*sender, &back_ep));
        ASSERT_NO_FATAL_FAILURE(ping_pong(2)); /* connected both ways */
        ASSERT_NO_FATAL_FAILURE(flush_both());
    }

    /* a ping the receiver takes and owes the ack of; after 1.6 s and a
     * full progress call (a quiet call, QUIET_POLLS, leaves the clock),
     * the receiver's pong 3 by @a send_pong. Its counters before and after
     * the pong's send. */
    template <typename F>
    void pong_after_half_the_delay(F send_pong)
    {
        ASSERT_UCS_OK(send(ep, PING, 3));
        ASSERT_TRUE(progress_both_until([&] { return log.count == 3; }));
        usleep(1600000);
        for (int i = 0; i < 8; ++i) {
            receiver->progress();
        }
        before = srqud_stats(receiver->handle);
        ASSERT_NO_FATAL_FAILURE(send_pong());
        after  = srqud_stats(receiver->handle);
    }

    void pong_short()
    {
        ASSERT_UCS_OK(send(back_ep, PONG, 3));
    }

    /* one doorbell took the ack behind the pong's @a packets packets, and
     * the sender's window empties from its own progress alone, with the
     * pong intact */
    void expect_ridden(unsigned packets)
    {
        EXPECT_EQ(before.acks_ridden + 1, after.acks_ridden);
        EXPECT_EQ(before.acks_sent + 1, after.acks_sent);
        EXPECT_EQ(before.tx_packets + packets + 1, after.tx_packets);
        EXPECT_EQ(before.tx_doorbells + 1, after.tx_doorbells);

        EXPECT_TRUE(progress_until(*sender, [&] {
            return (pongs.count == 3) && (uct_ep_flush(ep, 0, NULL) == UCS_OK);
        })) << "the ping's ack did not arrive with the pong";
        EXPECT_EQ(0u, pongs.bad);
        EXPECT_TRUE(pongs.in_order());
        EXPECT_EQ(0u, srqud_stats(sender->handle).tx_retransmits);
    }

    uct_srqud_iface_stats_t before, after;
};

} // namespace


/* The ack goes in the pong's doorbell, as a packet of its own behind it */
TEST_F(srqud_ack_ride, an_owed_ack_takes_the_next_doorbell)
{
    ASSERT_NO_FATAL_FAILURE(open_ride("y"));
    ASSERT_NO_FATAL_FAILURE(pong_after_half_the_delay([&] { pong_short(); }));
    ASSERT_NO_FATAL_FAILURE(expect_ridden(1));
}

/* A pong of two packets (AM_PACKETS 2): the ack joins the batch of its
 * packets, one doorbell for the three */
TEST_F(srqud_ack_ride, behind_a_message_of_two_packets)
{
    set_env("UCX_SRQUD_AM_PACKETS", "2");
    ASSERT_NO_FATAL_FAILURE(open_ride("y"));
    const size_t length = receiver->attr.cap.am.max_bcopy;
    ASSERT_NO_FATAL_FAILURE(pong_after_half_the_delay([&] {
        ASSERT_EQ((ssize_t)length, send_seq_bcopy(back_ep, PONG, 3, length));
    }));
    EXPECT_EQ(before.tx_am_chains + 1, after.tx_am_chains)
        << "a message of " << length << " bytes was not two packets";
    ASSERT_NO_FATAL_FAILURE(expect_ridden(2));
}

/* With sends held for a batch (TX_BATCH_IDLE=y) the pong would wait for
 * the next progress; the ride rings it with the ack at once */
TEST_F(srqud_ack_ride, rings_a_held_batch)
{
    set_env("UCX_SRQUD_TX_BATCH_IDLE", "y");
    ASSERT_NO_FATAL_FAILURE(open_ride("y"));
    ASSERT_NO_FATAL_FAILURE(pong_after_half_the_delay([&] { pong_short(); }));
    ASSERT_NO_FATAL_FAILURE(expect_ridden(1));
}

/* The control: with ACK_RIDE=n the pong goes alone and the ack stays owed */
TEST_F(srqud_ack_ride, off_the_ack_waits_for_its_delay)
{
    ASSERT_NO_FATAL_FAILURE(open_ride("n"));
    ASSERT_NO_FATAL_FAILURE(pong_after_half_the_delay([&] { pong_short(); }));

    EXPECT_EQ(0u, after.acks_ridden);
    EXPECT_EQ(before.acks_sent, after.acks_sent);
    EXPECT_EQ(before.tx_packets + 1, after.tx_packets);
    EXPECT_EQ(before.tx_doorbells + 1, after.tx_doorbells);
}
