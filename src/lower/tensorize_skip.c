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
 * The same along A's rows: where the tile's first (or last) rows lie in
 * the zeros, as the pixels at a row's ends do for a conv's first (last)
 * filter column, the call runs on the other rows only, with the built-in's
 * instance of fewer rows (trim_rows): another 2/21 of the 7x7 layer.
 *
 * The call sits in ATTR "zero_skip" around IF (needed) (the trims' IFs)
 * UPDATE; the tail pass zero_skip keeps the IFs, or under -strict-float
 * the whole tile's call alone: a skipped product of zeros differs from
 * adding it only when the other tile holds an infinity or a NaN (or in the
 * sign of a zero sum).
 */
#include "lower/lower.h"
#include "lower/tensorize_match.h"
#include "schedule/bound.h"
#include "schedule/intrin.h"

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
 * op) ANDed onto *need, when c uses axis `only` (any, or none, when only is
 * -1); false when c has another form (or out of memory). */
static bool conjunct_over_tile(const texi_op *op, tex_expr *c, int only, tex_expr **first,
                               tex_expr **last, tex_expr **need)
{
    if (c->kind == TEXI_EXPR_AND)
        return conjunct_over_tile(op, c->u.bin.a, only, first, last, need) &&
               conjunct_over_tile(op, c->u.bin.b, only, first, last, need);
    if (c->kind != TEXI_EXPR_LT && c->kind != TEXI_EXPR_LE && c->kind != TEXI_EXPR_GT &&
        c->kind != TEXI_EXPR_GE)
        return false;
    int da = axis_used(op, c->u.bin.a), db = axis_used(op, c->u.bin.b);
    if (da == -2 || db == -2 || (da >= 0 && db >= 0))
        return false;
    int d = da >= 0 ? da : db;
    if (only >= 0 && d != only)
        return true;
    if (d < 0)
        return and_onto(need, c);
    tex_expr *var = op->axes[d]->var;
    if (!monotone(da >= 0 ? c->u.bin.a : c->u.bin.b, var))
        return false;
    tex_expr *at_first = texi_substitute(c, 1, &var, &first[d]);
    tex_expr *at_last = texi_substitute(c, 1, &var, &last[d]);
    return at_first && at_last && and_onto(need, ARITH(OR, at_first, at_last));
}

/* The padding stage that tile arg (of desc tensor dt) reads, with the
 * tile's first and last index per axis in (*first)[d], (*last)[d]; *op
 * NULL when the tile's tensor is not a padding stage or its extents are
 * not constants. 0, or TEX_ENOMEM. */
static int tile_box(tex_ctx *ctx, const texi_intrin_arg *arg, const tex_tensor *dt,
                    const texi_op **op_out, tex_expr ***first_out, tex_expr ***last_out)
{
    const texi_op *op = arg->tensor ? arg->tensor->op : NULL;
    *op_out = NULL;
    if (!op || op->kind != TEXI_OP_COMPUTE || op->body->kind != TEXI_EXPR_SELECT ||
        !is_zero(op->body->u.sel.f) || op->n_axes != arg->tensor_ndim)
        return 0;
    int nd = op->n_axes;
    tex_expr **first = texi_alloc(ctx, sizeof *first * (size_t)(2 * nd + 1), "tensorize_skip");
    if (!first)
        return TEX_ENOMEM;
    tex_expr **last = first + nd;
    for (int d = 0; d < nd; d++) {
        int64_t ext = 1;
        for (int j = 0; j < arg->ndim; j++)
            if (arg->dim_map[j] == d && !tex_expr_const_int(dt->shape[j], &ext))
                return 0;
        first[d] = arg->mins[d];
        last[d] =
            ext == 1 ? first[d] : ARITH(ADD, first[d], texi_int_imm(ctx, first[d]->dtype, ext - 1));
        if (!last[d])
            return TEX_ENOMEM;
    }
    *op_out = op;
    *first_out = first;
    *last_out = last;
    return 0;
}

