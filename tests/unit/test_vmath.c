/*
 * test_vmath: the vector math source of src/codegen_c/cvmath.c, compiled by
 * the system compilers and measured against libm.
 *
 * One source holds the typedefs, texi_vmath_source(all functions) and a
 * driver loop per function for 4, 8 and 16 lanes. It is compiled into a
 * shared object with gcc, and with clang when clang runs here, each with
 * -ffp-contract=fast and =off (the JIT's two modes, with -Wall -Wextra
 * -Werror), through posix_spawnp in a private temporary directory, and
 * dlopened. Both compilers also compile it with -mavx512f (not run), which
 * must give no warning either.
 *
 * Every build and lane count is run on the special values of
 * docs/architecture.md, "Vector math" (exact results), and on about 5
 * million inputs: every 2048th bit pattern of both signs and dense sweeps of
 * |x| < 1, the polynomial-to-formula switch points, the overflow and
 * underflow thresholds and the denormals. The error is the distance in ulp
 * (ordered bit patterns) to the libm double result rounded to float, and
 * must be at most 2; NaN and infinities must match exactly; tanh and erf
 * must be odd. One line per function gives the maximum. TEX_VMATH_KEEP=1
 * keeps the temporary directory (source, objects, compiler logs).
 */
#include "codegen_c/cvmath.h"
#include "support/spawn.h"
#include "support/tmpdir.h"
#include "tt.h"
#include "util/half.h"

#include <dlfcn.h>
#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#define N_FN 5
#define N_LANES 3
#define MAX_BUILDS 4

static const int lanes[N_LANES] = {4, 8, 16};
static const char *const fn_names[N_FN] = {"exp", "log", "tanh", "sigmoid", "erf"};

typedef void (*vm_run_fn)(const float *in, float *out, long n);

typedef struct {
    const char *cc, *contract; /* "gcc" / "clang"; "fast" / "off" */
    void *dl;
    vm_run_fn run[N_FN][N_LANES];
} vm_build;

static vm_build builds[MAX_BUILDS];
static int n_builds;
static char tmp_dir[PATH_MAX];

/* ------------------------------------------------------------ the source */

/* The typedefs, the vector math and one driver per function and lane count:
 * void tex_vm_<fn>_x<L>(const float *in, float *out, long n), n a multiple
 * of L. NULL on ENOMEM. */
static char *vm_program(void)
{
    texi_sb sb;
    texi_sb_init(&sb);
    texi_sb_puts(&sb, "#include <stdint.h>\n\n");
    for (int l = 0; l < N_LANES; l++) {
        int L = lanes[l];
        texi_sb_printf(&sb,
                       "typedef float tex_v%d_f32 __attribute__((vector_size(%d)));\n"
                       "typedef int32_t tex_v%d_i32 __attribute__((vector_size(%d)));\n"
                       "typedef uint32_t tex_v%d_u32 __attribute__((vector_size(%d)));\n\n",
                       L, 4 * L, L, 4 * L, L, 4 * L);
        texi_vmath_source(&sb, L,
                          TEXI_VM_EXP | TEXI_VM_LOG | TEXI_VM_TANH | TEXI_VM_SIGMOID | TEXI_VM_ERF);
        for (int f = 0; f < N_FN; f++)
            texi_sb_printf(&sb,
                           "void tex_vm_%s_x%d(const float *in, float *out, long n)\n{\n"
                           "    for (long i = 0; i < n; i += %d) {\n"
                           "        tex_v%d_f32 v;\n"
                           "        __builtin_memcpy(&v, in + i, sizeof v);\n"
                           "        v = tex_v%s_f32x%d(v);\n"
                           "        __builtin_memcpy(out + i, &v, sizeof v);\n"
                           "    }\n}\n\n",
                           fn_names[f], L, L, L, fn_names[f], L);
    }
    return texi_sb_take(&sb);
}

/* ------------------------------------------------------------- compiling */

/* Whether `cc --version` runs. */
static bool have_compiler(const char *cc)
{
    char version[] = "--version", *argv[] = {NULL, version, NULL};
    memcpy(&argv[0], &cc, sizeof cc); /* argv is char *const[] */
    return tt_spawn(argv, "/dev/null") == 0;
}

/* One compiler run: its argv (owned strings), log, output and process;
 * contract NULL for the -mavx512f check. */
