/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * A host floods a real interface while a real sender's traffic flows to
 * it: forged connection requests, refused puts, wrong tokens and new
 * incarnations of a connection (hijack attempts), from the fake peer of
 * srqud_raw.h. On one host in the device tests (a few seconds); across the
 * two-host wire from the far host for a minute (test/wire/run.sh flood).
 */

#include "srqud_raw.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

using namespace srqud_test;

namespace {

/* Resident set of this process, bytes */
long rss_bytes()
{
    long pages = 0, resident = 0;
    FILE *f    = fopen("/proc/self/statm", "r");

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) {
            resident = 0;
        }
        fclose(f);
    }
    return resident * sysconf(_SC_PAGESIZE);
}


unsigned flood_seconds()
{
    const char *s = getenv("SRQUD_FLOOD_SECONDS");
    return (s != NULL) ? (unsigned)atoi(s) : 5;
}


/* What the flood sent, per kind */
struct flood_counts {
    unsigned long creqs      = 0; /* new connections and new incarnations */
    unsigned long puts       = 0; /* refused: unknown rkey */
    unsigned long bad_tokens = 0;
    unsigned long lost       = 0; /* sent, never received (UD) */
};


/*
 * The flooder: one connection of its own (refused puts on it, wrong
 * tokens addressed to it, new incarnations of it), and connection
 * requests from ever new ep ids. A connection takes at most 65,536 wrong
 * tokens before the interface ends it: the flooder moves to a new one
 * before, so that every wrong token is counted as such.
 */
class flooder {
public:
    flooder(raw_sender &p, iface &r) : peer(p), receiver(r) {}

    bool connect()
    {
        const uint32_t id = next_id++;
        conn.reset(new fake_conn(peer, receiver, id, 0x3a000000 + id, 1));
        ++connections;
        psn        = 1;
        bad_tokens = 0;
        return conn->connect();
    }

    /* One burst: 8 of each kind, the receiver progressed until it has
     * them all (or a while passed: those are lost) */
    bool burst(flood_counts &c)
    {
        const unsigned long before = srqud_stats(receiver.handle).rx_packets;
        const uint32_t conn_sn     = 1;
        unsigned sent              = 0;
        uct_srqud_rma_hdr_t rma;
        uint64_t data              = 0;

        if ((bad_tokens >= 60000) && !connect()) {
            return false;
        }

        memset(&rma, 0, sizeof(rma));
        rma.remote_addr = 0x1000;
        rma.rkey        = 0xdeadbeef;
        rma.length      = sizeof(data);
        for (int i = 0; i < 8; ++i) {
            /* a forged connection request */
            const uint32_t id  = next_id++;
            uct_srqud_neth_t h = make_neth(UCT_SRQUD_PACKET_FLAG_CTL |
                                           UCT_SRQUD_PACKET_FLAG_REL,
                                           UCT_SRQUD_CTL_CREQ,
                                           UCT_SRQUD_EP_ID_NONE, id, 0,
                                           0x0f000000 + id);
            peer.send(packet(h, &conn_sn, sizeof(conn_sn)));
            /* a put to memory nobody registered, in sequence */
            peer.send(conn->reliable(UCT_SRQUD_PACKET_FLAG_CTL,
                                     UCT_SRQUD_CTL_RMA_PUT, psn++, &rma,
                                     sizeof(rma), &data, sizeof(data)));
            /* a wrong token on the flooder's connection */
            h = make_neth(UCT_SRQUD_PACKET_FLAG_AM | UCT_SRQUD_PACKET_FLAG_REL,
                          0, conn->passive_id, conn->ep_id, psn,
                          conn->token ^ (1u << (i + 3)));
            h.am_id = am_id;
            peer.send(packet(h, &data, sizeof(data)));
            /* a new incarnation of the flooder's connection */
            const uint32_t sn = ++incarnation;
            h = make_neth(UCT_SRQUD_PACKET_FLAG_CTL | UCT_SRQUD_PACKET_FLAG_REL,
                          UCT_SRQUD_CTL_CREQ, UCT_SRQUD_EP_ID_NONE,
                          conn->ep_id, 0, 0x0e000000 + sn);
            peer.send(packet(h, &sn, sizeof(sn)));
            sent += 4;
            if (::testing::Test::HasFatalFailure()) {
                return false;
            }
        }
        c.creqs      += 16;
        c.puts       += 8;
        c.bad_tokens += 8;
        bad_tokens   += 8;

        for (unsigned long n = 0;
             (n < 2000000) &&
             (srqud_stats(receiver.handle).rx_packets < before + sent); ++n) {
            receiver.progress();
            peer.drain([](const datagram&) {});
        }
        c.lost += before + sent -
                  std::min(before + sent,
                           srqud_stats(receiver.handle).rx_packets);
        return true;
    }

