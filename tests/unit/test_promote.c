/*
 * Pass promote (src/lower/promote.c): values a serial loop updates at fixed
 * addresses live in a local buffer (registers) across it.
 *
 * Compiled kernels: a matmul whose k is blocked outside its tiles, so each
 * tile of C accumulates in place across the k blocks (tile sizes that do
 * not divide the shapes, symbolic sizes too), JIT-compiled for "cpu" and
 * "cpu -threads=2" against the oracle; the generated C must show C's tile
 * in a local C_reg buffer where the tile is whole. The pass on hand-built
 * loops: accumulators at constant indices are promoted (scalars and
 * vectors); an index that moves with the loop, overlapping vector
 * accesses, an access under an IF, and a loop that may run zero times are
 * left alone.
 */
#include "tt.h"
#include "lower/lower.h"
#include "support/ops.h"
#include "support/schedgen.h"
#include "support/tmpdir.h"

#include <unistd.h>

static char cache_dir[] = "/tmp/tex-test-promote-XXXXXX";

/* C = A . B, C tiled mb x bn, k split by kc outermost (C accumulated in
 * place across the k blocks), the tile's rows unrolled, its columns
 * vectorized, the tile-row loop parallel. */
static void kblocked_matmul(const char *name, int64_t m, int64_t n, int64_t k, bool sym,
                            const char *target, bool whole_tiles)
{
    hand hh, *h = &hh;
    hand_begin(h, name, target);
    tex_tensor *C = ops_matmul(&h->w, m, n, k, sym);
    hand_schedule(h);
    tex_stage *sc = S(h, C);
    tex_iter *mo, *no, *mi, *ni, *kb, *kr;
    OK(tex_tile(sc, AX(h, C, 0), AX(h, C, 1), I(h, 3), I(h, 8), &mo, &no, &mi, &ni));
    OK(tex_split(sc, RAX(h, C, 0), I(h, 5), &kb, &kr));
    OK(tex_reorder(sc, 6, (tex_iter *[]){kb, mo, no, kr, mi, ni}));
    OK(tex_unroll(sc, mi));
    OK(tex_vectorize(sc, ni));
    OK(tex_parallel(sc, mo));
    char why[256];
    tex_func *f = ops_lower(&h->w, h->s, why, sizeof why);
    tex_kernel *kern = f ? tex_build(f, "c") : NULL;
    const char *src = kern ? tex_kernel_source(kern) : NULL;
    TT_CHECK(src != NULL);
    if (src && (strstr(src, "C_reg") != NULL) != whole_tiles)
        TT_FAILF("%s: C's tile %s in a local buffer:\n%s", name, whole_tiles ? "is not" : "is",
                 src);
    tex_kernel_free(kern);
    hand_end(h);
}

static void test_kblocked_whole_tiles(void)
{
    kblocked_matmul("kblocked_whole", 12, 32, 20, false, "cpu", true);
    kblocked_matmul("kblocked_whole_t2", 12, 32, 20, false, "cpu -threads=2", true);
}

/* 13 x 37 x 23: edge tiles and a k tail, guarded (not promoted) next to
 * whole tiles (promoted). */
static void test_kblocked_edges(void)
{
    kblocked_matmul("kblocked_edges", 13, 37, 23, false, "cpu -threads=2", true);
}

/* Symbolic sizes: every tile may be an edge tile, so every access is
 * guarded and nothing is promoted; still right. */
static void test_kblocked_symbolic(void)
{
    kblocked_matmul("kblocked_symbolic", 10, 19, 17, true, "cpu", false);
}

/* ------------------------------------------------------------ hand-built */

static tex_ctx *c;
static texi_buffer *X, *Y;
static tex_expr *v;

static tex_expr *I32(int64_t k)
{
    return tex_int(c, k);
}

static tex_expr *ramp(int64_t base, int lanes)
{
    return texi_ramp_new(I32(base), I32(1), lanes);
}

/* X[index] = X[index] + Y[v] (Y broadcast to index's lanes). */
static tex_stmt *accumulate(tex_expr *index)
{
    tex_expr *y = texi_load_new(Y, v);
    if (index->lanes > 1)
        y = texi_broadcast_new(y, index->lanes);
    return texi_store_new(c, X, index, texi_binary(TEXI_EXPR_ADD, texi_load_new(X, index), y));
}

/* The printed result of pass promote on `for (v, 0, extent) body`. */
static char *promote_of(tex_expr *extent, tex_stmt *body)
{
    texi_lower lw = {c, NULL, NULL, false};
    tex_stmt *loop = texi_for_new(c, v, I32(0), extent, TEXI_FOR_SERIAL, -1, body), *out = NULL;
    return loop && texi_pass_promote(&lw, loop, &out) == 0 ? texi_stmt_str(out) : NULL;
}

static void expect(const char *what, tex_expr *extent, tex_stmt *body, bool promoted)
{
    char *text = promote_of(extent, body);
    TT_CHECK(text != NULL);
    if (text && (strstr(text, "X.reg") != NULL) != promoted)
        TT_FAILF("%s: %s:\n%s", what, promoted ? "not promoted" : "promoted", text);
    free(text);
}

static tex_stmt *seq(tex_stmt *a, tex_stmt *b)
{
    return texi_seq_new(c, 2, (tex_stmt *[]){a, b});
}

static void test_pass_forms(void)
{
    c = tex_ctx_new();
    tex_expr *n = I32(64);
    X = texi_buffer_new(c, "X", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    Y = texi_buffer_new(c, "Y", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    v = texi_var_new(c, "v", TEX_I32);
    tex_expr *sixteen = I32(16);
    expect("scalars", sixteen, seq(accumulate(I32(0)), accumulate(I32(3))), true);
    expect("vectors", sixteen, seq(accumulate(ramp(0, 8)), accumulate(ramp(8, 8))), true);
    char *text = promote_of(sixteen, seq(accumulate(ramp(0, 8)), accumulate(ramp(8, 8))));
    TT_CHECK(text && strstr(text, "allocate X.reg: f32[16] local") != NULL);
    free(text);
    expect("moving index", sixteen, accumulate(v), false);
    expect("overlapping vectors", sixteen, seq(accumulate(ramp(0, 8)), accumulate(ramp(4, 8))),
           false);
    expect("guarded", sixteen,
           texi_if_new(c, texi_binary(TEXI_EXPR_LT, v, I32(5)), accumulate(I32(0)), NULL), false);
    expect("maybe no iteration", texi_var_new(c, "n", TEX_I32), accumulate(I32(0)), false);
    /* local buffers: a small one is the C compiler's, a large one is promoted */
    X = texi_buffer_new(c, "X", TEX_F32, TEXI_SCOPE_LOCAL, 1, &n);
    expect("small local", sixteen, accumulate(I32(0)), false);
    tex_expr *big = I32(4096);
    X = texi_buffer_new(c, "X", TEX_F32, TEXI_SCOPE_LOCAL, 1, &big);
    expect("large local", sixteen, accumulate(I32(0)), true);
    tex_ctx_free(c);
}

int main(void)
{
    TT_RUN(test_pass_forms);
    if (!tt_private_cache(cache_dir, "test_promote"))
        return 1;
    if (!tex_target_available("cpu")) {
        printf("SKIP promote_kernels (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_kblocked_whole_tiles);
    TT_RUN(test_kblocked_edges);
    TT_RUN(test_kblocked_symbolic);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
