/*
 * bench/layout: operators that only move data, auto-scheduled
 * (tex_auto_schedule, "cpu -threads=N"), on 1 and 2 threads:
 *   concat     tex_op_concat of two 4096x512 f32 matrices along axis 1
 *              (case=2x4096x512/tN): every vector loop split where the
 *              choice of input is decided (pass select_partition);
 *   pad        tex_op_pad of a 64x56x56 f32 tensor by one zero on each side
 *              of its last two axes (case=64x56x56p1/tN), as a convolution's
 *              padding;
 *   transpose  tex_op_transpose of a 4096x1024 f32 matrix (case=4096x1024/tN):
 *              tiles of 32 bytes by two vectors.
 * anchor=openmp: the same operation as hand-written OpenMP C
 * (bench/layout_hand.c: memcpy / memset per row, a transpose in 32 x 32
 * tiles), whose results tex's must equal exactly before anything is timed.
 * These run at memory (or cache) speed: the speedup says how close tex's
 * kernel comes to plain copies.
 *
 * usage: layout                 the benchmark
 *        layout --source NAME   prints the C that tex generates for NAME
 *                               (concat, pad, transpose), 2 threads
 */
#include "common.h"
#include "layout_hand.h"

#include <string.h>
#include <tex/tex.h>

enum { ROWS = 4096, HALF = 512, PLANES = 64, SIDE = 56, TR_COLS = 1024 };

typedef struct {
    const char *name;
    int threads;
    int n_in;
    DLTensor *arr[3]; /* inputs, then tex's output */
    float *out;       /* the anchor's output */
    int64_t out_n;
    tex_kernel *kernel;
} layout_case;

static DLTensor *array(int ndim, const int64_t *shape, uint64_t seed)
{
    DLTensor *a = tex_array_new(ndim, shape, TEX_F32, (DLDevice){kDLCPU, 0});
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    if (a && seed)
        bench_fill_random(a->data, n, seed);
    return a;
}

/* The operator of lc->name over placeholders of the inputs' shapes; its
 * arrays allocated. NULL on failure. */
static tex_tensor *define(layout_case *lc, tex_ctx *c, tex_tensor *ins[])
{
    int64_t half[2] = {ROWS, HALF}, cube[3] = {PLANES, SIDE, SIDE}, mat[2] = {ROWS, TR_COLS};
    int64_t cat[2] = {ROWS, 2 * HALF}, padded[3] = {PLANES, SIDE + 2, SIDE + 2},
            tr[2] = {TR_COLS, ROWS};
    if (strcmp(lc->name, "concat") == 0) {
        lc->n_in = 2;
        for (int i = 0; i < 2; i++) {
            ins[i] = tex_placeholder_c(c, i ? "B" : "A", TEX_F32, 2, half);
            lc->arr[i] = array(2, half, (uint64_t)i + 1);
        }
        lc->arr[2] = array(2, cat, 0);
        lc->out_n = ROWS * 2 * HALF;
        return tex_op_concat(c, "Y", 2, ins, 1);
    }
    lc->n_in = 1;
    if (strcmp(lc->name, "pad") == 0) {
        ins[0] = tex_placeholder_c(c, "X", TEX_F32, 3, cube);
        lc->arr[0] = array(3, cube, 1);
        lc->arr[1] = array(3, padded, 0);
        lc->out_n = PLANES * (SIDE + 2) * (SIDE + 2);
        return tex_op_pad(c, "Y", ins[0], (int64_t[]){0, 1, 1}, (int64_t[]){0, 1, 1}, 0);
    }
    ins[0] = tex_placeholder_c(c, "X", TEX_F32, 2, mat);
    lc->arr[0] = array(2, mat, 1);
    lc->arr[1] = array(2, tr, 0);
    lc->out_n = ROWS * TR_COLS;
    return tex_op_transpose(c, "Y", ins[0], NULL);
}

/* Builds lc's kernel and arrays; 0 or -1 (message printed). */
static int layout_build(layout_case *lc)
{
    char target[64];
    snprintf(target, sizeof target, "cpu -threads=%d", lc->threads);
    tex_ctx *c = tex_ctx_new();
    tex_tensor *args[3];
    tex_tensor *y = c ? define(lc, c, args) : NULL;
    args[lc->n_in] = y;
    tex_schedule *s = y ? tex_auto_schedule(c, 1, &y, target) : NULL;
    tex_func *f = s ? tex_lower_tensors(s, lc->name, lc->n_in + 1, args) : NULL;
    lc->kernel = f ? tex_build(f, target) : NULL;
    lc->out = bench_floats(lc->out_n);
    if (!lc->kernel)
        fprintf(stderr, "layout: %s\n", c ? tex_errmsg(c) : "out of memory");
    tex_ctx_free(c);
    for (int i = 0; i <= lc->n_in; i++)
        if (!lc->arr[i])
            return -1;
    return lc->kernel && lc->out ? 0 : -1;
}

static void layout_release(layout_case *lc)
{
    tex_kernel_free(lc->kernel);
    for (int i = 0; i <= lc->n_in; i++)
        tex_array_free(lc->arr[i]);
    free(lc->out);
}

static int run_tex(void *arg)
{
    layout_case *lc = arg;
    return tex_kernel_call_tensors(lc->kernel, lc->n_in + 1, lc->arr);
}

static int run_hand(void *arg)
{
    layout_case *lc = arg;
    if (strcmp(lc->name, "concat") == 0)
        concat_hand(lc->arr[0]->data, lc->arr[1]->data, lc->out, ROWS, HALF, HALF, lc->threads);
    else if (strcmp(lc->name, "pad") == 0)
        pad_hand(lc->arr[0]->data, lc->out, PLANES, SIDE, SIDE, 1, lc->threads);
    else
        transpose_hand(lc->arr[0]->data, lc->out, ROWS, TR_COLS, lc->threads);
    return 0;
}

/* Checks tex's result against the anchor's (exits when it differs), then
 * times them interleaved. */
static void run_case(const char *name, const char *shape, int threads)
{
    char desc[64];
    snprintf(desc, sizeof desc, "%s/t%d", shape, threads);
    layout_case lc = {.name = name, .threads = threads};
    if (layout_build(&lc) != 0)
        bench_fail(name, desc, "setup_failed");
    DLTensor *y = lc.arr[lc.n_in];
    memset(y->data, 0xff, sizeof(float) * (size_t)lc.out_n); /* NaN: must be overwritten */
    if (run_tex(&lc) != 0)
        bench_fail(name, desc, "call_failed");
    run_hand(&lc);
    bench_check_close(name, desc, y->data, lc.out, lc.out_n, 0);
    if (bench_compare(name, desc, (bench_run){run_tex, &lc, NULL}, "openmp",
                      (bench_run){run_hand, &lc, NULL}, 1000))
        bench_fail(name, desc, "call_failed");
    layout_release(&lc);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--source") == 0) {
        layout_case lc = {.name = argv[2], .threads = 2};
        int rc = layout_build(&lc);
        if (rc == 0)
            fputs(tex_kernel_source(lc.kernel), stdout);
        layout_release(&lc);
        return rc == 0 ? 0 : 1;
    }
    for (int threads = 2; threads >= 1; threads--) {
        run_case("concat", "2x4096x512", threads);
        run_case("pad", "64x56x56p1", threads);
        run_case("transpose", "4096x1024", threads);
    }
    return 0;
}
