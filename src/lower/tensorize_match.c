/*
 * Tensorize matching (TVM's tensorize, in C): decides whether the loop nest
 * of a stage under its tensorized leaf computes exactly what the intrinsic's
 * description compute (desc) computes, and if so where each tile lies.
 *
 * Input: the nest of the tensorized stage (texi_tz_nest: leaves, body) and
 * the intrinsic. Output: per desc tensor, the real tensor, the tile origin
 * over the outer loop variables and the dimension map (texi_intrin_arg).
 * Three steps, each described at the top of its section below: leaves to
 * desc axes (leaves), the two bodies walked in parallel (bodies), accesses
 * to tiles (tiles).
 * A mismatch is TEX_EINVAL naming the stage, the axis and the intrinsic,
 * saying what differs, and printing both definitions; so is a register
 * fragment tile (schedule/intrin_cuda_frag.c) given a tensor that is not a
 * local buffer. Nothing here builds
 * statements or decides about tails (schedule_ops.c does).
 */
#include "lower/tensorize_match.h"
#include "schedule/bound.h"
#include "schedule/intrin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define ARITH(k, a, b) texi_bounds_arith(TEXI_EXPR_##k, (a), (b))

typedef struct {
    tex_ctx *ctx;
    const texi_tz_nest *n;
    const texi_op *d; /* desc's op */
    int n_dv;
    tex_expr **dvar;  /* desc's axis variables (data, then reduce) */
    tex_expr **dval;  /* what each stands for: the mapped leaf's variable */
    tex_expr **dzero; /* zeros for them */
    int n_iv;
    tex_expr **ivar; /* the inner leaves' loop variables */
    tex_expr **izero;
    texi_intrin_arg *args;
    char why[1024]; /* what differs, when matching failed */
} matcher;

static void why(matcher *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void why(matcher *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->why, sizeof m->why, fmt, ap);
    va_end(ap);
}

/* e printed, as an arena string ("?" when out of memory). */
static const char *show(const matcher *m, const tex_expr *e)
{
    texi_sb sb;
    texi_sb_init(&sb);
    if (e)
        texi_expr_print(&sb, e);
    char *s = texi_sb_take(&sb);
    const char *out = s ? texi_strdup(m->ctx, s) : NULL;
    free(s);
    return out ? out : "?";
}

/* "T[i, j] = body" of a compute. */
static void put_def(texi_sb *sb, const tex_tensor *t, const texi_op *op)
{
    texi_sb_printf(sb, "%s[", t->name);
    for (int i = 0; i < op->n_axes; i++)
        texi_sb_printf(sb, "%s%s", i ? ", " : "", op->axes[i]->name);
    texi_sb_puts(sb, "] = ");
    texi_expr_print(sb, op->body);
}

static int fail(matcher *m)
{
    const texi_tz_nest *n = m->n;
    texi_sb sb;
    texi_sb_init(&sb);
    texi_sb_puts(&sb, "\n  stage:     ");
    put_def(&sb, n->st->tensor, n->st->op);
    texi_sb_puts(&sb, "\n  intrinsic: ");
    put_def(&sb, n->intrin->desc, m->d);
    char *both = texi_sb_take(&sb);
    int rc = texi_error(m->ctx, TEX_EINVAL,
                        "tex_lower: stage '%s', tensorize at axis '%s' with intrinsic '%s': %s%s",
                        n->st->tensor->name, n->leaf[0]->name, n->intrin->name, m->why,
                        both ? both : "");
    free(both);
    return rc;
}

static tex_expr **new_exprs(matcher *m, int n)
{
    return texi_alloc(m->ctx, sizeof(tex_expr *) * (size_t)(n + 1), "tensorize");
}

/* ------------------------------------------------------------- leaves */

/*
 *Step 1. Leaves to axes: the leaves from the tensorized one inward map, in
 *      order, onto desc's data axes (data leaves) and reduce axes (reduce
 *      leaves); counts and constant extents must be equal. Each desc axis
 *      variable then stands for its leaf's loop variable (or 0 for a leaf
 *      without a loop).
 */

