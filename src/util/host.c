/*
 * Host CPU facts (host.h), from the compiler's CPU-feature builtins on x86;
 * 16-byte vectors elsewhere.
 */
#include "util/host.h"

int texi_host_vector_bytes(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return 64;
    if (__builtin_cpu_supports("avx"))
        return 32;
#endif
    return 16;
}
