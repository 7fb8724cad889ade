/*
 * Pass flatten: tensor-level storage to flat buffers.
 *
 *   REALIZE t(region) scope { body }  ->  ALLOCATE buf: t.dtype[extents] scope { body' }
 *   PROVIDE t[i0, .., ik] = v         ->  STORE buf[flat] = v
 *   ACCESS t[i0, .., ik]              ->  LOAD buf[flat]
 *   SEARCH of parameter t             ->  SEARCH of its buffer (1-D, compact)
 *   flat = sum_d (i_d - min_d) * stride_d
 *   INTRIN tile (t, mins, dim_map)    ->  (buf, offset = flat(mins), strides[j] =
 * stride_dim_map[j])
 *
 * A tensor parameter uses its global buffer (lw->func): mins 0, compact
 * row-major strides over the tensor's shape. A realized tensor gets a new
 * buffer named after it whose shape is the region's extents and whose mins
 * are the region's mins (so an attached producer's buffer is indexed
 * relative to the tile it holds). The scope comes from the REALIZE.
 *
 * storage_align padding and reorder_storage: above make_strides(); the
 * "double_buffer" mark: above flatten_realize().
 *
 * Indices are simplified (no ranges) so dumps stay readable; the simplify
 * pass does the rest. Realized tensors are found innermost first, so a
 * tensor realized twice on one path (never produced by ScheduleOps) would
 * still resolve to the innermost region.
 */
#include "lower/lower.h"

typedef struct {
    tex_tensor *tensor;
    texi_buffer *buf;
    tex_expr **mins;    /* per dimension */
    tex_expr **strides; /* per dimension, in elements */
} binding;

typedef struct {
    texi_lower *lw;
    tex_ctx *ctx;
    binding *binds;
    int n_binds, cap_binds;
    bool failed; /* an error is recorded in ctx; the walk's result is discarded */
} flattener;

/* a `kind` b in the promoted integer dtype of both. */
static tex_expr *arith(enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    if (!a || !b)
        return NULL;
    tex_dtype t = texi_dtype_promote(a->dtype, b->dtype);
    a = texi_convert(a, t);
    b = texi_convert(b, t);
    return a && b ? texi_binary(kind, a, b) : NULL;
}

static int push_binding(flattener *fl, binding b)
{
    binding *nb = texi_grow(fl->ctx, fl->binds, fl->n_binds, &fl->cap_binds, sizeof *nb, "flatten");
    if (!nb)
        return TEX_ENOMEM;
    fl->binds = nb;
    fl->binds[fl->n_binds++] = b;
    return 0;
}

/* Strides over shape: row-major when layout is NULL, else in the stage's
 * storage order (dimension storage_order[n - 1] the innermost,
 * reorder_storage) and padded per its storage_align. The last entry,
 * strides[n], receives the total element count.
 * storage_align (TVM semantics): when the stage of a realized tensor asks
 * for alignment of dimension d, stride_d is padded up so that
 * stride_d mod factor == offset. A buffer so padded or reordered is
 * allocated flat (one dimension holding strides[n] elements), since its
 * rows are no longer compact row-major. A tensor parameter's layout is the
 * caller's: neither applies to it.
 */
static tex_expr **make_strides(tex_ctx *ctx, int n, tex_expr *const shape[],
                               const tex_stage *layout)
{
    tex_expr **st = texi_alloc(ctx, sizeof *st * (size_t)(n + 1), "strides");
    if (!st)
        return NULL;
    tex_expr *stride = texi_int_imm(ctx, n ? shape[n - 1]->dtype : TEX_I32, 1);
    for (int k = n - 1; k >= 0 && stride; k--) {
        int d = layout ? layout->storage_order[k] : k;
        if (layout && layout->align_factor[d] > 0) {
            tex_expr *f = texi_int_imm(ctx, stride->dtype, layout->align_factor[d]);
            tex_expr *o = texi_int_imm(ctx, stride->dtype, layout->align_offset[d]);
            tex_expr *pad = arith(TEXI_EXPR_FLOORMOD,
                                  arith(TEXI_EXPR_SUB, arith(TEXI_EXPR_ADD, f, o),
                                        arith(TEXI_EXPR_FLOORMOD, stride, f)),
                                  f);
            stride = texi_simplify(arith(TEXI_EXPR_ADD, stride, pad), 0, NULL);
        }
        st[d] = stride;
        stride = stride ? texi_simplify(arith(TEXI_EXPR_MUL, stride, shape[d]), 0, NULL) : NULL;
    }
    st[n] = stride;
    return stride ? st : NULL;
}

/* Whether the stage of a realized tensor of ndim dims asks for a layout other
 * than compact row-major (storage_align, reorder_storage). */
static bool custom_layout(const tex_stage *st, int ndim)
{
    for (int d = 0; st && st->align_factor && d < ndim; d++)
        if (st->align_factor[d] > 0 || st->storage_order[d] != d)
            return true;
    return false;
}

