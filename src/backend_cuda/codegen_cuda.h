/*
 * The CUDA emitter's state, private to codegen_cuda.c (statements,
 * kernels, launch plan), codegen_cuda_types.c (the CUDA target of the
 * C-family printer: types, conversions, prelude), codegen_cuda_vector.c
 * (vector statements: float2/float4 accesses), codegen_cuda_allreduce.c (block-wide allreduce),
 * codegen_cuda_atomic.c (atomic updates) and codegen_cuda_async.c (cp.async fetches).
 */
#ifndef TEX_BACKEND_CUDA_CODEGEN_CUDA_H
#define TEX_BACKEND_CUDA_CODEGEN_CUDA_H

#include "backend_cuda/cuda.h"
#include "codegen_c/cprint.h"

#define TEXI_CU_MAX_DEFERRED 8 /* thread loops with a deferred guard */
#define TEXI_CU_MAX_VLOADS 16  /* vector loads of one vector statement */

/* The CUDA printer's state: the shared C-family printer, then CUDA's own. */
typedef struct {
    texi_cp p; /* first: the hooks receive &g->p */
    const texi_device_module *m;
    tex_expr *launch[TEXI_N_LAUNCH_TAGS]; /* the current kernel's extent per thread tag, or NULL */
    int thread_depth;                     /* enclosing thread-bound loops */
    /* Thread loops whose extent is below the launch extent and whose body
     * holds a barrier or an allreduce: their guard is not put around the
     * whole body but around each statement without one (codegen_cuda.c). */
    int n_deferred;
    const tex_stmt *deferred[TEXI_CU_MAX_DEFERRED];
    bool guard_applied; /* inside such a per-statement guard */
    /* The vector loads of the vector statement being emitted lane by lane
     * (codegen_cuda_vector.c): each listed LOAD node prints as component
     * p.lane of its vector local. */
    int n_vloads;
    const tex_expr *vload[TEXI_CU_MAX_VLOADS];
    const char *vload_name[TEXI_CU_MAX_VLOADS];
    bool uses_allreduce;  /* some kernel emitted an allreduce: its helpers are needed */
    bool uses_atomic_cas; /* some kernel updates atomically through a CAS loop */
    /* Asynchronous fetches (codegen_cuda_async.c): the barrier and the
     * fetch of the pipelined loop being printed, whether its fetch is being
     * printed, and whether any kernel copies asynchronously. */
    const tex_stmt *async_barrier, *async_fetch;
    bool in_async_fetch;
    bool uses_cp_async;
} texi_cu;

/* The CUDA target of the C-family printer (codegen_cuda_types.c). */
extern const texi_cp_target texi_cu_target;

/* The CUDA element type of storage of dtype t (f16: __half, bf16:
 * __nv_bfloat16, bool: uint8_t). */
const char *texi_cu_storage_type(tex_dtype t);

/* The CUDA type of a value of dtype t (f16/bf16 values are float, bool bool). */
const char *texi_cu_value_type(tex_dtype t);

/* The text every source starts with after its comment: includes, and under
 * NVRTC (no system headers) the <stdint.h> types and the <stdint.h> and
 * <math.h> macros the printer uses (INT64_C, INT64_MIN, INFINITY, NAN ...). */
extern const char texi_cu_prelude[];

/* The statements CUDA prints itself (the printer's stmt hook, codegen_cuda.c). */
bool texi_cu_stmt(texi_cp *p, texi_sb *sb, const tex_stmt *s);

/* A vector STORE or LET (pass simd's, codegen_cuda_vector.c): lane by lane,
 * with float4/int2 ... accesses where aligned; false for other statements. */
bool texi_cu_emit_vector(texi_cu *g, texi_sb *sb, const tex_stmt *s);

/* The expressions CUDA prints itself: a lane of a vector statement's vector
 * load (the printer's expr hook). */
bool texi_cu_expr_lane(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec);

/* Appends the condition under which the current thread takes part in
 * the enclosing deferred-guard thread loops (g->deferred: loops narrower
 * than the launch whose bodies hold barriers or allreduces), e.g.
 * "((int64_t)threadIdx.x < 100)", or "true" when there are none.
 * The statements around a barrier/allreduce are emitted for every thread
 * of the block; an allreduce must let inactive threads contribute the
 * identity (texi_cu_emit_allreduce). */
void texi_cu_active_cond(texi_cu *g, texi_sb *sb);

/* ATTR "thread_allreduce" (codegen_cuda_allreduce.c): the block-wide
 * allreduce over the threads of one thread tag. Called for every thread of
 * the block (never under a thread-divergent guard); see texi_cu_active_cond. */
void texi_cu_emit_allreduce(texi_cu *g, texi_sb *sb, const tex_stmt *attr);

/* Device helpers of the allreduce (warp shuffles + shared step), appended
 * after the printer's helpers when g->uses_allreduce. */
extern const char texi_cu_allreduce_helpers[];

/* ATTR "atomic" (codegen_cuda_atomic.c): one atomic update. */
void texi_cu_emit_atomic(texi_cu *g, texi_sb *sb, const tex_stmt *attr);

/* Device helpers of the CAS-loop updates, appended when g->uses_atomic_cas. */
extern const char texi_cu_atomic_helpers[];

/* A serial loop pipelined by pass double_buffer, printed with cp.async
 * fetches (codegen_cuda_async.c); false, printing nothing, for any other
 * loop. */
bool texi_cu_async_loop(texi_cu *g, texi_sb *sb, const tex_stmt *loop);

/* A STORE of the fetch being printed as tex_cp_async4; false when it stays
 * a plain store. */
bool texi_cu_async_store(texi_cu *g, texi_sb *sb, const tex_stmt *s);

/* The cp.async helpers, appended when g->uses_cp_async. */
extern const char texi_cu_async_helpers[];

#endif
