/*
 * Schedules of the back-to-back GEMM on tensor cores (header-only, static
 * inline), shared by tests/unit/test_tensorize_cuda.c and the GPU cases of
 * tests/support/gpu_cases.h.
 *
 * The computation (built by the callers): D0 = f16(relu([alpha0 *] A0 B0)),
 * D1 = relu(alpha1 D0 B1 + beta1 C1), f16 A0, B0, B1, f32 accumulation, f32
 * C1 and D1; t = {A0, B0, B1, C1, P0, D0, P1, D1} (P0, P1 the GEMMs' sums).
 * Every extent is a constant multiple of 16.
 *   b2b_tc_schedule          block-resident: P0, D0, P1 in shared memory at
 *                            D1's block of 16 rows (one warp), wmma built-ins
 *   b2b_tc_unfused_schedule  the same GEMMs, but D0 at root: a kernel of its
 *                            own writing D0 to global memory
 *   b2b_regs_schedule        register-resident: P0 and D0 in per-lane
 *                            fragment tiles (mma.sync built-ins), only P1 in
 *                            shared memory
 */
#ifndef TEX_TESTS_SUPPORT_B2B_TC_H
#define TEX_TESTS_SUPPORT_B2B_TC_H

#include "tex/tex.h"

#include <stdbool.h>

/* Accumulator stage st (scope `scope`, computed at `at` of stage c) in
 * 16x16 tiles, k split by 16, tensorized with in (all 32 lanes make each
 * call); the tile loop `unrolled` (0: the column tiles, 1: k's tiles, -1:
 * none) unrolled, ordered inside k's tile loop when it is the column one. */
static inline int b2b_tc_tiles(tex_ctx *x, tex_stage *st, tex_stage *c, tex_iter *at,
                               tex_intrin *in, tex_scope scope, int unrolled)
{
    tex_iter *io, *jo, *ii, *ji, *ko, *ki;
    int rc = tex_compute_at(st, c, at);
    rc = rc ? rc : tex_set_scope(st, scope);
    rc = rc ? rc
            : tex_tile(st, tex_op_axis(st, 0), tex_op_axis(st, 1), tex_int(x, 16), tex_int(x, 16),
                       &io, &jo, &ii, &ji);
    rc = rc ? rc : tex_split(st, tex_op_reduce_axis(st, 0), tex_int(x, 16), &ko, &ki);
    rc = rc              ? rc
         : unrolled == 0 ? tex_reorder(st, 6, (tex_iter *[]){io, ko, jo, ii, ji, ki})
                         : tex_reorder(st, 6, (tex_iter *[]){io, jo, ko, ii, ji, ki});
    rc = rc || unrolled < 0 ? rc : tex_unroll(st, unrolled == 0 ? jo : ko);
    return rc ? rc : tex_tensorize(st, ii, in);
}

/* The elementwise stage st over 32 lanes: its two axes fused, split by 32,
 * the inner part on threadIdx.x; with block, its rows first split by 16, the
 * outer part on blockIdx.x (returned in *bo). */
static inline int b2b_tc_lanes(tex_ctx *x, tex_stage *st, bool block, tex_iter **bo)
{
    tex_iter *m = tex_op_axis(st, 0), *fu, *o, *l;
    int rc = block ? tex_split(st, m, tex_int(x, 16), bo, &m) : 0;
    rc = rc ? rc : block ? tex_bind(st, *bo, TEX_BLOCK_X) : 0;
    rc = rc ? rc : tex_fuse(st, m, tex_op_axis(st, 1), &fu);
    rc = rc ? rc : tex_split(st, fu, tex_int(x, 32), &o, &l);
    return rc ? rc : tex_bind(st, l, TEX_THREAD_X);
}

/* Back-to-back GEMM on tensor cores, block-resident: one warp per block of
 * 16 rows of D1; P0 (16 x N0, the first GEMM's accumulators), D0 (f16, the
 * second GEMM's A operand) and P1 (16 x N1) all in shared memory at the
 * block, never in global memory; A0, B0, B1 read by the wmma loads straight
 * from global memory. (The wmma built-ins store their accumulator fragment
 * to memory after each call; b2b_regs_schedule keeps it in registers.) */
