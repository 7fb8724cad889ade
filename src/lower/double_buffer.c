/*
 * double_buffer (device.h): software pipelining of shared-memory fetches
 * (TVM's InjectDoubleBuffer). The buffer of a stage given tex_double_buffer
 * is marked by flatten with an ATTR "double_buffer" (value: the buffer's
 * data variable) directly inside its ALLOCATE, in the body of the serial
 * loop the stage is attached at (cache_read ... compute_at(consumer, k.outer)).
 *
 * Input pattern (anything else is left unchanged, attribute included: double
 * buffering is an optimization, never needed for correctness):
 *   for (k, m, E) {                                      // serial
 *     allocate S1 shared { attr double_buffer = S1 {     // one or more layers
 *       [allocate S2 shared { attr double_buffer = S2 {] //   of marked shared
 *         FETCH...  COMPUTE...                           //   buffers; a SEQ
 *   }}}}                                                 //   at some layer
 * Output: each marked buffer doubled, a prologue fetching step m, and a loop
 * whose body fetches step k+1 into one half (ATTR "double_buffer_write")
 * while it computes step k from the other (the form in full: above
 * pipeline()); a tensor intrinsic's tile of a marked buffer (an INTRIN
 * argument) moves into the half as a LOAD does. Not done: barriers, which
 * are thread_sync's (it runs after).
 */
#include "lower/device.h"

#define MAX_DB 8     /* double-buffered buffers of one loop */
#define MAX_FETCH 32 /* fetch statements of one loop */

typedef struct {
    texi_lower *lw;
    int rc;
    int n_buf;
    texi_buffer *old[MAX_DB], *neu[MAX_DB];
    tex_expr *size[MAX_DB]; /* elements of old */
    int n_fetch;
    tex_stmt *fetch[MAX_FETCH];
    tex_stmt *compute;
    /* rewriting */
    tex_expr *var;  /* the variable instance() substitutes */
    tex_expr *half; /* the half being addressed */
} db_pass;

static int find_buf(const db_pass *p, const void *key)
{
    for (int i = 0; i < p->n_buf; i++)
        if (texi_buffer_key(p->old[i]) == key)
            return i;
    return -1;
}

/* ------------------------------------------------------------ matching */

typedef struct {
    const db_pass *p;
    bool found;
} load_query;

static bool note_load(tex_expr *e, void *ud)
{
    load_query *q = ud;
    if (e->kind == TEXI_EXPR_LOAD && find_buf(q->p, texi_buffer_key(e->u.load.buf)) >= 0)
        q->found = true;
    return !q->found;
}

static tex_expr *scan_expr(tex_expr *e, void *ud)
{
    texi_expr_visit(e, note_load, ud);
    return e; /* already walked: no descent */
}

/* Whether s reads a marked buffer. */
static bool reads_marked(db_pass *p, tex_stmt *s)
{
    load_query q = {p, false};
    texi_stmt_mutate(p->lw->ctx, s, NULL, scan_expr, &q);
    return q.found;
}

static bool stores_marked(const db_pass *p, const tex_stmt *s)
{
    for (int i = 0; i < p->n_buf; i++)
        if (texi_stmt_stores_to(s, p->old[i]))
            return true;
    return false;
}

/* The shared buffer of a marked layer `ALLOCATE S shared { ATTR
 * "double_buffer" = S { inner } }` (flatten.c's form), with *inner set;
 * NULL when s is not one. */
static texi_buffer *marked_layer(const tex_stmt *s, tex_stmt **inner)
{
    if (s->kind != TEXI_STMT_ALLOCATE || s->u.alloc.buf->scope != TEXI_SCOPE_SHARED)
        return NULL;
    texi_buffer *b = s->u.alloc.buf;
    const tex_stmt *a = s->u.alloc.body;
    if (!texi_attr_is(a, TEXI_ATTR_DOUBLE_BUFFER) || a->u.attr.value != b->data)
        return NULL;
    *inner = a->u.attr.body;
    return b;
}

/*
 * Peels the layers of the input pattern (file comment); false when s does
 * not match. The layers are peeled outside in. At each SEQ the leading items that store
 * to a marked buffer and read none are FETCH; if what remains is one more
 * marked layer, peeling continues there, otherwise it is COMPUTE. Every
 * marked buffer must be written by FETCH and never by COMPUTE.
 */
