/*
 * Pass gpu_threads (CPU tail, after gpu_blocks): the threads of a block run
 * as the innermost, vectorized loop of each barrier-free segment.
 *
 * After gpu_to_cpu every thread nest is barrier-free: within it the
 * threads of a block do not communicate (thread_sync put a barrier wherever
 * one thread reads what another wrote; what is left are reductions of all
 * threads into one element, which commute). So the innermost thread loop L
 * (threadIdx.x, over `tx`) may be distributed over the statements of its
 * body and interchanged with the serial loops inside it: each thread still
 * runs its own statements in order. sink() rewrites L's body B:
 *   - a serial or unrolled loop whose bounds do not use tx, an IF whose
 *     condition does not use tx and a LET whose value does not use tx
 *     move outside L (thread-invariant code hoisted);
 *   - a SEQ is distributed: consecutive straight-line items (no loop,
 *     allocation, barrier, intrinsic or atomic) form one leaf, the others
 *     are sunk in turn;
 *   - a LOCAL buffer allocated inside L (a per-thread value that now lives
 *     across the leaves) becomes one array over the threads, thread index
 *     fastest: element e of thread tx is at e * extent(L) + tx - min(L),
 *     so that the leaves' accesses to it are unit-stride in tx (the
 *     per-thread array of a value live across segments; a thread-dependent
 *     LET or IF over more than straight-line code is not distributed, so
 *     register values are never stored this way);
 *   - a straight-line leaf S becomes `for (tx) S`, VECTORIZED when L's
 *     extent is a constant of at least MIN_LANES and every access of S is
 *     affine in tx, stores with a coefficient of 0 or 1 (a coefficient 0
 *     is a reduction of all threads into one element: pass simd makes it a
 *     vectorized reduction, simd_reduce.c), otherwise serial;
 *   - a leaf indexed by a thread-dependent floor division or modulo by a
 *     constant is first split into pieces in which it is affine (peel());
 *   - a serial loop around a leaf whose accesses step by the loop's
 *     extent per thread fuses with L into one loop over both (fuse_lanes(),
 *     e.g. the rows of per-thread tiles laid out by gpu_to_cpu);
 *   - a serial loop K around `for (I) vectorized leaf` whose stores stay
 *     fixed across K goes inside I (stationary()), for pass promote.
 * A nest with something else in L's body (a thread, parallel or vectorized
 * loop, a thread-dependent loop bound, a shared allocation), or in which no
 * leaf would be vectorized, is left as it is: its thread loops run
 * serially. Outer thread loops (threadIdx.y/z) stay around the result.
 */
#include "lower/lower.h"

enum { MIN_LANES = 4 };

typedef struct {
    tex_ctx *ctx;
    const tex_stmt *loop; /* L, the innermost thread loop */
    bool refused;         /* L's body holds something sink() does not move */
    int n_vector;         /* leaves made vectorized loops */
} sinker;

/* A statement that cannot be part of a vectorized loop's body. */
static bool not_straight(const tex_stmt *s)
{
    if (s->kind == TEXI_STMT_ATTR)
        return s->u.attr.id == TEXI_ATTR_ATOMIC;
    return s->kind == TEXI_STMT_FOR || s->kind == TEXI_STMT_ALLOCATE ||
           s->kind == TEXI_STMT_REALIZE || s->kind == TEXI_STMT_PROVIDE ||
           s->kind == TEXI_STMT_BARRIER || s->kind == TEXI_STMT_INTRIN;
}

static bool straight(const tex_stmt *s)
{
    return !texi_stmt_any(s, not_straight);
}

typedef struct {
    const tex_expr *var;
    bool affine;
} affinity;

/* Every LOAD index affine in the thread variable. */
static bool check_load(tex_expr *e, void *ud)
{
    affinity *a = ud;
    int64_t coef;
    if (e->kind == TEXI_EXPR_LOAD && !texi_linear_in(e->u.load.index, a->var, &coef))
        a->affine = false;
    return a->affine;
}

