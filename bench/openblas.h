/*
 * openblas.h: OpenBLAS as the benchmarks' anchor (header-only). OpenBLAS
 * 0.3.21's DYNAMIC_ARCH does not know recent CPU models and falls back to
 * its Prescott (SSE3) kernels, several times slower than its AVX2 / AVX-512
 * ones; fix_openblas_core reruns the program with the right core forced, so
 * that tex is compared with OpenBLAS at its best.
 */
#ifndef TEX_BENCH_OPENBLAS_H
#define TEX_BENCH_OPENBLAS_H

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Re-executes the program with OPENBLAS_CORETYPE set when OpenBLAS picked a
 * core below what the CPU supports (see the top comment); returns otherwise. */
static inline void fix_openblas_core(const char *prog, char **argv)
{
    const char *core = openblas_get_corename();
    const char *want = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                       : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                         : NULL;
    if (getenv("OPENBLAS_CORETYPE") || !want || !core || strcmp(core, "Prescott") != 0)
        return;
    fprintf(stderr,
            "%s: OpenBLAS chose its %s kernels on this CPU; rerunning with "
            "OPENBLAS_CORETYPE=%s\n",
            prog, core, want);
    setenv("OPENBLAS_CORETYPE", want, 1);
    execv("/proc/self/exe", argv);
}

#endif
