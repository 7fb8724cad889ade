/*
 * Building and calling kernels (src/runtime/kernel.c, src/backend_cpu/
 * backend.c): target strings and tex_target_available; argument checks of
 * tex_kernel_call / _tensors (count, kind, dtype, ndim, constant and shared
 * symbolic shapes, a VAR disagreeing with a dimension, strides, device,
 * NULL data), each with its code and an output left untouched; the ABI of
 * every dtype (elementwise kernels compared bit for bit with
 * tex_eval_reference); byte_offset; a kernel outliving its context; a
 * runtime check (shift-inwards split over a too small symbolic extent); the
 * "c" target (source only). Uses a private TEX_CACHE_DIR; the tests that
 * JIT skip when no C compiler is found.
 */
#include "tt.h"
#include "support/tmpdir.h"

#include "util/half.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "tex/tex.h"

static const DLDevice HOST = {kDLCPU, 0};

/* C[n, 4] = A[n, 4] + B[n, 4] in f32; n symbolic; n_param adds n as a VAR. */
typedef struct {
    tex_ctx *ctx;
    tex_expr *n;
    tex_tensor *A, *B, *C;
    tex_func *f;
} vadd;

static bool vadd_make(vadd *v, bool n_param)
{
    v->ctx = tex_ctx_new();
    v->n = tex_var(v->ctx, "n", TEX_I64);
    tex_expr *shape[2] = {v->n, tex_int(v->ctx, 4)};
    v->A = tex_placeholder(v->ctx, "A", TEX_F32, 2, shape);
    v->B = tex_placeholder(v->ctx, "B", TEX_F32, 2, shape);
    tex_iter *i = tex_axis(v->ctx, "i", v->n), *j = tex_axis(v->ctx, "j", tex_int(v->ctx, 4));
    v->C = tex_compute(
        v->ctx, "C", 2, (tex_iter *[]){i, j},
        tex_add(TEX_AT(v->A, tex_iv(i), tex_iv(j)), TEX_AT(v->B, tex_iv(i), tex_iv(j))));
    tex_schedule *s = tex_schedule_new(v->ctx, 1, &v->C);
    if (n_param) {
        tex_param ps[4] = {{.kind = TEX_ARG_TENSOR, .t = v->A},
                           {.kind = TEX_ARG_TENSOR, .t = v->B},
                           {.kind = TEX_ARG_TENSOR, .t = v->C},
                           {.kind = TEX_ARG_VAR, .v = v->n}};
        v->f = tex_lower(s, "vadd_n", 4, ps);
    } else {
        v->f = tex_lower_tensors(s, "vadd", 3, (tex_tensor *[]){v->A, v->B, v->C});
    }
    if (!v->f)
        printf("  lower: %s\n", tex_errmsg(v->ctx));
    return v->f != NULL;
}

static DLTensor *arr2(int64_t n, int64_t m, tex_dtype t)
{
    return tex_array_new(2, (int64_t[]){n, m}, t, HOST);
}

static void fill_f32(DLTensor *a, float base)
{
    float *p = a->data;
    for (int64_t k = 0; k < a->shape[0] * a->shape[1]; k++)
        p[k] = base + (float)k;
}

