/*
 * sparse.h: random CSR matrices for the sparse tests and benchmarks, and
 * their dense references. Header-only (static functions).
 *
 * Row-length patterns: uniform lengths in [0, 2 * avg], every third row
 * empty, one row dense (every column) with the others short, and power-law
 * lengths (row r has about avg * (m / (r + 1))^0.8 / H non-zeros, shuffled
 * over the rows, so a few rows hold most of them). Columns within a row are
 * distinct and sorted; values are random non-zero numbers in +-[0.5, 1.5].
 */
#ifndef TEX_TESTS_SUPPORT_SPARSE_H
#define TEX_TESTS_SUPPORT_SPARSE_H

#include <tex/tex.h>

#include <stdbool.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef enum { SP_UNIFORM, SP_EMPTY_ROWS, SP_DENSE_ROW, SP_POWER_LAW } sp_pattern;

typedef struct {
    int64_t m, n, nnz;
    int32_t *indptr;  /* m + 1 */
    int32_t *indices; /* nnz */
    float *values;    /* nnz */
} sp_csr;

static inline uint64_t sp_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* A random non-zero value in +-[0.5, 1.5]. */
static inline float sp_value(uint64_t *s)
{
    float v = 0.5f + (float)(sp_rand(s) % 1000) / 1000.0f;
    return sp_rand(s) & 1 ? v : -v;
}

/* Row r's number of non-zeros under pattern p (at most n). */
static inline int64_t sp_row_len(sp_pattern p, int64_t r, int64_t m, int64_t n, double avg,
                                 uint64_t *s)
{
    int64_t len = 0;
    switch (p) {
    case SP_UNIFORM:
        len = (int64_t)(sp_rand(s) % (uint64_t)(2 * avg + 1));
        break;
    case SP_EMPTY_ROWS:
        len = r % 3 == 0 ? 0 : (int64_t)(sp_rand(s) % (uint64_t)(2 * avg + 1));
        break;
    case SP_DENSE_ROW:
        len = r == m / 2 ? n : (int64_t)(sp_rand(s) % 3);
        break;
    case SP_POWER_LAW: {
        int64_t rank = (int64_t)(sp_rand(s) % (uint64_t)m);
        len = (int64_t)(avg * 0.25 * pow((double)m / (double)(rank + 1), 0.8));
        break;
    }
    }
    return len < n ? len : n;
}

/* Fills row r's sorted distinct columns (len of them) into cols. */
static inline void sp_row_cols(int64_t n, int64_t len, int32_t *cols, uint64_t *s)
{
    if (len == 0)
        return;
    if (len * 2 >= n) { /* dense-ish: take each column with probability len/n, then fix up */
        int64_t k = 0;
        for (int64_t c = 0; c < n && k < len; c++)
            if ((int64_t)(sp_rand(s) % (uint64_t)(n - c)) < len - k)
                cols[k++] = (int32_t)c;
        return;
    }
    int64_t stride = n / len, k = 0;
    for (int64_t c = 0; k < len; k++, c += stride) /* one column per stride window */
        cols[k] = (int32_t)(c + (int64_t)(sp_rand(s) % (uint64_t)stride));
}

/* A random m x n CSR matrix with about avg non-zeros per row. */
static inline sp_csr sp_csr_random(int64_t m, int64_t n, double avg, sp_pattern p, uint64_t seed)
{
    sp_csr a = {m, n, 0, calloc((size_t)m + 1, sizeof(int32_t)), NULL, NULL};
    uint64_t s = seed;
    for (int64_t r = 0; r < m; r++)
        a.indptr[r + 1] = a.indptr[r] + (int32_t)sp_row_len(p, r, m, n, avg, &s);
    a.nnz = a.indptr[m];
    a.indices = malloc(sizeof(int32_t) * (size_t)(a.nnz + 1));
    a.values = malloc(sizeof(float) * (size_t)(a.nnz + 1));
    for (int64_t r = 0; r < m; r++)
        sp_row_cols(n, a.indptr[r + 1] - a.indptr[r], a.indices + a.indptr[r], &s);
    for (int64_t q = 0; q < a.nnz; q++)
        a.values[q] = sp_value(&s);
    return a;
}

