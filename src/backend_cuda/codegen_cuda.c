/*
 * CUDA C source of a device module (texi_cuda_emit). Expressions and the
 * device helpers live in codegen_cuda_expr.c, the block-wide allreduce in
 * codegen_cuda_allreduce.c, tensor intrinsics in codegen_cuda_intrin.c.
 * The split into kernels, their launch extents, the workspace and the
 * asserts come from lowering (src/lower/device_split.c); this file prints.
 *
 * Source layout: a comment with the launch plan (per kernel, in order:
 * grid and block as expressions of the parameters and sizes; the workspace
 * buffers; the runtime checks), includes, the device helpers, the
 * intrinsics' sources, then one `extern "C" __global__` function per
 * m->kernels[i], named m->kernels[i].name. __launch_bounds__ is the product
 * of the block extents when they are constants (omitted otherwise).
 *
 * Every kernel takes the entry point's arguments of backend.h's ABI: one
 * `T *__restrict__` per tensor parameter (const when the function never
 * stores to it; f16 as __half, bf16 as __nv_bfloat16, bool as uint8_t),
 * int64_t per size VAR parameter, the storage type of its dtype per other
 * VAR parameter (float alpha, int8_t lo, __half h, uint8_t flag), then
 * int64_t per size variable that is not a parameter. A scalar whose argument
 * type is not its value type (a size of another integer type, a half, a
 * bool) arrives as NAME_arg and is converted into a local (followed by
 * `(void)NAME;`: a kernel may not use it). Then one `T *__restrict__` per
 * workspace buffer
 * (m->workspace order), referenced by its buffer key like a parameter.
 *
 * Statements:
 *   - A loop bound to a thread tag is its index (`const T i = min +
 *     (T)threadIdx.x;`), guarded by `threadIdx.x < extent` when its extent
 *     is not the launch extent. Rule for barriers: when the loop's body
 *     holds a BARRIER or an ATTR "thread_allreduce" (which synchronizes),
 *     the guard is not put around the body, since every thread of the
 *     block must reach each __syncthreads(); the guard is "deferred"
 *     instead: the statements that hold a barrier/allreduce are entered
 *     by every thread (their structure: sequences, serial loops, LETs,
 *     allocations, IFs, ATTRs), and each statement without one is wrapped
 *     in the guard. The allreduce sees the deferred guards through
 *     texi_cu_active_cond. Virtual-thread loops (TEX_VTHREAD) are serial.
 *   - A vectorized loop of 2 or 4 lanes whose body is one STORE of f32 or
 *     i32 to a global (parameter or workspace) or shared buffer, at an index
 *     contiguous in the loop variable (index(v + k) - index(v) == k), whose
 *     first index is provably a multiple of the lanes (texi_prove over the
 *     enclosing loops' ranges), becomes one float2/float4 (int2/int4) store
 *     of the lanes computed one by one; each LOAD of the value from such a
 *     buffer that meets the same conditions becomes one vector load.
 *     Alignment assumption: tensor arguments and workspace buffers start at
 *     least 16-byte aligned (the CUDA allocators give 256 bytes; the
 *     runtime must not pass a byte_offset that breaks this), and shared
 *     arrays are declared __align__(16). Other vectorized loops, serial and
 *     unrolled (#pragma unroll) loops are plain for loops.
 *   - BARRIER is __syncthreads(). ALLOCATE needs a constant size, or a
 *     symbolic one with a constant upper bound (over the enclosing loops,
 *     sizes taken in [0, 2^31)) of at most 48 KiB, allocated at the bound:
 *     shared scope is a __shared__ array, local scope a per-thread array,
 *     global scope a per-thread array too, but only when no bound loop is nested in
 *     it (top-level global temporaries are workspace, device_split.c).
 *   - Statements outside every thread loop of a kernel run in every thread
 *     of the block (as in TVM): lowering must make that harmless.
 * It does not split kernels, insert barriers, or decide what is reduced
 * across threads: lowering does.
 */
#include "backend_cuda/codegen_cuda.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tag_index[TEXI_N_LAUNCH_TAGS] = {
    "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};

/* Identifiers the generated code may not redefine. */
static const char *const reserved[] = {
    "auto",        "break",     "case",        "char",
    "const",       "continue",  "default",     "do",
    "double",      "else",      "enum",        "extern",
    "float",       "for",       "goto",        "if",
    "inline",      "int",       "long",        "register",
    "return",      "short",     "signed",      "sizeof",
    "static",      "struct",    "switch",      "typedef",
    "union",       "unsigned",  "void",        "volatile",
    "while",       "asm",       "bool",        "true",
    "false",       "class",     "new",         "delete",
    "this",        "template",  "typename",    "namespace",
    "operator",    "private",   "public",      "try",
    "catch",       "throw",     "virtual",     "friend",
    "using",       "int8_t",    "int16_t",     "int32_t",
    "int64_t",     "uint8_t",   "uint16_t",    "uint32_t",
    "uint64_t",    "threadIdx", "blockIdx",    "blockDim",
    "gridDim",     "warpSize",  "min",         "max",
    "abs",         "half",      "exp",         "log",
    "sqrt",        "floor",     "ceil",        "round",
    "pow",         "fma",       "sin",         "cos",
    "tanh",        "erf",       "fmod",        "main",
    "float2",      "float4",    "int2",        "int4",
    "dim3",        "uint3",     "nvcuda",      "reinterpret_cast",
    "static_cast", "restrict",  "__restrict__"};

