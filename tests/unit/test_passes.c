/*
 * The lowering passes one by one, on hand-built ASTs: each test builds an
 * input, runs one pass, compares the printed result with the expected text
 * (or checks its structure), and checks that the input still prints as it did
 * (passes never mutate their input). The verifier gets its own tests, with
 * ASTs that break each rule.
 */
#include "lower/lower.h"
#include "lower/verify.h"
#include "tt.h"

static tex_ctx *ctx;

static tex_expr *I(int64_t v)
{
    return texi_int_imm(ctx, TEX_I32, v);
}

static tex_expr *F(double v)
{
    return texi_float_imm(ctx, TEX_F32, v);
}

static tex_expr *var(const char *name)
{
    return texi_var_new(ctx, name, TEX_I32);
}

static tex_expr *bin(enum texi_expr_kind k, tex_expr *a, tex_expr *b)
{
    return texi_binary(k, a, b);
}

#define ADD(a, b) bin(TEXI_EXPR_ADD, a, b)
#define MUL(a, b) bin(TEXI_EXPR_MUL, a, b)
#define LT(a, b) bin(TEXI_EXPR_LT, a, b)

static tex_stmt *loop(tex_expr *v, int64_t min, tex_expr *ext, enum texi_for_kind k, tex_stmt *body)
{
    return texi_for_new(ctx, v, I(min), ext, k, k == TEXI_FOR_THREAD ? TEX_THREAD_X : -1, body);
}

static tex_stmt *seq2(tex_stmt *a, tex_stmt *b)
{
    return texi_seq_new(ctx, 2, (tex_stmt *[]){a, b});
}

static texi_buffer *buffer(const char *name, int64_t n)
{
    return texi_buffer_new(ctx, name, TEX_F32, TEXI_SCOPE_GLOBAL, 1, (tex_expr *[]){I(n)});
}

typedef int (*pass_fn)(texi_lower *, tex_stmt *, tex_stmt **);

/* Runs pass on in (checking that in is unchanged); the printed result. */
static char *run_pass(pass_fn pass, texi_lower *lw, tex_stmt *in)
{
    char *before = texi_stmt_str(in);
    tex_stmt *out = NULL;
    int rc = pass(lw, in, &out);
    TT_EQ_INT(rc, 0);
    if (rc)
        printf("  error: %s\n", tex_errmsg(ctx));
    char *after = texi_stmt_str(in);
    TT_EQ_STR(after, before);
    free(before);
    free(after);
    TT_CHECK(out != NULL);
    if (out)
        TT_EQ_INT(texi_verify(lw, out, "test"), 0);
    return out ? texi_stmt_str(out) : NULL;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay ? strstr(hay, needle) : NULL; p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* ---------------------------------------------------------------- flatten */

static void test_flatten(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){4, 8});
    tex_tensor *T = tex_placeholder_c(ctx, "T", TEX_F32, 2, (int64_t[]){4, 8});
    texi_param p = {.kind = TEX_ARG_TENSOR,
                    .tensor = A,
                    .buf = texi_buffer_new(ctx, "A", TEX_F32, TEXI_SCOPE_GLOBAL, 2, A->shape)};
    tex_func f = {.ctx = ctx, .name = "f", .n_params = 1, .params = &p};
    texi_lower lw = {ctx, NULL, &f, false};
    tex_expr *i = var("i"), *j = var("j");
    tex_expr *at = texi_access_new(A, 2, (tex_expr *[]){i, ADD(j, I(2))});
    tex_stmt *prov =
        texi_provide_new(ctx, T, 2, (tex_expr *[]){i, ADD(j, I(2))}, bin(TEXI_EXPR_MUL, at, F(2)));
    tex_expr *rd = texi_access_new(T, 2, (tex_expr *[]){i, ADD(j, I(2))});
    tex_stmt *back = texi_provide_new(ctx, A, 2, (tex_expr *[]){i, j}, rd);
    tex_stmt *nest =
        loop(i, 0, I(4), TEXI_FOR_SERIAL, loop(j, 0, I(6), TEXI_FOR_SERIAL, seq2(prov, back)));
    tex_stmt *in = texi_realize_new(ctx, T, 2, (tex_expr *[]){I(0), I(2)},
                                    (tex_expr *[]){I(4), I(6)}, TEXI_SCOPE_LOCAL, nest);
    char *s = run_pass(texi_pass_flatten, &lw, in);
    TT_EQ_STR(s, "allocate T: f32[4, 6] local {\n"
                 "  for (i, 0, 4) {\n"
                 "    for (j, 0, 6) {\n"
                 "      T[i*6 + j] = A[i*8 + j + 2]*2.0f\n"
                 "      A[i*8 + j] = T[i*6 + j]\n"
                 "    }\n"
                 "  }\n"
                 "}\n");
    free(s);
    /* A tensor that is neither a parameter nor realized is an internal error. */
    tex_stmt *bad = texi_provide_new(ctx, T, 2, (tex_expr *[]){I(0), I(0)}, F(1));
    tex_stmt *out = NULL;
    TT_EQ_INT(texi_pass_flatten(&lw, bad, &out), TEX_EINTERNAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'T'") != NULL);
    tex_ctx_free(ctx);
}

