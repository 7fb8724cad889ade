/*
 * The CUDA runtime (src/backend_cuda/backend.c, cuda_driver.c, the device
 * parts of src/runtime/array.c and kernel.c).
 *
 * Without a driver (this machine): "cuda" is not available and its builds
 * fail with TEX_EUNAVAILABLE and a message naming the driver; device arrays
 * cannot be made or copied (TEX_EUNAVAILABLE); "cuda -emit-only" gives the
 * source and, with NVRTC, PTX for sm_80 (the default) and sm_90, a launch
 * plan, and a kernel that cannot be called. NVRTC directly: a broken source
 * comes back as TEX_ECOMPILE with NVRTC's log, a bad architecture as
 * TEX_EINVAL, fp16 headers are found. The NVRTC candidate list never names
 * a stubs directory and puts the driver's soname and versioned files first.
 * Argument checks: cuda kernels take kDLCUDA / kDLCUDAManaged memory of
 * device 0 only, CPU kernels host memory only.
 * With a driver (a GPU machine): a vector add with a symbolic size runs on
 * device arrays, including an empty launch; those tests skip here, and the
 * no-driver tests skip there.
 */
#include "tt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_cuda/cuda.h"
#include "backend_cuda/cuda_driver.h"
#include "tex/tex.h"

static const DLDevice gpu0 = {kDLCUDA, 0};

/* C[i] = A[i] + 2 * B[i] over a symbolic n, split by 64 onto blocks/threads. */
static tex_func *vector_add(tex_ctx *ctx)
{
    tex_expr *n = tex_var(ctx, "n", TEX_I64);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 1, (tex_expr *[]){n});
    tex_tensor *B = tex_placeholder(ctx, "B", TEX_F32, 1, (tex_expr *[]){n});
    tex_iter *i = tex_axis(ctx, "i", n);
    tex_expr *two_b = tex_mul(tex_const(ctx, TEX_F32, 2), TEX_AT(B, tex_iv(i)));
    tex_tensor *C =
        tex_compute(ctx, "C", 1, (tex_iter *[]){i}, tex_add(TEX_AT(A, tex_iv(i)), two_b));
    tex_schedule *s = tex_schedule_new(ctx, 1, (tex_tensor *[]){C});
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *o = NULL, *in = NULL;
    TT_EQ_INT(tex_split(st, i, tex_int(ctx, 64), &o, &in), 0);
    TT_EQ_INT(tex_bind(st, o, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, in, TEX_THREAD_X), 0);
    tex_func *f = tex_lower_tensors(s, "vadd", 3, (tex_tensor *[]){A, B, C});
    TT_CHECK(f != NULL);
    if (!f)
        printf("  %s\n", tex_errmsg(ctx));
    return f;
}

static bool has_driver(void)
{
    return texi_cuda_driver() != NULL;
}

/* ------------------------------------------------------------ no driver */

static void test_no_driver_not_available(void)
{
    if (has_driver())
        TT_SKIP("a CUDA driver is present");
    TT_CHECK(strlen(texi_cuda_driver_why()) > 0);
    TT_EQ_INT(tex_target_available("cuda"), 0);
    TT_EQ_INT(tex_target_available("cuda -arch=sm_90"), 0);
    TT_EQ_INT(tex_target_available("cuda -emit-only"), 1);
    TT_EQ_INT(tex_target_available("cuda -emit-only -arch=sm_90"), 1);
}

static void test_no_driver_build_fails(void)
{
    if (has_driver())
        TT_SKIP("a CUDA driver is present");
    tex_ctx *ctx = tex_ctx_new();
    tex_func *f = vector_add(ctx);
    const char *targets[] = {"cuda", "cuda -arch=sm_80"};
    for (int t = 0; t < 2; t++) {
        tex_clear_error(ctx);
        TT_CHECK(tex_build(f, targets[t]) == NULL);
        TT_EQ_INT(tex_errcode(ctx), TEX_EUNAVAILABLE);
        const char *msg = tex_errmsg(ctx);
        TT_CHECK(strstr(msg, "tex_build") && strstr(msg, "vadd") && strstr(msg, "driver"));
        TT_CHECK(strstr(msg, "libcuda.so.1") || strstr(msg, "cuInit") || strstr(msg, "device"));
        TT_CHECK(strstr(msg, "cuda -emit-only") != NULL);
    }
    tex_ctx_free(ctx);
}