static void test_targets(void)
{
    TT_EQ_INT(tex_target_available(NULL), 0);
    TT_EQ_INT(tex_target_available("c"), 1);
    bool gpu = tex_target_available("cuda") == 1;
    TT_EQ_INT(tex_target_available("gpu"), 0);
    TT_EQ_INT(tex_target_available("cpu -threads=0"), 0);
    vadd v;
    TT_CHECK(vadd_make(&v, false));
    const char *bad[] = {"gpu",          "",    "cpu -threads=0", "cpu -threads=x", "cpu -fast",
                         "c -threads=2", "cpux"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tex_clear_error(v.ctx);
        TT_CHECK(tex_build(v.f, bad[i]) == NULL);
        TT_EQ_INT(tex_errcode(v.ctx), TEX_EINVAL);
    }
    tex_clear_error(v.ctx);
    if (!gpu) {
        TT_CHECK(tex_build(v.f, "cuda -arch=sm_80") == NULL);
        TT_EQ_INT(tex_errcode(v.ctx), TEX_EUNAVAILABLE);
        TT_CHECK(strstr(tex_errmsg(v.ctx), "target 'cuda -arch=sm_80' is not available") != NULL);
    }
    tex_clear_error(v.ctx);
    TT_CHECK(tex_build(v.f, NULL) == NULL);
    TT_CHECK(tex_build(NULL, "cpu") == NULL);

    tex_kernel *k = tex_build(v.f, "c");
    TT_CHECK(k != NULL);
    TT_CHECK(tex_kernel_source(k) && strstr(tex_kernel_source(k), "vadd") != NULL);
    DLTensor *A = arr2(2, 4, TEX_F32), *B = arr2(2, 4, TEX_F32), *C = arr2(2, 4, TEX_F32);
    TT_EQ_INT(tex_kernel_call_tensors(k, 3, (DLTensor *[]){A, B, C}), TEX_EUNAVAILABLE);
    TT_CHECK(strstr(tex_kernel_errmsg(k), "vadd: ") == tex_kernel_errmsg(k));
    tex_kernel_free(k);
    TT_EQ_INT(tex_kernel_call(NULL, 0, NULL), TEX_EMISUSE);
    TT_CHECK(tex_kernel_source(NULL) == NULL);
    TT_CHECK(tex_kernel_errmsg(NULL)[0] != '\0');
    tex_kernel_free(NULL);
    tex_array_free(A);
    tex_array_free(B);
    tex_array_free(C);
    tex_ctx_free(v.ctx);
}

/* Calls k and checks the code, that C still holds its poison, and the message. */
static void expect_reject(tex_kernel *k, int n, const tex_value *args, DLTensor *C, int code,
                          const char *msg_part, int line)
{
    float *c = C->data;
    for (int64_t i = 0; i < C->shape[0] * C->shape[1]; i++)
        c[i] = -7.0f;
    int rc = tex_kernel_call(k, n, args);
    if (rc != code)
        TT_FAILF("line %d: code %d, expected %d (%s)", line, rc, code, tex_kernel_errmsg(k));
    for (int64_t i = 0; i < C->shape[0] * C->shape[1]; i++)
        if (c[i] != -7.0f) {
            TT_FAILF("line %d: output written at %lld on a rejected call", line, (long long)i);
            break;
        }
    if (msg_part && !strstr(tex_kernel_errmsg(k), msg_part))
        TT_FAILF("line %d: message \"%s\" lacks \"%s\"", line, tex_kernel_errmsg(k), msg_part);
}

#define TENS(x) ((tex_value){.kind = TEX_VAL_TENSOR, .t = (x)})
#define I64(x) ((tex_value){.kind = TEX_VAL_I64, .i = (x)})

