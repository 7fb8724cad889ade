/*
 * The device passes (src/lower/thread_allreduce.c, thread_sync.c,
 * double_buffer.c) and the CUDA allreduce (codegen_cuda_allreduce.c).
 *
 * Real schedules are lowered with the public API and the pass is applied to
 * the function's body (texi_lower {ctx, NULL, func}); the result's printed
 * IR is checked for its structure, and the function with the new body runs
 * through the interpreter (threads of a block in lock-step between
 * barriers) against the oracle. Hand-built IR covers the refusals and the
 * double-buffer pattern. When g++ is available, the emitted CUDA C (and the
 * allreduce helper alone, over many block shapes) runs in the host emulation
 * (tests/support/cuda_emu.h).
 */
#include "tt.h"

#include "backend_cuda/codegen_cuda.h"
#include "lower/device.h"
#include "interp/interp.h"
#include "support/cuda_emu.h"

#include "tex/tex.h"

#include "support/gpu_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s ? strstr(s, needle) : NULL; p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static int apply(tex_func *f, texi_pass_fn fn, tex_stmt *in, tex_stmt **out)
{
    texi_lower lw = {.ctx = f->ctx, .sch = NULL, .func = f};
    return fn(&lw, in, out);
}

/* gc_runner: the interpreter on function ud. */
static int interpret(void *ud, int n, const tex_value vals[], char *err, size_t en)
{
    return texi_interp_run(ud, n, vals, err, en);
}

/* Runs c's function with `body` in the interpreter: 0 when it matches the
 * oracle, else -1 with the difference in c->why. */
static int interp_compare(gc_case *c, tex_stmt *body)
{
    tex_func copy = *c->f;
    copy.body = body;
    return gc_run_compare(c, "interpreted", interpret, &copy, 1);
}

static void check_interp(gc_case *c, tex_stmt *body)
{
    if (interp_compare(c, body) != 0)
        TT_FAILF("%s", c->why);
}

/* Under valgrind the emulation's thread pools (up to 1024 host threads)
 * exceed its thread limit: those checks are skipped there. */
static bool under_valgrind(void)
{
    const char *preload = getenv("LD_PRELOAD");
    return preload && strstr(preload, "vgpreload");
}

/* Builds c's function for "cuda -emit-only", runs it in the emulator and
 * compares with the oracle. Skipped (message) without g++. */
static void check_emulated(gc_case *c)
{
    if (under_valgrind()) {
        printf("  (emulation skipped under valgrind)\n");
        return;
    }
    tex_kernel *k = tex_build(c->f, "cuda -emit-only");
    TT_CHECK(k != NULL);
    if (!k) {
        printf("  %s\n", tex_errmsg(c->ctx));
        return;
    }
    char err[2048] = "";
    cuda_emu *e = cuda_emu_build(tex_kernel_source(k), err, sizeof err);
    if (!e) {
        printf("  (emulation skipped: %s)\n", err);
        tex_kernel_free(k);
        return;
    }
    cuda_emu_kernel m = {e, k};
    if (gc_run_compare(c, "emulated", cuda_emu_runner, &m, 7) != 0)
        TT_FAILF("%s", c->why);
    cuda_emu_free(e);
    tex_kernel_free(k);
}

/* B[i] = sum_k A[i, k] (or max): the reduction split by `threads`,
 * rfactor'ed into local partials and reduced across threadIdx.x. */
static void rowsum_case(gc_case *c, tex_ctx *ctx, int64_t m, int64_t n, int64_t threads, bool max)
{
    memset(c, 0, sizeof *c);
    c->name = max ? "rowmax" : "rowsum";
    c->ctx = ctx;
    c->tol = 1e-5;
    tex_tensor *A = gc_input(c, "A", 2, (tex_expr *[]){gc_i(c, m), gc_i(c, n)}, (int64_t[]){m, n});
    tex_iter *i = tex_axis(ctx, "i", gc_i(c, m)), *k = tex_reduce_axis(ctx, "k", gc_i(c, n));
    tex_expr *a = TEX_AT(A, tex_iv(i), tex_iv(k));
    tex_tensor *B =
        tex_compute(ctx, "B", 1, &i, max ? tex_reduce_max(a, 1, &k) : tex_sum(a, 1, &k));
    gc_output(c, B, 1, (int64_t[]){m});
    tex_schedule *s = tex_schedule_new(ctx, 1, &B);
    if (!gc_thread_reduce(c, s, B, threads, NULL, NULL, TEX_SCOPE_GLOBAL))
        return;
    tex_stage *sb = tex_stage_of(s, B);
    if (gc_ok(c, tex_bind(sb, tex_op_axis(sb, 0), TEX_BLOCK_X), "bind"))
        c->f = tex_lower_tensors(s, c->name, c->n, c->tensors);
    gc_ok_p(c, c->f, "tex_lower_tensors");
}

/* ------------------------------------------------------ thread_allreduce */

