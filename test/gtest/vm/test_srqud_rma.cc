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

class srqud_rma : public ::testing::Test {
public:
    void SetUp() override
    {
        ASSERT_UCS_OK(ctx.init());
        local.reset(new iface(ctx));
        peer.reset(new iface(ctx));
        ASSERT_UCS_OK(local->open());
        ASSERT_UCS_OK(peer->open());
        ASSERT_UCS_OK(local->connect(*peer, &ep));
    }

    void TearDown() override
    {
        if (ep != nullptr) {
            uct_ep_destroy(ep);
        }
        local.reset();
        peer.reset();
    }

    /* progress the (shared) worker until @a c completed */
    bool wait(comp_t &c, unsigned long max = 400000000ul)
    {
        for (unsigned long n = 0; (c.calls == 0) && (n < max); ++n) {
            local->progress();
        }
        return c.calls == 1;
    }

    ucs_status_t flush()
    {
        comp_t c;
        ucs_status_t status;
        while ((status = uct_ep_flush(ep, 0, &c.super)) == UCS_ERR_NO_RESOURCE) {
            local->progress();
        }
        if (status != UCS_INPROGRESS) {
            return status;
        }
        return wait(c) ? c.super.status : UCS_ERR_TIMED_OUT;
    }

    /* get_zcopy or put_zcopy of @a length bytes between a local and a
     * remote region, checked byte by byte */
    void zcopy(bool is_get, size_t length, unsigned long *zcopy_xfers = nullptr)
    {
        region remote(ctx, length, UCT_MD_MEM_ACCESS_ALL);
        region mine(ctx, length, UCT_MD_MEM_ACCESS_ALL);
        uint8_t *src = is_get ? remote.data() : mine.data();
        fill_pattern(src, length, length);

        unsigned long before = srqud_stats(local->handle).zcopy_xfers +
                               srqud_stats(peer->handle).zcopy_xfers;
        uct_iov_t iov = {mine.data(), length, mine.memh, 0, 1};
        comp_t c;
        ucs_status_t status;
        while ((status = is_get ?
                uct_ep_get_zcopy(ep, &iov, 1, remote.addr(), remote.rkey.rkey,
                                 &c.super) :
                uct_ep_put_zcopy(ep, &iov, 1, remote.addr(), remote.rkey.rkey,
                                 &c.super)) == UCS_ERR_NO_RESOURCE) {
            local->progress();
        }
        ASSERT_EQ(UCS_INPROGRESS, status);
        ASSERT_TRUE(wait(c)) << (is_get ? "get" : "put") << " of " << length
                             << " never completed";
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

    uct_ctx                ctx;
    std::unique_ptr<iface> local, peer;
    uct_ep_h               ep = nullptr;
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
TEST(srqud_rma_loss, zcopy_under_loss_verified)
{
    env_guard t1("UCX_SRQUD_FAULT_TX_DROP", "0.05");
    env_guard t2("UCX_LOG_LEVEL", "error");
    uct_ctx ctx;
    ASSERT_UCS_OK(ctx.init());
    iface a(ctx), b(ctx);
    ASSERT_UCS_OK(a.open());
    ASSERT_UCS_OK(b.open());
    uct_ep_h ep;
    ASSERT_UCS_OK(a.connect(b, &ep));

    for (int is_get = 0; is_get < 2; ++is_get) {
        const size_t length = 3 << 20;
        region remote(ctx, length, UCT_MD_MEM_ACCESS_ALL);
        region mine(ctx, length, UCT_MD_MEM_ACCESS_ALL);
        uint8_t *src = is_get ? remote.data() : mine.data();
        fill_pattern(src, length, 11 + is_get);
        uct_iov_t iov = {mine.data(), length, mine.memh, 0, 1};
        comp_t c;
        ucs_status_t status;
        while ((status = is_get ?
                uct_ep_get_zcopy(ep, &iov, 1, remote.addr(), remote.rkey.rkey,
                                 &c.super) :
                uct_ep_put_zcopy(ep, &iov, 1, remote.addr(), remote.rkey.rkey,
                                 &c.super)) == UCS_ERR_NO_RESOURCE) {
            a.progress();
        }
        ASSERT_EQ(UCS_INPROGRESS, status);
        for (unsigned long n = 0; (c.calls == 0) && (n < 800000000ul); ++n) {
            a.progress();
        }
        ASSERT_EQ(1u, c.calls);
        EXPECT_EQ(UCS_OK, c.super.status);
        uint8_t *dst = is_get ? mine.data() : remote.data();
        EXPECT_EQ(checksum(src, length), checksum(dst, length));
    }

    uct_srqud_iface_stats_t sa = srqud_stats(a.handle);
    uct_srqud_iface_stats_t sb = srqud_stats(b.handle);
    EXPECT_GT(sa.fault_dropped + sb.fault_dropped, 0u);
    EXPECT_GT(sa.zcopy_rounds_extra + sb.zcopy_rounds_extra, 0u);
    EXPECT_EQ(2u, sa.zcopy_xfers + sb.zcopy_xfers);
    /* selective: far fewer chunks than resending the 6 MB at every loss */
    unsigned long chunks = (6 << 20) / a.attr.cap.am.align_mtu;
    EXPECT_LT(sa.zcopy_chunks_sent + sb.zcopy_chunks_sent, 2 * chunks);
    uct_ep_destroy(ep);
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
    uint64_t before_refused;

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
        ucs_status_t status;
        while ((status = r.is_get ?
                uct_ep_get_zcopy(ep, &iov, 1, r.addr, r.rkey, &c.super) :
                uct_ep_put_zcopy(ep, &iov, 1, r.addr, r.rkey, &c.super)) ==
               UCS_ERR_NO_RESOURCE) {
            local->progress();
        }
        ASSERT_EQ(UCS_INPROGRESS, status) << r.what;
        ASSERT_TRUE(wait(c)) << r.what << ": never completed";
        EXPECT_NE(UCS_OK, c.super.status) << r.what << " was not refused";
    }

    /* nothing was read into our buffer, nothing written around the peer's */
    for (size_t i = 0; i < 4 * length; ++i) {
        ASSERT_EQ(0x77, mine.data()[i]) << "byte " << i << " was written";
    }
    EXPECT_TRUE(target.guards_intact());
    EXPECT_TRUE(readonly.guards_intact());
    before_refused = 0;
    (void)before_refused;

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
TEST(srqud_rma_pool, no_free_pool_qp_falls_back_to_copy)
{
    env_guard t1("UCX_SRQUD_ZCOPY_QPS", "1");
    uct_ctx ctx;
    ASSERT_UCS_OK(ctx.init());
    iface a(ctx), b(ctx);
    ASSERT_UCS_OK(a.open());
    ASSERT_UCS_OK(b.open());
    uct_ep_h ep;
    ASSERT_UCS_OK(a.connect(b, &ep));

    const size_t length = 256 * 1024;
    region remote(ctx, length, UCT_MD_MEM_ACCESS_ALL);
    fill_pattern(remote.data(), length, 5);
    std::vector<std::unique_ptr<region>> dst;
    std::vector<std::unique_ptr<comp_t>> comps;
    for (int i = 0; i < 3; ++i) {
        dst.emplace_back(new region(ctx, length, UCT_MD_MEM_ACCESS_ALL));
        comps.emplace_back(new comp_t());
        uct_iov_t iov = {dst[i]->data(), length, dst[i]->memh, 0, 1};
        ucs_status_t status;
        while ((status = uct_ep_get_zcopy(ep, &iov, 1, remote.addr(),
                                          remote.rkey.rkey,
                                          &comps[i]->super)) ==
               UCS_ERR_NO_RESOURCE) {
            a.progress();
        }
        ASSERT_EQ(UCS_INPROGRESS, status);
    }
    for (int i = 0; i < 3; ++i) {
        for (unsigned long n = 0; (comps[i]->calls == 0) && (n < 400000000ul);
             ++n) {
            a.progress();
        }
        ASSERT_EQ(1u, comps[i]->calls);
        EXPECT_EQ(UCS_OK, comps[i]->super.status);
        EXPECT_EQ(checksum(remote.data(), length),
                  checksum(dst[i]->data(), length));
    }
    EXPECT_EQ(2u, srqud_stats(a.handle).zcopy_fallbacks);
    EXPECT_EQ(1u, srqud_stats(a.handle).zcopy_xfers);
    uct_ep_destroy(ep);
}


/* The peer vanishes in the middle of a get: an endpoint error through the
 * completion, the pool QP comes back (a next get succeeds on a live peer) */
TEST(srqud_rma_dead, peer_gone_mid_transfer_is_an_endpoint_error)
{
    env_guard t1("UCX_SRQUD_TIMEOUT", "1s");
    env_guard t2("UCX_SRQUD_RTO_MAX", "100ms");
    env_guard t3("UCX_SRQUD_ZCOPY_QPS", "1");
    uct_ctx ctx;
    ASSERT_UCS_OK(ctx.init());

    uct_iface_config_t *config;
    ASSERT_UCS_OK(uct_md_iface_config_read(ctx.md, "srqud", NULL, NULL,
                                           &config));
    uct_iface_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "srqud";
    params.mode.device.dev_name = ctx.dev_name.c_str();
    unsigned errors             = 0;
    params.err_handler_arg      = &errors;
    params.err_handler          = [](void *arg, uct_ep_h ep,
                                     ucs_status_t status) -> ucs_status_t {
        ++*static_cast<unsigned*>(arg);
        return UCS_OK;
    };
    uct_iface_h handle;
    ASSERT_UCS_OK(uct_iface_open(ctx.md, ctx.worker, &params, config,
                                 &handle));
    uct_config_release(config);
    uct_iface_progress_enable(handle, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    const size_t length = 1 << 20;
    region mine(ctx, length, UCT_MD_MEM_ACCESS_ALL);
    region remote(ctx, length, UCT_MD_MEM_ACCESS_ALL);
    std::vector<uint8_t> dev, ifa;
    {
        iface gone(ctx);
        ASSERT_UCS_OK(gone.open());
        dev = gone.dev_addr;
        ifa = gone.iface_addr;
    }
    uct_ep_params_t ep_params;
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = handle;
    ep_params.dev_addr   = (const uct_device_addr_t*)dev.data();
    ep_params.iface_addr = (const uct_iface_addr_t*)ifa.data();
    uct_ep_h ep;
    ASSERT_UCS_OK(uct_ep_create(&ep_params, &ep));

    uct_iov_t iov = {mine.data(), length, mine.memh, 0, 1};
    comp_t c;
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(ep, &iov, 1, remote.addr(),
                                               remote.rkey.rkey, &c.super));
    for (unsigned long n = 0; (c.calls == 0) && (n < 400000000ul); ++n) {
        uct_worker_progress(ctx.worker);
    }
    ASSERT_EQ(1u, c.calls);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, c.super.status);
    EXPECT_EQ(1u, errors);
    uct_ep_destroy(ep);

    /* the single pool QP is free again: a zero-copy get to a live peer */
    iface live(ctx);
    ASSERT_UCS_OK(live.open());
    ep_params.dev_addr   = (const uct_device_addr_t*)live.dev_addr.data();
    ep_params.iface_addr = (const uct_iface_addr_t*)live.iface_addr.data();
    ASSERT_UCS_OK(uct_ep_create(&ep_params, &ep));
    fill_pattern(remote.data(), length, 8);
    comp_t ok;
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(ep, &iov, 1, remote.addr(),
                                               remote.rkey.rkey, &ok.super));
    for (unsigned long n = 0; (ok.calls == 0) && (n < 400000000ul); ++n) {
        uct_worker_progress(ctx.worker);
    }
    ASSERT_EQ(1u, ok.calls);
    EXPECT_EQ(UCS_OK, ok.super.status);
    EXPECT_EQ(checksum(remote.data(), length), checksum(mine.data(), length));
    EXPECT_EQ(0u, srqud_stats(handle).zcopy_fallbacks);
    uct_ep_destroy(ep);
    uct_iface_close(handle);
}
