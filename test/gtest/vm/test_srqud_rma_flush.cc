/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Device tests of flush after many outstanding RMA operations: a batch of
 * put_short/put_bcopy/put_zcopy (or get_bcopy/get_zcopy) of mixed sizes on
 * both sides of UCX_SRQUD_ZCOPY_THRESH, all issued before any flush. When
 * the flush (interface or endpoint, with or without a completion) reports
 * done, every byte must be in place at that very moment: srqud promises
 * that a flush means the data is applied at the target (docs/design.md,
 * RMA), and UCP's worker flush, which polls uct_iface_flush(comp=NULL),
 * relies on it. With loss too. And a region deregistered while UCX's
 * registration cache keeps its MR must refuse remote puts.
 */

#include "srqud_fixture.h"

#include <ucs/async/async.h>

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

using namespace srqud_test;

namespace {

/* splitmix64: the same layout on every run and with every C++ library */
class rng {
public:
    explicit rng(uint64_t seed) : m_x(seed) {}

    uint64_t next()
    {
        uint64_t z = (m_x += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }

    /* uniform in [lo, hi] */
    size_t uniform(size_t lo, size_t hi)
    {
        return lo + next() % (hi - lo + 1);
    }

    /* log-uniform in [lo, hi]: as many small sizes as large ones */
    size_t log_uniform(size_t lo, size_t hi)
    {
        double u = (double)(next() >> 11) / (double)(1ull << 53);
        size_t v = (size_t)std::llround(lo * std::pow((double)hi / lo, u));
        return std::min(std::max(v, lo), hi);
    }

    template <typename T> void shuffle(std::vector<T> &v)
    {
        for (size_t i = v.size(); i > 1; --i) {
            std::swap(v[i - 1], v[next() % i]);
        }
    }

private:
    uint64_t m_x;
};


enum op_kind { OP_PUT_SHORT, OP_PUT_BCOPY, OP_PUT_ZCOPY, OP_GET_BCOPY,
               OP_GET_ZCOPY };

const char *op_name(op_kind kind)
{
    static const char *names[] = {"put_short", "put_bcopy", "put_zcopy",
                                  "get_bcopy", "get_zcopy"};
    return names[kind];
}


/* One operation of the batch: the same offset in the remote region and in
 * the local buffer */
struct rma_op {
    op_kind  kind;
    size_t   offset;
    size_t   length;
    bool     has_comp;
    unsigned issued_as    = 0;     /* position in the issue order */
    bool     done_at_once = false; /* returned UCS_OK: no completion */
    comp_t   comp;
    /* get_bcopy's unpack callback */
    uint8_t  *dest        = nullptr;
    unsigned unpack_calls = 0;
    size_t   unpacked     = 0;

    std::string describe() const
    {
        std::ostringstream os;
        os << op_name(kind) << " #" << issued_as << " of " << length
           << " B at +" << offset;
        if (has_comp) {
            os << " (completion)";
        } else if ((kind == OP_PUT_ZCOPY) || (kind == OP_GET_ZCOPY)) {
            os << " (comp=NULL)";
        }
        return os.str();
    }
};


enum flush_kind { FLUSH_IFACE_NULL, FLUSH_IFACE_COMP, FLUSH_EP_NULL,
                  FLUSH_EP_COMP };

const char *flush_name(flush_kind how)
{
    static const char *names[] = {"uct_iface_flush(comp=NULL)",
                                  "uct_iface_flush(comp)",
                                  "uct_ep_flush(comp=NULL)",
                                  "uct_ep_flush(comp)"};
    return names[how];
}


/* The remote region: 24 MB, so that the batch (~18 MB) has room for gaps
 * at random, unaligned offsets */
const size_t REGION_LEN    = 24ul << 20;
const double FLUSH_TIMEOUT = 150.0;   /* seconds, loss in a slow VM included */

/* Up to 1 MB under loss: the copy path, which the largest puts and gets
 * fall back to, recovers a loss only after a retransmission timeout (and
 * a get 32 fragments at a time); 2-4 MB would take most of a minute in
 * the VM */
const size_t LOSS_MAX_LEN  = 1049353;


class srqud_rma_flush : public ::testing::Test, public iface_pair {
public:
    typedef std::chrono::steady_clock clock;

