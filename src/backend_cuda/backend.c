/*
 * The "cuda" backend's vtable. "cuda -emit-only" (with an optional
 * "-arch=sm_NN", checked by kernel.c's target parsing) produces the CUDA C
 * source of codegen_cuda.c and a kernel that cannot be called; it needs
 * neither a driver nor NVRTC. Plain "cuda" needs a driver and the launch
 * path, which are not built yet: it is never available and its builds fail
 * with TEX_EUNAVAILABLE. It does not load libcuda or libnvrtc.
 */
#include "backend_cuda/cuda.h"

#include <string.h>

static bool emit_only(const char *target)
{
    return strstr(target, " -emit-only") != NULL;
}

static int cuda_available(const char *target)
{
    return emit_only(target);
}

static int cuda_build(tex_kernel *k, const tex_func *f)
{
    if (!emit_only(k->target))
        return texi_error(f->ctx, TEX_EUNAVAILABLE,
                          "tex_build: target '%s' is not available: no CUDA driver is loaded "
                          "(launching CUDA kernels is not supported yet); use \"cuda "
                          "-emit-only\" to get the CUDA source",
                          k->target);
    k->source = texi_cuda_emit(f, NULL);
    k->callable = false;
    return k->source ? 0 : -1;
}

static int cuda_call(tex_kernel *k, void *const *tensor_ptrs, const int64_t *sizes)
{
    (void)tensor_ptrs;
    (void)sizes;
    return k ? TEX_EUNAVAILABLE : TEX_EMISUSE;
}

static void cuda_free(tex_kernel *k)
{
    (void)k;
}

const texi_backend texi_backend_cuda = {"cuda", cuda_available, cuda_build, cuda_call, cuda_free};
