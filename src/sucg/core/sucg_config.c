/*
 * SUCG_* environment variables. Every variable is parsed strictly: a value
 * that is not entirely understood is an error naming the variable, never
 * silently ignored or truncated (strtoul("12x") would give 12).
 *
 * Until the library had one name the variables were called UCG_*; job
 * scripts set them, so each is still read under that name when the SUCG_
 * one is unset (the old name is the new one without its leading 'S').
 */
#include "sucg/core/sucg_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static const char *sucg_algo_names[SUCG_ALLGATHER_LAST] = {
    [SUCG_ALLGATHER_AUTO]               = "auto",
    [SUCG_ALLGATHER_RECURSIVE_DOUBLING] = "recursive_doubling",
    [SUCG_ALLGATHER_RING]               = "ring",
    [SUCG_ALLGATHER_P2P_RD]             = "p2p_rd",
    [SUCG_ALLGATHER_P2P_RING]           = "p2p_ring"
};

/* SUCG_* names that belong to other parts: not reported as unknown */
static const char *sucg_foreign_prefixes[] = {
    "SUCG_MPI_",    /* the MPI glue (src/sucg/mpi) */
    "SUCG_TEST_",   /* the test programs (test/sucg) */
    NULL
};

static const char *sucg_known_vars[] = {
    "SUCG_ALLGATHER_ALGO", "SUCG_ALLGATHER_ZCOPY_THRESH", "SUCG_RING_MIN_BYTES",
    "SUCG_RING_MIN_RANKS", "SUCG_GROUP_BUFFER_SIZE", "SUCG_RCACHE_MAX_ENTRIES",
    "SUCG_RCACHE_MAX_BYTES", "SUCG_RMA_ORDERING", "SUCG_FAULT_REG_FAIL",
    "SUCG_STAGED_STEP", "SUCG_ZCOPY_STEP", NULL
};

/* in the order of their enums */
static const char *const sucg_staged_names[]   = {"am", "put", "tail"};
static const char *const sucg_zstep_names[]    = {"auto", "put", "tag"};
static const char *const sucg_ordering_names[] = {"auto", "fence", "flush"};

const char *sucg_config_algo_name(sucg_allgather_algo_t algo)
{
    if ((unsigned)algo >= SUCG_ALLGATHER_LAST) {
        return NULL;
    }
    return sucg_algo_names[algo];
}

/* Decimal number with an optional K/M/G suffix (powers of 1024) */
static int sucg_parse_size(const char *s, size_t *v)
{
    unsigned long long n;
    char *end;
    int shift = 0;

    while (isspace((unsigned char)*s)) {
        ++s;
    }
    if (!isdigit((unsigned char)*s)) {
        return -1;   /* also rejects "-1", which strtoull would accept */
    }
    errno = 0;
    n     = strtoull(s, &end, 10);
    if (errno != 0) {
        return -1;
    }
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; ++end; break;
    case 'M': shift = 20; ++end; break;
    case 'G': shift = 30; ++end; break;
    default:  break;
    }
    if ((shift > 0) && (toupper((unsigned char)*end) == 'B')) {
        ++end;
    }
    while (isspace((unsigned char)*end)) {
        ++end;
    }
    if ((*end != '\0') || (n > (SIZE_MAX >> shift))) {
        return -1;
    }
    *v = (size_t)n << shift;
    return 0;
}

/* Former name of a SUCG_* variable */
static const char *sucg_cfg_old_name(const char *name)
{
    return name + 1;
}

/*
 * Value of variable @a name, or of its former UCG_* name when it is unset
 * (NULL if neither is set); @a name_p gets the name the value came from, so
 * errors name what the user actually wrote.
 */
static const char *sucg_cfg_get(sucg_config_getenv_t get, void *arg,
                                const char *name, const char **name_p)
{
    const char *s = get(name, arg);

    *name_p = name;
    if (s == NULL) {
        *name_p = sucg_cfg_old_name(name);
        s       = get(*name_p, arg);
    }
    return s;
}

