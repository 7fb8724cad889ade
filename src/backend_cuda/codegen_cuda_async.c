/*
 * Asynchronous fetches in the CUDA emitter (sm_80's cp.async): the copy of
 * a double-buffered tile from global to shared memory proceeds while the
 * thread computes, without passing through a register.
 *
 * A pipelined loop of pass double_buffer whose body starts with the
 * barrier thread_sync puts there,
 *     for (k ...) { BARRIER; ATTR "double_buffer_write" { FETCH(k + 1) } COMPUTE(k) }
 * (or with the barrier first inside the ATTR),
 * prints each f32 STORE S[e] = G[g] of FETCH (S shared, G global, one lane
 * each) as tex_cp_async4(&S[e], &G[g]), and `tex_cp_async_wait();` (the
 * thread's copies have landed) before that barrier, before any barrier
 * inside FETCH, and after the loop. A
 * copy issued in iteration k is thus complete before the barrier of
 * iteration k + 1, the one that published the plain stores it replaces, and
 * the half it fills is not read before that barrier (the pass's
 * invariant), so every read sees what it saw before. Other fetch stores
 * (f16, a tail's select, a vector store) stay plain; waiting for none is
 * free. Before sm_80, and in the emulation harness, the helpers are a plain
 * copy and nothing.
 */
#include "backend_cuda/codegen_cuda.h"

const char texi_cu_async_helpers[] =
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(TEX_CUDA_EMULATION)\n"
    "static __device__ __forceinline__ void tex_cp_async4(float *dst, const float *src)\n"
    "{\n"
    "    asm volatile(\"cp.async.ca.shared.global [%0], [%1], 4;\\n\" ::\"r\"(\n"
    "                     (unsigned)__cvta_generic_to_shared(dst)), \"l\"(src) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tex_cp_async_wait(void)\n"
    "{\n"
    "    asm volatile(\"cp.async.wait_all;\\n\" ::: \"memory\");\n"
    "}\n"
    "#else\n"
    "static __device__ __forceinline__ void tex_cp_async4(float *dst, const float *src) { *dst = "
    "*src; }\n"
    "static __device__ __forceinline__ void tex_cp_async_wait(void) {}\n"
    "#endif\n";

/* Whether s is a pipelined loop body (file comment): then *fetch is its
 * ATTR "double_buffer_write" and *barrier the barrier that starts s
 * (before the ATTR or first in it). */
static bool pipelined_fetch(const tex_stmt *s, const tex_stmt **fetch, const tex_stmt **barrier)
{
    if (s->kind != TEXI_STMT_SEQ || s->u.seq.n < 2)
        return false;
    const tex_stmt *first = s->u.seq.items[0];
    if (texi_attr_is(first, TEXI_ATTR_DOUBLE_BUFFER_WRITE)) {
        const tex_stmt *b = first->u.attr.body;
        *fetch = first;
        *barrier = b->kind == TEXI_STMT_SEQ && b->u.seq.n > 0 ? b->u.seq.items[0] : b;
        return (*barrier)->kind == TEXI_STMT_BARRIER;
    }
    *barrier = first;
    for (int i = 1; i < s->u.seq.n && first->kind == TEXI_STMT_BARRIER; i++)
        if (texi_attr_is(s->u.seq.items[i], TEXI_ATTR_DOUBLE_BUFFER_WRITE)) {
            *fetch = s->u.seq.items[i];
            return true;
        }
    return false;
}

bool texi_cu_async_loop(texi_cu *g, texi_sb *sb, const tex_stmt *loop)
{
    const tex_stmt *fetch, *barrier;
    if (!pipelined_fetch(loop->u.loop.body, &fetch, &barrier))
        return false;
    const tex_stmt *outer_barrier = g->async_barrier, *outer_fetch = g->async_fetch;
    g->async_barrier = barrier;
    g->async_fetch = fetch;
    g->uses_cp_async = true;
    texi_cp_loop(&g->p, sb, loop);
    texi_cp_line(&g->p, sb, "tex_cp_async_wait();");
    g->async_barrier = outer_barrier;
    g->async_fetch = outer_fetch;
    return true;
}

bool texi_cu_async_store(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    const tex_expr *v = s->u.store.value;
    const texi_buffer *dst = s->u.store.buf;
    if (!g->in_async_fetch || s->u.store.mask || s->u.store.index->lanes != 1 ||
        dst->scope != TEXI_SCOPE_SHARED || dst->dtype != TEX_F32 || v->kind != TEXI_EXPR_LOAD ||
        v->lanes != 1 || v->u.load.mask || v->u.load.buf->scope != TEXI_SCOPE_GLOBAL ||
        v->u.load.buf->dtype != TEX_F32)
        return false;
    texi_cp_indent(&g->p, sb);
    texi_sb_puts(sb, "tex_cp_async4(&");
    texi_cp_element(&g->p, sb, dst, s->u.store.index);
    texi_sb_puts(sb, ", &");
    texi_cp_element(&g->p, sb, v->u.load.buf, v->u.load.index);
    texi_sb_puts(sb, ");\n");
    return true;
}
