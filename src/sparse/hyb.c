/*
 * tex_sp_hyb_convert / tex_sp_hyb_free / tex_sp_hyb_arrays: a CSR matrix
 * decomposed into ELL buckets by row length (SparseTIR's "hyb" format),
 * host storage the caller owns (docs/sparse.md, "Format decomposition").
 *
 * With max_width W = 2^B there are B + 2 parts: bucket b (b = 0..B) holds
 * the rows of length in (2^(b-1), 2^b], each padded to width 2^b (padding:
 * the row's last column, value 0), as a sparse-fixed ELL matrix plus the
 * row ids that map its rows back to the matrix's; the last part, the CSR
 * remainder, holds the empty rows and those longer than W, as CSR with row
 * ids. Every row of the matrix is in exactly one part, in increasing order
 * within it, so a kernel that writes each part's rows writes every row of
 * the output once (no races, no zero fill).
 *
 * The CSR arrays are checked before anything is allocated: indptr starts
 * at 0, never decreases and ends at the number of indices and values;
 * every index lies in [0, n_cols); TEX_EINVAL names the array and entry.
 */
#include "ir/dlpack.h"
#include "sparse/sparse.h"

#include <stdlib.h>
#include <string.h>

#define CALL "tex_sp_hyb_convert"
#define MAX_PARTS (TEXI_SP_HYB_MAX_LOG2 + 2)
#define MAX_ARRAYS (3 * MAX_PARTS + 1)

struct tex_sp_hyb {
    int n_parts, n_arrays;
    DLTensor arrays[MAX_ARRAYS]; /* tex_sp_hyb_arrays' order; data malloc'ed (never NULL) */
    int64_t shapes[MAX_ARRAYS];
};

int tex_sp_hyb_nparts(int max_width)
{
    for (int b = 0; b <= TEXI_SP_HYB_MAX_LOG2; b++)
        if (max_width == 1 << b)
            return b + 2;
    return 0;
}

int tex_sp_hyb_narrays(int max_width)
{
    int n = tex_sp_hyb_nparts(max_width);
    return n ? 3 * n + 1 : 0;
}

/* The part of a row of len non-zeros: its bucket, or n_parts - 1. */
static int part_of(int64_t len, int n_parts)
{
    int b = 0;
    while (b < n_parts - 2 && ((int64_t)1 << b) < len)
        b++;
    return len == 0 || len > ((int64_t)1 << b) ? n_parts - 1 : b;
}

static bool is_vector(const DLTensor *t)
{
    return t->ndim == 1 && t->device.device_type == kDLCPU && t->dtype.lanes == 1 &&
           (!t->strides || t->strides[0] == 1) && (t->data || t->shape[0] == 0);
}

static bool is_i32(const DLTensor *t)
{
    return t->dtype.code == kDLInt && t->dtype.bits == 32;
}

static const void *data_of(const DLTensor *t)
{
    return t->data ? (const char *)t->data + t->byte_offset : NULL;
}

static int check_shapes(tex_ctx *ctx, const DLTensor *ip, const DLTensor *ix, const DLTensor *v)
{
    const char *bad = !is_vector(ip) || !is_i32(ip) || ip->shape[0] < 1 ? "indptr"
                      : !is_vector(ix) || !is_i32(ix)                   ? "indices"
                      : !is_vector(v) || v->dtype.bits % 8 || tex_dtype_from_dlpack(v->dtype) < 0
                          ? "values"
                          : NULL;
    if (bad)
        return texi_error(ctx, TEX_EINVAL,
                          CALL ": %s must be a compact 1-D host array (indptr and indices i32, "
                               "indptr of at least 1 entry, values of a tex dtype)",
                          bad);
    if (ix->shape[0] != v->shape[0])
        return texi_error(ctx, TEX_EINVAL, CALL ": indices has %lld entries but values has %lld",
                          (long long)ix->shape[0], (long long)v->shape[0]);
    return 0;
}

/* The CSR arrays' contents (docs/sparse.md, "Call-time checks"). */
static int check_csr(tex_ctx *ctx, int64_t n_cols, const DLTensor *ip, const DLTensor *ix)
{
    const int32_t *p = data_of(ip), *c = data_of(ix);
    int64_t m = ip->shape[0] - 1;
    if (p[0] != 0)
        return texi_error(ctx, TEX_EINVAL, CALL ": indptr: the first entry must be 0, got %d",
                          p[0]);
    for (int64_t r = 0; r < m; r++)
        if (p[r + 1] < p[r])
            return texi_error(ctx, TEX_EINVAL,
                              CALL ": indptr: not monotone at entry %lld (%d, then %d)",
                              (long long)r, p[r], p[r + 1]);
    if (p[m] != ix->shape[0])
        return texi_error(ctx, TEX_EINVAL,
                          CALL ": indptr: the last entry is %d, but indices has %lld entries", p[m],
                          (long long)ix->shape[0]);
    for (int64_t q = 0; q < ix->shape[0]; q++)
        if (c[q] < 0 || c[q] >= n_cols)
            return texi_error(ctx, TEX_EINVAL,
                              CALL ": indices: entry %lld is %d, outside [0, %lld)", (long long)q,
                              c[q], (long long)n_cols);
    return 0;
}

/* Array a of h: n elements of dtype dt (at least one allocated). */
static int alloc_array(tex_sp_hyb *h, int a, DLDataType dt, int64_t n)
{
    h->shapes[a] = n;
    void *data = calloc((size_t)(n > 0 ? n : 1), (size_t)(dt.bits / 8));
    h->arrays[a] = (DLTensor){data, {kDLCPU, 0}, 1, dt, &h->shapes[a], NULL, 0};
    return data ? 0 : TEX_ENOMEM;
}

