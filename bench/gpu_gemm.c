/*
 * bench/gpu_gemm: GEMM on a GPU, tex's automatic CUDA schedule against
 * cuBLAS in the same run.
 *
 * Cases (row-major C[M, N] = A[M, K] . B[K, N]):
 *   f32_N     f32 inputs and output, N = 1024, 2048, 4096; anchor cublasSgemm
 *   f16f32_N  f16 inputs, f32 accumulation and output (C = sum f32(A) f32(B)),
 *             N = 1024, 4096; tex uses tensor cores (wmma); anchor
 *             cublasGemmEx (CUDA_R_16F inputs, CUBLAS_COMPUTE_32F)
 * tex's kernel is tex_auto_schedule(..., "cuda") of the computation, built
 * with tex_build(f, "cuda"); both sides read and write the same device
 * arrays (tex_array_new on kDLCUDA). cuBLAS is column-major, so it computes
 * C^T = B^T A^T, which is C in row-major order. tex's result is checked
 * against cuBLAS's (relative error <= 1e-4 for f32, 1e-3 for f16 inputs)
 * before anything is timed. Each timed call ends with the device idle (tex
 * synchronizes in tex_kernel_call_tensors; cuBLAS is followed by
 * cuCtxSynchronize), so the times are per call, launch included.
 *
 * Without a GPU and driver (tex_target_available("cuda") == 0), or without
 * cuBLAS (libcublas.so.N, found through CUDA_HOME, /usr/local/cuda or the
 * loader's path), the program prints one "bench=gpu_gemm skipped: ..." line
 * and exits with 0, so make bench runs everywhere.
 */
#include "common.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <tex/tex.h>

/* The cuBLAS v2 entry points used (values from cublas_api.h / library_types.h). */
enum {
    CUBLAS_OP_N = 0,
    CUDA_R_32F = 0,
    CUDA_R_16F = 2,
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_GEMM_DEFAULT = -1
};

typedef struct {
    void *handle;
    int (*create)(void **handle);
    int (*destroy)(void *handle);
    int (*sgemm)(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const void *a,
                 int lda, const void *b, int ldb, const float *beta, void *c, int ldc);
    int (*gemm_ex)(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *a,
                   int a_type, int lda, const void *b, int b_type, int ldb, const void *beta,
                   void *c, int c_type, int ldc, int compute, int algo);
    int (*ctx_sync)(void);
} cublas_lib;

/* Opens cuBLAS and the driver's cuCtxSynchronize; false (why filled) when
 * one is missing. */
static bool cublas_open(cublas_lib *cb, char *why, size_t n)
{
    const char *home = getenv("CUDA_HOME");
    char paths[4][512];
    int np = 0;
    if (home && *home)
        snprintf(paths[np++], sizeof paths[0], "%s/lib64/libcublas.so", home);
    snprintf(paths[np++], sizeof paths[0], "/usr/local/cuda/lib64/libcublas.so");
    snprintf(paths[np++], sizeof paths[0], "libcublas.so");
    snprintf(paths[np++], sizeof paths[0], "libcublas.so.13");
    void *lib = NULL;
    for (int i = 0; i < np && !lib; i++)
        lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib || !drv) {
        snprintf(why, n, "%s not found", lib ? "libcuda.so.1" : "libcublas.so");
        return false;
    }
    *(void **)&cb->create = dlsym(lib, "cublasCreate_v2");
    *(void **)&cb->destroy = dlsym(lib, "cublasDestroy_v2");
    *(void **)&cb->sgemm = dlsym(lib, "cublasSgemm_v2");
    *(void **)&cb->gemm_ex = dlsym(lib, "cublasGemmEx");
    *(void **)&cb->ctx_sync = dlsym(drv, "cuCtxSynchronize");
    if (!cb->create || !cb->destroy || !cb->sgemm || !cb->gemm_ex || !cb->ctx_sync) {
        snprintf(why, n, "a cuBLAS or driver entry point is missing");
        return false;
    }
    if (cb->create(&cb->handle) != 0) {
        snprintf(why, n, "cublasCreate failed");
        return false;
    }
    return true;
}

