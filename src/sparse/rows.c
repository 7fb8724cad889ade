/*
 * tex_sp_fill_rows: the parent coordinate of every position of a CSR-like
 * variable axis (rows[p] = r for indptr[r] <= p < indptr[r + 1]), the
 * array an iteration with a sparse output reads (tex_sp_rows). The indptr
 * is checked as a kernel call checks it before anything is written.
 */
#include "sparse/sparse.h"

static bool is_i32_vector(const DLTensor *t)
{
    return t && t->ndim == 1 && t->dtype.code == kDLInt && t->dtype.bits == 32 &&
           t->dtype.lanes == 1 && t->device.device_type == kDLCPU &&
           (!t->strides || t->strides[0] == 1) && (t->data || t->shape[0] == 0);
}

static const int32_t *i32_data(const DLTensor *t)
{
    return (const int32_t *)(const void *)((const char *)t->data + t->byte_offset);
}

int tex_sp_fill_rows(const DLTensor *indptr, DLTensor *rows)
{
    if (!indptr || !rows)
        return TEX_EMISUSE;
    if (!is_i32_vector(indptr) || !is_i32_vector(rows) || indptr->shape[0] < 1)
        return TEX_EINVAL;
    const int32_t *ip = i32_data(indptr);
    int64_t m = indptr->shape[0] - 1;
    if (ip[0] != 0 || ip[m] != rows->shape[0])
        return TEX_EINVAL;
    for (int64_t r = 0; r < m; r++)
        if (ip[r + 1] < ip[r])
            return TEX_EINVAL;
    int32_t *out = (int32_t *)(void *)((char *)rows->data + rows->byte_offset);
    for (int64_t r = 0; r < m; r++)
        for (int32_t p = ip[r]; p < ip[r + 1]; p++)
            out[p] = (int32_t)r;
    return 0;
}
