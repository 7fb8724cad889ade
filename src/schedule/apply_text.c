/*
 * tex_schedule_apply_text: reads the lines tex_schedule_trace writes
 * (trace.h) and applies each through the public primitive it names, so a
 * replayed schedule passes every check an interactive one does and records
 * its own trace as it goes.
 *
 * One line is a primitive and its arguments, separated by white space:
 *
 *   split S I F [TAIL]      split_nparts S I N      tile S X Y FX FY
 *   fuse S O I              reorder S I...          bind S I TAG
 *   parallel S I            vectorize S I           vectorize_reduce S I
 *   unroll S I              compute_at S P I        compute_inline S
 *   compute_root S          set_scope S SCOPE       storage_align S I F O
 *   double_buffer S         atomic S                cache_read T SCOPE R...
 *   cache_write T SCOPE     rfactor T I F           tensorize S I BUILTIN
 *   merge S P               prefetch S T I OFFSET [FROM]
 *   reorder_storage S I...
 *
 * S, P, T, R name stages (a tensor's name, or @K); I, O, X, Y, FROM name
 * iters of the stage before them (compute_at: of P) by name or #K; F, N, FX, FY, O
 * are integers; TAG is blockIdx.x ... vthread, SCOPE global/shared/local,
 * TAIL auto/guard/round_up/shift_inwards/predicate, BUILTIN a built-in
 * intrinsic's name. Blank lines and lines starting with ';' are skipped.
 */
#include "schedule/primitive.h"
#include "schedule/trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 72

/* One line split into words (pointers into a private copy). */
typedef struct {
    tex_schedule *s;
    int n;
    char *w[MAX_WORDS];
    char why[512]; /* a reference or syntax error, when a handler fails on one */
} line_args;

__attribute__((format(printf, 2, 3))) static int bad(line_args *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->why, sizeof a->why, fmt, ap);
    va_end(ap);
    return TEX_EINVAL;
}

/* "@K" or "#K": K, else -1. */
static int index_ref(const char *ref, char sigil)
{
    if (ref[0] != sigil || !ref[1])
        return -1;
    char *end;
    errno = 0;
    long k = strtol(ref + 1, &end, 10);
    return *end || errno || k < 0 || k > 1000000 ? -1 : (int)k;
}

static tex_stage *stage_ref(line_args *a, const char *ref)
{
    const tex_schedule *s = a->s;
    int k = index_ref(ref, '@');
    if (k >= 0)
        return k < s->n_stages ? s->stages[k] : NULL;
    tex_stage *found = NULL;
    for (int i = 0; i < s->n_stages; i++)
        if (strcmp(s->stages[i]->tensor->name, ref) == 0) {
            if (found)
                return NULL; /* ambiguous: the writer would have used @K */
            found = s->stages[i];
        }
    return found;
}

static tex_iter *iter_ref(const tex_stage *st, const char *ref)
{
    int k = index_ref(ref, '#');
    if (k >= 0)
        return k < st->n_all ? st->all[k] : NULL;
    tex_iter *found = NULL;
    for (int i = 0; i < st->n_all; i++)
        if (strcmp(st->all[i]->name, ref) == 0) {
            if (found)
                return NULL;
            found = st->all[i];
        }
    return found;
}

static int int_arg(line_args *a, int i, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(a->w[i], &end, 10);
    if (!*a->w[i] || *end || errno)
        return bad(a, "'%s' is not an integer", a->w[i]);
    *v = x;
    return 0;
}

/* Word i of the line as an entry of table (n entries): its index, or -1. */
static int word_arg(const line_args *a, int i, const char *const table[], int n)
{
    for (int k = 0; k < n; k++)
        if (strcmp(a->w[i], table[k]) == 0)
            return k;
    return -1;
}

/* Resolves word 1 as a stage and, when iter_words > 0, words 2.. as its
 * iters into iv[]. */
static int stage_iters(line_args *a, tex_stage **st, int iter_words, tex_iter **iv)
{
    if (!(*st = stage_ref(a, a->w[1])))
        return bad(a, "no stage '%s' in this schedule", a->w[1]);
    for (int i = 0; i < iter_words; i++)
        if (!(iv[i] = iter_ref(*st, a->w[2 + i])))
            return bad(a, "stage '%s' has no axis '%s'", a->w[1], a->w[2 + i]);
    return 0;
}

/* ------------------------------------------------------------ handlers */

