/*
 * Range analysis of integer expressions: constant intervals
 * (texi_const_interval), intervals of canonical sums (texi_form_range) and
 * symbolic bounds (texi_expr_bounds, texi_arith_bound).
 *
 * Constant intervals are computed node by node, bottom-up, in exact integer
 * arithmetic that saturates at +-infinity (the ends INT64_MIN / INT64_MAX).
 * A variable takes its interval from `ranges` ([min, min + extent - 1], with
 * the intervals of min and extent), else from its axis when it stands for one,
 * else it is unknown. A node whose exact result may leave its dtype's range
 * gets the dtype's full interval, so the answer is sound even where the
 * arithmetic wraps (arith.h states the policy). Division by zero is undefined,
 * so a divisor interval ending at 0 is shrunk past it.
 *
 * Symbolic bounds walk the (simplified) expression from the top: a ranged
 * variable is replaced by its range's lower or upper end, + and - combine the
 * matching ends, products by constants and other monotone operators pick the
 * end by the sign of the coefficient or operand (products and divisions of
 * unknown sign take the min/max over the four corners), min/max/select
 * combine both sides; variables without a range stay as they are. Where no
 * rule applies the constant interval is used when finite. Only i32 and i64
 * get symbolic rules (where overflow is assumed absent); other types use
 * constant ends.
 *
 * The range of a canonical sum is the sum of its terms' intervals; when some
 * range is symbolic (i in [0, n)) it is intersected with the constant
 * interval of the sum's simplified symbolic bounds, which is how i - n < 0 is
 * proved: hi(i - n) = (n - 1) - n = -1.
 */
#include "ir/arith.h"

/* ----------------------------------------------------- integer helpers */

int64_t texi_arith_floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0)))
        q--;
    return q;
}

int64_t texi_arith_floormod(int64_t a, int64_t b)
{
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
}

int64_t texi_arith_gcd(int64_t a, int64_t b)
{
    uint64_t x = a < 0 ? 0 - (uint64_t)a : (uint64_t)a, y = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
    while (y) {
        uint64_t r = x % y;
        x = y;
        y = r;
    }
    return (int64_t)x;
}

static bool is_inf(int64_t v)
{
    return v == TEXI_NEG_INF || v == TEXI_POS_INF;
}

int64_t texi_arith_sat_add(int64_t a, int64_t b)
{
    if (a == TEXI_NEG_INF || b == TEXI_NEG_INF)
        return TEXI_NEG_INF;
    if (a == TEXI_POS_INF || b == TEXI_POS_INF)
        return TEXI_POS_INF;
    if (b > 0 && a >= TEXI_POS_INF - b)
        return TEXI_POS_INF;
    if (b < 0 && a <= TEXI_NEG_INF - b)
        return TEXI_NEG_INF;
    return a + b;
}

static int64_t sat_neg(int64_t a)
{
    return a == TEXI_NEG_INF ? TEXI_POS_INF : a == TEXI_POS_INF ? TEXI_NEG_INF : -a;
}

int64_t texi_arith_sat_mul(int64_t a, int64_t b)
{
    if (a == 0 || b == 0)
        return 0;
    bool neg = (a < 0) != (b < 0);
    if (is_inf(a) || is_inf(b))
        return neg ? TEXI_NEG_INF : TEXI_POS_INF;
    uint64_t ua = a < 0 ? (uint64_t)-a : (uint64_t)a, ub = b < 0 ? (uint64_t)-b : (uint64_t)b;
    if (ua > (uint64_t)(TEXI_POS_INF - 1) / ub)
        return neg ? TEXI_NEG_INF : TEXI_POS_INF;
    return neg ? -(int64_t)(ua * ub) : (int64_t)(ua * ub);
}

/* Floor division of interval ends (b != 0); x / inf tends to 0 or -1. */
static int64_t sat_div(int64_t a, int64_t b)
{
    if (is_inf(a))
        return (a < 0) != (b < 0) ? TEXI_NEG_INF : TEXI_POS_INF;
    if (is_inf(b))
        return a == 0 || (a < 0) == (b < 0) ? 0 : -1;
    if (a == TEXI_NEG_INF + 1 && b == -1)
        return TEXI_POS_INF;
    return texi_arith_floordiv(a, b);
}

int64_t texi_arith_wrap(tex_dtype t, int64_t v)
{
    int bits = t == TEX_BOOL ? 64 : texi_dtype_bits(t);
    if (bits >= 64)
        return v;
    uint64_t mask = (UINT64_C(1) << bits) - 1, u = (uint64_t)v & mask;
    if (u >> (bits - 1))
        u |= ~mask;
    return (int64_t)u;
}

/* ------------------------------------------------------------ intervals */

static texi_ival ival(int64_t lo, int64_t hi)
{
    return (texi_ival){lo, hi};
}

