/*
 * C expressions of the CPU backend's emitter (codegen_c.c drives it), and
 * the static inline helpers they may call.
 *
 * Every expression is emitted as a C value of its dtype's C type
 * (texi_cg_value_type): integers as their <stdint.h> type, f32/f64 as
 * float/double, f16/bf16 values as float holding a value exactly
 * representable in the narrow type, bool as int 0/1. The text reproduces the
 * reference evaluator's semantics (src/ir/eval_expr.c):
 *   - f16/bf16 arithmetic is done in float and rounded back after every
 *     operation (tex_round_f16 / tex_round_bf16); + - * / of float operands
 *     rounded once equal the oracle's double computation rounded once.
 *   - Integer arithmetic wraps. i8/i16/u8/u16 compute through uint32_t and
 *     convert back; u32/u64 wrap natively. i32/i64 arithmetic of stored
 *     values goes through the unsigned type (no signed overflow); index
 *     arithmetic (indices, loop bounds, conditions: `index` is true) is
 *     emitted plainly, assuming no overflow, as TVM and Halide do.
 *   - floordiv/floormod of signed integers become / and % when range
 *     analysis (texi_const_interval over the enclosing loops, LETs and size
 *     variables >= 0) proves both operands non-negative, else the floor
 *     helpers; unsigned types use / and %; floats go through floor() in
 *     double. A zero divisor is undefined behaviour in the generated code
 *     (the oracle reports it as an error instead).
 *   - min/max call typed helpers (a float NaN operand gives NaN, as the
 *     oracle's); float-to-integer casts saturate (tex_f2i64/tex_f2u64) and
 *     then wrap; casts to bool are `!= 0`.
 *   - Math: f32 (and f16/bf16) call the float libm functions, f64 and
 *     integer-typed calls the double ones; rsqrt = 1 / sqrt, sigmoid =
 *     1 / (1 + exp(-x)); abs/floor/ceil/round of an integer are exact.
 * Parentheses follow C's precedence, plus the ones -Wparentheses and
 * -Wlogical-not-parentheses ask for around && in || and around operands of
 * comparisons that are themselves comparisons or logical operations.
 */
#include "backend_cpu/codegen_c.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------------- types */

const char *texi_cg_storage_type(tex_dtype t)
{
    return texi_dtype_ctype(t);
}

const char *texi_cg_value_type(tex_dtype t)
{
    switch (t) {
    case TEX_BOOL:
        return "int";
    case TEX_F16:
    case TEX_BF16:
        return "float";
    case TEX_I8:
    case TEX_I16:
    case TEX_I32:
    case TEX_I64:
    case TEX_U8:
    case TEX_U16:
    case TEX_U32:
    case TEX_U64:
    case TEX_F32:
    case TEX_F64:
        break;
    }
    return texi_dtype_ctype(t);
}

static bool is_half(tex_dtype t)
{
    return t == TEX_F16 || t == TEX_BF16;
}

/* Integer types narrower than int: arithmetic through uint32_t. */
static bool is_narrow(tex_dtype t)
{
    return t == TEX_I8 || t == TEX_I16 || t == TEX_U8 || t == TEX_U16;
}

/* The helper suffix of integer type t's min/max/floor/abs family. */
static const char *int_family(texi_cg *g, tex_dtype t, unsigned h32, unsigned h64, unsigned hu32,
                              unsigned hu64)
{
    bool wide = texi_dtype_bits(t) == 64;
    if (texi_dtype_is_signed(t) || t == TEX_BOOL || !hu32) {
        g->helpers |= wide ? h64 : h32;
        return wide ? "i64" : "i32";
    }
    g->helpers |= wide ? hu64 : hu32;
    return wide ? "u64" : "u32";
}

/* ------------------------------------------------------------ precedence */

static bool open_paren(texi_sb *sb, int own, int prec)
{
    if (own < prec)
        texi_sb_putc(sb, '(');
    return own < prec;
}

static void close_paren(texi_sb *sb, bool opened)
{
    if (opened)
        texi_sb_putc(sb, ')');
}

static bool is_logical(const tex_expr *e)
{
    return texi_expr_is_compare(e) || e->kind == TEXI_EXPR_AND || e->kind == TEXI_EXPR_OR ||
           e->kind == TEXI_EXPR_NOT;
}

/* ------------------------------------------------------------- constants */