static int do_split(line_args *a, bool nparts)
{
    tex_stage *st;
    tex_iter *iv;
    int64_t f;
    int tail = TEX_TAIL_AUTO;
    TEXI_TRY(stage_iters(a, &st, 1, &iv));
    TEXI_TRY(int_arg(a, 3, &f));
    if (a->n == 5 && (nparts || (tail = word_arg(a, 4, texi_trace_tails, 5)) < 0))
        return bad(a, "unknown tail strategy '%s'", a->w[4]);
    tex_expr *by = tex_int(a->s->ctx, f);
    return nparts ? tex_split_nparts(st, iv, by, NULL, NULL)
                  : tex_split_tail(st, iv, by, (tex_tail)tail, NULL, NULL);
}

static int do_tile(line_args *a)
{
    tex_stage *st;
    tex_iter *iv[2];
    int64_t fx, fy;
    TEXI_TRY(stage_iters(a, &st, 2, iv));
    TEXI_TRY(int_arg(a, 4, &fx));
    TEXI_TRY(int_arg(a, 5, &fy));
    tex_ctx *ctx = a->s->ctx;
    return tex_tile(st, iv[0], iv[1], tex_int(ctx, fx), tex_int(ctx, fy), NULL, NULL, NULL, NULL);
}

/* reorder and reorder_storage: a stage and a list of its iters. */
static int do_iter_list(line_args *a, int (*prim)(tex_stage *, int, tex_iter *const[]))
{
    tex_stage *st;
    tex_iter *iv[MAX_WORDS];
    TEXI_TRY(stage_iters(a, &st, a->n - 2, iv));
    return prim(st, a->n - 2, iv);
}

static int do_annotate(line_args *a, int (*prim)(tex_stage *, tex_iter *))
{
    tex_stage *st;
    tex_iter *iv;
    TEXI_TRY(stage_iters(a, &st, 1, &iv));
    return prim(st, iv);
}

static int do_bind(line_args *a)
{
    tex_stage *st;
    tex_iter *iv;
    TEXI_TRY(stage_iters(a, &st, 1, &iv));
    int tag = word_arg(a, 3, texi_trace_tags, 7);
    if (tag < 0)
        return bad(a, "unknown thread tag '%s'", a->w[3]);
    return tex_bind(st, iv, (tex_thread_tag)tag);
}

static int do_stage_only(line_args *a, int (*prim)(tex_stage *))
{
    tex_stage *st;
    TEXI_TRY(stage_iters(a, &st, 0, NULL));
    return prim(st);
}

static int do_compute_at(line_args *a)
{
    tex_stage *st, *parent = stage_ref(a, a->w[2]);
    TEXI_TRY(stage_iters(a, &st, 0, NULL));
    if (!parent)
        return bad(a, "no stage '%s' in this schedule", a->w[2]);
    tex_iter *iv = iter_ref(parent, a->w[3]);
    if (!iv)
        return bad(a, "stage '%s' has no axis '%s'", a->w[2], a->w[3]);
    return tex_compute_at(st, parent, iv);
}

static int do_merge(line_args *a)
{
    tex_stage *st, *kept = stage_ref(a, a->w[2]);
    TEXI_TRY(stage_iters(a, &st, 0, NULL));
    return kept ? tex_merge(st, kept) : bad(a, "no stage '%s' in this schedule", a->w[2]);
}

static int do_prefetch(line_args *a)
{
    tex_stage *st, *of_t = stage_ref(a, a->w[2]);
    tex_iter *iv = NULL, *from;
    int64_t offset;
    TEXI_TRY(stage_iters(a, &st, 0, NULL));
    if (!of_t)
        return bad(a, "no stage '%s' in this schedule", a->w[2]);
    if (!(iv = iter_ref(st, a->w[3])))
        return bad(a, "stage '%s' has no axis '%s'", a->w[1], a->w[3]);
    TEXI_TRY(int_arg(a, 4, &offset));
    if (offset < 1 || offset > 1 << 20)
        return bad(a, "offset %lld out of range", (long long)offset);
    if (a->n == 5)
        return tex_prefetch(st, of_t->tensor, iv, (int)offset);
    if (!(from = iter_ref(st, a->w[5])))
        return bad(a, "stage '%s' has no axis '%s'", a->w[1], a->w[5]);
    return tex_prefetch_at(st, of_t->tensor, iv, from, (int)offset);
}

static int scope_arg(line_args *a, int i, tex_scope *scope)
{
    int k = word_arg(a, i, texi_trace_scopes, 3);
    if (k < 0)
        return bad(a, "unknown scope '%s'", a->w[i]);
    *scope = (tex_scope)k;
    return 0;
}

static int do_set_scope(line_args *a)
{
    tex_stage *st;
    tex_scope scope;
    TEXI_TRY(stage_iters(a, &st, 0, NULL));
    TEXI_TRY(scope_arg(a, 2, &scope));
    return tex_set_scope(st, scope);
}