static void test_allreduce_rowsum(void)
{
    tex_ctx *ctx = tex_ctx_new();
    gc_case c;
    rowsum_case(&c, ctx, 5, 100, 48, false);
    TT_CHECK(c.f != NULL);
    if (!c.f) {
        printf("  %s\n", c.why);
        tex_ctx_free(ctx);
        return;
    }
    tex_stmt *out = NULL;
    TT_EQ_INT(apply(c.f, texi_pass_thread_allreduce, c.f->body, &out), 0);
    char *s = texi_stmt_str(out);
    TT_EQ_INT(count(s, "cross_thread_reduction"), 0);
    TT_EQ_INT(count(s, "attr thread_allreduce = 0 {"), 1);
    TT_EQ_INT(count(s, "allocate B.red: f32[1] local"), 1);
    TT_EQ_INT(count(s, "B.red[0] = 0.0f"), 1);
    TT_EQ_INT(count(s, "B.red[0] = B.red[0] + B.rf[0]"), 1); /* the partial */
    TT_EQ_INT(count(s, ".red, 0, 48) bind threadIdx.x {\n"), 1);
    TT_EQ_INT(count(s, ".w, 0, 1) bind threadIdx.x {"), 1); /* thread 0 writes */
    TT_EQ_INT(count(s, "B[i] = B[i] + B.red[0]"), 1);
    TT_EQ_INT(count(s, "barrier"), 0); /* B is global and nobody reads it in the kernel */
    free(s);
    check_interp(&c, out);
    check_emulated(&c);
    rowsum_case(&c, ctx, 3, 70, 24, true); /* 24 threads: a segment straddles warps */
    TT_CHECK(c.f != NULL);
    if (c.f) {
        TT_EQ_INT(apply(c.f, texi_pass_thread_allreduce, c.f->body, &out), 0);
        s = texi_stmt_str(out);
        TT_EQ_INT(count(s, "attr thread_allreduce = 2 {"), 1);
        TT_EQ_INT(count(s, "B.red[0] = f32(-inf)"), 1);
        free(s);
        check_interp(&c, out);
        check_emulated(&c);
    }
    tex_ctx_free(ctx);
}

static void test_allreduce_softmax(void)
{
    tex_ctx *ctx = tex_ctx_new();
    int64_t sz[GC_MAX_SIZES];
    gc_default_sizes(GC_SOFTMAX, GC_SMALL, sz);
    gc_case c;
    TT_EQ_INT(gc_build(ctx, GC_SOFTMAX, sz, false, &c), 0);
    if (!c.f) {
        printf("  %s\n", c.why);
        tex_ctx_free(ctx);
        return;
    }
    tex_stmt *red = NULL, *synced = NULL;
    TT_EQ_INT(apply(c.f, texi_pass_thread_allreduce, c.f->body, &red), 0);
    char *s = texi_stmt_str(red);
    TT_EQ_INT(count(s, "attr thread_allreduce = 2 {"), 1); /* the row max */
    TT_EQ_INT(count(s, "attr thread_allreduce = 0 {"), 1); /* the sum of exp */
    TT_EQ_INT(count(s, "barrier(shared)"), 2); /* Mx, Se are shared and read afterwards */
    free(s);
    /* the allreduces already order the shared accesses: thread_sync adds nothing */
    TT_EQ_INT(apply(c.f, texi_pass_thread_sync, red, &synced), 0);
    TT_CHECK(synced == red);
    check_interp(&c, synced);
    check_emulated(&c);
    tex_ctx_free(ctx);
}

/* for (t, 0, 8) bind tag { body } under ATTR cross_thread_reduction. */
static tex_stmt *ctr(tex_ctx *ctx, tex_expr *t, int tag, tex_stmt *body)
{
    tex_stmt *loop =
        texi_for_new(ctx, t, tex_int(ctx, 0), tex_int(ctx, 8), TEXI_FOR_THREAD, tag, body);
    return texi_attr_new(ctx, "cross_thread_reduction", NULL, loop);
}

static void expect_refused(tex_ctx *ctx, tex_stmt *body, const char *why)
{
    texi_lower lw = {.ctx = ctx};
    tex_stmt *out = NULL;
    tex_clear_error(ctx);
    TT_EQ_INT(texi_pass_thread_allreduce(&lw, body, &out), TEX_EUNAVAILABLE);
    const char *msg = tex_errmsg(ctx);
    if (!strstr(msg, "tex_build: cross-thread reduction of 'acc'") || !strstr(msg, why))
        TT_FAILF("unexpected message: %s", msg);
}