void texi_cu_fail(texi_cu *g, int code, const char *fmt, ...)
{
    if (g->rc)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    g->rc = texi_error(g->ctx, code, "tex_build: function '%s' (target cuda): %s", g->f->name, msg);
}

/* ------------------------------------------------------------------ names */

/* The name of key: its existing binding, else a new one ("?" on ENOMEM, recorded). */
static const char *name_for(texi_cu *g, const void *key, const char *name)
{
    texi_cname *nm = texi_cnames_find(&g->names, key);
    const char *c = nm ? nm->cname : texi_cnames_bind(&g->names, key, name);
    if (!c)
        texi_cu_fail(g, TEX_ENOMEM, "out of memory (names)");
    return c ? c : "?";
}

const char *texi_cu_lookup(texi_cu *g, const void *key, const char *name)
{
    texi_cname *nm = texi_cnames_find(&g->names, key);
    if (!nm) {
        texi_cu_fail(g, TEX_EINTERNAL, "'%s' is used but not bound", name ? name : "?");
        return "?";
    }
    return nm->cname;
}

/* ------------------------------------------------------------- statements */

static void indent(texi_cu *g, texi_sb *sb)
{
    for (int i = 0; i < g->indent; i++)
        texi_sb_puts(sb, "    ");
}

void texi_cu_line(texi_cu *g, texi_sb *sb, const char *fmt, ...)
{
    indent(g, sb);
    va_list ap;
    va_start(ap, fmt);
    texi_sb_vprintf(sb, fmt, ap);
    va_end(ap);
    texi_sb_putc(sb, '\n');
}

static void emit_block(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    g->indent++;
    texi_cu_stmt(g, sb, s);
    g->indent--;
}

static void push_range(texi_cu *g, const tex_stmt *loop)
{
    if (g->n_ranges < TEXI_CU_MAX_RANGES)
        g->ranges[g->n_ranges] =
            (texi_range){loop->u.loop.var, loop->u.loop.min, loop->u.loop.extent};
    g->n_ranges++;
}

static void pop_range(texi_cu *g)
{
    g->n_ranges--;
}

/* "((T)threadIdx.x < extent)" of a guarded thread loop. */
static void guard_cond(texi_cu *g, texi_sb *sb, const tex_stmt *loop)
{
    const char *vt = texi_cu_value_type(loop->u.loop.var->dtype);
    texi_sb_printf(sb, "((%s)%s < ", vt, tag_index[loop->u.loop.thread_tag]);
    texi_cu_expr(g, sb, loop->u.loop.extent);
    texi_sb_putc(sb, ')');
}

void texi_cu_active_cond(texi_cu *g, texi_sb *sb)
{
    if (g->n_deferred == 0) {
        texi_sb_puts(sb, "true");
        return;
    }
    texi_sb_putc(sb, '(');
    for (int i = 0; i < g->n_deferred; i++) {
        texi_sb_puts(sb, i ? " && " : "");
        guard_cond(g, sb, g->deferred[i]);
    }
    texi_sb_putc(sb, ')');
}

/* A statement without barriers under the deferred guards. */
static void emit_under_deferred(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    indent(g, sb);
    texi_sb_puts(sb, "if ");
    texi_cu_active_cond(g, sb);
    texi_sb_puts(sb, " {\n");
    g->guard_applied = true;
    emit_block(g, sb, s);
    g->guard_applied = false;
    texi_cu_line(g, sb, "}");
}

/* A loop bound to a thread tag: its index, guarded (or with a deferred
 * guard) when its extent is not the launch extent. */
