/*
 * Lowering end to end: golden dumps of canonical schedules, the interpreter
 * against the reference evaluator on the same functions, TEX_DUMP, and the
 * error paths of tex_lower / tex_lower_tensors and texi_bind_args.
 *
 * Golden files: tests/golden/NAME.tex hold comment lines, then blocks
 *     # >>> after PASS        (the AST after that pipeline step)
 *     ...
 *     # <<<
 * and one "# >>> func" block (tex_func_str of the result). The test
 * recomputes every block named in the file and compares. With
 * TEX_UPDATE_GOLDEN=1 it rewrites the files instead (keeping the comment
 * header and the list of blocks; a new file gets DEFAULT_BLOCKS), so
 * `TEX_UPDATE_GOLDEN=1 build/tests/test_golden_lower` followed by a review of
 * `git diff tests/golden` updates the expectations. Paths are relative to
 * the repository root (where tests/run_tests.sh runs the programs), or to
 * TEX_GOLDEN_DIR.
 */
#include "lower/lower.h"
#include "interp/interp.h"
#include "tt.h"

#include <math.h>
#include <stdint.h>
#include <unistd.h>

#define MAX_ARGS 8
#define MAX_BLOCKS 16
#define DEFAULT_BLOCKS "schedule_ops,flatten,loop_partition,func"

/* A lowered case: the function, its parameters' tensors, concrete sizes. */
typedef struct {
    tex_ctx *ctx;
    tex_schedule *s;
    tex_func *f;
    int n;
    tex_param params[MAX_ARGS];
    int n_sizes;
    tex_expr *size_vars[4];
    int64_t size_vals[4];
    const char *about; /* header comment of a new golden file */
} lcase;

static tex_expr *c(tex_ctx *ctx, int64_t v)
{
    return tex_int(ctx, v);
}

static void set_tensors(lcase *k, int n, tex_tensor *const ts[])
{
    k->n = n;
    for (int i = 0; i < n; i++) {
        k->params[i].kind = TEX_ARG_TENSOR;
        k->params[i].t = ts[i];
    }
}

/* ------------------------------------------------------------ the cases */

/* C = A + B, n = 100, split by 8 (not a divisor), inner loop vectorized. */
static void case_vadd_split(lcase *k)
{
    tex_ctx *ctx = k->ctx;
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){100});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 1, (int64_t[]){100});
    tex_iter *i = tex_axis(ctx, "i", c(ctx, 100));
    tex_tensor *C =
        tex_compute(ctx, "C", 1, &i, tex_add(TEX_AT(A, tex_iv(i)), TEX_AT(B, tex_iv(i))));
    k->s = tex_schedule_new(ctx, 1, &C);
    tex_stage *st = tex_stage_of(k->s, C);
    tex_iter *io, *ii;
    tex_split(st, i, c(ctx, 8), &io, &ii);
    tex_vectorize(st, ii);
    set_tensors(k, 3, (tex_tensor *[]){A, B, C});
    k->about = "C = A + B over 100 elements, split by 8 (a tail of 4), inner loop vectorized";
}

static tex_tensor *matmul(tex_ctx *ctx, int64_t m, int64_t n, int64_t kk, tex_tensor **A,
                          tex_tensor **B)
{
    *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){m, kk});
    *B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){kk, n});
    tex_iter *i = tex_axis(ctx, "i", c(ctx, m)), *j = tex_axis(ctx, "j", c(ctx, n));
    tex_iter *r = tex_reduce_axis(ctx, "k", c(ctx, kk));
    tex_expr *prod = tex_mul(TEX_AT(*A, tex_iv(i), tex_iv(r)), TEX_AT(*B, tex_iv(r), tex_iv(j)));
    return tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, &r));
}

/* The GEMM tutorial's blocking on sizes the tiles do not divide. */
static void case_matmul_tiled(lcase *k)
{
    tex_ctx *ctx = k->ctx;
    tex_tensor *A, *B, *C = matmul(ctx, 20, 16, 12, &A, &B);
    k->s = tex_schedule_new(ctx, 1, &C);
    tex_stage *st = tex_stage_of(k->s, C);
    tex_iter *xo, *yo, *xi, *yi, *ko, *ki;
    tex_tile(st, tex_op_axis(st, 0), tex_op_axis(st, 1), c(ctx, 8), c(ctx, 8), &xo, &yo, &xi, &yi);
    tex_split(st, tex_op_reduce_axis(st, 0), c(ctx, 4), &ko, &ki);
    tex_reorder(st, 6, (tex_iter *[]){xo, yo, ko, xi, ki, yi});
    tex_unroll(st, ki);
    tex_vectorize(st, yi);
    set_tensors(k, 3, (tex_tensor *[]){A, B, C});
    k->about = "matmul 20x16x12, tile 8x8 (rows leave a tail of 4), k split by 4 and unrolled, "
               "inner columns vectorized";
}

