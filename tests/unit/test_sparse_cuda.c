/*
 * Sparse iterations on the GPU path (docs/testing.md, "CUDA without a
 * GPU"): CSR SpMM with rows bound to blocks and features to threads, and
 * SDDMM with the fused loop over non-zeros split over blocks and threads.
 * Each kernel is (1) emitted as CUDA and compiled to PTX by NVRTC for sm_80
 * when NVRTC is present, (2) run by the CUDA emulation harness
 * (tests/support/cuda_emu.h) and (3) built for the CPU through gpu_to_cpu
 * and run, each on random matrices (empty rows, a dense row, power-law
 * rows; constant and symbolic sizes) against the dense reference, outputs
 * poisoned first. Hyb SpMM too: every part with its rows on blocks and
 * features on threads, all parts in one function. Binary searches too:
 * SDDMM finding its rows in indptr (no rows array), and SpMM over a sparse
 * X read at coordinates (each X row searched for the feature). Sparse
 * convolution too: output sites on blocks, output channels on threads.
 */
#include "tt.h"
#include "backend_cuda/cuda_driver.h"
#include "support/cuda_emu.h"
#include "support/opcheck.h"
#include "support/sparse.h"

static char cache_dir[] = "/tmp/tex-test-sparse-cuda-XXXXXX";

static void sp_check_out(const char *what, const float *got, const double *want, int64_t n)
{
    int64_t q = sp_first_mismatch(got, want, n, 1e-4);
    if (q >= 0)
        TT_FAILF("%s: element %lld is %.7g, expected %.7g", what, (long long)q, got[q], want[q]);
}

enum { MAX_ARGS = 48 };

typedef struct {
    const sp_csr *a;
    int64_t f;
    tex_func *fn;
    int n_args;
    DLTensor *arr[MAX_ARGS];
    float *out;
    const double *want;
    int64_t n_out;
} gpu_case;

/* The kernel of c->fn built for the CUDA emulator and for the CPU
 * (gpu_to_cpu), each run on c's arrays; NVRTC's PTX checked when present. */
static void run_targets(const char *what, gpu_case *c, tex_ctx *ctx)
{
    tex_value vals[MAX_ARGS];
    for (int i = 0; i < c->n_args; i++)
        vals[i] = (tex_value){.kind = TEX_VAL_TENSOR, .t = c->arr[i]};
    tex_kernel *cu = tex_build(c->fn, "cuda -emit-only -arch=sm_80");
    if (!cu) {
        TT_FAILF("%s: cuda: %s", what, tex_errmsg(ctx));
        return;
    }
    if (texi_nvrtc_available() && !tex_kernel_ptx(cu))
        TT_FAILF("%s: NVRTC is present but gave no PTX", what);
    if (texi_nvrtc_available() && !strstr(tex_kernel_ptx(cu), ".entry"))
        TT_FAILF("%s: the PTX has no kernel entry", what);
    char err[512];
    cuda_emu *e =
        cuda_emu_have_cxx() ? cuda_emu_build(tex_kernel_source(cu), err, sizeof err) : NULL;
    if (e) {
        char rerr[512];
        for (int64_t q = 0; q < c->n_out; q++)
            c->out[q] = NAN;
        if (cuda_emu_run(e, cu, c->n_args, vals, rerr, sizeof rerr) != 0)
            TT_FAILF("%s: emulation: %s", what, rerr);
        else
            sp_check_out(what, c->out, c->want, c->n_out);
        cuda_emu_free(e);
    }
    tex_kernel_free(cu);
    tex_kernel *cpu = tex_build(c->fn, "cpu");
    if (!cpu) {
        TT_FAILF("%s: gpu_to_cpu: %s", what, tex_errmsg(ctx));
        return;
    }
    for (int64_t q = 0; q < c->n_out; q++)
        c->out[q] = NAN;
    TT_EQ_INT(tex_kernel_call(cpu, c->n_args, vals), 0);
    sp_check_out(what, c->out, c->want, c->n_out);
    tex_kernel_free(cpu);
}

