/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The one fixture of the device tests: srqud interfaces opened on a real
 * verbs device (Soft-RoCE in the test VM) through UCT's public API, exactly
 * as UCP does (nothing here is mocked), with what the tests observe them
 * by: an error handler's log, an AM handler's log of sequence-numbered
 * messages, counting completions, payload patterns and their hash.
 */

#ifndef SRQUD_TEST_FIXTURE_H_
#define SRQUD_TEST_FIXTURE_H_

#include <gtest/gtest.h>

#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

extern "C" {
#include <uct/ib/srqud/srqud_stats.h>
}

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace srqud_test {

#define ASSERT_UCS_OK(_expr) \
    do { \
        ucs_status_t _s = (_expr); \
        ASSERT_EQ(UCS_OK, _s) << #_expr << ": " << ucs_status_string(_s); \
    } while (0)

/* The device tests must run on a machine with a verbs device; a missing
 * device is a failure, never a skip. SRQUD_TEST_DEVICE overrides. */
std::string test_device();

/* Counters of an srqud interface, read through the symbol the module
 * exports for tests and benchmarks (a failure if it cannot be found) */
uct_srqud_iface_stats_t srqud_stats(uct_iface_h iface);


/* ---- payloads ------------------------------------------------------------ */

/* FNV-1a over a buffer, used to verify payloads end to end */
uint64_t checksum(const void *buf, size_t len, uint64_t seed = 1469598103934665603ull);

/* Deterministic payload for message number @a seq */
void fill_pattern(void *buf, size_t len, uint64_t seq);
bool check_pattern(const void *buf, size_t len, uint64_t seq);

/* A sequence-numbered message of @a length bytes (at least 8): the 8-byte
 * sequence number, then the pattern for that number */
void fill_seq_msg(void *buf, size_t length, uint64_t seq);

/* Sends fill_seq_msg(seq, length) by am_bcopy; returns what
 * uct_ep_am_bcopy returns (the length sent, or an error status) */
ssize_t send_seq_bcopy(uct_ep_h ep, uint8_t am_id, uint64_t seq,
                       size_t length);

/* The same, as a status: UCS_OK once sent */
ucs_status_t send_seq_bcopy_status(uct_ep_h ep, uint8_t am_id, uint64_t seq,
                                   size_t length);


/* ---- what the handlers saw ----------------------------------------------- */

class iface;

/* The receiver's AM handler log of sequence-numbered messages */
struct am_log {
    explicit am_log(uint64_t first_seq = 0) : next_seq(first_seq) {}

    /* the handler for uct_iface_set_am_handler(), @a arg an am_log */
    static ucs_status_t handler(void *arg, void *data, size_t length,
                                unsigned flags);
    /* logs the AM @a am_id of @a i here */
    ucs_status_t attach(const iface &i, uint8_t am_id);

    bool in_order() const { return misordered == 0; }

    unsigned count      = 0; /* every delivery */
    unsigned bad        = 0; /* shorter than a sequence number, or its
                                payload is not the pattern of its number */
    unsigned misordered = 0; /* not the number after the previous one
                                (the first: not first_seq) */
    uint64_t next_seq;
    uint64_t sum        = 0; /* checksum() of every delivery, added up */
    std::map<uint64_t, size_t> lengths; /* per sequence number */
};

/* The interface's error handler log (iface::open(&log)) */
struct err_log {
    static ucs_status_t handler(void *arg, uct_ep_h ep, ucs_status_t status);

    unsigned     count  = 0;
    ucs_status_t status = UCS_OK;   /* the last one reported */
    uct_ep_h     ep     = nullptr;  /* the endpoint it was reported on */
};

/* A completion that counts its calls; count and status as UCT expects */
struct comp_t {
    uct_completion_t super;
    unsigned         calls = 0;

    explicit comp_t(int count = 1);
};


class env_guard {
public:
    env_guard(const char *name, const char *value);
    ~env_guard();
private:
    std::string m_name;
    bool        m_had_value;
    std::string m_old;
};


/* ---- contexts and interfaces --------------------------------------------- */

/* UCX's async thread held off @a async while in scope (or until release()):
 * it progresses interfaces the test does not progress for a tick */
class async_hold {
public:
    explicit async_hold(ucs_async_context_t *async);
    ~async_hold();
    void release();

private:
    ucs_async_context_t *m_async;
};


/* A UCT context: async context, worker, srqud component and md */
class uct_ctx {
public:
    uct_ctx();
    ~uct_ctx();

    ucs_status_t init();   /* finds srqud and opens the md of test_device() */
    /* ... of @a dev (e.g. rxe0:1), another host's device on the wire */
    ucs_status_t init(const std::string &dev);
    /* its own async context and worker, on the md of @a owner (which must
     * outlive it): another UCP worker of the same process, as a thread
     * of an MPI+threads code has */
    ucs_status_t init_worker(const uct_ctx &owner);

    uct_component_h   component = nullptr;
    uct_md_h          md        = nullptr;
    uct_worker_h      worker    = nullptr;
    ucs_async_context_t *async  = nullptr;
    /* of the async context init() creates: set before it */
    ucs_async_mode_t  async_mode = UCS_ASYNC_MODE_THREAD_SPINLOCK;
    std::string       md_name;
    std::string       dev_name;   /* e.g. rxe0:1 */
    bool              owns_md   = true;
};


/* One srqud interface with its addresses */
class iface {
public:
    explicit iface(uct_ctx &ctx);
    ~iface();

    /* with @a errors, endpoint errors are reported to that log through the
     * interface's error handler (otherwise UCX's default handling) */
    ucs_status_t open(err_log *errors = nullptr);
    ucs_status_t connect(const iface &peer, uct_ep_h *ep_p) const;
    ucs_status_t connect(const std::vector<uint8_t> &dev_addr,
                         const std::vector<uint8_t> &iface_addr,
                         uct_ep_h *ep_p) const;
    unsigned progress();

    uct_ctx              &ctx;
    uct_iface_h          handle = nullptr;
    uct_iface_attr_t     attr;
    std::vector<uint8_t> dev_addr;
    std::vector<uint8_t> iface_addr;
};


/* The addresses of an interface that was opened and closed again: a peer
 * that vanished. False (and a test failure) if it could not be opened. */
bool vanished_peer(uct_ctx &ctx, std::vector<uint8_t> &dev_addr,
                   std::vector<uint8_t> &iface_addr);

/* An interface whose error handler logs into @a errors, and an endpoint
 * from it to a peer that vanished. While it exists, peers time out after
 * 1 s (UCX_SRQUD_TIMEOUT) and retransmissions back off to 100 ms at most
 * (UCX_SRQUD_RTO_MAX), for interfaces opened later too. */
class dead_peer_ep {
public:
    ~dead_peer_ep();   /* destroys ep, unless nullptr */

    /* call through ASSERT_NO_FATAL_FAILURE */
    void open();

    env_guard              timeout{"UCX_SRQUD_TIMEOUT", "1s"};
    env_guard              rto_max{"UCX_SRQUD_RTO_MAX", "100ms"};
    uct_ctx                ctx;
    err_log                errors;
    std::unique_ptr<iface> local;
    uct_ep_h               ep = nullptr;
};

/* An interface's addresses over a pipe, as UCP would exchange its worker
 * address out of band between two processes; false on a short read/write */
bool write_address(int fd, const iface &i);
bool read_address(int fd, std::vector<uint8_t> &dev_addr,
                  std::vector<uint8_t> &iface_addr);


/* Two interfaces and an endpoint from the sender to the receiver. On one
 * worker, or (two_workers) on one each, as two processes would have:
 * progressing the sender's then does not progress the receiver. Test
 * fixtures derive from it beside ::testing::Test; a test of its own may
 * hold one. */
class iface_pair {
public:
    explicit iface_pair(bool two_workers = false) : two_workers(two_workers) {}
    virtual ~iface_pair();

    /* sets @a name until the pair is destroyed: call before open_pair() */
    void set_env(const char *name, const char *value);

    /* that fraction of srqud's packets lost (sent with a Q_Key the
     * receiving device drops; zero-copy chunks to no QP), and UCX's log at
     * level error (no warnings about it) */
    void drop_packets(const char *fraction);

    /* setup_env(), then opens both interfaces and connects; with
     * @a am_id >= 0 the receiver's AM handler for it logs into @a log,
     * whose first sequence number is @a first_seq. Call through
     * ASSERT_NO_FATAL_FAILURE. */
    void open_pair(int am_id = -1, uint64_t first_seq = 0);

    /* destroys the endpoint (if not nullptr), then both interfaces */
    void close_pair();

    /* flushes the sender's interface, progressing both, until everything
     * it sent is acknowledged (UCS_OK), at most @a max_iter times */
    ucs_status_t flush_sender(unsigned long max_iter = 10000000ul);

    uct_ctx &rx_ctx() { return two_workers ? m_rx_ctx : ctx; }

    /* both progressed until done() or max_iter times */
    template <typename F>
    bool progress_both_until(F done, unsigned long max_iter = 40000000ul)
    {
        for (unsigned long n = 0; (n < max_iter) && !done(); ++n) {
            sender->progress();
            receiver->progress();
        }
        return done();
    }

    const bool             two_workers;
    uct_ctx                ctx;          /* the sender's */
    std::unique_ptr<iface> sender, receiver;
    uct_ep_h               ep = nullptr;
    am_log                 log;

protected:
    /* the environment of derived fixtures (set_env), before any open */
    virtual void setup_env() {}

    /* after the sender's open, before the receiver's: for a receiver
     * configured otherwise. Call ASSERTs only. */
    virtual void between_opens() {}

private:
    uct_ctx                                 m_rx_ctx;
    std::vector<std::unique_ptr<env_guard>> m_envs;
};


/* ---- progress ------------------------------------------------------------ */

/* Progress @a i until done() or max_iter times; returns done() */
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

/* Call op() again, calling progress() in between, as long as it returns
 * @a busy (UCS_ERR_NO_RESOURCE: a send out of resources; UCS_INPROGRESS:
 * an interface flush), at most @a max_iter times; returns op's last
 * result, so still @a busy if it never got further */
template <typename Op, typename Progress>
auto repeat_while(ucs_status_t busy, Op op, Progress progress,
                  unsigned long max_iter) -> decltype(op())
{
    auto ret = op();
    for (unsigned long n = 0; (ret == busy) && (n < max_iter); ++n) {
        progress();
        ret = op();
    }
    return ret;
}


/* ---- RMA ----------------------------------------------------------------- */

/* Pack the remote key of [address, address + length) as UCP packs it for
 * an md that can invalidate: a deregistration may then invalidate it
 * (from UCX 1.15 only a key packed so; the one place the tests see a UCX
 * version difference) */
ucs_status_t srqud_mkey_pack(uct_md_h md, uct_mem_h memh, void *address,
                             size_t length, void *buffer);


/* Memory registered on the md of @a ctx, with its packed and unpacked
 * remote key, between two guard areas that must stay zero */
struct region {
    region(uct_ctx &ctx, size_t length, unsigned access);
    ~region();

    uint8_t *data() { return buf.data() + guard; }
    uint64_t addr() { return (uintptr_t)data(); }

    /* the bytes around the region were never written */
    bool guards_intact() const;

    static const size_t  guard = 4096;
    uct_ctx              &m_ctx;
    std::vector<uint8_t> buf;
    size_t               len  = 0;
    uct_mem_h            memh = UCT_MEM_HANDLE_NULL;
    std::vector<uint8_t> packed;
    uct_rkey_bundle_t    rkey;
};

/* uct_ep_get_zcopy (@a is_get) or uct_ep_put_zcopy of @a iov */
ucs_status_t rma_zcopy(uct_ep_h ep, bool is_get, const uct_iov_t *iov,
                       uint64_t remote_addr, uct_rkey_t rkey,
                       uct_completion_t *comp);

} // namespace srqud_test

#endif
