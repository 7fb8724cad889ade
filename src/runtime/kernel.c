/*
 * Kernels: the backend registry, target strings, tex_build, and checked
 * calls (tex_kernel_call / _tensors), export, source, messages, free.
 *
 * Registry: a static table maps a target's first word to its backend
 * ("cpu" and "c" to texi_backend_cpu, "cuda" to texi_backend_cuda); a new
 * backend is one more row.
 * Target strings: a family word then options separated by spaces; "cpu"
 * takes "-threads=N" (N >= 1), "cuda" "-emit-only" and "-arch=sm_NN", and
 * every family "-strict-float". The kernel stores the target
 * normalised (single spaces).
 *
 * A kernel owns a copy of its signature (src/rt/signature.c) and never
 * points into the context, so it outlives tex_ctx_free. Calls check the
 * arguments with src/rt/args.c (the checks the interpreter uses too).
 * Nothing runs and nothing is written before all checks pass;
 * byte_offset is added to each pointer. A failed call's message goes to
 * k->errmsg: when several threads call one kernel and fail at once, the
 * text is a benign race (one of their messages, possibly mixed).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu/cpu.h"
#include "backend_cuda/cuda.h"

#define SMALL 32 /* sizes and arguments handled without allocating */

/* ------------------------------------------------------------ registry */

static const struct {
    const char *family;
    const texi_backend *backend;
} registry[] = {
    {"cpu", &texi_backend_cpu},
    {"c", &texi_backend_cpu},
    {"cuda", &texi_backend_cuda},
};

static const texi_backend *find_backend(const char *family, size_t len)
{
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (strlen(registry[i].family) == len && strncmp(registry[i].family, family, len) == 0)
            return registry[i].backend;
    return NULL;
}

/* A parsed target: its backend, normalised text and options. */
typedef struct {
    const texi_backend *backend;
    char text[256];
    int threads;
    bool strict_float;
    int code; /* 0, or why it was refused */
    char why[256];
} target_spec;

/* A thread count: 1 to 6 decimal digits, at least 1. */
static bool parse_threads_value(const char *w, size_t len, int *threads)
{
    if (len == 0 || len > 6)
        return false;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (w[i] < '0' || w[i] > '9')
            return false;
        v = v * 10 + (w[i] - '0');
    }
    *threads = v;
    return v >= 1;
}

static bool parse_threads(const char *w, size_t len, int *threads)
{
    const size_t plen = strlen("-threads=");
    if (len <= plen || strncmp(w, "-threads=", plen) != 0)
        return false;
    return parse_threads_value(w + plen, len - plen, threads);
}

/* TEX_NUM_THREADS when it is a positive number (the thread count of "cpu"
 * kernels whose target names none), else 0: OpenMP's default. */
static int threads_from_env(void)
{
    const char *v = getenv("TEX_NUM_THREADS");
    int threads = 0;
    return v && parse_threads_value(v, strlen(v), &threads) ? threads : 0;
}

/* Every family's option: compile without contraction or any other
 * value-changing optimisation (tex.h, tex_build). */
#define STRICT_FLOAT "-strict-float"

/* A "cuda" option: "-emit-only" or "-arch=sm_NN" (two or three digits). */
static bool parse_cuda_option(const char *w, size_t len)
{
    const size_t plen = strlen("-arch=sm_");
    if (len == strlen("-emit-only") && strncmp(w, "-emit-only", len) == 0)
        return true;
    if (len < plen + 2 || len > plen + 3 || strncmp(w, "-arch=sm_", plen) != 0)
        return false;
    for (size_t i = plen; i < len; i++)
        if (w[i] < '0' || w[i] > '9')
            return false;
    return true;
}

