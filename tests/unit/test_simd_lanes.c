/*
 * The lane count of vectorized loops (src/lower/simd_lanes.c): it follows
 * the body's values, not the integer arithmetic that only feeds addresses.
 * Every workload computes f32 data over an i64 symbolic size n, so its
 * indices (loop variables, addresses) are i64. Where i64 arithmetic only
 * feeds addresses (dense accesses, a gather whose index is computed from
 * the loop variable, a reduction's accumulator) or is invariant in the
 * vectorized loop (converted to f32, compared), the generated C must use
 * f32 vectors of the native width (vector register bytes / 4 lanes, from
 * texi_host_vector_bytes, so AVX-512 hosts are checked too; a guarded
 * reduction's last chunk, whose guard is a value, may be narrower); where
 * an i64 is a value (the loop variable compared or converted to f32, an
 * i64 index tensor loaded), i64 lanes size the loop (register bytes / 8)
 * and no f32 vector is wider. An i8 loop gets i8 lanes (register bytes,
 * at most its 32 iterations), not those of its indices either.
 *
 * Each workload's last axis is split by 32 (the lane check) and by 13
 * (chunks of several widths), its inner part vectorized; one kernel runs
 * at every n of SIZES (odd and prime ones, smaller than a vector too),
 * with the default compiler and clang when installed, on random non-zero
 * inputs and poisoned outputs against the reference evaluator; the
 * interpreter runs the CPU tail's vector statements lane by lane too.
 */
#include "tt.h"
#include "support/simd_check.h"
#include "util/host.h"

#include "tex/tex.h"

typedef tex_tensor *(*workload_fn)(ops_wl *w);

static const int FACTORS[] = {32, 13};
static const int64_t SIZES[] = {1, 3, 7, 13, 31, 33, 100};
#define N_FACTORS (int)(sizeof FACTORS / sizeof FACTORS[0])
#define N_SIZES (int)(sizeof SIZES / sizeof SIZES[0])

/* -------------------------------------------------------------- workloads */

/* The i64 symbolic size n, bound to each value of SIZES at call time. */
static tex_expr *size_n(ops_wl *w)
{
    tex_expr *n = tex_var(w->ctx, "n", TEX_I64);
    w->vars[w->n_vars] = n;
    w->vals[w->n_vars++] = SIZES[0];
    return n;
}

static tex_tensor *input(ops_wl *w, const char *name, tex_dtype t, int ndim, tex_expr **shape)
{
    tex_tensor *x = tex_placeholder(w->ctx, name, t, ndim, shape);
    w->in[w->n_in++] = x;
    return x;
}

/* A 3 x n f32 input A and the axes i, j over it. */
static tex_tensor *rows(ops_wl *w, tex_expr **shape, tex_iter **i, tex_iter **j)
{
    shape[0] = tex_int(w->ctx, 3);
    shape[1] = size_n(w);
    *i = tex_axis(w->ctx, "i", shape[0]);
    *j = tex_axis(w->ctx, "j", shape[1]);
    return input(w, "A", TEX_F32, 2, shape);
}

