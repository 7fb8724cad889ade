/*
 * Binary searches in sparse iterations (src/sparse/search.c) and stage-I
 * schedules (tex_sp_iter_*, tex_sp_reorder), JIT-compiled for the CPU:
 *   - SDDMM whose fused loop over non-zeros finds each row by a binary
 *     search of indptr in the kernel (TEX_SP_ROWS_SEARCH, no rows array),
 *     the non-zeros in parallel, or split with the inner part vectorized
 *     (one search per lane);
 *   - a masked product O[i, j] = A[i, j] * B[i, j] at A's non-zeros, B of
 *     another pattern read at A's axes (a search of B's row for A's
 *     column), B over A's root or over a root of its own, shorter one;
 *   - SpMM Y = A X with X itself sparse (CSR over [n, f]), read at the
 *     iteration's coordinates (a dense level computed, a sparse level
 *     searched), features vectorized;
 *   - sparse_reorder: SpMM in the loop orders (I, J, K) and (K, I, J),
 *     SDDMM with its reduction outside the fused loop.
 * Each kernel runs on random matrices (empty rows, one dense row,
 * power-law rows, 1-sized and prime shapes, constant and symbolic sizes)
 * against a dense reference and against the oracle, outputs poisoned
 * first. Then malformed arrays (an indptr, an unsorted searched row)
 * refused at call time with nothing written, and the API's error paths.
 */
#include "tt.h"
#include "support/opcheck.h"
#include "support/sparse.h"

static char cache_dir[] = "/tmp/tex-test-sparse-search-XXXXXX";

enum { MAX_ARGS = 8 };

/* A kernel's parameters, its arrays, and its poisoned output's reference. */
typedef struct {
    const char *what;
    int n;
    tex_tensor *params[MAX_ARGS];
    DLTensor *arr[MAX_ARGS];
    float *out;
    const double *want;
    int64_t n_out;
} sp_run;

static void check_out(const char *what, const float *got, const double *want, int64_t n)
{
    int64_t q = sp_first_mismatch(got, want, n, 1e-4);
    if (q >= 0)
        TT_FAILF("%s: element %lld is %.7g, expected %.7g", what, (long long)q, got[q], want[q]);
}

/* Lowers s over r's params, builds for the CPU, runs the kernel and the
 * oracle against r->want; returns the kernel (NULL on failure). */
static tex_kernel *run_both(tex_ctx *ctx, tex_schedule *s, sp_run *r)
{
    tex_func *fn = tex_lower_tensors(s, r->what, r->n, r->params);
    tex_kernel *k = fn ? tex_build(fn, "cpu") : NULL;
    if (!k) {
        TT_FAILF("%s: %s", r->what, tex_errmsg(ctx));
        return NULL;
    }
    sp_poison(r->out, r->n_out);
    if (tex_kernel_call_tensors(k, r->n, r->arr) != 0)
        TT_FAILF("%s: %s", r->what, tex_kernel_errmsg(k));
    check_out(r->what, r->out, r->want, r->n_out);
    sp_poison(r->out, r->n_out);
    if (tex_eval_reference(ctx, r->n, r->params, r->arr) != 0)
        TT_FAILF("%s: oracle: %s", r->what, tex_errmsg(ctx));
    check_out(r->what, r->out, r->want, r->n_out);
    return k;
}

/* A call refused with TEX_EINVAL naming `array`, the output untouched. */
static void expect_refused(tex_kernel *k, sp_run *r, const char *array)
{
    sp_poison(r->out, r->n_out);
    TT_EQ_INT(tex_kernel_call_tensors(k, r->n, r->arr), TEX_EINVAL);
    if (!strstr(tex_kernel_errmsg(k), array))
        TT_FAILF("message \"%s\" lacks \"%s\"", tex_kernel_errmsg(k), array);
    for (int64_t q = 0; q < r->n_out; q++)
        if (!isnan(r->out[q])) {
            TT_FAILF("%s: a refused call wrote element %lld", r->what, (long long)q);
            return;
        }
}

/* The fused loop over non-zeros in parallel, or split by 8 with the inner
 * part vectorized (so the row search varies over the lanes), outside the
 * reduction if there is one. */
