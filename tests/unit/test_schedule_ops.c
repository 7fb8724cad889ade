/*
 * ScheduleOps (src/lower/schedule_ops.c): the loop nests of small schedules,
 * checked on the AST itself (so the tests do not depend on the printer):
 *   - loop order and names, guards only where a split does not divide,
 *     REALIZE placement (root intermediates around everything, attached ones
 *     inside the attach loop) and regions, inlining, fused and symbolic axes;
 *   - reductions: init nest before the reduce loops, update T = T + body,
 *     where-conditions, cross-thread reductions;
 *   - tails: SHIFT_INWARDS (min(...) index, assert when symbolic), illegal
 *     ROUND_UP, PREDICATE on a vectorized loop;
 *   - thread binding: a cooperative fetch runs on the enclosing threadIdx;
 *   - errors: placeholders that are not parameters, inlined parameters;
 *   - every nest: each loop variable defined once and used only inside its
 *     loop (a small verifier below), and, run by the interpreter on
 *     pseudo-random inputs, the same results as tex_eval_reference;
 *   - minimal versions of failing random schedules (test_lower_random seeds
 *     21, 233, 98, 220), run through the interpreter.
 */
#include "lower/lower.h"
#include "interp/interp.h"
#include "schedule/bound.h"
#include "tt.h"

static tex_ctx *ctx;

static tex_expr *I(int64_t v)
{
    return tex_int(ctx, v);
}

static tex_expr *F(double v)
{
    return tex_const(ctx, TEX_F32, v);
}

static bool same(tex_expr *a, tex_expr *b)
{
    return a && b && texi_prove(texi_bounds_arith(TEXI_EXPR_EQ, a, b), 0, NULL);
}

/* ------------------------------------------------------------ AST helpers */

/* The children of s (at most 2 for non-SEQ statements). */
static int children(const tex_stmt *s, tex_stmt ***out, tex_stmt *tmp[2])
{
    switch (s->kind) {
    case TEXI_STMT_FOR:
        tmp[0] = s->u.loop.body;
        break;
    case TEXI_STMT_REALIZE:
        tmp[0] = s->u.realize.body;
        break;
    case TEXI_STMT_ALLOCATE:
        tmp[0] = s->u.alloc.body;
        break;
    case TEXI_STMT_LET:
        tmp[0] = s->u.let.body;
        break;
    case TEXI_STMT_ATTR:
        tmp[0] = s->u.attr.body;
        break;
    case TEXI_STMT_IF:
        tmp[0] = s->u.ifs.then_s;
        tmp[1] = s->u.ifs.else_s;
        *out = tmp;
        return tmp[1] ? 2 : 1;
    case TEXI_STMT_SEQ:
        *out = s->u.seq.items;
        return s->u.seq.n;
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_STORE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        return 0;
    }
    *out = tmp;
    return 1;
}

static int count_kind(const tex_stmt *s, enum texi_stmt_kind k)
{
    if (!s)
        return 0;
    tex_stmt **c, *tmp[2];
    int n = children(s, &c, tmp), total = s->kind == k;
    for (int i = 0; i < n; i++)
        total += count_kind(c[i], k);
    return total;
}

/* The first FOR (pre-order) whose variable is named name. */
static const tex_stmt *find_for(const tex_stmt *s, const char *name)
{
    if (!s)
        return NULL;
    if (s->kind == TEXI_STMT_FOR && strcmp(s->u.loop.var->u.var.name, name) == 0)
        return s;
    tex_stmt **c, *tmp[2];
    int n = children(s, &c, tmp);
    for (int i = 0; i < n; i++) {
        const tex_stmt *r = find_for(c[i], name);
        if (r)
            return r;
    }
    return NULL;
}

/* The first statement of kind k (for REALIZE/PROVIDE: of tensor t, if given). */
static const tex_stmt *find(const tex_stmt *s, enum texi_stmt_kind k, const tex_tensor *t)
{
    if (!s)
        return NULL;
    if (s->kind == k && (!t || (k == TEXI_STMT_REALIZE && s->u.realize.tensor == t) ||
                         (k == TEXI_STMT_PROVIDE && s->u.provide.tensor == t)))
        return s;
    tex_stmt **c, *tmp[2];
    int n = children(s, &c, tmp);
    for (int i = 0; i < n; i++) {
        const tex_stmt *r = find(c[i], k, t);
        if (r)
            return r;
    }
    return NULL;
}

/* Loop variable names in pre-order, joined by spaces. */
static void loop_names(const tex_stmt *s, char *buf, size_t cap)
{
    if (!s)
        return;
    if (s->kind == TEXI_STMT_FOR) {
        size_t l = strlen(buf);
        snprintf(buf + l, cap - l, "%s%s", l ? " " : "", s->u.loop.var->u.var.name);
    }
    tex_stmt **c, *tmp[2];
    int n = children(s, &c, tmp);
    for (int i = 0; i < n; i++)
        loop_names(c[i], buf, cap);
}

static bool has_loops(const tex_stmt *s, const char *expected)
{
    char buf[512] = "";
    loop_names(s, buf, sizeof buf);
    if (strcmp(buf, expected) != 0)
        printf("  loops: \"%s\", expected \"%s\"\n", buf, expected);
    return strcmp(buf, expected) == 0;
}

/* --------------------------------------------------------- scope verifier */

typedef struct {
    tex_expr *defined[256]; /* every loop variable of the nest */
    int n_defined;
    tex_expr *scope[64]; /* loops enclosing the current statement */
    int n_scope;
    bool ok;
} verifier;