/* Every STORE index affine with a coefficient 0 or 1, every load affine. */
static bool check_access(const tex_stmt *s, void *ud)
{
    affinity *a = ud;
    int64_t coef;
    if (s->kind == TEXI_STMT_STORE &&
        (!texi_linear_in(s->u.store.index, a->var, &coef) || coef < 0 || coef > 1))
        a->affine = false;
    texi_stmt_visit_exprs(s, check_load, a);
    return a->affine;
}

/* Straight-line s inside `for (var, min, extent)`: VECTORIZED when the
 * extent is a constant of at least MIN_LANES and the accesses allow it
 * (the file comment), otherwise serial. */
static tex_stmt *leaf_over(sinker *sk, tex_expr *var, tex_expr *min, tex_expr *extent, tex_stmt *s)
{
    int64_t n;
    affinity a = {var, true};
    texi_stmt_visit(s, check_access, &a);
    bool vec = a.affine && texi_expr_is_int_const(extent, &n) && n >= MIN_LANES;
    sk->n_vector += vec;
    return texi_for_new(sk->ctx, var, min, extent, vec ? TEXI_FOR_VECTORIZED : TEXI_FOR_SERIAL, -1,
                        s);
}

/* Straight-line s inside its own copy of L. */
static tex_stmt *leaf(sinker *sk, tex_stmt *s)
{
    const tex_stmt *l = sk->loop;
    return leaf_over(sk, l->u.loop.var, l->u.loop.min, l->u.loop.extent, s);
}

/* Div/mod peeling: the first FLOORDIV / FLOORMOD of a leaf whose dividend a
 * is tx plus a thread-invariant c0 (coefficient 1) and whose divisor D is a
 * positive constant. */
typedef struct {
    const tex_expr *tx;
    tex_expr *a;
    int64_t d;
} divmod;

static bool find_divmod(tex_expr *e, void *ud)
{
    divmod *dm = ud;
    int64_t c, d;
    if (dm->a)
        return false;
    if ((e->kind == TEXI_EXPR_FLOORDIV || e->kind == TEXI_EXPR_FLOORMOD) &&
        texi_expr_is_int_const(e->u.bin.b, &d) && d > 0 && texi_expr_uses_var(e->u.bin.a, dm->tx) &&
        texi_linear_in(e->u.bin.a, dm->tx, &c) && c == 1) {
        dm->a = e->u.bin.a;
        dm->d = d;
    }
    return !dm->a;
}

static bool find_divmod_stmt(const tex_stmt *s, void *ud)
{
    texi_stmt_visit_exprs(s, find_divmod, ud);
    return !((divmod *)ud)->a;
}

/* Clears the dividend found when it reads a LET of the leaf (the pieces'
 * guards sit outside the leaf, where that variable is not bound). */
static bool divmod_scope(const tex_stmt *s, void *ud)
{
    divmod *dm = ud;
    if (dm->a && s->kind == TEXI_STMT_LET && texi_expr_uses_var(dm->a, s->u.let.var))
        dm->a = NULL;
    return dm->a != NULL;
}

/* The values of a / D and a % D in piece k: q + k and rm + u - k D. */
typedef struct {
    const divmod *dm;
    tex_expr *div, *mod;
} piece_values;

static tex_expr *replace_divmod(tex_expr *e, void *ud)
{
    const piece_values *pv = ud;
    int64_t d;
    if ((e->kind != TEXI_EXPR_FLOORDIV && e->kind != TEXI_EXPR_FLOORMOD) ||
        !texi_expr_is_int_const(e->u.bin.b, &d) || d != pv->dm->d ||
        !texi_expr_equal(e->u.bin.a, pv->dm->a))
        return NULL;
    return texi_convert(e->kind == TEXI_EXPR_FLOORDIV ? pv->div : pv->mod, e->dtype);
}

enum { MAX_PIECES = 4 };

/* Loads and stores at their simplified indices (a piece's q + k folded). */
static tex_expr *simplify_load(tex_expr *e, void *ud)
{
    if (e->kind != TEXI_EXPR_LOAD)
        return NULL;
    tex_expr *idx = texi_expr_mutate(e->u.load.index, simplify_load, ud);
    tex_expr *r = idx ? texi_load_new(e->u.load.buf, texi_simplify(idx, 0, NULL)) : NULL;
    ((sinker *)ud)->refused |= !r;
    return r ? r : e;
}

