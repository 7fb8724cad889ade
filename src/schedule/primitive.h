/*
 * Helpers shared by the schedule primitives (schedule.c, split_fuse.c,
 * annotate.c, attach.c, cache.c, rfactor.c, schedule_str.c). Private to those
 * files; lowering uses schedule.h only.
 *
 * Every primitive follows one protocol so that a failure leaves the schedule
 * exactly as it was: (1) validate every argument, (2) allocate everything the
 * change needs (new iters, grown arrays, new ops and stages), (3) mutate, with
 * no step that can fail. Growing an array copies it into a larger arena block
 * before anything changes, which leaves the stage logically the same.
 */
#ifndef TEX_SCHEDULE_PRIMITIVE_H
#define TEX_SCHEDULE_PRIMITIVE_H

#include "schedule/schedule.h"

/* A new stage for tensor t computed by op (placeholder: no iters). Root and
 * leaf are the op's axes then its reduce axes; attach ROOT, scope GLOBAL.
 * Not inserted into s. NULL on ENOMEM. */
tex_stage *texi_stage_new(tex_schedule *s, tex_tensor *t, texi_op *op, bool is_output);

/* Replaces st's op, iters, attributes and relations with those of fresh (a
 * stage made by texi_stage_new for st's tensor); attach, scope, flags stay.
 * Cannot fail. */
void texi_stage_adopt(tex_stage *st, const tex_stage *fresh);

/* Makes room for n_iters more iters (all/attr/leaf) and n_rels more relations
 * without changing the stage's content. 0 or TEX_ENOMEM. */
int texi_stage_reserve(tex_stage *st, int n_iters, int n_rels);

/* Makes room for n more stages in s. 0 or TEX_ENOMEM. */
int texi_schedule_reserve(tex_schedule *s, int n);

/* Inserts st at position pos of s->stages (room reserved beforehand). */
void texi_schedule_insert(tex_schedule *s, int pos, tex_stage *st);

/* Whether compute op reads t directly (t is among its inputs). (schedule.c) */
bool texi_op_reads(const texi_op *op, const tex_tensor *t);

/* Index of st in s->stages, or -1. */
int texi_schedule_stage_index(const tex_schedule *s, const tex_stage *st);

/* The stage of s whose iters include iv, or NULL. */
tex_stage *texi_schedule_iter_owner(const tex_schedule *s, const tex_iter *iv);

/* A stage of s attached (compute_at) to parent at iv (any of parent's iters
 * when iv is NULL), or NULL. */
tex_stage *texi_schedule_attached_at(const tex_schedule *s, const tex_stage *parent,
                                     const tex_iter *iv);

/* A fresh iter (not a root of any compute) with its own VAR of dtype t. */
tex_iter *texi_iter_new(tex_ctx *ctx, const char *name, enum texi_iter_kind kind, tex_dtype t,
                        tex_expr *extent);

/* Fresh iters (texi_iter_new) with the names, kinds, dtypes and extents of
 * src[0..n). 0 or TEX_ENOMEM. (cache.c) */
int texi_iters_copy(tex_ctx *ctx, int n, tex_iter *const src[], tex_iter **dst);

/* A compute op over axes with body (its reduce axes are the body's, when it is
 * a REDUCE) reading inputs; arrays are copied. NULL on ENOMEM. (cache.c) */
texi_op *texi_op_new(tex_ctx *ctx, int n_axes, tex_iter *const axes[], tex_expr *body, int n_inputs,
                     tex_tensor *const inputs[]);
/* A stage's new op stores where its old one did: op takes from's scatter
 * fields (ir/scatter.c) and returns op (NULL stays NULL). (cache.c) */
texi_op *texi_op_keep_scatter(texi_op *op, const texi_op *from);

/* op with every read of tensor from redirected to tensor to (its inputs
 * too); NULL on ENOMEM (nothing recorded). (cache.c) */
texi_op *texi_op_redirect(tex_ctx *ctx, const texi_op *op, tex_tensor *from, tex_tensor *to);

/* st has no primitive applied to its loops (split, fuse, reorder, an
 * annotation), is not atomic and has no stage attached inside it; else
 * TEX_EINVAL naming the axis, recorded for call. (cache.c) */
int texi_stage_check_untouched(const tex_stage *st, const char *call);

/* TEX_EINVAL naming call when a tex_prefetch request of st would lose its
 * loop or its read: one at leaf iv (iv non-NULL), one of tensor t (t
 * non-NULL), any (both NULL). 0 otherwise. (prefetch.c) */
int texi_prefetch_check(const tex_stage *st, const tex_iter *iv, const tex_tensor *t,
                        const char *call);

/* Whether compute stages a and b define the same elements: the same dtype
 * and shape, and bodies equal up to the names of their axes and reduce axes
 * (tex_merge's test; merge.c). */
bool texi_stage_same_definition(const tex_stage *a, const tex_stage *b);

/* Removes s->stages[pos] from the stage list (schedule.c). */
void texi_schedule_remove(tex_schedule *s, int pos);

/* The stage of tensor t in s for `call`: NULL with TEX_EMISUSE (NULL tensor,
 * another context) or TEX_EINVAL (no stage) recorded. */
tex_stage *texi_schedule_stage_for(tex_schedule *s, const tex_tensor *t, const char *call);

/* Checks shared by every primitive on one stage: st non-NULL (TEX_EMISUSE),
 * and, when need_compute, that st is not a placeholder (TEX_EINVAL). */
int texi_stage_check(const tex_stage *st, const char *call, bool need_compute);

/* st and other (both non-NULL) belong to one schedule; else TEX_EINVAL
 * (TEX_EMISUSE across contexts) naming both, recorded for call. */
int texi_stages_same_schedule(const tex_stage *st, const tex_stage *other, const char *call);

/* iv is a leaf of st: TEX_EMISUSE when NULL or from another context, TEX_EINVAL
 * (naming the stage, the axis and, if any, the stage iv belongs to) otherwise. */
int texi_stage_check_leaf(const tex_stage *st, const tex_iter *iv, const char *call);

/* The stage's op has a reduction (reduce axes). */
bool texi_stage_has_reduce(const tex_stage *st);

/* A tensor name not used by any stage of s: base, else base.1, base.2, ...
 * Arena string; NULL on ENOMEM. */
const char *texi_schedule_unique_name(tex_schedule *s, const char *base);

/* "global", "shared", "local". */
const char *texi_scope_name(enum texi_scope scope);

/* "parallel", "vectorized", "unrolled", "threadIdx.x", ...: the attribute's
 * spelling; "serial" for none. */
const char *texi_iter_attr_name(const texi_iter_attr *attr);

#endif
