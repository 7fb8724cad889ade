/*
 * Structural equality and hashing (src/ir/equal.c): trees built twice are
 * equal and hash alike; each field that differs makes them unequal; variables,
 * tensors, buffers and axes compare by identity; floats bitwise. A property
 * test over thousands of random trees checks equal => same hash, that hashes
 * separate unequal trees well, and that a tree equals its deep copies (one
 * made by hand, one through texi_expr_mutate). Equality up to the renaming
 * of bound variables (texi_expr_alpha_equal).
 */
#include "ir/ir.h"
#include "tt.h"

#include <math.h>
#include <stdlib.h>

#define EXPECT_EQUAL(x, y)                                                                         \
    do {                                                                                           \
        const tex_expr *x_ = (x), *y_ = (y);                                                       \
        TT_CHECK(x_ &&y_ &&x_ != y_);                                                              \
        TT_CHECK(texi_expr_equal(x_, y_) && texi_expr_equal(y_, x_));                              \
        TT_CHECK(texi_expr_hash(x_) == texi_expr_hash(y_));                                        \
    } while (0)

#define EXPECT_DIFFER(x, y)                                                                        \
    do {                                                                                           \
        const tex_expr *x_ = (x), *y_ = (y);                                                       \
        TT_CHECK(x_ &&y_);                                                                         \
        TT_CHECK(!texi_expr_equal(x_, y_) && !texi_expr_equal(y_, x_));                            \
    } while (0)

#define EXPECT_STMT_EQUAL(x, y)                                                                    \
    do {                                                                                           \
        const tex_stmt *x_ = (x), *y_ = (y);                                                       \
        TT_CHECK(x_ &&y_ &&x_ != y_);                                                              \
        TT_CHECK(texi_stmt_equal(x_, y_) && texi_stmt_equal(y_, x_));                              \
        TT_CHECK(texi_stmt_hash(x_) == texi_stmt_hash(y_));                                        \
    } while (0)

#define EXPECT_STMT_DIFFER(x, y)                                                                   \
    do {                                                                                           \
        const tex_stmt *x_ = (x), *y_ = (y);                                                       \
        TT_CHECK(x_ &&y_);                                                                         \
        TT_CHECK(!texi_stmt_equal(x_, y_) && !texi_stmt_equal(y_, x_));                            \
    } while (0)

static tex_expr *bin(enum texi_expr_kind k, tex_expr *a, tex_expr *b)
{
    return texi_binary(k, a, b);
}

static void test_constants(void)
{
    tex_ctx *ctx = tex_ctx_new();
    EXPECT_EQUAL(texi_int_imm(ctx, TEX_I32, 3), texi_int_imm(ctx, TEX_I32, 3));
    EXPECT_DIFFER(texi_int_imm(ctx, TEX_I32, 3), texi_int_imm(ctx, TEX_I32, 4));
    EXPECT_DIFFER(texi_int_imm(ctx, TEX_I32, 3), texi_int_imm(ctx, TEX_I64, 3));
    EXPECT_DIFFER(texi_int_imm(ctx, TEX_U8, 1), texi_int_imm(ctx, TEX_BOOL, 1));
    EXPECT_EQUAL(texi_float_imm(ctx, TEX_F32, 1.5), texi_float_imm(ctx, TEX_F32, 1.5));
    EXPECT_DIFFER(texi_float_imm(ctx, TEX_F32, 1.5), texi_float_imm(ctx, TEX_F64, 1.5));
    EXPECT_DIFFER(texi_float_imm(ctx, TEX_F32, 1.5), texi_float_imm(ctx, TEX_F32, 2.5));
    EXPECT_DIFFER(texi_float_imm(ctx, TEX_F64, 0.0), texi_float_imm(ctx, TEX_F64, -0.0));
    EXPECT_EQUAL(texi_float_imm(ctx, TEX_F64, NAN), texi_float_imm(ctx, TEX_F64, NAN));
    EXPECT_EQUAL(texi_float_imm(ctx, TEX_F32, -INFINITY), texi_float_imm(ctx, TEX_F32, -INFINITY));
    /* an integer constant is not a float constant of the same value */
    EXPECT_DIFFER(texi_int_imm(ctx, TEX_I32, 0), texi_float_imm(ctx, TEX_F32, 0.0));
    TT_CHECK(texi_expr_equal(NULL, NULL));
    TT_CHECK(!texi_expr_equal(texi_int_imm(ctx, TEX_I32, 0), NULL));
    TT_CHECK(!texi_expr_equal(NULL, texi_int_imm(ctx, TEX_I32, 0)));
    tex_ctx_free(ctx);
}

