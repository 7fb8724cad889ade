/*
 * bench/spmm: SpMM Y = A X and SDDMM O = (X Y^T) at A's non-zeros on a
 * power-law matrix (64k x 64k, about 1M non-zeros, a few rows holding most
 * of them; tests/support/sparse.h), f32, feature widths 64 and 128, on 2
 * threads.
 *
 * SpMM: the tex side is hyb SpMM (tex_sp_hyb_spmm: the matrix decomposed
 * into ELL buckets of widths 1 .. MAX_WIDTH and a CSR remainder for the
 * longer rows, one kernel whose parts each run their rows in parallel,
 * handed out in shares of several rows, accumulate a chunk of up to 64
 * features in registers: per non-zero, its index and value read once and
 * the chunk's groups of LANES features unrolled, each vectorized; a
 * bucket's fixed width unrolled). Its anchors, measured interleaved with
 * it: csr_openmp, the hand-written OpenMP CSR kernel (bench/spmm_hand.c,
 * dynamic row scheduling); csr_tex, tex's CSR SpMM (a sparse iteration, rows
 * in parallel, the ragged loop over a row's non-zeros accumulating into a
 * local buffer, scheduled like a hyb part); and, when librsb (Debian
 * librsb-dev) is installed at build time, library: librsb's rsb_spmm on its
 * own RSB format built from the same CSR (row-major X and Y, 2 threads).
 * Conversions are made once, outside the timings. SDDMM: the fused loop
 * over non-zeros in parallel, the feature reduction vectorized
 * (tex_vectorize_reduce), against the hand-written kernel (anchor openmp).
 *
 * On the 2 cores of an AVX-512 AMD EPYC (X and Y 64-byte aligned,
 * bench_floats), with MAX_WIDTH 8 (five runs): hyb 1.61-1.77x csr_openmp at
 * width 64 and 1.63-1.71x at 128, 0.76-0.82x and 0.88-0.91x csr_tex, 5.3x
 * and 2.5-2.6x librsb; SDDMM 3.3-3.5x and 6.0-6.3x. With MAX_WIDTH 32 (eight
 * runs) hyb took about 10% longer: 1.22-2.13x and 1.36-1.57x csr_openmp
 * (csr_openmp anywhere from 4.3 to 7.6 ms from one process to the next at
 * width 64), 0.70-0.83x csr_tex; MAX_WIDTH 4 measured as 8. With malloc's
 * arrays (16 bytes past a page) hyb took 4.5 ms instead of 3.6 at width 64
 * (MAX_WIDTH 32; 1.39-1.59x csr_openmp, whose time hardly moved); before the
 * call-time index scans ran on AVX-512 (src/rt/index_check.c) they took
 * another 0.9 ms a call. What keeps hyb behind tex's own CSR kernel,
 * measured on the generated C alone: its buckets write Y's rows out of order
 * (written in order, the buckets ran in 0.76x the time) and pad their rows
 * (653k multiply-adds for 494k non-zeros).
 *
 * Measured on the 2 cores of an AVX-512 Xeon (noisy; medians of interleaved
 * runs, three runs): hyb 1.09-1.25x csr_openmp at width 64 and 1.09-1.18x at
 * 128, 0.84-0.89x csr_tex, 2.6-4.0x librsb; tex's CSR kernel alone
 * 1.29-1.47x csr_openmp since its rows are handed out dynamically (pass
 * uneven_parallel; 1.16-1.39x with the even static split before). Not the
 * 1.5x over csr_openmp hyb aims at: each non-zero gathers a row of X (256 or
 * 512 bytes; X is 16 or 32 MiB, the L2 2 MiB a core), which bounds every
 * kernel here, and hyb's buckets add padded multiply-adds and write Y's rows
 * out of order without buying load balance that dynamic row shares do not
 * already give on a CPU: by the widest bucket W, hyb ran at 0.91-0.96x
 * csr_tex with W = 1, 0.91-0.97x with 2 and 4, 0.88-0.92x with 8 and
 * 0.84-0.89x with 32 (docs/sparse.md). What made the difference earlier,
 * measured on hand copies of the generated CSR loop (width 64): the loop
 * order, 1.3x (a non-zero read once per group of 16 features, into one
 * accumulator: one chain of dependent multiply-adds), and rows handed out in
 * shares rather than one at a time, 1.8x (an atomic update of the team's
 * counter per row costs as much as a short row). Software prefetching of X's
 * rows (tex_prefetch at the loop over the non-zeros, SPMM_PREFETCH=16, one
 * hint per 64-byte line) measured within noise of none (tex's CSR kernel
 * 1.25-1.35x csr_openmp with hints, 1.16-1.39x without, width 64; 1.14-1.17x
 * against 1.21-1.31x at 128), so it is off by default.
 *
 * Lines: bench=spmm case=powerlaw64k_fF/t2 anchor=csr_openmp|csr_tex|library
 * and bench=sddmm case=powerlaw64k_fF/t2 anchor=openmp; bench=sddmm_search: SDDMM
 * finding each non-zero's row by a binary search of indptr in the kernel
 * (TEX_SP_ROWS_SEARCH) against the same schedule reading the rows array
 * (anchor tex_rows). Every result is
 * checked against the hand-written kernel's before timing.
 * `spmm --source` prints the C of the hyb, CSR and SDDMM kernels.
 */
