/*
 * Host arrays as DLPack DLTensors, and the dtype mapping between tex and
 * DLPack (API.md rule 9: bool is {kDLUInt, 8, 1}, f16 {kDLFloat, 16, 1},
 * bf16 {kDLBfloat, 16, 1}).
 *
 * tex_array_new makes one allocation holding the DLTensor, its shape and
 * strides-free layout, and 64-byte aligned zeroed data; tex_array_free frees
 * it. Only host (kDLCPU) memory is made here; device memory belongs to the
 * CUDA backend. tex_array_copy copies between host arrays of equal dtype and
 * shape, honouring byte_offset and compact strides on both sides.
 */
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

#define ARRAY_ALIGN 64
#define ARRAY_MAX_NDIM 32

typedef struct {
    DLTensor t;
    int64_t shape[ARRAY_MAX_NDIM];
} array_header;

DLDataType tex_dtype_to_dlpack(tex_dtype t)
{
    DLDataType d = {kDLFloat, 32, 1};
    if (!texi_dtype_valid((int)t))
        return d;
    d.bits = (uint8_t)texi_dtype_bits(t);
    if (t == TEX_BOOL || (texi_dtype_is_int(t) && !texi_dtype_is_signed(t)))
        d.code = kDLUInt;
    else if (texi_dtype_is_int(t))
        d.code = kDLInt;
    else if (t == TEX_BF16)
        d.code = kDLBfloat;
    else
        d.code = kDLFloat;
    return d;
}

int tex_dtype_from_dlpack(DLDataType d)
{
    if (d.lanes != 1)
        return -1;
    for (int t = 0; t < TEX_DTYPE_COUNT; t++) {
        if (t == TEX_BOOL)
            continue; /* {kDLUInt, 8} reads as u8; bool is a tex-side notion */
        DLDataType m = tex_dtype_to_dlpack((tex_dtype)t);
        if (m.code == d.code && m.bits == d.bits)
            return t;
    }
    return -1;
}

/* Element count of a shape; -1 when a size is negative or the product overflows. */
static int64_t element_count(int ndim, const int64_t shape[])
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && n > INT64_MAX / shape[i]))
            return -1;
        n *= shape[i];
    }
    return n;
}

DLTensor *tex_array_new(int ndim, const int64_t shape[], tex_dtype t, DLDevice dev)
{
    if (ndim < 0 || ndim > ARRAY_MAX_NDIM || (ndim > 0 && !shape) || !texi_dtype_valid((int)t) ||
        dev.device_type != kDLCPU)
        return NULL;
    int64_t n = element_count(ndim, shape);
    int64_t bytes = (int64_t)tex_dtype_bytes(t);
    if (n < 0 || n > (INT64_MAX - 2 * ARRAY_ALIGN) / bytes)
        return NULL;
    size_t data_bytes = (size_t)(n * bytes);
    size_t head = (sizeof(array_header) + ARRAY_ALIGN - 1) & ~(size_t)(ARRAY_ALIGN - 1);
    size_t total = (head + data_bytes + ARRAY_ALIGN - 1) & ~(size_t)(ARRAY_ALIGN - 1);
    array_header *h = aligned_alloc(ARRAY_ALIGN, total ? total : ARRAY_ALIGN);
    if (!h)
        return NULL;
    memset(h, 0, total);
    if (ndim > 0)
        memcpy(h->shape, shape, sizeof *shape * (size_t)ndim);
    h->t.data = (char *)h + head;
    h->t.device = dev;
    h->t.ndim = ndim;
    h->t.dtype = tex_dtype_to_dlpack(t);
    h->t.shape = h->shape;
    h->t.strides = NULL;
    h->t.byte_offset = 0;
    return &h->t;
}

void tex_array_free(DLTensor *a)
{
    free(a); /* the DLTensor is the first member of its header */
}

/* True when strides are NULL or the compact row-major strides of the shape. */
static bool compact(const DLTensor *a)
{
    if (!a->strides)
        return true;
    int64_t expect = 1;
    for (int i = a->ndim - 1; i >= 0; i--) {
        if (a->shape[i] != 1 && a->strides[i] != expect)
            return false;
        expect *= a->shape[i];
    }
    return true;
}

int tex_array_copy(DLTensor *dst, const DLTensor *src)
{
    if (!dst || !src)
        return TEX_EMISUSE;
    if (dst->device.device_type != kDLCPU || src->device.device_type != kDLCPU)
        return TEX_EUNAVAILABLE; /* device copies come with the CUDA backend */
    if (dst->dtype.code != src->dtype.code || dst->dtype.bits != src->dtype.bits ||
        dst->dtype.lanes != src->dtype.lanes || dst->ndim != src->ndim)
        return TEX_EINVAL;
    for (int i = 0; i < dst->ndim; i++)
        if (dst->shape[i] != src->shape[i])
            return TEX_EINVAL;
    if (!compact(dst) || !compact(src))
        return TEX_EINVAL;
    int64_t n = element_count(src->ndim, src->shape);
    if (n < 0)
        return TEX_EINVAL;
    size_t bytes = (size_t)n * ((size_t)(src->dtype.bits * src->dtype.lanes + 7) / 8);
    if (bytes == 0)
        return TEX_OK;
    if (!dst->data || !src->data)
        return TEX_EINVAL;
    memmove((char *)dst->data + dst->byte_offset, (const char *)src->data + src->byte_offset,
            bytes);
    return TEX_OK;
}
