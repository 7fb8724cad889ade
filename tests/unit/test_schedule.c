/*
 * Schedule primitives (src/schedule: schedule.c, split_fuse.c, annotate.c,
 * attach.c, cache.c, rfactor.c, schedule_str.c): the effect of each legal
 * primitive on stages, leaf order, names, kinds and extents, seen through the
 * public accessors, the stage fields lowering reads, and tex_schedule_str.
 * The dataflow rewrites (cache_read, cache_write, rfactor) are checked by
 * evaluating the new definitions with tex_eval_reference: each stage's new
 * op, wrapped in a tensor, must compute the same values as the original.
 * Illegal requests are in test_schedule_errors.c.
 */
#include "schedule/schedule.h"
#include "tt.h"

#include <string.h>

static tex_ctx *ctx;

static tex_expr *I(int64_t v)
{
    return tex_int(ctx, v);
}

/* The leaf axes' names, space-separated (static buffer). */
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

static int64_t cextent(const tex_iter *iv)
{
    int64_t v = -1;
    return iv && texi_expr_is_int_const(iv->extent, &v) ? v : -1;
}

static bool contains(const char *s, const char *sub)
{
    return s && strstr(s, sub);
}

/* C[i, j] = sum_k A[i, k] * B[k, j] (n x m, reduction over l). */
typedef struct {
    tex_tensor *A, *B, *C;
    tex_iter *i, *j, *k;
    tex_schedule *s;
    tex_stage *sc;
} mm;

static mm matmul(int64_t n, int64_t m, int64_t l)
{
    mm p;
    p.A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){n, l});
    p.B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){l, m});
    p.i = tex_axis(ctx, "i", I(n));
    p.j = tex_axis(ctx, "j", I(m));
    p.k = tex_reduce_axis(ctx, "k", I(l));
    tex_expr *prod =
        tex_mul(TEX_AT(p.A, tex_iv(p.i), tex_iv(p.k)), TEX_AT(p.B, tex_iv(p.k), tex_iv(p.j)));
    p.C = tex_compute(ctx, "C", 2, (tex_iter *[]){p.i, p.j}, tex_sum(prod, 1, &p.k));
    p.s = tex_schedule_new(ctx, 1, &p.C);
    p.sc = tex_stage_of(p.s, p.C);
    return p;
}

/* ----------------------------------------------------- evaluation helpers */

static DLTensor *array_for(const tex_tensor *t)
{
    int64_t shape[8];
    for (int d = 0; d < t->ndim; d++)
        TT_CHECK(texi_expr_is_int_const(t->shape[d], &shape[d]));
    return tex_array_new(t->ndim, shape, t->dtype, (DLDevice){kDLCPU, 0});
}

static void fill(DLTensor *a, int seed)
{
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++)
        n *= a->shape[d];
    float *p = a->data;
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)((i * 7 + seed * 13) % 23) - 11.0f;
}

static int64_t numel(const DLTensor *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++)
        n *= a->shape[d];
    return n;
}

/* A tensor named `name` computed by stage st's current op. */
static tex_tensor *op_tensor(tex_stage *st, const char *name)
{
    texi_op *op = st->op;
    return texi_compute_tensor_new(ctx, name, op->n_axes, op->axes, op->body, op->n_inputs,
                                   op->inputs);
}

/* Evaluates `got` and `want` from the inputs ins[0..n) (filled with data) and
 * checks they agree elementwise. `want` may be one of the inputs. */
static void check_same_values(tex_tensor *got, tex_tensor *want, int n, tex_tensor *const ins[])
{
    tex_tensor *ts[10];
    DLTensor *as[10];
    int w = -1;
    for (int i = 0; i < n; i++) {
        ts[i] = ins[i];
        as[i] = array_for(ins[i]);
        fill(as[i], i + 1);
        w = ins[i] == want ? i : w;
    }
    int m = n;
    ts[m] = got;
    as[m++] = array_for(got);
    if (w < 0) {
        ts[m] = want;
        as[w = m++] = array_for(want);
    }
    int rc = tex_eval_reference(ctx, m, ts, as);
    TT_EQ_INT(rc, 0);
    if (rc)
        printf("  %s\n", tex_errmsg(ctx));
    TT_EQ_INT(numel(as[n]), numel(as[w]));
    const float *g = as[n]->data, *x = as[w]->data;
    int bad = 0;
    for (int64_t e = 0; rc == 0 && e < numel(as[n]) && bad < 3; e++)
        if (g[e] != x[e]) {
            TT_FAILF("element %lld: %g vs %g", (long long)e, g[e], x[e]);
            bad++;
        }
    for (int i = 0; i < m; i++)
        tex_array_free(as[i]);
}

/* ------------------------------------------------------------- creation */

