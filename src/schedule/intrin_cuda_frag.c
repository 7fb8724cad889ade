/*
 * The register-resident CUDA built-ins: a 16x16x16 tensor-core GEMM whose
 * f32 accumulator stays in registers from one call to the next, and the
 * two intrinsics that let a back-to-back GEMM hand that accumulator to the
 * second GEMM as its f16 A operand without leaving registers (CUTLASS's
 * example 13, register-resident variant). f16 inputs, f32 accumulation,
 * sm_80+ (PTX mma.sync.m16n8k16), and the write-back of an accumulator
 * fragment to memory.
 *
 *   "cuda.mma_m16n16k16_f16f32_frag"   C[i,j] = sum_k f32(A[i,k]) * f32(B[k,j]),
 *                                      A, B f16 in memory, C a fragment tile
 *   "cuda.mma_frag_relu_f16"           D[i,j] = f16(max(P[i,j], 0)),
 *                                      P an f32 fragment tile, D an f16 one
 *   "cuda.mma_m16n16k16_f16f32_afrag"  C[i,j] = sum_k f32(A[i,k]) * f32(B[k,j]),
 *                                      A an f16 fragment tile, B f16 and C f32
 *                                      in memory
 *   "cuda.mma_frag_store_f32"          D[i,j] = P[i,j], P an f32 fragment tile,
 *                                      D f32 in memory (shared or global): an
 *                                      accumulator written back once
 *
 * A fragment tile is a 16x16 tile of a per-thread (TEX_SCOPE_LOCAL) buffer
 * that only these intrinsics read and write: on the device each lane keeps
 * its 8 elements of the tile, in mma.sync's m16n8k16 layout (g = lane / 4,
 * t = lane % 4; slot s of the tile is its element (0, s)):
 *   slots 0..3  rows g, g, g+8, g+8 of columns 2t, 2t+1 of the left 8 columns
 *   slots 4..7  the same of the right 8 columns
 * which is also the layout of the m16n8k16 A operand's four registers (two
 * f16 each) over a 16x16 tile, so an accumulator tile, after an elementwise
 * epilogue applied slot by slot, is the next GEMM's A fragment as it is: no
 * shared memory, no shuffle. The other 248 elements of the tile are never
 * touched; with every tile offset a constant (the tile loops unrolled) the
 * compiler keeps the used slots in registers and drops the rest of the
 * buffer. Under TEX_CUDA_EMULATION (the emulation harness, one host thread
 * per lane) each lane holds the whole tile instead, row-major, so the tile's
 * values are the ordinary ones there.
 *
 * On the CPU (gpu_to_cpu: the warp's calls run once, for the whole tile)
 * the built-ins' host_source holds plain C functions of the same names over
 * whole row-major tiles, f16 as uint16_t (the CPU emitter's storage type and
 * its tex_f16_* conversions), so the same lowered function runs there too.
 *
 * Arguments as docs/api.md rule 10 says (storage types __half / float, one
 * int64_t stride per dimension; fragment tiles use only their row stride,
 * in the emulation). Every function is called by all 32 lanes of a warp,
 * converged, with the same arguments (the tile must not depend on
 * threadIdx.x, whose extent is 32); memory tiles are row-major with unit
 * column stride.
 */
#include "schedule/intrin.h"

#include <string.h>

/* ldmatrix loads of 16x16 f16 tiles in shared memory (frag_source's fast
 * path; its fallback reads element by element, e.g. from global memory). */
#define FRAG_LDM                                                                                   \
    "#ifndef TEX_CUDA_EMULATION\n"                                                                 \
    "/* whether ldmatrix can read the 16x16 tile at p: shared, rows 16-byte aligned */\n"          \
    "__device__ __forceinline__ bool tex_mma_ldm_ok(const __half *p, int64_t ld)\n"                \
    "{\n"                                                                                          \
    "    return __isShared(p) && ((size_t)p & 15) == 0 && (ld & 7) == 0;\n"                        \
    "}\n"                                                                                          \
    "/* this lane's row address for ldmatrix .x4 over the four 8x8 quarters of a 16x16\n"          \
    "   tile, in the order (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) */\n"      \
    "__device__ __forceinline__ unsigned tex_mma_ldm_addr(const __half *p, int64_t ld)\n"          \
    "{\n"                                                                                          \
    "    unsigned lane = threadIdx.x % 32, q = lane / 8;\n"                                        \
    "    return (unsigned)__cvta_generic_to_shared(p + (lane % 8 + 8 * (q & 1)) * ld + 8 * (q >> " \
    "1));\n"                                                                                       \
    "}\n"                                                                                          \
    "/* r: a 16x16 A tile in m16n8k16's A registers (trans 0), or a 16x16 B tile as the\n"         \
    "   two n8 halves' B registers {b0, b1, b0', b1'} (trans 1) */\n"                              \
    "__device__ __forceinline__ void tex_mma_ldm(unsigned *r, const __half *p, int64_t ld,\n"      \
    "    bool trans)\n"                                                                            \
    "{\n"                                                                                          \
    "    unsigned a = tex_mma_ldm_addr(p, ld);\n"                                                  \
    "    if (trans)\n"                                                                             \
    "        asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, "        \
    "[%4];\\n\"\n"                                                                                 \
    "                     : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n" \
    "    else\n"                                                                                   \
    "        asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\\n\"\n"  \
    "                     : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n" \
    "}\n"                                                                                          \
    "#endif\n"

