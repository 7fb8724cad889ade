/*
 * Golden tests of the printer (src/ir/print.c): a table of expressions built by
 * hand with the expected text (every expression kind, every constant dtype,
 * precedence and associativity), every statement kind, and a hand-built loop
 * nest of a small matmul printed against its expected multi-line text.
 * The printer's format is what TEX_DUMP and the lowering golden tests show, so
 * any change here must be deliberate.
 */
#include "ir/ir.h"
#include "tt.h"

#include <math.h>
#include <stdlib.h>

/* The fixture: a context with a few variables, tensors and a buffer. */
typedef struct {
    tex_ctx *ctx;
    tex_expr *a, *b, *c, *i, *j, *n; /* a, b, c: f32; i, j, n: i32 */
    tex_expr *p, *q;                 /* bool */
    tex_tensor *A, *B;               /* A: f32[n, 8], B: f32[8, 8] */
    texi_buffer *buf;                /* buf: f32[64] */
    tex_iter *k, *l;                 /* reduce axes of extent 8 */
} fixture;

static fixture setup(void)
{
    fixture f;
    f.ctx = tex_ctx_new();
    f.a = tex_var(f.ctx, "a", TEX_F32);
    f.b = tex_var(f.ctx, "b", TEX_F32);
    f.c = tex_var(f.ctx, "c", TEX_F32);
    f.i = tex_var(f.ctx, "i", TEX_I32);
    f.j = tex_var(f.ctx, "j", TEX_I32);
    f.n = tex_var(f.ctx, "n", TEX_I32);
    f.p = tex_var(f.ctx, "p", TEX_BOOL);
    f.q = tex_var(f.ctx, "q", TEX_BOOL);
    f.A = tex_placeholder(f.ctx, "A", TEX_F32, 2, (tex_expr *[]){f.n, tex_int(f.ctx, 8)});
    f.B = tex_placeholder_c(f.ctx, "B", TEX_F32, 2, (int64_t[]){8, 8});
    f.buf = texi_buffer_new(f.ctx, "buf", TEX_F32, TEXI_SCOPE_GLOBAL, 1,
                            (tex_expr *[]){tex_int(f.ctx, 64)});
    f.k = tex_reduce_axis(f.ctx, "k", tex_int(f.ctx, 8));
    f.l = tex_reduce_axis(f.ctx, "l", tex_int(f.ctx, 8));
    return f;
}

/* Compares the printed form of e with want (and frees it). */
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

static tex_expr *bin(enum texi_expr_kind k, tex_expr *x, tex_expr *y)
{
    return texi_binary(k, x, y);
}

static void test_constants(void)
{
    fixture f = setup();
    tex_ctx *ctx = f.ctx;
    CHECK_EXPR(texi_int_imm(ctx, TEX_I32, 3), "3");
    CHECK_EXPR(texi_int_imm(ctx, TEX_I32, -3), "-3");
    CHECK_EXPR(texi_int_imm(ctx, TEX_I64, 3), "3i64");
    CHECK_EXPR(texi_int_imm(ctx, TEX_I64, INT64_MIN), "-9223372036854775808i64");
    CHECK_EXPR(texi_int_imm(ctx, TEX_I8, -128), "-128i8");
    CHECK_EXPR(texi_int_imm(ctx, TEX_I16, 7), "7i16");
    CHECK_EXPR(texi_int_imm(ctx, TEX_U8, 7), "7u8");
    CHECK_EXPR(texi_int_imm(ctx, TEX_U16, 65535), "65535u16");
    CHECK_EXPR(texi_int_imm(ctx, TEX_U32, 4294967295), "4294967295u32");
    CHECK_EXPR(texi_int_imm(ctx, TEX_U64, -1), "18446744073709551615u64");
    CHECK_EXPR(texi_int_imm(ctx, TEX_BOOL, 1), "true");
    CHECK_EXPR(texi_int_imm(ctx, TEX_BOOL, 0), "false");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F32, 1.5), "1.5f");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F32, 0.0), "0.0f");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F32, -2.0), "-2.0f");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F32, 0.1), "0.100000001f");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F32, 1e20), "1.00000002e+20f");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F64, 1.5), "1.5");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F64, 2.0), "2.0");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F64, 0.1), "0.10000000000000001");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F64, -0.0), "-0.0");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F16, 1.5), "1.5f16");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F16, 3.0), "3.0f16");
    CHECK_EXPR(texi_float_imm(ctx, TEX_BF16, 1.5), "1.5bf16");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F64, INFINITY), "inf");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F64, -INFINITY), "-inf");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F64, NAN), "nan");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F32, -INFINITY), "f32(-inf)");
    CHECK_EXPR(texi_float_imm(ctx, TEX_F16, NAN), "f16(nan)");
    CHECK_EXPR(tex_int(ctx, 5), "5");
    CHECK_EXPR(tex_int(ctx, INT64_C(1) << 40), "1099511627776i64");
    tex_ctx_free(ctx);
}

