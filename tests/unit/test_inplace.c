/*
 * Pass inplace (src/lower/inplace.c): a temporary whose last reader is an
 * elementwise store into another buffer lives in that buffer's memory.
 * Each case builds a small workload with a row-sized temporary computed at
 * its consumer's row loop, checks in the lowered function whether the
 * temporary's allocation went (the cases that qualify) or stayed (each
 * condition of the pass broken once), and runs the kernel, JIT-compiled for
 * "cpu -threads=2" and through the interpreter, against the oracle on
 * random inputs with the output poisoned (tests/support/ops.h).
 */
#include "tt.h"
#include "support/ops.h"
#include "support/schedgen.h"
#include "support/tmpdir.h"

#include <unistd.h>

static char cache_dir[] = "/tmp/tex-test-inplace-XXXXXX";

/* Lowers h's schedule and checks, for each temporary named in `kept` and
 * `moved` (comma-separated), that its allocation is or is not in it; then
 * the interpreter and the JIT against the oracle. */
static void expect_allocations(hand *h, const char *kept, const char *moved)
{
    char why[256];
    tex_func *f = ops_lower(&h->w, h->s, why, sizeof why);
    char *text = f ? tex_func_str(f) : NULL;
    TT_CHECK(text != NULL);
    for (int k = 0; text && k < 2; k++) {
        for (const char *n = k ? moved : kept; n && *n;
             n += strcspn(n, ",") + (n[strcspn(n, ",")] != 0)) {
            char want[64];
            snprintf(want, sizeof want, "allocate %.*s:", (int)strcspn(n, ","), n);
            if ((strstr(text, want) != NULL) != (k == 0))
                TT_FAILF("%s: '%s' %s:\n%s", h->w.name, want, k ? "stayed" : "went", text);
        }
    }
    free(text);
    TT_CHECK(ops_check(&h->w, h->s, 1, &h->log, true) == 0);
    hand_end(h);
}

/* E[i, j] = exp(X[i, j] - Mx[i]); Se[i] = sum_j E[i, j]; Y = E * (1 / Se):
 * E, Mx and Se at Y's rows, rows parallel, columns split by 8 and
 * vectorized, with `hinted` Y's next row hinted for writing at Y's loop
 * over the vectors. The columns divide by 8 (no tail): E moves into Y. */
static void softmax_rows(const char *name, int64_t cols, bool symbolic, bool hinted, bool kept)
{
    hand hh, *h = &hh;
    hand_begin(h, name, "cpu -threads=2");
    ops_wl *w = &h->w;
    tex_ctx *c = w->ctx;
    tex_expr *M = ops_size(w, "M", 6, false), *N = ops_size(w, "N", cols, symbolic);
    tex_tensor *X = ops_input(w, "X", 2, (tex_expr *[]){M, N});
    tex_iter *i1 = tex_axis(c, "i", M), *k1 = tex_reduce_axis(c, "k", N);
    tex_tensor *Mx = ops_mid(
        w, tex_compute(c, "Mx", 1, &i1, tex_reduce_max(TEX_AT(X, tex_iv(i1), tex_iv(k1)), 1, &k1)));
    tex_iter *i2 = tex_axis(c, "i", M), *j2 = tex_axis(c, "j", N);
    tex_tensor *E = ops_mid(w, tex_compute(c, "E", 2, (tex_iter *[]){i2, j2},
                                           tex_exp(tex_sub(TEX_AT(X, tex_iv(i2), tex_iv(j2)),
                                                           TEX_AT(Mx, tex_iv(i2))))));
    tex_iter *i3 = tex_axis(c, "i", M), *k3 = tex_reduce_axis(c, "k", N);
    tex_tensor *Se = ops_mid(
        w, tex_compute(c, "Se", 1, &i3, tex_sum(TEX_AT(E, tex_iv(i3), tex_iv(k3)), 1, &k3)));
    tex_iter *i4 = tex_axis(c, "i", M), *j4 = tex_axis(c, "j", N);
    tex_expr *inv = tex_div(ops_f(w, 1), TEX_AT(Se, tex_iv(i4)));
    w->out = tex_compute(c, "Y", 2, (tex_iter *[]){i4, j4},
                         tex_mul(TEX_AT(E, tex_iv(i4), tex_iv(j4)), inv));
    hand_schedule(h);
    tex_iter *jo, *ji, *eo, *ei;
    OK(tex_parallel(S(h, w->out), i4));
    OK(tex_split(S(h, w->out), j4, I(h, 8), &jo, &ji));
    OK(tex_vectorize(S(h, w->out), ji));
    if (hinted)
        OK(tex_prefetch_at(S(h, w->out), w->out, jo, i4, 1));
    OK(tex_split(S(h, E), j2, I(h, 8), &eo, &ei));
    OK(tex_vectorize(S(h, E), ei));
    for (tex_tensor *const *t = (tex_tensor *[]){Mx, E, Se, NULL}; *t; t++)
        OK(tex_compute_at(S(h, *t), S(h, w->out), i4));
    expect_allocations(h, kept ? "E" : NULL, kept ? NULL : "E");
}

static void test_softmax_row_in_output(void)
{
    softmax_rows("softmax_in_output", 48, false, false, false);
}

/* Y's loops start with cache hints of Y's next row: E still moves. */
static void test_softmax_hinted_row_in_output(void)
{
    softmax_rows("softmax_hinted", 48, false, true, false);
}

/* 44 columns: Y's split leaves a guarded tail, so no single loop nest writes
 * all of Y's row: E stays. */
