/*
 * The arithmetic simplifier (texi_simplify, texi_prove) for the index
 * expressions that loop transformations produce.
 *
 * One bottom-up pass: children first, then the node's rules, which only see
 * simplified operands. Integer +, -, * become canonical sums of products
 * (canonical.c) and are rebuilt from them, so like terms meet and cancel
 * ((a+b)-(b+a) -> 0, x*4 + x*4 -> x*8), and `c*floordiv(x,c) + floormod(x,c)`
 * folds back into x (x - c*floordiv(x,c) into floormod(x,c)). floordiv/floormod by a positive
 * divisor split the dividend into the terms the divisor divides and a remainder R: (i*8 + j)/8 -> i
 * + j/8, and j/8 -> 0 when 0 <= j < 8 is known, exactly in floor semantics for every sign. min/max,
 * comparisons and selects are decided by the interval of the difference of their operands
 * (interval.c; with symbolic ranges such as i in [0, n), by symbolic bounds, so i < n is proved).
 * Undecided comparisons are normalized (x + 3 < y + 5 -> x < y + 2, common factors divided out).
 *
 * Floats: only constant operands fold (computed in double and rounded to the
 * dtype, which equals the dtype's own arithmetic for + - * /), and only
 * identities that hold for every value including -0.0, NaN and infinities:
 * x*1, x/1, x - 0.0, x + -0.0. x + 0.0 is NOT rewritten (-0.0 + 0.0 is +0.0).
 *
 * Overflow assumptions are those of arith.h. The simplifier never reorders
 * float arithmetic, never evaluates math calls, and does not simplify across
 * statements (that is the lowering pass's job, which passes the loop ranges).
 */
#include "ir/arith.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------ state */

void texi_simp_init(texi_simp *s, tex_ctx *ctx, int n, const texi_range ranges[])
{
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->n = ranges ? n : 0;
    s->ranges = ranges;
    for (int i = 0; i < s->n; i++)
        if (!texi_expr_is_int_const(ranges[i].min, NULL) ||
            !texi_expr_is_int_const(ranges[i].extent, NULL))
            s->symbolic = true;
    texi_arena_init(&s->scratch, &ctx->arena.allocator);
}

void texi_simp_fini(texi_simp *s)
{
    texi_arena_release(&s->scratch);
}

void *texi_simp_alloc(texi_simp *s, size_t size)
{
    void *p = texi_arena_alloc(&s->scratch, size ? size : 1);
    if (!p && !s->failed) {
        s->failed = true;
        texi_error(s->ctx, TEX_ENOMEM, "texi_simplify: out of memory");
    }
    return p;
}

tex_expr *texi_simp_note(texi_simp *s, tex_expr *e)
{
    if (!e)
        s->failed = true;
    return e;
}

static tex_expr *imm(texi_simp *s, tex_dtype t, int64_t v)
{
    return texi_simp_note(s, texi_int_imm(s->ctx, t, v));
}

static tex_expr *bin(texi_simp *s, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    return a && b ? texi_simp_note(s, texi_binary(kind, a, b)) : NULL;
}

static bool is_int(const tex_expr *e, int64_t *v)
{
    return texi_expr_is_int_const(e, v);
}

static bool is_inf(int64_t v)
{
    return v == TEXI_NEG_INF || v == TEXI_POS_INF;
}

/* ------------------------------------------------------ constant folding */

static bool fold_compare(enum texi_expr_kind kind, bool u64, int64_t a, int64_t b, int64_t *out)
{
    bool lt = u64 ? (uint64_t)a < (uint64_t)b : a < b;
    bool gt = u64 ? (uint64_t)a > (uint64_t)b : a > b;
    switch (kind) {
    case TEXI_EXPR_EQ:
        *out = a == b;
        return true;
    case TEXI_EXPR_NE:
        *out = a != b;
        return true;
    case TEXI_EXPR_LT:
        *out = lt;
        return true;
    case TEXI_EXPR_LE:
        *out = !gt;
        return true;
    case TEXI_EXPR_GT:
        *out = gt;
        return true;
    case TEXI_EXPR_GE:
        *out = !lt;
        return true;
    case TEXI_EXPR_AND:
        *out = a && b;
        return true;
    case TEXI_EXPR_OR:
        *out = a || b;
        return true;
    case TEXI_EXPR_MIN:
        *out = lt ? a : b;
        return true;
    case TEXI_EXPR_MAX:
        *out = gt ? a : b;
        return true;
    default:
        return false;
    }
}

/* a kind b for integer constants of type t (results wrap); false when the
 * operation is undefined (division by zero). */
static bool fold_int(enum texi_expr_kind kind, tex_dtype t, int64_t a, int64_t b, int64_t *out)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    bool u64 = t == TEX_U64, div = kind == TEXI_EXPR_FLOORDIV || kind == TEXI_EXPR_DIV;
    switch (kind) {
    case TEXI_EXPR_ADD:
        *out = (int64_t)(ua + ub);
        return true;
    case TEXI_EXPR_SUB:
        *out = (int64_t)(ua - ub);
        return true;
    case TEXI_EXPR_MUL:
        *out = (int64_t)(ua * ub);
        return true;
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
        if (b == 0)
            return false;
        if (u64)
            *out = (int64_t)(div ? ua / ub : ua % ub);
        else if (b == -1)
            *out = div ? (int64_t)(0 - ua) : 0;
        else
            *out = div ? texi_arith_floordiv(a, b) : texi_arith_floormod(a, b);
        return true;
    default:
        return fold_compare(kind, u64, a, b, out);
    }
}

