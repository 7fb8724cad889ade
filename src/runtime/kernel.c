/*
 * Kernels: the backend registry, target strings, tex_build, and checked
 * calls (tex_kernel_call / _tensors), export, source, messages, free.
 *
 * Registry: a static table maps a target's first word to its backend
 * ("cpu" and "c" to texi_backend_cpu, "cuda" to texi_backend_cuda); a new
 * backend is one more row.
 * Target strings: a family word then options separated by spaces; "cpu"
 * takes "-threads=N" (N >= 1), "cuda" "-emit-only" and "-arch=sm_NN", and
 * every family "-strict-float". The kernel stores the target
 * normalised (single spaces).
 *
 * A kernel owns a copy of its signature (texi_kernel_param: name, dtype,
 * ndim, per dimension a constant or an index into the call's size table)
 * and never points into the context, so it outlives tex_ctx_free. The size
 * table holds the VAR params (in params order) then the size variables
 * (tex_func.size_vars order), as texi_bind_args' environment does. A
 * dimension given by another expression (n + 1) is marked DERIVED in the
 * param and kept here as a small postfix program over the size table
 * (kernel_full below), evaluated once every size is bound.
 *
 * Calls check the arguments with the rules and the messages of
 * src/lower/args.c (which needs a tex_func, gone after tex_ctx_free):
 * count; VAR params first (a size: TEX_VAL_I64; any other var: I64 or F64
 * converted to its dtype and range-checked by texi_eval_scalar_arg, so a
 * value the var cannot hold is TEX_EINVAL naming the parameter); then per
 * tensor: kind, device
 * (kDLCPU for the CPU backends; kDLCUDA or kDLCUDAManaged memory of device 0
 * for "cuda" kernels, which are built for and launched on device 0), dtype
 * (TEX_ETYPE; compared as tex_dtype_to_dlpack, so bool is
 * {kDLUInt, 8, 1}), ndim, strides (NULL or compact row-major), data, every
 * dimension (constants match, sizes bind or agree); then derived
 * dimensions. Nothing runs and nothing is written before all checks pass;
 * byte_offset is added to each pointer. A failed call's message goes to
 * k->errmsg: when several threads call one kernel and fail at once, the
 * text is a benign race (one of their messages, possibly mixed).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu/cpu.h"
#include "backend_cuda/cuda.h"
#include "runtime/runtime.h"

#define DERIVED INT64_MIN /* texi_kernel_param.dims: see kernel_full.derived */
#define SMALL 32          /* sizes and arguments handled without allocating */
#define STACK 32          /* depth of a derived dimension's evaluation */

/* ------------------------------------------------------------ registry */

static const struct {
    const char *family;
    const texi_backend *backend;
} registry[] = {
    {"cpu", &texi_backend_cpu},
    {"c", &texi_backend_cpu},
    {"cuda", &texi_backend_cuda},
};

static const texi_backend *find_backend(const char *family, size_t len)
{
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (strlen(registry[i].family) == len && strncmp(registry[i].family, family, len) == 0)
            return registry[i].backend;
    return NULL;
}

/* A parsed target: its backend, normalised text and options. */
typedef struct {
    const texi_backend *backend;
    char text[256];
    int threads;
    bool strict_float;
    int code; /* 0, or why it was refused */
    char why[256];
} target_spec;

/* A thread count: 1 to 6 decimal digits, at least 1. */
static bool parse_threads_value(const char *w, size_t len, int *threads)
{
    if (len == 0 || len > 6)
        return false;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (w[i] < '0' || w[i] > '9')
            return false;
        v = v * 10 + (w[i] - '0');
    }
    *threads = v;
    return v >= 1;
}

static bool parse_threads(const char *w, size_t len, int *threads)
{
    const size_t plen = strlen("-threads=");
    if (len <= plen || strncmp(w, "-threads=", plen) != 0)
        return false;
    return parse_threads_value(w + plen, len - plen, threads);
}

/* TEX_NUM_THREADS when it is a positive number (the thread count of "cpu"
 * kernels whose target names none), else 0: OpenMP's default. */