static inline void sp_csr_free(sp_csr *a)
{
    free(a->indptr);
    free(a->indices);
    free(a->values);
}

/* A 1-D or 2-D host DLTensor over caller-owned data (shape copied in). */
typedef struct {
    DLTensor t;
    int64_t shape[2];
} sp_view;

static inline DLTensor *sp_view_of(sp_view *v, void *data, DLDataType dt, int ndim, int64_t d0,
                                   int64_t d1)
{
    v->shape[0] = d0;
    v->shape[1] = d1;
    v->t = (DLTensor){data, {kDLCPU, 0}, ndim, dt, v->shape, NULL, 0};
    return &v->t;
}

static inline DLTensor *sp_i32(sp_view *v, int32_t *data, int64_t n)
{
    return sp_view_of(v, data, (DLDataType){kDLInt, 32, 1}, 1, n, 0);
}

static inline DLTensor *sp_f32(sp_view *v, float *data, int ndim, int64_t d0, int64_t d1)
{
    return sp_view_of(v, data, (DLDataType){kDLFloat, 32, 1}, ndim, d0, d1);
}

/* Y[m, f] = A X with X [n, f] (double accumulation). */
static inline void sp_spmm_ref(const sp_csr *a, const float *x, int64_t f, double *y)
{
    for (int64_t r = 0; r < a->m; r++)
        for (int64_t k = 0; k < f; k++) {
            double acc = 0;
            for (int32_t q = a->indptr[r]; q < a->indptr[r + 1]; q++)
                acc += (double)a->values[q] * x[(int64_t)a->indices[q] * f + k];
            y[r * f + k] = acc;
        }
}

/* O[q] = sum_k X[row(q), k] * Y[col(q), k] at A's non-zeros q (X [m, f], Y [n, f]). */
static inline void sp_sddmm_ref(const sp_csr *a, const float *x, const float *y, int64_t f,
                                double *o)
{
    for (int64_t r = 0; r < a->m; r++)
        for (int32_t q = a->indptr[r]; q < a->indptr[r + 1]; q++) {
            double acc = 0;
            for (int64_t k = 0; k < f; k++)
                acc += (double)x[r * f + k] * y[(int64_t)a->indices[q] * f + k];
            o[q] = acc;
        }
}

/* The first q with got[q] farther from want[q] than tol relative to
 * max(1, |want[q]|) (a NaN never passes), or -1. */
static inline int64_t sp_first_mismatch(const float *got, const double *want, int64_t n, double tol)
{
    for (int64_t q = 0; q < n; q++)
        if (!(fabs(got[q] - want[q]) <= tol * fmax(1.0, fabs(want[q]))))
            return q;
    return -1;
}

/* n random non-zero floats (malloc'ed, one spare element). */
static inline float *sp_random_floats(int64_t n, uint64_t seed)
{
    float *x = malloc(sizeof *x * (size_t)(n + 1));
    for (int64_t q = 0; x && q < n; q++)
        x[q] = sp_value(&seed);
    return x;
}

/* Fills y with NaN, which no comparison passes. */
static inline void sp_poison(float *y, int64_t n)
{
    for (int64_t q = 0; q < n; q++)
        y[q] = NAN;
}

/* The CSR format of one context (I: m rows, J: n columns and nnz
 * non-zeros under I, K: f features) and the dense operands of SpMM / SDDMM. */
typedef struct {
    tex_ctx *ctx;
    tex_expr *m, *n, *nnz, *f;
    tex_sp_axis *I, *J, *K;
    tex_sp_buffer *A;
    tex_tensor *X, *Y; /* X [n, f] (SpMM) or [m, f] and Y [n, f] (SDDMM) */
} sp_fmt;

static inline void sp_fmt_init(sp_fmt *c, tex_ctx *ctx, tex_expr *m, tex_expr *n, tex_expr *nnz,
                               tex_expr *f)
{
    *c = (sp_fmt){ctx, m, n, nnz, f, NULL, NULL, NULL, NULL, NULL, NULL};
    c->I = tex_sp_dense_fixed(ctx, "I", NULL, m);
    c->J = tex_sp_sparse_variable(ctx, "J", c->I, n, nnz);
    c->K = tex_sp_dense_fixed(ctx, "K", NULL, f);
    c->A = tex_sp_buffer_new(ctx, "A", TEX_F32, 2, (tex_sp_axis *[]){c->I, c->J});
}

