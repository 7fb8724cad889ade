/*
 * Passes jam_outer and jam (CPU tail, the last two): unroll-and-jam.
 *
 * Pass jam: unroll-and-jam of a serial loop whose iterations are
 * independent chains of updates.
 *
 * A GEMM tile accumulated row by row (the tutorial schedule: for each k
 * step, for each row m, four unrolled `C[m, :] += A[m, k+u] * B[k+u, :]`)
 * is a loop over m whose body updates the same accumulators again and
 * again: each update waits for the one before it (a floating-point add's
 * latency is several cycles), and only the few accumulators of one row are
 * independent. The processor overlaps consecutive rows only as far as its
 * out-of-order window reaches. Jamming J rows into one iteration, each
 * statement of the body once per row before the next statement, gives the C
 * compiler J times as many independent chains to interleave, held in
 * registers.
 *
 * A serial FOR L of constant extent n >= 2 qualifies when
 *   - its body is straight-line: one STORE or a sequence of STOREs;
 *   - it has a chain: two stores to one buffer at one index;
 *   - its iterations are independent: for every buffer it stores to, each
 *     access of that buffer in the body (loads and stores, scalar or a
 *     unit-stride RAMP, masked or not) is at `s*v + base + c`, with L's
 *     variable v, one coefficient s != 0 and one v-free base for all of
 *     them, and constants c whose accesses span at most |s| elements: so
 *     iteration v touches only its own window of s elements.
 * Then no iteration reads or writes what another touches, and running the
 * body's statements for J iterations, statement by statement, gives L's
 * result. L becomes a loop over n / J groups whose body is each statement
 * for v = min + J*g + j, j < J, in turn (indices simplified), followed by
 * the last n % J iterations as a loop of their own (one group, or one
 * iteration left over, is a sequence of statements without a loop).
 *
 * J is the most with J * chains within the registers (a quarter of the
 * vector register file: 8 with AVX-512's 32 registers, else 4, so the
 * loads the chains combine keep registers too), at most MAX_JAM and n,
 * and the jammed body at most MAX_STMTS statements; J < 2 leaves L alone.
 * Chains are the distinct (buffer, index) pairs stored. MAX_JAM is 2: on
 * the tutorial GEMM (2 chains a row) J = 4 ran no faster than 2, and its
 * C took half again as long to compile.
 *
 * Pass jam_outer, before jam: the same idea one loop further out. The
 * tutorial's tile loop `for ko { for m { C[m, :] += A[m, 4ko+u] * B[4ko+u, :],
 * u < 4 } }` loads and stores each accumulator row once per k step, and
 * reads A's 32 rows (4 KiB apart: one cache set) again at every step. A
 * serial loop L of constant extent n >= 2 whose body is a serial loop I
 * whose body is straight-line stores qualifies when
 *   - I's bounds do not use L's variable, and
 *   - for every buffer the body stores to, no access of it uses L's
 *     variable and all of them lie in I's windows (jam's rule for I).
 * Then iteration i of I touches the same elements at every step of L and
 * no other iteration of I touches them: the only dependences run between
 * steps of L at one i. Running J steps of L in one pass of I, the whole
 * body for step J*g, then for J*g + 1, ... (copy after copy, not statement
 * by statement), keeps every element's updates in order, so results are
 * bit-identical. L becomes a loop over n / J groups around I (I alone for
 * one group), then the last n % J steps as L's own loop (I alone, the
 * variable substituted, for one). J, at most MAX_OUTER_JAM and n, is the
 * most with J * (registers of the distinct loads I does not move, held
 * across I) + MAX_JAM * (registers of the distinct elements stored, which
 * jam then pairs) within three quarters of the vector registers (32 with
 * AVX-512, else 16) and J copies within MAX_STMTS. On the tutorial (8
 * vectors of B per step, 2 stored a row) J = 2 with AVX-512; with AVX2
 * (16 vectors of B per step) nothing is jammed.
 */
#include "lower/lower.h"
#include "util/host.h"

#include <stdlib.h>

enum { MAX_JAM = 2, MAX_OUTER_JAM = 4, MAX_STMTS = 64, MAX_ACCESSES = 256 };

/* One access of a buffer the body stores to, or a load of any buffer. */
typedef struct {
    const void *key; /* texi_buffer_key */
    tex_expr *index;
    int64_t bytes; /* the elements it touches, in bytes */
    bool stored;
} access;

typedef struct {
    int n;
    access list[MAX_ACCESSES];
    bool overflow;
} accesses;

static void note(accesses *a, const texi_buffer *b, tex_expr *index, bool stored)
{
    if (a->n == MAX_ACCESSES) {
        a->overflow = true;
        return;
    }
    int64_t bytes = tex_dtype_bytes(b->dtype) * index->lanes;
    a->list[a->n++] = (access){texi_buffer_key(b), index, bytes, stored};
}

