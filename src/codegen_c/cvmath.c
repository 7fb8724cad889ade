/*
 * Vector math for the generated C: the source of exp, log, tanh, sigmoid and
 * erf on f32 vectors of L lanes (tex_v{L}_f32), written in GCC/Clang vector
 * extensions only (lane-wise arithmetic, bit casts between same-size vector
 * types, __builtin_convertvector), so that each compiles to straight SIMD
 * code: no libm, no intrinsics. Special cases are computed on every lane
 * and picked with masks at the end; the one exception is exp's shorter path
 * for ordinary arguments, chosen by one test of all lanes (vm_exp).
 *
 * Every function is within 2 ulp of the correctly rounded result over the
 * whole float range, with libm's special cases, with or without FMA
 * contraction (docs/architecture.md, "Vector math"; tests/unit/test_vmath.c
 * measures it). The polynomial coefficients are minimax fits (weighted as the
 * comments say) with every coefficient rounded to float and the rest refitted.
 *
 * Masks are never vector comparisons: GCC 12 compiles a comparison of
 * vectors wider than the machine's (64-byte ones without AVX-512, float or
 * integer) into per-lane code. A mask is the sign of a difference of bit patterns, shifted
 * across the lane: with ab = |x|'s bits (below 2^31, so the difference of two
 * fits), `(I)(ab - C) >> 31` is all ones where |x| < the float whose bits are
 * C, and NaN, whose bits are above infinity's, compares above everything.
 *
 * The templates below spell the vector types $F, $I, $U, the lane count $L
 * and the functions' qualifiers $S; put_tmpl substitutes them. Integer
 * arithmetic that may wrap and left shifts are done on the unsigned type,
 * arithmetic right shifts on the signed one.
 */
#include "codegen_c/cvmath.h"

/* The functions are static, so their by-value vector ABI never crosses a
 * translation unit: GCC's and Clang's notes that a 32- or 64-byte vector
 * argument's ABI depends on AVX / AVX-512 do not apply (and would otherwise
 * fire for L = 16 without AVX-512, in the kernel's calls too). */
static const char vm_prologue[] = "#pragma GCC diagnostic ignored \"-Wpsabi\"\n\n";

/* The lane select every function uses. */
static const char vm_sel[] = "/* m ? a : b in each lane (m: all ones or all zeros) */\n"
                             "$S $F tex_vsel_f32x$L($I m, $F a, $F b)\n{\n"
                             "    return ($F)((m & ($I)a) | (~m & ($I)b));\n}\n\n";

/* exp(x) = 2^n e^r, n = round(x / ln2), r = x - n ln2 with ln2 split in a
 * 15-bit head (n * head is exact for |n| <= 150) and a tail; e^r = 1 + t,
 * t = r + r^2 q(r) on |r| <= ln2/2 (q: degree 4, fitted for e^r's relative
 * error): tex_vexpt gives t and n (as an integer and as a float). tex_vexpx
 * applies 2^n so that 2^128 and denormal results (one rounding) come out
 * right, with x clamped to [-104, 89], beyond which the result is 0 or inf
 * anyway; it also gives what rounding 1 + t lost, scaled alike (*lo), for
 * callers that need more than the rounded result. With AVX-512 one VSCALEF
 * applies 2^n (put_scalef), and tex_vexp is tex_vexpx: fourteen
 * instructions without a branch. Otherwise 2^n is applied in two halves,
 * and tex_vexp takes a shorter path when |x| <= 86 on every lane (the
 * usual case: softmax's x - max, activations): 2^n is then a normal number
 * and 1 + t times it is exact, so adding n to the exponent bits gives the
 * same value as tex_vexpx's two multiplications, without the clamp, the
 * split or the special-case select. Its one branch, on all lanes at once,
 * is the only one in these functions.
 *
 * With AVX-512 and 16 lanes, tex_vexp (not tex_vexpx, whose callers need
 * *lo) reduces by ln2/16 instead: N = round(x 16/ln2), r = x - N ln2/16
 * (|r| <= ln2/32; ln2/16's head has 12 bits, N at most 12), and e^x =
 * 2^floor(N/16) * 2^((N mod 16)/16) * e^r, the middle factor one of 16
 * table entries (rounded to float; one VPERMPS, tex_vexp2) and e^r = 1 + q,
 * q = r + r^2 (1/2 + r/6) (Taylor; error below r^4/24 < 1e-8, relative).
 * VSCALEF applies 2^floor(N/16) (it floors its exponent operand itself).
 * That is thirteen instructions, and a polynomial two steps shorter on the
 * dependency chain: about 20% faster than tex_vexpx in a loop over a row
 * in L1 cache (softmax's exp pass), with the same accuracy (1 ulp). */
