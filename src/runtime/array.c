/*
 * Host arrays as DLPack DLTensors (the dtype mapping and the shape helpers
 * are in src/ir/dlpack.c, below every layer that checks arrays).
 *
 * tex_array_new makes one allocation, 64-byte aligned: a header holding the
 * DLTensor (first, so the user's handle is the allocation) and its shape,
 * padded to 64 bytes, then the zeroed data. tex_array_free frees it whole, so
 * it must only ever be given arrays tex_array_new made. Arrays are compact
 * (strides NULL, byte_offset 0); arrays from elsewhere may carry a
 * byte_offset and compact strides, which tex_array_copy honours on both sides.
 *
 * CUDA arrays (device kDLCUDA): the header alone comes from aligned_alloc
 * and the data from cuMemAlloc on the device's primary context, zero-filled
 * with cuMemsetD8 (the driver is loaded on first use, cuda_driver.c); an
 * empty array still gets a one-byte allocation, so data is never NULL.
 * Without a driver tex_array_new returns NULL. tex_array_free tells the two
 * kinds apart by the header's device. tex_array_copy copies host<->host
 * (memmove), host->device, device->host and device->device; kDLCUDA and
 * kDLCUDAManaged memory count as device memory (addressed through the
 * driver on the device's context: the destination's for device->device),
 * every other device type is TEX_EUNAVAILABLE, as is a device copy without
 * a driver; a failed driver call is TEX_EDEVICE. Copies are done when the
 * call returns for the host side (device->device copies are ordered on the
 * legacy default stream like every tex launch). These functions have no
 * context, so errors are return codes only.
 */
#include "runtime/runtime.h"
#include "backend_cuda/cuda_driver.h"
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

#define ARRAY_ALIGN 64

typedef struct {
    DLTensor t; /* must stay first: the handle is the allocation */
    int64_t shape[TEXI_ARRAY_MAX_NDIM];
} array_header;

size_t texi_array_elem_bytes(DLDataType d)
{
    return ((size_t)d.bits * d.lanes + 7) / 8;
}

/* Device memory of `bytes` (at least one) zero-filled on dev; false when
 * there is no driver or the driver fails. */
static bool device_alloc(DLDevice dev, size_t bytes, void **data)
{
    char msg[256];
    if (texi_cuda_enter(dev.device_id, msg, sizeof msg) != 0)
        return false;
    const texi_cuda_api *cu = texi_cuda_driver();
    texi_cu_ptr p = 0;
    if (bytes == 0)
        bytes = 1;
    if (cu->cuMemAlloc(&p, bytes) != 0)
        return false;
    if (cu->cuMemsetD8(p, 0, bytes) != 0) {
        cu->cuMemFree(p);
        return false;
    }
    *data = (void *)(uintptr_t)p;
    return true;
}

DLTensor *tex_array_new(int ndim, const int64_t shape[], tex_dtype t, DLDevice dev)
{
    bool on_cuda = dev.device_type == kDLCUDA;
    if (ndim < 0 || ndim > TEXI_ARRAY_MAX_NDIM || (ndim > 0 && !shape) ||
        !texi_dtype_valid((int)t) || (dev.device_type != kDLCPU && !on_cuda))
        return NULL;
    int64_t n = texi_array_numel(ndim, shape);
    int64_t bytes = (int64_t)tex_dtype_bytes(t);
    if (n < 0 || n > (INT64_MAX / 2) / bytes)
        return NULL;
    size_t head = (sizeof(array_header) + ARRAY_ALIGN - 1) & ~(size_t)(ARRAY_ALIGN - 1);
    if ((uint64_t)(n * bytes) > SIZE_MAX - head - ARRAY_ALIGN)
        return NULL;
    size_t data_bytes = on_cuda ? 0 : (size_t)(n * bytes);
    size_t total = (head + data_bytes + ARRAY_ALIGN - 1) & ~(size_t)(ARRAY_ALIGN - 1);
    array_header *h = aligned_alloc(ARRAY_ALIGN, total); /* total is a multiple of 64, >= 64 */
    if (!h)
        return NULL;
    memset(h, 0, total);
    if (ndim > 0)
        memcpy(h->shape, shape, sizeof *shape * (size_t)ndim);
    h->t.data = (char *)h + head;
    if (on_cuda && !device_alloc(dev, (size_t)(n * bytes), &h->t.data)) {
        free(h);
        return NULL;
    }
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
    char msg[256];
    if (a && a->device.device_type == kDLCUDA &&
        texi_cuda_enter(a->device.device_id, msg, sizeof msg) == 0)
        texi_cuda_driver()->cuMemFree((texi_cu_ptr)(uintptr_t)a->data);
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

/* Where an array's memory is, for copies. */
typedef enum { MEM_HOST, MEM_CUDA, MEM_OTHER } mem_kind;

static mem_kind memory_of(const DLTensor *a)
{
    switch (a->device.device_type) {
    case kDLCPU:
        return MEM_HOST;
    case kDLCUDA:
    case kDLCUDAManaged:
        return MEM_CUDA;
    default:
        return MEM_OTHER;
    }
}

static texi_cu_ptr device_ptr(const DLTensor *a)
{
    return (texi_cu_ptr)(uintptr_t)a->data + a->byte_offset;
}

/* A copy of `bytes` with at least one CUDA side, through the driver. */
static int device_copy(DLTensor *dst, const DLTensor *src, size_t bytes)
{
    bool to_dev = memory_of(dst) == MEM_CUDA, from_dev = memory_of(src) == MEM_CUDA;
    char msg[256];
    TEXI_TRY(
        texi_cuda_enter(to_dev ? dst->device.device_id : src->device.device_id, msg, sizeof msg));
    const texi_cuda_api *cu = texi_cuda_driver();
    int rc;
    if (to_dev && from_dev)
        rc = cu->cuMemcpyDtoD(device_ptr(dst), device_ptr(src), bytes);
    else if (to_dev)
        rc = cu->cuMemcpyHtoD(device_ptr(dst), (const char *)src->data + src->byte_offset, bytes);
    else
        rc = cu->cuMemcpyDtoH((char *)dst->data + dst->byte_offset, device_ptr(src), bytes);
    return rc == 0 ? TEX_OK : TEX_EDEVICE;
}

int tex_array_copy(DLTensor *dst, const DLTensor *src)
{
    if (!dst || !src)
        return TEX_EMISUSE;
    TEXI_TRY(check_copy(dst, src));
    mem_kind md = memory_of(dst), ms = memory_of(src);
    if (md == MEM_OTHER || ms == MEM_OTHER)
        return TEX_EUNAVAILABLE;
    bool host = md == MEM_HOST && ms == MEM_HOST;
    if (!host && !texi_cuda_driver())
        return TEX_EUNAVAILABLE;
    uint64_t n = (uint64_t)texi_array_numel(src->ndim, src->shape);
    size_t elem = texi_array_elem_bytes(src->dtype);
    if (elem && n > SIZE_MAX / elem)
        return TEX_EINVAL;
    size_t bytes = (size_t)n * elem;
    if (bytes == 0)
        return TEX_OK;
    if (!dst->data || !src->data)
        return TEX_EINVAL;
    if (!host)
        return device_copy(dst, src, bytes);
    memmove((char *)dst->data + dst->byte_offset, (const char *)src->data + src->byte_offset,
            bytes);
    return TEX_OK;
}
