/*
 * Sparse iterations (src/sparse): CSR SpMM Y[i, k] = sum_j A[i, j] X[j, k]
 * and SDDMM O[i, j] = sum_k X[i, k] Y[j, k] at A's non-zeros, written in
 * coordinate space, lowered to position space, scheduled with ordinary
 * primitives (parallel rows, the position axis outside a split, vectorized
 * feature axis, X's rows prefetched non-zeros ahead) and JIT-compiled for the CPU. Each kernel runs
 * on random matrices (empty rows, one dense row, power-law rows, 1-sized and prime shapes, constant
 * and symbolic sizes) against a dense reference computed from the CSR arrays
 * (tests/support/sparse.h) and against the oracle (tex_eval_reference), outputs poisoned first.
 * Then malformed CSR arrays, short and longer than the call-time scans' blocks (refused at call
 * time, the entry named, nothing written) and the API's error paths.
 */
#include "tt.h"
#include "support/opcheck.h"
#include "support/sparse.h"

static char cache_dir[] = "/tmp/tex-test-sparse-XXXXXX";

/* The format of a's CSR arrays, sizes symbolic (tex_var) or constant. */
static void fmt_init(sp_fmt *c, const sp_csr *a, int64_t f, bool sym)
{
    tex_ctx *ctx = tex_ctx_new();
    sp_fmt_init(c, ctx, sym ? tex_var(ctx, "m", TEX_I64) : tex_int(ctx, a->m),
                sym ? tex_var(ctx, "n", TEX_I64) : tex_int(ctx, a->n),
                sym ? tex_var(ctx, "nnz", TEX_I64) : tex_int(ctx, a->nnz),
                sym ? tex_var(ctx, "f", TEX_I64) : tex_int(ctx, f));
}

/* Rows in parallel, (i, j, k) with k split by 8 and vectorized; X's rows
 * prefetched `ahead` non-zeros ahead, Y's the next row ahead. */
static void sched_spmm(tex_schedule *s, tex_tensor *y, tex_tensor *x, int ahead)
{
    tex_stage *st = tex_stage_of(s, y);
    tex_iter *i = tex_op_axis(st, 0), *k = tex_op_axis(st, 1), *j = tex_op_reduce_axis(st, 0);
    tex_iter *ko, *ki;
    TT_EQ_INT(tex_split(st, k, tex_int(tex_tensor_ctx(y), 8), &ko, &ki), 0);
    TT_EQ_INT(tex_reorder(st, 4, (tex_iter *[]){i, ko, j, ki}), 0);
    TT_EQ_INT(tex_parallel(st, i), 0);
    TT_EQ_INT(tex_vectorize(st, ki), 0);
    TT_EQ_INT(tex_prefetch(st, x, j, ahead), 0);
    TT_EQ_INT(tex_prefetch(st, y, i, 1), 0);
}

/* Rows in parallel; each row's non-zeros accumulate a chunk of 4 features
 * in a local buffer (cache_write at the chunk loop, vectorized), X's rows
 * prefetched `ahead` non-zeros ahead. */
static void sched_spmm_local(tex_schedule *s, tex_tensor *y, tex_tensor *x, int ahead)
{
    tex_tensor *yl = tex_cache_write(s, y, TEX_SCOPE_LOCAL);
    tex_stage *st = tex_stage_of(s, y), *sl = tex_stage_of(s, yl);
    tex_iter *ko, *ki;
    TT_EQ_INT(tex_split(st, tex_op_axis(st, 1), tex_int(tex_tensor_ctx(y), 4), &ko, &ki), 0);
    TT_EQ_INT(tex_parallel(st, tex_op_axis(st, 0)), 0);
    TT_EQ_INT(tex_compute_at(sl, st, ko), 0);
    tex_iter *k = tex_op_axis(sl, 1);
    TT_EQ_INT(tex_reorder(sl, 2, (tex_iter *[]){tex_op_reduce_axis(sl, 0), k}), 0);
    TT_EQ_INT(tex_vectorize(sl, k), 0);
    TT_EQ_INT(tex_prefetch(sl, x, tex_op_reduce_axis(sl, 0), ahead), 0);
}

/* Fills a poisoned output, runs the kernel, compares with want. */
static void check_out(const char *what, const float *got, const double *want, int64_t n)
{
    int64_t q = sp_first_mismatch(got, want, n, 1e-4);
    if (q >= 0)
        TT_FAILF("%s: element %lld is %.7g, expected %.7g", what, (long long)q, got[q], want[q]);
}