static void test_no_driver_arrays(void)
{
    if (has_driver())
        TT_SKIP("a CUDA driver is present");
    int64_t shape[1] = {4};
    TT_CHECK(tex_array_new(1, shape, TEX_F32, gpu0) == NULL);
    TT_CHECK(tex_array_new(1, shape, TEX_F32, (DLDevice){kDLCUDAManaged, 0}) == NULL);
    DLTensor *h = tex_array_new(1, shape, TEX_F32, (DLDevice){kDLCPU, 0});
    TT_CHECK(h != NULL);
    if (!h)
        return;
    float fake[4];
    DLTensor d = *h;
    d.data = fake;
    d.device = gpu0;
    TT_EQ_INT(tex_array_copy(&d, h), TEX_EUNAVAILABLE);
    TT_EQ_INT(tex_array_copy(h, &d), TEX_EUNAVAILABLE);
    TT_EQ_INT(tex_array_copy(&d, &d), TEX_EUNAVAILABLE);
    d.device = (DLDevice){kDLCUDAManaged, 0};
    TT_EQ_INT(tex_array_copy(h, &d), TEX_EUNAVAILABLE);
    d.device = (DLDevice){kDLOpenCL, 0};
    TT_EQ_INT(tex_array_copy(h, &d), TEX_EUNAVAILABLE);
    DLTensor h2 = *h;
    h2.data = fake;
    ((float *)h->data)[2] = 3.5f;
    TT_EQ_INT(tex_array_copy(&h2, h), TEX_OK); /* host copies are unaffected */
    TT_NEAR(fake[2], 3.5, 0);
    tex_array_free(h);
    tex_array_free(NULL);
}

/* ------------------------------------------------------------ emit-only */

/* Builds f for target; checks the source, the plan, the PTX (when NVRTC is
 * present) for arch, and that the kernel cannot be called. */
static void check_emit_only(tex_ctx *ctx, tex_func *f, const char *target, const char *arch)
{
    tex_kernel *k = tex_build(f, target);
    TT_CHECK(k != NULL);
    if (!k) {
        printf("  %s: %s\n", target, tex_errmsg(ctx));
        return;
    }
    TT_CHECK(strstr(tex_kernel_source(k), "vadd_kernel0") != NULL);
    const texi_launch_plan *plan = texi_cuda_kernel_plan(k);
    TT_CHECK(plan && plan->n_kernels >= 1);
    if (plan && plan->n_kernels >= 1)
        TT_EQ_STR(plan->kernels[0].name, "vadd_kernel0");
    const char *ptx = tex_kernel_ptx(k);
    if (texi_nvrtc_available()) {
        char target_line[32];
        snprintf(target_line, sizeof target_line, ".target %s", arch);
        TT_CHECK(ptx && strstr(ptx, target_line));
        TT_CHECK(ptx && strstr(ptx, ".entry vadd_kernel0("));
    } else {
        TT_CHECK(ptx == NULL);
    }
    TT_EQ_INT(tex_kernel_call(k, 0, NULL), TEX_EUNAVAILABLE);
    TT_CHECK(strstr(tex_kernel_errmsg(k), "cannot be called") != NULL);
    tex_kernel_free(k);
}

static void test_emit_only_source_and_ptx(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_func *f = vector_add(ctx);
    check_emit_only(ctx, f, "cuda -emit-only", "sm_80");
    check_emit_only(ctx, f, "cuda -emit-only -arch=sm_80", "sm_80");
    check_emit_only(ctx, f, "cuda -arch=sm_90 -emit-only", "sm_90");
    TT_EQ_INT(tex_errcode(ctx), 0);
    tex_ctx_free(ctx);
}

