/*
 * tex_auto_schedule (src/autosched) on the CPU: operator chains built with
 * tex_op_* (elementwise chains, softmax, log_softmax, layernorm, rmsnorm,
 * matmul alone, batched, with bias + gelu epilogues, the transformer MLP
 * block, conv2d + bias + relu in both layouts, pooling, reductions along
 * rows, columns and everything, argmax, reshape/transpose chains), each
 * auto-scheduled, JIT-compiled, run on random non-zero inputs with the
 * output poisoned and compared with the oracle (tests/support/ops.h) over
 * odd, prime, 1-sized and symbolic shapes. The partition is checked against
 * the cost rule through the stages' attach points (elementwise producers
 * inlined, softmax one kernel over rows, a matmul inside its epilogue's
 * tiles, the MLP two kernels), TEX_DUMP=fusion's text, and the error paths.
 */
#include "tt.h"
#include "support/autosched.h"

#include <fcntl.h>
#include <unistd.h>

static char cache_dir[] = "/tmp/tex-test-auto-schedule-XXXXXX";

/* Under make asan (TEX_SANITIZE_FLAGS set) kernels are compiled with the
 * sanitizers, which takes minutes for the larger unrolled GEMM tiles: each
 * chain then runs its first shape only. */
static bool quick;

/* How many next-row hints of tensor t schedule s holds (tex_prefetch_at
 * from the row loop, one iteration ahead). */
static int n_hints(tex_schedule *s, const char *t)
{
    char *str = tex_schedule_str(s), want[64];
    snprintf(want, sizeof want, "prefetch %s at axis ", t);
    int n = 0;
    for (const char *at = str ? strstr(str, want) : NULL; at; at = strstr(at + 1, want))
        n += strstr(at, ", 1 iterations of axis ") == strchr(at, ',');
    free(str);
    return n;
}

/* ------------------------------------------------------------ elementwise */

/* Y = sigmoid(relu(A + B) * C) with B broadcast along rows; all inlined. */
static void run_elementwise(int64_t m, int64_t n, bool sym)
{
    as_case c;
    case_init(&c, "elementwise", 2, (int64_t[]){m, n}, sym);
    tex_tensor *A = ops_input(&c.w, "A", 2, c.d);
    tex_tensor *B = ops_input(&c.w, "B", 1, &c.d[1]);
    tex_tensor *C = ops_input(&c.w, "C", 2, c.d);
    tex_tensor *t = tex_op_relu(c.ctx, "R", tex_op_add(c.ctx, "S", A, B));
    tex_tensor *Y = tex_op_sigmoid(c.ctx, "Y", tex_op_mul(c.ctx, "P", t, C));
    tex_schedule *s = case_check(&c, Y, "cpu");
    if (s) {
        TT_EQ_INT(attach_of(s, "S"), TEXI_ATTACH_INLINE);
        TT_EQ_INT(attach_of(s, "R"), TEXI_ATTACH_INLINE);
        TT_EQ_INT(attach_of(s, "P"), TEXI_ATTACH_INLINE);
        TT_EQ_INT(n_roots(s), 1);
    }
    tex_ctx_free(c.ctx);
}

static void test_elementwise(void)
{
    run_elementwise(7, 13, false);
    if (quick)
        return;
    run_elementwise(1, 1, false);
    run_elementwise(37, 101, true);
    run_elementwise(3, 1000, false);
}

/* ---------------------------------------------------------- row-wise chains */

/* softmax (or log_softmax) over the last axis: one kernel over rows. */
static void run_softmax(int64_t m, int64_t n, bool sym, bool log, const char *target)
{
    as_case c;
    case_init(&c, log ? "log_softmax" : "softmax", 2, (int64_t[]){m, n}, sym);
    tex_tensor *X = ops_input(&c.w, "X", 2, c.d);
    tex_tensor *Y = log ? tex_op_log_softmax(c.ctx, "Y", X, -1) : tex_op_softmax(c.ctx, "Y", X, -1);
    tex_schedule *s = case_check(&c, Y, target);
    if (s) {
        TT_EQ_INT(n_roots(s), 1);
        TT_EQ_INT(attach_of(s, "Y_max"), TEXI_ATTACH_AT);
        TT_EQ_INT(attach_of(s, "Y_sum"), TEXI_ATTACH_AT);
        if (!log)
            TT_EQ_INT(attach_of(s, "Y_exp"), TEXI_ATTACH_AT);
        /* X's next row hinted once in rows of several vector steps, never
         * in rows of one element; so is Y's (for writing) when the last
         * pass reads no X (softmax's rescaling, not log_softmax's) */
        if (n > 64 || n == 1) {
            TT_EQ_INT(n_hints(s, "X"), n > 64);
            TT_EQ_INT(n_hints(s, "Y"), n > 64 && !log);
        }
    }
    tex_ctx_free(c.ctx);
}

static void test_softmax(void)
{
    run_softmax(5, 17, false, false, "cpu");
    if (quick)
        return;
    run_softmax(1, 1, false, false, "cpu");
    run_softmax(13, 1031, true, false, "cpu -threads=2");
    run_softmax(64, 64, false, false, "cpu -strict-float");
    run_softmax(5, 17, false, true, "cpu");
    run_softmax(11, 257, true, true, "cpu");
}

/* softmax over the last axis of X [b, s, s] (attention's probabilities):
 * with a symbolic s the rows' loop fuses b with a loop of symbolic count,
 * and its members still take one row each (constant extents), their
 * reductions vectorized and the exponentials' row on the stack while it
 * fits (no malloc per row; s = 4133 does not fit). */
static void run_softmax_square(int64_t b, int64_t sq, bool sym)
{
    as_case c;
    case_init(&c, "softmax_square", 2, (int64_t[]){b, sq}, sym);
    tex_tensor *X = ops_input(&c.w, "X", 3, (tex_expr *[]){c.d[0], c.d[1], c.d[1]});
    tex_schedule *s = case_check(&c, tex_op_softmax(c.ctx, "Y", X, -1), "cpu -threads=2");
    if (s && sym && sq > 1) { /* (a size of 1 stays a constant) */
        TT_CHECK(!kernel_source_has(&c, s, "cpu -threads=2", "vectorize_failed"));
        TT_CHECK(kernel_source_has(&c, s, "cpu -threads=2", "Y_exp_stack["));
    }
    tex_ctx_free(c.ctx);
}

static void test_softmax_square(void)
{
    run_softmax_square(3, 37, true);
    if (quick)
        return;
    run_softmax_square(2, 1, true);
    run_softmax_square(1, 4133, true);
    run_softmax_square(4, 16, false);
}

