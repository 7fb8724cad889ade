/*
 * The CUDA emitter ("cuda -emit-only"): GPU schedules lowered with the public
 * API (vector add split and bound to blockIdx.x/threadIdx.x, a tiled matmul
 * bound to blockIdx.y/x and threadIdx.y/x, an elementwise f16 exp, a
 * function of two outputs giving two kernels), built for "cuda -emit-only"
 * (and with -arch=sm_80 / sm_90), checked for __global__, the index mapping
 * and __launch_bounds__, and compiled to PTX with nvcc for sm_80 and sm_90
 * (skipped when /usr/local/cuda/bin/nvcc is absent). Also: "cuda" without a
 * driver fails with TEX_EUNAVAILABLE and is not available; bad options fail.
 */
#include "tt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
    tex_kernel *k = tex_build(f, "cuda");
    TT_CHECK(k == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "cuda -emit-only") != NULL);
    TT_EQ_INT(tex_target_available("cuda"), 0);
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
    tex_tensor *C = tex_compute(ctx, "C", 2, (tex_iter *[]){i, j},
                                tex_sum(prod, 1, (tex_iter *[]){r}));
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
               (const char *[]){"__launch_bounds__(256)", "blockIdx.y", "blockIdx.x",
                                "threadIdx.y", "threadIdx.x", "grid (3, 4, 1), block (16, 16, 1)"},
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

int main(void)
{
    TT_RUN(test_vector_add);
    TT_RUN(test_matmul_tiled);
    TT_RUN(test_f16_exp);
    TT_RUN(test_two_kernels);
    return tt_finish();
}
