/*
 * The "cuda" backend's vtable: build, call and free for the targets "cuda",
 * "cuda -arch=sm_NN" and "cuda -emit-only" (kernel.c checks the options).
 *
 * Build: the lowered function goes through the pipeline's GPU tail
 * (texi_lower_tail: kernels, launch extents, workspace, asserts), codegen_cuda.c prints the CUDA C,
 * and texi_launch_plan_build turns the module's host side into a plan the kernel owns
 * (texi_cuda_kernel in k->impl; nothing points into the arena).
 *   - "cuda -emit-only" never touches a device: it keeps the source and,
 *     when NVRTC is present, the PTX for -arch (default sm_80); NVRTC's
 *     rejection is TEX_ECOMPILE with its log. The kernel is not callable.
 *   - "cuda" needs the driver and NVRTC (else TEX_EUNAVAILABLE saying which
 *     is missing and why); it compiles for -arch, or for device 0's compute
 *     capability lowered to the newest architecture NVRTC knows, and loads
 *     the PTX with cuModuleLoadDataEx (the JIT's log joins a failure).
 * Call (device 0, its primary context; rt/args.c has checked every argument
 * is CUDA memory): the plan's asserts and every kernel's grid and block
 * against CUDA's limits, all before anything is allocated or launched (a
 * refused call writes nothing), then per call a zero-filled workspace
 * allocation per buffer, then every kernel in order on the legacy default
 * stream with the parameters of backend.h's ABI (tensor pointers and
 * scalars interleaved in parameter order: int64 sizes, other vars in their
 * own type; the extra sizes, the workspace pointers), skipping kernels whose grid or block is
 * empty, then cuCtxSynchronize and the workspace is freed. A driver failure is TEX_EDEVICE with
 * cuGetErrorString's text in k->errmsg. Calls share no mutable state, so a kernel may be called
 * from several threads.
 *
 * Not here: loading the driver / NVRTC (cuda_driver.c), device arrays
 * (runtime/array.c), argument checks (rt/args.c), streams.
 */
#include "backend_cuda/cuda.h"
#include "backend_cuda/cuda_driver.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ARCH "sm_80"
#define DEVICE 0 /* kernels are built for and launched on device 0 */

/* CUjit_option values and the results that mean "this PTX cannot load here". */
enum { JIT_ERROR_LOG_BUFFER = 5, JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 };
enum { CU_NO_BINARY_FOR_GPU = 209, CU_INVALID_PTX = 218, CU_UNSUPPORTED_PTX_VERSION = 222 };

static bool emit_only(const char *target)
{
    return strstr(target, " -emit-only") != NULL;
}

/* The "sm_NN" of a "-arch=sm_NN" option into arch; false when there is none. */
static bool target_arch(const char *target, char *arch, size_t cap)
{
    const char *a = strstr(target, " -arch=");
    if (!a)
        return false;
    a += strlen(" -arch=");
    snprintf(arch, cap, "%.*s", (int)strcspn(a, " "), a);
    return true;
}

static int cuda_available(const char *target)
{
    if (emit_only(target))
        return 1;
    return texi_cuda_driver() && texi_nvrtc_available();
}

