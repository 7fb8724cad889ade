/*
 * Vector statements of the CUDA emitter: pass simd's output (simd_gpu.c,
 * docs/passes.md), a STORE whose index is a vector and a LET binding a
 * vector. CUDA's vector types have no operators, so every vector value is
 * printed lane by lane by the C-family printer's lane mode (p->lane = k:
 * cvector.c prints a RAMP's lane k, a BROADCAST's scalar, a vector
 * variable's element k; every other node its scalar form over its
 * operands' lanes). Only memory accesses are vectors:
 *   - a dense access (RAMP index of stride 1) of L elements with a CUDA
 *     vector type of L lanes (vector_type: f32/i32/u32 of 2 or 4 lanes,
 *     f64/i64/u64 of 2) to 16-byte aligned storage, whose first index is
 *     provably a multiple of L (texi_prove over the enclosing ranges), is
 *     one float4 / int2 ... access;
 *   - the vector loads of a statement's value are declared first as
 *     locals (`const float4 vl = *reinterpret_cast<const float4 *>(X + i);`)
 *     and their lanes print as components (vl.x, texi_cu_expr_lane);
 *   - a vector store is `float4 vs; vs.x = lane 0; ...; *reinterpret_cast
 *     <float4 *>(Y + i) = vs;`, or one scalar store per lane when it is not
 *     such an access;
 *   - a vector LET is a const array of its lanes (`const float v[4] =
 *     {...};`), which the lane mode reads as v[k].
 * Alignment assumption: tensor arguments and workspace buffers start at
 * least 16-byte aligned (the CUDA allocators give 256 bytes; the runtime
 * must not pass a byte_offset that breaks this), and shared arrays are
 * declared __align__(16). Local (per-thread) arrays are never accessed as
 * vectors: they stay scalar, in registers.
 */
#include "backend_cuda/codegen_cuda.h"

/* "float4" ... for `lanes` elements of dtype t, or NULL when CUDA has no
 * vector type of at most 16 bytes for them. */
static const char *vector_type(tex_dtype t, int lanes)
{
    static const struct {
        tex_dtype t;
        const char *name[2]; /* 2 lanes, 4 lanes */
    } types[] = {
        {TEX_F32, {"float2", "float4"}}, {TEX_I32, {"int2", "int4"}},
        {TEX_U32, {"uint2", "uint4"}},   {TEX_F64, {"double2", NULL}},
        {TEX_I64, {"longlong2", NULL}},  {TEX_U64, {"ulonglong2", NULL}},
    };
    if (lanes != 2 && lanes != 4)
        return NULL;
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (types[i].t == t)
            return types[i].name[lanes == 4];
    return NULL;
}

/* Whether b is global memory the runtime allocated (a tensor parameter or
 * workspace) or a shared array: storage known to be 16-byte aligned. */
static bool aligned_storage(const texi_cu *g, const texi_buffer *b)
{
    if (b->scope == TEXI_SCOPE_SHARED)
        return true;
    const void *key = texi_buffer_key(b);
    for (int i = 0; i < g->p.f->n_params; i++)
        if (g->p.f->params[i].kind == TEX_ARG_TENSOR &&
            texi_buffer_key(g->p.f->params[i].buf) == key)
            return true;
    for (int i = 0; g->m && i < g->m->n_workspace; i++)
        if (texi_buffer_key(g->m->workspace[i]) == key)
            return true;
    return false;
}

static tex_expr *widen_cast(tex_expr *e, void *ud);

/* e (a signed integer expression) rebuilt in i64: constants widened, + - *
 * min max floordiv floormod distributed, anything else cast as a whole.
 * Equal to e's value when the narrow arithmetic does not overflow, which
 * generated index code assumes anyway; it lets texi_prove see through the
 * casts of i32 index arithmetic. */