/* Printed floats read back (strtod, or strtof for f32) as the very value they print. */
static void test_float_round_trip(void)
{
    tex_ctx *ctx = tex_ctx_new();
    double vals[] = {0.1, 1.0 / 3.0, 3.14159265358979, 1e-7, 123456789.0, 6.02e23, -2.5e-300};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        for (int t = 0; t < 2; t++) {
            tex_dtype dt = t ? TEX_F64 : TEX_F32;
            tex_expr *e = texi_float_imm(ctx, dt, vals[i]);
            char *s = tex_expr_str(e);
            TT_CHECK(s != NULL);
            if (s) {
                double back = t ? strtod(s, NULL) : (double)strtof(s, NULL);
                TT_CHECK(back == e->u.f);
            }
            free(s);
        }
    }
    tex_ctx_free(ctx);
}

static void test_precedence(void)
{
    fixture f = setup();
    tex_expr *a = f.a, *b = f.b, *c = f.c;
    enum texi_expr_kind ADD = TEXI_EXPR_ADD, SUB = TEXI_EXPR_SUB, MUL = TEXI_EXPR_MUL,
                        DIV = TEXI_EXPR_DIV;
    CHECK_EXPR(bin(ADD, a, bin(MUL, b, c)), "a + b*c");
    CHECK_EXPR(bin(MUL, bin(ADD, a, b), c), "(a + b)*c");
    CHECK_EXPR(bin(MUL, a, bin(ADD, b, c)), "a*(b + c)");
    CHECK_EXPR(bin(SUB, a, bin(SUB, b, c)), "a - (b - c)");
    CHECK_EXPR(bin(SUB, bin(SUB, a, b), c), "a - b - c");
    CHECK_EXPR(bin(ADD, bin(ADD, a, b), c), "a + b + c");
    CHECK_EXPR(bin(ADD, a, bin(ADD, b, c)), "a + (b + c)");
    CHECK_EXPR(bin(SUB, a, bin(ADD, b, c)), "a - (b + c)");
    CHECK_EXPR(bin(ADD, a, bin(SUB, b, c)), "a + (b - c)");
    CHECK_EXPR(bin(MUL, bin(MUL, a, b), c), "a*b*c");
    CHECK_EXPR(bin(MUL, a, bin(MUL, b, c)), "a*(b*c)");
    CHECK_EXPR(bin(DIV, a, bin(MUL, b, c)), "a/(b*c)");
    CHECK_EXPR(bin(DIV, bin(DIV, a, b), c), "a/b/c");
    CHECK_EXPR(bin(MUL, bin(SUB, a, b), bin(ADD, b, c)), "(a - b)*(b + c)");
    CHECK_EXPR(bin(SUB, a, texi_float_imm(f.ctx, TEX_F32, -1.0)), "a - -1.0f");
    /* the public builders give the same trees */
    CHECK_EXPR(tex_mul(tex_add(a, b), c), "(a + b)*c");
    tex_ctx_free(f.ctx);
}

