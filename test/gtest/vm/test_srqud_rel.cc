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
#include <ucs/time/time.h>

#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

using namespace srqud_test;

namespace {

const uint8_t AM_ID = 9;

/* Two interfaces; the receiver logs AM_ID messages, whose sequence
 * numbers must arrive as 0, 1, 2, ..., each with the pattern for its
 * number. Derived fixtures set the environment first. */
class srqud_rel : public ::testing::Test, public iface_pair {
public:
    explicit srqud_rel(bool two_workers = false) : iface_pair(two_workers) {}

    void SetUp() override
    {
        ASSERT_NO_FATAL_FAILURE(open_pair(AM_ID));
    }

protected:
    /* sends messages 0 .. count-1 of @a length bytes by am_bcopy, progressing
     * the sender (and with @a both the receiver) while out of resources */
    void send_all(unsigned count, size_t length, bool both,
                  unsigned long max_iter = 20000000ul)
    {
        for (uint64_t seq = 0; seq < count; ++seq) {
            ssize_t ret = repeat_while(UCS_ERR_NO_RESOURCE, [&] {
                return send_seq_bcopy(ep, AM_ID, seq, length);
            }, [&] {
                sender->progress();
                if (both) {
                    receiver->progress();
                }
            }, max_iter);
            ASSERT_EQ((ssize_t)length, ret)
                << "seq " << seq << ": "
                << ((ret < 0) ? ucs_status_string((ucs_status_t)ret) : "");
        }
    }

    /* flush the ep, progressing the sender only, until it completes */
    ucs_status_t flush_progressing_sender()
    {
        comp_t comp;
        ucs_status_t status = uct_ep_flush(ep, 0, &comp.super);

        if (status != UCS_INPROGRESS) {
            return status;
        }
        progress_until(*sender, [&] { return comp.calls > 0; }, 40000000ul);
        return (comp.calls == 1) ? comp.super.status : UCS_ERR_TIMED_OUT;
    }

    /* all @a count messages received, intact and in order */
    void expect_received(unsigned count)
    {
        EXPECT_EQ(count, log.count);
        EXPECT_EQ(0u, log.bad);
        EXPECT_TRUE(log.in_order());
    }
};


/* two workers, as two processes would have: progressing the sender's does
 * not progress the receiver */
class srqud_rel_async : public srqud_rel {
public:
    srqud_rel_async() : srqud_rel(true) {}

protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_TIMEOUT", "1s");
    }
};


/* two workers and a fifth of the packets lost */
class srqud_rel_async_loss : public srqud_rel {
public:
    srqud_rel_async_loss() : srqud_rel(true) {}

protected:
    void setup_env() override
    {
        drop_packets("0.2");
    }
};


class srqud_rel_linger : public srqud_rel {
protected:
    void setup_env() override
    {
        drop_packets("0.05");
    }
};


/* the receiver never progresses and its async thread first runs after
 * 10 s, so nothing gets acknowledged during the test */
class srqud_rel_cancel : public srqud_rel {
protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_RTO_MIN", "10s");
        set_env("UCX_SRQUD_RTO_MAX", "10s");
        set_env("UCX_SRQUD_ASYNC_TICK", "10s");
    }
};

/* two workers; acknowledgements held 900 ms, resends after 1 s, a peer
 * dead after 3 s of silence */
class srqud_rel_leaving : public srqud_rel {
public:
    srqud_rel_leaving() : srqud_rel(true) {}

protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_ACK_DELAY", "900ms");
        set_env("UCX_SRQUD_RTO_MIN", "1s");
        set_env("UCX_SRQUD_TIMEOUT", "3s");
    }
};

