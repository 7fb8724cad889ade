/*
 * Schedules: stages, iteration-variable relations, attach points and the
 * results of bound inference. Private to src/schedule and src/lower.
 *
 * Model (TVM's te schedule, in C):
 *   - A schedule holds one stage per operation reachable from its outputs.
 *     Stage handles stay valid for the schedule's life; a stage's current
 *     operation (stage->op) may be replaced by cache_read / cache_write /
 *     rfactor, so lowering always reads stage->op, never tensor->op.
 *   - A stage's iteration variables form a forest: the roots are the op's axes
 *     followed by its reduce axes; SPLIT turns one iter into outer and inner,
 *     FUSE turns two into one. `leaf` lists the iters still to be looped over,
 *     outer to inner; every iter ever made for the stage is in `all`.
 *   - Primitives edit relations, leaf order, per-iter attributes and attach
 *     points only; they never touch compute definitions, never build loops.
 *     A failing primitive leaves the stage exactly as it was.
 *   - An iter belongs to one stage (split/fuse results are new iters). Root
 *     iters are the very tex_iters of the compute, which may be shared by
 *     several computes; lowering gives each stage its own loop variables.
 *
 * Bound inference (bound.c) fills `range` (one per iter in `all`) and `region`
 * (one per dimension of the stage's output) on every call of
 * texi_infer_bounds; they are expressions over the loop variables of the
 * attach point's enclosing loops and the symbolic sizes.
 */
#ifndef TEX_SCHEDULE_SCHEDULE_H
#define TEX_SCHEDULE_SCHEDULE_H

#include "ir/ir.h"

enum texi_rel_kind {
    TEXI_REL_SPLIT, /* parent -> outer, inner */
    TEXI_REL_FUSE   /* outer, inner -> fused */
};

typedef struct {
    enum texi_rel_kind kind;
    tex_iter *parent; /* SPLIT: the iter split */
    tex_iter *outer;  /* SPLIT: output; FUSE: input */
    tex_iter *inner;  /* SPLIT: output; FUSE: input */
    tex_iter *fused;  /* FUSE: output */
    tex_expr *factor; /* SPLIT by factor: inner extent; NULL when split by nparts */
    tex_expr *nparts; /* SPLIT by nparts: outer extent; NULL when split by factor */
    tex_tail tail;    /* SPLIT: requested tail strategy */
} texi_relation;

/* Per-iter schedule attributes (parallel to stage->all). */
typedef struct {
    enum texi_for_kind for_kind; /* SERIAL unless parallel/vectorize/unroll/bind */
    int thread_tag;              /* tex_thread_tag when for_kind is TEXI_FOR_THREAD, else -1 */
} texi_iter_attr;

enum texi_attach_kind {
    TEXI_ATTACH_ROOT,   /* own loop nest at the top of the function */
    TEXI_ATTACH_INLINE, /* substituted into its consumers; no loops, no buffer */
    TEXI_ATTACH_AT      /* nested in attach_stage's loop attach_iv (compute_at) */
};

/* One tex_prefetch / tex_prefetch_at request: at every iteration of leaf
 * iv's loop, the elements tensor is read at (written at, for the stage's
 * own tensor) when leaf `from` (iv, or a leaf outside it) is offset
 * iterations ahead are hinted to the processor's cache. */
typedef struct {
    tex_tensor *tensor;
    tex_iter *iv, *from;
    int offset;
} texi_prefetch;

/* A half-open range [min, min + extent). */
typedef struct {
    tex_expr *min;
    tex_expr *extent;
} texi_rng;

struct tex_stage {
    tex_schedule *sch;
    tex_tensor *tensor; /* the tensor this stage produces (its handle for users) */
    texi_op *op;        /* current definition (see above) */
    bool is_output;     /* one of the schedule's outputs */

    int n_root; /* op->n_axes + op->n_raxes */
    tex_iter **root;
    int n_all, cap_all; /* every iter of this stage */
    tex_iter **all;
    texi_iter_attr *attr; /* parallel to all */
    int n_leaf;           /* loop order, outer to inner */
    tex_iter **leaf;
    int n_rel, cap_rel;
    texi_relation *rel; /* in the order they were made */

    enum texi_attach_kind attach;
    tex_stage *attach_stage; /* TEXI_ATTACH_AT */
    tex_iter *attach_iv;     /* TEXI_ATTACH_AT: a leaf iter of attach_stage */

    enum texi_scope scope; /* storage scope of the output buffer */
    bool double_buffer;
    bool atomic;       /* tex_atomic: each reduction update combines atomically, so a
                          reduce leaf may be parallel or bound to a block index */
    int *align_factor; /* per output dimension, 0 = none (storage_align) */
    int *align_offset;
    int *storage_order; /* storage dims outer to inner, as output dimension indices
                           (reorder_storage); the identity: row-major */

    bool is_cache; /* made by cache_read / cache_write / rfactor */

    int n_prefetch;
    texi_prefetch *prefetch; /* tex_prefetch's requests, one per (tensor, iv) */

    tex_iter *tensorize_iv; /* leaf whose loop nest tex_tensorize replaced, or NULL */
    tex_intrin *intrin;     /* the intrinsic it calls there */

    /* bound inference results (texi_infer_bounds) */
    texi_rng *range;  /* parallel to all */
    texi_rng *region; /* per output dimension: the part consumers need */
};

/* One primitive applied to a schedule, as text (trace.h). */
typedef struct texi_trace_line {
    struct texi_trace_line *next;
    const char *text;
} texi_trace_line;

struct tex_schedule {
    tex_ctx *ctx;
    int n_outputs;
    tex_tensor **outputs;
    int n_stages, cap_stages;
    tex_stage **stages;                  /* producers before consumers */
    texi_trace_line *trace, **trace_end; /* the primitives applied, in order */
    const char *trace_gap;               /* why one of them has no text, or NULL */
};

/* Index of iv in stage->all, or -1. */
int texi_stage_iter_index(const tex_stage *st, const tex_iter *iv);

/* Index of iv in stage->leaf, or -1. */
int texi_stage_leaf_index(const tex_stage *st, const tex_iter *iv);

/* Stage producing tensor t, or NULL (no error recorded). */
tex_stage *texi_schedule_find_stage(const tex_schedule *s, const tex_tensor *t);

/* The tensor that c copies element for element (c's definition is
 * `c[ax..] = t[ax..]`, as tex_cache_read makes it), or NULL. */
tex_tensor *texi_copy_source(const tex_tensor *c);

/* The stages reading t directly (through their current op); *n receives the count. */
tex_stage **texi_schedule_consumers(tex_schedule *s, const tex_tensor *t, int *n);

/* Fills range/region of every stage (see the file comment); a region that
 * cannot be bounded (data-dependent indices) is the tensor's whole shape.
 * 0 or TEX_EINVAL naming the stage for an illegal attachment (cycles, an
 * attach axis that is no longer a leaf, a consumer outside its producer's
 * attach loop, an inlined reduction). bound.h has the variant lowering uses. */
int texi_infer_bounds(tex_schedule *s);

#endif
