/*
 * The lowering pipeline: the one place that lists the passes of every
 * target, in order (the table `passes` below).
 *
 *   schedule + params
 *        |
 *   schedule_ops      loop nest of every stage: REALIZE / PROVIDE / ACCESS, guards, ATTRs
 *        |
 *   entry_checks      runtime checks ("assert") hoisted to the top, quantified over loops
 *        |
 *   pad_bypass        GEMM tiles kept inside a padding's interior read its source; the
 *        |            whole tiles on the padding stay for -strict-float ("strict_only")
 *        |
 *   flatten           REALIZE -> ALLOCATE, PROVIDE -> STORE, ACCESS -> LOAD (flat, strided)
 *        |
 *   loop_partition    loops with prefix guards -> guard-free main part + guarded tail
 *        |
 *   simplify          expressions under loop ranges; decided IFs; loops of extent 0 / 1
 *        |
 *   unroll            small unrolled loops replicated; others: serial + "pragma_unroll"
 *        |
 *   vectorize         vector loops checked (innermost, constant extent) or made serial
 *        |
 *   storage_rewrite   allocations sunk to their uses; equal-size temporaries reused
 *        |
 *   inplace           a temporary whose last reader is an elementwise store into
 *        |            another buffer lives in that buffer's memory
 *        |
 *   remove_noops      empty loops / branches / sequences, unused allocations dropped
 *        |
 *   hfuse             disjoint nests bound to blockIdx.x (hyb SpMM's parts) -> one block
 *        |            loop, each part a range of blocks (one kernel)
 *        |
 *   hoist_search      binary searches a loop does not change: a LET around it
 *        |
 *   tex_func body     (target independent: tex_lower stops here)
 *        |
 *        +-- cpu (at tex_build)            +-- gpu (at tex_build)
 *   zero_skip      padding IFs kept (or    zero_skip         (as on the cpu)
 *                  whole tiles, strict)
 *   dead_stores    unread buffers' stores
 *                  dropped (a bypassed
 *                  padding), then
 *                  remove_noops again
 *   unstage_shared shared copies of
 *                  read-only inputs
 *                  dropped: readers read
 *                  the input
 *   thread_sync    barriers where threads  thread_allreduce  "cross_thread_reduction"
 *                  share memory                              -> "thread_allreduce"
 *   gpu_barriers   barriers between        double_buffer     two copies of shared tiles
 *                  thread-owned accesses   loop_unswitch     register tiles: a copy
 *                  dropped; owned shared                     without bounds checks for
 *                  buffers: registers                        tiles inside them
 *   gpu_to_cpu     barrier fission: thread
 *                  loops run serially      device_split      kernels, launch extents,
 *   gpu_blocks     block loops: one                          workspace, asserts
 *                  OpenMP parallel loop    thread_sync       per kernel: BARRIERs
 *   gpu_threads    innermost thread loop   simd              per kernel: vectorized
 *                  of each segment moved                     loops as vector statements
 *                  inward, vectorized                        (16 bytes at most)
 *   loop_fuse      adjacent independent    (device_check      launch limits, bounds of
 *                  parallel (serial) loops                   shared/local arrays: a
 *                  over one range: one loop                  check, not a pass)
 *   loop_reuse     a costly value a later
 *                  nest recomputes: stored
 *                  once, read back
 *   select_partition  vector loops (and
 *                  loops around them) split
 *                  where a select's condition
 *                  is decided
 *   simd_tail      guarded vector loops:
 *                  unguarded vector chunks,
 *                  predicated ones, or
 *                  lanes one by one
 *   loop_unswitch  (as on the gpu) a
 *                  register tile's loops
 *                  without the guards of
 *                  its partial vectors
 *   guarded_loads  loads in select arms
 *                  made unconditional
 *   share_values   a costly value that
 *                  occurs twice in a stored
 *                  value computed once
 *   simd           vectorized loops as
 *                  vector statements
 *   promote        values updated at fixed
 *                  addresses across a loop
 *                  kept in registers
 *   jam_outer      a loop of updates to
 *                  elements of each inner
 *                  iteration's own: unroll-
 *                  and-jam into that loop
 *   jam            rows of independent update
 *                  chains jammed: unroll-and-
 *                  jam of a serial loop
 *
 * A tex_func is lowered once and may be built for several targets, so the
 * rows for a target (the `targets` column) run when a backend asks for its
 * tail (texi_lower_tail), on a copy of the function. guarded_loads is
 * CPU-only: the interpreter evaluates selects lazily and device_split
 * treats top-level LETs as host values. simd runs last on both targets:
 * the passes before it (thread_sync, double_buffer, gpu_to_cpu) analyse
 * scalar loops, and a vectorized body is straight-line, so no barrier falls
 * between its lanes; on the GPU it runs per kernel, after device_split,
 * under CUDA's rules (simd_gpu.c), and the CUDA printer prints its vector
 * statements (src/backend_cuda/codegen_cuda_vector.c).
 *
 * After ScheduleOps and after each pass the verifier (verify.c) runs in
 * debug builds (NDEBUG undefined) or when TEX_VERIFY=1; a failure is
 * TEX_EINTERNAL naming the pass. TEX_DUMP=all, or a comma-separated list of
 * names from the table (schedule_ops included), prints "# after NAME" and the
 * AST to stderr after those passes. This file is the only one in src/lower
 * that reads the environment or prints; the passes only see texi_lower.
 */
