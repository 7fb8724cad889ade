/*
 * tex_merge (src/schedule/merge.c) and tex_auto_schedule's use of it:
 * stages that repeat another's definition (elementwise, reductions with
 * reduce axes of other names, a repeated stage whose reader comes before the
 * kept one in the stage order, a kept stage already inlined or split) are
 * merged, and the kernels, JIT-compiled and
 * run on random non-zero inputs with the output poisoned, still match the
 * oracle over odd and symbolic shapes (also the CUDA schedule, run on the
 * CPU). The trace replays the merge; the
 * error paths name the stages; definitions that differ only slightly (a
 * constant, a reduce range, an index) are not merged.
 */
#include "tt.h"
#include "support/autosched.h"
#include "schedule/primitive.h"

static char cache_dir[] = "/tmp/tex-test-merge-XXXXXX";

/* Builds Y = A + B * R with A = exp(X) * 2 and B its repeat (other axes),
 * R a row sum of X and T its repeat (other reduce axis), Y = A + B*R*T:
 * c's workload, with the four tensors in abrt. */
static tex_tensor *repeats(as_case *c, tex_tensor *abrt[4])
{
    tex_tensor *X = ops_input(&c->w, "X", 2, c->d);
    tex_ctx *ctx = c->ctx;
    tex_iter *ax[2][2], *k[2];
    for (int t = 0; t < 2; t++) {
        ax[t][0] = tex_axis(ctx, t ? "i1" : "i0", c->d[0]);
        ax[t][1] = tex_axis(ctx, t ? "j1" : "j0", c->d[1]);
        k[t] = tex_reduce_axis(ctx, t ? "k1" : "k0", c->d[1]);
        tex_expr *e = tex_exp(TEX_AT(X, tex_iv(ax[t][0]), tex_iv(ax[t][1])));
        abrt[t] = ops_mid(&c->w, tex_compute(ctx, t ? "B" : "A", 2, ax[t],
                                             tex_mul(e, tex_const(ctx, TEX_F32, 2.0))));
    }
    for (int t = 0; t < 2; t++) {
        tex_iter *i = tex_axis(ctx, t ? "r1" : "r0", c->d[0]);
        tex_expr *sum = tex_sum(TEX_AT(X, tex_iv(i), tex_iv(k[t])), 1, &k[t]);
        abrt[2 + t] = ops_mid(&c->w, tex_compute(ctx, t ? "T" : "R", 1, &i, sum));
    }
    tex_iter *i = tex_axis(ctx, "i", c->d[0]), *j = tex_axis(ctx, "j", c->d[1]);
    tex_expr *bij = TEX_AT(abrt[1], tex_iv(i), tex_iv(j));
    tex_expr *rt = tex_mul(TEX_AT(abrt[2], tex_iv(i)), TEX_AT(abrt[3], tex_iv(i)));
    return tex_compute(ctx, "Y", 2, (tex_iter *[]){i, j},
                       tex_add(TEX_AT(abrt[0], tex_iv(i), tex_iv(j)), tex_mul(bij, rt)));
}

/* tex_merge by hand: B into A, T into R; the schedule has two stages fewer
 * and its kernel matches the oracle; the trace replays onto a fresh
 * schedule. */
static void merged_by_hand(int64_t m, int64_t n, bool sym)
{
    as_case c;
    case_init(&c, "merge", 2, (int64_t[]){m, n}, sym);
    tex_tensor *t[4];
    tex_tensor *Y = repeats(&c, t);
    c.w.out = Y;
    tex_schedule *s = tex_schedule_new(c.ctx, 1, &Y);
    TT_CHECK(s != NULL);
    int before = s->n_stages;
    TT_EQ_INT(tex_merge(tex_stage_of(s, t[1]), tex_stage_of(s, t[0])), 0);
    TT_EQ_INT(tex_merge(tex_stage_of(s, t[3]), tex_stage_of(s, t[2])), 0);
    TT_EQ_INT(s->n_stages, before - 2);
    TT_CHECK(tex_stage_of(s, t[1]) == NULL);
    tex_clear_error(c.ctx);
    TT_CHECK(ops_check_jit(&c.w, s, "cpu", 11, NULL, true) == 0);
    char *trace = tex_schedule_trace(s);
    TT_CHECK(trace && strstr(trace, "merge B A") && strstr(trace, "merge T R"));
    tex_schedule *again = tex_schedule_new(c.ctx, 1, &Y);
    TT_EQ_INT(tex_schedule_apply_text(again, trace), 0);
    TT_EQ_INT(again->n_stages, before - 2);
    TT_CHECK(ops_check_jit(&c.w, again, "cpu", 12, NULL, true) == 0);
    free(trace);
    tex_ctx_free(c.ctx);
}