static void test_integer_division(void)
{
    fixture f = setup();
    tex_expr *four = tex_int(f.ctx, 4);
    CHECK_EXPR(bin(TEXI_EXPR_FLOORDIV, f.i, four), "i/4");
    CHECK_EXPR(bin(TEXI_EXPR_FLOORMOD, f.i, four), "i%4");
    CHECK_EXPR(bin(TEXI_EXPR_ADD, bin(TEXI_EXPR_MUL, bin(TEXI_EXPR_FLOORDIV, f.i, four), four),
                   bin(TEXI_EXPR_FLOORMOD, f.i, four)),
               "i/4*4 + i%4");
    CHECK_EXPR(bin(TEXI_EXPR_FLOORDIV, bin(TEXI_EXPR_ADD, f.i, f.j), four), "(i + j)/4");
    CHECK_EXPR(bin(TEXI_EXPR_FLOORMOD, f.i, bin(TEXI_EXPR_MUL, f.j, four)), "i%(j*4)");
    CHECK_EXPR(tex_div(f.i, four), "i/4");
    CHECK_EXPR(tex_floormod(f.i, four), "i%4");
    /* on floats they stay calls: "/" is true division there */
    CHECK_EXPR(bin(TEXI_EXPR_FLOORDIV, f.a, f.b), "floordiv(a, b)");
    CHECK_EXPR(bin(TEXI_EXPR_FLOORMOD, f.a, f.b), "floormod(a, b)");
    tex_ctx_free(f.ctx);
}

static void test_compare_logic(void)
{
    fixture f = setup();
    tex_expr *i = f.i, *j = f.j, *n = f.n, *p = f.p, *q = f.q;
    CHECK_EXPR(tex_lt(i, n), "i < n");
    CHECK_EXPR(tex_le(i, n), "i <= n");
    CHECK_EXPR(tex_gt(i, n), "i > n");
    CHECK_EXPR(tex_ge(i, n), "i >= n");
    CHECK_EXPR(tex_eq(i, n), "i == n");
    CHECK_EXPR(tex_ne(i, n), "i != n");
    CHECK_EXPR(tex_lt(tex_add(i, j), tex_mul(n, j)), "i + j < n*j");
    CHECK_EXPR(tex_and(tex_lt(i, n), tex_ge(j, tex_int(f.ctx, 0))), "i < n && j >= 0");
    CHECK_EXPR(tex_or(tex_and(p, q), p), "p && q || p");
    CHECK_EXPR(tex_and(p, tex_or(q, p)), "p && (q || p)");
    CHECK_EXPR(tex_or(p, tex_or(q, p)), "p || (q || p)");
    CHECK_EXPR(tex_not(p), "!p");
    CHECK_EXPR(tex_not(tex_lt(i, n)), "!(i < n)");
    CHECK_EXPR(tex_not(tex_not(p)), "!!p");
    CHECK_EXPR(tex_and(tex_not(p), q), "!p && q");
    CHECK_EXPR(bin(TEXI_EXPR_EQ, tex_lt(i, n), p), "i < n == p");
    CHECK_EXPR(bin(TEXI_EXPR_LT, i, bin(TEXI_EXPR_LT, j, n)), "i < (j < n)");
    CHECK_EXPR(bin(TEXI_EXPR_EQ, p, bin(TEXI_EXPR_EQ, q, p)), "p == (q == p)");
    tex_ctx_free(f.ctx);
}