/* acknowledgements held 60 s, resends after 120 s */
class srqud_rel_slow_ack : public srqud_rel {
protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_ACK_DELAY", "60s");
        set_env("UCX_SRQUD_RTO_MIN", "120s");
        set_env("UCX_SRQUD_RTO_MAX", "120s");
        set_env("UCX_SRQUD_TIMEOUT", "300s");
    }
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
    std::vector<comp_t> comps(count);

    for (unsigned seq = 0; seq < count; ++seq) {
        /* sizes from 8 (sequence number only) to the largest packet */
        size_t length = sizeof(uint64_t) +
                        (seq * 37) % (max_payload - sizeof(uint64_t) + 1);
        bufs[seq].resize(length);
        fill_seq_msg(bufs[seq].data(), length, seq);
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

        ASSERT_EQ(UCS_INPROGRESS, repeat_while(UCS_ERR_NO_RESOURCE, [&] {
            return uct_ep_am_zcopy(ep, AM_ID, bufs[seq].data(),
                                   sizeof(uint64_t), iov, 2, 0,
                                   &comps[seq].super);
        }, [&] {
            sender->progress();
            receiver->progress();
        }, 20000000ul));
    }

    ASSERT_TRUE(progress_both_until([&] {
        if (log.count < count) {
            return false;
        }
        for (auto &c : comps) {
            if (c.calls == 0) {
                return false;
            }
        }
        return true;
    })) << "received " << log.count << " of " << count;

    EXPECT_EQ(0u, log.bad);
    EXPECT_TRUE(log.in_order());
    for (unsigned seq = 0; seq < count; ++seq) {
        EXPECT_EQ(1u, comps[seq].calls) << seq;
        EXPECT_EQ(0, comps[seq].super.count) << seq;
        EXPECT_EQ(UCS_OK, comps[seq].super.status) << seq;
        uct_md_mem_dereg(ctx.md, memhs[seq]);
    }
    EXPECT_EQ(count, srqud_stats(sender->handle).am_zcopy);
}


/* am_zcopy completes on the peer's acknowledgement, which its packet asks
 * for at once: an MPI_Send of a zero-copy message must not wait for
 * ACK_DELAY (60 s here; the test waits 30 s) */
TEST_F(srqud_rel_slow_ack, am_zcopy_completion_asks_for_the_ack)
{
    std::vector<uint8_t> buf(512);
    uct_mem_h memh;
    uct_iov_t iov;
    comp_t comp;

    /* connected, and that exchange acknowledged (a flush asks at once) */
    ASSERT_GT(send_seq_bcopy(ep, AM_ID, 0, 64), 0);
    ASSERT_UCS_OK(flush_sender(20000000ul));

    fill_seq_msg(buf.data(), buf.size(), 1);
    ASSERT_UCS_OK(uct_md_mem_reg(ctx.md, buf.data(), buf.size(),
                                 UCT_MD_MEM_ACCESS_ALL, &memh));
    iov.buffer = buf.data() + sizeof(uint64_t);
    iov.length = buf.size() - sizeof(uint64_t);
    iov.memh   = memh;
    iov.stride = 0;
    iov.count  = 1;
    ASSERT_EQ(UCS_INPROGRESS, repeat_while(UCS_ERR_NO_RESOURCE, [&] {
        return uct_ep_am_zcopy(ep, AM_ID, buf.data(), sizeof(uint64_t), &iov,
                               1, 0, &comp.super);
    }, [&] {
        sender->progress();
        receiver->progress();
    }, 20000000ul));

    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(30);
    while ((comp.calls == 0) && (ucs_get_time() < deadline)) {
        sender->progress();
        receiver->progress();
    }
    EXPECT_EQ(1u, comp.calls) << "the completion waited for ACK_DELAY";
    EXPECT_EQ(UCS_OK, comp.super.status);
    expect_received(2);
    uct_md_mem_dereg(ctx.md, memh);
}


/* A receiver that computes and never calls progress: UCX's async thread
 * acknowledges for it, so the sender's flush completes and, with a peer
 * timeout of one second and three seconds of "compute", no endpoint
 * fails. The messages are then delivered in order when it progresses. */
TEST_F(srqud_rel_async, receiver_computing_still_acknowledges)
{
    /* more than one window (256), and more than the SRQ's first posting
     * would hold if nothing refilled it (the async thread does); the
     * receiver never progresses */
    const unsigned count = 1500;
    ASSERT_NO_FATAL_FAILURE(send_all(count, 512, false, 200000000ul));

    comp_t comp;
    /* NO_RESOURCE: requests are still pending behind the window, and UCT
     * says to progress and ask again (the flush must not overtake them) */
    ucs_status_t status = repeat_while(UCS_ERR_NO_RESOURCE, [&] {
        return uct_ep_flush(ep, 0, &comp.super);
    }, [&] { sender->progress(); }, 20000000ul);
    ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS))
        << ucs_status_string(status);
    if (status == UCS_INPROGRESS) {
        progress_until(*sender, [&] { return comp.calls > 0; }, 400000000ul);
        ASSERT_EQ(1u, comp.calls);
        EXPECT_EQ(UCS_OK, comp.super.status);
    }
    EXPECT_EQ(0u, log.count); /* nothing was delivered behind its back */

    /* "compute" three times the peer timeout; the sender keeps
     * progressing and must not declare the receiver dead */
    ASSERT_EQ(UCS_OK, uct_ep_check(ep, 0, NULL));
    for (int i = 0; i < 300; ++i) {
        sender->progress();
        usleep(10000);
    }
    EXPECT_EQ(0u, srqud_stats(sender->handle).ep_failures);
    EXPECT_EQ(0u, srqud_stats(receiver->handle).ep_failures);
    EXPECT_GT(srqud_stats(receiver->handle).async_queued, 0u);

    progress_until(*receiver, [&] { return log.count >= count; },
                   40000000ul);
    expect_received(count);
}