/* Splits "family -opt ..." and checks the options of the families known here. */
static void parse_target(const char *target, target_spec *t)
{
    memset(t, 0, sizeof *t);
    const char *p = target + strspn(target, " ");
    size_t flen = strcspn(p, " ");
    t->backend = find_backend(p, flen);
    if (flen == 0 || flen >= sizeof t->text / 2 || strlen(target) >= sizeof t->text / 2) {
        t->code = TEX_EINVAL;
        snprintf(t->why, sizeof t->why,
                 "unknown target '%s' (expected \"cpu\", \"cpu -threads=N\", \"c\" or \"cuda\")",
                 target);
        return;
    }
    memcpy(t->text, p, flen);
    if (!t->backend) {
        t->code = TEX_EINVAL;
        snprintf(t->why, sizeof t->why,
                 "unknown target '%s' (expected \"cpu\", \"cpu -threads=N\", \"c\" or \"cuda\")",
                 target);
        return;
    }
    bool is_cpu = flen == 3;
    for (p += flen; *(p += strspn(p, " ")); p += strcspn(p, " ")) {
        size_t wlen = strcspn(p, " ");
        bool strict = wlen == strlen(STRICT_FLOAT) && strncmp(p, STRICT_FLOAT, wlen) == 0;
        t->strict_float |= strict;
        bool known = strict || (t->backend == &texi_backend_cuda
                                    ? parse_cuda_option(p, wlen)
                                    : is_cpu && parse_threads(p, wlen, &t->threads));
        if (!known) {
            t->code = TEX_EINVAL;
            snprintf(t->why, sizeof t->why, "target '%s': bad option '%.*s'%s", target, (int)wlen,
                     p,
                     t->backend == &texi_backend_cuda
                         ? " (expected \"-emit-only\", \"-arch=sm_80\" / \"-arch=sm_90\" or "
                           "\"-strict-float\")"
                     : is_cpu ? " (expected \"-threads=N\" with N >= 1 or \"-strict-float\")"
                              : " (\"-strict-float\" is the only one)");
            return;
        }
        strcat(t->text, " ");
        strncat(t->text, p, wlen);
    }
}

int tex_target_available(const char *target)
{
    if (!target)
        return 0;
    target_spec t;
    parse_target(target, &t);
    return t.code == 0 && t.backend->available(t.text) ? 1 : 0;
}

void tex_kernel_free(tex_kernel *k)
{
    if (!k)
        return;
    texi_kernel_fini(k);
    free(k);
}

tex_kernel *tex_build(tex_func *f, const char *target)
{
    if (!f)
        return NULL;
    if (!target) {
        texi_error(f->ctx, TEX_EMISUSE, "tex_build: NULL target");
        return NULL;
    }
    target_spec t;
    parse_target(target, &t);
    if (t.code != 0) {
        texi_error(f->ctx, t.code, "tex_build: %s", t.why);
        return NULL;
    }
    tex_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        texi_error(f->ctx, TEX_ENOMEM, "tex_build: out of memory");
        return NULL;
    }
    k->threads = t.threads ? t.threads : threads_from_env();
    k->strict_float = t.strict_float;
    k->name = strdup(f->name);
    k->target = strdup(t.text);
    if (!k->name || !k->target || !texi_kernel_signature(k, f)) {
        tex_kernel_free(k);
        texi_error(f->ctx, TEX_ENOMEM, "tex_build: out of memory");
        return NULL;
    }
    k->backend = t.backend;
    if (t.backend->build(k, f) != 0) {
        tex_kernel_free(k);
        return NULL;
    }
    return k;
}

/* ------------------------------------------------------------ calls */

/* Flattens checked arguments as backend.h's call takes them and runs it. */
static int dispatch(tex_kernel *k, const tex_value args[], const texi_eval_value *sizes,
                    void **ptrs, texi_eval_value *scalars)
{
    int t = 0, s = 0;
    for (int i = 0; i < k->n_params; i++) {
        if (k->params[i].kind == TEX_ARG_VAR) {
            scalars[s] = sizes[s]; /* the VAR params open the size table */
            s++;
            continue;
        }
        const DLTensor *d = args[i].t;
        ptrs[t++] = d->data ? (char *)d->data + d->byte_offset : NULL;
    }
    for (int j = 0; j < k->n_extra; j++)
        scalars[s++] = sizes[k->extra_size_index[j]];
    return k->backend->call(k, ptrs, scalars);
}