/* gelu(gelu(max pooling)) of X [2, n, 12, 5, 2] over its last axis,
 * reshaped to [2n, 60] (n symbolic). The pooling's loops fuse into one,
 * whose index unflattened to P's four dims flattens back to the loop
 * variable (i/60*60 + i/5%12*5 + i%5 = i): P's stores are one address per
 * iteration, no divisions. The rows read P through the reshape as vectors,
 * not gathers. */
static void run_reshaped_pool(int64_t n, bool sym)
{
    as_case c;
    case_init(&c, "reshaped_pool", 1, (int64_t[]){n}, sym);
    tex_ctx *x = c.ctx;
    tex_tensor *X = ops_input(
        &c.w, "X", 5,
        (tex_expr *[]){tex_int(x, 2), c.d[0], tex_int(x, 12), tex_int(x, 5), tex_int(x, 2)});
    tex_tensor *P = tex_op_max(x, "P", X, 1, (const int[]){4}, 0);
    tex_expr *rows = tex_mul(tex_int(x, 2), c.d[0]);
    tex_tensor *R = P ? tex_op_reshape(x, "R", P, 2, (tex_expr *[]){rows, tex_int(x, 60)}) : NULL;
    tex_tensor *G = R ? tex_op_gelu_tanh(x, "G", R) : NULL;
    tex_schedule *s = case_check(&c, G ? tex_op_gelu_tanh(x, "H", G) : NULL, "cpu");
    if (s) {
        TT_CHECK(kernel_source_has(&c, s, "cpu", "P[i0_i1_fused_i2_fused_i3_fused] = "));
        TT_CHECK(!kernel_source_has(&c, s, "cpu", "_f32){P["));
    }
    tex_ctx_free(x);
}

static void test_reshaped_pool(void)
{
    run_reshaped_pool(7, true);
    if (!quick)
        run_reshaped_pool(3, false);
}

/* A chain of elementwise operators that read their input several times
 * (gelu five times, silu twice), in one kernel. Inlined whole, the first
 * operator's value would be copied 5^(depth-1) times (six gelus printed
 * 1.6 MB of C; seven took 13 s to schedule and lower): the partition inlines
 * a value into at most 16 places and computes the others per row, and each
 * value repeated in a store is computed once (pass share_values). */
static void run_inlined_chain(int depth, int64_t m, int64_t n, bool sym)
{
    as_case c;
    case_init(&c, "inlined_chain", 2, (int64_t[]){m, n}, sym);
    tex_tensor *Y = ops_input(&c.w, "X", 2, c.d);
    char name[16];
    for (int k = 0; Y && k < depth; k++) {
        snprintf(name, sizeof name, "G%d", k);
        Y = k % 3 == 2 ? tex_op_silu(c.ctx, name, Y) : tex_op_gelu_tanh(c.ctx, name, Y);
    }
    tex_schedule *s = case_check(&c, Y, "cpu");
    if (s) {
        TT_EQ_INT(n_roots(s), 1);
        size_t len = kernel_source_length(&c, s, "cpu");
        if (len > 48 * 1024)
            TT_FAILF("%d operators: %zu bytes of C", depth, len);
        /* at least every third operator is computed per row */
        int attached = 0;
        for (int k = 0; k < depth - 1; k++) {
            snprintf(name, sizeof name, "G%d", k);
            attached += attach_of(s, name) == TEXI_ATTACH_AT;
        }
        if (attached < (depth - 1) / 3)
            TT_FAILF("%d operators: %d computed per row", depth, attached);
    }
    tex_ctx_free(c.ctx);
}

static void test_inlined_chain(void)
{
    run_inlined_chain(6, 37, 130, false);
    run_inlined_chain(12, 37, 130, false);
    if (!quick)
        run_inlined_chain(5, 9, 70, true);
}

/* softmax(Q . K^T) over [b, s, s] (Q, K [b, s, d]): the scores read K
 * stored [N, K], so they are a kernel of their own (packed K), not
 * computed per row of the softmax (gathering K's columns); with a
 * symbolic s the scores' tiles still lie in one batch (their parallel
 * loop is the batch alone, not fused with the panels of symbolic count). */
static void run_attention(int64_t b, int64_t sq, int64_t d, bool sym)
{
    as_case c;
    case_init(&c, "attention", 3, (int64_t[]){b, sq, d}, sym);
    tex_tensor *Q = ops_input(&c.w, "Q", 3, c.d), *K = ops_input(&c.w, "K", 3, c.d);
    tex_tensor *S = tex_op_matmul(c.ctx, "S", Q, K, 0, 1);
    tex_schedule *s = case_check(&c, tex_op_softmax(c.ctx, "P", S, -1), "cpu -threads=2");
    if (s) {
        TT_EQ_INT(n_roots(s), 2);
        TT_EQ_INT(attach_of(s, "S"), TEXI_ATTACH_ROOT);
        char *text = tex_schedule_trace(s);
        TT_CHECK(text && (strstr(text, "reorder_storage K.local ") != NULL) == !sym);
        TT_CHECK(text && (strstr(text, "fuse S i0 i2.outer") != NULL) == !sym);
        free(text);
    }
    tex_ctx_free(c.ctx);
}

static void test_attention(void)
{
    run_attention(3, 37, 16, false);
    if (quick)
        return;
    run_attention(2, 70, 64, true);
    run_attention(1, 9, 8, false);
}

/* layernorm (gamma, beta) or rmsnorm (gamma) over the last n_axes of X [b, m, n]. */
static void run_norm(int64_t b, int64_t m, int64_t n, int n_axes, bool rms, bool sym)
{
    as_case c;
    case_init(&c, rms ? "rmsnorm" : "layernorm", 3, (int64_t[]){b, m, n}, sym);
    tex_tensor *X = ops_input(&c.w, "X", 3, c.d);
    tex_tensor *G = ops_input(&c.w, "G", n_axes, &c.d[3 - n_axes]);
    tex_tensor *Be = rms ? NULL : ops_input(&c.w, "Be", n_axes, &c.d[3 - n_axes]);
    tex_tensor *Y = rms ? tex_op_rmsnorm(c.ctx, "Y", X, G, n_axes, 1e-5)
                        : tex_op_layernorm(c.ctx, "Y", X, G, Be, n_axes, 1e-5);
    tex_schedule *s = case_check(&c, Y, "cpu");
    if (s) {
        TT_EQ_INT(n_roots(s), 1);
        TT_EQ_INT(attach_of(s, rms ? "Y_sqsum" : "Y_sum"), TEXI_ATTACH_AT);
        /* X hinted a row ahead in long rows; gamma and beta, the same for
         * every row, never */
        if (n_axes == 1 && (n > 64 || n == 1))
            TT_EQ_INT(n_hints(s, "X"), n > 64);
        TT_CHECK(n_hints(s, "G") == 0 && n_hints(s, "Be") == 0 && n_hints(s, "Y") == 0);
    }
    tex_ctx_free(c.ctx);
}

