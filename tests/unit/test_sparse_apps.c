/*
 * Sparse iterations of two applications (docs/sparse.md, "Applications"),
 * JIT-compiled for the CPU and run against loops written out (here, and
 * sp_sparse_conv_ref in tests/support/sparse.h) and against the oracle
 * (tex_eval_reference), outputs poisoned first:
 *   - masked attention scores S[i, j] = (Q[i, :] . K[j, :]) / sqrt(d) at the
 *     non-zeros of a mask (uniform, power-law, empty rows, a dense row), a
 *     sparse output;
 *   - sparse convolution as gather-GEMM-scatter: Out[o, co] = sum over o's
 *     pairs q of sum_ci In[src(q), ci] * W[offset(q), ci, co], the pairs of
 *     each output site (its occupied neighbours and their kernel offsets)
 *     grouped by output site (CSR), so each output row is written by one
 *     thread and no atomics are needed; the kernel offset is a sparse-fixed
 *     axis of one column under the pairs (a reduction axis under a
 *     reduction axis), so its indices are checked at call time like any:
 *     an offset outside the kernel is refused, nothing written; the grids
 *     (sp_rulebook_random) random voxels of a submanifold 3 x 3 x 3 conv.
 * Constant and symbolic sizes, 1-sized and prime shapes; a variable
 * reduction axis under another refused.
 */
#include "tt.h"
#include "support/opcheck.h"
#include "support/sparse.h"

#include <math.h>

static char cache_dir[] = "/tmp/tex-test-sparse-apps-XXXXXX";

static void check_out(const char *what, const float *got, const double *want, int64_t n)
{
    int64_t q = sp_first_mismatch(got, want, n, 1e-4);
    if (q >= 0)
        TT_FAILF("%s: element %lld is %.7g, expected %.7g", what, (long long)q, got[q], want[q]);
}

static tex_expr *size(tex_ctx *ctx, const char *name, int64_t v, bool sym)
{
    return sym ? tex_var(ctx, name, TEX_I64) : tex_int(ctx, v);
}

/* Builds fn's kernel for "cpu -threads=2"; NULL after a reported failure. */
static tex_kernel *build(tex_ctx *ctx, tex_schedule *s, const char *name, int n,
                         tex_tensor *const args[])
{
    tex_func *fn = s ? tex_lower_tensors(s, name, n, args) : NULL;
    tex_kernel *k = fn ? tex_build(fn, "cpu -threads=2") : NULL;
    if (!k)
        TT_FAILF("%s: %s", name, tex_errmsg(ctx));
    return k;
}

/* ------------------------------------------------- masked attention */

