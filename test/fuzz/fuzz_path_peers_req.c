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


void peer_request(input_t *in)
{
    uint8_t k = in8(in) % NPEERS, c8 = in8(in), kind = in8(in), m = in8(in);
    int c = c8 % NCONNS;
    peer_t *p = &G.peers[k];
    pconn_t *pc = &p->conn[c];
    uint8_t pkt[FV_MAX_PKT];
    uct_srqud_rma_hdr_t rh;
    uct_srqud_zhdr_t zh;
    uct_srqud_back_ack_t back;
    uct_srqud_zrange_t *zr;
    uint64_t addr, len64;
    uint32_t rkey;
    uint16_t psn, l, off;
    uint8_t flags, am_id, sel;
    size_t len, i, n;
    int8_t dpsn;
    sconn_t *sc;

    if (!pc->creq_sent || ((kind & 0x1f) == 0)) {
        /* (re)connect: a CREQ, psn 0; a new incarnation now and then */
        if (pc->creq_sent && (kind & 0x20)) {
            ++pc->conn_sn;
            pc->token ^= 0x01010101u;
        }
        pc->creq_sent = 1;
        pc->next_psn  = 1;
        pc->srqud_id  = EP_ID_NONE;
        len = neth_fill(pkt, UCT_SRQUD_PACKET_FLAG_CTL |
                             UCT_SRQUD_PACKET_FLAG_REL |
                             UCT_SRQUD_PACKET_FLAG_ACK_REQ,
                        UCT_SRQUD_CTL_CREQ, 0, EP_ID_NONE, pc->my_id, 0, 0,
                        pc->token);
        memcpy(pkt + len, &pc->conn_sn, sizeof(pc->conn_sn));
        len += sizeof(pc->conn_sn);
        neth_mutate((uct_srqud_neth_t*)pkt, m);
        send_to_srqud(k, pkt, len);
        return;
    }

    /* psn: the next, or a little off (duplicates, gaps) */
    dpsn = (int8_t)in8(in);
    psn  = pc->next_psn;
    if ((dpsn & 0x70) == 0x70) {
        psn += dpsn % 8;
    } else {
        ++pc->next_psn;
    }
    flags = UCT_SRQUD_PACKET_FLAG_REL | ((c8 & 0x80) ?
                                         UCT_SRQUD_PACKET_FLAG_ACK_REQ : 0);
    sel   = in8(in);
    off   = in16(in);
    l     = in16(in);

    switch ((kind >> 5) & 7) {
    case 0: /* an AM, maybe with an ack of one of srqud's eps behind */
    case 1:
        am_id = in8(in);
        n     = in8(in) * 4;
        len = neth_fill(pkt, flags | UCT_SRQUD_PACKET_FLAG_AM, 0,
                        am_id % 6, pc->srqud_id, pc->my_id, psn, 0, pc->token);
        for (i = 0; (i < n) && (len < FV_MAX_PKT - sizeof(back)); ++i) {
            pkt[len++] = (uint8_t)(i * 7 + am_id);
        }
        if (kind & 0x10) {
            /* the peer's passive ep's ack, for srqud's active ep */
            sc = &G.sconn[sel % MAX_SCONN];
            back.ep_id = sc->ep_id;
            back.token = (sel & 0x80) ? sc->token ^ 1 : sc->token;
            back.psn   = sc->expected - 1 - (off % 4);
            if (sc->used && (sc->peer == k)) {
                pkt[1] |= UCT_SRQUD_PACKET_FLAG_BACK_ACK;
                memcpy(pkt + len, &back, sizeof(back));
                len += sizeof(back);
            }
        }
        break;
    case 2: /* RMA_PUT of a few bytes */
        rkey_pick(sel, &rkey, &addr, &len64, off, l % 600);
        rh.remote_addr = addr;
        rh.rkey        = rkey;
        rh.length      = len64;
        rh.op_id       = in8(in);
        rh.frag        = 0;
        len = neth_fill(pkt, flags | UCT_SRQUD_PACKET_FLAG_CTL,
                        UCT_SRQUD_CTL_RMA_PUT, 0, pc->srqud_id, pc->my_id, psn,
                        0, pc->token);
        memcpy(pkt + len, &rh, sizeof(rh));
        len += sizeof(rh);
        n = (rh.length < FV_MAX_PKT - len) ? rh.length : FV_MAX_PKT - len;
        if (kind & 0x10) {
            n = n / 2; /* shorter than it says */
        }
        for (i = 0; i < n; ++i) {
            pkt[len++] = pattern(addr + i, 77);
        }
        break;
    case 3: /* RMA_GET */
        rkey_pick(sel, &rkey, &addr, &len64, off, l % 1100);
        rh.remote_addr = addr;
        rh.rkey        = rkey;
        rh.length      = len64;
        rh.op_id       = in8(in);
        rh.frag        = in8(in);
        len = neth_fill(pkt, flags | UCT_SRQUD_PACKET_FLAG_CTL,
                        UCT_SRQUD_CTL_RMA_GET, 0, pc->srqud_id, pc->my_id, psn,
                        0, pc->token);
        memcpy(pkt + len, &rh, sizeof(rh));
        len += sizeof(rh);
        break;
    case 4: /* ZGET: srqud sends chunks to the peer's pool QP */
    case 5: /* ZPUT: srqud posts receives, answers ZCTS */
        rkey_pick(sel, &rkey, &addr, &len64, off, 0);
        memset(&zh, 0, sizeof(zh));
        if (!(l & 0x4000)) { /* else the last one's id again */
            ++pc->next_xfer;
        }
        zh.xfer_id     = pc->next_xfer + 1000 * c;
        zh.round       = 1;
        zh.qpn         = p->pool_qpn | ((uint32_t)(l & 0xf) << 24);
        zh.qkey        = p->pool_qkey;
        zh.rkey        = rkey;
        zh.remote_addr = addr;
        zh.length      = (kind & 0x10) ? ((uint32_t)l << 4) :
                                         1 + (l % (REGION_SIZE / 2));
        zh.chunk       = (l & 0x8000) ? (256u << (l & 3)) : CHUNK;
        len = neth_fill(pkt, flags | UCT_SRQUD_PACKET_FLAG_CTL,
                        ((kind >> 5) == 4) ? UCT_SRQUD_CTL_ZGET :
                                             UCT_SRQUD_CTL_ZPUT, 0,
                        pc->srqud_id, pc->my_id, psn, 0, pc->token);
        named_add(zh.remote_addr, zh.length, (kind >> 5) == 4);
        if ((kind >> 5) == 4) {
            zr = (uct_srqud_zrange_t*)(pkt + len + sizeof(zh));
            zh.num_ranges = 1 + (in8(in) % 4);
            for (i = 0; i < zh.num_ranges; ++i) {
                zr[i].start = in8(in) % 40;
                zr[i].count = 1 + in8(in) % 24;
            }
            memcpy(pkt + len, &zh, sizeof(zh));
            len += sizeof(zh) + zh.num_ranges * sizeof(*zr);
        } else {
            memcpy(pkt + len, &zh, sizeof(zh));
            len += sizeof(zh);
        }
        break;
    case 6: /* NOP, or ZFIN of a put out of the blue */
        len = neth_fill(pkt, flags | UCT_SRQUD_PACKET_FLAG_CTL,
                        (kind & 0x10) ? UCT_SRQUD_CTL_ZFIN : UCT_SRQUD_CTL_NOP,
                        0, pc->srqud_id, pc->my_id, psn, 0, pc->token);
        if (kind & 0x10) {
            memset(&zh, 0, sizeof(zh));
            zh.xfer_id = pc->next_xfer + 1000 * c;
            zh.round   = sel % 3;
            zh.count   = l;
            memcpy(pkt + len, &zh, sizeof(zh));
            len += sizeof(zh);
        }
        break;
    default: /* an ACK to srqud's passive ep that asks for one back */
        len = neth_fill(pkt, UCT_SRQUD_PACKET_FLAG_CTL |
                             UCT_SRQUD_PACKET_FLAG_ACK_REQ,
                        UCT_SRQUD_CTL_ACK, 0, pc->srqud_id, pc->my_id, 0, 0,
                        pc->token);
        --pc->next_psn;
        break;
    }
    neth_mutate((uct_srqud_neth_t*)pkt, m);
    send_to_srqud(k, pkt, len);
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
