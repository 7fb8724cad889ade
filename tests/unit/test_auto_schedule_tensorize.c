/*
 * tex_auto_schedule with the CPU GEMM built-ins (docs/auto_schedule.md,
 * "Tensorized tiles"): matmul (alone, batched, with bias + gelu and
 * residual epilogues) and conv2d in NHWC with HWCF weights (with and
 * without padding, with a bias + relu epilogue), auto-scheduled,
 * JIT-compiled, run on random non-zero inputs with the output poisoned and
 * compared with the oracle (tests/support/autosched.h) over odd and prime
 * channel counts, 1-sized dims, row counts that are not multiples of the
 * 6-row tile, column counts that are not multiples of its width, and
 * depths above the built-in's (split, with a partial last depth tile).
 * Each case also checks that the GEMM-like stage is tensorized exactly
 * when the rule says so, and the fallbacks (symbolic sizes, a transposed
 * right operand, too few columns, NCHW, strided conv, -strict-float,
 * -no-tensorize, a consumer that needs only some columns)
 * still compute the right values on the ordinary register tiles.
 * On a host without AVX2 nothing is tensorized and every case checks that.
 */
#include "tt.h"
#include "support/autosched.h"

#include <fcntl.h>
#include <unistd.h>

static char cache_dir[] = "/tmp/tex-test-auto-schedule-tz-XXXXXX";

/* Under make asan only the first case of each group runs (see
 * test_auto_schedule.c). */
static bool quick;

/* The built-in's tile width on this host (0 without a built-in). */
static int64_t nr;

/* Y = A . B (A [bt,] m x k, B [bt,] k x n; trans_b: B given as [n, k]),
 * then, with `epilogue`, gelu(Y + bias) + R; sym makes the sizes symbolic.
 * The GEMM stage must be tensorized iff want_tz (and the host has a
 * built-in). */
static void run_matmul(int64_t bt, int64_t m, int64_t n, int64_t k, bool epilogue, bool sym,
                       bool trans_b, const char *target, bool want_tz)
{
    as_case c;
    case_init(&c, epilogue ? "tz_matmul_epilogue" : "tz_matmul", 4, (int64_t[]){bt, m, n, k}, sym);
    int nd = bt > 0 ? 3 : 2;
    tex_expr *sa[3] = {c.d[0], c.d[1], c.d[3]};
    tex_expr *sb[3] = {c.d[0], trans_b ? c.d[2] : c.d[3], trans_b ? c.d[3] : c.d[2]};
    tex_tensor *A = ops_input(&c.w, "A", nd, bt > 0 ? sa : sa + 1);
    tex_tensor *B = ops_input(&c.w, "B", nd, bt > 0 ? sb : sb + 1);
    tex_tensor *Y = tex_op_matmul(c.ctx, epilogue ? "MM" : "Y", A, B, 0, trans_b);
    if (epilogue) {
        tex_expr *sr[3] = {c.d[0], c.d[1], c.d[2]};
        tex_tensor *bias = ops_input(&c.w, "bias", 1, &c.d[2]);
        tex_tensor *R = ops_input(&c.w, "R", nd, bt > 0 ? sr : sr + 1);
        Y = tex_op_gelu(c.ctx, "G", tex_op_bias_add(c.ctx, "Yb", Y, bias, -1));
        Y = tex_op_add(c.ctx, "Y", Y, R);
    }
    tex_schedule *s = case_check(&c, Y, target);
    if (s && want_tz && nr > 0 && nd == 2 && !sym) {
        /* B's panels are packed when more than one row tile (7 rows with
         * AVX-512, 6 with AVX2) reads them */
        char *text = tex_schedule_trace(s);
        TT_EQ_INT(text && strstr(text, "cache_read B local"), n > nr && m > (nr == 64 ? 7 : 6));
        free(text);
    }
    if (s && sym) /* the tiles' extents, min(size, tile), are constants */
        TT_CHECK(!kernel_source_has(&c, s, target, "vectorize_failed(extent is not a constant)"));
    if (s && sym && bt > 0 && !epilogue) { /* the batch alone is parallel: fused with the
                                            * panels of symbolic count, the tiles had held
                                            * a loop over batches */
        char *text = tex_schedule_trace(s);
        TT_CHECK(text && strstr(text, "parallel Y i0\n") != NULL);
        free(text);
    }
    if (s) {
        TT_EQ_INT(epilogue ? tensorized(s, "MM") : tensorized_output(s, "Y"), want_tz && nr > 0);
        TT_EQ_INT(n_roots(s), 1);
        if (epilogue)
            TT_EQ_INT(attach_of(s, "MM"), TEXI_ATTACH_AT);
    }
    tex_ctx_free(c.ctx);
}

