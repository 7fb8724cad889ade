/*
 * Predicated vector loads and stores of the C-family printer (a LOAD or
 * STORE with a mask, built by simd_mask.c; docs/passes.md).
 *   - A dense access (index RAMP(base, 1, L)) of f32, f64 or a 32/64-bit
 *     integer whose mask is a prefix, ramp(r, 1, L) < broadcast(x, L)
 *     (the first x - r lanes), calls tex_mload_vL_T(&buf[base], x - r) /
 *     tex_mstore_vL_T(&buf[base], x - r, value). These helpers pick the
 *     ISA the kernel is compiled for (-march=native, part of the JIT's
 *     cache key): AVX-512F k-masked moves for 64-byte vectors (what
 *     _mm512_maskz_loadu_ps, _mm512_mask_storeu_ps and the pd / epi32 /
 *     epi64 forms call), AVX2's _mm256_maskload_* / _mm256_maskstore_*
 *     for 32-byte and the _mm_ forms for 16-byte ones (their builtins; no
 *     stores on AMD Zen 1 to 3, where
 *     they are microcoded: AVX2_STORES); otherwise a loop over the lanes
 *     that are on. A lane off touches no memory either way.
 *   - Private buffers: the same access to a buffer that one thread alone
 *     uses and that has a vector of slack after its end (the CPU target's
 *     ALLOCATE inside a parallel loop, or around no parallel loop:
 *     texi_cp.private_bufs) calls tex_wload_vL_T / tex_wstore_vL_T
 *     instead: a whole vector is loaded and the lanes off are zeroed, or
 *     the lanes off keep what was loaded there and the whole vector is
 *     stored back. No other thread can write those lanes in between, and
 *     the compiler sees plain vector moves: a register tile's accumulators
 *     of a partial vector (a row of 14 pixels) stay in registers instead
 *     of going through memory at every step, where a masked store's value
 *     does not forward to the next masked load (an NCHW conv on 14 x 14
 *     pixels ran at a twentieth of its speed).
 *   - Any other predicated access goes lane by lane: a load is the
 *     composite of `(mask lane ? buf[index lane] : 0)`, a store one
 *     `if (mask lane) buf[index lane] = value lane;` per lane.
 */
#include "codegen_c/cprint.h"

#include <stdio.h>

/* The count of lanes on of a prefix mask (file comment), or NULL. */
static tex_expr *prefix_count(texi_cp *p, const tex_expr *mask)
{
    int64_t stride;
    if (mask->kind != TEXI_EXPR_LT)
        return NULL;
    const tex_expr *r = mask->u.bin.a, *x = mask->u.bin.b;
    if (r->kind != TEXI_EXPR_RAMP || x->kind != TEXI_EXPR_BROADCAST ||
        !texi_expr_is_int_const(r->u.ramp.stride, &stride) || stride != 1)
        return NULL;
    tex_expr *d = texi_binary(TEXI_EXPR_SUB, x->u.un.a, r->u.ramp.base);
    d = d ? texi_simplify(d, 0, NULL) : NULL;
    if (!d)
        texi_cp_fail(p, TEX_ENOMEM, "out of memory (vector mask)");
    return d;
}

/* Elements the helpers move: f32, f64, 32/64-bit integers. */
static bool helper_dtype(tex_dtype t)
{
    return t == TEX_F32 || t == TEX_F64 || t == TEX_I32 || t == TEX_U32 || t == TEX_I64 ||
           t == TEX_U64;
}

/* Whether buf is a private buffer (file comment). */
static bool is_private(const texi_cp *p, const texi_buffer *buf)
{
    for (int i = 0; i < p->n_private; i++)
        if (p->private_bufs[i] == texi_buffer_key(buf))
            return true;
    return false;
}

/* The lane count of the helper for a dense access (a store when store) of
 * buf at index under mask, with *count its prefix's count and *widened
 * whether it is a private buffer's; 0 when it has no helper. */
static int helper_lanes(texi_cp *p, bool store, const texi_buffer *buf, const tex_expr *index,
                        const tex_expr *mask, tex_expr **count, bool *widened)
{
    int64_t stride;
    if (!p->target->vectors || !helper_dtype(buf->dtype) || index->kind != TEXI_EXPR_RAMP ||
        !texi_expr_is_int_const(index->u.ramp.stride, &stride) || stride != 1 ||
        texi_cp_lanes_log2(index->lanes) < 0 || !(*count = prefix_count(p, mask)))
        return 0;
    *widened = is_private(p, buf);
    unsigned(*used)[TEXI_CP_N_DTYPES] = *widened ? p->vector_widened : p->vector_masked;
    used[store][buf->dtype] |= 1u << texi_cp_lanes_log2(index->lanes);
    texi_cp_vector_type(p, buf->dtype, index->lanes, false);
    if (*widened)
        texi_cp_vector_type(p, buf->dtype, index->lanes, true);
    return index->lanes;
}

