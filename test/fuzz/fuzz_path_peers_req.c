/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * fuzz_path's fake peers (fuzz_path.h): their own requests to srqud,
 * and raw packets and chunks built from the input.
 */

#include "fuzz_path.h"


/* ------------------------------------------------------------------------
 * The peers' own requests to srqud (their active eps)
 */

static void rkey_pick(uint8_t sel, uint32_t *rkey, uint64_t *addr,
                      uint64_t *len, uint16_t off, uint16_t l)
{
    int r = sel % NREGIONS;

    if ((sel & 0xe0) == 0xe0) {
        /* a key nobody registered, or one off */
        ++G.lies;
        *rkey = (uint32_t)G.reg[r].rkey + 1 + (sel & 1);
    } else {
        *rkey = (uint32_t)G.reg[r].rkey;
    }
    *addr = (uintptr_t)regions_mem[r] + (off % REGION_SIZE);
    *len  = l;
    if ((sel & 0x18) == 0x18) {
        *addr += REGION_SIZE - (off % REGION_SIZE); /* just past it */
    }
}


/* One request of a peer's active ep, as it is built */
typedef struct {
    input_t  *in;
    uint8_t  k;          /* the peer */
    int      c;          /* its connection */
    uint8_t  c8, kind;   /* input bytes that choose */
    uint8_t  sel;        /* chooses a region, a key, an ep */
    uint16_t off, l;     /* an offset and a length, as the kind uses them */
    uint16_t psn;
    uint8_t  flags;
    peer_t   *p;
    pconn_t  *pc;
    uint8_t  pkt[FV_MAX_PKT];
    size_t   len;
} preq_t;


/* (re)connect: a CREQ, psn 0; a new incarnation now and then */
static void preq_connect(preq_t *r)
{
    pconn_t *pc = r->pc;

    if (pc->creq_sent && (r->kind & 0x20)) {
        ++pc->conn_sn;
        pc->token ^= 0x01010101u;
    }
    pc->creq_sent = 1;
    pc->next_psn  = 1;
    pc->srqud_id  = EP_ID_NONE;
    r->len = neth_fill(r->pkt, UCT_SRQUD_PACKET_FLAG_CTL |
                               UCT_SRQUD_PACKET_FLAG_REL |
                               UCT_SRQUD_PACKET_FLAG_ACK_REQ,
                       UCT_SRQUD_CTL_CREQ, 0, EP_ID_NONE, pc->my_id, 0, 0,
                       pc->token);
    memcpy(r->pkt + r->len, &pc->conn_sn, sizeof(pc->conn_sn));
    r->len += sizeof(pc->conn_sn);
}


/* The packet header of a request of @a flags and control opcode @a ctl */
static void preq_header(preq_t *r, uint8_t flags, uint8_t ctl, uint8_t am_id)
{
    r->len = neth_fill(r->pkt, r->flags | flags, ctl, am_id, r->pc->srqud_id,
                       r->pc->my_id, r->psn, 0, r->pc->token);
}


/* An AM, maybe with an ack of one of srqud's eps behind */
static void preq_am(preq_t *r)
{
    uint8_t am_id = in8(r->in);
    size_t n      = in8(r->in) * 4, i;
    uct_srqud_back_ack_t back;
    sconn_t *sc;

    preq_header(r, UCT_SRQUD_PACKET_FLAG_AM, 0, am_id % 6);
    for (i = 0; (i < n) && (r->len < FV_MAX_PKT - sizeof(back)); ++i) {
        r->pkt[r->len++] = (uint8_t)(i * 7 + am_id);
    }
    if (!(r->kind & 0x10)) {
        return;
    }
    /* the peer's passive ep's ack, for srqud's active ep */
    sc         = &G.sconn[r->sel % MAX_SCONN];
    back.ep_id = sc->ep_id;
    back.token = (r->sel & 0x80) ? sc->token ^ 1 : sc->token;
    back.psn   = sc->expected - 1 - (r->off % 4);
    if (sc->used && (sc->peer == r->k)) {
        r->pkt[1] |= UCT_SRQUD_PACKET_FLAG_BACK_ACK;
        memcpy(r->pkt + r->len, &back, sizeof(back));
        r->len += sizeof(back);
    }
}


/* RMA_PUT of a few bytes (RMA_GET: the request only) */
static void preq_rma(preq_t *r, uint8_t ctl)
{
    uct_srqud_rma_hdr_t rh;
    uint64_t addr, len64;
    uint32_t rkey;
    size_t n, i;

    rkey_pick(r->sel, &rkey, &addr, &len64, r->off,
              r->l % ((ctl == UCT_SRQUD_CTL_RMA_PUT) ? 600 : 1100));
    rh.remote_addr = addr;
    rh.rkey        = rkey;
    rh.length      = len64;
    rh.op_id       = in8(r->in);
    rh.frag        = (ctl == UCT_SRQUD_CTL_RMA_PUT) ? 0 : in8(r->in);
    preq_header(r, UCT_SRQUD_PACKET_FLAG_CTL, ctl, 0);
    memcpy(r->pkt + r->len, &rh, sizeof(rh));
    r->len += sizeof(rh);
    if (ctl != UCT_SRQUD_CTL_RMA_PUT) {
        return;
    }
    n = (rh.length < FV_MAX_PKT - r->len) ? rh.length : FV_MAX_PKT - r->len;
    if (r->kind & 0x10) {
        n = n / 2; /* shorter than it says */
    }
    for (i = 0; i < n; ++i) {
        r->pkt[r->len++] = pattern(addr + i, 77);
    }
}


