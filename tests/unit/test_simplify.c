/*
 * The arithmetic simplifier (src/ir/simplify.c, canonical.c):
 *   - a table of rewrites that must happen, each input compared with the
 *     expected text of a small printer local to this test (independent of
 *     print.c), with the ranges i in [0,16), j in [0,8), k in [0,4), p in [4,12);
 *   - float folding that must and must not happen (-0.0, NaN);
 *   - a property test: thousands of random integer expressions over ranged
 *     variables, evaluated before and after simplification at random points
 *     by an evaluator written here (floor semantics, wrap-around to the
 *     dtype); they must agree exactly, and texi_const_interval and
 *     texi_expr_bounds must contain every sampled value, and simplifying
 *     twice must give the same tree as once. i32 samples whose
 *     original evaluation overflows are skipped (the simplifier assumes i32
 *     does not overflow); i16 and u8 expressions must agree even where they wrap.
 */
#include "ir/ir.h"
#include "tt.h"

#include <math.h>
#include <stdint.h>

static tex_ctx *ctx;
static tex_expr *i_, *j_, *k_, *p_, *x_, *y_, *z_, *n_;
static texi_range rng[4];

static void fresh(void)
{
    tex_ctx_free(ctx);
    ctx = tex_ctx_new();
    i_ = tex_var(ctx, "i", TEX_I32);
    j_ = tex_var(ctx, "j", TEX_I32);
    k_ = tex_var(ctx, "k", TEX_I32);
    p_ = tex_var(ctx, "p", TEX_I32);
    x_ = tex_var(ctx, "x", TEX_I32);
    y_ = tex_var(ctx, "y", TEX_I32);
    z_ = tex_var(ctx, "z", TEX_I32);
    n_ = tex_var(ctx, "n", TEX_I32);
    rng[0] = (texi_range){i_, tex_int(ctx, 0), tex_int(ctx, 16)};
    rng[1] = (texi_range){j_, tex_int(ctx, 0), tex_int(ctx, 8)};
    rng[2] = (texi_range){k_, tex_int(ctx, 0), tex_int(ctx, 4)};
    rng[3] = (texi_range){p_, tex_int(ctx, 4), tex_int(ctx, 8)};
}

/* ------------------------------------------------------------ printer */

static int prec(const tex_expr *e)
{
    switch (e->kind) {
    case TEXI_EXPR_OR:
        return 1;
    case TEXI_EXPR_AND:
        return 2;
    case TEXI_EXPR_EQ:
    case TEXI_EXPR_NE:
    case TEXI_EXPR_LT:
    case TEXI_EXPR_LE:
    case TEXI_EXPR_GT:
    case TEXI_EXPR_GE:
        return 3;
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
        return 4;
    case TEXI_EXPR_MUL:
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
        return 5;
    default:
        return 6;
    }
}

static const char *infix(const tex_expr *e)
{
    switch (e->kind) {
    case TEXI_EXPR_ADD:
        return " + ";
    case TEXI_EXPR_SUB:
        return " - ";
    case TEXI_EXPR_MUL:
        return "*";
    case TEXI_EXPR_DIV:
        return " /. ";
    case TEXI_EXPR_FLOORDIV:
        return " / ";
    case TEXI_EXPR_FLOORMOD:
        return " % ";
    case TEXI_EXPR_EQ:
        return " == ";
    case TEXI_EXPR_NE:
        return " != ";
    case TEXI_EXPR_LT:
        return " < ";
    case TEXI_EXPR_LE:
        return " <= ";
    case TEXI_EXPR_GT:
        return " > ";
    case TEXI_EXPR_GE:
        return " >= ";
    case TEXI_EXPR_AND:
        return " && ";
    case TEXI_EXPR_OR:
        return " || ";
    default:
        return NULL;
    }
}

static void put(texi_sb *sb, const tex_expr *e);

static void put_child(texi_sb *sb, const tex_expr *c, int p, bool right)
{
    bool paren = prec(c) < p || (right && prec(c) == p);
    if (paren)
        texi_sb_putc(sb, '(');
    put(sb, c);
    if (paren)
        texi_sb_putc(sb, ')');
}

static void put(texi_sb *sb, const tex_expr *e)
{
    if (!e) {
        texi_sb_puts(sb, "(null)");
        return;
    }
    const char *op = infix(e);
    if (op) {
        put_child(sb, e->u.bin.a, prec(e), false);
        texi_sb_puts(sb, op);
        put_child(sb, e->u.bin.b, prec(e), true);
        return;
    }
    switch (e->kind) {
    case TEXI_EXPR_INT:
        if (e->dtype == TEX_BOOL)
            texi_sb_puts(sb, e->u.i ? "true" : "false");
        else
            texi_sb_printf(sb, "%lld", (long long)e->u.i);
        break;
    case TEXI_EXPR_FLOAT:
        texi_sb_printf(sb, "%gf", e->u.f);
        break;
    case TEXI_EXPR_VAR:
        texi_sb_puts(sb, e->u.var.name);
        break;
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        texi_sb_puts(sb, e->kind == TEXI_EXPR_MIN ? "min(" : "max(");
        put(sb, e->u.bin.a);
        texi_sb_puts(sb, ", ");
        put(sb, e->u.bin.b);
        texi_sb_putc(sb, ')');
        break;
    case TEXI_EXPR_NOT:
        texi_sb_putc(sb, '!');
        put_child(sb, e->u.un.a, 6, false);
        break;
    case TEXI_EXPR_CAST:
        texi_sb_printf(sb, "%s(", tex_dtype_name(e->dtype));
        put(sb, e->u.un.a);
        texi_sb_putc(sb, ')');
        break;
    case TEXI_EXPR_SELECT:
        texi_sb_puts(sb, "select(");
        put(sb, e->u.sel.cond);
        texi_sb_puts(sb, ", ");
        put(sb, e->u.sel.t);
        texi_sb_puts(sb, ", ");
        put(sb, e->u.sel.f);
        texi_sb_putc(sb, ')');
        break;
    default:
        texi_sb_printf(sb, "<%s>", texi_expr_kind_names[e->kind]);
        break;
    }
}

