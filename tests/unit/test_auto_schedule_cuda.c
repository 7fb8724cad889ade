/*
 * tex_auto_schedule for "cuda" (src/autosched/cuda.c, cuda_gemm.c).
 * Operator chains built with tex_op_*: matmul + bias + relu, batched
 * matmul, f16 and bf16 matmuls on tensor cores, softmax (also over the rows
 * of a batched matmul, symbolic and constant, and over its output
 * flattened per batch, over a dim of size 1, and concatenated), a sum of
 * an rmsnorm over other dims, a padded rmsnorm, layernorm over one
 * and two axes, an elementwise broadcast chain, conv2d + bias + relu in
 * NCHW and NHWC (direct and as an implicit GEMM), sums over the last axis
 * (of two and of three dims), over the first axis and over everything, and
 * a sum of sigmoid(x - row max); a batched matmul large enough for the
 * 128 x 128 block tiles. Each is auto-scheduled for CUDA, lowered once,
 * then
 *
 *   (1) built for "cuda -emit-only -arch=sm_80" and "-arch=sm_90", its PTX
 *       assembled by ptxas -v: no spills, at most 48 KiB of shared memory
 *       (tests/support/ptxas.h; skipped without ptxas);
 *   (2) run by the CUDA emulation harness (tests/support/cuda_emu.h: one
 *       host thread per CUDA thread, real barriers);
 *   (3) built for "cpu" (the gpu_to_cpu path) and run (not the tensor-core
 *       kernels: the wmma built-ins exist only for CUDA);
 *
 * (2) and (3) on random non-zero inputs with the output poisoned, against
 * the oracle, over odd, prime, 1-sized, non-tile-multiple and symbolic
 * shapes. The mapping is checked through the source (blockIdx/threadIdx,
 * float4, shared tiles, wmma calls) and the partition through the stages'
 * attach points; then TEX_DUMP=fusion for CUDA and the refused targets
 * (tex_tune on "cuda": test_tune).
 */
#include "tt.h"
#include "support/autosched.h"
#include "support/cuda_emu.h"
#include "support/ptxas.h"

static char cache_dir[] = "/tmp/tex-test-auto-schedule-cuda-XXXXXX";

/* Under make asan (TEX_SANITIZE_FLAGS set) only each chain's first shape runs. */
static bool quick;

/* The largest stack frame (local memory) of the kernels check_ptx last
 * assembled, in bytes. */
static long ptx_stack;

/* (1): the PTX of f for sm_80 and sm_90 through ptxas -v. */
static void check_ptx(as_case *c, tex_func *f)
{
    ptx_stack = 0;
    char ptxas[512], dir[] = "/tmp/tex-as-ptx-XXXXXX";
    if (!cuda_bin("ptxas", ptxas, sizeof ptxas) || !mkdtemp(dir)) {
        printf("  %s: PTX not checked (no ptxas)\n", c->w.name);
        return;
    }
    static const char *const archs[] = {"sm_80", "sm_90"};
    for (int a = 0; a < 2; a++) {
        char target[64], what[128], why[8192] = "";
        snprintf(target, sizeof target, "cuda -emit-only -arch=%s", archs[a]);
        snprintf(what, sizeof what, "%s %s", c->w.name, archs[a]);
        tex_kernel *k = tex_build(f, target);
        if (!k) {
            TT_FAILF("%s: tex_build: %s", what, tex_errmsg(c->ctx));
            continue;
        }
        bool skip = false;
        char *ptx = get_ptx(k, archs[a], dir, why, sizeof why, &skip);
        if (ptx) {
            long stack = check_ptxas(what, ptx, archs[a], dir, ptxas);
            ptx_stack = stack > ptx_stack ? stack : ptx_stack;
        } else if (skip)
            printf("  %s: PTX not checked (%s)\n", what, why);
        else
            TT_FAILF("%s: %s", what, why);
        free(ptx);
        tex_kernel_free(k);
    }
    rmdir(dir);
}

/* (2): f in the emulation harness against the oracle; the CUDA source in
 * *src (malloc'ed) for the mapping checks. */