static void test_matmul(void)
{
    run_matmul(0, 37, 67, 70, false, false, false, "cpu", true);
    if (quick)
        return;
    run_matmul(0, 1, 64, 1, false, false, false, "cpu", true);
    /* one row: a vector-matrix product, scheduled as a reduction (chunks
     * of columns), not tensorized */
    run_matmul(0, 1, 200, 300, false, false, false, "cpu -threads=2", false);
    run_matmul(0, 2, 200, 300, false, false, false, "cpu -threads=2", true);
    run_matmul(0, 5, 131, 40, true, false, false, "cpu", true);
    /* fewer columns than NR: the built-in's instance of that many columns */
    run_matmul(0, 9, 7, 33, true, false, false, "cpu", true);
    run_matmul(0, 40, 30, 50, false, false, false, "cpu -threads=2", true);
    run_matmul(0, 6, 64, 512, false, false, false, "cpu -threads=2", true);
    run_matmul(0, 13, 67, 600, false, false, false, "cpu -threads=3", true);
    run_matmul(0, 61, 131, 29, false, false, false, "cpu -threads=1", true);
    run_matmul(0, 7, 67, 5, true, false, false, "cpu", true);
    run_matmul(0, 24, 64, 64, true, false, false, "cpu -threads=2", true);
    run_matmul(2, 5, 67, 7, false, false, false, "cpu", true);
    run_matmul(3, 11, 64, 13, true, false, false, "cpu -threads=4", true);
}

/* The ordinary register tiles: every one of these misses a condition. */
static void test_matmul_fallback(void)
{
    run_matmul(0, 13, 67, 31, false, true, false, "cpu", false); /* symbolic sizes */
    if (quick)
        return;
    run_matmul(3, 13, 67, 31, false, true, false, "cpu -threads=2", false);
    run_matmul(0, 13, 67, 31, false, false, true, "cpu", false); /* B as [N, K] (dense) */
    run_matmul(0, 9, 67, 33, false, false, false, "cpu -strict-float", false);
}

/* A lone 2-d matmul of one or two column panels on 2 threads, tensorized
 * or not: its parallel loop takes the row tiles or strips too (it was the
 * panels alone, one iteration, and the kernel ran on one thread). */
static void test_matmul_few_panels(void)
{
    static const char *const targets[] = {"cpu -threads=2", "cpu -threads=2 -no-tensorize"};
    for (int t = 0; t < 2; t++)
        for (int64_t n = 64; n <= 100; n += 36) {
            as_case c;
            case_init(&c, "tz_few_panels", 3, (int64_t[]){200, n, 96}, false);
            tex_tensor *A = ops_input(&c.w, "A", 2, (tex_expr *[]){c.d[0], c.d[2]});
            tex_tensor *B = ops_input(&c.w, "B", 2, (tex_expr *[]){c.d[2], c.d[1]});
            tex_tensor *Y = c.w.out = tex_op_matmul(c.ctx, "Y", A, B, 0, 0);
            tex_schedule *s = tex_auto_schedule(c.ctx, 1, &Y, targets[t]);
            TT_CHECK(s && ops_check_jit(&c.w, s, targets[0], 7, NULL, true) == 0);
            TT_CHECK(s && tensorized_output(s, "Y") == (t == 0 && nr > 0));
            TT_CHECK(s && kernel_source_has(&c, s, targets[0], "#pragma omp parallel for"));
            tex_ctx_free(c.ctx);
            if (quick)
                return;
        }
}

/* A matmul whose consumer needs only some of its columns (a slice): the
 * stage is computed over those only, narrower than the built-in's tile,
 * so it is not tensorized (it was, and tex_lower refused the schedule). */
static void test_matmul_sliced(void)
{
    as_case c;
    case_init(&c, "tz_sliced", 0, NULL, false);
    tex_tensor *A = ops_input(&c.w, "A", 2, (tex_expr *[]){tex_int(c.ctx, 9), tex_int(c.ctx, 33)});
    tex_tensor *B =
        ops_input(&c.w, "B", 2, (tex_expr *[]){tex_int(c.ctx, 33), tex_int(c.ctx, 2 * 64)});
    tex_tensor *Y = tex_op_matmul(c.ctx, "MM", A, B, 0, 0);
    Y = tex_op_slice(c.ctx, "Y", Y, (int64_t[]){0, 3}, (int64_t[]){INT64_MAX, 40}, NULL);
    tex_schedule *s = case_check(&c, Y, "cpu");
    TT_CHECK(s && !tensorized(s, "MM") && !tensorized(s, "MM.local"));
    tex_ctx_free(c.ctx);
}

/* "cpu -no-tensorize" (the tuner's other base): the ordinary register
 * tiles, built for plain "cpu". */
static void test_no_tensorize(void)
{
    as_case c;
    case_init(&c, "tz_off", 3, (int64_t[]){9, 67, 33}, false);
    tex_tensor *A = ops_input(&c.w, "A", 2, (tex_expr *[]){c.d[0], c.d[2]});
    tex_tensor *B = ops_input(&c.w, "B", 2, (tex_expr *[]){c.d[2], c.d[1]});
    tex_tensor *Y = c.w.out = tex_op_matmul(c.ctx, "Y", A, B, 0, 0);
    tex_schedule *s = tex_auto_schedule(c.ctx, 1, &Y, "cpu -no-tensorize");
    TT_CHECK(s && !tensorized(s, "Y.local"));
    TT_CHECK(s && ops_check_jit(&c.w, s, "cpu", 7, NULL, true) == 0);
    tex_ctx_free(c.ctx);
}

