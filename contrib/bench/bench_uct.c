/**
 * Copyright (c) srqud developers. See COPYING for license information.
 */

#include "bench_uct.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

ucs_status_t ucs_async_context_create(ucs_async_mode_t mode,
                                      ucs_async_context_t **async_p);


void bench_check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        fprintf(stderr, "bench: %s: %s\n", what, ucs_status_string(status));
        exit(1);
    }
}


double bench_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}


/* Does this md serve ctx->tl on ctx->dev? */
static int bench_md_has_tl(const bench_ctx_t *ctx, uct_md_h md)
{
    uct_tl_resource_desc_t *tls;
    unsigned num_tls, k;
    int found = 0;

    if (uct_md_query_tl_resources(md, &tls, &num_tls) != UCS_OK) {
        return 0;
    }
    for (k = 0; k < num_tls; ++k) {
        found |= !strcmp(tls[k].tl_name, ctx->tl) &&
                 !strcmp(tls[k].dev_name, ctx->dev);
    }
    uct_release_tl_resource_list(tls);
    return found;
}


void bench_ctx_open(bench_ctx_t *ctx, const char *tl, const char *dev)
{
    uct_component_h *components;
    unsigned num_components, i, j;
    uct_md_resource_desc_t *mds;
    uct_component_attr_t cattr;
    uct_md_config_t *md_config;
    const char *colon = strchr(dev, ':');
    char md_name[64];
    uct_md_h md;

    /* an IB device's md is named after it; another device (lo for tcp)
     * is looked for in every md */
    snprintf(md_name, sizeof(md_name), "%.*s",
             (int)(colon ? (colon - dev) : 0), dev);
    ctx->tl  = tl;
    ctx->dev = dev;
    ctx->md  = NULL;
    bench_check(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                         &ctx->async), "async context");
    bench_check(uct_worker_create(ctx->async, UCS_THREAD_MODE_SINGLE,
                                  &ctx->worker), "worker");

    /* the md that lists the transport: srqud has its own component, ud and
     * rc belong to ib, both name the md after the device */
    bench_check(uct_query_components(&components, &num_components),
                "components");
    for (i = 0; (i < num_components) && (ctx->md == NULL); ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        bench_check(uct_component_query(components[i], &cattr), "component");
        mds                = calloc(cattr.md_resource_count + 1, sizeof(*mds));
        cattr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        cattr.md_resources = mds;
        bench_check(uct_component_query(components[i], &cattr), "component");
        for (j = 0; (j < cattr.md_resource_count) && (ctx->md == NULL); ++j) {
            if (md_name[0] && strcmp(mds[j].md_name, md_name)) {
                continue;
            }
            bench_check(uct_md_config_read(components[i], NULL, NULL,
                                           &md_config), "md config");
            if (uct_md_open(components[i], mds[j].md_name, md_config, &md) ==
                UCS_OK) {
                if (bench_md_has_tl(ctx, md)) {
                    ctx->md = md;
                } else {
                    uct_md_close(md);
                }
            }
            uct_config_release(md_config);
        }
        free(mds);
    }
    uct_release_component_list(components);
    if (ctx->md == NULL) {
        fprintf(stderr, "bench: no %s on %s\n", tl, dev);
        exit(1);
    }
}


void bench_ctx_worker(bench_ctx_t *ctx, const bench_ctx_t *owner)
{
    ctx->tl  = owner->tl;
    ctx->dev = owner->dev;
    ctx->md  = owner->md;
    bench_check(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                         &ctx->async), "async context");
    bench_check(uct_worker_create(ctx->async, UCS_THREAD_MODE_SINGLE,
                                  &ctx->worker), "worker");
}


bench_mem_t bench_mem_read(void)
{
    char line[512];
    unsigned long v;
    bench_mem_t m = {0, 0, 0, 0, 0};
    int in_q = 0;
    FILE *f;

    f = fopen("/proc/self/status", "r");
    while ((f != NULL) && (fgets(line, sizeof(line), f) != NULL)) {
        sscanf(line, "VmRSS: %lu kB", &m.rss_kb);
        sscanf(line, "VmPin: %lu kB", &m.pin_kb);
    }
    if (f != NULL) {
        fclose(f);
    }

    f = fopen("/proc/self/smaps", "r");
    while ((f != NULL) && (fgets(line, sizeof(line), f) != NULL)) {
        if (strchr(line, '-') && (strchr(line, ':') == NULL ||
                                  strstr(line, " ") < strchr(line, ':'))) {
            /* a mapping header: "start-end perms offset dev inode path" */
            in_q = (strstr(line, "/dev/infiniband/uverbs") != NULL);
        } else if (in_q && (sscanf(line, "Size: %lu kB", &v) == 1)) {
            m.qmap_kb += v;
        } else if (sscanf(line, "Rss: %lu kB", &v) == 1) {
            if (in_q) {
                m.qrss_kb += v;
            } else {
                m.rss_other_kb += v;
            }
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return m;
}


void bench_iface_open(bench_ctx_t *ctx, bench_iface_t *s)
{
    uct_iface_config_t *config;
    uct_iface_params_t params;

    bench_check(uct_md_iface_config_read(ctx->md, ctx->tl, NULL, NULL,
                                         &config), "iface config");
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = ctx->tl;
    params.mode.device.dev_name = ctx->dev;
    bench_check(uct_iface_open(ctx->md, ctx->worker, &params, config,
                               &s->iface), "iface open");
    uct_config_release(config);
    uct_iface_progress_enable(s->iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    bench_check(uct_iface_query(s->iface, &s->attr), "iface query");
    bench_check(uct_iface_get_device_address(s->iface,
                                             (uct_device_addr_t*)s->dev_addr),
                "device address");
    if (s->attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) {
        bench_check(uct_iface_get_address(s->iface,
                                          (uct_iface_addr_t*)s->iface_addr),
                    "iface address");
    }
}


uct_srqud_iface_stats_t bench_srqud_stats(const bench_ctx_t *ctx,
                                          uct_iface_h iface)
{
    uct_srqud_iface_stats_get_func_t get = NULL;
    uct_srqud_iface_stats_t st;
    void *h;

    memset(&st, 0, sizeof(st));
    if (strcmp(ctx->tl, "srqud")) {
        return st;
    }
    h = dlopen("libuct_srqud.so.0", RTLD_NOLOAD | RTLD_LAZY);
    if (h != NULL) {
        get = (uct_srqud_iface_stats_get_func_t)dlsym(h,
                                                  "uct_srqud_iface_stats_get");
        if (get != NULL) {
            get(iface, &st);
        }
        dlclose(h);
    }
    return st;
}


void bench_apply_env(const char *prefix)
{
    extern char **environ;
    size_t skip = strlen(prefix);
    char **e, name[256];
    const char *eq;

    for (e = environ; *e != NULL; ++e) {
        if (strncmp(*e, prefix, skip) || strncmp(*e + skip, "UCX_", 4) ||
            ((eq = strchr(*e, '=')) == NULL)) {
            continue;
        }
        snprintf(name, sizeof(name), "%.*s", (int)(eq - *e - skip), *e + skip);
        setenv(name, eq + 1, 1);
    }
}
