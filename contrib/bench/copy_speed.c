/*
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * copy_speed: what memcpy costs per size on this machine, to tell an
 * emulator's copies from a CPU's. Under QEMU's TCG a CPU model with ERMS
 * makes glibc copy from its rep_movsb_threshold on with `rep movsb`, which
 * TCG runs far slower than the vector loop (contrib/softroce/README.md):
 *
 *   SRQUD_VM_CPU=max contrib/softroce/vm-run -- build/bench/copy_speed
 *   contrib/softroce/vm-run -- build/bench/copy_speed
 *
 * Prints per size the median of 5 rounds, microseconds a copy and MB/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_time.h"

#define ROUNDS 5

int main(void)
{
    static const size_t sizes[] = {1024, 4096, 8192, 16384, 65536, 262144};
    const size_t max = 262144;
    char *src = malloc(max), *dst = malloc(max + 4096);
    double t[ROUNDS];
    size_t i, size;
    long k, n;
    int r;

    if ((src == NULL) || (dst == NULL)) {
        fprintf(stderr, "copy_speed: out of memory\n");
        return 1;
    }
    memset(src, 1, max);
    memset(dst, 2, max + 4096);
    printf("%8s %12s %10s\n", "bytes", "us/copy", "MB/s");
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        size = sizes[i];
        n    = (long)(64 * 1024 * 1024 / size);  /* 64 MB a round */
        for (r = 0; r < ROUNDS; ++r) {
            double t0 = probe_now_sec();
            for (k = 0; k < n; ++k) {
                /* a moving destination, so the copy cannot be elided */
                memcpy(dst + (k & 63) * 64, src, size);
                __asm__ volatile("" : : "r"(dst) : "memory");
            }
            t[r] = (probe_now_sec() - t0) / n;
        }
        qsort(t, ROUNDS, sizeof(t[0]), probe_cmp_double);
        printf("%8zu %12.2f %10.0f\n", size, t[ROUNDS / 2] * 1e6,
               size / t[ROUNDS / 2] / 1e6);
    }
    free(src);
    free(dst);
    return 0;
}
