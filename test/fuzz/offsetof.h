/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Included first in every file of the fuzz build: UCX's ucs_offsetof is
 * the classic ((type*)0)->member, which UBSan reports as a null pointer
 * use on every ucs_queue_for_each. The standard offsetof computes the
 * same value without it, so the sanitizer stays on for everything else.
 */
#include <stddef.h>
#include <ucs/sys/compiler_def.h>

#undef ucs_offsetof
#define ucs_offsetof(_type, _member) offsetof(_type, _member)