#define SUCG_CFG_ERR(_fmt, ...) \
    do { \
        snprintf(err, err_len, _fmt, ## __VA_ARGS__); \
        return UCS_ERR_INVALID_PARAM; \
    } while (0)

static ucs_status_t sucg_cfg_size(sucg_config_getenv_t get, void *arg,
                                  const char *name, size_t min, size_t max,
                                  size_t *v, char *err, size_t err_len)
{
    const char *s = sucg_cfg_get(get, arg, name, &name);
    size_t n;

    if (s == NULL) {
        return UCS_OK;   /* unset: *v keeps the default */
    }
    if (sucg_parse_size(s, &n) != 0) {
        SUCG_CFG_ERR("%s='%s': invalid value, expected a non-negative number "
                     "with an optional K, M or G suffix", name, s);
    }
    if ((n < min) || (n > max)) {
        SUCG_CFG_ERR("%s='%s': out of range [%zu, %zu]", name, s, min, max);
    }
    *v = n;
    return UCS_OK;
}

/* One of @a names[0..n-1] (any case), as its index in @a i; -1 if unset */
static ucs_status_t sucg_cfg_choice(sucg_config_getenv_t get, void *arg,
                                    const char *name, const char *const *names,
                                    int n, int *i, char *err, size_t err_len)
{
    const char *s = sucg_cfg_get(get, arg, name, &name);
    char list[128] = "";
    int k;

    *i = -1;
    if (s == NULL) {
        return UCS_OK;
    }
    for (k = 0; k < n; ++k) {
        if (!strcasecmp(s, names[k])) {
            *i = k;
            return UCS_OK;
        }
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
                 (k > 0) ? ", " : "", names[k]);
    }
    SUCG_CFG_ERR("%s='%s': invalid value, expected one of %s", name, s, list);
}

