/*
 * The C emitter (src/backend_cpu/codegen_c.c over src/codegen_c): functions
 * lowered through the public API are emitted, compiled by the system C
 * compiler with -std=c99 -O3 -march=native -fopenmp -fPIC -Wall -Wextra
 * -Werror, loaded with dlopen and run on the same inputs as
 * tex_eval_reference (matmul with a tutorial schedule, f16 elementwise, u64
 * and i64 floor division, an i8 max reduction, symbolic sizes, a heap
 * temporary); the prototype and header text; the OpenMP pragmas (one
 * parallel region, never nested); packed FMA instructions in the
 * disassembly of a vectorized GEMM; a barrier reaching the emitter is TEX_EINTERNAL.
 * Tests that need the compiler skip when `cc` is missing.
 */
#include "tt.h"

#include "backend_cpu/cpu.h"
#include "util/half.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[64];

/* Runs argv with stdout/stderr to `log`; the exit status, or -1. */
static int run_argv(const char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        char *args[32];
        int n = 0;
        for (; argv[n] && n < 31; n++)
            args[n] = strdup(argv[n]); /* execvp's argv is not const; the child execs or exits */
        args[n] = NULL;
        execvp(args[0], args);
        _exit(127);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void print_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[512];
    int n = 0;
    while (f && fgets(line, sizeof line, f) && n++ < 60)
        printf("    | %s", line);
    if (f)
        fclose(f);
}

/* Whether compiler cc ("cc", "clang") runs. */
static bool have_compiler(const char *cc, int *have)
{
    if (*have < 0) {
        char log[128];
        snprintf(log, sizeof log, "%s/%s_version.log", tmpdir, cc);
        *have = run_argv((const char *const[]){cc, "--version", NULL}, log) == 0;
    }
    return *have;
}

static bool have_cc(void)
{
    static int have = -1;
    return have_compiler("cc", &have);
}

static bool have_clang(void)
{
    static int have = -1;
    return have_compiler("clang", &have);
}

/* Writes src to TMP/name.c and compiles it to TMP/name.so (shared, with
 * -std=c99) or TMP/name.o (object, the JIT's flags: GNU C, where the compiler
 * may contract a * b + c into an FMA, which ISO mode forbids); out receives
 * the output's path. Where Clang is installed the source must compile
 * warning-free with it too (to TMP/name.clang.o). 0 when it compiled. */
static int compile(const char *src, const char *name, bool shared, char *out, size_t out_size)
{
    char cpath[256], log[256];
    snprintf(cpath, sizeof cpath, "%s/%s.c", tmpdir, name);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, name);
    snprintf(out, out_size, "%s/%s.%s", tmpdir, name, shared ? "so" : "o");
    FILE *f = fopen(cpath, "w");
    if (!f)
        return -1;
    fputs(src, f);
    fclose(f);
    /* valgrind cannot run AVX-512 code: kernels run under it are built without */
    const char *preload = getenv("LD_PRELOAD");
    bool valgrind = preload && strstr(preload, "vgpreload");
    const char *argv[] = {"cc",
                          shared ? "-std=c99" : "-std=gnu99",
                          "-O3",
                          "-march=native",
                          "-fopenmp",
                          "-fPIC",
                          shared ? "-shared" : "-c",
                          "-Wall",
                          "-Wextra",
                          "-Werror",
                          cpath,
                          "-o",
                          out,
                          valgrind ? "-mno-avx512f" : NULL,
                          NULL};
    int rc = run_argv(argv, log);
    if (rc == 0 && have_clang()) {
        char clang_out[300];
        snprintf(clang_out, sizeof clang_out, "%s/%s.clang.o", tmpdir, name);
        const char *clang_argv[] = {
            "clang", argv[1],   "-O1",     "-march=native", "-fopenmp", "-fPIC",   "-c",
            "-Wall", "-Wextra", "-Werror", cpath,           "-o",       clang_out, NULL};
        rc = run_argv(clang_argv, log);
    }
    if (rc != 0) {
        printf("  compiling %s failed (%d):\n", cpath, rc);
        print_file(log);
    }
    return rc;
}

/* dlopen + dlsym; the entry point as a generic function pointer, or NULL.
 * RTLD_NODELETE: unloading an object that brought libgomp in while OpenMP's
 * worker threads still wait inside it would crash the process. */
typedef void (*any_fn)(void);
static any_fn load(const char *so, const char *sym, void **handle)
{
    *handle = dlopen(so, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!*handle) {
        printf("  dlopen: %s\n", dlerror());
        return NULL;
    }
    void *p = dlsym(*handle, sym);
    any_fn fn = NULL;
    if (p)
        memcpy(&fn, &p, sizeof fn); /* object pointer -> function pointer, ISO-clean */
    return fn;
}

/* Emits f, checks that it compiles warning-free as a shared object, loads it. */
static any_fn build(tex_func *f, int threads, const char *name, void **handle, char **src)
{
    *handle = NULL;
    *src = texi_cpu_emit(f, threads, false);
    TT_CHECK(*src != NULL);
    if (!*src) {
        printf("  emit: %s\n", tex_errmsg(f->ctx));
        return NULL;
    }
    char so[256];
    if (compile(*src, name, true, so, sizeof so) != 0) {
        TT_FAILF("generated code of %s does not compile", name);
        return NULL;
    }
    any_fn fn = load(so, f->name, handle);
    TT_CHECK(fn != NULL);
    return fn;
}

static DLTensor *array(int ndim, const int64_t *shape, tex_dtype t)
{
    return tex_array_new(ndim, shape, t, (DLDevice){kDLCPU, 0});
}

static int64_t numel(const DLTensor *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        n *= a->shape[i];
    return n;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Byte-exact comparison of got against want (n bytes); prints the first mismatch. */
static void expect_same_bytes(const DLTensor *got, const DLTensor *want, const char *what)
{
    size_t bytes = (size_t)numel(got) * (size_t)(got->dtype.bits / 8);
    if (memcmp(got->data, want->data, bytes) != 0) {
        const unsigned char *g = got->data, *w = want->data;
        size_t k = 0;
        while (k < bytes && g[k] == w[k])
            k++;
        TT_FAILF("%s differs from the reference at byte %zu", what, k);
    }
}

/* ---------------------------------------------------------------- matmul */

typedef struct {
    tex_ctx *ctx;
    tex_tensor *A, *B, *C;
    tex_schedule *s;
    tex_stage *st;
} mm;

static void mm_new(mm *m, int64_t M, int64_t N, int64_t K)
{
    tex_ctx *c = m->ctx = tex_ctx_new();
    m->A = tex_placeholder(c, "A", TEX_F32, 2, (tex_expr *[]){tex_int(c, M), tex_int(c, K)});
    m->B = tex_placeholder(c, "B", TEX_F32, 2, (tex_expr *[]){tex_int(c, K), tex_int(c, N)});
    tex_iter *i = tex_axis(c, "i", tex_int(c, M)), *j = tex_axis(c, "j", tex_int(c, N));
    tex_iter *k = tex_reduce_axis(c, "k", tex_int(c, K));
    tex_expr *prod =
        tex_mul(TEX_AT(m->A, tex_iv(i), tex_iv(k)), TEX_AT(m->B, tex_iv(k), tex_iv(j)));
    m->C = tex_compute(c, "C", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, &k));
    m->s = tex_schedule_new(c, 1, &m->C);
    m->st = tex_stage_of(m->s, m->C);
}

