/*
 * Vector expressions and stores of the C-family printer (lanes > 1, built
 * by pass simd, docs/passes.md), as GCC/Clang vector extensions:
 * `typedef float tex_v8_f32 __attribute__((vector_size(32)))`. The lane
 * mode below (texi_cp_lane_expr) is also how the CUDA printer prints every
 * vector value (src/backend_cuda/codegen_cuda_vector.c).
 *   - A dense load or store (index RAMP(base, 1, L)) of an integer or
 *     f32/f64 buffer is one unaligned vector access through tex_vL_T_u
 *     (aligned to the element, may_alias).
 *   - + - * / of f32/f64 vectors are the vector operators (a BROADCAST
 *     operand stays a scalar: the extension broadcasts it); the result per
 *     lane is the scalar operator's, so the oracle's semantics hold. min and
 *     max of f32/f64 vectors call tex_vmin_/tex_vmax_ helpers that select
 *     with comparison masks, with the scalar helpers' NaN rule.
 *   - exp, log, tanh, sigmoid and erf of f32 vectors call cvmath.c's vector
 *     functions (within 2 ulp, docs/architecture.md), unless the kernel is
 *     built -strict-float (p->libm_math): then libm, lane by lane.
 *   - select(c, t, f) with a condition the same in every lane (built of
 *     BROADCASTs and scalars: a padded read's bounds) is C's `c ? t : f`
 *     on whole vectors, c printed once (lane 0); else a select of 32/64-bit
 *     integers or f32/f64 over comparisons of such vectors (of any of these
 *     widths) combined with && || ! picks with their masks, converted to
 *     the result's width and combined with & | ~ (tex_vselect_ helpers).
 *   - + - * of 32/64-bit integer vectors wrap through the unsigned vector
 *     type; conversions that C performs exactly as the scalar printer does
 *     (to f32/f64, integer widening) are __builtin_convertvector.
 *   - Everything else is a composite `(tex_vL_T){lane 0, ..., lane L-1}`,
 *     each lane printed by the scalar printer in lane mode (p->lane = k:
 *     RAMP prints base + k*stride, BROADCAST its scalar, a vector variable
 *     name[k]), so every operator keeps its scalar semantics exactly; the C
 *     compiler's SLP vectorizer may still combine the lanes.
 *   - A store that is not dense is one scalar store per lane.
 *   - A horizontal reduction (the scalar VREDUCE) calls its tex_vreduce_
 *     helper (cvtypes.c), which combines the lanes with the scalar
 *     operator's semantics in the order texi_vreduce_new documents (a
 *     rotation tree for f32/f64); targets without vector extensions refuse
 *     it.
 * f16/bf16 lanes compute in float and bool lanes in int32_t vectors.
 */
#include "codegen_c/cprint.h"
#include "codegen_c/cvmath.h"

#include <stdio.h>
#include <string.h>

bool texi_cp_dense_access(tex_dtype st, const tex_expr *index)
{
    int64_t stride;
    return index->kind == TEXI_EXPR_RAMP && texi_expr_is_int_const(index->u.ramp.stride, &stride) &&
           stride == 1 && texi_dtype_lane(st) == st;
}

/* `*(tex_vL_T_u *)&buf[base]`, the const form for loads. */
static void emit_dense_access(texi_cp *p, texi_sb *sb, const texi_buffer *buf,
                              const tex_expr *index, bool load)
{
    texi_sb_printf(sb, "*(%s%s *)&", load ? "const " : "",
                   texi_cp_vector_type(p, buf->dtype, index->lanes, true));
    texi_cp_element(p, sb, buf, index->u.ramp.base);
}

/* Lane k of the RAMP e: base + k*stride. */
static void emit_ramp_lane(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec)
{
    tex_expr *base = e->u.ramp.base, *stride = e->u.ramp.stride;
    tex_expr *lane = p->lane ? texi_int_imm(p->ctx, base->dtype, p->lane) : NULL;
    tex_expr *step = lane ? texi_binary(TEXI_EXPR_MUL, stride, lane) : NULL;
    tex_expr *sum = step ? texi_simplify(texi_binary(TEXI_EXPR_ADD, base, step), 0, NULL) : NULL;
    if (p->lane && !sum) {
        texi_cp_fail(p, TEX_ENOMEM, "out of memory (vector lane)");
        return;
    }
    int saved = p->lane;
    p->lane = -1; /* base and stride are scalars */
    texi_cp_expr(p, sb, saved ? sum : base, prec, true);
    p->lane = saved;
}

