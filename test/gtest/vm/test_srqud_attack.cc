/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * A peer that does not play by the protocol, against a real interface: the
 * fake peer of srqud_raw.h (a plain verbs UD QP speaking srqud's wire
 * format by hand) as the sink of a real interface's put, and as the
 * initiator of connections to a real interface. What its packets may make
 * the interface send, free, keep, or hand to another connection.
 */

#include "srqud_raw.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

using namespace srqud_test;

namespace {

uct_srqud_zhdr_t zhdr_payload(const datagram &d)
{
    uct_srqud_zhdr_t z;

    memset(&z, 0, sizeof(z));
    memcpy(&z, d.payload(), std::min(d.payload_len(), sizeof(z)));
    return z;
}


/* @a run bytes @a value in a row: memory the put must never send */
bool has_run(const std::vector<uint8_t> &data, uint8_t value, size_t run)
{
    size_t n = 0;

    for (uint8_t b : data) {
        n = (b == value) ? (n + 1) : 0;
        if (n >= run) {
            return true;
        }
    }
    return false;
}


/* Bytes the heap hands out, from the arenas and mmap'ed alike */
long heap_in_use()
{
    struct mallinfo2 m = mallinfo2();
    return (long)(m.uordblks + m.hblkhd);
}


/*
 * The fake peer as a real sender's put sink. The real interface connects
 * to the fake peer's address and issues put_zcopy; the fake peer takes
 * the CREQ and ZPUT and answers with ZCTSs of its own making. Its side of
 * the connection acknowledges the sender's reliable packets in order,
 * as a passive ep does, so that nothing times out.
 */
class fake_sink {
public:
    static const size_t put_length = 64 * 1024;
    static const size_t buf_length = 256 * 1024;
    static const uint8_t marker    = 0xa5;

    /* call through ASSERT_NO_FATAL_FAILURE */
    void open()
    {
        ASSERT_UCS_OK(ctx.init());
        sender.reset(new iface(ctx));
        ASSERT_UCS_OK(sender->open());
        ASSERT_NO_FATAL_FAILURE(peer.init(ctx.dev_name, sender->dev_addr,
                                          sender->iface_addr));
        /* the put's bytes, then memory it must never send */
        buf.reset(new region(ctx, buf_length, UCT_MD_MEM_ACCESS_ALL));
        fill_pattern(buf->data(), put_length, 21);
        memset(buf->data() + put_length, marker, buf_length - put_length);
    }

