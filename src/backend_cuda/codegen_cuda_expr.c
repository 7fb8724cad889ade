/*
 * CUDA C expressions of the CUDA emitter (texi_cu_expr) and its device
 * helpers. Every compound expression is parenthesized, so no precedence is
 * tracked. Values of f16/bf16 are computed in float: loads convert with
 * __half2float / __bfloat162float (cuda_fp16.h / cuda_bf16.h), stores with
 * __float2half_rn / __float2bfloat16_rn, and every arithmetic result of a
 * half type is rounded to it (tex_round_f16 / tex_round_bf16), as the CPU
 * emitter does. Integer floordiv/floormod/min/max/abs go through small
 * templates (tex_floordiv<T> ...); float math uses CUDA's precise
 * single-precision functions for f32 and half types (expf, rsqrtf, ...;
 * never the __expf-style fast intrinsics) and the double ones for f64;
 * every function of src/ir/math_funcs.def has a spelling (math_name).
 * While codegen_cuda.c emits a vectorized store lane by lane, the loop
 * variable prints as (base + lane) and its vector loads as components.
 * Float-to-integer casts are plain C++ casts (undefined outside
 * the target range, unlike the CPU emitter's saturating ones).
 */
#include "backend_cuda/codegen_cuda.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char texi_cu_helpers[] =
    "template <typename T> __device__ __forceinline__ T tex_floordiv(T a, T b)\n"
    "{\n    T q = a / b;\n    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n}\n"
    "template <typename T> __device__ __forceinline__ T tex_floormod(T a, T b)\n"
    "{\n    T r = a % b;\n    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n"
    "template <typename T> __device__ __forceinline__ T tex_min(T a, T b) { return a < b ? a : b; "
    "}\n"
    "template <typename T> __device__ __forceinline__ T tex_max(T a, T b) { return a > b ? a : b; "
    "}\n"
    "template <typename T> __device__ __forceinline__ T tex_abs(T a) { return a < 0 ? -a : a; }\n"
    "__device__ __forceinline__ float tex_round_f16(float v) { return "
    "__half2float(__float2half_rn(v)); }\n"
    "__device__ __forceinline__ float tex_round_bf16(float v) { return "
    "__bfloat162float(__float2bfloat16_rn(v)); }\n\n";

static bool is_half(tex_dtype t)
{
    return t == TEX_F16 || t == TEX_BF16;
}

const char *texi_cu_storage_type(tex_dtype t)
{
    return t == TEX_F16    ? "__half"
           : t == TEX_BF16 ? "__nv_bfloat16"
           : t == TEX_BOOL ? "uint8_t"
                           : texi_dtype_ctype(t);
}

const char *texi_cu_value_type(tex_dtype t)
{
    return is_half(t) ? "float" : t == TEX_BOOL ? "bool" : texi_dtype_ctype(t);
}

static void int_const(texi_sb *sb, tex_dtype t, int64_t v)
{
    if (t == TEX_BOOL)
        texi_sb_puts(sb, v ? "true" : "false");
    else if (t == TEX_U64)
        texi_sb_printf(sb, "((uint64_t)%lluULL)", (unsigned long long)v);
    else if (v == INT64_MIN)
        texi_sb_printf(sb, "((%s)(-9223372036854775807LL - 1))", texi_dtype_ctype(t));
    else
        texi_sb_printf(sb, "((%s)%lldLL)", texi_dtype_ctype(t), (long long)v);
}

