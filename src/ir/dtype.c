/*
 * Element types: names, sizes, classification and the promotion rule of
 * binary operators (docs/api.md, rule 2):
 *   int with int    -> the wider; equal widths of mixed signedness -> unsigned
 *   int with float  -> the float
 *   f16/bf16 with f32 -> f32; f16 with bf16 -> f32; f32 with f64 -> f64
 *   bool with a number -> the number's type
 */
#include "ir/ir.h"
#include "util/half.h"

static const struct {
    const char *name;  /* printed and in messages */
    const char *ctype; /* C element type of generated code and intrinsics */
    int bits;
} dtype_info[TEX_DTYPE_COUNT] = {
    [TEX_BOOL] = {"bool", "uint8_t", 8},   [TEX_I8] = {"i8", "int8_t", 8},
    [TEX_I16] = {"i16", "int16_t", 16},    [TEX_I32] = {"i32", "int32_t", 32},
    [TEX_I64] = {"i64", "int64_t", 64},    [TEX_U8] = {"u8", "uint8_t", 8},
    [TEX_U16] = {"u16", "uint16_t", 16},   [TEX_U32] = {"u32", "uint32_t", 32},
    [TEX_U64] = {"u64", "uint64_t", 64},   [TEX_F16] = {"f16", "uint16_t", 16},
    [TEX_BF16] = {"bf16", "uint16_t", 16}, [TEX_F32] = {"f32", "float", 32},
    [TEX_F64] = {"f64", "double", 64},
};

bool texi_dtype_valid(int t)
{
    return t >= 0 && t < TEX_DTYPE_COUNT;
}

const char *tex_dtype_name(tex_dtype t)
{
    return texi_dtype_valid((int)t) ? dtype_info[t].name : "?";
}

int tex_dtype_bytes(tex_dtype t)
{
    return texi_dtype_valid((int)t) ? dtype_info[t].bits / 8 : 0;
}

const char *texi_dtype_ctype(tex_dtype t)
{
    return texi_dtype_valid((int)t) ? dtype_info[t].ctype : "void";
}

int texi_dtype_bits(tex_dtype t)
{
    return texi_dtype_valid((int)t) ? dtype_info[t].bits : 0;
}

tex_dtype texi_dtype_lane(tex_dtype t)
{
    if (t == TEX_F16 || t == TEX_BF16)
        return TEX_F32;
    return t == TEX_BOOL ? TEX_I32 : t;
}

bool texi_dtype_is_float(tex_dtype t)
{
    return t == TEX_F16 || t == TEX_BF16 || t == TEX_F32 || t == TEX_F64;
}

bool texi_dtype_is_int(tex_dtype t)
{
    return t >= TEX_I8 && t <= TEX_U64;
}

bool texi_dtype_is_signed(tex_dtype t)
{
    return (t >= TEX_I8 && t <= TEX_I64) || texi_dtype_is_float(t);
}

tex_dtype texi_dtype_promote(tex_dtype a, tex_dtype b)
{
    if (a == b)
        return a;
    if (a == TEX_BOOL)
        return b;
    if (b == TEX_BOOL)
        return a;
    bool fa = texi_dtype_is_float(a), fb = texi_dtype_is_float(b);
    if (fa != fb)
        return fa ? a : b;
    int ba = texi_dtype_bits(a), bb = texi_dtype_bits(b);
    if (fa) {
        /* f16 with bf16 (both 16 bits, different formats) meet at f32. */
        if (ba == bb || (ba < 32 && bb < 32))
            return TEX_F32;
        return ba > bb ? a : b;
    }
    if (ba != bb)
        return ba > bb ? a : b;
    return texi_dtype_is_signed(a) ? b : a; /* same width: the unsigned one */
}

int64_t texi_float_to_int(tex_dtype t, double v)
{
    if (v != v)
        return 0;
    if (t == TEX_U64) {
        if (v <= 0)
            return 0;
        if (v >= 18446744073709551615.0)
            return -1; /* UINT64_MAX as bit pattern */
        return (int64_t)(uint64_t)v;
    }
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

int64_t texi_wrap_int(tex_dtype t, uint64_t v)
{
    switch (t) {
    case TEX_BOOL:
        return v != 0;
    case TEX_I8:
        return (int8_t)(uint8_t)v;
    case TEX_I16:
        return (int16_t)(uint16_t)v;
    case TEX_I32:
        return (int32_t)(uint32_t)v;
    case TEX_U8:
        return (uint8_t)v;
    case TEX_U16:
        return (uint16_t)v;
    case TEX_U32:
        return (uint32_t)v;
    case TEX_I64:
    case TEX_U64:
    case TEX_F16:
    case TEX_BF16:
    case TEX_F32:
    case TEX_F64:
        break;
    }
    return (int64_t)v;
}

double texi_round_to_dtype(tex_dtype t, double v)
{
    switch (t) {
    case TEX_F32:
        return (double)(float)v;
    case TEX_F16:
        return (double)texi_f16_to_f32(texi_f16_from_f32((float)v));
    case TEX_BF16:
        return (double)texi_bf16_to_f32(texi_bf16_from_f32((float)v));
    case TEX_BOOL:
    case TEX_I8:
    case TEX_I16:
    case TEX_I32:
    case TEX_I64:
    case TEX_U8:
    case TEX_U16:
    case TEX_U32:
    case TEX_U64:
    case TEX_F64:
        break;
    }
    return v;
}