static void emit_thread_loop(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    int tag = s->u.loop.thread_tag;
    const char *vt = texi_cu_value_type(s->u.loop.var->dtype);
    texi_cu_line(g, sb, "{");
    g->indent++;
    if (texi_stmt_uses_var(g->ctx, s->u.loop.body, s->u.loop.var)) {
        indent(g, sb);
        texi_sb_printf(sb, "const %s %s = ", vt,
                       name_for(g, s->u.loop.var, s->u.loop.var->u.var.name));
        texi_cu_expr(g, sb, s->u.loop.min);
        texi_sb_printf(sb, " + (%s)%s;\n", vt, tag_index[tag]);
    }
    bool guard = !texi_expr_equal(s->u.loop.extent, g->launch[tag]);
    bool defer = guard && texi_stmt_has_sync(s->u.loop.body);
    if (defer && g->n_deferred == TEXI_CU_MAX_DEFERRED) {
        texi_cu_fail(g, TEX_EUNAVAILABLE, "more than %d nested guarded thread loops hold barriers",
                     TEXI_CU_MAX_DEFERRED);
        return;
    }
    if (guard && !defer) {
        indent(g, sb);
        texi_sb_puts(sb, "if (");
        guard_cond(g, sb, s);
        texi_sb_puts(sb, ") {\n");
        g->indent++;
    }
    if (defer)
        g->deferred[g->n_deferred++] = s;
    push_range(g, s);
    g->thread_depth++;
    texi_cu_stmt(g, sb, s->u.loop.body);
    g->thread_depth--;
    pop_range(g);
    g->n_deferred -= defer;
    if (guard && !defer) {
        g->indent--;
        texi_cu_line(g, sb, "}");
    }
    g->indent--;
    texi_cu_line(g, sb, "}");
}

static bool emit_vector_loop(texi_cu *g, texi_sb *sb, const tex_stmt *s);

static void emit_for(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    if (s->u.loop.for_kind == TEXI_FOR_THREAD && s->u.loop.thread_tag >= 0 &&
        s->u.loop.thread_tag < TEXI_N_LAUNCH_TAGS) {
        emit_thread_loop(g, sb, s);
        return;
    }
    if (s->u.loop.for_kind == TEXI_FOR_VECTORIZED && emit_vector_loop(g, sb, s))
        return;
    const char *vt = texi_cu_value_type(s->u.loop.var->dtype);
    const char *v = name_for(g, s->u.loop.var, s->u.loop.var->u.var.name);
    if (s->u.loop.for_kind == TEXI_FOR_UNROLLED)
        texi_cu_line(g, sb, "#pragma unroll");
    indent(g, sb);
    texi_sb_printf(sb, "for (%s %s = ", vt, v);
    texi_cu_expr(g, sb, s->u.loop.min);
    texi_sb_printf(sb, "; %s < ", v);
    texi_cu_expr(g, sb, s->u.loop.min);
    texi_sb_puts(sb, " + ");
    texi_cu_expr(g, sb, s->u.loop.extent);
    texi_sb_printf(sb, "; ++%s) {\n", v);
    push_range(g, s);
    emit_block(g, sb, s->u.loop.body);
    pop_range(g);
    texi_cu_line(g, sb, "}");
}

/* A loop bound to a block or thread index. */
static bool is_bound_loop(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_FOR && s->u.loop.for_kind == TEXI_FOR_THREAD;
}

static bool has_bound_loop(const tex_stmt *s)
{
    return texi_stmt_any(s, is_bound_loop);
}

/* The constant element count of b, or -1. */
static int64_t const_elems(const texi_buffer *b)
{
    int64_t n = 1, d;
    for (int i = 0; i < b->ndim; i++)
        n = n >= 0 && texi_expr_is_int_const(b->shape[i], &d) && d >= 0 &&
                    n <= INT64_MAX / (d ? d : 1)
                ? n * d
                : -1;
    return b->ndim < 0 ? -1 : n;
}

#define MAX_ARRAY_BYTES 49152 /* a bounded symbolic size larger than this is refused */

/* The element count of an array whose shape is symbolic: the largest value
 * of the product over the enclosing loops' ranges, every parameter and size
 * variable in [0, 2^31); -1 when unbounded or above MAX_ARRAY_BYTES. */
static int64_t bounded_elems(texi_cu *g, const texi_buffer *b)
{
    enum { MAX_R = TEXI_CU_MAX_RANGES * 2 };
    texi_range r[MAX_R];
    int n = g->n_ranges < TEXI_CU_MAX_RANGES ? g->n_ranges : TEXI_CU_MAX_RANGES;
    memcpy(r, g->ranges, sizeof r[0] * (size_t)n);
    tex_expr *zero = texi_int_imm(g->ctx, TEX_I64, 0),
             *big = texi_int_imm(g->ctx, TEX_I64, INT32_MAX);
    for (int i = 0; i < g->f->n_params && n < MAX_R; i++)
        if (g->f->params[i].kind == TEX_ARG_VAR && texi_dtype_is_int(g->f->params[i].var->dtype))
            r[n++] = (texi_range){g->f->params[i].var, zero, big};
    for (int i = 0; i < g->f->n_size_vars && n < MAX_R; i++)
        r[n++] = (texi_range){g->f->size_vars[i], zero, big};
    tex_expr *prod = texi_int_imm(g->ctx, TEX_I64, 1);
    for (int i = 0; prod && i < b->ndim; i++) {
        tex_expr *d = texi_convert(b->shape[i], TEX_I64);
        prod = d && zero && big ? texi_binary(TEXI_EXPR_MUL, prod, d) : NULL;
    }
    if (!prod)
        return -1;
    texi_interval iv = texi_const_interval(prod, n, r);
    int64_t elem = tex_dtype_bytes(b->dtype);
    return !iv.hi_inf && iv.hi >= 0 && elem > 0 && iv.hi <= MAX_ARRAY_BYTES / elem ? iv.hi : -1;
}