    /* two workers, as two processes would have: the target is progressed
     * only when the test says so, so that nothing is applied behind the
     * check that follows a flush */
    srqud_rma_flush() : iface_pair(true) {}

    void SetUp() override
    {
        ASSERT_NO_FATAL_FAILURE(open_pair());
    }

    void TearDown() override
    {
        close_pair();
        /* after the interfaces: a failed test may leave transfers behind
         * that name this memory and these completions */
        remote.reset();
        local.reset();
        ops.clear();
    }

protected:
    /* target first: a flush that completes in the initiator's progress is
     * checked before the target runs again */
    void progress()
    {
        target->progress();
        initiator->progress();
    }

    /* progress both until @a done() or @a seconds passed */
    template <typename F> bool progress_until(F done, double seconds)
    {
        auto deadline = clock::now() +
                        std::chrono::duration_cast<clock::duration>(
                            std::chrono::duration<double>(seconds));
        for (unsigned long n = 0; !done(); ++n) {
            if (((n & 1023) == 0) && (clock::now() > deadline)) {
                return false;
            }
            progress();
        }
        return true;
    }

    /* The batch, ~150 operations: sizes from 1 B to 4 MB; zero-copy ones
     * below, at and above the 32 KB threshold, more of them above than the
     * target has pool QPs (UCX_SRQUD_ZCOPY_QPS=64), so that some fall back
     * to the copy path; about a third of the zero-copy ones of every size
     * without a completion. Random unaligned offsets with random gaps (none
     * too), issued in another random order, the largest last: by then the
     * target's pool is taken, so they are the ones that fall back and are
     * still going out fragment by fragment when the flush is posted. */
    void make_ops(bool is_get, size_t max_len)
    {
        const size_t thresh   = 32768;
        const size_t big      = 512 * 1024;
        const size_t zfixed[] = {33, 1000, thresh - 1, thresh, thresh + 1,
                                 65537, big + 5, 1048575, 1049353, 2097155,
                                 3145729, 4194304};
        rng r(is_get ? 0x6e7 : 0x9a7);
        std::vector<std::pair<op_kind, size_t>> plan;
        std::vector<size_t> zsizes;

        for (size_t len : zfixed) {
            if (len <= max_len) {
                zsizes.push_back(len);
            }
        }
        for (int i = 0; i < 12; ++i) {
            zsizes.push_back(r.log_uniform(34, thresh - 2));
        }
        for (int i = 0; i < 76; ++i) {
            zsizes.push_back(r.log_uniform(thresh + 2, 4 * thresh));
        }
        std::sort(zsizes.begin(), zsizes.end());

        const uct_iface_attr_t &attr = initiator->attr;
        if (is_get) {
            for (int i = 0; i < 50; ++i) {
                plan.emplace_back(OP_GET_BCOPY,
                                  r.log_uniform(1, attr.cap.get.max_bcopy));
            }
        } else {
            for (int i = 0; i < 35; ++i) {
                plan.emplace_back(OP_PUT_SHORT,
                                  r.log_uniform(1, attr.cap.put.max_short));
            }
            for (int i = 0; i < 15; ++i) {
                plan.emplace_back(OP_PUT_BCOPY,
                                  r.log_uniform(1, attr.cap.put.max_bcopy));
            }
        }

        ops = std::vector<rma_op>(plan.size() + zsizes.size());
        size_t total = 0, i = 0;
        for (auto &p : plan) {
            ops[i].kind     = p.first;
            ops[i].length   = p.second;
            ops[i].has_comp = (p.first == OP_GET_BCOPY);
            total          += ops[i++].length;
        }
        for (size_t k = 0; k < zsizes.size(); ++k) {
            ops[i].kind     = is_get ? OP_GET_ZCOPY : OP_PUT_ZCOPY;
            ops[i].length   = zsizes[k];
            ops[i].has_comp = (k % 3) != 1;
            total          += ops[i++].length;
        }
        ASSERT_LT(total, REGION_LEN);

        /* addresses in one random order, gaps of 0 .. max_gap bytes */
        std::vector<size_t> order(ops.size());
        for (i = 0; i < order.size(); ++i) {
            order[i] = i;
        }
        r.shuffle(order);
        size_t max_gap = (REGION_LEN - total) / (ops.size() + 1);
        size_t offset  = 0;
        for (size_t idx : order) {
            offset         += r.uniform(0, max_gap);
            ops[idx].offset = offset;
            offset         += ops[idx].length;
        }
        ASSERT_LE(offset, REGION_LEN);

        /* issued in another, the largest last */
        r.shuffle(order);
        std::stable_partition(order.begin(), order.end(), [&](size_t idx) {
            return ops[idx].length < big;
        });
        for (i = 0; i < order.size(); ++i) {
            ops[order[i]].issued_as = i;
        }
        std::sort(ops.begin(), ops.end(),
                  [](const rma_op &a, const rma_op &b) {
                      return a.issued_as < b.issued_as;
                  });
        for (auto &op : ops) {
            op.comp = comp_t();
        }
    }

