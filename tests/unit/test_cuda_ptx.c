/*
 * The GPU schedules of tests/support/gpu_cases.h:
 *
 *   interp_*  each case at small sizes (every size a non-multiple of its
 *             tiles), with constant and with symbolic sizes, lowers and runs
 *             in the interpreter (texi_interp_run) with the same result as
 *             the oracle (tex_eval_reference). A case whose shared stage is
 *             fetched inside the consumer's thread loops (matmul) needs
 *             barriers first: it runs after the thread_sync pass. vectile's
 *             kernel also runs after the whole GPU tail (vector statements),
 *             and so do the register tiles' (matmul, auto_matmul,
 *             auto_conv2d: loop_unswitch's guard-free copies, which symbolic
 *             sizes must have).
 *   ptx_*     each case at large sizes, constant and symbolic, built for
 *             "cuda -emit-only -arch=sm_80" and "-arch=sm_90"; its PTX (NVRTC
 *             through tex_kernel_ptx when the library gives one, else
 *             nvcc -ptx on the source) assembled by ptxas -v for that
 *             architecture: no kernel spills (0 bytes spill stores and
 *             loads) and each uses at most 48 KiB of static shared memory.
 *             No PTX declares local memory (.local: an array such as a
 *             thread's register tile indexed by values NVRTC cannot fold,
 *             as with tiles of symbolic sizes whose extents were not
 *             constants). The registers of each kernel are printed; vectile's
 *             PTX (constant sizes) has 16-byte (v4.f32) global and shared
 *             loads and stores.
 *             Skipped when ptxas
 *             (or, without NVRTC, nvcc) is absent, and while the emitter
 *             reports the case unsupported (TEX_EUNAVAILABLE, printed).
 *
 * parse_ptxas   the parser of ptxas -v on a canned log (spills, smem, registers).
 *
 * Tools run through fork/execv with an argv (no shell), from
 * /usr/local/cuda/bin (or $CUDA_HOME/bin).
 */
#include "tt.h"

#include "lower/device.h"
#include "interp/interp.h"
#include "support/gpu_cases.h"
#include "support/ptxas.h"

#include <stdlib.h>

/* ------------------------------------------------------------ interpreter */

/* The function the interpreter runs: f, or f after thread_sync when threads
 * read shared data other threads fetched. NULL (a failure) when that fails. */
static const tex_func *interp_func(gc_case *c, tex_func *copy)
{
    if (!c->needs_sync)
        return c->f;
    texi_lower lw = {c->ctx, NULL, c->f, false};
    tex_stmt *body = NULL;
    if (texi_lower_apply(&lw, "thread_sync", texi_pass_thread_sync, c->f->body, &body) != 0) {
        TT_FAILF("%s: thread_sync failed: %s", c->name, tex_errmsg(c->ctx));
        return NULL;
    }
    *copy = *c->f;
    copy->body = body;
    return copy;
}

/* gc_runner: the interpreter on function ud. */
static int interpret(void *ud, int n, const tex_value vals[], char *err, size_t en)
{
    return texi_interp_run(ud, n, vals, err, en);
}

/* One case in the interpreter (after thread_sync where it needs barriers). */
static void interp_check(gc_case *c)
{
    if (!c->f) {
        TT_FAILF("%s (symbolic %d): %s", c->name, c->symbolic, c->why);
        return;
    }
    tex_func copy;
    const tex_func *f = interp_func(c, &copy);
    tex_func run = f ? *f : copy;
    if (f && gc_run_compare(c, "interpreted", interpret, &run, 1) != 0)
        TT_FAILF("%s", c->why);
}

static void interp_case(gc_id id)
{
    gc_each_small(id, interp_check);
}

static bool is_vector_store(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_STORE && s->u.store.index->lanes > 1;
}

/* An IF. */
static bool is_if(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_IF;
}

/* An IF with else whose then-branch updates a local buffer in a loop and
 * has no IF: loop_unswitch's copy of a register tile without guards. */
static bool is_unswitched(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_IF && s->u.ifs.else_s && s->u.ifs.then_s->kind == TEXI_STMT_FOR &&
           !texi_stmt_any(s->u.ifs.then_s, is_if);
}

/* A one-kernel case after the GPU tail (texi_lower_tail: pass simd's vector
 * statements and loop_unswitch's copies included) in the interpreter: the
 * kernel's body as the function's. With constant sizes vectile's kernel
 * must hold vector stores; with symbolic sizes, a GEMM-like kernel a register
 * tile without guards. */
