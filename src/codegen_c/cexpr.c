/*
 * Expressions of the C-family printer (cprint.h), for every target.
 *
 * Every expression is emitted as a value of its dtype's value type (the
 * target's value_type): integers as their <stdint.h> type, f32/f64 as
 * float/double, f16/bf16 values as float holding a value exactly
 * representable in the narrow type, bool as the target's int or bool. The
 * text reproduces the reference evaluator's semantics (src/ir/eval_expr.c):
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
 *   - Math: f32 (and f16/bf16) call the float functions (expf ...), f64 and
 *     integer-typed calls the double ones, spelled as math_funcs.def says;
 *     rsqrt is the target's rsqrtf when it has one (CUDA's, within 2 ulp),
 *     else 1 / sqrt; sigmoid = 1 / (1 + exp(-x)); abs/floor/ceil/round of
 *     an integer are exact.
 * Parentheses follow C's precedence, plus the ones -Wparentheses and
 * -Wlogical-not-parentheses ask for around && in || and around operands of
 * comparisons that are themselves comparisons or logical operations.
 * Constants use <stdint.h>'s and <math.h>'s macros (INT64_C, INT64_MIN,
 * INFINITY, NAN ...): a target without those headers defines them.
 */
#include "codegen_c/cprint.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------------- types */

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
static const char *int_family(texi_cp *p, tex_dtype t, unsigned h32, unsigned h64, unsigned hu32,
                              unsigned hu64)
{
    bool wide = texi_dtype_bits(t) == 64;
    if (texi_dtype_is_signed(t) || t == TEX_BOOL || !hu32) {
        p->helpers |= wide ? h64 : h32;
        return wide ? "i64" : "i32";
    }
    p->helpers |= wide ? hu64 : hu32;
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
    bool par = neg && open_paren(sb, TEXI_CP_P_UNARY, prec);
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
    close_paren(sb, par);
}

static void emit_float(texi_sb *sb, tex_dtype t, double v, int prec)
{
    bool par = (signbit(v) && !isnan(v)) && open_paren(sb, TEXI_CP_P_UNARY, prec);
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
    close_paren(sb, par);
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

static conv conversion(texi_cp *p, tex_dtype from, tex_dtype to)
{
    conv c = {"", "", TEXI_CP_P_UNARY, TEXI_CP_P_UNARY, false};
    bool ff = texi_dtype_is_float(from);
    if (from == to || (to == TEX_F32 && is_half(from))) {
        c.identity = true;
    } else if (to == TEX_BOOL) {
        snprintf(c.pre, sizeof c.pre, "(");
        c.post = " != 0)";
        c.inner = TEXI_CP_P_REL;
        c.own = TEXI_CP_P_POSTFIX;
    } else if (to == TEX_F32 || to == TEX_F64) {
        snprintf(c.pre, sizeof c.pre, "(%s)", texi_dtype_ctype(to));
    } else if (is_half(to)) {
        p->helpers |= to == TEX_F16 ? TEXI_CP_H_F16 : TEXI_CP_H_BF16;
        const char *fn = to == TEX_F16 ? "tex_round_f16" : "tex_round_bf16";
        bool exact = from == TEX_F32 || is_half(from);
        snprintf(c.pre, sizeof c.pre, "%s(%s", fn, exact ? "" : "(float)");
        c.post = ")";
        c.inner = exact ? TEXI_CP_P_TOP : TEXI_CP_P_UNARY;
        c.own = TEXI_CP_P_POSTFIX;
    } else if (ff) { /* float -> integer: saturate, then wrap */
        p->helpers |= TEXI_CP_H_F2I;
        if (to == TEX_U64 || to == TEX_I64)
            snprintf(c.pre, sizeof c.pre, "tex_f2%s(", to == TEX_U64 ? "u64" : "i64");
        else
            snprintf(c.pre, sizeof c.pre, "(%s)tex_f2i64(", texi_dtype_ctype(to));
        c.post = ")";
        c.inner = TEXI_CP_P_TOP;
        c.own = to == TEX_U64 || to == TEX_I64 ? TEXI_CP_P_POSTFIX : TEXI_CP_P_UNARY;
    } else {
        snprintf(c.pre, sizeof c.pre, "(%s)", texi_dtype_ctype(to));
    }
    return c;
}

/* Appends e converted to dtype `to`. */
static void emit_as(texi_cp *p, texi_sb *sb, const tex_expr *e, tex_dtype to, int prec, bool index)
{
    conv c = conversion(p, e->dtype, to);
    if (c.identity) {
        texi_cp_expr(p, sb, e, prec, index);
        return;
    }
    bool par = open_paren(sb, c.own, prec);
    texi_sb_puts(sb, c.pre);
    texi_cp_expr(p, sb, e, c.inner, index);
    texi_sb_puts(sb, c.post);
    close_paren(sb, par);
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
        return TEXI_CP_P_ADD;
    case TEXI_EXPR_EQ:
    case TEXI_EXPR_NE:
        return TEXI_CP_P_EQ;
    case TEXI_EXPR_LT:
    case TEXI_EXPR_LE:
    case TEXI_EXPR_GT:
    case TEXI_EXPR_GE:
        return TEXI_CP_P_REL;
    case TEXI_EXPR_AND:
        return TEXI_CP_P_AND;
    case TEXI_EXPR_OR:
        return TEXI_CP_P_OR;
    default:
        return TEXI_CP_P_MUL;
    }
}

