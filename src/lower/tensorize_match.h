/*
 * Matching a stage's loop nest under a tensorized leaf against the
 * intrinsic's description (tensorize_match.c), and skipping the calls whose
 * tiles are padding (tensorize_skip.c), for schedule_ops.c. Private to
 * src/lower.
 */
#ifndef TEX_LOWER_TENSORIZE_MATCH_H
#define TEX_LOWER_TENSORIZE_MATCH_H

#include "schedule/schedule.h"

/* The nest under the tensorized leaf, as schedule_ops sees it. Expressions
 * are over the leaf loop variables (outer loops and the inner leaves). */
typedef struct {
    const tex_stage *st;
    tex_intrin *intrin;
    tex_expr *body;     /* the stage's body (REDUCE at the top or not), roots bound */
    tex_expr **out_idx; /* the output element written, per output dimension */
    int n_inner;        /* leaves from the tensorized one to the innermost */
    tex_iter *const *leaf;
    tex_expr **var;    /* per inner leaf: its loop variable, or 0 when it has no loop */
    tex_expr **extent; /* per inner leaf: its extent (must be a constant) */
    int n_env;         /* ranges of the outer loops and of the inner leaves' variables */
    const texi_range *env;
} texi_tz_nest;

/* Matches nest against its intrinsic's desc (tensorize_match.c: leaves map
 * one-to-one onto desc's axes in order, data to data and reduce to reduce,
 * with equal constant extents; accesses are desc's shifted by a tile origin;
 * the expressions agree structurally). On success fills args[0..n_inputs]
 * (desc's inputs in order, then the output) with tensor, mins (the tile
 * origin, over the outer loop variables) and dim_map. A mismatch is
 * TEX_EINVAL "tex_lower: stage 'S', tensorize at 'iv' with intrinsic 'N':
 * why", followed by both sides printed. */
int texi_tz_match(tex_ctx *ctx, const texi_tz_nest *nest, texi_intrin_arg *args);

/* The most rows zero_skip trims from either end of A's tile: a 7x7 filter
 * with padding 3 reads 3 columns of padding at the image's edges. */
#define TEXI_TZ_MAX_TRIM 3

/* *call, an UPDATE of intrinsic in on tiles args, in ATTR "zero_skip"
 * when in is a CPU GEMM built-in and an operand's tile may lie wholly in a
 * padding stage's zeros (IF (needed) around the call), or the first or last
 * rows of A's tile may (IFs choosing the call on the other rows, on an
 * instance of fewer rows): tensorize_skip.c. Conditions are simplified over
 * the n_env ranges env. 0, or TEX_ENOMEM. */
int texi_tz_skip_zero_tiles(tex_ctx *ctx, tex_intrin *in, const texi_intrin_arg *args, int n_env,
                            const texi_range *env, tex_stmt **call);

/* The whole tile's call of an ATTR "zero_skip"'s body (what -strict-float
 * runs): the innermost else, or then where an IF has none. */
tex_stmt *texi_tz_whole_call(tex_stmt *body);

#endif
