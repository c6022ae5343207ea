/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Bad input on a real device: malformed packets from a raw verbs UD QP,
 * invalid configuration values, and a second process as the peer.
 */

#include "srqud_fixture.h"

#include "srqud_peek.h"
#include "srqud_raw.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>

using namespace srqud_test;


TEST(srqud_robust, malformed_packets_are_dropped)
{
    uct_ctx ctx;
    ASSERT_UCS_OK(ctx.init());
    iface receiver(ctx);
    ASSERT_UCS_OK(receiver.open());

    am_log c;
    for (uint8_t id = 0; id < UCT_AM_ID_MAX; ++id) {
        ASSERT_UCS_OK(c.attach(receiver, id));
    }

    raw_sender raw;
    ASSERT_NO_FATAL_FAILURE(raw.init(ctx.dev_name, receiver.dev_addr,
                                     receiver.iface_addr));

    uint8_t pkt[256];
    uct_srqud_neth_t neth;
    memset(&neth, 0, sizeof(neth));
    neth.magic      = UCT_SRQUD_MAGIC;
    neth.flags      = UCT_SRQUD_PACKET_FLAG_AM;
    neth.am_id      = 3;
    neth.dest_ep_id = UCT_SRQUD_EP_ID_NONE;

    /* every drop below is counted, under the counter of its reason */
    const uct_srqud_iface_stats_t s0 = srqud_stats(receiver.handle);

    /* A well-formed packet must reach the interface before the next goes:
     * UD does not promise delivery, and a packet the device lost would fail
     * the counts below for a reason that is not srqud's. A loss is resent
     * (as the peer's reliability would) and said. */
    auto deliver = [&](const void *p, size_t len) {
        for (int attempt = 0; attempt < 3; ++attempt) {
            const unsigned long before = srqud_stats(receiver.handle).rx_packets;
            raw.send(p, len);
            if (progress_until(receiver, [&] {
                    return srqud_stats(receiver.handle).rx_packets > before;
                }, 2000000ul)) {
                return;
            }
            std::cout << "[ INFO     ] the device lost an injected packet; "
                         "resent" << std::endl;
        }
        ADD_FAILURE() << "an injected packet never reached the interface: "
                      << stats_line(srqud_stats(receiver.handle));
    };

    /* 1. too short to hold a header */
    memset(pkt, 0x5d, sizeof(pkt));
    raw.send(pkt, 5);
    /* 2. foreign magic */
    uct_srqud_neth_t bad = neth;
    bad.magic = 0x42;
    memcpy(pkt, &bad, sizeof(bad));
    raw.send(pkt, 100);
    /* 3. AM id out of range */
    bad       = neth;
    bad.am_id = 200;
    memcpy(pkt, &bad, sizeof(bad));
    raw.send(pkt, 100);
    /* 4. unknown flags */
    bad       = neth;
    bad.flags = 0xf0;
    memcpy(pkt, &bad, sizeof(bad));
    raw.send(pkt, 100);
    /* 5. zero-length packet */
    raw.send(pkt, 0);
    /* 6. a well-formed data packet from an unknown sender that never sent
     *    a connection request: dropped */
    uint64_t seq = 77;
    uct_srqud_neth_t data = neth;
    data.flags     = UCT_SRQUD_PACKET_FLAG_AM | UCT_SRQUD_PACKET_FLAG_REL;
    data.src_ep_id = 5;
    data.psn       = 1;
    memcpy(pkt, &data, sizeof(data));
    memcpy(pkt + sizeof(data), &seq, sizeof(seq));
    fill_pattern(pkt + sizeof(data) + 8, 100, seq);
    deliver(pkt, sizeof(data) + 8 + 100);

    EXPECT_TRUE(progress_until(receiver, [&] {
        return srqud_stats(receiver.handle).rx_dropped_malformed >=
               s0.rx_dropped_malformed + 5;
    })) << stats_line(srqud_stats(receiver.handle));
    for (int i = 0; i < 100000; ++i) {
        receiver.progress();
    }
    EXPECT_EQ(0u, c.count);
    const uct_srqud_iface_stats_t s1 = srqud_stats(receiver.handle);
    EXPECT_EQ(s0.rx_dropped_malformed + 5, s1.rx_dropped_malformed)
        << "cases 1-5 fail the header check";
    EXPECT_EQ(s0.rx_no_ep + 1, s1.rx_no_ep) << "case 6 has no endpoint";

    /* 7. the protocol done by hand: CREQ (psn 0, incarnation 9, token T),
     *    then the data (psn 1) twice (the second is a duplicate), then
     *    psn 3 (ahead of a gap: held, not delivered): exactly one delivery */
    const uint32_t token = 0x5eed1234, conn_sn = 9;
    uct_srqud_neth_t creq;
    memset(&creq, 0, sizeof(creq));
    creq.magic      = UCT_SRQUD_MAGIC;
    creq.flags      = UCT_SRQUD_PACKET_FLAG_CTL | UCT_SRQUD_PACKET_FLAG_REL;
    creq.ctl        = UCT_SRQUD_CTL_CREQ;
    creq.dest_ep_id = UCT_SRQUD_EP_ID_NONE;
    creq.src_ep_id  = 5;
    creq.psn        = 0;
    creq.token      = token;
    uint8_t creq_pkt[sizeof(creq) + sizeof(conn_sn)];
    memcpy(creq_pkt, &creq, sizeof(creq));
    memcpy(creq_pkt + sizeof(creq), &conn_sn, sizeof(conn_sn));
    deliver(creq_pkt, sizeof(creq_pkt));
    data.token = token;
    memcpy(pkt, &data, sizeof(data));
    deliver(pkt, sizeof(data) + 8 + 100);
    deliver(pkt, sizeof(data) + 8 + 100);
    data.psn = 3;
    memcpy(pkt, &data, sizeof(data));
    deliver(pkt, sizeof(data) + 8 + 100);

    ASSERT_TRUE(progress_until(receiver, [&] { return c.count >= 1; }));
    /* give any wrongly accepted packet a chance to show up */
    for (int i = 0; i < 100000; ++i) {
        receiver.progress();
    }
    EXPECT_EQ(1u, c.count);
    EXPECT_EQ(0u, c.bad);
    EXPECT_EQ(1u, srqud_stats(receiver.handle).rx_held)
        << stats_line(srqud_stats(receiver.handle));

    /* 8. an off-path sender that knows the addresses, the ep id and the
     *    next psn but not the token: psn 2 with another token, and a CREQ
     *    of the same incarnation with another token, are both dropped */
    uint64_t bad_token_before = srqud_stats(receiver.handle).rx_bad_token;
    data.psn   = 2;
    data.token = token ^ 0x100;
    memcpy(pkt, &data, sizeof(data));
    deliver(pkt, sizeof(data) + 8 + 100);
    creq.token = token ^ 1;
    memcpy(creq_pkt, &creq, sizeof(creq));
    deliver(creq_pkt, sizeof(creq_pkt));
    ASSERT_TRUE(progress_until(receiver, [&] {
        return srqud_stats(receiver.handle).rx_bad_token ==
               bad_token_before + 2;
    }));
    for (int i = 0; i < 100000; ++i) {
        receiver.progress();
    }
    EXPECT_EQ(1u, c.count);
    EXPECT_EQ(s1.rx_no_ep, srqud_stats(receiver.handle).rx_no_ep)
        << "a bad token is counted once, as a bad token";

    /* 9. psn 2 with the token fills the gap: 2, then the held 3 */
    data.token = token;
    memcpy(pkt, &data, sizeof(data));
    deliver(pkt, sizeof(data) + 8 + 100);
    ASSERT_TRUE(progress_until(receiver, [&] { return c.count >= 3; }))
        << c.count << " delivered; " << stats_line(srqud_stats(receiver.handle));
    EXPECT_EQ(3u, c.count);
    EXPECT_EQ(0u, c.bad);

    /* The interface still works for well-formed traffic */
    iface sender(ctx);
    ASSERT_UCS_OK(sender.open());
    uct_ep_h ep;
    ASSERT_UCS_OK(sender.connect(receiver, &ep));
    std::vector<uint8_t> payload(40);
    fill_pattern(payload.data(), payload.size(), 5);
    ASSERT_UCS_OK(uct_ep_am_short(ep, 3, 5, payload.data(), payload.size()));
    ASSERT_TRUE(progress_until(receiver, [&] { return c.count == 4; }));
    EXPECT_EQ(0u, c.bad);
    uct_ep_destroy(ep);
}


