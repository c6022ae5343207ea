/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * fuzz_path's fake peers (fuzz_path.h): the packets they build, and
 * their view of, and answers to, what srqud sends them.
 */

#include "fuzz_path.h"


/* ------------------------------------------------------------------------
 * Building packets
 */

static const char *ctl_name(const uct_srqud_neth_t *n)
{
    static const char *names[] = {"NONE", "CREQ", "CREP", "NACK", "ACK",
                                  "NOP", "RMA_PUT", "RMA_GET", "RMA_REPLY",
                                  "ZGET", "ZPUT", "ZCTS", "ZFIN", "ZACK",
                                  "RMA_REFUSE", "RMA_SEEN"};

    if (!(n->flags & UCT_SRQUD_PACKET_FLAG_CTL)) {
        return "AM";
    }
    return (n->ctl < UCT_SRQUD_CTL_LAST) ? names[n->ctl] : "?";
}


/* Corrupt one field now and then (1 in 16), as a confused or hostile
 * peer would; counted as a lie */
void neth_mutate(uct_srqud_neth_t *n, uint8_t m)
{
    if ((m & 0xf0) != 0xf0) {
        return;
    }
    ++G.lies;
    switch (m & 7) {
    case 0: n->magic      ^= 1; break;
    case 1: n->flags      ^= 1 << ((m >> 3) & 1 ? 5 : 2); break;
    case 2: n->token      ^= 1; break;
    case 3: n->dest_ep_id ^= 1; break;
    case 4: n->psn        += 1 + ((m >> 3) & 1) * 200; break;
    case 5: n->ack_psn    -= 3; break;
    case 6: n->src_ep_id  ^= 2; break;
    default:
        /* or: the message goes on in the next packet (a chain that the
         * peer may never end, of several AM ids, too long) */
        if (m & 8) {
            n->flags ^= UCT_SRQUD_PACKET_FLAG_MORE;
        } else {
            n->ack_psn += 7;
        }
        break;
    }
}


size_t neth_fill(uint8_t *pkt, uint8_t flags, uint8_t ctl,
                 uint8_t am_id, uint32_t dest, uint32_t src,
                 uint16_t psn, uint16_t ack_psn, uint32_t token)
{
    uct_srqud_neth_t *n = (uct_srqud_neth_t*)pkt;

    n->magic      = UCT_SRQUD_MAGIC;
    n->flags      = flags;
    n->am_id      = am_id;
    n->ctl        = ctl;
    n->dest_ep_id = dest;
    n->src_ep_id  = src;
    n->psn        = psn;
    n->ack_psn    = ack_psn;
    n->token      = token;
    return sizeof(*n);
}


/* From peer @a k's interface QP to srqud's */
void send_to_srqud(int k, const uint8_t *pkt, size_t len)
{
    const uct_srqud_neth_t *n = (const void*)pkt;

    TRACE("peer %d -> srqud: %s flags 0x%x dest %u src %u psn %u ack %u "
          "len %zu", k, ctl_name(n), n->flags, n->dest_ep_id, n->src_ep_id,
          n->psn, n->ack_psn, len);
    fv_deliver(G.qpn, G.peers[k].gid, G.peers[k].qpn, UCT_SRQUD_QKEY, 0, 0, 0,
               pkt, len);
}


/* ------------------------------------------------------------------------
 * The peers' view of srqud's sends
 */

static sconn_t *sconn_find(int k, uint32_t ep_id, uint32_t token)
{
    unsigned i;

    for (i = 0; i < MAX_SCONN; ++i) {
        if (G.sconn[i].used && (G.sconn[i].peer == k) &&
            (G.sconn[i].ep_id == ep_id) && (G.sconn[i].token == token)) {
            return &G.sconn[i];
        }
    }
    return NULL;
}


