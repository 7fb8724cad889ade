/*
 * The CUDA emitter ("cuda -emit-only"): GPU schedules lowered with the public
 * API (vector add split and bound to blockIdx.x/threadIdx.x, a tiled matmul
 * bound to blockIdx.y/x and threadIdx.y/x, an elementwise f16 exp, a
 * function of two outputs giving two kernels, every math function in f32,
 * f64 and f16 and integer abs/floor, vectorized rows of f32, i32 and f64
 * (tests/support/vec_cases.h) as float4/float2/int4/int2/double2 accesses
 * where aligned and lane by lane where the alignment is not provable),
 * built for "cuda -emit-only"
 * (and with -arch=sm_80 / sm_90), checked for __global__, the index mapping
 * and __launch_bounds__, and compiled to PTX with nvcc for sm_80 and sm_90
 * (skipped when /usr/local/cuda/bin/nvcc is absent). Also: "cuda" without a
 * driver fails with TEX_EUNAVAILABLE and is not available; bad options fail.
 * A hand-built kernel (through texi_device_split and texi_cuda_emit) checks
 * that a barrier inside a guarded thread loop stays outside the guard;
 * another, that a LET in a vectorized loop becomes an array of its lanes;
 * another, holding a horizontal vector reduction (the CPU tail's), is
 * refused with TEX_EUNAVAILABLE naming it.
 */
#include "tt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend_cuda/cuda.h"
#include "support/vec_cases.h"
#include "tex/tex.h"

#define NVCC "/usr/local/cuda/bin/nvcc"

