/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * FNV-1a over the bytes of a packed key: the hash of srqud's khash tables
 * (peers by address, address handles by remote port).
 */

#ifndef UCT_SRQUD_HASH_H_
#define UCT_SRQUD_HASH_H_

#include <stddef.h>
#include <stdint.h>


static inline uint32_t uct_srqud_hash_fnv1a(const void *key, size_t length)
{
    const uint8_t *p = (const uint8_t*)key;
    uint32_t h       = 2166136261u;
    size_t i;

    for (i = 0; i < length; ++i) {
        h = (h ^ p[i]) * 16777619u;
    }
    return h;
}

#endif