/* ZGET (srqud sends chunks to the peer's pool QP) or ZPUT (srqud posts
 * receives, answers ZCTS) */
static void preq_zcopy(preq_t *r, int get)
{
    uct_srqud_zrange_t *zr;
    uct_srqud_zhdr_t zh;
    uint64_t addr, len64;
    uint32_t rkey;
    size_t i;

    rkey_pick(r->sel, &rkey, &addr, &len64, r->off, 0);
    memset(&zh, 0, sizeof(zh));
    if (!(r->l & 0x4000)) { /* else the last one's id again */
        ++r->pc->next_xfer;
    }
    zh.xfer_id     = r->pc->next_xfer + 1000 * r->c;
    zh.round       = 1;
    zh.qpn         = r->p->pool_qpn | ((uint32_t)(r->l & 0xf) << 24);
    zh.qkey        = r->p->pool_qkey;
    zh.rkey        = rkey;
    zh.remote_addr = addr;
    zh.length      = (r->kind & 0x10) ? ((uint32_t)r->l << 4) :
                                        1 + (r->l % (REGION_SIZE / 2));
    zh.chunk       = (r->l & 0x8000) ? (256u << (r->l & 3)) : CHUNK;
    preq_header(r, UCT_SRQUD_PACKET_FLAG_CTL,
                get ? UCT_SRQUD_CTL_ZGET : UCT_SRQUD_CTL_ZPUT, 0);
    named_add(zh.remote_addr, zh.length, get);
    if (get) {
        zr            = (uct_srqud_zrange_t*)(r->pkt + r->len + sizeof(zh));
        zh.num_ranges = 1 + (in8(r->in) % 4);
        for (i = 0; i < zh.num_ranges; ++i) {
            zr[i].start = in8(r->in) % 40;
            zr[i].count = 1 + in8(r->in) % 24;
        }
    }
    memcpy(r->pkt + r->len, &zh, sizeof(zh));
    r->len += sizeof(zh) + zh.num_ranges * sizeof(uct_srqud_zrange_t);
}


/* NOP, or ZFIN of a put out of the blue */
static void preq_nop_or_zfin(preq_t *r)
{
    uct_srqud_zhdr_t zh;

    preq_header(r, UCT_SRQUD_PACKET_FLAG_CTL,
                (r->kind & 0x10) ? UCT_SRQUD_CTL_ZFIN : UCT_SRQUD_CTL_NOP, 0);
    if (r->kind & 0x10) {
        memset(&zh, 0, sizeof(zh));
        zh.xfer_id = r->pc->next_xfer + 1000 * r->c;
        zh.round   = r->sel % 3;
        zh.count   = r->l;
        memcpy(r->pkt + r->len, &zh, sizeof(zh));
        r->len += sizeof(zh);
    }
}


/* An ACK to srqud's passive ep that asks for one back (no psn of its own) */
static void preq_ack(preq_t *r)
{
    r->len = neth_fill(r->pkt, UCT_SRQUD_PACKET_FLAG_CTL |
                               UCT_SRQUD_PACKET_FLAG_ACK_REQ,
                       UCT_SRQUD_CTL_ACK, 0, r->pc->srqud_id, r->pc->my_id, 0,
                       0, r->pc->token);
    --r->pc->next_psn;
}


void peer_request(input_t *in)
{
    preq_t r;
    uint8_t m;
    int8_t dpsn;

    r.in   = in;
    r.k    = in8(in) % NPEERS;
    r.c8   = in8(in);
    r.kind = in8(in);
    m      = in8(in);
    r.c    = r.c8 % NCONNS;
    r.p    = &G.peers[r.k];
    r.pc   = &r.p->conn[r.c];

    if (!r.pc->creq_sent || ((r.kind & 0x1f) == 0)) {
        preq_connect(&r);
        neth_mutate((uct_srqud_neth_t*)r.pkt, m);
        send_to_srqud(r.k, r.pkt, r.len);
        return;
    }

    /* psn: the next, or a little off (duplicates, gaps) */
    dpsn  = (int8_t)in8(in);
    r.psn = r.pc->next_psn;
    if ((dpsn & 0x70) == 0x70) {
        r.psn += dpsn % 8;
    } else {
        ++r.pc->next_psn;
    }
    r.flags = UCT_SRQUD_PACKET_FLAG_REL |
              ((r.c8 & 0x80) ? UCT_SRQUD_PACKET_FLAG_ACK_REQ : 0);
    r.sel   = in8(in);
    r.off   = in16(in);
    r.l     = in16(in);

    switch ((r.kind >> 5) & 7) {
    case 0:
    case 1:
        preq_am(&r);
        break;
    case 2:
        preq_rma(&r, UCT_SRQUD_CTL_RMA_PUT);
        break;
    case 3:
        preq_rma(&r, UCT_SRQUD_CTL_RMA_GET);
        break;
    case 4:
    case 5:
        preq_zcopy(&r, ((r.kind >> 5) & 7) == 4);
        break;
    case 6:
        preq_nop_or_zfin(&r);
        break;
    default:
        preq_ack(&r);
        break;
    }
    neth_mutate((uct_srqud_neth_t*)r.pkt, m);
    send_to_srqud(r.k, r.pkt, r.len);
}