/* Runs nvcc -arch=ARCH -ptx on src; 0 when it compiles, 1 when skipped. */
static int nvcc_ptx(const char *src, const char *arch)
{
    if (access(NVCC, X_OK) != 0)
        return 1;
    char cu[] = "/tmp/tex-cuda-XXXXXX";
    int fd = mkstemp(cu);
    if (fd < 0)
        return -1;
    close(fd);
    char cufile[64], ptx[64], archopt[32];
    snprintf(cufile, sizeof cufile, "%s.cu", cu);
    snprintf(ptx, sizeof ptx, "%s.ptx", cu);
    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    FILE *fp = fopen(cufile, "w");
    if (!fp)
        return -1;
    fputs(src, fp);
    fclose(fp);
    pid_t pid = fork();
    if (pid == 0) {
        char nvcc[] = NVCC, ptxopt[] = "-ptx", werror[] = "-Werror", all[] = "all-warnings",
             oopt[] = "-o";
        char *argv[] = {nvcc, archopt, ptxopt, werror, all, cufile, oopt, ptx, NULL};
        execvp(NVCC, argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    unlink(cu);
    unlink(cufile);
    unlink(ptx);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Builds f for cuda -emit-only, checks the source has every needle and compiles it. */
static void check_emit(tex_ctx *ctx, tex_func *f, const char *const needles[], int n)
{
    TT_CHECK(f != NULL);
    if (!f)
        return;
    const char *targets[] = {"cuda -emit-only", "cuda -emit-only -arch=sm_80",
                             "cuda -emit-only -arch=sm_90"};
    for (int t = 0; t < 3; t++) {
        tex_kernel *k = tex_build(f, targets[t]);
        TT_CHECK(k != NULL);
        if (!k) {
            fprintf(stderr, "%s\n", tex_errmsg(ctx));
            continue;
        }
        const char *src = tex_kernel_source(k);
        TT_CHECK(src && strstr(src, "extern \"C\" __global__"));
        for (int i = 0; src && i < n; i++)
            if (!strstr(src, needles[i])) {
                fprintf(stderr, "missing '%s' in:\n%s\n", needles[i], src);
                TT_CHECK(0);
            }
        TT_EQ_INT(tex_kernel_call(k, 0, NULL), TEX_EUNAVAILABLE);
        if (t == 0) {
            int rc80 = nvcc_ptx(src, "sm_80"), rc90 = nvcc_ptx(src, "sm_90");
            if (rc80 != 0 || rc90 != 0)
                fprintf(stderr, "%s\n", src);
            TT_CHECK(rc80 >= 0 && rc90 >= 0);
        }
        tex_kernel_free(k);
    }
}

/* Splits axis 0 of t's stage by factor and binds it to blockIdx.x / threadIdx.x. */
static void bind_1d(tex_ctx *ctx, tex_schedule *s, tex_tensor *t, tex_iter *ax, int factor)
{
    tex_stage *st = tex_stage_of(s, t);
    tex_iter *o, *i;
    TT_EQ_INT(tex_split(st, ax, tex_int(ctx, factor), &o, &i), 0);
    TT_EQ_INT(tex_bind(st, o, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, i, TEX_THREAD_X), 0);
}

static void test_vector_add(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *n = tex_var(ctx, "n", TEX_I64);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 1, (tex_expr *[]){n});
    tex_tensor *B = tex_placeholder(ctx, "B", TEX_F32, 1, (tex_expr *[]){n});
    tex_iter *i = tex_axis(ctx, "i", n);
    tex_tensor *C = tex_compute(ctx, "C", 1, (tex_iter *[]){i},
                                tex_add(TEX_AT(A, tex_iv(i)), TEX_AT(B, tex_iv(i))));
    tex_schedule *s = tex_schedule_new(ctx, 1, (tex_tensor *[]){C});
    bind_1d(ctx, s, C, i, 64);
    tex_func *f = tex_lower_tensors(s, "vadd", 3, (tex_tensor *[]){A, B, C});
    check_emit(ctx, f,
               (const char *[]){"__launch_bounds__(64)", "blockIdx.x", "threadIdx.x",
                                "vadd_kernel0", "const float *__restrict__ A"},
               5);
    if (tex_target_available("cuda") != 1) { /* no GPU: the error points to -emit-only */
        TT_CHECK(tex_build(f, "cuda") == NULL);
        TT_CHECK(strstr(tex_errmsg(ctx), "cuda -emit-only") != NULL);
    }
    TT_EQ_INT(tex_target_available("cuda -emit-only"), 1);
    TT_CHECK(tex_build(f, "cuda -arch=sm_7") == NULL);
    TT_CHECK(tex_build(f, "cuda -fast") == NULL);
    tex_ctx_free(ctx);
}

static void test_matmul_tiled(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){64, 32});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){32, 48});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 64)), *j = tex_axis(ctx, "j", tex_int(ctx, 48));
    tex_iter *r = tex_reduce_axis(ctx, "k", tex_int(ctx, 32));
    tex_expr *prod = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(r)), TEX_AT(B, tex_iv(r), tex_iv(j)));
    tex_tensor *C =
        tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, (tex_iter *[]){r}));
    tex_schedule *s = tex_schedule_new(ctx, 1, (tex_tensor *[]){C});
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *io, *ii, *jo, *ji;
    TT_EQ_INT(tex_split(st, i, tex_int(ctx, 16), &io, &ii), 0);
    TT_EQ_INT(tex_split(st, j, tex_int(ctx, 16), &jo, &ji), 0);
    TT_EQ_INT(tex_reorder(st, 5, (tex_iter *[]){io, jo, ii, ji, r}), 0);
    TT_EQ_INT(tex_bind(st, io, TEX_BLOCK_Y), 0);
    TT_EQ_INT(tex_bind(st, jo, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, ii, TEX_THREAD_Y), 0);
    TT_EQ_INT(tex_bind(st, ji, TEX_THREAD_X), 0);
    tex_func *f = tex_lower_tensors(s, "mm", 3, (tex_tensor *[]){A, B, C});
    check_emit(ctx, f,
               (const char *[]){"__launch_bounds__(256)", "blockIdx.y", "blockIdx.x", "threadIdx.y",
                                "threadIdx.x", "grid (3, 4, 1), block (16, 16, 1)"},
               6);
    tex_ctx_free(ctx);
}

