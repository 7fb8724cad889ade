/*
 * The block-wide allreduce of the CUDA emitter: ATTR "thread_allreduce"
 * (the form thread_allreduce.c documents: value = enum texi_reduce_op,
 * body = a THREAD_X loop over `acc[0] = acc[0]`, acc a 1-element local).
 *
 * Emitted text, executed by every thread of the block (codegen_cuda.c never
 * puts it under a thread-divergent guard):
 *   {
 *       __shared__ T tex_red_scratch[S];
 *       acc[0] = conv(tex_allreduce_x<T, OP, N, NT>(active ? acc[0] : identity,
 *                                                   tex_red_scratch));
 *   }
 * T is the value type of acc (float for f16/bf16), N = blockDim.x and NT =
 * the block's thread count, both constants of the launch (a block extent
 * that is not a constant is refused: the scratch needs a static size).
 * `active` is texi_cu_active_cond: threads outside the deferred guards of
 * enclosing narrower thread loops never initialized acc and contribute the
 * identity. Threads with threadIdx.x >= the loop's extent hold the identity
 * already (the pass sets acc to it in every thread).
 *
 * The helper (texi_cu_allreduce_helpers), for a reduction along x: the
 * threads that share threadIdx.y/z form a segment of N consecutive linear
 * thread ids (x fastest), which may start in the middle of a warp and span
 * several warps (N need not divide or be a multiple of 32).
 *   1. Warp step: __shfl_down_sync with offsets from the largest needed down
 *      to 1, over the mask of the lanes present in the warp (the last warp
 *      of a block may be partial). A lane combines the value it received
 *      only when the source lane lies in its own segment and in the present
 *      part of the warp, so values of absent lanes (undefined) are never
 *      used. Afterwards the first lane of each (segment, warp) piece holds
 *      op over the piece.
 *   2. When N <= 32 and N divides 32, every segment is one piece: its value
 *      is broadcast from the segment's first lane with __shfl_sync.
 *      Otherwise each piece's first lane writes its value to the scratch
 *      slot (segment g, piece j), S = segments * P slots with P the most
 *      pieces a segment can have; __syncthreads(); every thread folds the
 *      slots of its segment in order (the broadcast).
 *   3. A final __syncthreads(), always: the allreduce is a block-wide
 *      barrier (thread_sync.c relies on it) and the scratch may be reused
 *      by the next allreduce.
 * Only reductions along threadIdx.x are emitted (the pass refuses others).
 * Plain CUDA C++ (templates, no inline PTX, no cooperative groups), so the
 * host emulation (tests/cuda/emu) compiles it as well.
 */
#include "backend_cuda/codegen_cuda.h"

#include <stdio.h>
#include <string.h>

const char texi_cu_allreduce_helpers[] =
    "template <typename T, int OP> __device__ __forceinline__ T tex_red_apply(T a, T b)\n"
    "{\n"
    "    return OP == 0 ? (T)(a + b) : OP == 1 ? (T)(a * b) : OP == 2 ? (a > b ? a : b)\n"
    "                                                                 : (a < b ? a : b);\n"
    "}\n"
    "/* Shuffles move at least 32 bits: narrower types travel as int. */\n"
    "template <typename T, bool W = (sizeof(T) < 4)> struct tex_red_wide { typedef T type; };\n"
    "template <typename T> struct tex_red_wide<T, true> { typedef int type; };\n"
    "template <typename T, int OP, int N, int NT>\n"
    "__device__ __forceinline__ T tex_allreduce_x(T v, T *scratch)\n"
    "{\n"
    "    typedef typename tex_red_wide<T>::type W;\n"
    "    const int x = (int)threadIdx.x, g = (int)(threadIdx.y + blockDim.y * threadIdx.z);\n"
    "    const int lin = x + N * g, lane = lin & 31, wbase = lin - lane;\n"
    "    const int wn = NT - wbase < 32 ? NT - wbase : 32;\n"
    "    const unsigned mask = wn == 32 ? 0xffffffffu : ((1u << wn) - 1u);\n"
    "    const int seg_end = (g + 1) * N, end = seg_end < wbase + wn ? seg_end : wbase + wn;\n"
    "    const int span = N < 32 ? N : 32;\n"
    "    int top = 1;\n"
    "    while (top < span)\n"
    "        top *= 2;\n"
    "    for (int o = top / 2; o > 0; o /= 2) {\n"
    "        T w = (T)__shfl_down_sync(mask, (W)v, o);\n"
    "        if (lin + o < end)\n"
    "            v = tex_red_apply<T, OP>(v, w);\n"
    "    }\n"
    "    if (N <= 32 && 32 % N == 0) {\n"
    "        v = (T)__shfl_sync(mask, (W)v, lane - x);\n"
    "    } else {\n"
    "        const int P = N % 32 == 0 ? N / 32 : (N - 1) / 32 + 2;\n"
    "        const int first = (g * N) >> 5, n_pieces = ((seg_end - 1) >> 5) - first + 1;\n"
    "        if (x == 0 || lane == 0)\n"
    "            scratch[g * P + ((lin >> 5) - first)] = v;\n"
    "        __syncthreads();\n"
    "        v = scratch[g * P];\n"
    "        for (int j = 1; j < n_pieces; ++j)\n"
    "            v = tex_red_apply<T, OP>(v, scratch[g * P + j]);\n"
    "    }\n"
    "    __syncthreads();\n"
    "    return v;\n"
    "}\n\n";

