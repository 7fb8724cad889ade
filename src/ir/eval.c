/*
 * tex_eval_reference and tex_eval_reference_ex: the oracle. It computes
 * compute tensors straight from
 * their definitions, with no schedule, on host arrays; every schedule, pass
 * and backend is judged against it, so it favours plain, checkable behaviour
 * over speed (it still avoids per-element allocation; eval.h says how).
 *
 * One call runs in five steps, each of which may fail with nothing written
 * but the outputs of computes that already ran:
 *   1. Check the list: a context, n >= 1, no NULL entries, tensors of this
 *      context listed once, host arrays whose dtype, ndim, strides (NULL or
 *      compact row-major) and shapes fit their tensors. tex_eval_reference_ex
 *      also takes var parameters with scalar values: each a free tex_var of
 *      this context, listed once, its value converted to the var's dtype
 *      as a kernel call converts it (texi_eval_scalar_arg).
 *   2. Order the graph (texi_tensor_post_order): producers first. Every
 *      placeholder that a listed compute reads must be listed; computes that
 *      are not listed get temporaries.
 *   3. Bind the var parameters' values, then symbolic sizes: a tex_var that
 *      is a whole dimension of a listed tensor takes that array's extent (all
 *      such dimensions, and the var's value when it is a parameter, must
 *      agree).
 *   4. Evaluate every tensor's shape with those values; a listed array must
 *      match it exactly. A variable that no shape binds is an error as soon
 *      as an expression needs it.
 *   5. Compute each compute in order: for every output point (row-major over
 *      its axes) evaluate the body; a reduction starts from its identity and
 *      folds every point of its reduce axes (row-major, in the REDUCE node's
 *      axis order) where its condition holds, in the node's dtype. A large
 *      compute's points are shared out among threads (fill_shares), each
 *      point still computed this way, so threads change no bit.
 * Temporaries and the compiled expressions are freed on every path.
 *
 * Not done here: anything a schedule decides (layouts other than compact
 * row-major, caching, vectors), device memory.
 */
#include "ir/dlpack.h"
#include "ir/eval.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CALL "tex_eval_reference"

/* --------------------------------------------------------- step 1: checks */

static void dlpack_name(DLDataType d, char *buf, size_t size)
{
    int t = tex_dtype_from_dlpack(d);
    if (t >= 0)
        snprintf(buf, size, "%s", tex_dtype_name((tex_dtype)t));
    else
        snprintf(buf, size, "DLPack {code %d, bits %d, lanes %d}", d.code, d.bits, d.lanes);
}

static int check_array(tex_ctx *ctx, const char *call, const tex_tensor *t, const DLTensor *a)
{
    if (a->device.device_type != kDLCPU)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: the array of tensor '%s' is not in host memory "
                          "(device type %d); the reference evaluator reads kDLCPU arrays only",
                          call, t->name, (int)a->device.device_type);
    DLDataType want = tex_dtype_to_dlpack(t->dtype);
    if (a->dtype.code != want.code || a->dtype.bits != want.bits || a->dtype.lanes != want.lanes) {
        char got[64];
        dlpack_name(a->dtype, got, sizeof got);
        return texi_error(ctx, TEX_ETYPE, "%s: tensor '%s' is %s but its array holds %s", call,
                          t->name, tex_dtype_name(t->dtype), got);
    }
    if (a->ndim != t->ndim)
        return texi_error(ctx, TEX_EINVAL, "%s: tensor '%s' has %d dimensions but its array %d",
                          call, t->name, t->ndim, a->ndim);
    if (a->ndim > 0 && !a->shape)
        return texi_error(ctx, TEX_EINVAL, "%s: the array of tensor '%s' has a NULL shape", call,
                          t->name);
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] < 0)
            return texi_error(ctx, TEX_EINVAL,
                              "%s: the array of tensor '%s' has a negative "
                              "extent (%lld) in dimension %d",
                              call, t->name, (long long)a->shape[d], d);
    if (!texi_array_is_compact(a))
        return texi_error(ctx, TEX_EINVAL,
                          "%s: the array of tensor '%s' has strides that are "
                          "not compact row-major (only those, or NULL, are accepted)",
                          call, t->name);
    if (!a->data && texi_array_numel(a->ndim, a->shape) != 0)
        return texi_error(ctx, TEX_EINVAL, "%s: the array of tensor '%s' has NULL data", call,
                          t->name);
    return 0;
}

