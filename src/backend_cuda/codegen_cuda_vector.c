/*
 * Vectorized accesses of the CUDA emitter: a vectorized loop of 2 or 4
 * lanes whose body is one STORE of f32 or i32 to a global (parameter or
 * workspace) or shared buffer, at an index contiguous in the loop variable
 * (index(v + k) - index(v) == k), whose first index is provably a multiple
 * of the lanes (texi_prove over the enclosing loops' ranges), becomes one
 * float2/float4 (int2/int4) store of the lanes computed one by one; each
 * LOAD of the value from such a buffer that meets the same conditions
 * becomes one vector load. While the lanes are printed, the loop variable
 * prints as (base + lane) and each vector load as its component
 * (texi_cu_expr_lane, the printer's expr hook).
 * Alignment assumption: tensor arguments and workspace buffers start at
 * least 16-byte aligned (the CUDA allocators give 256 bytes; the runtime
 * must not pass a byte_offset that breaks this), and shared arrays are
 * declared __align__(16).
 */
#include "backend_cuda/codegen_cuda.h"

/* "float4" ... for `lanes` elements of dtype t, or NULL when not vectorizable. */
static const char *vector_type(tex_dtype t, int64_t lanes)
{
    if (lanes != 2 && lanes != 4)
        return NULL;
    if (t == TEX_F32)
        return lanes == 2 ? "float2" : "float4";
    if (t == TEX_I32)
        return lanes == 2 ? "int2" : "int4";
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
 * generated index code assumes anyway. */
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

/* Whether buffer b at index idx, over loop s's variable, is a contiguous,
 * provably aligned run of `lanes` elements (file comment). */
static bool vector_access(texi_cu *g, const tex_stmt *s, int64_t lanes, const texi_buffer *b,
                          tex_expr *idx)
{
    if (!vector_type(b->dtype, lanes) || !aligned_storage(g, b))
        return false;
    tex_expr *v = s->u.loop.var, *mn = s->u.loop.min;
    idx = texi_expr_mutate(idx, widen_cast, g->p.ctx);
    tex_expr *base = idx ? texi_substitute(idx, 1, &v, &mn) : NULL;
    if (!base)
        return false;
    for (int64_t k = 1; k < lanes; k++) {
        tex_expr *at = texi_binary(TEXI_EXPR_ADD, mn, texi_int_imm(g->p.ctx, mn->dtype, k));
        tex_expr *ik = at ? texi_substitute(idx, 1, &v, &at) : NULL;
        tex_expr *d = ik ? texi_binary(TEXI_EXPR_SUB, ik, base) : NULL;
        tex_expr *ds = d ? texi_simplify(d, g->p.n_ranges, g->p.ranges) : NULL;
        int64_t dv;
        if (!ds || !texi_expr_is_int_const(ds, &dv) || dv != k)
            return false;
    }
    tex_expr *mod =
        texi_binary(TEXI_EXPR_FLOORMOD, base, texi_int_imm(g->p.ctx, base->dtype, lanes));
    tex_expr *eq =
        mod ? texi_binary(TEXI_EXPR_EQ, mod, texi_int_imm(g->p.ctx, base->dtype, 0)) : NULL;
    return eq && texi_prove(eq, g->p.n_ranges, g->p.ranges);
}

typedef struct {
    texi_cu *g;
    const tex_stmt *loop;
    int64_t lanes;
    int n;
    tex_expr *loads[TEXI_CU_MAX_VLOADS];
} vload_scan;

/* Collects the LOADs of a vectorized value that can be vector loads. */
static bool scan_load(tex_expr *e, void *ud)
{
    vload_scan *vs = ud;
    if (e->kind != TEXI_EXPR_LOAD)
        return true;
    for (int i = 0; i < vs->n; i++)
        if (vs->loads[i] == e)
            return false;
    if (vs->n < TEXI_CU_MAX_VLOADS &&
        vector_access(vs->g, vs->loop, vs->lanes, e->u.load.buf, e->u.load.index))
        vs->loads[vs->n++] = e;
    return false; /* an index holding a load stays scalar */
}

static const char *const lane_names = "xyzw";

/* Declares the vector loads of vs (loop variable base already bound). */
static void emit_vector_loads(texi_cu *g, texi_sb *sb, const vload_scan *vs)
{
    g->vec_lane = 0;
    for (int i = 0; i < vs->n; i++) {
        const texi_buffer *b = vs->loads[i]->u.load.buf;
        const char *vt = vector_type(b->dtype, vs->lanes);
        const char *name = texi_cp_bind(&g->p, vs->loads[i], "vl");
        texi_cp_indent(&g->p, sb);
        texi_sb_printf(sb, "const %s %s = *reinterpret_cast<const %s *>(%s + ", vt, name, vt,
                       texi_cp_lookup(&g->p, texi_buffer_key(b), b->name));
        texi_cp_expr(&g->p, sb, vs->loads[i]->u.load.index, TEXI_CP_P_ADD + 1, true);
        texi_sb_puts(sb, ");\n");
        g->vload[i] = vs->loads[i];
        g->vload_name[i] = name;
    }
    g->n_vloads = vs->n;
}

bool texi_cu_emit_vector_loop(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    const tex_stmt *st = s->u.loop.body;
    int64_t lanes = 0;
    if (g->vec_var || !texi_expr_is_int_const(s->u.loop.extent, &lanes) ||
        st->kind != TEXI_STMT_STORE || st->u.store.buf->dtype != st->u.store.value->dtype ||
        !vector_access(g, s, lanes, st->u.store.buf, st->u.store.index))
        return false;
    const texi_buffer *b = st->u.store.buf;
    const char *vt = vector_type(b->dtype, lanes);
    vload_scan vs = {.g = g, .loop = s, .lanes = lanes};
    texi_expr_visit(st->u.store.value, scan_load, &vs);
    texi_cp_line(&g->p, sb, "{");
    g->p.indent++;
    const char *v = texi_cp_bind(&g->p, s->u.loop.var, s->u.loop.var->u.var.name);
    texi_cp_indent(&g->p, sb);
    texi_sb_printf(sb, "const %s %s = ", texi_cu_value_type(s->u.loop.var->dtype), v);
    texi_cp_expr(&g->p, sb, s->u.loop.min, TEXI_CP_P_TOP, true);
    texi_sb_puts(sb, ";\n");
    g->vec_var = s->u.loop.var;
    emit_vector_loads(g, sb, &vs);
    const char *tmp = texi_cp_bind(&g->p, st, "vs");
    texi_cp_line(&g->p, sb, "%s %s;", vt, tmp);
    for (int k = 0; k < lanes; k++) {
        g->vec_lane = k;
        texi_cp_indent(&g->p, sb);
        texi_sb_printf(sb, "%s.%c = ", tmp, lane_names[k]);
        texi_cp_store_value(&g->p, sb, st->u.store.value, b->dtype);
        texi_sb_puts(sb, ";\n");
    }
    g->vec_lane = 0;
    texi_cp_indent(&g->p, sb);
    texi_sb_printf(sb, "*reinterpret_cast<%s *>(%s + ", vt,
                   texi_cp_lookup(&g->p, texi_buffer_key(b), b->name));
    texi_cp_expr(&g->p, sb, st->u.store.index, TEXI_CP_P_ADD + 1, true);
    texi_sb_printf(sb, ") = %s;\n", tmp);
    g->vec_var = NULL;
    g->n_vloads = 0;
    g->p.indent--;
    texi_cp_line(&g->p, sb, "}");
    return true;
}

bool texi_cu_expr_lane(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec)
{
    texi_cu *g = (texi_cu *)p;
    if (!g->vec_var)
        return false;
    if (e == g->vec_var) {
        texi_sb_printf(sb, "%s%s + %d%s", prec > TEXI_CP_P_ADD ? "(" : "",
                       texi_cp_lookup(p, e, e->u.var.name), g->vec_lane,
                       prec > TEXI_CP_P_ADD ? ")" : "");
        return true;
    }
    for (int i = 0; i < g->n_vloads; i++)
        if (g->vload[i] == e) {
            texi_sb_printf(sb, "%s.%c", g->vload_name[i], lane_names[g->vec_lane & 3]);
            return true;
        }
    return false;
}
