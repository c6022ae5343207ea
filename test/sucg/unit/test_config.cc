/*
 * SUCG_* parsing: defaults, accepted forms, and one clear error naming the
 * variable for every bad value.
 */
#include <gtest/gtest.h>
#include <map>
#include <string>

extern "C" {
#include "sucg/core/sucg_config.h"
}

namespace {

typedef std::map<std::string, std::string> env_t;

const char *lookup(const char *name, void *arg)
{
    env_t *env = static_cast<env_t*>(arg);
    auto it    = env->find(name);
    return (it == env->end()) ? NULL : it->second.c_str();
}

ucs_status_t parse(env_t env, sucg_config_t *c, std::string *err = NULL)
{
    char buf[256] = "";
    ucs_status_t status = sucg_config_parse(c, lookup, &env, buf, sizeof(buf));
    if (err != NULL) {
        *err = buf;
    }
    return status;
}

} // namespace

TEST(sucg_config, defaults)
{
    sucg_config_t c;
    ASSERT_EQ(UCS_OK, parse({}, &c));
    EXPECT_EQ(SUCG_ALLGATHER_AUTO, c.allgather_algo);
    EXPECT_EQ(SUCG_ZCOPY_THRESH_AUTO, c.zcopy_thresh);
    EXPECT_EQ(1048576u, c.ring_min_bytes);
    EXPECT_EQ(33u, c.ring_min_ranks);
    EXPECT_EQ(SUCG_RMA_ORDERING_AUTO, c.rma_ordering);
    EXPECT_EQ(SUCG_STAGED_STEP_AM, c.staged_step);
    EXPECT_EQ(SUCG_ZCOPY_STEP_AUTO, c.zcopy_step);
    EXPECT_EQ(0u, c.fault_reg_fail);
}

TEST(sucg_config, values)
{
    sucg_config_t c;
    ASSERT_EQ(UCS_OK, parse({{"SUCG_ALLGATHER_ALGO", "ring"},
                             {"SUCG_ALLGATHER_ZCOPY_THRESH", "8k"},
                             {"SUCG_RING_MIN_BYTES", "2M"},
                             {"SUCG_RING_MIN_RANKS", "5"},
                             {"SUCG_GROUP_BUFFER_SIZE", "0"},
                             {"SUCG_RMA_ORDERING", "flush"},
                             {"SUCG_STAGED_STEP", "PUT"},
                             {"SUCG_ZCOPY_STEP", "Tag"},
                             {"SUCG_FAULT_REG_FAIL", "30"}}, &c));
    EXPECT_EQ(SUCG_ALLGATHER_RING, c.allgather_algo);
    EXPECT_EQ(8192u, c.zcopy_thresh);
    EXPECT_EQ(2u << 20, c.ring_min_bytes);
    EXPECT_EQ(5u, c.ring_min_ranks);
    EXPECT_EQ(0u, c.group_buffer_size);
    EXPECT_EQ(SUCG_RMA_ORDERING_FLUSH, c.rma_ordering);
    EXPECT_EQ(SUCG_STAGED_STEP_PUT, c.staged_step);
    EXPECT_EQ(SUCG_ZCOPY_STEP_TAG, c.zcopy_step);
    EXPECT_EQ(30u, c.fault_reg_fail);
    ASSERT_EQ(UCS_OK, parse({{"SUCG_ZCOPY_STEP", "put"}}, &c));
    EXPECT_EQ(SUCG_ZCOPY_STEP_PUT, c.zcopy_step);
    ASSERT_EQ(UCS_OK, parse({{"SUCG_STAGED_STEP", "Tail"}}, &c));
    EXPECT_EQ(SUCG_STAGED_STEP_TAIL, c.staged_step);
    ASSERT_EQ(UCS_OK, parse({{"SUCG_STAGED_STEP", "am"}}, &c));
    EXPECT_EQ(SUCG_STAGED_STEP_AM, c.staged_step);

    for (auto a : {"auto", "recursive_doubling", "ring", "p2p_rd", "p2p_ring"}) {
        ASSERT_EQ(UCS_OK, parse({{"SUCG_ALLGATHER_ALGO", a}}, &c)) << a;
        EXPECT_STREQ(a, sucg_config_algo_name(c.allgather_algo));
    }
}

TEST(sucg_config, bad_values_name_the_variable)
{
    const std::pair<const char*, const char*> bad[] = {
        {"SUCG_ALLGATHER_ALGO", "bruck"},
        {"SUCG_ALLGATHER_ALGO", ""},
        {"SUCG_ALLGATHER_ZCOPY_THRESH", "12x"},
        {"SUCG_ALLGATHER_ZCOPY_THRESH", "-1"},
        {"SUCG_ALLGATHER_ZCOPY_THRESH", ""},
        {"SUCG_RING_MIN_BYTES", "1MBB"},
        {"SUCG_RING_MIN_BYTES", "99999999999999999999"},
        {"SUCG_RING_MIN_RANKS", "many"},
        {"SUCG_RING_MIN_RANKS", "4294967296"},
        {"SUCG_GROUP_BUFFER_SIZE", "1T"},
        {"SUCG_GROUP_BUFFER_SIZE", "64G"},
        {"SUCG_RCACHE_MAX_ENTRIES", "0x10"},
        {"SUCG_RMA_ORDERING", "strong"},
        {"SUCG_STAGED_STEP", "message"},
        {"SUCG_STAGED_STEP", "tails"},
        {"SUCG_STAGED_STEP", ""},
        {"SUCG_ZCOPY_STEP", "rendezvous"},
        {"SUCG_ZCOPY_STEP", ""},
        {"SUCG_FAULT_REG_FAIL", "101"},
        {"SUCG_FAULT_REG_FAIL", "0.5"},
    };
    for (auto &b : bad) {
        sucg_config_t c;
        std::string err;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, parse({{b.first, b.second}}, &c, &err))
            << b.first << "=" << b.second;
        EXPECT_NE(std::string::npos, err.find(b.first)) << err;
        EXPECT_NE(std::string::npos, err.find(std::string("'") + b.second + "'"))
            << err;
    }
}