static void test_identity(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *x1 = tex_var(ctx, "x", TEX_I32), *x2 = tex_var(ctx, "x", TEX_I32);
    TT_CHECK(texi_expr_equal(x1, x1));
    EXPECT_DIFFER(x1, x2);
    EXPECT_DIFFER(tex_add(x1, x1), tex_add(x1, x2));
    tex_tensor *A1 = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){8});
    tex_tensor *A2 = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){8});
    EXPECT_DIFFER(TEX_AT(A1, x1), TEX_AT(A2, x1));
    texi_buffer *b1 = texi_buffer_new(ctx, "b", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &x1);
    texi_buffer *b2 = texi_buffer_new(ctx, "b", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &x1);
    EXPECT_DIFFER(texi_load_new(b1, x1), texi_load_new(b2, x1));
    EXPECT_EQUAL(texi_load_new(b1, x1), texi_load_new(b1, x1));
    tex_iter *k1 = tex_reduce_axis(ctx, "k", tex_int(ctx, 4));
    tex_iter *k2 = tex_reduce_axis(ctx, "k", tex_int(ctx, 4));
    tex_expr *body = tex_cast(TEX_F32, x1);
    EXPECT_DIFFER(texi_reduce_new(TEXI_REDUCE_SUM, body, 1, &k1, NULL),
                  texi_reduce_new(TEXI_REDUCE_SUM, body, 1, &k2, NULL));
    tex_ctx_free(ctx);
}

/* texi_expr_alpha_equal: paired variables stand for each other (and only
 * for each other), reductions at the same place pair their axes when their
 * ranges agree, and with no pairs it is texi_expr_equal. */
static void test_alpha(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *i = tex_var(ctx, "i", TEX_I32), *j = tex_var(ctx, "j", TEX_I32);
    tex_expr *n = tex_var(ctx, "n", TEX_I32);
    tex_expr *ei = tex_add(tex_mul(i, tex_int(ctx, 2)), n),
             *ej = tex_add(tex_mul(j, tex_int(ctx, 2)), n);
    TT_CHECK(texi_expr_alpha_equal(ei, ej, 1, &i, &j));
    TT_CHECK(!texi_expr_alpha_equal(ei, ej, 0, NULL, NULL));
    TT_CHECK(!texi_expr_alpha_equal(ei, ei, 1, &i, &j)); /* i stands for j only */
    TT_CHECK(!texi_expr_alpha_equal(ej, ej, 1, &i, &j));
    TT_CHECK(!texi_expr_alpha_equal(ei, tex_add(tex_mul(j, tex_int(ctx, 2)), j), 1, &i, &j));
    TT_CHECK(texi_expr_alpha_equal(n, n, 1, &i, &j)); /* an unpaired variable: itself */
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){8, 8});
    tex_iter *k[3] = {tex_reduce_axis(ctx, "k", tex_int(ctx, 8)),
                      tex_reduce_axis(ctx, "r", tex_int(ctx, 8)),
                      tex_reduce_axis(ctx, "k", tex_int(ctx, 7))};
    tex_expr *red[3];
    for (int t = 0; t < 3; t++)
        red[t] =
            texi_reduce_new(TEXI_REDUCE_SUM, TEX_AT(A, t ? j : i, tex_iv(k[t])), 1, &k[t], NULL);
    TT_CHECK(texi_expr_alpha_equal(red[0], red[1], 1, &i, &j));
    TT_CHECK(!texi_expr_alpha_equal(red[0], red[2], 1, &i, &j)); /* another range */
    TT_CHECK(!texi_expr_equal(red[0], red[1]));
    tex_expr *swapped =
        texi_reduce_new(TEXI_REDUCE_SUM, TEX_AT(A, tex_iv(k[1]), j), 1, &k[1], NULL);
    TT_CHECK(!texi_expr_alpha_equal(red[0], swapped, 1, &i, &j));
    tex_ctx_free(ctx);
}

