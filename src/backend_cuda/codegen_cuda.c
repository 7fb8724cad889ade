/*
 * CUDA C source of a lowered function (texi_cuda_emit). Expressions and the
 * device helpers live in codegen_cuda_expr.c.
 *
 * Host/device split: the function's body is cut into top-level nests (the
 * items of top-level SEQs, looking through top-level ATTRs); each nest
 * becomes one kernel, NAME_kernel0, NAME_kernel1, ..., to be launched in
 * order on one stream. A kernel's launch extents are, per thread tag
 * (blockIdx.x/y/z, threadIdx.x/y/z), the extent of the nest's loops bound
 * to it: equal expressions, or the largest constant; extents may only use
 * the parameters and size variables. A bound loop becomes its index
 * (`const T i = min + (T)threadIdx.x;`) and is guarded when its extent is
 * not the launch extent. A nest without any bound loop becomes a
 * single-thread kernel launched <<<1, 1>>>. The plan (grid and block per
 * kernel, as expressions of the parameters and sizes) opens the source as a
 * comment block. __launch_bounds__ is the product of the block extents when
 * they are constants (omitted otherwise).
 *
 * Every kernel takes the entry point's arguments of backend.h's ABI: one
 * `T *__restrict__` per tensor parameter (const when the function never
 * stores to it; f16 as __half, bf16 as __nv_bfloat16, bool as uint8_t),
 * int64_t per VAR parameter, then int64_t per size variable that is not a
 * parameter; a scalar of another type arrives as int64_t NAME_arg and is
 * converted into a local.
 *
 * Statements: serial, unrolled (#pragma unroll) and vectorized loops are
 * plain for loops; BARRIER is __syncthreads(). ALLOCATE needs a constant
 * size: shared scope is a __shared__ array, local scope a per-thread array,
 * global scope a per-thread array too, but only when no bound loop is
 * nested in it (otherwise threads would need to share it). Top-level global
 * temporaries (between kernels) and top-level "assert" checks are not
 * supported yet (TEX_EUNAVAILABLE). It does not insert barriers, reduce
 * across threads or vectorize memory accesses: lowering does that.
 */
#include "backend_cuda/codegen_cuda.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KERNELS 64
#define MAX_FREE 64

static const char *const tag_index[6] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                         "threadIdx.x", "threadIdx.y", "threadIdx.z"};

/* Identifiers the generated code may not redefine. */
static const char *const reserved[] = {
    "auto",     "break",     "case",       "char",       "const",     "continue", "default",
    "do",       "double",    "else",       "enum",       "extern",    "float",    "for",
    "goto",     "if",        "inline",     "int",        "long",      "register", "return",
    "short",    "signed",    "sizeof",     "static",     "struct",    "switch",   "typedef",
    "union",    "unsigned",  "void",       "volatile",   "while",     "asm",      "bool",
    "true",     "false",     "class",      "new",        "delete",    "this",     "template",
    "typename", "namespace", "operator",   "private",    "public",    "try",      "catch",
    "throw",    "virtual",   "friend",     "using",      "int8_t",    "int16_t",  "int32_t",
    "int64_t",  "uint8_t",   "uint16_t",   "uint32_t",   "uint64_t",  "threadIdx", "blockIdx",
    "blockDim", "gridDim",   "warpSize",   "min",        "max",       "abs",      "half",
    "exp",      "log",       "sqrt",       "floor",      "ceil",      "round",    "pow",
    "fma",      "sin",       "cos",        "tanh",       "erf",       "fmod",     "main"};

void texi_cu_fail(texi_cu *g, int code, const char *fmt, ...)
{
    if (g->rc)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    g->rc = texi_error(g->ctx, code, "tex_build: function '%s' (target cuda): %s", g->f->name,
                       msg);
}

/* ------------------------------------------------------------------ names */

static texi_cname *find_name(texi_cu *g, const void *key)
{
    return texi_cnames_find(&g->names, key);
}

/* The name of key: its existing binding, else a new one ("?" on ENOMEM, recorded). */
static const char *name_for(texi_cu *g, const void *key, const char *name)
{
    texi_cname *nm = find_name(g, key);
    const char *c = nm ? nm->cname : texi_cnames_bind(&g->names, key, name);
    if (!c)
        texi_cu_fail(g, TEX_ENOMEM, "out of memory (names)");
    return c ? c : "?";
}

