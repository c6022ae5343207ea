/*
 * The MPI glue's table of where sucg runs MPI_Allgather (sucg_mpi_tune.h).
 */
#include "sucg/mpi/sucg_mpi_tune.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

static int sucg_mpi_tune_fail(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    return -1;
}

/* "123", "64K", "1M", "2G", or "inf" (when @a inf_ok); @a end past it */
static int sucg_mpi_tune_bytes(const char *s, int inf_ok, size_t *v,
                               const char **end)
{
    unsigned long long x;
    unsigned shift = 0;
    char *e;

    if (inf_ok && !strncmp(s, "inf", 3)) {
        *v   = (size_t)-1;
        *end = s + 3;
        return 0;
    }
    if ((*s < '0') || (*s > '9')) {
        return -1;
    }
    errno = 0;
    x     = strtoull(s, &e, 10);
    if (errno != 0) {
        return -1;
    }
    switch (*e) {
    case 'k': case 'K': shift = 10; ++e; break;
    case 'm': case 'M': shift = 20; ++e; break;
    case 'g': case 'G': shift = 30; ++e; break;
    }
    if (x > ((unsigned long long)SIZE_MAX >> shift)) {
        return -1;
    }
    *v   = (size_t)(x << shift);
    *end = e;
    return 0;
}

/* "*" or "[2,4-8]" */
static int sucg_mpi_tune_sizes(const char *s, const char *stop,
                               sucg_mpi_tune_range_t *r)
{
    long lo, hi;
    char *e;

    r->nsizes = 0;
    if ((stop - s == 1) && (*s == '*')) {
        return 0;
    }
    if ((*s != '[') || (stop[-1] != ']')) {
        return -1;
    }
    ++s;
    while (s < stop - 1) {
        if (r->nsizes == SUCG_MPI_TUNE_MAX_SIZES) {
            return -1;
        }
        /* digits only: strtol would take a sign or spaces */
        if (!isdigit((unsigned char)*s)) {
            return -1;
        }
        lo = strtol(s, &e, 10);
        if ((lo < 1) || (lo > INT_MAX)) {
            return -1;
        }
        hi = lo;
        if (*e == '-') {
            s = e + 1;
            if (!isdigit((unsigned char)*s)) {
                return -1;
            }
            hi = strtol(s, &e, 10);
            if ((hi < lo) || (hi > INT_MAX)) {
                return -1;
            }
        }
        r->size_lo[r->nsizes] = (int)lo;
        r->size_hi[r->nsizes] = (int)hi;
        ++r->nsizes;
        if ((*e == ',') && (e + 1 < stop - 1)) {
            ++e;
        } else if (e != stop - 1) {
            return -1;
        }
        s = e;
    }
    return (r->nsizes > 0) ? 0 : -1;
}

/* one "TRANSPORT:SIZES:LO-HI" in [s, stop) */
static int sucg_mpi_tune_range(const char *s, const char *stop,
                               sucg_mpi_tune_range_t *r, char *err,
                               size_t err_len)
{
    const char *c1, *c2, *e;
    int len = (int)(stop - s);

    c1 = memchr(s, ':', stop - s);
    c2 = (c1 != NULL) ? memchr(c1 + 1, ':', stop - c1 - 1) : NULL;
    if (c2 == NULL) {
        return sucg_mpi_tune_fail(err, err_len, "'%.*s': not "
                                  "TRANSPORT:[SIZES]:LO-HI", len, s);
    }
    if ((c1 == s) || (c1 - s >= SUCG_MPI_TUNE_NAME_LEN)) {
        return sucg_mpi_tune_fail(err, err_len, "'%.*s': bad transport name",
                                  len, s);
    }
    memcpy(r->name, s, c1 - s);
    r->name[c1 - s] = '\0';
    r->tl = !strcmp(r->name, "*")   ? SUCG_MPI_TUNE_TL_ANY :
            !strcmp(r->name, "shm") ? SUCG_MPI_TUNE_TL_SHM :
                                      SUCG_MPI_TUNE_TL_NAMED;
    if (sucg_mpi_tune_sizes(c1 + 1, c2, r) != 0) {
        return sucg_mpi_tune_fail(err, err_len, "'%.*s': communicator sizes "
                                  "are '*' or like [2,4-8]", len, s);
    }
    if ((sucg_mpi_tune_bytes(c2 + 1, 0, &r->lo, &e) != 0) || (*e != '-') ||
        (sucg_mpi_tune_bytes(e + 1, 1, &r->hi, &e) != 0) || (e != stop) ||
        (r->hi < r->lo)) {
        return sucg_mpi_tune_fail(err, err_len, "'%.*s': block bytes are "
                                  "LO-HI, e.g. 0-64K or 1M-inf", len, s);
    }
    return 0;
}

