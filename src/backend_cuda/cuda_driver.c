/*
 * Loading the CUDA Driver API and NVRTC at run time (cuda_driver.h).
 *
 * Nothing here is linked: libcuda.so.1 and an NVRTC library are opened with
 * dlopen the first time something asks for them, and their entry points go
 * into function tables (texi_cuda_api here, nvrtc_api below). Each load runs
 * once per process under pthread_once; the tables and the "why not" texts
 * are written only inside those once-routines, so every later reader sees
 * them complete and immutable. A library that fails to load leaves its
 * reason behind and is not tried again.
 *
 * The driver comes in two stages: "opened" (dlopen + symbols; enough for
 * cuDriverGetVersion and cuGetErrorString, which need no cuInit) and
 * "initialised" (cuInit(0) succeeded and at least one device exists). Only
 * the second makes texi_cuda_driver non-NULL. The driver is only ever
 * opened by its runtime soname libcuda.so.1: the toolkit's link-time stub
 * (lib64/stubs/libcuda.so) has another file name, and a library that still
 * resolves into a "stubs" directory is refused.
 *
 * NVRTC: texi_nvrtc_candidates lists, in order, the soname matching the
 * driver's major version (when a driver is installed: PTX from a newer NVRTC
 * would not load on it), those of CUDA 13 and 12, then the libnvrtc.so* files
 * of $CUDA_HOME/lib64 and /usr/local/cuda/lib64 (versioned ones first). The
 * first that opens and is not under a stubs directory wins. NVRTC does not
 * ship cuda_fp16.h / cuda_bf16.h built in, so the toolkit's include
 * directory is located once (next to the loaded library, else $CUDA_HOME or
 * /usr/local/cuda) and passed as -I.
 *
 * Contexts: every device's primary context is retained on first use and
 * kept for the life of the process (a mutex guards the table); callers make
 * it current on their thread with texi_cuda_enter before any driver call.
 *
 * Not here: kernels, launch plans and arrays (backend.c, runtime/array.c).
 */
#define _GNU_SOURCE /* dladdr: where a loaded library lives */
#include "backend_cuda/cuda_driver.h"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tex/tex.h"

#define MAX_DEVICES 64
#define MAX_CANDIDATES 32
#define ATTR_CC_MAJOR 75 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define ATTR_CC_MINOR 76 /* ..._MINOR */

/* dlsym's object pointer stored into a function-pointer slot of a table. */
static bool bind_symbol(void *lib, const char *name, void *slot)
{
    void *sym = dlsym(lib, name);
    if (sym)
        memcpy(slot, &sym, sizeof sym); /* POSIX: object and function pointers convert */
    return sym != NULL;
}

/* An entry point of a loaded library and its slot in the function table. */
typedef struct {
    const char *name;
    size_t offset;
} symbol_slot;

/* Binds the n symbols of lib into table at their offsets; the name of the
 * first one lib lacks, or NULL when all are bound. */
static const char *bind_symbols(void *lib, const symbol_slot *syms, size_t n, void *table)
{
    for (size_t i = 0; i < n; i++)
        if (!bind_symbol(lib, syms[i].name, (char *)table + syms[i].offset))
            return syms[i].name;
    return NULL;
}

/* True when the library lib (through one of its symbols) was loaded from a
 * "stubs" directory: the toolkit's link-time stub, never a real library. */
static bool is_stub(void *sym)
{
    Dl_info info;
    return sym && dladdr(sym, &info) && info.dli_fname && strstr(info.dli_fname, "/stubs/");
}

/* ------------------------------------------------------------------ driver */

static texi_cuda_api drv;           /* filled by open_driver */
static bool drv_opened;             /* libcuda.so.1 and every symbol */
static const texi_cuda_api *drv_ok; /* set by init_driver when usable */
static int drv_devices;
static char drv_why[512];
static pthread_once_t drv_open_once = PTHREAD_ONCE_INIT;
static pthread_once_t drv_init_once = PTHREAD_ONCE_INIT;

