/*
 * The CPU built-in intrinsics (docs/api.md, rule 10): "cpu.gemm_f32_avx512" and
 * "cpu.gemm_f32_avx2", fp32 GEMM micro-kernels for tex_tensorize.
 *
 * Each one is an ordinary intrinsic (texi_intrin_make) whose desc is
 *   C[MR, NR] = sum_k A[MR, KR] * B[KR, NR]      (f32; A, B placeholders)
 * so the schedule must tile C's rows by MR and its columns by NR (k.outer
 * outside the tensorized axis gives RESET + UPDATE calls; the whole
 * reduction inside gives BODY calls). Tiles cut in K, M or N call
 * instances of other shapes (below).
 *
 *   name                MR  NR  KR   registers
 *   cpu.gemm_f32_avx512  6  64 256   24 zmm accumulators + 4 B rows + 1 broadcast
 *   cpu.gemm_f32_avx2    6  16 256   12 ymm accumulators + 2 B rows + 1 broadcast
 *
 * Any K. KR is the depth of the built-in as tex_intrin_builtin returns it;
 * the micro-kernel is generated per depth (texi_intrin_builtin_cpu_depth,
 * the C functions named P_k<KR>_*, e.g. tex_gemm_f32_avx512_k64_update, the
 * depth-256 instance keeping the plain names), so lowering
 * (src/lower/schedule_ops.c) takes the depth from the schedule:
 *   - the tensorized nest's reduction leaf has constant extent E: the
 *     depth-E instance is called (k split by 64 for K = 576, or k left
 *     whole for K = 64, ...);
 *   - K % E != 0 with constant K (k split by E, its inner leaf in the
 *     tile): the last k tile of every whole M x N tile calls the depth
 *     (K % E) instance instead of running the loop nest;
 *   - the tile's first data leaf (its rows) has a constant extent R other
 *     than MR, at most the built-in's most rows (7 with AVX-512, whose 28
 *     accumulators and 4 B rows fill the 32 registers, the broadcast taking
 *     one accumulator's place: GCC keeps that one in L1, a load and store
 *     per k step off the critical path; 6 with AVX2): the R-row instance
 *     is called (a 7-row output split by 4, or whole: the micro-kernels
 *     alone, over a conv's 7-pixel row, ran 6% faster as one tile than as
 *     4 + 3; src/autosched/cpu.c's tile_rows says where whole kernels
 *     gained);
 *   - likewise M % R != 0 with constant M (i split by R, R = MR or the
 *     smaller extent, its inner leaf the tile's first data leaf): the last
 *     row tile, whole in N and k, calls the (M % R)-row instance
 *     (texi_intrin_builtin_cpu_shape);
 *   - a tile whose columns a constant extent N cuts after N % NR of them
 *     (the last column panel of a GEMM whose N is not a multiple of NR, or
 *     a GEMM of fewer than NR columns), whole in M and k or cut in M as
 *     above, calls the instance of N % NR columns: ceil(N % NR / W)
 *     vectors a row, the last one loaded and stored under a mask (AVX-512
 *     mask registers, AVX2 vmaskmov), so the tile still accumulates in
 *     registers.
 * So every tile of a GEMM of constant M, N and K runs micro-kernels but
 * one cut in k and in M or N at once; a symbolic size's last tile runs the
 * ordinary nest.
 *
 * The update is the classic register-blocked outer product: the C tile is
 * loaded into registers once per call, then for each of the KR steps one row
 * of B is loaded (NR/W vectors) and each of the MR elements of A's column is
 * broadcast and multiplied into its accumulator row (FMA); the tile is
 * stored back at the end. B's vectors are pinned to registers (an empty asm
 * with a "+v" operand): left alone, GCC folds their loads into the FMAs of
 * tiles of 2 or 3 rows, loading each B vector once per row, and such tiles
 * (a conv's 7-pixel row is 4 + 3) then ran at half the speed of a 4-row
 * tile, bound by the load ports. 6 x 64 was measured on a 2-core AVX-512 Xeon
 * (bench/gemm, B packed into [N/64, K, 64] panels) against 6 x 32, 12 x 32
 * and 8 x 48, and KR 128/256/512 (256 and 512 within noise; 256 keeps a B
 * block at 64 KiB, in L2, and lets smaller K use whole tiles).
 *
 * The C source is one template (cpu_template below), expanded per intrinsic:
 * '@' followed by one letter stands for a parameter (see expand). It defines
 *   static inline void P_reset(float *c, int64_t sc0, int64_t sc1);
 *   static inline void P_update(const float *a, int64_t sa0, int64_t sa1,
 *                               const float *b, int64_t sb0, int64_t sb1,
 *                               float *c, int64_t sc0, int64_t sc1);
 *   static inline void P_body(...same as update...);   (C = A . B)
 * with P = tex_gemm_f32_avx512 or tex_gemm_f32_avx2 (plus the shape suffix
 * of other instances), so all can live in one generated file. The vector
 * path needs unit column strides in B and C (the vectors run along the
 * columns); it checks them at run time and otherwise
 * takes a portable path that accumulates the tile in a local array (any
 * strides). The vector path is compiled only where the compiler targets the
 * ISA (#if __AVX512F__, resp. __AVX2__ && __FMA__; generated code is built
 * with -march=native), so the source compiles on any CPU, falling back to
 * the portable path. Everything is static inline so the C compiler inlines
 * the calls into the kernel's loops; the vector path and its callers are
 * always inlined (GCC and clang, TEX_GEMM_INLINE), so that two UPDATEs of
 * one tile in a row (src/autosched/cpu.c, paired_axis) keep its
 * accumulators in registers from one to the next: the compiler forwards
 * the first call's stores to the second's loads.
 *
 * Not done here: packing of A or B (the schedule does it with a compute or
 * cache_read), prefetching.
 */
