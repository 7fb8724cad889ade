/*
 * util/half.c: f16 and bf16 conversions to and from f32.
 *
 * Every one of the 65536 bit patterns of each format goes to f32 and back
 * unchanged (NaN stays NaN with its sign), and its f32 value is checked
 * against an independent decoding. Narrowing is checked on hand-picked ties
 * (to even), overflow, subnormals and signed zeros, and on two million random
 * f32 patterns against a reference that searches the sorted table of
 * representable values for the nearest one.
 */
#include "tt.h"
#include "util/half.h"

#include <float.h>
#include <stdint.h>

/* The value of f16 pattern h, decoded independently with ldexp. */
static double f16_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

static void test_f16_round_trip_exhaustive(void)
{
    int bad_value = 0, bad_trip = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = texi_f16_to_f32((uint16_t)h);
        double want = f16_value((uint16_t)h);
        uint16_t back = texi_f16_from_f32(f);
        if (isnan(want)) {
            bad_value += !isnan(f);
            bad_trip +=
                (back & 0x7c00) != 0x7c00 || !(back & 0x3ff) || (back & 0x8000) != (h & 0x8000);
        } else {
            bad_value += (double)f != want || !signbit(f) != !signbit(want);
            bad_trip += back != h;
        }
    }
    TT_EQ_INT(bad_value, 0);
    TT_EQ_INT(bad_trip, 0);
}

static void test_bf16_round_trip_exhaustive(void)
{
    int bad_value = 0, bad_trip = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = texi_bf16_to_f32((uint16_t)h);
        bad_value += texi_f32_bits(f) != h << 16;
        uint16_t back = texi_bf16_from_f32(f);
        if (isnan(f))
            bad_trip +=
                (back & 0x7f80) != 0x7f80 || !(back & 0x7f) || (back & 0x8000) != (h & 0x8000);
        else
            bad_trip += back != h;
    }
    TT_EQ_INT(bad_value, 0);
    TT_EQ_INT(bad_trip, 0);
}

