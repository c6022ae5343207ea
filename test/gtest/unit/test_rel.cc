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

#include <cstring>
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
    uint64_t held[UCT_SRQUD_SR_WORDS] = {};

    EXPECT_EQ(UCT_SRQUD_RX_DELIVER, uct_srqud_rx_classify(10, 10, NULL, 256));
    EXPECT_EQ(UCT_SRQUD_RX_DUPLICATE, uct_srqud_rx_classify(10, 9, NULL, 256));
    EXPECT_EQ(UCT_SRQUD_RX_HOLD, uct_srqud_rx_classify(10, 11, NULL, 256));
    EXPECT_EQ(UCT_SRQUD_RX_HOLD, uct_srqud_rx_classify(10, 265, NULL, 256));
    EXPECT_EQ(UCT_SRQUD_RX_BEYOND, uct_srqud_rx_classify(10, 266, NULL, 256));
    EXPECT_EQ(UCT_SRQUD_RX_DELIVER, uct_srqud_rx_classify(0, 0, NULL, 256));
    EXPECT_EQ(UCT_SRQUD_RX_DUPLICATE, uct_srqud_rx_classify(0, 65535, NULL, 256));
    EXPECT_EQ(UCT_SRQUD_RX_HOLD, uct_srqud_rx_classify(65535, 0, NULL, 256));
    /* a span of 0 keeps nothing out of order (go-back-N) */
    EXPECT_EQ(UCT_SRQUD_RX_BEYOND, uct_srqud_rx_classify(10, 11, NULL, 0));
    EXPECT_EQ(UCT_SRQUD_RX_DELIVER, uct_srqud_rx_classify(10, 10, NULL, 0));
    /* held already: a duplicate, across the wrap too */
    uct_srqud_sack_set(held, 12);
    uct_srqud_sack_set(held, 3);
    EXPECT_EQ(UCT_SRQUD_RX_DUPLICATE, uct_srqud_rx_classify(10, 12, held, 256));
    EXPECT_EQ(UCT_SRQUD_RX_HOLD, uct_srqud_rx_classify(10, 13, held, 256));
    EXPECT_EQ(UCT_SRQUD_RX_DUPLICATE,
              uct_srqud_rx_classify(65530, 3, held, 256));
}

TEST(srqud_rel, sack_covers_only_its_span)
{
    uint64_t map[UCT_SRQUD_SR_WORDS] = {};

    uct_srqud_sack_set(map, 102);
    uct_srqud_sack_set(map, 355);   /* 100 + 255 */
    /* cumulative part */
    EXPECT_TRUE(uct_srqud_sack_covers(100, map, 100));
    EXPECT_TRUE(uct_srqud_sack_covers(100, map, 7));
    /* selective part, bit psn % 256, for psns after ack + 1 */
    EXPECT_FALSE(uct_srqud_sack_covers(100, map, 101));
    EXPECT_TRUE(uct_srqud_sack_covers(100, map, 102));
    EXPECT_TRUE(uct_srqud_sack_covers(100, map, 355));
    /* 358 has 102's bit but is beyond the span: not covered */
    EXPECT_FALSE(uct_srqud_sack_covers(100, map, 358));
    /* across the wrap */
    memset(map, 0, sizeof(map));
    uct_srqud_sack_set(map, 2);
    EXPECT_TRUE(uct_srqud_sack_covers(65534, map, 2));
    EXPECT_FALSE(uct_srqud_sack_covers(65534, map, 1));
}

TEST(srqud_rel, rtt_estimator_and_rto_bounds)
{
    uct_srqud_rtt_t rtt = {0, 0};

    uct_srqud_rtt_sample(&rtt, 800);
    EXPECT_EQ(800u, rtt.srtt);
    EXPECT_EQ(400u, rtt.rttvar);
    EXPECT_EQ(2400u, uct_srqud_rtt_rto(&rtt, 100, 100000));
    for (int i = 0; i < 100; ++i) {
        uct_srqud_rtt_sample(&rtt, 1000);
    }
    /* converges to the sample, variance to (almost) nothing */
    EXPECT_NEAR(1000.0, (double)rtt.srtt, 10.0);
    EXPECT_LT(rtt.rttvar, 20u);
    /* the floor and the cap */
    EXPECT_EQ(5000u, uct_srqud_rtt_rto(&rtt, 5000, 100000));
    EXPECT_EQ(900u, uct_srqud_rtt_rto(&rtt, 0, 900));
    /* a jump raises the variance, hence the timeout, at once */
    uint64_t before = uct_srqud_rtt_rto(&rtt, 0, 100000);
    uct_srqud_rtt_sample(&rtt, 9000);
    EXPECT_GT(uct_srqud_rtt_rto(&rtt, 0, 100000), before + 7000);
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