/* `tex_mOP_vL_T(&buf[base], (int64_t)(count)` (tex_wOP_ when widened; no
 * closing parenthesis). */
static void emit_call(texi_cp *p, texi_sb *sb, const char *op, bool widened, const texi_buffer *buf,
                      const tex_expr *index, const tex_expr *count)
{
    texi_sb_printf(sb, "tex_%c%s_v%d_%s(&%s[", widened ? 'w' : 'm', op, index->lanes,
                   tex_dtype_name(buf->dtype), texi_cp_lookup(p, texi_buffer_key(buf), buf->name));
    texi_cp_expr(p, sb, index->u.ramp.base, TEXI_CP_P_TOP, true);
    texi_sb_puts(sb, "], (int64_t)(");
    texi_cp_expr(p, sb, count, TEXI_CP_P_TOP, true);
    texi_sb_putc(sb, ')');
}

bool texi_cp_masked_load(texi_cp *p, texi_sb *sb, const tex_expr *e)
{
    tex_expr *count = NULL;
    bool widened;
    if (!helper_lanes(p, false, e->u.load.buf, e->u.load.index, e->u.load.mask, &count, &widened))
        return false;
    emit_call(p, sb, "load", widened, e->u.load.buf, e->u.load.index, count);
    texi_sb_putc(sb, ')');
    return true;
}

void texi_cp_masked_load_lane(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec)
{
    bool par = TEXI_CP_P_COND < prec;
    texi_sb_puts(sb, par ? "(" : "");
    texi_cp_expr(p, sb, e->u.load.mask, TEXI_CP_P_OR, false);
    texi_sb_puts(sb, " ? ");
    texi_cp_load(p, sb, e->u.load.buf, e->u.load.index, e->dtype, TEXI_CP_P_OR);
    texi_sb_puts(sb, " : 0");
    texi_sb_puts(sb, par ? ")" : "");
}

void texi_cp_masked_store(texi_cp *p, texi_sb *sb, const tex_stmt *s)
{
    const texi_buffer *b = s->u.store.buf;
    const tex_expr *index = s->u.store.index;
    tex_expr *count = NULL;
    bool widened;
    if (helper_lanes(p, true, b, index, s->u.store.mask, &count, &widened)) {
        texi_cp_indent(p, sb);
        emit_call(p, sb, "store", widened, b, index, count);
        texi_sb_puts(sb, ", ");
        texi_cp_store_value(p, sb, s->u.store.value, b->dtype);
        texi_sb_puts(sb, ");\n");
        return;
    }
    for (int k = 0; k < index->lanes; k++) {
        texi_cp_indent(p, sb);
        p->lane = k;
        texi_sb_puts(sb, "if (");
        texi_cp_expr(p, sb, s->u.store.mask, TEXI_CP_P_TOP, false);
        texi_sb_printf(sb, ") %s[", texi_cp_lookup(p, texi_buffer_key(b), b->name));
        texi_cp_expr(p, sb, index, TEXI_CP_P_TOP, true);
        texi_sb_puts(sb, "] = ");
        texi_cp_store_value(p, sb, s->u.store.value, b->dtype);
        texi_sb_puts(sb, ";\n");
    }
    p->lane = -1;
}

/* ----------------------------------------------------------------- helpers */

/* What one helper's ISA branch needs. The masked moves are called through
 * the compiler builtins that GCC's and Clang's <immintrin.h> wrap (the
 * same names in both): including that header costs about half a second of
 * every kernel's compile time. */
typedef struct {
    const char *cond;   /* the preprocessor test of the ISA */
    const char *et, *x; /* the builtins' element type; "q"/"d"/"ps"/"pd" */
    int bytes, bits;    /* of the vector, of an element */
} isa_form;

/* AVX2's masked stores are microcoded on AMD Zen 1 to 3 (-march=native
 * defines __znverN__): several times slower there than the loop over the
 * lanes that are on, which the masked loads still feed. */
#define AVX2_STORES                                                                                \
    "defined(__AVX2__) && !defined(__znver1__) && !defined(__znver2__) && !defined(__znver3__)"

/* The form of tex_m*_vL_T (of a store when store), or false for a vector
 * size without one. */
static bool form_of(tex_dtype t, int lanes, bool store, isa_form *f)
{
    f->bits = texi_dtype_bits(t);
    f->bytes = lanes * f->bits / 8;
    bool fl = texi_dtype_is_float(t), b32 = f->bits == 32;
    f->et = fl ? (b32 ? "float" : "double") : (b32 ? "int" : "long long");
    f->x = fl ? (b32 ? "ps" : "pd") : (b32 ? "d" : "q");
    f->cond = f->bytes == 64 ? "defined(__AVX512F__)" : store ? AVX2_STORES : "defined(__AVX2__)";
    return f->bytes == 16 || f->bytes == 32 || f->bytes == 64;
}