static void collect_loops(verifier *v, const tex_stmt *s)
{
    if (!s)
        return;
    if (s->kind == TEXI_STMT_FOR) {
        for (int i = 0; i < v->n_defined; i++)
            if (v->defined[i] == s->u.loop.var) {
                printf("  loop variable %s defined twice\n", s->u.loop.var->u.var.name);
                v->ok = false;
            }
        if (v->n_defined < 256)
            v->defined[v->n_defined++] = s->u.loop.var;
    }
    tex_stmt **c, *tmp[2];
    int n = children(s, &c, tmp);
    for (int i = 0; i < n; i++)
        collect_loops(v, c[i]);
}

static bool check_var_use(tex_expr *e, void *ud)
{
    verifier *v = ud;
    if (e->kind != TEXI_EXPR_VAR)
        return true;
    bool loop = false, in_scope = false;
    for (int i = 0; i < v->n_defined; i++)
        loop = loop || v->defined[i] == e;
    for (int i = 0; i < v->n_scope; i++)
        in_scope = in_scope || v->scope[i] == e;
    if (e->u.var.iter || (loop && !in_scope)) {
        printf("  variable %s used outside its loop\n", e->u.var.name);
        v->ok = false;
    }
    return true;
}

static void check_exprs(verifier *v, int n, tex_expr *const *es)
{
    for (int i = 0; i < n; i++)
        if (es[i])
            texi_expr_visit(es[i], check_var_use, v);
}

static void verify_rec(verifier *v, const tex_stmt *s)
{
    if (!s)
        return;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        check_exprs(v, 2, (tex_expr *[]){s->u.loop.min, s->u.loop.extent});
        v->scope[v->n_scope++] = s->u.loop.var;
        verify_rec(v, s->u.loop.body);
        v->n_scope--;
        return;
    case TEXI_STMT_PROVIDE:
        check_exprs(v, s->u.provide.n_idx, s->u.provide.idx);
        check_exprs(v, 1, &s->u.provide.value);
        return;
    case TEXI_STMT_REALIZE:
        check_exprs(v, s->u.realize.ndim, s->u.realize.mins);
        check_exprs(v, s->u.realize.ndim, s->u.realize.extents);
        break;
    case TEXI_STMT_IF:
        check_exprs(v, 1, &s->u.ifs.cond);
        break;
    case TEXI_STMT_ATTR:
        check_exprs(v, 1, &s->u.attr.value);
        break;
    default:
        break;
    }
    tex_stmt **c, *tmp[2];
    int n = children(s, &c, tmp);
    for (int i = 0; i < n; i++)
        verify_rec(v, c[i]);
}

static bool well_scoped(const tex_stmt *s)
{
    verifier v = {.ok = true};
    collect_loops(&v, s);
    verify_rec(&v, s);
    return v.ok;
}

/* ---------------------------------------------------------------- driver */

static tex_func *last_func; /* the function of the last ops() call */

/* ScheduleOps of s with the given tensor parameters; NULL on error. */
static tex_stmt *ops(tex_schedule *s, int n, tex_tensor *const params[])
{
    texi_param *ps = texi_alloc(ctx, sizeof *ps * (size_t)(n + 1), "test");
    tex_func *f = texi_alloc(ctx, sizeof *f, "test");
    if (!ps || !f)
        return NULL;
    for (int i = 0; i < n; i++) {
        ps[i].kind = TEX_ARG_TENSOR;
        ps[i].tensor = params[i];
    }
    *f = (tex_func){.ctx = ctx, .name = "f", .n_params = n, .params = ps};
    f->size_vars = texi_alloc(ctx, sizeof *f->size_vars * 8, "test");
    for (int i = 0; f->size_vars && i < n; i++)
        for (int d = 0; d < params[i]->ndim; d++)
            TT_EQ_INT(texi_collect_free_vars(params[i]->shape[d], f->size_vars, &f->n_size_vars, 8),
                      0);
    texi_lower lw = {ctx, s, f, false};
    tex_stmt *out = NULL;
    if (texi_schedule_ops(&lw, &out) < 0)
        return NULL;
    TT_CHECK(well_scoped(out));
    f->body = out;
    last_func = f;
    return out;
}

/* The constant value of shape expression e with vars[k] = vals[k]. */
static int64_t dim_value(tex_expr *e, int nv, tex_expr *const vars[], const int64_t vals[])
{
    tex_expr *v[4];
    for (int k = 0; k < nv; k++)
        v[k] = tex_int(ctx, vals[k]);
    tex_expr *r = texi_simplify(texi_substitute(e, nv, vars, v), 0, NULL);
    int64_t x = -1;
    return r && texi_expr_is_int_const(r, &x) ? x : -1;
}

/* Runs the function of the last ops() call with the interpreter on
 * pseudo-random inputs (symbolic sizes vars[k] = vals[k]) and compares every
 * computed parameter with tex_eval_reference. Returns the interpreter's code
 * (0 when it ran; then a mismatch fails the test). */
