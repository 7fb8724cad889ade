/*
 * Scalar parameters (tex_param and tex_value in tex.h): a tex_var of any
 * dtype is a kernel parameter, used in compute bodies, given a value by the
 * caller and converted to the var's dtype.
 *
 *   epilogue_*     D = alpha * A + beta * B with alpha and beta of each of
 *                  the 13 dtypes (values given as I64 and as F64);
 *   gemm           C = alpha * (A @ B) + beta * C0, tiled, compute_at, parallel;
 *   clamp          D = min(max(A, lo), hi) with f32, i32 and i8 bounds;
 *   mixed          f32, f16, bool and i8 scalars next to a symbolic size.
 * Each runs, from random non-zero inputs and a poisoned output, in the
 * interpreter, through the CPU JIT ("cpu" and "cpu -threads=2") and, for
 * the GPU-scheduled ones, as "cuda -emit-only" source (NVRTC compiles it
 * when present) run by the CUDA emulator (tests/support/cuda_emu.h, skipped
 * without g++); every result is compared with tex_eval_reference_ex fed the
 * same values.
 *
 *   export         the mixed kernel exported (PREFIX.h has each scalar's own
 *                  C type), compiled with a driver that calls it, compared.
 *   range_errors   values a var cannot hold (i8 300, u32 -1, NaN or 2.5 for
 *                  an integer, bool 2, a tensor for a scalar, F64 for a size)
 *                  are TEX_EINVAL naming the kernel and the parameter in the
 *                  JIT, the interpreter and the oracle, with the output
 *                  untouched; the range limits themselves are accepted.
 *   oracle_errors  tex_eval_reference_ex's own argument checks.
 */
#include "tt.h"
#include "support/cuda_emu.h"
#include "support/tmpdir.h"

#include "ir/eval.h"
#include "lower/lower.h"
#include "interp/interp.h"
#include "util/half.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tex/tex.h"

#define MAXP 10
#define I64(x) ((tex_value){.kind = TEX_VAL_I64, .i = (x)})
#define F64(x) ((tex_value){.kind = TEX_VAL_F64, .f = (x)})
#define SI(x)                                                                                      \
    {                                                                                              \
        .kind = TEX_VAL_I64, .i = (x)                                                              \
    } /* the same in static initializers */
#define SF(x)                                                                                      \
    {                                                                                              \
        .kind = TEX_VAL_F64, .f = (x)                                                              \
    }
#define TP(x) ((tex_param){.kind = TEX_ARG_TENSOR, .t = (x)})
#define VP(x) ((tex_param){.kind = TEX_ARG_VAR, .v = (x)})

static const DLDevice HOST = {kDLCPU, 0};
static char dir[] = "/tmp/tex-test-scalar-XXXXXX";

/* A kernel under test: its parameters, the scalar values of one call (the
 * tensor entries are filled by run_case) and its schedule. */
typedef struct {
    tex_ctx *ctx;
    const char *name;
    int n;
    tex_param p[MAXP];
    tex_value v[MAXP];
    tex_schedule *s;
    bool gpu; /* bound to blocks and threads: run by the CUDA emulator too */
} kcase;

static void kcase_init(kcase *kc, const char *name)
{
    memset(kc, 0, sizeof *kc);
    kc->ctx = tex_ctx_new();
    kc->name = name;
}

static void add_tensor(kcase *kc, tex_tensor *t)
{
    kc->p[kc->n] = TP(t);
    kc->v[kc->n++] = (tex_value){.kind = TEX_VAL_TENSOR};
}

static void add_var(kcase *kc, tex_expr *v, tex_value value)
{
    kc->p[kc->n] = VP(v);
    kc->v[kc->n++] = value;
}

/* ------------------------------------------------------------ arrays */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The extent of dimension e: a constant, or a size var among the parameters. */
static int64_t extent_of(const kcase *kc, const tex_expr *e)
{
    for (int i = 0; i < kc->n; i++)
        if (kc->p[i].kind == TEX_ARG_VAR && kc->p[i].v == e)
            return kc->v[i].i;
    return e->u.i;
}

static DLTensor *array_for(const kcase *kc, const tex_tensor *t)
{
    int64_t shape[4];
    for (int d = 0; d < t->ndim; d++)
        shape[d] = extent_of(kc, t->shape[d]);
    return tex_array_new(t->ndim, shape, t->dtype, HOST);
}

static int64_t numel(const DLTensor *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++)
        n *= a->shape[d];
    return n;
}

/* Random non-zero values: floats with |x| in [0.5, 1.5], integers in
 * +-[1, 9] (unsigned: [1, 9]), bools 0 or 1. */
static void fill_random(DLTensor *a, tex_dtype t, uint64_t *rng)
{
    for (int64_t k = 0; k < numel(a); k++) {
        uint64_t r = rng_next(rng);
        texi_eval_value v;
        bool neg = (r & 1) && texi_dtype_is_signed(t);
        if (texi_dtype_is_float(t))
            v.f = texi_round_to_dtype(t, (neg ? -1 : 1) * (0.5 + (double)(r >> 11) / 0x1p53));
        else if (t == TEX_BOOL)
            v.i = (r >> 9) & 1;
        else
            v.i = (neg ? -1 : 1) * (int64_t)(1 + (r >> 20) % 9);
        texi_eval_store(t, a->data, k, v);
    }
}

