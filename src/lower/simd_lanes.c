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
 * gather's per-lane indices, both right at any lane count. Nor does what
 * does not vary with the loop variable (n > 0, f32(n), a row's value):
 * the vector statements compute it once, as a scalar, and broadcast it.
 *
 * An integer that is a value (a loop variable compared or converted to a
 * float, an i64 tensor's elements) counts at its width, so such a loop
 * keeps that width's lanes. Floats count wherever they vary.
 *
 * Under data_only (CUDA, which computes every lane as a scalar) only
 * loaded and stored elements count, wherever they are.
 */
#include "lower/lower.h"

enum { MAX_LETS = 64 };

/* LET variables: a set that saturates (holds every variable once full). */
typedef struct {
    int n;
    bool full;
    const tex_expr *vars[MAX_LETS];
} let_set;

/* The walk: the loop variable, the widest lane so far, the LET variables
 * that vary with the loop variable and those read as values. */
typedef struct {
    const tex_expr *var;
    int bytes;
    bool data_only;
    let_set varying, read_as_value;
} lane_walk;

static void set_add(let_set *set, const tex_expr *var)
{
    for (int i = 0; i < set->n; i++)
        if (set->vars[i] == var)
            return;
    if (set->n == MAX_LETS)
        set->full = true;
    else
        set->vars[set->n++] = var;
}

static bool set_has(const let_set *set, const tex_expr *var)
{
    for (int i = 0; i < set->n; i++)
        if (set->vars[i] == var)
            return true;
    return set->full;
}

/* texi_expr_visit probe: sets *found at the loop variable or a varying LET's. */
typedef struct {
    const lane_walk *w;
    bool found;
} vary_probe;

static bool probe_varying(tex_expr *e, void *ud)
{
    vary_probe *p = ud;
    if (e->kind == TEXI_EXPR_VAR && (e == p->w->var || set_has(&p->w->varying, e)))
        p->found = true;
    return !p->found;
}

/* Whether e differs between the loop's iterations (a vector once widened). */
static bool varies(const lane_walk *w, tex_expr *e)
{
    vary_probe p = {w, false};
    texi_expr_visit(e, probe_varying, &p);
    return p.found;
}

/* texi_stmt_visit callback: LETs whose value varies (outer LETs first). */
static bool find_varying(const tex_stmt *s, void *ud)
{
    lane_walk *w = ud;
    if (s->kind == TEXI_STMT_LET && varies(w, s->u.let.value))
        set_add(&w->varying, s->u.let.var);
    return true;
}

static void count(lane_walk *w, tex_dtype t)
{
    int b = texi_dtype_bits(texi_dtype_lane(t)) / 8;
    if (b > w->bytes)
        w->bytes = b;
}

/* A node of an address: loads and (unless data_only) floats count,
 * integer arithmetic not; an invariant part not at all (unless data_only). */
static bool address_node(tex_expr *e, void *ud)
{
    lane_walk *w = ud;
    if (!w->data_only && !varies(w, e))
        return false;
    if (e->kind == TEXI_EXPR_LOAD || (!w->data_only && texi_dtype_is_float(e->dtype)))
        count(w, e->dtype);
    return true;
}

/* A node of a value: it counts (only loads under data_only) unless it is
 * invariant; a load's index is an address, a variable read here a value. */
static bool value_node(tex_expr *e, void *ud)
{
    lane_walk *w = ud;
    if (!w->data_only && !varies(w, e))
        return false;
    if (e->kind == TEXI_EXPR_VAR)
        set_add(&w->read_as_value, e);
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
        texi_expr_visit(s->u.let.value,
                        set_has(&w->read_as_value, s->u.let.var) ? value_node : address_node, w);
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
    case TEXI_STMT_KIND_COUNT: { /* expressions walked as values, then the body */
        texi_stmt_visit_exprs(s, value_node, w);
        const tex_stmt *body = texi_stmt_body(s);
        if (body)
            walk_stmt(w, body);
        return;
    }
    }
}

int texi_simd_lane_bytes(const tex_stmt *loop, bool data_only)
{
    lane_walk w = {.var = loop->u.loop.var, .bytes = 1, .data_only = data_only};
    texi_stmt_visit(loop->u.loop.body, find_varying, &w);
    walk_stmt(&w, loop->u.loop.body);
    return w.bytes;
}
