/*
 * The IR's private definitions: context, expression and statement nodes,
 * axes, tensors, buffers, and the internal functions of src/ir.
 *
 * Invariants:
 *   - Every node lives in its context's arena and is immutable once built;
 *     passes build new nodes and share unchanged subtrees. Pointers are
 *     non-const by convention only (so public and internal handles are the
 *     same type); nothing writes to a node after its constructor returns.
 *   - Variables are compared by pointer identity; names are for printing.
 *   - A builder never returns a node whose operands are from another context.
 *
 * Errors: texi_error records the first error of the context and returns its
 * code; texi_alloc records TEX_ENOMEM. Internal code propagates with TEXI_TRY.
 */
#ifndef TEX_IR_IR_H
#define TEX_IR_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "tex/tex.h"
#include "util/arena.h"
#include "util/strbuf.h"

typedef struct tex_stmt tex_stmt;
typedef struct texi_op texi_op;
typedef struct texi_buffer texi_buffer;

#define TEX_DTYPE_COUNT ((int)TEX_F64 + 1)
#define TEXI_ERRMSG_MAX 4096

struct tex_ctx {
    texi_arena arena;             /* owns every IR object of this context */
    int errcode;                  /* first unhandled error, 0 when none */
    char errmsg[TEXI_ERRMSG_MAX]; /* its message */
    char warnmsg[512];            /* the last warning (tex_warnmsg), "" when none */
    uint32_t next_id;             /* ids for variables and tensors (stable printing, hashing) */
};

/* Propagate a negative status code. */
#define TEXI_TRY(call)                                                                             \
    do {                                                                                           \
        int texi_try_rc_ = (call);                                                                 \
        if (texi_try_rc_ < 0)                                                                      \
            return texi_try_rc_;                                                                   \
    } while (0)

/* Forgets an error the library recorded itself and handled (the warning
 * stays, unlike tex_clear_error). */
void texi_clear_error(tex_ctx *ctx);