int texi_eval_check_list(tex_ctx *ctx, const char *call, int n, tex_tensor *const tensors[],
                         DLTensor *const arrays[])
{
    if (n < 1)
        return texi_error(ctx, TEX_EINVAL, "%s: needs at least one tensor (n = %d)", call, n);
    if (!tensors || !arrays)
        return texi_error(ctx, TEX_EMISUSE, "%s: the %s list is NULL", call,
                          tensors ? "array" : "tensor");
    for (int i = 0; i < n; i++) {
        tex_tensor *t = tensors[i];
        if (!t)
            return texi_error(ctx, TEX_EMISUSE, "%s: tensor %d is NULL", call, i);
        if (t->ctx != ctx)
            return texi_error(ctx, TEX_EMISUSE, "%s: tensor '%s' comes from another context", call,
                              t->name);
        if (!arrays[i])
            return texi_error(ctx, TEX_EMISUSE, "%s: the array of tensor '%s' is NULL", call,
                              t->name);
        for (int j = 0; j < i; j++)
            if (tensors[j] == t)
                return texi_error(ctx, TEX_EINVAL, "%s: tensor '%s' is listed twice", call,
                                  t->name);
        TEXI_TRY(check_array(ctx, call, t, arrays[i]));
    }
    return 0;
}

/* ------------------------------------------------------ step 2: the graph */

static int listed_index(int n, tex_tensor *const tensors[], const tex_tensor *t)
{
    for (int i = 0; i < n; i++)
        if (tensors[i] == t)
            return i;
    return -1;
}

/* The name of a compute in st->store that reads t (for messages). */
static const char *reader_of(const texi_eval *st, const tex_tensor *t)
{
    for (int32_t k = 0; k < st->n_store; k++) {
        const texi_op *op = st->store[k].tensor->op;
        for (int i = 0; i < op->n_inputs; i++)
            if (op->inputs[i] == t)
                return st->store[k].tensor->name;
    }
    return "?";
}

static int plan(texi_eval *st, int n, tex_tensor *const tensors[])
{
    int m = 0;
    tex_tensor **order = texi_tensor_post_order(st->ctx, n, tensors, &m);
    if (!order)
        return st->rc = TEX_ENOMEM;
    st->store = calloc((size_t)m, sizeof *st->store);
    if (!st->store)
        return texi_eval_fail(st, TEX_ENOMEM, CALL ": out of memory (tensor list)");
    st->n_store = m;
    for (int k = 0; k < m; k++) {
        texi_eval_storage *s = &st->store[k];
        s->tensor = order[k];
        s->listed = listed_index(n, tensors, order[k]);
        s->shape = calloc((size_t)order[k]->ndim * 2 + 1, sizeof *s->shape);
        if (!s->shape)
            return texi_eval_fail(st, TEX_ENOMEM, CALL ": out of memory (shapes)");
        s->strides = s->shape + order[k]->ndim;
    }
    for (int k = 0; k < m; k++)
        if (st->store[k].listed < 0 && st->store[k].tensor->op->kind == TEXI_OP_PLACEHOLDER)
            return texi_eval_fail(st, TEX_EINVAL,
                                  CALL ": placeholder '%s' (read by '%s') is not "
                                       "among the listed tensors; list it with its input array",
                                  st->store[k].tensor->name, reader_of(st, st->store[k].tensor));
    return 0;
}

/* ---------------------------------------------------- step 3: size binding */

static int bind_sizes(texi_eval *st, int n, tex_tensor *const tensors[], DLTensor *const arrays[])
{
    for (int i = 0; i < n; i++) {
        for (int d = 0; d < tensors[i]->ndim; d++) {
            tex_expr *e = tensors[i]->shape[d];
            if (e->kind != TEXI_EXPR_VAR || e->u.var.iter)
                continue;
            int32_t slot = texi_eval_slot(st, e);
            if (slot < 0)
                return st->rc;
            int64_t got = arrays[i]->shape[d];
            texi_eval_value v = texi_eval_convert(TEX_I64, e->dtype, (texi_eval_value){.i = got});
            if (st->bound[slot] && st->env[slot].i != got)
                return texi_eval_fail(
                    st, TEX_EINVAL,
                    CALL ": tensor '%s', dimension %d: size "
                         "'%s' is %lld (from an earlier array or its value), but this array "
                         "has %lld",
                    tensors[i]->name, d, e->u.var.name, (long long)st->env[slot].i, (long long)got);
            if (v.i != got)
                return texi_eval_fail(st, TEX_EINVAL,
                                      CALL ": tensor '%s', dimension %d: extent "
                                           "%lld does not fit size '%s' of type %s",
                                      tensors[i]->name, d, (long long)got, e->u.var.name,
                                      tex_dtype_name(e->dtype));
            st->env[slot].i = got;
            st->bound[slot] = true;
        }
    }
    return 0;
}