static void test_norms(void)
{
    run_norm(2, 7, 33, 1, false, false);
    if (quick)
        return;
    run_norm(1, 1, 1, 1, false, false);
    run_norm(3, 5, 129, 1, false, true);
    run_norm(2, 3, 19, 2, false, false);
    run_norm(2, 7, 33, 1, true, false);
    run_norm(2, 5, 64, 2, true, true);
}

/* ------------------------------------------------------------------ matmul */

/* [bt,] M x K times K x N (trans_b: B given as [bt,] N x K, as a dense
 * layer's weights), plus (epilogue) a bias along N and gelu. */
static void run_matmul_t(int64_t bt, int64_t m, int64_t n, int64_t k, bool epilogue, bool sym,
                         bool trans_b, const char *target)
{
    as_case c;
    case_init(&c,
              epilogue  ? "matmul_bias_gelu"
              : trans_b ? "matmul_bt"
                        : "matmul",
              4, (int64_t[]){bt, m, n, k}, sym);
    int nd = bt > 0 ? 3 : 2;
    tex_expr *sa[3] = {c.d[0], c.d[1], c.d[3]};
    tex_expr *sb[3] = {c.d[0], trans_b ? c.d[2] : c.d[3], trans_b ? c.d[3] : c.d[2]};
    tex_tensor *A = ops_input(&c.w, "A", nd, bt > 0 ? sa : sa + 1);
    tex_tensor *B = ops_input(&c.w, "B", nd, bt > 0 ? sb : sb + 1);
    tex_tensor *Y = tex_op_matmul(c.ctx, epilogue ? "MM" : "Y", A, B, 0, trans_b);
    if (epilogue) {
        tex_tensor *bias = ops_input(&c.w, "bias", 1, &c.d[2]);
        Y = tex_op_gelu(c.ctx, "Y", tex_op_bias_add(c.ctx, "Yb", Y, bias, -1));
    }
    tex_schedule *s = case_check(&c, Y, target);
    if (s && epilogue) {
        TT_EQ_INT(n_roots(s), 1);
        TT_EQ_INT(attach_of(s, "MM"), TEXI_ATTACH_AT);
        TT_EQ_INT(attach_of(s, "Yb"), TEXI_ATTACH_INLINE);
    }
    if (s && !epilogue && (m == 1 || n == 1) && k > 1) {
        /* a matrix-vector product reading both operands along K: dot
         * products, vectorized along K (B as [N, K], or a column x); x . B
         * with B as [K, N]: a reduction too, its columns vectorized inside
         * the loop over K, no GEMM tiles */
        char *text = tex_schedule_trace(s);
        TT_EQ_INT(text && strstr(text, "vectorize_reduce Y k\n"), trans_b || n == 1);
        TT_CHECK(text && !strstr(text, "tensorize") && !strstr(text, "cache_write"));
        free(text);
    }
    if (s && trans_b) {
        /* B's panels (constant shapes, more columns than a tile's) are
         * packed transposed: K-major, N last */
        char *text = tex_schedule_trace(s);
        bool packed = text && strstr(text, "cache_read B local");
        TT_EQ_INT(packed, !sym && n > 64 && m > 1);
        if (packed)
            TT_CHECK(strstr(text, "reorder_storage B.local ax1 ax0\n") ||
                     strstr(text, "reorder_storage B.local ax0 ax2 ax1\n"));
        free(text);
    }
    tex_ctx_free(c.ctx);
}

static void run_matmul(int64_t bt, int64_t m, int64_t n, int64_t k, bool epilogue, bool sym)
{
    run_matmul_t(bt, m, n, k, epilogue, sym, false, "cpu");
}

static void test_matmul(void)
{
    run_matmul(0, 37, 33, 70, false, false);
    if (quick)
        return;
    run_matmul(0, 1, 1, 1, false, false);
    run_matmul(0, 13, 29, 31, false, true);
    run_matmul(2, 5, 9, 7, false, false);
    run_matmul(0, 7, 19, 5, true, false);
    run_matmul(0, 24, 64, 64, true, false);
    run_matmul(0, 11, 17, 3, true, true);
    run_matmul(3, 4, 5, 6, true, false);
    /* B transposed, with column panels to pack (2 threads: panels
     * outermost) */
    run_matmul_t(0, 37, 200, 70, false, false, true, "cpu -threads=2");
    run_matmul_t(0, 13, 131, 31, false, true, true, "cpu -threads=2");
    run_matmul_t(2, 9, 150, 17, false, false, true, "cpu -threads=2");
    run_matmul_t(0, 1, 1, 1, false, false, true, "cpu");
    /* matrix-vector products: a batch-1 dense layer, A . x, and x^T . B
     * (B as [K, N]: not dot products, B is read across K), also batched */
    run_matmul_t(0, 1, 70, 300, false, false, true, "cpu -threads=2");
    run_matmul_t(0, 1, 33, 97, false, true, true, "cpu");
    run_matmul_t(0, 45, 1, 300, false, false, false, "cpu -threads=2");
    run_matmul_t(2, 7, 1, 40, false, false, false, "cpu");
    run_matmul_t(0, 1, 70, 300, false, false, false, "cpu -threads=2");
    run_matmul_t(3, 1, 45, 33, false, false, false, "cpu -threads=2");
    run_matmul_t(0, 1, 70, 300, false, true, false, "cpu");
}

/* out = X + (gelu(X W1 + b1) W2 + b2): two kernels, the hidden layer's and
 * the output's, each a GEMM in its epilogue's tiles (with d = 1 the second
 * GEMM reads each hidden element once, so the cost rule inlines gelu). */
static void run_mlp(int64_t m, int64_t d, int64_t h, bool sym)
{
    as_case c;
    case_init(&c, "mlp", 3, (int64_t[]){m, d, h}, sym);
    tex_tensor *X = ops_input(&c.w, "X", 2, (tex_expr *[]){c.d[0], c.d[1]});
    tex_tensor *W1 = ops_input(&c.w, "W1", 2, (tex_expr *[]){c.d[1], c.d[2]});
    tex_tensor *b1 = ops_input(&c.w, "b1", 1, &c.d[2]);
    tex_tensor *W2 = ops_input(&c.w, "W2", 2, (tex_expr *[]){c.d[2], c.d[1]});
    tex_tensor *b2 = ops_input(&c.w, "b2", 1, &c.d[1]);
    tex_tensor *h1 = tex_op_matmul(c.ctx, "H1", X, W1, 0, 0);
    tex_tensor *g = tex_op_gelu(c.ctx, "G", tex_op_bias_add(c.ctx, "H1b", h1, b1, -1));
    tex_tensor *h2 = tex_op_bias_add(c.ctx, "H2b", tex_op_matmul(c.ctx, "H2", g, W2, 0, 0), b2, -1);
    tex_schedule *s = case_check(&c, tex_op_add(c.ctx, "Y", X, h2), "cpu");
    if (s && d > 1) {
        TT_EQ_INT(n_roots(s), 2);
        TT_EQ_INT(attach_of(s, "G"), TEXI_ATTACH_ROOT);
        TT_EQ_INT(attach_of(s, "H1"), TEXI_ATTACH_AT);
        TT_EQ_INT(attach_of(s, "H2"), TEXI_ATTACH_AT);
    }
    tex_ctx_free(c.ctx);
}