static bool fold_float(enum texi_expr_kind kind, double a, double b, double *out)
{
    switch (kind) {
    case TEXI_EXPR_ADD:
        *out = a + b;
        return true;
    case TEXI_EXPR_SUB:
        *out = a - b;
        return true;
    case TEXI_EXPR_MUL:
        *out = a * b;
        return true;
    case TEXI_EXPR_DIV:
        *out = a / b;
        return true;
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        /* NaN and the sign of min(-0.0, 0.0) differ between C's fmin and a
         * compare-and-select, so those stay unfolded. */
        if (isnan(a) || isnan(b) || (a == 0 && b == 0 && signbit(a) != signbit(b)))
            return false;
        *out = (kind == TEXI_EXPR_MIN) == (a < b) ? a : b;
        return true;
    default:
        return false;
    }
}

static int fold_float_compare(enum texi_expr_kind kind, double a, double b)
{
    switch (kind) {
    case TEXI_EXPR_EQ:
        return a == b;
    case TEXI_EXPR_NE:
        return a != b;
    case TEXI_EXPR_LT:
        return a < b;
    case TEXI_EXPR_LE:
        return a <= b;
    case TEXI_EXPR_GT:
        return a > b;
    case TEXI_EXPR_GE:
        return a >= b;
    default:
        return -1;
    }
}

/* Float operands: constants fold; identities exact for every value. */
static tex_expr *simp_float(texi_simp *s, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    bool ca = a->kind == TEXI_EXPR_FLOAT, cb = b->kind == TEXI_EXPR_FLOAT;
    double r;
    if (ca && cb) {
        int c = fold_float_compare(kind, a->u.f, b->u.f);
        if (c >= 0)
            return imm(s, TEX_BOOL, c);
        if (fold_float(kind, a->u.f, b->u.f, &r))
            return texi_simp_note(s, texi_float_imm(s->ctx, a->dtype, r));
    }
    switch (kind) {
    case TEXI_EXPR_ADD:
        if (cb && b->u.f == 0 && signbit(b->u.f))
            return a;
        if (ca && a->u.f == 0 && signbit(a->u.f))
            return b;
        break;
    case TEXI_EXPR_SUB:
        if (cb && b->u.f == 0 && !signbit(b->u.f))
            return a;
        break;
    case TEXI_EXPR_MUL:
        if (cb && b->u.f == 1.0)
            return a;
        if (ca && a->u.f == 1.0)
            return b;
        break;
    case TEXI_EXPR_DIV:
        if (cb && b->u.f == 1.0)
            return a;
        break;
    default:
        break;
    }
    return bin(s, kind, a, b);
}

/* -------------------------------------------------- floordiv / floormod */

/* term's atoms without those of d (a sub-multiset) into *rest; false when
 * some atom of d is missing from term. */
static bool atoms_minus(texi_simp *s, const texi_term *term, const texi_term *d, texi_term *rest)
{
    rest->n_atoms = 0;
    rest->atoms = texi_simp_alloc(s, sizeof(tex_expr *) * (size_t)term->n_atoms);
    if (!rest->atoms)
        return false;
    int j = 0;
    for (int i = 0; i < term->n_atoms; i++) {
        if (j < d->n_atoms && texi_arith_cmp(term->atoms[i], d->atoms[j]) == 0)
            j++;
        else
            rest->atoms[rest->n_atoms++] = term->atoms[i];
    }
    return j == d->n_atoms;
}

/* f = (c*d) * q + r: the terms of f that (c times monomial d) divides go to q
 * divided, the others to r. d NULL means the divisor is the constant c, whose
 * multiples are also taken out of the constant (r's constant in [0, c)). */
static bool split(texi_simp *s, const texi_form *f, const texi_term *d, int64_t c, texi_form **q,
                  texi_form **r)
{
    texi_term *qt = texi_simp_alloc(s, sizeof *qt * (size_t)(f->n + 1));
    texi_term *rt = texi_simp_alloc(s, sizeof *rt * (size_t)(f->n + 1));
    if (!qt || !rt)
        return false;
    int nq = 0, nr = 0;
    uint64_t qk = 0;
    for (int i = 0; i < f->n; i++) {
        const texi_term *term = &f->terms[i];
        texi_term rest = *term;
        if (term->coef % c != 0 || (d && !atoms_minus(s, term, d, &rest))) {
            rt[nr++] = *term;
            continue;
        }
        rest.coef = term->coef / c;
        if (rest.n_atoms == 0)
            qk += (uint64_t)rest.coef;
        else
            qt[nq++] = rest;
    }
    int64_t rk = f->k;
    if (!d) {
        qk += (uint64_t)texi_arith_floordiv(f->k, c);
        rk = texi_arith_floormod(f->k, c);
    }
    *q = texi_form_make(s, f->t, qt, nq, (int64_t)qk);
    *r = texi_form_make(s, f->t, rt, nr, rk);
    return *q && *r && !s->failed;
}

static bool form_is_zero(const texi_form *f)
{
    return f->n == 0 && f->k == 0;
}

/* f with every coefficient and the constant divided by g (which divides them). */
static texi_form *form_div_exact(texi_simp *s, const texi_form *f, int64_t g)
{
    texi_term *terms = texi_simp_alloc(s, sizeof *terms * (size_t)(f->n + 1));
    if (!terms)
        return NULL;
    for (int i = 0; i < f->n; i++) {
        terms[i] = f->terms[i];
        terms[i].coef /= g;
    }
    return texi_form_make(s, f->t, terms, f->n, f->k / g);
}

static int64_t form_gcd(const texi_form *f, int64_t c)
{
    int64_t g = texi_arith_gcd(c, f->k);
    for (int i = 0; i < f->n && g > 1; i++)
        g = texi_arith_gcd(g, f->terms[i].coef);
    return g;
}

