/*
 * The runtime's private declarations: helpers on DLPack arrays for the
 * array functions (array.c); the shape helpers are in ir/dlpack.h.
 */
#ifndef TEX_RUNTIME_RUNTIME_H
#define TEX_RUNTIME_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/dlpack.h"
#include "tex/tex.h"

/* Most dimensions an array made by tex_array_new may have. */
#define TEXI_ARRAY_MAX_NDIM 32

/* Bytes of one element of DLPack type d (bits * lanes, rounded up). */
size_t texi_array_elem_bytes(DLDataType d);

#endif
