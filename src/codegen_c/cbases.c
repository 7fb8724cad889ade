/*
 * cbases.c: base pointers for the accesses of a straight-line loop body.
 *
 * A loop body of stores that reads or writes one buffer at several indices
 * `x + c`, one non-constant x and constants c (a row of the tutorial GEMM's
 * jammed tile: A[x], A[x + 1], ..., A[x + 1031], C_global[y], C_global[y +
 * 16], ...), is printed with a local pointer per (buffer, x) declared at the
 * top of the body,
 *     const float *A_at = &A[x + c0];        (c0: the least c)
 * and each of those accesses as A_at[c - c0]. The computation is the same;
 * the C compiler sees one address computation per base instead of one per
 * access, which it otherwise redoes in 32-bit index arithmetic that it may
 * not reassociate across the conversion to a pointer offset: GCC compiled
 * the tutorial GEMM's jammed tile body about a third faster.
 *
 * Only accesses the body makes unconditionally choose bases and count: the
 * unmasked scalar or dense vector (unit-stride RAMP) accesses of STOREs and
 * of the loads in their indices and values outside select arms. So
 * &A[x + c0] is an element the body accesses on every iteration, and
 * computing it before the first statement is valid. A base holds no load
 * (its value cannot depend on the body's own stores) and only variables
 * bound outside the body (a straight-line body binds none). A base used
 * once is not worth a pointer; at most TEXI_CP_MAX_BASES are collected. Other
 * accesses whose index is x + c (in select arms, lanes printed one by one)
 * print through the pointer too: the same address.
 */
#include "codegen_c/cprint.h"

#include <stdio.h>

typedef struct {
    texi_cp *p;
    int n; /* candidates, in p->bases after the ones in scope */
} collector;

/* x and c of an index x + c (x NULL for a constant index). */
static tex_expr *split_offset(tex_expr *index, int64_t *c)
{
    int64_t k;
    *c = 0;
    if (texi_expr_is_int_const(index, c))
        return NULL;
    if ((index->kind == TEXI_EXPR_ADD || index->kind == TEXI_EXPR_SUB) &&
        texi_expr_is_int_const(index->u.bin.b, &k)) {
        *c = index->kind == TEXI_EXPR_ADD ? k : -k;
        return index->u.bin.a;
    }
    return index;
}

/* The scalar index of an access that prints as one element: index itself,
 * a dense RAMP's base, or NULL. */
static tex_expr *element_index(const texi_buffer *buf, tex_expr *index)
{
    if (index->lanes == 1)
        return index;
    return texi_cp_dense_access(buf->dtype, index) ? index->u.ramp.base : NULL;
}

/* Counts an unconditional access of buf at index (see the top comment). */
static void note(collector *c, const texi_buffer *buf, tex_expr *index, bool stored)
{
    texi_cp *p = c->p;
    int64_t off;
    tex_expr *at = element_index(buf, index);
    tex_expr *x = at ? split_offset(at, &off) : NULL;
    if (!x || texi_expr_reads_memory(x))
        return;
    const void *key = texi_buffer_key(buf);
    for (int i = p->n_bases; i < p->n_bases + c->n; i++) {
        texi_cp_base *b = &p->bases[i];
        if (b->key == key && texi_expr_equal(b->base, x)) {
            b->count++;
            b->first = off < b->first ? off : b->first;
            b->stored |= stored;
            return;
        }
    }
    if (p->n_bases + c->n == TEXI_CP_MAX_BASES)
        return;
    p->bases[p->n_bases + c->n++] = (texi_cp_base){key, buf, x, off, NULL, NULL, 1, stored};
}

/* Counts the unmasked loads of e outside select arms (a select's
 * condition is evaluated always, its arms not). */
static bool visit_loads(tex_expr *e, void *ud)
{
    collector *c = ud;
    if (e->kind == TEXI_EXPR_SELECT) {
        texi_expr_visit(e->u.sel.cond, visit_loads, c);
        return false;
    }
    if (e->kind == TEXI_EXPR_LOAD && !e->u.load.mask)
        note(c, e->u.load.buf, e->u.load.index, false);
    return true;
}