typedef struct {
    const char *name;
    int64_t n; /* M = N = K */
    bool f16;  /* f16 inputs, f32 accumulation */
} gemm_case;

/* One case's arrays and kernel. */
typedef struct {
    const gemm_case *gc;
    cublas_lib *cb;
    tex_kernel *k;
    DLTensor *dev[4]; /* A, B, C (tex), C (cuBLAS) */
} gemm_run;

static int run_tex(void *arg)
{
    gemm_run *r = arg;
    return tex_kernel_call_tensors(r->k, 3, r->dev);
}

static int run_cublas(void *arg)
{
    gemm_run *r = arg;
    int n = (int)r->gc->n;
    float one = 1, zero = 0;
    void *a = r->dev[0]->data, *b = r->dev[1]->data, *c = r->dev[3]->data;
    int rc = r->gc->f16 ? r->cb->gemm_ex(r->cb->handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b,
                                         CUDA_R_16F, n, a, CUDA_R_16F, n, &zero, c, CUDA_R_32F, n,
                                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
                        : r->cb->sgemm(r->cb->handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b,
                                       n, a, n, &zero, c, n);
    return rc != 0 || r->cb->ctx_sync() != 0;
}

/* The f16 bits of x (round to nearest even; |x| <= 1 here, so no overflow). */
static uint16_t f16_bits(float x)
{
    union {
        float f;
        uint32_t u;
    } v = {x};
    uint32_t sign = (v.u >> 16) & 0x8000u, mag = v.u & 0x7fffffffu;
    if (mag < 0x38800000u) { /* below the smallest normal f16: a subnormal */
        float s = (x < 0 ? -x : x) * 16777216.0f;
        return (uint16_t)(sign | (uint32_t)lrintf(s));
    }
    uint32_t r = mag - 0x38000000u; /* rebias the exponent (127 -> 15), keep 13 extra bits */
    r = (r + 0x0fffu + ((r >> 13) & 1u)) >> 13;
    return (uint16_t)(sign | r);
}

/* The device array of an n x n input filled with uniform values in [-1, 1). */
static DLTensor *input_array(int64_t n, bool f16, uint64_t seed)
{
    int64_t shape[2] = {n, n};
    DLTensor *h = tex_array_new(2, shape, f16 ? TEX_F16 : TEX_F32, (DLDevice){kDLCPU, 0});
    DLTensor *d = tex_array_new(2, shape, f16 ? TEX_F16 : TEX_F32, (DLDevice){kDLCUDA, 0});
    float *x = malloc((size_t)(n * n) * sizeof *x);
    if (h && d && x) {
        bench_fill_random(x, n * n, seed);
        for (int64_t i = 0; i < n * n; i++) {
            if (f16)
                ((uint16_t *)h->data)[i] = f16_bits(x[i]);
            else
                ((float *)h->data)[i] = x[i];
        }
    }
    if (!h || !d || !x || tex_array_copy(d, h) != 0) {
        tex_array_free(d);
        d = NULL;
    }
    free(x);
    tex_array_free(h);
    return d;
}

/* The automatic CUDA kernel of C = A . B (f32 sums of f16 products when f16). */
static tex_kernel *build_tex(tex_ctx *x, const gemm_case *gc, char *why, size_t n)
{
    tex_dtype in = gc->f16 ? TEX_F16 : TEX_F32;
    int64_t sh[2] = {gc->n, gc->n};
    tex_tensor *A = tex_placeholder_c(x, "A", in, 2, sh), *B = tex_placeholder_c(x, "B", in, 2, sh);
    tex_iter *i = tex_axis(x, "i", tex_int(x, gc->n)), *j = tex_axis(x, "j", tex_int(x, gc->n));
    tex_iter *k = tex_reduce_axis(x, "k", tex_int(x, gc->n));
    tex_expr *a = TEX_AT(A, tex_iv(i), tex_iv(k)), *b = TEX_AT(B, tex_iv(k), tex_iv(j));
    if (gc->f16) {
        a = tex_cast(TEX_F32, a);
        b = tex_cast(TEX_F32, b);
    }
    tex_tensor *C = tex_compute(x, "C", 2, (tex_iter *[]){i, j}, tex_sum(tex_mul(a, b), 1, &k));
    tex_schedule *s = C ? tex_auto_schedule(x, 1, &C, "cuda") : NULL;
    tex_func *f = s ? tex_lower_tensors(s, "gemm", 3, (tex_tensor *[]){A, B, C}) : NULL;
    tex_kernel *kern = f ? tex_build(f, "cuda") : NULL;
    if (!kern)
        snprintf(why, n, "%s", tex_errmsg(x));
    return kern;
}

/* The host copy of a device f32 array (NULL on failure). */
static float *to_host(const DLTensor *d, int64_t n)
{
    int64_t shape[2] = {n, n};
    DLTensor *h = tex_array_new(2, shape, TEX_F32, (DLDevice){kDLCPU, 0});
    float *out = malloc((size_t)(n * n) * sizeof *out);
    if (h && out && tex_array_copy(h, d) == 0) {
        memcpy(out, h->data, (size_t)(n * n) * sizeof *out);
    } else {
        free(out);
        out = NULL;
    }
    tex_array_free(h);
    return out;
}

/* Builds, checks and times one case; prints its line. */
static void run_case(const gemm_case *gc, cublas_lib *cb)
{
    char why[1024] = "";
    tex_ctx *x = tex_ctx_new();
    gemm_run r = {gc, cb, x ? build_tex(x, gc, why, sizeof why) : NULL, {0}};
    if (!r.k) {
        fprintf(stderr, "gpu_gemm %s: %s\n", gc->name, why);
        bench_fail("gpu_gemm", gc->name, "tex_build");
    }
    int64_t shape[2] = {gc->n, gc->n};
    r.dev[0] = input_array(gc->n, gc->f16, 1);
    r.dev[1] = input_array(gc->n, gc->f16, 2);
    r.dev[2] = tex_array_new(2, shape, TEX_F32, (DLDevice){kDLCUDA, 0});
    r.dev[3] = tex_array_new(2, shape, TEX_F32, (DLDevice){kDLCUDA, 0});
    for (int t = 0; t < 4; t++)
        if (!r.dev[t])
            bench_fail("gpu_gemm", gc->name, "device_arrays");
    if (run_tex(&r) != 0 || run_cublas(&r) != 0) {
        fprintf(stderr, "gpu_gemm %s: %s\n", gc->name, r.k ? tex_kernel_errmsg(r.k) : why);
        bench_fail("gpu_gemm", gc->name, "first_run");
    }
    float *got = to_host(r.dev[2], gc->n), *want = to_host(r.dev[3], gc->n);
    if (!got || !want)
        bench_fail("gpu_gemm", gc->name, "copy_back");
    bench_check_close("gpu_gemm", gc->name, got, want, gc->n * gc->n, gc->f16 ? 1e-3 : 1e-4);
    free(got);
    free(want);
    if (bench_compare("gpu_gemm", gc->name, (bench_run){run_tex, &r, NULL}, "cublas",
                      (bench_run){run_cublas, &r, NULL}, 500) != 0)
        bench_fail("gpu_gemm", gc->name, "timed_run");
    for (int t = 0; t < 4; t++)
        tex_array_free(r.dev[t]);
    tex_kernel_free(r.k);
    tex_ctx_free(x);
}

int main(void)
{
    static const gemm_case cases[] = {
        {"f32_1024", 1024, false},   {"f32_2048", 2048, false}, {"f32_4096", 4096, false},
        {"f16f32_1024", 1024, true}, {"f16f32_4096", 4096, true},
    };
    char why[256];
    cublas_lib cb = {0};
    if (tex_target_available("cuda") != 1) {
        printf("bench=gpu_gemm skipped: no CUDA device or driver\n");
        return 0;
    }
    if (!cublas_open(&cb, why, sizeof why)) {
        printf("bench=gpu_gemm skipped: %s\n", why);
        return 0;
    }
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        run_case(&cases[c], &cb);
    cb.destroy(cb.handle);
    return 0;
}
