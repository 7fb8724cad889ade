/*
 * thread_sync (device.h): inserts BARRIER(shared) into one kernel body
 * wherever shared memory written by one thread may be read or overwritten
 * by another thread of the block without a barrier in between (TVM's
 * StorageSync planner, on tex's structured loop AST).
 *
 * Input: a kernel body (or, for the CPU, a whole function) with thread-bound
 * loops and SHARED buffers. Only SHARED buffers are analysed: local memory
 * is private, and global memory shared between threads of a block is the
 * cross-thread reduction's business (its pass inserts the barrier it
 * needs). An ATTR "thread_allreduce" counts as a barrier
 * (codegen_cuda_allreduce.c: every thread arrives, it ends with
 * __syncthreads()).
 * Output: the same body with BARRIERs only where all threads of the block
 * arrive. When two accesses conflict: the comment opening the accesses
 * section below; where the barriers go: the one opening the planning section.
 *
 * Not done: proving disjointness of index ranges (beyond the ownership
 * rules), removing existing barriers, or moving barriers out of loops.
 */
#include "ir/arith.h"
#include "lower/device.h"

#include <stdlib.h>
#include <string.h>

#define MAX_MAP 256 /* enclosing loops and LETs of one kernel */
#define N_TTAGS 3   /* THREAD_X .. THREAD_Z */
#define MAX_INJ 8   /* terms of an index the one-to-one rule looks at */

typedef struct {
    const void *key; /* texi_buffer_key of the shared buffer */
    tex_expr *idx;   /* canonical index; NULL: unknown (conflicts with everything) */
    bool write;
    bool pure;                /* idx uses only every active T_t, block indices and parameters */
    tex_expr *owner;          /* h of the ownership rule (accesses section), or NULL */
    int64_t owner_g;          /* G: every other term is a multiple of it (0: there is none) */
    int64_t owner_span;       /* largest h + 1 */
    bool db;                  /* a write under ATTR "double_buffer_write" */
    bool carried;             /* from the previous iteration of the loop being planned */
    int n_inj;                /* the one-to-one rule (accesses section): terms of idx; 0: not */
    int64_t inj_ext[MAX_INJ]; /* their variables' extents, in the form's order */
} access;

typedef struct {
    access *a;
    int n, cap;
} access_set;

typedef struct {
    texi_lower *lw;
    int rc;
    tex_expr *canon[N_TTAGS];              /* T_x, T_y, T_z */
    bool active[N_TTAGS];                  /* the kernel has a loop over the tag with extent != 1 */
    int64_t launch[N_TTAGS];               /* largest constant extent of the tag's loops; -1
                                              when one is not constant, 0 when none */
    tex_expr *from[MAX_MAP], *to[MAX_MAP]; /* canonicalization */
    int n_map;
    tex_expr *serial[MAX_MAP];   /* variables of enclosing serial loops */
    int64_t serial_ext[MAX_MAP]; /* their extents when constant and from 0, else -1 */
    int n_serial;
    bool db; /* inside ATTR "double_buffer_write" */
} sync_pass;

/* ------------------------------------------------------------ sets */

static bool same_access(const access *a, const access *b)
{
    return a->key == b->key && a->write == b->write && a->db == b->db && a->carried == b->carried &&
           a->pure == b->pure && a->owner_g == b->owner_g && a->n_inj == b->n_inj &&
           memcmp(a->inj_ext, b->inj_ext, sizeof a->inj_ext[0] * (size_t)a->n_inj) == 0 &&
           (a->owner == b->owner ||
            (a->owner && b->owner && texi_expr_equal(a->owner, b->owner))) &&
           (a->idx == b->idx || (a->idx && b->idx && texi_expr_equal(a->idx, b->idx)));
}

static int set_add(sync_pass *p, access_set *s, access a)
{
    for (int i = 0; i < s->n; i++)
        if (same_access(&s->a[i], &a))
            return 0;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        access *na = realloc(s->a, sizeof *na * (size_t)cap);
        if (!na)
            return p->rc =
                       texi_error(p->lw->ctx, TEX_ENOMEM, "tex_build: thread_sync: out of memory");
        s->a = na;
        s->cap = cap;
    }
    s->a[s->n++] = a;
    return 0;
}

static int set_union(sync_pass *p, access_set *dst, const access_set *src)
{
    for (int i = 0; i < src->n; i++)
        TEXI_TRY(set_add(p, dst, src->a[i]));
    return 0;
}

static int set_copy(sync_pass *p, access_set *dst, const access_set *src)
{
    *dst = (access_set){0};
    return set_union(p, dst, src);
}

static void set_free(access_set *s)
{
    free(s->a);
    *s = (access_set){0};
}

/* ------------------------------------------------------------ canonical form */

