/*
 * RDMA allgather executor (recursive doubling and ring schedules), after
 * Sur, Bondhugula, Mamidala, Jin, Panda (HiPC'05).
 *
 * Data path per step s (schedule from sched/sucg_sched.c):
 *   staged   (s < nstaged): put from my group-buffer staging copy into the
 *            peer's staging copy (both registered once at group creation);
 *            no registration and no handshake per call. The staging copy
 *            has the layout of the result (block i at i * count), so a
 *            step is "same ranges, same offsets" on both sides.
 *   zero-copy (s >= nstaged): put from my rbuf straight into the peer's
 *            rbuf at the final offset; or, in a group that takes them so
 *            (g->zcopy_tag, below), a tagged send into the receive the
 *            peer posted there.
 *   Recursive doubling uses staging for its leading steps whose nominal
 *   size (2^(k-1) * count) is <= SUCG_ALLGATHER_ZCOPY_THRESH (auto: 32 KB
 *   where the group's staged steps are active messages, 4 KB where they
 *   are puts, sucg_config.h), provided the
 *   whole result fits one staging half; the first larger step switches to
 *   zero-copy for good (after copying what was received so far into rbuf).
 *   The ring is always zero-copy (it is selected for large messages).
 *   The decision depends on (size, count, configuration) only: both ends of
 *   every transfer agree without talking.
 *
 * Remote rbuf address and rkey (zero-copy): the receiver's rbuf differs per
 * call, so at start every rank puts a descriptor {rbuf address, rkey,
 * registration id} into the group buffer of each peer that will write to it
 * zero-copy - one small put per (peer, call), in the descriptor slot of the
 * first zero-copy step of that pair (the step number for recursive
 * doubling, 0 for the ring whose sender is always the same). It is also the
 * "my rbuf is ready" signal: a sender never writes into a user buffer of a
 * collective the receiver has not started. The rbuf registration itself
 * comes from the registration cache (no ucp_mem_map for a known buffer) and
 * the sender caches unpacked rkeys per peer by registration id, so a
 * repeated buffer costs one descriptor put and no registration or unpack.
 *
 * A receive buffer that cannot be registered (ucp_mem_map failing on one
 * rank, under a memlock limit say) must not fail that rank alone: its peers
 * would wait for it forever, and switching the whole team to another
 * algorithm would need every rank to agree first, a round trip per call.
 * The descriptor every zero-copy sender waits for anyway carries the news
 * instead: an empty rkey (rkey_len 0). Such a receiver posts tagged
 * receives for its zero-copy steps (allgather_p2p.c, same tags as the p2p
 * algorithm) and waits for their completion instead of the flag; a sender
 * that finds an empty rkey sends that step with tagged sends and raises no
 * flag. Staged steps and the other pairs keep their puts. The failing rank
 * logs one line per context.
 *
 * Zero-copy steps by tag: where a transport carries a put as messages
 * that the peer's CPU applies (srqud over UD, tcp, UCP's emulation), the
 * descriptor, the put, the flush and the flag are each such a message or
 * a round trip, while UCP's tagged protocols (eager, or a rendezvous that
 * uses the same zero-copy engine) move the bytes with fewer. A group takes
 * every zero-copy step by tag when SUCG_ZCOPY_STEP=tag, or =auto and some
 * rank reaches a peer so (sucg_lanes_rma_by_messages, agreed in the
 * creation's exchange): the receiver posts its step's receives into rbuf,
 * the sender sends without waiting (UCP holds what arrives first), and
 * there is no registration, descriptor, flush or flag. The tags are the
 * p2p algorithm's, so the registration-failure path below is the same.
 *
 * Staged steps as one active message: where every rank of the group has
 * enabled it (sucg_context_enable_am), a staged step is one UCP active
 * message whose handler on the receiver copies the data into the same
 * staging ranges and raises the same flag (allgather_am.c sends,
 * core/sucg_am_rx.c receives); no fence, no flag put. Over srqud or tcp,
 * which emulate a put with a message, a step is then one message instead
 * of two and an ordering point. Not to a peer whose group buffer is mapped
 * here (shared memory, ucp_rkey_ptr): there a write is a store. The choice
 * is the sender's alone: the receiver waits for the same flag either way.
 *
 * Staged steps as one put with the flag last (SUCG_STAGED_STEP=tail, an
 * option every rank takes alike): the step lands in a slot of its own and
 * the receiver polls the slot's last bytes (allgather_tail.c, which says
 * what that assumes).
 *
 * Completion and memory ordering: data, then an ordering point, then the
 * collective sequence number into the receiver's flag slot for that step
 * (descriptors: same, into a descriptor flag).
 *   - Group buffer mapped here (sucg_rdma_buf_write): data and flag are
 *     stores, the flag a release store; nothing else orders them. Not
 *     puts: UCP chooses a transport per put size even for one rkey (UCX
 *     1.18 over shared memory: sysv up to ~5 KB, cma above, whose put may
 *     complete in a later progress) and its default fence orders each
 *     transport alone, so a flag overtook its data.
 *   - Staged steps and descriptors by put (one RMA transport to a peer over
 *     a network, UCX's default UCX_MAX_RMA_LANES=1): ucp_worker_fence().
 *   - Zero-copy steps: a non-blocking ucp_ep_flush_nbx() before the flag
 *     (see sucg_rdma_use_flush() for why a fence is not enough there).
 * Either way, when the receiver sees the flag the data is in its memory.
 * The receiver polls the flag with an acquire load and reads data only
 * after it. The flag is compared for equality with the sequence number: a
 * torn 8-byte write can never produce the new value early, so no atomics
 * are needed.
 *
 * Reuse of flags and slots: collectives alternate between two halves of the
 * group buffer (seq parity). Collective n+1 of rank a may write into rank
 * b's half while b is still in collective n (other half), but never while b
 * is in n-1: a completing n means it received data originating at every
 * rank, so every rank started n, so (one collective at a time per group)
 * every rank completed n-1, including its copy-out of the staging area and
 * the local completion of its puts. Everything a peer writes into my half
 * for collective n is something I wait for in n, so no write of n can land
 * after I completed n.
 */
