/*
 * The CUDA built-in tensor intrinsics: 16x16x16 tensor-core GEMM tiles
 * through nvcuda::wmma, for f16 ("cuda.wmma_m16n16k16_f16f32") and bf16
 * ("cuda.wmma_m16n16k16_bf16f32") inputs with f32 accumulation.
 *
 * Description (what tensorize matches): placeholders A[16,16], B[16,16] of
 * the input dtype and
 *     C[i,j] = sum_k f32(A[i,k]) * f32(B[k,j])
 * built with the public compute API, so a stage written the same way (casts
 * inside the sum) matches it.
 *
 * Source: CUDA C++ device functions (`__device__ __forceinline__`, after
 * `#include <mma.h>`), with docs/api.md rule 10's signatures except for the
 * element types: inputs are the CUDA emitter's storage types (`const __half
 * *` / `const __nv_bfloat16 *`, see texi_cu_storage_type), not uint16_t, and
 * the output is `float *`. Each pointer is followed by one int64_t stride per
 * desc dimension (row, column):
 *     <p>_reset(float *C, int64_t c0, int64_t c1)
 *     <p>_update(const T *A, a0, a1, const T *B, b0, b1, float *C, c0, c1)
 *     <p>_body(same as update)   (= reset + update)
 * with <p> = tex_wmma_f16f32 or tex_wmma_bf16f32. reset fills an
 * accumulator fragment with 0 and stores it; update loads A and B as
 * row-major matrix_a / matrix_b fragments and C as a mem_row_major
 * accumulator, runs mma_sync and stores C back.
 *
 * Requirements the generated code relies on (wmma's, not checked here):
 *  - every function is called by all 32 lanes of a warp, converged, with the
 *    same arguments (the tensorized tile must not depend on threadIdx.x, whose
 *    extent must be 32; see tests/unit/test_tensorize_cuda.c for the recipe);
 *  - the column strides (a1, b1, c1) are 1: wmma takes a leading dimension
 *    only (the row stride is passed as ldm); they are otherwise ignored;
 *  - ldm is a multiple of 8 elements for f16/bf16 (16 bytes) and of 4 for
 *    the f32 accumulator, and each tile pointer is 32-byte aligned;
 *  - the tiles live in shared or global memory (C as a per-warp shared
 *    accumulator tile), never in per-thread local arrays;
 *  - sm_70+ for f16, sm_80+ for bf16.
 * The host-side C emulation of nvcuda::wmma (tests/cuda/emu/mma.h) supplies
 * the same calls for the emulation harness.
 */
#include "schedule/intrin.h"

#include <string.h>

#define WMMA_SOURCE(P, T)                                                                          \
    "#include <mma.h>\n"                                                                           \
    "__device__ __forceinline__ void " P "_reset(float *C, int64_t c0, int64_t c1)\n"              \
    "{\n"                                                                                          \
    "    (void)c1;\n"                                                                              \
    "    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> c;\n"                \
    "    nvcuda::wmma::fill_fragment(c, 0.0f);\n"                                                  \
    "    nvcuda::wmma::store_matrix_sync(C, c, (unsigned)c0, nvcuda::wmma::mem_row_major);\n"      \
    "}\n"                                                                                          \
    "__device__ __forceinline__ void " P "_update(const " T " *A, int64_t a0, int64_t a1,\n"       \
    "    const " T " *B, int64_t b0, int64_t b1, float *C, int64_t c0, int64_t c1)\n"              \
    "{\n"                                                                                          \
    "    (void)a1; (void)b1; (void)c1;\n"                                                          \
    "    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, " T                            \
    ", nvcuda::wmma::row_major> a;\n"                                                              \
    "    nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, " T                            \
    ", nvcuda::wmma::row_major> b;\n"                                                              \
    "    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> c;\n"                \
    "    nvcuda::wmma::load_matrix_sync(a, A, (unsigned)a0);\n"                                    \
    "    nvcuda::wmma::load_matrix_sync(b, B, (unsigned)b0);\n"                                    \
    "    nvcuda::wmma::load_matrix_sync(c, C, (unsigned)c0, nvcuda::wmma::mem_row_major);\n"       \
    "    nvcuda::wmma::mma_sync(c, a, b, c);\n"                                                    \
    "    nvcuda::wmma::store_matrix_sync(C, c, (unsigned)c0, nvcuda::wmma::mem_row_major);\n"      \
    "}\n"                                                                                          \
    "__device__ __forceinline__ void " P "_body(const " T " *A, int64_t a0, int64_t a1,\n"         \
    "    const " T " *B, int64_t b0, int64_t b1, float *C, int64_t c0, int64_t c1)\n"              \
    "{\n"                                                                                          \
    "    " P "_reset(C, c0, c1);\n"                                                                \
    "    " P "_update(A, a0, a1, B, b0, b1, C, c0, c1);\n"                                         \
    "}\n"

typedef struct {
    const char *name;
    tex_dtype in;
    const char *source;
    const char *body, *reset, *update;
} wmma_builtin;

static const wmma_builtin builtins[] = {
    {"cuda.wmma_m16n16k16_f16f32", TEX_F16, WMMA_SOURCE("tex_wmma_f16f32", "__half"),
     "tex_wmma_f16f32_body", "tex_wmma_f16f32_reset", "tex_wmma_f16f32_update"},
    {"cuda.wmma_m16n16k16_bf16f32", TEX_BF16, WMMA_SOURCE("tex_wmma_bf16f32", "__nv_bfloat16"),
     "tex_wmma_bf16f32_body", "tex_wmma_bf16f32_reset", "tex_wmma_bf16f32_update"},
};

/* C[i,j] = sum_k f32(A[i,k]) * f32(B[k,j]) over 16x16 placeholders of dtype
 * t; NULL (error recorded by the API) on failure. */
static tex_tensor *wmma_desc(tex_ctx *ctx, tex_dtype t)
{
    static const int64_t shape[2] = {16, 16};
    tex_tensor *a = tex_placeholder_c(ctx, "A", t, 2, shape);
    tex_tensor *b = tex_placeholder_c(ctx, "B", t, 2, shape);
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 16));
    tex_iter *j = tex_axis(ctx, "j", tex_int(ctx, 16));
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_int(ctx, 16));
    if (!a || !b || !i || !j || !k)
        return NULL;
    tex_expr *prod = tex_mul(tex_cast(TEX_F32, TEX_AT(a, tex_iv(i), tex_iv(k))),
                             tex_cast(TEX_F32, TEX_AT(b, tex_iv(k), tex_iv(j))));
    tex_iter *axes[2] = {i, j};
    return tex_compute(ctx, "C", 2, axes, tex_sum(prod, 1, &k));
}

tex_intrin *texi_intrin_builtin_cuda(tex_ctx *ctx, const char *name)
{
    for (size_t n = 0; n < sizeof builtins / sizeof builtins[0]; n++) {
        const wmma_builtin *w = &builtins[n];
        if (strcmp(name, w->name) != 0)
            continue;
        tex_tensor *desc = wmma_desc(ctx, w->in);
        if (!desc)
            return NULL;
        return texi_intrin_make(ctx, "tex_intrin_builtin", w->name, desc, w->source, w->body,
                                w->reset, w->update, w->name);
    }
    return NULL;
}