/* SpMM of one matrix: JIT and oracle against the dense reference. */
static void run_spmm(const sp_csr *a, int64_t f, bool sym, uint64_t seed)
{
    sp_fmt c;
    fmt_init(&c, a, f, sym);
    tex_tensor *y = sp_fmt_spmm(&c);
    tex_schedule *s = tex_schedule_new(c.ctx, 1, &y);
    (seed % 2 ? sched_spmm : sched_spmm_local)(s, y, c.X, 1 + (int)(seed * 7 % 40));
    tex_tensor *args[] = {tex_sp_indptr(c.J), tex_sp_indices(c.J), tex_sp_values(c.A), c.X, y};
    tex_func *fn = tex_lower_tensors(s, "spmm", 5, args);
    tex_kernel *k = fn ? tex_build(fn, "cpu") : NULL;
    if (!k) {
        TT_FAILF("spmm: %s", tex_errmsg(c.ctx));
        tex_ctx_free(c.ctx);
        return;
    }
    /* rows of uneven length: handed out at run time (pass uneven_parallel) */
    if (a->m > 1 && !strstr(tex_kernel_source(k), "schedule(dynamic, tex_chunk("))
        TT_FAILF("spmm %lld x %lld: rows not handed out dynamically", (long long)a->m,
                 (long long)a->n);
    float *x = sp_random_floats(a->n * f, seed),
          *out = malloc(sizeof *out * (size_t)(a->m * f + 1));
    double *want = malloc(sizeof *want * (size_t)(a->m * f + 1));
    sp_view v[5];
    DLTensor *arr[] = {sp_i32(&v[0], a->indptr, a->m + 1), sp_i32(&v[1], a->indices, a->nnz),
                       sp_f32(&v[2], a->values, 1, a->nnz, 0), sp_f32(&v[3], x, 2, a->n, f),
                       sp_f32(&v[4], out, 2, a->m, f)};
    sp_spmm_ref(a, x, f, want);
    sp_poison(out, a->m * f);
    TT_EQ_INT(tex_kernel_call_tensors(k, 5, arr), 0);
    check_out("spmm kernel", out, want, a->m * f);
    sp_poison(out, a->m * f);
    TT_EQ_INT(tex_eval_reference(c.ctx, 5, args, arr), 0);
    check_out("spmm oracle", out, want, a->m * f);
    free(x);
    free(out);
    free(want);
    tex_kernel_free(k);
    tex_ctx_free(c.ctx);
}

/* The shapes every kernel is run on. */
typedef struct {
    int64_t m, n, f;
    double avg;
    sp_pattern p;
} sp_case;

static const sp_case cases[] = {{1, 1, 1, 1, SP_UNIFORM},       {7, 5, 3, 2, SP_EMPTY_ROWS},
                                {13, 17, 11, 3, SP_DENSE_ROW},  {61, 53, 16, 4, SP_UNIFORM},
                                {97, 89, 19, 6, SP_POWER_LAW},  {5, 3, 8, 0, SP_UNIFORM},
                                {200, 300, 33, 5, SP_POWER_LAW}};

static void test_spmm(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int sym = 0; sym < 2; sym++) {
            const sp_case *k = &cases[i];
            sp_csr a = sp_csr_random(k->m, k->n, k->avg, k->p, 11 + i);
            run_spmm(&a, k->f, sym, 5 + i + (uint64_t)sym);
            sp_csr_free(&a);
        }
}

/* Non-zeros in parallel, the feature reduction vectorized. */
static void sched_sddmm(tex_schedule *s, tex_tensor *o)
{
    tex_stage *st = tex_stage_of(s, o);
    TT_EQ_INT(tex_parallel(st, tex_op_axis(st, 0)), 0);
    TT_EQ_INT(tex_vectorize_reduce(st, tex_op_reduce_axis(st, 0)), 0);
}