/* A __shared__ or per-thread array (file comment); a symbolic size is
 * allocated at its upper bound (bounded_elems). */
static void emit_allocate(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    const texi_buffer *b = s->u.alloc.buf;
    int64_t n = const_elems(b);
    if (n < 0)
        n = bounded_elems(g, b);
    if (n < 0) {
        texi_cu_fail(g, TEX_EUNAVAILABLE,
                     "buffer '%s' has a size without a constant upper bound of at most %d "
                     "bytes: shared/local buffers in CUDA kernels need one",
                     b->name, MAX_ARRAY_BYTES);
        return;
    }
    if (b->scope == TEXI_SCOPE_GLOBAL && has_bound_loop(s->u.alloc.body)) {
        texi_cu_fail(g, TEX_EUNAVAILABLE,
                     "global buffer '%s' is allocated inside a kernel, outside a thread-bound "
                     "loop that uses it: use cache_read/cache_write with shared scope",
                     b->name);
        return;
    }
    const char *name = name_for(g, texi_buffer_key(b), b->name);
    texi_cu_line(g, sb, "{");
    g->indent++;
    texi_cu_line(g, sb, "%s%s %s[%lld];",
                 b->scope == TEXI_SCOPE_SHARED ? "__shared__ __align__(16) " : "",
                 texi_cu_storage_type(b->dtype), name, (long long)(n ? n : 1));
    texi_cu_stmt(g, sb, s->u.alloc.body);
    g->indent--;
    texi_cu_line(g, sb, "}");
}

static void emit_let(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    tex_expr *var = s->u.let.var;
    texi_sb tmp;
    texi_sb_init(&tmp); /* the value first: it may use an outer binding of var */
    texi_cu_expr(g, &tmp, s->u.let.value);
    texi_cu_line(g, sb, "{");
    g->indent++;
    texi_cu_line(g, sb, "const %s %s = %s;", texi_cu_value_type(var->dtype),
                 name_for(g, var, var->u.var.name), tmp.buf ? tmp.buf : "0");
    if (tmp.oom)
        texi_cu_fail(g, TEX_ENOMEM, "out of memory (source text)");
    texi_sb_fini(&tmp);
    texi_cu_stmt(g, sb, s->u.let.body);
    g->indent--;
    texi_cu_line(g, sb, "}");
}

static void emit_if(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    indent(g, sb);
    texi_sb_puts(sb, "if (");
    texi_cu_expr(g, sb, s->u.ifs.cond);
    texi_sb_puts(sb, ") {\n");
    emit_block(g, sb, s->u.ifs.then_s);
    if (s->u.ifs.else_s) {
        texi_cu_line(g, sb, "} else {");
        emit_block(g, sb, s->u.ifs.else_s);
    }
    texi_cu_line(g, sb, "}");
}

static void emit_store(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    const texi_buffer *b = s->u.store.buf;
    indent(g, sb);
    texi_sb_printf(sb, "%s[", texi_cu_lookup(g, texi_buffer_key(b), b->name));
    texi_cu_expr(g, sb, s->u.store.index);
    texi_sb_puts(sb, "] = ");
    texi_cu_store_value(g, sb, s->u.store.value, b->dtype);
    texi_sb_puts(sb, ";\n");
}

static void emit_attr(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    if (s->u.attr.id == TEXI_ATTR_THREAD_ALLREDUCE) {
        texi_cu_emit_allreduce(g, sb, s);
        return;
    }
    if (s->u.attr.id == TEXI_ATTR_ASSERT) {
        texi_cu_fail(g, TEX_EINTERNAL, "a runtime check ('assert') was left inside a kernel");
        return;
    }
    if (s->u.attr.id == TEXI_ATTR_ATOMIC) {
        texi_cu_emit_atomic(g, sb, s);
        return;
    }
    texi_cu_stmt(g, sb, s->u.attr.body);
}