static tex_expr *canon(sync_pass *p, tex_expr *e)
{
    tex_expr *r = p->n_map ? texi_substitute(e, p->n_map, p->from, p->to) : e;
    if (!r && !p->rc)
        p->rc = TEX_ENOMEM;
    return r ? r : e;
}

static int push_map(sync_pass *p, tex_expr *var, tex_expr *value)
{
    if (p->n_map == MAX_MAP || !value)
        return p->rc = texi_error(p->lw->ctx, value ? TEX_EUNAVAILABLE : TEX_ENOMEM,
                                  "tex_build: thread_sync: more than %d nested loops", MAX_MAP);
    p->from[p->n_map] = var;
    p->to[p->n_map++] = value;
    return 0;
}

static bool is_thread_tag(int tag)
{
    return tag >= (int)TEX_THREAD_X && tag <= (int)TEX_THREAD_Z;
}

/* Enters loop s for the analysis: thread variables map to min + T_t,
 * serial ones are remembered. Undone by leave_loop(p, mark). */
static int enter_loop(sync_pass *p, const tex_stmt *s)
{
    int tag = s->u.loop.thread_tag;
    tex_expr *var = s->u.loop.var;
    if (s->u.loop.for_kind == TEXI_FOR_THREAD && is_thread_tag(tag)) {
        tex_expr **c = &p->canon[tag - (int)TEX_THREAD_X];
        if (!*c && !(*c = texi_var_new(p->lw->ctx, "T", var->dtype)))
            return p->rc = TEX_ENOMEM;
        tex_expr *t = texi_convert(*c, var->dtype), *min = canon(p, s->u.loop.min);
        int64_t m;
        tex_expr *v = texi_expr_is_int_const(min, &m) && m == 0
                          ? t
                          : (t ? texi_binary(TEXI_EXPR_ADD, min, t) : NULL);
        return push_map(p, var, v);
    }
    if (s->u.loop.for_kind == TEXI_FOR_THREAD && tag >= (int)TEX_BLOCK_X && tag <= (int)TEX_BLOCK_Z)
        return 0;
    if (p->n_serial == MAX_MAP)
        return p->rc = texi_error(p->lw->ctx, TEX_EUNAVAILABLE,
                                  "tex_build: thread_sync: more than %d nested loops", MAX_MAP);
    int64_t m, e;
    bool from0 = texi_expr_is_int_const(s->u.loop.min, &m) && m == 0;
    p->serial_ext[p->n_serial] =
        from0 && texi_expr_is_int_const(s->u.loop.extent, &e) && e > 0 ? e : -1;
    p->serial[p->n_serial++] = var;
    return 0;
}

typedef struct {
    int n_map, n_serial;
} mark;

static mark save(const sync_pass *p)
{
    return (mark){p->n_map, p->n_serial};
}

static void restore(sync_pass *p, mark m)
{
    p->n_map = m.n_map;
    p->n_serial = m.n_serial;
}

typedef struct {
    const sync_pass *p;
    bool thread[N_TTAGS];
    bool serial, any_thread;
} var_use;

static bool note_var(tex_expr *e, void *ud)
{
    var_use *u = ud;
    if (e->kind != TEXI_EXPR_VAR)
        return true;
    for (int t = 0; t < N_TTAGS; t++)
        if (e == u->p->canon[t])
            u->thread[t] = u->any_thread = true;
    for (int i = 0; i < u->p->n_serial; i++)
        u->serial |= e == u->p->serial[i];
    return true;
}

static var_use uses(const sync_pass *p, tex_expr *e)
{
    var_use u = {.p = p};
    if (e)
        texi_expr_visit(e, note_var, &u);
    return u;
}

/* Whether canonical e is the same in every thread of the block. */
static bool uniform(sync_pass *p, tex_expr *e)
{
    return !uses(p, canon(p, e)).any_thread;
}

/* ------------------------------------------------------------ accesses */

