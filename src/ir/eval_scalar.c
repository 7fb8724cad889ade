/*
 * The scalar semantics of tex's operators, in one place: the reference
 * evaluator (eval_expr.c, eval.c) and the interpreter of lowered functions
 * (interp/interp_expr.c) both compute every value through these functions, so
 * the oracle and the interpreter cannot drift apart (docs/api.md, rule 2).
 *
 * Values are texi_eval_value (eval.h); every result is rounded to its dtype:
 *   - Integers wrap to their dtype's width: the arithmetic is done on uint64
 *     (no signed overflow), then sign- or zero-extended. u64 compares, divides
 *     and converts as unsigned. Bool results are 0 or 1.
 *   - Integer floordiv/floormod round toward negative infinity (-7 floordiv 2
 *     = -4, -7 floormod 2 = 1; INT64_MIN floordiv -1 wraps to INT64_MIN); a
 *     zero divisor has no value (texi_eval_binary returns false and the caller
 *     reports the error). Float floordiv is floor(a / b), floormod
 *     a - b * floor(a / b).
 *   - Float operations are computed in double and rounded to the dtype (f32 by
 *     a cast to float, f16/bf16 through util/half.h). For + - * / and sqrt
 *     this equals the correctly rounded operation of the narrow type.
 *   - Comparisons follow C: any comparison with a NaN is false except !=.
 *   - min/max with a NaN operand give NaN, so an unwritten (poisoned) element
 *     is never hidden by a max reduction.
 *   - Casts: float to integer truncates toward zero, saturating out-of-range
 *     values (texi_float_to_int, the same as constant folding) and then
 *     wrapping to the width; anything to bool is `!= 0` (as C's _Bool).
 *   - Math functions: libm in double, then rounded; sigmoid = 1 / (1 + exp(-x)),
 *     rsqrt = 1 / sqrt(x), round is half away from zero; abs, floor, ceil and
 *     round of an integer of the result's dtype stay exact.
 *   - Reductions: identity and combine of sum, prod, max, min (the latter two
 *     NaN-propagating like the operators).
 *
 * Not here: evaluation order and short-circuiting (select, &&, ||), variables,
 * bounds checks and error messages; those belong to each evaluator.
 */
#include "ir/eval.h"
#include "util/half.h"

#include <math.h>

/* ------------------------------------------------------------- conversions */

static double int_to_double(tex_dtype t, int64_t v)
{
    return t == TEX_U64 ? (double)(uint64_t)v : (double)v;
}

/* texi_dtype_is_float, inlined for the hot paths (the float types end tex_dtype). */
static inline bool is_float(tex_dtype t)
{
    return t >= TEX_F16;
}

/* v rounded to float type t; f32 and f64 inline (the hot cases). */
static inline double round_to(tex_dtype t, double v)
{
    if (t == TEX_F32)
        return (double)(float)v;
    return t == TEX_F64 ? v : texi_round_to_dtype(t, v);
}

/* The value as a double, whatever its dtype. */
static double as_double(tex_dtype t, texi_eval_value v)
{
    return texi_dtype_is_float(t) ? v.f : int_to_double(t, v.i);
}

texi_eval_value texi_eval_convert(tex_dtype from, tex_dtype to, texi_eval_value v)
{
    texi_eval_value r;
    bool ff = is_float(from);
    if (is_float(to))
        r.f = round_to(to, ff ? v.f : int_to_double(from, v.i));
    else if (to == TEX_BOOL)
        r.i = ff ? v.f != 0.0 : v.i != 0;
    else
        r.i = texi_wrap_int(to, (uint64_t)(ff ? texi_float_to_int(to, v.f) : v.i));
    return r;
}