    raw_sender                 &peer;
    iface                      &receiver;
    std::unique_ptr<fake_conn> conn;
    uint32_t                   next_id     = 1000;
    uint32_t                   incarnation = 1;
    uint16_t                   psn         = 1;
    unsigned long              bad_tokens  = 0;
    unsigned                   connections = 0; /* each keeps its refusals */
};


/* The real sender's checksummed AMs, a few at a time */
struct good_traffic {
    /* sends what the window takes, up to @a max messages */
    void send(uct_ep_h ep, iface &sender, unsigned max)
    {
        std::vector<uint8_t> msg(300);
        for (unsigned i = 0; i < max; ++i) {
            const size_t len = 8 + (next * 37) % (msg.size() - 8);
            fill_seq_msg(msg.data(), len, next);
            const ssize_t ret = send_seq_bcopy(ep, am_id, next, len);
            if (ret == UCS_ERR_NO_RESOURCE) {
                sender.progress();
                return;
            }
            ASSERT_EQ((ssize_t)len, ret) << "seq " << next;
            sum += checksum(msg.data(), len);
            ++next;
        }
    }

    uint64_t next = 1;
    uint64_t sum  = 0;
};

} // namespace


/*
 * Good traffic intact beside a flood, every attack packet counted where it
 * belongs, and what the flood makes the interface hold within its
 * settings: PASSIVE_MAX passive eps, RMA_REFUSALS_MAX records on the
 * flooder's connection, a resident set that grows by no more than those
 * and the receive pool's bound (SRQ_MAX_SIZE). The good traffic's rate
 * with and without the flood is printed: one thread runs both the flood
 * and the traffic here, so it says how much the flood costs this process,
 * not a property to assert.
 */
