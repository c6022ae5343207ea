/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The SRQ watermark on a real device: a receiver busy computing (not
 * progressing) while a burst of 10x its SRQ arrives. With the watermark
 * the LIMIT thread posts buffers while it computes; without it the SRQ
 * runs dry, the device drops everything beyond it and the sender must
 * retransmit. Reliability delivers all of it either way. Every assertion
 * holds however the machine schedules the thread; how much of the burst
 * the watermark saved is printed, not asserted on.
 */

#include "srqud_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

using namespace srqud_test;

namespace {

struct burst_result {
    uint64_t received, bad, limit_events, refilled, limit, rx_packets;
    /* what the LIMIT thread did before the receiver's first progress */
    uint64_t events_computing, refilled_computing;
    uint64_t sender_retransmits, sender_packets;
    /* packets the device dropped: sent but never received (no other loss
     * exists on Soft-RoCE's loopback path) */
    uint64_t drops() const { return sender_packets - rx_packets; }
};

/* Child: receiver with a small SRQ that computes for a while, then drains.
 * Parent: sends the burst at once. */
burst_result run_burst(const char *srq_limit, unsigned srq_size, unsigned n)
{
    burst_result r;
    memset(&r, 0, sizeof(r));
    char size_str[32];
    snprintf(size_str, sizeof(size_str), "%u", srq_size);

    int to_parent[2], to_child[2];
    EXPECT_EQ(0, pipe(to_parent));
    EXPECT_EQ(0, pipe(to_child));
    pid_t pid = fork();
    if (pid == 0) {
        int rc = 1;
        setenv("UCX_SRQUD_SRQ_SIZE", size_str, 1);
        setenv("UCX_SRQUD_SRQ_LIMIT", srq_limit, 1);
        /* the async thread's progress refills the SRQ too (every tick,
         * not on the device's event): off in both variants, so that what
         * is compared is the watermark alone */
        setenv("UCX_SRQUD_ASYNC_TICK", "2s", 1);
        setenv("UCX_SRQUD_RTO_MIN", "2s", 1);
        setenv("UCX_SRQUD_RTO_MAX", "2s", 1);
        {
            uct_ctx ctx;
            iface rx(ctx);
            am_log c(1);    /* 1, 2, 3, ... in order, each its pattern */
            if ((ctx.init() == UCS_OK) && (rx.open() == UCS_OK) &&
                (c.attach(rx, 2) == UCS_OK)) {
                (void)write_address(to_parent[1], rx);
                /* "compute": no progress until the sender has sent it
                 * all, and with the watermark until the LIMIT thread has
                 * refilled the SRQ (however long the machine takes to run
                 * it: a thread that never does fails the test at the
                 * bound) */
                char go;
                (void)!read(to_child[0], &go, 1);
                usleep(300000);
                for (int i = 0; (strcmp(srq_limit, "0") != 0) && (i < 300) &&
                                (srqud_stats(rx.handle).srq_refilled == 0);
                     ++i) {
                    usleep(100000);
                }
                uct_srqud_iface_stats_t sc = srqud_stats(rx.handle);
                progress_until(rx, [&] { return c.count >= n; }, 400000000ul);
                uct_srqud_iface_stats_t st = srqud_stats(rx.handle);
                uint64_t res[8] = {c.count, c.bad + c.misordered,
                                   st.srq_limit_events,
                                   st.srq_refilled, st.srq_limit, st.rx_packets,
                                   sc.srq_limit_events, sc.srq_refilled};
                rc = (write(to_parent[1], res, sizeof(res)) == sizeof(res)) ? 0 : 1;
                (void)!read(to_child[0], &go, 1);
            }
        }
        _exit(rc);
    }

    std::vector<uint8_t> dev_addr, iface_addr;
    if (!read_address(to_parent[0], dev_addr, iface_addr)) {
        ADD_FAILURE() << "no address from the receiver";
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(to_parent[0]); close(to_parent[1]);
        close(to_child[0]); close(to_child[1]);
        return r;
    }

    {
        /* the whole burst fits the window; no timer resends while the
         * receiver computes, so every resend counted is a real loss */
        env_guard w("UCX_SRQUD_TX_WINDOW", "16384");
        env_guard q("UCX_SRQUD_TX_QUEUE_LEN", "1024");
        env_guard t("UCX_SRQUD_RTO_MIN", "2s");
        env_guard m("UCX_SRQUD_RTO_MAX", "2s");
        /* one send per doorbell, the pace the watermark is sized for
         * (Eq. 5: a packet per wire time); batched, the burst reached the
         * emulated device's receive side faster than the LIMIT thread
         * wakes under TCG, and the comparison below failed 1 run of 2 */
        env_guard b("UCX_SRQUD_TX_BATCH", "1");
        uct_ctx ctx;
        EXPECT_EQ(UCS_OK, ctx.init());
        iface tx(ctx);
        EXPECT_EQ(UCS_OK, tx.open());
        uct_ep_h ep;
        EXPECT_EQ(UCS_OK, tx.connect(dev_addr, iface_addr, &ep));

        std::vector<uint8_t> payload(56);
        for (uint64_t seq = 1; seq <= n; ++seq) {
            fill_pattern(payload.data(), payload.size(), seq);
            EXPECT_EQ(UCS_OK, repeat_while(UCS_ERR_NO_RESOURCE, [&] {
                return uct_ep_am_short(ep, 2, seq, payload.data(),
                                       payload.size());
            }, [&] { tx.progress(); }, 100000000ul));
        }
        EXPECT_EQ(1, write(to_child[1], "g", 1));

        /* progress (acks, retransmissions) until the child reports */
        uint64_t res[8];
        ssize_t got = 0;
        fcntl(to_parent[0], F_SETFL, O_NONBLOCK);
        for (unsigned long i = 0; (got < (ssize_t)sizeof(res)) && (i < 2000000000ul); ++i) {
            uct_worker_progress(ctx.worker);
            ssize_t k = read(to_parent[0], (char*)res + got, sizeof(res) - got);
            if (k > 0) got += k;
        }
        EXPECT_EQ((ssize_t)sizeof(res), got);
        r.received = res[0]; r.bad = res[1]; r.limit_events = res[2];
        r.refilled = res[3]; r.limit = res[4]; r.rx_packets = res[5];
        r.events_computing = res[6]; r.refilled_computing = res[7];

        uct_srqud_iface_stats_t st = srqud_stats(tx.handle);
        r.sender_retransmits = st.tx_retransmits;
        r.sender_packets     = st.tx_packets;
        EXPECT_EQ(1, write(to_child[1], "x", 1));
        int status;
        EXPECT_EQ(pid, waitpid(pid, &status, 0));
        EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0));
        uct_ep_destroy(ep);
    }
    close(to_parent[0]); close(to_parent[1]);
    close(to_child[0]); close(to_child[1]);
    return r;
}

} // namespace

