/*
 * DLPack in the lower layers: the dtype mapping between tex and DLPack
 * (docs/api.md, rule 9: bool is {kDLUInt, 8, 1}, f16 {kDLFloat, 16, 1},
 * bf16 {kDLBfloat, 16, 1}; the reverse mapping reads {kDLUInt, 8, 1} as u8)
 * and the shape helpers that the reference evaluator, argument binding and
 * the array functions share.
 */
#include "ir/dlpack.h"
#include "ir/ir.h"

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