static void test_calls_and_other_kinds(void)
{
    fixture f = setup();
    tex_ctx *ctx = f.ctx;
    CHECK_EXPR(tex_min(f.i, f.n), "min(i, n)");
    CHECK_EXPR(tex_max(tex_add(f.i, f.j), f.n), "max(i + j, n)");
    CHECK_EXPR(tex_select(f.p, f.a, f.b), "select(p, a, b)");
    CHECK_EXPR(tex_cast(TEX_F32, f.i), "f32(i)");
    CHECK_EXPR(tex_cast(TEX_I64, tex_add(f.i, f.j)), "i64(i + j)");
    CHECK_EXPR(tex_mul(tex_cast(TEX_F32, f.i), f.a), "f32(i)*a");
    CHECK_EXPR(tex_exp(f.a), "exp(a)");
    CHECK_EXPR(tex_sqrt(tex_add(f.a, f.b)), "sqrt(a + b)");
    CHECK_EXPR(tex_pow(f.a, f.b), "pow(a, b)");
    CHECK_EXPR(tex_fma(f.a, f.b, f.c), "fma(a, b, c)");
    static const char *const unary[] = {"exp(a)",     "log(a)", "sqrt(a)", "rsqrt(a)", "tanh(a)",
                                        "sigmoid(a)", "erf(a)", "abs(a)",  "floor(a)", "ceil(a)",
                                        "round(a)",   "sin(a)", "cos(a)"};
    for (int m = 0; m < TEXI_MATH_COUNT; m++) {
        tex_expr *args[3] = {f.a, f.b, f.c};
        tex_expr *e = texi_call_new((enum texi_math)m, TEX_F32, texi_math_arity[m], args);
        if (texi_math_arity[m] == 1)
            CHECK_EXPR(e, unary[m]);
    }
    CHECK_EXPR(TEX_AT(f.A, f.i, f.j), "A[i, j]");
    CHECK_EXPR(TEX_AT(f.A, tex_add(f.i, tex_int(ctx, 1)), tex_mul(f.j, f.n)), "A[i + 1, j*n]");
    CHECK_EXPR(tex_mul(TEX_AT(f.A, f.i, f.j), f.a), "A[i, j]*a");
    CHECK_EXPR(texi_load_new(f.buf, tex_add(tex_mul(f.i, tex_int(ctx, 8)), f.j)), "buf[i*8 + j]");
    CHECK_EXPR(f.a, "a");
    TT_CHECK(tex_expr_str(NULL) == NULL);
    texi_sb sb;
    texi_sb_init(&sb);
    texi_expr_print(&sb, NULL);
    char *s = texi_sb_take(&sb);
    TT_EQ_STR(s, "<null>");
    free(s);
    tex_ctx_free(ctx);
}

static void test_reductions(void)
{
    fixture f = setup();
    tex_expr *kv = tex_iv(f.k), *lv = tex_iv(f.l);
    tex_expr *body = tex_mul(TEX_AT(f.A, f.i, kv), TEX_AT(f.B, kv, f.j));
    CHECK_EXPR(tex_sum(body, 1, &f.k), "sum(A[i, k]*B[k, j], axis=[k])");
    tex_expr *two = tex_add(TEX_AT(f.B, kv, lv), f.a);
    CHECK_EXPR(tex_reduce_max(two, 2, (tex_iter *[]){f.k, f.l}),
               "reduce_max(B[k, l] + a, axis=[k, l])");
    tex_expr *mn = texi_reduce_new(TEXI_REDUCE_MIN, f.a, 1, &f.k, NULL);
    CHECK_EXPR(mn, "reduce_min(a, axis=[k])");
    tex_expr *pr = texi_reduce_new(TEXI_REDUCE_PROD, f.a, 1, &f.k, tex_lt(kv, f.i));
    CHECK_EXPR(pr, "prod(a, axis=[k], where=k < i)");
    CHECK_EXPR(tex_reduce_where(tex_sum(f.b, 1, &f.l), tex_ne(lv, f.j)),
               "sum(b, axis=[l], where=l != j)");
    tex_ctx_free(f.ctx);
}

/* Two variables with one name print alike (names are for reading only). */
static void test_same_names(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *x1 = tex_var(ctx, "x", TEX_I32), *x2 = tex_var(ctx, "x", TEX_I32);
    CHECK_EXPR(tex_add(x1, x2), "x + x");
    tex_ctx_free(ctx);
}