/* `a OP b` with C precedence (left-associative); cast_to, when set, is
 * applied to each operand ("(uint32_t)"). */
static void emit_infix(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index,
                       const char *cast_to)
{
    int own = bin_prec(e->kind);
    bool par = open_paren(sb, own, prec);
    const tex_expr *ops[2] = {e->u.bin.a, e->u.bin.b};
    for (int i = 0; i < 2; i++) {
        int need = i == 0 ? own : own + 1;
        if (own <= TEXI_CP_P_AND && need < TEXI_CP_P_EQ)
            need = TEXI_CP_P_EQ; /* (a && b) || c */
        if (own == TEXI_CP_P_EQ || own == TEXI_CP_P_REL)
            need = is_logical(ops[i]) ? TEXI_CP_P_POSTFIX + 1 : need;
        if (i == 1)
            texi_sb_printf(sb, " %s ", bin_op(e->kind));
        if (cast_to) {
            texi_sb_puts(sb, cast_to);
            texi_cp_expr(p, sb, ops[i], TEXI_CP_P_UNARY, index);
        } else {
            texi_cp_expr(p, sb, ops[i], need, index);
        }
    }
    close_paren(sb, par);
}

/* + - * of integers, wrapping as the oracle does (see the essay). */
static void emit_int_arith(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    tex_dtype t = e->dtype;
    bool wide_signed = t == TEX_I32 || t == TEX_I64;
    if ((wide_signed && index) || t == TEX_U32 || t == TEX_U64) {
        emit_infix(p, sb, e, prec, index, NULL);
        return;
    }
    if (t == TEX_BOOL) {
        bool par = open_paren(sb, TEXI_CP_P_POSTFIX, prec);
        texi_sb_putc(sb, '(');
        emit_infix(p, sb, e, TEXI_CP_P_REL, index, NULL);
        texi_sb_puts(sb, " != 0)");
        close_paren(sb, par);
        return;
    }
    bool par = open_paren(sb, TEXI_CP_P_UNARY, prec);
    texi_sb_printf(sb, "(%s)(", texi_dtype_ctype(t));
    emit_infix(p, sb, e, TEXI_CP_P_TOP, index, t == TEX_I64 ? "(uint64_t)" : "(uint32_t)");
    texi_sb_putc(sb, ')');
    close_paren(sb, par);
}

/* A binary integer or float helper call tex_OP_FAM(a, b); a narrow
 * (8/16-bit or bool) result is cast back from the 32-bit helper's. */