/* Device helpers shared by the built-ins' sources. */
#define FRAG_COMMON                                                                                \
    "#include <mma.h>\n"                                                                           \
    "#include <cuda_fp16.h>\n"                                                                     \
    "#ifndef TEX_MMA_FRAG_COMMON\n"                                                                \
    "#define TEX_MMA_FRAG_COMMON\n"                                                                \
    "#ifndef TEX_CUDA_EMULATION\n"                                                                 \
    "__device__ __forceinline__ unsigned tex_mma_pack(__half lo, __half hi)\n"                     \
    "{\n"                                                                                          \
    "    return (unsigned)__half_as_ushort(lo) | ((unsigned)__half_as_ushort(hi) << 16);\n"        \
    "}\n"                                                                                          \
    "/* c[0..3] += A (registers a) . B (registers b0, b1: one n8 half) */\n"                       \
    "__device__ __forceinline__ void tex_mma_regs(float *c, const unsigned *a, unsigned b0,\n"     \
    "    unsigned b1)\n"                                                                           \
    "{\n"                                                                                          \
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 \"\n"                    \
    "                 \"{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\"\n"              \
    "                 : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"                  \
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), "           \
    "\"r\"(b1));\n"                                                                                \
    "}\n"                                                                                          \
    "/* c[0..3] += A (registers a) . B[0..15][n..n+7] (memory, row stride ldb) */\n"               \
    "__device__ __forceinline__ void tex_mma_n8(float *c, const unsigned *a, const __half *B,\n"   \
    "    int64_t ldb, unsigned g, unsigned t)\n"                                                   \
    "{\n"                                                                                          \
    "    tex_mma_regs(c, a, tex_mma_pack(B[2 * t * ldb + g], B[(2 * t + 1) * ldb + g]),\n"         \
    "                 tex_mma_pack(B[(2 * t + 8) * ldb + g], B[(2 * t + 9) * ldb + g]));\n"        \
    "}\n"                                                                                          \
    "/* c[0..7] (slot order) += A (registers a) . B (16x16, memory) */\n"                          \
    "__device__ __forceinline__ void tex_mma_tile(float *c, const unsigned *a, const __half *B,\n" \
    "    int64_t ldb)\n"                                                                           \
    "{\n"                                                                                          \
    "    unsigned lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;\n"                          \
    "    tex_mma_n8(c, a, B, ldb, g, t);\n"                                                        \
    "    tex_mma_n8(c + 4, a, B + 8, ldb, g, t);\n"                                                \
    "}\n"                                                                                          \
    "/* the memory positions of this lane's slots in a 16x16 tile of row stride ld */\n"           \
    "__device__ __forceinline__ int64_t tex_mma_slot(int s, int64_t ld)\n"                         \
    "{\n"                                                                                          \
    "    unsigned lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;\n"                          \
    "    return (g + 8 * ((s >> 1) & 1)) * ld + 8 * (s >> 2) + 2 * t + (s & 1);\n"                 \
    "}\n"                                                                                          \
    "#endif\n"                                                                                     \
    "#endif\n"