#include "schedule/intrin.h"

#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;   /* the built-in's name */
    const char *prefix; /* of the C functions */
    int64_t mr, nr, kr; /* the desc's extents */
    int64_t max_mr;     /* the most rows of an instance (accumulators the registers hold) */
    int width;          /* floats per vector */
    const char *vtype;  /* the vector type */
    const char *isa;    /* the intrinsics' prefix (_mm512, _mm256) */
    const char *guard;  /* preprocessor condition for the vector path */
    const char *mload;  /* printf formats of the first n (%d) lanes at p: load, store of x */
    const char *mstore;
} cpu_gemm;

static const cpu_gemm cpu_gemms[] = {
    {"cpu.gemm_f32_avx512", "tex_gemm_f32_avx512", 6, 64, 256, 7, 16, "__m512", "_mm512",
     "defined(__AVX512F__)", "_mm512_maskz_loadu_ps((__mmask16)((1u << %d) - 1u), p)",
     "_mm512_mask_storeu_ps(p, (__mmask16)((1u << %d) - 1u), x)"},
    {"cpu.gemm_f32_avx2", "tex_gemm_f32_avx2", 6, 16, 256, 6, 8, "__m256", "_mm256",
     "defined(__AVX2__) && defined(__FMA__)",
     "_mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(%d), "
     "_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)))",
     "_mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(%d), "
     "_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)), x)"},
};

/* An instance's shape: rows, columns (at most the built-in's NR), depth. */
typedef struct {
    int64_t mr, nc, kr;
} gemm_shape;

/* The source template; each piece stays below C's 4095-character literal
 * limit. @X name, @P prefix, @M rows, @N columns, @K depth, @W vector
 * width, @R vectors a row, @V vector type, @I intrinsics' prefix, @G the
 * vector path's condition, @L / @S load / store of the last vector of a row
 * (p, x; masked when the columns do not fill it). */