void texi_cu_stmt(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    if (g->rc)
        return;
    if (g->n_deferred > 0 && !g->guard_applied && !texi_stmt_has_sync(s)) {
        emit_under_deferred(g, sb, s);
        return;
    }
    switch (s->kind) {
    case TEXI_STMT_FOR:
        emit_for(g, sb, s);
        return;
    case TEXI_STMT_STORE:
        emit_store(g, sb, s);
        return;
    case TEXI_STMT_ALLOCATE:
        emit_allocate(g, sb, s);
        return;
    case TEXI_STMT_IF:
        emit_if(g, sb, s);
        return;
    case TEXI_STMT_LET:
        emit_let(g, sb, s);
        return;
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            texi_cu_stmt(g, sb, s->u.seq.items[i]);
        return;
    case TEXI_STMT_EVALUATE:
        indent(g, sb);
        texi_sb_puts(sb, "(void)");
        texi_cu_expr(g, sb, s->u.eval.value);
        texi_sb_puts(sb, ";\n");
        return;
    case TEXI_STMT_ATTR:
        emit_attr(g, sb, s);
        return;
    case TEXI_STMT_BARRIER:
        texi_cu_line(g, sb, "__syncthreads();");
        return;
    case TEXI_STMT_INTRIN:
        texi_cu_emit_intrin(g, sb, s);
        return;
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    texi_cu_fail(g, TEX_EINTERNAL, "a '%s' statement cannot occur in a lowered function",
                 s->kind < TEXI_STMT_KIND_COUNT ? texi_stmt_kind_names[s->kind] : "?");
}

/* ------------------------------------------------- vectorized accesses */

/* "float4" ... for `lanes` elements of dtype t, or NULL when not vectorizable. */
static const char *vector_type(tex_dtype t, int64_t lanes)
{
    if (lanes != 2 && lanes != 4)
        return NULL;
    if (t == TEX_F32)
        return lanes == 2 ? "float2" : "float4";
    if (t == TEX_I32)
        return lanes == 2 ? "int2" : "int4";
    return NULL;
}

/* Whether b is global memory the runtime allocated (a tensor parameter or
 * workspace) or a shared array: storage known to be 16-byte aligned. */
static bool aligned_storage(const texi_cu *g, const texi_buffer *b)
{
    if (b->scope == TEXI_SCOPE_SHARED)
        return true;
    const void *key = texi_buffer_key(b);
    for (int i = 0; i < g->f->n_params; i++)
        if (g->f->params[i].kind == TEX_ARG_TENSOR && texi_buffer_key(g->f->params[i].buf) == key)
            return true;
    for (int i = 0; g->m && i < g->m->n_workspace; i++)
        if (texi_buffer_key(g->m->workspace[i]) == key)
            return true;
    return false;
}

static tex_expr *widen_cast(tex_expr *e, void *ud);

/* e (a signed integer expression) rebuilt in i64: constants widened, + - *
 * min max floordiv floormod distributed, anything else cast as a whole.
 * Equal to e's value when the narrow arithmetic does not overflow, which
 * generated index code assumes anyway. */
static tex_expr *widen(tex_ctx *ctx, tex_expr *e)
{
    switch (e->kind) {
    case TEXI_EXPR_INT:
        return texi_int_imm(ctx, TEX_I64, e->u.i);
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
    case TEXI_EXPR_MUL:
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD: {
        tex_expr *a = widen(ctx, e->u.bin.a), *b = widen(ctx, e->u.bin.b);
        return a && b ? texi_binary(e->kind, a, b) : NULL;
    }
    default:
        return texi_unary(TEXI_EXPR_CAST, TEX_I64, texi_expr_mutate(e, widen_cast, ctx));
    }
}

/* Rewrite callback: i64 casts of narrower signed integers pushed inwards. */
static tex_expr *widen_cast(tex_expr *e, void *ud)
{
    if (e->kind != TEXI_EXPR_CAST || e->dtype != TEX_I64)
        return NULL;
    tex_dtype from = e->u.un.a->dtype;
    if (from != TEX_I32 && from != TEX_I16 && from != TEX_I8)
        return NULL;
    return widen(ud, e->u.un.a);
}

/* Whether buffer b at index idx, over loop s's variable, is a contiguous,
 * provably aligned run of `lanes` elements (file comment). */
static bool vector_access(texi_cu *g, const tex_stmt *s, int64_t lanes, const texi_buffer *b,
                          tex_expr *idx)
{
    if (!vector_type(b->dtype, lanes) || !aligned_storage(g, b) || g->n_ranges > TEXI_CU_MAX_RANGES)
        return false;
    tex_expr *v = s->u.loop.var, *mn = s->u.loop.min;
    idx = texi_expr_mutate(idx, widen_cast, g->ctx);
    tex_expr *base = idx ? texi_substitute(idx, 1, &v, &mn) : NULL;
    if (!base)
        return false;
    for (int64_t k = 1; k < lanes; k++) {
        tex_expr *at = texi_binary(TEXI_EXPR_ADD, mn, texi_int_imm(g->ctx, mn->dtype, k));
        tex_expr *ik = at ? texi_substitute(idx, 1, &v, &at) : NULL;
        tex_expr *d = ik ? texi_binary(TEXI_EXPR_SUB, ik, base) : NULL;
        tex_expr *ds = d ? texi_simplify(d, g->n_ranges, g->ranges) : NULL;
        int64_t dv;
        if (!ds || !texi_expr_is_int_const(ds, &dv) || dv != k)
            return false;
    }
    tex_expr *mod = texi_binary(TEXI_EXPR_FLOORMOD, base, texi_int_imm(g->ctx, base->dtype, lanes));
    tex_expr *eq =
        mod ? texi_binary(TEXI_EXPR_EQ, mod, texi_int_imm(g->ctx, base->dtype, 0)) : NULL;
    return eq && texi_prove(eq, g->n_ranges, g->ranges);
}

typedef struct {
    texi_cu *g;
    const tex_stmt *loop;
    int64_t lanes;
    int n;
    tex_expr *loads[TEXI_CU_MAX_VLOADS];
} vload_scan;

/* Collects the LOADs of a vectorized value that can be vector loads. */
static bool scan_load(tex_expr *e, void *ud)
{
    vload_scan *vs = ud;
    if (e->kind != TEXI_EXPR_LOAD)
        return true;
    for (int i = 0; i < vs->n; i++)
        if (vs->loads[i] == e)
            return false;
    if (vs->n < TEXI_CU_MAX_VLOADS &&
        vector_access(vs->g, vs->loop, vs->lanes, e->u.load.buf, e->u.load.index))
        vs->loads[vs->n++] = e;
    return false; /* an index holding a load stays scalar */
}

static const char *const lane_names = "xyzw";

/* Declares the vector loads of vs (loop variable base already bound). */
static void emit_vector_loads(texi_cu *g, texi_sb *sb, const vload_scan *vs)
{
    g->vec_lane = 0;
    for (int i = 0; i < vs->n; i++) {
        const texi_buffer *b = vs->loads[i]->u.load.buf;
        const char *vt = vector_type(b->dtype, vs->lanes);
        const char *name = name_for(g, vs->loads[i], "vl");
        indent(g, sb);
        texi_sb_printf(sb, "const %s %s = *reinterpret_cast<const %s *>(%s + ", vt, name, vt,
                       texi_cu_lookup(g, texi_buffer_key(b), b->name));
        texi_cu_expr(g, sb, vs->loads[i]->u.load.index);
        texi_sb_puts(sb, ");\n");
        g->vload[i] = vs->loads[i];
        g->vload_name[i] = name;
    }
    g->n_vloads = vs->n;
}

/* A vectorized loop as one vector store (file comment); false when it does
 * not qualify (then it is a plain loop). */
static bool emit_vector_loop(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    const tex_stmt *st = s->u.loop.body;
    int64_t lanes = 0;
    if (g->vec_var || !texi_expr_is_int_const(s->u.loop.extent, &lanes) ||
        st->kind != TEXI_STMT_STORE || st->u.store.buf->dtype != st->u.store.value->dtype ||
        !vector_access(g, s, lanes, st->u.store.buf, st->u.store.index))
        return false;
    const texi_buffer *b = st->u.store.buf;
    const char *vt = vector_type(b->dtype, lanes);
    vload_scan vs = {.g = g, .loop = s, .lanes = lanes};
    texi_expr_visit(st->u.store.value, scan_load, &vs);
    texi_cu_line(g, sb, "{");
    g->indent++;
    const char *v = name_for(g, s->u.loop.var, s->u.loop.var->u.var.name);
    indent(g, sb);
    texi_sb_printf(sb, "const %s %s = ", texi_cu_value_type(s->u.loop.var->dtype), v);
    texi_cu_expr(g, sb, s->u.loop.min);
    texi_sb_puts(sb, ";\n");
    g->vec_var = s->u.loop.var;
    emit_vector_loads(g, sb, &vs);
    const char *tmp = name_for(g, st, "vs");
    texi_cu_line(g, sb, "%s %s;", vt, tmp);
    for (int k = 0; k < lanes; k++) {
        g->vec_lane = k;
        indent(g, sb);
        texi_sb_printf(sb, "%s.%c = ", tmp, lane_names[k]);
        texi_cu_store_value(g, sb, st->u.store.value, b->dtype);
        texi_sb_puts(sb, ";\n");
    }
    g->vec_lane = 0;
    indent(g, sb);
    texi_sb_printf(sb, "*reinterpret_cast<%s *>(%s + ", vt,
                   texi_cu_lookup(g, texi_buffer_key(b), b->name));
    texi_cu_expr(g, sb, st->u.store.index);
    texi_sb_printf(sb, ") = %s;\n", tmp);
    g->vec_var = NULL;
    g->n_vloads = 0;
    g->indent--;
    texi_cu_line(g, sb, "}");
    return true;
}

/* ---------------------------------------------------------------- kernels */

/* A scalar argument (int64_t for a size, else its dtype's storage type);
 * records in *conv the local of one whose argument type is not its value
 * type. */
static void scalar_param(texi_cu *g, texi_sb *proto, texi_sb *conv, const void *argkey,
                         tex_expr *var, bool size)
{
    const char *name = name_for(g, var, var->u.var.name);
    const char *type = size ? "int64_t" : texi_cu_storage_type(var->dtype);
    const char *vt = texi_cu_value_type(var->dtype);
    if (strcmp(type, vt) == 0) {
        texi_sb_printf(proto, "%s %s", type, name);
        return;
    }
    char arg[300];
    snprintf(arg, sizeof arg, "%.250s_arg", name);
    const char *an = name_for(g, argkey, arg);
    texi_sb_printf(proto, "%s %s", type, an);
    if (!size && var->dtype == TEX_F16)
        texi_sb_printf(conv, "    const float %s = __half2float(%s);\n", name, an);
    else if (!size && var->dtype == TEX_BF16)
        texi_sb_printf(conv, "    const float %s = __bfloat162float(%s);\n", name, an);
    else if (!size && var->dtype == TEX_BOOL)
        texi_sb_printf(conv, "    const bool %s = %s != 0;\n", name, an);
    else
        texi_sb_printf(conv, "    const %s %s = (%s)%s;\n", vt, name, vt, an);
    texi_sb_printf(conv, "    (void)%s;\n", name);
}

/* Binds the parameters' names; the parameter list and the scalar locals. */
static void parameters(texi_cu *g, texi_sb *proto, texi_sb *conv)
{
    const tex_func *f = g->f;
    int n = 0;
    for (int i = 0; i < f->n_params; i++, n++) {
        const texi_param *p = &f->params[i];
        texi_sb_puts(proto, n ? ", " : "");
        if (p->kind == TEX_ARG_VAR) {
            scalar_param(g, proto, conv, p, p->var, p->size);
            continue;
        }
        const void *key = texi_buffer_key(p->buf);
        const char *name = name_for(g, key, p->tensor->name);
        bool written = texi_stmt_stores_to(f->body, p->buf);
        texi_sb_printf(proto, "%s%s *__restrict__ %s", written ? "" : "const ",
                       texi_cu_storage_type(p->buf->dtype), name);
    }
    for (int i = 0; i < f->n_size_vars; i++, n++) {
        texi_sb_puts(proto, n ? ", " : "");
        scalar_param(g, proto, conv, &f->size_vars[i], f->size_vars[i], true);
    }
    for (int i = 0; i < g->m->n_workspace; i++, n++) {
        const texi_buffer *b = g->m->workspace[i];
        texi_sb_printf(proto, "%s%s *__restrict__ %s", n ? ", " : "",
                       texi_cu_storage_type(b->dtype), name_for(g, texi_buffer_key(b), b->name));
    }
}

/* Appends e (or "1" for NULL) printed on one line for the plan comment. */
static void plan_expr(texi_sb *plan, const tex_expr *e)
{
    texi_sb tmp;
    texi_sb_init(&tmp);
    if (e)
        texi_expr_print(&tmp, e);
    for (const char *c = tmp.buf && e ? tmp.buf : "1"; *c; c++)
        if (!(c[0] == '*' && c[1] == '/') && *c != '\n')
            texi_sb_putc(plan, *c);
    texi_sb_fini(&tmp);
}

/* The launch-plan comment of the module. */
static void plan_comment(const texi_device_module *m, texi_sb *plan)
{
    for (int k = 0; k < m->n_kernels; k++) {
        const texi_device_kernel *kn = &m->kernels[k];
        bool bound = false;
        texi_sb_printf(plan, " *   %s: ", kn->name);
        for (int t = 0; t < TEXI_N_LAUNCH_TAGS; t++) {
            texi_sb_puts(plan, t == 0 ? "grid (" : t == 3 ? "), block (" : ", ");
            plan_expr(plan, kn->extent[t]);
            bound |= kn->extent[t] != NULL;
        }
        texi_sb_puts(plan, bound ? ")\n" : ")  (no thread binding: one thread)\n");
    }
    for (int i = 0; i < m->n_workspace; i++) {
        const texi_buffer *b = m->workspace[i];
        texi_sb_printf(plan, " * Workspace %s: %s[", b->name, tex_dtype_name(b->dtype));
        for (int d = 0; d < b->ndim; d++) {
            texi_sb_puts(plan, d ? ", " : "");
            plan_expr(plan, b->shape[d]);
        }
        texi_sb_puts(plan, "] (global, zero-filled per call)\n");
    }
    for (int i = 0; i < m->n_asserts; i++) {
        texi_sb_puts(plan, " * Checked before launching: ");
        plan_expr(plan, m->asserts[i]);
        texi_sb_putc(plan, '\n');
    }
}

/* Kernel k of the module. */
/* CUDA's launch limits, checked where the extents are constants (symbolic
 * ones are checked by the runtime before launching): a block dimension of
 * at most 1024 / 1024 / 64 threads and 1024 in all, a grid's y and z at
 * most 65535. TEX_EINVAL naming the kernel and the thread tag. */
static void check_launch_limits(texi_cu *g, const texi_device_kernel *kn)
{
    static const int64_t limit[TEXI_N_LAUNCH_TAGS] = {INT32_MAX, 65535, 65535, 1024, 1024, 64};
    int64_t threads = 1, e;
    for (int t = 0; t < TEXI_N_LAUNCH_TAGS && !g->rc; t++) {
        if (!kn->extent[t] || !texi_expr_is_int_const(kn->extent[t], &e))
            continue;
        if (e > limit[t])
            texi_cu_fail(g, TEX_EINVAL, "kernel '%s': %s has extent %lld, CUDA allows %lld",
                         kn->name, tag_index[t], (long long)e, (long long)limit[t]);
        if (t >= 3 && e > 0 && threads <= 1024)
            threads *= e;
    }
    if (threads > 1024)
        texi_cu_fail(g, TEX_EINVAL,
                     "kernel '%s': its thread loops make blocks of more than 1024 threads "
                     "(%lld), CUDA's limit",
                     kn->name, (long long)threads);
}

static void emit_kernel(texi_cu *g, texi_sb *out, int k, const char *params, const char *conv)
{
    const texi_device_kernel *kn = &g->m->kernels[k];
    check_launch_limits(g, kn);
    memcpy(g->launch, kn->extent, sizeof g->launch);
    int64_t threads = 1, e;
    for (int t = 3; t < TEXI_N_LAUNCH_TAGS; t++)
        if (g->launch[t])
            threads = texi_expr_is_int_const(g->launch[t], &e) && threads > 0 && e > 0 &&
                              threads <= INT32_MAX / e
                          ? threads * e
                          : -1;
    texi_sb_puts(out, "extern \"C\" __global__ void ");
    if (threads > 0)
        texi_sb_printf(out, "__launch_bounds__(%lld) ", (long long)threads);
    texi_sb_printf(out, "%s(%s)\n{\n%s", kn->name, params, conv);
    g->indent = 1;
    g->n_ranges = 0;
    texi_cu_stmt(g, out, kn->body);
    texi_sb_puts(out, "}\n\n");
}

static void assemble(texi_cu *g, texi_sb *out, const char *plan, const char *kernels)
{
    texi_sb_printf(out,
                   "/*\n * Generated by tex: function '%s' (CUDA C).\n * Launch plan (in order, "
                   "one stream; grid and block per kernel):\n%s */\n",
                   g->f->name, plan);
    texi_sb_puts(out, "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
                      "#if defined(__CUDACC_RTC__)\n"
                      "typedef signed char int8_t;\ntypedef short int16_t;\ntypedef int int32_t;\n"
                      "typedef long long int64_t;\ntypedef unsigned char uint8_t;\n"
                      "typedef unsigned short uint16_t;\ntypedef unsigned int uint32_t;\n"
                      "typedef unsigned long long uint64_t;\n"
                      "#else\n#include <stdint.h>\n#endif\n\n");
    texi_sb_puts(out, texi_cu_helpers);
    if (g->uses_allreduce)
        texi_sb_puts(out, texi_cu_allreduce_helpers);
    if (g->uses_atomic_cas)
        texi_sb_puts(out, texi_cu_atomic_helpers);
    texi_cu_emit_intrin_sources(g, out, g->f->body);
    texi_sb_puts(out, kernels);
}

char *texi_cuda_emit(const tex_func *f, const texi_device_module *m)
{
    if (!f || !f->ctx || !f->body || !m)
        return NULL;
    texi_cu g = {.ctx = f->ctx, .f = f, .m = m};
    texi_cnames_init(&g.names, reserved, sizeof reserved / sizeof reserved[0]);
    texi_sb params, conv, plan, kernels, out;
    texi_sb_init(&params);
    texi_sb_init(&conv);
    texi_sb_init(&plan);
    texi_sb_init(&kernels);
    texi_sb_init(&out);
    parameters(&g, &params, &conv);
    plan_comment(m, &plan);
    for (int k = 0; k < m->n_kernels && !g.rc; k++)
        emit_kernel(&g, &kernels, k, params.buf ? params.buf : "", conv.buf ? conv.buf : "");
    bool oom = params.oom || conv.oom || plan.oom || kernels.oom;
    if (!g.rc && !oom)
        assemble(&g, &out, plan.buf ? plan.buf : "", kernels.buf ? kernels.buf : "");
    char *text = g.rc ? NULL : texi_sb_take(&out);
    if (!g.rc && !text)
        texi_error(f->ctx, TEX_ENOMEM, "tex_build: function '%s': out of memory (source text)",
                   f->name);
    texi_sb_fini(&params);
    texi_sb_fini(&conv);
    texi_sb_fini(&plan);
    texi_sb_fini(&kernels);
    texi_sb_fini(&out);
    texi_cnames_fini(&g.names);
    return text;
}
