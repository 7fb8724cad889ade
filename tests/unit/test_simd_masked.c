/*
 * Predicated vector chunks (src/lower/simd_mask.c, printed by
 * src/codegen_c/cvmask.c): the rest of a vectorized loop whose extent the
 * vector width does not divide, and the chunks a split's guard cuts, run
 * as one vector chunk whose loads and stores are masked, where the CPU has
 * masked moves (AVX2, AVX-512); f16 and i8 keep the lanes one by one.
 *
 * Each workload (elementwise over two inputs, a row sum vectorized with
 * tex_vectorize_reduce) in f32, f64 and i32 (masked) and f16 and i8 (lanes
 * one by one) is built over the extents of SIZES, constant (the whole axis
 * vectorized) and symbolic (split by 8, the inner part vectorized; one
 * kernel run at every size), on arrays of their exact size (so a lane read
 * or written past a buffer's end is an AddressSanitizer error under
 * `make asan`) with the output poisoned, by the default compiler and (the
 * symbolic ones) by clang, once at -O0 too, and interpreted on the CPU
 * tail; each is compared with the reference evaluator. The CPU tail must
 * hold the predicated accesses exactly where they are expected, a hand-built
 * loop's vector IR is compared with its exact text, and the generated C,
 * compiled with -Wall -Wextra -Werror by both compilers, must disassemble
 * to masked moves (vmaskmov / vpmaskmov, or a k-masked move on AVX-512);
 * the AVX-512 form (64-byte vectors) is compiled with -mavx512f and
 * disassembled on any host.
 */
#include "tt.h"
#include "backend_cpu/cpu.h"
#include "support/simd_check.h"
#include "support/spawn.h"
#include "support/tmpdir.h"

#include "tex/tex.h"

static const int64_t SIZES[] = {1, 2, 7, 9, 13, 31, 33, 66, 100};
#define N_SIZES (int)(sizeof SIZES / sizeof SIZES[0])

static const tex_dtype DTYPES[] = {TEX_F32, TEX_F64, TEX_I32, TEX_F16, TEX_I8};
#define N_DTYPES (int)(sizeof DTYPES / sizeof DTYPES[0])

static bool masked_dtype(tex_dtype t)
{
    return t == TEX_F32 || t == TEX_F64 || t == TEX_I32;
}

static char tmpdir[64];

/* ------------------------------------------------------------- workloads */

typedef tex_tensor *(*workload_fn)(ops_wl *w, tex_dtype t, int64_t n, bool sym);

static tex_tensor *input(ops_wl *w, const char *name, tex_dtype t, int ndim, tex_expr **shape)
{
    tex_tensor *x = tex_placeholder(w->ctx, name, t, ndim, shape);
    w->in[w->n_in++] = x;
    return x;
}

/* Out[i, j] = A[i, j] * B[i, j] + 1.5 (floats) or A[i, j] * 3 - B[i, j]
 * (integers), 3 rows: every row's tail starts where the last one's ends. */