static void test_mlp(void)
{
    run_mlp(9, 20, 37, false);
    if (quick)
        return;
    run_mlp(1, 1, 2, false);
    run_mlp(13, 16, 48, true);
}

/* ------------------------------------------------------------- conv, pool */

/* relu(conv2d(X, W) + bias) with padding 1, stride st. */
static void run_conv(tex_layout layout, int64_t ch, int64_t hw, int64_t f, int64_t st)
{
    as_case c;
    case_init(&c, layout == TEX_LAYOUT_NCHW ? "conv_nchw" : "conv_nhwc", 0, NULL, false);
    tex_expr *C = tex_int(c.ctx, ch), *H = tex_int(c.ctx, hw), *F = tex_int(c.ctx, f);
    tex_expr *three = tex_int(c.ctx, 3), *one = tex_int(c.ctx, 1);
    bool nchw = layout == TEX_LAYOUT_NCHW;
    tex_tensor *X =
        ops_input(&c.w, "X", 4, nchw ? (tex_expr *[]){one, C, H, H} : (tex_expr *[]){one, H, H, C});
    tex_tensor *W =
        ops_input(&c.w, "W", 4,
                  nchw ? (tex_expr *[]){F, C, three, three} : (tex_expr *[]){three, three, C, F});
    tex_tensor *bias = ops_input(&c.w, "bias", 1, &F);
    tex_tensor *y =
        tex_op_conv2d(c.ctx, "Cv", X, W, (int64_t[]){st, st}, (int64_t[]){1, 1}, NULL, 1, layout);
    y = tex_op_relu(c.ctx, "Y", tex_op_bias_add(c.ctx, "Yb", y, bias, nchw ? 1 : 3));
    tex_schedule *s = case_check(&c, y, "cpu");
    int64_t nr;
    bool tz = host_gemm_builtin(&nr) && !nchw && st == 1;
    if (s) { /* the padded input is a buffer: the built-in reads it, and
              * register tiles would otherwise choose each lane's value */
        TT_EQ_INT(tensorized(s, "Cv"), tz);
        TT_EQ_INT(n_roots(s), 2);
        TT_EQ_INT(attach_of(s, "Cv_pad"), TEXI_ATTACH_ROOT);
    }
    if (s && nchw) { /* register tiles of filters (one vector a row: 8 of
                      * them), their rows padded to whole vectors */
        char *text = tex_schedule_trace(s), want[64];
        int vbytes = texi_host_vector_bytes();
        int64_t ow = (hw + 2 - 3) / st + 1, lanes = vbytes >= 16 ? vbytes / 4 : 1;
        snprintf(want, sizeof want, "tile Y i1 i3 %d ", ow <= lanes && f >= 8 ? 8 : 6);
        TT_CHECK(text && strstr(text, want));
        TT_CHECK(text && (strstr(text, "storage_align Cv i1 ") != NULL) == (ow % lanes != 0));
        free(text);
    }
    tex_ctx_free(c.ctx);
}

/* conv2d(X, W) with padding 1 over symbolic rows and columns (13 x 23), 16
 * channels and filters, in register tiles. The padding's parallel loop fuses
 * its leading dims only as far as their extents are constants (fused past
 * the rows, its index was divided by both sizes at every vector and its
 * lanes gathered one by one); the conv's parallel loop takes the batch of 1
 * with the rows (it had been the batch alone: one thread); in NHWC, whose
 * weights every output row reads, they are packed once, not once a row. */
static void run_conv_symbolic(tex_layout layout)
{
    as_case c;
    bool nchw = layout == TEX_LAYOUT_NCHW;
    case_init(&c, nchw ? "conv_nchw_sym" : "conv_nhwc_sym", 2, (int64_t[]){13, 23}, true);
    tex_expr *C = tex_int(c.ctx, 16), *three = tex_int(c.ctx, 3), *one = tex_int(c.ctx, 1);
    tex_tensor *X = ops_input(&c.w, "X", 4,
                              nchw ? (tex_expr *[]){one, C, c.d[0], c.d[1]}
                                   : (tex_expr *[]){one, c.d[0], c.d[1], C});
    tex_tensor *W =
        ops_input(&c.w, "W", 4,
                  nchw ? (tex_expr *[]){C, C, three, three} : (tex_expr *[]){three, three, C, C});
    tex_tensor *y = tex_op_conv2d(c.ctx, "Y", X, W, NULL, (int64_t[]){1, 1}, NULL, 1, layout);
    tex_schedule *s = case_check(&c, y, "cpu -threads=2");
    char *text = s ? tex_schedule_trace(s) : NULL;
    if (text) {
        TT_CHECK(strstr(text, "parallel Y_pad i0.i1.fused\n") != NULL);
        TT_CHECK(strstr(text, nchw ? "fuse Y i0 i1.outer\n" : "fuse Y i0 i1\n") != NULL);
        TT_CHECK((strstr(text, "cache_read W global Y.local\n") != NULL) == !nchw);
        if (tt_failed_checks)
            printf("  trace:\n%s", text);
    }
    free(text);
    tex_ctx_free(c.ctx);
}

static void test_conv(void)
{
    run_conv(TEX_LAYOUT_NCHW, 3, 9, 4, 1);
    run_conv_symbolic(TEX_LAYOUT_NHWC);
    run_conv_symbolic(TEX_LAYOUT_NCHW);
    if (quick)
        return;
    run_conv(TEX_LAYOUT_NCHW, 5, 13, 7, 2);
    run_conv(TEX_LAYOUT_NCHW, 4, 7, 16, 1);
    run_conv(TEX_LAYOUT_NCHW, 2, 32, 9, 1);
    run_conv(TEX_LAYOUT_NHWC, 3, 9, 17, 1);
    run_conv(TEX_LAYOUT_NHWC, 1, 1, 1, 1);
}

/* max_pool2d(relu(X)) over [2, C, H, W]: rows of output pixels, the row
 * vectorized inside the window's loops. */