/* Zero-copy chunks carry no connection token: their pool QP takes a random
 * Q_Key per transfer, told only in the sink's ZGET/ZCTS. A chunk forged
 * with everything an off-path host can know (pool QP number, generation,
 * chunk number, length, the interfaces' constant Q_Key) is dropped by the
 * device: the get completes with the source's bytes and nothing landed
 * out of place. The control: the same chunk with the transfer's Q_Key
 * does land (so the first one was aimed right). */
TEST(srqud_robust, forged_chunks_without_the_transfers_qkey_are_dropped)
{
    iface_pair p;
    ASSERT_NO_FATAL_FAILURE(p.open_pair());
    raw_sender raw;
    ASSERT_NO_FATAL_FAILURE(raw.init(p.ctx.dev_name, p.sender->dev_addr,
                                     p.sender->iface_addr));
    const size_t length = 64 * 1024;

    for (int with_qkey = 0; with_qkey < 2; ++with_qkey) {
        region remote(p.ctx, length, UCT_MD_MEM_ACCESS_ALL);
        region mine(p.ctx, length, UCT_MD_MEM_ACCESS_ALL);
        fill_pattern(remote.data(), length, 11 + with_qkey);
        memset(mine.data(), 0, length);
        uct_srqud_iface_stats_t before = srqud_stats(p.sender->handle);

        /* the get's sink (this side) binds a pool QP and posts the round's
         * receives before the call returns. The source must send no chunk
         * before the forged one is in: nothing is progressed, and the
         * async thread, which would progress the peer after a tick, is
         * held off (one worker, one async context for both sides) */
        uct_iov_t iov = {mine.data(), length, mine.memh, 0, 1};
        comp_t c;
        async_hold hold(p.ctx.async);
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_get_zcopy(p.ep, &iov, 1, remote.addr(),
                                   remote.rkey.rkey, &c.super));
        /* what a host on the path read in the ZGET */
        srqud_peek_pool_qp_t pqp;
        ASSERT_EQ(1, srqud_peek_busy_pool_qp(p.sender->handle, &pqp));
        EXPECT_NE(UCT_SRQUD_QKEY, pqp.qkey);
        EXPECT_EQ(0u, pqp.qkey >> 31) << "a controlled Q_Key";

        /* chunk 0, tagged with the pool QP's generation (the top byte) */
        std::vector<uint8_t> junk(pqp.chunk, 0xa5);
        uint32_t imm = (uint32_t)pqp.gen << 24;
        ASSERT_NO_FATAL_FAILURE(raw.send_to(junk.data(), junk.size(),
                                            pqp.qp_num,
                                            with_qkey ? pqp.qkey :
                                                        UCT_SRQUD_QKEY,
                                            &imm));
        hold.release();

        ASSERT_TRUE(progress_until(*p.sender, [&] { return c.calls > 0; },
                                   400000000ul))
            << "the get never completed";
        uct_srqud_iface_stats_t after = srqud_stats(p.sender->handle);
        unsigned long landed = (after.zcopy_misplaced - before.zcopy_misplaced) +
                               (after.zcopy_stale - before.zcopy_stale);
        if (!with_qkey) {
            EXPECT_EQ(UCS_OK, c.super.status);
            EXPECT_EQ(checksum(remote.data(), length),
                      checksum(mine.data(), length));
            EXPECT_EQ(0ul, landed) << "a forged chunk reached the pool QP";
            EXPECT_EQ(1ul, after.zcopy_xfers - before.zcopy_xfers);
        } else {
            EXPECT_GT(landed, 0ul) << "the control chunk did not land: the "
                                      "test does not aim at the pool QP";
        }
    }
}