static void test_schedule_new(void)
{
    ctx = tex_ctx_new();
    mm p = matmul(8, 6, 5);
    TT_CHECK(p.s != NULL);
    TT_EQ_INT(p.s->n_stages, 3);
    TT_CHECK(p.s->stages[2] == p.sc);
    TT_CHECK(p.sc->is_output);
    TT_EQ_INT(tex_stage_naxes(p.sc), 3);
    TT_EQ_STR(leaves(p.sc), "i j k");
    TT_CHECK(tex_op_axis(p.sc, 0) == p.i);
    TT_CHECK(tex_op_axis(p.sc, 1) == p.j);
    TT_CHECK(tex_op_reduce_axis(p.sc, 0) == p.k);
    TT_CHECK(tex_op_axis(p.sc, 2) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(contains(tex_errmsg(ctx), "'C'"));
    tex_clear_error(ctx);
    TT_EQ_INT(p.sc->attach, TEXI_ATTACH_ROOT);
    TT_EQ_INT(p.sc->scope, TEXI_SCOPE_GLOBAL);
    TT_EQ_INT(p.sc->attr[2].for_kind, TEXI_FOR_SERIAL);

    tex_stage *sa = tex_stage_of(p.s, p.A);
    TT_CHECK(sa != NULL && !sa->is_output);
    TT_EQ_INT(tex_stage_naxes(sa), 0);
    TT_CHECK(texi_schedule_find_stage(p.s, p.B) == tex_stage_of(p.s, p.B));

    int n = -1;
    tex_stage **cons = texi_schedule_consumers(p.s, p.A, &n);
    TT_EQ_INT(n, 1);
    TT_CHECK(cons && cons[0] == p.sc);
    texi_schedule_consumers(p.s, p.C, &n);
    TT_EQ_INT(n, 0);

    tex_tensor *other = tex_placeholder_c(ctx, "Z", TEX_F32, 1, (int64_t[]){4});
    TT_CHECK(tex_stage_of(p.s, other) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(contains(tex_errmsg(ctx), "'Z'"));
    TT_EQ_INT(tex_stage_naxes(NULL), -1);
    TT_CHECK(tex_stage_of(NULL, p.C) == NULL);
    tex_ctx_free(ctx);
}

/* Producer-before-consumer order over a diamond with two outputs. */
static void test_stage_order(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){10});
    tex_iter *i = tex_axis(ctx, "i", I(10));
    tex_tensor *B = tex_compute(ctx, "B", 1, &i, tex_add(TEX_AT(A, tex_iv(i)), I(1)));
    tex_tensor *C = tex_compute(ctx, "C", 1, &i, tex_mul(TEX_AT(A, tex_iv(i)), I(2)));
    tex_tensor *D =
        tex_compute(ctx, "D", 1, &i, tex_add(TEX_AT(B, tex_iv(i)), TEX_AT(C, tex_iv(i))));
    tex_schedule *s = tex_schedule_new(ctx, 2, (tex_tensor *[]){D, B});
    TT_EQ_INT(s->n_stages, 4);
    for (int a = 0; a < s->n_stages; a++)
        for (int b = 0; b < s->n_stages; b++)
            if (a != b) {
                const texi_op *op = s->stages[b]->op;
                for (int x = 0; op->kind == TEXI_OP_COMPUTE && x < op->n_inputs; x++)
                    if (op->inputs[x] == s->stages[a]->tensor)
                        TT_CHECK(a < b);
            }
    TT_CHECK(tex_stage_of(s, B)->is_output && tex_stage_of(s, D)->is_output);
    TT_CHECK(!tex_stage_of(s, C)->is_output);
    // the same axis object in B, C, D: each stage's root is that iter.
    TT_CHECK(tex_stage_axis(tex_stage_of(s, B), 0) == i);
    TT_CHECK(tex_stage_axis(tex_stage_of(s, C), 0) == i);
    tex_ctx_free(ctx);
}

/* ---------------------------------------------------------------- split */

static void test_split(void)
{
    ctx = tex_ctx_new();
    mm p = matmul(64, 10, 7);
    tex_iter *io, *ii, *jo, *ji, *ko, *ki;
    TT_EQ_INT(tex_split(p.sc, p.i, I(8), &io, &ii), 0);
    TT_EQ_STR(leaves(p.sc), "i.outer i.inner j k");
    TT_EQ_INT(cextent(io), 8);
    TT_EQ_INT(cextent(ii), 8);
    TT_CHECK(io->kind == TEXI_ITER_DATA && ii->kind == TEXI_ITER_DATA);
    TT_CHECK(io->var->u.var.iter == io && ii->var->u.var.iter == ii);
    TT_CHECK(io->var != p.i->var);
    // non-divisible: ceildiv(10, 3) = 4
    TT_EQ_INT(tex_split(p.sc, p.j, I(3), &jo, &ji), 0);
    TT_EQ_INT(cextent(jo), 4);
    TT_EQ_INT(cextent(ji), 3);
    // reduce axis split: reduce kind inherited; factor larger than the extent
    TT_EQ_INT(tex_split(p.sc, p.k, I(16), &ko, &ki), 0);
    TT_CHECK(ko->kind == TEXI_ITER_REDUCE && ki->kind == TEXI_ITER_REDUCE);
    TT_EQ_INT(cextent(ko), 1);
    TT_EQ_INT(cextent(ki), 16);
    TT_EQ_STR(leaves(p.sc), "i.outer i.inner j.outer j.inner k.outer k.inner");
    TT_EQ_INT(p.sc->n_rel, 3);
    TT_CHECK(p.sc->rel[0].kind == TEXI_REL_SPLIT && p.sc->rel[0].parent == p.i);
    TT_CHECK(p.sc->rel[0].nparts == NULL && p.sc->rel[0].factor != NULL);
    TT_EQ_INT(p.sc->n_all, 9);
    // splitting an inner part again (nested split)
    tex_iter *a, *b;
    TT_EQ_INT(tex_split(p.sc, ii, I(2), &a, &b), 0);
    TT_EQ_STR(leaves(p.sc), "i.outer i.inner.outer i.inner.inner j.outer j.inner k.outer k.inner");
    // outputs may be NULL
    TT_EQ_INT(tex_split(p.sc, b, I(2), NULL, NULL), 0);
    TT_EQ_INT(tex_stage_naxes(p.sc), 8);
    tex_ctx_free(ctx);
}

