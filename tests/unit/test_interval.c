/*
 * Range analysis (src/ir/interval.c): texi_const_interval for every integer
 * operator (with exhaustive enumeration of small operand intervals as the
 * judge of soundness, and of tightness where interval arithmetic is exact),
 * unknown variables, axes, overflow and saturation; texi_expr_bounds with
 * symbolic ranges and its errors; texi_prove; allocation failures.
 */
#include "ir/ir.h"
#include "tt.h"

#include <stdint.h>

static tex_ctx *ctx;

static void fresh(void)
{
    tex_ctx_free(ctx);
    ctx = tex_ctx_new();
}

static tex_expr *C(int64_t v)
{
    return tex_int(ctx, v);
}

static texi_range range_of(tex_expr *v, int64_t lo, int64_t hi)
{
    return (texi_range){v, texi_int_imm(ctx, v->dtype, lo),
                        texi_int_imm(ctx, v->dtype, hi - lo + 1)};
}

#define CHECK_IVAL(e, n, r, want_lo, want_hi)                                                      \
    do {                                                                                           \
        texi_interval iv_ = texi_const_interval((e), (n), (r));                                    \
        if (iv_.lo_inf || iv_.hi_inf || iv_.lo != (want_lo) || iv_.hi != (want_hi))                \
            TT_FAILF("interval of %s: [%s%lld, %s%lld], expected [%lld, %lld]", #e,                \
                     iv_.lo_inf ? "-inf " : "", (long long)iv_.lo, iv_.hi_inf ? "+inf " : "",      \
                     (long long)iv_.hi, (long long)(want_lo), (long long)(want_hi));               \
    } while (0)

static void test_leaves(void)
{
    fresh();
    tex_expr *x = tex_var(ctx, "x", TEX_I32), *u8 = tex_var(ctx, "u", TEX_U8);
    tex_expr *u32 = tex_var(ctx, "w", TEX_U32), *n = tex_var(ctx, "n", TEX_I32);
    texi_range r = range_of(x, -3, 4);
    CHECK_IVAL(C(5), 0, NULL, 5, 5);
    CHECK_IVAL(C(-5), 0, NULL, -5, -5);
    CHECK_IVAL(x, 1, &r, -3, 4);
    CHECK_IVAL(u8, 0, NULL, 0, 255);
    texi_interval iv = texi_const_interval(x, 0, NULL);
    TT_CHECK(iv.lo_inf && iv.hi_inf);
    iv = texi_const_interval(u32, 0, NULL);
    TT_CHECK(!iv.lo_inf && iv.lo == 0 && iv.hi_inf);
    CHECK_IVAL(tex_lt(x, n), 0, NULL, 0, 1);

    tex_iter *ax = tex_axis(ctx, "i", C(16)), *sx = tex_axis(ctx, "s", n);
    CHECK_IVAL(tex_iv(ax), 0, NULL, 0, 15);
    iv = texi_const_interval(tex_iv(sx), 0, NULL);
    TT_CHECK(!iv.lo_inf && iv.lo == 0 && iv.hi_inf);
    texi_range rn = range_of(n, 1, 10);
    CHECK_IVAL(tex_iv(sx), 1, &rn, 0, 9);
    texi_range over = range_of(tex_iv(ax), 2, 5); /* ranges win over the axis extent */
    CHECK_IVAL(tex_iv(ax), 1, &over, 2, 5);

    /* range bounds that are expressions over other ranged variables */
    tex_expr *i = tex_var(ctx, "i", TEX_I32), *j = tex_var(ctx, "j", TEX_I32);
    texi_range rij[2] = {range_of(i, 0, 3), {j, tex_mul(i, C(4)), C(4)}};
    CHECK_IVAL(j, 2, rij, 0, 15);
    texi_range self = {x, tex_add(x, C(1)), C(4)}; /* cyclic: must terminate */
    iv = texi_const_interval(x, 1, &self);
    TT_CHECK(iv.lo_inf && iv.hi_inf);
}

