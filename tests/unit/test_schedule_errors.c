/*
 * Every illegal schedule request the primitives decide (docs/api.md, rules 1, 5, 6):
 * each must return TEX_EINVAL (TEX_EMISUSE for NULL handles), record a message
 * naming the call, the stage and the axis, and leave the schedule exactly as
 * it was. "Exactly" is checked twice: a structural snapshot of every stage
 * (op, iters, leaf order, relations, attributes, attach point, storage
 * flags) and tex_schedule_str, taken before and after the failed call. Each
 * test then applies a legal step to show the schedule still works.
 */
#include "schedule/schedule.h"
#include "tt.h"

#include <stdio.h>
#include <string.h>

static tex_ctx *ctx;

static tex_expr *I(int64_t v)
{
    return tex_int(ctx, v);
}

/* Everything a primitive could change, as text (malloc'ed). */
static char *snapshot(const tex_schedule *s)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
#define PUT(...) len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, __VA_ARGS__)
    PUT("%d stages\n", s->n_stages);
    for (int i = 0; i < s->n_stages; i++) {
        const tex_stage *st = s->stages[i];
        PUT("%s op=%p attach=%d/%s/%s scope=%d db=%d out=%d cache=%d n_root=%d\n leaf:",
            st->tensor->name, (void *)st->op, (int)st->attach,
            st->attach_stage ? st->attach_stage->tensor->name : "-",
            st->attach_iv ? st->attach_iv->name : "-", (int)st->scope, st->double_buffer,
            st->is_output, st->is_cache, st->n_root);
        for (int k = 0; k < st->n_leaf; k++)
            PUT(" %s@%p", st->leaf[k]->name, (void *)st->leaf[k]);
        PUT("\n all:");
        for (int k = 0; k < st->n_all; k++)
            PUT(" %s=%d/%d", st->all[k]->name, (int)st->attr[k].for_kind, st->attr[k].thread_tag);
        PUT("\n rel:");
        for (int k = 0; k < st->n_rel; k++)
            PUT(" %d(%p,%p,%p,%p,%d)", (int)st->rel[k].kind, (void *)st->rel[k].parent,
                (void *)st->rel[k].outer, (void *)st->rel[k].inner, (void *)st->rel[k].fused,
                (int)st->rel[k].tail);
        PUT("\n align:");
        for (int d = 0; d < st->tensor->ndim; d++)
            PUT(" %d/%d", st->align_factor[d], st->align_offset[d]);
        PUT("\n");
    }
#undef PUT
    return buf;
}

static char *snap_before, *str_before;

static void begin(tex_schedule *s)
{
    snap_before = snapshot(s);
    str_before = tex_schedule_str(s);
}

/* Checks a failed call: its code, the recorded code and message, an
 * unchanged schedule. subs: NULL-terminated substrings of the message. */
static void end_fail(tex_schedule *s, int rc, int code, const char *const subs[], const char *what,
                     int line)
{
    if (rc != code)
        TT_FAILF("line %d: %s returned %d, expected %d (%s)", line, what, rc, code,
                 tex_errmsg(ctx));
    if (tex_errcode(ctx) != code)
        TT_FAILF("line %d: %s recorded %d, expected %d", line, what, tex_errcode(ctx), code);
    for (int i = 0; subs[i]; i++)
        if (!strstr(tex_errmsg(ctx), subs[i]))
            TT_FAILF("line %d: %s: message \"%s\" lacks \"%s\"", line, what, tex_errmsg(ctx),
                     subs[i]);
    char *snap = snapshot(s), *str = tex_schedule_str(s);
    if (strcmp(snap, snap_before) != 0)
        TT_FAILF("line %d: %s changed the schedule:\n%s\n-- now --\n%s", line, what, snap_before,
                 snap);
    if (!str || !str_before || strcmp(str, str_before) != 0)
        TT_FAILF("line %d: %s changed tex_schedule_str:\n%s\n-- now --\n%s", line, what,
                 str_before ? str_before : "(null)", str ? str : "(null)");
    free(snap);
    free(str);
    free(snap_before);
    free(str_before);
    tex_clear_error(ctx);
}