static const symbol_slot drv_symbols[] = {
    {"cuInit", offsetof(texi_cuda_api, cuInit)},
    {"cuDriverGetVersion", offsetof(texi_cuda_api, cuDriverGetVersion)},
    {"cuDeviceGetCount", offsetof(texi_cuda_api, cuDeviceGetCount)},
    {"cuDeviceGet", offsetof(texi_cuda_api, cuDeviceGet)},
    {"cuDeviceGetAttribute", offsetof(texi_cuda_api, cuDeviceGetAttribute)},
    {"cuDevicePrimaryCtxRetain", offsetof(texi_cuda_api, cuDevicePrimaryCtxRetain)},
    {"cuCtxSetCurrent", offsetof(texi_cuda_api, cuCtxSetCurrent)},
    {"cuCtxSynchronize", offsetof(texi_cuda_api, cuCtxSynchronize)},
    {"cuModuleLoadDataEx", offsetof(texi_cuda_api, cuModuleLoadDataEx)},
    {"cuModuleUnload", offsetof(texi_cuda_api, cuModuleUnload)},
    {"cuModuleGetFunction", offsetof(texi_cuda_api, cuModuleGetFunction)},
    {"cuLaunchKernel", offsetof(texi_cuda_api, cuLaunchKernel)},
    {"cuMemAlloc_v2", offsetof(texi_cuda_api, cuMemAlloc)},
    {"cuMemFree_v2", offsetof(texi_cuda_api, cuMemFree)},
    {"cuMemsetD8_v2", offsetof(texi_cuda_api, cuMemsetD8)},
    {"cuMemcpyHtoD_v2", offsetof(texi_cuda_api, cuMemcpyHtoD)},
    {"cuMemcpyDtoH_v2", offsetof(texi_cuda_api, cuMemcpyDtoH)},
    {"cuMemcpyDtoD_v2", offsetof(texi_cuda_api, cuMemcpyDtoD)},
    {"cuGetErrorName", offsetof(texi_cuda_api, cuGetErrorName)},
    {"cuGetErrorString", offsetof(texi_cuda_api, cuGetErrorString)},
};

static void open_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(drv_why, sizeof drv_why,
                 "libcuda.so.1 not found (%s): no CUDA driver is installed",
                 e ? e : "dlopen failed");
        return;
    }
    const char *missing =
        bind_symbols(lib, drv_symbols, sizeof drv_symbols / sizeof drv_symbols[0], &drv);
    if (missing) {
        snprintf(drv_why, sizeof drv_why,
                 "libcuda.so.1 lacks %s: the CUDA driver is too old (CUDA 12 or newer needed)",
                 missing);
        dlclose(lib);
        return;
    }
    void *init;
    memcpy(&init, &drv.cuInit, sizeof init);
    if (is_stub(init)) {
        snprintf(
            drv_why, sizeof drv_why,
            "libcuda.so.1 resolves to the toolkit's link-time stub (lib64/stubs), not a driver");
        dlclose(lib);
        return;
    }
    drv_opened = true; /* the handle stays open for the process */
}

void texi_cuda_result_text(int rc, const char *call, char *msg, size_t cap)
{
    pthread_once(&drv_open_once, open_driver);
    const char *name = NULL, *text = NULL;
    if (drv_opened) {
        if (drv.cuGetErrorName(rc, &name) != 0)
            name = NULL;
        if (drv.cuGetErrorString(rc, &text) != 0)
            text = NULL;
    }
    if (name)
        snprintf(msg, cap, "%s failed: %s (%s)", call, name, text ? text : "no description");
    else
        snprintf(msg, cap, "%s failed: CUDA error %d", call, rc);
}

