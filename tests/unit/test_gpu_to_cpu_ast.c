/*
 * The printed AST of GPU schedules after the CPU tail (texi_lower_tail):
 * structural checks of what gpu_to_cpu (barrier fission), gpu_blocks
 * (block loops as one OpenMP parallel loop) and gpu_threads (the innermost
 * thread loop moved inward and vectorized) produce, of what gpu_barriers
 * makes of hand-built thread nests, and of the C the CPU printer makes of
 * it. That the results stay right is test_gpu_on_cpu's
 * and test_gpu_random's job (JIT against the oracle at odd sizes).
 */
#include "tt.h"

#include "backend_cpu/cpu.h"
#include "support/gpu_cases.h"
#include "support/ops.h"
#include "support/tmpdir.h"
#include "util/host.h"

#include <stdlib.h>
#include <unistd.h>

static char cache_dir[] = "/tmp/tex_test_gpu_to_cpu_ast.XXXXXX";

/* The CPU tail of case id at `sizes` printed, malloc'ed; NULL on failure. */
static char *tail_text_at(tex_ctx *ctx, gc_id id, bool symbolic, const int64_t sizes[])
{
    gc_case c;
    tex_func tail;
    if (gc_build(ctx, id, sizes, symbolic, &c) != 0 || !c.f) {
        TT_FAILF("%s: %s", gc_names[id], c.why);
        return NULL;
    }
    if (texi_lower_tail(c.f, TEXI_TAIL_CPU, false, &tail, NULL) != 0) {
        TT_FAILF("%s: CPU tail: %s", gc_names[id], tex_errmsg(ctx));
        return NULL;
    }
    return texi_stmt_str(tail.body);
}

/* tail_text_at at the case's small sizes. */
static char *tail_text(tex_ctx *ctx, gc_id id, bool symbolic)
{
    int64_t sizes[GC_MAX_SIZES];
    gc_default_sizes(id, GC_SMALL, sizes);
    return tail_text_at(ctx, id, symbolic, sizes);
}

/* The C source of case id built for "c", malloc'ed; NULL on failure. */
static char *c_source(tex_ctx *ctx, gc_id id)
{
    int64_t sizes[GC_MAX_SIZES];
    gc_default_sizes(id, GC_SMALL, sizes);
    gc_case c;
    tex_kernel *k = gc_build(ctx, id, sizes, false, &c) == 0 && c.f ? tex_build(c.f, "c") : NULL;
    const char *src = k ? tex_kernel_source(k) : NULL;
    char *r = src ? strdup(src) : NULL;
    tex_kernel_free(k);
    return r;
}

/* Barrier fission: no barrier is left, and the cooperative fetch of the
 * shared tiles runs for all threads before the compute reads them. */
static void test_fission(void)
{
    tex_ctx *ctx = tex_ctx_new();
    char *ast = tail_text(ctx, GC_MATMUL, false);
    TT_CHECK(ast && !strstr(ast, "barrier"));
    const char *fetch = ast ? strstr(ast, "A.shared[ramp(ax0") : NULL;
    const char *use = fetch ? strstr(fetch, "= C.local[ramp(i*64") : NULL;
    const char *next_nest = fetch ? strstr(fetch, "bind threadIdx.y") : NULL;
    TT_CHECK(fetch && use && next_nest && next_nest < use);
    free(ast);
    tex_ctx_free(ctx);
}

/* Two block dimensions: one parallel loop over their product, the block
 * variables bound from it (outer slowest); the tail tiles make the work
 * uneven, so the loop is dynamic. */
static void test_blocks_collapsed(void)
{
    tex_ctx *ctx = tex_ctx_new();
    char *ast = tail_text(ctx, GC_MATMUL, false);
    TT_CHECK(ast && strstr(ast, "attr parallel_dynamic {\n  for (blocks, 0, 4) parallel {"));
    TT_CHECK(ast && strstr(ast, "let i.outer = blocks/2") && strstr(ast, "let j.outer = blocks%2"));
    TT_CHECK(ast && !strstr(ast, "blockIdx"));
    free(ast);
    char *src = c_source(ctx, GC_MATMUL);
    TT_CHECK(src && strstr(src, "#pragma omp parallel for schedule(dynamic, tex_chunk(4, 0))"));
    free(src);
    tex_ctx_free(ctx);
}

