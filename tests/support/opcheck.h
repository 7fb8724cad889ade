/*
 * opcheck.h: the harness of the operator tests (tests/unit/test_ops_*.c).
 * Header-only; include it after tt.h. Built on ops.h (random fills, poison,
 * tolerances, the sizes of symbolic shapes).
 *
 * A case (oc) gathers placeholders (oc_input, shapes constant or symbolic
 * through oc_size) and operator results (oc_output), each output with a
 * hand-written C loop computing what it must hold. oc_run then builds ONE
 * kernel for every output of the case (one JIT compile; an optional
 * callback schedules it), fills the inputs with seeded random non-zero
 * values, poisons the outputs, runs the kernel, and compares each output
 * with the hand-written loop (in double) and with the oracle
 * (tex_eval_reference), within the dtype's tolerance times the output's
 * factor. Symbolic sizes are read from the arrays' shapes at call time.
 *
 * The hand-written loops read the inputs with oc_get (an element at a
 * point of a broadcast shape: aligned at the right, size-1 dims read at 0)
 * and walk the output with oc_unravel.
 */
#ifndef TEX_TESTS_SUPPORT_OPCHECK_H
#define TEX_TESTS_SUPPORT_OPCHECK_H

#include "support/ops.h"
#include "support/tmpdir.h"

#define OC_MAX 24

typedef struct oc oc;

/* Fills want[0 .. numel(out)) with what out must hold; out gives the shape,
 * user is what oc_output_u was given. */
typedef void (*oc_hand)(const oc *c, const void *user, const DLTensor *out, double *want);

struct oc {
    ops_wl w; /* the context and the symbolic sizes (ops.h) */
    int n_in;
    tex_tensor *in[OC_MAX];
    DLTensor *in_arr[OC_MAX];            /* set while oc_run runs */
    void (*adjust[OC_MAX])(DLTensor *a); /* changes the random fill (oc_positive ...) */
    int n_out;
    tex_tensor *out[OC_MAX];
    oc_hand hand[OC_MAX];
    const void *user[OC_MAX]; /* the hand-written loop's parameters */
    double tol[OC_MAX];       /* factor on the dtype's tolerance */
    uint64_t seed;
};

static inline void oc_init(oc *c, tex_ctx *ctx, const char *name, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    ops_init(&c->w, ctx, name);
    c->seed = seed;
}

static inline tex_expr *oc_size(oc *c, const char *name, int64_t v, bool sym)
{
    return ops_size(&c->w, name, v, sym);
}

static inline tex_tensor *oc_input(oc *c, const char *name, tex_dtype t, int ndim,
                                   tex_expr *const shape[])
{
    tex_tensor *x = tex_placeholder(c->w.ctx, name, t, ndim, shape);
    if (c->n_in < OC_MAX)
        c->in[c->n_in++] = x;
    return x;
}

/* An input of constant shape. */
static inline tex_tensor *oc_input_c(oc *c, const char *name, tex_dtype t, int ndim,
                                     const int64_t shape[])
{
    tex_expr *s[16];
    for (int d = 0; d < ndim; d++)
        s[d] = tex_int(c->w.ctx, shape[d]);
    return oc_input(c, name, t, ndim, s);
}

/* Adds operator result t, checked by hand(c, user, ...) within tol times the
 * dtype's tolerance (a NULL t fails the test with the context's message). */
static inline void oc_output_u(oc *c, tex_tensor *t, oc_hand hand, const void *user, double tol)
{
    if (!t) {
        TT_FAILF("%s: an operator failed: %s", c->w.name, tex_errmsg(c->w.ctx));
        return;
    }
    if (c->n_out < OC_MAX) {
        c->out[c->n_out] = t;
        c->hand[c->n_out] = hand;
        c->user[c->n_out] = user;
        c->tol[c->n_out++] = tol;
    }
}

static inline void oc_output(oc *c, tex_tensor *t, oc_hand hand)
{
    oc_output_u(c, t, hand, NULL, 1.0);
}

