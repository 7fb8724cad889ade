/*
 * ScheduleOps: the loop nest of a whole schedule (stage 1 of lower.h), from
 * the stages' leaf iters, attach points and the results of bound inference.
 *
 * Input: a schedule with inferred bounds (bound.h) and the parameters.
 * Output (tensor level): one nest per computed, non-inlined stage, at root
 * or at its attach point; leaf loops FOR v in [0, extent) with the stage's
 * loop kinds and thread tags; intermediates REALIZEd over their inferred
 * regions; PROVIDE / ACCESS in global coordinates; IF guards for split tails
 * and partial tiles; reductions as an init and an update nest; ATTRs
 * "predicate", "assert", "atomic" and "cross_thread_reduction" for the
 * passes after; INTRIN calls for tensorized stages; tex_prefetch's hints
 * (ATTR "prefetch", built by schedule_prefetch.c). Each section below says
 * how in detail: checks, bodies (guards, tails, reductions, atomics), loops
 * (nests, REALIZE, thread binding), tensorize.
 *
 * Not done here: flattening, loop partitioning, simplification beyond
 * folding constants in indices, storage scopes' placement (passes).
 */
#include "lower/schedule_ops.h"
#include "lower/tensorize_match.h"
#include "schedule/intrin.h"

#include <stdio.h>

static int emit_stage(sops *o, int si, tex_stmt **out);
static int build_level(sops *o, const stage_emit *se, int m, bool after_init, tex_stmt **out);

/* ------------------------------------------------------------- helpers */

static tex_expr *imm(tex_ctx *ctx, tex_dtype t, int64_t v)
{
    return texi_int_imm(ctx, t, v);
}

static int push_env(sops *o, tex_expr *var, tex_expr *extent)
{
    tex_expr *zero = imm(o->ctx, var->dtype, 0);
    if (!zero || !extent)
        return TEX_ENOMEM;
    texi_range *env = texi_grow(o->ctx, o->env, o->n_env, &o->cap_env, sizeof *env, "schedule_ops");
    if (!env)
        return TEX_ENOMEM;
    o->env = env;
    o->env[o->n_env++] = (texi_range){var, zero, extent};
    return 0;
}

static int push_sub(sops *o, tex_expr *from, tex_expr *to)
{
    int cap = o->cap_sub;
    tex_expr **f = texi_grow(o->ctx, o->sub_from, o->n_sub, &cap, sizeof *f, "schedule_ops");
    tex_expr **t =
        f ? texi_grow(o->ctx, o->sub_to, o->n_sub, &o->cap_sub, sizeof *t, "schedule_ops") : NULL;
    if (!t)
        return TEX_ENOMEM;
    o->sub_from = f;
    o->sub_to = t;
    o->sub_from[o->n_sub] = from;
    o->sub_to[o->n_sub++] = to;
    return 0;
}

/* e with the bound variables of leaves without a loop replaced, simplified over the
 * enclosing loops. */
tex_expr *texi_so_env_expr(sops *o, tex_expr *e)
{
    if (e && o->n_sub)
        e = texi_substitute(e, o->n_sub, o->sub_from, o->sub_to);
    return e ? texi_simplify(e, o->n_env, o->env) : NULL;
}

bool texi_so_is_param(const sops *o, const tex_tensor *t)
{
    for (int i = 0; i < o->n_params; i++)
        if (o->params[i] == t)
            return true;
    return false;
}

static bool is_compute(const tex_stage *st)
{
    return st->op && st->op->kind == TEXI_OP_COMPUTE;
}

int texi_so_leaf_all(const tex_stage *st, int k)
{
    return texi_bounds_iter_index(st, st->leaf[k]);
}

static tex_expr *and_also(tex_expr *a, tex_expr *b)
{
    return a ? ARITH(AND, a, b) : b;
}

/* ------------------------------------------------------------- checks */

/* Refused here: placeholders read but not passed as parameters, inlined
 * parameters and illegal tails (TEX_EINVAL, "tex_lower: ..."). */

static bool reads_tensor(tex_expr *e, void *ud)
{
    const tex_tensor **t = ud;
    if (*t && e->kind == TEXI_EXPR_ACCESS && e->u.access.tensor == *t)
        *t = NULL;
    return *t != NULL;
}

static bool body_reads(tex_expr *body, const tex_tensor *t)
{
    const tex_tensor *probe = t;
    if (body && body->kind == TEXI_EXPR_REDUCE) {
        texi_expr_visit(body->u.red.body, reads_tensor, &probe);
        if (probe && body->u.red.cond)
            texi_expr_visit(body->u.red.cond, reads_tensor, &probe);
    } else if (body) {
        texi_expr_visit(body, reads_tensor, &probe);
    }
    return probe == NULL;
}

/* Placeholders read but not parameters; parameters that are inlined. */
static int check_params(sops *o)
{
    tex_schedule *s = o->lw->sch;
    for (int pi = 0; pi < s->n_stages; pi++) {
        tex_stage *p = s->stages[pi];
        if (is_compute(p)) {
            if (p->attach == TEXI_ATTACH_INLINE && texi_so_is_param(o, p->tensor))
                return texi_error(o->ctx, TEX_EINVAL,
                                  "tex_lower: tensor '%s' is a parameter but its stage is inlined",
                                  p->tensor->name);
            continue;
        }
        if (texi_so_is_param(o, p->tensor))
            continue;
        for (int ci = 0; ci < s->n_stages; ci++) {
            tex_stage *c = s->stages[ci];
            if (is_compute(c) && c->attach != TEXI_ATTACH_INLINE &&
                body_reads(o->b.st[ci].body, p->tensor))
                return texi_error(o->ctx, TEX_EINVAL,
                                  "tex_lower: tensor '%s' is read but is not a parameter",
                                  p->tensor->name);
        }
    }
    return 0;
}

/* A ragged root (a sparse position axis, tensor.c) stays one leaf, inside
 * every leaf of the data-parallel axes its extent reads. */
static int check_ragged(sops *o, const stage_emit *se, int r)
{
    const tex_stage *st = se->st;
    const tex_iter *rg = st->root[r];
    int at = -1;
    for (int k = 0; k < st->n_leaf; k++)
        if (st->leaf[k] == rg)
            at = k;
    if (at < 0)
        return texi_error(o->ctx, TEX_EINVAL,
                          "tex_lower: stage '%s', axis '%s': a sparse position axis cannot be "
                          "split or fused",
                          st->tensor->name, rg->name);
    for (int d = 0; d < st->op->n_axes; d++) {
        if (!texi_expr_uses_var(rg->extent, st->root[d]->var))
            continue;
        for (int k = at; k < st->n_leaf; k++)
            if (texi_bounds_derives_from(st, texi_so_leaf_all(st, k),
                                         texi_bounds_iter_index(st, st->root[d])))
                return texi_error(o->ctx, TEX_EINVAL,
                                  "tex_lower: stage '%s', axis '%s': a sparse position axis must "
                                  "stay inside axis '%s', which its extent reads",
                                  st->tensor->name, rg->name, st->root[d]->name);
    }
    return 0;
}

/* Illegal tails and reductions that cannot be decomposed, ragged axes out
 * of place. */
