/* Integer arithmetic under the enclosing loops (scope_math.h). */
#include "lower/scope_math.h"

void *texi_scope_grow(texi_scope *s, void *arr, int n, int *cap, size_t size)
{
    void *a = texi_grow(s->ctx, arr, n, cap, size, s->pass);
    if (!a)
        s->failed = true;
    return a;
}

tex_expr *texi_scope_note(texi_scope *s, tex_expr *e)
{
    if (!e)
        s->failed = true;
    return e;
}

tex_expr *texi_scope_arith(texi_scope *s, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    if (!a || !b)
        return texi_scope_note(s, NULL);
    tex_dtype t = texi_dtype_promote(a->dtype, b->dtype);
    a = texi_convert(a, t);
    b = texi_convert(b, t);
    return texi_scope_note(s, a && b ? texi_binary(kind, a, b) : NULL);
}

tex_expr *texi_scope_imm(texi_scope *s, tex_dtype t, int64_t v)
{
    return texi_scope_note(s, texi_int_imm(s->ctx, t, v));
}

tex_expr *texi_scope_simp(texi_scope *s, tex_expr *e)
{
    return texi_scope_note(s, e ? texi_simplify(e, s->n_env, s->env) : NULL);
}

tex_expr *texi_scope_subst(texi_scope *s, tex_expr *e, tex_expr *var, tex_expr *value)
{
    value = e && value ? texi_convert(value, var->dtype) : NULL;
    return texi_scope_note(s, value ? texi_substitute(e, 1, &var, &value) : NULL);
}

bool texi_scope_linear(texi_scope *s, tex_expr *d, tex_expr *var, int64_t *coef, tex_expr **rest)
{
    if (!texi_expr_uses_var(d, var)) {
        *coef = 0;
        *rest = d;
        return true;
    }
    tex_expr *next = texi_scope_subst(
        s, d, var, texi_scope_arith(s, TEXI_EXPR_ADD, var, texi_scope_imm(s, var->dtype, 1)));
    tex_expr *diff =
        texi_scope_note(s, texi_simplify(texi_scope_arith(s, TEXI_EXPR_SUB, next, d), 0, NULL));
    if (!diff || !texi_expr_is_int_const(diff, coef))
        return false;
    *rest = texi_scope_note(
        s, texi_simplify(texi_scope_subst(s, d, var, texi_scope_imm(s, var->dtype, 0)), 0, NULL));
    tex_expr *back = texi_scope_arith(
        s, TEXI_EXPR_ADD,
        texi_scope_arith(s, TEXI_EXPR_MUL, texi_scope_imm(s, d->dtype, *coef), var), *rest);
    tex_expr *zero =
        texi_scope_note(s, texi_simplify(texi_scope_arith(s, TEXI_EXPR_SUB, d, back), 0, NULL));
    int64_t z;
    return *rest && zero && texi_expr_is_int_const(zero, &z) && z == 0 &&
           !texi_expr_uses_var(*rest, var);
}

bool texi_scope_prove(texi_scope *s, enum texi_expr_kind cmp, tex_expr *a, tex_expr *b)
{
    tex_expr *c = texi_scope_arith(s, cmp, a, b);
    return c && texi_prove(c, s->n_env, s->env);
}

int texi_scope_push(texi_scope *s, tex_expr *var, tex_expr *min, tex_expr *extent)
{
    texi_range *env = texi_scope_grow(s, s->env, s->n_env, &s->cap_env, sizeof *env);
    if (!env)
        return TEX_ENOMEM;
    s->env = env;
    s->env[s->n_env++] = (texi_range){var, min, extent};
    return 0;
}

bool texi_scope_mentions(const texi_scope *s, const tex_expr *e)
{
    for (int i = 0; i < s->n_env; i++)
        if (texi_expr_uses_var(e, s->env[i].var))
            return true;
    return false;
}

tex_expr *texi_scope_negative(texi_scope *s, tex_expr *c)
{
    if (!texi_expr_is_compare(c) || !texi_dtype_is_int(c->u.bin.a->dtype) || c->lanes != 1)
        return NULL;
    tex_expr *a = c->u.bin.a, *b = c->u.bin.b, *one = texi_scope_imm(s, a->dtype, 1);
    switch (c->kind) {
    case TEXI_EXPR_LT:
        return texi_scope_arith(s, TEXI_EXPR_SUB, a, b);
    case TEXI_EXPR_LE:
        return texi_scope_arith(s, TEXI_EXPR_SUB, texi_scope_arith(s, TEXI_EXPR_SUB, a, b), one);
    case TEXI_EXPR_GT:
        return texi_scope_arith(s, TEXI_EXPR_SUB, b, a);
    case TEXI_EXPR_GE:
        return texi_scope_arith(s, TEXI_EXPR_SUB, texi_scope_arith(s, TEXI_EXPR_SUB, b, a), one);
    default:
        return NULL;
    }
}

bool texi_inner_enter(texi_scope *sc, texi_inner *in, const tex_stmt *s)
{
    if (s->kind == TEXI_STMT_FOR) {
        texi_range *loops =
            texi_scope_grow(sc, in->loops, in->n_loops, &in->cap_loops, sizeof *loops);
        if (loops)
            (in->loops = loops)[in->n_loops++] =
                (texi_range){s->u.loop.var, s->u.loop.min, s->u.loop.extent};
        return loops != NULL;
    }
    tex_expr **lets = texi_scope_grow(sc, in->lets, in->n_lets, &in->cap_lets, sizeof *lets);
    if (lets)
        (in->lets = lets)[in->n_lets++] = s->u.let.var;
    return lets != NULL;
}

void texi_inner_leave(texi_inner *in, const tex_stmt *s)
{
    if (s->kind == TEXI_STMT_FOR)
        in->n_loops--;
    else
        in->n_lets--;
}

bool texi_inner_mentions(const texi_inner *in, const tex_expr *e)
{
    for (int i = 0; i < in->n_loops; i++)
        if (texi_expr_uses_var(e, in->loops[i].var))
            return true;
    for (int i = 0; i < in->n_lets; i++)
        if (texi_expr_uses_var(e, in->lets[i]))
            return true;
    return false;
}

void texi_conjuncts(tex_expr *cond, void (*fn)(tex_expr *c, void *ud), void *ud)
{
    if (cond->kind == TEXI_EXPR_AND) {
        texi_conjuncts(cond->u.bin.a, fn, ud);
        texi_conjuncts(cond->u.bin.b, fn, ud);
    } else {
        fn(cond, ud);
    }
}