static int do_storage_align(line_args *a)
{
    tex_stage *st;
    tex_iter *iv;
    int64_t f, o;
    TEXI_TRY(stage_iters(a, &st, 1, &iv));
    TEXI_TRY(int_arg(a, 3, &f));
    TEXI_TRY(int_arg(a, 4, &o));
    if (f < 0 || f > 1 << 30 || o < 0 || o > 1 << 30)
        return bad(a, "factor %lld or offset %lld out of range", (long long)f, (long long)o);
    return tex_storage_align(st, iv, (int)f, (int)o);
}

/* A tensor-returning primitive's result as a code: NULL is its recorded error. */
static int tensor_rc(const line_args *a, const tex_tensor *t)
{
    return t ? 0 : tex_errcode(a->s->ctx) ? tex_errcode(a->s->ctx) : TEX_EINVAL;
}

static int do_cache_read(line_args *a)
{
    tex_stage *st;
    tex_scope scope;
    tex_tensor *readers[MAX_WORDS];
    TEXI_TRY(stage_iters(a, &st, 0, NULL));
    TEXI_TRY(scope_arg(a, 2, &scope));
    for (int i = 3; i < a->n; i++) {
        tex_stage *r = stage_ref(a, a->w[i]);
        if (!r)
            return bad(a, "no stage '%s' in this schedule", a->w[i]);
        readers[i - 3] = r->tensor;
    }
    return tensor_rc(a, tex_cache_read(a->s, st->tensor, scope, a->n - 3, readers));
}

static int do_cache_write(line_args *a)
{
    tex_stage *st;
    tex_scope scope;
    TEXI_TRY(stage_iters(a, &st, 0, NULL));
    TEXI_TRY(scope_arg(a, 2, &scope));
    return tensor_rc(a, tex_cache_write(a->s, st->tensor, scope));
}

static int do_rfactor(line_args *a)
{
    tex_stage *st;
    tex_iter *iv;
    int64_t f;
    TEXI_TRY(stage_iters(a, &st, 1, &iv));
    TEXI_TRY(int_arg(a, 3, &f));
    if (f < 0 || f > 64)
        return bad(a, "factor axis %lld out of range", (long long)f);
    return tensor_rc(a, tex_rfactor(a->s, st->tensor, iv, (int)f));
}

static int do_tensorize(line_args *a)
{
    tex_stage *st;
    tex_iter *iv;
    TEXI_TRY(stage_iters(a, &st, 1, &iv));
    tex_intrin *in = tex_intrin_builtin(a->s->ctx, a->w[3]);
    return in ? tex_tensorize(st, iv, in) : tex_errcode(a->s->ctx);
}

static int prim_vectorize_reduce(tex_stage *st, tex_iter *iv)
{
    return tex_vectorize_reduce(st, iv);
}

/* Runs the primitive the line names, after checking its number of words
 * (min..max with the primitive's own; max < 0: no limit). */
static int dispatch(line_args *a)
{
    static const struct {
        const char *name;
        int min, max;
    } shapes[] = {
        {"split", 4, 5},         {"split_nparts", 4, 4}, {"tile", 6, 6},
        {"fuse", 4, 4},          {"reorder", 3, -1},     {"bind", 4, 4},
        {"parallel", 3, 3},      {"vectorize", 3, 3},    {"vectorize_reduce", 3, 3},
        {"unroll", 3, 3},        {"compute_at", 4, 4},   {"compute_inline", 2, 2},
        {"compute_root", 2, 2},  {"set_scope", 3, 3},    {"storage_align", 5, 5},
        {"double_buffer", 2, 2}, {"atomic", 2, 2},       {"cache_read", 4, -1},
        {"cache_write", 3, 3},   {"rfactor", 4, 4},      {"tensorize", 4, 4},
        {"merge", 3, 3},         {"prefetch", 5, 6},     {"reorder_storage", 3, -1},
    };
    int k = -1;
    for (int i = 0; i < (int)(sizeof shapes / sizeof shapes[0]); i++)
        if (strcmp(a->w[0], shapes[i].name) == 0)
            k = i;
    if (k < 0)
        return bad(a, "unknown primitive '%s'", a->w[0]);
    int min = shapes[k].min, max = shapes[k].max;
    if (a->n < min || (max >= 0 && a->n > max))
        return max < 0
                   ? bad(a, "'%s' needs at least %d words, the line has %d", a->w[0], min, a->n)
                   : bad(a, "'%s' needs %d to %d words, the line has %d", a->w[0], min, max, a->n);
    switch (k) {
    case 0:
    case 1:
        return do_split(a, k == 1);
    case 2:
        return do_tile(a);
    case 3: {
        tex_stage *st;
        tex_iter *iv[2];
        TEXI_TRY(stage_iters(a, &st, 2, iv));
        return tex_fuse(st, iv[0], iv[1], NULL);
    }
    case 4:
        return do_iter_list(a, tex_reorder);
    case 5:
        return do_bind(a);
    case 6:
        return do_annotate(a, tex_parallel);
    case 7:
        return do_annotate(a, tex_vectorize);
    case 8:
        return do_annotate(a, prim_vectorize_reduce);
    case 9:
        return do_annotate(a, tex_unroll);
    case 10:
        return do_compute_at(a);
    case 11:
        return do_stage_only(a, tex_compute_inline);
    case 12:
        return do_stage_only(a, tex_compute_root);
    case 13:
        return do_set_scope(a);
    case 14:
        return do_storage_align(a);
    case 15:
        return do_stage_only(a, tex_double_buffer);
    case 16:
        return do_stage_only(a, tex_atomic);
    case 17:
        return do_cache_read(a);
    case 18:
        return do_cache_write(a);
    case 19:
        return do_rfactor(a);
    case 20:
        return do_tensorize(a);
    case 21:
        return do_merge(a);
    case 22:
        return do_prefetch(a);
    default:
        return do_iter_list(a, tex_reorder_storage);
    }
}