static void test_by_hand(void)
{
    merged_by_hand(7, 13, false);
    merged_by_hand(1, 1, false);
    merged_by_hand(5, 31, true);
}

/* The kept stage may be scheduled before the merge: inlined, or split and
 * vectorized; dup's readers then see its elements as they are. */
static void test_kept_scheduled(void)
{
    for (int inl = 0; inl < 2; inl++) {
        as_case c;
        case_init(&c, "merge_kept", 2, (int64_t[]){11, 37}, inl);
        tex_tensor *X = ops_input(&c.w, "X", 2, c.d);
        tex_tensor *A = tex_op_sigmoid(c.ctx, "A", X), *B = tex_op_sigmoid(c.ctx, "B", X);
        tex_tensor *Y = tex_op_sub(c.ctx, "Y", tex_op_mul(c.ctx, "P", A, X), B);
        c.w.out = Y;
        tex_schedule *s = tex_schedule_new(c.ctx, 1, &Y);
        tex_stage *sa = tex_stage_of(s, A);
        tex_iter *o, *in;
        if (inl) {
            TT_EQ_INT(tex_compute_inline(sa), 0);
        } else {
            TT_EQ_INT(tex_split(sa, tex_op_axis(sa, 1), tex_int(c.ctx, 16), &o, &in), 0);
            TT_EQ_INT(tex_vectorize(sa, in), 0);
        }
        TT_EQ_INT(tex_merge(tex_stage_of(s, B), sa), 0);
        TT_CHECK(ops_check_jit(&c.w, s, "cpu", 21, NULL, true) == 0);
        tex_ctx_free(c.ctx);
    }
}

/* A repeat whose reader comes before the kept stage in the stage order:
 * Y = P + Q, P = A * 3 reads A, Q = B + 1 reads B, with B a repeat of A;
 * merging A into B moves B to A's place, before P. */
static void test_reader_before_kept(void)
{
    as_case c;
    case_init(&c, "merge_order", 2, (int64_t[]){9, 17}, false);
    tex_ctx *ctx = c.ctx;
    tex_tensor *X = ops_input(&c.w, "X", 2, c.d);
    tex_tensor *AB[2], *PQ[2];
    for (int t = 0; t < 2; t++) {
        tex_iter *i = tex_axis(ctx, "i", c.d[0]), *j = tex_axis(ctx, "j", c.d[1]);
        AB[t] = tex_compute(ctx, t ? "B" : "A", 2, (tex_iter *[]){i, j},
                            tex_sigmoid(TEX_AT(X, tex_iv(i), tex_iv(j))));
        tex_iter *p = tex_axis(ctx, "p", c.d[0]), *q = tex_axis(ctx, "q", c.d[1]);
        tex_expr *v = TEX_AT(AB[t], tex_iv(p), tex_iv(q));
        PQ[t] = tex_compute(ctx, t ? "Q" : "P", 2, (tex_iter *[]){p, q},
                            t ? tex_add(v, tex_const(ctx, TEX_F32, 1)) : tex_mul(v, v));
    }
    tex_tensor *Y = tex_op_add(ctx, "Y", PQ[0], PQ[1]);
    c.w.out = Y;
    tex_schedule *s = tex_schedule_new(ctx, 1, &Y);
    int a = texi_schedule_stage_index(s, tex_stage_of(s, AB[0]));
    int p = texi_schedule_stage_index(s, tex_stage_of(s, PQ[0]));
    int b = texi_schedule_stage_index(s, tex_stage_of(s, AB[1]));
    tex_stage *kept = a < b ? tex_stage_of(s, AB[1]) : tex_stage_of(s, AB[0]);
    tex_stage *dup = a < b ? tex_stage_of(s, AB[0]) : tex_stage_of(s, AB[1]);
    TT_CHECK(p > a || p > b); /* some reader follows the repeat it reads */
    TT_EQ_INT(tex_merge(dup, kept), 0);
    for (int r = 0; r < 2; r++) /* both readers now follow the kept stage */
        TT_CHECK(texi_schedule_stage_index(s, tex_stage_of(s, PQ[r])) >
                 texi_schedule_stage_index(s, kept));
    TT_CHECK(ops_check_jit(&c.w, s, "cpu", 5, NULL, true) == 0);
    tex_ctx_free(ctx);
}

