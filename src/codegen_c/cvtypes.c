/*
 * Vector types and vector helpers of the C-family printer (cvector.c prints
 * the expressions): the typedefs tex_vL_T and tex_vL_T_u of the vector
 * types a kernel used, then the helpers it called: tex_vmin_/tex_vmax_ of
 * float vectors, tex_vselect_, the horizontal reductions tex_vreduce_ and
 * cvmath.c's math functions.
 */
#include "codegen_c/cprint.h"
#include "codegen_c/cvmath.h"

#include <stdio.h>

int texi_cp_lanes_log2(int lanes)
{
    for (int k = 1; k <= TEXI_CP_MAX_LANES_LOG2; k++)
        if (lanes == 1 << k)
            return k;
    return -1;
}

const char *texi_cp_vector_type(texi_cp *p, tex_dtype t, int lanes, bool unaligned)
{
    tex_dtype et = texi_dtype_lane(t);
    int k = texi_cp_lanes_log2(lanes);
    if (k < 0) {
        texi_cp_fail(p, TEX_EINTERNAL, "a vector of %d lanes (not a power of two up to 64)", lanes);
        return "?";
    }
    p->vector_types[et] |= 1u << k;
    snprintf(p->vector_name, sizeof p->vector_name, "tex_v%d_%s%s", lanes, tex_dtype_name(et),
             unaligned ? "_u" : "");
    return p->vector_name;
}

/* tex_vselect_vL_T(m, a, b): a where the mask m (a vector comparison's
 * result: all ones or zeros per lane) is set, else b. */
static void select_helpers(const texi_cp *p, texi_sb *sb)
{
    for (int t = 0; t < TEXI_CP_N_DTYPES; t++)
        for (int k = 1; k <= TEXI_CP_MAX_LANES_LOG2; k++) {
            if (!(p->vector_select[t] & (1u << k)))
                continue;
            const char *n = tex_dtype_name((tex_dtype)t);
            const char *mt = texi_dtype_bits((tex_dtype)t) == 64 ? "i64" : "i32";
            int l = 1 << k;
            texi_sb_printf(sb,
                           "%s tex_v%d_%s tex_vselect_v%d_%s(tex_v%d_%s m, tex_v%d_%s a, "
                           "tex_v%d_%s b)\n{\n"
                           "    return (tex_v%d_%s)(((tex_v%d_%s)a & m) | ((tex_v%d_%s)b & ~m));\n"
                           "}\n\n",
                           p->target->inline_kw, l, n, l, n, l, mt, l, n, l, n, l, n, l, mt, l, mt);
        }
}

/* The x86 instruction for min (max) of b and a in each lane, for vectors
 * of `bytes` bytes: b where b < a (b > a), else a, so a where either is
 * NaN; the guard names the ISA it needs. NULL where x86 has none. */
static const char *x86_minmax(bool f64, int bytes, bool max, const char **guard)
{
    static const char *const name[3][2][2] = {
        {{"__builtin_ia32_minps", "__builtin_ia32_maxps"},
         {"__builtin_ia32_minpd", "__builtin_ia32_maxpd"}},
        {{"__builtin_ia32_minps256", "__builtin_ia32_maxps256"},
         {"__builtin_ia32_minpd256", "__builtin_ia32_maxpd256"}},
        {{"__builtin_ia32_minps512", "__builtin_ia32_maxps512"},
         {"__builtin_ia32_minpd512", "__builtin_ia32_maxpd512"}},
    };
    static const char *const guards[3] = {"__SSE2__", "__AVX__", "__AVX512F__"};
    int w = bytes == 16 ? 0 : bytes == 32 ? 1 : bytes == 64 ? 2 : -1;
    if (w < 0)
        return NULL;
    *guard = guards[w];
    return name[w][f64][max];
}

/* tex_vmin_vL_T / tex_vmax_vL_T for the float vectors min/max used, with
 * the scalar helpers' rule: b where b < a (max: a < b) or b is NaN, else a.
 * On x86 that is one MINPS/MAXPS of (b, a), which gives a on a NaN, kept
 * where b is ordered; with AVX-512 a masked instruction whose mask
 * (ORD(b, b)) does not depend on a, so that a max-reduction's accumulator
 * waits on the MAXPS alone (softmax's row max: 2 instructions a vector
 * instead of 5). Elsewhere: tex_vselect of the two comparisons. */
