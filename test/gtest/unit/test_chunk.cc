/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The zero-copy chunk tracking and selective retransmission, against a
 * simulated UD receive queue: packets land in the posted receives in
 * order, whatever they carry; the channel loses, duplicates and reorders.
 */

#include <gtest/gtest.h>

extern "C" {
#include <uct/ib/srqud/srqud_chunk.h>
}

#include <algorithm>
#include <deque>
#include <iostream>
#include <random>
#include <vector>

TEST(srqud_chunk, range_within)
{
    EXPECT_TRUE(uct_srqud_range_within(1000, 100, 1000, 100));
    EXPECT_TRUE(uct_srqud_range_within(1000, 100, 1050, 50));
    EXPECT_TRUE(uct_srqud_range_within(1000, 100, 1000, 0));
    EXPECT_FALSE(uct_srqud_range_within(1000, 100, 999, 1));
    EXPECT_FALSE(uct_srqud_range_within(1000, 100, 1050, 51));
    EXPECT_FALSE(uct_srqud_range_within(1000, 100, 1101, 0));
    EXPECT_FALSE(uct_srqud_range_within(1000, 100, 1000, 101));
    /* a length that would wrap the address space */
    EXPECT_FALSE(uct_srqud_range_within(1000, 100, 1010, UINT64_MAX));
    EXPECT_FALSE(uct_srqud_range_within(1000, UINT64_MAX - 1000, 2000,
                                        UINT64_MAX - 500));
}

TEST(srqud_chunk, encode_ranges)
{
    uint32_t chunks[] = {5, 6, 7, 9, 3, 4, 10};
    uct_srqud_chunk_range_t r[8];
    uint32_t nr;

    EXPECT_EQ(7u, uct_srqud_chunk_encode(chunks, 7, r, 8, &nr));
    ASSERT_EQ(4u, nr);
    EXPECT_EQ(5u, r[0].start); EXPECT_EQ(3u, r[0].count);
    EXPECT_EQ(9u, r[1].start); EXPECT_EQ(1u, r[1].count);
    EXPECT_EQ(3u, r[2].start); EXPECT_EQ(2u, r[2].count);
    EXPECT_EQ(10u, r[3].start); EXPECT_EQ(1u, r[3].count);
    /* truncated to a prefix when the ranges do not fit */
    EXPECT_EQ(4u, uct_srqud_chunk_encode(chunks, 7, r, 2, &nr));
    EXPECT_EQ(2u, nr);
}

TEST(srqud_chunk, count_and_length)
{
    EXPECT_EQ(1u, uct_srqud_chunk_count(1, 4096));
    EXPECT_EQ(1u, uct_srqud_chunk_count(4096, 4096));
    EXPECT_EQ(2u, uct_srqud_chunk_count(4097, 4096));
    EXPECT_EQ(1025u, uct_srqud_chunk_count(4u * 1024 * 1024 + 777, 4096));
    EXPECT_EQ(4096u, uct_srqud_chunk_len(4097, 4096, 0));
    EXPECT_EQ(1u, uct_srqud_chunk_len(4097, 4096, 1));
    EXPECT_EQ(777u, uct_srqud_chunk_len(4u * 1024 * 1024 + 777, 4096, 1024));
    /* beyond 4 GB: the chunk offset must not wrap in 32 bits */
    EXPECT_EQ(100u, uct_srqud_chunk_len((1ull << 32) + 100, 4096,
                                        (uint32_t)((1ull << 32) / 4096)));
}

TEST(srqud_chunk, peer_ranges_checked_and_expanded)
{
    uct_srqud_chunk_range_t ok[]    = {{5, 3}, {0, 2}, {9, 1}};
    uct_srqud_chunk_range_t empty[] = {{5, 0}};
    uct_srqud_chunk_range_t past[]  = {{8, 3}};   /* 8..10 of 10 chunks */
    uct_srqud_chunk_range_t wrap[]  = {{1, UINT32_MAX}};
    uint32_t list[6];

    EXPECT_EQ(6u, uct_srqud_chunk_ranges_check(ok, 3, 10, 100));
    uct_srqud_chunk_ranges_expand(ok, 3, list);
    EXPECT_EQ((std::vector<uint32_t>{5, 6, 7, 0, 1, 9}),
              std::vector<uint32_t>(list, list + 6));

    EXPECT_EQ(0u, uct_srqud_chunk_ranges_check(ok, 3, 10, 5));  /* too many */
    EXPECT_EQ(0u, uct_srqud_chunk_ranges_check(ok, 0, 10, 100)); /* none */
    EXPECT_EQ(0u, uct_srqud_chunk_ranges_check(empty, 1, 10, 100));
    EXPECT_EQ(0u, uct_srqud_chunk_ranges_check(past, 1, 10, 100));
    EXPECT_EQ(0u, uct_srqud_chunk_ranges_check(wrap, 1, 10, 100));
    EXPECT_EQ(3u, uct_srqud_chunk_ranges_check(past, 1, 11, 100));
}

