/*
 * runtime/array.c: tex_array_new / tex_array_copy / tex_array_free and the
 * dtype mapping to and from DLPack.
 *
 * Covers alignment, zero fill, shapes (scalars, zero sizes, the 32-dimension
 * limit), rejected arguments, copies between views with byte_offset and
 * compact strides, and every mismatch tex_array_copy must refuse.
 */
#include "tt.h"
#include "tex/tex.h"
#include "runtime/runtime.h"

#include <stdint.h>

static const DLDevice cpu = {kDLCPU, 0};

static void test_new_is_aligned_zeroed_compact(void)
{
    int64_t shape[3] = {3, 5, 7};
    for (int t = TEX_BOOL; t <= TEX_F64; t++) {
        DLTensor *a = tex_array_new(3, shape, (tex_dtype)t, cpu);
        TT_CHECK(a != NULL);
        if (!a)
            continue;
        TT_EQ_INT((uintptr_t)a->data % 64, 0);
        TT_EQ_INT(a->ndim, 3);
        TT_CHECK(a->shape != shape);
        TT_EQ_INT(a->shape[0], 3);
        TT_EQ_INT(a->shape[1], 5);
        TT_EQ_INT(a->shape[2], 7);
        TT_CHECK(a->strides == NULL);
        TT_EQ_INT(a->byte_offset, 0);
        TT_EQ_INT(a->device.device_type, kDLCPU);
        DLDataType d = tex_dtype_to_dlpack((tex_dtype)t);
        TT_CHECK(a->dtype.code == d.code && a->dtype.bits == d.bits && a->dtype.lanes == 1);
        const unsigned char *p = a->data;
        size_t bytes = 105u * (size_t)tex_dtype_bytes((tex_dtype)t);
        size_t nonzero = 0;
        for (size_t i = 0; i < bytes; i++)
            nonzero += p[i] != 0;
        TT_EQ_INT(nonzero, 0);
        memset(a->data, 0xab, bytes); /* the whole extent is writable (valgrind/ASan check it) */
        tex_array_free(a);
    }
}

static void test_new_shapes(void)
{
    DLTensor *s = tex_array_new(0, NULL, TEX_F64, cpu); /* a scalar: one element */
    TT_CHECK(s && s->ndim == 0 && s->data && (uintptr_t)s->data % 64 == 0);
    if (s)
        *(double *)s->data = 1.5;
    tex_array_free(s);
    DLTensor *z = tex_array_new(2, (int64_t[]){4, 0}, TEX_F32, cpu);
    TT_CHECK(z && z->data && z->shape[1] == 0);
    tex_array_free(z);
    int64_t big[33];
    for (int i = 0; i < 33; i++)
        big[i] = 1;
    DLTensor *d32 = tex_array_new(32, big, TEX_I8, cpu);
    TT_CHECK(d32 && d32->ndim == 32 && d32->shape[31] == 1);
    tex_array_free(d32);
    tex_array_free(NULL);
}

static void test_new_rejects(void)
{
    int64_t big[33] = {0};
    TT_CHECK(tex_array_new(33, big, TEX_I8, cpu) == NULL);
    TT_CHECK(tex_array_new(-1, NULL, TEX_I8, cpu) == NULL);
    TT_CHECK(tex_array_new(2, NULL, TEX_I8, cpu) == NULL);
    TT_CHECK(tex_array_new(1, (int64_t[]){-3}, TEX_F32, cpu) == NULL);
    TT_CHECK(tex_array_new(1, (int64_t[]){4}, (tex_dtype)99, cpu) == NULL);
    TT_CHECK(tex_array_new(1, (int64_t[]){4}, (tex_dtype)-1, cpu) == NULL);
    if (tex_target_available("cuda") != 1) /* with a GPU, a device array is fine */
        TT_CHECK(tex_array_new(1, (int64_t[]){4}, TEX_F32, (DLDevice){kDLCUDA, 0}) == NULL);
    TT_CHECK(tex_array_new(2, (int64_t[]){INT64_MAX / 2, 3}, TEX_F32, cpu) == NULL);
    TT_CHECK(tex_array_new(1, (int64_t[]){INT64_MAX}, TEX_I8, cpu) == NULL);
}