/* SpMM Y = A X: the iteration over (I, J, K), kinds "SRS"; parameters
 * J_indptr, J_indices, A, X, Y. */
static inline tex_tensor *sp_fmt_spmm(sp_fmt *c)
{
    c->X = tex_placeholder(c->ctx, "X", TEX_F32, 2, (tex_expr *[]){c->n, c->f});
    tex_expr *a = tex_sp_at(c->A, 2, (tex_sp_axis *[]){c->I, c->J});
    tex_expr *body = tex_mul(a, TEX_AT(c->X, tex_sp_coord(c->J), tex_sp_coord(c->K)));
    return tex_sp_iteration(c->ctx, "Y", 3, (tex_sp_axis *[]){c->I, c->J, c->K}, "SRS", NULL, body);
}

/* SDDMM O = (X Y^T) at A's non-zeros: (I, J, K), kinds "SSR", output
 * buffer O over (I, J), its rows found as `rows` says; parameters
 * J_indices, J_rows (TEX_SP_ROWS_ARRAY) or J_indptr (TEX_SP_ROWS_SEARCH),
 * X, Y, O. */
static inline tex_sp_iter *sp_fmt_sddmm_iter(sp_fmt *c, tex_sp_rows_mode rows)
{
    c->X = tex_placeholder(c->ctx, "X", TEX_F32, 2, (tex_expr *[]){c->m, c->f});
    c->Y = tex_placeholder(c->ctx, "Y", TEX_F32, 2, (tex_expr *[]){c->n, c->f});
    tex_sp_buffer *o = tex_sp_buffer_new(c->ctx, "O", TEX_F32, 2, (tex_sp_axis *[]){c->I, c->J});
    tex_expr *body = tex_mul(TEX_AT(c->X, tex_sp_coord(c->I), tex_sp_coord(c->K)),
                             TEX_AT(c->Y, tex_sp_coord(c->J), tex_sp_coord(c->K)));
    tex_sp_iter *it =
        tex_sp_iter_new(c->ctx, "sddmm", 3, (tex_sp_axis *[]){c->I, c->J, c->K}, "SSR", o, body);
    return it && tex_sp_iter_rows(it, rows) == 0 ? it : NULL;
}

static inline tex_tensor *sp_fmt_sddmm(sp_fmt *c)
{
    return tex_sp_iter_lower(sp_fmt_sddmm_iter(c, TEX_SP_ROWS_ARRAY));
}

/* The format of a's CSR arrays in a new context, sizes symbolic (tex_var)
 * or constant. */
static inline tex_ctx *sp_fmt_new(sp_fmt *c, const sp_csr *a, int64_t f, bool sym)
{
    tex_ctx *ctx = tex_ctx_new();
    sp_fmt_init(c, ctx, sym ? tex_var(ctx, "m", TEX_I64) : tex_int(ctx, a->m),
                sym ? tex_var(ctx, "n", TEX_I64) : tex_int(ctx, a->n),
                sym ? tex_var(ctx, "nnz", TEX_I64) : tex_int(ctx, a->nnz),
                sym ? tex_var(ctx, "f", TEX_I64) : tex_int(ctx, f));
    return ctx;
}

/* SpMM Y = A X over a new context's format of a (*c; n constant: no
 * argument has a dimension n to bind it), X a CSR matrix over [n, f] of
 * xs's shape with nnzx non-zeros (axes JX, KX; buffer "XS", *kx and *x)
 * read at (J, K). Y, or NULL (the error in *ctx). */