static const char vm_exp[] =
    "$S $F tex_vexpt_f32x$L($F c, $I *n, $F *nf)\n{\n"
    "    /* n = round(c / ln2): adding 1.5 * 2^23 rounds, and n is in the low bits */\n"
    "    $F t = c * 0x1.715476p+0f + 0x1.8p23f;\n"
    "    *nf = t - 0x1.8p23f;\n"
    "    *n = ($I)(($U)t - 0x4b400000u);\n"
    "    $F r = c - *nf * 0x1.62e4p-1f;\n"
    "    r = r - *nf * 0x1.7f7d1cp-20f;\n"
    "    $F q = r * 0x1.6a4eccp-10f + 0x1.12399cp-7f;\n"
    "    q = q * r + 0x1.5558bp-5f;\n"
    "    q = q * r + 0x1.555492p-3f;\n"
    "    q = q * r + 0x1.fffffcp-2f;\n"
    "    return r + (r * r) * q;\n}\n\n"
    "$S $F tex_vexpx_f32x$L($F x, $F *lo)\n{\n"
    "    $I n;\n"
    "    $F nf;\n"
    "#ifdef TEX_VSCALEF_F32X$L\n"
    "    $F t = tex_vexpt_f32x$L(tex_vclamp_f32x$L(x, -104.0f, 89.0f), &n, &nf);\n"
    "    $F p = 1.0f + t;\n"
    "    *lo = tex_vscalef_f32x$L((1.0f - p) + t, nf);\n"
    "    return tex_vscalef_f32x$L(p, nf);\n"
    "#else\n"
    "    $U ab = ($U)x & 0x7fffffffu;\n"
    "    /* the bound of x's sign, 89 or -104, and whether |x| is above it */\n"
    "    $U bound = 0x42b20000u ^ (($U)(($I)x >> 31) & (0x42b20000u ^ 0xc2d00000u));\n"
    "    $F c = tex_vsel_f32x$L(($I)((bound & 0x7fffffffu) - ab) >> 31, ($F)bound, x);\n"
    "    $F t = tex_vexpt_f32x$L(c, &n, &nf);\n"
    "    $F p = 1.0f + t;\n"
    "    $F pl = (1.0f - p) + t;\n"
    "    $I n1 = n >> 1;\n"
    "    $F s1 = ($F)(($U)(n1 + 127) << 23), s2 = ($F)(($U)(n - n1 + 127) << 23);\n"
    "    *lo = (pl * s1) * s2;\n"
    "    return tex_vsel_f32x$L(($I)(0x7f800000u - ab) >> 31, x + x, (p * s1) * s2);\n"
    "#endif\n}\n\n"
    "$S $F tex_vexp_f32x$L($F x)\n{\n"
    "#ifdef TEX_VEXP2_F32X$L\n"
    "    $F c = tex_vclamp_f32x$L(x, -104.0f, 89.0f);\n"
    "    /* N = round(c 16/ln2) in t's low bits, r = c - N ln2/16 */\n"
    "    $F t = c * 0x1.715476p+4f + 0x1.8p23f;\n"
    "    $F nf = t - 0x1.8p23f;\n"
    "    $F r = c - nf * 0x1.62ep-5f;\n"
    "    r = r - nf * 0x1.0bfbe8p-19f;\n"
    "    $F s = tex_vexp2_f32x$L(($I)t);\n"
    "    $F q = r + (r * r) * (r * 0x1.555556p-3f + 0.5f);\n"
    "    return tex_vscalef_f32x$L(s + s * q, nf * 0.0625f);\n"
    "#else\n"
    "    $F lo;\n"
    "#ifndef TEX_VSCALEF_F32X$L\n"
    "    /* some lane's |x| above 86 (or x NaN) */\n"
    "    if (!__builtin_expect(tex_vany_above_i32x$L(($I)(($U)x & 0x7fffffffu), 0x42ac0000), 0)) "
    "{\n"
    "        $I n;\n"
    "        $F nf;\n"
    "        $F p = 1.0f + tex_vexpt_f32x$L(x, &n, &nf);\n"
    "        return ($F)(($U)p + (($U)n << 23));\n"
    "    }\n"
    "#endif\n"
    "    return tex_vexpx_f32x$L(x, &lo);\n"
    "#endif\n}\n\n";

