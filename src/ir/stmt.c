/*
 * Statement nodes: the kind-name table and the raw constructors of the loop AST
 * (FOR, PROVIDE, REALIZE, STORE, ALLOCATE, IF, LET, SEQ, EVALUATE, BARRIER, ATTR,
 * INTRIN).
 *
 * Like the raw expression constructors in expr.c, these check nothing about
 * meaning (dtypes, scoping, bounds): lowering builds them from already checked
 * parts, and texi_verify is where well-formedness is checked. What they do:
 *   - allocate the node in the context's arena and copy every array argument
 *     (indices, region bounds, SEQ items), so callers may pass stack arrays;
 *   - fail with NULL on ENOMEM (recorded by texi_alloc), and also when a
 *     required operand is NULL, which is how an earlier failure shows up in a
 *     chain of constructor calls (recorded as TEX_EMISUSE unless an error is
 *     already recorded, which is then kept);
 *   - texi_seq_new flattens nested SEQs, so a SEQ never holds a SEQ, and
 *     returns the single statement itself when exactly one remains.
 * Optional operands: IF's else branch, ATTR's value.
 */
#include "ir/ir.h"

#include <string.h>

const char *const texi_stmt_kind_names[TEXI_STMT_KIND_COUNT] = {
#define X(name, spelling, member) spelling,
#include "ir/stmt_kinds.def"
#undef X
};
_Static_assert(sizeof texi_stmt_kind_names / sizeof *texi_stmt_kind_names == TEXI_STMT_KIND_COUNT,
               "statement kind table");

/* An arena copy of node; NULL on ENOMEM (recorded). */
static tex_stmt *stmt_new(tex_ctx *ctx, tex_stmt node)
{
    tex_stmt *s = texi_alloc(ctx, sizeof *s, "a statement");
    if (s)
        *s = node;
    return s;
}

/* A required operand of a constructor and its name in messages. */
typedef struct {
    const void *value;
    const char *name;
} operand;

/* False (recording the failure) when any of the n required operands is NULL. */
static bool operands_ok(tex_ctx *ctx, const char *call, int n, const operand ops[])
{
    for (int i = 0; i < n; i++) {
        if (!ops[i].value) {
            texi_error_null_operand(ctx, call, ops[i].name);
            return false;
        }
    }
    return true;
}

/* An arena copy of n expression pointers, none of them NULL; NULL on failure.
 * n == 0 gives a non-NULL empty array so that "NULL means failure" holds. */
static tex_expr **copy_exprs(tex_ctx *ctx, const char *call, int n, tex_expr *const src[])
{
    for (int i = 0; i < n; i++) {
        if (!src[i]) {
            texi_error_null_operand(ctx, call, "index");
            return NULL;
        }
    }
    tex_expr **dst = texi_alloc(ctx, sizeof *dst * (size_t)(n > 0 ? n : 1), call);
    if (dst && n > 0)
        memcpy(dst, src, sizeof *dst * (size_t)n);
    return dst;
}

tex_stmt *texi_for_new(tex_ctx *ctx, tex_expr *var, tex_expr *min, tex_expr *extent,
                       enum texi_for_kind kind, int thread_tag, tex_stmt *body)
{
    if (!operands_ok(ctx, "texi_for_new", 4,
                     (operand[]){{var, "var"}, {min, "min"}, {extent, "extent"}, {body, "body"}}))
        return NULL;
    int tag = kind == TEXI_FOR_THREAD ? thread_tag : -1;
    return stmt_new(ctx, (tex_stmt){TEXI_STMT_FOR, .u.loop = {var, min, extent, kind, tag, body}});
}

tex_stmt *texi_provide_new(tex_ctx *ctx, tex_tensor *t, int n, tex_expr *const idx[],
                           tex_expr *value)
{
    if (!operands_ok(ctx, "texi_provide_new", 2, (operand[]){{t, "tensor"}, {value, "value"}}))
        return NULL;
    tex_expr **copy = copy_exprs(ctx, "texi_provide_new", n, idx);
    return copy ? stmt_new(ctx, (tex_stmt){TEXI_STMT_PROVIDE, .u.provide = {t, n, copy, value}})
                : NULL;
}

