/*
 * Tensor-core GEMM through the CUDA built-in intrinsics
 * ("cuda.wmma_m16n16k16_f16f32" / "_bf16f32"), in the style of TVM's
 * TensorCore tutorial, with the public API only:
 *     C[i,j] = sum_k f32(A[i,k]) * f32(B[k,j]),  A, B f16 (bf16), C f32.
 *
 * The recipe (one warp per block, its 32 lanes on threadIdx.x):
 *  - CS = cache_write(C, shared): the 16x16 accumulator tile of the warp;
 *    AS, BS = cache_read(A / B, shared, {CS}).
 *  - C: tile (i, j) by 16 x 16, io -> blockIdx.y, jo -> blockIdx.x; the
 *    copy-out (ii, ji) fused and split by 32, the inner part on threadIdx.x.
 *  - CS computed at C's jo; its (i, j, k) split by 16 and reordered (ko, ii,
 *    ji, ki); tensorized at ii. CS binds no thread: in the emitted kernel it
 *    runs outside every threadIdx.x loop, so all 32 lanes of the warp make
 *    the same wmma call with the same tile arguments (what wmma requires).
 *  - AS, BS computed at CS's ko: the 16x16 tile fused and split by 32, the
 *    inner part on threadIdx.x (cooperative fetching).
 * Tiles cut by a non-divisible size take the fallback loop nest (the IF the
 * tensorize lowering emits), which is also run by all 32 lanes: each lane
 * does the same read-modify-write of the shared accumulator, a benign race
 * only while the warp stays converged. The tail case is therefore built and
 * compiled but not run in the emulation harness (one host thread per lane,
 * not in lock-step), where that race is real.
 * No barrier is written here: the shared tiles need __syncwarp /
 * __syncthreads between the cooperative loads and the wmma calls, which the
 * thread_sync pass inserts (the emulated wmma calls meet at warp barriers).
 *
 * Back-to-back GEMM on tensor cores (test_b2b): D0 = f16(relu(alpha0 A0 B0)),
 * D1 = relu(alpha1 D0 B1 + beta1 C1), f16 inputs, f32 accumulation, the
 * scalars given at call time; one warp per 16 rows of D1, both GEMMs'
 * accumulator tiles and D0 in shared memory at the block (never in global
 * memory), both tensorized; checked like the GEMM above. Register-resident
 * (test_b2b_regs, D0 = f16(relu(A0 B0))): P0 and D0 are local fragment
 * tiles of the mma.sync built-ins (src/schedule/intrin_cuda_frag.c), so D0
 * goes from the first GEMM's accumulators to the second GEMM's A operand
 * without leaving registers; ptxas must also report no local memory (0
 * bytes stack frame); the same lowered function also runs on the CPU
 * ("cpu": gpu_to_cpu, the built-ins' host C) against the oracle. tex_lower
 * refuses a scaled D0 (the epilogue built-in is relu only) and a fragment
 * tile in shared memory.
 *
 * Checks: "cuda -emit-only -arch=sm_80 / sm_90" build; the source compiles
 * with nvcc -cubin for each arch (ptxas -v: no spills) and its SASS (cuobjdump -sass; make deps
 * fetches cuobjdump when the toolkit lacks it) contains HMMA (PTX "mma"
 * when cuobjdump is missing; skipped without nvcc); the
 * emulation harness (tests/support/cuda_emu.h) runs the kernel and matches
 * the oracle; a nest that does not match (f32 inputs) gives TEX_EINVAL; an
 * unknown built-in name gives NULL + TEX_EINVAL.
 */
#include "tt.h"
#include "support/b2b_tc.h"
#include "support/cuda_emu.h"

#include "util/half.h"

#include <math.h>

#define NVCC "/usr/local/cuda/bin/nvcc"

/* The toolkit's cuobjdump, else the one make deps fetched with its
 * nvdisasm (tools/deps.sh; NVDISASM_PATH tells cuobjdump where that is);
 * NULL when neither is there. */
