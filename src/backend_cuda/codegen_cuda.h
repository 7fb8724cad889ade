/*
 * The CUDA emitter's shared state, private to codegen_cuda.c (names,
 * statements, kernels, launch plan) and codegen_cuda_expr.c (expressions).
 */
#ifndef TEX_BACKEND_CUDA_CODEGEN_CUDA_H
#define TEX_BACKEND_CUDA_CODEGEN_CUDA_H

#include "backend_cuda/cuda.h"
#include "util/cnames.h"

typedef struct {
    tex_ctx *ctx;
    const tex_func *f;
    texi_cnames names; /* identifiers of variables and buffers (key: VAR / buffer key) */
    int indent;
    tex_expr *launch[6];   /* the current kernel's extent per thread tag, or NULL */
    int thread_depth;      /* enclosing thread-bound loops */
    int rc;                /* first error (recorded in ctx), 0 when none */
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

/* ATTR "thread_allreduce" (codegen_cuda_allreduce.c): the block-wide
 * allreduce over the threads of one thread tag. */
void texi_cu_emit_allreduce(texi_cu *g, texi_sb *sb, const tex_stmt *attr);

/* Device helpers of the allreduce (warp shuffles + shared step), appended
 * after texi_cu_helpers. */
extern const char texi_cu_allreduce_helpers[];

/* The device helpers every source starts with. */
extern const char texi_cu_helpers[];

#endif
