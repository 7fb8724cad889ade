/*
 * The CUDA emulation harness (tests/support/cuda_emu.h, tests/cuda/emu/).
 * First the harness itself on hand-written CUDA snippets: barrier semantics
 * through shared memory (a rotation with a write-after-read hazard,
 * __syncthreads_count, threads that returned no longer counted), warp
 * shuffles of every flavour and type on a full and a partial warp (poison
 * from absent lanes), disjoint lane groups shuffling at once, ballots,
 * atomics from many blocks, f16/bf16 conversions bit-exact against
 * src/util/half.c, wmma tile products (col/row-major B, an accumulator
 * loaded and stored column-major: the cuda.wmma intrinsics' pattern), the
 * CUDA math spellings with the emitter's helpers, compile errors and bad
 * launches reported, a deadlock reported (in a child process). Then real
 * tex GPU schedules built for "cuda -emit-only" and run by their launch
 * plan against the oracle (vector add with a symbolic size and a tail, a
 * tiled matmul bound to blocks and threads with non-dividing tiles,
 * vectorized rows of f32 and i32 on 4 and 2 lanes with aligned and
 * misaligned loads, f64 and i64 on 2 (tests/support/vec_cases.h), an f16 elementwise
 * expression), and every case of tests/support/gpu_cases.h at
 * its small sizes, with constant and with symbolic sizes. Skipped when g++
 * ($CXX) is missing.
 */
#include "tt.h"

#include "backend_cuda/codegen_cuda.h"
#include "support/cuda_emu.h"
#include "util/half.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tex/tex.h"

#include "support/gpu_cases.h"
#include "support/vec_cases.h"

static char errbuf[8192];

static cuda_emu *build(const char *src)
{
    cuda_emu *e = cuda_emu_build(src, errbuf, sizeof errbuf);
    if (!e)
        TT_FAILF("%s", errbuf);
    return e;
}

/* Generated code compiles without warnings: the host compiler's -Wall
 * output about it is a failure. */
static void show_log(const char *name, const cuda_emu *e)
{
    if (e && e->log && e->log[0])
        TT_FAILF("%s: g++ -Wall warns about the generated code:\n%.2000s", name, e->log);
}

static int launch(cuda_emu *e, const char *name, unsigned gx, unsigned bx, int n,
                  const cuda_emu_arg args[])
{
    int rc = cuda_emu_launch_raw(e, name, (unsigned[]){gx, 1, 1}, (unsigned[]){bx, 1, 1}, n, args,
                                 errbuf, sizeof errbuf);
    if (rc != 0)
        TT_FAILF("%s", errbuf);
    return rc;
}

#define PTR(x)                                                                                     \
    {                                                                                              \
        .kind = CUDA_EMU_PTR, .p = (x)                                                             \
    }
#define I64(x)                                                                                     \
    {                                                                                              \
        .kind = CUDA_EMU_I64, .i = (x)                                                             \
    }

/* ------------------------------------------------------------ the harness */

static const char barrier_src[] =
    "extern \"C\" __global__ void __launch_bounds__(96) rot(float *out, const float *in, int *cnt,"
    " int64_t steps)\n"
    "{\n"
    "    __shared__ float buf[96];\n"
    "    unsigned t = threadIdx.x, n = blockDim.x;\n"
    "    float v = in[blockIdx.x * n + t];\n"
    "    for (int64_t s = 0; s < steps; ++s) {\n"
    "        buf[t] = v;\n"
    "        __syncthreads();\n"
    "        v = buf[(t + 1) % n] + 1.0f;\n"
    "        __syncthreads();\n"
    "    }\n"
    "    out[blockIdx.x * n + t] = v;\n"
    "    int c = __syncthreads_count(t % 3 == 0);\n"
    "    if (t == 0) cnt[blockIdx.x] = c;\n"
    "    if (t >= 50) return;\n"
    "    __syncthreads(); /* only the live threads count after the others returned */\n"
    "    if (t == 0) cnt[blockIdx.x] += 1000;\n"
    "}\n";

static void test_barrier_shared(void)
{
    if (!cuda_emu_have_cxx()) {
        TT_SKIP("g++ not found");
        return;
    }
    cuda_emu *e = build(barrier_src);
    if (!e)
        return;
    enum { B = 96, G = 3, STEPS = 37 };
    float in[G * B], out[G * B];
    int cnt[G] = {0};
    for (int i = 0; i < G * B; i++)
        in[i] = (float)(i * 7 % 101);
    cuda_emu_arg args[] = {PTR(out), PTR(in), PTR(cnt), I64(STEPS)};
    if (launch(e, "rot", G, B, 4, args) == 0) {
        for (int b = 0; b < G; b++) {
            for (int t = 0; t < B; t++)
                TT_EQ_INT(out[b * B + t], in[b * B + (t + STEPS) % B] + STEPS);
            TT_EQ_INT(cnt[b], 32 + 1000);
        }
    }
    cuda_emu_free(e);
}