/* relu(conv2d(X, W) + bias) in NHWC, X [n, h, h, ch], W [r, r, ch, f],
 * padding pad, stride st (layout NCHW: X [n, ch, h, h], W [f, ch, r, r]),
 * defined in c (initialized here); its output. */
static tex_tensor *conv_define(as_case *c, tex_layout layout, int64_t n, int64_t ch, int64_t h,
                               int64_t f, int64_t r, int64_t pad, int64_t st, bool epilogue)
{
    case_init(c, epilogue ? "tz_conv_epilogue" : "tz_conv", 0, NULL, false);
    tex_expr *N = tex_int(c->ctx, n), *C = tex_int(c->ctx, ch), *H = tex_int(c->ctx, h);
    tex_expr *F = tex_int(c->ctx, f), *R = tex_int(c->ctx, r);
    bool nchw = layout == TEX_LAYOUT_NCHW;
    tex_tensor *X =
        ops_input(&c->w, "X", 4, nchw ? (tex_expr *[]){N, C, H, H} : (tex_expr *[]){N, H, H, C});
    tex_tensor *W =
        ops_input(&c->w, "W", 4, nchw ? (tex_expr *[]){F, C, R, R} : (tex_expr *[]){R, R, C, F});
    tex_tensor *y = tex_op_conv2d(c->ctx, epilogue ? "Cv" : "Y", X, W, (int64_t[]){st, st},
                                  (int64_t[]){pad, pad}, NULL, 1, layout);
    if (epilogue) {
        tex_tensor *bias = ops_input(&c->w, "bias", 1, &F);
        y = tex_op_relu(c->ctx, "Y", tex_op_bias_add(c->ctx, "Yb", y, bias, nchw ? 1 : 3));
    }
    return y;
}

/* conv_define's conv, auto-scheduled for "cpu" and checked against the
 * oracle; its GEMM stage must be tensorized iff want_tz (and the host has a
 * built-in). */
static void run_conv(tex_layout layout, int64_t n, int64_t ch, int64_t h, int64_t f, int64_t r,
                     int64_t pad, int64_t st, bool epilogue, bool want_tz)
{
    as_case c;
    tex_tensor *y = conv_define(&c, layout, n, ch, h, f, r, pad, st, epilogue);
    tex_schedule *s = case_check(&c, y, "cpu");
    bool tz = want_tz && nr > 0;
    if (s) {
        TT_EQ_INT(epilogue ? tensorized(s, "Cv") : tensorized_output(s, "Y"), tz);
        if (pad) /* the built-in reads the padded input from a buffer, and
                  * so do register tiles (no choice per vector lane) */
            TT_EQ_INT(attach_of(s, epilogue ? "Cv_pad" : "Y_pad"), TEXI_ATTACH_ROOT);
    }
    tex_ctx_free(c.ctx);
}

static void test_conv(void)
{
    run_conv(TEX_LAYOUT_NHWC, 1, 5, 7, 67, 3, 1, 1, true, true);
    if (quick)
        return;
    run_conv(TEX_LAYOUT_NHWC, 1, 3, 9, 64, 3, 1, 1, false, true);
    run_conv(TEX_LAYOUT_NHWC, 2, 13, 8, 67, 3, 1, 1, false, true);
    run_conv(TEX_LAYOUT_NHWC, 1, 1, 1, 64, 3, 1, 1, true, true);
    run_conv(TEX_LAYOUT_NHWC, 1, 17, 11, 131, 1, 0, 1, true, true);
    run_conv(TEX_LAYOUT_NHWC, 1, 7, 5, 67, 5, 2, 1, false, true);
    run_conv(TEX_LAYOUT_NHWC, 1, 5, 9, 7, 3, 1, 1, true, true); /* 7 filters: one 7-column tile */
}

/* The name of the stage that the stage named name in s is computed in
 * (compute_at), or NULL. */
static const char *attach_host(tex_schedule *s, const char *name)
{
    for (int i = 0; i < s->n_stages; i++)
        if (strcmp(s->stages[i]->tensor->name, name) == 0 && s->stages[i]->attach == TEXI_ATTACH_AT)
            return s->stages[i]->attach_stage->tensor->name;
    return NULL;
}

/* A tensorized NHWC conv (n images, ch channels, h x h, f filters, r x r,
 * padding r / 2) for target, checked against the oracle, with the packed
 * weights "W.local" computed in the stage named pack_in: the GEMM stage
 * for a wide panel (packed per depth block), the output for a panel
 * packed at its panel loop, or none at all (NULL: f is one panel). */