TEST(srqud_chunk, no_loss_is_one_round_in_order)
{
    uct_srqud_chunk_rx_t rx;
    ASSERT_EQ(0, uct_srqud_chunk_rx_init(&rx, 10, 16));
    std::vector<uint32_t> posted(16);
    EXPECT_EQ(10u, uct_srqud_chunk_rx_plan(&rx, posted.data(), 16));
    for (uint32_t c = 0; c < 10; ++c) {
        EXPECT_EQ(c, posted[c]);
        int in_place;
        EXPECT_EQ(c, uct_srqud_chunk_rx_complete(&rx, c, 1, &in_place));
        EXPECT_TRUE(in_place);
    }
    EXPECT_TRUE(uct_srqud_chunk_rx_done(&rx));
    EXPECT_EQ(0u, uct_srqud_chunk_rx_plan(&rx, posted.data(), 16));
    uct_srqud_chunk_rx_cleanup(&rx);
}

TEST(srqud_chunk, lost_chunk_shifts_the_rest_and_is_resent_selectively)
{
    uct_srqud_chunk_rx_t rx;
    ASSERT_EQ(0, uct_srqud_chunk_rx_init(&rx, 10, 10));
    std::vector<uint32_t> posted(10), order(10);
    ASSERT_EQ(10u, uct_srqud_chunk_rx_plan(&rx, posted.data(), 10));

    /* chunk 5 lost: 6..9 land in the receives of 5..8 */
    int in_place;
    for (uint32_t c : {0u, 1u, 2u, 3u, 4u, 6u, 7u, 8u, 9u}) {
        uct_srqud_chunk_rx_complete(&rx, c, 1, &in_place);
        EXPECT_EQ(c < 5, in_place != 0) << c;
    }
    EXPECT_EQ(5u, rx.valid_count);
    /* the receive posted for 9 is still there, unfilled: the next round
     * asks for 9 first, then re-posts 5..8 behind it */
    ASSERT_EQ(4u, uct_srqud_chunk_rx_plan(&rx, posted.data(), 10));
    EXPECT_EQ((std::vector<uint32_t>{5, 6, 7, 8}),
              std::vector<uint32_t>(posted.begin(), posted.begin() + 4));
    ASSERT_EQ(5u, uct_srqud_chunk_rx_order(&rx, order.data(), 10));
    EXPECT_EQ((std::vector<uint32_t>{9, 5, 6, 7, 8}),
              std::vector<uint32_t>(order.begin(), order.begin() + 5));
    for (uint32_t i = 0; i < 5; ++i) {
        uct_srqud_chunk_rx_complete(&rx, order[i], 1, &in_place);
        EXPECT_TRUE(in_place);
    }
    EXPECT_TRUE(uct_srqud_chunk_rx_done(&rx));
    uct_srqud_chunk_rx_cleanup(&rx);
}

