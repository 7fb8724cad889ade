/*
 * Runtime checks run when a function is entered (src/lower/entry_checks.c):
 * a call that breaks one returns TEX_EINVAL and writes nothing, wherever the
 * check comes from in the schedule.
 *
 * The runtime check tex emits is a SHIFT_INWARDS split of a symbolic extent
 * (it needs extent >= factor; N = 3 breaks it, N = 7 passes). Each case puts
 * that split on a different stage position: the only (final) stage, the
 * first and the middle stage of a compute_root chain, the rfactored stage of
 * a max reduction, the cache_write stage, a stage computed at a loop of its
 * consumer, and a GPU-scheduled chain (two kernels, the check on the
 * second). Every case runs through the interpreter, the CPU JIT ("cpu" and
 * "cpu -threads=2") and the CUDA emission run on the CPU (cuda_emu.h, needs
 * g++): with N = 3 the call must fail with the output (poisoned before) and
 * the inputs byte-for-byte unchanged; with N = 7 the output must match the
 * oracle. The sources must show the check before anything runs: the C
 * source (target "c", and what tex_kernel_export writes) before the first
 * loop and allocation of the entry point, the CUDA source among the checks
 * made before launching.
 */
#include "tt.h"
#include "support/cuda_emu.h"
#include "support/ops.h"
#include "support/tmpdir.h"

#define FACTOR 5
#define N_BAD 3
#define N_GOOD 7

typedef void (*case_fn)(ops_wl *w, tex_schedule *s);

/* A stage's i-th current leaf, split by FACTOR with a SHIFT_INWARDS tail. */
static void shift_split(ops_wl *w, tex_stage *st, int leaf, tex_iter **outer, tex_iter **inner)
{
    tex_iter *o = NULL, *i = NULL;
    TT_EQ_INT(tex_split_tail(st, tex_stage_axis(st, leaf), tex_int(w->ctx, FACTOR),
                             TEX_TAIL_SHIFT_INWARDS, &o, &i),
              0);
    if (outer)
        *outer = o;
    if (inner)
        *inner = i;
}

static tex_tensor *chain(ops_wl *w)
{
    return ops_elemwise(w, 3, N_GOOD, true); /* T1 -> T2 -> Out, [M, N], M = 3 */
}

static void case_final(ops_wl *w, tex_schedule *s)
{
    shift_split(w, tex_stage_of(s, w->out), 1, NULL, NULL);
}

static void case_first(ops_wl *w, tex_schedule *s)
{
    shift_split(w, tex_stage_of(s, w->mid[0]), 1, NULL, NULL);
}

static void case_middle(ops_wl *w, tex_schedule *s)
{
    shift_split(w, tex_stage_of(s, w->mid[1]), 1, NULL, NULL);
}

/* Max[i] = max_j X[i, j]; rfactor over j gives the data-parallel stage
 * RF[j, i] = X[i, j], split over j; Max then reduces RF. */
static void case_rfactor(ops_wl *w, tex_schedule *s)
{
    tex_tensor *rf = tex_rfactor(s, w->out, tex_op_reduce_axis(tex_stage_of(s, w->out), 0), 0);
    TT_CHECK(rf != NULL);
    if (rf)
        shift_split(w, tex_stage_of(s, rf), 0, NULL, NULL);
}

/* Out's body computed by a global cache stage, which is split. */
static void case_cache_write(ops_wl *w, tex_schedule *s)
{
    tex_tensor *cl = tex_cache_write(s, w->out, TEX_SCOPE_GLOBAL);
    TT_CHECK(cl != NULL);
    if (cl)
        shift_split(w, tex_stage_of(s, cl), 1, NULL, NULL);
}

/* T2 computed per row of Out (inside Out's loop over i), split over j. */
static void case_compute_at(ops_wl *w, tex_schedule *s)
{
    tex_stage *out = tex_stage_of(s, w->out);
    TT_EQ_INT(tex_compute_at(tex_stage_of(s, w->mid[1]), out, tex_stage_axis(out, 0)), 0);
    shift_split(w, tex_stage_of(s, w->mid[1]), 1, NULL, NULL);
}

/* GPU-style: T1 and Out each one kernel (rows on blocks, columns on
 * threads), T2 inlined; Out's columns split, the check on the second kernel. */
