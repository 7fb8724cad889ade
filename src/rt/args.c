/*
 * Argument binding: the values of one call checked against a kernel's
 * signature (signature.c) before anything runs, and the size table bound
 * from them. tex_kernel_call and the interpreter (texi_bind_args, which
 * first copies a lowered function's signature) share these checks and
 * their messages.
 *
 * Order of checks: VAR parameters first (a size: TEX_VAL_I64; any other
 * var: I64 or F64 converted to its dtype and range-checked by
 * texi_eval_scalar_arg, so a value the var cannot hold is TEX_EINVAL naming
 * the parameter); then per tensor: kind (an array), device (host memory,
 * or CUDA memory of device 0 for a backend with device_memory), dtype
 * (TEX_ETYPE; compared as tex_dtype_to_dlpack, so bool is {kDLUInt, 8, 1}),
 * ndim, strides (NULL or compact row-major), data (non-NULL unless the
 * array has no element), then every dimension: a constant must match; a
 * bare size variable is bound by the first argument naming it and every
 * later one must agree; then every size must be bound; then the derived
 * dimensions (n + 1) are evaluated (launch_plan.c's size programs) and
 * must match. Messages name the function, the argument (index and tensor),
 * the dimension, what was expected and what was passed.
 */
#include "ir/dlpack.h"
#include "rt/args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL 32 /* sizes evaluated without allocating */

/* The size table of one call (VAR params' values then size variables; sizes
 * in .i) and which entries are bound. */
typedef struct {
    texi_eval_value *v;
    bool *bound;
} size_table;

/* The memory an argument must live in: the host, or CUDA device or managed
 * memory of device 0 for a backend with device_memory. */
static int check_device(tex_kernel *k, int i, const texi_kernel_param *p, const DLTensor *d)
{
    if (!k->backend || !k->backend->device_memory) {
        if (d->device.device_type != kDLCPU)
            return texi_kernel_fail(k, TEX_EINVAL,
                                    "argument %d (tensor '%s') is not in host memory (kDLCPU)", i,
                                    p->name);
        return 0;
    }
    if (d->device.device_type != kDLCUDA && d->device.device_type != kDLCUDAManaged)
        return texi_kernel_fail(k, TEX_EINVAL,
                                "argument %d (tensor '%s') is not in CUDA memory (kDLCUDA or "
                                "kDLCUDAManaged; copy it with tex_array_copy)",
                                i, p->name);
    if (d->device.device_id != 0)
        return texi_kernel_fail(
            k, TEX_EINVAL,
            "argument %d (tensor '%s') is on CUDA device %d; cuda kernels run on "
            "device 0",
            i, p->name, d->device.device_id);
    return 0;
}

static int check_layout(tex_kernel *k, int i, const texi_kernel_param *p, const DLTensor *d)
{
    TEXI_TRY(check_device(k, i, p, d));
    DLDataType want = tex_dtype_to_dlpack(p->dtype);
    if (d->dtype.code != want.code || d->dtype.bits != want.bits || d->dtype.lanes != want.lanes)
        return texi_kernel_fail(
            k, TEX_ETYPE,
            "argument %d (tensor '%s') has DLPack dtype {code %d, bits %d, lanes %d}, "
            "expected %s",
            i, p->name, d->dtype.code, d->dtype.bits, d->dtype.lanes, tex_dtype_name(p->dtype));
    if (d->ndim != p->ndim)
        return texi_kernel_fail(k, TEX_EINVAL,
                                "argument %d (tensor '%s') has %d dimensions, expected %d", i,
                                p->name, d->ndim, p->ndim);
    if (d->ndim > 0 && !d->shape)
        return texi_kernel_fail(k, TEX_EINVAL, "argument %d (tensor '%s') has a NULL shape", i,
                                p->name);
    for (int j = 0; j < d->ndim; j++)
        if (d->shape[j] < 0)
            return texi_kernel_fail(k, TEX_EINVAL,
                                    "argument %d (tensor '%s'): dimension %d is negative (%lld)", i,
                                    p->name, j, (long long)d->shape[j]);
    int64_t stride = 1;
    for (int j = d->ndim - 1; j >= 0 && !texi_array_is_compact(d); j--) {
        if (d->shape[j] != 1 && d->strides[j] != stride)
            return texi_kernel_fail(
                k, TEX_EINVAL,
                "argument %d (tensor '%s'): stride of dimension %d is %lld, expected "
                "%lld (only compact row-major arrays are accepted)",
                i, p->name, j, (long long)d->strides[j], (long long)stride);
        stride *= d->shape[j];
    }
    if (!d->data && texi_array_numel(d->ndim, d->shape) != 0)
        return texi_kernel_fail(k, TEX_EINVAL, "argument %d (tensor '%s') has NULL data", i,
                                p->name);
    return 0;
}