/* The interval of a - b in the integers (both exact); false when unknown. */
static bool diff_range(texi_simp *s, const texi_form *fa, const texi_form *fb, texi_ival *out)
{
    texi_form *d = texi_form_diff(s, fa, fb);
    if (!d || d->wrapped)
        return false;
    *out = texi_form_range(s, d);
    return true;
}

/* q + x as an expression. */
static tex_expr *plus(texi_simp *s, const texi_form *q, tex_expr *x)
{
    texi_form *fx = x ? texi_form_of(s, x) : NULL;
    return fx ? texi_form_expr(s, texi_form_add(s, q, fx, 1)) : NULL;
}

/* Whether every value of integer (or bool) type `from` is a value of `to`. */
static bool type_contains(tex_dtype to, tex_dtype from)
{
    if (texi_dtype_is_float(to) || texi_dtype_is_float(from))
        return false;
    texi_ival a = texi_ival_type(to), b = texi_ival_type(from);
    return a.lo <= b.lo && b.hi <= a.hi;
}

/* e without a conversion to t from another integer type. Such a
 * conversion keeps sums and products modulo t's 2^bits (it wraps or
 * extends), so a*d*floordiv(x, d) = a*x - a*floormod(x, d) holds with each
 * of x, d and the quotient converted: i64(n)*i64(floordiv(f, n)), or
 * i32(floordiv(X, 5))*5 + i32(floormod(X, 5)) = i32(X) for an i64 X. */
static tex_expr *int_cast_operand(tex_expr *e, tex_dtype t)
{
    return e->kind == TEXI_EXPR_CAST && e->dtype == t && texi_dtype_is_int(t) &&
                   texi_dtype_is_int(e->u.un.a->dtype)
               ? e->u.un.a
               : e;
}

/* e without a conversion to t that keeps every value (i64(v) of an i32 v). */
static tex_expr *unwidened(tex_expr *e, tex_dtype t)
{
    tex_expr *v = int_cast_operand(e, t);
    return v != e && type_contains(t, v->dtype) ? v : e;
}

/* Whether integer x's range lies within type t's. */
static bool fits_type(texi_simp *s, const tex_expr *x, tex_dtype t)
{
    if (!texi_dtype_is_int(x->dtype) || !texi_dtype_is_int(t))
        return false;
    texi_ival r = texi_ival_of(x, s->n, s->ranges), tr = texi_ival_type(t);
    return r.lo >= tr.lo && r.hi <= tr.hi;
}

/* Simplified x converted to t: x itself when it has that type; orig when
 * it is that conversion already (NULL: none). cast<t>(cast<u>(v of type
 * t)) = v when u holds every value of t, or every value v takes (i64(i32(v))
 * for v in [0, 16)). */
static tex_expr *convert_to(texi_simp *s, tex_expr *x, tex_dtype t, tex_expr *orig)
{
    if (x->dtype == t)
        return x;
    if (texi_expr_is_const(x))
        return texi_simp_note(s, texi_convert(x, t));
    if (x->kind == TEXI_EXPR_CAST && x->u.un.a->dtype == t &&
        (type_contains(x->dtype, t) || fits_type(s, x->u.un.a, x->dtype)))
        return x->u.un.a;
    return orig && x == orig->u.un.a ? orig : texi_simp_note(s, texi_unary(TEXI_EXPR_CAST, t, x));
}

static tex_expr *simp_div(texi_simp *s, tex_expr *a, tex_expr *b);
static tex_expr *simp_mod(texi_simp *s, tex_expr *a, tex_expr *b);

/* floordiv(a, c), c > 0 constant: a = c*Q + R, result Q + floordiv(R, c). */
static tex_expr *div_const(texi_simp *s, tex_expr *a, int64_t c, tex_expr *b)
{
    texi_form *fa = texi_form_of(s, a), *q, *r;
    if (!fa || !texi_form_exact(s, fa))
        return fa ? bin(s, TEXI_EXPR_FLOORDIV, a, b) : NULL;
    if (!split(s, fa, NULL, c, &q, &r))
        return NULL;
    texi_ival ir = texi_form_range(s, r);
    if (!is_inf(ir.lo) && !is_inf(ir.hi) &&
        texi_arith_floordiv(ir.lo, c) == texi_arith_floordiv(ir.hi, c))
        return plus(s, q, imm(s, a->dtype, texi_arith_floordiv(ir.lo, c)));
    int64_t g = form_gcd(r, c);
    if (!texi_form_exact(s, r) || (form_is_zero(q) && g == 1))
        return bin(s, TEXI_EXPR_FLOORDIV, a, b);
    /* floordiv(g*X, g*C) = floordiv(X, C) */
    tex_expr *inner =
        simp_div(s, texi_form_expr(s, form_div_exact(s, r, g)), imm(s, a->dtype, c / g));
    return form_is_zero(q) ? inner : plus(s, q, inner);
}

/* floormod(a, c), c > 0 constant: floormod(R, c) with R from the split. */
static tex_expr *mod_const(texi_simp *s, tex_expr *a, int64_t c, tex_expr *b)
{
    texi_form *fa = texi_form_of(s, a), *q, *r;
    if (!fa || !texi_form_exact(s, fa))
        return fa ? bin(s, TEXI_EXPR_FLOORMOD, a, b) : NULL;
    if (!split(s, fa, NULL, c, &q, &r))
        return NULL;
    texi_ival ir = texi_form_range(s, r);
    if (!is_inf(ir.lo) && !is_inf(ir.hi) &&
        texi_arith_floordiv(ir.lo, c) == texi_arith_floordiv(ir.hi, c)) {
        int64_t base = texi_arith_floordiv(ir.lo, c) * c;
        return texi_form_expr(s, texi_form_add(s, r, texi_form_const(s, r->t, base), -1));
    }
    int64_t g = form_gcd(r, c);
    if (!texi_form_exact(s, r) || (form_is_zero(q) && g == 1))
        return bin(s, TEXI_EXPR_FLOORMOD, a, b);
    /* floormod(g*X, g*C) = g * floormod(X, C) */
    tex_expr *inner =
        simp_mod(s, texi_form_expr(s, form_div_exact(s, r, g)), imm(s, a->dtype, c / g));
    return g == 1 ? inner
                  : texi_form_expr(s, texi_form_add(s, texi_form_const(s, r->t, 0),
                                                    inner ? texi_form_of(s, inner) : NULL, g));
}