static void init_driver(void)
{
    pthread_once(&drv_open_once, open_driver);
    if (!drv_opened)
        return;
    int rc = drv.cuInit(0);
    if (rc == 0)
        rc = drv.cuDeviceGetCount(&drv_devices);
    if (rc != 0) {
        texi_cuda_result_text(rc, "cuInit", drv_why, sizeof drv_why);
        return;
    }
    if (drv_devices <= 0) {
        snprintf(drv_why, sizeof drv_why, "the CUDA driver found no device");
        return;
    }
    drv_ok = &drv;
}

const texi_cuda_api *texi_cuda_driver(void)
{
    pthread_once(&drv_init_once, init_driver);
    return drv_ok;
}

const char *texi_cuda_driver_why(void)
{
    return texi_cuda_driver() ? "" : drv_why;
}

/* The driver's major version (12 for 12040), or 0 without a driver. */
static int driver_major(void)
{
    pthread_once(&drv_open_once, open_driver);
    int v = 0;
    if (!drv_opened || drv.cuDriverGetVersion(&v) != 0)
        return 0;
    return v / 1000;
}

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static void *ctx_of[MAX_DEVICES]; /* retained primary contexts */

/* device's primary context, retained on first use (under ctx_lock). */
static int primary_context(int device, void **ctx, char *msg, size_t cap)
{
    pthread_mutex_lock(&ctx_lock);
    int rc = 0, dev = 0;
    if (!ctx_of[device]) {
        rc = drv.cuDeviceGet(&dev, device);
        if (rc == 0)
            rc = drv.cuDevicePrimaryCtxRetain(&ctx_of[device], dev);
        if (rc != 0)
            ctx_of[device] = NULL;
    }
    *ctx = ctx_of[device];
    pthread_mutex_unlock(&ctx_lock);
    if (rc != 0)
        texi_cuda_result_text(rc, "cuDevicePrimaryCtxRetain", msg, cap);
    return rc != 0 ? TEX_EDEVICE : 0;
}

int texi_cuda_enter(int device, char *msg, size_t cap)
{
    if (!texi_cuda_driver()) {
        snprintf(msg, cap, "%s", drv_why);
        return TEX_EUNAVAILABLE;
    }
    if (device < 0 || device >= drv_devices || device >= MAX_DEVICES) {
        snprintf(msg, cap, "there is no CUDA device %d (%d found)", device, drv_devices);
        return TEX_EUNAVAILABLE;
    }
    void *ctx = NULL;
    int rc = primary_context(device, &ctx, msg, cap);
    if (rc != 0)
        return rc;
    int cu = drv.cuCtxSetCurrent(ctx);
    if (cu != 0) {
        texi_cuda_result_text(cu, "cuCtxSetCurrent", msg, cap);
        return TEX_EDEVICE;
    }
    return 0;
}

int texi_cuda_device_arch(int device, char *arch, size_t cap, char *msg, size_t cap_msg)
{
    int rc = texi_cuda_enter(device, msg, cap_msg);
    if (rc != 0)
        return rc;
    int dev = 0, major = 0, minor = 0;
    int cu = drv.cuDeviceGet(&dev, device);
    if (cu == 0)
        cu = drv.cuDeviceGetAttribute(&major, ATTR_CC_MAJOR, dev);
    if (cu == 0)
        cu = drv.cuDeviceGetAttribute(&minor, ATTR_CC_MINOR, dev);
    if (cu != 0) {
        texi_cuda_result_text(cu, "cuDeviceGetAttribute", msg, cap_msg);
        return TEX_EDEVICE;
    }
    snprintf(arch, cap, "sm_%d%d", major, minor);
    return 0;
}

/* ------------------------------------------------------------------ NVRTC */

