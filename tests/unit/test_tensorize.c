/*
 * Tensorize (TVM's tensorize tutorial, in C): a GEMM, a batch GEMM and a
 * GEMV whose inner tiles are replaced by a user C micro-kernel
 * (tex_intrin_extern), with an update + reset pair (the reduction split
 * outside the tile) and a body-only variant (the whole reduction inside).
 * Sizes need tails (67 x 45 x 29 with 16 x 16 x 8 tiles, 1, primes) and
 * divisible ones; each schedule is run by the interpreter and built for
 * "cpu" (when a C compiler is available) and compared with the oracle.
 * Also: mismatching intrinsics (operator, shape, tensor order, reduction or
 * not, reduction kind) fail in tex_lower with both sides printed; argument
 * errors of tex_intrin_extern / tex_intrin_builtin / tex_tensorize; out of
 * memory while building an intrinsic and while lowering.
 */
#include "tt.h"
#include "schedule/intrin.h"
#include "support/ops.h"

enum { TM = 16, TN = 16, TK = 8 };

/* The micro-kernels (rule 10: tile pointers, then one int64_t stride per
 * dimension). Static helpers are allowed in the source. */
static const char gemm_src[] =
    "static float dot(const float *a, int64_t sa, const float *b, int64_t sb, int n)\n"
    "{\n"
    "    float s = 0;\n"
    "    for (int k = 0; k < n; k++)\n"
    "        s += a[k * sa] * b[k * sb];\n"
    "    return s;\n"
    "}\n"
    "void ugemm_update(const float *A, int64_t a0, int64_t a1, const float *B, int64_t b0,\n"
    "                  int64_t b1, float *C, int64_t c0, int64_t c1)\n"
    "{\n"
    "    for (int i = 0; i < 16; i++)\n"
    "        for (int j = 0; j < 16; j++)\n"
    "            C[i * c0 + j * c1] += dot(A + i * a0, a1, B + j * b1, b0, 8);\n"
    "}\n"
    "void ugemm_reset(float *C, int64_t c0, int64_t c1)\n"
    "{\n"
    "    for (int i = 0; i < 16; i++)\n"
    "        for (int j = 0; j < 16; j++)\n"
    "            C[i * c0 + j * c1] = 0;\n"
    "}\n"
    "void ugemm_body(const float *A, int64_t a0, int64_t a1, const float *B, int64_t b0,\n"
    "                int64_t b1, float *C, int64_t c0, int64_t c1)\n"
    "{\n"
    "    for (int i = 0; i < 16; i++)\n"
    "        for (int j = 0; j < 16; j++)\n"
    "            C[i * c0 + j * c1] = dot(A + i * a0, a1, B + j * b1, b0, 8);\n"
    "}\n";

static const char gemv_src[] =
    "void ugemv_update(const float *A, int64_t a0, int64_t a1, const float *x, int64_t x0,\n"
    "                  float *y, int64_t y0)\n"
    "{\n"
    "    for (int i = 0; i < 4; i++)\n"
    "        for (int k = 0; k < 8; k++)\n"
    "            y[i * y0] += A[i * a0 + k * a1] * x[k * x0];\n"
    "}\n"
    "void ugemv_reset(float *y, int64_t y0)\n"
    "{\n"
    "    for (int i = 0; i < 4; i++)\n"
    "        y[i * y0] = 0;\n"
    "}\n";

static tex_ctx *ctx;

static tex_expr *I(int64_t v)
{
    return tex_int(ctx, v);
}

static bool have_cc(void)
{
    return tex_target_available("cpu") == 1;
}

/* kind: 0 sum of products (the real one), 1 sum of sums (wrong operator),
 * 2 operands swapped (wrong tensor order), 3 max reduction, 4 no reduction. */