/* A peer that disappears: the endpoint reports UCS_ERR_ENDPOINT_TIMEOUT
 * through the error handler, the process goes on */
TEST(srqud_robust, dead_peer_is_an_endpoint_error)
{
    env_guard rto_min("UCX_SRQUD_RTO_MIN", "10ms");

    /* The peer: an interface that is opened, addressed, then closed (and a
     * 1 s peer timeout) */
    dead_peer_ep d;
    ASSERT_NO_FATAL_FAILURE(d.open());
    uct_ep_h ep = d.ep;

    uint64_t payload = 42;
    ASSERT_UCS_OK(uct_ep_am_short(ep, 1, 0, &payload, sizeof(payload)));

    comp_t comp;
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(ep, 0, &comp.super));

    /* 1 s timeout: bounded by iterations, not by a timed assertion */
    progress_until(*d.local, [&] { return d.errors.count > 0; }, 400000000ul);
    EXPECT_EQ(1u, d.errors.count);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, d.errors.status);
    EXPECT_EQ(ep, d.errors.ep);
    EXPECT_EQ(0, comp.super.count);           /* the flush completed... */
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, comp.super.status); /* ...with the error */
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT,
              uct_ep_am_short(ep, 1, 0, &payload, sizeof(payload)));
}


TEST(srqud_robust, invalid_config_fails_at_iface_open)
{
    uct_ctx ctx;
    ASSERT_UCS_OK(ctx.init());

    struct {
        const char   *var;
        const char   *value;
        ucs_status_t expected;
    } cases[] = {
        {"UCX_SRQUD_SRQ_SIZE",     "1",       UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_SRQ_SIZE",     "100000000", UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_TX_QUEUE_LEN", "2",       UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_TX_BATCH",     "0",       UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_TX_BATCH",     "65",      UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_TX_BATCH_AFTER", "129",   UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_TX_BATCH_AFTER", "-3",    UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_TX_BATCH_WAIT", "-1us",   UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_TX_BATCH_STEP", "1",      UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_TX_BATCH_STEP", "65",     UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_TX_CQ_MODERATION", "0",   UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_TX_CQ_MODERATION", "129", UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_GID_INDEX",    "4000",    UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_SEG_SIZE",     "65536",   UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_HOP_LIMIT",    "0",       UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_SL",           "16",      UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_AM_PACKETS",   "0",       UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_AM_PACKETS",   "5",       UCS_ERR_INVALID_PARAM},
        {"UCX_SRQUD_QUIET_POLLS",  "65",      UCS_ERR_INVALID_PARAM},
    };

    for (const auto &c : cases) {
        env_guard g(c.var, c.value);
        iface i(ctx);
        EXPECT_EQ(c.expected, i.open()) << c.var << "=" << c.value;
        EXPECT_EQ(nullptr, i.handle);
    }

    auto open_with = [&](const char *var, const char *value) {
        env_guard g(var, value);
        iface i(ctx);
        return i.open();
    };

    /* A message of AM_PACKETS packets must fit the send window */
    {
        env_guard w("UCX_SRQUD_TX_WINDOW", "2");
        env_guard t("UCX_SRQUD_ACK_THRESH", "1");
        env_guard b("UCX_SRQUD_BACK_ACK_EVERY", "1");
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  open_with("UCX_SRQUD_AM_PACKETS", "3"));
        EXPECT_EQ(UCS_OK, open_with("UCX_SRQUD_AM_PACKETS", "2"));
    }

    /* Values the parser cannot read fail when the config is read, and a
     * valid override works */
    EXPECT_NE(UCS_OK, open_with("UCX_SRQUD_SRQ_SIZE", "lots"));
    EXPECT_EQ(UCS_OK, open_with("UCX_SRQUD_SRQ_SIZE", "64"));
}