static inline tex_tensor *sp_spmm_sparse_x(tex_ctx **ctx, sp_fmt *c, const sp_csr *a,
                                           const sp_csr *xs, bool sym, bool sym_nnzx,
                                           tex_sp_axis **kx, tex_sp_buffer **x)
{
    tex_ctx *cx = *ctx = tex_ctx_new();
    sp_fmt_init(c, cx, sym ? tex_var(cx, "m", TEX_I64) : tex_int(cx, a->m), tex_int(cx, a->n),
                sym ? tex_var(cx, "nnz", TEX_I64) : tex_int(cx, a->nnz),
                sym ? tex_var(cx, "f", TEX_I64) : tex_int(cx, xs->n));
    tex_expr *nnzx = sym_nnzx ? tex_var(cx, "nnzx", TEX_I64) : tex_int(cx, xs->nnz);
    tex_sp_axis *jx = tex_sp_dense_fixed(cx, "JX", NULL, c->n);
    *kx = tex_sp_sparse_variable(cx, "KX", jx, c->f, nnzx);
    *x = tex_sp_buffer_new(cx, "XS", TEX_F32, 2, (tex_sp_axis *[]){jx, *kx});
    tex_expr *body = tex_mul(tex_sp_at(c->A, 2, (tex_sp_axis *[]){c->I, c->J}),
                             tex_sp_at(*x, 2, (tex_sp_axis *[]){c->J, c->K}));
    return tex_sp_iteration(cx, "Y", 3, (tex_sp_axis *[]){c->I, c->J, c->K}, "SRS", NULL, body);
}

/* a as a dense rows x a->n matrix (rows >= a->m; malloc'ed, zeros elsewhere). */
static inline float *sp_csr_dense(const sp_csr *a, int64_t rows)
{
    float *d = calloc((size_t)(rows * a->n + 1), sizeof *d);
    for (int64_t r = 0; d && r < a->m; r++)
        for (int32_t q = a->indptr[r]; q < a->indptr[r + 1]; q++)
            d[r * a->n + a->indices[q]] = a->values[q];
    return d;
}

/* O[q] = A[r, c] * D[r, c] at A's non-zeros q = (r, c), D dense [m, n]. */
static inline void sp_masked_ref(const sp_csr *a, const float *d, double *o)
{
    for (int64_t r = 0; r < a->m; r++)
        for (int32_t q = a->indptr[r]; q < a->indptr[r + 1]; q++)
            o[q] = (double)a->values[q] * d[r * a->n + a->indices[q]];
}

/* A sparse SpMM stage (one part of hyb SpMM, tex_sp_hyb_spmm, or CSR SpMM)
 * scheduled: rows in parallel, `rows` at a time (0: one); per row and
 * chunk of `chunk` features, the non-zeros accumulate into a local buffer
 * (cache_write at the chunk loop); inside the loop over the non-zeros, the
 * chunk's groups of `lanes` features unrolled and each vectorized, so that
 * a non-zero's index and value are read once and the chunk / lanes
 * accumulators (registers) are independent chains; the reduction (a
 * bucket's constant width) unrolled when unroll is set; with prefetch > 0,
 * the rows of x (the dense operand) that the non-zero `prefetch` positions
 * later reads are prefetched (tex_prefetch). 0 or the first failing call's
 * code. */
static inline int sp_hyb_schedule_part(tex_schedule *s, tex_tensor *part, int rows, int chunk,
                                       int lanes, bool unroll, tex_tensor *x, int prefetch)
{
    tex_ctx *ctx = tex_tensor_ctx(part);
    tex_tensor *pl = tex_cache_write(s, part, TEX_SCOPE_LOCAL);
    if (!pl)
        return -1;
    tex_stage *st = tex_stage_of(s, part), *sl = tex_stage_of(s, pl);
    tex_iter *r = tex_op_axis(st, 0), *ro = r, *ri, *ko, *ki, *klo, *kli;
    tex_iter *j = tex_op_reduce_axis(sl, 0);
    int rc = rows > 1 ? tex_split(st, r, tex_int(ctx, rows), &ro, &ri) : 0;
    rc = rc ? rc : tex_split(st, tex_op_axis(st, 1), tex_int(ctx, chunk), &ko, &ki);
    rc = rc ? rc : tex_parallel(st, ro);
    rc = rc ? rc : tex_vectorize(st, ki);
    rc = rc ? rc : tex_compute_at(sl, st, ko);
    rc = rc ? rc : tex_split(sl, tex_op_axis(sl, 1), tex_int(ctx, lanes), &klo, &kli);
    rc = rc ? rc : tex_reorder(sl, 3, (tex_iter *[]){j, klo, kli});
    rc = rc ? rc : tex_unroll(sl, klo);
    rc = rc ? rc : tex_vectorize(sl, kli);
    rc = rc || !prefetch ? rc : tex_prefetch(sl, x, j, prefetch);
    return rc || !unroll ? rc : tex_unroll(sl, j);
}