static int threads_from_env(void)
{
    const char *v = getenv("TEX_NUM_THREADS");
    int threads = 0;
    return v && parse_threads_value(v, strlen(v), &threads) ? threads : 0;
}

/* Every family's option: compile without contraction or any other
 * value-changing optimisation (tex.h, tex_build). */
#define STRICT_FLOAT "-strict-float"

/* A "cuda" option: "-emit-only" or "-arch=sm_NN" (two or three digits). */
static bool parse_cuda_option(const char *w, size_t len)
{
    const size_t plen = strlen("-arch=sm_");
    if (len == strlen("-emit-only") && strncmp(w, "-emit-only", len) == 0)
        return true;
    if (len < plen + 2 || len > plen + 3 || strncmp(w, "-arch=sm_", plen) != 0)
        return false;
    for (size_t i = plen; i < len; i++)
        if (w[i] < '0' || w[i] > '9')
            return false;
    return true;
}

/* Splits "family -opt ..." and checks the options of the families known here. */
static void parse_target(const char *target, target_spec *t)
{
    memset(t, 0, sizeof *t);
    const char *p = target + strspn(target, " ");
    size_t flen = strcspn(p, " ");
    t->backend = find_backend(p, flen);
    if (flen == 0 || flen >= sizeof t->text / 2 || strlen(target) >= sizeof t->text / 2) {
        t->code = TEX_EINVAL;
        snprintf(t->why, sizeof t->why,
                 "unknown target '%s' (expected \"cpu\", \"cpu -threads=N\", \"c\" or \"cuda\")",
                 target);
        return;
    }
    memcpy(t->text, p, flen);
    if (!t->backend) {
        t->code = TEX_EINVAL;
        snprintf(t->why, sizeof t->why,
                 "unknown target '%s' (expected \"cpu\", \"cpu -threads=N\", \"c\" or \"cuda\")",
                 target);
        return;
    }
    bool is_cpu = flen == 3;
    for (p += flen; *(p += strspn(p, " ")); p += strcspn(p, " ")) {
        size_t wlen = strcspn(p, " ");
        bool strict = wlen == strlen(STRICT_FLOAT) && strncmp(p, STRICT_FLOAT, wlen) == 0;
        t->strict_float |= strict;
        bool known = strict || (t->backend == &texi_backend_cuda
                                    ? parse_cuda_option(p, wlen)
                                    : is_cpu && parse_threads(p, wlen, &t->threads));
        if (!known) {
            t->code = TEX_EINVAL;
            snprintf(t->why, sizeof t->why, "target '%s': bad option '%.*s'%s", target, (int)wlen,
                     p,
                     t->backend == &texi_backend_cuda
                         ? " (expected \"-emit-only\", \"-arch=sm_80\" / \"-arch=sm_90\" or "
                           "\"-strict-float\")"
                     : is_cpu ? " (expected \"-threads=N\" with N >= 1 or \"-strict-float\")"
                              : " (\"-strict-float\" is the only one)");
            return;
        }
        strcat(t->text, " ");
        strncat(t->text, p, wlen);
    }
}

int tex_target_available(const char *target)
{
    if (!target)
        return 0;
    target_spec t;
    parse_target(target, &t);
    return t.code == 0 && t.backend->available(t.text) ? 1 : 0;
}

/* ------------------------------------------------------------ signature */

/* Postfix programs over the size table: pairs (op, operand). */
enum { OP_CONST, OP_SIZE, OP_ADD, OP_SUB, OP_MUL, OP_FDIV, OP_FMOD, OP_MIN, OP_MAX, OP_FAIL };

typedef struct {
    int param, dim;
    int n;         /* instructions */
    int64_t *code; /* 2 * n values */
} derived_dim;

/* The kernel as allocated here: the public part first. */
typedef struct {
    tex_kernel k;
    int n_derived;
    derived_dim *derived;
} kernel_full;

static void program_push(derived_dim *d, int cap, int64_t op, int64_t arg)
{
    if (d->n < cap) {
        d->code[2 * d->n] = op;
        d->code[2 * d->n + 1] = arg;
    }
    d->n++;
}

