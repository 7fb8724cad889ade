/*
 * Pass jam (src/lower/jam.c): unroll-and-jam of a serial loop whose
 * iterations are independent chains of updates.
 *
 * Pass jam_outer (the same file): unroll-and-jam of a serial loop into the
 * serial loop that is its body, when each of that loop's iterations
 * updates elements of its own.
 *
 * Pass jam on hand-built loops: rows of an accumulator tile updated twice
 * per iteration are jammed (J copies of each statement, and a loop for the
 * rest when J does not divide the extent), J following the register
 * budget the pass states; a body without a chain, iterations whose windows
 * overlap, an index that does not move with the loop, a body with an IF
 * and a loop of symbolic extent are left alone. Pass jam_outer on hand-built
 * nests: J copies of the inner body, copy after copy, J following its
 * register budget, the rest of the outer loop after them; a stored index
 * that moves with the outer loop, a triangular nest, an IF and overlapping
 * windows are left alone. Compiled kernels: the GEMM
 * tutorial's write-cache schedule (a cache_write tile computed at C's
 * tile, k split and unrolled, the tile's columns vectorized), with tile
 * rows 1 to 9 (jammed groups and the rest), global and local caches and a
 * size no tile divides, JIT-compiled against the oracle.
 */
#include "tt.h"
#include "lower/lower.h"
#include "support/ops.h"
#include "support/schedgen.h"
#include "support/tmpdir.h"
#include "util/host.h"

#include <unistd.h>

static char cache_dir[] = "/tmp/tex-test-jam-XXXXXX";

/* ------------------------------------------------------------ hand-built */

static tex_ctx *c;
static texi_buffer *X, *Y;
static tex_expr *v;

static tex_expr *I32(int64_t k)
{
    return tex_int(c, k);
}

/* X[row*v + at .. + lanes) = X[same] + Y[v] * k: one update of a row. */
static tex_stmt *update(int64_t row, int64_t at, int lanes, double k)
{
    tex_expr *first = texi_binary(TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, v, I32(row)), I32(at));
    tex_expr *index = lanes > 1 ? texi_ramp_new(first, I32(1), lanes) : first;
    tex_expr *y = texi_binary(TEXI_EXPR_MUL, texi_load_new(Y, v), tex_const(c, TEX_F32, k));
    if (lanes > 1)
        y = texi_broadcast_new(y, lanes);
    return texi_store_new(c, X, index, texi_binary(TEXI_EXPR_ADD, texi_load_new(X, index), y));
}

static tex_stmt *seq(int n, tex_stmt *const items[])
{
    return texi_seq_new(c, n, items);
}

static bool count_store(const tex_stmt *s, void *ud)
{
    *(int *)ud += s->kind == TEXI_STMT_STORE;
    return true;
}

/* The STOREs of pass jam's result on `for (v, 0, extent) body`, or -1. */
static int stores_after_jam(tex_expr *extent, tex_stmt *body)
{
    texi_lower lw = {c, NULL, NULL, false};
    tex_stmt *loop = texi_for_new(c, v, I32(0), extent, TEXI_FOR_SERIAL, -1, body), *out = NULL;
    if (!loop || texi_pass_jam(&lw, loop, &out) != 0)
        return -1;
    int n = 0;
    texi_stmt_visit(out, count_store, &n);
    return n;
}

static void expect_stores(const char *what, tex_expr *extent, tex_stmt *body, int want)
{
    int before = 0, got = stores_after_jam(extent, body);
    texi_stmt_visit(body, count_store, &before);
    if (got != want)
        TT_FAILF("%s: %d stores after jam (%d before), expected %d", what, got, before, want);
}

typedef struct {
    int n;
    double k[64]; /* each store's multiplier, in program order */
} store_order;

static bool note_multiplier(tex_expr *e, void *ud)
{
    store_order *o = ud;
    if (e->kind == TEXI_EXPR_FLOAT && o->n < 64)
        o->k[o->n++] = e->u.f;
    return true;
}

static bool note_store(const tex_stmt *s, void *ud)
{
    if (s->kind == TEXI_STMT_STORE)
        texi_stmt_visit_exprs(s, note_multiplier, ud);
    return true;
}