/* split j by 16 (ji vectorized, innermost), i by 8 (io parallel, ii unrolled):
 * io, jo, k, ii, ji. */
static void mm_tutorial(mm *m, bool parallel, bool unroll)
{
    tex_ctx *c = m->ctx;
    tex_iter *io, *ii, *jo, *ji;
    TT_EQ_INT(tex_split(m->st, tex_op_axis(m->st, 0), tex_int(c, 8), &io, &ii), 0);
    TT_EQ_INT(tex_split(m->st, tex_op_axis(m->st, 1), tex_int(c, 16), &jo, &ji), 0);
    TT_EQ_INT(tex_reorder(m->st, 5, (tex_iter *[]){io, jo, tex_op_reduce_axis(m->st, 0), ii, ji}),
              0);
    TT_EQ_INT(tex_vectorize(m->st, ji), 0);
    if (parallel)
        TT_EQ_INT(tex_parallel(m->st, io), 0);
    if (unroll)
        TT_EQ_INT(tex_unroll(m->st, ii), 0);
}

static void test_prototype_and_header(void)
{
    mm m;
    mm_new(&m, 4, 5, 6);
    tex_func *f = tex_lower_tensors(m.s, "mm", 3, (tex_tensor *[]){m.A, m.B, m.C});
    TT_CHECK(f != NULL);
    char *src = f ? texi_cpu_emit(f, 0, false) : NULL;
    char *hdr = f ? texi_cpu_emit_header(f) : NULL;
    const char *proto =
        "int mm(const float *restrict A, const float *restrict B, float *restrict C)";
    TT_CHECK(src && strstr(src, proto));
    TT_CHECK(hdr && strstr(hdr, proto));
    TT_CHECK(hdr && count(hdr, "int mm(") == 1 && strstr(hdr, ");\n"));
    TT_CHECK(hdr && strstr(hdr, "#ifndef TEX_KERNEL_mm_H") && strstr(hdr, "#include <stdint.h>"));
    TT_CHECK(hdr && strstr(hdr, "C: tensor f32 [4, 5], written"));
    TT_CHECK(src && !strstr(src, "#pragma omp"));
    TT_CHECK(src && !strstr(src, "static inline")); /* no helper needed */
    free(src);
    free(hdr);
    tex_ctx_free(m.ctx);
}

/* Symbolic sizes: n (i64) and m (i32) become trailing int64_t arguments; names
 * that are not C identifiers are sanitized. */
static void test_symbolic_prototype(void)
{
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_var(c, "n", TEX_I64), *m = tex_var(c, "m", TEX_I32);
    tex_tensor *A = tex_placeholder(c, "in.data", TEX_F32, 2, (tex_expr *[]){n, m});
    tex_iter *i = tex_axis(c, "i", n), *j = tex_axis(c, "j", m);
    tex_tensor *B = tex_compute(c, "int", 2, (tex_iter *[]){i, j},
                                tex_add(TEX_AT(A, tex_iv(i), tex_iv(j)), tex_const(c, TEX_F32, 1)));
    tex_schedule *s = tex_schedule_new(c, 1, &B);
    tex_func *f = tex_lower_tensors(s, "sym", 2, (tex_tensor *[]){A, B});
    TT_CHECK(f != NULL);
    char *src = f ? texi_cpu_emit(f, 0, false) : NULL;
    char *hdr = f ? texi_cpu_emit_header(f) : NULL;
    TT_CHECK(src && strstr(src, "int sym(const float *restrict in_data, float *restrict int_, "
                                "int64_t n, int64_t m_arg)"));
    TT_CHECK(src && strstr(src, "const int32_t m = (int32_t)m_arg;"));
    TT_CHECK(hdr && strstr(hdr, "in.data: tensor f32 [n, m]"));
    char so[256];
    TT_CHECK(!src || !have_cc() || compile(src, "sym", true, so, sizeof so) == 0);
    free(src);
    free(hdr);
    tex_ctx_free(c);
}

static void run_matmul(bool parallel, bool unroll, int threads, const char *name)
{
    if (!have_cc())
        TT_SKIP("no C compiler");
    enum { M = 64, N = 48, K = 40 };
    mm m;
    mm_new(&m, M, N, K);
    mm_tutorial(&m, parallel, unroll);
    tex_func *f = tex_lower_tensors(m.s, name, 3, (tex_tensor *[]){m.A, m.B, m.C});
    TT_CHECK(f != NULL);
    void *h;
    char *src = NULL;
    any_fn fn = f ? build(f, threads, name, &h, &src) : NULL;
    TT_CHECK(src && strstr(src, "#pragma omp simd"));
    TT_EQ_INT(src ? count(src, "#pragma omp parallel for") : -1, parallel ? 1 : 0);
    if (threads > 0 && parallel)
        TT_CHECK(src && strstr(src, "num_threads(2)"));
    if (fn) {
        DLTensor *A = array(2, (int64_t[]){M, K}, TEX_F32),
                 *B = array(2, (int64_t[]){K, N}, TEX_F32);
        DLTensor *C = array(2, (int64_t[]){M, N}, TEX_F32),
                 *R = array(2, (int64_t[]){M, N}, TEX_F32);
        uint64_t rng = 7;
        for (int64_t q = 0; q < M * K; q++)
            ((float *)A->data)[q] = (float)(rng_next(&rng) % 200) / 50.0f - 2.0f;
        for (int64_t q = 0; q < K * N; q++)
            ((float *)B->data)[q] = (float)(rng_next(&rng) % 200) / 50.0f - 2.0f;
        int (*entry)(const float *, const float *, float *) = NULL;
        memcpy(&entry, &fn, sizeof entry);
        TT_EQ_INT(entry(A->data, B->data, C->data), 0);
        TT_EQ_INT(
            tex_eval_reference(m.ctx, 3, (tex_tensor *[]){m.A, m.B, m.C}, (DLTensor *[]){A, B, R}),
            0);
        for (int64_t q = 0; q < M * N; q++)
            TT_NEAR(((float *)C->data)[q], ((float *)R->data)[q], 1e-5);
        tex_array_free(A);
        tex_array_free(B);
        tex_array_free(C);
        tex_array_free(R);
    }
    if (h)
        dlclose(h);
    free(src);
    tex_ctx_free(m.ctx);
}

