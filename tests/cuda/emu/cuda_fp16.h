/*
 * Host emulation of CUDA's cuda_fp16.h for the CUDA emulation harness
 * (tests/support/cuda_emu.h): the generated CUDA text's
 * `#include <cuda_fp16.h>` resolves here when compiled with
 * `g++ -I tests/cuda/emu`. __half is a 16-bit storage struct; every
 * conversion from float rounds to nearest even exactly like src/util/half.c
 * (overflow to infinity, subnormals, NaN kept quiet), and conversions to
 * float are exact. Arithmetic goes through float and rounds once, which is
 * what the device's native f16 instructions give for + - * / and
 * comparisons. Only what tex's emitters may print is covered: the
 * conversions, the bit casts, operators, __hadd/__hmul... and __half2.
 */
#ifndef TEX_CUDA_EMU_FP16_H
#define TEX_CUDA_EMU_FP16_H

#include <stdint.h>
#include <string.h>

namespace tex_emu_detail {
static inline uint32_t f2u(float v) { uint32_t u; memcpy(&u, &v, 4); return u; }
static inline float u2f(uint32_t u) { float v; memcpy(&v, &u, 4); return v; }

static inline uint16_t f16_from_f32(float v)
{
    uint32_t u = f2u(v);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) {
        if (a < 0x33000000u)
            return sign;
        uint32_t mant = (a & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(a >> 23);
        uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f)
        return u2f(sign | 0x7f800000u | (mant << 13));
    if (exp != 0)
        return u2f(sign | ((exp + 112u) << 23) | (mant << 13));
    float v = (float)mant * (1.0f / 16777216.0f);
    return sign ? -v : v;
}
} // namespace tex_emu_detail

struct __half {
    unsigned short __x;
    __half() = default;
    __half(float v) : __x(tex_emu_detail::f16_from_f32(v)) {}
    __half(double v) : __x(tex_emu_detail::f16_from_f32((float)v)) {}
    __half(int v) : __x(tex_emu_detail::f16_from_f32((float)v)) {}
    operator float() const { return tex_emu_detail::f16_to_f32(__x); }
};
typedef __half half;

struct __half2 {
    __half x, y;
};

static inline __half tex_emu_half_bits(unsigned short b)
{
    __half h;
    h.__x = b;
    return h;
}

static inline __half __float2half(float v) { return __half(v); }
static inline __half __float2half_rn(float v) { return __half(v); }
static inline __half __double2half(double v) { return __half((float)v); }
static inline float __half2float(__half h) { return tex_emu_detail::f16_to_f32(h.__x); }
static inline __half __int2half_rn(int v) { return __half((float)v); }
static inline int __half2int_rz(__half h) { return (int)__half2float(h); }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline short __half_as_short(__half h) { return (short)h.__x; }
static inline __half __ushort_as_half(unsigned short b) { return tex_emu_half_bits(b); }
static inline __half __short_as_half(short b) { return tex_emu_half_bits((unsigned short)b); }
static inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
static inline __half2 __float2half2_rn(float v) { return __half2{__half(v), __half(v)}; }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
static inline __half __low2half(__half2 v) { return v.x; }
static inline __half __high2half(__half2 v) { return v.y; }
static inline float __low2float(__half2 v) { return __half2float(v.x); }
static inline float __high2float(__half2 v) { return __half2float(v.y); }

#define TEX_EMU_HALF_OPS(T, TO_F)                                                               \
    static inline T operator+(T a, T b) { return T(TO_F(a) + TO_F(b)); }                        \
    static inline T operator-(T a, T b) { return T(TO_F(a) - TO_F(b)); }                        \
    static inline T operator*(T a, T b) { return T(TO_F(a) * TO_F(b)); }                        \
    static inline T operator/(T a, T b) { return T(TO_F(a) / TO_F(b)); }                        \
    static inline T operator-(T a) { return T(-TO_F(a)); }                                      \
    static inline T &operator+=(T &a, T b) { return a = a + b; }                                \
    static inline T &operator-=(T &a, T b) { return a = a - b; }                                \
    static inline T &operator*=(T &a, T b) { return a = a * b; }                                \
    static inline T &operator/=(T &a, T b) { return a = a / b; }                                \
    static inline bool operator==(T a, T b) { return TO_F(a) == TO_F(b); }                      \
    static inline bool operator!=(T a, T b) { return TO_F(a) != TO_F(b); }                      \
    static inline bool operator<(T a, T b) { return TO_F(a) < TO_F(b); }                        \
    static inline bool operator<=(T a, T b) { return TO_F(a) <= TO_F(b); }                      \
    static inline bool operator>(T a, T b) { return TO_F(a) > TO_F(b); }                        \
    static inline bool operator>=(T a, T b) { return TO_F(a) >= TO_F(b); }

TEX_EMU_HALF_OPS(__half, __half2float)

static inline __half __hadd(__half a, __half b) { return a + b; }
static inline __half __hsub(__half a, __half b) { return a - b; }
static inline __half __hmul(__half a, __half b) { return a * b; }
static inline __half __hdiv(__half a, __half b) { return a / b; }
static inline __half __hneg(__half a) { return -a; }
static inline __half __hfma(__half a, __half b, __half c)
{
    return __half(__half2float(a) * __half2float(b) + __half2float(c));
}
static inline bool __hisnan(__half a) { return (a.__x & 0x7fffu) > 0x7c00u; }
static inline bool __hlt(__half a, __half b) { return a < b; }
static inline bool __hgt(__half a, __half b) { return a > b; }
static inline bool __heq(__half a, __half b) { return a == b; }
static inline __half __hmax(__half a, __half b) { return __hisnan(a) ? b : __hisnan(b) ? a : a > b ? a : b; }
static inline __half __hmin(__half a, __half b) { return __hisnan(a) ? b : __hisnan(b) ? a : a < b ? a : b; }
static inline __half2 __hadd2(__half2 a, __half2 b) { return __half2{a.x + b.x, a.y + b.y}; }
static inline __half2 __hmul2(__half2 a, __half2 b) { return __half2{a.x * b.x, a.y * b.y}; }

#endif