static tex_tensor *gemm_desc(int m, int n, int k, int kind)
{
    tex_tensor *A = tex_placeholder(ctx, "Ad", TEX_F32, 2, (tex_expr *[]){I(m), I(k)});
    tex_tensor *B = tex_placeholder(ctx, "Bd", TEX_F32, 2, (tex_expr *[]){I(k), I(n)});
    tex_iter *i = tex_axis(ctx, "i", I(m)), *j = tex_axis(ctx, "j", I(n));
    tex_iter *r = tex_reduce_axis(ctx, "k", I(k));
    tex_expr *a = TEX_AT(A, tex_iv(i), tex_iv(r)), *b = TEX_AT(B, tex_iv(r), tex_iv(j));
    tex_expr *body = kind == 1 ? tex_add(a, b) : kind == 2 ? tex_mul(b, a) : tex_mul(a, b);
    if (kind == 4) {
        tex_tensor *E = tex_placeholder(ctx, "Ed", TEX_F32, 2, (tex_expr *[]){I(m), I(n)});
        return tex_compute(
            ctx, "Cd", 2, (tex_iter *[]){i, j},
            tex_mul(TEX_AT(E, tex_iv(i), tex_iv(j)), TEX_AT(E, tex_iv(i), tex_iv(j))));
    }
    tex_expr *red = kind == 3 ? tex_reduce_max(body, 1, &r) : tex_sum(body, 1, &r);
    return tex_compute(ctx, "Cd", 2, (tex_iter *[]){i, j}, red);
}

static tex_intrin *gemm_intrin(bool body_only, int kind)
{
    tex_tensor *d = gemm_desc(TM, TN, TK, kind);
    if (kind == 4)
        return tex_intrin_extern(ctx, "ugemm", d, gemm_src, "ugemm_body", NULL, NULL);
    return body_only
               ? tex_intrin_extern(ctx, "ugemm", d, gemm_src, "ugemm_body", NULL, NULL)
               : tex_intrin_extern(ctx, "ugemm", d, gemm_src, NULL, "ugemm_reset", "ugemm_update");
}

/* Tiles the output's last two axes by 16 x 16 and k by 8 (k unsplit when
 * !split_k), reorders (batch, io, jo, [ko,] ii, ji, ki) and tensorizes at
 * ii. Returns ii's stage result code. */
static int tensorize_gemm(tex_schedule *s, tex_tensor *C, tex_intrin *in, bool split_k)
{
    tex_stage *st = tex_stage_of(s, C);
    int nd = C->ndim;
    tex_iter *io, *jo, *ii, *ji, *ko = NULL, *ki = tex_op_reduce_axis(st, 0);
    TT_EQ_INT(tex_tile(st, tex_op_axis(st, nd - 2), tex_op_axis(st, nd - 1), I(TM), I(TN), &io, &jo,
                       &ii, &ji),
              0);
    if (split_k)
        TT_EQ_INT(tex_split(st, ki, I(TK), &ko, &ki), 0);
    tex_iter *order[7];
    int n = 0;
    if (nd == 3)
        order[n++] = tex_op_axis(st, 0);
    order[n++] = io;
    order[n++] = jo;
    if (ko)
        order[n++] = ko;
    order[n++] = ii;
    order[n++] = ji;
    order[n++] = ki;
    TT_EQ_INT(tex_reorder(st, n, order), 0);
    return tex_tensorize(st, ii, in);
}

/* Interpreter and (if available) CPU JIT against the oracle; the lowered
 * function calls the intrinsic when some tile is whole (expect_call). */
static void check_both(ops_wl *w, tex_schedule *s, const char *what, bool expect_call)
{
    char why[4096];
    tex_func *f = ops_lower(w, s, why, sizeof why);
    if (!f) {
        TT_FAILF("%s: %s", what, why);
        return;
    }
    char *txt = tex_func_str(f);
    if (!txt || (strstr(txt, "intrin ") != NULL) != expect_call)
        TT_FAILF("%s: the lowered function %s the intrinsic", what,
                 expect_call ? "does not call" : "calls");
    free(txt);
    if (ops_run_compare(w, f, 11, why, sizeof why) != 0) {
        TT_FAILF("%s (interpreter): %s", what, why);
        ops_report(w, 11, NULL, f, why);
    }
    if (have_cc() && ops_jit_compare(w, f, "cpu", 12, why, sizeof why) != 0) {
        TT_FAILF("%s (cpu): %s", what, why);
        ops_report(w, 12, NULL, f, why);
    }
}