#include "lower/device.h"
#include "lower/verify.h"
#include "util/dump.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which functions a row runs on: every one at tex_lower, or the copy a
 * backend builds for its target (texi_lower_tail). */
enum { AT_LOWER = -1, FOR_CPU = TEXI_TAIL_CPU, FOR_GPU = TEXI_TAIL_GPU };

/* What a row applies to: the function's body, the body split into the
 * device module (device_split), or each kernel of that module. */
enum pass_scope { ON_BODY, SPLIT, ON_KERNELS };

static const struct {
    const char *name;
    int targets; /* AT_LOWER, FOR_CPU, FOR_GPU */
    enum pass_scope scope;
    texi_pass_fn fn; /* NULL for SPLIT */
} passes[] = {
    {"entry_checks", AT_LOWER, ON_BODY, texi_pass_entry_checks},
    {"pad_bypass", AT_LOWER, ON_BODY, texi_pass_pad_bypass},
    {"flatten", AT_LOWER, ON_BODY, texi_pass_flatten},
    {"loop_partition", AT_LOWER, ON_BODY, texi_pass_loop_partition},
    {"simplify", AT_LOWER, ON_BODY, texi_pass_simplify},
    {"unroll", AT_LOWER, ON_BODY, texi_pass_unroll},
    {"vectorize", AT_LOWER, ON_BODY, texi_pass_vectorize},
    {"storage_rewrite", AT_LOWER, ON_BODY, texi_pass_storage_rewrite},
    {"inplace", AT_LOWER, ON_BODY, texi_pass_inplace},
    {"remove_noops", AT_LOWER, ON_BODY, texi_pass_remove_noops},
    {"hfuse", AT_LOWER, ON_BODY, texi_pass_hfuse},
    {"hoist_search", AT_LOWER, ON_BODY, texi_pass_hoist_search},
    {"zero_skip", FOR_CPU, ON_BODY, texi_pass_zero_skip},
    {"dead_stores", FOR_CPU, ON_BODY, texi_pass_dead_stores},
    {"remove_noops", FOR_CPU, ON_BODY, texi_pass_remove_noops},
    {"unstage_shared", FOR_CPU, ON_BODY, texi_pass_unstage_shared},
    {"thread_sync", FOR_CPU, ON_BODY, texi_pass_thread_sync},
    {"gpu_barriers", FOR_CPU, ON_BODY, texi_pass_gpu_barriers},
    {"gpu_to_cpu", FOR_CPU, ON_BODY, texi_pass_gpu_to_cpu},
    {"gpu_blocks", FOR_CPU, ON_BODY, texi_pass_gpu_blocks},
    {"gpu_threads", FOR_CPU, ON_BODY, texi_pass_gpu_threads},
    {"loop_fuse", FOR_CPU, ON_BODY, texi_pass_loop_fuse},
    {"uneven_parallel", FOR_CPU, ON_BODY, texi_pass_uneven_parallel},
    {"loop_reuse", FOR_CPU, ON_BODY, texi_pass_loop_reuse},
    {"select_partition", FOR_CPU, ON_BODY, texi_pass_select_partition},
    {"simd_tail", FOR_CPU, ON_BODY, texi_pass_simd_tail},
    {"loop_unswitch", FOR_CPU, ON_BODY, texi_pass_loop_unswitch},
    {"guarded_loads", FOR_CPU, ON_BODY, texi_pass_guarded_loads},
    {"share_values", FOR_CPU, ON_BODY, texi_pass_share_values},
    {"simd", FOR_CPU, ON_BODY, texi_pass_simd},
    {"promote", FOR_CPU, ON_BODY, texi_pass_promote},
    {"jam_outer", FOR_CPU, ON_BODY, texi_pass_jam_outer},
    {"jam", FOR_CPU, ON_BODY, texi_pass_jam},
    {"zero_skip", FOR_GPU, ON_BODY, texi_pass_zero_skip},
    {"drop_hints", FOR_GPU, ON_BODY, texi_pass_drop_hints},
    {"thread_allreduce", FOR_GPU, ON_BODY, texi_pass_thread_allreduce},
    {"double_buffer", FOR_GPU, ON_BODY, texi_pass_double_buffer},
    {"loop_unswitch", FOR_GPU, ON_BODY, texi_pass_loop_unswitch},
    {"device_split", FOR_GPU, SPLIT, NULL},
    {"thread_sync", FOR_GPU, ON_KERNELS, texi_pass_thread_sync},
    {"simd", FOR_GPU, ON_KERNELS, texi_pass_simd_gpu},
};

