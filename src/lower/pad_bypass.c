/*
 * Pass pad_bypass (at lowering, before flatten): the tensorized GEMM tiles
 * that zero_skip keeps inside a padding stage's interior read the
 * padding's source instead, as oneDNN's convolutions read their input
 * where it stands; the padding, once nothing else reads it, is not
 * computed (the CPU tail's dead_stores drops it). A 3x3 convolution's
 * padded copy of its input had cost 2-3% of the layer.
 *
 *   ATTR zero_skip { calls on P[m] }  ->  ATTR pad_bypass { the calls on X[m + off] }
 *                                         ATTR strict_only { the whole tile's call on P[m] }
 *
 * The calls of an ATTR "zero_skip" (tensorize_skip.c) move when
 *   - their A tile (rows x depth) reads a padding stage P (tex_op_pad):
 *     P[i] = select(bounds, X[i + off], 0), X a tensor parameter, every
 *     index of X the same axis of P plus a constant, bounds a conjunction
 *     of comparisons of one axis plus a constant with a constant: P's
 *     interior is the box lo <= i < hi, inside which X[i + off] lies in X's
 *     shape; no other tile of theirs reads P;
 *   - the tile is one element thick along every padded axis but its rows;
 *   - along its rows, the calls have at most R rows, R no more than P's
 *     interior is wide, and P's padding before and after the interior is
 *     each at most the rows zero_skip trims (TEXI_TZ_MAX_TRIM, and fewer
 *     than R).
 * Then a call runs only when its tile holds interior elements (zero_skip's
 * IF, exact along the one-element axes), and its rows, which lie in P's
 * shape and can leave the interior at one end only (R fits in it), by at
 * most the padding there, are trimmed to the interior (zero_skip's row
 * trims): every element a call reads is in the interior, where P equals X.
 * -strict-float multiplies the padding's zeros, so the whole tile's call on
 * P stays beside them for it (pass zero_skip keeps one of the two ATTRs);
 * the interpreter runs pad_bypass and skips strict_only.
 */
#include "lower/lower.h"
#include "lower/tensorize_match.h"
#include "schedule/intrin.h"

#include <string.h>

typedef struct {
    tex_tensor *pad, *src; /* P and X */
    int ndim;
    int64_t *off; /* per axis: X's index minus P's */
    int64_t *lo;  /* per axis: P's interior, [lo, hi) */
    int64_t *hi;
    int64_t *ext; /* per axis: P's extent */
} padding;

static bool is_zero(const tex_expr *e)
{
    return (e->kind == TEXI_EXPR_INT && e->u.i == 0) ||
           (e->kind == TEXI_EXPR_FLOAT && e->u.f == 0.0);
}

/* Whether e is P's axis d plus a constant, *c, for one d, *axis. */
static bool axis_plus_const(tex_ctx *ctx, const texi_op *op, tex_expr *e, int *axis, int64_t *c)
{
    for (int d = 0; d < op->n_axes; d++) {
        tex_expr *v = op->axes[d]->var;
        int64_t coef;
        if (!texi_expr_uses_var(e, v))
            continue;
        tex_expr *zero = texi_int_imm(ctx, v->dtype, 0);
        tex_expr *rest = zero && texi_linear_in(e, v, &coef) && coef == 1
                             ? texi_substitute(e, 1, &v, &zero)
                             : NULL;
        rest = rest ? texi_simplify(rest, 0, NULL) : NULL;
        *axis = d;
        return rest && texi_expr_is_int_const(rest, c);
    }
    return false;
}

/* Tightens pad's interior by conjunct c of its bounds; false when c has
 * another form. */
static bool tighten(tex_ctx *ctx, const texi_op *op, tex_expr *c, padding *p)
{
    if (c->kind == TEXI_EXPR_AND)
        return tighten(ctx, op, c->u.bin.a, p) && tighten(ctx, op, c->u.bin.b, p);
    enum texi_expr_kind k = c->kind;
    if (k != TEXI_EXPR_LT && k != TEXI_EXPR_LE && k != TEXI_EXPR_GT && k != TEXI_EXPR_GE)
        return false;
    tex_expr *a = c->u.bin.a, *b = c->u.bin.b;
    int64_t bound, shift;
    int d;
    if (!texi_expr_is_int_const(b, &bound)) { /* const OP axis: axis OP' const */
        tex_expr *t = a;
        a = b;
        b = t;
        k = k == TEXI_EXPR_LT   ? TEXI_EXPR_GT
            : k == TEXI_EXPR_LE ? TEXI_EXPR_GE
            : k == TEXI_EXPR_GT ? TEXI_EXPR_LT
                                : TEXI_EXPR_LE;
        if (!texi_expr_is_int_const(b, &bound))
            return false;
    }
    if (!axis_plus_const(ctx, op, a, &d, &shift))
        return false;
    int64_t v = bound - shift; /* axis OP v */
    if (k == TEXI_EXPR_GE || k == TEXI_EXPR_GT) {
        v += k == TEXI_EXPR_GT;
        p->lo[d] = v > p->lo[d] ? v : p->lo[d];
    } else {
        v += k == TEXI_EXPR_LE;
        p->hi[d] = v < p->hi[d] ? v : p->hi[d];
    }
    return true;
}

