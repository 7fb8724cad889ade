/*
 * Pass simd for CUDA kernels (GPU tail, per kernel, after thread_sync):
 * simd.c's rewriting under the GPU's rules. A vector is at most 16 bytes,
 * the widest load and store CUDA has (float4, int4, double2), and only the
 * loaded and stored elements size it: the CUDA printer computes every lane
 * as a scalar (its vector types have no operators), so i64 index
 * arithmetic next to f32 data must not halve a float4 into float2s. No
 * horizontal reductions: a loop that may carry a dependence stays serial.
 *
 * It runs last, on each kernel's body, so that thread_sync and
 * double_buffer see the scalar loops they were written for; a vectorized
 * loop's body is straight-line, so no barrier can fall between its lanes.
 */
#include "lower/lower.h"

int texi_pass_simd_gpu(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    static const texi_simd_rules gpu = {16, true, false, false};
    return texi_simd_rewrite(lw, &gpu, in, out);
}