/* `int c`: the lane count n clamped to [0, lanes], in two selects the
 * compiler keeps branch-free (a nested conditional became branches that
 * split a register tile's chunks, and their accumulators went to memory). */
static void emit_clamp(texi_sb *sb, int lanes)
{
    texi_sb_printf(sb, "    int64_t c0 = n > 0 ? n : 0;\n    int c = (int)(c0 < %d ? c0 : %d);\n",
                   lanes, lanes);
}

/* AVX-512's move under the k mask m of the first c lanes (the _mm512_
 * maskz_loadu_ / mask_storeu_ builtins). */
static void emit_k_masked(texi_sb *sb, const isa_form *f, bool store, const char *n, int lanes)
{
    static const char *const kind[2][2] = {{"dqusi", "dqudi"}, {"ups", "upd"}};
    const char *k = kind[f->x[0] == 'p'][f->bits == 64];
    texi_sb_printf(sb, "    unsigned %s m = (unsigned %s)(((uint32_t)1 << c) - 1u);\n",
                   lanes == 16 ? "short" : "char", lanes == 16 ? "short" : "char");
    if (store)
        texi_sb_printf(sb, "    __builtin_ia32_store%s512_mask((%s *)p, (vt)v, m);\n", k, f->et);
    else
        texi_sb_printf(
            sb,
            "    return (tex_v%d_%s)__builtin_ia32_load%s512_mask((const %s *)p, (vt){0}, m);\n",
            lanes, n, k, f->et);
}

/* The ISA branch of a helper: `#if` the ISA, its masked move, `#else`. */
static void emit_isa_branch(texi_sb *sb, const isa_form *f, bool store, const char *n, int lanes)
{
    texi_sb_printf(sb, "#if %s\n", f->cond);
    emit_clamp(sb, lanes);
    texi_sb_printf(sb, "    typedef %s vt __attribute__((vector_size(%d)));\n", f->et, f->bytes);
    if (f->bytes == 64) {
        emit_k_masked(sb, f, store, n, lanes);
        texi_sb_puts(sb, "#else\n");
        return;
    }
    /* AVX / AVX2 maskload and maskstore: a mask vector of the elements' width */
    const char *mt = f->bits == 32 ? "int" : "long long", *w = f->bytes == 32 ? "256" : "";
    texi_sb_printf(sb, "    typedef %s mt __attribute__((vector_size(%d)));\n    mt m = (mt){", mt,
                   f->bytes);
    for (int k = 0; k < lanes; k++)
        texi_sb_printf(sb, "%d%s", k, k + 1 < lanes ? ", " : "");
    texi_sb_printf(sb, "} < (%s)c;\n", mt);
    if (store)
        texi_sb_printf(sb, "    __builtin_ia32_maskstore%s%s((vt *)p, m, (vt)v);\n", f->x, w);
    else
        texi_sb_printf(sb,
                       "    return (tex_v%d_%s)__builtin_ia32_maskload%s%s((const vt *)p, m);\n",
                       lanes, n, f->x, w);
    texi_sb_puts(sb, "#else\n");
}

/* The head of helper tex_Kload_vL_T, or tex_Kstore_vL_T when store (K:
 * kind, 'm' or 'w'), through its opening brace. */
static void helper_head(const texi_cp *p, texi_sb *sb, char kind, bool store, tex_dtype t,
                        int lanes)
{
    const char *n = tex_dtype_name(t), *et = texi_dtype_ctype(t), *kw = p->target->inline_kw;
    if (store)
        texi_sb_printf(sb, "%s void tex_%cstore_v%d_%s(%s *p, int64_t n, tex_v%d_%s v)\n{\n", kw,
                       kind, lanes, n, et, lanes, n);
    else
        texi_sb_printf(sb, "%s tex_v%d_%s tex_%cload_v%d_%s(const %s *p, int64_t n)\n{\n", kw,
                       lanes, n, kind, lanes, n, et);
}

/* tex_mload_vL_T, or tex_mstore_vL_T when store (file comment): the ISA's
 * masked move where the kernel is compiled for one, else a loop over the
 * lanes that are on. */