static void test_allreduce_refusals(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *one = tex_int(ctx, 1), *len = tex_int(ctx, 8), *zero = tex_int(ctx, 0);
    texi_buffer *acc = texi_buffer_new(ctx, "acc", TEX_F32, TEXI_SCOPE_SHARED, 1, &one);
    texi_buffer *in = texi_buffer_new(ctx, "in", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &len);
    tex_expr *t = texi_var_new(ctx, "t", TEX_I32), *ty = texi_var_new(ctx, "ty", TEX_I32);
    tex_expr *a0 = texi_load_new(acc, zero), *v = texi_load_new(in, t);
    tex_stmt *upd = texi_store_new(ctx, acc, zero, texi_binary(TEXI_EXPR_ADD, a0, v));
    /* along threadIdx.y */
    expect_refused(ctx, ctr(ctx, t, TEX_THREAD_Y, upd), "threadIdx.x");
    /* not an update */
    expect_refused(ctx, ctr(ctx, t, TEX_THREAD_X, texi_store_new(ctx, acc, zero, v)),
                   "has no update");
    /* the element depends on the thread */
    tex_expr *at = texi_load_new(acc, t);
    expect_refused(
        ctx,
        ctr(ctx, t, TEX_THREAD_X, texi_store_new(ctx, acc, t, texi_binary(TEXI_EXPR_MAX, at, v))),
        "depends on the thread index");
    /* read elsewhere in the loop */
    tex_stmt *two[2] = {upd, texi_store_new(ctx, in, t, a0)};
    expect_refused(ctx, ctr(ctx, t, TEX_THREAD_X, texi_seq_new(ctx, 2, two)), "outside its update");
    /* under a condition on another thread index */
    tex_stmt *guarded = texi_if_new(ctx, texi_binary(TEXI_EXPR_LT, ty, tex_int(ctx, 3)),
                                    ctr(ctx, t, TEX_THREAD_X, upd), NULL);
    expect_refused(ctx, texi_for_new(ctx, ty, zero, len, TEXI_FOR_THREAD, TEX_THREAD_Y, guarded),
                   "every thread of the block");
    /* the accepted form, for contrast */
    texi_lower lw = {.ctx = ctx};
    tex_stmt *out = NULL;
    tex_clear_error(ctx);
    TT_EQ_INT(texi_pass_thread_allreduce(&lw, ctr(ctx, t, TEX_THREAD_X, upd), &out), 0);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------ allreduce helper (emu) */

/* One kernel per block shape: every thread contributes x + 1 + 100 g (g its
 * threadIdx.y/z group) and writes the sum and the max it receives. */
static void helper_kernel(texi_sb *sb, int n, int ny, int nz)
{
    int nt = n * ny * nz;
    texi_sb_printf(
        sb,
        "extern \"C\" __global__ void k_%d_%d_%d(float *sum, float *mx, long long *isum)\n"
        "{\n"
        "    __shared__ float scratch[%d];\n"
        "    __shared__ long long iscratch[%d];\n"
        "    int g = (int)(threadIdx.y + blockDim.y * threadIdx.z);\n"
        "    int lin = (int)threadIdx.x + %d * g;\n"
        "    float v = (float)(threadIdx.x + 1 + 100 * g);\n"
        "    sum[lin] = tex_allreduce_x<float, 0, %d, %d>(v, scratch);\n"
        "    mx[lin] = tex_allreduce_x<float, 2, %d, %d>(v, scratch);\n"
        "    isum[lin] = tex_allreduce_x<long long, 0, %d, %d>((long long)v, iscratch);\n"
        "}\n",
        n, ny, nz, nt, nt, n, n, nt, n, nt, n, nt);
}

static void test_allreduce_helper_emulated(void)
{
    static const int shapes[][3] = {{1, 1, 1},  {7, 1, 1},   {8, 4, 1},   {24, 5, 1}, {32, 2, 1},
                                    {48, 1, 1}, {100, 3, 1}, {128, 1, 1}, {96, 2, 3}, {1024, 1, 1}};
    int n_shapes = (int)(sizeof shapes / sizeof shapes[0]);
    if (under_valgrind())
        TT_SKIP("under valgrind (more emulated threads than it allows)");
    texi_sb sb;
    texi_sb_init(&sb);
    texi_sb_puts(&sb, "#include <stdint.h>\n");
    texi_sb_puts(&sb, texi_cu_allreduce_helpers);
    for (int i = 0; i < n_shapes; i++)
        helper_kernel(&sb, shapes[i][0], shapes[i][1], shapes[i][2]);
    char err[4096] = "";
    cuda_emu *e = cuda_emu_build(sb.buf, err, sizeof err);
    texi_sb_fini(&sb);
    if (!e)
        TT_SKIP("no host emulation: %s", err);
    for (int i = 0; i < n_shapes; i++) {
        int n = shapes[i][0], ny = shapes[i][1], nz = shapes[i][2], nt = n * ny * nz;
        float *sum = calloc((size_t)nt, sizeof *sum), *mx = calloc((size_t)nt, sizeof *mx);
        long long *isum = calloc((size_t)nt, sizeof *isum);
        char name[64];
        snprintf(name, sizeof name, "k_%d_%d_%d", n, ny, nz);
        cuda_emu_arg args[3] = {{.kind = CUDA_EMU_PTR, .p = sum},
                                {.kind = CUDA_EMU_PTR, .p = mx},
                                {.kind = CUDA_EMU_PTR, .p = isum}};
        TT_EQ_INT(cuda_emu_launch_raw(e, name, (unsigned[]){1, 1, 1},
                                      (unsigned[]){(unsigned)n, (unsigned)ny, (unsigned)nz}, 3,
                                      args, err, sizeof err),
                  0);
        int bad = 0;
        for (int lin = 0; lin < nt; lin++) {
            long long g = lin / n, want = (long long)n * (n + 1) / 2 + 100 * g * n;
            bad += sum[lin] != (float)want || isum[lin] != want || mx[lin] != (float)(n + 100 * g);
        }
        if (bad)
            TT_FAILF("block (%d, %d, %d): %d threads got a wrong allreduce", n, ny, nz, bad);
        free(sum);
        free(mx);
        free(isum);
    }
    cuda_emu_free(e);
}

/* ------------------------------------------------------------ thread_sync */

/* C = A B: 8x8 threads per 8x8 block tile, k split by 8; the A and B tiles
 * cache_read into shared memory at k.outer, fetched by the same threads. */
static void matmul_case(gc_case *c, tex_ctx *ctx, int64_t m, int64_t n, int64_t kk)
{
    memset(c, 0, sizeof *c);
    c->name = "matmul8";
    c->ctx = ctx;
    c->tol = 1e-5;
    tex_tensor *A =
        gc_input(c, "A", 2, (tex_expr *[]){gc_i(c, m), gc_i(c, kk)}, (int64_t[]){m, kk});
    tex_tensor *B =
        gc_input(c, "B", 2, (tex_expr *[]){gc_i(c, kk), gc_i(c, n)}, (int64_t[]){kk, n});
    tex_iter *i = tex_axis(ctx, "i", gc_i(c, m)), *j = tex_axis(ctx, "j", gc_i(c, n));
    tex_iter *k = tex_reduce_axis(ctx, "k", gc_i(c, kk));
    tex_expr *prod = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(k)), TEX_AT(B, tex_iv(k), tex_iv(j)));
    tex_tensor *C = tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, &k));
    gc_output(c, C, 2, (int64_t[]){m, n});
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_tensor *CL = tex_cache_write(s, C, TEX_SCOPE_LOCAL);
    tex_tensor *AA = tex_cache_read(s, A, TEX_SCOPE_SHARED, 1, &CL);
    tex_tensor *BB = tex_cache_read(s, B, TEX_SCOPE_SHARED, 1, &CL);
    tex_stage *sc = tex_stage_of(s, C), *sl = tex_stage_of(s, CL);
    tex_iter *by, *ty, *bx, *tx, *ko, *ki;
    GC_TRY(c, tex_split(sc, tex_op_axis(sc, 0), gc_i(c, 8), &by, &ty));
    GC_TRY(c, tex_split(sc, tex_op_axis(sc, 1), gc_i(c, 8), &bx, &tx));
    GC_TRY(c, tex_reorder(sc, 4, (tex_iter *[]){by, bx, ty, tx}));
    GC_TRY(c, tex_bind(sc, by, TEX_BLOCK_Y));
    GC_TRY(c, tex_bind(sc, bx, TEX_BLOCK_X));
    GC_TRY(c, tex_bind(sc, ty, TEX_THREAD_Y));
    GC_TRY(c, tex_bind(sc, tx, TEX_THREAD_X));
    GC_TRY(c, tex_compute_at(sl, sc, tx));
    GC_TRY(c, tex_split(sl, tex_op_reduce_axis(sl, 0), gc_i(c, 8), &ko, &ki));
    tex_tensor *sh[2] = {AA, BB};
    for (int t = 0; t < 2; t++) {
        tex_stage *sa = tex_stage_of(s, sh[t]);
        GC_TRY(c, tex_compute_at(sa, sl, ko));
        GC_TRY(c, tex_bind(sa, tex_op_axis(sa, 0), TEX_THREAD_Y));
        GC_TRY(c, tex_bind(sa, tex_op_axis(sa, 1), TEX_THREAD_X));
    }
    c->f = tex_lower_tensors(s, c->name, c->n, c->tensors);
    gc_ok_p(c, c->f, "tex_lower_tensors");
}