static const char *cuobjdump_path(void)
{
    static char dir[PATH_MAX], fetched[PATH_MAX + 16];
    if (access("/usr/local/cuda/bin/cuobjdump", X_OK) == 0 &&
        access("/usr/local/cuda/bin/nvdisasm", X_OK) == 0)
        return "/usr/local/cuda/bin/cuobjdump";
    if (access("build/tools/cuobjdump", X_OK) != 0 || access("build/tools/nvdisasm", X_OK) != 0 ||
        !realpath("build/tools", dir) || setenv("NVDISASM_PATH", dir, 1) != 0)
        return NULL;
    snprintf(fetched, sizeof fetched, "%s/cuobjdump", dir);
    return fetched;
}

static tex_ctx *ctx;

static tex_expr *I(int64_t v)
{
    return tex_int(ctx, v);
}

typedef struct {
    tex_tensor *A, *B, *C;
    tex_func *f;
} gemm;

static tex_tensor *gemm_compute(tex_dtype in, int64_t m, int64_t n, int64_t k, tex_tensor **A,
                                tex_tensor **B)
{
    *A = tex_placeholder_c(ctx, "A", in, 2, (int64_t[]){m, k});
    *B = tex_placeholder_c(ctx, "B", in, 2, (int64_t[]){k, n});
    tex_iter *i = tex_axis(ctx, "i", I(m)), *j = tex_axis(ctx, "j", I(n));
    tex_iter *r = tex_reduce_axis(ctx, "k", I(k));
    tex_expr *a = TEX_AT(*A, tex_iv(i), tex_iv(r)), *b = TEX_AT(*B, tex_iv(r), tex_iv(j));
    if (in != TEX_F32) {
        a = tex_cast(TEX_F32, a);
        b = tex_cast(TEX_F32, b);
    }
    return tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(tex_mul(a, b), 1, &r));
}

/* The 16x16 tile of cache stage st (computed inside): fused, split by 32,
 * the inner part on threadIdx.x. */
static void coop_fetch(tex_stage *st)
{
    tex_iter *fu, *o, *l;
    TT_EQ_INT(tex_fuse(st, tex_op_axis(st, 0), tex_op_axis(st, 1), &fu), 0);
    TT_EQ_INT(tex_split(st, fu, I(32), &o, &l), 0);
    TT_EQ_INT(tex_bind(st, l, TEX_THREAD_X), 0);
}

/* The recipe of the header comment with `warps` warps per block along i
 * (threadIdx.y); returns tex_tensorize's result. */
