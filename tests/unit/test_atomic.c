/*
 * Atomic reductions (tex_atomic): a reduce axis made parallel on the CPU or
 * bound to blockIdx on the GPU once the stage's updates are atomic.
 *
 *   errors      what tex_atomic refuses, and the reduce-axis annotations it
 *               allows (parallel, block indices) or still refuses (vectorize,
 *               virtual threads); rfactor / cache_write after it.
 *   cpu_*       row reductions R[i] = op_k A[i, k] with k split and k.outer
 *               parallel on 2 threads, for sum / prod / max / min / a
 *               where-condition over f32, f64, i32 and i64, with extents that
 *               the split does not divide; built for "cpu" and interpreted.
 *   gpu_*       the same reductions split across CUDA blocks: k.outer
 *               rfactor'ed into per-thread partials (local), the final
 *               reduction over k.outer bound to blockIdx.x and atomic, rows
 *               to blockIdx.y / threadIdx.x. Checked on the CPU backend
 *               (barrier fission), through "cuda -emit-only" (the source has
 *               the atomic; NVRTC's PTX, when NVRTC is there, an atom/red
 *               instruction) and in the CUDA emulator for a few dtypes. Also
 *               with the reduction split over both blocks and threadIdx.x:
 *               a block-wide allreduce, then one atomic per block and row.
 * Inputs are seeded non-zero values (small integers for exact sums and
 * products), outputs poisoned, results compared with the oracle.
 */
#include "tt.h"
#include "support/cuda_emu.h"
#include "support/tmpdir.h"

#include "lower/lower.h"
#include "interp/interp.h"

#include <unistd.h>

static char cache_dir[] = "/tmp/tex-test-atomic-XXXXXX";

enum { ROWS = 37, COLS = 301, CHUNK = 29 };

typedef enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_SUM_WHERE } red_kind;

static const char *const op_names[] = {"sum", "prod", "max", "min", "sum_where"};

typedef struct {
    tex_ctx *ctx;
    tex_tensor *A, *R;
    tex_schedule *s;
    tex_dtype t;
    red_kind op;
    int64_t cols;
} red_case;

/* R[i] = op_k A[i, k] over ROWS x cols of dtype t. */
static void define(red_case *c, red_kind op, tex_dtype t, int64_t cols)
{
    tex_ctx *x = c->ctx = tex_ctx_new();
    c->t = t;
    c->op = op;
    c->cols = cols;
    c->A = tex_placeholder_c(x, "A", t, 2, (int64_t[]){ROWS, cols});
    tex_iter *i = tex_axis(x, "i", tex_int(x, ROWS)),
             *k = tex_reduce_axis(x, "k", tex_int(x, cols));
    tex_expr *a = TEX_AT(c->A, tex_iv(i), tex_iv(k)), *r = NULL;
    switch (op) {
    case OP_SUM:
        r = tex_sum(a, 1, &k);
        break;
    case OP_PROD:
        r = tex_reduce_prod(a, 1, &k);
        break;
    case OP_MAX:
        r = tex_reduce_max(a, 1, &k);
        break;
    case OP_MIN:
        r = tex_reduce_min(a, 1, &k);
        break;
    case OP_SUM_WHERE:
        r = tex_reduce_where(tex_sum(a, 1, &k),
                             tex_lt(tex_floormod(tex_iv(k), tex_int(x, 3)), tex_int(x, 2)));
        break;
    }
    c->R = tex_compute(x, "R", 1, &i, r);
    c->s = tex_schedule_new(x, 1, &c->R);
}

/* Inputs: small integers, never 0; for products mostly 1, sometimes -1
 * and rarely 2 (about 10 doublings in a row of 301: exact, no overflow). */
