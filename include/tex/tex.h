/*
 * tex — tensor expressions compiled for C programs.
 *
 * This is the only public header. A program states *what* to compute as tensor
 * expressions (tex_compute over tex_axis / tex_reduce_axis), and later *how* with
 * schedule primitives; tex lowers both to a loop AST and JIT-compiles it.
 *
 * Conventions (binding, see the README):
 *   - Every object is an opaque handle. IR objects (expressions, axes, tensors)
 *     live in the tex_ctx that made them and are freed all at once by
 *     tex_ctx_free; they are never freed one by one.
 *   - Functions that create return a pointer, NULL on error. Functions that act
 *     return int: 0 (TEX_OK) or a negative TEX_E* code. The context keeps the
 *     first error (code and message) until tex_clear_error.
 *   - A builder given a NULL operand returns NULL at once, so a chain of calls
 *     can be checked once at its end.
 *   - A context is used by one thread at a time; different contexts may be used
 *     from different threads concurrently.
 *   - Strings returned as `char *` are malloc'ed and freed by the caller with
 *     free(); strings returned as `const char *` are borrowed (lifetime stated).
 */
#ifndef TEX_TEX_H
#define TEX_TEX_H

#include <stddef.h>
#include <stdint.h>
#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && defined(TEX_BUILDING_LIBRARY)
#define TEX_API __attribute__((visibility("default")))
#else
#define TEX_API
#endif

#define TEX_VERSION_MAJOR 0
#define TEX_VERSION_MINOR 1
#define TEX_VERSION_PATCH 0

/* ---------------------------------------------------------------- handles */

typedef struct tex_ctx tex_ctx;       /* owns every IR object built in it */
typedef struct tex_expr tex_expr;     /* immutable scalar expression */
typedef struct tex_iter tex_iter;     /* an iteration axis (data-parallel or reduction) */
typedef struct tex_tensor tex_tensor; /* a placeholder or the result of a compute */

/* ------------------------------------------------------- context and errors */

/* Status codes; the values are binding. */
enum {
    TEX_OK = 0,
    TEX_EINVAL = -1,       /* bad argument or illegal schedule */
    TEX_ETYPE = -2,        /* dtype mismatch */
    TEX_ENOMEM = -3,       /* out of memory */
    TEX_EUNAVAILABLE = -4, /* a target, compiler or driver is missing */
    TEX_ECOMPILE = -5,     /* the C compiler or NVRTC rejected generated code */
    TEX_EDEVICE = -6,      /* a CUDA driver call failed at run time */
    TEX_EMISUSE = -7,      /* NULL handle, or handles from two contexts */
    TEX_EINTERNAL = -8     /* a bug in tex; the message says where */
};

/* Memory for a context's arena. `alloc(user, size)` returns memory aligned to at
 * least 16 bytes or NULL; `free(user, ptr)` releases it. Used by tex_ctx_new_ex. */
typedef struct {
    size_t size; /* sizeof(tex_allocator), so the struct can grow */
    void *(*alloc)(void *user, size_t size);
    void (*free)(void *user, void *ptr);
    void *user;
} tex_allocator;

/* A new, empty context; NULL when out of memory. Free it with tex_ctx_free. */
TEX_API tex_ctx *tex_ctx_new(void);

/* Like tex_ctx_new, with the arena's memory taken from `allocator` (copied; NULL
 * means malloc/free). Returns NULL if the allocator is malformed or fails. */
TEX_API tex_ctx *tex_ctx_new_ex(const tex_allocator *allocator);

/* Frees the context and every IR object made in it. NULL is a no-op. Kernels
 * and arrays are owned separately and stay valid. */
TEX_API void tex_ctx_free(tex_ctx *ctx);

/* The first unhandled error's code (0 when none); TEX_EMISUSE for NULL. */
TEX_API int tex_errcode(const tex_ctx *ctx);

/* The first unhandled error's message ("" when none), naming the call and the
 * object. Borrowed: valid until the next call on ctx. For NULL, a static text. */
TEX_API const char *tex_errmsg(const tex_ctx *ctx);

/* Forgets the recorded error and warning. NULL is a no-op. */
TEX_API void tex_clear_error(tex_ctx *ctx);

/* The last warning ("" when none): what a call that succeeded had to skip,
 * e.g. a malformed line of the tuning log (tex_tune). Errors are never
 * warnings; a warning never sets tex_errcode. Borrowed, like tex_errmsg. */
TEX_API const char *tex_warnmsg(const tex_ctx *ctx);

/* Records an error in ctx as tex's own calls do, for libraries built on this
 * API (tex's operators, docs/ops.md): code (a negative TEX_E* code) and the
 * printf-formatted message are kept unless an error is already recorded.
 * Returns code; TEX_EMISUSE (recorded) for a code >= 0 or a NULL fmt, and
 * TEX_EMISUSE without recording for a NULL ctx. */