static void run_sddmm(const sp_csr *a, int64_t f, bool sym, uint64_t seed)
{
    sp_fmt c;
    fmt_init(&c, a, f, sym);
    tex_tensor *o = sp_fmt_sddmm(&c);
    tex_schedule *s = tex_schedule_new(c.ctx, 1, &o);
    sched_sddmm(s, o);
    /* the fused loop reads rows and indices; indptr only fills rows */
    tex_tensor *args[] = {tex_sp_indices(c.J), tex_sp_rows(c.J), c.X, c.Y, o};
    tex_func *fn = tex_lower_tensors(s, "sddmm", 5, args);
    tex_kernel *k = fn ? tex_build(fn, "cpu") : NULL;
    if (!k) {
        TT_FAILF("sddmm: %s", tex_errmsg(c.ctx));
        tex_ctx_free(c.ctx);
        return;
    }
    float *x = sp_random_floats(a->m * f, seed), *y = sp_random_floats(a->n * f, seed + 1);
    float *out = malloc(sizeof *out * (size_t)(a->nnz + 1));
    double *want = malloc(sizeof *want * (size_t)(a->nnz + 1));
    int32_t *rows = malloc(sizeof *rows * (size_t)(a->nnz + 1));
    sp_view v[6];
    DLTensor *arr[5];
    TT_EQ_INT(sp_sddmm_arrays(a, rows, x, y, f, out, v, arr), 0);
    sp_sddmm_ref(a, x, y, f, want);
    sp_poison(out, a->nnz);
    if (a->nnz > 0) { /* a row coordinate out of range: refused */
        int32_t last = rows[a->nnz - 1];
        rows[a->nnz - 1] = (int32_t)a->m;
        TT_EQ_INT(tex_kernel_call_tensors(k, 5, arr), TEX_EINVAL);
        TT_CHECK(strstr(tex_kernel_errmsg(k), "J_rows") != NULL && isnan(out[0]));
        rows[a->nnz - 1] = last;
    }
    TT_EQ_INT(tex_kernel_call_tensors(k, 5, arr), 0);
    check_out("sddmm kernel", out, want, a->nnz);
    sp_poison(out, a->nnz);
    TT_EQ_INT(tex_eval_reference(c.ctx, 5, args, arr), 0);
    check_out("sddmm oracle", out, want, a->nnz);
    free(x);
    free(y);
    free(out);
    free(want);
    free(rows);
    tex_kernel_free(k);
    tex_ctx_free(c.ctx);
}

static void test_sddmm(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int sym = 0; sym < 2; sym++) {
            const sp_case *k = &cases[i];
            sp_csr a = sp_csr_random(k->m, k->n, k->avg, k->p, 23 + i);
            run_sddmm(&a, k->f, sym, 7 + i);
            sp_csr_free(&a);
        }
}

/* One malformed-CSR call: refused with TEX_EINVAL naming `array`, the
 * poisoned output left as it was. */
static void expect_refused(tex_kernel *k, DLTensor *const arr[], const float *out, int64_t n,
                           const char *array)
{
    TT_EQ_INT(tex_kernel_call_tensors(k, 5, arr), TEX_EINVAL);
    if (!strstr(tex_kernel_errmsg(k), array))
        TT_FAILF("message \"%s\" lacks \"%s\"", tex_kernel_errmsg(k), array);
    for (int64_t q = 0; q < n; q++)
        if (!isnan(out[q])) {
            TT_FAILF("a refused call wrote element %lld", (long long)q);
            return;
        }
}

/* The CSR SpMM of a (symbolic sizes, f features) built for "cpu", c its
 * computes; arr (views in v) receives its arguments: a's arrays, x (a.n x
 * f) and out (a.m x f). NULL when it does not build. */
static tex_kernel *csr_spmm_kernel(sp_fmt *c, sp_csr *a, int64_t f, float *x, float *out,
                                   sp_view v[5], DLTensor *arr[5])
{
    fmt_init(c, a, f, true);
    tex_tensor *y = sp_fmt_spmm(c);
    tex_schedule *s = tex_schedule_new(c->ctx, 1, &y);
    tex_tensor *args[] = {tex_sp_indptr(c->J), tex_sp_indices(c->J), tex_sp_values(c->A), c->X, y};
    tex_func *fn = tex_lower_tensors(s, "spmm", 5, args);
    arr[0] = sp_i32(&v[0], a->indptr, a->m + 1);
    arr[1] = sp_i32(&v[1], a->indices, a->nnz);
    arr[2] = sp_f32(&v[2], a->values, 1, a->nnz, 0);
    arr[3] = sp_f32(&v[3], x, 2, a->n, f);
    arr[4] = sp_f32(&v[4], out, 2, a->m, f);
    return fn ? tex_build(fn, "cpu") : NULL;
}

/* Non-monotone indptr, indptr not starting at 0 or not ending at nnz, an
 * index out of range or negative: each refused before anything runs. */
