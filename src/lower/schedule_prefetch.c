/*
 * ScheduleOps' prefetch hints (tex_prefetch, tex_prefetch_at,
 * stage->prefetch): at the top of leaf m's loop body, one ATTR "prefetch"
 * ("prefetch_write" for the stage's own tensor) around nothing per 64-byte
 * line of each element of t that the iteration `offset` later of leaf
 * `from` (m, or a leaf outside it) touches:
 *   - the leaf offsets are the loop variables with leaf from's plus offset;
 *     every read of t in the stage's body (or its store) is bound to the
 *     root values they give; a read of a copy of t (a tex_cache_read of it,
 *     texi_copy_source) counts as a read of t at the same index, the
 *     element the copy takes from t;
 *   - a leaf inside m that such an index uses becomes a loop of the hints
 *     (a fresh variable over the leaf's extent at those offsets, unrolled
 *     when the leaf is, else serial: a parallel leaf too; a thread-bound
 *     one is refused), except leaves of constant extent that appear only
 *     in t's last index and outside any read there: together they span a
 *     constant range [lo + a, lo + b] of it, one hint per line of it (an
 *     unrolled loop);
 *   - when the hinted elements do not depend on m's own iteration (a
 *     weight tile that the next iteration of an outer `from` reads, the
 *     same for every iteration of m), each iteration of m asks for its
 *     share of them instead of all: the outermost loop of the hints runs
 *     over [v * per, min(n, (v + 1) * per)) in m's iteration v of E,
 *     per = ceil(n / E), so the lines arrive spread over m's loop, each
 *     asked for once;
 *   - every index of every read, t's own included, is clamped into its
 *     tensor (a parameter's shape, a root stage's realized region), so a
 *     hint past the loop's end or past an index array's end reads nothing
 *     out of bounds; tensors in local or shared memory, or attached inside
 *     another stage, are refused.
 */
#include "lower/schedule_ops.h"

#define LINE_BYTES 64

typedef struct {
    sops *o;
    const char *stage; /* for messages */
    const char *axis;
    int rc;
} clamper;

/* The closed range [lo, hi] of dimension d of t's buffer, or an error. */
static int buffer_dim(clamper *c, const tex_tensor *t, int d, tex_expr **lo, tex_expr **hi)
{
    sops *o = c->o;
    const tex_stage *ts = texi_schedule_find_stage(o->lw->sch, t);
    tex_expr *min = NULL, *ext = NULL;
    if (texi_so_is_param(o, t)) {
        min = texi_int_imm(o->ctx, t->shape[d]->dtype, 0);
        ext = t->shape[d];
    } else if (ts && ts->attach == TEXI_ATTACH_ROOT && ts->scope == TEXI_SCOPE_GLOBAL &&
               ts->region) {
        min = ts->region[d].min;
        ext = ts->region[d].extent;
    } else {
        return texi_error(o->ctx, TEX_EINVAL,
                          "tex_lower: stage '%s', axis '%s': tex_prefetch needs '%s' in memory "
                          "the whole function sees (a parameter or a stage computed at root in "
                          "global scope)",
                          c->stage, c->axis, t->name);
    }
    *lo = texi_so_env_expr(o, min);
    *hi = *lo ? texi_so_env_expr(
                    o, ARITH(SUB, ARITH(ADD, min, ext), texi_int_imm(o->ctx, ext->dtype, 1)))
              : NULL;
    return *hi ? 0 : TEX_ENOMEM;
}

/* Every ACCESS of e, inner ones first, with each index clamped into its
 * buffer (texi_expr_mutate's pre hook; errors in c->rc). */
static tex_expr *clamp_reads(tex_expr *e, void *ud)
{
    clamper *c = ud;
    if (e->kind != TEXI_EXPR_ACCESS || e->u.access.n_idx == 0 || c->rc)
        return c->rc ? e : NULL;
    int n = e->u.access.n_idx;
    tex_expr **idx = texi_alloc(c->o->ctx, sizeof *idx * (size_t)(n + 1), "schedule_ops");
    for (int d = 0; idx && d < n && !c->rc; d++) {
        tex_expr *i = texi_expr_mutate(e->u.access.idx[d], clamp_reads, ud), *lo = NULL, *hi = NULL;
        if (!i || (c->rc = buffer_dim(c, e->u.access.tensor, d, &lo, &hi)) != 0)
            break;
        idx[d] = ARITH(MAX, texi_convert(lo, i->dtype), ARITH(MIN, i, texi_convert(hi, i->dtype)));
    }
    if (!c->rc && (!idx || !idx[n - 1]))
        c->rc = TEX_ENOMEM;
    tex_expr *r = c->rc ? NULL : texi_access_new(e->u.access.tensor, n, idx);
    if (!r && !c->rc)
        c->rc = TEX_ENOMEM;
    return r ? r : e;
}