/* The condition that the box first..last of padding stage op holds an
 * element of its non-zero region, as far as the bounds on axis `only` (all
 * bounds: -1) tell, in *need; *need NULL when the bounds have another form
 * (or none on that axis). 0, or TEX_ENOMEM. */
static int box_needed(tex_ctx *ctx, const texi_op *op, int only, tex_expr **first, tex_expr **last,
                      tex_expr **need)
{
    *need = NULL;
    if (conjunct_over_tile(op, op->body->u.sel.cond, only, first, last, need))
        return 0;
    *need = NULL;
    return tex_errcode(ctx) == 0 ? 0 : TEX_ENOMEM;
}

/* call (an UPDATE of in, a CPU GEMM built-in) on the instance of `rows`
 * rows, its A and C tiles starting `shift` rows on; NULL on ENOMEM. */
static tex_stmt *rows_call(tex_ctx *ctx, tex_intrin *in, const tex_stmt *call, int64_t rows,
                           int64_t shift)
{
    tex_intrin *instance = texi_intrin_builtin_cpu_shape(ctx, in, rows, texi_intrin_cpu_cols(in),
                                                         texi_intrin_cpu_depth(in));
    int n = call->u.intrin.n_args;
    texi_intrin_arg *args = texi_alloc(ctx, sizeof *args * (size_t)n, "tensorize_skip");
    if (!instance || !args)
        return NULL;
    memcpy(args, call->u.intrin.args, sizeof *args * (size_t)n);
    for (int i = 0; i < 2; i++) { /* A (first) and C (last): rows are their dimension 0 */
        texi_intrin_arg *t = &args[i == 0 ? 0 : n - 1];
        tex_expr **mins = texi_alloc(ctx, sizeof *mins * (size_t)t->tensor_ndim, "tensorize_skip");
        if (!mins)
            return NULL;
        memcpy(mins, t->mins, sizeof *mins * (size_t)t->tensor_ndim);
        int d = t->dim_map[0];
        mins[d] = ARITH(ADD, mins[d], texi_int_imm(ctx, mins[d]->dtype, shift));
        if (!mins[d])
            return NULL;
        t->mins = mins;
    }
    return texi_intrin_new(ctx, instance, TEXI_INTRIN_UPDATE, n, args);
}

/* Whether row r of A's tile (box first..last of padding stage op, rows
 * along axis d) is inside the bounds on axis d: *need, NULL when the
 * bounds have another form. */
static int row_needed(tex_ctx *ctx, const texi_op *op, tex_expr **first, tex_expr **last, int d,
                      int64_t r, tex_expr **need)
{
    tex_expr *saved_first = first[d], *saved_last = last[d];
    first[d] = last[d] = ARITH(ADD, saved_first, texi_int_imm(ctx, saved_first->dtype, r));
    int rc = first[d] ? box_needed(ctx, op, d, first, last, need) : TEX_ENOMEM;
    first[d] = saved_first;
    last[d] = saved_last;
    return rc;
}

/* *call (in's UPDATE on tiles args), IF (the first t rows of A's tile, the
 * box first..last of padding stage op, are padding, row t not) the
 * call on rows t.. of the tile ELSE IF (the same for the last t rows) ...
 * ELSE *call, for t up to TEXI_TZ_MAX_TRIM: the rows a conv's tile reads from the
 * left and right padding (at the first and last filter columns) are not
 * multiplied. Rows needed form one interval (each bound is monotone along
 * the rows), so row t - 1 outside and row t inside means rows 0..t-1 all
 * outside. Trims the simplifier proves impossible are left out. */