static int check_stage(sops *o, const stage_emit *se)
{
    const tex_stage *st = se->st;
    if (se->sb->bad_rel >= 0) {
        const texi_relation *rel = &st->rel[se->sb->bad_rel];
        return texi_error(o->ctx, TEX_EINVAL,
                          "tex_lower: stage '%s', axis '%s': tail strategy ROUND_UP is illegal "
                          "here (it needs an intermediate stage, a data axis, and reads that stay "
                          "inside their tensors' shapes)",
                          st->tensor->name, rel->parent->name);
    }
    for (int r = 0; r < st->n_rel; r++)
        if (se->sb->tail[r] == TEX_TAIL_SHIFT_INWARDS && se->is_reduce)
            return texi_error(o->ctx, TEX_EINVAL,
                              "tex_lower: stage '%s', axis '%s': tail strategy SHIFT_INWARDS "
                              "needs a pure data-parallel stage, but the stage is a reduction",
                              st->tensor->name, st->rel[r].parent->name);
    for (int k = 0; k < st->n_leaf; k++)
        for (int j = 0; j < k; j++) {
            const texi_iter_attr *ak = &st->attr[texi_so_leaf_all(st, k)],
                                 *aj = &st->attr[texi_so_leaf_all(st, j)];
            if (ak->for_kind == TEXI_FOR_THREAD && aj->for_kind == TEXI_FOR_THREAD &&
                ak->thread_tag == aj->thread_tag)
                return texi_error(o->ctx, TEX_EINVAL,
                                  "tex_lower: stage '%s' binds axes '%s' and '%s' to the same "
                                  "thread index",
                                  st->tensor->name, st->leaf[j]->name, st->leaf[k]->name);
        }
    for (int r = 0; r < st->n_root; r++)
        if (texi_iter_is_ragged(st->root[r]))
            TEXI_TRY(check_ragged(o, se, r));
    TEXI_TRY(texi_so_check_prefetch(o, st));
    for (int k = 0; k < st->n_leaf; k++) {
        if (!se->red_leaf[k])
            continue;
        for (int r = 0; r < st->op->n_axes; r++)
            if (texi_bounds_derives_from(st, texi_so_leaf_all(st, k),
                                         texi_bounds_iter_index(st, st->root[r])))
                return texi_error(o->ctx, TEX_EINVAL,
                                  "tex_lower: stage '%s', axis '%s' mixes data axis '%s' with a "
                                  "reduction axis",
                                  st->tensor->name, st->leaf[k]->name, st->root[r]->name);
    }
    return 0;
}

/* ------------------------------------------------------------- setup */

/* Leaf offsets: the loop variable; 0 for a leaf of extent 1 that is not
 * bound to a thread (no loop: "no dead loops of extent 1"); or the variable
 * of an enclosing loop bound to the same thread tag. */
static int setup_leaf(sops *o, stage_emit *se, int k)
{
    const tex_stage *st = se->st;
    int a = texi_so_leaf_all(st, k);
    const texi_iter_attr *at = &st->attr[a];
    tex_expr *ext = texi_so_env_expr(o, st->range[a].extent), *var = se->sb->var[a];
    se->off[k] = var;
    if (!ext)
        return TEX_ENOMEM;
    if (at->for_kind != TEXI_FOR_THREAD &&
        texi_prove(ARITH(EQ, ext, imm(o->ctx, ext->dtype, 1)), o->n_env, o->env)) {
        se->no_loop[k] = true;
        se->off[k] = imm(o->ctx, var->dtype, 0);
        return push_sub(o, var, se->off[k]);
    }
    if (at->for_kind != TEXI_FOR_THREAD || at->thread_tag < 0 || at->thread_tag >= N_TAGS ||
        !o->tag_var[at->thread_tag])
        return 0;
    int tag = at->thread_tag;
    se->no_loop[k] = true;
    se->off[k] = o->tag_var[tag];
    if (texi_prove(ARITH(EQ, ext, o->tag_ext[tag]), o->n_env, o->env))
        return push_sub(o, se->sb->var[a], o->tag_var[tag]);
    if (!texi_prove(ARITH(LE, ext, o->tag_ext[tag]), o->n_env, o->env))
        return texi_error(o->ctx, TEX_EINVAL,
                          "tex_lower: stage '%s' binds axis '%s' to a thread index whose extent "
                          "(set by an enclosing loop) may be smaller than the axis's",
                          st->tensor->name, st->leaf[k]->name);
    se->leaf_guard = and_also(se->leaf_guard, ARITH(LT, o->tag_var[tag], ext));
    return push_sub(o, se->sb->var[a], o->tag_var[tag]);
}

static int setup_stage(sops *o, int si, stage_emit *se)
{
    tex_stage *st = o->lw->sch->stages[si];
    int n = st->n_leaf;
    *se = (stage_emit){.si = si,
                       .st = st,
                       .sb = &o->b.st[si],
                       .first_reduce = n,
                       .is_reduce = st->op->body->kind == TEXI_EXPR_REDUCE,
                       .tz = -1};
    se->off = texi_alloc(o->ctx, sizeof *se->off * (size_t)(n + 1), "schedule_ops");
    se->no_loop = texi_alloc(o->ctx, sizeof *se->no_loop * (size_t)(n + 1), "schedule_ops");
    se->red_leaf = texi_alloc(o->ctx, sizeof *se->red_leaf * (size_t)(n + 1), "schedule_ops");
    if (!se->off || !se->no_loop || !se->red_leaf)
        return TEX_ENOMEM;
    for (int k = 0; k < n; k++) {
        for (int r = st->op->n_axes; r < st->n_root && !se->red_leaf[k]; r++)
            se->red_leaf[k] = texi_bounds_derives_from(st, texi_so_leaf_all(st, k),
                                                       texi_bounds_iter_index(st, st->root[r]));
        if (se->red_leaf[k] && se->first_reduce == n)
            se->first_reduce = k;
    }
    TEXI_TRY(check_stage(o, se));
    for (int k = 0; k < n; k++)
        TEXI_TRY(setup_leaf(o, se, k));
    return 0;
}

/* ------------------------------------------------------------- bodies */

/*
 * Statement bodies:
 *   - Guards: one IF around the innermost statement whose condition is a
 *     conjunction (&&) of `value < bound` comparisons (rarely `value >= min`)
 *     that are not provable over the enclosing loops: for every split with a
 *     guarded tail, its parent's value against the parent's range (inner
 *     splits too: an overshooting inner part would repeat the next tile's
 *     values), and every root value whose inferred range may leave the axis's
 *     domain (the last tile of an attached producer) against the domain. A
 *     reduction's init nest gets the data conditions only. Tails (resolved by
 *     bound inference):
 *     GUARD guards; PREDICATE guards, and when the split's inner loop is
 *     vectorized the IF is wrapped in ATTR "predicate" for the vectorizer;
 *     ROUND_UP emits no guard for that axis (illegal ones are rejected here);
 *     SHIFT_INWARDS computes outer*f + inner as min(outer*f, E - f) + inner, and
 *     when E >= f is not provable the stage's nest is wrapped in
 *     ATTR "assert" (value: E >= f), which the runtime checks (the
 *     entry_checks pass moves it to the top of the function).
 *   - Reductions (TVM's decompose_reduction): the leaves before the first
 *     one derived from a reduce axis are common loops; inside them come an
 *     init nest (loops over the remaining data leaves, fresh variables named
 *     "<iter>.init", T[..] = identity) and the update nest (all remaining
 *     leaves, T[..] = T[..] op body, op: sum add, prod mul, max max, min min)
 *     whose where-condition is an IF inside the guards.
 *   - Atomic stages (tex_atomic): the init nest comes before the whole
 *     nest (level 0), and the update PROVIDE sits in ATTR "atomic" whose
 *     value is the reduction's op (enum texi_reduce_op as an i32 INT): the
 *     backends emit it as one atomic read-modify-write; everything else may
 *     treat the ATTR as transparent.
 */

/* Values of every iter of the stage from leaf offsets off[0..n_leaf). */
tex_expr **texi_so_values(sops *o, const stage_emit *se, tex_expr **off)
{
    const tex_stage *st = se->st;
    tex_expr **val = texi_alloc(o->ctx, sizeof *val * (size_t)(st->n_all + 1), "schedule_ops");
    if (!val)
        return NULL;
    for (int k = 0; k < st->n_leaf; k++)
        val[texi_so_leaf_all(st, k)] = off[k];
    if (texi_bounds_pass_up(&o->b, se->si, val) < 0)
        return NULL;
    for (int k = 0; k < st->n_root; k++) {
        int a = texi_bounds_iter_index(st, st->root[k]);
        if (!(val[a] = texi_so_env_expr(o, val[a])))
            return NULL;
    }
    return val;
}