/* Every shuffle flavour of type T into out[op * nthreads + tid]. */
static const char shuffle_src[] =
    "template <typename T> __device__ void shuffles(T *out, unsigned mask)\n"
    "{\n"
    "    unsigned t = threadIdx.x, n = blockDim.x;\n"
    "    T v = (T)(int)(t + 1);\n"
    "    out[0 * n + t] = __shfl_sync(mask, v, 3);\n"
    "    out[1 * n + t] = __shfl_up_sync(mask, v, 1);\n"
    "    out[2 * n + t] = __shfl_down_sync(mask, v, 1, 8);\n"
    "    out[3 * n + t] = __shfl_xor_sync(mask, v, 5);\n"
    "    T s = v;\n"
    "    for (int o = 16; o > 0; o /= 2)\n"
    "        s = s + __shfl_xor_sync(mask, s, o);\n"
    "    out[4 * n + t] = s;\n"
    "    out[5 * n + t] = __shfl_down_sync(mask, v, 16);\n"
    "}\n"
    "extern \"C\" __global__ void shf_f(float *o, unsigned m) { shuffles(o, m); }\n"
    "extern \"C\" __global__ void shf_d(double *o, unsigned m) { shuffles(o, m); }\n"
    "extern \"C\" __global__ void shf_i(int *o, unsigned m) { shuffles(o, m); }\n"
    "extern \"C\" __global__ void shf_u(unsigned *o, unsigned m) { shuffles(o, m); }\n"
    "extern \"C\" __global__ void shf_l(long long *o, unsigned m) { shuffles(o, m); }\n"
    "extern \"C\" __global__ void shf_h(float *o, unsigned m)\n"
    "{\n"
    "    unsigned t = threadIdx.x;\n"
    "    __half h = __float2half_rn((float)t + 0.5f);\n"
    "    o[t] = __half2float(__shfl_xor_sync(m, h, 1));\n"
    "}\n"
    "extern \"C\" __global__ void halves(int *o)\n"
    "{\n"
    "    int t = (int)threadIdx.x, v = t;\n"
    "    if (t % 32 < 16) v = __shfl_xor_sync(0x0000ffffu, v, 1);\n"
    "    else v = __shfl_xor_sync(0xffff0000u, v, 2);\n"
    "    o[t] = v;\n"
    "}\n"
    "extern \"C\" __global__ void vote(unsigned *o)\n"
    "{\n"
    "    unsigned t = threadIdx.x;\n"
    "    o[t] = __ballot_sync(0xffffffffu, t % 3 == 0);\n"
    "    o[blockDim.x + t] = __activemask();\n"
    "    __syncwarp();\n"
    "}\n";

/* The expected value of shuffle op for thread t of a block of n threads;
 * NAN for a read of an absent lane (the emulator's poison). */
static double shuffle_expect(int op, int t, int n)
{
    int lane = t % 32, base = t - lane, lanes = n - base < 32 ? n - base : 32;
    int src = op == 0   ? 3
              : op == 1 ? lane - 1
              : op == 2 ? lane + 1
              : op == 3 ? lane ^ 5
                        : lane + 16;
    bool own = (op == 1 && src < 0) || (op == 2 && src / 8 != lane / 8) || (op == 5 && src >= 32);
    if (op == 4) {
        if (lanes < 32)
            return NAN; /* the butterfly reads lanes that do not exist */
        return 32.0 * (base + 1) + 31 * 32 / 2;
    }
    if (own)
        return t + 1;
    return src < lanes ? base + src + 1 : NAN;
}

static void check_shuffles(cuda_emu *e, const char *name, int size, bool is_float)
{
    enum { N = 48 };
    char out[6 * N * 8];
    cuda_emu_arg args[] = {PTR(out), {.kind = CUDA_EMU_I32, .i = (int32_t)0xffffffff}};
    if (launch(e, name, 1, N, 2, args) != 0)
        return;
    for (int op = 0; op < 6; op++)
        for (int t = 0; t < N; t++) {
            double want = shuffle_expect(op, t, N), got;
            const char *p = out + (size_t)(op * N + t) * (size_t)size;
            if (is_float && size == 4)
                got = *(const float *)p;
            else if (is_float)
                got = *(const double *)p;
            else if (size == 4)
                got = *(const int *)p;
            else
                got = (double)*(const long long *)p;
            if (isnan(want) && !is_float && op == 4)
                continue; /* integer sums over poison: no fixed value */
            if (isnan(want) && !is_float)
                want =
                    size == 4 ? (double)(int)0xABABABAB : (double)(long long)0xABABABABABABABABULL;
            if (isnan(want) ? !isnan(got) : got != want)
                TT_FAILF("%s op %d thread %d: %g, expected %g", name, op, t, got, want);
        }
}

static void test_shuffles(void)
{
    if (!cuda_emu_have_cxx()) {
        TT_SKIP("g++ not found");
        return;
    }
    cuda_emu *e = build(shuffle_src);
    if (!e)
        return;
    check_shuffles(e, "shf_f", 4, true);
    check_shuffles(e, "shf_d", 8, true);
    check_shuffles(e, "shf_i", 4, false);
    check_shuffles(e, "shf_l", 8, false);
    unsigned u[6 * 64];
    cuda_emu_arg ua[] = {PTR(u), {.kind = CUDA_EMU_I32, .i = (int32_t)0xffffffff}};
    if (launch(e, "shf_u", 1, 64, 2, ua) == 0)
        TT_EQ_INT(u[0 * 64 + 40], 32 + 3 + 1);
    float h[40];
    cuda_emu_arg ha[] = {PTR(h), {.kind = CUDA_EMU_I32, .i = (int32_t)0xffffffff}};
    if (launch(e, "shf_h", 1, 40, 2, ha) == 0)
        for (int t = 0; t < 40; t++)
            TT_NEAR(h[t], (t ^ 1) + 0.5, 0);
    int hv[64];
    if (launch(e, "halves", 1, 64, 1, (cuda_emu_arg[]){PTR(hv)}) == 0)
        for (int t = 0; t < 64; t++)
            TT_EQ_INT(hv[t], t % 32 < 16 ? t ^ 1 : t ^ 2);
    unsigned v[2 * 40];
    cuda_emu_arg va[] = {PTR(v)};
    if (launch(e, "vote", 1, 40, 1, va) == 0) {
        TT_EQ_INT(v[0], 0x49249249u); /* lanes 0, 3, ..., 30 */
        TT_EQ_INT(v[35], 0x92u);      /* threads 33, 36, 39: lanes 1, 4, 7 of 8 */
        TT_EQ_INT(v[40 + 5], 0xffffffffu);
        TT_EQ_INT(v[40 + 33], 0xffu);
    }
    cuda_emu_free(e);
}