static int run_vs_reference(int nv, tex_expr *const vars[], const int64_t vals[])
{
    tex_func *f = last_func;
    int n = f ? f->n_params : 0, rc = TEX_EINVAL;
    DLTensor *got[8] = {0}, *ref[8] = {0};
    tex_value args[8];
    tex_tensor *ts[8];
    for (int i = 0; i < n && i < 8; i++) {
        tex_tensor *t = ts[i] = f->params[i].tensor;
        int64_t shape[4], size = 1;
        for (int d = 0; d < t->ndim; d++)
            size *= shape[d] = dim_value(t->shape[d], nv, vars, vals);
        got[i] = tex_array_new(t->ndim, shape, t->dtype, (DLDevice){kDLCPU, 0});
        ref[i] = tex_array_new(t->ndim, shape, t->dtype, (DLDevice){kDLCPU, 0});
        float *g = got[i]->data, *r = ref[i]->data;
        for (int64_t k = 0; k < size; k++)
            g[k] = r[k] = t->op->kind == TEXI_OP_PLACEHOLDER
                              ? (float)((k * 37 + i * 11) % 23) / 7.0f - 1.5f
                              : NAN;
        args[i] = (tex_value){.kind = TEX_VAL_TENSOR, .t = got[i]};
    }
    char err[512];
    if (f && n <= 8) {
        rc = texi_interp_run(f, n, args, err, sizeof err);
        if (rc == 0)
            TT_EQ_INT(tex_eval_reference(ctx, n, ts, ref), 0);
        else
            printf("  interpreter: %s\n", err);
    }
    for (int i = 0; i < n && i < 8; i++) {
        int64_t size = 1;
        for (int d = 0; d < got[i]->ndim; d++)
            size *= got[i]->shape[d];
        const float *g = got[i]->data, *r = ref[i]->data;
        for (int64_t k = 0; rc == 0 && k < size; k++)
            TT_NEAR(g[k], r[k], 1e-5);
        tex_array_free(got[i]);
        tex_array_free(ref[i]);
    }
    return rc;
}

/* run_vs_reference without symbolic sizes. */
static int run_const(void)
{
    return run_vs_reference(0, NULL, NULL);
}

/* A (n) -> B[i] = A[i] + 1 -> C[j] = B[j] * 2 */
typedef struct {
    tex_tensor *A, *B, *C;
    tex_iter *i, *j;
    tex_schedule *s;
    tex_stage *sb, *sc;
} chain;

static chain make_chain(tex_expr *n)
{
    chain c;
    c.A = tex_placeholder(ctx, "A", TEX_F32, 1, &n);
    c.i = tex_axis(ctx, "i", n);
    c.B = tex_compute(ctx, "B", 1, &c.i, tex_add(TEX_AT(c.A, tex_iv(c.i)), F(1)));
    c.j = tex_axis(ctx, "j", n);
    c.C = tex_compute(ctx, "C", 1, &c.j, tex_mul(TEX_AT(c.B, tex_iv(c.j)), F(2)));
    c.s = tex_schedule_new(ctx, 1, &c.C);
    c.sb = tex_stage_of(c.s, c.B);
    c.sc = tex_stage_of(c.s, c.C);
    return c;
}

/* ----------------------------------------------------------------- tests */

static void test_root_stages(void)
{
    ctx = tex_ctx_new();
    chain c = make_chain(I(10));
    tex_iter *jo, *ji;
    TT_EQ_INT(tex_split(c.sc, c.j, I(4), &jo, &ji), 0);
    tex_stmt *s = ops(c.s, 2, (tex_tensor *[]){c.A, c.C});
    TT_CHECK(s && s->kind == TEXI_STMT_REALIZE && s->u.realize.tensor == c.B);
    TT_CHECK(has_loops(s, "i j.outer j.inner"));
    TT_EQ_INT(count_kind(s, TEXI_STMT_IF), 1); /* C's tail only */
    TT_EQ_INT(count_kind(s, TEXI_STMT_REALIZE), 1);
    const tex_stmt *r = find(s, TEXI_STMT_REALIZE, c.B);
    TT_CHECK(r && same(r->u.realize.mins[0], I(0)) && same(r->u.realize.extents[0], I(10)));
    const tex_stmt *jo_loop = find_for(s, "j.outer");
    TT_CHECK(jo_loop && same(jo_loop->u.loop.extent, I(3)) && same(jo_loop->u.loop.min, I(0)));
    TT_EQ_INT(run_const(), 0);
    /* a dividing factor needs no guard */
    tex_ctx_free(ctx);
    ctx = tex_ctx_new();
    c = make_chain(I(12));
    TT_EQ_INT(tex_split(c.sc, c.j, I(4), &jo, &ji), 0);
    s = ops(c.s, 2, (tex_tensor *[]){c.A, c.C});
    TT_EQ_INT(count_kind(s, TEXI_STMT_IF), 0);
    TT_EQ_INT(run_const(), 0);
    tex_ctx_free(ctx);
}

static void test_compute_at(void)
{
    ctx = tex_ctx_new();
    chain c = make_chain(I(10));
    tex_iter *jo, *ji;
    TT_EQ_INT(tex_split(c.sc, c.j, I(4), &jo, &ji), 0);
    TT_EQ_INT(tex_compute_at(c.sb, c.sc, jo), 0);
    tex_stmt *s = ops(c.s, 2, (tex_tensor *[]){c.A, c.C});
    TT_CHECK(s && s->kind == TEXI_STMT_FOR);
    TT_CHECK(has_loops(s, "j.outer i j.inner"));
    const tex_stmt *jo_loop = find_for(s, "j.outer");
    const tex_stmt *r = jo_loop ? jo_loop->u.loop.body : NULL;
    TT_CHECK(r && r->kind == TEXI_STMT_REALIZE && r->u.realize.tensor == c.B);
    if (r && r->kind == TEXI_STMT_REALIZE) {
        TT_CHECK(same(r->u.realize.mins[0], tex_mul(jo_loop->u.loop.var, I(4))));
        TT_CHECK(same(r->u.realize.extents[0], I(4)));
    }
    /* B's last tile passes its domain [0, 10): guarded, like C's */
    TT_EQ_INT(count_kind(s, TEXI_STMT_IF), 2);
    const tex_stmt *bi = find_for(s, "i");
    TT_CHECK(bi && same(bi->u.loop.extent, I(4)));
    TT_EQ_INT(run_const(), 0);
    tex_ctx_free(ctx);
}