#include "sucg/core/sucg_internal.h"

static int sucg_rdma_desc_slot(sucg_coll_h coll, int step)
{
    /* the ring's sender is always rank-1: one descriptor per call */
    return (coll->kind == SUCG_SCHED_RING) ? coll->nstaged : step;
}

static ucs_status_t sucg_rdma_put(sucg_coll_h coll, ucp_ep_h ep,
                                  const void *src, size_t len, uint64_t raddr,
                                  ucp_rkey_h rkey, ucp_mem_h memh)
{
    ucp_request_param_t param;

    sucg_coll_req_param(coll, &param, memh);
    return sucg_coll_req_track(coll, ucp_put_nbx(ep, src, len, raddr, rkey,
                                             &param));
}

/* Write into a peer's group buffer at @a off: a store where that buffer is
 * mapped here (why: the header comment), a put otherwise */
static ucs_status_t sucg_rdma_buf_write(sucg_coll_h coll, sucg_peer_t *peer,
                                        size_t off, const void *src,
                                        size_t len, ucp_mem_h memh)
{
    if (peer->buf_ptr != NULL) {
        memcpy(peer->buf_ptr + off, src, len);
        return UCS_OK;
    }
    return sucg_rdma_put(coll, peer->ep, src, len, peer->buf_addr + off,
                         peer->buf_rkey, memh);
}

/* Raise the flag at @a off of a peer's group buffer, after its data */
static ucs_status_t sucg_rdma_buf_flag(sucg_coll_h coll, sucg_peer_t *peer,
                                       size_t off)
{
    if (peer->buf_ptr != NULL) {
        /* pairs with the receiver's acquire load (sucg_flag_is) */
        __atomic_store_n((uint64_t*)(peer->buf_ptr + off), coll->flag_src,
                         __ATOMIC_RELEASE);
        return UCS_OK;
    }
    return sucg_rdma_put(coll, peer->ep, &coll->flag_src, sizeof(uint64_t),
                         peer->buf_addr + off, peer->buf_rkey, NULL);
}

/* Blocks received in staged steps: staging -> rbuf (but those of steps
 * whose data went there at once) */
static void sucg_rdma_unstage(sucg_coll_h coll)
{
    sucg_group_h g  = coll->group;
    size_t m        = coll->params.count;
    uint8_t *stage  = sucg_stage(g, coll->seq);
    uint8_t *rbuf   = coll->params.rbuf;
    sucg_sched_step_t st;
    int s, i;

    for (s = 0; s < coll->nstaged; ++s) {
        if (coll->in_rbuf & UCS_BIT(s)) {
            continue;
        }
        sucg_sched_step(coll->kind, g->size, g->rank, s, &st);
        for (i = 0; i < st.n_recv; ++i) {
            memcpy(rbuf + st.recv[i].first * m, stage + st.recv[i].first * m,
                   st.recv[i].count * m);
        }
    }
    coll->in_stage = 0;
}