static void emit_helper_call(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index,
                             const char *op, const char *fam)
{
    bool narrow = is_narrow(e->dtype) || e->dtype == TEX_BOOL;
    bool par = open_paren(sb, narrow ? TEXI_CP_P_UNARY : TEXI_CP_P_POSTFIX, prec);
    if (narrow)
        texi_sb_printf(sb, "(%s)", texi_dtype_ctype(e->dtype));
    texi_sb_printf(sb, "tex_%s_%s(", op, fam);
    texi_cp_expr(p, sb, e->u.bin.a, TEXI_CP_P_TOP, index);
    texi_sb_puts(sb, ", ");
    texi_cp_expr(p, sb, e->u.bin.b, TEXI_CP_P_TOP, index);
    texi_sb_putc(sb, ')');
    close_paren(sb, par);
}

/* Signed floordiv/floormod: plain / and % when both sides are provably
 * non-negative, else the floor helpers. */
static void emit_int_floor(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    tex_dtype t = e->dtype;
    texi_interval a = texi_const_interval(e->u.bin.a, p->n_ranges, p->ranges);
    texi_interval b = texi_const_interval(e->u.bin.b, p->n_ranges, p->ranges);
    bool plain = !texi_dtype_is_signed(t) || (!a.lo_inf && a.lo >= 0 && !b.lo_inf && b.lo >= 1);
    if (plain && t != TEX_BOOL) {
        emit_infix(p, sb, e, prec, index, NULL);
        return;
    }
    const char *fam = int_family(p, t, TEXI_CP_H_FLOOR_I32, TEXI_CP_H_FLOOR_I64, 0, 0);
    emit_helper_call(p, sb, e, prec, index, e->kind == TEXI_EXPR_FLOORMOD ? "floormod" : "floordiv",
                     fam);
}

/* The rounding wrapper of half type t ("tex_round_f16("), or "" otherwise. */
static const char *half_round(texi_cp *p, tex_dtype t)
{
    if (!is_half(t))
        return "";
    p->helpers |= t == TEX_F16 ? TEXI_CP_H_F16 : TEXI_CP_H_BF16;
    return t == TEX_F16 ? "tex_round_f16(" : "tex_round_bf16(";
}

/* Float floordiv/floormod, in double like the oracle. */
static void emit_float_floor(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    tex_dtype t = e->dtype;
    const char *rnd = half_round(p, t);
    bool par = open_paren(sb, TEXI_CP_P_UNARY, prec);
    texi_sb_puts(sb, rnd);
    if (t != TEX_F64)
        texi_sb_puts(sb, "(float)");
    texi_sb_putc(sb, '(');
    if (e->kind == TEXI_EXPR_FLOORMOD) {
        emit_as(p, sb, e->u.bin.a, TEX_F64, TEXI_CP_P_ADD, index);
        texi_sb_puts(sb, " - ");
        emit_as(p, sb, e->u.bin.b, TEX_F64, TEXI_CP_P_MUL, index);
        texi_sb_puts(sb, " * ");
    }
    texi_sb_puts(sb, "floor(");
    emit_as(p, sb, e->u.bin.a, TEX_F64, TEXI_CP_P_MUL, index);
    texi_sb_puts(sb, " / ");
    emit_as(p, sb, e->u.bin.b, TEX_F64, TEXI_CP_P_MUL + 1, index);
    texi_sb_puts(sb, "))");
    if (*rnd)
        texi_sb_putc(sb, ')');
    close_paren(sb, par);
}

static void emit_float_arith(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    const char *rnd = half_round(p, e->dtype);
    if (!*rnd) {
        emit_infix(p, sb, e, prec, index, NULL);
        return;
    }
    bool par = open_paren(sb, TEXI_CP_P_POSTFIX, prec);
    texi_sb_puts(sb, rnd);
    emit_infix(p, sb, e, TEXI_CP_P_TOP, index, NULL);
    texi_sb_putc(sb, ')');
    close_paren(sb, par);
}

