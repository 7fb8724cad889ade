/*
 * The public expression builders (tex_int ... tex_fma, tex_cast, the
 * reductions). Each one validates (operands non-NULL, of one context, not a
 * reduction, of a dtype the operator takes), promotes both sides of a binary
 * operator to one dtype (dtype.c), and builds the node with expr.c's raw
 * constructors. Nothing is simplified here except that constants converted to
 * another dtype become constants of that dtype.
 */
#include "ir/ir.h"

#include <math.h>
#include <string.h>

/* The context of the first non-NULL operand, or NULL. */
static tex_ctx *ctx_of(int n, tex_expr *const ops[])
{
    for (int i = 0; i < n; i++)
        if (ops[i])
            return ops[i]->ctx;
    return NULL;
}

static const char *const operand_names[] = {"a", "b", "c"};

/* Checks the operands of public builder `call`; 0 or the recorded error. */
static int check_operands(const char *call, int n, tex_expr *const ops[])
{
    tex_ctx *ctx = ctx_of(n, ops);
    if (!ctx)
        return TEX_EMISUSE;
    for (int i = 0; i < n; i++) {
        if (!ops[i]) {
            texi_error_null_operand(ctx, call, operand_names[i]);
            return TEX_EMISUSE;
        }
        if (ops[i]->ctx != ctx)
            return texi_error(ctx, TEX_EMISUSE, "%s: operands come from two different contexts",
                              call);
        if (ops[i]->kind == TEXI_EXPR_REDUCE)
            return texi_error(ctx, TEX_EINVAL,
                              "%s: operand %s is a reduction; a reduction must be the whole body "
                              "of a compute (compute it into its own tensor first)",
                              call, operand_names[i]);
    }
    return 0;
}

tex_expr *texi_convert(tex_expr *e, tex_dtype t)
{
    if (e->dtype == t)
        return e;
    if (e->kind == TEXI_EXPR_INT) {
        if (texi_dtype_is_float(t)) {
            double v = e->dtype == TEX_U64 ? (double)(uint64_t)e->u.i : (double)e->u.i;
            return texi_float_imm(e->ctx, t, v);
        }
        return texi_int_imm(e->ctx, t, e->u.i);
    }
    if (e->kind == TEXI_EXPR_FLOAT) {
        if (texi_dtype_is_float(t))
            return texi_float_imm(e->ctx, t, e->u.f);
        if (t == TEX_BOOL) /* C's _Bool: any non-zero value, NaN included, is true */
            return texi_int_imm(e->ctx, t, e->u.f != 0.0);
        return texi_int_imm(e->ctx, t, texi_float_to_int(t, e->u.f));
    }
    return texi_unary(TEXI_EXPR_CAST, t, e);
}

/* ----------------------------------------------------------- constants */

tex_expr *tex_int(tex_ctx *ctx, int64_t v)
{
    if (!ctx)
        return NULL;
    return texi_int_imm(ctx, v >= INT32_MIN && v <= INT32_MAX ? TEX_I32 : TEX_I64, v);
}

tex_expr *tex_const(tex_ctx *ctx, tex_dtype t, double v)
{
    if (!ctx)
        return NULL;
    if (!texi_dtype_valid((int)t)) {
        texi_error(ctx, TEX_ETYPE, "tex_const: unknown dtype %d", (int)t);
        return NULL;
    }
    if (texi_dtype_is_float(t))
        return texi_float_imm(ctx, t, v);
    if (isnan(v)) {
        texi_error(ctx, TEX_EINVAL, "tex_const: NaN cannot be a %s constant", tex_dtype_name(t));
        return NULL;
    }
    return texi_int_imm(ctx, t, texi_float_to_int(t, v));
}

tex_expr *tex_var(tex_ctx *ctx, const char *name, tex_dtype t)
{
    if (!ctx)
        return NULL;
    if (!name || !*name) {
        texi_error(ctx, TEX_EINVAL, "tex_var: the name is NULL or empty");
        return NULL;
    }
    if (!texi_dtype_valid((int)t)) {
        texi_error(ctx, TEX_ETYPE, "tex_var: variable '%s' has unknown dtype %d", name, (int)t);
        return NULL;
    }
    return texi_var_new(ctx, name, t);
}