static void check_emu(as_case *c, tex_func *f, char **src)
{
    char err[8192], why[2048];
    tex_kernel *k = tex_build(f, "cuda -emit-only");
    if (!k) {
        TT_FAILF("%s: tex_build(cuda -emit-only): %s", c->w.name, tex_errmsg(c->ctx));
        return;
    }
    *src = strdup(tex_kernel_source(k));
    cuda_emu *e =
        cuda_emu_have_cxx() ? cuda_emu_build(tex_kernel_source(k), err, sizeof err) : NULL;
    if (!cuda_emu_have_cxx()) {
        printf("  %s: not emulated (no g++)\n", c->w.name);
    } else if (!e) {
        TT_FAILF("%s: %s\n%s", c->w.name, err, tex_kernel_source(k));
    } else {
        if (e->log && e->log[0])
            TT_FAILF("%s: g++ -Wall warns about the generated code:\n%.2000s", c->w.name, e->log);
        cuda_emu_kernel m = {e, k};
        if (ops_run_with(&c->w, cuda_emu_runner, &m, "emulated: ", 11, why, sizeof why) != 0)
            TT_FAILF("%s: %s\n%s", c->w.name, why, tex_kernel_source(k));
    }
    cuda_emu_free(e);
    tex_kernel_free(k);
}

/* Auto-schedules c's output for target, lowers it and runs checks (1) to
 * (3) of the file comment. The schedule, or NULL after a failure (reported);
 * the CUDA source in *src (malloc'ed) when src is not NULL. */
static tex_schedule *cuda_case_check(as_case *c, tex_tensor *out, const char *target, char **src)
{
    char why[2048], *text = NULL;
    c->w.out = out;
    if (!out) {
        TT_FAILF("%s: building the operators failed: %s", c->w.name, tex_errmsg(c->ctx));
        return NULL;
    }
    tex_schedule *s = tex_auto_schedule(c->ctx, 1, &out, target);
    tex_func *f = s ? ops_lower(&c->w, s, why, sizeof why) : NULL;
    if (!f) {
        TT_FAILF("%s: %s: %s", c->w.name, s ? "tex_lower" : "tex_auto_schedule",
                 tex_errmsg(c->ctx));
        return NULL;
    }
    check_ptx(c, f);
    check_emu(c, f, &text);
    /* tensor-core kernels skip (3): the wmma built-ins have no CPU form, and
     * the CPU backend refuses the register-fragment ones of several warps */
    bool wmma = text && (strstr(text, "nvcuda::wmma") || strstr(text, "mma.sync"));
    if (!wmma && ops_jit_compare(&c->w, f, "cpu", 13, why, sizeof why) != 0)
        TT_FAILF("%s: gpu_to_cpu: %s", c->w.name, why);
    if (src)
        *src = text;
    else
        free(text);
    return s;
}

/* Whether src (NULL: a failure already reported) contains each of the
 * NULL-terminated fragments; a missing one fails the test. */
static void source_has(const char *name, const char *src, ...)
{
    va_list ap;
    va_start(ap, src);
    for (const char *frag; src && (frag = va_arg(ap, const char *)) != NULL;)
        if (!strstr(src, frag))
            TT_FAILF("%s: the CUDA source lacks \"%s\"", name, frag);
    va_end(ap);
}

/* ------------------------------------------------------------ elementwise */

/* Y = sigmoid(relu(A + B) * C), B broadcast along rows: one kernel, one
 * thread per element (per float4 when the row length allows). */
static void run_elementwise(int64_t m, int64_t n, bool sym)
{
    as_case c;
    case_init(&c, "elementwise", 2, (int64_t[]){m, n}, sym);
    tex_tensor *A = ops_input(&c.w, "A", 2, c.d);
    tex_tensor *B = ops_input(&c.w, "B", 1, &c.d[1]);
    tex_tensor *C = ops_input(&c.w, "C", 2, c.d);
    tex_tensor *t = tex_op_relu(c.ctx, "R", tex_op_add(c.ctx, "S", A, B));
    tex_tensor *Y = tex_op_sigmoid(c.ctx, "Y", tex_op_mul(c.ctx, "P", t, C));
    char *src = NULL;
    tex_schedule *s = cuda_case_check(&c, Y, "cuda", &src);
    if (s) {
        TT_EQ_INT(n_roots(s), 1);
        TT_EQ_INT(attach_of(s, "R"), TEXI_ATTACH_INLINE);
        source_has(c.w.name, src, "blockIdx.x", "threadIdx.x", NULL);
        if (!sym && n % 4 == 0 && m * n / 4 % 32 == 0)
            source_has(c.w.name, src, "float4", NULL);
    }
    free(src);
    tex_ctx_free(c.ctx);
}

/* Ten chained gelus (each reads its input five times): no value is copied
 * into more than 16 places, so the chain is cut into kernels instead of one
 * expression of 5^9 copies; the source stays small. */
