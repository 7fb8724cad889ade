/*
 * The schedule's trace: every primitive applied to a schedule, as one line
 * of text that tex_schedule_apply reads back (docs/api.md, "Schedules as
 * text"). Private to src/schedule.
 *
 * A primitive records itself in two steps: texi_trace_begin and the
 * argument writers, at its start, before anything changes (stage indices
 * and name clashes are those the replay will see); texi_trace_commit when
 * it has succeeded. A failed primitive simply never commits. An argument
 * that has no text (a symbolic split factor, a user intrinsic) turns the
 * record into a gap: tex_schedule_trace then refuses, naming it.
 *
 * References: a stage by its tensor's name, or "@K" (its index in the
 * schedule's stage list) when the name is not unique or not a plain word;
 * an iter by its name, or "#K" (its index among the stage's iters, in
 * order of creation) likewise. Replaying the same lines on a schedule of
 * the same computes creates the same stages and iters in the same order,
 * so both forms resolve to the same objects.
 */
#ifndef TEX_SCHEDULE_TRACE_H
#define TEX_SCHEDULE_TRACE_H

#include "schedule/schedule.h"

/* One primitive's line, built on the stack. */
typedef struct {
    tex_schedule *sch; /* NULL: nothing is recorded (a NULL stage, say) */
    char text[1024];
    size_t len;
    const char *gap; /* why the line has no text (arena string), or NULL */
} texi_trace_rec;

/* Starts the line of primitive `prim` on schedule s (may be NULL). */
void texi_trace_begin(texi_trace_rec *r, tex_schedule *s, const char *prim);

void texi_trace_stage(texi_trace_rec *r, const tex_stage *st);
/* iv as an iter of st (its owner: for compute_at, the parent stage). */
void texi_trace_iter(texi_trace_rec *r, const tex_stage *st, const tex_iter *iv);
void texi_trace_int(texi_trace_rec *r, int64_t v);
void texi_trace_word(texi_trace_rec *r, const char *word);
/* A split factor or part count: an integer constant, else a gap naming it. */
void texi_trace_factor(texi_trace_rec *r, const tex_stage *st, const tex_iter *iv,
                       const tex_expr *factor);
/* A gap: the line cannot be written (why: a static or arena string). */
void texi_trace_gap(texi_trace_rec *r, const char *why);

/* Appends the finished line to the schedule's trace (or records its gap). */
void texi_trace_commit(texi_trace_rec *r);

/* The spellings shared by the trace and its reader. */
extern const char *const texi_trace_tags[7];   /* by tex_thread_tag */
extern const char *const texi_trace_scopes[3]; /* by tex_scope */
extern const char *const texi_trace_tails[5];  /* by tex_tail */

#endif
