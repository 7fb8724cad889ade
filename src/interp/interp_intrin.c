/*
 * The interpreter's INTRIN statement (texi_interp_intrin, interp.h): a
 * tensor intrinsic's function run by its description's semantics, so that
 * every interpreter-based test works with tensorized schedules.
 *
 * Each tile argument is gathered into a compact host array of the desc
 * tensor's shape: before flattening through the tensor's storage (origin
 * mins, desc dimension j running along tensor dimension dim_map[j], checked
 * against the region), after flattening through the buffer (offset plus
 * index times stride, checked against the size). The oracle
 * (tex_eval_reference) computes desc from the input tiles; then
 *   BODY    the output tile = the result;
 *   RESET   the output tile = the reduction's identity;
 *   UPDATE  the output tile = old op result (sum +, prod *, max, min),
 * which is what the intrinsic's C functions must do. Elements are moved in
 * their native layout (f16/bf16 bit patterns), like a kernel's arrays. The
 * context's error state is kept as it was: an oracle failure becomes the
 * interpreter's error.
 */
#include "interp/interp.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DIMS 16

/* Where one tile lives: storage and the flat index of each tile element. */
typedef struct {
    texi_storage *st;
    int ndim;
    int64_t shape[MAX_DIMS];
    int64_t origin[MAX_DIMS]; /* pre-flatten: tensor coordinates of element 0 */
    int dim_of[MAX_DIMS];     /* pre-flatten: tensor dimension of desc dimension j */
    int tensor_ndim;          /* pre-flatten; 0 after */
    int64_t offset;           /* flat: element 0 */
    int64_t stride[MAX_DIMS]; /* flat: per desc dimension */
} tile;

static int tile_setup(texi_interp *ip, texi_frame *fr, const texi_intrin_arg *a,
                      const tex_tensor *dt, tile *t)
{
    memset(t, 0, sizeof *t);
    t->ndim = dt->ndim;
    if (dt->ndim > MAX_DIMS || a->tensor_ndim > MAX_DIMS)
        return texi_interp_fail(ip, TEX_EINTERNAL, "intrinsic tile with too many dimensions");
    for (int j = 0; j < dt->ndim; j++)
        if (!texi_expr_is_int_const(dt->shape[j], &t->shape[j]))
            return texi_interp_fail(ip, TEX_EINVAL,
                                    "intrinsic tensor '%s' has a non-constant shape", dt->name);
    if (a->tensor) {
        t->st = texi_interp_find_tensor(fr, a->tensor);
        t->tensor_ndim = a->tensor_ndim;
        for (int d = 0; d < a->tensor_ndim; d++)
            TEXI_TRY(texi_interp_int(ip, fr, a->mins[d], &t->origin[d]));
        for (int j = 0; j < dt->ndim; j++)
            t->dim_of[j] = a->dim_map[j];
    } else {
        t->st = a->buf ? texi_interp_find_buffer(fr, a->buf) : NULL;
        TEXI_TRY(texi_interp_int(ip, fr, a->offset, &t->offset));
        for (int j = 0; j < dt->ndim; j++)
            TEXI_TRY(texi_interp_int(ip, fr, a->strides[j], &t->stride[j]));
    }
    if (!t->st)
        return texi_interp_fail(ip, TEX_EINTERNAL, "intrinsic tile of '%s', which is not allocated",
                                a->tensor ? a->tensor->name
                                : a->buf  ? a->buf->name
                                          : "?");
    return 0;
}

/* The storage index of the tile element at desc coordinates j[]. */
static int tile_index(texi_interp *ip, const tile *t, const int64_t j[], int64_t *flat)
{
    if (t->tensor_ndim) {
        int64_t idx[MAX_DIMS];
        memcpy(idx, t->origin, sizeof idx[0] * (size_t)t->tensor_ndim);
        for (int k = 0; k < t->ndim; k++)
            idx[t->dim_of[k]] += j[k];
        return texi_interp_tensor_index(ip, t->st, t->tensor_ndim, idx, "intrinsic access", flat);
    }
    int64_t f = t->offset;
    for (int k = 0; k < t->ndim; k++)
        f += j[k] * t->stride[k];
    if (f < 0 || f >= t->st->size)
        return texi_interp_fail(ip, TEX_EINTERNAL,
                                "out-of-bounds intrinsic access of buffer '%s': index %lld, size "
                                "%lld",
                                t->st->name, (long long)f, (long long)t->st->size);
    *flat = f;
    return 0;
}

/* Advances the row-major counter j over shape; false after the last element. */
static bool next(int n, const int64_t shape[], int64_t j[])
{
    for (int k = n - 1; k >= 0; k--) {
        if (++j[k] < shape[k])
            return true;
        j[k] = 0;
    }
    return false;
}

static bool empty(const tile *t)
{
    for (int k = 0; k < t->ndim; k++)
        if (t->shape[k] <= 0)
            return true;
    return false;
}

/* Copies between the tile and the compact array (to_array: gather). */
static int tile_copy(texi_interp *ip, const tile *t, DLTensor *arr, bool to_array)
{
    size_t bytes = (size_t)tex_dtype_bytes(t->st->dtype);
    int64_t j[MAX_DIMS] = {0}, flat, r = 0;
    if (empty(t))
        return 0;
    do {
        TEXI_TRY(tile_index(ip, t, j, &flat));
        char *src = t->st->data + flat * (int64_t)bytes,
             *dst = (char *)arr->data + r * (int64_t)bytes;
        memcpy(to_array ? dst : src, to_array ? src : dst, bytes);
        r++;
    } while (next(t->ndim, t->shape, j));
    return 0;
}