/* The expression as text, in one of four static buffers used in turn. */
static const char *str(const tex_expr *e)
{
    static char bufs[4][4096];
    static int slot;
    texi_sb sb;
    texi_sb_init(&sb);
    put(&sb, e);
    char *s = texi_sb_take(&sb);
    char *out = bufs[slot++ & 3];
    snprintf(out, sizeof bufs[0], "%s", s ? s : "(oom)");
    free(s);
    return out;
}

/* ---------------------------------------------------------- shorthands */

static tex_expr *C(int64_t v)
{
    return tex_int(ctx, v);
}
static tex_expr *add(tex_expr *a, tex_expr *b)
{
    return tex_add(a, b);
}
static tex_expr *sub(tex_expr *a, tex_expr *b)
{
    return tex_sub(a, b);
}
static tex_expr *mul(tex_expr *a, tex_expr *b)
{
    return tex_mul(a, b);
}
static tex_expr *fdiv(tex_expr *a, tex_expr *b)
{
    return tex_floordiv(a, b);
}
static tex_expr *fmod_(tex_expr *a, tex_expr *b)
{
    return tex_floormod(a, b);
}

#define CHECK_SIMP(in, expected)                                                                   \
    do {                                                                                           \
        tex_expr *in_ = (in);                                                                      \
        tex_expr *out_ = in_ ? texi_simplify(in_, 4, rng) : NULL;                                  \
        const char *got_ = out_ ? str(out_) : "(null)";                                            \
        if (strcmp(got_, (expected)) != 0)                                                         \
            TT_FAILF("simplify %s:\n    got:      %s\n    expected: %s", in_ ? str(in_) : "?",     \
                     got_, (expected));                                                            \
    } while (0)

/* ------------------------------------------------------- rewrite table */

static void test_sums_of_products(void)
{
    fresh();
    CHECK_SIMP(add(C(3), add(j_, mul(C(8), i_))), "i*8 + j + 3");
    CHECK_SIMP(add(mul(x_, C(4)), mul(x_, C(4))), "x*8");
    CHECK_SIMP(sub(add(mul(i_, C(8)), j_), mul(i_, C(8))), "j");
    CHECK_SIMP(sub(add(x_, y_), add(y_, x_)), "0");
    CHECK_SIMP(mul(add(i_, C(3)), C(4)), "i*4 + 12");
    CHECK_SIMP(mul(C(2), sub(add(x_, C(1)), y_)), "x*2 - y*2 + 2");
    CHECK_SIMP(sub(C(5), x_), "5 - x");
    CHECK_SIMP(sub(x_, mul(x_, C(2))), "x*-1");
    CHECK_SIMP(sub(mul(x_, y_), mul(y_, x_)), "0");
    CHECK_SIMP(mul(add(x_, C(1)), add(y_, C(2))), "x*2 + x*y + y + 2");
    CHECK_SIMP(sub(mul(add(x_, y_), C(2)), mul(x_, C(2))), "y*2");
    CHECK_SIMP(add(add(x_, C(-3)), C(3)), "x");
    CHECK_SIMP(sub(sub(x_, y_), C(4)), "x - y - 4");
    CHECK_SIMP(add(mul(C(2147483647), C(1)), C(1)), "-2147483648"); /* wraps like i32 */
    CHECK_SIMP(tex_neg(tex_neg(x_)), "x");
}

