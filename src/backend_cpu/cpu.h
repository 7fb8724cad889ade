/*
 * The CPU backend: C99 + OpenMP code generation (codegen_c.c), compilation
 * with the system C compiler into a private cache (jit.c), and calls through
 * libffi (call.c). Private to src/backend_cpu and the runtime's registry.
 */
#ifndef TEX_BACKEND_CPU_CPU_H
#define TEX_BACKEND_CPU_CPU_H

#include "rt/backend.h"

/* C99 + OpenMP source of f: standard includes, small helpers, and
 * `int NAME(...)` with the entry-point signature of backend.h. threads > 0
 * fixes the OpenMP thread count; libm_math: vector lanes call libm's math
 * functions (-strict-float) rather than tex's vector math. malloc'ed; NULL
 * with an error in f->ctx. */
char *texi_cpu_emit(const tex_func *f, int threads, bool libm_math);

/* The header of tex_kernel_export: the entry point's prototype. malloc'ed. */
char *texi_cpu_emit_header(const tex_func *f);

extern const texi_backend texi_backend_cpu; /* targets "cpu" and "c" */

#endif
