/*
 * Atomic reduction updates (tex_atomic): the one reading of ATTR "atomic"
 * that both emitters share. schedule_ops.c writes
 *     attr atomic = OP { T[idx] = op(T[idx], v) }
 * (OP an enum texi_reduce_op as an i32 INT); after flatten the body is a
 * STORE whose value combines a LOAD of the stored element with the
 * contribution v, in either operand order. When the simplifier has
 * reassociated an integer sum (T[i] + (a + b) printed as a + T[i] + b), the
 * contribution is recovered as value - T[i], simplified, provided it no
 * longer reads the buffer. Anything else is an internal error: no pass
 * builds another form.
 */
#include "lower/lower.h"

static const enum texi_expr_kind combiner[TEXI_REDUCE_COUNT] = {TEXI_EXPR_ADD, TEXI_EXPR_MUL,
                                                                TEXI_EXPR_MAX, TEXI_EXPR_MIN};

/* Whether e is a LOAD of the element st stores. */
static bool is_target(const tex_expr *e, const tex_stmt *st)
{
    return e->kind == TEXI_EXPR_LOAD &&
           texi_buffer_key(e->u.load.buf) == texi_buffer_key(st->u.store.buf) &&
           texi_expr_equal(e->u.load.index, st->u.store.index);
}

typedef struct {
    const void *key;
    bool found;
} buffer_probe;

static bool probe_buffer(tex_expr *e, void *ud)
{
    buffer_probe *p = ud;
    p->found |= e->kind == TEXI_EXPR_LOAD && texi_buffer_key(e->u.load.buf) == p->key;
    return !p->found;
}

/* value - T[i] for a reassociated integer sum, or NULL. */
static tex_expr *sum_contribution(const tex_stmt *st)
{
    tex_expr *value = st->u.store.value;
    if (value->kind != TEXI_EXPR_ADD || !texi_dtype_is_int(value->dtype))
        return NULL;
    tex_expr *target = texi_load_new(st->u.store.buf, st->u.store.index);
    tex_expr *d = target ? texi_simplify(texi_binary(TEXI_EXPR_SUB, value, target), 0, NULL) : NULL;
    buffer_probe p = {texi_buffer_key(st->u.store.buf), false};
    if (d)
        texi_expr_visit(d, probe_buffer, &p);
    return d && !p.found ? d : NULL;
}

int texi_atomic_parts(tex_ctx *ctx, const tex_stmt *s, texi_atomic_update *out)
{
    int64_t op;
    const tex_stmt *st = s->u.attr.body;
    if (s->u.attr.id != TEXI_ATTR_ATOMIC || !s->u.attr.value ||
        !texi_expr_is_int_const(s->u.attr.value, &op) || op < 0 || op >= TEXI_REDUCE_COUNT || !st ||
        st->kind != TEXI_STMT_STORE)
        return texi_error(ctx, TEX_EINTERNAL, "tex_build: malformed ATTR \"atomic\"");
    tex_expr *v = st->u.store.value, *delta = NULL;
    if (v->kind == combiner[op] && is_target(v->u.bin.a, st))
        delta = v->u.bin.b;
    else if (v->kind == combiner[op] && is_target(v->u.bin.b, st))
        delta = v->u.bin.a;
    else if (op == TEXI_REDUCE_SUM)
        delta = sum_contribution(st);
    if (!delta)
        return texi_error(ctx, TEX_EINTERNAL,
                          "tex_build: the atomic update of '%s' is not a combination of the "
                          "element it stores",
                          st->u.store.buf->name);
    *out = (texi_atomic_update){(enum texi_reduce_op)op, st, delta};
    return 0;
}
