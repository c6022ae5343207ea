/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#include "srqud_fixture.h"

#include <uct/api/v2/uct_v2.h>

#include <ucs/async/async.h>
#include <ucs/type/thread_mode.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

extern "C" {
ucs_status_t ucs_async_context_create(ucs_async_mode_t mode,
                                      ucs_async_context_t **async_p);
void ucs_async_context_destroy(ucs_async_context_t *async);
}

namespace srqud_test {

std::string test_device()
{
    const char *dev = getenv("SRQUD_TEST_DEVICE");
    return (dev != NULL) ? dev : "rxe0:1";
}


uct_srqud_iface_stats_t srqud_stats(uct_iface_h iface)
{
    uct_srqud_iface_stats_t stats;
    uct_srqud_iface_stats_get_func_t get = nullptr;
    void *h;

    memset(&stats, 0, sizeof(stats));
    h = dlopen("libuct_srqud.so.0", RTLD_NOLOAD | RTLD_LAZY);
    EXPECT_TRUE(h != NULL) << "libuct_srqud is not loaded: " << dlerror();
    if (h != NULL) {
        get = (uct_srqud_iface_stats_get_func_t)dlsym(
                h, "uct_srqud_iface_stats_get");
        dlclose(h);
    }
    EXPECT_TRUE(get != nullptr) << "uct_srqud_iface_stats_get not found";
    if (get != nullptr) {
        EXPECT_EQ(UCS_OK, get(iface, &stats));
    }
    return stats;
}


uint64_t checksum(const void *buf, size_t len, uint64_t seed)
{
    const uint8_t *p = static_cast<const uint8_t*>(buf);
    uint64_t h       = seed;

    for (size_t i = 0; i < len; ++i) {
        h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
}


void fill_pattern(void *buf, size_t len, uint64_t seq)
{
    uint8_t *p = static_cast<uint8_t*>(buf);
    uint64_t x = seq * 0x9e3779b97f4a7c15ull + 1;

    for (size_t i = 0; i < len; ++i) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        p[i] = static_cast<uint8_t>(x);
    }
}


bool check_pattern(const void *buf, size_t len, uint64_t seq)
{
    std::vector<uint8_t> expected(len);
    fill_pattern(expected.data(), len, seq);
    return (len == 0) || !memcmp(buf, expected.data(), len);
}


void fill_seq_msg(void *buf, size_t length, uint64_t seq)
{
    memcpy(buf, &seq, sizeof(seq));
    fill_pattern(static_cast<uint8_t*>(buf) + sizeof(seq),
                 length - sizeof(seq), seq);
}


namespace {

struct seq_msg {
    uint64_t seq;
    size_t   length;
};

size_t seq_msg_pack(void *dest, void *arg)
{
    const seq_msg *m = static_cast<const seq_msg*>(arg);
    fill_seq_msg(dest, m->length, m->seq);
    return m->length;
}

} // namespace


ssize_t send_seq_bcopy(uct_ep_h ep, uint8_t am_id, uint64_t seq,
                       size_t length)
{
    seq_msg m = {seq, length};
    return uct_ep_am_bcopy(ep, am_id, seq_msg_pack, &m, 0);
}


ucs_status_t send_seq_bcopy_status(uct_ep_h ep, uint8_t am_id, uint64_t seq,
                                   size_t length)
{
    ssize_t ret = send_seq_bcopy(ep, am_id, seq, length);

    return (ret < 0) ? (ucs_status_t)ret : UCS_OK;
}


ucs_status_t am_log::handler(void *arg, void *data, size_t length,
                             unsigned flags)
{
    am_log *log = static_cast<am_log*>(arg);
    uint64_t seq;

    ++log->count;
    if (length < sizeof(seq)) {
        ++log->bad;
        return UCS_OK;
    }

    memcpy(&seq, data, sizeof(seq));
    if (!check_pattern(static_cast<char*>(data) + sizeof(seq),
                       length - sizeof(seq), seq)) {
        ++log->bad;
    }
    if (seq != log->next_seq) {
        ++log->misordered;
    }
    log->next_seq     = seq + 1;
    log->lengths[seq] = length;
    log->sum         += checksum(data, length);
    return UCS_OK;
}


ucs_status_t am_log::attach(const iface &i, uint8_t am_id)
{
    return uct_iface_set_am_handler(i.handle, am_id, handler, this, 0);
}


ucs_status_t err_log::handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    err_log *log = static_cast<err_log*>(arg);

