/*
 * Host emulation of CUDA's cuda_bf16.h (see cuda_fp16.h in this directory):
 * __nv_bfloat16 is a 16-bit storage struct, float conversions round to
 * nearest even like src/util/half.c (NaN kept quiet, sign kept), widening
 * is exact, arithmetic goes through float and rounds once.
 */
#ifndef TEX_CUDA_EMU_BF16_H
#define TEX_CUDA_EMU_BF16_H

#include "cuda_fp16.h"

namespace tex_emu_detail {
static inline uint16_t bf16_from_f32(float v)
{
    uint32_t u = f2u(v);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static inline float bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }
} // namespace tex_emu_detail

struct __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    __nv_bfloat16(float v) : __x(tex_emu_detail::bf16_from_f32(v)) {}
    __nv_bfloat16(double v) : __x(tex_emu_detail::bf16_from_f32((float)v)) {}
    __nv_bfloat16(int v) : __x(tex_emu_detail::bf16_from_f32((float)v)) {}
    operator float() const { return tex_emu_detail::bf16_to_f32(__x); }
};
typedef __nv_bfloat16 nv_bfloat16;

struct __nv_bfloat162 {
    __nv_bfloat16 x, y;
};

static inline __nv_bfloat16 __float2bfloat16(float v) { return __nv_bfloat16(v); }
static inline __nv_bfloat16 __float2bfloat16_rn(float v) { return __nv_bfloat16(v); }
static inline __nv_bfloat16 __double2bfloat16(double v) { return __nv_bfloat16((float)v); }
static inline float __bfloat162float(__nv_bfloat16 h) { return tex_emu_detail::bf16_to_f32(h.__x); }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b)
{
    __nv_bfloat16 h;
    h.__x = b;
    return h;
}
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b)
{
    return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)};
}

TEX_EMU_HALF_OPS(__nv_bfloat16, __bfloat162float)

static inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return a + b; }
static inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return a * b; }
static inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) { return a > b ? a : b; }
static inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) { return a < b ? a : b; }

#endif
