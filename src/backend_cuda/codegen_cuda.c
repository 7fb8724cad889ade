/*
 * CUDA C source of a device module (texi_cuda_emit): the CUDA target of the
 * C-family printer (src/codegen_c), which prints expressions, the plain
 * statements, parameters and intrinsic calls; CUDA's types and prelude are
 * in codegen_cuda_types.c, vector statements in codegen_cuda_vector.c,
 * the block-wide allreduce in codegen_cuda_allreduce.c, atomics in
 * codegen_cuda_atomic.c, cp.async fetches in codegen_cuda_async.c. The
 * split into kernels, their launch extents, the workspace and the asserts
 * come from lowering (src/lower/device_split.c); this file prints.
 *
 * Source layout: a comment with the launch plan (per kernel, in order:
 * grid and block as expressions of the parameters and sizes; the workspace
 * buffers; the runtime checks), includes, the device helpers, the
 * intrinsics' sources, then one `extern "C" __global__` function per
 * m->kernels[i], named m->kernels[i].name. __launch_bounds__ is the product
 * of the block extents when they are constants (omitted otherwise).
 *
 * Every kernel takes the entry point's arguments of backend.h's ABI: one
 * `T *__restrict__` per tensor parameter (const when the function never
 * stores to it; f16 as __half, bf16 as __nv_bfloat16, bool as uint8_t),
 * int64_t per size VAR parameter, the storage type of its dtype per other
 * VAR parameter (float alpha, int8_t lo, __half h, uint8_t flag), then
 * int64_t per size variable that is not a parameter. A scalar whose argument
 * type is not its value type (a size of another integer type, a half, a
 * bool) arrives as NAME_arg and is converted into a local when the kernel
 * uses it (`(void)NAME;` for a parameter it does not use). Then one
 * `T *__restrict__` per workspace buffer
 * (m->workspace order), referenced by its buffer key like a parameter.
 *
 * Statements:
 *   - A loop bound to a thread tag is its index (`const T i = min +
 *     (T)threadIdx.x;`), guarded by `threadIdx.x < extent` when its extent
 *     is not the launch extent. Rule for barriers: when the loop's body
 *     holds a BARRIER or an ATTR "thread_allreduce" (which synchronizes),
 *     the guard is not put around the body, since every thread of the
 *     block must reach each __syncthreads(); the guard is "deferred"
 *     instead: the statements that hold a barrier/allreduce are entered
 *     by every thread (their structure: sequences, serial loops, LETs,
 *     allocations, IFs, ATTRs), and each statement without one is wrapped
 *     in the guard. The allreduce sees the deferred guards through
 *     texi_cu_active_cond. Virtual-thread loops (TEX_VTHREAD) are serial.
 *   - Vector STOREs and LETs (pass simd, run per kernel) are printed lane
 *     by lane, aligned dense accesses as float4/int2 ... loads and stores
 *     (codegen_cuda_vector.c). Vectorized loops simd left (a body with a
 *     guard), serial and unrolled (#pragma unroll) loops are plain for loops.
 *   - BARRIER is __syncthreads(). ALLOCATE is allocated at its constant
 *     size, or a symbolic one's constant upper bound (over the enclosing
 *     loops, sizes taken in [0, 2^31); at most 48 KiB, which the GPU tail's
 *     device_check made sure of, as of the launch limits and of no global
 *     buffer around bound loops): shared scope is a __shared__ array, local
 *     scope a per-thread array, global scope a per-thread array too (top-level
 *     global temporaries are workspace, device_split.c).
 *   - Statements outside every thread loop of a kernel run in every thread
 *     of the block (as in TVM): lowering must make that harmless.
 * It does not split kernels, insert barriers, or decide what is reduced
 * across threads: lowering does.
 */
#include "backend_cuda/codegen_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tag_index[TEXI_N_LAUNCH_TAGS] = {
    "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};

/* ----------------------------------------------------------- thread loops */

/* "(T)threadIdx.x < extent" of a guarded thread loop. */
static void guard_cond(texi_cu *g, texi_sb *sb, const tex_stmt *loop)
{
    const char *vt = texi_cu_value_type(loop->u.loop.var->dtype);
    texi_sb_printf(sb, "(%s)%s < ", vt, tag_index[loop->u.loop.thread_tag]);
    texi_cp_expr(&g->p, sb, loop->u.loop.extent, TEXI_CP_P_REL + 1, true);
}