#define N_PASSES (sizeof passes / sizeof *passes)

static bool verify_wanted(void)
{
#ifdef NDEBUG
    const char *v = getenv("TEX_VERIFY");
    return v && strcmp(v, "1") == 0;
#else
    return true;
#endif
}

static int after_pass(texi_lower *lw, const char *name, tex_stmt *s)
{
    if (verify_wanted())
        TEXI_TRY(texi_verify(lw, s, name));
    if (!(lw->func && lw->func->quiet) && texi_dump_wanted(name)) {
        char *text = texi_stmt_str(s);
        fprintf(stderr, "# after %s\n%s", name, text ? text : "(out of memory)\n");
        free(text);
    }
    return 0;
}

/* A failing step must leave a message in the context. */
static int failed(texi_lower *lw, const char *name, int rc)
{
    if (tex_errcode(lw->ctx) == 0)
        texi_error(lw->ctx, rc, "tex_lower: pass %s failed", name);
    return rc;
}

int texi_lower_run(texi_lower *lw, tex_stmt **out)
{
    tex_stmt *s = NULL;
    int rc = texi_schedule_ops(lw, &s);
    if (rc < 0 || !s)
        return failed(lw, "schedule_ops", rc < 0 ? rc : TEX_EINTERNAL);
    TEXI_TRY(after_pass(lw, "schedule_ops", s));
    for (size_t i = 0; i < N_PASSES; i++)
        if (passes[i].targets == AT_LOWER)
            TEXI_TRY(texi_lower_apply(lw, passes[i].name, passes[i].fn, s, &s));
    *out = s;
    return 0;
}

int texi_lower_tail(const tex_func *f, enum texi_tail target, bool strict_float, tex_func *copy,
                    texi_device_module *module)
{
    if (!f || !f->ctx || (target == TEXI_TAIL_GPU && !module))
        return TEX_EINTERNAL;
    if (!f->body)
        return texi_error(f->ctx, TEX_EINTERNAL, "tex_build: function '%s' has no body", f->name);
    *copy = *f;
    if (module)
        memset(module, 0, sizeof *module);
    texi_lower lw = {.ctx = f->ctx, .sch = NULL, .func = copy, .strict_float = strict_float};
    for (size_t i = 0; i < N_PASSES; i++) {
        if (passes[i].targets != (int)target)
            continue;
        if (passes[i].scope == ON_BODY)
            TEXI_TRY(texi_lower_apply(&lw, passes[i].name, passes[i].fn, copy->body, &copy->body));
        else if (passes[i].scope == SPLIT)
            TEXI_TRY(texi_device_split_step(&lw, passes[i].name, copy->body, module));
        else
            for (int k = 0; k < module->n_kernels; k++)
                TEXI_TRY(texi_device_kernel_step(&lw, passes[i].name, passes[i].fn, module,
                                                 &module->kernels[k]));
    }
    return target == TEXI_TAIL_GPU ? texi_device_check(&lw, module) : 0;
}

int texi_pass_result(texi_lower *lw, tex_stmt *r, tex_stmt **out)
{
    if (!r)
        return tex_errcode(lw->ctx) ? tex_errcode(lw->ctx) : TEX_ENOMEM;
    *out = r;
    return 0;
}

int texi_lower_apply(texi_lower *lw, const char *name, texi_pass_fn fn, tex_stmt *in,
                     tex_stmt **out)
{
    tex_stmt *next = NULL;
    int rc = fn(lw, in, &next);
    if (rc < 0 || !next)
        return failed(lw, name, rc < 0 ? rc : TEX_EINTERNAL);
    TEXI_TRY(after_pass(lw, name, next));
    *out = next;
    return 0;
}
