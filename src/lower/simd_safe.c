/*
 * Whether the iterations of a vectorized loop are independent, so that it
 * may run as vectors (the simd pass) or carry `#pragma omp simd`: every
 * store of the body writes one index per buffer, linear in the loop
 * variable with a nonzero coefficient, and every load of a stored buffer
 * reads that same index. Otherwise a loop-carried dependence is possible.
 */
#include "lower/lower.h"

/* The stores of a vector loop's body: one index per buffer. */
typedef struct {
    const tex_expr *v;
    const texi_buffer *bufs[32];
    tex_expr *idx[32];
    int n;
    bool unsafe;
} simd_check;

static int find_store(const simd_check *sc, const texi_buffer *b)
{
    for (int i = 0; i < sc->n; i++)
        if (texi_buffer_key(sc->bufs[i]) == texi_buffer_key(b))
            return i;
    return -1;
}

static void collect_stores(simd_check *sc, const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_STORE: {
        int64_t c;
        int k = find_store(sc, s->u.store.buf);
        if (!texi_linear_in(s->u.store.index, sc->v, &c) || c == 0)
            sc->unsafe = true;
        else if (k >= 0 && !texi_expr_equal(sc->idx[k], s->u.store.index))
            sc->unsafe = true;
        else if (k < 0 && sc->n < 32) {
            sc->bufs[sc->n] = s->u.store.buf;
            sc->idx[sc->n++] = s->u.store.index;
        } else if (k < 0)
            sc->unsafe = true;
        return;
    }
    case TEXI_STMT_IF:
        collect_stores(sc, s->u.ifs.then_s);
        if (s->u.ifs.else_s)
            collect_stores(sc, s->u.ifs.else_s);
        return;
    case TEXI_STMT_LET:
        collect_stores(sc, s->u.let.body);
        return;
    case TEXI_STMT_ATTR:
        collect_stores(sc, s->u.attr.body);
        return;
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            collect_stores(sc, s->u.seq.items[i]);
        return;
    case TEXI_STMT_EVALUATE:
        return;
    default:
        sc->unsafe = true;
        return; /* loops, allocations, barriers */
    }
}

static bool probe_load(tex_expr *e, void *ud)
{
    simd_check *sc = ud;
    if (e->kind == TEXI_EXPR_LOAD) {
        int k = find_store(sc, e->u.load.buf);
        if (k >= 0 && !texi_expr_equal(sc->idx[k], e->u.load.index))
            sc->unsafe = true;
    }
    return !sc->unsafe;
}

static void check_expr(simd_check *sc, tex_expr *e)
{
    if (e && !sc->unsafe)
        texi_expr_visit(e, probe_load, sc);
}

/* Every load of a stored buffer must read the stored index. */
static void check_loads(simd_check *sc, const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_STORE:
        check_expr(sc, s->u.store.index);
        check_expr(sc, s->u.store.value);
        return;
    case TEXI_STMT_IF:
        check_expr(sc, s->u.ifs.cond);
        check_loads(sc, s->u.ifs.then_s);
        if (s->u.ifs.else_s)
            check_loads(sc, s->u.ifs.else_s);
        return;
    case TEXI_STMT_LET:
        check_expr(sc, s->u.let.value);
        check_loads(sc, s->u.let.body);
        return;
    case TEXI_STMT_ATTR:
        check_expr(sc, s->u.attr.value);
        check_loads(sc, s->u.attr.body);
        return;
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            check_loads(sc, s->u.seq.items[i]);
        return;
    case TEXI_STMT_EVALUATE:
        check_expr(sc, s->u.eval.value);
        return;
    default:
        sc->unsafe = true;
        return;
    }
}

bool texi_simd_safe(const tex_stmt *s)
{
    simd_check sc = {.v = s->u.loop.var};
    collect_stores(&sc, s->u.loop.body);
    if (!sc.unsafe)
        check_loads(&sc, s->u.loop.body);
    return !sc.unsafe;
}