/* After FRAG_COMMON (joined at run time: one literal would be too long). */
static const char frag_source[] = FRAG_LDM
    "__device__ __forceinline__ void tex_mma_frag_reset(float *C, int64_t c0, int64_t c1)\n"
    "{\n"
    "    (void)c1;\n"
    "#ifdef TEX_CUDA_EMULATION\n"
    "    for (int i = 0; i < 16; i++)\n"
    "        for (int j = 0; j < 16; j++)\n"
    "            C[i * c0 + j] = 0.0f;\n"
    "#else\n"
    "    (void)c0;\n"
    "    for (int s = 0; s < 8; s++)\n"
    "        C[s] = 0.0f;\n"
    "#endif\n"
    "}\n"
    "__device__ __forceinline__ void tex_mma_frag_update(const __half *A, int64_t a0, int64_t a1,\n"
    "    const __half *B, int64_t b0, int64_t b1, float *C, int64_t c0, int64_t c1)\n"
    "{\n"
    "    (void)a1; (void)b1; (void)c1;\n"
    "#ifdef TEX_CUDA_EMULATION\n"
    "    for (int i = 0; i < 16; i++)\n"
    "        for (int j = 0; j < 16; j++) {\n"
    "            float s = C[i * c0 + j];\n"
    "            for (int k = 0; k < 16; k++)\n"
    "                s += __half2float(A[i * a0 + k]) * __half2float(B[k * b0 + j]);\n"
    "            C[i * c0 + j] = s;\n"
    "        }\n"
    "#else\n"
    "    (void)c0;\n"
    "    unsigned a[4];\n"
    "    if (tex_mma_ldm_ok(A, a0) && tex_mma_ldm_ok(B, b0)) {\n"
    "        unsigned b[4];\n"
    "        tex_mma_ldm(a, A, a0, false);\n"
    "        tex_mma_ldm(b, B, b0, true);\n"
    "        tex_mma_regs(C, a, b[0], b[1]);\n"
    "        tex_mma_regs(C + 4, a, b[2], b[3]);\n"
    "        return;\n"
    "    }\n"
    "    for (int r = 0; r < 4; r++)\n"
    "        a[r] = tex_mma_pack(A[tex_mma_slot(2 * r, a0)], A[tex_mma_slot(2 * r + 1, a0)]);\n"
    "    tex_mma_tile(C, a, B, b0);\n"
    "#endif\n"
    "}\n";

static const char relu_source[] = FRAG_COMMON
    "__device__ __forceinline__ void tex_mma_frag_relu(const float *P, int64_t p0, int64_t p1,\n"
    "    __half *D, int64_t d0, int64_t d1)\n"
    "{\n"
    "    (void)p1; (void)d1;\n"
    "#ifdef TEX_CUDA_EMULATION\n"
    "    for (int i = 0; i < 16; i++)\n"
    "        for (int j = 0; j < 16; j++)\n"
    "            D[i * d0 + j] = __float2half(P[i * p0 + j] > 0.0f ? P[i * p0 + j] : 0.0f);\n"
    "#else\n"
    "    (void)p0; (void)d0;\n"
    "    for (int s = 0; s < 8; s++)\n"
    "        D[s] = __float2half(P[s] > 0.0f ? P[s] : 0.0f);\n"
    "#endif\n"
    "}\n";

static const char store_source[] = FRAG_COMMON
    "__device__ __forceinline__ void tex_mma_frag_store(const float *P, int64_t p0, int64_t p1,\n"
    "    float *D, int64_t d0, int64_t d1)\n"
    "{\n"
    "    (void)p1; (void)d1;\n"
    "#ifdef TEX_CUDA_EMULATION\n"
    "    for (int i = 0; i < 16; i++)\n"
    "        for (int j = 0; j < 16; j++)\n"
    "            D[i * d0 + j] = P[i * p0 + j];\n"
    "#else\n"
    "    (void)p0;\n"
    "    for (int s = 0; s < 8; s++)\n"
    "        D[tex_mma_slot(s, d0)] = P[s];\n"
    "#endif\n"
    "}\n";