static sconn_t *sconn_add(int k, uint32_t ep_id, uint32_t token,
                          uint32_t conn_sn)
{
    static unsigned next;
    sconn_t *sc = NULL;
    unsigned i;

    for (i = 0; i < MAX_SCONN; ++i) {
        if (!G.sconn[i].used) {
            sc = &G.sconn[i];
            break;
        }
    }
    if (sc == NULL) {
        sc = &G.sconn[next++ % MAX_SCONN]; /* the oldest goes */
    }
    memset(sc, 0, sizeof(*sc));
    sc->used    = 1;
    sc->peer    = k;
    sc->ep_id   = ep_id;
    sc->token   = token;
    sc->conn_sn = conn_sn;
    sc->my_id   = 100 + (unsigned)(sc - G.sconn);
    sc->expected = 0;
    return sc;
}


static int peer_of_send(const fv_send_t *s)
{
    int k;

    for (k = 0; k < NPEERS; ++k) {
        if (!memcmp(s->dgid, G.peers[k].gid, 16)) {
            return k;
        }
    }
    return -1;
}


/* An answer from the peer's passive side of @a sc to srqud's active ep */
static void sc_answer(sconn_t *sc, uint8_t ctl, const void *hdr, size_t hlen,
                      const void *data, size_t dlen, uint8_t m)
{
    uint8_t pkt[FV_MAX_PKT];
    size_t len;

    len = neth_fill(pkt, UCT_SRQUD_PACKET_FLAG_CTL | UCT_SRQUD_PACKET_FLAG_ACK,
                    ctl, 0, sc->ep_id, sc->my_id, 0,
                    (uint16_t)(sc->expected - 1), sc->token);
    if (len + hlen + dlen > sizeof(pkt)) {
        return;
    }
    if (hlen > 0) {
        memcpy(pkt + len, hdr, hlen);
        len += hlen;
    }
    if (dlen > 0) {
        memcpy(pkt + len, data, dlen);
        len += dlen;
    }
    neth_mutate((uct_srqud_neth_t*)pkt, m);
    send_to_srqud(sc->peer, pkt, len);
}


/* The acknowledgement of @a sc's receiver, with its SACK when it holds */
static void sc_ack(sconn_t *sc, uint8_t m)
{
    int held = sc->held[0] | sc->held[1] | sc->held[2] | sc->held[3];

    sc_answer(sc, held ? UCT_SRQUD_CTL_NACK : UCT_SRQUD_CTL_ACK, sc->held,
              held ? sizeof(sc->held) : 0, NULL, 0, m);
}


/* A round of chunks for srqud's pool QP */
static job_t *job_new(int k, int is_put, int sc, const uct_srqud_zhdr_t *hdr,
                      const uct_srqud_zrange_t *ranges, size_t nranges_room,
                      uint64_t base, uint64_t length, uint32_t salt)
{
    static unsigned next;
    job_t *j = NULL;
    unsigned i, r, c;

    for (i = 0; i < MAX_JOBS; ++i) {
        if (!G.jobs[i].used) {
            j = &G.jobs[i];
            break;
        }
    }
    if (j == NULL) {
        j = &G.jobs[next++ % MAX_JOBS];
    }
    memset(j, 0, sizeof(*j));
    j->used     = 1;
    j->peer     = k;
    j->is_put   = is_put;
    j->sc       = sc;
    j->xfer_id  = hdr->xfer_id;
    j->round    = hdr->round;
    j->dest_qpn = hdr->qpn & 0xffffff;
    j->tag      = hdr->qpn >> 24;
    j->qkey     = hdr->qkey;
    j->base     = base;
    j->length   = length;
    j->chunk    = hdr->chunk;
    j->salt     = salt;
    if ((j->chunk == 0) || (j->chunk > FV_MAX_PKT)) {
        j->used = 0;
        return NULL;
    }
    for (r = 0; (r < hdr->num_ranges) && (r < nranges_room); ++r) {
        for (c = 0; c < ranges[r].count; ++c) {
            if (j->count == ucs_static_array_size(j->list)) {
                break;
            }
            j->list[j->count++] = ranges[r].start + c;
        }
    }
    return j;
}