/* Constant dimensions and sizes named by a dimension. */
static int bind_dims(tex_kernel *k, int i, const texi_kernel_param *p, const DLTensor *d,
                     size_table *st)
{
    for (int j = 0; j < p->ndim; j++) {
        int64_t want = p->dims[j], got = d->shape[j];
        if (want == TEXI_DIM_DERIVED)
            continue;
        if (want >= 0 && want != got)
            return texi_kernel_fail(
                k, TEX_EINVAL, "argument %d (tensor '%s'): dimension %d is %lld, expected %lld", i,
                p->name, j, (long long)got, (long long)want);
        if (want >= 0)
            continue;
        int s = (int)(-1 - want);
        if (!st->bound[s]) {
            st->v[s].i = got;
            st->bound[s] = true;
        } else if (st->v[s].i != got) {
            return texi_kernel_fail(
                k, TEX_EINVAL,
                "argument %d (tensor '%s'): dimension %d is %lld, but '%s' is %lld "
                "(from an earlier argument)",
                i, p->name, j, (long long)got, k->size_names[s], (long long)st->v[s].i);
        }
    }
    return 0;
}

/* The bound sizes as the int64_t array size programs read (no float var is
 * read by them), in small when they fit; NULL when out of memory. */
static int64_t *size_array(const tex_kernel *k, const size_table *st, int64_t small[SMALL])
{
    int64_t *sizes = k->n_sizes > SMALL ? calloc((size_t)k->n_sizes, sizeof *sizes) : small;
    for (int s = 0; sizes && s < k->n_sizes; s++)
        sizes[s] = st->v[s].i;
    return sizes;
}

/* Evaluates d over the bound size table; false when it cannot be. */
static bool eval_derived(const tex_kernel *k, const texi_derived_dim *d, const size_table *st,
                         int64_t *out)
{
    int64_t small[SMALL];
    int64_t *sizes = size_array(k, st, small);
    if (!sizes)
        return false;
    bool ok = d->ok && texi_launch_prog_eval(&d->prog, sizes, out) == 0;
    if (sizes != small)
        free(sizes);
    return ok;
}

static int check_derived(tex_kernel *k, const tex_value args[], const size_table *st)
{
    for (int i = 0; i < k->n_derived; i++) {
        const texi_derived_dim *d = &k->derived[i];
        const texi_kernel_param *p = &k->params[d->param];
        int64_t want, got = args[d->param].t->shape[d->dim];
        if (!eval_derived(k, d, st, &want))
            return texi_kernel_fail(
                k, TEX_EINVAL,
                "argument %d (tensor '%s'): dimension %d cannot be evaluated from "
                "the other arguments",
                d->param, p->name, d->dim);
        if (want != got)
            return texi_kernel_fail(
                k, TEX_EINVAL, "argument %d (tensor '%s'): dimension %d is %lld, expected %lld",
                d->param, p->name, d->dim, (long long)got, (long long)want);
    }
    return 0;
}

