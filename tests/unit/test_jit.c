/*
 * The CPU backend's JIT machinery (src/util/sha256.c, src/backend_cpu/jit.c,
 * call.c) on hand-written C sources: SHA-256 test vectors; compile, load and
 * call through libffi; the cache (a second load does not run the compiler,
 * checked with a TEX_CC wrapper script that logs its runs); the cache
 * directory created 0700 and refused when group/world-writable, foreign-owned
 * or a symlink; a corrupted object detected and rebuilt; compiler errors with
 * output and the kept source; a missing compiler; four processes building the
 * same kernel into one empty cache at once; a fresh process with a warm cache
 * spawns nothing (not even `cc --version`). Tests needing `cc` skip without it.
 */
#include "tt.h"
#include "support/tmpdir.h"

#include "backend_cpu/jit.h"
#include "util/sha256.h"

#include <dirent.h>
#include <stdbool.h>
#include <dlfcn.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tex/tex.h"

static char root[64];     /* this run's temporary directory */
static char wrapper[128]; /* the logging TEX_CC */
static char logpath[128]; /* its log */

static const char *SRC42 = "#include <stdint.h>\n"
                           "int answer(int64_t a, int64_t b) { return (int)(a * 10 + b); }\n";

static const char *self_path; /* argv[0], rerun as a fresh process */

/* Lines of the wrapper's log: every run of the compiler, --version included. */
static int log_lines(void)
{
    FILE *fp = fopen(logpath, "r");
    if (!fp)
        return 0;
    int n = 0;
    for (int c; (c = fgetc(fp)) != EOF;)
        n += c == '\n';
    fclose(fp);
    return n;
}

/* Runs of the compiler (not `--version`) recorded by the wrapper. */
static int compiler_runs(void)
{
    FILE *fp = fopen(logpath, "r");
    if (!fp)
        return 0;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, fp))
        n += strstr(line, "-shared") != NULL && !strstr(line, "/probe/"); /* jit.c's probe */
    fclose(fp);
    return n;
}

/* A fresh cache directory path (not created) under root. */
static void fresh_cache(char *dir, size_t cap, const char *name)
{
    snprintf(dir, cap, "%s/%s", root, name);
    setenv("TEX_CACHE_DIR", dir, 1);
}

/* The name of the first file ending in suffix in dir, into out. */
static bool find_file(const char *dir, const char *suffix, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    size_t sl = strlen(suffix);
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        if (l >= sl && strcmp(e->d_name + l - sl, suffix) == 0) {
            snprintf(out, cap, "%s/%s", dir, e->d_name);
            found = true;
        }
    }
    closedir(d);
    return found;
}

/* Loads SRC42 and calls answer(4, 2) through libffi; the call's result or -1. */
static int load_and_call(int *rc_out)
{
    void *h = NULL;
    char err[4096] = "";
    int rc = texi_cpu_jit_load(SRC42, false, &h, err, sizeof err);
    *rc_out = rc;
    if (rc != 0) {
        printf("  load: %s\n", err);
        return -1;
    }
    void *sym = dlsym(h, "answer");
    void (*fn)(void);
    memcpy(&fn, &sym, sizeof fn);
    texi_cpu_call c;
    int kinds[2] = {TEXI_CALL_I64, TEXI_CALL_I64};
    int result = -1;
    if (sym && texi_cpu_call_prepare(&c, 2, kinds) == 0) {
        int64_t a = 4, b = 2;
        void *vals[2] = {&a, &b};
        result = texi_cpu_call_invoke(&c, fn, vals);
        texi_cpu_call_fini(&c);
    }
    dlclose(h);
    return result;
}