static bool peel(db_pass *p, tex_stmt *s)
{
    texi_buffer *layer;
    tex_stmt *inner;
    while ((layer = marked_layer(s, &inner)) != NULL) {
        if (p->n_buf == MAX_DB)
            return false;
        p->old[p->n_buf++] = layer;
        s = inner;
        if (s->kind != TEXI_STMT_SEQ) {
            if (!marked_layer(s, &inner))
                return false;
            continue;
        }
        int n = s->u.seq.n, i = 0;
        for (; i < n && stores_marked(p, s->u.seq.items[i]) && !reads_marked(p, s->u.seq.items[i]);
             i++) {
            if (p->n_fetch == MAX_FETCH)
                return false;
            p->fetch[p->n_fetch++] = s->u.seq.items[i];
        }
        if (i == n)
            return false;
        if (i == n - 1 && marked_layer(s->u.seq.items[i], &inner)) {
            s = s->u.seq.items[i];
            continue;
        }
        p->compute = texi_seq_new(p->lw->ctx, n - i, s->u.seq.items + i);
        break;
    }
    if (!p->compute || stores_marked(p, p->compute) || p->n_fetch == 0)
        return false;
    for (int b = 0; b < p->n_buf; b++) {
        bool written = false;
        for (int f = 0; f < p->n_fetch; f++)
            written |= texi_stmt_stores_to(p->fetch[f], p->old[b]);
        if (!written)
            return false;
    }
    return true;
}

/* ------------------------------------------------------------ rewriting */

static tex_expr *redirect_expr(tex_expr *e, void *ud);

/* half * n + index, in index's dtype. */
static tex_expr *offset(db_pass *p, int b, tex_expr *index)
{
    tex_expr *idx = texi_expr_mutate(index, redirect_expr, p);
    tex_expr *h = texi_convert(p->half, index->dtype), *n = texi_convert(p->size[b], index->dtype);
    tex_expr *base = h && n ? texi_binary(TEXI_EXPR_MUL, h, n) : NULL;
    tex_expr *r = base && idx ? texi_binary(TEXI_EXPR_ADD, base, idx) : NULL;
    if (!r)
        p->rc = TEX_ENOMEM;
    return r;
}

static tex_expr *redirect_expr(tex_expr *e, void *ud)
{
    db_pass *p = ud;
    if (e->kind != TEXI_EXPR_LOAD)
        return NULL;
    int b = find_buf(p, texi_buffer_key(e->u.load.buf));
    if (b < 0)
        return NULL;
    tex_expr *idx = offset(p, b, e->u.load.index);
    return idx ? texi_load_new(p->neu[b], idx) : e;
}

/* The intrinsic call s with its tiles of marked buffers moved into the half
 * addressed (offset as a LOAD's index), every tile offset simplified when
 * tidy; s itself when nothing changes. */
static tex_stmt *intrin_tiles(db_pass *p, tex_stmt *s, bool tidy)
{
    int n = s->u.intrin.n_args;
    texi_intrin_arg *args = texi_alloc(p->lw->ctx, (size_t)n * sizeof *args, "intrinsic tiles");
    if (!args) {
        p->rc = TEX_ENOMEM;
        return s;
    }
    bool changed = false;
    for (int i = 0; i < n; i++) {
        args[i] = s->u.intrin.args[i];
        int b = args[i].buf ? find_buf(p, texi_buffer_key(args[i].buf)) : -1;
        tex_expr *o = args[i].offset;
        if (tidy && o)
            o = texi_simplify(o, 0, NULL);
        else if (b >= 0 && o)
            o = offset(p, b, o);
        if (b >= 0 && !tidy)
            args[i].buf = p->neu[b];
        if (!o && args[i].offset)
            p->rc = TEX_ENOMEM;
        changed |= o != args[i].offset || args[i].buf != s->u.intrin.args[i].buf;
        args[i].offset = o ? o : args[i].offset;
    }
    tex_stmt *r =
        changed ? texi_intrin_new(p->lw->ctx, s->u.intrin.intrin, s->u.intrin.fn, n, args) : s;
    if (!r)
        p->rc = TEX_ENOMEM;
    return r ? r : s;
}

static tex_stmt *redirect_stmt(tex_stmt *s, void *ud)
{
    db_pass *p = ud;
    if (s->kind == TEXI_STMT_INTRIN)
        return intrin_tiles(p, s, false);
    if (s->kind != TEXI_STMT_STORE)
        return NULL;
    int b = find_buf(p, texi_buffer_key(s->u.store.buf));
    if (b < 0)
        return NULL;
    tex_expr *idx = offset(p, b, s->u.store.index);
    tex_expr *v = texi_expr_mutate(s->u.store.value, redirect_expr, p);
    tex_stmt *r = idx && v ? texi_store_new(p->lw->ctx, p->neu[b], idx, v) : NULL;
    if (!r)
        p->rc = TEX_ENOMEM;
    return r ? r : s;
}

static tex_expr *tidy_expr(tex_expr *e, void *ud)
{
    db_pass *p = ud;
    if (e->kind != TEXI_EXPR_LOAD)
        return NULL;
    tex_expr *idx = texi_expr_mutate(e->u.load.index, tidy_expr, p);
    idx = idx ? texi_simplify(idx, 0, NULL) : NULL;
    tex_expr *r = idx ? texi_load_new(e->u.load.buf, idx) : NULL;
    if (!r)
        p->rc = TEX_ENOMEM;
    return r ? r : e;
}

