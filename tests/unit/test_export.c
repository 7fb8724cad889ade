/*
 * tex_kernel_export (src/runtime/kernel.c): a matmul with a symbolic row
 * count and a parallel, split schedule is exported as PREFIX.c + PREFIX.h;
 * a driver program written here includes the header, is compiled with the
 * exported source by `cc -std=c99 -fopenmp` (no libtex), runs, and checks
 * the product against a naive loop. Also: "c" kernels export, bad prefixes
 * and NULL handles fail with the documented codes. Skips without a compiler.
 */
#include "tt.h"
#include "support/tmpdir.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tex/tex.h"

static char dir[] = "/tmp/tex-test-export-XXXXXX";

static const char *DRIVER =
    "#include <stdint.h>\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include \"mm.h\"\n"
    "int main(void)\n"
    "{\n"
    "    enum { M = 37, N = 24, K = 19 };\n"
    "    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);\n"
    "    float *c = malloc(sizeof(float) * M * N);\n"
    "    for (int i = 0; i < M * K; i++) a[i] = (float)(i % 7) - 3.0f;\n"
    "    for (int i = 0; i < K * N; i++) b[i] = (float)(i % 5) * 0.5f;\n"
    "    if (mm(a, b, c, (int64_t)M) != 0) { puts(\"call failed\"); return 1; }\n"
    "    for (int i = 0; i < M; i++)\n"
    "        for (int j = 0; j < N; j++) {\n"
    "            float s = 0;\n"
    "            for (int k = 0; k < K; k++) s += a[i * K + k] * b[k * N + j];\n"
    "            float d = c[i * N + j] - s;\n"
    "            if (d > 1e-3f || d < -1e-3f) { printf(\"mismatch at %d,%d\\n\", i, j); return 1; "
    "}\n"
    "        }\n"
    "    puts(\"ok\");\n"
    "    free(a); free(b); free(c);\n"
    "    return 0;\n"
    "}\n";

/* mm(A[m, 19], B[19, 24]) -> C[m, 24], rows split by 8 and parallel. */
static tex_func *matmul(tex_ctx *ctx)
{
    tex_expr *m = tex_var(ctx, "m", TEX_I64);
    tex_expr *sa[2] = {m, tex_int(ctx, 19)}, *sc[2] = {m, tex_int(ctx, 24)};
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 2, sa);
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){19, 24});
    tex_iter *i = tex_axis(ctx, "i", sc[0]), *j = tex_axis(ctx, "j", sc[1]);
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_int(ctx, 19));
    tex_expr *body = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(k)), TEX_AT(B, tex_iv(k), tex_iv(j)));
    tex_tensor *C = tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(body, 1, &k));
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *io, *ii;
    if (tex_split(st, i, tex_int(ctx, 8), &io, &ii) != 0 || tex_parallel(st, io) != 0)
        return NULL;
    return tex_lower_tensors(s, "mm", 3, (tex_tensor *[]){A, B, C});
}

static void export_and_run(const char *target)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_func *f = matmul(ctx);
    tex_kernel *k = f ? tex_build(f, target) : NULL;
    if (!k) {
        TT_FAILF("%s: %s", target, tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return;
    }
    tex_ctx_free(ctx);
    char prefix[128], path[160], cmd[1024];
    snprintf(prefix, sizeof prefix, "%s/mm", dir);
    TT_EQ_INT(tex_kernel_export(k, prefix), 0);
    snprintf(path, sizeof path, "%s.h", prefix);
    TT_CHECK(tt_file_has(path, "mm("));
    snprintf(path, sizeof path, "%s.c", prefix);
    TT_CHECK(tt_file_has(path, tex_kernel_source(k)));
    snprintf(path, sizeof path, "%s/driver.c", dir);
    FILE *fp = fopen(path, "w");
    TT_CHECK(fp != NULL);
    if (fp) {
        fputs(DRIVER, fp);
        fclose(fp);
    }
    const char *cc = getenv("TEX_CC");
    snprintf(cmd, sizeof cmd,
             "cd '%s' && %s -std=c99 -O2 -fopenmp -Wall -Wextra -o driver driver.c mm.c -lm "
             "> build.log 2>&1 && ./driver > run.log 2>&1",
             dir, cc && *cc ? cc : "cc");
    int rc = system(cmd);
    TT_EQ_INT(rc, 0);
    if (rc != 0) {
        snprintf(cmd, sizeof cmd, "cat '%s/build.log' '%s/run.log' 2>/dev/null | head -20", dir,
                 dir);
        if (system(cmd) != 0)
            printf("  (no logs)\n");
    }
    snprintf(path, sizeof path, "%s/run.log", dir);
    TT_CHECK(tt_file_has(path, "ok"));
    tex_kernel_free(k);
}

static void test_export_cpu(void)
{
    if (!tex_target_available("cpu"))
        TT_SKIP("no C compiler");
    export_and_run("cpu");
}

static void test_export_c(void)
{
    if (!tex_target_available("cpu"))
        TT_SKIP("no C compiler to build the driver");
    export_and_run("c");
}

static void test_export_errors(void)
{
    TT_EQ_INT(tex_kernel_export(NULL, "x"), TEX_EMISUSE);
    tex_ctx *ctx = tex_ctx_new();
    tex_func *f = matmul(ctx);
    tex_kernel *k = f ? tex_build(f, "c") : NULL;
    TT_CHECK(k != NULL);
    if (k) {
        TT_EQ_INT(tex_kernel_export(k, NULL), TEX_EINVAL);
        TT_EQ_INT(tex_kernel_export(k, "/nonexistent-dir/sub/mm"), TEX_EINVAL);
        TT_CHECK(strstr(tex_kernel_errmsg(k), "cannot write '/nonexistent-dir/sub/mm.c'") != NULL);
    }
    tex_kernel_free(k);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        printf("FAIL setup: cannot create a temporary directory\n");
        return 1;
    }
    char cache[64];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    setenv("TEX_CACHE_DIR", cache, 1);
    TT_RUN(test_export_cpu);
    TT_RUN(test_export_c);
    TT_RUN(test_export_errors);
    tt_remove_tree(dir);
    return tt_finish();
}
