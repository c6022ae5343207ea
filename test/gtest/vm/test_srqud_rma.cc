/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Device tests of srqud's RMA: put_short/bcopy, get_bcopy, and
 * get_zcopy/put_zcopy by the zero-copy protocol over UD (pool QPs, chunks
 * with their number in the immediate data, selective retransmission) and
 * by the copy path; loss; a hostile peer; deregistration with invalidate.
 */

#include "srqud_fixture.h"

#include <uct/api/v2/uct_v2.h>

#include <cstring>
#include <memory>
#include <vector>

using namespace srqud_test;

namespace {

/* Two interfaces on one worker and an endpoint from the local one to the
 * peer; derived fixtures set the environment first */
class srqud_rma : public ::testing::Test, public iface_pair {
public:
    void SetUp() override
    {
        ASSERT_NO_FATAL_FAILURE(open_pair());
    }

protected:
    /* progress the (shared) worker until @a c completed */
    bool wait(comp_t &c, unsigned long max = 400000000ul)
    {
        progress_until(*local, [&] { return c.calls > 0; }, max);
        return c.calls == 1;
    }

    /* post with retries while out of resources */
    template <typename Op> ucs_status_t post(Op op)
    {
        return repeat_while(UCS_ERR_NO_RESOURCE, op,
                            [&] { local->progress(); }, 400000000ul);
    }

    ucs_status_t flush()
    {
        comp_t c;
        ucs_status_t status = post([&] {
            return uct_ep_flush(ep, 0, &c.super);
        });
        if (status != UCS_INPROGRESS) {
            return status;
        }
        return wait(c) ? c.super.status : UCS_ERR_TIMED_OUT;
    }

    /* get_zcopy or put_zcopy of @a length bytes between a local and a
     * remote region, checked byte by byte */
    void zcopy(bool is_get, size_t length, unsigned long *zcopy_xfers = nullptr,
               uint64_t seed = 0, unsigned long max_wait = 400000000ul)
    {
        region remote(ctx, length, UCT_MD_MEM_ACCESS_ALL);
        region mine(ctx, length, UCT_MD_MEM_ACCESS_ALL);
        uint8_t *src = is_get ? remote.data() : mine.data();
        fill_pattern(src, length, (seed != 0) ? seed : length);

        unsigned long before = srqud_stats(local->handle).zcopy_xfers +
                               srqud_stats(peer->handle).zcopy_xfers;
        uct_iov_t iov = {mine.data(), length, mine.memh, 0, 1};
        comp_t c;
        ASSERT_EQ(UCS_INPROGRESS, post([&] {
            return rma_zcopy(ep, is_get, &iov, remote.addr(),
                             remote.rkey.rkey, &c.super);
        }));
        ASSERT_TRUE(wait(c, max_wait)) << (is_get ? "get" : "put") << " of "
                                       << length << " never completed";
        ASSERT_EQ(UCS_OK, c.super.status);
        uint8_t *dst = is_get ? mine.data() : remote.data();
        EXPECT_EQ(checksum(src, length), checksum(dst, length))
            << (is_get ? "get" : "put") << " of " << length;
        EXPECT_TRUE(remote.guards_intact());
        EXPECT_TRUE(mine.guards_intact());
        if (zcopy_xfers != nullptr) {
            *zcopy_xfers = srqud_stats(local->handle).zcopy_xfers +
                           srqud_stats(peer->handle).zcopy_xfers - before;
        }
    }

    /* the initiator of every operation, and its target */
    std::unique_ptr<iface> &local = sender, &peer = receiver;
};


/* 5 % of the packets, chunks included, lost on purpose */
class srqud_rma_loss : public srqud_rma {
protected:
    void setup_env() override
    {
        drop_packets("0.05");
    }
};


/* Every zero-copy chunk lost (a path that filters the pool QPs' traffic),
 * the control packets through; a short RTO_MAX so that a stall shows soon */
class srqud_rma_no_chunks : public srqud_rma {
protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_FAULT_CHUNK_DROP", "1");
        set_env("UCX_SRQUD_RTO_MAX", "100ms");
        set_env("UCX_LOG_LEVEL", "error");
    }
};