    ucs_status_t issue_one(rma_op &op)
    {
        uct_rkey_t rkey     = remote->rkey.rkey;
        uint64_t raddr      = remote->addr() + op.offset;
        uint8_t *buf        = local->data() + op.offset;
        uct_iov_t iov       = {buf, op.length, local->memh, 0, 1};
        uct_completion_t *c = op.has_comp ? &op.comp.super : NULL;
        struct pack_arg { const uint8_t *p; size_t n; };
        pack_arg arg        = {buf, op.length};
        ssize_t packed;

        switch (op.kind) {
        case OP_PUT_SHORT:
            return uct_ep_put_short(ep, buf, op.length, raddr, rkey);
        case OP_PUT_BCOPY:
            packed = uct_ep_put_bcopy(ep, [](void *dest, void *a) -> size_t {
                pack_arg *pa = static_cast<pack_arg*>(a);
                memcpy(dest, pa->p, pa->n);
                return pa->n;
            }, &arg, raddr, rkey);
            if (packed < 0) {
                return (ucs_status_t)packed;
            }
            return ((size_t)packed == op.length) ? UCS_OK :
                                                   UCS_ERR_MESSAGE_TRUNCATED;
        case OP_PUT_ZCOPY:
            return uct_ep_put_zcopy(ep, &iov, 1, raddr, rkey, c);
        case OP_GET_BCOPY:
            op.dest = buf;
            return uct_ep_get_bcopy(ep, [](void *a, const void *data,
                                           size_t n) {
                rma_op *o = static_cast<rma_op*>(a);
                memcpy(o->dest, data, std::min(n, o->length));
                ++o->unpack_calls;
                o->unpacked += n;
            }, &op, op.length, raddr, rkey, c);
        case OP_GET_ZCOPY:
            return uct_ep_get_zcopy(ep, &iov, 1, raddr, rkey, c);
        }
        return UCS_ERR_INVALID_PARAM;
    }

    /* Every operation of the batch, back to back; out of resources, the
     * test progresses and tries again, so the whole batch is outstanding
     * (or done) before any flush */
    void issue_all()
    {
        for (auto &op : ops) {
            ucs_status_t status = UCS_ERR_NO_RESOURCE;
            ASSERT_TRUE(progress_until([&]() {
                status = issue_one(op);
                return status != UCS_ERR_NO_RESOURCE;
            }, FLUSH_TIMEOUT)) << op.describe() << ": never had resources";
            ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS))
                << op.describe() << ": " << ucs_status_string(status);
            op.done_at_once = (status == UCS_OK);
        }
    }