int tex_kernel_call(tex_kernel *k, int n, const tex_value args[])
{
    if (!k)
        return TEX_EMISUSE;
    if (!k->callable)
        return texi_kernel_fail(
            k, TEX_EUNAVAILABLE,
            "built for target '%s', which gives source only and cannot be called", k->target);
    if (n != k->n_params)
        return texi_kernel_fail(k, TEX_EINVAL, "expected %d arguments, got %d", k->n_params, n);
    if (n > 0 && !args)
        return texi_kernel_fail(k, TEX_EMISUSE, "NULL argument array");
    int cap = k->n_sizes + k->n_params + 1;
    texi_eval_value small_v[SMALL], small_scalars[SMALL];
    bool small_b[SMALL] = {false};
    void *small_p[SMALL];
    bool heap = cap > SMALL;
    texi_eval_value *sizes = heap ? calloc((size_t)cap, sizeof *sizes) : small_v;
    bool *bound = heap ? calloc((size_t)cap, sizeof *bound) : small_b;
    texi_eval_value *scalars = heap ? calloc((size_t)cap, sizeof *scalars) : small_scalars;
    void **ptrs = heap ? calloc((size_t)cap, sizeof(void *)) : small_p;
    int rc = TEX_ENOMEM;
    if (sizes && bound && scalars && ptrs) {
        rc = texi_kernel_check_args(k, args, sizes, bound);
        if (rc == 0)
            rc = dispatch(k, args, sizes, ptrs, scalars);
    } else {
        texi_kernel_fail(k, TEX_ENOMEM, "out of memory");
    }
    if (heap) {
        free(sizes);
        free(bound);
        free(scalars);
        free(ptrs);
    }
    return rc;
}

int tex_kernel_call_tensors(tex_kernel *k, int n, DLTensor *const args[])
{
    if (!k)
        return TEX_EMISUSE;
    for (int i = 0; i < k->n_params; i++)
        if (k->params[i].kind == TEX_ARG_VAR)
            return texi_kernel_fail(k, TEX_EINVAL,
                                    "parameter %d ('%s') is a scalar: call with tex_kernel_call", i,
                                    k->params[i].name);
    if (n != k->n_params)
        return texi_kernel_fail(k, TEX_EINVAL, "expected %d arguments, got %d", k->n_params, n);
    if (n > 0 && !args)
        return texi_kernel_fail(k, TEX_EMISUSE, "NULL argument array");
    tex_value small[SMALL] = {{.kind = TEX_VAL_TENSOR}};
    tex_value *vals = n > SMALL ? calloc((size_t)n, sizeof *vals) : small;
    if (!vals)
        return texi_kernel_fail(k, TEX_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        vals[i] = (tex_value){.kind = TEX_VAL_TENSOR, .t = args[i]};
    int rc = tex_kernel_call(k, n, vals);
    if (vals != small)
        free(vals);
    return rc;
}

/* ------------------------------------------------------------ source and export */

const char *tex_kernel_source(const tex_kernel *k)
{
    return k ? k->source : NULL;
}

const char *tex_kernel_ptx(const tex_kernel *k)
{
    if (!k || k->backend != &texi_backend_cuda || !k->impl)
        return NULL;
    return ((const texi_cuda_kernel *)k->impl)->ptx;
}

const char *tex_kernel_errmsg(const tex_kernel *k)
{
    return k ? k->errmsg : "tex_kernel_errmsg: NULL kernel";
}

/* The kernel's message buffer: kernels are malloc'ed, never const objects,
 * so a const handle's buffer may be written (export takes a const kernel). */
static tex_kernel *writable(const tex_kernel *k)
{
    tex_kernel *w;
    memcpy(&w, &k, sizeof w);
    return w;
}

static int write_text(tex_kernel *k, const char *prefix, const char *ext, const char *text)
{
    size_t len = strlen(prefix) + strlen(ext) + 1;
    char *path = malloc(len);
    if (!path)
        return texi_kernel_fail(k, TEX_ENOMEM, "tex_kernel_export: out of memory");
    snprintf(path, len, "%s%s", prefix, ext);
    FILE *fp = fopen(path, "wb");
    size_t n = strlen(text);
    bool ok = fp && fwrite(text, 1, n, fp) == n;
    if (fp && fclose(fp) != 0)
        ok = false;
    int rc = ok ? 0
                : texi_kernel_fail(k, TEX_EINVAL, "tex_kernel_export: cannot write '%s': %s", path,
                                   strerror(errno));
    free(path);
    return rc;
}

int tex_kernel_export(const tex_kernel *k, const char *path_prefix)
{
    if (!k)
        return TEX_EMISUSE;
    tex_kernel *w = writable(k);
    if (!path_prefix || !*path_prefix)
        return texi_kernel_fail(w, TEX_EINVAL, "tex_kernel_export: empty path prefix");
    if (!k->header || !k->source)
        return texi_kernel_fail(
            w, TEX_EUNAVAILABLE,
            "tex_kernel_export: kernels built for target '%s' cannot be exported "
            "(only \"c\" and \"cpu\" ones)",
            k->target);
    int rc = write_text(w, path_prefix, ".c", k->source);
    return rc != 0 ? rc : write_text(w, path_prefix, ".h", k->header);
}