static void test_split_nparts_and_tail(void)
{
    ctx = tex_ctx_new();
    mm p = matmul(10, 12, 4);
    tex_iter *io, *ii, *jo, *ji;
    TT_EQ_INT(tex_split_nparts(p.sc, p.i, I(3), &io, &ii), 0);
    TT_EQ_INT(cextent(io), 3);
    TT_EQ_INT(cextent(ii), 4);
    TT_CHECK(p.sc->rel[0].nparts != NULL && p.sc->rel[0].factor == NULL);
    TT_EQ_INT(tex_split_tail(p.sc, p.j, I(5), TEX_TAIL_GUARD, &jo, &ji), 0);
    TT_EQ_INT(p.sc->rel[1].tail, TEX_TAIL_GUARD);
    TT_EQ_INT(p.sc->rel[0].tail, TEX_TAIL_AUTO);
    tex_iter *x, *y;
    TT_EQ_INT(tex_split_tail(p.sc, ji, I(2), TEX_TAIL_PREDICATE, &x, &y), 0);
    TT_EQ_INT(tex_split_tail(p.sc, jo, I(2), TEX_TAIL_ROUND_UP, NULL, NULL), 0);
    tex_ctx_free(ctx);

    // SHIFT_INWARDS on a pure data-parallel stage, extent >= factor
    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){10});
    tex_iter *i = tex_axis(ctx, "i", I(10));
    tex_tensor *B = tex_compute(ctx, "B", 1, &i, tex_add(TEX_AT(A, tex_iv(i)), I(1)));
    tex_schedule *s = tex_schedule_new(ctx, 1, &B);
    tex_stage *sb = tex_stage_of(s, B);
    TT_EQ_INT(tex_split_tail(sb, i, I(4), TEX_TAIL_SHIFT_INWARDS, &io, &ii), 0);
    TT_EQ_INT(sb->rel[0].tail, TEX_TAIL_SHIFT_INWARDS);
    TT_EQ_INT(tex_split_tail(sb, ii, I(4), TEX_TAIL_SHIFT_INWARDS, NULL, NULL), 0); // == extent
    tex_ctx_free(ctx);
}

static void test_split_symbolic(void)
{
    ctx = tex_ctx_new();
    tex_expr *n = tex_var(ctx, "n", TEX_I32);
    tex_expr *f = tex_var(ctx, "f", TEX_I32);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 1, &n);
    tex_iter *i = tex_axis(ctx, "i", n);
    tex_tensor *B = tex_compute(ctx, "B", 1, &i, tex_add(TEX_AT(A, tex_iv(i)), I(1)));
    tex_schedule *s = tex_schedule_new(ctx, 1, &B);
    tex_stage *sb = tex_stage_of(s, B);
    tex_iter *io, *ii, *a, *b;
    TT_EQ_INT(tex_split(sb, i, I(8), &io, &ii), 0);
    TT_EQ_INT(cextent(ii), 8);
    TT_EQ_INT(cextent(io), -1); // ceildiv(n, 8): symbolic
    texi_range r = {n, I(17), I(1)};
    TT_EQ_INT(texi_const_interval(io->extent, 1, &r).lo, 3);
    TT_EQ_INT(tex_split(sb, ii, f, &a, &b), 0); // symbolic factor
    TT_CHECK(b->extent == f);
    TT_EQ_STR(leaves(sb), "i.outer i.inner.outer i.inner.inner");
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------ tile, fuse, reorder */

static void test_tile(void)
{
    ctx = tex_ctx_new();
    mm p = matmul(64, 48, 4);
    tex_iter *xo, *yo, *xi, *yi;
    TT_EQ_INT(tex_tile(p.sc, p.i, p.j, I(8), I(16), &xo, &yo, &xi, &yi), 0);
    TT_EQ_STR(leaves(p.sc), "i.outer j.outer i.inner j.inner k");
    TT_EQ_INT(cextent(xo), 8);
    TT_EQ_INT(cextent(yo), 3);
    TT_EQ_INT(cextent(xi), 8);
    TT_EQ_INT(cextent(yi), 16);
    TT_EQ_INT(p.sc->n_rel, 2);
    tex_ctx_free(ctx);
}

