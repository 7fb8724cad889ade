/*
 * The interpreter of lowered functions, its entry point texi_interp_run and
 * what interp.c (statements, storage, thread lock-step), interp_expr.c
 * (scalar expressions, element access) and interp_intrin.c share. It sits
 * above src/rt: arguments are checked by rt/args.c like a kernel's.
 *
 * Values are the reference evaluator's texi_eval_value (ir/eval.h: integers
 * wrapped to their dtype, floats rounded to theirs), and every scalar
 * operation (operators, math, conversions, element loads/stores) is its
 * function from ir/eval_scalar.c. Storage keeps elements in their native
 * layout (f16/bf16 as 16-bit patterns), like a kernel's arrays.
 *
 * A frame is one thread's environment: a stack of variable bindings and a
 * stack of storage bindings (innermost last, searched from the top).
 */
#ifndef TEX_INTERP_INTERP_H
#define TEX_INTERP_INTERP_H

#include "ir/eval.h"
#include "rt/args.h"

/* Executes f on host arrays (serially; thread-bound loops of a block run in
 * lock-step between barriers, so GPU-style code with shared memory works).
 * Accepts both AST stages of lower.h. 0, or an error code with a message in
 * err. */
int texi_interp_run(const tex_func *f, int n, const tex_value args[], char *err, size_t err_size);

/* Memory of a parameter or temporary. */
typedef struct {
    const char *name; /* for messages */
    tex_dtype dtype;
    char *data;       /* native elements */
    int64_t size;     /* elements */
    int ndim;         /* tensor-level view: region dimensions (0 for flat-only) */
    int64_t *mins;    /* per dimension: first global coordinate of the region */
    int64_t *extents; /* per dimension: size of the region */
    bool owned;       /* data, mins and extents malloc'ed by the interpreter */
} texi_storage;

/* A name under which storage is visible: a tensor (REALIZE, parameters) or a
 * flat buffer (ALLOCATE, parameters), found also through its data variable. */
typedef struct {
    const tex_tensor *tensor; /* or NULL */
    const texi_buffer *buf;   /* or NULL */
    texi_storage *st;
} texi_storage_bind;

typedef struct {
    const tex_expr *var;
    texi_eval_value v;
    int lane; /* which lane of a vector variable (one binding per lane) */
} texi_var_bind;

typedef struct {
    texi_var_bind *vars;
    int n_vars, cap_vars;
    texi_storage_bind *bufs;
    int n_bufs, cap_bufs;
} texi_frame;

/* The run's state: the first error and its message. */
typedef struct {
    const tex_func *f;
    char *err;
    size_t err_size;
    int code; /* 0 until the first error */
    int lane; /* the lane a vector expression is evaluated at (vector statements) */
} texi_interp;

/* Records the first error ("tex interpreter: " + message) and returns code. */
int texi_interp_fail(texi_interp *ip, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Pushes a binding of var (value wrapped/rounded to var's dtype) for lane
 * ip->lane. 0 or ENOMEM. */
int texi_interp_push_var(texi_interp *ip, texi_frame *fr, const tex_expr *var, texi_eval_value v);

/* Evaluates e in fr into *out. 0 or an error (unbound variable, out-of-bounds
 * read, integer division by zero, node that cannot occur in a lowered body). */
int texi_interp_expr(texi_interp *ip, texi_frame *fr, const tex_expr *e, texi_eval_value *out);

/* e evaluated as an integer of any integer/bool dtype, as int64. */
int texi_interp_int(texi_interp *ip, texi_frame *fr, const tex_expr *e, int64_t *out);
/* Whether lane ip->lane of a predicated access is on (mask NULL: always). */
int texi_interp_mask(texi_interp *ip, texi_frame *fr, const tex_expr *mask, bool *on);

/* The innermost storage bound to tensor t / buffer b in fr, or NULL. */
texi_storage *texi_interp_find_tensor(texi_frame *fr, const tex_tensor *t);
texi_storage *texi_interp_find_buffer(texi_frame *fr, const texi_buffer *b);

/* The storage of buffer b in fr (*st) and the element index evaluated from
 * index (*i); an error naming the buffer when it is not allocated or the
 * index lies outside it, for a store or a load. */
int texi_interp_buffer_index(texi_interp *ip, texi_frame *fr, const texi_buffer *b,
                             const tex_expr *index, bool store, texi_storage **st, int64_t *i);

/* The flat element index of tensor coordinates idx[0..n) in st (translated by
 * the region's mins, row-major); an error naming the tensor when a coordinate
 * lies outside the region. `what` is "read" or "write". */
int texi_interp_tensor_index(texi_interp *ip, const texi_storage *st, int n, const int64_t idx[],
                             const char *what, int64_t *flat);

/* Runs an INTRIN statement by its description's semantics (interp_intrin.c). */
int texi_interp_intrin(texi_interp *ip, texi_frame *fr, const tex_stmt *s);

#endif