static texi_ival ival_union(texi_ival a, texi_ival b)
{
    return ival(a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
}

texi_ival texi_ival_type(tex_dtype t)
{
    int bits = texi_dtype_bits(t);
    if (t == TEX_BOOL)
        return ival(0, 1);
    if (!texi_dtype_is_signed(t))
        return ival(0, bits >= 64 ? TEXI_POS_INF : (int64_t)((UINT64_C(1) << bits) - 1));
    if (bits >= 64)
        return ival(TEXI_NEG_INF, TEXI_POS_INF);
    int64_t hi = (int64_t)((UINT64_C(1) << (bits - 1)) - 1);
    return ival(-hi - 1, hi);
}

texi_ival texi_ival_full(tex_dtype t)
{
    texi_ival r = texi_ival_type(t);
    if (t != TEX_BOOL && texi_dtype_bits(t) > 16) {
        r.hi = TEXI_POS_INF;
        if (texi_dtype_is_signed(t))
            r.lo = TEXI_NEG_INF;
    }
    return r;
}

/* a if it lies within t's range, else t's full interval. */
static texi_ival fit(texi_ival a, tex_dtype t)
{
    texi_ival r = texi_ival_type(t);
    return a.lo >= r.lo && a.hi <= r.hi ? a : texi_ival_full(t);
}

texi_ival texi_ival_add(texi_ival a, texi_ival b)
{
    return ival(texi_arith_sat_add(a.lo, b.lo), texi_arith_sat_add(a.hi, b.hi));
}

texi_ival texi_ival_neg(texi_ival a)
{
    return ival(sat_neg(a.hi), sat_neg(a.lo));
}

static texi_ival ival_corners(texi_ival a, texi_ival b, int64_t (*op)(int64_t, int64_t))
{
    int64_t v[4] = {op(a.lo, b.lo), op(a.lo, b.hi), op(a.hi, b.lo), op(a.hi, b.hi)};
    texi_ival r = ival(v[0], v[0]);
    for (int i = 1; i < 4; i++)
        r = ival_union(r, ival(v[i], v[i]));
    return r;
}

static texi_ival ival_mul(texi_ival a, texi_ival b)
{
    return ival_corners(a, b, texi_arith_sat_mul);
}

/* Floor division by a divisor interval that excludes 0 in its interior
 * handling: the parts below and above 0 are divided separately. */
static texi_ival ival_div(texi_ival a, texi_ival b, tex_dtype t)
{
    texi_ival neg = ival(b.lo, b.hi < -1 ? b.hi : -1), pos = ival(b.lo > 1 ? b.lo : 1, b.hi);
    bool has_neg = b.lo < 0 && texi_dtype_is_signed(t), has_pos = b.hi > 0;
    if (!has_neg && !has_pos)
        return texi_ival_full(t);
    texi_ival r = has_pos ? ival_corners(a, pos, sat_div) : ival_corners(a, neg, sat_div);
    if (has_neg && has_pos)
        r = ival_union(r, ival_corners(a, neg, sat_div));
    return r;
}

/* floormod by a positive divisor interval b. */
static texi_ival ival_mod_pos(texi_ival a, texi_ival b)
{
    if (a.lo >= 0 && a.hi < b.lo)
        return a;
    if (b.lo == b.hi && !is_inf(a.lo) && !is_inf(a.hi) &&
        texi_arith_floordiv(a.lo, b.lo) == texi_arith_floordiv(a.hi, b.lo)) {
        int64_t base = texi_arith_floordiv(a.lo, b.lo) * b.lo;
        return ival(a.lo - base, a.hi - base);
    }
    int64_t hi = is_inf(b.hi) ? TEXI_POS_INF : b.hi - 1;
    if (a.lo >= 0 && a.hi < hi)
        hi = a.hi;
    return ival(0, hi);
}

static texi_ival ival_mod(texi_ival a, texi_ival b, tex_dtype t)
{
    bool has_neg = b.lo < 0 && texi_dtype_is_signed(t), has_pos = b.hi > 0;
    texi_ival r = has_pos ? ival_mod_pos(a, ival(b.lo > 1 ? b.lo : 1, b.hi)) : ival(0, 0);
    if (has_neg) {
        /* floormod(x, -d) = -floormod(-x, d) */
        texi_ival d = texi_ival_neg(ival(b.lo, b.hi < -1 ? b.hi : -1));
        texi_ival n = texi_ival_neg(ival_mod_pos(texi_ival_neg(a), d));
        r = has_pos ? ival_union(r, n) : n;
    }
    return has_neg || has_pos ? r : texi_ival_full(t);
}

static texi_ival ival_rec(const tex_expr *e, int n, const texi_range ranges[], int depth);

/* Whether range r has no upper end (its extent is its type's maximum, texi_range). */
static bool lower_only(const texi_range *r)
{
    int64_t v;
    return texi_expr_is_int_const(r->extent, &v) && v == texi_ival_type(r->var->dtype).hi;
}

/* Variable e's range from ranges[] or its axis into *min, *extent (NULL if
 * unknown); *no_end when the range has no upper end (lower_only). */
static void var_range(const tex_expr *e, int n, const texi_range ranges[], const tex_expr **min,
                      const tex_expr **extent, bool *no_end)
{
    *min = *extent = NULL;
    *no_end = false;
    for (int i = 0; i < n && !*min; i++) {
        if (ranges[i].var == e) {
            *min = ranges[i].min;
            *extent = ranges[i].extent;
            *no_end = lower_only(&ranges[i]);
        }
    }
    if (!*min && e->u.var.iter) {
        *min = e->u.var.iter->min;
        *extent = e->u.var.iter->extent;
    }
}

/* The interval of a variable: from its range, its axis, or its type. */
static texi_ival ival_var(const tex_expr *e, int n, const texi_range ranges[], int depth)
{
    const tex_expr *min, *extent;
    bool no_end;
    var_range(e, n, ranges, &min, &extent, &no_end);
    if (!min || !extent || depth > 32)
        return texi_ival_full(e->dtype);
    texi_ival m = ival_rec(min, n, ranges, depth + 1), x = ival_rec(extent, n, ranges, depth + 1);
    texi_ival r = ival(m.lo, texi_arith_sat_add(texi_arith_sat_add(m.hi, x.hi), -1));
    if (no_end)
        r.hi = TEXI_POS_INF;
    texi_ival full = texi_ival_full(e->dtype);
    return ival(r.lo > full.lo ? r.lo : full.lo, r.hi < full.hi ? r.hi : full.hi);
}

static texi_ival ival_const(const tex_expr *e)
{
    if (e->dtype == TEX_U64 && e->u.i < 0)
        return texi_ival_full(TEX_U64);
    return ival(e->u.i, e->u.i);
}

static texi_ival ival_cast(const tex_expr *e, int n, const texi_range ranges[], int depth)
{
    const tex_expr *a = e->u.un.a;
    if (texi_dtype_is_float(a->dtype))
        return texi_ival_full(e->dtype);
    if (e->dtype == TEX_BOOL) {
        texi_ival r = ival_rec(a, n, ranges, depth);
        return r.lo > 0 || r.hi < 0 ? ival(1, 1) : r.lo == 0 && r.hi == 0 ? ival(0, 0) : ival(0, 1);
    }
    return fit(ival_rec(a, n, ranges, depth), e->dtype);
}

int texi_ival_decide(enum texi_expr_kind kind, texi_ival d)
{
    switch (kind) {
    case TEXI_EXPR_LT:
        return d.hi < 0 ? 1 : d.lo >= 0 ? 0 : -1;
    case TEXI_EXPR_LE:
        return d.hi <= 0 ? 1 : d.lo > 0 ? 0 : -1;
    case TEXI_EXPR_GT:
        return d.lo > 0 ? 1 : d.hi <= 0 ? 0 : -1;
    case TEXI_EXPR_GE:
        return d.lo >= 0 ? 1 : d.hi < 0 ? 0 : -1;
    case TEXI_EXPR_EQ:
        return d.lo == 0 && d.hi == 0 ? 1 : d.lo > 0 || d.hi < 0 ? 0 : -1;
    case TEXI_EXPR_NE:
        return d.lo == 0 && d.hi == 0 ? 0 : d.lo > 0 || d.hi < 0 ? 1 : -1;
    default:
        return -1;
    }
}

/* Comparisons decided by the operands' intervals, and/or of decided operands. */
static texi_ival ival_logic(const tex_expr *e, texi_ival a, texi_ival b)
{
    int known = -1;
    if (texi_expr_is_compare(e) && !texi_dtype_is_float(e->u.bin.a->dtype))
        known = texi_ival_decide(e->kind, texi_ival_add(a, texi_ival_neg(b)));
    bool ta = a.lo > 0 || a.hi<0, tb = b.lo> 0 || b.hi < 0;
    bool fa = a.lo == 0 && a.hi == 0, fb = b.lo == 0 && b.hi == 0;
    if (e->kind == TEXI_EXPR_AND)
        known = fa || fb ? 0 : ta && tb ? 1 : -1;
    if (e->kind == TEXI_EXPR_OR)
        known = ta || tb ? 1 : fa && fb ? 0 : -1;
    return known < 0 ? ival(0, 1) : ival(known, known);
}

/* The count of a fused index's outer axis (fused_count): expression
 * expr, or the constant k when expr is NULL. */
typedef struct {
    tex_expr *expr;
    int64_t k;
} outer_count;

static const tex_expr *strip_int_casts(const tex_expr *e)
{
    while (e->kind == TEXI_EXPR_CAST && texi_dtype_is_int(e->u.un.a->dtype))
        e = e->u.un.a;
    return e;
}

/* e as a * v + c for at most one variable v (NULL for a constant; a and c
 * without overflow): false for any other form. */
static bool affine1(const tex_expr *e, const tex_expr **v, int64_t *a, int64_t *c, int depth)
{
    const tex_expr *v2;
    int64_t a2, c2, k;
    e = strip_int_casts(e);
    *v = NULL;
    *a = *c = 0;
    if (texi_expr_is_int_const(e, c))
        return true;
    if (e->kind == TEXI_EXPR_VAR) {
        *v = e;
        *a = 1;
        return true;
    }
    if (depth > 8 || !texi_expr_is_binary(e))
        return false;
    bool sub = e->kind == TEXI_EXPR_SUB;
    if ((e->kind == TEXI_EXPR_ADD || sub) && affine1(e->u.bin.a, v, a, c, depth + 1) &&
        affine1(e->u.bin.b, &v2, &a2, &c2, depth + 1) && (!*v || !v2 || *v == v2)) {
        *v = *v ? *v : v2;
        *a = texi_arith_sat_add(*a, sub ? -a2 : a2);
        *c = texi_arith_sat_add(*c, sub ? -c2 : c2);
        return !is_inf(*a) && !is_inf(*c);
    }
    if (e->kind != TEXI_EXPR_MUL)
        return false;
    const tex_expr *x = e->u.bin.a, *y = e->u.bin.b;
    if (!texi_expr_is_int_const(strip_int_casts(y), &k)) {
        x = e->u.bin.b;
        y = e->u.bin.a;
    }
    if (!texi_expr_is_int_const(strip_int_casts(y), &k) || !affine1(x, v, a, c, depth + 1))
        return false;
    *a = texi_arith_sat_mul(*a, k);
    *c = texi_arith_sat_mul(*c, k);
    return !is_inf(*a) && !is_inf(*c);
}

/* Whether extent e is d * X: structurally (d * X or X * d) or, for d and e
 * affine in one variable, e = k * d (the simplifier's h*64 + 128 for
 * (h + 2) * 64). *out gets X. */
static bool cofactor(const tex_expr *e, const tex_expr *d, outer_count *out)
{
    const tex_expr *ve, *vd;
    int64_t ae, ce, ad, cd;
    e = strip_int_casts(e);
    out->expr = NULL;
    out->k = 0;
    if (e->kind == TEXI_EXPR_MUL) {
        tex_expr *x = texi_expr_equal(e->u.bin.a, d)   ? e->u.bin.b
                      : texi_expr_equal(e->u.bin.b, d) ? e->u.bin.a
                                                       : NULL;
        if (x && !texi_expr_is_int_const(x, &out->k))
            out->expr = x;
        if (x)
            return true;
    }
    if (!affine1(e, &ve, &ae, &ce, 0) || !affine1(d, &vd, &ad, &cd, 0) || !ve || ve != vd ||
        ad == 0 || ae % ad != 0)
        return false;
    out->k = ae / ad;
    return texi_arith_sat_mul(cd, out->k) == ce;
}

/* Whether floordiv or floormod e divides a variable v over [0, d * X) by
 * d, X being a positive constant or either of d and X known not negative
 * (so both are positive wherever v has a value): a fused loop's index by
 * its inner extent, the quotient being the outer axis' index, in
 * [0, X - 1], the remainder the inner one's, in [0, d - 1]. The operands'
 * intervals lose both facts when d is symbolic (v's end, d * X - 1, is
 * unbounded), and with them the constant extents and the guards of the
 * regions inside a fused loop of symbolic inner size. *x gets X. */
static bool fused_count(const tex_expr *e, int n, const texi_range ranges[], int depth,
                        outer_count *x)
{
    const tex_expr *v = e->u.bin.a, *d = e->u.bin.b, *min, *extent;
    int64_t m;
    bool no_end;
    if (v->kind != TEXI_EXPR_VAR || depth > 32)
        return false;
    var_range(v, n, ranges, &min, &extent, &no_end);
    if (!min || !extent || no_end || !texi_expr_is_int_const(min, &m) || m != 0 ||
        !cofactor(extent, d, x))
        return false;
    if (!x->expr)
        return x->k >= 1;
    return ival_rec(x->expr, n, ranges, depth + 1).lo >= 0 ||
           ival_rec(d, n, ranges, depth + 1).lo >= 0;
}

static texi_ival ival_binary(const tex_expr *e, int n, const texi_range ranges[], int depth)
{
    texi_ival a = ival_rec(e->u.bin.a, n, ranges, depth),
              b = ival_rec(e->u.bin.b, n, ranges, depth);
    tex_dtype t = e->dtype;
    outer_count x;
    switch (e->kind) {
    case TEXI_EXPR_ADD:
        return fit(texi_ival_add(a, b), t);
    case TEXI_EXPR_SUB:
        return fit(texi_ival_add(a, texi_ival_neg(b)), t);
    case TEXI_EXPR_MUL:
        return fit(ival_mul(a, b), t);
    case TEXI_EXPR_FLOORDIV:
        if (fused_count(e, n, ranges, depth, &x))
            return ival(0, texi_arith_sat_add(
                               x.expr ? ival_rec(x.expr, n, ranges, depth + 1).hi : x.k, -1));
        return fit(ival_div(a, b, t), t);
    case TEXI_EXPR_DIV:
        return fit(ival_div(a, b, t), t);
    case TEXI_EXPR_FLOORMOD:
        if (fused_count(e, n, ranges, depth, &x))
            return ival_mod_pos(a, ival(b.lo > 1 ? b.lo : 1, b.hi));
        return fit(ival_mod(a, b, t), t);
    case TEXI_EXPR_MIN:
        return ival(a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi);
    case TEXI_EXPR_MAX:
        return ival(a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
    default:
        return ival_logic(e, a, b);
    }
}

static texi_ival ival_rec(const tex_expr *e, int n, const texi_range ranges[], int depth);

/* upper_bound lies in [lo, hi]; find in [lo, hi) or is -1. */
static texi_ival ival_search(const tex_expr *e, int n, const texi_range ranges[], int depth)
{
    texi_ival lo = ival_rec(e->u.search.lo, n, ranges, depth);
    texi_ival hi = ival_rec(e->u.search.hi, n, ranges, depth);
    if (e->u.search.op == TEXI_SEARCH_UPPER)
        return ival(lo.lo, hi.hi);
    return ival_union(ival(-1, -1), ival(lo.lo, texi_ival_add(hi, ival(-1, -1)).hi));
}

static texi_ival ival_rec(const tex_expr *e, int n, const texi_range ranges[], int depth)
{
    if (texi_dtype_is_float(e->dtype))
        return ival(TEXI_NEG_INF, TEXI_POS_INF);
    texi_ival c;
    switch (e->kind) {
    case TEXI_EXPR_INT:
        return ival_const(e);
    case TEXI_EXPR_VAR:
        return ival_var(e, n, ranges, depth);
    case TEXI_EXPR_CAST:
        return ival_cast(e, n, ranges, depth);
    case TEXI_EXPR_SELECT:
        c = ival_rec(e->u.sel.cond, n, ranges, depth);
        if (c.lo > 0 || c.hi < 0)
            return ival_rec(e->u.sel.t, n, ranges, depth);
        if (c.lo == 0 && c.hi == 0)
            return ival_rec(e->u.sel.f, n, ranges, depth);
        return ival_union(ival_rec(e->u.sel.t, n, ranges, depth),
                          ival_rec(e->u.sel.f, n, ranges, depth));
    case TEXI_EXPR_NOT:
        c = ival_rec(e->u.un.a, n, ranges, depth);
        return c.lo > 0 || c.hi < 0 ? ival(0, 0) : c.lo == 0 && c.hi == 0 ? ival(1, 1) : ival(0, 1);
    case TEXI_EXPR_BROADCAST: /* a vector's range covers every lane */
        return ival_rec(e->u.un.a, n, ranges, depth);
    case TEXI_EXPR_RAMP:
        c = ival_mul(ival_rec(e->u.ramp.stride, n, ranges, depth), ival(0, e->lanes - 1));
        return fit(texi_ival_add(ival_rec(e->u.ramp.base, n, ranges, depth), c), e->dtype);
    case TEXI_EXPR_SEARCH:
        return ival_search(e, n, ranges, depth);
    case TEXI_EXPR_FLOAT:
    case TEXI_EXPR_CALL:
    case TEXI_EXPR_ACCESS:
    case TEXI_EXPR_LOAD:
    case TEXI_EXPR_VREDUCE: /* sums and products leave the lanes' range */
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_KIND_COUNT:
        return texi_ival_full(e->dtype);
    default:
        return ival_binary(e, n, ranges, depth);
    }
}

texi_ival texi_ival_of(const tex_expr *e, int n, const texi_range ranges[])
{
    return ival_rec(e, n, ranges, 0);
}

texi_interval texi_const_interval(const tex_expr *e, int n, const texi_range ranges[])
{
    texi_ival r = texi_ival_of(e, n, ranges);
    return (texi_interval){r.lo, r.hi, r.lo == TEXI_NEG_INF, r.hi == TEXI_POS_INF};
}

/* ------------------------------------------------------ ranges of forms */

/* Whether e mentions a variable listed in s's ranges. */
static bool mentions_ranged(const texi_simp *s, const tex_expr *e);

static texi_ival form_const_range(texi_simp *s, const texi_form *f)
{
    texi_ival r = ival(f->k, f->k);
    for (int i = 0; i < f->n; i++) {
        const texi_term *term = &f->terms[i];
        texi_ival m = ival(term->coef, term->coef);
        for (int j = 0; j < term->n_atoms; j++)
            m = ival_mul(m, texi_ival_of(term->atoms[j], s->n, s->ranges));
        r = texi_ival_add(r, m);
    }
    return r;
}

static bool form_mentions_ranged(const texi_simp *s, const texi_form *f)
{
    for (int i = 0; i < f->n; i++)
        for (int j = 0; j < f->terms[i].n_atoms; j++)
            if (mentions_ranged(s, f->terms[i].atoms[j]))
                return true;
    return false;
}

/* The constant interval of a symbolic bound's end (`upper` picks which). */
static int64_t bound_end(texi_simp *s, tex_expr *e, bool upper)
{
    tex_expr *b = texi_arith_bound(s, e, upper);
    if (b)
        b = texi_simp_expr(s, b); /* no ranged variables left: no recursion into here */
    texi_form *f = b ? texi_form_of(s, b) : NULL;
    if (!f)
        return upper ? TEXI_POS_INF : TEXI_NEG_INF;
    texi_ival r = form_const_range(s, f);
    return upper ? r.hi : r.lo;
}

/* Whether every coefficient of f is a value of its type (so that
 * texi_form_expr builds an expression with exactly f's value). */
static bool form_fits_type(const texi_form *f)
{
    bool ok = texi_arith_wrap(f->t, f->k) == f->k;
    for (int i = 0; i < f->n && ok; i++)
        ok = texi_arith_wrap(f->t, f->terms[i].coef) == f->terms[i].coef;
    return ok;
}

texi_ival texi_form_range(texi_simp *s, const texi_form *f)
{
    texi_ival r = form_const_range(s, f);
    if (!s->symbolic || (f->t != TEX_I32 && f->t != TEX_I64) || !form_fits_type(f) ||
        !form_mentions_ranged(s, f))
        return r;
    /* Symbolic ranges: the bounds of the whole sum see correlations (i < n
     * for i in [0, n)) that the atoms' constant intervals lose. */
    tex_expr *e = texi_form_expr(s, f);
    if (!e)
        return r;
    int64_t lo = bound_end(s, e, false), hi = bound_end(s, e, true);
    return ival(lo > r.lo ? lo : r.lo, hi < r.hi ? hi : r.hi);
}

bool texi_form_exact(texi_simp *s, const texi_form *f)
{
    if (f->t == TEX_I32 || f->t == TEX_I64)
        return true;
    texi_ival r = form_const_range(s, f), type = texi_ival_type(f->t);
    if (f->t == TEX_U64)
        type.hi = TEXI_POS_INF - 1;
    return r.lo >= type.lo && r.hi <= type.hi;
}

/* ------------------------------------------------------ symbolic bounds */

/* v's range for symbolic bounds: one without an upper end (lower_only)
 * leaves v free there (its sign still counts through the constant
 * intervals). */
static const texi_range *find_range(const texi_simp *s, const tex_expr *v)
{
    for (int i = 0; i < s->n; i++)
        if (s->ranges[i].var == v)
            return lower_only(&s->ranges[i]) ? NULL : &s->ranges[i];
    return NULL;
}

static bool mentions_any(const texi_simp *s, int n, tex_expr *const es[], bool want_ranged,
                         int depth);

/* Whether e (or the ranges of the ranged variables it uses) mentions a
 * variable without a range; `want_ranged` asks the opposite question. */
static bool mentions(const texi_simp *s, const tex_expr *e, bool want_ranged, int depth)
{
    switch (e->kind) {
    case TEXI_EXPR_VAR: {
        const texi_range *r = find_range(s, e);
        if (want_ranged || !r)
            return (r != NULL) == want_ranged;
        return depth > 32 || mentions(s, r->min, false, depth + 1) ||
               mentions(s, r->extent, false, depth + 1);
    }
    case TEXI_EXPR_INT:
    case TEXI_EXPR_FLOAT:
        return false;
    case TEXI_EXPR_NOT:
    case TEXI_EXPR_CAST:
    case TEXI_EXPR_BROADCAST:
        return mentions(s, e->u.un.a, want_ranged, depth);
    case TEXI_EXPR_VREDUCE:
        return mentions(s, e->u.vred.a, want_ranged, depth);
    case TEXI_EXPR_RAMP:
        return mentions(s, e->u.ramp.base, want_ranged, depth) ||
               mentions(s, e->u.ramp.stride, want_ranged, depth);
    case TEXI_EXPR_SELECT:
        return mentions(s, e->u.sel.cond, want_ranged, depth) ||
               mentions(s, e->u.sel.t, want_ranged, depth) ||
               mentions(s, e->u.sel.f, want_ranged, depth);
    case TEXI_EXPR_CALL:
        return mentions_any(s, e->u.call.n_args, e->u.call.args, want_ranged, depth);
    case TEXI_EXPR_ACCESS:
        return mentions_any(s, e->u.access.n_idx, e->u.access.idx, want_ranged, depth);
    case TEXI_EXPR_LOAD:
        return mentions(s, e->u.load.index, want_ranged, depth);
    case TEXI_EXPR_SEARCH:
        return mentions_any(s, 3,
                            (tex_expr *const[]){e->u.search.lo, e->u.search.hi, e->u.search.value},
                            want_ranged, depth);
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_KIND_COUNT:
        return true; /* opaque: assume the worst either way */
    default:
        return mentions(s, e->u.bin.a, want_ranged, depth) ||
               mentions(s, e->u.bin.b, want_ranged, depth);
    }
}

static bool mentions_any(const texi_simp *s, int n, tex_expr *const es[], bool want_ranged,
                         int depth)
{
    for (int i = 0; i < n; i++)
        if (mentions(s, es[i], want_ranged, depth))
            return true;
    return false;
}

static bool mentions_ranged(const texi_simp *s, const tex_expr *e)
{
    return s->n > 0 && mentions(s, e, true, 0);
}

static tex_expr *imm(texi_simp *s, tex_dtype t, int64_t v)
{
    return texi_simp_note(s, texi_int_imm(s->ctx, t, v));
}

static tex_expr *bin(texi_simp *s, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    return a && b ? texi_simp_note(s, texi_binary(kind, a, b)) : NULL;
}

static tex_expr *bound_rec(texi_simp *s, tex_expr *e, bool upper, int depth);

/* The end of a ranged variable's range: min, or min + extent - 1. */
static tex_expr *bound_var(texi_simp *s, tex_expr *v, bool upper, int depth)
{
    const texi_range *r = find_range(s, v);
    tex_expr *min = texi_simp_note(s, texi_convert(r->min, v->dtype));
    if (!upper || !min)
        return min ? bound_rec(s, min, false, depth + 1) : NULL;
    tex_expr *ext = texi_simp_note(s, texi_convert(r->extent, v->dtype));
    tex_expr *last = bin(s, TEXI_EXPR_SUB, bin(s, TEXI_EXPR_ADD, min, ext), imm(s, v->dtype, 1));
    return last ? bound_rec(s, last, true, depth + 1) : NULL;
}

/* max(x, 0) (`lower_zero`) or min(x, 0): an end clamped to a known sign. */
static tex_expr *clamp0(texi_simp *s, tex_expr *x, bool lower_zero)
{
    return bin(s, lower_zero ? TEXI_EXPR_MAX : TEXI_EXPR_MIN, x, imm(s, x->dtype, 0));
}

/* min (lower) or max (upper) of `a[i] op b[j]` over the four corners: the
 * extremes of a product, or of a floor division by a divisor of one sign,
 * lie there since both are monotone in each operand when the other is fixed. */
static tex_expr *corners(texi_simp *s, enum texi_expr_kind op, tex_expr *a[2], tex_expr *b[2],
                         bool upper)
{
    tex_expr *r = NULL;
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++) {
            tex_expr *p = bin(s, op, a[i], b[j]);
            r = r ? bin(s, upper ? TEXI_EXPR_MAX : TEXI_EXPR_MIN, r, p) : p;
        }
    }
    return r;
}

