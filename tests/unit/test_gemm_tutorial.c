/*
 * TVM's "How to optimize GEMM on CPU" tutorial, step by step, on tex:
 *   default, blocking (tile 32x32, split k by 4, reorder), vectorization,
 *   loop permutation, array packing (packedB[N/bn, K, bn] read by C), write
 *   cache (cache_write C, compute_at under C's tile), parallel.
 * Each step is lowered, interpreted on M = N = K = 64 and on 67 x 45 x 29
 * (no factor divides) and compared with the reference evaluator. For the
 * divisible size the final function must read like the hand-written loop
 * nest: no IF anywhere (loop partitioning and simplification remove every
 * guard) and no loop of extent 1.
 */
#include "tt.h"
#include "support/ops.h"

enum { BN = 32, KF = 4 };

enum gemm_step { DEFAULT, BLOCKING, VECTORIZE, PERMUTE, PACKING, WRITE_CACHE, PARALLEL };

/* Also the lowered functions' names, so C identifiers. */
static const char *const step_names[] = {
    "gemm_default",       "gemm_blocking",    "gemm_vectorization", "gemm_loop_permutation",
    "gemm_array_packing", "gemm_write_cache", "gemm_parallel"};

typedef struct {
    ops_wl w;
    tex_tensor *packed; /* packedB, or NULL */
    ops_log log;
    int failed_steps; /* primitives that returned an error */
} gemm;

static void expect_ok(gemm *g, int rc, const char *what)
{
    ops_logf(&g->log, "    %s -> %d\n", what, rc);
    if (rc != 0) {
        g->failed_steps++;
        TT_FAILF("%s: %s failed (%d): %s", g->w.name, what, rc, tex_errmsg(g->w.ctx));
        tex_clear_error(g->w.ctx);
    }
}

/* packedB[bigN, k, littleN] = B[k, bigN*bn + littleN] (0 past N), and
 * C[m, n] = sum_k A[m, k] * packedB[n / bn, k, n % bn]. */
static void build_packed(gemm *g, int64_t m, int64_t n, int64_t k)
{
    tex_ctx *c = g->w.ctx;
    tex_expr *M = tex_int(c, m), *N = tex_int(c, n), *K = tex_int(c, k), *bn = tex_int(c, BN);
    tex_tensor *A = ops_input(&g->w, "A", 2, (tex_expr *[]){M, K});
    tex_tensor *B = ops_input(&g->w, "B", 2, (tex_expr *[]){K, N});
    tex_iter *bigN = tex_axis(c, "bigN", tex_int(c, (n + BN - 1) / BN));
    tex_iter *pk = tex_axis(c, "k", K), *littleN = tex_axis(c, "littleN", bn);
    tex_expr *col = tex_add(tex_mul(tex_iv(bigN), bn), tex_iv(littleN));
    tex_expr *val = TEX_AT(B, tex_iv(pk), col);
    if (n % BN) /* the last tile passes N: zeros, read at a clamped column */
        val = tex_select(tex_lt(col, N), TEX_AT(B, tex_iv(pk), tex_min(col, tex_int(c, n - 1))),
                         tex_const(c, TEX_F32, 0));
    g->packed =
        ops_mid(&g->w, tex_compute(c, "packedB", 3, (tex_iter *[]){bigN, pk, littleN}, val));
    tex_iter *i = tex_axis(c, "m", M), *j = tex_axis(c, "n", N), *r = tex_reduce_axis(c, "k", K);
    tex_expr *pb =
        TEX_AT(g->packed, tex_floordiv(tex_iv(j), bn), tex_iv(r), tex_floormod(tex_iv(j), bn));
    g->w.out = tex_compute(c, "C", 2, (tex_iter *[]){i, j},
                           tex_sum(tex_mul(TEX_AT(A, tex_iv(i), tex_iv(r)), pb), 1, &r));
}