static ucp_rkey_h sucg_rdma_peer_rkey(sucg_coll_h coll, int rank,
                                      const sucg_desc_t *desc)
{
    sucg_context_h ctx = coll->group->ctx;
    sucg_peer_t *peer  = &coll->group->peers[rank];
    int i, victim = 0;
    ucp_rkey_h rkey;

    for (i = 0; i < SUCG_PEER_RKEY_CACHE; ++i) {
        if (peer->rcache[i].reg_id == desc->reg_id) {
            peer->rcache[i].last_use = ++ctx->rkey_tick;
            ctx->stats.rkey_unpack_hits++;
            return peer->rcache[i].rkey;
        }
        if (peer->rcache[i].last_use < peer->rcache[victim].last_use) {
            victim = i;
        }
    }
    if (ucp_ep_rkey_unpack(peer->ep, desc->rkey, &rkey) != UCS_OK) {
        return NULL;
    }
    ctx->stats.rkey_unpacks++;
    /* ids are never reused by the peer: an evicted id is never looked up */
    if (peer->rcache[victim].reg_id != 0) {
        ucp_rkey_destroy(peer->rcache[victim].rkey);
    }
    peer->rcache[victim].reg_id   = desc->reg_id;
    peer->rcache[victim].rkey     = rkey;
    peer->rcache[victim].last_use = ++ctx->rkey_tick;
    return rkey;
}