/* Chunks of job @a j: @a n of them, honest unless @a m says otherwise;
 * the last one is followed by the ZFIN */
void job_send(job_t *j, unsigned n, uint8_t m)
{
    uint8_t data[FV_MAX_PKT], pkt[FV_MAX_PKT];
    uct_srqud_zhdr_t fin;
    peer_t *p = &G.peers[j->peer];
    uint32_t c, imm, len, i;
    unsigned mut;
    uint64_t off;
    pconn_t *pc;
    sconn_t *sc;
    size_t plen;

    for (; (n > 0) && (j->pos < j->count); --n) {
        mut = (m >> 4) & 7;
        if (m != 0) {
            m = (uint8_t)(m * 37 + 11);
        }
        if ((mut == 5) && (j->pos + 1 < j->count)) {
            /* the wire swaps this one and the next */
            c                   = j->list[j->pos];
            j->list[j->pos]     = j->list[j->pos + 1];
            j->list[j->pos + 1] = c;
        }
        c   = j->list[j->pos++];
        off = (uint64_t)c * j->chunk;
        len = (off < j->length) ? ucs_min(j->chunk, j->length - off) : 0;
        for (i = 0; i < len; ++i) {
            data[i] = pattern(j->base + off + i, j->salt);
        }
        imm = ((uint32_t)j->tag << 24) | c;
        switch (mut) {
        case 1: /* lost */
            TRACE("peer %d chunk %u lost", j->peer, c);
            continue;
        case 2: /* sent twice */
            fv_deliver(j->dest_qpn, p->gid, p->chunk_qpn, j->qkey, 1, imm, 0,
                       data, len);
            break;
        case 3: /* a stale generation */
            imm ^= 1u << 24;
            break;
        case 4: /* short */
            ++G.lies;
            len /= 2;
            break;
        }
        TRACE("peer %d chunk %u (imm 0x%x) -> qp 0x%x: %s", j->peer, c, imm,
              j->dest_qpn,
              fv_deliver(j->dest_qpn, p->gid, p->chunk_qpn, j->qkey, 1, imm,
                         0, data, len) ? "dropped" : "delivered");
    }
    if (j->pos < j->count) {
        return;
    }

    /* the round is out: ZFIN */
    memset(&fin, 0, sizeof(fin));
    fin.xfer_id = j->xfer_id;
    fin.round   = j->round;
    fin.status  = UCS_OK;
    fin.count   = j->count;
    if (j->is_put) {
        pc   = &p->conn[j->sc];
        plen = neth_fill(pkt, UCT_SRQUD_PACKET_FLAG_CTL |
                              UCT_SRQUD_PACKET_FLAG_REL, UCT_SRQUD_CTL_ZFIN,
                         0, pc->srqud_id, pc->my_id, pc->next_psn++, 0,
                         pc->token);
        memcpy(pkt + plen, &fin, sizeof(fin));
        send_to_srqud(j->peer, pkt, plen + sizeof(fin));
    } else if (G.sconn[j->sc].used) {
        sc = &G.sconn[j->sc];
        sc_answer(sc, UCT_SRQUD_CTL_ZFIN, &fin, sizeof(fin), NULL, 0, 0);
    }
    j->used = 0;
}


static sink_t *sink_find(int k, uint32_t xfer_id)
{
    unsigned i;

    for (i = 0; i < MAX_SINKS; ++i) {
        if (G.sinks[i].used && (G.sinks[i].peer == k) &&
            (G.sinks[i].xfer_id == xfer_id)) {
            return &G.sinks[i];
        }
    }
    return NULL;
}