/* A producer computed inside its consumer's tiles: buffer sized to a tile. */
static void case_compute_at(lcase *k)
{
    tex_ctx *ctx = k->ctx;
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){10, 12});
    tex_iter *i = tex_axis(ctx, "i", c(ctx, 10)), *j = tex_axis(ctx, "j", c(ctx, 12));
    tex_tensor *P =
        tex_compute(ctx, "P", 2, (tex_iter *[]){i, j},
                    tex_mul(TEX_AT(A, tex_iv(i), tex_iv(j)), tex_const(ctx, TEX_F32, 2)));
    tex_iter *i2 = tex_axis(ctx, "i", c(ctx, 10)), *j2 = tex_axis(ctx, "j", c(ctx, 12));
    tex_tensor *C =
        tex_compute(ctx, "C", 2, (tex_iter *[]){i2, j2},
                    tex_add(TEX_AT(P, tex_iv(i2), tex_iv(j2)), tex_const(ctx, TEX_F32, 1)));
    k->s = tex_schedule_new(ctx, 1, &C);
    tex_stage *sc = tex_stage_of(k->s, C);
    tex_iter *xo, *yo, *xi, *yi;
    tex_tile(sc, i2, j2, c(ctx, 4), c(ctx, 4), &xo, &yo, &xi, &yi);
    tex_compute_at(tex_stage_of(k->s, P), sc, yo);
    set_tensors(k, 2, (tex_tensor *[]){A, C});
    k->about = "P = A*2 computed at C's tile loop (C = P + 1 tiled 4x4 over 10x12)";
}

/* A symbolic size passed as a scalar parameter. */
static void case_symbolic(lcase *k)
{
    tex_ctx *ctx = k->ctx;
    tex_expr *n = tex_var(ctx, "n", TEX_I32);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 1, &n);
    tex_iter *i = tex_axis(ctx, "i", n);
    tex_tensor *C =
        tex_compute(ctx, "C", 1, &i, tex_mul(TEX_AT(A, tex_iv(i)), tex_const(ctx, TEX_F32, 3)));
    k->s = tex_schedule_new(ctx, 1, &C);
    tex_iter *io, *ii;
    tex_split(tex_stage_of(k->s, C), i, c(ctx, 4), &io, &ii);
    k->n = 3;
    k->params[0] = (tex_param){.kind = TEX_ARG_TENSOR, .t = A};
    k->params[1] = (tex_param){.kind = TEX_ARG_TENSOR, .t = C};
    k->params[2] = (tex_param){.kind = TEX_ARG_VAR, .v = n};
    k->n_sizes = 1;
    k->size_vars[0] = n;
    k->size_vals[0] = 23;
    k->about = "C = A*3 over a symbolic n (a scalar parameter), split by 4";
}

/* The tutorial's write cache: a local accumulator per 8x8 tile. */
static void case_cache_write(lcase *k)
{
    tex_ctx *ctx = k->ctx;
    tex_tensor *A, *B, *C = matmul(ctx, 16, 16, 8, &A, &B);
    k->s = tex_schedule_new(ctx, 1, &C);
    tex_tensor *CL = tex_cache_write(k->s, C, TEX_SCOPE_LOCAL);
    tex_stage *sc = tex_stage_of(k->s, C), *sl = tex_stage_of(k->s, CL);
    tex_iter *xo, *yo, *xi, *yi;
    tex_tile(sc, tex_op_axis(sc, 0), tex_op_axis(sc, 1), c(ctx, 8), c(ctx, 8), &xo, &yo, &xi, &yi);
    tex_compute_at(sl, sc, yo);
    tex_reorder(sl, 3,
                (tex_iter *[]){tex_op_reduce_axis(sl, 0), tex_op_axis(sl, 0), tex_op_axis(sl, 1)});
    tex_vectorize(sl, tex_op_axis(sl, 1));
    set_tensors(k, 3, (tex_tensor *[]){A, B, C});
    k->about = "matmul 16x16x8 with a local write cache computed at C's 8x8 tiles, "
               "its loops reordered (k, i, j) and j vectorized";
}