static void sched_fused(tex_schedule *s, tex_tensor *o, bool vec, bool reduce)
{
    tex_stage *st = tex_stage_of(s, o);
    tex_iter *po, *pi;
    if (!vec) {
        TT_EQ_INT(tex_parallel(st, tex_op_axis(st, 0)), 0);
        return;
    }
    TT_EQ_INT(tex_split(st, tex_op_axis(st, 0), tex_int(tex_tensor_ctx(o), 8), &po, &pi), 0);
    TT_EQ_INT(tex_parallel(st, po), 0);
    if (reduce)
        TT_EQ_INT(tex_reorder(st, 3, (tex_iter *[]){po, tex_op_reduce_axis(st, 0), pi}), 0);
    TT_EQ_INT(tex_vectorize(st, pi), 0);
}

typedef struct {
    int64_t m, n, f;
    double avg;
    sp_pattern p;
} sp_case;

static const sp_case cases[] = {{1, 1, 1, 1, SP_UNIFORM},      {7, 5, 3, 2, SP_EMPTY_ROWS},
                                {13, 17, 11, 3, SP_DENSE_ROW}, {61, 53, 16, 4, SP_UNIFORM},
                                {97, 89, 19, 6, SP_POWER_LAW}, {5, 3, 8, 0, SP_UNIFORM}};

/* ------------------------------------------------------ SDDMM, rows searched */

/* SDDMM o of format c (schedule s) run on random X and Y from seed against
 * the dense reference; then a malformed indptr, which the kernel searches,
 * must be refused. */
static void sddmm_check(tex_ctx *ctx, const sp_fmt *c, const sp_csr *a, int64_t f, tex_schedule *s,
                        tex_tensor *o, const char *name, uint64_t seed)
{
    float *x = sp_random_floats(a->m * f, seed), *y = sp_random_floats(a->n * f, seed + 1);
    float *out = malloc(sizeof *out * (size_t)(a->nnz + 1));
    double *want = malloc(sizeof *want * (size_t)(a->nnz + 1));
    sp_view v[5];
    sp_run r = {name,
                5,
                {tex_sp_indptr(c->J), tex_sp_indices(c->J), c->X, c->Y, o},
                {sp_i32(&v[0], a->indptr, a->m + 1), sp_i32(&v[1], a->indices, a->nnz),
                 sp_f32(&v[2], x, 2, a->m, f), sp_f32(&v[3], y, 2, a->n, f),
                 sp_f32(&v[4], out, 1, a->nnz, 0)},
                out,
                want,
                a->nnz};
    sp_sddmm_ref(a, x, y, f, want);
    tex_kernel *k = run_both(ctx, s, &r);
    if (k && a->m > 1 && a->indptr[1] > 0) {
        int32_t saved = a->indptr[1];
        a->indptr[1] = a->indptr[2] + 1;
        expect_refused(k, &r, "J_indptr");
        a->indptr[1] = saved;
    }
    tex_kernel_free(k);
    free(x);
    free(y);
    free(out);
    free(want);
}

static void run_sddmm(const sp_csr *a, int64_t f, bool sym, bool vec, uint64_t seed)
{
    sp_fmt c;
    tex_ctx *ctx = sp_fmt_new(&c, a, f, sym);
    tex_tensor *o = tex_sp_iter_lower(sp_fmt_sddmm_iter(&c, TEX_SP_ROWS_SEARCH));
    tex_schedule *s = o ? tex_schedule_new(ctx, 1, &o) : NULL;
    if (!s) {
        TT_FAILF("sddmm: %s", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return;
    }
    sched_fused(s, o, vec, true);
    sddmm_check(ctx, &c, a, f, s, o, "sddmm_search", seed);
    tex_ctx_free(ctx);
}

static void test_sddmm_search(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int sym = 0; sym < 2; sym++) {
            const sp_case *k = &cases[i];
            sp_csr a = sp_csr_random(k->m, k->n, k->avg, k->p, 41 + i);
            run_sddmm(&a, k->f, sym, (i + (size_t)sym) % 2, 3 + i);
            sp_csr_free(&a);
        }
}

/* ------------------------------------------------- masked product, B searched */

/* O[i, j] = A[i, j] * B[i, j] at A's non-zeros. B (b's arrays) is over A's
 * root I, or over a root IB of its own with b->m rows (own_root). */