/* --------------------------------------------------------- loop_partition */

/* for io in [0, 3) kind: for ii in [0, 4): if (io*4 + ii < 10) B[io*4 + ii] = 1 */
static tex_stmt *guarded_loop(texi_buffer *b, tex_expr *io, tex_expr *ii, tex_expr *n,
                              tex_expr *ext, enum texi_for_kind kind)
{
    tex_expr *x = ADD(MUL(io, I(4)), ii);
    tex_stmt *st = texi_store_new(ctx, b, x, F(1));
    return loop(io, 0, ext, kind,
                loop(ii, 0, I(4), TEXI_FOR_VECTORIZED, texi_if_new(ctx, LT(x, n), st, NULL)));
}

static tex_stmt *guarded_nest(texi_buffer *b, tex_expr *io, tex_expr *ii, tex_expr *n,
                              tex_expr *ext)
{
    return guarded_loop(b, io, ii, n, ext, TEXI_FOR_SERIAL);
}

static void test_loop_partition_const(void)
{
    ctx = tex_ctx_new();
    texi_lower lw = {ctx, NULL, NULL, false};
    tex_expr *io = var("io"), *ii = var("ii");
    tex_stmt *in = guarded_nest(buffer("B", 12), io, ii, I(10), I(3));
    char *s = run_pass(texi_pass_loop_partition, &lw, in);
    /* main part [0, 2) without a guard; the tail io = 2 partitioned again. */
    TT_EQ_STR(s, "for (io, 0, 2) {\n"
                 "  for (ii, 0, 4) vectorized {\n"
                 "    B[io*4 + ii] = 1.0f\n"
                 "  }\n"
                 "}\n"
                 "for (ii, 0, 2) vectorized {\n"
                 "  B[2*4 + ii] = 1.0f\n"
                 "}\n"
                 "for (ii, 2, 2) vectorized {\n"
                 "  if (2*4 + ii < 10) {\n"
                 "    B[2*4 + ii] = 1.0f\n"
                 "  }\n"
                 "}\n");
    free(s);
    /* A parallel loop keeps its range: each iteration picks the main part or
     * the tail, which runs on the team rather than after the loop. */
    tex_expr *po = var("po"), *pi = var("pi");
    s = run_pass(texi_pass_loop_partition, &lw,
                 guarded_loop(buffer("P", 12), po, pi, I(10), I(3), TEXI_FOR_PARALLEL));
    TT_EQ_STR(s, "for (po, 0, 3) parallel {\n"
                 "  if (po < 2) {\n"
                 "    for (pi, 0, 4) vectorized {\n"
                 "      P[po*4 + pi] = 1.0f\n"
                 "    }\n"
                 "  } else {\n"
                 "    for (pi, 0, 2) vectorized {\n"
                 "      P[2*4 + pi] = 1.0f\n"
                 "    }\n"
                 "    for (pi, 2, 2) vectorized {\n"
                 "      if (2*4 + pi < 10) {\n"
                 "        P[2*4 + pi] = 1.0f\n"
                 "      }\n"
                 "    }\n"
                 "  }\n"
                 "}\n");
    free(s);
    /* A divisible case: the guard is just dropped. */
    tex_expr *jo = var("jo"), *ji = var("ji");
    s = run_pass(texi_pass_loop_partition, &lw, guarded_nest(buffer("C", 12), jo, ji, I(12), I(3)));
    TT_EQ_INT(count(s, "if ("), 0);
    TT_EQ_INT(count(s, "for (jo"), 1);
    free(s);
    tex_ctx_free(ctx);
}