/* Both ends of e into ends[0] (lower) and ends[1] (upper); false if either is missing. */
static bool both_ends(texi_simp *s, tex_expr *e, tex_expr *ends[2], int depth)
{
    ends[0] = bound_rec(s, e, false, depth);
    ends[1] = ends[0] ? bound_rec(s, e, true, depth) : NULL;
    return ends[1] != NULL;
}

/* Ends of a product: by the sign of a constant factor, by the signs of the
 * operands when known (each end clamped to its operand's sign, so the
 * monotonicity argument behind the corner choice holds), else the corners. */
static tex_expr *bound_mul(texi_simp *s, tex_expr *e, bool upper, int depth)
{
    tex_expr *a = e->u.bin.a, *b = e->u.bin.b, *ea[2], *eb[2];
    int64_t c;
    if (texi_expr_is_int_const(a, NULL)) {
        tex_expr *tmp = a;
        a = b;
        b = tmp;
    }
    if (texi_expr_is_int_const(b, &c))
        return bin(s, TEXI_EXPR_MUL, bound_rec(s, a, c >= 0 ? upper : !upper, depth), b);
    texi_ival ia = texi_ival_of(a, s->n, s->ranges), ib = texi_ival_of(b, s->n, s->ranges);
    bool a_pos = ia.lo >= 0, b_pos = ib.lo >= 0;
    if ((!a_pos && ia.hi > 0) || (!b_pos && ib.hi > 0))
        return both_ends(s, a, ea, depth) && both_ends(s, b, eb, depth)
                   ? corners(s, TEXI_EXPR_MUL, ea, eb, upper)
                   : NULL;
    bool pick_a_hi = upper == b_pos, pick_b_hi = upper == a_pos;
    tex_expr *x = bound_rec(s, a, pick_a_hi, depth), *y = bound_rec(s, b, pick_b_hi, depth);
    if (!x || !y)
        return NULL;
    if (pick_a_hi != a_pos)
        x = clamp0(s, x, a_pos);
    if (pick_b_hi != b_pos)
        y = clamp0(s, y, b_pos);
    return bin(s, TEXI_EXPR_MUL, x, y);
}