static void test_fuse(void)
{
    ctx = tex_ctx_new();
    mm p = matmul(64, 32, 4);
    tex_iter *f, *fo, *fi;
    TT_EQ_INT(tex_fuse(p.sc, p.i, p.j, &f), 0);
    TT_EQ_STR(leaves(p.sc), "i.j.fused k");
    TT_EQ_INT(cextent(f), 2048);
    TT_CHECK(f->kind == TEXI_ITER_DATA);
    TT_EQ_INT(p.sc->rel[0].kind, TEXI_REL_FUSE);
    TT_CHECK(p.sc->rel[0].fused == f && p.sc->rel[0].outer == p.i && p.sc->rel[0].inner == p.j);
    // split the fused axis, fuse its parts again
    TT_EQ_INT(tex_split(p.sc, f, I(100), &fo, &fi), 0);
    TT_EQ_INT(cextent(fo), 21);
    tex_iter *g;
    TT_EQ_INT(tex_fuse(p.sc, fo, fi, &g), 0);
    TT_EQ_STR(leaves(p.sc), "i.j.fused.outer.i.j.fused.inner.fused k");
    TT_EQ_INT(cextent(g), 2100);
    tex_ctx_free(ctx);

    // fusing two reduce axes gives a reduce axis
    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 3, (int64_t[]){4, 5, 6});
    tex_iter *i = tex_axis(ctx, "i", I(4));
    tex_iter *r1 = tex_reduce_axis(ctx, "r1", I(5)), *r2 = tex_reduce_axis(ctx, "r2", I(6));
    tex_tensor *S = tex_compute(
        ctx, "S", 1, &i,
        tex_sum(TEX_AT(A, tex_iv(i), tex_iv(r1), tex_iv(r2)), 2, (tex_iter *[]){r1, r2}));
    tex_schedule *s = tex_schedule_new(ctx, 1, &S);
    tex_stage *ss = tex_stage_of(s, S);
    TT_EQ_STR(leaves(ss), "i r1 r2");
    TT_EQ_INT(tex_fuse(ss, r1, r2, &f), 0);
    TT_CHECK(f->kind == TEXI_ITER_REDUCE);
    TT_EQ_INT(cextent(f), 30);
    TT_EQ_STR(leaves(ss), "i r1.r2.fused");
    tex_ctx_free(ctx);
}

static void test_reorder(void)
{
    ctx = tex_ctx_new();
    mm p = matmul(8, 8, 8);
    TT_EQ_INT(tex_reorder(p.sc, 3, (tex_iter *[]){p.k, p.i, p.j}), 0);
    TT_EQ_STR(leaves(p.sc), "k i j");
    // a subset: the named leaves are permuted among the positions they occupy
    TT_EQ_INT(tex_reorder(p.sc, 2, (tex_iter *[]){p.j, p.k}), 0);
    TT_EQ_STR(leaves(p.sc), "j i k");
    TT_EQ_INT(tex_reorder(p.sc, 1, (tex_iter *[]){p.i}), 0);
    TT_EQ_STR(leaves(p.sc), "j i k");
    tex_iter *io, *ii;
    TT_EQ_INT(tex_split(p.sc, p.i, I(2), &io, &ii), 0);
    TT_EQ_INT(tex_reorder(p.sc, 3, (tex_iter *[]){ii, p.k, io}), 0);
    TT_EQ_STR(leaves(p.sc), "j i.inner k i.outer");
    TT_EQ_INT(p.sc->n_rel, 1); // reorder adds no relation
    tex_ctx_free(ctx);
}

/* ----------------------------------------------------------- annotations */

static texi_iter_attr attr_of(tex_stage *st, tex_iter *iv)
{
    return st->attr[texi_stage_iter_index(st, iv)];
}