/* SpMM: rows on blocks, features on threads, the ragged loop inside. */
static void run_spmm(const sp_csr *a, int64_t f, bool sym)
{
    sp_fmt c;
    tex_ctx *ctx = sp_fmt_new(&c, a, f, sym);
    tex_tensor *y = sp_fmt_spmm(&c);
    tex_schedule *s = tex_schedule_new(ctx, 1, &y);
    tex_stage *st = tex_stage_of(s, y);
    TT_EQ_INT(tex_bind(st, tex_op_axis(st, 0), TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, tex_op_axis(st, 1), TEX_THREAD_X), 0);
    tex_tensor *args[] = {tex_sp_indptr(c.J), tex_sp_indices(c.J), tex_sp_values(c.A), c.X, y};
    float *x = sp_random_floats(a->n * f, 3), *out = malloc(sizeof *out * (size_t)(a->m * f + 1));
    double *want = malloc(sizeof *want * (size_t)(a->m * f + 1));
    sp_view v[5];
    gpu_case g = {a,
                  f,
                  tex_lower_tensors(s, "spmm", 5, args),
                  5,
                  {sp_i32(&v[0], a->indptr, a->m + 1), sp_i32(&v[1], a->indices, a->nnz),
                   sp_f32(&v[2], a->values, 1, a->nnz, 0), sp_f32(&v[3], x, 2, a->n, f),
                   sp_f32(&v[4], out, 2, a->m, f)},
                  out,
                  want,
                  a->m * f};
    sp_spmm_ref(a, x, f, want);
    if (g.fn)
        run_targets("spmm", &g, ctx);
    else
        TT_FAILF("spmm: %s", tex_errmsg(ctx));
    free(x);
    free(out);
    free(want);
    tex_ctx_free(ctx);
}

/* SDDMM: the fused loop over non-zeros split by 32 over blocks and
 * threads; its rows read from J_rows, or searched in J_indptr. */
static void run_sddmm(const sp_csr *a, int64_t f, bool sym, tex_sp_rows_mode mode)
{
    sp_fmt c;
    tex_ctx *ctx = sp_fmt_new(&c, a, f, sym);
    tex_tensor *o = tex_sp_iter_lower(sp_fmt_sddmm_iter(&c, mode));
    tex_schedule *s = tex_schedule_new(ctx, 1, &o);
    tex_stage *st = tex_stage_of(s, o);
    tex_iter *po, *pi;
    TT_EQ_INT(tex_split(st, tex_op_axis(st, 0), tex_int(ctx, 32), &po, &pi), 0);
    TT_EQ_INT(tex_bind(st, po, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, pi, TEX_THREAD_X), 0);
    bool search = mode == TEX_SP_ROWS_SEARCH;
    tex_tensor *args[] = {tex_sp_indices(c.J), search ? tex_sp_indptr(c.J) : tex_sp_rows(c.J), c.X,
                          c.Y, o};
    float *x = sp_random_floats(a->m * f, 4), *y = sp_random_floats(a->n * f, 5);
    float *out = malloc(sizeof *out * (size_t)(a->nnz + 1));
    double *want = malloc(sizeof *want * (size_t)(a->nnz + 1));
    int32_t *rows = malloc(sizeof *rows * (size_t)(a->nnz + 1));
    sp_view v[7];
    gpu_case g = {a,
                  f,
                  tex_lower_tensors(s, "sddmm", 5, args),
                  5,
                  {sp_i32(&v[0], a->indices, a->nnz),
                   search ? sp_i32(&v[1], a->indptr, a->m + 1) : sp_i32(&v[1], rows, a->nnz),
                   sp_f32(&v[2], x, 2, a->m, f), sp_f32(&v[3], y, 2, a->n, f),
                   sp_f32(&v[4], out, 1, a->nnz, 0)},
                  out,
                  want,
                  a->nnz};
    TT_EQ_INT(tex_sp_fill_rows(sp_i32(&v[5], a->indptr, a->m + 1), sp_i32(&v[6], rows, a->nnz)), 0);
    sp_sddmm_ref(a, x, y, f, want);
    if (g.fn)
        run_targets("sddmm", &g, ctx);
    else
        TT_FAILF("sddmm: %s", tex_errmsg(ctx));
    free(x);
    free(y);
    free(out);
    free(want);
    free(rows);
    tex_ctx_free(ctx);
}

/* Hyb SpMM (max width 4): in every part rows on blocks, features on
 * threads (the remainder's split by 2, so the parts' block sizes differ),
 * a bucket's fixed width unrolled; one function, and one CUDA kernel (its
 * parts fused horizontally, pass hfuse), for all parts. */