/* NaN bytes for floats (0xFF..: NaN in every float format), 0xA5 otherwise. */
static void poison(DLTensor *a, tex_dtype t)
{
    memset(a->data, texi_dtype_is_float(t) ? 0xFF : 0xA5, (size_t)(numel(a) * tex_dtype_bytes(t)));
}

/* Index of the first element of got that differs from want beyond the
 * dtype's tolerance (NaN never matches), or -1. */
static int64_t compare(const DLTensor *got, const DLTensor *want, tex_dtype t)
{
    double tol = t == TEX_F64 ? 1e-12 : t == TEX_F32 ? 1e-5 : t == TEX_F16 ? 2e-3 : 1.6e-2;
    for (int64_t k = 0; k < numel(want); k++) {
        texi_eval_value g = texi_eval_load(t, got->data, k), w = texi_eval_load(t, want->data, k);
        if (!texi_dtype_is_float(t) ? g.i != w.i
                                    : !(fabs(g.f - w.f) <= tol * (fabs(w.f) > 1 ? fabs(w.f) : 1)))
            return k;
    }
    return -1;
}

static double as_double(const DLTensor *a, tex_dtype t, int64_t k)
{
    texi_eval_value v = texi_eval_load(t, a->data, k);
    return texi_dtype_is_float(t) ? v.f : t == TEX_U64 ? (double)(uint64_t)v.i : (double)v.i;
}

/* ------------------------------------------------------------ running */

typedef enum { RUN_INTERP, RUN_CPU, RUN_CPU2, RUN_EMU } runner;
static const char *const runner_names[] = {"interpreter", "cpu", "cpu -threads=2",
                                           "cuda -emit-only + emulator"};

/* Runs f with vals by runner r; 0, 1 when skipped, or an error code. */
static int run_with(tex_func *f, runner r, int n, const tex_value vals[], char *err, size_t en)
{
    if (r == RUN_INTERP)
        return texi_interp_run(f, n, vals, err, en);
    if (r == RUN_EMU && !cuda_emu_have_cxx())
        return 1;
    if (r != RUN_EMU && !tex_target_available("cpu"))
        return 1;
    tex_kernel *k = tex_build(f, r == RUN_CPU    ? "cpu"
                                 : r == RUN_CPU2 ? "cpu -threads=2"
                                                 : "cuda -emit-only");
    if (!k) {
        snprintf(err, en, "tex_build: %s", tex_errmsg(f->ctx));
        return tex_errcode(f->ctx);
    }
    int rc;
    if (r == RUN_EMU) {
        cuda_emu *e = cuda_emu_build(tex_kernel_source(k), err, en);
        rc = e ? cuda_emu_run(e, k, n, vals, err, en) : -1;
        cuda_emu_free(e);
    } else {
        rc = tex_kernel_call(k, n, vals);
        if (rc != 0)
            snprintf(err, en, "%s", tex_kernel_errmsg(k));
    }
    tex_kernel_free(k);
    return rc;
}

/* Lowers kc, computes the expected outputs with the oracle, then runs every
 * runner from poisoned outputs and compares. The output is the last tensor
 * parameter. */
static void run_case(kcase *kc)
{
    tex_func *f = tex_lower(kc->s, kc->name, kc->n, kc->p);
    if (!f) {
        TT_FAILF("%s: tex_lower: %s", kc->name, tex_errmsg(kc->ctx));
        return;
    }
    DLTensor *want[MAXP] = {NULL}, *got[MAXP] = {NULL};
    tex_value ov[MAXP], kv[MAXP];
    uint64_t rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)strlen(kc->name);
    int out = -1;
    for (int i = 0; i < kc->n; i++) {
        ov[i] = kv[i] = kc->v[i];
        if (kc->p[i].kind != TEX_ARG_TENSOR)
            continue;
        tex_tensor *t = kc->p[i].t;
        want[i] = array_for(kc, t);
        got[i] = array_for(kc, t);
        if (t->op->kind == TEXI_OP_PLACEHOLDER) {
            fill_random(want[i], t->dtype, &rng);
            memcpy(got[i]->data, want[i]->data,
                   (size_t)(numel(want[i]) * tex_dtype_bytes(t->dtype)));
        } else {
            out = i;
        }
        ov[i].t = want[i];
        kv[i].t = got[i];
    }
    tex_dtype ot = kc->p[out].t->dtype;
    poison(want[out], ot);
    int rc = tex_eval_reference_ex(kc->ctx, kc->n, kc->p, ov);
    TT_EQ_INT(rc, 0);
    if (rc != 0)
        printf("  %s: oracle: %s\n", kc->name, tex_errmsg(kc->ctx));
    for (runner r = RUN_INTERP; rc == 0 && r <= (kc->gpu ? RUN_EMU : RUN_CPU2); r++) {
        char err[4096] = "";
        poison(got[out], ot);
        int rr = run_with(f, r, kc->n, kv, err, sizeof err);
        if (rr == 1)
            continue;
        if (rr != 0) {
            TT_FAILF("%s, %s: failed (%d): %s", kc->name, runner_names[r], rr, err);
            continue;
        }
        int64_t bad = compare(got[out], want[out], ot);
        if (bad >= 0)
            TT_FAILF("%s, %s: element %lld is %.9g, the oracle says %.9g", kc->name,
                     runner_names[r], (long long)bad, as_double(got[out], ot, bad),
                     as_double(want[out], ot, bad));
    }
    for (int i = 0; i < kc->n; i++) {
        tex_array_free(want[i]);
        tex_array_free(got[i]);
    }
}

