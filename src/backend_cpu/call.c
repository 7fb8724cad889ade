/*
 * Calls into JIT-compiled entry points through libffi. The call interface
 * (ffi_cif) is prepared once per kernel at build time from its signature:
 * one pointer per tensor parameter, one sint64 per size (VAR parameter or
 * extra size), the storage type of its dtype for any other VAR parameter,
 * returning sint32 (backend.h's ABI). A prepared cif is only read by
 * ffi_call, so one kernel may be called from several threads.
 */
#include "backend_cpu/jit.h"

#include <stdlib.h>

#include "tex/tex.h"

ffi_type *texi_cpu_ffi_type(tex_dtype t)
{
    switch (t) {
    case TEX_BOOL:
    case TEX_U8:
        return &ffi_type_uint8;
    case TEX_I8:
        return &ffi_type_sint8;
    case TEX_I16:
        return &ffi_type_sint16;
    case TEX_I32:
        return &ffi_type_sint32;
    case TEX_I64:
        return &ffi_type_sint64;
    case TEX_U16:
    case TEX_F16:
    case TEX_BF16:
        return &ffi_type_uint16;
    case TEX_U32:
        return &ffi_type_uint32;
    case TEX_U64:
        return &ffi_type_uint64;
    case TEX_F32:
        return &ffi_type_float;
    case TEX_F64:
        break;
    }
    return &ffi_type_double;
}

int texi_cpu_call_prepare(texi_cpu_call *c, int nargs, const int *kinds)
{
    c->nargs = nargs;
    c->types = calloc(nargs > 0 ? (size_t)nargs : 1, sizeof *c->types);
    if (!c->types)
        return TEX_ENOMEM;
    for (int i = 0; i < nargs; i++)
        c->types[i] = kinds[i] == TEXI_CALL_PTR   ? &ffi_type_pointer
                      : kinds[i] == TEXI_CALL_I64 ? &ffi_type_sint64
                                                  : texi_cpu_ffi_type((tex_dtype)kinds[i]);
    if (ffi_prep_cif(&c->cif, FFI_DEFAULT_ABI, (unsigned)nargs, &ffi_type_sint32, c->types) !=
        FFI_OK) {
        texi_cpu_call_fini(c);
        return TEX_EINTERNAL;
    }
    return 0;
}

int texi_cpu_call_invoke(texi_cpu_call *c, void (*fn)(void), void **values)
{
    ffi_arg ret = 0; /* integral returns are widened to ffi_arg */
    ffi_call(&c->cif, fn, &ret, values);
    return (int)(int32_t)ret;
}

void texi_cpu_call_fini(texi_cpu_call *c)
{
    free(c->types);
    c->types = NULL;
    c->nargs = 0;
}