static void test_inline(void)
{
    ctx = tex_ctx_new();
    chain c = make_chain(I(8));
    TT_EQ_INT(tex_compute_inline(c.sb), 0);
    tex_stmt *s = ops(c.s, 2, (tex_tensor *[]){c.A, c.C});
    TT_CHECK(has_loops(s, "j"));
    TT_CHECK(find(s, TEXI_STMT_PROVIDE, c.B) == NULL);
    TT_EQ_INT(count_kind(s, TEXI_STMT_REALIZE), 0);
    const tex_stmt *p = find(s, TEXI_STMT_PROVIDE, c.C);
    /* C[j] = (A[j] + 1) * 2 */
    TT_CHECK(p && p->u.provide.value->kind == TEXI_EXPR_MUL &&
             p->u.provide.value->u.bin.a->kind == TEXI_EXPR_ADD &&
             p->u.provide.value->u.bin.a->u.bin.a->kind == TEXI_EXPR_ACCESS &&
             p->u.provide.value->u.bin.a->u.bin.a->u.access.tensor == c.A);
    TT_EQ_INT(run_const(), 0);
    tex_ctx_free(ctx);
}

static void test_params(void)
{
    ctx = tex_ctx_new();
    chain c = make_chain(I(8));
    TT_CHECK(ops(c.s, 1, &c.C) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'A' is read but is not a parameter") != NULL);
    tex_clear_error(ctx);
    /* an intermediate passed as a parameter is computed whole, not realized */
    tex_stmt *s = ops(c.s, 3, (tex_tensor *[]){c.A, c.B, c.C});
    TT_EQ_INT(count_kind(s, TEXI_STMT_REALIZE), 0);
    TT_CHECK(find(s, TEXI_STMT_PROVIDE, c.B) != NULL);
    TT_EQ_INT(run_const(), 0);
    TT_EQ_INT(tex_compute_inline(c.sb), 0);
    TT_CHECK(ops(c.s, 3, (tex_tensor *[]){c.A, c.B, c.C}) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'B' is a parameter") != NULL);
    tex_ctx_free(ctx);
}

static void test_symbolic_fused(void)
{
    ctx = tex_ctx_new();
    tex_expr *n = tex_var(ctx, "n", TEX_I32), *m = tex_var(ctx, "m", TEX_I32);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 2, (tex_expr *[]){n, m});
    tex_iter *ax[2] = {tex_axis(ctx, "i", n), tex_axis(ctx, "j", m)};
    tex_tensor *C =
        tex_compute(ctx, "C", 2, ax, tex_mul(TEX_AT(A, tex_iv(ax[0]), tex_iv(ax[1])), F(3)));
    tex_schedule *sch = tex_schedule_new(ctx, 1, &C);
    tex_stage *sc = tex_stage_of(sch, C);
    tex_iter *f, *fo, *fi;
    TT_EQ_INT(tex_fuse(sc, ax[0], ax[1], &f), 0);
    TT_EQ_INT(tex_split(sc, f, I(8), &fo, &fi), 0);
    tex_stmt *s = ops(sch, 2, (tex_tensor *[]){A, C});
    TT_CHECK(has_loops(s, "i.j.fused.outer i.j.fused.inner"));
    const tex_stmt *p = find(s, TEXI_STMT_PROVIDE, C);
    const tex_stmt *lo = find_for(s, "i.j.fused.outer"), *li = find_for(s, "i.j.fused.inner");
    if (p && lo && li) {
        tex_expr *v = tex_add(tex_mul(lo->u.loop.var, I(8)), li->u.loop.var);
        TT_CHECK(same(p->u.provide.idx[0], tex_floordiv(v, m)));
        TT_CHECK(same(p->u.provide.idx[1], tex_floormod(v, m)));
        TT_CHECK(same(lo->u.loop.extent, tex_floordiv(tex_add(tex_mul(n, m), I(7)), I(8))));
    } else {
        TT_CHECK(!"fused loops or provide missing");
    }
    TT_EQ_INT(count_kind(s, TEXI_STMT_IF), 1);
    TT_EQ_INT(run_vs_reference(2, (tex_expr *[]){n, m}, (int64_t[]){5, 7}), 0);
    TT_EQ_INT(run_vs_reference(2, (tex_expr *[]){n, m}, (int64_t[]){1, 8}), 0);
    tex_ctx_free(ctx);
}

/* S[r] = sum_k M[r, k] (where k != r with cond), split both, reordered. */
static void test_reduction(void)
{
    ctx = tex_ctx_new();
    tex_tensor *M = tex_placeholder_c(ctx, "M", TEX_F32, 2, (int64_t[]){6, 9});
    tex_iter *r = tex_axis(ctx, "r", I(6)), *k = tex_reduce_axis(ctx, "k", I(9));
    tex_expr *red = tex_reduce_where(tex_sum(TEX_AT(M, tex_iv(r), tex_iv(k)), 1, &k),
                                     tex_ne(tex_iv(r), tex_iv(k)));
    tex_tensor *S = tex_compute(ctx, "S", 1, &r, red);
    tex_schedule *sch = tex_schedule_new(ctx, 1, &S);
    tex_stage *ss = tex_stage_of(sch, S);
    tex_iter *ko, *ki, *ro, *ri;
    TT_EQ_INT(tex_split(ss, k, I(4), &ko, &ki), 0);
    TT_EQ_INT(tex_split(ss, r, I(3), &ro, &ri), 0);
    TT_EQ_INT(tex_reorder(ss, 4, (tex_iter *[]){ro, ko, ri, ki}), 0);
    tex_stmt *s = ops(sch, 2, (tex_tensor *[]){M, S});
    TT_CHECK(has_loops(s, "r.outer r.inner.init k.outer r.inner k.inner"));
    const tex_stmt *outer = find_for(s, "r.outer");
    const tex_stmt *seq = outer ? outer->u.loop.body : NULL;
    TT_CHECK(seq && seq->kind == TEXI_STMT_SEQ && seq->u.seq.n == 2);
    const tex_stmt *init = find_for(s, "r.inner.init");
    const tex_stmt *ip = init ? find(init, TEXI_STMT_PROVIDE, S) : NULL;
    TT_CHECK(ip && ip->u.provide.value->kind == TEXI_EXPR_FLOAT && ip->u.provide.value->u.f == 0);
    const tex_stmt *upd = find_for(s, "k.outer");
    const tex_stmt *up = upd ? find(upd, TEXI_STMT_PROVIDE, S) : NULL;
    TT_CHECK(up && up->u.provide.value->kind == TEXI_EXPR_ADD &&
             up->u.provide.value->u.bin.a->kind == TEXI_EXPR_ACCESS &&
             up->u.provide.value->u.bin.a->u.access.tensor == S);
    /* guards: r (3 divides 6: none), k (4 does not divide 9) and the where-condition */
    TT_EQ_INT(count_kind(init, TEXI_STMT_IF), 0);
    TT_EQ_INT(count_kind(upd, TEXI_STMT_IF), 2);
    TT_EQ_INT(run_const(), 0);
    tex_ctx_free(ctx);
}

static void test_shift_inwards(void)
{
    ctx = tex_ctx_new();
    tex_expr *n = tex_var(ctx, "n", TEX_I32);
    chain c = make_chain(n);
    tex_iter *jo, *ji;
    TT_EQ_INT(tex_compute_inline(c.sb), 0);
    TT_EQ_INT(tex_split_tail(c.sc, c.j, I(4), TEX_TAIL_SHIFT_INWARDS, &jo, &ji), 0);
    tex_stmt *s = ops(c.s, 2, (tex_tensor *[]){c.A, c.C});
    TT_CHECK(s && s->kind == TEXI_STMT_ATTR && strcmp(s->u.attr.key, "assert") == 0);
    TT_EQ_INT(count_kind(s, TEXI_STMT_IF), 0);
    const tex_stmt *p = find(s, TEXI_STMT_PROVIDE, c.C);
    const tex_stmt *lo = find_for(s, "j.outer"), *li = find_for(s, "j.inner");
    if (p && lo && li)
        TT_CHECK(same(
            p->u.provide.idx[0],
            tex_add(tex_min(tex_mul(lo->u.loop.var, I(4)), tex_sub(n, I(4))), li->u.loop.var)));
    TT_EQ_INT(run_vs_reference(1, &n, (int64_t[]){10}), 0);
    TT_EQ_INT(run_vs_reference(1, &n, (int64_t[]){4}), 0);
    TT_CHECK(run_vs_reference(1, &n, (int64_t[]){3}) != 0); /* the assert: extent < factor */
    tex_ctx_free(ctx);

    ctx = tex_ctx_new();
    c = make_chain(I(10));
    TT_EQ_INT(tex_compute_inline(c.sb), 0);
    TT_EQ_INT(tex_split_tail(c.sc, c.j, I(4), TEX_TAIL_SHIFT_INWARDS, &jo, &ji), 0);
    s = ops(c.s, 2, (tex_tensor *[]){c.A, c.C});
    TT_CHECK(s && s->kind == TEXI_STMT_FOR); /* constant extent: no assert */
    TT_EQ_INT(count_kind(s, TEXI_STMT_IF), 0);
    TT_EQ_INT(run_const(), 0);
    tex_ctx_free(ctx);
}

static void test_round_up_and_predicate(void)
{
    ctx = tex_ctx_new();
    chain c = make_chain(I(10));
    tex_iter *jo, *ji, *io, *ii;
    TT_EQ_INT(tex_split_tail(c.sb, c.i, I(4), TEX_TAIL_ROUND_UP, &io, &ii), 0);
    TT_CHECK(ops(c.s, 2, (tex_tensor *[]){c.A, c.C}) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'B'") && strstr(tex_errmsg(ctx), "'i'") &&
             strstr(tex_errmsg(ctx), "ROUND_UP"));
    tex_ctx_free(ctx);

    ctx = tex_ctx_new();
    c = make_chain(I(10));
    TT_EQ_INT(tex_split_tail(c.sc, c.j, I(4), TEX_TAIL_PREDICATE, &jo, &ji), 0);
    TT_EQ_INT(tex_vectorize(c.sc, ji), 0);
    tex_stmt *s = ops(c.s, 2, (tex_tensor *[]){c.A, c.C});
    const tex_stmt *a = find(s, TEXI_STMT_ATTR, NULL);
    TT_CHECK(a && strcmp(a->u.attr.key, "predicate") == 0 && a->u.attr.body->kind == TEXI_STMT_IF);
    const tex_stmt *li = find_for(s, "j.inner");
    TT_CHECK(li && li->u.loop.for_kind == TEXI_FOR_VECTORIZED);
    TT_EQ_INT(run_const(), 0);
    tex_ctx_free(ctx);
}

/* C[i] = sum_k A[i, k] on a GPU-style schedule with a shared cache of A
 * fetched cooperatively by the same threads. */
static void test_threads(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){64, 32});
    tex_iter *i = tex_axis(ctx, "i", I(64)), *k = tex_reduce_axis(ctx, "k", I(32));
    tex_tensor *C = tex_compute(ctx, "C", 1, &i, tex_sum(TEX_AT(A, tex_iv(i), tex_iv(k)), 1, &k));
    tex_schedule *sch = tex_schedule_new(ctx, 1, &C);
    tex_stage *sc = tex_stage_of(sch, C);
    tex_tensor *AS = tex_cache_read(sch, A, TEX_SCOPE_SHARED, 1, &C);
    tex_stage *sa = tex_stage_of(sch, AS);
    tex_iter *bx, *tx, *ko, *ki, *ao, *ai;
    TT_EQ_INT(tex_split(sc, i, I(16), &bx, &tx), 0);
    TT_EQ_INT(tex_split(sc, k, I(8), &ko, &ki), 0);
    TT_EQ_INT(tex_reorder(sc, 4, (tex_iter *[]){bx, tx, ko, ki}), 0);
    TT_EQ_INT(tex_bind(sc, bx, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(sc, tx, TEX_THREAD_X), 0);
    TT_EQ_INT(tex_compute_at(sa, sc, ko), 0);
    TT_EQ_INT(tex_split(sa, tex_op_axis(sa, 0), I(16), &ao, &ai), 0);
    TT_EQ_INT(tex_bind(sa, ai, TEX_THREAD_X), 0);
    tex_stmt *s = ops(sch, 2, (tex_tensor *[]){A, C});
    const tex_stmt *r = find(s, TEXI_STMT_REALIZE, AS), *lk = find_for(s, "k.outer");
    const tex_stmt *lb = find_for(s, "i.outer");
    TT_CHECK(r && lk && lb && r->u.realize.scope == TEXI_SCOPE_SHARED);
    if (r && lk && lb) {
        /* relaxed over threadIdx (the buffer is shared), fixed in the block */
        TT_CHECK(same(r->u.realize.mins[0], tex_mul(lb->u.loop.var, I(16))));
        TT_CHECK(same(r->u.realize.extents[0], I(16)));
        TT_CHECK(same(r->u.realize.mins[1], tex_mul(lk->u.loop.var, I(8))));
        TT_CHECK(same(r->u.realize.extents[1], I(8)));
        TT_CHECK(find_for(r, tex_op_axis(sa, 0)->name) == NULL);
        TT_CHECK(find_for(r, "i.inner") == NULL); /* only C's threadIdx loop, outside */
    }
    TT_CHECK(lb && lb->u.loop.for_kind == TEXI_FOR_THREAD && lb->u.loop.thread_tag == TEX_BLOCK_X);
    TT_EQ_INT(run_const(), 0);
    tex_ctx_free(ctx);
}

