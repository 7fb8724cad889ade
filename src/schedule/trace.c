/*
 * Recording the schedule's trace (trace.h) and tex_schedule_trace, which
 * prints it. The reader is apply_text.c.
 */
#include "schedule/trace.h"
#include "schedule/primitive.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const texi_trace_tags[7] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                        "threadIdx.y", "threadIdx.z", "vthread"};
const char *const texi_trace_scopes[3] = {"global", "shared", "local"};
const char *const texi_trace_tails[5] = {"auto", "guard", "round_up", "shift_inwards", "predicate"};

void texi_trace_begin(texi_trace_rec *r, tex_schedule *s, const char *prim)
{
    r->sch = s;
    r->gap = NULL;
    r->len = 0;
    r->text[0] = '\0';
    texi_trace_word(r, prim);
}

void texi_trace_word(texi_trace_rec *r, const char *word)
{
    if (!r->sch)
        return;
    int n = snprintf(r->text + r->len, sizeof r->text - r->len, "%s%s", r->len ? " " : "", word);
    if (n < 0 || (size_t)n >= sizeof r->text - r->len)
        texi_trace_gap(r, "a line longer than 1 KiB");
    else
        r->len += (size_t)n;
}

void texi_trace_int(texi_trace_rec *r, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    texi_trace_word(r, buf);
}

void texi_trace_gap(texi_trace_rec *r, const char *why)
{
    if (r->sch && !r->gap)
        r->gap = why;
}

/* A name the reader can take back as one word: not empty, no white space,
 * not starting with a reference sigil. */
static bool plain_word(const char *s)
{
    if (!s || !*s || *s == '@' || *s == '#')
        return false;
    for (; *s; s++)
        if (isspace((unsigned char)*s))
            return false;
    return true;
}

void texi_trace_stage(texi_trace_rec *r, const tex_stage *st)
{
    if (!r->sch)
        return;
    const tex_schedule *s = r->sch;
    int index = -1, same = 0;
    for (int i = 0; i < s->n_stages; i++) {
        index = s->stages[i] == st ? i : index;
        same += strcmp(s->stages[i]->tensor->name, st->tensor->name) == 0;
    }
    char buf[32];
    if (same == 1 && plain_word(st->tensor->name)) {
        texi_trace_word(r, st->tensor->name);
    } else {
        snprintf(buf, sizeof buf, "@%d", index);
        texi_trace_word(r, buf);
    }
}

void texi_trace_iter(texi_trace_rec *r, const tex_stage *st, const tex_iter *iv)
{
    if (!r->sch)
        return;
    int index = -1, same = 0;
    for (int i = 0; i < st->n_all; i++) {
        index = st->all[i] == iv ? i : index;
        same += iv && strcmp(st->all[i]->name, iv->name) == 0;
    }
    char buf[32];
    if (same == 1 && plain_word(iv->name)) {
        texi_trace_word(r, iv->name);
    } else {
        snprintf(buf, sizeof buf, "#%d", index);
        texi_trace_word(r, buf);
    }
}

void texi_trace_factor(texi_trace_rec *r, const tex_stage *st, const tex_iter *iv,
                       const tex_expr *factor)
{
    int64_t v;
    if (!r->sch)
        return;
    if (factor && texi_expr_is_int_const(factor, &v)) {
        texi_trace_int(r, v);
        return;
    }
    char *why = texi_arena_alloc(&r->sch->ctx->arena, 256);
    if (why)
        snprintf(why, 256, "stage '%s', axis '%s': a factor that is not an integer constant",
                 st->tensor->name, iv ? iv->name : "?");
    texi_trace_gap(r, why ? why : "a factor that is not an integer constant");
}

void texi_trace_commit(texi_trace_rec *r)
{
    tex_schedule *s = r->sch;
    if (!s)
        return;
    if (r->gap) {
        if (!s->trace_gap)
            s->trace_gap = r->gap;
        return;
    }
    texi_trace_line *line = texi_arena_alloc(&s->ctx->arena, sizeof *line);
    char *text = line ? texi_arena_strdup(&s->ctx->arena, r->text) : NULL;
    if (!text) { /* the primitive has succeeded: no error to report, only a gap */
        if (!s->trace_gap)
            s->trace_gap = "out of memory while recording";
        return;
    }
    line->text = text;
    *s->trace_end = line;
    s->trace_end = &line->next;
}

char *tex_schedule_trace(tex_schedule *s)
{
    if (!s)
        return NULL;
    if (s->trace_gap) {
        texi_error(s->ctx, TEX_EINVAL,
                   "tex_schedule_trace: a primitive of this schedule cannot be written as text: %s",
                   s->trace_gap);
        return NULL;
    }
    texi_sb sb;
    texi_sb_init(&sb);
    for (const texi_trace_line *l = s->trace; l; l = l->next) {
        texi_sb_puts(&sb, l->text);
        texi_sb_putc(&sb, '\n');
    }
    char *text = texi_sb_take(&sb);
    if (!text)
        texi_error(s->ctx, TEX_ENOMEM, "tex_schedule_trace: out of memory");
    return text;
}
