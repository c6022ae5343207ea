/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Loading: srqud registers its component and transport from the library
 * constructor, so that it works both when UCX dlopens it (its module list
 * up to 1.21, its module directory or UCX_PLUGIN_PATH from 1.22) and when
 * it is LD_PRELOADed into a UCX that does not know it.
 *
 * UCX checks nothing when it loads a module, and srqud is compiled against
 * UCX's internal structures (op tables, config and rcache layouts), which
 * change between releases: a module built for another UCX would be called
 * through shifted tables. So before registering anything the constructor
 * compares the running UCX with the one srqud was built for and, if they
 * differ, registers nothing and says so in one line. It must not fail the
 * load instead: UCX's loader would dlclose() a module whose constructor
 * already ran, and LD_PRELOAD cannot be refused at all.
 */

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE /* dladdr() */
#endif

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srqud_compat.h"
#include "srqud_md.h"

#include <uct/base/uct_component.h>
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>


extern uct_tl_t uct_srqud_tl; /* UCT_TL_DEFINE_ENTRY in srqud_iface.c */


typedef struct {
    unsigned   major, minor, patch;
    int        exact;      /* from libucp; else the minor from libuct */
    int        newer;      /* fingerprint only: this minor or newer */
} uct_srqud_ucx_version_t;


/* Functions libuct exports from a minor version on (checked against every
 * release tag from 1.13.1 to 1.22.0, and master for 1.23), newest last:
 * how a process without libucp tells which UCX it runs */
static const struct {
    unsigned   minor;
    const char *symbol;
} uct_srqud_ucx_marks[] = {
    {14, "uct_md_query_v2"},
    {15, "uct_sm_rkey_ptr"},
    {16, "uct_iface_is_reachable_params_valid"},
    {17, "uct_md_base_md_query"},
    {18, "uct_iface_fill_info_str_buf"},
    {19, "uct_rkey_unpack_v2"},
    {20, "uct_ep_get_device_ep"},
    {21, "uct_md_mem_elem_pack"},
    {22, "uct_ep_put_sgl_zcopy"},
    {23, "uct_ep_get_sgl_zcopy"}
};


#ifdef SRQUD_UCX_DEVEL_BUILD
static const int uct_srqud_ucx_devel_build = 1;
#else
static const int uct_srqud_ucx_devel_build = 0;
#endif


static int uct_srqud_module_same_dir(void *sym1, void *sym2)
{
    char path1[PATH_MAX], path2[PATH_MAX];
    Dl_info info1, info2;

    if (!dladdr(sym1, &info1) || !dladdr(sym2, &info2) ||
        (info1.dli_fname == NULL) || (info2.dli_fname == NULL)) {
        return 0;
    }

    ucs_strncpy_zero(path1, info1.dli_fname, sizeof(path1));
    ucs_strncpy_zero(path2, info2.dli_fname, sizeof(path2));
    return !strcmp(dirname(path1), dirname(path2));
}


/* The UCX this process runs: exact from libucp when the process has the
 * libucp of the same installation as libuct (every UCP and MPI user),
 * otherwise the minor version from libuct's exported functions */
static void uct_srqud_module_running(uct_srqud_ucx_version_t *ver)
{
    void (*get_version)(unsigned*, unsigned*, unsigned*);
    void *ucp, *uct;
    unsigned i;

    memset(ver, 0, sizeof(*ver));
    ver->major = 1;
    ver->minor = 13;

    ucp = dlopen("libucp.so.0", RTLD_LAZY | RTLD_NOLOAD);
    if (ucp != NULL) {
        get_version = (void (*)(unsigned*, unsigned*, unsigned*))
                      dlsym(ucp, "ucp_get_version");
        if ((get_version != NULL) &&
            uct_srqud_module_same_dir((void*)get_version,
                                      (void*)uct_component_register)) {
            get_version(&ver->major, &ver->minor, &ver->patch);
            ver->exact = 1;
        }
        dlclose(ucp); /* only the reference NOLOAD took */
        if (ver->exact) {
            return;
        }
    }

    uct = dlopen("libuct.so.0", RTLD_LAZY | RTLD_NOLOAD);
    for (i = 0; i < ucs_static_array_size(uct_srqud_ucx_marks); ++i) {
        if (dlsym((uct != NULL) ? uct : RTLD_DEFAULT,
                  uct_srqud_ucx_marks[i].symbol) == NULL) {
            break;
        }
        ver->minor = uct_srqud_ucx_marks[i].minor;
    }
    ver->newer = (i == ucs_static_array_size(uct_srqud_ucx_marks));
    if (uct != NULL) {
        dlclose(uct);
    }
}


static int uct_srqud_module_version_ok(void)
{
    uct_srqud_ucx_version_t ver;
    char running[64];

    uct_srqud_module_running(&ver);
    if (ver.exact) {
        if ((ver.major == SRQUD_UCX_BUILT_MAJOR) &&
            (ver.minor == SRQUD_UCX_BUILT_MINOR) &&
            (ver.patch == SRQUD_UCX_BUILT_PATCH)) {
            return 1;
        }
        snprintf(running, sizeof(running), "%u.%u.%u", ver.major, ver.minor,
                 ver.patch);
    } else {
        /* The patch level cannot be told without libucp. Nor can a build
         * against UCX's development branch (the newest minor srqud knows)
         * tell that minor from a later one: built on purpose with
         * --enable-ucx-devel, it takes the newest fingerprint as its own */
        if ((ver.minor == SRQUD_UCX_BUILT_MINOR) &&
            (!ver.newer || uct_srqud_ucx_devel_build)) {
            return 1;
        }
        snprintf(running, sizeof(running), "%u.%u%s", ver.major, ver.minor,
                 ver.newer ? " or later" : ".x");
    }

    /* UCX's logger is not used: its configuration is a struct whose layout
     * belongs to the running version */
    fprintf(stderr, "[srqud] built for UCX %d.%d.%d but this process runs "
            "UCX %s: srqud is not registered (rebuild it against this "
            "UCX)\n", SRQUD_UCX_BUILT_MAJOR, SRQUD_UCX_BUILT_MINOR,
            SRQUD_UCX_BUILT_PATCH, running);
    return 0;
}


/* A preloaded copy and a copy found in a module directory are two files,
 * two constructors: the first one registers */
static int uct_srqud_module_registered_elsewhere(void)
{
    uct_component_t *component;

    ucs_list_for_each(component, &uct_components_list, list) {
        if (!strcmp(component->name, UCT_SRQUD_TL_NAME)) {
            return 1;
        }
    }
    return 0;
}


static int uct_srqud_module_active;

/* static: a global constructor of two copies of the module (preloaded and
 * dlopened) would both resolve to the first copy's */
static UCS_F_CTOR void uct_srqud_init(void)
{
    if (!uct_srqud_module_version_ok() ||
        uct_srqud_module_registered_elsewhere()) {
        return;
    }

    uct_component_register(&uct_srqud_component);
    uct_tl_register(&uct_srqud_component, &uct_srqud_tl);
    uct_srqud_module_active = 1;
}


static UCS_F_DTOR void uct_srqud_cleanup(void)
{
    if (!uct_srqud_module_active) {
        return;
    }

    uct_tl_unregister(&uct_srqud_tl);
    uct_component_unregister(&uct_srqud_component);
}
