/*
 * bench/mlp: a transformer MLP block in f32, M = 512 tokens of width D = 768
 * with a hidden layer of H = 3072, on 2 and 1 threads:
 *   Y = X + (gelu(X W1 + b1) W2 + b2)     (gelu: the erf form)
 * tex: tex_op_matmul / bias_add / gelu / add, scheduled by tex_auto_schedule
 * ("cpu -threads=N"): two loop nests, the hidden layer (GEMM in register
 * tiles with bias and gelu applied to each tile as it is finished) and the
 * output (GEMM tiles with bias and the residual add), in one kernel.
 * Anchor (anchor=openblas): two cblas_sgemm calls on the same threads with
 * separate parallel loops for bias + gelu and bias + residual, as a
 * framework calling BLAS runs this block. Both results are checked against
 * each other (relative error <= 1e-4) before timing, interleaved.
 *
 * usage: mlp           the benchmark
 *        mlp --source  prints the C that tex generates (2 threads)
 */
#include "common.h"
#include "openblas.h"

#include <math.h>
#include <tex/tex.h>

enum { M = 512, D = 768, H = 3072 };

typedef struct {
    int threads;
    tex_kernel *kernel;
    DLTensor *x, *w1, *b1, *w2, *b2, *y; /* tex's arrays, also the anchor's inputs */
    float *hid, *out;                    /* the anchor's hidden layer and output */
} mlp_case;

/* x w + b (w: [K, N], b: [N]); the matmul is named name, the sum name + "b". */
static tex_tensor *linear(tex_ctx *c, tex_tensor *x, tex_tensor *w, tex_tensor *b, const char *name)
{
    char sum[32];
    snprintf(sum, sizeof sum, "%sb", name);
    return tex_op_bias_add(c, sum, tex_op_matmul(c, name, x, w, 0, 0), b, -1);
}

/* The block with tex_op_*, auto-scheduled and lowered; NULL on error. */
static tex_func *mlp_define(tex_ctx *c, const char *target)
{
    tex_tensor *X = tex_placeholder_c(c, "X", TEX_F32, 2, (int64_t[]){M, D});
    tex_tensor *W1 = tex_placeholder_c(c, "W1", TEX_F32, 2, (int64_t[]){D, H});
    tex_tensor *b1 = tex_placeholder_c(c, "b1", TEX_F32, 1, (int64_t[]){H});
    tex_tensor *W2 = tex_placeholder_c(c, "W2", TEX_F32, 2, (int64_t[]){H, D});
    tex_tensor *b2 = tex_placeholder_c(c, "b2", TEX_F32, 1, (int64_t[]){D});
    tex_tensor *h = tex_op_gelu(c, "G", linear(c, X, W1, b1, "H1"));
    tex_tensor *Y = tex_op_add(c, "Y", X, linear(c, h, W2, b2, "H2"));
    tex_schedule *s = Y ? tex_auto_schedule(c, 1, &Y, target) : NULL;
    return s ? tex_lower_tensors(s, "mlp", 6, (tex_tensor *[]){X, W1, b1, W2, b2, Y}) : NULL;
}

/* Builds sc->kernel; 0 or -1 (message printed). */
static int mlp_build(mlp_case *sc)
{
    char target[64];
    snprintf(target, sizeof target, "cpu -threads=%d", sc->threads);
    tex_ctx *c = tex_ctx_new();
    tex_func *f = c ? mlp_define(c, target) : NULL;
    sc->kernel = f ? tex_build(f, target) : NULL;
    if (!sc->kernel)
        fprintf(stderr, "mlp: %s\n", c ? tex_errmsg(c) : "out of memory");
    tex_ctx_free(c);
    return sc->kernel ? 0 : -1;
}

static int run_tex(void *arg)
{
    mlp_case *sc = arg;
    return tex_kernel_call_tensors(sc->kernel, 6,
                                   (DLTensor *[]){sc->x, sc->w1, sc->b1, sc->w2, sc->b2, sc->y});
}