bool texi_cp_lane_expr(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec)
{
    switch (e->kind) {
    case TEXI_EXPR_RAMP:
        emit_ramp_lane(p, sb, e, prec);
        return true;
    case TEXI_EXPR_BROADCAST: {
        int saved = p->lane;
        p->lane = -1;
        texi_cp_expr(p, sb, e->u.un.a, prec, !texi_dtype_is_float(e->dtype));
        p->lane = saved;
        return true;
    }
    case TEXI_EXPR_VAR:
        texi_sb_printf(sb, "%s[%d]", texi_cp_lookup(p, e, e->u.var.name), p->lane);
        return true;
    default:
        return false; /* the scalar form, its operands in lane mode */
    }
}

/* (tex_vL_T){lane 0, ..., lane L-1}. */
static void emit_composite(texi_cp *p, texi_sb *sb, const tex_expr *e)
{
    texi_sb_printf(sb, "(%s){", texi_cp_vector_type(p, e->dtype, e->lanes, false));
    for (int k = 0; k < e->lanes; k++) {
        texi_sb_puts(sb, k ? ", " : "");
        p->lane = k;
        texi_cp_expr(p, sb, e, TEXI_CP_P_COND, !texi_dtype_is_float(e->dtype));
    }
    p->lane = -1;
    texi_sb_putc(sb, '}');
}

/* The helper suffix of a vector of lanes values of dtype t: "v8_f32". */
static const char *vector_suffix(texi_cp *p, tex_dtype t, int lanes)
{
    return texi_cp_vector_type(p, t, lanes, false) + strlen("tex_");
}

/* Records that the vector type of lanes values of dtype t needs
 * tex_vselect_ and its mask type. */
static void use_select(texi_cp *p, tex_dtype t, int lanes)
{
    p->vector_select[t] |= 1u << texi_cp_lanes_log2(lanes);
    texi_cp_vector_type(p, texi_dtype_bits(t) == 64 ? TEX_I64 : TEX_I32, lanes, false);
}

/* Records that f32 or f64 vectors of `lanes` lanes need tex_vmin_ and
 * tex_vmax_ (and what those use). */
static void use_minmax(texi_cp *p, tex_dtype t, int lanes)
{
    p->vector_minmax[t] |= 1u << texi_cp_lanes_log2(lanes);
    use_select(p, t, lanes);
}

/* tex_vmin_v8_f32(a, b) / tex_vmax_...: the scalar helpers' NaN rule per lane. */
static void emit_minmax(texi_cp *p, texi_sb *sb, const tex_expr *e)
{
    use_minmax(p, e->dtype, e->lanes);
    texi_sb_printf(sb, "tex_v%s_%s(", e->kind == TEXI_EXPR_MIN ? "min" : "max",
                   vector_suffix(p, e->dtype, e->lanes));
    texi_cp_expr(p, sb, e->u.bin.a, TEXI_CP_P_TOP, false);
    texi_sb_puts(sb, ", ");
    texi_cp_expr(p, sb, e->u.bin.b, TEXI_CP_P_TOP, false);
    texi_sb_putc(sb, ')');
}

/* The cvmath.c function of math op, or 0. */
static unsigned vector_math_fn(enum texi_math op)
{
    switch (op) {
    case TEXI_MATH_EXP:
        return TEXI_VM_EXP;
    case TEXI_MATH_LOG:
        return TEXI_VM_LOG;
    case TEXI_MATH_TANH:
        return TEXI_VM_TANH;
    case TEXI_MATH_SIGMOID:
        return TEXI_VM_SIGMOID;
    case TEXI_MATH_ERF:
        return TEXI_VM_ERF;
    default:
        return 0;
    }
}

/* tex_vexp_f32x8(x) ... for an f32 vector call of a cvmath.c function;
 * false when e is not one (or libm is asked for). */
