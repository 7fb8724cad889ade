/*
 * GPU lowering: from a lowered function (tex_func, target independent) to a
 * device module: the kernels a GPU backend emits, with their launch extents,
 * the global workspace buffers that live between kernels, and the call-time
 * checks. Private to src/lower and the GPU backends.
 *
 * texi_device_lower runs, in order, on f->body (each result is printable
 * with TEX_DUMP like the host passes: "thread_allreduce", "double_buffer",
 * "device_split", "thread_sync"):
 *   1. thread_allreduce (thread_allreduce.c): every ATTR
 *      "cross_thread_reduction" becomes an explicit per-thread partial, an
 *      ATTR "thread_allreduce" (the block-wide allreduce the emitter prints as
 *      warp shuffles + a shared-memory step) and the write of the result.
 *   2. double_buffer (double_buffer.c): shared buffers under ATTR
 *      "double_buffer" get two copies and the fetch of step k+1 overlaps the
 *      compute of step k.
 *   3. device_split (device_split.c): top-level nests become kernels; their
 *      launch extents are expressions of the parameters and size variables;
 *      global temporaries shared between kernels become workspace; top-level
 *      ATTR "assert" become call-time checks.
 *   4. thread_sync (thread_sync.c), per kernel: a BARRIER wherever shared
 *      memory written by one thread is later read (or overwritten) by
 *      another, and nowhere else.
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

typedef struct {
    int n_kernels;
    texi_device_kernel *kernels; /* launched in order on one stream */
    int n_workspace;
    texi_buffer **workspace; /* global temporaries between kernels: allocated by the
                                runtime for each call and passed to every kernel
                                after the entry point's arguments, in this order */
    int n_asserts;
    tex_expr **asserts; /* conditions over params/sizes checked before launching */
} texi_device_module;

/* Runs the device passes and the split above on f (arena of f->ctx).
 * 0, or an error recorded in f->ctx ("tex_build: ..."; TEX_EUNAVAILABLE for
 * a construct the GPU path does not support, naming it). */
int texi_device_lower(const tex_func *f, texi_device_module *out);

/* The device passes (texi_lower: ctx and func set, sch NULL). */
int texi_pass_thread_allreduce(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_double_buffer(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_thread_sync(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_device_split(texi_lower *lw, tex_stmt *body, texi_device_module *out);

#endif
