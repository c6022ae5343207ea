/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#include "srqud_raw.h"

#include <arpa/inet.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace srqud_test {

bool datagram::neth(uct_srqud_neth_t *h) const
{
    if (with_imm || (data.size() < sizeof(*h))) {
        return false;
    }
    memcpy(h, data.data(), sizeof(*h));
    return h->magic == UCT_SRQUD_MAGIC;
}


const uint8_t *datagram::payload() const
{
    return data.data() + sizeof(uct_srqud_neth_t);
}


size_t datagram::payload_len() const
{
    return (data.size() > sizeof(uct_srqud_neth_t)) ?
           (data.size() - sizeof(uct_srqud_neth_t)) : 0;
}


const unsigned raw_sender::recv_len;
const unsigned raw_sender::recv_count;


raw_sender::~raw_sender()
{
    if (qp)  ibv_destroy_qp(qp);
    if (ah)  ibv_destroy_ah(ah);
    if (mr)  ibv_dereg_mr(mr);
    if (rmr) ibv_dereg_mr(rmr);
    if (cq)  ibv_destroy_cq(cq);
    if (rcq) ibv_destroy_cq(rcq);
    if (pd)  ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
}


void raw_sender::init(const std::string &dev,
                      const std::vector<uint8_t> &dev_addr,
                      const std::vector<uint8_t> &iface_addr)
{
    const char *inject = getenv("SRQUD_TEST_INJECT_DEVICE");
    bool remote        = (inject != NULL) && (dev != inject);
    std::string from   = remote ? inject : dev;
    std::string name   = from.substr(0, from.find(':'));
    port               = atoi(from.substr(from.find(':') + 1).c_str());
    int num;
    ibv_device **list = ibv_get_device_list(&num);
    ASSERT_NE(nullptr, list);
    for (int i = 0; i < num; ++i) {
        if (name == ibv_get_device_name(list[i])) {
            ctx = ibv_open_device(list[i]);
        }
    }
    ibv_free_device_list(list);
    ASSERT_NE(nullptr, ctx) << name;

    ASSERT_GE(dev_addr.size(), sizeof(uct_srqud_device_addr_t));
    ASSERT_GE(iface_addr.size(), sizeof(uct_srqud_iface_addr_t));
    const uct_srqud_device_addr_t *da =
        reinterpret_cast<const uct_srqud_device_addr_t*>(dev_addr.data());
    remote_qpn = uct_srqud_unpack_qpn(
        reinterpret_cast<const uct_srqud_iface_addr_t*>(iface_addr.data())->qp_num);

    /* Send from the GID the interface itself uses; from another device,
     * from its GID in the same subnet (the wire's link-local prefix) */
    int sgid_index = -1;
    ibv_port_attr pattr;
    ASSERT_EQ(0, ibv_query_port(ctx, port, &pattr));
    for (int i = 0; i < pattr.gid_tbl_len; ++i) {
        ibv_gid g;
        if ((ibv_query_gid(ctx, port, i, &g) == 0) &&
            !memcmp(g.raw, da->gid, remote ? 8 : 16) &&
            (!remote || memcmp(g.raw, da->gid, 16))) {
            sgid_index = i; /* the last match is the RoCE v2 entry */
            gid        = g;
        }
    }
    ASSERT_GE(sgid_index, 0) << "no GID on " << name
                             << " to reach the receiver from";
    lid    = pattr.lid;
    is_eth = (pattr.link_layer == IBV_LINK_LAYER_ETHERNET);

    pd = ibv_alloc_pd(ctx);
    ASSERT_NE(nullptr, pd);
    cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
    ASSERT_NE(nullptr, cq);
    /* as many entries as receives posted: it cannot overrun */
    rcq = ibv_create_cq(ctx, recv_count, NULL, NULL, 0);
    ASSERT_NE(nullptr, rcq);
    mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(nullptr, mr);
    rbuf.assign((size_t)recv_len * recv_count, 0);
    rmr = ibv_reg_mr(pd, rbuf.data(), rbuf.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(nullptr, rmr);

    ibv_qp_init_attr ia;
    memset(&ia, 0, sizeof(ia));
    ia.qp_type          = IBV_QPT_UD;
    ia.send_cq          = cq;
    ia.recv_cq          = rcq;
    ia.cap.max_send_wr  = 64;
    ia.cap.max_recv_wr  = recv_count;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    qp = ibv_create_qp(pd, &ia);
    ASSERT_NE(nullptr, qp);

    ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state   = IBV_QPS_INIT;
    a.port_num   = port;
    a.qkey       = UCT_SRQUD_QKEY;
    ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                       IBV_QP_PORT | IBV_QP_QKEY));
    for (unsigned i = 0; i < recv_count; ++i) {
        ASSERT_NO_FATAL_FAILURE(post_recv(i));
    }
    a.qp_state = IBV_QPS_RTR;
    ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE));
    a.qp_state = IBV_QPS_RTS;
    ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));

    ibv_ah_attr ah_attr;
    memset(&ah_attr, 0, sizeof(ah_attr));
    ah_attr.port_num      = port;
    ah_attr.dlid          = da->lid;
    ah_attr.is_global     = 1;
    ah_attr.grh.sgid_index = sgid_index;
    ah_attr.grh.hop_limit = 64;
    memcpy(ah_attr.grh.dgid.raw, da->gid, 16);
    ah = ibv_create_ah(pd, &ah_attr);
    ASSERT_NE(nullptr, ah);
}