/* ------------------------------------------------------------ epilogue */

typedef struct {
    tex_dtype st, tt; /* the scalars' and the tensors' dtypes */
    tex_value alpha, beta;
} epi_spec;

static const epi_spec EPI[] = {
    {TEX_F32, TEX_F32, SF(0.75), SI(-2)},      {TEX_F64, TEX_F64, SF(1.0 / 3.0), SF(-1.25)},
    {TEX_F16, TEX_F16, SF(0.1), SF(-3.5)},     {TEX_BF16, TEX_BF16, SF(0.3), SI(2)},
    {TEX_I8, TEX_I32, SI(-7), SF(3.0)},        {TEX_I16, TEX_I16, SI(-300), SI(2)},
    {TEX_I32, TEX_I32, SI(100000), SI(-3)},    {TEX_I64, TEX_I64, SI(-((int64_t)1 << 40)), SF(5.0)},
    {TEX_U8, TEX_I32, SI(200), SI(255)},       {TEX_U16, TEX_U16, SI(65535), SI(3)},
    {TEX_U32, TEX_U32, SI(4000000000), SI(1)}, {TEX_U64, TEX_U32, SI(3), SF(1099511627776.0)},
    {TEX_BOOL, TEX_F32, SI(1), SF(0.0)},
};

/* D[i, j] = alpha * A[i, j] + beta * B[i, j] over [7, 13]: j split by 4
 * (vectorized inner, parallel rows) for the CPU, or rows bound to blocks and
 * the inner part of j to threads for the GPU. */
static void epilogue_case(kcase *kc, const epi_spec *e, bool gpu)
{
    kcase_init(kc, "epilogue");
    tex_ctx *ctx = kc->ctx;
    int64_t shape[2] = {7, 13};
    tex_tensor *A = tex_placeholder_c(ctx, "A", e->tt, 2, shape);
    tex_tensor *B = tex_placeholder_c(ctx, "B", e->tt, 2, shape);
    tex_expr *alpha = tex_var(ctx, "alpha", e->st), *beta = tex_var(ctx, "beta", e->st);
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 7)), *j = tex_axis(ctx, "j", tex_int(ctx, 13));
    tex_expr *body = tex_add(tex_mul(alpha, TEX_AT(A, tex_iv(i), tex_iv(j))),
                             tex_mul(beta, TEX_AT(B, tex_iv(i), tex_iv(j))));
    tex_tensor *D = tex_compute(ctx, "D", 2, (tex_iter *[]){i, j}, body);
    kc->s = tex_schedule_new(ctx, 1, &D);
    tex_stage *st = tex_stage_of(kc->s, D);
    tex_iter *jo, *ji;
    tex_split(st, j, tex_int(ctx, 4), &jo, &ji);
    if (gpu) {
        tex_bind(st, i, TEX_BLOCK_X);
        tex_bind(st, ji, TEX_THREAD_X);
    } else {
        tex_vectorize(st, ji);
        tex_parallel(st, i);
    }
    kc->gpu = gpu;
    add_tensor(kc, A);
    add_tensor(kc, B);
    add_var(kc, alpha, e->alpha);
    add_var(kc, beta, e->beta);
    add_tensor(kc, D);
}

static void test_epilogue_every_dtype(void)
{
    for (size_t c = 0; c < sizeof EPI / sizeof EPI[0]; c++) {
        for (int gpu = 0; gpu < 2; gpu++) {
            kcase kc;
            epilogue_case(&kc, &EPI[c], gpu);
            int before = tt_failed_checks;
            run_case(&kc);
            if (tt_failed_checks != before)
                printf("  (scalars %s, tensors %s, %s schedule)\n", tex_dtype_name(EPI[c].st),
                       tex_dtype_name(EPI[c].tt), gpu ? "GPU" : "CPU");
            tex_ctx_free(kc.ctx);
        }
    }
}

/* The CUDA source of the f16 and bool epilogues: each scalar is a kernel
 * parameter of its own type, decoded where needed; NVRTC (when present)
 * compiled it, since "cuda -emit-only" builds PTX then. */