static void emit_int(texi_sb *sb, tex_dtype t, int64_t v, int prec)
{
    bool neg = v < 0 && t != TEX_U64;
    bool p = neg && open_paren(sb, TEXI_CG_P_UNARY, prec);
    if (t == TEX_U64)
        texi_sb_printf(sb, "UINT64_C(%llu)", (unsigned long long)v);
    else if (t == TEX_U32)
        texi_sb_printf(sb, "%lluu", (unsigned long long)v);
    else if (t == TEX_I64 && v == INT64_MIN)
        texi_sb_puts(sb, "INT64_MIN");
    else if (t == TEX_I64 && (v > INT32_MAX || v < -INT32_MAX))
        texi_sb_printf(sb, "INT64_C(%lld)", (long long)v);
    else if (v == INT32_MIN)
        texi_sb_puts(sb, "INT32_MIN");
    else
        texi_sb_printf(sb, "%lld", (long long)v);
    close_paren(sb, p);
}

static void emit_float(texi_sb *sb, tex_dtype t, double v, int prec)
{
    bool p = (signbit(v) && !isnan(v)) && open_paren(sb, TEXI_CG_P_UNARY, prec);
    if (isnan(v)) {
        texi_sb_puts(sb, "NAN");
    } else if (isinf(v)) {
        texi_sb_puts(sb, v < 0 ? "-INFINITY" : "INFINITY");
    } else {
        char buf[64];
        snprintf(buf, sizeof buf, t == TEX_F64 ? "%.17g" : "%.9g", v);
        texi_sb_puts(sb, buf);
        if (!strpbrk(buf, ".e"))
            texi_sb_puts(sb, ".0");
        if (t != TEX_F64)
            texi_sb_putc(sb, 'f');
    }
    close_paren(sb, p);
}

/* ----------------------------------------------------------- conversions */

/* The text around an operand converting a value of dtype `from` to `to`. */
typedef struct {
    char pre[64];
    const char *post;
    int inner; /* precedence the operand needs */
    int own;   /* precedence of the result */
    bool identity;
} conv;

static conv conversion(texi_cg *g, tex_dtype from, tex_dtype to)
{
    conv c = {"", "", TEXI_CG_P_UNARY, TEXI_CG_P_UNARY, false};
    bool ff = texi_dtype_is_float(from);
    if (from == to || (to == TEX_F32 && is_half(from))) {
        c.identity = true;
    } else if (to == TEX_BOOL) {
        snprintf(c.pre, sizeof c.pre, "(");
        c.post = " != 0)";
        c.inner = TEXI_CG_P_REL;
        c.own = TEXI_CG_P_POSTFIX;
    } else if (to == TEX_F32 || to == TEX_F64) {
        snprintf(c.pre, sizeof c.pre, "(%s)", texi_dtype_ctype(to));
    } else if (is_half(to)) {
        g->helpers |= to == TEX_F16 ? TEXI_CG_H_F16 : TEXI_CG_H_BF16;
        const char *fn = to == TEX_F16 ? "tex_round_f16" : "tex_round_bf16";
        bool exact = from == TEX_F32 || is_half(from);
        snprintf(c.pre, sizeof c.pre, "%s(%s", fn, exact ? "" : "(float)");
        c.post = ")";
        c.inner = exact ? TEXI_CG_P_TOP : TEXI_CG_P_UNARY;
        c.own = TEXI_CG_P_POSTFIX;
    } else if (ff) { /* float -> integer: saturate, then wrap */
        g->helpers |= TEXI_CG_H_F2I;
        if (to == TEX_U64 || to == TEX_I64)
            snprintf(c.pre, sizeof c.pre, "tex_f2%s(", to == TEX_U64 ? "u64" : "i64");
        else
            snprintf(c.pre, sizeof c.pre, "(%s)tex_f2i64(", texi_dtype_ctype(to));
        c.post = ")";
        c.inner = TEXI_CG_P_TOP;
        c.own = to == TEX_U64 || to == TEX_I64 ? TEXI_CG_P_POSTFIX : TEXI_CG_P_UNARY;
    } else {
        snprintf(c.pre, sizeof c.pre, "(%s)", texi_dtype_ctype(to));
    }
    return c;
}

/* Appends e converted to dtype `to`. */
static void emit_as(texi_cg *g, texi_sb *sb, const tex_expr *e, tex_dtype to, int prec, bool index)
{
    conv c = conversion(g, e->dtype, to);
    if (c.identity) {
        texi_cg_expr(g, sb, e, prec, index);
        return;
    }
    bool p = open_paren(sb, c.own, prec);
    texi_sb_puts(sb, c.pre);
    texi_cg_expr(g, sb, e, c.inner, index);
    texi_sb_puts(sb, c.post);
    close_paren(sb, p);
}