static void test_matmul_tutorial(void)
{
    run_matmul(true, true, 2, "mm_tutorial");
}

static void test_matmul_serial(void)
{
    run_matmul(false, false, 0, "mm_serial");
}

/* An inner parallel loop inside a parallel one runs serially: one pragma. */
static void test_no_nested_parallel(void)
{
    mm m;
    mm_new(&m, 16, 16, 8);
    TT_EQ_INT(tex_parallel(m.st, tex_op_axis(m.st, 0)), 0);
    TT_EQ_INT(tex_parallel(m.st, tex_op_axis(m.st, 1)), 0);
    tex_func *f = tex_lower_tensors(m.s, "mm_nested", 3, (tex_tensor *[]){m.A, m.B, m.C});
    char *src = f ? texi_cpu_emit(f, 0, false) : NULL;
    TT_CHECK(src != NULL);
    TT_EQ_INT(src ? count(src, "#pragma omp parallel") : -1, 1);
    TT_CHECK(src && strstr(src, "parallel loop inside a parallel region: serial"));
    char so[256];
    TT_CHECK(!src || !have_cc() || compile(src, "mm_nested", true, so, sizeof so) == 0);
    free(src);
    tex_ctx_free(m.ctx);
}

/* ----------------------------------------------------------- f16, u64, i8 */

/* C = A * B + A in f16 (rounded after each operation), vectorized. */
static void test_f16_elementwise(void)
{
    if (!have_cc())
        TT_SKIP("no C compiler");
    enum { N = 100 };
    tex_ctx *c = tex_ctx_new();
    tex_tensor *A = tex_placeholder(c, "A", TEX_F16, 1, (tex_expr *[]){tex_int(c, N)});
    tex_tensor *B = tex_placeholder(c, "B", TEX_F16, 1, (tex_expr *[]){tex_int(c, N)});
    tex_iter *i = tex_axis(c, "i", tex_int(c, N));
    tex_expr *a = TEX_AT(A, tex_iv(i)), *b = TEX_AT(B, tex_iv(i));
    tex_tensor *C = tex_compute(c, "C", 1, &i, tex_add(tex_mul(a, b), tex_div(a, tex_add(b, b))));
    tex_schedule *s = tex_schedule_new(c, 1, &C);
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *io, *ii;
    TT_EQ_INT(tex_split(st, tex_op_axis(st, 0), tex_int(c, 8), &io, &ii), 0);
    TT_EQ_INT(tex_vectorize(st, ii), 0);
    tex_func *f = tex_lower_tensors(s, "f16_ew", 3, (tex_tensor *[]){A, B, C});
    void *h = NULL;
    char *src = NULL;
    any_fn fn = f ? build(f, 0, "f16_ew", &h, &src) : NULL;
    TT_CHECK(src && strstr(src, "tex_round_f16(") && strstr(src, "uint16_t *restrict C"));
    TT_CHECK(src && !strstr(src, "tex_bf16")); /* unused helpers are not emitted */
    if (fn) {
        DLTensor *a1 = array(1, (int64_t[]){N}, TEX_F16), *b1 = array(1, (int64_t[]){N}, TEX_F16);
        DLTensor *c1 = array(1, (int64_t[]){N}, TEX_F16), *r1 = array(1, (int64_t[]){N}, TEX_F16);
        uint64_t rng = 99;
        for (int q = 0; q < N; q++) {
            ((uint16_t *)a1->data)[q] =
                texi_f16_from_f32((float)(rng_next(&rng) % 4000) / 97.0f - 20);
            ((uint16_t *)b1->data)[q] =
                texi_f16_from_f32((float)(rng_next(&rng) % 4000) / 89.0f + 0.5f);
        }
        int (*entry)(const uint16_t *, const uint16_t *, uint16_t *) = NULL;
        memcpy(&entry, &fn, sizeof entry);
        TT_EQ_INT(entry(a1->data, b1->data, c1->data), 0);
        TT_EQ_INT(tex_eval_reference(c, 3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){a1, b1, r1}),
                  0);
        expect_same_bytes(c1, r1, "f16 result");
        tex_array_free(a1);
        tex_array_free(b1);
        tex_array_free(c1);
        tex_array_free(r1);
    }
    if (h)
        dlclose(h);
    free(src);
    tex_ctx_free(c);
}

/* u64 floordiv/floormod on values above 2^63 (unsigned), and i64 floordiv /
 * floormod of negative values (the floor helpers). */
static void test_u64_and_signed_floor(void)
{
    if (!have_cc())
        TT_SKIP("no C compiler");
    enum { N = 64 };
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_int(c, N);
    tex_tensor *U = tex_placeholder(c, "U", TEX_U64, 1, &n),
               *V = tex_placeholder(c, "V", TEX_U64, 1, &n);
    tex_tensor *X = tex_placeholder(c, "X", TEX_I64, 1, &n);
    tex_iter *i = tex_axis(c, "i", n), *j = tex_axis(c, "j", n);
    tex_expr *u = TEX_AT(U, tex_iv(i)), *v = TEX_AT(V, tex_iv(i));
    tex_tensor *Q =
        tex_compute(c, "Q", 1, &i, tex_add(tex_floordiv(u, v), tex_mul(tex_floormod(u, v), v)));
    tex_expr *x = TEX_AT(X, tex_iv(j));
    tex_tensor *S = tex_compute(c, "S", 1, &j,
                                tex_add(tex_mul(tex_floordiv(x, tex_int(c, 7)), tex_int(c, 1000)),
                                        tex_floormod(x, tex_int(c, -5))));
    tex_schedule *s = tex_schedule_new(c, 2, (tex_tensor *[]){Q, S});
    tex_func *f = tex_lower_tensors(s, "floors", 5, (tex_tensor *[]){U, V, X, Q, S});
    void *h = NULL;
    char *src = NULL;
    any_fn fn = f ? build(f, 0, "floors", &h, &src) : NULL;
    TT_CHECK(src && strstr(src, "tex_floordiv_i64(") && strstr(src, "tex_floormod_i64("));
    TT_CHECK(src && !strstr(src, "tex_floordiv_i32"));
    if (fn) {
        DLTensor *a[5], *r[2];
        tex_dtype ts[5] = {TEX_U64, TEX_U64, TEX_I64, TEX_U64, TEX_I64};
        for (int k = 0; k < 5; k++)
            a[k] = array(1, (int64_t[]){N}, ts[k]);
        r[0] = array(1, (int64_t[]){N}, TEX_U64);
        r[1] = array(1, (int64_t[]){N}, TEX_I64);
        uint64_t rng = 3;
        for (int q = 0; q < N; q++) {
            ((uint64_t *)a[0]->data)[q] = rng_next(&rng) | (q % 2 ? 1ull << 63 : 0);
            ((uint64_t *)a[1]->data)[q] = q % 3 ? rng_next(&rng) % 1000 + 1 : rng_next(&rng) | 1;
            ((int64_t *)a[2]->data)[q] = (int64_t)(rng_next(&rng) % 2001) - 1000;
        }
        int (*entry)(const uint64_t *, const uint64_t *, const int64_t *, uint64_t *, int64_t *) =
            NULL;
        memcpy(&entry, &fn, sizeof entry);
        TT_EQ_INT(entry(a[0]->data, a[1]->data, a[2]->data, a[3]->data, a[4]->data), 0);
        TT_EQ_INT(tex_eval_reference(c, 5, (tex_tensor *[]){U, V, X, Q, S},
                                     (DLTensor *[]){a[0], a[1], a[2], r[0], r[1]}),
                  0);
        expect_same_bytes(a[3], r[0], "u64 result");
        expect_same_bytes(a[4], r[1], "i64 result");
        for (int k = 0; k < 5; k++)
            tex_array_free(a[k]);
        tex_array_free(r[0]);
        tex_array_free(r[1]);
    }
    if (h)
        dlclose(h);
    free(src);
    tex_ctx_free(c);
}