/* ------------------------------------------------------------ the text */

/* Where applying text stopped. */
typedef struct {
    int line;       /* 1-based number of the failing line */
    char text[160]; /* its beginning */
    char why[1024]; /* the reason */
} apply_failure;

/* Applies every line of text to s; 0, or the first failure's code with f
 * filled (the context keeps the primitive's own error, if it recorded one). */
static int apply_lines(tex_schedule *s, const char *text, apply_failure *f)
{
    int lineno = 0;
    for (const char *p = text; *p;) {
        const char *start = p, *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        p += len + (end ? 1 : 0);
        lineno++;
        char *copy = malloc(len + 1);
        if (!copy)
            return TEX_ENOMEM;
        memcpy(copy, start, len);
        copy[len] = '\0';
        line_args a = {.s = s, .n = 0};
        for (char *q = copy; *q && a.n < MAX_WORDS;) {
            while (*q == ' ' || *q == '\t' || *q == '\r')
                *q++ = '\0';
            if (*q)
                a.w[a.n++] = q;
            while (*q && *q != ' ' && *q != '\t' && *q != '\r')
                q++;
        }
        int rc = 0;
        if (a.n > 0 && a.w[0][0] != ';') {
            int code0 = tex_errcode(s->ctx);
            rc = a.n == MAX_WORDS ? bad(&a, "more than %d words", MAX_WORDS - 1) : dispatch(&a);
            if (rc != 0) {
                f->line = lineno;
                snprintf(f->text, sizeof f->text, "%.*s", (int)(len < 150 ? len : 150), start);
                if (a.why[0])
                    snprintf(f->why, sizeof f->why, "%s", a.why);
                else if (code0 == 0)
                    snprintf(f->why, sizeof f->why, "%s", tex_errmsg(s->ctx));
                else
                    snprintf(f->why, sizeof f->why, "the primitive failed (%d)", rc);
            }
        }
        free(copy);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Replays s's own trace then text on a scratch schedule of s's outputs. */
static int rehearse(tex_schedule *s, const char *text, apply_failure *f)
{
    tex_schedule *scratch = tex_schedule_new(s->ctx, s->n_outputs, s->outputs);
    if (!scratch)
        return tex_errcode(s->ctx);
    for (const texi_trace_line *l = s->trace; l; l = l->next)
        if (apply_lines(scratch, l->text, f) != 0)
            return texi_error(s->ctx, TEX_EINTERNAL,
                              "tex_schedule_apply_text: the schedule's own trace does not replay "
                              "(%s: %s)",
                              l->text, f->why);
    return apply_lines(scratch, text, f);
}

int tex_schedule_apply_text(tex_schedule *s, const char *text)
{
    static const char call[] = "tex_schedule_apply_text";
    if (!s)
        return TEX_EMISUSE;
    tex_ctx *ctx = s->ctx;
    if (!text) {
        texi_error_null_operand(ctx, call, "text");
        return TEX_EMISUSE;
    }
    bool clean = tex_errcode(ctx) == 0; /* else the earlier error stays the recorded one */
    apply_failure f = {0};
    int rc = s->trace_gap ? 0 : rehearse(s, text, &f);
    if (rc == 0)
        rc = apply_lines(s, text, &f);
    if (rc == 0 || rc == TEX_ENOMEM || rc == TEX_EINTERNAL || !f.line)
        return rc == TEX_ENOMEM && clean ? texi_error(ctx, rc, "%s: out of memory", call) : rc;
    if (clean)
        texi_clear_error(ctx);
    return texi_error(ctx, TEX_EINVAL, "%s: line %d ('%s'): %s", call, f.line, f.text, f.why);
}