static void run_masked(sp_csr *a, sp_csr *b, bool sym, bool own_root, tex_sp_rows_mode rows,
                       bool vec)
{
    sp_fmt c; /* m, n, mb constant: no argument has such a dimension to bind them */
    tex_ctx *ctx = tex_ctx_new();
    sp_fmt_init(&c, ctx, tex_int(ctx, a->m), tex_int(ctx, a->n),
                sym ? tex_var(ctx, "nnz", TEX_I64) : tex_int(ctx, a->nnz), tex_int(ctx, 1));
    tex_expr *mb = tex_int(ctx, b->m);
    tex_expr *nnzb = sym ? tex_var(ctx, "nnzb", TEX_I64) : tex_int(ctx, b->nnz);
    tex_sp_axis *IB = own_root ? tex_sp_dense_fixed(ctx, "IB", NULL, mb) : c.I;
    tex_sp_axis *JB = tex_sp_sparse_variable(ctx, "JB", IB, c.n, nnzb);
    tex_sp_buffer *B = tex_sp_buffer_new(ctx, "B", TEX_F32, 2, (tex_sp_axis *[]){IB, JB});
    tex_sp_buffer *O = tex_sp_buffer_new(ctx, "O", TEX_F32, 2, (tex_sp_axis *[]){c.I, c.J});
    tex_sp_axis *IJ[] = {c.I, c.J};
    tex_expr *body = tex_mul(tex_sp_at(c.A, 2, IJ), tex_sp_at(B, 2, IJ));
    tex_sp_iter *it = tex_sp_iter_new(ctx, "masked", 2, IJ, "SS", O, body);
    TT_EQ_INT(tex_sp_iter_rows(it, rows), 0);
    tex_tensor *o = tex_sp_iter_lower(it);
    tex_schedule *s = o ? tex_schedule_new(ctx, 1, &o) : NULL;
    if (!s) {
        TT_FAILF("masked: %s", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return;
    }
    sched_fused(s, o, vec, false);
    float *out = malloc(sizeof *out * (size_t)(a->nnz + 1));
    double *want = malloc(sizeof *want * (size_t)(a->nnz + 1));
    int32_t *rws = malloc(sizeof *rws * (size_t)(a->nnz + 1));
    sp_view v[9];
    bool search = rows == TEX_SP_ROWS_SEARCH;
    sp_run r = {"masked",
                7,
                {search ? tex_sp_indptr(c.J) : tex_sp_rows(c.J), tex_sp_indices(c.J),
                 tex_sp_values(c.A), tex_sp_indptr(JB), tex_sp_indices(JB), tex_sp_values(B), o},
                {search ? sp_i32(&v[0], a->indptr, a->m + 1) : sp_i32(&v[0], rws, a->nnz),
                 sp_i32(&v[1], a->indices, a->nnz), sp_f32(&v[2], a->values, 1, a->nnz, 0),
                 sp_i32(&v[3], b->indptr, b->m + 1), sp_i32(&v[4], b->indices, b->nnz),
                 sp_f32(&v[5], b->values, 1, b->nnz, 0), sp_f32(&v[6], out, 1, a->nnz, 0)},
                out,
                want,
                a->nnz};
    TT_EQ_INT(tex_sp_fill_rows(sp_i32(&v[7], a->indptr, a->m + 1), sp_i32(&v[8], rws, a->nnz)), 0);
    float *bd = sp_csr_dense(b, a->m);
    sp_masked_ref(a, bd, want);
    tex_kernel *k = run_both(ctx, s, &r);
    int64_t row = 0; /* a row of B with two entries: unsorted, then repeated (with no
                        non-zeros in A, the kernel searches nothing and checks nothing) */
    while (row < b->m && b->indptr[row + 1] - b->indptr[row] < 2)
        row++;
    if (k && row < b->m && a->nnz > 0) {
        int32_t *e = b->indices + b->indptr[row], e0 = e[0], e1 = e[1];
        e[0] = e1;
        e[1] = e0;
        expect_refused(k, &r, "JB_indices");
        e[1] = e1;
        expect_refused(k, &r, "JB_indices");
        e[0] = e0;
    }
    tex_kernel_free(k);
    free(bd);
    free(out);
    free(want);
    free(rws);
    tex_ctx_free(ctx);
}

static void test_masked(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int v = 0; v < 4; v++) {
            const sp_case *k = &cases[i];
            bool own_root = v >= 2;
            sp_csr a = sp_csr_random(k->m, k->n, k->avg, k->p, 51 + i);
            /* B denser, over fewer rows when it has a root of its own */
            int64_t mb = own_root && k->m > 2 ? k->m - 2 : k->m;
            sp_csr b = sp_csr_random(mb, k->n, k->avg * 2 + 1, SP_UNIFORM, 61 + i);
            run_masked(&a, &b, v % 2, own_root, v % 2 ? TEX_SP_ROWS_SEARCH : TEX_SP_ROWS_ARRAY,
                       (i + (size_t)v) % 3 == 0);
            sp_csr_free(&a);
            sp_csr_free(&b);
        }
}

