/*
 * Back-to-back GEMM fusion (bench/b2b_gemm.h): D0 = relu(alpha0 * A0 . B0),
 * D1 = relu(alpha1 * D0 . B1 + beta1 * C1), alpha0, alpha1 and beta1 runtime
 * scalars.
 *
 *   fused      the first GEMM's row panel of D0 computed at D1's row tile
 *              into a local buffer, the second GEMM's accumulators local at
 *              the column tile: in the interpreter and the JIT ("cpu",
 *              "cpu -threads=2"), N0 < N1 and N0 > N1, odd and prime sizes,
 *              M = 1, symbolic M, against the oracle on random non-zero inputs
 *              with a poisoned output; D0 is never a global buffer.
 *   unfused    D0 at root, the same comparison.
 *   conv       a 3x3 convolution + relu then a 1x1 convolution + relu
 *              (bench/b2b_conv.h), fused (D0 a local row of every channel
 *              at D1's row) and unfused, odd and prime sizes, tiles that do
 *              not divide the channels, against the oracle, interpreter and JIT.
 *   residency  P0 computed inside D1's column-tile loop would be recomputed
 *              once per column tile: tex_lower refuses it with TEX_EINVAL
 *              naming the stage, the loop and the tile; with a single column
 *              tile the same schedule is legal and correct. A column loop
 *              bound to blockIdx.y is refused as well (shared P0 and D0).
 */
#include "tt.h"
#include "support/opcheck.h"

#include "../../bench/b2b_conv.h"
#include "../../bench/b2b_gemm.h"

static char cache_dir[] = "/tmp/tex-test-b2b-XXXXXX";

typedef int (*b2b_sched)(tex_ctx *ctx, tex_schedule *s, const b2b_gemm *g, const b2b_tile *t);

/* The workload of one case: sizes, scalars, inputs and output in w. */
static void b2b_workload(ops_wl *w, tex_ctx *ctx, b2b_gemm *g, int64_t m, int64_t k0, int64_t n0,
                         int64_t n1, bool sym)
{
    ops_init(w, ctx, "b2b_gemm");
    b2b_gemm_define(ctx, ops_size(w, "M", m, sym), k0, n0, n1, g);
    tex_tensor *const in[4] = {g->a0, g->b0, g->b1, g->c1};
    for (int i = 0; i < 4; i++)
        w->in[w->n_in++] = in[i];
    w->out = g->d1;
    /* values the vars' names tie to: alpha0, alpha1, beta1, in parameter order */
    w->scal[0] = g->alpha0, w->scal[1] = g->alpha1, w->scal[2] = g->beta1;
    w->scal_vals[0] = 0.75, w->scal_vals[1] = -1.25, w->scal_vals[2] = 0.5;
    w->n_scal = 3;
}

/* One case through the interpreter and both CPU targets. */
static void b2b_case(b2b_sched sched, int64_t m, int64_t k0, int64_t n0, int64_t n1, bool sym,
                     const b2b_tile *t)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    b2b_gemm g;
    b2b_workload(&w, ctx, &g, m, k0, n0, n1, sym);
    tex_schedule *s = tex_schedule_new(ctx, 1, &g.d1);
    int rc = sched(ctx, s, &g, t);
    TT_CHECK(rc == 0);
    if (rc != 0) {
        printf("  schedule: %s\n", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return;
    }
    char why[2048];
    tex_func *f = ops_lower(&w, s, why, sizeof why);
    static const char *const targets[] = {"cpu", "cpu -threads=2"};
    bool ok = f && ops_run_compare(&w, f, 11, why, sizeof why) == 0;
    for (int i = 0; ok && i < 2; i++)
        ok = ops_jit_compare(&w, f, targets[i], 12 + (uint64_t)i, why, sizeof why) == 0;
    if (!ok) {
        printf("  M=%lld K0=%lld N0=%lld N1=%lld%s\n", (long long)m, (long long)k0, (long long)n0,
               (long long)n1, sym ? " (symbolic M)" : "");
        ops_report(&w, 11, NULL, f, why);
    }
    TT_CHECK(ok);
    tex_ctx_free(ctx);
}