/* Symbolic sizes: the collapsed extent is the product of the symbolic
 * block counts. */
static void test_blocks_symbolic(void)
{
    tex_ctx *ctx = tex_ctx_new();
    char *ast = tail_text(ctx, GC_MATMUL, true);
    TT_CHECK(ast && strstr(ast, "for (blocks, 0, ") && strstr(ast, ") parallel {"));
    TT_CHECK(ast && !strstr(ast, "blockIdx"));
    free(ast);
    tex_ctx_free(ctx);
}

/* One block dimension whose blocks all do the same work: a plain parallel
 * loop over the rows, statically scheduled. */
static void test_blocks_even(void)
{
    tex_ctx *ctx = tex_ctx_new();
    char *ast = tail_text(ctx, GC_SOFTMAX, false);
    TT_CHECK(ast && strstr(ast, "for (i, 0, 5) parallel {") && !strstr(ast, "parallel_dynamic"));
    free(ast);
    tex_ctx_free(ctx);
}

/* Cross-thread reductions: the per-thread partials become one array over
 * the threads (thread index fastest), the thread loop moves inside the
 * serial loop over the row and every segment is vectorized, the final
 * combination of the partials a vectorized reduction; no thread loop is
 * left. */
static void test_threads_reduction(void)
{
    tex_ctx *ctx = tex_ctx_new();
    char *ast = tail_text(ctx, GC_SOFTMAX, false);
    TT_CHECK(ast && strstr(ast, "allocate Mx.rf: f32[128i64] local"));
    TT_CHECK(ast && strstr(ast, "= max(Mx.rf[ramp("));
    TT_CHECK(ast && strstr(ast, "Mx[0] = max(Mx[0], vreduce_max("));
    TT_CHECK(ast && strstr(ast, "Se[0] = Se[0] + vreduce_add("));
    TT_CHECK(ast && !strstr(ast, "threadIdx"));
    free(ast);
    tex_ctx_free(ctx);
}

/* Whether some line of ast ending in `outer` is followed by one ending in
 * `inner` (at any indentation: loop_unswitch nests copies under IFs). */
static bool loop_directly_in(const char *ast, const char *outer, const char *inner)
{
    size_t no = strlen(outer);
    for (const char *p = strstr(ast, outer); p; p = strstr(p + 1, outer)) {
        const char *q = p + no;
        if (*q++ != '\n')
            continue;
        q += strspn(q, " ");
        if (strncmp(q, inner, strlen(inner)) == 0)
            return true;
    }
    return false;
}

/* A segment whose accesses are unit-stride in threadIdx.x (the stencil's
 * compute) runs as vectors. matmul's 4x4 outputs per thread: the per-thread
 * tiles are laid out [threadIdx.y][row][threadIdx.x][column], so a tile row
 * of all threads is one run of 64 and the compute, the initialization and
 * the write-back are vectorized over it (tail tiles guarded, predicated
 * where the CPU has mask registers; with symbolic
 * sizes the tiles are thread-fastest, vectorized over the threads); the
 * cooperative fetches, whose tile rows are 8 (A) and 64
 * (B) wide, are vectorized piecewise; the loop over k runs inside the
 * loop over the tile rows, so that promote keeps a row's accumulators in
 * registers. */