/*
 * Accesses. Each LOAD / STORE of a shared buffer is an access (buffer,
 * index, read or write). Indices are compared after canonicalization: the
 * variable of a loop bound to threadIdx.t becomes min + T_t (one variable
 * per tag, so different nests bound to the same tag agree) and a LET
 * variable its value. Two accesses of one buffer, at least one a write,
 * conflict unless
 *   - both indices are the same expression using only T_t of every tag the
 *     kernel spreads over (extent not 1), block indices and parameters (no
 *     serial-loop variable): then each element is touched by one thread
 *     only, which orders its own accesses (conservative where the index is
 *     not one-to-one in the threads, e.g. T_x / 2: that is treated the same,
 *     as TVM does); or
 *   - both indices split, as canonical sums, into rest + h with the same
 *     h: h the terms over thread indices, linear with distinct tags and
 *     mixed-radix coefficients (each at least the span of the smaller ones,
 *     so one-to-one in the threads), over every active T_t and no serial
 *     variable, with 0 <= h < G over the threads' launch ranges; rest the
 *     other terms, each (constant included) a multiple of G, one G for
 *     both accesses (the gcd of theirs). Equal
 *     elements then have equal h, hence one thread: a cooperative fetch
 *     S[o*256 + T_y*16 + T_x] in a serial loop over o, or the two halves
 *     of a double buffer, need no barrier between a thread's own accesses;
 *   - both indices are the same expression, a linear sum over distinct
 *     atoms of known range (every active T_t, or both its digits T_t / c
 *     and T_t % c for one constant c > 0; serial-loop variables of loops
 *     from 0 with constant extents, x % c for a constant c > 0; the same
 *     extents for both accesses) with positive mixed-radix coefficients,
 *     plus a constant: each atom's value, T_t's included, is then a
 *     function of the element, so equal elements have one thread (a
 *     cooperative fetch S[o*1088 + p*32 + T_y*136 + T_x] over serial o and
 *     p, whose padded rows defeat the ownership rule; a k-major fetch
 *     S[o*32 + T_y*2 + T_x/8 + T_x%8*132]); or
 *   - the earlier one is a write inside ATTR "double_buffer_write"
 *     (double_buffer.c: the fetch of step k+1 into the other half) and the
 *     later one a read in the same loop iteration (TVM's rule: it reads the
 *     other half; the loop-carried pair is a conflict).
 * An access inside a loop over a serial variable therefore always conflicts
 * with another access of the buffer by a different statement or iteration,
 * unless its index avoids the variable: conservative, never unsafe.
 */

/* The thread tag term t is linear in (coef * T_tag), or -1. */
static int linear_tag(const sync_pass *p, const texi_term *t)
{
    for (int g = 0; t->n_atoms == 1 && t->coef > 0 && g < N_TTAGS; g++)
        if (t->atoms[0] == p->canon[g])
            return g;
    return -1;
}

/* Whether the thread terms th[0..n) of a form make an h of the ownership
 * rule: linear, distinct tags with constant launch extents, every active
 * tag, mixed radix (each coefficient above the largest value of the
 * smaller terms); *span = largest h + 1. */
