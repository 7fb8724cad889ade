/*
 * device_check, the last step of the GPU tail (texi_lower_tail): what a
 * kernel of the module must satisfy that no earlier step guarantees, checked
 * before a backend prints it, so that tex_build's refusals come from the
 * lowering, where tex_auto_schedule's check of its own schedules sees them
 * too (src/autosched/auto_schedule.c):
 *   - CUDA's launch limits where a kernel's extents are constants: a block
 *     of at most 1024 / 1024 / 64 threads along x / y / z and 1024 in all,
 *     a grid of at most 65535 blocks along y and z (symbolic extents are
 *     checked by the runtime before launching); TEX_EINVAL naming the kernel
 *     and the index;
 *   - every buffer allocated in a kernel has a size the printer can allocate: a
 *     constant, or a symbolic size whose largest value is at most
 *     TEXI_DEVICE_MAX_ARRAY_BYTES (texi_device_array_elems); TEX_EUNAVAILABLE
 *     naming the buffer;
 *   - a global buffer is not allocated inside a kernel around thread-bound
 *     loops (each thread would get its own); TEX_EUNAVAILABLE naming it;
 *   - a kernel's shared buffers, static __shared__ arrays at their (upper
 *     bound) sizes, take at most TEXI_DEVICE_MAX_ARRAY_BYTES in all, the
 *     static shared memory a CUDA block may have (NVRTC refuses more);
 *     TEX_EUNAVAILABLE naming the kernel and its largest shared buffer.
 */
#include "lower/device.h"

#include <stdlib.h>
#include <string.h>

int64_t texi_device_array_elems(const tex_func *f, const texi_buffer *b, int n,
                                const texi_range ranges[])
{
    int64_t elems = 1, d;
    bool constant = true;
    for (int i = 0; i < b->ndim && constant; i++) {
        constant =
            texi_expr_is_int_const(b->shape[i], &d) && d >= 0 && (d == 0 || elems <= INT64_MAX / d);
        elems *= constant ? d : 1;
    }
    if (constant)
        return elems;
    texi_range *r = malloc(sizeof *r * (size_t)(n + f->n_params + f->n_size_vars + 1));
    tex_expr *zero = texi_int_imm(f->ctx, TEX_I64, 0),
             *big = texi_int_imm(f->ctx, TEX_I64, INT32_MAX);
    tex_expr *prod = texi_int_imm(f->ctx, TEX_I64, 1);
    if (!r || !zero || !big) {
        free(r);
        return -1;
    }
    if (n > 0)
        memcpy(r, ranges, sizeof r[0] * (size_t)n);
    for (int i = 0; i < f->n_params; i++)
        if (f->params[i].kind == TEX_ARG_VAR && texi_dtype_is_int(f->params[i].var->dtype))
            r[n++] = (texi_range){f->params[i].var, zero, big};
    for (int i = 0; i < f->n_size_vars; i++)
        r[n++] = (texi_range){f->size_vars[i], zero, big};
    for (int i = 0; prod && i < b->ndim; i++) {
        tex_expr *dim = texi_convert(b->shape[i], TEX_I64);
        prod = dim ? texi_binary(TEXI_EXPR_MUL, prod, dim) : NULL;
    }
    texi_interval iv = prod ? texi_const_interval(prod, n, r) : (texi_interval){.hi_inf = true};
    free(r);
    int64_t elem = tex_dtype_bytes(b->dtype);
    return !iv.hi_inf && iv.hi >= 0 && elem > 0 && iv.hi <= TEXI_DEVICE_MAX_ARRAY_BYTES / elem
               ? iv.hi
               : -1;
}

/* The launch limits of the file comment for kernel k. */
static int check_launch(texi_lower *lw, const texi_device_kernel *k)
{
    static const int64_t limit[TEXI_N_LAUNCH_TAGS] = {INT32_MAX, 65535, 65535, 1024, 1024, 64};
    int64_t threads = 1, e;
    for (int t = 0; t < TEXI_N_LAUNCH_TAGS; t++) {
        if (!k->extent[t] || !texi_expr_is_int_const(k->extent[t], &e))
            continue;
        if (e > limit[t])
            return texi_error(lw->ctx, TEX_EINVAL,
                              "tex_build: function '%s': kernel '%s': %s has extent %lld, CUDA "
                              "allows %lld",
                              lw->func->name, k->name, texi_device_tag_names[t], (long long)e,
                              (long long)limit[t]);
        if (t >= 3 && e > 0 && threads <= 1024)
            threads *= e;
    }
    if (threads > 1024)
        return texi_error(lw->ctx, TEX_EINVAL,
                          "tex_build: function '%s': kernel '%s': its thread loops make blocks of "
                          "more than 1024 threads (%lld), CUDA's limit",
                          lw->func->name, k->name, (long long)threads);
    return 0;
}

/* A walk of a kernel's statements with the ranges of the loops and integer
 * LETs around them, as the printer keeps them. */