int texi_kernel_check_args(tex_kernel *k, const tex_value args[], texi_eval_value *sizes,
                           bool *bound)
{
    size_table table = {sizes, bound}, *st = &table;
    for (int i = 0, v = 0; i < k->n_params; i++) {
        const texi_kernel_param *p = &k->params[i];
        char why[160];
        if (p->kind != TEX_ARG_VAR)
            continue;
        if (p->size && args[i].kind != TEX_VAL_I64)
            return texi_kernel_fail(k, TEX_EINVAL,
                                    "argument %d ('%s') must be an integer scalar (TEX_VAL_I64)", i,
                                    p->name);
        if (p->size)
            st->v[v].i = args[i].i;
        else if (texi_eval_scalar_arg(p->dtype, &args[i], &st->v[v], why, sizeof why) != 0)
            return texi_kernel_fail(k, TEX_EINVAL, "argument %d ('%s'): %s", i, p->name, why);
        st->bound[v++] = true;
    }
    for (int i = 0; i < k->n_params; i++) {
        const texi_kernel_param *p = &k->params[i];
        if (p->kind == TEX_ARG_VAR)
            continue;
        if (args[i].kind != TEX_VAL_TENSOR || !args[i].t)
            return texi_kernel_fail(k, TEX_EINVAL,
                                    "argument %d (tensor '%s') must be an array (TEX_VAL_TENSOR)",
                                    i, p->name);
        int rc = check_layout(k, i, p, args[i].t);
        if (rc == 0)
            rc = bind_dims(k, i, p, args[i].t, st);
        if (rc != 0)
            return rc;
    }
    for (int s = 0; s < k->n_sizes; s++)
        if (!st->bound[s])
            return texi_kernel_fail(
                k, TEX_EINVAL, "symbolic size '%s' is not given by any argument", k->size_names[s]);
    TEXI_TRY(check_derived(k, args, st));
    int64_t small[SMALL];
    int64_t *values = size_array(k, st, small);
    if (!values)
        return texi_kernel_fail(k, TEX_ENOMEM, "out of memory");
    int rc = texi_kernel_check_index_args(k, args, values);
    if (values != small)
        free(values);
    return rc;
}

/* Copies the kernel's message to err (when given) and returns code. */
static int report(const tex_kernel *k, int code, char *err, size_t err_size)
{
    if (err && err_size)
        snprintf(err, err_size, "%s", k->errmsg);
    return code;
}

int texi_bind_args(const tex_func *f, int n, const tex_value args[], texi_binding *env, int env_cap,
                   int *n_env, char *err, size_t err_size)
{
    if (!f || (n > 0 && !args) || (!env && env_cap > 0) || !n_env)
        return TEX_EMISUSE;
    tex_kernel k = {.name = strdup(f->name)};
    int rc = 0;
    if (!k.name) {
        if (err && err_size)
            snprintf(err, err_size, "%s: out of memory", f->name);
        return TEX_ENOMEM;
    }
    if (!texi_kernel_signature(&k, f))
        rc = texi_kernel_fail(&k, TEX_ENOMEM, "out of memory");
    else if (k.n_sizes > env_cap)
        rc = texi_kernel_fail(&k, TEX_EINVAL, "%d variables to bind but room for %d", k.n_sizes,
                              env_cap);
    else if (n != k.n_params)
        rc = texi_kernel_fail(&k, TEX_EINVAL, "expected %d arguments, got %d", k.n_params, n);
    texi_eval_value *v = rc ? NULL : calloc((size_t)k.n_sizes + 1, sizeof *v);
    bool *bound = rc ? NULL : calloc((size_t)k.n_sizes + 1, sizeof *bound);
    if (!rc && (!v || !bound))
        rc = texi_kernel_fail(&k, TEX_ENOMEM, "out of memory");
    if (!rc)
        rc = texi_kernel_check_args(&k, args, v, bound);
    for (int s = 0, i = 0; !rc && i < f->n_params; i++)
        if (f->params[i].kind == TEX_ARG_VAR) {
            env[s] = (texi_binding){f->params[i].var, v[s]};
            s++;
        }
    for (int j = 0; !rc && j < f->n_size_vars; j++) {
        int s = k.extra_size_index[j];
        env[s] = (texi_binding){f->size_vars[j], v[s]};
    }
    if (!rc)
        *n_env = k.n_sizes;
    free(v);
    free(bound);
    texi_kernel_fini(&k);
    return rc ? report(&k, rc, err, err_size) : 0;
}