/* Statements ------------------------------------------------------------ */

static void test_statement_kinds(void)
{
    fixture f = setup();
    tex_ctx *ctx = f.ctx;
    tex_expr *zero = tex_int(ctx, 0), *c64 = tex_int(ctx, 64);
    tex_stmt *st = texi_store_new(ctx, f.buf, f.i, f.a);
    CHECK_STMT(st, "buf[i] = a\n");
    tex_stmt *pv = texi_provide_new(ctx, f.A, 2, (tex_expr *[]){f.i, f.j}, tex_add(f.a, f.b));
    CHECK_STMT(pv, "A[i, j] = a + b\n");
    CHECK_STMT(texi_evaluate_new(ctx, tex_exp(f.a)), "exp(a)\n");
    CHECK_STMT(texi_barrier_new(ctx, TEXI_SCOPE_SHARED), "barrier(shared)\n");
    CHECK_STMT(texi_barrier_new(ctx, TEXI_SCOPE_GLOBAL), "barrier(global)\n");

    CHECK_STMT(texi_for_new(ctx, f.i, zero, c64, TEXI_FOR_SERIAL, -1, st),
               "for (i, 0, 64) {\n  buf[i] = a\n}\n");
    CHECK_STMT(texi_for_new(ctx, f.i, zero, c64, TEXI_FOR_PARALLEL, -1, st),
               "for (i, 0, 64) parallel {\n  buf[i] = a\n}\n");
    CHECK_STMT(texi_for_new(ctx, f.i, tex_int(ctx, 8), f.n, TEXI_FOR_VECTORIZED, -1, st),
               "for (i, 8, n) vectorized {\n  buf[i] = a\n}\n");
    CHECK_STMT(texi_for_new(ctx, f.i, zero, tex_int(ctx, 4), TEXI_FOR_UNROLLED, -1, st),
               "for (i, 0, 4) unrolled {\n  buf[i] = a\n}\n");
    static const char *const tags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                       "threadIdx.y", "threadIdx.z", "vthread"};
    for (int t = TEX_BLOCK_X; t <= TEX_VTHREAD; t++) {
        char want[128];
        snprintf(want, sizeof want, "for (i, 0, 64) bind %s {\n  buf[i] = a\n}\n", tags[t]);
        CHECK_STMT(texi_for_new(ctx, f.i, zero, c64, TEXI_FOR_THREAD, t, st), want);
    }

    CHECK_STMT(texi_realize_new(ctx, f.A, 2, (tex_expr *[]){zero, f.i},
                                (tex_expr *[]){f.n, tex_int(ctx, 8)}, TEXI_SCOPE_GLOBAL, pv),
               "realize A([0, n], [i, 8]) global {\n  A[i, j] = a + b\n}\n");
    texi_buffer *sh = texi_buffer_new(ctx, "S", TEX_F32, TEXI_SCOPE_SHARED, 2,
                                      (tex_expr *[]){tex_int(ctx, 8), tex_int(ctx, 16)});
    CHECK_STMT(texi_allocate_new(ctx, sh, st),
               "allocate S: f32[8, 16] shared {\n  buf[i] = a\n}\n");

    tex_stmt *st2 = texi_store_new(ctx, f.buf, f.j, f.b);
    CHECK_STMT(texi_if_new(ctx, tex_lt(f.i, f.n), st, NULL), "if (i < n) {\n  buf[i] = a\n}\n");
    CHECK_STMT(texi_if_new(ctx, f.p, st, st2),
               "if (p) {\n  buf[i] = a\n} else {\n  buf[j] = b\n}\n");
    tex_expr *x = tex_var(ctx, "x", TEX_I32);
    CHECK_STMT(texi_let_new(ctx, x, tex_mul(f.i, tex_int(ctx, 2)), st),
               "let x = i*2\nbuf[i] = a\n");
    CHECK_STMT(texi_attr_new(ctx, "pragma_unroll", tex_int(ctx, 4), st),
               "attr pragma_unroll = 4 {\n  buf[i] = a\n}\n");
    CHECK_STMT(texi_attr_new(ctx, "region", NULL, st), "attr region {\n  buf[i] = a\n}\n");
    CHECK_STMT(texi_seq_new(ctx, 2, (tex_stmt *[]){st, st2}), "buf[i] = a\nbuf[j] = b\n");
    CHECK_STMT(texi_seq_new(ctx, 0, NULL), "");
    CHECK_STMT(NULL, ""); /* an empty text, not NULL */
    tex_ctx_free(ctx);
}