static const char atomic_src[] =
    "extern \"C\" __global__ void atom(int *i, unsigned *u, float *f, double *d, __half *h,\n"
    "                                 unsigned long long *ull, int *mx, int *mn, int *cas)\n"
    "{\n"
    "    int g = (int)(blockIdx.x * blockDim.x + threadIdx.x);\n"
    "    atomicAdd(i, 2);\n"
    "    atomicSub(i, 1);\n"
    "    atomicAdd(u, 3u);\n"
    "    atomicAdd(f, 1.0f);\n"
    "    atomicAdd(d, 0.5);\n"
    "    if (g < 100) atomicAdd(h, __float2half(1.0f));\n"
    "    atomicAdd(ull, 1ull << 33);\n"
    "    atomicMax(mx, g * 7 % 1013);\n"
    "    atomicMin(mn, 5000 - g);\n"
    "    int old = *cas, seen;\n"
    "    while ((seen = atomicCAS(cas, old, old + 1)) != old) old = seen;\n"
    "}\n";

static void test_atomics(void)
{
    if (!cuda_emu_have_cxx()) {
        TT_SKIP("g++ not found");
        return;
    }
    cuda_emu *e = build(atomic_src);
    if (!e)
        return;
    enum { G = 5, B = 200 };
    int i = 0, mx = -1, mn = 1 << 30, cas = 0;
    unsigned u = 0;
    float f = 0;
    double d = 0;
    uint16_t h = 0;
    unsigned long long ull = 0;
    cuda_emu_arg args[] = {PTR(&i),   PTR(&u),  PTR(&f),  PTR(&d),  PTR(&h),
                           PTR(&ull), PTR(&mx), PTR(&mn), PTR(&cas)};
    if (launch(e, "atom", G, B, 9, args) == 0) {
        int n = G * B, want_max = 0;
        for (int g = 0; g < n; g++)
            want_max = g * 7 % 1013 > want_max ? g * 7 % 1013 : want_max;
        TT_EQ_INT(i, n);
        TT_EQ_INT(u, 3 * n);
        TT_NEAR(f, n, 0);
        TT_NEAR(d, 0.5 * n, 0);
        TT_NEAR(texi_f16_to_f32(h), 100, 0);
        TT_EQ_INT(ull, (unsigned long long)n << 33);
        TT_EQ_INT(mx, want_max);
        TT_EQ_INT(mn, 5000 - (n - 1));
        TT_EQ_INT(cas, n);
    }
    cuda_emu_free(e);
}

static const char half_src[] =
    "extern \"C\" __global__ void conv(const float *in, uint16_t *h, uint16_t *b, float *hf,\n"
    "                                 float *bf, int64_t n)\n"
    "{\n"
    "    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    __half x = __float2half_rn(in[i]);\n"
    "    __nv_bfloat16 y = __float2bfloat16_rn(in[i]);\n"
    "    h[i] = __half_as_ushort(x);\n"
    "    b[i] = __bfloat16_as_ushort(y);\n"
    "    hf[i] = __half2float(x);\n"
    "    bf[i] = __bfloat162float(y);\n"
    "}\n";

static void test_fp16(void)
{
    if (!cuda_emu_have_cxx()) {
        TT_SKIP("g++ not found");
        return;
    }
    cuda_emu *e = build(half_src);
    if (!e)
        return;
    enum { N = 4000 };
    static float in[N], hf[N], bf[N];
    static uint16_t h[N], b[N];
    const float special[] = {
        0.0f,      -0.0f,    1.0f,     65504.0f, 65520.0f,       65519.99f,       1e-8f,
        5.96e-8f,  2.98e-8f, 2.99e-8f, 6.1e-5f,  1.00048828125f, 1.000732421875f, INFINITY,
        -INFINITY, NAN,      3.0e38f,  -1.5e-40f};
    uint64_t seed = 12345;
    for (int i = 0; i < N; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t bits = (uint32_t)(seed >> 32);
        float v;
        memcpy(&v, &bits, 4);
        in[i] = i < (int)(sizeof special / sizeof special[0]) ? special[i]
                : i % 2                                       ? v
                        : ldexpf((float)(bits % 100000) / 7.0f, (int)(bits % 40) - 30);
    }
    cuda_emu_arg args[] = {PTR(in), PTR(h), PTR(b), PTR(hf), PTR(bf), I64(N)};
    if (launch(e, "conv", (N + 127) / 128, 128, 6, args) == 0)
        for (int i = 0; i < N; i++) {
            uint16_t wh = texi_f16_from_f32(in[i]), wb = texi_bf16_from_f32(in[i]);
            if (h[i] != wh || b[i] != wb)
                TT_FAILF("%.9g: f16 0x%04x (want 0x%04x), bf16 0x%04x (want 0x%04x)", in[i], h[i],
                         wh, b[i], wb);
            float fh = texi_f16_to_f32(wh), fb = texi_bf16_to_f32(wb);
            if (memcmp(&fh, &hf[i], 4) != 0 || memcmp(&fb, &bf[i], 4) != 0)
                TT_FAILF("%.9g: widening %.9g / %.9g", in[i], hf[i], bf[i]);
        }
    cuda_emu_free(e);
}