/* tex_auto_schedule merges the repeats itself (TEX_DUMP=fusion says so),
 * also two gelu ops of one input, and the kernels match the oracle. */
static void test_auto_schedule(void)
{
    for (int sym = 0; sym < 2; sym++) {
        as_case c;
        case_init(&c, "merge_auto", 2, (int64_t[]){6, 23}, sym);
        tex_tensor *t[4];
        tex_tensor *Y = repeats(&c, t);
        tex_schedule *s = case_check(&c, Y, "cpu");
        TT_CHECK(s && !texi_schedule_find_stage(s, t[1]) && !texi_schedule_find_stage(s, t[3]));
        /* The CUDA schedule merges them too; it runs on the CPU (gpu_to_cpu). */
        tex_schedule *g = tex_auto_schedule(c.ctx, 1, &Y, "cuda");
        TT_CHECK(g && !texi_schedule_find_stage(g, t[1]) && !texi_schedule_find_stage(g, t[3]));
        char why[2048] = "";
        tex_func *f = g ? ops_lower(&c.w, g, why, sizeof why) : NULL;
        TT_CHECK(f && ops_jit_compare(&c.w, f, "cpu", 3, why, sizeof why) == 0);
        if (why[0])
            printf("  %s\n", why);
        tex_ctx_free(c.ctx);
    }
    as_case c;
    case_init(&c, "merge_gelu", 2, (int64_t[]){5, 19}, false);
    tex_tensor *X = ops_input(&c.w, "X", 2, c.d);
    tex_tensor *G1 = tex_op_gelu(c.ctx, "G1", X), *G2 = tex_op_gelu(c.ctx, "G2", X);
    tex_tensor *Y = tex_op_mul(c.ctx, "Y", G1, G2);
    char text[4096];
    tex_schedule *s = dump_fusion(c.ctx, 1, &Y, "cpu", text, sizeof text);
    TT_CHECK(strstr(text, "'G2' merged into 'G1'") != NULL);
    TT_CHECK(s && !texi_schedule_find_stage(s, G2));
    TT_CHECK(case_check(&c, Y, "cpu") != NULL);
    tex_ctx_free(c.ctx);
}

/* Near repeats are not merged: another constant, reduce range, index or
 * dtype; an output is kept (merged into when the other is not). */