/* ------------------------------------------------------------ arithmetic */

static const char *bin_op(enum texi_expr_kind k)
{
    switch (k) {
    case TEXI_EXPR_ADD:
        return "+";
    case TEXI_EXPR_SUB:
        return "-";
    case TEXI_EXPR_MUL:
        return "*";
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
        return "/";
    case TEXI_EXPR_FLOORMOD:
        return "%";
    case TEXI_EXPR_EQ:
        return "==";
    case TEXI_EXPR_NE:
        return "!=";
    case TEXI_EXPR_LT:
        return "<";
    case TEXI_EXPR_LE:
        return "<=";
    case TEXI_EXPR_GT:
        return ">";
    case TEXI_EXPR_GE:
        return ">=";
    case TEXI_EXPR_AND:
        return "&&";
    case TEXI_EXPR_OR:
        return "||";
    default:
        return "?";
    }
}

static int bin_prec(enum texi_expr_kind k)
{
    switch (k) {
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
        return TEXI_CG_P_ADD;
    case TEXI_EXPR_EQ:
    case TEXI_EXPR_NE:
        return TEXI_CG_P_EQ;
    case TEXI_EXPR_LT:
    case TEXI_EXPR_LE:
    case TEXI_EXPR_GT:
    case TEXI_EXPR_GE:
        return TEXI_CG_P_REL;
    case TEXI_EXPR_AND:
        return TEXI_CG_P_AND;
    case TEXI_EXPR_OR:
        return TEXI_CG_P_OR;
    default:
        return TEXI_CG_P_MUL;
    }
}

/* `a OP b` with C precedence (left-associative); cast_to, when set, is
 * applied to each operand ("(uint32_t)"). */
static void emit_infix(texi_cg *g, texi_sb *sb, const tex_expr *e, int prec, bool index,
                       const char *cast_to)
{
    int own = bin_prec(e->kind);
    bool p = open_paren(sb, own, prec);
    const tex_expr *ops[2] = {e->u.bin.a, e->u.bin.b};
    for (int i = 0; i < 2; i++) {
        int need = i == 0 ? own : own + 1;
        if (own <= TEXI_CG_P_AND && need < TEXI_CG_P_EQ)
            need = TEXI_CG_P_EQ; /* (a && b) || c */
        if (own == TEXI_CG_P_EQ || own == TEXI_CG_P_REL)
            need = is_logical(ops[i]) ? TEXI_CG_P_POSTFIX + 1 : need;
        if (i == 1)
            texi_sb_printf(sb, " %s ", bin_op(e->kind));
        if (cast_to) {
            texi_sb_puts(sb, cast_to);
            texi_cg_expr(g, sb, ops[i], TEXI_CG_P_UNARY, index);
        } else {
            texi_cg_expr(g, sb, ops[i], need, index);
        }
    }
    close_paren(sb, p);
}

/* + - * of integers, wrapping as the oracle does (see the essay). */
static void emit_int_arith(texi_cg *g, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    tex_dtype t = e->dtype;
    bool wide_signed = t == TEX_I32 || t == TEX_I64;
    if ((wide_signed && index) || t == TEX_U32 || t == TEX_U64) {
        emit_infix(g, sb, e, prec, index, NULL);
        return;
    }
    if (t == TEX_BOOL) {
        bool p = open_paren(sb, TEXI_CG_P_POSTFIX, prec);
        texi_sb_putc(sb, '(');
        emit_infix(g, sb, e, TEXI_CG_P_REL, index, NULL);
        texi_sb_puts(sb, " != 0)");
        close_paren(sb, p);
        return;
    }
    bool p = open_paren(sb, TEXI_CG_P_UNARY, prec);
    texi_sb_printf(sb, "(%s)(", texi_dtype_ctype(t));
    emit_infix(g, sb, e, TEXI_CG_P_TOP, index, t == TEX_I64 ? "(uint64_t)" : "(uint32_t)");
    texi_sb_putc(sb, ')');
    close_paren(sb, p);
}

/* Signed floordiv/floormod: plain / and % when both sides are provably
 * non-negative, else the floor helpers. */