static int size_index(tex_expr *const *sizes, int n_sizes, const tex_expr *v)
{
    for (int i = 0; i < n_sizes; i++)
        if (sizes[i] == v)
            return i;
    return -1;
}

/* Appends e's program; an unsupported node becomes OP_FAIL. */
static void compile_dim(derived_dim *d, int cap, const tex_expr *e, tex_expr *const *sizes,
                        int n_sizes)
{
    int op = OP_FAIL;
    switch (e->kind) {
    case TEXI_EXPR_INT:
        program_push(d, cap, OP_CONST, e->u.i);
        return;
    case TEXI_EXPR_VAR: {
        int i = size_index(sizes, n_sizes, e);
        program_push(d, cap, i < 0 ? OP_FAIL : OP_SIZE, i);
        return;
    }
    case TEXI_EXPR_CAST:
        if (texi_dtype_is_int(e->dtype))
            compile_dim(d, cap, e->u.un.a, sizes, n_sizes);
        else
            program_push(d, cap, OP_FAIL, 0);
        return;
    case TEXI_EXPR_ADD:
        op = OP_ADD;
        break;
    case TEXI_EXPR_SUB:
        op = OP_SUB;
        break;
    case TEXI_EXPR_MUL:
        op = OP_MUL;
        break;
    case TEXI_EXPR_FLOORDIV:
        op = OP_FDIV;
        break;
    case TEXI_EXPR_FLOORMOD:
        op = OP_FMOD;
        break;
    case TEXI_EXPR_MIN:
        op = OP_MIN;
        break;
    case TEXI_EXPR_MAX:
        op = OP_MAX;
        break;
    default:
        program_push(d, cap, OP_FAIL, 0);
        return;
    }
    compile_dim(d, cap, e->u.bin.a, sizes, n_sizes);
    compile_dim(d, cap, e->u.bin.b, sizes, n_sizes);
    program_push(d, cap, op, 0);
}

static int64_t floordiv64(int64_t a, int64_t c)
{
    int64_t q = a / c;
    return (a % c != 0 && ((a < 0) != (c < 0))) ? q - 1 : q;
}

/* Runs a derived dimension's program; false when it cannot be evaluated. */
static bool eval_dim(const derived_dim *d, const texi_eval_value *table, int64_t *out)
{
    int64_t st[STACK];
    int sp = 0;
    for (int i = 0; i < d->n; i++) {
        int64_t op = d->code[2 * i], arg = d->code[2 * i + 1];
        if (op == OP_FAIL || sp == STACK)
            return false;
        if (op == OP_CONST || op == OP_SIZE) {
            st[sp++] = op == OP_CONST ? arg : table[arg].i;
            continue;
        }
        int64_t y = st[--sp], x = st[--sp];
        if ((op == OP_FDIV || op == OP_FMOD) && y == 0)
            return false;
        st[sp++] = op == OP_ADD    ? x + y
                   : op == OP_SUB  ? x - y
                   : op == OP_MUL  ? x * y
                   : op == OP_FDIV ? floordiv64(x, y)
                   : op == OP_FMOD ? x - y * floordiv64(x, y)
                   : op == OP_MIN  ? (x < y ? x : y)
                                   : (x > y ? x : y);
    }
    *out = st[0];
    return sp == 1;
}

static int count_nodes(const tex_expr *e)
{
    switch (e->kind) {
    case TEXI_EXPR_CAST:
        return 1 + count_nodes(e->u.un.a);
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
    case TEXI_EXPR_MUL:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        return 1 + count_nodes(e->u.bin.a) + count_nodes(e->u.bin.b);
    default:
        return 1;
    }
}

static bool add_derived(kernel_full *kf, int param, int dim, const tex_expr *e,
                        tex_expr *const *sizes, int n_sizes)
{
    derived_dim *grown = realloc(kf->derived, (size_t)(kf->n_derived + 1) * sizeof *grown);
    if (!grown)
        return false;
    kf->derived = grown;
    derived_dim *d = &grown[kf->n_derived];
    int cap = count_nodes(e);
    *d = (derived_dim){param, dim, 0, malloc((size_t)cap * 2 * sizeof(int64_t))};
    if (!d->code)
        return false;
    kf->n_derived++;
    compile_dim(d, cap, e, sizes, n_sizes);
    return true;
}