TEST(srqud_chunk, misplaced_chunks_are_moved_home_backwards)
{
    uct_srqud_chunk_rx_t rx;
    ASSERT_EQ(0, uct_srqud_chunk_rx_init(&rx, 6, 6));
    std::vector<uint32_t> posted(6);
    ASSERT_EQ(6u, uct_srqud_chunk_rx_plan(&rx, posted.data(), 6));
    int in_place;
    /* 1 lost: 2..5 land in the receives of 1..4; 5's receive is left */
    for (uint32_t c : {0u, 2u, 3u, 4u, 5u}) {
        uct_srqud_chunk_rx_complete(&rx, c, 1, &in_place);
    }
    std::vector<uct_srqud_chunk_move_t> moves(6);
    /* 4 (in 3's receive) first, then 3 (in 2's), then 2 (in 1's); 5 (in
     * 4's receive) cannot go home, its own receive is still posted, so
     * 4 may overwrite it */
    uint32_t n = uct_srqud_chunk_rx_settle(&rx, moves.data());
    ASSERT_EQ(3u, n);
    EXPECT_EQ(3u, moves[0].from_slot); EXPECT_EQ(4u, moves[0].chunk);
    EXPECT_EQ(2u, moves[1].from_slot); EXPECT_EQ(3u, moves[1].chunk);
    EXPECT_EQ(1u, moves[2].from_slot); EXPECT_EQ(2u, moves[2].chunk);
    EXPECT_EQ(4u, rx.valid_count);
    /* only 1 is posted again, behind the receive still waiting for 5 */
    ASSERT_EQ(1u, uct_srqud_chunk_rx_plan(&rx, posted.data(), 6));
    EXPECT_EQ(1u, posted[0]);
    std::vector<uint32_t> order(6);
    ASSERT_EQ(2u, uct_srqud_chunk_rx_order(&rx, order.data(), 6));
    EXPECT_EQ(5u, order[0]);
    EXPECT_EQ(1u, order[1]);
    uct_srqud_chunk_rx_cleanup(&rx);
}

/* Apply settle's moves to a simulated memory of chunk numbers (the
 * temporary included), checking each reads the chunk it names */
static void apply_moves(const std::vector<uct_srqud_chunk_move_t> &moves,
                        uint32_t n, std::vector<int64_t> &memory)
{
    int64_t temp = -1;

    for (uint32_t i = 0; i < n; ++i) {
        const uct_srqud_chunk_move_t &m = moves[i];
        int64_t v = (m.from_slot == UCT_SRQUD_CHUNK_TEMP) ? temp :
                                                            memory[m.from_slot];
        if (m.chunk == UCT_SRQUD_CHUNK_TEMP) {
            ASSERT_EQ((int64_t)m.temp_chunk, v) << "save " << i;
            temp = v;
        } else {
            ASSERT_EQ((int64_t)m.chunk, v) << "move " << i;
            memory[m.chunk] = v;
        }
    }
}

/* Reordering makes chunks take each other's receives: a cycle, moved home
 * through the temporary (it used to be resent whole: on a wire with 3 +-
 * 2 ms of jitter nearly every chunk was) */
TEST(srqud_chunk, swapped_pair_is_a_cycle_moved_through_the_temporary)
{
    uct_srqud_chunk_rx_t rx;
    ASSERT_EQ(0, uct_srqud_chunk_rx_init(&rx, 2, 2));
    std::vector<uint32_t> posted(2);
    std::vector<uct_srqud_chunk_move_t> moves(UCT_SRQUD_CHUNK_MOVES_MAX(2));
    std::vector<int64_t> memory = {1, 0};  /* what landed where */
    ASSERT_EQ(2u, uct_srqud_chunk_rx_plan(&rx, posted.data(), 2));
    int in_place;
    uct_srqud_chunk_rx_complete(&rx, 1, 1, &in_place);
    uct_srqud_chunk_rx_complete(&rx, 0, 1, &in_place);
    uint32_t n = uct_srqud_chunk_rx_settle(&rx, moves.data());
    EXPECT_EQ(3u, n); /* save, move, restore */
    ASSERT_NO_FATAL_FAILURE(apply_moves(moves, n, memory));
    EXPECT_EQ((std::vector<int64_t>{0, 1}), memory);
    EXPECT_TRUE(uct_srqud_chunk_rx_done(&rx));
    EXPECT_EQ(0u, uct_srqud_chunk_rx_plan(&rx, posted.data(), 2));
    uct_srqud_chunk_rx_cleanup(&rx);
}

/* A round reversed and rotated (cycles of every length), no loss: every
 * chunk home by copies, nothing to ask again */