    /* Flush as @a how says and return as soon as it reports done, with its
     * status (UCS_ERR_TIMED_OUT if it never did); nothing is progressed
     * after that */
    ucs_status_t flush(flush_kind how)
    {
        const bool is_iface  = (how == FLUSH_IFACE_NULL) ||
                               (how == FLUSH_IFACE_COMP);
        const bool with_comp = (how == FLUSH_IFACE_COMP) ||
                               (how == FLUSH_EP_COMP);
        /* kept by the fixture: a flush that never completes in time must
         * not complete into a dead stack frame during TearDown */
        flush_comps.emplace_back(new comp_t());
        comp_t &c           = *flush_comps.back();
        ucs_status_t status = UCS_INPROGRESS;
        bool posted         = false;

        bool done = progress_until([&]() {
            if (posted) {
                return c.calls > 0;
            }
            uct_completion_t *comp = with_comp ? &c.super : NULL;
            status = is_iface ? uct_iface_flush(initiator->handle, 0, comp) :
                                uct_ep_flush(ep, 0, comp);
            if (status == UCS_ERR_NO_RESOURCE) {
                return false;           /* progress, and again */
            } else if (status == UCS_INPROGRESS) {
                posted = with_comp;     /* wait for it, or poll again */
                return false;
            }
            return true;                /* done at once, or an error */
        }, FLUSH_TIMEOUT);

        if (!done) {
            return UCS_ERR_TIMED_OUT;
        }
        if (posted) {
            EXPECT_EQ(1u, c.calls);
            return c.super.status;
        }
        return status;
    }

    /* Flush, and copy @a mem the moment the flush reports done. Meanwhile
     * the target's async context is blocked: UCX's async thread would
     * otherwise progress the target whenever the test has not for a tick
     * (10 ms) and could apply late requests behind the check, so the
     * target is progressed only by the flush loop, and not once after the
     * flush reported done. */
    ucs_status_t flush_and_look(flush_kind how, const uint8_t *mem,
                                std::vector<uint8_t> &seen)
    {
        UCS_ASYNC_BLOCK(tgt_ctx.async);
        ucs_status_t status = flush(how);
        memcpy(seen.data(), mem, seen.size());
        UCS_ASYNC_UNBLOCK(tgt_ctx.async);
        return status;
    }

    /* @a actual against @a expected, byte by byte; on a difference, the
     * first differing offset, how many differ, and which operations are
     * not (completely) in place */
    void expect_image(const uint8_t *actual, const uint8_t *expected,
                      size_t length, const char *what)
    {
        if (!memcmp(actual, expected, length)) {
            return;
        }

        size_t first = SIZE_MAX, count = 0;
        for (size_t i = 0; i < length; ++i) {
            if (actual[i] != expected[i]) {
                first = (first == SIZE_MAX) ? i : first;
                ++count;
            }
        }

        std::ostringstream os;
        std::string at = "outside every operation";
        unsigned bad_ops = 0;
        size_t bad_bytes = 0;
        for (const auto &op : ops) {
            const uint8_t *a = actual + op.offset, *e = expected + op.offset;
            if (!memcmp(a, e, op.length)) {
                continue;
            }
            size_t op_first = SIZE_MAX, op_count = 0;
            for (size_t i = 0; i < op.length; ++i) {
                if (a[i] != e[i]) {
                    op_first = (op_first == SIZE_MAX) ? i : op_first;
                    ++op_count;
                }
            }
            bad_bytes += op_count;
            if ((first >= op.offset) && (first < op.offset + op.length)) {
                at = op.describe();
            }
            if (++bad_ops <= 12) {
                os << "\n    " << op.describe() << ": " << op_count
                   << " B differ from +" << op_first;
            }
        }
        ADD_FAILURE() << what << ": " << count << " of " << length
                      << " bytes differ, the first at offset " << first
                      << " (" << at << "); " << bad_ops << " of "
                      << ops.size() << " operations not in place ("
                      << bad_bytes << " B), "
                      << (count - bad_bytes) << " B outside them"
                      << os.str();
    }

    /* The completions the batch asked for all ran, successfully, by the
     * time the flush reported done */
    void expect_completions(const char *when)
    {
        unsigned not_run = 0, failed = 0, total = 0;
        std::string first;

        for (const auto &op : ops) {
            if (!op.has_comp || op.done_at_once) {
                continue;
            }
            ++total;
            if (op.comp.calls != 1) {
                ++not_run;
            } else if (op.comp.super.status != UCS_OK) {
                ++failed;
            } else {
                continue;
            }
            if (first.empty()) {
                first = op.describe() + ": " +
                        ((op.comp.calls != 1) ? std::string("not run") :
                         ucs_status_string(op.comp.super.status));
            }
        }
        EXPECT_EQ(0u, not_run + failed)
            << not_run << " of " << total << " completions had not run and "
            << failed << " failed " << when << "; the first: " << first;
    }

