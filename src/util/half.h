/*
 * IEEE half (f16) and bfloat16 (bf16) conversions to and from f32.
 * Narrowing rounds to nearest, ties to even; NaN stays NaN (quiet), infinities
 * and signed zeros are kept, f16 subnormals are exact.
 */
#ifndef TEX_UTIL_HALF_H
#define TEX_UTIL_HALF_H

#include <stdint.h>

uint16_t texi_f16_from_f32(float v);
float texi_f16_to_f32(uint16_t h);
uint16_t texi_bf16_from_f32(float v);
float texi_bf16_to_f32(uint16_t h);

/* The bit pattern of f32 v, and the f32 of a bit pattern. */
uint32_t texi_f32_bits(float v);
float texi_f32_from_bits(uint32_t u);

#endif