/* A fifth of the packets lost, answers and acknowledgements included */
class srqud_rma_heavy_loss : public srqud_rma {
protected:
    void setup_env() override
    {
        drop_packets("0.2");
    }
};


/* Acknowledgements held back for 2 s and no resend before 4 s: what is
 * acknowledged sooner was asked for, or ACK_THRESH was reached, however
 * slowly the test runs */
class srqud_rma_slow_acks : public srqud_rma {
protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_ACK_DELAY", "2s");
        set_env("UCX_SRQUD_RTO_MIN", "4s");
        set_env("UCX_SRQUD_RTO_MAX", "4s");
    }
};


/* A pool of one QP */
class srqud_rma_pool : public srqud_rma {
protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_ZCOPY_QPS", "1");
    }
};

} // namespace


TEST_F(srqud_rma, capabilities)
{
    const uint64_t need = UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY |
                          UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_BCOPY |
                          UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PENDING;
    EXPECT_EQ(need, local->attr.cap.flags & need);
    EXPECT_GE(local->attr.cap.put.max_short, 1024u);
    EXPECT_GE(local->attr.cap.get.max_zcopy, 64ul << 20);
    uct_md_attr_t md_attr;
    ASSERT_UCS_OK(uct_md_query(ctx.md, &md_attr));
    EXPECT_TRUE(md_attr.cap.flags & UCT_MD_FLAG_INVALIDATE);
}


TEST_F(srqud_rma, put_short_bcopy_get_bcopy_verified)
{
    region remote(ctx, 8192, UCT_MD_MEM_ACCESS_ALL);
    std::vector<uint8_t> data(local->attr.cap.put.max_short);
    fill_pattern(data.data(), data.size(), 3);

    ASSERT_UCS_OK(uct_ep_put_short(ep, data.data(), data.size(), remote.addr(),
                                   remote.rkey.rkey));
    ASSERT_UCS_OK(flush());
    EXPECT_EQ(0, memcmp(data.data(), remote.data(), data.size()));

    struct pack_arg { uint8_t *p; size_t n; } arg = {data.data(), 100};
    fill_pattern(data.data(), 100, 4);
    ssize_t packed = uct_ep_put_bcopy(ep, [](void *dest, void *a) -> size_t {
        pack_arg *pa = static_cast<pack_arg*>(a);
        memcpy(dest, pa->p, pa->n);
        return pa->n;
    }, &arg, remote.addr() + 5000, remote.rkey.rkey);
    ASSERT_EQ(100, packed);
    ASSERT_UCS_OK(flush());
    EXPECT_EQ(0, memcmp(data.data(), remote.data() + 5000, 100));

    /* get_bcopy reads it back through the unpack callback */
    std::vector<uint8_t> back(100);
    comp_t c;
    ucs_status_t status = uct_ep_get_bcopy(ep, [](void *a, const void *d,
                                                  size_t n) {
        memcpy(a, d, n);
    }, back.data(), 100, remote.addr() + 5000, remote.rkey.rkey, &c.super);
    ASSERT_EQ(UCS_INPROGRESS, status);
    ASSERT_TRUE(wait(c));
    EXPECT_EQ(UCS_OK, c.super.status);
    EXPECT_EQ(0, memcmp(back.data(), data.data(), 100));
    EXPECT_TRUE(remote.guards_intact());
}


/* A put's acknowledgement is not asked for at once: in a put ping-pong the
 * target acknowledges every ACK_THRESH (32) puts or for a flush, not each
 * put with a packet of its own; every byte still lands, and the flush
 * completes. */