static void test_cross_thread_reduction(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){4, 32});
    tex_iter *i = tex_axis(ctx, "i", I(4)), *k = tex_reduce_axis(ctx, "k", I(32));
    tex_tensor *C = tex_compute(ctx, "C", 1, &i, tex_sum(TEX_AT(A, tex_iv(i), tex_iv(k)), 1, &k));
    tex_schedule *sch = tex_schedule_new(ctx, 1, &C);
    tex_stage *sc = tex_stage_of(sch, C);
    TT_EQ_INT(tex_bind(sc, k, TEX_THREAD_X), 0);
    tex_stmt *s = ops(sch, 2, (tex_tensor *[]){A, C});
    const tex_stmt *a = find(s, TEXI_STMT_ATTR, NULL);
    TT_CHECK(a && strcmp(a->u.attr.key, "cross_thread_reduction") == 0 &&
             a->u.attr.body->kind == TEXI_STMT_FOR &&
             a->u.attr.body->u.loop.for_kind == TEXI_FOR_THREAD);
    TT_CHECK(has_loops(s, "i k"));
    TT_EQ_INT(run_const(), 0);
    tex_ctx_free(ctx);
}

/* C = A B (10x12 by 12x9): tiled, a local write cache at the tile, the
 * reduction split and reordered, the tile's inner loop vectorized. */