/* ------------------------------------------- SpMM, X sparse at coordinates */

/* Y = A X with X a CSR matrix over [n, f] (xs) read at (J, K). */
static void run_spmm_sparse_x(const sp_csr *a, const sp_csr *xs, bool sym)
{
    sp_fmt c;
    tex_ctx *ctx;
    tex_sp_axis *KX;
    tex_sp_buffer *X;
    tex_tensor *y = sp_spmm_sparse_x(&ctx, &c, a, xs, sym, sym, &KX, &X);
    tex_schedule *s = y ? tex_schedule_new(ctx, 1, &y) : NULL;
    if (!s) {
        TT_FAILF("spmm, sparse X: %s", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return;
    }
    tex_stage *st = tex_stage_of(s, y);
    tex_iter *ko, *ki;
    TT_EQ_INT(tex_split(st, tex_op_axis(st, 1), tex_int(ctx, 4), &ko, &ki), 0);
    TT_EQ_INT(
        tex_reorder(st, 4, (tex_iter *[]){tex_op_axis(st, 0), ko, tex_op_reduce_axis(st, 0), ki}),
        0);
    TT_EQ_INT(tex_parallel(st, tex_op_axis(st, 0)), 0);
    TT_EQ_INT(tex_vectorize(st, ki), 0);
    int64_t f = xs->n;
    float *out = malloc(sizeof *out * (size_t)(a->m * f + 1));
    double *want = malloc(sizeof *want * (size_t)(a->m * f + 1));
    sp_view v[7];
    sp_run r = {"spmm_sparse_x",
                7,
                {tex_sp_indptr(c.J), tex_sp_indices(c.J), tex_sp_values(c.A), tex_sp_indptr(KX),
                 tex_sp_indices(KX), tex_sp_values(X), y},
                {sp_i32(&v[0], a->indptr, a->m + 1), sp_i32(&v[1], a->indices, a->nnz),
                 sp_f32(&v[2], a->values, 1, a->nnz, 0), sp_i32(&v[3], xs->indptr, xs->m + 1),
                 sp_i32(&v[4], xs->indices, xs->nnz), sp_f32(&v[5], xs->values, 1, xs->nnz, 0),
                 sp_f32(&v[6], out, 2, a->m, f)},
                out,
                want,
                a->m * f};
    float *xd = sp_csr_dense(xs, xs->m);
    sp_spmm_ref(a, xd, f, want);
    tex_kernel_free(run_both(ctx, s, &r));
    free(xd);
    free(out);
    free(want);
    tex_ctx_free(ctx);
}

static void test_spmm_sparse_x(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int sym = 0; sym < 2; sym++) {
            const sp_case *k = &cases[i];
            sp_csr a = sp_csr_random(k->m, k->n, k->avg, k->p, 71 + i);
            sp_csr xs = sp_csr_random(k->n, k->f, 1 + k->f / 3.0, SP_EMPTY_ROWS, 81 + i);
            run_spmm_sparse_x(&a, &xs, sym);
            sp_csr_free(&a);
            sp_csr_free(&xs);
        }
}

/* ---------------------------------------------------------- sparse_reorder */