/* Both variants in one run, compared with each other (never with a
 * time): the receiver computes while 10x its SRQ arrives */
TEST(srqud_srq, watermark_absorbs_a_burst_while_receiver_computes)
{
    const unsigned srq = 64, n = 10 * srq;

    burst_result off = run_burst("0", srq, n);
    printf("no watermark: received %lu bad %lu events %lu dropped %lu "
           "resent %lu\n", off.received, off.bad, off.limit_events,
           off.drops(), off.sender_retransmits);
    burst_result on = run_burst("auto", srq, n);
    printf("watermark:    received %lu bad %lu limit %lu events %lu (%lu while "
           "computing) refilled %lu (%lu while computing) dropped %lu "
           "resent %lu\n", on.received, on.bad, on.limit, on.limit_events,
           on.events_computing, on.refilled, on.refilled_computing,
           on.drops(), on.sender_retransmits);

    /* reliability delivers everything, intact and in order, either way */
    EXPECT_EQ(n, off.received);
    EXPECT_EQ(0u, off.bad);
    EXPECT_EQ(n, on.received);
    EXPECT_EQ(0u, on.bad);

    /* without the watermark the SRQ ran dry: everything beyond it was
     * dropped by the device and resent */
    EXPECT_EQ(0u, off.limit_events);
    EXPECT_GE(off.drops(), n - srq);
    EXPECT_GT(off.sender_retransmits, 0u);

    /* with it, the LIMIT thread refilled the SRQ while the receiver
     * computed, before the receiver's first progress. How much of the
     * burst then still missed a buffer depends on when the machine runs
     * that thread (147 to 298 of 577 under TCG, fewer or more on a busy
     * machine): the drops of both variants are printed above, not
     * asserted on; contrib/bench/flowctl.sh compares them, with the wait
     * after computing, over repetitions */
    EXPECT_GT(on.limit, 0u);
    EXPECT_GT(on.events_computing, 0u);
    EXPECT_GT(on.refilled_computing, 0u);
}
