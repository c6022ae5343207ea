/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * UCX_SRQUD_SHARE on a real device: interfaces of one md on several
 * workers, each worker driven by a thread of its own, as an MPI+threads
 * code drives its UCP workers. With srq they share one SRQ and receive
 * pool; the pool's accounting (every buffer free, posted or lent to an
 * interface) is checked after traffic under loss, after a worker stalled
 * and after a worker was destroyed in the middle of its traffic.
 */

#include "srqud_fixture.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

using namespace srqud_test;

namespace {

const uint8_t AM_ID = 2;

/* The device queues this process has mapped (kB): the uverbs mappings of
 * its QPs, CQs and SRQs, as the kernel lists them */
unsigned long mapped_queues_kb()
{
    char line[512];
    unsigned long v, kb = 0;
    bool in_q = false;
    FILE *f = fopen("/proc/self/smaps", "r");

    while ((f != nullptr) && (fgets(line, sizeof(line), f) != nullptr)) {
        const char *colon = strchr(line, ':');
        if (strchr(line, '-') && ((colon == nullptr) ||
                                  (strchr(line, ' ') < colon))) {
            in_q = (strstr(line, "/dev/infiniband/uverbs") != nullptr);
        } else if (in_q && (sscanf(line, "Size: %lu kB", &v) == 1)) {
            kb += v;
        }
    }
    if (f != nullptr) {
        fclose(f);
    }
    return kb;
}


/* Sender i -> receiver i, each on a worker of its own: the receivers on
 * workers of one md (the process under test), the senders on workers of
 * another (its peers) */
struct lane {
    uct_ctx                rx_ctx, tx_ctx;
    std::unique_ptr<iface> rx, tx;
    uct_ep_h               ep = nullptr;
    am_log                 log{1};
    uint64_t               sent = 0;
    std::atomic<bool>      done{false};
};


class share : public ::testing::Test {
protected:
    /* the owners' md and @a n lanes; call through ASSERT_NO_FATAL_FAILURE */
    void open_lanes(unsigned n)
    {
        if (rx_owner.md == nullptr) {
            ASSERT_EQ(UCS_OK, rx_owner.init());
            ASSERT_EQ(UCS_OK, tx_owner.init());
        }
        for (unsigned i = 0; i < n; ++i) {
            ASSERT_NO_FATAL_FAILURE(open_lane());
        }
    }

    /* one more lane: its two workers, interfaces and the endpoint */
    void open_lane()
    {
        lanes.emplace_back(new lane);
        lane &l = *lanes.back();
        ASSERT_EQ(UCS_OK, l.rx_ctx.init_worker(rx_owner));
        ASSERT_EQ(UCS_OK, l.tx_ctx.init_worker(tx_owner));
        l.rx.reset(new iface(l.rx_ctx));
        l.tx.reset(new iface(l.tx_ctx));
        ASSERT_EQ(UCS_OK, l.rx->open());
        ASSERT_EQ(UCS_OK, l.tx->open());
        ASSERT_EQ(UCS_OK, l.log.attach(*l.rx, AM_ID));
        ASSERT_EQ(UCS_OK, l.tx->connect(*l.rx, &l.ep));
    }

    /* Lane @a l's thread: sends @a n messages of @a length, progressing
     * its sender, and its receiver whenever @a may_receive says so, until
     * the receiver has them all; at most @a seconds */
    static void run(lane &l, uint64_t n, size_t length,
                    std::function<bool()> may_receive, int seconds = 300)
    {
        auto end = std::chrono::steady_clock::now() +
                   std::chrono::seconds(seconds);
        while ((l.log.count < n) && (std::chrono::steady_clock::now() < end)) {
            for (int k = 0; (k < 8) && (l.sent < n); ++k) {
                if (send_seq_bcopy(l.ep, AM_ID, l.sent + 1, length) < 0) {
                    break; /* out of resources: progress first */
                }
                ++l.sent;
            }
            l.tx->progress();
            if (may_receive()) {
                l.rx->progress();
            }
        }
        l.done = true;
    }

    /* every one of @a n messages arrived once, in order, intact */
    static void expect_arrived(const lane &l, uint64_t n)
    {
        EXPECT_EQ(n, l.log.count);
        EXPECT_EQ(0u, l.log.bad);
        EXPECT_TRUE(l.log.in_order());
    }

    static void expect_accounted(const uct_srqud_iface_stats_t &st)
    {
        EXPECT_EQ(st.srq_buffers, st.srq_free + st.srq_posted + st.srq_lent)
                << "free " << st.srq_free << " posted " << st.srq_posted
                << " lent " << st.srq_lent;
        EXPECT_EQ(0ul, st.srq_lost);
    }

