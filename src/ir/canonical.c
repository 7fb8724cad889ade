/*
 * Canonical sums of products of integer expressions: sum(c_i * m_i) + k.
 *
 * A monomial m_i is a sorted product of atoms: any integer expression that is
 * not an addition, a subtraction, a constant or a product by a constant
 * (variables, floordiv, min, select, loads, ...). texi_form_of flattens +, -
 * and *, distributes products over sums (up to FORM_EXPAND_MAX terms; a larger
 * product stays an atom) and combines like monomials; texi_form_expr builds
 * the expression back in a fixed, readable order: positive terms first, in
 * monomial order (variables by creation order, so outer loops come first),
 * then negative terms as subtractions, the constant last (`i*8 + j - k + 3`).
 * Rules that need ranges (floordiv/floormod recombination) live in simplify.c.
 *
 * Coefficients are kept as signed representatives modulo 2^bits of the type,
 * so the form is an exact ring identity even when the arithmetic wraps (see
 * arith.h); an unsigned `x - y` stays `x - y`.
 *
 * texi_arith_cmp is the total order behind "sorted": structural, variables by
 * id, floats by bit pattern. It is also the simplifier's equality test.
 *
 * Forms live in the simplifier's scratch arena and are never freed singly.
 */
#include "ir/arith.h"

#include <stdlib.h>
#include <string.h>

#define FORM_EXPAND_MAX 16 /* most terms a product of two sums may expand to */

/* ------------------------------------------------------------- ordering */

static int cmp_i64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

static int cmp_list(int na, tex_expr *const *a, int nb, tex_expr *const *b)
{
    if (na != nb)
        return na < nb ? -1 : 1;
    for (int i = 0; i < na; i++) {
        int c = texi_arith_cmp(a[i], b[i]);
        if (c)
            return c;
    }
    return 0;
}

static int cmp_float(double a, double b)
{
    uint64_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    return (ua > ub) - (ua < ub);
}

static int cmp_opt(const tex_expr *a, const tex_expr *b)
{
    if (!a || !b)
        return (a != NULL) - (b != NULL);
    return texi_arith_cmp(a, b);
}

static int cmp_load(const tex_expr *a, const tex_expr *b)
{
    const texi_buffer *ba = a->u.load.buf, *bb = b->u.load.buf;
    if (ba != bb) {
        int c = strcmp(ba->name, bb->name);
        if (c)
            return c;
        c = cmp_opt(ba->data, bb->data);
        if (c)
            return c;
    }
    return texi_arith_cmp(a->u.load.index, b->u.load.index);
}

/* Searches: op, array (tensor id, else as cmp_load), then lo, hi, value. */
static int cmp_search(const tex_expr *a, const tex_expr *b)
{
    int c = cmp_i64(a->u.search.op, b->u.search.op);
    const tex_tensor *ta = a->u.search.tensor, *tb = b->u.search.tensor;
    if (!c && (ta || tb))
        c = cmp_i64(ta ? ta->id : 0, tb ? tb->id : 0);
    const texi_buffer *ba = a->u.search.buf, *bb = b->u.search.buf;
    if (!c && ba && bb && ba != bb && !(c = strcmp(ba->name, bb->name)))
        c = cmp_opt(ba->data, bb->data);
    if (c || (c = texi_arith_cmp(a->u.search.lo, b->u.search.lo)) ||
        (c = texi_arith_cmp(a->u.search.hi, b->u.search.hi)))
        return c;
    return texi_arith_cmp(a->u.search.value, b->u.search.value);
}

static int cmp_reduce(const tex_expr *a, const tex_expr *b)
{
    int c = cmp_i64(a->u.red.op, b->u.red.op);
    if (c || (c = cmp_i64(a->u.red.n_axes, b->u.red.n_axes)))
        return c;
    for (int i = 0; i < a->u.red.n_axes; i++)
        if ((c = texi_arith_cmp(a->u.red.axes[i]->var, b->u.red.axes[i]->var)))
            return c;
    if ((c = texi_arith_cmp(a->u.red.body, b->u.red.body)))
        return c;
    return cmp_opt(a->u.red.cond, b->u.red.cond);
}

