/*
 * Kernels and backends: what tex_build returns, and the interface each
 * backend implements (docs/architecture.md, "Backends": one vtable per backend; the registry
 * table lives in src/runtime/kernel.c; adding a backend touches no other
 * backend). It sits in src/rt, the layer between lowering and the backends,
 * because both the backends (which implement it) and the runtime (which
 * calls it) may include rt/ headers.
 *
 * A tex_kernel owns copies of everything it needs after tex_build returns
 * (its source, its signature) and never points into the context's arena, so
 * it stays valid after tex_ctx_free. The entry point of every compiled
 * function has the signature of tex_kernel_export's header (tex.h): one
 * argument per parameter in order (tensor: pointer to its element type,
 * compact row-major; size var: int64_t; any other var: its dtype's storage
 * type, f16/bf16 as their uint16_t bits, bool as uint8_t 0/1), then one
 * int64_t per size variable that is not a parameter (tex_func.size_vars
 * order); it returns int (0 = ok).
 */
#ifndef TEX_RT_BACKEND_H
#define TEX_RT_BACKEND_H

#include "rt/launch_plan.h"

#include <string.h>

#define TEXI_KERNEL_ERRMSG_MAX 2048

/* A kernel's parameter, copied out of the arena. */
typedef struct {
    int kind; /* TEX_ARG_TENSOR or TEX_ARG_VAR */
    char *name;
    tex_dtype dtype; /* tensor element type, or the var's dtype */
    bool size;       /* VAR: a size (texi_param.size): int64_t, bound from I64 only */
    int ndim;
    int64_t *dims;  /* per dimension: the constant size, -1 - (index into the call's size
                       table) for a bare size variable, or TEXI_DIM_DERIVED for a derived size
                       (n + 2, ...) that args.c checks once the sizes are bound */
    int index_role; /* enum texi_index_role: checked by index_check.c */
    bool index_ok;  /* index_bound compiled (false: uses a non-size value) */
    texi_launch_prog index_bound; /* the role's bound over the size table */
    bool sorted;                  /* INDICES the kernel searches (find): rows must increase */
    int rows_param;               /* sorted: the parameter holding the rows' indptr, or -1 */
    bool row_len_ok;              /* sorted, no rows_param: row_len compiled */
    texi_launch_prog row_len;     /* sorted, no rows_param: the entries per row */
} texi_kernel_param;

/* texi_kernel_param.dims of a derived dimension. */
#define TEXI_DIM_DERIVED INT64_MIN

/* A derived dimension: its size program over the size table. */
typedef struct {
    int param, dim;
    bool ok;               /* false: it uses something the size table lacks */
    texi_launch_prog prog; /* launch_plan.h's evaluator */
} texi_derived_dim;

typedef struct texi_backend texi_backend;

struct tex_kernel {
    const texi_backend *backend;
    char *name;   /* the function's name (a C identifier) */
    char *target; /* the target string it was built for */
    char *source; /* generated source */
    char *header; /* tex_kernel_export's header text ("cpu"/"c"), or NULL */
    int n_params;
    texi_kernel_param *params;
    int n_sizes; /* symbolic sizes: VAR params and size vars, in call order */
    char **size_names;
    int n_extra;           /* size vars that are not params: passed after the params */
    int *extra_size_index; /* per extra argument: its index in the size table */
    int n_derived;
    texi_derived_dim *derived; /* in (param, dim) order */
    int threads;               /* "cpu -threads=N"; 0 = default */
    bool strict_float;         /* "-strict-float": no contraction or other value-changing flags */
    bool callable;             /* false for "c" and "cuda -emit-only" */
    void *impl;                /* the backend's state (dlopen handle, entry, ffi cif, ...) */
    char errmsg[TEXI_KERNEL_ERRMSG_MAX]; /* last failed call */
};

/* Writes "NAME: " and the formatted message to k->errmsg (what
 * tex_kernel_errmsg returns) and returns code. */
int texi_kernel_fail(tex_kernel *k, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes scalar argument v of parameter p (NULL: an extra size) into slot
 * (at least 8 bytes) as the entry point's C type: int64_t for a size, the
 * storage type of p's dtype otherwise. */
static inline void texi_kernel_scalar_store(const texi_kernel_param *p, texi_eval_value v,
                                            void *slot)
{
    if (!p || p->size)
        memcpy(slot, &v.i, sizeof v.i);
    else
        texi_eval_store(p->dtype, slot, 0, v);
}

/* Checks the index arrays of sparse formats among args (index_check.c):
 * TEX_EINVAL naming the argument, the position and the values. sizes: the
 * bound size table. */
int texi_kernel_check_index_args(tex_kernel *k, const tex_value args[], const int64_t *sizes);

/* Copies f's signature into k (params, size table, derived dimensions);
 * false when out of memory (texi_kernel_fini frees a partial copy). */
bool texi_kernel_signature(tex_kernel *k, const tex_func *f);

/* Releases k->impl (through its backend) and everything k owns, but not k. */
void texi_kernel_fini(tex_kernel *k);

/* Checks args (k->n_params of them, count already checked) against k's
 * signature and binds the size table sizes[k->n_sizes] (bound[]: all
 * false on entry). 0, or an error written to k->errmsg. */
int texi_kernel_check_args(tex_kernel *k, const tex_value args[], texi_eval_value *sizes,
                           bool *bound);

/* A backend: one per target family, registered in kernel.c's table. */
struct texi_backend {
    const char *name; /* "cpu", "c", "cuda" */
    /* 1 when usable here (compiler found, driver loaded). */
    int (*available)(const char *target);
    /* Fills k->source and k->impl from f (k's signature fields are already
     * set). 0 or an error recorded in f->ctx. */
    int (*build)(tex_kernel *k, const tex_func *f);
    /* Runs with checked, flattened arguments: tensor_ptrs has one entry per
     * tensor parameter in order, byte_offset already applied; scalars holds
     * the values of the VAR parameters in order (converted to their dtypes,
     * sizes in .i), then the extra sizes (.i). The backend interleaves them in
     * parameter order for the entry point (texi_kernel_scalar_store). 0 or an
     * error written to k->errmsg. */
    int (*call)(tex_kernel *k, void *const *tensor_ptrs, const texi_eval_value *scalars);
    /* Releases k->impl. */
    void (*free)(tex_kernel *k);
    /* Tensor arguments live in CUDA memory of device 0 (else: host memory). */
    bool device_memory;
};

#endif