static void run_gelu_chain(int64_t m, int64_t n, bool sym)
{
    as_case c;
    case_init(&c, "gelu_chain", 2, (int64_t[]){m, n}, sym);
    tex_tensor *Y = ops_input(&c.w, "X", 2, c.d);
    char name[16];
    for (int k = 0; Y && k < 10; k++) {
        snprintf(name, sizeof name, "G%d", k);
        Y = tex_op_gelu_tanh(c.ctx, name, Y);
    }
    char *src = NULL;
    tex_schedule *s = cuda_case_check(&c, Y, "cuda", &src);
    if (s) {
        TT_CHECK(n_roots(s) >= 4 && n_roots(s) <= 5);
        if (src && strlen(src) > 32 * 1024)
            TT_FAILF("%s: %zu bytes of CUDA", c.w.name, strlen(src));
    }
    free(src);
    tex_ctx_free(c.ctx);
}

static void test_elementwise(void)
{
    run_elementwise(7, 13, false);
    run_gelu_chain(5, 33, false);
    if (quick)
        return;
    run_gelu_chain(9, 70, true);
    run_elementwise(1, 1, false);
    run_elementwise(37, 101, true);
    run_elementwise(3, 1000, false);
    run_elementwise(6, 1024, false);
}

/* ---------------------------------------------------------- row-wise chains */

/* softmax over the last axis: one block per row, max and sum across threads. */
static void run_softmax(int64_t m, int64_t n, bool sym, const char *target)
{
    as_case c;
    case_init(&c, "softmax", 2, (int64_t[]){m, n}, sym);
    tex_tensor *X = ops_input(&c.w, "X", 2, c.d);
    char *src = NULL;
    tex_schedule *s = cuda_case_check(&c, tex_op_softmax(c.ctx, "Y", X, -1), target, &src);
    if (s) {
        TT_EQ_INT(n_roots(s), 1);
        TT_EQ_INT(attach_of(s, "Y_max"), TEXI_ATTACH_AT);
        TT_EQ_INT(attach_of(s, "Y_sum"), TEXI_ATTACH_AT);
        TT_EQ_INT(attach_of(s, "Y_exp"), TEXI_ATTACH_INLINE);
        source_has(c.w.name, src, "__shared__", "threadIdx.x", NULL);
    }
    free(src);
    tex_ctx_free(c.ctx);
}

/* softmax over the rows of a batched matmul: the kernel's rows are the
 * batch, and the matmul, a member of it, was computed per row in shared
 * memory by a cross-thread reduction over its depth (with a symbolic row
 * count its tile had no constant size, and tex_build refused it; a conv
 * so computed read past its input's rows); a GEMM-like stage gets block
 * tiles of its own. */
static void run_softmax_of_matmul(bool sym)
{
    as_case c;
    case_init(&c, "softmax_of_matmul", 3, (int64_t[]){2, 9, 24}, sym);
    tex_expr *N = tex_int(c.ctx, 16);
    tex_tensor *A = ops_input(&c.w, "A", 3, c.d);
    tex_tensor *B = ops_input(&c.w, "B", 2, (tex_expr *[]){c.d[2], N});
    tex_tensor *y = tex_op_softmax(c.ctx, "Y", tex_op_matmul(c.ctx, "MM", A, B, 0, 0), -2);
    tex_schedule *s = cuda_case_check(&c, y, "cuda", NULL);
    if (s)
        TT_EQ_INT(attach_of(s, "MM"), TEXI_ATTACH_ROOT);
    tex_ctx_free(c.ctx);
}

/* log_softmax over a batched matmul's output flattened per batch (a
 * reshape, read in i64 through divisions by the symbolic row count): the
 * matmul's region was an expression bound inference could not simplify,
 * and its GEMM kernel's shared and local buffers had no constant bound, so
 * tex_build refused them; the region is now its whole domain. */
static void run_log_softmax_of_flat_matmul(void)
{
    as_case c;
    case_init(&c, "log_softmax_of_flat_matmul", 3, (int64_t[]){2, 5, 30}, true);
    tex_expr *N = tex_int(c.ctx, 128);
    tex_tensor *A = ops_input(&c.w, "A", 3, c.d);
    tex_tensor *B = ops_input(&c.w, "B", 2, (tex_expr *[]){c.d[2], N});
    tex_tensor *mm = tex_op_matmul(c.ctx, "MM", A, B, 0, 0);
    tex_tensor *flat =
        tex_op_reshape(c.ctx, "F", mm, 2, (tex_expr *[]){c.d[0], tex_mul(c.d[1], N)});
    tex_schedule *s = cuda_case_check(&c, tex_op_log_softmax(c.ctx, "Y", flat, -1), "cuda", NULL);
    if (s)
        TT_EQ_INT(attach_of(s, "MM"), TEXI_ATTACH_ROOT);
    tex_ctx_free(c.ctx);
}

