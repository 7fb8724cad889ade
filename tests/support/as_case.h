/*
 * as_case.h: the workloads of the automatic-scheduler tests
 * (tests/unit/test_auto_schedule*.c). Header-only; include it after tt.h and
 * support/opcheck.h (or support/ops.h).
 *
 * An as_case is an ops.h workload in a fresh context with up to six sizes
 * d[0..n) (symbolic when asked and the size is not 1). attach_of and
 * n_roots read an automatic schedule's stages: where the stage of a given
 * name is computed, and how many compute stages are kernels (at the root).
 */
#ifndef TEX_TESTS_SUPPORT_AS_CASE_H
#define TEX_TESTS_SUPPORT_AS_CASE_H

#include "schedule/schedule.h"

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

#endif
