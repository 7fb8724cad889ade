/*
 * Expression nodes: the raw constructors used by passes, and the public
 * builders (tex_add, tex_select, tex_exp, ...) that validate their operands,
 * apply the promotion rule of dtype.c and then call the raw constructors.
 *
 * Validation done by every public builder: no NULL operand (the first error of
 * the context is kept, so a chain is checked once at its end), operands from
 * one context (TEX_EMISUSE), no reduction used as an operand (a reduction is
 * only ever the whole body of a compute), dtypes the operator accepts
 * (TEX_ETYPE). Constants are converted eagerly, so `tex_add(x_f32, tex_int(1))`
 * holds a f32 constant rather than a cast node.
 */
#include "ir/ir.h"

#include <math.h>
#include <string.h>

const char *const texi_expr_kind_names[TEXI_EXPR_KIND_COUNT] = {
#define X(name, spelling, member) spelling,
#include "ir/expr_kinds.def"
#undef X
};
_Static_assert(sizeof texi_expr_kind_names / sizeof *texi_expr_kind_names == TEXI_EXPR_KIND_COUNT,
               "expression kind table");

const char *const texi_math_names[TEXI_MATH_COUNT] = {
#define X(name, spelling, arity, c_spelling) spelling,
#include "ir/math_funcs.def"
#undef X
};

const int texi_math_arity[TEXI_MATH_COUNT] = {
#define X(name, spelling, arity, c_spelling) arity,
#include "ir/math_funcs.def"
#undef X
};

const char *const texi_reduce_names[TEXI_REDUCE_COUNT] = {"sum", "prod", "reduce_max",
                                                          "reduce_min"};

const char *const texi_vreduce_names[TEXI_REDUCE_COUNT] = {"add", "mul", "max", "min"};

const char *const texi_search_names[TEXI_SEARCH_COUNT] = {"upper_bound", "find"};

/* ------------------------------------------------------- raw constructors */

static tex_expr *node_new(tex_ctx *ctx, enum texi_expr_kind kind, tex_dtype t)
{
    tex_expr *e = texi_alloc(ctx, sizeof *e, "an expression");
    if (e) {
        e->kind = kind;
        e->dtype = t;
        e->lanes = 1;
        e->ctx = ctx;
    }
    return e;
}

/* The wider lane count of two operands (they agree, or one is scalar). */
static int lanes_of(const tex_expr *a, const tex_expr *b)
{
    return a->lanes > b->lanes ? a->lanes : b->lanes;
}

tex_expr *texi_int_imm(tex_ctx *ctx, tex_dtype t, int64_t v)
{
    tex_expr *e = node_new(ctx, TEXI_EXPR_INT, t);
    if (e)
        e->u.i = texi_wrap_int(t, (uint64_t)v);
    return e;
}

tex_expr *texi_float_imm(tex_ctx *ctx, tex_dtype t, double v)
{
    tex_expr *e = node_new(ctx, TEXI_EXPR_FLOAT, t);
    if (e)
        e->u.f = texi_round_to_dtype(t, v);
    return e;
}

tex_expr *texi_var_new(tex_ctx *ctx, const char *name, tex_dtype t)
{
    tex_expr *e = node_new(ctx, TEXI_EXPR_VAR, t);
    if (!e)
        return NULL;
    e->u.var.name = texi_strdup(ctx, name);
    e->u.var.id = ++ctx->next_id;
    return e->u.var.name ? e : NULL;
}

tex_expr *texi_binary(enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    tex_dtype t = a->dtype;
    if (kind >= TEXI_EXPR_EQ && kind <= TEXI_EXPR_OR)
        t = TEX_BOOL;
    tex_expr *e = node_new(a->ctx, kind, t);
    if (e) {
        e->lanes = lanes_of(a, b);
        e->u.bin.a = a;
        e->u.bin.b = b;
    }
    return e;
}

tex_expr *texi_unary(enum texi_expr_kind kind, tex_dtype t, tex_expr *a)
{
    tex_expr *e = node_new(a->ctx, kind, t);
    if (e) {
        e->lanes = a->lanes;
        e->u.un.a = a;
    }
    return e;
}

tex_expr *texi_select_new(tex_expr *c, tex_expr *t, tex_expr *f)
{
    tex_expr *e = node_new(c->ctx, TEXI_EXPR_SELECT, t->dtype);
    if (e) {
        e->lanes = lanes_of(c, t) > f->lanes ? lanes_of(c, t) : f->lanes;
        e->u.sel.cond = c;
        e->u.sel.t = t;
        e->u.sel.f = f;
    }
    return e;
}

tex_expr *texi_call_new(enum texi_math op, tex_dtype t, int n, tex_expr *const args[])
{
    tex_expr *e = node_new(args[0]->ctx, TEXI_EXPR_CALL, t);
    if (e) {
        e->u.call.op = op;
        e->u.call.n_args = n;
        for (int i = 0; i < n && i < 3; i++) {
            e->u.call.args[i] = args[i];
            e->lanes = lanes_of(e, args[i]);
        }
    }
    return e;
}

tex_expr *texi_access_new(tex_tensor *t, int n, tex_expr *const idx[])
{
    tex_expr *e = node_new(t->ctx, TEXI_EXPR_ACCESS, t->dtype);
    if (!e)
        return NULL;
    e->u.access.tensor = t;
    e->u.access.n_idx = n;
    if (n > 0) {
        e->u.access.idx = texi_alloc(t->ctx, sizeof(tex_expr *) * (size_t)n, "tensor indices");
        if (!e->u.access.idx)
            return NULL;
        memcpy(e->u.access.idx, idx, sizeof(tex_expr *) * (size_t)n);
    }
    return e;
}

