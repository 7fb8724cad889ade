/*
 * GPU lowering: from a lowered function (tex_func, target independent) to a
 * device module: the kernels a GPU backend emits, with their launch extents,
 * the global workspace buffers that live between kernels, and the call-time
 * checks. Private to src/lower and the GPU backends.
 *
 * The GPU tail of the pipeline (pipeline.c lists it; texi_lower_tail with
 * TEXI_TAIL_GPU) builds the module: thread_allreduce (ATTR
 * "cross_thread_reduction" -> per-thread partial + ATTR "thread_allreduce",
 * printed as warp shuffles + a shared-memory step), double_buffer (shared
 * buffers under ATTR "double_buffer": two copies, fetch of step k+1
 * overlapping compute of step k), device_split (top-level nests become
 * kernels with launch extents over parameters and size variables; global
 * temporaries between kernels become workspace; top-level ATTR "assert"
 * become call-time checks) and, per kernel, thread_sync (a BARRIER wherever
 * shared memory written by one thread is later read or overwritten by
 * another, and nowhere else) and simd (vectorized loops as vector
 * statements of at most 16 bytes, simd_gpu.c); device_check (launch limits,
 * the bounds of shared and per-thread arrays) ends it.
 *
 * The launch plan (src/rt/launch_plan.h) compiles the module's host side
 * into a form the runtime owns.
 */
#ifndef TEX_LOWER_DEVICE_H
#define TEX_LOWER_DEVICE_H

#include "lower/lower.h"

/* Launch-tag slots: grid x/y/z then block x/y/z (tex_thread_tag order). */
#define TEXI_N_LAUNCH_TAGS 6

typedef struct {
    const char *name;                     /* "<func>_kernel<K>" */
    tex_stmt *body;                       /* the kernel's statements */
    tex_expr *extent[TEXI_N_LAUNCH_TAGS]; /* launch extent per tag; NULL = 1 */
} texi_device_kernel;

typedef struct texi_device_module {
    int n_kernels;
    texi_device_kernel *kernels; /* launched in order on one stream */
    int n_workspace;
    texi_buffer **workspace; /* global temporaries between kernels: allocated by the
                                runtime for each call and passed to every kernel
                                after the entry point's arguments, in this order */
    int n_asserts;
    tex_expr **asserts; /* conditions over params/sizes checked before launching */
} texi_device_module;

/* The device passes (texi_lower: ctx and func set, sch NULL). */
int texi_pass_thread_allreduce(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_double_buffer(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_thread_sync(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_device_split(texi_lower *lw, tex_stmt *body, texi_device_module *out);

/* The names of the launch tags' indices, in slot order (device_split.c). */
extern const char *const texi_device_tag_names[TEXI_N_LAUNCH_TAGS];

/* The largest shared or per-thread array of symbolic size a kernel may hold. */
#define TEXI_DEVICE_MAX_ARRAY_BYTES 49152

/* The elements to allocate for shared or per-thread buffer b of a kernel of
 * f: its size when constant, else the largest value of its size over the
 * ranges given (the loops and integer LETs around it) with every integer VAR
 * parameter and size variable of f in [0, 2^31); -1 when that is unbounded
 * or above TEXI_DEVICE_MAX_ARRAY_BYTES (device_check.c). */
int64_t texi_device_array_elems(const tex_func *f, const texi_buffer *b, int n,
                                const texi_range ranges[]);

/* The last step of the GPU tail: launch limits and allocations every
 * kernel of m must satisfy (device_check.c). 0, or TEX_EINVAL /
 * TEX_EUNAVAILABLE recorded, naming the kernel or the buffer. */
int texi_device_check(texi_lower *lw, const texi_device_module *m);

/* Pipeline steps on the module (device_lower.c): device_split into m, shown
 * to the verifier and TEX_DUMP as one statement under `name`; and pass fn
 * run as step `name` on kernel k's body (with m's workspace in scope). */
int texi_device_split_step(texi_lower *lw, const char *name, tex_stmt *body, texi_device_module *m);
int texi_device_kernel_step(texi_lower *lw, const char *name, texi_pass_fn fn,
                            const texi_device_module *m, texi_device_kernel *k);

#endif