static tex_stmt *simplify_store(tex_stmt *s, void *ud)
{
    sinker *sk = ud;
    if (s->kind != TEXI_STMT_STORE)
        return NULL;
    tex_expr *idx = texi_expr_mutate(s->u.store.index, simplify_load, ud);
    tex_expr *v = texi_expr_mutate(s->u.store.value, simplify_load, ud);
    tex_stmt *r =
        idx && v ? texi_store_new(sk->ctx, s->u.store.buf, texi_simplify(idx, 0, NULL), v) : NULL;
    sk->refused |= !r;
    return r ? r : s;
}

static tex_stmt *peel(sinker *sk, tex_stmt *s, int pieces);

/*
 * Straight-line s whose accesses are not all affine in tx because of
 * a / D or a % D with a = c0 + u, u = tx - min(L) in [0, X): with
 * q = c0 / D and rm = c0 % D (thread-invariant, rm in [0, D)), the lanes
 * split into pieces k = 0, 1, ... where k D <= rm + u < (k + 1) D, and in
 * piece k, a / D = q + k and a % D = rm + u - k D, both affine in tx. Each
 * piece is `for (tx) if (its range) s_k`, a guarded leaf simd_tail
 * vectorizes by chunks (a cooperative fetch of a tile whose rows are D
 * wide: one or two pieces per row crossing). Peeled again while other
 * divisions remain, up to MAX_PIECES leaves; otherwise s is one leaf (also
 * when the dividend reads a LET of s).
 */
static tex_stmt *peel(sinker *sk, tex_stmt *s, int pieces)
{
    const tex_stmt *l = sk->loop;
    tex_ctx *ctx = sk->ctx;
    affinity af = {l->u.loop.var, true};
    texi_stmt_visit(s, check_access, &af);
    divmod dm = {l->u.loop.var, NULL, 0};
    int64_t x;
    if (!af.affine && texi_expr_is_int_const(l->u.loop.extent, &x) && x >= MIN_LANES)
        texi_stmt_visit(s, find_divmod_stmt, &dm);
    if (dm.a)
        texi_stmt_visit(s, divmod_scope, &dm);
    if (af.affine || !dm.a)
        return leaf(sk, s);
    tex_dtype t = dm.a->dtype;
    tex_expr *u =
        texi_binary(TEXI_EXPR_SUB, texi_convert(l->u.loop.var, t), texi_convert(l->u.loop.min, t));
    tex_expr *c0 = texi_substitute(dm.a, 1, (tex_expr *const[]){l->u.loop.var},
                                   (tex_expr *const[]){l->u.loop.min});
    tex_expr *dd = texi_int_imm(ctx, t, dm.d);
    tex_expr *q = c0 ? texi_simplify(texi_binary(TEXI_EXPR_FLOORDIV, c0, dd), 0, NULL) : NULL;
    tex_expr *rm = c0 ? texi_simplify(texi_binary(TEXI_EXPR_FLOORMOD, c0, dd), 0, NULL) : NULL;
    if (!u || !q || !rm)
        return NULL;
    texi_interval ri = texi_const_interval(rm, 0, NULL);
    int64_t rmax = ri.hi_inf || ri.hi >= dm.d ? dm.d - 1 : ri.hi;
    int64_t n = (rmax + x - 1) / dm.d + 1;
    if (pieces * n > MAX_PIECES)
        return leaf(sk, s);
    tex_stmt **items = texi_alloc(ctx, sizeof *items * (size_t)n, "gpu_threads");
    for (int64_t k = 0; items && k < n; k++) {
        tex_expr *kd = texi_int_imm(ctx, t, k * dm.d), *kk = texi_int_imm(ctx, t, k);
        tex_expr *dv = texi_binary(TEXI_EXPR_ADD, q, kk);
        tex_expr *md = texi_binary(TEXI_EXPR_SUB, texi_binary(TEXI_EXPR_ADD, rm, u), kd);
        piece_values pv = {&dm, dv ? texi_simplify(dv, 0, NULL) : NULL,
                           md ? texi_simplify(md, 0, NULL) : NULL};
        tex_expr *pos = texi_binary(TEXI_EXPR_ADD, rm, u); /* rm + u, in [kD, (k+1)D) */
        tex_expr *lo = k ? texi_binary(TEXI_EXPR_GE, pos, kd) : NULL;
        tex_expr *hi =
            k < n - 1 ? texi_binary(TEXI_EXPR_LT, pos, texi_int_imm(ctx, t, (k + 1) * dm.d)) : NULL;
        tex_expr *cond = lo && hi ? texi_binary(TEXI_EXPR_AND, lo, hi) : lo ? lo : hi;
        tex_stmt *body =
            pv.div && pv.mod ? texi_stmt_mutate(ctx, s, NULL, replace_divmod, &pv) : NULL;
        body = body ? texi_stmt_mutate(ctx, body, simplify_store, simplify_load, sk) : NULL;
        if (sk->refused)
            return NULL;
        body = body && cond ? texi_if_new(ctx, texi_simplify(cond, 0, NULL), body, NULL) : body;
        items[k] = body ? peel(sk, body, pieces * (int)n) : NULL;
        if (!items[k])
            return NULL;
    }
    return items ? texi_seq_new(ctx, (int)n, items) : NULL;
}