static void test_cuda_source(void)
{
    static const struct {
        int spec;
        const char *needles[3];
    } cases[] = {
        {0, {"float alpha", "float beta", NULL}},
        {1, {"double alpha", NULL, NULL}},
        {2, {"__half alpha_arg", "__half2float(alpha_arg)", NULL}},
        {3, {"__nv_bfloat16 beta_arg", "__bfloat162float(beta_arg)", NULL}},
        {4, {"int8_t alpha", NULL, NULL}},
        {11, {"uint64_t beta", NULL, NULL}},
        {12, {"uint8_t alpha_arg", "alpha_arg != 0", NULL}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kcase kc;
        epilogue_case(&kc, &EPI[cases[c].spec], true);
        tex_func *f = tex_lower(kc.s, "epi", kc.n, kc.p);
        tex_kernel *k = f ? tex_build(f, "cuda -emit-only -arch=sm_80") : NULL;
        TT_CHECK(k != NULL);
        if (!k) {
            printf("  %s: %s\n", tex_dtype_name(EPI[cases[c].spec].st), tex_errmsg(kc.ctx));
            tex_ctx_free(kc.ctx);
            continue;
        }
        const char *src = tex_kernel_source(k);
        for (int i = 0; i < 3 && cases[c].needles[i]; i++)
            if (!strstr(src, cases[c].needles[i]))
                TT_FAILF("%s: the CUDA source lacks \"%s\":\n%s",
                         tex_dtype_name(EPI[cases[c].spec].st), cases[c].needles[i], src);
        const char *ptx = tex_kernel_ptx(k);
        TT_CHECK(!ptx || strstr(ptx, ".entry"));
        tex_kernel_free(k);
        tex_ctx_free(kc.ctx);
    }
}

/* ------------------------------------------------------------ gemm and clamp */

/* C = alpha * (A @ B) + beta * C0 in f32 (19 x 23, k = 17): C tiled 8 x 8
 * with parallel row tiles, the product P computed at C's column tile with
 * its reduction split by 4. */
static void test_gemm_alpha_beta(void)
{
    kcase kc;
    kcase_init(&kc, "gemm");
    tex_ctx *ctx = kc.ctx;
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){19, 17});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){17, 23});
    tex_tensor *C0 = tex_placeholder_c(ctx, "C0", TEX_F32, 2, (int64_t[]){19, 23});
    tex_expr *alpha = tex_var(ctx, "alpha", TEX_F32), *beta = tex_var(ctx, "beta", TEX_F32);
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 19)), *j = tex_axis(ctx, "j", tex_int(ctx, 23));
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_int(ctx, 17));
    tex_expr *prod = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(k)), TEX_AT(B, tex_iv(k), tex_iv(j)));
    tex_tensor *P = tex_compute(ctx, "P", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, &k));
    tex_iter *ci = tex_axis(ctx, "ci", tex_int(ctx, 19)),
             *cj = tex_axis(ctx, "cj", tex_int(ctx, 23));
    tex_expr *body = tex_add(tex_mul(alpha, TEX_AT(P, tex_iv(ci), tex_iv(cj))),
                             tex_mul(beta, TEX_AT(C0, tex_iv(ci), tex_iv(cj))));
    tex_tensor *C = tex_compute(ctx, "C", 2, (tex_iter *[]){ci, cj}, body);
    kc.s = tex_schedule_new(ctx, 1, &C);
    tex_stage *sc = tex_stage_of(kc.s, C), *sp = tex_stage_of(kc.s, P);
    tex_iter *io, *jo, *ii, *ji, *ko, *ki;
    TT_EQ_INT(tex_tile(sc, ci, cj, tex_int(ctx, 8), tex_int(ctx, 8), &io, &jo, &ii, &ji), 0);
    TT_EQ_INT(tex_parallel(sc, io), 0);
    TT_EQ_INT(tex_compute_at(sp, sc, jo), 0);
    TT_EQ_INT(tex_split(sp, k, tex_int(ctx, 4), &ko, &ki), 0);
    add_tensor(&kc, A);
    add_tensor(&kc, B);
    add_tensor(&kc, C0);
    add_var(&kc, alpha, F64(1.5));
    add_var(&kc, beta, F64(-0.5));
    add_tensor(&kc, C);
    run_case(&kc);
    tex_ctx_free(ctx);
}

/* D = min(max(A, lo), hi) over 37 elements, split by 8 (vectorized inner). */
static void clamp_case(tex_dtype bound, tex_dtype tt, tex_value lo_v, tex_value hi_v)
{
    kcase kc;
    kcase_init(&kc, "clamp");
    tex_ctx *ctx = kc.ctx;
    tex_tensor *A = tex_placeholder_c(ctx, "A", tt, 1, (int64_t[]){37});
    tex_expr *lo = tex_var(ctx, "lo", bound), *hi = tex_var(ctx, "hi", bound);
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 37));
    tex_expr *body = tex_min(tex_max(TEX_AT(A, tex_iv(i)), lo), hi);
    tex_tensor *D = tex_compute(ctx, "D", 1, &i, body);
    kc.s = tex_schedule_new(ctx, 1, &D);
    tex_stage *st = tex_stage_of(kc.s, D);
    tex_iter *io, *ii;
    tex_split(st, i, tex_int(ctx, 8), &io, &ii);
    tex_vectorize(st, ii);
    add_tensor(&kc, A);
    add_var(&kc, lo, lo_v);
    add_var(&kc, hi, hi_v);
    add_tensor(&kc, D);
    run_case(&kc);
    tex_ctx_free(ctx);
}

static void test_clamp_bounds(void)
{
    clamp_case(TEX_F32, TEX_F32, F64(-0.75), F64(0.5));
    clamp_case(TEX_I32, TEX_I32, I64(-2), F64(3.0));
    clamp_case(TEX_I8, TEX_I32, I64(-4), I64(5));
}

/* ------------------------------------------------------------ mixed + export */

enum { MIXED_N = 29 };

/* D[i] = select(flag, alpha * A[i] + h * B[i], max(A[i], lo)) over n
 * elements: f32 alpha, f16 h, bool flag, i8 lo, a symbolic size n (a VAR
 * parameter naming the tensors' dimension: passed as int64_t). Split by 8,
 * parallel (CPU) or bound to blocks and threads (GPU). */