static void run_max_pool(int64_t ch, int64_t h, int64_t w, int64_t k, int64_t stride, int64_t pad,
                         bool sym)
{
    as_case c;
    case_init(&c, "max_pool", 3, (int64_t[]){ch, h, w}, sym);
    tex_tensor *X =
        ops_input(&c.w, "X", 4, (tex_expr *[]){tex_int(c.ctx, 2), c.d[0], c.d[1], c.d[2]});
    tex_tensor *p = tex_op_max_pool2d(c.ctx, "P", tex_op_relu(c.ctx, "R", X), (int64_t[]){k, k},
                                      (int64_t[]){stride, stride}, (int64_t[]){pad, pad});
    tex_schedule *s = case_check(&c, p, "cpu -threads=2");
    char *text = s ? tex_schedule_trace(s) : NULL;
    if (text)
        TT_CHECK(strstr(text, "reorder P i0.i1.fused.i2.fused ry rx i3\n") &&
                 (strstr(text, "vectorize P i3\n") || strstr(text, "vectorize P i3.inner\n")));
    free(text);
    tex_ctx_free(c.ctx);
}

/* An average pool of relu(X) (count_include_pad or not): its sum, a member
 * of the pool's row kernel, keeps its last axis inside the window's loops,
 * vectorized, when the window moves one element an output (stride 1) and
 * an output row holds a vector at least; else its row stays scalar. */
static void run_avg_pool(int64_t ch, int64_t h, int64_t w, int64_t k, int64_t stride, int64_t pad,
                         int include_pad, bool sym)
{
    as_case c;
    case_init(&c, "avg_pool", 3, (int64_t[]){ch, h, w}, sym);
    tex_tensor *X =
        ops_input(&c.w, "X", 4, (tex_expr *[]){tex_int(c.ctx, 2), c.d[0], c.d[1], c.d[2]});
    tex_tensor *p =
        tex_op_avg_pool2d(c.ctx, "P", tex_op_relu(c.ctx, "R", X), (int64_t[]){k, k},
                          (int64_t[]){stride, stride}, (int64_t[]){pad, pad}, include_pad);
    tex_schedule *s = case_check(&c, p, "cpu -threads=2");
    char *text = s ? tex_schedule_trace(s) : NULL;
    int vbytes = texi_host_vector_bytes();
    int64_t ow = (w + 2 * pad - k) / stride + 1, lanes = vbytes >= 16 ? vbytes / 4 : 1;
    if (text)
        TT_EQ_INT((strstr(text, "reorder P_sum i0 i1 i2 ry rx i3\n") != NULL),
                  stride == 1 && !sym && ow >= lanes);
    free(text);
    tex_ctx_free(c.ctx);
}

static void test_pool(void)
{
    as_case c;
    run_avg_pool(3, 9, 40, 3, 1, 1, 1, false);
    run_avg_pool(2, 7, 37, 3, 1, 0, 0, false);
    run_avg_pool(2, 6, 20, 2, 2, 0, 1, false);
    run_avg_pool(2, 9, 7, 3, 1, 1, 0, false);
    run_avg_pool(3, 11, 40, 3, 1, 1, 1, true);
    run_max_pool(3, 11, 13, 3, 2, 1, true);
    run_max_pool(4, 20, 70, 3, 2, 1, false);
    run_max_pool(2, 9, 40, 2, 2, 0, false);
    run_max_pool(3, 7, 33, 3, 1, 1, false);
    case_init(&c, "global_avg_pool", 3, (int64_t[]){5, 7, 9}, false);
    tex_tensor *X =
        ops_input(&c.w, "X", 4, (tex_expr *[]){tex_int(c.ctx, 1), c.d[0], c.d[1], c.d[2]});
    case_check(&c, tex_op_global_avg_pool2d(c.ctx, "P", X), "cpu");
    tex_ctx_free(c.ctx);
}

/* -------------------------------------------------------------- reductions */

enum { RED_SUM_ROWS, RED_SUM_COLS, RED_MEAN_ALL, RED_MAX_KEEP, RED_ARGMAX };

static void run_reduce(int which, int64_t m, int64_t n, bool sym)
{
    static const char *const names[] = {"sum_rows", "sum_cols", "mean_all", "max_keep", "argmax"};
    as_case c;
    case_init(&c, names[which], 2, (int64_t[]){m, n}, sym);
    tex_tensor *X = ops_input(&c.w, "X", 2, c.d);
    tex_tensor *e = tex_op_tanh(c.ctx, "T", X);
    tex_tensor *y = NULL;
    switch (which) {
    case RED_SUM_ROWS:
        y = tex_op_sum(c.ctx, "Y", e, 1, (int[]){1}, 0);
        break;
    case RED_SUM_COLS:
        y = tex_op_sum(c.ctx, "Y", e, 1, (int[]){0}, 0);
        break;
    case RED_MEAN_ALL:
        y = tex_op_mean(c.ctx, "Y", e, 0, NULL, 0);
        break;
    case RED_MAX_KEEP:
        y = tex_op_max(c.ctx, "Y", e, 1, (int[]){1}, 1);
        break;
    case RED_ARGMAX:
        y = tex_op_cast(c.ctx, "Y", tex_op_argmax(c.ctx, "A", X, 1, 0), TEX_F32);
        break;
    }
    tex_schedule *s = case_check(&c, y, "cpu");
    if (s && which != RED_ARGMAX)
        TT_EQ_INT(attach_of(s, "T"), TEXI_ATTACH_INLINE);
    tex_ctx_free(c.ctx);
}

/* Reductions over the rows of X [m, n] (sum over axis 0; softmax over
 * axis 0, whose max and sum are such reductions; argmax over axis 0): one
 * row of outputs, shared out by chunks of columns on 2 threads. */