TEX_API int tex_set_error(tex_ctx *ctx, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* "MAJOR.MINOR.PATCH"; static. */
TEX_API const char *tex_version(void);

/* ------------------------------------------------- types and expressions */

typedef enum {
    TEX_BOOL,
    TEX_I8,
    TEX_I16,
    TEX_I32,
    TEX_I64,
    TEX_U8,
    TEX_U16,
    TEX_U32,
    TEX_U64,
    TEX_F16,
    TEX_BF16,
    TEX_F32,
    TEX_F64
} tex_dtype;

/* The name of a dtype ("f32", "i64", ...); "?" when out of range. Static. */
TEX_API const char *tex_dtype_name(tex_dtype t);

/* Size of one element in bytes (bool: 1); 0 when out of range. */
TEX_API int tex_dtype_bytes(tex_dtype t);

/* Constants and variables. tex_int gives i32 when v fits, else i64.
 * tex_const converts v to t (integers truncate toward zero). tex_var is a
 * symbolic scalar of any dtype (a dynamic size, or a runtime value such as
 * a GEMM's alpha: a kernel parameter, see tex_param); name is copied. */
TEX_API tex_expr *tex_int(tex_ctx *ctx, int64_t v);
TEX_API tex_expr *tex_const(tex_ctx *ctx, tex_dtype t, double v);
TEX_API tex_expr *tex_var(tex_ctx *ctx, const char *name, tex_dtype t);

/* Arithmetic. Operands of different dtypes are promoted (rules in the README):
 * integer with integer, the wider wins (same width, mixed signedness: unsigned);
 * integer with float: the float; f16/bf16 with f32: f32; f16 with bf16: f32;
 * f32 with f64: f64; bool with a number: the number's type.
 * tex_div is true division for floats and floor division for integers. */
TEX_API tex_expr *tex_add(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_sub(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_mul(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_div(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_floordiv(tex_expr *a, tex_expr *b); /* rounds toward -inf */
TEX_API tex_expr *tex_floormod(tex_expr *a, tex_expr *b); /* sign of the divisor */
TEX_API tex_expr *tex_min(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_max(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_neg(tex_expr *a);

/* Comparisons and logic give TEX_BOOL; and/or/not take TEX_BOOL operands. */
TEX_API tex_expr *tex_eq(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_ne(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_lt(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_le(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_gt(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_ge(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_and(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_or(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_not(tex_expr *a);

/* cond ? t : f; cond must be TEX_BOOL; t and f are promoted to one type. */
TEX_API tex_expr *tex_select(tex_expr *cond, tex_expr *t, tex_expr *f);

/* Conversion; float to integer truncates toward zero (C semantics). */
TEX_API tex_expr *tex_cast(tex_dtype t, tex_expr *a);

/* Math on floats (an integer operand is converted to f32 first; tex_abs keeps
 * integers). tex_round rounds half away from zero. */
TEX_API tex_expr *tex_exp(tex_expr *a);
TEX_API tex_expr *tex_log(tex_expr *a);
TEX_API tex_expr *tex_sqrt(tex_expr *a);
TEX_API tex_expr *tex_rsqrt(tex_expr *a);
TEX_API tex_expr *tex_tanh(tex_expr *a);
TEX_API tex_expr *tex_sigmoid(tex_expr *a);
TEX_API tex_expr *tex_erf(tex_expr *a);
TEX_API tex_expr *tex_abs(tex_expr *a);
TEX_API tex_expr *tex_floor(tex_expr *a);
TEX_API tex_expr *tex_ceil(tex_expr *a);
TEX_API tex_expr *tex_round(tex_expr *a);
TEX_API tex_expr *tex_sin(tex_expr *a);
TEX_API tex_expr *tex_cos(tex_expr *a);
TEX_API tex_expr *tex_pow(tex_expr *a, tex_expr *b);
TEX_API tex_expr *tex_fma(tex_expr *a, tex_expr *b, tex_expr *c); /* a*b + c */

/* The dtype of an expression; TEX_BOOL for NULL (check for NULL first). */
TEX_API tex_dtype tex_expr_dtype(const tex_expr *e);

/* The expression printed in tex's syntax; malloc'ed, the caller frees it.
 * NULL for a NULL expression or when out of memory. */
TEX_API char *tex_expr_str(const tex_expr *e);

/* Size queries (used to check shapes when a compute is defined). They
 * simplify e (arena memory of e's context) without knowing the values of
 * symbolic sizes, record no error, and answer 0 when they cannot decide.
 * tex_expr_const_int: 1 when integer expression e always has one value
 * (2 * 3 + 1, N - N + 4), stored in *value unless value is NULL.
 * tex_expr_equal: 1 when integer expressions a and b are equal for every
 * value of their variables (N + 1 - 1 and N; variables compare by identity,
 * so two different variables are never equal). 0 for NULL operands. */
TEX_API int tex_expr_const_int(tex_expr *e, int64_t *value);
TEX_API int tex_expr_equal(tex_expr *a, tex_expr *b);

/* ------------------------------------------------- axes, tensors, computes */

/* An axis iterating [0, extent); the extent is an integer expression (constant
 * or symbolic, >= 0 when constant). The name is copied. */
TEX_API tex_iter *tex_axis(tex_ctx *ctx, const char *name, tex_expr *extent);
TEX_API tex_iter *tex_reduce_axis(tex_ctx *ctx, const char *name, tex_expr *extent);

/* The axis as an i32 (or, for an i64 extent, i64) expression. */
TEX_API tex_expr *tex_iv(tex_iter *iv);

/* An input tensor. Shapes are integer expressions (constants or tex_var). */
TEX_API tex_tensor *tex_placeholder(tex_ctx *ctx, const char *name, tex_dtype t, int ndim,
                                    tex_expr *const shape[]);
TEX_API tex_tensor *tex_placeholder_c(tex_ctx *ctx, const char *name, tex_dtype t, int ndim,
                                      const int64_t shape[]);

/* t[idx...]: exactly ndim integer indices. */
TEX_API tex_expr *tex_at(tex_tensor *t, int n, tex_expr *const idx[]);
#define TEX_AT(T, ...)                                                                             \
    tex_at((T), (int)(sizeof((tex_expr *[]){__VA_ARGS__}) / sizeof(tex_expr *)),                   \
           (tex_expr *[]){__VA_ARGS__})

/* A tensor whose element at (axes...) is body. The axes must be distinct
 * data-parallel axes; the tensor's shape is their extents, its dtype body's.
 * A reduction (tex_sum, ...) may only appear as the whole body. */
TEX_API tex_tensor *tex_compute(tex_ctx *ctx, const char *name, int ndim, tex_iter *const axes[],
                                tex_expr *body);

/* Reductions of body over the reduce axes (distinct, each used in one
 * reduction only). Identities: sum 0, prod 1, max -inf / type min, min +inf /
 * type max. */
TEX_API tex_expr *tex_sum(tex_expr *body, int n, tex_iter *const raxes[]);
TEX_API tex_expr *tex_reduce_max(tex_expr *body, int n, tex_iter *const raxes[]);
TEX_API tex_expr *tex_reduce_min(tex_expr *body, int n, tex_iter *const raxes[]);
TEX_API tex_expr *tex_reduce_prod(tex_expr *body, int n, tex_iter *const raxes[]);

/* The reduction restricted to points where cond (TEX_BOOL) holds. */
TEX_API tex_expr *tex_reduce_where(tex_expr *reduction, tex_expr *cond);

TEX_API int tex_tensor_ndim(const tex_tensor *t);             /* -1 for NULL */
TEX_API tex_expr *tex_tensor_dim(const tex_tensor *t, int i); /* NULL when out of range */
TEX_API tex_dtype tex_tensor_dtype(const tex_tensor *t);      /* TEX_BOOL for NULL */
TEX_API const char *tex_tensor_name(const tex_tensor *t);     /* borrowed; "" for NULL */
TEX_API tex_ctx *tex_tensor_ctx(const tex_tensor *t);         /* its context; NULL for NULL */

/* -------------------------------------------------------------- schedules */

typedef struct tex_schedule tex_schedule; /* how to compute a set of outputs */
typedef struct tex_stage tex_stage;       /* one operation's part of a schedule */
typedef struct tex_func tex_func;         /* a lowered function (loop AST) */

typedef enum {
    TEX_BLOCK_X,
    TEX_BLOCK_Y,
    TEX_BLOCK_Z,
    TEX_THREAD_X,
    TEX_THREAD_Y,
    TEX_THREAD_Z,
    TEX_VTHREAD
} tex_thread_tag;

typedef enum { TEX_SCOPE_GLOBAL, TEX_SCOPE_SHARED, TEX_SCOPE_LOCAL } tex_scope;

/* Handling of a split whose factor does not divide the extent. */
typedef enum {
    TEX_TAIL_AUTO,          /* the fastest legal strategy */
    TEX_TAIL_GUARD,         /* guard the body; loop partitioning removes it from the main part */
    TEX_TAIL_ROUND_UP,      /* compute the whole last tile (intermediate buffers only) */
    TEX_TAIL_SHIFT_INWARDS, /* move the last tile back (pure data-parallel stages only) */
    TEX_TAIL_PREDICATE      /* mask the loads/stores of a vectorized tail */
} tex_tail;

/* A schedule for computing `outputs` (and every tensor they depend on), one
 * stage per operation, each computed at root in its default loop order.
 * Arena-owned by ctx. */
TEX_API tex_schedule *tex_schedule_new(tex_ctx *ctx, int n, tex_tensor *const outputs[]);

/* The stage that produces t (also after cache_read/cache_write/rfactor). */
TEX_API tex_stage *tex_stage_of(tex_schedule *s, tex_tensor *t);
TEX_API int tex_stage_naxes(tex_stage *st);             /* leaf axes, outer to inner; -1 for NULL */
TEX_API tex_iter *tex_stage_axis(tex_stage *st, int i); /* i-th leaf axis */
TEX_API tex_iter *tex_op_axis(tex_stage *st, int i);    /* i-th data-parallel axis of the op */
TEX_API tex_iter *tex_op_reduce_axis(tex_stage *st, int i); /* i-th reduce axis of the op */

/* Primitives. Each returns 0 or TEX_EINVAL (message naming the stage and the
 * axis) and then leaves the schedule exactly as it was.
 * A split's factor (or number of parts) is a positive integer expression of
 * constants and size vars. A constant one must keep the split's index
 * arithmetic within the axis's index type (i32, or i64 for an i64 extent):
 * factor - 1 plus the extent, when constant, at most the type's maximum.
 * With symbolic sizes the caller keeps them small enough for that, as for
 * every index a kernel computes (an i64 extent makes room). A factor above
 * the extent leaves one outer iteration and an inner loop of the factor's
 * length, whose iterations past the extent the tail strategy handles. */
TEX_API int tex_split(tex_stage *st, tex_iter *iv, tex_expr *factor, tex_iter **outer,
                      tex_iter **inner);
TEX_API int tex_split_nparts(tex_stage *st, tex_iter *iv, tex_expr *nparts, tex_iter **outer,
                             tex_iter **inner);
TEX_API int tex_split_tail(tex_stage *st, tex_iter *iv, tex_expr *factor, tex_tail tail,
                           tex_iter **outer, tex_iter **inner);
TEX_API int tex_tile(tex_stage *st, tex_iter *x, tex_iter *y, tex_expr *fx, tex_expr *fy,
                     tex_iter **xo, tex_iter **yo, tex_iter **xi, tex_iter **yi);
TEX_API int tex_fuse(tex_stage *st, tex_iter *outer, tex_iter *inner, tex_iter **fused);
TEX_API int tex_reorder(tex_stage *st, int n, tex_iter *const order[]);
TEX_API int tex_bind(tex_stage *st, tex_iter *iv, tex_thread_tag tag);
TEX_API int tex_parallel(tex_stage *st, tex_iter *iv);
/* tex_vectorize refuses a reduce axis (it would race on the result). */
TEX_API int tex_vectorize(tex_stage *st, tex_iter *iv);
/* Vectorizes a reduce axis (Halide's atomic().vectorize()): on the CPU, a
 * loop `acc = acc op x(k)` over it accumulates into vector partial results
 * that are combined once at its end (docs/passes.md, "Vectors"). For
 * integers and for max/min the result is exact; a float sum or product is
 * reassociated, so it may differ from tex_eval_reference in the last bits;
 * built with "-strict-float" (tex_build) such a loop runs serially instead.
 * Other targets run it serially. TEX_EINVAL for a data-parallel axis (use
 * tex_vectorize) and for a reduce axis of a stage made atomic (tex_atomic). */
TEX_API int tex_vectorize_reduce(tex_stage *st, tex_iter *iv);
TEX_API int tex_unroll(tex_stage *st, tex_iter *iv);
TEX_API int tex_compute_at(tex_stage *st, tex_stage *parent, tex_iter *parent_iv);
TEX_API int tex_compute_inline(tex_stage *st);
TEX_API int tex_compute_root(tex_stage *st);
/* Common-subexpression elimination of computes: stage dup, whose definition
 * repeats kept's (the same dtype and shape, and the same body up to the
 * names of the axes and reduce axes), is no longer computed, and every stage
 * that read dup reads kept instead. tex_stage_of(s, dup's tensor) is NULL
 * afterwards, and dup's tensor cannot be a parameter of tex_lower.
 * tex_auto_schedule merges such stages itself. TEX_EINVAL when the
 * definitions differ, dup is an output, inlined, computed at another stage
 * or already scheduled (split, reordered, annotated, or with a stage
 * attached inside it), or kept is computed at another stage (it would cover
 * only that stage's needs); TEX_EMISUSE for NULL stages. */
TEX_API int tex_merge(tex_stage *dup, tex_stage *kept);
TEX_API int tex_set_scope(tex_stage *st, tex_scope scope);
TEX_API int tex_storage_align(tex_stage *st, tex_iter *iv, int factor, int offset);
/* Storage order of an intermediate's buffer (Halide's reorder_storage):
 * axes lists each data-parallel axis of st's operation (tex_op_axis) once,
 * outermost storage dimension first; the default is their order, row-major.
 * Only the layout changes, never what is computed: a shared-memory tile
 * read along its rows by one thread and along its columns by the next (the
 * [rows, k] tile of a GEMM's left operand) is stored k-major so that each
 * thread's rows are contiguous. Combines with tex_storage_align, whose
 * padding applies to the stride of its axis's dimension wherever that
 * dimension is in the order. TEX_EINVAL for an output (the caller's compact
 * array), a list that is not a permutation of the axes (an axis missing,
 * repeated or not the operation's); TEX_EMISUSE for NULLs. */
TEX_API int tex_reorder_storage(tex_stage *st, int n, tex_iter *const axes[]);
TEX_API int tex_double_buffer(tex_stage *st);
/* Software prefetching (TVM's prefetch, Halide's Func::prefetch): at the top
 * of every iteration of leaf axis iv's loop, the CPU's cache is asked
 * (__builtin_prefetch) for the elements of t that the iteration `offset`
 * iterations later reads, or, when t is st's own tensor, writes. For a
 * gather such as CSR SpMM's X[indices[p], k], with iv the loop over the
 * non-zeros, that is the rows of X the next non-zeros need: latency the
 * hardware prefetcher cannot hide. Every read of t in st's definition is
 * hinted; the loops inside iv that an index depends on are enumerated (a
 * contiguous run along t's last dimension: one hint per 64-byte line). t
 * may also be a tensor that st reads only through a copy (a tex_cache_read
 * of t for st, in any scope): a read of the copy counts as a read of t at
 * the same index, so the hints ask for what the copy takes from t (with
 * tex_prefetch_at, what the copy made at the next step of `from` will read).
 * Indices are clamped into the arrays they read, so a hint past the end of
 * the loop or of an index array reads nothing out of bounds; hints never
 * change results. Calling it again for the same t and iv replaces the
 * offset. t must be a function parameter or a stage computed at root in
 * global memory (not a cache in local or shared memory, nor a stage
 * attached elsewhere); the CUDA backend ignores the hint.
 * 0; TEX_EINVAL naming the stage, the tensor and the axis when st does not
 * read (or produce) t, iv is not one of st's leaf axes or is vectorized, or
 * offset is outside [1, 1 << 20]; the same checks are made again by
 * tex_lower (iv must still be a leaf, not vectorized, with no thread-bound
 * loop inside it that an index depends on; a parallel one is enumerated
 * serially). Split, fuse and vectorize of iv, rfactor and cache_write of
 * st, and cache_read of t for st refuse afterwards (call them first).
 * TEX_EMISUSE for NULL arguments. */
TEX_API int tex_prefetch(tex_stage *st, tex_tensor *t, tex_iter *iv, int offset);
/* Software prefetching spread over an inner loop (Halide's prefetch with an
 * `at` and a `from` loop): like tex_prefetch at leaf `at`, but the hinted
 * elements are those the same iteration of `at` (and of every loop between)
 * reads when leaf `from`, which is `at` or a leaf outside it, is `offset`
 * iterations later. With `from` the loop over a matrix's rows and `at` the
 * loop over a row's vectors, each step of a row asks for the same vectors of
 * the next row, so the next row arrives spread over this row's work instead
 * of in a burst the processor cannot keep in flight (the hardware
 * prefetcher stops at each 4 KiB page, the end of a 1024-float row). When
 * the hinted elements do not depend on `at` itself (a weight block that the
 * next iteration of an outer reduce loop reads, the same for every
 * iteration of `at`), at's iterations share them out instead: each asks
 * for its part, so every line is asked for once, spread over the loop.
 * tex_prefetch(st, t, iv, d) is tex_prefetch_at(st, t, iv, iv, d); a request
 * for the same t and `at` replaces the earlier one. The same checks as
 * tex_prefetch, and TEX_EINVAL when `from` is not a leaf of st or is inside
 * `at` (tex_lower checks the order again). */
TEX_API int tex_prefetch_at(tex_stage *st, tex_tensor *t, tex_iter *at, tex_iter *from, int offset);

/* Makes the updates of reduction stage st atomic (Halide's atomic()): each
 * combines its value into the output with an atomic operation, so that a
 * reduce axis of st may then be made parallel (tex_parallel) or bound to a
 * block index (tex_bind with TEX_BLOCK_*), e.g. a reduction split across the
 * blocks of a CUDA grid. The output is first set to the reduction's identity
 * by a nest of its own. Call it before binding or parallelizing a reduce
 * axis and after tex_rfactor / tex_cache_write of st (both refuse an atomic
 * stage). Builds for the CPU use OpenMP atomics (critical sections for
 * max/min); CUDA uses atomicAdd/Max/Min or compare-and-swap loops and needs
 * 32- or 64-bit element types (TEX_EUNAVAILABLE otherwise). 0, or TEX_EINVAL
 * when st is not a reduction or is tensorized. */
TEX_API int tex_atomic(tex_stage *st);
TEX_API tex_tensor *tex_cache_read(tex_schedule *s, tex_tensor *t, tex_scope scope, int nreaders,
                                   tex_tensor *const readers[]);
TEX_API tex_tensor *tex_cache_write(tex_schedule *s, tex_tensor *t, tex_scope scope);
TEX_API tex_tensor *tex_rfactor(tex_schedule *s, tex_tensor *t, tex_iter *raxis, int factor_axis);

/* Every stage's leaf axes with their inferred ranges, attach point, scope and
 * each buffer's inferred region; malloc'ed, the caller frees it. */
TEX_API char *tex_schedule_str(tex_schedule *s);

/* Schedules as text (docs/api.md, "Schedules as text"): every primitive that
 * succeeded on s, in order, one line each (`split C i 8`, `parallel C i.outer`,
 * `cache_write C local`, ...); malloc'ed, the caller frees it. NULL with
 * TEX_EINVAL naming the primitive when one has no text: a split factor that
 * is not an integer constant, or a user intrinsic (tex_intrin_extern). */
TEX_API char *tex_schedule_trace(tex_schedule *s);

/* Applies the primitives of text (tex_schedule_trace's lines; blank lines and
 * lines starting with ';' are skipped) to s, which must schedule the same
 * computes the text was written for. All or nothing: the lines are first
 * replayed on a scratch schedule of s's outputs after s's own trace, and s is
 * changed only when every line succeeds there. 0, or TEX_EINVAL naming the
 * line, its primitive and why (an unknown stage or axis, a malformed number,
 * a primitive's own refusal). When s's own trace has no text, the scratch
 * replay is impossible: the lines are applied to s directly and the ones
 * before a failing line stay applied. */
TEX_API int tex_schedule_apply_text(tex_schedule *s, const char *text);

/* An automatic schedule of outputs[0 .. n) for target (docs/auto_schedule.md):
 * the same as tex_schedule_new, with the primitives a scheduler would pick
 * already applied. Graph level: elementwise and data-movement stages are
 * inlined into their readers, elementwise epilogues (bias, activation,
 * residual, cast) fuse into a matmul's or conv's register tiles, row-wise
 * chains (softmax, layernorm) become one parallel loop over rows, following
 * a stated cost rule; TEX_DUMP=fusion prints which stage went into which
 * kernel and why. Kernel level ("cpu"): tiles from the host's vector width
 * and cache sizes, parallel outer loops, vectorized inner loops and
 * reductions (not reassociated under "-strict-float"); a matmul or an NHWC
 * conv2d whose shapes fit a CPU GEMM built-in (constant sizes, f32, at
 * least NR columns; docs/auto_schedule.md, "Tensorized tiles") is
 * tensorized with it, the others keep loop-nest tiles. Kernel level
 * ("cuda"): elementwise kernels one element (or float4) per thread, blocks
 * of 256; reductions and row-wise chains one block per row with rfactor and
 * cross-thread reductions; GEMM-like stages in block tiles (up to 64x64) of
 * 4x4 register tiles per thread, operand tiles double-buffered in shared
 * memory, epilogues applied on write-back; f16/bf16 GEMMs with f32
 * accumulation and shapes multiple of 16 on tensor cores: f16 from sm_80 in
 * block tiles up to 128x128 of warp tiles whose accumulators stay in
 * registers (mma.sync), operand K tiles double-buffered in shared memory;
 * bf16 and older archs with wmma (docs/auto_schedule.md). target:
 * "cpu", optionally with "-strict-float", "-threads=N" (the thread count
 * to size for; default TEX_NUM_THREADS or the online processors),
 * "-no-tensorize" (no CPU GEMM built-ins) and "-l1=B" / "-l2=B" (the L1
 * data and per-core L2 cache bytes to size for, a K or M suffix allowed,
 * 1K to 1024M; default the host's; not tex_build options), or
 * "cuda", optionally with "-strict-float" (no cross-thread reductions, no
 * tensor cores), "-arch=sm_NN" (NN >= 50; tensor cores from sm_70) and
 * "-emit-only" (accepted and ignored). Both take "-plain": the plain
 * schedule instead, every compute stage a kernel of its own (nothing
 * inlined or fused) with its data-parallel dims but the last in one
 * parallel loop (cpu), or one thread per element and a 0-d reduction
 * across one block (cuda). The schedule the rules make is checked before
 * it is returned: lowered and put through the target's build-time passes
 * as tex_lower and tex_build would; one that fails there, or that the
 * rules fail to make (a bug of the rules either way), is replaced by the
 * plain schedule, which tex_warnmsg and TEX_DUMP=fusion then report with
 * the reason. The result
 * belongs to ctx; print it with tex_schedule_str, refine it with any
 * primitive, lower it with tex_lower / tex_lower_tensors. NULL on error,
 * recorded in ctx: TEX_EMISUSE for NULL outputs (or ctx: nothing recorded)
 * or target, TEX_EINVAL for n <= 0, an unknown target or option (named),
 * and tex_schedule_new's errors. Not thread-safe per context. */
TEX_API tex_schedule *tex_auto_schedule(tex_ctx *ctx, int n, tex_tensor *const outputs[],
                                        const char *target);

/* ------------------------------------------------------------------ tuning */

/* What tex_tune did (filled when tex_tune_options.stats is not NULL). */
typedef struct {
    int trials;     /* candidates compiled and timed (the first is the automatic schedule) */
    int best_trial; /* the trial that found the one returned, 1-based */
    int rejected;   /* candidates refused (by a primitive, lowering, the compiler or the check) */
    double base_ms; /* the automatic schedule's median time, timed beside the finalists */
    double best_ms; /* the median time of the one returned, timed beside the finalists */
    double seconds; /* wall time spent */
    int oracle_checked; /* 1: outputs checked against tex_eval_reference, 0: against the
                           automatic schedule's kernel (workloads too large for the oracle) */
    int oracle_points;  /* when oracle_checked is 0: the elements of that kernel's outputs
                           checked against the definitions (docs/tuning.md) */
} tex_tune_stats;

typedef enum {
    TEX_TUNE_MODEL, /* mutants ranked by a cost model fitted to the measurements (default) */
    TEX_TUNE_RANDOM /* mutants measured in random order (for comparison) */
} tex_tune_search;

typedef struct {
    double time_budget_s;   /* stop after this much wall time; 0: 60 s */
    int max_trials;         /* stop after this many timed candidates; 0: 200 */
    int jobs;               /* candidates compiled at once; 0: the online processors */
    const char *log_path;   /* append every trial here; NULL: $TEX_TUNE_LOG (none if unset) */
    tex_tune_search search; /* how mutants are chosen */
    uint64_t seed;          /* the search's random seed; 0: a fixed one */
    int verbose;            /* 1: one line per improvement on stderr; 0: silent */
    tex_tune_stats *stats;  /* filled at the end when not NULL */
} tex_tune_options;

/* Searches schedules of outputs[0 .. n) for target ("cpu" or "cuda", with
 * the options tex_auto_schedule takes) by measurement (docs/tuning.md): starting from the
 * automatic schedule, it mutates its tile sizes, unrolling and loop orders,
 * ranks mutants with a cost model, compiles the promising ones in parallel,
 * times each on the real shapes with random inputs (median of several runs)
 * and checks its outputs; the automatic schedule and the fastest few are then
 * timed again side by side, and *best receives the fastest there as an
 * ordinary schedule (never slower than the automatic one). Every trial is
 * appended to the log, and the one returned as its chosen line;
 * tex_auto_schedule applies the last chosen (else the fastest) logged
 * schedule of the same workload and target when $TEX_TUNE_LOG names the log. opt may be NULL (the
 * defaults). 0, or TEX_EMISUSE (NULL ctx, outputs, target or best), TEX_EINVAL (n <= 0, a symbolic
 * shape, a scalar parameter in the computes, a target tex_auto_schedule refuses), TEX_EUNAVAILABLE
 * (no C compiler; for "cuda", no driver, device or NVRTC: candidates run on device copies of the
 * arrays), TEX_EDEVICE (no device memory) with the message recorded; *best
 * is NULL on failure. */
TEX_API int tex_tune(tex_ctx *ctx, int n, tex_tensor *const outputs[], const char *target,
                     const tex_tune_options *opt, tex_schedule **best);

/* ------------------------------------------------------- tensor intrinsics */

typedef struct tex_intrin tex_intrin; /* a tensor intrinsic (lives in its context) */

/* A user intrinsic: desc is a compute (usually over placeholders) that a
 * tensorized loop nest must match; c_source defines the functions named
 * body_fn, reset_fn and update_fn, which receive the buffers as docs/api.md
 * rule 10 says (per tensor of desc, inputs in order of first use then the output:
 * a pointer to the tile's first element and one int64_t stride in elements
 * per dimension; reset_fn only the output). body_fn may be NULL when
 * reset_fn and update_fn are given; both may be NULL when body_fn is. NULL
 * with TEX_EINVAL on a bad argument. */
TEX_API tex_intrin *tex_intrin_extern(tex_ctx *ctx, const char *name, tex_tensor *desc,
                                      const char *c_source, const char *body_fn,
                                      const char *reset_fn, const char *update_fn);

/* A built-in intrinsic: "cpu.gemm_f32_avx512", "cpu.gemm_f32_avx2",
 * "cpu.transpose_f32_avx512" and "cpu.transpose_f32_avx2" (B[i, j] = A[j, i]
 * over 16 x 16 and 8 x 8 f32 tiles, transposed in vector registers),
 * "cuda.wmma_m16n16k16_f16f32", "cuda.wmma_m16n16k16_bf16f32", and the
 * register-resident "cuda.mma_m16n16k16_f16f32_frag", "cuda.mma_frag_relu_f16",
 * "cuda.mma_m16n16k16_f16f32_afrag", "cuda.mma_frag_store_f32" (D = P: an
 * f32 fragment tile written to shared or global memory) (fragment tiles in
 * local buffers, docs/api.md rule 10). NULL with
 * TEX_EINVAL for an unknown name. The CPU GEMM built-ins take any K: their
 * depth (256 in the description) follows the tensorized nest's reduction
 * leaf when its extent is constant, and the last, partial tile of a constant
 * K split by that depth calls a depth-(K % depth) micro-kernel; likewise the
 * tile's rows follow a constant row leaf of 1 to 6 rows (to 7 with
 * "cpu.gemm_f32_avx512"), and the last
 * rows of a constant M split by the tile's rows call a (M % rows)-row
 * micro-kernel (docs/api.md, rule 10). */
TEX_API tex_intrin *tex_intrin_builtin(tex_ctx *ctx, const char *name);

/* Replaces the loop nest under leaf axis iv of st by calls of intrin. The
 * nest must match intrin's description (checked when lowering; a mismatch
 * is TEX_EINVAL showing both sides). Tiles cut by a non-divisible split run
 * the ordinary loop nest instead. */
TEX_API int tex_tensorize(tex_stage *st, tex_iter *iv, tex_intrin *intrin);

/* -------------------------------------------------------------- lowering */

/* A kernel parameter: a tensor, or a tex_var passed by value.
 *
 * Scalar parameters. A var of any dtype may be a parameter and may appear
 * anywhere in the compute bodies (alpha * A + beta * B, a clamp bound, an
 * epsilon, a temperature). Two kinds:
 *   - a size: an integer var that is (part of) a dimension of a tensor
 *     parameter. It is passed as TEX_VAL_I64 and must agree with the arrays'
 *     shapes; compiled kernels take it as int64_t.
 *   - any other var: a scalar. tex_kernel_call takes TEX_VAL_I64 or
 *     TEX_VAL_F64 and converts it to the var's dtype: to a float dtype as
 *     tex_cast does (rounded to nearest; a value too large becomes an
 *     infinity); to an integer dtype the value must be in the dtype's range
 *     and, given as F64, integral (2.5 or NaN for an integer var is refused,
 *     not truncated); a bool takes 0 or 1. A refused value is TEX_EINVAL
 *     naming the parameter, with nothing run or written. Compiled kernels
 *     take the scalar in its dtype's C type: float, double, int8_t ...
 *     uint64_t; f16/bf16 as the uint16_t bits of the value, bool as a
 *     uint8_t 0 or 1 (tex_kernel_export's header shows the prototype).
 * tex_eval_reference_ex gives the oracle the same values. */
typedef struct {
    enum { TEX_ARG_TENSOR, TEX_ARG_VAR } kind;
    union {
        tex_tensor *t;
        tex_expr *v;
    };
} tex_param;

/* Lowers the schedule to a loop AST named `name` whose parameters are params,
 * in order (callers pass values in the same order). Arena-owned by ctx. */
TEX_API tex_func *tex_lower(tex_schedule *s, const char *name, int n, const tex_param params[]);

/* tex_lower with tensor parameters only; symbolic sizes are read from the
 * shapes of the arrays passed. */
TEX_API tex_func *tex_lower_tensors(tex_schedule *s, const char *name, int n,
                                    tex_tensor *const args[]);

/* The loop AST, printed; malloc'ed, the caller frees it. */
TEX_API char *tex_func_str(const tex_func *f);

/* A value passed to a kernel: an array for a tensor parameter, a scalar
 * (TEX_VAL_I64, or TEX_VAL_F64 for a var that is not a size) for a var
 * parameter; see tex_param for the conversion. */
typedef struct {
    enum { TEX_VAL_TENSOR, TEX_VAL_I64, TEX_VAL_F64 } kind;
    union {
        DLTensor *t;
        int64_t i;
        double f;
    };
} tex_value;

/* ------------------------------------------------------ building and calling */

typedef struct tex_kernel tex_kernel; /* a built function; independent of its context */

/* 1 when the target can build and run kernels here ("cpu": a working C
 * compiler; "c": always; "cuda": a driver and NVRTC), else 0. */
TEX_API int tex_target_available(const char *target);

/* Builds f for target: "cpu", "cpu -threads=N", "c" (source only), "cuda",
 * "cuda -arch=sm_XX", "cuda -emit-only"; options combine ("cpu -threads=2
 * -strict-float").
 * Floating point: compiled kernels may contract a*b + c into one fused
 * multiply-add (the C compiler runs with -ffp-contract=fast, NVRTC with its
 * default --fmad=true), as TVM and Halide do; results may then differ from
 * tex_eval_reference in the last bits. The option "-strict-float" (every
 * family) turns contraction off (-ffp-contract=off; NVRTC --fmad=false) and
 * no other value-changing optimisation is ever used (no -ffast-math, no
 * reassociation except the one tex_vectorize_reduce asks for, see
 * there, which -strict-float also turns off), so adds and multiplies round
 * exactly as the reference does. Source of "c" kernels and of tex_kernel_export: compile it without
 * contraction (gcc -std=c99 or -ffp-contract=off) to get the same.
 * In vectorized loops on the CPU, f32 exp, log, tanh, sigmoid and erf use
 * tex's vector functions, within 2 ulp of the correctly rounded result with
 * libm's special cases (docs/architecture.md, "Vector math"); with
 * "-strict-float" every lane calls libm instead.
 * A CPU GEMM built-in's update (tex_tensorize) whose tile of A or B is read
 * wholly from the zeros of a padding stage (select(bounds, x, 0), as
 * tex_op_pad makes: a conv's outer filter rows at its first and last
 * output rows) is skipped, and one whose first or last rows of A are (a
 * conv's first and last filter columns at a row's ends) runs on the other
 * rows only, as oneDNN skips them; that differs from adding the zero
 * products only when the other tile holds an infinity or a NaN (0 * inf is
 * NaN), or in the sign of a zero sum. When those calls are the only reads
 * of the padding stage and they never reach its zeros, they read the
 * padding's source and the padding is not computed (docs/passes.md,
 * pad_bypass). "-strict-float" adds the zero products, so it computes the
 * padding.
 * Caller-owned; free with tex_kernel_free. NULL on error (recorded in f's context): TEX_EINVAL for
 * an unknown target, TEX_EUNAVAILABLE when its compiler/driver is missing, TEX_ECOMPILE with the
 * compiler's output when the generated code is rejected. */
TEX_API tex_kernel *tex_build(tex_func *f, const char *target);

/* The generated source; borrowed, valid until tex_kernel_free. */
TEX_API const char *tex_kernel_source(const tex_kernel *k);

/* The PTX of a "cuda" kernel (NVRTC's output; also for "cuda -emit-only"
 * when NVRTC is present), else NULL. Borrowed, valid until tex_kernel_free. */
TEX_API const char *tex_kernel_ptx(const tex_kernel *k);

/* Writes PREFIX.c and PREFIX.h for "c" and "cpu" kernels. PREFIX.h declares
 * `int NAME(...)` (NAME as given to tex_lower) with one argument per
 * parameter in order: a tensor is a pointer to its element type (compact
 * row-major; f16/bf16 as uint16_t, bool as uint8_t); a size var is int64_t;
 * any other var its own C type (see tex_param: float, double, int32_t, ...;
 * f16/bf16 as uint16_t bits, bool as uint8_t); then one int64_t per symbolic
 * size that is not a parameter, in order of first appearance. NAME returns 0,
 * -1 when a runtime check fails, -2 when out of memory. PREFIX.c needs only
 * the C standard headers, OpenMP and, with vectorized loops, GCC's vector
 * extensions (GCC or Clang). 0, TEX_EUNAVAILABLE for other targets,
 * TEX_EINVAL when a file cannot be written. */
TEX_API int tex_kernel_export(const tex_kernel *k, const char *path_prefix);

/* Runs the kernel. Arguments are checked (count, kind, dtype, ndim, shape,
 * device, strides, the range of each scalar) before any code runs; a
 * mismatch returns TEX_EINVAL or TEX_ETYPE and touches no memory. The
 * message is in tex_kernel_errmsg.
 * A refused call writes nothing: the kernel's own runtime checks (a
 * SHIFT_INWARDS split needs its symbolic extent >= the factor; CUDA launch
 * limits of symbolic extents) all run first, before any allocation, store
 * or launch, and a failing one returns TEX_EINVAL with every array untouched.
 * A kernel may be called from several threads at once. */
TEX_API int tex_kernel_call(tex_kernel *k, int n, const tex_value args[]);
TEX_API int tex_kernel_call_tensors(tex_kernel *k, int n, DLTensor *const args[]);

/* The last failed call's message ("" when none); borrowed. Per kernel: when
 * several threads call one kernel, the text belongs to one of them. */
TEX_API const char *tex_kernel_errmsg(const tex_kernel *k);

/* Frees the kernel (unloads its code). NULL is a no-op. */
TEX_API void tex_kernel_free(tex_kernel *k);

/* ---------------------------------------------------------------- arrays */

/* A compact row-major array on `dev` (kDLCPU for host memory), data aligned to
 * 64 bytes and zero-filled. Caller-owned; free with tex_array_free. NULL on a
 * bad argument (ndim < 0, negative size, unknown dtype, unsupported device) or
 * when out of memory. */
TEX_API DLTensor *tex_array_new(int ndim, const int64_t shape[], tex_dtype t, DLDevice dev);

/* Copies src into dst; equal dtype, ndim and shape are required (TEX_EINVAL).
 * Both may carry byte_offset and compact strides. */
TEX_API int tex_array_copy(DLTensor *dst, const DLTensor *src);

/* Frees an array made by tex_array_new. NULL is a no-op. */
TEX_API void tex_array_free(DLTensor *a);

/* The DLPack dtype of a tex dtype (bool is {kDLUInt, 8, 1}). */
TEX_API DLDataType tex_dtype_to_dlpack(tex_dtype t);

/* The tex dtype of a DLPack dtype; -1 when it has none. */
TEX_API int tex_dtype_from_dlpack(DLDataType d);

/* The oracle: computes every compute tensor among `tensors` straight from its
 * definition (no schedule), reading the placeholders' arrays. arrays[i] holds
 * tensors[i]; every placeholder an output depends on must be among them, and
 * intermediates not listed are computed into temporaries. Symbolic sizes are
 * bound from the arrays' shapes and must agree. Host arrays only. A large
 * compute is split over TEX_NUM_THREADS threads (else one per online
 * processor); every element is computed as on one thread, so the results are
 * the same bit for bit, and an error names the first failing element. */
TEX_API int tex_eval_reference(tex_ctx *ctx, int n, tex_tensor *const tensors[],
                               DLTensor *const arrays[]);

/* tex_eval_reference for computes that use scalar parameters: params and
 * values as tex_lower and tex_kernel_call take them (so the same two arrays
 * serve the kernel and the oracle). A tensor parameter takes a
 * TEX_VAL_TENSOR host array (outputs are filled, placeholders read); a var
 * parameter takes TEX_VAL_I64 or TEX_VAL_F64, converted to the var's dtype
 * and range-checked exactly as tex_kernel_call does (see tex_param), and a
 * var that names a dimension must agree with the arrays. 0, or TEX_EINVAL /
 * TEX_ETYPE / TEX_EMISUSE / TEX_ENOMEM recorded in ctx (a refused value
 * names the parameter; nothing is computed). Not thread-safe per context. */
TEX_API int tex_eval_reference_ex(tex_ctx *ctx, int n, const tex_param params[],
                                  const tex_value values[]);

/* ----------------------------------------------------------------- sparse */

/* Sparse tensors (docs/sparse.md), after SparseTIR: a format is a tree of
 * axes, each dense or sparse and fixed or variable, and a sparse buffer is
 * declared over a tuple of them. Storage is plain 1-D arrays the caller
 * passes as DLTensors: the values of each buffer, and per axis an indptr
 * and/or an indices array, all reached as placeholders (tex_sp_values,
 * tex_sp_indptr, tex_sp_indices) that go into tex_lower's parameters.
 *
 *   kind             arrays (i32)                     positions under a parent position q
 *   dense-fixed      none                             q * length + c, c in [0, length)
 *   dense-variable   indptr [parent + 1]              indptr[q] + c, c < indptr[q+1] - indptr[q]
 *   sparse-fixed     indices [parent * nnz_cols]      q * nnz_cols + p, coordinate indices[..]
 *   sparse-variable  indptr [parent + 1], indices [nnz]  indptr[q] + p, coordinate indices[..]
 *
 * CSR is a dense-fixed root I of length m and a sparse-variable J of parent
 * I, length n, nnz non-zeros. Every non-root axis names its parent; a root
 * is dense-fixed. Lengths and nnz may be symbolic (tex_var).
 *
 * A sparse iteration (tex_sp_iteration) is written in coordinate space, as
 * if every buffer were dense: tex_sp_coord(a) is the coordinate of axis a,
 * tex_sp_at(B, ...) reads buffer B at the iteration's point, and ordinary
 * tensors are read with tex_at at coordinates. Each axis is spatial ('S')
 * or reduction ('R': the body is summed over it). Lowering 1 turns the
 * iteration into an ordinary compute over position space: a spatial axis
 * is a data-parallel axis, a reduction axis a reduce axis whose extent is
 * read from indptr (for CSR: the row's non-zeros), coordinates are read
 * through indices; lowering 2 turns each buffer read into a load of its
 * 1-D values array. The result is an ordinary tex_tensor, so tex_schedule_new,
 * every schedule primitive (tex_op_axis / tex_op_reduce_axis give the
 * position-space axes in the order of `axes`), tex_lower, tex_build and
 * tex_kernel_call work on it as on a dense compute.
 *
 * At call time, every indptr argument must start at 0, never decrease and
 * end at its axis's nnz, and every indices argument must lie in [0, length)
 * of its axis (the length of the parent for tex_sp_rows); otherwise the call
 * returns TEX_EINVAL naming the array and writes nothing (host arrays; CUDA
 * device arrays are not scanned).
 *
 * Errors follow the builders' rules: NULL (or a NULL operand) returns NULL
 * and records the first error; TEX_EINVAL names the call, the axis or buffer
 * and what is wrong; TEX_EMISUSE for handles of another context. Everything
 * lives in the context. */
typedef struct tex_sp_axis tex_sp_axis;     /* an axis of a sparse format */
typedef struct tex_sp_buffer tex_sp_buffer; /* a sparse buffer over a tuple of axes */

/* A dense-fixed axis of `length`; parent NULL for a root. */
TEX_API tex_sp_axis *tex_sp_dense_fixed(tex_ctx *ctx, const char *name, tex_sp_axis *parent,
                                        tex_expr *length);
/* A dense-variable axis (indptr only) of at most `length`, `nnz` positions in all. */
TEX_API tex_sp_axis *tex_sp_dense_variable(tex_ctx *ctx, const char *name, tex_sp_axis *parent,
                                           tex_expr *length, tex_expr *nnz);
/* A sparse-fixed axis (indices only): `nnz_cols` coordinates per parent position. */
TEX_API tex_sp_axis *tex_sp_sparse_fixed(tex_ctx *ctx, const char *name, tex_sp_axis *parent,
                                         tex_expr *length, tex_expr *nnz_cols);
/* A sparse-variable axis (indptr and indices, CSR's column axis): `nnz` in all. */
TEX_API tex_sp_axis *tex_sp_sparse_variable(tex_ctx *ctx, const char *name, tex_sp_axis *parent,
                                            tex_expr *length, tex_expr *nnz);

/* The axis's arrays as 1-D i32 placeholders named "NAME_indptr" and
 * "NAME_indices"; NULL (TEX_EINVAL) when its kind has none. */
TEX_API tex_tensor *tex_sp_indptr(tex_sp_axis *a);
TEX_API tex_tensor *tex_sp_indices(tex_sp_axis *a);
/* For a variable axis whose parent is a root: "NAME_rows", one i32 per
 * position holding its parent's coordinate (CSR's row of each non-zero).
 * Iterations with a sparse output read it (their spatial axes are fused
 * into one loop over the non-zeros); tex_sp_fill_rows computes it. */
TEX_API tex_tensor *tex_sp_rows(tex_sp_axis *a);
/* Fills rows (i32, [indptr[last]]) from a valid indptr (i32, host): 0, or
 * TEX_EINVAL when indptr is malformed or the sizes disagree (rows untouched). */
TEX_API int tex_sp_fill_rows(const DLTensor *indptr, DLTensor *rows);

/* The coordinate of axis a inside a sparse iteration's body (an integer). */
TEX_API tex_expr *tex_sp_coord(tex_sp_axis *a);

/* A sparse buffer of dtype t over n axes, each the parent of the next (the
 * first a root). Its values are one 1-D array of as many elements as the
 * last axis has positions. */
TEX_API tex_sp_buffer *tex_sp_buffer_new(tex_ctx *ctx, const char *name, tex_dtype t, int n,
                                         tex_sp_axis *const axes[]);
/* The values array of b as a 1-D placeholder named after b (an input buffer). */
TEX_API tex_tensor *tex_sp_values(tex_sp_buffer *b);
/* b read at the coordinates of n iteration axes, one per axis of b (n is
 * b's number of axes). At b's own axes, in order, the element is read at
 * its position. At other axes (from the first level where axes[d] is not
 * b's d-th axis) the position is searched for: a sparse level's by a
 * binary search of its indices under the parent's position for the
 * coordinate of axes[d], a dense level's computed (the coordinate must lie
 * below its extent); the read is 0 where b has no element there (a masked
 * product O[i, j] = A[i, j] * B[i, j] at A's non-zeros, B of another
 * pattern). The indices of every level searched must be strictly
 * increasing within each parent position (CSR rows sorted, no repeats):
 * a kernel that searches them checks this at call time and otherwise
 * returns TEX_EINVAL naming the array, writing nothing (host arrays).
 * NULL with TEX_EINVAL when n is not b's number of axes, TEX_EMISUSE for
 * NULL axes or axes of another context. */
TEX_API tex_expr *tex_sp_at(tex_sp_buffer *b, int n, tex_sp_axis *const axes[]);

/* A sparse iteration over n axes (each axis after its parent), kinds[i] 'S'
 * or 'R', computing body (summed over the 'R' axes). out NULL: the result is
 * a dense tensor over the 'S' axes, which must then be dense-fixed roots
 * (SpMM: Y[i, k] = sum_j A[i, j] X[j, k]). out a buffer: its axes are the 'S'
 * axes, and the result is its values array, 1-D over out's non-zeros (SDDMM:
 * O[i, j] = sum_k X[i, k] Y[j, k] at A's non-zeros); its spatial axes are
 * fused into one loop over the non-zeros, which reads tex_sp_rows of the
 * last one (or searches indptr: tex_sp_iter_rows). A reduction axis must be
 * a child of a spatial axis or a dense-fixed root, or, of a fixed kind (a
 * sparse convolution's kernel offset per pair of sites), of another
 * reduction axis. Returns NULL with TEX_EINVAL naming the iteration and the
 * axis for a shape this lowering does not handle. */
TEX_API tex_tensor *tex_sp_iteration(tex_ctx *ctx, const char *name, int n,
                                     tex_sp_axis *const axes[], const char *kinds,
                                     tex_sp_buffer *out, tex_expr *body);

/* Stage I (SparseTIR's schedules on sparse iterations, before lowering):
 * tex_sp_iteration is tex_sp_iter_lower(tex_sp_iter_new(...)); in between,
 * tex_sp_reorder and tex_sp_iter_rows change how the iteration is lowered.
 * The iteration lives in the context; each call records its error there. */
typedef struct tex_sp_iter tex_sp_iter; /* a sparse iteration before lowering */

/* How the fused loop over a sparse output's non-zeros finds the row
 * (parent coordinate) of each one. */
typedef enum {
    TEX_SP_ROWS_ARRAY, /* read tex_sp_rows(J), filled on the host (tex_sp_fill_rows); default */
    TEX_SP_ROWS_SEARCH /* a binary search of J's indptr in the kernel: no rows array */
} tex_sp_rows_mode;

/* The iteration tex_sp_iteration would lower, not lowered yet; the same
 * arguments and checks (NULL, TEX_EINVAL naming the iteration and axis). */
TEX_API tex_sp_iter *tex_sp_iter_new(tex_ctx *ctx, const char *name, int n,
                                     tex_sp_axis *const axes[], const char *kinds,
                                     tex_sp_buffer *out, tex_expr *body);
/* Selects how a sparse output's fused loop finds rows. 0; TEX_EINVAL for an
 * unknown mode or an iteration with a dense output; TEX_EMISUSE for NULL. */
TEX_API int tex_sp_iter_rows(tex_sp_iter *it, tex_sp_rows_mode mode);
/* sparse_reorder: the loop order of the iteration's axes, order[0..n) a
 * permutation of them in which each axis comes after its parent (and a
 * sparse output's variable axis right after its root: the two are one
 * fused loop). Spatial and reduction axes may interleave (CSR SpMM
 * (I, J, K) "SRS": I, J, K keeps the features innermost). The output's
 * layout does not change (a dense output's dimensions stay the 'S' axes
 * in tex_sp_iter_new's order); the lowered compute's stage starts with its
 * axes in this order (tex_stage_axis), and reduction axes are summed in
 * it. 0; TEX_EINVAL naming the iteration and the axis (not an axis of it,
 * named twice, before its parent, a fused pair split) or when n is not its
 * number of axes, nothing changed; TEX_EMISUSE for NULL. */
TEX_API int tex_sp_reorder(tex_sp_iter *it, int n, tex_sp_axis *const order[]);
/* Lowers it (lowering 1 and 2) to a compute, as tex_sp_iteration does;
 * NULL with the error recorded (TEX_EINVAL naming the iteration and the
 * axis for a shape the lowering does not handle). May be called again
 * (each call makes a new compute). */
TEX_API tex_tensor *tex_sp_iter_lower(tex_sp_iter *it);

/* Format decomposition "hyb" (SparseTIR; docs/sparse.md): a CSR matrix split
 * by row length into ELL buckets of widths 1, 2, 4, ..., max_width (a row of
 * length L in (w/2, w] goes to the bucket of width w, padded with its last
 * column and zero values) and a CSR remainder holding the empty rows and the
 * rows longer than max_width. Every part keeps the ids of its rows (i32,
 * increasing), so each row of the matrix is in exactly one part.
 *
 * tex_sp_hyb_nparts: the number of parts for max_width, a power of two in
 * [1, 1024] (log2(max_width) + 2: the buckets, then the remainder), or 0
 * for another max_width. tex_sp_hyb_narrays: the number of arrays of the
 * storage (3 per bucket: rows, indices, values; 4 for the remainder: rows,
 * indptr, indices, values), or 0. Thread-safe. */
TEX_API int tex_sp_hyb_nparts(int max_width);
TEX_API int tex_sp_hyb_narrays(int max_width);

typedef struct tex_sp_hyb tex_sp_hyb; /* a CSR matrix decomposed into hyb parts (host storage) */

/* Converts a host CSR matrix of n_cols columns (indptr i32 [m + 1], indices
 * i32 [nnz], values [nnz] of any tex dtype; compact 1-D kDLCPU arrays,
 * only read) into hyb storage of max_width. Returns a new tex_sp_hyb the
 * caller owns and frees with tex_sp_hyb_free (it does not depend on ctx);
 * NULL with TEX_EINVAL recorded in ctx, naming the array, when an array is
 * malformed (indptr not starting at 0, decreasing, or not ending at nnz;
 * an index outside [0, n_cols); sizes or dtypes that disagree), max_width
 * is not a power of two in [1, 1024] or n_cols is outside [0, 2^31);
 * TEX_EMISUSE for a NULL array, TEX_ENOMEM. Nothing is allocated on error.
 * Not thread-safe per context (it records errors in ctx). */
TEX_API tex_sp_hyb *tex_sp_hyb_convert(tex_ctx *ctx, int64_t n_cols, const DLTensor *indptr,
                                       const DLTensor *indices, const DLTensor *values,
                                       int max_width);
/* Frees h and its arrays; NULL is a no-op. */
TEX_API void tex_sp_hyb_free(tex_sp_hyb *h);
/* Fills arrays[0..n) with h's arrays (host DLTensors owned by h, valid
 * until tex_sp_hyb_free), in the order of tex_sp_hyb_spmm's params: per
 * bucket rows, indices, values, then the remainder's rows, indptr, indices,
 * values. 0, TEX_EMISUSE for NULL, TEX_EINVAL when n is not
 * tex_sp_hyb_narrays of h's max_width. */
TEX_API int tex_sp_hyb_arrays(tex_sp_hyb *h, int n, DLTensor *arrays[]);

/* SpMM Y = A X over hyb storage of max_width: X is [n, f] (any float dtype;
 * A's values have X's dtype), m the number of rows of A (and Y). Fills
 * parts[0 .. tex_sp_hyb_nparts(max_width)) with one compute per part, each
 * over (that part's rows, f) with one reduce axis (a bucket's: its constant
 * width; the remainder's: ragged, as in CSR SpMM), and params[0 ..
 * tex_sp_hyb_narrays(max_width) + 2) with the kernel's parameters: the
 * hyb arrays' placeholders in tex_sp_hyb_arrays' order, then X, then Y.
 * Returns Y, which is also the last part (the remainder, named `name`; the
 * buckets are "NAME_w1", "NAME_w2", ...): a tensor of shape [m, f] into
 * which every part stores its rows through its row ids. Schedule the parts
 * with the ordinary primitives (tex_schedule_new over Y, or over all the
 * parts, then per part's stage: parallel rows, vectorize features, unroll
 * a bucket's reduce axis, cache_write, ...) and lower with params; the
 * parts' nests run one after another in one function (one kernel call),
 * each writing only its own rows; bound to blocks and threads, they are one
 * CUDA kernel (one launch) in which each part takes a range of blocks. The row counts and the
 * remainder's nnz are size variables bound from the arrays, so one kernel serves every matrix
 * converted with the same max_width. The rows arrays are checked at call time to lie in [0, m);
 * that they are distinct (as tex_sp_hyb_convert makes them) is the caller's contract. NULL with
 * TEX_EINVAL (a max_width not a power of two in [1, 1024], X not 2-D,
 * NULL parts or params), TEX_ETYPE (m not an integer), TEX_EMISUSE (a NULL
 * m or X, or operands of another context). */
TEX_API tex_tensor *tex_sp_hyb_spmm(tex_ctx *ctx, const char *name, int max_width, tex_expr *m,
                                    tex_tensor *X, tex_tensor *parts[], tex_tensor *params[]);

/* -------------------------------------------------------------- operators */

/* Operators (docs/ops.md): tensor-level functions in the style of TVM's topi,
 * each built from tex_placeholder / tex_compute / tex_sum ... only, so every
 * schedule primitive applies to what they return. Common rules:
 *   - ctx must be the context of every operand. Each returns the output
 *     tensor, named `name` (copied; NULL gives the operator's name, e.g.
 *     "add"); internal stages are named after it ("Y_max", "Y_sum", ...).
 *   - Errors return NULL and record the first error in ctx: TEX_EMISUSE for
 *     a NULL ctx or operand (so a chain fails fast and keeps the first
 *     message) or operands of another context; TEX_EINVAL naming the
 *     operator, the operand and the dimensions for bad shapes and axes
 *     ("tex_op_matmul: A's dim 1 (K = 7) != B's dim 0 (K = 9)"); TEX_ETYPE for
 *     a dtype the operator does not take. Optional operands (a bias, gamma,
 *     beta) may be NULL to leave them out, except when ctx already holds an
 *     error: then a NULL is taken as the failed result of an earlier call.
 *   - Axes are numbered from 0; a negative axis counts from the end (-1 is
 *     the last).
 *   - Shapes may be symbolic (tex_var). What can be decided when the operator
 *     is defined is checked then (see tex_expr_equal); the rest is checked
 *     by tex_kernel_call. Broadcasting (numpy's rule, shapes aligned at the
 *     right): two dims broadcast when they are provably equal or one of them
 *     is the constant 1; other pairs are TEX_EINVAL (a symbolic size that
 *     is 1 at run time does not broadcast).
 *   - Dtypes: binary operators promote as tex_add does; reductions
 *     accumulate in the input's dtype.
 *   - Ownership and threads: results and their stages live in ctx until
 *     tex_ctx_free; like every builder, an operator uses ctx from one
 *     thread at a time. */

/* Elementwise binary operators with broadcasting: out = a OP b. maximum and
 * minimum are elementwise (NaN-propagating, as tex_max); div is tex_div
 * (floor division for integers). pow takes floats (integers become f32). */
TEX_API tex_tensor *tex_op_add(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b);
TEX_API tex_tensor *tex_op_sub(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b);
TEX_API tex_tensor *tex_op_mul(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b);
TEX_API tex_tensor *tex_op_div(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b);
TEX_API tex_tensor *tex_op_maximum(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b);
TEX_API tex_tensor *tex_op_minimum(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b);
TEX_API tex_tensor *tex_op_pow(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b);

/* Elementwise activations, out shape = x's shape. relu: max(x, 0) in x's
 * dtype. The others take floats (an integer x gives f32): gelu
 * x/2 * (1 + erf(x/sqrt 2)); gelu_tanh x/2 * (1 + tanh(sqrt(2/pi) *
 * (x + 0.044715 x^3))); silu x * sigmoid(x); sigmoid; tanh. */
TEX_API tex_tensor *tex_op_relu(tex_ctx *ctx, const char *name, tex_tensor *x);
TEX_API tex_tensor *tex_op_gelu(tex_ctx *ctx, const char *name, tex_tensor *x);
TEX_API tex_tensor *tex_op_gelu_tanh(tex_ctx *ctx, const char *name, tex_tensor *x);
TEX_API tex_tensor *tex_op_silu(tex_ctx *ctx, const char *name, tex_tensor *x);
TEX_API tex_tensor *tex_op_sigmoid(tex_ctx *ctx, const char *name, tex_tensor *x);
TEX_API tex_tensor *tex_op_tanh(tex_ctx *ctx, const char *name, tex_tensor *x);

/* x converted to dtype t elementwise, as tex_cast converts. */
TEX_API tex_tensor *tex_op_cast(tex_ctx *ctx, const char *name, tex_tensor *x, tex_dtype t);

/* out = x + bias, the 1-D bias running along x's dimension `axis`
 * (bias's length must equal that dim). */
TEX_API tex_tensor *tex_op_bias_add(tex_ctx *ctx, const char *name, tex_tensor *x, tex_tensor *bias,
                                    int axis);

/* Reductions of x over the n_axes distinct axes listed (n_axes == 0: over
 * every axis). keepdims != 0 keeps each reduced dim with size 1, else the
 * output has the remaining dims (a full reduction gives a 0-d tensor).
 * mean takes floats and is the sum divided by the number of elements
 * reduced; max and min propagate NaN. */
TEX_API tex_tensor *tex_op_sum(tex_ctx *ctx, const char *name, tex_tensor *x, int n_axes,
                               const int axes[], int keepdims);
TEX_API tex_tensor *tex_op_mean(tex_ctx *ctx, const char *name, tex_tensor *x, int n_axes,
                                const int axes[], int keepdims);
TEX_API tex_tensor *tex_op_max(tex_ctx *ctx, const char *name, tex_tensor *x, int n_axes,
                               const int axes[], int keepdims);
TEX_API tex_tensor *tex_op_min(tex_ctx *ctx, const char *name, tex_tensor *x, int n_axes,
                               const int axes[], int keepdims);

/* The TEX_I64 index along `axis` of the largest (smallest) element of x;
 * ties give the first index, and for floats the first NaN wins (numpy's
 * argmax). Two stages: the max (min), then the smallest index that reaches
 * it. The axis must not be empty when run. */
TEX_API tex_tensor *tex_op_argmax(tex_ctx *ctx, const char *name, tex_tensor *x, int axis,
                                  int keepdims);
TEX_API tex_tensor *tex_op_argmin(tex_ctx *ctx, const char *name, tex_tensor *x, int axis,
                                  int keepdims);

/* softmax(x) along axis, max-subtracted: e = exp(x - max), out = e * (1 / sum e).
 * log_softmax: x - max - log(sum exp(x - max)). Floats only; out has x's
 * shape and dtype. */
TEX_API tex_tensor *tex_op_softmax(tex_ctx *ctx, const char *name, tex_tensor *x, int axis);
TEX_API tex_tensor *tex_op_log_softmax(tex_ctx *ctx, const char *name, tex_tensor *x, int axis);

/* Normalization over the last n_axes dims of x (1 <= n_axes <= ndim).
 * layernorm: (x - mean) / sqrt(var + eps) * gamma + beta (var: the mean of
 * squared differences). rmsnorm: x / sqrt(mean(x^2) + eps) * gamma. gamma
 * and beta (optional) have exactly the normalized dims' shape. Floats only. */
TEX_API tex_tensor *tex_op_layernorm(tex_ctx *ctx, const char *name, tex_tensor *x,
                                     tex_tensor *gamma, tex_tensor *beta, int n_axes, double eps);
TEX_API tex_tensor *tex_op_rmsnorm(tex_ctx *ctx, const char *name, tex_tensor *x, tex_tensor *gamma,
                                   int n_axes, double eps);

/* Matrix product of the last two dims: a is [..., M, K] ([..., K, M] when
 * trans_a), b is [..., K, N] ([..., N, K] when trans_b), out [..., M, N];
 * the leading (batch) dims broadcast. Both operands have ndim >= 2. */
TEX_API tex_tensor *tex_op_matmul(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b,
                                  int trans_a, int trans_b);

/* A fully connected layer: x [..., K], w [N, K], optional bias [N]:
 * out[..., n] = sum_k x[..., k] * w[n, k] + bias[n] (matmul with trans_b,
 * then bias_add). x has ndim >= 2. */
TEX_API tex_tensor *tex_op_dense(tex_ctx *ctx, const char *name, tex_tensor *x, tex_tensor *w,
                                 tex_tensor *bias);

/* Data movement. transpose: out dim d is x's dim perm[d] (perm a
 * permutation of 0..ndim-1; NULL reverses the dims). reshape: the same
 * elements in row-major order under a new shape (integer expressions) with
 * the same number of elements (provably, when symbolic). concat: 1 to 64
 * tensors of one dtype, equal in every dim but `axis`, joined along it. */
TEX_API tex_tensor *tex_op_transpose(tex_ctx *ctx, const char *name, tex_tensor *x,
                                     const int perm[]);
TEX_API tex_tensor *tex_op_reshape(tex_ctx *ctx, const char *name, tex_tensor *x, int ndim,
                                   tex_expr *const shape[]);
TEX_API tex_tensor *tex_op_concat(tex_ctx *ctx, const char *name, int n, tex_tensor *const xs[],
                                  int axis);

/* Splits x along axis into n (1 to 64) tensors of sizes[0..n) elements
 * (constants adding up to the dim). sizes NULL: n equal parts; the dim must
 * then be a constant multiple of n, unless n = 1. outs[k] receives part k,
 * named NAME_k. 0, or the error code (outs unchanged). */
TEX_API int tex_op_split(tex_ctx *ctx, const char *name, tex_tensor *x, int axis, int n,
                         const int64_t sizes[], tex_tensor *outs[]);

/* Constant padding: before[d] and after[d] (>= 0) elements of `value`
 * (converted to x's dtype) around dim d. */
TEX_API tex_tensor *tex_op_pad(tex_ctx *ctx, const char *name, tex_tensor *x,
                               const int64_t before[], const int64_t after[], double value);

/* x[begin[d] : end[d] : strides[d]] in each dim d, as Python slices with a
 * positive stride (strides NULL: 1): a negative bound counts from the end,
 * and for constant dims bounds are clipped to [0, dim] (an empty range gives
 * size 0); INT64_MAX as end means the end of the dim. */
TEX_API tex_tensor *tex_op_slice(tex_ctx *ctx, const char *name, tex_tensor *x,
                                 const int64_t begin[], const int64_t end[],
                                 const int64_t strides[]);

/* 2-D pooling of x [N, C, H, W] (NCHW, floats) with a kernel[0] x kernel[1]
 * window moved by stride[2] (NULL: 1), over x padded by padding[2] (NULL:
 * 0; each side, top/bottom and left/right; padding < kernel). Out [N, C,
 * OH, OW] with OH = (H + 2 padding[0] - kernel[0]) / stride[0] + 1 (floor),
 * the same for OW. max_pool ignores the padding; avg_pool divides the
 * window's sum by kernel[0] * kernel[1] when count_include_pad, else by the
 * number of elements of x inside the window. Padding is a stage of its own
 * (NAME_pad, see tex_op_pad) that a schedule may inline. */
TEX_API tex_tensor *tex_op_max_pool2d(tex_ctx *ctx, const char *name, tex_tensor *x,
                                      const int64_t kernel[2], const int64_t stride[2],
                                      const int64_t padding[2]);
TEX_API tex_tensor *tex_op_avg_pool2d(tex_ctx *ctx, const char *name, tex_tensor *x,
                                      const int64_t kernel[2], const int64_t stride[2],
                                      const int64_t padding[2], int count_include_pad);

/* Global pooling of x [N, C, H, W]: the max (mean) over H and W, out
 * [N, C, 1, 1]. Floats only. */
TEX_API tex_tensor *tex_op_global_max_pool2d(tex_ctx *ctx, const char *name, tex_tensor *x);
TEX_API tex_tensor *tex_op_global_avg_pool2d(tex_ctx *ctx, const char *name, tex_tensor *x);

/* Data layouts of tex_op_conv2d. */
typedef enum {
    TEX_LAYOUT_NCHW, /* x [N, C, H, W], w [F, C / groups, KH, KW], out [N, F, OH, OW] */
    TEX_LAYOUT_NHWC, /* x [N, H, W, C], w [KH, KW, C / groups, F], out [N, OH, OW, F] */
    /* blocked channels (one group): x [N, C / CB, H, W, CB], w [F / FB, C / CB, KH, KW, CB,
     * FB], out [N, F / FB, OH, OW, FB] (CB, FB: x's and w's last dims); c = co * CB + ci,
     * f = fo * FB + fi. A filter block's weights are contiguous, so a GEMM tile reads them
     * as they are: the CPU's fastest layout with FB = 64 on AVX-512, 16 on AVX2
     * (docs/ops.md). No implicit-GEMM form (tex_op_conv2d_gemm). */
    TEX_LAYOUT_NCHWC
} tex_layout;

/* 2-D convolution (cross-correlation, as in deep learning frameworks):
 * out[n, f, y, x] = sum over c < C / groups, ry, rx of
 *   xpad[n, g * C / groups + c, y * stride[0] + ry * dilation[0],
 *        x * stride[1] + rx * dilation[1]] * w[f, c, ry, rx]
 * with g = f / (F / groups), xpad x padded with padding[0] zeros above and
 * below and padding[1] left and right (a stage NAME_pad when padding > 0).
 * OH = (H + 2 padding[0] - dilation[0] * (KH - 1) - 1) / stride[0] + 1,
 * likewise OW. stride, padding, dilation may be NULL (1, 0, 1). groups >= 1
 * divides C and F (groups = C, w's channel dim 1: depthwise). The shapes
 * of x and w are checked against each other (C / groups) when known. */
TEX_API tex_tensor *tex_op_conv2d(tex_ctx *ctx, const char *name, tex_tensor *x, tex_tensor *w,
                                  const int64_t stride[2], const int64_t padding[2],
                                  const int64_t dilation[2], int groups, tex_layout layout);

/* tex_op_conv2d as an implicit GEMM (im2col-free): the same result, the
 * reduction one axis of C / groups * KH * KW elements ("rk", in w's memory
 * order: channel-major for NCHW, channel-minor for NHWC) instead of three,
 * so GEMM schedules (tile the output's pixels x filters, split rk) apply. */
TEX_API tex_tensor *tex_op_conv2d_gemm(tex_ctx *ctx, const char *name, tex_tensor *x, tex_tensor *w,
                                       const int64_t stride[2], const int64_t padding[2],
                                       const int64_t dilation[2], int groups, tex_layout layout);

#ifdef __cplusplus
}
#endif

#endif /* TEX_TEX_H */
