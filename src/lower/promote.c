/*
 * Pass promote (CPU tail, after simd): values a serial loop updates in
 * memory at addresses that do not change across it live in registers
 * during the loop.
 *
 * For each serial FOR L (innermost first) with an extent of at least 1,
 * and each buffer B that L stores to, B is promoted when every access of
 * B inside L (LOADs and STOREs, scalar or vector) is at an index that uses
 * no variable bound inside L (L's own, inner loops', LETs'), outside any
 * IF and without a mask (a predicated access), and any two of these indices are the same or
 * provably disjoint (their first elements differ by a constant at least the lanes of the lower
 * one). Each distinct index k gets a slot in a local buffer B.reg: L becomes ALLOCATE B.reg (local)
 * { B.reg[slot k] = B[index k]     for every slot L, with B[index k] read and written as B.reg[slot
 * k] B[index k] = B.reg[slot k]     for every slot L stores to
 *     }
 * The C compiler keeps a small local array accessed at constant indices in
 * registers (scalar replacement), which it does not do for the original
 * accesses of a parameter or a global temporary; so a tile accumulated in
 * memory across a loop over k (a GEMM whose k is blocked outside its tiles)
 * is accumulated in vector registers, as a cache_write to a local buffer
 * would be. Copying in and out once is the original's effect on B: L runs
 * at least once, every slot's address is read or written by L (so it is
 * valid), and B is accessed nowhere else inside L. Other threads touching
 * B[index] during L would race with L in the original too.
 *
 * Local buffers of at most MAX_BYTES are left to the C compiler (small_local).
 * At most MAX_SLOTS slots and MAX_BYTES bytes per loop (beyond the
 * register file the compiler spills, which costs what the memory accesses
 * cost); buffers are taken in order of first access until the budget is
 * used. Loops containing an intrinsic call, a barrier or an atomic update
 * are left alone. A cache hint (tex_prefetch) is no access: it keeps
 * naming memory, or the slot when its index is one.
 */
#include "lower/lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SLOTS = 32, MAX_BYTES = 2048, MAX_BUFFERS = 16, MAX_BOUND = 64 };

/* One distinct index of a promoted buffer. */
typedef struct {
    tex_expr *index; /* as in the loop: scalar or RAMP */
    int lanes;
    int64_t offset; /* in B.reg */
    bool stored;
} slot;

/* The accesses of one buffer inside L. */
typedef struct {
    texi_buffer *buf;
    bool stored, rejected;
    int n_slots;
    slot slots[MAX_SLOTS];
    texi_buffer *reg;
} candidate;

typedef struct {
    tex_ctx *ctx;
    int n_bound;
    const tex_expr *bound[MAX_BOUND]; /* variables bound inside L, L's own first */
    bool overflow;                    /* more bound variables than recorded: give up */
    int n_cands;
    candidate cands[MAX_BUFFERS];
    int if_depth; /* walking inside an IF of L */
    bool failed;  /* out of memory */
} promoter;

static bool collect_bound(const tex_stmt *s, void *ud)
{
    promoter *pm = ud;
    const tex_expr *v = s->kind == TEXI_STMT_FOR   ? s->u.loop.var
                        : s->kind == TEXI_STMT_LET ? s->u.let.var
                                                   : NULL;
    if (v && pm->n_bound < MAX_BOUND)
        pm->bound[pm->n_bound++] = v;
    else if (v)
        pm->overflow = true;
    return true;
}

static bool uses_bound(const promoter *pm, const tex_expr *e)
{
    for (int i = 0; i < pm->n_bound; i++)
        if (texi_expr_uses_var(e, pm->bound[i]))
            return true;
    return false;
}

static candidate *candidate_of(promoter *pm, texi_buffer *b)
{
    for (int i = 0; i < pm->n_cands; i++)
        if (texi_buffer_key(pm->cands[i].buf) == texi_buffer_key(b))
            return &pm->cands[i];
    if (pm->n_cands == MAX_BUFFERS)
        return NULL;
    candidate *c = &pm->cands[pm->n_cands++];
    memset(c, 0, sizeof *c);
    c->buf = b;
    return c;
}