/* floordiv/floormod by a non-constant divisor d known to be positive:
 * a = d*Q + R (Q from the terms a single-term d divides, else 0); when
 * 0 <= R < d the quotient is Q and the remainder R. */
static tex_expr *divmod_var(texi_simp *s, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    /* in the narrower type both operands were widened from, where their
     * ranges are known: floordiv(i64(f), i64(n)) = i64(floordiv(f, n))
     * unless the quotient overflows (INT_MIN / -1; n = 0 divides by zero
     * on both sides). Taken only when the division goes away there (f < n:
     * 0 and i64(f)); a division left in the narrow type would hide the
     * wide one from bound inference's rules for fused loops. */
    tex_expr *na = unwidened(a, a->dtype), *nb = unwidened(b, b->dtype);
    if (na != a && nb != b && na->dtype == nb->dtype &&
        (texi_ival_of(nb, s->n, s->ranges).lo >= 0 ||
         texi_ival_of(na, s->n, s->ranges).lo > texi_ival_type(na->dtype).lo)) {
        tex_expr *narrow = kind == TEXI_EXPR_FLOORDIV ? simp_div(s, na, nb) : simp_mod(s, na, nb);
        if (!narrow)
            return NULL;
        if (narrow->kind != TEXI_EXPR_FLOORDIV && narrow->kind != TEXI_EXPR_FLOORMOD)
            return convert_to(s, narrow, a->dtype, NULL);
    }
    texi_form *fa = texi_form_of(s, a), *fb = texi_form_of(s, b), *q, *r;
    if (!fa || !fb)
        return NULL;
    if (!texi_form_exact(s, fa) || !texi_form_exact(s, fb) || texi_form_range(s, fb).lo < 1)
        return bin(s, kind, a, b);
    if (fb->n == 1 && fb->k == 0) {
        if (!split(s, fa, &fb->terms[0], fb->terms[0].coef, &q, &r))
            return NULL;
    } else {
        q = texi_form_const(s, fa->t, 0);
        r = fa;
    }
    texi_ival r_minus_d;
    if (!q || s->failed)
        return NULL;
    if (texi_form_range(s, r).lo >= 0 && diff_range(s, r, fb, &r_minus_d) && r_minus_d.hi <= -1)
        return texi_form_expr(s, kind == TEXI_EXPR_FLOORDIV ? q : r);
    if (form_is_zero(q) || !texi_form_exact(s, r))
        return bin(s, kind, a, b);
    tex_expr *inner = bin(s, kind, texi_form_expr(s, r), b);
    return kind == TEXI_EXPR_FLOORDIV ? plus(s, q, inner) : inner;
}

static tex_expr *simp_div(texi_simp *s, tex_expr *a, tex_expr *b)
{
    int64_t c, c1, va;
    if (!a || !b)
        return NULL;
    if (!is_int(b, &c))
        return divmod_var(s, TEXI_EXPR_FLOORDIV, a, b);
    if (is_int(a, &va) && fold_int(TEXI_EXPR_FLOORDIV, a->dtype, va, c, &va))
        return imm(s, a->dtype, va);
    if (c == 1)
        return a;
    if (c <= 0)
        return bin(s, TEXI_EXPR_FLOORDIV, a, b);
    /* floordiv(floordiv(x, c1), c) = floordiv(x, c1*c) for positive c1, c */
    if (a->kind == TEXI_EXPR_FLOORDIV && is_int(a->u.bin.b, &c1) && c1 > 0 &&
        c1 <= texi_ival_type(a->dtype).hi / c)
        return simp_div(s, a->u.bin.a, imm(s, a->dtype, c1 * c));
    return div_const(s, a, c, b);
}

static tex_expr *simp_mod(texi_simp *s, tex_expr *a, tex_expr *b)
{
    int64_t c, c1, va;
    if (!a || !b)
        return NULL;
    if (!is_int(b, &c))
        return divmod_var(s, TEXI_EXPR_FLOORMOD, a, b);
    if (is_int(a, &va) && fold_int(TEXI_EXPR_FLOORMOD, a->dtype, va, c, &va))
        return imm(s, a->dtype, va);
    if (c == 1 || (c == -1 && texi_dtype_is_signed(a->dtype)))
        return imm(s, a->dtype, 0);
    if (c <= 0)
        return bin(s, TEXI_EXPR_FLOORMOD, a, b);
    /* floormod(floormod(x, c1), c) = floormod(x, c) when c divides c1 */
    if (a->kind == TEXI_EXPR_FLOORMOD && is_int(a->u.bin.b, &c1) && c1 > 0 && c1 % c == 0)
        return simp_mod(s, a->u.bin.a, b);
    return mod_const(s, a, c, b);
}

/* Terms plus terms over a floordiv / floormod atom (converted or not):
 * what recombine lowers. */
static int divmod_cost(const texi_form *f)
{
    int cost = f->n;
    for (int i = 0; i < f->n; i++)
        for (int j = 0; j < f->terms[i].n_atoms; j++) {
            enum texi_expr_kind k = int_cast_operand(f->terms[i].atoms[j], f->t)->kind;
            cost += k == TEXI_EXPR_FLOORDIV || k == TEXI_EXPR_FLOORMOD;
        }
    return cost;
}

