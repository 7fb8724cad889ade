/*
 * The lowering verifier (verify.c), run by pipeline.c after ScheduleOps and
 * after every pass in debug builds (or when TEX_VERIFY=1). Private to
 * src/lower; the declaration lives here until lower.h carries it.
 */
#ifndef TEX_LOWER_VERIFY_H
#define TEX_LOWER_VERIFY_H

#include "lower/lower.h"

/* Checks that s is a well-formed body of lw->func: every variable defined
 * before use (parameters, size variables, enclosing loop and let variables),
 * no variable defined twice on one path, integer loop bounds and indices,
 * consistent operand dtypes, stored values of the buffer's (tensor's) dtype,
 * every buffer or tensor accessed a parameter or allocated (realized) around
 * the access, runtime checks ("assert") at the top unless `after` is
 * "schedule_ops". `after` names the pass that produced s, for the message.
 * 0, or TEX_EINTERNAL recorded in lw->ctx ("tex_lower: verifier after PASS: ..."). */
int texi_verify(texi_lower *lw, tex_stmt *s, const char *after);

#endif
