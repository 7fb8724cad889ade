/*
 * The CPU backend's compiler driver and on-disk object cache.
 *
 * Compiling: the generated C goes to a mkstemp'ed file in the cache
 * directory and is fed to $TEX_CC (default "cc"; split on spaces into argv
 * words, never through a shell) on its standard input with `-x c -`, so the
 * object's bytes do not depend on the temporary name. Flags: FIXED_FLAGS
 * below, then the words of $TEX_CFLAGS and $TEX_SANITIZE_FLAGS (make asan
 * sets the latter so JIT code links the same sanitizer runtime). The
 * compiler runs under posix_spawnp with stdout and stderr redirected to a
 * temporary log; a spawn ENOENT or exit status 127 means "no compiler"
 * (TEX_EUNAVAILABLE), any other failure is TEX_ECOMPILE with the log's first
 * lines and the path where the source is kept (cache/failed/KEY.c).
 *
 * Cache: one directory ($TEX_CACHE_DIR, else $XDG_CACHE_HOME/tex, else
 * $HOME/.cache/tex), created 0700 and refused unless it is a directory owned
 * by this user and not writable by group or others. An entry is KEY.so plus
 * KEY.sum (the hex sha256 of the .so's bytes); KEY is the sha256 of the tex
 * version, the source, the flags, the compiler's identity (the first line
 * of `$TEX_CC --version`) and the host CPU's feature line (-march=native
 * code must not travel to another CPU through a shared home directory).
 * The identity is asked once per process and compiler, and remembered in
 * the cache as cc-HASH.id, HASH covering the compiler file's path, inode,
 * size and mtime, so that a process whose kernels are all cached spawns
 * nothing (bench/jit's "cached" case).
 * Compiler probe: before the first kernel of a process under a compiler and
 * flags, the code forms around a known miscompilation (PROBE_SRC) are
 * compiled through the cache like a kernel and run; when its result is wrong, and right with
 * PROBE_FIX, that flag joins the flags (and so the cache key) of every kernel. An unknown verdict
 * is settled on a second thread while the kernel compiles without the flag (build_with_probe). The
 * probe's entries live in the cache's probe/ subdirectory, with the verdict as KEY.probe ("fix" or
 * "none"; anything else is removed and the probe runs again). A build writes the object and the sum
 * under temporary names and renames the object, then the sum, into place; concurrent processes
 * building the same kernel each write their own temporaries, and rename is atomic, so a reader sees
 * a complete object or none. A lookup accepts an entry only when the object's hash equals its sum
 * (and dlopen succeeds); otherwise both files are removed and the kernel is rebuilt.
 * TEX_KEEP_SOURCE=1 keeps KEY.c beside the object. Nothing here prints or touches a tex_ctx: errors
 * are written into the caller's buffer.
 */
#include "backend_cpu/jit.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tex/tex.h"
#include "util/sha256.h"

extern char **environ;

#define MAX_WORDS 256
#define PATH_CAP 4096
#define LOG_LINES 40

/* ISO C mode turns off a*b + c -> fma contraction, which the vectorized
 * inner loops of GEMM-like kernels need; CONTRACT brings it back unless the
 * target asks for -strict-float (then it is said explicitly: off). Nothing
 * else here changes values: no -ffast-math, so -O3 keeps IEEE semantics.
 * -fno-trapping-math (Clang's default) says floating-point operations do
 * not trap, which they do not under the default environment: GCC then
 * if-converts a conditional one into a plain operation and a select. GCC
 * 12 with AVX-512 otherwise makes it a masked operation, and after
 * unswitching the loop on a condition of the mask it has kept a stale mask
 * (a row sum that lost two of its seven terms: test_jit_padding). */
static const char *const FIXED_FLAGS[] = {
    "-std=c99", "-O3", "-march=native", "-fno-trapping-math", "-fopenmp", "-fPIC", "-shared", NULL};
static const char CONTRACT[] = "-ffp-contract=fast", NO_CONTRACT[] = "-ffp-contract=off";

/* A command line: words split out of environment strings (no quoting). */
typedef struct {
    char *text[4]; /* strdup'ed sources of the words */
    int n_text;
    const char *v[MAX_WORDS + 1];
    int n;
} argvec;