/* Lane fusion: the accesses of a serial loop J (over j, constant extent E)
 * whose straight-line body would become a leaf inside J. */
typedef struct {
    const tex_expr *tx, *j;
    int64_t e;
    const texi_buffer *stored[16]; /* buffers stored in the body, each at one index */
    tex_expr *at[16];
    int n_stored;
    bool ok;
} lane_check;

/* Every index affine in tx and j with coefficients cx = E * cj. */
static bool lanes_index(lane_check *lc, tex_expr *idx, bool store)
{
    int64_t cx, cj;
    lc->ok = lc->ok && texi_linear_in(idx, lc->tx, &cx) && texi_linear_in(idx, lc->j, &cj) &&
             cx == lc->e * cj && (!store || cj == 1);
    return lc->ok;
}

static bool lanes_load(tex_expr *e, void *ud)
{
    lane_check *lc = ud;
    if (e->kind == TEXI_EXPR_LOAD)
        lanes_index(lc, e->u.load.index, false);
    return lc->ok;
}

static bool lanes_access(const tex_stmt *s, void *ud)
{
    lane_check *lc = ud;
    if (s->kind == TEXI_STMT_STORE && lanes_index(lc, s->u.store.index, true)) {
        int i = 0;
        while (i < lc->n_stored && lc->stored[i] != s->u.store.buf)
            i++;
        if (i == lc->n_stored && i < (int)(sizeof lc->at / sizeof *lc->at)) {
            lc->stored[lc->n_stored] = s->u.store.buf;
            lc->at[lc->n_stored++] = s->u.store.index;
        }
        lc->ok = i < lc->n_stored && texi_expr_equal(lc->at[i], s->u.store.index);
    }
    texi_stmt_visit_exprs(s, lanes_load, lc);
    return lc->ok;
}

/* Loads of a stored buffer read the one index it is stored at (no value
 * flows between lanes). */
static bool lanes_reads(tex_expr *e, void *ud)
{
    lane_check *lc = ud;
    if (e->kind == TEXI_EXPR_LOAD)
        for (int i = 0; i < lc->n_stored; i++)
            if (lc->stored[i] == e->u.load.buf && !texi_expr_equal(lc->at[i], e->u.load.index))
                lc->ok = false;
    return lc->ok;
}

static bool lanes_reads_stmt(const tex_stmt *s, void *ud)
{
    texi_stmt_visit_exprs(s, lanes_reads, ud);
    return ((lane_check *)ud)->ok;
}

typedef struct {
    sinker *sk;
    lane_check *lc;
    tex_expr *lane; /* t = (tx - min(L)) * E + j - min(J) */
    tex_expr *vars[2], *mins[2];
} lane_rewrite;

