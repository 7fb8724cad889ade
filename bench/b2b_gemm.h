/*
 * b2b_gemm.h: back-to-back GEMM (CUTLASS's example 13) in tex's public API,
 * header-only; bench/b2b times it and tests/unit/test_b2b checks it.
 *
 *   D0 = relu(alpha0 * A0 . B0)               A0 [M, K0], B0 [K0, N0]
 *   D1 = relu(alpha1 * D0 . B1 + beta1 * C1)  B1 [N0, N1], C1 [M, N1]
 *
 * as four computes: P0 = A0 . B0, D0 = relu(alpha0 * P0), P1 = D0 . B1 and
 * D1 = relu(alpha1 * P1 + beta1 * C1); alpha0, alpha1 and beta1 are f32
 * scalar parameters (tex_var), M may be symbolic.
 *
 * Two CPU schedules:
 *   fused    D1 tiled mb rows x bn columns, the row-tile loop parallel. D0 is
 *            computed at the row tile (compute_at D1's m.outer), local: a row
 *            panel [mb, N0] of D0 stays in L1 and is the second GEMM's input,
 *            never written to memory. D0's columns are split by bn and P0 is
 *            computed at that loop (local, mb x bn accumulators in registers);
 *            P1 likewise at D1's column tile. This needs the
 *            row tile of D1 to cover whole rows of D0 (N0): computing P0 at
 *            D1's column tile would recompute it once per column tile, which
 *            tex_lower refuses (docs/api.md, rule 5).
 *   unfused  D0 computed at root (written to memory, M x N0) with its own
 *            register-tiled GEMM, then D1's GEMM reading it back.
 *   first    the unfused schedule's first GEMM alone (a kernel computing D0
 *            only): what fusion cannot save.
 * Both GEMMs use bench/gemm's register tile: mb rows x bn columns of
 * accumulators, k split by kf and unrolled, the rows unrolled, the columns
 * vectorized (bn = 64 with AVX-512, 16 with AVX2 only).
 */
#ifndef TEX_BENCH_B2B_GEMM_H
#define TEX_BENCH_B2B_GEMM_H

#include <stdint.h>
#include <tex/tex.h>

/* The tensors and scalars of one back-to-back GEMM. */
typedef struct {
    tex_tensor *a0, *b0, *b1, *c1; /* inputs */
    tex_tensor *p0, *d0, *p1, *d1; /* intermediates, then the output D1 */
    tex_expr *alpha0, *alpha1, *beta1;
} b2b_gemm;

/* The register tile of both GEMMs. */
typedef struct {
    int mb;  /* rows of a tile */
    int bn;  /* columns of a tile (a multiple of the vector width) */
    int kf;  /* unroll factor of the reduction */
} b2b_tile;

/* The computes of b2b_gemm's top comment over M (constant or tex_var). */
static inline void b2b_gemm_define(tex_ctx *ctx, tex_expr *M, int64_t k0, int64_t n0, int64_t n1,
                                   b2b_gemm *g)
{
    tex_expr *K0 = tex_int(ctx, k0), *N0 = tex_int(ctx, n0), *N1 = tex_int(ctx, n1);
    tex_expr *zero = tex_const(ctx, TEX_F32, 0);
    g->a0 = tex_placeholder(ctx, "A0", TEX_F32, 2, (tex_expr *[]){M, K0});
    g->b0 = tex_placeholder(ctx, "B0", TEX_F32, 2, (tex_expr *[]){K0, N0});
    g->b1 = tex_placeholder(ctx, "B1", TEX_F32, 2, (tex_expr *[]){N0, N1});
    g->c1 = tex_placeholder(ctx, "C1", TEX_F32, 2, (tex_expr *[]){M, N1});
    g->alpha0 = tex_var(ctx, "alpha0", TEX_F32);
    g->alpha1 = tex_var(ctx, "alpha1", TEX_F32);
    g->beta1 = tex_var(ctx, "beta1", TEX_F32);
    tex_iter *m = tex_axis(ctx, "m", M), *n = tex_axis(ctx, "n0", N0);
    tex_iter *k = tex_reduce_axis(ctx, "k0", K0);
    tex_expr *ab = tex_mul(TEX_AT(g->a0, tex_iv(m), tex_iv(k)), TEX_AT(g->b0, tex_iv(k), tex_iv(n)));
    g->p0 = tex_compute(ctx, "P0", 2, (tex_iter *[]){m, n}, tex_sum(ab, 1, &k));
    m = tex_axis(ctx, "m", M), n = tex_axis(ctx, "n0", N0);
    g->d0 = tex_compute(ctx, "D0", 2, (tex_iter *[]){m, n},
                        tex_max(tex_mul(g->alpha0, TEX_AT(g->p0, tex_iv(m), tex_iv(n))), zero));
    m = tex_axis(ctx, "m", M), n = tex_axis(ctx, "n1", N1);
    k = tex_reduce_axis(ctx, "k1", N0);
    ab = tex_mul(TEX_AT(g->d0, tex_iv(m), tex_iv(k)), TEX_AT(g->b1, tex_iv(k), tex_iv(n)));
    g->p1 = tex_compute(ctx, "P1", 2, (tex_iter *[]){m, n}, tex_sum(ab, 1, &k));
    m = tex_axis(ctx, "m", M), n = tex_axis(ctx, "n1", N1);
    tex_expr *lin = tex_add(tex_mul(g->alpha1, TEX_AT(g->p1, tex_iv(m), tex_iv(n))),
                            tex_mul(g->beta1, TEX_AT(g->c1, tex_iv(m), tex_iv(n))));
    g->d1 = tex_compute(ctx, "D1", 2, (tex_iter *[]){m, n}, tex_max(lin, zero));
}