static const char wmma_src[] =
    "#include <mma.h>\n"
    "using namespace nvcuda;\n"
    "extern \"C\" __global__ void mm(const __half *a, const __half *b, float *c)\n"
    "{\n"
    "    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;\n"
    "    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;\n"
    "    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;\n"
    "    int w = threadIdx.x / 32; /* warp w computes tile w of C (16 x 32) */\n"
    "    wmma::fill_fragment(acc, 0.0f);\n"
    "    for (int k = 0; k < 32; k += 16) {\n"
    "        wmma::load_matrix_sync(fa, a + k, 32);\n"
    "        wmma::load_matrix_sync(fb, b + w * 16 * 32 + k, 32);\n"
    "        wmma::mma_sync(acc, fa, fb, acc);\n"
    "    }\n"
    "    for (int i = 0; i < acc.num_elements; i++) acc.x[i] *= 2.0f;\n"
    "    wmma::store_matrix_sync(c + w * 16, acc, 32, wmma::mem_row_major);\n"
    "}\n"
    "/* C += A B with B row-major, C loaded first (the cuda.wmma intrinsics' update). */\n"
    "extern \"C\" __global__ void upd(const __nv_bfloat16 *a, const __nv_bfloat16 *b, float *c)\n"
    "{\n"
    "    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;\n"
    "    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;\n"
    "    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;\n"
    "    wmma::load_matrix_sync(fa, a, 16);\n"
    "    wmma::load_matrix_sync(fb, b, 16);\n"
    "    wmma::load_matrix_sync(acc, c, 16, wmma::mem_col_major);\n"
    "    wmma::mma_sync(acc, fa, fb, acc);\n"
    "    wmma::store_matrix_sync(c, acc, 16, wmma::mem_col_major);\n"
    "}\n";

static void test_wmma(void)
{
    if (!cuda_emu_have_cxx()) {
        TT_SKIP("g++ not found");
        return;
    }
    cuda_emu *e = build(wmma_src);
    if (!e)
        return;
    /* A: 16 x 32 row-major; B: 32 x 32 stored column-major (b[j * 32 + k]). */
    uint16_t a[16 * 32], b[32 * 32];
    float c[16 * 32];
    for (int i = 0; i < 16 * 32; i++)
        a[i] = texi_f16_from_f32((float)(i % 7) - 3.0f);
    for (int i = 0; i < 32 * 32; i++)
        b[i] = texi_f16_from_f32((float)(i % 5) * 0.5f);
    cuda_emu_arg args[] = {PTR(a), PTR(b), PTR(c)};
    if (launch(e, "mm", 1, 64, 3, args) == 0)
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 32; j++) {
                double s = 0;
                for (int k = 0; k < 32; k++)
                    s += texi_f16_to_f32(a[i * 32 + k]) * texi_f16_to_f32(b[j * 32 + k]);
                TT_NEAR(c[i * 32 + j], 2 * s, 1e-6);
            }
    uint16_t ab[256], bb[256];
    float cc[256], want[256];
    for (int i = 0; i < 256; i++) {
        ab[i] = texi_bf16_from_f32((float)(i % 9) * 0.25f - 1.0f);
        bb[i] = texi_bf16_from_f32((float)(i % 11) * 0.125f);
        cc[i] = (float)(i % 3);
    }
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            double s = cc[j * 16 + i]; /* C is column-major */
            for (int k = 0; k < 16; k++)
                s += texi_bf16_to_f32(ab[i * 16 + k]) * texi_bf16_to_f32(bb[k * 16 + j]);
            want[j * 16 + i] = (float)s;
        }
    cuda_emu_arg uargs[] = {PTR(ab), PTR(bb), PTR(cc)};
    if (launch(e, "upd", 2, 32, 3, uargs) == 0) /* two blocks: C += A B twice */
        for (int i = 0; i < 256; i++)
            TT_NEAR(cc[i], 2 * want[i] - (float)(i % 3), 1e-6);
    cuda_emu_free(e);
}

static const char math_src[] =
    "extern \"C\" __global__ void m(float *o, double *d)\n"
    "{\n"
    "    float x = 0.75f;\n"
    "    o[0] = rsqrtf(4.0f); o[1] = __expf(x) - expf(x); o[2] = fminf(x, 0.5f);\n"
    "    o[3] = __fdividef(1.0f, 4.0f); o[4] = __int_as_float(0x3f800000);\n"
    "    o[5] = tanhf(x) + erff(x) + fabsf(-x) + floorf(x) + ceilf(x) + roundf(x) + sinf(x) + "
    "cosf(x)\n"
    "           + powf(x, 2.0f) + fmaf(x, x, x) + fmodf(5.0f, x) + logf(x) + sqrtf(x) + __logf(x) "
    "+ __powf(x, x)\n"
    "           + __sinf(x) + __cosf(x) + __log2f(x) + __exp10f(x);\n"
    "    o[6] = (float)max(3, 4) + min(2.0f, 1.0f) + __saturatef(2.0f);\n"
    "    d[0] = rsqrt(16.0); d[1] = __longlong_as_double(0x3ff0000000000000LL) + "
    "tex_floordiv_i64(-7, 2)\n"
    "           + tex_floormod_i32(-7, 3) + tex_max_f64(1.0, 2.0) + tex_abs_i32(-3);\n"
    "    d[2] = (double)tex_round_f16(1.0009765625f) + tex_round_bf16(1.00390625f);\n"
    "}\n";

