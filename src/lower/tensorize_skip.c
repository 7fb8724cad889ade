/*
 * Padding tiles of tensorized GEMM updates (as oneDNN's convolutions skip
 * the filter taps that fall in the padding): an UPDATE of a CPU GEMM
 * built-in (C += A . B) adds nothing when its A or B tile lies wholly in
 * the zero region of a padding stage, a compute whose body is
 * select(bounds, x, 0) (tex_op_pad). A 3x3 convolution's first and last
 * output rows have one filter row of three wholly in the padding: skipping
 * those calls saves 2/21 of a 7x7 layer's work, 2/42 of a 14x14 one's.
 *
 * The condition that the call is needed: for each such operand, some
 * element of its tile satisfies every conjunct of the bounds. A conjunct
 * is a comparison (<, <=, >, >=) between an expression of one of the
 * padding stage's axes, monotone in it (the axis plus, minus or times
 * terms free of the axes), and one free of them; over the tile's interval
 * [first, last] on that axis it holds somewhere iff it holds at first or at
 * last, and the tile is a box, so the AND of those ORs is exact. A bounds
 * expression of any other form guards nothing.
 *
 * The call sits in ATTR "zero_skip" around IF (needed) UPDATE; the tail
 * pass zero_skip keeps the IF, or under -strict-float the call alone: a
 * skipped product of zeros differs from adding it only when the other
 * tile holds an infinity or a NaN (or in the sign of a zero sum).
 */
#include "lower/lower.h"
#include "lower/tensorize_match.h"
#include "schedule/bound.h"

#include <string.h>

#define ARITH(k, a, b) texi_bounds_arith(TEXI_EXPR_##k, (a), (b))

static bool is_zero(const tex_expr *e)
{
    return (e->kind == TEXI_EXPR_INT && e->u.i == 0) ||
           (e->kind == TEXI_EXPR_FLOAT && e->u.f == 0.0);
}

typedef struct {
    const texi_op *op;
    int axis;   /* the one axis used, -1 when none */
    bool other; /* a second axis, or something not arithmetic on sizes */
} uses;

static bool note_use(tex_expr *e, void *ud)
{
    uses *u = ud;
    if (e->kind == TEXI_EXPR_ACCESS || e->kind == TEXI_EXPR_LOAD || e->kind == TEXI_EXPR_CALL) {
        u->other = true;
        return false;
    }
    if (e->kind != TEXI_EXPR_VAR)
        return true;
    for (int d = 0; d < u->op->n_axes; d++)
        if (u->op->axes[d]->var == e) {
            if (u->axis >= 0 && u->axis != d)
                u->other = true;
            u->axis = d;
            return true;
        }
    if (e->u.var.iter)
        u->other = true; /* some other loop's variable */
    return true;
}

/* The axis of op e uses: its index, -1 when none, -2 when e uses more than
 * one or reads memory. */
static int axis_used(const texi_op *op, tex_expr *e)
{
    uses u = {op, -1, false};
    texi_expr_visit(e, note_use, &u);
    return u.other ? -2 : u.axis;
}

/* Whether e is monotone in var: var, or var combined by +, - or * with
 * terms free of it. */
static bool monotone(tex_expr *e, const tex_expr *var)
{
    if (e == var)
        return true;
    if (e->kind != TEXI_EXPR_ADD && e->kind != TEXI_EXPR_SUB && e->kind != TEXI_EXPR_MUL)
        return false;
    bool in_a = texi_expr_uses_var(e->u.bin.a, var), in_b = texi_expr_uses_var(e->u.bin.b, var);
    return in_a != in_b && monotone(in_a ? e->u.bin.a : e->u.bin.b, var);
}

/* AND onto *acc (NULL: nothing yet); false when out of memory. */
static bool and_onto(tex_expr **acc, tex_expr *c)
{
    *acc = *acc ? ARITH(AND, *acc, c) : c;
    return *acc != NULL;
}

/* Conjunct c of the bounds over the tile (first[d], last[d] per axis d of
 * op) ANDed onto *need; false when c has another form (or out of memory). */