void texi_cu_active_cond(texi_cu *g, texi_sb *sb)
{
    if (g->n_deferred == 0) {
        texi_sb_puts(sb, "true");
        return;
    }
    texi_sb_putc(sb, '(');
    for (int i = 0; i < g->n_deferred; i++) {
        texi_sb_puts(sb, i ? " && " : "");
        guard_cond(g, sb, g->deferred[i]);
    }
    texi_sb_putc(sb, ')');
}

/* A statement without barriers under the deferred guards. */
static void emit_under_deferred(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    texi_cp_indent(&g->p, sb);
    texi_sb_puts(sb, "if ");
    texi_cu_active_cond(g, sb);
    texi_sb_puts(sb, " {\n");
    g->guard_applied = true;
    texi_cp_block(&g->p, sb, s);
    g->guard_applied = false;
    texi_cp_line(&g->p, sb, "}");
}

/* A loop bound to a thread tag: its index, guarded (or with a deferred
 * guard) when its extent is not the launch extent. */
static void emit_thread_loop(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    texi_cp *p = &g->p;
    int tag = s->u.loop.thread_tag;
    const char *vt = texi_cu_value_type(s->u.loop.var->dtype);
    texi_cp_line(p, sb, "{");
    p->indent++;
    if (texi_stmt_uses_var(p->ctx, s->u.loop.body, s->u.loop.var)) {
        texi_cp_indent(p, sb);
        texi_sb_printf(sb, "const %s %s = ", vt,
                       texi_cp_bind(p, s->u.loop.var, s->u.loop.var->u.var.name));
        texi_cp_expr(p, sb, s->u.loop.min, TEXI_CP_P_ADD, true);
        texi_sb_printf(sb, " + (%s)%s;\n", vt, tag_index[tag]);
    }
    bool guard = !texi_expr_equal(s->u.loop.extent, g->launch[tag]);
    bool defer = guard && texi_stmt_has_sync(s->u.loop.body);
    if (defer && g->n_deferred == TEXI_CU_MAX_DEFERRED) {
        texi_cp_fail(p, TEX_EUNAVAILABLE, "more than %d nested guarded thread loops hold barriers",
                     TEXI_CU_MAX_DEFERRED);
        return;
    }
    if (guard && !defer) {
        texi_cp_indent(p, sb);
        texi_sb_puts(sb, "if (");
        guard_cond(g, sb, s);
        texi_sb_puts(sb, ") {\n");
        p->indent++;
    }
    if (defer)
        g->deferred[g->n_deferred++] = s;
    bool ranged = texi_cp_push_range(p, s->u.loop.var, s->u.loop.min, s->u.loop.extent);
    g->thread_depth++;
    texi_cp_stmt(p, sb, s->u.loop.body);
    g->thread_depth--;
    p->n_ranges -= ranged;
    g->n_deferred -= defer;
    if (guard && !defer) {
        p->indent--;
        texi_cp_line(p, sb, "}");
    }
    p->indent--;
    texi_cp_line(p, sb, "}");
}

/* Thread loops are indices, pipelined loops print their fetches
 * asynchronously; false leaves a plain loop to the shared printer. */
static bool emit_for(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    if (s->u.loop.for_kind == TEXI_FOR_THREAD && s->u.loop.thread_tag >= 0 &&
        s->u.loop.thread_tag < TEXI_N_LAUNCH_TAGS) {
        emit_thread_loop(g, sb, s);
        return true;
    }
    if (s->u.loop.for_kind == TEXI_FOR_UNROLLED)
        texi_cp_line(&g->p, sb, "#pragma unroll");
    return texi_cu_async_loop(g, sb, s);
}

/* ----------------------------------------------------------- allocations */

/* A __shared__ or per-thread array (file comment); a symbolic size is
 * allocated at its upper bound (texi_device_array_elems). */
static void emit_allocate(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    texi_cp *p = &g->p;
    const texi_buffer *b = s->u.alloc.buf;
    int64_t n = texi_device_array_elems(p->f, b, p->n_ranges, p->ranges);
    if (n < 0) { /* device_check refuses such a buffer first */
        texi_cp_fail(p, TEX_EINTERNAL, "buffer '%s' has no bound", b->name);
        return;
    }
    const char *name = texi_cp_bind(p, texi_buffer_key(b), b->name);
    texi_cp_line(p, sb, "{");
    p->indent++;
    texi_cp_line(p, sb, "%s%s %s[%lld];",
                 b->scope == TEXI_SCOPE_SHARED ? "__shared__ __align__(16) " : "",
                 texi_cu_storage_type(b->dtype), name, (long long)(n ? n : 1));
    texi_cp_stmt(p, sb, s->u.alloc.body);
    p->indent--;
    texi_cp_line(p, sb, "}");
}

