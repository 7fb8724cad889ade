/*
 * gemm_packed.h: the GEMM that bench/gemm and bench/jit build (header-only):
 * C = A·B with B packed into column panels of width bn, as TVM's "How to
 * optimize GEMM on CPU" writes it,
 *   packedB[x, y, z] = B[y, x*bn + z]
 *   C[m, n] = sum_k A[m, k] * packedB[n / bn, k, n % bn]
 * and that tutorial's final schedule, which make demo runs too.
 */
#ifndef TEX_BENCH_GEMM_PACKED_H
#define TEX_BENCH_GEMM_PACKED_H

#include <stdint.h>
#include <tex/tex.h>

/* The computes for an m x k times k x n product: t = {A, B, packedB, C}. */
static inline void gemm_packed_define(tex_ctx *ctx, int64_t m, int64_t n, int64_t k, int64_t bn,
                                      tex_tensor *t[4])
{
    tex_expr *M = tex_int(ctx, m), *N = tex_int(ctx, n), *K = tex_int(ctx, k);
    tex_expr *w = tex_int(ctx, bn);
    t[0] = tex_placeholder(ctx, "A", TEX_F32, 2, (tex_expr *[]){M, K});
    t[1] = tex_placeholder(ctx, "B", TEX_F32, 2, (tex_expr *[]){K, N});
    tex_iter *x = tex_axis(ctx, "x", tex_int(ctx, n / bn));
    tex_iter *y = tex_axis(ctx, "y", K), *z = tex_axis(ctx, "z", w);
    t[2] = tex_compute(ctx, "packedB", 3, (tex_iter *[]){x, y, z},
                       TEX_AT(t[1], tex_iv(y), tex_add(tex_mul(tex_iv(x), w), tex_iv(z))));
    tex_iter *i = tex_axis(ctx, "m", M), *j = tex_axis(ctx, "n", N);
    tex_iter *r = tex_reduce_axis(ctx, "k", K);
    tex_expr *pb =
        TEX_AT(t[2], tex_floordiv(tex_iv(j), w), tex_iv(r), tex_floormod(tex_iv(j), w));
    t[3] = tex_compute(ctx, "C", 2, (tex_iter *[]){i, j},
                       tex_sum(tex_mul(TEX_AT(t[0], tex_iv(i), tex_iv(r)), pb), 1, &r));
}

/* The tutorial's schedule of t (gemm_packed_define's) in s: C tiled bn x
 * bn, CC = cache_write(C, global) computed at the tile, CC's k split by
 * kf, loop order (ko, mc, ki, nc), ki unrolled, nc vectorized, the
 * row-tile loop parallel; packedB's panel loop parallel, its z
 * vectorized. The lowered function (name) or NULL. */
static inline tex_func *gemm_packed_tutorial(tex_ctx *ctx, tex_schedule *s, tex_tensor *const t[4],
                                             int64_t bn, int64_t kf, const char *name)
{
    tex_tensor *CC = tex_cache_write(s, t[3], TEX_SCOPE_GLOBAL);
    if (!CC)
        return NULL;
    tex_stage *sc = tex_stage_of(s, t[3]), *scc = tex_stage_of(s, CC), *sp = tex_stage_of(s, t[2]);
    tex_iter *mo, *no, *mi, *ni, *ko, *ki;
    int rc = tex_tile(sc, tex_op_axis(sc, 0), tex_op_axis(sc, 1), tex_int(ctx, bn),
                      tex_int(ctx, bn), &mo, &no, &mi, &ni);
    rc = rc ? rc : tex_compute_at(scc, sc, no);
    tex_iter *mc = tex_op_axis(scc, 0), *nc = tex_op_axis(scc, 1);
    rc = rc ? rc : tex_split(scc, tex_op_reduce_axis(scc, 0), tex_int(ctx, kf), &ko, &ki);
    rc = rc ? rc : tex_reorder(scc, 4, (tex_iter *[]){ko, mc, ki, nc});
    rc = rc ? rc : tex_vectorize(scc, nc);
    rc = rc ? rc : tex_unroll(scc, ki);
    rc = rc ? rc : tex_vectorize(sp, tex_op_axis(sp, 2));
    rc = rc ? rc : tex_parallel(sp, tex_op_axis(sp, 0));
    rc = rc ? rc : tex_parallel(sc, mo);
    return rc ? NULL : tex_lower_tensors(s, name, 3, (tex_tensor *[]){t[0], t[1], t[3]});
}

#endif