static bool conjunct_over_tile(const texi_op *op, tex_expr *c, tex_expr **first, tex_expr **last,
                               tex_expr **need)
{
    if (c->kind == TEXI_EXPR_AND)
        return conjunct_over_tile(op, c->u.bin.a, first, last, need) &&
               conjunct_over_tile(op, c->u.bin.b, first, last, need);
    if (c->kind != TEXI_EXPR_LT && c->kind != TEXI_EXPR_LE && c->kind != TEXI_EXPR_GT &&
        c->kind != TEXI_EXPR_GE)
        return false;
    int da = axis_used(op, c->u.bin.a), db = axis_used(op, c->u.bin.b);
    if (da == -2 || db == -2 || (da >= 0 && db >= 0))
        return false;
    if (da < 0 && db < 0)
        return and_onto(need, c);
    int d = da >= 0 ? da : db;
    tex_expr *var = op->axes[d]->var;
    if (!monotone(da >= 0 ? c->u.bin.a : c->u.bin.b, var))
        return false;
    tex_expr *at_first = texi_substitute(c, 1, &var, &first[d]);
    tex_expr *at_last = texi_substitute(c, 1, &var, &last[d]);
    return at_first && at_last && and_onto(need, ARITH(OR, at_first, at_last));
}

/* The condition that tile arg of desc tensor dt holds an element of its
 * padding stage's non-zero region, ANDed onto *need; nothing when the
 * tile's tensor is not a padding stage (or out of memory: *need NULL). */
static bool tile_needed(tex_ctx *ctx, const texi_intrin_arg *arg, const tex_tensor *dt,
                        tex_expr **need)
{
    const texi_op *op = arg->tensor ? arg->tensor->op : NULL;
    if (!op || op->kind != TEXI_OP_COMPUTE || op->body->kind != TEXI_EXPR_SELECT ||
        !is_zero(op->body->u.sel.f) || op->n_axes != arg->tensor_ndim)
        return true;
    int nd = op->n_axes;
    tex_expr **first = texi_alloc(ctx, sizeof *first * (size_t)(2 * nd + 1), "tensorize_skip");
    if (!first)
        return false;
    tex_expr **last = first + nd;
    for (int d = 0; d < nd; d++) {
        int64_t ext = 1;
        for (int j = 0; j < arg->ndim; j++)
            if (arg->dim_map[j] == d && !tex_expr_const_int(dt->shape[j], &ext))
                return true;
        first[d] = arg->mins[d];
        last[d] =
            ext == 1 ? first[d] : ARITH(ADD, first[d], texi_int_imm(ctx, first[d]->dtype, ext - 1));
        if (!last[d])
            return false;
    }
    tex_expr *tile = NULL;
    if (!conjunct_over_tile(op, op->body->u.sel.cond, first, last, &tile))
        return tex_errcode(ctx) == 0; /* another form: guards nothing */
    return and_onto(need, tile);
}

int texi_tz_skip_zero_tiles(tex_ctx *ctx, const tex_intrin *in, const texi_intrin_arg *args,
                            int n_env, const texi_range *env, tex_stmt **call)
{
    if (!*call || !in->builtin || strncmp(in->builtin, "cpu.gemm_", 9) != 0)
        return 0;
    tex_expr *need = NULL;
    for (int a = 0; a < in->n_inputs; a++)
        if (!tile_needed(ctx, &args[a], in->inputs[a], &need))
            return TEX_ENOMEM;
    if (!need)
        return 0;
    need = texi_simplify(need, n_env, env);
    if (!need)
        return TEX_ENOMEM;
    int64_t v;
    if (tex_expr_const_int(need, &v) && v != 0)
        return 0;
    tex_stmt *guarded = texi_if_new(ctx, need, *call, NULL);
    *call = guarded ? texi_attr_new(ctx, "zero_skip", NULL, guarded) : NULL;
    return *call ? 0 : TEX_ENOMEM;
}

/* ATTR "zero_skip": its IF, or under -strict-float the call. */
static tex_stmt *unwrap(tex_stmt *s, void *ud)
{
    const texi_lower *lw = ud;
    if (s->kind != TEXI_STMT_ATTR || s->u.attr.id != TEXI_ATTR_ZERO_SKIP)
        return NULL;
    tex_stmt *b = s->u.attr.body;
    if (lw->strict_float && b->kind == TEXI_STMT_IF && !b->u.ifs.else_s)
        return b->u.ifs.then_s;
    return b;
}

int texi_pass_zero_skip(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    *out = texi_stmt_mutate(lw->ctx, in, unwrap, NULL, lw);
    return *out ? 0 : TEX_ENOMEM;
}
