/*
 * vec_cases.h: a vectorized GPU schedule of rows, shared by the CUDA
 * emitter's checks of the emitted text (tests/unit/test_cuda_emit.c) and
 * the emulator's runs against the oracle (tests/unit/test_cuda_emu.c).
 * Header-only, public API only (<tex/tex.h>). The shared-memory tile
 * fetched with float4 is gpu_cases.h's vectile case.
 *
 * vc_rows: Y[i, j] = X[i, j + shift] * 2 + X[i, 0] over [rows, cols] in
 * dtype t, X of [rows, xcols] (xcols >= cols + shift); j split by
 * 4 * lanes: the outer part on blockIdx.x (i on blockIdx.y), the middle on
 * threadIdx.x, the inner (lanes) vectorized. Y's stores start at multiples
 * of the lanes when cols is a constant multiple of them; X's loads too when
 * xcols is and shift is 0 (otherwise they are printed lane by lane).
 */
#ifndef TEX_TESTS_SUPPORT_VEC_CASES_H
#define TEX_TESTS_SUPPORT_VEC_CASES_H

#include "tex/tex.h"

typedef struct {
    tex_func *f; /* parameters X, Y; NULL when a step failed */
    tex_tensor *x, *y;
} vc_fn;

static inline vc_fn vc_rows(tex_ctx *ctx, tex_dtype t, tex_expr *rows, tex_expr *cols,
                            tex_expr *xcols, int shift, int lanes)
{
    vc_fn r = {NULL, NULL, NULL};
    r.x = tex_placeholder(ctx, "X", t, 2, (tex_expr *[]){rows, xcols});
    tex_iter *i = tex_axis(ctx, "i", rows), *j = tex_axis(ctx, "j", cols);
    tex_expr *col = shift ? tex_add(tex_iv(j), tex_int(ctx, shift)) : tex_iv(j);
    tex_expr *v = tex_add(tex_mul(TEX_AT(r.x, tex_iv(i), col), tex_const(ctx, t, 2)),
                          TEX_AT(r.x, tex_iv(i), tex_int(ctx, 0)));
    r.y = tex_compute(ctx, "Y", 2, (tex_iter *[]){i, j}, v);
    tex_schedule *s = r.y ? tex_schedule_new(ctx, 1, (tex_tensor *[]){r.y}) : NULL;
    tex_stage *st = s ? tex_stage_of(s, r.y) : NULL;
    tex_iter *jo, *ji, *jm, *jv;
    if (!st || tex_split(st, j, tex_int(ctx, 4 * lanes), &jo, &ji) != 0 ||
        tex_split(st, ji, tex_int(ctx, lanes), &jm, &jv) != 0 ||
        tex_bind(st, i, TEX_BLOCK_Y) != 0 || tex_bind(st, jo, TEX_BLOCK_X) != 0 ||
        tex_bind(st, jm, TEX_THREAD_X) != 0 || tex_vectorize(st, jv) != 0)
        return r;
    r.f = tex_lower_tensors(s, "vec", 2, (tex_tensor *[]){r.x, r.y});
    return r;
}

#endif
