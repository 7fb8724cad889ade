/*
 * Integer arithmetic under the enclosing loops, for the passes that split
 * or unswitch loops on conditions (loop_partition, select_partition,
 * loop_unswitch): expressions built in their operands' common type,
 * simplified and proved under the ranges of the loops around the statement
 * being rewritten, and one failure flag that every builder sets when it
 * gets or makes NULL (out of memory, recorded in ctx), so that a pass
 * checks it once.
 */
#ifndef TEX_LOWER_SCOPE_MATH_H
#define TEX_LOWER_SCOPE_MATH_H

#include "lower/lower.h"

typedef struct {
    tex_ctx *ctx;
    const char *pass; /* named in allocation errors */
    texi_range *env;  /* the enclosing loops, outermost first */
    int n_env, cap_env;
    bool failed;
} texi_scope;

/* texi_grow, setting failed on NULL. */
void *texi_scope_grow(texi_scope *s, void *arr, int n, int *cap, size_t size);

/* e, setting failed when it is NULL. */
tex_expr *texi_scope_note(texi_scope *s, tex_expr *e);

/* a kind b in their promoted type (NULL operands: NULL, failed). */
tex_expr *texi_scope_arith(texi_scope *s, enum texi_expr_kind kind, tex_expr *a, tex_expr *b);

/* The integer constant v of type t. */
tex_expr *texi_scope_imm(texi_scope *s, tex_dtype t, int64_t v);

/* e simplified under env (NULL e: NULL, failed). */
tex_expr *texi_scope_simp(texi_scope *s, tex_expr *e);

/* e with var replaced by value (converted to var's type). */
tex_expr *texi_scope_subst(texi_scope *s, tex_expr *e, tex_expr *var, tex_expr *value);

/* d = coef*var + *rest with an integer constant coef (found by finite
 * differences, d(var + 1) - d(var), and checked); false when d is not
 * linear in var (or on failure). */
bool texi_scope_linear(texi_scope *s, tex_expr *d, tex_expr *var, int64_t *coef, tex_expr **rest);

/* Whether a cmp b provably holds under env. */
bool texi_scope_prove(texi_scope *s, enum texi_expr_kind cmp, tex_expr *a, tex_expr *b);

/* var in [min, min + extent) pushed onto env; 0 or TEX_ENOMEM (failed). */
int texi_scope_push(texi_scope *s, tex_expr *var, tex_expr *min, tex_expr *extent);

/* Whether e mentions a variable of env. */
bool texi_scope_mentions(const texi_scope *s, const tex_expr *e);

/* A scalar integer comparison c as d < 0 (a < b: a - b; a <= b: a - b - 1;
 * a > b: b - a; a >= b: b - a - 1), or NULL when c is none (or failed). */
tex_expr *texi_scope_negative(texi_scope *s, tex_expr *c);

/* The loops and lets between a loop a pass scans and the statement the scan
 * is at, outermost first. */
typedef struct {
    texi_range *loops;
    int n_loops, cap_loops;
    tex_expr **lets;
    int n_lets, cap_lets;
} texi_inner;

/* s, a FOR (its range) or a LET (its variable), pushed onto in; false on
 * failure (s->failed). */
bool texi_inner_enter(texi_scope *sc, texi_inner *in, const tex_stmt *s);

/* Pops what texi_inner_enter(.., s) pushed. */
void texi_inner_leave(texi_inner *in, const tex_stmt *s);

/* Whether e mentions a loop or let variable of in. */
bool texi_inner_mentions(const texi_inner *in, const tex_expr *e);

/* fn(c, ud) on each conjunct of cond (the leaves of its && tree). */
void texi_conjuncts(tex_expr *cond, void (*fn)(tex_expr *c, void *ud), void *ud);

#endif
