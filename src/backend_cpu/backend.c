/*
 * texi_backend_cpu: the vtable behind the targets "cpu" and "c".
 *
 * build: the pipeline's CPU tail (texi_lower_tail: barriers for GPU-style
 * code removed again by barrier fission, loads in select arms made
 * unconditional, since the system compiler's vectorizer may miscompile
 * conditional loads), then the C
 * source and the export header (codegen_c.c); for "c"
 * that is all (the kernel is not callable). For "cpu" the source goes
 * through the JIT cache (jit.c), the entry point is looked up by the
 * function's name (a C identifier, checked by tex_lower) and the libffi
 * call interface is prepared from the kernel's signature (call.c).
 * call: one ffi_call; the entry point returns 0, -1 when a runtime check
 * failed (e.g. a shift-inwards split over a symbolic extent smaller than the
 * factor) or -2 when it ran out of memory.
 * The state kept in k->impl is read-only after build, so calls may run
 * from several threads at once.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu/cpu.h"
#include "backend_cpu/jit.h"
#include "lower/device.h"

#define SMALL_ARGS 32 /* arguments passed without allocating */

typedef struct {
    void *handle;        /* dlopen handle */
    void (*entry)(void); /* the kernel's entry point */
    texi_cpu_call call;
} cpu_impl;

/* "c" or "c -OPTIONS" (the target text is normalised: single spaces). */
static bool is_c_target(const char *target)
{
    return target[0] == 'c' && (target[1] == 0 || target[1] == ' ');
}

static int cpu_available(const char *target)
{
    return is_c_target(target) ? 1 : texi_cpu_jit_available();
}

static void cpu_free(tex_kernel *k)
{
    cpu_impl *im = k->impl;
    if (!im)
        return;
    if (im->handle)
        dlclose(im->handle);
    texi_cpu_call_fini(&im->call);
    free(im);
    k->impl = NULL;
}

/* The libffi interface of k's entry point: params in order (a scalar that
 * is not a size in its own type), then extra sizes. */
static int prepare_call(tex_kernel *k, cpu_impl *im)
{
    int nargs = k->n_params + k->n_extra;
    int *kinds = malloc((size_t)(nargs > 0 ? nargs : 1) * sizeof *kinds);
    if (!kinds)
        return TEX_ENOMEM;
    for (int i = 0; i < nargs; i++) {
        const texi_kernel_param *p = i < k->n_params ? &k->params[i] : NULL;
        kinds[i] = p && p->kind == TEX_ARG_TENSOR ? TEXI_CALL_PTR
                   : !p || p->size                ? TEXI_CALL_I64
                                                  : (int)p->dtype;
    }
    int rc = texi_cpu_call_prepare(&im->call, nargs, kinds);
    free(kinds);
    return rc;
}

/* Compiles k->source, loads it and finds the entry point. */
static int load(tex_kernel *k, const tex_func *f)
{
    cpu_impl *im = calloc(1, sizeof *im);
    if (!im)
        return texi_error(f->ctx, TEX_ENOMEM, "tex_build: out of memory");
    k->impl = im;
    char err[TEXI_KERNEL_ERRMSG_MAX];
    int rc = texi_cpu_jit_load(k->source, k->strict_float, &im->handle, err, sizeof err);
    if (rc != 0)
        return texi_error(f->ctx, rc, "%s", err);
    void *sym = dlsym(im->handle, k->name);
    if (!sym)
        return texi_error(f->ctx, TEX_EINTERNAL,
                          "tex_build: the compiled object of '%s' has no entry point '%s'", k->name,
                          k->name);
    memcpy(&im->entry, &sym, sizeof sym); /* POSIX: object and function pointers convert */
    rc = prepare_call(k, im);
    if (rc != 0)
        return texi_error(f->ctx, rc, "tex_build: cannot prepare the call interface of '%s'",
                          k->name);
    k->callable = true;
    return 0;
}

/* f itself, or the copy the C emitter needs: f after the pipeline's CPU
 * tail (GPU-style barriers removed by barrier fission so thread loops run
 * one thread after another, no load evaluated conditionally, vectorized
 * loops as vector statements; strict_float keeps float reductions in
 * order). Code without thread loops, selects over loads and vectorized
 * loops comes back unchanged. */
static int cpu_form(const tex_func *f, bool strict_float, tex_func *copy, const tex_func **out)
{
    TEXI_TRY(texi_lower_tail(f, TEXI_TAIL_CPU, strict_float, copy, NULL));
    *out = copy->body == f->body ? f : copy;
    return 0;
}

static int cpu_build(tex_kernel *k, const tex_func *fn)
{
    tex_func copy;
    const tex_func *f = NULL;
    TEXI_TRY(cpu_form(fn, k->strict_float, &copy, &f));
    k->source = texi_cpu_emit(f, k->threads, k->strict_float);
    if (!k->source)
        return tex_errcode(f->ctx) ? tex_errcode(f->ctx)
                                   : texi_error(f->ctx, TEX_ENOMEM, "tex_build: out of memory");
    k->header = texi_cpu_emit_header(f);
    if (!k->header)
        return texi_error(f->ctx, TEX_ENOMEM, "tex_build: out of memory");
    if (is_c_target(k->target))
        return 0;
    return load(k, f);
}

/* One argument's storage: ffi_call reads each value through a pointer. */
typedef union {
    void *p;
    int64_t i;
    double f; /* room and alignment for every scalar type */
} arg_slot;

static int cpu_call(tex_kernel *k, void *const *tensor_ptrs, const texi_eval_value *scalars)
{
    cpu_impl *im = k->impl;
    int nargs = k->n_params + k->n_extra;
    arg_slot small_slots[SMALL_ARGS];
    void *small[SMALL_ARGS];
    bool heap = nargs > SMALL_ARGS;
    arg_slot *slots = heap ? malloc((size_t)nargs * sizeof *slots) : small_slots;
    void **values = heap ? malloc((size_t)nargs * sizeof *values) : small;
    if (!slots || !values) {
        if (heap) {
            free(slots);
            free(values);
        }
        return texi_kernel_fail(k, TEX_ENOMEM, "out of memory");
    }
    int t = 0, s = 0;
    for (int i = 0; i < nargs; i++) {
        const texi_kernel_param *p = i < k->n_params ? &k->params[i] : NULL;
        if (p && p->kind == TEX_ARG_TENSOR)
            slots[i].p = tensor_ptrs[t++];
        else
            texi_kernel_scalar_store(p, scalars[s++], &slots[i]);
        values[i] = &slots[i];
    }
    int ret = texi_cpu_call_invoke(&im->call, im->entry, values);
    if (heap) {
        free(slots);
        free(values);
    }
    switch (ret) {
    case 0:
        return 0;
    case -1:
        return texi_kernel_fail(k, TEX_EINVAL,
                                "a runtime check failed (e.g. a split with shift-inwards tail "
                                "needs extent >= factor)");
    case -2:
        return texi_kernel_fail(k, TEX_ENOMEM, "out of memory in the kernel");
    default:
        return texi_kernel_fail(k, TEX_EINTERNAL, "the kernel returned %d", ret);
    }
}

const texi_backend texi_backend_cpu = {"cpu", cpu_available, cpu_build, cpu_call, cpu_free, false};