static void test_math(void)
{
    if (!cuda_emu_have_cxx()) {
        TT_SKIP("g++ not found");
        return;
    }
    texi_sb src;
    texi_sb_init(&src);
    texi_sb_puts(&src, texi_cu_prelude);
    texi_cp_helpers(&texi_cu_target, &src, ~0u); /* every helper the printer may call */
    texi_sb_puts(&src, math_src);
    cuda_emu *e = src.oom ? NULL : build(src.buf);
    texi_sb_fini(&src);
    if (!e)
        return;
    float o[7];
    double d[3];
    cuda_emu_arg args[] = {PTR(o), PTR(d)};
    if (launch(e, "m", 1, 1, 2, args) == 0) {
        TT_NEAR(o[0], 0.5, 1e-7);
        TT_NEAR(o[1], 0, 1e-6);
        TT_NEAR(o[2], 0.5, 0);
        TT_NEAR(o[3], 0.25, 0);
        TT_NEAR(o[4], 1, 0);
        TT_CHECK(isfinite(o[5]));
        TT_NEAR(o[6], 4 + 1 + 1, 0);
        TT_NEAR(d[0], 0.25, 1e-15);
        TT_NEAR(d[1], 1 - 4 + 2 + 2 + 3, 0);
        TT_NEAR(d[2], 1.0009765625 + 1.0, 0); /* bf16 rounds 1+2^-8 to even: 1.0 */
    }
    cuda_emu_free(e);
}

static void test_compile_error(void)
{
    if (!cuda_emu_have_cxx()) {
        TT_SKIP("g++ not found");
        return;
    }
    cuda_emu *e = cuda_emu_build("extern \"C\" __global__ void k(float *o) { o[0] = nope; }\n",
                                 errbuf, sizeof errbuf);
    TT_CHECK(e == NULL);
    TT_CHECK(strstr(errbuf, "host compiler failed") && strstr(errbuf, "nope"));
    cuda_emu_free(e);
    e = build("extern \"C\" __global__ void k(float *o) { o[threadIdx.x] = 1.0f; }\n");
    if (!e)
        return;
    float o[4];
    TT_CHECK(cuda_emu_launch_raw(e, "k", (unsigned[]){1, 1, 1}, (unsigned[]){2048, 1, 1}, 1,
                                 (cuda_emu_arg[]){PTR(o)}, errbuf, sizeof errbuf) != 0);
    TT_CHECK(strstr(errbuf, "invalid launch") != NULL);
    TT_CHECK(cuda_emu_launch_raw(e, "missing", (unsigned[]){1, 1, 1}, (unsigned[]){1, 1, 1}, 1,
                                 (cuda_emu_arg[]){PTR(o)}, errbuf, sizeof errbuf) != 0);
    TT_CHECK(strstr(errbuf, "'missing' not found") != NULL);
    cuda_emu_free(e);
}

/* A shuffle whose mask names a lane that never comes is reported as a
 * deadlock and aborts (in a child process). */
static void test_deadlock(void)
{
    if (!cuda_emu_have_cxx()) {
        TT_SKIP("g++ not found");
        return;
    }
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload")) {
        TT_SKIP("under valgrind (the aborting child would report its threads as leaks)");
        return;
    }
    cuda_emu *e = build("extern \"C\" __global__ void k(float *o)\n"
                        "{ float v = 1.0f; if (threadIdx.x < 5) v = __shfl_sync(0xffu, v, 0);\n"
                        "  o[threadIdx.x] = v; }\n");
    if (!e)
        return;
    char log[] = "/tmp/tex_cuda_emu_deadlock.XXXXXX";
    int fd = mkstemp(log);
    TT_CHECK(fd >= 0);
    fflush(NULL);
    pid_t pid = fd >= 0 ? fork() : -1;
    if (pid == 0) {
        dup2(fd, 2);
        setenv("TEX_CUDA_EMU_TIMEOUT", "1", 1);
        float o[8];
        cuda_emu_launch_raw(e, "k", (unsigned[]){1, 1, 1}, (unsigned[]){8, 1, 1}, 1,
                            (cuda_emu_arg[]){PTR(o)}, errbuf, sizeof errbuf);
        _exit(0);
    }
    int st = 0;
    if (pid > 0)
        waitpid(pid, &st, 0);
    TT_CHECK(pid > 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
    char *text = cuda_emu_slurp(log);
    TT_CHECK(text && strstr(text, "deadlock") && strstr(text, "__shfl_sync"));
    free(text);
    if (fd >= 0)
        close(fd);
    unlink(log);
    cuda_emu_free(e);
}

/* ------------------------------------------------------ tex GPU schedules */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

/* Random values in +-[0.5, 1.5] (never zero) into a; the pattern of dtype. */
static void fill_random(DLTensor *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        n *= a->shape[i];
    for (int64_t i = 0; i < n; i++) {
        rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
        double u = (double)(rng_state >> 11) / 9007199254740992.0;
        float v = (float)((u < 0.5 ? -1 : 1) * (0.5 + 2 * fabs(u - 0.5)));
        if (a->dtype.code == kDLFloat && a->dtype.bits == 32)
            ((float *)a->data)[i] = v;
        else if (a->dtype.code == kDLFloat && a->dtype.bits == 64)
            ((double *)a->data)[i] = v;
        else if (a->dtype.code == kDLFloat && a->dtype.bits == 16)
            ((uint16_t *)a->data)[i] = texi_f16_from_f32(v);
        else if (a->dtype.code == kDLBfloat)
            ((uint16_t *)a->data)[i] = texi_bf16_from_f32(v);
        else if (a->dtype.bits == 32)
            ((int32_t *)a->data)[i] = (int32_t)(v * 8);
        else
            memset((char *)a->data + i * (a->dtype.bits / 8), (int)(v * 8), a->dtype.bits / 8);
    }
}