static void float_minmax_helpers(const texi_cp *p, texi_sb *sb)
{
    for (int f64 = 0; f64 < 2; f64++)
        for (int k = 1; k <= TEXI_CP_MAX_LANES_LOG2; k++) {
            if (!(p->vector_minmax[f64 ? TEX_F64 : TEX_F32] & (1u << k)))
                continue;
            const char *et = f64 ? "f64" : "f32";
            int l = 1 << k, bytes = l * (f64 ? 8 : 4);
            for (int max = 0; max < 2; max++) {
                const char *guard = NULL, *op = x86_minmax(f64, bytes, max, &guard);
                texi_sb_printf(sb, "%s tex_v%d_%s tex_v%s_v%d_%s(tex_v%d_%s a, tex_v%d_%s b)\n{\n",
                               p->target->inline_kw, l, et, max ? "max" : "min", l, et, l, et, l,
                               et);
                if (op && bytes == 64)
                    texi_sb_printf(sb,
                                   "#if defined(__AVX512F__)\n"
                                   "    %s k = __builtin_ia32_cmpp%c512_mask(b, b, 7, (%s)-1, 4);\n"
                                   "#ifdef __clang__\n"
                                   "    return __builtin_ia32_selectp%c_512(k, %s(b, a, 4), b);\n"
                                   "#else\n"
                                   "    return %s_mask(b, a, b, k, 4);\n"
                                   "#endif\n#else\n",
                                   f64 ? "unsigned char" : "unsigned short", f64 ? 'd' : 's',
                                   f64 ? "unsigned char" : "unsigned short", f64 ? 'd' : 's', op,
                                   op);
                else if (op)
                    texi_sb_printf(sb,
                                   "#if defined(%s)\n"
                                   "    return tex_vselect_v%d_%s(b != b, b, %s(b, a));\n"
                                   "#else\n",
                                   guard, l, et, op);
                texi_sb_printf(sb, "    return tex_vselect_v%d_%s((%s) | (b != b), b, a);\n", l, et,
                               max ? "a < b" : "b < a");
                texi_sb_puts(sb, op ? "#endif\n}\n\n" : "}\n\n");
            }
        }
}

/* tex_vmin_vL_T / tex_vmax_vL_T for the 32/64-bit integer vectors min/max
 * used: b where b < a (max: a < b), else a, as the scalar helpers. */
static void int_minmax_helpers(const texi_cp *p, texi_sb *sb)
{
    for (int t = 0; t < TEXI_CP_N_DTYPES; t++)
        for (int k = 1; k <= TEXI_CP_MAX_LANES_LOG2; k++) {
            if (t == TEX_F32 || t == TEX_F64 || !(p->vector_minmax[t] & (1u << k)))
                continue;
            const char *n = tex_dtype_name((tex_dtype)t);
            int l = 1 << k;
            for (int max = 0; max < 2; max++)
                texi_sb_printf(sb,
                               "%s tex_v%d_%s tex_v%s_v%d_%s(tex_v%d_%s a, tex_v%d_%s b)\n{\n"
                               "    return tex_vselect_v%d_%s(%s, b, a);\n}\n\n",
                               p->target->inline_kw, l, n, max ? "max" : "min", l, n, l, n, l, n, l,
                               n, max ? "a < b" : "b < a");
        }
}

/* The scalar combination of r and x by op, as the scalar printer's helpers
 * compute it: integer sums and products wrap (r and x are uint64_t there),
 * float min/max propagate NaN (tex_min_f32/tex_max_f32's rule, branch-free
 * like theirs: chelpers.c). */
static const char *combine_text(enum texi_reduce_op op, bool fl)
{
    switch (op) {
    case TEXI_REDUCE_SUM:
        return "r + x";
    case TEXI_REDUCE_PROD:
        return "r * x";
    case TEXI_REDUCE_MAX:
        return fl ? "((r < x) | (x != x)) ? x : r" : "r < x ? x : r";
    default: /* MIN */
        return fl ? "((x < r) | (x != x)) ? x : r" : "x < r ? x : r";
    }
}

/* The lane-wise combination of float vectors v and w by op into v (a
 * statement; suffix: the vector's, "v16_f32"); min and max are
 * tex_vmin_/tex_vmax_, which texi_cp_vreduce asked for. */
static void put_lanewise(texi_sb *sb, enum texi_reduce_op op, const char *suffix)
{
    if (op == TEXI_REDUCE_SUM || op == TEXI_REDUCE_PROD)
        texi_sb_printf(sb, "    v = v %c w;\n", op == TEXI_REDUCE_SUM ? '+' : '*');
    else
        texi_sb_printf(sb, "    v = tex_v%s_%s(v, w);\n", op == TEXI_REDUCE_MAX ? "max" : "min",
                       suffix);
}

/* tex_vreduce_OP_vL_T for f32 and f64: a rotation tree, v combined lane by
 * lane with itself rotated by L/2, L/4, ..., 1 lanes, lane 0 returned
 * (texi_vreduce_new's order): log2(L) steps instead of a chain of L - 1
 * dependent operations, whose latency a row-wise kernel (softmax's max
 * and sum) waits on once per row. The rotations are spelled for each
 * compiler: __builtin_shufflevector (Clang, GCC 12 on), else
 * __builtin_shuffle. */
