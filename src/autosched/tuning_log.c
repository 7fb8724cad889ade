/*
 * The tuning log (tuning_log.h, docs/tuning.md) and the workload key that
 * names a workload in it. One line per trial,
 *
 *   tex-tune-1 <TAB> KEY <TAB> TARGET <TAB> MS <TAB> TEXT
 *
 * KEY the workload's hex SHA-256 (texi_tune_key), TARGET the target string,
 * MS the median time in milliseconds or "failed", or "chosen:" and the time
 * for the schedule a tex_tune returned (its median in the final interleaved
 * comparison, src/tune/tune.c), TEXT the schedule text
 * with backslash, newline and tab written as \\, \n and \t. A line is
 * appended with one write(2) on a descriptor opened with O_APPEND, under an
 * exclusive flock, so the lines of concurrent processes never interleave.
 *
 * Reading trusts nothing: a line that is not five fields of this form is
 * malformed (the first one is reported with texi_warn and all are skipped);
 * among the lines of the wanted key and target, the last chosen one whose
 * text applies to a fresh schedule of the outputs wins (each tex_tune starts
 * from the schedule this returns and compares it with its finalists), else
 * the fastest trial whose text applies (one that does not apply is reported
 * and skipped too). A chosen line, not the fastest trial, because the
 * fastest of hundreds of trials on a busy machine is often one that ran in a
 * quiet moment.
 */
#include "autosched/tuning_log.h"

#include "util/sha256.h"

#include "util/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static const char MAGIC[] = "tex-tune-1", CHOSEN[] = "chosen:";

/* Appends what identifies tensor t's definition to sb. */
static void describe(texi_sb *sb, const tex_tensor *t)
{
    texi_sb_printf(sb, "%s:%d:[", t->name, (int)t->dtype);
    for (int d = 0; d < t->ndim; d++) {
        texi_expr_print(sb, t->shape[d]);
        texi_sb_putc(sb, ',');
    }
    texi_sb_puts(sb, "]");
    const texi_op *op = t->op;
    if (op->kind != TEXI_OP_COMPUTE) {
        texi_sb_puts(sb, "=input\n");
        return;
    }
    for (int i = 0; i < op->n_axes + op->n_raxes; i++) {
        const tex_iter *iv = i < op->n_axes ? op->axes[i] : op->raxes[i - op->n_axes];
        texi_sb_printf(sb, "%s%s<", i < op->n_axes ? " " : " r:", iv->name);
        texi_expr_print(sb, iv->extent);
        texi_sb_puts(sb, ">");
    }
    texi_sb_puts(sb, " = ");
    texi_expr_print(sb, op->body);
    texi_sb_putc(sb, '\n');
}

void texi_tune_key(tex_ctx *ctx, int n, tex_tensor *const outputs[], char key[65])
{
    int n_ops = 0;
    tex_tensor **order = texi_tensor_post_order(ctx, n, outputs, &n_ops);
    texi_sb sb;
    texi_sb_init(&sb);
    for (int i = 0; order && i < n_ops; i++)
        describe(&sb, order[i]);
    for (int i = 0; i < n; i++)
        texi_sb_printf(&sb, "out %s\n", outputs[i]->name);
    char *text = texi_sb_take(&sb);
    texi_sha256 s;
    texi_sha256_init(&s);
    if (text)
        texi_sha256_update(&s, text, strlen(text));
    uint8_t d[32];
    texi_sha256_final(&s, d);
    texi_sha256_hex(d, key);
    free(text);
}

/* text with \, newline and tab escaped, appended to sb. */
static void put_escaped(texi_sb *sb, const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p == '\\')
            texi_sb_puts(sb, "\\\\");
        else if (*p == '\n')
            texi_sb_puts(sb, "\\n");
        else if (*p == '\t')
            texi_sb_puts(sb, "\\t");
        else
            texi_sb_putc(sb, *p);
    }
}

int texi_tune_log_append(const char *path, const char *key, const char *target, double ms,
                         const char *text, bool chosen)
{
    texi_sb sb;
    texi_sb_init(&sb);
    texi_sb_printf(&sb, "%s\t%s\t%s\t", MAGIC, key, target);
    if (ms >= 0)
        texi_sb_printf(&sb, "%s%.6g\t", chosen ? CHOSEN : "", ms);
    else
        texi_sb_puts(&sb, "failed\t");
    put_escaped(&sb, text);
    texi_sb_putc(&sb, '\n');
    char *line = texi_sb_take(&sb);
    int fd = line ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
    int rc = -1;
    if (fd >= 0) {
        size_t len = strlen(line);
        if (flock(fd, LOCK_EX) == 0) {
            rc = write(fd, line, len) == (ssize_t)len ? 0 : -1;
            flock(fd, LOCK_UN);
        }
        close(fd);
    }
    free(line);
    return rc;
}