static const char afrag_source[] = FRAG_COMMON
    "__device__ __forceinline__ void tex_mma_afrag_reset(float *C, int64_t c0, int64_t c1)\n"
    "{\n"
    "    (void)c1;\n"
    "#ifdef TEX_CUDA_EMULATION\n"
    "    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> c;\n"
    "    nvcuda::wmma::fill_fragment(c, 0.0f);\n"
    "    nvcuda::wmma::store_matrix_sync(C, c, (unsigned)c0, nvcuda::wmma::mem_row_major);\n"
    "#else\n"
    "    for (int s = 0; s < 8; s++)\n"
    "        C[tex_mma_slot(s, c0)] = 0.0f;\n"
    "#endif\n"
    "}\n"
    "__device__ __forceinline__ void tex_mma_afrag_update(const __half *A, int64_t a0, int64_t "
    "a1,\n"
    "    const __half *B, int64_t b0, int64_t b1, float *C, int64_t c0, int64_t c1)\n"
    "{\n"
    "    (void)a1; (void)b1; (void)c1;\n"
    "#ifdef TEX_CUDA_EMULATION\n"
    "    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half,\n"
    "        nvcuda::wmma::row_major> a;\n"
    "    nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __half,\n"
    "        nvcuda::wmma::row_major> b;\n"
    "    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> c;\n"
    "    nvcuda::wmma::load_matrix_sync(a, A, (unsigned)a0);\n"
    "    nvcuda::wmma::load_matrix_sync(b, B, (unsigned)b0);\n"
    "    nvcuda::wmma::load_matrix_sync(c, C, (unsigned)c0, nvcuda::wmma::mem_row_major);\n"
    "    nvcuda::wmma::mma_sync(c, a, b, c);\n"
    "    nvcuda::wmma::store_matrix_sync(C, c, (unsigned)c0, nvcuda::wmma::mem_row_major);\n"
    "#else\n"
    "    (void)a0;\n"
    "    unsigned a[4];\n"
    "    float c[8];\n"
    "    for (int r = 0; r < 4; r++)\n"
    "        a[r] = tex_mma_pack(A[2 * r], A[2 * r + 1]);\n"
    "    for (int s = 0; s < 8; s++)\n"
    "        c[s] = C[tex_mma_slot(s, c0)];\n"
    "    tex_mma_tile(c, a, B, b0);\n"
    "    for (int s = 0; s < 8; s++)\n"
    "        C[tex_mma_slot(s, c0)] = c[s];\n"
    "#endif\n"
    "}\n";

/* The C of all the built-ins for the CPU backend (file comment). */
static const char host_source[] =
    "static inline void tex_mma_frag_reset(float *C, int64_t c0, int64_t c1)\n"
    "{\n"
    "    for (int i = 0; i < 16; i++)\n"
    "        for (int j = 0; j < 16; j++)\n"
    "            C[i * c0 + j * c1] = 0.0f;\n"
    "}\n"
    "static inline void tex_mma_frag_update(const uint16_t *A, int64_t a0, int64_t a1,\n"
    "    const uint16_t *B, int64_t b0, int64_t b1, float *C, int64_t c0, int64_t c1)\n"
    "{\n"
    "    for (int i = 0; i < 16; i++)\n"
    "        for (int j = 0; j < 16; j++) {\n"
    "            float s = C[i * c0 + j * c1];\n"
    "            for (int k = 0; k < 16; k++)\n"
    "                s += tex_f16_to_f32(A[i * a0 + k * a1]) * tex_f16_to_f32(B[k * b0 + j * "
    "b1]);\n"
    "            C[i * c0 + j * c1] = s;\n"
    "        }\n"
    "}\n"
    "static inline void tex_mma_frag_relu(const float *P, int64_t p0, int64_t p1, uint16_t *D,\n"
    "    int64_t d0, int64_t d1)\n"
    "{\n"
    "    for (int i = 0; i < 16; i++)\n"
    "        for (int j = 0; j < 16; j++) {\n"
    "            float v = P[i * p0 + j * p1];\n"
    "            D[i * d0 + j * d1] = tex_f16_from_f32(v > 0.0f ? v : 0.0f);\n"
    "        }\n"
    "}\n"
    "static inline void tex_mma_frag_store(const float *P, int64_t p0, int64_t p1, float *D,\n"
    "    int64_t d0, int64_t d1)\n"
    "{\n"
    "    for (int i = 0; i < 16; i++)\n"
    "        for (int j = 0; j < 16; j++)\n"
    "            D[i * d0 + j * d1] = P[i * p0 + j * p1];\n"
    "}\n"
    "static inline void tex_mma_afrag_reset(float *C, int64_t c0, int64_t c1)\n"
    "{\n"
    "    tex_mma_frag_reset(C, c0, c1);\n"
    "}\n"
    "static inline void tex_mma_afrag_update(const uint16_t *A, int64_t a0, int64_t a1,\n"
    "    const uint16_t *B, int64_t b0, int64_t b1, float *C, int64_t c0, int64_t c1)\n"
    "{\n"
    "    tex_mma_frag_update(A, a0, a1, B, b0, b1, C, c0, c1);\n"
    "}\n";

/* FRAG_COMMON followed by src, in ctx's arena; NULL on failure. */
static const char *with_common(tex_ctx *ctx, const char *src)
{
    static const char common[] = FRAG_COMMON;
    size_t n = strlen(src);
    char *r = texi_alloc(ctx, sizeof common + n, "a built-in's source");
    if (r) {
        memcpy(r, common, sizeof common - 1);
        memcpy(r + sizeof common - 1, src, n + 1);
    }
    return r;
}