static void test_annotations(void)
{
    ctx = tex_ctx_new();
    mm p = matmul(64, 64, 64);
    tex_iter *io, *ii, *jo, *ji, *ko, *ki;
    TT_EQ_INT(tex_split(p.sc, p.i, I(8), &io, &ii), 0);
    TT_EQ_INT(tex_split(p.sc, p.j, I(8), &jo, &ji), 0);
    TT_EQ_INT(tex_split(p.sc, p.k, I(4), &ko, &ki), 0);
    TT_EQ_INT(tex_parallel(p.sc, io), 0);
    TT_EQ_INT(tex_vectorize(p.sc, ji), 0);
    TT_EQ_INT(tex_unroll(p.sc, ki), 0); // unrolling a reduce axis is fine
    TT_EQ_INT(tex_unroll(p.sc, ii), 0);
    TT_EQ_INT(attr_of(p.sc, io).for_kind, TEXI_FOR_PARALLEL);
    TT_EQ_INT(attr_of(p.sc, ji).for_kind, TEXI_FOR_VECTORIZED);
    TT_EQ_INT(attr_of(p.sc, ki).for_kind, TEXI_FOR_UNROLLED);
    TT_EQ_INT(attr_of(p.sc, jo).for_kind, TEXI_FOR_SERIAL);
    TT_EQ_INT(attr_of(p.sc, io).thread_tag, -1);
    // the same annotation twice is a no-op
    TT_EQ_INT(tex_parallel(p.sc, io), 0);
    TT_EQ_INT(tex_errcode(ctx), 0);
    tex_ctx_free(ctx);

    ctx = tex_ctx_new();
    p = matmul(64, 64, 64);
    TT_EQ_INT(tex_split(p.sc, p.i, I(8), &io, &ii), 0);
    TT_EQ_INT(tex_split(p.sc, p.k, I(8), &ko, &ki), 0);
    TT_EQ_INT(tex_bind(p.sc, io, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(p.sc, ii, TEX_THREAD_X), 0);
    TT_EQ_INT(tex_bind(p.sc, p.j, TEX_VTHREAD), 0);
    TT_EQ_INT(tex_bind(p.sc, ki, TEX_THREAD_Y), 0); // cross-thread reduction request
    TT_EQ_INT(attr_of(p.sc, io).for_kind, TEXI_FOR_THREAD);
    TT_EQ_INT(attr_of(p.sc, io).thread_tag, TEX_BLOCK_X);
    TT_EQ_INT(attr_of(p.sc, ii).thread_tag, TEX_THREAD_X);
    TT_EQ_INT(attr_of(p.sc, ki).thread_tag, TEX_THREAD_Y);
    TT_EQ_INT(tex_bind(p.sc, ii, TEX_THREAD_X), 0); // again: no-op
    tex_ctx_free(ctx);
}

static void test_storage(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){16, 16});
    tex_iter *i = tex_axis(ctx, "i", I(16)), *j = tex_axis(ctx, "j", I(16));
    tex_tensor *B = tex_compute(ctx, "B", 2, (tex_iter *[]){i, j},
                                tex_add(TEX_AT(A, tex_iv(i), tex_iv(j)), I(1)));
    tex_iter *y = tex_axis(ctx, "y", I(16)), *x = tex_axis(ctx, "x", I(16));
    tex_tensor *C = tex_compute(ctx, "C", 2, (tex_iter *[]){y, x},
                                tex_mul(TEX_AT(B, tex_iv(x), tex_iv(y)), I(2)));
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_stage *sb = tex_stage_of(s, B), *sc = tex_stage_of(s, C);
    TT_EQ_INT(tex_set_scope(sb, TEX_SCOPE_SHARED), 0);
    TT_EQ_INT(sb->scope, TEXI_SCOPE_SHARED);
    TT_EQ_INT(tex_set_scope(sc, TEX_SCOPE_GLOBAL), 0); // outputs may stay global
    TT_EQ_INT(tex_storage_align(sb, i, 32, 1), 0);
    TT_EQ_INT(sb->align_factor[0], 32);
    TT_EQ_INT(sb->align_offset[0], 1);
    TT_EQ_INT(sb->align_factor[1], 0);
    TT_EQ_INT(sb->storage_order[0], 0); /* row-major until reordered */
    TT_EQ_INT(tex_reorder_storage(sb, 2, (tex_iter *[]){j, i}), 0);
    TT_EQ_INT(sb->storage_order[0], 1);
    TT_EQ_INT(sb->storage_order[1], 0);
    TT_EQ_INT(tex_compute_at(sb, sc, y), 0);
    TT_EQ_INT(tex_double_buffer(sb), 0);
    TT_CHECK(sb->double_buffer);
    char *str = tex_schedule_str(s);
    TT_CHECK(contains(str, "stage B: compute at axis y of C, scope shared, double buffer"));
    TT_CHECK(contains(str, "storage align i: factor 32, offset 1"));
    TT_CHECK(contains(str, "storage order j, i"));
    free(str);
    tex_ctx_free(ctx);
}

/* --------------------------------------------------------------- attach */

static void test_attach(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){32});
    tex_iter *i = tex_axis(ctx, "i", I(32));
    tex_tensor *B = tex_compute(ctx, "B", 1, &i, tex_add(TEX_AT(A, tex_iv(i)), I(1)));
    tex_tensor *C = tex_compute(ctx, "C", 1, &i, tex_mul(TEX_AT(B, tex_iv(i)), I(2)));
    tex_tensor *D = tex_compute(ctx, "D", 1, &i, tex_sub(TEX_AT(C, tex_iv(i)), I(3)));
    tex_schedule *s = tex_schedule_new(ctx, 1, &D);
    tex_stage *sb = tex_stage_of(s, B), *sc = tex_stage_of(s, C), *sd = tex_stage_of(s, D);
    tex_iter *o, *in;
    TT_EQ_INT(tex_split(sd, i, I(8), &o, &in), 0);
    TT_EQ_INT(tex_compute_at(sc, sd, o), 0);
    TT_EQ_INT(sc->attach, TEXI_ATTACH_AT);
    TT_CHECK(sc->attach_stage == sd && sc->attach_iv == o);
    TT_EQ_INT(tex_compute_at(sb, sd, in), 0); // D reads B through C: transitive
    TT_EQ_INT(tex_compute_at(sb, sc, i), 0);  // moved into C's loop
    TT_CHECK(sb->attach_stage == sc && sb->attach_iv == i);
    TT_EQ_INT(tex_compute_root(sb), 0);
    TT_EQ_INT(sb->attach, TEXI_ATTACH_ROOT);
    TT_CHECK(sb->attach_stage == NULL);
    TT_EQ_INT(tex_compute_inline(sb), 0);
    TT_EQ_INT(sb->attach, TEXI_ATTACH_INLINE);
    TT_EQ_INT(tex_compute_at(sb, sc, i), 0); // from inline back to an attach point
    TT_EQ_INT(sb->attach, TEXI_ATTACH_AT);
    TT_EQ_INT(tex_compute_root(sd), 0); // outputs are at root already
    char *str = tex_schedule_str(s);
    TT_CHECK(contains(str, "stage C: compute at axis i.outer of D, scope global"));
    TT_CHECK(contains(str, "stage B: compute at axis i of C, scope global"));
    TT_CHECK(contains(str, "stage D (output): compute at root, scope global"));
    free(str);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------------ schedule_str */