static void mixed_case(kcase *kc, bool gpu, int64_t flag)
{
    kcase_init(kc, "mixed");
    tex_ctx *ctx = kc->ctx;
    tex_expr *n = tex_var(ctx, "n", TEX_I64);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 1, &n);
    tex_tensor *B = tex_placeholder(ctx, "B", TEX_F32, 1, &n);
    tex_expr *alpha = tex_var(ctx, "alpha", TEX_F32), *h = tex_var(ctx, "h", TEX_F16);
    tex_expr *fl = tex_var(ctx, "flag", TEX_BOOL), *lo = tex_var(ctx, "lo", TEX_I8);
    tex_iter *i = tex_axis(ctx, "i", n);
    tex_expr *a = TEX_AT(A, tex_iv(i)), *b = TEX_AT(B, tex_iv(i));
    tex_expr *body = tex_select(fl, tex_add(tex_mul(alpha, a), tex_mul(tex_cast(TEX_F32, h), b)),
                                tex_max(a, tex_cast(TEX_F32, lo)));
    tex_tensor *D = tex_compute(ctx, "D", 1, &i, body);
    kc->s = tex_schedule_new(ctx, 1, &D);
    tex_stage *st = tex_stage_of(kc->s, D);
    tex_iter *io, *ii;
    tex_split(st, i, tex_int(ctx, 8), &io, &ii);
    if (gpu) {
        tex_bind(st, io, TEX_BLOCK_X);
        tex_bind(st, ii, TEX_THREAD_X);
    } else {
        tex_parallel(st, io);
    }
    kc->gpu = gpu;
    add_tensor(kc, A);
    add_tensor(kc, B);
    add_tensor(kc, D);
    add_var(kc, alpha, F64(-1.25));
    add_var(kc, h, F64(0.3)); /* rounded to f16: 0.2999267578125 */
    add_var(kc, fl, I64(flag));
    add_var(kc, lo, I64(-1));
    add_var(kc, n, I64(MIXED_N));
}

static void test_mixed_scalars(void)
{
    for (int gpu = 0; gpu < 2; gpu++)
        for (int flag = 0; flag < 2; flag++) {
            kcase kc;
            mixed_case(&kc, gpu, flag);
            run_case(&kc);
            tex_ctx_free(kc.ctx);
        }
}

/* Writes the driver that calls the exported mixed kernel: A and B from
 * in.bin, D to out.bin, the scalars as literals of the header's types. */
static bool write_driver(const char *path, uint16_t hbits)
{
    FILE *fp = fopen(path, "w");
    if (!fp)
        return false;
    fprintf(fp,
            "#include <stdint.h>\n#include <stdio.h>\n#include \"mixed.h\"\n"
            "int main(void)\n{\n"
            "    static float a[%d], b[%d], d[%d];\n"
            "    FILE *f = fopen(\"in.bin\", \"rb\");\n"
            "    if (!f || fread(a, sizeof a, 1, f) != 1 || fread(b, sizeof b, 1, f) != 1)\n"
            "        return 2;\n"
            "    fclose(f);\n"
            "    float alpha = -1.25f;\n    uint16_t h = %u;\n    uint8_t flag = 1;\n"
            "    int8_t lo = -1;\n"
            "    if (mixed(a, b, d, alpha, h, flag, lo, (int64_t)%d) != 0)\n        return 3;\n"
            "    f = fopen(\"out.bin\", \"wb\");\n"
            "    if (!f || fwrite(d, sizeof d, 1, f) != 1)\n        return 4;\n"
            "    return fclose(f) != 0;\n}\n",
            MIXED_N, MIXED_N, MIXED_N, (unsigned)hbits, MIXED_N);
    return fclose(fp) == 0;
}

static void test_export(void)
{
    if (!tex_target_available("cpu"))
        TT_SKIP("no C compiler");
    kcase kc;
    mixed_case(&kc, false, 1);
    tex_func *f = tex_lower(kc.s, "mixed", kc.n, kc.p);
    tex_kernel *k = f ? tex_build(f, "cpu") : NULL;
    TT_CHECK(k != NULL);
    char prefix[128], path[192], cmd[1024];
    snprintf(prefix, sizeof prefix, "%s/mixed", dir);
    if (!k || tex_kernel_export(k, prefix) != 0) {
        TT_FAILF("export: %s %s", tex_errmsg(kc.ctx), k ? tex_kernel_errmsg(k) : "");
        tex_kernel_free(k);
        tex_ctx_free(kc.ctx);
        return;
    }
    snprintf(path, sizeof path, "%s.h", prefix);
    TT_CHECK(tt_file_has(path, "int mixed(const float *restrict A, const float *restrict B, "
                               "float *restrict D, float alpha, uint16_t h_arg, uint8_t flag_arg, "
                               "int8_t lo, int64_t n)"));
    /* Inputs and the oracle's answer. */
    DLTensor *A = array_for(&kc, kc.p[0].t), *B = array_for(&kc, kc.p[1].t);
    DLTensor *want = array_for(&kc, kc.p[2].t), *got = array_for(&kc, kc.p[2].t);
    uint64_t rng = 77;
    fill_random(A, TEX_F32, &rng);
    fill_random(B, TEX_F32, &rng);
    poison(want, TEX_F32);
    tex_value v[MAXP];
    memcpy(v, kc.v, sizeof v);
    v[0].t = A;
    v[1].t = B;
    v[2].t = want;
    TT_EQ_INT(tex_eval_reference_ex(kc.ctx, kc.n, kc.p, v), 0);
    snprintf(path, sizeof path, "%s/in.bin", dir);
    FILE *fp = fopen(path, "wb");
    TT_CHECK(fp && fwrite(A->data, 4, MIXED_N, fp) == MIXED_N &&
             fwrite(B->data, 4, MIXED_N, fp) == MIXED_N);
    if (fp)
        fclose(fp);
    snprintf(path, sizeof path, "%s/driver.c", dir);
    TT_CHECK(write_driver(path, texi_f16_from_f32(0.3f)));
    const char *cc = getenv("TEX_CC");
    snprintf(cmd, sizeof cmd,
             "cd '%s' && %s -std=c99 -O2 -fopenmp -Wall -Wextra -Werror -o driver driver.c "
             "mixed.c -lm > build.log 2>&1 && ./driver > run.log 2>&1",
             dir, cc && *cc ? cc : "cc");
    int rc = system(cmd);
    TT_EQ_INT(rc, 0);
    if (rc != 0) {
        snprintf(cmd, sizeof cmd, "cat '%s/build.log' '%s/run.log' | head -20", dir, dir);
        if (system(cmd) != 0)
            printf("  (no logs)\n");
    }
    snprintf(path, sizeof path, "%s/out.bin", dir);
    poison(got, TEX_F32);
    fp = fopen(path, "rb");
    TT_CHECK(fp && fread(got->data, 4, MIXED_N, fp) == MIXED_N);
    if (fp)
        fclose(fp);
    int64_t bad = compare(got, want, TEX_F32);
    if (bad >= 0)
        TT_FAILF("exported kernel: element %lld is %.9g, the oracle says %.9g", (long long)bad,
                 as_double(got, TEX_F32, bad), as_double(want, TEX_F32, bad));
    tex_array_free(A);
    tex_array_free(B);
    tex_array_free(want);
    tex_array_free(got);
    tex_kernel_free(k);
    tex_ctx_free(kc.ctx);
}

