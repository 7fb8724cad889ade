/*
 * The CPU transpose built-ins (src/schedule/intrin_cpu_transpose.c):
 * "cpu.transpose_f32_avx512" (B[16, 16] = A^T) and "cpu.transpose_f32_avx2"
 * (B[8, 8] = A^T).
 *
 * Lookup: each built-in's desc (shapes, the one input A), its body function
 * (no reset or update) and source (the shuffles behind the ISA's #if, the
 * element loop).
 *
 * Transposes tensorized with each built-in (both on any host: without the
 * ISA the element loop runs), lowered, built for "cpu" (or on 2 threads),
 * run on seeded random non-zero inputs with a poisoned output and compared
 * with the oracle, also through the interpreter: one tile, whole tiles,
 * tails on both axes, sizes below a tile (no call), symbolic sizes, a batch
 * of matrices (0, 2, 1), NCHW to NHWC (0, 2, 3, 1), and the tile's leaves
 * swapped, so that neither tile has unit strides along its rows (the
 * run-time check takes the element loop). The source must call the
 * built-in wherever a whole tile exists.
 *
 * Every build goes through a fresh temporary TEX_CACHE_DIR.
 */
#include "tt.h"
#include "support/tmpdir.h"
#include "support/ops.h"

#include "schedule/intrin.h"

static char cache_dir[] = "/tmp/tex-test-intrin-transpose-XXXXXX";

static const struct {
    const char *name;
    int64_t side;
    const char *fn; /* its body function */
} builtins[] = {
    {"cpu.transpose_f32_avx512", 16, "tex_transpose_f32_avx512_body"},
    {"cpu.transpose_f32_avx2", 8, "tex_transpose_f32_avx2_body"},
};
#define N_BUILTINS ((int)(sizeof builtins / sizeof builtins[0]))

static void test_lookup(void)
{
    for (int b = 0; b < N_BUILTINS; b++) {
        tex_ctx *ctx = tex_ctx_new();
        tex_intrin *in = tex_intrin_builtin(ctx, builtins[b].name);
        TT_CHECK(in != NULL);
        if (!in) {
            printf("  %s: %s\n", builtins[b].name, tex_errmsg(ctx));
            tex_ctx_free(ctx);
            continue;
        }
        TT_EQ_STR(in->builtin, builtins[b].name);
        TT_EQ_INT(in->n_inputs, 1);
        TT_EQ_INT(texi_intrin_cpu_transpose_side(builtins[b].name), builtins[b].side);
        tex_tensor *ts[2] = {in->inputs[0], in->desc};
        for (int t = 0; t < 2; t++)
            for (int d = 0; d < 2; d++) {
                int64_t v = -1;
                TT_CHECK(texi_expr_is_int_const(tex_tensor_dim(ts[t], d), &v));
                TT_EQ_INT(v, builtins[b].side);
            }
        TT_EQ_STR(in->fn[TEXI_INTRIN_BODY], builtins[b].fn);
        TT_CHECK(in->fn[TEXI_INTRIN_RESET] == NULL && in->fn[TEXI_INTRIN_UPDATE] == NULL);
        TT_CHECK(in->c_source && strstr(in->c_source, "__builtin_shufflevector("));
        TT_CHECK(in->c_source && strstr(in->c_source, "_any("));
        TT_EQ_INT(tex_errcode(ctx), 0);
        tex_ctx_free(ctx);
    }
    TT_EQ_INT(texi_intrin_cpu_transpose_side("cpu.gemm_f32_avx2"), 0);
}

/* X of dims[0..nd) transposed by perm (sizes symbolic when sym), its last
 * axis and the one that reads X's last tiled by the built-in's side (the
 * tile's leaves in that order, or swapped when `swapped`), tensorized at
 * the tile's outer leaf; built for target and checked against the oracle. */
