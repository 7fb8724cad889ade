/*
 * The helper functions C-family expressions call (cexpr.c), emitted before
 * the entry point only when used (texi_cp->helpers). Each is qualified by
 * the target's inline_kw ("static inline" in C, "__device__
 * __forceinline__" in CUDA), written here as TEX_INLINE. The f16/bf16
 * helpers are the target's own (its storage types differ).
 */
#include "codegen_c/cprint.h"

#include <string.h>

/* Appends text with every TEX_INLINE replaced by kw. */
static void put_helper(texi_sb *sb, const char *text, const char *kw)
{
    for (const char *at; (at = strstr(text, "TEX_INLINE"));) {
        texi_sb_printf(sb, "%.*s%s", (int)(at - text), text, kw);
        text = at + strlen("TEX_INLINE");
    }
    texi_sb_puts(sb, text);
}

/* Floor division helpers for one signed type (T, unsigned U, suffix). */
static void helper_floor(texi_sb *sb, const char *kw, const char *t, const char *u, const char *sfx)
{
    texi_sb_printf(sb,
                   "%s %s tex_floordiv_%s(%s a, %s b)\n{\n"
                   "    if (b == -1)\n        return (%s)(0 - (%s)a);\n"
                   "    %s q = a / b;\n"
                   "    return (a %% b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n}\n\n",
                   kw, t, sfx, t, t, t, u, t);
    texi_sb_printf(sb,
                   "%s %s tex_floormod_%s(%s a, %s b)\n{\n"
                   "    if (b == -1)\n        return 0;\n"
                   "    %s r = a %% b;\n"
                   "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n\n",
                   kw, t, sfx, t, t, t);
}

/* min/max of one type; floats propagate NaN like the oracle. The float
 * test is `|` of two comparisons, not `||`: both are cheap and pure, and
 * without a short circuit the compiler selects without a branch (which
 * would mispredict half the time in a max over random data). */
static void helper_minmax(texi_sb *sb, const char *kw, const char *t, const char *sfx, bool fl)
{
    texi_sb_printf(sb, "%s %s tex_min_%s(%s a, %s b)\n{\n    return %s ? b : a;\n}\n\n", kw, t, sfx,
                   t, t, fl ? "((b < a) | (b != b))" : "b < a");
    texi_sb_printf(sb, "%s %s tex_max_%s(%s a, %s b)\n{\n    return %s ? b : a;\n}\n\n", kw, t, sfx,
                   t, t, fl ? "((a < b) | (b != b))" : "a < b");
}

/* The binary searches of SEARCH over a sorted array of type t, with the
 * oracle's semantics (texi_eval_search): upper_bound, the first a[k] > v
 * in [lo, hi) or hi; find, the first a[k] == v or -1. */
static void helper_search(texi_sb *sb, const char *kw, const char *t, const char *sfx)
{
    static const char loop[] = "    while (lo < hi) {\n"
                               "        int64_t mid = lo + (hi - lo) / 2;\n"
                               "        if (a[mid] %s v)\n"
                               "            hi = mid;\n"
                               "        else\n"
                               "            lo = mid + 1;\n"
                               "    }\n";
    texi_sb_printf(
        sb, "%s int64_t tex_upper_bound_%s(const %s *a, int64_t lo, int64_t hi, int64_t v)\n{\n",
        kw, sfx, t);
    texi_sb_printf(sb, loop, ">");
    texi_sb_puts(sb, "    return lo;\n}\n\n");
    texi_sb_printf(sb,
                   "%s int64_t tex_find_%s(const %s *a, int64_t lo, int64_t hi, int64_t v)\n{\n",
                   kw, sfx, t);
    texi_sb_puts(sb, "    int64_t end = hi;\n");
    texi_sb_printf(sb, loop, ">=");
    texi_sb_puts(sb, "    return lo < end && a[lo] == v ? lo : -1;\n}\n\n");
}

static const char helper_f2i[] =
    "TEX_INLINE int64_t tex_f2i64(double v)\n{\n"
    "    return v != v ? 0 : v >= 9223372036854775807.0 ? INT64_MAX\n"
    "         : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;\n}\n\n"
    "TEX_INLINE uint64_t tex_f2u64(double v)\n{\n"
    "    return v != v || v <= 0 ? 0 : v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;\n"
    "}\n\n";

static const char helper_abs[] = "TEX_INLINE int32_t tex_abs_i32(int32_t x)\n{\n"
                                 "    return x < 0 ? (int32_t)(0 - (uint32_t)x) : x;\n}\n\n"
                                 "TEX_INLINE int64_t tex_abs_i64(int64_t x)\n{\n"
                                 "    return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;\n}\n\n";

void texi_cp_helpers(const texi_cp_target *target, texi_sb *sb, unsigned mask)
{
    const char *kw = target->inline_kw;
    for (int h = 0; h < 2; h++)
        if (mask & (h ? TEXI_CP_H_BF16 : TEXI_CP_H_F16))
            put_helper(sb, target->half_helpers[h], kw);
    if (mask & TEXI_CP_H_FLOOR_I32)
        helper_floor(sb, kw, "int32_t", "uint32_t", "i32");
    if (mask & TEXI_CP_H_FLOOR_I64)
        helper_floor(sb, kw, "int64_t", "uint64_t", "i64");
    static const struct {
        unsigned bit;
        const char *t, *sfx;
    } mm[] = {{TEXI_CP_H_MINMAX_I32, "int32_t", "i32"},  {TEXI_CP_H_MINMAX_I64, "int64_t", "i64"},
              {TEXI_CP_H_MINMAX_U32, "uint32_t", "u32"}, {TEXI_CP_H_MINMAX_U64, "uint64_t", "u64"},
              {TEXI_CP_H_MINMAX_F32, "float", "f32"},    {TEXI_CP_H_MINMAX_F64, "double", "f64"}};
    for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++)
        if (mask & mm[i].bit)
            helper_minmax(sb, kw, mm[i].t, mm[i].sfx, mm[i].bit >= TEXI_CP_H_MINMAX_F32);
    if (mask & TEXI_CP_H_F2I)
        put_helper(sb, helper_f2i, kw);
    if (mask & TEXI_CP_H_ABS)
        put_helper(sb, helper_abs, kw);
    if (mask & TEXI_CP_H_SEARCH_I32)
        helper_search(sb, kw, "int32_t", "i32");
    if (mask & TEXI_CP_H_SEARCH_I64)
        helper_search(sb, kw, "int64_t", "i64");
}