static const char *const cpu_template[] = {
    "/* tex built-in @X: C[@M, @N] (+)= A[@M, @K] . B[@K, @N] (f32) */\n"
    "#include <stdint.h>\n"
    "#ifndef TEX_GEMM_INLINE\n"
    "#if defined(__GNUC__)\n"
    "#define TEX_GEMM_INLINE static inline __attribute__((always_inline))\n"
    "#else\n"
    "#define TEX_GEMM_INLINE static inline\n"
    "#endif\n"
    "#endif\n"
    "static inline void @P_reset(float *c, int64_t sc0, int64_t sc1)\n"
    "{\n"
    "    for (int64_t i = 0; i < @M; i++)\n"
    "        for (int64_t j = 0; j < @N; j++)\n"
    "            c[i * sc0 + j * sc1] = 0.0f;\n"
    "}\n"
    "/* any strides: the tile accumulates in a local array */\n"
    "static inline void @P_any(const float *a, int64_t sa0, int64_t sa1, const float *b,\n"
    "    int64_t sb0, int64_t sb1, float *c, int64_t sc0, int64_t sc1,\n"
    "    int acc_c)\n"
    "{\n"
    "    float t[@M][@N];\n"
    "    for (int64_t i = 0; i < @M; i++)\n"
    "        for (int64_t j = 0; j < @N; j++)\n"
    "            t[i][j] = acc_c ? c[i * sc0 + j * sc1] : 0.0f;\n"
    "    for (int64_t k = 0; k < @K; k++)\n"
    "        for (int64_t i = 0; i < @M; i++) {\n"
    "            float av = a[i * sa0 + k * sa1];\n"
    "            for (int64_t j = 0; j < @N; j++)\n"
    "                t[i][j] += av * b[k * sb0 + j * sb1];\n"
    "        }\n"
    "    for (int64_t i = 0; i < @M; i++)\n"
    "        for (int64_t j = 0; j < @N; j++)\n"
    "            c[i * sc0 + j * sc1] = t[i][j];\n"
    "}\n",

    "#if @G\n"
    "#include <immintrin.h>\n"
    "/* vector v of a row at p: the last one may be partial */\n"
    "TEX_GEMM_INLINE @V @P_ld(const float *p, int v)\n"
    "{\n"
    "    return v == @R - 1 ? @L : @I_loadu_ps(p);\n"
    "}\n"
    "TEX_GEMM_INLINE void @P_st(float *p, int v, @V x)\n"
    "{\n"
    "    if (v == @R - 1)\n"
    "        @S;\n"
    "    else\n"
    "        @I_storeu_ps(p, x);\n"
    "}\n"
    "/* unit column strides: @M x @R vector accumulators, B rows loaded, A broadcast */\n"
    "TEX_GEMM_INLINE void @P_vec(const float *a, int64_t sa0, int64_t sa1, const float *b,\n"
    "    int64_t sb0, float *c, int64_t sc0, int acc_c)\n"
    "{\n"
    "    @V acc[@M][@R];\n"
    "    for (int i = 0; i < @M; i++)\n"
    "        for (int v = 0; v < @R; v++)\n"
    "            acc[i][v] = acc_c ? @P_ld(c + i * sc0 + v * @W, v) : @I_setzero_ps();\n"
    "    for (int64_t k = 0; k < @K; k++) {\n"
    "        @V bv[@R];\n"
    "        for (int v = 0; v < @R; v++) {\n"
    "            bv[v] = @P_ld(b + k * sb0 + v * @W, v);\n"
    "            __asm__(\"\" : \"+v\"(bv[v])); /* a register, not a memory operand */\n"
    "        }\n"
    "        for (int i = 0; i < @M; i++) {\n"
    "            @V av = @I_set1_ps(a[i * sa0 + k * sa1]);\n"
    "            for (int v = 0; v < @R; v++)\n"
    "                acc[i][v] = @I_fmadd_ps(av, bv[v], acc[i][v]);\n"
    "        }\n"
    "    }\n"
    "    for (int i = 0; i < @M; i++)\n"
    "        for (int v = 0; v < @R; v++)\n"
    "            @P_st(c + i * sc0 + v * @W, v, acc[i][v]);\n"
    "}\n"
    "#endif\n",

    "TEX_GEMM_INLINE void @P_run(const float *a, int64_t sa0, int64_t sa1, const float *b,\n"
    "    int64_t sb0, int64_t sb1, float *c, int64_t sc0, int64_t sc1,\n"
    "    int acc_c)\n"
    "{\n"
    "#if @G\n"
    "    if (sb1 == 1 && sc1 == 1) {\n"
    "        @P_vec(a, sa0, sa1, b, sb0, c, sc0, acc_c);\n"
    "        return;\n"
    "    }\n"
    "#endif\n"
    "    @P_any(a, sa0, sa1, b, sb0, sb1, c, sc0, sc1, acc_c);\n"
    "}\n"
    "TEX_GEMM_INLINE void @P_update(const float *a, int64_t sa0, int64_t sa1, const float *b,\n"
    "    int64_t sb0, int64_t sb1, float *c, int64_t sc0, int64_t sc1)\n"
    "{\n"
    "    @P_run(a, sa0, sa1, b, sb0, sb1, c, sc0, sc1, 1);\n"
    "}\n"
    "TEX_GEMM_INLINE void @P_body(const float *a, int64_t sa0, int64_t sa1, const float *b,\n"
    "    int64_t sb0, int64_t sb1, float *c, int64_t sc0, int64_t sc1)\n"
    "{\n"
    "    @P_run(a, sa0, sa1, b, sb0, sb1, c, sc0, sc1, 0);\n"
    "}\n",
};