    ++log->count;
    log->status = status;
    log->ep     = ep;
    return UCS_OK;
}


env_guard::env_guard(const char *name, const char *value) : m_name(name)
{
    const char *old = getenv(name);
    m_had_value     = (old != NULL);
    if (m_had_value) {
        m_old = old;
    }
    setenv(name, value, 1);
}


env_guard::~env_guard()
{
    if (m_had_value) {
        setenv(m_name.c_str(), m_old.c_str(), 1);
    } else {
        unsetenv(m_name.c_str());
    }
}


async_hold::async_hold(ucs_async_context_t *async) : m_async(async)
{
    UCS_ASYNC_BLOCK(m_async);
}


async_hold::~async_hold()
{
    release();
}


void async_hold::release()
{
    if (m_async != nullptr) {
        UCS_ASYNC_UNBLOCK(m_async);
        m_async = nullptr;
    }
}


uct_ctx::uct_ctx()
{
}


uct_ctx::~uct_ctx()
{
    if ((md != nullptr) && owns_md) {
        uct_md_close(md);
    }
    if (worker != nullptr) {
        uct_worker_destroy(worker);
    }
    if (async != nullptr) {
        ucs_async_context_destroy(async);
    }
}


ucs_status_t uct_ctx::init_worker(const uct_ctx &owner)
{
    ucs_status_t status;

    component = owner.component;
    md        = owner.md;
    md_name   = owner.md_name;
    dev_name  = owner.dev_name;
    owns_md   = false;

    status = ucs_async_context_create(async_mode, &async);
    if (status != UCS_OK) {
        return status;
    }
    return uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker);
}


ucs_status_t uct_ctx::init()
{
    return init(test_device());
}


ucs_status_t uct_ctx::init(const std::string &want)
{
    uct_component_h *components;
    unsigned num_components;
    ucs_status_t status;

    dev_name = want;
    md_name  = want.substr(0, want.find(':'));

    status = ucs_async_context_create(async_mode, &async);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_query_components(&components, &num_components);
    if (status != UCS_OK) {
        return status;
    }

    for (unsigned i = 0; i < num_components; ++i) {
        uct_component_attr_t attr;
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, "srqud")) {
            component = components[i];
        }
    }
    uct_release_component_list(components);

    if (component == nullptr) {
        ADD_FAILURE() << "the srqud UCT component is not loaded";
        return UCS_ERR_NO_DEVICE;
    }

    uct_md_config_t *md_config;
    status = uct_md_config_read(component, NULL, NULL, &md_config);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_md_open(component, md_name.c_str(), md_config, &md);
    uct_config_release(md_config);
    return status;
}


iface::iface(uct_ctx &c) : ctx(c)
{
    memset(&attr, 0, sizeof(attr));
}


iface::~iface()
{
    if (handle != nullptr) {
        uct_iface_close(handle);
    }
}