/* ZCTS for the chunks of @a s not yet received, at most @a window */
static void sink_cts(sconn_t *sc, sink_t *s, unsigned window, uint8_t m)
{
    uint8_t buf[sizeof(uct_srqud_zhdr_t) + 64 * sizeof(uct_srqud_zrange_t)];
    uct_srqud_zhdr_t *hdr = (void*)buf;
    uct_srqud_zrange_t *r = (void*)(hdr + 1);
    uint32_t n, c, nr = 0, asked = 0;

    n = (s->length + s->chunk - 1) / s->chunk;
    memset(hdr, 0, sizeof(*hdr));
    hdr->xfer_id = s->xfer_id;
    hdr->round   = ++s->round;
    hdr->status  = UCS_OK;
    hdr->qpn     = G.peers[s->peer].pool_qpn | (s->tag << 24);
    hdr->qkey    = G.peers[s->peer].pool_qkey;
    hdr->length  = s->length;
    hdr->chunk   = s->chunk;
    for (c = 0; (c < n) && (c < MAX_CHUNKS) && (asked < window); ++c) {
        if (s->got[c / 64] & (1ull << (c % 64))) {
            continue;
        }
        if ((nr > 0) && (r[nr - 1].start + r[nr - 1].count == c)) {
            ++r[nr - 1].count;
        } else if (nr < 64) {
            r[nr].start   = c;
            r[nr++].count = 1;
        } else {
            break;
        }
        ++asked;
    }
    hdr->num_ranges = nr;
    switch ((m >> 4) & 3) {
    case 1: /* a chunk past the end, or the wrong length */
        ++G.lies;
        if (m & 8) {
            hdr->length += CHUNK;
        } else if (nr > 0) {
            r[nr - 1].count += 1 + (m & 3);
        }
        break;
    case 2: /* a smaller chunk than offered */
        if (m & 8) {
            hdr->chunk = 512;
        }
        break;
    }
    sc_answer(sc, UCT_SRQUD_CTL_ZCTS, buf, sizeof(*hdr) + nr * sizeof(*r),
              NULL, 0, m);
}


/* A zero-copy status answer (ZFIN, ZCTS, ZACK) of transfer @a xfer_id */
static void sc_zstatus(sconn_t *sc, uint8_t ctl, uint32_t xfer_id,
                       uint16_t round, ucs_status_t status, uint8_t m)
{
    uct_srqud_zhdr_t zack;

    memset(&zack, 0, sizeof(zack));
    zack.xfer_id = xfer_id;
    zack.round   = round;
    zack.status  = status;
    sc_answer(sc, ctl, &zack, sizeof(zack), NULL, 0, m);
}


/* A put: acknowledged, or (m2) refused with a status srqud sent or not */
static void sc_on_rma_put(sconn_t *sc, const uct_srqud_neth_t *n,
                          const void *payload, size_t plen, uint8_t m,
                          uint8_t m2)
{
    const uct_srqud_rma_hdr_t *rh = payload;
    uct_srqud_rma_refusal_t refusal;

    if ((m2 & 3) != 3) {
        return;
    }
    /* refused: the refusal carries the acknowledgement */
    refusal.op_id     = (plen >= sizeof(*rh)) ? rh->op_id : 0;
    refusal.id        = ++G.peers[sc->peer].refusal_ids;
    refusal.first_psn = n->psn;
    refusal.last_psn  = n->psn;
    refusal.status    = (m2 & 4) ? UCS_ERR_INVALID_ADDR : -77;
    sc_answer(sc, UCT_SRQUD_CTL_RMA_REFUSE, &refusal, sizeof(refusal), NULL,
              0, m);
}


