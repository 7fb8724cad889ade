/*
 * The lowering verifier: checks after ScheduleOps and after every pass that
 * the AST is a well-formed body of the function being lowered (QBE's
 * ssacheck between passes). It owns no state beyond one walk.
 *
 * What it checks:
 *   - scoping: every VAR is a parameter, a size variable, or the variable of
 *     an enclosing FOR / LET; no FOR / LET rebinds a variable already bound
 *     on its path (sibling scopes may reuse one, as unrolled copies do);
 *   - storage: every tensor read (ACCESS) or written (PROVIDE) is a tensor
 *     parameter or REALIZEd around the access; every buffer read (LOAD) or
 *     written (STORE) is a parameter's buffer or ALLOCATEd around it;
 *   - types: loop bounds, indices, shapes integer; IF and SELECT conditions
 *     bool; operands of a binary node of one dtype (bool for && ||), the
 *     node's dtype theirs (bool for comparisons); a stored value of the
 *     buffer's (tensor's) dtype; no REDUCE left in a body;
 *   - runtime checks: after entry_checks (every pass but schedule_ops), an
 *     ATTR "assert" only at the top of the body, inside other asserts.
 * Without a function (lw->func NULL, as in pass unit tests) free variables,
 * tensors and buffers not bound in the AST are accepted.
 *
 * Failures are bugs of tex, reported as TEX_EINTERNAL naming the pass.
 * The walk keeps its stacks in malloc'ed memory so that verifying does not
 * grow the context's arena.
 */
#include "lower/verify.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    texi_lower *lw;
    const char *after;
    bool strict;       /* a function is known: free names are errors */
    bool checks_first; /* runtime checks must be at the top (strict, after entry_checks) */
    bool at_top;       /* the statement being checked is enclosed only by checks */
    const void **defs; /* bound variables, tensors and buffers (distinct pointer types) */
    int n_defs, cap_defs;
    int rc;
} verifier;

static int fail(verifier *v, const char *what, const char *name)
{
    if (v->rc == 0)
        v->rc = texi_error(v->lw->ctx, TEX_EINTERNAL, "tex_lower: verifier after %s: %s '%s'",
                           v->after, what, name ? name : "?");
    return v->rc;
}

static bool defined(const verifier *v, const void *p)
{
    for (int i = v->n_defs - 1; i >= 0; i--)
        if (v->defs[i] == p)
            return true;
    return false;
}

static int push(verifier *v, const void *p)
{
    if (v->n_defs == v->cap_defs) {
        int cap = v->cap_defs ? 2 * v->cap_defs : 64;
        const void **d = realloc(v->defs, sizeof *d * (size_t)cap);
        if (!d)
            return v->rc = texi_error(v->lw->ctx, TEX_ENOMEM, "tex_lower: verifier: out of memory");
        v->defs = d;
        v->cap_defs = cap;
    }
    v->defs[v->n_defs++] = p;
    return 0;
}

static bool is_intlike(tex_dtype t)
{
    return texi_dtype_is_int(t);
}

static int check_expr(verifier *v, const tex_expr *e);

static int check_index(verifier *v, const tex_expr *e, const char *what, const char *name)
{
    if (!e)
        return fail(v, "missing index of", name);
    TEXI_TRY(check_expr(v, e));
    return is_intlike(e->dtype) ? 0 : fail(v, what, name);
}

static int check_binary(verifier *v, const tex_expr *e)
{
    const tex_expr *a = e->u.bin.a, *b = e->u.bin.b;
    const char *op = texi_expr_kind_names[e->kind];
    if (!a || !b)
        return fail(v, "missing operand of", op);
    TEXI_TRY(check_expr(v, a));
    TEXI_TRY(check_expr(v, b));
    if (a->dtype != b->dtype) {
        char *text = tex_expr_str(e);
        fail(v, "operands of different dtypes in", text ? text : op);
        free(text);
        return v->rc;
    }
    if (texi_expr_is_compare(e))
        return e->dtype == TEX_BOOL ? 0 : fail(v, "comparison not of dtype bool:", op);
    if (e->kind == TEXI_EXPR_AND || e->kind == TEXI_EXPR_OR)
        return a->dtype == TEX_BOOL && e->dtype == TEX_BOOL ? 0 : fail(v, "non-bool logic", op);
    if (e->dtype != a->dtype)
        return fail(v, "result dtype differs from its operands' in", op);
    if (e->kind == TEXI_EXPR_DIV && !texi_dtype_is_float(e->dtype))
        return fail(v, "true division of integers in", op); /* ints divide with FLOORDIV */
    return 0;
}