/* ------------------------------------------------- sparse convolution */

enum { SP_KV = 27 }; /* the offsets of a 3 x 3 x 3 kernel */

/* A submanifold 3 x 3 x 3 convolution's pairs on a g^3 grid whose sites
 * are occupied with probability `fill` (out = in: the occupied sites, in
 * order): per output site, its occupied neighbours (src) and their kernel
 * offsets (off), in offset order; indptr over the sites. */
typedef struct {
    int64_t sites, pairs;
    int32_t *indptr, *src, *off;
} sp_rulebook;

static inline sp_rulebook sp_rulebook_random(int64_t g, double fill, uint64_t seed)
{
    sp_rulebook r = {0, 0, NULL, NULL, NULL};
    int32_t *id = malloc(sizeof *id * (size_t)(g * g * g));
    uint64_t s = seed;
    for (int64_t v = 0; v < g * g * g; v++)
        id[v] = (double)(sp_rand(&s) % 1000) < fill * 1000 ? (int32_t)r.sites++ : -1;
    r.indptr = calloc((size_t)r.sites + 1, sizeof *r.indptr);
    r.src = malloc(sizeof *r.src * (size_t)(r.sites * SP_KV + 1));
    r.off = malloc(sizeof *r.off * (size_t)(r.sites * SP_KV + 1));
    for (int64_t v = 0; v < g * g * g; v++) {
        if (id[v] < 0)
            continue;
        int64_t z = v / (g * g), y = v / g % g, x = v % g;
        for (int o = 0; o < SP_KV; o++) {
            int64_t nz = z + o / 9 - 1, ny = y + o / 3 % 3 - 1, nx = x + o % 3 - 1;
            if (nz < 0 || ny < 0 || nx < 0 || nz >= g || ny >= g || nx >= g ||
                id[(nz * g + ny) * g + nx] < 0)
                continue;
            r.src[r.pairs] = id[(nz * g + ny) * g + nx];
            r.off[r.pairs++] = o;
        }
        r.indptr[id[v] + 1] = (int32_t)r.pairs;
    }
    free(id);
    return r;
}

static inline void sp_rulebook_free(sp_rulebook *r)
{
    free(r->indptr);
    free(r->src);
    free(r->off);
}

/* Out [sites, cout] = sum over each output site's pairs q of
 * In[src(q), :] . W[off(q), :, :] (In [sites, cin], W [SP_KV, cin, cout])
 * as a sparse iteration over (O, J, D, CI, CO), "SRRRS": O the output
 * sites, J under it the pairs (indices: the input sites), D under J one
 * column per pair (indices: the offsets); sizes symbolic when sym. Its
 * parameters into args[0..6): J_indptr, J_indices, D_indices, In, W, Out. */
