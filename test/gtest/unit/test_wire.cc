/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Wire format checks: what the receive path accepts and drops.
 */

#include <gtest/gtest.h>

extern "C" {
#include <uct/ib/srqud/srqud_def.h>
}

#include <cstring>

namespace {

uct_srqud_neth_t good_neth(uint8_t am_id)
{
    uct_srqud_neth_t neth;
    memset(&neth, 0, sizeof(neth));
    neth.magic      = UCT_SRQUD_MAGIC;
    neth.flags      = UCT_SRQUD_PACKET_FLAG_AM;
    neth.am_id      = am_id;
    neth.dest_ep_id = UCT_SRQUD_EP_ID_NONE;
    return neth;
}

const size_t HDR = UCT_SRQUD_GRH_LEN + sizeof(uct_srqud_neth_t);

} // namespace

TEST(srqud_wire, header_layout_is_fixed)
{
    /* The header is part of the protocol between processes: its size and
     * offsets must not change by accident */
    EXPECT_EQ(20u, sizeof(uct_srqud_neth_t));
    EXPECT_EQ(19u, sizeof(uct_srqud_device_addr_t));
    EXPECT_EQ(3u, sizeof(uct_srqud_iface_addr_t));
}

TEST(srqud_wire, accepts_valid_packet_and_reports_payload)
{
    uct_srqud_neth_t neth = good_neth(5);
    size_t len = 12345;
    ASSERT_EQ(UCS_OK, uct_srqud_neth_check(&neth, HDR + 100, 32, &len));
    EXPECT_EQ(100u, len);
    ASSERT_EQ(UCS_OK, uct_srqud_neth_check(&neth, HDR, 32, &len));
    EXPECT_EQ(0u, len);
}

TEST(srqud_wire, drops_truncated_packets)
{
    uct_srqud_neth_t neth = good_neth(1);
    size_t len;
    EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED,
              uct_srqud_neth_check(&neth, HDR - 1, 32, &len));
    EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED,
              uct_srqud_neth_check(&neth, 0, 32, &len));
}

TEST(srqud_wire, drops_foreign_or_corrupt_packets)
{
    size_t len;
    uct_srqud_neth_t neth = good_neth(1);
    neth.magic = 0;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_srqud_neth_check(&neth, HDR, 32, &len));

    neth       = good_neth(1);
    neth.flags |= UCT_SRQUD_PACKET_FLAG_CTL; /* both AM and control */
    neth.ctl   = UCT_SRQUD_CTL_ACK;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_srqud_neth_check(&neth, HDR, 32, &len));

    neth       = good_neth(1);
    neth.flags = UCT_SRQUD_PACKET_FLAG_REL; /* neither */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_srqud_neth_check(&neth, HDR, 32, &len));

    neth       = good_neth(1);
    neth.flags = UCT_SRQUD_PACKET_FLAG_CTL; /* unknown opcode */
    neth.ctl   = 99;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_srqud_neth_check(&neth, HDR, 32, &len));
    neth.ctl   = UCT_SRQUD_CTL_NACK;
    EXPECT_EQ(UCS_OK, uct_srqud_neth_check(&neth, HDR, 32, &len));

    neth       = good_neth(1);
    neth.flags = 0x80; /* unknown flag */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_srqud_neth_check(&neth, HDR, 32, &len));

    neth = good_neth(32); /* AM id out of range */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_srqud_neth_check(&neth, HDR, 32, &len));
    neth = good_neth(31);
    EXPECT_EQ(UCS_OK, uct_srqud_neth_check(&neth, HDR, 32, &len));
}

TEST(srqud_wire, qpn_packs_in_three_bytes)
{
    uint8_t buf[4] = {0xaa, 0xaa, 0xaa, 0xaa};
    uct_srqud_pack_qpn(buf, 0x123456);
    EXPECT_EQ(0xaa, buf[3]);
    EXPECT_EQ(0x123456u, uct_srqud_unpack_qpn(buf));
    uct_srqud_pack_qpn(buf, 0xffffff);
    EXPECT_EQ(0xffffffu, uct_srqud_unpack_qpn(buf));
}

TEST(srqud_wire, an_ack_on_the_way_back_ends_a_reliable_am)
{
    const size_t back = sizeof(uct_srqud_back_ack_t);
    uct_srqud_neth_t neth = good_neth(3);
    size_t len;

    EXPECT_EQ(10u, back);
    neth.flags |= UCT_SRQUD_PACKET_FLAG_REL | UCT_SRQUD_PACKET_FLAG_BACK_ACK;
    ASSERT_EQ(UCS_OK, uct_srqud_neth_check(&neth, HDR + 8 + back, 32, &len));
    EXPECT_EQ(8u, len); /* the trailer is not the user's */
    ASSERT_EQ(UCS_OK, uct_srqud_neth_check(&neth, HDR + back, 32, &len));
    EXPECT_EQ(0u, len);
    EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED,
              uct_srqud_neth_check(&neth, HDR + back - 1, 32, &len));

    /* only on a reliable AM: control packets and unreliable AMs have no
     * passive ep behind them to have owed it */
    neth.flags &= ~UCT_SRQUD_PACKET_FLAG_REL;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_srqud_neth_check(&neth, HDR + back, 32, &len));
    neth       = good_neth(3);
    neth.flags = UCT_SRQUD_PACKET_FLAG_CTL | UCT_SRQUD_PACKET_FLAG_REL |
                 UCT_SRQUD_PACKET_FLAG_BACK_ACK;
    neth.ctl   = UCT_SRQUD_CTL_ACK;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_srqud_neth_check(&neth, HDR + back, 32, &len));
}

TEST(srqud_wire, only_a_reliable_am_goes_on_in_the_next_packet)
{
    uct_srqud_neth_t neth = good_neth(3);
    size_t len;

    neth.flags |= UCT_SRQUD_PACKET_FLAG_REL | UCT_SRQUD_PACKET_FLAG_MORE;
    ASSERT_EQ(UCS_OK, uct_srqud_neth_check(&neth, HDR + 100, 32, &len));
    EXPECT_EQ(100u, len);

    /* an unreliable AM has no sequence for the rest to follow in */
    neth.flags &= ~UCT_SRQUD_PACKET_FLAG_REL;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_srqud_neth_check(&neth, HDR + 100, 32, &len));

    /* nor does a control packet continue */
    neth       = good_neth(3);
    neth.flags = UCT_SRQUD_PACKET_FLAG_CTL | UCT_SRQUD_PACKET_FLAG_REL |
                 UCT_SRQUD_PACKET_FLAG_MORE;
    neth.ctl   = UCT_SRQUD_CTL_NOP;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_srqud_neth_check(&neth, HDR, 32, &len));
}