static void fill(DLTensor *a, tex_dtype t, red_kind op, uint64_t seed)
{
    int64_t n = a->shape[0] * a->shape[1];
    for (int64_t k = 0; k < n; k++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        int r = (int)((seed >> 33) % 11), rp = (int)((seed >> 33) % 31);
        double v = op == OP_PROD ? (rp == 0 ? 2 : rp < 4 ? -1 : 1) : r - 5 + (r >= 5);
        switch (t) {
        case TEX_F32:
            ((float *)a->data)[k] = (float)v;
            break;
        case TEX_F64:
            ((double *)a->data)[k] = v;
            break;
        case TEX_I32:
            ((int32_t *)a->data)[k] = (int32_t)v;
            break;
        default:
            ((int64_t *)a->data)[k] = (int64_t)v;
            break;
        }
    }
}

/* Runs k (or the interpreter on f when k is NULL) and compares R with the oracle. */
static void run_compare(red_case *c, tex_func *f, tex_kernel *k, const char *what)
{
    DLDevice cpu = {kDLCPU, 0};
    DLTensor *a = tex_array_new(2, (int64_t[]){ROWS, c->cols}, c->t, cpu);
    DLTensor *r = tex_array_new(1, (int64_t[]){ROWS}, c->t, cpu);
    DLTensor *want = tex_array_new(1, (int64_t[]){ROWS}, c->t, cpu);
    fill(a, c->t, c->op, 17);
    memset(r->data, 0x7f, (size_t)ROWS * (size_t)texi_dtype_bits(c->t) / 8);
    tex_value v[] = {{.kind = TEX_VAL_TENSOR, .t = a}, {.kind = TEX_VAL_TENSOR, .t = r}};
    char err[1024] = "";
    int rc = k ? tex_kernel_call(k, 2, v) : texi_interp_run(f, 2, v, err, sizeof err);
    if (rc != 0)
        TT_FAILF("%s %s %s: %s", op_names[c->op], tex_dtype_name(c->t), what,
                 k ? tex_kernel_errmsg(k) : err);
    TT_EQ_INT(tex_eval_reference(c->ctx, 2, (tex_tensor *[]){c->A, c->R}, (DLTensor *[]){a, want}),
              0);
    size_t size = (size_t)texi_dtype_bits(c->t) / 8;
    for (int i = 0; rc == 0 && i < ROWS; i++)
        if (memcmp((char *)r->data + (size_t)i * size, (char *)want->data + (size_t)i * size,
                   size) != 0) {
            TT_FAILF("%s %s %s: row %d differs from the oracle", op_names[c->op],
                     tex_dtype_name(c->t), what, i);
            break;
        }
    tex_array_free(a);
    tex_array_free(r);
    tex_array_free(want);
}

/* ------------------------------------------------------------ errors */

static void test_errors(void)
{
    red_case c;
    define(&c, OP_SUM, TEX_F32, COLS);
    tex_stage *st = tex_stage_of(c.s, c.R);
    tex_iter *k = tex_op_reduce_axis(st, 0), *ko, *ki;
    TT_EQ_INT(tex_atomic(NULL), TEX_EMISUSE);
    TT_EQ_INT(tex_split(st, k, tex_int(c.ctx, CHUNK), &ko, &ki), 0);
    TT_EQ_INT(tex_bind(st, ko, TEX_BLOCK_X), TEX_EINVAL); /* races without tex_atomic */
    TT_CHECK(strstr(tex_errmsg(c.ctx), "tex_atomic") != NULL);
    tex_clear_error(c.ctx);
    TT_EQ_INT(tex_parallel(st, ko), TEX_EINVAL);
    tex_clear_error(c.ctx);
    TT_EQ_INT(tex_atomic(st), 0);
    TT_EQ_INT(tex_atomic(st), 0); /* repeating it is harmless */
    TT_EQ_INT(tex_vectorize(st, ki), TEX_EINVAL);
    tex_clear_error(c.ctx);
    TT_EQ_INT(tex_bind(st, ki, TEX_VTHREAD), TEX_EINVAL);
    tex_clear_error(c.ctx);
    TT_EQ_INT(tex_bind(st, ko, TEX_BLOCK_X), 0);
    TT_CHECK(tex_rfactor(c.s, c.R, ki, 0) == NULL);
    TT_EQ_INT(tex_errcode(c.ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(c.ctx), "atomic") && strstr(tex_errmsg(c.ctx), "'R'"));
    tex_clear_error(c.ctx);
    TT_CHECK(tex_cache_write(c.s, c.R, TEX_SCOPE_LOCAL) == NULL);
    TT_EQ_INT(tex_errcode(c.ctx), TEX_EINVAL);
    tex_clear_error(c.ctx);
    /* a stage that is not a reduction */
    tex_iter *j = tex_axis(c.ctx, "j", tex_int(c.ctx, ROWS));
    tex_tensor *E = tex_compute(c.ctx, "E", 1, &j, tex_mul(TEX_AT(c.R, tex_iv(j)), tex_iv(j)));
    tex_schedule *s2 = tex_schedule_new(c.ctx, 1, &E);
    TT_EQ_INT(tex_atomic(tex_stage_of(s2, E)), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(c.ctx), "'E'") && strstr(tex_errmsg(c.ctx), "not a reduction"));
    tex_ctx_free(c.ctx);
}