/* Ends of floordiv: [0, X - 1] for an outer index out of a fused one
 * (fused_count); monotone in the dividend for a constant divisor; else the
 * corners with the divisor's ends kept on its side of 0. */
static tex_expr *bound_div(texi_simp *s, tex_expr *e, bool upper, int depth)
{
    tex_expr *a = e->u.bin.a, *b = e->u.bin.b, *ea[2], *eb[2];
    outer_count x;
    int64_t c;
    if (fused_count(e, s->n, s->ranges, 0, &x)) { /* an outer index out of a fused one */
        if (!upper || !x.expr)
            return imm(s, e->dtype, upper ? x.k - 1 : 0);
        tex_expr *count = texi_simp_note(s, texi_convert(x.expr, e->dtype));
        tex_expr *hi = count ? bound_rec(s, count, true, depth) : NULL;
        return hi ? bin(s, TEXI_EXPR_SUB, hi, imm(s, e->dtype, 1)) : NULL;
    }
    if (texi_expr_is_int_const(b, &c) && c != 0)
        return bin(s, TEXI_EXPR_FLOORDIV, bound_rec(s, a, c > 0 ? upper : !upper, depth), b);
    texi_ival ib = texi_ival_of(b, s->n, s->ranges);
    if ((ib.lo < 1 && ib.hi > -1) || !both_ends(s, a, ea, depth) || !both_ends(s, b, eb, depth))
        return NULL;
    tex_expr *one = imm(s, b->dtype, ib.lo >= 1 ? 1 : -1);
    int inner = ib.lo >= 1 ? 0 : 1; /* the end of b nearest to 0 */
    eb[inner] = bin(s, ib.lo >= 1 ? TEXI_EXPR_MAX : TEXI_EXPR_MIN, eb[inner], one);
    return corners(s, TEXI_EXPR_FLOORDIV, ea, eb, upper);
}

