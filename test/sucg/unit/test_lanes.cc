/*
 * UCP's description of an endpoint's lanes: which transports reach a peer,
 * and whether a put to it is a message its CPU applies. The lines are
 * those ucp_ep_print_info prints in UCX 1.13 to 1.22 (its lane format is
 * the same in the three).
 */
#include <gtest/gtest.h>
#include <string>

extern "C" {
#include "sucg/core/sucg_lanes.h"
}

namespace {

const char *const srqud_ep =
    "#\n"
    "# UCP endpoint\n"
    "#\n"
    "#               peer: <no debug data>\n"
    "#                 lane[0]:  1:srqud/rxe0:1.0 md[1]          -> "
    "addr[1].md[1]/srqud/sysdev[255] rma_bw#0 am am_bw#0\n"
    "#\n";

const char *const rc_ep =
    "#                 lane[0]:  2:rc_verbs/rxe0:1.0 md[1]       -> "
    "addr[1].md[1]/ib/sysdev[255] rma_bw#0 am am_bw#0\n"
    "#                 lane[1]:  3:ud_verbs/rxe0:1.0 md[1]       -> "
    "addr[1].md[1]/ib/sysdev[255] wireup{ud_verbs/rxe0:1}\n";

int parse(const char *text, sucg_lane_t *lanes, int max = 8)
{
    return sucg_lanes_parse(text, lanes, max);
}

}

TEST(sucg_lanes, srqud_is_one_lane_whose_puts_are_messages)
{
    sucg_lane_t l[8];

    ASSERT_EQ(1, parse(srqud_ep, l));
    EXPECT_STREQ("srqud", l[0].tl);
    EXPECT_TRUE(l[0].rma_bw);
    EXPECT_TRUE(sucg_lanes_rma_by_messages(l, 1));
}

TEST(sucg_lanes, rc_verbs_puts_are_rdma)
{
    sucg_lane_t l[8];

    ASSERT_EQ(2, parse(rc_ep, l));
    EXPECT_STREQ("rc_verbs", l[0].tl);
    EXPECT_STREQ("ud_verbs", l[1].tl);
    EXPECT_TRUE(l[0].rma_bw);
    EXPECT_FALSE(l[1].rma_bw);
    EXPECT_FALSE(sucg_lanes_rma_by_messages(l, 2));
}

TEST(sucg_lanes, shared_memory_puts_are_copies_not_messages)
{
    const char *text =
        "#                 lane[0]:  0:posix/memory.0 md[0]          -> "
        "addr[0].md[0]/posix/sysdev[255] am am_bw#0\n"
        "#                 lane[1]:  1:cma/memory.0 md[1]            -> "
        "addr[1].md[1]/cma/sysdev[255] rma_bw#0\n";
    sucg_lane_t l[8];

    ASSERT_EQ(2, parse(text, l));
    EXPECT_STREQ("posix", l[0].tl);
    EXPECT_STREQ("cma", l[1].tl);
    EXPECT_FALSE(sucg_lanes_rma_by_messages(l, 2));
}

TEST(sucg_lanes, no_rma_lane_means_ucp_emulates_puts)
{
    const char *text =
        "#                 lane[0]:  2:ud_verbs/rxe0:1.0 md[1]       -> "
        "addr[1].md[1]/ib/sysdev[255] am am_bw#0\n";
    sucg_lane_t l[8];

    ASSERT_EQ(1, parse(text, l));
    EXPECT_FALSE(l[0].rma_bw);
    EXPECT_TRUE(sucg_lanes_rma_by_messages(l, 1));
    EXPECT_TRUE(sucg_lanes_rma_by_messages(l, 0));
}

TEST(sucg_lanes, tcp_among_rdma_lanes_makes_puts_messages)
{
    const char *text =
        "lane[0]:  2:rc_verbs/rxe0:1.0 md[1] -> addr[1].md[1]/ib rma_bw#0\n"
        "lane[1]:  5:tcp/lo.0 md[2] -> addr[2].md[2]/tcp rma_bw#1 am\n";
    sucg_lane_t l[8];

    ASSERT_EQ(2, parse(text, l));
    EXPECT_TRUE(sucg_lanes_rma_by_messages(l, 2));
}

TEST(sucg_lanes, cm_lanes_and_other_lines_are_skipped)
{
    const char *text =
        "#                 lane[0]: cm rdmacm\n"
        "# no lane here\n"
        "lane[\n"
        "lane[3]: x\n"
        "#                 lane[1]:  1:srqud/rxe0:1.0 md[1] -> a rma_bw#0";
    sucg_lane_t l[8];

    ASSERT_EQ(1, parse(text, l));
    EXPECT_STREQ("srqud", l[0].tl);
}

TEST(sucg_lanes, a_long_line_keeps_its_roles_and_lines_do_not_run_on)
{
    std::string text = "lane[0]:  1:srqud/rxe0:1.0 md[1] -> ";

    text += std::string(900, 'x') + " rma_bw#0\n";
    text += "lane[1]:  2:tcp\nlane[2]:  3:cma/memory.0 md[2] -> rma_bw#1\n";
    sucg_lane_t l[SUCG_LANES_MAX];

    ASSERT_EQ(3, sucg_lanes_parse(text.c_str(), l, SUCG_LANES_MAX));
    EXPECT_STREQ("srqud", l[0].tl);
    EXPECT_TRUE(l[0].rma_bw);
    /* a name ends with its line, and a role of the next is not its own */
    EXPECT_STREQ("tcp", l[1].tl);
    EXPECT_FALSE(l[1].rma_bw);
    EXPECT_STREQ("cma", l[2].tl);
    EXPECT_TRUE(l[2].rma_bw);
}

TEST(sucg_lanes, a_tcp_lane_after_sixteen_others_counts)
{
    std::string text;
    sucg_lane_t l[SUCG_LANES_MAX];
    int i;

    for (i = 0; i < 20; ++i) {
        text += "lane[" + std::to_string(i) + "]:  1:rc_verbs/mlx5_0:1 md[0] "
                "-> a rma_bw#0\n";
    }
    text += "lane[20]:  5:tcp/eth0.0 md[2] -> a rma_bw#1\n";
    ASSERT_EQ(21, sucg_lanes_parse(text.c_str(), l, SUCG_LANES_MAX));
    EXPECT_TRUE(sucg_lanes_rma_by_messages(l, 21));
}

TEST(sucg_lanes, at_most_max_lanes_and_long_names_cut)
{
    char text[600];
    sucg_lane_t l[2];

    snprintf(text, sizeof(text),
             "lane[0]: 1:%s/dev md[0] rma_bw#0\n"
             "lane[1]: 2:tcp/lo md[0]\nlane[2]: 3:cma/m md[0]\n",
             "a_transport_name_longer_than_thirty_one_bytes");
    ASSERT_EQ(2, parse(text, l, 2));
    EXPECT_EQ(SUCG_LANE_TL_LEN - 1, (int)strlen(l[0].tl));
    EXPECT_STREQ("tcp", l[1].tl);
    EXPECT_EQ(0, parse("", l, 2));
}