/* Whether tensor t is a padding stage of the file comment's form, read
 * into *p: 0 with p->pad t when it is, NULL when not; or the error
 * recorded (ENOMEM). */
static int read_padding(tex_ctx *ctx, tex_tensor *t, padding *p)
{
    const texi_op *op = t->op;
    p->pad = NULL;
    if (op->kind != TEXI_OP_COMPUTE || op->n_raxes || op->body->kind != TEXI_EXPR_SELECT ||
        !is_zero(op->body->u.sel.f) || op->body->u.sel.t->kind != TEXI_EXPR_ACCESS)
        return 0;
    const tex_expr *x = op->body->u.sel.t;
    tex_tensor *src = x->u.access.tensor;
    int n = op->n_axes;
    if (src->op->kind != TEXI_OP_PLACEHOLDER || src->ndim != n || t->ndim != n ||
        x->u.access.n_idx != n)
        return 0;
    int64_t *v = texi_alloc(ctx, sizeof *v * (size_t)(4 * n), "pad_bypass");
    if (!v)
        return TEX_ENOMEM;
    *p = (padding){NULL, src, n, v, v + n, v + 2 * n, v + 3 * n};
    for (int d = 0; d < n; d++) {
        int axis;
        if (!tex_expr_const_int(t->shape[d], &p->ext[d]) ||
            !axis_plus_const(ctx, op, x->u.access.idx[d], &axis, &p->off[d]) || axis != d)
            return tex_errcode(ctx);
        p->lo[d] = 0;
        p->hi[d] = p->ext[d];
    }
    if (!tighten(ctx, op, op->body->u.sel.cond, p))
        return tex_errcode(ctx);
    for (int d = 0; d < n; d++) {
        int64_t x_ext;
        if (!tex_expr_const_int(src->shape[d], &x_ext) || p->lo[d] >= p->hi[d] ||
            p->lo[d] + p->off[d] < 0 || p->hi[d] + p->off[d] > x_ext)
            return 0;
    }
    p->pad = t;
    return 0;
}

/* The calls of one ATTR "zero_skip" that read P. */
typedef struct {
    const padding *p;
    bool other_use;    /* a read of P the file comment does not allow */
    int64_t most_rows; /* of the calls reading P */
    int rows_dim;      /* P's axis along their rows; -1 before the first */
} skip_calls;

static bool reads_pad(tex_expr *e, void *ud)
{
    skip_calls *k = ud;
    if (e->kind == TEXI_EXPR_ACCESS && e->u.access.tensor == k->p->pad)
        k->other_use = true;
    return !k->other_use;
}

/* Whether intrinsic call s has P among its tiles. */
static bool call_reads_pad(const padding *p, const tex_stmt *s)
{
    for (int i = 0; i < s->u.intrin.n_args; i++)
        if (s->u.intrin.args[i].tensor == p->pad)
            return true;
    return false;
}

/* The rows of call s, reading P; 0 when s is not a GEMM built-in reading
 * P as A alone or its tile is thick along a padded axis but its rows. */
static int64_t tile_rows(const padding *p, const tex_stmt *s)
{
    const texi_intrin_arg *args = s->u.intrin.args;
    const tex_intrin *in = s->u.intrin.intrin;
    int64_t rows = texi_intrin_cpu_rows(in), depth = texi_intrin_cpu_depth(in);
    for (int i = 1; i < s->u.intrin.n_args; i++)
        if (args[i].tensor == p->pad)
            return 0;
    if (!rows || args[0].tensor != p->pad || args[0].ndim != 2 || args[0].tensor_ndim != p->ndim)
        return 0;
    int k = args[0].dim_map[1];
    bool padded_k = p->lo[k] > 0 || p->hi[k] < p->ext[k];
    return padded_k && depth > 1 ? 0 : rows;
}

static bool visit_skip_call(const tex_stmt *s, void *ud)
{
    skip_calls *k = ud;
    texi_stmt_visit_exprs(s, reads_pad, k);
    if (s->kind != TEXI_STMT_INTRIN || !call_reads_pad(k->p, s))
        return !k->other_use;
    int64_t rows = tile_rows(k->p, s);
    int d = s->u.intrin.args[0].dim_map[0];
    if (!rows || (k->rows_dim >= 0 && d != k->rows_dim))
        k->other_use = true;
    k->rows_dim = d;
    k->most_rows = rows > k->most_rows ? rows : k->most_rows;
    return !k->other_use;
}

