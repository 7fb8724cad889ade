/*
 * cuda_emu.h: runs generated CUDA C on the CPU (docs/testing.md, "CUDA
 * without a GPU", way 3). Header-only (static inline
 * functions); include it after tt.h. Needs g++ (or $CXX), -ldl -lffi
 * -lpthread (the test programs link them).
 *
 * cuda_emu_build(source) writes the CUDA text into a private directory
 * (mkdtemp), compiles it with
 *     g++ -std=c++17 -O1 -fPIC -shared -pthread -Wall -fno-strict-aliasing
 *         -include tests/cuda/emu/tex_cuda_emu.h -I tests/cuda/emu -x c++
 * (posix_spawnp, argv only, no shell; the emulation headers are found from
 * the working directory, the repository root when tests run, or from
 * $TEX_CUDA_EMU_DIR), dlopens the result and removes the files (kept when
 * $TEX_CUDA_EMU_KEEP is set, for debugging). The compiler's output is in
 * emu->log (warnings of the generated code, or the errors when it fails).
 *
 * cuda_emu_launch_raw runs one `extern "C" __global__` function of the
 * module with explicit grid/block and arguments (hand-written snippets).
 * cuda_emu_run runs a kernel built for "cuda -emit-only" the way the CUDA
 * runtime would: it checks and binds the arguments like tex_kernel_call
 * (count, kinds, dtypes, constant dimensions; symbolic sizes from the
 * shapes; derived dimensions are not checked), evaluates the launch plan
 * (texi_cuda_kernel_plan: asserts, workspace sizes, extents), allocates the
 * workspace on the heap poisoned (NaN for floating types, 0xAB bytes
 * otherwise), and launches each plan kernel in order with the ABI of
 * src/backend_cuda/cuda.h (tensor pointers and VAR values in parameter
 * order: sizes as int64_t, other scalars converted and range-checked like
 * tex_kernel_call does and passed in their own type; int64_t extra sizes,
 * then one pointer per workspace buffer), called through libffi from every emulated thread
 * (tex_emu_launch of the module: one host thread per CUDA thread, blocks
 * one after another). Arrays are host DLTensors.
 */
#ifndef TEX_TESTS_SUPPORT_CUDA_EMU_H
#define TEX_TESTS_SUPPORT_CUDA_EMU_H

#include "backend_cpu/jit.h"
#include "backend_cuda/cuda.h"
#include "rt/backend.h"
#include "rt/launch_plan.h"
#include "support/spawn.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ffi.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CUDA_EMU_MAX_ARGS 64

typedef int (*cuda_emu_launch_fn)(void (*fn)(void *), void *arg, const unsigned grid[3],
                                  const unsigned block[3], char *err, size_t n);

typedef struct {
    void *dl;
    cuda_emu_launch_fn launch;
    char *log; /* the compiler's output (malloc'ed; "" when silent) */
} cuda_emu;

/* A hand-written kernel's argument (cuda_emu_launch_raw). */
typedef struct {
    enum { CUDA_EMU_PTR, CUDA_EMU_I64, CUDA_EMU_I32, CUDA_EMU_F32 } kind;
    void *p;
    int64_t i;
    float f;
} cuda_emu_arg;

