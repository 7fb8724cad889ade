/*
 * Traversal (src/ir/visit.c) and the statement constructors (src/ir/stmt.c):
 * substitution, sharing of unchanged subtrees (the same pointers come back),
 * pre-callbacks that replace nodes and stop descent, the read-only walks'
 * order and pruning (expressions and statements), named ATTR keys,
 * statement rewriting of loop bounds and every statement
 * kind, innermost-first loop rewriting, the body of a statement and its own
 * expressions, SEQ flattening, NULL operands, and allocation failure in the middle
 * of a rewrite (NULL result, TEX_ENOMEM recorded, no partial tree).
 */
#include "ir/ir.h"
#include "tt.h"

#include <stdlib.h>

#define CHECK_EXPR(e, want)                                                                        \
    do {                                                                                           \
        char *got_ = tex_expr_str(e);                                                              \
        TT_EQ_STR(got_, want);                                                                     \
        free(got_);                                                                                \
    } while (0)

#define CHECK_STMT(s, want)                                                                        \
    do {                                                                                           \
        char *got_ = texi_stmt_str(s);                                                             \
        TT_EQ_STR(got_, want);                                                                     \
        free(got_);                                                                                \
    } while (0)

static void test_substitute(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *x = tex_var(ctx, "x", TEX_I32), *y = tex_var(ctx, "y", TEX_I32);
    tex_expr *z = tex_var(ctx, "z", TEX_I32), *one = tex_int(ctx, 1);
    tex_expr *e = tex_add(tex_mul(x, x), z);
    tex_expr *r = texi_substitute(e, 1, &x, (tex_expr *[]){tex_add(y, one)});
    CHECK_EXPR(r, "(y + 1)*(y + 1) + z");
    TT_CHECK(texi_expr_equal(r, tex_add(tex_mul(tex_add(y, one), tex_add(y, one)), z)));
    CHECK_EXPR(e, "x*x + z"); /* the input is untouched */
    /* not recursive: x -> x + 1 happens once */
    CHECK_EXPR(texi_substitute(e, 1, &x, (tex_expr *[]){tex_add(x, one)}), "(x + 1)*(x + 1) + z");
    /* simultaneous: a swap */
    CHECK_EXPR(texi_substitute(tex_sub(x, y), 2, (tex_expr *[]){x, y}, (tex_expr *[]){y, x}),
               "y - x");
    /* nothing to do: the very same tree */
    TT_CHECK(texi_substitute(e, 0, NULL, NULL) == e);
    TT_CHECK(texi_substitute(e, 1, &y, &z) == e);
    TT_CHECK(texi_substitute(x, 1, &x, &y) == y);
    TT_CHECK(texi_substitute(NULL, 1, &x, &y) == NULL);
    tex_ctx_free(ctx);
}

/* Substitution reaches into every kind that has expression children. */
static void test_substitute_every_kind(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *x = tex_var(ctx, "x", TEX_I32), *y = tex_var(ctx, "y", TEX_I32);
    tex_expr *a = tex_var(ctx, "a", TEX_F32);
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){8, 8});
    texi_buffer *buf = texi_buffer_new(ctx, "buf", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &x);
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_int(ctx, 8));
    tex_expr *kv = tex_iv(k);
    struct {
        tex_expr *e;
        const char *want;
    } cases[] = {
        {tex_not(tex_lt(x, tex_int(ctx, 3))), "!(y < 3)"},
        {tex_cast(TEX_F32, x), "f32(y)"},
        {tex_select(tex_eq(x, y), a, tex_cast(TEX_F32, x)), "select(y == y, a, f32(y))"},
        {tex_fma(a, tex_cast(TEX_F32, x), a), "fma(a, f32(y), a)"},
        {TEX_AT(A, x, tex_add(x, y)), "A[y, y + y]"},
        {texi_load_new(buf, tex_mul(x, tex_int(ctx, 8))), "buf[y*8]"},
        {tex_min(x, tex_max(x, y)), "min(y, max(y, y))"},
        {tex_reduce_where(tex_sum(TEX_AT(A, x, kv), 1, &k), tex_lt(kv, x)),
         "sum(A[y, k], axis=[k], where=k < y)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tex_expr *r = texi_substitute(cases[i].e, 1, &x, &y);
        CHECK_EXPR(r, cases[i].want);
        TT_CHECK(r != cases[i].e);
        TT_CHECK(r && r->kind == cases[i].e->kind && r->dtype == cases[i].e->dtype);
    }
    /* reduce axes are kept by identity */
    tex_expr *red = tex_sum(TEX_AT(A, x, kv), 1, &k);
    tex_expr *r = texi_substitute(red, 1, &x, &y);
    TT_CHECK(r->u.red.n_axes == 1 && r->u.red.axes[0] == k && r->u.red.op == TEXI_REDUCE_SUM);
    tex_ctx_free(ctx);
}

