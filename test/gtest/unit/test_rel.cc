/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Reliability logic: sequence space, receive verdicts, window accounting,
 * acknowledgement validity, timeout backoff.
 */

#include <gtest/gtest.h>

extern "C" {
#include <uct/ib/srqud/srqud_rel.h>
}

#include <vector>

TEST(srqud_rel, psn_order_wraps)
{
    EXPECT_TRUE(uct_srqud_psn_lt(1, 2));
    EXPECT_FALSE(uct_srqud_psn_lt(2, 1));
    EXPECT_FALSE(uct_srqud_psn_lt(5, 5));
    EXPECT_TRUE(uct_srqud_psn_le(5, 5));
    EXPECT_TRUE(uct_srqud_psn_lt(65535, 0));
    EXPECT_TRUE(uct_srqud_psn_lt(65530, 3));
    EXPECT_FALSE(uct_srqud_psn_lt(3, 65530));
}

TEST(srqud_rel, receiver_verdicts)
{
    EXPECT_EQ(UCT_SRQUD_RX_DELIVER, uct_srqud_rx_classify(10, 10));
    EXPECT_EQ(UCT_SRQUD_RX_DUPLICATE, uct_srqud_rx_classify(10, 9));
    EXPECT_EQ(UCT_SRQUD_RX_GAP, uct_srqud_rx_classify(10, 11));
    EXPECT_EQ(UCT_SRQUD_RX_DELIVER, uct_srqud_rx_classify(0, 0));
    EXPECT_EQ(UCT_SRQUD_RX_DUPLICATE, uct_srqud_rx_classify(0, 65535));
    EXPECT_EQ(UCT_SRQUD_RX_GAP, uct_srqud_rx_classify(65535, 0));
}

TEST(srqud_rel, window_accounting_across_wrap)
{
    /* nothing sent: acked = next - 1 */
    EXPECT_EQ(0u, uct_srqud_tx_in_flight(0, 65535));
    EXPECT_EQ(3u, uct_srqud_tx_in_flight(3, 65535));
    EXPECT_EQ(5u, uct_srqud_tx_in_flight(2, 65532));
    EXPECT_EQ(0u, uct_srqud_tx_in_flight(2, 1));
}

TEST(srqud_rel, only_acks_inside_the_window_count)
{
    /* sent 0..9 (next = 10), acked up to 4 */
    EXPECT_TRUE(uct_srqud_tx_ack_is_new(10, 4, 5));
    EXPECT_TRUE(uct_srqud_tx_ack_is_new(10, 4, 9));
    EXPECT_FALSE(uct_srqud_tx_ack_is_new(10, 4, 4));   /* old */
    EXPECT_FALSE(uct_srqud_tx_ack_is_new(10, 4, 3));   /* stale */
    EXPECT_FALSE(uct_srqud_tx_ack_is_new(10, 4, 10));  /* never sent */
    EXPECT_FALSE(uct_srqud_tx_ack_is_new(10, 4, 300)); /* bogus */
    /* across the wrap */
    EXPECT_TRUE(uct_srqud_tx_ack_is_new(2, 65533, 0));
    EXPECT_FALSE(uct_srqud_tx_ack_is_new(2, 65533, 2));
}

TEST(srqud_rel, backoff_doubles_to_the_cap)
{
    uint64_t rto = 20;
    std::vector<uint64_t> seen;
    for (int i = 0; i < 8; ++i) {
        rto = uct_srqud_rto_backoff(rto, 1000);
        seen.push_back(rto);
    }
    EXPECT_EQ((std::vector<uint64_t>{40, 80, 160, 320, 640, 1000, 1000, 1000}),
              seen);
}

/* A go-back-N sender and receiver over a lossy, reordering channel,
 * driven only by the functions above: everything arrives once, in order */
TEST(srqud_rel, go_back_n_simulation_delivers_in_order)
{
    const unsigned total = 3000, window = 64;
    uct_srqud_psn_t next = 0, acked = 65535, expected = 0;
    std::vector<unsigned> delivered;
    unsigned seed = 12345, sent_count = 0;
    auto rnd = [&]() { seed = seed * 1103515245 + 12345; return (seed >> 16) % 100; };

    /* messages are numbered by psn position: msg = base + psn offset */
    unsigned base_msg = 0; /* message number of psn (acked + 1) */
    for (int round = 0; (delivered.size() < total) && (round < 200000); ++round) {
        /* send new packets while the window allows */
        std::vector<uct_srqud_psn_t> wire;
        while ((uct_srqud_tx_in_flight(next, acked) < window) &&
               (base_msg + uct_srqud_tx_in_flight(next, acked) < total)) {
            wire.push_back(next++);
            ++sent_count;
        }
        /* on timeout (every 5th round) resend the whole window */
        if (round % 5 == 4) {
            for (uct_srqud_psn_t p = acked + 1; p != next; ++p) {
                wire.push_back(p);
            }
        }
        /* the channel: 10% loss, some swaps, some duplicates */
        std::vector<uct_srqud_psn_t> arrived;
        for (auto p : wire) {
            unsigned r = rnd();
            if (r < 10) continue;
            arrived.push_back(p);
            if (r > 95) arrived.push_back(p);
        }
        for (size_t i = 1; i < arrived.size(); i += 7) {
            std::swap(arrived[i - 1], arrived[i]);
        }
        for (auto p : arrived) {
            if (uct_srqud_rx_classify(expected, p) == UCT_SRQUD_RX_DELIVER) {
                /* psn -> message number */
                delivered.push_back(base_msg +
                                    uct_srqud_tx_in_flight(p + 1, acked) - 1);
                ++expected;
            }
        }
        /* cumulative ack, lost 10% of the time */
        uct_srqud_psn_t ack = expected - 1;
        if ((rnd() >= 10) && uct_srqud_tx_ack_is_new(next, acked, ack)) {
            base_msg += uct_srqud_tx_in_flight(ack + 1, acked);
            acked = ack;
        }
    }

    ASSERT_EQ(total, delivered.size());
    for (unsigned i = 0; i < total; ++i) {
        ASSERT_EQ(i, delivered[i]) << "at " << i;
    }
    EXPECT_GE(sent_count, total);
}