static void test_f16_rounding_hand_picked(void)
{
    TT_EQ_INT(texi_f16_from_f32(1.0f), 0x3c00);
    TT_EQ_INT(texi_f16_from_f32(1.0f + 0x1p-11f), 0x3c00);            /* tie: to even (down) */
    TT_EQ_INT(texi_f16_from_f32(1.0f + 3 * 0x1p-11f), 0x3c02);        /* tie: to even (up) */
    TT_EQ_INT(texi_f16_from_f32(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01); /* above the tie */
    TT_EQ_INT(texi_f16_from_f32(-1.0f - 0x1p-11f), 0xbc00);
    TT_EQ_INT(texi_f16_from_f32(65504.0f), 0x7bff); /* largest finite */
    TT_EQ_INT(texi_f16_from_f32(65519.99f), 0x7bff);
    TT_EQ_INT(texi_f16_from_f32(65520.0f), 0x7c00); /* tie with 65536: inf */
    TT_EQ_INT(texi_f16_from_f32(1e10f), 0x7c00);
    TT_EQ_INT(texi_f16_from_f32(-1e10f), 0xfc00);
    TT_EQ_INT(texi_f16_from_f32(INFINITY), 0x7c00);
    TT_EQ_INT(texi_f16_from_f32(-INFINITY), 0xfc00);
    TT_EQ_INT(texi_f16_from_f32(0.0f), 0x0000);
    TT_EQ_INT(texi_f16_from_f32(-0.0f), 0x8000);
    TT_EQ_INT(texi_f16_from_f32(0x1p-24f), 0x0001); /* smallest subnormal */
    TT_EQ_INT(texi_f16_from_f32(0x1p-25f), 0x0000); /* tie with 0: to even */
    TT_EQ_INT(texi_f16_from_f32(0x1p-25f + 0x1p-40f), 0x0001);
    TT_EQ_INT(texi_f16_from_f32(-0x1p-26f), 0x8000);           /* underflow keeps the sign */
    TT_EQ_INT(texi_f16_from_f32(1.5f * 0x1p-24f), 0x0002);     /* tie 1|2: even */
    TT_EQ_INT(texi_f16_from_f32(2.5f * 0x1p-24f), 0x0002);     /* tie 2|3: even */
    TT_EQ_INT(texi_f16_from_f32(0x1p-14f - 0x1p-25f), 0x0400); /* tie to the smallest normal */
    TT_EQ_INT(texi_f16_from_f32(0x1p-14f), 0x0400);
    TT_EQ_INT(texi_f16_from_f32(FLT_MIN), 0x0000);
    TT_CHECK(isnan(texi_f16_to_f32(texi_f16_from_f32(NAN))));
    TT_EQ_INT(texi_f16_from_f32(-NAN) & 0x8000, 0x8000);
}

static void test_bf16_rounding_hand_picked(void)
{
    TT_EQ_INT(texi_bf16_from_f32(1.0f), 0x3f80);
    TT_EQ_INT(texi_bf16_from_f32(1.0f + 0x1p-8f), 0x3f80);     /* tie: to even (down) */
    TT_EQ_INT(texi_bf16_from_f32(1.0f + 3 * 0x1p-8f), 0x3f82); /* tie: to even (up) */
    TT_EQ_INT(texi_bf16_from_f32(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
    TT_EQ_INT(texi_bf16_from_f32(texi_f32_from_bits(0x7f7f7fffu)),
              0x7f7f); /* below the tie: largest finite */
    TT_EQ_INT(texi_bf16_from_f32(texi_f32_from_bits(0x7f7f8000u)),
              0x7f80); /* tie, odd: up to inf */
    TT_EQ_INT(texi_bf16_from_f32(FLT_MAX), 0x7f80);
    TT_EQ_INT(texi_bf16_from_f32(-FLT_MAX), 0xff80);
    TT_EQ_INT(texi_bf16_from_f32(INFINITY), 0x7f80);
    TT_EQ_INT(texi_bf16_from_f32(-0.0f), 0x8000);
    TT_EQ_INT(texi_bf16_from_f32(texi_f32_from_bits(0x00008000u)),
              0x0000); /* f32 subnormal tie: even */
    TT_EQ_INT(texi_bf16_from_f32(texi_f32_from_bits(0x00018000u)), 0x0002);
    TT_EQ_INT(texi_bf16_from_f32(texi_f32_from_bits(0x00008001u)), 0x0001);
    TT_CHECK(isnan(texi_bf16_to_f32(texi_bf16_from_f32(NAN))));
    /* A NaN whose payload lies only in the dropped bits must not become inf. */
    TT_CHECK(isnan(texi_bf16_to_f32(texi_bf16_from_f32(texi_f32_from_bits(0x7f800001u)))));
    TT_CHECK(isnan(texi_bf16_to_f32(texi_bf16_from_f32(texi_f32_from_bits(0xff800001u)))));
}

/* Reference narrowing: the nearest of the positive patterns [0, top] (whose
 * values increase with the pattern), ties to the even pattern; `overflow` is
 * the smallest magnitude that rounds to infinity. */
static uint16_t nearest(float x, float (*to_f32)(uint16_t), uint16_t top, double overflow)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs((double)x);
    if (a >= overflow) /* the tie with the next power of two goes up: the top is odd */
        return sign | (uint16_t)(top + 1);
    uint32_t lo = 0, hi = top; /* largest pattern with value <= a */
    while (lo < hi) {
        uint32_t mid = (lo + hi + 1) / 2;
        if ((double)to_f32((uint16_t)mid) <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo < top) {
        double d0 = a - to_f32((uint16_t)lo), d1 = to_f32((uint16_t)(lo + 1)) - a;
        if (d1 < d0 || (d1 == d0 && (lo & 1)))
            lo++;
    }
    return sign | (uint16_t)lo;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rand32(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static void test_random_narrowing_matches_reference(void)
{
    int bad16 = 0, bad_bf = 0;
    for (int i = 0; i < 2000000; i++) {
        uint32_t u = rand32();
        if (i % 4 == 0) /* concentrate a quarter near f16's range */
            u = (u & 0x80ffffffu) | ((uint32_t)(0x30 + (rand32() % 0x20)) << 24);
        float x = texi_f32_from_bits(u);
        if (isnan(x))
            continue;
        bad16 += texi_f16_from_f32(x) != nearest(x, texi_f16_to_f32, 0x7bff, 65520.0);
        bad_bf += texi_bf16_from_f32(x) != nearest(x, texi_bf16_to_f32, 0x7f7f, ldexp(255.5, 120));
    }
    TT_EQ_INT(bad16, 0);
    TT_EQ_INT(bad_bf, 0);
}

int main(void)
{
    TT_RUN(test_f16_round_trip_exhaustive);
    TT_RUN(test_bf16_round_trip_exhaustive);
    TT_RUN(test_f16_rounding_hand_picked);
    TT_RUN(test_bf16_rounding_hand_picked);
    TT_RUN(test_random_narrowing_matches_reference);
    return tt_finish();
}