typedef struct {
    const char *cc, *contract;
    char *argv[48];
    char log[PATH_MAX + 32], out[PATH_MAX + 32];
    pid_t pid;
} vm_job;

/* Starts j's compiler on src: a shared object with -ffp-contract=<contract>
 * and $TEX_CFLAGS (make valgrind's -mno-avx512f), or an object with
 * -mavx512f. */
static void job_start(vm_job *j, const char *src, int id)
{
    char fpc[32];
    snprintf(fpc, sizeof fpc, "-ffp-contract=%s", j->contract ? j->contract : "fast");
    snprintf(j->log, sizeof j->log, "%s/cc%d.log", tmp_dir, id);
    snprintf(j->out, sizeof j->out, "%s/vm%d.%s", tmp_dir, id, j->contract ? "so" : "o");
    const char *shared[] = {"-shared", src, "-o", j->out, NULL};
    const char *avx512[] = {"-mavx512f", "-c", src, "-o", j->out, NULL};
    const char *args[] = {j->cc,   "-std=c99", "-O3",     "-march=native", fpc,
                          "-Wall", "-Wextra",  "-Werror", "-fPIC"};
    int n = 0;
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++)
        j->argv[n++] = strdup(args[i]);
    char extra[512];
    snprintf(extra, sizeof extra, "%s",
             j->contract && getenv("TEX_CFLAGS") ? getenv("TEX_CFLAGS") : "");
    for (char *save, *w = strtok_r(extra, " \t", &save); w && n < 40;
         w = strtok_r(NULL, " \t", &save))
        j->argv[n++] = strdup(w);
    for (const char *const *a = j->contract ? shared : avx512; *a; a++)
        j->argv[n++] = strdup(*a);
    j->argv[n] = NULL;
    j->pid = tt_spawn_start(j->argv, j->log);
}

/* Waits for j; true when it succeeded without a warning or an error (else
 * fails with the log). GCC's note that the ABI of 64-byte vector arguments
 * changed in GCC 4.6 (printed without AVX-512 whatever the options) is no
 * warning. */
static bool job_finish(vm_job *j)
{
    int rc = tt_spawn_wait(j->pid);
    FILE *f = fopen(j->log, "r");
    char text[4096];
    size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[len] = '\0';
    if (f)
        fclose(f);
    bool clean = !strstr(text, "warning") && !strstr(text, "error");
    if (rc != 0 || !clean)
        TT_FAILF("%s %s%s: exit %d:\n%s", j->cc, j->contract ? "-ffp-contract=" : "-mavx512f",
                 j->contract ? j->contract : "", rc, text);
    for (int i = 0; j->argv[i]; i++)
        free(j->argv[i]);
    return rc == 0 && clean;
}

/* Loads the drivers of j's shared object into b. */
static bool load_build(vm_build *b, const vm_job *j)
{
    *b = (vm_build){.cc = j->cc, .contract = j->contract};
    if (!(b->dl = dlopen(j->out, RTLD_NOW | RTLD_LOCAL))) {
        TT_FAILF("dlopen %s: %s", j->out, dlerror());
        return false;
    }
    for (int f = 0; f < N_FN; f++)
        for (int l = 0; l < N_LANES; l++) {
            char name[64];
            snprintf(name, sizeof name, "tex_vm_%s_x%d", fn_names[f], lanes[l]);
            b->run[f][l] = (vm_run_fn)(uintptr_t)dlsym(b->dl, name);
            if (!b->run[f][l]) {
                TT_FAILF("%s missing", name);
                dlclose(b->dl);
                return false;
            }
        }
    return true;
}

/* Writes the program into a new private directory; its path in src. */
static bool write_program(char *src, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/tex_vmath.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        tmp_dir[0] = '\0';
        return false;
    }
    snprintf(src, cap, "%s/vm.c", tmp_dir);
    char *text = vm_program();
    FILE *f = text ? fopen(src, "w") : NULL;
    bool ok = f && fputs(text, f) >= 0;
    ok = f && fclose(f) == 0 && ok;
    free(text);
    return ok;
}

/* Builds every variant at once (gcc, and clang when it runs; fast and off;
 * the two -mavx512f checks) and loads the shared objects into builds[]. */