/* Every field of every expression kind: equal when rebuilt, unequal when changed. */
static void test_expr_fields(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *i = tex_var(ctx, "i", TEX_I32), *j = tex_var(ctx, "j", TEX_I32);
    tex_expr *a = tex_var(ctx, "a", TEX_F32), *b = tex_var(ctx, "b", TEX_F32);
    tex_expr *p = tex_var(ctx, "p", TEX_BOOL), *q = tex_var(ctx, "q", TEX_BOOL);
    for (int k = TEXI_EXPR_ADD; k <= TEXI_EXPR_OR; k++) {
        EXPECT_EQUAL(bin(k, tex_add(i, j), j), bin(k, tex_add(i, j), j));
        EXPECT_DIFFER(bin(k, i, j), bin(k, j, i));
        EXPECT_DIFFER(bin(k, i, j), bin(k, i, i));
        EXPECT_DIFFER(bin(k, i, j), bin(k == TEXI_EXPR_OR ? TEXI_EXPR_ADD : k + 1, i, j));
    }
    EXPECT_EQUAL(tex_not(p), tex_not(p));
    EXPECT_DIFFER(tex_not(p), tex_not(q));
    EXPECT_EQUAL(tex_cast(TEX_F32, i), tex_cast(TEX_F32, i));
    EXPECT_DIFFER(tex_cast(TEX_F32, i), tex_cast(TEX_F64, i));
    EXPECT_DIFFER(tex_cast(TEX_F32, i), tex_cast(TEX_F32, j));
    EXPECT_DIFFER(texi_unary(TEXI_EXPR_NOT, TEX_BOOL, p), texi_unary(TEXI_EXPR_CAST, TEX_BOOL, p));
    EXPECT_EQUAL(tex_select(p, a, b), tex_select(p, a, b));
    EXPECT_DIFFER(tex_select(p, a, b), tex_select(q, a, b));
    EXPECT_DIFFER(tex_select(p, a, b), tex_select(p, b, b));
    EXPECT_DIFFER(tex_select(p, a, b), tex_select(p, a, a));
    EXPECT_EQUAL(tex_exp(a), tex_exp(a));
    EXPECT_DIFFER(tex_exp(a), tex_log(a));
    EXPECT_DIFFER(tex_exp(a), tex_exp(b));
    EXPECT_EQUAL(tex_fma(a, b, a), tex_fma(a, b, a));
    EXPECT_DIFFER(tex_fma(a, b, a), tex_fma(a, b, b));
    EXPECT_DIFFER(tex_pow(a, b), tex_pow(b, a));

    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){8, 8});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){8, 8});
    EXPECT_EQUAL(TEX_AT(A, i, tex_add(j, tex_int(ctx, 1))),
                 TEX_AT(A, i, tex_add(j, tex_int(ctx, 1))));
    EXPECT_DIFFER(TEX_AT(A, i, j), TEX_AT(B, i, j));
    EXPECT_DIFFER(TEX_AT(A, i, j), TEX_AT(A, j, i));
    EXPECT_DIFFER(TEX_AT(A, i, j), texi_access_new(A, 1, &i)); /* index count */

    texi_buffer *buf = texi_buffer_new(ctx, "buf", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &i);
    EXPECT_EQUAL(texi_load_new(buf, tex_mul(i, j)), texi_load_new(buf, tex_mul(i, j)));
    EXPECT_DIFFER(texi_load_new(buf, i), texi_load_new(buf, j));

    tex_iter *k = tex_reduce_axis(ctx, "k", tex_int(ctx, 8));
    tex_iter *l = tex_reduce_axis(ctx, "l", tex_int(ctx, 8));
    tex_expr *kv = tex_iv(k);
    tex_expr *body = tex_mul(TEX_AT(A, i, kv), TEX_AT(B, kv, j));
    tex_expr *cond = tex_lt(kv, i);
    enum texi_reduce_op SUM = TEXI_REDUCE_SUM;
    tex_iter *kl[] = {k, l}, *lk[] = {l, k};
    EXPECT_EQUAL(texi_reduce_new(SUM, body, 2, kl, cond), texi_reduce_new(SUM, body, 2, kl, cond));
    EXPECT_EQUAL(texi_reduce_new(SUM, body, 1, kl, NULL), texi_reduce_new(SUM, body, 1, kl, NULL));
    EXPECT_DIFFER(texi_reduce_new(SUM, body, 1, kl, NULL),
                  texi_reduce_new(TEXI_REDUCE_MAX, body, 1, kl, NULL));
    EXPECT_DIFFER(texi_reduce_new(SUM, body, 1, kl, NULL), texi_reduce_new(SUM, a, 1, kl, NULL));
    EXPECT_DIFFER(texi_reduce_new(SUM, body, 1, kl, NULL), texi_reduce_new(SUM, body, 2, kl, NULL));
    EXPECT_DIFFER(texi_reduce_new(SUM, body, 2, kl, NULL), texi_reduce_new(SUM, body, 2, lk, NULL));
    EXPECT_DIFFER(texi_reduce_new(SUM, body, 1, kl, NULL), texi_reduce_new(SUM, body, 1, kl, cond));
    EXPECT_DIFFER(texi_reduce_new(SUM, body, 1, kl, cond),
                  texi_reduce_new(SUM, body, 1, kl, tex_gt(kv, i)));
    tex_ctx_free(ctx);
}