static void test_matmul_cache_write(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){10, 12});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){12, 9});
    tex_iter *ax[2] = {tex_axis(ctx, "i", I(10)), tex_axis(ctx, "j", I(9))};
    tex_iter *k = tex_reduce_axis(ctx, "k", I(12));
    tex_expr *prod =
        tex_mul(TEX_AT(A, tex_iv(ax[0]), tex_iv(k)), TEX_AT(B, tex_iv(k), tex_iv(ax[1])));
    tex_tensor *C = tex_compute(ctx, "C", 2, ax, tex_sum(prod, 1, &k));
    tex_schedule *sch = tex_schedule_new(ctx, 1, &C);
    tex_stage *sc = tex_stage_of(sch, C);
    tex_tensor *CL = tex_cache_write(sch, C, TEX_SCOPE_LOCAL);
    tex_stage *scl = tex_stage_of(sch, CL);
    tex_iter *io, *jo, *ii, *ji, *ko, *ki;
    TT_EQ_INT(tex_tile(sc, tex_op_axis(sc, 0), tex_op_axis(sc, 1), I(4), I(4), &io, &jo, &ii, &ji),
              0);
    TT_EQ_INT(tex_compute_at(scl, sc, jo), 0);
    TT_EQ_INT(tex_split(scl, tex_op_reduce_axis(scl, 0), I(5), &ko, &ki), 0);
    TT_EQ_INT(tex_reorder(scl, 4, (tex_iter *[]){ko, tex_op_axis(scl, 0), ki, tex_op_axis(scl, 1)}),
              0);
    TT_EQ_INT(tex_vectorize(sc, ji), 0);
    tex_stmt *s = ops(sch, 3, (tex_tensor *[]){A, B, C});
    const tex_stmt *r = find(s, TEXI_STMT_REALIZE, CL), *lj = find_for(s, "j.outer");
    TT_CHECK(r && lj && lj->u.loop.body == r && r->u.realize.scope == TEXI_SCOPE_LOCAL);
    if (r)
        TT_CHECK(same(r->u.realize.extents[0], I(4)) && same(r->u.realize.extents[1], I(4)));
    TT_EQ_INT(run_const(), 0);
    tex_ctx_free(ctx);
}

