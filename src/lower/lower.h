/*
 * Lowering: schedule -> loop AST -> named passes -> tex_func. Private to
 * src/lower and the backends.
 *
 * Stages of the AST (each printable with TEX_DUMP):
 *   1. schedule_ops (schedule_ops.c) builds the loop nest of every stage from
 *      its leaf iters, attach points and inferred bounds. Its output uses
 *      tensor-level nodes: REALIZE (an intermediate's region, at its attach
 *      point), PROVIDE / ACCESS (multi-dimensional, global coordinates of the
 *      tensor), FOR loops over fresh per-stage loop variables starting at 0,
 *      IF guards for non-divisible splits (conditions of the form
 *      `index < extent`), ATTR nodes for annotations. A reduction becomes an
 *      init nest followed by an update nest (T = T op body). Inlined stages are
 *      substituted into their consumers.
 *   2. passes (pipeline.c lists them): entry checks (every runtime check
 *      moved to the top of the body), flatten (REALIZE/PROVIDE/ACCESS ->
 *      ALLOCATE/STORE/LOAD over texi_buffers with strides), loop partition,
 *      simplify, unroll, vectorize, storage rewrite, remove no-ops.
 * The interpreter (src/interp) runs either form on host arrays.
 */
#ifndef TEX_LOWER_LOWER_H
#define TEX_LOWER_LOWER_H

#include "ir/eval.h"
#include "schedule/schedule.h"

/* A parameter of a lowered function. */
typedef struct {
    int kind;           /* TEX_ARG_TENSOR or TEX_ARG_VAR */
    tex_tensor *tensor; /* TENSOR */
    texi_buffer *buf;   /* TENSOR: its global buffer (shape = tensor shape, compact) */
    tex_expr *var;      /* VAR: the scalar, of any dtype */
    bool size;          /* VAR: an integer naming (part of) a tensor parameter's dimension:
                           passed as int64_t and bound like the size variables; otherwise
                           passed in its own type, converted and range-checked */
} texi_param;

struct tex_func {
    tex_ctx *ctx;
    const char *name;
    int n_params;
    texi_param *params;
    int n_size_vars;      /* symbolic sizes that are not VAR params: bound from array shapes */
    tex_expr **size_vars; /* in order of first appearance in the params' shapes */
    tex_stmt *body;       /* the AST after the whole pipeline */
    bool quiet;           /* lowered to be checked (texi_lower_all): TEX_DUMP prints none of it */
};

/* Everything a pass may use; passes touch nothing else (no globals, no I/O). */
typedef struct {
    tex_ctx *ctx; /* arena for new nodes, error sink */
    tex_schedule *sch;
    tex_func *func;    /* params and buffers of the function being lowered */
    bool strict_float; /* CPU tail: "-strict-float" (float sums keep their order) */
} texi_lower;

/* Builds the loop nest of the whole schedule (stage 1 above). Runs bound
 * inference first. 0 or an error (TEX_EINVAL naming the stage for an illegal
 * schedule). */
int texi_schedule_ops(texi_lower *lw, tex_stmt **out);