static void test_argument_checks(void)
{
    if (!tex_target_available("cpu"))
        TT_SKIP("no C compiler");
    vadd v;
    TT_CHECK(vadd_make(&v, true));
    tex_kernel *k = tex_build(v.f, "cpu");
    TT_CHECK(k != NULL);
    if (!k) {
        printf("  build: %s\n", tex_errmsg(v.ctx));
        tex_ctx_free(v.ctx);
        return;
    }
    DLTensor *A = arr2(3, 4, TEX_F32), *B = arr2(3, 4, TEX_F32), *C = arr2(3, 4, TEX_F32);
    DLTensor *B5 = arr2(3, 5, TEX_F32), *B2 = arr2(2, 4, TEX_F32), *Bi = arr2(3, 4, TEX_I32);
    DLTensor *B1 = tex_array_new(1, (int64_t[]){12}, TEX_F32, HOST);
    fill_f32(A, 1);
    fill_f32(B, 100);
    tex_value ok[4] = {TENS(A), TENS(B), TENS(C), I64(3)};
    expect_reject(k, 3, ok, C, TEX_EINVAL, "expected 4 arguments, got 3", __LINE__);
    expect_reject(k, 4, (tex_value[]){TENS(A), I64(1), TENS(C), I64(3)}, C, TEX_EINVAL,
                  "argument 1 (tensor 'B') must be an array", __LINE__);
    expect_reject(k, 4, (tex_value[]){TENS(A), TENS(NULL), TENS(C), I64(3)}, C, TEX_EINVAL,
                  "must be an array", __LINE__);
    expect_reject(k, 4, (tex_value[]){TENS(A), TENS(B), TENS(C), TENS(A)}, C, TEX_EINVAL,
                  "argument 3 ('n') must be an integer scalar", __LINE__);
    expect_reject(k, 4, (tex_value[]){TENS(A), TENS(Bi), TENS(C), I64(3)}, C, TEX_ETYPE,
                  "expected f32", __LINE__);
    expect_reject(k, 4, (tex_value[]){TENS(A), TENS(B1), TENS(C), I64(3)}, C, TEX_EINVAL,
                  "has 1 dimensions, expected 2", __LINE__);
    expect_reject(k, 4, (tex_value[]){TENS(A), TENS(B5), TENS(C), I64(3)}, C, TEX_EINVAL,
                  "argument 1 (tensor 'B'): dimension 1 is 5, expected 4", __LINE__);
    expect_reject(k, 4, (tex_value[]){TENS(A), TENS(B2), TENS(C), I64(3)}, C, TEX_EINVAL,
                  "dimension 0 is 2, but 'n' is 3", __LINE__);
    expect_reject(k, 4, (tex_value[]){TENS(A), TENS(B), TENS(C), I64(2)}, C, TEX_EINVAL,
                  "argument 0 (tensor 'A'): dimension 0 is 3, but 'n' is 2", __LINE__);
    /* strides: compact explicit ones pass, others are refused */
    int64_t good[2] = {4, 1}, bad[2] = {1, 3};
    B->strides = bad;
    expect_reject(k, 4, ok, C, TEX_EINVAL, "stride of dimension", __LINE__);
    B->strides = good;
    B->device.device_type = kDLCUDA;
    expect_reject(k, 4, ok, C, TEX_EINVAL, "not in host memory", __LINE__);
    B->device.device_type = kDLCPU;
    void *data = B->data;
    B->data = NULL;
    expect_reject(k, 4, ok, C, TEX_EINVAL, "NULL data", __LINE__);
    B->data = data;
    TT_EQ_INT(tex_kernel_call_tensors(k, 3, (DLTensor *[]){A, B, C}), TEX_EINVAL);
    TT_CHECK(strstr(tex_kernel_errmsg(k), "tex_kernel_call") != NULL);
    /* and a good call */
    TT_EQ_INT(tex_kernel_call(k, 4, ok), 0);
    const float *a = A->data, *b = B->data, *c = C->data;
    int bad_at = -1;
    for (int i = 0; i < 12; i++)
        if (c[i] != a[i] + b[i] && bad_at < 0)
            bad_at = i;
    TT_EQ_INT(bad_at, -1);
    B->strides = NULL;
    /* an empty array with NULL data is fine */
    DLTensor *E = arr2(0, 4, TEX_F32);
    void *edata = E->data;
    E->data = NULL;
    TT_EQ_INT(tex_kernel_call(k, 4, (tex_value[]){TENS(E), TENS(E), TENS(E), I64(0)}), 0);
    E->data = edata;
    tex_kernel_free(k);
    DLTensor *all[] = {A, B, C, B5, B2, Bi, B1, E};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tex_array_free(all[i]);
    tex_ctx_free(v.ctx);
}