/* Out[i, j] = A[i, j] * B[i, j] + 1.5: i64 addresses only. */
static tex_tensor *dense(ops_wl *w)
{
    tex_expr *shape[2];
    tex_iter *i, *j;
    tex_tensor *A = rows(w, shape, &i, &j), *B = input(w, "B", TEX_F32, 2, shape);
    tex_expr *v = tex_add(tex_mul(TEX_AT(A, tex_iv(i), tex_iv(j)), TEX_AT(B, tex_iv(i), tex_iv(j))),
                          ops_f(w, 1.5));
    return w->out = tex_compute(w->ctx, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[i, j] = A[i, (j * 7 + i) % n] - A[i, j]: a gather whose i64 index
 * vector is computed from the loop variable, used as an address only. */
static tex_tensor *gather_computed(ops_wl *w)
{
    tex_expr *shape[2];
    tex_iter *i, *j;
    tex_tensor *A = rows(w, shape, &i, &j);
    tex_expr *idx =
        tex_floormod(tex_add(tex_mul(tex_iv(j), tex_int(w->ctx, 7)), tex_iv(i)), shape[1]);
    tex_expr *v = tex_sub(TEX_AT(A, tex_iv(i), idx), TEX_AT(A, tex_iv(i), tex_iv(j)));
    return w->out = tex_compute(w->ctx, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[i, j] = A[i, j] * f32(n - i) + select(n > 5, 1, -1): i64 values that
 * do not vary along j, scalars broadcast into f32 vectors. */
static tex_tensor *invariant(ops_wl *w)
{
    tex_expr *shape[2];
    tex_iter *i, *j;
    tex_tensor *A = rows(w, shape, &i, &j);
    tex_expr *scale = tex_cast(TEX_F32, tex_sub(shape[1], tex_iv(i)));
    tex_expr *sign =
        tex_select(tex_gt(shape[1], tex_int(w->ctx, 5)), ops_f(w, 1.0), ops_f(w, -1.0));
    tex_expr *v = tex_add(tex_mul(TEX_AT(A, tex_iv(i), tex_iv(j)), scale), sign);
    return w->out = tex_compute(w->ctx, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[i, j] = A8[i, j] * 3 - B8[i, j] in i8: narrow data, as many lanes
 * as fit (at most the 32 iterations of the lane check). */
static tex_tensor *narrow_i8(ops_wl *w)
{
    tex_expr *shape[2] = {tex_int(w->ctx, 3), size_n(w)};
    tex_tensor *A = input(w, "A8", TEX_I8, 2, shape), *B = input(w, "B8", TEX_I8, 2, shape);
    tex_iter *i = tex_axis(w->ctx, "i", shape[0]), *j = tex_axis(w->ctx, "j", shape[1]);
    tex_expr *a = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(j)), tex_const(w->ctx, TEX_I8, 3));
    tex_expr *v = tex_sub(a, TEX_AT(B, tex_iv(i), tex_iv(j)));
    return w->out = tex_compute(w->ctx, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[i, j] = select(j * j < n, A[i, j], A[i, j] * -3): the i64 loop
 * variable compared, a value (not linear in j, so pass select_partition
 * does not split its loops where the condition is decided). */
static tex_tensor *iota_compare(ops_wl *w)
{
    tex_expr *shape[2];
    tex_iter *i, *j;
    tex_tensor *A = rows(w, shape, &i, &j);
    tex_expr *a = TEX_AT(A, tex_iv(i), tex_iv(j));
    tex_expr *lo = tex_lt(tex_mul(tex_iv(j), tex_iv(j)), shape[1]);
    tex_expr *v = tex_select(lo, a, tex_mul(a, ops_f(w, -3.0)));
    return w->out = tex_compute(w->ctx, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[i, j] = A[i, j] * f32(j) + f32(n - j - i): i64 values converted to f32. */
static tex_tensor *iota_float(ops_wl *w)
{
    tex_expr *shape[2];
    tex_iter *i, *j;
    tex_tensor *A = rows(w, shape, &i, &j);
    tex_expr *rest = tex_sub(tex_sub(shape[1], tex_iv(j)), tex_iv(i));
    tex_expr *v = tex_add(tex_mul(TEX_AT(A, tex_iv(i), tex_iv(j)), tex_cast(TEX_F32, tex_iv(j))),
                          tex_cast(TEX_F32, rest));
    return w->out = tex_compute(w->ctx, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[i, j] = A[i, (Idx[j] * 5 + j) % n] * 2: a gather through an i64
 * index tensor (loaded i64 elements). */
static tex_tensor *gather_i64(ops_wl *w)
{
    tex_expr *shape[2];
    tex_iter *i, *j;
    tex_tensor *A = rows(w, shape, &i, &j), *Idx = input(w, "Idx", TEX_I64, 1, shape + 1);
    tex_expr *k = tex_add(tex_mul(TEX_AT(Idx, tex_iv(j)), tex_int(w->ctx, 5)), tex_iv(j));
    tex_expr *v = tex_mul(TEX_AT(A, tex_iv(i), tex_floormod(k, shape[1])), ops_f(w, 2.0));
    return w->out = tex_compute(w->ctx, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* R[i] = sum_k A[i, k]: a vectorized reduction over an i64 axis. */
static tex_tensor *row_sum(ops_wl *w)
{
    tex_expr *shape[2];
    tex_iter *i, *j;
    tex_tensor *A = rows(w, shape, &i, &j);
    tex_iter *k = tex_reduce_axis(w->ctx, "k", shape[1]);
    tex_expr *red = tex_sum(TEX_AT(A, tex_iv(i), tex_iv(k)), 1, &k);
    return w->out = tex_compute(w->ctx, "R", 1, &i, red);
}

/* ------------------------------------------------------------------ checks */

/* The output's last axis (its reduce axis when it has one) split by
 * factor, the inner part vectorized. */
static tex_schedule *split_vectorize(ops_wl *w, int factor)
{
    tex_schedule *s = tex_schedule_new(w->ctx, 1, &w->out);
    tex_stage *st = tex_stage_of(s, w->out);
    tex_iter *k = st ? tex_op_reduce_axis(st, 0) : NULL, *o, *in;
    tex_iter *axis = k ? k : st ? tex_stage_axis(st, tex_stage_naxes(st) - 1) : NULL;
    if (!axis || tex_split(st, axis, tex_int(w->ctx, factor), &o, &in) != 0)
        return NULL;
    return (k ? tex_vectorize_reduce(st, in) : tex_vectorize(st, in)) == 0 ? s : NULL;
}

/* Whether the C source of f uses vectors of w->out's dtype (f32 for a
 * reduction) of `lanes` lanes and none of twice as many. */
static bool has_lanes(ops_wl *w, tex_func *f, int lanes)
{
    tex_dtype t = tex_tensor_dtype(w->out);
    tex_kernel *k = tex_build(f, "c");
    const char *src = k ? tex_kernel_source(k) : NULL;
    char want[32], wider[32];
    snprintf(want, sizeof want, "tex_v%d_%s ", lanes, tex_dtype_name(t));
    snprintf(wider, sizeof wider, "tex_v%d_%s ", lanes * 2, tex_dtype_name(t));
    bool ok = src && strstr(src, want) && !strstr(src, wider);
    if (!ok)
        printf("  %s: wanted %s vectors of %d lanes:\n%s\n", w->name, tex_dtype_name(t), lanes,
               src ? src : tex_errmsg(w->ctx));
    tex_kernel_free(k);
    return ok;
}

/* Workload fn with each factor: the lane check (first factor: f32 vectors
 * of vector bytes / lane_bytes lanes), then the interpreter and the
 * compiled kernel (each compiler) at every size against the oracle. */
static void check(const char *name, workload_fn fn, int lane_bytes)
{
    bool clang = simd_have_clang();
    for (int f = 0; f < N_FACTORS; f++) {
        tex_ctx *ctx = tex_ctx_new();
        ops_wl w;
        ops_init(&w, ctx, name);
        w.exact = true;
        TT_CHECK(fn(&w) != NULL);
        tex_schedule *s = split_vectorize(&w, FACTORS[f]);
        char why[2048];
        tex_func *lowered = s ? ops_lower(&w, s, why, sizeof why) : NULL;
        TT_CHECK(lowered != NULL);
        ops_log log = {0};
        ops_logf(&log, "%s, split by %d, inner part vectorized, n symbolic (i64)\n", name,
                 FACTORS[f]);
        int lanes = texi_host_vector_bytes() / lane_bytes;
        if (lowered && f == 0)
            TT_CHECK(has_lanes(&w, lowered, lanes < FACTORS[0] ? lanes : FACTORS[0]));
        if (lowered)
            simd_run_compilers(&w, lowered, &log, N_SIZES, SIZES, clang);
        tex_ctx_free(ctx);
    }
}

/* i64 arithmetic that only feeds addresses or does not vary with the
 * loop variable: f32 lanes. */
static void test_address_only(void)
{
    check("dense", dense, 4);
    check("gather_computed", gather_computed, 4);
    check("row_sum", row_sum, 4);
    check("invariant", invariant, 4);
    check("narrow_i8", narrow_i8, 1);
}

/* i64 values: i64 lanes. */
static void test_i64_values(void)
{
    check("iota_compare", iota_compare, 8);
    check("iota_float", iota_float, 8);
    check("gather_i64", gather_i64, 8);
}

int main(void)
{
    TT_RUN(test_address_only);
    TT_RUN(test_i64_values);
    return tt_finish();
}
