/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * libFuzzer target over what srqud does with packets from the fabric,
 * before and besides the verbs: the header check, the selective-repeat
 * receiver (verdicts, reorder buffer), the sender's handling of
 * acknowledgements (cumulative part, SACK maps, fast retransmit, timeout),
 * and the zero-copy chunk ranges and chunk tracker that peers' requests
 * and completions drive. The input is a script of operations; every
 * invariant the endpoints rely on is checked after each one, and a
 * violation aborts (libFuzzer keeps the input).
 *
 *   test/fuzz/run.sh [SECONDS]
 */

#include <uct/ib/srqud/srqud_def.h>
#include <uct/ib/srqud/srqud_sr.h>
#include <uct/ib/srqud/srqud_chunk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(_cond) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "fuzz_rx: %s:%d: %s\n", __FILE__, __LINE__, #_cond); \
            abort(); \
        } \
    } while (0)

#define WINDOW_MAX   512
#define CHUNKS_MAX   4096


/* The input, consumed from the front */
typedef struct {
    const uint8_t *p;
    size_t        left;
} input_t;

static int take(input_t *in, void *dst, size_t len)
{
    if (in->left < len) {
        return 0;
    }
    memcpy(dst, in->p, len);
    in->p    += len;
    in->left -= len;
    return 1;
}


/* The receiving side of one connection */
typedef struct {
    uct_srqud_psn_t     expected;
    uct_srqud_reorder_t *ro;
    unsigned            span;
    unsigned            held_psn_ok[UCT_SRQUD_SR_SPAN]; /* psn + 1 of held */
} receiver_t;

static void receiver_check(const receiver_t *rx)
{
    unsigned bits = 0, i;

    if (rx->ro == NULL) {
        return;
    }
    for (i = 0; i < UCT_SRQUD_SR_SPAN; ++i) {
        if (uct_srqud_sack_test(rx->ro->map, i)) {
            ++bits;
            /* a held packet is ahead of the next expected, within span */
            uct_srqud_psn_t psn = rx->held_psn_ok[i] - 1;
            CHECK(rx->held_psn_ok[i] != 0);
            CHECK(uct_srqud_psn_lt(rx->expected, psn));
            CHECK((uint16_t)(psn - rx->expected) < rx->span);
        }
    }
    CHECK(bits == rx->ro->count);
    CHECK(rx->ro->count > 0);
}

static void receiver_packet(receiver_t *rx, uct_srqud_psn_t psn)
{
    uct_srqud_rx_verdict_t v;
    void *pkt;

    v = uct_srqud_rx_classify(rx->expected, psn, rx->ro ? rx->ro->map : NULL,
                              rx->span);
    switch (v) {
    case UCT_SRQUD_RX_DUPLICATE:
        /* never a packet it has not seen: behind, or held */
        CHECK(uct_srqud_psn_lt(psn, rx->expected) ||
              ((rx->ro != NULL) && uct_srqud_sack_test(rx->ro->map, psn)));
        return;
    case UCT_SRQUD_RX_BEYOND:
        CHECK((uint16_t)(psn - rx->expected) >= rx->span);
        return;
    case UCT_SRQUD_RX_HOLD:
        CHECK(psn != rx->expected);
        if (rx->ro == NULL) {
            rx->ro = calloc(1, sizeof(*rx->ro));
            CHECK(rx->ro != NULL);
        }
        rx->held_psn_ok[psn % UCT_SRQUD_SR_SPAN] = (unsigned)psn + 1;
        uct_srqud_reorder_hold(rx->ro, psn,
                               &rx->held_psn_ok[psn % UCT_SRQUD_SR_SPAN]);
        return;
    case UCT_SRQUD_RX_DELIVER:
        CHECK(psn == rx->expected);
        break;
    default:
        CHECK(0);
    }

    ++rx->expected;
    while ((pkt = uct_srqud_reorder_take(rx->ro, rx->expected)) != NULL) {
        /* what comes out is the packet that was held for that psn */
        CHECK(*(unsigned*)pkt == (unsigned)rx->expected + 1);
        *(unsigned*)pkt = 0;
        ++rx->expected;
    }
    if ((rx->ro != NULL) && (rx->ro->count == 0)) {
        free(rx->ro);
        rx->ro = NULL;
    }
}


/* The sending side: a window of slots */
typedef struct {
    ucs_queue_head_t    window;
    uct_srqud_tx_slot_t slots[WINDOW_MAX];
    unsigned            first;      /* slots[] index of the window head */
    unsigned            count;
    uct_srqud_psn_t     next, acked;
    uint64_t            now;
    uct_srqud_rtt_t     rtt;
    unsigned            resent;
    int                 reorders;   /* a packet sent once came late */
} sender_t;

