/*
 * The CPU transpose built-ins (docs/api.md, rule 10): "cpu.transpose_f32_avx512"
 * and "cpu.transpose_f32_avx2", for tex_tensorize.
 *
 * Each one is an ordinary intrinsic (texi_intrin_make) whose desc is
 *   B[i, j] = A[j, i]      (f32, T x T; A a placeholder)
 * with T = 16 (AVX-512: a 64-byte vector holds a row) or 8 (AVX2). The
 * schedule tiles the two axes of a transpose by T (src/autosched/cpu.c,
 * schedule_transpose); tiles a non-dividing split cuts run the ordinary
 * loop nest.
 *
 * The function P_body(a, sa0, sa1, b, sb0, sb1) loads the T rows of A's tile
 * as vectors, transposes them in registers and stores the T rows of B's:
 * log2(T) stages, the stage of distance d (T/2, T/4, ..., 1) pairing rows r
 * and r + d (r & d == 0) and swapping, in every block of 2d lanes, the
 * upper d lanes of row r with the lower d lanes of row r + d:
 *   r'[q*2d + p]     = p < d ? r[q*2d + p]     : s[q*2d + p - d]
 *   s'[q*2d + p]     = p < d ? r[q*2d + d + p] : s[q*2d + p]
 * (the 2 x 2 block transpose, applied to blocks of d x d at once), each a
 * two-vector shuffle (__builtin_shufflevector: GCC >= 12, clang; AVX-512's
 * vpermt2ps). 16 x 16: 32 vector moves and 64 shuffles, against 256
 * element loads and inserts when each output vector is gathered from 16
 * rows. The vector path needs unit strides along the rows of both tiles
 * (sa1 == sb1 == 1), checked at run time, and is compiled only where the
 * compiler targets the ISA (the JIT builds with -march=native); otherwise a
 * loop over the elements runs (any strides).
 */
#include "schedule/intrin.h"

#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;  /* the built-in's name */
    const char *fn;    /* its C function */
    int t;             /* the tile's side: floats per vector */
    const char *guard; /* preprocessor condition for the vector path */
} cpu_transpose;

static const cpu_transpose cpu_transposes[] = {
    {"cpu.transpose_f32_avx512", "tex_transpose_f32_avx512", 16, "defined(__AVX512F__)"},
    {"cpu.transpose_f32_avx2", "tex_transpose_f32_avx2", 8, "defined(__AVX2__)"},
};

/* One shuffle of stage d: row r' (high: row s') of the pair (x[r], x[r + d])
 * into y[out]. */
static void put_shuffle(texi_sb *sb, int t, int d, int r, int out, bool high)
{
    texi_sb_printf(sb, "    y[%d] = __builtin_shufflevector(x[%d], x[%d]", out, r, r + d);
    for (int lane = 0; lane < t; lane++) {
        int p = lane % (2 * d);
        int from = high ? (p < d ? lane + d : t + lane) : (p < d ? lane : t + lane - d);
        texi_sb_printf(sb, ", %d", from);
    }
    texi_sb_puts(sb, ");\n");
}