static void test_operators(void)
{
    fresh();
    tex_expr *x = tex_var(ctx, "x", TEX_I32), *y = tex_var(ctx, "y", TEX_I32);
    texi_range r[2] = {range_of(x, -3, 4), range_of(y, -2, 5)};
    CHECK_IVAL(tex_add(x, y), 2, r, -5, 9);
    CHECK_IVAL(tex_sub(x, y), 2, r, -8, 6);
    CHECK_IVAL(tex_mul(x, y), 2, r, -15, 20);
    CHECK_IVAL(tex_min(x, y), 2, r, -3, 4);
    CHECK_IVAL(tex_max(x, y), 2, r, -2, 5);
    CHECK_IVAL(tex_select(tex_lt(x, y), x, C(100)), 2, r, -3, 100);
    CHECK_IVAL(tex_select(tex_lt(C(0), C(1)), x, C(100)), 2, r, -3, 4);
    texi_range r7 = range_of(x, -7, 7);
    CHECK_IVAL(tex_floordiv(x, C(2)), 1, &r7, -4, 3);
    CHECK_IVAL(tex_floordiv(x, C(-2)), 1, &r7, -4, 3);
    CHECK_IVAL(tex_floormod(x, C(4)), 1, &r7, 0, 3);
    CHECK_IVAL(tex_floormod(x, C(-4)), 1, &r7, -3, 0);
    texi_range r02 = range_of(x, 0, 2), r810 = range_of(x, 8, 10);
    CHECK_IVAL(tex_floormod(x, C(4)), 1, &r02, 0, 2);
    CHECK_IVAL(tex_floormod(x, C(8)), 1, &r810, 0, 2);
    texi_range rd[2] = {range_of(x, 8, 8), range_of(y, 1, 4)};
    CHECK_IVAL(tex_floordiv(x, y), 2, rd, 2, 8);
    texi_range rz[2] = {range_of(x, 10, 10), range_of(y, -2, 3)}; /* 0 excluded */
    CHECK_IVAL(tex_floordiv(x, y), 2, rz, -10, 10);
    CHECK_IVAL(tex_floormod(x, y), 2, rz, -1, 2);
    texi_range rbig = range_of(x, 0, 300), rsmall = range_of(x, 0, 100);
    CHECK_IVAL(tex_cast(TEX_I8, x), 1, &rbig, -128, 127);
    CHECK_IVAL(tex_cast(TEX_I8, x), 1, &rsmall, 0, 100);
    CHECK_IVAL(tex_cast(TEX_BOOL, x), 1, &rsmall, 0, 1);
    CHECK_IVAL(tex_cast(TEX_I64, tex_var(ctx, "b", TEX_U8)), 0, NULL, 0, 255);
}

static void test_overflow(void)
{
    fresh();
    tex_expr *x = tex_var(ctx, "x", TEX_I32), *b = tex_var(ctx, "b", TEX_I8);
    tex_expr *w = tex_var(ctx, "w", TEX_I64), *u = tex_var(ctx, "u", TEX_U8);
    texi_range r = range_of(x, 0, INT64_C(1) << 30);
    texi_interval iv = texi_const_interval(tex_mul(x, C(4)), 1, &r);
    TT_CHECK(iv.lo_inf && iv.hi_inf); /* may wrap: anything */
    CHECK_IVAL(tex_mul(x, C(1)), 1, &r, 0, INT64_C(1) << 30);
    CHECK_IVAL(tex_mul(b, texi_int_imm(ctx, TEX_I8, 2)), 0, NULL, -128, 127);
    CHECK_IVAL(tex_sub(u, texi_int_imm(ctx, TEX_U8, 1)), 0, NULL, 0, 255);
    texi_range ru = range_of(u, 1, 9);
    CHECK_IVAL(tex_sub(u, texi_int_imm(ctx, TEX_U8, 1)), 1, &ru, 0, 8);
    texi_range rw = range_of(w, 0, INT64_C(1) << 62);
    iv = texi_const_interval(tex_mul(w, C(4)), 1, &rw);
    TT_CHECK(!iv.lo_inf && iv.lo == 0 && iv.hi_inf); /* saturates at +inf */
    iv = texi_const_interval(tex_add(tex_mul(w, C(4)), tex_mul(w, C(-4))), 1, &rw);
    TT_CHECK(iv.lo_inf && iv.hi_inf);
    iv = texi_const_interval(texi_int_imm(ctx, TEX_U64, -1), 0, NULL); /* 2^64-1 */
    TT_CHECK(!iv.lo_inf && iv.lo == 0 && iv.hi_inf);
}

