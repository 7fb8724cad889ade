/*
 * tex_cuda_emu.h: lets the host C++ compiler build the CUDA C text tex
 * generates and run it on the CPU (tests/support/cuda_emu.h force-includes
 * it with `g++ -include tex_cuda_emu.h -I tests/cuda/emu`; cuda_fp16.h,
 * cuda_bf16.h and mma.h next to it replace the toolkit's headers).
 *
 * Execution model (what tex_emu_launch below implements):
 *  - One launch at a time per compiled module. tex_emu_launch creates one
 *    host thread per CUDA thread of a block (blockDim.x*y*z <= 1024) and
 *    runs the grid's blocks one after another with that pool: every thread
 *    runs block 0, all of them meet, then block 1, ... So `__shared__`
 *    becomes plain `static` storage: one instance, owned by the block that
 *    runs now. Shared memory keeps its contents from block to block
 *    (uninitialized on a device: a kernel must not rely on either).
 *  - threadIdx/blockIdx are thread_local, blockDim/gridDim globals.
 *  - __syncthreads is a real barrier of the block's live threads (a thread
 *    that returned from the kernel no longer counts, as on Volta and later).
 *  - Warps are threads 32w..32w+31 of the linear thread id (x fastest); the
 *    last warp of a block whose size is not a multiple of 32 has fewer
 *    lanes. Shuffles, ballots, __syncwarp and the wmma operations are
 *    warp-collective: the lanes named by the mask (and present) meet at a
 *    barrier of their warp (one per mask in use, so disjoint lane groups of
 *    diverged code meet separately), exchange through per-warp slots, and
 *    meet again.
 *    Reading a lane that is absent or not in the mask gives a poison value
 *    (NaN for floating types, 0xAB bytes for integers) so that code relying
 *    on undefined shuffles shows up; shfl_down/up/xor beyond the width
 *    segment return the caller's own value, as on the device.
 *  - Atomics are GCC __atomic builtins (CAS loops for float, double and
 *    16-bit types).
 *  - A barrier that waits longer than TEX_CUDA_EMU_TIMEOUT seconds (default
 *    60) is a deadlock (divergent __syncthreads, a shuffle mask naming a
 *    lane that never arrives): the process prints where and aborts, rather
 *    than hanging the test suite.
 * Math functions are the host libm's (expf ... of <math.h>) plus the CUDA
 * spellings that libm lacks (rsqrtf, __expf, __fdividef, __int_as_float...).
 * It is not a faithful CUDA: no memory model beyond the barriers' mutex
 * ordering, no launch limits except 1024 threads, no dynamic shared memory.
 */
#ifndef TEX_CUDA_EMU_H
#define TEX_CUDA_EMU_H

/* Tells device code written for the harness (the register-resident
 * tensor-core built-ins, src/schedule/intrin_cuda_frag.c) that it runs here. */
#define TEX_CUDA_EMULATION 1

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmath>
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_fp16.h"

/* ------------------------------------------------------------- qualifiers */

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static
#define __constant__ static
#define __align__(n) __attribute__((aligned(n)))
#define __CUDA_ARCH__ 800

/* ------------------------------------------------------------ vector types */

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};

#define TEX_EMU_VEC2(N, T, A)                                                                   \
    struct __attribute__((aligned(A))) N {                                                      \
        T x, y;                                                                                 \
    };                                                                                          \
    static inline N make_##N(T a, T b) { return N{a, b}; }
#define TEX_EMU_VEC4(N, T, A)                                                                   \
    struct __attribute__((aligned(A))) N {                                                      \
        T x, y, z, w;                                                                           \
    };                                                                                          \
    static inline N make_##N(T a, T b, T c, T d) { return N{a, b, c, d}; }
TEX_EMU_VEC2(float2, float, 8)
TEX_EMU_VEC4(float4, float, 16)
TEX_EMU_VEC2(double2, double, 16)
TEX_EMU_VEC2(int2, int, 8)
TEX_EMU_VEC4(int4, int, 16)
TEX_EMU_VEC2(uint2, unsigned, 8)
TEX_EMU_VEC4(uint4, unsigned, 16)
TEX_EMU_VEC2(longlong2, long long, 16)
TEX_EMU_VEC2(ulonglong2, unsigned long long, 16)
struct float3 {
    float x, y, z;
};
static inline float3 make_float3(float a, float b, float c) { return float3{a, b, c}; }

