/*
 * bench/jit: how long tex_build takes for the tutorial GEMM (1024³, TVM's
 * "optimize GEMM on CPU" final schedule), cold and with the cache warm.
 *
 *   case=gemm/first   a process building the kernel with an empty cache
 *                     directory (lowering + code generation + cc + dlopen);
 *                     anchor=cc: compiling the same generated source with the
 *                     same compiler and flags directly (spawned cc).
 *   case=gemm/cached  a new process building the same kernel with the cache
 *                     warm (lowering + generation + hash + dlopen); anchor=
 *                     dlopen: a new process dlopen-ing the cached object alone.
 * tex's times and dlopen's are measured inside the child process (from
 * before tex_ctx_new to after tex_build returns, or around dlopen), so
 * process start-up is not counted; cc's is the parent's wall time around
 * the spawned compiler. Each case runs its two sides interleaved
 * (bench/common.h), the minimum number of rounds: every cold run compiles.
 * The children are this program itself, spawned with an argument:
 *   jit --build     prints the build time in ms (TEX_CACHE_DIR from the parent)
 *   jit --dlopen P  prints the time of dlopen(P) in ms
 * The cache directories are fresh temporary ones, removed at the end.
 */
#include "common.h"
#include "gemm_packed.h"

#include <dirent.h>
#include <dlfcn.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tex/tex.h>
#include <unistd.h>

extern char **environ;

enum { N = 1024, BN = 32, KF = 4 };

#define BUDGET_MS 0.0 /* each case's timed runs: common.h's minimum count */

/* The tutorial's final schedule on C = A·packedB; the lowered function or NULL. */
static tex_func *tutorial_gemm(tex_ctx *ctx)
{
    tex_tensor *t[4];
    gemm_packed_define(ctx, N, N, N, BN, t);
    tex_schedule *s = tex_schedule_new(ctx, 1, &t[3]);
    return s ? gemm_packed_tutorial(ctx, s, t, BN, KF, "tutorial_gemm") : NULL;
}

/* Child: lower and build for target, print the elapsed ms. */
static int child_build(const char *target)
{
    double t0 = bench_now_ms();
    tex_ctx *ctx = tex_ctx_new();
    tex_func *f = ctx ? tutorial_gemm(ctx) : NULL;
    tex_kernel *k = f ? tex_build(f, target) : NULL;
    double t1 = bench_now_ms();
    if (!k)
        fprintf(stderr, "jit: build failed: %s\n", tex_errmsg(ctx));
    else
        printf("%.6f\n", t1 - t0);
    tex_kernel_free(k);
    tex_ctx_free(ctx);
    return k ? 0 : 1;
}

/* Child: dlopen path, print the elapsed ms. */
static int child_dlopen(const char *path)
{
    double t0 = bench_now_ms();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    double t1 = bench_now_ms();
    if (!h) {
        fprintf(stderr, "jit: dlopen failed: %s\n", dlerror());
        return 1;
    }
    printf("%.6f\n", t1 - t0);
    dlclose(h);
    return 0;
}

/* posix_spawnp of args (copied: posix_spawn takes non-const strings) with
 * stdout on out_fd (when >= 0); 0 or -1. */
static int spawn(const char *const args[], int out_fd, int close_fd, pid_t *pid)
{
    int n = 0;
    while (args[n])
        n++;
    char **copy = calloc((size_t)n + 1, sizeof *copy);
    int rc = copy ? 0 : -1;
    for (int k = 0; rc == 0 && k < n; k++)
        rc = (copy[k] = strdup(args[k])) ? 0 : -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out_fd >= 0) {
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
        posix_spawn_file_actions_addclose(&fa, close_fd);
    }
    if (rc == 0)
        rc = posix_spawnp(pid, copy[0], &fa, NULL, copy, environ) == 0 ? 0 : -1;
    posix_spawn_file_actions_destroy(&fa);
    for (int k = 0; copy && k < n; k++)
        free(copy[k]);
    free(copy);
    return rc;
}

/* Spawns args with TEX_CACHE_DIR=cache_dir and returns the number the child
 * prints, or -1 when it fails. */
static double spawn_timed(const char *const args[], const char *cache_dir)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    setenv("TEX_CACHE_DIR", cache_dir, 1);
    pid_t pid;
    int rc = spawn(args, fd[1], fd[0], &pid);
    close(fd[1]);
    char buf[64] = {0};
    ssize_t got = rc == 0 ? read(fd[0], buf, sizeof buf - 1) : -1;
    close(fd[0]);
    int status = 0;
    if (rc != 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
        return -1;
    return got > 0 ? strtod(buf, NULL) : -1;
}

/* ---------------------------------------------------------- directories */

/* Removes path and everything under it (best effort). */
static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char sub[4096];
        struct stat st;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(sub);
        else
            unlink(sub);
    }
    if (d)
        closedir(d);
    rmdir(path);
}

