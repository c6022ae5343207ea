/*
 * UCG_* environment variables. Every variable is parsed strictly: a value
 * that is not entirely understood is an error naming the variable, never
 * silently ignored or truncated (strtoul("12x") would give 12).
 */
#include "ucg/core/ucg_internal.h"

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

static const char *sucg_known_vars[] = {
    "UCG_ALLGATHER_ALGO", "UCG_ALLGATHER_ZCOPY_THRESH", "UCG_RING_MIN_BYTES",
    "UCG_RING_MIN_RANKS", "UCG_GROUP_BUFFER_SIZE", "UCG_RCACHE_MAX_ENTRIES",
    "UCG_RCACHE_MAX_BYTES", "UCG_RMA_ORDERING", NULL
};

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

#define SUCG_CFG_ERR(_fmt, ...) \
    do { \
        snprintf(err, err_len, _fmt, ## __VA_ARGS__); \
        return UCS_ERR_INVALID_PARAM; \
    } while (0)

static ucs_status_t sucg_cfg_size(sucg_config_getenv_t get, void *arg,
                                  const char *name, size_t min, size_t max,
                                  size_t *v, char *err, size_t err_len)
{
    const char *s = get(name, arg);
    size_t n;

    if (s == NULL) {
        return UCS_OK;
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

ucs_status_t sucg_config_parse(sucg_config_t *c, sucg_config_getenv_t get,
                               void *arg, char *err, size_t err_len)
{
    const char *s;
    size_t n;
    int i;
    ucs_status_t status;

    c->allgather_algo     = SUCG_ALLGATHER_AUTO;
    c->zcopy_thresh       = 4096;
    c->ring_min_bytes     = 1048576;
    c->ring_min_ranks     = 33;
    c->group_buffer_size  = 1048576;
    c->rcache_max_entries = 64;
    c->rcache_max_bytes   = (size_t)1 << 30;
    c->rma_ordering       = SUCG_RMA_ORDERING_AUTO;

    s = get("UCG_RMA_ORDERING", arg);
    if (s != NULL) {
        if (!strcasecmp(s, "auto")) {
            c->rma_ordering = SUCG_RMA_ORDERING_AUTO;
        } else if (!strcasecmp(s, "fence")) {
            c->rma_ordering = SUCG_RMA_ORDERING_FENCE;
        } else if (!strcasecmp(s, "flush")) {
            c->rma_ordering = SUCG_RMA_ORDERING_FLUSH;
        } else {
            SUCG_CFG_ERR("UCG_RMA_ORDERING='%s': invalid value, expected one "
                         "of auto, fence, flush", s);
        }
    }

    s = get("UCG_ALLGATHER_ALGO", arg);
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
            SUCG_CFG_ERR("UCG_ALLGATHER_ALGO='%s': invalid value, expected one "
                         "of auto, recursive_doubling, ring, p2p_rd, p2p_ring",
                         s);
        }
        c->allgather_algo = (sucg_allgather_algo_t)i;
    }

#define SUCG_CFG_SIZE(_name, _min, _max, _field) \
    status = sucg_cfg_size(get, arg, _name, _min, _max, &n, err, err_len); \
    if (status != UCS_OK) { \
        return status; \
    } \
    if (get(_name, arg) != NULL) { \
        _field = n; \
    }

    SUCG_CFG_SIZE("UCG_ALLGATHER_ZCOPY_THRESH", 0, SIZE_MAX, c->zcopy_thresh);
    SUCG_CFG_SIZE("UCG_RING_MIN_BYTES", 0, SIZE_MAX, c->ring_min_bytes);
    SUCG_CFG_SIZE("UCG_RING_MIN_RANKS", 0, 1u << 30, c->ring_min_ranks);
    /* the buffer is one registration: keep it sane */
    SUCG_CFG_SIZE("UCG_GROUP_BUFFER_SIZE", 0, (size_t)1 << 32,
                  c->group_buffer_size);
    SUCG_CFG_SIZE("UCG_RCACHE_MAX_ENTRIES", 0, 1u << 20,
                  c->rcache_max_entries);
    SUCG_CFG_SIZE("UCG_RCACHE_MAX_BYTES", 0, SIZE_MAX, c->rcache_max_bytes);
#undef SUCG_CFG_SIZE
    return UCS_OK;
}

static const char *sucg_config_getenv(const char *name, void *arg)
{
    return getenv(name);
}

ucs_status_t sucg_config_read(sucg_config_t *config)
{
    char err[256];
    ucs_status_t status;
    char **e;
    int i, known;

    status = sucg_config_parse(config, sucg_config_getenv, NULL, err,
                               sizeof(err));
    if (status != UCS_OK) {
        sucg_error("%s", err);
        return status;
    }

    /* A misspelled variable would otherwise be silently ignored */
    for (e = environ; (e != NULL) && (*e != NULL); ++e) {
        if (strncmp(*e, "UCG_", 4)) {
            continue;
        }
        known = 0;
        for (i = 0; sucg_known_vars[i] != NULL; ++i) {
            size_t l = strlen(sucg_known_vars[i]);
            if (!strncmp(*e, sucg_known_vars[i], l) && ((*e)[l] == '=')) {
                known = 1;
            }
        }
        if (!known) {
            sucg_warn("unknown variable %.*s ignored",
                      (int)(strchr(*e, '=') ? strchr(*e, '=') - *e : 64), *e);
        }
    }
    return UCS_OK;
}

void sucg_config_dump(const sucg_config_t *c, FILE *f)
{
    fprintf(f, "UCG_ALLGATHER_ALGO=%s\n", sucg_algo_names[c->allgather_algo]);
    fprintf(f, "UCG_ALLGATHER_ZCOPY_THRESH=%zu\n", c->zcopy_thresh);
    fprintf(f, "UCG_RING_MIN_BYTES=%zu\n", c->ring_min_bytes);
    fprintf(f, "UCG_RING_MIN_RANKS=%u\n", c->ring_min_ranks);
    fprintf(f, "UCG_GROUP_BUFFER_SIZE=%zu\n", c->group_buffer_size);
    fprintf(f, "UCG_RCACHE_MAX_ENTRIES=%u\n", c->rcache_max_entries);
    fprintf(f, "UCG_RCACHE_MAX_BYTES=%zu\n", c->rcache_max_bytes);
    fprintf(f, "UCG_RMA_ORDERING=%s\n",
            (const char*[]){"auto", "fence", "flush"}[c->rma_ordering]);
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