#include "common.h"
#include "spmm_hand.h"
#include "support/sparse.h"

#ifdef TEX_HAVE_LIBRSB
#include <rsb.h>
#endif
#include <stdbool.h>
#include <string.h>

#define M 65536
#define THREADS 2
#define CHUNK 64    /* features accumulated in registers per pass over a row */
#define MAX_WIDTH 8 /* the widest ELL bucket of the hyb format (8: see above) */
#define ROWS 0      /* hyb: rows handed to a thread at a time (0: one) */
#define LANES 16    /* features accumulated in registers across a row's non-zeros */
#define PREFETCH 0  /* non-zeros ahead whose row of X is prefetched (0: none; see above) */
#define MAX_ARGS 48

typedef struct {
    const sp_csr *a;
    int64_t f;
    float *x, *y2, *want; /* X [M, f], Y [M, f] (SDDMM), the hand-written kernel's output */
    float *out[3];        /* hyb, csr_tex, library outputs (SDDMM: out[0]) */
    tex_kernel *k[2];     /* hyb (or SDDMM) and csr_tex */
    DLTensor *arr[2][MAX_ARGS];
    int n_arr[2];
    sp_view v[2][6];
    void *rsb; /* librsb's matrix, when built with it */
} sp_case;

static tex_kernel *build(tex_schedule *s, const char *name, int n, tex_tensor *const args[])
{
    char target[32];
    snprintf(target, sizeof target, "cpu -threads=%d", THREADS);
    tex_func *fn = tex_lower_tensors(s, name, n, args);
    return fn ? tex_build(fn, target) : NULL;
}

/* How many non-zeros ahead the SpMM kernels prefetch X's rows
 * (tex_prefetch): $SPMM_PREFETCH, else PREFETCH. */
static int prefetch_distance(void)
{
    const char *e = getenv("SPMM_PREFETCH");
    return e ? atoi(e) : PREFETCH;
}

/* The CSR format of the benchmark's matrix: m x m, m and nnz symbolic. */
static void fmt_init(sp_fmt *c, int64_t f)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *m = tex_var(ctx, "m", TEX_I64);
    sp_fmt_init(c, ctx, m, m, tex_var(ctx, "nnz", TEX_I64), tex_int(ctx, f));
}

/* Hyb SpMM: every part scheduled alike (sp_hyb_schedule_part), each
 * bucket's fixed width unrolled. */
static tex_kernel *build_hyb(int64_t f)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *parts[16], *params[MAX_ARGS];
    tex_expr *m = tex_var(ctx, "m", TEX_I64);
    tex_tensor *x = tex_placeholder(ctx, "X", TEX_F32, 2, (tex_expr *[]){m, tex_int(ctx, f)});
    tex_tensor *y = tex_sp_hyb_spmm(ctx, "Y", MAX_WIDTH, m, x, parts, params);
    int n = tex_sp_hyb_nparts(MAX_WIDTH);
    tex_schedule *s = y ? tex_schedule_new(ctx, 1, &y) : NULL;
    for (int p = 0; s && p < n; p++)
        if (sp_hyb_schedule_part(s, parts[p], ROWS, f < CHUNK ? (int)f : CHUNK, LANES, p + 1 < n, x,
                                 prefetch_distance()))
            s = NULL;
    tex_kernel *k = s ? build(s, "hyb_spmm", tex_sp_hyb_narrays(MAX_WIDTH) + 2, params) : NULL;
    if (!k)
        fprintf(stderr, "hyb spmm: %s\n", tex_errmsg(ctx));
    tex_ctx_free(ctx);
    return k;
}

