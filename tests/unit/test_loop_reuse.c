/*
 * Pass loop_reuse (src/lower/loop_reuse.c): a costly value that a later
 * loop nest recomputes is stored by the earlier nest and read back.
 *
 * Hand-built sequences of two nests run through the pass and are checked
 * in print: the value is reused when the nests have the same bounds, the
 * producer is elementwise in its innermost loop, the guards agree and
 * nothing in between writes what the value reads; it is not otherwise
 * (a store in between, other bounds, a producer's guard the consumer does
 * not have, guards that read what the producer writes, a reduction into
 * one element, a buffer over 16 KiB, a cheap value). The GPU softmax of tests/support/gpu_cases.h
 * (the sum of exp and the output recompute exp(X - max)) is checked after the whole CPU tail and
 * run through the JIT against the oracle at odd sizes (1-sized rows, prime row lengths, rows
 * shorter and longer than the 128 threads, a row too long to reuse, symbolic sizes) on 1 and 2
 * threads.
 */
#include "tt.h"

#include "lower/lower.h"
#include "support/gpu_cases.h"
#include "support/tmpdir.h"

#include <stdlib.h>
#include <unistd.h>

static char cache_dir[] = "/tmp/tex_test_loop_reuse.XXXXXX";

/* The buffers and knobs of a hand-built producer/consumer pair. */
typedef struct {
    tex_ctx *ctx;
    texi_buffer *X, *S, *Y;
    int64_t inner_b;       /* the consumer's inner extent (the producer's: 8) */
    int64_t outer;         /* both outer extents */
    bool reduction;        /* the producer stores S[0], not S[i] */
    bool guard_a, guard_b; /* `o*8 + i < 29` around the store */
    bool store_between;    /* X[0] = 1 between the nests */
    bool guard_on_s;       /* the guards read S[i] (which the producer writes) */
    bool cheap;            /* X*X instead of exp(X) */
} pair_spec;

static tex_expr *i32(tex_ctx *ctx, int64_t v)
{
    return texi_int_imm(ctx, TEX_I32, v);
}

/* o*8 + i (the producer) or i + o*8 (the consumer: the same once simplified). */
static tex_expr *flat(tex_ctx *ctx, tex_expr *o, tex_expr *i, bool swapped)
{
    tex_expr *row = texi_binary(TEXI_EXPR_MUL, o, i32(ctx, 8));
    return swapped ? texi_binary(TEXI_EXPR_ADD, i, row) : texi_binary(TEXI_EXPR_ADD, row, i);
}

/* exp(X[at] - 1), or X[at]*X[at] when cheap. */
static tex_expr *value_at(const pair_spec *p, tex_expr *at)
{
    tex_expr *x = texi_load_new(p->X, at);
    if (p->cheap)
        return texi_binary(TEXI_EXPR_MUL, x, x);
    tex_expr *arg = texi_binary(TEXI_EXPR_SUB, x, texi_float_imm(p->ctx, TEX_F32, 1.0));
    return texi_call_new(TEXI_MATH_EXP, TEX_F32, 1, &arg);
}

/* for (o, 0, outer) for (i, 0, inner) vectorized [if (o*8 + i < 29)] store */
static tex_stmt *nest2(const pair_spec *p, tex_expr *o, tex_expr *i, int64_t inner, bool guard,
                       tex_stmt *store)
{
    tex_ctx *ctx = p->ctx;
    tex_expr *cond =
        p->guard_on_s
            ? texi_binary(TEXI_EXPR_LT, texi_load_new(p->S, i), texi_float_imm(ctx, TEX_F32, 29.0))
            : texi_binary(TEXI_EXPR_LT, flat(ctx, o, i, false), i32(ctx, 29));
    tex_stmt *body = guard ? texi_if_new(ctx, cond, store, NULL) : store;
    body = texi_for_new(ctx, i, i32(ctx, 0), i32(ctx, inner), TEXI_FOR_VECTORIZED, -1, body);
    return texi_for_new(ctx, o, i32(ctx, 0), i32(ctx, p->outer), TEXI_FOR_SERIAL, -1, body);
}