    /* ~150 puts (or gets) outstanding, a flush, then the destination (the
     * remote region, or the local buffer) as it was when the flush
     * reported done */
    void rma_then_flush(bool is_get, flush_kind how,
                        size_t max_len = SIZE_MAX)
    {
        remote.reset(new region(tgt_ctx, REGION_LEN, UCT_MD_MEM_ACCESS_ALL));
        local.reset(new region(init_ctx, REGION_LEN, UCT_MD_MEM_ACCESS_ALL));
        make_ops(is_get, max_len);
        if (HasFatalFailure()) {
            return;
        }

        /* what the destination holds before (something else than what is
         * transferred, so that a missing operation shows) and after */
        region &src = is_get ? *remote : *local;
        region &dst = is_get ? *local : *remote;
        fill_pattern(remote->data(), REGION_LEN, is_get ? 0x6e7da7a : 0x7a76e7);
        fill_pattern(local->data(), REGION_LEN, is_get ? 0x10ca1 : 0x50a2ce);
        std::vector<uint8_t> expected(dst.data(), dst.data() + REGION_LEN);
        for (const auto &op : ops) {
            memcpy(expected.data() + op.offset, src.data() + op.offset,
                   op.length);
        }

        uct_srqud_iface_stats_t before = srqud_stats(initiator->handle);
        issue_all();
        if (HasFatalFailure()) {
            return;
        }
        std::vector<uint8_t> seen(REGION_LEN);
        ucs_status_t status = flush_and_look(how, dst.data(), seen);

        expect_image(seen.data(), expected.data(), REGION_LEN,
                     (std::string(is_get ? "local buffer" : "remote region") +
                      " when " + flush_name(how) + " reported done").c_str());
        EXPECT_EQ(UCS_OK, status) << flush_name(how) << ": "
                                  << ucs_status_string(status);
        expect_completions((std::string("when ") + flush_name(how) +
                            " reported done").c_str());
        for (const auto &op : ops) {
            if ((op.kind == OP_GET_BCOPY) && !op.done_at_once &&
                (op.comp.calls == 1)) {
                EXPECT_EQ(op.length, op.unpacked) << op.describe();
            }
        }
        EXPECT_TRUE(local->guards_intact());
        EXPECT_TRUE(remote->guards_intact());

        /* both protocols were exercised (gets: the zero-copy one; the
         * pool rarely runs out for them) */
        uct_srqud_iface_stats_t after = srqud_stats(initiator->handle);
        EXPECT_GT(after.zcopy_xfers, before.zcopy_xfers);
        if (!is_get) {
            EXPECT_GT(after.rma_copy_ops, before.rma_copy_ops);
        }
    }

    /* the pair under the names of RMA (qualified: the system headers
     * under ucs/async/async.h declare a global struct iface) */
    uct_ctx                                   &init_ctx = ctx;
    uct_ctx                                   &tgt_ctx  = rx_ctx();
    std::unique_ptr<srqud_test::iface>        &initiator = sender;
    std::unique_ptr<srqud_test::iface>        &target    = receiver;
    std::unique_ptr<region>                   remote, local;
    std::vector<rma_op>                       ops;
    std::vector<std::unique_ptr<comp_t>>      flush_comps;
};


/* 5 % of the packets (requests, answers, acknowledgements and chunks, both
 * ways) lost on purpose; set before the interfaces open */
class srqud_rma_flush_loss_get : public srqud_rma_flush {
protected:
    void setup_env() override
    {
        drop_packets("0.05");
    }

    void expect_losses()
    {
        EXPECT_GT(srqud_stats(initiator->handle).fault_dropped +
                  srqud_stats(target->handle).fault_dropped, 0u);
    }
};


/* The same loss, and a pool of 16 QPs: with loss, the zero-copy requests
 * reach the target spread out by retransmissions, and 64 would seldom all
 * be taken at once; puts must still fall back to the copy path */
