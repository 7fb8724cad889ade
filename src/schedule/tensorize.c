/*
 * Tensor intrinsics and the tensorize primitive: tex_intrin_extern,
 * tex_intrin_builtin (dispatching to the CPU and CUDA tables of
 * intrin_cpu.c / intrin_cuda.c), texi_intrin_make (the one constructor both
 * use) and tex_tensorize.
 *
 * An intrinsic is a description compute (desc) plus the names of up to three
 * functions (docs/api.md, rule 10): body (the whole computation), or reset and
 * update (a reduction split across calls). Validation here is about the
 * intrinsic alone: desc is a compute of the context, the names are C
 * identifiers, the needed functions are present. Whether a loop nest matches
 * desc is decided when lowering (src/lower/tensorize_match.c), because the
 * nest's extents are only known after bound inference.
 *
 * tex_tensorize records (iv, intrin) on the stage, following the primitive
 * protocol of primitive.h: validate everything, then mutate. A stage is
 * tensorized at most once; repeating the same request is a no-op.
 */
#include "schedule/intrin.h"
#include "schedule/primitive.h"
#include "schedule/trace.h"

#include <string.h>

static bool is_c_identifier(const char *s)
{
    if (!s || !*s)
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(p != s && c >= '0' && c <= '9'))
            return false;
    }
    return true;
}

/* desc is a compute tensor of ctx. */
static int check_desc(tex_ctx *ctx, const char *call, const tex_tensor *desc)
{
    if (!desc) {
        texi_error_null_operand(ctx, call, "desc");
        return TEX_EMISUSE;
    }
    if (desc->ctx != ctx)
        return texi_error(ctx, TEX_EMISUSE, "%s: desc tensor '%s' comes from another context", call,
                          desc->name);
    if (!desc->op || desc->op->kind != TEXI_OP_COMPUTE)
        return texi_error(
            ctx, TEX_EINVAL,
            "%s: desc tensor '%s' is a placeholder; the description must be a compute", call,
            desc->name);
    return 0;
}

/* The function names: valid identifiers, and body or (reset and update). */
static int check_fns(tex_ctx *ctx, const char *call, const tex_tensor *desc,
                     const char *const fn[TEXI_INTRIN_FN_COUNT])
{
    static const char *const arg[TEXI_INTRIN_FN_COUNT] = {"body_fn", "reset_fn", "update_fn"};
    for (int f = 0; f < TEXI_INTRIN_FN_COUNT; f++)
        if (fn[f] && !is_c_identifier(fn[f]))
            return texi_error(ctx, TEX_EINVAL, "%s: %s \"%s\" is not a C identifier", call, arg[f],
                              fn[f]);
    bool reduce = desc->op->n_raxes > 0;
    if (!reduce && !fn[TEXI_INTRIN_BODY])
        return texi_error(ctx, TEX_EINVAL,
                          "%s: desc tensor '%s' has no reduction, so body_fn is required "
                          "(reset_fn/update_fn only split a reduction)",
                          call, desc->name);
    if (!reduce && (fn[TEXI_INTRIN_RESET] || fn[TEXI_INTRIN_UPDATE]))
        return texi_error(ctx, TEX_EINVAL,
                          "%s: desc tensor '%s' has no reduction; reset_fn and update_fn must be "
                          "NULL",
                          call, desc->name);
    if (!fn[TEXI_INTRIN_RESET] != !fn[TEXI_INTRIN_UPDATE])
        return texi_error(ctx, TEX_EINVAL, "%s: reset_fn and update_fn must be given together",
                          call);
    if (!fn[TEXI_INTRIN_BODY] && !fn[TEXI_INTRIN_UPDATE])
        return texi_error(ctx, TEX_EINVAL, "%s: body_fn, or reset_fn and update_fn, are required",
                          call);
    return 0;
}

/* Arena copy of s, or NULL for NULL (ok stays true then). */
static const char *dup_opt(tex_ctx *ctx, const char *s, bool *ok)
{
    if (!s)
        return NULL;
    char *d = texi_strdup(ctx, s);
    *ok = *ok && d;
    return d;
}