static void test_floordiv_floormod(void)
{
    fresh();
    tex_expr *ij = add(mul(i_, C(8)), j_);
    CHECK_SIMP(fdiv(ij, C(8)), "i");
    CHECK_SIMP(fmod_(ij, C(8)), "j");
    CHECK_SIMP(fdiv(x_, C(1)), "x");
    CHECK_SIMP(fmod_(x_, C(1)), "0");
    CHECK_SIMP(fdiv(mul(x_, C(4)), C(4)), "x");
    CHECK_SIMP(fdiv(mul(x_, C(8)), C(4)), "x*2");
    CHECK_SIMP(fdiv(fdiv(x_, C(4)), C(8)), "x / 32");
    CHECK_SIMP(fmod_(j_, C(8)), "j");
    CHECK_SIMP(fdiv(j_, C(8)), "0");
    CHECK_SIMP(fdiv(add(mul(x_, C(8)), C(17)), C(8)), "x + 2");
    CHECK_SIMP(fmod_(add(mul(x_, C(8)), C(17)), C(8)), "1");
    CHECK_SIMP(fdiv(add(mul(x_, C(8)), C(-17)), C(8)), "x - 3");
    CHECK_SIMP(fmod_(add(mul(x_, C(8)), C(-17)), C(8)), "7");
    CHECK_SIMP(fdiv(add(j_, C(8)), C(8)), "1");
    CHECK_SIMP(fmod_(add(j_, C(8)), C(8)), "j");
    CHECK_SIMP(fdiv(sub(j_, C(8)), C(8)), "-1");
    CHECK_SIMP(fdiv(add(mul(k_, C(8)), j_), C(8)), "k");
    CHECK_SIMP(fdiv(add(mul(i_, C(4)), j_), C(4)), "i + j / 4");
    CHECK_SIMP(fdiv(add(add(mul(i_, C(16)), mul(j_, C(2))), k_), C(2)), "i*8 + j + k / 2");
    CHECK_SIMP(fmod_(add(add(mul(i_, C(16)), mul(j_, C(2))), C(1)), C(2)), "1");
    CHECK_SIMP(fdiv(add(mul(x_, C(3)), C(3)), C(3)), "x + 1");
    CHECK_SIMP(fdiv(mul(x_, C(6)), C(4)), "x*3 / 2");
    CHECK_SIMP(fmod_(add(mul(x_, C(4)), C(2)), C(8)), "(x*2 + 1) % 4*2");
    CHECK_SIMP(fmod_(fmod_(x_, C(16)), C(8)), "x % 8");
    CHECK_SIMP(fmod_(fmod_(x_, C(8)), C(16)), "x % 8");
    CHECK_SIMP(add(mul(fdiv(x_, C(8)), C(8)), fmod_(x_, C(8))), "x");
    CHECK_SIMP(add(add(mul(C(8), fdiv(x_, C(8))), C(1)), fmod_(x_, C(8))), "x + 1");
    CHECK_SIMP(add(mul(fdiv(sub(x_, C(1)), C(8)), C(8)), fmod_(sub(x_, C(1)), C(8))), "x - 1");
    CHECK_SIMP(sub(x_, mul(fdiv(x_, C(8)), C(8))), "x % 8");
    CHECK_SIMP(sub(mul(fdiv(add(x_, y_), C(4)), C(8)), mul(add(x_, y_), C(2))), "(x + y) % 4*-2");
    CHECK_SIMP(sub(add(mul(fdiv(j_, C(4)), C(4)), C(1)), j_), "1 - j % 4");
    CHECK_SIMP(mul(fdiv(x_, C(8)), C(8)), "x / 8*8");
    CHECK_SIMP(fdiv(C(-7), C(2)), "-4");
    CHECK_SIMP(fmod_(C(-7), C(2)), "1");
    CHECK_SIMP(fdiv(C(7), C(-2)), "-4");
    CHECK_SIMP(fmod_(C(7), C(-2)), "-1");
    CHECK_SIMP(fdiv(x_, C(0)), "x / 0"); /* undefined: left alone */
    CHECK_SIMP(fdiv(k_, add(j_, C(4))), "0");
    CHECK_SIMP(fmod_(k_, add(j_, C(4))), "k");
    CHECK_SIMP(fdiv(j_, add(k_, C(1))), "j / (k + 1)");
    CHECK_SIMP(fdiv(add(mul(x_, p_), k_), p_), "x");
    CHECK_SIMP(fmod_(add(mul(x_, p_), k_), p_), "k");
    CHECK_SIMP(fdiv(add(add(mul(mul(x_, p_), C(3)), k_), p_), p_), "x*3 + 1");
    CHECK_SIMP(fdiv(add(mul(x_, p_), j_), p_), "x + j / p");
    CHECK_SIMP(fmod_(add(mul(x_, p_), j_), p_), "j % p");
    CHECK_SIMP(fdiv(mul(x_, p_), mul(p_, C(2))), "p*x / (p*2)");
    CHECK_SIMP(add(add(mul(fdiv(x_, C(60)), C(60)), mul(fmod_(fdiv(x_, C(5)), C(12)), C(5))),
                   fmod_(x_, C(5))),
               "x");
    CHECK_SIMP(add(mul(fmod_(fdiv(x_, C(5)), C(12)), C(5)), fmod_(x_, C(5))), "x % 60");
    CHECK_SIMP(add(fdiv(x_, C(8)), mul(fmod_(x_, C(8)), C(68))), "x / 8 + x % 8*68");
    /* recombined over a divisor that is not constant */
    CHECK_SIMP(add(mul(fdiv(x_, p_), p_), fmod_(x_, p_)), "x");
    CHECK_SIMP(add(mul(p_, fdiv(add(x_, y_), p_)), fmod_(add(x_, y_), p_)), "x + y");
    CHECK_SIMP(add(mul(mul(fdiv(x_, y_), y_), C(3)), mul(fmod_(x_, y_), C(3))), "x*3");
    CHECK_SIMP(sub(x_, mul(fdiv(x_, p_), p_)), "x % p");
    CHECK_SIMP(mul(fdiv(x_, p_), p_), "p*(x / p)");
    tex_expr *wide_p = tex_cast(TEX_I64, p_), *wide_q = tex_cast(TEX_I64, fdiv(x_, p_));
    CHECK_SIMP(add(mul(wide_p, wide_q), tex_cast(TEX_I64, fmod_(x_, p_))), "i64(x)");
    CHECK_SIMP(add(mul(tex_cast(TEX_I64, fdiv(x_, C(8))), tex_int(ctx, 8)),
                   tex_cast(TEX_I64, fmod_(x_, C(8)))),
               "i64(x)");
    tex_expr *w64 = tex_var(ctx, "w", TEX_I64);
    CHECK_SIMP(add(mul(tex_cast(TEX_I32, fdiv(w64, tex_int(ctx, 5))), C(5)),
                   tex_cast(TEX_I32, fmod_(w64, tex_int(ctx, 5)))),
               "i32(w)");
    /* floordiv / floormod of widened operands in their own type */
    CHECK_SIMP(fdiv(tex_cast(TEX_I64, k_), tex_cast(TEX_I64, p_)), "0");
    CHECK_SIMP(fmod_(tex_cast(TEX_I64, k_), tex_cast(TEX_I64, p_)), "i64(k)");
    CHECK_SIMP(fdiv(tex_cast(TEX_I64, x_), tex_cast(TEX_I64, y_)), "i64(x) / i64(y)");
}