static void test_threads_vectorized(void)
{
    tex_ctx *ctx = tex_ctx_new();
    char *ast = tail_text(ctx, GC_STENCIL, false);
    TT_CHECK(ast && strstr(ast, "O[ramp(") && strstr(ast, "T[ramp("));
    free(ast);
    ast = tail_text(ctx, GC_MATMUL, true); /* symbolic: 4 x 4 tiles, the last ones guarded */
    TT_CHECK(ast && strstr(ast, "C.local[ramp("));
    free(ast);
    ast = tail_text(ctx, GC_MATMUL, false);
    TT_CHECK(ast && strstr(ast, "allocate C.local: f32[4096] local"));
    /* the chunks of a block's guarded row: predicated where the CPU has mask
     * registers (simd_tail), else a loop over checked chunks */
    bool k_masks = texi_host_vector_bytes() >= 64;
    const char *acc = !ast ? NULL
                      : k_masks
                          ? strstr(ast, "C.local[ramp(i*64 + i.inner.outer*256, 1, 16) if ramp(")
                          : strstr(ast, "C.local[ramp(i*64 + i.inner.outer*256 + chunk*");
    /* (under a chunk's test, A's element is a LET: guarded_loads) */
    TT_CHECK(acc && strstr(acc, k_masks ? "broadcast(A.shared_ld, 16)" : "broadcast(A.shared["));
    TT_CHECK(ast && strstr(ast, k_masks ? "C.local[ramp(i.inner.outer*256 + i.init*64, 1, 16) if "
                                        : "C.local[ramp(i.inner.outer*256 + i.init*64 + chunk*"));
    TT_CHECK(ast && strstr(ast, "= C.local[ramp(i.inner.outer*256 + i.inner.inner*64"));
    TT_CHECK(ast && strstr(ast, "A.shared[ramp(") && strstr(ast, "B.shared[ramp("));
    TT_CHECK(ast && loop_directly_in(ast, "for (i, 0, 4) {", "for (k.inner, 0, 8) {"));
    TT_CHECK(ast && !strstr(ast, "threadIdx.x"));
    free(ast);
    /* whole tiles: a row's accumulators in registers across k.inner */
    ast = tail_text_at(ctx, GC_MATMUL, false, (const int64_t[GC_MAX_SIZES]){64, 128, 16});
    const char *row = ast ? strstr(ast, "for (i, 0, 4) {") : NULL;
    const char *k = row ? strstr(row, "for (k.inner, 0, 8) {") : NULL;
    const char *reg = row ? strstr(row, "allocate C.local.reg: f32[64] local") : NULL;
    TT_CHECK(k && reg && reg < k);
    TT_CHECK(k && strstr(k, "C.local.reg[ramp(0, 1, ") && strstr(k, "] = C.local.reg[ramp(0, 1, "));
    free(ast);
    tex_ctx_free(ctx);
}

/* unstage_shared: the stencil's halo tile, copied at block level, is
 * read from T itself (no copy, no barrier, so one vectorized segment);
 * the transpose's tile stays (reading A directly would make its vector
 * loop strided), and so do matmul's (a thread loop encloses them: their
 * barriers run the block's threads together around k). */
static void test_unstaged(void)
{
    tex_ctx *ctx = tex_ctx_new();
    char *ast = tail_text(ctx, GC_STENCIL, false);
    TT_CHECK(ast && !strstr(ast, "T.shared") && !strstr(ast, "barrier"));
    TT_CHECK(ast && strstr(ast, "O[ramp(") && strstr(ast, "T[ramp("));
    free(ast);
    ast = tail_text(ctx, GC_VECTILE, true);
    TT_CHECK(ast && !strstr(ast, "X.shared") && strstr(ast, "X[ramp("));
    free(ast);
    ast = tail_text(ctx, GC_TRANSPOSE, false);
    TT_CHECK(ast && strstr(ast, "allocate A.shared") && strstr(ast, "= A.shared["));
    free(ast);
    ast = tail_text(ctx, GC_MATMUL, false);
    TT_CHECK(ast && strstr(ast, "A.shared[ramp(") && strstr(ast, "B.shared[ramp("));
    free(ast);
    tex_ctx_free(ctx);
}

/* `for (tx, 0, 16) bind threadIdx.x { body }` through gpu_threads,
 * printed (malloc'ed). */
static char *threads_of(tex_ctx *ctx, tex_expr *tx, tex_stmt *body)
{
    body = body ? texi_for_new(ctx, tx, texi_int_imm(ctx, TEX_I32, 0),
                               texi_int_imm(ctx, TEX_I32, 16), TEXI_FOR_THREAD, TEX_THREAD_X, body)
                : NULL;
    tex_stmt *out = NULL;
    texi_lower lw = {.ctx = ctx};
    TT_CHECK(body && texi_pass_gpu_threads(&lw, body, &out) == 0);
    return out ? texi_stmt_str(out) : NULL;
}

/* `for (tx, 0, 16) bind threadIdx.x { for (j, 0, 4) body }` through
 * gpu_threads, printed (malloc'ed). */
static char *lane_nest(tex_ctx *ctx, tex_expr *tx, tex_expr *j, tex_stmt *body)
{
    body = texi_for_new(ctx, j, texi_int_imm(ctx, TEX_I32, 0), texi_int_imm(ctx, TEX_I32, 4),
                        TEXI_FOR_SERIAL, -1, body);
    return threads_of(ctx, tx, body);
}