static bool copy_param(kernel_full *kf, int i, const texi_param *p, tex_expr *const *sizes,
                       int n_sizes)
{
    texi_kernel_param *kp = &kf->k.params[i];
    kp->kind = p->kind;
    if (p->kind == TEX_ARG_VAR) {
        kp->name = strdup(p->var->u.var.name);
        kp->dtype = p->var->dtype;
        kp->size = p->size;
        return kp->name != NULL;
    }
    const tex_tensor *t = p->tensor;
    kp->name = strdup(t->name);
    kp->dtype = t->dtype;
    kp->ndim = t->ndim;
    kp->dims = calloc(t->ndim > 0 ? (size_t)t->ndim : 1, sizeof *kp->dims);
    if (!kp->name || !kp->dims)
        return false;
    for (int d = 0; d < t->ndim; d++) {
        const tex_expr *e = t->shape[d];
        int j = e->kind == TEXI_EXPR_VAR ? size_index(sizes, n_sizes, e) : -1;
        if (e->kind == TEXI_EXPR_INT)
            kp->dims[d] = e->u.i;
        else if (j >= 0)
            kp->dims[d] = -1 - (int64_t)j;
        else if (!add_derived(kf, i, d, e, sizes, n_sizes))
            return false;
        else
            kp->dims[d] = DERIVED;
    }
    return true;
}

/* Copies f's signature into the kernel; false when out of memory. */
static bool copy_signature(kernel_full *kf, const tex_func *f)
{
    tex_kernel *k = &kf->k;
    int n_var = 0;
    for (int i = 0; i < f->n_params; i++)
        n_var += f->params[i].kind == TEX_ARG_VAR;
    k->n_sizes = n_var + f->n_size_vars;
    k->n_extra = f->n_size_vars;
    tex_expr **sizes = calloc((size_t)k->n_sizes + 1, sizeof *sizes);
    k->size_names = calloc((size_t)k->n_sizes + 1, sizeof *k->size_names);
    k->extra_size_index = calloc((size_t)k->n_extra + 1, sizeof *k->extra_size_index);
    k->params = calloc((size_t)f->n_params + 1, sizeof *k->params);
    bool ok = sizes && k->size_names && k->extra_size_index && k->params;
    for (int i = 0, v = 0; ok && i < f->n_params; i++)
        if (f->params[i].kind == TEX_ARG_VAR)
            sizes[v++] = f->params[i].var;
    for (int i = 0; ok && i < f->n_size_vars; i++) {
        sizes[n_var + i] = f->size_vars[i];
        k->extra_size_index[i] = n_var + i;
    }
    for (int i = 0; ok && i < k->n_sizes; i++)
        ok = (k->size_names[i] = strdup(sizes[i]->u.var.name)) != NULL;
    k->n_params = k->params ? f->n_params : 0; /* params calloc'ed: free handles partial copies */
    for (int i = 0; ok && i < f->n_params; i++)
        ok = copy_param(kf, i, &f->params[i], sizes, k->n_sizes);
    free(sizes);
    return ok;
}

void tex_kernel_free(tex_kernel *k)
{
    if (!k)
        return;
    kernel_full *kf = (kernel_full *)k;
    if (k->backend && k->backend->free)
        k->backend->free(k);
    for (int i = 0; i < k->n_params; i++) {
        free(k->params[i].name);
        free(k->params[i].dims);
    }
    free(k->params);
    for (int i = 0; k->size_names && i < k->n_sizes; i++)
        free(k->size_names[i]);
    free(k->size_names);
    free(k->extra_size_index);
    for (int i = 0; i < kf->n_derived; i++)
        free(kf->derived[i].code);
    free(kf->derived);
    free(k->name);
    free(k->target);
    free(k->source);
    free(k->header);
    free(kf);
}