/* tile(C.m, C.n, bn, bn); split k by KF; returns mo, no, mi, ni, ko, ki. */
static void block(gemm *g, tex_stage *st, tex_iter *it[6])
{
    tex_ctx *c = g->w.ctx;
    expect_ok(g,
              tex_tile(st, tex_op_axis(st, 0), tex_op_axis(st, 1), tex_int(c, BN), tex_int(c, BN),
                       &it[0], &it[1], &it[2], &it[3]),
              "tile(C, m, n, 32, 32)");
    expect_ok(g, tex_split(st, tex_op_reduce_axis(st, 0), tex_int(c, KF), &it[4], &it[5]),
              "split(C, k, 4)");
}

static void reorder6(gemm *g, tex_stage *st, tex_iter *a, tex_iter *b, tex_iter *c, tex_iter *d,
                     tex_iter *e, tex_iter *f, const char *what)
{
    expect_ok(g, tex_reorder(st, 6, (tex_iter *[]){a, b, c, d, e, f}), what);
}

static void schedule_packed_b(gemm *g, tex_schedule *s)
{
    tex_stage *pb = tex_stage_of(s, g->packed);
    expect_ok(g, tex_vectorize(pb, tex_op_axis(pb, 2)), "vectorize(packedB, littleN)");
    expect_ok(g, tex_parallel(pb, tex_op_axis(pb, 0)), "parallel(packedB, bigN)");
}

/* Steps up to array packing (on the packed compute from PACKING on). */
static void schedule_blocked(gemm *g, tex_schedule *s, enum gemm_step step)
{
    tex_stage *st = tex_stage_of(s, g->w.out);
    tex_iter *it[6];
    block(g, st, it);
    if (step == BLOCKING || step == VECTORIZE)
        reorder6(g, st, it[0], it[1], it[4], it[5], it[2], it[3],
                 "reorder(mo, no, ko, ki, mi, ni)");
    else
        reorder6(g, st, it[0], it[1], it[4], it[2], it[5], it[3],
                 "reorder(mo, no, ko, mi, ki, ni)");
    if (step >= VECTORIZE)
        expect_ok(g, tex_vectorize(st, it[3]), "vectorize(C, ni)");
    if (step == PACKING)
        schedule_packed_b(g, s);
}

/* Write cache (and parallel): CC = cache_write(C); CC at C's no. */
static void schedule_cached(gemm *g, tex_schedule *s, enum gemm_step step)
{
    tex_ctx *c = g->w.ctx;
    tex_tensor *CC = tex_cache_write(s, g->w.out, TEX_SCOPE_GLOBAL);
    expect_ok(g, CC ? 0 : tex_errcode(c), "CC = cache_write(C, global)");
    if (!CC)
        return;
    tex_stage *st = tex_stage_of(s, g->w.out), *cc = tex_stage_of(s, CC);
    tex_iter *mo, *no, *mi, *ni, *ko, *ki;
    expect_ok(g,
              tex_tile(st, tex_op_axis(st, 0), tex_op_axis(st, 1), tex_int(c, BN), tex_int(c, BN),
                       &mo, &no, &mi, &ni),
              "tile(C, m, n, 32, 32)");
    expect_ok(g, tex_compute_at(cc, st, no), "compute_at(CC, C, no)");
    tex_iter *mc = tex_op_axis(cc, 0), *nc = tex_op_axis(cc, 1);
    expect_ok(g, tex_split(cc, tex_op_reduce_axis(cc, 0), tex_int(c, KF), &ko, &ki),
              "split(CC, k, 4)");
    expect_ok(g, tex_reorder(cc, 4, (tex_iter *[]){ko, mc, ki, nc}), "reorder(CC: ko, mc, ki, nc)");
    expect_ok(g, tex_vectorize(cc, nc), "vectorize(CC, nc)");
    expect_ok(g, tex_unroll(cc, ki), "unroll(CC, ki)");
    schedule_packed_b(g, s);
    if (step == PARALLEL)
        expect_ok(g, tex_parallel(st, mo), "parallel(C, mo)");
}

/* ------------------------------------------------------- AST inspection */