static bool emit_vector_math(texi_cp *p, texi_sb *sb, const tex_expr *e)
{
    unsigned fn = vector_math_fn(e->u.call.op);
    if (!fn || p->libm_math || e->dtype != TEX_F32 || e->u.call.args[0]->dtype != TEX_F32)
        return false;
    p->vector_math[texi_cp_lanes_log2(e->lanes)] |= fn;
    texi_cp_vector_type(p, TEX_I32, e->lanes, false); /* what cvmath.c's source uses */
    texi_cp_vector_type(p, TEX_U32, e->lanes, false);
    texi_sb_printf(sb, "tex_v%s_f32x%d(", texi_math_names[e->u.call.op], e->lanes);
    texi_cp_expr(p, sb, e->u.call.args[0], TEXI_CP_P_TOP, false);
    texi_sb_putc(sb, ')');
    return true;
}

/* 32- and 64-bit integers: vector + - * wrap through the unsigned type. */
static bool wide_int(tex_dtype t)
{
    return t == TEX_I32 || t == TEX_I64 || t == TEX_U32 || t == TEX_U64;
}

/* Whether C's conversion of a vector from dtype `from` to `to` gives the
 * scalar printer's values: f32/f64 from any integer or float, integers
 * widened (or of the same width) from integers. Not: halves and bool
 * (other vector element types), float to integer (saturating), narrowing. */
static bool exact_convert(tex_dtype from, tex_dtype to)
{
    bool plain_from = from != TEX_BOOL && from != TEX_F16 && from != TEX_BF16;
    if (!plain_from)
        return false;
    if (to == TEX_F32 || to == TEX_F64)
        return true;
    return to != TEX_BOOL && !texi_dtype_is_float(to) && !texi_dtype_is_float(from) &&
           texi_dtype_bits(to) >= texi_dtype_bits(from) && to != TEX_F16 && to != TEX_BF16;
}

/* (tex_v8_i32)((tex_v8_u32)a + (tex_v8_u32)b): wrapping integer arithmetic
 * (the operands are vectors: a BROADCAST is a composite). */
static void emit_int_arith(texi_cp *p, texi_sb *sb, const tex_expr *e)
{
    tex_dtype u = texi_dtype_bits(e->dtype) == 64 ? TEX_U64 : TEX_U32;
    bool is_unsigned = e->dtype == u;
    if (!is_unsigned)
        texi_sb_printf(sb, "(%s)", texi_cp_vector_type(p, e->dtype, e->lanes, false));
    texi_sb_putc(sb, '(');
    for (int i = 0; i < 2; i++) {
        if (!is_unsigned)
            texi_sb_printf(sb, "(%s)", texi_cp_vector_type(p, u, e->lanes, false));
        texi_cp_expr(p, sb, i ? e->u.bin.b : e->u.bin.a, TEXI_CP_P_UNARY, false);
        if (!i)
            texi_sb_printf(sb, " %s ", texi_expr_kind_names[e->kind]);
    }
    texi_sb_putc(sb, ')');
}

/* 32/64-bit integers and f32/f64: what vector comparisons and masks handle. */
static bool mask_type(tex_dtype t)
{
    return wide_int(t) || t == TEX_F32 || t == TEX_F64;
}

/* Whether every lane of e has the same value: no RAMP, vector LOAD or
 * vector variable under it, only BROADCASTs of scalars and scalars. */
static bool lane_invariant(const tex_expr *e)
{
    if (e->lanes == 1 || e->kind == TEXI_EXPR_BROADCAST)
        return true;
    switch (e->kind) {
    TEXI_CASE_BINARY:
        return lane_invariant(e->u.bin.a) && lane_invariant(e->u.bin.b);
    case TEXI_EXPR_NOT:
        return lane_invariant(e->u.un.a);
    default:
        return false;
    }
}

/* select(c, t, f) with c lane_invariant and a result of a type C's vector
 * extensions compute with (32/64-bit integers, f32/f64): `(c ? t : f)`,
 * c printed at lane 0; false otherwise. */
static bool emit_uniform_select(texi_cp *p, texi_sb *sb, const tex_expr *e)
{
    const tex_expr *c = e->u.sel.cond;
    if (!mask_type(e->dtype) || !lane_invariant(c))
        return false;
    texi_sb_putc(sb, '(');
    p->lane = 0;
    texi_cp_expr(p, sb, c, TEXI_CP_P_OR, true);
    p->lane = -1;
    texi_sb_puts(sb, " ? ");
    texi_cp_expr(p, sb, e->u.sel.t, TEXI_CP_P_OR, false);
    texi_sb_puts(sb, " : ");
    texi_cp_expr(p, sb, e->u.sel.f, TEXI_CP_P_COND, false);
    texi_sb_putc(sb, ')');
    return true;
}