static int check_var(verifier *v, const tex_expr *e)
{
    if (defined(v, e))
        return 0;
    if (e->u.var.iter)
        return fail(v, "axis variable left in the body:", e->u.var.name);
    return v->strict ? fail(v, "variable used outside its definition:", e->u.var.name) : 0;
}

static int check_access(verifier *v, const tex_expr *e)
{
    const tex_tensor *t = e->u.access.tensor;
    if (v->strict && !defined(v, t))
        return fail(v, "read of a tensor that is neither a parameter nor realized:", t->name);
    if (e->u.access.n_idx != t->ndim)
        return fail(v, "wrong number of indices reading tensor", t->name);
    if (e->dtype != t->dtype)
        return fail(v, "read of a wrong dtype from tensor", t->name);
    for (int i = 0; i < e->u.access.n_idx; i++)
        TEXI_TRY(check_index(v, e->u.access.idx[i], "non-integer index reading", t->name));
    return 0;
}

/* A search: a 1-D integer array that is a parameter (or allocated), integer
 * operands of the node's dtype, a known op. */
static int check_search(verifier *v, const tex_expr *e)
{
    const tex_tensor *t = e->u.search.tensor;
    const texi_buffer *b = e->u.search.buf;
    const char *name = t ? t->name : b ? b->name : "?";
    if ((!t) == (!b) || e->u.search.op >= TEXI_SEARCH_COUNT)
        return fail(v, "a search needs one array and a known op:", name);
    if (v->strict && !(t ? defined(v, t) : defined(v, b)))
        return fail(v, "search of an array that is neither a parameter nor allocated:", name);
    if ((t ? t->ndim : b->ndim) != 1 || !texi_dtype_is_int(t ? t->dtype : b->dtype))
        return fail(v, "search of an array that is not 1-D of integers:", name);
    tex_expr *ops[] = {e->u.search.lo, e->u.search.hi, e->u.search.value};
    for (int i = 0; i < 3; i++) {
        TEXI_TRY(check_index(v, ops[i], "non-integer operand searching", name));
        if (ops[i]->dtype != e->dtype)
            return fail(v, "operand of another dtype searching", name);
    }
    return 0;
}

/* Whether e's operands have the lanes e needs: its own for composite
 * nodes and loads, one (scalars) under RAMP and BROADCAST, a vector under
 * the scalar VREDUCE. */
static bool lanes_agree(const tex_expr *e)
{
    if (e->lanes < 1)
        return false;
    switch (e->kind) {
    TEXI_CASE_BINARY:
        return e->u.bin.a->lanes == e->lanes && e->u.bin.b->lanes == e->lanes;
    case TEXI_EXPR_NOT:
    case TEXI_EXPR_CAST:
        return e->u.un.a->lanes == e->lanes;
    case TEXI_EXPR_SELECT:
        return e->u.sel.cond->lanes == e->lanes && e->u.sel.t->lanes == e->lanes &&
               e->u.sel.f->lanes == e->lanes;
    case TEXI_EXPR_CALL:
        for (int i = 0; i < e->u.call.n_args; i++)
            if (e->u.call.args[i]->lanes != e->lanes)
                return false;
        return true;
    case TEXI_EXPR_LOAD:
        return e->u.load.index->lanes == e->lanes; /* the mask: check_mask() */
    case TEXI_EXPR_SEARCH:
        return e->u.search.lo->lanes == e->lanes && e->u.search.hi->lanes == e->lanes &&
               e->u.search.value->lanes == e->lanes;
    case TEXI_EXPR_RAMP:
        return e->lanes > 1 && e->u.ramp.base->lanes == 1 && e->u.ramp.stride->lanes == 1;
    case TEXI_EXPR_BROADCAST:
        return e->lanes > 1 && e->u.un.a->lanes == 1;
    case TEXI_EXPR_VREDUCE:
        return e->lanes == 1 && e->u.vred.a->lanes > 1;
    case TEXI_EXPR_VAR: /* a vector when a LET binds a vector */
        return true;
    default:
        return e->lanes == 1;
    }
}