/* The pair of p run through loop_reuse, printed (malloc'ed). */
static char *run_pair(pair_spec *p)
{
    tex_ctx *ctx = p->ctx = tex_ctx_new();
    tex_expr *n = texi_int_imm(ctx, TEX_I64, p->outer * 8 + 64);
    p->X = texi_buffer_new(ctx, "X", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    p->Y = texi_buffer_new(ctx, "Y", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    p->S = texi_buffer_new(ctx, "S", TEX_F32, TEXI_SCOPE_LOCAL, 1, &n);
    tex_expr *o = texi_var_new(ctx, "o", TEX_I32), *i = texi_var_new(ctx, "i", TEX_I32);
    tex_expr *c = texi_var_new(ctx, "c", TEX_I32), *d = texi_var_new(ctx, "d", TEX_I32);
    tex_expr *s_at = p->reduction ? i32(ctx, 0) : i;
    tex_stmt *sa = texi_store_new(
        ctx, p->S, s_at,
        texi_binary(TEXI_EXPR_ADD, texi_load_new(p->S, s_at), value_at(p, flat(ctx, o, i, false))));
    tex_stmt *sb = texi_store_new(ctx, p->Y, flat(ctx, c, d, false),
                                  texi_binary(TEXI_EXPR_MUL, value_at(p, flat(ctx, c, d, true)),
                                              texi_float_imm(ctx, TEX_F32, 2.0)));
    tex_stmt *items[3] = {nest2(p, o, i, 8, p->guard_a, sa),
                          texi_store_new(ctx, p->X, i32(ctx, 0), texi_float_imm(ctx, TEX_F32, 1)),
                          nest2(p, c, d, p->inner_b, p->guard_b, sb)};
    if (!p->store_between)
        items[1] = items[2];
    tex_stmt *in = texi_allocate_new(ctx, p->S, texi_seq_new(ctx, p->store_between ? 3 : 2, items));
    tex_stmt *out = NULL;
    texi_lower lw = {.ctx = ctx};
    TT_CHECK(in && texi_pass_loop_reuse(&lw, in, &out) == 0);
    char *r = out ? texi_stmt_str(out) : NULL;
    tex_ctx_free(ctx);
    return r;
}

/* Whether p's value was reused (the checks of the rewrite's form aside). */
static bool reused(pair_spec p)
{
    char *ast = run_pair(&p);
    TT_CHECK(ast != NULL);
    bool r = ast && strstr(ast, "exp.val");
    free(ast);
    return r;
}

static pair_spec plain(void)
{
    return (pair_spec){.inner_b = 8, .outer = 4};
}

/* The producer stores exp in a LET and the buffer, the consumer loads it;
 * the buffer spans both nests, one element per point. */
static void test_reused(void)
{
    pair_spec p = plain();
    char *ast = run_pair(&p);
    TT_CHECK(ast && strstr(ast, "allocate exp.val: f32[32i64] local {\n    for (o, 0, 4) {"));
    TT_CHECK(ast && strstr(ast, "let exp.v = exp(X[o*8 + i] - 1.0f)\n"));
    TT_CHECK(ast && strstr(ast, "exp.val[o*8 + i] = exp.v\n"));
    TT_CHECK(ast && strstr(ast, "S[i] = S[i] + exp.v\n"));
    TT_CHECK(ast && strstr(ast, "Y[c*8 + d] = exp.val[c*8 + d]*2.0f\n"));
    if (ast && !strstr(ast, "exp.val[c*8 + d]"))
        TT_FAILF("%s", ast);
    free(ast);
}

/* Guards: equal ones, or only the consumer's, keep the reuse (every
 * element read was written); the producer's alone does not. */
static void test_guards(void)
{
    pair_spec p = plain();
    p.guard_a = p.guard_b = true;
    TT_CHECK(reused(p));
    char *ast = run_pair(&p);
    TT_CHECK(ast && strstr(ast, "if (o*8 + i < 29) {\n          let exp.v = exp("));
    free(ast);
    p.guard_a = false;
    TT_CHECK(reused(p));
    p.guard_a = true;
    p.guard_b = false;
    TT_CHECK(!reused(p));
    p.guard_b = p.guard_on_s = true; /* the guards' value changes between the nests */
    TT_CHECK(!reused(p));
}

/* What blocks the reuse. */
static void test_not_reused(void)
{
    pair_spec p = plain();
    p.store_between = true; /* X changes between the nests */
    TT_CHECK(!reused(p));
    p = plain();
    p.inner_b = 7; /* other bounds */
    TT_CHECK(!reused(p));
    p = plain();
    p.reduction = true; /* S[0] += ...: stays a vectorized reduction */
    TT_CHECK(!reused(p));
    p = plain();
    p.outer = 513; /* 513 * 8 f32 > 16 KiB */
    TT_CHECK(!reused(p));
    p.outer = 512; /* exactly 16 KiB */
    TT_CHECK(reused(p));
    p = plain();
    p.cheap = true; /* no costly call: recomputing is cheaper than a load */
    char *ast = run_pair(&p);
    TT_CHECK(ast && !strstr(ast, ".val") && !strstr(ast, "let"));
    free(ast);
}

/* Whether a line of ast stores Y and calls exp. */
static bool output_calls_exp(const char *ast)
{
    for (const char *line = ast; line; line = strchr(line + 1, '\n')) {
        const char *y = line + strspn(line, "\n ");
        const char *end = strchr(y, '\n');
        const char *call = strstr(y, "exp(");
        if (strncmp(y, "Y[", 2) == 0 && call && (!end || call < end))
            return true;
    }
    return false;
}

/* The GPU softmax after the CPU tail: the output reads back the exp the
 * sum's nest computed; with symbolic sizes (no constant bounds) it
 * computes exp again as before. */
static void test_softmax_tail(void)
{
    for (int sym = 0; sym < 2; sym++) {
        tex_ctx *ctx = tex_ctx_new();
        int64_t sizes[GC_MAX_SIZES];
        gc_default_sizes(GC_SOFTMAX, GC_SMALL, sizes);
        gc_case c;
        tex_func tail;
        TT_CHECK(gc_build(ctx, GC_SOFTMAX, sizes, sym, &c) == 0 && c.f);
        TT_CHECK(c.f && texi_lower_tail(c.f, TEXI_TAIL_CPU, false, &tail, NULL) == 0);
        char *ast = c.f ? texi_stmt_str(tail.body) : NULL;
        TT_CHECK(ast && (strstr(ast, "allocate exp.val") != NULL) == !sym);
        TT_CHECK(ast && (strstr(ast, "let exp.v = exp(X[") != NULL) == !sym);
        if (ast && output_calls_exp(ast) != sym)
            TT_FAILF("symbolic %d: the output computes exp %s:\n%s", sym, sym ? "once" : "again",
                     ast);
        free(ast);
        tex_ctx_free(ctx);
    }
}

/* gc_runner: one call of the kernel ud. */
static int call_kernel(void *ud, int n, const tex_value vals[], char *err, size_t en)
{
    tex_kernel *k = ud;
    if (tex_kernel_call(k, n, vals) == 0)
        return 0;
    snprintf(err, en, "call: %s", tex_kernel_errmsg(k));
    return -1;
}

/* The GPU softmax at rows x cols, constant and symbolic, on 1 and 2
 * threads against the oracle; `reuse`: the constant build's C holds the
 * reused buffer. */
static void softmax_at(int64_t rows, int64_t cols, bool reuse)
{
    for (int sym = 0; sym < 2; sym++) {
        tex_ctx *ctx = tex_ctx_new();
        gc_case c;
        TT_CHECK(gc_build(ctx, GC_SOFTMAX, (const int64_t[GC_MAX_SIZES]){rows, cols}, sym, &c) ==
                     0 &&
                 c.f);
        for (int threads = 1; c.f && threads <= 2; threads++) {
            tex_kernel *k = tex_build(c.f, threads == 1 ? "cpu" : "cpu -threads=2");
            const char *src = k ? tex_kernel_source(k) : NULL;
            TT_CHECK(src != NULL);
            if (src && (strstr(src, "exp_val") != NULL) != (reuse && !sym))
                TT_FAILF("%lld x %lld (symbolic %d): reuse %d expected", (long long)rows,
                         (long long)cols, sym, reuse && !sym);
            if (k && gc_run_compare(&c, "cpu", call_kernel, k, 11) != 0)
                TT_FAILF("%s", c.why);
            tex_kernel_free(k);
        }
        tex_ctx_free(ctx);
    }
}

static void test_softmax_jit(void)
{
    if (!tex_target_available("cpu")) {
        TT_SKIP("no C compiler for the \"cpu\" target");
        return;
    }
    softmax_at(1, 1, false); /* one thread's row: the sum's body is not a nest of stores */
    softmax_at(1, 200, true);
    softmax_at(3, 131, true);
    softmax_at(5, 257, true);
    softmax_at(2, 128, true);
    softmax_at(7, 1000, true);
    softmax_at(2, 4097, false); /* 33 * 128 f32 > 16 KiB */
}

int main(void)
{
    if (!tt_private_cache(cache_dir, "test_loop_reuse"))
        return 1;
    TT_RUN(test_reused);
    TT_RUN(test_guards);
    TT_RUN(test_not_reused);
    TT_RUN(test_softmax_tail);
    TT_RUN(test_softmax_jit);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
