/*
 * Vector min and max keep the scalar rule exactly (tex.h's tex_min/tex_max;
 * the C helpers tex_vmin_/tex_vmax_ of src/codegen_c/cvtypes.c, which use
 * x86's MINPS/MAXPS where the vector has an x86 width): max(a, b) is b
 * where a < b or b is NaN, else a, so a NaN in either operand comes out,
 * and of two equal values (+0 and -0) the first. Each case runs compiled
 * kernels whose vectors are 8, 16, 32 and 64 bytes wide (2 to 16 lanes of
 * f32 and f64: the generic helper, SSE2, AVX and AVX-512 where the machine
 * has them), with the default compiler and with clang, on operand pairs
 * that cover every rule, and compares each result bit for bit (any NaN
 * for a NaN). A max and a min reduction over rows with NaNs at the start,
 * the middle and the end of a row must give NaN there, and the extreme
 * elsewhere.
 */
#include "tt.h"
#include "support/simd_check.h"

#include <math.h>
#include <string.h>

#include "tex/tex.h"

enum { N = 77, ROWS = 6, COLS = 41 };

/* The scalar rule, in double (exact for f32 operands). */
static double rule(bool max, double a, double b)
{
    bool take_b = (max ? a < b : b < a) || b != b;
    return take_b ? b : a;
}

/* Operand pairs: every NaN, zero and order case, then ordinary values. */
static void fill_pairs(double *a, double *b)
{
    static const double special[][2] = {
        {NAN, 1},    {1, NAN},    {NAN, NAN},      {-0.0, 0.0},    {0.0, -0.0},
        {1, 2},      {2, 1},      {-INFINITY, 3},  {INFINITY, -1}, {3, INFINITY},
        {-NAN, 5},   {5, -NAN},   {-1, -INFINITY}, {7, 7},         {-0.0, -0.0},
        {NAN, -0.0}, {-0.0, NAN}, {1e-45, -1e-45}, {-2.5, -2.25},
    };
    int n_special = (int)(sizeof special / sizeof special[0]);
    for (int k = 0; k < N; k++) {
        a[k] = k < n_special ? special[k][0] : (double)((k * 37) % 23) - 11.5;
        b[k] = k < n_special ? special[k][1] : (double)((k * 53) % 19) - 9.25;
    }
}

static bool same(double want, double got)
{
    if (want != want)
        return got != got;
    return want == got && signbit(want) == signbit(got);
}

static double get(const DLTensor *t, int64_t k)
{
    return t->dtype.bits == 64 ? ((const double *)t->data)[k] : ((const float *)t->data)[k];
}

static void put(DLTensor *t, int64_t k, double v)
{
    if (t->dtype.bits == 64)
        ((double *)t->data)[k] = v;
    else
        ((float *)t->data)[k] = (float)v;
}

/* Builds s's first function for "cpu" and runs it on args; 0 or -1. */
static int build_run(tex_ctx *c, tex_schedule *s, tex_tensor *const *params, int n,
                     DLTensor *const *args, const char *what)
{
    tex_func *f = tex_lower_tensors(s, "minmax", n, params);
    tex_kernel *k = f ? tex_build(f, "cpu") : NULL;
    int rc = k ? tex_kernel_call_tensors(k, n, args) : -1;
    if (rc != 0)
        TT_FAILF("%s: %s", what, k ? tex_kernel_errmsg(k) : tex_errmsg(c));
    tex_kernel_free(k);
    return rc;
}

/* Out = max(A, B), Lo = min(A, B), vectorized by `lanes`. */
static void check_elementwise(tex_dtype t, int lanes, const char *cc)
{
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_int(c, N);
    tex_tensor *A = tex_placeholder(c, "A", t, 1, &n), *B = tex_placeholder(c, "B", t, 1, &n);
    tex_iter *i = tex_axis(c, "i", n), *j = tex_axis(c, "j", n);
    tex_tensor *Hi =
        tex_compute(c, "Hi", 1, &i, tex_max(TEX_AT(A, tex_iv(i)), TEX_AT(B, tex_iv(i))));
    tex_tensor *Lo =
        tex_compute(c, "Lo", 1, &j, tex_min(TEX_AT(A, tex_iv(j)), TEX_AT(B, tex_iv(j))));
    tex_schedule *s = tex_schedule_new(c, 2, (tex_tensor *[]){Hi, Lo});
    for (int o = 0; o < 2; o++) {
        tex_stage *st = tex_stage_of(s, o ? Lo : Hi);
        tex_iter *outer, *inner;
        TT_CHECK(tex_split(st, tex_stage_axis(st, 0), tex_int(c, lanes), &outer, &inner) == 0 &&
                 tex_vectorize(st, inner) == 0);
    }
    DLDevice cpu = {kDLCPU, 0};
    int64_t shape = N;
    DLTensor *arr[4];
    for (int k = 0; k < 4; k++)
        arr[k] = tex_array_new(1, &shape, t, cpu);
    double a[N], b[N];
    fill_pairs(a, b);
    for (int k = 0; k < N; k++) {
        put(arr[0], k, a[k]);
        put(arr[1], k, b[k]);
        put(arr[2], k, 12345);
        put(arr[3], k, 12345);
    }
    char what[96];
    snprintf(what, sizeof what, "%s x%d, %s", tex_dtype_name(t), lanes, cc ? cc : "cc");
    if (build_run(c, s, (tex_tensor *[]){A, B, Hi, Lo}, 4, arr, what) == 0)
        for (int k = 0; k < N; k++)
            for (int max = 1; max >= 0; max--) {
                double want = rule(max, get(arr[0], k), get(arr[1], k));
                double got = get(arr[max ? 2 : 3], k);
                if (!same(want, got))
                    TT_FAILF("%s: %s(%g, %g) = %g, want %g", what, max ? "max" : "min",
                             get(arr[0], k), get(arr[1], k), got, want);
            }
    for (int k = 0; k < 4; k++)
        tex_array_free(arr[k]);
    tex_ctx_free(c);
}