/* An index R + cx tx + cj j as R + cx min(L) + cj min(J) + cj t. */
static tex_expr *lane_index(lane_rewrite *lr, tex_expr *idx)
{
    int64_t cj;
    texi_linear_in(idx, lr->lc->j, &cj);
    tex_expr *base = texi_substitute(idx, 2, lr->vars, lr->mins);
    tex_expr *r = base ? texi_binary(TEXI_EXPR_ADD, base,
                                     texi_binary(TEXI_EXPR_MUL, texi_convert(lr->lane, idx->dtype),
                                                 texi_int_imm(lr->sk->ctx, idx->dtype, cj)))
                       : NULL;
    return r ? texi_simplify(r, 0, NULL) : NULL;
}

/* Whether integer e is affine in tx and j with tx's coefficient E times
 * j's, which is not 0 (so it is affine in the lane). */
static bool lane_affine(const lane_check *lc, tex_expr *e)
{
    int64_t cx, cj;
    return texi_dtype_is_int(e->dtype) &&
           (e->kind == TEXI_EXPR_ADD || e->kind == TEXI_EXPR_SUB || e->kind == TEXI_EXPR_MUL) &&
           texi_linear_in(e, lc->tx, &cx) && texi_linear_in(e, lc->j, &cj) && cj &&
           cx == lc->e * cj;
}

/* Loads at lane indices; other affine uses of tx and j (a guard's bound)
 * rewritten the same way, and any other use of tx or j as min(L) + t / E
 * or min(J) + t % E. */
static tex_expr *lane_load(tex_expr *e, void *ud)
{
    lane_rewrite *lr = ud;
    tex_expr *r = NULL;
    if (e->kind == TEXI_EXPR_LOAD)
        r = texi_load_new(e->u.load.buf, lane_index(lr, e->u.load.index));
    else if (lane_affine(lr->lc, e))
        r = lane_index(lr, e);
    else if (e == lr->vars[0] || e == lr->vars[1]) {
        tex_expr *lane = texi_convert(lr->lane, e->dtype);
        tex_expr *d = texi_int_imm(lr->sk->ctx, e->dtype, lr->lc->e);
        r = texi_binary(e == lr->vars[0] ? TEXI_EXPR_FLOORDIV : TEXI_EXPR_FLOORMOD, lane, d);
        r = texi_binary(TEXI_EXPR_ADD, e == lr->vars[0] ? lr->mins[0] : lr->mins[1], r);
    } else
        return NULL;
    lr->sk->refused |= !r;
    return r ? r : e;
}

static tex_stmt *lane_store(tex_stmt *s, void *ud)
{
    lane_rewrite *lr = ud;
    if (s->kind != TEXI_STMT_STORE)
        return NULL;
    tex_expr *v = texi_expr_mutate(s->u.store.value, lane_load, lr);
    tex_expr *idx = lane_index(lr, s->u.store.index);
    tex_stmt *r = v && idx ? texi_store_new(lr->sk->ctx, s->u.store.buf, idx, v) : NULL;
    lr->sk->refused |= !r;
    return r ? r : s;
}

/*
 * Serial loop J (over j, constant extent E) around a straight-line body
 * whose accesses are all affine in tx and j with tx's coefficient E times
 * j's, stores with j's coefficient 1 and reads of a stored buffer at its
 * one stored index: `for (j) for (tx) S` as one loop over the lanes
 * t = (tx - min(L)) * E + j - min(J), t in [0, E * extent(L)), every index
 * rewritten affine in t (the threads' rows of E consecutive elements are
 * one run, the layout of a per-thread tile from gpu_to_cpu). Each thread's
 * j-iterations still run in order and write disjoint elements, so the lanes
 * are independent. NULL when J does not qualify (nothing recorded) or on
 * ENOMEM (sk->refused).
 */