/* The body of the first serial loop named `name` in s, or NULL. */
static const tex_stmt *find_loop(const tex_stmt *s, const char *name)
{
    if (!s)
        return NULL;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        if (strcmp(s->u.loop.var->u.var.name, name) == 0)
            return s;
        return find_loop(s->u.loop.body, name);
    case TEXI_STMT_ALLOCATE:
        return find_loop(s->u.alloc.body, name);
    case TEXI_STMT_LET:
        return find_loop(s->u.let.body, name);
    case TEXI_STMT_ATTR:
        return find_loop(s->u.attr.body, name);
    case TEXI_STMT_IF: {
        const tex_stmt *r = find_loop(s->u.ifs.then_s, name);
        return r ? r : find_loop(s->u.ifs.else_s, name);
    }
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++) {
            const tex_stmt *r = find_loop(s->u.seq.items[i], name);
            if (r)
                return r;
        }
        return NULL;
    default:
        return NULL;
    }
}

static void test_sync_matmul(void)
{
    tex_ctx *ctx = tex_ctx_new();
    gc_case c;
    matmul_case(&c, ctx, 20, 24, 20);
    if (!c.f) {
        TT_FAILF("matmul did not lower: %s", c.why);
        tex_ctx_free(ctx);
        return;
    }
    tex_stmt *out = NULL;
    TT_EQ_INT(apply(c.f, texi_pass_thread_sync, c.f->body, &out), 0);
    char *all = texi_stmt_str(out), *kloop = texi_stmt_str(find_loop(out, "k.outer"));
    /* loop partitioning peeled k.outer's last (partial) step: it gets its two as well */
    TT_EQ_INT(count(all, "barrier(shared)"), 4);
    TT_EQ_INT(count(kloop, "barrier(shared)"), 2); /* sync, fetch, sync, compute */
    free(all);
    free(kloop);
    check_interp(&c, out);
    /* without barriers, the threads of a block run one after another and read
     * tiles the others have not fetched yet (poison) */
    TT_CHECK(interp_compare(&c, c.f->body) != 0);
    tex_ctx_free(ctx);
}

