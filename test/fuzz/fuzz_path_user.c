/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * fuzz_path's user of srqud (fuzz_path.h): endpoints, AM, RMA,
 * flushes, pending requests and registrations.
 */

#include "fuzz_path.h"


/* ------------------------------------------------------------------------
 * The user's side
 */

/* The remote access of each region's registrations (op_mem) */
static const unsigned region_access[NREGIONS] = {
    0,
    UCT_MD_MEM_ACCESS_REMOTE_GET,
    UCT_MD_MEM_ACCESS_REMOTE_PUT | UCT_MD_MEM_ACCESS_REMOTE_GET,
    UCT_MD_MEM_ACCESS_REMOTE_PUT,
    UCT_MD_MEM_ACCESS_REMOTE_PUT | UCT_MD_MEM_ACCESS_REMOTE_GET
};


ucs_status_t am_handler(void *arg, void *data, size_t length,
                        unsigned flags)
{
    const volatile uint8_t *p = data;
    unsigned long sum = 0;
    size_t i;

    /* every byte the handler is given must be the packet's */
    for (i = 0; i < length; ++i) {
        sum += p[i];
    }
    G.am_bytes += sum;
    if ((flags & UCT_CB_PARAM_FLAG_DESC) && G.keep_descs &&
        (G.nkept < MAX_KEPT)) {
        G.kept[G.nkept++] = data;
        return UCS_INPROGRESS;
    }
    return UCS_OK;
}


ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    ++G.err_cbs;
    return UCS_OK;
}


void release_kept(unsigned n)
{
    while ((n-- > 0) && (G.nkept > 0)) {
        uct_iface_release_desc(G.kept[--G.nkept]);
    }
}


int ep_slot(uint8_t sel)
{
    int s = sel % MAX_EPS;

    return (G.eps[s].ep != NULL) ? s : -1;
}