static void test_f16_exp(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F16, 1, (int64_t[]){1000});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 1000));
    tex_tensor *B = tex_compute(ctx, "B", 1, (tex_iter *[]){i}, tex_exp(TEX_AT(A, tex_iv(i))));
    tex_schedule *s = tex_schedule_new(ctx, 1, (tex_tensor *[]){B});
    bind_1d(ctx, s, B, i, 128);
    tex_func *f = tex_lower_tensors(s, "hexp", 2, (tex_tensor *[]){A, B});
    check_emit(ctx, f,
               (const char *[]){"__half2float", "__float2half_rn", "expf", "__half *__restrict__",
                                "__launch_bounds__(128)"},
               5);
    tex_ctx_free(ctx);
}

static void test_two_kernels(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){256});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 256)), *j = tex_axis(ctx, "j", tex_int(ctx, 256));
    tex_tensor *B = tex_compute(ctx, "B", 1, (tex_iter *[]){i},
                                tex_add(TEX_AT(A, tex_iv(i)), tex_const(ctx, TEX_F32, 1)));
    tex_tensor *C = tex_compute(ctx, "C", 1, (tex_iter *[]){j},
                                tex_mul(TEX_AT(A, tex_iv(j)), tex_const(ctx, TEX_F32, 2)));
    tex_schedule *s = tex_schedule_new(ctx, 2, (tex_tensor *[]){B, C});
    bind_1d(ctx, s, B, i, 64);
    tex_func *f = tex_lower_tensors(s, "two", 3, (tex_tensor *[]){A, B, C});
    check_emit(ctx, f,
               (const char *[]){"two_kernel0", "two_kernel1", "(no thread binding: one thread)",
                                "__launch_bounds__(1)"},
               4);
    tex_ctx_free(ctx);
}

/* Builds f for "cuda -emit-only" and checks that its source lacks needle. */
static void check_lacks(tex_ctx *ctx, tex_func *f, const char *needle)
{
    tex_kernel *k = f ? tex_build(f, "cuda -emit-only") : NULL;
    TT_CHECK(k != NULL);
    const char *src = k ? tex_kernel_source(k) : NULL;
    if (!k)
        fprintf(stderr, "%s\n", tex_errmsg(ctx));
    else if (src && strstr(src, needle)) {
        fprintf(stderr, "unexpected '%s' in:\n%s\n", needle, src);
        TT_CHECK(0);
    }
    tex_kernel_free(k);
}

/* vec_cases.h's rows of f32, i32 and f64 on 4 and 2 lanes: vector loads
 * and stores where aligned, lane by lane where not. */
