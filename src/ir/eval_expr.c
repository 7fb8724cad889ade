/*
 * The reference evaluator's expressions: compiling tex_expr trees into flat
 * texi_eval_node arrays, and running them with the scalar semantics every
 * backend must reproduce (API.md, precise rule 2).
 *
 * Semantics (values as in eval.h, rounded to the node's dtype after every
 * operation):
 *   - Integers wrap to their dtype's width: the arithmetic is done on uint64
 *     (no signed overflow), then sign- or zero-extended. u64 compares, divides
 *     and converts as unsigned. Bool results are 0 or 1.
 *   - Integer floordiv/floormod round toward negative infinity (-7 floordiv 2
 *     = -4, -7 floormod 2 = 1); a zero divisor is an error (TEX_EINVAL), not a
 *     value. Float floordiv is floor(a / b), floormod a - b * floor(a / b).
 *   - Float operations are computed in double and rounded to the node's dtype
 *     (f32 by a cast to float, f16/bf16 through util/half.h). For + - * / and
 *     sqrt this equals the correctly rounded operation of the narrow type.
 *   - min/max with a NaN operand give NaN, so an unwritten (poisoned) element
 *     is never hidden by a max reduction.
 *   - Casts: float to integer truncates toward zero, saturating out-of-range
 *     values (texi_float_to_int, the same as constant folding) and then
 *     wrapping to the width; anything to bool is `!= 0` (as C's _Bool).
 *   - select, && and || evaluate only what C would, so guards such as
 *     select(i < n, A[i], 0) or `i < n && A[i] > 0` never trip the bounds check.
 *   - Math functions: libm in double, then rounded; sigmoid = 1 / (1 + exp(-x)),
 *     rsqrt = 1 / sqrt(x), round is half away from zero; abs keeps integers.
 *   - Every tensor read is bounds-checked against the read tensor's shape; a
 *     read outside it is an error naming the tensor and the index.
 *
 * Not here: REDUCE nodes (only ever the whole body of a compute; eval.c runs
 * them with texi_eval_combine) and lowered LOADs (rejected when compiling).
 */
#include "ir/eval.h"
#include "util/half.h"

#include <math.h>
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
        texi_error(st->ctx, code, "%s", msg);
        st->rc = code;
    }
    return code;
}

/* ------------------------------------------------------------- conversions */

/* v wrapped to the width and signedness of integer type t (bool: 0 or 1). */
static int64_t wrap(tex_dtype t, uint64_t v)
{
    switch (t) {
    case TEX_BOOL:
        return v != 0;
    case TEX_I8:
        return (int8_t)(uint8_t)v;
    case TEX_I16:
        return (int16_t)(uint16_t)v;
    case TEX_I32:
        return (int32_t)(uint32_t)v;
    case TEX_U8:
        return (uint8_t)v;
    case TEX_U16:
        return (uint16_t)v;
    case TEX_U32:
        return (uint32_t)v;
    case TEX_I64:
    case TEX_U64:
    case TEX_F16:
    case TEX_BF16:
    case TEX_F32:
    case TEX_F64:
        break;
    }
    return (int64_t)v;
}

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
        r.i = wrap(to, (uint64_t)(ff ? texi_float_to_int(to, v.f) : v.i));
    return r;
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

