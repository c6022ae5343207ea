/*
 * The receiver's check of a staged step sent as one active message: every
 * field comes from a peer, so each is held against what the group knows.
 */
#include <gtest/gtest.h>
#include <cstring>

extern "C" {
#include "sucg/allgather/allgather_am_def.h"
}

namespace {

const sucg_am_limits_t lim = { 4 /* nslots */, 4096 /* stage */, 7 /* seq */ };

sucg_am_hdr_t good()
{
    sucg_am_hdr_t h = {};

    h.seq          = 7;
    h.step         = 3;
    h.nranges      = 2;
    h.range[0].off = 0;
    h.range[0].len = 100;
    h.range[1].off = 4000;
    h.range[1].len = 96;
    return h;
}

}

TEST(sucg_am, a_step_that_fits_passes)
{
    sucg_am_hdr_t h = good();

    EXPECT_EQ(nullptr, sucg_am_check(&h, 196, &lim));
    h.seq = 8;   /* the peer may be one collective ahead */
    EXPECT_EQ(nullptr, sucg_am_check(&h, 196, &lim));
    h.nranges = 1;
    EXPECT_EQ(nullptr, sucg_am_check(&h, 100, &lim));
}

TEST(sucg_am, header_size_must_be_ours)
{
    sucg_am_hdr_t h = good(), out;
    uint8_t buf[sizeof(h) + 9];

    EXPECT_EQ(-1, sucg_am_parse(&h, sizeof(h) - 1, &out));
    EXPECT_EQ(-1, sucg_am_parse(&h, sizeof(h) + 8, &out));
    EXPECT_EQ(-1, sucg_am_parse(&h, 0, &out));
    /* an unaligned header of the right size is read whole */
    memcpy(buf + 1, &h, sizeof(h));
    ASSERT_EQ(0, sucg_am_parse(buf + 1, sizeof(h), &out));
    EXPECT_EQ(0, memcmp(&h, &out, sizeof(h)));
}

TEST(sucg_am, sequence_number_current_or_next_only)
{
    sucg_am_hdr_t h = good();
    const uint64_t bad[] = { 0, 5, 6, 9, 1ull << 63, ~0ull };

    for (uint64_t s : bad) {
        h.seq = s;
        EXPECT_NE(nullptr, sucg_am_check(&h, 196, &lim)) << s;
    }
}

TEST(sucg_am, step_within_the_flags)
{
    sucg_am_hdr_t h = good();

    h.step = 4;
    EXPECT_NE(nullptr, sucg_am_check(&h, 196, &lim));
    h.step = 0xffff;
    EXPECT_NE(nullptr, sucg_am_check(&h, 196, &lim));
}

TEST(sucg_am, range_count_bounded)
{
    sucg_am_hdr_t h = good();

    h.nranges = 0;
    EXPECT_NE(nullptr, sucg_am_check(&h, 0, &lim));
    h.nranges = SUCG_SCHED_MAX_RANGES + 1;
    EXPECT_NE(nullptr, sucg_am_check(&h, 196, &lim));
}

TEST(sucg_am, ranges_inside_the_staging_copy)
{
    sucg_am_hdr_t h = good();

    h.range[1].len = 97;             /* one byte past the end */
    EXPECT_NE(nullptr, sucg_am_check(&h, 197, &lim));
    h.range[1].off = 4097;           /* starts past the end */
    h.range[1].len = 0;
    EXPECT_NE(nullptr, sucg_am_check(&h, 100, &lim));
    h.range[1].off = 4000;           /* off + len wraps 32 bits */
    h.range[1].len = 0xffffffffu - 3999;
    EXPECT_NE(nullptr, sucg_am_check(&h, 100, &lim));
    h.range[1].off = 0xffffffffu;
    h.range[1].len = 1;
    EXPECT_NE(nullptr, sucg_am_check(&h, 101, &lim));
}

TEST(sucg_am, payload_length_matches_the_ranges)
{
    sucg_am_hdr_t h = good();

    EXPECT_NE(nullptr, sucg_am_check(&h, 195, &lim));
    EXPECT_NE(nullptr, sucg_am_check(&h, 197, &lim));
    EXPECT_NE(nullptr, sucg_am_check(&h, 0, &lim));
    EXPECT_NE(nullptr, sucg_am_check(&h, (size_t)-1, &lim));
}
