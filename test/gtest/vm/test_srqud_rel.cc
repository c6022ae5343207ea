/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Device tests of srqud's reliability features beyond plain messaging:
 * am_zcopy (payload left in user memory until acknowledged), progress on
 * UCX's async thread while the receiver computes, keepalive (ep_check),
 * endpoints that linger after destroy, flush with cancel.
 */

#include "srqud_fixture.h"

#include <uct/api/uct.h>

#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

using namespace srqud_test;

namespace {

const uint8_t AM_ID = 9;

struct rx_state {
    unsigned count    = 0;
    unsigned bad      = 0;
    bool     in_order = true;
    uint64_t next_seq = 0;
};

/* Payload: 8-byte sequence number, then the pattern for that number;
 * sequence numbers must arrive as 0, 1, 2, ... */
ucs_status_t rx_handler(void *arg, void *data, size_t length, unsigned flags)
{
    rx_state *rx = static_cast<rx_state*>(arg);
    uint64_t seq;

    if (length < sizeof(seq)) {
        ++rx->bad;
        return UCS_OK;
    }
    memcpy(&seq, data, sizeof(seq));
    if (!check_pattern(static_cast<char*>(data) + sizeof(seq),
                       length - sizeof(seq), seq)) {
        ++rx->bad;
    }
    if (seq != rx->next_seq) {
        rx->in_order = false;
    }
    rx->next_seq = seq + 1;
    ++rx->count;
    return UCS_OK;
}


struct bcopy_arg {
    uint64_t seq;
    size_t   length;
};

size_t pack_cb(void *dest, void *arg)
{
    bcopy_arg *a = static_cast<bcopy_arg*>(arg);
    memcpy(dest, &a->seq, sizeof(a->seq));
    fill_pattern(static_cast<char*>(dest) + sizeof(a->seq),
                 a->length - sizeof(a->seq), a->seq);
    return a->length;
}


struct counting_comp {
    uct_completion_t super;
    unsigned         calls = 0;

    counting_comp(int count = 1)
    {
        super.func   = [](uct_completion_t *self) {
            ++reinterpret_cast<counting_comp*>(self)->calls;
        };
        super.count  = count;
        super.status = UCS_OK;
    }
};


class srqud_rel : public ::testing::Test {
public:
    void SetUp() override
    {
        ASSERT_UCS_OK(ctx.init());
        sender.reset(new iface(ctx));
        receiver.reset(new iface(ctx));
        ASSERT_UCS_OK(sender->open());
        ASSERT_UCS_OK(receiver->open());
        ASSERT_UCS_OK(uct_iface_set_am_handler(receiver->handle, AM_ID,
                                               rx_handler, &rx, 0));
        ASSERT_UCS_OK(sender->connect(*receiver, &ep));
    }

    void TearDown() override
    {
        if (ep != nullptr) {
            uct_ep_destroy(ep);
        }
        sender.reset();
        receiver.reset();
    }

    ucs_status_t send_bcopy(uint64_t seq, size_t length)
    {
        bcopy_arg arg = {seq, length};
        ssize_t ret   = uct_ep_am_bcopy(ep, AM_ID, pack_cb, &arg, 0);
        return (ret < 0) ? (ucs_status_t)ret : UCS_OK;
    }

    /* Send with retries; only the sender progresses */
    void send_all(unsigned count, size_t length)
    {
        for (uint64_t seq = 0; seq < count; ++seq) {
            ucs_status_t status;
            unsigned long n = 0;
            while ((status = send_bcopy(seq, length)) == UCS_ERR_NO_RESOURCE) {
                sender->progress();
                ASSERT_LT(++n, 20000000ul) << "no resources for seq " << seq;
            }
            ASSERT_UCS_OK(status);
        }
    }

    template <typename F> bool progress_both_until(F done,
                                                   unsigned long max = 40000000ul)
    {
        for (unsigned long n = 0; (n < max) && !done(); ++n) {
            sender->progress();
            receiver->progress();
        }
        return done();
    }

    uct_ctx                ctx;
    std::unique_ptr<iface> sender, receiver;
    uct_ep_h               ep = nullptr;
    rx_state               rx;
};

} // namespace


/* am_zcopy: header from the call, payload gathered from two registered
 * regions; the completion runs once the peer acknowledged, and the bytes
 * arrive intact and in order */