tex_dtype tex_expr_dtype(const tex_expr *e)
{
    return e ? e->dtype : TEX_BOOL;
}

/* ------------------------------------------------------------ binary */

/* Promotes a and b to one dtype; NULL on ENOMEM. */
static bool promote(tex_expr **a, tex_expr **b)
{
    tex_dtype t = texi_dtype_promote((*a)->dtype, (*b)->dtype);
    *a = texi_convert(*a, t);
    *b = texi_convert(*b, t);
    return *a && *b;
}

/* Arithmetic operator (add, sub, mul, min, max, floordiv, floormod, div). */
static tex_expr *arith(const char *call, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    if (check_operands(call, 2, (tex_expr *[]){a, b}) < 0)
        return NULL;
    if (a->dtype == TEX_BOOL && b->dtype == TEX_BOOL && kind != TEXI_EXPR_MIN &&
        kind != TEXI_EXPR_MAX) {
        texi_error(a->ctx, TEX_ETYPE, "%s: both operands are bool (cast one to a number first)",
                   call);
        return NULL;
    }
    if (!promote(&a, &b))
        return NULL;
    if (kind == TEXI_EXPR_DIV && !texi_dtype_is_float(a->dtype))
        kind = TEXI_EXPR_FLOORDIV;
    return texi_binary(kind, a, b);
}

