/*
 * autosched.h: the harness of the automatic scheduler's tests
 * (tests/unit/test_auto_schedule*.c). Header-only; include it after tt.h.
 * A case is an ops.h workload with its sizes (constant or symbolic);
 * case_check auto-schedules its output (a schedule the rules made, not the
 * plain one tex_auto_schedule falls back to), JIT-compiles it and compares it
 * with the oracle on random non-zero inputs with the output poisoned;
 * attach_of, n_roots and tensorized read the resulting schedule.
 */
#ifndef TEX_TESTS_SUPPORT_AUTOSCHED_H
#define TEX_TESTS_SUPPORT_AUTOSCHED_H

#include "support/opcheck.h"
#include "schedule/schedule.h"
#include "util/host.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A workload named name with the sizes given: dims[k] (symbolic when
 * sym[k]) become w's sizes in order. */
typedef struct {
    ops_wl w;
    tex_ctx *ctx;
    tex_expr *d[6];
} as_case;

static inline void case_init(as_case *c, const char *name, int n, const int64_t dims[], bool sym)
{
    c->ctx = tex_ctx_new();
    ops_init(&c->w, c->ctx, name);
    static const char *const names[6] = {"d0", "d1", "d2", "d3", "d4", "d5"};
    for (int k = 0; k < n; k++)
        c->d[k] = ops_size(&c->w, names[k], dims[k], sym && dims[k] > 1);
}

/* Auto-schedules c's output for target, checks the kernel against the
 * oracle; returns the schedule (NULL after a failure, reported). */
static inline tex_schedule *case_check(as_case *c, tex_tensor *out, const char *target)
{
    c->w.out = out;
    if (!out) {
        TT_FAILF("%s: building the operators failed: %s", c->w.name, tex_errmsg(c->ctx));
        return NULL;
    }
    tex_schedule *s = tex_auto_schedule(c->ctx, 1, &out, target);
    if (!s) {
        TT_FAILF("%s: tex_auto_schedule failed: %s", c->w.name, tex_errmsg(c->ctx));
        return NULL;
    }
    if (strstr(tex_warnmsg(c->ctx), "tex_auto_schedule")) { /* fell back to -plain */
        TT_FAILF("%s: %s", c->w.name, tex_warnmsg(c->ctx));
        return NULL;
    }
    if (ops_check_jit(&c->w, s, target, 7, NULL, true) != 0) {
        TT_FAILF("%s: the auto-scheduled kernel differs from the oracle (%s)", c->w.name, target);
        return NULL;
    }
    return s;
}

/* s's kernel built for target (NULL after a failure, reported); free it
 * with tex_kernel_free. */
static inline tex_kernel *case_kernel(as_case *c, tex_schedule *s, const char *target)
{
    char why[512];
    tex_func *f = ops_lower(&c->w, s, why, sizeof why);
    tex_kernel *k = f ? tex_build(f, target) : NULL;
    if (!k)
        TT_FAILF("%s: %s", c->w.name, f ? tex_errmsg(c->ctx) : why);
    return k;
}

/* Whether the C source of s's kernel built for target contains `text`. */
static inline bool kernel_source_has(as_case *c, tex_schedule *s, const char *target,
                                     const char *text)
{
    tex_kernel *k = case_kernel(c, s, target);
    bool has = k && strstr(tex_kernel_source(k), text) != NULL;
    tex_kernel_free(k);
    return has;
}

/* The length of the C source of s's kernel built for target (0 after a
 * failure, reported). */
static inline size_t kernel_source_length(as_case *c, tex_schedule *s, const char *target)
{
    tex_kernel *k = case_kernel(c, s, target);
    size_t n = k ? strlen(tex_kernel_source(k)) : 0;
    tex_kernel_free(k);
    return n;
}

/* The attach kind of the stage named name in s (-1 if none is). */
static inline int attach_of(tex_schedule *s, const char *name)
{
    for (int i = 0; i < s->n_stages; i++)
        if (strcmp(s->stages[i]->tensor->name, name) == 0)
            return (int)s->stages[i]->attach;
    return -1;
}

/* The number of kernels (compute stages at the root) of s. */
static inline int n_roots(tex_schedule *s)
{
    int n = 0;
    for (int i = 0; i < s->n_stages; i++)
        n += s->stages[i]->op->kind == TEXI_OP_COMPUTE && s->stages[i]->attach == TEXI_ATTACH_ROOT;
    return n;
}

/* Whether the stage named name in s is tensorized (calls an intrinsic). */
static inline bool tensorized(tex_schedule *s, const char *name)
{
    for (int i = 0; i < s->n_stages; i++)
        if (strcmp(s->stages[i]->tensor->name, name) == 0)
            return s->stages[i]->intrin != NULL;
    return false;
}

/* Whether the tiles of lone GEMM-like output `name` are tensorized: those
 * of its local cache_write "name.local", or, where the tiles run in the
 * output's own memory (a whole reduction of at most 256, NR columns), of
 * the output itself. */
static inline bool tensorized_output(tex_schedule *s, const char *name)
{
    char local[64];
    snprintf(local, sizeof local, "%s.local", name);
    return attach_of(s, local) >= 0 ? tensorized(s, local) : tensorized(s, name);
}

/* Whether the automatic scheduler has a CPU GEMM built-in on this host
 * (AVX2 or AVX-512), with the built-in's tile width in *nr. */
static inline bool host_gemm_builtin(int64_t *nr)
{
    int vb = texi_host_vector_bytes();
    *nr = vb >= 64 ? 64 : 16;
    return vb >= 32;
}

/* tex_auto_schedule(ctx, n, outs, target) with TEX_DUMP=fusion, its dump
 * (stderr) read into text[0, cap); the schedule, NULL after a failure
 * (reported; text then may be empty). */
static inline tex_schedule *dump_fusion(tex_ctx *ctx, int n, tex_tensor *const outs[],
                                        const char *target, char *text, size_t cap)
{
    char path[] = "/tmp/tex-test-fusion-dump-XXXXXX";
    int fd = mkstemp(path);
    memset(text, 0, cap);
    if (fd < 0) {
        TT_FAILF("mkstemp failed");
        return NULL;
    }
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    setenv("TEX_DUMP", "fusion", 1);
    tex_schedule *s = tex_auto_schedule(ctx, n, outs, target);
    unsetenv("TEX_DUMP");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t got = pread(fd, text, cap - 1, 0);
    close(fd);
    unlink(path);
    TT_CHECK(s != NULL);
    TT_CHECK(got > 0);
    return s;
}

#endif
