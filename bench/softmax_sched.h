/*
 * softmax_sched.h: the computes of bench/softmax's softmax and its
 * hand-written CPU schedule (header-only), shared with bench/gpu_on_cpu,
 * which uses the schedule as its cpu_schedule anchor. Both are described in
 * bench/softmax.c's top comment.
 */
#ifndef TEX_BENCH_SOFTMAX_SCHED_H
#define TEX_BENCH_SOFTMAX_SCHED_H

#include <stdint.h>
#include <tex/tex.h>

enum { SOFTMAX_VEC = 16 };

/* R's reduce axis vectorized as a reduction, R computed at Y's row loop. */
static inline int vector_reduce(tex_schedule *s, tex_tensor *R, tex_stage *sy, tex_iter *row)
{
    tex_stage *sr = tex_stage_of(s, R);
    int rc = tex_vectorize_reduce(sr, tex_op_reduce_axis(sr, 0));
    return rc ? rc : tex_compute_at(sr, sy, row);
}

/* The computes: in = {X}, mid = {Mx, E, Se}, *out = Y; 0 or -1. */
static inline int softmax_computes(tex_ctx *c, int64_t nrows, int64_t ncols, tex_tensor **in,
                                   tex_tensor **mid, tex_tensor **out)
{
    tex_expr *rows = tex_int(c, nrows), *cols = tex_int(c, ncols);
    tex_tensor *X = tex_placeholder_c(c, "X", TEX_F32, 2, (int64_t[]){nrows, ncols});
    tex_iter *i1 = tex_axis(c, "i", rows), *k1 = tex_reduce_axis(c, "k", cols);
    tex_tensor *Mx =
        tex_compute(c, "Mx", 1, &i1, tex_reduce_max(TEX_AT(X, tex_iv(i1), tex_iv(k1)), 1, &k1));
    tex_iter *i2 = tex_axis(c, "i", rows), *j2 = tex_axis(c, "j", cols);
    tex_tensor *E =
        tex_compute(c, "E", 2, (tex_iter *[]){i2, j2},
                    tex_exp(tex_sub(TEX_AT(X, tex_iv(i2), tex_iv(j2)), TEX_AT(Mx, tex_iv(i2)))));
    tex_iter *i3 = tex_axis(c, "i", rows), *k3 = tex_reduce_axis(c, "k", cols);
    tex_tensor *Se =
        tex_compute(c, "Se", 1, &i3, tex_sum(TEX_AT(E, tex_iv(i3), tex_iv(k3)), 1, &k3));
    tex_iter *i4 = tex_axis(c, "i", rows), *j4 = tex_axis(c, "j", cols);
    tex_expr *inv = tex_div(tex_const(c, TEX_F32, 1), TEX_AT(Se, tex_iv(i4)));
    *out = tex_compute(c, "Y", 2, (tex_iter *[]){i4, j4},
                       tex_mul(TEX_AT(E, tex_iv(i4), tex_iv(j4)), inv));
    in[0] = X;
    mid[0] = Mx;
    mid[1] = E;
    mid[2] = Se;
    return *out ? 0 : -1;
}

/* The hand-written schedule (bench/softmax.c's top comment) of an
 * n_rows x n_cols softmax; the lowered function or NULL. */
static inline tex_func *softmax_define(tex_ctx *c, int64_t n_rows, int64_t n_cols)
{
    tex_tensor *X, *mid[3], *Y;
    if (softmax_computes(c, n_rows, n_cols, &X, mid, &Y) != 0)
        return NULL;
    tex_tensor *Mx = mid[0], *E = mid[1], *Se = mid[2];
    tex_schedule *s = tex_schedule_new(c, 1, &Y);
    tex_stage *sy = tex_stage_of(s, Y), *se = tex_stage_of(s, E);
    tex_iter *i4 = tex_op_axis(sy, 0), *j4 = tex_op_axis(sy, 1), *jo, *ji, *eo, *ei;
    int rc = tex_parallel(sy, i4);
    rc = rc ? rc : tex_split(sy, j4, tex_int(c, SOFTMAX_VEC), &jo, &ji);
    rc = rc ? rc : tex_vectorize(sy, ji);
    rc = rc ? rc : tex_split(se, tex_op_axis(se, 1), tex_int(c, SOFTMAX_VEC), &eo, &ei);
    rc = rc ? rc : tex_vectorize(se, ei);
    rc = rc ? rc : tex_compute_at(se, sy, i4);
    rc = rc ? rc : tex_prefetch_at(se, X, eo, tex_op_axis(se, 0), 1);
    rc = rc ? rc : vector_reduce(s, Mx, sy, i4);
    rc = rc ? rc : vector_reduce(s, Se, sy, i4);
    return rc ? NULL : tex_lower_tensors(s, "softmax", 2, (tex_tensor *[]){X, Y});
}

#endif