static void tree_reduce_helper(const texi_cp *p, texi_sb *sb, enum texi_reduce_op op, tex_dtype t,
                               int l)
{
    const char *n = tex_dtype_name(t);
    int bits = texi_dtype_bits(t);
    char suffix[32];
    snprintf(suffix, sizeof suffix, "v%d_%s", l, n);
    texi_sb_printf(sb,
                   "%s %s tex_vreduce_%s_%s(tex_%s v)\n{\n"
                   "    tex_%s w;\n"
                   "#if !defined(__clang__) && __GNUC__ < 12\n"
                   "    typedef int%d_t M __attribute__((vector_size(%d)));\n"
                   "#endif\n",
                   p->target->inline_kw, texi_dtype_ctype(t), texi_vreduce_names[op], suffix,
                   suffix, suffix, bits, l * bits / 8);
    for (int h = l / 2; h >= 1; h /= 2) {
        for (int clang = 1; clang >= 0; clang--) {
            texi_sb_puts(sb, clang ? "#if defined(__clang__) || __GNUC__ >= 12\n"
                                     "    w = __builtin_shufflevector(v, v"
                                   : "#else\n    w = __builtin_shuffle(v, (M){");
            for (int k = 0; k < l; k++)
                texi_sb_printf(sb, "%s%d", k || clang ? ", " : "", (k + h) % l);
            texi_sb_puts(sb, clang ? ");\n" : "});\n#endif\n");
        }
        put_lanewise(sb, op, suffix);
    }
    texi_sb_puts(sb, "    return v[0];\n}\n\n");
}

/* tex_vreduce_OP_vL_T(v): f32 and f64 by tree_reduce_helper; other types
 * combined in lane order, lane 0 first (the interpreter's order for them);
 * integers accumulate in uint64_t, which wraps as every narrower type does,
 * and convert back at the end. */
static void reduce_helpers(const texi_cp *p, texi_sb *sb)
{
    for (int op = 0; op < TEXI_REDUCE_COUNT; op++)
        for (int t = 0; t < TEXI_CP_N_DTYPES; t++)
            for (int k = 1; k <= TEXI_CP_MAX_LANES_LOG2; k++) {
                if (!(p->vector_reduce[op][t] & (1u << k)))
                    continue;
                if (t == TEX_F32 || t == TEX_F64) {
                    tree_reduce_helper(p, sb, (enum texi_reduce_op)op, (tex_dtype)t, 1 << k);
                    continue;
                }
                bool fl = texi_dtype_is_float((tex_dtype)t);
                bool wrap = !fl && (op == TEXI_REDUCE_SUM || op == TEXI_REDUCE_PROD);
                const char *n = tex_dtype_name((tex_dtype)t), *et = texi_dtype_ctype((tex_dtype)t);
                const char *acc = wrap ? "uint64_t" : et;
                int l = 1 << k;
                texi_sb_printf(sb,
                               "%s %s tex_vreduce_%s_v%d_%s(tex_v%d_%s v)\n{\n"
                               "    %s r = (%s)v[0];\n"
                               "    for (int k = 1; k < %d; k++) {\n"
                               "        %s x = (%s)v[k];\n"
                               "        r = %s;\n    }\n"
                               "    return (%s)r;\n}\n\n",
                               p->target->inline_kw, et, texi_vreduce_names[op], l, n, l, n, acc,
                               acc, l, acc, acc, combine_text((enum texi_reduce_op)op, fl), et);
            }
}

void texi_cp_vector_typedefs(const texi_cp *p, texi_sb *sb)
{
    for (int t = 0; t < TEXI_CP_N_DTYPES; t++)
        for (int k = 1; k <= TEXI_CP_MAX_LANES_LOG2; k++) {
            if (!(p->vector_types[t] & (1u << k)))
                continue;
            const char *et = texi_dtype_ctype((tex_dtype)t), *n = tex_dtype_name((tex_dtype)t);
            int bytes = (1 << k) * texi_dtype_bits((tex_dtype)t) / 8;
            texi_sb_printf(sb, "typedef %s tex_v%d_%s __attribute__((vector_size(%d)));\n", et,
                           1 << k, n, bytes);
            texi_sb_printf(sb,
                           "typedef %s tex_v%d_%s_u __attribute__((vector_size(%d), aligned(%d), "
                           "may_alias));\n",
                           et, 1 << k, n, bytes, texi_dtype_bits((tex_dtype)t) / 8);
        }
    select_helpers(p, sb);
    float_minmax_helpers(p, sb);
    int_minmax_helpers(p, sb);
    reduce_helpers(p, sb);
    texi_cp_mask_helpers(p, sb);
    for (int k = 1; k <= TEXI_CP_MAX_LANES_LOG2; k++)
        texi_vmath_source(sb, 1 << k, p->vector_math[k]);
}