static int fail(char *err, size_t err_size, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t err_size, int code, const char *fmt, ...)
{
    if (err && err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return code;
}

static const char *compiler_name(void)
{
    const char *cc = getenv("TEX_CC");
    return cc && *cc ? cc : "cc";
}

static void argv_push(argvec *a, const char *w)
{
    if (a->n < MAX_WORDS)
        a->v[a->n++] = w;
    a->v[a->n] = NULL;
}

/* Appends the space-separated words of s (may be NULL). false when out of memory. */
static bool argv_split(argvec *a, const char *s)
{
    if (!s || !*s || a->n_text == 4)
        return true;
    char *t = strdup(s);
    if (!t)
        return false;
    a->text[a->n_text++] = t;
    for (char *w = strtok(t, " \t\n"); w; w = strtok(NULL, " \t\n"))
        argv_push(a, w);
    return true;
}

static void argv_free(argvec *a)
{
    for (int i = 0; i < a->n_text; i++)
        free(a->text[i]);
    a->n_text = a->n = 0;
}

/* Runs argv with stdin from in_path (or /dev/null) and stdout+stderr to
 * log_path. 0 with *status = the exit status (128 + signal when killed), or
 * the errno of a failed spawn. */
static int spawn_wait(const char *const *argv, const char *in_path, const char *log_path,
                      int *status)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return ENOMEM;
    posix_spawn_file_actions_addopen(&fa, 0, in_path ? in_path : "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    char *const *args;
    memcpy(&args, &argv, sizeof args); /* posix_spawnp's prototype predates const */
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return rc;
    int ws;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR)
            return errno;
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    return 0;
}

/* A fresh temporary file name from a mkstemps template; false on failure. */
static bool make_temp(char *path, size_t cap, const char *dir, const char *suffix)
{
    if ((size_t)snprintf(path, cap, "%s/tex-tmp-XXXXXX%s", dir, suffix) >= cap)
        return false;
    int fd = mkstemps(path, (int)strlen(suffix));
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

static char *read_text(const char *path, size_t max)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max, fp) : 0;
    fclose(fp);
    if (buf)
        buf[n] = '\0';
    return buf;
}

static bool write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return false;
    size_t n = strlen(text);
    bool ok = fwrite(text, 1, n, fp) == n;
    return fclose(fp) == 0 && ok;
}

/* ------------------------------------------------------------ compiler identity */

static pthread_mutex_t ident_lock = PTHREAD_MUTEX_INITIALIZER;
static char ident_cc[PATH_CAP]; /* the TEX_CC the answer belongs to */
static char ident_text[512];    /* first line of `CC --version` */
static int ident_rc = 1;        /* 1 = not asked yet, 0 = ok, else an error code */

static int query_identity(const char *cc)
{
    char log[PATH_CAP];
    const char *tmp = getenv("TMPDIR");
    if (!make_temp(log, sizeof log, tmp && *tmp ? tmp : "/tmp", ".log"))
        return TEX_EINTERNAL;
    argvec a = {.n = 0};
    int status = 0, rc = TEX_ENOMEM;
    if (argv_split(&a, cc) && a.n > 0) {
        argv_push(&a, "--version");
        int e = spawn_wait(a.v, NULL, log, &status);
        rc = (e == 0 && status == 0) ? 0 : TEX_EUNAVAILABLE;
    }
    argv_free(&a);
    char *text = rc == 0 ? read_text(log, sizeof ident_text - 1) : NULL;
    unlink(log);
    if (rc == 0 && !text)
        return TEX_EINTERNAL;
    if (text) {
        text[strcspn(text, "\n")] = '\0';
        snprintf(ident_text, sizeof ident_text, "%s", text);
        free(text);
    }
    return rc;
}

/* What changes when the compiler is replaced: its resolved file (the first
 * word of TEX_CC, searched in PATH), inode, size and mtime (as ccache does). */