TEST_F(srqud_rma_slow_acks, puts_do_not_draw_an_ack_each)
{
    const unsigned n = 96;
    region remote(ctx, n * sizeof(uint64_t), UCT_MD_MEM_ACCESS_ALL);
    uint64_t *slots = reinterpret_cast<uint64_t*>(remote.data());
    memset(remote.data(), 0, n * sizeof(uint64_t));

    unsigned long acks = srqud_stats(peer->handle).acks_sent;
    for (unsigned i = 0; i < n; ++i) {
        uint64_t value = 0x5151000000000000ull | i;
        ASSERT_UCS_OK(post([&] {
            return uct_ep_put_short(ep, &value, sizeof(value),
                                    remote.addr() + i * sizeof(value),
                                    remote.rkey.rkey);
        }));
        /* the target applies it before the next one goes */
        ASSERT_TRUE(progress_until(*local, [&] {
            return __atomic_load_n(&slots[i], __ATOMIC_ACQUIRE) == value;
        })) << "put " << i << " never landed";
    }
    unsigned long during = srqud_stats(peer->handle).acks_sent - acks;
    EXPECT_LE(during, n / 32 + 1) << "acknowledgements during " << n
                                  << " puts";

    ASSERT_UCS_OK(flush());
    for (unsigned i = 0; i < n; ++i) {
        EXPECT_EQ(0x5151000000000000ull | i, slots[i]) << "slot " << i;
    }
    EXPECT_TRUE(remote.guards_intact());
}


/* A flush without a completion is polled: it asks the target for its
 * acknowledgement once, not at every poll, and not never (puts do not ask,
 * so without it the flush would wait for the target's ACK_DELAY) */
TEST_F(srqud_rma_slow_acks, polling_flush_asks_for_the_ack_once)
{
    region remote(ctx, 64, UCT_MD_MEM_ACCESS_ALL);
    uint64_t value = 0x5eed;
    memset(remote.data(), 0, 64);

    unsigned long asked = srqud_stats(local->handle).ack_requests;
    ASSERT_UCS_OK(post([&] {
        return uct_ep_put_short(ep, &value, sizeof(value), remote.addr(),
                                remote.rkey.rkey);
    }));
    unsigned long polls = 0;
    ucs_status_t status = UCS_INPROGRESS;
    ASSERT_TRUE(progress_until(*local, [&] {
        ++polls;
        status = uct_ep_flush(ep, 0, NULL);
        return (status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE);
    }, 400000000ul)) << "the flush never completed";
    EXPECT_EQ(UCS_OK, status);
    EXPECT_EQ(1u, srqud_stats(local->handle).ack_requests - asked)
        << "acknowledgement requests in " << polls << " polls";
    EXPECT_EQ(value, *reinterpret_cast<uint64_t*>(remote.data()));
}


TEST_F(srqud_rma, get_and_put_zcopy_sizes_verified)
{
    unsigned long xfers;
    /* below the threshold: the copy path */
    zcopy(true, 1000, &xfers);
    EXPECT_EQ(0u, xfers);
    zcopy(false, 20000, &xfers);
    EXPECT_EQ(0u, xfers);
    /* zero-copy: one chunk, partial chunk, several rounds (512 receives) */
    for (size_t len : {32768ul, 65536ul + 1, 1048576ul, 4194304ul + 777}) {
        zcopy(true, len, &xfers);
        EXPECT_EQ(1u, xfers) << "get " << len;
        zcopy(false, len, &xfers);
        EXPECT_EQ(1u, xfers) << "put " << len;
    }
}


/* 5 % of the packets, chunks included, lost on purpose: selective
 * retransmission rounds recover every byte */
TEST_F(srqud_rma_loss, zcopy_under_loss_verified)
{
    for (int is_get = 0; is_get < 2; ++is_get) {
        ASSERT_NO_FATAL_FAILURE(zcopy(is_get, 3 << 20, nullptr, 11 + is_get,
                                      800000000ul));
    }

    uct_srqud_iface_stats_t sa = srqud_stats(local->handle);
    uct_srqud_iface_stats_t sb = srqud_stats(peer->handle);
    EXPECT_GT(sa.fault_dropped + sb.fault_dropped, 0u);
    EXPECT_GT(sa.zcopy_rounds_extra + sb.zcopy_rounds_extra, 0u);
    EXPECT_EQ(2u, sa.zcopy_xfers + sb.zcopy_xfers);
    /* selective: far fewer chunks than resending the 6 MB at every loss */
    unsigned long chunks = (6 << 20) / local->attr.cap.am.align_mtu;
    EXPECT_LT(sa.zcopy_chunks_sent + sb.zcopy_chunks_sent, 2 * chunks);
}


