/*
 * The reference evaluator's private definitions, shared by eval.c (argument
 * checks, size binding, storage, the loops over each compute), eval_expr.c
 * (expressions compiled to a flat node array, and run) and eval_scalar.c (the
 * scalar semantics of every operator, cast, math function and reduction).
 * The scalar functions are also the interpreter's (interp/interp_expr.c): one
 * implementation, so that the oracle and the interpreter agree by construction.
 *
 * An evaluation compiles every expression it needs (shapes, extents, bodies)
 * into texi_eval_node entries of one malloc'ed array, once, before any loop
 * runs: variables become slots of an environment of values and tensor reads carry
 * the index of their storage. The loops then only write slots and walk nodes,
 * so no memory is allocated per element.
 */
#ifndef TEX_IR_EVAL_H
#define TEX_IR_EVAL_H

#include "ir/ir.h"

/* One scalar: integers (bool 0/1, u64 as its bit pattern) wrapped to their
 * dtype in i, floats rounded to their dtype in f. */
typedef union {
    int64_t i;
    double f;
} texi_eval_value;

/* ---- scalar semantics (eval_scalar.c): no state, no allocation, no messages */

/* a KIND b for a binary operator kind, ADD .. MAX or EQ .. GE, whose operands
 * both have dtype t, into *out: for arithmetic a value of dtype t (integers
 * wrapped, floats rounded, min/max NaN-propagating), for a comparison 0 or 1.
 * False, with *out unset, for an integer division or modulo by zero. */
bool texi_eval_binary(enum texi_expr_kind kind, tex_dtype t, texi_eval_value a, texi_eval_value b,
                      texi_eval_value *out);

/* Math function op with result dtype t of its n (<= 3) operands args[i], of
 * dtype arg_dtypes[i]. */
texi_eval_value texi_eval_math(enum texi_math op, tex_dtype t, int n, const tex_dtype arg_dtypes[],
                               const texi_eval_value args[]);

/* v of dtype from converted to dtype to (cast semantics). */
texi_eval_value texi_eval_convert(tex_dtype from, tex_dtype to, texi_eval_value v);

/* Reduction step: acc combined with v by op in dtype t. */
texi_eval_value texi_eval_combine(enum texi_reduce_op op, tex_dtype t, texi_eval_value acc,
                                  texi_eval_value v);

/* The identity of reduction op in dtype t. */
texi_eval_value texi_eval_identity(enum texi_reduce_op op, tex_dtype t);

/* Scalar argument a (TEX_VAL_I64 or TEX_VAL_F64) converted to dtype t as a
 * var parameter of that dtype receives it (scalar_arg.c): floats by tex_cast's
 * rules; integers must be integral and in t's range (bool: 0 or 1). 0, or
 * TEX_EINVAL with the reason ("300 is out of range for i8 [-128, 127]") in why. */
int texi_eval_scalar_arg(tex_dtype t, const tex_value *a, texi_eval_value *out, char *why,
                         size_t why_size);

/* Element i of storage of dtype t at base, and its store. */
texi_eval_value texi_eval_load(tex_dtype t, const char *base, int64_t i);
void texi_eval_store(tex_dtype t, char *base, int64_t i, texi_eval_value v);

/* SEARCH op (enum texi_search_op) over elements [lo, hi) of the integer
 * storage of dtype t at base for v, as every printer's search helper does
 * it (the caller has checked that [lo, hi) lies in the storage when
 * lo < hi): upper_bound gives a value in [lo, hi], find one in [lo, hi) or
 * -1. */
int64_t texi_eval_search(int op, tex_dtype t, const char *base, int64_t lo, int64_t hi, int64_t v);

/* A compiled expression node; children are indices into texi_eval.nodes. */
typedef struct {
    enum texi_expr_kind kind;
    tex_dtype dtype;     /* the result's dtype */
    tex_dtype arg_dtype; /* the (first) operand's dtype: compares, CAST, NOT, CALL */
    int32_t a, b, c;     /* operands; -1 when absent */
    union {
        int64_t i;           /* INT */
        double f;            /* FLOAT */
        int32_t slot;        /* VAR: index into texi_eval.env */
        enum texi_math math; /* CALL */
        struct {
            int32_t storage; /* index into texi_eval.store */
            int32_t first;   /* its n indices are args[first .. first + n) */
        } access;            /* ACCESS; SEARCH: storage and first = its op */
    } u;
} texi_eval_node;

