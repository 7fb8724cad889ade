/*
 * Host/device split (src/lower/device_split.c) and launch plans
 * (src/rt/launch_plan.c), without a GPU:
 *   - programs: constants, size-table loads, every operator, floordiv and
 *     floormod of negatives, integer casts, division by zero and overflow
 *     (TEX_EINVAL), select and && / || that skip a poisoned operand, float
 *     and loop-variable expressions refused at build time;
 *   - the split of a function with a symbolic size: one kernel whose grid
 *     and block, evaluated for several sizes, equal the extents of the real
 *     loops bound to blockIdx.x / threadIdx.x (substituted and simplified);
 *     two nests give two kernels, one without bound loops (all extents 1);
 *   - merged extents: transpose through shared memory (gpu_cases.h) binds
 *     threadIdx.x to min(N, 32) and 32, giving 32;
 *   - workspace: the reduction across blocks (gpu_cases.h "sum": rfactor
 *     partials in global memory) keeps its partial buffer as workspace,
 *     written by the first kernel and read by the second;
 *   - asserts: SHIFT_INWARDS on a symbolic extent gives the runtime check
 *     n >= 64, true for n = 100, false for n = 10;
 *   - a thread loop whose extent depends on another loop is TEX_EUNAVAILABLE
 *     naming the loop;
 *   - a top-level LET of a size goes back around the kernels that use it,
 *     and its value is substituted into their launch extents.
 */
#include "tt.h"

#include <stdlib.h>
#include <string.h>

#include "rt/launch_plan.h"
#include "support/gpu_cases.h"

/* B[i] = A[i] * 2 over a symbolic n (size table: n). */
typedef struct {
    tex_ctx *ctx;
    tex_expr *n;
    tex_tensor *A, *B;
    tex_iter *i;
    tex_schedule *s;
} vec_fn;

static void vec_new(vec_fn *v)
{
    v->ctx = tex_ctx_new();
    v->n = tex_var(v->ctx, "n", TEX_I64);
    v->A = tex_placeholder(v->ctx, "A", TEX_F32, 1, (tex_expr *[]){v->n});
    v->i = tex_axis(v->ctx, "i", v->n);
    v->B = tex_compute(v->ctx, "B", 1, (tex_iter *[]){v->i},
                       tex_mul(TEX_AT(v->A, tex_iv(v->i)), tex_const(v->ctx, TEX_F32, 2)));
    v->s = tex_schedule_new(v->ctx, 1, (tex_tensor *[]){v->B});
}

static int split(tex_func *f, texi_device_module *m)
{
    texi_lower lw = {.ctx = f->ctx, .sch = NULL, .func = f};
    return texi_device_split(&lw, f->body, m);
}

static int64_t eval(const texi_launch_prog *p, const int64_t *sizes)
{
    int64_t v = -12345;
    TT_EQ_INT(texi_launch_prog_eval(p, sizes, &v), 0);
    return v;
}

/* ------------------------------------------------------------- programs */

/* Compiles each expression as an assert of a module over f. */
static int build_exprs(tex_func *f, int n, tex_expr **es, texi_launch_plan *p)
{
    texi_device_module m;
    memset(&m, 0, sizeof m);
    m.n_asserts = n;
    m.asserts = es;
    return texi_launch_plan_build(f, &m, p);
}