/* ---------------------------------------------------------- statements */

typedef struct {
    tex_ctx *ctx;
    tex_expr *i, *j, *a;
    tex_tensor *A, *B;
    texi_buffer *b1, *b2;
    tex_stmt *s1, *s2; /* two different leaf statements */
} stmt_fixture;

static stmt_fixture stmt_setup(void)
{
    stmt_fixture f;
    f.ctx = tex_ctx_new();
    f.i = tex_var(f.ctx, "i", TEX_I32);
    f.j = tex_var(f.ctx, "j", TEX_I32);
    f.a = tex_var(f.ctx, "a", TEX_F32);
    f.A = tex_placeholder_c(f.ctx, "A", TEX_F32, 2, (int64_t[]){8, 8});
    f.B = tex_placeholder_c(f.ctx, "B", TEX_F32, 2, (int64_t[]){8, 8});
    f.b1 = texi_buffer_new(f.ctx, "b", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &f.i);
    f.b2 = texi_buffer_new(f.ctx, "b", TEX_F32, TEXI_SCOPE_SHARED, 1, &f.i);
    f.s1 = texi_store_new(f.ctx, f.b1, f.i, f.a);
    f.s2 = texi_store_new(f.ctx, f.b1, f.j, f.a);
    return f;
}

static tex_expr *num(tex_ctx *ctx, int v)
{
    return tex_int(ctx, v);
}

static tex_stmt *loop(stmt_fixture *f, tex_expr *var, int min, int ext, enum texi_for_kind kind,
                      int tag, tex_stmt *body)
{
    return texi_for_new(f->ctx, var, num(f->ctx, min), num(f->ctx, ext), kind, tag, body);
}

static void test_stmt_for_store_seq(void)
{
    stmt_fixture f = stmt_setup();
    tex_ctx *ctx = f.ctx;
    enum texi_for_kind SER = TEXI_FOR_SERIAL, THR = TEXI_FOR_THREAD;
    EXPECT_STMT_EQUAL(loop(&f, f.i, 0, 8, SER, -1, f.s1), loop(&f, f.i, 0, 8, SER, -1, f.s1));
    EXPECT_STMT_DIFFER(loop(&f, f.i, 0, 8, SER, -1, f.s1), loop(&f, f.j, 0, 8, SER, -1, f.s1));
    EXPECT_STMT_DIFFER(loop(&f, f.i, 0, 8, SER, -1, f.s1), loop(&f, f.i, 1, 8, SER, -1, f.s1));
    EXPECT_STMT_DIFFER(loop(&f, f.i, 0, 8, SER, -1, f.s1), loop(&f, f.i, 0, 9, SER, -1, f.s1));
    EXPECT_STMT_DIFFER(loop(&f, f.i, 0, 8, SER, -1, f.s1),
                       loop(&f, f.i, 0, 8, TEXI_FOR_PARALLEL, -1, f.s1));
    EXPECT_STMT_DIFFER(loop(&f, f.i, 0, 8, SER, -1, f.s1), loop(&f, f.i, 0, 8, SER, -1, f.s2));
    EXPECT_STMT_EQUAL(loop(&f, f.i, 0, 8, THR, TEX_THREAD_X, f.s1),
                      loop(&f, f.i, 0, 8, THR, TEX_THREAD_X, f.s1));
    EXPECT_STMT_DIFFER(loop(&f, f.i, 0, 8, THR, TEX_THREAD_X, f.s1),
                       loop(&f, f.i, 0, 8, THR, TEX_THREAD_Y, f.s1));

    EXPECT_STMT_EQUAL(texi_store_new(ctx, f.b1, f.i, f.a), f.s1);
    EXPECT_STMT_DIFFER(f.s1, texi_store_new(ctx, f.b2, f.i, f.a));
    EXPECT_STMT_DIFFER(f.s1, f.s2);
    EXPECT_STMT_DIFFER(f.s1, texi_store_new(ctx, f.b1, f.i, tex_exp(f.a)));

    tex_stmt *ab[] = {f.s1, f.s2}, *ba[] = {f.s2, f.s1}, *aba[] = {f.s1, f.s2, f.s1};
    EXPECT_STMT_EQUAL(texi_seq_new(ctx, 2, ab), texi_seq_new(ctx, 2, ab));
    EXPECT_STMT_DIFFER(texi_seq_new(ctx, 2, ab), texi_seq_new(ctx, 2, ba));
    EXPECT_STMT_DIFFER(texi_seq_new(ctx, 2, ab), texi_seq_new(ctx, 3, aba));
    EXPECT_STMT_EQUAL(texi_evaluate_new(ctx, f.a), texi_evaluate_new(ctx, f.a));
    EXPECT_STMT_DIFFER(texi_evaluate_new(ctx, f.a), texi_evaluate_new(ctx, f.i));
    EXPECT_STMT_EQUAL(texi_barrier_new(ctx, TEXI_SCOPE_SHARED),
                      texi_barrier_new(ctx, TEXI_SCOPE_SHARED));
    EXPECT_STMT_DIFFER(texi_barrier_new(ctx, TEXI_SCOPE_SHARED),
                       texi_barrier_new(ctx, TEXI_SCOPE_GLOBAL));
    /* different kinds */
    EXPECT_STMT_DIFFER(texi_evaluate_new(ctx, f.a), f.s1);
    TT_CHECK(texi_stmt_equal(NULL, NULL));
    TT_CHECK(!texi_stmt_equal(f.s1, NULL));
    tex_ctx_free(ctx);
}