static int trim_rows(tex_ctx *ctx, tex_intrin *in, const texi_intrin_arg *args, const texi_op *op,
                     tex_expr **first, tex_expr **last, int n_env, const texi_range *env,
                     tex_stmt **call)
{
    int64_t m = texi_intrin_cpu_rows(in);
    if (m < 2)
        return 0;
    int d = args[0].dim_map[0];
    tex_stmt *full = *call;
    for (int64_t t = 1; t < m && t <= TEXI_TZ_MAX_TRIM; t++)
        for (int back = 0; back < 2; back++) {
            tex_expr *out, *inside;
            TEXI_TRY(row_needed(ctx, op, first, last, d, back ? m - t : t - 1, &out));
            TEXI_TRY(row_needed(ctx, op, first, last, d, back ? m - 1 - t : t, &inside));
            if (!out || !inside)
                return 0;
            tex_expr *cond = texi_simplify(ARITH(AND, tex_not(out), inside), n_env, env);
            int64_t v;
            if (!cond)
                return TEX_ENOMEM;
            if (tex_expr_const_int(cond, &v) && v == 0)
                continue;
            tex_stmt *trimmed = rows_call(ctx, in, full, m - t, back ? 0 : t);
            if (!trimmed || !(*call = texi_if_new(ctx, cond, trimmed, *call)))
                return TEX_ENOMEM;
        }
    return 0;
}

int texi_tz_skip_zero_tiles(tex_ctx *ctx, tex_intrin *in, const texi_intrin_arg *args, int n_env,
                            const texi_range *env, tex_stmt **call)
{
    if (!*call || !in->builtin || strncmp(in->builtin, "cpu.gemm_", 9) != 0)
        return 0;
    tex_stmt *full = *call;
    tex_expr *need = NULL;
    for (int a = 0; a < in->n_inputs; a++) {
        const texi_op *op;
        tex_expr **first, **last, *tile;
        TEXI_TRY(tile_box(ctx, &args[a], in->inputs[a], &op, &first, &last));
        if (!op)
            continue;
        if (a == 0) /* A: its rows */
            TEXI_TRY(trim_rows(ctx, in, args, op, first, last, n_env, env, call));
        TEXI_TRY(box_needed(ctx, op, -1, first, last, &tile));
        if (tile && !and_onto(&need, tile))
            return TEX_ENOMEM;
    }
    int64_t v;
    if (need && !(need = texi_simplify(need, n_env, env)))
        return TEX_ENOMEM;
    if (need && !(tex_expr_const_int(need, &v) && v != 0) &&
        !(*call = texi_if_new(ctx, need, *call, NULL)))
        return TEX_ENOMEM;
    if (*call == full)
        return 0;
    *call = texi_attr_new(ctx, "zero_skip", NULL, *call);
    return *call ? 0 : TEX_ENOMEM;
}

tex_stmt *texi_tz_whole_call(tex_stmt *body)
{
    while (body->kind == TEXI_STMT_IF)
        body = body->u.ifs.else_s ? body->u.ifs.else_s : body->u.ifs.then_s;
    return body;
}

/* ATTR "zero_skip": its body, or under -strict-float the whole call;
 * ATTR "pad_bypass": its body, or nothing under -strict-float; ATTR
 * "strict_only": its body under -strict-float, else nothing. */
static tex_stmt *unwrap(tex_stmt *s, void *ud)
{
    const texi_lower *lw = ud;
    if (s->kind != TEXI_STMT_ATTR)
        return NULL;
    tex_stmt *b = s->u.attr.body;
    switch (s->u.attr.id) {
    case TEXI_ATTR_ZERO_SKIP:
        return lw->strict_float ? texi_tz_whole_call(b) : b;
    case TEXI_ATTR_PAD_BYPASS:
        return lw->strict_float ? texi_seq_new(lw->ctx, 0, NULL) : b;
    case TEXI_ATTR_STRICT_ONLY:
        return lw->strict_float ? b : texi_seq_new(lw->ctx, 0, NULL);
    default:
        return NULL;
    }
}

int texi_pass_zero_skip(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    *out = texi_stmt_mutate(lw->ctx, in, unwrap, NULL, lw);
    return *out ? 0 : TEX_ENOMEM;
}
