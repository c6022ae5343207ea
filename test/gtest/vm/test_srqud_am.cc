/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Device tests of srqud active messages: real verbs on a real (Soft-RoCE)
 * device, through UCT's public API.
 */

#include "srqud_fixture.h"

#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>

using namespace srqud_test;

namespace {

const uint8_t AM_ID = 7;

/* What a receiver saw: per sequence number, the length and whether the
 * payload matched the pattern */
struct rx_log {
    unsigned              count   = 0;
    unsigned              bad     = 0;
    uint64_t              last_seq = 0;
    bool                  in_order = true;
    std::map<uint64_t, size_t> lengths;
};

/* Payload: 8-byte sequence number, then the pattern for that number */
ucs_status_t am_handler(void *arg, void *data, size_t length, unsigned flags)
{
    rx_log *log = static_cast<rx_log*>(arg);
    uint64_t seq;

    if (length < sizeof(seq)) {
        ++log->bad;
        return UCS_OK;
    }

    memcpy(&seq, data, sizeof(seq));
    if (!check_pattern(static_cast<char*>(data) + sizeof(seq),
                       length - sizeof(seq), seq)) {
        ++log->bad;
    }
    if ((log->count > 0) && (seq <= log->last_seq)) {
        log->in_order = false;
    }
    log->last_seq       = seq;
    log->lengths[seq]   = length;
    ++log->count;
    return UCS_OK;
}

struct bcopy_arg {
    uint64_t seq;
    size_t   length;   /* total, sequence number included */
};

size_t pack_cb(void *dest, void *arg)
{
    bcopy_arg *a = static_cast<bcopy_arg*>(arg);
    memcpy(dest, &a->seq, sizeof(a->seq));
    fill_pattern(static_cast<char*>(dest) + sizeof(a->seq),
                 a->length - sizeof(a->seq), a->seq);
    return a->length;
}

/* Progress until @a done or a bound on iterations; returns done() */
template <typename F>
bool progress_until(iface &i, F done, unsigned long max_iter = 20000000ul)
{
    for (unsigned long n = 0; n < max_iter; ++n) {
        if (done()) {
            return true;
        }
        i.progress();
    }
    return done();
}

class srqud_am : public ::testing::Test {
public:
    void SetUp() override
    {
        ASSERT_UCS_OK(ctx.init());
        sender.reset(new iface(ctx));
        receiver.reset(new iface(ctx));
        ASSERT_UCS_OK(sender->open());
        ASSERT_UCS_OK(receiver->open());
        ASSERT_UCS_OK(uct_iface_set_am_handler(receiver->handle, AM_ID,
                                               am_handler, &log,
                                               0));
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

    ucs_status_t send_short(uint64_t seq, size_t length)
    {
        std::vector<uint8_t> payload(length);
        fill_pattern(payload.data(), length, seq);
        /* The UCT header carries the sequence number */
        return uct_ep_am_short(ep, AM_ID, seq, payload.data(), length);
    }

    ucs_status_t send_bcopy(uint64_t seq, size_t length)
    {
        bcopy_arg arg = {seq, length};
        ssize_t ret   = uct_ep_am_bcopy(ep, AM_ID, pack_cb, &arg, 0);
        return (ret < 0) ? (ucs_status_t)ret : UCS_OK;
    }

    /* Send, progressing while the interface is out of resources */
    template <typename F> void send_retry(F send)
    {
        ucs_status_t status;
        unsigned long n = 0;
        while ((status = send()) == UCS_ERR_NO_RESOURCE) {
            sender->progress();
            ASSERT_LT(++n, 10000000ul) << "send never got resources";
        }
        ASSERT_UCS_OK(status);
    }

    void flush_all()
    {
        ucs_status_t status;
        unsigned long n = 0;
        while ((status = uct_iface_flush(sender->handle, 0, NULL)) ==
               UCS_INPROGRESS) {
            sender->progress();
            ASSERT_LT(++n, 10000000ul) << "flush did not complete";
        }
        ASSERT_UCS_OK(status);
    }

    uct_ctx                ctx;
    std::unique_ptr<iface> sender, receiver;
    uct_ep_h               ep = nullptr;
    rx_log                 log;
};

} // namespace


TEST_F(srqud_am, iface_attributes)
{
    const uct_iface_attr_t &a = sender->attr;
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_AM_SHORT);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_AM_BCOPY);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_PENDING);
    EXPECT_TRUE(a.cap.event_flags & UCT_IFACE_FLAG_EVENT_FD);
    EXPECT_GE(a.cap.am.max_short, 64u);
    /* one MTU minus the srqud header: rxe drops anything larger silently */
    EXPECT_GE(a.cap.am.max_bcopy, 256u - 12u);
    EXPECT_LE(a.cap.am.max_bcopy, 4096u - 12u);
    EXPECT_EQ(0u, a.ep_addr_len);
    EXPECT_GT(a.bandwidth.shared, 0.0);
}

TEST_F(srqud_am, short_all_sizes_verified)
{
    size_t max_payload = sender->attr.cap.am.max_short - sizeof(uint64_t);
    uint64_t seq       = 0;

    for (size_t len = 0; len <= max_payload; ++len) {
        ++seq;
        send_retry([&] { return send_short(seq, len); });
    }
    flush_all();

    ASSERT_TRUE(progress_until(*receiver, [&] { return log.count == seq; }))
        << "received " << log.count << " of " << seq;
    EXPECT_EQ(0u, log.bad);
    EXPECT_TRUE(log.in_order);
    for (uint64_t s = 1; s <= seq; ++s) {
        EXPECT_EQ(sizeof(uint64_t) + (s - 1), log.lengths[s]) << "seq " << s;
    }
}