static void run_conv_panels(int64_t n, int64_t ch, int64_t h, int64_t f, int64_t r, bool epilogue,
                            const char *target, const char *pack_in)
{
    as_case c;
    tex_tensor *y = conv_define(&c, TEX_LAYOUT_NHWC, n, ch, h, f, r, r / 2, 1, epilogue);
    tex_schedule *s = case_check(&c, y, target);
    if (s) {
        const char *host = attach_host(s, "W.local");
        TT_CHECK(epilogue ? tensorized(s, "Cv") : tensorized_output(s, "Y"));
        TT_CHECK(pack_in ? host && strcmp(host, pack_in) == 0 : attach_of(s, "W.local") == -1);
        if (tt_failed_checks)
            printf("  %s, f = %lld: W.local in %s, want %s\n", target, (long long)f,
                   host ? host : "(none)", pack_in ? pack_in : "(none)");
    }
    tex_ctx_free(c.ctx);
}

/* How the packed weights follow the panels (docs/auto_schedule.md,
 * "Tensorized tiles"): a small output per panel is computed whole, the
 * weights packed per depth block (a depth above the block's, 200 channels,
 * has a partial last block; rows of 7 and 5 pixels end in a partial row
 * tile; a batch of 2 is one more leading dim); a large output per panel, or
 * too few panels for the threads, packs each panel once; a conv of exactly
 * one panel's filters reads the weights as they are. */
static void test_conv_panels(void)
{
    if (nr != 64) /* the shapes below are sized for AVX-512's 64-column tiles */
        return;
    run_conv_panels(1, 200, 7, 131, 3, true, "cpu -threads=1", "Cv");
    if (quick)
        return;
    run_conv_panels(2, 13, 5, 256, 3, false, "cpu -threads=2", "Y.local");
    run_conv_panels(1, 2, 64, 131, 3, false, "cpu -threads=1", "Y"); /* 1 MiB per panel */
    run_conv_panels(2, 7, 9, 131, 3, true, "cpu -threads=3", "Y");   /* 3 panels, 3 threads */
    run_conv_panels(1, 9, 11, 64, 3, false, "cpu -threads=2", NULL); /* one panel */
    run_conv_panels(1, 17, 13, 64, 1, true, "cpu -threads=1", NULL); /* 1x1, one panel */
}

/* A conv in the blocked layout (TEX_LAYOUT_NCHWC): X [n, cblocks, h, h,
 * cb], W [fblocks, cblocks, r, r, cb, fb NR] (fb times the host's
 * built-in's columns; fb 0: 4 columns), padding r / 2, for target, checked
 * against the oracle. With fb = 1: tensorized, the weights read as they are
 * (no W.local), the filter blocks parallel with the GEMM stage computed
 * once per block (wide: in the output's fused panel loop) when the image
 * is small. */
static void run_conv_blocked(int64_t n, int64_t cblocks, int64_t cb, int64_t h, int64_t fblocks,
                             int64_t fb, int64_t r, const char *target)
{
    as_case c;
    case_init(&c, "tz_conv_nchwc", 0, NULL, false);
    tex_tensor *X =
        ops_input(&c.w, "X", 5,
                  (tex_expr *[]){tex_int(c.ctx, n), tex_int(c.ctx, cblocks), tex_int(c.ctx, h),
                                 tex_int(c.ctx, h), tex_int(c.ctx, cb)});
    tex_tensor *W =
        ops_input(&c.w, "W", 6,
                  (tex_expr *[]){tex_int(c.ctx, fblocks), tex_int(c.ctx, cblocks),
                                 tex_int(c.ctx, r), tex_int(c.ctx, r), tex_int(c.ctx, cb),
                                 tex_int(c.ctx, fb && nr ? fb * nr : 4)});
    tex_tensor *y =
        tex_op_conv2d(c.ctx, "Y", X, W, NULL, (int64_t[]){r / 2, r / 2}, NULL, 1, TEX_LAYOUT_NCHWC);
    tex_schedule *s = case_check(&c, y, target);
    /* a row of 7: one 7-row tile with AVX-512, else 4 + 3; of 32: 8 x 4, not 5 x 6 + 2 */
    int64_t tile = h == 7 ? (nr >= 64 ? 7 : 4) : h == 32 ? 4 : 0;
    if (s && nr && fb == 1 && tile) {
        char *text = tex_schedule_str(s), want[64];
        snprintf(want, sizeof want, "i3.inner by factor %lld", (long long)tile);
        TT_CHECK(text && strstr(text, want));
        if (!text || !strstr(text, want))
            printf("  h = %lld: no '%s' in\n%s\n", (long long)h, want, text ? text : "(none)");
        free(text);
    }
    if (s && nr && fb == 1 && h >= 32) { /* not wide: an even count of channel blocks paired */
        char *text = tex_schedule_str(s);
        const char *line = text ? strstr(text, "axis rc.inner") : NULL;
        const char *unrolled = line ? strstr(line, "unrolled") : NULL,
                   *eol = line ? strchr(line, '\n') : NULL;
        bool paired = unrolled && (!eol || unrolled < eol);
        TT_CHECK(paired == (cblocks % 2 == 0));
        if (paired != (cblocks % 2 == 0))
            printf("  %lld channel blocks: %s pair\n%s\n", (long long)cblocks, paired ? "a" : "no",
                   text ? text : "(none)");
        free(text);
    }
    if (s && nr && fb == 1) {
        /* the tiles in Y itself iff the reduction is at most 256 deep and the panel is not wide */
        bool in_place = attach_of(s, "Y.local") < 0;
        const char *host = attach_host(s, "Y.local");
        TT_EQ_INT(in_place, cblocks * cb * r * r <= 256 && h >= 32);
        TT_CHECK(tensorized_output(s, "Y"));
        TT_CHECK(attach_of(s, "W.local") == -1);
        TT_CHECK(in_place || (host && strcmp(host, "Y") == 0));
        for (int i = 0; i < s->n_stages && h < 32; i++) /* 32 x 32 x 64 floats: not wide */
            if (strcmp(s->stages[i]->tensor->name, "Y.local") == 0)
                TT_CHECK(strstr(s->stages[i]->attach_iv->name, "fused") != NULL);
    }
    tex_ctx_free(c.ctx);
}