static void test_schedule_str(void)
{
    ctx = tex_ctx_new();
    mm p = matmul(64, 32, 16);
    tex_iter *io, *ii, *jo, *ji;
    TT_EQ_INT(tex_tile(p.sc, p.i, p.j, I(8), I(5), &io, &jo, &ii, &ji), 0);
    TT_EQ_INT(tex_parallel(p.sc, io), 0);
    TT_EQ_INT(tex_vectorize(p.sc, ji), 0);
    char *str = tex_schedule_str(p.s);
    TT_CHECK(str != NULL);
    TT_CHECK(contains(str, "stage A: placeholder [64, 16]\n"));
    TT_CHECK(contains(str, "stage C (output): compute at root, scope global\n"));
    TT_CHECK(contains(str, "  region: [0, 64), [0, 32)\n"));
    TT_CHECK(contains(str, "  axis i.outer [0, 8)  parallel\n"));
    TT_CHECK(contains(str, "  axis j.outer [0, 7)\n"));
    TT_CHECK(contains(str, "  axis j.inner [0, 5)  vectorized\n"));
    TT_CHECK(contains(str, "  axis k       [0, 16)  reduce\n"));
    TT_CHECK(contains(str, "  split i -> i.outer, i.inner by factor 8\n"));
    TT_CHECK(!contains(str, "bounds: not available"));
    // stable: printing again gives the same text, and leaves no error behind
    char *again = tex_schedule_str(p.s);
    TT_EQ_STR(again, str);
    TT_EQ_INT(tex_errcode(ctx), 0);
    if (tt_failed_checks)
        printf("%s", str);
    free(str);
    free(again);
    TT_CHECK(tex_schedule_str(NULL) == NULL);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------------- cache_read */

static void test_cache_read(void)
{
    ctx = tex_ctx_new();
    mm p = matmul(6, 5, 4);
    tex_tensor *AA = tex_cache_read(p.s, p.A, TEX_SCOPE_SHARED, 1, &p.C);
    TT_CHECK(AA != NULL);
    TT_EQ_STR(tex_tensor_name(AA), "A.shared");
    TT_EQ_INT(tex_tensor_ndim(AA), 2);
    TT_EQ_INT(p.s->n_stages, 4);
    TT_CHECK(p.s->stages[0]->tensor == p.A);
    TT_CHECK(p.s->stages[1]->tensor == AA);
    tex_stage *sa = tex_stage_of(p.s, AA);
    TT_CHECK(sa->is_cache && !sa->is_output);
    TT_EQ_INT(sa->scope, TEXI_SCOPE_SHARED);
    TT_EQ_STR(leaves(sa), "ax0 ax1");
    // C's stage now reads A.shared, not A; its axes are unchanged
    TT_CHECK(p.sc->op->inputs[0] == AA || p.sc->op->inputs[1] == AA);
    TT_CHECK(p.sc->op->inputs[0] != p.A && p.sc->op->inputs[1] != p.A);
    TT_CHECK(tex_op_axis(p.sc, 0) == p.i && tex_op_reduce_axis(p.sc, 0) == p.k);
    int n;
    texi_schedule_consumers(p.s, p.A, &n);
    TT_EQ_INT(n, 1); // only the cache
    // values: the cache equals A, the rewritten C equals C
    check_same_values(AA, p.A, 1, &p.A);
    check_same_values(op_tensor(p.sc, "C2"), p.C, 2, (tex_tensor *[]){p.A, p.B});
    // a second cache of A for the same scope gets a unique name; the cache of a
    // cache works too
    tex_tensor *AL = tex_cache_read(p.s, AA, TEX_SCOPE_LOCAL, 1, &p.C);
    TT_EQ_STR(tex_tensor_name(AL), "A.shared.local");
    tex_tensor *BS = tex_cache_read(p.s, p.B, TEX_SCOPE_SHARED, 1, &p.C);
    TT_EQ_STR(tex_tensor_name(BS), "B.shared");
    TT_EQ_INT(p.s->n_stages, 6);
    check_same_values(op_tensor(p.sc, "C3"), p.C, 2, (tex_tensor *[]){p.A, p.B});
    tex_ctx_free(ctx);
}

static void test_cache_read_two_readers(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){9});
    tex_iter *i = tex_axis(ctx, "i", I(9));
    tex_tensor *B = tex_compute(ctx, "B", 1, &i, tex_add(TEX_AT(A, tex_iv(i)), I(1)));
    tex_tensor *C =
        tex_compute(ctx, "C", 1, &i, tex_mul(TEX_AT(A, tex_iv(i)), TEX_AT(B, tex_iv(i))));
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_tensor *c1 = tex_cache_read(s, A, TEX_SCOPE_LOCAL, 2, (tex_tensor *[]){B, C});
    TT_EQ_STR(tex_tensor_name(c1), "A.local");
    int n;
    texi_schedule_consumers(s, A, &n);
    TT_EQ_INT(n, 1);
    texi_schedule_consumers(s, c1, &n);
    TT_EQ_INT(n, 2);
    // a second cache for reader C only: the name is made unique
    tex_tensor *c2 = tex_cache_read(s, c1, TEX_SCOPE_LOCAL, 1, &C);
    TT_EQ_STR(tex_tensor_name(c2), "A.local.local");
    tex_tensor *c3 = tex_cache_read(s, A, TEX_SCOPE_LOCAL, 1, &c1);
    TT_EQ_STR(tex_tensor_name(c3), "A.local.1");
    check_same_values(op_tensor(tex_stage_of(s, C), "C2"), C, 1, &A);
    check_same_values(op_tensor(tex_stage_of(s, c1), "c1b"), A, 1, &A);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------------ cache_write */