static void test_loop_partition_symbolic(void)
{
    ctx = tex_ctx_new();
    texi_lower lw = {ctx, NULL, NULL, false};
    tex_expr *n = var("n"), *io = var("io"), *ii = var("ii");
    tex_expr *ext = bin(TEXI_EXPR_FLOORDIV, ADD(n, I(3)), I(4));
    tex_stmt *in = guarded_nest(buffer("B", 64), io, ii, n, ext);
    char *s = run_pass(texi_pass_loop_partition, &lw, in);
    /* Two loops over io: the first without a guard. */
    TT_EQ_INT(count(s, "for (io"), 2);
    TT_EQ_INT(count(s, "if ("), 1);
    const char *tail = s ? strstr(s + 1, "\nfor (io") : NULL;
    TT_CHECK(tail && strstr(s, "if (") > tail);
    free(s);
    /* A guard depending on an enclosing loop is left alone: it would not pay. */
    tex_expr *k = var("k"), *x = var("x");
    tex_stmt *st = texi_store_new(ctx, buffer("D", 64), x, F(1));
    tex_stmt *nest = loop(k, 0, I(8), TEXI_FOR_SERIAL,
                          loop(x, 0, I(8), TEXI_FOR_SERIAL, texi_if_new(ctx, LT(x, k), st, NULL)));
    s = run_pass(texi_pass_loop_partition, &lw, nest);
    TT_EQ_INT(count(s, "for ("), 2);
    TT_EQ_INT(count(s, "if ("), 1);
    free(s);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------- select_partition */

/* for (jo, 0, ext) kind { for (l, 0, 32) vectorized {
 *   Y[jo*32 + l] = select(jo*32 + l < n, A[jo*32 + l], B[jo*32 + l - n]) } }: a concat. */
static tex_stmt *concat_nest(tex_expr *jo, tex_expr *n, tex_expr *ext, enum texi_for_kind kind)
{
    tex_expr *l = var("l"), *j = ADD(MUL(jo, I(32)), l);
    tex_expr *pick = texi_select_new(LT(j, n), texi_load_new(buffer("A", 1024), j),
                                     texi_load_new(buffer("B", 1024), bin(TEXI_EXPR_SUB, j, n)));
    tex_stmt *st = texi_store_new(ctx, buffer("Y", 1024), j, pick);
    return loop(jo, 0, ext, kind, loop(l, 0, I(32), TEXI_FOR_VECTORIZED, st));
}

static void test_select_partition(void)
{
    ctx = tex_ctx_new();
    texi_lower lw = {ctx, NULL, NULL, false};
    tex_expr *jo = var("jo");
    char *s =
        run_pass(texi_pass_select_partition, &lw, concat_nest(jo, I(512), I(32), TEXI_FOR_SERIAL));
    /* Each part reads one input: the select is decided in both. */
    TT_EQ_STR(s, "for (jo, 0, 16) {\n"
                 "  for (l, 0, 32) vectorized {\n"
                 "    Y[jo*32 + l] = A[jo*32 + l]\n"
                 "  }\n"
                 "}\n"
                 "for (jo, 16, 16) {\n"
                 "  for (l, 0, 32) vectorized {\n"
                 "    Y[jo*32 + l] = B[jo*32 + l - 512]\n"
                 "  }\n"
                 "}\n");
    free(s);
    /* A boundary inside a vector: that vector's loop is split too. */
    s = run_pass(texi_pass_select_partition, &lw, concat_nest(jo, I(500), I(32), TEXI_FOR_SERIAL));
    TT_EQ_INT(count(s, "select("), 0);
    TT_CHECK(s && strstr(s, "for (jo, 0, 15)") && strstr(s, "for (jo, 16, 16)"));
    TT_CHECK(s && strstr(s, "for (l, 0, 20) vectorized {\n  Y[l + 480] = A[l + 480]"));
    TT_CHECK(s && strstr(s, "for (l, 0, 12) vectorized {\n  Y[l + 500] = B[l]"));
    free(s);
    /* A symbolic boundary: the parts below and above the vector it falls
     * in (either may be empty) are decided all the same. */
    tex_expr *n = var("n"), *m = var("m");
    tex_expr *ext = bin(TEXI_EXPR_FLOORDIV, ADD(ADD(n, m), I(31)), I(32));
    s = run_pass(texi_pass_select_partition, &lw, concat_nest(jo, n, ext, TEXI_FOR_SERIAL));
    TT_EQ_INT(count(s, "for (jo"), 3);
    TT_EQ_INT(count(s, "select("), 1);
    TT_EQ_INT(count(s, "= A["), 1);
    TT_EQ_INT(count(s, "= B["), 1);
    free(s);
    /* A padding in a vector loop: its ends, one element each, and the
     * interior, a vector loop from 0 without a select. */
    tex_expr *w = var("w"), *x = ADD(w, I(-1));
    tex_expr *inside = bin(TEXI_EXPR_AND, bin(TEXI_EXPR_GE, x, I(0)), LT(x, I(56)));
    tex_stmt *pad = texi_store_new(
        ctx, buffer("P", 58), w, texi_select_new(inside, texi_load_new(buffer("X", 56), x), F(0)));
    s = run_pass(texi_pass_select_partition, &lw, loop(w, 0, I(58), TEXI_FOR_VECTORIZED, pad));
    TT_EQ_STR(s, "P[0] = 0.0f\n"
                 "for (w, 0, 56) vectorized {\n"
                 "  P[w + 1] = X[w]\n"
                 "}\n"
                 "P[57] = 0.0f\n");
    free(s);
    /* Left alone: a parallel loop, a loop without a vector loop, a boundary
     * that moves with an enclosing loop. */
    s = run_pass(texi_pass_select_partition, &lw,
                 concat_nest(jo, I(512), I(32), TEXI_FOR_PARALLEL));
    TT_EQ_INT(count(s, "select("), 1);
    free(s);
    tex_stmt *serial = loop(w, 0, I(58), TEXI_FOR_SERIAL, pad);
    s = run_pass(texi_pass_select_partition, &lw, serial);
    TT_EQ_INT(count(s, "select("), 1);
    free(s);
    tex_expr *k = var("k");
    s = run_pass(texi_pass_select_partition, &lw,
                 loop(k, 0, I(4), TEXI_FOR_SERIAL,
                      concat_nest(jo, ADD(MUL(k, I(8)), I(4)), I(32), TEXI_FOR_SERIAL)));
    TT_EQ_INT(count(s, "for (jo"), 1);
    TT_EQ_INT(count(s, "select("), 1);
    free(s);
    /* One condition in two vector loops over l of other lengths: decided
     * below jo = 15 in the first, 14 in the second; not split on. */
    tex_expr *l = var("l"), *j = ADD(MUL(jo, I(32)), l), *c = LT(j, I(500));
    tex_stmt *two[2];
    for (int i = 0; i < 2; i++) {
        tex_expr *pick = texi_select_new(c, texi_load_new(buffer("A", 2048), j), F(0));
        two[i] = loop(l, 0, I(32 << i), TEXI_FOR_VECTORIZED,
                      texi_store_new(ctx, buffer(i ? "Z" : "Y", 2048), j, pick));
    }
    s = run_pass(texi_pass_select_partition, &lw,
                 loop(jo, 0, I(32), TEXI_FOR_SERIAL, seq2(two[0], two[1])));
    TT_EQ_INT(count(s, "for (jo"), 1);
    TT_EQ_INT(count(s, "select("), 2);
    free(s);
    tex_ctx_free(ctx);
}

/* ---------------------------------------------------------- loop_unswitch */

/* A thread's register tile against a symbolic n, with a padded read:
 * for (t, 0, 16) thread { for (k, 0, 8) { for (i, 0, 4) {
 *   if (t*4 + i < n) acc[i] = acc[i] + select(t*4 + i >= 1, X[t*4 + i - 1], 0) } } }
 * with acc in `scope` (and a barrier after the store when `barrier`). */
static tex_stmt *tile_nest(enum texi_scope scope, bool barrier)
{
    tex_expr *t = var("t"), *k = var("k"), *i = var("i"), *n = var("n");
    tex_expr *row = ADD(MUL(t, I(4)), i);
    texi_buffer *acc = texi_buffer_new(ctx, "acc", TEX_F32, scope, 1, (tex_expr *[]){I(4)});
    tex_expr *rd = texi_select_new(bin(TEXI_EXPR_GE, row, I(1)),
                                   texi_load_new(buffer("X", 64), ADD(row, I(-1))), F(0));
    tex_stmt *st = texi_store_new(ctx, acc, i, bin(TEXI_EXPR_ADD, texi_load_new(acc, i), rd));
    if (barrier)
        st = seq2(st, texi_barrier_new(ctx, TEXI_SCOPE_SHARED));
    tex_stmt *body = loop(i, 0, I(4), TEXI_FOR_UNROLLED, texi_if_new(ctx, LT(row, n), st, NULL));
    return loop(t, 0, I(16), TEXI_FOR_THREAD, loop(k, 0, I(8), TEXI_FOR_SERIAL, body));
}

static void test_loop_unswitch(void)
{
    ctx = tex_ctx_new();
    texi_lower lw = {ctx, NULL, NULL, false};
    char *s = run_pass(texi_pass_loop_unswitch, &lw, tile_nest(TEXI_SCOPE_LOCAL, false));
    /* Three copies of the k loop: tiles inside n and away from the border
     * (neither guard nor select), at the border (the select), past n (both). */
    TT_EQ_INT(count(s, "for (k"), 3);
    TT_EQ_INT(count(s, "} else {"), 2);
    TT_EQ_INT(count(s, "select("), 2);
    TT_EQ_INT(count(s, "if (t*4 + i < n)"), 1);
    const char *first = s ? strstr(s, "for (k") : NULL;
    TT_CHECK(first && strstr(first, "acc[i] = acc[i] + X[") != NULL);
    TT_CHECK(first && strstr(first, "select(") > strstr(first, "acc[i] = acc[i] + X["));
    free(s);
    /* A tile written to shared or global memory, or with a barrier, may not
     * branch per thread around it: left alone. */
    tex_stmt *keep[] = {tile_nest(TEXI_SCOPE_SHARED, false), tile_nest(TEXI_SCOPE_LOCAL, true)};
    for (int c = 0; c < 2; c++) {
        s = run_pass(texi_pass_loop_unswitch, &lw, keep[c]);
        TT_EQ_INT(count(s, "for (k"), 1);
        TT_EQ_INT(count(s, "else"), 0);
        free(s);
    }
    /* A guard that loads stays where it is (the test would load ahead of it). */
    tex_expr *t = var("t"), *k = var("k"), *n = var("n");
    texi_buffer *acc =
        texi_buffer_new(ctx, "acc", TEX_F32, TEXI_SCOPE_LOCAL, 1, (tex_expr *[]){I(4)});
    texi_buffer *idx =
        texi_buffer_new(ctx, "idx", TEX_I32, TEXI_SCOPE_GLOBAL, 1, (tex_expr *[]){I(16)});
    tex_stmt *st =
        texi_if_new(ctx, LT(texi_load_new(idx, t), n), texi_store_new(ctx, acc, I(0), F(1)), NULL);
    s = run_pass(texi_pass_loop_unswitch, &lw,
                 loop(t, 0, I(16), TEXI_FOR_THREAD, loop(k, 0, I(8), TEXI_FOR_SERIAL, st)));
    TT_EQ_INT(count(s, "else"), 0);
    free(s);
    tex_ctx_free(ctx);
}

/* --------------------------------------------------------------- simplify */

static void test_simplify(void)
{
    ctx = tex_ctx_new();
    texi_lower lw = {ctx, NULL, NULL, false};
    texi_buffer *b = buffer("B", 64);
    tex_expr *i = var("i"), *j = var("j"), *t = var("t"), *z = var("z");
    /* i in [0, 8): i < 8 is true, the IF goes; j has extent 1 and is replaced. */
    tex_stmt *st = texi_store_new(ctx, b, ADD(MUL(i, I(8)), j), F(1));
    tex_stmt *body = loop(j, 3, I(1), TEXI_FOR_SERIAL, texi_if_new(ctx, LT(i, I(8)), st, NULL));
    tex_stmt *thread =
        loop(t, 0, I(1), TEXI_FOR_THREAD, texi_store_new(ctx, b, ADD(t, MUL(I(2), I(3))), F(2)));
    tex_stmt *dead = loop(z, 0, I(0), TEXI_FOR_SERIAL, texi_store_new(ctx, b, z, F(3)));
    tex_stmt *never = texi_if_new(ctx, LT(I(3), I(2)), texi_store_new(ctx, b, I(0), F(4)),
                                  texi_store_new(ctx, b, I(1), F(5)));
    tex_stmt *in = texi_seq_new(
        ctx, 4, (tex_stmt *[]){loop(i, 0, I(8), TEXI_FOR_SERIAL, body), thread, dead, never});
    char *s = run_pass(texi_pass_simplify, &lw, in);
    TT_EQ_STR(s, "for (i, 0, 8) {\n"
                 "  B[i*8 + 3] = 1.0f\n"
                 "}\n"
                 "for (t, 0, 1) bind threadIdx.x {\n"
                 "  B[t + 6] = 2.0f\n"
                 "}\n"
                 "B[1] = 5.0f\n");
    free(s);
    tex_ctx_free(ctx);
}

/* ----------------------------------------------------------------- unroll */

static void test_unroll(void)
{
    ctx = tex_ctx_new();
    texi_lower lw = {ctx, NULL, NULL, false};
    texi_buffer *b = buffer("B", 256);
    tex_expr *i = var("i"), *j = var("j"), *n = var("n");
    tex_stmt *small =
        loop(i, 1, I(3), TEXI_FOR_UNROLLED, texi_store_new(ctx, b, MUL(i, I(2)), F(1)));
    tex_stmt *big = loop(j, 0, I(100), TEXI_FOR_UNROLLED, texi_store_new(ctx, b, j, F(2)));
    tex_stmt *sym = loop(var("k"), 0, n, TEXI_FOR_UNROLLED, texi_store_new(ctx, b, I(0), F(3)));
    char *s =
        run_pass(texi_pass_unroll, &lw, texi_seq_new(ctx, 3, (tex_stmt *[]){small, big, sym}));
    TT_EQ_STR(s, "B[2] = 1.0f\n"
                 "B[4] = 1.0f\n"
                 "B[6] = 1.0f\n"
                 "attr pragma_unroll = 100 {\n"
                 "  for (j, 0, 100) {\n"
                 "    B[j] = 2.0f\n"
                 "  }\n"
                 "}\n"
                 "attr pragma_unroll = n {\n"
                 "  for (k, 0, n) {\n"
                 "    B[0] = 3.0f\n"
                 "  }\n"
                 "}\n");
    free(s);
    /* Nested unrolled loops multiply out. */
    tex_expr *x = var("x"), *y = var("y");
    tex_stmt *nest = loop(
        x, 0, I(2), TEXI_FOR_UNROLLED,
        loop(y, 0, I(2), TEXI_FOR_UNROLLED, texi_store_new(ctx, b, ADD(MUL(x, I(2)), y), F(1))));
    s = run_pass(texi_pass_unroll, &lw, nest);
    TT_EQ_STR(s, "B[0] = 1.0f\nB[1] = 1.0f\nB[2] = 1.0f\nB[3] = 1.0f\n");
    free(s);
    tex_ctx_free(ctx);
}

/* -------------------------------------------------------------- vectorize */

static void test_vectorize(void)
{
    ctx = tex_ctx_new();
    texi_lower lw = {ctx, NULL, NULL, false};
    texi_buffer *b = buffer("B", 256);
    tex_expr *i = var("i"), *j = var("j"), *k = var("k"), *n = var("n");
    tex_stmt *inner = loop(j, 0, I(8), TEXI_FOR_VECTORIZED,
                           texi_if_new(ctx, LT(j, I(5)), texi_store_new(ctx, b, j, F(1)), NULL));
    tex_stmt *outer = loop(i, 0, I(4), TEXI_FOR_VECTORIZED, inner);
    tex_stmt *sym = loop(k, 0, n, TEXI_FOR_VECTORIZED, texi_store_new(ctx, b, k, F(2)));
    char *s = run_pass(texi_pass_vectorize, &lw, seq2(outer, sym));
    TT_EQ_STR(s, "attr vectorize_failed(loop is not innermost) {\n"
                 "  for (i, 0, 4) {\n"
                 "    for (j, 0, 8) vectorized {\n"
                 "      if (j < 5) {\n"
                 "        B[j] = 1.0f\n"
                 "      }\n"
                 "    }\n"
                 "  }\n"
                 "}\n"
                 "attr vectorize_failed(extent is not a constant) {\n"
                 "  for (k, 0, n) {\n"
                 "    B[k] = 2.0f\n"
                 "  }\n"
                 "}\n");
    free(s);
    tex_ctx_free(ctx);
}

/* -------------------------------------------------------- storage_rewrite */

static void test_storage_rewrite(void)
{
    ctx = tex_ctx_new();
    texi_lower lw = {ctx, NULL, NULL, false};
    texi_buffer *out = buffer("Out", 16), *t1 = buffer("T1", 16), *t2 = buffer("T2", 16);
    texi_buffer *t3 =
        texi_buffer_new(ctx, "T3", TEX_F32, TEXI_SCOPE_SHARED, 1, (tex_expr *[]){I(16)});
    tex_expr *i = var("i"), *j = var("j");
    /* Out = 0; T1 = 1; Out += T1; T2 = 2; Out += T2 (T1, T2 allocated at the top). */
    tex_stmt *init = texi_store_new(ctx, out, I(0), F(0));
    tex_stmt *w1 = loop(i, 0, I(16), TEXI_FOR_SERIAL, texi_store_new(ctx, t1, i, F(1)));
    tex_stmt *r1 = texi_store_new(ctx, out, I(0), texi_load_new(t1, I(3)));
    tex_stmt *w2 = loop(j, 0, I(16), TEXI_FOR_SERIAL, texi_store_new(ctx, t2, j, F(2)));
    tex_stmt *r2 = texi_store_new(ctx, out, I(1), texi_load_new(t2, I(4)));
    tex_stmt *body = texi_seq_new(ctx, 5, (tex_stmt *[]){init, w1, r1, w2, r2});
    tex_stmt *in =
        texi_allocate_new(ctx, out, texi_allocate_new(ctx, t1, texi_allocate_new(ctx, t2, body)));
    char *s = run_pass(texi_pass_storage_rewrite, &lw, in);
    TT_EQ_STR(s, "allocate Out: f32[16] global {\n"
                 "  Out[0] = 0.0f\n"
                 "  allocate T1: f32[16] global {\n"
                 "    for (i, 0, 16) {\n"
                 "      T1[i] = 1.0f\n"
                 "    }\n"
                 "    Out[0] = T1[3]\n"
                 "    for (j, 0, 16) {\n"
                 "      T1[j] = 2.0f\n"
                 "    }\n"
                 "    Out[1] = T1[4]\n"
                 "  }\n"
                 "}\n");
    free(s);
    /* Shared buffers are sunk but never merged; unused ones are dropped. */
    tex_stmt *w3 = texi_store_new(ctx, t3, I(0), F(3));
    tex_stmt *w4 = texi_store_new(ctx, t2, I(0), F(4));
    tex_stmt *shared = texi_allocate_new(
        ctx, t3, texi_allocate_new(ctx, t1, texi_allocate_new(ctx, t2, seq2(w3, w4))));
    s = run_pass(texi_pass_storage_rewrite, &lw, shared);
    TT_EQ_STR(s, "allocate T3: f32[16] shared {\n"
                 "  T3[0] = 3.0f\n"
                 "}\n"
                 "allocate T2: f32[16] global {\n"
                 "  T2[0] = 4.0f\n"
                 "}\n");
    free(s);
    tex_ctx_free(ctx);
}

/* ----------------------------------------------------------- hoist_search */

/* A search the inner loop does not change is bound around it; one in a
 * select arm only, or using the inner loop's variable, stays; equal
 * searches of one store share a LET. */
static void test_hoist_search(void)
{
    ctx = tex_ctx_new();
    texi_lower lw = {ctx, NULL, NULL, false};
    texi_buffer *b = buffer("B", 16);
    texi_buffer *ip =
        texi_buffer_new(ctx, "IP", TEX_I32, TEXI_SCOPE_GLOBAL, 1, (tex_expr *[]){I(9)});
    tex_expr *p = var("p"), *k = var("k");
    tex_expr *inv = texi_search_new(TEXI_SEARCH_UPPER, NULL, ip, I(1), I(9), p);
    tex_expr *dep = texi_search_new(TEXI_SEARCH_FIND, NULL, ip, I(0), I(9), k);
    tex_expr *arm = texi_search_new(TEXI_SEARCH_FIND, NULL, ip, I(0), p, I(3));
    tex_expr *v = bin(TEXI_EXPR_ADD, texi_convert(inv, TEX_F32),
                      texi_select_new(LT(dep, I(2)), texi_convert(arm, TEX_F32), F(0)));
    tex_stmt *st = texi_store_new(ctx, b, p, v);
    tex_stmt *in = loop(p, 0, I(4), TEXI_FOR_SERIAL, loop(k, 0, I(3), TEXI_FOR_SERIAL, st));
    char *s = run_pass(texi_pass_hoist_search, &lw, in);
    TT_EQ_STR(s, "for (p, 0, 4) {\n"
                 "  let srch = upper_bound(IP, 1, 9, p)\n"
                 "  for (k, 0, 3) {\n"
                 "    let srch = find(IP, 0, 9, k)\n"
                 "    B[p] = f32(srch) + select(srch < 2, f32(find(IP, 0, p, 3)), 0.0f)\n"
                 "  }\n"
                 "}\n");
    free(s);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------------------ hfuse */

/* A loop bound to blockIdx.x storing its index into B. */
static tex_stmt *block_loop(tex_expr *v, int64_t min, int64_t ext, texi_buffer *b, tex_stmt *more)
{
    tex_stmt *st = texi_store_new(ctx, b, v, F(1));
    return texi_for_new(ctx, v, I(min), I(ext), TEXI_FOR_THREAD, TEX_BLOCK_X,
                        more ? seq2(st, more) : st);
}

/* Disjoint block nests become one block loop, each part a range of
 * blocks; with a barrier in a part they stay as they are. */
static void test_hfuse(void)
{
    ctx = tex_ctx_new();
    texi_lower lw = {ctx, NULL, NULL, false};
    texi_buffer *b = buffer("B", 16);
    tex_stmt *two = seq2(block_loop(var("p"), 0, 3, b, NULL), block_loop(var("q"), 2, 5, b, NULL));
    char *s =
        run_pass(texi_pass_hfuse, &lw, texi_attr_named(ctx, TEXI_ATTR_DISJOINT_NESTS, NULL, two));
    TT_EQ_STR(s, "for (blk, 0i64, 8i64) bind blockIdx.x {\n"
                 "  if (blk < 3i64) {\n"
                 "    B[i32(blk)] = 1.0f\n"
                 "  } else {\n"
                 "    B[i32(blk - 1i64)] = 1.0f\n"
                 "  }\n"
                 "}\n");
    free(s);
    tex_stmt *bar = texi_barrier_new(ctx, TEXI_SCOPE_SHARED);
    two = seq2(block_loop(var("p"), 0, 3, b, bar), block_loop(var("q"), 0, 5, b, NULL));
    s = run_pass(texi_pass_hfuse, &lw, texi_attr_named(ctx, TEXI_ATTR_DISJOINT_NESTS, NULL, two));
    TT_CHECK(strstr(s, "attr disjoint_nests") != NULL && count(s, "bind blockIdx.x") == 2);
    free(s);
    tex_ctx_free(ctx);
}

/* ----------------------------------------------------------- remove_noops */

static void test_remove_noops(void)
{
    ctx = tex_ctx_new();
    texi_lower lw = {ctx, NULL, NULL, false};
    texi_buffer *b = buffer("B", 16), *unused = buffer("U", 16), *empty_buf = buffer("E", 4);
    tex_expr *i = var("i"), *j = var("j"), *c = LT(var("n"), I(3));
    tex_stmt *nothing = texi_seq_new(ctx, 0, NULL);
    tex_stmt *st = texi_store_new(ctx, b, I(0), F(1));
    tex_stmt *items[] = {
        loop(i, 0, I(4), TEXI_FOR_SERIAL, nothing), /* empty loop */
        texi_evaluate_new(ctx, I(7)),               /* constant */
        texi_if_new(ctx, c, nothing, nothing),      /* empty branches */
        texi_if_new(ctx, c, nothing, st),           /* becomes !c */
        texi_allocate_new(ctx, unused, st),         /* never used */
        texi_allocate_new(ctx, empty_buf, loop(j, 0, I(0), TEXI_FOR_SERIAL, st)),
        texi_attr_new(ctx, "pragma_unroll", NULL, nothing),
    };
    char *s = run_pass(texi_pass_remove_noops, &lw, texi_seq_new(ctx, 7, items));
    TT_EQ_STR(s, "if (!(n < 3)) {\n"
                 "  B[0] = 1.0f\n"
                 "}\n"
                 "B[0] = 1.0f\n");
    free(s);
    s = run_pass(texi_pass_remove_noops, &lw, loop(i, 0, I(4), TEXI_FOR_SERIAL, nothing));
    TT_EQ_STR(s, "");
    free(s);
    tex_ctx_free(ctx);
}

/* ----------------------------------------------------------------- verify */

static void expect_invalid(texi_lower *lw, tex_stmt *s, const char *what)
{
    tex_clear_error(ctx);
    TT_EQ_INT(texi_verify(lw, s, "test"), TEX_EINTERNAL);
    TT_CHECK(strstr(tex_errmsg(ctx), what) != NULL);
    if (!strstr(tex_errmsg(ctx), what))
        printf("  message: %s\n", tex_errmsg(ctx));
}

static void test_verify(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){8});
    texi_param p = {.kind = TEX_ARG_TENSOR,
                    .tensor = A,
                    .buf = texi_buffer_new(ctx, "A", TEX_F32, TEXI_SCOPE_GLOBAL, 1, A->shape)};
    tex_func f = {.ctx = ctx, .name = "f", .n_params = 1, .params = &p};
    texi_lower lw = {ctx, NULL, &f, false};
    tex_expr *i = var("i"), *free_var = var("m");
    tex_stmt *ok = loop(i, 0, I(8), TEXI_FOR_SERIAL, texi_store_new(ctx, p.buf, i, F(1)));
    TT_EQ_INT(texi_verify(&lw, ok, "test"), 0);
    expect_invalid(&lw, texi_store_new(ctx, p.buf, free_var, F(1)), "'m'");
    expect_invalid(&lw, texi_store_new(ctx, p.buf, I(0), I(1)), "wrong dtype");
    expect_invalid(&lw, loop(i, 0, I(8), TEXI_FOR_SERIAL, ok), "bound twice");
    expect_invalid(&lw, texi_store_new(ctx, buffer("X", 4), I(0), F(1)), "'X'");
    expect_invalid(&lw, texi_if_new(ctx, I(1), ok, NULL), "condition");
    expect_invalid(&lw, texi_store_new(ctx, p.buf, texi_float_imm(ctx, TEX_F32, 0), F(1)),
                   "non-integer index");
    tex_expr *mixed = texi_binary(TEXI_EXPR_ADD, i, texi_int_imm(ctx, TEX_I64, 1));
    expect_invalid(&lw, loop(i, 0, I(8), TEXI_FOR_SERIAL, texi_store_new(ctx, p.buf, mixed, F(1))),
                   "different dtypes");
    /* A buffer allocated around its use is fine; used after its scope it is not. */
    texi_buffer *t = buffer("T", 4);
    tex_stmt *use = texi_store_new(ctx, t, I(0), F(1));
    TT_EQ_INT(texi_verify(&lw, texi_allocate_new(ctx, t, use), "test"), 0);
    expect_invalid(&lw, seq2(texi_allocate_new(ctx, t, use), use), "'T'");
    /* A predicated access: a bool mask of the index's lanes, on vectors only. */
    tex_expr *r4 = texi_ramp_new(I(0), I(1), 4), *c4 = texi_broadcast_new(I(3), 4);
    tex_expr *m4 = texi_binary(TEXI_EXPR_LT, r4, c4), *v4 = texi_broadcast_new(F(1), 4);
    tex_expr *ld = texi_masked_load_new(p.buf, r4, m4);
    TT_EQ_INT(texi_verify(&lw, texi_masked_store_new(ctx, p.buf, r4, ld, m4), "test"), 0);
    expect_invalid(&lw, texi_masked_store_new(ctx, p.buf, r4, v4, r4), "mask");
    expect_invalid(
        &lw, texi_masked_store_new(ctx, p.buf, I(0), F(1), texi_binary(TEXI_EXPR_LT, I(0), I(1))),
        "mask");
    expect_invalid(&lw, texi_store_new(ctx, p.buf, r4, texi_masked_load_new(p.buf, r4, c4)),
                   "mask");
    tex_ctx_free(ctx);
}

int main(void)
{
    TT_RUN(test_flatten);
    TT_RUN(test_loop_partition_const);
    TT_RUN(test_loop_partition_symbolic);
    TT_RUN(test_select_partition);
    TT_RUN(test_loop_unswitch);
    TT_RUN(test_simplify);
    TT_RUN(test_unroll);
    TT_RUN(test_vectorize);
    TT_RUN(test_storage_rewrite);
    TT_RUN(test_remove_noops);
    TT_RUN(test_hfuse);
    TT_RUN(test_hoist_search);
    TT_RUN(test_verify);
    return tt_finish();
}
