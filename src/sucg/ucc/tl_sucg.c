/*
 * tl/sucg: the component (configuration tables, iface, lib object).
 */
#include "tl_sucg.h"

#include <ucc/api/ucc_version.h>

static ucc_config_field_t ucc_tl_sucg_lib_config_table[] = {
    {"", "", NULL, ucc_offsetof(ucc_tl_sucg_lib_config_t, super),
     UCC_CONFIG_TYPE_TABLE(ucc_tl_lib_config_table)},

    {NULL}};

static ucs_config_field_t ucc_tl_sucg_context_config_table[] = {
    {"", "", NULL, ucc_offsetof(ucc_tl_sucg_context_config_t, super),
     UCC_CONFIG_TYPE_TABLE(ucc_tl_context_config_table)},

    {NULL}};

UCC_CLASS_DEFINE_NEW_FUNC(ucc_tl_sucg_lib_t, ucc_base_lib_t,
                          const ucc_base_lib_params_t *,
                          const ucc_base_config_t *);
UCC_CLASS_DEFINE_DELETE_FUNC(ucc_tl_sucg_lib_t, ucc_base_lib_t);
UCC_CLASS_DEFINE_NEW_FUNC(ucc_tl_sucg_context_t, ucc_base_context_t,
                          const ucc_base_context_params_t *,
                          const ucc_base_config_t *);
UCC_CLASS_DEFINE_DELETE_FUNC(ucc_tl_sucg_context_t, ucc_base_context_t);
UCC_CLASS_DEFINE_NEW_FUNC(ucc_tl_sucg_team_t, ucc_base_team_t,
                          ucc_base_context_t *, const ucc_base_team_params_t *);

ucc_status_t ucc_tl_sucg_get_lib_attr(const ucc_base_lib_t *lib,
                                      ucc_base_lib_attr_t *base_attr);
ucc_status_t ucc_tl_sucg_get_lib_properties(ucc_base_lib_properties_t *prop);
ucc_status_t ucc_tl_sucg_get_context_attr(const ucc_base_context_t *context,
                                          ucc_base_ctx_attr_t *base_attr);
ucc_status_t ucc_tl_sucg_mem_map(const ucc_base_context_t *context,
                                 ucc_mem_map_mode_t mode,
                                 ucc_mem_map_memh_t *memh,
                                 ucc_mem_map_tl_t *tl_h);
ucc_status_t ucc_tl_sucg_mem_unmap(const ucc_base_context_t *context,
                                   ucc_mem_map_mode_t mode,
                                   ucc_mem_map_tl_t *tl_h);
ucc_status_t ucc_tl_sucg_memh_pack(const ucc_base_context_t *context,
                                   ucc_mem_map_mode_t mode,
                                   ucc_mem_map_tl_t *tl_h, void **pack_buffer);
ucc_status_t ucc_tl_sucg_team_create_test(ucc_base_team_t *tl_team);
ucc_status_t ucc_tl_sucg_team_destroy(ucc_base_team_t *tl_team);
ucc_status_t ucc_tl_sucg_team_get_scores(ucc_base_team_t *tl_team,
                                         ucc_coll_score_t **score);

UCC_TL_IFACE_DECLARE(sucg, SUCG);

__attribute__((constructor)) static void ucc_tl_sucg_iface_init(void)
{
    ucc_tl_sucg.super.alg_info[ucc_ilog2(UCC_COLL_TYPE_ALLGATHER)] =
        ucc_tl_sucg_allgather_algs;
}

const char *ucc_tl_sucg_version_mismatch(void)
{
    /* internal layouts (ucc_context_t, the progress queue, tasks) move
     * between releases, so anything but the exact release is refused */
    return strcmp(ucc_get_version_string(), UCC_VERSION_STRING) ?
           UCC_VERSION_STRING : NULL;
}

UCC_CLASS_INIT_FUNC(ucc_tl_sucg_lib_t, const ucc_base_lib_params_t *params,
                    const ucc_base_config_t *config)
{
    const ucc_tl_sucg_lib_config_t *cfg =
        ucc_derived_of(config, ucc_tl_sucg_lib_config_t);
    const char *built_for = ucc_tl_sucg_version_mismatch();

    if (built_for != NULL) {
        /* logged here, once per lib, not through the lib's own logger:
         * that object is not built yet */
        ucc_error("tl/sucg was built for UCC %s but runs in UCC %s: "
                  "disabled (rebuild it against this UCC)", built_for,
                  ucc_get_version_string());
        return UCC_ERR_NOT_SUPPORTED;
    }
    UCC_CLASS_CALL_SUPER_INIT(ucc_tl_lib_t, &ucc_tl_sucg.super, &cfg->super);
    memcpy(&self->cfg, cfg, sizeof(*cfg));
    tl_debug(&self->super, "initialized lib object: %p", self);
    return UCC_OK;
}

UCC_CLASS_CLEANUP_FUNC(ucc_tl_sucg_lib_t)
{
    tl_debug(&self->super, "finalizing lib object: %p", self);
}

UCC_CLASS_DEFINE(ucc_tl_sucg_lib_t, ucc_tl_lib_t);

ucc_status_t ucc_tl_sucg_get_lib_attr(const ucc_base_lib_t *lib,
                                      ucc_base_lib_attr_t *base_attr)
{
    ucc_tl_lib_attr_t *attr = ucc_derived_of(base_attr, ucc_tl_lib_attr_t);

    /*
     * MULTIPLE: cl/basic takes the lowest thread mode of its TLs, so a
     * lower one would lower the whole library. A context created for
     * UCC_THREAD_MULTIPLE is refused instead (tl_sucg_context.c), which
     * drops only this TL. The group exchange runs as service collectives.
     */
    attr->super.flags            = UCC_BASE_LIB_FLAG_SERVICE_TEAM_REQUIRED;
    attr->super.attr.thread_mode = UCC_THREAD_MULTIPLE;
    attr->super.attr.coll_types  = UCC_TL_SUCG_SUPPORTED_COLLS;
    if (base_attr->mask & UCC_BASE_LIB_ATTR_FIELD_MIN_TEAM_SIZE) {
        attr->super.min_team_size = 1;
    }
    if (base_attr->mask & UCC_BASE_LIB_ATTR_FIELD_MAX_TEAM_SIZE) {
        attr->super.max_team_size = UCC_RANK_MAX;
    }
    return UCC_OK;
}

ucc_status_t ucc_tl_sucg_get_lib_properties(ucc_base_lib_properties_t *prop)
{
    prop->default_team_size = 2;
    prop->min_team_size     = 1;
    prop->max_team_size     = UCC_RANK_MAX;
    return UCC_OK;
}