static int build_fail(tex_kernel *k, const tex_func *f, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records "tex_build: function 'F' (target T): ..." in f's context. */
static int build_fail(tex_kernel *k, const tex_func *f, int code, const char *fmt, ...)
{
    char msg[TEXI_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return texi_error(f->ctx, code, "tex_build: function '%s' (target %s): %s", f->name, k->target,
                      msg);
}

/* An earlier step's error code (recorded in f's context), never 0. */
static int recorded(const tex_func *f)
{
    int code = tex_errcode(f->ctx);
    return code ? code : texi_error(f->ctx, TEX_EINTERNAL, "tex_build: CUDA build failed");
}

/* NVRTC: k's source to PTX for im->arch, kept in im->ptx. */
static int compile_ptx(tex_kernel *k, const tex_func *f, texi_cuda_kernel *im)
{
    char *log = NULL;
    int rc = texi_nvrtc_compile(k->source, im->arch, k->strict_float, &im->ptx, &log);
    if (rc == TEX_ECOMPILE)
        rc = build_fail(k, f, rc, "NVRTC rejected the generated CUDA C for %s:\n%s", im->arch,
                        log ? log : "");
    else if (rc != 0)
        rc = build_fail(k, f, rc, "NVRTC failed for %s: %s", im->arch, log ? log : "out of memory");
    free(log);
    return rc;
}

/* Loads im->ptx into device 0's primary context and finds every kernel. */
static int load_module(tex_kernel *k, const tex_func *f, texi_cuda_kernel *im)
{
    const texi_cuda_api *cu = texi_cuda_driver();
    char jit_log[4096] = "", msg[512];
    int options[2] = {JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[2] = {jit_log, (void *)(uintptr_t)sizeof jit_log};
    int rc = cu->cuModuleLoadDataEx(&im->module, im->ptx, 2, options, values);
    if (rc != 0) {
        im->module = NULL;
        texi_cuda_result_text(rc, "cuModuleLoadDataEx", msg, sizeof msg);
        bool rejected =
            rc == CU_NO_BINARY_FOR_GPU || rc == CU_INVALID_PTX || rc == CU_UNSUPPORTED_PTX_VERSION;
        return build_fail(k, f, rejected ? TEX_ECOMPILE : TEX_EDEVICE,
                          "loading the PTX for %s: %s%s%s", im->arch, msg, jit_log[0] ? "\n" : "",
                          jit_log);
    }
    int n = im->plan.n_kernels;
    im->functions = calloc(n > 0 ? (size_t)n : 1, sizeof *im->functions);
    if (!im->functions)
        return build_fail(k, f, TEX_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        rc = cu->cuModuleGetFunction(&im->functions[i], im->module, im->plan.kernels[i].name);
        if (rc != 0) {
            texi_cuda_result_text(rc, "cuModuleGetFunction", msg, sizeof msg);
            return build_fail(k, f, TEX_EDEVICE, "kernel '%s': %s", im->plan.kernels[i].name, msg);
        }
    }
    return 0;
}

/* "cuda" and "cuda -arch=..": compile for the device (or -arch) and load. */
static int build_for_device(tex_kernel *k, const tex_func *f, texi_cuda_kernel *im)
{
    char msg[512];
    int rc = texi_cuda_enter(DEVICE, msg, sizeof msg);
    if (rc == 0 && !target_arch(k->target, im->arch, sizeof im->arch)) {
        rc = texi_cuda_device_arch(DEVICE, im->arch, sizeof im->arch, msg, sizeof msg);
        texi_nvrtc_clamp_arch(im->arch, sizeof im->arch);
    }
    if (rc != 0)
        return build_fail(k, f, rc, "CUDA device %d: %s", DEVICE, msg);
    TEXI_TRY(compile_ptx(k, f, im));
    TEXI_TRY(load_module(k, f, im));
    k->callable = true;
    return 0;
}

/* Why "cuda" cannot be built here, as an error; 0 when it can. */
static int check_runtime(tex_kernel *k, const tex_func *f)
{
    if (!texi_cuda_driver())
        return texi_error(f->ctx, TEX_EUNAVAILABLE,
                          "tex_build: target '%s' is not available (function '%s'): no usable "
                          "CUDA driver: %s; use \"cuda -emit-only\" for the CUDA source",
                          k->target, f->name, texi_cuda_driver_why());
    if (!texi_nvrtc_available())
        return texi_error(f->ctx, TEX_EUNAVAILABLE,
                          "tex_build: target '%s' is not available (function '%s'): the CUDA "
                          "driver is present but %s",
                          k->target, f->name, texi_nvrtc_why());
    return 0;
}

static int cuda_build(tex_kernel *k, const tex_func *f)
{
    bool only = emit_only(k->target);
    if (!only)
        TEXI_TRY(check_runtime(k, f));
    texi_cuda_kernel *im = calloc(1, sizeof *im);
    if (!im)
        return build_fail(k, f, TEX_ENOMEM, "out of memory");
    k->impl = im;
    texi_device_module m;
    tex_func copy;
    if (texi_lower_tail(f, TEXI_TAIL_GPU, k->strict_float, &copy, &m) != 0)
        return recorded(f);
    k->source = texi_cuda_emit(f, &m);
    if (!k->source)
        return recorded(f);
    if (texi_launch_plan_build(f, &m, &im->plan) != 0)
        return recorded(f);
    if (!only)
        return build_for_device(k, f, im);
    k->callable = false;
    if (!target_arch(k->target, im->arch, sizeof im->arch))
        snprintf(im->arch, sizeof im->arch, "%s", DEFAULT_ARCH);
    return texi_nvrtc_available() ? compile_ptx(k, f, im) : 0;
}

/* ------------------------------------------------------------------ calls */

static int driver_fail(tex_kernel *k, int rc, const char *call)
{
    char msg[512];
    texi_cuda_result_text(rc, call, msg, sizeof msg);
    return texi_kernel_fail(k, TEX_EDEVICE, "%s", msg);
}

static int check_asserts(tex_kernel *k, const texi_launch_plan *p, const int64_t *sizes)
{
    for (int i = 0; i < p->n_asserts; i++) {
        int64_t v = 0;
        if (texi_launch_prog_eval(&p->asserts[i], sizes, &v) != 0 || v == 0)
            return texi_kernel_fail(k, TEX_EINVAL, "the arguments break the condition %s",
                                    p->assert_text && p->assert_text[i] ? p->assert_text[i] : "?");
    }
    return 0;
}

typedef unsigned launch_dim[TEXI_N_LAUNCH_TAGS]; /* grid.x/y/z, block.x/y/z */

/* The grid and block of kernel i; *empty when one of them is 0. */
static int launch_dims(tex_kernel *k, const texi_launch_kernel *lk, const int64_t *sizes,
                       unsigned dims[TEXI_N_LAUNCH_TAGS], bool *empty)
{
    static const char *const tag[TEXI_N_LAUNCH_TAGS] = {"grid.x",  "grid.y",  "grid.z",
                                                        "block.x", "block.y", "block.z"};
    *empty = false;
    for (int t = 0; t < TEXI_N_LAUNCH_TAGS; t++) {
        int64_t v = 1;
        if (texi_launch_prog_eval(&lk->extent[t], sizes, &v) != 0)
            return texi_kernel_fail(k, TEX_EINVAL, "kernel '%s': %s cannot be evaluated", lk->name,
                                    tag[t]);
        if (v < 0 || v > (int64_t)UINT_MAX)
            return texi_kernel_fail(k, TEX_EINVAL, "kernel '%s': %s is %lld, out of range",
                                    lk->name, tag[t], (long long)v);
        dims[t] = (unsigned)v;
        *empty = *empty || v == 0;
    }
    static const unsigned limit[TEXI_N_LAUNCH_TAGS] = {INT32_MAX, 65535, 65535, 1024, 1024, 64};
    for (int t = 0; t < TEXI_N_LAUNCH_TAGS; t++)
        if (dims[t] > limit[t])
            return texi_kernel_fail(k, TEX_EINVAL, "kernel '%s': %s is %u, CUDA allows %u",
                                    lk->name, tag[t], dims[t], limit[t]);
    if ((uint64_t)dims[3] * dims[4] * dims[5] > 1024)
        return texi_kernel_fail(k, TEX_EINVAL,
                                "kernel '%s': a block of %u x %u x %u threads, CUDA allows 1024",
                                lk->name, dims[3], dims[4], dims[5]);
    return 0;
}

/* Allocates and zero-fills the plan's workspace buffers (0 for an empty one). */
static int alloc_workspace(tex_kernel *k, const texi_launch_plan *p, const int64_t *sizes,
                           texi_cu_ptr *ws)
{
    const texi_cuda_api *cu = texi_cuda_driver();
    for (int i = 0; i < p->n_workspace; i++) {
        const texi_launch_workspace *w = &p->workspace[i];
        int64_t elems = 0, elem = (int64_t)tex_dtype_bytes(w->dtype);
        if (texi_launch_prog_eval(&w->elems, sizes, &elems) != 0 || elems < 0 ||
            (elem > 0 && elems > INT64_MAX / elem))
            return texi_kernel_fail(k, TEX_EINVAL, "workspace '%s': bad size", w->name);
        size_t bytes = (size_t)(elems * elem);
        if (bytes == 0)
            continue;
        int rc = cu->cuMemAlloc(&ws[i], bytes);
        if (rc != 0)
            ws[i] = 0;
        else
            rc = cu->cuMemsetD8(ws[i], 0, bytes);
        if (rc != 0)
            return driver_fail(k, rc, "cuMemAlloc (workspace)");
    }
    return 0;
}

/* One kernel parameter: a device pointer, an int64 size or a scalar. */
typedef union {
    texi_cu_ptr p;
    int64_t i;
    double f; /* room and alignment for every scalar type */
} param_slot;

/* backend.h's argument order: params (tensor pointers, scalars), the extra
 * sizes, then the workspace pointers. */
static void fill_params(const tex_kernel *k, const texi_launch_plan *p, void *const *tensor_ptrs,
                        const texi_eval_value *scalars, const texi_cu_ptr *ws, param_slot *slots,
                        void **values)
{
    int t = 0, s = 0, n = 0;
    for (int i = 0; i < k->n_params + k->n_extra; i++, n++) {
        const texi_kernel_param *kp = i < k->n_params ? &k->params[i] : NULL;
        if (kp && kp->kind == TEX_ARG_TENSOR)
            slots[n].p = (texi_cu_ptr)(uintptr_t)tensor_ptrs[t++];
        else
            texi_kernel_scalar_store(kp, scalars[s++], &slots[n]);
        values[n] = &slots[n];
    }
    for (int i = 0; i < p->n_workspace; i++, n++) {
        slots[n].p = ws[i];
        values[n] = &slots[n];
    }
}

/* The grid and block of every kernel (dims[i]; empty[i]: nothing to launch),
 * all checked before the first launch, so a refused call launches nothing. */
static int all_launch_dims(tex_kernel *k, const texi_launch_plan *p, const int64_t *sizes,
                           launch_dim *dims, bool *empty)
{
    for (int i = 0; i < p->n_kernels; i++)
        TEXI_TRY(launch_dims(k, &p->kernels[i], sizes, dims[i], &empty[i]));
    return 0;
}

static int launch_all(tex_kernel *k, const texi_cuda_kernel *im, launch_dim *dims,
                      const bool *empty, void **values)
{
    const texi_cuda_api *cu = texi_cuda_driver();
    for (int i = 0; i < im->plan.n_kernels; i++) {
        const unsigned *d = dims[i];
        if (empty[i])
            continue;
        int rc = cu->cuLaunchKernel(im->functions[i], d[0], d[1], d[2], d[3], d[4], d[5], 0, NULL,
                                    values, NULL);
        if (rc != 0) {
            char msg[512];
            texi_cuda_result_text(rc, "cuLaunchKernel", msg, sizeof msg);
            return texi_kernel_fail(k, TEX_EDEVICE, "kernel '%s' <<<(%u,%u,%u), (%u,%u,%u)>>>: %s",
                                    im->plan.kernels[i].name, d[0], d[1], d[2], d[3], d[4], d[5],
                                    msg);
        }
    }
    int rc = cu->cuCtxSynchronize();
    return rc != 0 ? driver_fail(k, rc, "cuCtxSynchronize") : 0;
}

static void free_workspace(const texi_launch_plan *p, texi_cu_ptr *ws)
{
    const texi_cuda_api *cu = texi_cuda_driver();
    for (int i = 0; i < p->n_workspace; i++)
        if (ws[i])
            cu->cuMemFree(ws[i]);
}

/* The launch plan's size table: the integer values of the scalars (its
 * programs never read a float one: launch_plan.c refuses float expressions). */
static int64_t *size_table(const tex_kernel *k, const texi_eval_value *scalars)
{
    int n = k->n_sizes;
    int64_t *sizes = calloc((size_t)n + 1, sizeof *sizes);
    for (int i = 0; sizes && i < n; i++)
        sizes[i] = scalars[i].i;
    return sizes;
}

/* Launches every kernel of the plan with the arguments laid out as
 * fill_params says. */
static int launch(tex_kernel *k, texi_cuda_kernel *im, void *const *tensor_ptrs,
                  const texi_eval_value *scalars, const int64_t *sizes)
{
    TEXI_TRY(check_asserts(k, &im->plan, sizes));
    size_t n_kernels = (size_t)im->plan.n_kernels + 1;
    launch_dim *dims = calloc(n_kernels, sizeof *dims);
    bool *empty = calloc(n_kernels, sizeof *empty);
    int rc = dims && empty ? all_launch_dims(k, &im->plan, sizes, dims, empty)
                           : texi_kernel_fail(k, TEX_ENOMEM, "out of memory");
    char msg[512];
    if (rc == 0 && (rc = texi_cuda_enter(DEVICE, msg, sizeof msg)) != 0)
        rc = texi_kernel_fail(k, rc, "CUDA device %d: %s", DEVICE, msg);
    int n_ws = im->plan.n_workspace, n_args = k->n_params + k->n_extra + n_ws;
    texi_cu_ptr *ws = rc == 0 ? calloc((size_t)n_ws + 1, sizeof *ws) : NULL;
    param_slot *slots = rc == 0 ? calloc((size_t)n_args + 1, sizeof *slots) : NULL;
    void **values = rc == 0 ? calloc((size_t)n_args + 1, sizeof *values) : NULL;
    if (rc == 0)
        rc = ws && slots && values ? alloc_workspace(k, &im->plan, sizes, ws)
                                   : texi_kernel_fail(k, TEX_ENOMEM, "out of memory");
    if (rc == 0) {
        fill_params(k, &im->plan, tensor_ptrs, scalars, ws, slots, values);
        rc = launch_all(k, im, dims, empty, values);
    }
    if (ws)
        free_workspace(&im->plan, ws);
    free(ws);
    free(slots);
    free(values);
    free(dims);
    free(empty);
    return rc;
}

static int cuda_call(tex_kernel *k, void *const *tensor_ptrs, const texi_eval_value *scalars)
{
    texi_cuda_kernel *im = k->impl;
    if (!im || !im->module)
        return texi_kernel_fail(k, TEX_EUNAVAILABLE,
                                "built for target '%s', which cannot be called", k->target);
    int64_t *sizes = size_table(k, scalars);
    int rc = sizes ? launch(k, im, tensor_ptrs, scalars, sizes)
                   : texi_kernel_fail(k, TEX_ENOMEM, "out of memory");
    free(sizes);
    return rc;
}

/* ------------------------------------------------------------------ free */

static void cuda_free(tex_kernel *k)
{
    texi_cuda_kernel *im = k->impl;
    if (!im)
        return;
    char msg[512];
    if (im->module && texi_cuda_enter(DEVICE, msg, sizeof msg) == 0)
        texi_cuda_driver()->cuModuleUnload(im->module);
    texi_launch_plan_free(&im->plan);
    free(im->functions);
    free(im->ptx);
    free(im);
    k->impl = NULL;
}

const texi_launch_plan *texi_cuda_kernel_plan(const tex_kernel *k)
{
    if (!k || k->backend != &texi_backend_cuda || !k->impl)
        return NULL;
    return &((const texi_cuda_kernel *)k->impl)->plan;
}

const texi_backend texi_backend_cuda = {"cuda",    cuda_available, cuda_build,
                                        cuda_call, cuda_free,      true};