/* softmax over a leading dim of size 1: the rows are every element, and
 * each reduction member reduces one element; split over 128 threads, its
 * guarded tail read 127 rows past its producer's, and tex_lower refused the
 * schedule (the producer's extra rows recomputed the member per row). */
static void run_softmax_of_one(void)
{
    as_case c;
    case_init(&c, "softmax_of_one", 0, NULL, false);
    tex_tensor *X = ops_input(
        &c.w, "X", 4,
        (tex_expr *[]){tex_int(c.ctx, 1), tex_int(c.ctx, 8), tex_int(c.ctx, 5), tex_int(c.ctx, 5)});
    cuda_case_check(&c, tex_op_softmax(c.ctx, "Y", tex_op_relu(c.ctx, "R", X), 0), "cuda", NULL);
    tex_ctx_free(c.ctx);
}

/* softmax over dim 2, then concatenated along dim 0 with another tensor:
 * the concat reads the softmax over both parts' rows, and its rows past the
 * softmax's own were computed too (their per-row members repeated: tex_lower
 * refused); a root's constant region is now cut to its domain. */
static void run_softmax_concat(void)
{
    as_case c;
    case_init(&c, "softmax_concat", 0, NULL, false);
    tex_expr *d[4] = {tex_int(c.ctx, 1), tex_int(c.ctx, 16), tex_int(c.ctx, 7), tex_int(c.ctx, 3)};
    tex_tensor *X = ops_input(&c.w, "X", 4, d);
    d[0] = tex_int(c.ctx, 2);
    tex_tensor *Z = ops_input(&c.w, "Z", 4, d);
    tex_tensor *y = tex_op_gelu_tanh(c.ctx, "G", tex_op_softmax(c.ctx, "S", X, 2));
    cuda_case_check(&c, tex_op_concat(c.ctx, "Y", 2, (tex_tensor *[]){y, Z}, 0), "cuda", NULL);
    tex_ctx_free(c.ctx);
}

/* A reduction over dims 2 and 4 of an rmsnorm over the last two: the
 * reduction kernel puts every data dim on blocks, and the norm's sum of
 * squares, indexed by fewer of them, was computed per block (tex_lower
 * refused it as recomputed); it is now a kernel of its own. */
static void run_sum_of_rmsnorm(void)
{
    as_case c;
    case_init(&c, "sum_of_rmsnorm", 0, NULL, false);
    tex_expr *d[5] = {tex_int(c.ctx, 2), tex_int(c.ctx, 1), tex_int(c.ctx, 4), tex_int(c.ctx, 3),
                      tex_int(c.ctx, 64)};
    tex_tensor *X = ops_input(&c.w, "X", 5, d);
    tex_tensor *n = tex_op_rmsnorm(c.ctx, "N", X, NULL, 2, 1e-5);
    tex_tensor *y = tex_op_sum(c.ctx, "Y", n, 2, (int[]){2, 4}, 1);
    cuda_case_check(&c, y, "cuda -strict-float", NULL);
    tex_ctx_free(c.ctx);
}

/* rmsnorm over the last dim, then padded along a symbolic dim: the pad
 * reads the norm past its rows, which were all computed, and the sum of
 * squares per row spanned every row in shared memory (no constant bound:
 * tex_build refused it); the root's region is cut to its domain. */
static void run_padded_rmsnorm(void)
{
    as_case c;
    case_init(&c, "padded_rmsnorm", 3, (int64_t[]){3, 13, 16}, true);
    tex_tensor *X = ops_input(&c.w, "X", 3, c.d);
    tex_tensor *p = tex_op_pad(c.ctx, "P", tex_op_rmsnorm(c.ctx, "N", X, NULL, 1, 1e-5),
                               (int64_t[]){0, 1, 0}, (int64_t[]){0, 1, 0}, 0.5);
    cuda_case_check(&c, tex_op_tanh(c.ctx, "Y", p), "cuda", NULL);
    tex_ctx_free(c.ctx);
}

static void test_softmax(void)
{
    run_softmax(5, 17, false, "cuda");
    run_softmax_of_matmul(true);
    if (quick)
        return;
    run_softmax_of_matmul(false);
    run_log_softmax_of_flat_matmul();
    run_softmax_of_one();
    run_softmax_concat();
    run_sum_of_rmsnorm();
    run_padded_rmsnorm();
    run_softmax(1, 1, false, "cuda");
    run_softmax(13, 1031, true, "cuda -arch=sm_90");
    run_softmax(6, 300, false, "cuda -strict-float");
}