/* The floordiv(x, d) of a term a*d*floordiv(x, d) and its a: the term is
 * a*c*floordiv(x, c) for a positive constant c of the sum's type, or
 * coef*d*floordiv(x, d) for a divisor d that is not constant (the term's
 * other atom); either atom may be converted to the sum's type
 * (int_cast_operand). NULL when t is neither. */
static tex_expr *divisor_multiple(const texi_term *t, tex_dtype sum_type, int64_t *a)
{
    int64_t c;
    if (t->n_atoms == 1) {
        tex_expr *fd = int_cast_operand(t->atoms[0], sum_type);
        if (fd->kind != TEXI_EXPR_FLOORDIV || !is_int(fd->u.bin.b, &c) || c <= 0 ||
            c > texi_ival_type(sum_type).hi || t->coef % c != 0)
            return NULL;
        *a = t->coef / c;
        return fd;
    }
    for (int j = 0; t->n_atoms == 2 && j < 2; j++) {
        tex_expr *fd = int_cast_operand(t->atoms[j], sum_type);
        if (fd->kind == TEXI_EXPR_FLOORDIV &&
            texi_arith_cmp(fd->u.bin.b, int_cast_operand(t->atoms[1 - j], sum_type)) == 0) {
            *a = t->coef;
            return fd;
        }
    }
    return NULL;
}

/* f with its term i rewritten by x = d*floordiv(x, d) + floormod(x, d)
 * (for any d other than 0, which would divide by zero): a*d*floordiv(x, d)
 * becomes a*x - a*floormod(x, d), and when `mods`, a*floormod(x, c) for a
 * positive constant c becomes a*x - a*c*floordiv(x, c). f itself when term
 * i is neither, NULL on failure. */
static texi_form *divmod_rewrite(texi_simp *s, texi_form *f, int i, bool mods)
{
    const texi_term *t = &f->terms[i];
    int64_t a, c, traded; /* the coefficients of x and of the other side */
    tex_expr *x, *other;
    tex_expr *fd = divisor_multiple(t, f->t, &a);
    if (fd) {
        x = fd->u.bin.a;
        other = simp_mod(s, x, fd->u.bin.b);
        traded = a;
    } else {
        tex_expr *fm = mods && t->n_atoms == 1 ? int_cast_operand(t->atoms[0], f->t) : NULL;
        if (!fm || fm->kind != TEXI_EXPR_FLOORMOD || !is_int(fm->u.bin.b, &c) || c <= 0 ||
            c > texi_ival_type(f->t).hi || __builtin_mul_overflow(t->coef, c, &traded))
            return f;
        a = t->coef;
        x = fm->u.bin.a;
        other = simp_div(s, x, fm->u.bin.b);
    }
    if (!other)
        return NULL;
    const texi_form one = {.t = f->t, .n = 1, .terms = &f->terms[i]};
    texi_form *fx = texi_form_of(s, convert_to(s, x, f->t, NULL));
    texi_form *fo = texi_form_of(s, convert_to(s, other, f->t, NULL));
    return texi_form_add(s, texi_form_add(s, texi_form_add(s, f, &one, -1), fx, a), fo, -traded);
}

/* divmod_rewrite applied to a term of f when that lowers divmod_cost (so it
 * terminates): floordiv(x, 8)*8 + floormod(x, 8) -> x (also when x is a
 * sum: (t*16 + u)/64*64 + (t*16 + u)%64 -> t*16 + u, and for a size n:
 * floordiv(f, n)*n + floormod(f, n) -> f), x - floordiv(x, 8)*8 ->
 * floormod(x, 8), floordiv(n, 8)*8 - n -> -floormod(n, 8). When `mods`, a
 * floormod is also expanded where the rewrites that follow (without
 * expanding again) lower the cost and the count of terms: an index
 * unflattened and flattened again, i/60*60 + i/5%12*5 + i%5 -> i,
 * i/5%12*5 + i%5 -> i%60; not i/8 + i%8*68 -> i*68 - i/8*543, whose terms
 * no longer lie in known ranges each (bounds of shared-memory halves). */
static texi_form *recombine(texi_simp *s, texi_form *f, bool mods)
{
    for (int i = 0; f && i < f->n; i++) {
        texi_form *g = divmod_rewrite(s, f, i, mods);
        if (!g)
            return NULL;
        if (g == f)
            continue;
        bool expanded = f->terms[i].n_atoms == 1 &&
                        int_cast_operand(f->terms[i].atoms[0], f->t)->kind == TEXI_EXPR_FLOORMOD;
        if (expanded && !(g = recombine(s, g, false)))
            return NULL;
        if (divmod_cost(g) < divmod_cost(f) && (!expanded || g->n < f->n)) {
            f = g;
            i = -1; /* start over: the new terms may combine again */
        }
    }
    return f;
}

/* ------------------------------------------------------------ min / max */

static texi_form *recombine(texi_simp *s, texi_form *f, bool mods);

/* -1: d <= 0 always, 1: d >= 0 always, 0: unknown (or d NULL or wrapped). */
static int sign_of(texi_simp *s, const texi_form *d)
{
    if (!d || d->wrapped)
        return 0;
    texi_ival r = texi_form_range(s, d);
    return r.hi <= 0 ? -1 : r.lo >= 0 ? 1 : 0;
}

/* -1: a <= b always, 1: a >= b always, 0: unknown. The difference is
 * recombined when its terms' ranges do not decide: w - floordiv(w + 63,
 * 64)*64 is floormod(w + 63, 64) - 63, at most 0 (a tile count's columns,
 * min(w, floordiv(w + 63, 64)*64), are w). */