static void test_vectorized(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *n = tex_var(ctx, "n", TEX_I64), *c64 = tex_int(ctx, 64);
    /* rows symbolic, 64 columns: index i*64 + jo*16 + jm*4 + v, aligned */
    check_emit(ctx, vc_rows(ctx, TEX_F32, n, c64, c64, 0, 4).f,
               (const char *[]){"float4 ", "*reinterpret_cast<const float4 *>(X + ",
                                "*reinterpret_cast<float4 *>(Y + ", ".w = "},
               4);
    tex_expr *c32 = tex_int(ctx, 32), *c8 = tex_int(ctx, 8);
    check_emit(ctx, vc_rows(ctx, TEX_F32, c8, c32, c32, 0, 2).f,
               (const char *[]){"float2 ", "reinterpret_cast<float2 *>(Y + "}, 2);
    check_emit(
        ctx, vc_rows(ctx, TEX_I32, n, c64, c64, 0, 4).f,
        (const char *[]){"*reinterpret_cast<const int4 *>(X + ", "*reinterpret_cast<int4 *>(Y + "},
        2);
    check_emit(
        ctx, vc_rows(ctx, TEX_I32, c8, c32, c32, 0, 2).f,
        (const char *[]){"*reinterpret_cast<const int2 *>(X + ", "*reinterpret_cast<int2 *>(Y + "},
        2);
    check_emit(ctx, vc_rows(ctx, TEX_F64, c8, c32, c32, 0, 2).f,
               (const char *[]){"*reinterpret_cast<const double2 *>(X + ",
                                "*reinterpret_cast<double2 *>(Y + "},
               2);
    /* 8 lanes of f32: two float4 per thread */
    check_emit(ctx, vc_rows(ctx, TEX_F32, c8, c64, c64, 0, 8).f,
               (const char *[]){"*reinterpret_cast<float4 *>(Y + ", "+ 4))"}, 2);
    /* X read one column on, rows of 65: aligned float4 stores, lane loads */
    vc_fn shifted = vc_rows(ctx, TEX_F32, c8, c64, tex_int(ctx, 65), 1, 4);
    check_emit(ctx, shifted.f, (const char *[]){"*reinterpret_cast<float4 *>(Y + ", " = X["}, 2);
    check_lacks(ctx, shifted.f, "const float4");
    /* a symbolic row length: no alignment provable, every access per lane */
    tex_expr *m = tex_var(ctx, "m", TEX_I64);
    vc_fn sym = vc_rows(ctx, TEX_F32, c8, m, m, 0, 4);
    check_emit(ctx, sym.f, (const char *[]){"Y[", "X["}, 2);
    check_lacks(ctx, sym.f, "float4");
    tex_ctx_free(ctx);
}

/* The sum of every math function of src/ir/math_funcs.def on x of dtype t. */
static tex_expr *all_math(tex_ctx *ctx, tex_expr *x, tex_dtype t)
{
    tex_expr *h = tex_const(ctx, t, 0.5);
    tex_expr *terms[] = {tex_exp(x),           tex_log(tex_abs(x)),
                         tex_sqrt(tex_abs(x)), tex_rsqrt(tex_abs(x)),
                         tex_tanh(x),          tex_sigmoid(x),
                         tex_erf(x),           tex_abs(x),
                         tex_floor(x),         tex_ceil(x),
                         tex_round(x),         tex_sin(x),
                         tex_cos(x),           tex_pow(tex_abs(x), h),
                         tex_fma(x, h, x)};
    tex_expr *sum = terms[0];
    for (size_t i = 1; i < sizeof terms / sizeof terms[0]; i++)
        sum = tex_add(sum, terms[i]);
    return sum;
}

static void test_math(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_dtype types[] = {TEX_F32, TEX_F64, TEX_F16};
    const char *needles[][3] = {{"expf(", "rsqrtf(", "erff("},
                                {"exp(", "rsqrt(", "erf("},
                                {"expf(", "tex_round_f16(", "roundf("}};
    for (int t = 0; t < 3; t++) {
        tex_tensor *A = tex_placeholder_c(ctx, "A", types[t], 1, (int64_t[]){256});
        tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 256));
        tex_tensor *B = tex_compute(ctx, "B", 1, (tex_iter *[]){i},
                                    all_math(ctx, TEX_AT(A, tex_iv(i)), types[t]));
        tex_schedule *s = tex_schedule_new(ctx, 1, (tex_tensor *[]){B});
        bind_1d(ctx, s, B, i, 64);
        check_emit(ctx, tex_lower_tensors(s, "m", 2, (tex_tensor *[]){A, B}), needles[t], 3);
    }
    /* integer abs / floor of i32: exact, no float functions */
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_I32, 1, (int64_t[]){256});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 256));
    tex_expr *x = TEX_AT(A, tex_iv(i));
    tex_tensor *B = tex_compute(ctx, "B", 1, (tex_iter *[]){i}, tex_add(tex_abs(x), tex_floor(x)));
    tex_schedule *s = tex_schedule_new(ctx, 1, (tex_tensor *[]){B});
    bind_1d(ctx, s, B, i, 64);
    tex_func *f = tex_lower_tensors(s, "mi", 2, (tex_tensor *[]){A, B});
    check_emit(ctx, f, (const char *[]){"tex_abs_i32("}, 1);
    tex_ctx_free(ctx);
}

