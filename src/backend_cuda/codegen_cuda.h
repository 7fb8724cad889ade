/*
 * The CUDA emitter's shared state, private to codegen_cuda.c (names,
 * statements, kernels, launch plan), codegen_cuda_expr.c (expressions),
 * codegen_cuda_allreduce.c (block-wide allreduce), codegen_cuda_atomic.c
 * (atomic updates) and codegen_cuda_intrin.c (tensor intrinsics).
 */
#ifndef TEX_BACKEND_CUDA_CODEGEN_CUDA_H
#define TEX_BACKEND_CUDA_CODEGEN_CUDA_H

#include "backend_cuda/cuda.h"
#include "util/cnames.h"

#define TEXI_CU_MAX_RANGES 64  /* enclosing loops tracked for proofs */
#define TEXI_CU_MAX_DEFERRED 8 /* thread loops with a deferred guard */
#define TEXI_CU_MAX_VLOADS 16  /* vector loads of one vectorized store */

typedef struct {
    tex_ctx *ctx;
    const tex_func *f;
    const texi_device_module *m;
    texi_cnames names; /* identifiers of variables and buffers (key: VAR / buffer key) */
    int indent;
    tex_expr *launch[TEXI_N_LAUNCH_TAGS]; /* the current kernel's extent per thread tag, or NULL */
    int thread_depth;                     /* enclosing thread-bound loops */
    int n_ranges;
    texi_range ranges[TEXI_CU_MAX_RANGES]; /* enclosing loops' ranges (alignment proofs) */
    /* Thread loops whose extent is below the launch extent and whose body
     * holds a barrier or an allreduce: their guard is not put around the
     * whole body but around each statement without one (codegen_cuda.c). */
    int n_deferred;
    const tex_stmt *deferred[TEXI_CU_MAX_DEFERRED];
    bool guard_applied; /* inside such a per-statement guard */
    /* A vectorized store being emitted lane by lane (codegen_cuda.c): the
     * loop variable prints as (base + vec_lane), and each listed LOAD node
     * as component vec_lane of its vector local. */
    const tex_expr *vec_var;
    int vec_lane;
    int n_vloads;
    const tex_expr *vload[TEXI_CU_MAX_VLOADS];
    const char *vload_name[TEXI_CU_MAX_VLOADS];
    bool uses_allreduce;  /* some kernel emitted an allreduce: its helpers are needed */
    bool uses_atomic_cas; /* some kernel updates atomically through a CAS loop */
    int rc;               /* first error (recorded in ctx), 0 when none */
} texi_cu;

/* Records the error (the first one only) in g and its context. */
void texi_cu_fail(texi_cu *g, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The CUDA name bound to key; records TEX_EINTERNAL and returns "?" when unbound. */
const char *texi_cu_lookup(texi_cu *g, const void *key, const char *name);

/* The CUDA element type of storage of dtype t (f16: __half, bf16:
 * __nv_bfloat16, bool: uint8_t). */
const char *texi_cu_storage_type(tex_dtype t);

/* The CUDA type of a value of dtype t (f16/bf16 values are float). */
const char *texi_cu_value_type(tex_dtype t);

/* Appends e as a fully parenthesized CUDA expression. */
void texi_cu_expr(texi_cu *g, texi_sb *sb, const tex_expr *e);

/* Appends e converted to storage of dtype t (the right-hand side of a STORE). */
void texi_cu_store_value(texi_cu *g, texi_sb *sb, const tex_expr *e, tex_dtype t);

/* Appends one indented line (g->indent levels) to sb. */
void texi_cu_line(texi_cu *g, texi_sb *sb, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends statement s (codegen_cuda.c's dispatcher). */
void texi_cu_stmt(texi_cu *g, texi_sb *sb, const tex_stmt *s);

/* Appends the condition under which the current thread takes part in
 * the enclosing deferred-guard thread loops (g->deferred: loops narrower
 * than the launch whose bodies hold barriers or allreduces), e.g.
 * "(((int64_t)threadIdx.x < (int64_t)100))", or "true" when there are none.
 * The statements around a barrier/allreduce are emitted for every thread
 * of the block; an allreduce must let inactive threads contribute the
 * identity (texi_cu_emit_allreduce). */
void texi_cu_active_cond(texi_cu *g, texi_sb *sb);

/* ATTR "thread_allreduce" (codegen_cuda_allreduce.c): the block-wide
 * allreduce over the threads of one thread tag. Called for every thread of
 * the block (never under a thread-divergent guard); see texi_cu_active_cond. */
void texi_cu_emit_allreduce(texi_cu *g, texi_sb *sb, const tex_stmt *attr);

/* Device helpers of the allreduce (warp shuffles + shared step), appended
 * after texi_cu_helpers when g->uses_allreduce. */
extern const char texi_cu_allreduce_helpers[];

/* ATTR "atomic" (codegen_cuda_atomic.c): one atomic update. */
void texi_cu_emit_atomic(texi_cu *g, texi_sb *sb, const tex_stmt *attr);

/* Device helpers of the CAS-loop updates, appended when g->uses_atomic_cas. */
extern const char texi_cu_atomic_helpers[];

/* INTRIN statement s (codegen_cuda_intrin.c): the call of the
 * intrinsic's function on flattened tiles (pointer + offset, int64_t
 * strides). */
void texi_cu_emit_intrin(texi_cu *g, texi_sb *sb, const tex_stmt *s);

/* The c_source of every distinct intrinsic called in body, once each
 * (codegen_cuda_intrin.c); goes before the kernels. */
void texi_cu_emit_intrin_sources(texi_cu *g, texi_sb *sb, const tex_stmt *body);

/* The device helpers every source starts with. */
extern const char texi_cu_helpers[];

#endif