ucs_status_t sucg_config_parse(sucg_config_t *c, sucg_config_getenv_t get,
                               void *arg, char *err, size_t err_len)
{
    const char *s, *name;
    size_t n, len;
    int i;
    ucs_status_t status;

    c->allgather_algo     = SUCG_ALLGATHER_AUTO;
    c->zcopy_thresh       = SUCG_ZCOPY_THRESH_AUTO;
    c->ring_min_bytes     = 1048576;
    c->ring_min_ranks     = 33;
    c->group_buffer_size  = 1048576;
    c->rcache_max_entries = 64;
    c->rcache_max_bytes   = (size_t)1 << 30;
    c->rma_ordering       = SUCG_RMA_ORDERING_AUTO;
    c->fault_reg_fail     = 0;
    c->staged_step        = SUCG_STAGED_STEP_AM;
    c->zcopy_step         = SUCG_ZCOPY_STEP_AUTO;

    status = sucg_cfg_choice(get, arg, "SUCG_STAGED_STEP", sucg_staged_names,
                             ucs_static_array_size(sucg_staged_names), &i,
                             err, err_len);
    if (status != UCS_OK) {
        return status;
    }
    c->staged_step = (i < 0) ? c->staged_step : (sucg_staged_step_t)i;
    status = sucg_cfg_choice(get, arg, "SUCG_ZCOPY_STEP", sucg_zstep_names,
                             ucs_static_array_size(sucg_zstep_names), &i,
                             err, err_len);
    if (status != UCS_OK) {
        return status;
    }
    c->zcopy_step = (i < 0) ? c->zcopy_step : (sucg_zcopy_step_t)i;
    status = sucg_cfg_choice(get, arg, "SUCG_RMA_ORDERING", sucg_ordering_names,
                             ucs_static_array_size(sucg_ordering_names), &i,
                             err, err_len);
    if (status != UCS_OK) {
        return status;
    }
    c->rma_ordering = (i < 0) ? c->rma_ordering : (sucg_rma_ordering_t)i;

    s = sucg_cfg_get(get, arg, "SUCG_ALLGATHER_ALGO", &name);
    if (s != NULL) {
        for (i = 0; i < SUCG_ALLGATHER_LAST; ++i) {
            if (!strcasecmp(s, sucg_algo_names[i])) {
                break;
            }
        }
        if (!strcasecmp(s, "rd")) {
            i = SUCG_ALLGATHER_RECURSIVE_DOUBLING;
        }
        if (i == SUCG_ALLGATHER_LAST) {
            SUCG_CFG_ERR("%s='%s': invalid value, expected one of auto, "
                         "recursive_doubling, ring, p2p_rd, p2p_ring", name,
                         s);
        }
        c->allgather_algo = (sucg_allgather_algo_t)i;
    }

#define SUCG_CFG_SIZE(_name, _min, _max, _field) \
    n      = _field; \
    status = sucg_cfg_size(get, arg, _name, _min, _max, &n, err, err_len); \
    if (status != UCS_OK) { \
        return status; \
    } \
    _field = n;

    s = sucg_cfg_get(get, arg, "SUCG_ALLGATHER_ZCOPY_THRESH", &name);
    if ((s == NULL) || strcasecmp(s, "auto")) {
        n      = c->zcopy_thresh;
        status = sucg_cfg_size(get, arg, "SUCG_ALLGATHER_ZCOPY_THRESH", 0,
                               SIZE_MAX - 1, &n, err, err_len);
        if (status != UCS_OK) {
            /* the size parser knows sizes only */
            len = strnlen(err, err_len);
            snprintf(err + len, err_len - len, ", or auto");
            return status;
        }
        c->zcopy_thresh = n;
    }
    SUCG_CFG_SIZE("SUCG_RING_MIN_BYTES", 0, SIZE_MAX, c->ring_min_bytes);
    SUCG_CFG_SIZE("SUCG_RING_MIN_RANKS", 0, 1u << 30, c->ring_min_ranks);
    /* the buffer is one registration: keep it sane */
    SUCG_CFG_SIZE("SUCG_GROUP_BUFFER_SIZE", 0, (size_t)1 << 32,
                  c->group_buffer_size);
    SUCG_CFG_SIZE("SUCG_RCACHE_MAX_ENTRIES", 0, 1u << 20,
                  c->rcache_max_entries);
    SUCG_CFG_SIZE("SUCG_RCACHE_MAX_BYTES", 0, SIZE_MAX, c->rcache_max_bytes);
    /* fault injection for tests: the percentage of user-buffer
     * registrations made to fail, as ucp_mem_map does under a memlock limit */
    SUCG_CFG_SIZE("SUCG_FAULT_REG_FAIL", 0, 100, c->fault_reg_fail);
#undef SUCG_CFG_SIZE
    return UCS_OK;
}

static const char *sucg_config_getenv(const char *name, void *arg)
{
    return getenv(name);
}

/* Whether environment entry @a e ("NAME=value") sets variable @a name */
static int sucg_env_sets(const char *e, const char *name)
{
    size_t l = strlen(name);

    return !strncmp(e, name, l) && (e[l] == '=');
}

static int sucg_env_in(const char *e, const char **prefixes)
{
    int i;

    for (i = 0; prefixes[i] != NULL; ++i) {
        if (!strncmp(e, prefixes[i], strlen(prefixes[i]))) {
            return 1;
        }
    }
    return 0;
}

/*
 * Warn about environment entry @a e if it is in our namespaces (SUCG_*,
 * former UCG_*) but no variable reads it: a misspelled variable would
 * otherwise be silently ignored. A former name hidden by the new one is
 * reported too.
 */