static void mask_helper(const texi_cp *p, texi_sb *sb, bool store, tex_dtype t, int lanes)
{
    const char *n = tex_dtype_name(t);
    isa_form f;
    bool isa = form_of(t, lanes, store, &f);
    helper_head(p, sb, 'm', store, t, lanes);
    if (isa)
        emit_isa_branch(sb, &f, store, n, lanes);
    if (!store)
        texi_sb_printf(sb, "    tex_v%d_%s r = {0};\n", lanes, n);
    texi_sb_printf(sb, "    for (int64_t k = 0; k < n && k < %d; k++)\n        %s;\n", lanes,
                   store ? "p[k] = v[k]" : "r[k] = p[k]");
    texi_sb_puts(sb, store ? "" : "    return r;\n");
    texi_sb_puts(sb, isa ? "#endif\n}\n\n" : "}\n\n");
}

/* The AVX-512 branch of a widened helper of 64-byte vectors: the lanes
 * kept or zeroed under a k mask (GCC's movX512_mask, Clang's
 * selectX_512), where integer vector masks took a vector register each
 * and a register tile of partial vectors ran out of them. */
static void emit_k_blend(texi_sb *sb, const isa_form *f, bool store, const char *n, int lanes)
{
    static const char *const gcc[2][2] = {{"movdqa32_512", "movdqa64_512"},
                                          {"movaps512", "movapd512"}};
    const char *g = gcc[f->x[0] == 'p'][f->bits == 64];
    const char *mk = lanes == 16 ? "unsigned short" : "unsigned char";
    texi_sb_printf(sb, "#if %s\n    typedef %s vt __attribute__((vector_size(64)));\n", f->cond,
                   f->et);
    texi_sb_printf(sb, "    %s m = (%s)(((uint32_t)1 << c) - 1u);\n", mk, mk);
    texi_sb_printf(sb, "    vt o = (vt)*(const tex_v%d_%s_u *)p, z = {0};\n", lanes, n);
    const char *a = store ? "(vt)v" : "o", *w = store ? "o" : "z";
    texi_sb_printf(sb, "#ifdef __clang__\n    vt r = __builtin_ia32_select%s_512(m, %s, %s);\n",
                   f->x, a, w);
    texi_sb_printf(sb, "#else\n    vt r = __builtin_ia32_%s_mask(%s, %s, m);\n#endif\n", g, a, w);
    if (store)
        texi_sb_printf(sb, "    (void)z;\n    *(tex_v%d_%s_u *)p = (tex_v%d_%s)r;\n", lanes, n,
                       lanes, n);
    else
        texi_sb_printf(sb, "    return (tex_v%d_%s)r;\n", lanes, n);
    texi_sb_puts(sb, "#else\n");
}

/* tex_wload_vL_T, or tex_wstore_vL_T when store (file comment, "Private
 * buffers"): whole vectors, the lanes at and after n masked with integer
 * vectors of the elements' width (GCC and Clang vector extensions). */
static void widened_helper(const texi_cp *p, texi_sb *sb, bool store, tex_dtype t, int lanes)
{
    const char *n = tex_dtype_name(t);
    int bits = texi_dtype_bits(t);
    const char *mt = bits == 32 ? "int" : "long long";
    isa_form f;
    bool k_masks = form_of(t, lanes, store, &f) && f.bytes == 64;
    helper_head(p, sb, 'w', store, t, lanes);
    emit_clamp(sb, lanes);
    if (k_masks)
        emit_k_blend(sb, &f, store, n, lanes);
    texi_sb_printf(sb, "    typedef %s mt __attribute__((vector_size(%d)));\n    mt m = (mt){", mt,
                   lanes * bits / 8);
    for (int k = 0; k < lanes; k++)
        texi_sb_printf(sb, "%d%s", k, k + 1 < lanes ? ", " : "");
    texi_sb_printf(sb, "} < (%s)c;\n", mt);
    texi_sb_printf(sb, "    mt o = (mt)*(const tex_v%d_%s_u *)p;\n", lanes, n);
    if (store)
        texi_sb_printf(sb, "    *(tex_v%d_%s_u *)p = (tex_v%d_%s)(((mt)v & m) | (o & ~m));\n",
                       lanes, n, lanes, n);
    else
        texi_sb_printf(sb, "    return (tex_v%d_%s)(o & m);\n", lanes, n);
    texi_sb_puts(sb, k_masks ? "#endif\n}\n\n" : "}\n\n");
}

void texi_cp_mask_helpers(const texi_cp *p, texi_sb *sb)
{
    for (int store = 0; store < 2; store++)
        for (int t = 0; t < TEXI_CP_N_DTYPES; t++)
            for (int k = 1; k <= TEXI_CP_MAX_LANES_LOG2; k++) {
                if (p->vector_masked[store][t] & (1u << k))
                    mask_helper(p, sb, store, (tex_dtype)t, 1 << k);
                if (p->vector_widened[store][t] & (1u << k))
                    widened_helper(p, sb, store, (tex_dtype)t, 1 << k);
            }
}