tex_stmt *texi_realize_new(tex_ctx *ctx, tex_tensor *t, int ndim, tex_expr *const mins[],
                           tex_expr *const extents[], enum texi_scope scope, tex_stmt *body)
{
    if (!operands_ok(ctx, "texi_realize_new", 2, (operand[]){{t, "tensor"}, {body, "body"}}))
        return NULL;
    tex_expr **m = copy_exprs(ctx, "texi_realize_new", ndim, mins);
    tex_expr **e = m ? copy_exprs(ctx, "texi_realize_new", ndim, extents) : NULL;
    return e ? stmt_new(ctx,
                        (tex_stmt){TEXI_STMT_REALIZE, .u.realize = {t, ndim, m, e, scope, body}})
             : NULL;
}

tex_stmt *texi_store_new(tex_ctx *ctx, texi_buffer *buf, tex_expr *index, tex_expr *value)
{
    if (!operands_ok(ctx, "texi_store_new", 3,
                     (operand[]){{buf, "buffer"}, {index, "index"}, {value, "value"}}))
        return NULL;
    return stmt_new(ctx, (tex_stmt){TEXI_STMT_STORE, .u.store = {buf, index, value, NULL}});
}

tex_stmt *texi_masked_store_new(tex_ctx *ctx, texi_buffer *buf, tex_expr *index, tex_expr *value,
                                tex_expr *mask)
{
    if (!operands_ok(ctx, "texi_masked_store_new", 3,
                     (operand[]){{buf, "buffer"}, {index, "index"}, {value, "value"}}))
        return NULL;
    return stmt_new(ctx, (tex_stmt){TEXI_STMT_STORE, .u.store = {buf, index, value, mask}});
}

tex_stmt *texi_store_at(tex_ctx *ctx, const tex_stmt *s, tex_expr *index, tex_expr *value)
{
    return texi_masked_store_new(ctx, s->u.store.buf, index, value, s->u.store.mask);
}

tex_stmt *texi_allocate_new(tex_ctx *ctx, texi_buffer *buf, tex_stmt *body)
{
    if (!operands_ok(ctx, "texi_allocate_new", 2, (operand[]){{buf, "buffer"}, {body, "body"}}))
        return NULL;
    return stmt_new(ctx, (tex_stmt){TEXI_STMT_ALLOCATE, .u.alloc = {buf, body}});
}

tex_stmt *texi_if_new(tex_ctx *ctx, tex_expr *cond, tex_stmt *then_s, tex_stmt *else_s)
{
    if (!operands_ok(ctx, "texi_if_new", 2, (operand[]){{cond, "cond"}, {then_s, "then"}}))
        return NULL;
    return stmt_new(ctx, (tex_stmt){TEXI_STMT_IF, .u.ifs = {cond, then_s, else_s}});
}

tex_stmt *texi_let_new(tex_ctx *ctx, tex_expr *var, tex_expr *value, tex_stmt *body)
{
    if (!operands_ok(ctx, "texi_let_new", 3,
                     (operand[]){{var, "var"}, {value, "value"}, {body, "body"}}))
        return NULL;
    return stmt_new(ctx, (tex_stmt){TEXI_STMT_LET, .u.let = {var, value, body}});
}

/* The number of statements items[0..n) hold once nested SEQs are flattened;
 * -1 (recorded) when one is NULL. */
static int flat_count(tex_ctx *ctx, int n, tex_stmt *const items[])
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        if (!items[i]) {
            texi_error_null_operand(ctx, "texi_seq_new", "item");
            return -1;
        }
        total += items[i]->kind == TEXI_STMT_SEQ ? items[i]->u.seq.n : 1;
    }
    return total;
}

tex_stmt *texi_seq_new(tex_ctx *ctx, int n, tex_stmt *const items[])
{
    int total = flat_count(ctx, n, items);
    if (total < 0)
        return NULL;
    tex_stmt **flat = texi_alloc(ctx, sizeof *flat * (size_t)(total > 0 ? total : 1), "a sequence");
    if (!flat)
        return NULL;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (items[i]->kind != TEXI_STMT_SEQ) {
            flat[k++] = items[i];
            continue;
        }
        /* Items of an existing SEQ are already flat. */
        for (int j = 0; j < items[i]->u.seq.n; j++)
            flat[k++] = items[i]->u.seq.items[j];
    }
    if (total == 1)
        return flat[0];
    return stmt_new(ctx, (tex_stmt){TEXI_STMT_SEQ, .u.seq = {total, flat}});
}

tex_stmt *texi_evaluate_new(tex_ctx *ctx, tex_expr *value)
{
    if (!operands_ok(ctx, "texi_evaluate_new", 1, (operand[]){{value, "value"}}))
        return NULL;
    return stmt_new(ctx, (tex_stmt){TEXI_STMT_EVALUATE, .u.eval = {value}});
}