/* Step 1: desc axis variables to inner leaf variables. */
static int map_leaves(matcher *m)
{
    const texi_tz_nest *n = m->n;
    const texi_op *d = m->d;
    m->n_dv = d->n_axes + d->n_raxes;
    m->dvar = new_exprs(m, m->n_dv);
    m->dval = new_exprs(m, m->n_dv);
    m->dzero = new_exprs(m, m->n_dv);
    if (!m->dvar || !m->dval || !m->dzero)
        return TEX_ENOMEM;
    int nd = 0, nr = 0;
    for (int k = 0; k < n->n_inner; k++) {
        bool red = n->leaf[k]->kind == TEXI_ITER_REDUCE;
        int have = red ? d->n_raxes : d->n_axes, *cnt = red ? &nr : &nd;
        if (*cnt >= have) {
            why(m, "the nest has more %s axes than the intrinsic's description (%d)",
                red ? "reduction" : "data", have);
            return fail(m);
        }
        tex_iter *dv = red ? d->raxes[*cnt] : d->axes[*cnt];
        int slot = red ? d->n_axes + *cnt : *cnt;
        (*cnt)++;
        int64_t le, de;
        if (!texi_expr_is_int_const(n->extent[k], &le) ||
            !texi_expr_is_int_const(dv->extent, &de) || le != de) {
            why(m, "axis '%s' has extent %s but the intrinsic's axis '%s' has extent %s",
                n->leaf[k]->name, show(m, n->extent[k]), dv->name, show(m, dv->extent));
            return fail(m);
        }
        m->dvar[slot] = dv->var;
        m->dval[slot] = texi_convert(n->var[k], dv->var->dtype);
        m->dzero[slot] = texi_int_imm(m->ctx, dv->var->dtype, 0);
        if (!m->dval[slot] || !m->dzero[slot])
            return TEX_ENOMEM;
    }
    if (nd != d->n_axes || nr != d->n_raxes) {
        why(m,
            "the nest under the axis has %d data and %d reduction axes, the intrinsic's "
            "description %d and %d",
            nd, nr, d->n_axes, d->n_raxes);
        return fail(m);
    }
    return 0;
}

/* Inner loop variables (for "depends on the tile" and the origin). */
static int collect_inner(matcher *m)
{
    const texi_tz_nest *n = m->n;
    m->ivar = new_exprs(m, n->n_inner);
    m->izero = new_exprs(m, n->n_inner);
    if (!m->ivar || !m->izero)
        return TEX_ENOMEM;
    for (int k = 0; k < n->n_inner; k++)
        if (n->var[k]->kind == TEXI_EXPR_VAR) {
            m->ivar[m->n_iv] = n->var[k];
            m->izero[m->n_iv] = texi_int_imm(m->ctx, n->var[k]->dtype, 0);
            if (!m->izero[m->n_iv++])
                return TEX_ENOMEM;
        }
    return 0;
}

typedef struct {
    const matcher *m;
    bool found;
} uses_probe;

static bool find_inner(tex_expr *e, void *ud)
{
    uses_probe *p = ud;
    for (int i = 0; e->kind == TEXI_EXPR_VAR && i < p->m->n_iv; i++)
        p->found |= e == p->m->ivar[i];
    return !p->found;
}

static bool uses_inner(const matcher *m, tex_expr *e)
{
    uses_probe p = {m, false};
    texi_expr_visit(e, find_inner, &p);
    return p.found;
}

/* ------------------------------------------------------------- tiles */

/*
 *Step 3. An access of desc tensor D (an input, or the output with index =
 *      desc's axes) met against an access of real tensor T with index e[]:
 *      D's dimension j runs along T's dimension dim_map[j]: the first free
 *      dimension d (d = j first when the ranks agree) with e[d] - D's index
 *      j free of inner variables, so a transposed operand (BT[j, k] for
 *      B[k, j]) is a tile with permuted strides; when that finds none, the
 *      identity if the ranks agree, else T's dimensions whose index depends
 *      on an inner variable, in order. The tile origin is mins[d] = e[d] at inner
 *      variables 0, minus D's index at desc axes 0 where mapped; then
 *      e[d] == mins[d] + (D's index j with desc variables replaced) must be
 *      provable, and an unmapped dimension must not depend on the inner
 *      variables. The first access of D fixes T, mins and dim_map; later
 *      accesses must agree with them.
 */

static bool provably_equal(const matcher *m, tex_expr *a, tex_expr *b)
{
    tex_expr *eq = ARITH(EQ, a, b);
    return eq && texi_prove(eq, m->n->n_env, m->n->env);
}