/* log(x) = k ln2 + log(m), m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact):
 * with s = f / (2 + f), log(m) = 2 atanh(s) = f - f^2/2 + s (f^2/2 + R),
 * R = s^2 P(s^2) (P: degree 2, fitted for R's absolute error). Denormal
 * inputs are scaled by 2^23 first. */
static const char vm_log[] =
    "$S $F tex_vlog_f32x$L($F x)\n{\n"
    "    $U ab = ($U)x & 0x7fffffffu;\n"
    "    $I neg = ($I)x >> 31;\n"
    "    $I tiny = neg | ($I)(ab - 0x00800000u) >> 31; /* below 2^-126 */\n"
    "    $U bits = ($U)tex_vsel_f32x$L(tiny, x * 0x1p23f, x);\n"
    "    /* k: the exponent that puts the mantissa m in [sqrt(1/2), sqrt(2)) */\n"
    "    $I k = ($I)(bits - 0x3f3504f3u) >> 23;\n"
    "    $F m = ($F)(bits - (($U)k << 23));\n"
    "    $F kf = __builtin_convertvector(k - (tiny & 23), $F);\n"
    "    $F f = m - 1.0f;\n"
    "    $F s = f / (2.0f + f);\n"
    "    $F z = s * s;\n"
    "    $F R = z * 0x1.31e132p-2f + 0x1.995ed2p-2f;\n"
    "    R = R * z + 0x1.55557ap-1f;\n"
    "    R = R * z;\n"
    "    $F h = 0.5f * f * f;\n"
    "    $F y = s * (h + R) + kf * 0x1.7f7d1cp-20f;\n"
    "    y = (y - h + f) + kf * 0x1.62e4p-1f;\n"
    "    $F inf = ($F)(($U){0} + 0x7f800000u);\n"
    "    y = tex_vsel_f32x$L(($I)((ab ^ 0x7f800000u) - 1u) >> 31, inf, y);\n"
    "    y = tex_vsel_f32x$L(neg | ($I)(0x7f800000u - ab) >> 31, ($F)(($U){0} + 0x7fc00000u), "
    "y);\n"
    "    return tex_vsel_f32x$L(($I)(ab - 1u) >> 31, -inf, y);\n}\n\n";

/* tanh(x): for |x| < 0.625, |x| + |x|^3 P(x^2) (P: degree 5, fitted for the
 * relative error); above, 1 - 2 / d, d = exp(2|x|) + 1, with |x| clamped to
 * 9.5 (tanh rounds to 1 from 9.01 on) and 2 / d corrected to first order
 * for what exp's rounding and d's lost. The sign is put back last. */