static inline void cuda_emu_errf(char *err, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline void cuda_emu_errf(char *err, size_t n, const char *fmt, ...)
{
    if (!err || n == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

/* The absolute directory of tex_cuda_emu.h, or false. */
static inline bool cuda_emu_dir(char out[PATH_MAX])
{
    const char *env = getenv("TEX_CUDA_EMU_DIR");
    const char *cands[] = {env, "tests/cuda/emu", "../tests/cuda/emu", "../../tests/cuda/emu"};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        char probe[PATH_MAX];
        if (!cands[i] ||
            snprintf(probe, sizeof probe, "%s/tex_cuda_emu.h", cands[i]) >= (int)sizeof probe)
            continue;
        if (access(probe, R_OK) == 0 && realpath(cands[i], out))
            return true;
    }
    return false;
}

static inline bool cuda_emu_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    size_t len = strlen(text);
    bool ok = fwrite(text, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

static inline char *cuda_emu_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (int c; f && (c = fgetc(f)) != EOF;) {
        if (len + 1 >= cap) {
            char *nb = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!nb)
                break;
            buf = nb;
        }
        buf[len++] = (char)c;
    }
    if (f)
        fclose(f);
    char *out = buf ? buf : malloc(1);
    if (out)
        out[buf ? len : 0] = '\0';
    return out;
}

/* Whether $CXX (default g++) runs here: the emulator needs it. Remembered. */
static inline bool cuda_emu_have_cxx(void)
{
    static int have = -1;
    if (have < 0) {
        const char *cxx = getenv("CXX") && *getenv("CXX") ? getenv("CXX") : "g++";
        char version[] = "--version", *argv[] = {NULL, version, NULL};
        memcpy(&argv[0], &cxx, sizeof cxx); /* argv is char *const[] */
        have = tt_spawn(argv, "/dev/null") == 0;
    }
    return have;
}

static inline void cuda_emu_free(cuda_emu *e)
{
    if (!e)
        return;
    if (e->dl)
        dlclose(e->dl);
    free(e->log);
    free(e);
}

/* Compiles and loads source (file comment); NULL with a message in err. */
static inline cuda_emu *cuda_emu_build(const char *source, char *err, size_t n)
{
    char emu_dir[PATH_MAX], dir[PATH_MAX], src[PATH_MAX + 16], so[PATH_MAX + 16],
        log[PATH_MAX + 16], inc[PATH_MAX + 32];
    if (!cuda_emu_dir(emu_dir)) {
        cuda_emu_errf(err, n,
                      "cuda_emu: tests/cuda/emu/tex_cuda_emu.h not found (run from the "
                      "repository root or set TEX_CUDA_EMU_DIR)");
        return NULL;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tex_cuda_emu.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cuda_emu *e = calloc(1, sizeof *e);
    if (!e || !mkdtemp(dir)) {
        cuda_emu_errf(err, n, "cuda_emu: cannot create a temporary directory");
        free(e);
        return NULL;
    }
    snprintf(src, sizeof src, "%s/kernel.cu", dir);
    snprintf(so, sizeof so, "%s/kernel.so", dir);
    snprintf(log, sizeof log, "%s/cc.log", dir);
    snprintf(inc, sizeof inc, "%s/tex_cuda_emu.h", emu_dir);
    const char *cxx = getenv("CXX") && *getenv("CXX") ? getenv("CXX") : "g++";
    const char *cargv[] = {cxx,        "-std=c++17", "-O1",   "-fPIC",
                           "-shared",  "-pthread",   "-Wall", "-fno-strict-aliasing",
                           "-include", inc,          "-I",    emu_dir,
                           "-x",       "c++",        src,     "-o",
                           so,         NULL};
    char *argv[sizeof cargv / sizeof cargv[0]];
    memcpy(argv, cargv, sizeof cargv); /* posix_spawnp's argv is char *const[] */
    int rc = cuda_emu_write(src, source) ? tt_spawn(argv, log) : -2;
    e->log = cuda_emu_slurp(log);
    if (rc != 0)
        cuda_emu_errf(err, n, "cuda_emu: %s (%s):\n%.3000s",
                      rc == -2 ? "cannot write the source" : "the host compiler failed", cxx,
                      e->log ? e->log : "");
    if (rc == 0 && !(e->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL)))
        cuda_emu_errf(err, n, "cuda_emu: dlopen: %s", dlerror());
    if (e->dl && !(e->launch = (cuda_emu_launch_fn)(uintptr_t)dlsym(e->dl, "tex_emu_launch")))
        cuda_emu_errf(err, n, "cuda_emu: tex_emu_launch missing (header not force-included?)");
    if (!getenv("TEX_CUDA_EMU_KEEP")) {
        unlink(src);
        unlink(so);
        unlink(log);
        rmdir(dir);
    } else {
        fprintf(stderr, "cuda_emu: kept %s\n", dir);
    }
    if (!e->launch) {
        cuda_emu_free(e);
        return NULL;
    }
    return e;
}

/* ------------------------------------------------------------- launching */

typedef struct {
    ffi_cif cif;
    void (*fn)(void);
    void **values;
} cuda_emu_call;

static inline void cuda_emu_thread_entry(void *p)
{
    cuda_emu_call *c = p;
    ffi_call(&c->cif, c->fn, NULL, c->values);
}

/* Launches the module's function `kernel` (types/values as libffi takes them). */
static inline int cuda_emu_launch_ffi(cuda_emu *e, const char *kernel, const unsigned grid[3],
                                      const unsigned block[3], int nargs, ffi_type **types,
                                      void **values, char *err, size_t n)
{
    cuda_emu_call c = {.values = values};
    c.fn = (void (*)(void))(uintptr_t)dlsym(e->dl, kernel);
    if (!c.fn) {
        cuda_emu_errf(err, n, "cuda_emu: kernel '%s' not found in the module", kernel);
        return -1;
    }
    if (ffi_prep_cif(&c.cif, FFI_DEFAULT_ABI, (unsigned)nargs, &ffi_type_void, types) != FFI_OK) {
        cuda_emu_errf(err, n, "cuda_emu: ffi_prep_cif failed for '%s'", kernel);
        return -1;
    }
    char msg[512] = "";
    if (e->launch(cuda_emu_thread_entry, &c, grid, block, msg, sizeof msg) != 0) {
        cuda_emu_errf(err, n, "cuda_emu: kernel '%s': %s", kernel, msg);
        return -1;
    }
    return 0;
}

/* Runs a hand-written kernel: grid and block given, args by value. */
static inline int cuda_emu_launch_raw(cuda_emu *e, const char *kernel, const unsigned grid[3],
                                      const unsigned block[3], int nargs, const cuda_emu_arg args[],
                                      char *err, size_t n)
{
    ffi_type *types[CUDA_EMU_MAX_ARGS];
    void *values[CUDA_EMU_MAX_ARGS], *ptr[CUDA_EMU_MAX_ARGS];
    int64_t i64[CUDA_EMU_MAX_ARGS];
    int32_t i32[CUDA_EMU_MAX_ARGS];
    float f32[CUDA_EMU_MAX_ARGS];
    if (nargs > CUDA_EMU_MAX_ARGS) {
        cuda_emu_errf(err, n, "cuda_emu: too many arguments");
        return -1;
    }
    for (int i = 0; i < nargs; i++) {
        const cuda_emu_arg *a = &args[i];
        ptr[i] = a->p;
        i64[i] = a->i;
        i32[i] = (int32_t)a->i;
        f32[i] = a->f;
        types[i] = a->kind == CUDA_EMU_PTR   ? &ffi_type_pointer
                   : a->kind == CUDA_EMU_I64 ? &ffi_type_sint64
                   : a->kind == CUDA_EMU_I32 ? &ffi_type_sint32
                                             : &ffi_type_float;
        values[i] = a->kind == CUDA_EMU_PTR   ? (void *)&ptr[i]
                    : a->kind == CUDA_EMU_I64 ? (void *)&i64[i]
                    : a->kind == CUDA_EMU_I32 ? (void *)&i32[i]
                                              : (void *)&f32[i];
    }
    return cuda_emu_launch_ffi(e, kernel, grid, block, nargs, types, values, err, n);
}

/* Binds k's size table from args like tex_kernel_call (see file comment);
 * scalars[v] receives the converted value of the v-th VAR parameter. */
static inline int cuda_emu_bind(const tex_kernel *k, int n, const tex_value args[], int64_t *table,
                                texi_eval_value *scalars, char *err, size_t en)
{
    bool bound[CUDA_EMU_MAX_ARGS * 4] = {false};
    if (n != k->n_params || k->n_sizes > CUDA_EMU_MAX_ARGS * 4) {
        cuda_emu_errf(err, en, "cuda_emu: expected %d arguments, got %d", k->n_params, n);
        return -1;
    }
    for (int i = 0, v = 0; i < n; i++) {
        const texi_kernel_param *p = &k->params[i];
        if (p->kind == TEX_ARG_VAR) {
            char why[160] = "must be TEX_VAL_I64";
            if (p->size
                    ? args[i].kind != TEX_VAL_I64
                    : texi_eval_scalar_arg(p->dtype, &args[i], &scalars[v], why, sizeof why) != 0) {
                cuda_emu_errf(err, en, "cuda_emu: argument %d ('%s'): %s", i, p->name, why);
                return -1;
            }
            if (p->size)
                scalars[v].i = args[i].i;
            table[v] = scalars[v].i;
            bound[v++] = true;
            continue;
        }
        const DLTensor *d = args[i].kind == TEX_VAL_TENSOR ? args[i].t : NULL;
        DLDataType want = tex_dtype_to_dlpack(p->dtype);
        if (!d || d->ndim != p->ndim || d->dtype.code != want.code || d->dtype.bits != want.bits ||
            d->dtype.lanes != want.lanes) {
            cuda_emu_errf(err, en, "cuda_emu: argument %d (tensor '%s'): wrong kind, ndim or dtype",
                          i, p->name);
            return -1;
        }
        for (int j = 0; j < p->ndim; j++) {
            int64_t w = p->dims[j], got = d->shape[j];
            int s = w < 0 && w != INT64_MIN ? (int)(-1 - w) : -1;
            if ((w >= 0 && w != got) || (s >= 0 && bound[s] && table[s] != got)) {
                cuda_emu_errf(err, en, "cuda_emu: argument %d (tensor '%s'): dimension %d is %lld",
                              i, p->name, j, (long long)got);
                return -1;
            }
            if (s >= 0) {
                table[s] = got;
                bound[s] = true;
            }
        }
    }
    for (int s = 0; s < k->n_sizes; s++)
        if (!bound[s]) {
            cuda_emu_errf(err, en, "cuda_emu: size '%s' is not bound", k->size_names[s]);
            return -1;
        }
    return 0;
}

/* The launch plan's size table: VAR values in order, then the extras. */
static inline void cuda_emu_sizes(const tex_kernel *k, const int64_t *table, int64_t *sizes)
{
    int s = 0;
    for (int i = 0; i < k->n_params; i++)
        if (k->params[i].kind == TEX_ARG_VAR) {
            sizes[s] = table[s];
            s++;
        }
    for (int j = 0; j < k->n_extra; j++)
        sizes[s++] = table[k->extra_size_index[j]];
}

/* Fills a workspace buffer with NaN (floating types) or 0xAB bytes. */
static inline void cuda_emu_poison(void *p, tex_dtype t, int64_t elems)
{
    int bytes = (texi_dtype_bits(t) + 7) / 8;
    if (t == TEX_F32)
        for (int64_t i = 0; i < elems; i++)
            ((float *)p)[i] = NAN;
    else if (t == TEX_F64)
        for (int64_t i = 0; i < elems; i++)
            ((double *)p)[i] = NAN;
    else
        memset(p, t == TEX_F16 || t == TEX_BF16 ? 0xFF : 0xAB, (size_t)(elems * bytes));
}

/* Evaluates the plan's asserts and allocates its workspace (ws[i], freed by the caller). */
static inline int cuda_emu_prepare(const texi_launch_plan *plan, const int64_t *sizes, void **ws,
                                   char *err, size_t en)
{
    for (int a = 0; a < plan->n_asserts; a++) {
        int64_t ok = 0;
        if (texi_launch_prog_eval(&plan->asserts[a], sizes, &ok) != 0 || !ok) {
            cuda_emu_errf(err, en, "cuda_emu: assert failed: %s",
                          plan->assert_text ? plan->assert_text[a] : "?");
            return -1;
        }
    }
    for (int w = 0; w < plan->n_workspace; w++) {
        int64_t elems = 0;
        int bytes = (texi_dtype_bits(plan->workspace[w].dtype) + 7) / 8;
        if (texi_launch_prog_eval(&plan->workspace[w].elems, sizes, &elems) != 0 || elems < 0 ||
            !(ws[w] = malloc((size_t)(elems ? elems : 1) * (size_t)bytes))) {
            cuda_emu_errf(err, en, "cuda_emu: workspace '%s' (%lld elements)",
                          plan->workspace[w].name, (long long)elems);
            return -1;
        }
        cuda_emu_poison(ws[w], plan->workspace[w].dtype, elems);
    }
    return 0;
}

/* Launches every plan kernel in order with the prepared argument values,
 * after evaluating every kernel's launch extents (as the runtime does: a
 * refused call launches nothing, a kernel with an extent of 0 is skipped). */
static inline int cuda_emu_launch_plan(cuda_emu *e, const texi_launch_plan *plan,
                                       const int64_t *sizes, int nargs, ffi_type **types,
                                       void **values, char *err, size_t en)
{
    unsigned(*dims)[TEXI_N_LAUNCH_TAGS] = calloc((size_t)plan->n_kernels + 1, sizeof *dims);
    int rc = 0;
    if (!dims) {
        cuda_emu_errf(err, en, "cuda_emu: out of memory");
        return -1;
    }
    for (int k = 0; k < plan->n_kernels && rc == 0; k++) {
        const texi_launch_kernel *lk = &plan->kernels[k];
        for (int t = 0; t < TEXI_N_LAUNCH_TAGS && rc == 0; t++) {
            int64_t v = 0;
            if (texi_launch_prog_eval(&lk->extent[t], sizes, &v) != 0 || v < 0 || v > INT32_MAX) {
                cuda_emu_errf(err, en, "cuda_emu: kernel '%s': launch extent %d is %lld", lk->name,
                              t, (long long)v);
                rc = -1;
            }
            dims[k][t] = (unsigned)v;
        }
    }
    for (int k = 0; k < plan->n_kernels && rc == 0; k++) {
        bool empty = false;
        for (int t = 0; t < TEXI_N_LAUNCH_TAGS; t++)
            empty = empty || dims[k][t] == 0;
        rc = !empty && cuda_emu_launch_ffi(e, plan->kernels[k].name, dims[k], dims[k] + 3, nargs,
                                           types, values, err, en) != 0
                 ? -1
                 : 0;
    }
    free(dims);
    return rc;
}

/* Runs k ("cuda -emit-only", compiled into e from tex_kernel_source(k))
 * on host arrays: 0, or -1 with a message in err. */
static inline int cuda_emu_run(cuda_emu *e, const tex_kernel *k, int n, const tex_value args[],
                               char *err, size_t en)
{
    const texi_launch_plan *plan = texi_cuda_kernel_plan(k);
    if (!plan) {
        cuda_emu_errf(err, en, "cuda_emu: kernel '%s' has no launch plan (not a cuda kernel?)",
                      k->name);
        return -1;
    }
    int64_t table[CUDA_EMU_MAX_ARGS * 4], sizes[CUDA_EMU_MAX_ARGS * 4];
    texi_eval_value scalars[CUDA_EMU_MAX_ARGS * 4];
    if (cuda_emu_bind(k, n, args, table, scalars, err, en) != 0)
        return -1;
    cuda_emu_sizes(k, table, sizes);
    int nargs = k->n_params + k->n_extra + plan->n_workspace;
    if (nargs > CUDA_EMU_MAX_ARGS) {
        cuda_emu_errf(err, en, "cuda_emu: too many kernel arguments (%d)", nargs);
        return -1;
    }
    void *ptrs[CUDA_EMU_MAX_ARGS] = {NULL}, *values[CUDA_EMU_MAX_ARGS];
    int64_t ints[CUDA_EMU_MAX_ARGS];
    ffi_type *types[CUDA_EMU_MAX_ARGS];
    int a = 0;
    for (int i = 0, v = 0; i < k->n_params; i++, a++) {
        const texi_kernel_param *p = &k->params[i];
        bool var = p->kind == TEX_ARG_VAR;
        if (var)
            texi_kernel_scalar_store(p, scalars[v++], &ints[a]);
        else
            ptrs[a] = (char *)args[i].t->data + args[i].t->byte_offset;
        types[a] = !var      ? &ffi_type_pointer
                   : p->size ? &ffi_type_sint64
                             : texi_cpu_ffi_type(p->dtype);
        values[a] = var ? (void *)&ints[a] : (void *)&ptrs[a];
    }
    for (int j = 0; j < k->n_extra; j++, a++) {
        ints[a] = table[k->extra_size_index[j]];
        types[a] = &ffi_type_sint64;
        values[a] = &ints[a];
    }
    void **ws = ptrs + a;
    int rc = cuda_emu_prepare(plan, sizes, ws, err, en);
    for (int w = 0; w < plan->n_workspace; w++, a++) {
        types[a] = &ffi_type_pointer;
        values[a] = &ptrs[a];
    }
    if (rc == 0)
        rc = cuda_emu_launch_plan(e, plan, sizes, nargs, types, values, err, en);
    for (int w = 0; w < plan->n_workspace; w++)
        free(ws[w]);
    return rc;
}

/* Kernel k compiled into e, for cuda_emu_runner. */
typedef struct {
    cuda_emu *e;
    const tex_kernel *k;
} cuda_emu_kernel;

/* cuda_emu_run in the shape of gpu_cases.h's gc_runner (ud: a cuda_emu_kernel). */
static inline int cuda_emu_runner(void *ud, int n, const tex_value vals[], char *err, size_t en)
{
    const cuda_emu_kernel *m = ud;
    return cuda_emu_run(m->e, m->k, n, vals, err, en);
}

#endif