static void test_compile(void)
{
    if (!have_compiler("gcc"))
        TT_SKIP("gcc does not run here");
    char src[PATH_MAX + 16];
    if (!write_program(src, sizeof src)) {
        TT_FAILF("cannot write the program into a temporary directory");
        return;
    }
    const char *ccs[2] = {"gcc", have_compiler("clang") ? "clang" : NULL};
    if (!ccs[1])
        printf("  clang does not run here: gcc only\n");
    vm_job jobs[6];
    int n_jobs = 0;
    for (int c = 0; c < 2 && ccs[c]; c++)
        for (int m = 0; m < 3; m++) {
            jobs[n_jobs] = (vm_job){.cc = ccs[c], .contract = m == 2 ? NULL : m ? "off" : "fast"};
            job_start(&jobs[n_jobs], src, n_jobs);
            n_jobs++;
        }
    for (int i = 0; i < n_jobs; i++)
        if (job_finish(&jobs[i]) && jobs[i].contract && load_build(&builds[n_builds], &jobs[i]))
            n_builds++;
}

/* ---------------------------------------------------------------- values */

/* The libm reference of function f in double. */
static double reference(int f, double x)
{
    switch (f) {
    case 0:
        return exp(x);
    case 1:
        return log(x);
    case 2:
        return tanh(x);
    case 3:
        return 1.0 / (1.0 + exp(-x));
    default:
        return erf(x);
    }
}

/* Bit patterns in float order: a and b are |key(a) - key(b)| ulp apart (+0 and -0 are one). */
static int64_t key(float x)
{
    uint32_t b = texi_f32_bits(x);
    return b >> 31 ? -(int64_t)(b & 0x7fffffffu) : (int64_t)b;
}

/* Inputs: nonnegative values, then the same negated (so out[i + n/2] is
 * f(-x) for out[i] = f(x)); n a multiple of 16. */
typedef struct {
    float *x;
    long n, cap;
} vm_inputs;

static void push(vm_inputs *in, float x)
{
    if (in->n == in->cap) {
        in->cap = in->cap ? 2 * in->cap : 1 << 20;
        in->x = realloc(in->x, (size_t)in->cap * sizeof *in->x);
        if (!in->x)
            abort();
    }
    in->x[in->n++] = x;
}

/* n values evenly spaced in [a, b]. */
static void push_linear(vm_inputs *in, double a, double b, long n)
{
    for (long i = 0; i <= n; i++)
        push(in, (float)(a + (b - a) * (double)i / (double)n));
}

/* Every step-th float from a to b (a <= b, both >= 0). */
static void push_bits(vm_inputs *in, float a, float b, uint32_t step)
{
    for (uint64_t u = texi_f32_bits(a); u <= texi_f32_bits(b); u += step)
        push(in, texi_f32_from_bits((uint32_t)u));
}

/* The sweep of the file comment. */
static vm_inputs make_inputs(void)
{
    vm_inputs in = {0};
    /* every 2048th pattern, at a varying offset so all mantissa bits move */
    for (uint32_t i = 0; i < 0x7f800000u / 2048; i++)
        push(&in, texi_f32_from_bits(i * 2048 + ((i * 2654435761u) >> 21)));
    push(&in, texi_f32_from_bits(0x7f800000u));
    push_linear(&in, 0.0, 1.0, 400000);  /* |x| < 1 */
    push_linear(&in, 0.99, 1.01, 50000); /* log near 1 */
    push_linear(&in, 0.55, 0.7, 50000);  /* the tanh switch */
    push_linear(&in, 0.85, 0.9, 50000);  /* the erf switch */
    push_linear(&in, 1.0, 4.5, 200000);  /* erf's second piece, its end */
    push_linear(&in, 8.5, 10.0, 20000);  /* tanh's end */
    push_linear(&in, 15.0, 20.0, 20000); /* sigmoid's end */
    push_bits(&in, 85.0f, 105.0f, 8);    /* exp overflow, and underflow (negated) */
    push_bits(&in, 0.0f, FLT_MIN, 32);   /* denormals */
    push_bits(&in, 1e38f, FLT_MAX, 16);  /* log's top */
    static const float special[] = {0.0f,         FLT_MIN,    FLT_MAX,
                                    FLT_TRUE_MIN, 1.0f,       2.0f,
                                    0.5f,         9.0f,       9.5f,
                                    3.92f,        4.0f,       88.72283f,
                                    88.72284f,    88.7229f,   89.0f,
                                    103.97207f,   103.97208f, 104.0f,
                                    87.33655f,    1e-30f,     1e-20f,
                                    1e-10f,       1e-5f,      0.625f,
                                    1e10f,        1e30f,      (float)INFINITY,
                                    (float)NAN};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        push(&in, special[i]);
    while (in.n % 16)
        push(&in, 1.0f);
    long half = in.n;
    for (long i = 0; i < half; i++)
        push(&in, -in.x[i]);
    return in;
}