static int64_t numel(const DLTensor *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        n *= a->shape[i];
    return n;
}

static double elem(const DLTensor *a, int64_t i)
{
    if (a->dtype.code == kDLFloat && a->dtype.bits == 32)
        return ((const float *)a->data)[i];
    if (a->dtype.code == kDLFloat && a->dtype.bits == 64)
        return ((const double *)a->data)[i];
    if (a->dtype.code == kDLFloat && a->dtype.bits == 16)
        return texi_f16_to_f32(((const uint16_t *)a->data)[i]);
    if (a->dtype.code == kDLBfloat)
        return texi_bf16_to_f32(((const uint16_t *)a->data)[i]);
    if (a->dtype.bits == 32)
        return ((const int32_t *)a->data)[i];
    return ((const int64_t *)a->data)[i];
}

/* Compares got with want: 0 or the number of mismatches (the first few printed). */
static int compare(const char *what, const DLTensor *got, const DLTensor *want, double tol)
{
    int bad = 0;
    for (int64_t i = 0; i < numel(got); i++) {
        double g = elem(got, i), w = elem(want, i);
        double scale = fabs(w) > 1 ? fabs(w) : 1;
        if (!(fabs(g - w) <= tol * scale) && bad++ < 5)
            printf("  %s: element %lld is %.9g, expected %.9g\n", what, (long long)i, g, w);
    }
    return bad;
}

static double dtype_tol(DLDataType t)
{
    return t.code == kDLBfloat ? 2e-2 : t.bits == 16 ? 4e-3 : t.bits == 64 ? 1e-9 : 1e-4;
}

/*
 * Builds f for "cuda -emit-only", runs it in the emulator on random inputs
 * with the outputs poisoned, and compares every output with the oracle.
 * tensors/arrays: f's parameters in order (tensor args; vars given in vals);
 * outputs[i]: whether parameter i is written. Returns 0 when it matched.
 */
static int run_vs_oracle(tex_ctx *ctx, tex_func *f, int n, tex_tensor *const tensors[],
                         DLTensor *const arrays[], const tex_value vals[], const bool outputs[])
{
    tex_kernel *k = f ? tex_build(f, "cuda -emit-only") : NULL;
    if (!k) {
        TT_FAILF("tex_build: %s", tex_errmsg(ctx));
        return -1;
    }
    int rc = -1;
    cuda_emu *e = cuda_emu_build(tex_kernel_source(k), errbuf, sizeof errbuf);
    DLTensor *ref[16] = {NULL};
    tex_tensor *ref_t[16];
    int nref = 0;
    if (!e) {
        TT_FAILF("%s\n%s", errbuf, tex_kernel_source(k));
        goto out;
    }
    show_log(f->name, e);
    for (int i = 0; i < n; i++) {
        if (!tensors[i])
            continue;
        if (outputs[i]) {
            ref[nref] =
                tex_array_new(arrays[i]->ndim, arrays[i]->shape,
                              tex_dtype_from_dlpack(arrays[i]->dtype), (DLDevice){kDLCPU, 0});
            memset(arrays[i]->data, 0xFF, (size_t)(numel(arrays[i]) * arrays[i]->dtype.bits / 8));
        } else {
            fill_random(arrays[i]);
            ref[nref] = arrays[i];
        }
        ref_t[nref++] = tensors[i];
    }
    if (tex_eval_reference(ctx, nref, ref_t, ref) != 0) {
        TT_FAILF("tex_eval_reference: %s", tex_errmsg(ctx));
        goto out;
    }
    if (cuda_emu_run(e, k, n, vals, errbuf, sizeof errbuf) != 0) {
        TT_FAILF("%s\n%s", errbuf, tex_kernel_source(k));
        goto out;
    }
    rc = 0;
    for (int i = 0, r = 0; i < n; i++) {
        if (!tensors[i])
            continue;
        if (outputs[i] && compare(tex_tensor_name(tensors[i]), arrays[i], ref[r],
                                  dtype_tol(arrays[i]->dtype)) != 0)
            rc = -1;
        r++;
    }
    if (rc != 0)
        TT_FAILF("%s: emulated CUDA differs from the oracle:\n%s", f->name, tex_kernel_source(k));
out:
    for (int i = 0, r = 0; i < n; i++) {
        if (!tensors[i])
            continue;
        if (outputs[i])
            tex_array_free(ref[r]);
        r++;
    }
    cuda_emu_free(e);
    tex_kernel_free(k);
    return rc;
}

static DLTensor *arr(tex_dtype t, int ndim, const int64_t *shape)
{
    return tex_array_new(ndim, shape, t, (DLDevice){kDLCPU, 0});
}