typedef struct {
    const char *(*nvrtcGetErrorString)(int result);
    int (*nvrtcCreateProgram)(void **prog, const char *src, const char *name, int n_headers,
                              const char *const *headers, const char *const *include_names);
    int (*nvrtcDestroyProgram)(void **prog);
    int (*nvrtcCompileProgram)(void *prog, int n_options, const char *const *options);
    int (*nvrtcGetPTXSize)(void *prog, size_t *size);
    int (*nvrtcGetPTX)(void *prog, char *ptx);
    int (*nvrtcGetProgramLogSize)(void *prog, size_t *size);
    int (*nvrtcGetProgramLog)(void *prog, char *log);
    int (*nvrtcGetNumSupportedArchs)(int *n);  /* optional */
    int (*nvrtcGetSupportedArchs)(int *archs); /* optional */
} nvrtc_api;

static nvrtc_api rtc;
static bool rtc_ok;
static char rtc_why[1024];
static char rtc_include[PATH_MAX + 16]; /* "-I<dir>", or "" */
static pthread_once_t rtc_once = PTHREAD_ONCE_INIT;

static const symbol_slot rtc_symbols[] = {
    {"nvrtcGetErrorString", offsetof(nvrtc_api, nvrtcGetErrorString)},
    {"nvrtcCreateProgram", offsetof(nvrtc_api, nvrtcCreateProgram)},
    {"nvrtcDestroyProgram", offsetof(nvrtc_api, nvrtcDestroyProgram)},
    {"nvrtcCompileProgram", offsetof(nvrtc_api, nvrtcCompileProgram)},
    {"nvrtcGetPTXSize", offsetof(nvrtc_api, nvrtcGetPTXSize)},
    {"nvrtcGetPTX", offsetof(nvrtc_api, nvrtcGetPTX)},
    {"nvrtcGetProgramLogSize", offsetof(nvrtc_api, nvrtcGetProgramLogSize)},
    {"nvrtcGetProgramLog", offsetof(nvrtc_api, nvrtcGetProgramLog)},
};

static int add_candidate(char **out, int n, int cap, const char *s)
{
    if (n >= cap || strstr(s, "/stubs/"))
        return n;
    out[n] = strdup(s);
    return out[n] ? n + 1 : n;
}

/* DIR/lib64/libnvrtc.so*: versioned names (libnvrtc.so.N...) first, newest
 * first as glob sorts them, then the plain libnvrtc.so. */
static int add_globbed(char **out, int n, int cap, const char *dir)
{
    char pattern[PATH_MAX];
    if (!dir || !*dir ||
        snprintf(pattern, sizeof pattern, "%s/lib64/libnvrtc.so*", dir) >= (int)sizeof pattern)
        return n;
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0)
        return n;
    for (size_t i = g.gl_pathc; i-- > 0;)
        if (strstr(g.gl_pathv[i], "libnvrtc.so."))
            n = add_candidate(out, n, cap, g.gl_pathv[i]);
    for (size_t i = 0; i < g.gl_pathc; i++)
        if (!strstr(g.gl_pathv[i], "libnvrtc.so."))
            n = add_candidate(out, n, cap, g.gl_pathv[i]);
    globfree(&g);
    return n;
}

int texi_nvrtc_candidates(const char *cuda_home, int driver_major, char **out, int cap)
{
    int n = 0;
    char soname[32];
    if (driver_major > 0) {
        snprintf(soname, sizeof soname, "libnvrtc.so.%d", driver_major);
        n = add_candidate(out, n, cap, soname);
    }
    n = add_candidate(out, n, cap, "libnvrtc.so.13");
    n = add_candidate(out, n, cap, "libnvrtc.so.12");
    n = add_globbed(out, n, cap, cuda_home);
    return add_globbed(out, n, cap, "/usr/local/cuda");
}

/* Binds every NVRTC symbol of lib into rtc; false when one is missing. */
static bool bind_nvrtc(void *lib)
{
    if (bind_symbols(lib, rtc_symbols, sizeof rtc_symbols / sizeof rtc_symbols[0], &rtc))
        return false;
    if (!bind_symbol(lib, "nvrtcGetNumSupportedArchs", &rtc.nvrtcGetNumSupportedArchs) ||
        !bind_symbol(lib, "nvrtcGetSupportedArchs", &rtc.nvrtcGetSupportedArchs))
        rtc.nvrtcGetNumSupportedArchs = NULL;
    return true;
}