static void tail_check(gc_case *c)
{
    tex_func copy;
    texi_device_module m;
    if (!c->f || texi_lower_tail(c->f, TEXI_TAIL_GPU, false, &copy, &m) != 0 || m.n_kernels != 1 ||
        m.n_workspace != 0) {
        TT_FAILF("%s (symbolic %d): GPU tail: %s", c->name, c->symbolic,
                 c->f ? tex_errmsg(c->ctx) : c->why);
        return;
    }
    copy.body = m.kernels[0].body;
    bool vectile = strcmp(c->name, "vectile") == 0;
    if (vectile && !c->symbolic && !texi_stmt_any(copy.body, is_vector_store))
        TT_FAILF("%s: no vector store in the kernel", c->name);
    if (!vectile && c->symbolic && !texi_stmt_any(copy.body, is_unswitched))
        TT_FAILF("%s (symbolic): no register tile without guards in the kernel", c->name);
    if (gc_run_compare(c, "interpreted kernel", interpret, &copy, 1) != 0)
        TT_FAILF("%s", c->why);
}

static void test_interp_vectile_kernel(void)
{
    gc_each_small(GC_VECTILE, tail_check);
}

/* The register tiles' kernels after the GPU tail: guard-free copies for
 * whole tiles, guarded ones for the tails (every size a non-multiple of the
 * tiles; conv2d's padded reads at the borders), against the oracle. */
static void test_interp_tile_kernels(void)
{
    static const gc_id ids[] = {GC_MATMUL, GC_AUTO_MATMUL, GC_AUTO_CONV2D};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
        gc_each_small(ids[i], tail_check);
}

/* Builds case c for arch, gets its PTX, checks it. A skip reason in skip. */
static void ptx_arch(gc_case *c, const char *arch, const char *dir, const char *ptxas, char *skip,
                     size_t n)
{
    char target[64], what[128], why[8192] = "";
    snprintf(target, sizeof target, "cuda -emit-only -arch=%s", arch);
    snprintf(what, sizeof what, "%s%s %s", c->name, c->symbolic ? " (symbolic)" : "", arch);
    tex_kernel *k = tex_build(c->f, target);
    if (!k) {
        if (tex_errcode(c->ctx) == TEX_EUNAVAILABLE) {
            snprintf(skip, n, "%s: %s", what, tex_errmsg(c->ctx));
            printf("  unsupported: %s\n", skip);
        } else
            TT_FAILF("%s: tex_build: %s", what, tex_errmsg(c->ctx));
        tex_clear_error(c->ctx);
        return;
    }
    bool skipped = false;
    char *ptx = get_ptx(k, arch, dir, why, sizeof why, &skipped);
    /* vectile's aligned tiles: 16-byte global and shared accesses */
    bool wants_v4 = !c->symbolic && strcmp(c->name, "vectile") == 0;
    if (ptx && wants_v4 &&
        !(strstr(ptx, "ld.global.nc.v4.f32") && strstr(ptx, "st.shared.v4.f32") &&
          strstr(ptx, "ld.shared.v4.f32") && strstr(ptx, "st.global.v4.f32")))
        TT_FAILF("%s: no 16-byte global and shared loads and stores in its PTX", what);
    /* register tiles (symbolic sizes included) stay in registers */
    if (ptx && strstr(ptx, ".local"))
        TT_FAILF("%s: local memory (.local) in its PTX", what);
    if (ptx)
        check_ptxas(what, ptx, arch, dir, ptxas);
    else if (skipped)
        snprintf(skip, n, "%s: %.800s", what, why);
    else
        TT_FAILF("%s: %s", what, why);
    free(ptx);
    tex_kernel_free(k);
}

static void ptx_case(gc_id id)
{
    char ptxas[512], skip[1024] = "";
    if (!cuda_bin("ptxas", ptxas, sizeof ptxas))
        TT_SKIP("no ptxas (set CUDA_HOME)");
    char dir[] = "/tmp/tex-ptx-XXXXXX";
    if (!mkdtemp(dir)) {
        TT_FAILF("mkdtemp failed");
        return;
    }
    for (int sym = 0; sym < 2; sym++) {
        tex_ctx *ctx = tex_ctx_new();
        int64_t sizes[GC_MAX_SIZES];
        gc_default_sizes(id, GC_LARGE, sizes);
        gc_case c;
        if (gc_build(ctx, id, sizes, sym, &c) != 0)
            TT_FAILF("%s (symbolic %d): %s", gc_names[id], sym, c.why);
        for (int a = 0; c.f && a < 2; a++)
            ptx_arch(&c, a ? "sm_90" : "sm_80", dir, ptxas, skip, sizeof skip);
        tex_ctx_free(ctx);
    }
    rmdir(dir);
    if (skip[0])
        TT_SKIP("%s", skip);
}