static void test_stmt_scoped(void)
{
    stmt_fixture f = stmt_setup();
    tex_ctx *ctx = f.ctx;
    tex_expr *ij[] = {f.i, f.j}, *ji[] = {f.j, f.i};
    tex_stmt *p = texi_provide_new(ctx, f.A, 2, ij, f.a);
    EXPECT_STMT_EQUAL(p, texi_provide_new(ctx, f.A, 2, ij, f.a));
    EXPECT_STMT_DIFFER(p, texi_provide_new(ctx, f.B, 2, ij, f.a));
    EXPECT_STMT_DIFFER(p, texi_provide_new(ctx, f.A, 2, ji, f.a));
    EXPECT_STMT_DIFFER(p, texi_provide_new(ctx, f.A, 1, ij, f.a));
    EXPECT_STMT_DIFFER(p, texi_provide_new(ctx, f.A, 2, ij, tex_exp(f.a)));

    tex_expr *z[] = {num(ctx, 0), num(ctx, 0)}, *e8[] = {num(ctx, 8), num(ctx, 8)};
    tex_expr *e4[] = {num(ctx, 8), num(ctx, 4)};
    enum texi_scope G = TEXI_SCOPE_GLOBAL;
    tex_stmt *r = texi_realize_new(ctx, f.A, 2, z, e8, G, p);
    EXPECT_STMT_EQUAL(r, texi_realize_new(ctx, f.A, 2, z, e8, G, p));
    EXPECT_STMT_DIFFER(r, texi_realize_new(ctx, f.B, 2, z, e8, G, p));
    EXPECT_STMT_DIFFER(r, texi_realize_new(ctx, f.A, 2, e8, e8, G, p));
    EXPECT_STMT_DIFFER(r, texi_realize_new(ctx, f.A, 2, z, e4, G, p));
    EXPECT_STMT_DIFFER(r, texi_realize_new(ctx, f.A, 2, z, e8, TEXI_SCOPE_LOCAL, p));
    EXPECT_STMT_DIFFER(r, texi_realize_new(ctx, f.A, 2, z, e8, G, f.s1));
    EXPECT_STMT_DIFFER(r, texi_realize_new(ctx, f.A, 1, z, e8, G, p));

    EXPECT_STMT_EQUAL(texi_allocate_new(ctx, f.b1, p), texi_allocate_new(ctx, f.b1, p));
    EXPECT_STMT_DIFFER(texi_allocate_new(ctx, f.b1, p), texi_allocate_new(ctx, f.b2, p));
    EXPECT_STMT_DIFFER(texi_allocate_new(ctx, f.b1, p), texi_allocate_new(ctx, f.b1, f.s1));

    tex_expr *c = tex_lt(f.i, f.j);
    EXPECT_STMT_EQUAL(texi_if_new(ctx, c, p, f.s1), texi_if_new(ctx, tex_lt(f.i, f.j), p, f.s1));
    EXPECT_STMT_DIFFER(texi_if_new(ctx, c, p, f.s1), texi_if_new(ctx, tex_gt(f.i, f.j), p, f.s1));
    EXPECT_STMT_DIFFER(texi_if_new(ctx, c, p, f.s1), texi_if_new(ctx, c, f.s2, f.s1));
    EXPECT_STMT_DIFFER(texi_if_new(ctx, c, p, f.s1), texi_if_new(ctx, c, p, f.s2));
    EXPECT_STMT_DIFFER(texi_if_new(ctx, c, p, f.s1), texi_if_new(ctx, c, p, NULL));

    EXPECT_STMT_EQUAL(texi_let_new(ctx, f.i, f.j, p), texi_let_new(ctx, f.i, f.j, p));
    EXPECT_STMT_DIFFER(texi_let_new(ctx, f.i, f.j, p), texi_let_new(ctx, f.j, f.j, p));
    EXPECT_STMT_DIFFER(texi_let_new(ctx, f.i, f.j, p), texi_let_new(ctx, f.i, f.i, p));
    EXPECT_STMT_DIFFER(texi_let_new(ctx, f.i, f.j, p), texi_let_new(ctx, f.i, f.j, f.s1));

    EXPECT_STMT_EQUAL(texi_attr_new(ctx, "k", f.i, p), texi_attr_new(ctx, "k", f.i, p));
    EXPECT_STMT_EQUAL(texi_attr_new(ctx, "k", NULL, p), texi_attr_new(ctx, "k", NULL, p));
    EXPECT_STMT_DIFFER(texi_attr_new(ctx, "k", f.i, p), texi_attr_new(ctx, "q", f.i, p));
    EXPECT_STMT_DIFFER(texi_attr_new(ctx, "k", f.i, p), texi_attr_new(ctx, "k", f.j, p));
    EXPECT_STMT_DIFFER(texi_attr_new(ctx, "k", f.i, p), texi_attr_new(ctx, "k", NULL, p));
    EXPECT_STMT_DIFFER(texi_attr_new(ctx, "k", f.i, p), texi_attr_new(ctx, "k", f.i, f.s1));
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------ random trees */

typedef struct {
    uint64_t s;
    tex_ctx *ctx;
    tex_expr *vars[3];      /* vars[0] and vars[1] share the name "x" */
    tex_tensor *tensors[2]; /* both named "T" */
    texi_buffer *bufs[2];   /* both named "b" */
    tex_iter *axes[2];      /* both named "k" */
    int wide;               /* widens the alphabet: 0 gives many equal pairs */
} gen;

static uint32_t rnd(gen *g, uint32_t n)
{
    g->s ^= g->s << 13;
    g->s ^= g->s >> 7;
    g->s ^= g->s << 17;
    return (uint32_t)(g->s >> 11) % n;
}

static tex_expr *leaf(gen *g)
{
    static const tex_dtype ints[] = {TEX_I32, TEX_I64, TEX_U8};
    static const tex_dtype floats[] = {TEX_F32, TEX_F64, TEX_F16};
    static const double fvals[] = {0.0, -0.0, 1.5, NAN, INFINITY, 0.1};
    uint32_t w = g->wide ? 6 : 2;
    switch (rnd(g, 3)) {
    case 0:
        return texi_int_imm(g->ctx, ints[rnd(g, g->wide ? 3 : 1)], (int64_t)rnd(g, w) - 1);
    case 1:
        return texi_float_imm(g->ctx, floats[rnd(g, g->wide ? 3 : 1)], fvals[rnd(g, w)]);
    default:
        return g->vars[rnd(g, g->wide ? 3 : 2)];
    }
}

static tex_expr *gen_expr(gen *g, int depth)
{
    if (depth == 0 || rnd(g, 4) == 0)
        return leaf(g);
    switch (rnd(g, 10)) {
    case 0:
        return texi_unary(rnd(g, 2) ? TEXI_EXPR_NOT : TEXI_EXPR_CAST, rnd(g, 2) ? TEX_F32 : TEX_I32,
                          gen_expr(g, depth - 1));
    case 1: {
        tex_expr *c = gen_expr(g, depth - 1), *t = gen_expr(g, depth - 1);
        return texi_select_new(c, t, gen_expr(g, depth - 1));
    }
    case 2: {
        static const enum texi_math ops[] = {TEXI_MATH_EXP, TEXI_MATH_POW, TEXI_MATH_FMA};
        enum texi_math op = ops[rnd(g, 3)];
        tex_expr *args[3];
        for (int i = 0; i < texi_math_arity[op]; i++)
            args[i] = gen_expr(g, depth - 1);
        return texi_call_new(op, TEX_F32, texi_math_arity[op], args);
    }
    case 3: {
        tex_expr *idx[2] = {gen_expr(g, depth - 1), gen_expr(g, depth - 1)};
        return texi_access_new(g->tensors[rnd(g, 2)], 1 + (int)rnd(g, 2), idx);
    }
    case 4:
        return texi_load_new(g->bufs[rnd(g, 2)], gen_expr(g, depth - 1));
    case 5: {
        tex_iter *ax[2] = {g->axes[rnd(g, 2)], g->axes[rnd(g, 2)]};
        tex_expr *body = gen_expr(g, depth - 1);
        tex_expr *cond = rnd(g, 2) ? gen_expr(g, depth - 1) : NULL;
        return texi_reduce_new((enum texi_reduce_op)rnd(g, 2), body, 1 + (int)rnd(g, 2), ax, cond);
    }
    default: {
        /* binary: a small subset of kinds keeps collisions likely */
        uint32_t nk = g->wide ? (uint32_t)(TEXI_EXPR_OR - TEXI_EXPR_ADD + 1) : 2;
        enum texi_expr_kind k = (enum texi_expr_kind)(TEXI_EXPR_ADD + (int)rnd(g, nk));
        tex_expr *a = gen_expr(g, depth - 1);
        return texi_binary(k, a, gen_expr(g, depth - 1));
    }
    }
}

static gen gen_setup(tex_ctx *ctx, uint64_t seed, int wide)
{
    gen g = {seed * 0x9E3779B97F4A7C15u + 1, ctx, {NULL}, {NULL}, {NULL}, {NULL}, wide};
    g.vars[0] = tex_var(ctx, "x", TEX_I32);
    g.vars[1] = tex_var(ctx, "x", TEX_I32);
    g.vars[2] = tex_var(ctx, "y", TEX_F32);
    for (int i = 0; i < 2; i++) {
        g.tensors[i] = tex_placeholder_c(ctx, "T", TEX_F32, 2, (int64_t[]){4, 4});
        g.bufs[i] = texi_buffer_new(ctx, "b", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &g.vars[0]);
        g.axes[i] = tex_reduce_axis(ctx, "k", tex_int(ctx, 4));
    }
    return g;
}

/* A deep copy made by hand: every node but variables is new. */
static tex_expr *deep_copy(tex_expr *e)
{
    tex_ctx *ctx = e->ctx;
    tex_expr *k[3] = {NULL, NULL, NULL};
    switch (e->kind) {
    case TEXI_EXPR_INT:
        return texi_int_imm(ctx, e->dtype, e->u.i);
    case TEXI_EXPR_FLOAT:
        return texi_float_imm(ctx, e->dtype, e->u.f);
    case TEXI_EXPR_VAR:
        return e;
    case TEXI_EXPR_NOT:
    case TEXI_EXPR_CAST:
        return texi_unary(e->kind, e->dtype, deep_copy(e->u.un.a));
    case TEXI_EXPR_SELECT:
        return texi_select_new(deep_copy(e->u.sel.cond), deep_copy(e->u.sel.t),
                               deep_copy(e->u.sel.f));
    case TEXI_EXPR_CALL:
        for (int i = 0; i < e->u.call.n_args; i++)
            k[i] = deep_copy(e->u.call.args[i]);
        return texi_call_new(e->u.call.op, e->dtype, e->u.call.n_args, k);
    case TEXI_EXPR_ACCESS:
        for (int i = 0; i < e->u.access.n_idx; i++)
            k[i] = deep_copy(e->u.access.idx[i]);
        return texi_access_new(e->u.access.tensor, e->u.access.n_idx, k);
    case TEXI_EXPR_LOAD:
        return texi_load_new(e->u.load.buf, deep_copy(e->u.load.index));
    case TEXI_EXPR_REDUCE:
        return texi_reduce_new(e->u.red.op, deep_copy(e->u.red.body), e->u.red.n_axes,
                               e->u.red.axes, e->u.red.cond ? deep_copy(e->u.red.cond) : NULL);
    default:
        return texi_binary(e->kind, deep_copy(e->u.bin.a), deep_copy(e->u.bin.b));
    }
}

/* texi_expr_mutate callback: fresh constants, so every spine above one is rebuilt. */
static tex_expr *fresh_constants(tex_expr *e, void *ud)
{
    (void)ud;
    if (e->kind == TEXI_EXPR_INT)
        return texi_int_imm(e->ctx, e->dtype, e->u.i);
    if (e->kind == TEXI_EXPR_FLOAT)
        return texi_float_imm(e->ctx, e->dtype, e->u.f);
    return NULL;
}

static bool has_const(tex_expr *e, void *ud)
{
    if (texi_expr_is_const(e))
        *(bool *)ud = true;
    return true;
}

#define N_TREES 3000

static void test_random_hash_consistency(void)
{
    tex_ctx *ctx = tex_ctx_new();
    gen g = gen_setup(ctx, 1, 0);
    static tex_expr *trees[N_TREES];
    static uint64_t hashes[N_TREES];
    for (int i = 0; i < N_TREES; i++) {
        trees[i] = gen_expr(&g, 1 + (int)rnd(&g, 3));
        hashes[i] = texi_expr_hash(trees[i]);
    }
    long equal_pairs = 0, unequal_pairs = 0, collisions = 0, bad = 0;
    for (int i = 0; i < N_TREES; i++) {
        for (int j = i + 1; j < N_TREES; j++) {
            if (texi_expr_equal(trees[i], trees[j])) {
                equal_pairs++;
                bad += hashes[i] != hashes[j];
                bad += !texi_expr_equal(trees[j], trees[i]);
            } else {
                unequal_pairs++;
                collisions += hashes[i] == hashes[j];
            }
        }
    }
    TT_EQ_INT(bad, 0);
    TT_CHECK(equal_pairs > 1000);                 /* the property was exercised */
    TT_CHECK(collisions * 10000 < unequal_pairs); /* fewer than 0.01% */
    tex_ctx_free(ctx);
}

static void test_random_copies(void)
{
    tex_ctx *ctx = tex_ctx_new();
    gen g = gen_setup(ctx, 7, 1);
    int bad = 0, rebuilt = 0;
    for (int n = 0; n < 3000; n++) {
        tex_expr *e = gen_expr(&g, 1 + (int)rnd(&g, 5));
        tex_expr *c1 = deep_copy(e);
        tex_expr *c2 = texi_expr_mutate(e, fresh_constants, NULL);
        bool any_const = false;
        texi_expr_visit(e, has_const, &any_const);
        bad += !c1 || !c2 || !texi_expr_equal(e, c1) || !texi_expr_equal(e, c2);
        bad += texi_expr_hash(e) != texi_expr_hash(c1) || texi_expr_hash(e) != texi_expr_hash(c2);
        bad += (e->kind != TEXI_EXPR_VAR) != (c1 != e); /* deep_copy builds anew */
        bad += any_const != (c2 != e);                  /* mutate rebuilt exactly then */
        bad += texi_expr_mutate(e, NULL, NULL) != e;    /* no callback: the same tree */
        rebuilt += c2 != e;
    }
    TT_EQ_INT(bad, 0);
    TT_CHECK(rebuilt > 1000);
    tex_ctx_free(ctx);
}

/* The same generator run twice from one seed gives equal, separately built trees. */
static void test_random_built_twice(void)
{
    tex_ctx *ctx = tex_ctx_new();
    gen g1 = gen_setup(ctx, 3, 1), g2 = g1;
    int bad = 0;
    for (int n = 0; n < 2000; n++) {
        tex_expr *a = gen_expr(&g1, 4), *b = gen_expr(&g2, 4);
        bad += !texi_expr_equal(a, b) || texi_expr_hash(a) != texi_expr_hash(b);
        bad += a == b && a->kind != TEXI_EXPR_VAR;
    }
    TT_EQ_INT(bad, 0);
    tex_ctx_free(ctx);
}

int main(void)
{
    TT_RUN(test_constants);
    TT_RUN(test_identity);
    TT_RUN(test_alpha);
    TT_RUN(test_expr_fields);
    TT_RUN(test_stmt_for_store_seq);
    TT_RUN(test_stmt_scoped);
    TT_RUN(test_random_hash_consistency);
    TT_RUN(test_random_copies);
    TT_RUN(test_random_built_twice);
    return tt_finish();
}