/* Global buffers of the tensor parameters, outermost. */
static int bind_params(flattener *fl)
{
    const tex_func *f = fl->lw->func;
    for (int i = 0; f && i < f->n_params; i++) {
        const texi_param *p = &f->params[i];
        if (p->kind != TEX_ARG_TENSOR)
            continue;
        int n = p->tensor->ndim;
        tex_expr **mins = texi_alloc(fl->ctx, sizeof *mins * (size_t)(n + 1), "flatten");
        tex_expr **strides = make_strides(fl->ctx, n, p->buf->shape, NULL);
        if (!mins || !strides)
            return TEX_ENOMEM;
        for (int d = 0; d < n; d++)
            if (!(mins[d] = texi_int_imm(fl->ctx, p->buf->shape[d]->dtype, 0)))
                return TEX_ENOMEM;
        TEXI_TRY(push_binding(fl, (binding){p->tensor, p->buf, mins, strides}));
    }
    return 0;
}

static const binding *find(const flattener *fl, const tex_tensor *t)
{
    for (int i = fl->n_binds - 1; i >= 0; i--)
        if (fl->binds[i].tensor == t)
            return &fl->binds[i];
    return NULL;
}

/* The flat index of idx[0..n) in b; NULL on ENOMEM. */
static tex_expr *flat_index(const binding *b, int n, tex_expr *const idx[])
{
    tex_expr *sum = NULL;
    for (int d = 0; d < n; d++) {
        tex_expr *term =
            arith(TEXI_EXPR_MUL, arith(TEXI_EXPR_SUB, idx[d], b->mins[d]), b->strides[d]);
        sum = sum ? arith(TEXI_EXPR_ADD, sum, term) : term;
        if (!sum)
            return NULL;
    }
    if (!sum)
        sum = texi_int_imm(b->buf->data->ctx, TEX_I32, 0);
    return sum ? texi_simplify(sum, 0, NULL) : NULL;
}

static void unbound(flattener *fl, const tex_tensor *t)
{
    texi_error(fl->ctx, TEX_EINTERNAL,
               "tex_lower: flatten: tensor '%s' is neither a parameter nor realized", t->name);
    fl->failed = true;
}

/* Callbacks return their input on failure: a NULL result would mean
 * "not handled" to the traversal. */
static void *failed_at(flattener *fl, void *node)
{
    fl->failed = true;
    return node;
}

static tex_expr *rewrite_expr(tex_expr *e, void *ud);

/* The indices of an access or provide, rewritten first (they may read tensors). */
static tex_expr **rewrite_indices(flattener *fl, int n, tex_expr *const idx[])
{
    tex_expr **out = texi_alloc(fl->ctx, sizeof *out * (size_t)(n + 1), "flatten");
    for (int d = 0; out && d < n; d++)
        if (!(out[d] = texi_expr_mutate(idx[d], rewrite_expr, fl)))
            return NULL;
    return out;
}

/* A search of a 1-D parameter (min 0, stride 1, so positions are its flat
 * indices) searches its buffer. */
static tex_expr *flatten_search(flattener *fl, tex_expr *e)
{
    const binding *b = find(fl, e->u.search.tensor);
    int64_t min, stride;
    if (!b || !texi_expr_is_int_const(b->mins[0], &min) ||
        !texi_expr_is_int_const(b->strides[0], &stride) || min != 0 || stride != 1) {
        texi_error(fl->ctx, TEX_EINTERNAL,
                   "tex_lower: flatten: search of '%s', which is not a compact 1-D parameter",
                   e->u.search.tensor->name);
        fl->failed = true;
        return e;
    }
    tex_expr **ops =
        rewrite_indices(fl, 3, (tex_expr *[]){e->u.search.lo, e->u.search.hi, e->u.search.value});
    tex_expr *r =
        ops ? texi_search_new(e->u.search.op, NULL, b->buf, ops[0], ops[1], ops[2]) : NULL;
    return r ? r : failed_at(fl, e);
}

static tex_expr *rewrite_expr(tex_expr *e, void *ud)
{
    flattener *fl = ud;
    if (e->kind == TEXI_EXPR_SEARCH && e->u.search.tensor)
        return flatten_search(fl, e);
    if (e->kind != TEXI_EXPR_ACCESS)
        return NULL;
    const binding *b = find(fl, e->u.access.tensor);
    if (!b) {
        unbound(fl, e->u.access.tensor);
        return e;
    }
    tex_expr **idx = rewrite_indices(fl, e->u.access.n_idx, e->u.access.idx);
    tex_expr *index = idx ? flat_index(b, e->u.access.n_idx, idx) : NULL;
    tex_expr *load = index ? texi_load_new(b->buf, index) : NULL;
    return load ? load : failed_at(fl, e);
}

static tex_stmt *rewrite_stmt(tex_stmt *s, void *ud);

static tex_stmt *flatten_body(flattener *fl, tex_stmt *s)
{
    return texi_stmt_mutate(fl->ctx, s, rewrite_stmt, rewrite_expr, fl);
}

