/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Device tests of the batch timer (UCX_SRQUD_TX_HOLD): a batch leaves
 * without a user call, also when the timer expired inside one, and with
 * TX_HOLD_MOVE a sender that goes on moves it.
 */

#include "srqud_am.h"

#include <ucs/time/time.h>
#include <unistd.h>

using namespace srqud_test;

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

/* The batch's timer expires while the user is inside a call (the lock
 * taken, as a streaming root's is in its doorbell's system call most of
 * the time), and the user makes no call after it. UCX's async thread left
 * such an expiry to the user's next UCP progress, and the unread timerfd
 * expired no more: the batch waited for the rescue timer, 10 ticks (here
 * 600 s). srqud's handler looks again a quarter of TX_HOLD later. An
 * attempt whose timer expired between the sends (a slow machine; the
 * batch went then) does not count: it is made again. */
TEST_F(srqud_am_hold, a_timer_that_expires_inside_a_call_still_posts_the_batch)
{
    const uint64_t n = 10;
    uint64_t seq     = 0;
    bool held        = false;

    for (int attempt = 0; (attempt < 3) && !held; ++attempt) {
        uct_srqud_iface_stats_t before = srqud_stats(sender->handle);
        for (uint64_t i = 0; i < n; ++i) {
            ASSERT_UCS_OK(send_short(++seq, 16));
        }
        uct_srqud_iface_stats_t sent = srqud_stats(sender->handle);
        ASSERT_LT(sent.tx_doorbells - before.tx_doorbells,
                  sent.tx_packets - before.tx_packets)
            << "nothing was batched";

        {
            /* three times TX_HOLD inside the "call" */
            async_hold hold(ctx.async);
            usleep(60000);
        }

        ASSERT_NO_FATAL_FAILURE(receive_without_the_sender(
                seq, "the batch did not leave after the call"));
        uct_srqud_iface_stats_t after = srqud_stats(sender->handle);
        held = (sent.tx_hold_posted == before.tx_hold_posted);
        if (held) {
            EXPECT_GT(after.tx_hold_posted, sent.tx_hold_posted);
            EXPECT_GT(after.async_busy, sent.async_busy)
                << "the timer did not expire inside the call";
        }
        ASSERT_UCS_OK(flush_sender());
        sender->progress();
    }
    ASSERT_TRUE(held) << "the timer expired between the sends three times";
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