/* Indices and conditions simplified after substitution (0*16 + t: t). */
static tex_stmt *tidy_stmt(tex_stmt *s, void *ud)
{
    db_pass *p = ud;
    tex_stmt *r = NULL;
    if (s->kind == TEXI_STMT_INTRIN)
        return intrin_tiles(p, s, true);
    if (s->kind == TEXI_STMT_STORE) {
        tex_expr *idx = texi_expr_mutate(s->u.store.index, tidy_expr, p);
        tex_expr *v = texi_expr_mutate(s->u.store.value, tidy_expr, p);
        idx = idx ? texi_simplify(idx, 0, NULL) : NULL;
        r = idx && v ? texi_store_new(p->lw->ctx, s->u.store.buf, idx, v) : NULL;
    } else if (s->kind == TEXI_STMT_IF) {
        tex_expr *c = texi_simplify(s->u.ifs.cond, 0, NULL);
        tex_stmt *t =
            c ? texi_stmt_mutate(p->lw->ctx, s->u.ifs.then_s, tidy_stmt, tidy_expr, p) : NULL;
        tex_stmt *f = s->u.ifs.else_s
                          ? texi_stmt_mutate(p->lw->ctx, s->u.ifs.else_s, tidy_stmt, tidy_expr, p)
                          : NULL;
        r = t && (f || !s->u.ifs.else_s) ? texi_if_new(p->lw->ctx, c, t, f) : NULL;
    } else {
        return NULL;
    }
    if (!r)
        p->rc = TEX_ENOMEM;
    return r ? r : s;
}

/* s with var := value (value NULL: unchanged), addressing `half`. */
static tex_stmt *instance(db_pass *p, tex_stmt *s, tex_expr *value, tex_expr *half)
{
    p->half = half;
    if (value)
        s = texi_stmt_substitute(p->lw->ctx, s, p->var, value);
    if (s)
        s = texi_stmt_mutate(p->lw->ctx, s, redirect_stmt, redirect_expr, p);
    if (s)
        s = texi_stmt_mutate(p->lw->ctx, s, tidy_stmt, tidy_expr, p);
    if (!s || p->rc)
        p->rc = p->rc ? p->rc : TEX_ENOMEM;
    return s;
}

static tex_stmt *fetches(db_pass *p, tex_expr *value, tex_expr *half)
{
    tex_stmt *items[MAX_FETCH];
    for (int i = 0; i < p->n_fetch; i++)
        if (!(items[i] = instance(p, p->fetch[i], value, half)))
            return NULL;
    return texi_seq_new(p->lw->ctx, p->n_fetch, items);
}

/* The doubled buffers. */
static int double_buffers(db_pass *p)
{
    tex_ctx *ctx = p->lw->ctx;
    for (int b = 0; b < p->n_buf; b++) {
        texi_buffer *o = p->old[b];
        tex_expr *n = texi_int_imm(ctx, TEX_I32, 1);
        for (int d = 0; n && d < o->ndim; d++) {
            tex_expr *e = texi_convert(o->shape[d], TEX_I32);
            n = e ? texi_binary(TEXI_EXPR_MUL, n, e) : NULL;
        }
        tex_expr *two = texi_int_imm(ctx, TEX_I32, 2);
        tex_expr *n2 = n && two ? texi_simplify(texi_binary(TEXI_EXPR_MUL, two, n), 0, NULL) : NULL;
        p->size[b] = n ? texi_simplify(n, 0, NULL) : NULL;
        p->neu[b] = n2 && p->size[b]
                        ? texi_buffer_new(ctx, o->name, o->dtype, TEXI_SCOPE_SHARED, 1, &n2)
                        : NULL;
        if (!p->neu[b])
            return p->rc = TEX_ENOMEM;
    }
    return 0;
}

static tex_expr *imm(db_pass *p, tex_dtype t, int64_t v)
{
    return texi_int_imm(p->lw->ctx, t, v);
}

/* (k - m + c) mod 2 for the loop's variable k. */
static tex_expr *half_of(db_pass *p, const tex_stmt *loop, int64_t c)
{
    tex_expr *k = loop->u.loop.var, *m = loop->u.loop.min;
    tex_expr *r = texi_binary(TEXI_EXPR_SUB, k, m), *cc = imm(p, k->dtype, c);
    r = r && cc ? texi_binary(TEXI_EXPR_ADD, r, cc) : NULL;
    tex_expr *two = imm(p, k->dtype, 2);
    r = r && two ? texi_binary(TEXI_EXPR_FLOORMOD, r, two) : NULL;
    return r ? texi_simplify(r, 0, NULL) : NULL;
}