static bool owner_terms_ok(const sync_pass *p, const texi_term *th, int n, int64_t *span)
{
    bool seen[N_TTAGS] = {false};
    int order[N_TTAGS];
    if (n > N_TTAGS)
        return false;
    for (int i = 0; i < n; i++) {
        int g = linear_tag(p, &th[i]);
        if (g < 0 || seen[g] || p->launch[g] <= 0)
            return false;
        seen[g] = true;
        order[i] = i;
    }
    for (int g = 0; g < N_TTAGS; g++)
        if (p->active[g] && !seen[g])
            return false;
    for (int i = 1; i < n; i++) /* by coefficient, smallest first */
        for (int j = i; j > 0 && th[order[j]].coef < th[order[j - 1]].coef; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    int64_t reach = 0; /* largest value of the terms so far */
    for (int i = 0; i < n; i++) {
        const texi_term *t = &th[order[i]];
        int64_t ext = p->launch[linear_tag(p, t)];
        if (t->coef <= reach || ext > INT64_MAX / 2 / t->coef)
            return false;
        reach += t->coef * (ext - 1);
    }
    *span = reach + 1;
    return true;
}

/* Sets a->owner (the ownership rule above) for canonical index idx. */
static void find_owner(sync_pass *p, access *a, tex_expr *idx)
{
    texi_simp s;
    texi_simp_init(&s, p->lw->ctx, 0, NULL);
    texi_form *f = texi_form_of(&s, idx);
    texi_term *th = f ? texi_simp_alloc(&s, sizeof *th * (size_t)(f->n + 1)) : NULL;
    int n_th = 0;
    int64_t g = f ? f->k : 0, span = 0;
    bool ok = th && !f->wrapped;
    for (int i = 0; ok && i < f->n; i++) {
        bool thread = false;
        for (int j = 0; j < f->terms[i].n_atoms; j++) {
            var_use u = uses(p, f->terms[i].atoms[j]);
            thread |= u.any_thread;
            ok &= !(u.any_thread && u.serial);
        }
        if (thread)
            th[n_th++] = f->terms[i];
        else
            g = texi_arith_gcd(g, f->terms[i].coef);
    }
    if (ok && owner_terms_ok(p, th, n_th, &span) && (g == 0 || g >= span)) {
        a->owner = texi_form_expr(&s, texi_form_make(&s, f->t, th, n_th, 0));
        a->owner_g = g < 0 ? -g : g;
        a->owner_span = span;
    }
    texi_simp_fini(&s);
}

/* The tag of term t when its atom is a digit of a thread index, T_tag / c
 * or T_tag % c for a constant c > 0 (*c set, *div: which), else -1. */
static int digit_tag(const sync_pass *p, const texi_term *t, int64_t *c, bool *div)
{
    if (t->n_atoms != 1 || t->coef <= 0)
        return -1;
    const tex_expr *x = t->atoms[0];
    if ((x->kind != TEXI_EXPR_FLOORDIV && x->kind != TEXI_EXPR_FLOORMOD) ||
        !texi_expr_is_int_const(x->u.bin.b, c) || *c <= 0)
        return -1;
    *div = x->kind == TEXI_EXPR_FLOORDIV;
    for (int g = 0; g < N_TTAGS; g++)
        if (x->u.bin.a == p->canon[g])
            return g;
    return -1;
}

/* The extent of the range that term t's variable runs over (a thread index,
 * a digit of one, or a serial loop from 0 with a constant extent), or -1
 * when t is not such a linear term. */
static int64_t inj_extent(const sync_pass *p, const texi_term *t)
{
    int64_t c;
    bool div;
    if (t->n_atoms != 1 || t->coef <= 0)
        return -1;
    int g = linear_tag(p, t);
    if (g >= 0)
        return p->launch[g] > 0 ? p->launch[g] : -1;
    g = digit_tag(p, t, &c, &div);
    if (g >= 0 && div) /* T / c */
        return p->launch[g] > 0 ? (p->launch[g] + c - 1) / c : -1;
    const tex_expr *x = t->atoms[0];
    if (x->kind == TEXI_EXPR_FLOORMOD && texi_expr_is_int_const(x->u.bin.b, &c) && c > 0)
        return c; /* a double buffer's half, (k + 1) % 2; T % c */
    for (int i = p->n_serial - 1; i >= 0; i--)
        if (t->atoms[0] == p->serial[i])
            return p->serial_ext[i];
    return -1;
}

/* Sets a->n_inj and a->inj_ext (the one-to-one rule above) for canonical
 * index idx: its terms, sorted by coefficient, each above the largest value
 * of the smaller ones. */
static void find_injective(sync_pass *p, access *a, tex_expr *idx)
{
    texi_simp s;
    texi_simp_init(&s, p->lw->ctx, 0, NULL);
    texi_form *f = texi_form_of(&s, idx);
    int n = f && !f->wrapped && f->n <= MAX_INJ ? f->n : 0;
    int order[MAX_INJ];
    bool ok = n > 0, seen[N_TTAGS] = {false};
    int64_t div_c[N_TTAGS] = {0}, mod_c[N_TTAGS] = {0}, dc;
    for (int i = 0; ok && i < n; i++) {
        bool div;
        int g = linear_tag(p, &f->terms[i]);
        if (g >= 0)
            seen[g] = true;
        else if ((g = digit_tag(p, &f->terms[i], &dc, &div)) >= 0)
            *(div ? &div_c[g] : &mod_c[g]) = dc;
        a->inj_ext[i] = inj_extent(p, &f->terms[i]);
        ok = a->inj_ext[i] > 0;
        for (int j = 0; ok && j < i; j++)
            ok = f->terms[j].atoms[0] != f->terms[i].atoms[0];
        order[i] = i;
    }
    for (int g = 0; g < N_TTAGS; g++) /* every thread of the block tells apart */
        ok &= seen[g] || (div_c[g] && div_c[g] == mod_c[g]) || !p->active[g];
    for (int i = 1; ok && i < n; i++) /* by coefficient, smallest first */
        for (int j = i; j > 0 && f->terms[order[j]].coef < f->terms[order[j - 1]].coef; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    int64_t reach = 0;
    for (int i = 0; ok && i < n; i++) {
        int64_t c = f->terms[order[i]].coef, e = a->inj_ext[order[i]];
        ok = c > reach && e <= INT64_MAX / 4 / c;
        reach += c * (e - 1);
    }
    a->n_inj = ok ? n : 0;
    texi_simp_fini(&s);
}

static int add_access(sync_pass *p, access_set *s, const texi_buffer *b, tex_expr *idx, bool write)
{
    if (b->scope != TEXI_SCOPE_SHARED)
        return 0;
    access a = {.key = texi_buffer_key(b), .write = write, .db = write && p->db};
    if (idx) {
        a.idx = canon(p, idx);
        var_use u = uses(p, a.idx);
        a.pure = !u.serial;
        for (int t = 0; t < N_TTAGS; t++)
            a.pure &= u.thread[t] || !p->active[t];
        find_owner(p, &a, a.idx);
        find_injective(p, &a, a.idx);
    }
    return set_add(p, s, a);
}

typedef struct {
    sync_pass *p;
    access_set *s;
} load_walk;

static bool note_load(tex_expr *e, void *ud)
{
    load_walk *w = ud;
    if (e->kind == TEXI_EXPR_LOAD)
        add_access(w->p, w->s, e->u.load.buf, e->u.load.index, false);
    return true;
}

static int reads(sync_pass *p, access_set *s, tex_expr *e)
{
    load_walk w = {p, s};
    if (e)
        texi_expr_visit(e, note_load, &w);
    return p->rc;
}

static int collect(sync_pass *p, const tex_stmt *s, access_set *out);

static int collect_for(sync_pass *p, const tex_stmt *s, access_set *out)
{
    TEXI_TRY(reads(p, out, s->u.loop.min));
    TEXI_TRY(reads(p, out, s->u.loop.extent));
    mark m = save(p);
    int rc = enter_loop(p, s);
    if (rc == 0)
        rc = collect(p, s->u.loop.body, out);
    restore(p, m);
    return rc;
}

/* The tiles of an intrinsic call, at unknown indices: its inputs are read,
 * its output (the last argument) read and written. */
static int collect_intrin(sync_pass *p, const tex_stmt *s, access_set *out)
{
    int n = s->u.intrin.n_args;
    for (int i = 0; i < n; i++) {
        const texi_buffer *b = s->u.intrin.args[i].buf;
        if (b) {
            TEXI_TRY(add_access(p, out, b, NULL, false));
            if (i == n - 1)
                TEXI_TRY(add_access(p, out, b, NULL, true));
        }
    }
    return 0;
}

/* Visitor of collect(): the accesses of one statement. Loops, LETs and
 * ATTRs collect their bodies themselves, under the loop's or LET's mapping
 * and the double-buffer flag; "thread_allreduce" is not looked into. Stops
 * at the first error (p->rc). */
static bool collect_step(const tex_stmt *s, void *ud)
{
    load_walk *w = ud;
    sync_pass *p = w->p;
    if (p->rc)
        return false;
    if (s->kind == TEXI_STMT_FOR) {
        collect_for(p, s, w->s);
        return false;
    }
    if (s->kind == TEXI_STMT_LET) {
        mark m = save(p);
        if (reads(p, w->s, s->u.let.value) == 0 &&
            push_map(p, s->u.let.var, canon(p, s->u.let.value)) == 0)
            collect(p, s->u.let.body, w->s);
        restore(p, m);
        return false;
    }
    if (s->kind == TEXI_STMT_ATTR) {
        bool db = p->db;
        p->db |= s->u.attr.id == TEXI_ATTR_DOUBLE_BUFFER_WRITE;
        if (s->u.attr.id != TEXI_ATTR_THREAD_ALLREDUCE && reads(p, w->s, s->u.attr.value) == 0)
            collect(p, s->u.attr.body, w->s);
        p->db = db;
        return false;
    }
    if (s->kind == TEXI_STMT_INTRIN)
        return collect_intrin(p, s, w->s) == 0;
    texi_stmt_visit_exprs(s, note_load, w); /* STORE, IF, EVALUATE */
    if (s->kind == TEXI_STMT_STORE && p->rc == 0)
        add_access(p, w->s, s->u.store.buf, s->u.store.index, true);
    return p->rc == 0;
}

/* Every shared access of s, in any order. */
static int collect(sync_pass *p, const tex_stmt *s, access_set *out)
{
    load_walk w = {p, out};
    texi_stmt_visit(s, collect_step, &w);
    return p->rc;
}

static bool head(sync_pass *p, const tex_stmt *s, access_set *out, int *rc);

static bool head_list(sync_pass *p, tex_stmt *const *items, int n, access_set *out, int *rc)
{
    for (int i = 0; i < n && *rc == 0; i++)
        if (head(p, items[i], out, rc))
            return true;
    return false;
}

static bool head_for(sync_pass *p, const tex_stmt *s, access_set *out, int *rc)
{
    int64_t ext;
    bool syncs = false;
    mark m = save(p);
    if ((*rc = reads(p, out, s->u.loop.min)) == 0 && (*rc = reads(p, out, s->u.loop.extent)) == 0 &&
        (*rc = enter_loop(p, s)) == 0) {
        if (s->u.loop.for_kind == TEXI_FOR_THREAD && s->u.loop.thread_tag != (int)TEX_VTHREAD)
            syncs = head(p, s->u.loop.body, out, rc);
        else if (head(p, s->u.loop.body, out, rc))
            syncs = texi_expr_is_int_const(s->u.loop.extent, &ext) && ext > 0;
        else if (*rc == 0)
            *rc = collect(p, s->u.loop.body, out);
    }
    restore(p, m);
    return syncs;
}

/* Adds to out the accesses of s that may happen before s passes a
 * barrier; true when every execution of s passes one (so later accesses
 * need no check against what was pending before s). */
static bool head(sync_pass *p, const tex_stmt *s, access_set *out, int *rc)
{
    if (!s || *rc)
        return false;
    if (texi_stmt_is_sync(s))
        return true;
    switch (s->kind) {
    case TEXI_STMT_SEQ:
        return head_list(p, s->u.seq.items, s->u.seq.n, out, rc);
    case TEXI_STMT_ALLOCATE:
        return head(p, s->u.alloc.body, out, rc);
    case TEXI_STMT_FOR:
        return head_for(p, s, out, rc);
    case TEXI_STMT_IF: {
        if ((*rc = reads(p, out, s->u.ifs.cond)) < 0)
            return false;
        bool t = head(p, s->u.ifs.then_s, out, rc);
        return head(p, s->u.ifs.else_s, out, rc) && t;
    }
    case TEXI_STMT_LET: {
        mark m = save(p);
        bool r = false;
        if ((*rc = reads(p, out, s->u.let.value)) == 0 &&
            (*rc = push_map(p, s->u.let.var, canon(p, s->u.let.value))) == 0)
            r = head(p, s->u.let.body, out, rc);
        restore(p, m);
        return r;
    }
    case TEXI_STMT_ATTR: {
        bool db = p->db, r = false;
        p->db |= s->u.attr.id == TEXI_ATTR_DOUBLE_BUFFER_WRITE;
        if ((*rc = reads(p, out, s->u.attr.value)) == 0)
            r = head(p, s->u.attr.body, out, rc);
        p->db = db;
        return r;
    }
    case TEXI_STMT_STORE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_KIND_COUNT:
        *rc = collect(p, s, out);
        return false;
    }
    return false;
}

static bool conflict(const access *prev, const access *cur)
{
    if (prev->key != cur->key || (!prev->write && !cur->write))
        return false;
    if (prev->db && !cur->write && !prev->carried)
        return false;
    /* one G for both: rests that are multiples of 96 and of 64 can differ by 32 */
    int64_t g = texi_arith_gcd(prev->owner_g, cur->owner_g);
    if (prev->owner && cur->owner && texi_expr_equal(prev->owner, cur->owner) &&
        (g == 0 || g >= cur->owner_span))
        return false;
    bool same = prev->idx && cur->idx && texi_expr_equal(prev->idx, cur->idx);
    if (same && prev->n_inj && prev->n_inj == cur->n_inj &&
        memcmp(prev->inj_ext, cur->inj_ext, sizeof prev->inj_ext[0] * (size_t)cur->n_inj) == 0)
        return false;
    return !(prev->pure && cur->pure && same);
}

static bool conflicts(const access_set *pending, const access_set *item)
{
    for (int i = 0; i < item->n; i++)
        for (int j = 0; j < pending->n; j++)
            if (conflict(&pending->a[j], &item->a[i]))
                return true;
    return false;
}

/* ------------------------------------------------------------ planning */

/*
 * Planning. A list of statements (a SEQ, or one statement) is scanned in
 * order with the set of accesses done since the last barrier ("pending").
 * A leaf's accesses are checked against the pending set; a conflict puts a
 * BARRIER before it and empties the set; then its accesses are added. A
 * loop (serial or thread-bound) or an IF is checked the same way with its
 * "head" (the accesses it may make before passing a barrier of its own; all
 * of them when some execution passes none), so that a conflict with what
 * precedes it gets one unconditional barrier before it, at the level of the
 * thread loops' parent where possible, rather than one per iteration or
 * per branch; then it is planned inside. Other containers (SEQ, ALLOCATE,
 * LET, ATTR, block loops) run once and are entered directly with the
 * pending set, so the barrier lands right before the first conflicting
 * statement inside. Containers: SEQ, ALLOCATE, LET,
 * ATTR, thread and block loops, serial/unrolled loops with
 * thread-independent bounds, IFs with thread-independent conditions.
 * Anything else (a thread-dependent IF or loop bound, a vectorized loop,
 * STORE, EVALUATE, INTRIN) is a leaf and never gets a barrier inside, so
 * every barrier lies where all threads of the block arrive: inside
 * thread-bound loops only at the level of their bodies' statements (the
 * CUDA emitter then defers a narrower loop's guard to the statements
 * without barriers, and the interpreter runs the loop's threads in
 * lock-step).
 * Loops: a serial loop's body is planned twice, the second time starting
 * from the accesses pending at the end of the first iteration (marked
 * loop-carried), which finds the conflicts between iterations (e.g. the
 * fetch of step k+1 overwriting what step k computed from: the barrier at
 * the top of the body). Thread and block loops are not repeated per thread
 * or block: they are planned once. An IF plans both branches from the same
 * set and continues with their union.
 */

static tex_stmt *plan_list(sync_pass *p, tex_stmt *s, access_set *st);

/* Whether barriers may go inside s (planning section: containers). */
static bool is_container(sync_pass *p, const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_FOR:
        if (s->u.loop.for_kind == TEXI_FOR_THREAD)
            return true;
        return s->u.loop.for_kind != TEXI_FOR_VECTORIZED && uniform(p, s->u.loop.min) &&
               uniform(p, s->u.loop.extent);
    case TEXI_STMT_IF:
        return uniform(p, s->u.ifs.cond);
    case TEXI_STMT_ATTR:
        return s->u.attr.id != TEXI_ATTR_THREAD_ALLREDUCE;
    case TEXI_STMT_LET:
    case TEXI_STMT_ALLOCATE:
    case TEXI_STMT_SEQ:
        return true;
    case TEXI_STMT_STORE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_KIND_COUNT:
        return false;
    }
    return false;
}

static bool runs_once_per_block(const tex_stmt *s)
{
    return s->u.loop.for_kind == TEXI_FOR_THREAD && s->u.loop.thread_tag >= (int)TEX_BLOCK_X &&
           s->u.loop.thread_tag <= (int)TEX_THREAD_Z;
}

/* Marks the entries of s that are not in `before` (those of the loop's
 * first iteration) as loop-carried; entries pending from before the loop
 * keep their flags. */
static void mark_carried(access_set *s, const access_set *before)
{
    for (int i = 0; i < s->n; i++) {
        bool old = false;
        for (int j = 0; j < before->n && !old; j++)
            old = same_access(&s->a[i], &before->a[j]);
        s->a[i].carried |= !old;
    }
}

/* After the loop: the entries mark_carried marked are this iteration's
 * accesses again for the enclosing level (an inner fetch loop must not
 * make its writes look carried to the loop around it). */
static void clear_carried(access_set *s, const access_set *before)
{
    for (int i = 0; i < s->n; i++) {
        bool kept = false;
        for (int j = 0; j < before->n && !kept; j++)
            kept = same_access(&s->a[i], &before->a[j]);
        s->a[i].carried &= kept;
    }
}

/* A serial loop's body planned twice (planning section). */
static tex_stmt *plan_serial_body(sync_pass *p, const tex_stmt *s, access_set *st)
{
    access_set in, carry;
    int64_t ext;
    bool may_skip = !(texi_expr_is_int_const(s->u.loop.extent, &ext) && ext > 0);
    if (set_copy(p, &in, st) < 0)
        return NULL;
    tex_stmt *body = plan_list(p, s->u.loop.body, st);
    if (body && set_copy(p, &carry, st) == 0) {
        mark_carried(&carry, &in);
        body = plan_list(p, body, &carry);
        clear_carried(&carry, &in);
        if (set_union(p, st, &carry) < 0 || (may_skip && set_union(p, st, &in) < 0))
            body = NULL;
        set_free(&carry);
    }
    set_free(&in);
    return body;
}

static tex_stmt *plan_for(sync_pass *p, tex_stmt *s, access_set *st)
{
    if (reads(p, st, s->u.loop.min) < 0 || reads(p, st, s->u.loop.extent) < 0)
        return NULL;
    mark m = save(p);
    tex_stmt *body = NULL;
    if (enter_loop(p, s) == 0)
        body =
            runs_once_per_block(s) ? plan_list(p, s->u.loop.body, st) : plan_serial_body(p, s, st);
    restore(p, m);
    return texi_stmt_with_body(p->lw->ctx, s, body);
}

static tex_stmt *plan_if(sync_pass *p, tex_stmt *s, access_set *st)
{
    access_set other;
    if (reads(p, st, s->u.ifs.cond) < 0 || set_copy(p, &other, st) < 0)
        return NULL;
    tex_stmt *t = plan_list(p, s->u.ifs.then_s, st);
    tex_stmt *f = s->u.ifs.else_s ? plan_list(p, s->u.ifs.else_s, &other) : NULL;
    bool ok = t && (f || !s->u.ifs.else_s) && set_union(p, st, &other) == 0;
    set_free(&other);
    if (!ok)
        return NULL;
    if (t == s->u.ifs.then_s && f == s->u.ifs.else_s)
        return s;
    return texi_if_new(p->lw->ctx, s->u.ifs.cond, t, f);
}

static tex_stmt *plan_let(sync_pass *p, tex_stmt *s, access_set *st)
{
    if (reads(p, st, s->u.let.value) < 0)
        return NULL;
    mark m = save(p);
    tex_stmt *body = NULL;
    if (push_map(p, s->u.let.var, canon(p, s->u.let.value)) == 0)
        body = plan_list(p, s->u.let.body, st);
    restore(p, m);
    return texi_stmt_with_body(p->lw->ctx, s, body);
}

static tex_stmt *plan_attr(sync_pass *p, tex_stmt *s, access_set *st)
{
    bool db = p->db;
    p->db |= s->u.attr.id == TEXI_ATTR_DOUBLE_BUFFER_WRITE;
    tex_stmt *body = reads(p, st, s->u.attr.value) < 0 ? NULL : plan_list(p, s->u.attr.body, st);
    p->db = db;
    return texi_stmt_with_body(p->lw->ctx, s, body);
}

/* Container s planned inside, its accesses added to st. */
static tex_stmt *plan_container(sync_pass *p, tex_stmt *s, access_set *st)
{
    switch (s->kind) {
    case TEXI_STMT_FOR:
        return plan_for(p, s, st);
    case TEXI_STMT_IF:
        return plan_if(p, s, st);
    case TEXI_STMT_LET:
        return plan_let(p, s, st);
    case TEXI_STMT_ATTR:
        return plan_attr(p, s, st);
    case TEXI_STMT_ALLOCATE:
        return texi_stmt_with_body(p->lw->ctx, s, plan_list(p, s->u.alloc.body, st));
    case TEXI_STMT_SEQ:
        return plan_list(p, s, st);
    case TEXI_STMT_STORE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    return s;
}

/* Containers whose head is checked before them (planning section): IFs and
 * loops other than block loops. */
static bool is_hoisting(const tex_stmt *s)
{
    if (s->kind == TEXI_STMT_IF)
        return true;
    int tag = s->u.loop.thread_tag;
    return s->kind == TEXI_STMT_FOR && !(s->u.loop.for_kind == TEXI_FOR_THREAD &&
                                         tag >= (int)TEX_BLOCK_X && tag <= (int)TEX_BLOCK_Z);
}

/* One item of a list: a barrier before it when needed, then the item. */
static int plan_item(sync_pass *p, tex_stmt *item, access_set *st, tex_stmt **out, int *n_out)
{
    if (texi_stmt_is_sync(item)) {
        st->n = 0;
        out[(*n_out)++] = item;
        return 0;
    }
    access_set acc = {0};
    int rc = 0;
    bool container = is_container(p, item);
    if (container && (is_hoisting(item)))
        head(p, item, &acc, &rc);
    else if (!container)
        rc = collect(p, item, &acc);
    if (rc == 0 && conflicts(st, &acc)) {
        if (!(out[(*n_out)++] = texi_barrier_new(p->lw->ctx, TEXI_SCOPE_SHARED)))
            rc = TEX_ENOMEM;
        st->n = 0;
    }
    if (rc == 0 && container) {
        tex_stmt *r = plan_container(p, item, st);
        rc = r ? 0 : (p->rc ? p->rc : TEX_ENOMEM);
        out[(*n_out)++] = r;
    } else if (rc == 0) {
        rc = set_union(p, st, &acc);
        out[(*n_out)++] = item;
    }
    set_free(&acc);
    return rc;
}

/* s as a list of statements (a SEQ's items, or s alone), planned. */
static tex_stmt *plan_list(sync_pass *p, tex_stmt *s, access_set *st)
{
    if (!s)
        return NULL;
    int n = s->kind == TEXI_STMT_SEQ ? s->u.seq.n : 1;
    tex_stmt *const *items = s->kind == TEXI_STMT_SEQ ? s->u.seq.items : &s;
    tex_stmt **out = malloc(sizeof *out * (size_t)(2 * n));
    if (!out) {
        p->rc = texi_error(p->lw->ctx, TEX_ENOMEM, "tex_build: thread_sync: out of memory");
        return NULL;
    }
    int n_out = 0;
    bool changed = false;
    for (int i = 0; i < n && p->rc == 0; i++) {
        int before = n_out;
        if (plan_item(p, items[i], st, out, &n_out) < 0) {
            p->rc = p->rc ? p->rc : TEX_ENOMEM;
            break;
        }
        changed |= n_out != before + 1 || out[n_out - 1] != items[i];
    }
    tex_stmt *r = p->rc        ? NULL
                  : !changed   ? s
                  : n_out == 1 ? out[0]
                               : texi_seq_new(p->lw->ctx, n_out, out);
    free(out);
    return r;
}

/* ------------------------------------------------------------ entry */

/* Visitor: marks the thread tags with a loop of extent != 1. */
static bool find_active(const tex_stmt *s, void *ud)
{
    sync_pass *p = ud;
    int64_t ext;
    if (s->kind == TEXI_STMT_FOR && s->u.loop.for_kind == TEXI_FOR_THREAD &&
        is_thread_tag(s->u.loop.thread_tag)) {
        int g = s->u.loop.thread_tag - (int)TEX_THREAD_X;
        bool is_const = texi_expr_is_int_const(s->u.loop.extent, &ext);
        p->active[g] |= !(is_const && ext == 1);
        if (!is_const || ext < 0)
            p->launch[g] = -1;
        else if (p->launch[g] >= 0 && ext > p->launch[g])
            p->launch[g] = ext;
    }
    return true;
}

int texi_pass_thread_sync(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    sync_pass *p = calloc(1, sizeof *p);
    if (!p)
        return texi_error(lw->ctx, TEX_ENOMEM, "tex_build: thread_sync: out of memory");
    p->lw = lw;
    texi_stmt_visit(in, find_active, p);
    access_set st = {0};
    tex_stmt *r = plan_list(p, in, &st);
    set_free(&st);
    int rc = p->rc ? p->rc : r ? 0 : TEX_ENOMEM;
    free(p);
    if (rc == 0)
        *out = r;
    return rc;
}