static void test_ptx_accessor(void)
{
    TT_CHECK(tex_kernel_ptx(NULL) == NULL);
    TT_CHECK(texi_cuda_kernel_plan(NULL) == NULL);
    tex_ctx *ctx = tex_ctx_new();
    tex_func *f = vector_add(ctx);
    tex_kernel *k = tex_build(f, "c");
    TT_CHECK(k != NULL);
    TT_CHECK(tex_kernel_ptx(k) == NULL);
    TT_CHECK(texi_cuda_kernel_plan(k) == NULL);
    tex_kernel_free(k);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------------ NVRTC */

static void test_nvrtc_compile_and_log(void)
{
    if (!texi_nvrtc_available())
        TT_SKIP("no NVRTC: %s", texi_nvrtc_why());
    char *ptx = NULL, *log = NULL;
    const char *good = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
                       "extern \"C\" __global__ void half_one(__half *x)\n"
                       "{ x[threadIdx.x] = __float2half(1.0f); }\n";
    TT_EQ_INT(texi_nvrtc_compile(good, "sm_90", false, &ptx, &log), 0);
    TT_CHECK(ptx && strstr(ptx, ".target sm_90") && strstr(ptx, ".entry half_one("));
    free(ptx);
    free(log);
    ptx = log = NULL;
    const char *bad = "extern \"C\" __global__ void broken(float *x) { x[0] = undeclared_y; }\n";
    TT_EQ_INT(texi_nvrtc_compile(bad, "sm_80", false, &ptx, &log), TEX_ECOMPILE);
    TT_CHECK(ptx == NULL);
    TT_CHECK(log && strstr(log, "undeclared_y"));
    free(log);
    log = NULL;
    TT_EQ_INT(texi_nvrtc_compile(good, "compute80", false, &ptx, &log), TEX_EINVAL);
    TT_CHECK(ptx == NULL && log && strstr(log, "compute80"));
    free(log);
    TT_EQ_INT(texi_nvrtc_compile(bad, "sm_80", false, NULL, NULL), TEX_ECOMPILE);
    char arch[16] = "sm_999";
    texi_nvrtc_clamp_arch(arch, sizeof arch);
    TT_CHECK(strcmp(arch, "sm_999") != 0 && strncmp(arch, "sm_", 3) == 0);
    snprintf(arch, sizeof arch, "sm_90");
    texi_nvrtc_clamp_arch(arch, sizeof arch);
    TT_EQ_STR(arch, "sm_90");
}

static void free_all(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
}

/* A fake toolkit under dir: lib64/libnvrtc.so, .so.12, .so.13.1 (empty files). */
static bool fake_toolkit(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/lib64", dir);
    if (mkdir(dir, 0700) != 0 || mkdir(path, 0700) != 0)
        return false;
    const char *names[] = {"libnvrtc.so", "libnvrtc.so.12", "libnvrtc.so.13.1",
                           "libnvrtc-builtins.so"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/lib64/%s", dir, names[i]);
        FILE *fp = fopen(path, "w");
        if (!fp)
            return false;
        fclose(fp);
    }
    return true;
}

static void remove_toolkit(const char *dir)
{
    char path[512];
    const char *names[] = {"libnvrtc.so", "libnvrtc.so.12", "libnvrtc.so.13.1",
                           "libnvrtc-builtins.so"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/lib64/%s", dir, names[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/lib64", dir);
    rmdir(path);
    rmdir(dir);
}

static void test_nvrtc_candidates(void)
{
    char *c[32];
    int n = texi_nvrtc_candidates(NULL, 12, c, 32);
    TT_CHECK(n >= 3);
    if (n >= 3) {
        TT_EQ_STR(c[0], "libnvrtc.so.12"); /* the driver's major version first */
        TT_EQ_STR(c[1], "libnvrtc.so.13");
        TT_EQ_STR(c[2], "libnvrtc.so.12");
    }
    for (int i = 0; i < n; i++)
        TT_CHECK(!strstr(c[i], "stubs") && strstr(c[i], "libnvrtc.so"));
    free_all(c, n);
    n = texi_nvrtc_candidates("/usr/local/cuda", 0, c, 32);
    TT_CHECK(n >= 2 && strcmp(c[0], "libnvrtc.so.13") == 0);
    for (int i = 0; i < n; i++)
        TT_CHECK(!strstr(c[i], "/stubs/"));
    free_all(c, n);

    char home[64], stubs[96];
    snprintf(home, sizeof home, "/tmp/tex-nvrtc-%d", (int)getpid());
    snprintf(stubs, sizeof stubs, "%s-x/stubs", home);
    TT_CHECK(fake_toolkit(home));
    n = texi_nvrtc_candidates(home, 0, c, 32);
    char want[3][128];
    snprintf(want[0], sizeof want[0], "%s/lib64/libnvrtc.so.13.1", home);
    snprintf(want[1], sizeof want[1], "%s/lib64/libnvrtc.so.12", home);
    snprintf(want[2], sizeof want[2], "%s/lib64/libnvrtc.so", home);
    TT_CHECK(n >= 5);
    if (n >= 5) {
        TT_EQ_STR(c[2], want[0]); /* versioned files first, newest first */
        TT_EQ_STR(c[3], want[1]);
        TT_EQ_STR(c[4], want[2]);
    }
    for (int i = 0; i < n; i++)
        TT_CHECK(!strstr(c[i], "builtins"));
    free_all(c, n);
    n = texi_nvrtc_candidates(home, 0, c, 3); /* the cap holds */
    TT_EQ_INT(n, 3);
    free_all(c, n);
    remove_toolkit(home);

    char parent[96];
    snprintf(parent, sizeof parent, "%s-x", home);
    TT_CHECK(mkdir(parent, 0700) == 0 && fake_toolkit(stubs));
    n = texi_nvrtc_candidates(stubs, 0, c, 32); /* nothing under a stubs directory */
    for (int i = 0; i < n; i++)
        TT_CHECK(!strstr(c[i], "/stubs/"));
    free_all(c, n);
    remove_toolkit(stubs);
    rmdir(parent);
}

/* ------------------------------------------------------------ argument checks */

/* A cuda kernel made callable by hand (no driver here): the checks of
 * kernel.c run; the backend then refuses for want of a loaded module. */
static void test_cuda_argument_devices(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_func *f = vector_add(ctx);
    tex_kernel *k = tex_build(f, "cuda -emit-only");
    TT_CHECK(k != NULL);
    if (!k) {
        tex_ctx_free(ctx);
        return;
    }
    k->callable = true;
    float buf[3][8];
    DLTensor t[3];
    DLTensor *args[3] = {&t[0], &t[1], &t[2]};
    int64_t shape[1] = {8};
    for (int i = 0; i < 3; i++)
        t[i] = (DLTensor){buf[i], {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
    TT_EQ_INT(tex_kernel_call_tensors(k, 3, args), TEX_EINVAL);
    TT_CHECK(strstr(tex_kernel_errmsg(k), "not in CUDA memory") != NULL);
    for (int i = 0; i < 3; i++)
        t[i].device = (DLDevice){i == 1 ? kDLCUDAManaged : kDLCUDA, 0};
    t[2].device.device_id = 1;
    TT_EQ_INT(tex_kernel_call_tensors(k, 3, args), TEX_EINVAL);
    TT_CHECK(strstr(tex_kernel_errmsg(k), "device 0") != NULL);
    t[2].device.device_id = 0;
    TT_EQ_INT(tex_kernel_call_tensors(k, 3, args), TEX_EUNAVAILABLE);
    tex_kernel_free(k);

    k = tex_build(f, "c");
    TT_CHECK(k != NULL);
    if (k) {
        k->callable = true; /* never run: the device check comes first */
        TT_EQ_INT(tex_kernel_call_tensors(k, 3, args), TEX_EINVAL);
        TT_CHECK(strstr(tex_kernel_errmsg(k), "host memory") != NULL);
        tex_kernel_free(k);
    }
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------------ with a driver */

static void test_device_arrays(void)
{
    if (!has_driver())
        TT_SKIP("no CUDA driver: %s", texi_cuda_driver_why());
    int64_t shape[2] = {3, 5};
    DLTensor *h = tex_array_new(2, shape, TEX_F32, (DLDevice){kDLCPU, 0});
    DLTensor *d = tex_array_new(2, shape, TEX_F32, gpu0);
    DLTensor *d2 = tex_array_new(2, shape, TEX_F32, gpu0);
    DLTensor *back = tex_array_new(2, shape, TEX_F32, (DLDevice){kDLCPU, 0});
    TT_CHECK(h && d && d2 && back);
    if (h && d && d2 && back) {
        TT_EQ_INT(d->device.device_type, kDLCUDA);
        for (int i = 0; i < 15; i++)
            ((float *)h->data)[i] = (float)i * 0.5f;
        TT_EQ_INT(tex_array_copy(back, d), TEX_OK); /* zero-filled */
        TT_NEAR(((float *)back->data)[7], 0, 0);
        TT_EQ_INT(tex_array_copy(d, h), TEX_OK);
        TT_EQ_INT(tex_array_copy(d2, d), TEX_OK);
        TT_EQ_INT(tex_array_copy(back, d2), TEX_OK);
        for (int i = 0; i < 15; i++)
            TT_NEAR(((float *)back->data)[i], (float)i * 0.5f, 0);
    }
    DLTensor *empty = tex_array_new(1, (int64_t[]){0}, TEX_F64, gpu0);
    TT_CHECK(empty && empty->data);
    TT_CHECK(tex_array_new(1, (int64_t[]){4}, TEX_F32, (DLDevice){kDLCUDA, 4096}) == NULL);
    tex_array_free(empty);
    tex_array_free(h);
    tex_array_free(d);
    tex_array_free(d2);
    tex_array_free(back);
}

/* Runs vadd for n elements on the device; checks C. */
static void run_vadd(tex_kernel *k, int64_t n)
{
    int64_t shape[1] = {n};
    DLTensor *h[3], *d[3];
    for (int i = 0; i < 3; i++) {
        h[i] = tex_array_new(1, shape, TEX_F32, (DLDevice){kDLCPU, 0});
        d[i] = tex_array_new(1, shape, TEX_F32, gpu0);
    }
    for (int64_t i = 0; i < n; i++) {
        ((float *)h[0]->data)[i] = (float)i;
        ((float *)h[1]->data)[i] = 1.0f - (float)i;
    }
    TT_EQ_INT(tex_array_copy(d[0], h[0]), TEX_OK);
    TT_EQ_INT(tex_array_copy(d[1], h[1]), TEX_OK);
    int rc = tex_kernel_call_tensors(k, 3, d);
    TT_EQ_INT(rc, TEX_OK);
    if (rc != 0)
        printf("  %s\n", tex_kernel_errmsg(k));
    TT_EQ_INT(tex_array_copy(h[2], d[2]), TEX_OK);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += ((float *)h[2]->data)[i] != (float)i + 2.0f * (1.0f - (float)i);
    TT_EQ_INT(bad, 0);
    for (int i = 0; i < 3; i++) {
        tex_array_free(h[i]);
        tex_array_free(d[i]);
    }
}

static void test_device_vector_add(void)
{
    if (!has_driver() || !texi_nvrtc_available())
        TT_SKIP("no CUDA driver or NVRTC: %s%s", texi_cuda_driver_why(), texi_nvrtc_why());
    TT_EQ_INT(tex_target_available("cuda"), 1);
    tex_ctx *ctx = tex_ctx_new();
    tex_func *f = vector_add(ctx);
    tex_kernel *k = tex_build(f, "cuda");
    TT_CHECK(k != NULL);
    if (!k) {
        printf("  %s\n", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return;
    }
    TT_CHECK(tex_kernel_ptx(k) && strstr(tex_kernel_ptx(k), ".entry vadd_kernel0("));
    tex_ctx_free(ctx); /* the kernel outlives its context */
    run_vadd(k, 1000);
    run_vadd(k, 64);
    run_vadd(k, 0); /* an empty grid: nothing is launched */
    float host[4];
    DLTensor h = {host, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, (int64_t[]){4}, NULL, 0};
    DLTensor *args[3] = {&h, &h, &h};
    TT_EQ_INT(tex_kernel_call_tensors(k, 3, args), TEX_EINVAL); /* host memory refused */
    tex_kernel_free(k);
}

int main(void)
{
    TT_RUN(test_no_driver_not_available);
    TT_RUN(test_no_driver_build_fails);
    TT_RUN(test_no_driver_arrays);
    TT_RUN(test_emit_only_source_and_ptx);
    TT_RUN(test_ptx_accessor);
    TT_RUN(test_nvrtc_compile_and_log);
    TT_RUN(test_nvrtc_candidates);
    TT_RUN(test_cuda_argument_devices);
    TT_RUN(test_device_arrays);
    TT_RUN(test_device_vector_add);
    return tt_finish();
}