/* Adds `c` to *conds unless it is provable over the enclosing loops or already there. */
static int add_guard(sops *o, tex_expr **conds, tex_expr *c)
{
    c = texi_so_env_expr(o, c);
    if (!c)
        return TEX_ENOMEM;
    if (texi_prove(c, o->n_env, o->env))
        return 0;
    for (tex_expr *e = *conds; e; e = e->kind == TEXI_EXPR_AND ? e->u.bin.a : NULL)
        if (texi_expr_equal(e->kind == TEXI_EXPR_AND ? e->u.bin.b : e, c))
            return 0;
    *conds = and_also(*conds, c);
    return *conds ? 0 : TEX_ENOMEM;
}

/* Whether iter a of the stage derives from one of its reduce axes. */
static bool reduce_iter(const tex_stage *st, int a)
{
    for (int r = st->op->n_axes; r < st->n_root; r++)
        if (texi_bounds_derives_from(st, a, texi_bounds_iter_index(st, st->root[r])))
            return true;
    return false;
}

/* The guard of the values val (of data iters only unless with_reduce):
 *   - every GUARD/PREDICATE split: parent value < its range's end, the only
 *     way a value passes its range (a split's inner part overshooting would
 *     otherwise repeat the next tile's first values; values never fall below
 *     a range's min; fuses are exact; SHIFT_INWARDS stays inside given its
 *     assert; ROUND_UP overshoots on purpose);
 *   - every root whose range may leave the axis's domain (the last tile of an
 *     attached producer): value inside the domain.
 * Provable conditions are dropped. */
static int root_guards(sops *o, const stage_emit *se, tex_expr **val, bool with_reduce,
                       tex_expr **conds)
{
    const tex_stage *st = se->st;
    *conds = NULL;
    for (int r = 0; r < st->n_rel; r++) {
        int p = texi_bounds_iter_index(st, st->rel[r].parent);
        bool guard = se->sb->tail[r] == TEX_TAIL_GUARD || se->sb->tail[r] == TEX_TAIL_PREDICATE;
        if (st->rel[r].kind == TEXI_REL_SPLIT && guard && (with_reduce || !reduce_iter(st, p)))
            TEXI_TRY(add_guard(
                o, conds, ARITH(LT, val[p], ARITH(ADD, st->range[p].min, st->range[p].extent))));
    }
    int n = with_reduce ? st->n_root : st->op->n_axes;
    for (int k = 0; k < n; k++) {
        const tex_iter *iv = st->root[k];
        int a = texi_bounds_iter_index(st, iv);
        if (texi_bounds_rounds_up(&o->b, se->si, a))
            continue;
        tex_expr *v = val[a], *dom_end = ARITH(ADD, iv->min, iv->extent);
        tex_expr *rng_end = ARITH(ADD, st->range[a].min, st->range[a].extent);
        tex_expr *inside =
            ARITH(AND, ARITH(GE, st->range[a].min, iv->min), ARITH(LE, rng_end, dom_end));
        if (!inside || (inside = texi_so_env_expr(o, inside)) == NULL)
            return TEX_ENOMEM;
        if (texi_prove(inside, o->n_env, o->env))
            continue;
        TEXI_TRY(add_guard(o, conds, ARITH(LT, v, dom_end)));
        TEXI_TRY(add_guard(o, conds, ARITH(GE, v, iv->min)));
    }
    if (se->leaf_guard)
        TEXI_TRY(add_guard(o, conds, se->leaf_guard));
    return 0;
}

/* Whether a PREDICATE split of the stage has a vectorized inner loop. */
static bool predicated(const stage_emit *se)
{
    const tex_stage *st = se->st;
    for (int r = 0; r < st->n_rel; r++) {
        if (se->sb->tail[r] != TEX_TAIL_PREDICATE)
            continue;
        int i = texi_bounds_iter_index(st, st->rel[r].inner);
        if (i >= 0 && st->attr[i].for_kind == TEXI_FOR_VECTORIZED)
            return true;
    }
    return false;
}

static tex_stmt *guarded(sops *o, const stage_emit *se, tex_expr *conds, tex_stmt *s)
{
    if (!conds || !s)
        return s;
    s = texi_if_new(o->ctx, conds, s, NULL);
    return s && predicated(se) ? texi_attr_named(o->ctx, TEXI_ATTR_PREDICATE, NULL, s) : s;
}

/* The data indices T[..] of the stage's output from the values; a scatter
 * part (ir/scatter.c) stores row r at its rows[r]. */
tex_expr **texi_so_out_index(sops *o, const stage_emit *se, tex_expr **val)
{
    const tex_stage *st = se->st;
    int nd = st->op->n_axes;
    tex_expr **idx = texi_alloc(o->ctx, sizeof *idx * (size_t)(nd + 1), "schedule_ops");
    for (int d = 0; idx && d < nd; d++)
        idx[d] = val[texi_bounds_iter_index(st, st->root[d])];
    if (idx && st->op->scatter_rows && !(idx[0] = texi_access_new(st->op->scatter_rows, 1, idx)))
        return NULL;
    return idx;
}

/* The tensor the stage's stores go to: its own, or a scatter part's group's. */
tex_tensor *texi_so_out_tensor(const tex_stage *st)
{
    return st->op->scatter_into ? st->op->scatter_into : st->tensor;
}

/* e with the root variables replaced by their values. */
tex_expr *texi_so_bind_roots(sops *o, const stage_emit *se, tex_expr **val, tex_expr *e)
{
    const tex_stage *st = se->st;
    tex_expr **vars = texi_alloc(o->ctx, sizeof *vars * (size_t)(st->n_root + 1), "schedule_ops");
    tex_expr **vals = texi_alloc(o->ctx, sizeof *vals * (size_t)(st->n_root + 1), "schedule_ops");
    if (!vars || !vals || !e)
        return NULL;
    for (int k = 0; k < st->n_root; k++) {
        vars[k] = st->root[k]->var;
        vals[k] = val[texi_bounds_iter_index(st, st->root[k])];
    }
    return texi_substitute(e, st->n_root, vars, vals);
}

static enum texi_expr_kind combiner(enum texi_reduce_op op)
{
    switch (op) {
    case TEXI_REDUCE_SUM:
        return TEXI_EXPR_ADD;
    case TEXI_REDUCE_PROD:
        return TEXI_EXPR_MUL;
    case TEXI_REDUCE_MAX:
        return TEXI_EXPR_MAX;
    case TEXI_REDUCE_MIN:
    case TEXI_REDUCE_COUNT:
        break;
    }
    return TEXI_EXPR_MIN;
}

/* The innermost statement: PROVIDE of the value, or the reduction's update. */
static int build_body(sops *o, const stage_emit *se, tex_stmt **out)
{
    const tex_stage *st = se->st;
    tex_tensor *t = texi_so_out_tensor(st);
    tex_expr *body = se->sb->body, **val = texi_so_values(o, se, se->off), *conds;
    tex_expr **idx = val ? texi_so_out_index(o, se, val) : NULL;
    if (!idx)
        return TEX_ENOMEM;
    TEXI_TRY(root_guards(o, se, val, true, &conds));
    tex_stmt *s;
    if (body->kind != TEXI_EXPR_REDUCE) {
        tex_expr *v = texi_convert(texi_so_bind_roots(o, se, val, body), t->dtype);
        s = v ? texi_provide_new(o->ctx, t, st->op->n_axes, idx, v) : NULL;
    } else {
        tex_expr *acc = texi_access_new(t, st->op->n_axes, idx);
        tex_expr *v = texi_convert(texi_so_bind_roots(o, se, val, body->u.red.body), t->dtype);
        tex_expr *upd = acc && v ? texi_binary(combiner(body->u.red.op), acc, v) : NULL;
        s = upd ? texi_provide_new(o->ctx, t, st->op->n_axes, idx, upd) : NULL;
        if (s && st->atomic)
            s = texi_attr_named(o->ctx, TEXI_ATTR_ATOMIC, imm(o->ctx, TEX_I32, body->u.red.op), s);
        if (s && body->u.red.cond) {
            tex_expr *c = texi_so_bind_roots(o, se, val, body->u.red.cond);
            s = c ? texi_if_new(o->ctx, c, s, NULL) : NULL;
        }
    }
    *out = guarded(o, se, conds, s);
    return *out ? 0 : TEX_ENOMEM;
}