TEST_F(srqud_am, bcopy_sizes_up_to_mtu_verified)
{
    const size_t max = sender->attr.cap.am.max_bcopy;
    std::vector<size_t> sizes = {8, 9, 63, 64, 65, 255, 256, 1000, 1024,
                                 max / 2, max - 1, max};
    uint64_t seq = 0;

    for (int round = 0; round < 20; ++round) {
        for (size_t len : sizes) {
            if (len > max) {
                continue;
            }
            ++seq;
            send_retry([&] { return send_bcopy(seq, len); });
        }
    }
    flush_all();

    ASSERT_TRUE(progress_until(*receiver, [&] { return log.count == seq; }))
        << "received " << log.count << " of " << seq;
    EXPECT_EQ(0u, log.bad);
    EXPECT_TRUE(log.in_order);
}

TEST_F(srqud_am, oversize_is_refused)
{
    size_t max = sender->attr.cap.am.max_short;
    std::vector<uint8_t> buf(max + 64);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_am_short(ep, AM_ID, 0, buf.data(), max));
}

TEST_F(srqud_am, pending_queue_and_flush_completion)
{
    /* Exhaust the send queue without progressing */
    uint64_t seq = 0;
    ucs_status_t status;
    while ((status = send_short(seq + 1, 16)) == UCS_OK) {
        ++seq;
        ASSERT_LT(seq, 100000u);
    }
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
    ASSERT_GT(seq, 0u);

    struct pending_req {
        uct_pending_req_t super;
        srqud_am          *test;
        uint64_t          seq;
        bool              done;
    } req;
    req.test        = this;
    req.seq         = seq + 1;
    req.done        = false;
    req.super.func  = [](uct_pending_req_t *self) -> ucs_status_t {
        pending_req *r      = reinterpret_cast<pending_req*>(self);
        ucs_status_t status = r->test->send_short(r->seq, 16);
        if (status == UCS_OK) {
            r->done = true;
        }
        return status;
    };
    ASSERT_UCS_OK(uct_ep_pending_add(ep, &req.super, 0));

    /* The endpoint has pending work: flush must ask the caller to wait */
    uct_completion_t comp;
    comp.func   = [](uct_completion_t *self) {};
    comp.count  = 1;
    comp.status = UCS_OK;
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_flush(ep, 0, &comp));

    ASSERT_TRUE(progress_until(*sender, [&] { return req.done; }));
    ++seq;

    /* The pending send may have refilled the window (under injected loss
     * acks come late): flush then asks again for resources, as UCT allows */
    ASSERT_TRUE(progress_until(*sender, [&] {
        status = uct_ep_flush(ep, 0, &comp);
        return status != UCS_ERR_NO_RESOURCE;
    }));
    if (status == UCS_INPROGRESS) {
        ASSERT_TRUE(progress_until(*sender, [&] { return comp.count == 0; }));
    } else {
        ASSERT_UCS_OK(status);
    }

    ASSERT_TRUE(progress_until(*receiver, [&] { return log.count == seq; }))
        << "received " << log.count << " of " << seq;
    EXPECT_EQ(0u, log.bad);
    EXPECT_TRUE(log.in_order);
}

TEST_F(srqud_am, event_fd_wakes_on_receive)
{
    int fd;
    ASSERT_UCS_OK(uct_iface_event_fd_get(receiver->handle, &fd));

    /* Nothing to receive: arming succeeds and the fd stays quiet */
    ucs_status_t status;
    while ((status = uct_iface_event_arm(receiver->handle, UCT_EVENT_RECV)) ==
           UCS_ERR_BUSY) {
        receiver->progress();
    }
    ASSERT_UCS_OK(status);
    struct pollfd pfd = {fd, POLLIN, 0};
    EXPECT_EQ(0, poll(&pfd, 1, 0));

    send_retry([&] { return send_short(1, 32); });
    flush_all();

    EXPECT_EQ(1, poll(&pfd, 1, 10000)) << "no event within 10 s";
    ASSERT_TRUE(progress_until(*receiver, [&] { return log.count == 1; }));
    EXPECT_EQ(0u, log.bad);
}

TEST_F(srqud_am, held_descriptor_is_released_later)
{
    /* A handler that keeps the buffer, as UCP does for unexpected messages */
    struct held {
        std::vector<void*> descs;
        unsigned           count = 0;
    } h;
    ASSERT_UCS_OK(uct_iface_set_am_handler(
        receiver->handle, AM_ID,
        [](void *arg, void *data, size_t length, unsigned flags) -> ucs_status_t {
            held *h = static_cast<held*>(arg);
            uint64_t seq;
            memcpy(&seq, data, sizeof(seq));
            ++h->count;
            if (!(flags & UCT_CB_PARAM_FLAG_DESC) ||
                !check_pattern(static_cast<char*>(data) + 8, length - 8, seq)) {
                return UCS_OK;
            }
            h->descs.push_back(data);
            return UCS_INPROGRESS;
        },
        &h, 0));

    const unsigned n = 2000; /* more than the SRQ holds */
    for (uint64_t seq = 1; seq <= n; ++seq) {
        send_retry([&] { return send_bcopy(seq, 200); });
        receiver->progress();
    }
    flush_all();
    ASSERT_TRUE(progress_until(*receiver, [&] { return h.count == n; }))
        << "received " << h.count << " of " << n;
    ASSERT_EQ(n, h.descs.size());

    /* Held buffers keep their contents until released */
    for (size_t i = 0; i < h.descs.size(); ++i) {
        uint64_t seq;
        memcpy(&seq, h.descs[i], sizeof(seq));
        EXPECT_EQ(i + 1, seq);
        EXPECT_TRUE(check_pattern(static_cast<char*>(h.descs[i]) + 8, 192, seq));
        uct_iface_release_desc(h.descs[i]);
    }
}