static void test_tex_vector_add(void)
{
    if (!cuda_emu_have_cxx()) {
        TT_SKIP("g++ not found");
        return;
    }
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *n = tex_var(ctx, "n", TEX_I64);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 1, (tex_expr *[]){n});
    tex_tensor *B = tex_placeholder(ctx, "B", TEX_F32, 1, (tex_expr *[]){n});
    tex_iter *i = tex_axis(ctx, "i", n);
    tex_tensor *C = tex_compute(ctx, "C", 1, (tex_iter *[]){i},
                                tex_add(TEX_AT(A, tex_iv(i)), TEX_AT(B, tex_iv(i))));
    tex_schedule *s = tex_schedule_new(ctx, 1, (tex_tensor *[]){C});
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *o, *in;
    TT_EQ_INT(tex_split(st, i, tex_int(ctx, 64), &o, &in), 0);
    TT_EQ_INT(tex_bind(st, o, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, in, TEX_THREAD_X), 0);
    tex_func *f = tex_lower_tensors(s, "vadd", 3, (tex_tensor *[]){A, B, C});
    int64_t sizes[] = {1, 63, 64, 1000};
    for (int c = 0; c < 4; c++) {
        DLTensor *a = arr(TEX_F32, 1, &sizes[c]), *b = arr(TEX_F32, 1, &sizes[c]),
                 *r = arr(TEX_F32, 1, &sizes[c]);
        tex_value v[] = {{.kind = TEX_VAL_TENSOR, .t = a},
                         {.kind = TEX_VAL_TENSOR, .t = b},
                         {.kind = TEX_VAL_TENSOR, .t = r}};
        run_vs_oracle(ctx, f, 3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){a, b, r}, v,
                      (bool[]){false, false, true});
        tex_array_free(a);
        tex_array_free(b);
        tex_array_free(r);
    }
    tex_ctx_free(ctx);
}

/* vec_cases.h's rows against the oracle: f32 and i32 on 4 and 2 lanes,
 * aligned and with X read one column on; f64 and i64 on 2 lanes; 3 rows of
 * a symbolic count. */
static void test_tex_vector_rows(void)
{
    if (!cuda_emu_have_cxx()) {
        TT_SKIP("g++ not found");
        return;
    }
    static const struct {
        tex_dtype t;
        int lanes, shift;
    } cases[] = {{TEX_F32, 4, 0}, {TEX_I32, 4, 0}, {TEX_F32, 2, 0}, {TEX_I32, 2, 0},
                 {TEX_F32, 4, 1}, {TEX_I32, 4, 1}, {TEX_F32, 2, 1}, {TEX_I32, 2, 1},
                 {TEX_F64, 2, 0}, {TEX_I64, 2, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tex_ctx *ctx = tex_ctx_new();
        tex_dtype t = cases[c].t;
        int shift = cases[c].shift;
        int64_t xshape[] = {3, 64 + shift}, yshape[] = {3, 64};
        vc_fn r = vc_rows(ctx, t, tex_var(ctx, "n", TEX_I64), tex_int(ctx, 64),
                          tex_int(ctx, 64 + shift), shift, cases[c].lanes);
        DLTensor *x = arr(t, 2, xshape), *y = arr(t, 2, yshape);
        tex_value v[] = {{.kind = TEX_VAL_TENSOR, .t = x}, {.kind = TEX_VAL_TENSOR, .t = y}};
        run_vs_oracle(ctx, r.f, 2, (tex_tensor *[]){r.x, r.y}, (DLTensor *[]){x, y}, v,
                      (bool[]){false, true});
        tex_array_free(x);
        tex_array_free(y);
        tex_ctx_free(ctx);
    }
}

static void test_tex_matmul(void)
{
    if (!cuda_emu_have_cxx()) {
        TT_SKIP("g++ not found");
        return;
    }
    tex_ctx *ctx = tex_ctx_new();
    enum { M = 50, N = 37, K = 29 };
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){M, K});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){K, N});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, M)), *j = tex_axis(ctx, "j", tex_int(ctx, N));
    tex_iter *r = tex_reduce_axis(ctx, "k", tex_int(ctx, K));
    tex_expr *prod = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(r)), TEX_AT(B, tex_iv(r), tex_iv(j)));
    tex_tensor *C =
        tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, (tex_iter *[]){r}));
    tex_schedule *s = tex_schedule_new(ctx, 1, (tex_tensor *[]){C});
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *io, *ii, *jo, *ji, *ko, *ki;
    TT_EQ_INT(tex_split(st, i, tex_int(ctx, 16), &io, &ii), 0);
    TT_EQ_INT(tex_split(st, j, tex_int(ctx, 8), &jo, &ji), 0);
    TT_EQ_INT(tex_split(st, r, tex_int(ctx, 4), &ko, &ki), 0);
    TT_EQ_INT(tex_reorder(st, 6, (tex_iter *[]){io, jo, ii, ji, ko, ki}), 0);
    TT_EQ_INT(tex_bind(st, io, TEX_BLOCK_Y), 0);
    TT_EQ_INT(tex_bind(st, jo, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, ii, TEX_THREAD_Y), 0);
    TT_EQ_INT(tex_bind(st, ji, TEX_THREAD_X), 0);
    tex_func *f = tex_lower_tensors(s, "mm", 3, (tex_tensor *[]){A, B, C});
    DLTensor *a = arr(TEX_F32, 2, (int64_t[]){M, K}), *b = arr(TEX_F32, 2, (int64_t[]){K, N}),
             *c = arr(TEX_F32, 2, (int64_t[]){M, N});
    tex_value v[] = {{.kind = TEX_VAL_TENSOR, .t = a},
                     {.kind = TEX_VAL_TENSOR, .t = b},
                     {.kind = TEX_VAL_TENSOR, .t = c}};
    run_vs_oracle(ctx, f, 3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){a, b, c}, v,
                  (bool[]){false, false, true});
    tex_array_free(a);
    tex_array_free(b);
    tex_array_free(c);
    tex_ctx_free(ctx);
}