/* Appends the load (store) of the last vector of a row of nc columns. */
static void last_vector(texi_sb *sb, const cpu_gemm *g, int64_t nc, bool store)
{
    int lanes = (int)(nc % g->width);
    if (!lanes)
        texi_sb_printf(sb, store ? "%s_storeu_ps(p, x)" : "%s_loadu_ps(p)", g->isa);
    else
        texi_sb_printf(sb, store ? g->mstore : g->mload, lanes);
}

/* Appends template piece t with g's parameters substituted, for shape sh,
 * with function prefix `prefix`. */
static void expand(texi_sb *sb, const char *t, const cpu_gemm *g, const char *prefix, gemm_shape sh)
{
    for (; *t; t++) {
        if (*t != '@' || !t[1]) {
            texi_sb_putc(sb, *t);
            continue;
        }
        switch (*++t) {
        case 'X':
            texi_sb_puts(sb, g->name);
            break;
        case 'P':
            texi_sb_puts(sb, prefix);
            break;
        case 'M':
            texi_sb_printf(sb, "%lld", (long long)sh.mr);
            break;
        case 'N':
            texi_sb_printf(sb, "%lld", (long long)sh.nc);
            break;
        case 'K':
            texi_sb_printf(sb, "%lld", (long long)sh.kr);
            break;
        case 'W':
            texi_sb_printf(sb, "%d", g->width);
            break;
        case 'R':
            texi_sb_printf(sb, "%lld", (long long)((sh.nc + g->width - 1) / g->width));
            break;
        case 'L':
        case 'S':
            last_vector(sb, g, sh.nc, *t == 'S');
            break;
        case 'V':
            texi_sb_puts(sb, g->vtype);
            break;
        case 'I':
            texi_sb_puts(sb, g->isa);
            break;
        case 'G':
            texi_sb_puts(sb, g->guard);
            break;
        default:
            texi_sb_putc(sb, '@');
            texi_sb_putc(sb, *t);
            break;
        }
    }
}

/* g's C source for shape sh, copied into ctx's arena; NULL with ENOMEM
 * recorded. */
static char *gemm_source(tex_ctx *ctx, const cpu_gemm *g, const char *prefix, gemm_shape sh)
{
    texi_sb sb;
    texi_sb_init(&sb);
    for (size_t i = 0; i < sizeof cpu_template / sizeof cpu_template[0]; i++)
        expand(&sb, cpu_template[i], g, prefix, sh);
    char *text = texi_sb_take(&sb);
    if (!text) {
        texi_error(ctx, TEX_ENOMEM, "tex_intrin_builtin: out of memory writing '%s'", g->name);
        return NULL;
    }
    char *copy = texi_strdup(ctx, text);
    free(text);
    return copy;
}

/* The desc C[i, j] = sum_k A[i, k] * B[k, j] of shape sh. */
static tex_tensor *gemm_desc(tex_ctx *ctx, gemm_shape sh)
{
    tex_tensor *a = tex_placeholder_c(ctx, "A", TEX_F32, 2, (const int64_t[]){sh.mr, sh.kr});
    tex_tensor *b = tex_placeholder_c(ctx, "B", TEX_F32, 2, (const int64_t[]){sh.kr, sh.nc});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, sh.mr));
    tex_iter *j = tex_axis(ctx, "j", tex_int(ctx, sh.nc));
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_int(ctx, sh.kr));
    if (!a || !b || !i || !j || !k)
        return NULL;
    tex_expr *prod = tex_mul(TEX_AT(a, tex_iv(i), tex_iv(k)), TEX_AT(b, tex_iv(k), tex_iv(j)));
    return tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, &k));
}

/* g's instance of shape sh: its desc, source and function names. The
 * MR x NR x KR instance is the built-in as documented (plain names); others
 * carry their shape in their name and C prefix (P_k<KR>, P_m<MR>_k<KR> for
 * fewer rows, P_m<MR>_n<NC>_k<KR> for fewer columns), so that several fit
 * in one file. */
