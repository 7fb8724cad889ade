/*
 * Format decomposition "hyb" (src/sparse/hyb.c, hyb_spmm.c, ir/scatter.c):
 * CSR matrices converted into ELL buckets of widths 1, 2, 4, ..., W plus a
 * CSR remainder, and SpMM over them as one kernel whose parts store their
 * rows of Y through row ids. Each part is scheduled with ordinary
 * primitives (rows in parallel, a chunk of features accumulated in a local
 * buffer and vectorized, a bucket's fixed width unrolled) and the kernel,
 * JIT-compiled for 2 threads, runs on random matrices (empty rows, one dense
 * row, power-law rows, 1-sized and prime shapes, constant and symbolic
 * sizes, several max widths) against a dense reference computed from the
 * CSR arrays (tests/support/sparse.h) and against the oracle, outputs
 * poisoned first; one kernel also serves a second matrix, and parts of
 * thousands of rows hand their rows out in shares. Then the layout
 * of a small conversion, malformed CSR refused by the conversion, a bad row
 * id refused at call time (nothing written), and the API's error paths.
 */
#include "tt.h"
#include "support/opcheck.h"
#include "support/sparse.h"

static char cache_dir[] = "/tmp/tex-test-sparse-hyb-XXXXXX";

enum { MAX_PARTS = 12, MAX_PARAMS = 3 * MAX_PARTS + 3 };

/* A hyb SpMM kernel and what it was built from. */
typedef struct {
    tex_ctx *ctx;
    int max_width, n_parts, n_params;
    tex_tensor *parts[MAX_PARTS], *params[MAX_PARAMS];
    const char *target; /* tex_build's target; NULL: "cpu -threads=2" */
    tex_kernel *k;
} hyb_fn;

/* Builds hyb SpMM for an m x n matrix and f features (sizes symbolic or
 * constant): every part scheduled by sp_hyb_schedule_part with feature
 * chunks of `chunk` (half of it per accumulator), every other part's rows
 * 4 at a time, buckets up to width 16 unrolled, X's rows prefetched 0, 7
 * or 14 non-zeros ahead and the other parts' stores 3 rows ahead
 * (tex_prefetch); the schedule made over Y alone or over every part.
 */
static bool build(hyb_fn *h, const sp_csr *a, int64_t f, int max_width, bool sym, int chunk)
{
    tex_ctx *ctx = h->ctx = tex_ctx_new();
    h->max_width = max_width;
    h->n_parts = tex_sp_hyb_nparts(max_width);
    h->n_params = tex_sp_hyb_narrays(max_width) + 2;
    tex_expr *m = sym ? tex_var(ctx, "m", TEX_I64) : tex_int(ctx, a->m);
    tex_expr *n = sym ? tex_var(ctx, "n", TEX_I64) : tex_int(ctx, a->n);
    tex_expr *fe = sym ? tex_var(ctx, "f", TEX_I64) : tex_int(ctx, f);
    tex_tensor *x = tex_placeholder(ctx, "X", TEX_F32, 2, (tex_expr *[]){n, fe});
    tex_tensor *y = tex_sp_hyb_spmm(ctx, "Y", max_width, m, x, h->parts, h->params);
    tex_schedule *s = y ? tex_schedule_new(ctx, sym ? 1 : h->n_parts, sym ? &y : h->parts) : NULL;
    for (int p = 0; s && p < h->n_parts; p++)
        if (sp_hyb_schedule_part(s, h->parts[p], p % 2 ? 4 : 0, chunk, chunk / 2,
                                 p + 1 < h->n_parts && p <= 4, x, p % 3 * 7) != 0)
            s = NULL;
        else if (p % 2 == 0 && tex_prefetch(tex_stage_of(s, h->parts[p]), h->parts[p],
                                            tex_op_axis(tex_stage_of(s, h->parts[p]), 0), 3) != 0)
            s = NULL; /* rows not split: the store through the row ids hinted 3 rows ahead */
    tex_func *fn = s ? tex_lower_tensors(s, "hyb_spmm", h->n_params, h->params) : NULL;
    h->k = fn ? tex_build(fn, h->target ? h->target : "cpu -threads=2") : NULL;
    if (!h->k)
        TT_FAILF("hyb spmm (max_width %d): %s", max_width, tex_errmsg(ctx));
    return h->k != NULL;
}