/* Whether desc index g (its axes standing for the inner leaves) runs along
 * index e: e - g simplifies to an expression free of the inner variables. */
static bool runs_along(const matcher *m, tex_expr *e, tex_expr *g)
{
    tex_expr *gs = texi_substitute(g, m->n_dv, m->dvar, m->dval);
    tex_expr *diff = gs ? ARITH(SUB, e, gs) : NULL;
    diff = diff ? texi_simplify(diff, m->n->n_env, m->n->env) : NULL;
    return diff && !uses_inner(m, diff);
}

/* dim_map: desc dimension j runs along the first free tensor dimension
 * (dimension j itself first when the ranks agree) whose index it explains
 * (runs_along). When some j finds none, the fallback of step 3 (tiles section)
 * (identity, or the dimensions indexed by inner variables in order) is
 * taken and match_tile reports the difference. */
static void map_dims(const matcher *m, texi_intrin_arg *arg, tex_expr *const e[],
                     tex_expr *const g[], bool *taken /* zeroed, one per tensor dimension */)
{
    int nd = arg->tensor_ndim, dn = arg->ndim;
    for (int j = 0; j < dn; j++) {
        int pick = -1;
        if (nd == dn && !taken[j] && runs_along(m, e[j], g[j]))
            pick = j;
        for (int d = 0; d < nd && pick < 0; d++)
            if (!taken[d] && runs_along(m, e[d], g[j]))
                pick = d;
        if (pick < 0)
            break;
        arg->dim_map[j] = pick;
        taken[pick] = true;
        if (j == dn - 1)
            return;
    }
    for (int j = 0; j < dn; j++)
        arg->dim_map[j] = -1;
    for (int d = 0, j = 0; d < nd && j < dn; d++)
        if (nd == dn || uses_inner(m, e[d]))
            arg->dim_map[j++] = d;
}

/* Fixes T, mins and dim_map of a desc tensor met for the first time. */
static int new_tile(matcher *m, texi_intrin_arg *arg, tex_tensor *t, tex_expr *const e[],
                    const tex_tensor *dt, tex_expr *const g[])
{
    int nd = t->ndim, dn = dt->ndim;
    arg->ndim = dn;
    arg->tensor = t;
    arg->tensor_ndim = nd;
    arg->mins = new_exprs(m, nd);
    arg->dim_map = texi_alloc(m->ctx, sizeof *arg->dim_map * (size_t)(dn + 1), "tensorize");
    bool *taken = texi_alloc(m->ctx, sizeof *taken * (size_t)(nd + 1), "tensorize");
    if (!arg->mins || !arg->dim_map || !taken)
        return TEX_ENOMEM;
    for (int j = 0; j < dn; j++)
        arg->dim_map[j] = -1;
    if (dn <= nd)
        map_dims(m, arg, e, g, taken);
    for (int j = 0; j < dn; j++)
        if (arg->dim_map[j] < 0) {
            why(m,
                "tensor '%s' is indexed by the tile's loops in fewer dimensions than the "
                "intrinsic's tensor '%s' (%d)",
                t->name, dt->name, dn);
            return fail(m);
        }
    for (int d = 0; d < nd; d++) {
        tex_expr *org = texi_substitute(e[d], m->n_iv, m->ivar, m->izero);
        for (int j = 0; j < dn; j++)
            if (arg->dim_map[j] == d)
                org = ARITH(SUB, org, texi_substitute(g[j], m->n_dv, m->dvar, m->dzero));
        if (!org || !(arg->mins[d] = texi_simplify(org, m->n->n_env, m->n->env)))
            return TEX_ENOMEM;
    }
    return 0;
}

/* The access T[e] against desc's D[g] (step 3). */
static int match_tile(matcher *m, texi_intrin_arg *arg, tex_tensor *t, tex_expr *const e[],
                      const tex_tensor *dt, tex_expr *const g[])
{
    if (!arg->tensor)
        TEXI_TRY(new_tile(m, arg, t, e, dt, g));
    if (arg->tensor != t) {
        why(m,
            "the intrinsic's tensor '%s' stands for tensor '%s' but tensor '%s' is read in "
            "its place",
            dt->name, arg->tensor->name, t->name);
        return fail(m);
    }
    for (int d = 0; d < t->ndim; d++) {
        tex_expr *want = arg->mins[d];
        for (int j = 0; j < dt->ndim; j++)
            if (arg->dim_map[j] == d)
                want = ARITH(ADD, want, texi_substitute(g[j], m->n_dv, m->dvar, m->dval));
        if (!want)
            return TEX_ENOMEM;
        if (!provably_equal(m, e[d], want)) {
            why(m,
                "tensor '%s' is read at index %s in dimension %d, which is not the "
                "intrinsic's tile of '%s' (expected %s)",
                t->name, show(m, e[d]), d, dt->name, show(m, want));
            return fail(m);
        }
    }
    return 0;
}