static int schedule_gemm(tex_schedule *s, gemm *g, tex_intrin *in, int warps)
{
    tex_tensor *CS = tex_cache_write(s, g->C, TEX_SCOPE_SHARED);
    tex_tensor *AS = tex_cache_read(s, g->A, TEX_SCOPE_SHARED, 1, &CS);
    tex_tensor *BS = tex_cache_read(s, g->B, TEX_SCOPE_SHARED, 1, &CS);
    TT_CHECK(CS && AS && BS);
    tex_stage *c = tex_stage_of(s, g->C), *cs = tex_stage_of(s, CS);
    tex_iter *io, *jo, *ii, *ji, *fu, *o, *l, *w, *r;
    TT_EQ_INT(
        tex_tile(c, tex_op_axis(c, 0), tex_op_axis(c, 1), I(16 * warps), I(16), &io, &jo, &ii, &ji),
        0);
    TT_EQ_INT(tex_bind(c, io, TEX_BLOCK_Y), 0);
    TT_EQ_INT(tex_bind(c, jo, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_fuse(c, ii, ji, &fu), 0);
    TT_EQ_INT(tex_split(c, fu, I(32), &o, &l), 0);
    TT_EQ_INT(tex_bind(c, l, TEX_THREAD_X), 0);
    TT_EQ_INT(tex_split(c, o, I(8), &w, &r), 0);
    TT_EQ_INT(tex_bind(c, w, TEX_THREAD_Y), 0);
    TT_EQ_INT(tex_compute_at(cs, c, jo), 0);
    tex_iter *cio, *cjo, *cii, *cji, *ko, *ki;
    TT_EQ_INT(
        tex_tile(cs, tex_op_axis(cs, 0), tex_op_axis(cs, 1), I(16), I(16), &cio, &cjo, &cii, &cji),
        0);
    TT_EQ_INT(tex_split(cs, tex_op_reduce_axis(cs, 0), I(16), &ko, &ki), 0);
    TT_EQ_INT(tex_reorder(cs, 6, (tex_iter *[]){cio, cjo, ko, cii, cji, ki}), 0);
    TT_EQ_INT(tex_bind(cs, cio, TEX_THREAD_Y), 0);
    tex_stage *as = tex_stage_of(s, AS), *bs = tex_stage_of(s, BS);
    TT_EQ_INT(tex_compute_at(as, cs, ko), 0);
    TT_EQ_INT(tex_compute_at(bs, cs, ko), 0);
    coop_fetch(as);
    coop_fetch(bs);
    return tex_tensorize(cs, cii, in);
}

static bool build_gemm(gemm *g, tex_dtype in, const char *intrin, int64_t m, int64_t n, int64_t k,
                       int warps)
{
    g->C = gemm_compute(in, m, n, k, &g->A, &g->B);
    tex_intrin *ti = tex_intrin_builtin(ctx, intrin);
    tex_schedule *s = tex_schedule_new(ctx, 1, &g->C);
    TT_CHECK(ti && s);
    if (!ti || !s || schedule_gemm(s, g, ti, warps) != 0) {
        TT_FAILF("%s: schedule: %s", intrin, tex_errmsg(ctx));
        return false;
    }
    g->f = tex_lower_tensors(s, "tc_gemm", 3, (tex_tensor *[]){g->A, g->B, g->C});
    if (!g->f)
        TT_FAILF("%s %lldx%lldx%lld: lower: %s", intrin, (long long)m, (long long)n, (long long)k,
                 tex_errmsg(ctx));
    return g->f != NULL;
}

/* Runs argv (no shell), output to log; true on exit status 0. */
static bool spawn(char *const argv[], const char *log)
{
    return tt_spawn(argv, log) == 0;
}

/* Every kernel in ptxas -v's log at path spills nothing; with registers,
 * it uses no local memory at all (0 bytes stack frame: every per-thread
 * buffer lives in registers). */
static void check_no_spills(const char *path, const char *arch, bool registers)
{
    char *l = cuda_emu_slurp(path);
    TT_CHECK(l && strstr(l, "spill stores"));
    for (const char *p = l; registers && p && (p = strstr(p, "bytes stack frame")); p++)
        if (strncmp(p - 3, " 0 ", 3) != 0)
            TT_FAILF("%s: ptxas reports a stack frame (local memory): %.40s", arch, p - 6);
    for (const char *p = l; p && (p = strstr(p, "bytes spill stores")); p++)
        if (strncmp(p - 2, "0 bytes spill stores, 0 bytes spill loads", 41) != 0)
            TT_FAILF("%s: ptxas reports spills: %.60s", arch, p - 2);
    free(l);
}

/* nvcc -cubin (ptxas -v: no spills; with registers, no local memory) for
 * arch, then cuobjdump -sass must show HMMA (or, without cuobjdump, the PTX
 * must hold an mma instruction). */
static void check_sass(const char *src, const char *arch, bool registers)
{
    if (access(NVCC, X_OK) != 0) {
        printf("  (skip: no %s)\n", NVCC);
        return;
    }
    char dir[] = "/tmp/tex_tc_XXXXXX";
    TT_CHECK(mkdtemp(dir) != NULL);
    char cu[PATH_MAX], cubin[PATH_MAX], ptx[PATH_MAX], log[PATH_MAX], archopt[64];
    snprintf(cu, sizeof cu, "%s/k.cu", dir);
    snprintf(cubin, sizeof cubin, "%s/k.cubin", dir);
    snprintf(ptx, sizeof ptx, "%s/k.ptx", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    TT_CHECK(cuda_emu_write(cu, src));
    char nvcc[] = NVCC, cuobjdump[PATH_MAX + 16], o_cubin[] = "-cubin", o_o[] = "-o";
    const char *dump_tool = cuobjdump_path();
    snprintf(cuobjdump, sizeof cuobjdump, "%s", dump_tool ? dump_tool : "");
    char o_sass[] = "-sass", o_ptx[] = "-ptx";
    char o_verbose[] = "-Xptxas=-v";
    char *cc[] = {nvcc, archopt, o_verbose, o_cubin, o_o, cubin, cu, NULL};
    bool failed = !spawn(cc, log);
    if (failed) {
        char *l = cuda_emu_slurp(log);
        TT_FAILF("nvcc -cubin %s failed:\n%s", arch, l ? l : "");
        free(l);
    } else {
        check_no_spills(log, arch, registers);
    }
    if (!failed && dump_tool) {
        char *dump[] = {cuobjdump, o_sass, cubin, NULL};
        TT_CHECK(spawn(dump, log));
        char *l = cuda_emu_slurp(log);
        TT_CHECK(l && strstr(l, "HMMA"));
        free(l);
    } else if (!failed) {
        char *cp[] = {nvcc, archopt, o_ptx, o_o, ptx, cu, NULL};
        TT_CHECK(spawn(cp, log));
        char *l = cuda_emu_slurp(ptx);
        TT_CHECK(l && strstr(l, "mma.sync"));
        free(l);
        printf("  (no cuobjdump: checked the PTX for mma.sync on %s)\n", arch);
    }
    const char *files[] = {cu, cubin, ptx, log};
    for (int i = 0; i < 4; i++)
        unlink(files[i]);
    rmdir(dir);
}

static uint64_t next_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static DLTensor host_array(void *data, tex_dtype t, int64_t *shape)
{
    DLTensor d = {0};
    d.data = data;
    d.device.device_type = kDLCPU;
    d.ndim = 2;
    d.dtype.code = t == TEX_F32 ? kDLFloat : t == TEX_F16 ? kDLFloat : kDLBfloat;
    d.dtype.bits = t == TEX_F32 ? 32 : 16;
    d.dtype.lanes = 1;
    d.shape = shape;
    return d;
}

/* Runs k in the emulation harness and compares with the oracle. */
static void check_emu(const gemm *g, const tex_kernel *k, tex_dtype in, int64_t m, int64_t n,
                      int64_t kk)
{
    char err[4096];
    cuda_emu *e = cuda_emu_build(tex_kernel_source(k), err, sizeof err);
    if (!e) {
        TT_FAILF("emulation build: %s", err);
        return;
    }
    uint16_t *a = malloc((size_t)(m * kk) * 2), *b = malloc((size_t)(kk * n) * 2);
    float *c = malloc((size_t)(m * n) * 4), *ref = malloc((size_t)(m * n) * 4);
    uint64_t st = 7;
    for (int64_t i = 0; i < m * kk + kk * n; i++) {
        float v = (float)((int64_t)(next_rand(&st) % 17) - 8) / 8.0f;
        uint16_t h = in == TEX_F16 ? texi_f16_from_f32(v) : texi_bf16_from_f32(v);
        if (i < m * kk)
            a[i] = h;
        else
            b[i - m * kk] = h;
    }
    int64_t sa[2] = {m, kk}, sb[2] = {kk, n}, sc[2] = {m, n};
    DLTensor da = host_array(a, in, sa), db = host_array(b, in, sb),
             dc = host_array(c, TEX_F32, sc), dr = host_array(ref, TEX_F32, sc);
    TT_EQ_INT(tex_eval_reference(ctx, 3, (tex_tensor *[]){g->A, g->B, g->C},
                                 (DLTensor *[]){&da, &db, &dr}),
              0);
    tex_value args[3] = {{.kind = TEX_VAL_TENSOR, .t = &da},
                         {.kind = TEX_VAL_TENSOR, .t = &db},
                         {.kind = TEX_VAL_TENSOR, .t = &dc}};
    if (cuda_emu_run(e, k, 3, args, err, sizeof err) != 0) {
        TT_FAILF("emulation run: %s", err);
    } else {
        double worst = 0;
        for (int64_t i = 0; i < m * n; i++)
            worst = fmax(worst, fabs((double)c[i] - ref[i]) / (1.0 + fabs(ref[i])));
        TT_CHECK(worst < 1e-3);
    }
    free(a);
    free(b);
    free(c);
    free(ref);
    cuda_emu_free(e);
}

/* emulate: also run the emulation harness (not with tails: see the header
 * comment). */
static void tc_case(tex_dtype in, const char *intrin, int64_t m, int64_t n, int64_t k, int warps,
                    bool emulate)
{
    printf("  %s %lldx%lldx%lld, %d warp(s)\n", intrin, (long long)m, (long long)n, (long long)k,
           warps);
    gemm g;
    if (!build_gemm(&g, in, intrin, m, n, k, warps))
        return;
    char *txt = tex_func_str(g.f);
    TT_CHECK(txt && strstr(txt, "intrin "));
    free(txt);
    const char *archs[] = {"sm_80", "sm_90"};
    for (int i = 0; i < 2; i++) {
        char target[64];
        snprintf(target, sizeof target, "cuda -emit-only -arch=%s", archs[i]);
        tex_kernel *kr = tex_build(g.f, target);
        if (!kr) {
            TT_FAILF("%s: tex_build(%s): %s", intrin, target, tex_errmsg(ctx));
            continue;
        }
        const char *src = tex_kernel_source(kr);
        TT_CHECK(src && strstr(src, "nvcuda::wmma::mma_sync"));
        if (getenv("TEX_TC_DUMP")) /* debugging: the generated source */
            printf("%s\n", src ? src : "");
        check_sass(src, archs[i], false);
        if (i == 0 && emulate)
            check_emu(&g, kr, in, m, n, k);
        tex_kernel_free(kr);
    }
}

static void test_f16(void)
{
    tc_case(TEX_F16, "cuda.wmma_m16n16k16_f16f32", 64, 48, 32, 1, true);
    tc_case(TEX_F16, "cuda.wmma_m16n16k16_f16f32", 64, 48, 32, 2, true);
}

static void test_bf16(void)
{
    tc_case(TEX_BF16, "cuda.wmma_m16n16k16_bf16f32", 32, 32, 48, 2, true);
}

static void test_tails(void)
{
    tc_case(TEX_F16, "cuda.wmma_m16n16k16_f16f32", 40, 24, 36, 2, false);
}

/* f32 inputs do not match the f16 description: TEX_EINVAL from tex_lower. */
static void test_mismatch(void)
{
    gemm g;
    g.C = gemm_compute(TEX_F32, 32, 32, 32, &g.A, &g.B);
    tex_intrin *ti = tex_intrin_builtin(ctx, "cuda.wmma_m16n16k16_f16f32");
    tex_schedule *s = tex_schedule_new(ctx, 1, &g.C);
    TT_CHECK(ti && s);
    int rc = schedule_gemm(s, &g, ti, 1);
    tex_func *f = rc ? NULL : tex_lower_tensors(s, "bad", 3, (tex_tensor *[]){g.A, g.B, g.C});
    TT_CHECK(f == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    tex_clear_error(ctx);
}

static void test_names(void)
{
    TT_CHECK(tex_intrin_builtin(ctx, "cuda.wmma_m16n16k16_f32f32") == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "cuda.wmma_m16n16k16_f32f32") != NULL);
    tex_clear_error(ctx);
    tex_intrin *a = tex_intrin_builtin(ctx, "cuda.wmma_m16n16k16_f16f32");
    tex_intrin *b = tex_intrin_builtin(ctx, "cuda.wmma_m16n16k16_bf16f32");
    TT_CHECK(a && b && strstr(a->c_source, "#include <mma.h>") &&
             strstr(b->c_source, "__nv_bfloat16") && a->fn[TEXI_INTRIN_RESET] &&
             a->fn[TEXI_INTRIN_UPDATE] && a->fn[TEXI_INTRIN_BODY]);
    tex_intrin *f = tex_intrin_builtin(ctx, "cuda.mma_m16n16k16_f16f32_frag");
    tex_intrin *r = tex_intrin_builtin(ctx, "cuda.mma_frag_relu_f16");
    tex_intrin *af = tex_intrin_builtin(ctx, "cuda.mma_m16n16k16_f16f32_afrag");
    TT_CHECK(f && r && af && strstr(f->c_source, "mma.sync.aligned.m16n8k16") &&
             f->fn[TEXI_INTRIN_RESET] && !f->fn[TEXI_INTRIN_BODY] && r->fn[TEXI_INTRIN_BODY] &&
             !r->fn[TEXI_INTRIN_UPDATE] && af->fn[TEXI_INTRIN_UPDATE] && !af->fn[TEXI_INTRIN_BODY]);
}

/* ---------------------------------------------------------- back-to-back GEMM */

/* D0 = f16(relu(alpha0 * A0 . B0)) (scaled; else D0 = f16(relu(A0 . B0))),
 * D1 = relu(alpha1 * D0 . B1 + beta1 * C1) with f16 A0, B0, B1, f32
 * accumulation, f32 C1 and D1, alpha/beta runtime scalars; t = {A0, B0, B1,
 * C1, P0, D0, P1, D1}, v = {alpha0, alpha1, beta1} (alpha0 unused unless
 * scaled). */
static void b2b_compute(int64_t m, int64_t k0, int64_t n0, int64_t n1, bool scaled,
                        tex_tensor *t[8], tex_expr *v[3])
{
    t[0] = tex_placeholder_c(ctx, "A0", TEX_F16, 2, (int64_t[]){m, k0});
    t[1] = tex_placeholder_c(ctx, "B0", TEX_F16, 2, (int64_t[]){k0, n0});
    t[2] = tex_placeholder_c(ctx, "B1", TEX_F16, 2, (int64_t[]){n0, n1});
    t[3] = tex_placeholder_c(ctx, "C1", TEX_F32, 2, (int64_t[]){m, n1});
    v[0] = tex_var(ctx, "alpha0", TEX_F32);
    v[1] = tex_var(ctx, "alpha1", TEX_F32);
    v[2] = tex_var(ctx, "beta1", TEX_F32);
    tex_expr *zero = tex_const(ctx, TEX_F32, 0);
    for (int g = 0; g < 2; g++) {
        tex_tensor *a = g ? t[5] : t[0], *b = t[1 + g];
        int64_t n = g ? n1 : n0, k = g ? n0 : k0;
        tex_iter *i = tex_axis(ctx, "i", I(m)), *j = tex_axis(ctx, "j", I(n));
        tex_iter *r = tex_reduce_axis(ctx, "k", I(k));
        tex_expr *prod = tex_mul(tex_cast(TEX_F32, TEX_AT(a, tex_iv(i), tex_iv(r))),
                                 tex_cast(TEX_F32, TEX_AT(b, tex_iv(r), tex_iv(j))));
        t[4 + 2 * g] =
            tex_compute(ctx, g ? "P1" : "P0", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, &r));
        i = tex_axis(ctx, "i", I(m)), j = tex_axis(ctx, "j", I(n));
        tex_expr *e = TEX_AT(t[4 + 2 * g], tex_iv(i), tex_iv(j));
        if (g || scaled)
            e = tex_mul(v[g], e);
        if (g)
            e = tex_add(e, tex_mul(v[2], TEX_AT(t[3], tex_iv(i), tex_iv(j))));
        e = tex_max(e, zero);
        t[5 + 2 * g] = tex_compute(ctx, g ? "D1" : "D0", 2, (tex_iter *[]){i, j},
                                   g ? e : tex_cast(TEX_F16, e));
    }
}

/* The largest |got - want| / (1 + |want|) over n values; NaN when got holds
 * one (an unwritten output). */
static double worst_rel(const float *got, const float *want, int n)
{
    double worst = 0;
    for (int x = 0; x < n; x++) {
        double d = fabs((double)got[x] - want[x]) / (1.0 + fabs(want[x]));
        worst = d <= worst ? worst : d; /* a NaN stays */
    }
    return worst;
}

/* Fills n f16 values, multiples of 1/8 in [-1, 1]. */
static void fill_f16(uint16_t *x, int64_t n, uint64_t *st)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = texi_f16_from_f32((float)((int64_t)(next_rand(st) % 17) - 8) / 8.0f);
}