static void test_min_max(void)
{
    fresh();
    CHECK_SIMP(tex_min(i_, C(16)), "i");
    CHECK_SIMP(tex_min(i_, C(8)), "min(i, 8)");
    CHECK_SIMP(tex_max(i_, C(0)), "i");
    CHECK_SIMP(tex_max(i_, C(-1)), "i");
    CHECK_SIMP(tex_min(C(3), x_), "min(x, 3)");
    CHECK_SIMP(tex_min(x_, x_), "x");
    CHECK_SIMP(tex_min(add(x_, C(2)), add(x_, C(5))), "x + 2");
    CHECK_SIMP(tex_max(add(x_, C(2)), add(x_, C(5))), "x + 5");
    CHECK_SIMP(tex_min(tex_min(x_, C(5)), C(3)), "min(x, 3)");
    CHECK_SIMP(tex_max(tex_max(x_, C(5)), C(3)), "max(x, 5)");
    CHECK_SIMP(tex_min(tex_max(x_, C(5)), C(3)), "3");
    CHECK_SIMP(tex_min(add(x_, y_), add(x_, C(3))), "x + min(y, 3)");
    CHECK_SIMP(tex_min(add(mul(i_, C(8)), j_), add(mul(i_, C(8)), C(7))), "i*8 + j");
    CHECK_SIMP(tex_min(add(mul(x_, C(8)), y_), add(mul(x_, C(8)), C(7))), "x*8 + min(y, 7)");
    CHECK_SIMP(tex_min(y_, x_), "min(x, y)");
    CHECK_SIMP(tex_min(C(4), C(-2)), "-2");
    CHECK_SIMP(tex_max(j_, add(j_, k_)), "j + k");
    /* ordered once the difference is recombined: x - (x + 63) / 64*64 is
     * (x + 63) % 64 - 63 (a tile count's columns are x) */
    CHECK_SIMP(tex_min(x_, mul(fdiv(add(x_, C(63)), C(64)), C(64))), "x");
    CHECK_SIMP(tex_max(x_, mul(fdiv(add(x_, C(63)), C(64)), C(64))), "(x + 63) / 64*64");
    CHECK_SIMP(tex_min(x_, mul(fdiv(add(x_, C(62)), C(64)), C(64))), "min(x, (x + 62) / 64*64)");
}

static void test_compare_and_logic(void)
{
    fresh();
    CHECK_SIMP(tex_lt(i_, C(16)), "true");
    CHECK_SIMP(tex_ge(i_, C(16)), "false");
    CHECK_SIMP(tex_lt(i_, C(8)), "i < 8");
    CHECK_SIMP(tex_lt(add(mul(i_, C(8)), j_), C(128)), "true");
    CHECK_SIMP(tex_lt(add(x_, C(3)), add(y_, C(5))), "x < y + 2");
    CHECK_SIMP(tex_lt(mul(x_, C(4)), C(10)), "x < 3");
    CHECK_SIMP(tex_le(mul(x_, C(4)), C(10)), "x <= 2");
    CHECK_SIMP(tex_gt(mul(x_, C(4)), C(10)), "x > 2");
    CHECK_SIMP(tex_ge(mul(x_, C(4)), C(10)), "x >= 3");
    CHECK_SIMP(tex_lt(mul(x_, C(-4)), C(10)), "x > -3");
    CHECK_SIMP(tex_eq(mul(x_, C(2)), C(5)), "false");
    CHECK_SIMP(tex_ne(mul(x_, C(2)), C(5)), "true");
    CHECK_SIMP(tex_eq(mul(x_, C(2)), C(6)), "x == 3");
    CHECK_SIMP(tex_eq(add(x_, y_), add(y_, x_)), "true");
    CHECK_SIMP(tex_lt(fmod_(x_, C(8)), C(8)), "true");
    CHECK_SIMP(tex_ge(fmod_(x_, C(8)), C(0)), "true");
    CHECK_SIMP(tex_not(tex_lt(x_, y_)), "x >= y");
    CHECK_SIMP(tex_not(tex_not(tex_lt(x_, y_))), "x < y");
    CHECK_SIMP(tex_and(tex_lt(x_, C(5)), tex_lt(i_, C(16))), "x < 5");
    CHECK_SIMP(tex_or(tex_lt(x_, C(5)), tex_lt(i_, C(16))), "true");
    CHECK_SIMP(tex_and(tex_lt(x_, C(5)), tex_lt(i_, C(0))), "false");
    CHECK_SIMP(tex_and(tex_lt(x_, y_), tex_lt(x_, y_)), "x < y");
    CHECK_SIMP(tex_select(tex_lt(i_, C(16)), x_, y_), "x");
    CHECK_SIMP(tex_select(tex_lt(x_, y_), z_, z_), "z");
    CHECK_SIMP(tex_select(tex_lt(x_, y_), x_, y_), "select(x < y, x, y)");
    CHECK_SIMP(tex_select(tex_lt(x_, y_), add(x_, C(0)), y_), "select(x < y, x, y)");
}