static inline tex_tensor *sp_sparse_conv(tex_ctx *ctx, const sp_rulebook *r, int64_t cin,
                                         int64_t cout, bool sym, tex_tensor *args[6])
{
    tex_expr *sites = sym ? tex_var(ctx, "sites", TEX_I64) : tex_int(ctx, r->sites);
    tex_expr *pairs = sym ? tex_var(ctx, "pairs", TEX_I64) : tex_int(ctx, r->pairs);
    tex_expr *ci_n = sym ? tex_var(ctx, "cin", TEX_I64) : tex_int(ctx, cin);
    tex_expr *co_n = sym ? tex_var(ctx, "cout", TEX_I64) : tex_int(ctx, cout);
    tex_sp_axis *O = tex_sp_dense_fixed(ctx, "O", NULL, sites);
    tex_sp_axis *J = tex_sp_sparse_variable(ctx, "J", O, sites, pairs);
    tex_sp_axis *D = tex_sp_sparse_fixed(ctx, "D", J, tex_int(ctx, SP_KV), tex_int(ctx, 1));
    tex_sp_axis *CI = tex_sp_dense_fixed(ctx, "CI", NULL, ci_n);
    tex_sp_axis *CO = tex_sp_dense_fixed(ctx, "CO", NULL, co_n);
    tex_tensor *in = tex_placeholder(ctx, "In", TEX_F32, 2, (tex_expr *[]){sites, ci_n});
    tex_tensor *w =
        tex_placeholder(ctx, "W", TEX_F32, 3, (tex_expr *[]){tex_int(ctx, SP_KV), ci_n, co_n});
    tex_expr *body = tex_mul(TEX_AT(in, tex_sp_coord(J), tex_sp_coord(CI)),
                             TEX_AT(w, tex_sp_coord(D), tex_sp_coord(CI), tex_sp_coord(CO)));
    tex_tensor *out =
        tex_sp_iteration(ctx, "Out", 5, (tex_sp_axis *[]){O, J, D, CI, CO}, "SRRRS", NULL, body);
    tex_tensor *a[6] = {tex_sp_indptr(J), tex_sp_indices(J), tex_sp_indices(D), in, w, out};
    memcpy(args, a, sizeof a);
    return out;
}

/* The host arrays of an SDDMM's parameters over a's pattern (its indices,
 * each non-zero's row, x [m, f], y [n, f], out [nnz]), views in v; rows is
 * filled from a's indptr (tex_sp_fill_rows, whose code is returned). */
static inline int sp_sddmm_arrays(const sp_csr *a, int32_t *rows, float *x, float *y, int64_t f,
                                  float *out, sp_view v[6], DLTensor *arr[5])
{
    arr[0] = sp_i32(&v[0], a->indices, a->nnz);
    arr[1] = sp_i32(&v[1], rows, a->nnz);
    arr[2] = sp_f32(&v[2], x, 2, a->m, f);
    arr[3] = sp_f32(&v[3], y, 2, a->n, f);
    arr[4] = sp_f32(&v[4], out, 1, a->nnz, 0);
    return tex_sp_fill_rows(sp_i32(&v[5], a->indptr, a->m + 1), arr[1]);
}

/* The host arrays of sp_sparse_conv's parameters over r, x [sites, cin],
 * w [SP_KV, cin, cout] and y [sites, cout] (views in v, W's shape in
 * wshape). */
static inline void sp_sparse_conv_arrays(const sp_rulebook *r, float *x, float *w, float *y,
                                         int64_t cin, int64_t cout, sp_view v[6], int64_t wshape[3],
                                         DLTensor *arr[6])
{
    arr[0] = sp_i32(&v[0], r->indptr, r->sites + 1);
    arr[1] = sp_i32(&v[1], r->src, r->pairs);
    arr[2] = sp_i32(&v[2], r->off, r->pairs);
    arr[3] = sp_f32(&v[3], x, 2, r->sites, cin);
    arr[4] = sp_f32(&v[4], w, 2, SP_KV, cin);
    wshape[0] = SP_KV;
    wshape[1] = cin;
    wshape[2] = cout;
    v[4].t.ndim = 3;
    v[4].t.shape = wshape;
    arr[5] = sp_f32(&v[5], y, 2, r->sites, cout);
}

/* The convolution written out, in double. */
static inline void sp_sparse_conv_ref(const sp_rulebook *r, const float *x, const float *w,
                                      int64_t cin, int64_t cout, double *want)
{
    for (int64_t q = 0; q < r->sites * cout; q++)
        want[q] = 0;
    for (int64_t o = 0; o < r->sites; o++)
        for (int32_t q = r->indptr[o]; q < r->indptr[o + 1]; q++)
            for (int64_t ci = 0; ci < cin; ci++)
                for (int64_t co = 0; co < cout; co++)
                    want[o * cout + co] +=
                        (double)x[r->src[q] * cin + ci] * w[(r->off[q] * cin + ci) * cout + co];
}

#endif