static void case_gpu(ops_wl *w, tex_schedule *s)
{
    tex_stage *t1 = tex_stage_of(s, w->mid[0]), *out = tex_stage_of(s, w->out);
    TT_EQ_INT(tex_compute_inline(tex_stage_of(s, w->mid[1])), 0);
    TT_EQ_INT(tex_bind(t1, tex_stage_axis(t1, 0), TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(t1, tex_stage_axis(t1, 1), TEX_THREAD_X), 0);
    tex_iter *o = NULL, *i = NULL;
    shift_split(w, out, 1, &o, &i);
    TT_EQ_INT(tex_bind(out, tex_stage_axis(out, 0), TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(out, o, TEX_BLOCK_Y), 0);
    TT_EQ_INT(tex_bind(out, i, TEX_THREAD_X), 0);
}

typedef struct {
    const char *name;
    case_fn schedule;
    bool reduce; /* the max reduction instead of the chain */
    bool cuda;   /* also through "cuda -emit-only" (a CUDA kernel cannot hold
                    compute_at's temporary of symbolic size) */
} entry_case;

static const entry_case cases[] = {
    {"final", case_final, false, true},
    {"first", case_first, false, true},
    {"middle", case_middle, false, true},
    {"rfactor", case_rfactor, true, true},
    {"cache_write", case_cache_write, false, true},
    {"compute_at", case_compute_at, false, false},
    {"gpu", case_gpu, false, true},
};

/* ------------------------------------------------------------- running */

/* How a case's function is run: 0 on success. */
typedef int (*runner_fn)(void *ud, const tex_func *f, int n, const tex_value v[], char *err,
                         size_t en);

static int run_interp(void *ud, const tex_func *f, int n, const tex_value v[], char *err, size_t en)
{
    (void)ud;
    return texi_interp_run(f, n, v, err, en);
}

static int run_kernel(void *ud, const tex_func *f, int n, const tex_value v[], char *err, size_t en)
{
    (void)f;
    int rc = tex_kernel_call(ud, n, v);
    snprintf(err, en, "%s", tex_kernel_errmsg(ud));
    return rc;
}

static int run_emu(void *ud, const tex_func *f, int n, const tex_value v[], char *err, size_t en)
{
    (void)f;
    return cuda_emu_runner(ud, n, v, err, en);
}

static void set_n(ops_wl *w, int64_t n)
{
    for (int k = 0; k < w->n_vars; k++)
        if (strcmp(w->vars[k]->u.var.name, "N") == 0)
            w->vals[k] = n;
}

/* Runs f with N = n on random inputs and a poisoned output. N_BAD: the call
 * must fail and leave every array as it was; N_GOOD: the output must match
 * the oracle. */
static void run_case(ops_wl *w, const tex_func *f, int64_t n, runner_fn run, void *ud,
                     const char *label)
{
    set_n(w, n);
    int na = w->n_in + 1;
    DLTensor *arrs[OPS_MAX + 1] = {0}, *ref = NULL;
    tex_tensor *ts[OPS_MAX + 1];
    tex_value vals[OPS_MAX + 1];
    char *before[OPS_MAX + 1] = {0};
    size_t bytes[OPS_MAX + 1];
    uint64_t rng = (uint64_t)n * 7919 + 1;
    for (int a = 0; a < na; a++) {
        ts[a] = a < w->n_in ? w->in[a] : w->out;
        arrs[a] = ops_array_for(w, ts[a]);
        if (a < w->n_in)
            ops_fill_random(arrs[a], ts[a]->dtype, &rng);
        else
            ops_poison(arrs[a], ts[a]->dtype);
        bytes[a] = (size_t)(ops_numel(arrs[a]) * tex_dtype_bytes(ts[a]->dtype));
        before[a] = malloc(bytes[a] + 1);
        memcpy(before[a], arrs[a]->data, bytes[a]);
        vals[a] = (tex_value){.kind = TEX_VAL_TENSOR, .t = arrs[a]};
    }
    char err[2048] = "";
    int rc = run(ud, f, na, vals, err, sizeof err);
    if (n == N_BAD) {
        if (rc == 0)
            TT_FAILF("%s: the call with N = %d < %d succeeded", label, N_BAD, FACTOR);
        for (int a = 0; a < na; a++)
            if (memcmp(before[a], arrs[a]->data, bytes[a]) != 0)
                TT_FAILF("%s: the refused call (%s) changed '%s'", label, err, ts[a]->name);
    } else if (rc != 0) {
        TT_FAILF("%s: the call with N = %d failed: %s", label, N_GOOD, err);
    } else {
        ref = ops_array_for(w, w->out);
        DLTensor *rarrs[OPS_MAX + 1];
        memcpy(rarrs, arrs, sizeof rarrs);
        rarrs[na - 1] = ref;
        TT_EQ_INT(tex_eval_reference(w->ctx, na, ts, rarrs), 0);
        int64_t bad = ops_compare(arrs[na - 1], ref, w->out->dtype);
        if (bad >= 0)
            TT_FAILF("%s: output differs from the oracle at %lld: %g vs %g", label, (long long)bad,
                     ops_get(arrs[na - 1], w->out->dtype, bad), ops_get(ref, w->out->dtype, bad));
    }
    for (int a = 0; a < na; a++) {
        tex_array_free(arrs[a]);
        free(before[a]);
    }
    tex_array_free(ref);
}

static void run_both(ops_wl *w, const tex_func *f, runner_fn run, void *ud, const char *name,
                     const char *target)
{
    char label[160];
    snprintf(label, sizeof label, "%s, %s", name, target);
    run_case(w, f, N_BAD, run, ud, label);
    run_case(w, f, N_GOOD, run, ud, label);
}

/* The entry point's check comes before its first loop and allocation. */
static void check_c_order(const char *src, const tex_func *f, const char *label)
{
    char sig[256];
    snprintf(sig, sizeof sig, "int %s(", f->name);
    const char *entry = src ? strstr(src, sig) : NULL;
    const char *check = entry ? strstr(entry, "runtime check") : NULL;
    const char *loop = entry ? strstr(entry, "for (") : NULL;
    const char *alloc = entry ? strstr(entry, "alloc") : NULL;
    if (!check || (loop && loop < check) || (alloc && alloc < check))
        TT_FAILF("%s: the runtime check is not the first thing the entry point does:\n%s", label,
                 entry ? entry : "(no entry point)");
}

static bool have_gxx(void)
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

/* "cuda -emit-only": the check is in the plan made before launching, and
 * the kernels run by cuda_emu refuse N_BAD before the first launch. */
static void check_cuda(ops_wl *w, tex_func *f, const char *name)
{
    tex_kernel *k = tex_build(f, "cuda -emit-only");
    if (!k) {
        TT_FAILF("%s: cuda -emit-only: %s", name, tex_errmsg(w->ctx));
        return;
    }
    const char *src = tex_kernel_source(k);
    TT_CHECK(src && strstr(src, " * Checked before launching: ") != NULL);
    TT_CHECK(src && !strstr(src, "assert"));
    if (have_gxx()) {
        char err[8192];
        cuda_emu *e = cuda_emu_build(src, err, sizeof err);
        if (!e)
            TT_FAILF("%s: %s", name, err);
        cuda_emu_kernel ek = {e, k};
        if (e)
            run_both(w, f, run_emu, &ek, name, "cuda_emu");
        cuda_emu_free(e);
    }
    tex_kernel_free(k);
}

static void check_cpu(ops_wl *w, tex_func *f, const char *name, const char *target)
{
    tex_kernel *k = tex_build(f, target);
    if (!k) {
        TT_FAILF("%s: tex_build(\"%s\"): %s", name, target, tex_errmsg(w->ctx));
        return;
    }
    char label[160];
    snprintf(label, sizeof label, "%s, %s", name, target);
    check_c_order(tex_kernel_source(k), f, label);
    run_both(w, f, run_kernel, k, name, target);
    tex_kernel_free(k);
}

static void check_case(const entry_case *c)
{
    ops_wl w;
    ops_init(&w, tex_ctx_new(), c->name);
    if (c->reduce)
        ops_reduce(&w, 2, false, false, 3, N_GOOD, 1, true);
    else
        chain(&w);
    tex_schedule *s = tex_schedule_new(w.ctx, 1, &w.out);
    c->schedule(&w, s);
    char why[2048];
    tex_func *f = ops_lower(&w, s, why, sizeof why);
    if (!f) {
        TT_FAILF("%s: %s", c->name, why);
        tex_ctx_free(w.ctx);
        return;
    }
    run_both(&w, f, run_interp, NULL, c->name, "interpreter");
    if (tex_target_available("cpu")) {
        check_cpu(&w, f, c->name, "cpu");
        check_cpu(&w, f, c->name, "cpu -threads=2");
    }
    if (c->cuda)
        check_cuda(&w, f, c->name);
    tex_ctx_free(w.ctx);
}

static void test_stage_positions(void)
{
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        check_case(&cases[k]);
}

/* tex_kernel_export writes the C source with the check first. */
static void test_export(void)
{
    ops_wl w;
    ops_init(&w, tex_ctx_new(), "exported");
    ops_reduce(&w, 2, false, false, 3, N_GOOD, 1, true);
    tex_schedule *s = tex_schedule_new(w.ctx, 1, &w.out);
    case_rfactor(&w, s);
    char why[2048], dir[] = "/tmp/tex_entry_XXXXXX", prefix[128], path[160];
    tex_func *f = ops_lower(&w, s, why, sizeof why);
    tex_kernel *k = f ? tex_build(f, "c") : NULL;
    TT_CHECK(k != NULL);
    if (k && mkdtemp(dir)) {
        snprintf(prefix, sizeof prefix, "%s/exported", dir);
        snprintf(path, sizeof path, "%s.c", prefix);
        TT_EQ_INT(tex_kernel_export(k, prefix), 0);
        FILE *fp = fopen(path, "r");
        char *text = calloc(1, 1 << 20);
        if (fp && text)
            TT_CHECK(fread(text, 1, (1 << 20) - 1, fp) > 0);
        check_c_order(text, f, "tex_kernel_export");
        if (fp)
            fclose(fp);
        free(text);
        tt_remove_tree(dir);
    }
    tex_kernel_free(k);
    tex_ctx_free(w.ctx);
}

/* A check inside a loop is hoisted in its quantified form: here the loop
 * over Out's rows is empty when M = 0, and then nothing is checked. */
static void test_empty_loop(void)
{
    ops_wl w;
    ops_init(&w, tex_ctx_new(), "empty_rows");
    chain(&w);
    tex_schedule *s = tex_schedule_new(w.ctx, 1, &w.out);
    case_compute_at(&w, s);
    char why[2048], err[1024];
    tex_func *f = ops_lower(&w, s, why, sizeof why);
    TT_CHECK(f != NULL);
    if (f) {
        w.vals[0] = 0; /* M = 0, N = N_BAD: no row, no check */
        set_n(&w, N_BAD);
        DLTensor *arrs[4];
        tex_value vals[4];
        for (int a = 0; a < 4; a++) {
            arrs[a] = ops_array_for(&w, a < 3 ? w.in[a] : w.out);
            vals[a] = (tex_value){.kind = TEX_VAL_TENSOR, .t = arrs[a]};
        }
        TT_EQ_INT(texi_interp_run(f, 4, vals, err, sizeof err), 0);
        for (int a = 0; a < 4; a++)
            tex_array_free(arrs[a]);
    }
    tex_ctx_free(w.ctx);
}

/* ------------------------------------------- quantified forms (the pass alone) */

typedef struct {
    tex_ctx *ctx;
    tex_expr *n, *m; /* the function's sizes */
} qenv;

static tex_expr *qi(qenv *q, int64_t v)
{
    return tex_int(q->ctx, v);
}

static tex_stmt *loop(qenv *q, tex_expr *var, tex_expr *extent, tex_stmt *body)
{
    return texi_for_new(q->ctx, var, qi(q, 0), extent, TEXI_FOR_SERIAL, -1, body);
}

static tex_stmt *check(qenv *q, tex_expr *cond)
{
    return texi_attr_new(q->ctx, "assert", cond, texi_evaluate_new(q->ctx, qi(q, 0)));
}

static bool is_assert(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_ATTR && strcmp(s->u.attr.key, "assert") == 0;
}

/* Runs the pass on body; the hoisted condition (true when every check was
 * dropped), or NULL when the pass fails. */
static tex_expr *hoisted(qenv *q, tex_stmt *body)
{
    texi_lower lw = {.ctx = q->ctx};
    tex_stmt *out = NULL;
    if (texi_pass_entry_checks(&lw, body, &out) != 0)
        return NULL;
    tex_expr *c = tex_const(q->ctx, TEX_BOOL, 1);
    while (out && out->kind == TEXI_STMT_ATTR && strcmp(out->u.attr.key, "assert") == 0) {
        c = tex_and(c, out->u.attr.value);
        out = out->u.attr.body;
    }
    TT_CHECK(out && !texi_stmt_any(out, is_assert)); /* no check left below */
    return c;
}

static int64_t value_at(qenv *q, tex_expr *c, int64_t n, int64_t m)
{
    tex_expr *vals[2] = {qi(q, n), qi(q, m)}, *vars[2] = {q->n, q->m};
    tex_expr *e = texi_simplify(texi_substitute(c, 2, vars, vals), 0, NULL);
    int64_t v = -1;
    TT_CHECK(e && texi_expr_is_int_const(e, &v));
    return v;
}

/* Compares the hoisted condition with brute force (truth(n, m): whether
 * every original check passes) over n, m in [-1, 9]: never weaker, and equal
 * when exact. */
static void compare(qenv *q, const char *what, tex_stmt *body, bool exact,
                    bool (*truth)(int64_t n, int64_t m))
{
    tex_expr *c = hoisted(q, body);
    if (!c) {
        TT_FAILF("%s: %s", what, tex_errmsg(q->ctx));
        return;
    }
    for (int64_t n = -1; n <= 9; n++)
        for (int64_t m = -1; m <= 9; m++) {
            bool got = value_at(q, c, n, m) != 0, want = truth(n, m);
            if ((got && !want) || (exact && got != want))
                TT_FAILF("%s: n = %lld, m = %lld: hoisted %d, every check %d", what, (long long)n,
                         (long long)m, got, want);
        }
}

static bool t_shift(int64_t n, int64_t m) /* for v < n: v + m >= 3 */
{
    return n <= 0 || m >= 3;
}

static bool t_upper(int64_t n, int64_t m) /* for v < n: m - v > 0 */
{
    return n <= 0 || m > n - 1;
}

static bool t_or(int64_t n, int64_t m) /* for v < n: m >= 2 || v < m */
{
    return n <= 0 || m >= 2 || n - 1 < m;
}

static bool t_if(int64_t n, int64_t m) /* for v < n: if (v >= m) v <= 5 */
{
    for (int64_t v = 0; v < n; v++)
        if (v >= m && v > 5)
            return false;
    return true;
}

static bool t_nested(int64_t n, int64_t m) /* for u < n, v <= u: m - v >= 1, m == m */
{
    return n <= 0 || m >= n;
}

static void test_quantified(void)
{
    qenv q = {tex_ctx_new(), NULL, NULL};
    q.n = tex_var(q.ctx, "n", TEX_I64);
    q.m = tex_var(q.ctx, "m", TEX_I64);
    tex_expr *v = texi_var_new(q.ctx, "v", TEX_I64), *u = texi_var_new(q.ctx, "u", TEX_I64);
    compare(&q, "shift", loop(&q, v, q.n, check(&q, tex_ge(tex_add(v, q.m), qi(&q, 3)))), true,
            t_shift);
    compare(&q, "upper", loop(&q, v, q.n, check(&q, tex_gt(tex_sub(q.m, v), qi(&q, 0)))), true,
            t_upper);
    compare(&q, "or", loop(&q, v, q.n, check(&q, tex_or(tex_ge(q.m, qi(&q, 2)), tex_lt(v, q.m)))),
            true, t_or);
    tex_stmt *guarded = texi_if_new(q.ctx, tex_ge(v, q.m), check(&q, tex_le(v, qi(&q, 5))), NULL);
    compare(&q, "if", loop(&q, v, q.n, guarded), false, t_if);
    tex_expr *both = tex_and(tex_ge(tex_sub(q.m, v), qi(&q, 1)), tex_eq(q.m, q.m));
    compare(&q, "nested", loop(&q, u, q.n, loop(&q, v, tex_add(u, qi(&q, 1)), check(&q, both))),
            true, t_nested);
    /* a form that cannot be quantified: TEX_EINVAL naming the loop */
    TT_CHECK(hoisted(&q, loop(&q, v, q.n, check(&q, tex_ne(v, q.m)))) == NULL);
    TT_EQ_INT(tex_errcode(q.ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(q.ctx), "depends on loop 'v'") != NULL);
    tex_ctx_free(q.ctx);
}

int main(void)
{
    TT_RUN(test_stage_positions);
    TT_RUN(test_export);
    TT_RUN(test_empty_loop);
    TT_RUN(test_quantified);
    return tt_finish();
}