/* The constant launch extent of tag (NULL: 1), or -1. */
static int64_t launch_const(const texi_cu *g, int tag)
{
    int64_t v;
    if (!g->launch[tag])
        return 1;
    return texi_expr_is_int_const(g->launch[tag], &v) ? v : -1;
}

/* Scratch slots of the helper for N threads along x and NT in all. */
static int64_t scratch_slots(int64_t n, int64_t nt)
{
    if (n <= 32 && 32 % n == 0)
        return 1;
    int64_t p = n % 32 == 0 ? n / 32 : (n - 1) / 32 + 2;
    return nt / n * p;
}

/* "(conversion of the value type to acc's storage)(" */
static const char *store_open(tex_dtype t)
{
    return t == TEX_F16 || t == TEX_BF16 ? texi_cu_target.encode[t == TEX_BF16] : "(";
}

/* The pieces of attr, checked: op, the tag loop and acc's store. */
static bool parts(texi_cu *g, const tex_stmt *attr, int64_t *op, const tex_stmt **store)
{
    const tex_stmt *loop = attr->u.attr.body;
    if (!attr->u.attr.value || !texi_expr_is_int_const(attr->u.attr.value, op) || *op < 0 ||
        *op >= TEXI_REDUCE_COUNT || !loop || loop->kind != TEXI_STMT_FOR ||
        loop->u.loop.for_kind != TEXI_FOR_THREAD || !loop->u.loop.body ||
        loop->u.loop.body->kind != TEXI_STMT_STORE) {
        texi_cp_fail(&g->p, TEX_EINTERNAL, "malformed ATTR \"thread_allreduce\"");
        return false;
    }
    if (loop->u.loop.thread_tag != (int)TEX_THREAD_X) {
        texi_cp_fail(&g->p, TEX_EUNAVAILABLE,
                     "a cross-thread reduction along another index than threadIdx.x");
        return false;
    }
    *store = loop->u.loop.body;
    return true;
}

void texi_cu_emit_allreduce(texi_cu *g, texi_sb *sb, const tex_stmt *attr)
{
    int64_t op;
    const tex_stmt *st;
    if (g->p.rc || !parts(g, attr, &op, &st))
        return;
    g->uses_allreduce = true;
    int64_t n = launch_const(g, TEX_THREAD_X), ny = launch_const(g, TEX_THREAD_Y),
            nz = launch_const(g, TEX_THREAD_Z);
    if (n < 1 || ny < 1 || nz < 1 || n * ny * nz > 1024) {
        texi_cp_fail(&g->p, TEX_EUNAVAILABLE,
                     "the cross-thread reduction into '%s' needs constant thread extents "
                     "(at most 1024 threads per block)",
                     st->u.store.buf->name);
        return;
    }
    const texi_buffer *acc = st->u.store.buf;
    tex_dtype t = acc->dtype;
    const char *vt = texi_cu_value_type(t),
               *name = texi_cp_lookup(&g->p, texi_buffer_key(acc), acc->name);
    tex_expr *id = texi_reduce_identity(g->p.ctx, (enum texi_reduce_op)op, t);
    if (!id) {
        texi_cp_fail(&g->p, TEX_ENOMEM, "out of memory (allreduce)");
        return;
    }
    texi_cp_line(&g->p, sb, "{");
    g->p.indent++;
    texi_cp_line(&g->p, sb, "__shared__ %s tex_red_scratch[%lld];", vt,
                 (long long)scratch_slots(n, n * ny * nz));
    texi_sb part;
    texi_sb_init(&part);
    texi_cu_active_cond(g, &part);
    texi_sb_puts(&part, " ? ");
    texi_cp_expr(&g->p, &part, st->u.store.value, TEXI_CP_P_OR, false);
    texi_sb_puts(&part, " : ");
    texi_cp_expr(&g->p, &part, id, TEXI_CP_P_COND, false);
    if (part.oom)
        texi_cp_fail(&g->p, TEX_ENOMEM, "out of memory (source text)");
    texi_cp_line(&g->p, sb,
                 "%s[0] = %stex_allreduce_x<%s, %d, %lld, %lld>((%s), tex_red_scratch));", name,
                 store_open(t), vt, (int)op, (long long)n, (long long)(n * ny * nz),
                 part.buf ? part.buf : "0");
    texi_sb_fini(&part);
    g->p.indent--;
    texi_cp_line(&g->p, sb, "}");
}
