/*
 * bench/softmax: f32 softmax over the rows of a 4096x1024 matrix, on 1 and
 * 2 threads, built with the public API only:
 *   Mx[i] = max_k X[i, k]            E[i, j] = exp(X[i, j] - Mx[i])
 *   Se[i] = sum_k E[i, k]            Y[i, j] = E[i, j] * (1 / Se[i])
 * Two schedules. The automatic one (tex_auto_schedule, bench/rowwise.h):
 * lines case=4096x1024/tN with anchor=bandwidth and anchor=unfused (the
 * same computes with every intermediate a kernel of its own). The
 * hand-written one, lines case=4096x1024/tN/manual: one parallel loop over
 * the rows of Y; Mx, E and Se computed at
 * that row loop (E into a row-sized buffer, which pass inplace puts in Y's
 * row: the exp pass writes Y and the last pass rescales it in place, and
 * hints the same vectors of X's next row: tex_prefetch_at), each
 * over the row with its inner loop vectorized: E's and Y's columns split by
 * SOFTMAX_VEC with the inner part vectorized (bench/softmax_sched.h, which
 * bench/gpu_on_cpu shares), and each reduction's axis vectorized
 * as a reduction (tex_vectorize_reduce: vector partial results, then one
 * horizontal reduction).
 *
 * tex's result and the hand-fused anchor's are checked against a plain C
 * reference (double precision, relative error <= 1e-5) before anything is
 * timed. Two manual lines per case, each anchor interleaved with tex alone
 * (bench_compare):
 *   anchor=handfused  softmax_hand.c's fused OpenMP kernel, compiled with
 *                     -ffast-math, so its expf is libmvec's vector one;
 *                     tex's kernels keep IEEE semantics (tex.h, tex_build)
 *                     and compute exp with tex's vector function (within
 *                     2 ulp) in the vectorized loops;
 *   anchor=bandwidth  the memory bound: a parallel row copy of the same
 *                     bytes (16 MiB read, 16 MiB written), whose time is the
 *                     least any softmax of this matrix can take; speedup =
 *                     bound / tex, at most about 1.
 *
 * A third manual line, case=4096x100/t2/manual, has rows of 100 columns,
 * which the vector width does not divide: each row's reductions end in a
 * partial chunk (100 = 96 + 4 with 8 or 16 lanes), one predicated vector
 * chunk where the CPU has masked moves (docs/passes.md), so tails are a
 * sizeable part of the work.
 *
 * usage: softmax                the benchmark
 *        softmax --source [auto] prints the C that tex generates for the
 *                                hand-written (or automatic) schedule, 2 threads
 */
#include "rowwise.h"
#include "softmax_sched.h"

enum { ROWS = 4096, COLS = 1024, TAIL_COLS = 100 };

typedef struct {
    int threads;
    int cols; /* COLS, or TAIL_COLS */
    tex_kernel *kernel;
    DLTensor *x, *y; /* tex's arrays */
    float *out;      /* the anchors' output */
    float *want;     /* the reference */
} softmax_case;

/* Builds sc->kernel for "cpu -threads=N"; 0 or -1 (message printed). */
static int softmax_build(softmax_case *sc)
{
    char target[64];
    snprintf(target, sizeof target, "cpu -threads=%d", sc->threads);
    tex_ctx *c = tex_ctx_new();
    tex_func *f = c ? softmax_define(c, ROWS, sc->cols) : NULL;
    sc->kernel = f ? tex_build(f, target) : NULL;
    if (!sc->kernel)
        fprintf(stderr, "softmax: %s\n", c ? tex_errmsg(c) : "out of memory");
    tex_ctx_free(c);
    return sc->kernel ? 0 : -1;
}

static int run_tex(void *arg)
{
    softmax_case *sc = arg;
    return tex_kernel_call_tensors(sc->kernel, 2, (DLTensor *[]){sc->x, sc->y});
}

static int run_hand(void *arg)
{
    softmax_case *sc = arg;
    softmax_hand(sc->x->data, sc->out, ROWS, sc->cols, sc->threads);
    return 0;
}

static int run_copy(void *arg)
{
    softmax_case *sc = arg;
    softmax_copy(sc->x->data, sc->out, ROWS, sc->cols, sc->threads);
    return 0;
}