/* Blocked convs: 4 filter blocks on 2 threads, a 7 x 7 image (rows of 7
 * pixels: one tile with AVX-512, 4 + 3 with AVX2), 2 channel blocks of 16; 2 images and 3 channel
 * blocks of 5; filter blocks of two panels (packed per panel) and of 4 filters (the ordinary
 * tiles); a 1 x 1 conv of a 32 x 32 image (rows of 32 pixels in 4-row tiles: 6-row ones would
 * leave a 2-row tile); 32 x 32 images (not wide on any host: fewer than two filter blocks a
 * thread, so the panels are not the parallel loop alone) with 2 and 4 channel blocks, whose UPDATEs
 * run in pairs of blocks (1 x 1 and 3 x 3 with padding, the pairs under zero_skip's trims), and
 * with 3, which are not paired; the 1 x 1 convs and the 3 x 3 one of 3 x 8 channels (reductions of
 * at most 256) on 32 x 32 images run their tiles in Y itself, with no Y.local. */
static void test_conv_blocked(void)
{
    run_conv_blocked(1, 2, 16, 7, 4, 1, 3, "cpu -threads=2");
    if (quick)
        return;
    run_conv_blocked(2, 3, 5, 6, 2, 1, 3, "cpu -threads=1");
    run_conv_blocked(1, 2, 8, 5, 3, 2, 3, "cpu -threads=2");
    run_conv_blocked(2, 1, 8, 5, 3, 0, 1, "cpu -threads=2");
    run_conv_blocked(1, 1, 4, 32, 1, 1, 1, "cpu -threads=2");
    run_conv_blocked(1, 4, 8, 32, 1, 1, 1, "cpu -threads=2");
    run_conv_blocked(1, 2, 16, 33, 2, 1, 3, "cpu -threads=2");
    run_conv_blocked(1, 3, 8, 32, 1, 1, 3, "cpu -threads=2");
}

/* A blocked conv whose weights do not fit the threads' L2 (as "-l2=64K"
 * says: 5 filter blocks of NR filters, 138 KB with AVX2's 16, 553 KB with
 * AVX-512's 64) hints the next window position's weight block while the
 * current one's tiles compute (its window loops fused); with a large L2 it
 * does not. Both checked against the oracle, built for plain "cpu". */
static void test_conv_weight_hints(void)
{
    if (!nr)
        return;
    for (int small = 0; small < 2; small++) {
        as_case c;
        case_init(&c, "tz_conv_hints", 0, NULL, false);
        tex_expr *shape_x[5] = {tex_int(c.ctx, 1), tex_int(c.ctx, 3), tex_int(c.ctx, 5),
                                tex_int(c.ctx, 5), tex_int(c.ctx, 16)};
        tex_expr *shape_w[6] = {tex_int(c.ctx, 5), tex_int(c.ctx, 3),  tex_int(c.ctx, 3),
                                tex_int(c.ctx, 3), tex_int(c.ctx, 16), tex_int(c.ctx, nr)};
        tex_tensor *X = ops_input(&c.w, "X", 5, shape_x), *W = ops_input(&c.w, "W", 6, shape_w);
        tex_tensor *y = c.w.out =
            tex_op_conv2d(c.ctx, "Y", X, W, NULL, (int64_t[]){1, 1}, NULL, 1, TEX_LAYOUT_NCHWC);
        const char *target = small ? "cpu -threads=2 -l2=64K" : "cpu -threads=2 -l2=1024M";
        tex_schedule *s = y ? tex_auto_schedule(c.ctx, 1, &y, target) : NULL;
        TT_CHECK(s && ops_check_jit(&c.w, s, "cpu -threads=2", 8, NULL, true) == 0);
        char *text = s ? tex_schedule_str(s) : NULL;
        TT_CHECK(
            text &&
            (strstr(text, "prefetch W at axis i2, 1 iterations of axis rc.ry.fused.rx.fused") !=
             NULL) == small);
        TT_CHECK(s &&
                 kernel_source_has(&c, s, "cpu -threads=2", "__builtin_prefetch(&W[") == small);
        if (tt_failed_checks)
            printf("  %s:\n%s", target, text ? text : tex_errmsg(c.ctx));
        free(text);
        tex_ctx_free(c.ctx);
    }
}