static void test_sync_none(void)
{
    tex_ctx *ctx = tex_ctx_new();
    /* a kernel without shared memory */
    gc_case c;
    rowsum_case(&c, ctx, 5, 100, 32, false);
    TT_CHECK(c.f != NULL);
    tex_stmt *red = NULL, *out = NULL;
    if (c.f) {
        TT_EQ_INT(apply(c.f, texi_pass_thread_allreduce, c.f->body, &red), 0);
        TT_EQ_INT(apply(c.f, texi_pass_thread_sync, red, &out), 0);
        TT_CHECK(out == red);
    }
    /* shared memory written and read by the same thread index pattern */
    tex_expr *len = tex_int(ctx, 64), *zero = tex_int(ctx, 0);
    texi_buffer *sh = texi_buffer_new(ctx, "S", TEX_F32, TEXI_SCOPE_SHARED, 1, &len);
    texi_buffer *g = texi_buffer_new(ctx, "G", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &len);
    tex_expr *t = texi_var_new(ctx, "t", TEX_I32), *t2 = texi_var_new(ctx, "t2", TEX_I32);
    tex_stmt *w = texi_for_new(ctx, t, zero, len, TEXI_FOR_THREAD, TEX_THREAD_X,
                               texi_store_new(ctx, sh, t, texi_load_new(g, t)));
    tex_stmt *r_same = texi_for_new(ctx, t2, zero, len, TEXI_FOR_THREAD, TEX_THREAD_X,
                                    texi_store_new(ctx, g, t2, texi_load_new(sh, t2)));
    tex_expr *mirror = texi_binary(TEXI_EXPR_SUB, tex_int(ctx, 63), t2);
    tex_stmt *r_other = texi_for_new(ctx, t2, zero, len, TEXI_FOR_THREAD, TEX_THREAD_X,
                                     texi_store_new(ctx, g, t2, texi_load_new(sh, mirror)));
    texi_lower lw = {.ctx = ctx};
    tex_stmt *same = texi_allocate_new(ctx, sh, texi_seq_new(ctx, 2, (tex_stmt *[]){w, r_same}));
    TT_EQ_INT(texi_pass_thread_sync(&lw, same, &out), 0);
    TT_CHECK(out == same);
    tex_stmt *other = texi_allocate_new(ctx, sh, texi_seq_new(ctx, 2, (tex_stmt *[]){w, r_other}));
    TT_EQ_INT(texi_pass_thread_sync(&lw, other, &out), 0);
    char *s = texi_stmt_str(out);
    TT_EQ_INT(count(s, "barrier(shared)"), 1);
    TT_CHECK(strstr(s, "}\n  barrier(shared)\n  for (t2") != NULL); /* between the thread loops */
    if (!strstr(s, "}\n  barrier(shared)\n  for (t2"))
        printf("%s\n", s);
    free(s);
    tex_ctx_free(ctx);
}

/* The ownership rule (thread_sync.c): inside one 8 x 8 thread nest, a
 * serial loop fetches S[o*64 + ty*8 + tx] and a second one reads S back.
 * Read at the same element: the fetching thread itself, no barrier (not
 * even between the fetch loop's iterations); transposed (tx*8 + ty) or
 * shifted by one: other threads' elements, one barrier between the loops.
 * Last, S[96 + ty*8 + tx] written and S[64 + ty*8 + tx] read: each offset
 * alone is a multiple of the 64 threads' span, their difference (32) is
 * not, so threads 32 apart meet: a barrier. */
static tex_stmt *owner_body(tex_ctx *ctx, texi_buffer *sh, texi_buffer *g, int read_kind)
{
    tex_expr *zero = tex_int(ctx, 0), *eight = tex_int(ctx, 8), *three = tex_int(ctx, 3);
    tex_expr *ty = texi_var_new(ctx, "ty", TEX_I32), *tx = texi_var_new(ctx, "tx", TEX_I32);
    tex_expr *o = texi_var_new(ctx, "o", TEX_I32), *o2 = texi_var_new(ctx, "o2", TEX_I32);
    tex_expr *h = tex_add(tex_mul(ty, eight), tx);
    tex_expr *w_idx =
        read_kind == 3 ? tex_add(h, tex_int(ctx, 96)) : tex_add(tex_mul(o, tex_int(ctx, 64)), h);
    tex_expr *inner = read_kind == 1   ? tex_add(tex_mul(tx, eight), ty)
                      : read_kind == 2 ? tex_add(tex_add(tex_mul(ty, eight), tx), tex_int(ctx, 1))
                                       : tex_add(tex_mul(ty, eight), tx);
    tex_expr *r_idx = read_kind == 3 ? tex_add(h, tex_int(ctx, 64))
                                     : tex_add(tex_mul(o2, tex_int(ctx, 64)), inner);
    tex_expr *g_idx = tex_add(tex_add(tex_mul(o2, tex_int(ctx, 64)), tex_mul(ty, eight)), tx);
    tex_stmt *fetch = texi_for_new(ctx, o, zero, three, TEXI_FOR_SERIAL, -1,
                                   texi_store_new(ctx, sh, w_idx, texi_load_new(g, w_idx)));
    tex_stmt *use = texi_for_new(ctx, o2, zero, three, TEXI_FOR_SERIAL, -1,
                                 texi_store_new(ctx, g, g_idx, texi_load_new(sh, r_idx)));
    tex_stmt *body = texi_seq_new(ctx, 2, (tex_stmt *[]){fetch, use});
    body = texi_for_new(ctx, tx, zero, eight, TEXI_FOR_THREAD, TEX_THREAD_X, body);
    body = texi_for_new(ctx, ty, zero, eight, TEXI_FOR_THREAD, TEX_THREAD_Y, body);
    return texi_allocate_new(ctx, sh, body);
}

