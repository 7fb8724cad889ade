/*
 * tex_reorder_storage (src/schedule/annotate.c, the strides in
 * src/lower/flatten.c): an intermediate stored in every order of its
 * dimensions, with and without tex_storage_align padding, computed at root
 * and attached inside its consumer, on odd, 1-sized and symbolic shapes;
 * each kernel is run by the interpreter and JIT-compiled on one and two
 * threads against the oracle (random non-zero inputs, the output
 * poisoned). The layout is checked in the generated C (the strides the
 * order gives). Errors, the schedule text and the trace replay are in
 * test_schedule_errors, test_schedule and test_schedule_text; random
 * orders go through test_lower_random and test_jit_random.
 */
#include "tt.h"
#include "support/opcheck.h"
#include "support/ops.h"

static char cache_dir[] = "/tmp/tex-test-storage-order-XXXXXX";

/* The 3! orders of three dims. */
static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

typedef struct {
    ops_wl w;
    tex_tensor *A, *B;
} transposer;

/* B[i, j, k] = 2 A[i, j, k] + 1 and C[k, i, j] = B[i, j, k] - A[i, j, k] / 2:
 * C reads B across its layout whatever the order. */
static void build(transposer *t, tex_ctx *ctx, const int64_t n[3], bool sym)
{
    ops_wl *w = &t->w;
    ops_init(w, ctx, "transposer");
    tex_expr *P = ops_size(w, "P", n[0], sym), *Q = ops_size(w, "Q", n[1], sym);
    tex_expr *R = ops_size(w, "R", n[2], sym);
    t->A = ops_input(w, "A", 3, (tex_expr *[]){P, Q, R});
    tex_iter *i = tex_axis(ctx, "i", P), *j = tex_axis(ctx, "j", Q), *k = tex_axis(ctx, "k", R);
    tex_expr *a = TEX_AT(t->A, tex_iv(i), tex_iv(j), tex_iv(k));
    t->B = ops_mid(w, tex_compute(ctx, "B", 3, (tex_iter *[]){i, j, k},
                                  tex_add(tex_mul(a, ops_f(w, 2)), ops_f(w, 1))));
    tex_iter *x = tex_axis(ctx, "x", R), *y = tex_axis(ctx, "y", P), *z = tex_axis(ctx, "z", Q);
    tex_expr *b = TEX_AT(t->B, tex_iv(y), tex_iv(z), tex_iv(x));
    tex_expr *a2 = TEX_AT(t->A, tex_iv(y), tex_iv(z), tex_iv(x));
    w->out =
        tex_compute(ctx, "C", 3, (tex_iter *[]){x, y, z}, tex_sub(b, tex_mul(a2, ops_f(w, 0.5))));
}

/* B stored in order o (and padded along dim align_dim by factor f, offset
 * 1, when f > 0), computed at root or at C's middle axis in local memory;
 * checked by the interpreter and the JIT on one and two threads. */
static void check_order(const int64_t n[3], bool sym, const int o[3], bool attached, int align_dim,
                        int f, uint64_t seed)
{
    tex_ctx *ctx = tex_ctx_new();
    transposer t;
    build(&t, ctx, n, sym);
    tex_schedule *s = tex_schedule_new(ctx, 1, &t.w.out);
    tex_stage *sb = tex_stage_of(s, t.B), *sc = tex_stage_of(s, t.w.out);
    if (attached) {
        TT_EQ_INT(tex_compute_at(sb, sc, tex_op_axis(sc, 1)), 0);
        TT_EQ_INT(tex_set_scope(sb, TEX_SCOPE_LOCAL), 0);
    }
    tex_iter *axes[3] = {tex_op_axis(sb, o[0]), tex_op_axis(sb, o[1]), tex_op_axis(sb, o[2])};
    TT_EQ_INT(tex_reorder_storage(sb, 3, axes), 0);
    if (f > 0)
        TT_EQ_INT(tex_storage_align(sb, tex_op_axis(sb, align_dim), f, 1), 0);
    TT_CHECK(ops_check(&t.w, s, seed, NULL, true) == 0);
    TT_CHECK(ops_check_jit(&t.w, s, "cpu", seed + 1, NULL, true) == 0);
    TT_CHECK(ops_check_jit(&t.w, s, "cpu -threads=2", seed + 2, NULL, true) == 0);
    tex_ctx_free(ctx);
}

/* Every order, padded or not, at root and attached, over the shapes. */
static void test_orders(void)
{
    static const struct {
        int64_t n[3];
        bool sym;
    } shapes[] = {{{5, 7, 3}, false}, {{1, 13, 2}, false}, {{4, 1, 9}, false}, {{6, 5, 4}, true}};
    uint64_t seed = 1;
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (int o = 0; o < 6; o++)
            for (int attached = 0; attached < 2; attached++) {
                check_order(shapes[sh].n, shapes[sh].sym, orders[o], attached, -1, 0, seed);
                check_order(shapes[sh].n, shapes[sh].sym, orders[o], attached, o % 3, 3 + o,
                            seed + 3);
                seed += 6;
            }
}

/* The C of B[5, 7, 3] stored k-major, then j, then i: B[i, j, k] at
 * i + j*5 + k*35 of 105 elements; with k's stride aligned to 4 mod 16, at
 * i + j*5 + k*36 of 108. (Stored k, i, j, B would have C's layout, and
 * pass inplace would compute it in C.) */
static void test_layout_in_source(void)
{
    for (int pad = 0; pad < 2; pad++) {
        tex_ctx *ctx = tex_ctx_new();
        transposer t;
        build(&t, ctx, (int64_t[]){5, 7, 3}, false);
        tex_schedule *s = tex_schedule_new(ctx, 1, &t.w.out);
        tex_stage *sb = tex_stage_of(s, t.B);
        tex_iter *i = tex_op_axis(sb, 0), *j = tex_op_axis(sb, 1), *k = tex_op_axis(sb, 2);
        TT_EQ_INT(tex_reorder_storage(sb, 3, (tex_iter *[]){k, j, i}), 0);
        if (pad)
            TT_EQ_INT(tex_storage_align(sb, k, 16, 4), 0);
        char why[512];
        tex_func *f = ops_lower(&t.w, s, why, sizeof why);
        tex_kernel *kern = f ? tex_build(f, "c") : NULL;
        TT_CHECK(kern != NULL);
        const char *src = kern ? tex_kernel_source(kern) : "";
        TT_CHECK(strstr(src, pad ? "B[108]" : "B[105]") != NULL);
        TT_CHECK(strstr(src, pad ? "B[i + j * 5 + k * 36] = " : "B[i + j * 5 + k * 35] = ") !=
                 NULL);
        TT_CHECK(ops_check_jit(&t.w, s, "cpu", 77, NULL, true) == 0);
        tex_kernel_free(kern);
        tex_ctx_free(ctx);
    }
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("test_storage_order: cannot make a temporary cache directory\n");
        return 1;
    }
    if (!tex_target_available("cpu")) {
        printf("SKIP storage_order (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_orders);
    TT_RUN(test_layout_in_source);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
