/*
 * The interpreter's scalar expressions and element access (see interp.h).
 *
 * Semantics are the reference evaluator's (API.md precise rule 2): every
 * operation produces a value of its node's dtype, so integer results wrap to
 * the dtype's width and float results are rounded to the dtype's precision
 * after every operation (f16/bf16 through util/half.h, computed in double
 * before rounding); floordiv/floormod round toward negative infinity; casts
 * from float to integer truncate toward zero (saturating, NaN gives 0, as
 * texi_float_to_int); u64 values compare and divide as unsigned.
 *
 * Deliberate choices:
 *   - SELECT, && and || evaluate only what C would (the chosen branch, the
 *     right operand only when needed), so a guard such as `i < n && A[i] > 0`
 *     or select(in_bounds, A[i], 0) never trips the bounds check.
 *   - min/max of a NaN operand give NaN, so a read of a poisoned (unwritten)
 *     float element is never hidden by a max reduction.
 *   - Integer division or modulo by zero is an error, not a value.
 *   - REDUCE cannot occur in a lowered function: an internal error.
 * Every read of storage is bounds-checked (ACCESS per dimension against the
 * realized region, LOAD against the buffer's size).
 */
#include "lower/interp.h"
#include "util/half.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- conversions */

/* v wrapped to the width and signedness of integer type t (bool: 0 or 1). */
static int64_t wrap(tex_dtype t, int64_t v)
{
    switch (t) {
    case TEX_BOOL: return v != 0;
    case TEX_I8: return (int8_t)(uint8_t)(uint64_t)v;
    case TEX_I16: return (int16_t)(uint16_t)(uint64_t)v;
    case TEX_I32: return (int32_t)(uint32_t)(uint64_t)v;
    case TEX_U8: return (uint8_t)(uint64_t)v;
    case TEX_U16: return (uint16_t)(uint64_t)v;
    case TEX_U32: return (uint32_t)(uint64_t)v;
    case TEX_I64:
    case TEX_U64:
    case TEX_F16:
    case TEX_BF16:
    case TEX_F32:
    case TEX_F64: break;
    }
    return v;
}

static double int_as_double(tex_dtype t, int64_t v)
{
    return t == TEX_U64 ? (double)(uint64_t)v : (double)v;
}

texi_scalar texi_interp_convert(tex_dtype from, tex_dtype to, texi_scalar v)
{
    texi_scalar r;
    bool ff = texi_dtype_is_float(from), tf = texi_dtype_is_float(to);
    if (tf)
        r.f = texi_round_to_dtype(to, ff ? v.f : int_as_double(from, v.i));
    else if (to == TEX_BOOL)
        r.i = ff ? v.f != 0.0 : v.i != 0;
    else
        r.i = wrap(to, ff ? texi_float_to_int(to, v.f) : v.i);
    return r;
}

/* ---------------------------------------------------------- element access */

texi_scalar texi_interp_get(const texi_storage *st, int64_t i)
{
    texi_scalar r = {0};
    const char *p = st->data;
    switch (st->dtype) {
    case TEX_BOOL: r.i = ((const uint8_t *)p)[i] != 0; break;
    case TEX_U8: r.i = ((const uint8_t *)p)[i]; break;
    case TEX_I8: r.i = ((const int8_t *)p)[i]; break;
    case TEX_I16: r.i = ((const int16_t *)p)[i]; break;
    case TEX_U16: r.i = ((const uint16_t *)p)[i]; break;
    case TEX_I32: r.i = ((const int32_t *)p)[i]; break;
    case TEX_U32: r.i = ((const uint32_t *)p)[i]; break;
    case TEX_I64:
    case TEX_U64: memcpy(&r.i, p + 8 * i, 8); break;
    case TEX_F16: r.f = texi_f16_to_f32(((const uint16_t *)p)[i]); break;
    case TEX_BF16: r.f = texi_bf16_to_f32(((const uint16_t *)p)[i]); break;
    case TEX_F32: r.f = ((const float *)p)[i]; break;
    case TEX_F64: r.f = ((const double *)p)[i]; break;
    }
    return r;
}

