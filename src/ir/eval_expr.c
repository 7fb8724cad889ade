/*
 * The reference evaluator's expressions: compiling tex_expr trees into flat
 * texi_eval_node arrays, and running them.
 *
 * The value of every operator, cast and math call is computed by the shared
 * scalar semantics of eval_scalar.c (texi_eval_binary, texi_eval_math,
 * texi_eval_convert; docs/api.md, rule 2), which the interpreter of
 * lowered functions uses too. This file adds what belongs to evaluation:
 *   - select, && and || evaluate only what C would, so guards such as
 *     select(i < n, A[i], 0) or `i < n && A[i] > 0` never trip the bounds check;
 *   - an integer division or modulo by zero is an error (TEX_EINVAL) naming the
 *     tensor being computed, not a value;
 *   - every tensor read is bounds-checked against the read tensor's shape; a
 *     read outside it is an error naming the tensor and the index.
 *
 * Not here: REDUCE nodes (only ever the whole body of a compute; eval.c runs
 * them with texi_eval_combine) and lowered LOADs (rejected when compiling).
 */
#include "ir/eval.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int texi_eval_fail(texi_eval *st, int code, const char *fmt, ...)
{
    if (st->rc == 0) {
        char msg[TEXI_ERRMSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (st->deferred)
            memcpy(st->deferred, msg, sizeof msg);
        else
            texi_error(st->ctx, code, "%s", msg);
        st->rc = code;
    }
    return code;
}

/* ------------------------------------------------------------- operators */

/* Records an integer division (or modulo) by zero in node nd; kept out of
 * line so that binary() stays small enough to inline into the hot walk. */
static __attribute__((noinline, cold)) texi_eval_value
div_by_zero(texi_eval *st, const texi_eval_node *nd, texi_eval_value a)
{
    texi_eval_fail(st, TEX_EINVAL,
                   "tex_eval_reference: tensor '%s': integer %s by zero (%lld %s 0)", st->cur,
                   nd->kind == TEXI_EXPR_FLOORMOD ? "modulo" : "division", (long long)a.i,
                   texi_expr_kind_names[nd->kind]);
    return (texi_eval_value){0};
}

/* Binary operator node nd (ADD .. MAX, EQ .. GE) on a and b, of dtype t. */
static inline texi_eval_value binary(texi_eval *st, const texi_eval_node *nd, tex_dtype t,
                                     texi_eval_value a, texi_eval_value b)
{
    texi_eval_value r;
    return texi_eval_binary(nd->kind, t, a, b, &r) ? r : div_by_zero(st, nd, a);
}

/* A math call of node nd: its operands evaluated, then texi_eval_math. */
static texi_eval_value math_call(texi_eval *st, const texi_eval_node *nd)
{
    int32_t ops[3] = {nd->a, nd->b, nd->c};
    texi_eval_value v[3] = {{0}, {0}, {0}};
    tex_dtype dt[3] = {nd->arg_dtype, nd->arg_dtype, nd->arg_dtype};
    int n = 0;
    for (; n < 3 && ops[n] >= 0; n++) {
        v[n] = texi_eval_node_value(st, ops[n]);
        dt[n] = st->nodes[ops[n]].dtype;
    }
    return texi_eval_math(nd->u.math, nd->dtype, n, dt, v);
}

/* A tensor read: every index checked against the read tensor's shape. */
static texi_eval_value read_element(texi_eval *st, const texi_eval_node *nd)
{
    const texi_eval_storage *s = &st->store[nd->u.access.storage];
    int64_t off = 0;
    for (int d = 0; d < s->tensor->ndim; d++) {
        int32_t in = st->args[nd->u.access.first + d];
        int64_t ix = texi_eval_node_value(st, in).i;
        if (st->rc)
            return (texi_eval_value){0};
        if (ix < 0 || ix >= s->shape[d]) { /* a u64 index above INT64_MAX is negative here */
            texi_eval_fail(st, TEX_EINVAL,
                           "tex_eval_reference: tensor '%s' reads '%s' out of bounds: index %lld "
                           "of dimension %d is outside [0, %lld)",
                           st->cur, s->tensor->name, (long long)ix, d, (long long)s->shape[d]);
            return (texi_eval_value){0};
        }
        off += ix * s->strides[d];
    }
    if (s->done && !s->done[off])
        return texi_eval_element(st, nd->u.access.storage, off);
    return texi_eval_load(s->tensor->dtype, s->data, off);
}

/* A search of a placeholder (node a, b, c: lo, hi, value); a non-empty
 * range outside the array is an error naming it. */
static texi_eval_value search(texi_eval *st, const texi_eval_node *nd)
{
    const texi_eval_storage *s = &st->store[nd->u.access.storage];
    int64_t lo = texi_eval_node_value(st, nd->a).i, hi = texi_eval_node_value(st, nd->b).i;
    int64_t v = texi_eval_node_value(st, nd->c).i;
    if (st->rc)
        return (texi_eval_value){0};
    if (lo < hi && (lo < 0 || hi > s->size)) {
        texi_eval_fail(st, TEX_EINVAL,
                       "tex_eval_reference: tensor '%s' searches '%s' out of bounds: [%lld, %lld) "
                       "is outside [0, %lld)",
                       st->cur, s->tensor->name, (long long)lo, (long long)hi, (long long)s->size);
        return (texi_eval_value){0};
    }
    int64_t k = texi_eval_search(nd->u.access.first, s->tensor->dtype, s->data, lo, hi, v);
    return texi_eval_convert(TEX_I64, nd->dtype, (texi_eval_value){.i = k});
}

/* ------------------------------------------------------------- evaluation */

texi_eval_value texi_eval_node_value(texi_eval *st, int32_t n)
{
    const texi_eval_node *nd = &st->nodes[n];
    texi_eval_value r = {0}, a, b;
    switch (nd->kind) {
    case TEXI_EXPR_INT:
        r.i = nd->u.i;
        break;
    case TEXI_EXPR_FLOAT:
        r.f = nd->u.f;
        break;
    case TEXI_EXPR_VAR:
        r = st->env[nd->u.slot];
        break;
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
    case TEXI_EXPR_MUL:
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        a = texi_eval_node_value(st, nd->a);
        b = texi_eval_node_value(st, nd->b);
        return binary(st, nd, nd->dtype, a, b);
    case TEXI_EXPR_EQ:
    case TEXI_EXPR_NE:
    case TEXI_EXPR_LT:
    case TEXI_EXPR_LE:
    case TEXI_EXPR_GT:
    case TEXI_EXPR_GE:
        a = texi_eval_node_value(st, nd->a);
        b = texi_eval_node_value(st, nd->b);
        return binary(st, nd, nd->arg_dtype, a, b);
    case TEXI_EXPR_AND:
        r.i = texi_eval_node_value(st, nd->a).i && texi_eval_node_value(st, nd->b).i;
        break;
    case TEXI_EXPR_OR:
        r.i = texi_eval_node_value(st, nd->a).i || texi_eval_node_value(st, nd->b).i;
        break;
    case TEXI_EXPR_NOT:
        r.i = !texi_eval_node_value(st, nd->a).i;
        break;
    case TEXI_EXPR_CAST:
        return texi_eval_convert(nd->arg_dtype, nd->dtype, texi_eval_node_value(st, nd->a));
    case TEXI_EXPR_SELECT:
        return texi_eval_node_value(st, texi_eval_node_value(st, nd->a).i ? nd->b : nd->c);
    case TEXI_EXPR_CALL:
        return math_call(st, nd);
    case TEXI_EXPR_ACCESS:
        return read_element(st, nd);
    case TEXI_EXPR_SEARCH:
        return search(st, nd);
    case TEXI_EXPR_LOAD:
    case TEXI_EXPR_RAMP:
    case TEXI_EXPR_BROADCAST:
    case TEXI_EXPR_VREDUCE:
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_KIND_COUNT:
        break; /* rejected by texi_eval_compile */
    }
    return r;
}

/* ---------------------------------------------------------- compilation */

int32_t texi_eval_slot(texi_eval *st, tex_expr *v)
{
    for (int32_t i = 0; i < st->n_vars; i++)
        if (st->vars[i] == v)
            return i;
    if (st->n_vars == st->cap_vars) {
        int32_t cap = st->cap_vars ? 2 * st->cap_vars : 16;
        tex_expr **vars = realloc(st->vars, sizeof *vars * (size_t)cap);
        if (vars)
            st->vars = vars;
        texi_eval_value *env = realloc(st->env, sizeof *env * (size_t)cap);
        if (env)
            st->env = env;
        bool *bound = realloc(st->bound, sizeof *bound * (size_t)cap);
        if (bound)
            st->bound = bound;
        if (!vars || !env || !bound) {
            texi_eval_fail(st, TEX_ENOMEM, "tex_eval_reference: out of memory (variables)");
            return -1;
        }
        st->cap_vars = cap;
    }
    st->vars[st->n_vars] = v;
    st->env[st->n_vars].i = 0;
    st->bound[st->n_vars] = false;
    return st->n_vars++;
}

/* A new node of e's kind and dtype; its index, or -1 on ENOMEM. */
static int32_t node_new(texi_eval *st, const tex_expr *e)
{
    if (st->n_nodes == st->cap_nodes) {
        int32_t cap = st->cap_nodes ? 2 * st->cap_nodes : 256;
        texi_eval_node *nodes = realloc(st->nodes, sizeof *nodes * (size_t)cap);
        if (!nodes) {
            texi_eval_fail(st, TEX_ENOMEM, "tex_eval_reference: out of memory (expressions)");
            return -1;
        }
        st->nodes = nodes;
        st->cap_nodes = cap;
    }
    texi_eval_node *nd = &st->nodes[st->n_nodes];
    memset(nd, 0, sizeof *nd);
    nd->kind = e->kind;
    nd->dtype = e->dtype;
    nd->arg_dtype = e->dtype;
    nd->a = nd->b = nd->c = -1;
    return st->n_nodes++;
}

/* Reserves n entries of st->args; the first one's index, or -1 on ENOMEM. */
static int32_t args_new(texi_eval *st, int n)
{
    if (st->n_args + n > st->cap_args) {
        int32_t cap = st->cap_args ? 2 * st->cap_args : 64;
        while (cap < st->n_args + n)
            cap *= 2;
        int32_t *args = realloc(st->args, sizeof *args * (size_t)cap);
        if (!args) {
            texi_eval_fail(st, TEX_ENOMEM, "tex_eval_reference: out of memory (indices)");
            return -1;
        }
        st->args = args;
        st->cap_args = cap;
    }
    st->n_args += n;
    return st->n_args - n;
}

static int32_t storage_of(const texi_eval *st, const tex_tensor *t)
{
    for (int32_t i = 0; i < st->n_store; i++)
        if (st->store[i].tensor == t)
            return i;
    return -1;
}

static int32_t compile_var(texi_eval *st, int32_t n, tex_expr *e)
{
    int32_t slot = texi_eval_slot(st, e);
    if (slot < 0)
        return -1;
    if (!e->u.var.iter && !st->bound[slot]) {
        texi_eval_fail(st, TEX_EINVAL,
                       "tex_eval_reference: variable '%s' (used by tensor '%s') cannot be bound: "
                       "no listed tensor has a dimension that is exactly '%s'",
                       e->u.var.name, st->cur, e->u.var.name);
        return -1;
    }
    st->nodes[n].u.slot = slot;
    return n;
}

static int32_t compile_access(texi_eval *st, int32_t n, tex_expr *e)
{
    int32_t s = storage_of(st, e->u.access.tensor);
    if (s < 0) {
        texi_eval_fail(st, TEX_EINTERNAL,
                       "tex_eval_reference: tensor '%s' reads '%s', which is not in its graph",
                       st->cur, e->u.access.tensor->name);
        return -1;
    }
    int32_t first = args_new(st, e->u.access.n_idx);
    if (first < 0)
        return -1;
    for (int d = 0; d < e->u.access.n_idx; d++) {
        int32_t in = texi_eval_compile(st, e->u.access.idx[d]);
        if (in < 0)
            return -1;
        st->args[first + d] = in;
    }
    st->nodes[n].u.access.storage = s;
    st->nodes[n].u.access.first = first;
    return n;
}

static int32_t compile_operands(texi_eval *st, int32_t n, int k, tex_expr *const ops[]);

/* A search of a placeholder: its storage, op, and lo, hi, value as a, b, c. */
static int32_t compile_search(texi_eval *st, int32_t n, tex_expr *e)
{
    const tex_tensor *t = e->u.search.tensor;
    int32_t s = t ? storage_of(st, e->u.search.tensor) : -1;
    if (s < 0) {
        texi_eval_fail(st, TEX_EINTERNAL, "tex_eval_reference: tensor '%s' searches %s '%s'",
                       st->cur, t ? "a tensor not in its graph" : "the lowered buffer",
                       t ? t->name : e->u.search.buf->name);
        return -1;
    }
    st->nodes[n].u.access.storage = s;
    st->nodes[n].u.access.first = (int32_t)e->u.search.op;
    return compile_operands(st, n, 3,
                            (tex_expr *[]){e->u.search.lo, e->u.search.hi, e->u.search.value});
}

/* Compiles operands ops[0..k) into the a, b, c fields of node n. */
static int32_t compile_operands(texi_eval *st, int32_t n, int k, tex_expr *const ops[])
{
    int32_t in[3] = {-1, -1, -1};
    for (int i = 0; i < k; i++)
        if ((in[i] = texi_eval_compile(st, ops[i])) < 0)
            return -1;
    st->nodes[n].a = in[0];
    st->nodes[n].b = in[1];
    st->nodes[n].c = in[2];
    if (k > 0)
        st->nodes[n].arg_dtype = ops[0]->dtype;
    return n;
}

int32_t texi_eval_compile(texi_eval *st, tex_expr *e)
{
    int32_t n = node_new(st, e);
    if (n < 0)
        return -1;
    switch (e->kind) {
    case TEXI_EXPR_INT:
        st->nodes[n].u.i = e->u.i;
        return n;
    case TEXI_EXPR_FLOAT:
        st->nodes[n].u.f = texi_eval_convert(TEX_F64, e->dtype, (texi_eval_value){.f = e->u.f}).f;
        return n;
    case TEXI_EXPR_VAR:
        return compile_var(st, n, e);
    TEXI_CASE_BINARY:
        return compile_operands(st, n, 2, (tex_expr *[]){e->u.bin.a, e->u.bin.b});
    case TEXI_EXPR_NOT:
    case TEXI_EXPR_CAST:
        return compile_operands(st, n, 1, &e->u.un.a);
    case TEXI_EXPR_SELECT:
        return compile_operands(st, n, 3, (tex_expr *[]){e->u.sel.cond, e->u.sel.t, e->u.sel.f});
    case TEXI_EXPR_CALL:
        st->nodes[n].u.math = e->u.call.op;
        return compile_operands(st, n, e->u.call.n_args, e->u.call.args);
    case TEXI_EXPR_ACCESS:
        return compile_access(st, n, e);
    case TEXI_EXPR_SEARCH:
        return compile_search(st, n, e);
    case TEXI_EXPR_LOAD:
    case TEXI_EXPR_RAMP:
    case TEXI_EXPR_BROADCAST:
    case TEXI_EXPR_VREDUCE:
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    texi_eval_fail(st, TEX_EINVAL,
                   "tex_eval_reference: tensor '%s' contains a %s node, which only a compute "
                   "definition's top level (reduce) or a lowered function (load, ramp, "
                   "broadcast, vreduce) may hold",
                   st->cur, e->kind < TEXI_EXPR_KIND_COUNT ? texi_expr_kind_names[e->kind] : "?");
    return -1;
}