int texi_arith_cmp(const tex_expr *a, const tex_expr *b)
{
    if (a == b)
        return 0;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->dtype != b->dtype)
        return a->dtype < b->dtype ? -1 : 1;
    if (a->lanes != b->lanes)
        return a->lanes < b->lanes ? -1 : 1;
    int c;
    switch (a->kind) {
    case TEXI_EXPR_INT:
        return cmp_i64(a->u.i, b->u.i);
    case TEXI_EXPR_FLOAT:
        return cmp_float(a->u.f, b->u.f);
    case TEXI_EXPR_VAR:
        return cmp_i64(a->u.var.id, b->u.var.id);
    TEXI_CASE_BINARY:
        c = texi_arith_cmp(a->u.bin.a, b->u.bin.a);
        return c ? c : texi_arith_cmp(a->u.bin.b, b->u.bin.b);
    case TEXI_EXPR_NOT:
    case TEXI_EXPR_CAST:
    case TEXI_EXPR_BROADCAST:
        return texi_arith_cmp(a->u.un.a, b->u.un.a);
    case TEXI_EXPR_VREDUCE:
        c = cmp_i64(a->u.vred.op, b->u.vred.op);
        return c ? c : texi_arith_cmp(a->u.vred.a, b->u.vred.a);
    case TEXI_EXPR_RAMP:
        c = texi_arith_cmp(a->u.ramp.base, b->u.ramp.base);
        return c ? c : texi_arith_cmp(a->u.ramp.stride, b->u.ramp.stride);
    case TEXI_EXPR_SELECT:
        if ((c = texi_arith_cmp(a->u.sel.cond, b->u.sel.cond)) ||
            (c = texi_arith_cmp(a->u.sel.t, b->u.sel.t)))
            return c;
        return texi_arith_cmp(a->u.sel.f, b->u.sel.f);
    case TEXI_EXPR_CALL:
        if ((c = cmp_i64(a->u.call.op, b->u.call.op)))
            return c;
        return cmp_list(a->u.call.n_args, a->u.call.args, b->u.call.n_args, b->u.call.args);
    case TEXI_EXPR_ACCESS:
        if ((c = cmp_i64(a->u.access.tensor->id, b->u.access.tensor->id)))
            return c;
        return cmp_list(a->u.access.n_idx, a->u.access.idx, b->u.access.n_idx, b->u.access.idx);
    case TEXI_EXPR_LOAD:
        return cmp_load(a, b);
    case TEXI_EXPR_SEARCH:
        return cmp_search(a, b);
    case TEXI_EXPR_REDUCE:
        return cmp_reduce(a, b);
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    return 0;
}

static int cmp_mono(const texi_term *a, const texi_term *b)
{
    int n = a->n_atoms < b->n_atoms ? a->n_atoms : b->n_atoms;
    for (int i = 0; i < n; i++) {
        int c = texi_arith_cmp(a->atoms[i], b->atoms[i]);
        if (c)
            return c;
    }
    return cmp_i64(a->n_atoms, b->n_atoms);
}

static int cmp_term_qsort(const void *a, const void *b)
{
    return cmp_mono(a, b);
}

static int cmp_atom_qsort(const void *a, const void *b)
{
    return texi_arith_cmp(*(tex_expr *const *)a, *(tex_expr *const *)b);
}

/* ---------------------------------------------------------------- forms */

/* a + b and a * b modulo 2^64; *ovf is set when the exact result differs. */
static int64_t exact_add(int64_t a, int64_t b, bool *ovf)
{
    int64_t r = (int64_t)((uint64_t)a + (uint64_t)b);
    if ((b > 0 && r < a) || (b < 0 && r > a))
        *ovf = true;
    return r;
}

static int64_t exact_mul(int64_t a, int64_t b, bool *ovf)
{
    int64_t r = (int64_t)((uint64_t)a * (uint64_t)b);
    if (a == -1 ? b == INT64_MIN : a != 0 && r / a != b)
        *ovf = true;
    return r;
}

static texi_form *form_new(texi_simp *s, tex_dtype t, int cap)
{
    texi_form *f = texi_simp_alloc(s, sizeof *f);
    if (!f)
        return NULL;
    f->t = t;
    if (cap > 0 && !(f->terms = texi_simp_alloc(s, sizeof(texi_term) * (size_t)cap)))
        return NULL;
    return f;
}

/* Sorts terms[0..n), merges like monomials and drops zeros; coefficients are
 * reduced modulo 2^bits of t when `reduce` (else kept as exact integers). */