static texi_eval_value int_binary(texi_eval *st, enum texi_expr_kind k, tex_dtype t,
                                  texi_eval_value a, texi_eval_value b)
{
    uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
    texi_eval_value r = {0};
    switch (k) {
    case TEXI_EXPR_ADD:
        r.i = wrap(t, x + y);
        break;
    case TEXI_EXPR_SUB:
        r.i = wrap(t, x - y);
        break;
    case TEXI_EXPR_MUL:
        r.i = wrap(t, x * y);
        break;
    case TEXI_EXPR_MIN:
        r = int_lt(t, b.i, a.i) ? b : a;
        break;
    case TEXI_EXPR_MAX:
        r = int_lt(t, a.i, b.i) ? b : a;
        break;
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
        if (b.i == 0) {
            texi_eval_fail(st, TEX_EINVAL,
                           "tex_eval_reference: tensor '%s': integer %s by zero (%lld %s 0)",
                           st->cur, k == TEXI_EXPR_FLOORMOD ? "modulo" : "division", (long long)a.i,
                           texi_expr_kind_names[k]);
            break;
        }
        r.i = wrap(t, (uint64_t)int_floordiv(t, a.i, b.i, k == TEXI_EXPR_FLOORMOD));
        break;
    default:
        break;
    }
    return r;
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

/* An arithmetic operator (ADD .. MAX) in dtype t. */
static texi_eval_value arith(texi_eval *st, enum texi_expr_kind k, tex_dtype t, texi_eval_value a,
                             texi_eval_value b)
{
    if (!is_float(t))
        return int_binary(st, k, t, a, b);
    texi_eval_value r;
    r.f = round_to(t, float_binary(k, a.f, b.f));
    return r;
}

/* A comparison of two operands of dtype t. */
static bool compare(enum texi_expr_kind k, tex_dtype t, texi_eval_value a, texi_eval_value b)
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

/* A math call of node nd. Integer results: abs stays exact, floor/ceil/round
 * are the identity; anything else goes through double like a cast. */
static texi_eval_value math_call(texi_eval *st, const texi_eval_node *nd)
{
    int32_t ops[3] = {nd->a, nd->b, nd->c};
    tex_dtype t = nd->dtype;
    texi_eval_value v[3] = {{0}};
    double x[3] = {0, 0, 0};
    for (int i = 0; i < 3 && ops[i] >= 0; i++) {
        v[i] = texi_eval_node_value(st, ops[i]);
        x[i] = as_double(st->nodes[ops[i]].dtype, v[i]);
    }
    if (!texi_dtype_is_float(t) && nd->arg_dtype == t) {
        switch (nd->u.math) {
        case TEXI_MATH_ABS:
            if (texi_dtype_is_signed(t) && v[0].i < 0)
                v[0].i = wrap(t, 0 - (uint64_t)v[0].i);
            return v[0];
        case TEXI_MATH_FLOOR:
        case TEXI_MATH_CEIL:
        case TEXI_MATH_ROUND:
            return v[0];
        default:
            break;
        }
    }
    texi_eval_value r = {.f = math_double(nd->u.math, x)};
    return texi_eval_convert(TEX_F64, t, r);
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
    return texi_eval_load(s->tensor->dtype, s->data, off);
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
        r.i = st->env[nd->u.slot];
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
        return arith(st, nd->kind, nd->dtype, a, b);
    case TEXI_EXPR_EQ:
    case TEXI_EXPR_NE:
    case TEXI_EXPR_LT:
    case TEXI_EXPR_LE:
    case TEXI_EXPR_GT:
    case TEXI_EXPR_GE:
        a = texi_eval_node_value(st, nd->a);
        b = texi_eval_node_value(st, nd->b);
        r.i = compare(nd->kind, nd->arg_dtype, a, b);
        break;
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
    case TEXI_EXPR_LOAD:
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_KIND_COUNT:
        break; /* rejected by texi_eval_compile */
    }
    return r;
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
            r.i = wrap(t, (uint64_t)1 << (bits - 1));
        break;
    case TEXI_REDUCE_MIN: /* the largest value of t */
        if (fl)
            r.f = INFINITY;
        else if (t == TEX_BOOL)
            r.i = 1;
        else
            r.i = wrap(t, sg ? ((uint64_t)1 << (bits - 1)) - 1 : ~(uint64_t)0);
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
    /* No division: the evaluator state is never needed for an error. */
    return arith(NULL, kinds[op], t, acc, v);
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
        int64_t *env = realloc(st->env, sizeof *env * (size_t)cap);
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
    st->env[st->n_vars] = 0;
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
        st->nodes[n].u.f = round_to(e->dtype, e->u.f);
        return n;
    case TEXI_EXPR_VAR:
        return compile_var(st, n, e);
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
    case TEXI_EXPR_MUL:
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
    case TEXI_EXPR_EQ:
    case TEXI_EXPR_NE:
    case TEXI_EXPR_LT:
    case TEXI_EXPR_LE:
    case TEXI_EXPR_GT:
    case TEXI_EXPR_GE:
    case TEXI_EXPR_AND:
    case TEXI_EXPR_OR:
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
    case TEXI_EXPR_LOAD:
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    texi_eval_fail(st, TEX_EINVAL,
                   "tex_eval_reference: tensor '%s' contains a %s node, which only a compute "
                   "definition's top level (reduce) or a lowered function (load) may hold",
                   st->cur, e->kind < TEXI_EXPR_KIND_COUNT ? texi_expr_kind_names[e->kind] : "?");
    return -1;
}
