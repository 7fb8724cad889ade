/*
 * The tuning log (docs/tuning.md): what tex_tune measured, and what
 * tex_auto_schedule reuses (the best known schedule of a workload and
 * target when $TEX_TUNE_LOG names a log). tuning_log.c.
 */
#ifndef TEX_AUTOSCHED_TUNING_LOG_H
#define TEX_AUTOSCHED_TUNING_LOG_H

#include "ir/ir.h"

/* The hex SHA-256 of the computes below outputs (names, dtypes, shapes, axes
 * and bodies), the same in every process that builds the same graph. */
void texi_tune_key(tex_ctx *ctx, int n, tex_tensor *const outputs[], char key[65]);

/* Appends one trial as a line (a single write on a file opened for
 * appending, so lines of concurrent processes do not mix); `chosen` marks
 * the schedule a tex_tune returned, ms its time in the final comparison.
 * 0 or -1. */
int texi_tune_log_append(const char *path, const char *key, const char *target, double ms,
                         const char *text, bool chosen);

/* The text (malloc'ed) of the last chosen line of key and target in the log
 * at path whose text applies to a fresh schedule of outputs, else of the
 * fastest such trial, or NULL. Lines that are malformed or from another
 * workload or target are skipped; the first malformed one, and a text that
 * does not apply, are reported with texi_warn (tex_warnmsg). */
char *texi_tune_log_best(tex_ctx *ctx, const char *path, const char *key, const char *target, int n,
                         tex_tensor *const outputs[]);

#endif