/* ------------------------------------------------------------- loops */

/*
 * Nests and loops:
 *   - Every computed stage that is not inlined gets one nest, emitted once:
 *     stages at root in s->stages order (producers first); a stage computed at
 *     (C, iv) at the start of the body of C's loop over iv, before C's inner
 *     loops, in stage order. Its leaf loops, outer to inner, are
 *     FOR v in [0, range.extent) over the variables of bound inference
 *     (bound.h), with for_kind/thread_tag from the stage's attributes; a leaf
 *     of extent 1 not bound to a thread gets no loop (its value is 0). Root
 *     values are PassUp of the loop variables plus the root range's min and
 *     are substituted into the body (inlined stages already substituted).
 *   - Intermediates are REALIZEd over their inferred region: those at root
 *     around the whole body (first stage outermost), attached ones around
 *     (their nest; the rest of the consumer's loop body). Function parameters
 *     (outputs included) are the params' buffers: no REALIZE, and bound
 *     inference computes them over their whole domain.
 *   - Thread binding: a leaf bound to a thread tag that an enclosing loop
 *     already binds (cooperative fetching into shared memory) gets no loop of
 *     its own: it runs on the enclosing loop's variable (a smaller extent is
 *     guarded; a larger one is an error), as in TVM where both stages use
 *     the same threadIdx.
 *   - A reduce leaf bound to a thread (a requested cross-thread reduction)
 *     is emitted as a FOR THREAD loop around the serial update, wrapped in
 *     ATTR "cross_thread_reduction". This is correct for the interpreter
 *     (threads of a block run one after another between barriers) but would
 *     race on a GPU; for CUDA the thread_allreduce pass replaces it by a
 *     real allreduce.
 */

/* Whether the values val of the roots that e reads lie in their ranges:
 * a ragged extent reads its parents' positions (indptr[q + 1] - indptr[q]),
 * and in the tail of a split parent those may be past the end, where the
 * loop must not run and its extent must not be read. */
static tex_expr *roots_inside(sops *o, const stage_emit *se, tex_expr **val, tex_expr *e)
{
    const tex_stage *st = se->st;
    tex_expr *all = texi_int_imm(o->ctx, TEX_BOOL, 1);
    for (int k = 0; all && k < st->n_root; k++) {
        const tex_iter *r = st->root[k];
        if (texi_iter_is_ragged(r) || !texi_expr_uses_var(e, r->var))
            continue;
        tex_expr *v = val[texi_bounds_iter_index(st, r)];
        tex_expr *end = texi_binary(TEXI_EXPR_ADD, r->min, r->extent);
        tex_expr *in = end ? texi_binary(TEXI_EXPR_AND, texi_binary(TEXI_EXPR_GE, v, r->min),
                                         texi_binary(TEXI_EXPR_LT, v, end))
                           : NULL;
        all = in ? texi_binary(TEXI_EXPR_AND, all, in) : NULL;
    }
    return all;
}

/* The extent of leaf m's loop given leaf offsets off. A ragged axis (a
 * sparse iteration's position axis, whose extent reads the axes outside it)
 * gets those axes' values over the enclosing loops. */
tex_expr *texi_so_leaf_extent(sops *o, const stage_emit *se, tex_expr **off, int m)
{
    tex_expr *ext = se->st->range[texi_so_leaf_all(se->st, m)].extent;
    if (ext && texi_iter_is_ragged(se->st->leaf[m])) {
        tex_expr **val = texi_so_values(o, se, off);
        tex_expr *bound = val ? texi_so_bind_roots(o, se, val, ext) : NULL;
        tex_expr *inside = val ? roots_inside(o, se, val, ext) : NULL;
        ext = !bound || !inside ? NULL
              : texi_prove(inside, o->n_env, o->env)
                  ? bound
                  : texi_select_new(inside, bound, imm(o->ctx, bound->dtype, 0));
    }
    return texi_so_env_expr(o, ext);
}

static tex_stmt *make_loop(sops *o, const stage_emit *se, tex_expr **off, int m, tex_stmt *body)
{
    tex_expr *var = off[m];
    const texi_iter_attr *at = &se->st->attr[texi_so_leaf_all(se->st, m)];
    tex_expr *ext = texi_convert(texi_so_leaf_extent(o, se, off, m), var->dtype);
    if (!ext || !body)
        return NULL;
    int tag = at->for_kind == TEXI_FOR_THREAD ? at->thread_tag : -1;
    return texi_for_new(o->ctx, var, imm(o->ctx, var->dtype, 0), ext, at->for_kind, tag, body);
}

/* ------------------------------------------------------------- tensorize */

/*
 * Tensorized stages:
 *   - Tensorize (tex_tensorize at leaf tz): setup matches the nest under tz
 *     against the intrinsic (tensorize_match.c), which gives each tile's
 *     origin over the outer loop variables. At level tz the nest becomes
 *     INTRIN calls: BODY, or RESET then UPDATE when the intrinsic has no body
 *     and the whole reduction is inside; when a reduce leaf is outside tz,
 *     the init nest's copy of the tile is RESET and the update's is UPDATE.
 *     A tile is whole when the guards hold at its first and last points
 *     (guards are monotone in the leaf offsets); unless that is provable the
 *     call sits in IF (whole) ELSE (the ordinary nest, built with
 *     sops.fallback set so it is not tensorized again).
 *   - Depth of a CPU GEMM built-in (src/schedule/intrin_cpu.c, "Any K"):
 *     when the nest's one reduce leaf has a constant extent E, the calls
 *     go to the built-in's depth-E instance. When that leaf is the inner
 *     part of a split of the stage's only reduce axis, of constant extent
 *     K with K % E != 0, a tile that is whole but for the reduction and
 *     starts at K - K % E calls the depth-(K % E) instance: IF (whole)
 *     call ELSE IF (data whole && k origin == K - K % E) tail call ELSE
 *     the ordinary nest. Likewise for the rows: when the nest's first data
 *     leaf (MR rows) is the inner part of a split of a data axis of
 *     constant extent M with M % MR != 0, a tile whole but for that leaf,
 *     starting at M - M % MR and holding M % MR rows (not cut short by the
 *     region of a stage computed at another: a local tile of 20 rows)
 *     calls the (M % MR)-row instance. And the
 *     columns: when the tile's last data leaf (NR columns) runs along a
 *     data axis of constant extent N with N % NR = c != 0, a tile whose
 *     guards hold at its column c - 1 and fail at its column c (whole but
 *     for the columns, or also the M tail) calls the c-column instance.
 */

/* A stage attached at leaf k of st. */
static const tex_stage *attached_at(const sops *o, const tex_stage *st, int k)
{
    tex_schedule *s = o->lw->sch;
    for (int ti = 0; ti < s->n_stages; ti++)
        if (s->stages[ti]->attach == TEXI_ATTACH_AT && s->stages[ti]->attach_stage == st &&
            s->stages[ti]->attach_iv == st->leaf[k])
            return s->stages[ti];
    return NULL;
}

/* What the nest under tz may not contain; the intrinsic's functions. */
static int check_tensorize(sops *o, const stage_emit *se)
{
    const tex_stage *st = se->st;
    const char *name = st->tensor->name, *in = se->tz_intrin->name;
    for (int k = se->tz; k < st->n_leaf; k++) {
        const tex_stage *at = attached_at(o, st, k);
        if (st->attr[texi_so_leaf_all(st, k)].for_kind == TEXI_FOR_THREAD)
            return texi_error(o->ctx, TEX_EINVAL,
                              "tex_lower: stage '%s', tensorize with intrinsic '%s': axis '%s' "
                              "inside the tensorized nest is bound to a thread index",
                              name, in, st->leaf[k]->name);
        if (at)
            return texi_error(o->ctx, TEX_EINVAL,
                              "tex_lower: stage '%s', tensorize with intrinsic '%s': stage '%s' "
                              "is computed at axis '%s' inside the tensorized nest",
                              name, in, at->tensor->name, st->leaf[k]->name);
    }
    return 0;
}