static void emit_int_floor(texi_cg *g, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    tex_dtype t = e->dtype;
    texi_interval a = texi_const_interval(e->u.bin.a, g->n_ranges, g->ranges);
    texi_interval b = texi_const_interval(e->u.bin.b, g->n_ranges, g->ranges);
    bool plain = !texi_dtype_is_signed(t) || (!a.lo_inf && a.lo >= 0 && !b.lo_inf && b.lo >= 1);
    if (plain && t != TEX_BOOL) {
        emit_infix(g, sb, e, prec, index, NULL);
        return;
    }
    const char *fam = int_family(g, t, TEXI_CG_H_FLOOR_I32, TEXI_CG_H_FLOOR_I64, 0, 0);
    bool narrow = is_narrow(t) || t == TEX_BOOL;
    bool p = open_paren(sb, narrow ? TEXI_CG_P_UNARY : TEXI_CG_P_POSTFIX, prec);
    if (narrow)
        texi_sb_printf(sb, "(%s)", texi_dtype_ctype(t));
    texi_sb_printf(sb, "tex_floor%s_%s(", e->kind == TEXI_EXPR_FLOORMOD ? "mod" : "div", fam);
    texi_cg_expr(g, sb, e->u.bin.a, TEXI_CG_P_TOP, index);
    texi_sb_puts(sb, ", ");
    texi_cg_expr(g, sb, e->u.bin.b, TEXI_CG_P_TOP, index);
    texi_sb_putc(sb, ')');
    close_paren(sb, p);
}

/* The rounding wrapper of half type t ("tex_round_f16("), or "" otherwise. */
static const char *half_round(texi_cg *g, tex_dtype t)
{
    if (!is_half(t))
        return "";
    g->helpers |= t == TEX_F16 ? TEXI_CG_H_F16 : TEXI_CG_H_BF16;
    return t == TEX_F16 ? "tex_round_f16(" : "tex_round_bf16(";
}

/* Float floordiv/floormod, in double like the oracle. */
static void emit_float_floor(texi_cg *g, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    tex_dtype t = e->dtype;
    const char *rnd = half_round(g, t);
    bool p = open_paren(sb, TEXI_CG_P_UNARY, prec);
    texi_sb_puts(sb, rnd);
    if (t != TEX_F64)
        texi_sb_puts(sb, "(float)");
    texi_sb_putc(sb, '(');
    if (e->kind == TEXI_EXPR_FLOORMOD) {
        emit_as(g, sb, e->u.bin.a, TEX_F64, TEXI_CG_P_ADD, index);
        texi_sb_puts(sb, " - ");
        emit_as(g, sb, e->u.bin.b, TEX_F64, TEXI_CG_P_MUL, index);
        texi_sb_puts(sb, " * ");
    }
    texi_sb_puts(sb, "floor(");
    emit_as(g, sb, e->u.bin.a, TEX_F64, TEXI_CG_P_MUL, index);
    texi_sb_puts(sb, " / ");
    emit_as(g, sb, e->u.bin.b, TEX_F64, TEXI_CG_P_MUL + 1, index);
    texi_sb_puts(sb, "))");
    if (*rnd)
        texi_sb_putc(sb, ')');
    close_paren(sb, p);
}

static void emit_float_arith(texi_cg *g, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    const char *rnd = half_round(g, e->dtype);
    if (!*rnd) {
        emit_infix(g, sb, e, prec, index, NULL);
        return;
    }
    bool p = open_paren(sb, TEXI_CG_P_POSTFIX, prec);
    texi_sb_puts(sb, rnd);
    emit_infix(g, sb, e, TEXI_CG_P_TOP, index, NULL);
    texi_sb_putc(sb, ')');
    close_paren(sb, p);
}

static void emit_minmax(texi_cg *g, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    tex_dtype t = e->dtype;
    const char *fam;
    if (texi_dtype_is_float(t)) {
        g->helpers |= t == TEX_F64 ? TEXI_CG_H_MINMAX_F64 : TEXI_CG_H_MINMAX_F32;
        fam = t == TEX_F64 ? "f64" : "f32";
    } else {
        fam = int_family(g, t, TEXI_CG_H_MINMAX_I32, TEXI_CG_H_MINMAX_I64, TEXI_CG_H_MINMAX_U32,
                         TEXI_CG_H_MINMAX_U64);
    }
    bool narrow = is_narrow(t);
    bool p = open_paren(sb, narrow ? TEXI_CG_P_UNARY : TEXI_CG_P_POSTFIX, prec);
    if (narrow)
        texi_sb_printf(sb, "(%s)", texi_dtype_ctype(t));
    texi_sb_printf(sb, "tex_%s_%s(", e->kind == TEXI_EXPR_MIN ? "min" : "max", fam);
    texi_cg_expr(g, sb, e->u.bin.a, TEXI_CG_P_TOP, index);
    texi_sb_puts(sb, ", ");
    texi_cg_expr(g, sb, e->u.bin.b, TEXI_CG_P_TOP, index);
    texi_sb_putc(sb, ')');
    close_paren(sb, p);
}

