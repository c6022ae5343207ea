/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Device tests of srqud active messages: real verbs on a real (Soft-RoCE)
 * device, through UCT's public API.
 */

#include "srqud_fixture.h"
#include "srqud_peek.h"

#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/wait.h>
#include <ucs/time/time.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

using namespace srqud_test;

namespace {

const uint8_t AM_ID = 7;

/* Two interfaces on one worker; the receiver logs AM_ID messages, whose
 * sequence numbers start at 1 and carry the pattern for their number */
class srqud_am : public ::testing::Test, public iface_pair {
public:
    explicit srqud_am(bool two_workers = false) : iface_pair(two_workers) {}

    void SetUp() override
    {
        ASSERT_NO_FATAL_FAILURE(open_pair(AM_ID, 1));
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
        ssize_t ret = send_seq_bcopy(ep, AM_ID, seq, length);
        return (ret < 0) ? (ucs_status_t)ret : UCS_OK;
    }

    /* Send, progressing while the interface is out of resources */
    template <typename F> void send_retry(F send)
    {
        ASSERT_UCS_OK(repeat_while(UCS_ERR_NO_RESOURCE, send,
                                   [&] { sender->progress(); }, 10000000ul));
    }

    void flush_all()
    {
        ASSERT_UCS_OK(repeat_while(UCS_INPROGRESS, [&] {
            return uct_iface_flush(sender->handle, 0, NULL);
        }, [&] { sender->progress(); }, 10000000ul));
    }

    /* 16 B messages 1, 2, ... without progress until one is refused for
     * resources; @a seq: the last one sent. Call through
     * ASSERT_NO_FATAL_FAILURE. */
    void send_until_refused(uint64_t &seq)
    {
        ucs_status_t status;

        seq = 0;
        while ((status = send_short(seq + 1, 16)) == UCS_OK) {
            ++seq;
            ASSERT_LT(seq, 100000u);
        }
        ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
        ASSERT_GT(seq, 0u);
    }

    /* A pending request that sends message @a seq (16 B by am_short, or
     * @a bcopy bytes by am_bcopy) when dispatched */
    struct pending_send {
        pending_send(srqud_am *test, uint64_t seq, size_t bcopy = 0) :
            test(test), seq(seq), bcopy(bcopy)
        {
            super.func = [](uct_pending_req_t *self) -> ucs_status_t {
                pending_send *r     = reinterpret_cast<pending_send*>(self);
                ucs_status_t status = (r->bcopy > 0) ?
                                      r->test->send_bcopy(r->seq, r->bcopy) :
                                      r->test->send_short(r->seq, 16);
                if (status == UCS_OK) {
                    r->done = true;
                }
                return status;
            };
        }

        uct_pending_req_t super; /* first: the request is the object */
        srqud_am          *test;
        uint64_t          seq;
        size_t            bcopy;
        bool              done = false;
    };