static tex_stmt *pipelined_loop(db_pass *p, const tex_stmt *loop)
{
    tex_ctx *ctx = p->lw->ctx;
    tex_expr *k = loop->u.loop.var, *m = loop->u.loop.min, *e = loop->u.loop.extent;
    tex_expr *one = imm(p, k->dtype, 1);
    tex_expr *next = one ? texi_binary(TEXI_EXPR_ADD, k, one) : NULL;
    tex_expr *end = texi_binary(TEXI_EXPR_ADD, m, e);
    tex_expr *cond = next && end ? texi_binary(TEXI_EXPR_LT, next, end) : NULL;
    tex_expr *h_next = half_of(p, loop, 1), *h_cur = half_of(p, loop, 0);
    tex_stmt *f = next && h_next ? fetches(p, next, h_next) : NULL;
    cond = cond ? texi_simplify(cond, 0, NULL) : NULL;
    f = f && cond ? texi_if_new(ctx, cond, f, NULL) : NULL;
    f = f ? texi_attr_named(ctx, TEXI_ATTR_DOUBLE_BUFFER_WRITE, NULL, f) : NULL;
    tex_stmt *c = h_cur ? instance(p, p->compute, NULL, h_cur) : NULL;
    tex_stmt *body = f && c ? texi_seq_new(ctx, 2, (tex_stmt *[]){f, c}) : NULL;
    return body ? texi_for_new(ctx, k, m, e, loop->u.loop.for_kind, loop->u.loop.thread_tag, body)
                : NULL;
}

/*
 * The output for a matched loop (each marked S of n elements becomes S' of 2n; S[i] is read as
 * S'[h*n + i] and written likewise, h the half):
 *   allocate S1' { allocate S2' {
 *     [if (0 < E)] { FETCH[k := m], halves 0 }                 // prologue
 *     for (k, m, E) {
 *       attr double_buffer_write {
 *         if (k + 1 < m + E) { FETCH[k := k + 1], half (k - m + 1) mod 2 }
 *       }
 *       COMPUTE, half (k - m) mod 2
 *     }
 *   }}
 * The copies' indices and conditions are simplified (k := 0 leaves 0*16 + t).
 * Barriers are thread_sync's (it runs after this pass): the prologue's
 * writes against the loop's reads give one barrier before the loop; within
 * an iteration the write under ATTR "double_buffer_write" does not conflict
 * with the later read (it fills the other half); between iterations it
 * does (the fetch of step k+2 overwrites the half step k read, and step
 * k+1 reads what step k fetched), which gives one barrier at the top of the
 * loop body: fetch(k+1) then overlaps compute(k) with one __syncthreads()
 * per step, instead of two. The result is correct for any later barrier
 * placement that respects those conflicts; it has none of its own.
 */
static tex_stmt *pipeline(db_pass *p, const tex_stmt *loop)
{
    tex_ctx *ctx = p->lw->ctx;
    int64_t ext;
    if (double_buffers(p) < 0)
        return NULL;
    tex_expr *zero = imm(p, loop->u.loop.var->dtype, 0);
    tex_stmt *pro = zero ? fetches(p, loop->u.loop.min, zero) : NULL;
    if (pro && !(texi_expr_is_int_const(loop->u.loop.extent, &ext) && ext > 0)) {
        tex_expr *c = texi_binary(TEXI_EXPR_LT, zero, loop->u.loop.extent);
        pro = c ? texi_if_new(ctx, c, pro, NULL) : NULL;
    }
    tex_stmt *lp = pro ? pipelined_loop(p, loop) : NULL;
    tex_stmt *r = lp ? texi_seq_new(ctx, 2, (tex_stmt *[]){pro, lp}) : NULL;
    for (int b = p->n_buf - 1; r && b >= 0; b--)
        r = texi_allocate_new(ctx, p->neu[b], r);
    if (!r)
        p->rc = p->rc ? p->rc : TEX_ENOMEM;
    return r;
}

static tex_stmt *loop_pre(tex_stmt *s, void *ud)
{
    db_pass *p = ud;
    if (p->rc || s->kind != TEXI_STMT_FOR || s->u.loop.for_kind != TEXI_FOR_SERIAL)
        return NULL;
    db_pass m = {.lw = p->lw, .var = s->u.loop.var};
    if (!peel(&m, s->u.loop.body))
        return NULL;
    tex_stmt *r = pipeline(&m, s);
    p->rc = m.rc;
    return r;
}

int texi_pass_double_buffer(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    db_pass p = {.lw = lw};
    tex_stmt *r = texi_stmt_mutate(lw->ctx, in, loop_pre, NULL, &p);
    if (p.rc)
        return p.rc;
    if (!r)
        return TEX_ENOMEM;
    *out = r;
    return 0;
}