static void test_column_reductions(void)
{
    as_case c;
    case_init(&c, "sum_axis0", 2, (int64_t[]){37, 203}, false);
    tex_tensor *X = ops_input(&c.w, "X", 2, c.d);
    tex_schedule *s = case_check(&c, tex_op_sum(c.ctx, "Y", X, 1, (int[]){0}, 0), "cpu -threads=2");
    char *text = s ? tex_schedule_trace(s) : NULL;
    if (text)
        TT_CHECK(strstr(text, "parallel Y i1.outer\n") != NULL);
    free(text);
    tex_ctx_free(c.ctx);
    case_init(&c, "softmax_axis0", 2, (int64_t[]){29, 150}, false);
    X = ops_input(&c.w, "X", 2, c.d);
    s = case_check(&c, tex_op_softmax(c.ctx, "Y", X, 0), "cpu -threads=2");
    text = s ? tex_schedule_trace(s) : NULL;
    if (text)
        TT_CHECK(strstr(text, "parallel Y_max i0.i1.outer.fused\n") &&
                 strstr(text, "parallel Y_sum i0.i1.outer.fused\n"));
    free(text);
    tex_ctx_free(c.ctx);
    /* argmax over axis 0 (its max and index passes a row kernel, one row of
     * outputs), with and without keepdims: chunks of columns, the max per
     * chunk; its rows had been split by the last axis, which the reduction
     * could not take inside, and the kernel fell back to the plain schedule
     * (case_check refuses that) */
    for (int keep = 0; keep < 2; keep++) {
        case_init(&c, "argmax_axis0", 2, (int64_t[]){41, 150}, false);
        X = ops_input(&c.w, "X", 2, c.d);
        s = case_check(&c, tex_op_argmax(c.ctx, "Y", X, 0, keep), "cpu -threads=2");
        text = s ? tex_schedule_trace(s) : NULL;
        if (text)
            TT_CHECK(
                strstr(text, keep ? "parallel Y i0.i1.outer.fused\n" : "parallel Y i1.outer\n") &&
                strstr(text, "compute_at Y_max Y "));
        if (tt_failed_checks && text)
            printf("  trace:\n%s", text);
        free(text);
        tex_ctx_free(c.ctx);
    }
    /* too few columns for chunks of them: a row kernel of one row, split
     * into chunks by its outer loop, whose inner loop is the index pass's
     * vector loop (the split axis itself was moved, and the schedule fell
     * back) */
    case_init(&c, "argmin_axis0_narrow", 2, (int64_t[]){7, 17}, false);
    X = ops_input(&c.w, "X", 2, c.d);
    case_check(&c, tex_op_argmin(c.ctx, "Y", X, 0, 0), "cpu -threads=2");
    tex_ctx_free(c.ctx);
}

static void test_reductions(void)
{
    for (int which = RED_SUM_ROWS; which <= RED_ARGMAX; which++) {
        run_reduce(which, 7, 45, false);
        if (quick)
            continue;
        run_reduce(which, 1, 1, false);
        run_reduce(which, 31, 67, true);
    }
}

/* relu(transpose(X, perm)) (+ a row of B broadcast along the last dim):
 * tiled over the axis the reads of X run along and the last, when the
 * transpose moves X's last dim (perm[nd - 1] != nd - 1). */
/* Y = X transposed by perm: through a relu (inlined) and plus a broadcast B
 * when `broadcast`, or alone when `plain`. Tiled iff the last dim moves;
 * tensorized with the CPU transpose built-in iff also plain, in f32, on a
 * host with AVX2 or AVX-512 and the tiled extents symbolic or constants at
 * least its side (16 or 8; of symbolic sizes, the partial tiles run the
 * loops). */
static void run_transpose(int nd, const int64_t dims[], const int perm[], bool broadcast, bool sym,
                          const char *target)
{
    as_case c;
    bool plain = !broadcast && strstr(target, "plain");
    case_init(&c, "transpose", nd, dims, sym);
    tex_tensor *X = ops_input(&c.w, "X", nd, c.d);
    tex_tensor *y = tex_op_transpose(c.ctx, "T", X, perm);
    if (!plain)
        y = tex_op_relu(c.ctx, "R", y);
    if (broadcast)
        y = tex_op_add(c.ctx, "Y", y, ops_input(&c.w, "B", 1, &c.d[perm[nd - 1]]));
    char tgt[64];
    snprintf(tgt, sizeof tgt, "%s", target);
    char *mark = strstr(tgt, " plain");
    if (mark)
        *mark = '\0';
    tex_schedule *s = case_check(&c, y, tgt);
    char *text = s ? tex_schedule_trace(s) : NULL;
    int vbytes = texi_host_vector_bytes();
    int64_t side = vbytes >= 64 ? 16 : vbytes >= 32 ? 8 : 0;
    bool moved = perm[nd - 1] != nd - 1;
    /* a symbolic size (every one above 1 when sym) may be anything */
    int64_t last = dims[nd - 1], across = dims[perm[nd - 1]];
    bool fits = plain && moved && side && (last >= side || (sym && last > 1)) &&
                (across >= side || (sym && across > 1));
    if (text) {
        TT_EQ_INT(n_roots(s), 1);
        bool tiled = strncmp(text, "tile ", 5) == 0 || strstr(text, "\ntile ");
        TT_EQ_INT(tiled, moved);
        TT_EQ_INT((strstr(text, "tensorize ") != NULL), fits);
        if (tt_failed_checks)
            printf("  trace:\n%s", text);
    }
    free(text);
    tex_ctx_free(c.ctx);
}

static void test_transpose(void)
{
    run_transpose(2, (int64_t[]){37, 53}, (int[]){1, 0}, false, false, "cpu");
    run_transpose(2, (int64_t[]){70, 45}, (int[]){1, 0}, false, false, "cpu -threads=2 plain");
    if (quick)
        return;
    run_transpose(2, (int64_t[]){1, 1}, (int[]){1, 0}, false, false, "cpu");
    run_transpose(2, (int64_t[]){70, 45}, (int[]){1, 0}, true, true, "cpu -threads=2");
    run_transpose(3, (int64_t[]){5, 19, 33}, (int[]){0, 2, 1}, false, false, "cpu -threads=2");
    run_transpose(3, (int64_t[]){17, 3, 40}, (int[]){2, 0, 1}, true, false, "cpu");
    run_transpose(4, (int64_t[]){2, 9, 4, 21}, (int[]){0, 2, 1, 3}, false, false, "cpu");
    /* plain: the built-in where it fits (NCHW to NHWC, a batch of
     * matrices, an exact tile, symbolic sizes with partial tiles; not a
     * side too short) */
    run_transpose(4, (int64_t[]){2, 24, 5, 17}, (int[]){0, 2, 3, 1}, false, false, "cpu plain");
    run_transpose(3, (int64_t[]){3, 33, 40}, (int[]){0, 2, 1}, false, false,
                  "cpu -threads=2 plain");
    run_transpose(2, (int64_t[]){16, 16}, (int[]){1, 0}, false, false, "cpu plain");
    run_transpose(2, (int64_t[]){100, 7}, (int[]){1, 0}, false, false, "cpu plain");
    run_transpose(2, (int64_t[]){70, 45}, (int[]){1, 0}, false, true, "cpu plain");
    run_transpose(3, (int64_t[]){3, 33, 40}, (int[]){0, 2, 1}, false, true, "cpu -threads=2 plain");
}