int64_t texi_eval_search(int op, tex_dtype t, const char *base, int64_t lo, int64_t hi, int64_t v)
{
    int64_t end = hi;
    while (lo < hi) { /* upper_bound: the first a[k] > v; find: the first a[k] >= v */
        int64_t mid = lo + (hi - lo) / 2, a = texi_eval_load(t, base, mid).i;
        if (op == TEXI_SEARCH_UPPER ? a > v : a >= v)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (op == TEXI_SEARCH_UPPER)
        return lo;
    return lo < end && texi_eval_load(t, base, lo).i == v ? lo : -1;
}

texi_eval_value texi_eval_load(tex_dtype t, const char *base, int64_t i)
{
    texi_eval_value r = {0};
    switch (t) {
    case TEX_BOOL:
        r.i = ((const uint8_t *)base)[i] != 0;
        break;
    case TEX_I8:
        r.i = ((const int8_t *)base)[i];
        break;
    case TEX_I16:
        r.i = ((const int16_t *)base)[i];
        break;
    case TEX_I32:
        r.i = ((const int32_t *)base)[i];
        break;
    case TEX_I64:
        r.i = ((const int64_t *)base)[i];
        break;
    case TEX_U8:
        r.i = ((const uint8_t *)base)[i];
        break;
    case TEX_U16:
        r.i = ((const uint16_t *)base)[i];
        break;
    case TEX_U32:
        r.i = ((const uint32_t *)base)[i];
        break;
    case TEX_U64:
        r.i = (int64_t)((const uint64_t *)base)[i];
        break;
    case TEX_F16:
        r.f = texi_f16_to_f32(((const uint16_t *)base)[i]);
        break;
    case TEX_BF16:
        r.f = texi_bf16_to_f32(((const uint16_t *)base)[i]);
        break;
    case TEX_F32:
        r.f = ((const float *)base)[i];
        break;
    case TEX_F64:
        r.f = ((const double *)base)[i];
        break;
    }
    return r;
}

void texi_eval_store(tex_dtype t, char *base, int64_t i, texi_eval_value v)
{
    switch (t) {
    case TEX_BOOL:
        ((uint8_t *)base)[i] = v.i != 0;
        break;
    case TEX_I8:
        ((int8_t *)base)[i] = (int8_t)v.i;
        break;
    case TEX_I16:
        ((int16_t *)base)[i] = (int16_t)v.i;
        break;
    case TEX_I32:
        ((int32_t *)base)[i] = (int32_t)v.i;
        break;
    case TEX_I64:
        ((int64_t *)base)[i] = v.i;
        break;
    case TEX_U8:
        ((uint8_t *)base)[i] = (uint8_t)v.i;
        break;
    case TEX_U16:
        ((uint16_t *)base)[i] = (uint16_t)v.i;
        break;
    case TEX_U32:
        ((uint32_t *)base)[i] = (uint32_t)v.i;
        break;
    case TEX_U64:
        ((uint64_t *)base)[i] = (uint64_t)v.i;
        break;
    case TEX_F16:
        ((uint16_t *)base)[i] = texi_f16_from_f32((float)v.f);
        break;
    case TEX_BF16:
        ((uint16_t *)base)[i] = texi_bf16_from_f32((float)v.f);
        break;
    case TEX_F32:
        ((float *)base)[i] = (float)v.f;
        break;
    case TEX_F64:
        ((double *)base)[i] = v.f;
        break;
    }
}

/* ------------------------------------------------------- scalar operations */

static bool int_lt(tex_dtype t, int64_t a, int64_t b)
{
    return t == TEX_U64 ? (uint64_t)a < (uint64_t)b : a < b;
}

/* Floor division (mod when want_mod) of integers of dtype t; b != 0. */
static int64_t int_floordiv(tex_dtype t, int64_t a, int64_t b, bool want_mod)
{
    if (t == TEX_U64)
        return (int64_t)(want_mod ? (uint64_t)a % (uint64_t)b : (uint64_t)a / (uint64_t)b);
    if (a == INT64_MIN && b == -1)
        return want_mod ? 0 : INT64_MIN; /* the quotient wraps */
    int64_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) {
        q--;
        r += b;
    }
    return want_mod ? r : q;
}

/* An arithmetic operator (ADD .. MAX) on integers of dtype t into *r; false
 * for a division or modulo by zero. Out of line (as compare is), so that
 * texi_eval_binary's float path, the oracle's hot one, stays a leaf. */