/* A guarded thread loop holding a barrier: the barrier stays outside every
 * guard (codegen_cuda.c's rule), the statements around it are guarded.
 *   for bx < 4 bind blockIdx.x: allocate S f32[128] shared {
 *     for t < 128 bind threadIdx.x: S[t] = A[bx*128 + t]
 *     for u < 100 bind threadIdx.x { S[u] = S[u] * 2; barrier; B[bx*100 + u] = S[u + 1] } } */
static tex_expr *i64(tex_ctx *c, int64_t v)
{
    return texi_int_imm(c, TEX_I64, v);
}

/* A LET in a vectorized loop, hand-built (GPU kernels get none from the
 * public API): after the GPU tail it is a const array of its lanes, the
 * loop one float4 load and store; the source compiles. */
static void test_vector_let(void)
{
    tex_ctx *c = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(c, "A", TEX_F32, 1, (int64_t[]){256});
    tex_iter *i = tex_axis(c, "i", i64(c, 256));
    tex_tensor *B = tex_compute(c, "B", 1, (tex_iter *[]){i}, TEX_AT(A, tex_iv(i)));
    tex_schedule *s = tex_schedule_new(c, 1, (tex_tensor *[]){B});
    tex_func *f = tex_lower_tensors(s, "vlet", 2, (tex_tensor *[]){A, B});
    TT_CHECK(f != NULL);
    if (!f) {
        tex_ctx_free(c);
        return;
    }
    tex_expr *bx = texi_var_new(c, "bx", TEX_I64), *t = texi_var_new(c, "t", TEX_I64);
    tex_expr *v = texi_var_new(c, "v", TEX_I64), *x = texi_var_new(c, "x", TEX_F32);
    tex_expr *idx = tex_add(tex_add(tex_mul(bx, i64(c, 64)), tex_mul(t, i64(c, 4))), v);
    tex_stmt *st = texi_store_new(c, f->params[1].buf, idx, tex_add(tex_mul(x, x), x));
    tex_expr *val = tex_mul(texi_load_new(f->params[0].buf, idx), tex_const(c, TEX_F32, 2));
    tex_stmt *body = texi_let_new(c, x, val, st);
    body = texi_for_new(c, v, i64(c, 0), i64(c, 4), TEXI_FOR_VECTORIZED, -1, body);
    body = texi_for_new(c, t, i64(c, 0), i64(c, 16), TEXI_FOR_THREAD, TEX_THREAD_X, body);
    tex_func g = *f, tail;
    g.body = texi_for_new(c, bx, i64(c, 0), i64(c, 4), TEXI_FOR_THREAD, TEX_BLOCK_X, body);
    texi_device_module m;
    TT_EQ_INT(texi_lower_tail(&g, TEXI_TAIL_GPU, false, &tail, &m), 0);
    char *src = texi_cuda_emit(&tail, &m);
    TT_CHECK(src != NULL);
    const char *needles[] = {"const float x[4] = {", "*reinterpret_cast<const float4 *>(A + ",
                             "*reinterpret_cast<float4 *>(B + ", "x[3] * x[3] + x[3]"};
    for (int k = 0; src && k < 4; k++)
        if (!strstr(src, needles[k])) {
            fprintf(stderr, "missing '%s' in:\n%s\n", needles[k], src);
            TT_CHECK(0);
        }
    TT_CHECK(!src || (nvcc_ptx(src, "sm_80") >= 0 && nvcc_ptx(src, "sm_90") >= 0));
    free(src);
    tex_ctx_free(c);
}