static void test_programs(void)
{
    vec_fn v;
    vec_new(&v);
    tex_ctx *c = v.ctx;
    tex_expr *k = tex_var(c, "k", TEX_I64);
    tex_func *f = tex_lower(v.s, "vk", 3,
                            (tex_param[]){{.kind = TEX_ARG_TENSOR, .t = v.A},
                                          {.kind = TEX_ARG_TENSOR, .t = v.B},
                                          {.kind = TEX_ARG_VAR, .v = k}});
    TT_CHECK(f != NULL);
    if (!f) {
        tex_ctx_free(c);
        return;
    }
    /* size table: k (VAR param), then n */
    tex_expr *n = v.n, *zero = tex_int(c, 0);
    tex_expr *es[] = {
        tex_int(c, 42),                                              /* 0 */
        tex_add(tex_mul(k, n), tex_int(c, 3)),                       /* 1 */
        tex_sub(k, n),                                               /* 2 */
        tex_floordiv(k, tex_int(c, 2)),                              /* 3 */
        tex_floormod(k, tex_int(c, 2)),                              /* 4 */
        tex_floormod(n, tex_int(c, -2)),                             /* 5 */
        tex_min(k, n),                                               /* 6 */
        tex_max(k, n),                                               /* 7 */
        tex_and(tex_lt(k, n), tex_ge(n, tex_int(c, 5))),             /* 8 */
        tex_or(tex_eq(k, n), tex_ne(k, n)),                          /* 9 */
        tex_not(tex_le(k, n)),                                       /* 10 */
        tex_select(tex_gt(k, zero), k, n),                           /* 11 */
        tex_cast(TEX_I32, tex_add(n, tex_int(c, (int64_t)1 << 32))), /* 12 */
        tex_floordiv(n, tex_sub(k, k)),                              /* 13: div by zero */
        tex_select(tex_eq(k, zero), zero, tex_floordiv(n, k)),       /* 14: guarded */
        tex_mul(n, tex_int(c, INT64_MAX)),                           /* 15: overflow */
        tex_and(tex_eq(n, zero), tex_eq(tex_floormod(n, k), zero)),  /* 16 */
    };
    int ne = (int)(sizeof es / sizeof es[0]);
    texi_launch_plan p;
    TT_EQ_INT(build_exprs(f, ne, es, &p), 0);
    int64_t s1[] = {-7, 9}; /* k = -7, n = 9 */
    int64_t want[] = {42, -60, -16, -4, 1, -1, -7, 9, 1, 1, 0, 9, 9};
    for (int i = 0; i < 13; i++)
        TT_EQ_INT(eval(&p.asserts[i], s1), want[i]);
    int64_t s0[] = {0, 9}, got = 0;
    TT_EQ_INT(texi_launch_prog_eval(&p.asserts[13], s1, &got), TEX_EINVAL);
    TT_EQ_INT(eval(&p.asserts[14], s0), 0);
    TT_EQ_INT(eval(&p.asserts[14], s1), -2);
    TT_EQ_INT(texi_launch_prog_eval(&p.asserts[15], s1, &got), TEX_EINVAL);
    TT_EQ_INT(eval(&p.asserts[16], s0), 0); /* n != 0 decides: floormod by 0 dropped */
    TT_EQ_INT(texi_launch_prog_eval(&p.asserts[16], (int64_t[]){0, 0}, &got), TEX_EINVAL);
    TT_CHECK(p.assert_text[1] && strstr(p.assert_text[1], "k") != NULL);
    texi_launch_plan_free(&p);
    texi_launch_plan_free(&p); /* zeroed: fine */

    texi_launch_prog empty = {0, NULL};
    TT_EQ_INT(eval(&empty, NULL), 1);
    texi_launch_insn bad[] = {{999, 0}}; /* no such opcode */
    texi_launch_prog badp = {1, bad};
    TT_EQ_INT(texi_launch_prog_eval(&badp, s1, &got), TEX_EINVAL);

    tex_expr *fl[] = {tex_cast(TEX_I64, tex_mul(tex_cast(TEX_F32, n), tex_const(c, TEX_F32, 1.5)))};
    TT_EQ_INT(build_exprs(f, 1, fl, &p), TEX_EUNAVAILABLE);
    TT_CHECK(strstr(tex_errmsg(c), "cannot be computed on the host") != NULL);
    tex_clear_error(c);
    tex_expr *lv[] = {tex_add(tex_var(c, "loopvar", TEX_I64), n)};
    TT_EQ_INT(build_exprs(f, 1, lv, &p), TEX_EUNAVAILABLE);
    TT_CHECK(strstr(tex_errmsg(c), "loopvar") != NULL);
    tex_ctx_free(c);
}

/* ---------------------------------------------------------------- split */

/* The first FOR bound to tag in s, or NULL. */
static const tex_stmt *bound_loop(const tex_stmt *s, int tag)
{
    if (!s)
        return NULL;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        if (s->u.loop.for_kind == TEXI_FOR_THREAD && s->u.loop.thread_tag == tag)
            return s;
        return bound_loop(s->u.loop.body, tag);
    case TEXI_STMT_ALLOCATE:
        return bound_loop(s->u.alloc.body, tag);
    case TEXI_STMT_ATTR:
        return bound_loop(s->u.attr.body, tag);
    case TEXI_STMT_LET:
        return bound_loop(s->u.let.body, tag);
    case TEXI_STMT_IF:
        return bound_loop(s->u.ifs.then_s, tag);
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++) {
            const tex_stmt *l = bound_loop(s->u.seq.items[i], tag);
            if (l)
                return l;
        }
        return NULL;
    default:
        return NULL;
    }
}

