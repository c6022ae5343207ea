/*
 * tl/sucg: sucg's RDMA Allgather as a UCC transport layer (issue 12).
 *
 * UCC loads <libdir of libucc>/ucc/libucc_tl_sucg.so and looks up the
 * symbol ucc_tl_sucg. The TL compiles against UCC's internal headers (there
 * is no public TL API), so it is built against, and loads only into, the
 * UCC release it was compiled for: the lib checks the running version.
 *
 * Objects, after UCC's tl/self and tl/ucp:
 *   lib      configuration, the version check
 *   context  a UCP context + worker of its own (public UCP only: tl/ucp's
 *            worker is private to it) wrapped in a sucg context; its worker
 *            address is the TL's context address; endpoints are cached
 *            per peer worker and shared by all teams
 *   team     a sucg group; the group buffer's address and rkey go round in
 *            one UCC service allgather, then one service allreduce makes
 *            every rank agree that the group exists everywhere (a team that
 *            failed on one rank only would make the others wait forever)
 *   task     one sucg collective (allgather), progressed by UCC's queue
 */
#ifndef UCC_TL_SUCG_H_
#define UCC_TL_SUCG_H_

#include "components/tl/ucc_tl.h"
#include "components/tl/ucc_tl_log.h"
#include "core/ucc_service_coll.h"
#include "utils/ucc_mpool.h"

#include <ucp/api/ucp.h>
#include "sucg/api/sucg.h"

/*
 * Unique among UCC's TLs (ucc_init fails on a tie) and below tl/ucp's 10:
 * by default UCC's own algorithms keep every range; the built-in tuning
 * (UCC_TL_SUCG_BUILTIN_TUNE_SHM, tl_sucg_team.c) raises ours only where
 * the benchmark (contrib/bench/ucc-allgather.sh) measured them faster.
 */
#ifndef UCC_TL_SUCG_DEFAULT_SCORE
#define UCC_TL_SUCG_DEFAULT_SCORE 5
#endif

typedef struct ucc_tl_sucg_iface {
    ucc_tl_iface_t super;
} ucc_tl_sucg_iface_t;
extern ucc_tl_sucg_iface_t ucc_tl_sucg;

typedef struct ucc_tl_sucg_lib_config {
    ucc_tl_lib_config_t super;
} ucc_tl_sucg_lib_config_t;

typedef struct ucc_tl_sucg_context_config {
    ucc_tl_context_config_t super;
} ucc_tl_sucg_context_config_t;

typedef struct ucc_tl_sucg_lib {
    ucc_tl_lib_t             super;
    ucc_tl_sucg_lib_config_t cfg;
} ucc_tl_sucg_lib_t;
UCC_CLASS_DECLARE(ucc_tl_sucg_lib_t, const ucc_base_lib_params_t *,
                  const ucc_base_config_t *);

/* a peer worker we have an endpoint to, by its address */
typedef struct ucc_tl_sucg_peer {
    void    *addr;
    size_t   addr_len;
    ucp_ep_h ep;
} ucc_tl_sucg_peer_t;

typedef struct ucc_tl_sucg_context {
    ucc_tl_context_t             super;
    ucc_tl_sucg_context_config_t cfg;
    ucp_context_h                ucp_context;
    ucp_worker_h                 ucp_worker;
    ucp_address_t               *worker_addr;
    size_t                       worker_addr_len;
    sucg_context_h               sucg;
    ucc_tl_sucg_peer_t          *peers;
    size_t                       npeers, peers_cap;
    ucc_mpool_t                  task_mp;
    struct ucc_tl_sucg_unmapped *unmapped;  /* tl_sucg_rcache.c */
} ucc_tl_sucg_context_t;
UCC_CLASS_DECLARE(ucc_tl_sucg_context_t, const ucc_base_context_params_t *,
                  const ucc_base_config_t *);

typedef enum {
    UCC_TL_SUCG_TEAM_CONNECT,   /* endpoints, this rank's group record */
    UCC_TL_SUCG_TEAM_EXCHANGE,  /* service allgather of the records */
    UCC_TL_SUCG_TEAM_AGREE,     /* service allreduce of the outcome */
    UCC_TL_SUCG_TEAM_READY,
    UCC_TL_SUCG_TEAM_FAILED
} ucc_tl_sucg_team_state_t;

typedef struct ucc_tl_sucg_team {
    ucc_tl_team_t            super;
    ucc_tl_sucg_team_state_t state;
    sucg_group_h             group;
    ucp_ep_h                *eps;
    void                    *records;
    ucc_service_coll_req_t  *req;
    int32_t                  ok, all_ok;   /* allreduce MIN operands */
} ucc_tl_sucg_team_t;
UCC_CLASS_DECLARE(ucc_tl_sucg_team_t, ucc_base_context_t *,
                  const ucc_base_team_params_t *);

typedef struct ucc_tl_sucg_task {
    ucc_coll_task_t super;
    sucg_coll_h     coll;
} ucc_tl_sucg_task_t;

#define UCC_TL_SUCG_SUPPORTED_COLLS (UCC_COLL_TYPE_ALLGATHER)

#define UCC_TL_SUCG_TEAM_CTX(_team) \
    (ucc_derived_of((_team)->super.super.context, ucc_tl_sucg_context_t))

/* Which UCC this TL was compiled for; NULL when the running one is it */
const char *ucc_tl_sucg_version_mismatch(void);

/* tl_sucg_context.c: the endpoint to a peer worker, created once */
ucc_status_t ucc_tl_sucg_peer_ep(ucc_tl_sucg_context_t *ctx,
                                 const void *addr, ucp_ep_h *ep_p);

/* tl_sucg_rcache.c: registrations of freed memory are forgotten */
ucc_status_t ucc_tl_sucg_rcache_init(ucc_tl_sucg_context_t *ctx);
void         ucc_tl_sucg_rcache_cleanup(ucc_tl_sucg_context_t *ctx);
void         ucc_tl_sucg_rcache_sync(ucc_tl_sucg_context_t *ctx);

/* tl_sucg_allgather.c */
extern ucc_base_coll_alg_info_t ucc_tl_sucg_allgather_algs[];
ucc_status_t ucc_tl_sucg_coll_init(ucc_base_coll_args_t *coll_args,
                                   ucc_base_team_t *team,
                                   ucc_coll_task_t **task_h);
ucc_status_t ucc_tl_sucg_alg_id_to_init(int alg_id, const char *alg_id_str,
                                        ucc_coll_type_t coll_type,
                                        ucc_memory_type_t mem_type,
                                        ucc_base_coll_init_fn_t *init);

#endif