static void test_dtype_mapping(void)
{
    static const struct {
        tex_dtype t;
        int code, bits;
    } map[] = {
        {TEX_BOOL, kDLUInt, 8},  {TEX_I8, kDLInt, 8},       {TEX_I16, kDLInt, 16},
        {TEX_I32, kDLInt, 32},   {TEX_I64, kDLInt, 64},     {TEX_U8, kDLUInt, 8},
        {TEX_U16, kDLUInt, 16},  {TEX_U32, kDLUInt, 32},    {TEX_U64, kDLUInt, 64},
        {TEX_F16, kDLFloat, 16}, {TEX_BF16, kDLBfloat, 16}, {TEX_F32, kDLFloat, 32},
        {TEX_F64, kDLFloat, 64},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        DLDataType d = tex_dtype_to_dlpack(map[i].t);
        TT_EQ_INT(d.code, map[i].code);
        TT_EQ_INT(d.bits, map[i].bits);
        TT_EQ_INT(d.lanes, 1);
        int back = tex_dtype_from_dlpack(d);
        TT_EQ_INT(back, map[i].t == TEX_BOOL ? TEX_U8 : map[i].t); /* {kDLUInt, 8} reads as u8 */
    }
    TT_EQ_INT(tex_dtype_to_dlpack((tex_dtype)99).bits, 0);
    TT_EQ_INT(tex_dtype_from_dlpack((DLDataType){kDLFloat, 32, 4}), -1);
    TT_EQ_INT(tex_dtype_from_dlpack((DLDataType){kDLComplex, 64, 1}), -1);
    TT_EQ_INT(tex_dtype_from_dlpack((DLDataType){kDLInt, 4, 1}), -1);
    TT_EQ_INT(tex_dtype_from_dlpack((DLDataType){kDLBfloat, 32, 1}), -1);
}

static DLTensor *iota_i32(int ndim, const int64_t shape[])
{
    DLTensor *a = tex_array_new(ndim, shape, TEX_I32, cpu);
    int64_t n = texi_array_numel(ndim, shape);
    for (int64_t i = 0; i < n; i++)
        ((int32_t *)a->data)[i] = (int32_t)(i * 7 + 1);
    return a;
}

static void test_copy_plain(void)
{
    int64_t shape[2] = {5, 3};
    DLTensor *src = iota_i32(2, shape);
    DLTensor *dst = tex_array_new(2, shape, TEX_I32, cpu);
    TT_EQ_INT(tex_array_copy(dst, src), TEX_OK);
    TT_EQ_INT(memcmp(dst->data, src->data, 15 * sizeof(int32_t)), 0);
    tex_array_free(src);
    tex_array_free(dst);
}

/* Views into bigger arrays: byte_offset and compact strides on both sides. */
static void test_copy_views(void)
{
    DLTensor *big_src = iota_i32(1, (int64_t[]){40});
    DLTensor *big_dst = tex_array_new(1, (int64_t[]){40}, TEX_I32, cpu);
    int64_t shape[2] = {3, 4}, strides[2] = {4, 1}, odd_strides[2] = {4, 99};
    DLTensor src = *big_src, dst = *big_dst;
    src.ndim = dst.ndim = 2;
    src.shape = dst.shape = shape;
    src.byte_offset = 5 * sizeof(int32_t);
    dst.byte_offset = 17 * sizeof(int32_t);
    src.strides = strides;
    TT_EQ_INT(tex_array_copy(&dst, &src), TEX_OK);
    const int32_t *d = big_dst->data, *s = big_src->data;
    int bad = 0;
    for (int i = 0; i < 40; i++)
        bad += d[i] != (i >= 17 && i < 29 ? s[i - 12] : 0);
    TT_EQ_INT(bad, 0);
    /* A dimension of extent 1 may carry any stride. */
    int64_t shape1[2] = {12, 1};
    src.shape = dst.shape = shape1;
    src.strides = odd_strides;
    odd_strides[0] = 1;
    TT_EQ_INT(tex_array_copy(&dst, &src), TEX_OK);
    /* Non-compact strides are refused on either side. */
    int64_t gap[2] = {8, 1}, colmajor[2] = {1, 3};
    src.shape = dst.shape = shape;
    src.strides = gap;
    TT_EQ_INT(tex_array_copy(&dst, &src), TEX_EINVAL);
    src.strides = NULL;
    dst.strides = colmajor;
    TT_EQ_INT(tex_array_copy(&dst, &src), TEX_EINVAL);
    tex_array_free(big_src);
    tex_array_free(big_dst);
}