/* R[i] = max over k of X[i, k] (i8): i split by 16, k between io and ii,
 * ii vectorized (its stores and loads of R use one linear index: simd). */
static void test_reduce_max_i8(void)
{
    if (!have_cc())
        TT_SKIP("no C compiler");
    enum { M = 32, K = 30 };
    tex_ctx *c = tex_ctx_new();
    tex_tensor *X =
        tex_placeholder(c, "X", TEX_I8, 2, (tex_expr *[]){tex_int(c, M), tex_int(c, K)});
    tex_iter *i = tex_axis(c, "i", tex_int(c, M)), *k = tex_reduce_axis(c, "k", tex_int(c, K));
    tex_tensor *R =
        tex_compute(c, "R", 1, &i, tex_reduce_max(TEX_AT(X, tex_iv(i), tex_iv(k)), 1, &k));
    tex_schedule *s = tex_schedule_new(c, 1, &R);
    tex_stage *st = tex_stage_of(s, R);
    tex_iter *io, *ii;
    TT_EQ_INT(tex_split(st, tex_op_axis(st, 0), tex_int(c, 16), &io, &ii), 0);
    TT_EQ_INT(tex_reorder(st, 3, (tex_iter *[]){io, tex_op_reduce_axis(st, 0), ii}), 0);
    TT_EQ_INT(tex_vectorize(st, ii), 0);
    tex_func *f = tex_lower_tensors(s, "rmax", 2, (tex_tensor *[]){X, R});
    void *h = NULL;
    char *src = NULL;
    any_fn fn = f ? build(f, 0, "rmax", &h, &src) : NULL;
    TT_CHECK(src && strstr(src, "tex_max_i32("));
    TT_CHECK(src && strstr(src, "#pragma omp simd"));
    if (fn) {
        DLTensor *x = array(2, (int64_t[]){M, K}, TEX_I8), *r = array(1, (int64_t[]){M}, TEX_I8);
        DLTensor *w = array(1, (int64_t[]){M}, TEX_I8);
        uint64_t rng = 5;
        for (int q = 0; q < M * K; q++)
            ((int8_t *)x->data)[q] = (int8_t)(rng_next(&rng) & 0xff);
        int (*entry)(const int8_t *, int8_t *) = NULL;
        memcpy(&entry, &fn, sizeof entry);
        TT_EQ_INT(entry(x->data, r->data), 0);
        TT_EQ_INT(tex_eval_reference(c, 2, (tex_tensor *[]){X, R}, (DLTensor *[]){x, w}), 0);
        expect_same_bytes(r, w, "i8 max");
        tex_array_free(x);
        tex_array_free(r);
        tex_array_free(w);
    }
    if (h)
        dlclose(h);
    free(src);
    tex_ctx_free(c);
}

/* Symbolic n: B = A * 2 is an intermediate of n elements (a heap temporary),
 * C = B + A, split by 8 (a guarded tail), outer loop parallel. */
static void test_symbolic_heap(void)
{
    if (!have_cc())
        TT_SKIP("no C compiler");
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_var(c, "n", TEX_I64);
    tex_tensor *A = tex_placeholder(c, "A", TEX_F32, 1, &n);
    tex_iter *i = tex_axis(c, "i", n), *j = tex_axis(c, "j", n);
    tex_tensor *B =
        tex_compute(c, "B", 1, &i, tex_mul(TEX_AT(A, tex_iv(i)), tex_const(c, TEX_F32, 2)));
    tex_tensor *C = tex_compute(
        c, "C", 1, &j,
        tex_add(TEX_AT(B, tex_iv(j)), tex_max(TEX_AT(A, tex_iv(j)), tex_const(c, TEX_F32, 0))));
    tex_schedule *s = tex_schedule_new(c, 1, &C);
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *jo, *ji;
    TT_EQ_INT(tex_split(st, tex_op_axis(st, 0), tex_int(c, 8), &jo, &ji), 0);
    TT_EQ_INT(tex_parallel(st, jo), 0);
    tex_func *f = tex_lower_tensors(s, "symheap", 2, (tex_tensor *[]){A, C});
    void *h = NULL;
    char *src = NULL;
    any_fn fn = f ? build(f, 2, "symheap", &h, &src) : NULL;
    TT_CHECK(src && strstr(src, "tex_alloc(") && strstr(src, "free(B);"));
    TT_CHECK(src &&
             strstr(src, "int symheap(const float *restrict A, float *restrict C, int64_t n)"));
    /* The heap scope ends the body: no check of tex_rc right before its return. */
    TT_CHECK(src && strstr(src, "return tex_rc;\n}") &&
             !strstr(src, "return tex_rc;\n    return tex_rc;"));
    if (fn) {
        int64_t len = 5003;
        DLTensor *a = array(1, &len, TEX_F32), *o = array(1, &len, TEX_F32),
                 *r = array(1, &len, TEX_F32);
        for (int64_t q = 0; q < len; q++)
            ((float *)a->data)[q] = (float)(q % 17) - 8.5f;
        int (*entry)(const float *, float *, int64_t) = NULL;
        memcpy(&entry, &fn, sizeof entry);
        TT_EQ_INT(entry(a->data, o->data, len), 0);
        TT_EQ_INT(tex_eval_reference(c, 2, (tex_tensor *[]){A, C}, (DLTensor *[]){a, r}), 0);
        expect_same_bytes(o, r, "symbolic result");
        TT_EQ_INT(entry(a->data, o->data, 0), 0); /* empty: still a valid allocation */
        tex_array_free(a);
        tex_array_free(o);
        tex_array_free(r);
    }
    if (h)
        dlclose(h);
    free(src);
    tex_ctx_free(c);
}