/* A tensor-core back-to-back GEMM (b2b_compute, scaled or not, scheduled by
 * sched): emitted for sm_80 and sm_90 (nvcc: HMMA, no spills, with
 * registers no local memory either; the source must contain `needle`), run
 * by the emulation harness against the oracle. */
static void b2b_check(int (*sched)(tex_ctx *, tex_schedule *, tex_tensor *const[8]), bool scaled,
                      const char *needle, bool registers)
{
    enum { M = 32, K0 = 48, N0 = 32, N1 = 48 };
    tex_tensor *t[8];
    tex_expr *v[3];
    b2b_compute(M, K0, N0, N1, scaled, t, v);
    tex_schedule *s = tex_schedule_new(ctx, 1, &t[7]);
    TT_EQ_INT(s ? sched(ctx, s, t) : -1, 0);
    tex_param p[8];
    int np = 0;
    for (int i = 0; i < 8; i++)
        if (i < 5)
            p[np++] = (tex_param){.kind = TEX_ARG_TENSOR, .t = t[i < 4 ? i : 7]};
        else if (i > 5 || scaled)
            p[np++] = (tex_param){.kind = TEX_ARG_VAR, .v = v[i - 5]};
    tex_func *f = tex_lower(s, "b2b_tc", np, p);
    if (!f) {
        TT_FAILF("lower: %s", tex_errmsg(ctx));
        return;
    }
    uint16_t *a0 = malloc(M * K0 * 2), *b0 = malloc(K0 * N0 * 2), *b1 = malloc(N0 * N1 * 2);
    float *c1 = malloc(M * N1 * 4), *d1 = malloc(M * N1 * 4), *ref = malloc(M * N1 * 4);
    uint64_t st = 11;
    fill_f16(a0, M * K0, &st), fill_f16(b0, K0 * N0, &st), fill_f16(b1, N0 * N1, &st);
    for (int i = 0; i < M * N1; i++)
        c1[i] = (float)((int64_t)(next_rand(&st) % 17) - 8) / 4.0f, d1[i] = NAN;
    int64_t sa0[2] = {M, K0}, sb0[2] = {K0, N0}, sb1[2] = {N0, N1}, sc[2] = {M, N1};
    DLTensor da0 = host_array(a0, TEX_F16, sa0), db0 = host_array(b0, TEX_F16, sb0);
    DLTensor db1 = host_array(b1, TEX_F16, sb1), dc1 = host_array(c1, TEX_F32, sc);
    DLTensor dd1 = host_array(d1, TEX_F32, sc), dref = host_array(ref, TEX_F32, sc);
    tex_value vals[8] = {{.kind = TEX_VAL_TENSOR, .t = &da0},  {.kind = TEX_VAL_TENSOR, .t = &db0},
                         {.kind = TEX_VAL_TENSOR, .t = &db1},  {.kind = TEX_VAL_TENSOR, .t = &dc1},
                         {.kind = TEX_VAL_TENSOR, .t = &dref}, {.kind = TEX_VAL_F64, .f = 0.5},
                         {.kind = TEX_VAL_F64, .f = 0.75},     {.kind = TEX_VAL_F64, .f = -0.5}};
    if (!scaled)
        memmove(&vals[5], &vals[6], 2 * sizeof vals[0]);
    TT_EQ_INT(tex_eval_reference_ex(ctx, np, p, vals), 0);
    vals[4].t = &dd1;
    const char *archs[] = {"sm_80", "sm_90"};
    for (int i = 0; i < 2; i++) {
        char target[64];
        snprintf(target, sizeof target, "cuda -emit-only -arch=%s", archs[i]);
        tex_kernel *k = tex_build(f, target);
        const char *src = k ? tex_kernel_source(k) : NULL;
        TT_CHECK(src && strstr(src, needle));
        if (src && getenv("TEX_TC_DUMP")) /* debugging: the generated source */
            printf("%s\n", src);
        if (!src) {
            TT_FAILF("tex_build(%s): %s", target, tex_errmsg(ctx));
            continue;
        }
        check_sass(src, archs[i], registers);
        const char *ptx = tex_kernel_ptx(k); /* NVRTC's, when the library has it */
        if (ptx)
            TT_CHECK(strstr(ptx, "mma.sync.aligned") != NULL);
        printf("  %s: NVRTC PTX %s\n", archs[i], ptx ? "checked" : "not available");
        char err[4096];
        cuda_emu *e = i == 0 ? cuda_emu_build(src, err, sizeof err) : NULL;
        if (i == 0 && !e)
            TT_FAILF("emulation build: %s", err);
        if (e && cuda_emu_run(e, k, np, vals, err, sizeof err) != 0)
            TT_FAILF("emulation run: %s", err);
        TT_CHECK(!e || worst_rel(d1, ref, M * N1) < 1e-3);
        cuda_emu_free(e);
        tex_kernel_free(k);
    }
    if (registers) { /* the same function on the CPU (gpu_to_cpu, host_source) */
        tex_kernel *k = tex_build(f, "cpu");
        for (int x = 0; x < M * N1; x++)
            d1[x] = NAN;
        if (!k || tex_kernel_call(k, np, vals) != 0) {
            TT_FAILF("cpu: %s", k ? tex_kernel_errmsg(k) : tex_errmsg(ctx));
            tex_clear_error(ctx);
        } else
            TT_CHECK(worst_rel(d1, ref, M * N1) < 1e-3);
        tex_kernel_free(k);
    }
    free(a0), free(b0), free(b1), free(c1), free(d1), free(ref);
}