static void check_out(const char *what, const float *got, const double *want, int64_t n)
{
    int64_t q = sp_first_mismatch(got, want, n, 1e-4);
    if (q >= 0)
        TT_FAILF("%s: element %lld is %.7g, expected %.7g", what, (long long)q, got[q], want[q]);
}

/* Converts a, runs h's kernel and the oracle on it, each against the dense
 * reference (outputs poisoned first). */
static void run(hyb_fn *h, const sp_csr *a, int64_t f, uint64_t seed)
{
    sp_view v[5];
    tex_sp_hyb *hy = tex_sp_hyb_convert(h->ctx, a->n, sp_i32(&v[0], a->indptr, a->m + 1),
                                        sp_i32(&v[1], a->indices, a->nnz),
                                        sp_f32(&v[2], a->values, 1, a->nnz, 0), h->max_width);
    TT_CHECK(hy != NULL);
    float *x = sp_random_floats(a->n * f, seed),
          *out = malloc(sizeof *out * (size_t)(a->m * f + 1));
    double *want = malloc(sizeof *want * (size_t)(a->m * f + 1));
    DLTensor *arr[MAX_PARAMS];
    TT_EQ_INT(tex_sp_hyb_arrays(hy, h->n_params - 2, arr), 0);
    arr[h->n_params - 2] = sp_f32(&v[3], x, 2, a->n, f);
    arr[h->n_params - 1] = sp_f32(&v[4], out, 2, a->m, f);
    sp_spmm_ref(a, x, f, want);
    sp_poison(out, a->m * f);
    TT_EQ_INT(tex_kernel_call_tensors(h->k, h->n_params, arr), 0);
    check_out("hyb kernel", out, want, a->m * f);
    sp_poison(out, a->m * f);
    TT_EQ_INT(tex_eval_reference(h->ctx, h->n_params, h->params, arr), 0);
    check_out("hyb oracle", out, want, a->m * f);
    free(x);
    free(out);
    free(want);
    tex_sp_hyb_free(hy);
}

typedef struct {
    int64_t m, n, f;
    double avg;
    sp_pattern p;
    int max_width, chunk;
} hyb_case;

static const hyb_case cases[] = {
    {1, 1, 1, 1, SP_UNIFORM, 1, 4},          {7, 5, 3, 2, SP_EMPTY_ROWS, 2, 4},
    {13, 17, 11, 3, SP_DENSE_ROW, 4, 8},     {61, 53, 16, 4, SP_UNIFORM, 8, 8},
    {97, 89, 19, 6, SP_POWER_LAW, 16, 8},    {5, 3, 8, 0, SP_UNIFORM, 4, 8},
    {200, 300, 33, 5, SP_POWER_LAW, 32, 16}, {131, 127, 9, 9, SP_EMPTY_ROWS, 1024, 8}};

static void test_spmm(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const hyb_case *c = &cases[i];
        sp_csr a = sp_csr_random(c->m, c->n, c->avg, c->p, 31 + i);
        hyb_fn h = {0};
        if (build(&h, &a, c->f, c->max_width, i % 2, c->chunk)) /* constant, symbolic sizes */
            run(&h, &a, c->f, 3 + i);
        tex_kernel_free(h.k);
        tex_ctx_free(h.ctx);
        sp_csr_free(&a);
    }
}

/* One kernel (symbolic sizes) for two matrices of different shapes. */
static void test_kernel_reuse(void)
{
    sp_csr a = sp_csr_random(150, 70, 7, SP_POWER_LAW, 5);
    sp_csr b = sp_csr_random(41, 211, 3, SP_DENSE_ROW, 6);
    hyb_fn h = {0};
    if (build(&h, &a, 12, 8, true, 8)) {
        run(&h, &a, 12, 1);
        run(&h, &b, 12, 2);
    }
    tex_kernel_free(h.k);
    tex_ctx_free(h.ctx);
    sp_csr_free(&a);
    sp_csr_free(&b);
}