    /* A put_zcopy of the buffer's first put_length bytes on a new ep to
     * the fake peer; the fake peer takes its ZPUT (after its CREQ) and
     * acknowledges both with a CREP. Call through ASSERT_NO_FATAL_FAILURE. */
    void start_put(uct_ep_h *ep_p, comp_t *comp)
    {
        const uint32_t old_token = token;
        uct_srqud_neth_t h;
        datagram d;
        bool found = false;

        ASSERT_UCS_OK(sender->connect(peer.peer_dev_addr(),
                                      peer.peer_iface_addr(), ep_p));
        uct_iov_t iov = {buf->data(), put_length, buf->memh, 0, 1};
        ASSERT_EQ(UCS_INPROGRESS, rma_zcopy(*ep_p, false, &iov, 0x100000,
                                            0x1234, &comp->super));

        /* the ZPUT of this ep: a token no earlier put's connection had */
        for (int n = 0; !found && (n < 1000); ++n) {
            if (!peer.recv(d, 5000, [&] { sender->progress(); })) {
                break;
            }
            found = d.neth(&h) && (h.flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
                    (h.flags & UCT_SRQUD_PACKET_FLAG_REL) &&
                    (h.ctl == UCT_SRQUD_CTL_ZPUT) && (h.token != old_token) &&
                    (d.payload_len() >= sizeof(uct_srqud_zhdr_t));
        }
        ASSERT_TRUE(found) << "no ZPUT from the sender";

        const uct_srqud_zhdr_t z = zhdr_payload(d);
        token    = h.token;
        ep_id    = h.src_ep_id;
        xfer_id  = z.xfer_id;
        chunk    = z.chunk;
        expected = (uint16_t)(h.psn + 1); /* its CREQ is psn 0 */
        ASSERT_EQ(put_length, z.length);
        ASSERT_GE(chunk, (uint32_t)UCT_SRQUD_MIN_MTU);
        ASSERT_LE(chunk, (uint32_t)UCT_SRQUD_MAX_MTU);
        /* the CREP names the fake peer's side and acknowledges both */
        ASSERT_NO_FATAL_FAILURE(peer.send(ctl(UCT_SRQUD_CTL_CREP)));
    }

    /* An unreliable control packet to the put's ep, acknowledging the
     * sender's reliable packets received in order */
    std::vector<uint8_t> ctl(uint8_t opcode, const void *a = nullptr,
                             size_t a_len = 0, const void *b = nullptr,
                             size_t b_len = 0) const
    {
        uct_srqud_neth_t n = make_neth(UCT_SRQUD_PACKET_FLAG_CTL |
                                       UCT_SRQUD_PACKET_FLAG_ACK, opcode,
                                       ep_id, fake_ep_id, 0, token);
        n.ack_psn = (uint16_t)(expected - 1);
        return packet(n, a, a_len, b, b_len);
    }

    /* A ZCTS of the put: the fake peer's QP (tag 0) takes the chunks with
     * the Q_Key every interface QP has */
    std::vector<uint8_t> zcts(uint16_t round, int8_t status, uint64_t length,
                              uint32_t zchunk,
                              const std::vector<uct_srqud_zrange_t> &ranges)
        const
    {
        uct_srqud_zhdr_t z;

        memset(&z, 0, sizeof(z));
        z.xfer_id    = xfer_id;
        z.round      = round;
        z.status     = status;
        z.num_ranges = (uint8_t)ranges.size();
        z.qpn        = peer.qpn();
        z.qkey       = UCT_SRQUD_QKEY;
        z.length     = length;
        z.chunk      = zchunk;
        return ctl(UCT_SRQUD_CTL_ZCTS, &z, sizeof(z), ranges.data(),
                   ranges.size() * sizeof(uct_srqud_zrange_t));
    }

    /* A zhdr answer without ranges (ZACK) */
    std::vector<uint8_t> status_answer(uint8_t opcode, uint16_t round,
                                       int8_t status) const
    {
        uct_srqud_zhdr_t z;

        memset(&z, 0, sizeof(z));
        z.xfer_id = xfer_id;
        z.round   = round;
        z.status  = status;
        return ctl(opcode, &z, sizeof(z));
    }

    /* Is @a d a packet of the put's connection (its header in @a h)? A
     * reliable one is acknowledged, in order, as a passive ep would */
    bool from_put(const datagram &d, uct_srqud_neth_t *h)
    {
        if (!d.neth(h) || (h->token != token) || (h->src_ep_id != ep_id)) {
            return false;
        }
        if (h->flags & UCT_SRQUD_PACKET_FLAG_REL) {
            if (h->psn == expected) {
                ++expected;
            }
            peer.send(ctl(UCT_SRQUD_CTL_ACK));
        }
        return true;
    }

    /* Is @a d the put's request @a opcode (ZPUT, ZFIN) of this transfer? */
    bool is_request(const datagram &d, const uct_srqud_neth_t &h,
                    uint8_t opcode) const
    {
        return (h.flags & UCT_SRQUD_PACKET_FLAG_CTL) && (h.ctl == opcode) &&
               (d.payload_len() >= sizeof(uct_srqud_zhdr_t)) &&
               (zhdr_payload(d).xfer_id == xfer_id);
    }

    /* Datagrams to @a handler for @a ms of wall time or until done(),
     * progressing the sender */
    void receive_for(unsigned ms,
                     const std::function<void(const datagram&)> &handler,
                     const std::function<bool()> &done = nullptr)
    {
        const auto start = std::chrono::steady_clock::now();
        datagram d;

        while (!expired(start, ms) && !(done && done())) {
            for (int i = 0; i < 64; ++i) {
                sender->progress();
            }
            while (peer.try_recv(d)) {
                handler(d);
            }
        }
    }

    uct_ctx                 ctx;
    std::unique_ptr<iface>  sender;
    raw_sender              peer;
    std::unique_ptr<region> buf;
    /* the current put, from its ZPUT */
    uint32_t                token    = 0;
    uint32_t                ep_id    = UCT_SRQUD_EP_ID_NONE;
    uint32_t                xfer_id  = 0;
    uint32_t                chunk    = 0;
    uint16_t                expected = 0; /* the sender's next psn */
};

const size_t  fake_sink::put_length;
const size_t  fake_sink::buf_length;
const uint8_t fake_sink::marker;


} // namespace


/*
 * The chunks a put sends are the ones its sink names, of the put's own
 * buffer: never bytes after it, whatever length or chunk numbers a ZCTS
 * names. A ZCTS that claims a transfer of 2^40 bytes and names a chunk
 * just past the put's end would have the device read the memory after the
 * buffer (registered: the read succeeds) and send it to whoever answered.
 * Such a ZCTS, or one of the put's length that names a chunk beyond it,
 * is refused: the put fails, nothing goes out.
 */
TEST(srqud_attack, zcts_with_a_foreign_length_sends_nothing_beyond_the_put)
{
    comp_t comps[2]; /* outlive the sender: a late completion finds them */
    fake_sink s;
    ASSERT_NO_FATAL_FAILURE(s.open());

    for (int phase = 0; phase < 2; ++phase) {
        SCOPED_TRACE(phase ? "the put's length, a chunk past its end" :
                             "a foreign length");
        comp_t &comp = comps[phase];
        uct_ep_h ep;
        ASSERT_NO_FATAL_FAILURE(s.start_put(&ep, &comp));
        const uct_srqud_iface_stats_t before = srqud_stats(s.sender->handle);

        /* the first chunk after the put's buffer, as the sink's chunk size
         * (at most the sender's) cuts it */
        const uint32_t past_end = fake_sink::put_length / s.chunk + 1;
        const std::vector<uint8_t> zcts =
            s.zcts(1, UCS_OK, phase ? fake_sink::put_length : (1ull << 40),
                   s.chunk, {{past_end, 1}});
        ASSERT_NO_FATAL_FAILURE(s.peer.send(zcts));

        unsigned chunks = 0, leaked = 0;
        s.receive_for(1000, [&](const datagram &d) {
            uct_srqud_neth_t h;
            chunks += d.with_imm;
            leaked += has_run(d.data, fake_sink::marker, 64);
            /* no ZCTS came (UD lost it): the sender asks again */
            if (s.from_put(d, &h) && s.is_request(d, h, UCT_SRQUD_CTL_ZPUT)) {
                s.peer.send(zcts);
            }
        }, [&] { return leaked > 0; });

        const uct_srqud_iface_stats_t after = srqud_stats(s.sender->handle);
        EXPECT_EQ(0u, leaked) << "the sender sent memory after the put's "
                                 "buffer";
        EXPECT_EQ(0u, chunks);
        if (comp.calls > 0) {
            EXPECT_NE(UCS_OK, comp.super.status)
                << "a put whose sink named no chunk of it completed";
        }
        EXPECT_GT(after.zcopy_refused, before.zcopy_refused);
        uct_ep_destroy(ep);
    }
}


/*
 * A ZCTS that says BUSY (the sink has no pool QP: take the copy path) is
 * an answer to the ZPUT, never to a round that is being sent: then it
 * would free the transfer with chunk sends still reading the user's buffer
 * and put it again over the copy path. While a round goes out, BUSY (of
 * that round and of the next) is ignored; the round ends as it would, with
 * its chunks in, the ZFIN, the ZACK, and one completion, UCS_OK.
 */
TEST(srqud_attack, zcts_busy_while_a_round_is_sending_is_ignored)
{
    comp_t comp;
    fake_sink s;
    ASSERT_NO_FATAL_FAILURE(s.open());
    uct_ep_h ep;
    ASSERT_NO_FATAL_FAILURE(s.start_put(&ep, &comp));
    const uct_srqud_iface_stats_t before = srqud_stats(s.sender->handle);

    const uint32_t nchunks = fake_sink::put_length / s.chunk;
    const std::vector<uint8_t> zcts =
        s.zcts(1, UCS_OK, fake_sink::put_length, s.chunk,
               {{0, (uint16_t)nchunks}});
    {
        /* the three in one go: the sender's progress takes the BUSYs
         * while it sends the round (the async thread would progress it
         * for a tick in between) */
        async_hold hold(s.ctx.async);
        ASSERT_NO_FATAL_FAILURE(s.peer.send(zcts));
        ASSERT_NO_FATAL_FAILURE(s.peer.send(
                s.zcts(1, UCS_ERR_BUSY, fake_sink::put_length, s.chunk, {})));
        ASSERT_NO_FATAL_FAILURE(s.peer.send(
                s.zcts(2, UCS_ERR_BUSY, fake_sink::put_length, s.chunk, {})));
    }

    /* the sink's rounds: the chunks, then the ZFIN; what is missing is
     * asked for in the next round (UD loses chunks), until all are in */
    std::vector<bool> got(nchunks, false);
    unsigned bad_chunks = 0, copy_puts = 0, zacks = 0;
    uint16_t round = 1;
    s.receive_for(20000, [&](const datagram &d) {
        uct_srqud_neth_t h;
        if (d.with_imm) {
            const uint32_t n   = d.imm & 0xffffff;
            const size_t len   = (n < nchunks) ?
                                 std::min<size_t>(s.chunk,
                                                  fake_sink::put_length -
                                                  (size_t)n * s.chunk) : 0;
            if (((d.imm >> 24) == 0) && (n < nchunks) &&
                (d.data.size() == len) &&
                !memcmp(d.data.data(), s.buf->data() + (size_t)n * s.chunk,
                        len)) {
                got[n] = true;
            } else {
                ++bad_chunks;
            }
            return;
        }
        if (!s.from_put(d, &h)) {
            return;
        }
        if ((h.flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
            (h.ctl == UCT_SRQUD_CTL_RMA_PUT)) {
            ++copy_puts;
        } else if (s.is_request(d, h, UCT_SRQUD_CTL_ZPUT)) {
            s.peer.send(zcts); /* the first ZCTS was lost */
        } else if (s.is_request(d, h, UCT_SRQUD_CTL_ZFIN)) {
            const uint16_t r = zhdr_payload(d).round;
            std::vector<uct_srqud_zrange_t> missing;
            for (uint32_t c = 0; c < nchunks; ++c) {
                if (got[c]) {
                    continue;
                } else if (!missing.empty() &&
                           (missing.back().start + missing.back().count == c)) {
                    ++missing.back().count;
                } else {
                    missing.push_back({c, 1});
                }
            }
            if (missing.empty()) {
                s.peer.send(s.status_answer(UCT_SRQUD_CTL_ZACK, r, UCS_OK));
                ++zacks;
            } else if (r == round) {
                ++round;
                s.peer.send(s.zcts(round, UCS_OK, fake_sink::put_length,
                                   s.chunk, missing));
            }
        }
    }, [&] { return (comp.calls > 0) && (zacks > 0); });
    /* a second completion would come now */
    for (int i = 0; i < 100000; ++i) {
        s.sender->progress();
    }

    const uct_srqud_iface_stats_t after = srqud_stats(s.sender->handle);
    EXPECT_EQ(nchunks, (uint32_t)std::count(got.begin(), got.end(), true));
    EXPECT_EQ(0u, bad_chunks);
    EXPECT_EQ(0u, copy_puts) << "the put went the copy path as well";
    EXPECT_EQ(before.zcopy_fallbacks, after.zcopy_fallbacks);
    EXPECT_EQ(1u, comp.calls);
    if (comp.calls > 0) {
        /* each further call of the completion counts it below 0 */
        EXPECT_EQ(0, comp.super.count) << "completed more than once";
        EXPECT_EQ(UCS_OK, comp.super.status);
    }
    EXPECT_GT(after.zcopy_refused, before.zcopy_refused)
        << "the BUSY of the next round was not refused";
    uct_ep_destroy(ep);
}


/*
 * A ZGET is refused when its chunk is larger than the interface's, or
 * when zero-copy is off (UCX_SRQUD_ZCOPY_QPS=0): its answer is a ZFIN with
 * the error, and nothing of the request stays behind, the chunk list its
 * ranges decode to included. A list of 16384 chunks (64 KiB) per request,
 * 400 requests: the heap may grow by far less than the 25 MiB they would
 * hold if kept.
 */
TEST(srqud_attack, zget_refused_without_leaking_its_chunk_list)
{
    const unsigned n        = 400;
    const uint32_t chunk    = 65536;  /* larger than any MTU */
    const uint16_t nchunks  = 16384;

    for (int zcopy_off = 0; zcopy_off < 2; ++zcopy_off) {
        SCOPED_TRACE(zcopy_off ? "zero-copy off" : "a chunk too large");
        std::unique_ptr<env_guard> qps;
        if (zcopy_off) {
            qps.reset(new env_guard("UCX_SRQUD_ZCOPY_QPS", "0"));
        }
        uct_ctx ctx;
        ASSERT_UCS_OK(ctx.init());
        iface receiver(ctx);
        ASSERT_UCS_OK(receiver.open());
        region mem(ctx, 256 * 1024, UCT_MD_MEM_ACCESS_ALL);
        raw_sender peer;
        ASSERT_NO_FATAL_FAILURE(peer.init(ctx.dev_name, receiver.dev_addr,
                                          receiver.iface_addr));
        fake_conn conn(peer, receiver, 5, 0x5eed0c01 + zcopy_off, 9);
        ASSERT_TRUE(conn.connect());

        std::vector<bool> answered(n + 1, false);
        unsigned answers = 0, ok_answers = 0;
        auto handler = [&](const datagram &d) {
            uct_srqud_neth_t h;
            conn.on_datagram(d);
            if (!d.neth(&h) || (h.dest_ep_id != conn.ep_id) ||
                (h.token != conn.token) ||
                !(h.flags & UCT_SRQUD_PACKET_FLAG_CTL) ||
                (h.ctl != UCT_SRQUD_CTL_ZFIN) ||
                (d.payload_len() < sizeof(uct_srqud_zhdr_t))) {
                return;
            }
            const uct_srqud_zhdr_t z = zhdr_payload(d);
            if ((z.xfer_id >= 1) && (z.xfer_id <= n) && !answered[z.xfer_id]) {
                answered[z.xfer_id] = true;
                ++answers;
                ok_answers += (z.status == UCS_OK);
            }
        };
        auto zget = [&](uint16_t psn) {
            uct_srqud_zhdr_t z;
            uct_srqud_zrange_t r = {0, nchunks};
            memset(&z, 0, sizeof(z));
            z.xfer_id     = psn;
            z.round       = 1;
            z.num_ranges  = 1;
            z.qpn         = peer.qpn();
            z.qkey        = UCT_SRQUD_QKEY;
            z.rkey        = (uint32_t)mem.rkey.rkey;
            z.remote_addr = mem.addr();
            z.length      = (uint64_t)chunk * nchunks;
            z.chunk       = chunk;
            return conn.reliable(UCT_SRQUD_PACKET_FLAG_CTL,
                                 UCT_SRQUD_CTL_ZGET, psn, &z, sizeof(z),
                                 &r, sizeof(r));
        };

        const uct_srqud_iface_stats_t s0 = srqud_stats(receiver.handle);
        const long heap0 = heap_in_use();
        ASSERT_TRUE(conn.send_stream(1, n, zget, [&] { return conn.acked; },
                                     handler))
            << "the receiver took ZGETs up to psn " << conn.acked << " of "
            << n << ": " << stats_line(srqud_stats(receiver.handle));
        /* the last answers on their way */
        const auto start = std::chrono::steady_clock::now();
        while ((answers < n) && !expired(start, 500)) {
            receiver.progress();
            peer.drain(handler);
        }
        const long growth = heap_in_use() - heap0;
        const uct_srqud_iface_stats_t s1 = srqud_stats(receiver.handle);

        EXPECT_LT(growth, 1l << 20) << "the heap grew by " << growth
                                    << " bytes over " << n << " ZGETs";
        EXPECT_GE(answers, n - n / 20) << "ZFINs received";
        EXPECT_EQ(0u, ok_answers) << "a ZGET of a chunk that cannot be "
                                     "served was accepted";
        if (!zcopy_off) {
            EXPECT_GE(s1.zcopy_refused - s0.zcopy_refused, (unsigned long)n);
        }
    }
}


/*
 * Every refused put (RMA_PUT to memory the receiver does not have) keeps a
 * record until its initiator confirms the refusal with RMA_SEEN. A peer
 * that never confirms: 5000 refused puts keep at most
 * UCX_SRQUD_RMA_REFUSALS_MAX records; the ones beyond join the newest.
 */
TEST(srqud_attack, refused_put_flood_is_bounded)
{
    env_guard max("UCX_SRQUD_RMA_REFUSALS_MAX", "32");
    const unsigned n = 5000;

    uct_ctx ctx;
    ASSERT_UCS_OK(ctx.init());
    iface receiver(ctx);
    ASSERT_UCS_OK(receiver.open());
    raw_sender peer;
    ASSERT_NO_FATAL_FAILURE(peer.init(ctx.dev_name, receiver.dev_addr,
                                      receiver.iface_addr));
    fake_conn conn(peer, receiver, 5, 0x5eed0d01, 9);
    ASSERT_TRUE(conn.connect());

    const uct_srqud_iface_stats_t s0 = srqud_stats(receiver.handle);
    auto put = [&](uint16_t psn) {
        uct_srqud_rma_hdr_t hdr;
        uint64_t data = psn;
        memset(&hdr, 0, sizeof(hdr));
        hdr.remote_addr = 0x1000;
        hdr.rkey        = 0xdeadbeef;
        hdr.length      = sizeof(data);
        hdr.op_id       = 0;
        return conn.reliable(UCT_SRQUD_PACKET_FLAG_CTL, UCT_SRQUD_CTL_RMA_PUT,
                             psn, &hdr, sizeof(hdr), &data, sizeof(data));
    };
    /* the refusal holds the receiver's acks back (until RMA_SEEN): what it
     * took in order shows in its count of refused puts, each of them one */
    auto accepted = [&] {
        return (int)(srqud_stats(receiver.handle).rma_refused -
                     s0.rma_refused);
    };
    EXPECT_TRUE(conn.send_stream(1, n, put, accepted,
                                 [&](const datagram &d) { conn.on_datagram(d); }))
        << "the receiver took puts up to psn " << accepted() << " of " << n
        << ": " << stats_line(srqud_stats(receiver.handle));

    const uct_srqud_iface_stats_t s1 = srqud_stats(receiver.handle);
    EXPECT_GE(s1.rma_refused - s0.rma_refused, (unsigned long)(n - n / 50));
    EXPECT_LE(s1.rma_refusal_records, 32u);
    EXPECT_GE(s1.rma_refusal_records, 1u) << "no RMA_SEEN came: a refusal "
                                             "is still held";
    EXPECT_GT(s1.rma_refusals_merged, s0.rma_refusals_merged);
}


/*
 * Every CREQ from a new (GID, QPN, ep id) opens a passive ep, and anyone
 * on the fabric can send CREQs. Their number is bounded
 * (UCX_SRQUD_PASSIVE_MAX): beyond, a new one takes the place of one idle
 * long enough, or is dropped. After a flood of 2000 from the fake peer, a
 * real sender still connects (its CREQ takes the place of an idle forged
 * one) and delivers its messages.
 */
TEST(srqud_attack, passive_endpoint_flood_is_bounded)
{
    const unsigned n = 2000, max_eps = 64;
    env_guard pmax("UCX_SRQUD_PASSIVE_MAX", "64");
    env_guard pidle("UCX_SRQUD_PASSIVE_IDLE", "200ms");
    /* a passive ep that never got more than its CREQ is idle after
     * 4 x RTO_MAX: 200 ms as well */
    env_guard rto_max("UCX_SRQUD_RTO_MAX", "50ms");

    attacked a;
    ASSERT_NO_FATAL_FAILURE(a.open());
    uct_ctx &ctx       = a.ctx;
    iface &receiver    = *a.receiver;
    am_log &log        = a.log;
    raw_sender &peer   = a.peer;
    auto ignore = [](const datagram&) {};

    const uct_srqud_iface_stats_t s0 = srqud_stats(receiver.handle);
    const uint32_t conn_sn = 9;
    for (unsigned first = 1; first <= n; first += 32) {
        const unsigned last          = std::min(first + 31, n);
        const unsigned long received = srqud_stats(receiver.handle).rx_packets;
        for (unsigned id = first; id <= last; ++id) {
            uct_srqud_neth_t h = make_neth(UCT_SRQUD_PACKET_FLAG_CTL |
                                           UCT_SRQUD_PACKET_FLAG_REL,
                                           UCT_SRQUD_CTL_CREQ,
                                           UCT_SRQUD_EP_ID_NONE, id, 0,
                                           0x7e000000 + id);
            ASSERT_NO_FATAL_FAILURE(peer.send(packet(h, &conn_sn,
                                                     sizeof(conn_sn))));
        }
        /* the batch in before the next, so the SRQ is never overrun; a
         * lost CREQ is not sent again (a forger would not either) */
        for (unsigned long i = 0;
             (i < 400000) && (srqud_stats(receiver.handle).rx_packets <
                              received + (last - first + 1)); ++i) {
            receiver.progress();
            peer.drain(ignore);
        }
        ASSERT_LE(srqud_stats(receiver.handle).passive_eps, max_eps)
            << "after CREQ " << last;
    }

    const uct_srqud_iface_stats_t s1 = srqud_stats(receiver.handle);
    const unsigned long delivered = s1.rx_packets - s0.rx_packets;
    EXPECT_GE(delivered, (unsigned long)(n - n / 10)) << stats_line(s1);
    EXPECT_GE(s1.passive_refused + s1.passive_reaped -
              s0.passive_refused - s0.passive_reaped, delivered - max_eps);
    EXPECT_GT(s1.passive_eps, 0u);

    /* the forged eps fall idle */
    const auto start = std::chrono::steady_clock::now();
    while (!expired(start, 500)) {
        receiver.progress();
        peer.drain(ignore);
    }

    /* a real peer: its CREQ may be dropped while no forged ep is idle
     * (it retransmits), then takes the place of one */
    iface sender(ctx);
    ASSERT_UCS_OK(sender.open());
    uct_ep_h ep;
    ASSERT_UCS_OK(sender.connect(receiver, &ep));
    uint64_t expected_sum = 0;
    std::vector<uint8_t> msg(200);
    for (uint64_t seq = 1; seq <= 100; ++seq) {
        const size_t len = 8 + (seq * 37) % (msg.size() - 8);
        fill_seq_msg(msg.data(), len, seq);
        expected_sum += checksum(msg.data(), len);
        ASSERT_EQ((ssize_t)len, repeat_while(UCS_ERR_NO_RESOURCE, [&] {
            return send_seq_bcopy(ep, am_id, seq, len);
        }, [&] { sender.progress(); peer.drain(ignore); }, 100000000ul))
            << "seq " << seq;
    }
    EXPECT_TRUE(progress_until(sender, [&] {
        peer.drain(ignore);
        return log.count >= 100;
    }, 200000000ul)) << log.count << " delivered: "
                     << stats_line(srqud_stats(receiver.handle));

    const uct_srqud_iface_stats_t s2 = srqud_stats(receiver.handle);
    EXPECT_EQ(100u, log.count);
    EXPECT_EQ(0u, log.bad);
    EXPECT_TRUE(log.in_order());
    EXPECT_EQ(expected_sum, log.sum);
    EXPECT_GT(s2.passive_reaped, s1.passive_reaped)
        << "the real peer's CREQ found a place without an idle forged ep "
           "freed for it";
    EXPECT_LE(s2.passive_eps, max_eps);
    uct_ep_destroy(ep);
}


/*
 * A connection's token is its sender's secret. A CREQ of another
 * incarnation (conn_sn) from the same address and ep id (which anyone who
 * can forge the peer's source can send) must not take the established
 * passive ep over: with its token replaced, the real peer's next packet
 * would be dropped as a forgery and the forger's taken. The new
 * incarnation gets a passive ep of its own; the established connection
 * goes on with its token.
 */
TEST(srqud_attack, new_incarnation_cannot_hijack_a_connection)
{
    attacked a;
    ASSERT_NO_FATAL_FAILURE(a.open());
    iface &receiver    = *a.receiver;
    am_log &log        = a.log;
    raw_sender &peer   = a.peer;

    const uint32_t t1 = 0x5eed0f01, t2 = 0x0bad0f02;
    fake_conn real(peer, receiver, 5, t1, 9);
    ASSERT_TRUE(real.connect());
    for (uint16_t psn = 1; psn <= 2; ++psn) {
        ASSERT_TRUE(deliver(peer, receiver, real.am(psn, psn),
                            [&] { return log.count >= psn; }))
            << "AM psn " << psn << ": "
            << stats_line(srqud_stats(receiver.handle));
    }

    /* the same QP and ep id (the test cannot forge another host's
     * source), another incarnation and token */
    fake_conn forger(peer, receiver, 5, t2, 10);
    ASSERT_TRUE(forger.connect());
    EXPECT_NE(real.passive_id, forger.passive_id)
        << "the new incarnation took over the established passive ep";
    EXPECT_EQ(2u, srqud_stats(receiver.handle).passive_eps);

    /* the real peer's next packet, with its token */
    EXPECT_TRUE(deliver(peer, receiver, real.am(3, 3),
                        [&] { return log.count >= 3; }))
        << "the established connection lost its token: "
        << stats_line(srqud_stats(receiver.handle));

    /* the forger's token on the established connection */
    const unsigned long bad_token = srqud_stats(receiver.handle).rx_bad_token;
    uct_srqud_neth_t h = make_neth(UCT_SRQUD_PACKET_FLAG_AM |
                                   UCT_SRQUD_PACKET_FLAG_REL, 0,
                                   real.passive_id, 5, 4, t2);
    h.am_id = am_id;
    std::vector<uint8_t> msg(8 + 100);
    fill_seq_msg(msg.data(), msg.size(), 4);
    EXPECT_TRUE(deliver(peer, receiver, packet(h, msg.data(), msg.size()),
                        [&] {
        return srqud_stats(receiver.handle).rx_bad_token > bad_token;
    })) << stats_line(srqud_stats(receiver.handle));

    expect_only(receiver, log, 3);
}


/*
 * uct_ep_flush(UCT_FLUSH_FLAG_CANCEL) ends the ep's operations; a put
 * whose chunk sends are still in flight (the device reads the user's
 * buffer) ends only when they complete. The flush completes after it, and
 * the put's completion comes before the ep is destroyed, never after.
 */
TEST(srqud_attack, flush_cancel_waits_for_zcopy_chunks_in_flight)
{
    comp_t comp, flush_comp; /* outlive the sender: a late call finds them */
    fake_sink s;
    ASSERT_NO_FATAL_FAILURE(s.open());
    uct_ep_h ep;
    ASSERT_NO_FATAL_FAILURE(s.start_put(&ep, &comp));

    const uint32_t nchunks = fake_sink::put_length / s.chunk;
    const std::vector<uint8_t> zcts =
        s.zcts(1, UCS_OK, fake_sink::put_length, s.chunk,
               {{0, (uint16_t)nchunks}});
    /* progress the sender only until it posted the round's chunks */
    const unsigned long sent = srqud_stats(s.sender->handle).zcopy_chunks_sent;
    bool posted = false;
    for (int attempt = 0; !posted && (attempt < 3); ++attempt) {
        ASSERT_NO_FATAL_FAILURE(s.peer.send(zcts));
        posted = progress_until(*s.sender, [&] {
            return srqud_stats(s.sender->handle).zcopy_chunks_sent > sent;
        }, 2000000ul);
    }
    ASSERT_TRUE(posted) << "the sender sent no chunk";

    const ucs_status_t status = uct_ep_flush(ep, UCT_FLUSH_FLAG_CANCEL,
                                             &flush_comp.super);
    if (status == UCS_INPROGRESS) {
        EXPECT_TRUE(progress_until(*s.sender,
                                   [&] { return flush_comp.calls > 0; }))
            << "the cancelling flush never completed";
    } else {
        EXPECT_EQ(UCS_OK, status);
    }
    EXPECT_EQ(1u, comp.calls) << "the put was not over when the cancelling "
                                 "flush was";
    if (comp.calls > 0) {
        EXPECT_EQ(0, comp.super.count) << "completed more than once";
        EXPECT_TRUE((comp.super.status == UCS_ERR_CANCELED) ||
                    (comp.super.status == UCS_OK))
            << ucs_status_string(comp.super.status);
    }

    const unsigned calls = comp.calls, flush_calls = flush_comp.calls;
    uct_ep_destroy(ep);
    for (int i = 0; i < 100000; ++i) {
        s.sender->progress();
    }
    EXPECT_EQ(calls, comp.calls) << "the put completed after its ep was "
                                    "destroyed";
    EXPECT_EQ(flush_calls, flush_comp.calls);
}


/*
 * A peer is served exactly what the registration its key names asked for.
 * With the registration cache, a 4 KiB range registered for remote get
 * inside a buffer registered (and cached) for local use shares the
 * cache's region with it; before, the peer's request was checked against
 * that region and its key was the region's: a get of any byte of the
 * whole buffer was served. A get inside the 4 KiB is served, one just
 * outside is refused, and so is a put into it (get access only).
 */
TEST(srqud_attack, remote_access_exactly_as_registered)
{
    attacked a;
    ASSERT_NO_FATAL_FAILURE(a.open());
    iface &receiver  = *a.receiver;
    raw_sender &peer = a.peer;

    const size_t big_len = 1 << 20, small_off = 512 * 1024, small_len = 4096;
    std::vector<uint8_t> big(big_len);
    fill_pattern(big.data(), big.size(), 61);
    uct_mem_h big_memh, small_memh;
    ASSERT_UCS_OK(uct_md_mem_reg(a.ctx.md, big.data(), big.size(),
                                 UCT_MD_MEM_ACCESS_LOCAL_READ |
                                 UCT_MD_MEM_ACCESS_LOCAL_WRITE, &big_memh));
    uint8_t *small = big.data() + small_off;
    ASSERT_UCS_OK(uct_md_mem_reg(a.ctx.md, small, small_len,
                                 UCT_MD_MEM_ACCESS_REMOTE_GET, &small_memh));
    uct_md_attr_t attr;
    ASSERT_UCS_OK(uct_md_query(a.ctx.md, &attr));
    std::vector<uint8_t> packed(attr.rkey_packed_size);
    ASSERT_UCS_OK(srqud_mkey_pack(a.ctx.md, small_memh, small, small_len,
                                  packed.data()));
    uct_rkey_bundle_t rkey;
    ASSERT_UCS_OK(uct_rkey_unpack(a.ctx.component, packed.data(), &rkey));

    fake_conn conn(peer, receiver, 5, 0x5eed0e01, 9);
    ASSERT_TRUE(conn.connect());

    /* one request in sequence; the status of its answer, and its bytes */
    uint16_t psn = 1;
    auto request = [&](uint8_t ctl, uint64_t addr, uint32_t length,
                       uint32_t op_id, std::vector<uint8_t> *data) -> int {
        uct_srqud_rma_hdr_t hdr;
        memset(&hdr, 0, sizeof(hdr));
        hdr.remote_addr = addr;
        hdr.rkey        = (uint32_t)rkey.rkey;
        hdr.length      = length;
        hdr.op_id       = op_id;
        std::vector<uint8_t> bytes(length, 0xee);
        const std::vector<uint8_t> pkt =
                conn.reliable(UCT_SRQUD_PACKET_FLAG_CTL, ctl, psn++, &hdr,
                              sizeof(hdr), (ctl == UCT_SRQUD_CTL_RMA_PUT) ?
                              bytes.data() : nullptr,
                              (ctl == UCT_SRQUD_CTL_RMA_PUT) ? length : 0);
        for (int attempt = 0; attempt < 5; ++attempt) {
            peer.send(pkt);
            datagram d;
            while (peer.recv(d, 1000, [&] { receiver.progress(); })) {
                uct_srqud_neth_t h;
                conn.on_datagram(d);
                if (!d.neth(&h) || !(h.flags & UCT_SRQUD_PACKET_FLAG_CTL)) {
                    continue;
                }
                if ((h.ctl == UCT_SRQUD_CTL_RMA_REPLY) &&
                    (d.payload_len() >= sizeof(uct_srqud_rma_reply_t))) {
                    uct_srqud_rma_reply_t r;
                    memcpy(&r, d.payload(), sizeof(r));
                    if (r.op_id == op_id) {
                        if (data != nullptr) {
                            data->assign(d.payload() + sizeof(r),
                                         d.payload() + d.payload_len());
                        }
                        return r.status;
                    }
                } else if ((h.ctl == UCT_SRQUD_CTL_RMA_REFUSE) &&
                           (d.payload_len() >= sizeof(uct_srqud_rma_refusal_t))) {
                    uct_srqud_rma_refusal_t r;
                    memcpy(&r, d.payload(), sizeof(r));
                    return r.status;
                }
            }
        }
        ADD_FAILURE() << "no answer to op " << op_id << ": "
                      << stats_line(srqud_stats(receiver.handle));
        return 1;
    };

    std::vector<uint8_t> got;
    EXPECT_EQ(UCS_OK, request(UCT_SRQUD_CTL_RMA_GET, (uintptr_t)small + 64, 64,
                              1, &got));
    EXPECT_TRUE((got.size() == 64) && !memcmp(got.data(), small + 64, 64))
        << "a get inside the registered range returns its bytes";

    const int outside = request(UCT_SRQUD_CTL_RMA_GET,
                                (uintptr_t)small - 4096, 64, 2, nullptr);
    EXPECT_NE(UCS_OK, outside)
        << "a get 4 KiB before the registered range was served";

    const int put = request(UCT_SRQUD_CTL_RMA_PUT, (uintptr_t)small + 128, 64,
                            0, nullptr);
    EXPECT_NE(UCS_OK, put) << "a put into memory registered for get only";
    EXPECT_TRUE(check_pattern(big.data(), big.size(), 61))
        << "the buffer was written";

    uct_rkey_release(a.ctx.component, &rkey);
    uct_md_mem_dereg(a.ctx.md, small_memh);
    uct_md_mem_dereg(a.ctx.md, big_memh);
}