/* storage_align pads the rows of an intermediate. */
static void case_storage_align(lcase *k)
{
    tex_ctx *ctx = k->ctx;
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){6, 8});
    tex_iter *i = tex_axis(ctx, "i", c(ctx, 6)), *j = tex_axis(ctx, "j", c(ctx, 8));
    tex_tensor *P =
        tex_compute(ctx, "P", 2, (tex_iter *[]){i, j},
                    tex_add(TEX_AT(A, tex_iv(i), tex_iv(j)), tex_const(ctx, TEX_F32, 1)));
    tex_iter *i2 = tex_axis(ctx, "i", c(ctx, 6)), *j2 = tex_axis(ctx, "j", c(ctx, 8));
    tex_tensor *C =
        tex_compute(ctx, "C", 2, (tex_iter *[]){i2, j2},
                    tex_mul(TEX_AT(P, tex_iv(i2), tex_iv(j2)), tex_const(ctx, TEX_F32, 2)));
    k->s = tex_schedule_new(ctx, 1, &C);
    tex_stage *sp = tex_stage_of(k->s, P);
    tex_storage_align(sp, tex_op_axis(sp, 0), 16, 1);
    set_tensors(k, 2, (tex_tensor *[]){A, C});
    k->about = "P = A + 1 (6x8) with storage_align(P, i, 16, 1): row stride 17";
}

typedef struct {
    const char *name;
    void (*build)(lcase *k);
} case_def;

static const case_def cases[] = {
    {"vadd_split", case_vadd_split},   {"matmul_tiled", case_matmul_tiled},
    {"compute_at", case_compute_at},   {"symbolic", case_symbolic},
    {"cache_write", case_cache_write}, {"storage_align", case_storage_align},
};

static bool make_case(const case_def *d, lcase *k)
{
    memset(k, 0, sizeof *k);
    k->ctx = tex_ctx_new();
    d->build(k);
    k->f = k->s ? tex_lower(k->s, d->name, k->n, k->params) : NULL;
    if (!k->f)
        printf("  %s: tex_lower failed: %s\n", d->name, tex_errmsg(k->ctx));
    return k->f != NULL;
}

/* ------------------------------------------------------- golden blocks */

static const char *const pass_names[] = {"schedule_ops",    "flatten",     "loop_partition",
                                         "simplify",        "unroll",      "vectorize",
                                         "storage_rewrite", "remove_noops"};

/* The text of block `name` ("func" or a pipeline step) for the case. */
static char *block_text(lcase *k, const char *name)
{
    if (strcmp(name, "func") == 0)
        return tex_func_str(k->f);
    texi_lower lw = {k->ctx, k->s, k->f, false};
    int (*const fns[])(texi_lower *, tex_stmt *, tex_stmt **) = {
        texi_pass_flatten,   texi_pass_loop_partition,  texi_pass_simplify,    texi_pass_unroll,
        texi_pass_vectorize, texi_pass_storage_rewrite, texi_pass_remove_noops};
    tex_stmt *s = NULL;
    if (texi_schedule_ops(&lw, &s) < 0)
        return NULL;
    for (size_t i = 0; strcmp(pass_names[i], name) != 0; i++) {
        if (i + 1 == sizeof pass_names / sizeof *pass_names)
            return NULL;
        tex_stmt *next = NULL;
        if (fns[i](&lw, s, &next) < 0)
            return NULL;
        s = next;
    }
    return texi_stmt_str(s);
}

typedef struct {
    const char *header; /* comment lines before the first block */
    int n;
    char *names[MAX_BLOCKS]; /* "after X" -> "X"; "func" */
    char *texts[MAX_BLOCKS];
} golden;

static char *golden_path(const char *name)
{
    const char *dir = getenv("TEX_GOLDEN_DIR");
    static char path[512];
    snprintf(path, sizeof path, "%s/%s.tex", dir ? dir : "tests/golden", name);
    return path;
}

static char *read_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    texi_sb sb;
    texi_sb_init(&sb);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf - 1, fp)) > 0) {
        buf[n] = 0;
        texi_sb_puts(&sb, buf);
    }
    fclose(fp);
    char *s = texi_sb_take(&sb);
    return s ? s : calloc(1, 1);
}