static thread_local uint3 threadIdx;
static thread_local uint3 blockIdx;
static dim3 blockDim, gridDim;
static const int warpSize = 32;

/* ------------------------------------------------------------ barriers */

namespace tex_emu_detail {

/* A reusable barrier: `need` arrivals release a generation. acc/result
 * carry __syncthreads_count/and/or. */
struct Sync {
    pthread_mutex_t mu; /* unused in a warp's groups (Warp.mu guards them) */
    pthread_cond_t cv;
    unsigned arrived, gen;
    long long acc, result;
    unsigned mask; /* a warp group's participants */
};

/* A warp's barriers, one per mask in use at the same time (lanes of
 * disjoint masks may meet concurrently on diverged paths). */
enum { WARP_GROUPS = 8 };
struct Warp {
    pthread_mutex_t mu;
    Sync group[WARP_GROUPS];
};

struct Block {
    Sync sync;           /* __syncthreads; its mutex guards everything here */
    unsigned live;       /* threads of the current block still in the kernel */
    unsigned done;       /* threads finished with the current block */
    pthread_cond_t end_cv;
    unsigned end_gen;
    unsigned nthreads;
};

static Block block = {{PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0},
                      0, 0, PTHREAD_COND_INITIALIZER, 0, 0};
static Warp warps[32];
static uint64_t warp_slot[32][32];
static pthread_once_t warps_once = PTHREAD_ONCE_INIT;
static thread_local unsigned tid, lane, warp;

static void init_warps()
{
    for (int w = 0; w < 32; w++) {
        pthread_mutex_init(&warps[w].mu, nullptr);
        for (int g = 0; g < WARP_GROUPS; g++)
            pthread_cond_init(&warps[w].group[g].cv, nullptr);
    }
}

static int timeout_seconds()
{
    const char *e = getenv("TEX_CUDA_EMU_TIMEOUT");
    int t = e ? atoi(e) : 0;
    return t > 0 ? t : 60;
}

/* Waits on cv (mu held) until *gen differs from g; aborts after `seconds`. */
static void wait_gen(pthread_cond_t *cv, pthread_mutex_t *mu, const unsigned *gen, unsigned g,
                     const char *what, int seconds)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += seconds;
    while (*gen == g) {
        if (pthread_cond_timedwait(cv, mu, &dl) == ETIMEDOUT && *gen == g) {
            fprintf(stderr,
                    "tex cuda emu: deadlock: thread (%u,%u,%u) of block (%u,%u,%u) waited %d s "
                    "in %s\n",
                    threadIdx.x, threadIdx.y, threadIdx.z, blockIdx.x, blockIdx.y, blockIdx.z,
                    seconds, what);
            abort();
        }
    }
}

/* One arrival at s (mu held); need arrivals release everyone. */
static long long arrive_locked(Sync *s, pthread_mutex_t *mu, unsigned need, long long contrib,
                               int op, const char *what)
{
    if (s->arrived == 0)
        s->acc = op == 2 ? 1 : 0;
    s->acc = op == 0 ? s->acc + contrib : op == 1 ? (s->acc || contrib) : (s->acc && contrib);
    if (++s->arrived >= need) {
        s->result = s->acc;
        s->arrived = 0;
        s->gen++;
        pthread_cond_broadcast(&s->cv);
        return s->result;
    }
    unsigned g = s->gen;
    wait_gen(&s->cv, mu, &s->gen, g, what, timeout_seconds());
    return s->result;
}

/* op: 0 sum, 1 or, 2 and of contrib over the block's live threads. */
static long long block_barrier(long long contrib, int op)
{
    pthread_mutex_lock(&block.sync.mu);
    long long r = arrive_locked(&block.sync, &block.sync.mu, block.live, contrib, op,
                                "__syncthreads");
    pthread_mutex_unlock(&block.sync.mu);
    return r;
}