/* After matching: a reduction split around the tile needs reset and update. */
static int check_split_reduction(sops *o, const stage_emit *se)
{
    const tex_stage *st = se->st;
    if (!se->is_reduce || se->first_reduce >= se->tz || se->tz_intrin->fn[TEXI_INTRIN_UPDATE])
        return 0;
    return texi_error(o->ctx, TEX_EINVAL,
                      "tex_lower: stage '%s', tensorize at axis '%s' with intrinsic '%s': "
                      "reduction axis '%s' is outside the tensorized nest, which needs the "
                      "intrinsic's reset and update functions (it has only a body)",
                      st->tensor->name, st->leaf[se->tz]->name, se->tz_intrin->name,
                      st->leaf[se->first_reduce]->name);
}

/* The one reduce leaf from tz inward, or -1 (none, or several). */
static int tile_reduce_leaf(const stage_emit *se)
{
    int r = -1;
    for (int k = se->tz; k < se->st->n_leaf; k++)
        if (se->red_leaf[k]) {
            if (r >= 0)
                return -1;
            r = k;
        }
    return r;
}

/* The first data leaf from the tensorized one inward (the rows of a CPU
 * GEMM built-in's tile), or st->n_leaf. */
static int tile_rows_leaf(const stage_emit *se)
{
    int d = se->tz;
    while (d < se->st->n_leaf && se->red_leaf[d])
        d++;
    return d;
}

/* The last data leaf from the tensorized one inward (the columns of a CPU
 * GEMM built-in's tile). */
static int tile_cols_leaf(const stage_emit *se)
{
    int c = se->st->n_leaf - 1;
    while (c > se->tz && se->red_leaf[c])
        c--;
    return c;
}

/* For a CPU GEMM built-in: se->tz_intrin becomes the instance of the depth
 * of the tile's reduce leaf r (constant extent), of the rows of its first
 * data leaf when that has a constant extent of at most the built-in's most
 * rows (a row split by 4 runs the 4-row micro-kernel, a 7-pixel row the
 * 7-row one on AVX-512), and of the columns of its last data leaf when
 * that has a constant extent below NR (a GEMM of fewer columns). ext: the
 * extents of the leaves from se->tz. */
static int pick_shape(sops *o, stage_emit *se, int r, tex_expr *const *ext)
{
    int64_t kr = texi_intrin_cpu_depth(se->tz_intrin), mr = texi_intrin_cpu_rows(se->tz_intrin),
            nc = texi_intrin_cpu_cols(se->tz_intrin), e;
    int d = tile_rows_leaf(se), c = tile_cols_leaf(se);
    if (!kr)
        return 0;
    if (r >= 0 && texi_expr_is_int_const(ext[r - se->tz], &e))
        kr = e;
    if (d < se->st->n_leaf && texi_expr_is_int_const(ext[d - se->tz], &e) && e > 0 &&
        e <= texi_intrin_cpu_max_rows(se->tz_intrin->builtin))
        mr = e;
    if (c > d && c < se->st->n_leaf && texi_expr_is_int_const(ext[c - se->tz], &e) && e > 0 &&
        e < nc)
        nc = e;
    tex_intrin *in = texi_intrin_builtin_cpu_shape(o->ctx, se->tz_intrin, mr, nc, kr);
    if (!in)
        return TEX_ENOMEM;
    se->tz_intrin = in;
    return 0;
}

/* Whether leaf k of st is the inner part of a split of root axis a. */
static bool split_of(const tex_stage *st, int k, const tex_iter *a)
{
    for (int i = 0; i < st->n_rel; i++)
        if (st->rel[i].kind == TEXI_REL_SPLIT && st->rel[i].inner == st->leaf[k] &&
            st->rel[i].parent == a)
            return true;
    return false;
}

/* The tail of root axis `a` (constant extent, split with inner leaf k of
 * extent e, the whole-tile instance in se->tz_intrin) when e does not
 * divide the extent: the instance for its remainder (rows when k is a data
 * leaf, depth otherwise) and where it starts. Nothing otherwise. */
static int pick_tail(sops *o, stage_emit *se, tz_tail *t, int k, const tex_iter *a, int64_t e)
{
    int64_t x;
    if (k < 0 || !e || !texi_expr_is_int_const(a->extent, &x) || x % e == 0 ||
        !split_of(se->st, k, a))
        return 0;
    bool rows = !se->red_leaf[k];
    int64_t mr = texi_intrin_cpu_rows(se->tz_intrin), kr = texi_intrin_cpu_depth(se->tz_intrin);
    t->intrin =
        texi_intrin_builtin_cpu_shape(o->ctx, se->tz_intrin, rows ? x % e : mr,
                                      texi_intrin_cpu_cols(se->tz_intrin), rows ? kr : x % e);
    t->root = a;
    t->start = texi_int_imm(o->ctx, a->var->dtype, x - x % e);
    t->leaf = rows ? k : -1;
    return t->intrin && t->start ? 0 : TEX_ENOMEM;
}

/* The N tail (and the M and N corner) of the tiles (see the section
 * comment): the tile's last data leaf c, NR columns, is a data axis or the
 * inner part of a split of one, of constant extent N; nothing when NR
 * divides N. */
static int pick_col_tails(sops *o, stage_emit *se, const tex_expr *const *ext)
{
    const tex_stage *st = se->st;
    int c = tile_cols_leaf(se);
    int64_t nr = texi_intrin_cpu_cols(se->tz_intrin), e, n = 0;
    if (c == tile_rows_leaf(se) || !texi_expr_is_int_const(ext[c - se->tz], &e) || e != nr)
        return 0;
    for (int a = 0; a < st->op->n_axes && !n; a++)
        if (st->leaf[c] == st->op->axes[a] || split_of(st, c, st->op->axes[a]))
            texi_expr_is_int_const(st->op->axes[a]->extent, &n);
    if (n <= 0 || n % nr == 0)
        return 0;
    int64_t mr = texi_intrin_cpu_rows(se->tz_intrin), kr = texi_intrin_cpu_depth(se->tz_intrin);
    se->tails[2] =
        (tz_tail){.intrin = texi_intrin_builtin_cpu_shape(o->ctx, se->tz_intrin, mr, n % nr, kr),
                  .leaf = -1,
                  .cols = n % nr,
                  .col_leaf = c};
    if (!se->tails[2].intrin)
        return TEX_ENOMEM;
    const tz_tail *m = &se->tails[1];
    if (!m->intrin)
        return 0;
    se->tails[3] =
        (tz_tail){.intrin = texi_intrin_builtin_cpu_shape(
                      o->ctx, se->tz_intrin, texi_intrin_cpu_rows(m->intrin), n % nr, kr),
                  .root = m->root,
                  .start = m->start,
                  .leaf = m->leaf,
                  .cols = n % nr,
                  .col_leaf = c};
    return se->tails[3].intrin ? 0 : TEX_ENOMEM;
}

/* The tails of a CPU GEMM built-in's tiles (r: the tile's reduce leaf; ext:
 * the extents of the leaves from se->tz). */
static int pick_tails(sops *o, stage_emit *se, int r, const tex_expr *const *ext)
{
    const tex_stage *st = se->st;
    if (!texi_intrin_cpu_depth(se->tz_intrin))
        return 0;
    if (r >= 0 && st->op->n_raxes == 1)
        TEXI_TRY(pick_tail(o, se, &se->tails[0], r, st->op->raxes[0],
                           texi_intrin_cpu_depth(se->tz_intrin)));
    int d = tile_rows_leaf(se);
    for (int a = 0; d < st->n_leaf && a < st->op->n_axes && !se->tails[1].intrin; a++)
        TEXI_TRY(pick_tail(o, se, &se->tails[1], d, st->op->axes[a],
                           texi_intrin_cpu_rows(se->tz_intrin)));
    return pick_col_tails(o, se, ext);
}

/* Matches the nest under the tensorized leaf (tensorize_match.c); fills
 * se->tz, tz_args and tz_last. Nothing when the stage is not tensorized. */
