/*
 * Scalar arguments: the value a caller gives a var parameter (a tex_value of
 * kind TEX_VAL_I64 or TEX_VAL_F64) converted to the var's dtype. Kernel calls
 * and the interpreter (both bound by rt/args.c) and
 * the oracle (tex_eval_reference_ex in eval.c) all convert through here, so
 * the three agree on every value and every refusal.
 *
 * Rules (tex.h, "Scalar parameters"):
 *   - to a float dtype: tex_cast's conversion (rounded to nearest; an f64
 *     too large for f32/f16/bf16 becomes an infinity, NaN stays NaN);
 *   - to an integer dtype: the value must be in the dtype's range; an F64
 *     must moreover be integral (2.5 is refused rather than truncated, NaN
 *     and infinities are refused);
 *   - to bool: 0 or 1 only (either kind).
 * A refusal is TEX_EINVAL with the reason in `why`; nothing else is touched.
 */
#include "ir/eval.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* The largest value of integer dtype t (bool: 1), as an unsigned number. */
static uint64_t int_max(tex_dtype t)
{
    if (t == TEX_BOOL)
        return 1;
    int bits = texi_dtype_bits(t);
    if (texi_dtype_is_signed(t))
        bits--;
    return bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
}

/* The smallest value of integer dtype t, as a signed number. */
static int64_t int_min(tex_dtype t)
{
    return texi_dtype_is_signed(t) ? -(int64_t)int_max(t) - 1 : 0;
}

static int out_of_range(tex_dtype t, const char *value, char *why, size_t why_size)
{
    if (why && why_size) {
        if (texi_dtype_is_signed(t))
            snprintf(why, why_size, "%s is out of range for %s [%" PRId64 ", %" PRIu64 "]", value,
                     tex_dtype_name(t), int_min(t), int_max(t));
        else
            snprintf(why, why_size, "%s is out of range for %s [0, %" PRIu64 "]", value,
                     tex_dtype_name(t), int_max(t));
    }
    return TEX_EINVAL;
}

/* An integer given as I64. */
static int from_i64(tex_dtype t, int64_t x, texi_eval_value *out, char *why, size_t why_size)
{
    bool ok = texi_dtype_is_signed(t) ? x >= int_min(t) && (x < 0 || (uint64_t)x <= int_max(t))
                                      : x >= 0 && (uint64_t)x <= int_max(t);
    if (!ok) {
        char text[32];
        snprintf(text, sizeof text, "%" PRId64, x);
        return out_of_range(t, text, why, why_size);
    }
    out->i = x;
    return 0;
}

/* An integer given as F64: integral and within range (checked in double,
 * where the bounds -2^(bits-1) and 2^bits are exact). */
static int from_f64(tex_dtype t, double d, texi_eval_value *out, char *why, size_t why_size)
{
    char text[40];
    snprintf(text, sizeof text, "%.17g", d);
    if (isnan(d) || (isfinite(d) && d != trunc(d))) {
        if (why && why_size)
            snprintf(why, why_size, "%s is not an integer, which %s needs", text,
                     tex_dtype_name(t));
        return TEX_EINVAL;
    }
    double hi = ldexp(1.0, t == TEX_BOOL ? 1 : texi_dtype_bits(t) - texi_dtype_is_signed(t));
    double lo = texi_dtype_is_signed(t) ? -hi : 0.0;
    if (!(d >= lo && d < hi))
        return out_of_range(t, text, why, why_size);
    out->i = texi_dtype_is_signed(t) ? (int64_t)d : (int64_t)(uint64_t)d;
    return 0;
}

int texi_eval_scalar_arg(tex_dtype t, const tex_value *a, texi_eval_value *out, char *why,
                         size_t why_size)
{
    if (a->kind != TEX_VAL_I64 && a->kind != TEX_VAL_F64) {
        if (why && why_size)
            snprintf(why, why_size, "must be a scalar (TEX_VAL_I64 or TEX_VAL_F64) for %s",
                     tex_dtype_name(t));
        return TEX_EINVAL;
    }
    if (texi_dtype_is_float(t)) {
        *out = a->kind == TEX_VAL_I64 ? texi_eval_convert(TEX_I64, t, (texi_eval_value){.i = a->i})
                                      : texi_eval_convert(TEX_F64, t, (texi_eval_value){.f = a->f});
        return 0;
    }
    return a->kind == TEX_VAL_I64 ? from_i64(t, a->i, out, why, why_size)
                                  : from_f64(t, a->f, out, why, why_size);
}