/* J for `chains` independent chains, as jam.c's top comment states. */
static int jam_for(int chains, int64_t extent)
{
    int j = (texi_host_vector_bytes() >= 64 ? 8 : 4) / chains;
    j = j < 2 ? j : 2;
    return j < extent ? j : (int)extent;
}

/* A fresh context with buffers X and Y of 4096 f32 and the loop variable v. */
static void hand_built_begin(void)
{
    c = tex_ctx_new();
    tex_expr *n = I32(4096);
    X = texi_buffer_new(c, "X", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    Y = texi_buffer_new(c, "Y", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    v = texi_var_new(c, "v", TEX_I32);
}

static void test_pass_forms(void)
{
    hand_built_begin();
    /* two vector chains of a 16-wide row, each updated twice */
    tex_stmt *rows[4] = {update(16, 0, 8, 1), update(16, 8, 8, 1), update(16, 0, 8, 2),
                         update(16, 8, 8, 2)};
    int j = jam_for(2, 32);
    expect_stores("row chains", I32(32), seq(4, rows), 4 * j);
    /* statement by statement: each statement for the J rows before the next
     * (multipliers 1 1 2 2 become 1 x 2J, then 2 x 2J) */
    store_order o = {0};
    texi_lower lw = {c, NULL, NULL, false};
    tex_stmt *loop = texi_for_new(c, v, I32(0), I32(32), TEXI_FOR_SERIAL, -1, seq(4, rows));
    tex_stmt *out = NULL;
    TT_EQ_INT(loop ? texi_pass_jam(&lw, loop, &out) : -1, 0);
    if (out)
        texi_stmt_visit(out, note_store, &o);
    TT_EQ_INT(o.n, 4 * j);
    for (int q = 0; q < o.n; q++)
        if (o.k[q] != (q < 2 * j ? 1 : 2))
            TT_FAILF("jammed store %d multiplies by %g, expected %d", q, o.k[q], q < 2 * j ? 1 : 2);
    /* 7 rows: 7 / j groups, then the rest as a loop of the original body */
    j = jam_for(2, 7);
    expect_stores("row chains, rest", I32(7), seq(4, rows), 4 * j + (7 % j ? 4 : 0));
    /* one scalar chain: a row of one element */
    tex_stmt *scalar[2] = {update(1, 0, 1, 1), update(1, 0, 1, 3)};
    j = jam_for(1, 64);
    expect_stores("scalar chain", I32(64), seq(2, scalar), 2 * j);
    /* left alone: no index stored twice */
    expect_stores("no chain", I32(32), seq(2, rows), 2);
    /* windows of 16 elements per iteration 8 apart overlap */
    tex_stmt *overlap[2] = {update(8, 0, 8, 1), update(8, 8, 8, 1)};
    tex_stmt *overlap2[4] = {overlap[0], overlap[1], update(8, 0, 8, 2), update(8, 8, 8, 2)};
    expect_stores("overlapping windows", I32(32), seq(4, overlap2), 4);
    /* the same element every iteration: a chain across iterations */
    tex_stmt *fixed[2] = {update(0, 3, 1, 1), update(0, 3, 1, 2)};
    expect_stores("fixed index", I32(32), seq(2, fixed), 2);
    /* not straight-line */
    tex_stmt *guarded = texi_if_new(c, texi_binary(TEXI_EXPR_LT, v, I32(5)), seq(4, rows), NULL);
    expect_stores("guarded", I32(32), guarded, 4);
    expect_stores("symbolic extent", texi_var_new(c, "n", TEX_I32), seq(4, rows), 4);
    tex_ctx_free(c);
}

/* ---------------------------------------------------- pass jam_outer */

static tex_expr *u; /* the outer loop's variable */

/* X[row*v + at .. + lanes) += Y[y .. + ylanes) * k: one update of a row by
 * a load that v does not move (a broadcast scalar when ylanes is 1). */
static tex_stmt *outer_update(int64_t row, int64_t at, int lanes, tex_expr *y, int ylanes, double k)
{
    tex_expr *first = texi_binary(TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, v, I32(row)), I32(at));
    tex_expr *index = texi_ramp_new(first, I32(1), lanes);
    tex_expr *yi = ylanes > 1 ? texi_ramp_new(y, I32(1), ylanes) : y;
    tex_expr *prod = texi_binary(TEXI_EXPR_MUL, texi_load_new(Y, yi), tex_const(c, TEX_F32, k));
    if (ylanes == 1)
        prod = texi_broadcast_new(prod, lanes);
    return texi_store_new(c, X, index, texi_binary(TEXI_EXPR_ADD, texi_load_new(X, index), prod));
}

/* Pass jam_outer's result on `for (u, 0, extent) for (v, 0, inner) body`. */
static tex_stmt *after_jam_outer(int64_t extent, tex_expr *inner, tex_stmt *body)
{
    texi_lower lw = {c, NULL, NULL, false};
    tex_stmt *in = texi_for_new(c, v, I32(0), inner, TEXI_FOR_SERIAL, -1, body);
    tex_stmt *loop = in ? texi_for_new(c, u, I32(0), I32(extent), TEXI_FOR_SERIAL, -1, in) : NULL;
    tex_stmt *out = NULL;
    return loop && texi_pass_jam_outer(&lw, loop, &out) == 0 ? out : NULL;
}

/* The jam factor of pass jam_outer for `invariant` registers of loads v
 * does not move and `kept` of stored elements (jam.c's rule). */
static int outer_jam_for(int invariant, int kept, int items, int64_t extent)
{
    int budget = (texi_host_vector_bytes() >= 64 ? 32 : 16) * 3 / 4;
    int j = extent < 4 ? (int)extent : 4;
    while (j >= 2 && (j * items > 64 || j * invariant + 2 * kept > budget))
        j--;
    return j;
}

static void expect_outer(const char *what, int64_t extent, tex_expr *inner, tex_stmt *body,
                         int want)
{
    tex_stmt *out = after_jam_outer(extent, inner, body);
    int before = 0, got = 0;
    texi_stmt_visit(body, count_store, &before);
    if (out)
        texi_stmt_visit(out, count_store, &got);
    if (!out || got != want)
        TT_FAILF("%s: %d stores after jam_outer (%d before), expected %d", what, got, before, want);
}

static void test_outer_forms(void)
{
    hand_built_begin();
    u = texi_var_new(c, "u", TEX_I32);
    tex_expr *u2 = texi_binary(TEXI_EXPR_MUL, u, I32(2));
    tex_expr *u2p1 = texi_binary(TEXI_EXPR_ADD, u2, I32(1));
    /* a row of two 8-lane accumulators updated by Y[2u] and Y[2u + 1]:
     * 2 invariant registers, 2 kept */
    tex_stmt *rows[4] = {outer_update(16, 0, 8, u2, 1, 1), outer_update(16, 8, 8, u2, 1, 2),
                         outer_update(16, 0, 8, u2p1, 1, 3), outer_update(16, 8, 8, u2p1, 1, 4)};
    int j = outer_jam_for(2, 2, 4, 8);
    TT_CHECK(j >= 2);
    expect_outer("accumulator rows", 8, I32(32), seq(4, rows), 4 * j);
    j = outer_jam_for(2, 2, 4, 9);
    expect_outer("accumulator rows, rest", 9, I32(32), seq(4, rows), 4 * j + (9 % j ? 4 : 0));
    /* copy after copy: each element's updates keep their order (1 2 3 4
     * for u = 2g, then for u = 2g + 1), not statement by statement */
    store_order o = {0};
    tex_stmt *out = after_jam_outer(2, I32(32), seq(4, rows));
    if (out)
        texi_stmt_visit(out, note_store, &o);
    TT_EQ_INT(o.n, 8);
    for (int i = 0; i < o.n && i < 8; i++)
        if (o.k[i] != 1 + i % 4)
            TT_FAILF("store %d multiplies by %g, expected %d", i, o.k[i], 1 + i % 4);
    /* invariant vector loads: 16-lane rows of Y (4 per copy) */
    tex_stmt *wide[4];
    for (int i = 0; i < 4; i++)
        wide[i] = outer_update(
            16, 8 * (i % 2), 8,
            texi_binary(TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, u, I32(64)), I32(16 * i)), 16, 1);
    int regs = (int)((64 + texi_host_vector_bytes() - 1) / texi_host_vector_bytes());
    j = outer_jam_for(4 * regs, 2, 4, 16);
    expect_outer("invariant vectors", 16, I32(32), seq(4, wide), j >= 2 ? 4 * j : 4);
    /* left alone: a stored index that moves with u */
    tex_stmt *moving[2] = {
        outer_update(16, 0, 8, u2, 1, 1),
        texi_store_new(c, X, texi_binary(TEXI_EXPR_ADD, v, u), texi_load_new(Y, u))};
    expect_outer("stored index moves with u", 8, I32(32), seq(2, moving), 2);
    /* left alone: an inner extent that u sets, a body that is not stores */
    expect_outer("triangular", 8, texi_binary(TEXI_EXPR_ADD, u, I32(1)), seq(4, rows), 4);
    tex_stmt *guarded = texi_if_new(c, texi_binary(TEXI_EXPR_LT, v, I32(5)), seq(4, rows), NULL);
    expect_outer("guarded", 8, I32(32), guarded, 4);
    /* left alone: windows of the inner loop's iterations overlap */
    tex_stmt *overlap[2] = {outer_update(8, 0, 8, u2, 1, 1), outer_update(8, 8, 8, u2, 1, 1)};
    expect_outer("overlapping windows", 8, I32(32), seq(2, overlap), 2);
    tex_ctx_free(c);
}