static void note_loads(collector *c, tex_expr *e)
{
    texi_expr_visit(e, visit_loads, c);
}

int texi_cp_bases_begin(texi_cp *p, texi_sb *sb, const tex_stmt *body)
{
    if (!p->target->base_pointers || !texi_stmt_straight_stores(body))
        return 0;
    collector c = {p, 0};
    int n_items = body->kind == TEXI_STMT_SEQ ? body->u.seq.n : 1;
    for (int i = 0; i < n_items; i++) {
        const tex_stmt *st = body->kind == TEXI_STMT_SEQ ? body->u.seq.items[i] : body;
        note_loads(&c, st->u.store.index);
        note_loads(&c, st->u.store.value);
        if (st->u.store.mask)
            note_loads(&c, st->u.store.mask);
        else
            note(&c, st->u.store.buf, st->u.store.index, true);
    }
    int kept = 0;
    for (int i = 0; i < c.n; i++) {
        texi_cp_base b = p->bases[p->n_bases + i];
        if (b.count < 2)
            continue;
        char name[96];
        snprintf(name, sizeof name, "%s_at", b.buf->name);
        if (!(b.var = texi_var_new(p->ctx, name, TEX_I64))) {
            texi_cp_fail(p, TEX_ENOMEM, "out of memory (base pointers)");
            break;
        }
        b.name = texi_cp_bind(p, b.var, name);
        texi_cp_indent(p, sb);
        texi_sb_printf(sb, "%s%s *%s = &%s[", b.stored ? "" : "const ",
                       p->target->storage_type(b.buf->dtype), b.name,
                       texi_cp_lookup(p, texi_buffer_key(b.buf), b.buf->name));
        texi_cp_expr(p, sb, b.base, TEXI_CP_P_ADD, true);
        if (b.first)
            texi_sb_printf(sb, " %c %lld", b.first < 0 ? '-' : '+',
                           (long long)(b.first < 0 ? -b.first : b.first));
        texi_sb_puts(sb, "];\n");
        p->bases[p->n_bases + kept++] = b;
    }
    p->n_bases += kept;
    return kept;
}

void texi_cp_bases_end(texi_cp *p, texi_sb *sb, int n)
{
    for (int i = p->n_bases - n; i < p->n_bases; i++)
        if (!texi_cp_used(p, p->bases[i].var))
            texi_cp_line(p, sb, "(void)%s;", p->bases[i].name);
    p->n_bases -= n;
}

/* x and c of the element index prints (lane p->lane of a RAMP in lane
 * mode), or NULL. */
static tex_expr *element_split(const texi_cp *p, tex_expr *index, int64_t *c)
{
    int64_t stride;
    if (index->lanes == 1)
        return split_offset(index, c);
    if (p->lane < 0 || index->kind != TEXI_EXPR_RAMP ||
        !texi_expr_is_int_const(index->u.ramp.stride, &stride))
        return NULL;
    tex_expr *x = split_offset(index->u.ramp.base, c);
    *c += stride * p->lane;
    return x;
}

void texi_cp_element(texi_cp *p, texi_sb *sb, const texi_buffer *buf, tex_expr *index)
{
    int64_t off;
    tex_expr *x = p->n_bases ? element_split(p, index, &off) : NULL;
    const void *key = texi_buffer_key(buf);
    for (int i = 0; x && i < p->n_bases; i++) {
        const texi_cp_base *b = &p->bases[i];
        if (b->key == key && texi_expr_equal(b->base, x)) {
            texi_sb_printf(sb, "%s[%lld]", texi_cp_lookup(p, b->var, b->name),
                           (long long)(off - b->first));
            return;
        }
    }
    texi_sb_printf(sb, "%s[", texi_cp_lookup(p, key, buf->name));
    texi_cp_expr(p, sb, index, TEXI_CP_P_TOP, true);
    texi_sb_putc(sb, ']');
}