/* An adjust hook: |x| for an f32 input (e.g. pow's base). */
static inline void oc_positive(DLTensor *a)
{
    for (int64_t e = 0; e < ops_numel(a); e++)
        ((float *)a->data)[e] = fabsf(((float *)a->data)[e]);
}

/* A schedule for oc_run: every output's last data-parallel axis split by
 * 8, the inner part vectorized, the first leaf axis parallel. */
static inline void oc_sched_vector(oc *c, tex_schedule *s)
{
    for (int o = 0; o < c->n_out; o++) {
        tex_stage *st = tex_stage_of(s, c->out[o]);
        int n = tex_tensor_ndim(c->out[o]);
        tex_iter *outer, *inner;
        if (n == 0)
            continue;
        int rc = tex_split(st, tex_op_axis(st, n - 1), tex_int(c->w.ctx, 8), &outer, &inner);
        rc = rc ? rc : tex_vectorize(st, inner);
        rc = rc ? rc : tex_parallel(st, tex_stage_axis(st, 0));
        if (rc)
            TT_FAILF("%s: scheduling '%s' failed: %s", c->w.name, tex_tensor_name(c->out[o]),
                     tex_errmsg(c->w.ctx));
    }
}

/* ---------------------------------------------- for hand-written loops */

/* idx[0 .. a->ndim) of flat row-major position k of array a's shape. */
static inline void oc_unravel(const DLTensor *a, int64_t k, int64_t idx[])
{
    for (int d = a->ndim - 1; d >= 0; d--) {
        idx[d] = a->shape[d] ? k % a->shape[d] : 0;
        k = a->shape[d] ? k / a->shape[d] : 0;
    }
}

/* Element of a at point idx[0 .. m) of a broadcast shape (m >= a->ndim). */
static inline double oc_get(const DLTensor *a, int m, const int64_t idx[])
{
    int64_t k = 0;
    for (int d = 0; d < a->ndim; d++)
        k = k * a->shape[d] + (a->shape[d] == 1 ? 0 : idx[m - a->ndim + d]);
    return ops_get(a, (tex_dtype)tex_dtype_from_dlpack(a->dtype), k);
}

/* Input k's array (valid inside hand-written loops). */
static inline const DLTensor *oc_in(const oc *c, int k)
{
    return c->in_arr[k];
}

/* ------------------------------------------------------------- running */

/* Compares got (the kernel's) with want (hand, as doubles) and with the
 * oracle's ref; a failed check names the output and the flat index. */
static inline void oc_compare(const oc *c, int o, const DLTensor *got, const double *want,
                              const DLTensor *ref)
{
    tex_dtype t = tex_tensor_dtype(c->out[o]);
    double rtol, atol;
    ops_tolerance(t, &rtol, &atol);
    rtol *= c->tol[o];
    atol *= c->tol[o];
    int64_t n = ops_numel(got);
    for (int64_t k = 0; k < n; k++) {
        double g = ops_get(got, t, k), r = ops_get(ref, t, k), h = want[k];
        bool ok_h = g == h || fabs(g - h) <= atol + rtol * fabs(h);
        bool ok_r = g == r || fabs(g - r) <= atol + rtol * fabs(r);
        if (!ok_h || !ok_r) {
            TT_FAILF("%s: output '%s' at flat index %lld: kernel %.9g, hand-written %.9g, oracle "
                     "%.9g",
                     c->w.name, tex_tensor_name(c->out[o]), (long long)k, g, h, r);
            return;
        }
    }
}