/* The parser on ptxas -v's format (CUDA 12/13). */
static void test_parse_ptxas(void)
{
    const char *log = "ptxas info    : 0 bytes gmem\n"
                      "ptxas info    : Compiling entry function 'k0' for 'sm_80'\n"
                      "ptxas info    : Function properties for k0\n"
                      "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
                      "ptxas info    : Used 255 registers, used 1 barriers, 49280 bytes smem, "
                      "380 bytes cmem[0]\n"
                      "ptxas info    : Compiling entry function 'k1' for 'sm_80'\n"
                      "ptxas info    : Function properties for k1\n"
                      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                      "ptxas info    : Used 12 registers, 368 bytes cmem[0]\n";
    ptx_info k[4];
    TT_EQ_INT(parse_ptxas(log, k, 4), 2);
    TT_EQ_STR(k[0].name, "k0");
    TT_EQ_INT(k[0].regs, 255);
    TT_EQ_INT(k[0].smem, 49280);
    TT_EQ_INT(k[0].spill_st, 8);
    TT_EQ_INT(k[0].spill_ld, 12);
    TT_EQ_STR(k[1].name, "k1");
    TT_EQ_INT(k[1].regs, 12);
    TT_EQ_INT(k[1].smem, 0);
    TT_EQ_INT(k[1].spill_st + k[1].spill_ld, 0);
}

#define CASE_TESTS(ID, NAME)                                                                       \
    static void test_interp_##NAME(void)                                                           \
    {                                                                                              \
        interp_case(ID);                                                                           \
    }                                                                                              \
    static void test_ptx_##NAME(void)                                                              \
    {                                                                                              \
        ptx_case(ID);                                                                              \
    }

CASE_TESTS(GC_MATMUL, matmul)
CASE_TESTS(GC_TRANSPOSE, transpose)
CASE_TESTS(GC_SOFTMAX, softmax)
CASE_TESTS(GC_LAYERNORM, layernorm)
CASE_TESTS(GC_CONV2D, conv2d)
CASE_TESTS(GC_SUM, sum)
CASE_TESTS(GC_VECTILE, vectile)
CASE_TESTS(GC_STENCIL, stencil)
CASE_TESTS(GC_B2B, b2b)
CASE_TESTS(GC_B2B_UNFUSED, b2b_unfused)
CASE_TESTS(GC_AUTO_MATMUL, auto_matmul)
CASE_TESTS(GC_AUTO_SOFTMAX, auto_softmax)
CASE_TESTS(GC_AUTO_LAYERNORM, auto_layernorm)
CASE_TESTS(GC_AUTO_CONV2D, auto_conv2d)

int main(void)
{
    TT_RUN(test_interp_matmul);
    TT_RUN(test_interp_transpose);
    TT_RUN(test_interp_softmax);
    TT_RUN(test_interp_layernorm);
    TT_RUN(test_interp_conv2d);
    TT_RUN(test_interp_sum);
    TT_RUN(test_interp_vectile);
    TT_RUN(test_interp_b2b);
    TT_RUN(test_interp_b2b_unfused);
    TT_RUN(test_interp_vectile_kernel);
    TT_RUN(test_interp_tile_kernels);
    TT_RUN(test_interp_stencil);
    TT_RUN(test_interp_auto_matmul);
    TT_RUN(test_interp_auto_softmax);
    TT_RUN(test_interp_auto_layernorm);
    TT_RUN(test_interp_auto_conv2d);
    TT_RUN(test_parse_ptxas);
    TT_RUN(test_ptx_matmul);
    TT_RUN(test_ptx_transpose);
    TT_RUN(test_ptx_softmax);
    TT_RUN(test_ptx_layernorm);
    TT_RUN(test_ptx_conv2d);
    TT_RUN(test_ptx_sum);
    TT_RUN(test_ptx_vectile);
    TT_RUN(test_ptx_stencil);
    TT_RUN(test_ptx_b2b);
    TT_RUN(test_ptx_b2b_unfused);
    TT_RUN(test_ptx_auto_matmul);
    TT_RUN(test_ptx_auto_softmax);
    TT_RUN(test_ptx_auto_layernorm);
    TT_RUN(test_ptx_auto_conv2d);
    return tt_finish();
}