/* 4 consecutive elements per thread: the thread loop and the loop over
 * the 4 become one vectorized loop over 64 lanes, a guard on the element
 * rewritten with them; a thread that reads its next element, which it
 * writes itself in the next iteration, keeps its loops. */
static void test_threads_lanes_fused(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *tx = texi_var_new(ctx, "tx", TEX_I32), *j = texi_var_new(ctx, "j", TEX_I32);
    tex_expr *n = texi_int_imm(ctx, TEX_I32, 65);
    texi_buffer *A = texi_buffer_new(ctx, "A", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    texi_buffer *O = texi_buffer_new(ctx, "O", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    tex_expr *at = texi_binary(TEXI_EXPR_ADD,
                               texi_binary(TEXI_EXPR_MUL, tx, texi_int_imm(ctx, TEX_I32, 4)), j);
    tex_expr *next = texi_binary(TEXI_EXPR_ADD, at, texi_int_imm(ctx, TEX_I32, 1));
    tex_expr *two = texi_float_imm(ctx, TEX_F32, 2.0);
    tex_stmt *st =
        texi_store_new(ctx, O, at, texi_binary(TEXI_EXPR_MUL, texi_load_new(A, at), two));
    tex_stmt *guarded =
        texi_if_new(ctx, texi_binary(TEXI_EXPR_LT, at, texi_int_imm(ctx, TEX_I32, 50)), st, NULL);
    char *ast = lane_nest(ctx, tx, j, guarded);
    TT_CHECK(ast && strstr(ast, "for (lane, 0, 64) vectorized {\n  if (lane < 50) {\n"
                                "    O[lane] = A[lane]*2"));
    TT_CHECK(ast && !strstr(ast, "tx") && !strstr(ast, "for (j"));
    free(ast);
    tex_stmt *carried =
        texi_store_new(ctx, O, at, texi_binary(TEXI_EXPR_MUL, texi_load_new(O, next), two));
    ast = lane_nest(ctx, tx, j, carried);
    TT_CHECK(ast && strstr(ast, "for (j, 0, 4)") && !strstr(ast, "lane"));
    free(ast);
    tex_ctx_free(ctx);
}

/* `for (tx, 0, 16) bind threadIdx.x { for (k, 0, 8) for (i, 0, 4)
 * O[at] = O[at] + A[k*16 + tx] }` through gpu_threads, printed (malloc'ed). */
static char *stationary_nest(tex_ctx *ctx, tex_expr *tx, tex_expr *k, tex_expr *i, tex_expr *at)
{
    tex_expr *n = texi_int_imm(ctx, TEX_I32, 128);
    texi_buffer *A = texi_buffer_new(ctx, "A", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    texi_buffer *O = texi_buffer_new(ctx, "O", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    tex_expr *a = texi_binary(TEXI_EXPR_ADD,
                              texi_binary(TEXI_EXPR_MUL, k, texi_int_imm(ctx, TEX_I32, 16)), tx);
    tex_stmt *body = texi_store_new(
        ctx, O, at, texi_binary(TEXI_EXPR_ADD, texi_load_new(O, at), texi_load_new(A, a)));
    body = texi_for_new(ctx, i, texi_int_imm(ctx, TEX_I32, 0), texi_int_imm(ctx, TEX_I32, 4),
                        TEXI_FOR_SERIAL, -1, body);
    body = texi_for_new(ctx, k, texi_int_imm(ctx, TEX_I32, 0), texi_int_imm(ctx, TEX_I32, 8),
                        TEXI_FOR_SERIAL, -1, body);
    return threads_of(ctx, tx, body);
}

/* Accumulators at i*16 + tx, fixed across k: k goes inside i; at k*16 + tx
 * (k's iterations write different elements) the loops keep their order. */
static void test_threads_stationary(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *tx = texi_var_new(ctx, "tx", TEX_I32), *k = texi_var_new(ctx, "k", TEX_I32);
    tex_expr *i = texi_var_new(ctx, "i", TEX_I32), *sixteen = texi_int_imm(ctx, TEX_I32, 16);
    tex_expr *at_i = texi_binary(TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, i, sixteen), tx);
    tex_expr *at_k = texi_binary(TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, k, sixteen), tx);
    char *ast = stationary_nest(ctx, tx, k, i, at_i);
    TT_CHECK(ast &&
             strstr(ast, "for (i, 0, 4) {\n  for (k, 0, 8) {\n    for (tx, 0, 16) vectorized"));
    free(ast);
    ast = stationary_nest(ctx, tx, k, i, at_k);
    TT_CHECK(ast &&
             strstr(ast, "for (k, 0, 8) {\n  for (i, 0, 4) {\n    for (tx, 0, 16) vectorized"));
    free(ast);
    tex_ctx_free(ctx);
}

/* `for (tx, 0, 16) bind threadIdx.x { S[tx] = A[tx/8*100 + tx%8] }`
 * through gpu_threads: the lanes whose tx/8 is 0 and those whose tx/8 is
 * 1 are two guarded vectorized loops, each reading A at an index affine
 * in tx. */
static void test_threads_divmod_peeled(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *tx = texi_var_new(ctx, "tx", TEX_I32), *n = texi_int_imm(ctx, TEX_I32, 200);
    tex_expr *eight = texi_int_imm(ctx, TEX_I32, 8);
    texi_buffer *A = texi_buffer_new(ctx, "A", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    texi_buffer *S = texi_buffer_new(ctx, "S", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    tex_expr *row = texi_binary(TEXI_EXPR_FLOORDIV, tx, eight);
    tex_expr *idx =
        texi_binary(TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, row, texi_int_imm(ctx, TEX_I32, 100)),
                    texi_binary(TEXI_EXPR_FLOORMOD, tx, eight));
    tex_stmt *body = texi_store_new(ctx, S, tx, texi_load_new(A, idx));
    body = texi_for_new(ctx, tx, texi_int_imm(ctx, TEX_I32, 0), texi_int_imm(ctx, TEX_I32, 16),
                        TEXI_FOR_THREAD, TEX_THREAD_X, body);
    tex_stmt *out = NULL;
    texi_lower lw = {.ctx = ctx};
    TT_CHECK(body && texi_pass_gpu_threads(&lw, body, &out) == 0);
    char *ast = out ? texi_stmt_str(out) : NULL;
    TT_CHECK(ast &&
             strstr(ast, "for (tx, 0, 16) vectorized {\n  if (tx < 8) {\n    S[tx] = A[tx]"));
    TT_CHECK(ast && strstr(ast, "if (tx >= 8) {\n    S[tx] = A[tx + 92]"));
    TT_CHECK(ast && !strstr(ast, "threadIdx"));
    free(ast);
    tex_ctx_free(ctx);
}

/* A block of 4x8 threads: thread (ty, tx) stores A[ty*8 + tx] into shared
 * S at `own`, a barrier, then O[ty*8 + tx] = 2 S[read]; S allocated around
 * the nest. gpu_barriers' result, printed (malloc'ed). */
static char *barrier_nest(tex_ctx *ctx, int read_shift)
{
    tex_expr *ty = texi_var_new(ctx, "ty", TEX_I32), *tx = texi_var_new(ctx, "tx", TEX_I32);
    tex_expr *n = texi_int_imm(ctx, TEX_I32, 32);
    texi_buffer *A = texi_buffer_new(ctx, "A", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    texi_buffer *O = texi_buffer_new(ctx, "O", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    texi_buffer *S = texi_buffer_new(ctx, "S", TEX_F32, TEXI_SCOPE_SHARED, 1, &n);
    tex_expr *own = texi_binary(TEXI_EXPR_ADD,
                                texi_binary(TEXI_EXPR_MUL, ty, texi_int_imm(ctx, TEX_I32, 8)), tx);
    tex_expr *read =
        texi_binary(TEXI_EXPR_FLOORMOD,
                    texi_binary(TEXI_EXPR_ADD, own, texi_int_imm(ctx, TEX_I32, read_shift)), n);
    read = read_shift ? read : own;
    tex_stmt *items[3] = {
        texi_store_new(ctx, S, own, texi_load_new(A, own)),
        texi_barrier_new(ctx, TEXI_SCOPE_SHARED),
        texi_store_new(
            ctx, O, own,
            texi_binary(TEXI_EXPR_MUL, texi_load_new(S, read), texi_float_imm(ctx, TEX_F32, 2.0))),
    };
    tex_stmt *body = texi_seq_new(ctx, 3, items);
    body = texi_for_new(ctx, tx, texi_int_imm(ctx, TEX_I32, 0), texi_int_imm(ctx, TEX_I32, 8),
                        TEXI_FOR_THREAD, TEX_THREAD_X, body);
    body = texi_for_new(ctx, ty, texi_int_imm(ctx, TEX_I32, 0), texi_int_imm(ctx, TEX_I32, 4),
                        TEXI_FOR_THREAD, TEX_THREAD_Y, body);
    tex_stmt *in = texi_allocate_new(ctx, S, body), *out = NULL;
    texi_lower lw = {.ctx = ctx};
    TT_CHECK(in && texi_pass_gpu_barriers(&lw, in, &out) == 0);
    return out ? texi_stmt_str(out) : NULL;
}

/* Each thread reads back only its own element: the barrier goes, and S
 * becomes a one-element local buffer inside the thread loops. */
static void test_barrier_removed(void)
{
    tex_ctx *ctx = tex_ctx_new();
    char *ast = barrier_nest(ctx, 0);
    TT_CHECK(ast && !strstr(ast, "barrier"));
    const char *inner = ast ? strstr(ast, "bind threadIdx.x") : NULL;
    TT_CHECK(inner && strstr(inner, "allocate S: f32[1] local"));
    TT_CHECK(ast && strstr(ast, "S[0] = A[ty*8 + tx]") && strstr(ast, "O[ty*8 + tx] = S[0]*2"));
    TT_CHECK(ast && !strstr(ast, "shared"));
    free(ast);
    tex_ctx_free(ctx);
}

/* A thread reads its neighbour's element: the barrier and the shared
 * buffer stay. */
static void test_barrier_kept(void)
{
    tex_ctx *ctx = tex_ctx_new();
    char *ast = barrier_nest(ctx, 1);
    TT_CHECK(ast && strstr(ast, "barrier") && strstr(ast, "allocate S: f32[32] shared"));
    free(ast);
    tex_ctx_free(ctx);
}

/* 8 threads (tx): S[tx] = A[tx]; a LET of v = `value` around a barrier,
 * then O[tx] = S[(tx + 1) % 8] + v; S shared around the nest. gpu_to_cpu's
 * result, printed (malloc'ed). */
static char *let_nest(tex_ctx *ctx, tex_expr *tx, tex_expr *value, texi_buffer *A, texi_buffer *S)
{
    tex_expr *n = texi_int_imm(ctx, TEX_I32, 8);
    texi_buffer *O = texi_buffer_new(ctx, "O", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    tex_expr *v = texi_var_new(ctx, "v", TEX_F32);
    tex_expr *next = texi_binary(TEXI_EXPR_FLOORMOD,
                                 texi_binary(TEXI_EXPR_ADD, tx, texi_int_imm(ctx, TEX_I32, 1)), n);
    tex_stmt *after[2] = {
        texi_barrier_new(ctx, TEXI_SCOPE_SHARED),
        texi_store_new(ctx, O, tx, texi_binary(TEXI_EXPR_ADD, texi_load_new(S, next), v)),
    };
    tex_stmt *items[2] = {texi_store_new(ctx, S, tx, texi_load_new(A, tx)),
                          texi_let_new(ctx, v, value, texi_seq_new(ctx, 2, after))};
    tex_stmt *nest = texi_for_new(ctx, tx, texi_int_imm(ctx, TEX_I32, 0), n, TEXI_FOR_THREAD,
                                  TEX_THREAD_X, texi_seq_new(ctx, 2, items));
    tex_stmt *in = texi_allocate_new(ctx, S, nest), *out = NULL;
    texi_lower lw = {.ctx = ctx};
    TT_CHECK(in && texi_pass_gpu_to_cpu(&lw, in, &out) == 0);
    return out ? texi_stmt_str(out) : NULL;
}

/* A thread-dependent value live across a barrier: a cheap one that reads
 * nothing the nest writes is recomputed where it is used; one that reads
 * shared memory the nest writes is kept in an array over the threads. */
static void test_live_across_barrier(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *tx = texi_var_new(ctx, "tx", TEX_I32), *n = texi_int_imm(ctx, TEX_I32, 8);
    texi_buffer *A = texi_buffer_new(ctx, "A", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    texi_buffer *S = texi_buffer_new(ctx, "S", TEX_F32, TEXI_SCOPE_SHARED, 1, &n);
    char *ast = let_nest(
        ctx, tx, texi_binary(TEXI_EXPR_MUL, texi_load_new(A, tx), texi_load_new(A, tx)), A, S);
    TT_CHECK(ast && !strstr(ast, "let v") && !strstr(ast, "barrier"));
    TT_CHECK(ast && strstr(ast, "+ A[tx]*A[tx]"));
    free(ast);
    ast = let_nest(ctx, tx, texi_load_new(S, tx), A, S);
    TT_CHECK(ast && !strstr(ast, "let v") && !strstr(ast, "barrier"));
    TT_CHECK(ast && strstr(ast, "allocate v: f32[8] local") && strstr(ast, "v[tx] = S[tx]"));
    TT_CHECK(ast && strstr(ast, "+ v[tx]"));
    free(ast);
    tex_ctx_free(ctx);
}

/* Stage t's one axis split by 64 over blockIdx.x / threadIdx.x. */
static int bind_1d(tex_schedule *s, tex_tensor *t)
{
    tex_stage *st = tex_stage_of(s, t);
    tex_iter *o, *i;
    int rc = tex_split(st, tex_op_axis(st, 0), tex_int(tex_tensor_ctx(t), 64), &o, &i);
    rc = rc ? rc : tex_bind(st, o, TEX_BLOCK_X);
    return rc ? rc : tex_bind(st, i, TEX_THREAD_X);
}

/* Two kernels in a row (B = 2 A at root, then C = B + 1), n = 1001 (a tail
 * block): one thread team for both, each a worksharing loop; built for
 * "cpu" on 2 threads, the result matches the oracle. */
static void two_kernels(bool symbolic)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "two_kernels");
    tex_expr *n = ops_size(&w, "n", 1001, symbolic);
    tex_tensor *A = ops_input(&w, "A", 1, &n);
    tex_iter *i = tex_axis(ctx, "i", n), *j = tex_axis(ctx, "j", n);
    tex_tensor *B =
        ops_mid(&w, tex_compute(ctx, "B", 1, &i,
                                tex_mul(TEX_AT(A, tex_iv(i)), tex_const(ctx, TEX_F32, 2))));
    w.out = tex_compute(ctx, "C", 1, &j, tex_add(TEX_AT(B, tex_iv(j)), tex_const(ctx, TEX_F32, 1)));
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    char why[4096] = "";
    TT_CHECK(s && bind_1d(s, B) == 0 && bind_1d(s, w.out) == 0);
    tex_func *f = s ? ops_lower(&w, s, why, sizeof why) : NULL;
    tex_kernel *k = f ? tex_build(f, "cpu -threads=2") : NULL;
    const char *src = k ? tex_kernel_source(k) : NULL;
    TT_CHECK(src && strstr(src, "#pragma omp parallel num_threads(2)\n"));
    const char *first = src ? strstr(src, "#pragma omp for") : NULL;
    TT_CHECK(first && strstr(first + 1, "#pragma omp for"));
    if (k && ops_run_and_compare(&w, f, k, "cpu: ", 3, why, sizeof why) != 0)
        TT_FAILF("two kernels (symbolic %d): %s", symbolic, why);
    tex_kernel_free(k);
    tex_ctx_free(ctx);
}

static void test_region_fused(void)
{
    two_kernels(false);
    two_kernels(true);
}

int main(void)
{
    if (!tt_private_cache(cache_dir, "test_gpu_to_cpu_ast"))
        return 1;
    TT_RUN(test_fission);
    TT_RUN(test_barrier_removed);
    TT_RUN(test_barrier_kept);
    TT_RUN(test_live_across_barrier);
    TT_RUN(test_blocks_collapsed);
    TT_RUN(test_blocks_symbolic);
    TT_RUN(test_blocks_even);
    TT_RUN(test_threads_reduction);
    TT_RUN(test_threads_vectorized);
    TT_RUN(test_unstaged);
    TT_RUN(test_threads_lanes_fused);
    TT_RUN(test_threads_divmod_peeled);
    TT_RUN(test_threads_stationary);
    TT_RUN(test_region_fused);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