static void gemm_case(int64_t m, int64_t n, int64_t k, bool body_only, bool sym)
{
    ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "tgemm");
    w.var_params = sym;
    ops_matmul(&w, m, n, k, sym && !body_only);
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    tex_intrin *in = body_only ? NULL : gemm_intrin(false, 0);
    if (body_only) { /* the whole k inside the tile: desc k = K */
        tex_tensor *d = gemm_desc(TM, TN, (int)k, 0);
        char src[4096];
        snprintf(src, sizeof src,
                 "void ubody(const float *A, int64_t a0, int64_t a1, const float *B, int64_t b0,\n"
                 "           int64_t b1, float *C, int64_t c0, int64_t c1)\n"
                 "{\n"
                 "    for (int i = 0; i < 16; i++)\n"
                 "        for (int j = 0; j < 16; j++) {\n"
                 "            float s = 0;\n"
                 "            for (int k = 0; k < %lld; k++)\n"
                 "                s += A[i * a0 + k * a1] * B[k * b0 + j * b1];\n"
                 "            C[i * c0 + j * c1] = s;\n"
                 "        }\n"
                 "}\n",
                 (long long)k);
        in = tex_intrin_extern(ctx, "ubody", d, src, "ubody", NULL, NULL);
    }
    TT_CHECK(in != NULL);
    TT_EQ_INT(tensorize_gemm(s, w.out, in, !body_only), 0);
    char what[128];
    snprintf(what, sizeof what, "gemm %lldx%lldx%lld %s%s", (long long)m, (long long)n,
             (long long)k, body_only ? "body" : "reset/update", sym ? " symbolic" : "");
    check_both(&w, s, what, sym || (m >= TM && n >= TN && (body_only || k >= TK)));
    tex_ctx_free(ctx);
}

static void test_gemm_update_reset(void)
{
    static const int64_t sizes[][3] = {
        {64, 64, 64}, {67, 45, 29}, {1, 1, 1}, {17, 31, 13}, {16, 16, 8}};
    for (int i = 0; i < 5; i++)
        for (int sym = 0; sym < 2; sym++)
            gemm_case(sizes[i][0], sizes[i][1], sizes[i][2], false, sym);
}

static void test_gemm_body(void)
{
    gemm_case(64, 48, 29, true, false);
    gemm_case(67, 45, 29, true, false);
    gemm_case(1, 1, 1, true, false);
    gemm_case(13, 37, 5, true, false);
}

/* A non-reduction: C = A * B elementwise with a 4 x 8 body-only intrinsic. */
static void test_elementwise(void)
{
    static const char src[] =
        "void umul(const float *a, int64_t a0, int64_t a1, const float *b, int64_t b0,\n"
        "          int64_t b1, float *c, int64_t c0, int64_t c1)\n"
        "{\n"
        "    for (int i = 0; i < 4; i++)\n"
        "        for (int j = 0; j < 8; j++)\n"
        "            c[i * c0 + j * c1] = a[i * a0 + j * a1] * b[i * b0 + j * b1];\n"
        "}\n";
    ctx = tex_ctx_new();
    tex_tensor *Ad = tex_placeholder(ctx, "Ad", TEX_F32, 2, (tex_expr *[]){I(4), I(8)});
    tex_tensor *Bd = tex_placeholder(ctx, "Bd", TEX_F32, 2, (tex_expr *[]){I(4), I(8)});
    tex_iter *di = tex_axis(ctx, "i", I(4)), *dj = tex_axis(ctx, "j", I(8));
    tex_tensor *Cd = tex_compute(
        ctx, "Cd", 2, (tex_iter *[]){di, dj},
        tex_mul(TEX_AT(Ad, tex_iv(di), tex_iv(dj)), TEX_AT(Bd, tex_iv(di), tex_iv(dj))));
    tex_intrin *in = tex_intrin_extern(ctx, "umul", Cd, src, "umul", NULL, NULL);
    ops_wl w;
    ops_init(&w, ctx, "tmul");
    tex_tensor *A = ops_input(&w, "A", 2, (tex_expr *[]){I(13), I(21)});
    tex_tensor *B = ops_input(&w, "B", 2, (tex_expr *[]){I(13), I(21)});
    tex_iter *i = tex_axis(ctx, "i", I(13)), *j = tex_axis(ctx, "j", I(21));
    w.out = tex_compute(ctx, "C", 2, (tex_iter *[]){i, j},
                        tex_mul(TEX_AT(A, tex_iv(i), tex_iv(j)), TEX_AT(B, tex_iv(i), tex_iv(j))));
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    tex_stage *st = tex_stage_of(s, w.out);
    tex_iter *io, *jo, *ii, *ji;
    TT_EQ_INT(tex_tile(st, i, j, I(4), I(8), &io, &jo, &ii, &ji), 0);
    TT_EQ_INT(tex_tensorize(st, ii, in), 0);
    check_both(&w, s, "elementwise 13x21", true);
    tex_ctx_free(ctx);
}