static bool visit_load(tex_expr *e, void *ud)
{
    if (e->kind == TEXI_EXPR_LOAD)
        note(ud, e->u.load.buf, e->u.load.index, false);
    return true;
}

/* The first element of an access (a RAMP's base), or NULL when it is not a
 * scalar or a unit-stride ramp; *lanes: the elements it touches. */
static tex_expr *first_element(tex_expr *index, int *lanes)
{
    int64_t stride;
    *lanes = index->lanes;
    if (index->lanes == 1)
        return index;
    if (index->kind != TEXI_EXPR_RAMP || !texi_expr_is_int_const(index->u.ramp.stride, &stride) ||
        stride != 1)
        return NULL;
    return index->u.ramp.base;
}

/* Whether every access of the buffer with key `key` is in iteration var's
 * own window (the top comment's rule). */
static bool windowed(const accesses *a, const void *key, const tex_expr *var)
{
    tex_expr *ref = NULL;
    int64_t coef = 0, lo = 0, hi = 0;
    for (int i = 0; i < a->n; i++) {
        if (a->list[i].key != key)
            continue;
        int lanes;
        int64_t s, c;
        tex_expr *first = first_element(a->list[i].index, &lanes);
        if (!first || !texi_linear_in(first, var, &s) || s == 0 || (ref && s != coef))
            return false;
        if (!ref) {
            ref = first;
            coef = s;
            hi = lanes;
            continue;
        }
        tex_expr *d = texi_binary(TEXI_EXPR_SUB, first, ref);
        d = d ? texi_simplify(d, 0, NULL) : NULL;
        if (!d || !texi_expr_is_int_const(d, &c))
            return false;
        lo = c < lo ? c : lo;
        hi = c + lanes > hi ? c + lanes : hi;
    }
    return hi - lo <= (coef < 0 ? -coef : coef);
}

/* Whether a->list[i] is the first access of its buffer (windowed checks
 * all of them at once). */
static bool first_of_buffer(const accesses *a, int i)
{
    for (int k = 0; k < i; k++)
        if (a->list[k].key == a->list[i].key)
            return false;
    return true;
}

/* Whether a->list[i] is the first load (or the first store) of its buffer
 * at its index. */
static bool first_of_kind(const accesses *a, int i)
{
    const access *x = &a->list[i];
    for (int k = 0; k < i; k++)
        if (a->list[k].stored == x->stored && a->list[k].key == x->key &&
            texi_expr_equal(a->list[k].index, x->index))
            return false;
    return true;
}

/* The distinct (buffer, index) pairs stored, or 0 when no pair is stored
 * twice (no chain). */
static int chains(const accesses *a)
{
    int distinct = 0;
    bool repeated = false;
    for (int i = 0; i < a->n; i++) {
        if (!a->list[i].stored)
            continue;
        bool first = first_of_kind(a, i);
        distinct += first;
        repeated |= !first;
    }
    return repeated ? distinct : 0;
}

/* Every access of body (n_items stores), or NULL (ENOMEM, or more than
 * MAX_ACCESSES); free() it. */
static accesses *body_accesses(tex_stmt *body, int n_items)
{
    accesses *a = calloc(1, sizeof *a); /* scratch, large */
    if (!a)
        return NULL;
    for (int i = 0; i < n_items; i++) {
        const tex_stmt *st = n_items == 1 ? body : body->u.seq.items[i];
        note(a, st->u.store.buf, st->u.store.index, true);
        texi_stmt_visit_exprs(st, visit_load, a);
    }
    if (a->overflow) {
        free(a);
        return NULL;
    }
    return a;
}

/* How many iterations loop (body: n_items stores) jams, or 1 when it does
 * not qualify (the top comment). */
static int64_t jam_factor(tex_stmt *loop, tex_stmt *body, int n_items, int64_t n)
{
    accesses *a = body_accesses(body, n_items);
    if (!a)
        return 1;
    int n_chains = chains(a);
    for (int i = 0; i < a->n && n_chains > 0; i++)
        if (a->list[i].stored && first_of_buffer(a, i) &&
            !windowed(a, a->list[i].key, loop->u.loop.var))
            n_chains = 0;
    free(a);
    if (n_chains == 0)
        return 1;
    int64_t budget = texi_host_vector_bytes() >= 64 ? 8 : 4;
    int64_t j = budget / n_chains;
    j = j < MAX_JAM ? j : MAX_JAM;
    j = j < n ? j : n;
    while (j >= 2 && j * n_items > MAX_STMTS)
        j--;
    return j;
}