static bool compiler_stamp(const char *cc, char *stamp, size_t cap)
{
    char word[PATH_CAP], path[PATH_CAP];
    size_t n = strcspn(cc, " \t\n");
    if (n == 0 || n >= sizeof word)
        return false;
    memcpy(word, cc, n);
    word[n] = '\0';
    struct stat st;
    bool found =
        strchr(word, '/') && snprintf(path, sizeof path, "%s", word) > 0 && stat(path, &st) == 0;
    const char *dirs = getenv("PATH");
    for (const char *d = dirs; !strchr(word, '/') && !found && d && *d; d += strcspn(d, ":")) {
        d += *d == ':';
        int len = (int)strcspn(d, ":");
        found =
            snprintf(path, sizeof path, "%.*s/%s", len, len ? d : ".", word) < (int)sizeof path &&
            stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
    }
    if (!found)
        return false;
    snprintf(stamp, cap, "%s|%s|%llu|%lld|%lld.%09ld", cc, path, (unsigned long long)st.st_ino,
             (long long)st.st_size, (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
    return true;
}

/* DIR/cc-HASH.id: the identity remembered for this compiler stamp, so that a
 * process finding its kernels in the cache spawns nothing. */
static bool identity_file(const char *dir, const char *cc, char *path, size_t cap)
{
    char stamp[2 * PATH_CAP], hex[65];
    if (!dir || !compiler_stamp(cc, stamp, sizeof stamp))
        return false;
    texi_sha256_hex_of(stamp, strlen(stamp), hex);
    return (size_t)snprintf(path, cap, "%s/cc-%.32s.id", dir, hex) < cap;
}

static bool read_identity(const char *path)
{
    char *text = read_text(path, sizeof ident_text);
    bool ok = text && text[0] && strlen(text) < sizeof ident_text && !strchr(text, '\n');
    if (ok)
        snprintf(ident_text, sizeof ident_text, "%s", text);
    free(text);
    return ok;
}

/* Publishes the identity file (temporary, then rename); best effort. */
static void write_identity(const char *dir, const char *path)
{
    char tmp[PATH_CAP];
    if (!make_temp(tmp, sizeof tmp, dir, ".id"))
        return;
    if (!write_file(tmp, ident_text) || rename(tmp, path) != 0)
        unlink(tmp);
}

/* Copies the identity of $TEX_CC into out: remembered per process and, with a
 * cache directory, on disk. 0 or TEX_EUNAVAILABLE. */
static int compiler_identity(const char *dir, char *out, size_t cap)
{
    const char *cc = compiler_name();
    char idpath[PATH_CAP];
    pthread_mutex_lock(&ident_lock);
    if (ident_rc == 1 || strcmp(ident_cc, cc) != 0) {
        snprintf(ident_cc, sizeof ident_cc, "%s", cc);
        bool have_file = identity_file(dir, cc, idpath, sizeof idpath);
        if (have_file && read_identity(idpath)) {
            ident_rc = 0;
        } else {
            ident_rc = query_identity(cc);
            if (ident_rc == 0 && have_file)
                write_identity(dir, idpath);
        }
    }
    int rc = ident_rc;
    snprintf(out, cap, "%s", ident_text);
    pthread_mutex_unlock(&ident_lock);
    return rc;
}

/* The host's CPU features (the first "flags"/"Features" line of
 * /proc/cpuinfo): -march=native code must not be shared across CPUs. */
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static char host_cpu[65] = "unknown";

static void read_host_cpu(void)
{
    FILE *fp = fopen("/proc/cpuinfo", "r");
    char line[8192];
    while (fp && fgets(line, sizeof line, fp))
        if (strncmp(line, "flags", 5) == 0 || strncmp(line, "Features", 8) == 0) {
            texi_sha256_hex_of(line, strlen(line), host_cpu);
            break;
        }
    if (fp)
        fclose(fp);
}

int texi_cpu_jit_available(void)
{
    char id[512];
    return compiler_identity(NULL, id, sizeof id) == 0;
}

/* ------------------------------------------------------------ cache directory */

/* mkdir -p with mode 0700 for every directory created. */
static int mkdir_p(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return mkdir(path, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

int texi_cpu_jit_cache_dir(char *dir, size_t dir_size, char *err, size_t err_size)
{
    const char *env = getenv("TEX_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (!home || !*home) { /* a daemon or a bare `env -i`: the password database knows */
        const struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : NULL;
    }
    int n;
    if (env && *env)
        n = snprintf(dir, dir_size, "%s", env);
    else if (xdg && *xdg)
        n = snprintf(dir, dir_size, "%s/tex", xdg);
    else if (home && *home)
        n = snprintf(dir, dir_size, "%s/.cache/tex", home);
    else
        return fail(err, err_size, TEX_EUNAVAILABLE,
                    "tex_build: no cache directory (set TEX_CACHE_DIR)");
    if (n < 0 || (size_t)n >= dir_size - 80)
        return fail(err, err_size, TEX_EUNAVAILABLE,
                    "tex_build: the cache directory path is too long");
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    if (mkdir_p(dir) != 0)
        return fail(err, err_size, TEX_EUNAVAILABLE,
                    "tex_build: cannot create the cache directory '%s': %s", dir, strerror(errno));
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return fail(err, err_size, TEX_EUNAVAILABLE,
                    "tex_build: the cache directory '%s' is not a directory", dir);
    if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
        return fail(err, err_size, TEX_EUNAVAILABLE,
                    "tex_build: refusing the cache directory '%s': it must be owned by this user "
                    "and not writable by group or others (mode %03o)",
                    dir, (unsigned)(st.st_mode & 0777));
    return 0;
}

/* ------------------------------------------------------------ entries */

/* Keeps the OpenMP runtime a kernel pulled in loaded for the life of the
 * process: its worker threads stay parked inside it after a parallel region,
 * so unloading it with the last kernel (dlclose) would pull the code from
 * under them. The NOLOAD handles are deliberately never closed. */
static void pin_openmp_runtime(void)
{
    static const char *const names[] = {"libgomp.so.1", "libomp.so", "libomp.so.5"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        (void)dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

/* dlopen of a kernel's object, pinning the OpenMP runtime it loads. */
static void *open_object(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h)
        pin_openmp_runtime();
    return h;
}

/* Hex sha256 of a file's bytes; false when it cannot be read. */
static bool hash_file(const char *path, char hex[65])
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return false;
    texi_sha256 s;
    texi_sha256_init(&s);
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
        texi_sha256_update(&s, buf, n);
    bool ok = !ferror(fp);
    fclose(fp);
    uint8_t d[32];
    texi_sha256_final(&s, d);
    texi_sha256_hex(d, hex);
    return ok;
}

/* The cache key of source under the current compiler and flags. */
static void cache_key(const char *source, const argvec *flags, const char *ident, char hex[65])
{
    texi_sha256 s;
    texi_sha256_init(&s);
    const char *ver = tex_version();
    texi_sha256_update(&s, ver, strlen(ver) + 1);
    texi_sha256_update(&s, source, strlen(source) + 1);
    for (int i = 0; i < flags->n; i++)
        texi_sha256_update(&s, flags->v[i], strlen(flags->v[i]) + 1);
    texi_sha256_update(&s, "", 1);
    texi_sha256_update(&s, ident, strlen(ident) + 1);
    pthread_once(&host_once, read_host_cpu);
    texi_sha256_update(&s, host_cpu, strlen(host_cpu) + 1);
    uint8_t d[32];
    texi_sha256_final(&s, d);
    texi_sha256_hex(d, hex);
}

/* An existing entry, verified and loaded: 1 loaded, 0 absent, -1 corrupted
 * (both files removed). */
static int load_entry(const char *so, const char *sum, void **handle)
{
    if (access(so, F_OK) != 0 && access(sum, F_OK) != 0)
        return 0;
    char want[80] = "", got[65];
    char *text = read_text(sum, sizeof want - 1); /* exactly 64 digits, nothing more */
    if (text) {
        snprintf(want, sizeof want, "%s", text);
        free(text);
    }
    if (strlen(want) == 64 && hash_file(so, got) && strcmp(want, got) == 0 &&
        (*handle = open_object(so)) != NULL)
        return 1;
    if (access(sum, F_OK) != 0)
        return 0; /* another process is between its two renames */
    unlink(so);
    unlink(sum);
    return -1;
}

/* The first LOG_LINES lines of the compiler's log (malloc'ed, may be NULL). */
static char *log_head(const char *log)
{
    char *text = read_text(log, 8192);
    if (!text)
        return NULL;
    char *p = text;
    for (int i = 0; i < LOG_LINES && (p = strchr(p, '\n')) != NULL; i++)
        p++;
    if (p)
        *p = '\0';
    return text;
}

/* Files of one build, removed at the end unless renamed into place. */
typedef struct {
    char src[PATH_CAP], so[PATH_CAP], sum[PATH_CAP], log[PATH_CAP];
} build_files;

static void remove_temps(const build_files *t)
{
    const char *paths[4] = {t->src, t->so, t->sum, t->log};
    for (int i = 0; i < 4; i++)
        if (paths[i][0])
            unlink(paths[i]);
}

/* Keeps a rejected source as DIR/failed/KEY.c; its path goes to kept. */
static void keep_failed(const char *dir, const char *key, build_files *t, char *kept, size_t cap)
{
    snprintf(kept, cap, "%s", t->src);
    char failed[PATH_CAP];
    snprintf(failed, sizeof failed, "%s/failed", dir);
    if (mkdir(failed, 0700) != 0 && errno != EEXIST)
        return;
    snprintf(kept, cap, "%s/failed/%s.c", dir, key);
    if (rename(t->src, kept) != 0)
        snprintf(kept, cap, "%s", t->src);
    else
        t->src[0] = '\0';
}

static int compile_failed(const char *dir, const char *key, build_files *t, int status, char *err,
                          size_t err_size)
{
    char kept[PATH_CAP];
    keep_failed(dir, key, t, kept, sizeof kept);
    char *head = log_head(t->log);
    int rc = fail(err, err_size, TEX_ECOMPILE,
                  "tex_build: the C compiler '%s' rejected the generated code (exit status %d); "
                  "the source is kept at %s; compiler output:\n%s",
                  compiler_name(), status, kept, head ? head : "(none)");
    free(head);
    return rc;
}

/* Runs the compiler on t->src into t->so. */
static int run_compiler(const argvec *flags, const char *dir, const char *key, build_files *t,
                        char *err, size_t err_size)
{
    argvec a = *flags;
    argv_push(&a, "-x");
    argv_push(&a, "c");
    argv_push(&a, "-");
    argv_push(&a, "-o");
    argv_push(&a, t->so);
    argv_push(&a, "-lm");
    int status = 0, e = spawn_wait(a.v, t->src, t->log, &status);
    if (e == ENOENT || (e == 0 && status == 127))
        return fail(err, err_size, TEX_EUNAVAILABLE,
                    "tex_build: the C compiler '%s' was not found (set TEX_CC)", compiler_name());
    if (e != 0)
        return fail(err, err_size, TEX_EUNAVAILABLE,
                    "tex_build: cannot run the C compiler '%s': %s", compiler_name(), strerror(e));
    if (status != 0)
        return compile_failed(dir, key, t, status, err, err_size);
    return 0;
}

/* Compiles source, loads the object and publishes the entry (object, then sum). */
static int build_entry(const char *dir, const char *key, const char *source, const argvec *flags,
                       void **handle, char *err, size_t err_size)
{
    build_files t = {"", "", "", ""};
    char hex[65], so[PATH_CAP], sum[PATH_CAP];
    int rc = TEX_EINTERNAL;
    if (!make_temp(t.src, PATH_CAP, dir, ".c") || !make_temp(t.so, PATH_CAP, dir, ".so") ||
        !make_temp(t.log, PATH_CAP, dir, ".log") || !make_temp(t.sum, PATH_CAP, dir, ".sum") ||
        !write_file(t.src, source)) {
        rc = fail(err, err_size, TEX_EUNAVAILABLE,
                  "tex_build: cannot write temporary files in the cache directory '%s': %s", dir,
                  strerror(errno));
        goto out;
    }
    if ((rc = run_compiler(flags, dir, key, &t, err, err_size)) != 0)
        goto out;
    if (!hash_file(t.so, hex) || !write_file(t.sum, hex)) {
        rc = fail(err, err_size, TEX_EINTERNAL, "tex_build: cannot checksum the compiled object %s",
                  t.so);
        goto out;
    }
    if (!(*handle = open_object(t.so))) {
        rc = fail(err, err_size, TEX_ECOMPILE,
                  "tex_build: the compiled object cannot be loaded: %s", dlerror());
        goto out;
    }
    snprintf(so, sizeof so, "%s/%s.so", dir, key);
    snprintf(sum, sizeof sum, "%s/%s.sum", dir, key);
    if (rename(t.so, so) == 0 && rename(t.sum, sum) == 0)
        t.so[0] = t.sum[0] = '\0';
    if (getenv("TEX_KEEP_SOURCE") && strcmp(getenv("TEX_KEEP_SOURCE"), "1") == 0) {
        snprintf(so, sizeof so, "%s/%s.c", dir, key);
        if (rename(t.src, so) == 0)
            t.src[0] = '\0';
    }
    rc = 0;
out:
    remove_temps(&t);
    return rc;
}

/* ------------------------------------------------------------ compiler probe */

/* A known miscompilation, checked once per compiler and flags: GCC 12 at -O3
 * with AVX2 if-converts a conditional load in a select arm (the zero padding
 * of a convolution, `P[i] = c ? X[i - 2] : 0`) into a masked load with a
 * wrong mask. tex never emits that form: guarded_loads.c loads
 * unconditionally at a clamped index and then selects. The probe checks
 * that the compiler gets the forms tex does emit for such code right: that
 * load-then-select (loop 1) and loads hoisted above a guarded store, as in a
 * predicated reduction or a split tail (loop 2). The expected values are computed without loads, so
 * the same defect cannot hide in the check. */
static const char PROBE_SRC[] =
    "#if defined(__GNUC__) && !defined(__clang__)\n"
    "#define TEX_PROBE_NOINLINE __attribute__((noipa))\n"
    "#else\n"
    "#define TEX_PROBE_NOINLINE __attribute__((noinline))\n"
    "#endif\n"
    "TEX_PROBE_NOINLINE void tex_probe_select(const float *restrict X, float *restrict P)\n"
    "{\n"
    "    for (int py = 0; py < 13; ++py)\n"
    "        for (int px = 0; px < 2; ++px) {\n"
    "            int j = py * 2 + px - 2;\n"
    "            float v = X[j < 0 ? 0 : j > 21 ? 21 : j];\n"
    "            P[py * 2 + px] = py >= 1 && py < 12 ? v : 0.0f;\n"
    "        }\n"
    "}\n"
    "\n"
    "TEX_PROBE_NOINLINE void tex_probe_guard(const float *restrict X, float *restrict P)\n"
    "{\n"
    "    for (int py = 0; py < 13; ++py)\n"
    "        for (int px = 0; px < 2; ++px) {\n"
    "            int j = py * 2 + px - 2;\n"
    "            float v = X[j < 0 ? 0 : j > 21 ? 21 : j], o = P[py * 2 + px];\n"
    "            if (py >= 1 && py < 12)\n"
    "                P[py * 2 + px] = o + v;\n"
    "        }\n"
    "}\n"
    "\n"
    "int tex_probe(void)\n"
    "{\n"
    "    float X[22], P[26], Q[26];\n"
    "    int bad = 0;\n"
    "    for (int i = 0; i < 22; ++i)\n"
    "        X[i] = (float)(i + 1);\n"
    "    for (int i = 0; i < 26; ++i)\n"
    "        Q[i] = 0.0f;\n"
    "    tex_probe_select(X, P);\n"
    "    tex_probe_guard(X, Q);\n"
    "    for (int i = 0; i < 26; ++i) {\n"
    "        float want = i >= 2 && i < 24 ? (float)(i - 1) : 0.0f;\n"
    "        bad += (P[i] != want) + (Q[i] != want);\n"
    "    }\n"
    "    return bad;\n"
    "}\n";

/* Added to the flags of every kernel when the probe comes out wrong and is
 * right with it. */
#define PROBE_FIX "-fno-tree-loop-if-convert"

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static char probe_key[65]; /* the probe's cache key under the flags probed last */
static bool probe_fix;     /* their verdict: add PROBE_FIX */

/* Builds (or finds in the cache, like a kernel) and runs the probe under
 * flags: 1 when its result is wrong, 0 when right, -1 when it cannot be built
 * or loaded (the kernel's own build then reports the compiler). */
static int run_probe(const char *dir, const argvec *flags, const char *ident)
{
    char key[65], so[PATH_CAP], sum[PATH_CAP], err[256];
    void *h = NULL;
    cache_key(PROBE_SRC, flags, ident, key);
    snprintf(so, sizeof so, "%s/%s.so", dir, key);
    snprintf(sum, sizeof sum, "%s/%s.sum", dir, key);
    if (load_entry(so, sum, &h) != 1 &&
        build_entry(dir, key, PROBE_SRC, flags, &h, err, sizeof err) != 0)
        return -1;
    void *sym = dlsym(h, "tex_probe");
    int (*fn)(void) = NULL;
    memcpy(&fn, &sym, sizeof sym); /* POSIX: object and function pointers convert */
    int wrong = fn ? fn() != 0 : -1;
    dlclose(h);
    return wrong;
}

/* The verdict DIR/KEY.probe holds: 1 "fix", 0 "none", -1 none or anything
 * else (then removed, to be written again). */
static int read_verdict(const char *path)
{
    char *text = read_text(path, 8);
    int v = !text ? -1 : strcmp(text, "fix\n") == 0 ? 1 : strcmp(text, "none\n") == 0 ? 0 : -1;
    if (text && v < 0)
        unlink(path);
    free(text);
    return v;
}

/* Publishes a verdict (temporary file, then rename); best effort. */
static void write_verdict(const char *dir, const char *path, bool fix)
{
    char tmp[PATH_CAP];
    if (!make_temp(tmp, sizeof tmp, dir, ".probe"))
        return;
    if (!write_file(tmp, fix ? "fix\n" : "none\n") || rename(tmp, path) != 0)
        unlink(tmp);
}

/* The probe's verdict, computed: 1 wrong without PROBE_FIX and right with
 * it, 0 otherwise, -1 when the probe could not be built or run. */
static int probe_verdict(const char *dir, const argvec *flags, const char *ident)
{
    int wrong = run_probe(dir, flags, ident);
    if (wrong != 1)
        return wrong;
    argvec fixed = *flags; /* shares the words; never freed */
    argv_push(&fixed, PROBE_FIX);
    int still = run_probe(dir, &fixed, ident);
    return still < 0 ? -1 : still == 0;
}

/* The probe's cache key and the paths of its subdirectory and verdict file
 * under flags; false when a path does not fit (the caller keeps dir 100
 * bytes short of PATH_CAP, so it always does). */
static bool probe_paths(const char *dir, const argvec *flags, const char *ident, char key[65],
                        char sub[PATH_CAP], char path[PATH_CAP])
{
    cache_key(PROBE_SRC, flags, ident, key);
    return (size_t)snprintf(sub, PATH_CAP, "%s/probe", dir) < PATH_CAP &&
           (size_t)snprintf(path, PATH_CAP, "%s/%s.probe", sub, key) < PATH_CAP;
}

/* Whether kernels built with flags need PROBE_FIX, as far as it is known
 * without running anything: 1 or 0 from this process's memory (for the last
 * flags) or the cache's probe/ directory, -1 unknown. */
static int known_probe_fix(const char *dir, const argvec *flags, const char *ident)
{
    char key[65], sub[PATH_CAP], path[PATH_CAP];
    if (!probe_paths(dir, flags, ident, key, sub, path))
        return 0;
    pthread_mutex_lock(&probe_lock);
    int v = strcmp(key, probe_key) == 0 ? probe_fix : read_verdict(path);
    if (v >= 0 && strcmp(key, probe_key) != 0) {
        probe_fix = v == 1;
        memcpy(probe_key, key, sizeof key);
    }
    pthread_mutex_unlock(&probe_lock);
    return v;
}

/* Whether kernels built with flags need PROBE_FIX: the probe is wrong
 * without it and right with it. Runs the probe unless the verdict is
 * known, then remembers it in memory and in the cache's probe/ directory
 * (its objects and KEY.probe), so a warm process runs nothing. */
static bool needs_probe_fix(const char *dir, const argvec *flags, const char *ident)
{
    char key[65], sub[PATH_CAP], path[PATH_CAP];
    if (!probe_paths(dir, flags, ident, key, sub, path))
        return false;
    pthread_mutex_lock(&probe_lock);
    if (strcmp(key, probe_key) != 0) {
        int v = mkdir(sub, 0700) == 0 || errno == EEXIST ? read_verdict(path) : 0;
        if (v < 0 && (v = probe_verdict(sub, flags, ident)) >= 0)
            write_verdict(sub, path, v == 1);
        probe_fix = v == 1;
        memcpy(probe_key, key, sizeof key);
    }
    bool fix = probe_fix;
    pthread_mutex_unlock(&probe_lock);
    return fix;
}

/* The probe, run on a thread of its own beside a kernel's build. */
typedef struct {
    const char *dir, *ident;
    const argvec *flags;
    bool fix; /* the verdict, once joined */
} probe_job;

static void *probe_main(void *arg)
{
    probe_job *j = arg;
    j->fix = needs_probe_fix(j->dir, j->flags, j->ident);
    return NULL;
}

/* Loads the kernel of source under flags from the cache, or builds it;
 * its key goes to key. */
static int load_or_build(const char *dir, const char *source, const argvec *flags,
                         const char *ident, void **handle, char key[65], char *err, size_t err_size)
{
    char so[PATH_CAP], sum[PATH_CAP];
    cache_key(source, flags, ident, key);
    snprintf(so, sizeof so, "%s/%s.so", dir, key);
    snprintf(sum, sizeof sum, "%s/%s.sum", dir, key);
    return load_entry(so, sum, handle) == 1
               ? 0
               : build_entry(dir, key, source, flags, handle, err, err_size);
}

/* Drops a kernel built under flags the probe then rejected: unloads it and
 * removes its cache entry, which no process will look up again. */
static void discard_entry(const char *dir, const char *key, void **handle)
{
    char path[PATH_CAP];
    dlclose(*handle);
    *handle = NULL;
    snprintf(path, sizeof path, "%s/%s.sum", dir, key);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s.so", dir, key);
    unlink(path);
}

/* Builds source under flags, settling the probe's verdict first. When the
 * verdict is unknown (the first kernel under a new compiler or flags), the
 * probe runs on a second thread while the kernel compiles without
 * PROBE_FIX, which is what nearly every compiler gets; a "fix" verdict
 * then discards that build and compiles again with it. So a cold cache
 * costs one compile's wall time, not two. */
static int build_with_probe(const char *dir, const char *source, argvec *flags, const char *ident,
                            void **handle, char *err, size_t err_size)
{
    char key[65];
    int fix = known_probe_fix(dir, flags, ident), rc = 0;
    if (fix < 0) {
        probe_job job = {.dir = dir, .ident = ident, .flags = flags, .fix = false};
        pthread_t thread;
        if (pthread_create(&thread, NULL, probe_main, &job) != 0) {
            fix = needs_probe_fix(dir, flags, ident);
        } else {
            rc = load_or_build(dir, source, flags, ident, handle, key, err, err_size);
            pthread_join(thread, NULL);
            if (!job.fix)
                return rc;
            if (rc == 0)
                discard_entry(dir, key, handle);
            fix = 1;
        }
    }
    if (fix)
        argv_push(flags, PROBE_FIX);
    return load_or_build(dir, source, flags, ident, handle, key, err, err_size);
}

/* The compiler's words and every flag: the key's input and the command line. */
static bool compile_flags(argvec *a, bool strict_float)
{
    if (!argv_split(a, compiler_name()))
        return false;
    for (int i = 0; FIXED_FLAGS[i]; i++)
        argv_push(a, FIXED_FLAGS[i]);
    argv_push(a, strict_float ? NO_CONTRACT : CONTRACT);
    return argv_split(a, getenv("TEX_CFLAGS")) && argv_split(a, getenv("TEX_SANITIZE_FLAGS"));
}

int texi_cpu_jit_load(const char *source, bool strict_float, void **handle, char *err,
                      size_t err_size)
{
    char dir[PATH_CAP - 100], ident[512];
    *handle = NULL;
    int rc = texi_cpu_jit_cache_dir(dir, sizeof dir, err, err_size);
    if (rc != 0)
        return rc;
    if (compiler_identity(dir, ident, sizeof ident) != 0)
        return fail(err, err_size, TEX_EUNAVAILABLE,
                    "tex_build: the C compiler '%s' was not found (set TEX_CC)", compiler_name());
    argvec flags = {.n = 0};
    if (compile_flags(&flags, strict_float))
        rc = build_with_probe(dir, source, &flags, ident, handle, err, err_size);
    else
        rc = fail(err, err_size, TEX_ENOMEM, "tex_build: out of memory");
    argv_free(&flags);
    return rc;
}