/* ------------------------------------------------------ step 4: the shapes */

/* The value of an integer expression over bound sizes (shapes, extents, mins). */
static int eval_int(texi_eval *st, tex_expr *e, int64_t *out)
{
    if (!e) {
        *out = 0;
        return 0;
    }
    int32_t root = texi_eval_compile(st, e);
    if (root < 0)
        return st->rc;
    texi_eval_value v = texi_eval_node_value(st, root);
    *out = v.i;
    return st->rc;
}

static int shape_storage(texi_eval *st, texi_eval_storage *s, DLTensor *const arrays[])
{
    tex_tensor *t = s->tensor;
    st->cur = t->name;
    for (int d = 0; d < t->ndim; d++) {
        TEXI_TRY(eval_int(st, t->shape[d], &s->shape[d]));
        if (s->shape[d] < 0)
            return texi_eval_fail(st, TEX_EINVAL,
                                  CALL ": tensor '%s', dimension %d: the extent "
                                       "evaluates to %lld",
                                  t->name, d, (long long)s->shape[d]);
        if (s->listed >= 0 && arrays[s->listed]->shape[d] != s->shape[d])
            return texi_eval_fail(st, TEX_EINVAL,
                                  CALL ": tensor '%s', dimension %d: expected "
                                       "extent %lld, got %lld",
                                  t->name, d, (long long)s->shape[d],
                                  (long long)arrays[s->listed]->shape[d]);
    }
    int64_t size = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        s->strides[d] = size;
        if (s->shape[d] && size > INT64_MAX / s->shape[d])
            return texi_eval_fail(st, TEX_EINVAL, CALL ": tensor '%s' has too many elements",
                                  t->name);
        size *= s->shape[d];
    }
    s->size = size;
    return 0;
}

/* Points storage s at its array, or at a new temporary when not listed. */
static int place_storage(texi_eval *st, texi_eval_storage *s, DLTensor *const arrays[])
{
    if (s->listed >= 0) {
        DLTensor *a = arrays[s->listed];
        s->data = a->data ? (char *)a->data + a->byte_offset : NULL;
        return 0;
    }
    size_t bytes = (size_t)tex_dtype_bytes(s->tensor->dtype);
    if (s->size == 0)
        return 0;
    if ((uint64_t)s->size > SIZE_MAX / bytes)
        return texi_eval_fail(st, TEX_ENOMEM, CALL ": intermediate tensor '%s' is too large",
                              s->tensor->name);
    s->data = calloc((size_t)s->size, bytes);
    if (!s->data)
        return texi_eval_fail(st, TEX_ENOMEM,
                              CALL ": out of memory for intermediate tensor '%s' "
                                   "(%lld elements)",
                              s->tensor->name, (long long)s->size);
    s->owned = true;
    return 0;
}

/* ------------------------------------------------------ step 5: computing */

/* Row-major iteration over a list of axes; env slots hold the axis values.
 * A ragged axis (texi_ragged_axis) has its extent compiled and evaluated at
 * each nest_first, over the enclosing axes' current values. */
typedef struct {
    int n;
    int32_t *slot, *ragged; /* ragged: the extent's node, or -1 */
    int64_t *min, *extent, *idx;
} loop_nest;

static int nest_init(texi_eval *st, loop_nest *ln, int n, tex_iter *const iters[])
{
    ln->n = n;
    ln->slot = malloc(sizeof *ln->slot * (size_t)(2 * n + 1));
    ln->min = malloc(sizeof *ln->min * (size_t)(3 * n + 1));
    if (!ln->slot || !ln->min)
        return texi_eval_fail(st, TEX_ENOMEM, CALL ": out of memory (loops)");
    ln->ragged = ln->slot + n;
    ln->extent = ln->min + n;
    ln->idx = ln->extent + n;
    for (int i = 0; i < n; i++) {
        if ((ln->slot[i] = texi_eval_slot(st, iters[i]->var)) < 0)
            return st->rc;
        TEXI_TRY(eval_int(st, iters[i]->min, &ln->min[i]));
        ln->ragged[i] = -1;
        if (!texi_iter_is_ragged(iters[i]))
            TEXI_TRY(eval_int(st, iters[i]->extent, &ln->extent[i]));
        else if ((ln->ragged[i] = texi_eval_compile(st, iters[i]->extent)) < 0)
            return st->rc;
    }
    return 0;
}

static void nest_free(loop_nest *ln)
{
    free(ln->slot);
    free(ln->min);
}