/* Parses text into g (pointers into text, which it cuts into strings). */
static void parse_golden(char *text, golden *g)
{
    memset(g, 0, sizeof *g);
    g->header = text;
    char *block = NULL;
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        next = next ? next + 1 : NULL;
        if (strncmp(line, "# >>> ", 6) == 0 && !block && g->n < MAX_BLOCKS) {
            if (line == text)
                g->header = "";
            else if (g->n == 0)
                line[-1] = 0; /* ends the header */
            char *nm = line + 6;
            if (next)
                next[-1] = 0;
            g->names[g->n] = strncmp(nm, "after ", 6) == 0 ? nm + 6 : nm;
            block = next;
        } else if (strncmp(line, "# <<<", 5) == 0 && block) {
            line[0] = 0;
            g->texts[g->n++] = block;
            block = NULL;
        }
        line = next;
    }
}

static void write_golden(const char *path, const char *header, int n, char *names[], char *texts[])
{
    FILE *fp = fopen(path, "w");
    TT_CHECK(fp != NULL);
    if (!fp)
        return;
    fprintf(fp, "%s\n", header);
    for (int i = 0; i < n; i++)
        fprintf(fp, "# >>> %s%s\n%s# <<<\n", strcmp(names[i], "func") ? "after " : "", names[i],
                texts[i] ? texts[i] : "(failed)\n");
    fclose(fp);
}

static void update_golden(const case_def *d, lcase *k, golden *g, bool exists)
{
    char *names[MAX_BLOCKS], *texts[MAX_BLOCKS], list[] = DEFAULT_BLOCKS, header[512];
    int n = 0;
    if (exists) {
        for (int i = 0; i < g->n; i++)
            names[n++] = g->names[i];
    } else {
        for (char *t = strtok(list, ","); t && n < MAX_BLOCKS; t = strtok(NULL, ","))
            names[n++] = t;
    }
    snprintf(header, sizeof header, "# %s: %s", d->name, k->about ? k->about : "");
    for (int i = 0; i < n; i++)
        texts[i] = block_text(k, names[i]);
    write_golden(golden_path(d->name), exists && *g->header ? g->header : header, n, names, texts);
    for (int i = 0; i < n; i++)
        free(texts[i]);
    printf("  updated %s\n", golden_path(d->name));
}

static void check_golden(const case_def *d, lcase *k)
{
    char *text = read_file(golden_path(d->name));
    golden g;
    if (text)
        parse_golden(text, &g);
    const char *upd = getenv("TEX_UPDATE_GOLDEN");
    if (upd && strcmp(upd, "1") == 0) {
        update_golden(d, k, &g, text != NULL);
    } else if (!text || g.n == 0) {
        TT_FAILF("%s: no blocks (run TEX_UPDATE_GOLDEN=1 %s, or make update-golden)",
                 golden_path(d->name), "build/tests/test_golden_lower");
    } else {
        for (int i = 0; i < g.n; i++) {
            char *got = block_text(k, g.names[i]);
            if (!got || strcmp(got, g.texts[i]) != 0)
                TT_FAILF("%s, block '%s' differs:\n--- expected\n%s--- got\n%s", d->name,
                         g.names[i], g.texts[i], got ? got : "(failed)\n");
            free(got);
        }
    }
    free(text);
}

/* ---------------------------------------------------- interpreter check */

static int64_t eval_size(const lcase *k, tex_expr *e)
{
    tex_expr *v =
        texi_substitute(e, k->n_sizes, k->size_vars,
                        (tex_expr *[]){c(k->ctx, k->size_vals[0]), c(k->ctx, k->size_vals[1]),
                                       c(k->ctx, k->size_vals[2]), c(k->ctx, k->size_vals[3])});
    int64_t x = -1;
    TT_CHECK(v && texi_expr_is_int_const(texi_simplify(v, 0, NULL), &x));
    return x;
}

static DLTensor *array_for(const lcase *k, const tex_tensor *t)
{
    int64_t shape[8];
    for (int d = 0; d < t->ndim; d++)
        shape[d] = eval_size(k, t->shape[d]);
    return tex_array_new(t->ndim, shape, t->dtype, (DLDevice){kDLCPU, 0});
}

static int64_t numel(const DLTensor *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++)
        n *= a->shape[d];
    return n;
}

