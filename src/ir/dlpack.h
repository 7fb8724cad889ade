/*
 * Shape helpers on DLPack arrays (dlpack.c), shared by the reference
 * evaluator, argument binding (src/rt) and the array functions (src/runtime).
 * The dtype mapping itself is public: tex_dtype_to/from_dlpack in tex.h.
 */
#ifndef TEX_IR_DLPACK_H
#define TEX_IR_DLPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "tex/tex.h"

/* Number of elements of a shape; -1 when an extent is negative or the
 * product overflows int64. */
int64_t texi_array_numel(int ndim, const int64_t shape[]);

/* True when a's strides are NULL or the compact row-major strides of its
 * shape (a dimension of extent 1 may carry any stride; an empty array is
 * always compact). */
bool texi_array_is_compact(const DLTensor *a);

#endif