static void test_not_repeats(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 2, (int64_t[]){8, 8});
    tex_iter *i[6], *j[6], *k[6];
    tex_tensor *T[6];
    for (int t = 0; t < 6; t++) {
        i[t] = tex_axis(ctx, "i", tex_int(ctx, 8));
        j[t] = tex_axis(ctx, "j", tex_int(ctx, 8));
        k[t] = tex_reduce_axis(ctx, "k", tex_int(ctx, t == 2 ? 7 : 8));
    }
    /* 0: sum_k X[i,k] * j; 1: * (j + 1); 2: over k < 7; 3: X[k,i]; 4: f64; 5 = 0 */
    for (int t = 0; t < 6; t++) {
        tex_expr *x =
            t == 3 ? TEX_AT(X, tex_iv(k[t]), tex_iv(i[t])) : TEX_AT(X, tex_iv(i[t]), tex_iv(k[t]));
        tex_expr *js =
            tex_cast(TEX_F32, t == 1 ? tex_add(tex_iv(j[t]), tex_int(ctx, 1)) : tex_iv(j[t]));
        tex_expr *term = tex_mul(x, js);
        tex_expr *body = tex_sum(t == 4 ? tex_cast(TEX_F64, term) : term, 1, &k[t]);
        char name[16];
        snprintf(name, sizeof name, "T%d", t);
        T[t] = tex_compute(ctx, name, 2, (tex_iter *[]){i[t], j[t]}, body);
    }
    tex_tensor *Z = T[0];
    for (int t = 1; t < 6; t++) {
        char name[16];
        snprintf(name, sizeof name, "Z%d", t);
        Z = tex_op_add(ctx, name, Z, t == 4 ? tex_op_cast(ctx, "C4", T[t], TEX_F32) : T[t]);
    }
    tex_schedule *s = tex_schedule_new(ctx, 1, &Z);
    TT_CHECK(s != NULL);
    for (int t = 1; t < 5; t++) {
        TT_CHECK(!texi_stage_same_definition(tex_stage_of(s, T[t]), tex_stage_of(s, T[0])));
        TT_EQ_INT(tex_merge(tex_stage_of(s, T[t]), tex_stage_of(s, T[0])), TEX_EINVAL);
        TT_CHECK(strstr(tex_errmsg(ctx), "different definitions") != NULL);
        tex_clear_error(ctx);
    }
    TT_CHECK(texi_stage_same_definition(tex_stage_of(s, T[5]), tex_stage_of(s, T[0])));
    /* An output is not merged away; two outputs of one definition both stay
     * under tex_auto_schedule. */
    tex_schedule *two = tex_schedule_new(ctx, 2, (tex_tensor *[]){T[0], T[5]});
    TT_EQ_INT(tex_merge(tex_stage_of(two, T[5]), tex_stage_of(two, T[0])), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'T5' is an output") != NULL);
    tex_clear_error(ctx);
    tex_schedule *as = tex_auto_schedule(ctx, 2, (tex_tensor *[]){T[0], T[5]}, "cpu");
    TT_CHECK(as && texi_schedule_find_stage(as, T[0]) && texi_schedule_find_stage(as, T[5]));
    tex_ctx_free(ctx);
}

/* Every refusal names the stages and leaves the schedule as it was. */
static void test_errors(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 1, (int64_t[]){16});
    tex_tensor *A = tex_op_sigmoid(ctx, "A", X), *B = tex_op_sigmoid(ctx, "B", X);
    tex_tensor *C = tex_op_tanh(ctx, "C", X);
    tex_tensor *Y = tex_op_add(ctx, "Y", tex_op_add(ctx, "S", A, B), C);
    tex_schedule *s = tex_schedule_new(ctx, 1, &Y);
    tex_stage *sa = tex_stage_of(s, A), *sb = tex_stage_of(s, B), *sc = tex_stage_of(s, C);
    int n = s->n_stages;
    TT_EQ_INT(tex_merge(NULL, sa), TEX_EMISUSE);
    TT_EQ_INT(tex_merge(sb, NULL), TEX_EMISUSE);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_merge(sb, sb), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'B' cannot be merged into itself") != NULL);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_merge(sc, sa), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'C' and 'A' have different definitions") != NULL);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_merge(tex_stage_of(s, Y), sa), TEX_EINVAL);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_merge(tex_stage_of(s, X), sa), TEX_EINVAL); /* a placeholder */
    tex_clear_error(ctx);
    tex_iter *o, *in;
    TT_EQ_INT(tex_split(sb, tex_op_axis(sb, 0), tex_int(ctx, 4), &o, &in), 0);
    TT_EQ_INT(tex_merge(sb, sa), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'B' already has schedule primitives") != NULL);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_compute_at(sa, tex_stage_of(s, Y), tex_op_axis(tex_stage_of(s, Y), 0)), 0);
    TT_EQ_INT(tex_merge(sb, sa), TEX_EINVAL);
    tex_clear_error(ctx);
    TT_EQ_INT(s->n_stages, n);
    tex_schedule *other = tex_schedule_new(ctx, 1, &Y);
    TT_EQ_INT(tex_merge(tex_stage_of(other, B), sa), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "different schedules") != NULL);
    tex_clear_error(ctx);
    /* A merged tensor is no parameter: lowering names it. */
    TT_EQ_INT(tex_merge(tex_stage_of(other, B), tex_stage_of(other, A)), 0);
    TT_CHECK(tex_lower_tensors(other, "f", 3, (tex_tensor *[]){X, B, Y}) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'B'") != NULL);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("test_merge: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_errors);
    TT_RUN(test_not_repeats);
    if (!tex_target_available("cpu")) {
        printf("SKIP merge (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_by_hand);
    TT_RUN(test_reader_before_kept);
    TT_RUN(test_kept_scheduled);
    TT_RUN(test_auto_schedule);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