static int setup_tensorize(sops *o, stage_emit *se)
{
    tex_stage *st = se->st;
    if (!st->tensorize_iv)
        return 0;
    se->tz = texi_stage_leaf_index(st, st->tensorize_iv);
    if (se->tz < 0)
        return texi_error(o->ctx, TEX_EINVAL,
                          "tex_lower: stage '%s' is tensorized at axis '%s', which is no longer "
                          "a leaf axis (it was split or fused afterwards)",
                          st->tensor->name, st->tensorize_iv->name);
    se->tz_intrin = st->intrin;
    TEXI_TRY(check_tensorize(o, se));
    int ni = st->n_leaf - se->tz, n_env0 = o->n_env;
    tex_expr **ext = texi_alloc(o->ctx, sizeof *ext * (size_t)ni, "schedule_ops");
    se->tz_last = texi_alloc(o->ctx, sizeof *ext * (size_t)ni, "schedule_ops");
    se->tz_args = texi_alloc(o->ctx, sizeof *se->tz_args * (size_t)(st->intrin->n_inputs + 1),
                             "schedule_ops");
    if (!ext || !se->tz_last || !se->tz_args)
        return TEX_ENOMEM;
    for (int k = 0; k < ni; k++) {
        tex_expr *var = se->off[se->tz + k];
        if (!(ext[k] = texi_so_env_expr(o, st->range[texi_so_leaf_all(st, se->tz + k)].extent)))
            return TEX_ENOMEM;
        se->tz_last[k] = ARITH(SUB, ext[k], imm(o->ctx, ext[k]->dtype, 1));
        if (!se->tz_last[k] || !(se->tz_last[k] = texi_convert(se->tz_last[k], var->dtype)))
            return TEX_ENOMEM;
        if (!se->no_loop[se->tz + k])
            TEXI_TRY(push_env(o, var, ext[k]));
    }
    int r = tile_reduce_leaf(se);
    TEXI_TRY(pick_shape(o, se, r, ext));
    TEXI_TRY(pick_tails(o, se, r, (const tex_expr *const *)ext));
    tex_expr **val = texi_so_values(o, se, se->off);
    texi_tz_nest nest = {.st = st, .intrin = se->tz_intrin, .n_inner = ni};
    nest.body = val ? texi_so_bind_roots(o, se, val, se->sb->body) : NULL;
    nest.out_idx = val ? texi_so_out_index(o, se, val) : NULL;
    nest.leaf = st->leaf + se->tz;
    nest.var = se->off + se->tz;
    nest.extent = ext;
    nest.n_env = o->n_env;
    nest.env = o->env;
    int rc = nest.body && nest.out_idx ? texi_tz_match(o->ctx, &nest, se->tz_args) : TEX_ENOMEM;
    o->n_env = n_env0;
    return rc < 0 ? rc : check_split_reduction(o, se);
}

/* "The tile is whole": the stage's guards at the tile's first and last
 * points (leaves from tz at 0, then at extent - 1; reduce leaves only
 * with_reduce), over the enclosing loops; NULL when provably whole. For
 * tail t (NULL: none), its partial leaves' last points are its last row
 * and column instead: the tile holds at least t's rows and columns. */
static int tile_cond(sops *o, const stage_emit *se, tex_expr **off, bool with_reduce,
                     const tz_tail *t, tex_expr **cond)
{
    const tex_stage *st = se->st;
    tex_expr **pt = texi_alloc(o->ctx, sizeof *pt * (size_t)(st->n_leaf + 1), "schedule_ops");
    if (!pt)
        return TEX_ENOMEM;
    *cond = NULL;
    for (int last = 0; last < 2; last++) {
        for (int k = 0; k < st->n_leaf; k++) {
            bool inner = k >= se->tz && (with_reduce || !se->red_leaf[k]);
            int64_t lim = !t                            ? -1
                          : k == t->leaf                ? texi_intrin_cpu_rows(t->intrin) - 1
                          : t->cols && k == t->col_leaf ? t->cols - 1
                                                        : -1;
            pt[k] = !inner     ? off[k]
                    : !last    ? imm(o->ctx, off[k]->dtype, 0)
                    : lim >= 0 ? imm(o->ctx, off[k]->dtype, lim)
                               : se->tz_last[k - se->tz];
        }
        tex_expr **val = texi_so_values(o, se, pt), *c;
        if (!val)
            return TEX_ENOMEM;
        TEXI_TRY(root_guards(o, se, val, with_reduce, &c));
        if (c && !(*cond = and_also(*cond, c)))
            return TEX_ENOMEM;
    }
    return 0;
}

/* A call of in's function fn on the stage's tiles (RESET: the output's). */
static tex_stmt *intrin_call(sops *o, tex_intrin *in, enum texi_intrin_fn fn, texi_intrin_arg *args)
{
    int n = in->n_inputs;
    if (fn == TEXI_INTRIN_RESET)
        return texi_intrin_new(o->ctx, in, fn, 1, &args[n]);
    return texi_intrin_new(o->ctx, in, fn, n + 1, args);
}

/* The init nest's tile at leaf tz (offsets off): IF (whole) RESET ELSE s. */
static tex_stmt *reset_tile(sops *o, const stage_emit *se, tex_expr **off, tex_stmt *s)
{
    const tex_stage *st = se->st;
    int n_in = st->intrin->n_inputs;
    tex_expr **org = texi_alloc(o->ctx, sizeof *org * (size_t)(st->n_leaf + 1), "schedule_ops");
    texi_intrin_arg *args = texi_alloc(o->ctx, sizeof *args * (size_t)(n_in + 1), "schedule_ops");
    tex_expr *cond;
    if (!s || !org || !args || tile_cond(o, se, off, false, NULL, &cond) < 0)
        return NULL;
    for (int k = 0; k < st->n_leaf; k++)
        org[k] = k < se->tz ? off[k] : imm(o->ctx, off[k]->dtype, 0);
    tex_expr **val = texi_so_values(o, se, org);
    args[n_in] = se->tz_args[n_in];
    if (!val || !(args[n_in].mins = texi_so_out_index(o, se, val)))
        return NULL;
    tex_stmt *call = intrin_call(o, se->tz_intrin, TEXI_INTRIN_RESET, args);
    return cond && call ? texi_if_new(o->ctx, cond, call, s) : call;
}

/* The calls of `in` for one tile at level tz: UPDATE after the init nest,
 * else BODY, else RESET then UPDATE; an UPDATE whose tiles may be padding
 * under ATTR "zero_skip" (tensorize_skip.c). */
static tex_stmt *tile_calls(sops *o, const stage_emit *se, tex_intrin *in, bool after_init)
{
    if (!after_init && in->fn[TEXI_INTRIN_BODY])
        return intrin_call(o, in, TEXI_INTRIN_BODY, se->tz_args);
    tex_stmt *update = intrin_call(o, in, TEXI_INTRIN_UPDATE, se->tz_args);
    if (texi_tz_skip_zero_tiles(o->ctx, in, se->tz_args, o->n_env, o->env, &update) < 0)
        return NULL;
    if (after_init)
        return update;
    tex_stmt *two[2] = {intrin_call(o, in, TEXI_INTRIN_RESET, se->tz_args), update};
    return two[0] && two[1] ? texi_seq_new(o->ctx, 2, two) : NULL;
}

/* Whether the tile has exactly t->cols columns: NOT (the guards of the
 * data at its first point with the column leaf at t->cols) in *cut; NULL
 * when those provably hold (it never has). */
static int cut_after(sops *o, const stage_emit *se, const tz_tail *t, tex_expr **cut)
{
    const tex_stage *st = se->st;
    tex_expr **pt = texi_alloc(o->ctx, sizeof *pt * (size_t)(st->n_leaf + 1), "schedule_ops");
    if (!pt)
        return TEX_ENOMEM;
    for (int k = 0; k < st->n_leaf; k++)
        pt[k] = k < se->tz         ? se->off[k]
                : k == t->col_leaf ? imm(o->ctx, se->off[k]->dtype, t->cols)
                                   : imm(o->ctx, se->off[k]->dtype, 0);
    tex_expr **val = texi_so_values(o, se, pt), *g;
    if (!val)
        return TEX_ENOMEM;
    TEXI_TRY(root_guards(o, se, val, false, &g));
    *cut = g ? tex_not(g) : NULL;
    return !g || *cut ? 0 : TEX_ENOMEM;
}