/* A get over the copy path: the pattern of the peer's memory, or refused */
static void sc_on_rma_get(sconn_t *sc, const void *payload, size_t plen,
                          uint8_t m, uint8_t m2)
{
    const uct_srqud_rma_hdr_t *rh = payload;
    uct_srqud_rma_reply_t reply;
    uint8_t data[FV_MAX_PKT];
    uint32_t i;

    if (plen < sizeof(*rh)) {
        return;
    }
    reply.op_id  = rh->op_id;
    reply.frag   = rh->frag;
    reply.status = ((m2 & 7) == 7) ? UCS_ERR_INVALID_ADDR : UCS_OK;
    if (reply.status != UCS_OK) {
        sc_answer(sc, UCT_SRQUD_CTL_RMA_REPLY, &reply, sizeof(reply), NULL, 0,
                  m);
        return;
    }
    for (i = 0; (i < rh->length) && (i < sizeof(data)); ++i) {
        data[i] = pattern(rh->remote_addr + i, 0);
    }
    sc_answer(sc, UCT_SRQUD_CTL_RMA_REPLY, &reply, sizeof(reply), data,
              ucs_min(rh->length, sizeof(data)), m);
}


/* A zero-copy get: the peer sends the chunks it was asked for, or is busy */
static void sc_on_zget(sconn_t *sc, const uct_srqud_zhdr_t *zh, size_t plen,
                       uint8_t m, uint8_t m2)
{
    job_t *j;

    if ((m2 & 7) == 7) {
        /* busy: the get takes the copy path */
        sc_zstatus(sc, UCT_SRQUD_CTL_ZFIN, zh->xfer_id, zh->round,
                   (m2 & 8) ? UCS_ERR_BUSY : UCS_ERR_INVALID_ADDR, m);
        return;
    }
    j = job_new(sc->peer, 0, (int)(sc - G.sconn), zh, (const void*)(zh + 1),
                (plen - sizeof(*zh)) / sizeof(uct_srqud_zrange_t),
                zh->remote_addr, zh->length, 0);
    if (j != NULL) {
        job_send(j, m2 >> 3, m);
    }
}


/* The sink of the put @a zh: its own, a free one, or one taken over */
static sink_t *sc_sink_claim(sconn_t *sc, const uct_srqud_zhdr_t *zh,
                             uint8_t m2)
{
    sink_t *sink = sink_find(sc->peer, zh->xfer_id);
    uint32_t i;

    if (sink != NULL) {
        return sink;
    }
    for (i = 0; (i < MAX_SINKS) && (sink == NULL); ++i) {
        if (!G.sinks[i].used) {
            sink = &G.sinks[i];
        }
    }
    if (sink == NULL) {
        sink = &G.sinks[m2 % MAX_SINKS];
    }
    memset(sink, 0, sizeof(*sink));
    sink->used    = 1;
    sink->peer    = sc->peer;
    sink->sc      = (int)(sc - G.sconn);
    sink->xfer_id = zh->xfer_id;
    sink->length  = zh->length;
    sink->chunk   = ucs_max(ucs_min(zh->chunk, CHUNK), 256);
    sink->tag     = m2 & 0xf;
    return sink;
}


/* A zero-copy put: the peer's sink offers chunks (ZCTS), is busy, or (m2)
 * answers BUSY while the round it offered is sending */
static void sc_on_zput(sconn_t *sc, const uct_srqud_zhdr_t *zh, uint8_t m,
                       uint8_t m2)
{
    sink_t *sink = sc_sink_claim(sc, zh, m2);

    if ((m2 & 7) == 6) {
        /* no pool QP here: the copy path */
        sc_zstatus(sc, UCT_SRQUD_CTL_ZCTS, zh->xfer_id, 0, UCS_ERR_BUSY, m);
        sink->used = 0;
        return;
    }
    sink->round = 0;
    sink_cts(sc, sink, 8 + (m2 >> 3) * 8, m);
    if ((m2 & 7) == 4) {
        sc_zstatus(sc, UCT_SRQUD_CTL_ZCTS, zh->xfer_id, (m2 & 0x40) ? 2 : 0,
                   UCS_ERR_BUSY, m);
    }
}


/* The end of a put's round: acknowledged when every chunk landed (or
 * failed, m2), else the missing chunks are offered again */