/* A packet built from the input with every field a choice, biased toward
 * what srqud would accept */
void raw_packet(input_t *in)
{
    uint8_t pkt[FV_MAX_PKT];
    uct_srqud_neth_t *n = (uct_srqud_neth_t*)pkt;
    uint8_t k = in8(in) % NPEERS, f = in8(in), sel = in8(in), g = in8(in);
    uint16_t len = in16(in);
    sconn_t *sc  = &G.sconn[sel % MAX_SCONN];
    pconn_t *pc  = &G.peers[k].conn[sel % NCONNS];
    uint8_t src_gid[16];
    uint32_t src_qpn;
    size_t i;

    ++G.lies;
    memset(pkt, 0, sizeof(pkt));
    n->magic = ((f & 0x1f) == 0) ? in8(in) : UCT_SRQUD_MAGIC;
    n->flags = in8(in) & (((f & 0xe0) == 0xe0) ? 0xff :
                          UCT_SRQUD_PACKET_FLAGS_ALL);
    n->am_id = in8(in) % (((f & 0x60) == 0x60) ? 256 : 8);
    n->ctl   = in8(in) % (((f & 0x18) == 0x18) ? 256 : UCT_SRQUD_CTL_LAST);
    if (sel & 0x80) {
        /* as one of srqud's connections' peers would answer */
        n->dest_ep_id = sc->ep_id;
        n->src_ep_id  = sc->my_id;
        n->token      = sc->token;
        n->psn        = in8(in);
        n->ack_psn    = sc->expected - 1 + (int8_t)in8(in) / 16;
    } else {
        n->dest_ep_id = (sel & 0x40) ? pc->srqud_id : EP_ID_NONE;
        n->src_ep_id  = pc->my_id;
        n->token      = pc->token;
        n->psn        = pc->next_psn + (int8_t)in8(in) / 16;
        n->ack_psn    = in16(in);
    }
    if ((g & 7) == 7) {
        n->token ^= in32(in);
    }
    if ((g & 0x38) == 0x38) {
        n->dest_ep_id = in32(in) & 0xffffff;
    }

    len = sizeof(*n) + len % (FV_MAX_PKT - sizeof(*n) + 1);
    for (i = sizeof(*n); i < len; ++i) {
        pkt[i] = in8(in);
    }

    memcpy(src_gid, G.peers[k].gid, 16);
    src_qpn = G.peers[k].qpn;
    if ((g & 0xc0) == 0xc0) {
        src_qpn += 1 + (g & 1);   /* another QP of that host */
    } else if ((g & 0xc0) == 0x80) {
        src_gid[15] ^= 0x40;      /* another host */
    }
    fv_deliver(G.qpn, src_gid, src_qpn, UCT_SRQUD_QKEY, 0, 0,
               ((f & 0x3) == 0x3) ? 1 + (g & 1) : 0, pkt, len);
}


/* A chunk to one of srqud's pool QPs with receives posted, with the
 * QP's Q_Key (a host on the path sees it) and an immediate, length and
 * bytes of the input's choice */
void raw_chunk(input_t *in)
{
    uint8_t k = in8(in) % NPEERS, sel = in8(in), tag = in8(in), c = in8(in);
    uint16_t len = in16(in);
    uint8_t data[FV_MAX_PKT];
    uint32_t qpns[8], qkey;
    unsigned n;
    size_t i;

    n = fv_recv_qps(qpns, 8);
    if ((n == 0) || !fv_qp_exists(qpns[sel % n], &qkey)) {
        return;
    }
    ++G.lies;
    len %= FV_MAX_PKT + 1;
    for (i = 0; i < len; ++i) {
        data[i] = (uint8_t)(i ^ c);
    }
    fv_deliver(qpns[sel % n], G.peers[k].gid, G.peers[k].chunk_qpn,
               (sel & 0x80) ? qkey ^ 1 : qkey, !(sel & 0x40),
               ((uint32_t)(tag % 8) << 24) | (c % 72), 0, data, len);
}
