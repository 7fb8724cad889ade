/*
 * The CUDA backend: CUDA C code generation (codegen_cuda*.c, the CUDA
 * target of src/codegen_c) and the backend vtable (backend.c). Private to
 * src/backend_cuda and the runtime's registry.
 */
#ifndef TEX_BACKEND_CUDA_CUDA_H
#define TEX_BACKEND_CUDA_CUDA_H

#include "rt/backend.h"
#include "rt/launch_plan.h"

/* CUDA C source of the device module m of f: a launch-plan comment,
 * includes, device helpers and one `extern "C" __global__` kernel per
 * m->kernels[i] (named m->kernels[i].name). Every kernel takes the entry
 * point's arguments (backend.h) followed by one pointer per workspace
 * buffer. malloc'ed; NULL with an error in f->ctx. */
char *texi_cuda_emit(const tex_func *f, const texi_device_module *m);

/* The state a "cuda" kernel keeps in tex_kernel.impl (every kind of cuda
 * target, "-emit-only" included). */
typedef struct {
    texi_launch_plan plan;
    char *ptx;        /* NVRTC's PTX, or NULL (no NVRTC, or not compiled yet) */
    char arch[16];    /* "sm_80", ... : the architecture compiled for */
    void *module;     /* CUmodule of a loaded kernel, or NULL */
    void **functions; /* CUfunction per plan kernel, or NULL */
} texi_cuda_kernel;

/* The launch plan of a kernel built for any "cuda" target (NULL for others). */
const texi_launch_plan *texi_cuda_kernel_plan(const tex_kernel *k);

extern const texi_backend texi_backend_cuda; /* target "cuda" */

#endif