static tex_expr *widen(tex_ctx *ctx, tex_expr *e)
{
    switch (e->kind) {
    case TEXI_EXPR_INT:
        return texi_int_imm(ctx, TEX_I64, e->u.i);
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
    case TEXI_EXPR_MUL:
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD: {
        tex_expr *a = widen(ctx, e->u.bin.a), *b = widen(ctx, e->u.bin.b);
        return a && b ? texi_binary(e->kind, a, b) : NULL;
    }
    default:
        return texi_unary(TEXI_EXPR_CAST, TEX_I64, texi_expr_mutate(e, widen_cast, ctx));
    }
}

/* Rewrite callback: i64 casts of narrower signed integers pushed inwards. */
static tex_expr *widen_cast(tex_expr *e, void *ud)
{
    if (e->kind != TEXI_EXPR_CAST || e->dtype != TEX_I64)
        return NULL;
    tex_dtype from = e->u.un.a->dtype;
    if (from != TEX_I32 && from != TEX_I16 && from != TEX_I8)
        return NULL;
    return widen(ud, e->u.un.a);
}

/* The CUDA vector type of an access to b at index (file comment), or NULL
 * when it is printed lane by lane. */
static const char *vector_access(texi_cu *g, const texi_buffer *b, const tex_expr *index)
{
    int64_t stride;
    const char *vt = vector_type(b->dtype, index->lanes);
    if (!vt || index->kind != TEXI_EXPR_RAMP ||
        !texi_expr_is_int_const(index->u.ramp.stride, &stride) || stride != 1 ||
        !aligned_storage(g, b))
        return NULL;
    tex_ctx *ctx = g->p.ctx;
    tex_expr *base = texi_expr_mutate(index->u.ramp.base, widen_cast, ctx);
    tex_expr *lanes = base ? texi_int_imm(ctx, base->dtype, index->lanes) : NULL;
    tex_expr *mod = lanes ? texi_binary(TEXI_EXPR_FLOORMOD, base, lanes) : NULL;
    tex_expr *zero = mod ? texi_int_imm(ctx, base->dtype, 0) : NULL;
    tex_expr *eq = zero ? texi_binary(TEXI_EXPR_EQ, mod, zero) : NULL;
    return eq && texi_prove(eq, g->p.n_ranges, g->p.ranges) ? vt : NULL;
}

/* `*reinterpret_cast<const float4 *>(X + base)` (const for loads). */
static void emit_access(texi_cu *g, texi_sb *sb, const char *vt, const texi_buffer *b,
                        const tex_expr *index, bool load)
{
    texi_sb_printf(sb, "*reinterpret_cast<%s%s *>(%s + ", load ? "const " : "", vt,
                   texi_cp_lookup(&g->p, texi_buffer_key(b), b->name));
    texi_cp_expr(&g->p, sb, index->u.ramp.base, TEXI_CP_P_ADD + 1, true);
    texi_sb_putc(sb, ')');
}

/* Collects the vector loads of a value (an index holding a load stays
 * per lane) into g->vload. */
static bool scan_load(tex_expr *e, void *ud)
{
    texi_cu *g = ud;
    if (e->kind != TEXI_EXPR_LOAD || e->lanes == 1)
        return e->kind != TEXI_EXPR_LOAD;
    for (int i = 0; i < g->n_vloads; i++)
        if (g->vload[i] == e)
            return false;
    if (g->n_vloads < TEXI_CU_MAX_VLOADS && !e->u.load.mask && // predicated: lane by lane
        vector_access(g, e->u.load.buf, e->u.load.index))
        g->vload[g->n_vloads++] = e;
    return false;
}

/* Declares the vector loads of value as locals (g->vload, g->vload_name). */
static void emit_vector_loads(texi_cu *g, texi_sb *sb, tex_expr *value)
{
    g->n_vloads = 0;
    texi_expr_visit(value, scan_load, g);
    for (int i = 0; i < g->n_vloads; i++) {
        const tex_expr *ld = g->vload[i];
        const char *vt = vector_access(g, ld->u.load.buf, ld->u.load.index);
        g->vload_name[i] = texi_cp_bind(&g->p, ld, "vl");
        texi_cp_indent(&g->p, sb);
        texi_sb_printf(sb, "const %s %s = ", vt, g->vload_name[i]);
        emit_access(g, sb, vt, ld->u.load.buf, ld->u.load.index, true);
        texi_sb_puts(sb, ";\n");
    }
}