/* IF (the tile is t's: whole but for t's axes (the data only, for the
 * reduction's tail) and holding t's rows and columns, starting at t->start
 * on t's root axis; for an N tail, cut after t->cols columns) t's
 * instance's calls ELSE s; s when there is no such tail. */
static int tail_tile(sops *o, const stage_emit *se, const tz_tail *t, bool after_init, tex_stmt **s)
{
    if (!t->intrin)
        return 0;
    const tex_stage *st = se->st;
    tex_expr **org = texi_alloc(o->ctx, sizeof *org * (size_t)(st->n_leaf + 1), "schedule_ops");
    if (!org)
        return TEX_ENOMEM;
    for (int k = 0; k < st->n_leaf; k++)
        org[k] = k < se->tz ? se->off[k] : imm(o->ctx, se->off[k]->dtype, 0);
    tex_expr **val = texi_so_values(o, se, org), *cond, *cut = NULL;
    if (!val)
        return TEX_ENOMEM;
    TEXI_TRY(tile_cond(o, se, se->off, t->leaf >= 0 || t->cols, t, &cond));
    if (t->root)
        cond = and_also(cond, ARITH(EQ, val[texi_bounds_iter_index(st, t->root)], t->start));
    if (t->cols) {
        TEXI_TRY(cut_after(o, se, t, &cut));
        if (!cut)
            return 0;
        cond = and_also(cond, cut);
    }
    tex_stmt *call = tile_calls(o, se, t->intrin, after_init);
    *s = cond && call ? texi_if_new(o->ctx, cond, call, *s) : NULL;
    return *s ? 0 : TEX_ENOMEM;
}

/* Level tz of a tensorized stage: the calls, in IF (whole) ELSE (the
 * ordinary nest) unless every tile is provably whole; the K and M tail
 * tiles of a CPU GEMM built-in in between (see the section comment). */
static int build_tensorized(sops *o, const stage_emit *se, int m, bool after_init, tex_stmt **out)
{
    tex_expr *cond;
    TEXI_TRY(tile_cond(o, se, se->off, true, NULL, &cond));
    tex_stmt *call = tile_calls(o, se, se->tz_intrin, after_init);
    if (!call)
        return TEX_ENOMEM;
    if (!cond) {
        *out = call;
        return 0;
    }
    const tex_stage *saved = o->fallback;
    tex_stmt *ordinary = NULL;
    o->fallback = se->st;
    int rc = build_level(o, se, m, after_init, &ordinary);
    o->fallback = saved;
    TEXI_TRY(rc);
    for (int t = 0; t < 4; t++)
        TEXI_TRY(tail_tile(o, se, &se->tails[t], after_init, &ordinary));
    *out = texi_if_new(o->ctx, cond, call, ordinary);
    return *out ? 0 : TEX_ENOMEM;
}

/* The init nest of a reduction at leaf position m: loops over the data
 * leaves from m on (fresh variables), T[..] = identity. */
static int build_init(sops *o, const stage_emit *se, int m, tex_stmt **out)
{
    const tex_stage *st = se->st;
    int n = st->n_leaf, n_env0 = o->n_env;
    tex_expr **off = texi_alloc(o->ctx, sizeof *off * (size_t)(n + 1), "schedule_ops");
    if (!off)
        return TEX_ENOMEM;
    for (int k = 0; k < n; k++) {
        tex_expr *v = se->off[k];
        if (k >= m && se->red_leaf[k]) {
            v = imm(o->ctx, v->dtype, 0);
        } else if (k >= m && !se->no_loop[k]) {
            char name[256];
            snprintf(name, sizeof name, "%s.init", st->leaf[k]->name);
            v = texi_var_new(o->ctx, name, v->dtype);
            if (!v)
                return TEX_ENOMEM;
            TEXI_TRY(
                push_env(o, v, texi_so_env_expr(o, st->range[texi_so_leaf_all(st, k)].extent)));
        }
        off[k] = v;
    }
    tex_expr **val = texi_so_values(o, se, off), *conds;
    tex_expr **idx = val ? texi_so_out_index(o, se, val) : NULL;
    tex_expr *id = texi_reduce_identity(o->ctx, st->op->body->u.red.op, st->tensor->dtype);
    if (!idx || !id)
        return TEX_ENOMEM;
    TEXI_TRY(root_guards(o, se, val, false, &conds));
    tex_stmt *s = guarded(
        o, se, conds, texi_provide_new(o->ctx, texi_so_out_tensor(st), st->op->n_axes, idx, id));
    for (int k = n - 1; k >= m; k--) {
        if (!se->red_leaf[k] && !se->no_loop[k])
            s = make_loop(o, se, off, k, s);
        if (k == se->tz && k > m && o->fallback != st)
            s = reset_tile(o, se, off, s);
    }
    o->n_env = n_env0;
    *out = s;
    return s ? 0 : TEX_ENOMEM;
}

/* Wraps body in the REALIZE of stage ti (unless it is a parameter). */
static tex_stmt *realize(sops *o, int ti, tex_stmt *body)
{
    tex_stage *t = o->lw->sch->stages[ti];
    if (!body || texi_so_is_param(o, t->tensor) || texi_so_out_tensor(t) != t->tensor)
        return body;
    int nd = t->tensor->ndim;
    tex_expr **mins = texi_alloc(o->ctx, sizeof *mins * (size_t)(nd + 1), "schedule_ops");
    tex_expr **exts = texi_alloc(o->ctx, sizeof *exts * (size_t)(nd + 1), "schedule_ops");
    if (!mins || !exts)
        return NULL;
    for (int d = 0; d < nd; d++) {
        mins[d] = texi_so_env_expr(o, t->region[d].min);
        exts[d] = texi_so_env_expr(o, t->region[d].extent);
        if (!mins[d] || !exts[d])
            return NULL;
    }
    return texi_realize_new(o->ctx, t->tensor, nd, mins, exts, t->scope, body);
}

/* The stages computed at leaf m of se's stage, then `inner`, in REALIZEs. */
static int with_attached(sops *o, const stage_emit *se, int m, tex_stmt *inner, tex_stmt **out)
{
    tex_schedule *s = o->lw->sch;
    int n = 0;
    tex_stmt **items =
        texi_alloc(o->ctx, sizeof *items * (size_t)(s->n_stages + 1), "schedule_ops");
    if (!items)
        return TEX_ENOMEM;
    for (int ti = 0; ti < s->n_stages; ti++) {
        tex_stage *t = s->stages[ti];
        if (t->attach == TEXI_ATTACH_AT && t->attach_stage == se->st &&
            t->attach_iv == se->st->leaf[m] && is_compute(t))
            TEXI_TRY(emit_stage(o, ti, &items[n++]));
    }
    if (n == 0) {
        *out = inner;
        return 0;
    }
    items[n] = inner;
    tex_stmt *body = texi_seq_new(o->ctx, n + 1, items);
    for (int ti = s->n_stages - 1; ti >= 0; ti--) {
        tex_stage *t = s->stages[ti];
        if (t->attach == TEXI_ATTACH_AT && t->attach_stage == se->st &&
            t->attach_iv == se->st->leaf[m] && is_compute(t))
            body = realize(o, ti, body);
    }
    *out = body;
    return body ? 0 : TEX_ENOMEM;
}