tex_kernel *tex_build(tex_func *f, const char *target)
{
    if (!f)
        return NULL;
    if (!target) {
        texi_error(f->ctx, TEX_EMISUSE, "tex_build: NULL target");
        return NULL;
    }
    target_spec t;
    parse_target(target, &t);
    if (t.code != 0) {
        texi_error(f->ctx, t.code, "tex_build: %s", t.why);
        return NULL;
    }
    kernel_full *kf = calloc(1, sizeof *kf);
    if (!kf) {
        texi_error(f->ctx, TEX_ENOMEM, "tex_build: out of memory");
        return NULL;
    }
    tex_kernel *k = &kf->k;
    k->threads = t.threads ? t.threads : threads_from_env();
    k->strict_float = t.strict_float;
    k->name = strdup(f->name);
    k->target = strdup(t.text);
    if (!k->name || !k->target || !copy_signature(kf, f)) {
        tex_kernel_free(k);
        texi_error(f->ctx, TEX_ENOMEM, "tex_build: out of memory");
        return NULL;
    }
    k->backend = t.backend;
    if (t.backend->build(k, f) != 0) {
        tex_kernel_free(k);
        return NULL;
    }
    return k;
}

/* ------------------------------------------------------------ calls */

/* The size table of one call (VAR params' values then size variables; sizes
 * in .i) and which entries are bound. */
typedef struct {
    texi_eval_value *v;
    bool *bound;
} size_table;

/* The memory an argument must live in: the host for the CPU backends, CUDA
 * device or managed memory of device 0 for "cuda" kernels. */