static void test_cache_write(void)
{
    ctx = tex_ctx_new();
    mm p = matmul(6, 5, 4);
    tex_tensor *CL = tex_cache_write(p.s, p.C, TEX_SCOPE_LOCAL);
    TT_CHECK(CL != NULL);
    TT_EQ_STR(tex_tensor_name(CL), "C.local");
    TT_EQ_INT(p.s->n_stages, 4);
    tex_stage *sl = tex_stage_of(p.s, CL);
    TT_CHECK(p.s->stages[2] == sl && p.s->stages[3] == p.sc);
    TT_CHECK(tex_stage_of(p.s, p.C) == p.sc); // the handle stays valid
    TT_CHECK(sl->is_cache && !sl->is_output && p.sc->is_output);
    TT_EQ_INT(sl->scope, TEXI_SCOPE_LOCAL);
    // CL: C's original body over new axes with C's names and extents
    TT_EQ_STR(leaves(sl), "i j k");
    TT_CHECK(tex_op_axis(sl, 0) != p.i && tex_op_reduce_axis(sl, 0) != p.k);
    TT_EQ_INT(cextent(tex_op_axis(sl, 1)), 5);
    TT_EQ_INT(cextent(tex_op_reduce_axis(sl, 0)), 4);
    TT_CHECK(tex_op_reduce_axis(sl, 0)->kind == TEXI_ITER_REDUCE);
    // C: a copy over fresh axes, no reduction left
    TT_EQ_STR(leaves(p.sc), "i j");
    TT_CHECK(tex_op_axis(p.sc, 0) != p.i && tex_op_axis(p.sc, 0) != tex_op_axis(sl, 0));
    TT_CHECK(tex_op_reduce_axis(p.sc, 0) == NULL);
    tex_clear_error(ctx);
    TT_EQ_INT(p.sc->n_rel, 0);
    TT_EQ_INT(p.sc->op->n_inputs, 1);
    TT_CHECK(p.sc->op->inputs[0] == CL);
    check_same_values(CL, p.C, 2, (tex_tensor *[]){p.A, p.B});
    // the new C op (reads CL) computes C
    check_same_values(op_tensor(p.sc, "C2"), p.C, 2, (tex_tensor *[]){p.A, p.B});
    // the new stages can be scheduled
    tex_iter *o, *in;
    TT_EQ_INT(tex_split(p.sc, tex_op_axis(p.sc, 0), I(2), &o, &in), 0);
    TT_EQ_INT(tex_compute_at(sl, p.sc, o), 0);
    TT_EQ_INT(tex_reorder(sl, 2, (tex_iter *[]){tex_op_reduce_axis(sl, 0), tex_op_axis(sl, 0)}), 0);
    TT_EQ_STR(leaves(sl), "k j i");
    tex_ctx_free(ctx);
}

/* cache_read then cache_write and the reverse, as in GPU schedules. */
static void test_cache_read_write_mix(void)
{
    ctx = tex_ctx_new();
    mm p = matmul(4, 4, 4);
    tex_tensor *CL = tex_cache_write(p.s, p.C, TEX_SCOPE_LOCAL);
    tex_tensor *AA = tex_cache_read(p.s, p.A, TEX_SCOPE_SHARED, 1, &CL);
    tex_tensor *BB = tex_cache_read(p.s, p.B, TEX_SCOPE_SHARED, 1, &CL);
    TT_CHECK(CL && AA && BB);
    TT_EQ_INT(p.s->n_stages, 6);
    tex_stage *sl = tex_stage_of(p.s, CL);
    check_same_values(op_tensor(sl, "CL2"), p.C, 2, (tex_tensor *[]){p.A, p.B});
    tex_ctx_free(ctx);
}

/* ---------------------------------------------------------------- rfactor */

/* S[i] = R_k X[i, k] with R = sum or max over n x m. */
typedef struct {
    tex_tensor *X, *S;
    tex_iter *i, *k;
    tex_schedule *s;
    tex_stage *ss;
} red;

static red reduction(int64_t n, int64_t m, bool max)
{
    red r;
    r.X = tex_placeholder_c(ctx, "X", TEX_F32, 2, (int64_t[]){n, m});
    r.i = tex_axis(ctx, "i", I(n));
    r.k = tex_reduce_axis(ctx, "k", I(m));
    tex_expr *b = TEX_AT(r.X, tex_iv(r.i), tex_iv(r.k));
    r.S = tex_compute(ctx, "S", 1, &r.i, max ? tex_reduce_max(b, 1, &r.k) : tex_sum(b, 1, &r.k));
    r.s = tex_schedule_new(ctx, 1, &r.S);
    r.ss = tex_stage_of(r.s, r.S);
    return r;
}

/* After rfactor, S's new op (reading SF) must compute S. */
static void check_rfactor_values(red *r, tex_tensor *sf)
{
    tex_tensor *s2 = op_tensor(r->ss, "S2");
    (void)sf;
    check_same_values(s2, r->S, 1, &r->X);
}