ucs_status_t iface::open(err_log *errors)
{
    uct_iface_config_t *config;
    uct_iface_params_t params;
    ucs_status_t status;

    status = uct_md_iface_config_read(ctx.md, "srqud", NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE |
                                  UCT_IFACE_PARAM_FIELD_RX_HEADROOM |
                                  UCT_IFACE_PARAM_FIELD_STATS_ROOT |
                                  UCT_IFACE_PARAM_FIELD_CPU_MASK;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "srqud";
    params.mode.device.dev_name = ctx.dev_name.c_str();
    params.rx_headroom          = 0;
    params.stats_root           = NULL;
    UCS_CPU_ZERO(&params.cpu_mask);
    if (errors != nullptr) {
        params.field_mask       |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
        params.err_handler       = err_log::handler;
        params.err_handler_arg   = errors;
        params.err_handler_flags = 0;
    }

    status = uct_iface_open(ctx.md, ctx.worker, &params, config, &handle);
    uct_config_release(config);
    if (status != UCS_OK) {
        handle = nullptr;
        return status;
    }

    status = uct_iface_query(handle, &attr);
    if (status != UCS_OK) {
        return status;
    }

    dev_addr.resize(attr.device_addr_len);
    iface_addr.resize(attr.iface_addr_len);
    status = uct_iface_get_device_address(handle,
                                          (uct_device_addr_t*)dev_addr.data());
    if (status != UCS_OK) {
        return status;
    }
    status = uct_iface_get_address(handle, (uct_iface_addr_t*)iface_addr.data());
    if (status != UCS_OK) {
        return status;
    }

    uct_iface_progress_enable(handle, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return UCS_OK;
}


ucs_status_t iface::connect(const std::vector<uint8_t> &peer_dev_addr,
                            const std::vector<uint8_t> &peer_iface_addr,
                            uct_ep_h *ep_p) const
{
    uct_ep_params_t params;

    if (!uct_iface_is_reachable(handle,
                                (const uct_device_addr_t*)peer_dev_addr.data(),
                                (const uct_iface_addr_t*)peer_iface_addr.data())) {
        return UCS_ERR_UNREACHABLE;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = handle;
    params.dev_addr   = (const uct_device_addr_t*)peer_dev_addr.data();
    params.iface_addr = (const uct_iface_addr_t*)peer_iface_addr.data();
    return uct_ep_create(&params, ep_p);
}


ucs_status_t iface::connect(const iface &peer, uct_ep_h *ep_p) const
{
    return connect(peer.dev_addr, peer.iface_addr, ep_p);
}


unsigned iface::progress()
{
    return uct_worker_progress(ctx.worker);
}


bool vanished_peer(uct_ctx &ctx, std::vector<uint8_t> &dev_addr,
                   std::vector<uint8_t> &iface_addr)
{
    iface peer(ctx);
    ucs_status_t status = peer.open();

    EXPECT_EQ(UCS_OK, status) << "the peer to vanish: "
                              << ucs_status_string(status);
    dev_addr   = peer.dev_addr;
    iface_addr = peer.iface_addr;
    return status == UCS_OK;
}


dead_peer_ep::~dead_peer_ep()
{
    if (ep != nullptr) {
        uct_ep_destroy(ep);
    }
    local.reset();
}


void dead_peer_ep::open()
{
    std::vector<uint8_t> dev_addr, iface_addr;

    ASSERT_UCS_OK(ctx.init());
    local.reset(new iface(ctx));
    ASSERT_UCS_OK(local->open(&errors));
    ASSERT_TRUE(vanished_peer(ctx, dev_addr, iface_addr));
    ASSERT_UCS_OK(local->connect(dev_addr, iface_addr, &ep));
}


namespace {

bool write_all(int fd, const void *buf, size_t len)
{
    return write(fd, buf, len) == (ssize_t)len;
}

bool read_all(int fd, void *buf, size_t len)
{
    return read(fd, buf, len) == (ssize_t)len;
}

} // namespace


bool write_address(int fd, const iface &i)
{
    uint32_t lens[2] = {(uint32_t)i.dev_addr.size(),
                        (uint32_t)i.iface_addr.size()};

    return write_all(fd, lens, sizeof(lens)) &&
           write_all(fd, i.dev_addr.data(), lens[0]) &&
           write_all(fd, i.iface_addr.data(), lens[1]);
}


bool read_address(int fd, std::vector<uint8_t> &dev_addr,
                  std::vector<uint8_t> &iface_addr)
{
    uint32_t lens[2];

    if (!read_all(fd, lens, sizeof(lens))) {
        return false;
    }
    dev_addr.resize(lens[0]);
    iface_addr.resize(lens[1]);
    return read_all(fd, dev_addr.data(), lens[0]) &&
           read_all(fd, iface_addr.data(), lens[1]);
}


iface_pair::~iface_pair()
{
    close_pair();
    /* the newest first: a variable set twice gets its first value back */
    while (!m_envs.empty()) {
        m_envs.pop_back();
    }
}


void iface_pair::set_env(const char *name, const char *value)
{
    m_envs.emplace_back(new env_guard(name, value));
}


void iface_pair::drop_packets(const char *fraction)
{
    set_env("UCX_SRQUD_FAULT_TX_DROP", fraction);
    set_env("UCX_LOG_LEVEL", "error");
}


void iface_pair::open_pair(int am_id, uint64_t first_seq)
{
    setup_env();
    ASSERT_UCS_OK(ctx.init());
    if (two_workers) {
        ASSERT_UCS_OK(m_rx_ctx.init());
    }
    sender.reset(new iface(ctx));
    receiver.reset(new iface(rx_ctx()));
    ASSERT_UCS_OK(sender->open());
    ASSERT_NO_FATAL_FAILURE(between_opens());
    ASSERT_UCS_OK(receiver->open());
    if (am_id >= 0) {
        log = am_log(first_seq);
        ASSERT_UCS_OK(log.attach(*receiver, am_id));
    }
    ASSERT_UCS_OK(sender->connect(*receiver, &ep));
}


void iface_pair::close_pair()
{
    if (ep != nullptr) {
        uct_ep_destroy(ep);
        ep = nullptr;
    }
    sender.reset();
    receiver.reset();
}


ucs_status_t iface_pair::flush_sender(unsigned long max_iter)
{
    return repeat_while(UCS_INPROGRESS, [&] {
        return uct_iface_flush(sender->handle, 0, NULL);
    }, [&] {
        sender->progress();
        receiver->progress();
    }, max_iter);
}


comp_t::comp_t(int count)
{
    super.func   = [](uct_completion_t *self) {
        ++reinterpret_cast<comp_t*>(self)->calls;
    };
    super.count  = count;
    super.status = UCS_OK;
}


ucs_status_t srqud_mkey_pack(uct_md_h md, uct_mem_h memh, void *address,
                             size_t length, void *buffer)
{
    uct_md_mkey_pack_params_t params;

    params.field_mask = UCT_MD_MKEY_PACK_FIELD_FLAGS;
    params.flags      = UCS_BIT(0); /* INVALIDATE, INVALIDATE_RMA from 1.15 */
#if UCT_API >= UCT_VERSION(1, 16)
    return uct_md_mkey_pack_v2(md, memh, address, length, &params, buffer);
#else
    return uct_md_mkey_pack_v2(md, memh, &params, buffer);
#endif
}


const size_t region::guard;


region::region(uct_ctx &ctx, size_t length, unsigned access) :
    m_ctx(ctx), buf(length + 2 * guard, 0)
{
    EXPECT_EQ(UCS_OK, uct_md_mem_reg(ctx.md, data(), length, access, &memh));
    uct_md_attr_t attr;
    EXPECT_EQ(UCS_OK, uct_md_query(ctx.md, &attr));
    packed.resize(attr.rkey_packed_size);
    EXPECT_EQ(UCS_OK, srqud_mkey_pack(ctx.md, memh, data(), length,
                                      packed.data()));
    EXPECT_EQ(UCS_OK, uct_rkey_unpack(ctx.component, packed.data(), &rkey));
    len = length;
}


region::~region()
{
    uct_rkey_release(m_ctx.component, &rkey);
    if (memh != UCT_MEM_HANDLE_NULL) {
        uct_md_mem_dereg(m_ctx.md, memh);
    }
}


bool region::guards_intact() const
{
    for (size_t i = 0; i < guard; ++i) {
        if (buf[i] || buf[buf.size() - 1 - i]) {
            return false;
        }
    }
    return true;
}

ucs_status_t rma_zcopy(uct_ep_h ep, bool is_get, const uct_iov_t *iov,
                       uint64_t remote_addr, uct_rkey_t rkey,
                       uct_completion_t *comp)
{
    return is_get ? uct_ep_get_zcopy(ep, iov, 1, remote_addr, rkey, comp) :
                    uct_ep_put_zcopy(ep, iov, 1, remote_addr, rkey, comp);
}

} // namespace srqud_test
