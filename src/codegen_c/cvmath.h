/*
 * Vector math for the generated C (cvmath.c): exp, log, tanh, sigmoid and
 * erf on GCC/Clang vector-extension types, as `static inline` C source the
 * C printer puts before a kernel that calls them. Accuracy and special
 * cases: docs/architecture.md, "Vector math".
 */
#ifndef TEX_CODEGEN_C_CVMATH_H
#define TEX_CODEGEN_C_CVMATH_H

#include "util/strbuf.h"

/* Which vector math functions to define (bit mask). */
enum {
    TEXI_VM_EXP = 1,     /* tex_vexp_f32x{L} */
    TEXI_VM_LOG = 2,     /* tex_vlog_f32x{L} */
    TEXI_VM_TANH = 4,    /* tex_vtanh_f32x{L} */
    TEXI_VM_SIGMOID = 8, /* tex_vsigmoid_f32x{L}: 1 / (1 + exp(-x)) */
    TEXI_VM_ERF = 16     /* tex_verf_f32x{L} */
};

/* Appends to sb the C source of `static inline` functions
 *   tex_v{L}_f32 tex_vexp_f32x{L}(tex_v{L}_f32 x)   (and vlog, vtanh, vsigmoid, verf)
 * for the functions in `which` (plus what they use: exp and
 * tex_vexpx_f32x{L} for tanh, sigmoid and erf; the lane select
 * tex_vsel_f32x{L}), for lanes L (a power of two, 2 to 16); nothing when
 * `which` is 0. The caller has emitted the typedefs
 *   typedef float    tex_v{L}_f32 __attribute__((vector_size(4 * L)));
 * and the same for int32_t (tex_v{L}_i32) and uint32_t (tex_v{L}_u32), and
 * <stdint.h>; it calls this once per lane count. */
void texi_vmath_source(texi_sb *sb, int lanes, unsigned which);

#endif