/* Base pointers (src/codegen_c/cbases.c): S[i] = A[i] + 2 A[i + 1] + 3 A[i + 2]
 * reads A three times from one base (one pointer, offsets 0..2); T[i]
 * reads A only in select arms (no pointer: they are not unconditional);
 * G[i] = A[idx[i]] + A[idx[i] + 1] indexes A by a load (no pointer for A,
 * one for idx). Each output against the oracle. */
static void test_base_pointers(void)
{
    if (!have_cc())
        TT_SKIP("no C compiler");
    enum { N = 1001 };
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_int(c, N), *n2 = tex_int(c, N - 2);
    tex_tensor *A = tex_placeholder(c, "A", TEX_F32, 1, &n);
    tex_tensor *X = tex_placeholder(c, "idx", TEX_I32, 1, &n);
    tex_iter *i = tex_axis(c, "i", n2), *j = tex_axis(c, "j", n), *k = tex_axis(c, "k", n2);
    tex_expr *iv = tex_iv(i), *jv = tex_iv(j);
    tex_expr *three =
        tex_add(tex_add(TEX_AT(A, iv),
                        tex_mul(TEX_AT(A, tex_add(iv, tex_int(c, 1))), tex_const(c, TEX_F32, 2))),
                tex_mul(TEX_AT(A, tex_add(iv, tex_int(c, 2))), tex_const(c, TEX_F32, 3)));
    tex_tensor *S = tex_compute(c, "S", 1, &i, three);
    tex_expr *odd = tex_eq(tex_floormod(jv, tex_int(c, 2)), tex_int(c, 1));
    tex_tensor *T = tex_compute(
        c, "T", 1, &j, tex_select(odd, TEX_AT(A, tex_sub(jv, tex_int(c, 1))), TEX_AT(A, jv)));
    tex_expr *at = TEX_AT(X, tex_iv(k));
    tex_tensor *G =
        tex_compute(c, "G", 1, &k, tex_add(TEX_AT(A, at), TEX_AT(A, tex_add(at, tex_int(c, 1)))));
    tex_schedule *s = tex_schedule_new(c, 3, (tex_tensor *[]){S, T, G});
    tex_tensor *args[5] = {A, X, S, T, G};
    tex_func *f = s ? tex_lower_tensors(s, "bases", 5, args) : NULL;
    void *h = NULL;
    char *src = NULL;
    any_fn fn = f ? build(f, 0, "bases", &h, &src) : NULL;
    TT_EQ_INT(src ? count(src, "const float *A_at") : -1, 1);
    TT_CHECK(src && strstr(src, "const float *A_at = &A[i];") && strstr(src, "A_at[2]") &&
             strstr(src, "const int32_t *idx_at = &idx[k];"));
    if (fn) {
        DLTensor *a[5], *r[3];
        tex_dtype ts[5] = {TEX_F32, TEX_I32, TEX_F32, TEX_F32, TEX_F32};
        int64_t len[5] = {N, N, N - 2, N, N - 2};
        for (int q = 0; q < 5; q++)
            a[q] = array(1, &len[q], ts[q]);
        for (int q = 0; q < 3; q++)
            r[q] = array(1, &len[q + 2], TEX_F32);
        for (int q = 0; q < N; q++) {
            ((float *)a[0]->data)[q] = (float)(q % 23) - 11.5f;
            ((int32_t *)a[1]->data)[q] = (q * 37) % (N - 2);
        }
        for (int q = 2; q < 5; q++)
            memset(a[q]->data, 0xff, (size_t)len[q] * sizeof(float));
        int (*entry)(const float *, const int32_t *, float *, float *, float *) = NULL;
        memcpy(&entry, &fn, sizeof entry);
        TT_EQ_INT(entry(a[0]->data, a[1]->data, a[2]->data, a[3]->data, a[4]->data), 0);
        TT_EQ_INT(tex_eval_reference(c, 5, args, (DLTensor *[]){a[0], a[1], r[0], r[1], r[2]}), 0);
        expect_same_bytes(a[2], r[0], "stencil through a base pointer");
        expect_same_bytes(a[3], r[1], "loads in select arms");
        expect_same_bytes(a[4], r[2], "gather");
        for (int q = 0; q < 5; q++)
            tex_array_free(a[q]);
        for (int q = 0; q < 3; q++)
            tex_array_free(r[q]);
    }
    if (h)
        dlclose(h);
    free(src);
    tex_ctx_free(c);
}

/* ------------------------------------------------------- every dtype */

enum { DT_N = 64, DT_MAX_OUT = 24 };

/* Fills a with values of dtype t: edge values first (type minimum, -1, 0,
 * maximum), then random bits (integers) or moderate values (floats). */
static void fill_dtype(DLTensor *a, tex_dtype t, uint64_t *rng, bool divisor)
{
    for (int64_t q = 0; q < numel(a); q++) {
        uint64_t r = rng_next(rng);
        double f = (double)(int64_t)(r % 20001 - 10000) / 64.0;
        if (divisor && f == 0)
            f = 0.5;
        switch (t) {
        case TEX_BOOL:
            ((uint8_t *)a->data)[q] = r & 1;
            break;
        case TEX_I8:
            ((int8_t *)a->data)[q] = (int8_t)(q == 0              ? INT8_MIN
                                              : divisor && q == 1 ? -1
                                                                  : (int8_t)r);
            break;
        case TEX_I16:
            ((int16_t *)a->data)[q] = (int16_t)(q == 0              ? INT16_MIN
                                                : divisor && q == 1 ? -1
                                                                    : (int16_t)r);
            break;
        case TEX_I32:
            ((int32_t *)a->data)[q] = q == 0 ? INT32_MIN : divisor && q == 1 ? -1 : (int32_t)r;
            break;
        case TEX_I64:
            ((int64_t *)a->data)[q] = q == 0 ? INT64_MIN : divisor && q == 1 ? -1 : (int64_t)r;
            break;
        case TEX_U8:
            ((uint8_t *)a->data)[q] = (uint8_t)r;
            break;
        case TEX_U16:
            ((uint16_t *)a->data)[q] = (uint16_t)r;
            break;
        case TEX_U32:
            ((uint32_t *)a->data)[q] = (uint32_t)r;
            break;
        case TEX_U64:
            ((uint64_t *)a->data)[q] = r;
            break;
        case TEX_F16:
            ((uint16_t *)a->data)[q] = texi_f16_from_f32((float)f);
            break;
        case TEX_BF16:
            ((uint16_t *)a->data)[q] = texi_bf16_from_f32((float)f);
            break;
        case TEX_F32:
            ((float *)a->data)[q] = (float)f;
            break;
        case TEX_F64:
            ((double *)a->data)[q] = f;
            break;
        }
        if (divisor && t != TEX_BOOL && !texi_dtype_is_float(t) && q > 1) {
            /* no zero divisor: set the lowest bit */
            ((uint8_t *)a->data)[q * (a->dtype.bits / 8)] |= 1;
        }
    }
}