/* ------------------------------------------------------------ range errors */

/* D[i] = A[i] + a + b + c + flag (i32 over n elements; a i8, b u32, c i32,
 * flag bool; n a size). */
typedef struct {
    kcase kc;
    tex_func *f;
    tex_kernel *k; /* "cpu", or NULL without a compiler */
    DLTensor *A, *D;
} sum4;

static void sum4_make(sum4 *s)
{
    kcase *kc = &s->kc;
    kcase_init(kc, "sum4");
    tex_ctx *ctx = kc->ctx;
    tex_expr *n = tex_var(ctx, "n", TEX_I32);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_I32, 1, &n);
    tex_expr *a = tex_var(ctx, "a", TEX_I8), *b = tex_var(ctx, "b", TEX_U32);
    tex_expr *c = tex_var(ctx, "c", TEX_I32), *fl = tex_var(ctx, "flag", TEX_BOOL);
    tex_iter *i = tex_axis(ctx, "i", n);
    tex_expr *body = tex_add(tex_add(TEX_AT(A, tex_iv(i)), tex_cast(TEX_I32, a)),
                             tex_add(tex_cast(TEX_I32, b), tex_add(c, tex_cast(TEX_I32, fl))));
    tex_tensor *D = tex_compute(ctx, "D", 1, &i, body);
    kc->s = tex_schedule_new(ctx, 1, &D);
    add_tensor(kc, A);
    add_tensor(kc, D);
    add_var(kc, a, I64(1));
    add_var(kc, b, I64(2));
    add_var(kc, c, I64(3));
    add_var(kc, fl, I64(1));
    add_var(kc, n, I64(5));
    s->f = tex_lower(kc->s, "sum4", kc->n, kc->p);
    s->k = s->f && tex_target_available("cpu") ? tex_build(s->f, "cpu") : NULL;
    s->A = array_for(kc, A);
    s->D = array_for(kc, D);
    uint64_t rng = 5;
    fill_random(s->A, TEX_I32, &rng);
    kc->v[0].t = s->A;
    kc->v[1].t = s->D;
}

static void sum4_free(sum4 *s)
{
    tex_kernel_free(s->k);
    tex_array_free(s->A);
    tex_array_free(s->D);
    tex_ctx_free(s->kc.ctx);
}

static bool untouched(const DLTensor *d)
{
    for (int64_t k = 0; k < numel(d) * 4; k++)
        if (((const uint8_t *)d->data)[k] != 0xA5)
            return false;
    return true;
}

/* Argument `arg` replaced by `bad` is refused by the JIT, the interpreter
 * and the oracle with TEX_EINVAL and a message holding `needle`; D stays
 * poisoned. */
static void expect_refused(sum4 *s, int arg, tex_value bad, const char *needle)
{
    tex_value v[MAXP];
    memcpy(v, s->kc.v, sizeof v);
    v[arg] = bad;
    const char *pname = s->kc.p[arg].v->u.var.name;
    if (s->k) {
        poison(s->D, TEX_I32);
        TT_EQ_INT(tex_kernel_call(s->k, s->kc.n, v), TEX_EINVAL);
        const char *msg = tex_kernel_errmsg(s->k);
        if (!strstr(msg, "sum4") || !strstr(msg, pname) || !strstr(msg, needle))
            TT_FAILF("kernel message \"%s\" should name sum4, '%s' and say \"%s\"", msg, pname,
                     needle);
        TT_CHECK(untouched(s->D));
    }
    char err[512] = "";
    poison(s->D, TEX_I32);
    TT_EQ_INT(texi_interp_run(s->f, s->kc.n, v, err, sizeof err), TEX_EINVAL);
    if (!strstr(err, pname) || !strstr(err, needle))
        TT_FAILF("interpreter message \"%s\" should name '%s' and say \"%s\"", err, pname, needle);
    TT_CHECK(untouched(s->D));
    tex_clear_error(s->kc.ctx);
    TT_EQ_INT(tex_eval_reference_ex(s->kc.ctx, s->kc.n, s->kc.p, v), TEX_EINVAL);
    const char *om = tex_errmsg(s->kc.ctx);
    if (!strstr(om, pname) || !strstr(om, needle))
        TT_FAILF("oracle message \"%s\" should name '%s' and say \"%s\"", om, pname, needle);
    TT_CHECK(untouched(s->D));
    tex_clear_error(s->kc.ctx);
}