const char *texi_cu_lookup(texi_cu *g, const void *key, const char *name)
{
    texi_cname *nm = find_name(g, key);
    if (!nm) {
        texi_cu_fail(g, TEX_EINTERNAL, "'%s' is used but not bound", name ? name : "?");
        return "?";
    }
    return nm->cname;
}

/* ------------------------------------------------------------- statements */

static void line(texi_cu *g, texi_sb *sb, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void indent(texi_cu *g, texi_sb *sb)
{
    for (int i = 0; i < g->indent; i++)
        texi_sb_puts(sb, "    ");
}

static void line(texi_cu *g, texi_sb *sb, const char *fmt, ...)
{
    indent(g, sb);
    va_list ap;
    va_start(ap, fmt);
    texi_sb_vprintf(sb, fmt, ap);
    va_end(ap);
    texi_sb_putc(sb, '\n');
}

static void emit_stmt(texi_cu *g, texi_sb *sb, const tex_stmt *s);

static void emit_block(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    g->indent++;
    emit_stmt(g, sb, s);
    g->indent--;
}

/* A loop bound to a thread tag: its index, guarded when its extent is not
 * the launch extent. */
static void emit_thread_loop(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    int tag = s->u.loop.thread_tag;
    const char *vt = texi_cu_value_type(s->u.loop.var->dtype);
    line(g, sb, "{");
    g->indent++;
    indent(g, sb);
    texi_sb_printf(sb, "const %s %s = ", vt,
                   name_for(g, s->u.loop.var, s->u.loop.var->u.var.name));
    texi_cu_expr(g, sb, s->u.loop.min);
    texi_sb_printf(sb, " + (%s)%s;\n", vt, tag_index[tag]);
    bool guard = !texi_expr_equal(s->u.loop.extent, g->launch[tag]);
    if (guard) {
        indent(g, sb);
        texi_sb_printf(sb, "if ((%s)%s < ", vt, tag_index[tag]);
        texi_cu_expr(g, sb, s->u.loop.extent);
        texi_sb_puts(sb, ") {\n");
        g->indent++;
    }
    g->thread_depth++;
    emit_stmt(g, sb, s->u.loop.body);
    g->thread_depth--;
    if (guard) {
        g->indent--;
        line(g, sb, "}");
    }
    g->indent--;
    line(g, sb, "}");
}

static void emit_for(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    if (s->u.loop.for_kind == TEXI_FOR_THREAD) {
        emit_thread_loop(g, sb, s);
        return;
    }
    const char *vt = texi_cu_value_type(s->u.loop.var->dtype);
    const char *v = name_for(g, s->u.loop.var, s->u.loop.var->u.var.name);
    if (s->u.loop.for_kind == TEXI_FOR_UNROLLED)
        line(g, sb, "#pragma unroll");
    indent(g, sb);
    texi_sb_printf(sb, "for (%s %s = ", vt, v);
    texi_cu_expr(g, sb, s->u.loop.min);
    texi_sb_printf(sb, "; %s < ", v);
    texi_cu_expr(g, sb, s->u.loop.min);
    texi_sb_puts(sb, " + ");
    texi_cu_expr(g, sb, s->u.loop.extent);
    texi_sb_printf(sb, "; ++%s) {\n", v);
    emit_block(g, sb, s->u.loop.body);
    line(g, sb, "}");
}

static bool has_thread_loop(const tex_stmt *s);

/* A constant-size array: __shared__ or per thread (file comment). */
static void emit_allocate(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    const texi_buffer *b = s->u.alloc.buf;
    int64_t n = 1, d;
    for (int i = 0; i < b->ndim; i++)
        n = texi_expr_is_int_const(b->shape[i], &d) && d >= 0 && n <= INT64_MAX / (d ? d : 1)
                ? n * d
                : -1;
    if (n < 0 || b->ndim < 0) {
        texi_cu_fail(g, TEX_EUNAVAILABLE,
                     "buffer '%s' has a size that is not a constant: only constant-size "
                     "shared/local buffers are supported in CUDA kernels",
                     b->name);
        return;
    }
    if (b->scope == TEXI_SCOPE_GLOBAL && has_thread_loop(s->u.alloc.body)) {
        texi_cu_fail(g, TEX_EUNAVAILABLE,
                     "global buffer '%s' is allocated outside a thread-bound loop that uses it: "
                     "use cache_read/cache_write with shared scope",
                     b->name);
        return;
    }
    const char *name = name_for(g, texi_buffer_key(b), b->name);
    line(g, sb, "{");
    g->indent++;
    line(g, sb, "%s%s %s[%lld];", b->scope == TEXI_SCOPE_SHARED ? "__shared__ " : "",
         texi_cu_storage_type(b->dtype), name, (long long)(n ? n : 1));
    emit_stmt(g, sb, s->u.alloc.body);
    g->indent--;
    line(g, sb, "}");
}

static void emit_let(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    tex_expr *var = s->u.let.var;
    texi_sb tmp;
    texi_sb_init(&tmp); /* the value first: it may use an outer binding of var */
    texi_cu_expr(g, &tmp, s->u.let.value);
    line(g, sb, "{");
    g->indent++;
    line(g, sb, "const %s %s = %s;", texi_cu_value_type(var->dtype),
         name_for(g, var, var->u.var.name), tmp.buf ? tmp.buf : "0");
    if (tmp.oom)
        texi_cu_fail(g, TEX_ENOMEM, "out of memory (source text)");
    texi_sb_fini(&tmp);
    emit_stmt(g, sb, s->u.let.body);
    g->indent--;
    line(g, sb, "}");
}

static void emit_if(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    indent(g, sb);
    texi_sb_puts(sb, "if (");
    texi_cu_expr(g, sb, s->u.ifs.cond);
    texi_sb_puts(sb, ") {\n");
    emit_block(g, sb, s->u.ifs.then_s);
    if (s->u.ifs.else_s) {
        line(g, sb, "} else {");
        emit_block(g, sb, s->u.ifs.else_s);
    }
    line(g, sb, "}");
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

static void emit_stmt(texi_cu *g, texi_sb *sb, const tex_stmt *s)
{
    if (g->rc)
        return;
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
            emit_stmt(g, sb, s->u.seq.items[i]);
        return;
    case TEXI_STMT_EVALUATE:
        indent(g, sb);
        texi_sb_puts(sb, "(void)");
        texi_cu_expr(g, sb, s->u.eval.value);
        texi_sb_puts(sb, ";\n");
        return;
    case TEXI_STMT_ATTR:
        if (strcmp(s->u.attr.key, "assert") == 0)
            texi_cu_fail(g, TEX_EUNAVAILABLE, "runtime checks ('assert') are not supported yet");
        emit_stmt(g, sb, s->u.attr.body);
        return;
    case TEXI_STMT_BARRIER:
        line(g, sb, "__syncthreads();");
        return;
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    texi_cu_fail(g, TEX_EINTERNAL, "a '%s' statement cannot occur in a lowered function",
                 s->kind < TEXI_STMT_KIND_COUNT ? texi_stmt_kind_names[s->kind] : "?");
}

/* ---------------------------------------------------------------- kernels */

/* Calls fn on every FOR of s (not into expressions). */
static void each_loop(const tex_stmt *s, void (*fn)(texi_cu *, const tex_stmt *), texi_cu *g)
{
    if (!s)
        return;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        fn(g, s);
        each_loop(s->u.loop.body, fn, g);
        return;
    case TEXI_STMT_ALLOCATE:
        each_loop(s->u.alloc.body, fn, g);
        return;
    case TEXI_STMT_IF:
        each_loop(s->u.ifs.then_s, fn, g);
        each_loop(s->u.ifs.else_s, fn, g);
        return;
    case TEXI_STMT_LET:
        each_loop(s->u.let.body, fn, g);
        return;
    case TEXI_STMT_ATTR:
        each_loop(s->u.attr.body, fn, g);
        return;
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            each_loop(s->u.seq.items[i], fn, g);
        return;
    default:
        return;
    }
}

static void count_thread(texi_cu *g, const tex_stmt *s)
{
    g->thread_depth += s->u.loop.for_kind == TEXI_FOR_THREAD;
}

static bool has_thread_loop(const tex_stmt *s)
{
    texi_cu probe = {0};
    each_loop(s, count_thread, &probe);
    return probe.thread_depth > 0;
}

/* Whether e uses only parameters and size variables. */
static bool host_computable(const texi_cu *g, tex_expr *e)
{
    tex_expr *vars[MAX_FREE];
    int n = 0;
    if (texi_collect_free_vars(e, vars, &n, MAX_FREE) != 0)
        return false;
    for (int i = 0; i < n; i++) {
        bool ok = false;
        for (int p = 0; p < g->f->n_params; p++)
            ok |= g->f->params[p].kind == TEX_ARG_VAR && g->f->params[p].var == vars[i];
        for (int p = 0; p < g->f->n_size_vars; p++)
            ok |= g->f->size_vars[p] == vars[i];
        if (!ok)
            return false;
    }
    return true;
}

/* Merges a bound loop's extent into the launch extents (file comment). */
static void launch_extent(texi_cu *g, const tex_stmt *s)
{
    if (s->u.loop.for_kind != TEXI_FOR_THREAD)
        return;
    int tag = s->u.loop.thread_tag;
    tex_expr *e = s->u.loop.extent, *cur;
    int64_t a, b;
    if (tag < 0 || tag > 5) {
        texi_cu_fail(g, TEX_EUNAVAILABLE, "loop '%s' has an unknown thread tag %d",
                     s->u.loop.var->u.var.name, tag);
        return;
    }
    if (!host_computable(g, e)) {
        texi_cu_fail(g, TEX_EUNAVAILABLE,
                     "the extent of loop '%s' (bound to %s) depends on other loops",
                     s->u.loop.var->u.var.name, tag_index[tag]);
        return;
    }
    cur = g->launch[tag];
    if (!cur || texi_expr_equal(cur, e))
        g->launch[tag] = e;
    else if (texi_expr_is_int_const(cur, &a) && texi_expr_is_int_const(e, &b))
        g->launch[tag] = a >= b ? cur : e;
    else
        texi_cu_fail(g, TEX_EUNAVAILABLE,
                     "loops bound to %s have different non-constant extents in one kernel",
                     tag_index[tag]);
}

/* The top-level nests of s (file comment). */
static void collect_nests(texi_cu *g, const tex_stmt *s, const tex_stmt **nests, int *n)
{
    if (s->kind == TEXI_STMT_SEQ) {
        for (int i = 0; i < s->u.seq.n; i++)
            collect_nests(g, s->u.seq.items[i], nests, n);
        return;
    }
    if (s->kind == TEXI_STMT_ATTR && strcmp(s->u.attr.key, "assert") != 0) {
        collect_nests(g, s->u.attr.body, nests, n);
        return;
    }
    if (s->kind == TEXI_STMT_ALLOCATE && s->u.alloc.buf->scope == TEXI_SCOPE_GLOBAL &&
        has_thread_loop(s->u.alloc.body)) {
        texi_cu_fail(g, TEX_EUNAVAILABLE,
                     "global temporary '%s' between kernels is not supported yet",
                     s->u.alloc.buf->name);
        return;
    }
    if (*n == MAX_KERNELS)
        texi_cu_fail(g, TEX_EUNAVAILABLE, "more than %d kernels", MAX_KERNELS);
    else
        nests[(*n)++] = s;
}

/* A scalar argument; records in *conv the local of a non-i64 one. */
static void scalar_param(texi_cu *g, texi_sb *proto, texi_sb *conv, const void *argkey,
                         tex_expr *var)
{
    const char *name = name_for(g, var, var->u.var.name);
    if (var->dtype == TEX_I64) {
        texi_sb_printf(proto, "int64_t %s", name);
        return;
    }
    char arg[300];
    snprintf(arg, sizeof arg, "%.250s_arg", name);
    const char *an = name_for(g, argkey, arg);
    texi_sb_printf(proto, "int64_t %s", an);
    texi_sb_printf(conv, "    const %s %s = (%s)%s;\n", texi_cu_value_type(var->dtype), name,
                   texi_cu_value_type(var->dtype), an);
}

/* Binds the parameters' names; the parameter list and the scalar locals. */
static void parameters(texi_cu *g, texi_sb *proto, texi_sb *conv)
{
    const tex_func *f = g->f;
    for (int i = 0; i < f->n_params; i++) {
        const texi_param *p = &f->params[i];
        texi_sb_puts(proto, i ? ", " : "");
        if (p->kind == TEX_ARG_VAR) {
            scalar_param(g, proto, conv, p, p->var);
            continue;
        }
        const void *key = texi_buffer_key(p->buf);
        const char *name = name_for(g, key, p->tensor->name);
        bool written = texi_stmt_stores_to(f->body, p->buf);
        texi_sb_printf(proto, "%s%s *__restrict__ %s", written ? "" : "const ",
                       texi_cu_storage_type(p->buf->dtype), name);
    }
    for (int i = 0; i < f->n_size_vars; i++) {
        texi_sb_puts(proto, f->n_params + i ? ", " : "");
        scalar_param(g, proto, conv, &f->size_vars[i], f->size_vars[i]);
    }
}

static bool any_bound(const texi_cu *g)
{
    for (int t = 0; t < 6; t++)
        if (g->launch[t])
            return true;
    return false;
}

/* "grid (x, y, z), block (x, y, z)" of the current launch extents. */
static void plan_line(texi_cu *g, texi_sb *plan, int k)
{
    texi_sb_printf(plan, " *   %s_kernel%d: ", g->f->name, k);
    for (int t = 0; t < 6; t++) {
        texi_sb_puts(plan, t == 0 ? "grid (" : t == 3 ? "), block (" : ", ");
        texi_sb tmp;
        texi_sb_init(&tmp);
        if (g->launch[t])
            texi_expr_print(&tmp, g->launch[t]);
        for (const char *c = tmp.buf && g->launch[t] ? tmp.buf : "1"; *c; c++)
            if (!(c[0] == '*' && c[1] == '/') && *c != '\n')
                texi_sb_putc(plan, *c);
        texi_sb_fini(&tmp);
    }
    texi_sb_puts(plan, any_bound(g) ? ")\n" : ")  (no thread binding: one thread)\n");
}

/* One kernel for nest number k; its plan line goes to plan. */
static void emit_kernel(texi_cu *g, texi_sb *out, texi_sb *plan, const tex_stmt *nest, int k,
                        const char *params, const char *conv)
{
    memset(g->launch, 0, sizeof g->launch);
    each_loop(nest, launch_extent, g);
    if (g->rc)
        return;
    plan_line(g, plan, k);
    int64_t threads = 1, e;
    for (int t = 3; t < 6; t++)
        if (g->launch[t])
            threads = texi_expr_is_int_const(g->launch[t], &e) && threads > 0 ? threads * e : -1;
    texi_sb_puts(out, "extern \"C\" __global__ void ");
    if (threads > 0)
        texi_sb_printf(out, "__launch_bounds__(%lld) ", (long long)threads);
    texi_sb_printf(out, "%s_kernel%d(%s)\n{\n%s", g->f->name, k, params, conv);
    g->indent = 1;
    emit_stmt(g, out, nest);
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
    texi_sb_puts(out, kernels);
}

char *texi_cuda_emit(const tex_func *f, const texi_device_module *m)
{
    (void)m; /* bridging: the emitter still splits kernels itself */
    if (!f || !f->ctx || !f->body)
        return NULL;
    texi_cu g = {.ctx = f->ctx, .f = f};
    texi_cnames_init(&g.names, reserved, sizeof reserved / sizeof reserved[0]);
    texi_sb params, conv, plan, kernels, out;
    texi_sb_init(&params);
    texi_sb_init(&conv);
    texi_sb_init(&plan);
    texi_sb_init(&kernels);
    texi_sb_init(&out);
    parameters(&g, &params, &conv);
    const tex_stmt *nests[MAX_KERNELS];
    int n = 0;
    collect_nests(&g, f->body, nests, &n);
    for (int k = 0; k < n && !g.rc; k++)
        emit_kernel(&g, &kernels, &plan, nests[k], k, params.buf ? params.buf : "",
                    conv.buf ? conv.buf : "");
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