/* Undoes put_escaped in place; false on a dangling or unknown escape. */
static bool unescape(char *s)
{
    char *out = s;
    for (char *p = s; *p; p++) {
        if (*p != '\\') {
            *out++ = *p;
            continue;
        }
        p++;
        if (*p == '\\')
            *out++ = '\\';
        else if (*p == 'n')
            *out++ = '\n';
        else if (*p == 't')
            *out++ = '\t';
        else
            return false;
    }
    *out = '\0';
    return true;
}

/* A trial of the wanted workload and target; line: its order in the log. */
typedef struct {
    double ms;
    bool chosen;
    int line;
    char *text;
} trial;

/* Chosen lines first, the last one first; then the fastest trial first. */
static int cmp_trial(const void *a, const void *b)
{
    const trial *x = a, *y = b;
    if (x->chosen != y->chosen)
        return x->chosen ? -1 : 1;
    if (x->chosen)
        return (x->line < y->line) - (x->line > y->line);
    return (x->ms > y->ms) - (x->ms < y->ms);
}

/* Splits line (its newline removed) into its 5 tab-separated fields (the
 * text, last, keeps any tab it has escaped); false unless it is a
 * well-formed trial line. *chosen: whether it is a chosen line. */
static bool parse_line(char *line, char *f[5], double *ms, bool *chosen)
{
    char *p = line;
    for (int i = 0; i < 4; i++) {
        f[i] = p;
        char *tab = strchr(p, '\t');
        if (!tab)
            return false;
        *tab = '\0';
        p = tab + 1;
    }
    f[4] = p;
    if (strcmp(f[0], MAGIC) != 0 || strlen(f[1]) != 64 || strspn(f[1], "0123456789abcdef") != 64 ||
        !unescape(f[4]))
        return false;
    *chosen = false;
    if (strcmp(f[3], "failed") == 0) {
        *ms = -1;
        return true;
    }
    const char *num = f[3];
    if (strncmp(num, CHOSEN, sizeof CHOSEN - 1) == 0) {
        *chosen = true;
        num += sizeof CHOSEN - 1;
    }
    char *end;
    *ms = strtod(num, &end);
    return end != num && *end == '\0' && isfinite(*ms) && *ms >= 0;
}

/* The wanted trials of the log at path, into *out (malloc'ed); their count. */
static int read_trials(tex_ctx *ctx, const char *path, const char *key, const char *target,
                       trial **out)
{
    FILE *fp = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    int n = 0, lineno = 0, room = 0;
    *out = NULL;
    bool warned = false;
    for (ssize_t len; fp && (len = getline(&line, &cap, fp)) >= 0;) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            line[len - 1] = '\0';
        char *f[5];
        double ms;
        bool chosen;
        if (!parse_line(line, f, &ms, &chosen)) {
            if (!warned)
                texi_warn(ctx, "tuning log %s: line %d is malformed and was skipped", path, lineno);
            warned = true;
            continue;
        }
        if (ms < 0 || strcmp(f[1], key) != 0 || strcmp(f[2], target) != 0)
            continue;
        if (n == room) {
            room = room ? 2 * room : 16;
            trial *grown = realloc(*out, sizeof **out * (size_t)room);
            if (!grown)
                break;
            *out = grown;
        }
        char *text = strdup(f[4]);
        if (text)
            (*out)[n++] = (trial){ms, chosen, lineno, text};
    }
    free(line);
    if (fp)
        fclose(fp);
    return n;
}

char *texi_tune_log_best(tex_ctx *ctx, const char *path, const char *key, const char *target, int n,
                         tex_tensor *const outputs[])
{
    trial *t = NULL;
    int nt = read_trials(ctx, path, key, target, &t);
    if (nt > 1)
        qsort(t, (size_t)nt, sizeof *t, cmp_trial);
    char *best = NULL;
    for (int i = 0; i < nt && !best; i++) {
        int code0 = tex_errcode(ctx);
        tex_schedule *s = tex_schedule_new(ctx, n, outputs);
        if (s && tex_schedule_apply_text(s, t[i].text) == 0) {
            best = t[i].text;
            t[i].text = NULL;
        } else {
            texi_warn(ctx,
                      "tuning log %s: a trial of this workload does not apply (%s) and was "
                      "skipped",
                      path, code0 ? "an earlier error is pending" : tex_errmsg(ctx));
            if (!code0)
                texi_clear_error(ctx);
        }
    }
    for (int i = 0; i < nt; i++)
        free(t[i].text);
    free(t);
    return best;
}