/* Scores of a mask (m queries x n keys, CSR) for head dimension d. */
static void run_attention(const sp_csr *mask, int64_t d, bool sym, uint64_t seed)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *m = size(ctx, "m", mask->m, sym), *n = size(ctx, "n", mask->n, sym);
    tex_expr *dd = size(ctx, "d", d, sym), *nnz = size(ctx, "nnz", mask->nnz, sym);
    tex_sp_axis *I = tex_sp_dense_fixed(ctx, "I", NULL, m);
    tex_sp_axis *J = tex_sp_sparse_variable(ctx, "J", I, n, nnz);
    tex_sp_axis *K = tex_sp_dense_fixed(ctx, "K", NULL, dd);
    tex_tensor *q = tex_placeholder(ctx, "Q", TEX_F32, 2, (tex_expr *[]){m, dd});
    tex_tensor *kt = tex_placeholder(ctx, "Kt", TEX_F32, 2, (tex_expr *[]){n, dd});
    tex_sp_buffer *sb = tex_sp_buffer_new(ctx, "S", TEX_F32, 2, (tex_sp_axis *[]){I, J});
    tex_expr *scale = tex_div(tex_const(ctx, TEX_F32, 1.0), tex_sqrt(tex_cast(TEX_F32, dd)));
    tex_expr *body = tex_mul(tex_mul(TEX_AT(q, tex_sp_coord(I), tex_sp_coord(K)),
                                     TEX_AT(kt, tex_sp_coord(J), tex_sp_coord(K))),
                             scale);
    tex_tensor *s_out =
        tex_sp_iteration(ctx, "scores", 3, (tex_sp_axis *[]){I, J, K}, "SSR", sb, body);
    tex_schedule *s = s_out ? tex_schedule_new(ctx, 1, &s_out) : NULL;
    tex_stage *st = s ? tex_stage_of(s, s_out) : NULL;
    if (st) {
        TT_EQ_INT(tex_parallel(st, tex_op_axis(st, 0)), 0);
        TT_EQ_INT(tex_vectorize_reduce(st, tex_op_reduce_axis(st, 0)), 0);
    }
    tex_tensor *args[] = {tex_sp_indices(J), tex_sp_rows(J), q, kt, s_out};
    tex_kernel *k = build(ctx, s, "attention_scores", 5, args);
    float *qv = sp_random_floats(mask->m * d, seed), *kv = sp_random_floats(mask->n * d, seed + 1);
    float *out = malloc(sizeof *out * (size_t)(mask->nnz + 1));
    double *want = malloc(sizeof *want * (size_t)(mask->nnz + 1));
    int32_t *rows = malloc(sizeof *rows * (size_t)(mask->nnz + 1));
    sp_view v[6];
    DLTensor *arr[5];
    TT_EQ_INT(sp_sddmm_arrays(mask, rows, qv, kv, d, out, v, arr), 0);
    for (int64_t i = 0; i < mask->m; i++)
        for (int32_t p = mask->indptr[i]; p < mask->indptr[i + 1]; p++) {
            double acc = 0;
            for (int64_t c = 0; c < d; c++)
                acc += (double)qv[i * d + c] * kv[(int64_t)mask->indices[p] * d + c];
            want[p] = acc / sqrt((double)d);
        }
    if (k) {
        sp_poison(out, mask->nnz);
        TT_EQ_INT(tex_kernel_call_tensors(k, 5, arr), 0);
        check_out("attention scores kernel", out, want, mask->nnz);
    }
    sp_poison(out, mask->nnz);
    TT_EQ_INT(tex_eval_reference(ctx, 5, args, arr), 0);
    check_out("attention scores oracle", out, want, mask->nnz);
    free(qv);
    free(kv);
    free(out);
    free(want);
    free(rows);
    tex_kernel_free(k);
    tex_ctx_free(ctx);
}

static void test_attention(void)
{
    const struct {
        int64_t m, n, d;
        double avg;
        sp_pattern p;
    } cases[] = {{1, 1, 1, 1, SP_UNIFORM},
                 {9, 9, 8, 3, SP_EMPTY_ROWS},
                 {31, 37, 16, 5, SP_POWER_LAW},
                 {64, 64, 64, 8, SP_UNIFORM},
                 {17, 23, 13, 4, SP_DENSE_ROW}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int sym = 0; sym < 2; sym++) {
            sp_csr mask = sp_csr_random(cases[i].m, cases[i].n, cases[i].avg, cases[i].p, 31 + i);
            run_attention(&mask, cases[i].d, sym, 3 + i);
            sp_csr_free(&mask);
        }
}

/* ------------------------------------------------- sparse convolution */

/* Out = the convolution of In [sites, cin] with W [SP_KV, cin, cout] over r's
 * pairs: loop order (sites, cout / 8, pairs, offset, cin, cout % 8), the
 * sites in parallel, the inner output channels vectorized; one offset made
 * out of range is refused at call time. */