/* S[x] = sum_r A[r, x] through rfactor of the split reduction. */
static void test_rfactor(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){10, 3});
    tex_iter *x = tex_axis(ctx, "x", I(3)), *r = tex_reduce_axis(ctx, "r", I(10));
    tex_tensor *S = tex_compute(ctx, "S", 1, &x, tex_sum(TEX_AT(A, tex_iv(r), tex_iv(x)), 1, &r));
    tex_schedule *sch = tex_schedule_new(ctx, 1, &S);
    tex_iter *ro, *ri;
    TT_EQ_INT(tex_split(tex_stage_of(sch, S), r, I(4), &ro, &ri), 0);
    tex_tensor *RF = tex_rfactor(sch, S, ri, 0);
    TT_CHECK(RF != NULL);
    tex_stmt *s = ops(sch, 2, (tex_tensor *[]){A, S});
    const tex_stmt *rr = find(s, TEXI_STMT_REALIZE, RF);
    TT_CHECK(rr && same(rr->u.realize.extents[0], I(4)) && same(rr->u.realize.extents[1], I(3)));
    TT_EQ_INT(run_const(), 0);
    tex_ctx_free(ctx);
}

/* --------------------------------------------- regressions (random schedules) */

/* B[i, j] = A[i, j] + 1 and C[i, j] = B[i, j] * A[i, j] over symbolic M x N. */
typedef struct {
    tex_expr *M, *N;
    tex_tensor *A, *B, *C;
    tex_iter *bi, *bj;
    tex_schedule *s;
    tex_stage *sb;
} grid;

static grid make_grid(void)
{
    grid g;
    g.M = tex_var(ctx, "M", TEX_I32);
    g.N = tex_var(ctx, "N", TEX_I32);
    g.A = tex_placeholder(ctx, "A", TEX_F32, 2, (tex_expr *[]){g.M, g.N});
    g.bi = tex_axis(ctx, "i", g.M);
    g.bj = tex_axis(ctx, "j", g.N);
    g.B = tex_compute(ctx, "B", 2, (tex_iter *[]){g.bi, g.bj},
                      tex_add(TEX_AT(g.A, tex_iv(g.bi), tex_iv(g.bj)), F(1)));
    tex_iter *ci = tex_axis(ctx, "i", g.M), *cj = tex_axis(ctx, "j", g.N);
    g.C = tex_compute(
        ctx, "C", 2, (tex_iter *[]){ci, cj},
        tex_mul(TEX_AT(g.B, tex_iv(ci), tex_iv(cj)), TEX_AT(g.A, tex_iv(ci), tex_iv(cj))));
    g.s = tex_schedule_new(ctx, 1, &g.C);
    g.sb = tex_stage_of(g.s, g.B);
    return g;
}

/* Random seed 233 (elemwise): split(B, j, 5) then fuse(B, i, j.outer) with
 * N = 11. The rounded-up j values (floormod by a symbolic extent) could not be
 * bounded, fell back to the domain, and AUTO picked ROUND_UP without a guard
 * nor a larger region: B was written past its buffer. */
static void test_symbolic_split_fuse_guard(void)
{
    ctx = tex_ctx_new();
    grid g = make_grid();
    tex_iter *jo, *ji, *f;
    TT_EQ_INT(tex_split(g.sb, g.bj, I(5), &jo, &ji), 0);
    TT_EQ_INT(tex_fuse(g.sb, g.bi, jo, &f), 0);
    tex_stmt *s = ops(g.s, 2, (tex_tensor *[]){g.A, g.C});
    TT_EQ_INT(count_kind(s, TEXI_STMT_IF), 1);
    TT_EQ_INT(run_vs_reference(2, (tex_expr *[]){g.M, g.N}, (int64_t[]){5, 11}), 0);
    tex_ctx_free(ctx);
    /* seed 21: split 6, fuse, split 9 of the fused axis */
    ctx = tex_ctx_new();
    g = make_grid();
    tex_iter *fo, *fi;
    TT_EQ_INT(tex_split(g.sb, g.bj, I(6), &jo, &ji), 0);
    TT_EQ_INT(tex_fuse(g.sb, g.bi, jo, &f), 0);
    TT_EQ_INT(tex_split(g.sb, f, I(9), &fo, &fi), 0);
    s = ops(g.s, 2, (tex_tensor *[]){g.A, g.C});
    TT_CHECK(s != NULL);
    TT_EQ_INT(run_vs_reference(2, (tex_expr *[]){g.M, g.N}, (int64_t[]){5, 11}), 0);
    TT_EQ_INT(run_vs_reference(2, (tex_expr *[]){g.M, g.N}, (int64_t[]){7, 3}), 0);
    tex_ctx_free(ctx);
}