/* Ends of floormod by a positive divisor: [0, min(hi(a), hi(b) - 1)];
 * [0, b - 1] for an inner axis' index out of a fused one (fused_count,
 * where hi(a) = b * k - 1 is the larger). */
static tex_expr *bound_mod(texi_simp *s, tex_expr *e, bool upper, int depth)
{
    tex_expr *a = e->u.bin.a, *b = e->u.bin.b;
    texi_ival ia = texi_ival_of(a, s->n, s->ranges), ib = texi_ival_of(b, s->n, s->ranges);
    outer_count x;
    bool fused = fused_count(e, s->n, s->ranges, 0, &x);
    if (ib.lo < 1 && !fused)
        return NULL;
    if (!upper)
        return imm(s, e->dtype, 0);
    tex_expr *last = bin(s, TEXI_EXPR_SUB, bound_rec(s, b, true, depth), imm(s, e->dtype, 1));
    tex_expr *ha = ia.lo >= 0 && !fused ? bound_rec(s, a, true, depth) : NULL;
    return ha && last ? bin(s, TEXI_EXPR_MIN, ha, last) : last;
}

/* min/max: both ends combine; a missing end of one side is allowed where
 * the other side alone bounds the result. */
static tex_expr *bound_minmax(texi_simp *s, tex_expr *e, bool upper, int depth)
{
    tex_expr *a = bound_rec(s, e->u.bin.a, upper, depth);
    tex_expr *b = bound_rec(s, e->u.bin.b, upper, depth);
    bool one_suffices = (e->kind == TEXI_EXPR_MIN) == upper;
    if (a && b)
        return bin(s, e->kind, a, b);
    return one_suffices ? (a ? a : b) : NULL;
}