static void test_sync_owner(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *len = tex_int(ctx, 200);
    texi_buffer *sh = texi_buffer_new(ctx, "S", TEX_F32, TEXI_SCOPE_SHARED, 1, &len);
    texi_buffer *g = texi_buffer_new(ctx, "G", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &len);
    texi_lower lw = {.ctx = ctx};
    static const char *const kinds[] = {"same element", "transposed", "shifted by one",
                                        "offsets 96 and 64"};
    for (int kind = 0; kind < 4; kind++) {
        tex_stmt *in = owner_body(ctx, sh, g, kind), *out = NULL;
        TT_EQ_INT(texi_pass_thread_sync(&lw, in, &out), 0);
        char *s = out ? texi_stmt_str(out) : NULL;
        int n = s ? count(s, "barrier(shared)") : -1;
        if (n != (kind ? 1 : 0))
            TT_FAILF("%s: %d barriers, want %d:\n%s", kinds[kind], n, kind ? 1 : 0, s ? s : "");
        else if (kind && !strstr(s, "}\n      barrier(shared)\n      for (o2"))
            TT_FAILF("%s: the barrier is not between the loops:\n%s", kinds[kind], s);
        free(s);
    }
    tex_ctx_free(ctx);
}

/* The one-to-one rule (thread_sync.c): inside one 8 x 8 thread nest, serial
 * loops o (2) and p (4) fetch S[o*320 + p*8 + ty*40 + tx] (padded rows: the
 * ownership rule fails, the rest's gcd 8 being under the threads' span),
 * then a loop reads S[q*64 + ty*8 + tx]. Each element of the fetch has one
 * (thread, iteration): no barrier between its iterations, one before the
 * read. With p's coefficient 4 instead, iterations of different threads
 * write the same elements (p*4 + tx overlap): a barrier inside the fetch
 * too. */
static tex_stmt *one_to_one_body(tex_ctx *ctx, texi_buffer *sh, texi_buffer *g, int64_t pc)
{
    tex_expr *zero = tex_int(ctx, 0), *eight = tex_int(ctx, 8);
    tex_expr *ty = texi_var_new(ctx, "ty", TEX_I32), *tx = texi_var_new(ctx, "tx", TEX_I32);
    tex_expr *o = texi_var_new(ctx, "o", TEX_I32), *pv = texi_var_new(ctx, "p", TEX_I32);
    tex_expr *q = texi_var_new(ctx, "q", TEX_I32);
    tex_expr *w_idx = tex_add(tex_add(tex_mul(o, tex_int(ctx, 320)), tex_mul(pv, tex_int(ctx, pc))),
                              tex_add(tex_mul(ty, tex_int(ctx, 40)), tx));
    tex_expr *r_idx = tex_add(tex_mul(q, tex_int(ctx, 64)), tex_add(tex_mul(ty, eight), tx));
    tex_stmt *fetch = texi_store_new(ctx, sh, w_idx, texi_load_new(g, w_idx));
    fetch = texi_for_new(ctx, pv, zero, tex_int(ctx, 4), TEXI_FOR_SERIAL, -1, fetch);
    fetch = texi_for_new(ctx, o, zero, tex_int(ctx, 2), TEXI_FOR_SERIAL, -1, fetch);
    tex_stmt *use = texi_for_new(ctx, q, zero, tex_int(ctx, 3), TEXI_FOR_SERIAL, -1,
                                 texi_store_new(ctx, g, r_idx, texi_load_new(sh, r_idx)));
    tex_stmt *body = texi_seq_new(ctx, 2, (tex_stmt *[]){fetch, use});
    body = texi_for_new(ctx, tx, zero, eight, TEXI_FOR_THREAD, TEX_THREAD_X, body);
    body = texi_for_new(ctx, ty, zero, eight, TEXI_FOR_THREAD, TEX_THREAD_Y, body);
    return texi_allocate_new(ctx, sh, body);
}

static void test_sync_one_to_one(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *len = tex_int(ctx, 640);
    texi_buffer *sh = texi_buffer_new(ctx, "S", TEX_F32, TEXI_SCOPE_SHARED, 1, &len);
    texi_buffer *g = texi_buffer_new(ctx, "G", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &len);
    texi_lower lw = {.ctx = ctx};
    for (int overlap = 0; overlap < 2; overlap++) {
        tex_stmt *in = one_to_one_body(ctx, sh, g, overlap ? 4 : 8), *out = NULL;
        TT_EQ_INT(texi_pass_thread_sync(&lw, in, &out), 0);
        char *s = out ? texi_stmt_str(out) : NULL;
        int n = s ? count(s, "barrier(shared)") : -1;
        if (n != 1 + overlap)
            TT_FAILF("p * %d: %d barriers, want %d:\n%s", overlap ? 4 : 8, n, 1 + overlap,
                     s ? s : "");
        else if (!strstr(s, "}\n      barrier(shared)\n      for (q"))
            TT_FAILF("p * %d: no barrier between the loops:\n%s", overlap ? 4 : 8, s);
        free(s);
    }
    tex_ctx_free(ctx);
}