typedef struct {
    tex_expr *var, *value;
    texi_range group; /* the jammed loop's variable and range */
    bool failed;
} subst;

/* Called on every node of a copy, parents first: each largest scalar
 * integer subexpression that reads the variable (an index, a ramp's base)
 * is substituted and simplified under the jammed loop's range, which folds
 * the products the substitution made ((g*4 + 1)*32 is g*128 + 32);
 * anything else is rebuilt from its children. */
static tex_expr *subst_index(tex_expr *e, void *ud)
{
    subst *sb = ud;
    if (e->lanes != 1 || !texi_dtype_is_int(e->dtype) || !texi_expr_uses_var(e, sb->var))
        return NULL;
    tex_expr *r = texi_substitute(e, 1, &sb->var, &sb->value);
    r = r ? texi_simplify(r, 1, &sb->group) : NULL;
    sb->failed |= !r;
    return r ? r : e;
}

/* The statements of body (n_items stores) for var = first + k, k < j, in
 * one sequence: statement by statement (each statement for every k before
 * the next statement), or else copy by copy (the whole body for k = 0,
 * then for k = 1, ...). Indices are simplified under range (the group
 * variable first uses, if any). NULL on ENOMEM. */
static tex_stmt *copies(tex_ctx *ctx, tex_stmt *body, int n_items, tex_expr *var, tex_expr *first,
                        int64_t j, texi_range range, bool by_statement)
{
    tex_stmt **items = texi_alloc(ctx, sizeof *items * (size_t)(n_items * j), "jam");
    if (!items)
        return NULL;
    for (int i = 0; i < n_items; i++) {
        tex_stmt *st = n_items == 1 ? body : body->u.seq.items[i];
        for (int64_t k = 0; k < j; k++) {
            tex_expr *off = texi_int_imm(ctx, var->dtype, k);
            tex_expr *value = off ? texi_binary(TEXI_EXPR_ADD, first, off) : NULL;
            subst sb = {var, value ? texi_simplify(value, 0, NULL) : NULL, range, false};
            tex_stmt *copy = sb.value ? texi_stmt_mutate(ctx, st, NULL, subst_index, &sb) : NULL;
            if (!copy || sb.failed)
                return NULL;
            items[by_statement ? i * j + k : k * n_items + i] = copy;
        }
    }
    return texi_seq_new(ctx, (int)(n_items * j), items);
}

/* loop (variable v from min, extent n) jammed by j over body (n_items
 * stores): a loop over the n / j groups (none for one group) whose body is
 * the copies of body for v = min + j*g + k, k < j, either inside `inner`
 * (pass jam_outer: loop's body is that loop, whose body is `body`; copy
 * after copy) or alone (pass jam, inner NULL: statement by statement);
 * then the last n % j iterations as a loop of loop's original body (the
 * copy for v = min + n - 1, inside inner, for one). NULL on ENOMEM. */
static tex_stmt *jam_by(tex_ctx *ctx, tex_stmt *loop, tex_stmt *inner, tex_stmt *body, int n_items,
                        int64_t n, int64_t j)
{
    bool by_statement = inner == NULL;
    tex_expr *var = loop->u.loop.var, *min = texi_convert(loop->u.loop.min, var->dtype);
    tex_expr *group = texi_var_new(ctx, var->u.var.name, var->dtype);
    tex_expr *step = texi_int_imm(ctx, var->dtype, j);
    tex_expr *zero = texi_int_imm(ctx, var->dtype, 0);
    tex_expr *groups = texi_int_imm(ctx, var->dtype, n / j);
    if (!min || !group || !step || !zero || !groups)
        return NULL;
    texi_range range = {group, zero, groups};
    tex_expr *first =
        n / j == 1 ? min : texi_binary(TEXI_EXPR_ADD, min, texi_binary(TEXI_EXPR_MUL, group, step));
    tex_stmt *main = first ? copies(ctx, body, n_items, var, first, j, range, by_statement) : NULL;
    if (main && inner)
        main = texi_stmt_with_body(ctx, inner, main);
    if (main && n / j > 1)
        main = texi_for_new(ctx, group, zero, groups, TEXI_FOR_SERIAL, -1, main);
    if (!main || n % j == 0)
        return main;
    tex_expr *done = texi_int_imm(ctx, var->dtype, n - n % j);
    tex_expr *rest = texi_int_imm(ctx, var->dtype, n % j);
    tex_expr *rest_min =
        done && rest ? texi_simplify(texi_binary(TEXI_EXPR_ADD, min, done), 0, NULL) : NULL;
    tex_stmt *tail = NULL;
    if (rest_min && n % j > 1) {
        tail = texi_for_new(ctx, var, rest_min, rest, TEXI_FOR_SERIAL, -1, inner ? inner : body);
    } else if (rest_min) {
        tail = copies(ctx, body, n_items, var, rest_min, 1, range, by_statement);
        tail = tail && inner ? texi_stmt_with_body(ctx, inner, tail) : tail;
    }
    return tail ? texi_seq_new(ctx, 2, (tex_stmt *[]){main, tail}) : NULL;
}