static tex_expr *bound_cast(texi_simp *s, tex_expr *e, bool upper, int depth)
{
    tex_expr *a = e->u.un.a;
    if (!texi_dtype_is_int(a->dtype) && a->dtype != TEX_BOOL)
        return NULL;
    texi_ival from = texi_ival_type(a->dtype), to = texi_ival_type(e->dtype);
    if (from.lo < to.lo || from.hi > to.hi)
        return NULL;
    tex_expr *b = bound_rec(s, a, upper, depth);
    return b ? texi_simp_note(s, texi_unary(TEXI_EXPR_CAST, e->dtype, b)) : NULL;
}

/* The symbolic rule for e's kind, or NULL. */
static tex_expr *bound_rule(texi_simp *s, tex_expr *e, bool upper, int depth)
{
    switch (e->kind) {
    case TEXI_EXPR_VAR:
        return bound_var(s, e, upper, depth);
    case TEXI_EXPR_ADD:
        return bin(s, TEXI_EXPR_ADD, bound_rec(s, e->u.bin.a, upper, depth),
                   bound_rec(s, e->u.bin.b, upper, depth));
    case TEXI_EXPR_SUB:
        return bin(s, TEXI_EXPR_SUB, bound_rec(s, e->u.bin.a, upper, depth),
                   bound_rec(s, e->u.bin.b, !upper, depth));
    case TEXI_EXPR_MUL:
        return bound_mul(s, e, upper, depth);
    case TEXI_EXPR_FLOORDIV:
        return bound_div(s, e, upper, depth);
    case TEXI_EXPR_FLOORMOD:
        return bound_mod(s, e, upper, depth);
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        return bound_minmax(s, e, upper, depth);
    case TEXI_EXPR_SELECT:
        return bin(s, upper ? TEXI_EXPR_MAX : TEXI_EXPR_MIN, bound_rec(s, e->u.sel.t, upper, depth),
                   bound_rec(s, e->u.sel.f, upper, depth));
    case TEXI_EXPR_CAST:
        return bound_cast(s, e, upper, depth);
    default:
        return NULL;
    }
}