/* ------------------------------------------------- exhaustive soundness */

static uint64_t rng_state = 99;

static int64_t rnd_in(int64_t lo, int64_t hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (int64_t)(rng_state % (uint64_t)(hi - lo + 1));
}

static int64_t fdiv_ref(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* x op y, or false when undefined. */
static bool apply(enum texi_expr_kind op, int64_t x, int64_t y, int64_t *out)
{
    switch (op) {
    case TEXI_EXPR_ADD:
        *out = x + y;
        return true;
    case TEXI_EXPR_SUB:
        *out = x - y;
        return true;
    case TEXI_EXPR_MUL:
        *out = x * y;
        return true;
    case TEXI_EXPR_MIN:
        *out = x < y ? x : y;
        return true;
    case TEXI_EXPR_MAX:
        *out = x > y ? x : y;
        return true;
    case TEXI_EXPR_FLOORDIV:
        *out = y ? fdiv_ref(x, y) : 0;
        return y != 0;
    case TEXI_EXPR_FLOORMOD:
        *out = y ? x - fdiv_ref(x, y) * y : 0;
        return y != 0;
    default:
        return false;
    }
}

static void test_exhaustive(void)
{
    static const enum texi_expr_kind ops[] = {TEXI_EXPR_ADD,     TEXI_EXPR_SUB, TEXI_EXPR_MUL,
                                              TEXI_EXPR_MIN,     TEXI_EXPR_MAX, TEXI_EXPR_FLOORDIV,
                                              TEXI_EXPR_FLOORMOD};
    fresh();
    tex_expr *x = tex_var(ctx, "x", TEX_I32), *y = tex_var(ctx, "y", TEX_I32);
    int loose = 0;
    for (int round = 0; round < 2000; round++) {
        enum texi_expr_kind op = ops[round % 7];
        int64_t xl = rnd_in(-20, 20), xh = xl + rnd_in(0, 12);
        int64_t yl = rnd_in(-20, 20), yh = yl + rnd_in(0, 12);
        texi_range r[2] = {range_of(x, xl, xh), range_of(y, yl, yh)};
        texi_interval iv = texi_const_interval(texi_binary(op, x, y), 2, r);
        int64_t lo = INT64_MAX, hi = INT64_MIN, v;
        for (int64_t a = xl; a <= xh; a++) {
            for (int64_t b = yl; b <= yh; b++) {
                if (!apply(op, a, b, &v))
                    continue;
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
        }
        if (lo > hi)
            continue; /* only division by zero */
        if ((!iv.lo_inf && iv.lo > lo) || (!iv.hi_inf && iv.hi < hi)) {
            TT_FAILF(
                "%s over x in [%lld, %lld], y in [%lld, %lld]: [%lld, %lld] misses [%lld, %lld]",
                texi_expr_kind_names[op], (long long)xl, (long long)xh, (long long)yl,
                (long long)yh, (long long)iv.lo, (long long)iv.hi, (long long)lo, (long long)hi);
            break;
        }
        bool exact = op != TEXI_EXPR_FLOORDIV && op != TEXI_EXPR_FLOORMOD;
        if (exact && (iv.lo != lo || iv.hi != hi))
            TT_FAILF("%s: interval not tight", texi_expr_kind_names[op]);
        loose += !exact && (iv.lo_inf || iv.hi_inf);
    }
    TT_EQ_INT(loose, 0);
}

/* ------------------------------------------------------ symbolic bounds */

/* Bounds of e as "lo .. hi" with the test's own minimal printer for
 * constants, variables and + - * / min. */
static void put(texi_sb *sb, const tex_expr *e)
{
    switch (e->kind) {
    case TEXI_EXPR_INT:
        texi_sb_printf(sb, "%lld", (long long)e->u.i);
        return;
    case TEXI_EXPR_VAR:
        texi_sb_puts(sb, e->u.var.name);
        return;
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        texi_sb_puts(sb, e->kind == TEXI_EXPR_MIN ? "min(" : "max(");
        put(sb, e->u.bin.a);
        texi_sb_puts(sb, ", ");
        put(sb, e->u.bin.b);
        texi_sb_putc(sb, ')');
        return;
    default:
        break;
    }
    const char *op = e->kind == TEXI_EXPR_ADD        ? " + "
                     : e->kind == TEXI_EXPR_SUB      ? " - "
                     : e->kind == TEXI_EXPR_MUL      ? "*"
                     : e->kind == TEXI_EXPR_FLOORDIV ? " / "
                                                     : " ? ";
    texi_sb_putc(sb, '(');
    put(sb, e->u.bin.a);
    texi_sb_puts(sb, op);
    put(sb, e->u.bin.b);
    texi_sb_putc(sb, ')');
}

static void check_bounds(tex_expr *e, int n, const texi_range *r, const char *want)
{
    tex_expr *lo = NULL, *hi = NULL;
    int rc = texi_expr_bounds(ctx, e, n, r, &lo, &hi);
    texi_sb sb;
    texi_sb_init(&sb);
    if (rc < 0) {
        texi_sb_printf(&sb, "error %d: %s", rc, tex_errmsg(ctx));
    } else {
        put(&sb, lo);
        texi_sb_puts(&sb, " .. ");
        put(&sb, hi);
    }
    char *got = texi_sb_take(&sb);
    TT_EQ_STR(got, want);
    free(got);
}

static void test_bounds(void)
{
    fresh();
    tex_expr *i = tex_var(ctx, "i", TEX_I32), *j = tex_var(ctx, "j", TEX_I32);
    tex_expr *n = tex_var(ctx, "n", TEX_I32), *k = tex_var(ctx, "k", TEX_I32);
    texi_range r[2] = {{i, C(0), n}, range_of(j, 0, 3)};
    check_bounds(tex_add(tex_mul(i, C(4)), j), 2, r, "0 .. ((n*4) - 1)");
    check_bounds(tex_sub(n, i), 2, r, "1 .. n");
    check_bounds(tex_floormod(i, C(8)), 2, r, "0 .. min((n - 1), 7)");
    check_bounds(tex_add(i, k), 2, r, "k .. ((n + k) - 1)");
    check_bounds(tex_mul(j, k), 2, r, "min((k*3), 0) .. max((k*3), 0)");
    check_bounds(tex_min(tex_add(tex_mul(j, C(8)), C(3)), n), 2, r, "min(n, 3) .. min(n, 27)");

    texi_range rc[2] = {range_of(i, 0, 15), range_of(j, 0, 7)};
    check_bounds(tex_add(tex_mul(i, C(8)), j), 2, rc, "0 .. 127");
    check_bounds(tex_sub(tex_mul(j, C(-2)), i), 2, rc, "-29 .. 0");
    check_bounds(tex_floordiv(tex_add(tex_mul(i, C(8)), j), C(8)), 2, rc, "0 .. 15");
    check_bounds(tex_add(tex_mul(k, C(8)), j), 2, rc, "(k*8) .. ((k*8) + 7)");

    /* nested ranges: j in [i*4, i*4 + 4), i in [0, 4) */
    texi_range rn[2] = {range_of(i, 0, 3), {j, tex_mul(i, C(4)), C(4)}};
    check_bounds(j, 2, rn, "0 .. 15");
    texi_range rs[2] = {{i, C(0), n}, {j, tex_mul(i, C(4)), C(4)}};
    check_bounds(j, 2, rs, "0 .. ((n*4) - 1)");

    /* a variable without a range is its own bound, unbounded ones fail */
    check_bounds(k, 2, r, "k .. k");
    check_bounds(tex_floordiv(i, k), 2, r,
                 "error -1: texi_expr_bounds: the lower bound of an index expression is "
                 "unbounded over the given ranges");
    tex_clear_error(ctx);
    tex_expr *lo, *hi;
    TT_EQ_INT(texi_expr_bounds(ctx, tex_const(ctx, TEX_F32, 1), 0, NULL, &lo, &hi), TEX_ETYPE);
    tex_clear_error(ctx);
    TT_EQ_INT(texi_expr_bounds(ctx, NULL, 0, NULL, &lo, &hi), TEX_EMISUSE);
    tex_clear_error(ctx);
}

static void test_prove(void)
{
    fresh();
    tex_expr *i = tex_var(ctx, "i", TEX_I32), *j = tex_var(ctx, "j", TEX_I32);
    tex_expr *n = tex_var(ctx, "n", TEX_I32);
    texi_range r[2] = {range_of(i, 0, 15), range_of(j, 0, 7)};
    TT_CHECK(texi_prove(tex_lt(i, C(16)), 2, r));
    TT_CHECK(!texi_prove(tex_lt(i, C(15)), 2, r));
    TT_CHECK(!texi_prove(tex_ge(i, C(15)), 2, r)); /* undecided is not proved */
    TT_CHECK(texi_prove(tex_lt(tex_add(tex_mul(i, C(8)), j), C(128)), 2, r));
    TT_CHECK(texi_prove(tex_eq(tex_floordiv(tex_add(tex_mul(i, C(8)), j), C(8)), i), 2, r));
    TT_CHECK(texi_prove(tex_and(tex_ge(j, C(0)), tex_le(j, C(7))), 2, r));
    TT_CHECK(!texi_prove(tex_lt(i, n), 2, r));
    texi_range rs = {i, C(0), n};
    TT_CHECK(texi_prove(tex_gt(tex_sub(n, i), C(0)), 1, &rs));
    TT_CHECK(
        texi_prove(tex_lt(tex_floordiv(i, C(4)), tex_floordiv(tex_add(n, C(3)), C(4))), 1, &rs) ||
        true); /* not required; must not crash */
    TT_CHECK(texi_prove(tex_ge(tex_floormod(n, C(8)), C(0)), 0, NULL));
}

/* A fused loop f over [0, s * 12) of a symbolic s: f / s is the outer
 * axis' index, in [0, 11], f % s the inner one's, below s; neither holds
 * when f's range is not a multiple of s starting at 0. */
static void test_fused_index(void)
{
    fresh();
    tex_expr *f = tex_var(ctx, "f", TEX_I64), *s = tex_var(ctx, "s", TEX_I64);
    tex_expr *c12 = texi_int_imm(ctx, TEX_I64, 12), *zero = texi_int_imm(ctx, TEX_I64, 0);
    texi_range r = {f, zero, tex_mul(s, c12)}, rk = {f, zero, tex_mul(c12, s)};
    tex_expr *q = tex_floordiv(f, s), *m = tex_floormod(f, s);
    CHECK_IVAL(q, 1, &r, 0, 11);
    CHECK_IVAL(q, 1, &rk, 0, 11);
    CHECK_IVAL(tex_cast(TEX_I32, q), 1, &r, 0, 11);
    texi_interval iv = texi_const_interval(m, 1, &r);
    TT_CHECK(!iv.lo_inf && iv.lo == 0);
    TT_CHECK(texi_prove(tex_lt(m, s), 1, &r));
    TT_CHECK(texi_prove(tex_lt(q, c12), 1, &r));
    /* the region of one outer index: [q, q + 1) cut to [0, 12), extent 1 */
    tex_expr *ext =
        tex_sub(tex_min(tex_add(q, texi_int_imm(ctx, TEX_I64, 1)), c12), tex_max(q, zero));
    CHECK_IVAL(texi_simplify(ext, 1, &r), 1, &r, 1, 1);

    texi_range off = {f, texi_int_imm(ctx, TEX_I64, 1), tex_mul(s, c12)};
    texi_range more = {f, zero, tex_add(tex_mul(s, c12), texi_int_imm(ctx, TEX_I64, 1))};
    TT_CHECK(texi_const_interval(q, 1, &off).hi_inf);
    TT_CHECK(texi_const_interval(q, 1, &more).hi_inf);
    TT_CHECK(!texi_prove(tex_lt(m, s), 1, &more));
    tex_expr *t = tex_var(ctx, "t", TEX_I64);
    TT_CHECK(texi_const_interval(tex_floordiv(f, t), 1, &r).hi_inf);
}

/* Sizes from shapes (texi_range: an extent of the type's maximum means no
 * upper end): never negative, else free in symbolic bounds. A fused loop
 * over [0, s * b) of two sizes: f / s < b, f % s < s; one over
 * [0, h*64 + 128), (h + 2) * 64 as the simplifier writes it: f / (h + 2)
 * in [0, 63]. A size's range is no constant end for proofs: f / (h + 2) < 3
 * must not be proved (it was, through the range's huge end). */
static void test_size_ranges(void)
{
    fresh();
    tex_expr *f = tex_var(ctx, "f", TEX_I64), *s = tex_var(ctx, "s", TEX_I64);
    tex_expr *b = tex_var(ctx, "b", TEX_I64), *h = tex_var(ctx, "h", TEX_I64);
    tex_expr *zero = texi_int_imm(ctx, TEX_I64, 0), *max = texi_int_imm(ctx, TEX_I64, INT64_MAX);
    texi_range r[3] = {{s, zero, max}, {b, zero, max}, {f, zero, tex_mul(s, b)}};
    texi_interval iv = texi_const_interval(s, 3, r);
    TT_CHECK(!iv.lo_inf && iv.lo == 0 && iv.hi_inf);
    TT_CHECK(texi_prove(tex_lt(tex_floordiv(f, s), b), 3, r));
    TT_CHECK(texi_prove(tex_lt(tex_floormod(f, s), s), 3, r));
    TT_CHECK(
        !texi_prove(tex_lt(tex_floordiv(f, s), tex_sub(b, texi_int_imm(ctx, TEX_I64, 1))), 3, r));
    /* a fused extent of free sizes, signs unknown: no claim */
    texi_range free_f = {f, zero, tex_mul(s, b)};
    TT_CHECK(!texi_prove(tex_lt(tex_floordiv(f, s), b), 1, &free_f));

    tex_expr *h2 = tex_add(h, texi_int_imm(ctx, TEX_I64, 2)), *c64 = texi_int_imm(ctx, TEX_I64, 64);
    texi_range rh[2] = {{h, zero, max}, {f, zero, texi_simplify(tex_mul(h2, c64), 0, NULL)}};
    tex_expr *q = tex_floordiv(f, h2);
    CHECK_IVAL(q, 2, rh, 0, 63);
    TT_CHECK(texi_prove(tex_lt(q, c64), 2, rh));
    TT_CHECK(!texi_prove(tex_lt(q, texi_int_imm(ctx, TEX_I64, 3)), 2, rh));
    /* (h + 2) * 64 + 1 is no multiple of h + 2 */
    rh[1].extent = texi_simplify(tex_add(tex_mul(h2, c64), texi_int_imm(ctx, TEX_I64, 1)), 0, NULL);
    TT_CHECK(texi_const_interval(q, 2, rh).hi_inf);
}

/* ------------------------------------------------------ allocation failures */

static int fail_after;

static void *failing_alloc(void *user, size_t size)
{
    (void)user;
    if (fail_after-- <= 0)
        return NULL;
    return malloc(size);
}

static void plain_free(void *user, void *p)
{
    (void)user;
    free(p);
}

static void test_out_of_memory(void)
{
    tex_allocator al = {sizeof al, failing_alloc, plain_free, NULL};
    bool succeeded = false;
    int failures = 0;
    for (int limit = 0; limit < 50 && !succeeded; limit++) {
        fail_after = 1000;
        tex_ctx *c = tex_ctx_new_ex(&al);
        tex_expr *i = tex_var(c, "i", TEX_I32), *j = tex_var(c, "j", TEX_I32);
        tex_expr *n = tex_var(c, "n", TEX_I32);
        tex_expr *e = tex_add(tex_floordiv(tex_add(tex_mul(i, tex_int(c, 8)), j), tex_int(c, 8)),
                              tex_min(i, n));
        texi_range r[2] = {{i, tex_int(c, 0), n}, {j, tex_int(c, 0), tex_int(c, 8)}};
        TT_CHECK(e != NULL);
        fail_after = limit;
        tex_expr *s = texi_simplify(e, 2, r), *lo = NULL, *hi = NULL;
        int rc = texi_expr_bounds(c, e, 2, r, &lo, &hi);
        if (s && rc == 0) {
            succeeded = true;
        } else {
            TT_EQ_INT(tex_errcode(c), TEX_ENOMEM);
            TT_CHECK(rc == 0 || rc == TEX_ENOMEM);
            failures++;
        }
        tex_ctx_free(c);
    }
    TT_CHECK(succeeded && failures > 0);
}

int main(void)
{
    TT_RUN(test_leaves);
    TT_RUN(test_operators);
    TT_RUN(test_overflow);
    TT_RUN(test_exhaustive);
    TT_RUN(test_bounds);
    TT_RUN(test_prove);
    TT_RUN(test_fused_index);
    TT_RUN(test_size_ranges);
    TT_RUN(test_out_of_memory);
    tex_ctx_free(ctx);
    return tt_finish();
}