static void emit_binary(texi_cg *g, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    bool fl = texi_dtype_is_float(e->u.bin.a->dtype);
    switch (e->kind) {
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
    case TEXI_EXPR_MUL:
        if (fl)
            emit_float_arith(g, sb, e, prec, index);
        else
            emit_int_arith(g, sb, e, prec, index);
        return;
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
        if (fl && e->kind == TEXI_EXPR_DIV)
            emit_float_arith(g, sb, e, prec, index);
        else if (fl)
            emit_float_floor(g, sb, e, prec, index);
        else
            emit_int_floor(g, sb, e, prec, index);
        return;
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        emit_minmax(g, sb, e, prec, index);
        return;
    default:
        emit_infix(g, sb, e, prec, index, NULL);
        return;
    }
}

/* ------------------------------------------------------------------ calls */

static const char *const math_c_names[TEXI_MATH_COUNT] = {
    [TEXI_MATH_EXP] = "exp",    [TEXI_MATH_LOG] = "log",     [TEXI_MATH_SQRT] = "sqrt",
    [TEXI_MATH_RSQRT] = "sqrt", [TEXI_MATH_TANH] = "tanh",   [TEXI_MATH_SIGMOID] = "exp",
    [TEXI_MATH_ERF] = "erf",    [TEXI_MATH_ABS] = "fabs",    [TEXI_MATH_FLOOR] = "floor",
    [TEXI_MATH_CEIL] = "ceil",  [TEXI_MATH_ROUND] = "round", [TEXI_MATH_SIN] = "sin",
    [TEXI_MATH_COS] = "cos",    [TEXI_MATH_POW] = "pow",     [TEXI_MATH_FMA] = "fma",
};

/* abs/floor/ceil/round of an integer of the same type: exact. */
static bool emit_int_math(texi_cg *g, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    enum texi_math op = e->u.call.op;
    tex_dtype t = e->dtype;
    if (texi_dtype_is_float(t) || e->u.call.n_args < 1 || e->u.call.args[0]->dtype != t ||
        (op != TEXI_MATH_ABS && op != TEXI_MATH_FLOOR && op != TEXI_MATH_CEIL &&
         op != TEXI_MATH_ROUND))
        return false;
    if (op != TEXI_MATH_ABS || !texi_dtype_is_signed(t)) {
        texi_cg_expr(g, sb, e->u.call.args[0], prec, index);
        return true;
    }
    const char *fam = int_family(g, t, TEXI_CG_H_ABS, TEXI_CG_H_ABS, 0, 0);
    bool p = open_paren(sb, TEXI_CG_P_UNARY, prec);
    texi_sb_printf(sb, "(%s)tex_abs_%s(", texi_dtype_ctype(t), fam);
    texi_cg_expr(g, sb, e->u.call.args[0], TEXI_CG_P_TOP, index);
    texi_sb_putc(sb, ')');
    close_paren(sb, p);
    return true;
}

/* The libm call in type ct (f32: the float functions, else double). */
static void emit_math_core(texi_cg *g, texi_sb *sb, const tex_expr *e, tex_dtype ct, bool index)
{
    enum texi_math op = e->u.call.op;
    const char *sfx = ct == TEX_F32 ? "f" : "";
    const char *one = ct == TEX_F32 ? "1.0f" : "1.0";
    if (op == TEXI_MATH_RSQRT)
        texi_sb_printf(sb, "%s / ", one);
    else if (op == TEXI_MATH_SIGMOID)
        texi_sb_printf(sb, "%s / (%s + ", one, one);
    texi_sb_printf(sb, "%s%s(", math_c_names[op], sfx);
    if (op == TEXI_MATH_SIGMOID)
        texi_sb_putc(sb, '-');
    for (int i = 0; i < e->u.call.n_args; i++) {
        if (i)
            texi_sb_puts(sb, ", ");
        emit_as(g, sb, e->u.call.args[i], ct,
                op == TEXI_MATH_SIGMOID ? TEXI_CG_P_POSTFIX : TEXI_CG_P_TOP, index);
    }
    texi_sb_puts(sb, op == TEXI_MATH_SIGMOID ? "))" : ")");
}