static tex_expr *bound_rec(texi_simp *s, tex_expr *e, bool upper, int depth)
{
    if (s->failed || depth > 64)
        return NULL;
    if (!mentions_ranged(s, e))
        return e;
    texi_ival r = texi_ival_of(e, s->n, s->ranges);
    int64_t end = upper ? r.hi : r.lo;
    bool finite = !is_inf(end);
    if (finite && !mentions(s, e, false, 0))
        return imm(s, e->dtype, end);
    tex_expr *b = NULL;
    if (e->dtype == TEX_I32 || e->dtype == TEX_I64)
        b = bound_rule(s, e, upper, depth + 1);
    if (!b && finite && !s->failed)
        b = imm(s, e->dtype, end);
    return b;
}

tex_expr *texi_arith_bound(texi_simp *s, tex_expr *e, bool upper)
{
    return bound_rec(s, e, upper, 0);
}

/* The bounds of integer e that lo / hi ask for (either may be NULL); an
 * unbounded side is left NULL. 0 or TEX_ENOMEM. */
static int bounds_of(tex_ctx *ctx, tex_expr *e, int n, const texi_range ranges[], tex_expr **lo,
                     tex_expr **hi)
{
    tex_expr *se = texi_simplify(e, n, ranges);
    if (!se)
        return TEX_ENOMEM;
    texi_simp s;
    texi_simp_init(&s, ctx, n, ranges);
    tex_expr *l = lo ? texi_arith_bound(&s, se, false) : NULL;
    tex_expr *h = hi ? texi_arith_bound(&s, se, true) : NULL;
    bool failed = s.failed;
    texi_simp_fini(&s);
    if (failed)
        return TEX_ENOMEM;
    if (lo && l && !(*lo = texi_simplify(l, 0, NULL)))
        return TEX_ENOMEM;
    if (hi && h && !(*hi = texi_simplify(h, 0, NULL)))
        return TEX_ENOMEM;
    return 0;
}