static void test_casts(void)
{
    fresh();
    tex_expr *x64 = tex_var(ctx, "w", TEX_I64);
    CHECK_SIMP(texi_unary(TEXI_EXPR_CAST, TEX_I32, texi_int_imm(ctx, TEX_I64, 5)), "5");
    CHECK_SIMP(texi_unary(TEXI_EXPR_CAST, TEX_I8, C(300)), "44");
    CHECK_SIMP(texi_unary(TEXI_EXPR_CAST, TEX_I32, x_), "x");
    CHECK_SIMP(texi_unary(TEXI_EXPR_CAST, TEX_I32, texi_unary(TEXI_EXPR_CAST, TEX_I64, x_)), "x");
    CHECK_SIMP(texi_unary(TEXI_EXPR_CAST, TEX_I64, texi_unary(TEXI_EXPR_CAST, TEX_I32, x64)),
               "i64(i32(w))");
    tex_expr *u = tex_var(ctx, "u", TEX_U32);
    CHECK_SIMP(sub(u, u), "0");
    CHECK_SIMP(sub(add(u, C(1)), C(1)), "u");
}

/* Symbolic ranges: i in [0, n), j in [0, 4). */
static void test_symbolic_ranges(void)
{
    fresh();
    texi_range r[2] = {{i_, C(0), n_}, {j_, C(0), C(4)}};
    TT_CHECK(texi_prove(tex_lt(i_, n_), 2, r));
    TT_CHECK(texi_prove(tex_lt(add(mul(i_, C(4)), j_), mul(n_, C(4))), 2, r));
    TT_CHECK(texi_prove(tex_le(i_, sub(n_, C(1))), 2, r));
    TT_CHECK(!texi_prove(tex_lt(i_, sub(n_, C(1))), 2, r));
    /* the main part of a loop split by 8: io in [0, n/8), ii in [0, 8) */
    texi_range split[2] = {{i_, C(0), fdiv(n_, C(8))}, {j_, C(0), C(8)}};
    TT_CHECK(texi_prove(tex_lt(add(mul(i_, C(8)), j_), n_), 2, split));
    texi_range tail[2] = {{i_, C(0), fdiv(add(n_, C(7)), C(8))}, {j_, C(0), C(8)}};
    TT_CHECK(!texi_prove(tex_lt(add(mul(i_, C(8)), j_), n_), 2, tail));
    TT_CHECK(texi_prove(tex_lt(add(mul(i_, C(8)), j_), add(n_, C(7))), 2, tail));
    tex_expr *m = texi_simplify(tex_min(add(i_, C(1)), n_), 2, r);
    TT_EQ_STR(str(m), "i + 1");
}

/* ------------------------------------------------------------- floats */