class srqud_rma_flush_loss : public srqud_rma_flush_loss_get {
protected:
    void setup_env() override
    {
        srqud_rma_flush_loss_get::setup_env();
        set_env("UCX_SRQUD_ZCOPY_QPS", "16");
    }
};


/* The registration cache on for sure (md open fails without it) */
class srqud_rma_flush_rcache : public srqud_rma_flush {
protected:
    void setup_env() override
    {
        set_env("UCX_SRQUD_RCACHE", "yes");
    }

    /* one put to the target, flushed; returns the first error among the
     * put's completion (zero-copy ones) and the flush */
    ucs_status_t put_and_flush(op_kind kind, size_t offset, size_t length,
                               uint64_t raddr, uct_rkey_t rkey)
    {
        ops = std::vector<rma_op>(1);
        rma_op &op  = ops[0];
        op.kind     = kind;
        op.offset   = offset;
        op.length   = length;
        op.has_comp = (kind == OP_PUT_ZCOPY);

        uint8_t *buf  = local->data() + offset;
        uct_iov_t iov = {buf, length, local->memh, 0, 1};
        ucs_status_t status = UCS_ERR_NO_RESOURCE;
        bool ok = progress_until([&]() {
            status = (kind == OP_PUT_SHORT) ?
                     uct_ep_put_short(ep, buf, length, raddr + offset, rkey) :
                     uct_ep_put_zcopy(ep, &iov, 1, raddr + offset, rkey,
                                      &op.comp.super);
            return status != UCS_ERR_NO_RESOURCE;
        }, 60);
        if (!ok) {
            return UCS_ERR_TIMED_OUT;
        }
        if (status == UCS_INPROGRESS) {
            if (!progress_until([&]() { return op.comp.calls > 0; }, 60)) {
                return UCS_ERR_TIMED_OUT;
            }
            status = op.comp.super.status;
        }
        ucs_status_t flush_status = flush(FLUSH_EP_COMP);
        return (status != UCS_OK) ? status : flush_status;
    }
};

} // namespace


TEST_F(srqud_rma_flush, many_outstanding_puts_iface_flush)
{
    rma_then_flush(false, FLUSH_IFACE_NULL);   /* what UCP's worker flush does */
}


TEST_F(srqud_rma_flush, many_outstanding_puts_iface_flush_comp)
{
    rma_then_flush(false, FLUSH_IFACE_COMP);
}


TEST_F(srqud_rma_flush, many_outstanding_puts_ep_flush)
{
    rma_then_flush(false, FLUSH_EP_COMP);
}


TEST_F(srqud_rma_flush, many_outstanding_puts_ep_flush_null)
{
    rma_then_flush(false, FLUSH_EP_NULL);
}


TEST_F(srqud_rma_flush, many_outstanding_gets_iface_flush)
{
    rma_then_flush(true, FLUSH_IFACE_NULL);
}


TEST_F(srqud_rma_flush, many_outstanding_gets_ep_flush)
{
    rma_then_flush(true, FLUSH_EP_COMP);
}


TEST_F(srqud_rma_flush_loss, many_outstanding_puts_iface_flush)
{
    rma_then_flush(false, FLUSH_IFACE_NULL, LOSS_MAX_LEN);
    expect_losses();
}


TEST_F(srqud_rma_flush_loss, many_outstanding_puts_ep_flush)
{
    rma_then_flush(false, FLUSH_EP_COMP, LOSS_MAX_LEN);
    expect_losses();
}


TEST_F(srqud_rma_flush_loss_get, many_outstanding_gets_ep_flush)
{
    rma_then_flush(true, FLUSH_EP_COMP, LOSS_MAX_LEN);
    expect_losses();
}


/* A plain deregistration leaves the MR in the cache for a later
 * registration of the same range to reuse; peers must not be able to write
 * through it meanwhile. Memory from mmap: its own pages, so that no other
 * registration shares the cached region, and it stays mapped after the
 * deregistration for the bytes to be checked. */