static void test_indentation(void)
{
    fixture f = setup();
    tex_ctx *ctx = f.ctx;
    tex_stmt *st = texi_store_new(ctx, f.buf, f.j, f.a);
    tex_stmt *inner = texi_for_new(ctx, f.j, tex_int(ctx, 0), tex_int(ctx, 4), TEXI_FOR_SERIAL, -1,
                                   texi_seq_new(ctx, 2, (tex_stmt *[]){st, st}));
    tex_stmt *cond = texi_if_new(ctx, f.p, inner, texi_barrier_new(ctx, TEXI_SCOPE_SHARED));
    tex_stmt *outer = texi_for_new(ctx, f.i, tex_int(ctx, 0), f.n, TEXI_FOR_SERIAL, -1, cond);
    CHECK_STMT(outer, "for (i, 0, n) {\n"
                      "  if (p) {\n"
                      "    for (j, 0, 4) {\n"
                      "      buf[j] = a\n"
                      "      buf[j] = a\n"
                      "    }\n"
                      "  } else {\n"
                      "    barrier(shared)\n"
                      "  }\n"
                      "}\n");
    /* texi_stmt_print starts at the given level */
    texi_sb sb;
    texi_sb_init(&sb);
    texi_stmt_print(&sb, inner, 2);
    char *s = texi_sb_take(&sb);
    TT_EQ_STR(s, "    for (j, 0, 4) {\n      buf[j] = a\n      buf[j] = a\n    }\n");
    free(s);
    tex_ctx_free(ctx);
}

/* A small matmul C[i, j] = sum_k A[i, k] * B[k, j] as ScheduleOps would build it
 * (before flattening), then flattened by hand into loads and stores. */