static tex_stmt *fuse_lanes(sinker *sk, tex_stmt *s)
{
    const tex_stmt *l = sk->loop;
    tex_stmt *body = s->u.loop.body;
    lane_check lc = {.tx = l->u.loop.var, .j = s->u.loop.var, .ok = true};
    int64_t threads;
    if (!straight(body) || !texi_expr_is_int_const(s->u.loop.extent, &lc.e) || lc.e < 2 ||
        !texi_expr_is_int_const(l->u.loop.extent, &threads))
        return NULL;
    texi_stmt_visit(body, lanes_access, &lc);
    if (lc.ok)
        texi_stmt_visit(body, lanes_reads_stmt, &lc);
    if (!lc.ok)
        return NULL;
    tex_ctx *ctx = sk->ctx;
    tex_dtype t = l->u.loop.var->dtype;
    tex_expr *lane = texi_var_new(ctx, "lane", t);
    lane_rewrite lr = {
        sk, &lc, lane, {l->u.loop.var, s->u.loop.var}, {l->u.loop.min, s->u.loop.min}};
    tex_stmt *r = lane ? texi_stmt_mutate(ctx, body, lane_store, lane_load, &lr) : NULL;
    if (!r || sk->refused) {
        sk->refused = true;
        return NULL;
    }
    return leaf_over(sk, lane, texi_int_imm(ctx, t, 0), texi_int_imm(ctx, t, lc.e * threads), r);
}

typedef struct {
    sinker *sk;
    const void *key;
    texi_buffer *to;
} expansion;

/* idx * extent(L) + tx - min(L), in idx's dtype. */
static tex_expr *thread_index(const expansion *x, tex_expr *idx)
{
    const tex_stmt *l = x->sk->loop;
    tex_dtype t = idx->dtype;
    tex_expr *tid =
        texi_binary(TEXI_EXPR_SUB, texi_convert(l->u.loop.var, t), texi_convert(l->u.loop.min, t));
    tex_expr *r = texi_binary(
        TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, idx, texi_convert(l->u.loop.extent, t)), tid);
    return r ? texi_simplify(r, 0, NULL) : NULL;
}

static tex_expr *expand_load(tex_expr *e, void *ud)
{
    expansion *x = ud;
    if (e->kind != TEXI_EXPR_LOAD || texi_buffer_key(e->u.load.buf) != x->key)
        return NULL;
    tex_expr *idx = texi_expr_mutate(e->u.load.index, expand_load, x);
    tex_expr *r = idx ? texi_load_new(x->to, thread_index(x, idx)) : NULL;
    x->sk->refused |= !r;
    return r ? r : e;
}

static tex_stmt *expand_store(tex_stmt *s, void *ud)
{
    expansion *x = ud;
    if (s->kind != TEXI_STMT_STORE || texi_buffer_key(s->u.store.buf) != x->key)
        return NULL;
    tex_expr *idx = texi_expr_mutate(s->u.store.index, expand_load, x);
    tex_expr *v = texi_expr_mutate(s->u.store.value, expand_load, x);
    tex_expr *at = idx ? thread_index(x, idx) : NULL;
    tex_stmt *r = at && v ? texi_store_new(x->sk->ctx, x->to, at, v) : NULL;
    x->sk->refused |= !r;
    return r ? r : s;
}

static tex_stmt *sink(sinker *sk, tex_stmt *s);
/* Accumulator-stationary interchange: a leaf's stores, each at an index
 * that does not use K's variable, affine in I's and the lane's with I's
 * coefficient at least the lanes' span, and loads of stored buffers at
 * the stored index. */
typedef struct {
    const tex_expr *k, *i, *lane;
    int64_t span; /* the lane loop's extent */
    const texi_buffer *stored[16];
    tex_expr *at[16];
    int n_stored;
    bool ok;
} stationary_check;

static bool stationary_store(const tex_stmt *s, void *ud)
{
    stationary_check *sc = ud;
    int64_t ci, cl;
    if (s->kind != TEXI_STMT_STORE)
        return sc->ok;
    tex_expr *idx = s->u.store.index;
    if (texi_expr_uses_var(idx, sc->k) || !texi_linear_in(idx, sc->i, &ci) ||
        !texi_linear_in(idx, sc->lane, &cl) || cl < 0 || cl > 1 ||
        (ci < 0 ? -ci : ci) < (cl ? sc->span : 1) || sc->n_stored == 16)
        return sc->ok = false;
    for (int b = 0; b < sc->n_stored; b++)
        if (sc->stored[b] == s->u.store.buf && !texi_expr_equal(sc->at[b], idx))
            return sc->ok = false;
    sc->stored[sc->n_stored] = s->u.store.buf;
    sc->at[sc->n_stored++] = idx;
    return true;
}