static int sender_resend(uct_srqud_tx_slot_t *slot, void *arg)
{
    sender_t *tx = arg;

    CHECK(uct_srqud_psn_lt(tx->acked, slot->psn));
    CHECK(uct_srqud_psn_lt(slot->psn, tx->next));
    slot->send_time = tx->now;
    ++slot->resends;
    ++tx->resent;
    return (tx->now & 7) ? 1 : ((tx->now & 8) ? -1 : 0);
}

static void sender_check(sender_t *tx)
{
    uct_srqud_tx_slot_t *slot;
    uct_srqud_psn_t psn = tx->acked + 1;
    unsigned n = 0;

    ucs_queue_for_each(slot, &tx->window, elem) {
        CHECK(slot->psn == psn);   /* consecutive, in order */
        ++psn;
        ++n;
    }
    CHECK(n == tx->count);
    CHECK(psn == tx->next);
}

static void sender_push(sender_t *tx)
{
    uct_srqud_tx_slot_t *slot;

    if (tx->count == WINDOW_MAX) {
        return;
    }
    slot = &tx->slots[(tx->first + tx->count) % WINDOW_MAX];
    memset(slot, 0, sizeof(*slot));
    slot->psn       = tx->next++;
    slot->send_time = tx->now;
    ucs_queue_push(&tx->window, &slot->elem);
    ++tx->count;
}

/* Slots leave the window oldest first: the head of the slot ring */
static void sender_released(uct_srqud_tx_slot_t *slot, void *arg)
{
    sender_t *tx = arg;

    CHECK(tx->count > 0);
    CHECK(slot == &tx->slots[tx->first]);
    tx->first = (tx->first + 1) % WINDOW_MAX;
    --tx->count;
}

static void sender_ack(sender_t *tx, uct_srqud_psn_t ack_psn,
                       const uint64_t *map)
{
    if (uct_srqud_tx_ack_is_new(tx->next, tx->acked, ack_psn)) {
        unsigned flags;
        uct_srqud_sr_release(&tx->window, ack_psn, tx->now, &tx->rtt,
                             sender_released, tx, &flags);
        tx->reorders |= !!(flags & UCT_SRQUD_SR_REORDERED);
        tx->acked = ack_psn;
    }
    if (map != NULL) {
        uct_srqud_sr_sack(&tx->window, ack_psn, map);
        uct_srqud_sr_resend_lost(&tx->window,
                                 uct_srqud_reo_wnd(&tx->rtt, tx->reorders),
                                 sender_resend, tx);
    }
}


static void fuzz_chunks(input_t *in)
{
    uct_srqud_chunk_range_t ranges[64];
    uint32_t chunks[CHUNKS_MAX], nchunks, total, i;
    uint8_t num;

    if (!take(in, &nchunks, sizeof(nchunks)) || !take(in, &num, 1)) {
        return;
    }
    num %= 64;
    if (!take(in, ranges, num * sizeof(ranges[0]))) {
        return;
    }
    total = uct_srqud_chunk_ranges_check(ranges, num, nchunks, CHUNKS_MAX);
    if (total == 0) {
        return;
    }
    CHECK(total <= CHUNKS_MAX);
    uct_srqud_chunk_ranges_expand(ranges, num, chunks);
    for (i = 0; i < total; ++i) {
        CHECK(chunks[i] < nchunks);
    }
}


/* A transfer's receive side, driven by completions whose immediate data
 * (chunk index) and length the fabric chose */
