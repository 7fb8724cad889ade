/*
 * The CUDA backend: CUDA C code generation (codegen_cuda.c, expressions in
 * codegen_cuda_expr.c) and the backend vtable (backend.c). Private to
 * src/backend_cuda and the runtime's registry.
 */
#ifndef TEX_BACKEND_CUDA_CUDA_H
#define TEX_BACKEND_CUDA_CUDA_H

#include "lower/backend.h"

/* CUDA C source of f: a launch-plan comment, includes, device helpers and
 * one `extern "C" __global__` kernel per top-level loop nest (NAME_kernel0,
 * NAME_kernel1, ...). malloc'ed; NULL with an error in f->ctx. */
char *texi_cuda_emit(const tex_func *f);

extern const texi_backend texi_backend_cuda; /* target "cuda" */

#endif