static const char vm_tanh[] =
    "$S $F tex_vtanh_f32x$L($F x)\n{\n"
    "    $U ab = ($U)x & 0x7fffffffu;\n"
    "    $F a = ($F)ab;\n"
    "    $F z = a * a;\n"
    "    $F p = z * 0x1.1a2816p-9f - 0x1.0c5edp-7f;\n"
    "    p = p * z + 0x1.63a55p-6f;\n"
    "    p = p * z - 0x1.b9f188p-5f;\n"
    "    p = p * z + 0x1.11107ap-3f;\n"
    "    p = p * z - 0x1.555554p-2f;\n"
    "    $F small = a + (a * z) * p;\n"
    "    $F lo, c = tex_vsel_f32x$L(($I)(0x41180000u - ab) >> 31, ($F){0} + 9.5f, a);\n"
    "    $F e = tex_vexpx_f32x$L(2.0f * c, &lo);\n"
    "    $F d = e + 1.0f;\n"
    "    $F q = 2.0f / d;\n"
    "    $F big = 1.0f - (q - (q * 0.5f) * (q * (((e - d) + 1.0f) + lo)));\n"
    "    $F y = tex_vsel_f32x$L(($I)(ab - 0x3f200000u) >> 31, small, big); /* |x| < 0.625 */\n"
    "    y = ($F)(($U)y | (($U)x & 0x80000000u));\n"
    "    return tex_vsel_f32x$L(($I)(0x7f800000u - ab) >> 31, x + x, y);\n}\n\n";

/* sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0, with
 * e = exp(-|x|) <= 1: no overflow, and the small results of x < 0 keep
 * their relative accuracy. The quotient y is corrected to first order for
 * what e's rounding lost (lo) and what d = 1 + e's lost (`lost`, exact as
 * e <= 1); 1 / d is 1 - y or y. */
static const char vm_sigmoid[] =
    "$S $F tex_vsigmoid_f32x$L($F x)\n{\n"
    "    $F lo;\n"
    "    $F e = tex_vexpx_f32x$L(($F)(($U)x | 0x80000000u), &lo);\n"
    "    $F d = 1.0f + e;\n"
    "    $F lost = (1.0f - d) + e;\n"
    "    $I neg = ($I)x >> 31;\n"
    "    $F y = tex_vsel_f32x$L(neg, e, ($F){0} + 1.0f) / d;\n"
    "    $F w = tex_vsel_f32x$L(neg, 1.0f - y, y);\n"
    "    return y + (tex_vsel_f32x$L(neg, w, -y) * lo - y * lost) * w;\n}\n\n";

/* erf(x): for |x| < 0.875, |x| + |x| P(x^2) (P: degree 6, P(0) =
 * 2/sqrt(pi) - 1, fitted for the relative error); above, 1 - exp(-x^2) Q(|x|
 * - 2.4375) on [0.875, 4] (Q: degree 10, fitted for the absolute error of
 * the product; erf rounds to 1 from 3.92 on), with exp's rounding error
 * added back. The sign is put back last. */