TEST_F(srqud_rma_flush_rcache, put_after_dereg_is_refused_with_rcache)
{
    const size_t length = 256 * 1024;
    const size_t zlen   = 65536 + 3;    /* zero-copy protocol */
    const size_t clen   = 1000;         /* copy path */
    const size_t slen   = initiator->attr.cap.put.max_short;
    uct_md_attr_t md_attr;
    ASSERT_UCS_OK(uct_md_query(tgt_ctx.md, &md_attr));

    void *map = mmap(NULL, length, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, map);
    std::shared_ptr<void> unmap(map, [length](void *p) { munmap(p, length); });
    uint8_t *mem   = static_cast<uint8_t*>(map);
    uint64_t raddr = (uintptr_t)mem;
    local.reset(new region(init_ctx, length, UCT_MD_MEM_ACCESS_ALL));
    fill_pattern(mem, length, 0xdead);
    fill_pattern(local->data(), length, 0xbeef);
    std::vector<uint8_t> expected(mem, mem + length);

    auto reg = [&](uct_mem_h *memh, uct_rkey_bundle_t *rkey) {
        std::vector<uint8_t> packed(md_attr.rkey_packed_size);
        ASSERT_UCS_OK(uct_md_mem_reg(tgt_ctx.md, mem, length,
                                     UCT_MD_MEM_ACCESS_ALL, memh));
        ASSERT_UCS_OK(srqud_mkey_pack(tgt_ctx.md, *memh, mem, length,
                                      packed.data()));
        ASSERT_UCS_OK(uct_rkey_unpack(tgt_ctx.component, packed.data(), rkey));
    };
    struct attempt { op_kind kind; size_t offset, length; };
    const attempt attempts[] = {{OP_PUT_SHORT, 1001, slen},
                                {OP_PUT_ZCOPY, 20011, clen},
                                {OP_PUT_ZCOPY, 70001, zlen}};
    auto put = [&](const attempt &a, uct_rkey_t rkey) {
        return put_and_flush(a.kind, a.offset, a.length, raddr, rkey);
    };

    /* registered: every kind of put lands (the rkey and path work) */
    uct_mem_h memh;
    uct_rkey_bundle_t rkey;
    reg(&memh, &rkey);
    if (HasFatalFailure()) {
        return;
    }
    for (const auto &a : attempts) {
        ASSERT_UCS_OK(put(a, rkey.rkey));
        memcpy(expected.data() + a.offset, local->data() + a.offset,
               a.length);
    }
    expect_image(mem, expected.data(), length, "registered region");

    /* deregistered (the cache keeps the MR): refused, not a byte changed */
    ASSERT_UCS_OK(uct_md_mem_dereg(tgt_ctx.md, memh));
    fill_pattern(local->data(), length, 0xf00d);
    for (const auto &a : attempts) {
        ucs_status_t status = put(a, rkey.rkey);
        EXPECT_NE(UCS_OK, status)
            << op_name(a.kind) << " of " << a.length
            << " B to a deregistered region was accepted";
        EXPECT_NE(UCS_ERR_TIMED_OUT, status) << op_name(a.kind);
        expect_image(mem, expected.data(), length,
                     (std::string("deregistered region after a ") +
                      op_name(a.kind) + " of " + std::to_string(a.length) +
                      " B").c_str());
        /* each attempt judged on its own */
        memcpy(expected.data(), mem, length);
    }
    uct_rkey_release(tgt_ctx.component, &rkey);

    /* registered again: the same range takes puts again (a refused put
     * broke nothing) */
    reg(&memh, &rkey);
    if (HasFatalFailure()) {
        return;
    }
    fill_pattern(local->data(), length, 0xcafe);
    for (const auto &a : attempts) {
        EXPECT_EQ(UCS_OK, put(a, rkey.rkey))
            << op_name(a.kind) << " of " << a.length
            << " B after registering again";
        memcpy(expected.data() + a.offset, local->data() + a.offset,
               a.length);
    }
    expect_image(mem, expected.data(), length, "registered again");
    uct_rkey_release(tgt_ctx.component, &rkey);
    ASSERT_UCS_OK(uct_md_mem_dereg(tgt_ctx.md, memh));
}