/* CSR SpMM: rows in parallel; per row and chunk of CHUNK features, the
 * row's non-zeros accumulate into a local (register) buffer, vectorized,
 * which is stored once (cache_write at the chunk loop). */
static tex_kernel *build_csr(int64_t f)
{
    sp_fmt c;
    fmt_init(&c, f);
    tex_tensor *Y = sp_fmt_spmm(&c);
    tex_schedule *s = tex_schedule_new(c.ctx, 1, &Y);
    tex_tensor *args[] = {tex_sp_indptr(c.J), tex_sp_indices(c.J), tex_sp_values(c.A), c.X, Y};
    tex_kernel *k = sp_hyb_schedule_part(s, Y, 0, f < CHUNK ? (int)f : CHUNK, LANES, false, c.X,
                                         prefetch_distance()) == 0
                        ? build(s, "spmm", 5, args)
                        : NULL;
    if (!k)
        fprintf(stderr, "spmm: %s\n", tex_errmsg(c.ctx));
    tex_ctx_free(c.ctx);
    return k;
}

/* SDDMM: the fused loop over non-zeros in parallel, the feature reduction
 * vectorized; the rows read from J_rows or searched in J_indptr (mode). */
static tex_kernel *build_sddmm(int64_t f, tex_sp_rows_mode mode)
{
    sp_fmt c;
    fmt_init(&c, f);
    tex_tensor *O = tex_sp_iter_lower(sp_fmt_sddmm_iter(&c, mode));
    tex_schedule *s = tex_schedule_new(c.ctx, 1, &O);
    tex_stage *st = tex_stage_of(s, O);
    tex_parallel(st, tex_op_axis(st, 0));
    tex_vectorize_reduce(st, tex_op_reduce_axis(st, 0));
    tex_tensor *args[] = {tex_sp_indices(c.J),
                          mode == TEX_SP_ROWS_SEARCH ? tex_sp_indptr(c.J) : tex_sp_rows(c.J), c.X,
                          c.Y, O};
    tex_kernel *k = build(s, "sddmm", 5, args);
    if (!k)
        fprintf(stderr, "sddmm: %s\n", tex_errmsg(c.ctx));
    tex_ctx_free(c.ctx);
    return k;
}

static int run_tex0(void *arg)
{
    sp_case *c = arg;
    return tex_kernel_call_tensors(c->k[0], c->n_arr[0], c->arr[0]);
}

static int run_tex1(void *arg)
{
    sp_case *c = arg;
    return tex_kernel_call_tensors(c->k[1], c->n_arr[1], c->arr[1]);
}

static int run_spmm_hand(void *arg)
{
    sp_case *c = arg;
    spmm_hand(c->a->indptr, c->a->indices, c->a->values, c->x, c->want, M, c->f, THREADS);
    return 0;
}

static int run_sddmm_hand(void *arg)
{
    sp_case *c = arg;
    sddmm_hand(c->a->indptr, c->a->indices, c->x, c->y2, c->want, M, c->f, THREADS);
    return 0;
}

#ifdef TEX_HAVE_LIBRSB
/* librsb's matrix from the CSR arrays (its own format, built once). */
static void *rsb_matrix(const sp_csr *a)
{
    rsb_err_t err = RSB_ERR_NO_ERROR;
    rsb_int_t nt = THREADS;
    if (rsb_lib_init(RSB_NULL_INIT_OPTIONS) != RSB_ERR_NO_ERROR ||
        rsb_lib_set_opt(RSB_IO_WANT_EXECUTING_THREADS, &nt) != RSB_ERR_NO_ERROR)
        return NULL;
    struct rsb_mtx_t *mtx = rsb_mtx_alloc_from_csr_const(
        a->values, a->indptr, a->indices, (rsb_nnz_idx_t)a->nnz, RSB_NUMERICAL_TYPE_FLOAT,
        (rsb_coo_idx_t)a->m, (rsb_coo_idx_t)a->n, 1, 1, RSB_FLAG_NOFLAGS, &err);
    return err == RSB_ERR_NO_ERROR ? mtx : NULL;
}