/* Sets every axis to its first value; false when the nest is empty. */
static bool nest_first(texi_eval *st, const loop_nest *ln, texi_eval_value *env)
{
    for (int i = 0; i < ln->n; i++) {
        if (ln->ragged[i] >= 0)
            ln->extent[i] = texi_eval_node_value(st, ln->ragged[i]).i;
        if (ln->extent[i] <= 0)
            return false;
        ln->idx[i] = 0;
        env[ln->slot[i]].i = ln->min[i];
    }
    return true;
}

/* Advances to the next point (last axis fastest); false after the last one. */
static bool nest_next(const loop_nest *ln, texi_eval_value *env)
{
    for (int i = ln->n - 1; i >= 0; i--) {
        if (++ln->idx[i] < ln->extent[i]) {
            env[ln->slot[i]].i = ln->min[i] + ln->idx[i];
            return true;
        }
        ln->idx[i] = 0;
        env[ln->slot[i]].i = ln->min[i];
    }
    return false;
}

/* A compiled compute body. */
typedef struct {
    int32_t body;        /* the element, or the reduction's body */
    int32_t cond;        /* the reduction's condition, or -1 */
    tex_dtype body_type; /* dtype of the compiled body */
    tex_dtype dtype;     /* dtype of the element (the reduction's) */
    bool reduce;
    enum texi_reduce_op op;
    loop_nest raxes;
} compiled_body;

/* One reduction result at the current output point. */
static texi_eval_value reduce_point(texi_eval *st, const compiled_body *cb)
{
    texi_eval_value acc = texi_eval_identity(cb->op, cb->dtype);
    if (!nest_first(st, &cb->raxes, st->env))
        return acc;
    do {
        if (cb->cond >= 0 && !texi_eval_node_value(st, cb->cond).i)
            continue;
        texi_eval_value v = texi_eval_node_value(st, cb->body);
        st->work++;
        if (cb->body_type != cb->dtype)
            v = texi_eval_convert(cb->body_type, cb->dtype, v);
        acc = texi_eval_combine(cb->op, cb->dtype, acc, v);
    } while (!st->rc && nest_next(&cb->raxes, st->env));
    return acc;
}

static int compile_body(texi_eval *st, tex_expr *body, compiled_body *cb)
{
    cb->dtype = body->dtype;
    cb->cond = -1;
    if (body->kind != TEXI_EXPR_REDUCE) {
        cb->body_type = body->dtype;
        cb->body = texi_eval_compile(st, body);
        return cb->body < 0 ? st->rc : 0;
    }
    cb->reduce = true;
    cb->op = body->u.red.op;
    cb->body_type = body->u.red.body->dtype;
    TEXI_TRY(nest_init(st, &cb->raxes, body->u.red.n_axes, body->u.red.axes));
    if ((cb->body = texi_eval_compile(st, body->u.red.body)) < 0)
        return st->rc;
    if (body->u.red.cond && (cb->cond = texi_eval_compile(st, body->u.red.cond)) < 0)
        return st->rc;
    return 0;
}

/* The storage of tensor t in this evaluation (it is there: an input of a
 * compute or the group of a scatter part). */
static texi_eval_storage *storage_of(texi_eval *st, const tex_tensor *t)
{
    for (int32_t k = 0; k < st->n_store; k++)
        if (st->store[k].tensor == t)
            return &st->store[k];
    return NULL;
}

/* Where point `flat` of storage s lands: s itself, or for a scatter part
 * (ir/scatter.c) its group's storage at row rows[flat / row size]; a row id
 * outside the group's rows fails. */
static texi_eval_storage *destination(texi_eval *st, texi_eval_storage *s, int64_t *flat)
{
    const texi_op *op = s->tensor->op;
    if (!op->scatter_rows)
        return s;
    texi_eval_storage *g = storage_of(st, op->scatter_into), *r = storage_of(st, op->scatter_rows);
    int64_t row_size = s->shape[0] ? s->size / s->shape[0] : 1;
    int64_t row = texi_eval_load(TEX_I32, r->data, *flat / row_size).i;
    if (row < 0 || row >= g->shape[0]) {
        texi_eval_fail(st, TEX_EINVAL,
                       CALL ": '%s' scatters its row %lld to row %lld of '%s', which has %lld",
                       s->tensor->name, (long long)(*flat / row_size), (long long)row,
                       g->tensor->name, (long long)g->shape[0]);
        return NULL;
    }
    *flat = row * row_size + *flat % row_size;
    return g;
}

/* Computes the points of s's nest from the one its cursor is at (row-major
 * number flat) on: count of them, or all the rest when count < 0. */
