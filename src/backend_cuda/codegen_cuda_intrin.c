/*
 * Tensor intrinsics in the CUDA emitter (docs/api.md, rule 10).
 *
 * texi_cu_emit_intrin_sources appends the c_source of every distinct
 * intrinsic the function calls, once each, in order of first call; it goes
 * after the device helpers and before the kernels (the sources define
 * `__device__` functions, e.g. intrin_cuda.c's nvcuda::wmma tiles).
 * texi_cu_emit_intrin emits one flattened INTRIN statement as the call
 *     fn((const T *)(A + (off)), (int64_t)(s0), ..., C + (off), (int64_t)(s0), ...)
 * inputs first, the output last (RESET: the output only), T being the CUDA
 * storage type of the buffer (__half / __nv_bfloat16 for f16 / bf16,
 * texi_cu_storage_type), so the functions' pointer types must be those.
 * The statement is emitted where it stands: for a warp-wide intrinsic (wmma)
 * the schedule must make all 32 lanes reach it with the same arguments.
 * An intrinsic without a function for the statement's role, or without
 * source, fails with TEX_EUNAVAILABLE.
 */
#include "backend_cuda/codegen_cuda.h"

#include <string.h>

#define MAX_INTRINS 64

static void emit_tile(texi_cu *g, texi_sb *sb, const texi_intrin_arg *a, bool input)
{
    const texi_buffer *b = a->buf;
    if (!b || !a->offset || !a->strides) {
        texi_cu_fail(g, TEX_EINTERNAL, "a tensor intrinsic's tile was not flattened");
        return;
    }
    if (input)
        texi_sb_printf(sb, "(const %s *)", texi_cu_storage_type(b->dtype));
    texi_sb_printf(sb, "(%s + ", texi_cu_lookup(g, texi_buffer_key(b), b->name));
    texi_cu_expr(g, sb, a->offset);
    texi_sb_putc(sb, ')');
    for (int j = 0; j < a->ndim; j++) {
        texi_sb_puts(sb, ", (int64_t)");
        texi_cu_expr(g, sb, a->strides[j]);
    }
}

void texi_cu_emit_intrin(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    const tex_intrin *in = s->u.intrin.intrin;
    const char *fn = in->fn[s->u.intrin.fn];
    if (!in->c_source || !fn) {
        texi_cu_fail(g, TEX_EUNAVAILABLE, "tensor intrinsic '%s' has no %s", in->name,
                     in->c_source ? "function for this call" : "source");
        return;
    }
    for (int i = 0; i < g->indent; i++)
        texi_sb_puts(sb, "    ");
    texi_sb_printf(sb, "%s(", fn);
    for (int i = 0; i < s->u.intrin.n_args; i++) {
        texi_sb_puts(sb, i ? ", " : "");
        emit_tile(g, sb, &s->u.intrin.args[i], i < s->u.intrin.n_args - 1);
    }
    texi_sb_puts(sb, ");\n");
}

void texi_cu_emit_intrin_sources(texi_cu *g, texi_sb *sb, const tex_stmt *body)
{
    const tex_intrin *list[MAX_INTRINS];
    int n = texi_stmt_intrins(body, list, MAX_INTRINS);
    if (n < 0)
        texi_cu_fail(g, TEX_EUNAVAILABLE, "more than %d distinct tensor intrinsics", MAX_INTRINS);
    for (int i = 0; i < n; i++)
        if (list[i]->c_source)
            texi_sb_printf(sb, "/* tensor intrinsic '%s' */\n%s\n", list[i]->name,
                           list[i]->c_source);
}