/* The passes, in pipeline order; each returns 0 or an error code. */
int texi_pass_entry_checks(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_pad_bypass(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_flatten(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_loop_partition(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_simplify(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_dead_stores(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_unroll(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_vectorize(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_storage_rewrite(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_inplace(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_remove_noops(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_hfuse(texi_lower *lw, tex_stmt *in, tex_stmt **out);
int texi_pass_hoist_search(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* The GPU tail's first step: tex_prefetch's hints removed (drop_hints.c). */
int texi_pass_drop_hints(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* First in both tails: ATTR "zero_skip" replaced by its IF, or by the call
 * under -strict-float (tensorize_skip.c). */
int texi_pass_zero_skip(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* CPU tail: parallel loops of uneven iterations scheduled dynamically
 * (uneven_parallel.c). */
int texi_pass_uneven_parallel(texi_lower *lw, tex_stmt *in, tex_stmt **out);

/* The GPU tail: local-only loops of register tiles unswitched on their
 * bounds checks (loop_unswitch.c). */
int texi_pass_loop_unswitch(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* The CPU tail (texi_lower_tail): barrier fission of thread loops that
 * contain barriers (gpu_to_cpu.c), then loads in select arms and right
 * operands of && / || made unconditional loads at a clamped index, bound by
 * LETs around their statement (guarded_loads.c). */
int texi_pass_gpu_to_cpu(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* Shared-memory copies of read-only inputs dropped, their readers reading
 * the input (unstage_shared.c), first in the CPU tail. */
int texi_pass_unstage_shared(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* Barriers between thread-owned accesses removed, thread-owned shared
 * buffers as per-thread scalars (gpu_barriers.c), before gpu_to_cpu. */
int texi_pass_gpu_barriers(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* Block loops as one (collapsed) OpenMP parallel loop per nest (gpu_blocks.c). */
int texi_pass_gpu_blocks(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* Innermost thread loops as vectorized loops inside each segment (gpu_threads.c). */
int texi_pass_gpu_threads(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* Adjacent independent parallel (or serial) loops over one range as one
 * loop: horizontal fusion (loop_fuse.c). */
int texi_pass_loop_fuse(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* A costly value that a later loop nest recomputes at the points an earlier
 * one computed it, stored by the earlier and read back (loop_reuse.c). */
int texi_pass_loop_reuse(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* Loops split where a conjunct of a select's condition is decided, in and
 * around vector loops (select_partition.c), before simd_tail. */
int texi_pass_select_partition(texi_lower *lw, tex_stmt *in, tex_stmt **out);

int texi_pass_guarded_loads(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* A costly value that occurs more than once in a stored value computed
 * once, into a LET around the store (share_values.c), after guarded_loads. */
int texi_pass_share_values(texi_lower *lw, tex_stmt *in, tex_stmt **out);

/* LET bindings a pass collects for one statement (let_list.c; arena). */
typedef struct {
    tex_expr *var, *value;
} texi_let_binding;

typedef struct {
    texi_let_binding *items;
    int n, cap;
} texi_let_list;

/* A fresh variable `name` of type t, bound to value and appended to l;
 * NULL when out of memory (or value is NULL). */
tex_expr *texi_let_list_add(tex_ctx *ctx, texi_let_list *l, const char *name, tex_dtype t,
                            tex_expr *value, const char *pass);

/* s inside the LETs of l from index mark on (the last added innermost); l
 * is cut back to mark. NULL when out of memory. */
tex_stmt *texi_let_list_wrap(tex_ctx *ctx, texi_let_list *l, tex_stmt *s, int mark);
/* Guarded vectorized loops as chunks that are either unguarded vector
 * loops or lanes one by one (simd_tail.c), before guarded_loads. */
int texi_pass_simd_tail(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* Vectorized loops as vector statements (simd.c), last on the CPU. */
int texi_pass_simd(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* Memory a serial loop updates at fixed addresses kept in a local buffer
 * (registers) across it (promote.c), after simd. */
int texi_pass_promote(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* Unroll-and-jam of a serial loop whose iterations are independent chains
 * of updates (jam.c), last on the CPU. */
int texi_pass_jam(texi_lower *lw, tex_stmt *in, tex_stmt **out);
/* Unroll-and-jam of a serial loop into the serial loop that is its body,
 * when that loop's iterations each update their own elements (jam.c),
 * right before jam. */
int texi_pass_jam_outer(texi_lower *lw, tex_stmt *in, tex_stmt **out);

/* How pass simd sizes a target's vectors. */
typedef struct {
    int max_bytes;   /* widest vector in bytes; 0: the host CPU's native width */
    bool data_lanes; /* only loaded and stored elements count toward the width */
    bool reductions; /* a reduction into one element may become a horizontal one */
    bool masked;     /* a partial last chunk may be one predicated vector chunk */
} texi_simd_rules;

/* Pass simd under a target's rules (texi_pass_simd: the host CPU's). */
int texi_simd_rewrite(texi_lower *lw, const texi_simd_rules *rules, tex_stmt *in, tex_stmt **out);

/* Pass simd for CUDA kernels (simd_gpu.c), last in the GPU tail. */
int texi_pass_simd_gpu(texi_lower *lw, tex_stmt *in, tex_stmt **out);

/* Whether the iterations of the vectorized loop s are independent
 * (simd_safe.c): one index per stored buffer, linear in the loop variable,
 * and loads of stored buffers at that index only. */
bool texi_simd_safe(const tex_stmt *s);

/* What simd.c shares with simd_reduce.c. More chunks than this become a
 * serial loop over chunks. */
enum { TEXI_SIMD_MAX_UNROLLED_CHUNKS = 8 };
/* The widest lane type of vectorized loop's body in bytes (simd_lanes.c):
 * its loaded, stored and computed values that vary with the loop variable,
 * not integer arithmetic that only feeds addresses; every loaded and
 * stored element, nothing else, under data_only. */
int texi_simd_lane_bytes(const tex_stmt *loop, bool data_only);
/* The vector width of the host CPU for vectorized loop of extent n: the
 * native width over its body's widest lane type, halved until it is at
 * most n. */
int texi_simd_lanes(const tex_stmt *loop, int64_t n);
/* body over lanes [base, base + lanes) of loop variable var (a RAMP, or
 * base itself for one lane), every vector load and store predicated by
 * mask (bool, lanes lanes; NULL: none), with variable slot replaced by
 * slot_value too (slot NULL: none); NULL on failure (recorded in ctx). */
tex_stmt *texi_simd_widen(tex_ctx *ctx, const tex_expr *var, const tex_stmt *body, tex_expr *base,
                          int lanes, tex_expr *mask, const tex_expr *slot, tex_expr *slot_value);
/* Predicated chunks (simd_mask.c). Whether the host has masked vector
 * moves (AVX2 or AVX-512; elsewhere the lanes one by one are as fast). */
bool texi_simd_host_masks(void);
/* Whether straight-line body of a vectorized loop over var may run as a
 * predicated chunk (var NULL: a reduction's update, whose store index
 * becomes a partial accumulator's lanes): every loaded and stored element is
 * 32 or 64 bits wide (not bool, f16, bf16), every store's index reads var,
 * no load sits in a select arm or the right operand of && / || (a vector
 * evaluates both), and no integer is divided by anything but a nonzero
 * constant (a lane turned off computes on zeros), except, when
 * some_lane_on (the chunk runs only then), a division that does not read
 * var: the original computes it for the lanes that are on. */
bool texi_simd_maskable(const tex_expr *var, const tex_stmt *body, bool some_lane_on);
/* ramp(0, 1, lanes) < broadcast(count, lanes): the first count lanes
 * (count an integer expression; any value, none below 0). */
tex_expr *texi_simd_prefix_mask(tex_ctx *ctx, int lanes, tex_expr *count);
/* Lanes [base, base + lanes) of body over var of which the first count
 * run: body widened under texi_simd_prefix_mask. */
tex_stmt *texi_simd_masked_chunk(tex_ctx *ctx, const tex_expr *var, const tex_stmt *body,
                                 tex_expr *base, int lanes, tex_expr *count);
/* a + k, simplified; min + cv * width (a chunk loop's first lane). */
tex_expr *texi_simd_plus(tex_expr *a, int64_t k);
tex_expr *texi_simd_chunk_base(tex_expr *min, tex_expr *cv, int64_t width);
/* Vectorized loop s as a serial loop under ATTR vectorize_failed(why). */
tex_stmt *texi_simd_serial(tex_ctx *ctx, const tex_stmt *s, enum texi_vector_reason why);
/* Vectorized loop s of constant extent n whose iterations may depend on
 * each other (simd_reduce.c): a reduction into one element as vector
 * partial accumulators, else serial with the reason. */
tex_stmt *texi_simd_reduce(tex_ctx *ctx, const tex_stmt *s, int64_t n, bool strict_float);
/* The same for a vectorized loop of symbolic extent; texi_simd_is_reduction
 * says whether s is one such reduction (pass vectorize keeps those
 * vectorized). */
tex_stmt *texi_simd_reduce_symbolic(tex_ctx *ctx, const tex_stmt *s, bool strict_float);
bool texi_simd_is_reduction(const tex_stmt *s);

/* The pieces of the simd pass (simd.c) that simd_tail.c builds on. */

/* Whether s is straight-line: STOREs and LETs in SEQs. */
bool texi_simd_straight_line(const tex_stmt *s);

/* The statements for the lanes [base, base + lanes) of vector loop s. */
typedef tex_stmt *(*texi_simd_chunk_fn)(tex_ctx *ctx, const tex_stmt *s, tex_expr *base, int lanes,
                                        void *ud);

/* Loop s (vectorized, safe, constant extent n) cut into chunks of the
 * native vector width, each built by fn: the full chunks one after the
 * other when there are at most max_unrolled of them (8 at most), else a
 * serial loop over them, then the rest. NULL on failure (recorded). */
tex_stmt *texi_simd_chunks(tex_ctx *ctx, const tex_stmt *s, int64_t n, int max_unrolled,
                           texi_simd_chunk_fn fn, void *ud);

/* Integer a + k, simplified; NULL on ENOMEM. */
tex_expr *texi_simd_plus(tex_expr *a, int64_t k);

/* Why pass simd_tail (simd_tail.c) left the guarded body of vectorized
 * loop s as it is. */
enum texi_vector_reason texi_simd_guard_reason(const tex_stmt *s);

typedef int (*texi_pass_fn)(texi_lower *lw, tex_stmt *in, tex_stmt **out);

/* A pass's return: 0 with *out = r, or when r is NULL (a failed walk) the
 * error recorded in lw's context, TEX_ENOMEM when none is. */
int texi_pass_result(texi_lower *lw, tex_stmt *r, tex_stmt **out);

/* An atomic reduction update (atomic.c): STORE buf[index] = op(buf[index], delta). */
typedef struct {
    enum texi_reduce_op op;
    const tex_stmt *store;
    tex_expr *delta; /* the contribution, of buf's dtype */
} texi_atomic_update;

/* The parts of ATTR "atomic" s (schedule_ops.c's form, flattened). 0, or
 * TEX_EINTERNAL recorded in ctx when s is not of that form. */
int texi_atomic_parts(tex_ctx *ctx, const tex_stmt *s, texi_atomic_update *out);

/* Runs one pass the way the pipeline does: a failure without a message gets
 * "tex_lower: pass NAME failed"; the result is verified (debug builds,
 * TEX_VERIFY=1) and dumped when TEX_DUMP names it. Also used by the
 * target tails' steps (device_lower.c) and by tests running one pass. */
int texi_lower_apply(texi_lower *lw, const char *name, texi_pass_fn fn, tex_stmt *in,
                     tex_stmt **out);

/* tex_lower of s with every placeholder it holds and every output as tensor
 * parameters and every free variable of its stages (symbolic sizes and
 * scalars) as a VAR parameter: for callers that need to know whether, and
 * how, s lowers without choosing parameters (the automatic scheduler's
 * check). `call` names the caller in messages. NULL on error, recorded. */
tex_func *texi_lower_all(tex_schedule *s, const char *call, const char *name);

/* Runs schedule_ops and every pass, dumping after the passes named in
 * TEX_DUMP ("all" or a comma-separated list) to stderr. */
int texi_lower_run(texi_lower *lw, tex_stmt **out);

/* The targets with build-time passes (pipeline.c's `targets` column). */
enum texi_tail { TEXI_TAIL_CPU, TEXI_TAIL_GPU };

typedef struct texi_device_module texi_device_module;

/* Runs the passes listed for `target` on a copy of lowered function f
 * (arena of f->ctx): *copy is f with the resulting body; for TEXI_TAIL_GPU
 * the kernels, workspace and asserts go to *module (device.h). strict_float:
 * the build's "-strict-float" (the simd pass keeps float sums and products
 * in order). 0, or an error recorded in f->ctx ("tex_build: ...";
 * TEX_EUNAVAILABLE for a construct the GPU path does not support, naming it). */
int texi_lower_tail(const tex_func *f, enum texi_tail target, bool strict_float, tex_func *copy,
                    texi_device_module *module);

#endif