/* Runs the lowered function in the interpreter and the oracle on the same
 * random inputs (f32 only) and compares every tensor parameter. */
static void check_interp(const char *name, lcase *k)
{
    tex_value vals[MAX_ARGS];
    DLTensor *got[MAX_ARGS] = {0}, *want[MAX_ARGS] = {0};
    tex_tensor *ts[MAX_ARGS];
    int nt = 0;
    uint64_t rng = 12345;
    for (int i = 0; i < k->n; i++) {
        if (k->params[i].kind == TEX_ARG_VAR) {
            vals[i] = (tex_value){.kind = TEX_VAL_I64, .i = eval_size(k, k->params[i].v)};
            continue;
        }
        tex_tensor *t = k->params[i].t;
        got[i] = array_for(k, t);
        want[i] = array_for(k, t);
        float *g = got[i]->data, *w = want[i]->data;
        for (int64_t e = 0; e < numel(got[i]); e++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            g[e] = w[e] = (float)((rng >> 40) % 17) - 8.0f;
        }
        vals[i] = (tex_value){.kind = TEX_VAL_TENSOR, .t = got[i]};
        ts[nt] = t;
        want[nt++] = want[i];
    }
    char err[512] = "";
    int rc = texi_interp_run(k->f, k->n, vals, err, sizeof err);
    TT_EQ_INT(rc, 0);
    if (rc)
        printf("  %s: %s\n", name, err);
    rc = tex_eval_reference(k->ctx, nt, ts, want);
    TT_EQ_INT(rc, 0);
    for (int i = 0, w = 0; i < k->n; i++) {
        if (k->params[i].kind == TEX_ARG_VAR)
            continue;
        const float *g = got[i]->data, *r = want[w++]->data;
        int64_t bad = 0;
        for (int64_t e = 0; e < numel(got[i]); e++)
            bad += fabsf(g[e] - r[e]) > 1e-4f * (1 + fabsf(r[e]));
        if (bad)
            TT_FAILF("%s: %lld elements of '%s' differ from the oracle", name, (long long)bad,
                     k->params[i].t->name);
    }
    for (int i = 0; i < k->n; i++)
        tex_array_free(got[i]);
    for (int i = 0; i < nt; i++)
        tex_array_free(want[i]);
}

static void test_golden(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        lcase k;
        if (make_case(&cases[i], &k)) {
            check_golden(&cases[i], &k);
            check_interp(cases[i].name, &k);
        } else {
            TT_FAILF("case %s does not lower", cases[i].name);
        }
        tex_ctx_free(k.ctx);
    }
}

/* The GEMM tutorial's final shape: no guard and no loop of extent 1 left. */
static void test_main_body_guard_free(void)
{
    lcase k;
    TT_CHECK(make_case(&cases[1], &k));
    char *s = k.f ? tex_func_str(k.f) : NULL;
    TT_CHECK(s && !strstr(s, "if ("));
    TT_CHECK(s && !strstr(s, ", 1) {"));
    free(s);
    tex_ctx_free(k.ctx);
}

/* ------------------------------------------------------------ TEX_DUMP */

static void test_dump(void)
{
    lcase k;
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    TT_CHECK(saved >= 0 && tmp);
    if (saved < 0 || !tmp)
        return;
    dup2(fileno(tmp), 2);
    setenv("TEX_DUMP", "loop_partition,remove_noops", 1);
    bool ok = make_case(&cases[0], &k);
    unsetenv("TEX_DUMP");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    TT_CHECK(ok);
    rewind(tmp);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, tmp);
    buf[n] = 0;
    fclose(tmp);
    TT_CHECK(strstr(buf, "# after loop_partition\n") != NULL);
    TT_CHECK(strstr(buf, "# after remove_noops\n") != NULL);
    TT_CHECK(strstr(buf, "# after flatten") == NULL);
    tex_ctx_free(k.ctx);
}

/* ------------------------------------------------- tex_lower's errors */

typedef struct {
    tex_ctx *ctx;
    tex_tensor *A, *B, *C, *T;
    tex_expr *n;
    tex_schedule *s;
} errcase;