/* Lanes of this thread's warp that exist in the block. */
static unsigned present_lanes()
{
    unsigned first = warp * 32, n = block.nthreads - first;
    return n >= 32 ? 0xffffffffu : (1u << n) - 1u;
}

static void warp_barrier(unsigned mask, const char *what)
{
    unsigned need = (unsigned)__builtin_popcount(mask & present_lanes());
    if (!(mask >> lane & 1u) || need == 0) {
        fprintf(stderr, "tex cuda emu: %s: lane %u of warp %u calls with mask 0x%08x without "
                        "its own bit\n", what, lane, warp, mask);
        abort();
    }
    pthread_once(&warps_once, init_warps);
    Warp *wp = &warps[warp];
    pthread_mutex_lock(&wp->mu);
    Sync *s = nullptr;
    for (int g = 0; g < WARP_GROUPS && !s; g++)
        if (wp->group[g].arrived > 0 && wp->group[g].mask == mask)
            s = &wp->group[g];
    for (int g = 0; g < WARP_GROUPS && !s; g++)
        if (wp->group[g].arrived == 0)
            s = &wp->group[g];
    if (!s) {
        fprintf(stderr, "tex cuda emu: %s: more than %d lane groups of warp %u wait at once\n",
                what, (int)WARP_GROUPS, warp);
        abort();
    }
    s->mask = mask;
    arrive_locked(s, &wp->mu, need, 0, 0, what);
    pthread_mutex_unlock(&wp->mu);
}

template <typename T> static inline T poison()
{
    T v;
    memset(&v, std::is_integral<T>::value ? 0xAB : 0xFF, sizeof v);
    return v;
}

/* Lane src's value of v (the caller's own when own_if_out), warp-collective. */
template <typename T> static T exchange(unsigned mask, T v, int src, bool in_segment,
                                        const char *what)
{
    static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
    memcpy(&warp_slot[warp][lane], &v, sizeof v);
    warp_barrier(mask, what);
    T r = v;
    if (in_segment) {
        if (src >= 0 && src < 32 && (mask & present_lanes()) >> src & 1u)
            memcpy(&r, &warp_slot[warp][src], sizeof r);
        else
            r = poison<T>();
    }
    warp_barrier(mask, what);
    return r;
}

template <typename T> static inline T atomic_cas_loop_f(T *addr, T val, int op)
{
    typedef typename std::conditional<sizeof(T) == 2, uint16_t,
            typename std::conditional<sizeof(T) == 4, uint32_t, uint64_t>::type>::type U;
    U *p = reinterpret_cast<U *>(addr);
    U old = __atomic_load_n(p, __ATOMIC_SEQ_CST), nw;
    for (;;) {
        T o, n;
        memcpy(&o, &old, sizeof o);
        n = op == 0 ? T(float(o) + float(val)) : op == 1 ? (val > o ? val : o) : (val < o ? val : o);
        memcpy(&nw, &n, sizeof nw);
        if (__atomic_compare_exchange_n(p, &old, nw, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return o;
    }
}

} // namespace tex_emu_detail

static inline void __syncthreads() { tex_emu_detail::block_barrier(0, 0); }
static inline int __syncthreads_count(int p) { return (int)tex_emu_detail::block_barrier(p != 0, 0); }
static inline int __syncthreads_or(int p) { return (int)tex_emu_detail::block_barrier(p != 0, 1); }
static inline int __syncthreads_and(int p) { return (int)tex_emu_detail::block_barrier(p != 0, 2); }
static inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    tex_emu_detail::warp_barrier(mask, "__syncwarp");
}
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline unsigned __activemask() { return tex_emu_detail::present_lanes(); }

/* ------------------------------------------------------------ warp shuffles */

