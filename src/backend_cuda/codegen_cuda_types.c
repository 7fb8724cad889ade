/*
 * The CUDA target of the C-family printer (src/codegen_c): CUDA's types
 * (f16 stored as __half, bf16 as __nv_bfloat16, bool as uint8_t; values of
 * the half types are float, bool is bool), its conversions (__half2float /
 * __float2half_rn ...: every arithmetic result of a half type is rounded to
 * it through tex_round_f16 / tex_round_bf16, as on the CPU), its reserved
 * words, and the prelude every source starts with. Float math uses CUDA's
 * precise functions (expf, and rsqrtf for rsqrt; never the __expf-style
 * fast intrinsics), the double ones for f64. Helpers are
 * `__device__ __forceinline__` (not static: nvcc warns of unused static ones).
 */
#include "backend_cuda/codegen_cuda.h"

#include <string.h>

/* Identifiers the generated code may not redefine. */
static const char *const reserved[] = {
    "auto",        "break",     "case",         "char",
    "const",       "continue",  "default",      "do",
    "double",      "else",      "enum",         "extern",
    "float",       "for",       "goto",         "if",
    "inline",      "int",       "long",         "register",
    "return",      "short",     "signed",       "sizeof",
    "static",      "struct",    "switch",       "typedef",
    "union",       "unsigned",  "void",         "volatile",
    "while",       "asm",       "bool",         "true",
    "false",       "class",     "new",          "delete",
    "this",        "template",  "typename",     "namespace",
    "operator",    "private",   "public",       "try",
    "catch",       "throw",     "virtual",      "friend",
    "using",       "int8_t",    "int16_t",      "int32_t",
    "int64_t",     "uint8_t",   "uint16_t",     "uint32_t",
    "uint64_t",    "threadIdx", "blockIdx",     "blockDim",
    "gridDim",     "warpSize",  "min",          "max",
    "abs",         "half",      "exp",          "log",
    "sqrt",        "floor",     "ceil",         "round",
    "pow",         "fma",       "sin",          "cos",
    "tanh",        "erf",       "fmod",         "main",
    "float2",      "float4",    "int2",         "int4",
    "dim3",        "uint3",     "nvcuda",       "reinterpret_cast",
    "static_cast", "restrict",  "__restrict__", "INT32_MIN",
    "INT64_MIN",   "INT64_MAX", "UINT64_MAX",   "INFINITY",
    "NAN"};

static bool is_half(tex_dtype t)
{
    return t == TEX_F16 || t == TEX_BF16;
}

const char *texi_cu_storage_type(tex_dtype t)
{
    return t == TEX_F16    ? "__half"
           : t == TEX_BF16 ? "__nv_bfloat16"
           : t == TEX_BOOL ? "uint8_t"
                           : texi_dtype_ctype(t);
}

const char *texi_cu_value_type(tex_dtype t)
{
    return is_half(t) ? "float" : t == TEX_BOOL ? "bool" : texi_dtype_ctype(t);
}

const char texi_cu_prelude[] =
    "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
    "#if defined(__CUDACC_RTC__)\n"
    "typedef signed char int8_t;\ntypedef short int16_t;\n"
    "typedef int int32_t;\ntypedef long long int64_t;\n"
    "typedef unsigned char uint8_t;\ntypedef unsigned short uint16_t;\n"
    "typedef unsigned int uint32_t;\n"
    "typedef unsigned long long uint64_t;\n"
    "#else\n#include <stdint.h>\n#endif\n"
    "#ifndef INT64_C\n#define INT64_C(c) c##LL\n#endif\n"
    "#ifndef UINT64_C\n#define UINT64_C(c) c##ULL\n#endif\n"
    "#ifndef INT32_MIN\n#define INT32_MIN (-2147483647 - 1)\n#endif\n"
    "#ifndef INT64_MAX\n#define INT64_MAX 9223372036854775807LL\n#endif\n"
    "#ifndef INT64_MIN\n#define INT64_MIN (-INT64_MAX - 1)\n#endif\n"
    "#ifndef UINT64_MAX\n#define UINT64_MAX 18446744073709551615ULL\n#endif\n"
    "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
    "#ifndef NAN\n#define NAN __int_as_float(0x7fc00000)\n#endif\n\n";

static const char helper_f16[] = "TEX_INLINE float tex_round_f16(float v)\n"
                                 "{\n    return __half2float(__float2half_rn(v));\n}\n\n";

static const char helper_bf16[] = "TEX_INLINE float tex_round_bf16(float v)\n"
                                  "{\n    return __bfloat162float(__float2bfloat16_rn(v));\n}\n\n";

/* Every intrinsic's source is device code here (intrin_cuda.c's wmma tiles ...). */
static const char *intrin_source(const tex_intrin *in)
{
    return in->c_source;
}

const texi_cp_target texi_cu_target = {
    .label = " (target cuda)",
    .reserved = reserved,
    .n_reserved = sizeof reserved / sizeof reserved[0],
    .restrict_kw = "__restrict__",
    .inline_kw = "__device__ __forceinline__",
    .storage_type = texi_cu_storage_type,
    .value_type = texi_cu_value_type,
    .decode = {"__half2float(", "__bfloat162float("},
    .encode = {"__float2half_rn(", "__float2bfloat16_rn("},
    .half_helpers = {helper_f16, helper_bf16},
    .native_rsqrt = true,
    .intrin_source = intrin_source,
    .intrin_lang = "",
    .missing_intrin = "",
    .stmt = texi_cu_stmt,
    .expr = texi_cu_expr_lane,
};
