/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Included first in every srqud source of the fuzz_path build (after
 * offsetof.h): what makes a run of srqud a function of the input alone.
 *
 * - The clock: srqud reads ucs_get_time() (the CPU's cycle counter); here
 *   it reads the target's virtual clock, which only the input moves
 *   (timeouts, acknowledgement delays, idle passive eps).
 * - Randomness: connection tokens, zero-copy Q_Keys, rkeys and the
 *   interface's incarnation numbers come from getrandom() and
 *   ucs_generate_uuid(); here from a generator the target reseeds per
 *   input. The target reads tokens and Q_Keys from what srqud sends, as a
 *   peer would, never from these.
 *
 * ucs/time/time.h is included before the macro, so that its inline
 * definition keeps its name; srqud's calls after it go to the target.
 */
#ifndef SRQUD_FUZZ_PATH_HOOKS_H_
#define SRQUD_FUZZ_PATH_HOOKS_H_

/* system headers come in here first: as srqud_module.c would have them
 * (dladdr) */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/random.h>
#include <ucs/sys/sys.h>
#include <ucs/time/time.h>

ucs_time_t fuzz_path_clock(void);
uint64_t fuzz_path_uuid(uint64_t seed);
ssize_t fuzz_path_getrandom(void *buf, size_t len, unsigned flags);

#define ucs_get_time()                 fuzz_path_clock()
#define ucs_generate_uuid(_seed)       fuzz_path_uuid(_seed)
#define getrandom(_buf, _len, _flags)  fuzz_path_getrandom(_buf, _len, _flags)

#endif
