/*
 * The operator library's private header: the helpers every operator file
 * shares (argument checks, names, axes, broadcasting, reduction frames).
 *
 * src/ops is a user of the public API only: it includes <tex/tex.h> and this
 * header, never another module's (tools/check_deps.sh checks it), so each
 * operator is an ordinary compute that every schedule primitive applies to.
 * Errors are recorded with tex_set_error, messages starting with the public
 * call ("tex_op_matmul: ...").
 */
#ifndef TEX_OPS_OPS_H
#define TEX_OPS_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "tex/tex.h"

#define TEXI_OPS_MAX_NDIM 16 /* dims of an operand or result */
#define TEXI_OPS_NAME_MAX 128

/* Records an error (tex_set_error's arguments) and yields NULL, for the
 * operators' `return TEXI_OPS_FAIL(...);`. */
#define TEXI_OPS_FAIL(...) (tex_set_error(__VA_ARGS__), (tex_tensor *)NULL)

/* Checks operator call `op`'s context and its n operands (named names[i] in
 * messages): ctx non-NULL, every operand non-NULL and of ctx, at most
 * TEXI_OPS_MAX_NDIM dims. 0, or the error code (recorded in ctx). */
int texi_ops_check(tex_ctx *ctx, const char *op, int n, tex_tensor *const ts[],
                   const char *const names[]);

/* Like texi_ops_check for an optional operand: 0 when t is NULL and ctx
 * holds no error (left out), 1 when t is given and valid, else the error. */
int texi_ops_check_optional(tex_ctx *ctx, const char *op, tex_tensor *t, const char *what);

/* Requires a float dtype for operand `what` of op: 0 or TEX_ETYPE. */
int texi_ops_need_float(tex_ctx *ctx, const char *op, tex_tensor *t, const char *what);

/* axis normalized into [0, ndim) (negative counts from the end); the
 * error code (TEX_EINVAL naming op and t) when out of range. */
int texi_ops_axis(tex_ctx *ctx, const char *op, const tex_tensor *t, int axis);

/* name, or dflt when name is NULL. */
const char *texi_ops_name(const char *name, const char *dflt);

/* "<base>_<suffix>" in buf (truncated to size). */
const char *texi_ops_stage_name(char *buf, size_t size, const char *base, const char *suffix);

/* A dim for a message: "7", or its expression ("N + 2"). */
void texi_ops_dim_str(tex_expr *e, char *buf, size_t size);

/* Checks that a's dim da equals b's dim db, both the size `what` (K, CB,
 * ...); 0 or TEX_EINVAL naming op, both tensors, dims and sizes. */
int texi_ops_same_dim(tex_ctx *ctx, const char *op, tex_tensor *a, int da, tex_tensor *b, int db,
                      const char *what);

/* t's shape copied into shape[0 .. ndim). */
void texi_ops_shape(const tex_tensor *t, tex_expr *shape[]);

/* Integer expression e, or the constant it always equals (4 + 4 becomes
 * 8), so that an extent built from constant sizes is a constant to every
 * analysis that asks (the automatic schedule's thread counts, tensorize). */
tex_expr *texi_ops_fold(tex_ctx *ctx, tex_expr *e);

/* Fresh data-parallel axes over shape (named i0, i1, ...; each extent
 * folded) and their expressions. 0 or the error recorded in ctx. */
int texi_ops_axes(tex_ctx *ctx, int ndim, tex_expr *const shape[], tex_iter *axes[],
                  tex_expr *ivs[]);

/* texi_ops_axes over t's shape. */
int texi_ops_axes_like(tex_ctx *ctx, const tex_tensor *t, tex_iter *axes[], tex_expr *ivs[]);

/* 1 when integer dim e is the constant v. */
bool texi_ops_is_const(tex_expr *e, int64_t v);

/* The broadcast shape of dims a[0..na) (of operand an) and b[0..nb) (of bn),
 * aligned at the right, in out; its ndim, or the error code (TEX_EINVAL
 * naming op, both operands and the dims that do not broadcast). */
int texi_ops_bcast_shape(tex_ctx *ctx, const char *op, const char *an, int na, tex_expr *const a[],
                         const char *bn, int nb, tex_expr *const b[], tex_expr *out[]);

/* The indices into t's first n dims at point ivs[0..m) of a broadcast
 * shape (n <= m, aligned at the right): ivs[m - n + d], or 0 where t's dim d
 * is the constant 1. */
void texi_ops_bcast_index(tex_ctx *ctx, const tex_tensor *t, int n, int m, tex_expr *const ivs[],
                          tex_expr *idx[]);

/* t read at point ivs[0..m) of a broadcast shape of m >= ndim(t) dims. */
tex_expr *texi_ops_bcast_load(tex_ctx *ctx, tex_tensor *t, int m, tex_expr *const ivs[]);

/* The loops of a reduction of x over the dims marked in reduced[]: output
 * axes (a size-1 axis per reduced dim when keepdims), reduce axes, the index
 * of x in terms of both, and the number of elements reduced. */
typedef struct {
    int ndim;                           /* output dims */
    tex_iter *axes[TEXI_OPS_MAX_NDIM];  /* output axes */
    tex_expr *ivs[TEXI_OPS_MAX_NDIM];   /* their expressions */
    int n_red;                          /* reduce axes, in x's dim order */
    tex_iter *raxes[TEXI_OPS_MAX_NDIM]; /* reduce axes */
    tex_expr *idx[TEXI_OPS_MAX_NDIM];   /* x's index (x's ndim entries) */
    tex_expr *count;                    /* product of the reduced dims (i64) */
} texi_ops_frame;

/* Fills f for x; 0 or the error recorded in ctx. */
int texi_ops_frame_init(tex_ctx *ctx, tex_tensor *x, const bool reduced[], bool keepdims,
                        texi_ops_frame *f);

/* out[ivs] = sum / count over frame f's output: a stage named `name`
 * dividing tensor sum (f's output shape) by f->count in sum's dtype. */
tex_tensor *texi_ops_divide_count(tex_ctx *ctx, const char *name, tex_tensor *sum,
                                  const texi_ops_frame *f);

/* Reduced dims of x for normalizing over its last n_axes dims; 0 or
 * TEX_EINVAL naming op. */
int texi_ops_trailing(tex_ctx *ctx, const char *op, const tex_tensor *x, int n_axes,
                      bool reduced[]);

/* An optional operand p (gamma, beta) must have exactly x's last n dims'
 * shape; 0 or TEX_EINVAL naming op and the dim. */
int texi_ops_trailing_shape(tex_ctx *ctx, const char *op, const tex_tensor *x, int n,
                            const tex_tensor *p, const char *what);

/* The output length of a sliding window over dim: (dim + 2 pad - dil (k -
 * 1) - 1) / stride + 1 (floor). NULL with TEX_EINVAL naming op and `what`
 * when it is a known constant below 1. */
tex_expr *texi_ops_window_len(tex_ctx *ctx, const char *op, const char *what, tex_expr *dim,
                              int64_t k, int64_t stride, int64_t pad, int64_t dil);

/* The 2-element parameter p (NULL: dflt each) in out, each >= lo; 0 or
 * TEX_EINVAL naming op and `what`. */
int texi_ops_pair(tex_ctx *ctx, const char *op, const char *what, const int64_t p[2], int64_t dflt,
                  int64_t lo, int64_t out[2]);

/* The elementwise unary op body(x[ivs]) over x's shape. */
tex_tensor *texi_ops_map(tex_ctx *ctx, const char *name, tex_tensor *x,
                         tex_expr *(*body)(tex_ctx *ctx, tex_expr *v));

#endif