static void fuzz_tracker(input_t *in)
{
    uct_srqud_chunk_move_t moves[UCT_SRQUD_CHUNK_MOVES_MAX(256)];
    uct_srqud_chunk_rx_t rx;
    uint32_t plan[256], nchunks, depth, n, i, imm;
    uint16_t hdr[2];
    uint8_t op;
    int in_place;

    if (!take(in, hdr, sizeof(hdr))) {
        return;
    }
    nchunks = 1 + hdr[0] % CHUNKS_MAX;
    depth   = 1 + hdr[1] % 256;
    CHECK(uct_srqud_chunk_rx_init(&rx, nchunks, depth) == 0);
    while (take(in, &op, 1) && (op != 0xff)) {
        switch (op % 3) {
        case 0:
            n = uct_srqud_chunk_rx_plan(&rx, plan, 256);
            for (i = 0; i < n; ++i) {
                CHECK(plan[i] < nchunks);
            }
            break;
        case 1:
            if (!take(in, &imm, sizeof(imm))) {
                goto out;
            }
            if (rx.count > 0) {
                uct_srqud_chunk_rx_complete(&rx, imm, op & 4, &in_place);
            }
            break;
        default:
            n = uct_srqud_chunk_rx_settle(&rx, moves);
            CHECK(n <= UCT_SRQUD_CHUNK_MOVES_MAX(depth));
            for (i = 0; i < n; ++i) {
                /* from the place of the chunk whose receive it took (the
                 * buffers are the transfer's memory) to its own place */
                /* a cycle's chunk goes through the temporary: out of
                 * its slot, later home, never temporary to temporary */
                CHECK((moves[i].chunk < nchunks) ||
                      (moves[i].chunk == UCT_SRQUD_CHUNK_TEMP));
                CHECK((moves[i].from_slot < nchunks) ||
                      (moves[i].from_slot == UCT_SRQUD_CHUNK_TEMP));
                CHECK(moves[i].from_slot != moves[i].chunk);
            }
            break;
        }
        CHECK(rx.valid_count <= nchunks);
        CHECK(rx.count <= depth);
    }
out:
    uct_srqud_chunk_rx_cleanup(&rx);
}


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t buf[UCT_SRQUD_GRH_LEN + 4096];
    input_t in = {data, size};
    receiver_t rx;
    sender_t tx;
    uint64_t map[UCT_SRQUD_SR_WORDS];
    uct_srqud_neth_t neth;
    uct_srqud_back_ack_t back;
    size_t payload_len;
    uint16_t len, psn;
    uint8_t op;

    memset(&rx, 0, sizeof(rx));
    memset(&tx, 0, sizeof(tx));
    ucs_queue_head_init(&tx.window);
    tx.acked = (uct_srqud_psn_t)-1;
    if (!take(&in, &op, 1)) {
        return 0;
    }
    rx.span = op % (UCT_SRQUD_SR_SPAN + 1);

    while (take(&in, &op, 1)) {
        switch (op % 8) {
        case 0: /* a packet off the wire: the header check decides */
            if (!take(&in, &len, sizeof(len))) {
                break;
            }
            len %= sizeof(buf) + 1;
            memset(buf, 0, UCT_SRQUD_GRH_LEN);
            if ((len > UCT_SRQUD_GRH_LEN) &&
                !take(&in, buf + UCT_SRQUD_GRH_LEN, len - UCT_SRQUD_GRH_LEN)) {
                break;
            }
            if (uct_srqud_neth_check((uct_srqud_neth_t*)(buf + UCT_SRQUD_GRH_LEN),
                                     len, 32, &payload_len) != UCS_OK) {
                break;
            }
            memcpy(&neth, buf + UCT_SRQUD_GRH_LEN, sizeof(neth));
            CHECK(payload_len + sizeof(neth) + UCT_SRQUD_GRH_LEN +
                  ((neth.flags & UCT_SRQUD_PACKET_FLAG_BACK_ACK) ?
                   sizeof(back) : 0) == len);
            CHECK(neth.magic == UCT_SRQUD_MAGIC);
            CHECK(!(neth.flags & ~UCT_SRQUD_PACKET_FLAGS_ALL));
            if (neth.flags & UCT_SRQUD_PACKET_FLAG_REL) {
                receiver_packet(&rx, neth.psn);
            }
            if (neth.flags & UCT_SRQUD_PACKET_FLAG_ACK) {
                /* a SACK is only read when the payload is exactly one */
                if (payload_len == sizeof(map)) {
                    memcpy(map, buf + UCT_SRQUD_GRH_LEN + sizeof(neth),
                           sizeof(map));
                }
                sender_ack(&tx, neth.ack_psn,
                           (payload_len == sizeof(map)) ? map : NULL);
            }
            if (neth.flags & UCT_SRQUD_PACKET_FLAG_BACK_ACK) {
                /* an ack on the way back: cumulative, at the very end */
                CHECK(neth.flags & UCT_SRQUD_PACKET_FLAG_AM);
                memcpy(&back, buf + len - sizeof(back), sizeof(back));
                sender_ack(&tx, back.psn, NULL);
            }
            break;
        case 1: /* a packet for the receiver by psn */
            if (take(&in, &psn, sizeof(psn))) {
                receiver_packet(&rx, psn);
            }
            break;
        case 2: /* the sender sends */
            sender_push(&tx);
            break;
        case 3: /* an acknowledgement with a map */
            if (take(&in, &psn, sizeof(psn)) && take(&in, map, sizeof(map))) {
                sender_ack(&tx, psn, map);
            }
            break;
        case 4: /* time passes; the timeout resends, as many as a
                 * congestion window of 1..8 lets go, the rest later */
            if (take(&in, &psn, sizeof(psn))) {
                tx.now += psn;
                uct_srqud_sr_resend_expired(&tx.window, tx.now, 100,
                                            1 + (psn & 7), sender_resend,
                                            &tx);
                uct_srqud_sr_resend_marked(&tx.window, psn >> 13,
                                           sender_resend, &tx);
            }
            break;
        case 5: /* the receiver's state, acknowledged truthfully */
            sender_ack(&tx, (uct_srqud_psn_t)(rx.expected - 1),
                       rx.ro ? rx.ro->map : NULL);
            break;
        case 6:
            fuzz_chunks(&in);
            break;
        default:
            fuzz_tracker(&in);
            break;
        }
        receiver_check(&rx);
        sender_check(&tx);
    }

    free(rx.ro);
    return 0;
}