/* Whether the calls of ATTR "zero_skip" s read P and stay in its interior
 * (file comment). */
static bool stays_inside(const padding *p, const tex_stmt *s)
{
    skip_calls k = {p, false, 0, -1};
    texi_stmt_visit(s->u.attr.body, visit_skip_call, &k);
    if (k.other_use || k.rows_dim < 0)
        return false;
    int64_t r = k.most_rows, trim = r - 1 < TEXI_TZ_MAX_TRIM ? r - 1 : TEXI_TZ_MAX_TRIM;
    int d = k.rows_dim;
    bool padded = p->lo[d] > 0 || p->hi[d] < p->ext[d];
    return !padded || r == 1 ||
           (r <= p->hi[d] - p->lo[d] && p->lo[d] <= trim && p->ext[d] - p->hi[d] <= trim);
}

typedef struct {
    texi_lower *lw;
    const padding *p; /* the padding whose tiles move (retarget) */
    bool failed;      /* an error is recorded in ctx */
} walker;

/* A call of a qualifying ATTR "zero_skip": its A tile moved from P to X. */
static tex_stmt *retarget(tex_stmt *s, void *ud)
{
    walker *w = ud;
    tex_ctx *ctx = w->lw->ctx;
    if (w->failed || s->kind != TEXI_STMT_INTRIN || s->u.intrin.args[0].tensor != w->p->pad)
        return w->failed ? s : NULL;
    int n = s->u.intrin.n_args, nd = s->u.intrin.args[0].tensor_ndim;
    texi_intrin_arg *args = texi_alloc(ctx, sizeof *args * (size_t)n, "pad_bypass");
    tex_expr **mins = texi_alloc(ctx, sizeof *mins * (size_t)nd, "pad_bypass");
    tex_stmt *r = NULL;
    if (args && mins) {
        memcpy(args, s->u.intrin.args, sizeof *args * (size_t)n);
        for (int d = 0; d < nd && mins; d++) {
            tex_expr *m = args[0].mins[d], *off = texi_int_imm(ctx, m->dtype, w->p->off[d]);
            tex_expr *sum = off ? texi_binary(TEXI_EXPR_ADD, m, off) : NULL;
            mins[d] = sum ? texi_simplify(sum, 0, NULL) : NULL;
            mins = mins[d] ? mins : NULL;
        }
        args[0].tensor = w->p->src;
        args[0].mins = mins;
        r = mins ? texi_intrin_new(ctx, s->u.intrin.intrin, s->u.intrin.fn, n, args) : NULL;
    }
    w->failed |= !r;
    return r ? r : s;
}

/* Visitor: the first intrinsic call, in *(const tex_stmt **)ud. */
static bool first_call(const tex_stmt *s, void *ud)
{
    const tex_stmt **call = ud;
    if (!*call && s->kind == TEXI_STMT_INTRIN)
        *call = s;
    return !*call;
}

/* ATTR "zero_skip" s as the file comment's pair of ATTRs where its calls
 * qualify, else as it is. */
static tex_stmt *bypass(tex_stmt *s, void *ud)
{
    walker *w = ud;
    if (w->failed || !texi_attr_is(s, TEXI_ATTR_ZERO_SKIP))
        return w->failed ? s : NULL;
    const tex_stmt *call = NULL;
    texi_stmt_visit(s->u.attr.body, first_call, &call);
    padding p;
    if (!call || call->u.intrin.n_args < 1 || !call->u.intrin.args[0].tensor)
        return s;
    if (read_padding(w->lw->ctx, call->u.intrin.args[0].tensor, &p) != 0) {
        w->failed = true;
        return s;
    }
    if (!p.pad || !stays_inside(&p, s))
        return s;
    tex_ctx *ctx = w->lw->ctx;
    walker rw = {w->lw, &p, false};
    tex_stmt *moved = texi_stmt_mutate(ctx, s->u.attr.body, retarget, NULL, &rw);
    tex_stmt *two[2] = {
        moved && !rw.failed ? texi_attr_named(ctx, TEXI_ATTR_PAD_BYPASS, NULL, moved) : NULL,
        texi_attr_named(ctx, TEXI_ATTR_STRICT_ONLY, NULL, texi_tz_whole_call(s->u.attr.body))};
    tex_stmt *r = two[0] && two[1] ? texi_seq_new(ctx, 2, two) : NULL;
    w->failed |= !r;
    return r ? r : s;
}

int texi_pass_pad_bypass(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    walker w = {lw, NULL, false};
    *out = texi_stmt_mutate(lw->ctx, in, bypass, NULL, &w);
    if (*out && !w.failed)
        return 0;
    return tex_errcode(lw->ctx) ? tex_errcode(lw->ctx) : TEX_ENOMEM;
}
