/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Helpers for the device tests: open srqud interfaces on a real verbs
 * device (Soft-RoCE in the test VM) through UCT's public API, exactly as UCP
 * does. Nothing here is mocked.
 */

#ifndef SRQUD_TEST_FIXTURE_H_
#define SRQUD_TEST_FIXTURE_H_

#include <gtest/gtest.h>

#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

extern "C" {
#include <uct/ib/srqud/srqud_stats.h>
}

#include <cstdint>
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

/* FNV-1a over a buffer, used to verify payloads end to end */
uint64_t checksum(const void *buf, size_t len, uint64_t seed = 1469598103934665603ull);

/* Deterministic payload for message number @a seq */
void fill_pattern(void *buf, size_t len, uint64_t seq);
bool check_pattern(const void *buf, size_t len, uint64_t seq);


class env_guard {
public:
    env_guard(const char *name, const char *value);
    ~env_guard();
private:
    std::string m_name;
    bool        m_had_value;
    std::string m_old;
};


/* A UCT context: async context, worker, srqud component and md */
class uct_ctx {
public:
    uct_ctx();
    ~uct_ctx();

    ucs_status_t init();   /* finds srqud and opens the md of test_device() */

    uct_component_h   component = nullptr;
    uct_md_h          md        = nullptr;
    uct_worker_h      worker    = nullptr;
    ucs_async_context_t *async  = nullptr;
    std::string       md_name;
    std::string       dev_name;   /* e.g. rxe0:1 */
};


/* One srqud interface with its addresses */
class iface {
public:
    explicit iface(uct_ctx &ctx);
    ~iface();

    ucs_status_t open(size_t rx_headroom = 0);
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


/* A completion that counts its calls; count and status as UCT expects */
struct comp_t {
    uct_completion_t super;
    unsigned         calls = 0;

    explicit comp_t(int count = 1);
};


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

} // namespace srqud_test

#endif