/* T = A * 2 (inlined or not), C = T + B over [n, 4]. */
static void make_err(errcase *e, bool inline_t)
{
    tex_ctx *ctx = e->ctx = tex_ctx_new();
    e->n = tex_var(ctx, "n", TEX_I32);
    tex_expr *shape[2] = {e->n, c(ctx, 4)};
    e->A = tex_placeholder(ctx, "A", TEX_F32, 2, shape);
    e->B = tex_placeholder(ctx, "B", TEX_F32, 2, shape);
    tex_iter *i = tex_axis(ctx, "i", e->n), *j = tex_axis(ctx, "j", c(ctx, 4));
    e->T = tex_compute(ctx, "T", 2, (tex_iter *[]){i, j},
                       tex_mul(TEX_AT(e->A, tex_iv(i), tex_iv(j)), tex_const(ctx, TEX_F32, 2)));
    tex_iter *i2 = tex_axis(ctx, "i", e->n), *j2 = tex_axis(ctx, "j", c(ctx, 4));
    e->C = tex_compute(
        ctx, "C", 2, (tex_iter *[]){i2, j2},
        tex_add(TEX_AT(e->T, tex_iv(i2), tex_iv(j2)), TEX_AT(e->B, tex_iv(i2), tex_iv(j2))));
    e->s = tex_schedule_new(ctx, 1, &e->C);
    if (inline_t)
        tex_compute_inline(tex_stage_of(e->s, e->T));
}

static void expect_lower_error(errcase *e, const char *name, int n, const tex_param *p, int code,
                               const char *what)
{
    tex_clear_error(e->ctx);
    tex_func *f = tex_lower(e->s, name, n, p);
    TT_CHECK(f == NULL);
    TT_EQ_INT(tex_errcode(e->ctx), code);
    if (!strstr(tex_errmsg(e->ctx), what))
        TT_FAILF("message \"%s\" lacks \"%s\"", tex_errmsg(e->ctx), what);
}

#define TP(x) ((tex_param){.kind = TEX_ARG_TENSOR, .t = (x)})
#define VP(x) ((tex_param){.kind = TEX_ARG_VAR, .v = (x)})

static void test_lower_errors(void)
{
    errcase e;
    make_err(&e, true);
    TT_CHECK(tex_lower(NULL, "f", 0, NULL) == NULL);
    tex_param good[] = {TP(e.A), TP(e.B), TP(e.C)};
    expect_lower_error(&e, NULL, 3, good, TEX_EMISUSE, "NULL name");
    expect_lower_error(&e, "2f", 3, good, TEX_EINVAL, "not a C identifier");
    expect_lower_error(&e, "f-g", 3, good, TEX_EINVAL, "not a C identifier");
    expect_lower_error(&e, "f", 0, good, TEX_EINVAL, "at least one parameter");
    expect_lower_error(&e, "f", 2, (tex_param[]){TP(e.B), TP(e.C)}, TEX_EINVAL,
                       "tensor 'A' is read but is not a parameter of 'f'");
    expect_lower_error(&e, "f", 2, (tex_param[]){TP(e.A), TP(e.B)}, TEX_EINVAL,
                       "output 'C' of the schedule is not a parameter of 'f'");
    expect_lower_error(&e, "f", 4, (tex_param[]){TP(e.A), TP(e.B), TP(e.C), TP(e.A)}, TEX_EINVAL,
                       "'A' is listed twice");
    expect_lower_error(&e, "f", 3, (tex_param[]){TP(e.A), TP(NULL), TP(e.C)}, TEX_EMISUSE,
                       "parameter 1");
    tex_tensor *stray = tex_placeholder_c(e.ctx, "Z", TEX_F32, 1, (int64_t[]){3});
    expect_lower_error(&e, "f", 4, (tex_param[]){TP(e.A), TP(e.B), TP(e.C), TP(stray)}, TEX_EINVAL,
                       "'Z' is not part of the schedule");
    expect_lower_error(&e, "f", 5, (tex_param[]){TP(e.A), TP(e.B), TP(e.C), VP(e.n), VP(e.n)},
                       TEX_EINVAL, "'n' is listed twice");
    expect_lower_error(&e, "f", 4, (tex_param[]){TP(e.A), TP(e.B), TP(e.C), VP(c(e.ctx, 3))},
                       TEX_EINVAL, "must be a tex_var");
    /* An inlined intermediate may not be a parameter (ScheduleOps says so). */
    tex_clear_error(e.ctx);
    TT_CHECK(tex_lower(e.s, "f", 4, (tex_param[]){TP(e.A), TP(e.B), TP(e.C), TP(e.T)}) == NULL);
    TT_EQ_INT(tex_errcode(e.ctx), TEX_EINVAL);
    /* The legal request works, through both entry points. */
    tex_clear_error(e.ctx);
    TT_CHECK(tex_lower(e.s, "f", 3, good) != NULL);
    TT_CHECK(tex_lower_tensors(e.s, "g", 3, (tex_tensor *[]){e.A, e.B, e.C}) != NULL);
    TT_CHECK(tex_lower_tensors(e.s, "g", 2, NULL) == NULL);
    TT_EQ_INT(tex_errcode(e.ctx), TEX_EMISUSE);
    tex_ctx_free(e.ctx);

    /* A symbolic split factor that no parameter gives. */
    make_err(&e, false);
    tex_expr *fac = tex_var(e.ctx, "f", TEX_I32);
    tex_iter *o, *in;
    tex_split(tex_stage_of(e.s, e.C), tex_op_axis(tex_stage_of(e.s, e.C), 0), fac, &o, &in);
    expect_lower_error(&e, "f", 3, (tex_param[]){TP(e.A), TP(e.B), TP(e.C)}, TEX_EINVAL,
                       "symbolic 'f'");
    tex_ctx_free(e.ctx);
}