static int check_device(tex_kernel *k, int i, const texi_kernel_param *p, const DLTensor *d)
{
    if (k->backend != &texi_backend_cuda) {
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
        if (want == DERIVED)
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

static int check_derived(tex_kernel *k, const tex_value args[], const size_table *st)
{
    const kernel_full *kf = (const kernel_full *)k;
    for (int i = 0; i < kf->n_derived; i++) {
        const derived_dim *d = &kf->derived[i];
        const texi_kernel_param *p = &k->params[d->param];
        int64_t want, got = args[d->param].t->shape[d->dim];
        if (!eval_dim(d, st->v, &want))
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

/* Every check of the file comment, binding the size table. */
static int check_args(tex_kernel *k, const tex_value args[], size_table *st)
{
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
    return check_derived(k, args, st);
}

/* Flattens checked arguments as backend.h's call takes them and runs it. */
static int dispatch(tex_kernel *k, const tex_value args[], const size_table *st, void **ptrs,
                    texi_eval_value *scalars)
{
    int t = 0, s = 0;
    for (int i = 0; i < k->n_params; i++) {
        if (k->params[i].kind == TEX_ARG_VAR) {
            scalars[s] = st->v[s]; /* the VAR params open the size table */
            s++;
            continue;
        }
        const DLTensor *d = args[i].t;
        ptrs[t++] = d->data ? (char *)d->data + d->byte_offset : NULL;
    }
    for (int j = 0; j < k->n_extra; j++)
        scalars[s++] = st->v[k->extra_size_index[j]];
    return k->backend->call(k, ptrs, scalars);
}

int tex_kernel_call(tex_kernel *k, int n, const tex_value args[])
{
    if (!k)
        return TEX_EMISUSE;
    if (!k->callable)
        return texi_kernel_fail(
            k, TEX_EUNAVAILABLE,
            "built for target '%s', which gives source only and cannot be called", k->target);
    if (n != k->n_params)
        return texi_kernel_fail(k, TEX_EINVAL, "expected %d arguments, got %d", k->n_params, n);
    if (n > 0 && !args)
        return texi_kernel_fail(k, TEX_EMISUSE, "NULL argument array");
    int cap = k->n_sizes + k->n_params + 1;
    texi_eval_value small_v[SMALL], small_scalars[SMALL];
    bool small_b[SMALL] = {false};
    void *small_p[SMALL];
    bool heap = cap > SMALL;
    size_table st = {heap ? calloc((size_t)cap, sizeof(texi_eval_value)) : small_v,
                     heap ? calloc((size_t)cap, sizeof(bool)) : small_b};
    texi_eval_value *scalars = heap ? calloc((size_t)cap, sizeof *scalars) : small_scalars;
    void **ptrs = heap ? calloc((size_t)cap, sizeof(void *)) : small_p;
    int rc = TEX_ENOMEM;
    if (st.v && st.bound && scalars && ptrs) {
        rc = check_args(k, args, &st);
        if (rc == 0)
            rc = dispatch(k, args, &st, ptrs, scalars);
    } else {
        texi_kernel_fail(k, TEX_ENOMEM, "out of memory");
    }
    if (heap) {
        free(st.v);
        free(st.bound);
        free(scalars);
        free(ptrs);
    }
    return rc;
}

int tex_kernel_call_tensors(tex_kernel *k, int n, DLTensor *const args[])
{
    if (!k)
        return TEX_EMISUSE;
    for (int i = 0; i < k->n_params; i++)
        if (k->params[i].kind == TEX_ARG_VAR)
            return texi_kernel_fail(k, TEX_EINVAL,
                                    "parameter %d ('%s') is a scalar: call with tex_kernel_call", i,
                                    k->params[i].name);
    if (n != k->n_params)
        return texi_kernel_fail(k, TEX_EINVAL, "expected %d arguments, got %d", k->n_params, n);
    if (n > 0 && !args)
        return texi_kernel_fail(k, TEX_EMISUSE, "NULL argument array");
    tex_value small[SMALL] = {{.kind = TEX_VAL_TENSOR}};
    tex_value *vals = n > SMALL ? calloc((size_t)n, sizeof *vals) : small;
    if (!vals)
        return texi_kernel_fail(k, TEX_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        vals[i] = (tex_value){.kind = TEX_VAL_TENSOR, .t = args[i]};
    int rc = tex_kernel_call(k, n, vals);
    if (vals != small)
        free(vals);
    return rc;
}

/* ------------------------------------------------------------ source and export */

const char *tex_kernel_source(const tex_kernel *k)
{
    return k ? k->source : NULL;
}

const char *tex_kernel_ptx(const tex_kernel *k)
{
    if (!k || k->backend != &texi_backend_cuda || !k->impl)
        return NULL;
    return ((const texi_cuda_kernel *)k->impl)->ptx;
}

const char *tex_kernel_errmsg(const tex_kernel *k)
{
    return k ? k->errmsg : "tex_kernel_errmsg: NULL kernel";
}

/* The kernel's message buffer: kernels are malloc'ed, never const objects,
 * so a const handle's buffer may be written (export takes a const kernel). */
static tex_kernel *writable(const tex_kernel *k)
{
    tex_kernel *w;
    memcpy(&w, &k, sizeof w);
    return w;
}

static int write_text(tex_kernel *k, const char *prefix, const char *ext, const char *text)
{
    size_t len = strlen(prefix) + strlen(ext) + 1;
    char *path = malloc(len);
    if (!path)
        return texi_kernel_fail(k, TEX_ENOMEM, "tex_kernel_export: out of memory");
    snprintf(path, len, "%s%s", prefix, ext);
    FILE *fp = fopen(path, "wb");
    size_t n = strlen(text);
    bool ok = fp && fwrite(text, 1, n, fp) == n;
    if (fp && fclose(fp) != 0)
        ok = false;
    int rc = ok ? 0
                : texi_kernel_fail(k, TEX_EINVAL, "tex_kernel_export: cannot write '%s': %s", path,
                                   strerror(errno));
    free(path);
    return rc;
}

int tex_kernel_export(const tex_kernel *k, const char *path_prefix)
{
    if (!k)
        return TEX_EMISUSE;
    tex_kernel *w = writable(k);
    if (!path_prefix || !*path_prefix)
        return texi_kernel_fail(w, TEX_EINVAL, "tex_kernel_export: empty path prefix");
    if (!k->header || !k->source)
        return texi_kernel_fail(
            w, TEX_EUNAVAILABLE,
            "tex_kernel_export: kernels built for target '%s' cannot be exported "
            "(only \"c\" and \"cpu\" ones)",
            k->target);
    int rc = write_text(w, path_prefix, ".c", k->source);
    return rc != 0 ? rc : write_text(w, path_prefix, ".h", k->header);
}