/* The async thread is woken only once the user is away (the watchdog the
 * user's progress keeps moving), and by the rescue timer every 10 ticks.
 * A watchdog set two ticks ahead and moved once a tick can expire only in
 * a gap of a tick or more between the user's progress calls, once a tick
 * of such a gap, so the test bounds the ticks by the gaps it measured
 * itself: on a quiet machine (gaps of a millisecond) 300 ms of progress
 * allow 5 ticks where a periodic timer ran 30; on a busy one, where the
 * user itself is descheduled for ticks at a time, the bound grows with
 * what the user was away, and nothing here depends on when the machine
 * runs which thread. */
TEST_F(srqud_rel_async, async_thread_woken_only_while_the_user_is_away)
{
    const double tick = ucs_time_from_msec(10); /* UCX_SRQUD_ASYNC_TICK */
    auto ticks = [&] { return srqud_stats(receiver->handle).async_ticks; };
    /* rescue expiries in @a elapsed, and one for each edge of the window */
    auto rescue = [&](ucs_time_t elapsed) {
        return (double)elapsed / (10 * tick) + 2;
    };

    /* @a n progress calls a millisecond apart: the ticks they saw, and the
     * most the watchdog and rescue timer may have run in their gaps */
    auto progressing = [&](unsigned n, unsigned long *seen, double *bound) {
        unsigned long before = ticks();
        ucs_time_t start     = ucs_get_time(), last = start;
        double gaps          = 0;

        for (unsigned i = 0; i < n; ++i) {
            receiver->progress();
            ucs_time_t now = ucs_get_time();
            if ((double)(now - last) >= tick) {
                gaps += (double)(now - last) / tick + 1;
            }
            last = now;
            usleep(1000);
        }
        *seen  = ticks() - before;
        *bound = gaps + rescue(ucs_get_time() - start);
    };

    ASSERT_NO_FATAL_FAILURE(send_all(10, 512, false, 200000000ul));
    progress_until(*receiver, [&] { return log.count >= 10; }, 100000000ul);
    expect_received(10);

    unsigned long seen;
    double bound;
    progressing(300, &seen, &bound);
    printf("progressing: %lu ticks, at most %.1f allowed by the gaps\n", seen,
           bound);
    EXPECT_LE((double)seen, bound);

    /* away: the watchdog expires once a tick; wait for three (seconds if
     * the machine is that busy), and no more than the time allows */
    unsigned long before = ticks();
    ucs_time_t start     = ucs_get_time();
    while ((ticks() - before < 3) &&
           (ucs_time_to_sec(ucs_get_time() - start) < 20)) {
        usleep(1000);
    }
    ucs_time_t away_time = ucs_get_time() - start;
    unsigned long away   = ticks() - before;
    printf("away: %lu ticks in %.1f ms\n", away,
           ucs_time_to_msec(away_time));
    EXPECT_GE(away, 3u);
    EXPECT_LE((double)away, (double)away_time / tick + 1 + rescue(away_time));

    /* back: the user's progress moves it on again */
    progressing(100, &seen, &bound);
    printf("back: %lu ticks, at most %.1f allowed by the gaps\n", seen, bound);
    EXPECT_LE((double)seen, bound);
}


/* A sender that stops progressing for ten retransmission timeouts while the
 * acknowledgements of everything it sent come back: UCX's async thread
 * takes them and leaves them for the user's progress (applying one
 * completes sends), and must not resend what they acknowledge. Before, its
 * timer resent the whole window every timeout, every copy arriving as a
 * duplicate: the spurious resends of oversubscribed runs. Counted over
 * the second 200 ms, once the acknowledgements are in the sender's
 * receive queue (Soft-RoCE delivers a packet within its sender's post):
 * in the first, a receiver held off the cores for an RTO (a busy host)
 * acknowledges late, and the timeout that then resends is right. */