/* Sets rtc_include to "-I<dir>/include" when dir/include/cuda_fp16.h is
 * readable; true then. */
static bool try_include(const char *dir)
{
    char probe[PATH_MAX];
    int n = snprintf(probe, sizeof probe, "%s/include/cuda_fp16.h", dir);
    if (n < 0 || (size_t)n >= sizeof probe || access(probe, R_OK) != 0)
        return false;
    n = snprintf(rtc_include, sizeof rtc_include, "-I%s/include", dir);
    if (n < 0 || (size_t)n >= sizeof rtc_include)
        rtc_include[0] = 0;
    return rtc_include[0] != 0;
}

/* Sets rtc_include to the first include directory holding cuda_fp16.h: next
 * to the loaded library (LIBDIR/../include), $CUDA_HOME/include,
 * /usr/local/cuda/include. */
static void find_include(void *sym)
{
    char lib[PATH_MAX];
    Dl_info info;
    if (dladdr(sym, &info) && info.dli_fname && realpath(info.dli_fname, lib)) {
        char *slash = strrchr(lib, '/');
        if (slash && (size_t)(slash - lib) + 4 < sizeof lib) {
            memcpy(slash, "/..", 4);
            if (try_include(lib))
                return;
        }
    }
    const char *home = getenv("CUDA_HOME");
    if (home && *home && try_include(home))
        return;
    try_include("/usr/local/cuda");
}

/* Tries one candidate; true when it is loaded and bound. */
static bool try_nvrtc(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return false;
    void *create = dlsym(lib, "nvrtcCreateProgram");
    if (!create || is_stub(create) || !bind_nvrtc(lib)) {
        dlclose(lib);
        return false;
    }
    find_include(create);
    return true; /* the handle stays open for the process */
}

static void open_nvrtc(void)
{
    char *cand[MAX_CANDIDATES];
    int n = texi_nvrtc_candidates(getenv("CUDA_HOME"), driver_major(), cand, MAX_CANDIDATES);
    for (int i = 0; i < n && !rtc_ok; i++)
        rtc_ok = try_nvrtc(cand[i]);
    size_t len = (size_t)snprintf(rtc_why, sizeof rtc_why, "NVRTC not found (tried");
    for (int i = 0; i < n; i++) {
        if (len < sizeof rtc_why)
            len += (size_t)snprintf(rtc_why + len, sizeof rtc_why - len, " %s", cand[i]);
        free(cand[i]);
    }
    if (len < sizeof rtc_why)
        snprintf(rtc_why + len, sizeof rtc_why - len, ")");
    if (rtc_ok)
        rtc_why[0] = 0;
}

int texi_nvrtc_available(void)
{
    pthread_once(&rtc_once, open_nvrtc);
    return rtc_ok;
}

const char *texi_nvrtc_why(void)
{
    pthread_once(&rtc_once, open_nvrtc);
    return rtc_why;
}

/* The NN of "sm_NN" (two or three digits), or -1. */
static int arch_number(const char *arch)
{
    size_t len = strlen(arch);
    if (len < 5 || len > 6 || strncmp(arch, "sm_", 3) != 0)
        return -1;
    int v = 0;
    for (size_t i = 3; i < len; i++) {
        if (arch[i] < '0' || arch[i] > '9')
            return -1;
        v = v * 10 + (arch[i] - '0');
    }
    return v;
}

void texi_nvrtc_clamp_arch(char *arch, size_t cap)
{
    int want = arch_number(arch), n = 0, best = -1;
    int archs[128];
    if (want < 0 || !texi_nvrtc_available() || !rtc.nvrtcGetNumSupportedArchs ||
        rtc.nvrtcGetNumSupportedArchs(&n) != 0 || n <= 0 || n > 128 ||
        rtc.nvrtcGetSupportedArchs(archs) != 0)
        return;
    for (int i = 0; i < n; i++)
        if (archs[i] <= want && archs[i] > best)
            best = archs[i];
    if (best > 0)
        snprintf(arch, cap, "sm_%d", best);
}