TEST_F(srqud_rel, am_zcopy_payload_from_user_memory)
{
    const size_t max_payload = sender->attr.cap.am.max_zcopy;
    ASSERT_TRUE(sender->attr.cap.flags & UCT_IFACE_FLAG_AM_ZCOPY);
    ASSERT_GE(sender->attr.cap.am.max_iov, 2u);
    ASSERT_GE(max_payload, 1024u);

    const unsigned count = 200;
    std::vector<std::vector<uint8_t>> bufs(count);
    std::vector<uct_mem_h> memhs(count);
    std::vector<counting_comp> comps(count);

    for (unsigned seq = 0; seq < count; ++seq) {
        /* sizes from 8 (sequence number only) to the largest packet */
        size_t length = sizeof(uint64_t) +
                        (seq * 37) % (max_payload - sizeof(uint64_t) + 1);
        bufs[seq].resize(length);
        uint64_t seq64 = seq;
        memcpy(bufs[seq].data(), &seq64, sizeof(seq64));
        fill_pattern(bufs[seq].data() + sizeof(seq64), length - sizeof(seq64),
                     seq);
        ASSERT_UCS_OK(uct_md_mem_reg(ctx.md, bufs[seq].data(), length,
                                     UCT_MD_MEM_ACCESS_ALL, &memhs[seq]));
    }

    for (unsigned seq = 0; seq < count; ++seq) {
        /* the first 8 bytes travel as the AM header, the rest as two
         * scatter/gather entries of user memory */
        size_t rest  = bufs[seq].size() - sizeof(uint64_t);
        size_t half  = rest / 2;
        uct_iov_t iov[2];
        iov[0].buffer = bufs[seq].data() + sizeof(uint64_t);
        iov[0].length = half;
        iov[0].memh   = memhs[seq];
        iov[0].stride = 0;
        iov[0].count  = 1;
        iov[1].buffer = bufs[seq].data() + sizeof(uint64_t) + half;
        iov[1].length = rest - half;
        iov[1].memh   = memhs[seq];
        iov[1].stride = 0;
        iov[1].count  = 1;

        ucs_status_t status;
        unsigned long n = 0;
        while ((status = uct_ep_am_zcopy(ep, AM_ID, bufs[seq].data(),
                                         sizeof(uint64_t), iov, 2, 0,
                                         &comps[seq].super)) ==
               UCS_ERR_NO_RESOURCE) {
            sender->progress();
            receiver->progress();
            ASSERT_LT(++n, 20000000ul);
        }
        ASSERT_EQ(UCS_INPROGRESS, status);
    }

    ASSERT_TRUE(progress_both_until([&] {
        if (rx.count < count) {
            return false;
        }
        for (auto &c : comps) {
            if (c.calls == 0) {
                return false;
            }
        }
        return true;
    })) << "received " << rx.count << " of " << count;

    EXPECT_EQ(0u, rx.bad);
    EXPECT_TRUE(rx.in_order);
    for (unsigned seq = 0; seq < count; ++seq) {
        EXPECT_EQ(1u, comps[seq].calls) << seq;
        EXPECT_EQ(0, comps[seq].super.count) << seq;
        EXPECT_EQ(UCS_OK, comps[seq].super.status) << seq;
        uct_md_mem_dereg(ctx.md, memhs[seq]);
    }
    EXPECT_EQ(count, srqud_stats(sender->handle).am_zcopy);
}


/* A receiver that computes and never calls progress: UCX's async thread
 * acknowledges for it, so the sender's flush completes and, with a peer
 * timeout of one second and three seconds of "compute", no endpoint
 * fails. The messages are then delivered in order when it progresses. */