static void fill_points(texi_eval *st, texi_eval_storage *s, const compiled_body *cb,
                        const loop_nest *axes, int64_t flat, int64_t count)
{
    tex_dtype t = s->tensor->dtype;
    do {
        texi_eval_value v = cb->reduce ? reduce_point(st, cb) : texi_eval_node_value(st, cb->body);
        if (cb->dtype != t)
            v = texi_eval_convert(cb->dtype, t, v);
        int64_t at = flat++;
        texi_eval_storage *d = destination(st, s, &at);
        if (d)
            texi_eval_store(t, d->data, at, v);
    } while (!st->rc && --count != 0 && nest_next(axes, st->env));
}

/* ------------------------------------------- large computes on threads */

/* A compute is split into shares of at least this much work (points times
 * reduction steps) each, one thread per share. */
#define SHARE_MIN_WORK (1 << 16)
#define MAX_SHARES 64

/* One thread's share of a compute: points [first, first + count) of its
 * nest, with its own copy of the nests' cursors and of the environment, so
 * that it writes nothing another thread reads but its output points. */
typedef struct {
    texi_eval st;
    texi_eval_storage *s;
    compiled_body cb;
    loop_nest axes;
    int64_t first, count;
    char msg[TEXI_ERRMSG_MAX];
} eval_share;

/* The thread count for the oracle: TEX_NUM_THREADS when it is a positive
 * number, else the online processors. */
static int oracle_threads(void)
{
    const char *env = getenv("TEX_NUM_THREADS");
    long n = env && atol(env) > 0 ? atol(env) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_SHARES ? MAX_SHARES : (int)n;
}

/* Points of a nest with no ragged axis (-1 with one, 0 when one is empty);
 * steps is their number times `per_point`, saturating. */
static int64_t nest_points(const loop_nest *ln, int64_t per_point, int64_t *steps)
{
    int64_t points = 1;
    *steps = per_point;
    for (int i = 0; i < ln->n; i++) {
        if (ln->ragged[i] >= 0)
            return -1;
        if (ln->extent[i] <= 0)
            return 0;
        points *= ln->extent[i];
        *steps = *steps > INT64_MAX / ln->extent[i] ? INT64_MAX : *steps * ln->extent[i];
    }
    return points;
}

/* dst: a copy of nest src with cursors of its own. */
static bool nest_copy(loop_nest *dst, const loop_nest *src)
{
    int n = src->n;
    *dst = (loop_nest){.n = n};
    if (!src->slot)
        return true; /* the reduce nest of a compute that reduces nothing */
    dst->slot = malloc(sizeof *dst->slot * (size_t)(2 * n + 1));
    dst->min = malloc(sizeof *dst->min * (size_t)(3 * n + 1));
    if (!dst->slot || !dst->min)
        return false;
    memcpy(dst->slot, src->slot, sizeof *dst->slot * (size_t)(2 * n + 1));
    memcpy(dst->min, src->min, sizeof *dst->min * (size_t)(3 * n + 1));
    dst->ragged = dst->slot + n;
    dst->extent = dst->min + n;
    dst->idx = dst->extent + n;
    return true;
}

/* Puts the cursor of ln (no ragged axis) on point flat. */
static void nest_seek(const loop_nest *ln, texi_eval_value *env, int64_t flat)
{
    for (int i = ln->n - 1; i >= 0; i--) {
        ln->idx[i] = flat % ln->extent[i];
        flat /= ln->extent[i];
        env[ln->slot[i]].i = ln->min[i] + ln->idx[i];
    }
}

static void *run_share(void *arg)
{
    eval_share *sh = arg;
    nest_seek(&sh->axes, sh->st.env, sh->first);
    fill_points(&sh->st, sh->s, &sh->cb, &sh->axes, sh->first, sh->count);
    return NULL;
}

/* Sets up share k of n over points [0, points): copies of st with the
 * environment, nests and error of its own. */
static bool share_init(eval_share *sh, texi_eval *st, texi_eval_storage *s, const compiled_body *cb,
                       const loop_nest *axes, int k, int n, int64_t points)
{
    sh->st = *st;
    sh->st.deferred = sh->msg;
    sh->st.work = 0;
    sh->s = s;
    sh->cb = *cb;
    sh->first = points / n * k + (k < points % n ? k : points % n);
    sh->count = points / n + (k < points % n);
    sh->st.env = malloc(sizeof *sh->st.env * (size_t)(st->n_vars + 1));
    if (sh->st.env)
        memcpy(sh->st.env, st->env, sizeof *sh->st.env * (size_t)st->n_vars);
    bool ok = sh->st.env != NULL;
    ok = nest_copy(&sh->axes, axes) && ok;
    return nest_copy(&sh->cb.raxes, &cb->raxes) && ok;
}