/* The values in v are accepted and give the oracle's result everywhere. */
static void expect_accepted(sum4 *s, int arg, tex_value good)
{
    tex_value v[MAXP];
    memcpy(v, s->kc.v, sizeof v);
    v[arg] = good;
    DLTensor *want = array_for(&s->kc, s->kc.p[1].t);
    poison(want, TEX_I32);
    tex_value ov[MAXP];
    memcpy(ov, v, sizeof ov);
    ov[1].t = want;
    TT_EQ_INT(tex_eval_reference_ex(s->kc.ctx, s->kc.n, s->kc.p, ov), 0);
    char err[512] = "";
    poison(s->D, TEX_I32);
    TT_EQ_INT(texi_interp_run(s->f, s->kc.n, v, err, sizeof err), 0);
    TT_EQ_INT(compare(s->D, want, TEX_I32), -1);
    if (s->k) {
        poison(s->D, TEX_I32);
        TT_EQ_INT(tex_kernel_call(s->k, s->kc.n, v), 0);
        TT_EQ_INT(compare(s->D, want, TEX_I32), -1);
    }
    tex_array_free(want);
}

static void test_range_errors(void)
{
    sum4 s;
    sum4_make(&s);
    TT_CHECK(s.f != NULL);
    if (!s.f) {
        printf("  %s\n", tex_errmsg(s.kc.ctx));
        sum4_free(&s);
        return;
    }
    expect_refused(&s, 2, I64(300), "300 is out of range for i8 [-128, 127]");
    expect_refused(&s, 2, I64(-129), "out of range for i8");
    expect_refused(&s, 2, F64(127.5), "not an integer");
    expect_refused(&s, 3, I64(-1), "-1 is out of range for u32 [0, 4294967295]");
    expect_refused(&s, 3, F64(4294967296.0), "out of range for u32");
    expect_refused(&s, 4, F64(NAN), "nan is not an integer");
    expect_refused(&s, 4, F64(2.5), "2.5 is not an integer");
    expect_refused(&s, 4, F64(INFINITY), "out of range for i32");
    expect_refused(&s, 4, I64(INT64_C(1) << 31), "out of range for i32");
    expect_refused(&s, 5, I64(2), "out of range for bool [0, 1]");
    expect_refused(&s, 5, F64(0.5), "not an integer");
    expect_refused(&s, 5, (tex_value){.kind = TEX_VAL_TENSOR, .t = s.A}, "TEX_VAL_F64");
    /* A size keeps its own rule: an integer, given as I64. */
    if (s.k) {
        tex_value v[MAXP];
        memcpy(v, s.kc.v, sizeof v);
        v[6] = F64(5.0);
        poison(s.D, TEX_I32);
        TT_EQ_INT(tex_kernel_call(s.k, s.kc.n, v), TEX_EINVAL);
        TT_CHECK(strstr(tex_kernel_errmsg(s.k), "TEX_VAL_I64") != NULL);
        TT_CHECK(untouched(s.D));
    }
    expect_accepted(&s, 2, I64(-128));
    expect_accepted(&s, 2, F64(127.0));
    expect_accepted(&s, 3, I64(4294967295));
    expect_accepted(&s, 4, F64(-2147483648.0));
    expect_accepted(&s, 5, F64(0.0));
    sum4_free(&s);
}

/* The widest integers: u64 up to 2^64 - 2^11 given as F64, i64 from INT64_MIN. */
static void test_wide_integers(void)
{
    texi_eval_value out;
    char why[160];
    tex_value big = F64(18446744073709549568.0); /* the largest double below 2^64 */
    TT_EQ_INT(texi_eval_scalar_arg(TEX_U64, &big, &out, why, sizeof why), 0);
    TT_CHECK((uint64_t)out.i == UINT64_C(18446744073709549568));
    tex_value two64 = F64(18446744073709551616.0);
    TT_EQ_INT(texi_eval_scalar_arg(TEX_U64, &two64, &out, why, sizeof why), TEX_EINVAL);
    tex_value min = I64(INT64_MIN), fmin = F64(-9223372036854775808.0);
    TT_EQ_INT(texi_eval_scalar_arg(TEX_I64, &min, &out, why, sizeof why), 0);
    TT_CHECK(out.i == INT64_MIN);
    TT_EQ_INT(texi_eval_scalar_arg(TEX_I64, &fmin, &out, why, sizeof why), 0);
    TT_CHECK(out.i == INT64_MIN);
    tex_value f2 = F64(9223372036854775808.0);
    TT_EQ_INT(texi_eval_scalar_arg(TEX_I64, &f2, &out, why, sizeof why), TEX_EINVAL);
    tex_value neg = I64(-5);
    TT_EQ_INT(texi_eval_scalar_arg(TEX_U64, &neg, &out, why, sizeof why), TEX_EINVAL);
    /* Floats follow tex_cast: rounding, overflow to infinity. */
    tex_value third = F64(1.0 / 3.0), huge = F64(1e300);
    TT_EQ_INT(texi_eval_scalar_arg(TEX_F32, &third, &out, why, sizeof why), 0);
    TT_CHECK(out.f == (double)(1.0f / 3.0f));
    TT_EQ_INT(texi_eval_scalar_arg(TEX_F16, &huge, &out, why, sizeof why), 0);
    TT_CHECK(isinf(out.f));
}

