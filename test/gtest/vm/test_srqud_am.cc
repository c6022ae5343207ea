/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Device tests of srqud active messages: real verbs on a real (Soft-RoCE)
 * device, through UCT's public API. Batching, the batch timer and
 * multi-packet messages have files of their own (test_srqud_am_*.cc).
 */

#include "srqud_am.h"
#include "srqud_peek.h"

#include <poll.h>
#include <ucs/time/time.h>
#include <unistd.h>

#include <cstring>
#include <vector>

using namespace srqud_test;

TEST_F(srqud_am, iface_attributes)
{
    const uct_iface_attr_t &a = sender->attr;
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_AM_SHORT);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_AM_BCOPY);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_PENDING);
    EXPECT_TRUE(a.cap.event_flags & UCT_IFACE_FLAG_EVENT_FD);
    EXPECT_GE(a.cap.am.max_short, 64u);
    /* one packet: an MTU minus the srqud header (rxe drops anything
     * larger silently) */
    EXPECT_GE(a.cap.am.max_zcopy, 256u - 20u);
    EXPECT_LE(a.cap.am.max_zcopy, 4096u - 20u);
    /* an am_bcopy of two packets: UCX_SRQUD_AM_PACKETS is auto, 2 on
     * Soft-RoCE, where these tests run */
    EXPECT_EQ(2 * a.cap.am.max_zcopy, a.cap.am.max_bcopy);
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

    ASSERT_NO_FATAL_FAILURE(expect_received(seq));
    for (uint64_t s = 1; s <= seq; ++s) {
        EXPECT_EQ(sizeof(uint64_t) + (s - 1), log.lengths[s]) << "seq " << s;
    }
}

TEST_F(srqud_am, bcopy_sizes_up_to_max_verified)
{
    const size_t max    = sender->attr.cap.am.max_bcopy;
    const size_t packet = sender->attr.cap.am.max_zcopy;
    std::vector<size_t> sizes = {8, 9, 63, 64, 65, 255, 256, 1000, 1024,
                                 packet - 1, packet, packet + 1,
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

    ASSERT_NO_FATAL_FAILURE(expect_received(seq));
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
    /* Exhaust the send queue without progressing; UCX's async thread,
     * which acknowledges and completes for an interface not progressed for
     * a tick, is held off until the pending request is in and flush has
     * answered (else resources may free in between: pending_add then
     * answers BUSY) */
    async_hold hold(ctx.async);
    uint64_t seq;
    ucs_status_t status;
    ASSERT_NO_FATAL_FAILURE(send_until_refused(seq));

    pending_send req(this, seq + 1);
    ASSERT_UCS_OK(uct_ep_pending_add(ep, &req.super, 0));

    /* The endpoint has pending work: flush must ask the caller to wait */
    comp_t comp;
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_flush(ep, 0, &comp.super));
    hold.release();

    ASSERT_TRUE(progress_until(*sender, [&] { return req.done; }));
    ++seq;

    /* The pending send may have refilled the window (under injected loss
     * acks come late): flush then asks again for resources, as UCT allows */
    ASSERT_TRUE(progress_until(*sender, [&] {
        status = uct_ep_flush(ep, 0, &comp.super);
        return status != UCS_ERR_NO_RESOURCE;
    }));
    if (status == UCS_INPROGRESS) {
        ASSERT_TRUE(progress_until(*sender, [&] { return comp.super.count == 0; }));
    } else {
        ASSERT_UCS_OK(status);
    }

    ASSERT_NO_FATAL_FAILURE(expect_received(seq));
}

/* A send refused for lack of resources, then the async thread progressing
 * for the idle user and freeing them before the caller queues its request:
 * pending_add must take it (UCX 1.17.0's UCT suite saw BUSY there, in
 * send_ooo_with_pending_another_ep), and the user's next progress send it.
 * A send queue of 32 is the resource (the window of 256 is not): the
 * async thread polls the send completions that free it. */
class srqud_am_small_queue : public srqud_am {
protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_TX_QUEUE_LEN", "32");
        set_env("UCX_SRQUD_TX_CQ_MODERATION", "16");
    }
};

TEST_F(srqud_am_small_queue, pending_add_after_async_freed_resources)
{
    unsigned long before = srqud_stats(sender->handle).async_progress;
    uint64_t seq;
    ASSERT_NO_FATAL_FAILURE(send_until_refused(seq));

    /* No progress from here: the async thread runs both interfaces (the
     * receiver acknowledges, the sender's completions and acks free its
     * queue and window), every tick while they stay idle */
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(60);
    while ((srqud_stats(sender->handle).async_progress == before) &&
           (ucs_get_time() < deadline)) {
        usleep(1000);
    }
    ASSERT_GT(srqud_stats(sender->handle).async_progress, before)
        << "the async thread did not progress the idle sender in 60 s";
    /* until the acknowledgements are in too: the send would go now */
    while (!srqud_peek_ep_can_send(ep) && (ucs_get_time() < deadline)) {
        usleep(1000);
    }
    ASSERT_TRUE(srqud_peek_ep_can_send(ep))
        << "the async thread freed no resources in 60 s";

    pending_send req(this, seq + 1);
    ASSERT_UCS_OK(uct_ep_pending_add(ep, &req.super, 0));
    ASSERT_TRUE(progress_until(*sender, [&] { return req.done; }));
    flush_all();
    ASSERT_NO_FATAL_FAILURE(expect_received(seq + 1));
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