/* Loop m of the stage around the attached stages and the inner levels. */
static int build_loop(sops *o, const stage_emit *se, int m, bool after_init, tex_stmt **out)
{
    const tex_stage *st = se->st;
    int a = texi_so_leaf_all(st, m), n_env0 = o->n_env;
    const texi_iter_attr *at = &st->attr[a];
    bool thread = !se->no_loop[m] && at->for_kind == TEXI_FOR_THREAD && at->thread_tag >= 0 &&
                  at->thread_tag < N_TAGS;
    tex_expr *var = se->sb->var[a], *saved_var = NULL, *saved_ext = NULL;
    if (!se->no_loop[m])
        TEXI_TRY(push_env(o, var, texi_so_leaf_extent(o, se, se->off, m)));
    if (thread) {
        saved_var = o->tag_var[at->thread_tag];
        saved_ext = o->tag_ext[at->thread_tag];
        o->tag_var[at->thread_tag] = var;
        o->tag_ext[at->thread_tag] = o->env[o->n_env - 1].extent;
    }
    tex_stmt *inner = NULL, *body = NULL;
    int rc = build_level(o, se, m + 1, after_init, &inner);
    if (rc == 0)
        rc = with_attached(o, se, m, inner, &body);
    if (rc == 0 && !se->no_loop[m])
        rc = texi_so_with_prefetch(o, se, m, &body);
    o->n_env = n_env0;
    if (thread) {
        o->tag_var[at->thread_tag] = saved_var;
        o->tag_ext[at->thread_tag] = saved_ext;
    }
    TEXI_TRY(rc);
    *out = se->no_loop[m] ? body : make_loop(o, se, se->off, m, body);
    /* a reduce leaf on a thread index; one on a block index is an atomic
     * stage's (tex_atomic), whose updates need no cross-thread step */
    if (*out && thread && se->red_leaf[m] && at->thread_tag >= (int)TEX_THREAD_X &&
        at->thread_tag <= (int)TEX_THREAD_Z)
        *out = texi_attr_named(o->ctx, TEXI_ATTR_CROSS_THREAD_REDUCTION, NULL, *out);
    return *out ? 0 : TEX_ENOMEM;
}

/* Levels m.. of the stage's nest (m == n_leaf: the innermost statement). */
static int build_level(sops *o, const stage_emit *se, int m, bool after_init, tex_stmt **out)
{
    if (m == se->tz && o->fallback != se->st)
        return build_tensorized(o, se, m, after_init, out);
    /* an atomic stage's init runs before its whole nest: other iterations of
     * a parallel or block-bound reduce leaf may update any element */
    if (se->is_reduce && !after_init && m == (se->st->atomic ? 0 : se->first_reduce)) {
        tex_stmt *items[2];
        TEXI_TRY(build_init(o, se, m, &items[0]));
        TEXI_TRY(build_level(o, se, m, true, &items[1]));
        *out = texi_seq_new(o->ctx, 2, items);
        return *out ? 0 : TEX_ENOMEM;
    }
    if (m == se->st->n_leaf)
        return build_body(o, se, out);
    return build_loop(o, se, m, after_init, out);
}

/* ATTR "assert" E >= f around the nest *s for shifted splits not provably
 * legal; EINVAL where E < f is certain. */
static int shift_asserts(sops *o, const stage_emit *se, tex_stmt **s)
{
    const tex_stage *st = se->st;
    for (int r = st->n_rel - 1; r >= 0; r--) {
        if (se->sb->tail[r] != TEX_TAIL_SHIFT_INWARDS || !st->rel[r].factor)
            continue;
        tex_expr *ext = st->range[texi_bounds_iter_index(st, st->rel[r].parent)].extent;
        tex_expr *c = texi_so_env_expr(o, ARITH(GE, ext, st->rel[r].factor));
        int64_t v;
        if (!c)
            return TEX_ENOMEM;
        if (texi_expr_is_int_const(c, &v) && v == 0)
            return texi_error(o->ctx, TEX_EINVAL,
                              "tex_lower: stage '%s', axis '%s': tail strategy SHIFT_INWARDS needs "
                              "extent >= factor, but the axis's inferred extent is smaller",
                              st->tensor->name, st->rel[r].parent->name);
        if (!texi_prove(c, o->n_env, o->env) &&
            !(*s = texi_attr_named(o->ctx, TEXI_ATTR_ASSERT, c, *s)))
            return TEX_ENOMEM;
    }
    return 0;
}

static int emit_stage(sops *o, int si, tex_stmt **out)
{
    stage_emit se;
    int n_sub0 = o->n_sub;
    TEXI_TRY(setup_stage(o, si, &se));
    tex_stmt *s = NULL;
    int rc = setup_tensorize(o, &se);
    if (rc == 0)
        rc = build_level(o, &se, 0, false, &s);
    o->n_sub = n_sub0;
    TEXI_TRY(rc);
    TEXI_TRY(shift_asserts(o, &se, &s));
    *out = s;
    return 0;
}

/* ------------------------------------------------------------- entry */

static int collect_params(sops *o)
{
    const tex_func *f = o->lw->func;
    int n = f ? f->n_params : 0;
    o->params = texi_alloc(o->ctx, sizeof *o->params * (size_t)(n + 1), "schedule_ops");
    if (!o->params)
        return TEX_ENOMEM;
    for (int i = 0; i < n; i++)
        if (f->params[i].kind == TEX_ARG_TENSOR && f->params[i].tensor)
            o->params[o->n_params++] = f->params[i].tensor;
    return 0;
}

/* The scatter group stage st stores into (ir/scatter.c), or NULL. */
static const tex_tensor *group_of(const tex_stage *st)
{
    return st->op->scatter_rows ? st->op->scatter_into : NULL;
}

/* The nests of the stages at root, in stage order, into items[*n..]; a run
 * of two or more nests of one scatter group's parts goes in one ATTR
 * "disjoint_nests" (they write disjoint rows, so a backend may run them
 * without waiting for each other between them). */
static int root_nests(sops *o, tex_stmt **items, int *n)
{
    tex_schedule *s = o->lw->sch;
    const tex_tensor *group = NULL;
    int first = 0;
    for (int si = 0; si <= s->n_stages; si++) {
        const tex_stage *st = si < s->n_stages ? s->stages[si] : NULL;
        if (st && (!is_compute(st) || st->attach != TEXI_ATTACH_ROOT))
            continue;
        const tex_tensor *g = st ? group_of(st) : NULL;
        if (group && g != group && *n - first > 1) {
            tex_stmt *seq = texi_seq_new(o->ctx, *n - first, items + first);
            items[first] =
                seq ? texi_attr_named(o->ctx, TEXI_ATTR_DISJOINT_NESTS, NULL, seq) : NULL;
            if (!items[first])
                return TEX_ENOMEM;
            *n = first + 1;
        }
        if (!st)
            break;
        if (g != group)
            first = *n;
        group = g;
        TEXI_TRY(emit_stage(o, si, &items[(*n)++]));
    }
    return 0;
}

int texi_schedule_ops(texi_lower *lw, tex_stmt **out)
{
    if (!lw || !lw->sch || !out)
        return lw && lw->ctx ? texi_error(lw->ctx, TEX_EMISUSE, "texi_schedule_ops: NULL argument")
                             : TEX_EMISUSE;
    sops o = {.lw = lw, .ctx = lw->ctx};
    tex_schedule *s = lw->sch;
    TEXI_TRY(collect_params(&o));
    TEXI_TRY(texi_infer_bounds_ex(s, o.n_params, o.params, &o.b));
    TEXI_TRY(texi_check_residency(&o.b));
    for (int k = 0; k < o.b.n_sizes; k++) /* sizes from shapes are never negative */
        TEXI_TRY(push_env(&o, o.b.sizes[k].var, o.b.sizes[k].extent));
    if (lw->func)
        TEXI_TRY(check_params(&o));
    tex_stmt **items = texi_alloc(o.ctx, sizeof *items * (size_t)(s->n_stages + 1), "schedule_ops");
    int n = 0;
    if (!items)
        return TEX_ENOMEM;
    TEXI_TRY(root_nests(&o, items, &n));
    tex_stmt *body = n == 1 ? items[0] : texi_seq_new(o.ctx, n, items);
    for (int si = s->n_stages - 1; si >= 0 && body; si--)
        if (is_compute(s->stages[si]) && s->stages[si]->attach == TEXI_ATTACH_ROOT)
            body = realize(&o, si, body);
    *out = body;
    return body ? 0 : TEX_ENOMEM;
}