static void emit_minmax(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    tex_dtype t = e->dtype;
    const char *fam;
    if (texi_dtype_is_float(t)) {
        p->helpers |= t == TEX_F64 ? TEXI_CP_H_MINMAX_F64 : TEXI_CP_H_MINMAX_F32;
        fam = t == TEX_F64 ? "f64" : "f32";
    } else {
        fam = int_family(p, t, TEXI_CP_H_MINMAX_I32, TEXI_CP_H_MINMAX_I64, TEXI_CP_H_MINMAX_U32,
                         TEXI_CP_H_MINMAX_U64);
    }
    emit_helper_call(p, sb, e, prec, index, e->kind == TEXI_EXPR_MIN ? "min" : "max", fam);
}

static void emit_binary(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    bool fl = texi_dtype_is_float(e->u.bin.a->dtype);
    switch (e->kind) {
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
    case TEXI_EXPR_MUL:
        if (fl)
            emit_float_arith(p, sb, e, prec, index);
        else
            emit_int_arith(p, sb, e, prec, index);
        return;
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
        if (fl && e->kind == TEXI_EXPR_DIV)
            emit_float_arith(p, sb, e, prec, index);
        else if (fl)
            emit_float_floor(p, sb, e, prec, index);
        else
            emit_int_floor(p, sb, e, prec, index);
        return;
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        emit_minmax(p, sb, e, prec, index);
        return;
    default:
        emit_infix(p, sb, e, prec, index, NULL);
        return;
    }
}

/* ------------------------------------------------------------------ calls */

/* The C spelling of each math function (float forms add an f). */
static const char *const math_c_names[TEXI_MATH_COUNT] = {
#define X(name, spelling, arity, c_spelling) c_spelling,
#include "ir/math_funcs.def"
#undef X
};

/* abs/floor/ceil/round of an integer of the same type: exact. */
static bool emit_int_math(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    enum texi_math op = e->u.call.op;
    tex_dtype t = e->dtype;
    if (texi_dtype_is_float(t) || e->u.call.n_args < 1 || e->u.call.args[0]->dtype != t ||
        (op != TEXI_MATH_ABS && op != TEXI_MATH_FLOOR && op != TEXI_MATH_CEIL &&
         op != TEXI_MATH_ROUND))
        return false;
    if (op != TEXI_MATH_ABS || !texi_dtype_is_signed(t)) {
        texi_cp_expr(p, sb, e->u.call.args[0], prec, index);
        return true;
    }
    const char *fam = int_family(p, t, TEXI_CP_H_ABS, TEXI_CP_H_ABS, 0, 0);
    bool par = open_paren(sb, TEXI_CP_P_UNARY, prec);
    texi_sb_printf(sb, "(%s)tex_abs_%s(", texi_dtype_ctype(t), fam);
    texi_cp_expr(p, sb, e->u.call.args[0], TEXI_CP_P_TOP, index);
    texi_sb_putc(sb, ')');
    close_paren(sb, par);
    return true;
}

/* The libm call in type ct (f32: the float functions, else double). */
static void emit_math_core(texi_cp *p, texi_sb *sb, const tex_expr *e, tex_dtype ct, bool index)
{
    enum texi_math op = e->u.call.op;
    const char *sfx = ct == TEX_F32 ? "f" : "";
    const char *one = ct == TEX_F32 ? "1.0f" : "1.0";
    bool rsqrt = op == TEXI_MATH_RSQRT && p->target->native_rsqrt;
    if (op == TEXI_MATH_RSQRT && !rsqrt)
        texi_sb_printf(sb, "%s / ", one);
    else if (op == TEXI_MATH_SIGMOID)
        texi_sb_printf(sb, "%s / (%s + ", one, one);
    texi_sb_printf(sb, "%s%s(", rsqrt ? "rsqrt" : math_c_names[op], sfx);
    if (op == TEXI_MATH_SIGMOID)
        texi_sb_putc(sb, '-');
    for (int i = 0; i < e->u.call.n_args; i++) {
        if (i)
            texi_sb_puts(sb, ", ");
        emit_as(p, sb, e->u.call.args[i], ct,
                op == TEXI_MATH_SIGMOID ? TEXI_CP_P_POSTFIX : TEXI_CP_P_TOP, index);
    }
    texi_sb_puts(sb, op == TEXI_MATH_SIGMOID ? "))" : ")");
}