/* An intrinsic with reset and update but the whole reduction inside the
 * tile: RESET then UPDATE in place of the init and update nests. */
static void test_gemm_reset_update_inside(void)
{
    ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "tgemm_in");
    ops_matmul(&w, 35, 19, TK, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    TT_EQ_INT(tensorize_gemm(s, w.out, gemm_intrin(false, 0), false), 0);
    check_both(&w, s, "gemm 35x19x8, reset+update inside the tile", true);
    tex_func *f = tex_lower_tensors(s, "tg", 3, (tex_tensor *[]){w.in[0], w.in[1], w.out});
    char *txt = f ? tex_func_str(f) : NULL;
    TT_CHECK(txt && strstr(txt, "intrin ugemm.reset(") && strstr(txt, "intrin ugemm.update("));
    free(txt);
    tex_ctx_free(ctx);
}

static void test_batch_gemm(void)
{
    ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "tbgemm");
    ops_batch_matmul(&w, 3, 37, 33, 20, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    TT_EQ_INT(tensorize_gemm(s, w.out, gemm_intrin(false, 0), true), 0);
    check_both(&w, s, "batch gemm 3x37x33x20", true);
    tex_ctx_free(ctx);
}

/* TVM's tutorial layout: a write cache computed under C's 32 x 32 tile and
 * tensorized there (the tile origin is relative to the cache's region). */
static void test_cache_write(void)
{
    static const int64_t sizes[][3] = {{64, 64, 32}, {67, 45, 29}, {5, 7, 3}};
    for (int c = 0; c < 3; c++) {
        ctx = tex_ctx_new();
        ops_wl w;
        ops_init(&w, ctx, "tcache");
        ops_matmul(&w, sizes[c][0], sizes[c][1], sizes[c][2], false);
        tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
        tex_tensor *CC = tex_cache_write(s, w.out, TEX_SCOPE_GLOBAL);
        tex_stage *st = tex_stage_of(s, w.out), *cs = tex_stage_of(s, CC);
        tex_iter *io, *jo, *ii, *ji, *a, *b, *ai, *bi, *ko, *ki;
        TT_EQ_INT(
            tex_tile(st, tex_op_axis(st, 0), tex_op_axis(st, 1), I(32), I(32), &io, &jo, &ii, &ji),
            0);
        TT_EQ_INT(tex_compute_at(cs, st, jo), 0);
        TT_EQ_INT(
            tex_tile(cs, tex_op_axis(cs, 0), tex_op_axis(cs, 1), I(TM), I(TN), &a, &b, &ai, &bi),
            0);
        TT_EQ_INT(tex_split(cs, tex_op_reduce_axis(cs, 0), I(TK), &ko, &ki), 0);
        TT_EQ_INT(tex_reorder(cs, 6, (tex_iter *[]){a, b, ko, ai, bi, ki}), 0);
        TT_EQ_INT(tex_tensorize(cs, ai, gemm_intrin(false, 0)), 0);
        TT_EQ_INT(tex_parallel(st, io), 0);
        char what[64];
        snprintf(what, sizeof what, "cache_write %lldx%lldx%lld", (long long)sizes[c][0],
                 (long long)sizes[c][1], (long long)sizes[c][2]);
        check_both(&w, s, what, sizes[c][0] >= TM && sizes[c][2] >= TK);
        tex_ctx_free(ctx);
    }
}