/* tex_FN(a, b): binary operator OP built by `build` (arith or compare). */
#define TEXI_BINARY_BUILDER(fn, build, OP)                                                         \
    tex_expr *tex_##fn(tex_expr *a, tex_expr *b)                                                   \
    {                                                                                              \
        return build("tex_" #fn, TEXI_EXPR_##OP, a, b);                                            \
    }
TEXI_BINARY_BUILDER(add, arith, ADD)
TEXI_BINARY_BUILDER(sub, arith, SUB)
TEXI_BINARY_BUILDER(mul, arith, MUL)
TEXI_BINARY_BUILDER(div, arith, DIV)
TEXI_BINARY_BUILDER(min, arith, MIN)
TEXI_BINARY_BUILDER(max, arith, MAX)
TEXI_BINARY_BUILDER(floordiv, arith, FLOORDIV)
TEXI_BINARY_BUILDER(floormod, arith, FLOORMOD)

tex_expr *tex_neg(tex_expr *a)
{
    if (check_operands("tex_neg", 1, &a) < 0)
        return NULL;
    if (a->dtype == TEX_BOOL) {
        texi_error(a->ctx, TEX_ETYPE, "tex_neg: the operand is bool");
        return NULL;
    }
    if (a->kind == TEXI_EXPR_INT)
        return texi_int_imm(a->ctx, a->dtype, (int64_t)(0 - (uint64_t)a->u.i));
    if (a->kind == TEXI_EXPR_FLOAT)
        return texi_float_imm(a->ctx, a->dtype, -a->u.f);
    tex_expr *zero = texi_dtype_is_float(a->dtype) ? texi_float_imm(a->ctx, a->dtype, 0.0)
                                                   : texi_int_imm(a->ctx, a->dtype, 0);
    return zero ? texi_binary(TEXI_EXPR_SUB, zero, a) : NULL;
}

/* Comparison: operands promoted to one type, result bool. */
static tex_expr *compare(const char *call, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    if (check_operands(call, 2, (tex_expr *[]){a, b}) < 0 || !promote(&a, &b))
        return NULL;
    return texi_binary(kind, a, b);
}

TEXI_BINARY_BUILDER(eq, compare, EQ)
TEXI_BINARY_BUILDER(ne, compare, NE)
TEXI_BINARY_BUILDER(lt, compare, LT)
TEXI_BINARY_BUILDER(le, compare, LE)
TEXI_BINARY_BUILDER(gt, compare, GT)
TEXI_BINARY_BUILDER(ge, compare, GE)
#undef TEXI_BINARY_BUILDER

/* Logical operator: every operand must already be bool. */
static tex_expr *logical(const char *call, enum texi_expr_kind kind, int n, tex_expr *const ops[])
{
    if (check_operands(call, n, ops) < 0)
        return NULL;
    for (int i = 0; i < n; i++) {
        if (ops[i]->dtype != TEX_BOOL) {
            texi_error(ops[i]->ctx, TEX_ETYPE, "%s: operand %s is %s, expected bool", call,
                       operand_names[i], tex_dtype_name(ops[i]->dtype));
            return NULL;
        }
    }
    return n == 1 ? texi_unary(kind, TEX_BOOL, ops[0]) : texi_binary(kind, ops[0], ops[1]);
}

tex_expr *tex_and(tex_expr *a, tex_expr *b)
{
    return logical("tex_and", TEXI_EXPR_AND, 2, (tex_expr *[]){a, b});
}

tex_expr *tex_or(tex_expr *a, tex_expr *b)
{
    return logical("tex_or", TEXI_EXPR_OR, 2, (tex_expr *[]){a, b});
}

tex_expr *tex_not(tex_expr *a)
{
    return logical("tex_not", TEXI_EXPR_NOT, 1, &a);
}

tex_expr *tex_select(tex_expr *cond, tex_expr *t, tex_expr *f)
{
    if (check_operands("tex_select", 3, (tex_expr *[]){cond, t, f}) < 0)
        return NULL;
    if (cond->dtype != TEX_BOOL) {
        texi_error(cond->ctx, TEX_ETYPE, "tex_select: the condition is %s, expected bool",
                   tex_dtype_name(cond->dtype));
        return NULL;
    }
    if (!promote(&t, &f))
        return NULL;
    return texi_select_new(cond, t, f);
}

tex_expr *tex_cast(tex_dtype t, tex_expr *a)
{
    if (check_operands("tex_cast", 1, &a) < 0)
        return NULL;
    if (!texi_dtype_valid((int)t)) {
        texi_error(a->ctx, TEX_ETYPE, "tex_cast: unknown dtype %d", (int)t);
        return NULL;
    }
    return texi_convert(a, t);
}

/* ------------------------------------------------------------- math */

/* A math function. Integer (and bool) operands are converted to f32, except
 * that abs keeps integers and floor/ceil/round of an integer is the integer. */
static tex_expr *math(const char *call, enum texi_math op, int n, tex_expr *const ops[])
{
    if (check_operands(call, n, ops) < 0)
        return NULL;
    tex_expr *args[3];
    tex_dtype t = ops[0]->dtype;
    for (int i = 1; i < n; i++)
        t = texi_dtype_promote(t, ops[i]->dtype);
    if (!texi_dtype_is_float(t)) {
        bool keeps_int = op == TEXI_MATH_ABS || op == TEXI_MATH_FLOOR || op == TEXI_MATH_CEIL ||
                         op == TEXI_MATH_ROUND;
        if (keeps_int && t != TEX_BOOL && op != TEXI_MATH_ABS)
            return ops[0];
        if (!keeps_int || t == TEX_BOOL)
            t = TEX_F32;
    }
    for (int i = 0; i < n; i++)
        if (!(args[i] = texi_convert(ops[i], t)))
            return NULL;
    return texi_call_new(op, t, n, args);
}

#define TEXI_UNARY_MATH(fn, OP)                                                                    \
    tex_expr *tex_##fn(tex_expr *a)                                                                \
    {                                                                                              \
        return math("tex_" #fn, TEXI_MATH_##OP, 1, &a);                                            \
    }
TEXI_UNARY_MATH(exp, EXP)
TEXI_UNARY_MATH(log, LOG)
TEXI_UNARY_MATH(sqrt, SQRT)
TEXI_UNARY_MATH(rsqrt, RSQRT)
TEXI_UNARY_MATH(tanh, TANH)
TEXI_UNARY_MATH(sigmoid, SIGMOID)
TEXI_UNARY_MATH(erf, ERF)
TEXI_UNARY_MATH(abs, ABS)
TEXI_UNARY_MATH(floor, FLOOR)
TEXI_UNARY_MATH(ceil, CEIL)
TEXI_UNARY_MATH(round, ROUND)
TEXI_UNARY_MATH(sin, SIN)
TEXI_UNARY_MATH(cos, COS)
#undef TEXI_UNARY_MATH

tex_expr *tex_pow(tex_expr *a, tex_expr *b)
{
    return math("tex_pow", TEXI_MATH_POW, 2, (tex_expr *[]){a, b});
}

tex_expr *tex_fma(tex_expr *a, tex_expr *b, tex_expr *c)
{
    return math("tex_fma", TEXI_MATH_FMA, 3, (tex_expr *[]){a, b, c});
}