/* Parts of thousands of rows, whose row loops the C printer hands out in
 * shares of several rows (docs/sparse.md, "Format decomposition"):
 * tex_chunk of the part's row count (a size variable, sizes constant or
 * not) and the thread count (fixed, or 0: OpenMP's at run time); each
 * kernel against the dense reference and the oracle. */
static void test_row_shares(void)
{
    static const struct {
        bool sym;
        const char *target, *schedule;
    } v[] = {{false, "cpu -threads=2", "schedule(dynamic, tex_chunk(rows_w16, 2)) nowait"},
             {true, "cpu -threads=2", "schedule(dynamic, tex_chunk(rows_w16, 2)) nowait"},
             {true, "cpu", "schedule(dynamic, tex_chunk(rows_w16, 0)) nowait"}};
    sp_csr a = sp_csr_random(5000, 700, 6, SP_POWER_LAW, 8);
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        hyb_fn h = {.target = v[i].target};
        if (build(&h, &a, 20, 16, v[i].sym, 8)) {
            const char *src = tex_kernel_source(h.k);
            TT_CHECK(src && strstr(src, v[i].schedule));
            run(&h, &a, 20, 9 + i);
        }
        tex_kernel_free(h.k);
        tex_ctx_free(h.ctx);
    }
    sp_csr_free(&a);
}

/* The parts of a 5-row matrix, max_width 4: lengths 1, 2, 0, 5, 3. */
static void test_layout(void)
{
    int32_t indptr[] = {0, 1, 3, 3, 8, 11}, indices[] = {4, 0, 2, 0, 1, 2, 3, 5, 1, 3, 5};
    float values[11];
    for (int q = 0; q < 11; q++)
        values[q] = (float)(q + 1);
    tex_ctx *ctx = tex_ctx_new();
    sp_view v[3];
    tex_sp_hyb *h = tex_sp_hyb_convert(ctx, 6, sp_i32(&v[0], indptr, 6), sp_i32(&v[1], indices, 11),
                                       sp_f32(&v[2], values, 1, 11, 0), 4);
    TT_EQ_INT(tex_sp_hyb_nparts(4), 4);
    TT_EQ_INT(tex_sp_hyb_narrays(4), 13);
    DLTensor *arr[13];
    TT_EQ_INT(h ? tex_sp_hyb_arrays(h, 13, arr) : -1, 0);
    if (!h) {
        tex_ctx_free(ctx);
        return;
    }
    const int32_t *w1 = arr[0]->data, *w2 = arr[3]->data, *w4 = arr[6]->data, *w4i = arr[7]->data;
    const float *w4v = arr[8]->data;
    TT_CHECK(arr[0]->shape[0] == 1 && w1[0] == 0 && arr[3]->shape[0] == 1 && w2[0] == 1);
    TT_CHECK(arr[6]->shape[0] == 1 && w4[0] == 4 && arr[7]->shape[0] == 4);
    TT_CHECK(w4i[2] == 5 && w4i[3] == 5 && w4v[2] == 11.0f && w4v[3] == 0.0f); /* padding */
    const int32_t *cr = arr[9]->data, *cp = arr[10]->data, *ci = arr[11]->data;
    TT_CHECK(arr[9]->shape[0] == 2 && cr[0] == 2 && cr[1] == 3);
    TT_CHECK(cp[0] == 0 && cp[1] == 0 && cp[2] == 5 && arr[11]->shape[0] == 5 && ci[4] == 5);
    TT_EQ_INT(tex_sp_hyb_arrays(h, 12, arr), TEX_EINVAL);
    TT_EQ_INT(tex_sp_hyb_arrays(NULL, 13, arr), TEX_EMISUSE);
    tex_sp_hyb_free(h);
    tex_sp_hyb_free(NULL);
    tex_ctx_free(ctx);
}

