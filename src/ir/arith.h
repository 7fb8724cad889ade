/*
 * Integer arithmetic analysis shared by simplify.c (rewrite rules),
 * canonical.c (sums of products) and interval.c (constant intervals and
 * symbolic bounds). Private to these three files.
 *
 * Overflow policy (written down once, relied on by all three):
 *   - Constant folding wraps to the dtype's width, as the raw constructors do.
 *   - Sums of products are a ring identity modulo 2^bits, so canonicalizing
 *     +, -, * is always exact.
 *   - Rules that reason in the integers (floordiv/floormod splitting, min/max
 *     and comparison decisions, comparison normalization) assume that i32 and
 *     i64 arithmetic does not overflow (it is undefined in the generated C, as
 *     in Halide and TVM). For every other integer type they apply only when
 *     the interval analysis shows that the value cannot wrap.
 *   - Intervals are sound under wrap-around: a node whose exact result may
 *     leave its dtype's range gets the dtype's full interval.
 */
#ifndef TEX_IR_ARITH_H
#define TEX_IR_ARITH_H

#include "ir/ir.h"

/* ------------------------------------------------------------- intervals */

/* A closed interval; the ends TEXI_NEG_INF / TEXI_POS_INF mean unbounded. */
typedef struct {
    int64_t lo, hi;
} texi_ival;

#define TEXI_NEG_INF INT64_MIN
#define TEXI_POS_INF INT64_MAX

/* Floor division and modulo; b != 0 and not (INT64_MIN, -1). */
int64_t texi_arith_floordiv(int64_t a, int64_t b);
int64_t texi_arith_floormod(int64_t a, int64_t b);
/* Greatest common divisor of |a| and |b| (0 when both are 0). */
int64_t texi_arith_gcd(int64_t a, int64_t b);

/* Saturating arithmetic on interval ends (infinities absorb). */
int64_t texi_arith_sat_add(int64_t a, int64_t b);
int64_t texi_arith_sat_mul(int64_t a, int64_t b);

/* v as the signed representative modulo 2^bits of integer type t. */
int64_t texi_arith_wrap(tex_dtype t, int64_t v);

/* Smallest and largest value of integer type t as interval ends (u64's
 * maximum is +inf). */
texi_ival texi_ival_type(tex_dtype t);

/* The interval an unknown value of type t is known to lie in: the type's
 * range for types of at most 16 bits, unbounded (from 0 when unsigned) above. */
texi_ival texi_ival_full(tex_dtype t);

texi_ival texi_ival_add(texi_ival a, texi_ival b);
texi_ival texi_ival_neg(texi_ival a);

/* 1 / 0 when `d kind 0` holds / fails for every d in the interval, else -1
 * (kind a comparison). */
int texi_ival_decide(enum texi_expr_kind kind, texi_ival d);

/* Node-wise interval of an integer or bool expression (see texi_const_interval). */
texi_ival texi_ival_of(const tex_expr *e, int n, const texi_range ranges[]);

/* ---------------------------------------------------- canonical sums */

/* One term coef * atoms[0] * ... * atoms[n_atoms-1] of a sum (n_atoms >= 1). */
typedef struct {
    int64_t coef;     /* signed representative modulo 2^bits, never 0 */
    int n_atoms;      /* factors, sorted by texi_arith_cmp, repeated for powers */
    tex_expr **atoms; /* non-constant expressions that are not + - or constant * */
} texi_term;

/* sum(terms) + k over integer type t. Terms are sorted by monomial and have
 * distinct monomials. Forms live in the simplifier's scratch arena. */
typedef struct {
    tex_dtype t;
    int n;
    texi_term *terms;
    int64_t k;    /* constant, signed representative modulo 2^bits */
    bool wrapped; /* a coefficient or k is not the exact integer result of the
                     operation that built f (it wrapped): f is still right
                     modulo 2^bits, but f = a - b does not hold in the integers */
} texi_form;

/* The simplifier's state: ranges, the scratch arena of forms, failure flag. */
typedef struct {
    tex_ctx *ctx;
    int n; /* ranges */
    const texi_range *ranges;
    bool symbolic;      /* some range has a non-constant min or extent */
    bool failed;        /* out of memory (recorded in ctx) */
    texi_arena scratch; /* forms and temporary arrays; dropped at the end */
} texi_simp;

void texi_simp_init(texi_simp *s, tex_ctx *ctx, int n, const texi_range ranges[]);
void texi_simp_fini(texi_simp *s);
void *texi_simp_alloc(texi_simp *s, size_t size);
tex_expr *texi_simp_note(texi_simp *s, tex_expr *e); /* sets failed when e is NULL */

/* Total structural order on expressions (variables by id); 0 iff equal. */
int texi_arith_cmp(const tex_expr *a, const tex_expr *b);

texi_form *texi_form_of(texi_simp *s, tex_expr *e); /* e of integer type */
texi_form *texi_form_const(texi_simp *s, tex_dtype t, int64_t k);
texi_form *texi_form_atom(texi_simp *s, tex_expr *atom);
/* a + scale * b */
texi_form *texi_form_add(texi_simp *s, const texi_form *a, const texi_form *b, int64_t scale);
/* a - b in the integers: coefficients are not reduced modulo 2^bits, so the
 * form means exactly value(a) - value(b) for exact a and b unless wrapped
 * (int64 overflow). Only for ranges: texi_form_expr would wrap it. */
texi_form *texi_form_diff(texi_simp *s, const texi_form *a, const texi_form *b);
/* Sorts and merges terms[0..n) (combining like monomials) into a form. */
texi_form *texi_form_make(texi_simp *s, tex_dtype t, texi_term *terms, int n, int64_t k);
/* The expression of f, in the order of its terms, constant last. */
tex_expr *texi_form_expr(texi_simp *s, const texi_form *f);
/* The terms a and b share (same monomial and coefficient), plus their
 * constant when it is the same. */
texi_form *texi_form_common(texi_simp *s, const texi_form *a, const texi_form *b);

/* Interval of the exact (unwrapped) value of f, from its atoms' intervals,
 * refined with symbolic bounds when some range is symbolic. */
texi_ival texi_form_range(texi_simp *s, const texi_form *f);
/* True when reasoning in the integers is valid for f (overflow policy above). */
bool texi_form_exact(texi_simp *s, const texi_form *f);

/* Symbolic lower (upper) bound of e over the ranged variables; NULL when
 * there is none or on failure (s->failed). */
tex_expr *texi_arith_bound(texi_simp *s, tex_expr *e, bool upper);

/* The simplifier's recursion (simplify.c). */
tex_expr *texi_simp_expr(texi_simp *s, tex_expr *e);

#endif