/* What a sender's retransmission did, for a failure's message */
static std::string sender_counters(iface &i)
{
    uct_srqud_iface_stats_t st = srqud_stats(i.handle);
    char buf[256];

    snprintf(buf, sizeof(buf), "tx_packets %lu retransmits %lu (fast %lu) "
             "timeouts %lu tx_errors %lu qp_resets %lu acks received via "
             "rx_packets %lu", st.tx_packets, st.tx_retransmits,
             st.tx_fast_retransmits, st.tx_timeouts, st.tx_errors,
             st.qp_resets, st.rx_packets);
    return buf;
}


/* Two processes, addresses exchanged over a pipe as UCP would exchange its
 * worker address out of band */
TEST(srqud_robust, two_processes_exchange_verified_messages)
{
    int to_parent[2], to_child[2];
    ASSERT_EQ(0, pipe(to_parent));
    ASSERT_EQ(0, pipe(to_child));
    const unsigned n = 3000; /* more than the SRQ holds */

    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        /* Child: receive n messages, report count/bad/checksum */
        close(to_parent[0]);
        close(to_child[1]);
        int rc = 1;
        {
            uct_ctx ctx;
            iface rx(ctx);
            am_log c(1);
            if ((ctx.init() == UCS_OK) && (rx.open() == UCS_OK) &&
                (c.attach(rx, 1) == UCS_OK)) {
                if (write_address(to_parent[1], rx)) {
                    /* a stall of 5 s says what the receiver saw, once: a
                     * sender that fails its ep cannot tell why */
                    unsigned last = 0;
                    auto since = std::chrono::steady_clock::now();
                    bool told = false;
                    progress_until(rx, [&] {
                        if (c.count != last) {
                            last  = c.count;
                            since = std::chrono::steady_clock::now();
                        } else if (!told &&
                                   (std::chrono::steady_clock::now() - since >
                                    std::chrono::seconds(5))) {
                            uct_srqud_iface_stats_t st = srqud_stats(rx.handle);
                            fprintf(stderr, "receiver stalled at %u of %u: rx_packets %lu "
                                    "duplicates %lu held %lu reorder_dropped %lu "
                                    "no_ep %lu malformed %lu rx_errors %lu acks_sent %lu "
                                    "tx_errors %lu qp_resets %lu srq_target %u\n",
                                    c.count, n, st.rx_packets, st.rx_duplicates,
                                    st.rx_held, st.rx_reorder_dropped, st.rx_no_ep,
                                    st.rx_dropped_malformed, st.rx_errors,
                                    st.acks_sent, st.tx_errors, st.qp_resets,
                                    st.srq_target);
                            told = true;
                        }
                        return c.count >= n;
                    }, 200000000ul);
                    uint64_t result[3] = {c.count, c.bad + c.misordered,
                                          c.sum};
                    rc = (write(to_parent[1], result, sizeof(result)) ==
                          sizeof(result)) ? 0 : 1;
                    char go;
                    /* stay until the parent has read the result */
                    (void)!read(to_child[0], &go, 1);
                }
            }
        }
        _exit(rc);
    }

    close(to_parent[1]);
    close(to_child[0]);
    std::vector<uint8_t> dev_addr, iface_addr;
    ASSERT_TRUE(read_address(to_parent[0], dev_addr, iface_addr));

    uct_ctx ctx;
    ASSERT_UCS_OK(ctx.init());
    iface tx(ctx);
    ASSERT_UCS_OK(tx.open());
    uct_ep_h ep;
    ASSERT_UCS_OK(tx.connect(dev_addr, iface_addr, &ep));

    uint64_t expected_sum = 0;
    std::vector<uint8_t> msg(tx.attr.cap.am.max_bcopy);
    for (uint64_t seq = 1; seq <= n; ++seq) {
        size_t len = 8 + (seq * 37) % (msg.size() - 8);
        fill_seq_msg(msg.data(), len, seq);
        expected_sum += checksum(msg.data(), len);
        ASSERT_EQ((ssize_t)len, repeat_while(UCS_ERR_NO_RESOURCE, [&] {
            return send_seq_bcopy(ep, 1, seq, len);
        }, [&] { tx.progress(); }, 100000000ul)) << "seq " << seq << ": "
                                                   << sender_counters(tx);
    }
    repeat_while(UCS_INPROGRESS, [&] {
        return uct_iface_flush(tx.handle, 0, NULL);
    }, [&] { tx.progress(); }, ~0ul);
    std::cerr << "sender: " << sender_counters(tx) << std::endl;

    uint64_t result[3];
    ASSERT_EQ((ssize_t)sizeof(result), read(to_parent[0], result, sizeof(result)));
    ASSERT_EQ(1, write(to_child[1], "x", 1));
    int status;
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0));
    EXPECT_EQ(n, result[0]);
    EXPECT_EQ(0u, result[1]);
    EXPECT_EQ(expected_sum, result[2]);
    uct_ep_destroy(ep);
}