tex_expr *texi_load_new(texi_buffer *buf, tex_expr *index)
{
    tex_expr *e = node_new(index->ctx, TEXI_EXPR_LOAD, buf->dtype);
    if (e) {
        e->lanes = index->lanes;
        e->u.load.buf = buf;
        e->u.load.index = index;
    }
    return e;
}

tex_expr *texi_masked_load_new(texi_buffer *buf, tex_expr *index, tex_expr *mask)
{
    tex_expr *e = texi_load_new(buf, index);
    if (e)
        e->u.load.mask = mask;
    return e;
}

tex_expr *texi_load_at(const tex_expr *e, tex_expr *index)
{
    return texi_masked_load_new(e->u.load.buf, index, e->u.load.mask);
}

tex_expr *texi_search_new(enum texi_search_op op, tex_tensor *t, texi_buffer *buf, tex_expr *lo,
                          tex_expr *hi, tex_expr *value)
{
    tex_expr *e = node_new(lo->ctx, TEXI_EXPR_SEARCH, lo->dtype);
    if (e) {
        int lanes = lanes_of(lo, hi);
        e->lanes = lanes > value->lanes ? lanes : value->lanes;
        e->u.search.op = op;
        e->u.search.tensor = t;
        e->u.search.buf = t ? NULL : buf;
        e->u.search.lo = lo;
        e->u.search.hi = hi;
        e->u.search.value = value;
    }
    return e;
}

tex_expr *texi_ramp_new(tex_expr *base, tex_expr *stride, int lanes)
{
    tex_expr *e = node_new(base->ctx, TEXI_EXPR_RAMP, base->dtype);
    if (e) {
        e->lanes = lanes;
        e->u.ramp.base = base;
        e->u.ramp.stride = stride;
    }
    return e;
}

tex_expr *texi_broadcast_new(tex_expr *value, int lanes)
{
    tex_expr *e = node_new(value->ctx, TEXI_EXPR_BROADCAST, value->dtype);
    if (e) {
        e->lanes = lanes;
        e->u.un.a = value;
    }
    return e;
}

tex_expr *texi_vreduce_new(enum texi_reduce_op op, tex_expr *a)
{
    tex_expr *e = node_new(a->ctx, TEXI_EXPR_VREDUCE, a->dtype);
    if (e) {
        e->u.vred.op = op;
        e->u.vred.a = a;
    }
    return e;
}

tex_expr *texi_reduce_new(enum texi_reduce_op op, tex_expr *body, int n, tex_iter *const axes[],
                          tex_expr *cond)
{
    tex_ctx *ctx = body->ctx;
    tex_expr *e = node_new(ctx, TEXI_EXPR_REDUCE, body->dtype);
    if (!e)
        return NULL;
    e->u.red.op = op;
    e->u.red.body = body;
    e->u.red.n_axes = n;
    e->u.red.cond = cond;
    e->u.red.axes = texi_alloc(ctx, sizeof(tex_iter *) * (size_t)(n > 0 ? n : 1), "reduce axes");
    if (!e->u.red.axes)
        return NULL;
    if (n > 0)
        memcpy(e->u.red.axes, axes, sizeof(tex_iter *) * (size_t)n);
    return e;
}

bool texi_expr_is_binary(const tex_expr *e)
{
    return e->kind >= TEXI_EXPR_ADD && e->kind <= TEXI_EXPR_OR;
}

bool texi_expr_is_compare(const tex_expr *e)
{
    return e->kind >= TEXI_EXPR_EQ && e->kind <= TEXI_EXPR_GE;
}

bool texi_expr_is_const(const tex_expr *e)
{
    return e->kind == TEXI_EXPR_INT || e->kind == TEXI_EXPR_FLOAT;
}

bool texi_expr_is_int_const(const tex_expr *e, int64_t *value)
{
    if (e->kind != TEXI_EXPR_INT)
        return false;
    if (value)
        *value = e->u.i;
    return true;
}

/* Smallest and largest values of an integer type, as int64 (u64 max saturates). */
static void int_limits(tex_dtype t, int64_t *lo, int64_t *hi)
{
    int bits = texi_dtype_bits(t);
    if (t == TEX_BOOL) {
        *lo = 0;
        *hi = 1;
    } else if (!texi_dtype_is_signed(t)) {
        *lo = 0;
        *hi = bits >= 64 ? -1 : (int64_t)((UINT64_C(1) << bits) - 1); /* u64 max as bit pattern */
    } else {
        *hi = bits >= 64 ? INT64_MAX : (int64_t)((UINT64_C(1) << (bits - 1)) - 1);
        *lo = -*hi - 1;
    }
}

tex_expr *texi_reduce_identity(tex_ctx *ctx, enum texi_reduce_op op, tex_dtype t)
{
    bool is_float = texi_dtype_is_float(t);
    int64_t lo, hi;
    switch (op) {
    case TEXI_REDUCE_SUM:
        return is_float ? texi_float_imm(ctx, t, 0.0) : texi_int_imm(ctx, t, 0);
    case TEXI_REDUCE_PROD:
        return is_float ? texi_float_imm(ctx, t, 1.0) : texi_int_imm(ctx, t, 1);
    case TEXI_REDUCE_MAX:
        if (is_float)
            return texi_float_imm(ctx, t, -INFINITY);
        int_limits(t, &lo, &hi);
        return texi_int_imm(ctx, t, lo);
    case TEXI_REDUCE_MIN:
        if (is_float)
            return texi_float_imm(ctx, t, INFINITY);
        int_limits(t, &lo, &hi);
        return texi_int_imm(ctx, t, hi);
    case TEXI_REDUCE_COUNT:
        break;
    }
    texi_error(ctx, TEX_EINTERNAL, "texi_reduce_identity: unknown reduction %d", (int)op);
    return NULL;
}
