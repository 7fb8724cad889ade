/*
 * ptxas.h: the PTX checks of the CUDA tests (docs/testing.md, "CUDA without
 * a GPU", way 1). Header-only (static inline functions); include it after
 * tt.h. The PTX of a kernel built for "cuda -emit-only -arch=sm_NN" (NVRTC's
 * through tex_kernel_ptx when the library gives one, else nvcc -ptx on the
 * source) is assembled by ptxas -v for that architecture; every kernel must
 * spill nothing (0 bytes spill stores and loads) and use at most 48 KiB of
 * static shared memory; each kernel's registers are printed.
 *
 * Tools run through fork/execv with an argv (no shell), from
 * /usr/local/cuda/bin (or $CUDA_HOME/bin).
 */
#ifndef TEX_TESTS_SUPPORT_PTXAS_H
#define TEX_TESTS_SUPPORT_PTXAS_H

#include "tex/tex.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PTX_SMEM_LIMIT (48 * 1024)

/* ------------------------------------------------------------- tools */

static inline const char *cuda_bin(const char *tool, char *buf, size_t n)
{
    const char *home = getenv("CUDA_HOME");
    snprintf(buf, n, "%s/bin/%s", home && *home ? home : "/usr/local/cuda", tool);
    return access(buf, X_OK) == 0 ? buf : NULL;
}

/* Runs argv (no shell) with stdout and stderr into a malloc'ed string (*out).
 * The exit status, or -1 when it could not run. */
static inline int run_tool(char *const argv[], char **out)
{
    char logname[] = "/tmp/tex-ptx-log-XXXXXX";
    int fd = mkstemp(logname);
    *out = NULL;
    if (fd < 0)
        return -1;
    unlink(logname);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0) {
        close(fd);
        return -1;
    }
    off_t len = lseek(fd, 0, SEEK_END);
    char *text = malloc((size_t)(len > 0 ? len : 0) + 1);
    if (text && len > 0 && pread(fd, text, (size_t)len, 0) != len)
        len = 0;
    if (text)
        text[len > 0 ? len : 0] = '\0';
    close(fd);
    *out = text;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline int write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    if (!fp)
        return -1;
    int ok = fputs(text, fp) >= 0;
    return fclose(fp) == 0 && ok ? 0 : -1;
}

/* The whole file as a malloc'ed string, or NULL. */
static inline char *read_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    char *text = NULL;
    long len = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    if (len >= 0 && fseek(fp, 0, SEEK_SET) == 0 && (text = malloc((size_t)len + 1)) != NULL) {
        if (fread(text, 1, (size_t)len, fp) != (size_t)len) {
            free(text);
            text = NULL;
        } else {
            text[len] = '\0';
        }
    }
    fclose(fp);
    return text;
}

/* ------------------------------------------------------------- ptxas -v */

/* What ptxas -v says of one kernel. */
typedef struct {
    char name[128];
    long regs, smem, spill_st, spill_ld;
    long stack; /* bytes of stack frame (local memory) */
} ptx_info;

/* Parses ptxas -v output: per "Compiling entry function 'X'", its spill
 * stores/loads, registers and smem (0 when not mentioned). The count. */
static inline const char *line_end(const char *p)
{
    const char *e = strchr(p, '\n');
    return e ? e : p + strlen(p);
}

/* The number just before `at` (digits back from it). */
static inline long number_before(const char *start, const char *at)
{
    const char *b = at;
    while (b > start && b[-1] >= '0' && b[-1] <= '9')
        b--;
    return strtol(b, NULL, 10);
}