static tex_expr *clamped(clamper *c, tex_expr *e)
{
    tex_expr *r = e ? texi_expr_mutate(e, clamp_reads, c) : NULL;
    if (!r && !c->rc)
        c->rc = TEX_ENOMEM;
    return c->rc ? NULL : r;
}

typedef struct {
    const tex_expr *var;
    bool found;
} var_in_read;

static bool find_var_in_read(tex_expr *e, void *ud)
{
    var_in_read *v = ud;
    if (v->found)
        return false;
    if (e->kind == TEXI_EXPR_ACCESS || e->kind == TEXI_EXPR_SEARCH) {
        v->found = texi_expr_uses_var(e, v->var);
        return false;
    }
    return true;
}

/* Whether var occurs inside a read (ACCESS, SEARCH) within e. */
static bool read_uses(tex_expr *e, const tex_expr *var)
{
    var_in_read v = {var, false};
    texi_expr_visit(e, find_var_in_read, &v);
    return v.found;
}

/* Collects the distinct ACCESSes of t in e (texi_expr_visit hook). */
typedef struct {
    tex_tensor *t;
    int n, cap;
    tex_expr **found;
    tex_ctx *ctx;
    bool failed;
} reads_of;

static bool collect_reads(tex_expr *e, void *ud)
{
    reads_of *r = ud;
    if (e->kind != TEXI_EXPR_ACCESS || r->failed)
        return true;
    if (e->u.access.tensor != r->t) { /* a copy of t: the same element of t */
        if (texi_copy_source(e->u.access.tensor) != r->t)
            return true;
        if (!(e = texi_access_new(r->t, e->u.access.n_idx, e->u.access.idx))) {
            r->failed = true;
            return false;
        }
    }
    for (int i = 0; i < r->n; i++)
        if (texi_expr_equal(r->found[i], e))
            return false;
    tex_expr **f = texi_grow(r->ctx, r->found, r->n, &r->cap, sizeof *f, "schedule_ops");
    if (!f) {
        r->failed = true;
        return false;
    }
    r->found = f;
    r->found[r->n++] = e;
    return false;
}

/* One hint's statement: ATTR (write ? "prefetch_write" : "prefetch") of
 * access e, its indices clamped, around an empty body. */
static tex_stmt *hint(clamper *c, tex_expr *e, bool write)
{
    tex_expr *v = clamped(c, e);
    tex_stmt *empty = v ? texi_seq_new(c->o->ctx, 0, NULL) : NULL;
    return empty ? texi_attr_named(c->o->ctx, write ? TEXI_ATTR_PREFETCH_WRITE : TEXI_ATTR_PREFETCH,
                                   v, empty)
                 : NULL;
}

/* Leaf m's loop when the hints are shared out among its iterations (see
 * above): its variable and extent. */
typedef struct {
    tex_expr *var, *extent;
} hint_share;

/* The loop of hints `var` over [0, n) of `kind` around body, or with
 * share, over this iteration's share of it (a serial loop). */
static tex_stmt *hint_loop(tex_ctx *ctx, const hint_share *share, tex_expr *var, tex_expr *n,
                           enum texi_for_kind kind, tex_stmt *body)
{
    tex_expr *min = texi_int_imm(ctx, var->dtype, 0);
    if (share && body) {
        tex_expr *e = texi_convert(share->extent, var->dtype),
                 *one = texi_int_imm(ctx, var->dtype, 1);
        tex_expr *per = ARITH(FLOORDIV, ARITH(SUB, ARITH(ADD, n, e), one), e);
        min = ARITH(MUL, texi_convert(share->var, var->dtype), per);
        n = ARITH(MAX, ARITH(MIN, per, ARITH(SUB, n, min)), texi_int_imm(ctx, var->dtype, 0));
        min = min ? texi_simplify(min, 0, NULL) : NULL;
        n = n ? texi_simplify(n, 0, NULL) : NULL;
        kind = TEXI_FOR_SERIAL;
    }
    return body && min && n ? texi_for_new(ctx, var, min, n, kind, -1, body) : NULL;
}

/* The hints of access e (bound at the shifted offsets off2) inside leaf
 * m's body: lines along t's last index, loops over the other inner leaves
 * it uses (see above). */