static void sc_on_zfin(sconn_t *sc, const uct_srqud_zhdr_t *zh, uint8_t m,
                       uint8_t m2)
{
    sink_t *sink = sink_find(sc->peer, zh->xfer_id);
    uint32_t nchunks, c;

    if (sink == NULL) {
        return;
    }
    nchunks = (sink->length + sink->chunk - 1) / sink->chunk;
    for (c = 0; (c < nchunks) && (c < MAX_CHUNKS); ++c) {
        if (!(sink->got[c / 64] & (1ull << (c % 64)))) {
            break;
        }
    }
    if ((c == nchunks) || ((m2 & 7) == 5)) {
        sc_zstatus(sc, UCT_SRQUD_CTL_ZACK, zh->xfer_id, zh->round,
                   ((m2 & 7) == 5) ? UCS_ERR_IO_ERROR : UCS_OK, m);
        sink->used = 0;
    } else {
        sink_cts(sc, sink, 8 + (m2 >> 3) * 8, m);
    }
}


/* What srqud's active ep asked, in order: the peer acts on it */
static void sc_request(sconn_t *sc, const fv_send_t *s, uint8_t m, uint8_t m2)
{
    const uct_srqud_neth_t *n = (const void*)s->data;
    const void *payload        = n + 1;
    size_t plen                = s->len - sizeof(*n);
    const uct_srqud_zhdr_t *zh = payload;
    int zcopy;

    if (!(n->flags & UCT_SRQUD_PACKET_FLAG_CTL)) {
        return; /* an AM: acknowledged, nothing more */
    }

    zcopy = (n->ctl >= UCT_SRQUD_CTL_ZGET) && (n->ctl <= UCT_SRQUD_CTL_ZACK);
    if (zcopy && (plen < sizeof(*zh))) {
        return;
    }
    if (zcopy) {
        TRACE("  zhdr: xfer %u round %u status %d ranges %u qpn 0x%x addr "
              "0x%lx length %lu chunk %u count %u", zh->xfer_id, zh->round,
              zh->status, zh->num_ranges, zh->qpn,
              (unsigned long)zh->remote_addr, (unsigned long)zh->length,
              zh->chunk, zh->count);
    }

    switch (n->ctl) {
    case UCT_SRQUD_CTL_RMA_PUT:
        sc_on_rma_put(sc, n, payload, plen, m, m2);
        break;
    case UCT_SRQUD_CTL_RMA_GET:
        sc_on_rma_get(sc, payload, plen, m, m2);
        break;
    case UCT_SRQUD_CTL_ZGET:
        sc_on_zget(sc, zh, plen, m, m2);
        break;
    case UCT_SRQUD_CTL_ZPUT:
        sc_on_zput(sc, zh, m, m2);
        break;
    case UCT_SRQUD_CTL_ZFIN:
        sc_on_zfin(sc, zh, m, m2);
        break;
    default:
        break;
    }
}