/* No chunk of a get ever lands though the peer answers: the get is not
 * failed (nor reported complete with the bytes missing); what is missing
 * comes over the copy path, once */
TEST_F(srqud_rma_no_chunks, stalled_get_finishes_over_the_copy_path)
{
    unsigned long xfers;
    ASSERT_NO_FATAL_FAILURE(zcopy(true, (1 << 20) + 333, &xfers, 21));
    EXPECT_EQ(0u, xfers) << "no zero-copy transfer can have completed";

    uct_srqud_iface_stats_t s = srqud_stats(local->handle);
    EXPECT_EQ(1u, s.zcopy_stalled);
    EXPECT_EQ(1u, s.zcopy_fallbacks);
    EXPECT_GT(srqud_stats(peer->handle).fault_dropped, 0u);
    /* the endpoint is fine afterwards */
    EXPECT_EQ(UCS_OK, flush());
}


/* A peer that names what it should not: every request is refused, nothing
 * outside the registered memory is read or written, no QP breaks (the same
 * endpoint works afterwards) */
TEST_F(srqud_rma, hostile_requests_are_refused)
{
    const size_t length = 65536;
    region target(ctx, length, UCT_MD_MEM_ACCESS_ALL);
    region readonly(ctx, length, UCT_MD_MEM_ACCESS_REMOTE_GET);
    region mine(ctx, 4 * length, UCT_MD_MEM_ACCESS_ALL);
    memset(mine.data(), 0x77, 4 * length);
    uct_iov_t iov = {mine.data(), length, mine.memh, 0, 1};

    struct req { const char *what; uint64_t addr; uct_rkey_t rkey; size_t len;
                 bool is_get; };
    std::vector<req> reqs = {
        {"unregistered address", target.addr() - 8192, target.rkey.rkey,
         length, true},
        {"past the end", target.addr() + 4096, target.rkey.rkey, length, true},
        {"bad rkey", target.addr(), target.rkey.rkey ^ 0x5a5a00, length, true},
        {"oversize", target.addr(), target.rkey.rkey, 4 * length, true},
        {"write to read-only", readonly.addr(), readonly.rkey.rkey, length,
         false},
        {"copy path, bad rkey", target.addr(), target.rkey.rkey ^ 0x100, 1000,
         true},
        {"copy path put, past the end", target.addr() + length - 10,
         target.rkey.rkey, 1000, false},
    };

    for (auto &r : reqs) {
        iov.length   = r.len;
        comp_t c;
        ASSERT_EQ(UCS_INPROGRESS, post([&] {
            return rma_zcopy(ep, r.is_get, &iov, r.addr, r.rkey, &c.super);
        })) << r.what;
        ASSERT_TRUE(wait(c)) << r.what << ": never completed";
        EXPECT_NE(UCS_OK, c.super.status) << r.what << " was not refused";
    }

    /* nothing was read into our buffer, nothing written around the peer's */
    for (size_t i = 0; i < 4 * length; ++i) {
        ASSERT_EQ(0x77, mine.data()[i]) << "byte " << i << " was written";
    }
    EXPECT_TRUE(target.guards_intact());
    EXPECT_TRUE(readonly.guards_intact());

    /* the endpoint and its QPs still work */
    fill_pattern(target.data(), length, 99);
    iov.length = length;
    comp_t ok;
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(ep, &iov, 1, target.addr(),
                                               target.rkey.rkey, &ok.super));
    ASSERT_TRUE(wait(ok));
    EXPECT_EQ(UCS_OK, ok.super.status);
    EXPECT_EQ(checksum(target.data(), length), checksum(mine.data(), length));
}


/* A refused put's error reaches its initiator however packets are lost:
 * the refusal may be lost, or come behind the acknowledgement that would
 * complete the put. The put's completion (copy path) or the next flush
 * (put_short) reports it every time, and only once: the flush after it,
 * and the good puts between, succeed. */