static void run_hyb(const sp_csr *a, int64_t f, bool sym)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *parts[4], *params[MAX_ARGS];
    tex_expr *m = sym ? tex_var(ctx, "m", TEX_I64) : tex_int(ctx, a->m);
    tex_expr *n = sym ? tex_var(ctx, "n", TEX_I64) : tex_int(ctx, a->n);
    tex_tensor *x = tex_placeholder(ctx, "X", TEX_F32, 2, (tex_expr *[]){n, tex_int(ctx, f)});
    tex_tensor *y = tex_sp_hyb_spmm(ctx, "Y", 4, m, x, parts, params);
    tex_schedule *s = y ? tex_schedule_new(ctx, 1, &y) : NULL;
    for (int p = 0; s && p < 4; p++) {
        tex_stage *st = tex_stage_of(s, parts[p]);
        tex_iter *k = tex_op_axis(st, 1), *ko;
        TT_EQ_INT(tex_bind(st, tex_op_axis(st, 0), TEX_BLOCK_X), 0);
        if (p == 3)
            TT_EQ_INT(tex_split(st, tex_op_axis(st, 1), tex_int(ctx, 2), &ko, &k), 0);
        TT_EQ_INT(tex_bind(st, k, TEX_THREAD_X), 0);
        if (p < 3)
            TT_EQ_INT(tex_unroll(st, tex_op_reduce_axis(st, 0)), 0);
    }
    sp_view v[5];
    gpu_case g = {a,    f,       s ? tex_lower_tensors(s, "hyb_spmm", 15, params) : NULL,
                  15,   {0},     NULL,
                  NULL, a->m * f};
    tex_sp_hyb *h = tex_sp_hyb_convert(ctx, a->n, sp_i32(&v[0], a->indptr, a->m + 1),
                                       sp_i32(&v[1], a->indices, a->nnz),
                                       sp_f32(&v[2], a->values, 1, a->nnz, 0), 4);
    float *xd = sp_random_floats(a->n * f, 6);
    g.out = malloc(sizeof *g.out * (size_t)(a->m * f + 1));
    double *want = malloc(sizeof *want * (size_t)(a->m * f + 1));
    g.want = want;
    TT_EQ_INT(h ? tex_sp_hyb_arrays(h, 13, g.arr) : -1, 0);
    g.arr[13] = sp_f32(&v[3], xd, 2, a->n, f);
    g.arr[14] = sp_f32(&v[4], g.out, 2, a->m, f);
    sp_spmm_ref(a, xd, f, want);
    tex_kernel *cu = g.fn ? tex_build(g.fn, "cuda -emit-only -arch=sm_80") : NULL;
    TT_CHECK(cu && strstr(tex_kernel_source(cu), "hyb_spmm_kernel0") &&
             !strstr(tex_kernel_source(cu), "hyb_spmm_kernel1"));
    tex_kernel_free(cu);
    if (g.fn && h)
        run_targets("hyb spmm", &g, ctx);
    else
        TT_FAILF("hyb spmm: %s", tex_errmsg(ctx));
    tex_sp_hyb_free(h);
    free(xd);
    free(g.out);
    free(want);
    tex_ctx_free(ctx);
}

/* SpMM Y = A X with X a CSR matrix over [n, f] (xs) read at (J, K): rows
 * on blocks, features on threads, each thread searching X's row. */
static void run_spmm_sparse_x(const sp_csr *a, const sp_csr *xs, bool sym)
{
    sp_fmt c;
    tex_ctx *ctx;
    tex_sp_axis *KX;
    tex_sp_buffer *X;
    tex_tensor *y = sp_spmm_sparse_x(&ctx, &c, a, xs, sym, false, &KX, &X);
    tex_schedule *s = tex_schedule_new(ctx, 1, &y);
    tex_stage *st = tex_stage_of(s, y);
    TT_EQ_INT(tex_bind(st, tex_op_axis(st, 0), TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, tex_op_axis(st, 1), TEX_THREAD_X), 0);
    tex_tensor *args[] = {tex_sp_indptr(c.J),
                          tex_sp_indices(c.J),
                          tex_sp_values(c.A),
                          tex_sp_indptr(KX),
                          tex_sp_indices(KX),
                          tex_sp_values(X),
                          y};
    int64_t f = xs->n;
    float *out = malloc(sizeof *out * (size_t)(a->m * f + 1)), *xd = sp_csr_dense(xs, xs->m);
    double *want = malloc(sizeof *want * (size_t)(a->m * f + 1));
    sp_view v[7];
    gpu_case g = {a,
                  f,
                  tex_lower_tensors(s, "spmm_sparse_x", 7, args),
                  7,
                  {sp_i32(&v[0], a->indptr, a->m + 1), sp_i32(&v[1], a->indices, a->nnz),
                   sp_f32(&v[2], a->values, 1, a->nnz, 0), sp_i32(&v[3], xs->indptr, xs->m + 1),
                   sp_i32(&v[4], xs->indices, xs->nnz), sp_f32(&v[5], xs->values, 1, xs->nnz, 0),
                   sp_f32(&v[6], out, 2, a->m, f)},
                  out,
                  want,
                  a->m * f};
    sp_spmm_ref(a, xd, f, want);
    if (g.fn)
        run_targets("spmm, sparse X", &g, ctx);
    else
        TT_FAILF("spmm, sparse X: %s", tex_errmsg(ctx));
    free(xd);
    free(out);
    free(want);
    tex_ctx_free(ctx);
}

/* Sparse convolution (gather-GEMM-scatter over pairs grouped by output
 * site, tests/support/sparse.h): output sites on blocks, output channels
 * on threads, the pairs' ragged loop and the input channels inside. */