/* The oracle on desc with the gathered inputs; result in arrs[n_in]. */
static int run_desc(texi_interp *ip, const tex_intrin *in, DLTensor **arrs)
{
    tex_ctx *ctx = in->ctx;
    tex_tensor **ts = malloc(sizeof *ts * (size_t)(in->n_inputs + 1));
    int saved_code = ctx->errcode, rc;
    char *saved_msg = malloc(TEXI_ERRMSG_MAX);
    if (!ts || !saved_msg) {
        free(ts);
        free(saved_msg);
        return texi_interp_fail(ip, TEX_ENOMEM, "out of memory (intrinsic '%s')", in->name);
    }
    memcpy(saved_msg, ctx->errmsg, TEXI_ERRMSG_MAX);
    for (int i = 0; i < in->n_inputs; i++)
        ts[i] = in->inputs[i];
    ts[in->n_inputs] = in->desc;
    ctx->errcode = 0;
    rc = tex_eval_reference(ctx, in->n_inputs + 1, ts, arrs);
    if (rc < 0)
        texi_interp_fail(ip, rc, "intrinsic '%s': %s", in->name, ctx->errmsg);
    ctx->errcode = saved_code;
    memcpy(ctx->errmsg, saved_msg, TEXI_ERRMSG_MAX);
    free(saved_msg);
    free(ts);
    return rc;
}

/* The output tile after fn, from its old contents in out and the oracle's result in res. */
static void combine(const tex_stmt *s, DLTensor *out, const DLTensor *res, int64_t n)
{
    const tex_tensor *d = s->u.intrin.intrin->desc;
    tex_dtype t = d->dtype;
    enum texi_reduce_op op =
        d->op->body->kind == TEXI_EXPR_REDUCE ? d->op->body->u.red.op : TEXI_REDUCE_SUM;
    for (int64_t i = 0; i < n; i++) {
        texi_eval_value v = texi_eval_identity(op, t);
        switch (s->u.intrin.fn) {
        case TEXI_INTRIN_RESET:
        case TEXI_INTRIN_FN_COUNT:
            break;
        case TEXI_INTRIN_BODY:
            v = texi_eval_load(t, res->data, i);
            break;
        case TEXI_INTRIN_UPDATE:
            v = texi_eval_combine(op, t, texi_eval_load(t, out->data, i),
                                  texi_eval_load(t, res->data, i));
            break;
        }
        texi_eval_store(t, out->data, i, v);
    }
}

static int64_t count(const tile *t)
{
    int64_t n = 1;
    for (int k = 0; k < t->ndim; k++)
        n *= t->shape[k] > 0 ? t->shape[k] : 0;
    return n;
}

/* Gathers the tiles, runs the oracle, applies fn, scatters the output tile.
 * arrs: the inputs' arrays, the oracle's result, the output's old tile. */
static int run_tiles(texi_interp *ip, const tex_stmt *s, tile *tiles, DLTensor **arrs)
{
    const tex_intrin *in = s->u.intrin.intrin;
    int n = s->u.intrin.n_args, n_in = n - 1;
    const tile *out = &tiles[n_in];
    DLDevice host = {kDLCPU, 0};
    for (int i = 0; i <= in->n_inputs + 1; i++) {
        const tile *t = i < n_in ? &tiles[i] : out;
        tex_dtype dt = i < n_in ? in->inputs[i]->dtype : in->desc->dtype;
        if (i < in->n_inputs && i >= n_in)
            continue; /* RESET: no inputs */
        if (!(arrs[i] = tex_array_new(t->ndim, t->shape, dt, host)))
            return texi_interp_fail(ip, TEX_ENOMEM, "out of memory (intrinsic '%s')", in->name);
        if (i < n_in || i == in->n_inputs + 1)
            TEXI_TRY(tile_copy(ip, t, arrs[i], true));
    }
    if (s->u.intrin.fn != TEXI_INTRIN_RESET)
        TEXI_TRY(run_desc(ip, in, arrs));
    combine(s, arrs[in->n_inputs + 1], arrs[in->n_inputs], count(out));
    return tile_copy(ip, out, arrs[in->n_inputs + 1], false);
}

int texi_interp_intrin(texi_interp *ip, texi_frame *fr, const tex_stmt *s)
{
    const tex_intrin *in = s->u.intrin.intrin;
    int n = s->u.intrin.n_args;
    int want = s->u.intrin.fn == TEXI_INTRIN_RESET ? 1 : in->n_inputs + 1;
    if (n != want)
        return texi_interp_fail(ip, TEX_EINTERNAL, "intrinsic '%s' called with %d tiles, not %d",
                                in->name, n, want);
    tile *tiles = calloc((size_t)n, sizeof *tiles);
    DLTensor **arrs = calloc((size_t)in->n_inputs + 2, sizeof *arrs);
    int rc = tiles && arrs ? 0 : texi_interp_fail(ip, TEX_ENOMEM, "out of memory (intrinsic)");
    for (int i = 0; rc == 0 && i < n; i++)
        rc = tile_setup(ip, fr, &s->u.intrin.args[i], i < n - 1 ? in->inputs[i] : in->desc,
                        &tiles[i]);
    if (rc == 0)
        rc = run_tiles(ip, s, tiles, arrs);
    for (int i = 0; arrs && i < in->n_inputs + 2; i++)
        tex_array_free(arrs[i]);
    free(arrs);
    free(tiles);
    return rc;
}