static void float_const(texi_sb *sb, tex_dtype t, double v)
{
    bool dbl = t == TEX_F64;
    if (isnan(v) || isinf(v)) {
        const char *bits = isnan(v) ? (dbl ? "0x7ff8000000000000LL" : "0x7fc00000")
                                    : (dbl ? "0x7ff0000000000000LL" : "0x7f800000");
        texi_sb_printf(sb, "(%s%s(%s))", isinf(v) && v < 0 ? "-" : "",
                       dbl ? "__longlong_as_double" : "__int_as_float", bits);
        return;
    }
    char buf[64];
    snprintf(buf, sizeof buf, dbl ? "%.17g" : "%.9g", v);
    bool plain = strpbrk(buf, ".e") == NULL;
    texi_sb_printf(sb, "(%s%s%s)", buf, plain ? ".0" : "", dbl ? "" : "f");
}

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
        return "/";
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
    default:
        return "||";
    }
}

/* "tex_round_f16(" around a half-typed arithmetic result, else "". */
static const char *round_open(tex_dtype t)
{
    return t == TEX_F16 ? "tex_round_f16(" : t == TEX_BF16 ? "tex_round_bf16(" : "";
}

static void binary(texi_cu *g, texi_sb *sb, const tex_expr *e)
{
    bool arith = e->kind == TEXI_EXPR_ADD || e->kind == TEXI_EXPR_SUB || e->kind == TEXI_EXPR_MUL ||
                 e->kind == TEXI_EXPR_DIV;
    texi_sb_puts(sb, arith ? round_open(e->dtype) : "");
    texi_sb_putc(sb, '(');
    texi_cu_expr(g, sb, e->u.bin.a);
    texi_sb_printf(sb, " %s ", bin_op(e->kind));
    texi_cu_expr(g, sb, e->u.bin.b);
    texi_sb_puts(sb, arith && is_half(e->dtype) ? "))" : ")");
}

/* tex_floordiv<T>(a, b) ..., or the float forms through floor. */
static void helper2(texi_cu *g, texi_sb *sb, const tex_expr *e)
{
    tex_dtype t = e->dtype;
    bool fl = texi_dtype_is_float(t);
    const char *vt = texi_cu_value_type(t), *sfx = t == TEX_F64 ? "" : "f";
    const char *fn = e->kind == TEXI_EXPR_FLOORDIV   ? "tex_floordiv"
                     : e->kind == TEXI_EXPR_FLOORMOD ? "tex_floormod"
                     : e->kind == TEXI_EXPR_MIN      ? "tex_min"
                                                     : "tex_max";
    texi_sb_puts(sb, round_open(t));
    if (fl && e->kind == TEXI_EXPR_FLOORDIV)
        texi_sb_printf(sb, "floor%s(", sfx);
    else if (fl && e->kind == TEXI_EXPR_FLOORMOD)
        texi_sb_printf(sb, "fmod%s(fmod%s(", sfx, sfx);
    else
        texi_sb_printf(sb, "%s<%s>(", fn, vt);
    texi_cu_expr(g, sb, e->u.bin.a);
    texi_sb_puts(sb, fl && e->kind == TEXI_EXPR_FLOORDIV ? " / " : ", ");
    texi_cu_expr(g, sb, e->u.bin.b);
    if (fl && e->kind == TEXI_EXPR_FLOORMOD) { /* ((a mod b) + b) mod b */
        texi_sb_puts(sb, ") + ");
        texi_cu_expr(g, sb, e->u.bin.b);
        texi_sb_puts(sb, ", ");
        texi_cu_expr(g, sb, e->u.bin.b);
    }
    texi_sb_puts(sb, is_half(t) ? "))" : ")");
}

static void cast(texi_cu *g, texi_sb *sb, const tex_expr *e)
{
    tex_dtype to = e->dtype;
    if (to == TEX_BOOL) {
        texi_sb_puts(sb, "(");
        texi_cu_expr(g, sb, e->u.un.a);
        texi_sb_puts(sb, " != 0)");
        return;
    }
    texi_sb_printf(sb, "%s((%s)(", round_open(to), texi_cu_value_type(to));
    texi_cu_expr(g, sb, e->u.un.a);
    texi_sb_puts(sb, is_half(to) ? ")))" : "))");
}