/* ------------------------------------------------------------ statements */

/* The ATTRs CUDA prints itself; false for the others (their body is printed). */
static bool emit_attr(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    switch (s->u.attr.id) {
    case TEXI_ATTR_THREAD_ALLREDUCE:
        texi_cu_emit_allreduce(g, sb, s);
        return true;
    case TEXI_ATTR_ASSERT:
        texi_cp_fail(&g->p, TEX_EINTERNAL, "a runtime check ('assert') was left inside a kernel");
        return true;
    case TEXI_ATTR_ATOMIC:
        texi_cu_emit_atomic(g, sb, s);
        return true;
    case TEXI_ATTR_DOUBLE_BUFFER_WRITE:
        if (s != g->async_fetch)
            return false;
        g->in_async_fetch = true;
        texi_cp_stmt(&g->p, sb, s->u.attr.body);
        g->in_async_fetch = false;
        return true;
    default:
        return false;
    }
}

bool texi_cu_stmt(texi_cp *p, texi_sb *sb, const tex_stmt *s)
{
    texi_cu *g = (texi_cu *)p;
    if (g->n_deferred > 0 && !g->guard_applied && !texi_stmt_has_sync(s)) {
        emit_under_deferred(g, sb, s);
        return true;
    }
    switch (s->kind) {
    case TEXI_STMT_FOR:
        return emit_for(g, sb, s);
    case TEXI_STMT_ALLOCATE:
        emit_allocate(g, sb, s);
        return true;
    case TEXI_STMT_ATTR:
        return emit_attr(g, sb, s);
    case TEXI_STMT_BARRIER:
        if (s == g->async_barrier || g->in_async_fetch)
            texi_cp_line(p, sb, "tex_cp_async_wait();");
        texi_cp_line(p, sb, "__syncthreads();");
        return true;
    case TEXI_STMT_STORE:
        if (texi_cu_async_store(g, sb, s))
            return true;
        return texi_cu_emit_vector(g, sb, s);
    case TEXI_STMT_LET:
        return texi_cu_emit_vector(g, sb, s);
    default:
        return false;
    }
}

/* ---------------------------------------------------------------- kernels */

/* The parameters (texi_cp_params), then the workspace buffers. */
static void parameters(texi_cu *g, texi_sb *sb)
{
    int n = texi_cp_params(&g->p, sb);
    for (int i = 0; i < g->m->n_workspace; i++, n++) {
        const texi_buffer *b = g->m->workspace[i];
        texi_sb_printf(sb, "%s%s *__restrict__ %s", n ? ", " : "", texi_cu_storage_type(b->dtype),
                       texi_cp_bind(&g->p, texi_buffer_key(b), b->name));
    }
}

/* Appends e (or "1" for NULL) printed on one line for the plan comment. */
static void plan_expr(texi_sb *plan, const tex_expr *e)
{
    texi_sb tmp;
    texi_sb_init(&tmp);
    if (e)
        texi_expr_print(&tmp, e);
    texi_cp_comment_text(plan, tmp.buf && e ? tmp.buf : "1");
    texi_sb_fini(&tmp);
}

/* The launch-plan comment of the module. */
static void plan_comment(const texi_device_module *m, texi_sb *plan)
{
    for (int k = 0; k < m->n_kernels; k++) {
        const texi_device_kernel *kn = &m->kernels[k];
        bool bound = false;
        texi_sb_printf(plan, " *   %s: ", kn->name);
        for (int t = 0; t < TEXI_N_LAUNCH_TAGS; t++) {
            texi_sb_puts(plan, t == 0 ? "grid (" : t == 3 ? "), block (" : ", ");
            plan_expr(plan, kn->extent[t]);
            bound |= kn->extent[t] != NULL;
        }
        texi_sb_puts(plan, bound ? ")\n" : ")  (no thread binding: one thread)\n");
    }
    for (int i = 0; i < m->n_workspace; i++) {
        const texi_buffer *b = m->workspace[i];
        texi_sb_printf(plan, " * Workspace %s: %s[", b->name, tex_dtype_name(b->dtype));
        for (int d = 0; d < b->ndim; d++) {
            texi_sb_puts(plan, d ? ", " : "");
            plan_expr(plan, b->shape[d]);
        }
        texi_sb_puts(plan, "] (global, zero-filled per call)\n");
    }
    for (int i = 0; i < m->n_asserts; i++) {
        texi_sb_puts(plan, " * Checked before launching: ");
        plan_expr(plan, m->asserts[i]);
        texi_sb_putc(plan, '\n');
    }
}