static void run_sparse_conv(const sp_rulebook *r, int64_t cin, int64_t cout, bool sym)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *args[6];
    tex_tensor *out = sp_sparse_conv(ctx, r, cin, cout, sym, args);
    tex_schedule *s = out ? tex_schedule_new(ctx, 1, &out) : NULL;
    tex_stage *st = s ? tex_stage_of(s, out) : NULL;
    if (st) {
        TT_EQ_INT(tex_reorder(st, 2, (tex_iter *[]){tex_op_axis(st, 0), tex_op_axis(st, 1)}), 0);
        TT_EQ_INT(tex_bind(st, tex_op_axis(st, 0), TEX_BLOCK_X), 0);
        TT_EQ_INT(tex_bind(st, tex_op_axis(st, 1), TEX_THREAD_X), 0);
    }
    float *x = sp_random_floats(r->sites * cin, 5), *w = sp_random_floats(SP_KV * cin * cout, 6);
    float *y = malloc(sizeof *y * (size_t)(r->sites * cout + 1));
    double *want = malloc(sizeof *want * (size_t)(r->sites * cout + 1));
    sp_view v[6];
    int64_t wshape[3];
    gpu_case g = {.f = cout,
                  .fn = s ? tex_lower_tensors(s, "sparse_conv", 6, args) : NULL,
                  .n_args = 6,
                  .out = y,
                  .want = want,
                  .n_out = r->sites * cout};
    sp_sparse_conv_arrays(r, x, w, y, cin, cout, v, wshape, g.arr);
    sp_sparse_conv_ref(r, x, w, cin, cout, want);
    if (g.fn)
        run_targets("sparse conv", &g, ctx);
    else
        TT_FAILF("sparse conv: %s", tex_errmsg(ctx));
    free(x);
    free(w);
    free(y);
    free(want);
    tex_ctx_free(ctx);
}

static void test_sparse_conv_gpu(void)
{
    const struct {
        int64_t g, cin, cout;
        double fill;
    } convs[] = {{1, 1, 1, 1.0}, {4, 3, 8, 0.5}, {5, 7, 32, 0.3}};
    for (size_t i = 0; i < sizeof convs / sizeof *convs; i++)
        for (int sym = 0; sym < 2; sym++) {
            sp_rulebook r = sp_rulebook_random(convs[i].g, convs[i].fill, 53 + i);
            run_sparse_conv(&r, convs[i].cin, convs[i].cout, sym);
            sp_rulebook_free(&r);
        }
}

static const struct {
    int64_t m, n, f;
    double avg;
    sp_pattern p;
} cases[] = {{1, 1, 1, 1, SP_UNIFORM},
             {7, 5, 3, 2, SP_EMPTY_ROWS},
             {13, 17, 11, 3, SP_DENSE_ROW},
             {41, 37, 8, 4, SP_POWER_LAW}};

static void test_spmm_gpu(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int sym = 0; sym < 2; sym++) {
            sp_csr a = sp_csr_random(cases[i].m, cases[i].n, cases[i].avg, cases[i].p, 31 + i);
            run_spmm(&a, cases[i].f, sym);
            sp_csr_free(&a);
        }
}

static void test_hyb_gpu(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sp_csr a = sp_csr_random(cases[i].m, cases[i].n, cases[i].avg, cases[i].p, 29 + i);
        run_hyb(&a, cases[i].f, i % 2);
        sp_csr_free(&a);
    }
}

static void test_sddmm_gpu(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int sym = 0; sym < 2; sym++) {
            sp_csr a = sp_csr_random(cases[i].m, cases[i].n, cases[i].avg, cases[i].p, 37 + i);
            run_sddmm(&a, cases[i].f, sym, TEX_SP_ROWS_ARRAY);
            run_sddmm(&a, cases[i].f, sym, TEX_SP_ROWS_SEARCH);
            sp_csr_free(&a);
        }
}

static void test_search_gpu(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int sym = 0; sym < 2; sym++) {
            sp_csr a = sp_csr_random(cases[i].m, cases[i].n, cases[i].avg, cases[i].p, 43 + i);
            sp_csr xs =
                sp_csr_random(cases[i].n, cases[i].f, 1 + cases[i].f / 3.0, SP_EMPTY_ROWS, 47 + i);
            run_spmm_sparse_x(&a, &xs, sym);
            sp_csr_free(&a);
            sp_csr_free(&xs);
        }
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("cannot create a cache directory\n");
        return 1;
    }
    TT_RUN(test_spmm_gpu);
    TT_RUN(test_sddmm_gpu);
    TT_RUN(test_hyb_gpu);
    TT_RUN(test_search_gpu);
    TT_RUN(test_sparse_conv_gpu);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