TEST_F(srqud_rma_heavy_loss, refused_puts_are_reported_under_loss)
{
    const size_t length = 4096;
    region target(ctx, length, UCT_MD_MEM_ACCESS_ALL);
    region mine(ctx, length, UCT_MD_MEM_ACCESS_ALL);
    const uct_rkey_t bad_rkey = target.rkey.rkey ^ 0x5a5a00;
    fill_pattern(mine.data(), length, 11);
    memset(target.data(), 0, length);

    for (unsigned i = 0; i < 40; ++i) {
        uint64_t word = 0x5eed0000u + i;
        ASSERT_EQ(UCS_OK, post([&] {
            return uct_ep_put_short(ep, &word, sizeof(word), target.addr(),
                                    bad_rkey);
        })) << "round " << i;
        EXPECT_NE(UCS_OK, flush()) << "round " << i
                                   << ": a refused put_short, flush OK";

        ASSERT_EQ(UCS_OK, post([&] {
            return uct_ep_put_short(ep, &word, sizeof(word),
                                    target.addr() + 8 * (i % 64),
                                    target.rkey.rkey);
        })) << "round " << i;
        EXPECT_EQ(UCS_OK, flush()) << "round " << i
                                   << ": a good put_short after a refused one";
        EXPECT_EQ(word, *reinterpret_cast<uint64_t*>(target.data() +
                                                     8 * (i % 64)));

        /* three flushes in flight: each reports the puts sent between the
         * one before and itself, no more */
        comp_t f[3];
        for (unsigned k = 0; k < 3; ++k) {
            ucs_status_t st = post([&] {
                return uct_ep_put_short(ep, &word, sizeof(word),
                                        target.addr() + 8 * k,
                                        (k == 1) ? target.rkey.rkey :
                                                   bad_rkey);
            });
            ASSERT_EQ(UCS_OK, st) << "round " << i << " put " << k;
            st = post([&] { return uct_ep_flush(ep, 0, &f[k].super); });
            ASSERT_EQ(UCS_INPROGRESS, st) << "round " << i << " flush " << k;
        }
        for (unsigned k = 0; k < 3; ++k) {
            ASSERT_TRUE(wait(f[k])) << "round " << i << " flush " << k;
        }
        EXPECT_NE(UCS_OK, f[0].super.status) << "round " << i
                                             << ": refused put, flush 0 OK";
        EXPECT_EQ(UCS_OK, f[1].super.status) << "round " << i
                                             << ": good put, flush 1 failed";
        EXPECT_NE(UCS_OK, f[2].super.status) << "round " << i
                                             << ": refused put, flush 2 OK";

        /* copy path (below the zero-copy threshold), past the end */
        uct_iov_t iov = {mine.data(), 1000, mine.memh, 0, 1};
        comp_t c;
        ASSERT_EQ(UCS_INPROGRESS, post([&] {
            return rma_zcopy(ep, false, &iov, target.addr() + length - 10,
                             target.rkey.rkey, &c.super);
        })) << "round " << i;
        ASSERT_TRUE(wait(c)) << "round " << i << ": never completed";
        EXPECT_NE(UCS_OK, c.super.status) << "round " << i
                                          << ": a refused copy-path put, OK";
        EXPECT_EQ(UCS_OK, flush()) << "round " << i
                                   << ": the flush after a reported refusal";
        if (HasFailure()) {
            break;
        }
    }
    EXPECT_TRUE(target.guards_intact());
}


/* A region deregistered with invalidate: later requests are refused, the
 * callback runs; a region deregistered plainly is refused too */
TEST_F(srqud_rma, requests_after_deregistration_are_refused)
{
    const size_t length = 65536;
    std::unique_ptr<region> target(new region(ctx, length,
                                              UCT_MD_MEM_ACCESS_ALL));
    region mine(ctx, length, UCT_MD_MEM_ACCESS_ALL);
    uct_rkey_t rkey = target->rkey.rkey;
    uint64_t addr   = target->addr();

    comp_t inval;
    uct_md_mem_dereg_params_t params;
    params.field_mask = UCT_MD_MEM_DEREG_FIELD_MEMH |
                        UCT_MD_MEM_DEREG_FIELD_FLAGS |
                        UCT_MD_MEM_DEREG_FIELD_COMPLETION;
    params.memh       = target->memh;
    params.flags      = UCT_MD_MEM_DEREG_FLAG_INVALIDATE;
    params.comp       = &inval.super;
    ASSERT_UCS_OK(uct_md_mem_dereg_v2(ctx.md, &params));
    target->memh = UCT_MEM_HANDLE_NULL;
    EXPECT_EQ(1u, inval.calls); /* nothing was in flight */

    for (size_t len : {length, (size_t)1000}) {
        uct_iov_t iov = {mine.data(), len, mine.memh, 0, 1};
        comp_t c;
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(ep, &iov, 1, addr, rkey,
                                                   &c.super));
        ASSERT_TRUE(wait(c));
        EXPECT_NE(UCS_OK, c.super.status) << len;
    }
}