static void test_float_folding(void)
{
    fresh();
    tex_expr *f = tex_var(ctx, "f", TEX_F32);
    tex_expr *pz = tex_const(ctx, TEX_F32, 0.0), *nz = tex_const(ctx, TEX_F32, -0.0);
    tex_expr *one = tex_const(ctx, TEX_F32, 1.0);
    TT_EQ_STR(str(texi_simplify(tex_add(f, pz), 0, NULL)), "f + 0f");
    TT_EQ_STR(str(texi_simplify(tex_add(pz, f), 0, NULL)), "0f + f");
    TT_EQ_STR(str(texi_simplify(tex_add(f, nz), 0, NULL)), "f");
    TT_EQ_STR(str(texi_simplify(tex_sub(f, pz), 0, NULL)), "f");
    TT_EQ_STR(str(texi_simplify(tex_sub(f, nz), 0, NULL)), "f - -0f");
    TT_EQ_STR(str(texi_simplify(tex_mul(f, one), 0, NULL)), "f");
    TT_EQ_STR(str(texi_simplify(tex_mul(f, pz), 0, NULL)), "f*0f");
    TT_EQ_STR(str(texi_simplify(tex_div(f, one), 0, NULL)), "f");
    TT_EQ_STR(str(texi_simplify(tex_sub(f, f), 0, NULL)), "f - f");
    TT_EQ_STR(str(texi_simplify(tex_lt(f, f), 0, NULL)), "f < f");
    TT_EQ_STR(str(texi_simplify(tex_not(tex_lt(f, one)), 0, NULL)), "!(f < 1f)");
    TT_EQ_STR(str(texi_simplify(tex_add(tex_mul(f, tex_const(ctx, TEX_F32, 2)),
                                        tex_mul(f, tex_const(ctx, TEX_F32, 2))),
                                0, NULL)),
              "f*2f + f*2f");

    /* -0.0 + 0.0 is +0.0 */
    tex_expr *z = texi_simplify(tex_add(nz, pz), 0, NULL);
    TT_CHECK(z && z->kind == TEXI_EXPR_FLOAT && z->u.f == 0 && !signbit(z->u.f));
    z = texi_simplify(tex_add(nz, nz), 0, NULL);
    TT_CHECK(z && z->kind == TEXI_EXPR_FLOAT && signbit(z->u.f));
    /* f32 arithmetic, not f64 */
    volatile float a = 0.1f, b = 0.2f;
    z = texi_simplify(tex_add(tex_const(ctx, TEX_F32, a), tex_const(ctx, TEX_F32, b)), 0, NULL);
    TT_CHECK(z && z->kind == TEXI_EXPR_FLOAT && z->u.f == (double)(float)(a + b));
    z = texi_simplify(tex_div(tex_const(ctx, TEX_F32, 1), tex_const(ctx, TEX_F32, 3)), 0, NULL);
    TT_CHECK(z && z->kind == TEXI_EXPR_FLOAT && z->u.f == (double)(1.0f / 3.0f));
    /* NaN: comparisons follow C, min/max stay */
    tex_expr *nan = tex_const(ctx, TEX_F32, NAN);
    TT_EQ_STR(str(texi_simplify(tex_lt(nan, one), 0, NULL)), "false");
    TT_EQ_STR(str(texi_simplify(tex_ne(nan, nan), 0, NULL)), "true");
    TT_EQ_STR(str(texi_simplify(tex_eq(nan, nan), 0, NULL)), "false");
    TT_CHECK(texi_simplify(tex_min(nan, one), 0, NULL)->kind == TEXI_EXPR_MIN);
    TT_CHECK(texi_simplify(tex_min(nz, pz), 0, NULL)->kind == TEXI_EXPR_MIN);
    TT_EQ_STR(str(texi_simplify(tex_max(one, pz), 0, NULL)), "1f");
    /* int -> float cast of a constant folds */
    TT_EQ_STR(str(texi_simplify(texi_unary(TEXI_EXPR_CAST, TEX_F32, C(3)), 0, NULL)), "3f");
}

/* ------------------------------------------------------ property test */

#define NV 4