static tex_stmt *flatten_provide(flattener *fl, tex_stmt *s)
{
    const binding *b = find(fl, s->u.provide.tensor);
    if (!b) {
        unbound(fl, s->u.provide.tensor);
        return s;
    }
    tex_expr **idx = rewrite_indices(fl, s->u.provide.n_idx, s->u.provide.idx);
    tex_expr *index = idx ? flat_index(b, s->u.provide.n_idx, idx) : NULL;
    tex_expr *value = texi_expr_mutate(s->u.provide.value, rewrite_expr, fl);
    tex_stmt *store = index && value ? texi_store_new(fl->ctx, b->buf, index, value) : NULL;
    return store ? store : failed_at(fl, s);
}

/* An intrinsic's tiles: each tile origin becomes a flat offset into its
 * tensor's buffer, and each desc dimension gets the stride of the tensor
 * dimension it runs along. */
static tex_stmt *flatten_intrin(flattener *fl, tex_stmt *s)
{
    int n = s->u.intrin.n_args;
    texi_intrin_arg *args = texi_alloc(fl->ctx, sizeof *args * (size_t)n, "flatten");
    if (!args)
        return failed_at(fl, s);
    for (int i = 0; i < n; i++) {
        const texi_intrin_arg *a = &s->u.intrin.args[i];
        const binding *b = a->tensor ? find(fl, a->tensor) : NULL;
        if (!b) {
            if (a->tensor)
                unbound(fl, a->tensor);
            return a->tensor ? s : failed_at(fl, s);
        }
        tex_expr **mins = rewrite_indices(fl, a->tensor_ndim, a->mins);
        tex_expr **strides =
            texi_alloc(fl->ctx, sizeof *strides * (size_t)(a->ndim + 1), "flatten");
        tex_expr *offset = mins ? flat_index(b, a->tensor_ndim, mins) : NULL;
        if (!strides || !offset)
            return failed_at(fl, s);
        for (int j = 0; j < a->ndim; j++)
            strides[j] = b->strides[a->dim_map[j]];
        args[i] = (texi_intrin_arg){a->ndim, NULL, 0, NULL, NULL, b->buf, offset, strides};
    }
    tex_stmt *r = texi_intrin_new(fl->ctx, s->u.intrin.intrin, s->u.intrin.fn, n, args);
    return r ? r : failed_at(fl, s);
}

/* REALIZE to ALLOCATE.
 * double_buffer: the body of the ALLOCATE of a stage that asked for it is
 * wrapped in ATTR "double_buffer" whose value is the buffer's data variable
 * (texi_buffer_key), which the GPU pass of that name looks for. */
static tex_stmt *flatten_realize(flattener *fl, tex_stmt *s)
{
    tex_tensor *t = s->u.realize.tensor;
    int n = s->u.realize.ndim;
    tex_expr **ext = rewrite_indices(fl, n, s->u.realize.extents);
    tex_expr **mins = rewrite_indices(fl, n, s->u.realize.mins);
    const tex_stage *st = fl->lw->sch ? texi_schedule_find_stage(fl->lw->sch, t) : NULL;
    bool custom = custom_layout(st, n);
    tex_expr **strides = ext ? make_strides(fl->ctx, n, ext, custom ? st : NULL) : NULL;
    if (!mins || !strides)
        return failed_at(fl, s);
    texi_buffer *buf =
        custom ? texi_buffer_new(fl->ctx, t->name, t->dtype, s->u.realize.scope, 1, &strides[n])
               : texi_buffer_new(fl->ctx, t->name, t->dtype, s->u.realize.scope, n, ext);
    int n0 = fl->n_binds;
    if (!buf || push_binding(fl, (binding){t, buf, mins, strides}) < 0)
        return failed_at(fl, s);
    tex_stmt *body = flatten_body(fl, s->u.realize.body);
    fl->n_binds = n0;
    if (body && st && st->double_buffer)
        body = texi_attr_named(fl->ctx, TEXI_ATTR_DOUBLE_BUFFER, buf->data, body);
    tex_stmt *alloc = body ? texi_allocate_new(fl->ctx, buf, body) : NULL;
    return alloc ? alloc : failed_at(fl, s);
}

static tex_stmt *rewrite_stmt(tex_stmt *s, void *ud)
{
    flattener *fl = ud;
    switch (s->kind) {
    case TEXI_STMT_REALIZE:
        return flatten_realize(fl, s);
    case TEXI_STMT_PROVIDE:
        return flatten_provide(fl, s);
    case TEXI_STMT_INTRIN:
        return flatten_intrin(fl, s);
    case TEXI_STMT_FOR:
    case TEXI_STMT_STORE:
    case TEXI_STMT_ALLOCATE:
    case TEXI_STMT_IF:
    case TEXI_STMT_LET:
    case TEXI_STMT_SEQ:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_ATTR:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    return NULL; /* rebuilt around rewritten children */
}

int texi_pass_flatten(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    flattener fl = {lw, lw->ctx, NULL, 0, 0, false};
    TEXI_TRY(bind_params(&fl));
    tex_stmt *s = flatten_body(&fl, in);
    return texi_pass_result(lw, fl.failed ? NULL : s, out);
}