/* ------------------------------------------------------- texi_bind_args */

static DLTensor *arr2(int64_t a, int64_t b)
{
    return tex_array_new(2, (int64_t[]){a, b}, TEX_F32, (DLDevice){kDLCPU, 0});
}

static void expect_bind_error(const tex_func *f, int n, const tex_value *v, int code,
                              const char *what)
{
    texi_binding env[4];
    int n_env = -1;
    char err[512] = "";
    TT_EQ_INT(texi_bind_args(f, n, v, env, 4, &n_env, err, sizeof err), code);
    if (!strstr(err, what))
        TT_FAILF("message \"%s\" lacks \"%s\"", err, what);
}

#define TV(x) ((tex_value){.kind = TEX_VAL_TENSOR, .t = (x)})

static void test_bind_args(void)
{
    errcase e;
    make_err(&e, true);
    tex_func *f = tex_lower_tensors(e.s, "f", 3, (tex_tensor *[]){e.A, e.B, e.C});
    TT_CHECK(f != NULL);
    if (!f)
        return;
    TT_EQ_INT(f->n_size_vars, 1);
    DLTensor *a = arr2(5, 4), *b = arr2(5, 4), *out = arr2(5, 4), *b6 = arr2(6, 4);
    DLTensor *wide = arr2(5, 5);
    DLTensor *i32 = tex_array_new(2, (int64_t[]){5, 4}, TEX_I32, (DLDevice){kDLCPU, 0});
    DLTensor *flat = tex_array_new(1, (int64_t[]){20}, TEX_F32, (DLDevice){kDLCPU, 0});
    texi_binding env[4];
    int n_env = 0;
    char err[512] = "";
    tex_value ok[] = {TV(a), TV(b), TV(out)};
    TT_EQ_INT(texi_bind_args(f, 3, ok, env, 4, &n_env, err, sizeof err), 0);
    TT_EQ_INT(n_env, 1);
    TT_CHECK(env[0].var == e.n && env[0].value.i == 5);

    expect_bind_error(f, 2, ok, TEX_EINVAL, "f: expected 3 arguments, got 2");
    expect_bind_error(f, 3, (tex_value[]){TV(a), {.kind = TEX_VAL_I64, .i = 3}, TV(out)},
                      TEX_EINVAL, "argument 1 (tensor 'B') must be an array");
    expect_bind_error(f, 3, (tex_value[]){TV(i32), TV(b), TV(out)}, TEX_ETYPE,
                      "argument 0 (tensor 'A') has DLPack dtype");
    expect_bind_error(f, 3, (tex_value[]){TV(flat), TV(b), TV(out)}, TEX_EINVAL,
                      "argument 0 (tensor 'A') has 1 dimensions, expected 2");
    expect_bind_error(f, 3, (tex_value[]){TV(a), TV(wide), TV(out)}, TEX_EINVAL,
                      "argument 1 (tensor 'B'): dimension 1 is 5, expected 4");
    expect_bind_error(f, 3, (tex_value[]){TV(a), TV(b6), TV(out)}, TEX_EINVAL,
                      "argument 1 (tensor 'B'): dimension 0 is 6, but 'n' is 5");
    int64_t strides[2] = {1, 5};
    b->strides = strides;
    expect_bind_error(f, 3, ok, TEX_EINVAL, "stride of dimension 1 is 5, expected 1");
    int64_t compact[2] = {4, 1};
    b->strides = compact;
    TT_EQ_INT(texi_bind_args(f, 3, ok, env, 4, &n_env, err, sizeof err), 0);
    b->strides = NULL;
    void *data = b->data;
    b->data = NULL;
    expect_bind_error(f, 3, ok, TEX_EINVAL, "argument 1 (tensor 'B') has NULL data");
    b->data = data;
    b->device.device_type = kDLCUDA;
    expect_bind_error(f, 3, ok, TEX_EINVAL, "not in host memory");
    b->device.device_type = kDLCPU;
    {
        texi_binding small[1];
        TT_EQ_INT(texi_bind_args(f, 3, ok, small, 0, &n_env, err, sizeof err), TEX_EINVAL);
    }

    /* A VAR parameter must agree with the dimensions it names (rule 7). */
    tex_func *g = tex_lower(e.s, "g", 4, (tex_param[]){TP(e.A), TP(e.B), TP(e.C), VP(e.n)});
    TT_CHECK(g != NULL && g->n_size_vars == 0);
    tex_value five[] = {TV(a), TV(b), TV(out), {.kind = TEX_VAL_I64, .i = 5}};
    TT_EQ_INT(texi_bind_args(g, 4, five, env, 4, &n_env, err, sizeof err), 0);
    TT_CHECK(n_env == 1 && env[0].value.i == 5);
    five[3].i = 6;
    expect_bind_error(g, 4, five, TEX_EINVAL,
                      "argument 0 (tensor 'A'): dimension 0 is 5, but 'n' is 6");
    five[3] = (tex_value){.kind = TEX_VAL_F64, .f = 5};
    expect_bind_error(g, 4, five, TEX_EINVAL, "argument 3 ('n') must be an integer scalar");
    tex_array_free(a);
    tex_array_free(b);
    tex_array_free(out);
    tex_array_free(b6);
    tex_array_free(wide);
    tex_array_free(i32);
    tex_array_free(flat);
    tex_ctx_free(e.ctx);
}