/* One refused conversion: NULL, TEX_EINVAL, the message naming `array`. */
static void expect_refused(int32_t *indptr, int64_t m, int32_t *indices, float *values, int64_t nnz,
                           int64_t n_cols, const char *array)
{
    tex_ctx *ctx = tex_ctx_new();
    sp_view v[3];
    tex_sp_hyb *h =
        tex_sp_hyb_convert(ctx, n_cols, sp_i32(&v[0], indptr, m + 1), sp_i32(&v[1], indices, nnz),
                           sp_f32(&v[2], values, 1, nnz, 0), 4);
    oc_expect_error(ctx, (tex_tensor *)h, TEX_EINVAL, "tex_sp_hyb_convert", array, NULL);
    tex_sp_hyb_free(h);
    tex_ctx_free(ctx);
}

/* Malformed CSR: each refused by the conversion, naming the array. */
static void test_malformed_csr(void)
{
    int32_t good[] = {0, 2, 3}, start[] = {1, 2, 3}, down[] = {0, 3, 2}, end[] = {0, 2, 2};
    int32_t cols[] = {0, 3, 1}, far[] = {0, 4, 1}, neg[] = {0, -1, 1};
    float vals[] = {1, 2, 3};
    expect_refused(start, 2, cols, vals, 3, 4, "indptr");
    expect_refused(down, 2, cols, vals, 3, 4, "indptr");
    expect_refused(end, 2, cols, vals, 3, 4, "indptr");
    expect_refused(good, 2, far, vals, 3, 4, "indices");
    expect_refused(good, 2, neg, vals, 3, 4, "indices");
    tex_ctx *ctx = tex_ctx_new();
    sp_view v[3];
    DLTensor *ip = sp_i32(&v[0], good, 3), *ix = sp_i32(&v[1], cols, 3);
    DLTensor *va = sp_f32(&v[2], vals, 1, 2, 0); /* one value short */
    oc_expect_error(ctx, (tex_tensor *)tex_sp_hyb_convert(ctx, 4, ip, ix, va, 4), TEX_EINVAL,
                    "tex_sp_hyb_convert", "values", NULL);
    tex_clear_error(ctx);
    va->shape[0] = 3;
    ip->dtype.bits = 64; /* not i32 */
    oc_expect_error(ctx, (tex_tensor *)tex_sp_hyb_convert(ctx, 4, ip, ix, va, 4), TEX_EINVAL,
                    "tex_sp_hyb_convert", "indptr", NULL);
    tex_clear_error(ctx);
    ip->dtype.bits = 32;
    for (int w = 0; w < 3; w++) {
        static const int bad[] = {0, 3, 2048};
        oc_expect_error(ctx, (tex_tensor *)tex_sp_hyb_convert(ctx, 4, ip, ix, va, bad[w]),
                        TEX_EINVAL, "tex_sp_hyb_convert", "max_width", NULL);
        tex_clear_error(ctx);
    }
    oc_expect_error(ctx, (tex_tensor *)tex_sp_hyb_convert(ctx, -1, ip, ix, va, 4), TEX_EINVAL,
                    "tex_sp_hyb_convert", "n_cols", NULL);
    tex_clear_error(ctx);
    oc_expect_error(ctx, (tex_tensor *)tex_sp_hyb_convert(ctx, 4, ip, NULL, va, 4), TEX_EMISUSE,
                    "tex_sp_hyb_convert", "indices", NULL);
    TT_CHECK(tex_sp_hyb_convert(NULL, 4, ip, ix, va, 4) == NULL);
    tex_ctx_free(ctx);
}

/* A row id out of range in the storage: the call is refused naming the
 * rows array, and writes nothing. */