template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
    int seg = (int)tex_emu_detail::lane & ~(width - 1);
    return tex_emu_detail::exchange(mask, v, seg + (src & (width - 1)), true, "__shfl_sync");
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32)
{
    int l = (int)tex_emu_detail::lane, seg = l & ~(width - 1), s = l + (int)d;
    return tex_emu_detail::exchange(mask, v, s, s < seg + width, "__shfl_down_sync");
}
template <typename T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32)
{
    int l = (int)tex_emu_detail::lane, seg = l & ~(width - 1), s = l - (int)d;
    return tex_emu_detail::exchange(mask, v, s, s >= seg, "__shfl_up_sync");
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32)
{
    int l = (int)tex_emu_detail::lane, seg = l & ~(width - 1), s = l ^ m;
    return tex_emu_detail::exchange(mask, v, s, s >= seg && s < seg + width, "__shfl_xor_sync");
}

/* Ballot-like votes: every lane publishes its predicate. */
static inline unsigned __ballot_sync(unsigned mask, int pred)
{
    using namespace tex_emu_detail;
    warp_slot[warp][lane] = pred != 0;
    warp_barrier(mask, "__ballot_sync");
    unsigned bits = 0, m = mask & present_lanes();
    for (int i = 0; i < 32; i++)
        if ((m >> i & 1u) && warp_slot[warp][i])
            bits |= 1u << i;
    warp_barrier(mask, "__ballot_sync");
    return bits;
}
static inline int __all_sync(unsigned mask, int pred)
{
    return __ballot_sync(mask, pred) == (mask & tex_emu_detail::present_lanes());
}
static inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }

/* ------------------------------------------------------------ atomics */

