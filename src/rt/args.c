/*
 * Argument binding: the values of one call checked against a lowered
 * function's parameters before anything runs (API.md rules 7 and 9), and the
 * symbolic sizes bound from them.
 *
 * Order of checks, per argument: kind (an array for a tensor parameter, an
 * i64 scalar for a size VAR parameter, an i64 or f64 scalar converted to
 * the var's dtype for any other VAR parameter: texi_eval_scalar_arg), device
 * (host only for now; the CUDA backend widens this), dtype (TEX_ETYPE),
 * ndim, strides (NULL or compact row-major), data (non-NULL unless the array
 * has no element), then every
 * dimension: a constant must match; a bare variable is bound by the first
 * argument naming it (VAR parameters are bound before any array) and every
 * later one must agree. Dimensions given by other expressions (n + 1) are
 * evaluated once every variable is bound and must match too.
 *
 * The environment handed back holds every VAR parameter (in params order)
 * then every size variable (in f->size_vars order). Messages name the
 * function, the argument (index and tensor), the dimension, what was
 * expected and what was passed. Nothing here touches a context (kernels may call it after
 * theirs is gone); it allocates only for more than SMALL_ENV variables.
 */
#include "lower/lower.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_ENV 64 /* variables tracked without allocating */

typedef struct {
    const tex_func *f;
    texi_binding *env;
    bool *bound; /* parallel to env */
    int n_env;
    char *err;
    size_t err_size;
} binder;