static void test_malformed_csr(void)
{
    sp_csr a = sp_csr_random(9, 7, 3, SP_UNIFORM, 3);
    sp_fmt c;
    float *x = sp_random_floats(a.n * 4, 1), out[9 * 4];
    sp_view v[5];
    DLTensor *arr[5];
    tex_kernel *k = csr_spmm_kernel(&c, &a, 4, x, out, v, arr);
    TT_CHECK(k != NULL);
    sp_poison(out, a.m * 4);
    int32_t saved = a.indptr[4];
    a.indptr[4] = a.indptr[5] + 1;
    expect_refused(k, arr, out, a.m * 4, "J_indptr");
    a.indptr[4] = saved;
    a.indptr[0] = 1;
    expect_refused(k, arr, out, a.m * 4, "J_indptr");
    a.indptr[0] = 0;
    v[1].shape[0] = v[2].shape[0] = a.nnz - 1; /* sizes disagree: last entry != nnz */
    expect_refused(k, arr, out, a.m * 4, "J_indptr");
    v[1].shape[0] = v[2].shape[0] = a.nnz;
    saved = a.indices[a.nnz / 2];
    a.indices[a.nnz / 2] = (int32_t)a.n;
    expect_refused(k, arr, out, a.m * 4, "J_indices");
    a.indices[a.nnz / 2] = -1;
    expect_refused(k, arr, out, a.m * 4, "J_indices");
    a.indices[a.nnz / 2] = saved;
    TT_EQ_INT(tex_kernel_call_tensors(k, 5, arr), 0);
    TT_CHECK(!isnan(out[0]));
    free(x);
    tex_kernel_free(k);
    tex_ctx_free(c.ctx);
    sp_csr_free(&a);
}

/* The call-time scans on arrays longer than their blocks (src/rt/index_check.c
 * scans 64 entries at a time, then the rest): an index equal to the column
 * count or negative, inside a block or in the rest, and indptr decreasing,
 * each refused with the message naming the entry. */
static void test_malformed_long(void)
{
    sp_csr a = sp_csr_random(200, 150, 5, SP_UNIFORM, 4);
    sp_fmt c;
    float *x = sp_random_floats(a.n * 3, 2), *out = malloc(sizeof *out * (size_t)(a.m * 3));
    sp_view v[5];
    DLTensor *arr[5];
    tex_kernel *k = csr_spmm_kernel(&c, &a, 3, x, out, v, arr);
    TT_CHECK(k != NULL && a.nnz > 3 * 64);
    const int64_t at[] = {130, a.nnz - 1};
    const int32_t bad[] = {(int32_t)a.n, -1};
    char entry[64];
    for (int i = 0; k && i < 2; i++)
        for (int b = 0; b < 2; b++) {
            int32_t saved = a.indices[at[i]];
            a.indices[at[i]] = bad[b];
            snprintf(entry, sizeof entry, "entry %lld is %d", (long long)at[i], bad[b]);
            sp_poison(out, a.m * 3);
            expect_refused(k, arr, out, a.m * 3, entry);
            a.indices[at[i]] = saved;
        }
    int32_t saved = a.indptr[150];
    a.indptr[150] = a.indptr[149] - 1;
    expect_refused(k, arr, out, a.m * 3, "not monotone at entry 149");
    a.indptr[150] = saved;
    TT_EQ_INT(k ? tex_kernel_call_tensors(k, 5, arr) : -1, 0);
    free(x);
    free(out);
    tex_kernel_free(k);
    tex_ctx_free(c.ctx);
    sp_csr_free(&a);
}

/* tex_sp_fill_rows: rows of a valid indptr; malformed ones refused. */
static void test_fill_rows(void)
{
    int32_t indptr[] = {0, 2, 2, 5}, rows[5] = {-9, -9, -9, -9, -9};
    sp_view v[2];
    TT_EQ_INT(tex_sp_fill_rows(sp_i32(&v[0], indptr, 4), sp_i32(&v[1], rows, 5)), 0);
    TT_CHECK(rows[0] == 0 && rows[1] == 0 && rows[2] == 2 && rows[4] == 2);
    indptr[2] = 1; /* decreasing */
    TT_EQ_INT(tex_sp_fill_rows(sp_i32(&v[0], indptr, 4), sp_i32(&v[1], rows, 5)), TEX_EINVAL);
    indptr[2] = 2;
    TT_EQ_INT(tex_sp_fill_rows(sp_i32(&v[0], indptr, 4), sp_i32(&v[1], rows, 4)), TEX_EINVAL);
    TT_EQ_INT(tex_sp_fill_rows(NULL, &v[1].t), TEX_EMISUSE);
}

