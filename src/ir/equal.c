/*
 * Structural equality and hashing of expressions and statements.
 * Variables, tensors, buffers and axes compare by identity; constants by
 * dtype and value (floats bitwise, so 0.0 != -0.0 and a NaN equals the same
 * NaN). The hash is consistent with equality: equal trees hash alike.
 */
#include "ir/ir.h"

#include <string.h>

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdu;
}

static uint64_t float_bits(double f)
{
    uint64_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Hash of a name, for objects compared by identity that lack an id. */
static uint64_t name_hash(const char *name)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (const char *c = name ? name : ""; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3u;
    return h;
}

/* Buffers and axes compare by identity; their data variable's id (or, for one
 * built without it, the name) is stable across runs and agrees with that. */
static uint64_t buffer_hash(const texi_buffer *b)
{
    return b->data ? b->data->u.var.id : name_hash(b->name);
}

static uint64_t iter_hash(const tex_iter *it)
{
    return it->var ? it->var->u.var.id : name_hash(it->name);
}

/* Variables paired for texi_expr_alpha_equal: a[i] in one tree stands
 * where b[i] stands in the other. NULL in plain equality (identity). */
typedef struct {
    int n;
    const tex_expr *a[TEXI_ALPHA_MAX], *b[TEXI_ALPHA_MAX];
} var_pairs;

static bool equal_in(const tex_expr *a, const tex_expr *b, var_pairs *vp);

static bool list_equal(int n, tex_expr *const *a, tex_expr *const *b, var_pairs *vp)
{
    for (int i = 0; i < n; i++)
        if (!equal_in(a[i], b[i], vp))
            return false;
    return true;
}

/* Variables a and b under the pairing: paired with each other, or the same
 * variable paired with nothing. */
static bool vars_equal(const tex_expr *a, const tex_expr *b, const var_pairs *vp)
{
    for (int i = vp ? vp->n - 1 : -1; i >= 0; i--) /* the innermost pairing first */
        if (vp->a[i] == a || vp->b[i] == b)
            return vp->a[i] == a && vp->b[i] == b;
    return a == b;
}

/* The reductions a and b: with a pairing, their axes of equal ranges are
 * paired for their bodies; without one, the same axes. */
static bool reduce_equal(const tex_expr *a, const tex_expr *b, var_pairs *vp)
{
    int n = a->u.red.n_axes, saved = vp ? vp->n : 0;
    bool eq =
        a->u.red.op == b->u.red.op && n == b->u.red.n_axes && (!vp || saved + n <= TEXI_ALPHA_MAX);
    for (int i = 0; eq && i < n; i++) {
        const tex_iter *x = a->u.red.axes[i], *y = b->u.red.axes[i];
        if (!vp) {
            eq = x == y;
            continue;
        }
        eq = equal_in(x->min, y->min, vp) && equal_in(x->extent, y->extent, vp);
        vp->a[vp->n] = x->var;
        vp->b[vp->n++] = y->var;
    }
    eq = eq && equal_in(a->u.red.body, b->u.red.body, vp) &&
         equal_in(a->u.red.cond, b->u.red.cond, vp);
    if (vp)
        vp->n = saved;
    return eq;
}

bool texi_expr_equal(const tex_expr *a, const tex_expr *b)
{
    return equal_in(a, b, NULL);
}

bool texi_expr_alpha_equal(const tex_expr *a, const tex_expr *b, int n, tex_expr *const avars[],
                           tex_expr *const bvars[])
{
    if (n < 0 || n > TEXI_ALPHA_MAX)
        return false;
    var_pairs vp = {.n = n};
    for (int i = 0; i < n; i++) {
        vp.a[i] = avars[i];
        vp.b[i] = bvars[i];
    }
    return equal_in(a, b, &vp);
}

static bool equal_in(const tex_expr *a, const tex_expr *b, var_pairs *vp)
{
    if (a == b && (!vp || vp->n == 0 || !a)) /* with pairs, a shared tree may still differ */
        return true;
    if (!a || !b || a->kind != b->kind || a->dtype != b->dtype || a->lanes != b->lanes)
        return false;
    switch (a->kind) {
    case TEXI_EXPR_INT:
        return a->u.i == b->u.i;
    case TEXI_EXPR_FLOAT:
        return float_bits(a->u.f) == float_bits(b->u.f);
    case TEXI_EXPR_VAR:
        return vars_equal(a, b, vp);
    TEXI_CASE_BINARY:
        return equal_in(a->u.bin.a, b->u.bin.a, vp) && equal_in(a->u.bin.b, b->u.bin.b, vp);
    case TEXI_EXPR_NOT:
    case TEXI_EXPR_CAST:
    case TEXI_EXPR_BROADCAST:
        return equal_in(a->u.un.a, b->u.un.a, vp);
    case TEXI_EXPR_VREDUCE:
        return a->u.vred.op == b->u.vred.op && equal_in(a->u.vred.a, b->u.vred.a, vp);
    case TEXI_EXPR_RAMP:
        return equal_in(a->u.ramp.base, b->u.ramp.base, vp) &&
               equal_in(a->u.ramp.stride, b->u.ramp.stride, vp);
    case TEXI_EXPR_SELECT:
        return equal_in(a->u.sel.cond, b->u.sel.cond, vp) && equal_in(a->u.sel.t, b->u.sel.t, vp) &&
               equal_in(a->u.sel.f, b->u.sel.f, vp);
    case TEXI_EXPR_CALL:
        return a->u.call.op == b->u.call.op && a->u.call.n_args == b->u.call.n_args &&
               list_equal(a->u.call.n_args, a->u.call.args, b->u.call.args, vp);
    case TEXI_EXPR_ACCESS:
        return a->u.access.tensor == b->u.access.tensor && a->u.access.n_idx == b->u.access.n_idx &&
               list_equal(a->u.access.n_idx, a->u.access.idx, b->u.access.idx, vp);
    case TEXI_EXPR_LOAD:
        return a->u.load.buf == b->u.load.buf && equal_in(a->u.load.index, b->u.load.index, vp) &&
               equal_in(a->u.load.mask, b->u.load.mask, vp);
    case TEXI_EXPR_SEARCH:
        return a->u.search.op == b->u.search.op && a->u.search.tensor == b->u.search.tensor &&
               a->u.search.buf == b->u.search.buf &&
               list_equal(3, (tex_expr *[]){a->u.search.lo, a->u.search.hi, a->u.search.value},
                          (tex_expr *[]){b->u.search.lo, b->u.search.hi, b->u.search.value}, vp);
    case TEXI_EXPR_REDUCE:
        return reduce_equal(a, b, vp);
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    return false;
}

uint64_t texi_expr_hash(const tex_expr *e)
{
    if (!e)
        return 0x51ed270b27a1f3c5u;
    uint64_t h = mix(mix((uint64_t)e->kind, (uint64_t)e->dtype), (uint64_t)e->lanes);
    switch (e->kind) {
    case TEXI_EXPR_INT:
        return mix(h, (uint64_t)e->u.i);
    case TEXI_EXPR_FLOAT:
        return mix(h, float_bits(e->u.f));
    case TEXI_EXPR_VAR:
        return mix(h, e->u.var.id);
    TEXI_CASE_BINARY:
        return mix(mix(h, texi_expr_hash(e->u.bin.a)), texi_expr_hash(e->u.bin.b));
    case TEXI_EXPR_NOT:
    case TEXI_EXPR_CAST:
    case TEXI_EXPR_BROADCAST:
        return mix(h, texi_expr_hash(e->u.un.a));
    case TEXI_EXPR_VREDUCE:
        return mix(mix(h, (uint64_t)e->u.vred.op), texi_expr_hash(e->u.vred.a));
    case TEXI_EXPR_RAMP:
        return mix(mix(h, texi_expr_hash(e->u.ramp.base)), texi_expr_hash(e->u.ramp.stride));
    case TEXI_EXPR_SELECT:
        h = mix(h, texi_expr_hash(e->u.sel.cond));
        return mix(mix(h, texi_expr_hash(e->u.sel.t)), texi_expr_hash(e->u.sel.f));
    case TEXI_EXPR_CALL:
        h = mix(h, (uint64_t)e->u.call.op);
        for (int i = 0; i < e->u.call.n_args; i++)
            h = mix(h, texi_expr_hash(e->u.call.args[i]));
        return h;
    case TEXI_EXPR_ACCESS:
        h = mix(h, e->u.access.tensor->id);
        for (int i = 0; i < e->u.access.n_idx; i++)
            h = mix(h, texi_expr_hash(e->u.access.idx[i]));
        return h;
    case TEXI_EXPR_LOAD:
        h = mix(mix(h, buffer_hash(e->u.load.buf)), texi_expr_hash(e->u.load.index));
        return mix(h, texi_expr_hash(e->u.load.mask));
    case TEXI_EXPR_SEARCH:
        h = mix(mix(h, (uint64_t)e->u.search.op),
                e->u.search.tensor ? e->u.search.tensor->id : buffer_hash(e->u.search.buf));
        h = mix(mix(h, texi_expr_hash(e->u.search.lo)), texi_expr_hash(e->u.search.hi));
        return mix(h, texi_expr_hash(e->u.search.value));
    case TEXI_EXPR_REDUCE:
        h = mix(mix(h, (uint64_t)e->u.red.op), texi_expr_hash(e->u.red.body));
        for (int i = 0; i < e->u.red.n_axes; i++)
            h = mix(h, iter_hash(e->u.red.axes[i]));
        return mix(h, texi_expr_hash(e->u.red.cond));
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    return h;
}

static bool stmt_list_equal(int n, tex_stmt *const *a, tex_stmt *const *b)
{
    for (int i = 0; i < n; i++)
        if (!texi_stmt_equal(a[i], b[i]))
            return false;
    return true;
}

/* Intrinsic arguments: same tensor or buffer, tile start, layout. */
static bool intrin_arg_equal(const texi_intrin_arg *a, const texi_intrin_arg *b)
{
    if (a->ndim != b->ndim || a->tensor != b->tensor || a->buf != b->buf ||
        !texi_expr_equal(a->offset, b->offset) || !a->mins != !b->mins ||
        !a->strides != !b->strides || !a->dim_map != !b->dim_map)
        return false;
    if (a->mins &&
        (a->tensor_ndim != b->tensor_ndim || !list_equal(a->tensor_ndim, a->mins, b->mins, NULL)))
        return false;
    if (a->dim_map && memcmp(a->dim_map, b->dim_map, (size_t)a->ndim * sizeof *a->dim_map) != 0)
        return false;
    return !a->strides || list_equal(a->ndim, a->strides, b->strides, NULL);
}

static bool intrin_equal(const tex_stmt *a, const tex_stmt *b)
{
    if (a->u.intrin.intrin != b->u.intrin.intrin || a->u.intrin.fn != b->u.intrin.fn ||
        a->u.intrin.n_args != b->u.intrin.n_args)
        return false;
    for (int i = 0; i < a->u.intrin.n_args; i++)
        if (!intrin_arg_equal(&a->u.intrin.args[i], &b->u.intrin.args[i]))
            return false;
    return true;
}

static uint64_t intrin_hash(uint64_t h, const tex_stmt *s)
{
    h = mix(h, (uint64_t)s->u.intrin.fn);
    for (int i = 0; i < s->u.intrin.n_args; i++) {
        const texi_intrin_arg *a = &s->u.intrin.args[i];
        h = mix(h, a->tensor ? a->tensor->id : a->buf ? buffer_hash(a->buf) : 0);
        h = mix(h, texi_expr_hash(a->offset));
        for (int d = 0; a->mins && d < a->tensor_ndim; d++)
            h = mix(h, texi_expr_hash(a->mins[d]));
    }
    return h;
}

bool texi_stmt_equal(const tex_stmt *a, const tex_stmt *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->kind != b->kind)
        return false;
    switch (a->kind) {
    case TEXI_STMT_FOR:
        return a->u.loop.var == b->u.loop.var && a->u.loop.for_kind == b->u.loop.for_kind &&
               a->u.loop.thread_tag == b->u.loop.thread_tag &&
               texi_expr_equal(a->u.loop.min, b->u.loop.min) &&
               texi_expr_equal(a->u.loop.extent, b->u.loop.extent) &&
               texi_stmt_equal(a->u.loop.body, b->u.loop.body);
    case TEXI_STMT_PROVIDE:
        return a->u.provide.tensor == b->u.provide.tensor &&
               a->u.provide.n_idx == b->u.provide.n_idx &&
               list_equal(a->u.provide.n_idx, a->u.provide.idx, b->u.provide.idx, NULL) &&
               texi_expr_equal(a->u.provide.value, b->u.provide.value);
    case TEXI_STMT_REALIZE:
        return a->u.realize.tensor == b->u.realize.tensor &&
               a->u.realize.ndim == b->u.realize.ndim && a->u.realize.scope == b->u.realize.scope &&
               list_equal(a->u.realize.ndim, a->u.realize.mins, b->u.realize.mins, NULL) &&
               list_equal(a->u.realize.ndim, a->u.realize.extents, b->u.realize.extents, NULL) &&
               texi_stmt_equal(a->u.realize.body, b->u.realize.body);
    case TEXI_STMT_STORE:
        return a->u.store.buf == b->u.store.buf &&
               texi_expr_equal(a->u.store.index, b->u.store.index) &&
               texi_expr_equal(a->u.store.value, b->u.store.value) &&
               texi_expr_equal(a->u.store.mask, b->u.store.mask);
    case TEXI_STMT_ALLOCATE:
        return a->u.alloc.buf == b->u.alloc.buf &&
               texi_stmt_equal(a->u.alloc.body, b->u.alloc.body);
    case TEXI_STMT_IF:
        return texi_expr_equal(a->u.ifs.cond, b->u.ifs.cond) &&
               texi_stmt_equal(a->u.ifs.then_s, b->u.ifs.then_s) &&
               texi_stmt_equal(a->u.ifs.else_s, b->u.ifs.else_s);
    case TEXI_STMT_LET:
        return a->u.let.var == b->u.let.var && texi_expr_equal(a->u.let.value, b->u.let.value) &&
               texi_stmt_equal(a->u.let.body, b->u.let.body);
    case TEXI_STMT_SEQ:
        return a->u.seq.n == b->u.seq.n &&
               stmt_list_equal(a->u.seq.n, a->u.seq.items, b->u.seq.items);
    case TEXI_STMT_EVALUATE:
        return texi_expr_equal(a->u.eval.value, b->u.eval.value);
    case TEXI_STMT_BARRIER:
        return a->u.barrier.scope == b->u.barrier.scope;
    case TEXI_STMT_ATTR:
        return strcmp(a->u.attr.key, b->u.attr.key) == 0 &&
               texi_expr_equal(a->u.attr.value, b->u.attr.value) &&
               texi_stmt_equal(a->u.attr.body, b->u.attr.body);
    case TEXI_STMT_INTRIN:
        return intrin_equal(a, b);
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    return false;
}

uint64_t texi_stmt_hash(const tex_stmt *s)
{
    if (!s)
        return 0x2545f4914f6cdd1du;
    uint64_t h = mix(0x100u, (uint64_t)s->kind);
    switch (s->kind) {
    case TEXI_STMT_FOR:
        h = mix(mix(h, s->u.loop.var->u.var.id), (uint64_t)s->u.loop.for_kind);
        h = mix(mix(h, texi_expr_hash(s->u.loop.min)), texi_expr_hash(s->u.loop.extent));
        return mix(h, texi_stmt_hash(s->u.loop.body));
    case TEXI_STMT_PROVIDE:
        h = mix(h, s->u.provide.tensor->id);
        for (int i = 0; i < s->u.provide.n_idx; i++)
            h = mix(h, texi_expr_hash(s->u.provide.idx[i]));
        return mix(h, texi_expr_hash(s->u.provide.value));
    case TEXI_STMT_REALIZE:
        h = mix(h, s->u.realize.tensor->id);
        for (int i = 0; i < s->u.realize.ndim; i++)
            h = mix(mix(h, texi_expr_hash(s->u.realize.mins[i])),
                    texi_expr_hash(s->u.realize.extents[i]));
        return mix(h, texi_stmt_hash(s->u.realize.body));
    case TEXI_STMT_STORE:
        h = mix(h, buffer_hash(s->u.store.buf));
        h = mix(mix(h, texi_expr_hash(s->u.store.index)), texi_expr_hash(s->u.store.value));
        return mix(h, texi_expr_hash(s->u.store.mask));
    case TEXI_STMT_ALLOCATE:
        return mix(mix(h, buffer_hash(s->u.alloc.buf)), texi_stmt_hash(s->u.alloc.body));
    case TEXI_STMT_IF:
        h = mix(h, texi_expr_hash(s->u.ifs.cond));
        return mix(mix(h, texi_stmt_hash(s->u.ifs.then_s)), texi_stmt_hash(s->u.ifs.else_s));
    case TEXI_STMT_LET:
        h = mix(mix(h, s->u.let.var->u.var.id), texi_expr_hash(s->u.let.value));
        return mix(h, texi_stmt_hash(s->u.let.body));
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            h = mix(h, texi_stmt_hash(s->u.seq.items[i]));
        return h;
    case TEXI_STMT_EVALUATE:
        return mix(h, texi_expr_hash(s->u.eval.value));
    case TEXI_STMT_BARRIER:
        return mix(h, (uint64_t)s->u.barrier.scope);
    case TEXI_STMT_ATTR:
        for (const char *c = s->u.attr.key; *c; c++)
            h = mix(h, (uint64_t)(unsigned char)*c);
        return mix(mix(h, texi_expr_hash(s->u.attr.value)), texi_stmt_hash(s->u.attr.body));
    case TEXI_STMT_INTRIN:
        return intrin_hash(h, s);
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    return h;
}