static tex_intrin *gemm_make(tex_ctx *ctx, const cpu_gemm *g, gemm_shape sh)
{
    char prefix[80], name[96];
    long long mr = sh.mr, nc = sh.nc, kr = sh.kr;
    if (nc != g->nr) {
        snprintf(prefix, sizeof prefix, "%s_m%lld_n%lld_k%lld", g->prefix, mr, nc, kr);
        snprintf(name, sizeof name, "%s (%lld rows, %lld columns, depth %lld)", g->name, mr, nc,
                 kr);
    } else if (mr != g->mr) {
        snprintf(prefix, sizeof prefix, "%s_m%lld_k%lld", g->prefix, mr, kr);
        snprintf(name, sizeof name, "%s (%lld rows, depth %lld)", g->name, mr, kr);
    } else if (kr != g->kr) {
        snprintf(prefix, sizeof prefix, "%s_k%lld", g->prefix, kr);
        snprintf(name, sizeof name, "%s (depth %lld)", g->name, kr);
    } else {
        snprintf(prefix, sizeof prefix, "%s", g->prefix);
        snprintf(name, sizeof name, "%s", g->name);
    }
    tex_tensor *desc = gemm_desc(ctx, sh);
    char *src = desc ? gemm_source(ctx, g, prefix, sh) : NULL;
    const char *fn[3] = {"body", "reset", "update"};
    char *fn_name[3] = {NULL, NULL, NULL};
    for (int f = 0; f < 3 && src; f++) {
        char buf[112];
        snprintf(buf, sizeof buf, "%s_%s", prefix, fn[f]);
        if (!(fn_name[f] = texi_strdup(ctx, buf)))
            return NULL;
    }
    if (!src)
        return NULL;
    return texi_intrin_make(ctx, "tex_intrin_builtin", name, desc, src, fn_name[0], fn_name[1],
                            fn_name[2], g->name);
}

/* The GEMM built-in named `name`, or NULL. */
static const cpu_gemm *gemm_named(const char *name)
{
    for (size_t n = 0; name && n < sizeof cpu_gemms / sizeof cpu_gemms[0]; n++)
        if (strcmp(name, cpu_gemms[n].name) == 0)
            return &cpu_gemms[n];
    return NULL;
}

tex_intrin *texi_intrin_builtin_cpu(tex_ctx *ctx, const char *name)
{
    const cpu_gemm *g = gemm_named(name);
    return g ? gemm_make(ctx, g, (gemm_shape){g->mr, g->nr, g->kr}) : NULL;
}

/* The GEMM built-in `in` is an instance of, or NULL. */
static const cpu_gemm *gemm_of(const tex_intrin *in)
{
    return gemm_named(in->builtin);
}

int64_t texi_intrin_cpu_depth(const tex_intrin *in)
{
    int64_t kr = 0;
    if (!in || !gemm_of(in) || !texi_expr_is_int_const(in->desc->op->raxes[0]->extent, &kr))
        return 0;
    return kr;
}

int64_t texi_intrin_cpu_max_rows(const char *builtin)
{
    const cpu_gemm *g = gemm_named(builtin);
    return g ? g->max_mr : 0;
}

int64_t texi_intrin_cpu_rows(const tex_intrin *in)
{
    int64_t mr = 0;
    if (!in || !gemm_of(in) || !texi_expr_is_int_const(in->desc->op->axes[0]->extent, &mr))
        return 0;
    return mr;
}

int64_t texi_intrin_cpu_cols(const tex_intrin *in)
{
    int64_t nc = 0;
    if (!in || !gemm_of(in) || !texi_expr_is_int_const(in->desc->op->axes[1]->extent, &nc))
        return 0;
    return nc;
}

tex_intrin *texi_intrin_builtin_cpu_shape(tex_ctx *ctx, tex_intrin *in, int64_t mr, int64_t nc,
                                          int64_t kr)
{
    const cpu_gemm *g = gemm_of(in);
    if (!g || kr <= 0 || mr <= 0 || mr > g->max_mr || nc <= 0 || nc > g->nr)
        return NULL;
    if (texi_intrin_cpu_depth(in) == kr && texi_intrin_cpu_rows(in) == mr &&
        texi_intrin_cpu_cols(in) == nc)
        return in;
    return gemm_make(ctx, g, (gemm_shape){mr, nc, kr});
}

tex_intrin *texi_intrin_builtin_cpu_depth(tex_ctx *ctx, tex_intrin *in, int64_t kr)
{
    return texi_intrin_builtin_cpu_shape(ctx, in, texi_intrin_cpu_rows(in),
                                         texi_intrin_cpu_cols(in), kr);
}
