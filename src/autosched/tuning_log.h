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
 * appending, so lines of concurrent processes do not mix). 0 or -1. */
int texi_tune_log_append(const char *path, const char *key, const char *target, double ms,
                         const char *text);

/* The text of the fastest valid trial of key and target in the log at path
 * (malloc'ed), or NULL. Lines that are malformed, from another workload or
 * target, or whose text does not apply to a fresh schedule of outputs are
 * skipped; the first malformed one is reported with texi_warn (tex_warnmsg). */
char *texi_tune_log_best(tex_ctx *ctx, const char *path, const char *key, const char *target, int n,
                         tex_tensor *const outputs[]);

#endif