#define FAIL(s, expr, code, ...)                                                                   \
    do {                                                                                           \
        begin(s);                                                                                  \
        int fail_rc_ = (expr);                                                                     \
        end_fail(s, fail_rc_, code, (const char *const[]){__VA_ARGS__, NULL}, #expr, __LINE__);    \
    } while (0)

/* A creating call's result as a code: 0 for non-NULL, else the recorded code. */
static int made(const void *p)
{
    return p ? 0 : tex_errcode(ctx);
}

static const char *leaves(tex_stage *st)
{
    static char buf[1024];
    buf[0] = 0;
    for (int i = 0; i < tex_stage_naxes(st); i++) {
        if (i)
            strcat(buf, " ");
        strcat(buf, tex_stage_axis(st, i)->name);
    }
    return buf;
}

/* A -> B[i,j] = A[i,j] + 1 -> C[i] = sum_k B[i,k] (reduction) and
 * D[i,j] = B[i,j] * 2 (output); E[i] = C[i] + 1 (output). */
typedef struct {
    tex_tensor *A, *B, *C, *D, *E;
    tex_iter *i, *j, *k, *x, *y;
    tex_schedule *s;
    tex_stage *sa, *sb, *sc, *sd, *se;
} graph;

static graph make_graph(void)
{
    graph g;
    g.A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){16, 12});
    g.i = tex_axis(ctx, "i", I(16));
    g.j = tex_axis(ctx, "j", I(12));
    g.k = tex_reduce_axis(ctx, "k", I(12));
    g.B = tex_compute(ctx, "B", 2, (tex_iter *[]){g.i, g.j},
                      tex_add(TEX_AT(g.A, tex_iv(g.i), tex_iv(g.j)), tex_const(ctx, TEX_F32, 1)));
    g.C = tex_compute(ctx, "C", 1, &g.i, tex_sum(TEX_AT(g.B, tex_iv(g.i), tex_iv(g.k)), 1, &g.k));
    g.x = tex_axis(ctx, "x", I(16));
    g.y = tex_axis(ctx, "y", I(12));
    g.D = tex_compute(ctx, "D", 2, (tex_iter *[]){g.x, g.y},
                      tex_mul(TEX_AT(g.B, tex_iv(g.x), tex_iv(g.y)), tex_const(ctx, TEX_F32, 2)));
    g.E = tex_compute(ctx, "E", 1, &g.x,
                      tex_add(TEX_AT(g.C, tex_iv(g.x)), tex_const(ctx, TEX_F32, 1)));
    g.s = tex_schedule_new(ctx, 2, (tex_tensor *[]){g.D, g.E});
    g.sa = tex_stage_of(g.s, g.A);
    g.sb = tex_stage_of(g.s, g.B);
    g.sc = tex_stage_of(g.s, g.C);
    g.sd = tex_stage_of(g.s, g.D);
    g.se = tex_stage_of(g.s, g.E);
    return g;
}

/* ----------------------------------------------------------- creation */

