/*
 * The host facts the CPU schedule is sized by: L1 and L2 data cache sizes
 * (sysconf, else /sys/devices/system/cpu/cpu0/cache, else 32 KiB and 1 MiB),
 * the thread count (the target's -threads=N, else TEX_NUM_THREADS, else the
 * online processors) and the vector width (util/host.h). Never fails.
 */
#include "autosched/autosched.h"
#include "util/host.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { FALLBACK_L1 = 32 * 1024, FALLBACK_L2 = 1024 * 1024 };

/* Size in bytes of cache `index` of cpu0 as /sys reports it ("48K"), or 0. */
static long sys_cache_size(int index)
{
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long v = 0;
    char unit = 0;
    int got = fscanf(f, "%ld%c", &v, &unit);
    fclose(f);
    if (got < 1 || v <= 0)
        return 0;
    return unit == 'K' ? v * 1024 : unit == 'M' ? v * 1024 * 1024 : v;
}

/* A sysconf cache size, else /sys's index entry, else the fallback. */
static long cache_size(int sc_name, int sys_index, long fallback)
{
    long v = sc_name >= 0 ? sysconf(sc_name) : -1;
    if (v <= 0)
        v = sys_cache_size(sys_index);
    return v > 0 ? v : fallback;
}

void texi_as_machine_probe(texi_as_machine *mach, int threads)
{
#ifdef _SC_LEVEL1_DCACHE_SIZE
    mach->l1 = cache_size(_SC_LEVEL1_DCACHE_SIZE, 0, FALLBACK_L1);
    mach->l2 = cache_size(_SC_LEVEL2_CACHE_SIZE, 2, FALLBACK_L2);
#else
    mach->l1 = cache_size(-1, 0, FALLBACK_L1);
    mach->l2 = cache_size(-1, 2, FALLBACK_L2);
#endif
    const char *env = getenv("TEX_NUM_THREADS");
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long n = threads > 0 ? threads : env && atol(env) > 0 ? atol(env) : online;
    mach->threads = n > 0 && n < 4096 ? (int)n : 1;
    mach->vbytes = texi_host_vector_bytes();
}