static const char vm_erf[] =
    "$S $F tex_verf_f32x$L($F x)\n{\n"
    "    $U ab = ($U)x & 0x7fffffffu;\n"
    "    $F a = ($F)ab;\n"
    "    $F z = a * a;\n"
    "    $F p = z * 0x1.6b3ffcp-14f - 0x1.aed2aap-11f;\n"
    "    p = p * z + 0x1.5554dp-8f;\n"
    "    p = p * z - 0x1.b81e4p-6f;\n"
    "    p = p * z + 0x1.ce2edp-4f;\n"
    "    p = p * z - 0x1.812746p-2f;\n"
    "    p = p * z + 0x1.06eba8p-3f;\n"
    "    $F small = a + a * p;\n"
    "    $F c = tex_vsel_f32x$L(($I)(0x40800000u - ab) >> 31, ($F){0} + 4.0f, a);\n"
    "    $F t = c - 2.4375f;\n"
    "    $F q = t * 0x1.4fbacp-17f + 0x1.a18a04p-16f;\n"
    "    q = q * t + 0x1.b44a9ep-15f;\n"
    "    q = q * t - 0x1.4a0afcp-14f;\n"
    "    q = q * t + 0x1.80016ep-13f;\n"
    "    q = q * t - 0x1.c13fccp-11f;\n"
    "    q = q * t + 0x1.634b0ep-9f;\n"
    "    q = q * t - 0x1.1afb3cp-7f;\n"
    "    q = q * t + 0x1.b23556p-6f;\n"
    "    q = q * t - 0x1.3db06ap-4f;\n"
    "    q = q * t + 0x1.b97388p-3f;\n"
    "    $F lo;\n"
    "    $F e = tex_vexpx_f32x$L(-(c * c), &lo);\n"
    "    $F big = 1.0f - (e * q + lo * q);\n"
    "    $F y = tex_vsel_f32x$L(($I)(ab - 0x3f600000u) >> 31, small, big); /* |x| < 0.875 */\n"
    "    y = ($F)(($U)y | (($U)x & 0x80000000u));\n"
    "    return tex_vsel_f32x$L(($I)(0x7f800000u - ab) >> 31, x + x, y);\n}\n\n";

/* Appends text with $F, $I, $U and $L replaced by the f32, i32 and u32
 * vector types of `lanes` lanes and by the lane count, and $S by the
 * functions' qualifiers: always inlined, so that no function with vector
 * arguments is ever emitted (GCC warns about the ABI of one without a
 * source location, which the pragma cannot silence). */
static void put_tmpl(texi_sb *sb, const char *text, int lanes)
{
    for (const char *at = text; *at; at++) {
        if (at[0] != '$' || !at[1]) {
            texi_sb_putc(sb, *at);
            continue;
        }
        at++;
        if (*at == 'L')
            texi_sb_printf(sb, "%d", lanes);
        else if (*at == 'S')
            texi_sb_puts(sb, "static inline __attribute__((always_inline))");
        else if (*at == 'F' || *at == 'I' || *at == 'U')
            texi_sb_printf(sb, "tex_v%d_%c32", lanes, *at == 'F' ? 'f' : *at == 'I' ? 'i' : 'u');
        else
            texi_sb_printf(sb, "$%c", *at);
    }
}

/* The x86 test of tex_vany_above_i32xL for 4, 8 and 16 lanes: one PTEST of
 * the vector, 16 lanes OR-ing their two 32-byte halves first (extracted by
 * __builtin_shufflevector, which GCC has from version 12 on). The builtins
 * are the ones <immintrin.h> wraps, the same names in GCC and Clang. */
static void put_any_ptest(texi_sb *sb, int lanes)
{
    if (lanes == 4)
        texi_sb_puts(sb, "#if defined(__SSE4_1__)\n"
                         "    typedef long long q __attribute__((vector_size(16)));\n"
                         "    return !__builtin_ia32_ptestz128((q)m, (q)m);\n");
    else if (lanes == 8)
        texi_sb_puts(sb, "#if defined(__AVX__)\n"
                         "    typedef long long q __attribute__((vector_size(32)));\n"
                         "    return !__builtin_ia32_ptestz256((q)m, (q)m);\n");
    else
        texi_sb_puts(sb,
                     "#if defined(__AVX__) && (defined(__clang__) || __GNUC__ >= 12)\n"
                     "    typedef long long q __attribute__((vector_size(32)));\n"
                     "    q o = (q)__builtin_shufflevector(m, m, 0, 1, 2, 3, 4, 5, 6, 7) |\n"
                     "          (q)__builtin_shufflevector(m, m, 8, 9, 10, 11, 12, 13, 14, 15);\n"
                     "    return !__builtin_ia32_ptestz256(o, o);\n");
}