/* Computes the points of s (a nest of `points` points, no ragged axis, not
 * a scatter) in n shares on n - 1 threads and the calling one; a thread
 * that cannot start leaves its share to the calling thread. Each point is
 * computed as the sequential evaluation computes it, so the result is the
 * same bit for bit; the error reported is the first point's that fails. */
static int fill_shares(texi_eval *st, texi_eval_storage *s, const compiled_body *cb,
                       const loop_nest *axes, int64_t points, int n)
{
    eval_share *sh = calloc((size_t)n, sizeof *sh);
    pthread_t tid[MAX_SHARES];
    bool started[MAX_SHARES] = {false};
    bool ok = sh != NULL;
    for (int k = 0; ok && k < n; k++)
        ok = share_init(&sh[k], st, s, cb, axes, k, n, points);
    for (int k = 1; ok && k < n; k++)
        started[k] = pthread_create(&tid[k], NULL, run_share, &sh[k]) == 0;
    for (int k = 0; ok && k < n; k++) {
        if (started[k])
            pthread_join(tid[k], NULL);
        else
            run_share(&sh[k]);
    }
    int rc = ok ? 0 : texi_eval_fail(st, TEX_ENOMEM, CALL ": out of memory (threads)");
    for (int k = 0; sh && k < n; k++) {
        if (!rc && sh[k].st.rc)
            rc = texi_error(st->ctx, sh[k].st.rc, "%s", sh[k].msg);
        st->work += sh[k].st.work;
        free(sh[k].st.env);
        nest_free(&sh[k].axes);
        nest_free(&sh[k].cb.raxes);
    }
    free(sh);
    st->rc = st->rc ? st->rc : rc;
    return rc;
}

/* Fills storage s from its compute definition: on threads when it is large
 * enough and its points can be numbered up front (no ragged axis, no
 * scatter), else in one pass. */
static int run_compute(texi_eval *st, texi_eval_storage *s)
{
    const texi_op *op = s->tensor->op;
    st->cur = s->tensor->name;
    compiled_body cb = {0};
    loop_nest axes = {0};
    int rc = nest_init(st, &axes, op->n_axes, op->axes);
    if (rc == 0)
        rc = compile_body(st, op->body, &cb);
    int64_t steps = 0, per_point = 1;
    if (rc == 0 && cb.reduce)
        nest_points(&cb.raxes, 1, &per_point); /* ragged reduce axes count as one step */
    int64_t points = rc == 0 ? nest_points(&axes, per_point, &steps) : -1;
    int64_t shares = steps / SHARE_MIN_WORK < points ? steps / SHARE_MIN_WORK : points;
    int threads = oracle_threads();
    shares = shares < threads ? shares : threads;
    if (rc == 0 && shares > 1 && !op->scatter_rows) {
        rc = fill_shares(st, s, &cb, &axes, points, (int)shares);
    } else if (rc == 0 && nest_first(st, &axes, st->env)) {
        fill_points(st, s, &cb, &axes, 0, -1);
        rc = st->rc;
    }
    nest_free(&axes);
    nest_free(&cb.raxes);
    return rc;
}

/* ---------------------------------------------- the sampled evaluation */

/* A compute's definition compiled once for element-by-element evaluation,
 * with room to save the variable slots it writes. */
struct texi_eval_lazy {
    loop_nest axes;
    compiled_body cb;
    texi_eval_value *saved; /* axes, then reduce axes */
};

/* Compiles the definition of compute storage s for texi_eval_element and
 * gives it a zeroed temporary and its map of computed elements. */
static int make_lazy(texi_eval *st, texi_eval_storage *s)
{
    const texi_op *op = s->tensor->op;
    st->cur = s->tensor->name;
    struct texi_eval_lazy *lz = calloc(1, sizeof *lz);
    if (!lz)
        return texi_eval_fail(st, TEX_ENOMEM, CALL ": out of memory (sampled evaluation)");
    s->lazy = lz;
    TEXI_TRY(nest_init(st, &lz->axes, op->n_axes, op->axes));
    for (int d = 0; d < op->n_axes; d++)
        if (lz->axes.ragged[d] >= 0)
            return texi_eval_fail(st, TEX_EUNAVAILABLE,
                                  CALL ": tensor '%s': a sampled evaluation cannot index the "
                                       "ragged axis '%s'",
                                  s->tensor->name, op->axes[d]->var->u.var.name);
    TEXI_TRY(compile_body(st, op->body, &lz->cb));
    lz->saved = malloc(sizeof *lz->saved * (size_t)(op->n_axes + lz->cb.raxes.n + 1));
    s->done = s->size ? calloc((size_t)s->size, 1) : NULL;
    if (!lz->saved || (s->size && !s->done))
        return texi_eval_fail(st, TEX_ENOMEM, CALL ": out of memory (sampled evaluation)");
    s->listed = -1; /* never the caller's array: the array holds what is checked */
    return 0;
}