static void emit_call(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    if (emit_int_math(p, sb, e, prec, index))
        return;
    tex_dtype t = e->dtype;
    tex_dtype ct = t == TEX_F32 || is_half(t) ? TEX_F32 : TEX_F64;
    conv c = conversion(p, ct, t);
    enum texi_math op = e->u.call.op;
    bool ratio = (op == TEXI_MATH_RSQRT && !p->target->native_rsqrt) || op == TEXI_MATH_SIGMOID;
    int own = c.identity ? (ratio ? TEXI_CP_P_MUL : TEXI_CP_P_POSTFIX) : c.own;
    bool par = open_paren(sb, own, prec);
    texi_sb_puts(sb, c.identity ? "" : c.pre);
    bool inner_p = !c.identity && ratio && c.inner > TEXI_CP_P_MUL;
    if (inner_p)
        texi_sb_putc(sb, '(');
    emit_math_core(p, sb, e, ct, index);
    if (inner_p)
        texi_sb_putc(sb, ')');
    texi_sb_puts(sb, c.identity ? "" : c.post);
    close_paren(sb, par);
}

/* ---------------------------------------------------------- memory access */

void texi_cp_load(texi_cp *p, texi_sb *sb, const texi_buffer *buf, tex_expr *index, tex_dtype t,
                  int prec)
{
    tex_dtype st = buf->dtype;
    conv c = conversion(p, st, t);
    bool par = !c.identity && open_paren(sb, c.own, prec);
    texi_sb_puts(sb, c.identity ? "" : c.pre);
    const char *dec = is_half(st) ? p->target->decode[st == TEX_BF16] : "";
    if (*dec)
        p->helpers |= st == TEX_F16 ? TEXI_CP_H_F16 : TEXI_CP_H_BF16;
    bool bool_p = st == TEX_BOOL && (c.identity ? prec : c.inner) > TEXI_CP_P_AND;
    if (bool_p)
        texi_sb_putc(sb, '(');
    texi_sb_puts(sb, dec);
    texi_cp_element(p, sb, buf, index);
    texi_sb_puts(sb, *dec ? ")" : "");
    if (st == TEX_BOOL)
        texi_sb_puts(sb, " != 0");
    if (bool_p)
        texi_sb_putc(sb, ')');
    texi_sb_puts(sb, c.identity ? "" : c.post);
    close_paren(sb, par);
}

void texi_cp_store_value(texi_cp *p, texi_sb *sb, const tex_expr *e, tex_dtype t)
{
    if (!is_half(t)) {
        emit_as(p, sb, e, t, TEXI_CP_P_TOP, false);
        return;
    }
    p->helpers |= t == TEX_F16 ? TEXI_CP_H_F16 : TEXI_CP_H_BF16;
    texi_sb_puts(sb, p->target->encode[t == TEX_BF16]);
    emit_as(p, sb, e, is_half(e->dtype) ? e->dtype : TEX_F32, TEXI_CP_P_TOP, false);
    texi_sb_putc(sb, ')');
}

/* ----------------------------------------------------------- expressions */

static void emit_select(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    bool par = open_paren(sb, TEXI_CP_P_COND, prec);
    texi_cp_expr(p, sb, e->u.sel.cond, TEXI_CP_P_OR, index);
    texi_sb_puts(sb, " ? ");
    emit_as(p, sb, e->u.sel.t, e->dtype, TEXI_CP_P_OR, index);
    texi_sb_puts(sb, " : ");
    emit_as(p, sb, e->u.sel.f, e->dtype, TEXI_CP_P_COND, index);
    close_paren(sb, par);
}