/* An NHWC conv whose weights are packed per depth block inside the GEMM
 * stage (a wide panel: 4 panels over a 5 x 5 image; 80 channels, in two
 * depth blocks with AVX-512's 64 columns) and do not fit the threads' L2
 * (as "-l2=64K" says) hints, from W itself (the GEMM stage reads only the
 * packed copy), what the next block's copy will read; with a large L2 it
 * does not. Both checked against the oracle. */
static void test_conv_packed_hints(void)
{
    if (!nr)
        return;
    for (int small = 0; small < 2; small++) {
        as_case c;
        tex_tensor *y = c.w.out =
            conv_define(&c, TEX_LAYOUT_NHWC, 1, 80, 5, 4 * nr, 3, 1, 1, false);
        const char *target = small ? "cpu -threads=2 -l2=64K" : "cpu -threads=2 -l2=1024M";
        tex_schedule *s = y ? tex_auto_schedule(c.ctx, 1, &y, target) : NULL;
        const char *host = s ? attach_host(s, "W.local") : NULL;
        TT_CHECK(s && ops_check_jit(&c.w, s, "cpu -threads=2", 9, NULL, true) == 0);
        TT_CHECK(host && strcmp(host, "Y.local") == 0); /* packed per depth block */
        TT_CHECK(s &&
                 kernel_source_has(&c, s, "cpu -threads=2", "__builtin_prefetch(&W[") == small);
        if (tt_failed_checks && s) {
            char *text = tex_schedule_str(s);
            printf("  %s:\n%s", target, text ? text : "(none)");
            free(text);
        }
        tex_ctx_free(c.ctx);
    }
}

/* Built-in UPDATE calls of source src, and how many of them an IF guards
 * (the line before is "if (...) {"). */
static int guarded_updates(const char *src, int *total)
{
    int guarded = 0;
    *total = 0;
    for (const char *p = strstr(src, "_update(("); p; p = strstr(p + 1, "_update((")) {
        const char *line = p, *prev;
        while (line > src && line[-1] != '\n')
            line--;
        for (prev = line > src ? line - 1 : src; prev > src && prev[-1] != '\n';)
            prev--;
        (*total)++;
        guarded += line - prev >= 2 && line[-2] == '{' && strstr(prev, "if (") != NULL &&
                   strstr(prev, "if (") < line;
    }
    return guarded;
}

/* The value of conv kernel k (built by target from s) at NCHWc output index
 * `at`, on X of ones and weights W of ones but one infinite weight: filter 0,
 * channel 0, window row ry, column rx. */
static float conv_with_inf(as_case *c, tex_schedule *s, const char *target, DLTensor **arr,
                           int64_t ry, int64_t rx, int64_t at)
{
    char why[512];
    tex_func *f = ops_lower(&c->w, s, why, sizeof why);
    tex_kernel *k = f ? tex_build(f, target) : NULL;
    for (int a = 0; a < 2; a++)
        for (int64_t e = 0; e < ops_numel(arr[a]); e++)
            ((float *)arr[a]->data)[e] = 1.0f;
    ((float *)arr[1]->data)[(ry * arr[1]->shape[3] + rx) * arr[1]->shape[4] * arr[1]->shape[5]] =
        INFINITY;
    if (!k || tex_kernel_call_tensors(k, 3, arr) != 0)
        TT_FAILF("%s: %s", target, k ? tex_kernel_errmsg(k) : f ? tex_errmsg(c->ctx) : why);
    tex_kernel_free(k);
    return ((float *)arr[2]->data)[at];
}

/* Distinct built-in UPDATE functions that source src calls. */
static int update_kinds(const char *src)
{
    const char *seen[16];
    int n = 0;
    for (const char *p = strstr(src, "_update(("); p && n < 16; p = strstr(p + 1, "_update((")) {
        const char *name = p;
        while (name > src && name[-1] != ' ')
            name--;
        bool known = false;
        for (int i = 0; i < n; i++)
            known |= strncmp(seen[i], name, (size_t)(p - name) + 9) == 0;
        if (!known)
            seen[n++] = name;
    }
    return n;
}

/* A tensorized blocked conv skips the updates whose input tile lies wholly
 * in the padding (the first and last output rows' outer filter rows), and
 * runs the tiles whose first or last pixels read only padding (the first
 * and last filter columns at a row's ends) on fewer rows: IFs guard its
 * update calls, which call more instances than the tiles' own, and the
 * result matches the oracle. Under -strict-float nothing is skipped, so an
 * infinite weight that only the padding meets gives NaN (0 * inf), as the
 * reference does; the default build skips that product and stays finite.
 * Filters 3x3, 5x5 and 7x7 (trims of up to 3 rows). Weights: window row
 * 0 column 1 (met by the padding above the first output row), window row
 * `pad` column 0 and column r - 1 (met by the padding left of the first
 * output column, right of the last). An output that meets the weight on
 * real input is infinite in both. */
