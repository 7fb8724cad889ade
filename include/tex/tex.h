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

/* Forgets the recorded error. NULL is a no-op. */
TEX_API void tex_clear_error(tex_ctx *ctx);

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
 * axis) and then leaves the schedule exactly as it was. */
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
/* tex_vectorize may be given a reduce axis too: on the CPU, a loop
 * `acc = acc op x(k)` over it accumulates into vector partial results that
 * are combined once at its end (docs/passes.md, "Vectors"). For integers
 * and for max/min the result is exact; a float sum or product is
 * reassociated, so it may differ from tex_eval_reference in the last bits;
 * built with "-strict-float" (tex_build) such a loop runs serially instead.
 * Other targets run a vectorized reduce axis serially. A reduce axis of a
 * stage made atomic (tex_atomic) cannot be vectorized (TEX_EINVAL). */
TEX_API int tex_vectorize(tex_stage *st, tex_iter *iv);
TEX_API int tex_unroll(tex_stage *st, tex_iter *iv);
TEX_API int tex_compute_at(tex_stage *st, tex_stage *parent, tex_iter *parent_iv);
TEX_API int tex_compute_inline(tex_stage *st);
TEX_API int tex_compute_root(tex_stage *st);
TEX_API int tex_set_scope(tex_stage *st, tex_scope scope);
TEX_API int tex_storage_align(tex_stage *st, tex_iter *iv, int factor, int offset);
TEX_API int tex_double_buffer(tex_stage *st);

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
 * "cuda.wmma_m16n16k16_f16f32", "cuda.wmma_m16n16k16_bf16f32". NULL with
 * TEX_EINVAL for an unknown name. */
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
 * reassociation except the one tex_vectorize asks for on a reduce axis, see
 * there, which -strict-float also turns off), so adds and multiplies round
 * exactly as the reference does. Source of "c" kernels and of tex_kernel_export: compile it without
 * contraction (gcc -std=c99 or -ffp-contract=off) to get the same.
 * In vectorized loops on the CPU, f32 exp, log, tanh, sigmoid and erf use
 * tex's vector functions, within 2 ulp of the correctly rounded result with
 * libm's special cases (docs/architecture.md, "Vector math"); with
 * "-strict-float" every lane calls libm instead.
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
 * bound from the arrays' shapes and must agree. Host arrays only. */
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

#ifdef __cplusplus
}
#endif

#endif /* TEX_TEX_H */
