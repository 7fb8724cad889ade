/*
 * Facts about the CPU this process runs on, which the JIT-compiled kernels
 * (-march=native) run on too.
 */
#ifndef TEX_UTIL_HOST_H
#define TEX_UTIL_HOST_H

/* The native vector width in bytes: 64 with AVX-512, 32 with AVX, else 16. */
int texi_host_vector_bytes(void);

#endif