TEST(srqud_flood, good_traffic_beside_a_flood)
{
    const unsigned passive_max = 256, refusals_max = 16;
    env_guard pmax("UCX_SRQUD_PASSIVE_MAX", "256");
    env_guard rmax("UCX_SRQUD_RMA_REFUSALS_MAX", "16");
    env_guard srq_max("UCX_SRQUD_SRQ_MAX_SIZE", "2048");
    /* the forged requests' eps are idle after 4 x RTO_MAX */
    env_guard rto_max("UCX_SRQUD_RTO_MAX", "100ms");
    const char *inject = getenv("SRQUD_TEST_INJECT_DEVICE");

    uct_ctx rx_ctx, tx_ctx;
    ASSERT_UCS_OK(rx_ctx.init());
    ASSERT_UCS_OK(tx_ctx.init((inject != NULL) ? inject : test_device()));
    iface receiver(rx_ctx), sender(tx_ctx);
    ASSERT_UCS_OK(receiver.open());
    ASSERT_UCS_OK(sender.open());
    am_log log(1);
    ASSERT_UCS_OK(log.attach(receiver, am_id));
    uct_ep_h ep;
    ASSERT_UCS_OK(sender.connect(receiver, &ep));
    raw_sender peer;
    ASSERT_NO_FATAL_FAILURE(peer.init(rx_ctx.dev_name, receiver.dev_addr,
                                      receiver.iface_addr));
    flooder flood(peer, receiver);
    ASSERT_TRUE(flood.connect());

    /* clean: the rate of the good traffic alone */
    good_traffic good;
    const unsigned seconds = flood_seconds();
    auto start             = std::chrono::steady_clock::now();
    while (!expired(start, 1000)) {
        ASSERT_NO_FATAL_FAILURE(good.send(ep, sender, 16));
        sender.progress();
        receiver.progress();
    }
    const double clean_rate = log.count / 1.0;

    const uct_srqud_iface_stats_t s0 = srqud_stats(receiver.handle);
    const long rss0                  = rss_bytes();
    const unsigned before            = log.count;
    unsigned long peak_passive       = 0, peak_records = 0;
    flood_counts c;
    start = std::chrono::steady_clock::now();
    while (!expired(start, seconds * 1000)) {
        ASSERT_NO_FATAL_FAILURE(good.send(ep, sender, 16));
        sender.progress();
        receiver.progress();
        ASSERT_TRUE(flood.burst(c));
        const uct_srqud_iface_stats_t s = srqud_stats(receiver.handle);
        peak_passive = std::max(peak_passive, (unsigned long)s.passive_eps);
        peak_records = std::max(peak_records,
                                (unsigned long)s.rma_refusal_records);
    }
    const double flood_rate = (log.count - before) / (double)seconds;
    const long rss_growth   = rss_bytes() - rss0;

    /* everything the good sender sent arrives, whole and in order */
    const uint64_t sent = good.next - 1;
    EXPECT_TRUE(progress_until(sender, [&] {
        receiver.progress();
        return log.count >= sent;
    }, 200000000ul)) << log.count << " of " << sent << ": "
                     << stats_line(srqud_stats(receiver.handle));
    const uct_srqud_iface_stats_t s1 = srqud_stats(receiver.handle);
    EXPECT_EQ(sent, log.count);
    EXPECT_EQ(0u, log.bad);
    EXPECT_TRUE(log.in_order());
    EXPECT_EQ(good.sum, log.sum);
    EXPECT_EQ(0u, s1.ep_failures);

    printf("flood %u s: %lu requests, %lu refused puts, %lu wrong tokens, "
           "%lu lost; good traffic %.0f msg/s clean, %.0f msg/s flooded "
           "(%.2fx); passive eps at most %lu, refusal records at most %lu; "
           "RSS +%ld KiB\n", seconds, c.creqs, c.puts, c.bad_tokens, c.lost,
           clean_rate, flood_rate, clean_rate / std::max(flood_rate, 1.0),
           peak_passive, peak_records, rss_growth / 1024);

    /* every attack counted where it belongs (UD may lose a few: at most
     * one in a hundred, in any kind) */
    const unsigned long slack = (c.creqs + c.puts + c.bad_tokens) / 100;
    EXPECT_LE(c.lost, slack);
    EXPECT_GE(s1.rx_bad_token - s0.rx_bad_token + slack, c.bad_tokens);
    EXPECT_GE(s1.rma_refused - s0.rma_refused + slack, c.puts);
    EXPECT_GE((s1.passive_eps + s1.passive_reaped + s1.passive_refused) -
              (s0.passive_eps + s0.passive_reaped + s0.passive_refused) +
              slack, c.creqs);
    EXPECT_EQ(s0.token_resets, s1.token_resets);

    /* and held within the settings: the flooder's connections keep up to
     * RMA_REFUSALS_MAX refusals each */
    EXPECT_LE(peak_passive, passive_max);
    EXPECT_LE(peak_records, (unsigned long)refusals_max * flood.connections);
    EXPECT_GT(s1.rma_refusals_merged, s0.rma_refusals_merged);
    EXPECT_LT(rss_growth, 64l << 20);

    uct_ep_destroy(ep);
}