static void test_barrier_guard(void)
{
    tex_ctx *c = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(c, "A", TEX_F32, 1, (int64_t[]){512});
    tex_iter *i = tex_axis(c, "i", i64(c, 400));
    tex_tensor *B = tex_compute(c, "B", 1, (tex_iter *[]){i}, TEX_AT(A, tex_iv(i)));
    tex_schedule *s = tex_schedule_new(c, 1, (tex_tensor *[]){B});
    tex_func *f = tex_lower_tensors(s, "bar", 2, (tex_tensor *[]){A, B});
    TT_CHECK(f != NULL);
    if (!f) {
        tex_ctx_free(c);
        return;
    }
    texi_buffer *ab = f->params[0].buf, *bb = f->params[1].buf;
    texi_buffer *sh =
        texi_buffer_new(c, "S", TEX_F32, TEXI_SCOPE_SHARED, 1, (tex_expr *[]){i64(c, 128)});
    tex_expr *bx = texi_var_new(c, "bx", TEX_I64), *t = texi_var_new(c, "t", TEX_I64);
    tex_expr *u = texi_var_new(c, "u", TEX_I64);
    tex_stmt *fetch =
        texi_store_new(c, sh, t, texi_load_new(ab, tex_add(tex_mul(bx, i64(c, 128)), t)));
    tex_stmt *l1 = texi_for_new(c, t, i64(c, 0), i64(c, 128), TEXI_FOR_THREAD, TEX_THREAD_X, fetch);
    tex_stmt *body2[] = {
        texi_store_new(c, sh, u, tex_mul(texi_load_new(sh, u), tex_const(c, TEX_F32, 2))),
        texi_barrier_new(c, TEXI_SCOPE_SHARED),
        texi_store_new(c, bb, tex_add(tex_mul(bx, i64(c, 100)), u),
                       texi_load_new(sh, tex_add(u, i64(c, 1))))};
    tex_stmt *l2 = texi_for_new(c, u, i64(c, 0), i64(c, 100), TEXI_FOR_THREAD, TEX_THREAD_X,
                                texi_seq_new(c, 3, body2));
    tex_stmt *al = texi_allocate_new(c, sh, texi_seq_new(c, 2, (tex_stmt *[]){l1, l2}));
    tex_func g = *f;
    g.body = texi_for_new(c, bx, i64(c, 0), i64(c, 4), TEXI_FOR_THREAD, TEX_BLOCK_X, al);
    texi_lower lw = {.ctx = c, .sch = NULL, .func = &g};
    texi_device_module m;
    TT_EQ_INT(texi_device_split(&lw, g.body, &m), 0);
    char *src = texi_cuda_emit(&g, &m);
    TT_CHECK(src != NULL);
    if (src) {
        const char *guard = "(int64_t)threadIdx.x < 100";
        const char *bar = strstr(src, "__syncthreads();");
        const char *g1 = strstr(src, guard), *g2 = g1 ? strstr(g1 + 1, guard) : NULL;
        TT_CHECK(bar && g1 && g2 && g1 < bar && bar < g2);
        if (bar && g2) { /* the barrier line is indented like the guards: not inside one */
            const char *ls = bar, *gs = g2;
            while (ls > src && ls[-1] == ' ')
                ls--;
            while (gs > src && gs[-1] != '\n')
                gs--;
            TT_EQ_INT((int)(bar - ls), (int)(strspn(gs, " ")));
        } else {
            fprintf(stderr, "%s\n", src);
        }
        TT_CHECK(strstr(src, "__shared__ __align__(16) float S[128];") != NULL);
        TT_CHECK(strstr(src, "__launch_bounds__(128)") != NULL);
        int rc = nvcc_ptx(src, "sm_80");
        if (rc != 0)
            fprintf(stderr, "%s\n", src);
        TT_CHECK(rc >= 0);
        free(src);
    }
    tex_ctx_free(c);
}