/* Sizes every array from the row counts of each part (counts[part]) and the
 * non-zeros of the remainder. */
static int alloc_parts(tex_sp_hyb *h, const int64_t *counts, int64_t rem_nnz, DLDataType vt)
{
    const DLDataType i32 = {kDLInt, 32, 1};
    for (int b = 0; b + 1 < h->n_parts; b++) {
        int64_t n = counts[b] << b;
        TEXI_TRY(alloc_array(h, 3 * b, i32, counts[b]));
        TEXI_TRY(alloc_array(h, 3 * b + 1, i32, n));
        TEXI_TRY(alloc_array(h, 3 * b + 2, vt, n));
    }
    int a = 3 * (h->n_parts - 1), rem = h->n_parts - 1;
    TEXI_TRY(alloc_array(h, a, i32, counts[rem]));
    TEXI_TRY(alloc_array(h, a + 1, i32, counts[rem] + 1));
    TEXI_TRY(alloc_array(h, a + 2, i32, rem_nnz));
    return alloc_array(h, a + 3, vt, rem_nnz);
}

/* Appends row r (len columns cols, values vals of vsize bytes each) to
 * its part: an ELL row padded with its last column and zero values, or a
 * CSR row of the remainder. fill[part] counts the rows placed so far. */
static void place_row(tex_sp_hyb *h, int64_t *fill, int32_t r, int64_t len, const int32_t *cols,
                      const char *vals, size_t vsize)
{
    int part = part_of(len, h->n_parts);
    int64_t s = fill[part]++;
    DLTensor *a = &h->arrays[3 * part];
    ((int32_t *)a[0].data)[s] = r;
    if (part + 1 < h->n_parts) {
        int64_t w = (int64_t)1 << part;
        int32_t *ix = (int32_t *)a[1].data + s * w;
        char *v = (char *)a[2].data + (size_t)(s * w) * vsize;
        for (int64_t j = 0; j < w; j++)
            ix[j] = cols[j < len ? j : len - 1];
        memcpy(v, vals, (size_t)len * vsize); /* the padding stays zero (calloc) */
        return;
    }
    int32_t *ip = a[1].data;
    ip[s + 1] = ip[s] + (int32_t)len;
    if (len == 0) /* an empty row: nothing to copy (the arrays may be NULL) */
        return;
    memcpy((int32_t *)a[2].data + ip[s], cols, (size_t)len * sizeof *cols);
    memcpy((char *)a[3].data + (size_t)ip[s] * vsize, vals, (size_t)len * vsize);
}

tex_sp_hyb *tex_sp_hyb_convert(tex_ctx *ctx, int64_t n_cols, const DLTensor *indptr,
                               const DLTensor *indices, const DLTensor *values, int max_width)
{
    if (!ctx)
        return NULL;
    if (!indptr || !indices || !values) {
        texi_error_null_operand(ctx, CALL, !indptr ? "indptr" : !indices ? "indices" : "values");
        return NULL;
    }
    int n_parts = tex_sp_hyb_nparts(max_width);
    if (!n_parts || n_cols < 0 || n_cols > INT32_MAX)
        return texi_error(ctx, TEX_EINVAL,
                          CALL ": max_width %d must be a power of two in [1, %d] and n_cols "
                               "(%lld) in [0, 2^31)",
                          max_width, 1 << TEXI_SP_HYB_MAX_LOG2, (long long)n_cols),
               NULL;
    if (check_shapes(ctx, indptr, indices, values) < 0 ||
        check_csr(ctx, n_cols, indptr, indices) < 0)
        return NULL;
    const int32_t *ip = data_of(indptr), *cols = data_of(indices);
    const char *vals = data_of(values);
    size_t vsize = (size_t)values->dtype.bits / 8;
    int64_t m = indptr->shape[0] - 1, counts[MAX_PARTS] = {0}, fill[MAX_PARTS] = {0}, rem_nnz = 0;
    for (int64_t r = 0; r < m; r++) {
        int part = part_of(ip[r + 1] - ip[r], n_parts);
        counts[part]++;
        rem_nnz += part == n_parts - 1 ? ip[r + 1] - ip[r] : 0;
    }
    tex_sp_hyb *h = calloc(1, sizeof *h);
    if (h) {
        h->n_parts = n_parts;
        h->n_arrays = 3 * n_parts + 1;
    }
    if (!h || alloc_parts(h, counts, rem_nnz, values->dtype) < 0) {
        tex_sp_hyb_free(h);
        texi_error(ctx, TEX_ENOMEM, CALL ": out of memory for the hyb arrays");
        return NULL;
    }
    for (int64_t r = 0; r < m; r++)
        place_row(h, fill, (int32_t)r, ip[r + 1] - ip[r], cols ? cols + ip[r] : NULL,
                  vals ? vals + (size_t)ip[r] * vsize : NULL, vsize);
    return h;
}

int tex_sp_hyb_arrays(tex_sp_hyb *h, int n, DLTensor *arrays[])
{
    if (!h || !arrays)
        return TEX_EMISUSE;
    if (n != h->n_arrays)
        return TEX_EINVAL;
    for (int a = 0; a < n; a++)
        arrays[a] = &h->arrays[a];
    return 0;
}

void tex_sp_hyb_free(tex_sp_hyb *h)
{
    if (!h)
        return;
    for (int a = 0; a < h->n_arrays; a++)
        free(h->arrays[a].data);
    free(h);
}