    /* all @a n messages received, intact and in order */
    void expect_received(uint64_t n)
    {
        ASSERT_TRUE(progress_until(*receiver, [&] { return log.count == n; }))
            << "received " << log.count << " of " << n;
        EXPECT_EQ(0u, log.bad);
        EXPECT_TRUE(log.in_order());
    }
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

/* Batches from the third send since a progress call (TX_BATCH_AFTER 2,
 * not the default 8) that hold however slowly the test sends: no send
 * finds its batch older than UCX_SRQUD_TX_BATCH_WAIT (5us;
 * a_send_after_batch_wait_rings_the_batch below tests it), so the counts
 * do not depend on how the machine schedules the test */
class srqud_am_batched : public srqud_am {
protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_TX_BATCH_WAIT", "100s");
        set_env("UCX_SRQUD_TX_BATCH_AFTER", "2");
    }
};

/* While earlier sends are in the send queue, new ones wait in a batch and
 * go by one doorbell (UCX_SRQUD_TX_BATCH, default 16): every message still
 * arrives once, intact and in order, with far fewer ibv_post_send calls */
TEST_F(srqud_am_batched, batched_sends_share_doorbells)
{
    const unsigned n                     = 4000;
    const uct_srqud_iface_stats_t before = srqud_stats(sender->handle);

    for (uint64_t seq = 1; seq <= n; ++seq) {
        send_retry([&] { return send_short(seq, 8); });
    }
    flush_all();
    ASSERT_NO_FATAL_FAILURE(expect_received(n));

    const uct_srqud_iface_stats_t after = srqud_stats(sender->handle);
    unsigned long packets   = after.tx_packets - before.tx_packets;
    unsigned long doorbells = after.tx_doorbells - before.tx_doorbells;
    EXPECT_GE(packets, n);
    EXPECT_LE(doorbells * 4, packets) << doorbells << " doorbells for "
                                      << packets << " packets";
}

/* A sender that batched and went away to compute without progressing:
 * the async thread rings within a tick, and the receiver gets everything */
TEST_F(srqud_am_batched, batched_sends_leave_while_the_sender_computes)
{
    const unsigned n = 5;
    uct_srqud_iface_stats_t st;

    {
        async_hold hold(ctx.async);
        /* the CREQ and the first message go at once (TX_BATCH_AFTER);
         * the next ones wait for a doorbell */
        for (uint64_t seq = 1; seq <= n; ++seq) {
            ASSERT_UCS_OK(send_short(seq, 8));
        }
        st = srqud_stats(sender->handle);
        EXPECT_LT(st.tx_doorbells, st.tx_packets);
    }

    /* the sender is never progressed from here */
    ASSERT_NO_FATAL_FAILURE(expect_received(n));
    EXPECT_GT(srqud_stats(sender->handle).tx_doorbells, st.tx_doorbells);
}

/* All @a n messages of a pair delivered, intact and in order, both
 * progressed (srqud_am::expect_received for the fixture's pair) */
static void expect_delivered(iface_pair &pair, uint64_t n)
{
    ASSERT_TRUE(pair.progress_both_until([&] { return pair.log.count == n; }))
        << "received " << pair.log.count << " of " << n;
    EXPECT_TRUE(pair.log.in_order());
    EXPECT_EQ(0u, pair.log.bad);
}

/* A send descriptor is held until its packet is acknowledged: TX_QUEUE_LEN
 * + TX_WINDOW of them are allocated and registered at iface open, and a
 * window of sends to a receiver that does not progress allocates no more.
 * Grown on demand (128 a chunk before), each chunk was a registration in
 * the middle of the sends: milliseconds on Soft-RoCE. */
TEST(srqud_tx_pool, a_window_of_sends_allocates_nothing)
{
    const unsigned queue_len = 128, window = 128, msgs = 120;
    unsigned chunks, elems;
    iface_pair pair;

    pair.set_env("UCX_SRQUD_TX_QUEUE_LEN", std::to_string(queue_len).c_str());
    pair.set_env("UCX_SRQUD_TX_WINDOW", std::to_string(window).c_str());
    ASSERT_NO_FATAL_FAILURE(pair.open_pair(AM_ID, 1));
    srqud_peek_tx_pool(pair.sender->handle, &chunks, &elems);
    EXPECT_EQ(1u, chunks);
    EXPECT_GE(elems, queue_len + window);

    const size_t length = pair.sender->attr.cap.am.max_bcopy;
    for (uint64_t seq = 1; seq <= msgs; ++seq) {
        /* the sender's own progress frees send queue slots; the receiver
         * takes nothing, so no acknowledgement frees a descriptor */
        ASSERT_EQ(UCS_OK, repeat_while(UCS_ERR_NO_RESOURCE, [&] {
            ssize_t ret = send_seq_bcopy(pair.ep, AM_ID, seq, length);
            return (ret < 0) ? (ucs_status_t)ret : UCS_OK;
        }, [&] { pair.sender->progress(); }, 10000000ul))
            << "send " << seq << " of a window of " << window;
    }
    srqud_peek_tx_pool(pair.sender->handle, &chunks, &elems);
    EXPECT_EQ(1u, chunks) << elems << " descriptors";

    ASSERT_NO_FATAL_FAILURE(expect_delivered(pair, msgs));
}

/* A large window is not registered whole at open: the first chunk stops
 * at 1024 descriptors, and the pool grows when a window fills */
TEST(srqud_tx_pool, a_large_window_is_not_allocated_at_open)
{
    const unsigned queue_len = 256, window = 4096;
    unsigned chunks, elems;
    iface_pair pair;

    pair.set_env("UCX_SRQUD_TX_WINDOW", std::to_string(window).c_str());
    ASSERT_NO_FATAL_FAILURE(pair.open_pair(AM_ID, 1));
    srqud_peek_tx_pool(pair.sender->handle, &chunks, &elems);
    EXPECT_EQ(1u, chunks);
    EXPECT_GE(elems, 1024u);
    EXPECT_LT(elems, queue_len + window);
}

/* Batched sends are signaled, one completion each. A sender that sends
 * until the queue is out of slots and only then progresses (a broadcast's
 * root: its calls end without progress) gets more than TX_MAX_POLL slots
 * back from that call: the CQ is polled until half the queue is free.
 * With TX_MAX_POLL a call it was out again within TX_MAX_POLL sends. */
TEST(srqud_tx_poll, one_progress_frees_half_the_queue)
{
    const unsigned queue_len = 128, max_poll = 4;
    unsigned sent = 0, first, second;
    uint64_t payload = 0;
    iface_pair pair;

    pair.set_env("UCX_SRQUD_TX_QUEUE_LEN", std::to_string(queue_len).c_str());
    pair.set_env("UCX_SRQUD_TX_CQ_MODERATION", "32"); /* at most a quarter */
    pair.set_env("UCX_SRQUD_TX_MAX_POLL", std::to_string(max_poll).c_str());
    pair.set_env("UCX_SRQUD_TX_WINDOW", "1024");
    pair.set_env("UCX_SRQUD_TX_BATCH_AFTER", "0");
    /* no async progress or hold timer within the test: only the user's
     * call may poll the send CQ */
    pair.set_env("UCX_SRQUD_ASYNC_TICK", "1s");
    pair.set_env("UCX_SRQUD_TX_HOLD", "1s");
    pair.set_env("UCX_SRQUD_RTO_MIN", "2s");
    pair.set_env("UCX_SRQUD_RTO_MAX", "2s");
    ASSERT_NO_FATAL_FAILURE(pair.open_pair(AM_ID, 1));

    auto send_until_full = [&] {
        unsigned n = 0;
        while (uct_ep_am_short(pair.ep, AM_ID, sent + 1, &payload, 0) ==
               UCS_OK) {
            ++sent;
            ++n;
        }
        return n;
    };

    first = send_until_full();
    EXPECT_GE(first, queue_len / 2) << "sends before the queue was full";
    usleep(20000); /* the device completes the batches rung so far */
    pair.sender->progress();
    second = send_until_full();
    EXPECT_GE(second, queue_len / 2 - max_poll)
        << "sends after one progress call (TX_MAX_POLL " << max_poll << ")";

    ASSERT_NO_FATAL_FAILURE(expect_delivered(pair, sent));
}

TEST(srqud_am_batch, off_posts_every_send_alone)
{
    iface_pair pair;
    pair.set_env("UCX_SRQUD_TX_BATCH", "1");
    ASSERT_NO_FATAL_FAILURE(pair.open_pair(AM_ID, 1));

    uint64_t payload = 0;
    for (uint64_t seq = 1; seq <= 1000; ++seq) {
        ASSERT_UCS_OK(repeat_while(UCS_ERR_NO_RESOURCE, [&] {
            return uct_ep_am_short(pair.ep, AM_ID, seq, &payload, 0);
        }, [&] { pair.sender->progress(); }, 10000000ul));
    }
    ASSERT_TRUE(pair.progress_both_until([&] { return pair.log.count == 1000; }))
        << "received " << pair.log.count;
    EXPECT_TRUE(pair.log.in_order());

    const uct_srqud_iface_stats_t st = srqud_stats(pair.sender->handle);
    EXPECT_EQ(st.tx_packets, st.tx_doorbells);
}

/* A receiver waiting for each message in turn makes calls that find
 * nothing: up to UCX_SRQUD_QUIET_POLLS of them in a row only look at the
 * receive CQ, without the clock and the timers, and a packet such a call
 * finds is delivered as a full call would deliver it. 2,000 messages of 0-64 B,
 * each awaited by the receiver alone: every one intact and in order; with
 * 4 some of the calls made after each message found nothing that way
 * and some that awaited the next found it so, with 0 none did. */
static void quiet_polls_deliver(const char *quiet_polls, bool quiet)
{
    iface_pair pair;
    pair.set_env("UCX_SRQUD_QUIET_POLLS", quiet_polls);
    ASSERT_NO_FATAL_FAILURE(pair.open_pair(AM_ID, 1));

    const uint64_t n = 2000;
    std::vector<uint8_t> payload(64);
    for (uint64_t seq = 1; seq <= n; ++seq) {
        size_t length = seq % (payload.size() + 1);
        fill_pattern(payload.data(), length, seq);
        ASSERT_UCS_OK(repeat_while(UCS_ERR_NO_RESOURCE, [&] {
            return uct_ep_am_short(pair.ep, AM_ID, seq, payload.data(), length);
        }, [&] { pair.sender->progress(); }, 10000000ul));
        ASSERT_TRUE(progress_until(*pair.receiver,
                                   [&] { return pair.log.count == seq; }))
            << "message " << seq << " not received";
        for (int i = 0; i < 3; ++i) {
            pair.receiver->progress();  /* nothing more to find */
        }
    }
    EXPECT_EQ(0u, pair.log.bad);
    EXPECT_TRUE(pair.log.in_order());
    for (uint64_t seq = 1; seq <= n; ++seq) {
        ASSERT_EQ(sizeof(uint64_t) + seq % (payload.size() + 1),
                  pair.log.lengths[seq]) << "seq " << seq;
    }
    ASSERT_UCS_OK(pair.flush_sender());

    const uct_srqud_iface_stats_t st = srqud_stats(pair.receiver->handle);
    EXPECT_GE(st.rx_packets, n);
    if (quiet) {
        EXPECT_GT(st.progress_quiet, 0u);
        EXPECT_GT(st.progress_early, 0u);
    } else {
        EXPECT_EQ(0u, st.progress_quiet);
        EXPECT_EQ(0u, st.progress_early);
    }
}

TEST(srqud_am_quiet, calls_that_find_nothing_only_look_at_the_cq)
{
    quiet_polls_deliver("4", true);
}

TEST(srqud_am_quiet, zero_looks_at_everything_in_every_call)
{
    quiet_polls_deliver("0", false);
}

/* A ping-pong's sends go into an idle send queue: inline, they need no
 * completion (UCX_SRQUD_TX_CQ_MODERATION), and one every N frees the send
 * queue slots of the unsignaled ones before it. With a queue of 16 slots
 * and a completion every 8, 500 messages get through only if the slots
 * are counted right; every one arrives intact and in order. */
TEST(srqud_am_batch, lone_inline_sends_go_unsignaled)
{
    const unsigned n = 500;

    for (const char *moderation : {"1", "8"}) {
        SCOPED_TRACE(std::string("TX_CQ_MODERATION=") + moderation);
        iface_pair pair;
        pair.set_env("UCX_SRQUD_TX_QUEUE_LEN", "16");
        pair.set_env("UCX_SRQUD_TX_CQ_MODERATION", moderation);
        ASSERT_NO_FATAL_FAILURE(pair.open_pair(AM_ID, 1));

        std::vector<uint8_t> payload(24);
        for (uint64_t seq = 1; seq <= n; ++seq) {
            fill_pattern(payload.data(), payload.size(), seq);
            ASSERT_UCS_OK(repeat_while(UCS_ERR_NO_RESOURCE, [&] {
                return uct_ep_am_short(pair.ep, AM_ID, seq, payload.data(),
                                       payload.size());
            }, [&] { pair.sender->progress(); }, 10000000ul));
            ASSERT_TRUE(pair.progress_both_until([&] {
                return pair.log.count == seq;
            })) << "message " << seq << " never arrived";
        }
        EXPECT_TRUE(pair.log.in_order());
        EXPECT_EQ(0u, pair.log.bad);
        ASSERT_UCS_OK(pair.flush_sender());

        const uct_srqud_iface_stats_t st = srqud_stats(pair.sender->handle);
        if (std::string(moderation) == "1") {
            EXPECT_EQ(0u, st.tx_unsignaled);
        } else {
            /* most went alone into an idle queue, and at least one of
             * each 8 packets posted was signaled */
            EXPECT_GE(st.tx_unsignaled, n / 2);
            EXPECT_LE(st.tx_unsignaled, st.tx_packets - st.tx_packets / 8);
        }
    }
}

/* The start of the batch tests below: a pair connected by message 1,
 * nothing of it left in the send queue */
static void open_flushed_pair(iface_pair &pair)
{
    ASSERT_NO_FATAL_FAILURE(pair.open_pair(AM_ID, 1));
    ASSERT_GT(send_seq_bcopy(pair.ep, AM_ID, 1, 64), 0);
    ASSERT_UCS_OK(pair.flush_sender());
}

/* A progress call, then messages 2 and 3 into the queue that the first
 * makes busy (larger than an inline send: signaled); the sender's counters
 * after the progress and after the two sends */
static void progress_then_send_two(iface_pair &pair,
                                   uct_srqud_iface_stats_t *before,
                                   uct_srqud_iface_stats_t *after)
{
    pair.sender->progress();
    *before = srqud_stats(pair.sender->handle);
    ASSERT_GT(send_seq_bcopy(pair.ep, AM_ID, 2, 1024), 0);
    ASSERT_GT(send_seq_bcopy(pair.ep, AM_ID, 3, 16), 0);
    *after = srqud_stats(pair.sender->handle);
}

/* A progress call, then messages 2 to 1 + @a n of 16 B; the sender's
 * counters after the progress and after the sends */
static void progress_then_send(iface_pair &pair, uint64_t n,
                               uct_srqud_iface_stats_t *before,
                               uct_srqud_iface_stats_t *after)
{
    pair.sender->progress();
    *before = srqud_stats(pair.sender->handle);
    for (uint64_t seq = 2; seq < 2 + n; ++seq) {
        ASSERT_GT(send_seq_bcopy(pair.ep, AM_ID, seq, 16), 0);
    }
    *after = srqud_stats(pair.sender->handle);
}

/* Outside progress the first UCX_SRQUD_TX_BATCH_AFTER sends since the last
 * progress go at once even into a busy send queue: a 4 KB MPI message is
 * two packets, the first signaled, and its second must not wait for the
 * next progress. A third waits for a doorbell; with 0 the second already
 * does. The async thread is held off, so that no tick resets the count
 * between the sends. */
TEST(srqud_am_batch, first_sends_after_progress_go_at_once)
{
    for (const char *after : {"2", "0"}) {
        SCOPED_TRACE(std::string("TX_BATCH_AFTER=") + after);
        const bool two = (std::string(after) == "2");
        iface_pair pair;
        pair.set_env("UCX_SRQUD_TX_BATCH_AFTER", after);
        pair.set_env("UCX_SRQUD_TX_BATCH_WAIT", "100s");
        ASSERT_NO_FATAL_FAILURE(open_flushed_pair(pair));

        uct_srqud_iface_stats_t before, second, third;
        {
            async_hold hold(pair.ctx.async);
            ASSERT_NO_FATAL_FAILURE(
                    progress_then_send_two(pair, &before, &second));
            ASSERT_GT(send_seq_bcopy(pair.ep, AM_ID, 4, 16), 0);
            third = srqud_stats(pair.sender->handle);
        }

        EXPECT_EQ(2u, second.tx_packets - before.tx_packets);
        EXPECT_EQ(3u, third.tx_packets - before.tx_packets);
        if (two) {
            EXPECT_EQ(2u, second.tx_doorbells - before.tx_doorbells);
            EXPECT_EQ(2u, third.tx_doorbells - before.tx_doorbells);
        } else {
            /* the first may wait too, for a completion not yet polled */
            EXPECT_LE(second.tx_doorbells - before.tx_doorbells, 1u);
        }

        ASSERT_NO_FATAL_FAILURE(expect_delivered(pair, 4));
    }
}

/* UCX_SRQUD_TX_BATCH_IDLE: every send outside progress waits, into an idle
 * queue too and from the first one on, and the sender's next progress
 * posts them all with one doorbell. The async thread is held off, so that
 * only that progress can ring them. */
TEST(srqud_am_batch, idle_batching_posts_a_step_with_one_doorbell)
{
    const uint64_t n = 3;
    iface_pair pair;
    pair.set_env("UCX_SRQUD_TX_BATCH_IDLE", "y");
    pair.set_env("UCX_SRQUD_TX_BATCH_WAIT", "100s");
    ASSERT_NO_FATAL_FAILURE(open_flushed_pair(pair));

    uct_srqud_iface_stats_t before, sent, rung;
    {
        async_hold hold(pair.ctx.async);
        ASSERT_NO_FATAL_FAILURE(progress_then_send(pair, n, &before, &sent));
        pair.sender->progress();
        rung = srqud_stats(pair.sender->handle);
    }

    EXPECT_EQ(n, sent.tx_packets - before.tx_packets);
    EXPECT_EQ(0u, sent.tx_doorbells - before.tx_doorbells);
    EXPECT_EQ(1u, rung.tx_doorbells - sent.tx_doorbells);
    ASSERT_NO_FATAL_FAILURE(expect_delivered(pair, 1 + n));
}

/* Without an async thread (UCX's poll mode) there is no TX_HOLD timer to
 * set for a batch: a hold marked all the same was cleared only by the
 * async tick, which nothing runs there, and kept every later progress
 * call a full one. A batch of 3 messages, delivered and acknowledged,
 * then 1,000 calls of the sender's: some only look at the CQ. */
TEST(srqud_am_batch, without_an_async_thread_a_batch_leaves_calls_quiet)
{
    const uint64_t n = 3;
    iface_pair pair;
    pair.set_env("UCX_SRQUD_QUIET_POLLS", "4");
    pair.set_env("UCX_SRQUD_TX_BATCH_IDLE", "y");
    pair.set_env("UCX_SRQUD_TX_BATCH_WAIT", "100s");
    pair.ctx.async_mode = UCS_ASYNC_MODE_POLL;
    ASSERT_NO_FATAL_FAILURE(open_flushed_pair(pair));

    uct_srqud_iface_stats_t before, sent;
    ASSERT_NO_FATAL_FAILURE(progress_then_send(pair, n, &before, &sent));
    EXPECT_EQ(n, sent.tx_packets - before.tx_packets);
    EXPECT_EQ(0u, sent.tx_doorbells - before.tx_doorbells) << "not batched";
    ASSERT_NO_FATAL_FAILURE(expect_delivered(pair, 1 + n));
    ASSERT_UCS_OK(pair.flush_sender());

    const unsigned long quiet = srqud_stats(pair.sender->handle).progress_quiet;
    for (int i = 0; i < 1000; ++i) {
        pair.sender->progress();
    }
    EXPECT_GT(srqud_stats(pair.sender->handle).progress_quiet, quiet);
}

/* UCX_SRQUD_TX_BATCH_IDLE=auto: a step (the user's sends between two
 * progress calls) batches from its first send, into an idle queue, once
 * steps of several sends prevail (two more than smaller steps); otherwise
 * its sends go at once. So a ping-pong's lone sends never wait, a
 * collective's steps to several peers share a doorbell, and steps of two
 * and one sends in turn do not batch. The async thread is held off, so
 * that only the progress calls ring the batches. */
struct auto_step {
    unsigned sends;      /* the user's sends of the step */
    unsigned doorbells;  /* before the progress that ends it (several at
                          * once: TX_BATCH_AFTER); 0: batched */
};

static void expect_auto_steps(const char *step_sends,
                              const std::vector<auto_step> &steps)
{
    uint64_t seq = 2;
    unsigned batched = 0;
    iface_pair pair;
    pair.set_env("UCX_SRQUD_TX_BATCH_IDLE", "auto");
    pair.set_env("UCX_SRQUD_TX_BATCH_STEP", step_sends);
    pair.set_env("UCX_SRQUD_TX_BATCH_WAIT", "100s");
    /* the receiver acknowledges nothing until the end: no resend may add
     * a doorbell to a step, however slow the machine */
    pair.set_env("UCX_SRQUD_RTO_MIN", "1s");
    ASSERT_NO_FATAL_FAILURE(open_flushed_pair(pair));

    uct_srqud_iface_stats_t start, before, sent, rung;
    {
        async_hold hold(pair.ctx.async);
        pair.sender->progress();
        start = rung = srqud_stats(pair.sender->handle);
        for (const auto &step : steps) {
            SCOPED_TRACE("message " + std::to_string(seq));
            before = srqud_stats(pair.sender->handle);
            for (unsigned i = 0; i < step.sends; ++i) {
                ASSERT_GT(send_seq_bcopy(pair.ep, AM_ID, seq++, 16), 0);
            }
            sent = srqud_stats(pair.sender->handle);
            pair.sender->progress();
            rung = srqud_stats(pair.sender->handle);

            EXPECT_EQ(step.sends, sent.tx_packets - before.tx_packets);
            EXPECT_EQ(step.doorbells, sent.tx_doorbells - before.tx_doorbells);
            EXPECT_EQ((step.doorbells == 0) ? 1u : 0u,
                      rung.tx_doorbells - sent.tx_doorbells);
            batched += (step.doorbells == 0);
        }
    }

    EXPECT_EQ(steps.size(), rung.tx_user_steps - start.tx_user_steps);
    EXPECT_EQ(batched, rung.tx_idle_steps - start.tx_idle_steps);
    ASSERT_NO_FATAL_FAILURE(expect_delivered(pair, seq - 1));
}

/* TX_BATCH_STEP 2: steps of two sends count as several */
TEST(srqud_am_batch, auto_idle_batching_follows_the_steps)
{
    expect_auto_steps("2", {{1, 1}, {3, 3}, {3, 3}, {3, 0}, {1, 0}, {1, 0},
                            {1, 1}, {2, 2}, {1, 1}, {2, 2}, {1, 1}});
}

/* TX_BATCH_STEP 3 (the default): steps of two sends (a 4 KB message's
 * packets) count as small ones and never start batching */
TEST(srqud_am_batch, auto_idle_batching_counts_steps_of_tx_batch_step)
{
    expect_auto_steps("3", {{2, 2}, {2, 2}, {3, 3}, {3, 3}, {3, 0}, {2, 0},
                            {2, 0}, {2, 2}, {2, 2}});
}

/* The user goes to sleep (uct_iface_event_arm) owing an acknowledgement
 * it held back for a reply to carry: it goes before the call returns, not
 * into a batch (TX_BATCH_IDLE=y batches every send outside progress) that
 * would wait for the sleeper's next call or TX_HOLD. The async thread is
 * held off, so that nothing else can ring it. */
TEST(srqud_am_batch, event_arm_rings_the_acks_it_sends)
{
    iface_pair pair;
    pair.set_env("UCX_SRQUD_TX_BATCH_IDLE", "y");
    pair.set_env("UCX_SRQUD_TX_BATCH_WAIT", "100s");
    pair.set_env("UCX_SRQUD_ACK_DELAY", "60s");
    pair.set_env("UCX_SRQUD_RTO_MIN", "120s");
    pair.set_env("UCX_SRQUD_RTO_MAX", "120s");
    pair.set_env("UCX_SRQUD_TIMEOUT", "300s");
    ASSERT_NO_FATAL_FAILURE(open_flushed_pair(pair));

    async_hold hold(pair.ctx.async);
    ASSERT_GT(send_seq_bcopy(pair.ep, AM_ID, 2, 16), 0);
    pair.sender->progress();
    ASSERT_TRUE(progress_until(*pair.receiver,
                               [&] { return pair.log.count == 2; }))
        << "received " << pair.log.count;

    /* nothing left to poll: the arming call that sends the ack returns
     * UCS_OK, with no progress call after it that could ring a batch */
    for (int i = 0; i < 100; ++i) {
        pair.receiver->progress();
    }
    uct_srqud_iface_stats_t before = srqud_stats(pair.receiver->handle);
    ASSERT_UCS_OK(uct_iface_event_arm(pair.receiver->handle, UCT_EVENT_RECV));
    uct_srqud_iface_stats_t after = srqud_stats(pair.receiver->handle);

    EXPECT_EQ(1u, after.acks_sent - before.acks_sent);
    EXPECT_EQ(1u, after.tx_doorbells - before.tx_doorbells)
        << "the acknowledgement waits in a batch";
    EXPECT_TRUE(pair.log.in_order());
    EXPECT_EQ(0u, pair.log.bad);
}

/* A sender that goes on sending without progress (a broadcast's root):
 * the first send after its batch waited UCX_SRQUD_TX_BATCH_WAIT rings the
 * batch, so that the peer does not get the messages in bursts of
 * TX_BATCH. The async thread is held off and TX_HOLD is long: only that
 * send can ring it. The wait is long enough (200 ms) that no scheduling
 * ages the batch before the test's pause does. */
TEST(srqud_am_batch, a_send_after_batch_wait_rings_the_batch)
{
    iface_pair pair;
    pair.set_env("UCX_SRQUD_TX_BATCH_WAIT", "200ms");
    pair.set_env("UCX_SRQUD_TX_HOLD", "10ms");
    pair.set_env("UCX_SRQUD_TX_BATCH_AFTER", "2");
    ASSERT_NO_FATAL_FAILURE(open_flushed_pair(pair));

    uct_srqud_iface_stats_t before, two, held, rung;
    async_hold hold(pair.ctx.async);
    /* they go at once (TX_BATCH_AFTER), the third starts a batch */
    ASSERT_NO_FATAL_FAILURE(progress_then_send_two(pair, &before, &two));
    ASSERT_GT(send_seq_bcopy(pair.ep, AM_ID, 4, 16), 0);
    held = srqud_stats(pair.sender->handle);
    usleep(400000);
    ASSERT_GT(send_seq_bcopy(pair.ep, AM_ID, 5, 16), 0);
    rung = srqud_stats(pair.sender->handle);

    EXPECT_EQ(3u, held.tx_packets - before.tx_packets);
    EXPECT_EQ(2u, held.tx_doorbells - before.tx_doorbells);
    EXPECT_EQ(4u, rung.tx_packets - before.tx_packets);
    EXPECT_EQ(3u, rung.tx_doorbells - before.tx_doorbells);

    /* the sender makes no call: the doorbell of message 5 sent 4 too */
    ASSERT_TRUE(progress_until(*pair.receiver,
                               [&] { return pair.log.count == 5; }))
        << "received " << pair.log.count;
    EXPECT_TRUE(pair.log.in_order());
    EXPECT_EQ(0u, pair.log.bad);
    EXPECT_EQ(before.tx_hold_posted,
              srqud_stats(pair.sender->handle).tx_hold_posted);
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

/* A stream of sends that stops without a progress call: from the third
 * (UCX_SRQUD_TX_BATCH_AFTER; the send queue is busy) they wait in a batch,
 * and the async thread posts the batch after TX_HOLD. The ticks are made
 * long (60 s, so the watchdog of a user away would take 120 s): only the
 * batch's own timer brings the messages within the 30 s the receiver
 * waits. A worker each, as two processes: the receiver's progress does
 * not progress the sender. TX_HOLD is 20 ms, longer than the loop of
 * sends: a timer that expired inside one of them would be skipped by
 * UCX's async thread (the lock taken) and expire no more (without
 * TX_HOLD_MOVE), which a busy machine made happen with 1 ms. */
class srqud_am_hold : public srqud_am {
public:
    srqud_am_hold() : srqud_am(true) {}

protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_ASYNC_TICK", "60s");
        set_env("UCX_SRQUD_RTO_MIN", "60s");
        set_env("UCX_SRQUD_RTO_MAX", "120s");
        set_env("UCX_SRQUD_TIMEOUT", "300s");
        set_env("UCX_SRQUD_TX_HOLD", "20ms");
        set_env("UCX_SRQUD_TX_BATCH_WAIT", "100s");
        set_env("UCX_SRQUD_TX_BATCH_AFTER", "2");
    }

    /* the receiver alone progresses until @a n messages came, at most 30 s
     * (the sender makes no call meanwhile); then they must be whole and
     * in order */
    void receive_without_the_sender(uint64_t n, const char *what)
    {
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(30);
        while ((log.count < n) && (ucs_get_time() < deadline)) {
            receiver->progress();
        }
        ASSERT_EQ(n, log.count) << what;
        EXPECT_EQ(0u, log.bad);
        EXPECT_TRUE(log.in_order());
    }
};

TEST_F(srqud_am_hold, batch_leaves_without_a_user_call)
{
    const uint64_t n = 10;
    for (uint64_t seq = 1; seq <= n; ++seq) {
        ASSERT_UCS_OK(send_short(seq, 16));
    }
    uct_srqud_iface_stats_t st = srqud_stats(sender->handle);
    ASSERT_LT(st.tx_doorbells, st.tx_packets) << "nothing was batched";

    ASSERT_NO_FATAL_FAILURE(receive_without_the_sender(
            n, "the batch did not leave without the user"));
    EXPECT_GE(srqud_stats(sender->handle).tx_hold_posted, 1u);
    /* a worker each: the receiver's progress sends the acknowledgements */
    ASSERT_UCS_OK(flush_sender());
}

/* With UCX_SRQUD_TX_HOLD_MOVE a sender that goes on sending moves its
 * batch's timer on: a batch that starts in the last quarter of the
 * timer's wait sets it again, so that the async thread does not wake (for
 * nothing, on the sender's core). With
 * TX_HOLD 2 s: a batch at 0 s, its TX_BATCH sends at 1.6 s, the next send
 * starts a batch and the timer is for 3.6 s; at 2.4 s nothing has been
 * posted (before, the async thread posted the batch at 2 s). An attempt
 * in which the machine slept past a timer does not count: it is made
 * again. */
class srqud_am_hold_long : public srqud_am_hold {
protected:
    void setup_env() override
    {
        srqud_am_hold::setup_env();
        set_env("UCX_SRQUD_TX_HOLD", "2s");
        set_env("UCX_SRQUD_TX_HOLD_MOVE", "y");
    }
};

TEST_F(srqud_am_hold_long, a_sender_that_goes_on_moves_the_timer_on)
{
    const unsigned batch = 16; /* UCX_SRQUD_TX_BATCH's default */
    uint64_t seq         = 0;
    bool deferred        = false;

    for (int attempt = 0; (attempt < 3) && !deferred; ++attempt) {
        /* a user that progresses (the timer moves on only for one that
         * progressed within a tick); the first two sends after it go at
         * once (TX_BATCH_AFTER) */
        ASSERT_UCS_OK(flush_sender());
        sender->progress();
        for (int i = 0; i < 3; ++i) {
            ASSERT_UCS_OK(send_short(++seq, 16));
        }
        ucs_time_t start               = ucs_get_time();
        uct_srqud_iface_stats_t before = srqud_stats(sender->handle);
        usleep(1600000);
        for (unsigned i = 1; i < batch; ++i) {
            ASSERT_UCS_OK(send_short(++seq, 16));
        }
        ASSERT_UCS_OK(send_short(++seq, 16));
        uct_srqud_iface_stats_t sent = srqud_stats(sender->handle);
        if ((ucs_get_time() - start >= ucs_time_from_sec(1.9)) ||
            (sent.tx_hold_posted != before.tx_hold_posted)) {
            continue; /* slept past the first timer */
        }
        EXPECT_EQ(before.tx_hold_deferred + 1, sent.tx_hold_deferred);
        EXPECT_EQ(before.tx_doorbells + 1, sent.tx_doorbells);

        ucs_time_t moved = ucs_get_time();
        usleep(800000);
        uct_srqud_iface_stats_t later = srqud_stats(sender->handle);
        if (ucs_get_time() - moved >= ucs_time_from_sec(1.9)) {
            continue; /* slept past the timer it was moved to */
        }
        EXPECT_EQ(before.tx_hold_posted, later.tx_hold_posted)
            << "the timer expired while the sender went on";
        deferred = true;
    }
    ASSERT_TRUE(deferred) << "the machine slept past 1.9 s three times";

    ASSERT_NO_FATAL_FAILURE(receive_without_the_sender(
            seq, "the last batch did not leave"));
    ASSERT_UCS_OK(flush_sender());
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


namespace {

/* Messages of up to three packets (UCX_SRQUD_AM_PACKETS=3, on any device);
 * with @a two_workers the receiver's worker progresses only when the test
 * says, and its async thread takes the packets meanwhile */
class srqud_am_chain : public srqud_am {
public:
    explicit srqud_am_chain(bool two_workers = false) :
        srqud_am(two_workers)
    {
    }

protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_AM_PACKETS", "3");
        set_env("UCX_SRQUD_TIMEOUT", "10s");
    }

    /* one packet's payload (am_zcopy's limit) */
    size_t packet() const
    {
        return sender->attr.cap.am.max_zcopy;
    }

    /* single packets and chains of two and three, in turn */
    std::vector<size_t> sizes() const
    {
        return {16, packet() + 1, 100, packet() + 64, 2 * packet() - 1,
                packet(), 2 * packet(), 2 * packet() + 1, 3 * packet() - 1,
                3 * packet()};
    }

    /* sends sizes() @a rounds times, then flushes progressing the sender
     * only; returns the messages' lengths by sequence number */
    void send_rounds(int rounds, std::map<uint64_t, size_t> &sent)
    {
        uint64_t seq = 0;

        for (int round = 0; round < rounds; ++round) {
            for (size_t len : sizes()) {
                ++seq;
                sent[seq] = len;
                send_retry([&] { return send_bcopy(seq, len); });
            }
        }
        flush_all();
    }

    void expect_lengths(const std::map<uint64_t, size_t> &sent)
    {
        for (const auto &s : sent) {
            EXPECT_EQ(s.second, log.lengths[s.first]) << "seq " << s.first;
        }
    }

    unsigned long chains(const std::map<uint64_t, size_t> &sent) const
    {
        unsigned long n = 0;
        for (const auto &s : sent) {
            n += (s.second > packet());
        }
        return n;
    }
};


/* The sender sends chains, the receiver none (UCX_SRQUD_AM_PACKETS=1):
 * the setting is each side's, as between an HCA's auto and Soft-RoCE's */
class srqud_am_chain_to_one : public srqud_am_chain {
protected:
    void between_opens() override
    {
        /* the guard of setup_env() restores the variable */
        ASSERT_EQ(0, setenv("UCX_SRQUD_AM_PACKETS", "1", 1));
    }
};


class srqud_am_chain_async : public srqud_am_chain {
public:
    srqud_am_chain_async() : srqud_am_chain(true) {}
};


/* A window of 8 packets: after the CREQ and two messages of three, room
 * for one packet is left, not for a third message */
class srqud_am_chain_window : public srqud_am_chain {
protected:
    void setup_env() override
    {
        srqud_am_chain::setup_env();
        set_env("UCX_SRQUD_TX_WINDOW", "8");
        set_env("UCX_SRQUD_ACK_THRESH", "4");
        set_env("UCX_SRQUD_BACK_ACK_EVERY", "4");
    }
};

} // namespace


/* A message above one packet goes as its packets with one doorbell, and
 * arrives whole, intact, in order and of its length */
TEST_F(srqud_am_chain, bcopy_chains_share_a_doorbell_and_arrive_whole)
{
    ASSERT_EQ(3 * packet(), sender->attr.cap.am.max_bcopy);
    const uct_srqud_iface_stats_t before = srqud_stats(sender->handle);
    std::map<uint64_t, size_t> sent;

    ASSERT_NO_FATAL_FAILURE(send_rounds(30, sent));
    ASSERT_NO_FATAL_FAILURE(expect_received(sent.size()));
    expect_lengths(sent);

    const uct_srqud_iface_stats_t after = srqud_stats(sender->handle);
    const uct_srqud_iface_stats_t rx    = srqud_stats(receiver->handle);
    EXPECT_EQ(chains(sent), after.tx_am_chains - before.tx_am_chains);
    EXPECT_EQ(chains(sent), rx.rx_am_chains);
    EXPECT_EQ(0u, rx.rx_chain_bad);
    /* one doorbell a message at most, plus the CREQ's and the resends' */
    const unsigned long doorbells = after.tx_doorbells - before.tx_doorbells;
    const unsigned long resends   = after.tx_retransmits -
                                    before.tx_retransmits;
    EXPECT_LE(doorbells, sent.size() + resends + 4)
        << doorbells << " doorbells for " << sent.size() << " messages, "
        << (after.tx_packets - before.tx_packets) << " packets";
}

/* An interface that sends single packets receives messages of several:
 * what it sends is its own setting, what its peers send is theirs */
TEST_F(srqud_am_chain_to_one, one_packet_interface_receives_chains_whole)
{
    ASSERT_EQ(3 * packet(), sender->attr.cap.am.max_bcopy);
    ASSERT_EQ(packet(), receiver->attr.cap.am.max_bcopy);
    std::map<uint64_t, size_t> sent;

    ASSERT_NO_FATAL_FAILURE(send_rounds(10, sent));
    ASSERT_NO_FATAL_FAILURE(expect_received(sent.size()));
    expect_lengths(sent);
    EXPECT_EQ(chains(sent), srqud_stats(receiver->handle).rx_am_chains);
    EXPECT_EQ(0u, srqud_stats(receiver->handle).rx_chain_bad);
}

/* Chains the receiver's async thread accepted while the user was away are
 * delivered whole by the user's progress, in order with the single packets
 * queued around them */
TEST_F(srqud_am_chain_async, bcopy_chains_accepted_while_away_arrive_whole)
{
    std::map<uint64_t, size_t> sent;

    /* the flush completes only once the receiver's async thread has
     * accepted and acknowledged everything */
    ASSERT_NO_FATAL_FAILURE(send_rounds(10, sent));
    EXPECT_EQ(0u, log.count); /* nothing was delivered behind its back */
    EXPECT_GT(srqud_stats(receiver->handle).async_queued, 0u);

    ASSERT_NO_FATAL_FAILURE(expect_received(sent.size()));
    expect_lengths(sent);
    EXPECT_EQ(chains(sent), srqud_stats(receiver->handle).rx_am_chains);
}

/* An am_bcopy refused for want of room for its packets is queued by
 * pending_add (not answered BUSY, which has the caller send again at once
 * to be refused again, for as long as nothing else frees the room), and
 * the dispatch sends it once the room is there */
TEST_F(srqud_am_chain_window, bcopy_refused_for_its_packets_waits_in_pending)
{
    async_hold hold(ctx.async); /* nothing is acknowledged meanwhile */
    uint64_t seq = 0;
    ucs_status_t status;

    while ((status = send_bcopy(seq + 1, 3 * packet())) == UCS_OK) {
        ++seq;
        ASSERT_LT(seq, 100u);
    }
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
    ASSERT_EQ(2u, seq);

    pending_send req(this, seq + 1, 3 * packet());
    ASSERT_UCS_OK(uct_ep_pending_add(ep, &req.super, 0));
    hold.release();

    ASSERT_TRUE(progress_until(*sender, [&] { return req.done; }));
    ++seq;
    flush_all();
    ASSERT_NO_FATAL_FAILURE(expect_received(seq));
}

/* An empty am_bcopy is one packet with AM_PACKETS above 1 too, delivered
 * empty, and no message of several */
TEST_F(srqud_am_chain, bcopy_of_nothing_is_one_packet)
{
    const uint8_t empty_id = AM_ID + 2;
    struct seen {
        unsigned count  = 0;
        size_t   length = 1;
    } s;
    ASSERT_UCS_OK(uct_iface_set_am_handler(receiver->handle, empty_id,
            [](void *arg, void *data, size_t length,
               unsigned flags) -> ucs_status_t {
                seen *p = static_cast<seen*>(arg);
                ++p->count;
                p->length = length;
                return UCS_OK;
            }, &s, 0));
    const uct_srqud_iface_stats_t before = srqud_stats(sender->handle);

    ssize_t sent = -1;
    send_retry([&] {
        sent = uct_ep_am_bcopy(ep, empty_id,
                               [](void *dest, void *arg) -> size_t {
                                   return 0;
                               }, nullptr, 0);
        return (sent < 0) ? (ucs_status_t)sent : UCS_OK;
    });
    EXPECT_EQ(0, sent);
    flush_all();

    ASSERT_TRUE(progress_until(*receiver, [&] { return s.count > 0; }));
    EXPECT_EQ(1u, s.count);
    EXPECT_EQ(0u, s.length);
    EXPECT_EQ(before.tx_am_chains, srqud_stats(sender->handle).tx_am_chains);
}