/* Blocks beyond CUDA's limits are refused at build time when their extents
 * are constants: threadIdx.x over 2048, and 64 x 32 threads in all; a grid
 * of 70000 along y. */
static void test_launch_limits(void)
{
    static const struct {
        int64_t n, split;
        tex_thread_tag outer, inner;
        const char *want;
    } cases[] = {{4096, 2048, TEX_BLOCK_X, TEX_THREAD_X, "threadIdx.x has extent 2048"},
                 {4096, 64, TEX_THREAD_Y, TEX_THREAD_X, "more than 1024 threads"},
                 {140000, 2, TEX_BLOCK_Y, TEX_THREAD_X, "blockIdx.y has extent 70000"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tex_ctx *x = tex_ctx_new();
        tex_tensor *A = tex_placeholder_c(x, "A", TEX_F32, 1, (int64_t[]){cases[c].n});
        tex_iter *i = tex_axis(x, "i", tex_int(x, cases[c].n)), *o, *in;
        tex_tensor *B = tex_compute(x, "B", 1, &i, tex_neg(TEX_AT(A, tex_iv(i))));
        tex_schedule *s = tex_schedule_new(x, 1, &B);
        tex_stage *st = tex_stage_of(s, B);
        TT_EQ_INT(tex_split(st, i, tex_int(x, cases[c].split), &o, &in), 0);
        TT_EQ_INT(tex_bind(st, o, cases[c].outer), 0);
        TT_EQ_INT(tex_bind(st, in, cases[c].inner), 0);
        tex_func *f = tex_lower_tensors(s, "big", 2, (tex_tensor *[]){A, B});
        TT_CHECK(f && tex_build(f, "cuda -emit-only") == NULL);
        TT_EQ_INT(tex_errcode(x), TEX_EINVAL);
        if (!strstr(tex_errmsg(x), cases[c].want) || !strstr(tex_errmsg(x), "big_kernel0"))
            TT_FAILF("case %zu: %s", c, tex_errmsg(x));
        tex_ctx_free(x);
    }
}

/* A shared buffer of symbolic size needs a constant bound of at most 48
 * KiB: B's row [1, n] computed in shared memory at C's block loop is
 * refused for a symbolic n (any up to 2^31), by the GPU tail before the
 * printer runs (device_check), naming the buffer; accepted for n = 1024;
 * refused for n = 16384, whose 64 KiB row is more static shared memory
 * than a block may have, naming the kernel's largest shared buffer. */
static void test_shared_bounds(void)
{
    static const int64_t sizes[] = {-1, 1024, 16384};
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        tex_ctx *x = tex_ctx_new();
        tex_expr *n = sizes[c] < 0 ? tex_var(x, "n", TEX_I32) : tex_int(x, sizes[c]);
        tex_tensor *A = tex_placeholder(x, "A", TEX_F32, 2, (tex_expr *[]){tex_int(x, 8), n});
        tex_iter *i = tex_axis(x, "i", tex_int(x, 8)), *j = tex_axis(x, "j", n);
        tex_tensor *B =
            tex_compute(x, "B", 2, (tex_iter *[]){i, j}, tex_exp(TEX_AT(A, tex_iv(i), tex_iv(j))));
        tex_iter *ci = tex_axis(x, "i", tex_int(x, 8)), *cj = tex_axis(x, "j", n);
        tex_tensor *C = tex_compute(x, "C", 2, (tex_iter *[]){ci, cj},
                                    tex_neg(TEX_AT(B, tex_iv(ci), tex_iv(cj))));
        tex_schedule *s = tex_schedule_new(x, 1, &C);
        tex_stage *sc = tex_stage_of(s, C), *sb = tex_stage_of(s, B);
        TT_EQ_INT(tex_bind(sc, ci, TEX_BLOCK_X), 0);
        TT_EQ_INT(tex_compute_at(sb, sc, ci), 0);
        TT_EQ_INT(tex_set_scope(sb, TEX_SCOPE_SHARED), 0);
        tex_func *f = tex_lower_tensors(s, "rows", 2, (tex_tensor *[]){A, C});
        tex_kernel *k = f ? tex_build(f, "cuda -emit-only") : NULL;
        if (sizes[c] == 1024) {
            TT_CHECK(k != NULL);
        } else if (sizes[c] == 16384) { /* a row of B is 64 KiB */
            TT_CHECK(f && !k);
            TT_EQ_INT(tex_errcode(x), TEX_EUNAVAILABLE);
            if (!strstr(tex_errmsg(x), "its shared buffers need 65536 bytes (the largest, 'B'"))
                TT_FAILF("size %lld: %s", (long long)sizes[c], tex_errmsg(x));
        } else {
            TT_CHECK(f && !k);
            TT_EQ_INT(tex_errcode(x), TEX_EUNAVAILABLE);
            if (!strstr(tex_errmsg(x), "buffer 'B' has a size without a constant upper bound"))
                TT_FAILF("size %lld: %s", (long long)sizes[c], tex_errmsg(x));
        }
        tex_kernel_free(k);
        tex_ctx_free(x);
    }
}