static int order_of(texi_simp *s, tex_expr *a, tex_expr *b, texi_form *fa, texi_form *fb)
{
    texi_ival ia = texi_ival_of(a, s->n, s->ranges), ib = texi_ival_of(b, s->n, s->ranges);
    if (ia.hi <= ib.lo)
        return -1;
    if (ib.hi <= ia.lo)
        return 1;
    if (!texi_form_exact(s, fa) || !texi_form_exact(s, fb))
        return 0;
    texi_form *d = texi_form_diff(s, fa, fb);
    int order = sign_of(s, d);
    texi_form *g = order == 0 && d ? recombine(s, d, false) : NULL;
    return g && g != d ? sign_of(s, g) : order;
}

static tex_expr *simp_minmax(texi_simp *s, enum texi_expr_kind kind, tex_expr *a, tex_expr *b);

/* min(A + C, B + C) = min(A, B) + C for the terms C common to both sides;
 * NULL with !s->failed when there are none. */
static tex_expr *minmax_common(texi_simp *s, enum texi_expr_kind kind, texi_form *fa, texi_form *fb)
{
    texi_form *common = texi_form_common(s, fa, fb);
    if (!common || form_is_zero(common))
        return NULL;
    texi_form *ra = texi_form_add(s, fa, common, -1), *rb = texi_form_add(s, fb, common, -1);
    if (!ra || !rb || ra->wrapped || rb->wrapped || !texi_form_exact(s, ra) ||
        !texi_form_exact(s, rb))
        return NULL;
    tex_expr *inner = simp_minmax(s, kind, texi_form_expr(s, ra), texi_form_expr(s, rb));
    return inner ? plus(s, common, inner) : NULL;
}

/* Whether x is one of the operands of the min/max node m. */
static bool operand_of(const tex_expr *m, const tex_expr *x)
{
    return texi_arith_cmp(m->u.bin.a, x) == 0 || texi_arith_cmp(m->u.bin.b, x) == 0;
}

/* min(a, min(a, x)) = min(a, x), min(a, max(a, x)) = a (and for max); NULL
 * when neither applies. */
static tex_expr *absorb(enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    enum texi_expr_kind dual = kind == TEXI_EXPR_MIN ? TEXI_EXPR_MAX : TEXI_EXPR_MIN;
    if (b->kind == kind && operand_of(b, a))
        return b;
    if (a->kind == kind && operand_of(a, b))
        return a;
    if (b->kind == dual && operand_of(b, a))
        return a;
    if (a->kind == dual && operand_of(a, b))
        return b;
    return NULL;
}

static tex_expr *simp_minmax(texi_simp *s, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    int64_t va, vb, c1;
    if (!a || !b)
        return NULL;
    if (is_int(a, &va) && is_int(b, &vb) && fold_int(kind, a->dtype, va, vb, &va))
        return imm(s, a->dtype, va);
    if (is_int(a, NULL)) {
        tex_expr *tmp = a;
        a = b;
        b = tmp;
    }
    bool is_min = kind == TEXI_EXPR_MIN;
    texi_form *fa = texi_form_of(s, a), *fb = texi_form_of(s, b);
    if (!fa || !fb)
        return NULL;
    int order = order_of(s, a, b, fa, fb);
    if (order != 0)
        return (order < 0) == is_min ? a : b;
    tex_expr *absorbed = absorb(kind, a, b);
    if (absorbed)
        return absorbed;
    /* min(min(x, c1), c2) = min(x, min(c1, c2)) */
    if (a->kind == kind && is_int(a->u.bin.b, &c1) && is_int(b, &vb) &&
        fold_int(kind, a->dtype, c1, vb, &c1))
        return simp_minmax(s, kind, a->u.bin.a, imm(s, a->dtype, c1));
    if (texi_form_exact(s, fa) && texi_form_exact(s, fb)) {
        tex_expr *r = minmax_common(s, kind, fa, fb);
        if (r || s->failed)
            return r;
    }
    if (!is_int(b, NULL) && texi_arith_cmp(a, b) > 0)
        return bin(s, kind, b, a);
    return bin(s, kind, a, b);
}

/* ---------------------------------------------------------- comparisons */

/* The comparison that holds when `kind` holds with both sides negated. */
static enum texi_expr_kind mirror(enum texi_expr_kind kind)
{
    switch (kind) {
    case TEXI_EXPR_LT:
        return TEXI_EXPR_GT;
    case TEXI_EXPR_LE:
        return TEXI_EXPR_GE;
    case TEXI_EXPR_GT:
        return TEXI_EXPR_LT;
    case TEXI_EXPR_GE:
        return TEXI_EXPR_LE;
    default:
        return kind;
    }
}

/* The comparison that holds exactly when `kind` fails (integers). */
static enum texi_expr_kind negate(enum texi_expr_kind kind)
{
    switch (kind) {
    case TEXI_EXPR_LT:
        return TEXI_EXPR_GE;
    case TEXI_EXPR_LE:
        return TEXI_EXPR_GT;
    case TEXI_EXPR_GT:
        return TEXI_EXPR_LE;
    case TEXI_EXPR_GE:
        return TEXI_EXPR_LT;
    case TEXI_EXPR_EQ:
        return TEXI_EXPR_NE;
    default:
        return TEXI_EXPR_EQ;
    }
}

/* `d kind 0` as `P kind N + K`: positive terms left, the others right, the
 * common factor g of the coefficients divided out (rounding K the way
 * `kind` needs). NULL with !s->failed when it does not apply. */