static void test_sharing(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *x = tex_var(ctx, "x", TEX_I32), *y = tex_var(ctx, "y", TEX_I32);
    tex_expr *z = tex_var(ctx, "z", TEX_I32);
    tex_expr *left = tex_add(x, tex_int(ctx, 1));
    tex_expr *right = tex_mul(y, tex_floordiv(y, tex_int(ctx, 2)));
    tex_expr *e = tex_sub(left, right);
    tex_expr *r = texi_substitute(e, 1, &x, &z);
    TT_CHECK(r != e);
    TT_CHECK(r->u.bin.a != left);
    TT_CHECK(r->u.bin.b == right);                  /* unchanged subtree shared */
    TT_CHECK(r->u.bin.a->u.bin.b == left->u.bin.b); /* the constant too */
    /* deeper: only the spine down to the one changed leaf is new */
    tex_expr *deep = tex_add(tex_add(tex_add(x, y), tex_mul(y, y)), tex_mul(z, z));
    tex_expr *d = texi_substitute(deep, 1, &x, &z);
    TT_CHECK(d != deep && d->u.bin.a != deep->u.bin.a);
    TT_CHECK(d->u.bin.b == deep->u.bin.b);
    TT_CHECK(d->u.bin.a->u.bin.b == deep->u.bin.a->u.bin.b);
    TT_CHECK(d->u.bin.a->u.bin.a != deep->u.bin.a->u.bin.a);
    TT_CHECK(d->u.bin.a->u.bin.a->u.bin.b == y);
    /* no callback, or a callback that never replaces: the same pointer */
    TT_CHECK(texi_expr_mutate(deep, NULL, NULL) == deep);
    tex_ctx_free(ctx);
}

typedef struct {
    int calls;
    tex_expr *zero;
} counter;

/* Replaces every ADD by 0; counts its calls. */
static tex_expr *zero_adds(tex_expr *e, void *ud)
{
    counter *c = ud;
    c->calls++;
    return e->kind == TEXI_EXPR_ADD ? c->zero : NULL;
}

static void test_mutate_replacement_stops_descent(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *x = tex_var(ctx, "x", TEX_I32), *y = tex_var(ctx, "y", TEX_I32);
    counter c = {0, tex_int(ctx, 0)};
    /* (x + y)*(x + y) - y: the ADDs' children are never offered */
    tex_expr *e = tex_sub(tex_mul(tex_add(x, y), tex_add(x, y)), y);
    tex_expr *r = texi_expr_mutate(e, zero_adds, &c);
    CHECK_EXPR(r, "0*0 - y");
    TT_EQ_INT(c.calls, 5); /* SUB, MUL, ADD, ADD, y */
    /* a top-level replacement returns the replacement itself */
    c.calls = 0;
    tex_expr *sum = tex_add(x, y);
    TT_CHECK(texi_expr_mutate(sum, zero_adds, &c) == c.zero);
    TT_EQ_INT(c.calls, 1);
    tex_ctx_free(ctx);
}

typedef struct {
    tex_expr *seen[32];
    int n;
    enum texi_expr_kind prune; /* do not descend below nodes of this kind */
} walk_log;

static bool log_node(tex_expr *e, void *ud)
{
    walk_log *w = ud;
    if (w->n < 32)
        w->seen[w->n++] = e;
    return e->kind != w->prune;
}