/* for bx < 4 bind blockIdx.x: B[bx] = vreduce_add(A[ramp(bx*4, 1, 4)]): the
 * CUDA printer has no vectors and says so. */
static void test_vreduce_refused(void)
{
    tex_ctx *c = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(c, "A", TEX_F32, 1, (int64_t[]){16});
    tex_iter *i = tex_axis(c, "i", texi_int_imm(c, TEX_I64, 4));
    tex_tensor *B = tex_compute(c, "B", 1, (tex_iter *[]){i}, TEX_AT(A, tex_iv(i)));
    tex_schedule *s = tex_schedule_new(c, 1, (tex_tensor *[]){B});
    tex_func *f = tex_lower_tensors(s, "vred", 2, (tex_tensor *[]){A, B});
    TT_CHECK(f != NULL);
    if (!f) {
        tex_ctx_free(c);
        return;
    }
    tex_expr *bx = texi_var_new(c, "bx", TEX_I64);
    tex_expr *base = tex_mul(bx, texi_int_imm(c, TEX_I64, 4));
    tex_expr *lanes =
        texi_load_new(f->params[0].buf, texi_ramp_new(base, texi_int_imm(c, TEX_I64, 1), 4));
    tex_stmt *st =
        texi_store_new(c, f->params[1].buf, bx, texi_vreduce_new(TEXI_REDUCE_SUM, lanes));
    tex_func g = *f;
    g.body = texi_for_new(c, bx, texi_int_imm(c, TEX_I64, 0), texi_int_imm(c, TEX_I64, 4),
                          TEXI_FOR_THREAD, TEX_BLOCK_X, st);
    texi_lower lw = {.ctx = c, .sch = NULL, .func = &g};
    texi_device_module m;
    TT_EQ_INT(texi_device_split(&lw, g.body, &m), 0);
    TT_CHECK(texi_cuda_emit(&g, &m) == NULL);
    TT_EQ_INT(tex_errcode(c), TEX_EUNAVAILABLE);
    TT_CHECK(strstr(tex_errmsg(c), "vreduce_add") != NULL);
    tex_ctx_free(c);
}

int main(void)
{
    TT_RUN(test_vector_add);
    TT_RUN(test_matmul_tiled);
    TT_RUN(test_f16_exp);
    TT_RUN(test_two_kernels);
    TT_RUN(test_math);
    TT_RUN(test_vectorized);
    TT_RUN(test_vector_let);
    TT_RUN(test_barrier_guard);
    TT_RUN(test_vreduce_refused);
    TT_RUN(test_launch_limits);
    TT_RUN(test_shared_bounds);
    return tt_finish();
}
