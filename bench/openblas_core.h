/*
 * openblas_core.h: a fair OpenBLAS anchor for the benchmarks that compare
 * with it (header-only). OpenBLAS 0.3.21's DYNAMIC_ARCH does not know recent
 * CPU models and may fall back to its Prescott (SSE3) kernels, 3-4x slower
 * than its SkylakeX or Haswell ones; fix_openblas_core re-executes the
 * program with OPENBLAS_CORETYPE set to the CPU's vector unit in that case.
 */
#ifndef TEX_BENCH_OPENBLAS_CORE_H
#define TEX_BENCH_OPENBLAS_CORE_H

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Re-executes the program with OPENBLAS_CORETYPE set when OpenBLAS picked a
 * core below what the CPU supports (see the top comment); returns otherwise. */
static inline void fix_openblas_core(char **argv)
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
            argv[0], core, want);
    setenv("OPENBLAS_CORETYPE", want, 1);
    execv("/proc/self/exe", argv);
}

#endif