static int access_hints(sops *o, const stage_emit *se, int m, tex_expr **off2, tex_expr *e,
                        bool write, clamper *c, tex_stmt **out)
{
    const tex_stage *st = se->st;
    tex_tensor *t = e->u.access.tensor;
    int nd = e->u.access.n_idx, n = st->n_leaf, n_line = 0;
    if (nd == 0) /* a 0-d tensor: its one element */
        return (*out = hint(c, e, write)) ? 0 : c->rc ? c->rc : TEX_ENOMEM;
    tex_expr *last = e->u.access.idx[nd - 1];
    texi_range *line = texi_alloc(o->ctx, sizeof *line * (size_t)(n + 1), "schedule_ops");
    bool *loop = texi_alloc(o->ctx, sizeof *loop * (size_t)(n + 1), "schedule_ops");
    if (!line || !loop)
        return TEX_ENOMEM;
    for (int k = m + 1; k < n; k++) {
        if (se->no_loop[k] || !texi_expr_uses_var(e, se->off[k]))
            continue;
        enum texi_for_kind kind = st->attr[texi_so_leaf_all(st, k)].for_kind;
        if (kind == TEXI_FOR_THREAD)
            return texi_error(o->ctx, TEX_EINVAL,
                              "tex_lower: stage '%s', axis '%s': tex_prefetch of '%s' needs axis "
                              "'%s' inside it, which is bound to a thread",
                              st->tensor->name, st->leaf[m]->name, t->name, st->leaf[k]->name);
        tex_expr *ext = texi_so_leaf_extent(o, se, off2, k);
        bool in_other = false;
        for (int d = 0; d + 1 < nd; d++)
            in_other |= texi_expr_uses_var(e->u.access.idx[d], se->off[k]);
        if (!ext)
            return TEX_ENOMEM;
        if (!in_other && !read_uses(last, se->off[k]) && texi_expr_is_int_const(ext, NULL))
            line[n_line++] = (texi_range){se->off[k], texi_int_imm(o->ctx, ext->dtype, 0), ext};
        else
            loop[k] = true;
    }
    /* the lines: last = lo + (a .. b) over the line leaves */
    tex_expr **zeros = texi_alloc(o->ctx, sizeof *zeros * (size_t)(n_line + 1), "schedule_ops");
    tex_expr **vars = texi_alloc(o->ctx, sizeof *vars * (size_t)(n_line + 1), "schedule_ops");
    if (!zeros || !vars)
        return TEX_ENOMEM;
    for (int i = 0; i < n_line; i++) {
        vars[i] = line[i].var;
        zeros[i] = line[i].min;
    }
    tex_expr *lo = n_line ? texi_substitute(last, n_line, vars, zeros) : last;
    tex_expr *span = lo ? texi_simplify(ARITH(SUB, last, lo), n_line, line) : NULL;
    if (!span)
        return TEX_ENOMEM;
    texi_interval iv = texi_const_interval(span, n_line, line);
    if (iv.lo_inf || iv.hi_inf) { /* not a constant run: every leaf is a loop */
        for (int i = 0; i < n_line; i++)
            for (int k = m + 1; k < n; k++)
                loop[k] |= se->off[k] == line[i].var;
        lo = last;
        iv = (texi_interval){0, 0, false, false};
    }
    int64_t step = LINE_BYTES / tex_dtype_bytes(t->dtype);
    step = step < 1 ? 1 : step;
    int64_t lines = (iv.hi - iv.lo) / step + 1;
    tex_expr *l = texi_var_new(o->ctx, "pf.line", lo->dtype);
    tex_expr **idx = texi_alloc(o->ctx, sizeof *idx * (size_t)nd, "schedule_ops");
    if (!l || !idx)
        return TEX_ENOMEM;
    for (int d = 0; d + 1 < nd; d++)
        idx[d] = e->u.access.idx[d];
    idx[nd - 1] = ARITH(ADD, lo,
                        ARITH(ADD, texi_int_imm(o->ctx, lo->dtype, iv.lo),
                              ARITH(MUL, l, texi_int_imm(o->ctx, lo->dtype, step))));
    tex_expr *at = idx[nd - 1] ? texi_access_new(t, nd, idx) : NULL;
    int outermost = n;
    for (int k = n - 1; k > m; k--)
        outermost = loop[k] ? k : outermost;
    hint_share share = {se->off[m], texi_so_leaf_extent(o, se, se->off, m)};
    const hint_share *shared = texi_expr_uses_var(e, se->off[m]) ? NULL : &share;
    if (!share.extent)
        return TEX_ENOMEM;
    tex_stmt *s = at ? hint(c, at, write) : NULL;
    s = hint_loop(o->ctx, outermost == n ? shared : NULL, l, texi_int_imm(o->ctx, l->dtype, lines),
                  TEXI_FOR_UNROLLED, s);
    /* the other leaves, innermost first, over fresh variables */
    for (int k = n - 1; s && k > m; k--) {
        if (!loop[k])
            continue;
        tex_expr *var = texi_var_new(o->ctx, st->leaf[k]->name, se->off[k]->dtype);
        tex_expr *ext = clamped(c, texi_so_leaf_extent(o, se, off2, k));
        enum texi_for_kind kind = st->attr[texi_so_leaf_all(st, k)].for_kind == TEXI_FOR_UNROLLED
                                      ? TEXI_FOR_UNROLLED
                                      : TEXI_FOR_SERIAL;
        s = var && ext ? texi_stmt_substitute(o->ctx, s, se->off[k], var) : NULL;
        s = s && var ? hint_loop(o->ctx, k == outermost ? shared : NULL, var, ext, kind, s) : NULL;
    }
    *out = s;
    return c->rc ? c->rc : s ? 0 : TEX_ENOMEM;
}

