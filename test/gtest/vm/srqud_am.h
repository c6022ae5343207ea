/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The active-message tests' fixture: a pair of interfaces whose receiver
 * logs numbered messages, with the sends and checks the AM tests share
 * (test_srqud_am*.cc).
 */

#ifndef SRQUD_TEST_AM_H_
#define SRQUD_TEST_AM_H_

#include "srqud_fixture.h"

#include <gtest/gtest.h>

#include <vector>

namespace srqud_test {

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
        return send_seq_bcopy_status(ep, AM_ID, seq, length);
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

/* All @a n messages of a pair delivered, intact and in order, both
 * progressed (srqud_am::expect_received for the fixture's pair) */
inline void expect_delivered(iface_pair &pair, uint64_t n)
{
    ASSERT_TRUE(pair.progress_both_until([&] { return pair.log.count == n; }))
        << "received " << pair.log.count << " of " << n;
    EXPECT_TRUE(pair.log.in_order());
    EXPECT_EQ(0u, pair.log.bad);
}

} // namespace srqud_test

#endif