/* ------------------------------------------------------------ oracle errors */

static void test_oracle_errors(void)
{
    kcase kc;
    epilogue_case(&kc, &EPI[0], false);
    tex_ctx *ctx = kc.ctx;
    DLTensor *A = array_for(&kc, kc.p[0].t), *B = array_for(&kc, kc.p[1].t);
    DLTensor *D = array_for(&kc, kc.p[4].t);
    tex_value v[MAXP];
    memcpy(v, kc.v, sizeof v);
    v[0].t = A;
    v[1].t = B;
    v[4].t = D;
    TT_EQ_INT(tex_eval_reference_ex(NULL, kc.n, kc.p, v), TEX_EMISUSE);
    TT_EQ_INT(tex_eval_reference_ex(ctx, kc.n, NULL, v), TEX_EMISUSE);
    tex_clear_error(ctx);
    /* The oracle without alpha's value cannot evaluate the body. */
    TT_CHECK(tex_eval_reference(ctx, 3, (tex_tensor *[]){kc.p[0].t, kc.p[1].t, kc.p[4].t},
                                (DLTensor *[]){A, B, D}) != 0);
    tex_clear_error(ctx);
    tex_param p[MAXP];
    memcpy(p, kc.p, sizeof p);
    p[3] = VP(kc.p[2].v); /* alpha twice */
    TT_EQ_INT(tex_eval_reference_ex(ctx, kc.n, p, v), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'alpha' is listed twice") != NULL);
    tex_clear_error(ctx);
    p[3] = VP(tex_add(kc.p[2].v, kc.p[3].v));
    TT_EQ_INT(tex_eval_reference_ex(ctx, kc.n, p, v), TEX_EINVAL);
    tex_clear_error(ctx);
    p[3] = VP(NULL);
    TT_EQ_INT(tex_eval_reference_ex(ctx, kc.n, p, v), TEX_EMISUSE);
    tex_clear_error(ctx);
    tex_value w[MAXP];
    memcpy(w, v, sizeof w);
    w[0] = F64(1.0); /* a scalar for tensor A */
    TT_EQ_INT(tex_eval_reference_ex(ctx, kc.n, kc.p, w), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "tensor 'A'") != NULL);
    tex_clear_error(ctx);
    DLTensor *wrong = tex_array_new(2, (int64_t[]){7, 13}, TEX_F64, HOST);
    w[0] = (tex_value){.kind = TEX_VAL_TENSOR, .t = wrong};
    TT_EQ_INT(tex_eval_reference_ex(ctx, kc.n, kc.p, w), TEX_ETYPE);
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_eval_reference_ex: tensor 'A' is f32") != NULL);
    tex_array_free(wrong);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_eval_reference_ex(ctx, kc.n, kc.p, v), 0);
    tex_array_free(A);
    tex_array_free(B);
    tex_array_free(D);
    tex_ctx_free(ctx);

    /* A size given as a parameter must agree with the arrays. */
    mixed_case(&kc, false, 1);
    DLTensor *arr[3];
    for (int i = 0; i < 3; i++) {
        arr[i] = array_for(&kc, kc.p[i].t);
        kc.v[i].t = arr[i];
    }
    kc.v[7] = I64(MIXED_N + 1);
    TT_EQ_INT(tex_eval_reference_ex(kc.ctx, kc.n, kc.p, kc.v), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(kc.ctx), "'n'") != NULL);
    for (int i = 0; i < 3; i++)
        tex_array_free(arr[i]);
    tex_ctx_free(kc.ctx);
}

/* A scalar the body uses but no parameter gives is refused by tex_lower. */
static void test_missing_scalar(void)
{
    kcase kc;
    epilogue_case(&kc, &EPI[0], false);
    tex_param p[3] = {kc.p[0], kc.p[1], kc.p[4]};
    TT_CHECK(tex_lower(kc.s, "epi", 3, p) == NULL);
    TT_EQ_INT(tex_errcode(kc.ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(kc.ctx), "symbolic 'alpha'") != NULL);
    tex_ctx_free(kc.ctx);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char cache[sizeof dir + 8];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    mkdir(cache, 0700);
    setenv("TEX_CACHE_DIR", cache, 1);
    TT_RUN(test_epilogue_every_dtype);
    TT_RUN(test_cuda_source);
    TT_RUN(test_gemm_alpha_beta);
    TT_RUN(test_clamp_bounds);
    TT_RUN(test_mixed_scalars);
    TT_RUN(test_export);
    TT_RUN(test_range_errors);
    TT_RUN(test_wide_integers);
    TT_RUN(test_oracle_errors);
    TT_RUN(test_missing_scalar);
    tt_remove_tree(dir);
    return tt_finish();
}