TEST_F(srqud_rel_async, sender_away_resends_nothing_its_queued_acks_cover)
{
    /* within one window (256): all sent without an acknowledgement */
    const unsigned count = 200;
    ASSERT_NO_FATAL_FAILURE(send_all(count, 512, false, 200000000ul));

    /* only the receiver progresses: it takes everything and acknowledges */
    progress_until(*receiver, [&] { return log.count >= count; },
                   100000000ul);
    expect_received(count);

    /* 200 ms (RTO_MIN is 20 ms) of the receiver progressing, so that its
     * last acknowledgement leaves, and 200 more, the sender away */
    auto receiver_alone = [&] {
        for (int i = 0; i < 200; ++i) {
            receiver->progress();
            usleep(1000);
        }
    };
    receiver_alone();
    const uct_srqud_iface_stats_t acked = srqud_stats(sender->handle);
    receiver_alone();
    const uct_srqud_iface_stats_t tx = srqud_stats(sender->handle);
    EXPECT_GT(tx.async_queued, 0u); /* the acks waited for the user */
    EXPECT_EQ(acked.tx_retransmits, tx.tx_retransmits);
    EXPECT_EQ(acked.tx_timeouts, tx.tx_timeouts);
    printf("before the acks were in: %lu timeouts, %lu resends\n",
           acked.tx_timeouts, acked.tx_retransmits);

    /* back: the queued acks complete everything */
    EXPECT_EQ(UCS_OK, flush_progressing_sender());
    EXPECT_EQ(acked.tx_retransmits,
              srqud_stats(sender->handle).tx_retransmits);
}


/* Spurious timeouts on the async thread: the receiver's process waits for
 * a core (its async thread held off, its user not progressing) for 100 ms
 * while the sender is away too, so the sender's timer expires twice or
 * three times (RTO 20 ms, backed off) with every packet on its way. Each
 * timeout resends a congestion window (4), not the window of 200, and
 * the acknowledgements of the originals undo it (F-RTO): the resends are
 * duplicates, but few. Before, every timeout resent all of them. */
TEST_F(srqud_rel_async, spurious_timeouts_resend_a_congestion_window)
{
    const unsigned count = 200;
    {
        async_hold held(rx_ctx().async);
        ASSERT_NO_FATAL_FAILURE(send_all(count, 512, false, 200000000ul));
        usleep(100000);
    }

    progress_until(*receiver, [&] { return log.count >= count; },
                   100000000ul);
    expect_received(count);

    EXPECT_EQ(UCS_OK, flush_progressing_sender());

    uct_srqud_iface_stats_t tx = srqud_stats(sender->handle);
    EXPECT_GT(tx.tx_timeouts, 0u); /* the timeouts did happen */
    EXPECT_LE(tx.tx_retransmits, 4 * tx.tx_timeouts);
    /* the acks of originals the timeouts gave up showed them spurious */
    EXPECT_GT(tx.tx_timeouts_undone, 0u);
    /* nothing was lost: every resend that has arrived was a duplicate
     * (the last may still be on its way) */
    EXPECT_LE(srqud_stats(receiver->handle).rx_duplicates,
              tx.tx_retransmits);
}


/* A sender that stops progressing (an MPI rank inside another library's
 * loop) with lost packets in its window: UCX's async thread resends them
 * all, though applying the acknowledgements waits for the user: what they
 * say reaches its timers (uct_srqud_ep_ack_seen), so the holes they show
 * are resent at once (fast retransmit) or after a timeout, as the
 * congestion window opens. Once, a timeout resent only the first 4 and
 * the receiver waited forever. */
TEST_F(srqud_rel_async_loss, sender_away_still_resends_every_lost_packet)
{
    /* within one window: sent without waiting for acknowledgements */
    const unsigned count = 200;
    ASSERT_NO_FATAL_FAILURE(send_all(count, 512, false, 200000000ul));
    EXPECT_GT(srqud_stats(sender->handle).fault_dropped, 4u);

    /* only the receiver progresses from here */
    progress_until(*receiver, [&] { return log.count >= count; },
                   100000000ul);
    expect_received(count);
    /* resent by the async thread, the user never came back: every drop
     * (of a first copy or of a resent one) took one more send */
    uct_srqud_iface_stats_t tx = srqud_stats(sender->handle);
    EXPECT_GE(tx.tx_retransmits, tx.fault_dropped);
}


/* ep_check: a live peer answers the keepalive; a vanished one fails the
 * endpoint with UCS_ERR_ENDPOINT_TIMEOUT through the error handler */
