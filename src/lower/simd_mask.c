/*
 * Predicated vector chunks (CPU tail; used by simd.c for the rest of a
 * constant extent and by simd_tail.c for chunks a guard cuts): the lanes
 * [base, base + L) of a vectorized loop of which only the first `count`
 * run, as the loop's straight-line body over vectors whose every vector
 * load and store carries the mask ramp(0, 1, L) < broadcast(count, L).
 * A lane the mask turns off neither reads nor writes memory (a load gives
 * 0 there), so the chunk may reach past the end of a buffer; the C printer
 * emits AVX-512 / AVX2 masked moves (cvmask.c), the interpreter skips the
 * lanes.
 *
 * Lanes turned off still compute, on zeros and on what scalar loads read:
 * texi_simd_maskable refuses bodies where that could trap (an integer
 * divided by a loaded value; by a size, unless the division reads no lane
 * and some lane is on, so that the original computes it too) or read
 * where the original did not (a load in
 * a select arm or behind && / ||, which the original skips and a vector
 * evaluates). Element types without masked moves (8- and 16-bit, halves,
 * bool) are refused too: their lanes one by one are as fast.
 */
#include "lower/lower.h"
#include "util/host.h"

/* Elements AVX2 and AVX-512 move under a mask: 32 and 64 bits. */
static bool masked_dtype(tex_dtype t)
{
    return t == TEX_F32 || t == TEX_F64 || t == TEX_I32 || t == TEX_U32 || t == TEX_I64 ||
           t == TEX_U64;
}

static bool probe_load(tex_expr *e, void *ud)
{
    bool *found = ud;
    *found |= e->kind == TEXI_EXPR_LOAD;
    return !*found;
}

static bool has_load(tex_expr *e)
{
    bool found = false;
    texi_expr_visit(e, probe_load, &found);
    return found;
}

/* What check_node looks at: the loop variable (or NULL) and whether some
 * lane of the chunk is on (texi_simd_maskable); it clears ok. */
typedef struct {
    const tex_expr *var;
    bool some_lane_on;
    bool ok;
} mask_check;

/* texi_expr_visit callback: clears c->ok at a node a predicated chunk
 * cannot hold (texi_simd_maskable). */
static bool check_node(tex_expr *e, void *ud)
{
    mask_check *c = ud;
    bool *ok = &c->ok;
    int64_t k;
    switch (e->kind) {
    case TEXI_EXPR_LOAD:
        *ok &= masked_dtype(e->u.load.buf->dtype);
        break;
    case TEXI_EXPR_SELECT:
        *ok &= !has_load(e->u.sel.t) && !has_load(e->u.sel.f);
        break;
    case TEXI_EXPR_AND:
    case TEXI_EXPR_OR:
        *ok &= !has_load(e->u.bin.b);
        break;
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
    case TEXI_EXPR_DIV:
        if (!texi_dtype_is_float(e->dtype))
            *ok &= (texi_expr_is_int_const(e->u.bin.b, &k) && k != 0) ||
                   (c->some_lane_on && c->var && !texi_expr_uses_var(e, c->var));
        break;
    default:
        break;
    }
    return *ok;
}

/* Whether straight-line s may be predicated (texi_simd_maskable). */
static bool maskable_stmt(const tex_expr *var, const tex_stmt *s, bool some_lane_on)
{
    mask_check c = {var, some_lane_on, true};
    switch (s->kind) {
    case TEXI_STMT_STORE:
        c.ok = masked_dtype(s->u.store.buf->dtype) &&
               (!var || texi_expr_uses_var(s->u.store.index, var));
        break;
    case TEXI_STMT_LET:
        c.ok = maskable_stmt(var, s->u.let.body, some_lane_on);
        break;
    case TEXI_STMT_SEQ:
        for (int i = 0; c.ok && i < s->u.seq.n; i++)
            c.ok = maskable_stmt(var, s->u.seq.items[i], some_lane_on);
        return c.ok;
    default:
        return false;
    }
    if (c.ok)
        texi_stmt_visit_exprs(s, check_node, &c);
    return c.ok;
}

bool texi_simd_host_masks(void)
{
    return texi_host_vector_bytes() >= 32;
}

bool texi_simd_maskable(const tex_expr *var, const tex_stmt *body, bool some_lane_on)
{
    return maskable_stmt(var, body, some_lane_on);
}

tex_expr *texi_simd_prefix_mask(tex_ctx *ctx, int lanes, tex_expr *count)
{
    tex_expr *zero = texi_int_imm(ctx, count->dtype, 0), *one = texi_int_imm(ctx, count->dtype, 1);
    tex_expr *ramp = zero && one ? texi_ramp_new(zero, one, lanes) : NULL;
    tex_expr *bound = ramp ? texi_broadcast_new(count, lanes) : NULL;
    return bound ? texi_binary(TEXI_EXPR_LT, ramp, bound) : NULL;
}

tex_stmt *texi_simd_masked_chunk(tex_ctx *ctx, const tex_expr *var, const tex_stmt *body,
                                 tex_expr *base, int lanes, tex_expr *count)
{
    tex_expr *mask = texi_simd_prefix_mask(ctx, lanes, count);
    return mask ? texi_simd_widen(ctx, var, body, base, lanes, mask, NULL, NULL) : NULL;
}
