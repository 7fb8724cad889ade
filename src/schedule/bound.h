/*
 * Bound inference results beyond stage->range / stage->region, shared by
 * bound.c (which computes them) and src/lower/schedule_ops.c (which builds the
 * loop nest from them). Private to src/schedule and src/lower.
 *
 * Variable convention: every call of bound inference makes one fresh VAR per
 * (stage, iter in stage->all), texi_stage_bounds.var. All range and region
 * expressions are written over these variables (and the symbolic sizes):
 * a producer computed at (C, iv) has ranges over C's leaf variables of the
 * loops enclosing it. ScheduleOps uses the very same variables as the loop
 * variables of the leaf iters (each stage's nest is emitted once), so no
 * renaming is needed; an iter's own tex_iter->var never appears in them (root
 * iters may be shared by several computes, their vars are ambiguous).
 * A leaf loop runs its variable over [0, range.extent); the value of an iter is
 * range.min + offset, where only root iters have a non-zero min.
 */
#ifndef TEX_SCHEDULE_BOUND_H
#define TEX_SCHEDULE_BOUND_H

#include "schedule/schedule.h"

typedef struct {
    tex_expr **var; /* parallel to stage->all: the loop variable of each iter */
    tex_expr *body; /* the op's body with inlined stages substituted; NULL for placeholders */
    tex_tail *tail; /* parallel to stage->rel: the tail strategy applied to each SPLIT (never
                     * AUTO; GUARD where the factor divides the extent) */
    int bad_rel;    /* index of a ROUND_UP split that is illegal (rule 6), or -1 */
    bool full;      /* computed over its whole domain (output or function parameter) */
} texi_stage_bounds;

typedef struct {
    tex_schedule *sch;
    texi_stage_bounds *st; /* parallel to sch->stages */
    int n_sizes;           /* variables that are a whole dimension of a placeholder, */
    texi_range *sizes;     /* never negative: their ranges [0, +inf) (texi_range) */
} texi_bounds;

/* texi_infer_bounds, where the tensors full[0..n_full) (the function's
 * parameters) are computed over their whole domain like outputs; *out receives
 * the per-stage results above (arena memory). 0 or an error code. */
int texi_infer_bounds_ex(tex_schedule *s, int n_full, tex_tensor *const full[], texi_bounds *out);

/* The residency check (residency.c): TEX_EINVAL when a local or shared
 * reduction computed at a loop would be recomputed by a loop around it that
 * does not move its tile; else 0. After texi_infer_bounds_ex. */
int texi_check_residency(const texi_bounds *b);

/* Index of stage st in b->sch->stages, or -1. */
int texi_bounds_stage_index(const texi_bounds *b, const tex_stage *st);

/* Index of iv in st->all, or -1. */
int texi_bounds_iter_index(const tex_stage *st, const tex_iter *iv);

/* Values of all iters of stage si from the offsets of its leaf loops: on
 * entry val[a] holds the offset in [0, range.extent) of every leaf iter a
 * (index into stage->all); on return every entry holds the iter's value
 * (range.min + offset), through the stage's relations and resolved tails.
 * Root values have the root var's dtype. 0 or TEX_ENOMEM. */
int texi_bounds_pass_up(const texi_bounds *b, int si, tex_expr **val);

/* Whether a ROUND_UP split lies below root iter root_a (an index into
 * stage->all) of stage si: its values are not guarded and may pass the
 * root's range. */
bool texi_bounds_rounds_up(const texi_bounds *b, int si, int root_a);

/* Whether iter a of st is derived (through splits and fuses) from root_a. */
bool texi_bounds_derives_from(const tex_stage *st, int a, int root_a);

/* a `kind` b with both operands converted to their promoted dtype; NULL when
 * an operand is NULL or on ENOMEM. */
tex_expr *texi_bounds_arith(enum texi_expr_kind kind, tex_expr *a, tex_expr *b);

#endif