/* The first element of an index (a RAMP's base) and its lanes. */
static tex_expr *first_element(tex_expr *index, int *lanes)
{
    *lanes = index->lanes;
    return index->kind == TEXI_EXPR_RAMP ? index->u.ramp.base : index;
}

/* Whether the elements of index a and b are provably disjoint. */
static bool disjoint(tex_expr *a, tex_expr *b)
{
    int la, lb;
    tex_expr *fa = first_element(a, &la), *fb = first_element(b, &lb);
    int64_t stride;
    if ((a->kind == TEXI_EXPR_RAMP &&
         (!texi_expr_is_int_const(a->u.ramp.stride, &stride) || stride != 1)) ||
        (b->kind == TEXI_EXPR_RAMP &&
         (!texi_expr_is_int_const(b->u.ramp.stride, &stride) || stride != 1)) ||
        fa->dtype != fb->dtype)
        return false;
    tex_expr *d = texi_binary(TEXI_EXPR_SUB, fa, fb);
    int64_t k;
    d = d ? texi_simplify(d, 0, NULL) : NULL;
    return d && texi_expr_is_int_const(d, &k) && (k >= la || -k >= lb);
}

/* Records one access of b at index (stored: a STORE) in its candidate; a
 * predicated one (mask) rejects it: the copies in and out would touch every
 * lane. */
static void note_access(promoter *pm, texi_buffer *b, tex_expr *index, const tex_expr *mask,
                        bool stored)
{
    candidate *c = candidate_of(pm, b);
    if (!c) {
        pm->overflow = true;
        return;
    }
    c->stored |= stored;
    if (c->rejected)
        return;
    if (pm->if_depth || mask || uses_bound(pm, index) ||
        (index->lanes > 1 && index->kind != TEXI_EXPR_RAMP)) {
        c->rejected = true;
        return;
    }
    for (int i = 0; i < c->n_slots; i++) {
        slot *s = &c->slots[i];
        if (s->lanes == index->lanes && texi_expr_equal(s->index, index)) {
            s->stored |= stored;
            return;
        }
        if (!disjoint(s->index, index)) {
            c->rejected = true;
            return;
        }
    }
    if (c->n_slots == MAX_SLOTS) {
        c->rejected = true;
        return;
    }
    c->slots[c->n_slots++] = (slot){index, index->lanes, 0, stored};
}

static bool visit_load(tex_expr *e, void *ud)
{
    if (e->kind == TEXI_EXPR_LOAD)
        note_access(ud, e->u.load.buf, e->u.load.index, e->u.load.mask, false);
    return true;
}

/* Notes every access of s's statements; false for a statement that stops
 * promotion in the whole loop. */
static bool scan(promoter *pm, const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_BARRIER:
        return false;
    case TEXI_STMT_ATTR: /* an atomic update stays one (other threads do it too) */
        if (texi_attr_is(s, TEXI_ATTR_ATOMIC))
            return false;
        if (texi_is_prefetch(s)) /* a cache hint accesses nothing */
            return true;
        break;
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            if (!scan(pm, s->u.seq.items[i]))
                return false;
        return true;
    case TEXI_STMT_IF: {
        texi_expr_visit(s->u.ifs.cond, visit_load, pm);
        pm->if_depth++;
        bool ok = scan(pm, s->u.ifs.then_s) && (!s->u.ifs.else_s || scan(pm, s->u.ifs.else_s));
        pm->if_depth--;
        return ok;
    }
    case TEXI_STMT_ALLOCATE: { /* a buffer of L's own: never promoted */
        candidate *c = candidate_of(pm, s->u.alloc.buf);
        if (!c)
            return false;
        c->rejected = true;
        break;
    }
    case TEXI_STMT_STORE:
        note_access(pm, s->u.store.buf, s->u.store.index, s->u.store.mask, true);
        break;
    default:
        break;
    }
    texi_stmt_visit_exprs(s, visit_load, pm);
    tex_stmt *body = texi_stmt_body(s);
    return !body || scan(pm, body);
}