static void test_matmul_nest(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *c0 = tex_int(ctx, 0), *c16 = tex_int(ctx, 16), *c4 = tex_int(ctx, 4);
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){16, 4});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){4, 16});
    tex_tensor *C = tex_placeholder_c(ctx, "C", TEX_F32, 2, (int64_t[]){16, 16});
    tex_expr *i = tex_var(ctx, "i", TEX_I32), *j = tex_var(ctx, "j", TEX_I32);
    tex_expr *k = tex_var(ctx, "k", TEX_I32);
    tex_expr *zero = texi_float_imm(ctx, TEX_F32, 0.0);

    tex_stmt *init = texi_provide_new(ctx, C, 2, (tex_expr *[]){i, j}, zero);
    tex_expr *upd = tex_add(TEX_AT(C, i, j), tex_mul(TEX_AT(A, i, k), TEX_AT(B, k, j)));
    tex_stmt *update = texi_provide_new(ctx, C, 2, (tex_expr *[]){i, j}, upd);
    tex_stmt *kloop = texi_for_new(ctx, k, c0, c4, TEXI_FOR_SERIAL, -1, update);
    tex_stmt *jloop = texi_for_new(ctx, j, c0, c16, TEXI_FOR_VECTORIZED, -1,
                                   texi_seq_new(ctx, 2, (tex_stmt *[]){init, kloop}));
    tex_stmt *iloop = texi_for_new(ctx, i, c0, c16, TEXI_FOR_PARALLEL, -1, jloop);
    tex_stmt *nest = texi_realize_new(ctx, C, 2, (tex_expr *[]){c0, c0}, (tex_expr *[]){c16, c16},
                                      TEXI_SCOPE_GLOBAL, iloop);
    CHECK_STMT(nest, "realize C([0, 16], [0, 16]) global {\n"
                     "  for (i, 0, 16) parallel {\n"
                     "    for (j, 0, 16) vectorized {\n"
                     "      C[i, j] = 0.0f\n"
                     "      for (k, 0, 4) {\n"
                     "        C[i, j] = C[i, j] + A[i, k]*B[k, j]\n"
                     "      }\n"
                     "    }\n"
                     "  }\n"
                     "}\n");

    /* the same after flattening, with a shared-memory tile and a barrier */
    texi_buffer *Ab =
        texi_buffer_new(ctx, "A", TEX_F32, TEXI_SCOPE_GLOBAL, 1, (tex_expr *[]){tex_int(ctx, 64)});
    texi_buffer *Cb =
        texi_buffer_new(ctx, "C", TEX_F32, TEXI_SCOPE_GLOBAL, 1, (tex_expr *[]){tex_int(ctx, 256)});
    texi_buffer *As = texi_buffer_new(ctx, "A.shared", TEX_F32, TEXI_SCOPE_SHARED, 1,
                                      (tex_expr *[]){tex_int(ctx, 64)});
    tex_expr *tx = tex_var(ctx, "threadIdx.x", TEX_I32);
    tex_expr *bx = tex_var(ctx, "blockIdx.x", TEX_I32);
    tex_stmt *copy = texi_store_new(ctx, As, tx, texi_load_new(Ab, tx));
    tex_expr *cidx = tex_add(tex_mul(bx, c16), tx);
    tex_expr *acc = tex_add(texi_load_new(Cb, cidx),
                            texi_load_new(As, tex_add(tex_mul(tex_floormod(bx, c4), c4), k)));
    tex_stmt *body = texi_seq_new(ctx, 3,
                                  (tex_stmt *[]){copy, texi_barrier_new(ctx, TEXI_SCOPE_SHARED),
                                                 texi_for_new(ctx, k, c0, c4, TEXI_FOR_UNROLLED, -1,
                                                              texi_store_new(ctx, Cb, cidx, acc))});
    tex_stmt *kernel = texi_for_new(
        ctx, bx, c0, c16, TEXI_FOR_THREAD, TEX_BLOCK_X,
        texi_allocate_new(ctx, As,
                          texi_for_new(ctx, tx, c0, c16, TEXI_FOR_THREAD, TEX_THREAD_X, body)));
    CHECK_STMT(kernel, "for (blockIdx.x, 0, 16) bind blockIdx.x {\n"
                       "  allocate A.shared: f32[64] shared {\n"
                       "    for (threadIdx.x, 0, 16) bind threadIdx.x {\n"
                       "      A.shared[threadIdx.x] = A[threadIdx.x]\n"
                       "      barrier(shared)\n"
                       "      for (k, 0, 4) unrolled {\n"
                       "        C[blockIdx.x*16 + threadIdx.x] = C[blockIdx.x*16 + threadIdx.x] + "
                       "A.shared[blockIdx.x%4*4 + k]\n"
                       "      }\n"
                       "    }\n"
                       "  }\n"
                       "}\n");
    tex_ctx_free(ctx);
}

int main(void)
{
    TT_RUN(test_constants);
    TT_RUN(test_float_round_trip);
    TT_RUN(test_precedence);
    TT_RUN(test_integer_division);
    TT_RUN(test_compare_logic);
    TT_RUN(test_calls_and_other_kinds);
    TT_RUN(test_reductions);
    TT_RUN(test_same_names);
    TT_RUN(test_statement_kinds);
    TT_RUN(test_indentation);
    TT_RUN(test_matmul_nest);
    return tt_finish();
}