/* Deterministic values of dtype t at element k, exact under addition. */
static void put(DLTensor *a, tex_dtype t, int64_t k, int64_t seed)
{
    int64_t v = (k * 37 + seed * 11) % 61 - 30;
    char *p = a->data;
    switch (t) {
    case TEX_BOOL:
        ((uint8_t *)p)[k] = (uint8_t)(v & 1);
        break;
    case TEX_I8:
        ((int8_t *)p)[k] = (int8_t)v;
        break;
    case TEX_I16:
        ((int16_t *)p)[k] = (int16_t)(v * 300);
        break;
    case TEX_I32:
        ((int32_t *)p)[k] = (int32_t)(v * 70000);
        break;
    case TEX_I64:
        ((int64_t *)p)[k] = v * 5000000000LL;
        break;
    case TEX_U8:
        ((uint8_t *)p)[k] = (uint8_t)(v + 100);
        break;
    case TEX_U16:
        ((uint16_t *)p)[k] = (uint16_t)(v + 30000);
        break;
    case TEX_U32:
        ((uint32_t *)p)[k] = (uint32_t)(v + 3000000000LL);
        break;
    case TEX_U64:
        ((uint64_t *)p)[k] = (uint64_t)(v + 40) + 0x8000000000000000ULL;
        break;
    case TEX_F16:
        ((uint16_t *)p)[k] = texi_f16_from_f32((float)v / 8);
        break;
    case TEX_BF16:
        ((uint16_t *)p)[k] = texi_bf16_from_f32((float)v / 8);
        break;
    case TEX_F32:
        ((float *)p)[k] = (float)v / 3;
        break;
    case TEX_F64:
        ((double *)p)[k] = (double)v / 3;
        break;
    }
}

/* C = A + B (A & B for bool) over [5, 7] in dtype t, JIT vs the reference. */
static void abi_case(tex_dtype t)
{
    tex_ctx *ctx = tex_ctx_new();
    int64_t shape[2] = {5, 7};
    tex_tensor *A = tex_placeholder_c(ctx, "A", t, 2, shape);
    tex_tensor *B = tex_placeholder_c(ctx, "B", t, 2, shape);
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 5)), *j = tex_axis(ctx, "j", tex_int(ctx, 7));
    tex_expr *a = TEX_AT(A, tex_iv(i), tex_iv(j)), *b = TEX_AT(B, tex_iv(i), tex_iv(j));
    tex_tensor *C = tex_compute(ctx, "C", 2, (tex_iter *[]){i, j},
                                t == TEX_BOOL ? tex_and(a, b) : tex_cast(t, tex_add(a, b)));
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_func *f = tex_lower_tensors(s, "abi", 3, (tex_tensor *[]){A, B, C});
    tex_kernel *k = f ? tex_build(f, "cpu") : NULL;
    if (!k) {
        TT_FAILF("%s: %s", tex_dtype_name(t), tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return;
    }
    DLTensor *xa = tex_array_new(2, shape, t, HOST), *xb = tex_array_new(2, shape, t, HOST);
    DLTensor *got = tex_array_new(2, shape, t, HOST), *want = tex_array_new(2, shape, t, HOST);
    for (int64_t e = 0; e < 35; e++) {
        put(xa, t, e, 1);
        put(xb, t, e, 2);
    }
    TT_EQ_INT(tex_kernel_call_tensors(k, 3, (DLTensor *[]){xa, xb, got}), 0);
    TT_EQ_INT(tex_eval_reference(ctx, 3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){xa, xb, want}),
              0);
    if (memcmp(got->data, want->data, (size_t)(35 * tex_dtype_bytes(t))) != 0)
        TT_FAILF("%s: the kernel's result differs from tex_eval_reference", tex_dtype_name(t));
    tex_kernel_free(k);
    tex_array_free(xa);
    tex_array_free(xb);
    tex_array_free(got);
    tex_array_free(want);
    tex_ctx_free(ctx);
}

static void test_abi_every_dtype(void)
{
    if (!tex_target_available("cpu"))
        TT_SKIP("no C compiler");
    for (int t = TEX_BOOL; t <= TEX_F64; t++)
        abi_case((tex_dtype)t);
}