static void check(int b, int nd, const int64_t dims[], const int perm[], bool sym, bool swapped,
                  const char *target)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "transpose");
    tex_expr *shape[4];
    static const char *const names[4] = {"d0", "d1", "d2", "d3"};
    for (int d = 0; d < nd; d++)
        shape[d] = ops_size(&w, names[d], dims[d], sym);
    w.out = tex_op_transpose(ctx, "Y", ops_input(&w, "X", nd, shape), perm);
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    tex_stage *st = tex_stage_of(s, w.out);
    int across = 0;
    for (int d = 0; d < nd; d++)
        across = perm[d] == nd - 1 ? d : across;
    tex_expr *t = tex_int(ctx, builtins[b].side);
    tex_iter *ao, *lo, *ai, *li;
    char why[2048] = "";
    tex_func *f = NULL;
    tex_kernel *kn = NULL;
    int rc =
        tex_tile(st, tex_op_axis(st, across), tex_op_axis(st, nd - 1), t, t, &ao, &lo, &ai, &li);
    if (rc == 0 && swapped)
        rc = tex_reorder(st, 2, (tex_iter *[]){li, ai});
    if (rc == 0)
        rc = tex_tensorize(st, swapped ? li : ai, tex_intrin_builtin(ctx, builtins[b].name));
    if (rc != 0)
        snprintf(why, sizeof why, "schedule failed: %s", tex_errmsg(ctx));
    else if ((f = ops_lower(&w, s, why, sizeof why)) != NULL && !(kn = tex_build(f, target)))
        snprintf(why, sizeof why, "tex_build(\"%s\") failed: %s", target, tex_errmsg(ctx));
    if (kn) {
        bool whole = dims[nd - 1] >= builtins[b].side && dims[perm[nd - 1]] >= builtins[b].side;
        char call[96];
        snprintf(call, sizeof call, "%s((const float *)", builtins[b].fn);
        TT_EQ_INT((strstr(tex_kernel_source(kn), call) != NULL), whole);
        if (ops_run_and_compare(&w, f, kn, "kernel: ", 1, why, sizeof why) == 0)
            ops_run_compare(&w, f, 2, why, sizeof why);
    }
    if (why[0])
        TT_FAILF("%s, %d-d transpose (%lld x ... x %lld)%s%s on %s: %s", builtins[b].name, nd,
                 (long long)dims[0], (long long)dims[nd - 1], sym ? ", symbolic" : "",
                 swapped ? ", leaves swapped" : "", target, why);
    tex_kernel_free(kn);
    tex_ctx_free(ctx);
}

static void test_matrices(void)
{
    for (int b = 0; b < N_BUILTINS; b++) {
        int64_t t = builtins[b].side;
        const int swap[2] = {1, 0};
        check(b, 2, (int64_t[]){t, t}, swap, false, false, "cpu");
        check(b, 2, (int64_t[]){3 * t, 2 * t}, swap, false, false, "cpu -threads=2");
        check(b, 2, (int64_t[]){37, 53}, swap, false, false, "cpu");
        check(b, 2, (int64_t[]){t - 1, 40}, swap, false, false, "cpu");
        check(b, 2, (int64_t[]){37, 53}, swap, true, false, "cpu");
        check(b, 2, (int64_t[]){37, 53}, swap, false, true, "cpu");
    }
}

static void test_higher_dims(void)
{
    for (int b = 0; b < N_BUILTINS; b++) {
        check(b, 3, (int64_t[]){3, 33, 40}, (int[]){0, 2, 1}, false, false, "cpu -threads=2");
        check(b, 4, (int64_t[]){2, 24, 5, 17}, (int[]){0, 2, 3, 1}, false, false, "cpu");
        check(b, 4, (int64_t[]){2, 24, 5, 17}, (int[]){0, 2, 3, 1}, true, false, "cpu");
    }
}

int main(void)
{
    if (!tt_private_cache(cache_dir, "test_intrin_cpu_transpose"))
        return 1;
    TT_RUN(test_lookup);
    TT_RUN(test_matrices);
    TT_RUN(test_higher_dims);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