/* Number of IF statements and of FOR loops with constant extent 1 in s. */
static void count_nodes(const tex_stmt *s, int *n_if, int *n_unit)
{
    int64_t e;
    if (!s)
        return;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        if (texi_expr_is_int_const(s->u.loop.extent, &e) && e == 1)
            (*n_unit)++;
        count_nodes(s->u.loop.body, n_if, n_unit);
        break;
    case TEXI_STMT_IF:
        (*n_if)++;
        count_nodes(s->u.ifs.then_s, n_if, n_unit);
        count_nodes(s->u.ifs.else_s, n_if, n_unit);
        break;
    case TEXI_STMT_REALIZE:
        count_nodes(s->u.realize.body, n_if, n_unit);
        break;
    case TEXI_STMT_ALLOCATE:
        count_nodes(s->u.alloc.body, n_if, n_unit);
        break;
    case TEXI_STMT_LET:
        count_nodes(s->u.let.body, n_if, n_unit);
        break;
    case TEXI_STMT_ATTR:
        count_nodes(s->u.attr.body, n_if, n_unit);
        break;
    case TEXI_STMT_SEQ:
        for (int k = 0; k < s->u.seq.n; k++)
            count_nodes(s->u.seq.items[k], n_if, n_unit);
        break;
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_STORE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
}

static void check_clean(gemm *g, tex_schedule *s)
{
    char why[1024];
    tex_func *f = ops_lower(&g->w, s, why, sizeof why);
    if (!f)
        return; /* reported by ops_check */
    int n_if = 0, n_unit = 0;
    count_nodes(f->body, &n_if, &n_unit);
    if (n_if || n_unit) {
        char *txt = tex_func_str(f);
        printf("  final GEMM function:\n%s\n", txt ? txt : "(no text)");
        free(txt);
    }
    TT_EQ_INT(n_if, 0);
    TT_EQ_INT(n_unit, 0);
}

static void run_step(enum gemm_step step, int64_t m, int64_t n, int64_t k, bool final_check)
{
    gemm g;
    memset(&g, 0, sizeof g);
    ops_init(&g.w, tex_ctx_new(), step_names[step]);
    if (step >= PACKING)
        build_packed(&g, m, n, k);
    else
        ops_matmul(&g.w, m, n, k, false);
    tex_schedule *s = tex_schedule_new(g.w.ctx, 1, &g.w.out);
    ops_logf(&g.log, "  %s, %lldx%lldx%lld:\n", step_names[step], (long long)m, (long long)n,
             (long long)k);
    if (step >= WRITE_CACHE)
        schedule_cached(&g, s, step);
    else if (step != DEFAULT)
        schedule_blocked(&g, s, step);
    TT_CHECK(ops_check(&g.w, s, (uint64_t)step, &g.log, true) == 0);
    if (final_check)
        check_clean(&g, s);
    tex_ctx_free(g.w.ctx);
}

static void run_all_sizes(enum gemm_step step)
{
    run_step(step, 64, 64, 64, step == PARALLEL);
    run_step(step, 67, 45, 29, false);
}

static void test_default(void)
{
    run_all_sizes(DEFAULT);
}

static void test_blocking(void)
{
    run_all_sizes(BLOCKING);
}

static void test_vectorization(void)
{
    run_all_sizes(VECTORIZE);
}

static void test_loop_permutation(void)
{
    run_all_sizes(PERMUTE);
}

static void test_array_packing(void)
{
    run_all_sizes(PACKING);
}

static void test_write_cache(void)
{
    run_all_sizes(WRITE_CACHE);
}

static void test_parallel(void)
{
    run_all_sizes(PARALLEL);
}

int main(void)
{
    TT_RUN(test_default);
    TT_RUN(test_blocking);
    TT_RUN(test_vectorization);
    TT_RUN(test_loop_permutation);
    TT_RUN(test_array_packing);
    TT_RUN(test_write_cache);
    TT_RUN(test_parallel);
    return tt_finish();
}