static int run_library(void *arg)
{
    sp_case *c = arg;
    const float one = 1, zero = 0;
    return rsb_spmm(RSB_TRANSPOSITION_N, &one, c->rsb, (rsb_coo_idx_t)c->f,
                    RSB_FLAG_WANT_ROW_MAJOR_ORDER, c->x, (rsb_nnz_idx_t)c->f, &zero, c->out[2],
                    (rsb_nnz_idx_t)c->f) != RSB_ERR_NO_ERROR;
}

static void rsb_release(void *mtx)
{
    if (mtx)
        rsb_mtx_free(mtx);
    rsb_lib_exit(RSB_NULL_EXIT_OPTIONS);
}
#endif

/* The hyb kernel's arguments: h's arrays, then X and tex's output. */
static void hyb_args(sp_case *c, tex_sp_hyb *h)
{
    int n = tex_sp_hyb_narrays(MAX_WIDTH);
    if (!h || tex_sp_hyb_arrays(h, n, c->arr[0]) != 0)
        bench_fail("spmm", "hyb", "convert_failed");
    c->arr[0][n] = sp_f32(&c->v[0][0], c->x, 2, M, c->f);
    c->arr[0][n + 1] = sp_f32(&c->v[0][1], c->out[0], 2, M, c->f);
    c->n_arr[0] = n + 2;
}

static void csr_args(sp_case *c)
{
    const sp_csr *a = c->a;
    DLTensor **arr = c->arr[1];
    arr[0] = sp_i32(&c->v[1][0], a->indptr, M + 1);
    arr[1] = sp_i32(&c->v[1][1], a->indices, a->nnz);
    arr[2] = sp_f32(&c->v[1][2], a->values, 1, a->nnz, 0);
    arr[3] = sp_f32(&c->v[1][3], c->x, 2, M, c->f);
    arr[4] = sp_f32(&c->v[1][4], c->out[1], 2, M, c->f);
    c->n_arr[1] = 5;
}

/* SpMM: every side checked against the hand-written kernel, then timed
 * interleaved: hyb, csr_openmp, csr_tex (and library). */
static void measure_spmm(const char *desc, sp_case *c)
{
    if (!c->k[0] || !c->k[1])
        bench_fail("spmm", desc, "build_failed");
    bench_run runs[4] = {{run_tex0, c, NULL}, {run_spmm_hand, c, NULL}, {run_tex1, c, NULL}};
    int n_runs = 3;
#ifdef TEX_HAVE_LIBRSB
    if (!c->rsb)
        bench_fail("spmm", desc, "library_setup_failed");
    runs[n_runs++] = (bench_run){run_library, c, NULL};
#endif
    for (int r = 0; r < n_runs; r++)
        if (runs[r].fn(c) != 0)
            bench_fail("spmm", desc, "call_failed");
    for (int r = 0; r < n_runs - 1; r++)
        bench_check_close("spmm", desc, c->out[r], c->want, M * c->f, 1e-4);
    bench_stats st[4];
    if (bench_interleave(n_runs, runs, 3000, st) != 0)
        bench_fail("spmm", desc, "call_failed");
    bench_report("spmm", desc, &st[0], "csr_openmp", &st[1]);
    bench_report("spmm", desc, &st[0], "csr_tex", &st[2]);
    if (n_runs == 4)
        bench_report("spmm", desc, &st[0], "library", &st[3]);
}

static void run_spmm(sp_case *c, const char *desc, bool source)
{
    sp_view v[3];
    tex_ctx *ctx = tex_ctx_new();
    tex_sp_hyb *h = tex_sp_hyb_convert(ctx, M, sp_i32(&v[0], c->a->indptr, M + 1),
                                       sp_i32(&v[1], c->a->indices, c->a->nnz),
                                       sp_f32(&v[2], c->a->values, 1, c->a->nnz, 0), MAX_WIDTH);
    hyb_args(c, h);
    csr_args(c);
    c->k[0] = build_hyb(c->f);
    c->k[1] = build_csr(c->f);
    if (source && c->k[0])
        printf("%s\n", tex_kernel_source(c->k[0]));
    if (source && c->k[1])
        printf("%s\n", tex_kernel_source(c->k[1]));
    measure_spmm(desc, c);
    tex_kernel_free(c->k[0]);
    tex_kernel_free(c->k[1]);
    tex_sp_hyb_free(h);
    tex_ctx_free(ctx);
}