static inline int b2b_tc_schedule(tex_ctx *x, tex_schedule *s, tex_tensor *const t[8])
{
    tex_intrin *in = tex_intrin_builtin(x, "cuda.wmma_m16n16k16_f16f32");
    tex_stage *sp0 = tex_stage_of(s, t[4]), *sd0 = tex_stage_of(s, t[5]);
    tex_stage *sp1 = tex_stage_of(s, t[6]), *sd1 = tex_stage_of(s, t[7]);
    tex_iter *bo, *unused;
    int rc = in ? b2b_tc_lanes(x, sd1, true, &bo) : -1;
    rc = rc ? rc : b2b_tc_tiles(x, sp1, sd1, bo, in, TEX_SCOPE_SHARED, -1);
    rc = rc ? rc : tex_compute_at(sd0, sd1, bo);
    rc = rc ? rc : tex_set_scope(sd0, TEX_SCOPE_SHARED);
    rc = rc ? rc : b2b_tc_lanes(x, sd0, false, &unused);
    return rc ? rc : b2b_tc_tiles(x, sp0, sd1, bo, in, TEX_SCOPE_SHARED, -1);
}

/* The unfused pair of b2b_tc_schedule: D0 at root in blocks of 16 rows
 * (one warp each), P0's tiles in shared memory at D0's block; D1 as there,
 * reading D0 from global memory. */
static inline int b2b_tc_unfused_schedule(tex_ctx *x, tex_schedule *s, tex_tensor *const t[8])
{
    tex_intrin *in = tex_intrin_builtin(x, "cuda.wmma_m16n16k16_f16f32");
    tex_stage *sp0 = tex_stage_of(s, t[4]), *sd0 = tex_stage_of(s, t[5]);
    tex_stage *sp1 = tex_stage_of(s, t[6]), *sd1 = tex_stage_of(s, t[7]);
    tex_iter *bo0, *bo1;
    int rc = in ? b2b_tc_lanes(x, sd1, true, &bo1) : -1;
    rc = rc ? rc : b2b_tc_tiles(x, sp1, sd1, bo1, in, TEX_SCOPE_SHARED, -1);
    rc = rc ? rc : b2b_tc_lanes(x, sd0, true, &bo0);
    return rc ? rc : b2b_tc_tiles(x, sp0, sd0, bo0, in, TEX_SCOPE_SHARED, -1);
}

/* Back-to-back GEMM on tensor cores, register-resident: as b2b_tc_schedule,
 * but P0 and D0 are local (per-lane fragment tiles, src/schedule/
 * intrin_cuda_frag.c): P0 accumulates in registers over all of K0
 * ("cuda.mma_m16n16k16_f16f32_frag", its column tiles unrolled), D0 =
 * f16(relu(P0)) converts each tile in registers into the second GEMM's A
 * fragment ("cuda.mma_frag_relu_f16", tiles unrolled), and P1 (shared)
 * takes it from there ("cuda.mma_m16n16k16_f16f32_afrag", its k tiles
 * unrolled). Only P1 touches shared memory. */
static inline int b2b_regs_schedule(tex_ctx *x, tex_schedule *s, tex_tensor *const t[8])
{
    tex_intrin *frag = tex_intrin_builtin(x, "cuda.mma_m16n16k16_f16f32_frag");
    tex_intrin *relu = tex_intrin_builtin(x, "cuda.mma_frag_relu_f16");
    tex_intrin *afrag = tex_intrin_builtin(x, "cuda.mma_m16n16k16_f16f32_afrag");
    tex_stage *sp0 = tex_stage_of(s, t[4]), *sd0 = tex_stage_of(s, t[5]);
    tex_stage *sp1 = tex_stage_of(s, t[6]), *sd1 = tex_stage_of(s, t[7]);
    tex_iter *bo, *io, *jo, *ii, *ji;
    int rc = frag && relu && afrag ? b2b_tc_lanes(x, sd1, true, &bo) : -1;
    rc = rc ? rc : b2b_tc_tiles(x, sp1, sd1, bo, afrag, TEX_SCOPE_SHARED, 1);
    rc = rc ? rc : tex_compute_at(sd0, sd1, bo);
    rc = rc ? rc : tex_set_scope(sd0, TEX_SCOPE_LOCAL);
    rc = rc ? rc
            : tex_tile(sd0, tex_op_axis(sd0, 0), tex_op_axis(sd0, 1), tex_int(x, 16),
                       tex_int(x, 16), &io, &jo, &ii, &ji);
    rc = rc ? rc : tex_unroll(sd0, jo);
    rc = rc ? rc : tex_tensorize(sd0, ii, relu);
    return rc ? rc : b2b_tc_tiles(x, sp0, sd1, bo, frag, TEX_SCOPE_LOCAL, 0);
}

#endif