/* ------------------------------------------------------------- bodies */

/*
 *Step 2. The stage body (its roots bound to the leaf values, so indices are
 *      expressions over outer and inner loop variables) and desc's body are
 *      walked in parallel: same kinds, dtypes, constants, operators, math
 *      functions, reduction op and where-condition. Desc's axis variables
 *      may appear only inside accesses.
 */

static int cmp(matcher *m, tex_expr *a, tex_expr *b);

static int differ(matcher *m, tex_expr *a, tex_expr *b)
{
    why(m, "the stage computes `%s` where the intrinsic computes `%s`", show(m, a), show(m, b));
    return fail(m);
}

static int desc_input(const matcher *m, const tex_tensor *t)
{
    for (int i = 0; i < m->n->intrin->n_inputs; i++)
        if (m->n->intrin->inputs[i] == t)
            return i;
    return -1;
}

static int cmp_access(matcher *m, tex_expr *a, tex_expr *b)
{
    int i = desc_input(m, b->u.access.tensor);
    if (i < 0) {
        why(m, "the intrinsic's description reads tensor '%s', which is not among its inputs",
            b->u.access.tensor->name);
        return fail(m);
    }
    if (a->u.access.n_idx != a->u.access.tensor->ndim)
        return differ(m, a, b);
    return match_tile(m, &m->args[i], a->u.access.tensor, a->u.access.idx, b->u.access.tensor,
                      b->u.access.idx);
}

static int cmp_var(matcher *m, tex_expr *a, tex_expr *b)
{
    for (int i = 0; i < m->n_dv; i++)
        if (b == m->dvar[i]) {
            why(m,
                "the intrinsic's description uses the value of axis '%s' outside a tensor "
                "index, which tensorize cannot match",
                b->u.var.name);
            return fail(m);
        }
    return a == b ? 0 : differ(m, a, b);
}