/* ------------------------------------------------------------- measuring */

/* The worst error of one function in one build and lane count. */
typedef struct {
    int64_t ulp;      /* max distance to the rounded reference */
    double exact;     /* max error in ulp of the rounded reference, against the double */
    float worst_x;    /* where ulp was reached */
    float exact_x;    /* where exact was reached */
    long bad_special; /* NaN / infinity mismatches and odd-symmetry failures */
    float bad_x;
} vm_err;

/* Error of got in ulp of ref (fractional, for the report). */
static double exact_ulp(float got, double ref)
{
    int e = ref == 0 ? -126 : ilogb(ref);
    return fabs((double)got - ref) / ldexp(1.0, (e < -126 ? -126 : e) - 23);
}

static void measure(int f, const float *x, const float *out, const double *ref, long n, vm_err *e)
{
    for (long i = 0; i < n; i++) {
        float got = out[i], r = (float)ref[i];
        if (isnan(r) || isnan(got) || isinf(r) || isinf(got)) {
            bool same = isnan(r) ? isnan(got) : got == r;
            if (!same && !e->bad_special++)
                e->bad_x = x[i];
            continue;
        }
        int64_t d = llabs(key(got) - key(r));
        if (d > e->ulp) {
            e->ulp = d;
            e->worst_x = x[i];
        }
        if (d) {
            double u = exact_ulp(got, ref[i]);
            if (u > e->exact) {
                e->exact = u;
                e->exact_x = x[i];
            }
        }
    }
    if (f == 2 || f == 4) /* tanh and erf are odd */
        for (long i = 0, h = n / 2; i < h; i++)
            if (!isnan(out[i]) &&
                texi_f32_bits(out[i + h]) != (texi_f32_bits(out[i]) ^ 0x80000000u)) {
                if (!e->bad_special++)
                    e->bad_x = x[i];
            }
}

/* Every build and lane count on the sweep, one line per function. */
static void test_accuracy(void)
{
    if (!n_builds)
        TT_SKIP("nothing was built");
    vm_inputs in = make_inputs();
    float *out = malloc((size_t)in.n * sizeof *out);
    double *ref = malloc((size_t)in.n * sizeof *ref);
    TT_CHECK(out && ref);
    for (int f = 0; out && ref && f < N_FN; f++) {
        for (long i = 0; i < in.n; i++)
            ref[i] = reference(f, in.x[i]);
        vm_err all = {0};
        char line[512];
        int len = snprintf(line, sizeof line, "  %-8s", fn_names[f]);
        for (int b = 0; b < n_builds; b++) {
            len += snprintf(line + len, sizeof line - (size_t)len, " %s/%s", builds[b].cc,
                            builds[b].contract);
            for (int l = 0; l < N_LANES; l++) {
                vm_err e = {0};
                builds[b].run[f][l](in.x, out, in.n);
                measure(f, in.x, out, ref, in.n, &e);
                len += snprintf(line + len, sizeof line - (size_t)len, " %lld", (long long)e.ulp);
                if (e.ulp > 2 || e.bad_special)
                    TT_FAILF("%s (%s -ffp-contract=%s, %d lanes): %lld ulp at %a; %ld "
                             "special-value or symmetry errors, first at %a",
                             fn_names[f], builds[b].cc, builds[b].contract, lanes[l],
                             (long long)e.ulp, (double)e.worst_x, e.bad_special, (double)e.bad_x);
                if (e.ulp > all.ulp) {
                    all.ulp = e.ulp;
                    all.worst_x = e.worst_x;
                }
                if (e.exact > all.exact) {
                    all.exact = e.exact;
                    all.exact_x = e.exact_x;
                }
            }
        }
        printf("%s | max %lld ulp at %a; %.3f from the exact value at %a\n", line,
               (long long)all.ulp, (double)all.worst_x, all.exact, (double)all.exact_x);
    }
    free(out);
    free(ref);
    free(in.x);
}

