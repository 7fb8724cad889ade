/*
 * The runtime's private declarations: helpers on DLPack arrays shared by the
 * array functions (array.c) and the argument checks of kernel calls.
 */
#ifndef TEX_RUNTIME_RUNTIME_H
#define TEX_RUNTIME_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tex/tex.h"

/* Most dimensions an array made by tex_array_new may have. */
#define TEXI_ARRAY_MAX_NDIM 32

/* Number of elements of a shape; -1 when an extent is negative or the
 * product overflows int64. */
int64_t texi_array_numel(int ndim, const int64_t shape[]);

/* True when a's strides are NULL or the compact row-major strides of its
 * shape (a dimension of extent 1 may carry any stride; an empty array is
 * always compact). */
bool texi_array_is_compact(const DLTensor *a);

/* Bytes of one element of DLPack type d (bits * lanes, rounded up). */
size_t texi_array_elem_bytes(DLDataType d);

#endif
