/*
 * f16 and bf16 conversions (see half.h). Narrowing works on the f32 bit
 * pattern: round to nearest even by adding half an ulp of the target plus the
 * kept lsb, then handle overflow to infinity, f16 subnormals and NaN.
 */
#include "util/half.h"

#include <string.h>

uint32_t texi_f32_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

float texi_f32_from_bits(uint32_t u)
{
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

uint16_t texi_bf16_from_f32(float v)
{
    uint32_t u = texi_f32_bits(v);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN, sign kept */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float texi_bf16_to_f32(uint16_t h)
{
    return texi_f32_from_bits((uint32_t)h << 16);
}

uint16_t texi_f16_from_f32(float v)
{
    uint32_t u = texi_f32_bits(v);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
    if (a >= 0x477ff000u)                                         /* rounds to >= 65520: inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* below the smallest normal f16: subnormal or zero */
        if (a < 0x33000000u)
            return sign; /* below half the smallest subnormal: zero */
        uint32_t mant = (a & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(a >> 23); /* 14..24 */
        uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = a - 0x38000000u; /* rebias exponent 127 -> 15 */
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

float texi_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f)
        return texi_f32_from_bits(sign | 0x7f800000u | (mant << 13));
    if (exp != 0)
        return texi_f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
    /* subnormal: mant * 2^-24, exact in f32 */
    float v = (float)mant * (1.0f / 16777216.0f);
    return sign ? -v : v;
}
