/*
 * The CPU backend's compiler driver and object cache (jit.c) and its
 * libffi calls (call.c). Private to src/backend_cpu; the tests use it
 * directly.
 */
#ifndef TEX_BACKEND_CPU_JIT_H
#define TEX_BACKEND_CPU_JIT_H

#include <ffi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tex/tex.h"

/* 1 when $TEX_CC (default "cc") runs here (`CC --version` exits 0);
 * remembered per process and compiler name. */
int texi_cpu_jit_available(void);

/* Compiles `source` into a shared object through the cache (see jit.c) and
 * dlopens it (RTLD_NOW | RTLD_LOCAL) into *handle. strict_float compiles
 * with -ffp-contract=off instead of =fast (part of the cache key). 0, or TEX_EUNAVAILABLE
 * (no compiler, unusable cache directory), TEX_ECOMPILE (compiler output and
 * the kept source's path in err), TEX_ENOMEM, TEX_EINTERNAL (I/O, dlopen);
 * the message, starting with "tex_build: ", goes to err. */
int texi_cpu_jit_load(const char *source, bool strict_float, void **handle, char *err,
                      size_t err_size);

/* The resolved cache directory ($TEX_CACHE_DIR, $XDG_CACHE_HOME/tex or
 * $HOME/.cache/tex), created 0700 and checked (a directory owned by this
 * user, not group- or world-writable). 0 or TEX_EUNAVAILABLE with err. */
int texi_cpu_jit_cache_dir(char *dir, size_t dir_size, char *err, size_t err_size);

/* A prepared libffi call: per argument a pointer (TEXI_CALL_PTR), an int64
 * (TEXI_CALL_I64) or, for a kind >= 0, a scalar of that tex_dtype in its
 * storage type (texi_cpu_ffi_type); returns int32. */
enum { TEXI_CALL_PTR = -2, TEXI_CALL_I64 = -1 };
typedef struct {
    ffi_cif cif;
    ffi_type **types; /* malloc'ed, one per argument */
    int nargs;
} texi_cpu_call;

/* The libffi type of a scalar of dtype t passed in its C storage type
 * (f16/bf16: uint16, bool: uint8). */
ffi_type *texi_cpu_ffi_type(tex_dtype t);

/* Builds the call interface for nargs arguments of the given kinds.
 * 0 or TEX_ENOMEM / TEX_EINTERNAL. */
int texi_cpu_call_prepare(texi_cpu_call *c, int nargs, const int *kinds);

/* Calls fn with values[i] pointing at argument i (of its kind's C type);
 * returns the entry point's int result. */
int texi_cpu_call_invoke(texi_cpu_call *c, void (*fn)(void), void **values);

void texi_cpu_call_fini(texi_cpu_call *c);

#endif