/* The hints of request p at leaf m (see above) into *out. */
static int prefetch_hints(sops *o, const stage_emit *se, int m, const texi_prefetch *p,
                          tex_stmt **out)
{
    const tex_stage *st = se->st;
    clamper c = {o, st->tensor->name, st->leaf[m]->name, 0};
    tex_expr **off2 = texi_alloc(o->ctx, sizeof *off2 * (size_t)(st->n_leaf + 1), "schedule_ops");
    if (!off2)
        return TEX_ENOMEM;
    for (int k = 0; k < st->n_leaf; k++)
        off2[k] = se->off[k];
    int f = texi_stage_leaf_index(st, p->from);
    off2[f] = ARITH(ADD, se->off[f], texi_int_imm(o->ctx, se->off[f]->dtype, p->offset));
    tex_expr **val = off2[f] ? texi_so_values(o, se, off2) : NULL;
    if (!val)
        return TEX_ENOMEM;
    if (p->tensor == st->tensor || p->tensor == texi_so_out_tensor(st)) { /* its own store */
        tex_expr **idx = texi_so_out_index(o, se, val);
        tex_expr *at = idx ? texi_access_new(texi_so_out_tensor(st), st->op->n_axes, idx) : NULL;
        return at ? access_hints(o, se, m, off2, at, true, &c, out) : TEX_ENOMEM;
    }
    reads_of r = {p->tensor, 0, 0, NULL, o->ctx, false};
    texi_expr_visit(se->sb->body, collect_reads, &r);
    if (r.failed)
        return TEX_ENOMEM;
    if (r.n == 0)
        return texi_error(o->ctx, TEX_EINVAL,
                          "tex_lower: stage '%s', axis '%s': tex_prefetch of '%s', which the "
                          "stage no longer reads",
                          st->tensor->name, st->leaf[m]->name, p->tensor->name);
    tex_stmt **items = texi_alloc(o->ctx, sizeof *items * (size_t)(r.n + 1), "schedule_ops");
    if (!items)
        return TEX_ENOMEM;
    for (int i = 0; i < r.n; i++) {
        tex_expr *e = texi_so_env_expr(o, texi_so_bind_roots(o, se, val, r.found[i]));
        if (!e)
            return TEX_ENOMEM;
        TEXI_TRY(access_hints(o, se, m, off2, e, false, &c, &items[i]));
    }
    *out = texi_seq_new(o->ctx, r.n, items);
    return *out ? 0 : TEX_ENOMEM;
}

/* body preceded by the hints of the stage's prefetch requests at leaf m. */
int texi_so_with_prefetch(sops *o, const stage_emit *se, int m, tex_stmt **body)
{
    const tex_stage *st = se->st;
    for (int i = st->n_prefetch - 1; i >= 0; i--) {
        const texi_prefetch *p = &st->prefetch[i];
        if (p->iv != st->leaf[m])
            continue;
        tex_stmt *items[2] = {NULL, *body};
        TEXI_TRY(prefetch_hints(o, se, m, p, &items[0]));
        if (!(*body = texi_seq_new(o->ctx, 2, items)))
            return TEX_ENOMEM;
    }
    return 0;
}

/* A request whose axis is no longer a leaf, or is vectorized, or whose
 * `from` axis is no longer a leaf at or outside it, is refused. */
int texi_so_check_prefetch(sops *o, const tex_stage *st)
{
    for (int i = 0; i < st->n_prefetch; i++) {
        const texi_prefetch *p = &st->prefetch[i];
        int k = texi_stage_leaf_index(st, p->iv), f = texi_stage_leaf_index(st, p->from);
        const tex_iter *axis = k < 0 || (f >= 0 && f <= k) ? p->iv : p->from;
        const char *why = k < 0 || f < 0 ? "is no longer a leaf (split or fused after tex_prefetch)"
                          : st->attr[texi_so_leaf_all(st, k)].for_kind == TEXI_FOR_VECTORIZED
                              ? "is vectorized"
                          : f > k ? "is now inside the loop of the hints (reordered)"
                                  : NULL;
        if (why)
            return texi_error(o->ctx, TEX_EINVAL,
                              "tex_lower: stage '%s', axis '%s' %s; tex_prefetch of '%s' needs a "
                              "loop there",
                              st->tensor->name, axis->name, why, p->tensor->name);
    }
    return 0;
}