texi_eval_value texi_eval_element(texi_eval *st, int32_t k, int64_t off)
{
    texi_eval_storage *s = &st->store[k];
    struct texi_eval_lazy *lz = s->lazy;
    tex_dtype t = s->tensor->dtype;
    const char *cur = st->cur;
    int na = lz->axes.n, nr = lz->cb.raxes.n;
    /* A reader in the middle of its loops may share a variable with this
     * definition (one reduce axis used by two computes): save, then restore. */
    for (int i = 0; i < na; i++)
        lz->saved[i] = st->env[lz->axes.slot[i]];
    for (int i = 0; i < nr; i++)
        lz->saved[na + i] = st->env[lz->cb.raxes.slot[i]];
    int64_t rest = off;
    for (int d = na - 1; d >= 0; d--) {
        int64_t e = lz->axes.extent[d];
        st->env[lz->axes.slot[d]].i = lz->axes.min[d] + (e ? rest % e : 0);
        rest = e ? rest / e : 0;
    }
    st->cur = s->tensor->name;
    texi_eval_value v =
        lz->cb.reduce ? reduce_point(st, &lz->cb) : texi_eval_node_value(st, lz->cb.body);
    if (lz->cb.dtype != t)
        v = texi_eval_convert(lz->cb.dtype, t, v);
    texi_eval_store(t, s->data, off, v);
    s->done[off] = !st->rc;
    st->work++;
    for (int i = 0; i < na; i++)
        st->env[lz->axes.slot[i]] = lz->saved[i];
    for (int i = 0; i < nr; i++)
        st->env[lz->cb.raxes.slot[i]] = lz->saved[na + i];
    st->cur = cur;
    return texi_eval_load(t, s->data, off);
}

/* ------------------------------------------------------------ the entry */

int texi_eval_prepare(texi_eval *st, int n, tex_tensor *const tensors[], DLTensor *const arrays[],
                      bool sampled)
{
    TEXI_TRY(plan(st, n, tensors));
    TEXI_TRY(bind_sizes(st, n, tensors, arrays));
    for (int32_t k = 0; k < st->n_store; k++) {
        texi_eval_storage *s = &st->store[k];
        TEXI_TRY(shape_storage(st, s, arrays));
        if (sampled && s->tensor->op->kind == TEXI_OP_COMPUTE)
            TEXI_TRY(make_lazy(st, s));
        TEXI_TRY(place_storage(st, s, arrays));
    }
    return 0;
}

void texi_eval_release(texi_eval *st)
{
    for (int32_t k = 0; k < st->n_store; k++) {
        texi_eval_storage *s = &st->store[k];
        if (s->owned)
            free(s->data);
        free(s->shape);
        free(s->done);
        if (s->lazy) {
            nest_free(&s->lazy->axes);
            nest_free(&s->lazy->cb.raxes);
            free(s->lazy->saved);
            free(s->lazy);
        }
    }
    free(st->store);
    free(st->nodes);
    free(st->args);
    free(st->vars);
    free(st->env);
    free(st->bound);
}

/* The var parameters of tex_eval_reference_ex with their converted values. */
typedef struct {
    int n;
    tex_expr **vars;
    texi_eval_value *values;
} scalar_list;

static int bind_scalars(texi_eval *st, const scalar_list *sc)
{
    for (int i = 0; sc && i < sc->n; i++) {
        int32_t slot = texi_eval_slot(st, sc->vars[i]);
        if (slot < 0)
            return st->rc;
        st->env[slot] = sc->values[i];
        st->bound[slot] = true;
    }
    return 0;
}

static int evaluate(texi_eval *st, int n, tex_tensor *const tensors[], DLTensor *const arrays[],
                    const scalar_list *sc)
{
    TEXI_TRY(bind_scalars(st, sc));
    TEXI_TRY(texi_eval_prepare(st, n, tensors, arrays, false));
    for (int32_t k = 0; k < st->n_store; k++)
        if (st->store[k].tensor->op->kind == TEXI_OP_COMPUTE)
            TEXI_TRY(run_compute(st, &st->store[k]));
    return 0;
}