static tex_expr *normalize(texi_simp *s, enum texi_expr_kind kind, texi_form *d)
{
    bool any_pos = false;
    for (int i = 0; i < d->n; i++)
        any_pos |= d->terms[i].coef > 0;
    if (!any_pos) {
        d = texi_form_diff(s, texi_form_const(s, d->t, 0), d);
        kind = mirror(kind);
    }
    if (!d || d->wrapped || d->k == TEXI_NEG_INF)
        return NULL;
    int64_t g = 0, k = -d->k, kk;
    for (int i = 0; i < d->n; i++)
        g = texi_arith_gcd(g, d->terms[i].coef);
    switch (kind) {
    case TEXI_EXPR_LT:
    case TEXI_EXPR_GE:
        kk = -texi_arith_floordiv(-k, g);
        break;
    case TEXI_EXPR_LE:
    case TEXI_EXPR_GT:
        kk = texi_arith_floordiv(k, g);
        break;
    default:
        if (k % g != 0)
            return imm(s, TEX_BOOL, kind == TEXI_EXPR_NE);
        kk = k / g;
    }
    texi_term *pt = texi_simp_alloc(s, sizeof *pt * (size_t)d->n);
    texi_term *nt = texi_simp_alloc(s, sizeof *nt * (size_t)d->n);
    if (!pt || !nt || texi_arith_wrap(d->t, kk) != kk)
        return NULL;
    int np = 0, nn = 0;
    for (int i = 0; i < d->n; i++) {
        texi_term term = d->terms[i];
        term.coef /= g;
        if (term.coef < 0)
            term.coef = (int64_t)(0 - (uint64_t)term.coef);
        if (d->terms[i].coef > 0)
            pt[np++] = term;
        else
            nt[nn++] = term;
    }
    texi_form *p = texi_form_make(s, d->t, pt, np, 0), *n = texi_form_make(s, d->t, nt, nn, kk);
    if (!p || !n || p->wrapped || n->wrapped || !texi_form_exact(s, p) || !texi_form_exact(s, n))
        return NULL;
    return bin(s, kind, texi_form_expr(s, p), texi_form_expr(s, n));
}

static tex_expr *simp_compare(texi_simp *s, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    int64_t va, vb;
    if (is_int(a, &va) && is_int(b, &vb) && fold_int(kind, a->dtype, va, vb, &va))
        return imm(s, TEX_BOOL, va);
    if (!texi_dtype_is_int(a->dtype))
        return bin(s, kind, a, b);
    texi_ival ia = texi_ival_of(a, s->n, s->ranges), ib = texi_ival_of(b, s->n, s->ranges);
    int known = texi_ival_decide(kind, texi_ival_add(ia, texi_ival_neg(ib)));
    if (known >= 0)
        return imm(s, TEX_BOOL, known);
    texi_form *fa = texi_form_of(s, a), *fb = texi_form_of(s, b);
    if (!fa || !fb)
        return NULL;
    if (!texi_form_exact(s, fa) || !texi_form_exact(s, fb))
        return bin(s, kind, a, b);
    texi_form *d = texi_form_diff(s, fa, fb);
    if (!d || d->wrapped)
        return d ? bin(s, kind, a, b) : NULL;
    known = texi_ival_decide(kind, texi_form_range(s, d));
    if (known >= 0)
        return imm(s, TEX_BOOL, known);
    tex_expr *r = normalize(s, kind, d);
    return r || s->failed ? r : bin(s, kind, a, b);
}

/* ------------------------------------------------------------- logic */

static tex_expr *simp_logic(texi_simp *s, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    int64_t v;
    bool is_and = kind == TEXI_EXPR_AND;
    if (is_int(a, &v))
        return is_and == (v != 0) ? b : a;
    if (is_int(b, &v))
        return is_and == (v != 0) ? a : b;
    if (texi_arith_cmp(a, b) == 0)
        return a;
    return bin(s, kind, a, b);
}

static tex_expr *simp_not(texi_simp *s, tex_expr *a)
{
    int64_t v;
    if (!a)
        return NULL;
    if (is_int(a, &v))
        return imm(s, TEX_BOOL, v == 0);
    if (a->kind == TEXI_EXPR_NOT)
        return a->u.un.a;
    /* !(x < y) is x >= y for integers; not for floats (NaN). */
    if (texi_expr_is_compare(a) && !texi_dtype_is_float(a->u.bin.a->dtype))
        return bin(s, negate(a->kind), a->u.bin.a, a->u.bin.b);
    return texi_simp_note(s, texi_unary(TEXI_EXPR_NOT, TEX_BOOL, a));
}

/* ---------------------------------------------------------------- nodes */

static tex_expr *simp_int(texi_simp *s, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    int64_t va, vb, r;
    if (is_int(a, &va) && is_int(b, &vb) && fold_int(kind, a->dtype, va, vb, &r))
        return imm(s, a->dtype, r);
    switch (kind) {
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
    case TEXI_EXPR_MUL: {
        tex_expr *node = bin(s, kind, a, b);
        texi_form *f = node ? texi_form_of(s, node) : NULL;
        return texi_form_expr(s, recombine(s, f, true));
    }
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
        return simp_div(s, a, b);
    case TEXI_EXPR_FLOORMOD:
        return simp_mod(s, a, b);
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        return simp_minmax(s, kind, a, b);
    default:
        return bin(s, kind, a, b);
    }
}

static tex_expr *simp_binary(texi_simp *s, tex_expr *e)
{
    tex_expr *a = texi_simp_expr(s, e->u.bin.a);
    tex_expr *b = a ? texi_simp_expr(s, e->u.bin.b) : NULL;
    if (!b)
        return NULL;
    enum texi_expr_kind kind = e->kind;
    if (texi_dtype_is_float(a->dtype))
        return simp_float(s, kind, a, b);
    if (texi_expr_is_compare(e))
        return simp_compare(s, kind, a, b);
    if (kind == TEXI_EXPR_AND || kind == TEXI_EXPR_OR)
        return simp_logic(s, kind, a, b);
    if (texi_dtype_is_int(a->dtype))
        return simp_int(s, kind, a, b);
    int64_t va, vb; /* bool min/max */
    if (is_int(a, &va) && is_int(b, &vb) && fold_int(kind, a->dtype, va, vb, &va))
        return imm(s, a->dtype, va);
    return bin(s, kind, a, b);
}