/* Declarations and iterations the API refuses, each with its message. */
static void test_errors(void)
{
    TT_CHECK(tex_sp_dense_fixed(NULL, "I", NULL, NULL) == NULL);
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *m = tex_int(ctx, 4);
    tex_sp_axis *I = tex_sp_dense_fixed(ctx, "I", NULL, m);
    oc_expect_error(ctx, (tex_tensor *)tex_sp_sparse_variable(ctx, "J", NULL, m, m), TEX_EINVAL,
                    "tex_sp_sparse_variable", "'J'", "parent", NULL);
    oc_expect_error(ctx,
                    (tex_tensor *)tex_sp_dense_fixed(ctx, "L", NULL, tex_const(ctx, TEX_F32, 1)),
                    TEX_ETYPE, "tex_sp_dense_fixed", "'L'", "length", NULL);
    tex_sp_axis *J = tex_sp_sparse_variable(ctx, "J", I, m, tex_int(ctx, 6));
    tex_sp_axis *K = tex_sp_dense_fixed(ctx, "K", NULL, m);
    oc_expect_error(ctx, tex_sp_indptr(I), TEX_EINVAL, "tex_sp_indptr", "'I'", NULL);
    oc_expect_error(ctx,
                    (tex_tensor *)tex_sp_buffer_new(ctx, "B", TEX_F32, 2, (tex_sp_axis *[]){I, K}),
                    TEX_EINVAL, "tex_sp_buffer_new", "'B'", "'K'", NULL);
    tex_sp_buffer *A = tex_sp_buffer_new(ctx, "A", TEX_F32, 2, (tex_sp_axis *[]){I, J});
    oc_expect_error(ctx, (tex_tensor *)tex_sp_at(A, 1, (tex_sp_axis *[]){J}), TEX_EINVAL,
                    "tex_sp_at", "'A'", NULL);
    tex_expr *a = tex_sp_at(A, 2, (tex_sp_axis *[]){I, J});
    oc_expect_error(ctx, tex_sp_iteration(ctx, "Y", 2, (tex_sp_axis *[]){J, I}, "SR", NULL, a),
                    TEX_EINVAL, "tex_sp_iteration", "'J'", "parent", NULL);
    oc_expect_error(ctx, tex_sp_iteration(ctx, "Y", 2, (tex_sp_axis *[]){I, J}, "SX", NULL, a),
                    TEX_EINVAL, "tex_sp_iteration", "'J'", NULL);
    oc_expect_error(ctx, tex_sp_iteration(ctx, "Y", 2, (tex_sp_axis *[]){I, J}, "S", NULL, a),
                    TEX_EINVAL, "tex_sp_iteration", "kinds", NULL);
    oc_expect_error(ctx, tex_sp_iteration(ctx, "Y", 2, (tex_sp_axis *[]){I, J}, "SS", NULL, a),
                    TEX_EINVAL, "tex_sp_iteration", "'J'", "dense-fixed root", NULL);
    oc_expect_error(ctx, tex_sp_iteration(ctx, "Y", 1, (tex_sp_axis *[]){I}, "S", NULL, a),
                    TEX_EINVAL, "tex_sp_iteration", "'J'", "not an axis of the iteration", NULL);
    oc_expect_error(ctx, tex_sp_iteration(ctx, "Y", 2, (tex_sp_axis *[]){I, J}, "SR", NULL, NULL),
                    TEX_EMISUSE, "tex_sp_iteration", NULL);
    /* a position axis moved outside the row axis its extent reads */
    tex_tensor *y = tex_sp_iteration(ctx, "Y", 2, (tex_sp_axis *[]){I, J}, "SR", NULL, a);
    tex_schedule *s = tex_schedule_new(ctx, 1, &y);
    tex_stage *st = tex_stage_of(s, y);
    TT_EQ_INT(tex_reorder(st, 2, (tex_iter *[]){tex_op_reduce_axis(st, 0), tex_op_axis(st, 0)}), 0);
    tex_tensor *args[] = {tex_sp_indptr(J), tex_sp_values(A), y};
    oc_expect_error(ctx, (tex_tensor *)tex_lower_tensors(s, "bad", 3, args), TEX_EINVAL,
                    "tex_lower", "'Y'", "'J'", "inside axis 'I'", NULL);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("cannot create a cache directory\n");
        return 1;
    }
    TT_RUN(test_spmm);
    TT_RUN(test_sddmm);
    TT_RUN(test_malformed_csr);
    TT_RUN(test_malformed_long);
    TT_RUN(test_fill_rows);
    TT_RUN(test_errors);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