/* tex_vany_above_i32xL(m, bound): whether a lane of m (each in [0, 2^31))
 * is above bound, for exp without AVX-512 (put_scalef). m becomes the
 * borrows of bound - m (all ones where above) and any lane of it non-zero
 * is tested: on x86 by one PTEST (put_any_ptest); elsewhere by OR-ing m with
 * itself rotated by L/2, L/4, ... 1 lanes (a loop over the lanes becomes
 * one extraction per lane in GCC's output), the rotations spelled for
 * each compiler: Clang has __builtin_shufflevector, GCC (before 12) only
 * __builtin_shuffle. */
static void put_any_above(texi_sb *sb, int lanes)
{
    texi_sb_printf(sb,
                   "static inline __attribute__((always_inline)) int "
                   "tex_vany_above_i32x%d(tex_v%d_i32 m, int bound)\n{\n",
                   lanes, lanes);
    texi_sb_printf(sb, "    m = (tex_v%d_i32)((tex_v%d_u32)(bound - m)) >> 31;\n", lanes, lanes);
    bool ptest = lanes == 4 || lanes == 8 || lanes == 16;
    if (ptest)
        put_any_ptest(sb, lanes);
    for (int clang = 1; clang >= 0; clang--) {
        texi_sb_puts(sb, clang ? (ptest ? "#elif defined(__clang__)\n" : "#ifdef __clang__\n")
                               : "#else\n");
        for (int h = lanes / 2; h >= 1; h /= 2) {
            if (clang)
                texi_sb_puts(sb, "    m = m | __builtin_shufflevector(m, m");
            else
                texi_sb_printf(sb, "    m = m | __builtin_shuffle(m, (tex_v%d_i32){", lanes);
            for (int k = 0; k < lanes; k++)
                texi_sb_printf(sb, "%s%d", k || clang ? ", " : "", (k + h) % lanes);
            texi_sb_puts(sb, clang ? ");\n" : "});\n");
        }
        texi_sb_puts(sb, "    return m[0] != 0;\n");
    }
    texi_sb_puts(sb, "#endif\n}\n\n");
}

/* tex_vexp2_f32x16(t): 2^(j/16) in each lane, j = t mod 16 (t's low four
 * bits: VPERMPS reads no others), from a table rounded to float (vm_exp). */
static const char vm_exp2_table[] =
    "#define TEX_VEXP2_F32X16 1\n"
    "static inline __attribute__((always_inline)) tex_v16_f32 tex_vexp2_f32x16(tex_v16_i32 t)\n"
    "{\n"
    "    static const float table[16] __attribute__((aligned(64))) = {\n"
    "        0x1p+0f, 0x1.0b5586p+0f, 0x1.172b84p+0f, 0x1.2387a6p+0f,\n"
    "        0x1.306fep+0f, 0x1.3dea64p+0f, 0x1.4bfdaep+0f, 0x1.5ab07ep+0f,\n"
    "        0x1.6a09e6p+0f, 0x1.7a1148p+0f, 0x1.8ace54p+0f, 0x1.9c4918p+0f,\n"
    "        0x1.ae89fap+0f, 0x1.c199bep+0f, 0x1.d5818ep+0f, 0x1.ea4afap+0f};\n"
    "    tex_v16_f32 v = *(const tex_v16_f32 *)table;\n"
    "#ifdef __clang__\n"
    "    return __builtin_ia32_permvarsf512(v, t);\n"
    "#else\n"
    "    return __builtin_ia32_permvarsf512_mask(v, t, v, (unsigned short)0xffff);\n"
    "#endif\n"
    "}\n";