static bool stationary_read(tex_expr *e, void *ud)
{
    stationary_check *sc = ud;
    if (e->kind == TEXI_EXPR_LOAD)
        for (int b = 0; b < sc->n_stored; b++)
            if (sc->stored[b] == e->u.load.buf && !texi_expr_equal(sc->at[b], e->u.load.index))
                sc->ok = false;
    return sc->ok;
}

static bool stationary_reads(const tex_stmt *s, void *ud)
{
    texi_stmt_visit_exprs(s, stationary_read, ud);
    return ((stationary_check *)ud)->ok;
}

/*
 * Loop K (thread-invariant, serial) with its sunk body B: when B is
 * `for (I) L` with L a vectorized leaf whose every store is at an index
 * that does not use K, is affine in I and in the lane with I's coefficient
 * at least the lanes' span (so different I's touch disjoint elements),
 * and whose loads of stored buffers read the stored index, K goes inside
 * I: `for (I) for (K) L`. The iterations of different I's are then
 * independent and each I's run over K keeps its order, so the result is
 * the same; the elements a K-run updates stay fixed across it, and pass
 * promote keeps them in registers (a GEMM thread tile's accumulators
 * across the k loop). Otherwise K around B.
 */
static tex_stmt *stationary(tex_ctx *ctx, tex_stmt *k, tex_stmt *b)
{
    tex_stmt *leaf_loop = b->kind == TEXI_STMT_FOR ? b->u.loop.body : NULL;
    int64_t span;
    if (!leaf_loop || leaf_loop->kind != TEXI_STMT_FOR ||
        (b->u.loop.for_kind != TEXI_FOR_SERIAL && b->u.loop.for_kind != TEXI_FOR_UNROLLED) ||
        leaf_loop->u.loop.for_kind != TEXI_FOR_VECTORIZED ||
        texi_expr_uses_var(b->u.loop.min, k->u.loop.var) ||
        texi_expr_uses_var(b->u.loop.extent, k->u.loop.var) ||
        !texi_expr_is_int_const(leaf_loop->u.loop.extent, &span))
        return texi_stmt_with_body(ctx, k, b);
    stationary_check sc = {k->u.loop.var, b->u.loop.var, leaf_loop->u.loop.var, span, {0}, {0}, 0,
                           true};
    texi_stmt_visit(leaf_loop->u.loop.body, stationary_store, &sc);
    if (sc.ok)
        texi_stmt_visit(leaf_loop->u.loop.body, stationary_reads, &sc);
    if (!sc.ok)
        return texi_stmt_with_body(ctx, k, b);
    return texi_stmt_with_body(ctx, b, texi_stmt_with_body(ctx, k, leaf_loop));
}

/* A LOCAL buffer of L's body as one array over L's threads. */
static tex_stmt *sink_local(sinker *sk, tex_stmt *s)
{
    const texi_buffer *b = s->u.alloc.buf;
    tex_ctx *ctx = sk->ctx;
    tex_expr *size = texi_convert(sk->loop->u.loop.extent, TEX_I64);
    for (int d = 0; size && d < b->ndim; d++)
        size = texi_binary(TEXI_EXPR_MUL, size, texi_convert(b->shape[d], TEX_I64));
    size = size ? texi_simplify(size, 0, NULL) : NULL;
    texi_buffer *to =
        size ? texi_buffer_new(ctx, b->name, b->dtype, TEXI_SCOPE_LOCAL, 1, &size) : NULL;
    if (!to)
        return NULL;
    expansion x = {sk, texi_buffer_key(b), to};
    tex_stmt *body = texi_stmt_mutate(ctx, s->u.alloc.body, expand_store, expand_load, &x);
    body = body && !sk->refused ? sink(sk, body) : NULL;
    return body ? texi_allocate_new(ctx, to, body) : NULL;
}