static int fail(binder *b, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(binder *b, int code, const char *fmt, ...)
{
    if (b->err && b->err_size) {
        int n = snprintf(b->err, b->err_size, "%s: ", b->f->name);
        va_list ap;
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < b->err_size)
            vsnprintf(b->err + n, b->err_size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int env_index(const binder *b, const tex_expr *v)
{
    for (int i = 0; i < b->n_env; i++)
        if (b->env[i].var == v)
            return i;
    return -1;
}

/* ------------------------------------------------- integer evaluation */

static int64_t floordiv64(int64_t a, int64_t c)
{
    int64_t q = a / c;
    return (a % c != 0 && ((a < 0) != (c < 0))) ? q - 1 : q;
}

/* e evaluated over the bound variables; false when it uses something else. */
static bool eval_int(const binder *b, const tex_expr *e, int64_t *out)
{
    int64_t x, y;
    switch (e->kind) {
    case TEXI_EXPR_INT:
        *out = e->u.i;
        return true;
    case TEXI_EXPR_VAR: {
        int i = env_index(b, e);
        if (i < 0 || !b->bound[i])
            return false;
        *out = b->env[i].value.i;
        return true;
    }
    case TEXI_EXPR_CAST:
        return texi_dtype_is_int(e->dtype) && eval_int(b, e->u.un.a, out);
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
    case TEXI_EXPR_MUL:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        if (!eval_int(b, e->u.bin.a, &x) || !eval_int(b, e->u.bin.b, &y))
            return false;
        break;
    default:
        return false;
    }
    switch (e->kind) {
    case TEXI_EXPR_ADD:
        *out = x + y;
        return true;
    case TEXI_EXPR_SUB:
        *out = x - y;
        return true;
    case TEXI_EXPR_MUL:
        *out = x * y;
        return true;
    case TEXI_EXPR_FLOORDIV:
        *out = y ? floordiv64(x, y) : 0;
        return y != 0;
    case TEXI_EXPR_FLOORMOD:
        *out = y ? x - y * floordiv64(x, y) : 0;
        return y != 0;
    case TEXI_EXPR_MIN:
        *out = x < y ? x : y;
        return true;
    case TEXI_EXPR_MAX:
        *out = x > y ? x : y;
        return true;
    default:
        return false;
    }
}

/* ------------------------------------------------------------ checks */

static const char *var_name(const tex_expr *v)
{
    return v->u.var.name;
}

static int bind_scalar(binder *b, int i, const tex_value *a)
{
    const texi_param *p = &b->f->params[i];
    int k = env_index(b, p->var);
    char why[160];
    if (p->size && a->kind != TEX_VAL_I64)
        return fail(b, TEX_EINVAL, "argument %d ('%s') must be an integer scalar (TEX_VAL_I64)", i,
                    var_name(p->var));
    if (p->size)
        b->env[k].value.i = a->i;
    else if (texi_eval_scalar_arg(p->var->dtype, a, &b->env[k].value, why, sizeof why) != 0)
        return fail(b, TEX_EINVAL, "argument %d ('%s'): %s", i, var_name(p->var), why);
    b->bound[k] = true;
    return 0;
}

static int check_layout(binder *b, int i, const tex_tensor *t, const DLTensor *d)
{
    if (d->device.device_type != kDLCPU)
        return fail(b, TEX_EINVAL, "argument %d (tensor '%s') is not in host memory (kDLCPU)", i,
                    t->name);
    DLDataType want = tex_dtype_to_dlpack(t->dtype);
    if (d->dtype.code != want.code || d->dtype.bits != want.bits || d->dtype.lanes != want.lanes)
        return fail(b, TEX_ETYPE,
                    "argument %d (tensor '%s') has DLPack dtype {code %d, bits %d, lanes %d}, "
                    "expected %s",
                    i, t->name, d->dtype.code, d->dtype.bits, d->dtype.lanes,
                    tex_dtype_name(t->dtype));
    if (d->ndim != t->ndim)
        return fail(b, TEX_EINVAL, "argument %d (tensor '%s') has %d dimensions, expected %d", i,
                    t->name, d->ndim, t->ndim);
    int64_t stride = 1, count = 1;
    for (int k = d->ndim - 1; k >= 0; k--) {
        if (d->shape[k] < 0)
            return fail(b, TEX_EINVAL, "argument %d (tensor '%s'): dimension %d is negative (%lld)",
                        i, t->name, k, (long long)d->shape[k]);
        if (d->strides && d->shape[k] != 1 && d->strides[k] != stride)
            return fail(b, TEX_EINVAL,
                        "argument %d (tensor '%s'): stride of dimension %d is %lld, expected %lld "
                        "(only compact row-major arrays are accepted)",
                        i, t->name, k, (long long)d->strides[k], (long long)stride);
        stride *= d->shape[k];
        count *= d->shape[k];
    }
    if (!d->data && count > 0)
        return fail(b, TEX_EINVAL, "argument %d (tensor '%s') has NULL data", i, t->name);
    return 0;
}

/* Constant and bare-variable dimensions; the others wait for check_derived. */
static int bind_dims(binder *b, int i, const tex_tensor *t, const DLTensor *d)
{
    for (int k = 0; k < t->ndim; k++) {
        const tex_expr *e = t->shape[k];
        int64_t got = d->shape[k];
        if (e->kind == TEXI_EXPR_INT && e->u.i != got)
            return fail(b, TEX_EINVAL,
                        "argument %d (tensor '%s'): dimension %d is %lld, expected %lld", i,
                        t->name, k, (long long)got, (long long)e->u.i);
        int j = e->kind == TEXI_EXPR_VAR ? env_index(b, e) : -1;
        if (j < 0)
            continue;
        if (!b->bound[j]) {
            b->env[j].value.i = got;
            b->bound[j] = true;
        } else if (b->env[j].value.i != got) {
            return fail(b, TEX_EINVAL,
                        "argument %d (tensor '%s'): dimension %d is %lld, but '%s' is %lld "
                        "(from an earlier argument)",
                        i, t->name, k, (long long)got, var_name(e), (long long)b->env[j].value.i);
        }
    }
    return 0;
}

static int check_derived(binder *b, int n, const tex_value args[])
{
    for (int i = 0; i < n; i++) {
        const tex_tensor *t = b->f->params[i].tensor;
        for (int k = 0; t && k < t->ndim; k++) {
            const tex_expr *e = t->shape[k];
            int64_t want;
            if (e->kind == TEXI_EXPR_INT || e->kind == TEXI_EXPR_VAR)
                continue;
            if (!eval_int(b, e, &want))
                return fail(b, TEX_EINVAL,
                            "argument %d (tensor '%s'): dimension %d cannot be evaluated from the "
                            "other arguments",
                            i, t->name, k);
            if (want != args[i].t->shape[k])
                return fail(b, TEX_EINVAL,
                            "argument %d (tensor '%s'): dimension %d is %lld, expected %lld", i,
                            t->name, k, (long long)args[i].t->shape[k], (long long)want);
        }
    }
    return 0;
}

static int check_arg(binder *b, int i, const tex_value *a)
{
    const texi_param *p = &b->f->params[i];
    if (p->kind == TEX_ARG_VAR)
        return 0; /* bound first, in bind_args */
    if (a->kind != TEX_VAL_TENSOR || !a->t)
        return fail(b, TEX_EINVAL, "argument %d (tensor '%s') must be an array (TEX_VAL_TENSOR)", i,
                    p->tensor->name);
    TEXI_TRY(check_layout(b, i, p->tensor, a->t));
    return bind_dims(b, i, p->tensor, a->t);
}

static void setup_env(binder *b)
{
    const tex_func *f = b->f;
    for (int i = 0; i < f->n_params; i++)
        if (f->params[i].kind == TEX_ARG_VAR)
            b->env[b->n_env++].var = f->params[i].var;
    for (int i = 0; i < f->n_size_vars; i++)
        b->env[b->n_env++].var = f->size_vars[i];
}

static int bind_all(binder *b, int n, const tex_value args[])
{
    const tex_func *f = b->f;
    for (int i = 0; i < n; i++)
        if (f->params[i].kind == TEX_ARG_VAR)
            TEXI_TRY(bind_scalar(b, i, &args[i]));
    for (int i = 0; i < n; i++)
        TEXI_TRY(check_arg(b, i, &args[i]));
    for (int i = 0; i < b->n_env; i++)
        if (!b->bound[i])
            return fail(b, TEX_EINVAL, "symbolic size '%s' is not given by any argument",
                        var_name(b->env[i].var));
    return check_derived(b, n, args);
}

int texi_bind_args(const tex_func *f, int n, const tex_value args[], texi_binding *env, int env_cap,
                   int *n_env, char *err, size_t err_size)
{
    if (!f || (n > 0 && !args) || (!env && env_cap > 0) || !n_env)
        return TEX_EMISUSE;
    binder b = {f, env, NULL, 0, err, err_size};
    int need = f->n_size_vars;
    for (int i = 0; i < f->n_params; i++)
        need += f->params[i].kind == TEX_ARG_VAR;
    if (need > env_cap)
        return fail(&b, TEX_EINVAL, "%d variables to bind but room for %d", need, env_cap);
    if (n != f->n_params)
        return fail(&b, TEX_EINVAL, "expected %d arguments, got %d", f->n_params, n);
    bool small[SMALL_ENV] = {false};
    b.bound = need <= SMALL_ENV ? small : calloc((size_t)need, sizeof *b.bound);
    if (!b.bound)
        return fail(&b, TEX_ENOMEM, "out of memory");
    setup_env(&b);
    int rc = bind_all(&b, n, args);
    if (b.bound != small)
        free(b.bound);
    if (rc == 0)
        *n_env = b.n_env;
    return rc;
}