/* (T)tex_upper_bound_i32(buf, lo, hi, value) / tex_find_...: the helpers
 * of chelpers.c over an int32_t or int64_t buffer. */
static void emit_search(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec)
{
    const texi_buffer *b = e->u.search.buf;
    bool wide = b && b->dtype == TEX_I64;
    if (!b || (b->dtype != TEX_I32 && !wide)) {
        texi_cp_fail(p, TEX_EINTERNAL, "a search of '%s', which is not an i32 or i64 buffer",
                     b ? b->name : e->u.search.tensor->name);
        return;
    }
    p->helpers |= wide ? TEXI_CP_H_SEARCH_I64 : TEXI_CP_H_SEARCH_I32;
    bool par = open_paren(sb, TEXI_CP_P_UNARY, prec);
    texi_sb_printf(sb, "(%s)tex_%s_%s(%s", texi_dtype_ctype(e->dtype),
                   texi_search_names[e->u.search.op], wide ? "i64" : "i32",
                   texi_cp_lookup(p, texi_buffer_key(b), b->name));
    tex_expr *ops[] = {e->u.search.lo, e->u.search.hi, e->u.search.value};
    for (int i = 0; i < 3; i++) {
        texi_sb_puts(sb, ", ");
        texi_cp_expr(p, sb, ops[i], TEXI_CP_P_COND, true);
    }
    texi_sb_putc(sb, ')');
    close_paren(sb, par);
}

void texi_cp_expr(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index)
{
    bool par;
    if (e->lanes > 1 && p->lane < 0) {
        texi_cp_vector(p, sb, e, prec);
        return;
    }
    if (e->lanes > 1 && texi_cp_lane_expr(p, sb, e, prec))
        return;
    if ((e->kind == TEXI_EXPR_VAR || e->kind == TEXI_EXPR_LOAD) && p->target->expr &&
        p->target->expr(p, sb, e, prec))
        return;
    switch (e->kind) {
    case TEXI_EXPR_INT:
        emit_int(sb, e->dtype, e->u.i, prec);
        return;
    case TEXI_EXPR_FLOAT:
        emit_float(sb, e->dtype, e->u.f, prec);
        return;
    case TEXI_EXPR_VAR:
        texi_sb_puts(sb, texi_cp_lookup(p, e, e->u.var.name));
        return;
    TEXI_CASE_BINARY:
        emit_binary(p, sb, e, prec, index);
        return;
    case TEXI_EXPR_NOT:
        par = open_paren(sb, TEXI_CP_P_UNARY, prec);
        texi_sb_putc(sb, '!');
        texi_cp_expr(p, sb, e->u.un.a, TEXI_CP_P_UNARY, index);
        close_paren(sb, par);
        return;
    case TEXI_EXPR_CAST:
        emit_as(p, sb, e->u.un.a, e->dtype, prec, index);
        return;
    case TEXI_EXPR_SELECT:
        emit_select(p, sb, e, prec, index);
        return;
    case TEXI_EXPR_CALL:
        emit_call(p, sb, e, prec, index);
        return;
    case TEXI_EXPR_LOAD:
        if (e->u.load.mask)
            texi_cp_masked_load_lane(p, sb, e, prec);
        else
            texi_cp_load(p, sb, e->u.load.buf, e->u.load.index, e->dtype, prec);
        return;
    case TEXI_EXPR_VREDUCE:
        texi_cp_vreduce(p, sb, e);
        return;
    case TEXI_EXPR_SEARCH:
        emit_search(p, sb, e, prec);
        return;
    case TEXI_EXPR_ACCESS:
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_RAMP: /* vectors: handled above */
    case TEXI_EXPR_BROADCAST:
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    texi_cp_fail(p, TEX_EINTERNAL, "a '%s' node cannot occur in a lowered function",
                 e->kind < TEXI_EXPR_KIND_COUNT ? texi_expr_kind_names[e->kind] : "?");
}