    void close_lane(lane &l)
    {
        if (l.ep != nullptr) {
            uct_ep_destroy(l.ep);
            l.ep = nullptr;
        }
        l.tx.reset();
        l.rx.reset();
    }

    void TearDown() override
    {
        for (auto &l : lanes) {
            close_lane(*l);
        }
        lanes.clear();
    }

    /* before the contexts: set until the end of the test */
    std::vector<std::unique_ptr<env_guard>> envs;
    uct_ctx                                 rx_owner, tx_owner;
    std::vector<std::unique_ptr<lane>>      lanes;
};


/* The receive memory of srq is that of one interface, whatever the number
 * of workers; pd and td give each worker its own */
TEST_F(share, pool_per_md_and_port)
{
    for (const char *mode : {"srq", "pd", "td"}) {
        SCOPED_TRACE(mode);
        env_guard e("UCX_SRQUD_SHARE", mode);
        {
            ASSERT_NO_FATAL_FAILURE(open_lanes(4));
            uct_srqud_iface_stats_t one = srqud_stats(lanes[0]->rx->handle);
            for (auto &l : lanes) {
                uct_srqud_iface_stats_t st = srqud_stats(l->rx->handle);
                expect_accounted(st);
                if (!strcmp(mode, "srq")) {
                    EXPECT_EQ(4u, st.srq_users);
                    EXPECT_EQ(2u, st.share);
                } else {
                    EXPECT_EQ(1u, st.srq_users);
                    /* Soft-RoCE has no thread domains: td falls back to pd
                     * (a device with them reports td) */
                    EXPECT_TRUE((st.share == 0) ||
                                (!strcmp(mode, "td") && (st.share == 1)));
                }
                /* each pool made the same buffers, shared or not */
                EXPECT_EQ(one.srq_buffers, st.srq_buffers);
                EXPECT_EQ(one.srq_posted, st.srq_posted);
            }
            TearDown();
        }
    }
}


TEST_F(share, unknown_value_fails_config_read)
{
    env_guard e("UCX_SRQUD_SHARE", "threads");
    ASSERT_EQ(UCS_OK, rx_owner.init());
    uct_iface_config_t *config = nullptr;
    EXPECT_NE(UCS_OK, uct_md_iface_config_read(rx_owner.md, "srqud", NULL,
                                               NULL, &config));
    if (config != nullptr) {
        uct_config_release(config);
    }
}


/* Four threads, four workers on one shared pool, 2 % of the packets lost:
 * every message arrives once, in order, intact */
TEST_F(share, threads_under_loss)
{
    const uint64_t n = 3000;
    envs.emplace_back(new env_guard("UCX_SRQUD_SHARE", "srq"));
    envs.emplace_back(new env_guard("UCX_SRQUD_FAULT_TX_DROP", "0.02"));
    envs.emplace_back(new env_guard("UCX_LOG_LEVEL", "error"));
    ASSERT_NO_FATAL_FAILURE(open_lanes(4));

    std::vector<std::thread> threads;
    /* small to one MTU-sized packet each (am_bcopy: at most seg_size
     * less the network header) */
    const size_t lengths[] = {64, 500, 2000, 4000};
    for (unsigned i = 0; i < lanes.size(); ++i) {
        lane *lp = lanes[i].get();
        size_t length = lengths[i];
        threads.emplace_back([lp, n, length] {
            run(*lp, n, length, [] { return true; });
        });
    }
    for (auto &t : threads) {
        t.join();
    }

    uint64_t retransmits = 0;
    for (auto &l : lanes) {
        expect_arrived(*l, n);
        retransmits += srqud_stats(l->tx->handle).tx_retransmits;
        uct_srqud_iface_stats_t st = srqud_stats(l->rx->handle);
        EXPECT_EQ(4u, st.srq_users);
        expect_accounted(st);
    }
    EXPECT_GT(retransmits, 0u) << "no loss was injected";
}


/* One worker stops progressing while its peer keeps sending: it keeps at
 * most its share of the pool (the rest of its peer's packets wait for it),
 * and the other workers receive all of theirs meanwhile. When it
 * progresses again, its messages arrive, all of them, in order. */
TEST_F(share, stalled_worker_keeps_its_share)
{
    const uint64_t n = 2000;
    envs.emplace_back(new env_guard("UCX_SRQUD_SHARE", "srq"));
    envs.emplace_back(new env_guard("UCX_SRQUD_STALLED_MAX", "64"));
    /* stalled three times as long as a peer may stay silent: its repeated
     * acks must keep its sender from declaring it dead */
    envs.emplace_back(new env_guard("UCX_SRQUD_RTO_MAX", "100ms"));
    envs.emplace_back(new env_guard("UCX_SRQUD_TIMEOUT", "1s"));
    ASSERT_NO_FATAL_FAILURE(open_lanes(3));

    auto stall_end = std::chrono::steady_clock::now() +
                     std::chrono::seconds(3);
    std::atomic<unsigned> others_done{0};
    std::atomic<bool> stalled_while_others_ran{false};
    std::vector<std::thread> threads;
    for (unsigned i = 0; i < lanes.size(); ++i) {
        lane *lp = lanes[i].get();
        if (i == 0) {
            threads.emplace_back([&, lp, n] {
                run(*lp, n, 1024, [&] {
                    if ((others_done < lanes.size() - 1) ||
                        (std::chrono::steady_clock::now() < stall_end)) {
                        return false;
                    }
                    stalled_while_others_ran = true;
                    return true;
                });
            });
        } else {
            threads.emplace_back([&, lp, n] {
                run(*lp, n, 1024, [] { return true; });
                ++others_done;
            });
        }
    }
    for (auto &t : threads) {
        t.join();
    }

    EXPECT_TRUE(stalled_while_others_ran);
    for (auto &l : lanes) {
        expect_arrived(*l, n);
        expect_accounted(srqud_stats(l->rx->handle));
    }
    uct_srqud_iface_stats_t st0 = srqud_stats(lanes[0]->rx->handle);
    EXPECT_GT(st0.rx_stalled_dropped, 0ul)
            << "the stalled worker never reached its share";
    EXPECT_EQ(0ul, srqud_stats(lanes[0]->tx->handle).ep_failures)
            << "the stalled worker's peer gave it up";
    for (unsigned i = 1; i < lanes.size(); ++i) {
        EXPECT_EQ(0ul, srqud_stats(lanes[i]->rx->handle).rx_stalled_dropped);
    }
}


/* A worker (its interface) destroyed while its peer still sends, and
 * another one opened meanwhile: the others finish, and no buffer of the
 * shared pool is lost */
TEST_F(share, worker_destroyed_mid_traffic)
{
    const uint64_t n = 3000;
    envs.emplace_back(new env_guard("UCX_SRQUD_SHARE", "srq"));
    envs.emplace_back(new env_guard("UCX_SRQUD_FAULT_TX_DROP", "0.01"));
    envs.emplace_back(new env_guard("UCX_LOG_LEVEL", "error"));
    ASSERT_NO_FATAL_FAILURE(open_lanes(3));

    std::atomic<bool> destroyed{false};
    std::vector<std::thread> threads;
    for (unsigned i = 0; i < lanes.size(); ++i) {
        lane *lp = lanes[i].get();
        if (i == 1) {
            threads.emplace_back([&, lp] {
                /* half way through: its receiver goes away, its sender
                 * keeps the endpoint and sends on into the void */
                run(*lp, n / 2, 256, [] { return true; });
                lp->rx.reset();
                destroyed = true;
                auto end = std::chrono::steady_clock::now() +
                           std::chrono::seconds(2);
                while (std::chrono::steady_clock::now() < end) {
                    (void)send_seq_bcopy(lp->ep, AM_ID, ++lp->sent, 256);
                    lp->tx->progress();
                }
            });
        } else {
            threads.emplace_back([&, lp, n] {
                run(*lp, n, 256, [] { return true; });
            });
        }
    }

    /* a new worker while the others run */
    while (!destroyed) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_NO_FATAL_FAILURE(open_lane());
    run(*lanes.back(), n, 256, [] { return true; });

    for (auto &t : threads) {
        t.join();
    }

    EXPECT_EQ(n / 2, lanes[1]->log.count);
    for (unsigned i : {0u, 2u, 3u}) {
        SCOPED_TRACE(i);
        expect_arrived(*lanes[i], n);
    }

    /* what is lent is what the remaining interfaces hold, no more: read
     * with their async threads held off, so that none takes a late
     * duplicate in between */
    async_hold h0(lanes[0]->rx_ctx.async), h2(lanes[2]->rx_ctx.async),
               h3(lanes[3]->rx_ctx.async);
    uct_srqud_iface_stats_t st = srqud_stats(lanes[0]->rx->handle);
    EXPECT_EQ(3u, st.srq_users);
    expect_accounted(st);
    unsigned long taken = 0;
    for (unsigned i : {0u, 2u, 3u}) {
        taken += srqud_stats(lanes[i]->rx->handle).rx_taken;
    }
    EXPECT_EQ(srqud_stats(lanes[0]->rx->handle).srq_lent, taken);
}


/* The zero-copy pool stays per worker (issue 11: measured before deciding
 * whether to share it): its QPs are made on demand, one per transfer the
 * worker receives at once, and kept; a worker that receives none has
 * none. Three workers sinking gets at once (2, 1 and 0 at a time), every
 * byte checked; what a pool QP maps is printed (queues only: a transfer
 * lands in the user's memory) */
TEST_F(share, zcopy_pool_per_worker)
{
    const size_t length = (1 << 20) + 77;
    const unsigned gets[] = {2, 1, 0};
    envs.emplace_back(new env_guard("UCX_SRQUD_SHARE", "srq"));
    ASSERT_NO_FATAL_FAILURE(open_lanes(3));

    /* the measured side (rx) gets from its peer: it is the data sink */
    std::vector<uct_ep_h> back(lanes.size(), nullptr);
    std::vector<std::unique_ptr<region>> remote, mine;
    for (unsigned i = 0; i < lanes.size(); ++i) {
        ASSERT_EQ(UCS_OK, lanes[i]->rx->connect(*lanes[i]->tx, &back[i]));
        for (unsigned k = 0; k < gets[i]; ++k) {
            remote.emplace_back(new region(lanes[i]->tx_ctx, length,
                                           UCT_MD_MEM_ACCESS_ALL));
            mine.emplace_back(new region(lanes[i]->rx_ctx, length,
                                         UCT_MD_MEM_ACCESS_ALL));
            fill_pattern(remote.back()->data(), length, 100 * i + k + 1);
        }
    }
    unsigned long kb_before = mapped_queues_kb();

    std::vector<std::thread> threads;
    std::atomic<unsigned> completed{0}, failed{0};
    unsigned first = 0;
    for (unsigned i = 0; i < lanes.size(); ++i) {
        lane *lp = lanes[i].get();
        uct_ep_h ep = back[i];
        unsigned n = gets[i], base = first;
        first += n;
        threads.emplace_back([&, lp, ep, n, base] {
            std::vector<comp_t> comps(n);
            for (unsigned k = 0; k < n; ++k) {
                region &r = *remote[base + k], &m = *mine[base + k];
                uct_iov_t iov = {m.data(), length, m.memh, 0, 1};
                ucs_status_t st;
                /* both posted before either completes: two at once */
                while ((st = rma_zcopy(ep, true, &iov, r.addr(), r.rkey.rkey,
                                       &comps[k].super)) ==
                       UCS_ERR_NO_RESOURCE) {
                    lp->rx->progress();
                    lp->tx->progress();
                }
                if (st != UCS_INPROGRESS) {
                    ++failed;
                    comps[k].calls = 1;
                }
            }
            auto end = std::chrono::steady_clock::now() +
                       std::chrono::seconds(120);
            auto done = [&] {
                for (auto &c : comps) {
                    if (c.calls == 0) {
                        return false;
                    }
                }
                return true;
            };
            while (!done() && (std::chrono::steady_clock::now() < end)) {
                lp->rx->progress();
                lp->tx->progress();
            }
            for (auto &c : comps) {
                completed += (c.calls == 1) && (c.super.status == UCS_OK);
            }
        });
    }
    for (auto &t : threads) {
        t.join();
    }
    EXPECT_EQ(0u, failed);
    EXPECT_EQ(3u, completed);
    for (unsigned k = 0; k < remote.size(); ++k) {
        EXPECT_EQ(checksum(remote[k]->data(), length),
                  checksum(mine[k]->data(), length)) << "get " << k;
    }

    unsigned pool_qps = 0;
    for (unsigned i = 0; i < lanes.size(); ++i) {
        uct_srqud_iface_stats_t st = srqud_stats(lanes[i]->rx->handle);
        SCOPED_TRACE(i);
        EXPECT_EQ(gets[i], st.zcopy_xfers);
        /* at most one pool QP per transfer at once, kept afterwards (one
         * that took a stale chunk is destroyed: fewer, never more) */
        EXPECT_LE(st.zcopy_pool_peak, gets[i]);
        EXPECT_LE(st.zcopy_pool_qps, st.zcopy_pool_peak);
        if (gets[i] > 0) {
            EXPECT_GE(st.zcopy_pool_peak, 1u);
        }
        /* the peers sent chunks: they made no pool QP of their own */
        EXPECT_EQ(0u, srqud_stats(lanes[i]->tx->handle).zcopy_pool_qps);
        pool_qps += st.zcopy_pool_qps;
    }
    unsigned long kb_after = mapped_queues_kb();
    if (pool_qps > 0) {
        std::printf("[ info ] %u pool QPs with their CQs mapped %lu kB of "
                    "device queues, %lu kB each (ZCOPY_RQ_DEPTH receives)\n",
                    pool_qps, kb_after - kb_before,
                    (kb_after - kb_before) / pool_qps);
    }
    for (auto ep : back) {
        uct_ep_destroy(ep);
    }
}

} // namespace