int texi_expr_bounds(tex_ctx *ctx, tex_expr *e, int n, const texi_range ranges[], tex_expr **lo,
                     tex_expr **hi)
{
    if (!ctx || !e || !lo || !hi)
        return ctx ? texi_error(ctx, TEX_EMISUSE, "texi_expr_bounds: NULL argument") : TEX_EMISUSE;
    if (!texi_dtype_is_int(e->dtype))
        return texi_error(ctx, TEX_ETYPE,
                          "texi_expr_bounds: the expression is %s, expected an "
                          "integer type",
                          tex_dtype_name(e->dtype));
    *lo = *hi = NULL;
    TEXI_TRY(bounds_of(ctx, e, n, ranges, lo, hi));
    if (!*lo || !*hi)
        return texi_error(ctx, TEX_EINVAL,
                          "texi_expr_bounds: the %s bound of an index "
                          "expression is unbounded over the given ranges",
                          *lo ? "upper" : "lower");
    return 0;
}

tex_expr *texi_expr_bound(tex_ctx *ctx, tex_expr *e, int n, const texi_range ranges[], bool upper)
{
    tex_expr *b = NULL;
    if (!ctx || !e || !texi_dtype_is_int(e->dtype))
        return NULL;
    return bounds_of(ctx, e, n, ranges, upper ? NULL : &b, upper ? &b : NULL) == 0 ? b : NULL;
}
