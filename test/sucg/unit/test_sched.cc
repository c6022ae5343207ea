/*
 * Schedules as pure functions: for every size 1..33 (and a few larger),
 * every rank and both algorithms, simulate the schedule on real byte
 * buffers and check pairing, causality, no duplicate delivery and the final
 * layout (byte for byte against rank-and-offset patterns).
 */
#include <gtest/gtest.h>
#include <cstring>
#include <vector>

extern "C" {
#include "sucg/sched/sucg_sched.h"
}

namespace {

const size_t kBlock = 7; /* odd on purpose: catches byte/block mixups */

uint8_t pattern(int owner, size_t off)
{
    return (uint8_t)(owner * 31 + off * 7 + 1);
}

bool same_ranges(const sucg_range_t *a, int na, const sucg_range_t *b, int nb)
{
    if (na != nb) {
        return false;
    }
    for (int i = 0; i < na; ++i) {
        if ((a[i].first != b[i].first) || (a[i].count != b[i].count)) {
            return false;
        }
    }
    return true;
}

void simulate(sucg_sched_kind_t kind, int p)
{
    int nsteps = sucg_sched_nsteps(kind, p);
    std::vector<std::vector<uint8_t>> buf(p, std::vector<uint8_t>(p * kBlock, 0));
    std::vector<std::vector<bool>>    have(p, std::vector<bool>(p, false));
    std::vector<sucg_sched_step_t>    st(p);

    for (int r = 0; r < p; ++r) {
        for (size_t o = 0; o < kBlock; ++o) {
            buf[r][r * kBlock + o] = pattern(r, o);
        }
        have[r][r] = true;
    }

    for (int s = 0; s < nsteps; ++s) {
        for (int r = 0; r < p; ++r) {
            sucg_sched_step(kind, p, r, s, &st[r]);
        }
        /* causality and pairing are checked against the state before the
         * step: a step's sends use only data owned when it starts */
        std::vector<std::vector<uint8_t>> next = buf;
        std::vector<std::vector<bool>>    next_have = have;
        for (int r = 0; r < p; ++r) {
            const sucg_sched_step_t &a = st[r];
            ASSERT_EQ(a.send_peer < 0, a.n_send == 0) << "p=" << p << " r=" << r << " s=" << s;
            ASSERT_EQ(a.recv_peer < 0, a.n_recv == 0) << "p=" << p << " r=" << r << " s=" << s;
            if (a.send_peer >= 0) {
                ASSERT_LT(a.send_peer, p);
                ASSERT_NE(a.send_peer, r);
                const sucg_sched_step_t &b = st[a.send_peer];
                ASSERT_EQ(b.recv_peer, r) << "p=" << p << " r=" << r << " s=" << s;
                ASSERT_TRUE(same_ranges(a.send, a.n_send, b.recv, b.n_recv))
                    << "p=" << p << " r=" << r << " s=" << s;
                for (int i = 0; i < a.n_send; ++i) {
                    ASSERT_LE(a.send[i].first + a.send[i].count, (uint32_t)p);
                    for (uint32_t blk = a.send[i].first;
                         blk < a.send[i].first + a.send[i].count; ++blk) {
                        ASSERT_TRUE(have[r][blk]) << "p=" << p << " r=" << r
                                                  << " s=" << s << " sends unowned block " << blk;
                        ASSERT_FALSE(have[a.send_peer][blk]) << "duplicate delivery p=" << p
                                                  << " to=" << a.send_peer << " blk=" << blk;
                        ASSERT_FALSE(next_have[a.send_peer][blk]) << "two senders p=" << p;
                        next_have[a.send_peer][blk] = true;
                    }
                    memcpy(&next[a.send_peer][a.send[i].first * kBlock],
                           &buf[r][a.send[i].first * kBlock], a.send[i].count * kBlock);
                }
            }
            if (a.recv_peer >= 0) {
                ASSERT_EQ(st[a.recv_peer].send_peer, r) << "p=" << p << " r=" << r << " s=" << s;
            }
        }
        buf.swap(next);
        have.swap(next_have);
    }

    for (int r = 0; r < p; ++r) {
        for (int owner = 0; owner < p; ++owner) {
            ASSERT_TRUE(have[r][owner]) << "p=" << p << " rank " << r << " misses " << owner;
            for (size_t o = 0; o < kBlock; ++o) {
                ASSERT_EQ(buf[r][owner * kBlock + o], pattern(owner, o))
                    << "p=" << p << " rank " << r << " block " << owner;
            }
        }
    }
}

} // namespace