/* SpMM in loop order `order` (3 of I, J, K): the stage starts in it. */
static void run_spmm_order(const sp_csr *a, int64_t f, bool sym, int order_kind)
{
    sp_fmt c;
    tex_ctx *ctx = sp_fmt_new(&c, a, f, sym);
    c.X = tex_placeholder(ctx, "X", TEX_F32, 2, (tex_expr *[]){c.n, c.f});
    tex_expr *body = tex_mul(tex_sp_at(c.A, 2, (tex_sp_axis *[]){c.I, c.J}),
                             TEX_AT(c.X, tex_sp_coord(c.J), tex_sp_coord(c.K)));
    tex_sp_iter *it =
        tex_sp_iter_new(ctx, "Y", 3, (tex_sp_axis *[]){c.I, c.J, c.K}, "SRS", NULL, body);
    tex_sp_axis *order[2][3] = {{c.I, c.J, c.K}, {c.K, c.I, c.J}};
    TT_EQ_INT(tex_sp_reorder(it, 3, order[order_kind]), 0);
    tex_tensor *y = tex_sp_iter_lower(it);
    tex_schedule *s = y ? tex_schedule_new(ctx, 1, &y) : NULL;
    if (!s) {
        TT_FAILF("spmm, reordered: %s", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return;
    }
    tex_stage *st = tex_stage_of(s, y);
    tex_iter *i = tex_op_axis(st, 0), *k = tex_op_axis(st, 1), *j = tex_op_reduce_axis(st, 0);
    tex_iter *want_order[2][3] = {{i, j, k}, {k, i, j}};
    TT_EQ_INT(tex_stage_naxes(st), 3);
    for (int d = 0; d < 3; d++)
        TT_CHECK(tex_stage_axis(st, d) == want_order[order_kind][d]);
    if (order_kind == 0) { /* rows in parallel, the innermost features vectorized */
        TT_EQ_INT(tex_parallel(st, i), 0);
        TT_EQ_INT(tex_vectorize(st, k), 0);
    }
    float *x = sp_random_floats(a->n * f, 9), *out = malloc(sizeof *out * (size_t)(a->m * f + 1));
    double *want = malloc(sizeof *want * (size_t)(a->m * f + 1));
    sp_view v[5];
    sp_run r = {"spmm_reordered",
                5,
                {tex_sp_indptr(c.J), tex_sp_indices(c.J), tex_sp_values(c.A), c.X, y},
                {sp_i32(&v[0], a->indptr, a->m + 1), sp_i32(&v[1], a->indices, a->nnz),
                 sp_f32(&v[2], a->values, 1, a->nnz, 0), sp_f32(&v[3], x, 2, a->n, f),
                 sp_f32(&v[4], out, 2, a->m, f)},
                out,
                want,
                a->m * f};
    sp_spmm_ref(a, x, f, want);
    tex_kernel_free(run_both(ctx, s, &r));
    free(x);
    free(out);
    free(want);
    tex_ctx_free(ctx);
}

/* SDDMM with its reduction K outside the fused loop over non-zeros. */
static void run_sddmm_k_outer(const sp_csr *a, int64_t f, bool sym)
{
    sp_fmt c;
    tex_ctx *ctx = sp_fmt_new(&c, a, f, sym);
    tex_sp_iter *it = sp_fmt_sddmm_iter(&c, TEX_SP_ROWS_SEARCH);
    TT_EQ_INT(tex_sp_reorder(it, 3, (tex_sp_axis *[]){c.K, c.I, c.J}), 0);
    tex_tensor *o = tex_sp_iter_lower(it);
    tex_schedule *s = o ? tex_schedule_new(ctx, 1, &o) : NULL;
    if (!s) {
        TT_FAILF("sddmm, k outer: %s", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return;
    }
    tex_stage *st = tex_stage_of(s, o);
    TT_CHECK(tex_stage_axis(st, 0) == tex_op_reduce_axis(st, 0));
    sddmm_check(ctx, &c, a, f, s, o, "sddmm_k_outer", 4);
    tex_ctx_free(ctx);
}

static void test_reorder(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int sym = 0; sym < 2; sym++) {
            const sp_case *k = &cases[i];
            sp_csr a = sp_csr_random(k->m, k->n, k->avg, k->p, 91 + i);
            run_spmm_order(&a, k->f, sym, (int)(i + (size_t)sym) % 2);
            run_sddmm_k_outer(&a, k->f, sym);
            sp_csr_free(&a);
        }
}

/* ------------------------------------------------------------------ errors */

static void test_errors(void)
{
    tex_ctx *ctx = tex_ctx_new();
    sp_fmt c;
    sp_fmt_init(&c, ctx, tex_int(ctx, 4), tex_int(ctx, 5), tex_int(ctx, 6), tex_int(ctx, 3));
    tex_expr *a = tex_sp_at(c.A, 2, (tex_sp_axis *[]){c.I, c.J});
    tex_sp_axis *IJK[] = {c.I, c.J, c.K};
    tex_sp_iter *it = tex_sp_iter_new(ctx, "Y", 3, IJK, "SRS", NULL, a);
    TT_CHECK(it != NULL);
    TT_EQ_INT(tex_sp_reorder(it, 3, (tex_sp_axis *[]){c.J, c.I, c.K}), TEX_EINVAL);
    oc_expect_error(ctx, NULL, TEX_EINVAL, "tex_sp_reorder", "'Y'", "'J'", "parent", NULL);
    TT_EQ_INT(tex_sp_reorder(it, 2, IJK), TEX_EINVAL);
    oc_expect_error(ctx, NULL, TEX_EINVAL, "tex_sp_reorder", "'Y'", "3 axes", NULL);
    TT_EQ_INT(tex_sp_reorder(it, 3, (tex_sp_axis *[]){c.I, c.I, c.K}), TEX_EINVAL);
    oc_expect_error(ctx, NULL, TEX_EINVAL, "tex_sp_reorder", "'I'", "twice", NULL);
    tex_sp_axis *L = tex_sp_dense_fixed(ctx, "L", NULL, tex_int(ctx, 2));
    TT_EQ_INT(tex_sp_reorder(it, 3, (tex_sp_axis *[]){c.I, c.J, L}), TEX_EINVAL);
    oc_expect_error(ctx, NULL, TEX_EINVAL, "tex_sp_reorder", "'L'", "not an axis", NULL);
    TT_EQ_INT(tex_sp_reorder(NULL, 3, IJK), TEX_EMISUSE);
    TT_EQ_INT(tex_sp_iter_rows(it, TEX_SP_ROWS_SEARCH), TEX_EINVAL);
    oc_expect_error(ctx, NULL, TEX_EINVAL, "tex_sp_iter_rows", "'Y'", "dense output", NULL);
    TT_EQ_INT(tex_sp_iter_rows(NULL, TEX_SP_ROWS_SEARCH), TEX_EMISUSE);
    /* the sparse output's fused pair stays together; an unknown rows mode */
    tex_sp_iter *sd = sp_fmt_sddmm_iter(&c, TEX_SP_ROWS_ARRAY);
    TT_EQ_INT(tex_sp_reorder(sd, 3, (tex_sp_axis *[]){c.I, c.K, c.J}), TEX_EINVAL);
    oc_expect_error(ctx, NULL, TEX_EINVAL, "tex_sp_reorder", "'sddmm'", "'J'", "fused", NULL);
    TT_EQ_INT(tex_sp_iter_rows(sd, (tex_sp_rows_mode)7), TEX_EINVAL);
    oc_expect_error(ctx, NULL, TEX_EINVAL, "tex_sp_iter_rows", "'sddmm'", "mode", NULL);
    /* tex_sp_iter_new checks as tex_sp_iteration does; tex_sp_at's axes */
    oc_expect_error(
        ctx, (tex_tensor *)tex_sp_iter_new(ctx, "Y", 2, (tex_sp_axis *[]){c.J, c.I}, "RS", NULL, a),
        TEX_EINVAL, "tex_sp_iter_new", "'J'", "parent", NULL);
    oc_expect_error(ctx, (tex_tensor *)tex_sp_at(c.A, 2, (tex_sp_axis *[]){c.I, NULL}), TEX_EMISUSE,
                    "tex_sp_at", NULL);
    TT_CHECK(tex_sp_iter_lower(NULL) == NULL);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("cannot create a cache directory\n");
        return 1;
    }
    TT_RUN(test_sddmm_search);
    TT_RUN(test_masked);
    TT_RUN(test_spmm_sparse_x);
    TT_RUN(test_reorder);
    TT_RUN(test_errors);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