typedef struct {
    texi_lower *lw;
    int n, cap;
    texi_range *ranges;
    int64_t shared_bytes;          /* the kernel's shared buffers so far */
    const texi_buffer *big_shared; /* the largest of them */
    int64_t big_bytes;
} walk;

static bool is_bound_loop(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_FOR && s->u.loop.for_kind == TEXI_FOR_THREAD;
}

static int check_allocate(walk *w, const tex_stmt *s)
{
    const texi_buffer *b = s->u.alloc.buf;
    const char *fn = w->lw->func->name;
    int64_t elems = texi_device_array_elems(w->lw->func, b, w->n, w->ranges);
    if (elems < 0)
        return texi_error(w->lw->ctx, TEX_EUNAVAILABLE,
                          "tex_build: function '%s': buffer '%s' has a size without a constant "
                          "upper bound of at most %d bytes: shared/local buffers in CUDA kernels "
                          "need one",
                          fn, b->name, TEXI_DEVICE_MAX_ARRAY_BYTES);
    if (b->scope == TEXI_SCOPE_GLOBAL && texi_stmt_any(s->u.alloc.body, is_bound_loop))
        return texi_error(w->lw->ctx, TEX_EUNAVAILABLE,
                          "tex_build: function '%s': global buffer '%s' is allocated inside a "
                          "kernel, outside a thread-bound loop that uses it: use "
                          "cache_read/cache_write with shared scope",
                          fn, b->name);
    if (b->scope == TEXI_SCOPE_SHARED) {
        /* capped at INT32_MAX, far over the limit, so that sums cannot overflow */
        int64_t bytes = elems > INT32_MAX / 8 ? INT32_MAX : elems * tex_dtype_bytes(b->dtype);
        w->shared_bytes = w->shared_bytes + bytes > INT32_MAX ? INT32_MAX : w->shared_bytes + bytes;
        if (bytes >= w->big_bytes) {
            w->big_shared = b;
            w->big_bytes = bytes;
        }
    }
    return 0;
}

/* The shared-memory limit of the file comment for kernel k, once its
 * buffers are summed. */
static int check_shared(const walk *w, const texi_device_kernel *k)
{
    if (w->shared_bytes <= TEXI_DEVICE_MAX_ARRAY_BYTES)
        return 0;
    return texi_error(w->lw->ctx, TEX_EUNAVAILABLE,
                      "tex_build: function '%s': kernel '%s': its shared buffers need %lld bytes "
                      "(the largest, '%s', %lld), more than the %d bytes of static shared memory "
                      "a CUDA block may have: use smaller tiles",
                      w->lw->func->name, k->name, (long long)w->shared_bytes, w->big_shared->name,
                      (long long)w->big_bytes, TEXI_DEVICE_MAX_ARRAY_BYTES);
}

static int check_stmt(walk *w, const tex_stmt *s);

/* s's body with var in [min, min + extent) while it runs. */
static int check_ranged(walk *w, tex_expr *var, tex_expr *min, tex_expr *extent,
                        const tex_stmt *body)
{
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        texi_range *r = realloc(w->ranges, sizeof *r * (size_t)cap);
        if (!r)
            return texi_error(w->lw->ctx, TEX_ENOMEM, "tex_build: out of memory (device_check)");
        w->ranges = r;
        w->cap = cap;
    }
    w->ranges[w->n++] = (texi_range){var, min, extent};
    int rc = check_stmt(w, body);
    w->n--;
    return rc;
}

static int check_stmt(walk *w, const tex_stmt *s)
{
    if (!s)
        return 0;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        return check_ranged(w, s->u.loop.var, s->u.loop.min, s->u.loop.extent, s->u.loop.body);
    case TEXI_STMT_LET: {
        tex_expr *v = s->u.let.var;
        if (texi_dtype_is_float(v->dtype) || v->lanes != 1)
            return check_stmt(w, s->u.let.body);
        tex_expr *one = texi_int_imm(w->lw->ctx, v->dtype, 1);
        return one ? check_ranged(w, v, s->u.let.value, one, s->u.let.body) : TEX_ENOMEM;
    }
    case TEXI_STMT_ALLOCATE:
        TEXI_TRY(check_allocate(w, s));
        return check_stmt(w, s->u.alloc.body);
    case TEXI_STMT_IF:
        TEXI_TRY(check_stmt(w, s->u.ifs.then_s));
        return check_stmt(w, s->u.ifs.else_s);
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            TEXI_TRY(check_stmt(w, s->u.seq.items[i]));
        return 0;
    default:
        return check_stmt(w, texi_stmt_body(s));
    }
}

int texi_device_check(texi_lower *lw, const texi_device_module *m)
{
    walk w = {lw, 0, 0, NULL, 0, NULL, 0};
    int rc = 0;
    for (int k = 0; k < m->n_kernels && rc == 0; k++) {
        w.shared_bytes = w.big_bytes = 0;
        rc = check_launch(lw, &m->kernels[k]);
        if (rc == 0)
            rc = check_stmt(&w, m->kernels[k].body);
        if (rc == 0)
            rc = check_shared(&w, &m->kernels[k]);
    }
    free(w.ranges);
    return rc;
}