/* e with var := value, simplified to a constant (-1 when it is not one). */
static int64_t value_at(tex_expr *e, tex_expr *var, int64_t value)
{
    tex_expr *c = tex_int(var->ctx, value);
    tex_expr *conv = c->dtype == var->dtype ? c : tex_cast(var->dtype, c);
    tex_expr *s = texi_simplify(texi_substitute(e, 1, &var, &conv), 0, NULL);
    int64_t r = -1;
    return s && texi_expr_is_int_const(s, &r) ? r : -1;
}

static void test_split_symbolic(void)
{
    vec_fn v;
    vec_new(&v);
    tex_stage *st = tex_stage_of(v.s, v.B);
    tex_iter *o, *i;
    TT_EQ_INT(tex_split(st, v.i, tex_int(v.ctx, 64), &o, &i), 0);
    TT_EQ_INT(tex_bind(st, o, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, i, TEX_THREAD_X), 0);
    tex_func *f = tex_lower_tensors(v.s, "vs", 2, (tex_tensor *[]){v.A, v.B});
    TT_CHECK(f != NULL);
    texi_device_module m;
    TT_EQ_INT(split(f, &m), 0);
    TT_EQ_INT(m.n_kernels, 1);
    TT_EQ_INT(m.n_workspace, 0);
    TT_EQ_STR(m.kernels[0].name, "vs_kernel0");
    texi_launch_plan p;
    TT_EQ_INT(texi_launch_plan_build(f, &m, &p), 0);
    TT_EQ_INT(p.n_kernels, 1);
    TT_EQ_STR(p.kernels[0].name, "vs_kernel0");
    const tex_stmt *bx = bound_loop(f->body, TEX_BLOCK_X), *tx = bound_loop(f->body, TEX_THREAD_X);
    TT_CHECK(bx && tx);
    int64_t ns[] = {1, 63, 64, 65, 1000, 4097};
    for (int k = 0; bx && tx && k < 6; k++) {
        int64_t sz[] = {ns[k]};
        TT_EQ_INT(eval(&p.kernels[0].extent[0], sz), value_at(bx->u.loop.extent, v.n, ns[k]));
        TT_EQ_INT(eval(&p.kernels[0].extent[0], sz), (ns[k] + 63) / 64);
        TT_EQ_INT(eval(&p.kernels[0].extent[3], sz), value_at(tx->u.loop.extent, v.n, ns[k]));
        for (int t = 1; t < 6; t++)
            if (t != 3)
                TT_EQ_INT(eval(&p.kernels[0].extent[t], sz), 1);
    }
    texi_launch_plan_free(&p);
    tex_ctx_free(v.ctx);
}

static void test_two_nests(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){256});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 256)), *j = tex_axis(ctx, "j", tex_int(ctx, 256));
    tex_tensor *B = tex_compute(ctx, "B", 1, (tex_iter *[]){i}, TEX_AT(A, tex_iv(i)));
    tex_tensor *C = tex_compute(ctx, "C", 1, (tex_iter *[]){j}, TEX_AT(A, tex_iv(j)));
    tex_schedule *s = tex_schedule_new(ctx, 2, (tex_tensor *[]){B, C});
    tex_stage *st = tex_stage_of(s, B);
    tex_iter *o, *in;
    TT_EQ_INT(tex_split(st, i, tex_int(ctx, 32), &o, &in), 0);
    TT_EQ_INT(tex_bind(st, o, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, in, TEX_THREAD_X), 0);
    tex_func *f = tex_lower_tensors(s, "two", 3, (tex_tensor *[]){A, B, C});
    texi_device_module m;
    TT_EQ_INT(split(f, &m), 0);
    TT_EQ_INT(m.n_kernels, 2);
    TT_EQ_STR(m.kernels[1].name, "two_kernel1");
    int64_t e;
    TT_CHECK(m.kernels[0].extent[0] && texi_expr_is_int_const(m.kernels[0].extent[0], &e) &&
             e == 8);
    for (int t = 0; t < TEXI_N_LAUNCH_TAGS; t++)
        TT_CHECK(m.kernels[1].extent[t] == NULL);
    tex_ctx_free(ctx);
}