static void emit_call(texi_cg *g, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    if (emit_int_math(g, sb, e, prec, index))
        return;
    tex_dtype t = e->dtype;
    tex_dtype ct = t == TEX_F32 || is_half(t) ? TEX_F32 : TEX_F64;
    conv c = conversion(g, ct, t);
    enum texi_math op = e->u.call.op;
    bool ratio = op == TEXI_MATH_RSQRT || op == TEXI_MATH_SIGMOID;
    int own = c.identity ? (ratio ? TEXI_CG_P_MUL : TEXI_CG_P_POSTFIX) : c.own;
    bool p = open_paren(sb, own, prec);
    texi_sb_puts(sb, c.identity ? "" : c.pre);
    bool inner_p = !c.identity && ratio && c.inner > TEXI_CG_P_MUL;
    if (inner_p)
        texi_sb_putc(sb, '(');
    emit_math_core(g, sb, e, ct, index);
    if (inner_p)
        texi_sb_putc(sb, ')');
    texi_sb_puts(sb, c.identity ? "" : c.post);
    close_paren(sb, p);
}

/* ---------------------------------------------------------- memory access */

void texi_cg_load(texi_cg *g, texi_sb *sb, const texi_buffer *buf, const tex_expr *index,
                  tex_dtype t, int prec)
{
    tex_dtype st = buf->dtype;
    conv c = conversion(g, st, t);
    bool p = !c.identity && open_paren(sb, c.own, prec);
    texi_sb_puts(sb, c.identity ? "" : c.pre);
    const char *dec = st == TEX_F16 ? "tex_f16_to_f32(" : st == TEX_BF16 ? "tex_bf16_to_f32(" : "";
    if (*dec)
        g->helpers |= st == TEX_F16 ? TEXI_CG_H_F16 : TEXI_CG_H_BF16;
    bool bool_p = st == TEX_BOOL && (c.identity ? prec : c.inner) > TEXI_CG_P_AND;
    if (bool_p)
        texi_sb_putc(sb, '(');
    texi_sb_puts(sb, dec);
    texi_sb_printf(sb, "%s[",
                   texi_cg_lookup(g, buf->data ? (const void *)buf->data : buf, buf->name));
    texi_cg_expr(g, sb, index, TEXI_CG_P_TOP, true);
    texi_sb_puts(sb, *dec ? "])" : "]");
    if (st == TEX_BOOL)
        texi_sb_puts(sb, " != 0");
    if (bool_p)
        texi_sb_putc(sb, ')');
    texi_sb_puts(sb, c.identity ? "" : c.post);
    close_paren(sb, p);
}

void texi_cg_store_value(texi_cg *g, texi_sb *sb, const tex_expr *e, tex_dtype t)
{
    if (!is_half(t)) {
        emit_as(g, sb, e, t, TEXI_CG_P_TOP, false);
        return;
    }
    g->helpers |= t == TEX_F16 ? TEXI_CG_H_F16 : TEXI_CG_H_BF16;
    texi_sb_puts(sb, t == TEX_F16 ? "tex_f16_from_f32(" : "tex_bf16_from_f32(");
    emit_as(g, sb, e, is_half(e->dtype) ? e->dtype : TEX_F32, TEXI_CG_P_TOP, false);
    texi_sb_putc(sb, ')');
}

/* ----------------------------------------------------------- expressions */

static void emit_select(texi_cg *g, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    bool p = open_paren(sb, TEXI_CG_P_COND, prec);
    texi_cg_expr(g, sb, e->u.sel.cond, TEXI_CG_P_OR, index);
    texi_sb_puts(sb, " ? ");
    emit_as(g, sb, e->u.sel.t, e->dtype, TEXI_CG_P_OR, index);
    texi_sb_puts(sb, " : ");
    emit_as(g, sb, e->u.sel.f, e->dtype, TEXI_CG_P_COND, index);
    close_paren(sb, p);
}