/* The first file named *.so under dir (depth ≤ 3) into out; 0 or -1. */
static int find_object(const char *dir, char *out, size_t size, int depth)
{
    DIR *d = depth <= 3 ? opendir(dir) : NULL;
    struct dirent *e;
    int rc = -1;
    while (rc != 0 && d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.')
            continue;
        char sub[4096];
        struct stat st;
        int n = snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof sub || lstat(sub, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            rc = find_object(sub, out, size, depth + 1);
        else if (S_ISREG(st.st_mode) && len > 3 && strcmp(e->d_name + len - 3, ".so") == 0) {
            snprintf(out, size, "%s", sub);
            rc = 0;
        }
    }
    if (d)
        closedir(d);
    return rc;
}

/* ------------------------------------------------------------- measures */

typedef struct {
    const char *const *argv;
    const char *cache_dir; /* NULL: a fresh directory per run */
    const char *tmp_base;  /* where the fresh ones go */
    double ms;             /* the time the last child reported */
} spawn_job;

/* One timed child; the time it reports goes to j->ms. */
static int run_child(void *arg)
{
    spawn_job *j = arg;
    char fresh[4096];
    const char *dir = j->cache_dir;
    if (!dir) {
        snprintf(fresh, sizeof fresh, "%s/cold-XXXXXX", j->tmp_base);
        if (!mkdtemp(fresh))
            return -1;
        dir = fresh;
    }
    j->ms = spawn_timed(j->argv, dir);
    if (!j->cache_dir)
        remove_tree(fresh);
    return j->ms < 0 ? -1 : 0;
}

/* gemm/first's anchor: the compiler command and the files it reads and writes. */
typedef struct {
    char src[4096], obj[4096];
    const char *argv[10];
} cc_job;

/* One run of j's compiler command. */
static int run_cc(void *arg)
{
    const cc_job *j = arg;
    pid_t pid;
    int status = 0;
    if (spawn(j->argv, -1, -1, &pid) != 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
        WEXITSTATUS(status))
        return -1;
    return 0;
}

/* Writes the tutorial GEMM's generated source (target "c") to path; 0 or -1. */
static int write_source(const char *path)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_func *f = ctx ? tutorial_gemm(ctx) : NULL;
    tex_kernel *k = f ? tex_build(f, "c") : NULL;
    FILE *fp = k ? fopen(path, "w") : NULL;
    int rc = fp && fputs(tex_kernel_source(k), fp) >= 0 ? 0 : -1;
    if (fp && fclose(fp) != 0)
        rc = -1;
    if (!k)
        fprintf(stderr, "jit: %s\n", tex_errmsg(ctx));
    tex_kernel_free(k);
    tex_ctx_free(ctx);
    return rc;
}

/* Writes the generated source under tmp and sets up j's command; 0 or -1. */
static int cc_init(cc_job *j, const char *tmp)
{
    snprintf(j->src, sizeof j->src, "%s/gemm.c", tmp);
    snprintf(j->obj, sizeof j->obj, "%s/gemm.so", tmp);
    const char *cc = getenv("TEX_CC") ? getenv("TEX_CC") : "cc";
    const char *argv[] = {cc,        "-O3", "-march=native", "-fopenmp", "-fPIC",
                          "-shared", "-o",  j->obj,          j->src,     NULL};
    memcpy(j->argv, argv, sizeof argv);
    return write_source(j->src);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--build") == 0)
        return child_build("cpu");
    if (argc > 2 && strcmp(argv[1], "--dlopen") == 0)
        return child_dlopen(argv[2]);
    char tmp[] = "/tmp/tex-bench-jit-XXXXXX", warm[4096], obj[4096], self[4096];
    if (!realpath("/proc/self/exe", self)) /* the children are this program */
        snprintf(self, sizeof self, "%s", argv[0]);
    if (!mkdtemp(tmp))
        bench_fail("jit", "setup", "mkdtemp_failed");
    snprintf(warm, sizeof warm, "%s/warm", tmp);
    const char *build_argv[] = {self, "--build", NULL};
    spawn_job cold = {build_argv, NULL, tmp, 0}, hot = {build_argv, warm, tmp, 0};
    cc_job cc;
    if (cc_init(&cc, tmp) != 0 ||
        bench_compare("jit", "gemm/first", (bench_run){run_child, &cold, &cold.ms}, "cc",
                      (bench_run){run_cc, &cc, NULL}, BUDGET_MS) != 0 ||
        mkdir(warm, 0700) != 0 || run_child(&hot) != 0) {
        remove_tree(tmp);
        bench_fail("jit", "gemm/first", "build_failed");
    }
    const char *dl_argv[] = {self, "--dlopen", obj, NULL};
    spawn_job dl = {dl_argv, warm, tmp, 0};
    int found = find_object(warm, obj, sizeof obj, 0) == 0;
    int rc = found ? bench_compare("jit", "gemm/cached", (bench_run){run_child, &hot, &hot.ms},
                                   "dlopen", (bench_run){run_child, &dl, &dl.ms}, BUDGET_MS)
                   : -1;
    remove_tree(tmp);
    if (rc != 0)
        bench_fail("jit", "gemm/cached", found ? "build_failed" : "no_cached_object");
    return 0;
}