static int cmp(matcher *m, tex_expr *a, tex_expr *b)
{
    if (a->kind != b->kind || a->dtype != b->dtype)
        return differ(m, a, b);
    switch (a->kind) {
    case TEXI_EXPR_INT:
        return a->u.i == b->u.i ? 0 : differ(m, a, b);
    case TEXI_EXPR_FLOAT:
        return a->u.f == b->u.f ? 0 : differ(m, a, b);
    case TEXI_EXPR_VAR:
        return cmp_var(m, a, b);
    TEXI_CASE_BINARY:
        TEXI_TRY(cmp(m, a->u.bin.a, b->u.bin.a));
        return cmp(m, a->u.bin.b, b->u.bin.b);
    case TEXI_EXPR_NOT:
    case TEXI_EXPR_CAST:
        return cmp(m, a->u.un.a, b->u.un.a);
    case TEXI_EXPR_SELECT:
        TEXI_TRY(cmp(m, a->u.sel.cond, b->u.sel.cond));
        TEXI_TRY(cmp(m, a->u.sel.t, b->u.sel.t));
        return cmp(m, a->u.sel.f, b->u.sel.f);
    case TEXI_EXPR_CALL:
        if (a->u.call.op != b->u.call.op || a->u.call.n_args != b->u.call.n_args)
            return differ(m, a, b);
        for (int i = 0; i < a->u.call.n_args; i++)
            TEXI_TRY(cmp(m, a->u.call.args[i], b->u.call.args[i]));
        return 0;
    case TEXI_EXPR_ACCESS:
        return cmp_access(m, a, b);
    case TEXI_EXPR_LOAD:   /* none in compute bodies */
    case TEXI_EXPR_SEARCH: /* no intrinsic searches */
    case TEXI_EXPR_RAMP:
    case TEXI_EXPR_BROADCAST:
    case TEXI_EXPR_VREDUCE:
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    return differ(m, a, b);
}

/* The top of the bodies: the reduction (op, where-condition), then the element. */
static int cmp_top(matcher *m, tex_expr *a, tex_expr *b)
{
    if (a->kind != TEXI_EXPR_REDUCE) /* both or neither: checked first */
        return cmp(m, a, b);
    if (a->u.red.op != b->u.red.op) {
        why(m, "the stage reduces with %s but the intrinsic with %s",
            texi_reduce_names[a->u.red.op], texi_reduce_names[b->u.red.op]);
        return fail(m);
    }
    if (!a->u.red.cond != !b->u.red.cond) {
        why(m, "only one of the stage and the intrinsic has a where-condition");
        return fail(m);
    }
    if (a->u.red.cond)
        TEXI_TRY(cmp(m, a->u.red.cond, b->u.red.cond));
    return cmp(m, a->u.red.body, b->u.red.body);
}

/* The output: the stage writes T[out_idx], desc writes D[its axes]. */
static int match_output(matcher *m)
{
    const texi_tz_nest *n = m->n;
    tex_tensor *dt = n->intrin->desc;
    if (dt->dtype != n->st->tensor->dtype) {
        why(m, "the stage's tensor has dtype %s but the intrinsic's output '%s' has %s",
            tex_dtype_name(n->st->tensor->dtype), dt->name, tex_dtype_name(dt->dtype));
        return fail(m);
    }
    tex_expr **g = new_exprs(m, m->d->n_axes);
    if (!g)
        return TEX_ENOMEM;
    for (int j = 0; j < m->d->n_axes; j++)
        g[j] = m->d->axes[j]->var;
    return match_tile(m, &m->args[n->intrin->n_inputs], n->st->tensor, n->out_idx, dt, g);
}

/* The register-resident built-ins' fragment tiles are per-lane storage in
 * mma.sync's layout (schedule/intrin_cuda_frag.c): a tensor given for one
 * must be a local buffer, else the lanes would share it. */
static int check_fragments(matcher *m)
{
    const texi_tz_nest *n = m->n;
    unsigned frag = texi_intrin_frag_operands(n->intrin);
    for (int i = 0; i <= n->intrin->n_inputs; i++) {
        tex_tensor *t = m->args[i].tensor;
        const tex_stage *st = frag >> i & 1u ? texi_schedule_find_stage(n->st->sch, t) : NULL;
        if (frag >> i & 1u && (!st || st->scope != TEXI_SCOPE_LOCAL)) {
            tex_tensor *d = i < n->intrin->n_inputs ? n->intrin->inputs[i] : n->intrin->desc;
            why(m,
                "its '%s' is a register fragment tile, so tensor '%s' must be computed in scope "
                "local (tex_set_scope) at a tile that all 32 lanes of a warp share",
                d->name, t->name);
            return fail(m);
        }
    }
    return 0;
}

int texi_tz_match(tex_ctx *ctx, const texi_tz_nest *nest, texi_intrin_arg *args)
{
    matcher m = {.ctx = ctx, .n = nest, .d = nest->intrin->desc->op, .args = args};
    for (int i = 0; i <= nest->intrin->n_inputs; i++)
        args[i] = (texi_intrin_arg){0};
    bool ra = nest->body->kind == TEXI_EXPR_REDUCE, rb = m.d->body->kind == TEXI_EXPR_REDUCE;
    if (ra != rb) {
        why(&m, "the stage %s a reduction but the intrinsic's description %s", ra ? "is" : "is not",
            rb ? "is" : "is not");
        return fail(&m);
    }
    TEXI_TRY(map_leaves(&m));
    TEXI_TRY(collect_inner(&m));
    tex_expr *body = nest->body;
    if (body->kind != TEXI_EXPR_REDUCE)
        body = texi_convert(body, nest->st->tensor->dtype);
    if (!body)
        return TEX_ENOMEM;
    TEXI_TRY(cmp_top(&m, body, m.d->body));
    for (int i = 0; i < nest->intrin->n_inputs; i++)
        if (!args[i].tensor) {
            why(&m, "the intrinsic's input '%s' is not read by the stage",
                nest->intrin->inputs[i]->name);
            return fail(&m);
        }
    TEXI_TRY(match_output(&m));
    return check_fragments(&m);
}