static void test_conv_padding_skipped(void)
{
    if (!nr)
        return;
    for (int64_t r = 3; r <= 7; r += 2) {
        as_case c;
        case_init(&c, "tz_conv_skip", 0, NULL, false);
        int64_t h = 7, w = 9, pad = r / 2;
        tex_expr *shape_x[5] = {tex_int(c.ctx, 1), tex_int(c.ctx, 2), tex_int(c.ctx, h),
                                tex_int(c.ctx, w), tex_int(c.ctx, 16)};
        tex_expr *shape_w[6] = {tex_int(c.ctx, 2), tex_int(c.ctx, 2),  tex_int(c.ctx, r),
                                tex_int(c.ctx, r), tex_int(c.ctx, 16), tex_int(c.ctx, nr)};
        tex_tensor *X = ops_input(&c.w, "X", 5, shape_x), *W = ops_input(&c.w, "W", 6, shape_w);
        tex_tensor *y = c.w.out =
            tex_op_conv2d(c.ctx, "Y", X, W, NULL, (int64_t[]){pad, pad}, NULL, 1, TEX_LAYOUT_NCHWC);
        tex_schedule *s = y ? tex_auto_schedule(c.ctx, 1, &y, "cpu -threads=2") : NULL;
        TT_CHECK(s && ops_check_jit(&c.w, s, "cpu -threads=2", 9, NULL, true) == 0);
        int kinds[2] = {0, 0};
        for (int strict = 0; s && strict < 2; strict++) {
            char why[512];
            tex_func *f = ops_lower(&c.w, s, why, sizeof why);
            tex_kernel *k = f ? tex_build(f, strict ? "c -strict-float" : "c") : NULL;
            int total = 0, guarded = k ? guarded_updates(tex_kernel_source(k), &total) : -1;
            kinds[strict] = k ? update_kinds(tex_kernel_source(k)) : 0;
            TT_CHECK(total > 0 && (strict ? guarded == 0 : guarded > 0));
            if (tt_failed_checks)
                printf("  r=%lld strict=%d: %d of %d updates guarded\n%s", (long long)r, strict,
                       guarded, total, k ? tex_kernel_source(k) : why);
            tex_kernel_free(k);
        }
        TT_CHECK(kinds[1] > 0 && kinds[0] > kinds[1]);
        DLDevice cpu = {kDLCPU, 0};
        DLTensor *arr[3] = {tex_array_new(5, (int64_t[]){1, 2, h, w, 16}, TEX_F32, cpu),
                            tex_array_new(6, (int64_t[]){2, 2, r, r, 16, nr}, TEX_F32, cpu),
                            tex_array_new(5, (int64_t[]){1, 2, h, w, nr}, TEX_F32, cpu)};
        /* (window row, column, an output only the padding meets it at, one real input does) */
        const int64_t weights[3][4] = {
            {0, 1, 0, (pad * w + pad - 1) * nr},
            {pad, 0, (pad * w) * nr, (pad * w + pad) * nr},
            {pad, r - 1, (pad * w + w - 1) * nr, (pad * w + w - 1 - pad) * nr}};
        for (int i = 0; i < 3 && s && arr[0] && arr[1] && arr[2]; i++) {
            const int64_t *q = weights[i];
            TT_CHECK(isfinite(conv_with_inf(&c, s, "cpu", arr, q[0], q[1], q[2])));
            TT_CHECK(isinf(conv_with_inf(&c, s, "cpu", arr, q[0], q[1], q[3])));
            TT_CHECK(isnan(conv_with_inf(&c, s, "cpu -strict-float", arr, q[0], q[1], q[2])));
            TT_CHECK(isinf(conv_with_inf(&c, s, "cpu -strict-float", arr, q[0], q[1], q[3])));
        }
        for (int a = 0; a < 3; a++)
            tex_array_free(arr[a]);
        tex_ctx_free(c.ctx);
    }
}

/* Whether kernel source src computes the padding stage Y_pad. */
static bool computes_padding(const char *src)
{
    return strstr(src, "Y_pad") != NULL;
}

/* A tensorized blocked conv whose padding only such tiles read does not
 * compute the padding (pad_bypass.c) when zero_skip keeps every tile in its
 * interior: the tiles read X, the default build has no Y_pad, the result
 * matches the oracle, compiled and interpreted (which skips the
 * -strict-float alternative); -strict-float computes the padding and runs
 * the whole tiles on it, also right. Filters 1 to 7 wide on images as thin
 * as one pixel; the padding stays where zero_skip cannot keep the tiles
 * inside: a 9x9 filter's 4 columns of padding (it trims up to 3 rows), and
 * a padding of 2 around a 3-pixel row whose 5 outputs are one tile, wider
 * than the row. */