/* Arithmetic, comparisons, select, min/max, floor division and a cast to
 * every other dtype, all on operands of dtype t, compared bit for bit with
 * the oracle (math functions: test_math). */
static void check_dtype(tex_dtype t)
{
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_int(c, DT_N);
    tex_tensor *A = tex_placeholder(c, "a", t, 1, &n), *B = tex_placeholder(c, "b", t, 1, &n);
    tex_tensor *outs[DT_MAX_OUT];
    int n_out = 0;
    tex_iter *ax[DT_MAX_OUT];
    char name[32];
#define DT_OUT(expr)                                                                               \
    do {                                                                                           \
        snprintf(name, sizeof name, "o%d", n_out);                                                 \
        ax[n_out] = tex_axis(c, "i", n);                                                           \
        tex_expr *a_ = TEX_AT(A, tex_iv(ax[n_out])), *b_ = TEX_AT(B, tex_iv(ax[n_out]));           \
        (void)a_;                                                                                  \
        (void)b_;                                                                                  \
        outs[n_out] = tex_compute(c, name, 1, &ax[n_out], (expr));                                 \
        n_out++;                                                                                   \
    } while (0)
    if (t != TEX_BOOL) {
        DT_OUT(tex_add(a_, b_));
        DT_OUT(tex_sub(a_, b_));
        DT_OUT(tex_mul(a_, b_));
        DT_OUT(tex_min(a_, b_));
        DT_OUT(tex_max(a_, b_));
        if (!texi_dtype_is_float(t)) { /* the lowering verifier refuses float floordiv */
            DT_OUT(tex_floordiv(a_, b_));
            DT_OUT(tex_floormod(a_, b_));
        }
        DT_OUT(tex_select(tex_lt(a_, b_), tex_sub(b_, a_), a_));
        if (texi_dtype_is_float(t))
            DT_OUT(tex_div(a_, b_));
    }
    DT_OUT(tex_and(tex_ne(a_, b_), tex_not(tex_ge(a_, b_))));
    for (int to = 0; to <= (int)TEX_F64; to++)
        if (to != (int)t)
            DT_OUT(tex_cast((tex_dtype)to, a_));
#undef DT_OUT
    tex_tensor *params[2 + DT_MAX_OUT] = {A, B};
    memcpy(params + 2, outs, sizeof outs[0] * (size_t)n_out);
    tex_schedule *s = tex_schedule_new(c, n_out, outs);
    snprintf(name, sizeof name, "dt_%s", tex_dtype_name(t));
    tex_func *f = tex_lower_tensors(s, name, 2 + n_out, params);
    if (!f)
        TT_FAILF("%s: %s", name, tex_errmsg(c));
    void *h = NULL;
    char *src = NULL;
    any_fn fn = f ? build(f, 0, name, &h, &src) : NULL;
    if (fn) {
        DLTensor *got[2 + DT_MAX_OUT], *want[2 + DT_MAX_OUT];
        uint64_t rng = 11 + (uint64_t)t;
        for (int k = 0; k < 2 + n_out; k++) {
            got[k] = array(1, (int64_t[]){DT_N}, params[k]->dtype);
            want[k] = k < 2 ? got[k] : array(1, (int64_t[]){DT_N}, params[k]->dtype);
        }
        fill_dtype(got[0], t, &rng, false);
        fill_dtype(got[1], t, &rng, true);
        void *p[2 + DT_MAX_OUT] = {0};
        for (int k = 0; k < 2 + n_out; k++)
            p[k] = got[k]->data;
        typedef int (*entry_t)(void *, void *, void *, void *, void *, void *, void *, void *,
                               void *, void *, void *, void *, void *, void *, void *, void *,
                               void *, void *, void *, void *, void *, void *, void *, void *,
                               void *, void *);
        entry_t entry = NULL; /* every argument is a pointer: one signature fits all */
        memcpy(&entry, &fn, sizeof entry);
        TT_EQ_INT(entry(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11],
                        p[12], p[13], p[14], p[15], p[16], p[17], p[18], p[19], p[20], p[21], p[22],
                        p[23], p[24], p[25]),
                  0);
        TT_EQ_INT(tex_eval_reference(c, 2 + n_out, params, want), 0);
        for (int k = 2; k < 2 + n_out; k++) {
            char what[96];
            snprintf(what, sizeof what, "%s: output %s (%s)", name, params[k]->name,
                     tex_dtype_name(params[k]->dtype));
            expect_same_bytes(got[k], want[k], what);
        }
        for (int k = 0; k < 2 + n_out; k++) {
            tex_array_free(got[k]);
            if (k >= 2)
                tex_array_free(want[k]);
        }
    }
    free(src);
    tex_ctx_free(c);
}

static void test_every_dtype(void)
{
    if (!have_cc())
        TT_SKIP("no C compiler");
    for (int t = 0; t <= (int)TEX_F64; t++)
        check_dtype((tex_dtype)t);
}

static double value_at(const DLTensor *a, tex_dtype t, int64_t q)
{
    switch (t) {
    case TEX_F16:
        return texi_f16_to_f32(((const uint16_t *)a->data)[q]);
    case TEX_BF16:
        return texi_bf16_to_f32(((const uint16_t *)a->data)[q]);
    case TEX_F32:
        return ((const float *)a->data)[q];
    case TEX_F64:
        return ((const double *)a->data)[q];
    case TEX_I32:
        return ((const int32_t *)a->data)[q];
    case TEX_I64:
        return (double)((const int64_t *)a->data)[q];
    default:
        return NAN;
    }
}

/* Every math function of float type t (and abs/floor of integers) against the
 * oracle, within a tolerance of the type (libm float vs double). */