/* The exact results libm gives at the special values, in every build. */
static void test_specials(void)
{
    if (!n_builds)
        TT_SKIP("nothing was built");
    static const struct {
        int f;
        float x, want;
    } cases[] = {
        {0, 0.0f, 1.0f},         {0, INFINITY, INFINITY}, {0, -INFINITY, 0.0f},
        {0, NAN, NAN},           {0, 88.7229f, INFINITY}, {0, 1e30f, INFINITY},
        {0, -104.0f, 0.0f},      {0, -1e30f, 0.0f},       {1, 1.0f, 0.0f},
        {1, 0.0f, -INFINITY},    {1, -0.0f, -INFINITY},   {1, -1.0f, NAN},
        {1, -FLT_TRUE_MIN, NAN}, {1, -INFINITY, NAN},     {1, INFINITY, INFINITY},
        {1, NAN, NAN},           {2, 0.0f, 0.0f},         {2, -0.0f, -0.0f},
        {2, 1e-30f, 1e-30f},     {2, -1e-30f, -1e-30f},   {2, FLT_TRUE_MIN, FLT_TRUE_MIN},
        {2, -FLT_MIN, -FLT_MIN}, {2, 20.0f, 1.0f},        {2, -1e30f, -1.0f},
        {2, INFINITY, 1.0f},     {2, -INFINITY, -1.0f},   {2, NAN, NAN},
        {3, 0.0f, 0.5f},         {3, -INFINITY, 0.0f},    {3, INFINITY, 1.0f},
        {3, -200.0f, 0.0f},      {3, 200.0f, 1.0f},       {3, -1e30f, 0.0f},
        {3, 1e30f, 1.0f},        {3, NAN, NAN},           {4, 0.0f, 0.0f},
        {4, -0.0f, -0.0f},       {4, 10.0f, 1.0f},        {4, -10.0f, -1.0f},
        {4, INFINITY, 1.0f},     {4, -INFINITY, -1.0f},   {4, NAN, NAN},
        {4, -NAN, NAN},
    };
    for (int b = 0; b < n_builds; b++)
        for (int l = 0; l < N_LANES; l++)
            for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
                float x[16], y[16];
                for (int i = 0; i < 16; i++)
                    x[i] = i % 2 ? cases[c].x : 0.75f; /* the case beside ordinary lanes */
                builds[b].run[cases[c].f][l](x, y, 16);
                float want = cases[c].want;
                bool ok = isnan(want) ? isnan(y[1]) : texi_f32_bits(y[1]) == texi_f32_bits(want);
                if (!ok)
                    TT_FAILF("%s(%a) = %a, want %a (%s -ffp-contract=%s, %d lanes)",
                             fn_names[cases[c].f], (double)cases[c].x, (double)y[1], (double)want,
                             builds[b].cc, builds[b].contract, lanes[l]);
            }
}

/* Without `which`, nothing; exp comes with the functions that call it. */
static void test_dependencies(void)
{
    texi_sb sb;
    texi_sb_init(&sb);
    texi_vmath_source(&sb, 8, 0);
    TT_EQ_INT(sb.len, 0);
    texi_vmath_source(&sb, 8, TEXI_VM_ERF);
    char *text = texi_sb_take(&sb);
    TT_CHECK(text && strstr(text, "tex_vexp_f32x8(tex_v8_f32 x)"));
    TT_CHECK(text && strstr(text, "tex_verf_f32x8(tex_v8_f32 x)"));
    TT_CHECK(text && !strstr(text, "tex_vlog_f32x8"));
    TT_CHECK(text && !strchr(text, '$'));
    free(text);
}

int main(void)
{
    TT_RUN(test_dependencies);
    TT_RUN(test_compile);
    TT_RUN(test_specials);
    TT_RUN(test_accuracy);
    for (int b = 0; b < n_builds; b++)
        dlclose(builds[b].dl);
    if (tmp_dir[0] && !getenv("TEX_VMATH_KEEP"))
        tt_remove_tree(tmp_dir);
    return tt_finish();
}
