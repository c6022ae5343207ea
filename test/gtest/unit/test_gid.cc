/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * GID selection on RoCE ports (host-side, no device needed).
 */

#include <gtest/gtest.h>

extern "C" {
#include <uct/ib/srqud/srqud_gid.h>
}

#include <arpa/inet.h>
#include <cstring>
#include <vector>

namespace {

uct_srqud_gid_entry_t gid(const char *ipv6, uct_srqud_gid_type_t type)
{
    uct_srqud_gid_entry_t e;
    memset(&e, 0, sizeof(e));
    if (ipv6 != NULL) {
        EXPECT_EQ(1, inet_pton(AF_INET6, ipv6, e.raw)) << ipv6;
    }
    e.type = type;
    return e;
}

const uct_srqud_gid_type_t V1 = UCT_SRQUD_GID_TYPE_IB;
const uct_srqud_gid_type_t V2 = UCT_SRQUD_GID_TYPE_ROCE_V2;

} // namespace

TEST(srqud_gid, empty_table_has_no_choice)
{
    EXPECT_EQ(-1, uct_srqud_gid_select(NULL, 0));
    std::vector<uct_srqud_gid_entry_t> t = {gid(NULL, V1), gid(NULL, V2)};
    EXPECT_EQ(-1, uct_srqud_gid_select(t.data(), t.size()));
}

/* The table rxe builds over "lo" (read in the test VM with ibv_devinfo -v):
 * all RoCE v2; only ::1 carries UD traffic. UCX's ud_verbs picks index 1
 * and times out there. */
TEST(srqud_gid, soft_roce_over_lo_picks_ipv6_loopback)
{
    std::vector<uct_srqud_gid_entry_t> t = {
        gid("fe80::200:ff:fe00:0", V2), gid("::ffff:127.0.0.1", V2),
        gid("::1", V2)};
    EXPECT_EQ(2, uct_srqud_gid_select(t.data(), t.size()));
}

TEST(srqud_gid, real_ipv4_beats_ipv6_and_loopback)
{
    std::vector<uct_srqud_gid_entry_t> t = {
        gid("fe80::1", V2), gid("::ffff:127.0.0.1", V2), gid("::1", V2),
        gid("2001:db8::5", V2), gid("::ffff:192.0.2.9", V2)};
    EXPECT_EQ(4, uct_srqud_gid_select(t.data(), t.size()));
    t.pop_back();
    EXPECT_EQ(2, uct_srqud_gid_select(t.data(), t.size()));
}

TEST(srqud_gid, prefers_v2_over_address_class)
{
    std::vector<uct_srqud_gid_entry_t> t = {
        gid("::ffff:10.0.0.1", V1), gid("fe80::1", V2)};
    EXPECT_EQ(1, uct_srqud_gid_select(t.data(), t.size()));
}

TEST(srqud_gid, prefers_ipv4_mapped_then_global_then_link_local)
{
    std::vector<uct_srqud_gid_entry_t> t = {
        gid("fe80::1", V2), gid("2001:db8::1", V2), gid("::ffff:192.0.2.7", V2)};
    EXPECT_EQ(2, uct_srqud_gid_select(t.data(), t.size()));
    t.pop_back();
    EXPECT_EQ(1, uct_srqud_gid_select(t.data(), t.size()));
    t.pop_back();
    EXPECT_EQ(0, uct_srqud_gid_select(t.data(), t.size()));
}

TEST(srqud_gid, ties_go_to_lowest_index_and_zero_entries_are_skipped)
{
    std::vector<uct_srqud_gid_entry_t> t = {
        gid(NULL, V2), gid("::ffff:192.0.2.7", V2), gid("::ffff:192.0.2.8", V2)};
    EXPECT_EQ(1, uct_srqud_gid_select(t.data(), t.size()));
    EXPECT_LT(uct_srqud_gid_score(&t[0]), 0);
}

/* A sender on the same IB subnet without a GRH is known by its LID: two
 * LIDs give two keys, the subnet prefix (what routing reads) is kept */
TEST(srqud_gid, a_sender_without_grh_is_keyed_by_its_lid)
{
    const uint8_t prefix[8] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0};
    uint8_t a[16], b[16], a2[16];

    uct_srqud_gid_from_lid(prefix, 0x0012, a);
    uct_srqud_gid_from_lid(prefix, 0x1200, b);
    uct_srqud_gid_from_lid(prefix, 0x0012, a2);
    EXPECT_EQ(0, memcmp(a, prefix, sizeof(prefix)));
    EXPECT_EQ(0, memcmp(b, prefix, sizeof(prefix)));
    EXPECT_NE(0, memcmp(a, b, sizeof(a)));
    EXPECT_EQ(0, memcmp(a, a2, sizeof(a)));
    EXPECT_EQ(0x00, a[14]);
    EXPECT_EQ(0x12, a[15]);
}