static tex_expr *simp_cast(texi_simp *s, tex_expr *e)
{
    tex_expr *a = texi_simp_expr(s, e->u.un.a);
    return a ? convert_to(s, a, e->dtype, e) : NULL;
}

static tex_expr *simp_select(texi_simp *s, tex_expr *e)
{
    int64_t v;
    tex_expr *c = texi_simp_expr(s, e->u.sel.cond);
    if (!c)
        return NULL;
    if (is_int(c, &v))
        return texi_simp_expr(s, v ? e->u.sel.t : e->u.sel.f);
    tex_expr *t = texi_simp_expr(s, e->u.sel.t);
    tex_expr *f = t ? texi_simp_expr(s, e->u.sel.f) : NULL;
    if (!f)
        return NULL;
    if (texi_arith_cmp(t, f) == 0)
        return t;
    return texi_simp_note(s, texi_select_new(c, t, f));
}

/* Simplifies es[0..n) into out; true when one changed (false on failure too). */
static bool simp_list(texi_simp *s, int n, tex_expr *const es[], tex_expr **out)
{
    bool changed = false;
    for (int i = 0; i < n && !s->failed; i++) {
        out[i] = texi_simp_expr(s, es[i]);
        changed |= out[i] != es[i];
    }
    return changed && !s->failed;
}

/* Calls, accesses, loads, searches and reductions: only their operands are
 * simplified. */
static tex_expr *simp_opaque(texi_simp *s, tex_expr *e)
{
    tex_expr *args[3], **idx, *x, *cond;
    switch (e->kind) {
    case TEXI_EXPR_CALL:
        if (!simp_list(s, e->u.call.n_args, e->u.call.args, args))
            return s->failed ? NULL : e;
        return texi_simp_note(s, texi_call_new(e->u.call.op, e->dtype, e->u.call.n_args, args));
    case TEXI_EXPR_ACCESS:
        idx = texi_simp_alloc(s, sizeof *idx * (size_t)(e->u.access.n_idx + 1));
        if (!idx || !simp_list(s, e->u.access.n_idx, e->u.access.idx, idx))
            return s->failed ? NULL : e;
        return texi_simp_note(s, texi_access_new(e->u.access.tensor, e->u.access.n_idx, idx));
    case TEXI_EXPR_LOAD:
        x = texi_simp_expr(s, e->u.load.index);
        if (!x || x == e->u.load.index)
            return x ? e : NULL;
        return texi_simp_note(s, texi_load_at(e, x));
    case TEXI_EXPR_SEARCH:
        if (!simp_list(s, 3, (tex_expr *[]){e->u.search.lo, e->u.search.hi, e->u.search.value},
                       args))
            return s->failed ? NULL : e;
        return texi_simp_note(s, texi_search_new(e->u.search.op, e->u.search.tensor,
                                                 e->u.search.buf, args[0], args[1], args[2]));
    default: /* REDUCE */
        x = texi_simp_expr(s, e->u.red.body);
        cond = e->u.red.cond && x ? texi_simp_expr(s, e->u.red.cond) : NULL;
        if (!x || (e->u.red.cond && !cond))
            return NULL;
        if (x == e->u.red.body && cond == e->u.red.cond)
            return e;
        return texi_simp_note(
            s, texi_reduce_new(e->u.red.op, x, e->u.red.n_axes, e->u.red.axes, cond));
    }
}

tex_expr *texi_simp_expr(texi_simp *s, tex_expr *e)
{
    if (s->failed)
        return NULL;
    if (e->lanes > 1)
        return e; /* vectors (the CPU tail's) are built simplified */
    switch (e->kind) {
    case TEXI_EXPR_INT:
    case TEXI_EXPR_FLOAT:
    case TEXI_EXPR_VAR:
    case TEXI_EXPR_RAMP:
    case TEXI_EXPR_BROADCAST:
    case TEXI_EXPR_VREDUCE: /* of a vector, built simplified */
        return e;
    TEXI_CASE_BINARY:
        return simp_binary(s, e);
    case TEXI_EXPR_NOT:
        return simp_not(s, texi_simp_expr(s, e->u.un.a));
    case TEXI_EXPR_CAST:
        return simp_cast(s, e);
    case TEXI_EXPR_SELECT:
        return simp_select(s, e);
    case TEXI_EXPR_CALL:
    case TEXI_EXPR_ACCESS:
    case TEXI_EXPR_LOAD:
    case TEXI_EXPR_SEARCH:
    case TEXI_EXPR_REDUCE:
        return simp_opaque(s, e);
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    return e;
}

/* ---------------------------------------------------------------- entry */

tex_expr *texi_simplify(tex_expr *e, int n, const texi_range ranges[])
{
    if (!e)
        return NULL;
    texi_simp s;
    texi_simp_init(&s, e->ctx, n, ranges);
    tex_expr *r = texi_simp_expr(&s, e);
    bool failed = s.failed || !r;
    texi_simp_fini(&s);
    if (failed)
        return NULL;
    return texi_arith_cmp(r, e) == 0 ? e : r; /* keep the caller's sharing */
}

bool texi_prove(tex_expr *cond, int n, const texi_range ranges[])
{
    tex_expr *r = texi_simplify(cond, n, ranges);
    return r && r->kind == TEXI_EXPR_INT && r->u.i != 0;
}