/* Mx[r] = max_k X[r, k] and Mn[r] = min_k X[r, k], the reduce axis
 * vectorized as a reduction by `lanes`; rows 1, 2 and 3 hold a NaN at the
 * start, in the middle and at the end. */
static void check_reduction(tex_dtype t, int lanes, const char *cc)
{
    tex_ctx *c = tex_ctx_new();
    tex_expr *shape_x[2] = {tex_int(c, ROWS), tex_int(c, COLS)};
    tex_tensor *X = tex_placeholder(c, "X", t, 2, shape_x);
    tex_tensor *out[2];
    for (int max = 0; max < 2; max++) {
        tex_iter *r = tex_axis(c, "r", shape_x[0]);
        tex_iter *k = tex_reduce_axis(c, "k", shape_x[1]);
        tex_expr *x = TEX_AT(X, tex_iv(r), tex_iv(k));
        out[max] = tex_compute(c, max ? "Mx" : "Mn", 1, &r,
                               max ? tex_reduce_max(x, 1, &k) : tex_reduce_min(x, 1, &k));
    }
    tex_schedule *s = tex_schedule_new(c, 2, out);
    for (int max = 0; max < 2; max++) {
        tex_stage *st = tex_stage_of(s, out[max]);
        tex_iter *outer, *inner;
        TT_CHECK(tex_split(st, tex_op_reduce_axis(st, 0), tex_int(c, lanes), &outer, &inner) == 0 &&
                 tex_vectorize_reduce(st, inner) == 0);
    }
    DLDevice cpu = {kDLCPU, 0};
    DLTensor *x = tex_array_new(2, (int64_t[]){ROWS, COLS}, t, cpu);
    DLTensor *mn = tex_array_new(1, (int64_t[]){ROWS}, t, cpu);
    DLTensor *mx = tex_array_new(1, (int64_t[]){ROWS}, t, cpu);
    for (int k = 0; k < ROWS * COLS; k++)
        put(x, k, (double)((k * 29) % 31) - 15.5);
    put(x, 1 * COLS + 0, NAN);
    put(x, 2 * COLS + COLS / 2, NAN);
    put(x, 3 * COLS + COLS - 1, -NAN);
    char what[96];
    snprintf(what, sizeof what, "reduce %s x%d, %s", tex_dtype_name(t), lanes, cc ? cc : "cc");
    if (build_run(c, s, (tex_tensor *[]){X, out[0], out[1]}, 3, (DLTensor *[]){x, mn, mx}, what) ==
        0)
        for (int r = 0; r < ROWS; r++) {
            double lo = INFINITY, hi = -INFINITY;
            for (int k = 0; k < COLS; k++) {
                lo = rule(false, lo, get(x, r * COLS + k));
                hi = rule(true, hi, get(x, r * COLS + k));
            }
            if (!same(lo, get(mn, r)) || !same(hi, get(mx, r)))
                TT_FAILF("%s: row %d: min %g max %g, want %g %g", what, r, get(mn, r), get(mx, r),
                         lo, hi);
        }
    tex_array_free(x);
    tex_array_free(mn);
    tex_array_free(mx);
    tex_ctx_free(c);
}

/* Every width and dtype with cc (NULL: the default compiler). */
static void check_compiler(const char *cc)
{
    simd_cc saved;
    simd_cc_use(&saved, cc);
    for (int lanes = 2; lanes <= 16; lanes *= 2)
        for (int f64 = 0; f64 < 2; f64++) {
            tex_dtype t = f64 ? TEX_F64 : TEX_F32;
            if (f64 && lanes > 8)
                continue;
            check_elementwise(t, lanes, cc);
            check_reduction(t, lanes, cc);
        }
    simd_cc_restore(&saved);
}

static void test_default_compiler(void)
{
    check_compiler(NULL);
}

static void test_clang(void)
{
    if (!simd_have_clang()) {
        TT_SKIP("clang is not installed (or the run is sanitized)");
    }
    check_compiler("clang");
}

int main(void)
{
    TT_RUN(test_default_compiler);
    TT_RUN(test_clang);
    return tt_finish();
}