/* Peer @a k receives srqud's packet @a s (from its interface QP) */
void peer_receive(int k, const fv_send_t *s, uint8_t m, uint8_t m2)
{
    const uct_srqud_neth_t *n = (const void*)s->data;
    const void *payload        = n + 1;
    size_t plen;
    peer_t *p = &G.peers[k];
    uint8_t pkt[FV_MAX_PKT];
    const uct_srqud_zhdr_t *zh;
    const uct_srqud_rma_refusal_t *ref;
    uct_srqud_rma_seen_t seen;
    uint32_t conn_sn, b;
    sconn_t *sc;
    pconn_t *pc;
    size_t len;
    job_t *j;
    int c, accepted;
    uint16_t psn;

    if (s->len < sizeof(*n)) {
        return;
    }
    plen = s->len - sizeof(*n);
    TRACE("srqud -> peer %d: %s flags 0x%x dest %u src %u psn %u ack %u "
          "len %u", k, ctl_name(n), n->flags, n->dest_ep_id, n->src_ep_id,
          n->psn, n->ack_psn, s->len);

    /* an answer to one of the peer's own connections */
    for (c = 0; c < NCONNS; ++c) {
        pc = &p->conn[c];
        if (!pc->creq_sent || (n->dest_ep_id != pc->my_id) ||
            (n->token != pc->token)) {
            continue;
        }
        if (!(n->flags & UCT_SRQUD_PACKET_FLAG_CTL)) {
            return;
        }
        switch (n->ctl) {
        case UCT_SRQUD_CTL_CREP:
            pc->srqud_id = n->src_ep_id;
            break;
        case UCT_SRQUD_CTL_ZCTS:
            if (plen < sizeof(*zh)) {
                break;
            }
            zh = payload;
            TRACE("  zcts: xfer %u round %u status %d ranges %u qpn 0x%x "
                  "length %lu chunk %u", zh->xfer_id, zh->round, zh->status,
                  zh->num_ranges, zh->qpn, (unsigned long)zh->length,
                  zh->chunk);
            if (zh->status != UCS_OK) {
                break;
            }
            j = job_new(k, 1, c, zh, (const void*)(zh + 1),
                        (plen - sizeof(*zh)) / sizeof(uct_srqud_zrange_t),
                        /* the peer's source: salted by its transfer */
                        0, zh->length, zh->xfer_id);
            if (j != NULL) {
                job_send(j, m2 >> 2, m);
            }
            break;
        case UCT_SRQUD_CTL_RMA_REFUSE:
            if (plen < sizeof(*ref)) {
                break;
            }
            ref     = payload;
            seen.id = ref->id;
            len = neth_fill(pkt, UCT_SRQUD_PACKET_FLAG_CTL,
                            UCT_SRQUD_CTL_RMA_SEEN, 0, pc->srqud_id,
                            pc->my_id, 0, 0, pc->token);
            memcpy(pkt + len, &seen, sizeof(seen));
            neth_mutate((uct_srqud_neth_t*)pkt, m);
            send_to_srqud(k, pkt, len + sizeof(seen));
            break;
        default:
            break;
        }
        return;
    }

    /* from one of srqud's active eps */
    sc = sconn_find(k, n->src_ep_id, n->token);
    if ((n->flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
        (n->ctl == UCT_SRQUD_CTL_CREQ) && (n->psn == 0) &&
        (plen >= sizeof(conn_sn))) {
        memcpy(&conn_sn, payload, sizeof(conn_sn));
        if ((sc == NULL) || (sc->conn_sn != conn_sn)) {
            sc = sconn_add(k, n->src_ep_id, n->token, conn_sn);
        }
    }
    if (sc == NULL) {
        return;
    }

    if (!(n->flags & UCT_SRQUD_PACKET_FLAG_REL)) {
        if ((n->flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
            (n->ctl == UCT_SRQUD_CTL_ACK) &&
            (n->flags & UCT_SRQUD_PACKET_FLAG_ACK_REQ)) {
            sc_ack(sc, m);
        }
        return; /* RMA_SEEN: nothing held here */
    }

    /* the peer's receiver: in order, or held ahead of a gap */
    psn      = n->psn;
    accepted = 0;
    if (psn == sc->expected) {
        accepted = 1;
    } else if ((uint16_t)(psn - sc->expected) < 256) {
        b = psn % 256;
        sc->held[b / 64]   |= 1ull << (b % 64);
        sc->held_seq[b]     = s->seq;
    }

    if (accepted) {
        ++sc->expected;
        if ((n->flags & UCT_SRQUD_PACKET_FLAG_CTL) &&
            (n->ctl == UCT_SRQUD_CTL_CREQ)) {
            sc_answer(sc, UCT_SRQUD_CTL_CREP, NULL, 0, NULL, 0, m);
        } else {
            sc_request(sc, s, m, m2);
        }
        /* what it held behind the gap follows */
        for (;;) {
            const fv_send_t *h;

            b = sc->expected % 256;
            if (!(sc->held[b / 64] & (1ull << (b % 64)))) {
                break;
            }
            sc->held[b / 64] &= ~(1ull << (b % 64));
            h = fv_send_get(sc->held_seq[b]);
            ++sc->expected;
            if ((h != NULL) && (h->len >= sizeof(*n))) {
                sc_request(sc, h, m, m2);
            }
        }
    }
    /* acknowledged at once, most of the time */
    if ((m2 & 0x30) != 0x30) {
        sc_ack(sc, m);
    }
}


/* Chunks srqud sent: to a sink of its put */
static void observe_chunk(const fv_send_t *s)
{
    int k = peer_of_send(s);
    unsigned i;
    uint32_t c;
    sink_t *sk;

    if (k < 0) {
        return;
    }
    for (i = 0; i < MAX_SINKS; ++i) {
        sk = &G.sinks[i];
        if (!sk->used || (sk->peer != k) ||
            (s->dest_qpn != G.peers[k].pool_qpn) ||
            ((s->imm >> 24) != sk->tag)) {
            continue;
        }
        c = s->imm & 0xffffff;
        if ((c < MAX_CHUNKS) && (s->qkey == G.peers[k].pool_qkey)) {
            sk->got[c / 64] |= 1ull << (c % 64);
        }
        return;
    }
}


void observe(void)
{
    const fv_send_t *s;

    while (G.seen_chunks < fv_chunk_total()) {
        s = fv_chunk_get(++G.seen_chunks);
        if (s != NULL) {
            observe_chunk(s);
        }
    }
}


/* The sends to peer @a k not yet received by it (oldest first): pick the
 * @a sel'th, NULL if none */
const fv_send_t *inbox_pick(int k, unsigned sel)
{
    uint64_t seq, first, total = fv_send_total();
    const fv_send_t *s, *cands[32];
    unsigned n = 0;

    first = (total > FV_SEND_LOG) ? total - FV_SEND_LOG + 1 : 1;
    for (seq = first; (seq <= total) && (n < 32); ++seq) {
        /* now and then a packet the wire delivers twice */
        if ((G.answered[(seq % FV_SEND_LOG) / 64] & (1ull << (seq % 64))) &&
            ((sel & 0x30) != 0x30)) {
            continue;
        }
        s = fv_send_get(seq);
        if ((s != NULL) && (s->dest_qpn == G.peers[k].qpn) &&
            (peer_of_send(s) == k)) {
            cands[n++] = s;
        }
    }
    if (n == 0) {
        return NULL;
    }
    /* mostly the oldest: the wire reorders now and then */
    s = cands[((sel & 0xc0) == 0xc0) ? (sel % n) : 0];
    G.answered[(s->seq % FV_SEND_LOG) / 64] |= 1ull << (s->seq % 64);
    return s;
}


static void answered_clear(uint64_t from, uint64_t to)
{
    uint64_t seq;

    for (seq = from; seq <= to; ++seq) {
        G.answered[(seq % FV_SEND_LOG) / 64] &= ~(1ull << (seq % 64));
    }
}


/* Complete the sends of srqud's QPs (all of them, or @a n of the @a sel'th
 * QP that has some) */
void complete_sends(unsigned sel, unsigned n, enum ibv_wc_status st)
{
    uint32_t qpns[8];
    unsigned nq, i;
    uint64_t before = fv_send_total();

    nq = fv_send_qps(qpns, 8);
    if (nq == 0) {
        return;
    }
    if (n == 0) {
        for (i = 0; i < nq; ++i) {
            fv_complete_sends(qpns[i], ~0u, IBV_WC_SUCCESS);
        }
    } else {
        fv_complete_sends(qpns[sel % nq], n, st);
    }
    answered_clear(before + 1, fv_send_total());
    observe();
}