/* With AVX-512 (VL for 4 and 8 lanes), defines TEX_VSCALEF_F32XL and two
 * helpers for exp: tex_vscalef_f32xL(p, nf), p * 2^floor(nf) in one
 * VSCALEFPS (overflow to inf, a denormal result rounded once), and
 * tex_vclamp_f32xL(x, lo, hi), one MAXPS and one MINPS that keep NaN (each
 * returns its second operand, x, when an operand is NaN); for 16 lanes also
 * TEX_VEXP2_F32X16 and tex_vexp2_f32x16 (vm_exp2_table). The builtins are
 * the ones <immintrin.h> wraps; the 64-byte max, min and permute differ
 * between GCC and Clang. */
static void put_scalef(texi_sb *sb, int lanes)
{
    if (lanes != 4 && lanes != 8 && lanes != 16)
        return;
    const char *bits = lanes == 16 ? "512" : lanes == 8 ? "256" : "128";
    texi_sb_printf(sb, "#if defined(%s)\n#define TEX_VSCALEF_F32X%d 1\n",
                   lanes == 16 ? "__AVX512F__" : "__AVX512VL__", lanes);
    put_tmpl(sb, "$S $F tex_vscalef_f32x$L($F p, $F nf)\n{\n", lanes);
    texi_sb_printf(sb, "    return __builtin_ia32_scalefps%s_mask(p, nf, p, %s);\n}\n\n", bits,
                   lanes == 16 ? "(unsigned short)0xffff, 4" : "(unsigned char)0xff");
    put_tmpl(sb, "$S $F tex_vclamp_f32x$L($F x, float lo, float hi)\n{\n", lanes);
    if (lanes == 16)
        texi_sb_puts(sb, "#ifdef __clang__\n"
                         "    x = __builtin_ia32_maxps512((tex_v16_f32){0} + lo, x, 4);\n"
                         "    return __builtin_ia32_minps512((tex_v16_f32){0} + hi, x, 4);\n"
                         "#else\n"
                         "    x = __builtin_ia32_maxps512_mask((tex_v16_f32){0} + lo, x, x, "
                         "(unsigned short)0xffff, 4);\n"
                         "    return __builtin_ia32_minps512_mask((tex_v16_f32){0} + hi, x, x, "
                         "(unsigned short)0xffff, 4);\n"
                         "#endif\n");
    else
        put_tmpl(sb,
                 lanes == 8 ? "    x = __builtin_ia32_maxps256(($F){0} + lo, x);\n"
                              "    return __builtin_ia32_minps256(($F){0} + hi, x);\n"
                            : "    x = __builtin_ia32_maxps(($F){0} + lo, x);\n"
                              "    return __builtin_ia32_minps(($F){0} + hi, x);\n",
                 lanes);
    texi_sb_puts(sb, "}\n");
    if (lanes == 16)
        texi_sb_puts(sb, vm_exp2_table);
    texi_sb_puts(sb, "#endif\n\n");
}

void texi_vmath_source(texi_sb *sb, int lanes, unsigned which)
{
    if (which & (TEXI_VM_TANH | TEXI_VM_SIGMOID | TEXI_VM_ERF))
        which |= TEXI_VM_EXP;
    static const struct {
        unsigned bit;
        const char *text;
    } fns[] = {{TEXI_VM_EXP, vm_exp},
               {TEXI_VM_LOG, vm_log},
               {TEXI_VM_TANH, vm_tanh},
               {TEXI_VM_SIGMOID, vm_sigmoid},
               {TEXI_VM_ERF, vm_erf}};
    if (!which)
        return;
    put_tmpl(sb, vm_prologue, lanes);
    put_tmpl(sb, vm_sel, lanes);
    if (which & TEXI_VM_EXP) { /* exp's helpers: VSCALEF's, else the range test */
        put_scalef(sb, lanes);
        texi_sb_printf(sb, "#ifndef TEX_VSCALEF_F32X%d\n", lanes);
        put_any_above(sb, lanes);
        texi_sb_puts(sb, "#endif\n");
    }
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (which & fns[i].bit)
            put_tmpl(sb, fns[i].text, lanes);
}