/* The mask of a predicated access of buffer b at index (NULL: none): a
 * bool vector of the index's lanes. */
static int check_mask(verifier *v, const tex_expr *mask, const tex_expr *index,
                      const texi_buffer *b)
{
    if (!mask)
        return 0;
    TEXI_TRY(check_expr(v, mask));
    if (mask->dtype != TEX_BOOL || index->lanes < 2 || mask->lanes != index->lanes)
        return fail(v, "mask that is not a bool vector of the index's lanes accessing", b->name);
    return 0;
}

static int check_expr(verifier *v, const tex_expr *e)
{
    if (!lanes_agree(e))
        return fail(v, "operands of other lane counts in", texi_expr_kind_names[e->kind]);
    switch (e->kind) {
    case TEXI_EXPR_INT:
    case TEXI_EXPR_FLOAT:
        return 0;
    case TEXI_EXPR_VAR:
        return check_var(v, e);
    TEXI_CASE_BINARY:
        return check_binary(v, e);
    case TEXI_EXPR_NOT:
        TEXI_TRY(check_expr(v, e->u.un.a));
        return e->u.un.a->dtype == TEX_BOOL ? 0 : fail(v, "non-bool operand of", "!");
    case TEXI_EXPR_CAST:
        return check_expr(v, e->u.un.a);
    case TEXI_EXPR_SELECT:
        TEXI_TRY(check_expr(v, e->u.sel.cond));
        TEXI_TRY(check_expr(v, e->u.sel.t));
        TEXI_TRY(check_expr(v, e->u.sel.f));
        if (e->u.sel.cond->dtype != TEX_BOOL)
            return fail(v, "non-bool condition of", "select");
        return e->u.sel.t->dtype == e->dtype && e->u.sel.f->dtype == e->dtype
                   ? 0
                   : fail(v, "branches of different dtypes in", "select");
    case TEXI_EXPR_CALL:
        if (e->u.call.n_args != texi_math_arity[e->u.call.op])
            return fail(v, "wrong number of arguments of", texi_math_names[e->u.call.op]);
        for (int i = 0; i < e->u.call.n_args; i++)
            TEXI_TRY(check_expr(v, e->u.call.args[i]));
        return 0;
    case TEXI_EXPR_ACCESS:
        return check_access(v, e);
    case TEXI_EXPR_LOAD:
        if (v->strict && !defined(v, e->u.load.buf))
            return fail(v, "load from a buffer that is neither a parameter nor allocated:",
                        e->u.load.buf->name);
        if (e->dtype != e->u.load.buf->dtype)
            return fail(v, "load of a wrong dtype from buffer", e->u.load.buf->name);
        TEXI_TRY(check_mask(v, e->u.load.mask, e->u.load.index, e->u.load.buf));
        return check_index(v, e->u.load.index, "non-integer index loading", e->u.load.buf->name);
    case TEXI_EXPR_SEARCH:
        return check_search(v, e);
    case TEXI_EXPR_RAMP:
        TEXI_TRY(check_index(v, e->u.ramp.base, "non-integer base of", "ramp"));
        return check_index(v, e->u.ramp.stride, "non-integer stride of", "ramp");
    case TEXI_EXPR_BROADCAST:
        return check_expr(v, e->u.un.a);
    case TEXI_EXPR_VREDUCE:
        TEXI_TRY(check_expr(v, e->u.vred.a));
        if (e->u.vred.op >= TEXI_REDUCE_COUNT)
            return fail(v, "unknown operator of", "vreduce");
        if (e->u.vred.a->dtype != e->dtype || texi_dtype_lane(e->dtype) != e->dtype)
            return fail(v, "operand of another dtype, or of f16/bf16/bool lanes, in", "vreduce");
        return 0;
    case TEXI_EXPR_REDUCE:
        return fail(v, "reduction left in the body:", "reduce");
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    return fail(v, "expression of unknown kind", "?");
}

static int check_stmt(verifier *v, const tex_stmt *s);

/* Binds p (a variable, tensor or buffer) around body. */
static int scoped(verifier *v, const void *p, const tex_stmt *body)
{
    int n0 = v->n_defs;
    TEXI_TRY(push(v, p));
    int rc = check_stmt(v, body);
    v->n_defs = n0;
    return rc;
}

static int bind_var(verifier *v, const tex_expr *var, const tex_stmt *body, const char *what)
{
    if (!var || var->kind != TEXI_EXPR_VAR)
        return fail(v, what, "not a variable");
    if (defined(v, var))
        return fail(v, "variable bound twice on one path:", var->u.var.name);
    return scoped(v, var, body);
}

static int check_for(verifier *v, const tex_stmt *s)
{
    const char *name = s->u.loop.var ? s->u.loop.var->u.var.name : "?";
    TEXI_TRY(check_index(v, s->u.loop.min, "non-integer min of loop", name));
    TEXI_TRY(check_index(v, s->u.loop.extent, "non-integer extent of loop", name));
    if (!is_intlike(s->u.loop.var->dtype))
        return fail(v, "non-integer loop variable", name);
    return bind_var(v, s->u.loop.var, s->u.loop.body, "loop variable");
}

static int check_provide(verifier *v, const tex_stmt *s)
{
    const tex_tensor *t = s->u.provide.tensor;
    if (v->strict && !defined(v, t))
        return fail(v, "write of a tensor that is neither a parameter nor realized:", t->name);
    if (s->u.provide.n_idx != t->ndim)
        return fail(v, "wrong number of indices writing tensor", t->name);
    for (int i = 0; i < s->u.provide.n_idx; i++)
        TEXI_TRY(check_index(v, s->u.provide.idx[i], "non-integer index writing", t->name));
    TEXI_TRY(check_expr(v, s->u.provide.value));
    return s->u.provide.value->dtype == t->dtype ? 0
                                                 : fail(v, "value of a wrong dtype for", t->name);
}

static int check_realize(verifier *v, const tex_stmt *s)
{
    const tex_tensor *t = s->u.realize.tensor;
    for (int d = 0; d < s->u.realize.ndim; d++) {
        TEXI_TRY(check_index(v, s->u.realize.mins[d], "non-integer region of", t->name));
        TEXI_TRY(check_index(v, s->u.realize.extents[d], "non-integer region of", t->name));
    }
    return scoped(v, t, s->u.realize.body);
}

static int check_store(verifier *v, const tex_stmt *s)
{
    const texi_buffer *b = s->u.store.buf;
    if (v->strict && !defined(v, b))
        return fail(v, "store to a buffer that is neither a parameter nor allocated:", b->name);
    TEXI_TRY(check_index(v, s->u.store.index, "non-integer index storing", b->name));
    TEXI_TRY(check_mask(v, s->u.store.mask, s->u.store.index, b));
    TEXI_TRY(check_expr(v, s->u.store.value));
    if (s->u.store.value->lanes != s->u.store.index->lanes)
        return fail(v, "value of other lanes than the index storing", b->name);
    return s->u.store.value->dtype == b->dtype ? 0 : fail(v, "value of a wrong dtype for", b->name);
}

static int check_allocate(verifier *v, const tex_stmt *s)
{
    const texi_buffer *b = s->u.alloc.buf;
    for (int d = 0; d < b->ndim; d++)
        TEXI_TRY(check_index(v, b->shape[d], "non-integer shape of buffer", b->name));
    /* the data variable too: an ATTR inside may name the storage by it */
    int n0 = v->n_defs;
    int rc = push(v, b->data);
    if (rc == 0)
        rc = scoped(v, b, s->u.alloc.body);
    v->n_defs = n0;
    return rc;
}

/* Each tile argument: a defined buffer (after flattening) and integer
 * offsets, strides and tile origins. */
static int check_intrin(verifier *v, const tex_stmt *s)
{
    const char *name = s->u.intrin.intrin->name;
    for (int i = 0; i < s->u.intrin.n_args; i++) {
        const texi_intrin_arg *a = &s->u.intrin.args[i];
        if (!a->tensor == !a->buf)
            return fail(v, "tile argument with neither or both of a tensor and a buffer in", name);
        if (a->buf && v->strict && !defined(v, a->buf))
            return fail(v, "intrinsic tile of an undefined buffer:", a->buf->name);
        if (a->buf && (!a->offset || !a->strides))
            return fail(v, "flat tile without offset or strides in", name);
        if (a->offset)
            TEXI_TRY(check_index(v, a->offset, "non-integer tile offset in", name));
        for (int d = 0; a->strides && d < a->ndim; d++)
            TEXI_TRY(check_index(v, a->strides[d], "non-integer tile stride in", name));
        for (int d = 0; a->mins && d < a->tensor_ndim; d++)
            TEXI_TRY(check_index(v, a->mins[d], "non-integer tile origin in", name));
    }
    return 0;
}

static int check_stmt_kind(verifier *v, const tex_stmt *s);

static int check_stmt(verifier *v, const tex_stmt *s)
{
    if (!s)
        return fail(v, "missing statement in", "a body");
    bool top = v->at_top;
    bool check = texi_attr_is(s, TEXI_ATTR_ASSERT);
    if (check && v->checks_first && !top)
        return fail(v, "a runtime check below the top of", v->lw->func->name);
    v->at_top = top && check;
    int rc = check_stmt_kind(v, s);
    v->at_top = top;
    return rc;
}

static int check_stmt_kind(verifier *v, const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_FOR:
        return check_for(v, s);
    case TEXI_STMT_PROVIDE:
        return check_provide(v, s);
    case TEXI_STMT_REALIZE:
        return check_realize(v, s);
    case TEXI_STMT_STORE:
        return check_store(v, s);
    case TEXI_STMT_ALLOCATE:
        return check_allocate(v, s);
    case TEXI_STMT_IF:
        TEXI_TRY(check_expr(v, s->u.ifs.cond));
        if (s->u.ifs.cond->dtype != TEX_BOOL || s->u.ifs.cond->lanes != 1)
            return fail(v, "non-bool condition of", "if");
        TEXI_TRY(check_stmt(v, s->u.ifs.then_s));
        return s->u.ifs.else_s ? check_stmt(v, s->u.ifs.else_s) : 0;
    case TEXI_STMT_LET:
        TEXI_TRY(check_expr(v, s->u.let.value));
        if (s->u.let.var->dtype != s->u.let.value->dtype ||
            s->u.let.var->lanes != s->u.let.value->lanes)
            return fail(v, "value of a wrong dtype bound to", s->u.let.var->u.var.name);
        return bind_var(v, s->u.let.var, s->u.let.body, "let variable");
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            TEXI_TRY(check_stmt(v, s->u.seq.items[i]));
        return 0;
    case TEXI_STMT_EVALUATE:
        return check_expr(v, s->u.eval.value);
    case TEXI_STMT_BARRIER:
        return 0;
    case TEXI_STMT_ATTR:
        if (s->u.attr.value)
            TEXI_TRY(check_expr(v, s->u.attr.value));
        return check_stmt(v, s->u.attr.body);
    case TEXI_STMT_INTRIN:
        return check_intrin(v, s);
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    return fail(v, "statement of unknown kind", "?");
}

/* Parameters, their buffers and the size variables are bound everywhere. */
static int bind_params(verifier *v, const tex_func *f)
{
    for (int i = 0; i < f->n_params; i++) {
        const texi_param *p = &f->params[i];
        if (p->kind == TEX_ARG_VAR) {
            TEXI_TRY(push(v, p->var));
        } else {
            TEXI_TRY(push(v, p->tensor));
            TEXI_TRY(push(v, p->buf));
        }
    }
    for (int i = 0; i < f->n_size_vars; i++)
        TEXI_TRY(push(v, f->size_vars[i]));
    return 0;
}

int texi_verify(texi_lower *lw, tex_stmt *s, const char *after)
{
    verifier v = {.lw = lw, .after = after ? after : "?", .strict = lw->func != NULL};
    v.checks_first = v.strict && strcmp(v.after, "schedule_ops") != 0;
    v.at_top = true;
    int rc = lw->func ? bind_params(&v, lw->func) : 0;
    if (rc == 0)
        rc = check_stmt(&v, s);
    free(v.defs);
    return rc;
}