/* Records a warning: something a call that succeeds skipped (tex_warnmsg). */
void texi_warn(tex_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records the error (if none is recorded yet) and returns code. */
int texi_error(tex_ctx *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* texi_error with the arguments in a va_list. */
int texi_verror(tex_ctx *ctx, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Zeroed arena memory; records TEX_ENOMEM (naming `what`) and returns NULL on failure. */
void *texi_alloc(tex_ctx *ctx, size_t size, const char *what);
char *texi_strdup(tex_ctx *ctx, const char *s);

/* Room for one more item in the arena array items of n items of elem bytes
 * and capacity *cap: items itself while there is room, else a copy with
 * twice the capacity (16 at first; *cap updated, the old block stays in the
 * arena). NULL on ENOMEM (recorded, naming `what`), *cap unchanged. */
void *texi_grow(tex_ctx *ctx, void *items, int n, int *cap, size_t elem, const char *what);

/* Records "CALL: operand NAME is NULL (an earlier call failed: ...)" in ctx. */
void texi_error_null_operand(tex_ctx *ctx, const char *call, const char *operand);

/* ------------------------------------------------------------------ dtypes */

bool texi_dtype_is_float(tex_dtype t);  /* f16, bf16, f32, f64 */
bool texi_dtype_is_int(tex_dtype t);    /* signed or unsigned integer, not bool */
bool texi_dtype_is_signed(tex_dtype t); /* signed integers and floats */
int texi_dtype_bits(tex_dtype t);
/* The element type of a vector of dtype t's values: f16/bf16 lanes compute
 * in f32, bool lanes are i32, others are t. */
tex_dtype texi_dtype_lane(tex_dtype t);
bool texi_dtype_valid(int t);

/* The type both operands of a binary operator are converted to (README rules). */
tex_dtype texi_dtype_promote(tex_dtype a, tex_dtype b);

/* v converted to t as a constant would be: float to integer truncates toward
 * zero, saturating out-of-range values (NaN gives 0); then wraps to t's width. */
int64_t texi_float_to_int(tex_dtype t, double v);

/* v wrapped to the width and signedness of integer type t (bool: 0 or 1);
 * v itself for 64-bit and float types. */
int64_t texi_wrap_int(tex_dtype t, uint64_t v);

/* v rounded to the precision of float type t (f16/bf16 round to nearest even);
 * v itself for f64 and non-float types. */
double texi_round_to_dtype(tex_dtype t, double v);

/* The C spelling of the element type ("float", "int32_t", f16/bf16: "uint16_t"). */
const char *texi_dtype_ctype(tex_dtype t);

/* ----------------------------------------------------------------- expressions */

enum texi_expr_kind {
#define X(name, spelling, member) TEXI_EXPR_##name,
#include "ir/expr_kinds.def"
#undef X
    TEXI_EXPR_KIND_COUNT
};

/* The case labels of every kind that uses u.bin (ADD .. OR), for switches
 * that treat binary operators alike: `TEXI_CASE_BINARY: ...`. */
#define TEXI_CASE_BINARY                                                                           \
    case TEXI_EXPR_ADD:                                                                            \
    case TEXI_EXPR_SUB:                                                                            \
    case TEXI_EXPR_MUL:                                                                            \
    case TEXI_EXPR_DIV:                                                                            \
    case TEXI_EXPR_FLOORDIV:                                                                       \
    case TEXI_EXPR_FLOORMOD:                                                                       \
    case TEXI_EXPR_MIN:                                                                            \
    case TEXI_EXPR_MAX:                                                                            \
    case TEXI_EXPR_EQ:                                                                             \
    case TEXI_EXPR_NE:                                                                             \
    case TEXI_EXPR_LT:                                                                             \
    case TEXI_EXPR_LE:                                                                             \
    case TEXI_EXPR_GT:                                                                             \
    case TEXI_EXPR_GE:                                                                             \
    case TEXI_EXPR_AND:                                                                            \
    case TEXI_EXPR_OR

enum texi_math {
#define X(name, spelling, arity, c_spelling) TEXI_MATH_##name,
#include "ir/math_funcs.def"
#undef X
    TEXI_MATH_COUNT
};

enum texi_reduce_op {
    TEXI_REDUCE_SUM,  /* identity 0 */
    TEXI_REDUCE_PROD, /* identity 1 */
    TEXI_REDUCE_MAX,  /* identity -inf / type minimum */
    TEXI_REDUCE_MIN,  /* identity +inf / type maximum */
    TEXI_REDUCE_COUNT
};

/* The binary searches of SEARCH over a[lo .. hi), which must be sorted
 * (non-decreasing); both read only a[lo .. hi) and give the node's dtype. */
enum texi_search_op {
    TEXI_SEARCH_UPPER, /* the first k in [lo, hi) with a[k] > value, hi when none */
    TEXI_SEARCH_FIND,  /* a k in [lo, hi) with a[k] == value, -1 when none */
    TEXI_SEARCH_COUNT
};

struct tex_expr {
    enum texi_expr_kind kind;
    tex_dtype dtype; /* of each lane */
    int lanes;       /* 1: a scalar (VREDUCE too); > 1: a vector (RAMP, BROADCAST, their users) */
    tex_ctx *ctx;
    union {
        int64_t i; /* INT: the value (u64 as bit pattern) */
        double f;  /* FLOAT */
        struct {
            const char *name;
            uint32_t id;     /* unique in the context */
            tex_iter *iter;  /* the axis this variable stands for, or NULL */
            const void *tag; /* a sparse axis it stands for (src/sparse), or NULL */
        } var;               /* VAR */
        struct {
            tex_expr *a, *b;
        } bin; /* ADD .. OR */
        struct {
            tex_expr *a;
        } un; /* NOT, CAST, BROADCAST */
        struct {
            tex_expr *base, *stride; /* scalar integers */
        } ramp;                      /* RAMP: base + i*stride in lane i */
        struct {
            tex_expr *cond, *t, *f;
        } sel; /* SELECT */
        struct {
            enum texi_math op;
            int n_args;
            tex_expr *args[3];
        } call; /* CALL */
        struct {
            tex_tensor *tensor;
            int n_idx;
            tex_expr **idx;
        } access; /* ACCESS */
        struct {
            texi_buffer *buf;
            tex_expr *index; /* in elements */
            tex_expr *mask;  /* NULL, or bool of index's lanes: lanes not read (value 0) */
        } load;              /* LOAD */
        struct {
            enum texi_reduce_op op;
            tex_expr *a; /* a vector; the node is a scalar of its lane dtype */
        } vred;          /* VREDUCE: a's lanes combined by op, lane 0 first */
        struct {
            enum texi_reduce_op op;
            tex_expr *body;
            int n_axes;
            tex_iter **axes;
            tex_expr *cond; /* tex_reduce_where predicate, or NULL */
        } red;              /* REDUCE */
        struct {
            enum texi_search_op op;
            tex_tensor *tensor;        /* the array before flattening: a 1-D integer placeholder */
            texi_buffer *buf;          /* the array after flattening (tensor NULL) */
            tex_expr *lo, *hi, *value; /* integers of the node's dtype */
        } search;                      /* SEARCH */
    } u;
};

extern const char *const texi_expr_kind_names[TEXI_EXPR_KIND_COUNT];
extern const char *const texi_math_names[TEXI_MATH_COUNT];
extern const int texi_math_arity[TEXI_MATH_COUNT];
extern const char *const texi_reduce_names[TEXI_REDUCE_COUNT];
/* The operator word of a horizontal reduction: "add", "mul", "max", "min". */
extern const char *const texi_vreduce_names[TEXI_REDUCE_COUNT];
/* The printer's name of a search: "upper_bound", "find". */
extern const char *const texi_search_names[TEXI_SEARCH_COUNT];

/* Raw node constructors (expr.c). They check nothing beyond allocation: the
 * operands must already have the dtype the node needs. Passes use them; the
 * public builders validate and promote, then call them. */
tex_expr *texi_int_imm(tex_ctx *ctx, tex_dtype t, int64_t v);
tex_expr *texi_float_imm(tex_ctx *ctx, tex_dtype t, double v);
tex_expr *texi_var_new(tex_ctx *ctx, const char *name, tex_dtype t);
/* A reduce axis whose extent may read axes and placeholder elements (tensor.c). */
tex_iter *texi_ragged_axis(tex_ctx *ctx, const char *name, tex_expr *extent);
bool texi_iter_is_ragged(const tex_iter *iv);
tex_expr *texi_binary(enum texi_expr_kind kind, tex_expr *a, tex_expr *b);
tex_expr *texi_unary(enum texi_expr_kind kind, tex_dtype t, tex_expr *a);
tex_expr *texi_select_new(tex_expr *c, tex_expr *t, tex_expr *f);
tex_expr *texi_call_new(enum texi_math op, tex_dtype t, int n, tex_expr *const args[]);
tex_expr *texi_access_new(tex_tensor *t, int n, tex_expr *const idx[]);
tex_expr *texi_load_new(texi_buffer *buf, tex_expr *index);
/* A predicated vector load (CPU tail, docs/passes.md): lane k reads
 * buf[index lane k] only where mask lane k is true, else is 0 and touches
 * no memory. mask: bool, index's lanes; NULL makes it texi_load_new. */
tex_expr *texi_masked_load_new(texi_buffer *buf, tex_expr *index, tex_expr *mask);
/* Load e (LOAD) at another index, keeping its mask. */
tex_expr *texi_load_at(const tex_expr *e, tex_expr *index);
/* SEARCH op over array t (before flattening) or buf (after; t NULL) in
 * [lo, hi) for value; lo, hi and value have one integer dtype, the node's,
 * and the node has the lanes of the widest. */
tex_expr *texi_search_new(enum texi_search_op op, tex_tensor *t, texi_buffer *buf, tex_expr *lo,
                          tex_expr *hi, tex_expr *value);
tex_expr *texi_reduce_new(enum texi_reduce_op op, tex_expr *body, int n, tex_iter *const axes[],
                          tex_expr *cond);
/* Vectors (lanes > 1): composite nodes take the lanes of their vector
 * operands, which must agree; scalar operands of a vector node are
 * BROADCAST first (the simd pass builds them, docs/passes.md). */
tex_expr *texi_ramp_new(tex_expr *base, tex_expr *stride, int lanes);
tex_expr *texi_broadcast_new(tex_expr *value, int lanes);
/* The scalar op(a[0], a[1], ..., a[lanes - 1]) of the vector a (lanes > 1),
 * combined with the reduction's scalar semantics: f32 and f64 lanes (a
 * power of two up to 64) by a rotation tree (each lane j combined with lane
 * j + h mod lanes for h = lanes / 2, ..., 1; lane 0 is the result), other
 * types in lane order. */
tex_expr *texi_vreduce_new(enum texi_reduce_op op, tex_expr *a);

/* e converted to t: constants fold to a constant of t, other nodes get a CAST
 * (none when e already has dtype t). NULL on ENOMEM. */
tex_expr *texi_convert(tex_expr *e, tex_dtype t);

/* Kind predicates. */
bool texi_expr_is_binary(const tex_expr *e);                    /* uses u.bin */
bool texi_expr_is_compare(const tex_expr *e);                   /* EQ .. GE */
bool texi_expr_is_const(const tex_expr *e);                     /* INT or FLOAT */
bool texi_expr_is_int_const(const tex_expr *e, int64_t *value); /* INT; value may be NULL */

/* The reduction's identity element of type t. */
tex_expr *texi_reduce_identity(tex_ctx *ctx, enum texi_reduce_op op, tex_dtype t);

/* --------------------------------------------------------- axes and tensors */

enum texi_iter_kind {
    TEXI_ITER_DATA,  /* data-parallel axis */
    TEXI_ITER_REDUCE /* reduction axis */
};

struct tex_iter {
    tex_ctx *ctx;
    const char *name;
    enum texi_iter_kind kind;
    tex_expr *var;    /* the VAR node standing for this axis (u.var.iter == this) */
    tex_expr *min;    /* always 0 for user axes; relations built by schedules may shift it */
    tex_expr *extent; /* integer expression */
    bool ragged;      /* extent reads enclosing axes or tensor elements (texi_ragged_axis) */
};

enum texi_op_kind {
    TEXI_OP_PLACEHOLDER, /* an input */
    TEXI_OP_COMPUTE      /* body over axes (and reduce axes) */
};

struct texi_op {
    enum texi_op_kind kind;
    int n_axes;
    tex_iter **axes; /* COMPUTE: data-parallel axes, in order */
    int n_raxes;
    tex_iter **raxes; /* COMPUTE: reduce axes, in order of first use */
    tex_expr *body;   /* COMPUTE: the element, maybe a REDUCE at the top */
    int n_inputs;
    tex_tensor **inputs;      /* COMPUTE: tensors read by body, in order of first use */
    tex_tensor *scatter_rows; /* COMPUTE, scatter stores: i32 [extent of axis 0]; else NULL */
    tex_tensor *scatter_into; /* with scatter_rows: point (r, k..) is stored at
                                 scatter_into[scatter_rows[r], k..] (texi_scatter_group_new) */
    tex_iter **leaf_order;    /* COMPUTE: the stage's first loop order (axes and raxes
                                 interleaved, src/sparse's tex_sp_reorder), or NULL: axes, then
                                 raxes */
};

/* What an integer placeholder of a sparse format holds (src/sparse); a
 * kernel checks such arguments at call time (rt/index_check.c). */
enum texi_index_role {
    TEXI_INDEX_NONE,    /* ordinary data */
    TEXI_INDEX_INDPTR,  /* starts at 0, never decreases, ends at index_bound */
    TEXI_INDEX_INDICES, /* every value in [0, index_bound) */
};

struct tex_tensor {
    tex_ctx *ctx;
    const char *name;
    uint32_t id; /* unique in the context */
    tex_dtype dtype;
    int ndim;
    tex_expr **shape;                /* integer expressions */
    texi_op *op;                     /* what produces it */
    enum texi_index_role index_role; /* placeholders of sparse formats */
    tex_expr *index_bound;           /* the role's bound (a size expression) */
    tex_tensor *index_rows;          /* INDICES of a variable axis: its indptr, whose rows a
                                        kernel that searches the indices checks sorted */
    tex_expr *index_row_len;         /* INDICES of a fixed axis: its entries per row */
};

/* A compute tensor over already validated parts (compute.c checks them). */
tex_tensor *texi_compute_tensor_new(tex_ctx *ctx, const char *name, int ndim,
                                    tex_iter *const axes[], tex_expr *body, int n_inputs,
                                    tex_tensor *const inputs[]);

/* A scatter group: n compute tensors whose points go to one storage through
 * row ids. parts[i] is a copy of srcs[i] (a compute, reduce or not) whose
 * point (r, k..) is stored at G[rows[i][r], k..], G being parts[n - 1]: the
 * group's tensor, of shape (extent0, srcs[n - 1]'s other extents), which
 * lists the other parts among its inputs so that they are computed (and
 * scheduled) before it. Each part lists its rows among its inputs. The row
 * ids of all parts together must be distinct (each row of G written once);
 * rows a part does not list keep their contents. Returns 0 or TEX_ENOMEM. */
int texi_scatter_group_new(tex_ctx *ctx, int n, tex_tensor *const srcs[], tex_tensor *const rows[],
                           tex_expr *extent0, tex_tensor *parts[]);

/* The tensor whose storage receives t's points: t's scatter group's tensor
 * for a scatter part, else t itself. */
tex_tensor *texi_scatter_target(tex_tensor *t);

/* All tensors `outputs` depend on (themselves included), producers before
 * consumers, each once. Arena array; *n receives the count. NULL on ENOMEM. */
tex_tensor **texi_tensor_post_order(tex_ctx *ctx, int n_outputs, tex_tensor *const outputs[],
                                    int *n);

/* Every VAR without an axis (symbolic sizes and parameters) in e, appended to
 * vars[*n] (capacity cap) if not already there. Returns 0, or -1 when more
 * than cap variables would be needed. */
int texi_collect_free_vars(tex_expr *e, tex_expr **vars, int *n, int cap);

/* ------------------------------------------------------------------- buffers */

enum texi_scope {
    TEXI_SCOPE_GLOBAL, /* same order as tex_scope */
    TEXI_SCOPE_SHARED,
    TEXI_SCOPE_LOCAL
};

struct texi_buffer {
    const char *name;
    tex_dtype dtype;
    enum texi_scope scope;
    int ndim;
    tex_expr **shape;   /* extents per dimension */
    tex_expr **strides; /* in elements; NULL means compact row-major */
    tex_expr *data;     /* VAR (i64 handle) naming the storage */
};

texi_buffer *texi_buffer_new(tex_ctx *ctx, const char *name, tex_dtype t, enum texi_scope scope,
                             int ndim, tex_expr *const shape[]);

/* What identifies a buffer's storage: its data variable (copies of a buffer
 * made by passes share it), or the buffer itself when it has none. */
const void *texi_buffer_key(const texi_buffer *b);

/* True when s contains a STORE to the storage with key texi_buffer_key(b). */
bool texi_stmt_stores_to(const tex_stmt *s, const texi_buffer *b);

/* Whether s (with the statements nested in it) or expression e uses the
 * storage of b: a LOAD or STORE of it, an intrinsic call's argument, or its
 * data variable named in an expression (an ATTR). */
bool texi_stmt_uses_buffer(const tex_stmt *s, const texi_buffer *b);
bool texi_expr_uses_buffer(tex_expr *e, const texi_buffer *b);
/* Whether s reads the storage of b: texi_stmt_uses_buffer but for the
 * STOREs to it (their indices and values still count). */
bool texi_stmt_reads_buffer(const tex_stmt *s, const texi_buffer *b);

/* ---------------------------------------------------------------- statements */

/* ATTR keys, named (attr_keys.def); TEXI_ATTR_OTHER for any other key. */
enum texi_attr_key {
#define X(NAME, spelling) TEXI_ATTR_##NAME,
#include "ir/attr_keys.def"
#undef X
    TEXI_ATTR_OTHER
};

/* The value of ATTR "vectorize_failed" (vector_reasons.def). */
enum texi_vector_reason {
#define X(NAME, text) TEXI_VECTOR_##NAME,
#include "ir/vector_reasons.def"
#undef X
    TEXI_VECTOR_REASON_COUNT
};

enum texi_stmt_kind {
#define X(name, spelling, member) TEXI_STMT_##name,
#include "ir/stmt_kinds.def"
#undef X
    TEXI_STMT_KIND_COUNT
};

/* The functions of a tensor intrinsic (docs/api.md, rule 10). */
enum texi_intrin_fn {
    TEXI_INTRIN_BODY,   /* the whole reduction (or a non-reduction) */
    TEXI_INTRIN_RESET,  /* the output tile set to the reduction's identity */
    TEXI_INTRIN_UPDATE, /* one split of the reduction accumulated into the output tile */
    TEXI_INTRIN_FN_COUNT
};

/* A tensor intrinsic (tex_intrin_extern / tex_intrin_builtin). */
struct tex_intrin {
    tex_ctx *ctx;
    const char *name;
    tex_tensor *desc; /* the compute it implements */
    int n_inputs;
    tex_tensor **inputs;                  /* desc's inputs in order of first use */
    const char *c_source;                 /* source defining the functions (CPU), or NULL */
    const char *fn[TEXI_INTRIN_FN_COUNT]; /* function names; NULL = absent */
    const char *builtin;                  /* the built-in's name, or NULL for a user intrinsic */
    const char *host_source; /* a CUDA built-in's C for the CPU backend (gpu_to_cpu), or NULL */
};

/* One tile argument of an INTRIN statement, per tensor of the intrinsic's
 * desc (inputs in order of first use, then the output; RESET: the output
 * only). Before flattening it names a tensor and the tile's first element;
 * flatten turns it into a buffer, a flat offset and strides. */
typedef struct {
    int ndim;           /* dimensions of the desc tensor */
    tex_tensor *tensor; /* before flattening, else NULL */
    int tensor_ndim;
    tex_expr **mins;    /* before: the tile's first element, per tensor dimension */
    int *dim_map;       /* before: per desc dimension, the tensor dimension it runs along */
    texi_buffer *buf;   /* after flattening, else NULL */
    tex_expr *offset;   /* after: the tile's first element, in elements */
    tex_expr **strides; /* after: per desc dimension, the stride in elements */
} texi_intrin_arg;

enum texi_for_kind {
    TEXI_FOR_SERIAL,
    TEXI_FOR_PARALLEL, /* CPU threads */
    TEXI_FOR_VECTORIZED,
    TEXI_FOR_UNROLLED,
    TEXI_FOR_THREAD /* bound to a GPU thread/block index (u.loop.thread_tag) */
};

struct tex_stmt {
    enum texi_stmt_kind kind;
    union {
        struct {
            tex_expr *var; /* VAR */
            tex_expr *min, *extent;
            enum texi_for_kind for_kind;
            int thread_tag; /* a tex_thread_tag when for_kind is TEXI_FOR_THREAD, else -1 */
            tex_stmt *body;
        } loop; /* FOR */
        struct {
            tex_tensor *tensor;
            int n_idx;
            tex_expr **idx;
            tex_expr *value;
        } provide; /* PROVIDE */
        struct {
            tex_tensor *tensor;
            int ndim;
            tex_expr **mins;    /* per dimension: first index of the region */
            tex_expr **extents; /* per dimension: size of the region */
            enum texi_scope scope;
            tex_stmt *body;
        } realize; /* REALIZE */
        struct {
            texi_buffer *buf;
            tex_expr *index;
            tex_expr *value;
            tex_expr *mask; /* NULL, or bool of index's lanes: lanes not written */
        } store;            /* STORE */
        struct {
            texi_buffer *buf; /* size = product of buf->shape, scope = buf->scope */
            tex_stmt *body;
        } alloc; /* ALLOCATE */
        struct {
            tex_expr *cond;
            tex_stmt *then_s;
            tex_stmt *else_s; /* may be NULL */
        } ifs;                /* IF */
        struct {
            tex_expr *var;
            tex_expr *value;
            tex_stmt *body;
        } let; /* LET */
        struct {
            int n;
            tex_stmt **items;
        } seq; /* SEQ */
        struct {
            tex_expr *value;
        } eval; /* EVALUATE */
        struct {
            enum texi_scope scope; /* SHARED: block-wide barrier */
        } barrier;                 /* BARRIER */
        struct {
            const char *key;
            enum texi_attr_key id; /* key's entry in attr_keys.def */
            tex_expr *value;       /* may be NULL */
            tex_stmt *body;
        } attr; /* ATTR */
        struct {
            tex_intrin *intrin;
            enum texi_intrin_fn fn;
            int n_args;
            texi_intrin_arg *args;
        } intrin; /* INTRIN */
    } u;
};

extern const char *const texi_stmt_kind_names[TEXI_STMT_KIND_COUNT];

/* Statement constructors (stmt.c); NULL on ENOMEM (recorded in ctx). */
tex_stmt *texi_for_new(tex_ctx *ctx, tex_expr *var, tex_expr *min, tex_expr *extent,
                       enum texi_for_kind kind, int thread_tag, tex_stmt *body);
tex_stmt *texi_provide_new(tex_ctx *ctx, tex_tensor *t, int n, tex_expr *const idx[],
                           tex_expr *value);
tex_stmt *texi_realize_new(tex_ctx *ctx, tex_tensor *t, int ndim, tex_expr *const mins[],
                           tex_expr *const extents[], enum texi_scope scope, tex_stmt *body);
tex_stmt *texi_store_new(tex_ctx *ctx, texi_buffer *buf, tex_expr *index, tex_expr *value);
/* A predicated vector store: lanes whose mask lane is false write nothing;
 * mask NULL makes it texi_store_new. */
tex_stmt *texi_masked_store_new(tex_ctx *ctx, texi_buffer *buf, tex_expr *index, tex_expr *value,
                                tex_expr *mask);
/* Store s (STORE) with another index and value, keeping its mask. */
tex_stmt *texi_store_at(tex_ctx *ctx, const tex_stmt *s, tex_expr *index, tex_expr *value);
tex_stmt *texi_allocate_new(tex_ctx *ctx, texi_buffer *buf, tex_stmt *body);
tex_stmt *texi_if_new(tex_ctx *ctx, tex_expr *cond, tex_stmt *then_s, tex_stmt *else_s);
tex_stmt *texi_let_new(tex_ctx *ctx, tex_expr *var, tex_expr *value, tex_stmt *body);
tex_stmt *texi_seq_new(tex_ctx *ctx, int n, tex_stmt *const items[]); /* flattens nested SEQs */
tex_stmt *texi_evaluate_new(tex_ctx *ctx, tex_expr *value);
tex_stmt *texi_barrier_new(tex_ctx *ctx, enum texi_scope scope);
tex_stmt *texi_attr_new(tex_ctx *ctx, const char *key, tex_expr *value, tex_stmt *body);
/* An ATTR with a named key; texi_attr_is: s is an ATTR with that key. */
tex_stmt *texi_attr_named(tex_ctx *ctx, enum texi_attr_key key, tex_expr *value, tex_stmt *body);
bool texi_attr_is(const tex_stmt *s, enum texi_attr_key key);
/* s is a cache hint: ATTR "prefetch" or "prefetch_write" (tex_prefetch). */
bool texi_is_prefetch(const tex_stmt *s);
/* ATTR "vectorize_failed" with reason `why` (its value) around body. */
tex_stmt *texi_attr_vector_failed(tex_ctx *ctx, enum texi_vector_reason why, tex_stmt *body);
/* The reason's text when s is ATTR "vectorize_failed", else NULL. */
const char *texi_vector_reason_text(const tex_stmt *s);
/* Copies args (and their arrays). */
tex_stmt *texi_intrin_new(tex_ctx *ctx, tex_intrin *intrin, enum texi_intrin_fn fn, int n_args,
                          const texi_intrin_arg args[]);

/* ------------------------------------------------------ traversal (visit.c) */

/* Expression rewriting: `pre` is called on every node before its children;
 * returning non-NULL replaces the node (children are not visited). Otherwise
 * children are rewritten and the node rebuilt only if one changed. NULL result
 * with ctx error set means failure. */
typedef tex_expr *(*texi_expr_rewrite_fn)(tex_expr *e, void *ud);
tex_expr *texi_expr_mutate(tex_expr *e, texi_expr_rewrite_fn pre, void *ud);

/* Statement rewriting: stmt_pre as above for statements; every expression met
 * (loop bounds, values, indices, conditions) goes through texi_expr_mutate with
 * expr_pre (may be NULL). Rebuilds only the changed spine. */
typedef tex_stmt *(*texi_stmt_rewrite_fn)(tex_stmt *s, void *ud);
tex_stmt *texi_stmt_mutate(tex_ctx *ctx, tex_stmt *s, texi_stmt_rewrite_fn stmt_pre,
                           texi_expr_rewrite_fn expr_pre, void *ud);

/* s with every use of the variable var replaced by value (through
 * texi_stmt_mutate; NULL on failure, recorded in ctx). */
tex_stmt *texi_stmt_substitute(tex_ctx *ctx, tex_stmt *s, tex_expr *var, tex_expr *value);

/* Loop rewriting, innermost loops first: each FOR of s is replaced by
 * fn(ctx, loop, body, ud), where body is the loop's body with its own loops
 * already rewritten (loop->u.loop.body itself when none changed). fn
 * returns NULL on failure (recorded in ctx); so does texi_stmt_map_loops,
 * which otherwise rebuilds only the changed spine. */
typedef tex_stmt *(*texi_loop_rewrite_fn)(tex_ctx *ctx, tex_stmt *loop, tex_stmt *body, void *ud);
tex_stmt *texi_stmt_map_loops(tex_ctx *ctx, tex_stmt *s, texi_loop_rewrite_fn fn, void *ud);

/* Read-only walk: fn(e, ud) on every node, parents first; returning false stops
 * descent into that node's children. (Non-const like every IR pointer, so a
 * walk can collect nodes to rebuild with.) */
typedef bool (*texi_expr_visit_fn)(tex_expr *e, void *ud);
void texi_expr_visit(tex_expr *e, texi_expr_visit_fn fn, void *ud);

/* The body of a FOR, REALIZE, ALLOCATE, LET or ATTR; NULL for other kinds. */
tex_stmt *texi_stmt_body(const tex_stmt *s);

/* s (one of the kinds with a body) with its body replaced: s itself when body
 * is its body, NULL when body is NULL (an earlier failure) or on ENOMEM. */
tex_stmt *texi_stmt_with_body(tex_ctx *ctx, tex_stmt *s, tex_stmt *body);

/* Read-only walk of the expressions of s itself, not of the statements nested
 * in it: texi_expr_visit(e, fn, ud) on each loop bound, index, value,
 * condition, REALIZE bound and intrinsic tile origin, stride and offset. */
void texi_stmt_visit_exprs(const tex_stmt *s, texi_expr_visit_fn fn, void *ud);

/* Read-only statement walk: fn(s, ud) on s and the statements nested in it
 * (loop and LET bodies, branches, sequence items, ALLOCATE / REALIZE / ATTR
 * bodies), parents first, in program order; returning false skips that
 * statement's children. */
typedef bool (*texi_stmt_visit_fn)(const tex_stmt *s, void *ud);
void texi_stmt_visit(const tex_stmt *s, texi_stmt_visit_fn fn, void *ud);

/* Whether s or a statement nested in it (loop and LET bodies, branches,
 * sequence items, ALLOCATE / REALIZE / ATTR bodies) satisfies pred. */
typedef bool (*texi_stmt_pred)(const tex_stmt *s);
bool texi_stmt_any(const tex_stmt *s, texi_stmt_pred pred);

/* Whether s holds a BARRIER. */
bool texi_stmt_has_barrier(const tex_stmt *s);

/* A synchronization of the threads of a block: a BARRIER or an ATTR
 * "thread_allreduce"; texi_stmt_has_sync: s holds one. */
bool texi_stmt_is_sync(const tex_stmt *s);
bool texi_stmt_has_sync(const tex_stmt *s);

/* A loop over the threads of a block (threadIdx.x/y/z; also a virtual
 * thread when `vthread`), not over blocks, which run in turn. */
bool texi_stmt_is_thread_loop(const tex_stmt *s, bool vthread);

/* The distinct intrinsics INTRIN statements of s call (one handle per
 * instance of a CPU built-in), in order of first call, stored in list[0 .. cap);
 * their count, or -1 when there are more. */
int texi_stmt_intrins(const tex_stmt *s, const tex_intrin **list, int cap);

/* Whether some expression of s (bounds, values, indices, conditions) reads
 * variable var. Allocates nothing and changes nothing (ctx is not used). */
bool texi_stmt_uses_var(tex_ctx *ctx, const tex_stmt *s, const tex_expr *var);

/* Whether expression e reads variable var. */
bool texi_expr_uses_var(const tex_expr *e, const tex_expr *var);

/* Whether expression e reads memory (a LOAD or a SEARCH of an index array). */
bool texi_expr_reads_memory(const tex_expr *e);

/* The number of statements of s when it is one STORE or a sequence of
 * STOREs (straight-line code), else 0. */
int texi_stmt_straight_stores(const tex_stmt *s);

/* Whether integer expression e is linear in variable v (sums, products by
 * constants, integer casts); *coef receives v's coefficient (0 when e does
 * not read v). */
bool texi_linear_in(tex_expr *e, const tex_expr *v, int64_t *coef);

/* e with each vars[i] replaced by values[i]. NULL on ENOMEM. */
tex_expr *texi_substitute(tex_expr *e, int n, tex_expr *const vars[], tex_expr *const values[]);

/* ------------------------------------------------- equality, hash, printing */

bool texi_expr_equal(const tex_expr *a, const tex_expr *b); /* structural; vars by identity */

/* Equality up to the renaming of bound variables: texi_expr_equal, except
 * that avars[i] in a stands where bvars[i] stands in b (n <= TEXI_ALPHA_MAX;
 * the axes of two computes, say), and the axes of reductions at the same
 * place, of equal ranges, are paired likewise for their bodies. */
#define TEXI_ALPHA_MAX 64
bool texi_expr_alpha_equal(const tex_expr *a, const tex_expr *b, int n, tex_expr *const avars[],
                           tex_expr *const bvars[]);
uint64_t texi_expr_hash(const tex_expr *e); /* consistent with equal */
bool texi_stmt_equal(const tex_stmt *a, const tex_stmt *b);
uint64_t texi_stmt_hash(const tex_stmt *s);

void texi_expr_print(texi_sb *sb, const tex_expr *e);
void texi_stmt_print(texi_sb *sb, const tex_stmt *s, int indent);
char *texi_stmt_str(const tex_stmt *s); /* malloc'ed */

/* ---------------------------------------------- simplifier and range analysis */

/* A variable's range [min, min + extent). An extent that is the constant
 * maximum of the variable's type means [min, +inf):
 * a size bound from an array's shape, never negative and otherwise
 * unknown, which symbolic bounds keep as the variable itself. */
typedef struct {
    tex_expr *var;
    tex_expr *min;
    tex_expr *extent;
} texi_range;

/* A closed integer interval; lo_inf / hi_inf mark unbounded ends. */
typedef struct {
    int64_t lo, hi;
    bool lo_inf, hi_inf;
} texi_interval;

/* The constant interval of an integer expression given var ranges (vars not
 * listed are unbounded unless they are axes with constant extents). */
texi_interval texi_const_interval(const tex_expr *e, int n, const texi_range ranges[]);

/* Symbolic bounds [*lo, *hi] (closed) of e when each var in ranges spans its
 * range; bounds are expressions over the remaining free variables. 0 or error. */
int texi_expr_bounds(tex_ctx *ctx, tex_expr *e, int n, const texi_range ranges[], tex_expr **lo,
                     tex_expr **hi);

/* One side of texi_expr_bounds: the symbolic lower (upper) bound of integer e
 * over the ranges, or NULL when that side is unbounded (no error recorded) or
 * on ENOMEM (recorded in ctx). */
tex_expr *texi_expr_bound(tex_ctx *ctx, tex_expr *e, int n, const texi_range ranges[], bool upper);

/* e simplified using the var ranges; NULL only on ENOMEM. */
tex_expr *texi_simplify(tex_expr *e, int n, const texi_range ranges[]);

/* True when cond is provably true (false) for every value in the ranges. */
bool texi_prove(tex_expr *cond, int n, const texi_range ranges[]);

#endif
