/*
 * Whether a GEMM-like stage fits a CPU GEMM built-in (docs/api.md, rule 10:
 * C[6, NR] += A[6, K] . B[K, NR], "cpu.gemm_f32_avx2" with NR = 16 or
 * "cpu.gemm_f32_avx512" with NR = 64), so that cpu.c tensorizes its
 * register tiles. The stage's rows are its second-to-last axis m, its
 * columns its last axis n; its body must be sum(A[..] * B[..]) in f32 with
 *   - B's last index exactly n, B's other indices free of m and n, and one
 *     of them exactly the depth axis k (a reduce axis): B's tile is
 *     B[k, n] with unit column stride;
 *   - A's last index exactly k, k nowhere else in A, n nowhere in A, and m
 *     in exactly one index with coefficient 1 (x + rx of an NHWC conv, the
 *     i of a matmul): A's tile is A[m, k] with constant strides;
 *   - every extent constant (a last column tile of N % NR columns, or all
 *     of N below NR, runs the built-in's instance of that many columns).
 * Other reduce axes (a conv's window ry, rx) stay outside the tile: each of
 * their iterations is one UPDATE call of depth K. matmul and dense
 * ([M, K] x [K, N]), batched matmul and conv2d in NHWC with HWCF weights
 * and stride 1 fit; NCHW conv (its columns are pixels, its depth is not
 * A's last index), a transposed B and strided convs do not.
 *
 * Reads only the compute definition; the reason a stage does not fit is
 * kept for TEX_DUMP=fusion.
 */
#include "autosched/autosched.h"

/* The built-in of the host's widest vectors, its column count in *nr;
 * NULL without AVX2. */
static const char *host_builtin(const texi_as_machine *m, int64_t *nr)
{
    *nr = m->vbytes >= 64 ? 64 : 16;
    return m->vbytes >= 64 ? "cpu.gemm_f32_avx512" : m->vbytes >= 32 ? "cpu.gemm_f32_avx2" : NULL;
}

/* Whether access acc indexes iv in exactly one of its first `n` indices,
 * with coefficient 1, and nowhere else among them. */
static bool once_unit(const tex_expr *acc, int n, const tex_iter *iv)
{
    int hits = 0;
    for (int d = 0; d < n; d++) {
        int64_t c;
        if (!texi_linear_in(acc->u.access.idx[d], iv->var, &c) || (c != 0 && c != 1))
            return false;
        hits += c == 1;
    }
    return hits == 1;
}

/* Whether none of acc's first n indices uses iv. */
static bool none_uses(const tex_expr *acc, int n, const tex_iter *iv)
{
    for (int d = 0; d < n; d++)
        if (texi_as_expr_uses(acc->u.access.idx[d], iv))
            return false;
    return true;
}

/* The iter that index d of acc is exactly, or NULL. */
static tex_iter *index_iter(const tex_expr *acc, int d)
{
    const tex_expr *ix = acc->u.access.idx[d];
    return ix->kind == TEXI_EXPR_VAR ? ix->u.var.iter : NULL;
}

/* The reduce axis of op that iv is, or NULL. */
static tex_iter *reduce_axis_of(const texi_op *op, const tex_iter *iv)
{
    for (int r = 0; iv && r < op->n_raxes; r++)
        if (op->raxes[r] == iv)
            return op->raxes[r];
    return NULL;
}

/* The why-not of operands a (rows) and b (columns) of op; NULL when they
 * fit, with the depth axis in *k. */
static const char *check_operands(const texi_op *op, const tex_expr *a, const tex_expr *b,
                                  tex_iter **k)
{
    const tex_iter *m = op->axes[op->n_axes - 2], *n = op->axes[op->n_axes - 1];
    int na = a->u.access.n_idx, nb = b->u.access.n_idx;
    if (a->u.access.tensor->dtype != TEX_F32 || b->u.access.tensor->dtype != TEX_F32)
        return "an operand is not f32";
    *k = reduce_axis_of(op, index_iter(a, na - 1));
    if (!*k)
        return "the rows' operand is not read along a reduce axis (its last index)";
    if (!none_uses(a, na - 1, *k) || !none_uses(a, na, n) || !once_unit(a, na - 1, m))
        return "the rows' operand is not a strided [rows, depth] tile";
    if (!none_uses(b, nb - 1, m) || !none_uses(b, nb - 1, n) || !once_unit(b, nb - 1, *k))
        return "the columns' operand is not a strided [depth, columns] tile";
    return NULL;
}

/* Whether every axis and reduce axis of op has a constant extent. */
static bool const_extents(const texi_op *op)
{
    for (int i = 0; i < op->n_axes + op->n_raxes; i++) {
        const tex_iter *iv = i < op->n_axes ? op->axes[i] : op->raxes[i - op->n_axes];
        int64_t v;
        if (!tex_expr_const_int(iv->extent, &v))
            return false;
    }
    return true;
}

/* The why-not of stage st's body (see the file comment); NULL when it fits. */
static const char *check_body(const texi_op *op, tex_iter **k)
{
    const tex_expr *b = op->body;
    if (op->n_axes < 2 || b->kind != TEXI_EXPR_REDUCE || b->u.red.op != TEXI_REDUCE_SUM ||
        b->u.red.cond || b->dtype != TEX_F32)
        return "not an f32 sum over at least two axes";
    b = b->u.red.body;
    if (b->kind != TEXI_EXPR_MUL || b->u.bin.a->kind != TEXI_EXPR_ACCESS ||
        b->u.bin.b->kind != TEXI_EXPR_ACCESS)
        return "its body is not a product of two reads";
    if (!const_extents(op))
        return "a symbolic size";
    const tex_expr *x = b->u.bin.a, *y = b->u.bin.b;
    const tex_iter *n = op->axes[op->n_axes - 1];
    if (index_iter(x, x->u.access.n_idx - 1) == n) {
        const tex_expr *t = x;
        x = y;
        y = t;
    }
    if (index_iter(y, y->u.access.n_idx - 1) != n)
        return "no operand has the column axis as its last index";
    return check_operands(op, x, y, k);
}

const char *texi_as_tensorize_fit(const texi_as_graph *g, const tex_stage *st, tex_iter **k,
                                  const char **builtin, int64_t *nr)
{
    *k = NULL;
    *builtin = host_builtin(&g->mach, nr);
    if (!*builtin)
        return "the host has no AVX2";
    if (g->strict_float)
        return "-strict-float (the built-in contracts into FMAs)";
    return check_body(st->op, k);
}