/* CUDA's name of op for values of dtype t (the float spelling; f suffix added by the caller). */
static const char *math_name(enum texi_math op)
{
    switch (op) {
    case TEXI_MATH_EXP:
    case TEXI_MATH_SIGMOID:
        return "exp";
    case TEXI_MATH_LOG:
        return "log";
    case TEXI_MATH_SQRT:
        return "sqrt";
    case TEXI_MATH_RSQRT:
        return "rsqrt";
    case TEXI_MATH_TANH:
        return "tanh";
    case TEXI_MATH_ERF:
        return "erf";
    case TEXI_MATH_ABS:
        return "fabs";
    case TEXI_MATH_FLOOR:
        return "floor";
    case TEXI_MATH_CEIL:
        return "ceil";
    case TEXI_MATH_ROUND:
        return "round";
    case TEXI_MATH_SIN:
        return "sin";
    case TEXI_MATH_COS:
        return "cos";
    case TEXI_MATH_POW:
        return "pow";
    case TEXI_MATH_FMA:
        return "fma";
    case TEXI_MATH_COUNT:
        break;
    }
    return "?";
}

/* abs / floor / ceil / round of an integer of the result's type: exact
 * (abs through tex_abs, the others the identity); false otherwise. */
static bool int_math(texi_cu *g, texi_sb *sb, const tex_expr *e)
{
    tex_dtype t = e->dtype;
    enum texi_math op = e->u.call.op;
    if (texi_dtype_is_float(t) || e->u.call.n_args != 1 || e->u.call.args[0]->dtype != t ||
        (op != TEXI_MATH_ABS && op != TEXI_MATH_FLOOR && op != TEXI_MATH_CEIL &&
         op != TEXI_MATH_ROUND))
        return false;
    bool abs_ = op == TEXI_MATH_ABS && texi_dtype_is_signed(t);
    if (abs_)
        texi_sb_printf(sb, "tex_abs<%s>", texi_cu_value_type(t));
    texi_sb_putc(sb, '(');
    texi_cu_expr(g, sb, e->u.call.args[0]);
    texi_sb_putc(sb, ')');
    return true;
}

/* A math call: CUDA's precise single-precision functions (expf, ...) for f32
 * and the half types, the double ones for f64; an integer result other than
 * int_math's computes in double and converts (like a cast). Operands of
 * another type are converted to the computation type first. */
static void call(texi_cu *g, texi_sb *sb, const tex_expr *e)
{
    tex_dtype t = e->dtype;
    enum texi_math op = e->u.call.op;
    if (int_math(g, sb, e))
        return;
    bool fl = texi_dtype_is_float(t);
    tex_dtype ct = fl && t != TEX_F64 ? TEX_F32 : TEX_F64;
    const char *sfx = ct == TEX_F64 ? "" : "f", *one = ct == TEX_F64 ? "1.0" : "1.0f";
    if (!fl)
        texi_sb_printf(sb, "((%s)", texi_cu_value_type(t));
    texi_sb_puts(sb, round_open(t));
    if (op == TEXI_MATH_SIGMOID)
        texi_sb_printf(sb, "(%s / (%s + exp%s(-", one, one, sfx);
    else
        texi_sb_printf(sb, "%s%s(", math_name(op), sfx);
    for (int i = 0; i < e->u.call.n_args; i++) {
        const tex_expr *a = e->u.call.args[i];
        bool conv = strcmp(texi_cu_value_type(a->dtype), texi_cu_value_type(ct)) != 0;
        texi_sb_puts(sb, i ? ", " : "");
        if (conv)
            texi_sb_printf(sb, "((%s)", texi_cu_value_type(ct));
        texi_cu_expr(g, sb, a);
        texi_sb_puts(sb, conv ? ")" : "");
    }
    texi_sb_puts(sb, op == TEXI_MATH_SIGMOID ? ")))" : ")");
    texi_sb_puts(sb, is_half(t) ? ")" : "");
    texi_sb_puts(sb, fl ? "" : ")");
}

