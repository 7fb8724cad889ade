/*
 * Pass simplify: texi_simplify on every expression of the body, under the
 * ranges of the enclosing loops (and of let variables whose value has a
 * constant interval), plus the statement-level consequences:
 *   - IF whose condition is provably true / false -> its then / else branch
 *     (nothing when there is no else);
 *   - FOR of extent provably <= 0 -> nothing (an empty SEQ);
 *   - FOR of extent 1 -> its body with the variable replaced by the loop's
 *     min, except thread-bound loops (a kernel's launch shape needs them).
 * Empty statements are left as empty SEQs for remove_noops.
 *
 * Buffer shapes of ALLOCATE are not rewritten (a buffer is shared by every
 * LOAD / STORE naming it; flatten already simplified them). The pass never
 * reorders floating-point arithmetic (texi_simplify does not).
 */
#include "lower/lower.h"

typedef struct {
    tex_ctx *ctx;
    texi_range *env; /* enclosing loop (and let) variables, outermost first */
    int n_env, cap_env;
    bool failed;
} simp;

static tex_expr *sx(simp *s, tex_expr *e)
{
    if (!e || s->failed)
        return e;
    tex_expr *r = texi_simplify(e, s->n_env, s->env);
    if (!r)
        s->failed = true;
    return r;
}

static int push_range(simp *s, tex_expr *var, tex_expr *min, tex_expr *extent)
{
    texi_range *env = texi_grow(s->ctx, s->env, s->n_env, &s->cap_env, sizeof *env, "simplify");
    if (!env)
        return TEX_ENOMEM;
    s->env = env;
    s->env[s->n_env++] = (texi_range){var, min, extent};
    return 0;
}

static tex_stmt *empty(simp *s)
{
    tex_stmt *e = texi_seq_new(s->ctx, 0, NULL);
    if (!e)
        s->failed = true;
    return e;
}

/* st with every expression simplified; NULL on failure (s->failed). */
static tex_stmt *simp_stmt(simp *s, tex_stmt *st);

/* body under `var in [min, min + extent)`. */
static tex_stmt *simp_scoped(simp *s, tex_expr *var, tex_expr *min, tex_expr *extent,
                             tex_stmt *body)
{
    int n0 = s->n_env;
    if (push_range(s, var, min, extent) < 0) {
        s->failed = true;
        return NULL;
    }
    tex_stmt *r = simp_stmt(s, body);
    s->n_env = n0;
    return r;
}

static tex_stmt *simp_for(simp *s, tex_stmt *st)
{
    tex_expr *min = sx(s, st->u.loop.min), *ext = sx(s, st->u.loop.extent);
    int64_t n;
    if (!min || !ext)
        return NULL;
    if (texi_expr_is_int_const(ext, &n) && n <= 0)
        return empty(s);
    if (texi_expr_is_int_const(ext, &n) && n == 1 && st->u.loop.for_kind != TEXI_FOR_THREAD) {
        tex_expr *value = texi_convert(min, st->u.loop.var->dtype);
        tex_stmt *body =
            value ? texi_stmt_substitute(s->ctx, st->u.loop.body, st->u.loop.var, value) : NULL;
        if (!body) {
            s->failed = true;
            return NULL;
        }
        return simp_stmt(s, body);
    }
    tex_stmt *body = simp_scoped(s, st->u.loop.var, min, ext, st->u.loop.body);
    return body ? texi_for_new(s->ctx, st->u.loop.var, min, ext, st->u.loop.for_kind,
                               st->u.loop.thread_tag, body)
                : NULL;
}

static tex_stmt *simp_if(simp *s, tex_stmt *st)
{
    tex_expr *cond = sx(s, st->u.ifs.cond);
    int64_t v;
    if (!cond)
        return NULL;
    if (texi_expr_is_int_const(cond, &v)) {
        tex_stmt *taken = v ? st->u.ifs.then_s : st->u.ifs.else_s;
        return taken ? simp_stmt(s, taken) : empty(s);
    }
    tex_stmt *t = simp_stmt(s, st->u.ifs.then_s);
    tex_stmt *f = st->u.ifs.else_s ? simp_stmt(s, st->u.ifs.else_s) : NULL;
    if (!t || (st->u.ifs.else_s && !f))
        return NULL;
    return texi_if_new(s->ctx, cond, t, f);
}

/* A let variable gets the constant interval of its value as its range. */
static tex_stmt *simp_let(simp *s, tex_stmt *st)
{
    tex_expr *value = sx(s, st->u.let.value);
    if (!value)
        return NULL;
    tex_stmt *body;
    texi_interval iv = {0, 0, true, true};
    if (texi_dtype_is_int(value->dtype))
        iv = texi_const_interval(value, s->n_env, s->env);
    if (!iv.lo_inf && !iv.hi_inf && iv.hi >= iv.lo) {
        tex_dtype t = st->u.let.var->dtype;
        body = simp_scoped(s, st->u.let.var, texi_int_imm(s->ctx, t, iv.lo),
                           texi_int_imm(s->ctx, t, iv.hi - iv.lo + 1), st->u.let.body);
    } else {
        body = simp_stmt(s, st->u.let.body);
    }
    return body ? texi_let_new(s->ctx, st->u.let.var, value, body) : NULL;
}

/* Expression callback: each expression of a statement simplified whole. */
static tex_expr *simp_expr(tex_expr *e, void *ud)
{
    return sx(ud, e);
}

/* Statement callback: loops, conditions and lets get their own handling;
 * tensor intrinsics are left as they are; every other statement is rebuilt
 * around its simplified expressions and statements. */
static tex_stmt *simp_pre(tex_stmt *st, void *ud)
{
    simp *s = ud;
    tex_stmt *r;
    if (s->failed || st->kind == TEXI_STMT_INTRIN)
        return st;
    if (st->kind == TEXI_STMT_FOR)
        r = simp_for(s, st);
    else if (st->kind == TEXI_STMT_IF)
        r = simp_if(s, st);
    else if (st->kind == TEXI_STMT_LET)
        r = simp_let(s, st);
    else
        return NULL;
    if (!r)
        s->failed = true;
    return r ? r : st;
}

static tex_stmt *simp_stmt(simp *s, tex_stmt *st)
{
    tex_stmt *r = s->failed ? NULL : texi_stmt_mutate(s->ctx, st, simp_pre, simp_expr, s);
    if (!r)
        s->failed = true;
    return s->failed ? NULL : r;
}

int texi_pass_simplify(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    simp s = {lw->ctx, NULL, 0, 0, false};
    tex_stmt *r = simp_stmt(&s, in);
    return texi_pass_result(lw, s.failed ? NULL : r, out);
}