static void test_copy_mismatches(void)
{
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    DLTensor *a = iota_i32(2, s23);
    DLTensor *b = tex_array_new(2, s32, TEX_I32, cpu);
    DLTensor *f = tex_array_new(2, s23, TEX_F32, cpu);
    DLTensor *u = tex_array_new(2, s23, TEX_U32, cpu);
    DLTensor *flat = tex_array_new(1, (int64_t[]){6}, TEX_I32, cpu);
    TT_EQ_INT(tex_array_copy(b, a), TEX_EINVAL);    /* shape */
    TT_EQ_INT(tex_array_copy(f, a), TEX_EINVAL);    /* dtype (same size) */
    TT_EQ_INT(tex_array_copy(u, a), TEX_EINVAL);    /* signedness */
    TT_EQ_INT(tex_array_copy(flat, a), TEX_EINVAL); /* ndim */
    TT_EQ_INT(tex_array_copy(NULL, a), TEX_EMISUSE);
    TT_EQ_INT(tex_array_copy(a, NULL), TEX_EMISUSE);
    DLTensor dev = *b;
    dev.shape = s23;
    dev.device.device_type = kDLCUDA;
    /* a host pointer labelled as device memory: no driver, or the driver refuses it */
    int want = tex_target_available("cuda") == 1 ? TEX_EDEVICE : TEX_EUNAVAILABLE;
    TT_EQ_INT(tex_array_copy(&dev, a), want);
    TT_EQ_INT(tex_array_copy(a, &dev), want);
    int64_t huge[2] = {INT64_MAX, 3};
    DLTensor h1 = *a, h2 = *a;
    h1.shape = h2.shape = huge;
    TT_EQ_INT(tex_array_copy(&h1, &h2), TEX_EINVAL); /* the element count overflows */
    h1.shape = NULL;
    TT_EQ_INT(tex_array_copy(&h1, &h2), TEX_EINVAL);
    const int32_t *p = a->data;
    TT_EQ_INT(p[5], 36); /* the source is untouched */
    tex_array_free(a);
    tex_array_free(b);
    tex_array_free(f);
    tex_array_free(u);
    tex_array_free(flat);
}

static void test_copy_empty_and_scalar(void)
{
    DLTensor *e1 = tex_array_new(2, (int64_t[]){0, 5}, TEX_F64, cpu);
    DLTensor *e2 = tex_array_new(2, (int64_t[]){0, 5}, TEX_F64, cpu);
    TT_EQ_INT(tex_array_copy(e2, e1), TEX_OK);
    DLTensor *s1 = tex_array_new(0, NULL, TEX_F16, cpu);
    DLTensor *s2 = tex_array_new(0, NULL, TEX_F16, cpu);
    *(uint16_t *)s1->data = 0x3c00;
    TT_EQ_INT(tex_array_copy(s2, s1), TEX_OK);
    TT_EQ_INT(*(uint16_t *)s2->data, 0x3c00);
    tex_array_free(e1);
    tex_array_free(e2);
    tex_array_free(s1);
    tex_array_free(s2);
}

int main(void)
{
    TT_RUN(test_new_is_aligned_zeroed_compact);
    TT_RUN(test_new_shapes);
    TT_RUN(test_new_rejects);
    TT_RUN(test_dtype_mapping);
    TT_RUN(test_copy_plain);
    TT_RUN(test_copy_views);
    TT_RUN(test_copy_mismatches);
    TT_RUN(test_copy_empty_and_scalar);
    return tt_finish();
}