/* A load of a vectorized store's lane (codegen_cuda.c): "(vl.y)"; false
 * when e is not one of its vector loads. */
static bool vector_lane(texi_cu *g, texi_sb *sb, const tex_expr *e)
{
    for (int i = 0; g->vec_var && i < g->n_vloads; i++)
        if (g->vload[i] == e) {
            texi_sb_printf(sb, "(%s.%c)", g->vload_name[i], "xyzw"[g->vec_lane & 3]);
            return true;
        }
    return false;
}

static void load(texi_cu *g, texi_sb *sb, const tex_expr *e)
{
    if (vector_lane(g, sb, e))
        return;
    const texi_buffer *b = e->u.load.buf;
    const char *name = texi_cu_lookup(g, texi_buffer_key(b), b->name);
    const char *open = b->dtype == TEX_F16    ? "__half2float("
                       : b->dtype == TEX_BF16 ? "__bfloat162float("
                                              : "(";
    texi_sb_printf(sb, "%s%s[", open, name);
    texi_cu_expr(g, sb, e->u.load.index);
    texi_sb_puts(sb, b->dtype == TEX_BOOL ? "] != 0)" : "])");
}

void texi_cu_expr(texi_cu *g, texi_sb *sb, const tex_expr *e)
{
    switch (e->kind) {
    case TEXI_EXPR_INT:
        int_const(sb, e->dtype, e->u.i);
        return;
    case TEXI_EXPR_FLOAT:
        float_const(sb, e->dtype == TEX_F64 ? TEX_F64 : TEX_F32, e->u.f);
        return;
    case TEXI_EXPR_VAR:
        if (e == g->vec_var)
            texi_sb_printf(sb, "(%s + %d)", texi_cu_lookup(g, e, e->u.var.name), g->vec_lane);
        else
            texi_sb_puts(sb, texi_cu_lookup(g, e, e->u.var.name));
        return;
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
    case TEXI_EXPR_MUL:
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_EQ:
    case TEXI_EXPR_NE:
    case TEXI_EXPR_LT:
    case TEXI_EXPR_LE:
    case TEXI_EXPR_GT:
    case TEXI_EXPR_GE:
    case TEXI_EXPR_AND:
    case TEXI_EXPR_OR:
        binary(g, sb, e);
        return;
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        helper2(g, sb, e);
        return;
    case TEXI_EXPR_NOT:
        texi_sb_puts(sb, "(!");
        texi_cu_expr(g, sb, e->u.un.a);
        texi_sb_putc(sb, ')');
        return;
    case TEXI_EXPR_CAST:
        cast(g, sb, e);
        return;
    case TEXI_EXPR_SELECT:
        texi_sb_putc(sb, '(');
        texi_cu_expr(g, sb, e->u.sel.cond);
        texi_sb_puts(sb, " ? ");
        texi_cu_expr(g, sb, e->u.sel.t);
        texi_sb_puts(sb, " : ");
        texi_cu_expr(g, sb, e->u.sel.f);
        texi_sb_putc(sb, ')');
        return;
    case TEXI_EXPR_CALL:
        call(g, sb, e);
        return;
    case TEXI_EXPR_LOAD:
        load(g, sb, e);
        return;
    case TEXI_EXPR_ACCESS:
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    texi_cu_fail(g, TEX_EINTERNAL, "an expression of kind %d cannot occur in a lowered function",
                 (int)e->kind);
}

void texi_cu_store_value(texi_cu *g, texi_sb *sb, const tex_expr *e, tex_dtype t)
{
    const char *open = t == TEX_F16    ? "__float2half_rn("
                       : t == TEX_BF16 ? "__float2bfloat16_rn("
                       : t == TEX_BOOL ? "(uint8_t)("
                                       : "(";
    texi_sb_puts(sb, open);
    texi_cu_expr(g, sb, e);
    texi_sb_putc(sb, ')');
}