TEST(srqud_rel_async, receiver_computing_still_acknowledges)
{
    env_guard t1("UCX_SRQUD_TIMEOUT", "1s");

    /* two workers, as two processes would have: progressing the sender's
     * does not progress the receiver */
    uct_ctx tx_ctx, rx_ctx;
    ASSERT_UCS_OK(tx_ctx.init());
    ASSERT_UCS_OK(rx_ctx.init());
    iface sender(tx_ctx), receiver(rx_ctx);
    ASSERT_UCS_OK(sender.open());
    ASSERT_UCS_OK(receiver.open());
    rx_state rx;
    ASSERT_UCS_OK(uct_iface_set_am_handler(receiver.handle, AM_ID, rx_handler,
                                           &rx, 0));
    uct_ep_h ep;
    ASSERT_UCS_OK(sender.connect(receiver, &ep));

    /* more than one window (256), and more than the SRQ's first posting
     * would hold if nothing refilled it (the async thread does) */
    const unsigned count = 1500;
    for (uint64_t seq = 0; seq < count; ++seq) {
        bcopy_arg arg = {seq, 512};
        ssize_t ret;
        unsigned long n = 0;
        while ((ret = uct_ep_am_bcopy(ep, AM_ID, pack_cb, &arg, 0)) ==
               UCS_ERR_NO_RESOURCE) {
            sender.progress();   /* the receiver never does */
            ASSERT_LT(++n, 200000000ul) << "window never opened at " << seq;
        }
        ASSERT_GE(ret, 0) << ucs_status_string((ucs_status_t)ret);
    }

    counting_comp comp;
    ucs_status_t status = uct_ep_flush(ep, 0, &comp.super);
    ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS))
        << ucs_status_string(status);
    if (status == UCS_INPROGRESS) {
        for (unsigned long n = 0; (comp.calls == 0) && (n < 400000000ul); ++n) {
            sender.progress();
        }
        ASSERT_EQ(1u, comp.calls);
        EXPECT_EQ(UCS_OK, comp.super.status);
    }
    EXPECT_EQ(0u, rx.count); /* nothing was delivered behind its back */

    /* "compute" three times the peer timeout; the sender keeps
     * progressing and must not declare the receiver dead */
    ASSERT_EQ(UCS_OK, uct_ep_check(ep, 0, NULL));
    for (int i = 0; i < 300; ++i) {
        sender.progress();
        usleep(10000);
    }
    EXPECT_EQ(0u, srqud_stats(sender.handle).ep_failures);
    EXPECT_EQ(0u, srqud_stats(receiver.handle).ep_failures);
    EXPECT_GT(srqud_stats(receiver.handle).async_queued, 0u);

    for (unsigned long n = 0; (rx.count < count) && (n < 40000000ul); ++n) {
        receiver.progress();
    }
    EXPECT_EQ(count, rx.count);
    EXPECT_EQ(0u, rx.bad);
    EXPECT_TRUE(rx.in_order);
    uct_ep_destroy(ep);
}


/* ep_check: a live peer answers the keepalive; a vanished one fails the
 * endpoint with UCS_ERR_ENDPOINT_TIMEOUT through the error handler */
TEST(srqud_rel_keepalive, ep_check_detects_a_vanished_peer)
{
    env_guard t1("UCX_SRQUD_TIMEOUT", "1s");
    env_guard t2("UCX_SRQUD_RTO_MAX", "100ms");

    uct_ctx ctx;
    ASSERT_UCS_OK(ctx.init());

    struct err_state {
        unsigned     count  = 0;
        ucs_status_t status = UCS_OK;
    } err;

    iface live(ctx);
    ASSERT_UCS_OK(live.open());

    uct_iface_config_t *config;
    ASSERT_UCS_OK(uct_md_iface_config_read(ctx.md, "srqud", NULL, NULL,
                                           &config));
    uct_iface_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "srqud";
    params.mode.device.dev_name = ctx.dev_name.c_str();
    params.err_handler_arg      = &err;
    params.err_handler          = [](void *arg, uct_ep_h ep,
                                     ucs_status_t status) -> ucs_status_t {
        err_state *e = static_cast<err_state*>(arg);
        ++e->count;
        e->status = status;
        return UCS_OK;
    };
    uct_iface_h handle;
    ASSERT_UCS_OK(uct_iface_open(ctx.md, ctx.worker, &params, config, &handle));
    uct_config_release(config);
    uct_iface_progress_enable(handle, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    std::vector<uint8_t> dead_dev, dead_iface;
    {
        iface peer(ctx);
        ASSERT_UCS_OK(peer.open());
        dead_dev   = peer.dev_addr;
        dead_iface = peer.iface_addr;
    }

    auto connect = [&](const std::vector<uint8_t> &dev,
                       const std::vector<uint8_t> &ifa) {
        uct_ep_params_t ep_params;
        memset(&ep_params, 0, sizeof(ep_params));
        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                               UCT_EP_PARAM_FIELD_DEV_ADDR |
                               UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.iface      = handle;
        ep_params.dev_addr   = (const uct_device_addr_t*)dev.data();
        ep_params.iface_addr = (const uct_iface_addr_t*)ifa.data();
        uct_ep_h ep = nullptr;
        EXPECT_EQ(UCS_OK, uct_ep_create(&ep_params, &ep));
        return ep;
    };

    uct_ep_h ep_live = connect(live.dev_addr, live.iface_addr);
    uct_ep_h ep_dead = connect(dead_dev, dead_iface);
    ASSERT_TRUE((ep_live != nullptr) && (ep_dead != nullptr));

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_check(ep_live, 1, NULL));
    ASSERT_UCS_OK(uct_ep_check(ep_live, 0, NULL));
    ASSERT_UCS_OK(uct_ep_check(ep_dead, 0, NULL));
    EXPECT_EQ(2u, srqud_stats(handle).keepalives);

    for (unsigned long i = 0; (err.count == 0) && (i < 400000000ul); ++i) {
        uct_worker_progress(ctx.worker);
        live.progress();
    }
    EXPECT_EQ(1u, err.count);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, err.status);
    /* the live one got its answer: its flush is immediate */
    EXPECT_EQ(UCS_OK, uct_ep_flush(ep_live, 0, NULL));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, uct_ep_flush(ep_dead, 0, NULL));

    uct_ep_destroy(ep_live);
    uct_ep_destroy(ep_dead);
    uct_iface_close(handle);
}