static inline int parse_ptxas(const char *log, ptx_info *k, int cap)
{
    static const char entry[] = "Compiling entry function '";
    int n = 0;
    for (const char *p = log; p && *p; p = *line_end(p) ? line_end(p) + 1 : NULL) {
        const char *e = line_end(p), *q;
        if ((q = strstr(p, entry)) && q < e) {
            if (n == cap)
                break;
            memset(&k[n], 0, sizeof k[n]);
            sscanf(q + strlen(entry), "%127[^']", k[n].name);
            n++;
        } else if (n && (q = strstr(p, " bytes stack frame")) && q < e) {
            k[n - 1].stack = number_before(p, q);
            const char *sp = strstr(p, " bytes spill stores");
            if (sp && sp < e)
                k[n - 1].spill_st = number_before(p, sp);
            const char *ld = strstr(p, " bytes spill loads");
            if (ld && ld < e)
                k[n - 1].spill_ld = number_before(p, ld);
        } else if (n && (q = strstr(p, " bytes spill stores")) && q < e) {
            k[n - 1].spill_st = number_before(p, q);
            const char *ld = strstr(p, " bytes spill loads");
            if (ld && ld < e)
                k[n - 1].spill_ld = number_before(p, ld);
        } else if (n && (q = strstr(p, "Used ")) && q < e) {
            k[n - 1].regs = strtol(q + 5, NULL, 10);
            const char *sm = strstr(q, " bytes smem");
            if (sm && sm < e)
                k[n - 1].smem = number_before(q, sm);
        }
    }
    return n;
}

/* The PTX of source src for arch: tex_kernel_ptx(k) when NVRTC made one,
 * else nvcc -ptx. Malloc'ed, NULL with a reason in why (skip when *skip). */
static inline char *get_ptx(const tex_kernel *k, const char *arch, const char *dir, char *why,
                            size_t n, bool *skip)
{
    const char *ptx = tex_kernel_ptx(k);
    if (ptx)
        return strdup(ptx);
    char nvcc[512], cu[600], out[600], archopt[64], *log = NULL;
    if (!cuda_bin("nvcc", nvcc, sizeof nvcc)) {
        snprintf(why, n, "no PTX from the library and no nvcc");
        *skip = true;
        return NULL;
    }
    snprintf(cu, sizeof cu, "%s/k.cu", dir);
    snprintf(out, sizeof out, "%s/k.ptx", dir);
    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    if (write_file(cu, tex_kernel_source(k)) != 0) {
        snprintf(why, n, "cannot write %s", cu);
        return NULL;
    }
    char ptxopt[] = "-ptx", oopt[] = "-o";
    char *argv[] = {nvcc, archopt, ptxopt, cu, oopt, out, NULL};
    int rc = run_tool(argv, &log);
    char *text = rc == 0 ? read_file(out) : NULL;
    if (!text)
        snprintf(why, n, "nvcc -ptx failed (%d): %s\n%s", rc, log ? log : "", tex_kernel_source(k));
    free(log);
    unlink(cu);
    unlink(out);
    return text;
}

/* ptxas -v -arch=ARCH on ptx; checks spills and shared memory of every
 * kernel. The largest stack frame (local memory) of a kernel, in bytes. */
static inline long check_ptxas(const char *what, const char *ptx, const char *arch, const char *dir,
                               const char *ptxas)
{
    char file[600], cubin[600], archopt[64], *log = NULL;
    snprintf(file, sizeof file, "%s/k.ptx", dir);
    snprintf(cubin, sizeof cubin, "%s/k.cubin", dir);
    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    TT_CHECK(write_file(file, ptx) == 0);
    char bin[600], v[] = "-v", oopt[] = "-o";
    snprintf(bin, sizeof bin, "%s", ptxas);
    char *argv[] = {bin, v, archopt, file, oopt, cubin, NULL};
    int rc = run_tool(argv, &log);
    ptx_info k[16];
    int nk = parse_ptxas(log, k, 16);
    if (rc != 0 || nk == 0)
        TT_FAILF("%s: ptxas (%d) gave %d kernels:\n%s", what, rc, nk, log ? log : "");
    long stack = 0;
    for (int i = 0; i < nk; i++) {
        printf("  %s %s: %ld registers, %ld bytes smem, %ld bytes stack, spills %ld/%ld\n", what,
               k[i].name, k[i].regs, k[i].smem, k[i].stack, k[i].spill_st, k[i].spill_ld);
        stack = k[i].stack > stack ? k[i].stack : stack;
        if (k[i].spill_st || k[i].spill_ld || k[i].smem > PTX_SMEM_LIMIT)
            TT_FAILF("%s %s: spill stores %ld, spill loads %ld, smem %ld (limit %d)", what,
                     k[i].name, k[i].spill_st, k[i].spill_ld, k[i].smem, PTX_SMEM_LIMIT);
    }
    free(log);
    unlink(file);
    unlink(cubin);
    return stack;
}

#endif
