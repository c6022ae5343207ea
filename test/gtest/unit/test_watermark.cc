/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The SRQ watermark of Sur et al. (IPDPS'06), Eq. 5, and the wakeup
 * measurement it uses.
 */

#include <gtest/gtest.h>

extern "C" {
#include <uct/ib/srqud/srqud_watermark.h>
}

TEST(srqud_watermark, equation_5)
{
    /* 1000 MB/s, 100-byte packets, 0.05 ms: 10^3 * 10^3 / 100 * 0.05 = 500 */
    EXPECT_EQ(500u, uct_srqud_watermark(1000, 100, 0.05, 4096));
    /* twice the bandwidth or the wakeup: twice the packets */
    EXPECT_EQ(1000u, uct_srqud_watermark(2000, 100, 0.05, 4096));
    EXPECT_EQ(1000u, uct_srqud_watermark(1000, 100, 0.1, 4096));
    /* twice the packet size: half */
    EXPECT_EQ(250u, uct_srqud_watermark(1000, 200, 0.05, 4096));
    /* rounds up: a fraction of a packet still needs a buffer */
    EXPECT_EQ(3u, uct_srqud_watermark(1, 1000, 2.5, 4096));
}

TEST(srqud_watermark, clamped_to_half_the_srq_and_at_least_one)
{
    EXPECT_EQ(512u, uct_srqud_watermark(100000, 64, 1, 1024));
    EXPECT_EQ(1u, uct_srqud_watermark(1, 4096, 0.001, 1024));
    EXPECT_EQ(1u, uct_srqud_watermark(0, 100, 1, 1024));   /* unknown rate */
    EXPECT_EQ(1u, uct_srqud_watermark(100, 0, 1, 1024));
}

TEST(srqud_watermark, wakeup_is_measured_and_plausible)
{
    double t = uct_srqud_watermark_measure_wakeup();
    EXPECT_GT(t, 0.0);
    EXPECT_LT(t, 1.0);               /* a second would mean a broken clock */
    EXPECT_EQ(t, uct_srqud_watermark_measure_wakeup()); /* measured once */
}