/* ---------------------------------------------------------- double_buffer */

enum { DB_T = 16, DB_BLOCKS = 3, DB_STEPS = 5 };

/* B[b*16 + t] = sum of A[b*80 .. b*80 + 80) for every thread t: a 16-element
 * tile of A fetched into shared memory per step k (each thread one element),
 * summed by every thread. With `marked`, the tile's ALLOCATE holds an
 * ATTR "double_buffer" naming it (flatten's form). */
static tex_stmt *db_body(tex_ctx *ctx, const tex_func *f, bool marked, texi_buffer **tile)
{
    texi_buffer *A = f->params[0].buf, *B = f->params[1].buf, *accb;
    tex_expr *T = tex_int(ctx, DB_T), *one = tex_int(ctx, 1), *zero = tex_int(ctx, 0);
    tex_expr *b = texi_var_new(ctx, "b", TEX_I32), *t = texi_var_new(ctx, "t", TEX_I32);
    tex_expr *k = texi_var_new(ctx, "k", TEX_I32), *j = texi_var_new(ctx, "j", TEX_I32);
    *tile = texi_buffer_new(ctx, "tile", TEX_F32, TEXI_SCOPE_SHARED, 1, &T);
    accb = texi_buffer_new(ctx, "acc", TEX_F32, TEXI_SCOPE_LOCAL, 1, &one);
    tex_expr *src =
        texi_binary(TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, b, tex_int(ctx, DB_T * DB_STEPS)),
                    texi_binary(TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, k, T), t));
    tex_stmt *fetch = texi_store_new(ctx, *tile, t, texi_load_new(A, src));
    tex_expr *sum = texi_binary(TEXI_EXPR_ADD, texi_load_new(accb, zero), texi_load_new(*tile, j));
    tex_stmt *compute =
        texi_for_new(ctx, j, zero, T, TEXI_FOR_SERIAL, -1, texi_store_new(ctx, accb, zero, sum));
    tex_stmt *kb = texi_seq_new(ctx, 2, (tex_stmt *[]){fetch, compute});
    if (marked)
        kb = texi_attr_new(ctx, "double_buffer", (*tile)->data, kb);
    kb = texi_allocate_new(ctx, *tile, kb);
    tex_stmt *kl = texi_for_new(ctx, k, zero, tex_int(ctx, DB_STEPS), TEXI_FOR_SERIAL, -1, kb);
    tex_stmt *init = texi_store_new(ctx, accb, zero, tex_const(ctx, TEX_F32, 0));
    tex_expr *dst = texi_binary(TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, b, T), t);
    tex_stmt *wr = texi_store_new(ctx, B, dst, texi_load_new(accb, zero));
    tex_stmt *tb = texi_allocate_new(ctx, accb, texi_seq_new(ctx, 3, (tex_stmt *[]){init, kl, wr}));
    tex_stmt *tl = texi_for_new(ctx, t, zero, T, TEXI_FOR_THREAD, TEX_THREAD_X, tb);
    return texi_for_new(ctx, b, zero, tex_int(ctx, DB_BLOCKS), TEXI_FOR_THREAD, TEX_BLOCK_X, tl);
}

/* A function with the parameters the double-buffer bodies use:
 * A: f32[48 * 5], B: f32[48] (its own body is a plain copy). */
static void db_case(gc_case *c, tex_ctx *ctx)
{
    memset(c, 0, sizeof *c);
    c->name = "dbuf";
    c->ctx = ctx;
    c->tol = 1e-5;
    int64_t na = DB_BLOCKS * DB_T * DB_STEPS, nb = DB_BLOCKS * DB_T;
    tex_tensor *A = gc_input(c, "A", 1, (tex_expr *[]){gc_i(c, na)}, &na);
    tex_iter *i = tex_axis(ctx, "i", gc_i(c, nb)), *r = tex_reduce_axis(ctx, "r", gc_i(c, 80));
    tex_expr *idx =
        tex_add(tex_mul(tex_floordiv(tex_iv(i), gc_i(c, DB_T)), gc_i(c, 80)), tex_iv(r));
    tex_tensor *B = tex_compute(ctx, "B", 1, &i, tex_sum(TEX_AT(A, idx), 1, &r));
    gc_output(c, B, 1, &nb);
    tex_schedule *s = tex_schedule_new(ctx, 1, &B);
    c->f = tex_lower_tensors(s, c->name, c->n, c->tensors);
    gc_ok_p(c, c->f, "tex_lower_tensors");
}