/* SEQ: runs of straight-line items as one leaf each, other items sunk. */
static tex_stmt *sink_seq(sinker *sk, tex_stmt *s)
{
    int n = s->u.seq.n, n_out = 0, run = 0;
    tex_stmt **out = texi_alloc(sk->ctx, sizeof *out * (size_t)(n + 1), "gpu_threads");
    tex_stmt **pending = texi_alloc(sk->ctx, sizeof *pending * (size_t)(n + 1), "gpu_threads");
    if (!out || !pending)
        return NULL;
    for (int i = 0; i <= n; i++) {
        tex_stmt *item = i < n ? s->u.seq.items[i] : NULL;
        if (item && straight(item)) {
            pending[run++] = item;
            continue;
        }
        if (run && !(out[n_out++] = peel(sk, texi_seq_new(sk->ctx, run, pending), 1)))
            return NULL;
        run = 0;
        if (item && !(out[n_out++] = sink(sk, item)))
            return NULL;
    }
    return texi_seq_new(sk->ctx, n_out, out);
}

/* IF with a thread-invariant condition: outside L. */
static tex_stmt *sink_if(sinker *sk, tex_stmt *s)
{
    tex_stmt *a = sink(sk, s->u.ifs.then_s);
    tex_stmt *b = s->u.ifs.else_s ? sink(sk, s->u.ifs.else_s) : NULL;
    return a && (b || !s->u.ifs.else_s) ? texi_if_new(sk->ctx, s->u.ifs.cond, a, b) : NULL;
}

/* L's body s with L moved inside (the file comment's rules); NULL when
 * refused (sk->refused) or on ENOMEM. */
static tex_stmt *sink(sinker *sk, tex_stmt *s)
{
    const tex_expr *tx = sk->loop->u.loop.var;
    tex_stmt *r;
    if (sk->refused)
        return NULL;
    if (straight(s))
        return peel(sk, s, 1);
    switch (s->kind) {
    case TEXI_STMT_FOR:
        if ((s->u.loop.for_kind != TEXI_FOR_SERIAL && s->u.loop.for_kind != TEXI_FOR_UNROLLED) ||
            texi_expr_uses_var(s->u.loop.min, tx) || texi_expr_uses_var(s->u.loop.extent, tx))
            break;
        if ((r = fuse_lanes(sk, s)) || sk->refused)
            return r;
        r = sink(sk, s->u.loop.body);
        return r ? stationary(sk->ctx, s, r) : NULL;
    case TEXI_STMT_SEQ:
        return sink_seq(sk, s);
    case TEXI_STMT_IF:
        if (!texi_expr_uses_var(s->u.ifs.cond, tx))
            return sink_if(sk, s);
        break;
    case TEXI_STMT_LET:
        if (texi_expr_uses_var(s->u.let.value, tx))
            break;
        return texi_stmt_with_body(sk->ctx, s, sink(sk, s->u.let.body));
    case TEXI_STMT_ATTR:
        if (s->u.attr.id == TEXI_ATTR_ATOMIC)
            break;
        return texi_stmt_with_body(sk->ctx, s, sink(sk, s->u.attr.body));
    case TEXI_STMT_ALLOCATE:
        if (s->u.alloc.buf->scope != TEXI_SCOPE_LOCAL)
            break;
        return sink_local(sk, s);
    case TEXI_STMT_REALIZE: /* straight-line kinds are leaves (above); others refused */
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_STORE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    sk->refused = true;
    return NULL;
}

static bool is_thread(const tex_stmt *s)
{
    return texi_stmt_is_thread_loop(s, false);
}

typedef struct {
    tex_ctx *ctx;
    int rc;
} walk;

/* Innermost thread loops, rewritten when sink() moves them inward and
 * vectorizes some leaf. */
static tex_stmt *visit(tex_stmt *s, void *ud)
{
    walk *w = ud;
    if (w->rc || !is_thread(s) || texi_stmt_any(s->u.loop.body, is_thread))
        return NULL;
    sinker sk = {.ctx = w->ctx, .loop = s};
    tex_stmt *r = sink(&sk, s->u.loop.body);
    if (!r && !sk.refused)
        w->rc = tex_errcode(w->ctx) ? tex_errcode(w->ctx) : TEX_ENOMEM;
    return r && sk.n_vector ? r : s;
}

int texi_pass_gpu_threads(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    walk w = {lw->ctx, 0};
    tex_stmt *r = texi_stmt_mutate(lw->ctx, in, visit, NULL, &w);
    if (w.rc)
        return w.rc;
    return texi_pass_result(lw, r, out);
}