static void test_conv_pad_bypassed(void)
{
    /* bypassed: 0 no, 1 yes, 2 with AVX-512 only: its rows of 7 are one 7-row tile, AVX2's
     * 4 + 3 leave 3 columns of padding beside a 3-row tile, more than it may trim (2) */
    static const struct {
        int64_t r, pad, h, w;
        int bypassed;
    } cases[] = {{3, 1, 7, 9, 1}, {5, 2, 5, 11, 1}, {7, 3, 7, 7, 2}, {3, 1, 1, 13, 1},
                 {3, 1, 6, 2, 1}, {3, 1, 4, 1, 1},  {9, 4, 9, 9, 0}, {3, 2, 3, 3, 0}};
    if (!nr)
        return;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t r = cases[i].r, pad = cases[i].pad;
        bool bypassed = cases[i].bypassed == 1 || (cases[i].bypassed == 2 && nr >= 64);
        as_case c;
        case_init(&c, "tz_conv_bypass", 0, NULL, false);
        tex_expr *shape_x[5] = {tex_int(c.ctx, 1), tex_int(c.ctx, 2), tex_int(c.ctx, cases[i].h),
                                tex_int(c.ctx, cases[i].w), tex_int(c.ctx, 16)};
        tex_expr *shape_w[6] = {tex_int(c.ctx, 2), tex_int(c.ctx, 2),  tex_int(c.ctx, r),
                                tex_int(c.ctx, r), tex_int(c.ctx, 16), tex_int(c.ctx, nr)};
        tex_tensor *X = ops_input(&c.w, "X", 5, shape_x), *W = ops_input(&c.w, "W", 6, shape_w);
        tex_tensor *y =
            tex_op_conv2d(c.ctx, "Y", X, W, NULL, (int64_t[]){pad, pad}, NULL, 1, TEX_LAYOUT_NCHWC);
        tex_schedule *s = case_check(&c, y, "cpu -threads=2");
        char why[2048] = "";
        tex_func *f = s ? ops_lower(&c.w, s, why, sizeof why) : NULL;
        TT_CHECK(f && ops_run_and_compare(&c.w, f, NULL, "interpreted: ", 5, why, sizeof why) == 0);
        TT_CHECK(s && ops_check_jit(&c.w, s, "cpu -strict-float", 6, NULL, true) == 0);
        for (int strict = 0; f && strict < 2; strict++) {
            tex_kernel *k = tex_build(f, strict ? "c -strict-float" : "c");
            bool padded = k && computes_padding(tex_kernel_source(k));
            TT_CHECK(k && padded == (strict || !bypassed));
            if (tt_failed_checks)
                printf("  r=%lld pad=%lld %lldx%lld strict=%d: %s\n", (long long)r, (long long)pad,
                       (long long)cases[i].h, (long long)cases[i].w, strict,
                       k ? tex_kernel_source(k) : tex_errmsg(c.ctx));
            tex_kernel_free(k);
        }
        if (tt_failed_checks && why[0])
            printf("  %s\n", why);
        tex_ctx_free(c.ctx);
    }
}

/* The ordinary register tiles for convs the built-in does not fit. */
static void test_conv_fallback(void)
{
    run_conv(TEX_LAYOUT_NCHW, 1, 5, 9, 67, 3, 1, 1, true, false);
    if (quick)
        return;
    run_conv(TEX_LAYOUT_NHWC, 1, 5, 9, 67, 3, 1, 2, true, false); /* stride 2 */
}

/* TEX_DUMP=fusion says whether and with what a GEMM-like stage is
 * tensorized, or why not. */
static void test_dump(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){8, 4});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){4, 64});
    tex_tensor *BT = tex_placeholder_c(ctx, "BT", TEX_F32, 2, (int64_t[]){64, 4});
    tex_tensor *outs[2] = {tex_op_matmul(ctx, "Y", A, B, 0, 0),
                           tex_op_matmul(ctx, "Z", A, BT, 0, 1)};
    char text[4096];
    dump_fusion(ctx, 2, outs, "cpu", text, sizeof text);
    if (nr > 0)
        TT_CHECK(strstr(text, "'Y' (gemm-like): alone -- an output of the schedule; tensorized "
                              "with cpu.gemm_f32_avx") != NULL);
    TT_CHECK(
        strstr(text, "'Z' (gemm-like): alone -- an output of the schedule; not tensorized: ") !=
        NULL);
    if (tt_failed_checks)
        printf("  dump:\n%s", text);
    tex_ctx_free(ctx);
}

int main(void)
{
    quick = getenv("TEX_SANITIZE_FLAGS") != NULL;
    if (!host_gemm_builtin(&nr))
        nr = 0;
    if (oc_setup(cache_dir) != 0) {
        printf("test_auto_schedule_tensorize: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_dump);
    if (!tex_target_available("cpu")) {
        printf("SKIP auto_schedule_tensorize (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_matmul);
    TT_RUN(test_matmul_fallback);
    TT_RUN(test_matmul_few_panels);
    TT_RUN(test_no_tensorize);
    TT_RUN(test_matmul_sliced);
    TT_RUN(test_conv);
    TT_RUN(test_conv_panels);
    TT_RUN(test_conv_blocked);
    TT_RUN(test_conv_weight_hints);
    TT_RUN(test_conv_packed_hints);
    TT_RUN(test_conv_padding_skipped);
    TT_RUN(test_conv_pad_bypassed);
    TT_RUN(test_conv_fallback);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
