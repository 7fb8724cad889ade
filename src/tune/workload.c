/*
 * What the tuner runs (tune.h, "workload"): the key that names a workload in
 * the tuning log, the kernel's parameters, arrays of the real shapes filled
 * with random non-zero values, and the outputs every candidate must match.
 *
 * The reference: the oracle (tex_eval_reference) when its work, the sum over
 * the computes of their points times their reduction extents, is at most
 * ORACLE_LIMIT; else the outputs of the automatic schedule's kernel, checked
 * first against the definitions at SAMPLED_POINTS elements of each output,
 * fewer once that has cost SAMPLED_WORK steps (about a second; at least the
 * first and the last element: texi_eval_sample_check, the oracle computing
 * only what those points read) — the whole of a large GEMM would keep the oracle busy for minutes.
 */
#include "tune/tune.h"

#include "ir/eval.h"
#include "util/strbuf.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ORACLE_LIMIT 3e8
#define SAMPLED_POINTS 64
#define SAMPLED_WORK 2e7

/* The constant shape of t into shape[]; false when a dimension is symbolic. */
static bool constant_shape(const tex_tensor *t, int64_t shape[])
{
    for (int d = 0; d < t->ndim; d++)
        if (!texi_expr_is_int_const(t->shape[d], &shape[d]) || shape[d] < 0)
            return false;
    return true;
}

static int64_t elements(const DLTensor *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++)
        n *= a->shape[d];
    return n;
}

/* Random non-zero values (floats in [-1, 1], integers in [-7, 7], bools 0/1). */
static void fill_random(DLTensor *a, tex_dtype t, uint64_t *rng)
{
    int64_t n = elements(a);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = texi_tune_rand(rng);
        texi_eval_value v;
        if (texi_dtype_is_float(t))
            v.f = ((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0) * 0.999 + 0.0005;
        else if (t == TEX_BOOL)
            v.i = (int64_t)(r & 1);
        else
            v.i = (int64_t)(r % 14) - 7 + ((r % 14) >= 7 ? 1 : 0);
        texi_eval_store(t, a->data, i, v);
    }
}

/* Scalar parameters in a body make the workload untunable here (the tuner
 * has no values for them). */
static int check_compute(tex_ctx *ctx, const tex_tensor *t, const char *call)
{
    tex_expr *vars[4];
    int nv = 0;
    if (t->op->kind != TEXI_OP_COMPUTE)
        return 0;
    if (texi_collect_free_vars(t->op->body, vars, &nv, 4) < 0 || nv > 0)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: compute '%s' uses the scalar parameter '%s'; tuning needs computes "
                          "without scalar parameters",
                          call, t->name, nv > 0 ? vars[0]->u.var.name : "?");
    return 0;
}

int texi_tune_workload_init(texi_tune_workload *w, tex_ctx *ctx, int n, tex_tensor *const outputs[],
                            bool on_device, const char *call)
{
    memset(w, 0, sizeof *w);
    w->ctx = ctx;
    w->on_device = on_device;
    w->n_out = n;
    w->outputs = outputs;
    int n_ops = 0;
    tex_tensor **order = texi_tensor_post_order(ctx, n, outputs, &n_ops);
    if (!order)
        return tex_errcode(ctx) ? tex_errcode(ctx) : TEX_ENOMEM;
    for (int i = 0; i < n_ops; i++) {
        TEXI_TRY(check_compute(ctx, order[i], call));
        if (order[i]->op->kind == TEXI_OP_COMPUTE)
            continue;
        if (w->n_params + n >= TEXI_TUNE_MAX_PARAMS)
            return texi_error(ctx, TEX_EINVAL, "%s: more than %d tensors to pass", call,
                              TEXI_TUNE_MAX_PARAMS);
        w->params[w->n_params++] = order[i];
    }
    for (int i = 0; i < n; i++)
        w->params[w->n_params++] = outputs[i];
    texi_tune_key(ctx, n, outputs, w->key);
    uint64_t rng = 0x7475e3ull;
    DLDevice cpu = {kDLCPU, 0};
    for (int i = 0; i < w->n_params; i++) {
        const tex_tensor *t = w->params[i];
        int64_t shape[16];
        if (t->ndim > 16 || !constant_shape(t, shape))
            return texi_error(ctx, TEX_EINVAL,
                              "%s: tensor '%s' has a symbolic shape; tuning needs the real sizes "
                              "(build the computes with constant shapes)",
                              call, t->name);
        bool out = i >= w->n_params - n;
        w->arrays[i] = tex_array_new(t->ndim, shape, t->dtype, cpu);
        if (out && w->arrays[i])
            w->want[i] = tex_array_new(t->ndim, shape, t->dtype, cpu);
        if (!w->arrays[i] || (out && !w->want[i]))
            return texi_error(ctx, TEX_ENOMEM, "%s: out of memory for tensor '%s'", call, t->name);
        if (!out)
            fill_random(w->arrays[i], t->dtype, &rng);
        w->run[i] = on_device ? tex_array_new(t->ndim, shape, t->dtype, (DLDevice){kDLCUDA, 0})
                              : w->arrays[i];
        if (!w->run[i] || (on_device && !out && tex_array_copy(w->run[i], w->arrays[i]) != 0))
            return texi_error(ctx, TEX_EDEVICE, "%s: no device memory for tensor '%s'", call,
                              t->name);
    }
    return 0;
}