/* tr's C source (file comment). */
static void put_source(texi_sb *sb, const cpu_transpose *tr)
{
    const char *f = tr->fn;
    int t = tr->t;
    texi_sb_printf(sb,
                   "/* tex built-in %s: B[i, j] = A[j, i], %d x %d (f32) */\n"
                   "#include <stdint.h>\n"
                   "#include <string.h>\n"
                   "static inline void %s_any(const float *a, int64_t sa0, int64_t sa1, float *b,\n"
                   "    int64_t sb0, int64_t sb1)\n"
                   "{\n"
                   "    for (int64_t i = 0; i < %d; i++)\n"
                   "        for (int64_t j = 0; j < %d; j++)\n"
                   "            b[i * sb0 + j * sb1] = a[j * sa0 + i * sa1];\n"
                   "}\n",
                   tr->name, t, t, f, t, t);
    texi_sb_printf(sb,
                   "#if %s && (defined(__clang__) || __GNUC__ >= 12)\n"
                   "#define %s_VECTOR 1\n"
                   "typedef float %s_v __attribute__((vector_size(%d)));\n"
                   "static inline __attribute__((always_inline)) void %s_vec(const float *a,\n"
                   "    int64_t sa0, float *b, int64_t sb0)\n"
                   "{\n"
                   "    %s_v x[%d], y[%d];\n"
                   "    for (int r = 0; r < %d; r++)\n"
                   "        memcpy(&x[r], a + r * sa0, sizeof x[r]);\n",
                   tr->guard, f, f, 4 * t, f, f, t, t, t);
    for (int d = t / 2; d >= 1; d /= 2) {
        texi_sb_printf(sb, "    /* rows r, r + %d */\n", d);
        for (int r = 0; r < t; r++)
            if (!(r & d)) {
                put_shuffle(sb, t, d, r, r, false);
                put_shuffle(sb, t, d, r, r + d, true);
            }
        texi_sb_puts(sb, "    memcpy(x, y, sizeof x);\n");
    }
    texi_sb_printf(sb,
                   "    for (int r = 0; r < %d; r++)\n"
                   "        memcpy(b + r * sb0, &x[r], sizeof x[r]);\n"
                   "}\n"
                   "#endif\n"
                   "static inline __attribute__((always_inline)) void %s_body(const float *a,\n"
                   "    int64_t sa0, int64_t sa1, float *b, int64_t sb0, int64_t sb1)\n"
                   "{\n"
                   "#ifdef %s_VECTOR\n"
                   "    if (sa1 == 1 && sb1 == 1) {\n"
                   "        %s_vec(a, sa0, b, sb0);\n"
                   "        return;\n"
                   "    }\n"
                   "#endif\n"
                   "    %s_any(a, sa0, sa1, b, sb0, sb1);\n"
                   "}\n",
                   t, f, f, f, f);
}

/* The desc B[i, j] = A[j, i] over t x t. */
static tex_tensor *transpose_desc(tex_ctx *ctx, int t)
{
    tex_tensor *a = tex_placeholder_c(ctx, "A", TEX_F32, 2, (const int64_t[]){t, t});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, t));
    tex_iter *j = tex_axis(ctx, "j", tex_int(ctx, t));
    if (!a || !i || !j)
        return NULL;
    return tex_compute(ctx, "B", 2, (tex_iter *[]){i, j}, TEX_AT(a, tex_iv(j), tex_iv(i)));
}

tex_intrin *texi_intrin_builtin_cpu_transpose(tex_ctx *ctx, const char *name)
{
    const cpu_transpose *tr = NULL;
    for (size_t n = 0; name && n < sizeof cpu_transposes / sizeof cpu_transposes[0]; n++)
        if (strcmp(name, cpu_transposes[n].name) == 0)
            tr = &cpu_transposes[n];
    if (!tr)
        return NULL;
    tex_tensor *desc = transpose_desc(ctx, tr->t);
    texi_sb sb;
    texi_sb_init(&sb);
    put_source(&sb, tr);
    char *text = texi_sb_take(&sb);
    char *src = text ? texi_strdup(ctx, text) : NULL;
    free(text);
    char body[64];
    snprintf(body, sizeof body, "%s_body", tr->fn);
    const char *body_fn = src ? texi_strdup(ctx, body) : NULL;
    if (!src || !body_fn) {
        texi_error(ctx, TEX_ENOMEM, "tex_intrin_builtin: out of memory writing '%s'", tr->name);
        return NULL;
    }
    return desc ? texi_intrin_make(ctx, "tex_intrin_builtin", tr->name, desc, src, body_fn, NULL,
                                   NULL, tr->name)
                : NULL;
}

int texi_intrin_cpu_transpose_side(const char *builtin)
{
    for (size_t n = 0; builtin && n < sizeof cpu_transposes / sizeof cpu_transposes[0]; n++)
        if (strcmp(builtin, cpu_transposes[n].name) == 0)
            return cpu_transposes[n].t;
    return 0;
}