int tex_eval_reference(tex_ctx *ctx, int n, tex_tensor *const tensors[], DLTensor *const arrays[])
{
    if (!ctx)
        return TEX_EMISUSE;
    TEXI_TRY(texi_eval_check_list(ctx, CALL, n, tensors, arrays));
    texi_eval st = {.ctx = ctx, .cur = "?"};
    int rc = evaluate(&st, n, tensors, arrays, NULL);
    texi_eval_release(&st);
    return rc;
}

/* Messages of the evaluation itself (evaluate) name tex_eval_reference. */
#define CALL_EX "tex_eval_reference_ex"

/* Parameter i of tex_eval_reference_ex, a var: checked and converted into
 * the next entry of sc. */
static int add_scalar(tex_ctx *ctx, int i, const tex_param params[], const tex_value *value,
                      scalar_list *sc)
{
    tex_expr *v = params[i].v;
    char why[160];
    if (!v)
        return texi_error(ctx, TEX_EMISUSE, CALL_EX ": parameter %d is a NULL variable", i);
    if (v->ctx != ctx)
        return texi_error(ctx, TEX_EMISUSE, CALL_EX ": parameter %d belongs to another context", i);
    if (v->kind != TEXI_EXPR_VAR || v->u.var.iter)
        return texi_error(ctx, TEX_EINVAL,
                          CALL_EX ": parameter %d must be a tex_var, not an expression or an axis",
                          i);
    for (int j = 0; j < sc->n; j++)
        if (sc->vars[j] == v)
            return texi_error(ctx, TEX_EINVAL, CALL_EX ": variable '%s' is listed twice",
                              v->u.var.name);
    if (texi_eval_scalar_arg(v->dtype, value, &sc->values[sc->n], why, sizeof why) != 0)
        return texi_error(ctx, TEX_EINVAL, CALL_EX ": value %d ('%s'): %s", i, v->u.var.name, why);
    sc->vars[sc->n++] = v;
    return 0;
}

/* Splits params/values into the tensor list of tex_eval_reference and sc. */
static int split_params(tex_ctx *ctx, int n, const tex_param params[], const tex_value values[],
                        tex_tensor **tensors, DLTensor **arrays, int *nt, scalar_list *sc)
{
    for (int i = 0; i < n; i++) {
        if (params[i].kind == TEX_ARG_VAR) {
            TEXI_TRY(add_scalar(ctx, i, params, &values[i], sc));
            continue;
        }
        if (params[i].kind != TEX_ARG_TENSOR)
            return texi_error(ctx, TEX_EINVAL, CALL_EX ": parameter %d has an unknown kind %d", i,
                              (int)params[i].kind);
        if (values[i].kind != TEX_VAL_TENSOR)
            return texi_error(ctx, TEX_EINVAL,
                              CALL_EX ": value %d (tensor '%s') must be an array (TEX_VAL_TENSOR)",
                              i, params[i].t ? params[i].t->name : "?");
        tensors[*nt] = params[i].t;
        arrays[(*nt)++] = values[i].t;
    }
    return 0;
}

int tex_eval_reference_ex(tex_ctx *ctx, int n, const tex_param params[], const tex_value values[])
{
    if (!ctx)
        return TEX_EMISUSE;
    if (n > 0 && (!params || !values))
        return texi_error(ctx, TEX_EMISUSE, CALL_EX ": the %s list is NULL",
                          params ? "value" : "parameter");
    size_t cap = n > 0 ? (size_t)n : 1;
    tex_tensor **tensors = malloc(cap * sizeof *tensors);
    DLTensor **arrays = malloc(cap * sizeof *arrays);
    scalar_list sc = {0, malloc(cap * sizeof *sc.vars), malloc(cap * sizeof *sc.values)};
    int nt = 0, rc = 0;
    if (!tensors || !arrays || !sc.vars || !sc.values)
        rc = texi_error(ctx, TEX_ENOMEM, CALL_EX ": out of memory");
    if (rc == 0)
        rc = split_params(ctx, n, params, values, tensors, arrays, &nt, &sc);
    if (rc == 0)
        rc = texi_eval_check_list(ctx, CALL_EX, nt, tensors, arrays);
    if (rc == 0) {
        texi_eval st = {.ctx = ctx, .cur = "?"};
        rc = evaluate(&st, nt, tensors, arrays, &sc);
        texi_eval_release(&st);
    }
    free(tensors);
    free(arrays);
    free(sc.vars);
    free(sc.values);
    return rc;
}