/* Whether vector condition c prints as a mask (emit_mask): comparisons of
 * 32/64-bit integer or f32/f64 vectors, combined with &&, || and !. */
static bool maskable(const tex_expr *c)
{
    if (c->kind == TEXI_EXPR_AND || c->kind == TEXI_EXPR_OR)
        return maskable(c->u.bin.a) && maskable(c->u.bin.b);
    if (c->kind == TEXI_EXPR_NOT)
        return maskable(c->u.un.a);
    return texi_expr_is_compare(c) && mask_type(c->u.bin.a->dtype);
}

/* Maskable c as a vector of `bits`-bit integers, -1 where it holds, else 0:
 * each comparison's own mask (C's vector comparison; NaN compares as in
 * scalar C) converted to that width (-1 stays -1), combined with & | ~. */
static void emit_mask(texi_cp *p, texi_sb *sb, const tex_expr *c, int bits)
{
    if (c->kind == TEXI_EXPR_AND || c->kind == TEXI_EXPR_OR) {
        texi_sb_putc(sb, '(');
        emit_mask(p, sb, c->u.bin.a, bits);
        texi_sb_puts(sb, c->kind == TEXI_EXPR_AND ? " & " : " | ");
        emit_mask(p, sb, c->u.bin.b, bits);
        texi_sb_putc(sb, ')');
        return;
    }
    if (c->kind == TEXI_EXPR_NOT) {
        texi_sb_puts(sb, "~");
        emit_mask(p, sb, c->u.un.a, bits);
        return;
    }
    texi_sb_puts(sb, "__builtin_convertvector(");
    texi_cp_expr(p, sb, c->u.bin.a, TEXI_CP_P_REL + 1, false);
    texi_sb_printf(sb, " %s ", texi_expr_kind_names[c->kind]);
    texi_cp_expr(p, sb, c->u.bin.b, TEXI_CP_P_REL + 1, false);
    texi_sb_printf(sb, ", %s)",
                   texi_cp_vector_type(p, bits == 64 ? TEX_I64 : TEX_I32, c->lanes, false));
}

/* select(c, t, f) of a 32/64-bit result over a maskable condition:
 * tex_vselect_vL_T(mask of c, t, f) (argmax's `x == max || x != x` picking
 * i64 indices); false otherwise. */
static bool emit_mask_select(texi_cp *p, texi_sb *sb, const tex_expr *e)
{
    const tex_expr *c = e->u.sel.cond;
    if (!mask_type(e->dtype) || !maskable(c))
        return false;
    use_select(p, e->dtype, e->lanes);
    texi_sb_printf(sb, "tex_vselect_%s(", vector_suffix(p, e->dtype, e->lanes));
    emit_mask(p, sb, c, texi_dtype_bits(e->dtype));
    for (int i = 0; i < 2; i++) {
        texi_sb_puts(sb, ", ");
        texi_cp_expr(p, sb, i ? e->u.sel.f : e->u.sel.t, TEXI_CP_P_COND, false);
    }
    texi_sb_putc(sb, ')');
    return true;
}

/* An operand of a vector operator: a BROADCAST as its scalar. */
static void emit_operand(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec)
{
    texi_cp_expr(p, sb, e->kind == TEXI_EXPR_BROADCAST ? e->u.un.a : e, prec, false);
}