static void test_rfactor_root_axis(void)
{
    ctx = tex_ctx_new();
    red r = reduction(5, 7, false);
    tex_tensor *SF = tex_rfactor(r.s, r.S, r.k, 1);
    TT_CHECK(SF != NULL);
    TT_EQ_STR(tex_tensor_name(SF), "S.rf");
    TT_EQ_INT(tex_tensor_ndim(SF), 2);
    tex_stage *sf = tex_stage_of(r.s, SF);
    TT_EQ_STR(leaves(sf), "i k");
    TT_CHECK(tex_op_axis(sf, 1)->kind == TEXI_ITER_DATA);
    TT_EQ_INT(cextent(tex_op_axis(sf, 1)), 7);
    TT_CHECK(tex_op_reduce_axis(sf, 0) == NULL); // no reduction left in SF
    tex_clear_error(ctx);
    TT_EQ_STR(leaves(r.ss), "i k");
    TT_CHECK(tex_op_reduce_axis(r.ss, 0)->kind == TEXI_ITER_REDUCE);
    TT_CHECK(r.s->stages[r.s->n_stages - 2] == sf);
    check_rfactor_values(&r, SF);
    // factor axis 0: SF[k, i]
    tex_ctx_free(ctx);
    ctx = tex_ctx_new();
    r = reduction(5, 7, true);
    SF = tex_rfactor(r.s, r.S, r.k, 0);
    TT_EQ_STR(leaves(tex_stage_of(r.s, SF)), "k i");
    check_rfactor_values(&r, SF);
    tex_ctx_free(ctx);
}

static void test_rfactor_split(void)
{
    for (int inner = 0; inner < 2; inner++)
        for (int max = 0; max < 2; max++)
            for (int m = 8; m <= 10; m += 2) { // 8 divides by 4, 10 does not
                ctx = tex_ctx_new();
                red r = reduction(3, m, max);
                tex_iter *ko, *ki;
                TT_EQ_INT(tex_split(r.ss, r.k, I(4), &ko, &ki), 0);
                tex_tensor *SF = tex_rfactor(r.s, r.S, inner ? ki : ko, 1);
                TT_CHECK(SF != NULL);
                if (!SF) {
                    printf("  %s\n", tex_errmsg(ctx));
                    tex_ctx_free(ctx);
                    continue;
                }
                tex_stage *sf = tex_stage_of(r.s, SF);
                TT_EQ_STR(leaves(sf), inner ? "i k.inner k.outer" : "i k.outer k.inner");
                TT_EQ_INT(cextent(tex_op_axis(sf, 1)), inner ? 4 : (m + 3) / 4);
                TT_EQ_STR(leaves(r.ss), inner ? "i k.inner" : "i k.outer");
                TT_CHECK((sf->op->body->kind == TEXI_EXPR_REDUCE &&
                          sf->op->body->u.red.cond != NULL) == (m == 10));
                check_rfactor_values(&r, SF);
                // SF's values: sum of SF over its factored axis gives S
                tex_ctx_free(ctx);
            }
}

/* rfactor of one of two reduce axes; the other stays a reduce axis of SF. */
static void test_rfactor_two_axes(void)
{
    ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 3, (int64_t[]){3, 4, 5});
    tex_iter *i = tex_axis(ctx, "i", I(3));
    tex_iter *a = tex_reduce_axis(ctx, "a", I(4)), *b = tex_reduce_axis(ctx, "b", I(5));
    tex_expr *cond = tex_lt(tex_iv(a), tex_iv(b));
    tex_tensor *S = tex_compute(
        ctx, "S", 1, &i,
        tex_reduce_where(
            tex_sum(TEX_AT(X, tex_iv(i), tex_iv(a), tex_iv(b)), 2, (tex_iter *[]){a, b}), cond));
    tex_schedule *s = tex_schedule_new(ctx, 1, &S);
    tex_stage *ss = tex_stage_of(s, S);
    tex_tensor *SF = tex_rfactor(s, S, b, 0);
    TT_CHECK(SF != NULL);
    tex_stage *sf = tex_stage_of(s, SF);
    TT_EQ_STR(leaves(sf), "b i a");
    TT_CHECK(sf->op->body->u.red.cond != NULL);
    check_same_values(op_tensor(ss, "S2"), S, 1, &X);
    // SF can be rfactored again? It is a reduction over a: yes.
    tex_tensor *SFF = tex_rfactor(s, SF, tex_op_reduce_axis(sf, 0), 2);
    TT_CHECK(SFF != NULL);
    check_same_values(op_tensor(ss, "S3"), S, 1, &X);
    tex_ctx_free(ctx);
}

int main(void)
{
    TT_RUN(test_schedule_new);
    TT_RUN(test_stage_order);
    TT_RUN(test_split);
    TT_RUN(test_split_nparts_and_tail);
    TT_RUN(test_split_symbolic);
    TT_RUN(test_tile);
    TT_RUN(test_fuse);
    TT_RUN(test_reorder);
    TT_RUN(test_annotations);
    TT_RUN(test_storage);
    TT_RUN(test_attach);
    TT_RUN(test_schedule_str);
    TT_RUN(test_cache_read);
    TT_RUN(test_cache_read_two_readers);
    TT_RUN(test_cache_write);
    TT_RUN(test_cache_read_write_mix);
    TT_RUN(test_rfactor_root_axis);
    TT_RUN(test_rfactor_split);
    TT_RUN(test_rfactor_two_axes);
    return tt_finish();
}