tex_stmt *texi_barrier_new(tex_ctx *ctx, enum texi_scope scope)
{
    return stmt_new(ctx, (tex_stmt){TEXI_STMT_BARRIER, .u.barrier = {scope}});
}

static const char *const attr_names[TEXI_ATTR_OTHER] = {
#define X(NAME, spelling) spelling,
#include "ir/attr_keys.def"
#undef X
};

static const char *const vector_reasons[TEXI_VECTOR_REASON_COUNT] = {
#define X(NAME, text) text,
#include "ir/vector_reasons.def"
#undef X
};

tex_stmt *texi_attr_new(tex_ctx *ctx, const char *key, tex_expr *value, tex_stmt *body)
{
    if (!operands_ok(ctx, "texi_attr_new", 2, (operand[]){{key, "key"}, {body, "body"}}))
        return NULL;
    const char *k = texi_strdup(ctx, key);
    if (!k)
        return NULL;
    enum texi_attr_key id = TEXI_ATTR_OTHER;
    for (int i = 0; i < TEXI_ATTR_OTHER; i++)
        if (strcmp(k, attr_names[i]) == 0)
            id = (enum texi_attr_key)i;
    return stmt_new(ctx, (tex_stmt){TEXI_STMT_ATTR, .u.attr = {k, id, value, body}});
}

tex_stmt *texi_attr_named(tex_ctx *ctx, enum texi_attr_key key, tex_expr *value, tex_stmt *body)
{
    return texi_attr_new(ctx, attr_names[key], value, body);
}

bool texi_attr_is(const tex_stmt *s, enum texi_attr_key key)
{
    return s && s->kind == TEXI_STMT_ATTR && s->u.attr.id == key;
}

bool texi_is_prefetch(const tex_stmt *s)
{
    return texi_attr_is(s, TEXI_ATTR_PREFETCH) || texi_attr_is(s, TEXI_ATTR_PREFETCH_WRITE);
}

tex_stmt *texi_attr_vector_failed(tex_ctx *ctx, enum texi_vector_reason why, tex_stmt *body)
{
    tex_expr *v = texi_int_imm(ctx, TEX_I32, (int64_t)why);
    return v ? texi_attr_named(ctx, TEXI_ATTR_VECTORIZE_FAILED, v, body) : NULL;
}

const char *texi_vector_reason_text(const tex_stmt *s)
{
    int64_t why;
    if (!texi_attr_is(s, TEXI_ATTR_VECTORIZE_FAILED) ||
        !texi_expr_is_int_const(s->u.attr.value, &why) || why < 0 ||
        why >= TEXI_VECTOR_REASON_COUNT)
        return NULL;
    return vector_reasons[why];
}

/* Copies n entries of src (each `size` bytes) into the arena; NULL src gives NULL. */
static void *copy_array(tex_ctx *ctx, const void *src, int n, size_t size, bool *ok)
{
    if (!src || n <= 0)
        return NULL;
    void *dst = texi_alloc(ctx, (size_t)n * size, "intrinsic argument");
    if (!dst)
        *ok = false;
    else
        memcpy(dst, src, (size_t)n * size);
    return dst;
}

tex_stmt *texi_intrin_new(tex_ctx *ctx, tex_intrin *intrin, enum texi_intrin_fn fn, int n_args,
                          const texi_intrin_arg args[])
{
    if (!operands_ok(ctx, "texi_intrin_new", 2, (operand[]){{intrin, "intrin"}, {args, "args"}}))
        return NULL;
    bool ok = true;
    texi_intrin_arg *copy = copy_array(ctx, args, n_args, sizeof *args, &ok);
    for (int i = 0; ok && i < n_args; i++) {
        texi_intrin_arg *a = &copy[i];
        a->mins = copy_array(ctx, args[i].mins, a->tensor_ndim, sizeof *a->mins, &ok);
        a->dim_map = copy_array(ctx, args[i].dim_map, a->ndim, sizeof *a->dim_map, &ok);
        a->strides = copy_array(ctx, args[i].strides, a->ndim, sizeof *a->strides, &ok);
    }
    return ok ? stmt_new(ctx, (tex_stmt){TEXI_STMT_INTRIN, .u.intrin = {intrin, fn, n_args, copy}})
              : NULL;
}