/* ------------------------------------------------------ compiled kernels */

/* The tutorial's write-cache schedule of an m x n x k matmul: C tiled mb x
 * bn, CC = cache_write(C, scope) at C's tile, CC's k split by kf (kf
 * unrolled), order (ko, mc, ki, nc), nc vectorized, the tile-row loop
 * parallel. */
static void tutorial(const char *name, int64_t m, int64_t n, int64_t k, int64_t mb, int64_t bn,
                     int64_t kf, tex_scope scope, const char *target)
{
    hand hh, *h = &hh;
    hand_begin(h, name, target);
    tex_tensor *C = ops_matmul(&h->w, m, n, k, false);
    hand_schedule(h);
    tex_tensor *CC = tex_cache_write(h->s, C, scope);
    TT_CHECK(CC != NULL);
    tex_stage *sc = S(h, C), *scc = S(h, CC);
    tex_iter *mo, *no, *mi, *ni, *ko, *ki;
    OK(tex_tile(sc, AX(h, C, 0), AX(h, C, 1), I(h, mb), I(h, bn), &mo, &no, &mi, &ni));
    OK(tex_compute_at(scc, sc, no));
    OK(tex_split(scc, RAX(h, CC, 0), I(h, kf), &ko, &ki));
    OK(tex_reorder(scc, 4, (tex_iter *[]){ko, AX(h, CC, 0), ki, AX(h, CC, 1)}));
    OK(tex_vectorize(scc, AX(h, CC, 1)));
    OK(tex_unroll(scc, ki));
    OK(tex_parallel(sc, mo));
    hand_end(h);
}

static void test_tutorial_rows(void)
{
    char name[64];
    for (int64_t mb = 1; mb <= 9; mb++) {
        snprintf(name, sizeof name, "jam_rows%lld", (long long)mb);
        tutorial(name, mb * 3, 64, 24, mb, 32, 4, TEX_SCOPE_GLOBAL, "cpu -threads=2");
    }
}

static void test_tutorial_local_and_edges(void)
{
    tutorial("jam_local", 40, 48, 20, 8, 16, 4, TEX_SCOPE_LOCAL, "cpu");
    tutorial("jam_edges", 37, 45, 29, 7, 16, 4, TEX_SCOPE_GLOBAL, "cpu -threads=2");
    tutorial("jam_wide", 24, 96, 12, 6, 48, 3, TEX_SCOPE_LOCAL, "cpu");
}

int main(void)
{
    TT_RUN(test_pass_forms);
    TT_RUN(test_outer_forms);
    if (!tt_private_cache(cache_dir, "test_jam"))
        return 1;
    if (!tex_target_available("cpu")) {
        printf("SKIP jam_kernels (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_tutorial_rows);
    TT_RUN(test_tutorial_local_and_edges);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