/* Builds case id of gpu_cases.h with symbolic sizes and splits it. */
static tex_func *gpu_case(tex_ctx *ctx, gc_id id, gc_case *c, texi_device_module *m)
{
    int64_t z[GC_MAX_SIZES];
    gc_default_sizes(id, GC_SMALL, z);
    if (gc_build(ctx, id, z, true, c) != 0) {
        fprintf(stderr, "case %s: %s\n", gc_names[id], c->why);
        return NULL;
    }
    TT_EQ_INT(split(c->f, m), 0);
    return c->f;
}

static void test_merged_extents(void)
{
    tex_ctx *ctx = tex_ctx_new();
    gc_case c;
    texi_device_module m;
    tex_func *f = gpu_case(ctx, GC_TRANSPOSE, &c, &m);
    TT_CHECK(f != NULL);
    if (f && m.n_kernels == 1) {
        int64_t e = 0;
        TT_CHECK(texi_expr_is_int_const(m.kernels[0].extent[3], &e) && e == 32);
        TT_CHECK(texi_expr_is_int_const(m.kernels[0].extent[4], &e) && e == 8);
        TT_CHECK(m.kernels[0].extent[0] && !texi_expr_is_int_const(m.kernels[0].extent[0], NULL));
    }
    tex_ctx_free(ctx);
}

/* Walk callback: key[1] = a LOAD of the storage key[0]. */
static tex_expr *visit_load(tex_expr *e, void *ud)
{
    const void **key = ud;
    if (e->kind == TEXI_EXPR_LOAD && texi_buffer_key(e->u.load.buf) == key[0])
        key[1] = e;
    return NULL;
}

static void test_workspace(void)
{
    tex_ctx *ctx = tex_ctx_new();
    gc_case c;
    texi_device_module m;
    tex_func *f = gpu_case(ctx, GC_SUM, &c, &m);
    TT_CHECK(f != NULL);
    if (!f) {
        tex_ctx_free(ctx);
        return;
    }
    TT_EQ_INT(m.n_workspace, 1);
    TT_CHECK(m.n_kernels >= 2);
    if (m.n_workspace == 1 && m.n_kernels >= 2) {
        const texi_buffer *w = m.workspace[0];
        TT_EQ_INT(w->scope, TEXI_SCOPE_GLOBAL);
        TT_CHECK(texi_stmt_stores_to(m.kernels[0].body, w));
        const void *key[2] = {texi_buffer_key(w), NULL};
        texi_stmt_mutate(ctx, m.kernels[m.n_kernels - 1].body, NULL, visit_load, key);
        TT_CHECK(key[1] != NULL); /* the last kernel reads the partials */
        texi_launch_plan p;
        TT_EQ_INT(texi_launch_plan_build(f, &m, &p), 0);
        TT_EQ_INT(p.n_workspace, 1);
        TT_EQ_INT(p.workspace[0].dtype, TEX_F32);
        int64_t sizes[2] = {c.sizes[0], c.sizes[1]}, elems = 0;
        TT_EQ_INT(texi_launch_prog_eval(&p.workspace[0].elems, sizes, &elems), 0);
        TT_CHECK(elems >= c.sizes[1]); /* one partial per block at least */
        TT_EQ_STR(p.workspace[0].name, w->name);
        texi_launch_plan_free(&p);
    }
    tex_ctx_free(ctx);
}

static void test_asserts(void)
{
    vec_fn v;
    vec_new(&v);
    tex_stage *st = tex_stage_of(v.s, v.B);
    tex_iter *o, *i;
    TT_EQ_INT(tex_split_tail(st, v.i, tex_int(v.ctx, 64), TEX_TAIL_SHIFT_INWARDS, &o, &i), 0);
    TT_EQ_INT(tex_bind(st, o, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, i, TEX_THREAD_X), 0);
    tex_func *f = tex_lower_tensors(v.s, "sh", 2, (tex_tensor *[]){v.A, v.B});
    TT_CHECK(f != NULL);
    texi_device_module m;
    TT_EQ_INT(split(f, &m), 0);
    TT_EQ_INT(m.n_asserts, 1);
    TT_EQ_INT(m.n_kernels, 1);
    texi_launch_plan p;
    TT_EQ_INT(texi_launch_plan_build(f, &m, &p), 0);
    if (p.n_asserts == 1) {
        TT_EQ_INT(eval(&p.asserts[0], (int64_t[]){100}), 1);
        TT_EQ_INT(eval(&p.asserts[0], (int64_t[]){64}), 1);
        TT_EQ_INT(eval(&p.asserts[0], (int64_t[]){10}), 0);
        TT_CHECK(p.assert_text[0] && strstr(p.assert_text[0], "n") != NULL);
    }
    texi_launch_plan_free(&p);
    tex_ctx_free(v.ctx);
}