static void test_gemv(void)
{
    ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "tgemv");
    tex_tensor *A = ops_input(&w, "A", 2, (tex_expr *[]){I(23), I(37)});
    tex_tensor *x = ops_input(&w, "x", 1, (tex_expr *[]){I(37)});
    tex_iter *i = tex_axis(ctx, "i", I(23)), *r = tex_reduce_axis(ctx, "k", I(37));
    w.out =
        tex_compute(ctx, "y", 1, &i,
                    tex_sum(tex_mul(TEX_AT(A, tex_iv(i), tex_iv(r)), TEX_AT(x, tex_iv(r))), 1, &r));
    tex_tensor *Ad = tex_placeholder(ctx, "Ad", TEX_F32, 2, (tex_expr *[]){I(4), I(8)});
    tex_tensor *xd = tex_placeholder(ctx, "xd", TEX_F32, 1, (tex_expr *[]){I(8)});
    tex_iter *di = tex_axis(ctx, "i", I(4)), *dk = tex_reduce_axis(ctx, "k", I(8));
    tex_tensor *yd = tex_compute(
        ctx, "yd", 1, &di,
        tex_sum(tex_mul(TEX_AT(Ad, tex_iv(di), tex_iv(dk)), TEX_AT(xd, tex_iv(dk))), 1, &dk));
    tex_intrin *in =
        tex_intrin_extern(ctx, "ugemv", yd, gemv_src, NULL, "ugemv_reset", "ugemv_update");
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    tex_stage *st = tex_stage_of(s, w.out);
    tex_iter *io, *ii, *ko, *ki;
    TT_EQ_INT(tex_split(st, tex_op_axis(st, 0), I(4), &io, &ii), 0);
    TT_EQ_INT(tex_split(st, tex_op_reduce_axis(st, 0), I(8), &ko, &ki), 0);
    TT_EQ_INT(tex_reorder(st, 4, (tex_iter *[]){io, ko, ii, ki}), 0);
    TT_EQ_INT(tex_tensorize(st, ii, in), 0);
    check_both(&w, s, "gemv 23x37", true);
    tex_ctx_free(ctx);
}