tex_intrin *texi_intrin_make(tex_ctx *ctx, const char *call, const char *name, tex_tensor *desc,
                             const char *source, const char *body_fn, const char *reset_fn,
                             const char *update_fn, const char *builtin)
{
    if (!ctx)
        return NULL;
    if (!name || !*name) {
        texi_error(ctx, TEX_EINVAL, "%s: the intrinsic's name is NULL or empty", call);
        return NULL;
    }
    if (check_desc(ctx, call, desc) < 0)
        return NULL;
    const char *fn[TEXI_INTRIN_FN_COUNT] = {body_fn, reset_fn, update_fn};
    if (check_fns(ctx, call, desc, fn) < 0)
        return NULL;
    tex_intrin *in = texi_alloc(ctx, sizeof *in, "tensor intrinsic");
    if (!in)
        return NULL;
    bool ok = true;
    in->ctx = ctx;
    in->name = dup_opt(ctx, name, &ok);
    in->desc = desc;
    in->n_inputs = desc->op->n_inputs;
    in->inputs = desc->op->inputs;
    in->c_source = dup_opt(ctx, source, &ok);
    for (int f = 0; f < TEXI_INTRIN_FN_COUNT; f++)
        in->fn[f] = dup_opt(ctx, fn[f], &ok);
    in->builtin = dup_opt(ctx, builtin, &ok);
    return ok ? in : NULL;
}

tex_intrin *tex_intrin_extern(tex_ctx *ctx, const char *name, tex_tensor *desc,
                              const char *c_source, const char *body_fn, const char *reset_fn,
                              const char *update_fn)
{
    static const char call[] = "tex_intrin_extern";
    if (!ctx)
        return NULL;
    if (!c_source) {
        texi_error(ctx, TEX_EINVAL, "%s: intrinsic '%s': c_source is NULL", call,
                   name ? name : "(null)");
        return NULL;
    }
    return texi_intrin_make(ctx, call, name, desc, c_source, body_fn, reset_fn, update_fn, NULL);
}

tex_intrin *tex_intrin_builtin(tex_ctx *ctx, const char *name)
{
    static const char call[] = "tex_intrin_builtin";
    if (!ctx)
        return NULL;
    if (!name) {
        texi_error(ctx, TEX_EINVAL, "%s: the name is NULL", call);
        return NULL;
    }
    int code0 = ctx->errcode;
    tex_intrin *in = NULL;
    if (strncmp(name, "cpu.", 4) == 0)
        in = texi_intrin_builtin_cpu(ctx, name);
    if (!in && ctx->errcode == code0 && strncmp(name, "cpu.", 4) == 0)
        in = texi_intrin_builtin_cpu_transpose(ctx, name);
    else if (strncmp(name, "cuda.", 5) == 0)
        in = texi_intrin_builtin_cuda(ctx, name);
    if (!in && ctx->errcode == code0 && strncmp(name, "cuda.", 5) == 0)
        in = texi_intrin_builtin_cuda_frag(ctx, name);
    if (!in && ctx->errcode == code0)
        texi_error(ctx, TEX_EINVAL,
                   "%s: unknown intrinsic \"%s\" (built-ins: cpu.gemm_f32_avx512, "
                   "cpu.gemm_f32_avx2, cpu.transpose_f32_avx512, cpu.transpose_f32_avx2, "
                   "cuda.wmma_m16n16k16_f16f32, cuda.wmma_m16n16k16_bf16f32, "
                   "cuda.mma_m16n16k16_f16f32_frag, cuda.mma_frag_relu_f16, "
                   "cuda.mma_m16n16k16_f16f32_afrag, cuda.mma_frag_store_f32)",
                   call, name);
    return in;
}

int tex_tensorize(tex_stage *st, tex_iter *iv, tex_intrin *intrin)
{
    static const char call[] = "tex_tensorize";
    TEXI_TRY(texi_stage_check(st, call, true));
    TEXI_TRY(texi_stage_check_leaf(st, iv, call));
    tex_ctx *ctx = st->sch->ctx;
    if (!intrin) {
        texi_error_null_operand(ctx, call, "intrin");
        return TEX_EMISUSE;
    }
    if (intrin->ctx != ctx)
        return texi_error(ctx, TEX_EMISUSE,
                          "%s: stage '%s': intrinsic '%s' comes from another "
                          "context",
                          call, st->tensor->name, intrin->name);
    if (st->tensorize_iv == iv && st->intrin == intrin)
        return 0;
    if (st->tensorize_iv)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s' is already tensorized at axis '%s' with intrinsic '%s'",
                          call, st->tensor->name, st->tensorize_iv->name, st->intrin->name);
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, "tensorize");
    texi_trace_stage(&tr, st);
    texi_trace_iter(&tr, st, iv);
    if (intrin->builtin)
        texi_trace_word(&tr, intrin->builtin);
    else
        texi_trace_gap(&tr, "tex_tensorize with a user intrinsic (tex_intrin_extern)");
    st->tensorize_iv = iv;
    st->intrin = intrin;
    texi_trace_commit(&tr);
    return 0;
}