/* A dimension n + 1 is checked once n is bound from another argument. */
static void test_bind_derived_dims(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *n = tex_var(ctx, "n", TEX_I32);
    tex_tensor *P = tex_placeholder(ctx, "P", TEX_F32, 1, (tex_expr *[]){tex_add(n, c(ctx, 1))});
    tex_iter *i = tex_axis(ctx, "i", n);
    tex_tensor *C = tex_compute(ctx, "C", 1, &i, TEX_AT(P, tex_add(tex_iv(i), c(ctx, 1))));
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_func *f = tex_lower_tensors(s, "shift", 2, (tex_tensor *[]){P, C});
    TT_CHECK(f != NULL);
    if (!f) {
        printf("  %s\n", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return;
    }
    DLTensor *p = tex_array_new(1, (int64_t[]){8}, TEX_F32, (DLDevice){kDLCPU, 0});
    DLTensor *cc = tex_array_new(1, (int64_t[]){7}, TEX_F32, (DLDevice){kDLCPU, 0});
    DLTensor *c6 = tex_array_new(1, (int64_t[]){6}, TEX_F32, (DLDevice){kDLCPU, 0});
    texi_binding env[2];
    int n_env = 0;
    char err[256] = "";
    TT_EQ_INT(texi_bind_args(f, 2, (tex_value[]){TV(p), TV(cc)}, env, 2, &n_env, err, sizeof err),
              0);
    TT_CHECK(n_env == 1 && env[0].value.i == 7);
    expect_bind_error(f, 2, (tex_value[]){TV(p), TV(c6)}, TEX_EINVAL,
                      "argument 0 (tensor 'P'): dimension 0 is 8, expected 7");
    tex_array_free(p);
    tex_array_free(cc);
    tex_array_free(c6);
    tex_ctx_free(ctx);
}

int main(void)
{
    TT_RUN(test_golden);
    TT_RUN(test_main_body_guard_free);
    TT_RUN(test_dump);
    TT_RUN(test_lower_errors);
    TT_RUN(test_bind_args);
    TT_RUN(test_bind_derived_dims);
    return tt_finish();
}