/* layernorm over the last n_axes of X [b, m, n]. */
static void run_layernorm(int64_t b, int64_t m, int64_t n, int n_axes, bool sym)
{
    as_case c;
    case_init(&c, "layernorm", 3, (int64_t[]){b, m, n}, sym);
    tex_tensor *X = ops_input(&c.w, "X", 3, c.d);
    tex_tensor *G = ops_input(&c.w, "G", n_axes, &c.d[3 - n_axes]);
    tex_tensor *Be = ops_input(&c.w, "Be", n_axes, &c.d[3 - n_axes]);
    tex_schedule *s =
        cuda_case_check(&c, tex_op_layernorm(c.ctx, "Y", X, G, Be, n_axes, 1e-5), "cuda", NULL);
    if (s) {
        TT_EQ_INT(n_roots(s), 1);
        TT_EQ_INT(attach_of(s, "Y_sum"), TEXI_ATTACH_AT);
    }
    tex_ctx_free(c.ctx);
}

static void test_layernorm(void)
{
    run_layernorm(2, 7, 33, 1, false);
    if (quick)
        return;
    run_layernorm(1, 1, 1, 1, false);
    run_layernorm(3, 5, 129, 1, true);
    run_layernorm(2, 3, 19, 2, false);
}

/* ------------------------------------------------------------------ matmul */

/* The shared fetches of an f32 GEMM's tiles: A (read as A[.., m, k])
 * stored k-major and padded, each step's copies asynchronous (cp.async)
 * when there is a next step to fetch while computing (two full K tiles of
 * 8 or more: a loop of one step is not pipelined). */
static void check_gemm_fetch(const char *name, tex_schedule *s, const char *src, bool pipelined)
{
    char *text = tex_schedule_str(s);
    const char *a = text ? strstr(text, "stage A.shared") : NULL;
    const char *next = a ? strstr(a + 1, "\nstage ") : NULL;
    const char *order = a ? strstr(a, "storage order ") : NULL;
    if (!order || (next && order > next))
        TT_FAILF("%s: A.shared is not stored k-major:\n%s", name, text ? text : "(no text)");
    if (order && !strstr(order, "storage align "))
        TT_FAILF("%s: A.shared's k rows are not padded", name);
    free(text);
    if (pipelined)
        source_has(name, src, "tex_cp_async4(&A_shared[", "tex_cp_async4(&B_shared[",
                   "tex_cp_async_wait();", NULL);
}

/* [bt,] M x K times K x N, plus (epilogue) relu(. + bias along N). */
static void run_matmul(int64_t bt, int64_t m, int64_t n, int64_t k, bool epilogue, bool sym)
{
    as_case c;
    case_init(&c, epilogue ? "matmul_bias_relu" : "matmul", 4, (int64_t[]){bt, m, n, k}, sym);
    int nd = bt > 0 ? 3 : 2;
    tex_expr *sa[3] = {c.d[0], c.d[1], c.d[3]}, *sb[3] = {c.d[0], c.d[3], c.d[2]};
    tex_tensor *A = ops_input(&c.w, "A", nd, bt > 0 ? sa : sa + 1);
    tex_tensor *B = ops_input(&c.w, "B", nd, bt > 0 ? sb : sb + 1);
    tex_tensor *Y = tex_op_matmul(c.ctx, epilogue ? "MM" : "Y", A, B, 0, 0);
    if (epilogue) {
        tex_tensor *bias = ops_input(&c.w, "bias", 1, &c.d[2]);
        Y = tex_op_relu(c.ctx, "Y", tex_op_bias_add(c.ctx, "Yb", Y, bias, -1));
    }
    char *src = NULL;
    tex_schedule *s = cuda_case_check(&c, Y, "cuda", &src);
    if (s && epilogue) {
        TT_EQ_INT(n_roots(s), 1);
        TT_EQ_INT(attach_of(s, "MM"), TEXI_ATTACH_AT);
    }
    if (s && !sym && k >= 8) {
        source_has(c.w.name, src, "__shared__", "blockIdx.y", "threadIdx.y", NULL);
        check_gemm_fetch(c.w.name, s, src, k >= 16);
    }
    /* k % 8 unrolled only where the tiles cover M and N exactly: 64 x 64
     * tiles of multiples of 64 (not the large GEMMs' 128 x 128 tiles), not
     * tiles of 64 that an extent neither fills nor divides (37, 33) */
    int64_t tiles = (bt > 0 ? bt : 1) * ((m + 127) / 128) * ((n + 127) / 128);
    bool big = m >= 128 && n >= 128 && tiles >= 128,
         loop = src && strstr(src, "for (int32_t k_inner");
    bool ragged = (m % 16 && (m & (m - 1))) || (n % 16 && (n & (n - 1)));
    if (s && !sym && k >= 8 && !big && m % 64 == 0 && n % 64 == 0 && loop)
        TT_FAILF("%s: k %% 8 not unrolled", c.w.name);
    if (s && k >= 8 && (sym || ragged) && src && !loop)
        TT_FAILF("%s: k %% 8 unrolled in tiles with bounds checks", c.w.name);
    /* 128 x 128 block tiles of 16 x 16 threads with 8 x 8 outputs each where
     * both dims are at least 128 and there are 128 such tiles or more */
    if (s && !sym && big)
        source_has(c.w.name, src, "[64];", "block (16, 16, 1)", NULL);
    free(src);
    tex_ctx_free(c.ctx);
}