/* The exported PREFIX.c (the intrinsic's source included) compiles alone. */
static void check_export(const tex_kernel *k)
{
    char dir[] = "/tmp/tex_tensorize_XXXXXX", prefix[128], cmd[512];
    if (!mkdtemp(dir)) {
        TT_FAILF("mkdtemp failed");
        return;
    }
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    TT_EQ_INT(tex_kernel_export(k, prefix), 0);
    const char *cc = getenv("TEX_CC");
    snprintf(cmd, sizeof cmd, "%s -std=c99 -O2 -fopenmp -c -o %s.o %s.c > %s/log 2>&1",
             cc && *cc ? cc : "cc", prefix, prefix, dir);
    TT_EQ_INT(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    TT_EQ_INT(system(cmd), 0);
}

/* Divisible sizes: no IF around the calls; the printed IR shows the call. */
static void test_printed_ir(void)
{
    ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "tgemm");
    ops_matmul(&w, 32, 32, 16, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    TT_EQ_INT(tensorize_gemm(s, w.out, gemm_intrin(false, 0), true), 0);
    char *sch = tex_schedule_str(s);
    TT_CHECK(sch && strstr(sch, "tensorize at i.inner with intrinsic ugemm"));
    free(sch);
    tex_func *f = tex_lower_tensors(s, "tg", 3, (tex_tensor *[]){w.in[0], w.in[1], w.out});
    char *txt = f ? tex_func_str(f) : NULL;
    TT_CHECK(txt && strstr(txt, "intrin ugemm.update("));
    TT_CHECK(txt && strstr(txt, "intrin ugemm.reset("));
    TT_CHECK(txt && !strstr(txt, "if ("));
    if (have_cc()) {
        tex_kernel *k = f ? tex_build(f, "cpu") : NULL;
        const char *src = k ? tex_kernel_source(k) : NULL;
        TT_CHECK(src && strstr(src, "ugemm_update((const float *)("));
        TT_CHECK(src && strstr(src, "static float dot("));
        check_export(k);
        tex_kernel_free(k);
    }
    free(txt);
    tex_ctx_free(ctx);
}

/* A "cuda." built-in's source is not C: the CPU emitter refuses it, the
 * interpreter still runs it by its description. */
static void test_cuda_intrin_on_cpu(void)
{
    ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "tcuda");
    ops_matmul(&w, 32, 32, 16, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    tex_intrin *in = texi_intrin_make(ctx, "test", "cuda.fake", gemm_desc(TM, TN, TK, 0),
                                      "__device__ void f(void) {}", NULL, "f", "f", "cuda.fake");
    TT_CHECK(in != NULL);
    TT_EQ_INT(tensorize_gemm(s, w.out, in, true), 0);
    char why[2048];
    tex_func *f = ops_lower(&w, s, why, sizeof why);
    TT_CHECK(f != NULL);
    if (f && ops_run_compare(&w, f, 3, why, sizeof why) != 0)
        TT_FAILF("interpreter: %s", why);
    TT_CHECK(f && tex_build(f, "c") == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EUNAVAILABLE);
    TT_CHECK(strstr(tex_errmsg(ctx), "tensor intrinsic 'cuda.fake' has no C source") != NULL);
    tex_ctx_free(ctx);
}

/* --------------------------------------------------------------- mismatches */

static void expect_mismatch(tex_intrin *in, int m, int n, int k, bool split_k, const char *part,
                            bool with_sides)
{
    ops_wl w;
    ops_init(&w, ctx, "tmis");
    ops_matmul(&w, m, n, k, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    TT_EQ_INT(tensorize_gemm(s, w.out, in, split_k), 0);
    tex_func *f = tex_lower_tensors(s, "tm", 3, (tex_tensor *[]){w.in[0], w.in[1], w.out});
    TT_CHECK(f == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    const char *msg = tex_errmsg(ctx);
    bool sides =
        strstr(msg, "\n  stage:     C[i, j] = sum(") && strstr(msg, "\n  intrinsic: Cd[i, j] = ");
    if (!strstr(msg, "stage 'C'") || !strstr(msg, "intrinsic 'ugemm'") || !strstr(msg, part) ||
        (with_sides && !sides))
        TT_FAILF("message lacks '%s' or a side: %s", part, msg);
    tex_clear_error(ctx);
}

static void test_mismatch(void)
{
    ctx = tex_ctx_new();
    expect_mismatch(gemm_intrin(false, 1), 32, 32, 16, true, "where the intrinsic computes", true);
    expect_mismatch(gemm_intrin(false, 2), 32, 32, 16, true, "is read at index", true);
    expect_mismatch(gemm_intrin(false, 3), 32, 32, 16, true, "reduces with sum", true);
    expect_mismatch(gemm_intrin(true, 4), 32, 32, 16, true, "is a reduction but", true);
    /* wrong shape: tile k of 8 against a desc k of 4 */
    tex_intrin *k4 = tex_intrin_extern(ctx, "ugemm", gemm_desc(TM, TN, 4, 0), gemm_src, NULL,
                                       "ugemm_reset", "ugemm_update");
    expect_mismatch(k4, 32, 32, 16, true, "has extent 8", true);
    /* body only, but k.outer outside the tile */
    expect_mismatch(gemm_intrin(true, 0), 32, 32, 16, true, "needs the intrinsic's reset", false);
    tex_ctx_free(ctx);
}

/* Split after tensorize: the axis is no longer a leaf at lowering. */
static void test_not_a_leaf_any_more(void)
{
    ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "tleaf");
    ops_matmul(&w, 32, 32, 16, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    tex_stage *st = tex_stage_of(s, w.out);
    tex_iter *a, *b;
    TT_EQ_INT(tex_tensorize(st, tex_op_axis(st, 0), gemm_intrin(true, 0)), 0);
    TT_EQ_INT(tex_split(st, tex_op_axis(st, 0), I(2), &a, &b), 0);
    TT_CHECK(tex_lower_tensors(s, "tl", 3, (tex_tensor *[]){w.in[0], w.in[1], w.out}) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "no longer a leaf") != NULL);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------------ argument errors */

static void expect_err(const void *got, int code, const char *part)
{
    TT_CHECK(got == NULL);
    TT_EQ_INT(tex_errcode(ctx), code);
    if (!strstr(tex_errmsg(ctx), part))
        TT_FAILF("message lacks '%s': %s", part, tex_errmsg(ctx));
    tex_clear_error(ctx);
}

static void test_intrin_errors(void)
{
    ctx = tex_ctx_new();
    tex_tensor *d = gemm_desc(TM, TN, TK, 0), *e = gemm_desc(TM, TN, TK, 4);
    tex_tensor *ph = tex_placeholder(ctx, "P", TEX_F32, 1, (tex_expr *[]){I(4)});
    TT_CHECK(tex_intrin_extern(NULL, "x", d, gemm_src, "f", NULL, NULL) == NULL);
    expect_err(tex_intrin_extern(ctx, NULL, d, gemm_src, "f", NULL, NULL), TEX_EINVAL,
               "tex_intrin_extern: the intrinsic's name");
    expect_err(tex_intrin_extern(ctx, "", d, gemm_src, "f", NULL, NULL), TEX_EINVAL, "name");
    expect_err(tex_intrin_extern(ctx, "x", NULL, gemm_src, "f", NULL, NULL), TEX_EMISUSE, "desc");
    expect_err(tex_intrin_extern(ctx, "x", ph, gemm_src, "f", NULL, NULL), TEX_EINVAL,
               "placeholder");
    expect_err(tex_intrin_extern(ctx, "x", d, NULL, "f", NULL, NULL), TEX_EINVAL, "c_source");
    expect_err(tex_intrin_extern(ctx, "x", d, gemm_src, "1f", NULL, NULL), TEX_EINVAL,
               "body_fn \"1f\" is not a C identifier");
    expect_err(tex_intrin_extern(ctx, "x", d, gemm_src, NULL, "r", "u-2"), TEX_EINVAL, "update_fn");
    expect_err(tex_intrin_extern(ctx, "x", d, gemm_src, NULL, NULL, NULL), TEX_EINVAL,
               "are required");
    expect_err(tex_intrin_extern(ctx, "x", d, gemm_src, NULL, "r", NULL), TEX_EINVAL, "together");
    expect_err(tex_intrin_extern(ctx, "x", e, gemm_src, NULL, "r", "u"), TEX_EINVAL,
               "no reduction");
    expect_err(tex_intrin_extern(ctx, "x", e, gemm_src, "b", "r", "u"), TEX_EINVAL, "no reduction");
    expect_err(tex_intrin_builtin(ctx, "nope"), TEX_EINVAL, "unknown intrinsic \"nope\"");
    expect_err(tex_intrin_builtin(ctx, "cpu.nope"), TEX_EINVAL, "unknown intrinsic");
    expect_err(tex_intrin_builtin(ctx, NULL), TEX_EINVAL, "tex_intrin_builtin");
    TT_CHECK(tex_intrin_builtin(NULL, "cpu.gemm_f32_avx2") == NULL);
    tex_ctx *other = tex_ctx_new();
    tex_tensor *od =
        tex_compute(other, "O", 1, (tex_iter *[]){tex_axis(other, "i", tex_int(other, 2))},
                    tex_const(other, TEX_F32, 1));
    expect_err(tex_intrin_extern(ctx, "x", od, gemm_src, "f", NULL, NULL), TEX_EMISUSE,
               "another context");
    tex_ctx_free(other);
    tex_ctx_free(ctx);
}

static void test_tensorize_errors(void)
{
    ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "terr");
    ops_matmul(&w, 32, 32, 16, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    tex_stage *st = tex_stage_of(s, w.out), *pa = tex_stage_of(s, w.in[0]);
    tex_intrin *in = gemm_intrin(false, 0), *in2 = gemm_intrin(true, 0);
    tex_iter *io, *ii, *i = tex_op_axis(st, 0);
    char *before = tex_schedule_str(s);
    TT_EQ_INT(tex_tensorize(NULL, i, in), TEX_EMISUSE);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_tensorize(st, NULL, in), TEX_EMISUSE);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_tensorize(st, i, NULL), TEX_EMISUSE);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_tensorize(pa, i, in), TEX_EINVAL);
    tex_clear_error(ctx);
    tex_ctx *other = tex_ctx_new();
    tex_tensor *od =
        tex_compute(other, "O", 1, (tex_iter *[]){tex_axis(other, "i", tex_int(other, 2))},
                    tex_const(other, TEX_F32, 1));
    tex_intrin *oin = tex_intrin_extern(other, "o", od, "", "f", NULL, NULL);
    TT_CHECK(oin != NULL);
    TT_EQ_INT(tex_tensorize(st, i, oin), TEX_EMISUSE);
    TT_CHECK(strstr(tex_errmsg(ctx), "another context") != NULL);
    tex_clear_error(ctx);
    char *after = tex_schedule_str(s);
    TT_CHECK(before && after && strcmp(before, after) == 0);
    free(after);
    TT_EQ_INT(tex_split(st, i, I(16), &io, &ii), 0);
    TT_EQ_INT(tex_tensorize(st, i, in), TEX_EINVAL); /* no longer a leaf */
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_tensorize: axis 'i' of stage 'C' is not a leaf") != NULL);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_tensorize(st, ii, in), 0);
    TT_EQ_INT(tex_tensorize(st, ii, in), 0); /* the same again: no-op */
    TT_EQ_INT(tex_tensorize(st, ii, in2), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "already tensorized at axis 'i.inner'") != NULL);
    tex_clear_error(ctx);
    free(before);
    tex_ctx_free(other);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------------ out of memory */