/* Tell every zero-copy sender where my rbuf is */
static ucs_status_t sucg_rdma_send_descs(sucg_coll_h coll)
{
    sucg_group_h g       = coll->group;
    sucg_rcache_entry_t *e = coll->rreg;
    sucg_desc_t *desc    = (sucg_desc_t*)coll->desc_src;
    size_t half          = sucg_half_off(g, coll->seq);
    sucg_sched_step_t st;
    int s, slot, pass, puts = 0, last_peer = -1;
    sucg_peer_t *peer;
    ucs_status_t status;

    if (e == NULL) {
        /* not registered: an empty rkey asks for tagged sends */
        desc->addr     = 0;
        desc->reg_id   = 0;
        desc->rkey_len = 0;
    } else if (e->rkey_len > SUCG_DESC_RKEY_MAX) {
        sucg_error("rbuf rkey of %zu bytes does not fit a descriptor slot",
                   e->rkey_len);
        return UCS_ERR_EXCEEDS_LIMIT;
    } else {
        desc->addr     = (uintptr_t)coll->params.rbuf;
        desc->reg_id   = e->id;
        desc->rkey_len = e->rkey_len;
        memcpy(desc->rkey, e->rkey_buf, e->rkey_len);
    }
    coll->desc_len = sizeof(*desc) + desc->rkey_len;

    /* pass 0: descriptors; fence (where some went by put); pass 1: flags */
    for (pass = 0; pass < 2; ++pass) {
        last_peer = -1;
        for (s = coll->nstaged; s < coll->nsteps; ++s) {
            sucg_sched_step(coll->kind, g->size, g->rank, s, &st);
            if ((st.recv_peer < 0) || (st.recv_peer == last_peer)) {
                continue;
            }
            last_peer = st.recv_peer;
            slot      = sucg_rdma_desc_slot(coll, s);
            peer      = &g->peers[st.recv_peer];
            if (pass == 0) {
                puts  += (peer->buf_ptr == NULL);
                status = sucg_rdma_buf_write(coll, peer,
                                             half + g->layout.desc_off +
                                             (size_t)slot *
                                             SUCG_DESC_SLOT_SIZE,
                                             coll->desc_src, coll->desc_len,
                                             NULL);
            } else {
                status = sucg_rdma_buf_flag(coll, peer,
                                            half + g->layout.desc_flag_off +
                                            (size_t)slot * sizeof(uint64_t));
            }
            if (status != UCS_OK) {
                return status;
            }
            if (coll->kind == SUCG_SCHED_RING) {
                break;   /* same sender in every step */
            }
        }
        if ((pass == 0) && (puts > 0)) {
            status = ucp_worker_fence(g->ctx->ucp_worker);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
    return UCS_OK;
}

static ucs_status_t sucg_rdma_progress(sucg_coll_h coll);

/*
 * Why a flush for zero-copy steps: in UCX 1.13 ucp_worker_fence() is a
 * fence of each transport separately (uct_iface_fence), and so is 1.18's
 * default. The data of a zero-copy step targets the user buffer and may
 * travel on another transport than the flag, which targets the group
 * buffer: over shared memory the data goes through cma while the flag is a
 * store, and the flag overtakes the data (seen in test/sucg/integration
 * with UCX_TLS=sm). The flush costs a round trip, paid only on steps large
 * enough to be zero-copy; staged steps by put have one transport.
 * SUCG_RMA_ORDERING=fence|flush forces one or the other on every step by put.
 */
static int sucg_rdma_use_flush(sucg_coll_h coll)
{
    switch (coll->group->ctx->config.rma_ordering) {
    case SUCG_RMA_ORDERING_FENCE:
        return 0;
    case SUCG_RMA_ORDERING_FLUSH:
        return 1;
    default:
        return coll->step >= coll->nstaged;
    }
}

static void sucg_rdma_flush_cb(void *request, ucs_status_t status,
                               void *user_data)
{
    sucg_coll_h coll = user_data;

    if ((status != UCS_OK) && (coll->req_status == UCS_OK)) {
        coll->req_status = status;
    }
    coll->flushing--;
    ucp_request_free(request);
}

static ucs_status_t sucg_rdma_flush(sucg_coll_h coll, ucp_ep_h ep)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sptr;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = sucg_rdma_flush_cb;
    param.user_data    = coll;
    sptr               = ucp_ep_flush_nbx(ep, &param);
    if (UCS_PTR_IS_ERR(sptr)) {
        return UCS_PTR_STATUS(sptr);
    }
    if (sptr != NULL) {
        coll->flushing++;
    }
    return UCS_OK;
}

/* The ordering point between a step's puts and its flag (header comment) */
static ucs_status_t sucg_rdma_order(sucg_coll_h coll, ucp_ep_h ep)
{
    if (sucg_rdma_use_flush(coll)) {
        return sucg_rdma_flush(coll, ep);
    }
    return ucp_worker_fence(coll->group->ctx->ucp_worker);
}

static ucs_status_t sucg_rdma_start(sucg_coll_h coll)
{
    sucg_group_h g     = coll->group;
    sucg_context_h ctx = g->ctx;
    size_t m           = coll->params.count;
    uint8_t *rbuf      = coll->params.rbuf;
    const void *own;
    int s;
    ucs_status_t status;

    own = (coll->params.flags & SUCG_COLL_FLAG_IN_PLACE) ?
          rbuf + g->rank * m : coll->params.sbuf;
    if (own != rbuf + g->rank * m) {
        memcpy(rbuf + g->rank * m, own, m);
    }
    coll->flag_src    = coll->seq;
    coll->rreg        = NULL;
    coll->in_stage    = 0;
    coll->in_rbuf     = 0;
    coll->nstaged     = 0;
    coll->tagged_rx   = 0;
    coll->step_noflag = 0;
    coll->rx_posted   = 0;
    if ((m == 0) || (g->size == 1)) {
        return UCS_OK;
    }

    if ((coll->kind == SUCG_SCHED_RD) &&
        (m * g->size <= g->layout.stage_size)) {
        for (s = 0; s < coll->nsteps; ++s) {
            if (sucg_sched_nominal_blocks(coll->kind, g->size, s) * m >
                sucg_config_zcopy_thresh(&ctx->config, g->am || g->tail)) {
                break;
            }
        }
        coll->nstaged = s;
    }
    if (coll->nstaged > 0) {
        memcpy(sucg_stage(g, coll->seq) + g->rank * m, own, m);
        coll->in_stage = 1;
    }

    if ((coll->nstaged < coll->nsteps) && g->zcopy_tag) {
        /* tagged sends into posted receives: no registration, no
         * descriptor (header comment) */
        coll->tagged_rx = 1;
    } else if (coll->nstaged < coll->nsteps) {
        status = sucg_rcache_get(&ctx->rcache, rbuf, m * g->size, &coll->rreg);
        if (status != UCS_OK) {
            if (ctx->stats.reg_failures++ == 0) {
                sucg_warn("registering a receive buffer (%p, %zu bytes) "
                          "failed: %s; its zero-copy steps go by tagged "
                          "send/receive (logged once)", (void*)rbuf,
                          m * g->size, ucs_status_string(status));
            }
            coll->rreg      = NULL;
            coll->tagged_rx = 1;
        }
        status = sucg_rdma_send_descs(coll);
        if (status != UCS_OK) {
            return status;   /* cleanup releases rreg */
        }
    }
    return sucg_rdma_progress(coll);
}

/* Staged step: my staging copy into the peer's, same ranges */
static ucs_status_t sucg_rdma_send_staged(sucg_coll_h coll,
                                          const sucg_sched_step_t *st,
                                          sucg_peer_t *peer)
{
    sucg_group_h g     = coll->group;
    size_t m           = coll->params.count;
    size_t off         = sucg_half_off(g, coll->seq) + g->layout.stage_off;
    const uint8_t *src = sucg_stage(g, coll->seq);
    int i;
    ucs_status_t status;

    g->ctx->stats.staged_puts += st->n_send;
    for (i = 0; i < st->n_send; ++i) {
        status = sucg_rdma_buf_write(coll, peer, off + st->send[i].first * m,
                                     src + st->send[i].first * m,
                                     st->send[i].count * m, g->buf_memh);
        if (status != UCS_OK) {
            return status;
        }
    }
    if (peer->buf_ptr != NULL) {
        return UCS_OK;   /* the flag's release store orders the stores */
    }
    return sucg_rdma_order(coll, peer->ep);
}

/* Zero-copy step: my rbuf into the peer's; UCS_INPROGRESS while the
 * peer's descriptor is missing */
static ucs_status_t sucg_rdma_send_zcopy(sucg_coll_h coll,
                                         const sucg_sched_step_t *st,
                                         sucg_peer_t *peer)
{
    sucg_group_h g     = coll->group;
    sucg_context_h ctx = g->ctx;
    size_t m           = coll->params.count;
    const uint8_t *src = coll->params.rbuf;
    int slot           = sucg_rdma_desc_slot(coll, coll->step);
    const sucg_desc_t *desc = NULL;
    ucp_rkey_h rkey;
    ucp_mem_h memh;
    int i;
    ucs_status_t status;

    /* a group taking tags sends no descriptors: UCP keeps what comes
     * before the peer's receive */
    if (!g->zcopy_tag) {
        if (!sucg_flag_is(sucg_desc_flag(g, coll->seq, slot), coll->seq)) {
            return UCS_INPROGRESS;   /* peer has not started yet */
        }
        desc = (const sucg_desc_t*)sucg_desc_slot(g, coll->seq, slot);
    }
    if (coll->in_stage) {
        sucg_rdma_unstage(coll);
    }
    if ((desc == NULL) || (desc->rkey_len == 0)) {
        /* by tag: the group takes them so, or the receiver could not
         * register its rbuf (an empty rkey); no flag either way */
        ctx->stats.tagged_tx_steps++;
        coll->step_noflag = 1;
        return sucg_p2p_post(coll, st, SUCG_P2P_SEND);
    }
    rkey = sucg_rdma_peer_rkey(coll, st->send_peer, desc);
    if (rkey == NULL) {
        sucg_error("cannot unpack the rbuf rkey of rank %d", st->send_peer);
        return UCS_ERR_INVALID_PARAM;
    }
    /* my own rbuf unregistered: UCP registers or copies what it sends */
    memh = (coll->rreg != NULL) ? (ucp_mem_h)coll->rreg->memh : NULL;
    ctx->stats.zcopy_puts += st->n_send;
    for (i = 0; i < st->n_send; ++i) {
        status = sucg_rdma_put(coll, peer->ep, src + st->send[i].first * m,
                               st->send[i].count * m,
                               desc->addr + st->send[i].first * m, rkey,
                               memh);
        if (status != UCS_OK) {
            return status;
        }
    }
    return sucg_rdma_order(coll, peer->ep);
}

/* Send this step's data; UCS_INPROGRESS while it cannot go yet */
static ucs_status_t sucg_rdma_send(sucg_coll_h coll,
                                   const sucg_sched_step_t *st)
{
    sucg_group_h g    = coll->group;
    sucg_peer_t *peer = &g->peers[st->send_peer];

    if (coll->step >= coll->nstaged) {
        return sucg_rdma_send_zcopy(coll, st, peer);
    }
    if (sucg_tail_step(coll, st, 0)) {
        /* one put, its flag last (allgather_tail.c) */
        coll->step_noflag = 1;
        return sucg_tail_send_step(coll, st);
    }
    if (g->am && (peer->buf_ptr == NULL) &&
        (coll->step < SUCG_AM_MAX_STEPS)) {
        /* one message: data and flag (allgather_am.c) */
        coll->step_noflag = 1;
        return sucg_am_send_step(coll, st, peer->ep);
    }
    return sucg_rdma_send_staged(coll, st, peer);
}

/* The step's data is placed, ordered (fence) or complete (flush): raise
 * the flag */
static ucs_status_t sucg_rdma_send_flag(sucg_coll_h coll,
                                        const sucg_sched_step_t *st)
{
    sucg_group_h g = coll->group;

    return sucg_rdma_buf_flag(coll, &g->peers[st->send_peer],
                              sucg_half_off(g, coll->seq) +
                              g->layout.data_flag_off +
                              (size_t)coll->step * sizeof(uint64_t));
}

static ucs_status_t sucg_rdma_progress(sucg_coll_h coll)
{
    sucg_group_h g = coll->group;
    sucg_sched_step_t st;
    ucs_status_t status;
    int rx_tagged;

    if (coll->req_status != UCS_OK) {
        return coll->req_status;
    }
    while (coll->step < coll->nsteps) {
        sucg_sched_step(coll->kind, g->size, g->rank, coll->step, &st);
        rx_tagged = coll->tagged_rx && (coll->step >= coll->nstaged) &&
                    (st.recv_peer >= 0);
        if (rx_tagged && !coll->rx_posted) {
            status = sucg_p2p_post(coll, &st, SUCG_P2P_RECV);
            if (status != UCS_OK) {
                return status;
            }
            g->ctx->stats.tagged_rx_steps++;
            coll->rx_posted = 1;
        }
        if (coll->sent == 0) {
            if (st.send_peer >= 0) {
                status = sucg_rdma_send(coll, &st);
                if (status != UCS_OK) {
                    return status;   /* UCS_INPROGRESS: no descriptor yet */
                }
            }
            coll->sent = 1;
        }
        if (coll->sent == 1) {
            if ((st.send_peer >= 0) && !coll->step_noflag) {
                if (coll->flushing) {
                    return UCS_INPROGRESS;
                }
                status = sucg_rdma_send_flag(coll, &st);
                if (status != UCS_OK) {
                    return status;
                }
            }
            coll->sent = 2;
        }
        if (rx_tagged) {
            /* the receives complete with the data in place; waiting for
             * every request also covers this step's own sends */
            if (coll->outstanding > 0) {
                return UCS_INPROGRESS;
            }
        } else if ((st.recv_peer >= 0) && sucg_tail_step(coll, &st, 1)) {
            if (sucg_tail_recv_step(coll, &st) != UCS_OK) {
                return UCS_INPROGRESS;   /* its flag has not come */
            }
        } else if ((st.recv_peer >= 0) &&
                   !sucg_flag_is(sucg_data_flag(g, coll->seq, coll->step),
                                 coll->seq)) {
            return UCS_INPROGRESS;
        }
        coll->step++;
        coll->sent        = 0;
        coll->step_noflag = 0;
        coll->rx_posted   = 0;
    }

    /* local completion of every put: sources may be reused after this */
    if ((coll->outstanding > 0) || (coll->flushing > 0)) {
        return UCS_INPROGRESS;
    }
    if (coll->in_stage) {
        sucg_rdma_unstage(coll);
    }
    if (coll->rreg != NULL) {
        sucg_rcache_put(&g->ctx->rcache, coll->rreg);
        coll->rreg = NULL;
    }
    return coll->req_status;
}

static void sucg_rdma_cleanup(sucg_coll_h coll)
{
    /* the group is unusable after a failed collective (peers may hang);
     * only release what we hold */
    if (coll->rreg != NULL) {
        sucg_rcache_put(&coll->group->ctx->rcache, coll->rreg);
        coll->rreg = NULL;
    }
}

const sucg_coll_ops_t sucg_allgather_rdma_ops = {
    .start    = sucg_rdma_start,
    .progress = sucg_rdma_progress,
    .cleanup  = sucg_rdma_cleanup
};