static const char lane_names[] = "xyzw";

/* A STORE of a vector (file comment), in its own block. */
static void emit_vector_store(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    texi_cp *p = &g->p;
    const texi_buffer *b = s->u.store.buf;
    const tex_expr *index = s->u.store.index;
    const char *vt = vector_access(g, b, index);
    texi_cp_line(p, sb, "{");
    p->indent++;
    emit_vector_loads(g, sb, s->u.store.value);
    const char *tmp = vt ? texi_cp_bind(p, s, "vs") : NULL;
    if (vt)
        texi_cp_line(p, sb, "%s %s;", vt, tmp);
    for (p->lane = 0; p->lane < index->lanes; p->lane++) {
        texi_cp_indent(p, sb);
        if (vt) {
            texi_sb_printf(sb, "%s.%c = ", tmp, lane_names[p->lane]);
        } else {
            texi_sb_printf(sb, "%s[", texi_cp_lookup(p, texi_buffer_key(b), b->name));
            texi_cp_expr(p, sb, index, TEXI_CP_P_TOP, true);
            texi_sb_puts(sb, "] = ");
        }
        texi_cp_store_value(p, sb, s->u.store.value, b->dtype);
        texi_sb_puts(sb, ";\n");
    }
    p->lane = -1;
    g->n_vloads = 0;
    if (vt) {
        texi_cp_indent(p, sb);
        emit_access(g, sb, vt, b, index, false);
        texi_sb_printf(sb, " = %s;\n", tmp);
    }
    p->indent--;
    texi_cp_line(p, sb, "}");
}

/* A LET of a vector: `const T v[L] = {lane 0, ...};` (file comment). */
static void emit_vector_let(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    texi_cp *p = &g->p;
    tex_expr *var = s->u.let.var;
    texi_cp_line(p, sb, "{");
    p->indent++;
    emit_vector_loads(g, sb, s->u.let.value);
    texi_sb value;
    texi_sb_init(&value); /* the lanes first: they may use an outer binding of var */
    for (p->lane = 0; p->lane < var->lanes; p->lane++) {
        texi_sb_puts(&value, p->lane ? ", " : "");
        texi_cp_expr(p, &value, s->u.let.value, TEXI_CP_P_COND, !texi_dtype_is_float(var->dtype));
    }
    p->lane = -1;
    g->n_vloads = 0;
    texi_cp_line(p, sb, "const %s %s[%d] = {%s};", texi_cu_value_type(var->dtype),
                 texi_cp_bind(p, var, var->u.var.name), var->lanes, value.buf ? value.buf : "");
    if (value.oom)
        texi_cp_fail(p, TEX_ENOMEM, "out of memory (source text)");
    texi_sb_fini(&value);
    texi_cp_stmt(p, sb, s->u.let.body);
    p->indent--;
    texi_cp_line(p, sb, "}");
}

bool texi_cu_emit_vector(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    if (s->kind == TEXI_STMT_STORE && s->u.store.mask)
        texi_cp_fail(&g->p, TEX_EUNAVAILABLE,
                     "a predicated vector store has no CUDA form: predicated chunks are the CPU "
                     "tail's only");
    else if (s->kind == TEXI_STMT_STORE && s->u.store.index->lanes > 1)
        emit_vector_store(g, sb, s);
    else if (s->kind == TEXI_STMT_LET && s->u.let.var->lanes > 1)
        emit_vector_let(g, sb, s);
    else
        return false;
    return true;
}

bool texi_cu_expr_lane(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec)
{
    texi_cu *g = (texi_cu *)p;
    (void)prec;
    for (int i = 0; p->lane >= 0 && i < g->n_vloads; i++)
        if (g->vload[i] == e) {
            texi_sb_printf(sb, "%s.%c", g->vload_name[i], lane_names[p->lane & 3]);
            return true;
        }
    return false;
}