/* ------------------------------------------------------------ CPU */

static void cpu_case(red_kind op, tex_dtype t, int64_t cols)
{
    red_case c;
    define(&c, op, t, cols);
    tex_stage *st = tex_stage_of(c.s, c.R);
    tex_iter *i = tex_op_axis(st, 0), *ko, *ki;
    int rc = tex_split(st, tex_op_reduce_axis(st, 0), tex_int(c.ctx, CHUNK), &ko, &ki);
    rc = rc ? rc : tex_reorder(st, 3, (tex_iter *[]){ko, i, ki});
    rc = rc ? rc : tex_atomic(st);
    rc = rc ? rc : tex_parallel(st, ko);
    tex_func *f = rc ? NULL : tex_lower_tensors(c.s, "rowred", 2, (tex_tensor *[]){c.A, c.R});
    tex_kernel *k = f ? tex_build(f, "cpu -threads=2") : NULL;
    if (!k) {
        TT_FAILF("%s %s: %s", op_names[op], tex_dtype_name(t), tex_errmsg(c.ctx));
    } else {
        const char *src = tex_kernel_source(k);
        bool crit = op == OP_MAX || op == OP_MIN;
        TT_CHECK(strstr(src, crit ? "#pragma omp critical" : "#pragma omp atomic update") != NULL);
        run_compare(&c, f, k, "on cpu");
        run_compare(&c, f, NULL, "interpreted");
    }
    tex_kernel_free(k);
    tex_ctx_free(c.ctx);
}

static void test_cpu_sum(void)
{
    cpu_case(OP_SUM, TEX_F32, COLS);
    cpu_case(OP_SUM, TEX_I64, COLS);
    cpu_case(OP_SUM, TEX_F64, 1);
}

static void test_cpu_prod(void)
{
    cpu_case(OP_PROD, TEX_I32, COLS);
    cpu_case(OP_PROD, TEX_F64, CHUNK);
}

static void test_cpu_max_min(void)
{
    cpu_case(OP_MAX, TEX_F32, COLS);
    cpu_case(OP_MIN, TEX_I32, COLS);
    cpu_case(OP_MAX, TEX_I64, 2 * CHUNK + 1);
}

static void test_cpu_where(void)
{
    cpu_case(OP_SUM_WHERE, TEX_F32, COLS);
    cpu_case(OP_SUM_WHERE, TEX_I32, 7);
}

/* ------------------------------------------------------------ GPU */

enum { GPU_THREADS = 16 };

/* A reduction split across blocks and, inside each block, across
 * threadIdx.x (a cross-thread allreduce, then one atomic per block and
 * row); rows to blockIdx.y. The lowered function or NULL. */
