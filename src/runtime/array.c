/*
 * Host arrays as DLPack DLTensors, and the dtype mapping between tex and
 * DLPack (API.md rule 9: bool is {kDLUInt, 8, 1}, f16 {kDLFloat, 16, 1},
 * bf16 {kDLBfloat, 16, 1}; the reverse mapping reads {kDLUInt, 8, 1} as u8).
 *
 * tex_array_new makes one allocation, 64-byte aligned: a header holding the
 * DLTensor (first, so the user's handle is the allocation) and its shape,
 * padded to 64 bytes, then the zeroed data. tex_array_free frees it whole, so
 * it must only ever be given arrays tex_array_new made. Arrays are compact
 * (strides NULL, byte_offset 0); arrays from elsewhere may carry a
 * byte_offset and compact strides, which tex_array_copy honours on both sides.
 *
 * Not here: device memory. tex_array_new returns NULL for any device but
 * kDLCPU and tex_array_copy returns TEX_EUNAVAILABLE for non-host arrays; CUDA
 * allocation and host<->device copies come with the CUDA backend. These
 * functions have no context, so errors are return codes only.
 */
#include "runtime/runtime.h"
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

#define ARRAY_ALIGN 64

typedef struct {
    DLTensor t; /* must stay first: the handle is the allocation */
    int64_t shape[TEXI_ARRAY_MAX_NDIM];
} array_header;

DLDataType tex_dtype_to_dlpack(tex_dtype t)
{
    DLDataType d = {kDLInt, 0, 0}; /* 0 bits, 0 lanes: no DLPack type */
    if (!texi_dtype_valid((int)t))
        return d;
    d.bits = (uint8_t)texi_dtype_bits(t);
    d.lanes = 1;
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

int64_t texi_array_numel(int ndim, const int64_t shape[])
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && n > INT64_MAX / shape[i]))
            return -1;
        n *= shape[i];
    }
    return n;
}

bool texi_array_is_compact(const DLTensor *a)
{
    if (!a->strides || texi_array_numel(a->ndim, a->shape) == 0)
        return true;
    uint64_t expect = 1; /* wraps harmlessly for absurd shapes: then it cannot match */
    for (int i = a->ndim - 1; i >= 0; i--) {
        if (a->shape[i] != 1 && (uint64_t)a->strides[i] != expect)
            return false;
        expect *= (uint64_t)a->shape[i];
    }
    return true;
}

size_t texi_array_elem_bytes(DLDataType d)
{
    return ((size_t)d.bits * d.lanes + 7) / 8;
}

DLTensor *tex_array_new(int ndim, const int64_t shape[], tex_dtype t, DLDevice dev)
{
    if (ndim < 0 || ndim > TEXI_ARRAY_MAX_NDIM || (ndim > 0 && !shape) ||
        !texi_dtype_valid((int)t) || dev.device_type != kDLCPU)
        return NULL;
    int64_t n = texi_array_numel(ndim, shape);
    int64_t bytes = (int64_t)tex_dtype_bytes(t);
    if (n < 0 || n > (INT64_MAX / 2) / bytes)
        return NULL;
    size_t head = (sizeof(array_header) + ARRAY_ALIGN - 1) & ~(size_t)(ARRAY_ALIGN - 1);
    if ((uint64_t)(n * bytes) > SIZE_MAX - head - ARRAY_ALIGN)
        return NULL;
    size_t total = (head + (size_t)(n * bytes) + ARRAY_ALIGN - 1) & ~(size_t)(ARRAY_ALIGN - 1);
    array_header *h = aligned_alloc(ARRAY_ALIGN, total); /* total is a multiple of 64, >= 64 */
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

/* Checks of tex_array_copy that do not depend on the devices. */
static int check_copy(const DLTensor *dst, const DLTensor *src)
{
    if (dst->dtype.code != src->dtype.code || dst->dtype.bits != src->dtype.bits ||
        dst->dtype.lanes != src->dtype.lanes || dst->ndim != src->ndim || dst->ndim < 0)
        return TEX_EINVAL;
    if (dst->ndim > 0 && (!dst->shape || !src->shape))
        return TEX_EINVAL;
    for (int i = 0; i < dst->ndim; i++)
        if (dst->shape[i] != src->shape[i])
            return TEX_EINVAL;
    if (texi_array_numel(src->ndim, src->shape) < 0)
        return TEX_EINVAL;
    if (!texi_array_is_compact(dst) || !texi_array_is_compact(src))
        return TEX_EINVAL;
    return 0;
}

int tex_array_copy(DLTensor *dst, const DLTensor *src)
{
    if (!dst || !src)
        return TEX_EMISUSE;
    TEXI_TRY(check_copy(dst, src));
    if (dst->device.device_type != kDLCPU || src->device.device_type != kDLCPU)
        return TEX_EUNAVAILABLE; /* device copies come with the CUDA backend */
    uint64_t n = (uint64_t)texi_array_numel(src->ndim, src->shape);
    size_t elem = texi_array_elem_bytes(src->dtype);
    if (elem && n > SIZE_MAX / elem)
        return TEX_EINVAL;
    size_t bytes = (size_t)n * elem;
    if (bytes == 0)
        return TEX_OK;
    if (!dst->data || !src->data)
        return TEX_EINVAL;
    memmove((char *)dst->data + dst->byte_offset, (const char *)src->data + src->byte_offset,
            bytes);
    return TEX_OK;
}
