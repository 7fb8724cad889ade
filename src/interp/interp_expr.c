/*
 * The interpreter's scalar expressions (see interp.h).
 *
 * Semantics are the reference evaluator's by construction: every operator,
 * cast, math call, element load and store is computed by the scalar functions
 * of ir/eval.h (src/ir/eval_scalar.c; docs/api.md, rule 2), the very ones
 * the oracle runs. Integer results wrap to their dtype, float results are
 * rounded to it, floordiv/floormod round toward negative infinity, min/max
 * propagate NaN (a read of a poisoned, never written, float element is not
 * hidden by a max or min reduction). This file adds what belongs to walking
 * a lowered body:
 *   - an integer division or modulo by zero is an error (TEX_EINVAL), not a
 *     value;
 *   - select, && and || evaluate only what C would (the chosen branch, the
 *     right operand only when needed), so guards such as
 *     select(i < n, A[i], 0) never trip the bounds check;
 *   - REDUCE cannot occur in a lowered function (internal error).
 * Every read of storage is bounds-checked: ACCESS per dimension against the
 * realized region, LOAD against the buffer's size.
 */
#include "interp/interp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ environments */

int texi_interp_fail(texi_interp *ip, int code, const char *fmt, ...)
{
    if (ip->code)
        return ip->code;
    ip->code = code;
    if (ip->err && ip->err_size) {
        int k =
            snprintf(ip->err, ip->err_size,
                     "tex interpreter (function '%s'): ", ip->f && ip->f->name ? ip->f->name : "?");
        if (k >= 0 && (size_t)k < ip->err_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(ip->err + k, ip->err_size - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return code;
}

int texi_interp_push_var(texi_interp *ip, texi_frame *fr, const tex_expr *var, texi_eval_value v)
{
    if (fr->n_vars == fr->cap_vars) {
        int cap = fr->cap_vars ? 2 * fr->cap_vars : 16;
        texi_var_bind *nv = realloc(fr->vars, sizeof *nv * (size_t)cap);
        if (!nv)
            return texi_interp_fail(ip, TEX_ENOMEM, "out of memory (variable bindings)");
        fr->vars = nv;
        fr->cap_vars = cap;
    }
    fr->vars[fr->n_vars].var = var;
    fr->vars[fr->n_vars].v = texi_eval_convert(var->dtype, var->dtype, v);
    fr->vars[fr->n_vars].lane = ip->lane;
    fr->n_vars++;
    return 0;
}

texi_storage *texi_interp_find_tensor(texi_frame *fr, const tex_tensor *t)
{
    for (int k = fr->n_bufs - 1; k >= 0; k--)
        if (fr->bufs[k].tensor == t)
            return fr->bufs[k].st;
    return NULL;
}

texi_storage *texi_interp_find_buffer(texi_frame *fr, const texi_buffer *b)
{
    for (int k = fr->n_bufs - 1; k >= 0; k--) {
        const texi_buffer *o = fr->bufs[k].buf;
        if (o && (o == b || (b->data && o->data == b->data)))
            return fr->bufs[k].st;
    }
    return NULL;
}

int texi_interp_buffer_index(texi_interp *ip, texi_frame *fr, const texi_buffer *b,
                             const tex_expr *index, bool store, texi_storage **st, int64_t *i)
{
    *st = texi_interp_find_buffer(fr, b);
    if (!*st)
        return texi_interp_fail(ip, TEX_EINTERNAL, "%s buffer '%s', which is not allocated",
                                store ? "store to" : "load from", b->name);
    TEXI_TRY(texi_interp_int(ip, fr, index, i));
    if (*i < 0 || *i >= (*st)->size)
        return texi_interp_fail(
            ip, TEX_EINTERNAL, "out-of-bounds %s buffer '%s': index %lld, size %lld",
            store ? "store to" : "load of", b->name, (long long)*i, (long long)(*st)->size);
    return 0;
}

int texi_interp_tensor_index(texi_interp *ip, const texi_storage *st, int n, const int64_t idx[],
                             const char *what, int64_t *flat)
{
    if (n != st->ndim)
        return texi_interp_fail(ip, TEX_EINTERNAL, "%s of tensor '%s' with %d indices (%d dims)",
                                what, st->name, n, st->ndim);
    int64_t f = 0;
    for (int d = 0; d < n; d++) {
        int64_t off = idx[d] - st->mins[d];
        if (off < 0 || off >= st->extents[d])
            return texi_interp_fail(ip, TEX_EINTERNAL,
                                    "out-of-bounds %s of tensor '%s': index %lld of dimension %d "
                                    "outside its region [%lld, %lld)",
                                    what, st->name, (long long)idx[d], d, (long long)st->mins[d],
                                    (long long)(st->mins[d] + st->extents[d]));
        f = f * st->extents[d] + off;
    }
    *flat = f;
    return 0;
}

/* ------------------------------------------------------------- evaluation */

static int eval_var(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_eval_value *out)
{
    for (int k = fr->n_vars - 1; k >= 0; k--) {
        if (fr->vars[k].var == e && (e->lanes == 1 || fr->vars[k].lane == ip->lane)) {
            *out = fr->vars[k].v;
            return 0;
        }
    }
    return texi_interp_fail(ip, TEX_EINTERNAL, "variable '%s' is not bound", e->u.var.name);
}

static bool truth(tex_dtype t, texi_eval_value v)
{
    return texi_eval_convert(t, TEX_BOOL, v).i != 0;
}

static int eval_binary(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_eval_value *out)
{
    texi_eval_value a, b;
    const tex_expr *ea = e->u.bin.a, *eb = e->u.bin.b;
    TEXI_TRY(texi_interp_expr(ip, fr, ea, &a));
    if (e->kind == TEXI_EXPR_AND || e->kind == TEXI_EXPR_OR) {
        bool av = truth(ea->dtype, a);
        if (av == (e->kind == TEXI_EXPR_OR)) {
            out->i = av;
            return 0;
        }
        TEXI_TRY(texi_interp_expr(ip, fr, eb, &b));
        out->i = truth(eb->dtype, b);
        return 0;
    }
    TEXI_TRY(texi_interp_expr(ip, fr, eb, &b));
    /* both operands have one dtype in well-formed IR; promote defensively */
    tex_dtype t = texi_dtype_promote(ea->dtype, eb->dtype);
    a = texi_eval_convert(ea->dtype, t, a);
    b = texi_eval_convert(eb->dtype, t, b);
    if (!texi_eval_binary(e->kind, t, a, b, out))
        return texi_interp_fail(ip, TEX_EINVAL, "integer %s by zero",
                                e->kind == TEXI_EXPR_FLOORMOD ? "modulo" : "division");
    if (!texi_expr_is_compare(e) && e->dtype != t)
        *out = texi_eval_convert(t, e->dtype, *out);
    return 0;
}

/* A horizontal reduction in texi_vreduce_new's order: f32 and f64 lanes
 * (a power of two, at most TREE_LANES) by a rotation tree, lane j combined
 * with lane j + h mod L for h = L/2, ..., 1, then lane 0; others at lanes
 * 0, 1, ... in that order. The lane being evaluated, if any, is restored
 * afterwards. */
static int eval_vreduce(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_eval_value *out)
{
    enum { TREE_LANES = 64 };
    int saved = ip->lane, rc = 0, n = e->u.vred.a->lanes;
    enum texi_reduce_op op = e->u.vred.op;
    bool tree = (e->dtype == TEX_F32 || e->dtype == TEX_F64) && n <= TREE_LANES && !(n & (n - 1));
    texi_eval_value v[TREE_LANES], w[TREE_LANES], x;
    for (ip->lane = 0; ip->lane < n && rc == 0; ip->lane++) {
        if ((rc = texi_interp_expr(ip, fr, e->u.vred.a, &x)) != 0)
            break;
        if (tree)
            v[ip->lane] = x;
        else
            *out = ip->lane == 0 ? x : texi_eval_combine(op, e->dtype, *out, x);
    }
    ip->lane = saved;
    for (int h = n / 2; tree && rc == 0 && h >= 1; h /= 2) {
        for (int j = 0; j < n; j++)
            w[j] = texi_eval_combine(op, e->dtype, v[j], v[(j + h) % n]);
        memcpy(v, w, sizeof v[0] * (size_t)n);
    }
    if (tree && rc == 0)
        *out = v[0];
    return rc;
}

/* A math call: its operands evaluated, then texi_eval_math. */
static int eval_call(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_eval_value *out)
{
    texi_eval_value v[3] = {{0}, {0}, {0}};
    tex_dtype dt[3] = {e->dtype, e->dtype, e->dtype};
    int n = e->u.call.n_args < 3 ? e->u.call.n_args : 3;
    for (int k = 0; k < n; k++) {
        dt[k] = e->u.call.args[k]->dtype;
        TEXI_TRY(texi_interp_expr(ip, fr, e->u.call.args[k], &v[k]));
    }
    *out = texi_eval_math(e->u.call.op, e->dtype, n, dt, v);
    return 0;
}

static int eval_access(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_eval_value *out)
{
    const tex_tensor *t = e->u.access.tensor;
    texi_storage *st = texi_interp_find_tensor(fr, t);
    if (!st)
        return texi_interp_fail(ip, TEX_EINTERNAL, "read of tensor '%s', which is not realized",
                                t->name);
    int64_t idx[16], flat;
    int n = e->u.access.n_idx;
    if (n > 16)
        return texi_interp_fail(ip, TEX_EINTERNAL, "tensor '%s' has too many indices", t->name);
    for (int d = 0; d < n; d++)
        TEXI_TRY(texi_interp_int(ip, fr, e->u.access.idx[d], &idx[d]));
    TEXI_TRY(texi_interp_tensor_index(ip, st, n, idx, "read", &flat));
    *out = texi_eval_convert(st->dtype, e->dtype, texi_eval_load(st->dtype, st->data, flat));
    return 0;
}

int texi_interp_mask(texi_interp *ip, texi_frame *fr, const tex_expr *mask, bool *on)
{
    texi_eval_value m = {.i = 1};
    TEXI_TRY(mask ? texi_interp_expr(ip, fr, mask, &m) : 0);
    *on = m.i != 0;
    return 0;
}

/* buf[index]; a lane its mask turns off is 0 and reads nothing. */
static int eval_load(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_eval_value *out)
{
    texi_storage *st;
    int64_t i;
    bool on;
    TEXI_TRY(texi_interp_mask(ip, fr, e->u.load.mask, &on));
    if (!on) {
        *out = (texi_eval_value){0};
        return 0;
    }
    TEXI_TRY(texi_interp_buffer_index(ip, fr, e->u.load.buf, e->u.load.index, false, &st, &i));
    *out = texi_eval_convert(st->dtype, e->dtype, texi_eval_load(st->dtype, st->data, i));
    return 0;
}

/* A search of a tensor (before flattening) or buffer; a non-empty range
 * outside its storage is an error. */
static int eval_search(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_eval_value *out)
{
    const tex_tensor *t = e->u.search.tensor;
    texi_storage *st =
        t ? texi_interp_find_tensor(fr, t) : texi_interp_find_buffer(fr, e->u.search.buf);
    const char *name = t ? t->name : e->u.search.buf->name;
    if (!st)
        return texi_interp_fail(ip, TEX_EINTERNAL, "search of '%s', which is not allocated", name);
    int64_t lo, hi, v;
    TEXI_TRY(texi_interp_int(ip, fr, e->u.search.lo, &lo));
    TEXI_TRY(texi_interp_int(ip, fr, e->u.search.hi, &hi));
    TEXI_TRY(texi_interp_int(ip, fr, e->u.search.value, &v));
    if (lo < hi && (lo < 0 || hi > st->size))
        return texi_interp_fail(ip, TEX_EINTERNAL,
                                "out-of-bounds search of '%s': [%lld, %lld), size %lld", name,
                                (long long)lo, (long long)hi, (long long)st->size);
    int64_t k = texi_eval_search(e->u.search.op, st->dtype, st->data, lo, hi, v);
    *out = texi_eval_convert(TEX_I64, e->dtype, (texi_eval_value){.i = k});
    return 0;
}

static int eval_select(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_eval_value *out)
{
    texi_eval_value c, v;
    TEXI_TRY(texi_interp_expr(ip, fr, e->u.sel.cond, &c));
    const tex_expr *br = truth(e->u.sel.cond->dtype, c) ? e->u.sel.t : e->u.sel.f;
    TEXI_TRY(texi_interp_expr(ip, fr, br, &v));
    *out = texi_eval_convert(br->dtype, e->dtype, v);
    return 0;
}

/* Lane ip->lane of RAMP e: base + lane * stride, wrapped to e's dtype. */
static int eval_ramp_lane(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_eval_value *out)
{
    int64_t base, stride;
    TEXI_TRY(texi_interp_int(ip, fr, e->u.ramp.base, &base));
    TEXI_TRY(texi_interp_int(ip, fr, e->u.ramp.stride, &stride));
    uint64_t lane = (uint64_t)base + (uint64_t)stride * (uint64_t)ip->lane;
    *out = texi_eval_convert(TEX_I64, e->dtype, (texi_eval_value){.i = (int64_t)lane});
    return 0;
}

int texi_interp_expr(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_eval_value *out)
{
    texi_eval_value a;
    switch (e->kind) {
    case TEXI_EXPR_INT:
        out->i = e->u.i;
        return 0;
    case TEXI_EXPR_FLOAT:
        out->f = e->u.f;
        return 0;
    case TEXI_EXPR_VAR:
        return eval_var(ip, fr, e, out);
    TEXI_CASE_BINARY:
        return eval_binary(ip, fr, e, out);
    case TEXI_EXPR_NOT:
        TEXI_TRY(texi_interp_expr(ip, fr, e->u.un.a, &a));
        out->i = !truth(e->u.un.a->dtype, a);
        return 0;
    case TEXI_EXPR_CAST:
        TEXI_TRY(texi_interp_expr(ip, fr, e->u.un.a, &a));
        *out = texi_eval_convert(e->u.un.a->dtype, e->dtype, a);
        return 0;
    case TEXI_EXPR_SELECT:
        return eval_select(ip, fr, e, out);
    case TEXI_EXPR_CALL:
        return eval_call(ip, fr, e, out);
    case TEXI_EXPR_ACCESS:
        return eval_access(ip, fr, e, out);
    case TEXI_EXPR_LOAD:
        return eval_load(ip, fr, e, out);
    case TEXI_EXPR_SEARCH:
        return eval_search(ip, fr, e, out);
    case TEXI_EXPR_RAMP: /* vectors: their lane ip->lane (vector statements) */
        return eval_ramp_lane(ip, fr, e, out);
    case TEXI_EXPR_BROADCAST:
        return texi_interp_expr(ip, fr, e->u.un.a, out);
    case TEXI_EXPR_VREDUCE:
        return eval_vreduce(ip, fr, e, out);
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    return texi_interp_fail(ip, TEX_EINTERNAL, "a '%s' node cannot occur in a lowered function",
                            e->kind < TEXI_EXPR_KIND_COUNT ? texi_expr_kind_names[e->kind] : "?");
}

int texi_interp_int(texi_interp *ip, texi_frame *fr, const tex_expr *e, int64_t *out)
{
    texi_eval_value v;
    TEXI_TRY(texi_interp_expr(ip, fr, e, &v));
    if (texi_dtype_is_float(e->dtype))
        return texi_interp_fail(ip, TEX_EINTERNAL, "index or extent of float type %s",
                                tex_dtype_name(e->dtype));
    *out = v.i;
    return 0;
}