int sucg_mpi_tune_parse(const char *str, sucg_mpi_tune_t *t, char *err,
                        size_t err_len)
{
    const char *s = str, *stop;

    t->count = 0;
    while (*s != '\0') {
        stop = strchr(s, '#');
        if (stop == NULL) {
            stop = s + strlen(s);
        }
        if (stop > s) {
            if (t->count == SUCG_MPI_TUNE_MAX_RANGES) {
                t->count = 0;
                return sucg_mpi_tune_fail(err, err_len, "more than %d ranges",
                                          SUCG_MPI_TUNE_MAX_RANGES);
            }
            if (sucg_mpi_tune_range(s, stop, &t->r[t->count], err,
                                    err_len) != 0) {
                t->count = 0;
                return -1;
            }
            ++t->count;
        }
        s = (*stop == '#') ? stop + 1 : stop;
    }
    return 0;
}

sucg_mpi_tune_mask_t sucg_mpi_tune_match(const sucg_mpi_tune_t *t, int size,
                                         size_t bytes)
{
    sucg_mpi_tune_mask_t mask = 0;
    const sucg_mpi_tune_range_t *r;
    int i, k, in;

    for (i = 0; i < t->count; ++i) {
        r  = &t->r[i];
        in = (r->nsizes == 0);
        for (k = 0; k < r->nsizes; ++k) {
            in = in || ((size >= r->size_lo[k]) && (size <= r->size_hi[k]));
        }
        if (in && (bytes >= r->lo) && (bytes <= r->hi)) {
            mask |= (sucg_mpi_tune_mask_t)1 << i;
        }
    }
    return mask;
}

int sucg_mpi_tune_tl_is_shm(const char *name)
{
    static const char *shm[] = {"posix", "sysv", "xpmem", "cma", "knem",
                                "self"};
    size_t k;

    for (k = 0; k < sizeof(shm) / sizeof(shm[0]); ++k) {
        if (!strcmp(shm[k], name)) {
            return 1;
        }
    }
    return 0;
}

sucg_mpi_tune_mask_t sucg_mpi_tune_peer(const sucg_mpi_tune_t *t,
                                        const char *const *tls, int n)
{
    sucg_mpi_tune_mask_t mask = 0;
    const sucg_mpi_tune_range_t *r;
    int i, k, holds;

    for (i = 0; i < t->count; ++i) {
        r = &t->r[i];
        switch (r->tl) {
        case SUCG_MPI_TUNE_TL_ANY:
            holds = 1;
            break;
        case SUCG_MPI_TUNE_TL_SHM:
            holds = (n > 0);
            for (k = 0; k < n; ++k) {
                holds = holds && sucg_mpi_tune_tl_is_shm(tls[k]);
            }
            break;
        default:
            holds = 0;
            for (k = 0; k < n; ++k) {
                holds = holds || !strcmp(tls[k], r->name);
            }
            break;
        }
        if (holds) {
            mask |= (sucg_mpi_tune_mask_t)1 << i;
        }
    }
    return mask;
}