static void test_double_buffer(void)
{
    tex_ctx *ctx = tex_ctx_new();
    gc_case c;
    db_case(&c, ctx);
    if (!c.f) {
        TT_FAILF("%s", c.why);
        tex_ctx_free(ctx);
        return;
    }
    texi_buffer *tile;
    tex_stmt *in = db_body(ctx, c.f, true, &tile), *db = NULL, *out = NULL;
    TT_EQ_INT(apply(c.f, texi_pass_double_buffer, in, &db), 0);
    char *s = texi_stmt_str(db);
    TT_EQ_INT(count(s, "allocate tile: f32[32] shared"), 1);
    TT_EQ_INT(count(s, "attr double_buffer {"), 0);
    TT_EQ_INT(count(s, "attr double_buffer_write {"), 1);
    TT_EQ_INT(count(s, "if (k < 4) {"), 1);          /* k + 1 < 5 */
    TT_EQ_INT(count(s, "tile[t] = A[b*80 + t]"), 1); /* prologue: step 0, half 0 */
    TT_EQ_INT(count(s, "tile[t + (k + 1)%2*16] = A[b*80 + t + k*16 + 16]"), 1); /* step k+1 */
    TT_EQ_INT(count(s, "tile[j + k%2*16]"), 1); /* compute reads step k */
    free(s);
    TT_EQ_INT(apply(c.f, texi_pass_thread_sync, db, &out), 0);
    char *all = texi_stmt_str(out), *kloop = texi_stmt_str(find_loop(out, "k"));
    TT_EQ_INT(count(all, "barrier(shared)"), 2); /* after the prologue, one per step */
    TT_EQ_INT(count(kloop, "barrier(shared)"), 1);
    free(all);
    free(kloop);
    check_interp(&c, out);
    /* single-buffered, the same body needs two barriers per step */
    tex_stmt *plain = db_body(ctx, c.f, false, &tile), *ps = NULL, *same = NULL;
    TT_EQ_INT(apply(c.f, texi_pass_double_buffer, plain, &same), 0);
    TT_CHECK(same == plain);
    TT_EQ_INT(apply(c.f, texi_pass_thread_sync, plain, &ps), 0);
    kloop = texi_stmt_str(find_loop(ps, "k"));
    TT_EQ_INT(count(kloop, "barrier(shared)"), 2);
    free(kloop);
    check_interp(&c, ps);
    tex_ctx_free(ctx);
}

/* A marked buffer that the compute also writes: left unchanged. */
static void test_double_buffer_no_match(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *len = tex_int(ctx, 4), *zero = tex_int(ctx, 0);
    texi_buffer *sh = texi_buffer_new(ctx, "S", TEX_F32, TEXI_SCOPE_SHARED, 1, &len);
    tex_expr *k = texi_var_new(ctx, "k", TEX_I32);
    tex_stmt *w1 = texi_store_new(ctx, sh, zero, tex_const(ctx, TEX_F32, 1));
    tex_stmt *w2 = texi_store_new(ctx, sh, tex_int(ctx, 1), texi_load_new(sh, zero));
    tex_stmt *body = texi_allocate_new(ctx, sh,
                                       texi_attr_new(ctx, "double_buffer", sh->data,
                                                     texi_seq_new(ctx, 2, (tex_stmt *[]){w1, w2})));
    tex_stmt *loop = texi_for_new(ctx, k, zero, len, TEXI_FOR_SERIAL, -1, body), *out = NULL;
    texi_lower lw = {.ctx = ctx};
    TT_EQ_INT(texi_pass_double_buffer(&lw, loop, &out), 0);
    TT_CHECK(out == loop);
    tex_ctx_free(ctx);
}

/* The matmul of gpu_cases.h: A and B tiles double-buffered. */
static void test_double_buffer_matmul(void)
{
    tex_ctx *ctx = tex_ctx_new();
    int64_t sz[GC_MAX_SIZES];
    gc_default_sizes(GC_MATMUL, GC_SMALL, sz);
    gc_case c;
    if (gc_build(ctx, GC_MATMUL, sz, false, &c) != 0) {
        TT_FAILF("matmul: %s", c.why);
        tex_ctx_free(ctx);
        return;
    }
    char *s0 = texi_stmt_str(c.f->body);
    /* A and B marked in the main k.outer loop and again in its K tail */
    TT_EQ_INT(count(s0, "attr double_buffer = "), 4);
    free(s0);
    tex_stmt *db = NULL, *out = NULL;
    TT_EQ_INT(apply(c.f, texi_pass_double_buffer, c.f->body, &db), 0);
    TT_EQ_INT(apply(c.f, texi_pass_thread_sync, db, &out), 0);
    char *s = texi_stmt_str(out), *kloop = texi_stmt_str(find_loop(out, "k.outer"));
    /* the main loop pipelined (the one-step tail is not a loop any more);
     * one barrier per step, at the top of the body */
    TT_EQ_INT(count(s, "attr double_buffer_write {"), 1);
    TT_EQ_INT(count(kloop, "barrier(shared)"), 1);
    free(s);
    free(kloop);
    check_interp(&c, out);
    tex_ctx_free(ctx);
}

int main(void)
{
    TT_RUN(test_allreduce_rowsum);
    TT_RUN(test_allreduce_softmax);
    TT_RUN(test_allreduce_refusals);
    TT_RUN(test_allreduce_helper_emulated);
    TT_RUN(test_sync_matmul);
    TT_RUN(test_sync_none);
    TT_RUN(test_sync_owner);
    TT_RUN(test_sync_one_to_one);
    TT_RUN(test_double_buffer);
    TT_RUN(test_double_buffer_no_match);
    TT_RUN(test_double_buffer_matmul);
    return tt_finish();
}