/* Block-resident: both GEMMs on the wmma built-in, D0 in shared memory. */
static void test_b2b(void)
{
    b2b_check(b2b_tc_schedule, true, "nvcuda::wmma::mma_sync", false);
}

/* Register-resident: D0 never leaves registers (the mma.sync built-ins). */
static void test_b2b_regs(void)
{
    b2b_check(b2b_regs_schedule, false, "mma.sync.aligned.m16n8k16", true);
}

/* What tex_lower refuses of the register-resident schedule: a scaled D0
 * (alpha0 * P0: the epilogue built-in is relu only), and a fragment tile in
 * shared memory (P0 there: the lanes would share it). */
static void test_b2b_regs_refused(void)
{
    for (int shared = 0; shared < 2; shared++) {
        tex_tensor *t[8];
        tex_expr *v[3];
        b2b_compute(32, 32, 32, 32, !shared, t, v);
        tex_schedule *s = tex_schedule_new(ctx, 1, &t[7]);
        TT_EQ_INT(s ? b2b_regs_schedule(ctx, s, t) : -1, 0);
        if (shared)
            TT_EQ_INT(tex_set_scope(tex_stage_of(s, t[4]), TEX_SCOPE_SHARED), 0);
        tex_param p[8];
        int np = 0;
        for (int i = 0; i < 8; i++)
            if (i < 5)
                p[np++] = (tex_param){.kind = TEX_ARG_TENSOR, .t = t[i < 4 ? i : 7]};
            else if (i > 5 || !shared)
                p[np++] = (tex_param){.kind = TEX_ARG_VAR, .v = v[i - 5]};
        TT_CHECK(tex_lower(s, "b2b_tc", np, p) == NULL);
        TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
        const char *want = shared ? "tensor 'P0' must be computed in scope local"
                                  : "intrinsic 'cuda.mma_frag_relu_f16'";
        if (!strstr(tex_errmsg(ctx), want))
            TT_FAILF("expected \"%s\" in: %s", want, tex_errmsg(ctx));
        tex_clear_error(ctx);
    }
}

int main(void)
{
    ctx = tex_ctx_new();
    TT_RUN(test_names);
    TT_RUN(test_mismatch);
    TT_RUN(test_f16);
    TT_RUN(test_bf16);
    TT_RUN(test_tails);
    if (cuda_emu_have_cxx())
        TT_RUN(test_b2b);
    if (cuda_emu_have_cxx())
        TT_RUN(test_b2b_regs);
    TT_RUN(test_b2b_regs_refused);
    tex_ctx_free(ctx);
    return tt_finish();
}