static texi_form *form_build(texi_simp *s, tex_dtype t, texi_term *terms, int n, int64_t k,
                             bool reduce)
{
    texi_form *f = form_new(s, t, n);
    if (!f)
        return NULL;
    f->k = reduce ? texi_arith_wrap(t, k) : k;
    bool wrapped = f->k != k;
    if (n > 0)
        qsort(terms, (size_t)n, sizeof *terms, cmp_term_qsort);
    for (int i = 0, j; i < n; i = j) {
        int64_t sum = 0;
        for (j = i; j < n && cmp_mono(&terms[i], &terms[j]) == 0; j++)
            sum = exact_add(sum, terms[j].coef, &wrapped);
        int64_t c = reduce ? texi_arith_wrap(t, sum) : sum;
        wrapped |= c != sum;
        if (c != 0) {
            f->terms[f->n] = terms[i];
            f->terms[f->n++].coef = c;
        }
    }
    f->wrapped = wrapped;
    return f;
}

texi_form *texi_form_make(texi_simp *s, tex_dtype t, texi_term *terms, int n, int64_t k)
{
    return form_build(s, t, terms, n, k, true);
}

texi_form *texi_form_const(texi_simp *s, tex_dtype t, int64_t k)
{
    return texi_form_make(s, t, NULL, 0, k);
}

texi_form *texi_form_atom(texi_simp *s, tex_expr *atom)
{
    texi_term term = {1, 1, texi_simp_alloc(s, sizeof(tex_expr *))};
    if (!atom || !term.atoms)
        return NULL;
    term.atoms[0] = atom;
    return texi_form_make(s, atom->dtype, &term, 1, 0);
}

/* a + scale * b, reduced modulo 2^bits when `reduce`. */
static texi_form *form_combine(texi_simp *s, const texi_form *a, const texi_form *b, int64_t scale,
                               bool reduce)
{
    if (!a || !b)
        return NULL;
    int n = a->n + b->n;
    bool ovf = false;
    texi_term *terms = texi_simp_alloc(s, sizeof *terms * (size_t)(n > 0 ? n : 1));
    if (!terms)
        return NULL;
    for (int i = 0; i < a->n; i++)
        terms[i] = a->terms[i];
    for (int i = 0; i < b->n; i++) {
        terms[a->n + i] = b->terms[i];
        terms[a->n + i].coef = exact_mul(b->terms[i].coef, scale, &ovf);
    }
    int64_t k = exact_add(a->k, exact_mul(b->k, scale, &ovf), &ovf);
    texi_form *f = form_build(s, a->t, terms, n, k, reduce);
    if (f)
        f->wrapped |= ovf;
    return f;
}

texi_form *texi_form_add(texi_simp *s, const texi_form *a, const texi_form *b, int64_t scale)
{
    return form_combine(s, a, b, scale, true);
}

texi_form *texi_form_diff(texi_simp *s, const texi_form *a, const texi_form *b)
{
    return form_combine(s, a, b, -1, false);
}

/* The product of two monomials (merged atom lists) with coefficient coef. */
static bool term_product(texi_simp *s, texi_term *out, const texi_term *a, const texi_term *b,
                         int64_t coef)
{
    int n = a->n_atoms + b->n_atoms;
    out->coef = coef;
    out->n_atoms = n;
    out->atoms = texi_simp_alloc(s, sizeof(tex_expr *) * (size_t)n);
    if (!out->atoms)
        return false;
    memcpy(out->atoms, a->atoms, sizeof(tex_expr *) * (size_t)a->n_atoms);
    memcpy(out->atoms + a->n_atoms, b->atoms, sizeof(tex_expr *) * (size_t)b->n_atoms);
    qsort(out->atoms, (size_t)n, sizeof(tex_expr *), cmp_atom_qsort);
    return true;
}

/* a * b fully expanded. */
static texi_form *form_mul(texi_simp *s, const texi_form *a, const texi_form *b)
{
    int n = a->n * b->n + a->n + b->n, m = 0;
    bool ovf = false;
    texi_term *terms = texi_simp_alloc(s, sizeof *terms * (size_t)(n > 0 ? n : 1));
    if (!terms)
        return NULL;
    for (int i = 0; i < a->n; i++) {
        for (int j = 0; j < b->n; j++)
            if (!term_product(s, &terms[m++], &a->terms[i], &b->terms[j],
                              exact_mul(a->terms[i].coef, b->terms[j].coef, &ovf)))
                return NULL;
        terms[m] = a->terms[i];
        terms[m++].coef = exact_mul(a->terms[i].coef, b->k, &ovf);
    }
    for (int j = 0; j < b->n; j++) {
        terms[m] = b->terms[j];
        terms[m++].coef = exact_mul(b->terms[j].coef, a->k, &ovf);
    }
    texi_form *f = texi_form_make(s, a->t, terms, m, exact_mul(a->k, b->k, &ovf));
    if (f)
        f->wrapped |= ovf;
    return f;
}