/* The kernel's parameters: A0, B0, B1, C1, D1, alpha0, alpha1, beta1. */
static inline void b2b_gemm_params(const b2b_gemm *g, tex_param p[8])
{
    tex_tensor *const t[5] = {g->a0, g->b0, g->b1, g->c1, g->d1};
    for (int i = 0; i < 5; i++)
        p[i] = (tex_param){.kind = TEX_ARG_TENSOR, .t = t[i]};
    p[5] = (tex_param){.kind = TEX_ARG_VAR, .v = g->alpha0};
    p[6] = (tex_param){.kind = TEX_ARG_VAR, .v = g->alpha1};
    p[7] = (tex_param){.kind = TEX_ARG_VAR, .v = g->beta1};
}

/* The register tile on a reduction stage st computed at a tile of its
 * consumer (whole extent of its axes there): columns split by t->bn, k by
 * t->kf, loop order (columns.outer, k.outer, k.inner, rows, columns.inner),
 * k.inner and the rows unrolled, columns.inner vectorized. */
static inline int b2b_register_tile(tex_ctx *ctx, tex_stage *st, const b2b_tile *t)
{
    tex_iter *m = tex_op_axis(st, 0), *no, *ni, *ko, *ki;
    int rc = tex_split(st, tex_op_axis(st, 1), tex_int(ctx, t->bn), &no, &ni);
    rc = rc ? rc : tex_split(st, tex_op_reduce_axis(st, 0), tex_int(ctx, t->kf), &ko, &ki);
    rc = rc ? rc : tex_reorder(st, 5, (tex_iter *[]){no, ko, ki, m, ni});
    rc = rc ? rc : tex_unroll(st, ki);
    rc = rc ? rc : tex_unroll(st, m);
    return rc ? rc : tex_vectorize(st, ni);
}

/* The fused schedule (top comment); t->mb is the row tile. 0 or an error. */
static inline int b2b_gemm_fused(tex_ctx *ctx, tex_schedule *s, const b2b_gemm *g,
                                 const b2b_tile *t)
{
    tex_stage *s0 = tex_stage_of(s, g->p0), *sd = tex_stage_of(s, g->d0);
    tex_stage *s1 = tex_stage_of(s, g->p1), *so = tex_stage_of(s, g->d1);
    tex_iter *mo, *no, *mi, *ni;
    int rc = tex_tile(so, tex_op_axis(so, 0), tex_op_axis(so, 1), tex_int(ctx, t->mb),
                      tex_int(ctx, t->bn), &mo, &no, &mi, &ni);
    rc = rc ? rc : tex_parallel(so, mo);
    rc = rc ? rc : tex_vectorize(so, ni);
    rc = rc ? rc : tex_compute_at(s1, so, no);
    rc = rc ? rc : tex_compute_at(sd, so, mo);
    tex_iter *dm = tex_op_axis(sd, 0), *dno, *dni;
    rc = rc ? rc : tex_split(sd, tex_op_axis(sd, 1), tex_int(ctx, t->bn), &dno, &dni);
    rc = rc ? rc : tex_reorder(sd, 3, (tex_iter *[]){dno, dm, dni});
    rc = rc ? rc : tex_vectorize(sd, dni);
    rc = rc ? rc : tex_compute_at(s0, sd, dno);
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = tex_set_scope((tex_stage *[]){s0, sd, s1}[i], TEX_SCOPE_LOCAL);
    rc = rc ? rc : b2b_register_tile(ctx, s0, t);
    return rc ? rc : b2b_register_tile(ctx, s1, t);
}

/* One GEMM of the unfused schedule, as bench/gemm's: its output `out` tiled
 * t->mb x t->bn, the row-tile loop parallel, its accumulators `acc` local
 * at the tile (b2b_register_tile). */
static inline int b2b_gemm_tiled(tex_ctx *ctx, tex_schedule *s, tex_tensor *out, tex_tensor *acc,
                                 const b2b_tile *t)
{
    tex_stage *so = tex_stage_of(s, out), *sa = tex_stage_of(s, acc);
    tex_iter *mo, *no, *mi, *ni;
    int rc = tex_tile(so, tex_op_axis(so, 0), tex_op_axis(so, 1), tex_int(ctx, t->mb),
                      tex_int(ctx, t->bn), &mo, &no, &mi, &ni);
    rc = rc ? rc : tex_parallel(so, mo);
    rc = rc ? rc : tex_vectorize(so, ni);
    rc = rc ? rc : tex_compute_at(sa, so, no);
    rc = rc ? rc : tex_set_scope(sa, TEX_SCOPE_LOCAL);
    return rc ? rc : b2b_register_tile(ctx, sa, t);
}

/* The unfused schedule: both GEMMs b2b_gemm_tiled; D0 at root. */
static inline int b2b_gemm_unfused(tex_ctx *ctx, tex_schedule *s, const b2b_gemm *g,
                                   const b2b_tile *t)
{
    int rc = b2b_gemm_tiled(ctx, s, g->d0, g->p0, t);
    return rc ? rc : b2b_gemm_tiled(ctx, s, g->d1, g->p1, t);
}

/* The first GEMM alone (a schedule of D0), as the unfused schedule runs it. */
static inline int b2b_gemm_first(tex_ctx *ctx, tex_schedule *s, const b2b_gemm *g,
                                 const b2b_tile *t)
{
    return b2b_gemm_tiled(ctx, s, g->d0, g->p0, t);
}

#endif