void texi_cp_vector(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec)
{
    bool native_float = e->dtype == TEX_F32 || e->dtype == TEX_F64;
    switch (e->kind) {
    case TEXI_EXPR_VAR:
        texi_sb_puts(sb, texi_cp_lookup(p, e, e->u.var.name));
        return;
    case TEXI_EXPR_LOAD:
        if (e->u.load.mask) {
            if (texi_cp_masked_load(p, sb, e))
                return;
            break;
        }
        if (texi_cp_dense_access(e->u.load.buf->dtype, e->u.load.index)) {
            bool par = TEXI_CP_P_UNARY < prec;
            texi_sb_puts(sb, par ? "(" : "");
            emit_dense_access(p, sb, e->u.load.buf, e->u.load.index, true);
            texi_sb_puts(sb, par ? ")" : "");
            return;
        }
        break;
    case TEXI_EXPR_CALL:
        if (emit_vector_math(p, sb, e))
            return;
        break;
    case TEXI_EXPR_SELECT:
        if (emit_uniform_select(p, sb, e) || emit_mask_select(p, sb, e))
            return;
        break;
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        if (native_float || wide_int(e->dtype)) {
            emit_minmax(p, sb, e);
            return;
        }
        break;
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
    case TEXI_EXPR_MUL:
    case TEXI_EXPR_DIV:
        if (native_float &&
            (e->u.bin.a->kind != TEXI_EXPR_BROADCAST || e->u.bin.b->kind != TEXI_EXPR_BROADCAST)) {
            int own = e->kind == TEXI_EXPR_ADD || e->kind == TEXI_EXPR_SUB ? TEXI_CP_P_ADD
                                                                           : TEXI_CP_P_MUL;
            bool par = own < prec;
            texi_sb_puts(sb, par ? "(" : "");
            emit_operand(p, sb, e->u.bin.a, own);
            texi_sb_printf(sb, " %s ", texi_expr_kind_names[e->kind]);
            emit_operand(p, sb, e->u.bin.b, own + 1);
            texi_sb_puts(sb, par ? ")" : "");
            return;
        }
        if (wide_int(e->dtype) && e->kind != TEXI_EXPR_DIV) {
            emit_int_arith(p, sb, e);
            return;
        }
        break;
    case TEXI_EXPR_CAST:
        if (exact_convert(e->u.un.a->dtype, e->dtype)) {
            texi_sb_puts(sb, "__builtin_convertvector(");
            texi_cp_expr(p, sb, e->u.un.a, TEXI_CP_P_COND, false);
            texi_sb_printf(sb, ", %s)", texi_cp_vector_type(p, e->dtype, e->lanes, false));
            return;
        }
        break;
    default:
        break;
    }
    emit_composite(p, sb, e);
}

void texi_cp_vector_store(texi_cp *p, texi_sb *sb, const tex_stmt *s)
{
    const texi_buffer *b = s->u.store.buf;
    tex_expr *index = s->u.store.index;
    if (s->u.store.mask) {
        texi_cp_masked_store(p, sb, s);
        return;
    }
    if (texi_cp_dense_access(b->dtype, index)) {
        texi_cp_indent(p, sb);
        emit_dense_access(p, sb, b, index, false);
        texi_sb_puts(sb, " = ");
        texi_cp_store_value(p, sb, s->u.store.value, b->dtype);
        texi_sb_puts(sb, ";\n");
        return;
    }
    for (int k = 0; k < index->lanes; k++) {
        texi_cp_indent(p, sb);
        p->lane = k;
        texi_cp_element(p, sb, b, index);
        texi_sb_puts(sb, " = ");
        texi_cp_store_value(p, sb, s->u.store.value, b->dtype);
        texi_sb_puts(sb, ";\n");
    }
    p->lane = -1;
}

void texi_cp_vreduce(texi_cp *p, texi_sb *sb, const tex_expr *e)
{
    const tex_expr *a = e->u.vred.a;
    if (!p->target->vectors) {
        texi_cp_fail(p, TEX_EUNAVAILABLE,
                     "a horizontal reduction (vreduce_%s of %d lanes) has no form on this target: "
                     "vector statements come from the CPU tail's simd pass only",
                     texi_vreduce_names[e->u.vred.op], a->lanes);
        return;
    }
    int k = texi_cp_lanes_log2(a->lanes);
    if (k > 0)
        p->vector_reduce[e->u.vred.op][e->dtype] |= 1u << k;
    bool minmax = e->u.vred.op == TEXI_REDUCE_MIN || e->u.vred.op == TEXI_REDUCE_MAX;
    if (k > 0 && minmax && (e->dtype == TEX_F32 || e->dtype == TEX_F64))
        use_minmax(p, e->dtype, a->lanes); /* the tree's steps (cvtypes.c) */
    texi_sb_printf(sb, "tex_vreduce_%s_%s(", texi_vreduce_names[e->u.vred.op],
                   vector_suffix(p, e->dtype, a->lanes));
    int saved = p->lane;
    p->lane = -1; /* the operand is a whole vector */
    texi_cp_expr(p, sb, a, TEXI_CP_P_TOP, false);
    p->lane = saved;
    texi_sb_putc(sb, ')');
}