static void test_tex_f16(void)
{
    if (!cuda_emu_have_cxx()) {
        TT_SKIP("g++ not found");
        return;
    }
    tex_ctx *ctx = tex_ctx_new();
    enum { N = 1000 };
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F16, 1, (int64_t[]){N});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F16, 1, (int64_t[]){N});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, N));
    tex_expr *x = TEX_AT(A, tex_iv(i));
    tex_tensor *C = tex_compute(ctx, "C", 1, (tex_iter *[]){i},
                                tex_add(tex_mul(tex_exp(x), TEX_AT(B, tex_iv(i))), x));
    tex_schedule *s = tex_schedule_new(ctx, 1, (tex_tensor *[]){C});
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *o, *in;
    TT_EQ_INT(tex_split(st, i, tex_int(ctx, 96), &o, &in), 0);
    TT_EQ_INT(tex_bind(st, o, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, in, TEX_THREAD_X), 0);
    tex_func *f = tex_lower_tensors(s, "hfma", 3, (tex_tensor *[]){A, B, C});
    DLTensor *a = arr(TEX_F16, 1, (int64_t[]){N}), *b = arr(TEX_F16, 1, (int64_t[]){N}),
             *c = arr(TEX_F16, 1, (int64_t[]){N});
    tex_value v[] = {{.kind = TEX_VAL_TENSOR, .t = a},
                     {.kind = TEX_VAL_TENSOR, .t = b},
                     {.kind = TEX_VAL_TENSOR, .t = c}};
    run_vs_oracle(ctx, f, 3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){a, b, c}, v,
                  (bool[]){false, false, true});
    tex_array_free(a);
    tex_array_free(b);
    tex_array_free(c);
    tex_ctx_free(ctx);
}

/* ------------------------------------- the GPU cases of gpu_cases.h */

/* One case of gpu_cases.h built for "cuda -emit-only", run in the emulator
 * and compared with the oracle. */
static void emulate_check(gc_case *c)
{
    tex_kernel *k = NULL;
    cuda_emu *e = NULL;
    if (!c->f) {
        TT_FAILF("%s%s: %s", c->name, c->symbolic ? " (symbolic)" : "", c->why);
    } else if (!(k = tex_build(c->f, "cuda -emit-only"))) {
        TT_FAILF("%s: tex_build: %s", c->name, tex_errmsg(c->ctx));
    } else if (!(e = cuda_emu_build(tex_kernel_source(k), errbuf, sizeof errbuf))) {
        TT_FAILF("%s: %s\n%s", c->name, errbuf, tex_kernel_source(k));
    } else {
        show_log(c->name, e);
        cuda_emu_kernel m = {e, k};
        if (gc_run_compare(c, "emulated", cuda_emu_runner, &m, 1) != 0)
            TT_FAILF("%s\n%s", c->why, tex_kernel_source(k));
    }
    cuda_emu_free(e);
    tex_kernel_free(k);
}

#define GPU_CASE_TEST(name, id)                                                                    \
    static void test_gpu_##name(void)                                                              \
    {                                                                                              \
        if (!cuda_emu_have_cxx()) {                                                                \
            TT_SKIP("g++ not found");                                                              \
            return;                                                                                \
        }                                                                                          \
        gc_each_small(id, emulate_check);                                                          \
    }
GPU_CASE_TEST(matmul, GC_MATMUL)
GPU_CASE_TEST(transpose, GC_TRANSPOSE)
GPU_CASE_TEST(softmax, GC_SOFTMAX)
GPU_CASE_TEST(layernorm, GC_LAYERNORM)
GPU_CASE_TEST(conv2d, GC_CONV2D)
GPU_CASE_TEST(sum, GC_SUM)
GPU_CASE_TEST(vectile, GC_VECTILE)
GPU_CASE_TEST(stencil, GC_STENCIL)
GPU_CASE_TEST(b2b, GC_B2B)
GPU_CASE_TEST(b2b_unfused, GC_B2B_UNFUSED)
GPU_CASE_TEST(auto_matmul, GC_AUTO_MATMUL)
GPU_CASE_TEST(auto_softmax, GC_AUTO_SOFTMAX)
GPU_CASE_TEST(auto_layernorm, GC_AUTO_LAYERNORM)
GPU_CASE_TEST(auto_conv2d, GC_AUTO_CONV2D)
GPU_CASE_TEST(b2b_tc, GC_B2B_TC)
GPU_CASE_TEST(b2b_tc_unfused, GC_B2B_TC_UNFUSED)
GPU_CASE_TEST(b2b_regs, GC_B2B_REGS)

int main(void)
{
    TT_RUN(test_barrier_shared);
    TT_RUN(test_shuffles);
    TT_RUN(test_atomics);
    TT_RUN(test_fp16);
    TT_RUN(test_wmma);
    TT_RUN(test_math);
    TT_RUN(test_compile_error);
    TT_RUN(test_deadlock);
    TT_RUN(test_tex_vector_add);
    TT_RUN(test_tex_vector_rows);
    TT_RUN(test_tex_matmul);
    TT_RUN(test_tex_f16);
    TT_RUN(test_gpu_matmul);
    TT_RUN(test_gpu_transpose);
    TT_RUN(test_gpu_softmax);
    TT_RUN(test_gpu_layernorm);
    TT_RUN(test_gpu_conv2d);
    TT_RUN(test_gpu_sum);
    TT_RUN(test_gpu_vectile);
    TT_RUN(test_gpu_stencil);
    TT_RUN(test_gpu_b2b);
    TT_RUN(test_gpu_b2b_unfused);
    TT_RUN(test_gpu_auto_matmul);
    TT_RUN(test_gpu_auto_softmax);
    TT_RUN(test_gpu_auto_layernorm);
    TT_RUN(test_gpu_auto_conv2d);
    TT_RUN(test_gpu_b2b_tc);
    TT_RUN(test_gpu_b2b_tc_unfused);
    TT_RUN(test_gpu_b2b_regs);
    return tt_finish();
}