static void test_matmul(void)
{
    run_matmul(0, 37, 33, 70, true, false);
    if (quick)
        return;
    run_matmul(0, 1, 1, 1, false, false);
    run_matmul(0, 64, 128, 40, false, false);
    run_matmul(0, 13, 29, 31, true, true);
    run_matmul(2, 5, 9, 7, false, false);
    run_matmul(3, 17, 20, 9, true, false);
    run_matmul(32, 130, 131, 11, true, false);
}

/* The epilogue of a half matmul case. */
enum half_epilogue { HALF_NONE, HALF_RELU, HALF_BIAS_RELU };

/* Checks of a tensor-core source on the register-fragment form (f16,
 * sm_80+): mma.sync on fragments kept in registers (no stack frame), the
 * operands' K tiles in shared memory, the accumulators written back once by
 * the store built-in; without an epilogue no f32 shared array at all. */
static void check_fragments(const char *name, const char *src, bool epilogue)
{
    source_has(name, src, "mma.sync.aligned.m16n8k16", "tex_mma_frag_store",
               "__shared__ __align__(16) __half", NULL);
    if (src && strstr(src, "nvcuda::wmma"))
        TT_FAILF("%s: the wmma built-ins on the register-fragment path", name);
    if (src && !epilogue && strstr(src, "__shared__ float"))
        TT_FAILF("%s: accumulators in shared memory", name);
    if (ptx_stack != 0)
        TT_FAILF("%s: %ld bytes of stack frame: the fragments left registers", name, ptx_stack);
}

/* C = sum_k f32(A[i, k]) * f32(B[k, j]) with A, B in dtype t, then the
 * epilogue ep: tensor cores when M, N, K are multiples of 16 (f16 from
 * sm_80: register fragments; else wmma), else register tiles. */
static void run_half_matmul(tex_dtype t, int64_t m, int64_t n, int64_t k, enum half_epilogue ep,
                            int sm)
{
    as_case c;
    case_init(&c, t == TEX_F16 ? "f16_matmul" : "bf16_matmul", 3, (int64_t[]){m, n, k}, false);
    tex_tensor *A = tex_placeholder(c.ctx, "A", t, 2, (tex_expr *[]){c.d[0], c.d[2]});
    tex_tensor *B = tex_placeholder(c.ctx, "B", t, 2, (tex_expr *[]){c.d[2], c.d[1]});
    c.w.in[c.w.n_in++] = A;
    c.w.in[c.w.n_in++] = B;
    tex_iter *i = tex_axis(c.ctx, "i", c.d[0]), *j = tex_axis(c.ctx, "j", c.d[1]);
    tex_iter *r = tex_reduce_axis(c.ctx, "k", c.d[2]);
    tex_expr *prod = tex_mul(tex_cast(TEX_F32, TEX_AT(A, tex_iv(i), tex_iv(r))),
                             tex_cast(TEX_F32, TEX_AT(B, tex_iv(r), tex_iv(j))));
    tex_tensor *C = tex_compute(c.ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, &r));
    if (ep == HALF_BIAS_RELU)
        C = tex_op_bias_add(c.ctx, "Cb", C, ops_input(&c.w, "bias", 1, &c.d[1]), 1);
    if (ep != HALF_NONE)
        C = tex_op_relu(c.ctx, "Y", C);
    char *src = NULL, target[64];
    snprintf(target, sizeof target, "cuda -arch=sm_%d", sm);
    tex_schedule *s = cuda_case_check(&c, C, target, &src);
    bool tc = m % 16 == 0 && n % 16 == 0 && k % 16 == 0;
    if (s && tc && t == TEX_F16 && sm >= 80)
        check_fragments(c.w.name, src, ep != HALF_NONE);
    else if (s && tc)
        source_has(c.w.name, src, "nvcuda::wmma::mma_sync", NULL);
    if (s && !tc && src && (strstr(src, "wmma") || strstr(src, "mma.sync")))
        TT_FAILF("%s: tensor cores on a shape that is not a multiple of 16", c.w.name);
    free(src);
    tex_ctx_free(c.ctx);
}