/* transpose(reshape(relu(X))) + 1: every stage inlined into one kernel. */
static void test_layout_chain(void)
{
    as_case c;
    case_init(&c, "reshape_transpose", 0, NULL, false);
    tex_tensor *X = ops_input(&c.w, "X", 2, (tex_expr *[]){tex_int(c.ctx, 6), tex_int(c.ctx, 35)});
    tex_tensor *r =
        tex_op_reshape(c.ctx, "Rs", tex_op_relu(c.ctx, "R", X), 3,
                       (tex_expr *[]){tex_int(c.ctx, 3), tex_int(c.ctx, 14), tex_int(c.ctx, 5)});
    tex_tensor *t = tex_op_transpose(c.ctx, "Tr", r, (int[]){2, 0, 1});
    tex_tensor *y = tex_op_sigmoid(c.ctx, "Y", t);
    tex_schedule *s = case_check(&c, y, "cpu");
    if (s)
        TT_EQ_INT(n_roots(s), 1);
    tex_ctx_free(c.ctx);
    /* a strided slice read through a reshape's i64 flat index, then padded:
     * inlined, the slice's index arithmetic (i * 2) met the i64 index, and
     * the verifier refused the lowering */
    case_init(&c, "slice_reshape_pad", 0, NULL, false);
    X = ops_input(&c.w, "X", 2, (tex_expr *[]){tex_int(c.ctx, 5), tex_int(c.ctx, 8)});
    tex_tensor *sl = tex_op_slice(c.ctx, "Sl", tex_op_relu(c.ctx, "R", X), (int64_t[]){0, 1},
                                  (int64_t[]){INT64_MAX, INT64_MAX}, (int64_t[]){1, 2});
    r = tex_op_reshape(c.ctx, "Rs", sl, 1, (tex_expr *[]){tex_int(c.ctx, 20)});
    y = tex_op_pad(c.ctx, "Y", r, (int64_t[]){2}, (int64_t[]){1}, 0.5);
    case_check(&c, y, "cpu");
    tex_ctx_free(c.ctx);
    /* a reshape's i64 index under a concat's vectorized loop: the guarded
     * load's clamped base (i64) plus the vector lane (i32) was refused by the
     * verifier in tex_build */
    case_init(&c, "reshape_concat", 0, NULL, false);
    X = ops_input(&c.w, "X", 3,
                  (tex_expr *[]){tex_int(c.ctx, 7), tex_int(c.ctx, 7), tex_int(c.ctx, 33)});
    r = tex_op_gelu(
        c.ctx, "G",
        tex_op_reshape(c.ctx, "Rs", X, 2, (tex_expr *[]){tex_int(c.ctx, 7), tex_int(c.ctx, 231)}));
    y = tex_op_concat(c.ctx, "Y", 2, (tex_tensor *[]){r, r}, 0);
    case_check(&c, y, "cpu -threads=1");
    tex_ctx_free(c.ctx);
}

/* The C source of c's kernel scheduled by s; NULL after a failure. */
static char *c_source(as_case *c, tex_schedule *s)
{
    char why[256];
    tex_func *f = ops_lower(&c->w, s, why, sizeof why);
    tex_kernel *k = f ? tex_build(f, "c") : NULL;
    char *src = k ? strdup(tex_kernel_source(k)) : NULL;
    if (!src)
        TT_FAILF("%s: no C source: %s", c->w.name, f ? tex_errmsg(c->ctx) : why);
    tex_kernel_free(k);
    return src;
}

/* A concat (axis `axis` of inputs of sizes n[0..k) along it and `other`
 * across) or, when k is 0, a padding of a [other, n[0]] input by lo / hi
 * along its last axis: checked against the oracle; with constant sizes no
 * vector of the kernel is gathered lane by lane (pass select_partition
 * splits its loops where the choice is decided). */
static void run_concat_or_pad(int k, int axis, const int64_t n[], int64_t other, int64_t lo,
                              int64_t hi, bool sym)
{
    as_case c;
    int64_t dims[5] = {other, n[0], k > 1 ? n[1] : 1, k > 2 ? n[2] : 1};
    case_init(&c, k ? "concat" : "pad", k ? k + 1 : 2, dims, sym);
    tex_tensor *y, *xs[3];
    for (int i = 0; i < (k ? k : 1); i++) {
        tex_expr *sh[2] = {c.d[0], c.d[i + 1]};
        if (axis == 0) {
            sh[0] = c.d[i + 1];
            sh[1] = c.d[0];
        }
        xs[i] = ops_input(&c.w, (const char *[]){"A", "B", "C"}[i], 2, sh);
    }
    if (k)
        y = tex_op_concat(c.ctx, "Y", k, xs, axis);
    else
        y = tex_op_pad(c.ctx, "Y", xs[0], (int64_t[]){0, lo}, (int64_t[]){0, hi}, 0.5);
    tex_schedule *s = case_check(&c, y, "cpu -threads=2");
    char *src = s && !sym ? c_source(&c, s) : NULL;
    for (int i = 0; src && i < (k ? k : 1); i++) {
        char lane_load[8];
        snprintf(lane_load, sizeof lane_load, "){%c[", "ABC"[i]);
        TT_CHECK(strstr(src, lane_load) == NULL);
    }
    if (tt_failed_checks && src)
        printf("  %s:\n%s", c.w.name, src);
    free(src);
    tex_ctx_free(c.ctx);
}

static void test_concat_pad(void)
{
    run_concat_or_pad(2, 1, (int64_t[]){512, 512}, 6, 0, 0, false);
    run_concat_or_pad(2, 1, (int64_t[]){37, 70}, 5, 0, 0, false);
    run_concat_or_pad(3, 1, (int64_t[]){1, 45, 16}, 3, 0, 0, false);
    run_concat_or_pad(3, 0, (int64_t[]){7, 1, 9}, 33, 0, 0, false);
    run_concat_or_pad(2, 1, (int64_t[]){29, 100}, 4, 0, 0, true);
    run_concat_or_pad(0, 1, (int64_t[]){56}, 8, 1, 1, false);
    run_concat_or_pad(0, 1, (int64_t[]){61}, 3, 2, 5, false);
    run_concat_or_pad(0, 1, (int64_t[]){1}, 2, 3, 0, false);
    run_concat_or_pad(0, 1, (int64_t[]){200}, 3, 1, 2, true);
}

/* ------------------------------------------------------------ dump, errors */

/* TEX_DUMP=fusion prints each kernel with its members and reasons. */
static void test_dump(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 2, (int64_t[]){4, 8});
    tex_tensor *Y = tex_op_softmax(ctx, "Y", tex_op_relu(ctx, "R", X), 1);
    char text[4096];
    dump_fusion(ctx, 1, &Y, "cpu", text, sizeof text);
    TT_CHECK(strstr(text, "# fusion (cpu): 1 kernel") != NULL);
    TT_CHECK(strstr(text, "kernel 0 'Y' (elementwise): rows, depth 1") != NULL);
    TT_CHECK(strstr(text, "'Y_max' reduction: computed inside it") != NULL);
    TT_CHECK(strstr(text, "'R' elementwise: inlined") != NULL);
    if (tt_failed_checks)
        printf("  dump:\n%s", text);
    tex_ctx_free(ctx);
}

/* The plain schedule (target option -plain, the fallback of a schedule
 * the rules made that does not lower): every compute stage a kernel, the
 * kernels right on chains that fuse otherwise, TEX_DUMP=fusion says so. */