static void test_softmax_tail_keeps_temporary(void)
{
    softmax_rows("softmax_tail", 44, false, false, true);
}

/* A symbolic row length: E's size is not a constant: E stays. */
static void test_softmax_symbolic_keeps_temporary(void)
{
    softmax_rows("softmax_symbolic", 40, true, false, true);
}

/* T = exp(A) * 2 at Out's rows, Out = T + A: T moves into Out. */
static void test_elementwise_chain(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "elementwise_chain", "cpu -threads=2");
    ops_wl *w = &h->w;
    tex_ctx *c = w->ctx;
    tex_expr *M = ops_size(w, "M", 5, false), *N = ops_size(w, "N", 13, false);
    tex_tensor *A = ops_input(w, "A", 2, (tex_expr *[]){M, N});
    tex_iter *i1 = tex_axis(c, "i", M), *j1 = tex_axis(c, "j", N);
    tex_tensor *T =
        ops_mid(w, tex_compute(c, "T", 2, (tex_iter *[]){i1, j1},
                               tex_mul(tex_exp(TEX_AT(A, tex_iv(i1), tex_iv(j1))), ops_f(w, 2))));
    tex_iter *i2 = tex_axis(c, "i", M), *j2 = tex_axis(c, "j", N);
    w->out =
        tex_compute(c, "Out", 2, (tex_iter *[]){i2, j2},
                    tex_add(TEX_AT(T, tex_iv(i2), tex_iv(j2)), TEX_AT(A, tex_iv(i2), tex_iv(j2))));
    hand_schedule(h);
    OK(tex_compute_at(S(h, T), S(h, w->out), i2));
    expect_allocations(h, NULL, "T");
}

/* Out[i, j] = E[i, j] + E[i, j + 1]: Out reads E at two indices, and E has
 * one column more than Out writes: E stays. */
static void test_shifted_read_keeps_temporary(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "shifted_read", "cpu");
    ops_wl *w = &h->w;
    tex_ctx *c = w->ctx;
    tex_expr *M = ops_size(w, "M", 4, false);
    tex_tensor *A = ops_input(w, "A", 2, (tex_expr *[]){M, tex_int(c, 17)});
    tex_iter *i1 = tex_axis(c, "i", M), *j1 = tex_axis(c, "j", tex_int(c, 17));
    tex_tensor *E = ops_mid(w, tex_compute(c, "E", 2, (tex_iter *[]){i1, j1},
                                           tex_exp(TEX_AT(A, tex_iv(i1), tex_iv(j1)))));
    tex_iter *i2 = tex_axis(c, "i", M), *j2 = tex_axis(c, "j", tex_int(c, 16));
    tex_expr *next = tex_add(tex_iv(j2), tex_int(c, 1));
    w->out = tex_compute(c, "Out", 2, (tex_iter *[]){i2, j2},
                         tex_add(TEX_AT(E, tex_iv(i2), tex_iv(j2)), TEX_AT(E, tex_iv(i2), next)));
    hand_schedule(h);
    OK(tex_compute_at(S(h, E), S(h, w->out), i2));
    expect_allocations(h, "E", NULL);
}

/* E = exp(A); Z = E + 1; Out = Z * E, E and Z at Out's rows: E is read after
 * Z's nest (its first elementwise reader), so E stays; Z's last reader is
 * Out's nest, so Z moves into Out. */
static void test_later_reader_keeps_temporary(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "later_reader", "cpu -threads=2");
    ops_wl *w = &h->w;
    tex_ctx *c = w->ctx;
    tex_expr *M = ops_size(w, "M", 3, false), *N = ops_size(w, "N", 11, false);
    tex_tensor *A = ops_input(w, "A", 2, (tex_expr *[]){M, N});
    tex_iter *i1 = tex_axis(c, "i", M), *j1 = tex_axis(c, "j", N);
    tex_tensor *E = ops_mid(w, tex_compute(c, "E", 2, (tex_iter *[]){i1, j1},
                                           tex_exp(TEX_AT(A, tex_iv(i1), tex_iv(j1)))));
    tex_iter *i2 = tex_axis(c, "i", M), *j2 = tex_axis(c, "j", N);
    tex_tensor *Z =
        ops_mid(w, tex_compute(c, "Z", 2, (tex_iter *[]){i2, j2},
                               tex_add(TEX_AT(E, tex_iv(i2), tex_iv(j2)), ops_f(w, 1))));
    tex_iter *i3 = tex_axis(c, "i", M), *j3 = tex_axis(c, "j", N);
    w->out =
        tex_compute(c, "Out", 2, (tex_iter *[]){i3, j3},
                    tex_mul(TEX_AT(Z, tex_iv(i3), tex_iv(j3)), TEX_AT(E, tex_iv(i3), tex_iv(j3))));
    hand_schedule(h);
    OK(tex_compute_at(S(h, E), S(h, w->out), i3));
    OK(tex_compute_at(S(h, Z), S(h, w->out), i3));
    expect_allocations(h, "E", "Z");
}

int main(void)
{
    if (!tt_private_cache(cache_dir, "test_inplace"))
        return 1;
    if (!tex_target_available("cpu")) {
        printf("SKIP inplace (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return 0;
    }
    TT_RUN(test_softmax_row_in_output);
    TT_RUN(test_softmax_hinted_row_in_output);
    TT_RUN(test_softmax_tail_keeps_temporary);
    TT_RUN(test_softmax_symbolic_keeps_temporary);
    TT_RUN(test_elementwise_chain);
    TT_RUN(test_shifted_read_keeps_temporary);
    TT_RUN(test_later_reader_keeps_temporary);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