/* Kernel k of the module: its body printed first, so that the prologue
 * converts only the scalars it uses. */
static void emit_kernel(texi_cu *g, texi_sb *out, int k, const char *params)
{
    texi_cp *p = &g->p;
    const texi_device_kernel *kn = &g->m->kernels[k];
    memcpy(g->launch, kn->extent, sizeof g->launch);
    int64_t threads = 1, e;
    for (int t = 3; t < TEXI_N_LAUNCH_TAGS; t++)
        if (g->launch[t])
            threads = texi_expr_is_int_const(g->launch[t], &e) && threads > 0 && e > 0 &&
                              threads <= INT32_MAX / e
                          ? threads * e
                          : -1;
    texi_sb_puts(out, "extern \"C\" __global__ void ");
    if (threads > 0)
        texi_sb_printf(out, "__launch_bounds__(%lld) ", (long long)threads);
    texi_sb_printf(out, "%s(%s)\n{\n", kn->name, params);
    texi_sb body;
    texi_sb_init(&body);
    texi_cp_mark_unused(p);
    p->indent = 1;
    p->n_ranges = 0;
    texi_cp_stmt(p, &body, kn->body);
    texi_cp_param_prologue(p, out);
    texi_sb_puts(out, body.buf ? body.buf : "");
    if (body.oom)
        texi_cp_fail(p, TEX_ENOMEM, "out of memory (source text)");
    texi_sb_fini(&body);
    texi_sb_puts(out, "}\n\n");
}

static void assemble(texi_cu *g, texi_sb *out, const char *plan, const char *kernels)
{
    texi_sb_printf(out,
                   "/*\n * Generated by tex: function '%s' (CUDA C).\n * Launch plan (in order, "
                   "one stream; grid and block per kernel):\n%s */\n",
                   g->p.f->name, plan);
    texi_sb_puts(out, texi_cu_prelude);
    texi_cp_helpers(&texi_cu_target, out, g->p.helpers);
    if (g->uses_allreduce)
        texi_sb_puts(out, texi_cu_allreduce_helpers);
    if (g->uses_atomic_cas)
        texi_sb_puts(out, texi_cu_atomic_helpers);
    if (g->uses_cp_async)
        texi_sb_puts(out, texi_cu_async_helpers);
    texi_cp_intrin_sources(&g->p, out);
    texi_sb_puts(out, kernels);
}

char *texi_cuda_emit(const tex_func *f, const texi_device_module *m)
{
    if (!f || !f->ctx || !f->body || !m)
        return NULL;
    texi_cu g = {.m = m};
    texi_cp_init(&g.p, f, &texi_cu_target);
    texi_sb params, plan, kernels, out;
    texi_sb_init(&params);
    texi_sb_init(&plan);
    texi_sb_init(&kernels);
    texi_sb_init(&out);
    parameters(&g, &params);
    plan_comment(m, &plan);
    for (int k = 0; k < m->n_kernels && !g.p.rc; k++)
        emit_kernel(&g, &kernels, k, params.buf ? params.buf : "");
    bool oom = params.oom || plan.oom || kernels.oom;
    if (!g.p.rc && !oom)
        assemble(&g, &out, plan.buf ? plan.buf : "", kernels.buf ? kernels.buf : "");
    char *text = g.p.rc ? NULL : texi_sb_take(&out);
    if (!g.p.rc && !text)
        texi_error(f->ctx, TEX_ENOMEM, "tex_build: function '%s': out of memory (source text)",
                   f->name);
    texi_sb_fini(&params);
    texi_sb_fini(&plan);
    texi_sb_fini(&kernels);
    texi_sb_fini(&out);
    texi_cp_fini(&g.p);
    return text;
}