typedef struct {
    tex_dtype t;
    tex_expr *v[NV]; /* variables; v[NV-1] has a positive range (a divisor) */
    int64_t lo[NV], hi[NV];
    tex_expr *sym; /* when set, v[0] ranges over [0, sym) */
    texi_range r[NV];
} world;

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int64_t rnd_in(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static tex_expr *konst(const world *w, int64_t v)
{
    return texi_int_imm(ctx, w->t, v);
}

static tex_expr *gen(const world *w, int depth);

static tex_expr *gen_leaf(const world *w)
{
    if (rnd() % 10 < 7)
        return w->v[rnd() % NV];
    int64_t m = w->t == TEX_I16 ? 400 : 20;
    return konst(w, rnd_in(texi_dtype_is_signed(w->t) ? -m : 0, m));
}

static tex_expr *gen_cond(const world *w, int depth)
{
    static const enum texi_expr_kind cmps[] = {TEXI_EXPR_EQ, TEXI_EXPR_NE, TEXI_EXPR_LT,
                                               TEXI_EXPR_LE, TEXI_EXPR_GT, TEXI_EXPR_GE};
    tex_expr *c = texi_binary(cmps[rnd() % 6], gen(w, depth - 1), gen(w, depth - 1));
    if (rnd() % 5 == 0)
        c = texi_binary(rnd() % 2 ? TEXI_EXPR_AND : TEXI_EXPR_OR, c,
                        texi_binary(TEXI_EXPR_LT, gen_leaf(w), gen_leaf(w)));
    if (rnd() % 6 == 0)
        c = texi_unary(TEXI_EXPR_NOT, TEX_BOOL, c);
    return c;
}

static tex_expr *gen_divisor(const world *w)
{
    if (rnd() % 3 == 0)
        return w->v[NV - 1];
    int64_t c = rnd_in(1, 9);
    return konst(w, texi_dtype_is_signed(w->t) && rnd() % 4 == 0 ? -c : c);
}

static tex_expr *gen(const world *w, int depth)
{
    if (depth <= 0 || rnd() % 5 == 0)
        return gen_leaf(w);
    switch (rnd() % 9) {
    case 0:
        return texi_binary(TEXI_EXPR_ADD, gen(w, depth - 1), gen(w, depth - 1));
    case 1:
        return texi_binary(TEXI_EXPR_SUB, gen(w, depth - 1), gen(w, depth - 1));
    case 2:
        return texi_binary(TEXI_EXPR_MUL, gen(w, depth - 1),
                           rnd() % 2 ? gen_leaf(w) : gen(w, depth - 2));
    case 3:
        return texi_binary(TEXI_EXPR_FLOORDIV, gen(w, depth - 1), gen_divisor(w));
    case 4:
        return texi_binary(TEXI_EXPR_FLOORMOD, gen(w, depth - 1), gen_divisor(w));
    case 5:
        return texi_binary(TEXI_EXPR_MIN, gen(w, depth - 1), gen(w, depth - 1));
    case 6:
        return texi_binary(TEXI_EXPR_MAX, gen(w, depth - 1), gen(w, depth - 1));
    case 7:
        return texi_select_new(gen_cond(w, depth), gen(w, depth - 1), gen(w, depth - 1));
    default: /* a structured index: a*c + b */
        return texi_binary(TEXI_EXPR_ADD,
                           texi_binary(TEXI_EXPR_MUL, gen(w, depth - 1), konst(w, rnd_in(1, 8))),
                           gen(w, depth - 2));
    }
}

/* v wrapped to integer type t; *ovf set when that changed it. */
static int64_t wrap_to(tex_dtype t, int64_t v, bool *ovf)
{
    int64_t r = v;
    switch (t) {
    case TEX_I8:
        r = (int8_t)v;
        break;
    case TEX_I16:
        r = (int16_t)v;
        break;
    case TEX_I32:
        r = (int32_t)v;
        break;
    case TEX_U8:
        r = (uint8_t)v;
        break;
    case TEX_U16:
        r = (uint16_t)v;
        break;
    case TEX_U32:
        r = (uint32_t)v;
        break;
    case TEX_BOOL:
        r = v != 0;
        break;
    default:
        break;
    }
    if (r != v)
        *ovf = true;
    return r;
}

static int64_t floordiv_ref(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

typedef struct {
    const world *w;
    int64_t val[NV];
    int64_t sym_val;
    bool ovf, divzero;
} env;

/* The reference evaluator: exact integers, floor semantics, wrap to dtype. */
static int64_t eval(env *en, const tex_expr *e)
{
    int64_t a, b;
    switch (e->kind) {
    case TEXI_EXPR_INT:
        return e->u.i;
    case TEXI_EXPR_VAR:
        for (int i = 0; i < NV; i++)
            if (e == en->w->v[i])
                return en->val[i];
        return en->sym_val;
    case TEXI_EXPR_SELECT:
        return eval(en, e->u.sel.cond) ? eval(en, e->u.sel.t) : eval(en, e->u.sel.f);
    case TEXI_EXPR_NOT:
        return !eval(en, e->u.un.a);
    case TEXI_EXPR_CAST:
        return wrap_to(e->dtype, eval(en, e->u.un.a), &en->ovf);
    default:
        break;
    }
    a = eval(en, e->u.bin.a);
    b = eval(en, e->u.bin.b);
    int64_t r;
    switch (e->kind) {
    case TEXI_EXPR_ADD:
        r = a + b;
        break;
    case TEXI_EXPR_SUB:
        r = a - b;
        break;
    case TEXI_EXPR_MUL:
        r = a * b;
        break;
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
        if (b == 0) {
            en->divzero = true;
            return 0;
        }
        r = floordiv_ref(a, b);
        if (e->kind == TEXI_EXPR_FLOORMOD)
            r = a - r * b;
        break;
    case TEXI_EXPR_MIN:
        r = a < b ? a : b;
        break;
    case TEXI_EXPR_MAX:
        r = a > b ? a : b;
        break;
    case TEXI_EXPR_EQ:
        return a == b;
    case TEXI_EXPR_NE:
        return a != b;
    case TEXI_EXPR_LT:
        return a < b;
    case TEXI_EXPR_LE:
        return a <= b;
    case TEXI_EXPR_GT:
        return a > b;
    case TEXI_EXPR_GE:
        return a >= b;
    case TEXI_EXPR_AND:
        return a && b;
    case TEXI_EXPR_OR:
        return a || b;
    default:
        TT_FAILF("evaluator: unexpected node %s", texi_expr_kind_names[e->kind]);
        return 0;
    }
    return wrap_to(e->dtype, r, &en->ovf);
}

static void make_world(world *w, tex_dtype t, bool symbolic)
{
    static const char *names[NV] = {"a", "b", "c", "d"};
    w->t = t;
    w->sym = symbolic ? tex_var(ctx, "n", t) : NULL;
    bool sgn = texi_dtype_is_signed(t);
    for (int i = 0; i < NV; i++) {
        w->v[i] = tex_var(ctx, names[i], t);
        w->lo[i] = i == NV - 1 ? rnd_in(1, 5) : rnd_in(sgn ? -12 : 0, 10);
        w->hi[i] = w->lo[i] + rnd_in(0, 15);
        w->r[i] = (texi_range){w->v[i], konst(w, w->lo[i]), konst(w, w->hi[i] - w->lo[i] + 1)};
    }
    if (symbolic) { /* v[0] in [0, n), [0, n/4), [0, (n+3)/4) or [0, n - 2) */
        tex_expr *ext[4] = {w->sym, texi_binary(TEXI_EXPR_FLOORDIV, w->sym, konst(w, 4)),
                            texi_binary(TEXI_EXPR_FLOORDIV,
                                        texi_binary(TEXI_EXPR_ADD, w->sym, konst(w, 3)),
                                        konst(w, 4)),
                            texi_binary(TEXI_EXPR_SUB, w->sym, konst(w, 2))};
        w->lo[0] = 0;
        w->r[0] = (texi_range){w->v[0], konst(w, 0), ext[rnd() % 4]};
    }
}

static int64_t eval(env *en, const tex_expr *e);

static void sample(const world *w, env *en)
{
    memset(en, 0, sizeof *en);
    en->w = w;
    int64_t extent = 0;
    while (w->sym && extent <= 0) {
        en->sym_val = rnd_in(1, 40);
        extent = eval(en, w->r[0].extent);
    }
    for (int i = 0; i < NV; i++)
        en->val[i] = rnd_in(w->lo[i], w->sym && i == 0 ? extent - 1 : w->hi[i]);
}

typedef struct {
    int exprs, changed, checked, skipped, wrapped, unbounded, failures;
} stats;

static void report(const char *what, const tex_expr *e, const tex_expr *s, const env *en,
                   int64_t want, int64_t got)
{
    TT_FAILF("%s: %s\n    simplified: %s\n    at a=%lld b=%lld c=%lld d=%lld n=%lld: %lld vs %lld",
             what, str(e), str(s), (long long)en->val[0], (long long)en->val[1],
             (long long)en->val[2], (long long)en->val[3], (long long)en->sym_val, (long long)want,
             (long long)got);
}

/* One random expression: simplification, interval and bounds at 16 points. */
static void check_one(const world *w, stats *st, bool skip_overflow)
{
    tex_expr *e = gen(w, 5);
    tex_expr *s = texi_simplify(e, NV, w->r);
    tex_expr *lo = NULL, *hi = NULL;
    if (!e || !s) {
        TT_FAILF("simplify returned NULL: %s", tex_errmsg(ctx));
        st->failures++;
        return;
    }
    if (texi_expr_bounds(ctx, e, NV, w->r, &lo, &hi) < 0) {
        if (getenv("SHOW_UNBOUNDED"))
            printf("unbounded: %s\n", str(s));
        st->unbounded++;
        tex_clear_error(ctx);
    }
    texi_interval iv = texi_const_interval(e, NV, w->r);
    texi_interval ivs = texi_const_interval(s, NV, w->r);
    st->exprs++;
    st->changed += s != e;
    tex_expr *s2 = texi_simplify(s, NV, w->r); /* a fixed point: passes may rerun it */
    if (s2 != s) {
        TT_FAILF("not idempotent: %s\n    once:  %s\n    twice: %s", str(e), str(s), str(s2));
        st->failures++;
    }
    for (int p = 0; p < 16 && st->failures < 5; p++) {
        env en;
        sample(w, &en);
        int64_t want = eval(&en, e);
        if (en.divzero || (en.ovf && skip_overflow)) {
            st->skipped++;
            continue;
        }
        st->wrapped += en.ovf;
        en.ovf = false;
        int64_t got = eval(&en, s);
        st->checked++;
        bool bad = en.divzero || got != want;
        if (bad)
            report("simplified value differs", e, s, &en, want, got);
        if ((!iv.lo_inf && want < iv.lo) || (!iv.hi_inf && want > iv.hi) ||
            (!ivs.lo_inf && want < ivs.lo) || (!ivs.hi_inf && want > ivs.hi)) {
            report("constant interval misses the value", e, s, &en, want, iv.lo);
            bad = true;
        }
        if (lo && hi) {
            int64_t l = eval(&en, lo), h = eval(&en, hi);
            if (want < l || want > h) {
                TT_FAILF("bounds [%s, %s] miss %lld", str(lo), str(hi), (long long)want);
                report("bounds", e, s, &en, l, h);
                bad = true;
            }
        }
        st->failures += bad;
    }
}

static void run_property(tex_dtype t, bool symbolic, int n_exprs, bool skip_overflow)
{
    stats st = {0};
    for (int round = 0; round < n_exprs / 50 && st.failures < 5; round++) {
        fresh();
        world w;
        make_world(&w, t, symbolic);
        for (int k = 0; k < 50 && st.failures < 5; k++)
            check_one(&w, &st, skip_overflow);
    }
    TT_CHECK(st.exprs >= n_exprs - 50 || st.failures > 0);
    TT_CHECK(st.checked > st.exprs * 8);
    TT_CHECK(st.unbounded * 20 < st.exprs);
    printf("  %s%s: %d expressions (%d rewritten), %d points checked, %d skipped, %d wrapped, "
           "%d unbounded\n",
           tex_dtype_name(t), symbolic ? " (symbolic range)" : "", st.exprs, st.changed, st.checked,
           st.skipped, st.wrapped, st.unbounded);
}

static void test_property_i32(void)
{
    rng_state = 12345;
    run_property(TEX_I32, false, 5000, true);
}

static void test_property_symbolic(void)
{
    rng_state = 777;
    run_property(TEX_I32, true, 1500, true);
}

static void test_property_wrapping_types(void)
{
    rng_state = 4242;
    run_property(TEX_I16, false, 1500, false);
    run_property(TEX_U8, false, 1500, false);
}

int main(void)
{
    TT_RUN(test_sums_of_products);
    TT_RUN(test_floordiv_floormod);
    TT_RUN(test_min_max);
    TT_RUN(test_compare_and_logic);
    TT_RUN(test_casts);
    TT_RUN(test_symbolic_ranges);
    TT_RUN(test_float_folding);
    TT_RUN(test_property_i32);
    TT_RUN(test_property_symbolic);
    TT_RUN(test_property_wrapping_types);
    tex_ctx_free(ctx);
    return tt_finish();
}