/* The plain C reference, row by row in double precision. */
static void softmax_reference(const float *x, float *y, int cols)
{
    for (int i = 0; i < ROWS; i++) {
        const float *xr = x + (size_t)i * cols;
        double mx = xr[0], sum = 0;
        for (int j = 1; j < cols; j++)
            mx = xr[j] > mx ? xr[j] : mx;
        for (int j = 0; j < cols; j++)
            sum += exp(xr[j] - mx);
        for (int j = 0; j < cols; j++)
            y[(size_t)i * cols + j] = (float)(exp(xr[j] - mx) / sum);
    }
}

static void softmax_reference_rw(int64_t rows, int64_t cols, float *const in[], float *want)
{
    (void)rows;
    softmax_reference(in[0], want, (int)cols);
}

static const rw_spec auto_spec = {"softmax",
                                  ROWS,
                                  COLS,
                                  1,
                                  3,
                                  {RW_MATRIX},
                                  {RW_ROW, RW_MATRIX, RW_ROW},
                                  softmax_computes,
                                  softmax_reference_rw};

static int softmax_alloc(softmax_case *sc)
{
    DLDevice cpu = {kDLCPU, 0};
    int64_t shape[2] = {ROWS, sc->cols};
    sc->x = tex_array_new(2, shape, TEX_F32, cpu);
    sc->y = tex_array_new(2, shape, TEX_F32, cpu);
    sc->out = bench_floats(ROWS * (int64_t)sc->cols);
    sc->want = bench_floats(ROWS * (int64_t)sc->cols);
    if (!sc->x || !sc->y || !sc->out || !sc->want)
        return -1;
    bench_fill_random(sc->x->data, (int64_t)ROWS * sc->cols, 1);
    softmax_reference(sc->x->data, sc->want, sc->cols);
    return 0;
}

static void softmax_release(softmax_case *sc)
{
    tex_kernel_free(sc->kernel);
    tex_array_free(sc->x);
    tex_array_free(sc->y);
    free(sc->out);
    free(sc->want);
}

/* Checks tex and the hand-fused kernel against the reference (exits when
 * either is wrong), then times tex interleaved with both anchors; rows of
 * cols columns. */
static void run_case(int threads, int cols)
{
    char desc[64];
    snprintf(desc, sizeof desc, "%dx%d/t%d/manual", ROWS, cols, threads);
    softmax_case sc = {.threads = threads, .cols = cols};
    if (softmax_alloc(&sc) != 0 || softmax_build(&sc) != 0)
        bench_fail("softmax", desc, "setup_failed");
    int64_t n = (int64_t)ROWS * cols;
    memset(sc.y->data, 0xff, sizeof(float) * (size_t)n); /* NaN: must be overwritten */
    if (run_tex(&sc) != 0)
        bench_fail("softmax", desc, "call_failed");
    bench_check_close("softmax", desc, sc.y->data, sc.want, n, 1e-5);
    run_hand(&sc);
    if (!(bench_rel_error(sc.out, sc.want, n) <= 1e-5))
        bench_fail("softmax", desc, "handfused_wrong_result");
    bench_run tex = {run_tex, &sc, NULL};
    if (bench_compare("softmax", desc, tex, "handfused", (bench_run){run_hand, &sc, NULL}, 1000) ||
        bench_compare("softmax", desc, tex, "bandwidth", (bench_run){run_copy, &sc, NULL}, 1000))
        bench_fail("softmax", desc, "call_failed");
    softmax_release(&sc);
}

/* Prints the generated C of the 2-thread kernel; 0 or 1. */
static int print_source(void)
{
    softmax_case sc = {.threads = 2, .cols = COLS};
    int rc = softmax_build(&sc);
    if (rc == 0)
        fputs(tex_kernel_source(sc.kernel), stdout);
    tex_kernel_free(sc.kernel);
    return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--source") == 0)
        return argc > 2 && strcmp(argv[2], "auto") == 0 ? rw_print_source(&auto_spec, 2)
                                                        : print_source();
    rw_run_case(&auto_spec, 2);
    rw_run_case(&auto_spec, 1);
    run_case(2, COLS);
    run_case(1, COLS);
    run_case(2, TAIL_COLS);
    return 0;
}