void raw_sender::post_recv(unsigned index)
{
    ibv_sge sge = {(uintptr_t)&rbuf[(size_t)index * recv_len], recv_len,
                   rmr->lkey};
    ibv_recv_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id   = index;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ASSERT_EQ(0, ibv_post_recv(qp, &wr, &bad));
}


void raw_sender::send(const void *data, size_t len)
{
    send_to(data, len, remote_qpn, UCT_SRQUD_QKEY, nullptr);
}


void raw_sender::send_to(const void *data, size_t len, uint32_t qpn,
                         uint32_t qkey, const uint32_t *imm)
{
    ASSERT_LE(len, sizeof(buf));
    memcpy(buf, data, len);
    ibv_sge sge = {(uintptr_t)buf, (uint32_t)len, mr->lkey};
    ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.sg_list           = &sge;
    wr.num_sge           = 1;
    wr.opcode            = (imm != nullptr) ? IBV_WR_SEND_WITH_IMM :
                                              IBV_WR_SEND;
    wr.imm_data          = (imm != nullptr) ? htonl(*imm) : 0;
    wr.send_flags        = IBV_SEND_SIGNALED;
    wr.wr.ud.ah          = ah;
    wr.wr.ud.remote_qpn  = qpn;
    wr.wr.ud.remote_qkey = qkey;
    ASSERT_EQ(0, ibv_post_send(qp, &wr, &bad));
    ibv_wc wc;
    int n;
    unsigned long spins = 0;
    while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
        ASSERT_LT(++spins, 100000000ul);
    }
    ASSERT_EQ(1, n);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
}


bool raw_sender::try_recv(datagram &d)
{
    ibv_wc wc;

    for (;;) {
        if (ibv_poll_cq(rcq, 1, &wc) != 1) {
            return false;
        }
        const unsigned index = (unsigned)wc.wr_id;
        const bool ok = (wc.status == IBV_WC_SUCCESS) &&
                        (wc.byte_len >= UCT_SRQUD_GRH_LEN) &&
                        (wc.byte_len <= recv_len);
        if (ok) {
            const uint8_t *p = &rbuf[(size_t)index * recv_len];
            d.data.assign(p + UCT_SRQUD_GRH_LEN, p + wc.byte_len);
            d.byte_len = wc.byte_len;
            d.src_qp   = wc.src_qp;
            d.with_imm = !!(wc.wc_flags & IBV_WC_WITH_IMM);
            d.imm      = d.with_imm ? ntohl(wc.imm_data) : 0;
        }
        post_recv(index);
        if (ok) {
            return true;
        }
    }
}


bool raw_sender::recv(datagram &d, unsigned timeout_ms,
                      const std::function<void()> &progress)
{
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(timeout_ms);
    for (unsigned long n = 0;; ++n) {
        if (try_recv(d)) {
            return true;
        }
        if (((n % 256) == 0) &&
            (std::chrono::steady_clock::now() >= deadline)) {
            return try_recv(d);
        }
        if (progress) {
            progress();
        }
    }
}


unsigned raw_sender::drain(const std::function<void(const datagram&)> &handler)
{
    datagram d;
    unsigned n = 0;

    while (try_recv(d)) {
        handler(d);
        ++n;
    }
    return n;
}