static void test_bad_row_id(void)
{
    sp_csr a = sp_csr_random(23, 19, 3, SP_UNIFORM, 9);
    hyb_fn h = {0};
    sp_view v[5];
    tex_sp_hyb *hy = build(&h, &a, 5, 4, true, 4)
                         ? tex_sp_hyb_convert(h.ctx, a.n, sp_i32(&v[0], a.indptr, a.m + 1),
                                              sp_i32(&v[1], a.indices, a.nnz),
                                              sp_f32(&v[2], a.values, 1, a.nnz, 0), 4)
                         : NULL;
    DLTensor *arr[MAX_PARAMS];
    float *x = sp_random_floats(a.n * 5, 1), out[23 * 5];
    if (hy && tex_sp_hyb_arrays(hy, h.n_params - 2, arr) == 0) {
        arr[h.n_params - 2] = sp_f32(&v[3], x, 2, a.n, 5);
        arr[h.n_params - 1] = sp_f32(&v[4], out, 2, a.m, 5);
        int p = 0;
        while (arr[3 * p]->shape[0] == 0) /* a part with rows */
            p++;
        int32_t *rows = arr[3 * p]->data, saved = rows[0];
        rows[0] = (int32_t)a.m;
        sp_poison(out, a.m * 5);
        TT_EQ_INT(tex_kernel_call_tensors(h.k, h.n_params, arr), TEX_EINVAL);
        TT_CHECK(strstr(tex_kernel_errmsg(h.k), "_rows") != NULL);
        for (int q = 0; q < 23 * 5; q++)
            if (!isnan(out[q])) {
                TT_FAILF("a refused call wrote element %d", q);
                break;
            }
        rows[0] = saved;
        TT_EQ_INT(tex_kernel_call_tensors(h.k, h.n_params, arr), 0);
    }
    free(x);
    tex_sp_hyb_free(hy);
    tex_kernel_free(h.k);
    tex_ctx_free(h.ctx);
    sp_csr_free(&a);
}

/* tex_sp_hyb_spmm's refusals, each with its message. */
static void test_errors(void)
{
    TT_EQ_INT(tex_sp_hyb_nparts(3), 0);
    TT_EQ_INT(tex_sp_hyb_nparts(1), 2);
    TT_EQ_INT(tex_sp_hyb_nparts(1024), 12);
    TT_EQ_INT(tex_sp_hyb_narrays(0), 0);
    tex_tensor *parts[MAX_PARTS], *params[MAX_PARAMS];
    TT_CHECK(tex_sp_hyb_spmm(NULL, "Y", 4, NULL, NULL, parts, params) == NULL);
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *m = tex_int(ctx, 8);
    tex_tensor *x = tex_placeholder(ctx, "X", TEX_F32, 2, (tex_expr *[]){m, m});
    tex_tensor *x1 = tex_placeholder(ctx, "X1", TEX_F32, 1, &m);
    oc_expect_error(ctx, tex_sp_hyb_spmm(ctx, "Y", 6, m, x, parts, params), TEX_EINVAL,
                    "tex_sp_hyb_spmm", "max_width", NULL);
    tex_clear_error(ctx);
    oc_expect_error(ctx, tex_sp_hyb_spmm(ctx, "Y", 4, m, x1, parts, params), TEX_EINVAL,
                    "tex_sp_hyb_spmm", "'X1'", "2-D", NULL);
    tex_clear_error(ctx);
    oc_expect_error(ctx, tex_sp_hyb_spmm(ctx, "Y", 4, tex_const(ctx, TEX_F32, 8), x, parts, params),
                    TEX_ETYPE, "tex_sp_hyb_spmm", "m", NULL);
    tex_clear_error(ctx);
    oc_expect_error(ctx, tex_sp_hyb_spmm(ctx, "Y", 4, m, NULL, parts, params), TEX_EMISUSE,
                    "tex_sp_hyb_spmm", "X", NULL);
    tex_clear_error(ctx);
    oc_expect_error(ctx, tex_sp_hyb_spmm(ctx, "Y", 4, m, x, NULL, params), TEX_EINVAL,
                    "tex_sp_hyb_spmm", "parts", NULL);
    tex_clear_error(ctx);
    oc_expect_error(ctx, tex_sp_hyb_spmm(ctx, "", 4, m, x, parts, params), TEX_EINVAL,
                    "tex_sp_hyb_spmm", "name", NULL);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("cannot create a cache directory\n");
        return 1;
    }
    TT_RUN(test_spmm);
    TT_RUN(test_kernel_reuse);
    TT_RUN(test_row_shares);
    TT_RUN(test_layout);
    TT_RUN(test_malformed_csr);
    TT_RUN(test_bad_row_id);
    TT_RUN(test_errors);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