/* byte_offset is honoured; the kernel outlives its context; -threads=N. */
static void test_offset_and_lifetime(void)
{
    if (!tex_target_available("cpu"))
        TT_SKIP("no C compiler");
    vadd v;
    TT_CHECK(vadd_make(&v, false));
    tex_kernel *k = tex_build(v.f, "cpu -threads=2");
    TT_CHECK(k != NULL);
    tex_ctx_free(v.ctx); /* the kernel keeps what it needs */
    if (!k)
        return;
    DLTensor *A = arr2(3, 4, TEX_F32), *B = arr2(5, 4, TEX_F32), *C = arr2(4, 4, TEX_F32);
    fill_f32(A, 0);
    fill_f32(B, 1000);
    fill_f32(C, -1);
    DLTensor b = *B, c = *C;
    b.shape = (int64_t[]){3, 4};
    b.byte_offset = 8 * sizeof(float); /* rows 2..4 of B */
    c.shape = (int64_t[]){3, 4};
    c.byte_offset = 4 * sizeof(float); /* rows 1..3 of C */
    TT_EQ_INT(tex_kernel_call_tensors(k, 3, (DLTensor *[]){A, &b, &c}), 0);
    const float *pa = A->data, *pb = B->data, *pc = C->data;
    for (int e = 0; e < 4; e++)
        TT_EQ_INT((int)pc[e], e - 1); /* row 0 untouched */
    int wrong = 0;
    for (int e = 0; e < 12; e++)
        wrong += pc[4 + e] != pa[e] + pb[8 + e];
    TT_EQ_INT(wrong, 0);
    tex_kernel_free(k);
    tex_array_free(A);
    tex_array_free(B);
    tex_array_free(C);
}

/* A shift-inwards split of a symbolic extent: the kernel refuses n < factor. */
static void test_runtime_check(void)
{
    if (!tex_target_available("cpu"))
        TT_SKIP("no C compiler");
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *n = tex_var(ctx, "n", TEX_I64);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 1, &n);
    tex_iter *i = tex_axis(ctx, "i", n);
    tex_tensor *C =
        tex_compute(ctx, "C", 1, &i, tex_add(TEX_AT(A, tex_iv(i)), TEX_AT(A, tex_iv(i))));
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_iter *o, *in;
    TT_EQ_INT(
        tex_split_tail(tex_stage_of(s, C), i, tex_int(ctx, 8), TEX_TAIL_SHIFT_INWARDS, &o, &in), 0);
    tex_func *f = tex_lower_tensors(s, "shifted", 2, (tex_tensor *[]){A, C});
    tex_kernel *k = f ? tex_build(f, "cpu") : NULL;
    TT_CHECK(k != NULL);
    if (!k) {
        printf("  %s\n", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return;
    }
    DLTensor *a = tex_array_new(1, (int64_t[]){5}, TEX_F32, HOST);
    DLTensor *c = tex_array_new(1, (int64_t[]){5}, TEX_F32, HOST);
    TT_EQ_INT(tex_kernel_call_tensors(k, 2, (DLTensor *[]){a, c}), TEX_EINVAL);
    TT_CHECK(strstr(tex_kernel_errmsg(k), "shifted: a runtime check failed") != NULL);
    DLTensor *a2 = tex_array_new(1, (int64_t[]){13}, TEX_F32, HOST);
    DLTensor *c2 = tex_array_new(1, (int64_t[]){13}, TEX_F32, HOST);
    for (int e = 0; e < 13; e++)
        ((float *)a2->data)[e] = (float)e;
    TT_EQ_INT(tex_kernel_call_tensors(k, 2, (DLTensor *[]){a2, c2}), 0);
    TT_EQ_INT((int)((float *)c2->data)[12], 24);
    tex_kernel_free(k);
    tex_array_free(a);
    tex_array_free(c);
    tex_array_free(a2);
    tex_array_free(c2);
    tex_ctx_free(ctx);
}