/* ------------------------------------------------------------- rewriting */

static tex_expr *slot_index(tex_ctx *ctx, const slot *s)
{
    tex_expr *at = texi_int_imm(ctx, TEX_I32, s->offset);
    if (!at || s->lanes == 1)
        return at;
    tex_expr *one = texi_int_imm(ctx, TEX_I32, 1);
    return one ? texi_ramp_new(at, one, s->lanes) : NULL;
}

/* The slot of candidate c that index is, or NULL when b is not promoted. */
static const slot *slot_of(promoter *pm, const texi_buffer *b, const tex_expr *index,
                           candidate **owner)
{
    for (int i = 0; i < pm->n_cands; i++) {
        candidate *c = &pm->cands[i];
        if (!c->reg || texi_buffer_key(c->buf) != texi_buffer_key(b))
            continue;
        for (int k = 0; k < c->n_slots; k++)
            if (c->slots[k].lanes == index->lanes && texi_expr_equal(c->slots[k].index, index)) {
                *owner = c;
                return &c->slots[k];
            }
    }
    return NULL;
}

static tex_expr *to_register_load(tex_expr *e, void *ud)
{
    promoter *pm = ud;
    candidate *c;
    const slot *s =
        e->kind == TEXI_EXPR_LOAD ? slot_of(pm, e->u.load.buf, e->u.load.index, &c) : NULL;
    tex_expr *index = s ? slot_index(pm->ctx, s) : NULL;
    tex_expr *r = index ? texi_load_new(c->reg, index) : NULL;
    pm->failed |= s && !r;
    return r;
}

static tex_stmt *to_register_store(tex_stmt *st, void *ud)
{
    promoter *pm = ud;
    candidate *c;
    const slot *s =
        st->kind == TEXI_STMT_STORE ? slot_of(pm, st->u.store.buf, st->u.store.index, &c) : NULL;
    if (!s)
        return NULL;
    tex_expr *value = texi_expr_mutate(st->u.store.value, to_register_load, pm);
    tex_expr *index = value ? slot_index(pm->ctx, s) : NULL;
    tex_stmt *r = index ? texi_store_new(pm->ctx, c->reg, index, value) : NULL;
    pm->failed |= !r;
    return r ? r : st;
}

/* Copies between c's slots and its buffer: into the registers (in), or
 * back for the slots L stores to. Appends to items; the new count. */
static int copies(promoter *pm, candidate *c, bool in, tex_stmt **items, int n)
{
    for (int k = 0; k < c->n_slots && n >= 0; k++) {
        const slot *s = &c->slots[k];
        if (!in && !s->stored)
            continue;
        tex_expr *ri = slot_index(pm->ctx, s);
        tex_expr *reg = ri ? texi_load_new(c->reg, ri) : NULL;
        tex_expr *mem = ri ? texi_load_new(c->buf, s->index) : NULL;
        tex_stmt *st = !reg || !mem ? NULL
                       : in         ? texi_store_new(pm->ctx, c->reg, ri, mem)
                                    : texi_store_new(pm->ctx, c->buf, s->index, reg);
        if (!st)
            return -1;
        items[n++] = st;
    }
    return n;
}

/* A local buffer of constant size within MAX_BYTES (a B.reg of an inner
 * loop among them): the C compiler keeps it in registers where that pays.
 * A larger one (a GPU schedule's per-thread accumulators, one array over
 * the threads of a block on the CPU: gpu_to_cpu.c) is memory like any
 * other. */
static bool small_local(const texi_buffer *b)
{
    int64_t n = texi_dtype_bits(b->dtype) / 8;
    for (int d = 0; d < b->ndim; d++) {
        int64_t e;
        if (!texi_expr_is_int_const(b->shape[d], &e))
            return false;
        n *= e;
    }
    return b->scope == TEXI_SCOPE_LOCAL && n <= MAX_BYTES;
}