void texi_interp_set(texi_storage *st, int64_t i, texi_scalar v)
{
    char *p = st->data;
    switch (st->dtype) {
    case TEX_BOOL:
    case TEX_U8:
    case TEX_I8: ((uint8_t *)p)[i] = (uint8_t)v.i; break;
    case TEX_I16:
    case TEX_U16: ((uint16_t *)p)[i] = (uint16_t)v.i; break;
    case TEX_I32:
    case TEX_U32: ((uint32_t *)p)[i] = (uint32_t)v.i; break;
    case TEX_I64:
    case TEX_U64: memcpy(p + 8 * i, &v.i, 8); break;
    case TEX_F16: ((uint16_t *)p)[i] = texi_f16_from_f32((float)v.f); break;
    case TEX_BF16: ((uint16_t *)p)[i] = texi_bf16_from_f32((float)v.f); break;
    case TEX_F32: ((float *)p)[i] = (float)v.f; break;
    case TEX_F64: ((double *)p)[i] = v.f; break;
    }
}

/* ------------------------------------------------------------ environments */

int texi_interp_fail(texi_interp *ip, int code, const char *fmt, ...)
{
    if (ip->code)
        return ip->code;
    ip->code = code;
    if (ip->err && ip->err_size) {
        int k = snprintf(ip->err, ip->err_size, "tex interpreter (function '%s'): ",
                         ip->f && ip->f->name ? ip->f->name : "?");
        if (k >= 0 && (size_t)k < ip->err_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(ip->err + k, ip->err_size - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return code;
}

int texi_interp_push_var(texi_interp *ip, texi_frame *fr, const tex_expr *var, texi_scalar v)
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
    fr->vars[fr->n_vars].v = texi_interp_convert(var->dtype, var->dtype, v);
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

/* ------------------------------------------------------------- arithmetic */

static int64_t floordiv_i(int64_t a, int64_t b)
{
    if (b == -1)
        return (int64_t)(0 - (uint64_t)a); /* INT64_MIN / -1 wraps */
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t floormod_i(int64_t a, int64_t b)
{
    if (b == -1)
        return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/* a < b in integer type t. */
static bool int_lt(tex_dtype t, int64_t a, int64_t b)
{
    return t == TEX_U64 ? (uint64_t)a < (uint64_t)b : a < b;
}

static int int_binary(texi_interp *ip, const tex_expr *e, tex_dtype t, int64_t a, int64_t b,
                      int64_t *out)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (e->kind) {
    case TEXI_EXPR_ADD: *out = (int64_t)(ua + ub); break;
    case TEXI_EXPR_SUB: *out = (int64_t)(ua - ub); break;
    case TEXI_EXPR_MUL: *out = (int64_t)(ua * ub); break;
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
        if (b == 0)
            return texi_interp_fail(ip, TEX_EINVAL, "integer %s by zero",
                                    e->kind == TEXI_EXPR_FLOORMOD ? "modulo" : "division");
        if (t == TEX_U64)
            *out = (int64_t)(e->kind == TEXI_EXPR_FLOORMOD ? ua % ub : ua / ub);
        else
            *out = e->kind == TEXI_EXPR_FLOORMOD ? floormod_i(a, b) : floordiv_i(a, b);
        break;
    case TEXI_EXPR_MIN: *out = int_lt(t, b, a) ? b : a; break;
    case TEXI_EXPR_MAX: *out = int_lt(t, a, b) ? b : a; break;
    default: return texi_interp_fail(ip, TEX_EINTERNAL, "operator '%s' on integers",
                                     texi_expr_kind_names[e->kind]);
    }
    *out = wrap(t, *out);
    return 0;
}

static double float_binary(enum texi_expr_kind k, double a, double b)
{
    switch (k) {
    case TEXI_EXPR_ADD: return a + b;
    case TEXI_EXPR_SUB: return a - b;
    case TEXI_EXPR_MUL: return a * b;
    case TEXI_EXPR_DIV: return a / b;
    case TEXI_EXPR_FLOORDIV: return floor(a / b);
    case TEXI_EXPR_FLOORMOD: return a - b * floor(a / b);
    case TEXI_EXPR_MIN: return (a != a || b != b) ? NAN : (b < a ? b : a);
    case TEXI_EXPR_MAX: return (a != a || b != b) ? NAN : (a < b ? b : a);
    default: return NAN;
    }
}

static bool compare(enum texi_expr_kind k, tex_dtype t, texi_scalar a, texi_scalar b)
{
    if (texi_dtype_is_float(t)) {
        switch (k) {
        case TEXI_EXPR_EQ: return a.f == b.f;
        case TEXI_EXPR_NE: return a.f != b.f;
        case TEXI_EXPR_LT: return a.f < b.f;
        case TEXI_EXPR_LE: return a.f <= b.f;
        case TEXI_EXPR_GT: return a.f > b.f;
        default: return a.f >= b.f;
        }
    }
    switch (k) {
    case TEXI_EXPR_EQ: return a.i == b.i;
    case TEXI_EXPR_NE: return a.i != b.i;
    case TEXI_EXPR_LT: return int_lt(t, a.i, b.i);
    case TEXI_EXPR_LE: return !int_lt(t, b.i, a.i);
    case TEXI_EXPR_GT: return int_lt(t, b.i, a.i);
    default: return !int_lt(t, a.i, b.i);
    }
}

static double math_f(enum texi_math op, const double x[3])
{
    switch (op) {
    case TEXI_MATH_EXP: return exp(x[0]);
    case TEXI_MATH_LOG: return log(x[0]);
    case TEXI_MATH_SQRT: return sqrt(x[0]);
    case TEXI_MATH_RSQRT: return 1.0 / sqrt(x[0]);
    case TEXI_MATH_TANH: return tanh(x[0]);
    case TEXI_MATH_SIGMOID: return 1.0 / (1.0 + exp(-x[0]));
    case TEXI_MATH_ERF: return erf(x[0]);
    case TEXI_MATH_ABS: return fabs(x[0]);
    case TEXI_MATH_FLOOR: return floor(x[0]);
    case TEXI_MATH_CEIL: return ceil(x[0]);
    case TEXI_MATH_ROUND: return round(x[0]);
    case TEXI_MATH_SIN: return sin(x[0]);
    case TEXI_MATH_COS: return cos(x[0]);
    case TEXI_MATH_POW: return pow(x[0], x[1]);
    case TEXI_MATH_FMA: return fma(x[0], x[1], x[2]);
    case TEXI_MATH_COUNT: break;
    }
    return NAN;
}

/* ------------------------------------------------------------- evaluation */

static int eval_var(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_scalar *out)
{
    for (int k = fr->n_vars - 1; k >= 0; k--) {
        if (fr->vars[k].var == e) {
            *out = fr->vars[k].v;
            return 0;
        }
    }
    return texi_interp_fail(ip, TEX_EINTERNAL, "variable '%s' is not bound", e->u.var.name);
}

static int eval_binary(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_scalar *out)
{
    texi_scalar a, b;
    tex_dtype t = e->u.bin.a->dtype;
    TEXI_TRY(texi_interp_expr(ip, fr, e->u.bin.a, &a));
    if (e->kind == TEXI_EXPR_AND || e->kind == TEXI_EXPR_OR) {
        bool av = texi_interp_convert(t, TEX_BOOL, a).i != 0;
        if (av == (e->kind == TEXI_EXPR_OR)) {
            out->i = av;
            return 0;
        }
        TEXI_TRY(texi_interp_expr(ip, fr, e->u.bin.b, &b));
        out->i = texi_interp_convert(e->u.bin.b->dtype, TEX_BOOL, b).i != 0;
        return 0;
    }
    TEXI_TRY(texi_interp_expr(ip, fr, e->u.bin.b, &b));
    if (e->u.bin.b->dtype != t) /* raw constructors may mix; compare in the promoted type */
        t = texi_dtype_promote(t, e->u.bin.b->dtype);
    a = texi_interp_convert(e->u.bin.a->dtype, t, a);
    b = texi_interp_convert(e->u.bin.b->dtype, t, b);
    if (texi_expr_is_compare(e)) {
        out->i = compare(e->kind, t, a, b);
        return 0;
    }
    if (texi_dtype_is_float(e->dtype)) {
        out->f = texi_round_to_dtype(e->dtype, float_binary(e->kind, a.f, b.f));
        return 0;
    }
    return int_binary(ip, e, e->dtype, a.i, b.i, &out->i);
}

static int eval_call(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_scalar *out)
{
    double x[3] = {0, 0, 0};
    texi_scalar v;
    for (int k = 0; k < e->u.call.n_args && k < 3; k++) {
        const tex_expr *a = e->u.call.args[k];
        TEXI_TRY(texi_interp_expr(ip, fr, a, &v));
        if (!texi_dtype_is_float(e->dtype) && e->u.call.op == TEXI_MATH_ABS) {
            out->i = wrap(e->dtype, (v.i < 0 && e->dtype != TEX_U64) ? (int64_t)(0 - (uint64_t)v.i)
                                                                      : v.i);
            return 0;
        }
        x[k] = texi_interp_convert(a->dtype, TEX_F64, v).f;
    }
    texi_scalar r = {.f = math_f(e->u.call.op, x)};
    *out = texi_interp_convert(TEX_F64, e->dtype, r);
    return 0;
}

static int eval_access(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_scalar *out)
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
    *out = texi_interp_convert(st->dtype, e->dtype, texi_interp_get(st, flat));
    return 0;
}

static int eval_load(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_scalar *out)
{
    const texi_buffer *b = e->u.load.buf;
    texi_storage *st = texi_interp_find_buffer(fr, b);
    if (!st)
        return texi_interp_fail(ip, TEX_EINTERNAL, "load from buffer '%s', which is not allocated",
                                b->name);
    int64_t i;
    TEXI_TRY(texi_interp_int(ip, fr, e->u.load.index, &i));
    if (i < 0 || i >= st->size)
        return texi_interp_fail(ip, TEX_EINTERNAL,
                                "out-of-bounds load of buffer '%s': index %lld, size %lld", b->name,
                                (long long)i, (long long)st->size);
    *out = texi_interp_convert(st->dtype, e->dtype, texi_interp_get(st, i));
    return 0;
}

static int eval_select(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_scalar *out)
{
    texi_scalar c, v;
    TEXI_TRY(texi_interp_expr(ip, fr, e->u.sel.cond, &c));
    const tex_expr *br = texi_interp_convert(e->u.sel.cond->dtype, TEX_BOOL, c).i ? e->u.sel.t
                                                                                  : e->u.sel.f;
    TEXI_TRY(texi_interp_expr(ip, fr, br, &v));
    *out = texi_interp_convert(br->dtype, e->dtype, v);
    return 0;
}

int texi_interp_expr(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_scalar *out)
{
    texi_scalar a;
    switch (e->kind) {
    case TEXI_EXPR_INT: out->i = e->u.i; return 0;
    case TEXI_EXPR_FLOAT: out->f = e->u.f; return 0;
    case TEXI_EXPR_VAR: return eval_var(ip, fr, e, out);
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
    case TEXI_EXPR_OR: return eval_binary(ip, fr, e, out);
    case TEXI_EXPR_NOT:
        TEXI_TRY(texi_interp_expr(ip, fr, e->u.un.a, &a));
        out->i = !texi_interp_convert(e->u.un.a->dtype, TEX_BOOL, a).i;
        return 0;
    case TEXI_EXPR_CAST:
        TEXI_TRY(texi_interp_expr(ip, fr, e->u.un.a, &a));
        *out = texi_interp_convert(e->u.un.a->dtype, e->dtype, a);
        return 0;
    case TEXI_EXPR_SELECT: return eval_select(ip, fr, e, out);
    case TEXI_EXPR_CALL: return eval_call(ip, fr, e, out);
    case TEXI_EXPR_ACCESS: return eval_access(ip, fr, e, out);
    case TEXI_EXPR_LOAD: return eval_load(ip, fr, e, out);
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_KIND_COUNT: break;
    }
    return texi_interp_fail(ip, TEX_EINTERNAL, "a '%s' node cannot occur in a lowered function",
                            e->kind < TEXI_EXPR_KIND_COUNT ? texi_expr_kind_names[e->kind] : "?");
}

int texi_interp_int(texi_interp *ip, texi_frame *fr, const tex_expr *e, int64_t *out)
{
    texi_scalar v;
    TEXI_TRY(texi_interp_expr(ip, fr, e, &v));
    if (texi_dtype_is_float(e->dtype))
        return texi_interp_fail(ip, TEX_EINTERNAL, "index or extent of float type %s",
                                tex_dtype_name(e->dtype));
    *out = v.i;
    return 0;
}