static void check_math(tex_dtype t)
{
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_int(c, DT_N);
    tex_tensor *A = tex_placeholder(c, "a", t, 1, &n), *B = tex_placeholder(c, "b", t, 1, &n);
    tex_tensor *outs[DT_MAX_OUT];
    tex_iter *ax[DT_MAX_OUT];
    int n_out = 0;
    char name[32];
    bool fl = texi_dtype_is_float(t);
    for (int op = 0; op < 16 && n_out < DT_MAX_OUT; op++) {
        snprintf(name, sizeof name, "m%d", op);
        ax[n_out] = tex_axis(c, "i", n);
        tex_expr *a = TEX_AT(A, tex_iv(ax[n_out])), *b = TEX_AT(B, tex_iv(ax[n_out]));
        tex_expr *pos = fl ? tex_add(tex_abs(a), tex_const(c, t, 1)) : NULL, *e = NULL;
        switch (op) {
        case 0:
            e = tex_abs(a);
            break;
        case 1:
            e = tex_floor(a);
            break;
        case 2:
            e = fl ? tex_exp(tex_div(a, tex_const(c, t, 16))) : NULL;
            break;
        case 3:
            e = fl ? tex_log(pos) : NULL;
            break;
        case 4:
            e = fl ? tex_sqrt(pos) : NULL;
            break;
        case 5:
            e = fl ? tex_rsqrt(pos) : NULL;
            break;
        case 6:
            e = fl ? tex_tanh(tex_div(a, tex_const(c, t, 32))) : NULL;
            break;
        case 7:
            e = fl ? tex_sigmoid(tex_neg(tex_div(a, tex_const(c, t, 32)))) : NULL;
            break;
        case 8:
            e = fl ? tex_erf(tex_div(a, tex_const(c, t, 64))) : NULL;
            break;
        case 9:
            e = fl ? tex_ceil(a) : tex_ceil(a);
            break;
        case 10:
            e = tex_round(a);
            break;
        case 11:
            e = fl ? tex_sin(a) : NULL;
            break;
        case 12:
            e = fl ? tex_cos(a) : NULL;
            break;
        case 13:
            e = fl ? tex_pow(pos, tex_const(c, t, 0.75)) : NULL;
            break;
        case 14:
            e = fl ? tex_fma(a, b, a) : tex_abs(b);
            break;
        default:
            e = fl ? tex_neg(tex_exp(tex_mul(a, a))) : NULL;
            break; /* -inf */
        }
        if (!e)
            continue;
        outs[n_out] = tex_compute(c, name, 1, &ax[n_out], e);
        n_out++;
    }
    tex_tensor *params[2 + DT_MAX_OUT] = {A, B};
    memcpy(params + 2, outs, sizeof outs[0] * (size_t)n_out);
    tex_schedule *s = tex_schedule_new(c, n_out, outs);
    snprintf(name, sizeof name, "math_%s", tex_dtype_name(t));
    tex_func *f = tex_lower_tensors(s, name, 2 + n_out, params);
    if (!f)
        TT_FAILF("%s: %s", name, tex_errmsg(c));
    void *h = NULL;
    char *src = NULL;
    any_fn fn = f ? build(f, 0, name, &h, &src) : NULL;
    double tol = t == TEX_F64    ? 1e-13
                 : t == TEX_F32  ? 1e-6
                 : t == TEX_F16  ? 1e-3
                 : t == TEX_BF16 ? 8e-3
                                 : 0;
    if (fn) {
        DLTensor *got[2 + DT_MAX_OUT], *want[2 + DT_MAX_OUT];
        uint64_t rng = 23 + (uint64_t)t;
        void *p[2 + DT_MAX_OUT] = {0};
        for (int k = 0; k < 2 + n_out; k++) {
            got[k] = array(1, (int64_t[]){DT_N}, params[k]->dtype);
            want[k] = k < 2 ? got[k] : array(1, (int64_t[]){DT_N}, params[k]->dtype);
            p[k] = got[k]->data;
        }
        fill_dtype(got[0], t, &rng, false);
        fill_dtype(got[1], t, &rng, false);
        typedef int (*entry_t)(void *, void *, void *, void *, void *, void *, void *, void *,
                               void *, void *, void *, void *, void *, void *, void *, void *,
                               void *, void *);
        entry_t entry = NULL;
        memcpy(&entry, &fn, sizeof entry);
        TT_EQ_INT(entry(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11],
                        p[12], p[13], p[14], p[15], p[16], p[17]),
                  0);
        TT_EQ_INT(tex_eval_reference(c, 2 + n_out, params, want), 0);
        for (int k = 2; k < 2 + n_out; k++)
            for (int64_t q = 0; q < DT_N; q++) {
                double g = value_at(got[k], t, q), w = value_at(want[k], t, q);
                if (g != w && !(fabs(g - w) <= tol * fmax(1.0, fabs(w)))) {
                    TT_FAILF("%s: %s[%lld] = %.17g, oracle %.17g", name, params[k]->name,
                             (long long)q, g, w);
                    break;
                }
            }
        for (int k = 0; k < 2 + n_out; k++) {
            tex_array_free(got[k]);
            if (k >= 2)
                tex_array_free(want[k]);
        }
    }
    free(src);
    tex_ctx_free(c);
}

static void test_math(void)
{
    if (!have_cc())
        TT_SKIP("no C compiler");
    tex_dtype ts[] = {TEX_F16, TEX_BF16, TEX_F32, TEX_F64, TEX_I32, TEX_I64};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
        check_math(ts[k]);
}

/* An "assert" ATTR returns -1 when its condition fails (at top level), and
 * sets tex_rc instead inside a parallel region, where a heap temporary's
 * failure is recorded atomically too. */
static void test_assert_and_parallel_heap(void)
{
    if (!have_cc())
        TT_SKIP("no C compiler");
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_var(c, "n", TEX_I64);
    tex_tensor *A = tex_placeholder(c, "A", TEX_F32, 1, &n);
    tex_iter *i = tex_axis(c, "i", n);
    tex_tensor *B = tex_compute(c, "B", 1, &i, tex_neg(TEX_AT(A, tex_iv(i))));
    tex_schedule *s = tex_schedule_new(c, 1, &B);
    tex_func *f = tex_lower_tensors(s, "checked", 2, (tex_tensor *[]){A, B});
    TT_CHECK(f != NULL);
    if (!f) {
        tex_ctx_free(c);
        return;
    }
    /* assert n >= 8 around the body; a parallel loop allocating n floats */
    texi_buffer *tmp = texi_buffer_new(c, "tmp", TEX_F32, TEXI_SCOPE_LOCAL, 1, &n);
    tex_expr *p = texi_var_new(c, "p", TEX_I64);
    tex_stmt *st =
        texi_store_new(c, tmp, texi_int_imm(c, TEX_I64, 0), texi_float_imm(c, TEX_F32, 1));
    tex_stmt *par = texi_for_new(
        c, p, texi_int_imm(c, TEX_I64, 0), texi_int_imm(c, TEX_I64, 2), TEXI_FOR_PARALLEL, -1,
        texi_attr_new(c, "assert", tex_ge(n, tex_int(c, 2)), texi_allocate_new(c, tmp, st)));
    tex_stmt *items[2] = {par, f->body};
    tex_func g = *f;
    g.body = texi_attr_new(c, "assert", tex_ge(n, tex_int(c, 8)), texi_seq_new(c, 2, items));
    void *h = NULL;
    char *src = NULL;
    any_fn fn = build(&g, 0, "checked", &h, &src);
    TT_CHECK(src && strstr(src, "return -1;") && strstr(src, "runtime check"));
    TT_EQ_INT(src ? count(src, "#pragma omp atomic write") : -1, 2);
    if (fn) {
        int64_t len = 16;
        DLTensor *a = array(1, &len, TEX_F32), *b = array(1, &len, TEX_F32);
        int (*entry)(const float *, float *, int64_t) = NULL;
        memcpy(&entry, &fn, sizeof entry);
        TT_EQ_INT(entry(a->data, b->data, 16), 0);
        TT_EQ_INT(entry(a->data, b->data, 5), -1);
        tex_array_free(a);
        tex_array_free(b);
    }
    free(src);
    tex_ctx_free(c);
}