static void test_half_matmul(void)
{
    run_half_matmul(TEX_F16, 64, 48, 32, HALF_NONE, 80);
    if (quick)
        return;
    run_half_matmul(TEX_F16, 32, 16, 48, HALF_RELU, 80);
    run_half_matmul(TEX_F16, 32, 48, 64, HALF_NONE, 80);
    run_half_matmul(TEX_F16, 128, 128, 32, HALF_BIAS_RELU, 90);
    run_half_matmul(TEX_F16, 64, 256, 48, HALF_BIAS_RELU, 80);
    run_half_matmul(TEX_F16, 1536, 1280, 32, HALF_NONE, 90); /* 128 x 128 blocks, 8 warps */
    run_half_matmul(TEX_F16, 48, 32, 16, HALF_NONE, 75);     /* before sm_80: wmma */
    run_half_matmul(TEX_BF16, 16, 32, 16, HALF_NONE, 80);
    run_half_matmul(TEX_BF16, 32, 64, 32, HALF_BIAS_RELU, 80);
    run_half_matmul(TEX_F16, 40, 24, 36, HALF_NONE, 80);
}

/* ------------------------------------------------------------------- conv */

/* relu(conv2d(X, W) + bias) with padding 1, stride st, one image; with
 * gemm, the implicit-GEMM form (tex_op_conv2d_gemm: one reduce axis). */
static void run_conv(tex_layout layout, int64_t ch, int64_t hw, int64_t f, int64_t st, bool gemm)
{
    static const char *const names[2][2] = {{"conv_nchw", "conv_nhwc"},
                                            {"conv_gemm_nchw", "conv_gemm_nhwc"}};
    as_case c;
    case_init(&c, names[gemm][layout != TEX_LAYOUT_NCHW], 0, NULL, false);
    tex_expr *C = tex_int(c.ctx, ch), *H = tex_int(c.ctx, hw), *F = tex_int(c.ctx, f);
    tex_expr *three = tex_int(c.ctx, 3), *one = tex_int(c.ctx, 1);
    bool nchw = layout == TEX_LAYOUT_NCHW;
    tex_tensor *X =
        ops_input(&c.w, "X", 4, nchw ? (tex_expr *[]){one, C, H, H} : (tex_expr *[]){one, H, H, C});
    tex_tensor *W =
        ops_input(&c.w, "W", 4,
                  nchw ? (tex_expr *[]){F, C, three, three} : (tex_expr *[]){three, three, C, F});
    tex_tensor *bias = ops_input(&c.w, "bias", 1, &F);
    tex_tensor *y = (gemm ? tex_op_conv2d_gemm : tex_op_conv2d)(
        c.ctx, "Cv", X, W, (int64_t[]){st, st}, (int64_t[]){1, 1}, NULL, 1, layout);
    y = tex_op_relu(c.ctx, "Y", tex_op_bias_add(c.ctx, "Yb", y, bias, nchw ? 1 : 3));
    tex_schedule *s = cuda_case_check(&c, y, "cuda", NULL);
    if (s) {
        TT_EQ_INT(n_roots(s), 1);
        TT_EQ_INT(attach_of(s, "Cv_pad"), TEXI_ATTACH_INLINE);
    }
    tex_ctx_free(c.ctx);
}

static void test_conv(void)
{
    run_conv(TEX_LAYOUT_NCHW, 3, 9, 4, 1, false);
    if (quick)
        return;
    run_conv(TEX_LAYOUT_NCHW, 5, 13, 7, 2, false);
    run_conv(TEX_LAYOUT_NHWC, 3, 9, 17, 1, false);
    run_conv(TEX_LAYOUT_NHWC, 1, 1, 1, 1, false);
    run_conv(TEX_LAYOUT_NHWC, 5, 11, 19, 1, true);
    run_conv(TEX_LAYOUT_NCHW, 3, 8, 6, 2, true);
}

/* -------------------------------------------------------------- reductions */

enum { RED_SUM_ROWS, RED_SUM_COLS, RED_SUM_ALL, RED_SUM_ROWS3, RED_SUM_EXP };

/* sum of tanh(X) over the last axis, the first axis, both, the last of
 * three; or sum(sigmoid(X - max(X))) over the last axis (the row max computed
 * inside the sum's kernel, both reduced across threads). */