static void sucg_config_check_env(const char *e)
{
    const char *eq = strchr(e, '=');
    int len        = (eq != NULL) ? (int)(eq - e) : 64;
    int i;

    if (!strncmp(e, "SUCG_", 5)) {
        if (sucg_env_in(e, sucg_foreign_prefixes)) {
            return;
        }
        for (i = 0; sucg_known_vars[i] != NULL; ++i) {
            if (sucg_env_sets(e, sucg_known_vars[i])) {
                return;
            }
        }
    } else if (!strncmp(e, "UCG_", 4)) {
        for (i = 0; sucg_known_vars[i] != NULL; ++i) {
            if (!sucg_env_sets(e, sucg_cfg_old_name(sucg_known_vars[i]))) {
                continue;
            }
            if (getenv(sucg_known_vars[i]) != NULL) {
                sucg_warn("%.*s ignored: %s is set", len, e,
                          sucg_known_vars[i]);
            }
            return;
        }
    } else {
        return;
    }
    sucg_warn("unknown variable %.*s ignored", len, e);
}

ucs_status_t sucg_config_read(sucg_config_t *config)
{
    char err[256];
    ucs_status_t status;
    char **e;

    status = sucg_config_parse(config, sucg_config_getenv, NULL, err,
                               sizeof(err));
    if (status != UCS_OK) {
        sucg_error("%s", err);
        return status;
    }
    for (e = environ; (e != NULL) && (*e != NULL); ++e) {
        sucg_config_check_env(*e);
    }
    return UCS_OK;
}

void sucg_config_dump(const sucg_config_t *c, FILE *f)
{
    fprintf(f, "SUCG_ALLGATHER_ALGO=%s\n", sucg_algo_names[c->allgather_algo]);
    if (c->zcopy_thresh == SUCG_ZCOPY_THRESH_AUTO) {
        fprintf(f, "SUCG_ALLGATHER_ZCOPY_THRESH=auto\n");
    } else {
        fprintf(f, "SUCG_ALLGATHER_ZCOPY_THRESH=%zu\n", c->zcopy_thresh);
    }
    fprintf(f, "SUCG_RING_MIN_BYTES=%zu\n", c->ring_min_bytes);
    fprintf(f, "SUCG_RING_MIN_RANKS=%u\n", c->ring_min_ranks);
    fprintf(f, "SUCG_GROUP_BUFFER_SIZE=%zu\n", c->group_buffer_size);
    fprintf(f, "SUCG_RCACHE_MAX_ENTRIES=%u\n", c->rcache_max_entries);
    fprintf(f, "SUCG_RCACHE_MAX_BYTES=%zu\n", c->rcache_max_bytes);
    fprintf(f, "SUCG_RMA_ORDERING=%s\n", sucg_ordering_names[c->rma_ordering]);
    fprintf(f, "SUCG_STAGED_STEP=%s\n", sucg_staged_names[c->staged_step]);
    fprintf(f, "SUCG_ZCOPY_STEP=%s\n", sucg_zstep_names[c->zcopy_step]);
    fprintf(f, "SUCG_FAULT_REG_FAIL=%u\n", c->fault_reg_fail);
}

size_t sucg_config_zcopy_thresh(const sucg_config_t *c, int one_msg)
{
    if (c->zcopy_thresh != SUCG_ZCOPY_THRESH_AUTO) {
        return c->zcopy_thresh;
    }
    return one_msg ? SUCG_ZCOPY_THRESH_AM : SUCG_ZCOPY_THRESH_PUT;
}

sucg_allgather_algo_t sucg_config_select(const sucg_config_t *c,
                                         sucg_allgather_algo_t requested,
                                         size_t count, int size)
{
    sucg_allgather_algo_t algo = requested;

    if (algo == SUCG_ALLGATHER_AUTO) {
        algo = c->allgather_algo;
    }
    if (algo == SUCG_ALLGATHER_AUTO) {
        algo = ((count >= c->ring_min_bytes) &&
                ((unsigned)size >= c->ring_min_ranks)) ?
               SUCG_ALLGATHER_RING : SUCG_ALLGATHER_RECURSIVE_DOUBLING;
    }
    return algo;
}