int texi_tune_run(texi_tune_workload *w, tex_kernel *k, bool poison)
{
    for (int i = w->n_params - w->n_out; poison && i < w->n_params; i++) {
        DLTensor *a = w->arrays[i];
        memset(a->data, 0xff, (size_t)elements(a) * (size_t)(a->dtype.bits / 8)); /* NaN */
        if (w->on_device && tex_array_copy(w->run[i], a) != 0)
            return TEX_EDEVICE;
    }
    int rc = tex_kernel_call_tensors(k, w->n_params, w->run);
    for (int i = w->n_params - w->n_out; rc == 0 && w->on_device && i < w->n_params; i++)
        if (tex_array_copy(w->arrays[i], w->run[i]) != 0)
            rc = TEX_EDEVICE;
    return rc;
}

void texi_tune_workload_free(texi_tune_workload *w)
{
    for (int i = 0; i < w->n_params; i++) {
        if (w->on_device)
            tex_array_free(w->run[i]);
        tex_array_free(w->arrays[i]);
        tex_array_free(w->want[i]);
    }
    memset(w, 0, sizeof *w);
}

/* The oracle's work: points times reduction extents, over every compute. */
static double oracle_work(const texi_tune_workload *w)
{
    int n_ops = 0;
    tex_tensor **order = texi_tensor_post_order(w->ctx, w->n_out, w->outputs, &n_ops);
    double work = 0;
    for (int i = 0; order && i < n_ops; i++) {
        const texi_op *op = order[i]->op;
        double p = 1;
        int64_t e;
        for (int k = 0; op->kind == TEXI_OP_COMPUTE && k < op->n_axes + op->n_raxes; k++) {
            const tex_iter *iv = k < op->n_axes ? op->axes[k] : op->raxes[k - op->n_axes];
            p *= texi_expr_is_int_const(iv->extent, &e) ? (double)e : 1e9;
        }
        work += op->kind == TEXI_OP_COMPUTE ? p : 0;
    }
    return work;
}

/* Tolerance of an output of dtype t against its reference. */
static double tolerance(tex_dtype t)
{
    return !texi_dtype_is_float(t) ? 0 : t == TEX_F16 || t == TEX_BF16 ? 2e-2 : 1e-3;
}

int texi_tune_reference(texi_tune_workload *w, tex_kernel *k)
{
    int first_out = w->n_params - w->n_out;
    DLTensor *arrays[TEXI_TUNE_MAX_PARAMS];
    memcpy(arrays, w->arrays, sizeof arrays);
    for (int i = first_out; i < w->n_params; i++)
        arrays[i] = w->want[i];
    w->want_from_oracle = oracle_work(w) <= ORACLE_LIMIT;
    if (w->want_from_oracle)
        return tex_eval_reference(w->ctx, w->n_params, w->params, arrays);
    int rc = texi_tune_run(w, k, false);
    for (int i = first_out; rc == 0 && i < w->n_params; i++)
        rc = tex_array_copy(w->want[i], w->arrays[i]);
    if (rc)
        return texi_error(w->ctx, rc, "tex_tune: the automatic schedule's kernel failed: %s",
                          tex_kernel_errmsg(k));
    double tol = 0;
    for (int i = first_out; i < w->n_params; i++)
        tol = fmax(tol, tolerance(w->params[i]->dtype));
    bool ok = false;
    char why[256] = "";
    TEXI_TRY(texi_eval_sample_check(w->ctx, w->n_params, w->params, arrays, SAMPLED_POINTS,
                                    SAMPLED_WORK, 0x5eed, tol, &ok, &w->sampled_points, why,
                                    sizeof why));
    return ok ? 0
              : texi_error(w->ctx, TEX_EINTERNAL,
                           "tex_tune: the automatic schedule's kernel disagrees with the "
                           "definitions (%s); nothing to tune against",
                           why);
}

bool texi_tune_outputs_match(const texi_tune_workload *w, char *why, size_t cap)
{
    for (int i = w->n_params - w->n_out; i < w->n_params; i++) {
        const tex_tensor *t = w->params[i];
        bool fl = texi_dtype_is_float(t->dtype);
        double tol = tolerance(t->dtype);
        int64_t n = elements(w->arrays[i]);
        for (int64_t e = 0; e < n; e++) {
            texi_eval_value a = texi_eval_load(t->dtype, w->arrays[i]->data, e);
            texi_eval_value b = texi_eval_load(t->dtype, w->want[i]->data, e);
            bool ok = fl ? fabs(a.f - b.f) <= tol * fmax(1.0, fabs(b.f)) : a.i == b.i;
            if (!ok) {
                snprintf(why, cap, "output '%s' element %lld: %g, expected %g", t->name,
                         (long long)e, fl ? a.f : (double)a.i, fl ? b.f : (double)b.i);
                return false;
            }
        }
    }
    return true;
}