/* The built-in `name` (desc d, device source src, functions body or reset
 * and update), with host_source for the CPU; NULL on failure. */
static tex_intrin *make(tex_ctx *ctx, const char *name, tex_tensor *d, const char *src,
                        const char *body, const char *reset, const char *update)
{
    tex_intrin *in = d && src ? texi_intrin_make(ctx, "tex_intrin_builtin", name, d, src, body,
                                                 reset, update, name)
                              : NULL;
    if (in)
        in->host_source = host_source;
    return in;
}

/* A 16x16 placeholder of dtype t. */
static tex_tensor *tile(tex_ctx *ctx, const char *name, tex_dtype t)
{
    static const int64_t shape[2] = {16, 16};
    return tex_placeholder_c(ctx, name, t, 2, shape);
}

/* C[i,j] = sum_k f32(A[i,k]) * f32(B[k,j]) over f16 tiles; NULL on failure. */
static tex_tensor *gemm_desc(tex_ctx *ctx)
{
    tex_tensor *a = tile(ctx, "A", TEX_F16), *b = tile(ctx, "B", TEX_F16);
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 16)), *j = tex_axis(ctx, "j", tex_int(ctx, 16));
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_int(ctx, 16));
    if (!a || !b || !i || !j || !k)
        return NULL;
    tex_expr *prod = tex_mul(tex_cast(TEX_F32, TEX_AT(a, tex_iv(i), tex_iv(k))),
                             tex_cast(TEX_F32, TEX_AT(b, tex_iv(k), tex_iv(j))));
    return tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, &k));
}

/* D[i,j] = P[i,j] over an f32 tile; NULL on failure. */
static tex_tensor *store_desc(tex_ctx *ctx)
{
    tex_tensor *p = tile(ctx, "P", TEX_F32);
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 16)), *j = tex_axis(ctx, "j", tex_int(ctx, 16));
    if (!p || !i || !j)
        return NULL;
    return tex_compute(ctx, "D", 2, (tex_iter *[]){i, j}, TEX_AT(p, tex_iv(i), tex_iv(j)));
}

/* D[i,j] = f16(max(P[i,j], 0)) over an f32 tile; NULL on failure. */
static tex_tensor *relu_desc(tex_ctx *ctx)
{
    tex_tensor *p = tile(ctx, "P", TEX_F32);
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 16)), *j = tex_axis(ctx, "j", tex_int(ctx, 16));
    if (!p || !i || !j)
        return NULL;
    tex_expr *r = tex_max(TEX_AT(p, tex_iv(i), tex_iv(j)), tex_const(ctx, TEX_F32, 0));
    return tex_compute(ctx, "D", 2, (tex_iter *[]){i, j}, tex_cast(TEX_F16, r));
}

unsigned texi_intrin_frag_operands(const tex_intrin *in)
{
    if (!in->builtin)
        return 0;
    if (strcmp(in->builtin, "cuda.mma_m16n16k16_f16f32_frag") == 0)
        return 1u << 2; /* C */
    if (strcmp(in->builtin, "cuda.mma_frag_relu_f16") == 0)
        return 1u << 0 | 1u << 1; /* P, D */
    if (strcmp(in->builtin, "cuda.mma_m16n16k16_f16f32_afrag") == 0)
        return 1u << 0; /* A */
    if (strcmp(in->builtin, "cuda.mma_frag_store_f32") == 0)
        return 1u << 0; /* P */
    return 0;
}

tex_intrin *texi_intrin_builtin_cuda_frag(tex_ctx *ctx, const char *name)
{
    if (strcmp(name, "cuda.mma_m16n16k16_f16f32_frag") == 0)
        return make(ctx, name, gemm_desc(ctx), with_common(ctx, frag_source), NULL,
                    "tex_mma_frag_reset", "tex_mma_frag_update");
    if (strcmp(name, "cuda.mma_frag_relu_f16") == 0)
        return make(ctx, name, relu_desc(ctx), relu_source, "tex_mma_frag_relu", NULL, NULL);
    if (strcmp(name, "cuda.mma_frag_store_f32") == 0)
        return make(ctx, name, store_desc(ctx), store_source, "tex_mma_frag_store", NULL, NULL);
    if (strcmp(name, "cuda.mma_m16n16k16_f16f32_afrag") == 0)
        return make(ctx, name, gemm_desc(ctx), afrag_source, NULL, "tex_mma_afrag_reset",
                    "tex_mma_afrag_update");
    return NULL;
}