void texi_cg_expr(texi_cg *g, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    bool p;
    switch (e->kind) {
    case TEXI_EXPR_INT:
        emit_int(sb, e->dtype, e->u.i, prec);
        return;
    case TEXI_EXPR_FLOAT:
        emit_float(sb, e->dtype, e->u.f, prec);
        return;
    case TEXI_EXPR_VAR:
        texi_sb_puts(sb, texi_cg_lookup(g, e, e->u.var.name));
        return;
    TEXI_CASE_BINARY:
        emit_binary(g, sb, e, prec, index);
        return;
    case TEXI_EXPR_NOT:
        p = open_paren(sb, TEXI_CG_P_UNARY, prec);
        texi_sb_putc(sb, '!');
        texi_cg_expr(g, sb, e->u.un.a, TEXI_CG_P_UNARY, index);
        close_paren(sb, p);
        return;
    case TEXI_EXPR_CAST:
        emit_as(g, sb, e->u.un.a, e->dtype, prec, index);
        return;
    case TEXI_EXPR_SELECT:
        emit_select(g, sb, e, prec, index);
        return;
    case TEXI_EXPR_CALL:
        emit_call(g, sb, e, prec, index);
        return;
    case TEXI_EXPR_LOAD:
        texi_cg_load(g, sb, e->u.load.buf, e->u.load.index, e->dtype, prec);
        return;
    case TEXI_EXPR_ACCESS:
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    texi_cg_fail(g, TEX_EINTERNAL, "a '%s' node cannot occur in a lowered function",
                 e->kind < TEXI_EXPR_KIND_COUNT ? texi_expr_kind_names[e->kind] : "?");
}

/* ---------------------------------------------------------------- helpers */

static const char helper_bits[] =
    "static inline uint32_t tex_bits_f32(float v)\n"
    "{\n    uint32_t u;\n    memcpy(&u, &v, sizeof u);\n    return u;\n}\n\n"
    "static inline float tex_f32_bits(uint32_t u)\n"
    "{\n    float v;\n    memcpy(&v, &u, sizeof v);\n    return v;\n}\n\n";

/* Mirrors src/util/half.c: round to nearest even, NaN kept quiet. */
static const char helper_f16[] =
    "static inline uint16_t tex_f16_from_f32(float v)\n"
    "{\n"
    "    uint32_t u = tex_bits_f32(v);\n"
    "    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);\n"
    "    uint32_t a = u & 0x7fffffffu;\n"
    "    if (a > 0x7f800000u)\n"
    "        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));\n"
    "    if (a >= 0x477ff000u)\n"
    "        return (uint16_t)(sign | 0x7c00u);\n"
    "    if (a < 0x38800000u) {\n"
    "        if (a < 0x33000000u)\n"
    "            return sign;\n"
    "        uint32_t mant = (a & 0x7fffffu) | 0x800000u;\n"
    "        int shift = 126 - (int)(a >> 23);\n"
    "        uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u);\n"
    "        uint32_t half = 1u << (shift - 1);\n"
    "        if (rem > half || (rem == half && (q & 1u)))\n"
    "            q++;\n"
    "        return (uint16_t)(sign | q);\n"
    "    }\n"
    "    uint32_t r = a - 0x38000000u;\n"
    "    r += 0xfffu + ((r >> 13) & 1u);\n"
    "    return (uint16_t)(sign | (r >> 13));\n"
    "}\n\n"
    "static inline float tex_f16_to_f32(uint16_t h)\n"
    "{\n"
    "    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;\n"
    "    uint32_t e = (h >> 10) & 0x1fu, mant = h & 0x3ffu;\n"
    "    if (e == 0x1f)\n"
    "        return tex_f32_bits(sign | 0x7f800000u | (mant << 13));\n"
    "    if (e != 0)\n"
    "        return tex_f32_bits(sign | ((e + 112u) << 23) | (mant << 13));\n"
    "    float v = (float)mant * (1.0f / 16777216.0f);\n"
    "    return sign ? -v : v;\n"
    "}\n\n"
    "static inline float tex_round_f16(float v)\n"
    "{\n    return tex_f16_to_f32(tex_f16_from_f32(v));\n}\n\n";

static const char helper_bf16[] = "static inline uint16_t tex_bf16_from_f32(float v)\n"
                                  "{\n"
                                  "    uint32_t u = tex_bits_f32(v);\n"
                                  "    if ((u & 0x7fffffffu) > 0x7f800000u)\n"
                                  "        return (uint16_t)((u >> 16) | 0x0040u);\n"
                                  "    u += 0x7fffu + ((u >> 16) & 1u);\n"
                                  "    return (uint16_t)(u >> 16);\n"
                                  "}\n\n"
                                  "static inline float tex_bf16_to_f32(uint16_t h)\n"
                                  "{\n    return tex_f32_bits((uint32_t)h << 16);\n}\n\n"
                                  "static inline float tex_round_bf16(float v)\n"
                                  "{\n    return tex_bf16_to_f32(tex_bf16_from_f32(v));\n}\n\n";

/* Floor division helpers for one signed type (T, unsigned U, suffix). */
static void helper_floor(texi_sb *sb, const char *t, const char *u, const char *sfx)
{
    texi_sb_printf(sb,
                   "static inline %s tex_floordiv_%s(%s a, %s b)\n{\n"
                   "    if (b == -1)\n        return (%s)(0 - (%s)a);\n"
                   "    %s q = a / b;\n"
                   "    return (a %% b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n}\n\n",
                   t, sfx, t, t, t, u, t);
    texi_sb_printf(sb,
                   "static inline %s tex_floormod_%s(%s a, %s b)\n{\n"
                   "    if (b == -1)\n        return 0;\n"
                   "    %s r = a %% b;\n"
                   "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n\n",
                   t, sfx, t, t, t);
}

/* min/max of one type; floats propagate NaN like the oracle. */
static void helper_minmax(texi_sb *sb, const char *t, const char *sfx, bool fl)
{
    texi_sb_printf(sb, "static inline %s tex_min_%s(%s a, %s b)\n{\n    return %s ? b : a;\n}\n\n",
                   t, sfx, t, t, fl ? "(b < a || b != b)" : "b < a");
    texi_sb_printf(sb, "static inline %s tex_max_%s(%s a, %s b)\n{\n    return %s ? b : a;\n}\n\n",
                   t, sfx, t, t, fl ? "(a < b || b != b)" : "a < b");
}

static const char helper_f2i[] =
    "static inline int64_t tex_f2i64(double v)\n{\n"
    "    return v != v ? 0 : v >= 9223372036854775807.0 ? INT64_MAX\n"
    "         : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;\n}\n\n"
    "static inline uint64_t tex_f2u64(double v)\n{\n"
    "    return v != v || v <= 0 ? 0 : v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;\n"
    "}\n\n";

static const char helper_abs[] = "static inline int32_t tex_abs_i32(int32_t x)\n{\n"
                                 "    return x < 0 ? (int32_t)(0 - (uint32_t)x) : x;\n}\n\n"
                                 "static inline int64_t tex_abs_i64(int64_t x)\n{\n"
                                 "    return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;\n}\n\n";

/* n elements of elem bytes, 64-byte aligned (at least 64 bytes); NULL on failure. */
static const char helper_alloc[] =
    "static inline void *tex_alloc(int64_t n, size_t elem)\n{\n"
    "    void *p = NULL;\n"
    "    if (n < 0 || (uint64_t)n > SIZE_MAX / 2 / elem)\n        return NULL;\n"
    "    return posix_memalign(&p, 64, ((size_t)n * elem / 64 + 1) * 64) == 0 ? p : NULL;\n}\n\n";

void texi_cg_helpers(texi_sb *sb, unsigned mask)
{
    if (mask & (TEXI_CG_H_F16 | TEXI_CG_H_BF16))
        texi_sb_puts(sb, helper_bits);
    if (mask & TEXI_CG_H_F16)
        texi_sb_puts(sb, helper_f16);
    if (mask & TEXI_CG_H_BF16)
        texi_sb_puts(sb, helper_bf16);
    if (mask & TEXI_CG_H_FLOOR_I32)
        helper_floor(sb, "int32_t", "uint32_t", "i32");
    if (mask & TEXI_CG_H_FLOOR_I64)
        helper_floor(sb, "int64_t", "uint64_t", "i64");
    static const struct {
        unsigned bit;
        const char *t, *sfx;
    } mm[] = {{TEXI_CG_H_MINMAX_I32, "int32_t", "i32"},  {TEXI_CG_H_MINMAX_I64, "int64_t", "i64"},
              {TEXI_CG_H_MINMAX_U32, "uint32_t", "u32"}, {TEXI_CG_H_MINMAX_U64, "uint64_t", "u64"},
              {TEXI_CG_H_MINMAX_F32, "float", "f32"},    {TEXI_CG_H_MINMAX_F64, "double", "f64"}};
    for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++)
        if (mask & mm[i].bit)
            helper_minmax(sb, mm[i].t, mm[i].sfx, mm[i].bit >= TEXI_CG_H_MINMAX_F32);
    if (mask & TEXI_CG_H_F2I)
        texi_sb_puts(sb, helper_f2i);
    if (mask & TEXI_CG_H_ABS)
        texi_sb_puts(sb, helper_abs);
    if (mask & TEXI_CG_H_ALLOC)
        texi_sb_puts(sb, helper_alloc);
}