TEST(srqud_rel_keepalive, ep_check_detects_a_vanished_peer)
{
    dead_peer_ep d;    /* 1 s peer timeout */
    ASSERT_NO_FATAL_FAILURE(d.open());
    iface live(d.ctx);
    ASSERT_UCS_OK(live.open());
    uct_ep_h ep_live, ep_dead = d.ep;
    ASSERT_UCS_OK(d.local->connect(live, &ep_live));

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_check(ep_live, 1, NULL));
    ASSERT_UCS_OK(uct_ep_check(ep_live, 0, NULL));
    ASSERT_UCS_OK(uct_ep_check(ep_dead, 0, NULL));
    EXPECT_EQ(2u, srqud_stats(d.local->handle).keepalives);

    /* one worker: this progresses the live peer too */
    progress_until(live, [&] { return d.errors.count > 0; }, 400000000ul);
    EXPECT_EQ(1u, d.errors.count);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, d.errors.status);
    /* the live one got its answer: its flush is immediate */
    EXPECT_EQ(UCS_OK, uct_ep_flush(ep_live, 0, NULL));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, uct_ep_flush(ep_dead, 0, NULL));

    uct_ep_destroy(ep_live);
}


/* Destroy right after sending, over a lossy path: the endpoint lingers
 * until its data is acknowledged, so every message still arrives, and
 * flushing the interface waits for it */
TEST_F(srqud_rel_linger, destroyed_endpoint_delivers_its_data)
{
    const unsigned count = 200;
    ASSERT_NO_FATAL_FAILURE(send_all(count, 256, true));
    uct_ep_destroy(ep);
    ep = nullptr;
    EXPECT_EQ(1u, srqud_stats(sender->handle).ep_lingered);

    ASSERT_EQ(UCS_OK, flush_sender(400000000ul))
        << "lingering data never acknowledged";
    progress_until(*receiver, [&] { return log.count >= count; });
    expect_received(count);
    EXPECT_GT(srqud_stats(sender->handle).fault_dropped, 0u);
}


/* Flush with UCT_FLUSH_FLAG_CANCEL gives up what is unacknowledged: the
 * pending am_zcopy completion runs with UCS_ERR_CANCELED and the endpoint
 * refuses further sends */
TEST_F(srqud_rel_cancel, flush_cancel_completes_outstanding_with_canceled)
{
    std::vector<uint8_t> buf(1024, 0x5a);
    uct_mem_h memh;
    ASSERT_UCS_OK(uct_md_mem_reg(ctx.md, buf.data(), buf.size(),
                                 UCT_MD_MEM_ACCESS_ALL, &memh));

    comp_t comp;
    uct_iov_t iov = {buf.data(), buf.size(), memh, 0, 1};
    uint64_t hdr  = 0;
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_am_zcopy(ep, AM_ID, &hdr, sizeof(hdr),
                                              &iov, 1, 0, &comp.super));
    EXPECT_EQ(0u, comp.calls);
    ASSERT_UCS_OK(uct_ep_flush(ep, UCT_FLUSH_FLAG_CANCEL, NULL));

    EXPECT_EQ(1u, comp.calls);
    EXPECT_EQ(UCS_ERR_CANCELED, comp.super.status);
    EXPECT_EQ(UCS_ERR_CANCELED, (ucs_status_t)send_seq_bcopy(ep, AM_ID, 1, 64));
    uct_ep_destroy(ep);
    ep = nullptr;
    uct_md_mem_dereg(ctx.md, memh);
}


/* An interface that closes acknowledges what it received first: the
 * sender's flush completes with nothing resent. Without that, the sender
 * would resend into the void and its flush end in ENDPOINT_TIMEOUT,
 * although every message had arrived (a closing UCP ep's flush whose peer
 * exited first). */
TEST_F(srqud_rel_leaving, closing_receiver_acknowledges_what_it_got)
{
    const unsigned count = 6; /* below ACK_THRESH: every ack is held */

    /* connected first: the CREP acknowledges what came before it */
    ASSERT_NO_FATAL_FAILURE(send_all(1, 256, true));
    ASSERT_TRUE(progress_both_until([&] {
        return uct_ep_flush(ep, 0, NULL) == UCS_OK;
    }));
    for (uint64_t seq = 1; seq < count; ++seq) {
        ASSERT_EQ(256, send_seq_bcopy(ep, AM_ID, seq, 256)) << "seq " << seq;
    }
    ASSERT_TRUE(progress_both_until([&] { return log.count == count; }));
    expect_received(count);
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(ep, 0, NULL))
        << "acknowledged before the receiver closed: the test shows nothing";

    receiver.reset();

    ucs_status_t status = UCS_INPROGRESS;
    for (int i = 0; (i < 1000) && (status == UCS_INPROGRESS); ++i) {
        sender->progress();
        status = uct_ep_flush(ep, 0, NULL);
        usleep(5000);
    }
    EXPECT_EQ(UCS_OK, status) << ucs_status_string(status);
    EXPECT_EQ(0u, srqud_stats(sender->handle).tx_retransmits);
}
