/*
 * The lane type that sizes a vectorized loop (pass simd, docs/passes.md):
 * the widest element, in bytes, of the values its body computes.
 *
 * Counted: every loaded element, every stored element, and every node of
 * a value that is computed lane by lane (stored values, LET values read by
 * such values, their operands down to the loads). Not counted: integer
 * (and bool) arithmetic that only feeds addresses: load and store indices,
 * guard conditions (simd_tail tests them at one lane, as scalars), and
 * LETs read only there. Such index arithmetic is i64 wherever a size is
 * symbolic; counting it would give an f32 loop half the lanes of the
 * native width. Its vectors are RAMPs folded into dense accesses, or a
 * gather's per-lane indices, both right at any lane count.
 *
 * An integer that is a value (a loop variable compared or converted to a
 * float, an i64 tensor's elements) counts at its width, so such a loop
 * keeps that width's lanes. Floats count wherever they are.
 *
 * Under data_only (CUDA, which computes every lane as a scalar) only
 * loaded and stored elements count.
 */
#include "lower/lower.h"

enum { MAX_MARKED = 64 };

/* The walk: the widest lane so far, and the LET variables read as values. */
typedef struct {
    int bytes;
    bool data_only;
    int n_marked;
    bool overflow; /* more value LETs than marked holds: every LET counts */
    const tex_expr *marked[MAX_MARKED];
} lane_walk;

static void count(lane_walk *w, tex_dtype t)
{
    int b = texi_dtype_bits(texi_dtype_lane(t)) / 8;
    if (b > w->bytes)
        w->bytes = b;
}

static void mark(lane_walk *w, const tex_expr *var)
{
    for (int i = 0; i < w->n_marked; i++)
        if (w->marked[i] == var)
            return;
    if (w->n_marked == MAX_MARKED)
        w->overflow = true;
    else
        w->marked[w->n_marked++] = var;
}

static bool is_marked(const lane_walk *w, const tex_expr *var)
{
    for (int i = 0; i < w->n_marked; i++)
        if (w->marked[i] == var)
            return true;
    return w->overflow;
}

/* A node of an address: loads and (unless data_only) floats count,
 * integer arithmetic not. */
static bool address_node(tex_expr *e, void *ud)
{
    lane_walk *w = ud;
    if (e->kind == TEXI_EXPR_LOAD || (!w->data_only && texi_dtype_is_float(e->dtype)))
        count(w, e->dtype);
    return true;
}

/* A node of a value: it counts (only loads under data_only); a load's
 * index is an address, a variable read here a value. */
static bool value_node(tex_expr *e, void *ud)
{
    lane_walk *w = ud;
    if (e->kind == TEXI_EXPR_VAR)
        mark(w, e);
    if (e->kind != TEXI_EXPR_LOAD) {
        if (!w->data_only)
            count(w, e->dtype);
        return true;
    }
    count(w, e->dtype);
    texi_expr_visit(e->u.load.index, address_node, w);
    return false;
}

/* Statement s; a LET's body before its value, so the value is walked as
 * what the body reads its variable as. */
static void walk_stmt(lane_walk *w, const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_STORE:
        count(w, s->u.store.buf->dtype);
        texi_expr_visit(s->u.store.index, address_node, w);
        texi_expr_visit(s->u.store.value, value_node, w);
        return;
    case TEXI_STMT_LET:
        walk_stmt(w, s->u.let.body);
        texi_expr_visit(s->u.let.value, is_marked(w, s->u.let.var) ? value_node : address_node, w);
        return;
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            walk_stmt(w, s->u.seq.items[i]);
        return;
    case TEXI_STMT_IF:
        texi_expr_visit(s->u.ifs.cond, address_node, w);
        walk_stmt(w, s->u.ifs.then_s);
        if (s->u.ifs.else_s)
            walk_stmt(w, s->u.ifs.else_s);
        return;
    case TEXI_STMT_FOR:
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_ATTR:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_ALLOCATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_KIND_COUNT: { /* not vectorized as such: everything counts */
        texi_stmt_visit_exprs(s, value_node, w);
        const tex_stmt *body = texi_stmt_body(s);
        if (body)
            walk_stmt(w, body);
        return;
    }
    }
}

int texi_simd_lane_bytes(const tex_stmt *body, bool data_only)
{
    lane_walk w = {.bytes = 1, .data_only = data_only};
    walk_stmt(&w, body);
    return w.bytes;
}