TEST(srqud_chunk, any_permutation_of_a_round_is_moved_home)
{
    const uint32_t depth = 64;
    std::mt19937 rng(7);

    for (int trial = 0; trial < 200; ++trial) {
        uct_srqud_chunk_rx_t rx;
        ASSERT_EQ(0, uct_srqud_chunk_rx_init(&rx, depth, depth));
        std::vector<uint32_t> posted(depth), wire(depth);
        std::vector<uct_srqud_chunk_move_t> moves(UCT_SRQUD_CHUNK_MOVES_MAX(depth));
        std::vector<int64_t> memory(depth, -1);
        ASSERT_EQ(depth, uct_srqud_chunk_rx_plan(&rx, posted.data(), depth));
        for (uint32_t i = 0; i < depth; ++i) {
            wire[i] = i;
        }
        std::shuffle(wire.begin(), wire.end(), rng);
        for (uint32_t c : wire) {
            int in_place;
            uint32_t slot = uct_srqud_chunk_rx_complete(&rx, c, 1, &in_place);
            memory[slot] = c;
        }
        uint32_t n = uct_srqud_chunk_rx_settle(&rx, moves.data());
        ASSERT_LE(n, moves.size());
        ASSERT_NO_FATAL_FAILURE(apply_moves(moves, n, memory));
        for (uint32_t c = 0; c < depth; ++c) {
            ASSERT_EQ((int64_t)c, memory[c]) << "trial " << trial;
        }
        EXPECT_TRUE(uct_srqud_chunk_rx_done(&rx));
        uct_srqud_chunk_rx_cleanup(&rx);
    }
}

/* Rounds whose packets are reordered, lost and duplicated (a chunk then
 * lands twice, in two receives): every move reads the chunk it names, a
 * chunk counted in place is there, and none is counted twice. The first
 * version of the cycle moves counted a chunk twice when its duplicate went
 * home too (wrong data in the wire's jitter scenario). */
TEST(srqud_chunk, reordered_lost_and_duplicated_rounds_place_every_chunk_once)
{
    const uint32_t nchunks = 300, depth = 64;
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> u(0, 1);

    for (int trial = 0; trial < 100; ++trial) {
        uct_srqud_chunk_rx_t rx;
        ASSERT_EQ(0, uct_srqud_chunk_rx_init(&rx, nchunks, depth));
        std::vector<uint32_t> posted(depth), order(depth);
        std::vector<uct_srqud_chunk_move_t> moves(UCT_SRQUD_CHUNK_MOVES_MAX(depth));
        std::vector<int64_t> memory(nchunks, -1);
        std::vector<uint32_t> old_round;
        int rounds = 0;

        while (!uct_srqud_chunk_rx_done(&rx) && (++rounds < 1000)) {
            uct_srqud_chunk_rx_plan(&rx, posted.data(), depth);
            uint32_t n = uct_srqud_chunk_rx_order(&rx, order.data(), depth);
            std::vector<uint32_t> wire;
            for (uint32_t i = 0; i < n; ++i) {
                if (u(rng) >= 0.05) {
                    wire.push_back(order[i]);                /* 5 % lost */
                }
                if (u(rng) < 0.05) {
                    wire.push_back(order[i]);                /* duplicated */
                }
            }
            for (uint32_t c : old_round) {                   /* late ones */
                if (u(rng) < 0.05) {
                    wire.push_back(c);
                }
            }
            std::shuffle(wire.begin(), wire.end(), rng);     /* reordered */
            for (uint32_t c : wire) {
                if (rx.count == 0) {
                    break;
                }
                int in_place;
                uint32_t slot = uct_srqud_chunk_rx_complete(&rx, c, 1,
                                                            &in_place);
                memory[slot] = c;
            }
            /* end of the round: the receives not reached are taken back
             * (as the sink does before it asks again) */
            while (rx.count > 0) {
                int in_place;
                uint32_t slot = uct_srqud_chunk_rx_complete(&rx, nchunks, 0,
                                                            &in_place);
                memory[slot] = -1;
            }
            uint32_t nm = uct_srqud_chunk_rx_settle(&rx, moves.data());
            ASSERT_LE(nm, moves.size());
            ASSERT_NO_FATAL_FAILURE(apply_moves(moves, nm, memory));
            uint32_t home = 0;
            for (uint32_t c = 0; c < nchunks; ++c) {
                home += (memory[c] == (int64_t)c);
            }
            ASSERT_LE(rx.valid_count, home) << "trial " << trial << " round "
                                            << rounds;
            old_round.assign(order.begin(), order.begin() + n);
        }
        EXPECT_TRUE(uct_srqud_chunk_rx_done(&rx)) << "trial " << trial;
        for (uint32_t c = 0; c < nchunks; ++c) {
            ASSERT_EQ((int64_t)c, memory[c]) << "trial " << trial;
        }
        uct_srqud_chunk_rx_cleanup(&rx);
    }
}