/* Loop s with its (already rewritten) body: see the top comment. */
static tex_stmt *jam_loop(tex_ctx *ctx, tex_stmt *s, tex_stmt *body, void *ud)
{
    (void)ud;
    int64_t n;
    int n_items = texi_stmt_straight_stores(body);
    if (s->u.loop.for_kind != TEXI_FOR_SERIAL || n_items == 0 ||
        !texi_expr_is_int_const(s->u.loop.extent, &n) || n < 2)
        return texi_stmt_with_body(ctx, s, body);
    int64_t j = jam_factor(s, body, n_items, n);
    return j < 2 ? texi_stmt_with_body(ctx, s, body) : jam_by(ctx, s, NULL, body, n_items, n, j);
}

int texi_pass_jam(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    return texi_pass_result(lw, texi_stmt_map_loops(lw->ctx, in, jam_loop, NULL), out);
}

/* -------------------------------------------------------- pass jam_outer */

/* Vector registers an access holds: one per register width of its bytes,
 * at least one (a scalar is broadcast into one). */
static int64_t registers(const access *x, int64_t vector_bytes)
{
    int64_t r = (x->bytes + vector_bytes - 1) / vector_bytes;
    return r < 1 ? 1 : r;
}

static bool stores_to(const accesses *a, const void *key)
{
    for (int i = 0; i < a->n; i++)
        if (a->list[i].stored && a->list[i].key == key)
            return true;
    return false;
}

/* How many iterations of outer (constant extent n) jam into inner, its
 * body (a serial loop whose body is n_items stores), or 1 when they do
 * not qualify (the top comment). */
static int64_t outer_factor(const tex_stmt *outer, const tex_stmt *inner, tex_stmt *body,
                            int n_items, int64_t n)
{
    const tex_expr *ov = outer->u.loop.var, *iv = inner->u.loop.var;
    if (texi_expr_uses_var(inner->u.loop.min, ov) || texi_expr_uses_var(inner->u.loop.extent, ov))
        return 1;
    accesses *a = body_accesses(body, n_items);
    if (!a)
        return 1;
    int64_t vector_bytes = texi_host_vector_bytes();
    int64_t invariant = 0, kept = 0; /* registers: loads inner does not move, stored elements */
    bool ok = true;
    for (int i = 0; i < a->n && ok; i++) {
        const access *x = &a->list[i];
        if (stores_to(a, x->key)) {
            ok = !texi_expr_uses_var(x->index, ov) &&
                 (!first_of_buffer(a, i) || windowed(a, x->key, iv));
            kept += x->stored && first_of_kind(a, i) ? registers(x, vector_bytes) : 0;
        } else if (!texi_expr_uses_var(x->index, iv) && first_of_kind(a, i)) {
            invariant += registers(x, vector_bytes);
        }
    }
    free(a);
    if (!ok)
        return 1;
    int64_t budget = (vector_bytes >= 64 ? 32 : 16) * 3 / 4;
    int64_t j = n < MAX_OUTER_JAM ? n : MAX_OUTER_JAM;
    while (j >= 2 && (j * n_items > MAX_STMTS || j * invariant + MAX_JAM * kept > budget))
        j--;
    return j;
}

/* Loop s with its (already rewritten) body: see the top comment (pass
 * jam_outer). */
static tex_stmt *jam_outer_loop(tex_ctx *ctx, tex_stmt *s, tex_stmt *body, void *ud)
{
    (void)ud;
    int64_t n;
    int n_items = body->kind == TEXI_STMT_FOR && body->u.loop.for_kind == TEXI_FOR_SERIAL
                      ? texi_stmt_straight_stores(body->u.loop.body)
                      : 0;
    if (s->u.loop.for_kind != TEXI_FOR_SERIAL || n_items == 0 ||
        !texi_expr_is_int_const(s->u.loop.extent, &n) || n < 2)
        return texi_stmt_with_body(ctx, s, body);
    int64_t j = outer_factor(s, body, body->u.loop.body, n_items, n);
    return j < 2 ? texi_stmt_with_body(ctx, s, body)
                 : jam_by(ctx, s, body, body->u.loop.body, n_items, n, j);
}

int texi_pass_jam_outer(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    return texi_pass_result(lw, texi_stmt_map_loops(lw->ctx, in, jam_outer_loop, NULL), out);
}