/* S[i] = sum_k A[i, k] (+ P[i] when P is given); Y[i, j] = A[i, j] / S[i]. */
static tex_tensor *row_sum(tex_tensor *A, tex_tensor *P, tex_tensor **Y)
{
    tex_expr *M = A->shape[0], *N = A->shape[1];
    tex_iter *i = tex_axis(ctx, "i", M), *k = tex_reduce_axis(ctx, "k", N);
    tex_expr *e = TEX_AT(A, tex_iv(i), tex_iv(k));
    if (P)
        e = tex_add(e, TEX_AT(P, tex_iv(i)));
    tex_tensor *S = tex_compute(ctx, "S", 1, &i, tex_sum(e, 1, &k));
    tex_iter *yi = tex_axis(ctx, "i", M), *yj = tex_axis(ctx, "j", N);
    *Y = tex_compute(ctx, "Y", 2, (tex_iter *[]){yi, yj},
                     tex_div(TEX_AT(A, tex_iv(yi), tex_iv(yj)), TEX_AT(S, tex_iv(yi))));
    return S;
}

/* Random seed 98 (softmax, layernorm): split_nparts(Y, i, 11) with M = 5 and
 * S computed under it. S's region extent, min(M - row, 1), stayed symbolic
 * in Y's loops and was -1 on Y's tail iterations: now it is maximized over
 * them (symbolic divisions bounded) and never negative. */
static void test_attached_tail_extent(void)
{
    ctx = tex_ctx_new();
    tex_expr *M = tex_var(ctx, "M", TEX_I32), *N = tex_var(ctx, "N", TEX_I32);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 2, (tex_expr *[]){M, N}), *Y;
    tex_tensor *S = row_sum(A, NULL, &Y);
    tex_schedule *sch = tex_schedule_new(ctx, 1, &Y);
    tex_stage *sy = tex_stage_of(sch, Y);
    tex_iter *io, *ii, *f;
    TT_EQ_INT(tex_split_nparts(sy, tex_stage_axis(sy, 0), I(11), &io, &ii), 0);
    TT_EQ_INT(tex_fuse(sy, ii, tex_stage_axis(sy, 2), &f), 0);
    TT_EQ_INT(tex_compute_at(tex_stage_of(sch, S), sy, f), 0);
    tex_stmt *s = ops(sch, 2, (tex_tensor *[]){A, Y});
    const tex_stmt *r = find(s, TEXI_STMT_REALIZE, S);
    TT_CHECK(r != NULL);
    TT_EQ_INT(run_vs_reference(2, (tex_expr *[]){M, N}, (int64_t[]){5, 7}), 0);
    TT_EQ_INT(run_vs_reference(2, (tex_expr *[]){M, N}, (int64_t[]){23, 2}), 0);
    tex_ctx_free(ctx);
}

/* Random seed 220 (softmax, layernorm, elemwise): S at Y's fused loop, then a
 * cache of P read by S at root. The cache's region used S's range (symbolic
 * in Y's loop i.j.fused) unbounded: the loop variable leaked to the root. */
static void test_root_cache_of_attached_reader(void)
{
    ctx = tex_ctx_new();
    tex_expr *M = tex_var(ctx, "M", TEX_I32), *N = tex_var(ctx, "N", TEX_I32);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 2, (tex_expr *[]){M, N}), *Y;
    tex_iter *pi = tex_axis(ctx, "i", M);
    tex_tensor *P = tex_compute(ctx, "P", 1, &pi, tex_mul(TEX_AT(A, tex_iv(pi), I(0)), F(2)));
    tex_tensor *S = row_sum(A, P, &Y);
    tex_schedule *sch = tex_schedule_new(ctx, 1, &Y);
    tex_stage *sy = tex_stage_of(sch, Y);
    tex_iter *f;
    TT_EQ_INT(tex_fuse(sy, tex_stage_axis(sy, 0), tex_stage_axis(sy, 1), &f), 0);
    TT_EQ_INT(tex_compute_at(tex_stage_of(sch, S), sy, f), 0);
    tex_tensor *PL = tex_cache_read(sch, P, TEX_SCOPE_LOCAL, 1, &S);
    TT_CHECK(PL != NULL);
    tex_stmt *s = ops(sch, 2, (tex_tensor *[]){A, Y}); /* ops() checks the scopes */
    const tex_stmt *r = find(s, TEXI_STMT_REALIZE, PL);
    TT_CHECK(r != NULL);
    TT_EQ_INT(run_vs_reference(2, (tex_expr *[]){M, N}, (int64_t[]){5, 7}), 0);
    tex_ctx_free(ctx);
}

int main(void)
{
    TT_RUN(test_root_stages);
    TT_RUN(test_compute_at);
    TT_RUN(test_inline);
    TT_RUN(test_params);
    TT_RUN(test_symbolic_fused);
    TT_RUN(test_reduction);
    TT_RUN(test_shift_inwards);
    TT_RUN(test_round_up_and_predicate);
    TT_RUN(test_threads);
    TT_RUN(test_cross_thread_reduction);
    TT_RUN(test_matmul_cache_write);
    TT_RUN(test_rfactor);
    TT_RUN(test_symbolic_split_fuse_guard);
    TT_RUN(test_attached_tail_extent);
    TT_RUN(test_root_cache_of_attached_reader);
    return tt_finish();
}