/* ------------------------------------------------------------ FMA, barrier */

static bool cpu_has_fma(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    bool fma = false;
    while (f && !fma && fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0)
            fma = strstr(line, " fma") != NULL;
    if (f)
        fclose(f);
    return fma;
}

/* src compiles to packed FMAs on xmm/ymm/zmm registers (packed mul and add
 * without FMA). */
static void check_packed_fma(const char *src, const char *name)
{
    char obj[256], log[256];
    if (compile(src, name, false, obj, sizeof obj) != 0)
        return;
    snprintf(log, sizeof log, "%s/%s.dis", tmpdir, name);
    TT_EQ_INT(run_argv((const char *const[]){"objdump", "-d", obj, NULL}, log), 0);
    FILE *d = fopen(log, "r");
    char line[512];
    bool fma = false, mul = false, add = false;
    while (d && fgets(line, sizeof line, d)) {
        bool vreg = strstr(line, "mm") != NULL;
        fma |= vreg && strstr(line, "vfmadd") && strstr(line, "ps");
        mul |= vreg && strstr(line, "vmulps") != NULL;
        add |= vreg && strstr(line, "vaddps") != NULL;
    }
    if (d)
        fclose(d);
    if (cpu_has_fma())
        TT_CHECK(fma);
    else
        TT_CHECK(mul && add);
}

/* The vectorized GEMM inner loop compiles to packed FMAs (or packed mul/add):
 * as the `#pragma omp simd` loop the emitter writes for tex_lower's output,
 * and as the explicit vector statements of the CPU tail (pass simd). */
static void test_fma_disassembly(void)
{
    if (!have_cc())
        TT_SKIP("no C compiler");
    char log[256];
    snprintf(log, sizeof log, "%s/objdump_version.log", tmpdir);
    if (run_argv((const char *const[]){"objdump", "--version", NULL}, log) != 0)
        TT_SKIP("objdump (binutils) is not installed");
    mm m;
    mm_new(&m, 256, 256, 256);
    tex_iter *jo, *ji;
    TT_EQ_INT(tex_split(m.st, tex_op_axis(m.st, 1), tex_int(m.ctx, 16), &jo, &ji), 0);
    TT_EQ_INT(
        tex_reorder(m.st, 4,
                    (tex_iter *[]){tex_op_axis(m.st, 0), jo, tex_op_reduce_axis(m.st, 0), ji}),
        0);
    TT_EQ_INT(tex_vectorize(m.st, ji), 0);
    tex_func *f = tex_lower_tensors(m.s, "gemm_vec", 3, (tex_tensor *[]){m.A, m.B, m.C}), tail;
    char *src = f ? texi_cpu_emit(f, 0, false) : NULL;
    TT_CHECK(src && strstr(src, "#pragma omp simd"));
    if (src)
        check_packed_fma(src, "gemm_vec");
    free(src);
    src = f && texi_lower_tail(f, TEXI_TAIL_CPU, false, &tail, NULL) == 0
              ? texi_cpu_emit(&tail, 0, false)
              : NULL;
    TT_CHECK(src && strstr(src, "vector_size(") && !strstr(src, "#pragma omp simd"));
    if (src)
        check_packed_fma(src, "gemm_simd");
    free(src);
    tex_ctx_free(m.ctx);
}

/* A BARRIER reaching the emitter (tex_build removes them by barrier
 * fission first) is an internal error naming the loop, not code. */
static void test_barrier_refused(void)
{
    mm m;
    mm_new(&m, 8, 8, 8);
    tex_func *f = tex_lower_tensors(m.s, "mm_bar", 3, (tex_tensor *[]){m.A, m.B, m.C});
    TT_CHECK(f != NULL);
    if (!f) {
        tex_ctx_free(m.ctx);
        return;
    }
    tex_ctx *c = m.ctx;
    tex_expr *tx = texi_var_new(c, "threadIdx.x", TEX_I32);
    tex_stmt *items[2] = {texi_barrier_new(c, TEXI_SCOPE_SHARED), f->body};
    tex_func g = *f;
    g.body = texi_for_new(c, tx, texi_int_imm(c, TEX_I32, 0), texi_int_imm(c, TEX_I32, 4),
                          TEXI_FOR_THREAD, TEX_THREAD_X, texi_seq_new(c, 2, items));
    char *src = texi_cpu_emit(&g, 0, false);
    TT_CHECK(src == NULL);
    TT_EQ_INT(tex_errcode(c), TEX_EINTERNAL);
    TT_CHECK(strstr(tex_errmsg(c), "threadIdx_x") && strstr(tex_errmsg(c), "barrier"));
    free(src);
    tex_ctx_free(c);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tex_codegen_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    TT_RUN(test_prototype_and_header);
    TT_RUN(test_symbolic_prototype);
    TT_RUN(test_matmul_tutorial);
    TT_RUN(test_matmul_serial);
    TT_RUN(test_no_nested_parallel);
    TT_RUN(test_f16_elementwise);
    TT_RUN(test_u64_and_signed_floor);
    TT_RUN(test_reduce_max_i8);
    TT_RUN(test_symbolic_heap);
    TT_RUN(test_base_pointers);
    TT_RUN(test_assert_and_parallel_heap);
    TT_RUN(test_every_dtype);
    TT_RUN(test_math);
    TT_RUN(test_fma_disassembly);
    TT_RUN(test_barrier_refused);
    const char *rm[] = {"rm", "-rf", tmpdir, NULL};
    char log[] = "/dev/null";
    if (!getenv("TEX_TEST_KEEP")) /* keep the generated files for inspection */
        run_argv(rm, log);
    else
        printf("generated files kept in %s\n", tmpdir);
    return tt_finish();
}