static const b2b_tile tile = {6, 16, 4};

/* N0 < N1 and N0 > N1, prime and odd sizes, one row, symbolic rows. */
static void b2b_shapes(b2b_sched sched)
{
    static const int64_t shapes[][4] = {
        {37, 19, 24, 40}, {37, 19, 40, 24}, {1, 7, 16, 16}, {13, 5, 17, 31}, {24, 32, 32, 16}};
    for (int i = 0; i < 5; i++)
        for (int sym = 0; sym < 2; sym++)
            b2b_case(sched, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], sym, &tile);
}

static void test_fused(void)
{
    b2b_shapes(b2b_gemm_fused);
}

static void test_unfused(void)
{
    b2b_shapes(b2b_gemm_unfused);
}

/* The fused kernel keeps D0 on chip: no global buffer named D0 in the
 * lowered function, one local panel of mb x N0 elements. */
static void test_fused_d0_local(void)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    b2b_gemm g;
    b2b_workload(&w, ctx, &g, 37, 19, 24, 40, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &g.d1);
    TT_EQ_INT(b2b_gemm_fused(ctx, s, &g, &tile), 0);
    char why[512];
    tex_func *f = ops_lower(&w, s, why, sizeof why);
    char *txt = f ? tex_func_str(f) : NULL;
    TT_CHECK(txt && strstr(txt, "allocate D0: f32[6, 24] local"));
    if (txt && !strstr(txt, "allocate D0: f32[6, 24] local"))
        printf("%s\n", txt);
    free(txt);
    tex_ctx_free(ctx);
}

/* P0 and D0 computed at D1's column-tile loop instead of its row tile. */
static int b2b_inside_columns(tex_ctx *ctx, tex_schedule *s, const b2b_gemm *g, const b2b_tile *t)
{
    tex_stage *s0 = tex_stage_of(s, g->p0), *sd = tex_stage_of(s, g->d0);
    tex_stage *s1 = tex_stage_of(s, g->p1), *so = tex_stage_of(s, g->d1);
    tex_iter *mo, *no, *mi, *ni;
    int rc = tex_tile(so, tex_op_axis(so, 0), tex_op_axis(so, 1), tex_int(ctx, t->mb),
                      tex_int(ctx, t->bn), &mo, &no, &mi, &ni);
    rc = rc ? rc : tex_compute_at(s1, so, no);
    rc = rc ? rc : tex_compute_at(sd, so, no);
    rc = rc ? rc : tex_compute_at(s0, so, no);
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = tex_set_scope((tex_stage *[]){s0, sd, s1}[i], TEX_SCOPE_LOCAL);
    return rc;
}

static void test_residency_refused(void)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    b2b_gemm g;
    b2b_workload(&w, ctx, &g, 37, 19, 24, 40, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &g.d1);
    TT_EQ_INT(b2b_inside_columns(ctx, s, &g, &tile), 0);
    char why[1024];
    TT_CHECK(ops_lower(&w, s, why, sizeof why) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    const char *msg = tex_errmsg(ctx);
    TT_CHECK(strstr(msg, "tex_lower") && strstr(msg, "'P0'") && strstr(msg, "'n1.outer'"));
    TT_CHECK(strstr(msg, "P0[6, 24]") && strstr(msg, "3 times"));
    if (!strstr(msg, "[6, 24]"))
        printf("  message: %s\n", msg);
    tex_ctx_free(ctx);
    /* one column tile: nothing is recomputed, the schedule is legal */
    b2b_case(b2b_inside_columns, 37, 19, 24, 16, false, &tile);
    b2b_case(b2b_inside_columns, 37, 19, 24, 16, true, &tile);
}

/* One back-to-back convolution case, fused or not, through the interpreter
 * and the JIT on two threads. */