static __attribute__((noinline)) bool int_binary(enum texi_expr_kind k, tex_dtype t,
                                                 texi_eval_value a, texi_eval_value b,
                                                 texi_eval_value *r)
{
    uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
    switch (k) {
    case TEXI_EXPR_ADD:
        r->i = texi_wrap_int(t, x + y);
        break;
    case TEXI_EXPR_SUB:
        r->i = texi_wrap_int(t, x - y);
        break;
    case TEXI_EXPR_MUL:
        r->i = texi_wrap_int(t, x * y);
        break;
    case TEXI_EXPR_MIN:
        *r = int_lt(t, b.i, a.i) ? b : a;
        break;
    case TEXI_EXPR_MAX:
        *r = int_lt(t, a.i, b.i) ? b : a;
        break;
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
        if (b.i == 0)
            return false;
        r->i = texi_wrap_int(t, (uint64_t)int_floordiv(t, a.i, b.i, k == TEXI_EXPR_FLOORMOD));
        break;
    default:
        r->i = 0;
        break;
    }
    return true;
}

static double float_binary(enum texi_expr_kind k, double a, double b)
{
    switch (k) {
    case TEXI_EXPR_ADD:
        return a + b;
    case TEXI_EXPR_SUB:
        return a - b;
    case TEXI_EXPR_MUL:
        return a * b;
    case TEXI_EXPR_DIV:
        return a / b;
    case TEXI_EXPR_FLOORDIV:
        return floor(a / b);
    case TEXI_EXPR_FLOORMOD:
        return a - b * floor(a / b);
    case TEXI_EXPR_MIN:
        return (isnan(a) || isnan(b)) ? NAN : (b < a ? b : a);
    case TEXI_EXPR_MAX:
        return (isnan(a) || isnan(b)) ? NAN : (a < b ? b : a);
    default:
        return NAN;
    }
}

/* A comparison of two operands of dtype t. */
static __attribute__((noinline)) bool compare(enum texi_expr_kind k, tex_dtype t, texi_eval_value a,
                                              texi_eval_value b)
{
    if (texi_dtype_is_float(t)) {
        switch (k) {
        case TEXI_EXPR_EQ:
            return a.f == b.f;
        case TEXI_EXPR_NE:
            return a.f != b.f;
        case TEXI_EXPR_LT:
            return a.f < b.f;
        case TEXI_EXPR_LE:
            return a.f <= b.f;
        case TEXI_EXPR_GT:
            return a.f > b.f;
        default:
            return a.f >= b.f;
        }
    }
    switch (k) {
    case TEXI_EXPR_EQ:
        return a.i == b.i;
    case TEXI_EXPR_NE:
        return a.i != b.i;
    case TEXI_EXPR_LT:
        return int_lt(t, a.i, b.i);
    case TEXI_EXPR_LE:
        return !int_lt(t, b.i, a.i);
    case TEXI_EXPR_GT:
        return int_lt(t, b.i, a.i);
    default:
        return !int_lt(t, a.i, b.i);
    }
}

bool texi_eval_binary(enum texi_expr_kind kind, tex_dtype t, texi_eval_value a, texi_eval_value b,
                      texi_eval_value *out)
{
    if (kind >= TEXI_EXPR_EQ) { /* EQ .. GE follow ADD .. MAX in expr_kinds.def */
        out->i = compare(kind, t, a, b);
        return true;
    }
    if (is_float(t)) { /* the common case first */
        out->f = round_to(t, float_binary(kind, a.f, b.f));
        return true;
    }
    return int_binary(kind, t, a, b, out);
}