static void run_sddmm(sp_case *c, const char *desc, bool source)
{
    const sp_csr *a = c->a;
    int32_t *rows = malloc(sizeof(int32_t) * (size_t)(a->nnz + 1));
    sp_view ip, *v = c->v[0];
    if (!rows || tex_sp_fill_rows(sp_i32(&ip, a->indptr, M + 1), sp_i32(&v[1], rows, a->nnz)) != 0)
        bench_fail("sddmm", desc, "setup_failed");
    c->k[0] = build_sddmm(c->f, TEX_SP_ROWS_ARRAY);
    c->k[1] = build_sddmm(c->f, TEX_SP_ROWS_SEARCH);
    c->arr[0][0] = c->arr[1][0] = sp_i32(&v[0], a->indices, a->nnz);
    c->arr[0][1] = &v[1].t;
    c->arr[1][1] = &ip.t;
    c->arr[0][2] = c->arr[1][2] = sp_f32(&v[2], c->x, 2, M, c->f);
    c->arr[0][3] = c->arr[1][3] = sp_f32(&v[3], c->y2, 2, M, c->f);
    c->arr[0][4] = sp_f32(&v[4], c->out[0], 1, a->nnz, 0);
    c->arr[1][4] = sp_f32(&c->v[1][4], c->out[1], 1, a->nnz, 0);
    c->n_arr[0] = c->n_arr[1] = 5;
    if (source && c->k[0])
        printf("%s\n", tex_kernel_source(c->k[0]));
    if (!c->k[0] || !c->k[1])
        bench_fail("sddmm", desc, "build_failed");
    if (run_tex0(c) != 0 || run_tex1(c) != 0 || run_sddmm_hand(c) != 0)
        bench_fail("sddmm", desc, "call_failed");
    bench_check_close("sddmm", desc, c->out[0], c->want, a->nnz, 1e-4);
    bench_check_close("sddmm_search", desc, c->out[1], c->want, a->nnz, 1e-4);
    if (bench_compare("sddmm", desc, (bench_run){run_tex0, c, NULL}, "openmp",
                      (bench_run){run_sddmm_hand, c, NULL}, 2000) != 0 ||
        bench_compare("sddmm_search", desc, (bench_run){run_tex1, c, NULL}, "tex_rows",
                      (bench_run){run_tex0, c, NULL}, 2000) != 0)
        bench_fail("sddmm", desc, "call_failed");
    tex_kernel_free(c->k[0]);
    tex_kernel_free(c->k[1]);
    free(rows);
}

static void run_width(const sp_csr *a, int64_t f, bool source, void *rsb)
{
    char desc[64];
    snprintf(desc, sizeof desc, "powerlaw64k_f%lld/t%d", (long long)f, THREADS);
    sp_case c = {.a = a, .f = f, .rsb = rsb};
    int64_t n_out = M * f > a->nnz ? M * f : a->nnz;
    c.x = bench_floats(M * f);
    c.y2 = bench_floats(M * f);
    c.want = bench_floats(n_out);
    for (int r = 0; r < 3; r++)
        c.out[r] = bench_floats(n_out);
    if (!c.x || !c.y2 || !c.want || !c.out[0] || !c.out[1] || !c.out[2])
        bench_fail("spmm", desc, "setup_failed");
    bench_fill_random(c.x, M * f, 1);
    bench_fill_random(c.y2, M * f, 2);
    run_spmm(&c, desc, source);
    run_sddmm(&c, desc, source);
    free(c.x);
    free(c.y2);
    free(c.want);
    for (int r = 0; r < 3; r++)
        free(c.out[r]);
}

int main(int argc, char **argv)
{
    bool source = argc > 1 && strcmp(argv[1], "--source") == 0;
    sp_csr a = sp_csr_random(M, M, 15.5, SP_POWER_LAW, 42);
    int64_t longest = 0;
    for (int64_t r = 0; r < M; r++)
        if (a.indptr[r + 1] - a.indptr[r] > longest)
            longest = a.indptr[r + 1] - a.indptr[r];
    fprintf(stderr, "spmm: %d x %d, %lld non-zeros, longest row %lld\n", M, M, (long long)a.nnz,
            (long long)longest);
    void *rsb = NULL;
#ifdef TEX_HAVE_LIBRSB
    rsb = rsb_matrix(&a);
#endif
    run_width(&a, 64, source, rsb);
    if (!source)
        run_width(&a, 128, false, rsb);
#ifdef TEX_HAVE_LIBRSB
    rsb_release(rsb);
#endif
    sp_csr_free(&a);
    return 0;
}