static tex_func *gpu_schedule_allreduce(red_case *c)
{
    tex_ctx *x = c->ctx;
    tex_stage *st = tex_stage_of(c->s, c->R);
    tex_iter *kb, *kt;
    int rc = tex_split(st, tex_op_reduce_axis(st, 0), tex_int(x, 32), &kb, &kt);
    rc = rc ? rc : tex_reorder(st, 3, (tex_iter *[]){tex_op_axis(st, 0), kb, kt});
    rc = rc ? rc : tex_atomic(st);
    rc = rc ? rc : tex_bind(st, tex_op_axis(st, 0), TEX_BLOCK_Y);
    rc = rc ? rc : tex_bind(st, kb, TEX_BLOCK_X);
    rc = rc ? rc : tex_bind(st, kt, TEX_THREAD_X);
    return rc ? NULL : tex_lower_tensors(c->s, "rowred", 2, (tex_tensor *[]){c->A, c->R});
}

/* The block-split schedule of the file comment; the lowered function or NULL. */
static tex_func *gpu_schedule(red_case *c)
{
    tex_ctx *x = c->ctx;
    tex_stage *st = tex_stage_of(c->s, c->R);
    tex_iter *ko, *ki, *io, *ii;
    int rc = tex_split(st, tex_op_reduce_axis(st, 0), tex_int(x, CHUNK), &ko, &ki);
    tex_tensor *rf = rc ? NULL : tex_rfactor(c->s, c->R, ko, 0);
    if (!rf)
        return NULL;
    tex_stage *sf = tex_stage_of(c->s, rf);
    tex_iter *kb = tex_op_reduce_axis(st, 0), *i = tex_op_axis(st, 0);
    rc = tex_split(st, i, tex_int(x, GPU_THREADS), &io, &ii);
    rc = rc ? rc : tex_reorder(st, 3, (tex_iter *[]){kb, io, ii});
    rc = rc ? rc : tex_atomic(st);
    rc = rc ? rc : tex_bind(st, kb, TEX_BLOCK_X);
    rc = rc ? rc : tex_bind(st, io, TEX_BLOCK_Y);
    rc = rc ? rc : tex_bind(st, ii, TEX_THREAD_X);
    rc = rc ? rc : tex_compute_at(sf, st, ii);
    rc = rc ? rc : tex_set_scope(sf, TEX_SCOPE_LOCAL);
    return rc ? NULL : tex_lower_tensors(c->s, "rowred", 2, (tex_tensor *[]){c->A, c->R});
}

static void gpu_case(red_kind op, tex_dtype t, bool emulate, bool allreduce)
{
    red_case c;
    define(&c, op, t, COLS);
    tex_func *f = allreduce ? gpu_schedule_allreduce(&c) : gpu_schedule(&c);
    tex_kernel *cpu = f ? tex_build(f, "cpu") : NULL;
    tex_kernel *cu = f ? tex_build(f, "cuda -emit-only -arch=sm_80") : NULL;
    if (!cpu || !cu) {
        TT_FAILF("%s %s: %s", op_names[op], tex_dtype_name(t), tex_errmsg(c.ctx));
        goto out;
    }
    run_compare(&c, f, cpu, "GPU schedule on cpu");
    const char *src = tex_kernel_source(cu), *ptx = tex_kernel_ptx(cu);
    bool native = op == OP_SUM || op == OP_SUM_WHERE ||
                  ((op == OP_MAX || op == OP_MIN) && t != TEX_F32 && t != TEX_F64);
    TT_CHECK(strstr(src, native ? "atomic" : "tex_atomic_") != NULL);
    if (ptx)
        TT_CHECK(strstr(ptx, "atom.") || strstr(ptx, "red."));
    cuda_emu *e = emulate ? cuda_emu_build(src, (char[512]){0}, 512) : NULL;
    if (e) {
        cuda_emu_kernel m = {e, cu};
        DLDevice host = {kDLCPU, 0};
        DLTensor *a = tex_array_new(2, (int64_t[]){ROWS, COLS}, t, host);
        DLTensor *r = tex_array_new(1, (int64_t[]){ROWS}, t, host);
        DLTensor *want = tex_array_new(1, (int64_t[]){ROWS}, t, host);
        fill(a, t, op, 5);
        tex_value v[] = {{.kind = TEX_VAL_TENSOR, .t = a}, {.kind = TEX_VAL_TENSOR, .t = r}};
        char err[1024];
        TT_EQ_INT(cuda_emu_runner(&m, 2, v, err, sizeof err), 0);
        TT_EQ_INT(tex_eval_reference(c.ctx, 2, (tex_tensor *[]){c.A, c.R}, (DLTensor *[]){a, want}),
                  0);
        size_t bytes = (size_t)ROWS * (size_t)texi_dtype_bits(t) / 8;
        if (memcmp(r->data, want->data, bytes) != 0)
            TT_FAILF("%s %s emulated: differs from the oracle", op_names[op], tex_dtype_name(t));
        tex_array_free(a);
        tex_array_free(r);
        tex_array_free(want);
        cuda_emu_free(e);
    }
out:
    tex_kernel_free(cpu);
    tex_kernel_free(cu);
    tex_ctx_free(c.ctx);
}