std::vector<uint8_t> raw_sender::peer_dev_addr() const
{
    std::vector<uint8_t> addr(sizeof(uct_srqud_device_addr_t));
    uct_srqud_device_addr_t da;

    da.flags = is_eth ? UCT_SRQUD_ADDR_FLAG_ETH : 0;
    da.lid   = lid;
    memcpy(da.gid, gid.raw, sizeof(da.gid));
    memcpy(addr.data(), &da, sizeof(da));
    return addr;
}


std::vector<uint8_t> raw_sender::peer_iface_addr() const
{
    std::vector<uint8_t> addr(sizeof(uct_srqud_iface_addr_t));
    uct_srqud_iface_addr_t ia;

    uct_srqud_pack_qpn(ia.qp_num, qp->qp_num);
    memcpy(addr.data(), &ia, sizeof(ia));
    return addr;
}


std::string stats_line(const uct_srqud_iface_stats_t &s)
{
    std::ostringstream os;
    os << "rx_packets " << s.rx_packets << " malformed "
       << s.rx_dropped_malformed << " no_ep " << s.rx_no_ep << " bad_token "
       << s.rx_bad_token << " duplicates " << s.rx_duplicates
       << " out_of_order " << s.rx_out_of_order << " held " << s.rx_held
       << " reorder_dropped " << s.rx_reorder_dropped << " async_queued "
       << s.async_queued << " ep_failures " << s.ep_failures;
    return os.str();
}

uct_srqud_neth_t make_neth(uint8_t flags, uint8_t ctl, uint32_t dest_ep_id,
                           uint32_t src_ep_id, uint16_t psn, uint32_t token)
{
    uct_srqud_neth_t n;

    memset(&n, 0, sizeof(n));
    n.magic      = UCT_SRQUD_MAGIC;
    n.flags      = flags;
    n.ctl        = ctl;
    n.dest_ep_id = dest_ep_id;
    n.src_ep_id  = src_ep_id;
    n.psn        = psn;
    n.token      = token;
    return n;
}


/* A packet: the header, then up to two parts of payload */
std::vector<uint8_t> packet(const uct_srqud_neth_t &neth,
                            const void *a, size_t a_len, const void *b,
                            size_t b_len)
{
    std::vector<uint8_t> p(sizeof(neth) + a_len + b_len);

    memcpy(p.data(), &neth, sizeof(neth));
    if (a_len > 0) {
        memcpy(p.data() + sizeof(neth), a, a_len);
    }
    if (b_len > 0) {
        memcpy(p.data() + sizeof(neth) + a_len, b, b_len);
    }
    return p;
}


/* Wall time, to bound waits for what UD may lose (never asserted on) */
bool expired(std::chrono::steady_clock::time_point since, unsigned ms)
{
    return std::chrono::steady_clock::now() - since >
           std::chrono::milliseconds(ms);
}


/* Send @a pkt until the receiver has it (its rx_packets counts it; UD may
 * lose it: sent again, as the peer's reliability would), then progress
 * the receiver until done() */
bool deliver(raw_sender &peer, iface &receiver, const std::vector<uint8_t> &pkt,
             const std::function<bool()> &done)
{
    for (int attempt = 0; attempt < 3; ++attempt) {
        const unsigned long before = srqud_stats(receiver.handle).rx_packets;
        peer.send(pkt);
        if (progress_until(receiver, [&] {
                return srqud_stats(receiver.handle).rx_packets > before;
            }, 2000000ul)) {
            return progress_until(receiver, done, 2000000ul);
        }
    }
    return false;
}

/* The log holds @a count messages, intact and in order, and no more come
 * once a wrongly accepted packet has had the chance to show */
void expect_only(iface &receiver, const am_log &log, unsigned count)
{
    for (int i = 0; i < 100000; ++i) {
        receiver.progress();
    }
    EXPECT_EQ(count, log.count);
    EXPECT_EQ(0u, log.bad);
    EXPECT_TRUE(log.in_order());
}

void attacked::open()
{
    ASSERT_UCS_OK(ctx.init());
    receiver.reset(new iface(ctx));
    ASSERT_UCS_OK(receiver->open());
    ASSERT_UCS_OK(log.attach(*receiver, am_id));
    ASSERT_NO_FATAL_FAILURE(peer.init(ctx.dev_name, receiver->dev_addr,
                                      receiver->iface_addr));
}

} // namespace srqud_test
