/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Device tests of how srqud batches sends: doorbells shared by a batch,
 * sends that go at once or unsignaled, the send pool, quiet polls.
 */

#include "srqud_am.h"
#include "srqud_peek.h"

#include <ucs/time/time.h>
#include <chrono>
#include <unistd.h>

#include <vector>

using namespace srqud_test;

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
            return send_seq_bcopy_status(pair.ep, AM_ID, seq, length);
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

/* Messages 1 to @a n, each sent by @a send (again while the interface is
 * out of resources) and waited for; every one arrives intact and in order,
 * and the sender's flush completes. Call through ASSERT_NO_FATAL_FAILURE. */
template <typename F>
static void send_each_waited(iface_pair &pair, unsigned n, F send)
{
    for (uint64_t seq = 1; seq <= n; ++seq) {
        ASSERT_UCS_OK(repeat_while(UCS_ERR_NO_RESOURCE, [&] {
            return send(seq);
        }, [&] { pair.sender->progress(); }, 10000000ul));
        ASSERT_TRUE(pair.progress_both_until([&] {
            return pair.log.count == seq;
        })) << "message " << seq << " never arrived";
    }
    EXPECT_TRUE(pair.log.in_order());
    EXPECT_EQ(0u, pair.log.bad);
    ASSERT_UCS_OK(pair.flush_sender());
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
        ASSERT_NO_FATAL_FAILURE(send_each_waited(pair, n, [&](uint64_t seq) {
            fill_pattern(payload.data(), payload.size(), seq);
            return uct_ep_am_short(pair.ep, AM_ID, seq, payload.data(),
                                   payload.size());
        }));

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

/* Sends above the inline size go unsignaled too: the device reads such a
 * packet from its descriptor after the post, which a later completion (one
 * every TX_CQ_MODERATION sends) frees. A packet lost on the wire then
 * cannot be posted again from that descriptor, whose first post the
 * device may still read and no completion will tell while the sender only
 * waits: its resend goes as a copy. One message at a time, each waited
 * for, a tenth of the packets lost (posted with a Q_Key the receiving
 * device drops): every one arrives intact and in order, and the slots of
 * a 16-slot queue are counted right. */
TEST(srqud_am_batch, sends_above_inline_go_unsignaled_and_resend_as_copies)
{
    const unsigned n = 200;
    const size_t length = 1000;
    iface_pair pair;

    pair.set_env("UCX_SRQUD_TX_QUEUE_LEN", "16");
    pair.set_env("UCX_SRQUD_TX_CQ_MODERATION", "8");
    pair.set_env("UCX_SRQUD_RTO_MIN", "20ms");
    pair.drop_packets("0.1");
    ASSERT_NO_FATAL_FAILURE(pair.open_pair(AM_ID, 1));
    uct_iface_attr_t attr;
    ASSERT_UCS_OK(uct_iface_query(pair.sender->handle, &attr));
    ASSERT_LT(attr.cap.am.max_short, length); /* not inline */

    ASSERT_NO_FATAL_FAILURE(send_each_waited(pair, n, [&](uint64_t seq) {
        return send_seq_bcopy_status(pair.ep, AM_ID, seq, length);
    }));

    const uct_srqud_iface_stats_t st = srqud_stats(pair.sender->handle);
    printf("packets %lu unsignaled %lu dropped %lu retransmits %lu "
           "copies %lu\n", st.tx_packets, st.tx_unsignaled, st.fault_dropped,
           st.tx_retransmits, st.tx_resend_copies);
    EXPECT_GE(st.tx_unsignaled, n / 2);
    EXPECT_LE(st.tx_unsignaled, st.tx_packets - st.tx_packets / 8);
    EXPECT_GT(st.fault_dropped, 0u);
    EXPECT_GT(st.tx_resend_copies, 0u);
}

/* With a bounded send pool (UCX_SRQUD_TX_MAX_BUFS) the descriptors that
 * unsignaled sends above the inline size hold until a later completion
 * take a quarter of it at most. With 32 descriptors and a completion only
 * every 64 sends, messages sent one at a time held them all by about the
 * 31st: no send could take one, and nothing polled for a completion. */
TEST(srqud_am_batch, a_bounded_send_pool_is_not_held_for_completions)
{
    const unsigned n = 200;
    iface_pair pair;

    pair.set_env("UCX_SRQUD_TX_MAX_BUFS", "32");
    ASSERT_NO_FATAL_FAILURE(pair.open_pair(AM_ID, 1));
    ASSERT_NO_FATAL_FAILURE(send_each_waited(pair, n, [&](uint64_t seq) {
        return send_seq_bcopy_status(pair.ep, AM_ID, seq, 1000);
    }));

    const uct_srqud_iface_stats_t st = srqud_stats(pair.sender->handle);
    EXPECT_GE(st.tx_unsignaled, n / 2);
}

/* The start of the batch tests below: a pair connected by message 1,
 * nothing of it left in the send queue */
static void open_flushed_pair(iface_pair &pair)
{
    ASSERT_NO_FATAL_FAILURE(pair.open_pair(AM_ID, 1));
    ASSERT_GT(send_seq_bcopy(pair.ep, AM_ID, 1, 64), 0);
    ASSERT_UCS_OK(pair.flush_sender());
}

/* open_flushed_pair with UCX_SRQUD_TX_BATCH_AFTER @a after, batches that
 * no send finds old enough to ring, and no retransmission timeout in the
 * sender's progress after its sends, however slow the machine (a resend
 * is a doorbell the tests do not count on) */
static void open_batch_after_pair(iface_pair &pair, const char *after)
{
    pair.set_env("UCX_SRQUD_TX_BATCH_AFTER", after);
    pair.set_env("UCX_SRQUD_TX_BATCH_WAIT", "100s");
    pair.set_env("UCX_SRQUD_RTO_MIN", "1s");
    ASSERT_NO_FATAL_FAILURE(open_flushed_pair(pair));
}

/* A progress call, then messages 2 and 3 into the queue that the first
 * makes busy (a send since the last progress); the sender's counters
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
 * two packets, and its second must not wait for the next progress. A
 * third waits for a doorbell; with 0 the second already does. The async
 * thread is held off, so that no tick resets the count between the
 * sends. */
TEST(srqud_am_batch, first_sends_after_progress_go_at_once)
{
    for (const char *after : {"2", "0"}) {
        SCOPED_TRACE(std::string("TX_BATCH_AFTER=") + after);
        const bool two = (std::string(after) == "2");
        iface_pair pair;
        ASSERT_NO_FATAL_FAILURE(open_batch_after_pair(pair, after));

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

/* On Soft-RoCE, the device of these tests, UCX_SRQUD_TX_BATCH_AFTER=auto
 * is 8, a doorbell there being a system call: of 12 sends after a progress
 * call the first 8 go at once and the others wait for a doorbell, whose
 * hold sets the timer. inf (auto on an HCA, srqud_config.h; unit test
 * srqud_config) sends each at once, and sets no timer: the last message of
 * a stream waits for nothing. The async thread is held off, so that no
 * tick rings the batch. */
TEST(srqud_am_batch, a_stream_outside_progress_batches_only_where_set)
{
    const uint64_t n = 12;
    for (const char *after : {"auto", "inf"}) {
        SCOPED_TRACE(std::string("TX_BATCH_AFTER=") + after);
        const bool held = (std::string(after) == "auto");
        iface_pair pair;
        ASSERT_NO_FATAL_FAILURE(open_batch_after_pair(pair, after));

        uct_srqud_iface_stats_t before, sent, rung;
        {
            async_hold hold(pair.ctx.async);
            ASSERT_NO_FATAL_FAILURE(
                    progress_then_send(pair, n, &before, &sent));
            pair.sender->progress();
            rung = srqud_stats(pair.sender->handle);
        }

        EXPECT_EQ(n, sent.tx_packets - before.tx_packets);
        if (held) {
            EXPECT_EQ(8u, sent.tx_doorbells - before.tx_doorbells);
            EXPECT_EQ(1u, sent.timer_sets - before.timer_sets);
            EXPECT_EQ(1u, rung.tx_doorbells - sent.tx_doorbells);
        } else {
            EXPECT_EQ(n, sent.tx_doorbells - before.tx_doorbells);
            EXPECT_EQ(0u, sent.timer_sets - before.timer_sets);
            EXPECT_EQ(0u, rung.tx_doorbells - sent.tx_doorbells);
        }
        ASSERT_NO_FATAL_FAILURE(expect_delivered(pair, 1 + n));
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

/* The sender's progress calls turn quiet (only look at the CQ): within 5
 * million calls, not a fixed few, since they stay full while the batch's
 * signaled send waits for its completion, which Soft-RoCE writes from a
 * softirq that a busy host may hold off for milliseconds */
static void expect_calls_turn_quiet(iface_pair &pair)
{
    const unsigned long quiet = srqud_stats(pair.sender->handle).progress_quiet;
    bool seen = false;

    for (int i = 0; (i < 5000) && !seen; ++i) {
        for (int j = 0; j < 1000; ++j) {
            pair.sender->progress();
        }
        seen = srqud_stats(pair.sender->handle).progress_quiet > quiet;
    }
    char blockers[256];
    srqud_peek_quiet_blockers(pair.sender->handle, blockers, sizeof(blockers));
    EXPECT_TRUE(seen) << "every progress call stayed a full one; kept so by:"
                      << blockers;
}

/* A pair in UCX's poll mode (no async thread) whose sends of a progress
 * step batch and never grow old enough to ring before the next progress
 * call; the sender's quiet calls on, 4 at a time */
static void open_quiet_batch_pair(iface_pair &pair, const char *rto_min)
{
    pair.set_env("UCX_SRQUD_QUIET_POLLS", "4");
    pair.set_env("UCX_SRQUD_TX_BATCH_IDLE", "y");
    pair.set_env("UCX_SRQUD_TX_BATCH_WAIT", "100s");
    pair.set_env("UCX_SRQUD_RTO_MIN", rto_min);
    pair.ctx.async_mode = UCS_ASYNC_MODE_POLL;
    ASSERT_NO_FATAL_FAILURE(open_flushed_pair(pair));
}

/* Without an async thread (UCX's poll mode) there is no TX_HOLD timer to
 * set for a batch: a hold marked all the same was cleared only by the
 * async tick, which nothing runs there, and kept every later progress
 * call a full one. A batch of 3 messages, delivered and acknowledged,
 * then the sender's calls turn quiet. */
TEST(srqud_am_batch, without_an_async_thread_a_batch_leaves_calls_quiet)
{
    const uint64_t n = 3;
    iface_pair pair;
    ASSERT_NO_FATAL_FAILURE(open_quiet_batch_pair(pair, "20ms"));

    uct_srqud_iface_stats_t before, sent;
    ASSERT_NO_FATAL_FAILURE(progress_then_send(pair, n, &before, &sent));
    EXPECT_EQ(n, sent.tx_packets - before.tx_packets);
    EXPECT_EQ(0u, sent.tx_doorbells - before.tx_doorbells) << "not batched";
    ASSERT_NO_FATAL_FAILURE(expect_delivered(pair, 1 + n));
    ASSERT_UCS_OK(pair.flush_sender());
    expect_calls_turn_quiet(pair);
}

/* The timers' check (every RTO_MIN/4 while an ep waits for an ack) asks
 * the next progress call to look at the send CQ, where a failed QP shows
 * in the completions of unsignaled sends too. If every send had
 * completed by then, as a batch's last, signaled one has, that call found
 * nothing to look for and left the request standing, and every call after
 * it was a full one until the next send (the test above failed so once in
 * 40 runs beside a busy host: its ack came after RTO_MIN/4). Here the
 * receiver holds its ack back for ACK_DELAY (300 ms), longer than
 * RTO_MIN/4 (100 ms) and shorter than RTO_MIN (400 ms, no timeout), both
 * sides progressing; then the sender's calls must turn quiet. */
TEST(srqud_am_batch, a_timer_look_at_a_completed_send_queue_leaves_calls_quiet)
{
    const uint64_t n = 3;
    iface_pair pair;
    pair.set_env("UCX_SRQUD_ACK_DELAY", "300ms");
    ASSERT_NO_FATAL_FAILURE(open_quiet_batch_pair(pair, "400ms"));

    uct_srqud_iface_stats_t before, sent;
    ASSERT_NO_FATAL_FAILURE(progress_then_send(pair, n, &before, &sent));
    EXPECT_EQ(0u, sent.tx_doorbells - before.tx_doorbells) << "not batched";
    ASSERT_NO_FATAL_FAILURE(expect_delivered(pair, 1 + n));
    /* past the ack's delay without a flush, which might ask for it */
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start <
           std::chrono::milliseconds(350)) {
        pair.sender->progress();
        pair.receiver->progress();
    }
    ASSERT_UCS_OK(pair.flush_sender());
    EXPECT_EQ(0u, srqud_stats(pair.sender->handle).tx_timeouts -
                  sent.tx_timeouts);
    expect_calls_turn_quiet(pair);
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