static void test_schedule_new_errors(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    TT_CHECK(tex_schedule_new(NULL, 1, &g.D) == NULL);
    TT_CHECK(tex_schedule_new(ctx, 0, &g.D) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    tex_clear_error(ctx);
    TT_CHECK(tex_schedule_new(ctx, 1, NULL) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    tex_clear_error(ctx);
    TT_CHECK(tex_schedule_new(ctx, 2, (tex_tensor *[]){g.D, NULL}) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    tex_clear_error(ctx);
    TT_CHECK(tex_schedule_new(ctx, 2, (tex_tensor *[]){g.D, g.D}) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'D'") && strstr(tex_errmsg(ctx), "twice"));
    tex_clear_error(ctx);
    TT_CHECK(tex_schedule_new(ctx, 1, &g.A) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'A'") && strstr(tex_errmsg(ctx), "placeholder"));
    tex_clear_error(ctx);
    tex_ctx *other = tex_ctx_new();
    TT_CHECK(tex_schedule_new(other, 1, &g.D) == NULL);
    TT_EQ_INT(tex_errcode(other), TEX_EMISUSE);
    tex_ctx_free(other);

    // accessors
    TT_CHECK(tex_stage_axis(g.sb, 2) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_stage_axis") && strstr(tex_errmsg(ctx), "'B'"));
    tex_clear_error(ctx);
    TT_CHECK(tex_stage_axis(g.sb, -1) == NULL);
    TT_CHECK(tex_op_reduce_axis(g.sb, 0) == NULL);
    tex_clear_error(ctx);
    TT_CHECK(tex_stage_of(g.s, NULL) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    tex_clear_error(ctx);
    TT_CHECK(tex_stage_axis(NULL, 0) == NULL && tex_op_axis(NULL, 0) == NULL);
    tex_ctx_free(ctx);
}

/* -------------------------------------------------------------- split */

static void test_split_errors(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    tex_iter *o, *in;
    TT_EQ_INT(tex_split(NULL, g.i, I(4), &o, &in), TEX_EMISUSE);
    FAIL(g.s, tex_split(g.sb, NULL, I(4), &o, &in), TEX_EMISUSE, "tex_split", "'B'");
    FAIL(g.s, tex_split(g.sb, g.i, NULL, &o, &in), TEX_EMISUSE, "tex_split", "'B'", "'i'",
         "factor");
    FAIL(g.s, tex_split(g.sb, g.i, I(0), &o, &in), TEX_EINVAL, "tex_split", "'B'", "'i'",
         "positive");
    FAIL(g.s, tex_split(g.sb, g.i, I(-3), &o, &in), TEX_EINVAL, "'B'", "'i'", "positive");
    FAIL(g.s, tex_split(g.sb, g.i, tex_const(ctx, TEX_F32, 2), &o, &in), TEX_EINVAL, "'B'", "'i'",
         "integer");
    FAIL(g.s, tex_split(g.sb, g.i, tex_add(tex_iv(g.j), I(1)), &o, &in), TEX_EINVAL, "'B'", "'i'",
         "symbolic sizes");
    FAIL(g.s, tex_split_nparts(g.sb, g.i, I(0), &o, &in), TEX_EINVAL, "tex_split_nparts", "'B'",
         "nparts");
    // the axis of another stage (x belongs to D), an axis of no stage
    FAIL(g.s, tex_split(g.sb, g.x, I(4), &o, &in), TEX_EINVAL, "'x'", "'D'", "'B'");
    tex_iter *stray = tex_axis(ctx, "stray", I(3));
    FAIL(g.s, tex_split(g.sb, stray, I(4), &o, &in), TEX_EINVAL, "'stray'", "'B'");
    FAIL(g.s, tex_split(g.sa, g.i, I(4), &o, &in), TEX_EINVAL, "'A'", "placeholder");
    // not a leaf any more
    TT_EQ_INT(tex_split(g.sb, g.i, I(4), &o, &in), 0);
    FAIL(g.s, tex_split(g.sb, g.i, I(2), NULL, NULL), TEX_EINVAL, "tex_split", "'i'", "'B'",
         "not a leaf");
    // annotated or attach point
    TT_EQ_INT(tex_parallel(g.sb, o), 0);
    FAIL(g.s, tex_split(g.sb, o, I(2), NULL, NULL), TEX_EINVAL, "'i.outer'", "'B'", "parallel");
    TT_EQ_INT(tex_compute_at(g.sc, g.se, g.x), 0);
    FAIL(g.s, tex_split(g.se, g.x, I(2), NULL, NULL), TEX_EINVAL, "'x'", "'E'", "attach point",
         "'C'");
    // tails
    FAIL(g.s, tex_split_tail(g.sc, g.k, I(5), TEX_TAIL_SHIFT_INWARDS, NULL, NULL), TEX_EINVAL,
         "tex_split_tail", "'C'", "'k'", "SHIFT_INWARDS");
    FAIL(g.s, tex_split_tail(g.sc, g.i, I(5), TEX_TAIL_SHIFT_INWARDS, NULL, NULL), TEX_EINVAL,
         "'C'", "'i'", "data-parallel");
    FAIL(g.s, tex_split_tail(g.sd, g.y, I(13), TEX_TAIL_SHIFT_INWARDS, NULL, NULL), TEX_EINVAL,
         "'D'", "'y'", "extent 12, factor 13");
    FAIL(g.s, tex_split_tail(g.sd, g.y, I(4), (tex_tail)42, NULL, NULL), TEX_EINVAL, "'D'", "'y'",
         "tail");
    // after all that, legal splits still work
    TT_EQ_INT(tex_split_tail(g.sd, g.y, I(5), TEX_TAIL_SHIFT_INWARDS, &o, &in), 0);
    TT_EQ_STR(leaves(g.sd), "x y.outer y.inner");
    TT_EQ_INT(tex_split(g.sc, g.k, I(5), &o, &in), 0);
    TT_EQ_STR(leaves(g.sc), "i k.outer k.inner");
    tex_ctx_free(ctx);
}

/* A constant factor (or number of parts) must keep the split's index
 * arithmetic within the axis's index type, int32 here: the factor itself,
 * and the extent plus the factor. A symbolic extent counts as 1. */
static void test_split_factor_limits(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    tex_iter *a, *b, *c, *d;
    const int64_t max = INT32_MAX;
    FAIL(g.s, tex_split(g.sb, g.i, tex_int(ctx, max + 1), &a, &b), TEX_EINVAL, "tex_split", "'B'",
         "'i'", "too large", "i32");
    FAIL(g.s, tex_split(g.sb, g.i, tex_int(ctx, INT64_MAX), &a, &b), TEX_EINVAL, "'i'",
         "too large");
    // extent 16: 16 - 1 + factor must not pass INT32_MAX
    FAIL(g.s, tex_split(g.sb, g.i, tex_int(ctx, max - 14), &a, &b), TEX_EINVAL, "'i'", "too large");
    FAIL(g.s, tex_split_nparts(g.sb, g.i, tex_int(ctx, max), &a, &b), TEX_EINVAL,
         "tex_split_nparts", "'i'", "nparts", "too large");
    FAIL(g.s, tex_tile(g.sb, g.i, g.j, I(2), tex_int(ctx, max + 1), &a, &b, &c, &d), TEX_EINVAL,
         "tex_tile", "'j'", "too large");
    TT_EQ_INT(tex_split(g.sb, g.i, tex_int(ctx, max - 15), &a, &b), 0);
    TT_EQ_INT(tex_split(g.sd, g.x, I(1), &a, &b), 0);
    // a symbolic extent: the factor alone must fit
    tex_expr *n = tex_var(ctx, "n", TEX_I32);
    tex_tensor *P = tex_placeholder(ctx, "P", TEX_F32, 1, &n);
    tex_iter *v = tex_axis(ctx, "v", n);
    tex_tensor *Q = tex_compute(ctx, "Q", 1, &v, tex_neg(TEX_AT(P, tex_iv(v))));
    tex_schedule *s = tex_schedule_new(ctx, 1, &Q);
    tex_stage *sq = tex_stage_of(s, Q);
    FAIL(s, tex_split(sq, v, tex_int(ctx, max + 1), &a, &b), TEX_EINVAL, "'Q'", "'v'", "too large");
    TT_EQ_INT(tex_split(sq, v, tex_int(ctx, max), &a, &b), 0);
    tex_ctx_free(ctx);
}

static void test_tile_errors(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    tex_iter *a, *b, *c, *d;
    FAIL(g.s, tex_tile(g.sb, g.i, g.i, I(2), I(2), &a, &b, &c, &d), TEX_EINVAL, "tex_tile", "'B'",
         "'i'");
    // the second factor is bad: the first split must not have happened
    FAIL(g.s, tex_tile(g.sb, g.i, g.j, I(2), I(0), &a, &b, &c, &d), TEX_EINVAL, "tex_tile", "'B'",
         "'j'", "positive");
    FAIL(g.s, tex_tile(g.sb, g.i, g.y, I(2), I(2), &a, &b, &c, &d), TEX_EINVAL, "'y'", "'D'");
    TT_EQ_INT(tex_tile(g.sb, g.i, g.j, I(2), I(3), &a, &b, &c, &d), 0);
    TT_EQ_STR(leaves(g.sb), "i.outer j.outer i.inner j.inner");
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------- fuse, reorder */

static void test_fuse_errors(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    tex_iter *f, *o, *in;
    FAIL(g.s, tex_fuse(g.sb, g.j, g.i, &f), TEX_EINVAL, "tex_fuse", "'B'", "'j'", "'i'",
         "reversed");
    FAIL(g.s, tex_fuse(g.sb, g.i, g.i, &f), TEX_EINVAL, "tex_fuse", "'B'", "'i'");
    FAIL(g.s, tex_fuse(g.sc, g.i, g.k, &f), TEX_EINVAL, "'C'", "reduce", "'k'", "'i'");
    FAIL(g.s, tex_fuse(g.sb, g.i, NULL, &f), TEX_EMISUSE, "tex_fuse", "'B'");
    TT_EQ_INT(tex_split(g.sb, g.j, I(4), &o, &in), 0);
    FAIL(g.s, tex_fuse(g.sb, g.i, in, &f), TEX_EINVAL, "'i'", "'j.inner'", "not adjacent");
    FAIL(g.s, tex_fuse(g.sb, g.i, g.j, &f), TEX_EINVAL, "'j'", "not a leaf");
    FAIL(g.s, tex_fuse(g.sa, g.i, g.j, &f), TEX_EINVAL, "'A'", "placeholder");
    TT_EQ_INT(tex_fuse(g.sb, g.i, o, &f), 0);
    TT_EQ_STR(leaves(g.sb), "i.j.outer.fused j.inner");
    tex_ctx_free(ctx);
}

static void test_reorder_errors(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    FAIL(g.s, tex_reorder(g.sb, 2, (tex_iter *[]){g.j, g.j}), TEX_EINVAL, "tex_reorder", "'B'",
         "'j'", "twice");
    FAIL(g.s, tex_reorder(g.sb, 0, (tex_iter *[]){g.j}), TEX_EINVAL, "tex_reorder", "'B'");
    FAIL(g.s, tex_reorder(g.sb, 1, NULL), TEX_EINVAL, "tex_reorder", "'B'");
    FAIL(g.s, tex_reorder(g.sb, 2, (tex_iter *[]){g.j, g.x}), TEX_EINVAL, "'x'", "'D'", "'B'");
    FAIL(g.s, tex_reorder(g.sb, 3, (tex_iter *[]){g.j, g.i, g.j}), TEX_EINVAL, "'B'");
    tex_iter *o, *in;
    TT_EQ_INT(tex_split(g.sb, g.i, I(4), &o, &in), 0);
    FAIL(g.s, tex_reorder(g.sb, 2, (tex_iter *[]){g.j, g.i}), TEX_EINVAL, "'i'", "'B'",
         "not a leaf");
    FAIL(g.s, tex_reorder(g.sb, 2, (tex_iter *[]){g.j, NULL}), TEX_EMISUSE, "'B'");
    TT_EQ_INT(tex_reorder(g.sb, 3, (tex_iter *[]){g.j, in, o}), 0);
    TT_EQ_STR(leaves(g.sb), "j i.inner i.outer");
    tex_ctx_free(ctx);
}

/* ---------------------------------------------------------- annotations */

static void test_annotation_errors(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    FAIL(g.s, tex_parallel(g.sc, g.k), TEX_EINVAL, "tex_parallel", "'C'", "'k'", "reduction");
    FAIL(g.s, tex_vectorize(g.sc, g.k), TEX_EINVAL, "tex_vectorize", "'C'", "'k'", "reduction");
    FAIL(g.s, tex_vectorize_reduce(g.sb, g.i), TEX_EINVAL, "tex_vectorize_reduce", "'B'", "'i'",
         "data-parallel");
    FAIL(g.s, tex_bind(g.sc, g.k, TEX_BLOCK_X), TEX_EINVAL, "tex_bind", "'C'", "'k'", "blockIdx.x");
    FAIL(g.s, tex_bind(g.sc, g.k, TEX_VTHREAD), TEX_EINVAL, "tex_bind", "'C'", "'k'");
    FAIL(g.s, tex_bind(g.sb, g.i, (tex_thread_tag)17), TEX_EINVAL, "tex_bind", "'B'", "'i'");
    FAIL(g.s, tex_parallel(g.sa, g.i), TEX_EINVAL, "tex_parallel", "'A'");
    FAIL(g.s, tex_unroll(g.sb, g.x), TEX_EINVAL, "tex_unroll", "'B'", "'x'", "'D'");
    FAIL(g.s, tex_vectorize(g.sb, NULL), TEX_EMISUSE, "tex_vectorize", "'B'");
    tex_iter *ko, *ki;
    TT_EQ_INT(tex_split(g.sc, g.k, I(4), &ko, &ki), 0);
    FAIL(g.s, tex_parallel(g.sc, ko), TEX_EINVAL, "'C'", "'k.outer'", "reduction");
    // conflicting annotations, the same tag twice in one stage
    TT_EQ_INT(tex_bind(g.sb, g.i, TEX_THREAD_X), 0);
    FAIL(g.s, tex_bind(g.sb, g.j, TEX_THREAD_X), TEX_EINVAL, "tex_bind", "'B'", "'j'", "'i'",
         "threadIdx.x");
    FAIL(g.s, tex_vectorize(g.sb, g.i), TEX_EINVAL, "tex_vectorize", "'B'", "'i'", "threadIdx.x");
    FAIL(g.s, tex_bind(g.sb, g.i, TEX_THREAD_Y), TEX_EINVAL, "'B'", "'i'", "already");
    TT_EQ_INT(tex_parallel(g.sd, g.x), 0);
    FAIL(g.s, tex_unroll(g.sd, g.x), TEX_EINVAL, "tex_unroll", "'D'", "'x'", "parallel");
    // legal: the same tag in another stage; a reduce axis to threadIdx; a
    // reduce axis to tex_vectorize_reduce (a vector reduction on the CPU)
    TT_EQ_INT(tex_bind(g.sc, g.i, TEX_THREAD_X), 0);
    TT_EQ_INT(tex_bind(g.sc, ki, TEX_THREAD_Y), 0);
    TT_EQ_INT(tex_vectorize_reduce(g.sc, ko), 0);
    tex_ctx_free(ctx);
}

static void test_storage_errors(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    FAIL(g.s, tex_set_scope(g.sd, TEX_SCOPE_SHARED), TEX_EINVAL, "tex_set_scope", "'D'", "output");
    FAIL(g.s, tex_set_scope(g.sb, (tex_scope)9), TEX_EINVAL, "tex_set_scope", "'B'", "scope");
    FAIL(g.s, tex_set_scope(g.sa, TEX_SCOPE_LOCAL), TEX_EINVAL, "'A'", "placeholder");
    FAIL(g.s, tex_storage_align(g.sd, g.x, 4, 1), TEX_EINVAL, "tex_storage_align", "'D'", "output");
    FAIL(g.s, tex_storage_align(g.sb, g.i, 0, 0), TEX_EINVAL, "tex_storage_align", "'B'", "'i'",
         "factor");
    FAIL(g.s, tex_storage_align(g.sb, g.i, 4, 4), TEX_EINVAL, "'B'", "'i'", "offset");
    FAIL(g.s, tex_storage_align(g.sb, g.i, 4, -1), TEX_EINVAL, "'B'", "'i'", "offset");
    FAIL(g.s, tex_storage_align(g.sc, g.k, 4, 1), TEX_EINVAL, "'C'", "'k'", "data-parallel axis");
    FAIL(g.s, tex_storage_align(g.sb, g.x, 4, 1), TEX_EINVAL, "'B'", "'x'");
    FAIL(g.s, tex_storage_align(g.sb, NULL, 4, 1), TEX_EMISUSE, "'B'");
    FAIL(g.s, tex_reorder_storage(g.sd, 2, (tex_iter *[]){g.y, g.x}), TEX_EINVAL,
         "tex_reorder_storage", "'D'", "output");
    FAIL(g.s, tex_reorder_storage(g.sb, 1, (tex_iter *[]){g.j}), TEX_EINVAL, "tex_reorder_storage",
         "'B'", "2 data-parallel axes", "got 1");
    FAIL(g.s, tex_reorder_storage(g.sb, 2, (tex_iter *[]){g.j, g.j}), TEX_EINVAL, "'B'", "'j'",
         "twice");
    FAIL(g.s, tex_reorder_storage(g.sb, 2, (tex_iter *[]){g.j, g.x}), TEX_EINVAL, "'B'", "'x'",
         "entry 1", "data-parallel axis");
    FAIL(g.s, tex_reorder_storage(g.sb, 2, (tex_iter *[]){g.j, NULL}), TEX_EMISUSE, "'B'", "NULL");
    FAIL(g.s, tex_reorder_storage(g.sb, 2, NULL), TEX_EMISUSE, "'B'");
    TT_EQ_INT(tex_reorder_storage(NULL, 2, (tex_iter *[]){g.j, g.i}), TEX_EMISUSE);
    FAIL(g.s, tex_double_buffer(g.se), TEX_EINVAL, "tex_double_buffer", "'E'", "output");
    FAIL(g.s, tex_double_buffer(g.sa), TEX_EINVAL, "tex_double_buffer", "'A'");
    TT_EQ_INT(tex_set_scope(g.sb, TEX_SCOPE_LOCAL), 0);
    TT_EQ_INT(tex_storage_align(g.sb, g.j, 8, 3), 0);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------------- attach */

static void test_compute_at_errors(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    FAIL(g.s, tex_compute_at(g.sc, g.sd, g.x), TEX_EINVAL, "tex_compute_at", "'C'", "'D'", "'x'",
         "does not consume");
    FAIL(g.s, tex_compute_at(g.sb, g.sb, g.i), TEX_EINVAL, "tex_compute_at", "'B'", "itself");
    FAIL(g.s, tex_compute_at(g.sb, g.sa, g.i), TEX_EINVAL, "'A'", "placeholder");
    FAIL(g.s, tex_compute_at(g.sa, g.sb, g.i), TEX_EINVAL, "'A'", "placeholder");
    FAIL(g.s, tex_compute_at(g.sd, g.se, g.x), TEX_EINVAL, "tex_compute_at", "'D'", "output");
    FAIL(g.s, tex_compute_at(g.sb, g.sd, g.i), TEX_EINVAL, "tex_compute_at", "'B'", "'D'", "'i'",
         "not a leaf");
    FAIL(g.s, tex_compute_at(g.sb, NULL, g.i), TEX_EMISUSE, "tex_compute_at", "'B'");
    FAIL(g.s, tex_compute_at(g.sb, g.sd, NULL), TEX_EMISUSE, "tex_compute_at", "'B'", "'D'");
    TT_EQ_INT(tex_compute_at(NULL, g.sd, g.x), TEX_EMISUSE);
    tex_iter *o, *in;
    TT_EQ_INT(tex_split(g.sd, g.x, I(4), &o, &in), 0);
    FAIL(g.s, tex_compute_at(g.sb, g.sd, g.x), TEX_EINVAL, "'B'", "'D'", "'x'", "split or fused");
    // transitively consumed (E reads B through C) is fine; into an inlined stage is not
    TT_EQ_INT(tex_compute_at(g.sb, g.se, g.x), 0);
    TT_EQ_INT(tex_compute_at(g.sb, g.sd, o), 0);
    graph h = make_graph(); // another schedule: stages from two schedules
    FAIL(g.s, tex_compute_at(g.sb, h.sd, h.x), TEX_EINVAL, "'B'", "'D'", "different schedules");
    tex_ctx_free(ctx);

    ctx = tex_ctx_new();
    g = make_graph();
    tex_tensor *F = tex_compute(ctx, "F", 1, &g.x, tex_mul(TEX_AT(g.A, tex_iv(g.x), I(0)), I(3)));
    tex_tensor *G = tex_compute(ctx, "G", 1, &g.x, tex_add(TEX_AT(F, tex_iv(g.x)), I(1)));
    tex_tensor *H = tex_compute(ctx, "H", 1, &g.x, tex_add(TEX_AT(G, tex_iv(g.x)), I(1)));
    tex_schedule *s = tex_schedule_new(ctx, 1, &H);
    tex_stage *sf = tex_stage_of(s, F), *sg = tex_stage_of(s, G), *sh = tex_stage_of(s, H);
    TT_EQ_INT(tex_compute_inline(sg), 0);
    FAIL(s, tex_compute_at(sf, sg, g.x), TEX_EINVAL, "tex_compute_at", "'F'", "'G'", "inlined");
    TT_EQ_INT(tex_compute_at(sf, sh, g.x), 0);
    tex_ctx_free(ctx);
}

static void test_inline_root_errors(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    FAIL(g.s, tex_compute_inline(g.sd), TEX_EINVAL, "tex_compute_inline", "'D'", "output");
    FAIL(g.s, tex_compute_inline(g.sc), TEX_EINVAL, "tex_compute_inline", "'C'", "reduction",
         "'k'");
    FAIL(g.s, tex_compute_inline(g.sa), TEX_EINVAL, "tex_compute_inline", "'A'", "placeholder");
    FAIL(g.s, tex_compute_root(g.sa), TEX_EINVAL, "tex_compute_root", "'A'", "placeholder");
    TT_EQ_INT(tex_compute_inline(NULL), TEX_EMISUSE);
    tex_ctx_free(ctx);

    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){8});
    tex_iter *i = tex_axis(ctx, "i", I(8));
    tex_tensor *B = tex_compute(ctx, "B", 1, &i, tex_add(TEX_AT(A, tex_iv(i)), I(1)));
    tex_tensor *C = tex_compute(ctx, "C", 1, &i, tex_add(TEX_AT(B, tex_iv(i)), I(1)));
    tex_tensor *D = tex_compute(ctx, "D", 1, &i, tex_add(TEX_AT(C, tex_iv(i)), I(1)));
    tex_schedule *s = tex_schedule_new(ctx, 1, &D);
    tex_stage *sb = tex_stage_of(s, B), *sc = tex_stage_of(s, C);
    TT_EQ_INT(tex_compute_at(sb, sc, i), 0);
    FAIL(s, tex_compute_inline(sc), TEX_EINVAL, "tex_compute_inline", "'B'", "'C'", "'i'");
    TT_EQ_INT(tex_compute_root(sb), 0);
    TT_EQ_INT(tex_compute_inline(sc), 0);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------ dataflow rewrites */

static void test_cache_read_errors(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    FAIL(g.s, made(tex_cache_read(g.s, g.A, TEX_SCOPE_SHARED, 1, &g.C)), TEX_EINVAL,
         "tex_cache_read", "'C'", "'A'", "does not read");
    FAIL(g.s, made(tex_cache_read(g.s, g.B, TEX_SCOPE_SHARED, 2, (tex_tensor *[]){g.C, g.C})),
         TEX_EINVAL, "tex_cache_read", "'B'", "'C'", "twice");
    FAIL(g.s, made(tex_cache_read(g.s, g.B, TEX_SCOPE_SHARED, 0, &g.C)), TEX_EINVAL,
         "tex_cache_read", "'B'");
    FAIL(g.s, made(tex_cache_read(g.s, g.B, (tex_scope)5, 1, &g.C)), TEX_EINVAL, "tex_cache_read",
         "'B'", "scope");
    FAIL(g.s, made(tex_cache_read(g.s, NULL, TEX_SCOPE_SHARED, 1, &g.C)), TEX_EMISUSE,
         "tex_cache_read");
    tex_tensor *Z = tex_placeholder_c(ctx, "Z", TEX_F32, 1, (int64_t[]){3});
    FAIL(g.s, made(tex_cache_read(g.s, Z, TEX_SCOPE_SHARED, 1, &g.C)), TEX_EINVAL, "tex_cache_read",
         "'Z'", "no stage");
    FAIL(g.s, made(tex_cache_read(g.s, g.B, TEX_SCOPE_SHARED, 1, &Z)), TEX_EINVAL, "tex_cache_read",
         "'Z'");
    TT_CHECK(tex_cache_read(NULL, g.B, TEX_SCOPE_SHARED, 1, &g.C) == NULL);
    TT_CHECK(tex_cache_read(g.s, g.B, TEX_SCOPE_SHARED, 2, (tex_tensor *[]){g.C, g.D}) != NULL);
    tex_ctx_free(ctx);
}

static void test_cache_write_errors(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    FAIL(g.s, made(tex_cache_write(g.s, g.A, TEX_SCOPE_LOCAL)), TEX_EINVAL, "tex_cache_write",
         "'A'", "placeholder");
    FAIL(g.s, made(tex_cache_write(g.s, g.C, (tex_scope)-1)), TEX_EINVAL, "tex_cache_write", "'C'",
         "scope");
    tex_iter *o, *in;
    TT_EQ_INT(tex_split(g.sd, g.x, I(4), &o, &in), 0);
    FAIL(g.s, made(tex_cache_write(g.s, g.D, TEX_SCOPE_LOCAL)), TEX_EINVAL, "tex_cache_write",
         "'D'", "split");
    TT_EQ_INT(tex_reorder(g.sc, 2, (tex_iter *[]){g.k, g.i}), 0);
    FAIL(g.s, made(tex_cache_write(g.s, g.C, TEX_SCOPE_LOCAL)), TEX_EINVAL, "tex_cache_write",
         "'C'", "reordered");
    TT_EQ_INT(tex_unroll(g.sb, g.j), 0);
    FAIL(g.s, made(tex_cache_write(g.s, g.B, TEX_SCOPE_LOCAL)), TEX_EINVAL, "tex_cache_write",
         "'B'", "'j'", "annotated");
    TT_EQ_INT(tex_compute_at(g.sc, g.se, g.x), 0);
    FAIL(g.s, made(tex_cache_write(g.s, g.E, TEX_SCOPE_LOCAL)), TEX_EINVAL, "tex_cache_write",
         "'E'", "'x'", "attached");
    TT_EQ_INT(tex_compute_root(g.sc), 0);
    TT_CHECK(tex_cache_write(g.s, g.E, TEX_SCOPE_LOCAL) != NULL);
    tex_ctx_free(ctx);
}

static void test_rfactor_errors(void)
{
    ctx = tex_ctx_new();
    graph g = make_graph();
    FAIL(g.s, made(tex_rfactor(g.s, g.B, g.j, 0)), TEX_EINVAL, "tex_rfactor", "'B'",
         "not a reduction");
    FAIL(g.s, made(tex_rfactor(g.s, g.C, g.i, 0)), TEX_EINVAL, "tex_rfactor", "'C'", "'i'",
         "not a reduce axis");
    FAIL(g.s, made(tex_rfactor(g.s, g.C, g.k, 2)), TEX_EINVAL, "tex_rfactor", "'C'", "'k'",
         "factor_axis 2");
    FAIL(g.s, made(tex_rfactor(g.s, g.C, g.k, -1)), TEX_EINVAL, "tex_rfactor", "'C'", "'k'");
    FAIL(g.s, made(tex_rfactor(g.s, g.C, NULL, 0)), TEX_EMISUSE, "tex_rfactor", "'C'");
    FAIL(g.s, made(tex_rfactor(g.s, g.A, g.k, 0)), TEX_EINVAL, "tex_rfactor", "'A'");
    tex_iter *ko, *ki, *a, *b;
    TT_EQ_INT(tex_split(g.sc, g.k, I(4), &ko, &ki), 0);
    FAIL(g.s, made(tex_rfactor(g.s, g.C, g.k, 0)), TEX_EINVAL, "tex_rfactor", "'C'", "'k'",
         "not a leaf");
    TT_EQ_INT(tex_split(g.sc, ki, I(2), &a, &b), 0);
    FAIL(g.s, made(tex_rfactor(g.s, g.C, b, 0)), TEX_EINVAL, "tex_rfactor", "'C'",
         "'k.inner.inner'", "supported");
    FAIL(g.s, made(tex_rfactor(g.s, g.C, ko, 0)), TEX_EINVAL, "tex_rfactor", "'C'", "'k.outer'",
         "supported");
    tex_ctx_free(ctx);

    ctx = tex_ctx_new();
    g = make_graph();
    TT_EQ_INT(tex_split(g.sc, g.i, I(4), &a, &b), 0);
    FAIL(g.s, made(tex_rfactor(g.s, g.C, g.k, 0)), TEX_EINVAL, "tex_rfactor", "'C'", "'k'",
         "supported");
    tex_ctx_free(ctx);

    ctx = tex_ctx_new();
    g = make_graph();
    TT_EQ_INT(tex_unroll(g.sc, g.k), 0);
    FAIL(g.s, made(tex_rfactor(g.s, g.C, g.k, 0)), TEX_EINVAL, "tex_rfactor", "'C'", "'k'",
         "unrolled");
    tex_ctx_free(ctx);

    ctx = tex_ctx_new();
    g = make_graph();
    TT_EQ_INT(tex_compute_at(g.sb, g.sc, g.k), 0);
    FAIL(g.s, made(tex_rfactor(g.s, g.C, g.k, 0)), TEX_EINVAL, "tex_rfactor", "'C'", "'B'",
         "attached");
    TT_EQ_INT(tex_compute_root(g.sb), 0);
    TT_CHECK(tex_rfactor(g.s, g.C, g.k, 1) != NULL);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------- out of memory */

static bool oom_now; /* the test allocator fails while set */

static void *oom_alloc(void *user, size_t size)
{
    (void)user;
    return oom_now ? NULL : malloc(size);
}

static void oom_free(void *user, void *p)
{
    (void)user;
    free(p);
}

/* Leaves exactly r bytes (a multiple of 16) in the arena's current chunk,
 * whose size is src/util/arena.c's ARENA_CHUNK_SIZE. */
static void leave_room(tex_ctx *c, size_t r)
{
    const size_t chunk = 64 * 1024;
    size_t rem = chunk - c->arena.used;
    if (rem < r + 16) {
        texi_alloc(c, rem + 16, "padding");
        rem = chunk - c->arena.used;
    }
    if (rem > r)
        texi_alloc(c, rem - r, "padding");
}

static tex_expr *k4, *k5; /* factors made before allocation starts failing */

/* Step `step` of a schedule using every allocating primitive; 0 or a code. */
static int oom_step(graph *g, int step)
{
    tex_iter *a, *b, *c, *d;
    switch (step) {
    case 0:
        return tex_split(g->sb, g->i, k4, &a, &b);
    case 1:
        return tex_tile(g->sd, g->x, g->y, k4, k5, &a, &b, &c, &d);
    case 2:
        return tex_fuse(g->sb, tex_stage_axis(g->sb, 0), tex_stage_axis(g->sb, 1), &a);
    case 3:
        return made(tex_cache_read(g->s, g->B, TEX_SCOPE_SHARED, 1, &g->D));
    case 4:
        return made(tex_cache_write(g->s, g->E, TEX_SCOPE_LOCAL));
    case 5:
        return tex_split(g->sc, g->k, k5, &a, &b);
    case 6:
        return made(tex_rfactor(g->s, g->C, tex_stage_axis(g->sc, 2), 1));
    default:
        return 1;
    }
}

/* Every allocation point of the primitives fails once: the call returns
 * TEX_ENOMEM and the schedule is unchanged. */
static void test_out_of_memory(void)
{
    tex_allocator al = {sizeof al, oom_alloc, oom_free, NULL};
    int failed_at[8] = {0};
    bool completed = false;
    for (size_t room = 0; room < (1u << 16) && !completed; room += 16) {
        oom_now = false;
        ctx = tex_ctx_new_ex(&al);
        graph g = make_graph();
        k4 = I(4);
        k5 = I(5);
        leave_room(ctx, room);
        oom_now = true;
        for (int step = 0;; step++) {
            char *before = snapshot(g.s);
            int rc = oom_step(&g, step);
            if (rc == 1) {
                completed = true;
            } else if (rc != 0) {
                failed_at[step]++;
                if (rc != TEX_ENOMEM)
                    TT_FAILF("step %d room %zu: %d %s", step, room, rc, tex_errmsg(ctx));
                TT_EQ_INT(tex_errcode(ctx), TEX_ENOMEM);
                char *after = snapshot(g.s);
                if (strcmp(before, after) != 0)
                    TT_FAILF("step %d with %zu bytes left changed the schedule", step, room);
                free(after);
            }
            free(before);
            if (rc != 0)
                break;
        }
        oom_now = false;
        tex_ctx_free(ctx);
    }
    TT_CHECK(completed);
    for (int step = 0; step < 7; step++)
        if (!failed_at[step])
            TT_FAILF("step %d never ran out of memory", step);
}

int main(void)
{
    TT_RUN(test_schedule_new_errors);
    TT_RUN(test_split_errors);
    TT_RUN(test_split_factor_limits);
    TT_RUN(test_tile_errors);
    TT_RUN(test_fuse_errors);
    TT_RUN(test_reorder_errors);
    TT_RUN(test_annotation_errors);
    TT_RUN(test_storage_errors);
    TT_RUN(test_compute_at_errors);
    TT_RUN(test_inline_root_errors);
    TT_RUN(test_cache_read_errors);
    TT_RUN(test_cache_write_errors);
    TT_RUN(test_rfactor_errors);
    TT_RUN(test_out_of_memory);
    return tt_finish();
}