static void test_gpu_sum(void)
{
    gpu_case(OP_SUM, TEX_F32, true, false);
    gpu_case(OP_SUM, TEX_I64, false, false);
    gpu_case(OP_SUM_WHERE, TEX_F64, false, false);
}

static void test_gpu_max_min_prod(void)
{
    gpu_case(OP_MAX, TEX_F32, true, false);
    gpu_case(OP_MIN, TEX_I32, false, false);
    gpu_case(OP_MAX, TEX_I64, false, false);
    gpu_case(OP_PROD, TEX_I32, true, false);
    gpu_case(OP_PROD, TEX_F64, false, false);
}

/* Blocks and threads both over the reduction: allreduce, then atomics. */
static void test_gpu_allreduce_then_atomic(void)
{
    gpu_case(OP_SUM, TEX_F32, true, true);
    gpu_case(OP_MIN, TEX_F64, true, true);
    gpu_case(OP_SUM_WHERE, TEX_I32, false, true);
}

/* 16-bit floats have no atomic here: TEX_EUNAVAILABLE naming the buffer. */
static void test_gpu_unsupported_type(void)
{
    tex_ctx *x = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(x, "A", TEX_F16, 1, (int64_t[]){100});
    tex_iter *o = tex_axis(x, "o", tex_int(x, 1)), *k = tex_reduce_axis(x, "k", tex_int(x, 100));
    tex_tensor *S = tex_compute(x, "S", 1, &o, tex_sum(TEX_AT(A, tex_iv(k)), 1, &k));
    tex_schedule *s = tex_schedule_new(x, 1, &S);
    tex_stage *st = tex_stage_of(s, S);
    TT_EQ_INT(tex_atomic(st), 0);
    TT_EQ_INT(tex_bind(st, k, TEX_BLOCK_X), 0);
    tex_func *f = tex_lower_tensors(s, "hsum", 2, (tex_tensor *[]){A, S});
    TT_CHECK(f != NULL);
    TT_CHECK(f && tex_build(f, "cuda -emit-only") == NULL);
    TT_EQ_INT(tex_errcode(x), TEX_EUNAVAILABLE);
    TT_CHECK(strstr(tex_errmsg(x), "'S'") && strstr(tex_errmsg(x), "f16"));
    tex_ctx_free(x);
}

int main(void)
{
    if (!tt_private_cache(cache_dir, "test_atomic"))
        return 1;
    TT_RUN(test_errors);
    if (tex_target_available("cpu")) {
        TT_RUN(test_cpu_sum);
        TT_RUN(test_cpu_prod);
        TT_RUN(test_cpu_max_min);
        TT_RUN(test_cpu_where);
        TT_RUN(test_gpu_sum);
        TT_RUN(test_gpu_max_min_prod);
        TT_RUN(test_gpu_allreduce_then_atomic);
    } else {
        printf("SKIP atomic_cpu (no working C compiler for target \"cpu\")\n");
    }
    TT_RUN(test_gpu_unsupported_type);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