/* Picks the candidates within the budget and makes their B.reg buffers. */
static int choose(promoter *pm)
{
    int slots = 0, chosen = 0;
    int64_t bytes = 0;
    for (int i = 0; i < pm->n_cands; i++) {
        candidate *c = &pm->cands[i];
        if (c->rejected || !c->stored || small_local(c->buf))
            continue;
        int64_t lanes = 0, size = texi_dtype_bits(c->buf->dtype) / 8;
        for (int k = 0; k < c->n_slots; k++) {
            c->slots[k].offset = lanes;
            lanes += c->slots[k].lanes;
        }
        if (slots + c->n_slots > MAX_SLOTS || bytes + lanes * size > MAX_BYTES)
            continue;
        char name[128];
        snprintf(name, sizeof name, "%s.reg", c->buf->name);
        tex_expr *ext = texi_int_imm(pm->ctx, TEX_I32, lanes);
        c->reg = ext ? texi_buffer_new(pm->ctx, texi_strdup(pm->ctx, name), c->buf->dtype,
                                       TEXI_SCOPE_LOCAL, 1, &ext)
                     : NULL;
        if (!c->reg)
            return -1;
        slots += c->n_slots;
        bytes += lanes * size;
        chosen++;
    }
    return chosen;
}

/* Loop L with its promoted buffers (pm: L scanned), or L itself when
 * none qualifies; NULL on ENOMEM (recorded). */
static tex_stmt *promoted(promoter *pm, tex_stmt *loop)
{
    tex_ctx *ctx = pm->ctx;
    if (!scan(pm, loop->u.loop.body) || pm->overflow)
        return loop;
    int chosen = choose(pm);
    if (chosen <= 0)
        return chosen < 0 ? NULL : loop;
    tex_stmt *inner = texi_stmt_mutate(ctx, loop, to_register_store, to_register_load, pm);
    int total = 1;
    for (int i = 0; i < pm->n_cands; i++)
        total += pm->cands[i].reg ? 2 * pm->cands[i].n_slots : 0;
    tex_stmt **items = texi_alloc(ctx, sizeof *items * (size_t)total, "promote");
    if (!inner || pm->failed || !items)
        return NULL;
    int k = 0;
    for (int i = 0; i < pm->n_cands && k >= 0; i++)
        if (pm->cands[i].reg)
            k = copies(pm, &pm->cands[i], true, items, k);
    if (k >= 0)
        items[k++] = inner;
    for (int i = 0; i < pm->n_cands && k >= 0; i++)
        if (pm->cands[i].reg)
            k = copies(pm, &pm->cands[i], false, items, k);
    tex_stmt *r = k < 0 ? NULL : texi_seq_new(ctx, k, items);
    for (int i = pm->n_cands - 1; r && i >= 0; i--)
        if (pm->cands[i].reg)
            r = texi_allocate_new(ctx, pm->cands[i].reg, r);
    return r;
}

/* Loop s with its (already rewritten) body: see the top comment. */
static tex_stmt *promote_loop(tex_ctx *ctx, tex_stmt *s, tex_stmt *body, void *ud)
{
    (void)ud;
    tex_stmt *loop = texi_stmt_with_body(ctx, s, body);
    int64_t n;
    if (!loop || loop->u.loop.for_kind != TEXI_FOR_SERIAL ||
        !texi_expr_is_int_const(loop->u.loop.extent, &n) || n < 1)
        return loop;
    promoter *pm = calloc(1, sizeof *pm); /* scratch, large: freed below */
    if (!pm) {
        texi_error(ctx, TEX_ENOMEM, "tex_build: out of memory (pass promote)");
        return NULL;
    }
    pm->ctx = ctx;
    texi_stmt_visit(loop, collect_bound, pm);
    tex_stmt *r = promoted(pm, loop);
    free(pm);
    return r;
}

int texi_pass_promote(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    return texi_pass_result(lw, texi_stmt_map_loops(lw->ctx, in, promote_loop, NULL), out);
}