TEST(sucg_sched, rd_all_sizes)
{
    for (int p = 1; p <= 33; ++p) {
        SCOPED_TRACE(p);
        simulate(SUCG_SCHED_RD, p);
    }
    for (int p : {63, 64, 65, 100, 127, 128, 129}) {
        SCOPED_TRACE(p);
        simulate(SUCG_SCHED_RD, p);
    }
}

TEST(sucg_sched, ring_all_sizes)
{
    for (int p = 1; p <= 33; ++p) {
        SCOPED_TRACE(p);
        simulate(SUCG_SCHED_RING, p);
    }
    simulate(SUCG_SCHED_RING, 100);
}

TEST(sucg_sched, step_counts)
{
    EXPECT_EQ(0, sucg_sched_nsteps(SUCG_SCHED_RD, 1));
    EXPECT_EQ(3, sucg_sched_nsteps(SUCG_SCHED_RD, 2));  /* 1 + empty pre/post */
    EXPECT_EQ(4, sucg_sched_nsteps(SUCG_SCHED_RD, 5));
    EXPECT_EQ(7, sucg_sched_nsteps(SUCG_SCHED_RD, 33));
    EXPECT_EQ(32, sucg_sched_nsteps(SUCG_SCHED_RING, 33));
}

/* Power-of-two sizes: pure recursive doubling, pre/post steps empty, step k
 * exchanges 2^(k-1) blocks with rank ^ 2^(k-1) */
TEST(sucg_sched, rd_power_of_two_is_classic)
{
    for (int p = 2; p <= 32; p *= 2) {
        int L = sucg_sched_log2(p);
        for (int r = 0; r < p; ++r) {
            sucg_sched_step_t st;
            sucg_sched_step(SUCG_SCHED_RD, p, r, 0, &st);
            EXPECT_EQ(-1, st.send_peer);
            EXPECT_EQ(-1, st.recv_peer);
            sucg_sched_step(SUCG_SCHED_RD, p, r, L + 1, &st);
            EXPECT_EQ(-1, st.send_peer);
            for (int s = 1; s <= L; ++s) {
                sucg_sched_step(SUCG_SCHED_RD, p, r, s, &st);
                EXPECT_EQ(r ^ (1 << (s - 1)), st.send_peer);
                ASSERT_EQ(1, st.n_send);
                EXPECT_EQ((uint32_t)1 << (s - 1), st.send[0].count);
                EXPECT_EQ(sucg_sched_nominal_blocks(SUCG_SCHED_RD, p, s),
                          (size_t)st.send[0].count);
                EXPECT_EQ(0u, st.send[0].first % st.send[0].count);
            }
        }
    }
}

/* Every rank of a ring receives exactly one block per step, from r-1 */
TEST(sucg_sched, ring_neighbours)
{
    for (int p = 2; p <= 33; ++p) {
        for (int r = 0; r < p; ++r) {
            for (int s = 0; s < p - 1; ++s) {
                sucg_sched_step_t st;
                sucg_sched_step(SUCG_SCHED_RING, p, r, s, &st);
                EXPECT_EQ((r + 1) % p, st.send_peer);
                EXPECT_EQ((r + p - 1) % p, st.recv_peer);
                EXPECT_EQ(1, st.n_send);
                EXPECT_EQ(1, st.n_recv);
            }
        }
    }
}