static void test_visit_order_and_pruning(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *x = tex_var(ctx, "x", TEX_I32), *y = tex_var(ctx, "y", TEX_I32);
    tex_expr *m = tex_mul(x, y);
    tex_expr *e = tex_add(m, tex_select(tex_lt(x, y), x, y));
    walk_log w = {{NULL}, 0, TEXI_EXPR_KIND_COUNT};
    texi_expr_visit(e, log_node, &w);
    TT_EQ_INT(w.n, 10); /* ADD MUL x y SELECT LT x y x y */
    TT_CHECK(w.seen[0] == e && w.seen[1] == m && w.seen[2] == x && w.seen[3] == y);
    TT_CHECK(w.seen[4] == e->u.bin.b && w.seen[5]->kind == TEXI_EXPR_LT);

    walk_log p = {{NULL}, 0, TEXI_EXPR_MUL};
    texi_expr_visit(e, log_node, &p);
    TT_CHECK(p.seen[0] == e && p.seen[1] == m && p.seen[2] == e->u.bin.b);
    TT_EQ_INT(p.n, 8);                   /* ADD MUL SELECT LT x y x y */
    texi_expr_visit(NULL, log_node, &p); /* a no-op */
    TT_EQ_INT(p.n, 8);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------------ statements */

typedef struct {
    tex_ctx *ctx;
    tex_expr *i, *j, *a;
    texi_buffer *buf;
} fixture;

static fixture setup(void)
{
    fixture f;
    f.ctx = tex_ctx_new();
    f.i = tex_var(f.ctx, "i", TEX_I32);
    f.j = tex_var(f.ctx, "j", TEX_I32);
    f.a = tex_var(f.ctx, "a", TEX_F32);
    f.buf = texi_buffer_new(f.ctx, "buf", TEX_F32, TEXI_SCOPE_GLOBAL, 1,
                            (tex_expr *[]){tex_int(f.ctx, 4096)});
    return f;
}

/* Expression callback: the constant 64 becomes 32. */
static tex_expr *halve_64(tex_expr *e, void *ud)
{
    (void)ud;
    int64_t v;
    if (texi_expr_is_int_const(e, &v) && v == 64)
        return texi_int_imm(e->ctx, e->dtype, 32);
    return NULL;
}

static void test_stmt_mutate_loop_bounds(void)
{
    fixture f = setup();
    tex_ctx *ctx = f.ctx;
    tex_expr *c0 = tex_int(ctx, 0), *c64 = tex_int(ctx, 64), *c8 = tex_int(ctx, 8);
    tex_stmt *st = texi_store_new(ctx, f.buf, tex_add(tex_mul(f.i, c64), f.j), f.a);
    tex_stmt *inner = texi_for_new(ctx, f.j, c0, c64, TEXI_FOR_VECTORIZED, -1, st);
    tex_stmt *other =
        texi_for_new(ctx, f.j, c0, c8, TEXI_FOR_SERIAL, -1, texi_store_new(ctx, f.buf, f.j, f.a));
    tex_stmt *outer = texi_for_new(ctx, f.i, c0, c8, TEXI_FOR_PARALLEL, -1,
                                   texi_seq_new(ctx, 2, (tex_stmt *[]){inner, other}));
    char *before = texi_stmt_str(outer);
    tex_stmt *r = texi_stmt_mutate(ctx, outer, NULL, halve_64, NULL);
    CHECK_STMT(r, "for (i, 0, 8) parallel {\n"
                  "  for (j, 0, 32) vectorized {\n"
                  "    buf[i*32 + j] = a\n"
                  "  }\n"
                  "  for (j, 0, 8) {\n"
                  "    buf[j] = a\n"
                  "  }\n"
                  "}\n");
    CHECK_STMT(outer, before); /* the input is untouched */
    free(before);
    TT_CHECK(r != outer && r->u.loop.body != outer->u.loop.body);
    TT_CHECK(r->u.loop.min == c0 && r->u.loop.extent == c8); /* unchanged bounds shared */
    TT_CHECK(r->u.loop.var == f.i && r->u.loop.for_kind == TEXI_FOR_PARALLEL);
    tex_stmt *const *items = r->u.loop.body->u.seq.items;
    TT_CHECK(items[1] == other); /* the unchanged sibling is the same statement */
    TT_CHECK(items[0]->u.loop.for_kind == TEXI_FOR_VECTORIZED);
    TT_CHECK(items[0]->u.loop.body->u.store.value == f.a);
    /* nothing changes: the same statement comes back */
    TT_CHECK(texi_stmt_mutate(ctx, other, NULL, halve_64, NULL) == other);
    TT_CHECK(texi_stmt_mutate(ctx, outer, NULL, NULL, NULL) == outer);
    tex_ctx_free(ctx);
}

/* Statement callback: every STORE becomes an EVALUATE of its value. */
static tex_stmt *stores_to_evaluates(tex_stmt *s, void *ud)
{
    tex_ctx *ctx = ud;
    return s->kind == TEXI_STMT_STORE ? texi_evaluate_new(ctx, s->u.store.value) : NULL;
}

static void test_stmt_pre_replacement(void)
{
    fixture f = setup();
    tex_ctx *ctx = f.ctx;
    tex_stmt *st = texi_store_new(ctx, f.buf, f.i, tex_exp(f.a));
    tex_stmt *bar = texi_barrier_new(ctx, TEXI_SCOPE_SHARED);
    tex_stmt *s =
        texi_if_new(ctx, tex_lt(f.i, f.j), texi_seq_new(ctx, 2, (tex_stmt *[]){st, bar}), bar);
    tex_stmt *r = texi_stmt_mutate(ctx, s, stores_to_evaluates, NULL, ctx);
    CHECK_STMT(r, "if (i < j) {\n  exp(a)\n  barrier(shared)\n} else {\n  barrier(shared)\n}\n");
    TT_CHECK(r->u.ifs.cond == s->u.ifs.cond && r->u.ifs.else_s == bar);
    TT_CHECK(r->u.ifs.then_s->u.seq.items[1] == bar);
    tex_ctx_free(ctx);
}

typedef struct {
    tex_expr *from, *to;
} subst;

static tex_expr *subst_var(tex_expr *e, void *ud)
{
    subst *s = ud;
    return e == s->from ? s->to : NULL;
}

/* One statement of every kind, with i in each expression slot, rewritten i -> j. */
static void test_stmt_mutate_every_kind(void)
{
    fixture f = setup();
    tex_ctx *ctx = f.ctx;
    tex_expr *i = f.i;
    tex_tensor *T = tex_placeholder_c(ctx, "T", TEX_F32, 1, (int64_t[]){64});
    texi_buffer *S =
        texi_buffer_new(ctx, "S", TEX_F32, TEXI_SCOPE_SHARED, 1, (tex_expr *[]){tex_int(ctx, 16)});
    tex_expr *x = tex_var(ctx, "x", TEX_I32);
    tex_stmt *store = texi_store_new(ctx, f.buf, i, tex_cast(TEX_F32, i));
    tex_stmt *provide = texi_provide_new(ctx, T, 1, &i, tex_cast(TEX_F32, x));
    tex_stmt *items[] = {
        provide,
        texi_evaluate_new(ctx, tex_add(i, x)),
        texi_barrier_new(ctx, TEXI_SCOPE_SHARED),
        texi_if_new(ctx, tex_lt(i, tex_int(ctx, 4)), store, texi_evaluate_new(ctx, i)),
    };
    tex_stmt *body = texi_seq_new(ctx, 4, items);
    body = texi_let_new(ctx, x, tex_mul(i, tex_int(ctx, 2)), body);
    body = texi_attr_new(ctx, "hint", i, body);
    body = texi_allocate_new(ctx, S, body);
    body = texi_realize_new(ctx, T, 1, &i, (tex_expr *[]){tex_add(i, tex_int(ctx, 1))},
                            TEXI_SCOPE_LOCAL, body);
    tex_stmt *s =
        texi_for_new(ctx, f.j, i, tex_add(i, tex_int(ctx, 8)), TEXI_FOR_THREAD, TEX_THREAD_Y, body);
    subst sub = {i, f.j};
    tex_stmt *r = texi_stmt_mutate(ctx, s, NULL, subst_var, &sub);
    CHECK_STMT(r, "for (j, j, j + 8) bind threadIdx.y {\n"
                  "  realize T([j, j + 1]) local {\n"
                  "    allocate S: f32[16] shared {\n"
                  "      attr hint = j {\n"
                  "        let x = j*2\n"
                  "        T[j] = f32(x)\n"
                  "        j + x\n"
                  "        barrier(shared)\n"
                  "        if (j < 4) {\n"
                  "          buf[j] = f32(j)\n"
                  "        } else {\n"
                  "          j\n"
                  "        }\n"
                  "      }\n"
                  "    }\n"
                  "  }\n"
                  "}\n");
    TT_CHECK(r->u.loop.thread_tag == TEX_THREAD_Y);
    /* the barrier (no expressions) is shared; the for's var is kept */
    const tex_stmt *let = r->u.loop.body->u.realize.body->u.alloc.body->u.attr.body;
    TT_CHECK(let->kind == TEXI_STMT_LET && let->u.let.var == x);
    TT_CHECK(let->u.let.body->u.seq.items[2] == items[2]);
    /* mapping back gives an equal statement (binders such as the loop's j are
     * never offered to the expression callback, so they stay) */
    subst back = {f.j, i};
    tex_stmt *again = texi_stmt_mutate(ctx, r, NULL, subst_var, &back);
    TT_CHECK(again != s && texi_stmt_equal(again, s));
    TT_CHECK(texi_stmt_hash(again) == texi_stmt_hash(s));
    TT_CHECK(again->u.loop.var == f.j);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------- constructors */

static void test_seq_flattening(void)
{
    fixture f = setup();
    tex_ctx *ctx = f.ctx;
    tex_stmt *s[4];
    for (int k = 0; k < 4; k++)
        s[k] = texi_store_new(ctx, f.buf, tex_int(ctx, k), f.a);
    tex_stmt *ab = texi_seq_new(ctx, 2, (tex_stmt *[]){s[0], s[1]});
    tex_stmt *cd = texi_seq_new(ctx, 2, (tex_stmt *[]){s[2], s[3]});
    tex_stmt *all = texi_seq_new(ctx, 3, (tex_stmt *[]){ab, cd, s[0]});
    TT_CHECK(all && all->kind == TEXI_STMT_SEQ);
    TT_EQ_INT(all->u.seq.n, 5);
    for (int k = 0; k < 5; k++)
        TT_CHECK(all->u.seq.items[k] == s[k % 4]);
    TT_CHECK(texi_seq_new(ctx, 1, &s[2]) == s[2]);
    tex_stmt *empty = texi_seq_new(ctx, 0, NULL);
    TT_CHECK(empty && empty->kind == TEXI_STMT_SEQ && empty->u.seq.n == 0);
    TT_CHECK(texi_seq_new(ctx, 2, (tex_stmt *[]){empty, s[1]}) == s[1]);
    /* the caller's array is copied */
    tex_stmt *arr[2] = {s[0], s[1]};
    tex_stmt *q = texi_seq_new(ctx, 2, arr);
    arr[0] = s[3];
    TT_CHECK(q->u.seq.items[0] == s[0]);
    TT_EQ_INT(tex_errcode(ctx), 0);
    tex_ctx_free(ctx);
}

typedef struct {
    const tex_stmt *seen[16];
    int n;
} stmt_log;

/* Statement visitor: logs s; does not descend into ATTR "atomic". */
static bool log_stmt(const tex_stmt *s, void *ud)
{
    stmt_log *w = ud;
    if (w->n < 16)
        w->seen[w->n] = s;
    w->n++;
    return !texi_attr_is(s, TEXI_ATTR_ATOMIC);
}

static void test_stmt_visit_and_attr_keys(void)
{
    fixture f = setup();
    tex_ctx *ctx = f.ctx;
    tex_stmt *store = texi_store_new(ctx, f.buf, f.i, f.a);
    tex_stmt *atomic = texi_attr_named(ctx, TEXI_ATTR_ATOMIC, NULL, store);
    tex_stmt *bar = texi_barrier_new(ctx, TEXI_SCOPE_SHARED);
    tex_stmt *ev = texi_evaluate_new(ctx, f.i);
    tex_stmt *branch = texi_if_new(ctx, tex_lt(f.i, f.j), bar, ev);
    tex_stmt *other = texi_attr_new(ctx, "region", NULL, texi_evaluate_new(ctx, f.j));
    tex_stmt *seq = texi_seq_new(ctx, 3, (tex_stmt *[]){atomic, branch, other});
    tex_stmt *loop = texi_for_new(ctx, f.i, tex_int(ctx, 0), tex_int(ctx, 8), TEXI_FOR_THREAD,
                                  TEX_THREAD_X, seq);
    stmt_log w = {{NULL}, 0};
    texi_stmt_visit(loop, log_stmt, &w);
    TT_EQ_INT(w.n, 8); /* FOR SEQ ATTR(atomic, pruned) IF BARRIER EVALUATE ATTR EVALUATE */
    TT_CHECK(w.seen[0] == loop && w.seen[1] == seq && w.seen[2] == atomic);
    TT_CHECK(w.seen[3] == branch && w.seen[4] == bar && w.seen[5] == ev && w.seen[6] == other);
    texi_stmt_visit(NULL, log_stmt, &w); /* a no-op */
    TT_EQ_INT(w.n, 8);

    /* named keys: the constructors and the lookup agree */
    TT_EQ_STR(atomic->u.attr.key, "atomic");
    TT_CHECK(texi_attr_is(atomic, TEXI_ATTR_ATOMIC) && !texi_attr_is(atomic, TEXI_ATTR_ASSERT));
    TT_CHECK(
        texi_attr_is(texi_attr_new(ctx, "thread_allreduce", NULL, ev), TEXI_ATTR_THREAD_ALLREDUCE));
    TT_EQ_INT(other->u.attr.id, TEXI_ATTR_OTHER);
    TT_CHECK(!texi_attr_is(store, TEXI_ATTR_ATOMIC));

    /* synchronization and thread loops */
    TT_CHECK(texi_stmt_has_sync(loop) && !texi_stmt_has_sync(other));
    TT_CHECK(texi_stmt_has_sync(texi_attr_named(ctx, TEXI_ATTR_THREAD_ALLREDUCE, NULL, ev)));
    TT_CHECK(texi_stmt_is_thread_loop(loop, false) && !texi_stmt_is_thread_loop(seq, true));
    tex_stmt *vloop =
        texi_for_new(ctx, f.i, tex_int(ctx, 0), tex_int(ctx, 8), TEXI_FOR_THREAD, TEX_VTHREAD, ev);
    TT_CHECK(texi_stmt_is_thread_loop(vloop, true) && !texi_stmt_is_thread_loop(vloop, false));

    /* the vectorizer's reason is the value, printed after the key */
    tex_stmt *vf = texi_attr_vector_failed(ctx, TEXI_VECTOR_EXTENT, ev);
    TT_CHECK(texi_attr_is(vf, TEXI_ATTR_VECTORIZE_FAILED));
    TT_EQ_STR(texi_vector_reason_text(vf), "extent is not a constant");
    TT_CHECK(texi_vector_reason_text(atomic) == NULL);
    CHECK_STMT(vf, "attr vectorize_failed(extent is not a constant) {\n  i\n}\n");
    TT_EQ_INT(tex_errcode(ctx), 0);
    tex_ctx_free(ctx);
}

typedef struct {
    const tex_expr *vars[8]; /* the loop variables met, in order */
    int n;
    bool fail;      /* fn fails (returns NULL) */
    bool body_seen; /* some loop got a body other than its own */
} loop_log;

/* Loop callback: logs the loop and makes it serial. */
static tex_stmt *serialize(tex_ctx *ctx, tex_stmt *loop, tex_stmt *body, void *ud)
{
    loop_log *l = ud;
    if (l->n < 8)
        l->vars[l->n++] = loop->u.loop.var;
    l->body_seen |= body != loop->u.loop.body;
    if (l->fail)
        return NULL;
    if (loop->u.loop.for_kind == TEXI_FOR_SERIAL)
        return texi_stmt_with_body(ctx, loop, body);
    return texi_for_new(ctx, loop->u.loop.var, loop->u.loop.min, loop->u.loop.extent,
                        TEXI_FOR_SERIAL, -1, body);
}

/* texi_stmt_map_loops: innermost loops first, each given its rewritten body;
 * nothing rebuilt when nothing changes; a failure is a NULL result. */
static void test_map_loops(void)
{
    fixture f = setup();
    tex_ctx *ctx = f.ctx;
    tex_expr *c0 = tex_int(ctx, 0), *c8 = tex_int(ctx, 8);
    tex_stmt *st = texi_store_new(ctx, f.buf, tex_add(tex_mul(f.i, c8), f.j), f.a);
    tex_stmt *inner = texi_for_new(ctx, f.j, c0, c8, TEXI_FOR_VECTORIZED, -1, st);
    tex_stmt *ev = texi_evaluate_new(ctx, f.i);
    tex_stmt *outer = texi_for_new(ctx, f.i, c0, c8, TEXI_FOR_SERIAL, -1,
                                   texi_seq_new(ctx, 2, (tex_stmt *[]){inner, ev}));
    loop_log l = {{NULL}, 0, false, false};
    tex_stmt *r = texi_stmt_map_loops(ctx, outer, serialize, &l);
    TT_EQ_INT(l.n, 2);
    TT_CHECK(l.vars[0] == f.j && l.vars[1] == f.i);
    TT_CHECK(l.body_seen); /* the outer loop got the rewritten inner one */
    CHECK_STMT(r, "for (i, 0, 8) {\n  for (j, 0, 8) {\n    buf[i*8 + j] = a\n  }\n  i\n}\n");
    TT_CHECK(r != outer && r->u.loop.body->u.seq.items[1] == ev);

    loop_log again = {{NULL}, 0, false, false};
    TT_CHECK(texi_stmt_map_loops(ctx, r, serialize, &again) == r); /* nothing to do */
    TT_CHECK(!again.body_seen && again.n == 2);
    TT_CHECK(texi_stmt_map_loops(ctx, ev, serialize, &again) == ev); /* no loop at all */

    loop_log failing = {{NULL}, 0, true, false};
    TT_CHECK(texi_stmt_map_loops(ctx, outer, serialize, &failing) == NULL);
    TT_EQ_INT(failing.n, 1); /* the walk stops at the first failure */
    tex_ctx_free(ctx);
}

/* Expression visitor: logs the root it is given and stops there. */
static bool log_root(tex_expr *e, void *ud)
{
    walk_log *w = ud;
    if (w->n < 32)
        w->seen[w->n++] = e;
    return false;
}

/* texi_stmt_body / texi_stmt_with_body on every kind with a body, and
 * texi_stmt_visit_exprs on a statement's own expressions only. */
static void test_bodies_and_own_exprs(void)
{
    fixture f = setup();
    tex_ctx *ctx = f.ctx;
    tex_tensor *T = tex_placeholder_c(ctx, "T", TEX_F32, 1, (int64_t[]){64});
    tex_expr *c0 = tex_int(ctx, 0), *c8 = tex_int(ctx, 8);
    tex_stmt *st = texi_store_new(ctx, f.buf, f.i, f.a);
    tex_stmt *ev = texi_evaluate_new(ctx, f.j);
    tex_stmt *with_body[] = {
        texi_for_new(ctx, f.i, c0, c8, TEXI_FOR_THREAD, TEX_THREAD_Y, st),
        texi_realize_new(ctx, T, 1, &c0, &c8, TEXI_SCOPE_SHARED, st),
        texi_allocate_new(ctx, f.buf, st),
        texi_let_new(ctx, f.i, f.j, st),
        texi_attr_new(ctx, "hint", f.j, st),
    };
    for (size_t k = 0; k < sizeof with_body / sizeof *with_body; k++) {
        tex_stmt *s = with_body[k];
        TT_CHECK(texi_stmt_body(s) == st);
        TT_CHECK(texi_stmt_with_body(ctx, s, st) == s);
        TT_CHECK(texi_stmt_with_body(ctx, s, NULL) == NULL);
        tex_stmt *r = texi_stmt_with_body(ctx, s, ev);
        TT_CHECK(r && r != s && r->kind == s->kind && texi_stmt_body(r) == ev);
        TT_CHECK(r && texi_stmt_equal(texi_stmt_with_body(ctx, r, st), s));
    }
    TT_CHECK(texi_stmt_body(st) == NULL && texi_stmt_body(ev) == NULL);
    TT_CHECK(texi_stmt_body(texi_if_new(ctx, tex_lt(f.i, f.j), st, NULL)) == NULL);

    walk_log w = {{NULL}, 0, TEXI_EXPR_KIND_COUNT};
    texi_stmt_visit_exprs(with_body[0], log_root, &w); /* bounds, not the body */
    TT_CHECK(w.n == 2 && w.seen[0] == c0 && w.seen[1] == c8);
    w.n = 0;
    texi_stmt_visit_exprs(st, log_root, &w);
    TT_CHECK(w.n == 2 && w.seen[0] == f.i && w.seen[1] == f.a);
    w.n = 0;
    texi_stmt_visit_exprs(texi_if_new(ctx, tex_lt(f.i, f.j), st, ev), log_root, &w);
    TT_CHECK(w.n == 1 && w.seen[0]->kind == TEXI_EXPR_LT);
    w.n = 0;
    texi_stmt_visit_exprs(with_body[4], log_root, &w);
    TT_CHECK(w.n == 1 && w.seen[0] == f.j);
    w.n = 0;
    texi_stmt_visit_exprs(texi_barrier_new(ctx, TEXI_SCOPE_SHARED), log_root, &w);
    TT_EQ_INT(w.n, 0);
    TT_EQ_INT(tex_errcode(ctx), 0);
    tex_ctx_free(ctx);
}

static void test_constructor_arrays_and_null_operands(void)
{
    fixture f = setup();
    tex_ctx *ctx = f.ctx;
    tex_tensor *T = tex_placeholder_c(ctx, "T", TEX_F32, 2, (int64_t[]){8, 8});
    tex_expr *idx[2] = {f.i, f.j};
    tex_stmt *p = texi_provide_new(ctx, T, 2, idx, f.a);
    idx[0] = f.j;
    TT_CHECK(p->u.provide.idx[0] == f.i); /* copied */
    tex_stmt *st = texi_store_new(ctx, f.buf, f.i, f.a);
    tex_stmt *loop = texi_for_new(ctx, f.i, tex_int(ctx, 0), tex_int(ctx, 8), TEXI_FOR_PARALLEL,
                                  TEX_THREAD_X, st);
    TT_EQ_INT(loop->u.loop.thread_tag, -1); /* only thread loops carry a tag */
    TT_EQ_INT(tex_errcode(ctx), 0);

    TT_CHECK(texi_for_new(ctx, f.i, tex_int(ctx, 0), NULL, TEXI_FOR_SERIAL, -1, st) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    TT_CHECK(strstr(tex_errmsg(ctx), "texi_for_new") && strstr(tex_errmsg(ctx), "extent"));
    tex_clear_error(ctx);
    TT_CHECK(texi_seq_new(ctx, 2, (tex_stmt *[]){st, NULL}) == NULL);
    TT_CHECK(texi_provide_new(ctx, T, 2, (tex_expr *[]){f.i, NULL}, f.a) == NULL);
    TT_CHECK(texi_store_new(ctx, f.buf, f.i, NULL) == NULL);
    TT_CHECK(texi_if_new(ctx, NULL, st, NULL) == NULL);
    TT_CHECK(texi_let_new(ctx, f.i, f.j, NULL) == NULL);
    TT_CHECK(texi_attr_new(ctx, NULL, NULL, st) == NULL);
    TT_CHECK(texi_allocate_new(ctx, NULL, st) == NULL);
    TT_CHECK(texi_evaluate_new(ctx, NULL) == NULL);
    TT_CHECK(texi_realize_new(ctx, T, 1, &f.i, (tex_expr *[]){NULL}, TEXI_SCOPE_GLOBAL, st) ==
             NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    /* optional operands */
    tex_clear_error(ctx);
    TT_CHECK(texi_if_new(ctx, tex_lt(f.i, f.j), st, NULL) != NULL);
    TT_CHECK(texi_attr_new(ctx, "k", NULL, st) != NULL);
    TT_EQ_INT(tex_errcode(ctx), 0);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------- allocation failure */

typedef struct {
    long budget; /* allocations still allowed; < 0: unlimited */
} fail_alloc;

static void *limited_alloc(void *user, size_t size)
{
    fail_alloc *fa = user;
    if (fa->budget == 0)
        return NULL;
    if (fa->budget > 0)
        fa->budget--;
    return malloc(size);
}

static void plain_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

static void test_out_of_memory(void)
{
    fail_alloc fa = {-1};
    tex_allocator al = {sizeof al, limited_alloc, plain_free, &fa};
    tex_ctx *ctx = tex_ctx_new_ex(&al);
    TT_CHECK(ctx != NULL);
    if (!ctx)
        return;
    tex_expr *x = tex_var(ctx, "x", TEX_I32), *y = tex_var(ctx, "y", TEX_I32);
    tex_expr *e = tex_add(tex_mul(x, tex_add(x, y)), tex_select(tex_lt(x, y), x, y));
    texi_buffer *buf = texi_buffer_new(ctx, "buf", TEX_I32, TEXI_SCOPE_GLOBAL, 1, &x);
    tex_stmt *s = texi_for_new(ctx, x, tex_int(ctx, 0), y, TEXI_FOR_SERIAL, -1,
                               texi_store_new(ctx, buf, x, e));
    tex_tensor *T = tex_placeholder_c(ctx, "T", TEX_I32, 2, (int64_t[]){8, 8});
    tex_expr *acc = tex_add(TEX_AT(T, x, y), x);
    tex_stmt *nest = texi_realize_new(
        ctx, T, 2, (tex_expr *[]){x, y}, (tex_expr *[]){y, x}, TEXI_SCOPE_GLOBAL,
        texi_seq_new(ctx, 2,
                     (tex_stmt *[]){texi_provide_new(ctx, T, 2, (tex_expr *[]){x, y}, acc), s}));
    subst sub = {x, y}, none = {buf->data, y};
    fa.budget = 0; /* the arena's current chunk is all that is left */
    int n;
    for (n = 0; n < 100000; n++) {
        tex_expr *r = texi_substitute(e, 1, &x, &y);
        if (!r)
            break;
        TT_CHECK(r->kind == TEXI_EXPR_ADD);
    }
    TT_CHECK(n < 100000);
    TT_EQ_INT(tex_errcode(ctx), TEX_ENOMEM);
    /* unchanged trees need no memory */
    TT_CHECK(texi_substitute(e, 1, &buf->data, &y) == e);
    TT_CHECK(texi_substitute(acc, 1, &buf->data, &y) == acc);
    TT_CHECK(texi_stmt_mutate(ctx, nest, NULL, subst_var, &none) == nest);
    TT_CHECK(texi_stmt_mutate(ctx, s, NULL, subst_var, &sub) == NULL);
    tex_ctx_free(ctx);
}

int main(void)
{
    TT_RUN(test_substitute);
    TT_RUN(test_substitute_every_kind);
    TT_RUN(test_sharing);
    TT_RUN(test_mutate_replacement_stops_descent);
    TT_RUN(test_visit_order_and_pruning);
    TT_RUN(test_stmt_mutate_loop_bounds);
    TT_RUN(test_stmt_pre_replacement);
    TT_RUN(test_stmt_mutate_every_kind);
    TT_RUN(test_seq_flattening);
    TT_RUN(test_stmt_visit_and_attr_keys);
    TT_RUN(test_map_loops);
    TT_RUN(test_bodies_and_own_exprs);
    TT_RUN(test_constructor_arrays_and_null_operands);
    TT_RUN(test_out_of_memory);
    return tt_finish();
}