static void test_sha256_vectors(void)
{
    char hex[65];
    texi_sha256_hex_of("abc", 3, hex);
    TT_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    texi_sha256_hex_of("", 0, hex);
    TT_EQ_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    texi_sha256_hex_of(two, strlen(two), hex);
    TT_EQ_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* one million 'a', fed in uneven pieces */
    char chunk[997];
    memset(chunk, 'a', sizeof chunk);
    texi_sha256 s;
    texi_sha256_init(&s);
    size_t left = 1000000;
    while (left > 0) {
        size_t n = left < sizeof chunk ? left : sizeof chunk;
        texi_sha256_update(&s, chunk, n);
        left -= n;
    }
    uint8_t d[32];
    texi_sha256_final(&s, d);
    texi_sha256_hex(d, hex);
    TT_EQ_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_compile_and_cache_hit(void)
{
    if (!texi_cpu_jit_available())
        TT_SKIP("no C compiler");
    char dir[256];
    fresh_cache(dir, sizeof dir, "hit/sub/cache");
    int rc;
    TT_EQ_INT(load_and_call(&rc), 42);
    TT_EQ_INT(rc, 0);
    TT_EQ_INT(compiler_runs(), 1);
    TT_EQ_INT(load_and_call(&rc), 42); /* from the cache: no compiler run */
    TT_EQ_INT(compiler_runs(), 1);
    TT_EQ_INT(tt_count_files(dir, ".so"), 1);
    TT_EQ_INT(tt_count_files(dir, ".sum"), 1);
    TT_EQ_INT(tt_count_files(dir, ".c"), 0);
    TT_EQ_INT(tt_count_files(dir, ".log"), 0);
    struct stat st;
    TT_CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    /* other flags: another key */
    const char *saved = getenv("TEX_CFLAGS");
    char flags[512];
    snprintf(flags, sizeof flags, "%s -DUNUSED_FLAG=1", saved ? saved : "");
    setenv("TEX_CFLAGS", flags, 1);
    TT_EQ_INT(load_and_call(&rc), 42);
    flags[strlen(flags) - strlen(" -DUNUSED_FLAG=1")] = '\0';
    if (saved)
        setenv("TEX_CFLAGS", flags, 1);
    else
        unsetenv("TEX_CFLAGS");
    TT_EQ_INT(compiler_runs(), 2);
    TT_EQ_INT(tt_count_files(dir, ".so"), 2);
}

static void test_keep_source(void)
{
    if (!texi_cpu_jit_available())
        TT_SKIP("no C compiler");
    char dir[256];
    fresh_cache(dir, sizeof dir, "keep");
    setenv("TEX_KEEP_SOURCE", "1", 1);
    int rc;
    TT_EQ_INT(load_and_call(&rc), 42);
    unsetenv("TEX_KEEP_SOURCE");
    TT_EQ_INT(tt_count_files(dir, ".c"), 1);
}

static void test_cache_dir_refused(void)
{
    char dir[256], err[1024] = "";
    fresh_cache(dir, sizeof dir, "open");
    TT_CHECK(mkdir(dir, 0777) == 0 && chmod(dir, 0777) == 0);
    TT_EQ_INT(texi_cpu_jit_cache_dir(dir, sizeof dir, err, sizeof err), TEX_EUNAVAILABLE);
    TT_CHECK(strstr(err, "not writable by group or others") != NULL);
    void *h = NULL;
    TT_EQ_INT(texi_cpu_jit_load(SRC42, false, &h, err, sizeof err), TEX_EUNAVAILABLE);
    TT_CHECK(h == NULL);
    TT_EQ_INT(tt_count_files(dir, ".so"), 0);

    fresh_cache(dir, sizeof dir, "group");
    TT_CHECK(mkdir(dir, 0700) == 0 && chmod(dir, 0770) == 0);
    TT_EQ_INT(texi_cpu_jit_cache_dir(dir, sizeof dir, err, sizeof err), TEX_EUNAVAILABLE);

    char target[256];
    snprintf(target, sizeof target, "%s/real", root);
    TT_CHECK(mkdir(target, 0700) == 0);
    fresh_cache(dir, sizeof dir, "link");
    TT_CHECK(symlink(target, dir) == 0);
    TT_EQ_INT(texi_cpu_jit_cache_dir(dir, sizeof dir, err, sizeof err), TEX_EUNAVAILABLE);

    fresh_cache(dir, sizeof dir, "file");
    FILE *fp = fopen(dir, "w");
    if (fp)
        fclose(fp);
    TT_EQ_INT(texi_cpu_jit_cache_dir(dir, sizeof dir, err, sizeof err), TEX_EUNAVAILABLE);

    if (geteuid() == 0) { /* only root can make a directory someone else owns */
        fresh_cache(dir, sizeof dir, "foreign");
        TT_CHECK(mkdir(dir, 0700) == 0 && chown(dir, 12345, 12345) == 0);
        TT_EQ_INT(texi_cpu_jit_cache_dir(dir, sizeof dir, err, sizeof err), TEX_EUNAVAILABLE);
        TT_CHECK(strstr(err, "owned by this user") != NULL);
    }
}

static void corrupt(const char *path, long at, const char *bytes)
{
    FILE *fp = fopen(path, "r+b");
    TT_CHECK(fp != NULL);
    if (fp) {
        fseek(fp, at, SEEK_SET);
        fwrite(bytes, 1, strlen(bytes), fp);
        fclose(fp);
    }
}

static void test_corrupted_entry_rebuilt(void)
{
    if (!texi_cpu_jit_available())
        TT_SKIP("no C compiler");
    char dir[256], so[512], sum[512];
    fresh_cache(dir, sizeof dir, "corrupt");
    int rc, runs = compiler_runs();
    TT_EQ_INT(load_and_call(&rc), 42);
    TT_EQ_INT(compiler_runs(), runs + 1);
    TT_CHECK(find_file(dir, ".so", so, sizeof so));
    corrupt(so, 64, "garbage!");
    TT_EQ_INT(load_and_call(&rc), 42); /* detected, rebuilt */
    TT_EQ_INT(compiler_runs(), runs + 2);
    TT_EQ_INT(load_and_call(&rc), 42); /* and cached again */
    TT_EQ_INT(compiler_runs(), runs + 2);
    TT_CHECK(find_file(dir, ".sum", sum, sizeof sum));
    corrupt(sum, 64, "00"); /* a longer sum is wrong */
    TT_EQ_INT(load_and_call(&rc), 42);
    TT_EQ_INT(compiler_runs(), runs + 3);
    runs++;
    TT_CHECK(find_file(dir, ".sum", sum, sizeof sum));
    corrupt(sum, 0, "0000"); /* a wrong checksum counts as corruption too */
    TT_EQ_INT(load_and_call(&rc), 42);
    TT_EQ_INT(compiler_runs(), runs + 3);
    TT_CHECK(unlink(sum) == 0); /* object without its sum: rebuilt */
    TT_EQ_INT(load_and_call(&rc), 42);
    TT_EQ_INT(compiler_runs(), runs + 4);
    TT_EQ_INT(tt_count_files(dir, ".so"), 1);
}

static void test_compile_error(void)
{
    if (!texi_cpu_jit_available())
        TT_SKIP("no C compiler");
    char dir[256], err[8192] = "";
    fresh_cache(dir, sizeof dir, "bad");
    void *h = NULL;
    int rc = texi_cpu_jit_load("int broken(void) { return undeclared_thing; }\n", false, &h, err,
                               sizeof err);
    TT_EQ_INT(rc, TEX_ECOMPILE);
    TT_CHECK(h == NULL);
    TT_CHECK(strstr(err, "undeclared_thing") != NULL);
    TT_CHECK(strstr(err, "/failed/") != NULL);
    char failed[300];
    snprintf(failed, sizeof failed, "%s/failed", dir);
    TT_EQ_INT(tt_count_files(failed, ".c"), 1);
    TT_EQ_INT(tt_count_files(dir, ".so"), 0);
    TT_EQ_INT(tt_count_files(dir, ".c"), 0);
}

static void test_missing_compiler(void)
{
    char dir[256], err[1024] = "";
    fresh_cache(dir, sizeof dir, "nocc");
    setenv("TEX_CC", "/nonexistent/cc", 1);
    TT_EQ_INT(texi_cpu_jit_available(), 0);
    TT_EQ_INT(tex_target_available("cpu"), 0);
    TT_EQ_INT(tex_target_available("c"), 1);
    void *h = NULL;
    TT_EQ_INT(texi_cpu_jit_load(SRC42, false, &h, err, sizeof err), TEX_EUNAVAILABLE);
    TT_CHECK(strstr(err, "'/nonexistent/cc' was not found (set TEX_CC)") != NULL);
    setenv("TEX_CC", wrapper, 1);
}

/* Four processes build the same kernel into one empty cache at once. */
static void test_concurrent_processes(void)
{
    if (!texi_cpu_jit_available())
        TT_SKIP("no C compiler");
    char dir[256];
    fresh_cache(dir, sizeof dir, "race");
    pid_t pids[4];
    for (int i = 0; i < 4; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            int rc;
            _exit(load_and_call(&rc) == 42 ? 0 : 1);
        }
    }
    for (int i = 0; i < 4; i++) {
        int st = -1;
        TT_CHECK(pids[i] > 0 && waitpid(pids[i], &st, 0) == pids[i]);
        TT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    TT_EQ_INT(tt_count_files(dir, ".so"), 1);
    TT_EQ_INT(tt_count_files(dir, ".sum"), 1);
    TT_EQ_INT(tt_count_files(dir, ".c"), 0);
    TT_EQ_INT(tt_count_files(dir, ".log"), 0);
    int rc;
    int runs = compiler_runs();
    TT_EQ_INT(load_and_call(&rc), 42); /* the entry they left is valid */
    TT_EQ_INT(compiler_runs(), runs);
}

/* A new process (this program, "child-load") finds the kernel in the cache
 * and runs nothing: not even `cc --version` (the identity is on disk). */
static void test_fresh_process_spawns_nothing(void)
{
    if (!texi_cpu_jit_available())
        TT_SKIP("no C compiler");
    char dir[256], cmd[600];
    fresh_cache(dir, sizeof dir, "fresh");
    snprintf(cmd, sizeof cmd, "'%s' child-load", self_path);
    TT_EQ_INT(system(cmd), 0); /* builds */
    int lines = log_lines();
    TT_EQ_INT(system(cmd), 0); /* cached */
    TT_EQ_INT(log_lines(), lines);
    TT_EQ_INT(tt_count_files(dir, ".id"), 1);
}

static bool setup(void)
{
    snprintf(root, sizeof root, "/tmp/tex-test-jit-XXXXXX");
    if (!mkdtemp(root))
        return false;
    snprintf(wrapper, sizeof wrapper, "%s/cc-wrapper.sh", root);
    snprintf(logpath, sizeof logpath, "%s/cc.log", root);
    FILE *fp = fopen(wrapper, "w");
    if (!fp)
        return false;
    const char *cc = getenv("TEX_CC");
    fprintf(fp, "#!/bin/sh\necho \"$@\" >> '%s'\nexec %s \"$@\"\n", logpath, cc && *cc ? cc : "cc");
    fclose(fp);
    chmod(wrapper, 0700);
    setenv("TEX_CC", wrapper, 1);
    return true;
}

int main(int argc, char **argv)
{
    self_path = argv[0];
    if (argc == 2 && strcmp(argv[1], "child-load") == 0) {
        int rc;
        return load_and_call(&rc) == 42 ? 0 : 1;
    }
    if (!setup()) {
        printf("FAIL setup: cannot create a temporary directory\n");
        return 1;
    }
    TT_RUN(test_sha256_vectors);
    TT_RUN(test_compile_and_cache_hit);
    TT_RUN(test_keep_source);
    TT_RUN(test_cache_dir_refused);
    TT_RUN(test_corrupted_entry_rebuilt);
    TT_RUN(test_compile_error);
    TT_RUN(test_missing_compiler);
    TT_RUN(test_concurrent_processes);
    TT_RUN(test_fresh_process_spawns_nothing);
    tt_remove_tree(root);
    return tt_finish();
}