/* A malloc'ed copy of the printf-style text; NULL when out of memory. */
static char *format_text(const char *fmt, const char *a, const char *b)
{
    size_t len = strlen(fmt) + strlen(a) + strlen(b) + 1;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, fmt, a, b);
    return s;
}

/* NVRTC's log of prog, malloc'ed ("" when empty); NULL when out of memory. */
static char *program_log(void *prog)
{
    size_t size = 0;
    if (rtc.nvrtcGetProgramLogSize(prog, &size) != 0 || size == 0)
        return strdup("");
    char *log = malloc(size + 1);
    if (log && rtc.nvrtcGetProgramLog(prog, log) != 0)
        log[0] = 0;
    if (log)
        log[size] = 0;
    return log;
}

static char *program_ptx(void *prog)
{
    size_t size = 0;
    if (rtc.nvrtcGetPTXSize(prog, &size) != 0 || size == 0)
        return NULL;
    char *ptx = malloc(size + 1);
    if (ptx && rtc.nvrtcGetPTX(prog, ptx) != 0) {
        free(ptx);
        return NULL;
    }
    if (ptx)
        ptx[size] = 0;
    return ptx;
}

/* Runs NVRTC on a created program; 0 with *ptx, or TEX_ECOMPILE / TEX_ENOMEM
 * with the log in *log. */
static int compile_program(void *prog, const char *compute, bool strict_float, char **ptx,
                           char **log)
{
    const char *opts[4] = {compute, "--std=c++17"};
    int n = 2;
    if (strict_float)
        opts[n++] = "--fmad=false";
    if (rtc_include[0])
        opts[n++] = rtc_include;
    int rc = rtc.nvrtcCompileProgram(prog, n, opts);
    char *text = program_log(prog);
    if (rc != 0) {
        if (text && !*text) {
            free(text);
            text = format_text("nvrtcCompileProgram failed: %s%s", rtc.nvrtcGetErrorString(rc), "");
        }
        *log = text;
        return text ? TEX_ECOMPILE : TEX_ENOMEM;
    }
    *log = text;
    *ptx = program_ptx(prog);
    return *ptx ? 0 : TEX_ENOMEM;
}

/* The options' architecture: "--gpu-architecture=compute_NN" for "sm_NN". */
static bool compute_option(const char *arch, char *opt, size_t cap)
{
    int nn = arch_number(arch);
    if (nn < 0)
        return false;
    snprintf(opt, cap, "--gpu-architecture=compute_%d", nn);
    return true;
}

int texi_nvrtc_compile(const char *src, const char *arch, bool strict_float, char **ptx, char **log)
{
    char *p = NULL, *l = NULL, opt[64];
    int rc;
    if (!texi_nvrtc_available()) {
        l = strdup(rtc_why);
        rc = TEX_EUNAVAILABLE;
    } else if (!compute_option(arch, opt, sizeof opt)) {
        l = format_text("bad CUDA architecture '%s'%s (expected sm_NN)", arch, "");
        rc = TEX_EINVAL;
    } else {
        void *prog = NULL;
        int cr = rtc.nvrtcCreateProgram(&prog, src, "tex_kernel.cu", 0, NULL, NULL);
        if (cr != 0) {
            l = format_text("nvrtcCreateProgram failed: %s%s", rtc.nvrtcGetErrorString(cr), "");
            rc = TEX_ECOMPILE;
        } else {
            rc = compile_program(prog, opt, strict_float, &p, &l);
            rtc.nvrtcDestroyProgram(&prog);
        }
    }
    if (ptx)
        *ptx = p;
    else
        free(p);
    if (log)
        *log = l;
    else
        free(l);
    return rc;
}