/* The anchor: OpenBLAS GEMMs, then plain parallel loops for the rest. */
static int run_blas(void *arg)
{
    mlp_case *sc = arg;
    const float *x = sc->x->data, *b1 = sc->b1->data, *b2 = sc->b2->data;
    float *hid = sc->hid, *out = sc->out;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, H, D, 1.0f, x, D, sc->w1->data, H,
                0.0f, hid, H);
#pragma omp parallel for num_threads(sc->threads)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < H; j++) {
            float v = hid[i * H + j] + b1[j];
            hid[i * H + j] = 0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2));
        }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, D, H, 1.0f, hid, H, sc->w2->data, D,
                0.0f, out, D);
#pragma omp parallel for num_threads(sc->threads)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < D; j++)
            out[i * D + j] += b2[j] + x[i * D + j];
    return 0;
}

static DLTensor *new_filled(int ndim, const int64_t shape[], uint64_t seed, float scale)
{
    DLDevice cpu = {kDLCPU, 0};
    DLTensor *a = tex_array_new(ndim, shape, TEX_F32, cpu);
    int64_t n = ndim == 1 ? shape[0] : shape[0] * shape[1];
    if (a) {
        bench_fill_random(a->data, n, seed);
        for (int64_t k = 0; k < n; k++)
            ((float *)a->data)[k] *= scale;
    }
    return a;
}

static int mlp_alloc(mlp_case *sc)
{
    sc->x = new_filled(2, (int64_t[]){M, D}, 1, 1.0f);
    sc->w1 = new_filled(2, (int64_t[]){D, H}, 2, 1.0f / 28); /* about 1 / sqrt(D) */
    sc->b1 = new_filled(1, (int64_t[]){H}, 3, 1.0f);
    sc->w2 = new_filled(2, (int64_t[]){H, D}, 4, 1.0f / 55); /* about 1 / sqrt(H) */
    sc->b2 = new_filled(1, (int64_t[]){D}, 5, 1.0f);
    sc->y = new_filled(2, (int64_t[]){M, D}, 6, 1.0f);
    sc->hid = bench_floats((int64_t)M * H);
    sc->out = bench_floats((int64_t)M * D);
    return sc->x && sc->w1 && sc->b1 && sc->w2 && sc->b2 && sc->y && sc->hid && sc->out ? 0 : -1;
}

static void mlp_release(mlp_case *sc)
{
    tex_kernel_free(sc->kernel);
    DLTensor *arrs[6] = {sc->x, sc->w1, sc->b1, sc->w2, sc->b2, sc->y};
    for (int k = 0; k < 6; k++)
        tex_array_free(arrs[k]);
    free(sc->hid);
    free(sc->out);
}

static void run_case(int threads)
{
    char desc[64];
    snprintf(desc, sizeof desc, "%dx%dx%d/t%d", M, D, H, threads);
    mlp_case sc = {.threads = threads};
    if (mlp_alloc(&sc) != 0 || mlp_build(&sc) != 0)
        bench_fail("mlp", desc, "setup_failed");
    openblas_set_num_threads(threads);
    memset(sc.y->data, 0xff, sizeof(float) * M * D); /* NaN: must be overwritten */
    if (run_tex(&sc) != 0 || run_blas(&sc) != 0)
        bench_fail("mlp", desc, "call_failed");
    bench_check_close("mlp", desc, sc.y->data, sc.out, (int64_t)M * D, 1e-4);
    if (bench_compare("mlp", desc, (bench_run){run_tex, &sc, NULL}, "openblas",
                      (bench_run){run_blas, &sc, NULL}, 2000) != 0)
        bench_fail("mlp", desc, "call_failed");
    mlp_release(&sc);
}

/* Prints the generated C of the 2-thread kernel; 0 or 1. */
static int print_source(void)
{
    mlp_case sc = {.threads = 2};
    int rc = mlp_build(&sc);
    if (rc == 0)
        fputs(tex_kernel_source(sc.kernel), stdout);
    tex_kernel_free(sc.kernel);
    return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    fix_openblas_core("mlp", argv);
    if (argc > 1 && strcmp(argv[1], "--source") == 0)
        return print_source();
    run_case(2);
    run_case(1);
    return 0;
}