/* for i in [0, n) { for t in [0, i + 1) bind threadIdx.x { B[t] = 0 } } */
static void test_dependent_extent(void)
{
    vec_fn v;
    vec_new(&v);
    tex_func *f = tex_lower_tensors(v.s, "dep", 2, (tex_tensor *[]){v.A, v.B});
    TT_CHECK(f != NULL);
    tex_ctx *c = v.ctx;
    tex_expr *iv = texi_var_new(c, "row", TEX_I64), *tv = texi_var_new(c, "col", TEX_I64);
    tex_stmt *store = texi_store_new(c, f->params[1].buf, tv, texi_float_imm(c, TEX_F32, 0));
    tex_stmt *inner = texi_for_new(c, tv, tex_int(c, 0), tex_add(iv, tex_int(c, 1)),
                                   TEXI_FOR_THREAD, TEX_THREAD_X, store);
    tex_stmt *outer = texi_for_new(c, iv, tex_int(c, 0), v.n, TEXI_FOR_SERIAL, -1, inner);
    texi_lower lw = {.ctx = c, .sch = NULL, .func = f};
    texi_device_module m;
    TT_EQ_INT(texi_device_split(&lw, outer, &m), TEX_EUNAVAILABLE);
    TT_CHECK(strstr(tex_errmsg(c), "'col'") != NULL);
    TT_CHECK(strstr(tex_errmsg(c), "threadIdx.x") != NULL);
    TT_EQ_INT(m.n_kernels, 0);
    tex_ctx_free(c);
}

/* let w = n * 2 in { for t < w bind threadIdx.x: B[t] = 0; B[0] = 1 }:
 * the LET goes back around the first kernel only, whose block extent is
 * n * 2 with the value substituted. */
static void test_top_let(void)
{
    vec_fn v;
    vec_new(&v);
    tex_func *f = tex_lower_tensors(v.s, "lt", 2, (tex_tensor *[]){v.A, v.B});
    TT_CHECK(f != NULL);
    tex_ctx *c = v.ctx;
    texi_buffer *bb = f->params[1].buf;
    tex_expr *w = texi_var_new(c, "w", TEX_I64), *t = texi_var_new(c, "t", TEX_I64);
    tex_expr *zero = texi_int_imm(c, TEX_I64, 0);
    tex_stmt *l = texi_for_new(c, t, zero, w, TEXI_FOR_THREAD, TEX_THREAD_X,
                               texi_store_new(c, bb, t, texi_float_imm(c, TEX_F32, 0)));
    tex_stmt *one = texi_store_new(c, bb, zero, texi_float_imm(c, TEX_F32, 1));
    tex_stmt *body = texi_let_new(c, w, tex_mul(v.n, texi_int_imm(c, TEX_I64, 2)),
                                  texi_seq_new(c, 2, (tex_stmt *[]){l, one}));
    texi_lower lw = {.ctx = c, .sch = NULL, .func = f};
    texi_device_module m;
    TT_EQ_INT(texi_device_split(&lw, body, &m), 0);
    TT_EQ_INT(m.n_kernels, 2);
    if (m.n_kernels == 2) {
        TT_EQ_INT(m.kernels[0].body->kind, TEXI_STMT_LET);
        TT_EQ_INT(m.kernels[1].body->kind, TEXI_STMT_STORE);
        texi_launch_plan p;
        TT_EQ_INT(texi_launch_plan_build(f, &m, &p), 0);
        TT_EQ_INT(eval(&p.kernels[0].extent[3], (int64_t[]){5}), 10);
        texi_launch_plan_free(&p);
    }
    tex_ctx_free(c);
}

int main(void)
{
    TT_RUN(test_programs);
    TT_RUN(test_split_symbolic);
    TT_RUN(test_two_nests);
    TT_RUN(test_merged_extents);
    TT_RUN(test_workspace);
    TT_RUN(test_asserts);
    TT_RUN(test_dependent_extent);
    TT_RUN(test_top_let);
    return tt_finish();
}