TEST(srqud_chunk, wrong_length_is_not_in_place)
{
    uct_srqud_chunk_rx_t rx;
    ASSERT_EQ(0, uct_srqud_chunk_rx_init(&rx, 2, 4));
    std::vector<uint32_t> posted(4);
    ASSERT_EQ(2u, uct_srqud_chunk_rx_plan(&rx, posted.data(), 4));
    int in_place;
    uct_srqud_chunk_rx_complete(&rx, 0, 0, &in_place);
    EXPECT_FALSE(in_place);
    /* an immediate out of range is simply misplaced */
    uct_srqud_chunk_rx_complete(&rx, 12345, 1, &in_place);
    EXPECT_FALSE(in_place);
    EXPECT_EQ(0u, rx.valid_count);
    uct_srqud_chunk_rx_cleanup(&rx);
}

/*
 * A whole transfer through a lossy, duplicating, reordering channel, with a
 * receive queue smaller than the message (several windows): the simulated
 * memory ends equal to the source, and the selective rounds resend far
 * less than whole-message retransmission would.
 */
TEST(srqud_chunk, lossy_channel_simulation)
{
    const uint32_t nchunks = 3000, depth = 256;
    std::mt19937 rng(12345);
    std::uniform_real_distribution<double> u(0, 1);
    uct_srqud_chunk_rx_t rx;
    ASSERT_EQ(0, uct_srqud_chunk_rx_init(&rx, nchunks, depth));

    std::vector<int64_t> memory(nchunks, -1);  /* what each slot holds */
    std::vector<uint32_t> buf(depth), order(depth);
    uint64_t sent = 0, rounds = 0, copied = 0;

    while (!uct_srqud_chunk_rx_done(&rx)) {
        ASSERT_LT(++rounds, 1000u);
        uct_srqud_chunk_rx_plan(&rx, buf.data(), depth);
        uint32_t n = uct_srqud_chunk_rx_order(&rx, order.data(), depth);
        ASSERT_GT(n, 0u);

        /* the source sends what is asked, in that order; the channel loses
         * 5 %, duplicates 2 %, swaps neighbours 2 % */
        std::vector<uint32_t> wire;
        for (uint32_t i = 0; i < n; ++i) {
            ++sent;
            if (u(rng) < 0.05) {
                continue;
            }
            wire.push_back(order[i]);
            if (u(rng) < 0.02) {
                wire.push_back(order[i]);
            }
        }
        for (size_t i = 1; i < wire.size(); ++i) {
            if (u(rng) < 0.02) {
                std::swap(wire[i - 1], wire[i]);
            }
        }

        /* each arriving packet fills the oldest posted receive */
        for (uint32_t chunk : wire) {
            if (rx.count == 0) {
                break; /* nothing posted: the device drops it */
            }
            int in_place;
            uint32_t slot = uct_srqud_chunk_rx_complete(&rx, chunk, 1,
                                                        &in_place);
            ASSERT_LT(slot, nchunks);
            memory[slot] = chunk;
            EXPECT_EQ(in_place != 0, slot == chunk);
        }

        /* end of the round: misplaced chunks copied home, in the order
         * given (each copy reads a slot no later copy writes first) */
        std::vector<uct_srqud_chunk_move_t> moves(UCT_SRQUD_CHUNK_MOVES_MAX(depth));
        uint32_t nm = uct_srqud_chunk_rx_settle(&rx, moves.data());
        ASSERT_NO_FATAL_FAILURE(apply_moves(moves, nm, memory));
        copied += nm;
    }

    for (uint32_t c = 0; c < nchunks; ++c) {
        ASSERT_EQ((int64_t)c, memory[c]) << "chunk " << c;
    }
    /* 3000 chunks, 5 % loss: misplaced chunks are copied home, so the
     * resends stay near the loss rate (whole-message retransmission would
     * send the 3000 again at every loss) */
    EXPECT_LT(sent, nchunks * 13 / 10) << sent << " sent in " << rounds
                                       << " rounds";
    EXPECT_GT(copied, 0u);
    uct_srqud_chunk_rx_cleanup(&rx);
}