#define TEX_EMU_ATOMIC_INT(T)                                                                   \
    static inline T atomicAdd(T *a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicSub(T *a, T v) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicAnd(T *a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicOr(T *a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }   \
    static inline T atomicXor(T *a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicExch(T *a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }
#define TEX_EMU_ATOMIC_CAS(T)                                                                   \
    static inline T atomicCAS(T *a, T cmp, T v)                                                 \
    {                                                                                           \
        __atomic_compare_exchange_n(a, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
        return cmp;                                                                             \
    }
#define TEX_EMU_ATOMIC_MINMAX(T)                                                                \
    static inline T atomicMax(T *a, T v)                                                        \
    {                                                                                           \
        T o = __atomic_load_n(a, __ATOMIC_SEQ_CST);                                             \
        while (o < v && !__atomic_compare_exchange_n(a, &o, v, false, __ATOMIC_SEQ_CST,         \
                                                     __ATOMIC_SEQ_CST)) {                       \
        }                                                                                       \
        return o;                                                                               \
    }                                                                                           \
    static inline T atomicMin(T *a, T v)                                                        \
    {                                                                                           \
        T o = __atomic_load_n(a, __ATOMIC_SEQ_CST);                                             \
        while (o > v && !__atomic_compare_exchange_n(a, &o, v, false, __ATOMIC_SEQ_CST,         \
                                                     __ATOMIC_SEQ_CST)) {                       \
        }                                                                                       \
        return o;                                                                               \
    }
TEX_EMU_ATOMIC_INT(int)
TEX_EMU_ATOMIC_INT(unsigned)
TEX_EMU_ATOMIC_INT(unsigned long long)
TEX_EMU_ATOMIC_CAS(int)
TEX_EMU_ATOMIC_CAS(unsigned)
TEX_EMU_ATOMIC_CAS(unsigned long long)
TEX_EMU_ATOMIC_CAS(unsigned short)
TEX_EMU_ATOMIC_MINMAX(int)
TEX_EMU_ATOMIC_MINMAX(unsigned)
TEX_EMU_ATOMIC_MINMAX(long long)
TEX_EMU_ATOMIC_MINMAX(unsigned long long)
/* int64_t is `long` on the host (`long long` under NVRTC). */
TEX_EMU_ATOMIC_INT(unsigned long)
TEX_EMU_ATOMIC_CAS(unsigned long)
TEX_EMU_ATOMIC_MINMAX(long)
TEX_EMU_ATOMIC_MINMAX(unsigned long)

static inline float atomicAdd(float *a, float v) { return tex_emu_detail::atomic_cas_loop_f(a, v, 0); }
static inline double atomicAdd(double *a, double v)
{
    uint64_t *p = reinterpret_cast<uint64_t *>(a), old = __atomic_load_n(p, __ATOMIC_SEQ_CST), nw;
    for (;;) {
        double o, n;
        memcpy(&o, &old, sizeof o);
        n = o + v;
        memcpy(&nw, &n, sizeof nw);
        if (__atomic_compare_exchange_n(p, &old, nw, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return o;
    }
}
static inline __half atomicAdd(__half *a, __half v) { return tex_emu_detail::atomic_cas_loop_f(a, v, 0); }
static inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *a, __nv_bfloat16 v)
{
    return tex_emu_detail::atomic_cas_loop_f(a, v, 0);
}
static inline float atomicExch(float *a, float v)
{
    uint32_t n, o;
    memcpy(&n, &v, 4);
    o = __atomic_exchange_n(reinterpret_cast<uint32_t *>(a), n, __ATOMIC_SEQ_CST);
    float r;
    memcpy(&r, &o, 4);
    return r;
}

/* ------------------------------------------------------------ loads, bits, math */

template <typename T> static inline T __ldg(const T *p) { return *p; }

static inline float __int_as_float(int v) { float r; memcpy(&r, &v, 4); return r; }
static inline int __float_as_int(float v) { int r; memcpy(&r, &v, 4); return r; }
static inline float __uint_as_float(unsigned v) { float r; memcpy(&r, &v, 4); return r; }
static inline unsigned __float_as_uint(float v) { unsigned r; memcpy(&r, &v, 4); return r; }
static inline double __longlong_as_double(long long v) { double r; memcpy(&r, &v, 8); return r; }
static inline long long __double_as_longlong(double v) { long long r; memcpy(&r, &v, 8); return r; }
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
static inline int __clz(int v) { return v ? __builtin_clz((unsigned)v) : 32; }
static inline int __ffs(int v) { return __builtin_ffs(v); }

static inline float rsqrtf(float v) { return 1.0f / sqrtf(v); }
static inline double rsqrt(double v) { return 1.0 / sqrt(v); }
/* glibc declares (but does not export) __expf, __logf, ...: the CUDA
 * intrinsics get other names behind macros. */
#define TEX_EMU_FAST1(name, fn)                                                                 \
    static inline float tex_emu_##name(float v) { return fn(v); }
TEX_EMU_FAST1(expf, expf)
TEX_EMU_FAST1(logf, logf)
TEX_EMU_FAST1(log2f, log2f)
TEX_EMU_FAST1(log10f, log10f)
TEX_EMU_FAST1(sinf, sinf)
TEX_EMU_FAST1(cosf, cosf)
TEX_EMU_FAST1(tanf, tanf)
TEX_EMU_FAST1(exp10f, exp10f)
static inline float tex_emu_powf(float a, float b) { return powf(a, b); }
#define __expf tex_emu_expf
#define __logf tex_emu_logf
#define __log2f tex_emu_log2f
#define __log10f tex_emu_log10f
#define __sinf tex_emu_sinf
#define __cosf tex_emu_cosf
#define __tanf tex_emu_tanf
#define __exp10f tex_emu_exp10f
#define __powf tex_emu_powf
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __frcp_rn(float v) { return 1.0f / v; }
static inline float __fsqrt_rn(float v) { return sqrtf(v); }
static inline float __frsqrt_rn(float v) { return 1.0f / sqrtf(v); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __saturatef(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }
static inline float __frcp_rz(float v) { return 1.0f / v; }

#define TEX_EMU_MINMAX(T)                                                                       \
    static inline T min(T a, T b) { return a < b ? a : b; }                                     \
    static inline T max(T a, T b) { return a > b ? a : b; }
TEX_EMU_MINMAX(int)
TEX_EMU_MINMAX(unsigned)
TEX_EMU_MINMAX(long long)
TEX_EMU_MINMAX(unsigned long long)
TEX_EMU_MINMAX(long)
TEX_EMU_MINMAX(unsigned long)
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }

/* ------------------------------------------------------------ launching */

namespace tex_emu_detail {

struct Launch {
    void (*fn)(void *);
    void *arg;
    unsigned nblocks;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state; /* 0 wait, 1 run, -1 abort */
};

/* Block end: this thread left the kernel; the last one resets for the next block. */
static void finish_block()
{
    pthread_mutex_lock(&block.sync.mu);
    block.live--;
    if (block.sync.arrived > 0 && block.sync.arrived >= block.live) {
        block.sync.result = block.sync.acc;
        block.sync.arrived = 0;
        block.sync.gen++;
        pthread_cond_broadcast(&block.sync.cv);
    }
    if (++block.done == block.nthreads) {
        block.done = 0;
        block.live = block.nthreads;
        block.end_gen++;
        pthread_cond_broadcast(&block.end_cv);
    } else {
        /* twice the timeout: a thread stuck in a barrier or shuffle (which
         * began waiting after this one finished) reports the deadlock first */
        wait_gen(&block.end_cv, &block.sync.mu, &block.end_gen, block.end_gen, "the block's end",
                 2 * timeout_seconds());
    }
    pthread_mutex_unlock(&block.sync.mu);
}

static void *worker(void *p)
{
    Launch *l = static_cast<Launch *>(p);
    pthread_mutex_lock(&l->mu);
    while (l->state == 0)
        pthread_cond_wait(&l->cv, &l->mu);
    int state = l->state;
    pthread_mutex_unlock(&l->mu);
    if (state < 0)
        return nullptr;
    lane = tid % 32;
    warp = tid / 32;
    threadIdx = uint3{tid % blockDim.x, tid / blockDim.x % blockDim.y,
                      tid / (blockDim.x * blockDim.y)};
    for (unsigned b = 0; b < l->nblocks; b++) {
        blockIdx = uint3{b % gridDim.x, b / gridDim.x % gridDim.y, b / (gridDim.x * gridDim.y)};
        l->fn(l->arg);
        finish_block();
    }
    return nullptr;
}

struct Start {
    Launch *l;
    unsigned id;
};

static void *start(void *p)
{
    Start s = *static_cast<Start *>(p);
    free(p);
    tid = s.id;
    return worker(s.l);
}

} // namespace tex_emu_detail

/* Runs fn(arg) once per CUDA thread of the grid (file comment). 0, or -1
 * with a message in err (bad dimensions, thread creation failed). Not
 * reentrant: one launch at a time per module. */
extern "C" __attribute__((visibility("default"))) int
tex_emu_launch(void (*fn)(void *), void *arg, const unsigned grid[3], const unsigned block_[3],
               char *err, size_t n)
{
    using namespace tex_emu_detail;
    unsigned long long nb = (unsigned long long)grid[0] * grid[1] * grid[2];
    unsigned long long nt = (unsigned long long)block_[0] * block_[1] * block_[2];
    if (nb == 0 || nt == 0 || nt > 1024 || block_[2] > 64) {
        snprintf(err, n, "invalid launch: grid (%u,%u,%u), block (%u,%u,%u)", grid[0], grid[1],
                 grid[2], block_[0], block_[1], block_[2]);
        return -1;
    }
    pthread_once(&warps_once, init_warps);
    gridDim = dim3(grid[0], grid[1], grid[2]);
    blockDim = dim3(block_[0], block_[1], block_[2]);
    block.nthreads = block.live = (unsigned)nt;
    block.done = 0;
    block.sync.arrived = 0;
    Launch l = {fn, arg, (unsigned)nb, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    pthread_t th[1024];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1u << 20);
    unsigned made = 0;
    int rc = 0;
    for (; made < nt; made++) {
        Start *s = static_cast<Start *>(malloc(sizeof *s));
        if (!s)
            break;
        *s = Start{&l, made};
        if ((rc = pthread_create(&th[made], &attr, start, s)) != 0) {
            free(s);
            break;
        }
    }
    pthread_attr_destroy(&attr);
    pthread_mutex_lock(&l.mu);
    l.state = made == nt ? 1 : -1;
    pthread_cond_broadcast(&l.cv);
    pthread_mutex_unlock(&l.mu);
    for (unsigned i = 0; i < made; i++)
        pthread_join(th[i], nullptr);
    if (made != nt) {
        snprintf(err, n, "could not create thread %u of %llu (%s)", made, nt, strerror(rc ? rc : ENOMEM));
        return -1;
    }
    return 0;
}

#endif