void op_ep_create(uint8_t sel)
{
    uct_srqud_device_addr_t dev;
    uct_srqud_iface_addr_t ifa;
    uct_ep_params_t params;
    int s = (sel & 7) % MAX_EPS, k = (sel >> 3) % NPEERS;

    if (G.eps[s].ep != NULL) {
        return;
    }
    memset(&dev, 0, sizeof(dev));
    dev.flags = UCT_SRQUD_ADDR_FLAG_ETH;
    memcpy(dev.gid, G.peers[k].gid, 16);
    uct_srqud_pack_qpn(ifa.qp_num, G.peers[k].qpn);
    if (!uct_iface_is_reachable(G.iface, (const uct_device_addr_t*)&dev,
                                (const uct_iface_addr_t*)&ifa)) {
        FAIL("peer %d is not reachable", k);
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = G.iface;
    params.dev_addr   = (const uct_device_addr_t*)&dev;
    params.iface_addr = (const uct_iface_addr_t*)&ifa;
    if (uct_ep_create(&params, &G.eps[s].ep) == UCS_OK) {
        G.eps[s].peer       = k;
        G.eps[s].destroyed  = 0;
        G.eps[s].in_destroy = 0;
    } else {
        G.eps[s].ep = NULL;
    }
}


static void pending_purge_cb(uct_pending_req_t *req, void *arg)
{
    fz_pending_t *p = ucs_container_of(req, fz_pending_t, req);

    CHECK(p->ep >= 0);
    p->ep = -1;
}


void op_ep_destroy(int s)
{
    unsigned i;

    if ((s < 0) || (G.eps[s].ep == NULL)) {
        return;
    }
    uct_ep_pending_purge(G.eps[s].ep, pending_purge_cb, NULL);
    for (i = 0; i < MAX_PENDING; ++i) {
        CHECK(G.pending[i].ep != s);
    }
    G.eps[s].destroyed  = 1;
    G.eps[s].in_destroy = 1;
    uct_ep_destroy(G.eps[s].ep);
    G.eps[s].in_destroy = 0;
    G.eps[s].ep         = NULL;
    /* a completion of it from now on fails the run; its slot's next ep
     * gets comps of its own */
    for (i = 0; i < G.ncomps; ++i) {
        if ((G.comps[i].ep == s) && (G.comps[i].state == COMP_PENDING)) {
            G.comps[i].ep = MAX_EPS + s; /* stays destroyed */
        }
    }
    G.eps[s].destroyed = 0;
}


static size_t pack_cb(void *dest, void *arg)
{
    size_t len = *(size_t*)arg, i;

    for (i = 0; i < len; ++i) {
        ((uint8_t*)dest)[i] = (uint8_t)i;
    }
    return len;
}


static void unpack_cb(void *arg, const void *data, size_t length)
{
    fz_comp_t *c = arg;

    /* the bytes of a get_bcopy, once, before its completion */
    if ((c->state != COMP_PENDING) || (length != c->len)) {
        FAIL("get_bcopy unpack of %zu bytes (asked %lu) in state %d",
             length, (unsigned long)c->len, c->state);
    }
    memcpy((void*)(uintptr_t)c->addr, data, length);
}


/* A local buffer: region, offset, length within it */
/* A completion for an operation on the local buffer [addr, addr + len) of
 * region @a r */
static fz_comp_t *comp_local(int kind, int s, int r, uint64_t addr,
                             uint64_t len)
{
    fz_comp_t *c = comp_new(kind, s);

    if (c != NULL) {
        c->region = r;
        c->addr   = addr;
        c->len    = len;
    }
    return c;
}


static void local_buf(uint8_t rsel, uint16_t off, uint32_t len, int *r,
                      uint64_t *addr, uint64_t *plen)
{
    *r   = rsel % NREGIONS;
    off  = off % REGION_SIZE;
    len  = ucs_min(len, REGION_SIZE - off);
    *addr = (uintptr_t)regions_mem[*r] + off;
    *plen = len;
}


void op_rma(input_t *in)
{
    uint8_t kind = in8(in), rsel = in8(in);
    int s        = ep_slot(in8(in));
    uint16_t off = in16(in), l = in16(in);
    uint64_t addr, len, raddr;
    ucs_status_t status;
    fz_comp_t *c = NULL;
    uct_iov_t iov;
    ssize_t sret;
    size_t blen;
    int r, is_get;
    uint8_t buf[FV_MAX_PKT];

    if (s < 0) {
        return;
    }
    raddr        = G.next_raddr;
    G.next_raddr += 0x100000;

    switch (kind % 6) {
    case 0: /* put_short */
        blen = l % (G.attr.cap.put.max_short + 1);
        memset(buf, 0x5a, sizeof(buf));
        status = uct_ep_put_short(G.eps[s].ep, buf, blen, raddr, 0x1234);
        (void)status;
        return;
    case 1: /* put_bcopy */
        blen = l % (G.attr.cap.put.max_bcopy + 1);
        sret = uct_ep_put_bcopy(G.eps[s].ep, pack_cb, &blen, raddr, 0x1234);
        (void)sret;
        return;
    case 2: /* get_bcopy into R0/R1 */
        local_buf(rsel % 2, off, l % (G.attr.cap.get.max_bcopy + 1), &r,
                  &addr, &len);
        if ((len == 0) || region_busy(r) || G.reg[r].poisoned) {
            return;
        }
        c = comp_local(OP_GET, s, r, addr, len);
        if (c == NULL) {
            return;
        }
        c->raddr  = raddr;
        status = uct_ep_get_bcopy(G.eps[s].ep, unpack_cb, c, len, raddr,
                                  0x1234, &c->uc);
        /* the copy lands through unpack_cb: fill the buffer as UCP would
         * from the fragments; srqud calls it per fragment */
        comp_returned(c, status);
        return;
    case 3: /* am_zcopy */
        break;
    default: /* put_zcopy / get_zcopy */
        is_get = (kind % 6) == 5;
        local_buf(is_get ? rsel % 2 : rsel, off,
                  (kind & 0x80) ? l : ZCOPY_THRESH + l % (ZCOPY_THRESH + 1),
                  &r, &addr, &len);
        if ((len == 0) || (G.reg[r].memh == NULL) ||
            (addr < (uintptr_t)regions_mem[r] + G.reg[r].off) ||
            (addr + len > (uintptr_t)regions_mem[r] + G.reg[r].off +
                          G.reg[r].len) ||
            (is_get && region_busy(r))) {
            return;
        }
        c = comp_local(is_get ? OP_GET : OP_PUT, s, r, addr, len);
        if (c == NULL) {
            return;
        }
        c->raddr   = raddr;
        iov.buffer = (void*)(uintptr_t)addr;
        iov.length = len;
        iov.memh   = G.reg[r].memh;
        iov.stride = 0;
        iov.count  = 1;
        if (is_get) {
            status = uct_ep_get_zcopy(G.eps[s].ep, &iov, 1, raddr, 0x1234,
                                      &c->uc);
        } else {
            status = uct_ep_put_zcopy(G.eps[s].ep, &iov, 1, raddr, 0x1234,
                                      &c->uc);
        }
        TRACE("%s_zcopy ep %d region %d +%lu len %lu: %s", is_get ? "get" :
              "put", s, r, (unsigned long)(addr - (uintptr_t)regions_mem[r]),
              (unsigned long)len, ucs_status_string(status));
        comp_returned(c, status);
        return;
    }

    /* am_zcopy from a registered region */
    local_buf(rsel, off, l % (G.attr.cap.am.max_zcopy + 1), &r, &addr, &len);
    if ((G.reg[r].memh == NULL) ||
        (addr < (uintptr_t)regions_mem[r] + G.reg[r].off) ||
        (addr + len > (uintptr_t)regions_mem[r] + G.reg[r].off +
                      G.reg[r].len)) {
        return;
    }
    c = comp_local(OP_AM_ZCOPY, s, r, addr, len);
    if (c == NULL) {
        return;
    }
    iov.buffer = (void*)(uintptr_t)addr;
    iov.length = len;
    iov.memh   = G.reg[r].memh;
    iov.stride = 0;
    iov.count  = 1;
    status = uct_ep_am_zcopy(G.eps[s].ep, kind % 4, buf, kind % 9, &iov,
                             (len > 0) ? 1 : 0, 0, &c->uc);
    comp_returned(c, status);
}


void op_am(input_t *in)
{
    uint8_t kind = in8(in), id = in8(in) % 4;
    int s        = ep_slot(in8(in));
    uint16_t l   = in16(in);
    uint8_t buf[FV_MAX_PKT];
    size_t len;

    if (s < 0) {
        return;
    }
    memset(buf, kind, sizeof(buf));
    if (kind & 1) {
        len = l % (G.attr.cap.am.max_short + 1);
        if (len < 8) {
            return;
        }
        uct_ep_am_short(G.eps[s].ep, id, 0x1122334455667788ull, buf, len - 8);
    } else {
        len = l % (G.attr.cap.am.max_bcopy + 1);
        uct_ep_am_bcopy(G.eps[s].ep, id, pack_cb, &len, 0);
    }
}


void op_flush(input_t *in)
{
    uint8_t kind = in8(in);
    int s        = ep_slot(in8(in));
    ucs_status_t status;
    fz_comp_t *c;

    switch (kind % 5) {
    case 0:
    case 1:
        if (s < 0) {
            return;
        }
        c = comp_new(OP_FLUSH, s);
        status = uct_ep_flush(G.eps[s].ep,
                              (kind % 5) ? UCT_FLUSH_FLAG_CANCEL :
                                           UCT_FLUSH_FLAG_LOCAL,
                              (c != NULL) ? &c->uc : NULL);
        comp_returned(c, status);
        break;
    case 2:
        c = comp_new(OP_IFLUSH, -1);
        status = uct_iface_flush(G.iface, 0, (c != NULL) ? &c->uc : NULL);
        comp_returned(c, status);
        break;
    case 3:
        if (s >= 0) {
            uct_ep_fence(G.eps[s].ep, 0);
        }
        break;
    default:
        if (s >= 0) {
            uct_ep_check(G.eps[s].ep, 0, NULL);
        }
        break;
    }
}


static ucs_status_t pending_cb(uct_pending_req_t *req)
{
    fz_pending_t *p = ucs_container_of(req, fz_pending_t, req);
    ucs_status_t status;
    uint64_t hdr = 7;

    CHECK((p->ep >= 0) && (G.eps[p->ep].ep != NULL));
    status = uct_ep_am_short(G.eps[p->ep].ep, 1, hdr, NULL, 0);
    if (status == UCS_OK) {
        p->ep = -1;
    }
    return status;
}


void op_pending(uint8_t sel)
{
    int s = ep_slot(sel);
    unsigned i;

    if (s < 0) {
        return;
    }
    for (i = 0; i < MAX_PENDING; ++i) {
        if (G.pending[i].ep < 0) {
            G.pending[i].req.func = pending_cb;
            G.pending[i].ep       = s;
            if (uct_ep_pending_add(G.eps[s].ep, &G.pending[i].req, 0) !=
                UCS_OK) {
                G.pending[i].ep = -1; /* resources now: no need */
            }
            return;
        }
    }
}


void region_poison(int r, int on)
{
    if (on) {
        ASAN_POISON_MEMORY_REGION(regions_mem[r], REGION_SIZE);
    } else {
        ASAN_UNPOISON_MEMORY_REGION(regions_mem[r], REGION_SIZE);
    }
    G.reg[r].poisoned = on;
}


void op_mem(input_t *in)
{
    uint8_t sel = in8(in), how = in8(in);
    uint16_t off = in16(in), len = in16(in);
    int r = sel % NREGIONS;
    uct_md_mem_dereg_params_t params;
    uint8_t rkey_buf[64];
    uct_rkey_bundle_t bundle;
    fz_comp_t *c;
    unsigned flags;

    if (G.reg[r].memh != NULL) {
        if (region_busy(r)) {
            return;
        }
        /* the user deregisters, and may unmap the memory */
        params.field_mask = UCT_MD_MEM_DEREG_FIELD_MEMH |
                            UCT_MD_MEM_DEREG_FIELD_FLAGS |
                            UCT_MD_MEM_DEREG_FIELD_COMPLETION;
        params.memh       = G.reg[r].memh;
        params.flags      = 0;
        params.comp       = NULL;
        c = NULL;
        if ((how & 3) == 3) {
            c = comp_new(OP_DEREG, -1);
            if (c != NULL) {
                params.flags = UCT_MD_MEM_DEREG_FLAG_INVALIDATE;
                params.comp  = &c->uc;
            }
        }
        if (uct_md_mem_dereg_v2(G.md, &params) != UCS_OK) {
            if (c != NULL) {
                c->state = COMP_UNUSED;
            }
            params.flags = 0;
            params.comp  = NULL;
            CHECK(uct_md_mem_dereg_v2(G.md, &params) == UCS_OK);
        }
        G.reg[r].memh = NULL;
        if (how & 4) {
            region_poison(r, 1);
        }
        return;
    }

    if (G.reg[r].poisoned) {
        region_poison(r, 0);
        if (r < 2) {
            memcpy(shadow[r], regions_mem[r], REGION_SIZE);
        }
    }
    if (how & 8) {
        G.reg[r].off = off % (REGION_SIZE / 2);
        G.reg[r].len = 1 + len % (REGION_SIZE - G.reg[r].off);
    } else {
        G.reg[r].off = 0;
        G.reg[r].len = REGION_SIZE;
    }
    flags = region_access[r] | UCT_MD_MEM_ACCESS_LOCAL_READ |
            UCT_MD_MEM_ACCESS_LOCAL_WRITE;
    if (uct_md_mem_reg(G.md, regions_mem[r] + G.reg[r].off, G.reg[r].len,
                       flags, &G.reg[r].memh) != UCS_OK) {
        G.reg[r].memh = NULL;
        return;
    }
    CHECK(uct_md_mkey_pack(G.md, G.reg[r].memh, rkey_buf) == UCS_OK);
    CHECK(uct_rkey_unpack(G.component, rkey_buf, &bundle) == UCS_OK);
    G.reg[r].rkey = bundle.rkey;
    uct_rkey_release(G.component, &bundle);
}