static tex_tensor *elemwise(ops_wl *w, tex_dtype t, int64_t n, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[2] = {tex_int(c, 3), ops_size(w, "n", n, sym)};
    tex_tensor *A = input(w, "A", t, 2, shape), *B = input(w, "B", t, 2, shape);
    tex_iter *i = tex_axis(c, "i", shape[0]), *j = tex_axis(c, "j", shape[1]);
    tex_expr *a = TEX_AT(A, tex_iv(i), tex_iv(j)), *b = TEX_AT(B, tex_iv(i), tex_iv(j));
    tex_expr *v = texi_dtype_is_float(t) ? tex_add(tex_mul(a, b), tex_const(c, t, 1.5))
                                         : tex_sub(tex_mul(a, tex_const(c, t, 3)), b);
    return w->out = tex_compute(c, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[i] = sum_j X[i, j], 3 rows. */
static tex_tensor *row_sum(ops_wl *w, tex_dtype t, int64_t n, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[2] = {tex_int(c, 3), ops_size(w, "n", n, sym)};
    tex_tensor *X = input(w, "X", t, 2, shape);
    tex_iter *i = tex_axis(c, "i", shape[0]), *j = tex_reduce_axis(c, "j", shape[1]);
    return w->out = tex_compute(c, "Out", 1, (tex_iter *[]){i},
                                tex_sum(TEX_AT(X, tex_iv(i), tex_iv(j)), 1, &j));
}

/* The schedule: a constant extent's axis vectorized whole, a symbolic one
 * split by 8 (the guarded tail), the inner part vectorized; a reduce axis
 * with tex_vectorize_reduce. */
static tex_schedule *schedule(ops_wl *w, bool sym, bool reduce)
{
    tex_schedule *s = tex_schedule_new(w->ctx, 1, &w->out);
    tex_stage *st = s ? tex_stage_of(s, w->out) : NULL;
    if (reduce)
        return st && tex_vectorize_reduce(st, tex_op_reduce_axis(st, 0)) == 0 ? s : NULL;
    if (!sym)
        return st && tex_vectorize(st, tex_stage_axis(st, 1)) == 0 ? s : NULL;
    return simd_split_vectorize(w, 8);
}

/* ------------------------------------------------------------------ runs */

/* Whether the CPU tail of f holds predicated accesses as `masked` says;
 * prints it when not. */
static bool tail_masked(ops_wl *w, tex_func *f, bool masked)
{
    tex_func tail;
    if (simd_tail_of(w, f, &tail) != 0)
        return false;
    char *text = tex_func_str(&tail);
    bool ok = text && (strstr(text, " if ramp(0, 1, ") != NULL) == masked;
    if (text && !ok)
        printf("  %s: the CPU tail should%s hold predicated accesses:\n%s", w->name,
               masked ? "" : " not", text);
    free(text);
    return ok;
}

/* One workload in dtype t at extent n (symbolic: every size of SIZES in
 * one kernel, both compilers), against the oracle. */
static void check_one(const char *name, workload_fn fn, bool reduce, tex_dtype t, int64_t n,
                      bool sym)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, name);
    w.exact = true;
    TT_CHECK(fn(&w, t, n, sym) != NULL);
    tex_schedule *s = schedule(&w, sym, reduce);
    char why[2048];
    tex_func *f = s ? ops_lower(&w, s, why, sizeof why) : NULL;
    TT_CHECK(f != NULL);
    ops_log log = {0};
    ops_logf(&log, "%s %s, n = %s%lld\n", name, tex_dtype_name(t), sym ? "symbolic, " : "",
             (long long)n);
    if (f) {
        /* a rest of 7 lanes (8 f32 / i32 lanes, 3 of 4 f64; 3 of 4 lanes of
         * a reduction, whose width is at most the extent) is predicated */
        int64_t rest = sym ? 7 : n;
        bool masked = texi_simd_host_masks() && masked_dtype(t) && (sym || rest == 7);
        if (sym || n == 7)
            TT_CHECK(tail_masked(&w, f, masked));
    }
    if (f)
        simd_run_compilers(&w, f, &log, sym ? N_SIZES : 1, sym ? SIZES : &n,
                           sym && simd_have_clang());
    tex_ctx_free(ctx);
}

/* The workload in every dtype, symbolic and at each constant extent. */
static void check_workload(const char *name, workload_fn fn, bool reduce)
{
    for (int d = 0; d < N_DTYPES; d++) {
        check_one(name, fn, reduce, DTYPES[d], SIZES[0], true);
        for (int z = 0; z < N_SIZES; z++)
            check_one(name, fn, reduce, DTYPES[d], SIZES[z], false);
    }
}

static void test_elemwise(void)
{
    check_workload("elemwise", elemwise, false);
}

static void test_row_sum(void)
{
    check_workload("row_sum", row_sum, true);
}