TEST(srqud_chunk, missing_span)
{
    uct_srqud_chunk_rx_t rx;
    std::vector<uint32_t> buf(8);
    uint32_t first, last;
    int in_place;

    ASSERT_EQ(0, uct_srqud_chunk_rx_init(&rx, 8, 8));
    ASSERT_EQ(8u, uct_srqud_chunk_rx_plan(&rx, buf.data(), 8));
    ASSERT_TRUE(uct_srqud_chunk_rx_missing(&rx, &first, &last));
    EXPECT_EQ(0u, first);
    EXPECT_EQ(7u, last);
    /* 0, 1 and 7 land; 2..6 do not */
    for (uint32_t c : {0u, 1u}) {
        uct_srqud_chunk_rx_complete(&rx, c, 1, &in_place);
    }
    for (uint32_t c = 2; c < 7; ++c) {
        uct_srqud_chunk_rx_complete(&rx, UINT32_MAX, 0, &in_place);
    }
    uct_srqud_chunk_rx_complete(&rx, 7, 1, &in_place);
    ASSERT_TRUE(uct_srqud_chunk_rx_missing(&rx, &first, &last));
    EXPECT_EQ(2u, first);
    EXPECT_EQ(6u, last);
    uct_srqud_chunk_rx_cleanup(&rx);
}


TEST(srqud_chunk, window_halves_on_overflow_and_grows_back)
{
    const uint32_t floor = UCT_SRQUD_CHUNK_WINDOW_MIN;
    const uint32_t step  = UCT_SRQUD_CHUNK_WINDOW_STEP;
    uct_srqud_chunk_wnd_t w;
    const uint32_t W     = UINT32_MAX; /* a round that asked the window */
    /* one round each: what it asked for, what arrived
     * (-1: all), whether its ZFIN was lost; the window after it */
    struct round {
        uint32_t asked;
        int      arrived;
        int      fin_lost;
        uint32_t window;
        const char *why;
    };
    auto run = [&](std::initializer_list<round> rounds) {
        for (const round &r : rounds) {
            uint32_t asked = (r.asked == W) ? w.window : r.asked;
            uct_srqud_chunk_wnd_update(&w, asked,
                                       (r.arrived < 0) ? asked : r.arrived,
                                       r.fin_lost, 512);
            EXPECT_EQ(r.window, w.window) << r.why;
        }
    };

    uct_srqud_chunk_wnd_init(&w, 512);
    run({{W, 490, 0, 512, "random loss under an eighth: unchanged"},
         {W, 60, 0, 256, "a burst that overflowed a queue: half"},
         {W, 60, 0, 128, "again"},
         {W, 2, 0, 64, "again"}, {W, 2, 0, 32, "again"},
         {W, 2, 0, floor, "down to the floor"},
         {W, 0, 0, floor, "not below it"},
         {W, -1, 0, floor + step, "a full round: a few receives more"},
         {W, -1, 1, floor + 2 * step, "all arrived, the ZFIN late: no cut"},
         {10, -1, 0, floor + 2 * step, "the transfer's tail says nothing"},
         {0, 0, 1, floor + 2 * step, "nor does a round that asked nothing"}});
    w.window = 48;
    run({{W, 45, 1, 24, "little lost, but the ZFIN too: half"}});

    /* below the last cut's level it doubles back, up to the queue */
    w.window = 100;
    w.thresh = 400;
    run({{W, -1, 0, 200, "double"}, {W, -1, 0, 400, "up to the level"},
         {W, -1, 0, 400 + step, "then a few a round"}});
    uct_srqud_chunk_wnd_init(&w, 500);
    uct_srqud_chunk_wnd_update(&w, 500, 500, 0, 500);
    EXPECT_EQ(500u, w.window) << "never beyond the receive queue";

    /* a queue smaller than the floor is the floor */
    uct_srqud_chunk_wnd_init(&w, 8);
    uct_srqud_chunk_wnd_update(&w, 8, 0, 0, 8);
    EXPECT_EQ(8u, w.window);
}