/* Destroy right after sending, over a lossy path: the endpoint lingers
 * until its data is acknowledged, so every message still arrives, and
 * flushing the interface waits for it */
TEST(srqud_rel_linger, destroyed_endpoint_delivers_its_data)
{
    env_guard t1("UCX_SRQUD_FAULT_TX_DROP", "0.05");
    env_guard t2("UCX_LOG_LEVEL", "error");

    uct_ctx ctx;
    ASSERT_UCS_OK(ctx.init());
    iface sender(ctx), receiver(ctx);
    ASSERT_UCS_OK(sender.open());
    ASSERT_UCS_OK(receiver.open());
    rx_state rx;
    ASSERT_UCS_OK(uct_iface_set_am_handler(receiver.handle, AM_ID, rx_handler,
                                           &rx, 0));
    uct_ep_h ep;
    ASSERT_UCS_OK(sender.connect(receiver, &ep));

    const unsigned count = 200;
    for (uint64_t seq = 0; seq < count; ++seq) {
        bcopy_arg arg = {seq, 256};
        ssize_t ret;
        unsigned long n = 0;
        while ((ret = uct_ep_am_bcopy(ep, AM_ID, pack_cb, &arg, 0)) ==
               UCS_ERR_NO_RESOURCE) {
            sender.progress();
            receiver.progress();
            ASSERT_LT(++n, 20000000ul);
        }
        ASSERT_GE(ret, 0);
    }
    uct_ep_destroy(ep);
    EXPECT_EQ(1u, srqud_stats(sender.handle).ep_lingered);

    ucs_status_t status;
    unsigned long n = 0;
    while ((status = uct_iface_flush(sender.handle, 0, NULL)) ==
           UCS_INPROGRESS) {
        sender.progress();
        receiver.progress();
        ASSERT_LT(++n, 400000000ul) << "lingering data never acknowledged";
    }
    ASSERT_UCS_OK(status);
    for (n = 0; (rx.count < count) && (n < 20000000ul); ++n) {
        receiver.progress();
    }
    EXPECT_EQ(count, rx.count);
    EXPECT_EQ(0u, rx.bad);
    EXPECT_TRUE(rx.in_order);
    EXPECT_GT(srqud_stats(sender.handle).fault_dropped, 0u);
}


/* Flush with UCT_FLUSH_FLAG_CANCEL gives up what is unacknowledged: the
 * pending am_zcopy completion runs with UCS_ERR_CANCELED and the endpoint
 * refuses further sends */
TEST(srqud_rel_cancel, flush_cancel_completes_outstanding_with_canceled)
{
    /* the receiver never progresses and its async thread first runs after
     * 10 s, so nothing gets acknowledged during the test */
    env_guard t1("UCX_SRQUD_RTO_MIN", "10s");
    env_guard t2("UCX_SRQUD_RTO_MAX", "10s");
    env_guard t3("UCX_SRQUD_ASYNC_TICK", "10s");

    uct_ctx ctx;
    ASSERT_UCS_OK(ctx.init());
    iface sender(ctx), receiver(ctx);
    ASSERT_UCS_OK(sender.open());
    ASSERT_UCS_OK(receiver.open());
    uct_ep_h ep;
    ASSERT_UCS_OK(sender.connect(receiver, &ep));

    std::vector<uint8_t> buf(1024, 0x5a);
    uct_mem_h memh;
    ASSERT_UCS_OK(uct_md_mem_reg(ctx.md, buf.data(), buf.size(),
                                 UCT_MD_MEM_ACCESS_ALL, &memh));

    counting_comp comp;
    uct_iov_t iov = {buf.data(), buf.size(), memh, 0, 1};
    uint64_t hdr  = 0;
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_am_zcopy(ep, AM_ID, &hdr, sizeof(hdr),
                                              &iov, 1, 0, &comp.super));
    EXPECT_EQ(0u, comp.calls);
    ASSERT_UCS_OK(uct_ep_flush(ep, UCT_FLUSH_FLAG_CANCEL, NULL));

    EXPECT_EQ(1u, comp.calls);
    EXPECT_EQ(UCS_ERR_CANCELED, comp.super.status);
    bcopy_arg arg = {1, 64};
    EXPECT_EQ(UCS_ERR_CANCELED,
              (ucs_status_t)uct_ep_am_bcopy(ep, AM_ID, pack_cb, &arg, 0));
    uct_ep_destroy(ep);
    uct_md_mem_dereg(ctx.md, memh);
}
