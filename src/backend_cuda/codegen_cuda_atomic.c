/*
 * Atomic reduction updates in the CUDA emitter (ATTR "atomic", tex_atomic;
 * atomic.c reads it): one read-modify-write per update.
 *
 *   op    f32, f64          i32, u32, i64, u64
 *   sum   atomicAdd         atomicAdd (64-bit through unsigned long long)
 *   max   CAS loop          atomicMax (int, unsigned, long long, unsigned long long)
 *   min   CAS loop          atomicMin
 *   prod  CAS loop          CAS loop
 * The compare-and-swap loops (texi_cu_atomic_helpers, emitted only when
 * used) reread the element until atomicCAS on its bits succeeds, combining
 * with tex_atomic_combine. Other element types (8/16-bit integers, bool,
 * f16, bf16) are refused with TEX_EUNAVAILABLE naming the buffer.
 */
#include "backend_cuda/codegen_cuda.h"

#include <string.h>

const char texi_cu_atomic_helpers[] =
    "template <int OP, typename T> __device__ __forceinline__ T tex_atomic_combine(T a, T b)\n"
    "{\n"
    "    return OP == 0 ? (T)(a + b) : OP == 1 ? (T)(a * b) : OP == 2 ? (a > b ? a : b)\n"
    "                                                                 : (a < b ? a : b);\n"
    "}\n"
    "template <int OP> __device__ __forceinline__ void tex_atomic_f32(float *p, float v)\n"
    "{\n"
    "    unsigned int *q = (unsigned int *)p, old = *q, assumed;\n"
    "    do {\n"
    "        assumed = old;\n"
    "        float next = tex_atomic_combine<OP>(__uint_as_float(assumed), v);\n"
    "        old = atomicCAS(q, assumed, __float_as_uint(next));\n"
    "    } while (old != assumed);\n"
    "}\n"
    "template <int OP> __device__ __forceinline__ void tex_atomic_f64(double *p, double v)\n"
    "{\n"
    "    unsigned long long *q = (unsigned long long *)p, old = *q, assumed;\n"
    "    do {\n"
    "        assumed = old;\n"
    "        double next = tex_atomic_combine<OP>(__longlong_as_double((long long)assumed), v);\n"
    "        old = atomicCAS(q, assumed, (unsigned long long)__double_as_longlong(next));\n"
    "    } while (old != assumed);\n"
    "}\n"
    "template <int OP, typename T, typename B> __device__ __forceinline__ void\n"
    "tex_atomic_int(T *p, T v)\n"
    "{\n"
    "    B *q = (B *)p, old = *q, assumed;\n"
    "    do {\n"
    "        assumed = old;\n"
    "        old = atomicCAS(q, assumed, (B)tex_atomic_combine<OP>((T)assumed, v));\n"
    "    } while (old != assumed);\n"
    "}\n\n";

/* The CUDA type atomics see for dtype t, or NULL when there is none. */
static const char *atomic_type(tex_dtype t)
{
    switch (t) {
    case TEX_I32:
        return "int";
    case TEX_U32:
        return "unsigned int";
    case TEX_I64:
        return "long long";
    case TEX_U64:
        return "unsigned long long";
    case TEX_F32:
        return "float";
    case TEX_F64:
        return "double";
    default:
        return NULL;
    }
}

/* "fn(" of the update of u on dtype t (a native atomic or a CAS helper). */
static void open_call(texi_cu *g, texi_sb *sb, const texi_atomic_update *u, tex_dtype t)
{
    bool is_float = t == TEX_F32 || t == TEX_F64, wide = t == TEX_I64 || t == TEX_U64;
    if (u->op == TEXI_REDUCE_SUM) {
        texi_sb_puts(sb, "atomicAdd(");
        return;
    }
    if (!is_float && u->op != TEXI_REDUCE_PROD) {
        texi_sb_puts(sb, u->op == TEXI_REDUCE_MAX ? "atomicMax(" : "atomicMin(");
        return;
    }
    g->uses_atomic_cas = true;
    if (is_float)
        texi_sb_printf(sb, "tex_atomic_f%d<%d>(", t == TEX_F32 ? 32 : 64, (int)u->op);
    else
        texi_sb_printf(sb, "tex_atomic_int<%d, %s, %s>(", (int)u->op, atomic_type(t),
                       wide ? "unsigned long long" : "unsigned int");
}

void texi_cu_emit_atomic(texi_cu *g, texi_sb *sb, const tex_stmt *attr)
{
    texi_atomic_update u;
    if (texi_atomic_parts(g->p.ctx, attr, &u) < 0) {
        texi_cp_fail(&g->p, TEX_EINTERNAL, "%s", tex_errmsg(g->p.ctx));
        return;
    }
    const texi_buffer *b = u.store->u.store.buf;
    const char *type = atomic_type(b->dtype);
    if (!type) {
        texi_cp_fail(&g->p, TEX_EUNAVAILABLE,
                     "the atomic update of '%s' needs a 32- or 64-bit element type (it is %s)",
                     b->name, tex_dtype_name(b->dtype));
        return;
    }
    /* 64-bit sums go through unsigned long long (two's complement adds alike) */
    const char *ptr = u.op == TEXI_REDUCE_SUM && b->dtype == TEX_I64 ? "unsigned long long" : type;
    texi_cp_indent(&g->p, sb);
    open_call(g, sb, &u, b->dtype);
    texi_sb_printf(sb, "(%s *)&%s[", ptr, texi_cp_lookup(&g->p, texi_buffer_key(b), b->name));
    texi_cp_expr(&g->p, sb, u.store->u.store.index, TEXI_CP_P_TOP, true);
    texi_sb_printf(sb, "], (%s)", ptr);
    texi_cp_expr(&g->p, sb, u.delta, TEXI_CP_P_UNARY, false);
    texi_sb_puts(sb, ");\n");
}