texi_form *texi_form_of(texi_simp *s, tex_expr *e)
{
    texi_form *a, *b;
    switch (e->kind) {
    case TEXI_EXPR_INT:
        return texi_form_const(s, e->dtype, e->u.i);
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
        a = texi_form_of(s, e->u.bin.a);
        b = a ? texi_form_of(s, e->u.bin.b) : NULL;
        return texi_form_add(s, a, b, e->kind == TEXI_EXPR_ADD ? 1 : -1);
    case TEXI_EXPR_MUL:
        if (!(a = texi_form_of(s, e->u.bin.a)) || !(b = texi_form_of(s, e->u.bin.b)))
            return NULL;
        if (a->n == 0 || b->n == 0 ||
            (a->n + (a->k != 0)) * (b->n + (b->k != 0)) <= FORM_EXPAND_MAX)
            return form_mul(s, a, b);
        return texi_form_atom(s, e);
    default:
        return texi_form_atom(s, e);
    }
}

texi_form *texi_form_common(texi_simp *s, const texi_form *a, const texi_form *b)
{
    texi_term *ct = texi_simp_alloc(s, sizeof *ct * (size_t)(a->n + 1));
    if (!ct)
        return NULL;
    int nc = 0;
    for (int i = 0, j = 0; i < a->n && j < b->n;) {
        int c = cmp_mono(&a->terms[i], &b->terms[j]);
        if (c == 0 && a->terms[i].coef == b->terms[j].coef)
            ct[nc++] = a->terms[i];
        if (c <= 0)
            i++;
        if (c >= 0)
            j++;
    }
    return texi_form_make(s, a->t, ct, nc, a->k == b->k ? a->k : 0);
}

/* ------------------------------------------------------------- rebuild */

static tex_expr *imm(texi_simp *s, tex_dtype t, int64_t v)
{
    return texi_simp_note(s, texi_int_imm(s->ctx, t, v));
}

static tex_expr *bin(texi_simp *s, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    return a && b ? texi_simp_note(s, texi_binary(kind, a, b)) : NULL;
}

/* |coef| * monomial, or coef * monomial when `keep_sign`. */
static tex_expr *term_expr(texi_simp *s, tex_dtype t, const texi_term *term, bool keep_sign)
{
    tex_expr *m = term->atoms[0];
    for (int i = 1; i < term->n_atoms; i++)
        m = bin(s, TEXI_EXPR_MUL, m, term->atoms[i]);
    int64_t c = term->coef;
    if (!keep_sign && c < 0)
        c = (int64_t)(0 - (uint64_t)c);
    return c == 1 ? m : bin(s, TEXI_EXPR_MUL, m, imm(s, t, c));
}

/* acc + x, or x when acc is NULL. */
static tex_expr *append(texi_simp *s, tex_expr *acc, enum texi_expr_kind kind, tex_expr *x)
{
    return acc ? bin(s, kind, acc, x) : x;
}

tex_expr *texi_form_expr(texi_simp *s, const texi_form *f)
{
    if (!f)
        return NULL;
    tex_dtype t = f->t;
    tex_expr *acc = NULL;
    bool k_done = f->k == 0;
    for (int i = 0; i < f->n && !s->failed; i++)
        if (f->terms[i].coef > 0)
            acc = append(s, acc, TEXI_EXPR_ADD, term_expr(s, t, &f->terms[i], true));
    if (!acc && f->k > 0) {
        acc = imm(s, t, f->k);
        k_done = true;
    }
    for (int i = 0; i < f->n && !s->failed; i++) {
        if (f->terms[i].coef < 0) {
            bool first = acc == NULL;
            acc = append(s, acc, TEXI_EXPR_SUB, term_expr(s, t, &f->terms[i], first));
        }
    }
    if (s->failed)
        return NULL;
    if (!acc)
        return imm(s, t, f->k);
    if (!k_done)
        acc = f->k > 0 ? bin(s, TEXI_EXPR_ADD, acc, imm(s, t, f->k))
                       : bin(s, TEXI_EXPR_SUB, acc, imm(s, t, (int64_t)(0 - (uint64_t)f->k)));
    return acc;
}