static void test_plain(void)
{
    as_case c;
    case_init(&c, "plain", 2, (int64_t[]){13, 70}, true);
    tex_tensor *X = ops_input(&c.w, "X", 2, c.d);
    tex_tensor *W = ops_input(&c.w, "W", 2, (tex_expr *[]){c.d[1], c.d[1]});
    tex_tensor *Y = tex_op_softmax(
        c.ctx, "Y", tex_op_matmul(c.ctx, "M", tex_op_relu(c.ctx, "R", X), W, false, false), 1);
    tex_schedule *s = tex_auto_schedule(c.ctx, 1, &Y, "cpu -plain -threads=2");
    c.w.out = Y;
    TT_CHECK(s && ops_check_jit(&c.w, s, "cpu -threads=2", 7, NULL, true) == 0);
    if (s) {
        TT_EQ_INT(attach_of(s, "R"), TEXI_ATTACH_ROOT);
        TT_EQ_INT(attach_of(s, "Y_sum"), TEXI_ATTACH_ROOT);
        TT_EQ_INT(n_roots(s), 6); /* R, M, Y_max, Y_exp, Y_sum, Y */
    }
    char text[1024];
    dump_fusion(c.ctx, 1, &Y, "cpu -plain", text, sizeof text);
    TT_CHECK(strstr(text, "# fusion (cpu -plain): 6 kernels, the plain schedule") != NULL);
    TT_CHECK(strstr(text, "-- the target's option -plain") != NULL);
    tex_ctx_free(c.ctx);
}

/* The check of the rules' schedule lowers it with every free variable a
 * parameter: a scalar in a body (alpha) and a symbolic size (n) must not
 * make it fall back to the plain schedule, on either target. */
static void test_check_with_scalars(void)
{
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_var(c, "n", TEX_I32), *alpha = tex_var(c, "alpha", TEX_F32);
    tex_tensor *X = tex_placeholder(c, "X", TEX_F32, 2, (tex_expr *[]){n, tex_int(c, 64)});
    tex_iter *i = tex_axis(c, "i", n), *j = tex_axis(c, "j", tex_int(c, 64));
    tex_tensor *S = tex_compute(c, "S", 2, (tex_iter *[]){i, j},
                                tex_mul(TEX_AT(X, tex_iv(i), tex_iv(j)), alpha));
    tex_tensor *Y = tex_op_softmax(c, "Y", S, 1);
    static const char *const targets[] = {"cpu", "cuda"};
    for (int t = 0; t < 2; t++) {
        tex_schedule *s = tex_auto_schedule(c, 1, &Y, targets[t]);
        TT_CHECK(s != NULL && tex_errcode(c) == 0);
        if (strcmp(tex_warnmsg(c), "") != 0)
            TT_FAILF("%s: %s", targets[t], tex_warnmsg(c));
        if (s)
            TT_EQ_INT(n_roots(s), 1); /* the rules' one row kernel, not the plain five */
    }
    tex_ctx_free(c);
}

static void test_errors(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 1, (int64_t[]){10000});
    tex_tensor *Y = tex_op_relu(ctx, "Y", X);
    TT_CHECK(tex_auto_schedule(NULL, 1, &Y, "cpu") == NULL);
    TT_CHECK(tex_auto_schedule(ctx, 1, &Y, "tpu") == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_auto_schedule: unknown target \"tpu\"") != NULL);
    tex_clear_error(ctx);
    TT_CHECK(tex_auto_schedule(ctx, 1, &Y, "cpu -fast") == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "unknown option \"-fast\"") != NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "\"-plain\"") != NULL);
    tex_clear_error(ctx);
    /* cache sizes: bytes, K or M, from 1K to 1024M */
    const char *bad_caches[] = {"-l2=", "-l2=512", "-l2=2G", "-l1=4KB", "-l2=2048M", "-l3=1M"};
    for (size_t i = 0; i < sizeof bad_caches / sizeof *bad_caches; i++) {
        char target[64];
        snprintf(target, sizeof target, "cpu %s", bad_caches[i]);
        TT_CHECK(tex_auto_schedule(ctx, 1, &Y, target) == NULL);
        TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
        TT_CHECK(strstr(tex_errmsg(ctx), bad_caches[i]) != NULL);
        tex_clear_error(ctx);
    }
    TT_CHECK(tex_auto_schedule(ctx, 1, &Y, "cpu -l1=1K -l2=1024M") != NULL);
    TT_CHECK(tex_auto_schedule(ctx, 1, &Y, "cpu -l1=49152 -l2=2M -threads=2") != NULL);
    TT_CHECK(tex_auto_schedule(ctx, 0, &Y, "cpu") == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    tex_clear_error(ctx);
    TT_CHECK(tex_auto_schedule(ctx, 1, NULL, "cpu") == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    tex_clear_error(ctx);
    TT_CHECK(tex_auto_schedule(ctx, 1, (tex_tensor *[]){NULL}, "cpu") == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    tex_clear_error(ctx);
    TT_CHECK(tex_auto_schedule(ctx, 1, &Y, NULL) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    tex_clear_error(ctx);
    /* the result is an ordinary schedule: printable and refinable (its
     * chunks' loop over vectors unrolled) */
    tex_schedule *s = tex_auto_schedule(ctx, 1, &Y, "cpu -threads=3 -strict-float");
    char *text = s ? tex_schedule_str(s) : NULL;
    TT_CHECK(text && strstr(text, "Y") != NULL);
    free(text);
    tex_stage *st = s ? tex_stage_of(s, Y) : NULL;
    TT_CHECK(st && tex_unroll(st, tex_stage_axis(st, tex_stage_naxes(st) - 2)) == 0);
    tex_ctx_free(ctx);
}

int main(void)
{
    quick = getenv("TEX_SANITIZE_FLAGS") != NULL;
    if (oc_setup(cache_dir) != 0) {
        printf("test_auto_schedule: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_errors);
    TT_RUN(test_dump);
    TT_RUN(test_check_with_scalars);
    if (!tex_target_available("cpu")) {
        printf("SKIP auto_schedule (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_elementwise);
    TT_RUN(test_softmax);
    TT_RUN(test_softmax_square);
    TT_RUN(test_reshaped_pool);
    TT_RUN(test_inlined_chain);
    TT_RUN(test_attention);
    TT_RUN(test_norms);
    TT_RUN(test_matmul);
    TT_RUN(test_mlp);
    TT_RUN(test_conv);
    TT_RUN(test_pool);
    TT_RUN(test_reductions);
    TT_RUN(test_column_reductions);
    TT_RUN(test_transpose);
    TT_RUN(test_layout_chain);
    TT_RUN(test_concat_pad);
    TT_RUN(test_plain);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