static bool oom_now;    /* while set, the test allocator fails its ... */
static int oom_fail_at; /* ... request number oom_fail_at (0-based), once */

static void *oom_alloc(void *user, size_t size)
{
    (void)user;
    if (oom_now && oom_fail_at-- == 0)
        return NULL;
    return malloc(size);
}

static void oom_free(void *user, void *p)
{
    (void)user;
    free(p);
}

/* Leaves r bytes in the arena's current chunk (src/util/arena.c: 64 KiB). */
static void leave_room(tex_ctx *c, size_t r)
{
    const size_t chunk = 64 * 1024;
    size_t rem = chunk - c->arena.used;
    if (rem < r + 16) {
        texi_alloc(c, rem + 16, "padding");
        rem = chunk - c->arena.used;
    }
    if (rem > r)
        texi_alloc(c, rem - r, "padding");
}

static tex_schedule *oom_setup(ops_wl *w, tex_allocator *al, bool with_intrin)
{
    oom_now = false;
    ctx = tex_ctx_new_ex(al);
    ops_init(w, ctx, "toom");
    ops_matmul(w, 35, 20, 16, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &w->out);
    if (with_intrin)
        TT_EQ_INT(tensorize_gemm(s, w->out, gemm_intrin(false, 0), true), 0);
    return s;
}