/* The predicated code stays right without optimization, and through the
 * helpers' loops over the lanes (a build without AVX2 and AVX-512): the
 * symbolic f32 elementwise kernel built with each (TEX_CFLAGS comes after
 * the JIT's own flags). */
static void test_unoptimized(void)
{
    static const char *const flags[] = {"-O0", "-O1 -mno-avx2 -mno-avx512f"};
    static const char *const names[] = {"elemwise_O0", "elemwise_lanes"};
    const char *old = getenv("TEX_CFLAGS");
    char saved[256];
    snprintf(saved, sizeof saved, "%s", old ? old : "");
    for (int i = 0; i < 2; i++) {
        setenv("TEX_CFLAGS", flags[i], 1);
        check_one(names[i], elemwise, false, TEX_F32, SIZES[0], true);
    }
    if (old)
        setenv("TEX_CFLAGS", saved, 1);
    else
        unsetenv("TEX_CFLAGS");
}

/* ------------------------------------------------- the IR and the machine code */

/* Out[v] = A[v] * 2 over a hand-built vectorized loop of extent 13 (f32)
 * after pass simd under 32-byte vectors with predicated chunks: one full
 * chunk and one of 8 lanes whose first 5 run, exactly. */
static void test_vector_ir(void)
{
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_int(c, 13);
    texi_buffer *A = texi_buffer_new(c, "A", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    texi_buffer *Out = texi_buffer_new(c, "Out", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    tex_expr *v = texi_var_new(c, "v", TEX_I32);
    tex_stmt *body = texi_store_new(
        c, Out, v, texi_binary(TEXI_EXPR_MUL, texi_load_new(A, v), tex_const(c, TEX_F32, 2.0)));
    tex_stmt *loop = texi_for_new(c, v, tex_int(c, 0), n, TEXI_FOR_VECTORIZED, -1, body),
             *out = NULL;
    texi_lower lw = {c, NULL, NULL, false};
    const texi_simd_rules rules = {32, false, true, true};
    TT_CHECK(loop && texi_simd_rewrite(&lw, &rules, loop, &out) == 0);
    char *text = out ? texi_stmt_str(out) : NULL;
    TT_EQ_STR(text ? text : "",
              "Out[ramp(0, 1, 8)] = A[ramp(0, 1, 8)]*broadcast(2.0f, 8)\n"
              "Out[ramp(8, 1, 8) if ramp(0, 1, 8) < broadcast(5, 8)] = "
              "A[ramp(8, 1, 8) if ramp(0, 1, 8) < broadcast(5, 8)]*broadcast(2.0f, 8)\n");
    free(text);
    tex_ctx_free(c);
}

/* Whether the objdump -d listing at path holds a masked move: AVX2's
 * vmaskmovps/pd, vpmaskmovd/q, or an AVX-512 move under a k mask. */
static bool has_masked_move(const char *path)
{
    FILE *d = fopen(path, "r");
    char line[1024];
    bool found = false;
    while (d && !found && fgets(line, sizeof line, d))
        found = strstr(line, "maskmov") || (strstr(line, "vmov") && strstr(line, "{%k"));
    if (d)
        fclose(d);
    return found;
}

/* Runs the words of line (changed in place) with the output into log;
 * the exit status or -1. */
static int run_line(char *line, const char *log)
{
    char *argv[16];
    int n = 0;
    for (char *t = strtok(line, " "); t && n < 15; t = strtok(NULL, " "))
        argv[n++] = t;
    argv[n] = NULL;
    return tt_spawn(argv, log);
}

/* Compiles src with cc at -O3 -march=native (then the extra flags) -Wall
 * -Wextra -Werror into an object and checks its disassembly for a masked
 * move. */
static void check_machine_code(const char *src, const char *cc, const char *extra, const char *name)
{
    char cpath[256], obj[256], log[256], dis[256];
    snprintf(cpath, sizeof cpath, "%s/%s.c", tmpdir, name);
    snprintf(obj, sizeof obj, "%s/%s.o", tmpdir, name);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, name);
    snprintf(dis, sizeof dis, "%s/%s.dis", tmpdir, name);
    FILE *f = fopen(cpath, "w");
    TT_CHECK(f != NULL);
    if (!f)
        return;
    fputs(src, f);
    fclose(f);
    char line[1024];
    /* clang also flags the unused half of the scalar prologue's helper
     * pairs (tex_floordiv_ / tex_floormod_), which are not under test */
    bool clang = strcmp(cc, "clang") == 0;
    snprintf(line, sizeof line,
             "%s -std=c99 -O3 -march=native %s -fopenmp -c -Wall -Wextra -Werror%s %s -o %s", cc,
             extra, clang ? " -Wno-unused-function" : "", cpath, obj);
    if (run_line(line, log) != 0) {
        TT_FAILF("%s does not compile %s warning-free (see %s)", cc, cpath, log);
        return;
    }
    snprintf(line, sizeof line, "objdump -d %s", obj);
    TT_EQ_INT(run_line(line, dis), 0);
    if (!has_masked_move(dis))
        TT_FAILF("%s: no masked move in %s", name, dis);
}

/* check_machine_code of src with cc and, when installed, clang (extra
 * flags `extra`), the files named PREFIX_DTYPE_COMPILER. */
static void check_both_compilers(const char *src, const char *extra, const char *prefix,
                                 tex_dtype t)
{
    for (int cc = 0; cc < 1 + simd_have_clang(); cc++) {
        char name[64];
        snprintf(name, sizeof name, "%s_%s_%s", prefix, tex_dtype_name(t), cc ? "clang" : "cc");
        check_machine_code(src, cc ? "clang" : "cc", extra, name);
    }
}

/* Private buffers (cvmask.c): Out's local cache computed at a row of
 * Out's parallel loop is allocated per thread, and one computed at root in
 * a kernel without parallel loops has one thread too (its loops (chunks of
 * 8 columns, rows, columns in the chunk): a row's last chunk lies on the
 * next row's first elements, already computed), so their masked chunks
 * move whole vectors under a mask (tex_wload_ / tex_wstore_); computed at
 * root around its own parallel loop it is shared by the threads and keeps
 * the masked moves. f32, f64 and i32, n symbolic (split by 8: the last
 * chunk masked) over SIZES, both compilers, against the oracle. */
static void test_private_buffers(void)
{
    if (!texi_simd_host_masks())
        TT_SKIP("the CPU has no masked vector moves");
    static const char *const names[3] = {"shared", "per_row", "serial"};
    for (int d = 0; d < 3; d++)
        for (int how = 0; how < 3; how++) {
            tex_ctx *ctx = tex_ctx_new();
            ops_wl w;
            ops_init(&w, ctx, names[how]);
            w.exact = true;
            TT_CHECK(elemwise(&w, DTYPES[d], 0, true) != NULL);
            tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
            tex_tensor *local = tex_cache_write(s, w.out, TEX_SCOPE_LOCAL);
            tex_stage *so = tex_stage_of(s, w.out), *sl = tex_stage_of(s, local);
            tex_iter *jo, *ji, *i = tex_op_axis(sl, 0);
            TT_EQ_INT(tex_split(sl, tex_op_axis(sl, 1), tex_int(ctx, 8), &jo, &ji), 0);
            TT_EQ_INT(tex_vectorize(sl, ji), 0);
            if (how == 0)
                TT_EQ_INT(tex_parallel(sl, i), 0);
            if (how == 1)
                TT_EQ_INT(tex_compute_at(sl, so, tex_stage_axis(so, 0)), 0);
            if (how == 2)
                TT_EQ_INT(tex_reorder(sl, 3, (tex_iter *[]){jo, i, ji}), 0);
            if (how < 2)
                TT_EQ_INT(tex_parallel(so, tex_stage_axis(so, 0)), 0);
            char *src = simd_source_of(&w, s, "c"), why[2048];
            TT_CHECK(src && (strstr(src, "tex_wstore_v") != NULL) == (how > 0) &&
                     (strstr(src, "tex_mstore_v") != NULL) == (how == 0));
            free(src);
            tex_func *f = ops_lower(&w, s, why, sizeof why);
            TT_CHECK(f != NULL);
            ops_log log = {0};
            ops_logf(&log, "%s %s\n", w.name, tex_dtype_name(DTYPES[d]));
            if (f)
                simd_run_compilers(&w, f, &log, N_SIZES, SIZES, simd_have_clang());
            tex_ctx_free(ctx);
        }
}

/* The symbolic f32, f64 and i32 elementwise kernels hold masked moves. */
static void test_disassembly(void)
{
    char log[128], version[] = "objdump --version";
    snprintf(log, sizeof log, "%s/objdump.log", tmpdir);
    if (run_line(version, log) != 0)
        TT_SKIP("objdump (binutils) is not installed");
    if (!texi_simd_host_masks())
        TT_SKIP("the CPU has no masked vector moves");
    for (int d = 0; d < 3; d++) {
        tex_ctx *ctx = tex_ctx_new();
        ops_wl w;
        ops_init(&w, ctx, "elemwise");
        TT_CHECK(elemwise(&w, DTYPES[d], 0, true) != NULL);
        char *src = simd_source_of(&w, simd_split_vectorize(&w, 8), "c");
        TT_CHECK(src && strstr(src, "tex_mload_v") && strstr(src, "tex_mstore_v"));
        if (src)
            check_both_compilers(src, "", "masked", DTYPES[d]);
        free(src);
        tex_ctx_free(ctx);
    }
}

/* The AVX-512 form, whatever the host: the f32, f64 and i32 elementwise
 * kernels over 29 elements under 64-byte vectors (16 or 8 lanes, a rest of
 * 13 or 5) call helpers whose AVX-512 branch compiles, with -mavx512f, to
 * k-masked moves (compiled and disassembled, not run). */
static void test_avx512_form(void)
{
    char log[128], version[] = "objdump --version";
    snprintf(log, sizeof log, "%s/objdump512.log", tmpdir);
    if (run_line(version, log) != 0)
        TT_SKIP("objdump (binutils) is not installed");
    for (int d = 0; d < 3; d++) {
        tex_ctx *ctx = tex_ctx_new();
        ops_wl w;
        ops_init(&w, ctx, "elemwise");
        TT_CHECK(elemwise(&w, DTYPES[d], 29, false) != NULL);
        char why[2048];
        tex_schedule *s = schedule(&w, false, false);
        tex_func *f = s ? ops_lower(&w, s, why, sizeof why) : NULL, tail = f ? *f : (tex_func){0};
        texi_lower lw = {ctx, NULL, f, false};
        const texi_simd_rules avx512 = {64, false, true, true};
        TT_CHECK(f && texi_simd_rewrite(&lw, &avx512, f->body, &tail.body) == 0);
        char *src = f ? texi_cpu_emit(&tail, 0, false) : NULL;
        TT_CHECK(src && strstr(src, "__builtin_ia32_load") && strstr(src, "512_mask((const") &&
                 strstr(src, "__builtin_ia32_store"));
        if (src)
            check_both_compilers(src, "-mavx512f", "avx512", DTYPES[d]);
        free(src);
        tex_ctx_free(ctx);
    }
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tex_masked_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    TT_RUN(test_vector_ir);
    TT_RUN(test_private_buffers);
    TT_RUN(test_disassembly);
    TT_RUN(test_avx512_form);
    TT_RUN(test_unoptimized);
    TT_RUN(test_elemwise);
    TT_RUN(test_row_sum);
    tt_remove_tree(tmpdir);
    return tt_finish();
}