/* auto follows the group's staged steps; a number holds for both */
TEST(sucg_config, zcopy_thresh_auto_follows_the_staged_step)
{
    sucg_config_t c;
    ASSERT_EQ(UCS_OK, parse({}, &c));
    EXPECT_EQ(32768u, sucg_config_zcopy_thresh(&c, 1));
    EXPECT_EQ(4096u, sucg_config_zcopy_thresh(&c, 0));

    ASSERT_EQ(UCS_OK, parse({{"SUCG_ALLGATHER_ZCOPY_THRESH", "AUTO"}}, &c));
    EXPECT_EQ(32768u, sucg_config_zcopy_thresh(&c, 1));

    ASSERT_EQ(UCS_OK, parse({{"SUCG_ALLGATHER_ZCOPY_THRESH", "4k"}}, &c));
    EXPECT_EQ(4096u, sucg_config_zcopy_thresh(&c, 1));
    EXPECT_EQ(4096u, sucg_config_zcopy_thresh(&c, 0));

    ASSERT_EQ(UCS_OK, parse({{"SUCG_ALLGATHER_ZCOPY_THRESH", "0"}}, &c));
    EXPECT_EQ(0u, sucg_config_zcopy_thresh(&c, 1));

    /* the largest number is auto's own: refused, not taken for auto */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              parse({{"SUCG_ALLGATHER_ZCOPY_THRESH", "18446744073709551615"}},
                    &c));

    /* a bad value's error names auto among what is accepted */
    std::string err;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              parse({{"SUCG_ALLGATHER_ZCOPY_THRESH", "automatic"}}, &c, &err));
    EXPECT_NE(std::string::npos, err.find("'automatic'")) << err;
    EXPECT_NE(std::string::npos, err.find("or auto")) << err;
}

/* The former UCG_* names still work; the SUCG_* name wins over its alias */
TEST(sucg_config, former_names)
{
    sucg_config_t c;
    std::string err;
    ASSERT_EQ(UCS_OK, parse({{"UCG_ALLGATHER_ALGO", "p2p_ring"},
                             {"UCG_ALLGATHER_ZCOPY_THRESH", "1k"},
                             {"UCG_RMA_ORDERING", "fence"}}, &c));
    EXPECT_EQ(SUCG_ALLGATHER_P2P_RING, c.allgather_algo);
    EXPECT_EQ(1024u, c.zcopy_thresh);
    EXPECT_EQ(SUCG_RMA_ORDERING_FENCE, c.rma_ordering);

    ASSERT_EQ(UCS_OK, parse({{"SUCG_RING_MIN_RANKS", "7"},
                             {"UCG_RING_MIN_RANKS", "9"}}, &c));
    EXPECT_EQ(7u, c.ring_min_ranks);

    /* the error names the variable that was set */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              parse({{"UCG_RING_MIN_RANKS", "many"}}, &c, &err));
    EXPECT_EQ(0u, err.find("UCG_RING_MIN_RANKS='many'")) << err;
}

/* AUTO: ring only for large blocks on many ranks, on every rank alike */
TEST(sucg_config, auto_selection)
{
    sucg_config_t c;
    ASSERT_EQ(UCS_OK, parse({}, &c));
    EXPECT_EQ(SUCG_ALLGATHER_RECURSIVE_DOUBLING,
              sucg_config_select(&c, SUCG_ALLGATHER_AUTO, 1 << 20, 32));
    EXPECT_EQ(SUCG_ALLGATHER_RECURSIVE_DOUBLING,
              sucg_config_select(&c, SUCG_ALLGATHER_AUTO, (1 << 20) - 1, 33));
    EXPECT_EQ(SUCG_ALLGATHER_RING,
              sucg_config_select(&c, SUCG_ALLGATHER_AUTO, 1 << 20, 33));
    /* explicit request wins over configuration */
    EXPECT_EQ(SUCG_ALLGATHER_P2P_RING,
              sucg_config_select(&c, SUCG_ALLGATHER_P2P_RING, 1, 2));
    ASSERT_EQ(UCS_OK, parse({{"SUCG_ALLGATHER_ALGO", "p2p_rd"}}, &c));
    EXPECT_EQ(SUCG_ALLGATHER_P2P_RD,
              sucg_config_select(&c, SUCG_ALLGATHER_AUTO, 1 << 24, 64));
    ASSERT_EQ(UCS_OK, parse({{"SUCG_RING_MIN_BYTES", "0"},
                             {"SUCG_RING_MIN_RANKS", "2"}}, &c));
    EXPECT_EQ(SUCG_ALLGATHER_RING,
              sucg_config_select(&c, SUCG_ALLGATHER_AUTO, 1, 2));
}