static void run_conv(const sp_rulebook *r, int64_t cin, int64_t cout, bool sym, uint64_t seed)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *args[6];
    tex_tensor *out = sp_sparse_conv(ctx, r, cin, cout, sym, args);
    tex_schedule *s = out ? tex_schedule_new(ctx, 1, &out) : NULL;
    tex_stage *st = s ? tex_stage_of(s, out) : NULL;
    if (st) {
        tex_iter *o = tex_op_axis(st, 0), *co = tex_op_axis(st, 1), *coo, *coi;
        tex_iter *j = tex_op_reduce_axis(st, 0), *d = tex_op_reduce_axis(st, 1);
        TT_EQ_INT(tex_split(st, co, tex_int(ctx, 8), &coo, &coi), 0);
        TT_EQ_INT(tex_reorder(st, 6, (tex_iter *[]){o, coo, j, d, tex_op_reduce_axis(st, 2), coi}),
                  0);
        TT_EQ_INT(tex_parallel(st, o), 0);
        TT_EQ_INT(tex_vectorize(st, coi), 0);
    }
    tex_kernel *k = build(ctx, s, "sparse_conv", 6, args);
    TT_CHECK(!k || !strstr(tex_kernel_source(k), "vectorize_failed"));
    float *x = sp_random_floats(r->sites * cin, seed);
    float *wv = sp_random_floats(SP_KV * cin * cout, seed + 1);
    float *y = malloc(sizeof *y * (size_t)(r->sites * cout + 1));
    double *want = malloc(sizeof *want * (size_t)(r->sites * cout + 1));
    sp_view v[6];
    int64_t wshape[3];
    DLTensor *arr[6];
    sp_sparse_conv_arrays(r, x, wv, y, cin, cout, v, wshape, arr);
    sp_sparse_conv_ref(r, x, wv, cin, cout, want);
    if (k && r->pairs > 0) {
        int32_t saved = r->off[r->pairs / 2];
        r->off[r->pairs / 2] = SP_KV;
        sp_poison(y, r->sites * cout);
        TT_EQ_INT(tex_kernel_call_tensors(k, 6, arr), TEX_EINVAL);
        TT_CHECK(strstr(tex_kernel_errmsg(k), "D_indices") != NULL && isnan(y[0]));
        r->off[r->pairs / 2] = saved;
    }
    if (k) {
        sp_poison(y, r->sites * cout);
        TT_EQ_INT(tex_kernel_call_tensors(k, 6, arr), 0);
        check_out("sparse conv kernel", y, want, r->sites * cout);
    }
    sp_poison(y, r->sites * cout);
    TT_EQ_INT(tex_eval_reference(ctx, 6, args, arr), 0);
    check_out("sparse conv oracle", y, want, r->sites * cout);
    free(x);
    free(wv);
    free(y);
    free(want);
    tex_kernel_free(k);
    tex_ctx_free(ctx);
}

static void test_sparse_conv(void)
{
    const struct {
        int64_t g, cin, cout;
        double fill;
    } cases[] = {{1, 1, 1, 1.0}, {4, 3, 8, 0.5}, {5, 16, 16, 0.3}, {7, 5, 13, 0.2}, {6, 8, 1, 0.0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int sym = 0; sym < 2; sym++) {
            sp_rulebook r = sp_rulebook_random(cases[i].g, cases[i].fill, 41 + i);
            run_conv(&r, cases[i].cin, cases[i].cout, sym, 5 + i);
            sp_rulebook_free(&r);
        }
}

/* The iteration refuses a variable reduction axis under another one (its
 * extent would read that axis's position), naming it. */
static void test_refused(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *n = tex_int(ctx, 5), *nnz = tex_int(ctx, 7);
    tex_sp_axis *O = tex_sp_dense_fixed(ctx, "O", NULL, n);
    tex_sp_axis *J = tex_sp_sparse_variable(ctx, "J", O, n, nnz);
    tex_sp_axis *V = tex_sp_sparse_variable(ctx, "V", J, n, nnz);
    tex_tensor *x = tex_placeholder(ctx, "X", TEX_F32, 1, &n);
    tex_expr *body = TEX_AT(x, tex_sp_coord(V));
    TT_CHECK(tex_sp_iteration(ctx, "bad", 3, (tex_sp_axis *[]){O, J, V}, "SRR", NULL, body) ==
             NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'V'") && strstr(tex_errmsg(ctx), "variable reduction axis"));
    tex_ctx_free(ctx);
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("test_sparse_apps: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_refused);
    if (!tex_target_available("cpu")) {
        printf("SKIP sparse_apps (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_attention);
    TT_RUN(test_sparse_conv);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