/* A pool of one QP and three gets at once: the others take the copy path,
 * nothing fails */
TEST_F(srqud_rma_pool, no_free_pool_qp_falls_back_to_copy)
{
    const size_t length = 256 * 1024;
    region remote(ctx, length, UCT_MD_MEM_ACCESS_ALL);
    fill_pattern(remote.data(), length, 5);
    std::vector<std::unique_ptr<region>> dst;
    std::vector<std::unique_ptr<comp_t>> comps;
    for (int i = 0; i < 3; ++i) {
        dst.emplace_back(new region(ctx, length, UCT_MD_MEM_ACCESS_ALL));
        comps.emplace_back(new comp_t());
        uct_iov_t iov = {dst[i]->data(), length, dst[i]->memh, 0, 1};
        ASSERT_EQ(UCS_INPROGRESS, post([&] {
            return uct_ep_get_zcopy(ep, &iov, 1, remote.addr(),
                                    remote.rkey.rkey, &comps[i]->super);
        }));
    }
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(wait(*comps[i]));
        EXPECT_EQ(UCS_OK, comps[i]->super.status);
        EXPECT_EQ(checksum(remote.data(), length),
                  checksum(dst[i]->data(), length));
    }
    EXPECT_EQ(2u, srqud_stats(local->handle).zcopy_fallbacks);
    EXPECT_EQ(1u, srqud_stats(local->handle).zcopy_xfers);
}


/* The peer vanishes in the middle of a get: an endpoint error through the
 * completion, the pool QP comes back (a next get succeeds on a live peer) */
TEST(srqud_rma_dead, peer_gone_mid_transfer_is_an_endpoint_error)
{
    env_guard qps("UCX_SRQUD_ZCOPY_QPS", "1");
    dead_peer_ep d;    /* 1 s peer timeout */
    ASSERT_NO_FATAL_FAILURE(d.open());
    const size_t length = 1 << 20;
    region mine(d.ctx, length, UCT_MD_MEM_ACCESS_ALL);
    region remote(d.ctx, length, UCT_MD_MEM_ACCESS_ALL);
    uct_iov_t iov = {mine.data(), length, mine.memh, 0, 1};
    auto get = [&](comp_t &c) {
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(d.ep, &iov, 1, remote.addr(),
                                                   remote.rkey.rkey, &c.super));
        progress_until(*d.local, [&] { return c.calls > 0; }, 400000000ul);
        ASSERT_EQ(1u, c.calls);
    };

    comp_t c;
    ASSERT_NO_FATAL_FAILURE(get(c));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, c.super.status);
    EXPECT_EQ(1u, d.errors.count);
    uct_ep_destroy(d.ep);
    d.ep = nullptr;

    /* the single pool QP is free again: a zero-copy get to a live peer */
    iface live(d.ctx);
    ASSERT_UCS_OK(live.open());
    ASSERT_UCS_OK(d.local->connect(live, &d.ep));
    fill_pattern(remote.data(), length, 8);
    comp_t ok;
    ASSERT_NO_FATAL_FAILURE(get(ok));
    EXPECT_EQ(UCS_OK, ok.super.status);
    EXPECT_EQ(checksum(remote.data(), length), checksum(mine.data(), length));
    EXPECT_EQ(0u, srqud_stats(d.local->handle).zcopy_fallbacks);
    uct_ep_destroy(d.ep);
    d.ep = nullptr;
}