/* A dimension given by an expression (n + 2) is checked after n is bound. */
static void test_derived_dimension(void)
{
    if (!tex_target_available("cpu"))
        TT_SKIP("no C compiler");
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *n = tex_var(ctx, "n", TEX_I64);
    tex_expr *n2 = tex_add(n, tex_int(ctx, 2));
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 1, &n2);
    tex_iter *i = tex_axis(ctx, "i", n);
    tex_tensor *C =
        tex_compute(ctx, "C", 1, &i,
                    tex_add(TEX_AT(A, tex_iv(i)), TEX_AT(A, tex_add(tex_iv(i), tex_int(ctx, 2)))));
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_func *f = tex_lower_tensors(s, "shifted_sum", 2, (tex_tensor *[]){A, C});
    tex_kernel *k = f ? tex_build(f, "cpu") : NULL;
    if (!k) {
        printf("  %s\n", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        TT_SKIP("lowering or building a derived shape failed");
    }
    tex_ctx_free(ctx);
    DLTensor *a = tex_array_new(1, (int64_t[]){6}, TEX_F32, HOST);
    DLTensor *c = tex_array_new(1, (int64_t[]){4}, TEX_F32, HOST);
    DLTensor *c5 = tex_array_new(1, (int64_t[]){5}, TEX_F32, HOST);
    for (int e = 0; e < 6; e++)
        ((float *)a->data)[e] = (float)e;
    TT_EQ_INT(tex_kernel_call_tensors(k, 2, (DLTensor *[]){a, c5}), TEX_EINVAL);
    TT_CHECK(strstr(tex_kernel_errmsg(k),
                    "argument 0 (tensor 'A'): dimension 0 is 6, expected 7") != NULL);
    TT_EQ_INT(tex_kernel_call_tensors(k, 2, (DLTensor *[]){a, c}), 0);
    TT_EQ_INT((int)((float *)c->data)[3], 8);
    /* n + 2 overflows int64: refused, never compared with a wrapped value
     * (nothing runs, so the huge array needs no memory behind it). */
    int64_t huge = INT64_MAX;
    DLTensor big = *c;
    big.shape = &huge;
    TT_EQ_INT(tex_kernel_call_tensors(k, 2, (DLTensor *[]){a, &big}), TEX_EINVAL);
    TT_CHECK(strstr(tex_kernel_errmsg(k), "argument 0 (tensor 'A'): dimension 0 cannot be "
                                          "evaluated from the other arguments") != NULL);
    tex_kernel_free(k);
    tex_array_free(a);
    tex_array_free(c);
    tex_array_free(c5);
}

typedef struct {
    tex_kernel *k;
    int wrong;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *w = p;
    DLTensor *A = arr2(64, 4, TEX_F32), *B = arr2(64, 4, TEX_F32), *C = arr2(64, 4, TEX_F32);
    for (int r = 0; r < 50; r++) {
        fill_f32(A, (float)r);
        fill_f32(B, 1000);
        if (tex_kernel_call_tensors(w->k, 3, (DLTensor *[]){A, B, C}) != 0)
            w->wrong++;
        const float *a = A->data, *b = B->data, *c = C->data;
        for (int e = 0; e < 256; e++)
            w->wrong += c[e] != a[e] + b[e];
    }
    tex_array_free(A);
    tex_array_free(B);
    tex_array_free(C);
    return NULL;
}

/* One kernel called from four threads at once. */
static void test_concurrent_calls(void)
{
    if (!tex_target_available("cpu"))
        TT_SKIP("no C compiler");
    vadd v;
    TT_CHECK(vadd_make(&v, false));
    tex_kernel *k = tex_build(v.f, "cpu");
    tex_ctx_free(v.ctx);
    TT_CHECK(k != NULL);
    if (!k)
        return;
    pthread_t th[4];
    worker_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (worker_arg){k, 0};
        TT_CHECK(pthread_create(&th[i], NULL, worker, &args[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        TT_EQ_INT(args[i].wrong, 0);
    }
    tex_kernel_free(k);
}

int main(void)
{
    char dir[] = "/tmp/tex-test-kernel-XXXXXX";
    if (!mkdtemp(dir)) {
        printf("FAIL setup: cannot create a temporary directory\n");
        return 1;
    }
    setenv("TEX_CACHE_DIR", dir, 1);
    TT_RUN(test_targets);
    TT_RUN(test_argument_checks);
    TT_RUN(test_abi_every_dtype);
    TT_RUN(test_offset_and_lifetime);
    TT_RUN(test_runtime_check);
    TT_RUN(test_derived_dimension);
    TT_RUN(test_concurrent_calls);
    tt_remove_tree(dir);
    return tt_finish();
}