static void run_reduce(int which, int64_t m, int64_t n, bool sym)
{
    static const char *const names[] = {"sum_rows", "sum_cols", "sum_all", "sum_rows3",
                                        "sum_sigmoid"};
    as_case c;
    case_init(&c, names[which], 3, (int64_t[]){m, n, 5}, sym);
    bool three = which == RED_SUM_ROWS3;
    tex_tensor *X =
        ops_input(&c.w, "X", three ? 3 : 2, three ? (tex_expr *[]){c.d[2], c.d[0], c.d[1]} : c.d);
    tex_tensor *e = tex_op_tanh(c.ctx, "T", X), *y = NULL;
    switch (which) {
    case RED_SUM_ROWS:
    case RED_SUM_ROWS3:
        y = tex_op_sum(c.ctx, "Y", e, 1, (int[]){-1}, 0);
        break;
    case RED_SUM_COLS:
        y = tex_op_sum(c.ctx, "Y", e, 1, (int[]){0}, 0);
        break;
    case RED_SUM_ALL:
        y = tex_op_sum(c.ctx, "Y", e, 0, NULL, 0);
        break;
    case RED_SUM_EXP:
        e = tex_op_sub(c.ctx, "T", X, tex_op_max(c.ctx, "Mx", X, 1, (int[]){1}, 1));
        y = tex_op_sum(c.ctx, "Y", tex_op_sigmoid(c.ctx, "E", e), 1, (int[]){1}, 0);
        break;
    }
    tex_schedule *s = cuda_case_check(&c, y, "cuda", NULL);
    if (s)
        TT_EQ_INT(attach_of(s, "T"), TEXI_ATTACH_INLINE);
    if (s && which == RED_SUM_EXP)
        TT_EQ_INT(attach_of(s, "Mx"), TEXI_ATTACH_AT);
    tex_ctx_free(c.ctx);
}

static void test_reductions(void)
{
    for (int which = RED_SUM_ROWS; which <= RED_SUM_EXP; which++) {
        run_reduce(which, 7, 45, false);
        if (quick)
            continue;
        run_reduce(which, 1, 1, false);
        run_reduce(which, 31, 267, true);
    }
}

/* ------------------------------------------------------------ dump, errors */

/* TEX_DUMP=fusion names the target and CUDA's inlined row members. */
static void test_dump(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 2, (int64_t[]){4, 8});
    tex_tensor *Y = tex_op_softmax(ctx, "Y", X, 1);
    char text[4096];
    dump_fusion(ctx, 1, &Y, "cuda -arch=sm_80", text, sizeof text);
    TT_CHECK(strstr(text, "# fusion (cuda -arch=sm_80): 1 kernel") != NULL);
    TT_CHECK(strstr(text, "'Y_max' reduction: computed inside it") != NULL);
    TT_CHECK(strstr(text, "'Y_exp' elementwise: inlined -- CUDA") != NULL);
    if (tt_failed_checks)
        printf("  dump:\n%s", text);
    tex_ctx_free(ctx);
}

static void test_errors(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 1, (int64_t[]){4});
    tex_tensor *Y = tex_op_relu(ctx, "Y", X);
    static const char *const bad[] = {"cuda -threads=2",
                                      "cuda -arch=sm_8",
                                      "cuda -arch=sm_35",
                                      "cuda -arch=sm_8x",
                                      "cuda -fast",
                                      "cuda -arch=",
                                      "cudax"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        TT_CHECK(tex_auto_schedule(ctx, 1, &Y, bad[i]) == NULL);
        TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
        TT_CHECK(strstr(tex_errmsg(ctx), "tex_auto_schedule") != NULL);
        TT_CHECK(strstr(tex_errmsg(ctx),
                        i + 1 < sizeof bad / sizeof bad[0] ? "unknown option" : "unknown target"));
        tex_clear_error(ctx);
    }
    TT_CHECK(tex_auto_schedule(ctx, 1, &Y, "cpu -arch=sm_80") == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    tex_clear_error(ctx);
    TT_CHECK(tex_auto_schedule(ctx, 1, &Y, NULL) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    tex_clear_error(ctx);
    tex_schedule *s = tex_auto_schedule(ctx, 1, &Y, " cuda  -arch=sm_90 -strict-float -emit-only");
    TT_CHECK(s != NULL);
    char *text = s ? tex_schedule_str(s) : NULL;
    TT_CHECK(text && strstr(text, "blockIdx.x") != NULL);
    free(text);
    tex_ctx_free(ctx);
}

int main(void)
{
    quick = getenv("TEX_SANITIZE_FLAGS") != NULL;
    if (oc_setup(cache_dir) != 0) {
        printf("test_auto_schedule_cuda: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_errors);
    TT_RUN(test_dump);
    if (!tex_target_available("cpu")) {
        printf("SKIP auto_schedule_cuda (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_elementwise);
    TT_RUN(test_softmax);
    TT_RUN(test_layernorm);
    TT_RUN(test_matmul);
    TT_RUN(test_half_matmul);
    TT_RUN(test_conv);
    TT_RUN(test_reductions);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