/* Out of memory at every point: tex_intrin_extern with the arena's chunk
 * nearly full (each allocation of it fails once), and lowering a tensorized
 * schedule with its n-th request to the allocator failing, for every n:
 * NULL with TEX_ENOMEM, never another code, never a crash. */
static void test_out_of_memory(void)
{
    tex_allocator al = {sizeof al, oom_alloc, oom_free, NULL};
    int fails[2] = {0, 0};
    for (int phase = 0; phase < 2; phase++) {
        bool done = false;
        for (int n = 0; n < 100000 && !done; n++) {
            ops_wl w;
            tex_schedule *s = oom_setup(&w, &al, phase == 1);
            tex_tensor *d = gemm_desc(TM, TN, TK, 0);
            leave_room(ctx, phase ? 65536 : (size_t)n * 16);
            oom_now = true;
            oom_fail_at = phase ? n : 0;
            if (phase == 0)
                done = tex_intrin_extern(ctx, "ugemm", d, gemm_src, NULL, "ugemm_reset",
                                         "ugemm_update") != NULL;
            else
                done = tex_lower_tensors(s, "to", 3, (tex_tensor *[]){w.in[0], w.in[1], w.out}) !=
                       NULL;
            if (!done) {
                fails[phase]++;
                if (tex_errcode(ctx) != TEX_ENOMEM)
                    TT_FAILF("phase %d, n %d: %d %s", phase, n, tex_errcode(ctx), tex_errmsg(ctx));
            }
            oom_now = false;
            tex_ctx_free(ctx);
        }
        TT_CHECK(done);
    }
    TT_CHECK(fails[0] > 1 && fails[1] > 1);
}

int main(void)
{
    TT_RUN(test_gemm_update_reset);
    TT_RUN(test_gemm_body);
    TT_RUN(test_elementwise);
    TT_RUN(test_gemm_reset_update_inside);
    TT_RUN(test_batch_gemm);
    TT_RUN(test_gemv);
    TT_RUN(test_cache_write);
    TT_RUN(test_printed_ir);
    TT_RUN(test_cuda_intrin_on_cpu);
    TT_RUN(test_mismatch);
    TT_RUN(test_not_a_leaf_any_more);
    TT_RUN(test_intrin_errors);
    TT_RUN(test_tensorize_errors);
    TT_RUN(test_out_of_memory);
    return tt_finish();
}