/* The storage of one tensor during an evaluation (a listed array or a temporary). */
typedef struct {
    tex_tensor *tensor;
    char *data;       /* element 0 (byte_offset applied); NULL when empty */
    int64_t *shape;   /* evaluated extents (ndim entries) */
    int64_t *strides; /* compact row-major, in elements */
    int64_t size;     /* number of elements */
    int listed;       /* index in the caller's list, or -1 for a temporary */
    bool owned;       /* data is a temporary, freed at the end */
    uint8_t *done;    /* sampled evaluation: 1 where an element is computed (NULL: all are) */
    struct texi_eval_lazy *lazy; /* sampled evaluation: the compiled definition */
} texi_eval_storage;

/* The state of one tex_eval_reference call; every array is malloc'ed. */
typedef struct {
    tex_ctx *ctx;
    int rc;                /* first error (also recorded in ctx); 0 when none */
    const char *cur;       /* name of the tensor being computed, for messages */
    texi_eval_node *nodes; /* compiled expressions */
    int32_t n_nodes, cap_nodes;
    int32_t *args; /* ACCESS index lists */
    int32_t n_args, cap_args;
    tex_expr **vars;      /* slot -> variable */
    texi_eval_value *env; /* slot -> current value (of the variable's dtype) */
    bool *bound;          /* slot -> symbolic size with a value */
    int32_t n_vars, cap_vars;
    texi_eval_storage *store; /* every tensor involved, producers first */
    int32_t n_store;
    int64_t work;   /* elements computed plus reduction steps so far */
    char *deferred; /* a worker thread's copy (eval.c): its first error's message goes
                       here (TEXI_ERRMSG_MAX bytes), not into ctx; NULL otherwise */
} texi_eval;

/* Step 1 of an evaluation (eval.c): the tensor list and its host arrays
 * checked, messages naming call. */
int texi_eval_check_list(tex_ctx *ctx, const char *call, int n, tex_tensor *const tensors[],
                         DLTensor *const arrays[]);

/* Steps 2 to 4 of an evaluation (eval.c): plan, bind sizes, shape and place
 * the storage of tensors over arrays (already checked). With sampled, every
 * compute, listed or not, gets a zeroed temporary whose elements are computed
 * one at a time when first read (texi_eval_element), so that a few points of
 * a large graph cost only what they read. */
int texi_eval_prepare(texi_eval *st, int n, tex_tensor *const tensors[], DLTensor *const arrays[],
                      bool sampled);

/* Element off (row-major) of the compute in st->store[k] of a sampled
 * evaluation, computed from its definition first when it is not yet. */
texi_eval_value texi_eval_element(texi_eval *st, int32_t k, int64_t off);

/* Frees what an evaluation allocated (never the listed arrays). */
void texi_eval_release(texi_eval *st);

/* The sampled oracle (eval_sample.c): like tex_eval_reference over the same
 * tensors and host arrays, but instead of writing the listed computes it
 * evaluates up to `points` of their elements (the first, the last, the rest
 * drawn with seed; fewer once the evaluation's work passes max_work, but
 * always the first and the last) and compares each with what the arrays
 * hold: floats within tol relative (to max(1, |want|)), integers exactly.
 * 0 with *ok set and *checked the number of elements compared, or the error
 * of the evaluation (recorded in ctx). On a mismatch, why names the tensor,
 * the element and both values. */
int texi_eval_sample_check(tex_ctx *ctx, int n, tex_tensor *const tensors[],
                           DLTensor *const arrays[], int points, int64_t max_work, uint64_t seed,
                           double tol, bool *ok, int *checked, char *why, size_t why_size);

/* The slot of variable v, added (unbound) when new; -1 on ENOMEM. */
int32_t texi_eval_slot(texi_eval *st, tex_expr *v);

/* Compiles e into st->nodes; returns its root index, or -1 with st->rc set
 * (ENOMEM, an unbound size variable, a node the evaluator cannot run). */
int32_t texi_eval_compile(texi_eval *st, tex_expr *e);

/* The value of compiled node n. On an error (division by zero, out-of-bounds
 * read) sets st->rc, records the message and returns 0. */
texi_eval_value texi_eval_node_value(texi_eval *st, int32_t n);

/* Records an error in st (the first is kept) and returns code. */
int texi_eval_fail(texi_eval *st, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