/* Runs kernel k on fresh random inputs and checks every output. */
static inline void oc_check_kernel(oc *c, tex_kernel *k)
{
    int n = c->n_in + c->n_out;
    DLTensor *arr[2 * OC_MAX] = {0}, *ref[2 * OC_MAX] = {0};
    double *want = NULL;
    uint64_t rng = c->seed * 7919 + 1;
    bool ok = true;
    for (int a = 0; a < n && ok; a++) {
        tex_tensor *t = a < c->n_in ? c->in[a] : c->out[a - c->n_in];
        arr[a] = ops_array_for(&c->w, t);
        ref[a] = a < c->n_in ? arr[a] : ops_array_for(&c->w, t);
        ok = arr[a] && ref[a];
        if (ok && a < c->n_in) {
            ops_fill_random(arr[a], t->dtype, &rng);
            if (c->adjust[a])
                c->adjust[a](arr[a]);
            c->in_arr[a] = arr[a];
        } else if (ok) {
            ops_poison(arr[a], t->dtype);
            ops_poison(ref[a], t->dtype);
        }
    }
    tex_tensor *ts[2 * OC_MAX];
    memcpy(ts, c->in, sizeof(tex_tensor *) * (size_t)c->n_in);
    memcpy(ts + c->n_in, c->out, sizeof(tex_tensor *) * (size_t)c->n_out);
    if (!ok)
        TT_FAILF("%s: cannot allocate the arrays", c->w.name);
    else if (tex_kernel_call_tensors(k, n, arr) != 0)
        TT_FAILF("%s: tex_kernel_call failed: %s", c->w.name, tex_kernel_errmsg(k));
    else if (tex_eval_reference(c->w.ctx, n, ts, ref) != 0)
        TT_FAILF("%s: the oracle failed: %s", c->w.name, tex_errmsg(c->w.ctx));
    else
        for (int o = 0; o < c->n_out; o++) {
            DLTensor *got = arr[c->n_in + o];
            want = realloc(want, sizeof(double) * (size_t)(ops_numel(got) + 1));
            c->hand[o](c, c->user[o], got, want);
            oc_compare(c, o, got, want, ref[c->n_in + o]);
        }
    free(want);
    for (int a = 0; a < n; a++) {
        if (a >= c->n_in)
            tex_array_free(ref[a]);
        tex_array_free(arr[a]);
        if (a < c->n_in)
            c->in_arr[a] = NULL;
    }
}

/* Builds one kernel for every output (sched, when given, schedules it) and
 * checks it; a failure to lower or build fails the test with the message. */
static inline void oc_run(oc *c, void (*sched)(oc *c, tex_schedule *s))
{
    tex_ctx *ctx = c->w.ctx;
    if (c->n_out == 0)
        return;
    tex_schedule *s = tex_schedule_new(ctx, c->n_out, c->out);
    if (s && sched)
        sched(c, s);
    tex_tensor *params[2 * OC_MAX];
    memcpy(params, c->in, sizeof(tex_tensor *) * (size_t)c->n_in);
    memcpy(params + c->n_in, c->out, sizeof(tex_tensor *) * (size_t)c->n_out);
    tex_func *f = s ? tex_lower_tensors(s, c->w.name, c->n_in + c->n_out, params) : NULL;
    tex_kernel *k = f ? tex_build(f, "cpu") : NULL;
    if (!k) {
        TT_FAILF("%s: lowering or building failed: %s", c->w.name, tex_errmsg(ctx));
        return;
    }
    oc_check_kernel(c, k);
    tex_kernel_free(k);
}

/* Checks that the last operator call failed with code and a message
 * containing each of the NULL-terminated fragments, then clears the error. */
static inline void oc_expect_error(tex_ctx *ctx, const tex_tensor *got, int code, ...)
{
    if (got)
        TT_FAILF("expected an error (%d), the operator succeeded", code);
    if (tex_errcode(ctx) != code)
        TT_FAILF("error code %d, expected %d (message: %s)", tex_errcode(ctx), code,
                 tex_errmsg(ctx));
    va_list ap;
    va_start(ap, code);
    for (const char *frag; (frag = va_arg(ap, const char *)) != NULL;)
        if (!strstr(tex_errmsg(ctx), frag))
            TT_FAILF("message \"%s\" lacks \"%s\"", tex_errmsg(ctx), frag);
    va_end(ap);
    tex_clear_error(ctx);
}

/* The cache directory of a test program: a fresh temporary one. 0, or -1. */
static inline int oc_setup(char *dir)
{
    return mkdtemp(dir) && setenv("TEX_CACHE_DIR", dir, 1) == 0 ? 0 : -1;
}

#endif