/*
 * A path with a queue: the source sends each round as one burst; the
 * first 40 packets fit the queue (and what drains meanwhile), later ones
 * mostly do not (1 in 20 passes), as a token-bucket shaper does. Every
 * lost chunk shifts the rest out of place. With a fixed round of the
 * whole receive queue (512) nearly everything is sent again and again, and
 * the round's ZFIN is lost in the same queue; the window brings rounds
 * down to what the queue passes. Either way the memory must end equal to
 * the source.
 */
namespace {

struct shaped_run {
    uint64_t sent   = 0;
    uint64_t rounds = 0;
    uint64_t time   = 0; /* in round trips */
};

shaped_run run_shaped(uint32_t nchunks, uint32_t depth, bool adapt)
{
    std::mt19937 rng(777);
    std::uniform_real_distribution<double> u(0, 1);
    uct_srqud_chunk_rx_t rx;
    shaped_run r;
    uct_srqud_chunk_wnd_t wnd;
    uct_srqud_chunk_wnd_init(&wnd, depth);

    EXPECT_EQ(0, uct_srqud_chunk_rx_init(&rx, nchunks, depth));
    std::vector<int64_t> memory(nchunks, -1);
    std::vector<uint32_t> buf(depth), order(depth);
    std::vector<uct_srqud_chunk_move_t> moves(UCT_SRQUD_CHUNK_MOVES_MAX(depth));

    while (!uct_srqud_chunk_rx_done(&rx) && (r.rounds < 20000)) {
        ++r.rounds;
        if (rx.count < wnd.window) {
            uct_srqud_chunk_rx_plan(&rx, buf.data(), wnd.window - rx.count);
        }
        uint32_t n = uct_srqud_chunk_rx_order(&rx, order.data(), wnd.window);
        uint32_t arrived = 0;
        for (uint32_t i = 0; i < n; ++i) {
            ++r.sent;
            if ((i >= 40) && (u(rng) >= 0.05)) {
                continue;
            }
            if (rx.count == 0) {
                break;
            }
            int in_place;
            uint32_t slot = uct_srqud_chunk_rx_complete(&rx, order[i], 1,
                                                        &in_place);
            memory[slot] = order[i];
            ++arrived;
        }
        /* the source's ZFIN goes behind the burst, through the same
         * queue: lost with the tail of an oversized burst, the round ends
         * by the sink's timer (RTO_MAX, 50 round trips of 20 ms) */
        const bool fin_lost = (n > 40) && (u(rng) >= 0.05);
        r.time += fin_lost ? 50 : 1;
        uint32_t nm = uct_srqud_chunk_rx_settle(&rx, moves.data());
        apply_moves(moves, nm, memory);
        if (adapt) {
            uct_srqud_chunk_wnd_update(&wnd, n, arrived, fin_lost, depth);
        }
    }

    EXPECT_TRUE(uct_srqud_chunk_rx_done(&rx)) << r.rounds << " rounds";
    for (uint32_t c = 0; c < nchunks; ++c) {
        EXPECT_EQ((int64_t)c, memory[c]) << "chunk " << c;
        if (memory[c] != (int64_t)c) {
            break;
        }
    }
    uct_srqud_chunk_rx_cleanup(&rx);
    return r;
}

} // namespace


TEST(srqud_chunk, window_follows_a_shaped_path)
{
    const uint32_t nchunks = 4096, depth = 512;
    shaped_run fixed   = run_shaped(nchunks, depth, false);
    shaped_run adapted = run_shaped(nchunks, depth, true);

    std::cout << "[ INFO     ] 4096 chunks through a 40-packet queue: fixed "
              << "rounds of 512 sent " << fixed.sent << " in " << fixed.rounds
              << " rounds, " << fixed.time << " round trips; the window sent "
              << adapted.sent << " in " << adapted.rounds << " rounds, "
              << adapted.time << " round trips" << std::endl;
    /* the window sends each chunk about once, and its rounds end by the
     * source's ZFIN, not by the sink's timer */
    EXPECT_LT(adapted.sent, nchunks * 3 / 2);
    EXPECT_LT(adapted.sent * 4, fixed.sent);
    EXPECT_LT(adapted.time * 4, fixed.time);
}