static void conv_case(int64_t c, int64_t h, int64_t w, int64_t f0, int64_t f1, int cb, int fused)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl wl;
    b2b_conv g;
    ops_init(&wl, ctx, "b2b_conv");
    b2b_conv_define(ctx, c, h, w, f0, f1, &g);
    wl.in[0] = g.x, wl.in[1] = g.w0, wl.in[2] = g.w1, wl.n_in = 3;
    wl.out = g.d1;
    tex_schedule *s = tex_schedule_new(ctx, 1, &g.d1);
    TT_EQ_INT(b2b_conv_schedule(ctx, s, &g, cb, fused), 0);
    char why[2048];
    tex_func *f = ops_lower(&wl, s, why, sizeof why);
    bool ok = f && ops_run_compare(&wl, f, 21, why, sizeof why) == 0 &&
              ops_jit_compare(&wl, f, "cpu -threads=2", 22, why, sizeof why) == 0;
    if (!ok) {
        printf("  C=%lld H=%lld W=%lld F0=%lld F1=%lld cb=%d %s\n", (long long)c, (long long)h,
               (long long)w, (long long)f0, (long long)f1, cb, fused ? "fused" : "unfused");
        ops_report(&wl, 21, NULL, f, why);
    }
    TT_CHECK(ok);
    tex_ctx_free(ctx);
}

static void test_conv(void)
{
    for (int fused = 0; fused < 2; fused++) {
        conv_case(5, 7, 11, 12, 9, 4, fused);
        conv_case(3, 1, 8, 8, 8, 8, fused);
        conv_case(2, 6, 17, 7, 13, 4, fused);
    }
}

/* A loop bound to a block index repeats a tile as a serial loop does: D1
 * in 16 x 16 blocks (blockIdx.x over rows, blockIdx.y over columns) with
 * P0 and D0 in shared memory at the column block (P1, global, there too:
 * its region spans the blocks, so P0's tile is every row). */
static void test_residency_blocks(void)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    b2b_gemm g;
    b2b_workload(&w, ctx, &g, 64, 16, 32, 64, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &g.d1);
    tex_stage *s0 = tex_stage_of(s, g.p0), *sd = tex_stage_of(s, g.d0), *so = tex_stage_of(s, g.d1);
    tex_iter *mo, *no, *mi, *ni;
    TT_EQ_INT(tex_tile(so, tex_op_axis(so, 0), tex_op_axis(so, 1), tex_int(ctx, 16),
                       tex_int(ctx, 16), &mo, &no, &mi, &ni),
              0);
    TT_EQ_INT(tex_bind(so, mo, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(so, no, TEX_BLOCK_Y), 0);
    TT_EQ_INT(tex_compute_at(tex_stage_of(s, g.p1), so, no), 0);
    TT_EQ_INT(tex_compute_at(sd, so, no), 0);
    TT_EQ_INT(tex_compute_at(s0, so, no), 0);
    TT_EQ_INT(tex_set_scope(sd, TEX_SCOPE_SHARED), 0);
    TT_EQ_INT(tex_set_scope(s0, TEX_SCOPE_SHARED), 0);
    char why[1024];
    TT_CHECK(ops_lower(&w, s, why, sizeof why) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    const char *msg = tex_errmsg(ctx);
    TT_CHECK(strstr(msg, "'P0' (scope shared)") && strstr(msg, "P0[64, 32]") &&
             strstr(msg, "'n1.outer'") && strstr(msg, "4 times"));
    if (!strstr(msg, "P0[64, 32]"))
        printf("  message: %s\n", msg);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("test_b2b: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_fused_d0_local);
    TT_RUN(test_residency_refused);
    TT_RUN(test_residency_blocks);
    if (tex_target_available("cpu")) {
        TT_RUN(test_fused);
        TT_RUN(test_unfused);
        TT_RUN(test_conv);
    } else {
        printf("SKIP b2b (no working C compiler for target \"cpu\")\n");
    }
    tt_remove_tree(cache_dir);
    return tt_finish();
}