static double math_double(enum texi_math op, const double x[3])
{
    switch (op) {
    case TEXI_MATH_EXP:
        return exp(x[0]);
    case TEXI_MATH_LOG:
        return log(x[0]);
    case TEXI_MATH_SQRT:
        return sqrt(x[0]);
    case TEXI_MATH_RSQRT:
        return 1.0 / sqrt(x[0]);
    case TEXI_MATH_TANH:
        return tanh(x[0]);
    case TEXI_MATH_SIGMOID:
        return 1.0 / (1.0 + exp(-x[0]));
    case TEXI_MATH_ERF:
        return erf(x[0]);
    case TEXI_MATH_ABS:
        return fabs(x[0]);
    case TEXI_MATH_FLOOR:
        return floor(x[0]);
    case TEXI_MATH_CEIL:
        return ceil(x[0]);
    case TEXI_MATH_ROUND:
        return round(x[0]);
    case TEXI_MATH_SIN:
        return sin(x[0]);
    case TEXI_MATH_COS:
        return cos(x[0]);
    case TEXI_MATH_POW:
        return pow(x[0], x[1]);
    case TEXI_MATH_FMA:
        return fma(x[0], x[1], x[2]);
    case TEXI_MATH_COUNT:
        break;
    }
    return NAN;
}

/* Integer results: abs stays exact and floor/ceil/round are the identity when
 * the operand already has the result's dtype; anything else goes through
 * double like a cast. */
texi_eval_value texi_eval_math(enum texi_math op, tex_dtype t, int n, const tex_dtype arg_dtypes[],
                               const texi_eval_value args[])
{
    double x[3] = {0, 0, 0};
    for (int i = 0; i < n && i < 3; i++)
        x[i] = as_double(arg_dtypes[i], args[i]);
    if (!is_float(t) && n > 0 && arg_dtypes[0] == t) {
        texi_eval_value v = args[0];
        switch (op) {
        case TEXI_MATH_ABS:
            if (texi_dtype_is_signed(t) && v.i < 0)
                v.i = texi_wrap_int(t, 0 - (uint64_t)v.i);
            return v;
        case TEXI_MATH_FLOOR:
        case TEXI_MATH_CEIL:
        case TEXI_MATH_ROUND:
            return v;
        default:
            break;
        }
    }
    texi_eval_value r = {.f = math_double(op, x)};
    return texi_eval_convert(TEX_F64, t, r);
}
/* ------------------------------------------------------------ reductions */

texi_eval_value texi_eval_identity(enum texi_reduce_op op, tex_dtype t)
{
    texi_eval_value r = {0};
    bool fl = texi_dtype_is_float(t), sg = texi_dtype_is_signed(t);
    int bits = texi_dtype_bits(t);
    switch (op) {
    case TEXI_REDUCE_SUM:
        break;
    case TEXI_REDUCE_PROD:
        if (fl)
            r.f = 1.0;
        else
            r.i = 1;
        break;
    case TEXI_REDUCE_MAX: /* the smallest value of t */
        if (fl)
            r.f = -INFINITY;
        else if (sg)
            r.i = texi_wrap_int(t, (uint64_t)1 << (bits - 1));
        break;
    case TEXI_REDUCE_MIN: /* the largest value of t */
        if (fl)
            r.f = INFINITY;
        else if (t == TEX_BOOL)
            r.i = 1;
        else
            r.i = texi_wrap_int(t, sg ? ((uint64_t)1 << (bits - 1)) - 1 : ~(uint64_t)0);
        break;
    case TEXI_REDUCE_COUNT:
        break;
    }
    return r;
}

texi_eval_value texi_eval_combine(enum texi_reduce_op op, tex_dtype t, texi_eval_value acc,
                                  texi_eval_value v)
{
    static const enum texi_expr_kind kinds[TEXI_REDUCE_COUNT] = {[TEXI_REDUCE_SUM] = TEXI_EXPR_ADD,
                                                                 [TEXI_REDUCE_PROD] = TEXI_EXPR_MUL,
                                                                 [TEXI_REDUCE_MAX] = TEXI_EXPR_MAX,
                                                                 [TEXI_REDUCE_MIN] = TEXI_EXPR_MIN};
    texi_eval_value r;
    texi_eval_binary(kinds[op], t, acc, v, &r); /* no division: never fails */
    return r;
}
