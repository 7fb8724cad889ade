/*
 * Argument binding (args.c) for callers that hold a lowered function rather
 * than a kernel: the interpreter and tests.
 */
#ifndef TEX_RT_ARGS_H
#define TEX_RT_ARGS_H

#include "rt/backend.h"

/* Values of a call, checked against the function's parameters (count, kind,
 * dtype, ndim, shape against constants and shared symbolic sizes, device,
 * strides, scalar ranges) with the checks and messages of tex_kernel_call.
 * On success env[i] holds the value of vars[i] for every param var and size
 * var (n_vars of them, in params order then size_vars order). Errors:
 * TEX_EINVAL / TEX_ETYPE with a message in err naming the argument. */
typedef struct {
    tex_expr *var;
    texi_eval_value value; /* of var's dtype (sizes: .i) */
} texi_binding;
int texi_bind_args(const tex_func *f, int n, const tex_value args[], texi_binding *env, int env_cap,
                   int *n_env, char *err, size_t err_size);

#endif
