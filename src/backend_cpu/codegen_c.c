/*
 * C99 + OpenMP source of a lowered function (texi_cpu_emit) and the header
 * of its entry point (texi_cpu_emit_header). Expressions and the prologue's
 * helpers live in codegen_expr.c.
 *
 * The source is: a few standard includes, the static inline helpers the
 * body uses (only those), and
 *     int NAME(T0 *restrict A, const T1 *restrict B, ..., int64_t n)
 * with backend.h's ABI: one pointer per tensor parameter (storage type;
 * const when the body never stores to it; restrict on all), int64_t per size
 * VAR parameter, the storage type of its dtype per other VAR parameter
 * (float alpha, int8_t lo; f16/bf16 as uint16_t bits and bool as uint8_t,
 * decoded into a local), then int64_t per size variable that is not a
 * parameter. Every
 * variable and buffer gets a unique C identifier derived from its name
 * ("A.shared" -> A_shared; keywords, libc names and the helpers' tex_ prefix
 * avoided; collisions get _1, _2 ...). It returns 0, -1 when an "assert"
 * ATTR's condition fails (the runtime reports TEX_EINVAL "a runtime check
 * failed"), -2 when a heap temporary cannot be allocated (TEX_ENOMEM).
 *
 * Statements: FOR loops over the loop variable's own type; PARALLEL loops get
 * `#pragma omp parallel for` (num_threads when fixed), except inside another
 * parallel loop, where they run serially; VECTORIZED loops get `#pragma omp
 * simd` when every store of the body writes one index, linear in the loop
 * variable with a nonzero coefficient, and every load of a stored buffer
 * reads that same index (otherwise a loop-carried dependence is possible and
 * the loop is left to the auto-vectorizer); UNROLLED loops and
 * "pragma_unroll" ATTRs get `#pragma GCC unroll N` (constant N <= 64);
 * THREAD loops run serially, and a BARRIER makes the build fail with
 * TEX_EUNAVAILABLE. ALLOCATE: a constant size of at most 16 KiB is a 64-byte
 * aligned stack array, anything else 64-byte aligned heap memory checked for
 * NULL and freed at the end of its scope. Inside a parallel region or a heap
 * scope, failures cannot return directly (OpenMP forbids leaving the region;
 * memory would leak), so they set tex_rc and skip the failed scope; the
 * function checks tex_rc where returning is safe and at its end.
 *
 * Tensor intrinsics (docs/api.md, rule 10): the c_source of each distinct
 * intrinsic the body calls is pasted as-is before the entry point, once, in
 * order of first call (it may define static functions and include headers);
 * an INTRIN is the call `fn((const T *)(A + off), (int64_t)(s0), ..., C +
 * off, ...)`, inputs then the output (RESET: the output only). An intrinsic
 * without C source (a "cuda." built-in) fails with TEX_EUNAVAILABLE.
 *
 * Stack temporaries switch off two GCC warnings: -Wmaybe-uninitialized
 * (guarded writes cover every read, which GCC cannot always see) and
 * -Wunused-but-set-variable (a schedule may leave a temporary that is
 * written and never read).
 */
#include "backend_cpu/codegen_c.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK_MAX_BYTES 16384
#define UNROLL_MAX 64

/* Identifiers the generated code may not redefine. */
static const char *const reserved[] = {
    "auto",    "break",    "case",     "char",     "const",          "continue", "default",
    "do",      "double",   "else",     "enum",     "extern",         "float",    "for",
    "goto",    "if",       "inline",   "int",      "long",           "register", "restrict",
    "return",  "short",    "signed",   "sizeof",   "static",         "struct",   "switch",
    "typedef", "union",    "unsigned", "void",     "volatile",       "while",    "asm",
    "typeof",  "bool",     "true",     "false",    "int8_t",         "int16_t",  "int32_t",
    "int64_t", "uint8_t",  "uint16_t", "uint32_t", "uint64_t",       "size_t",   "ptrdiff_t",
    "NULL",    "INFINITY", "NAN",      "free",     "posix_memalign", "memcpy",   "exp",
    "expf",    "log",      "logf",     "sqrt",     "sqrtf",          "tanh",     "tanhf",
    "erf",     "erff",     "fabs",     "fabsf",    "floor",          "floorf",   "ceil",
    "ceilf",   "round",    "roundf",   "sin",      "sinf",           "cos",      "cosf",
    "pow",     "powf",     "fma",      "fmaf",     "main",           "errno",    "signbit",
    "isnan",   "isinf"};

void texi_cg_fail(texi_cg *g, int code, const char *fmt, ...)
{
    if (g->rc)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    g->rc = texi_error(g->ctx, code, "tex_build: function '%s': %s", g->f->name, msg);
}

/* ------------------------------------------------------------------ names */

/* Binds key to a fresh name; returns it (NULL on ENOMEM). */
static const char *bind_name(texi_cg *g, const void *key, const char *name)
{
    return texi_cnames_bind(&g->names, key, name);
}

static texi_cname *find_name(texi_cg *g, const void *key)
{
    return texi_cnames_find(&g->names, key);
}

/* The name of key: its existing binding (a re-bound loop or LET variable
 * keeps it), else a new one. NULL on ENOMEM (recorded). */
static const char *name_for(texi_cg *g, const void *key, const char *name)
{
    texi_cname *nm = find_name(g, key);
    const char *c = nm ? nm->cname : bind_name(g, key, name);
    if (!c)
        texi_cg_fail(g, TEX_ENOMEM, "out of memory (names)");
    if ((nm = find_name(g, key)))
        nm->used = false;
    return c ? c : "?";
}

const char *texi_cg_lookup(texi_cg *g, const void *key, const char *name)
{
    texi_cname *nm = find_name(g, key);
    if (!nm) {
        texi_cg_fail(g, TEX_EINTERNAL, "'%s' is used but not bound", name ? name : "?");
        return "?";
    }
    nm->used = true;
    return nm->cname;
}

/* ----------------------------------------------------------------- ranges */

/* Adds var's range for the proofs of codegen_expr.c; false on ENOMEM (recorded). */
static bool push_range(texi_cg *g, tex_expr *var, tex_expr *min, tex_expr *extent)
{
    if (g->n_ranges == g->cap_ranges) {
        int cap = g->cap_ranges ? 2 * g->cap_ranges : 16;
        texi_range *nr = realloc(g->ranges, sizeof *nr * (size_t)cap);
        if (!nr) {
            texi_cg_fail(g, TEX_ENOMEM, "out of memory (ranges)");
            return false;
        }
        g->ranges = nr;
        g->cap_ranges = cap;
    }
    g->ranges[g->n_ranges++] = (texi_range){var, min, extent};
    return true;
}

/* ------------------------------------------------------------- statements */

static void line(texi_cg *g, texi_sb *sb, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void indent(texi_cg *g, texi_sb *sb)
{
    for (int i = 0; i < g->indent; i++)
        texi_sb_puts(sb, "    ");
}

/* One indented line. */
static void line(texi_cg *g, texi_sb *sb, const char *fmt, ...)
{
    indent(g, sb);
    va_list ap;
    va_start(ap, fmt);
    texi_sb_vprintf(sb, fmt, ap);
    va_end(ap);
    texi_sb_putc(sb, '\n');
}

/* Comment text: no comment terminator, no newline. */
static void comment_text(texi_sb *sb, const char *s)
{
    for (; *s; s++) {
        if (s[0] == '*' && s[1] == '/')
            texi_sb_puts(sb, "* ");
        else
            texi_sb_putc(sb, *s == '\n' ? ' ' : *s);
    }
}

static void expr_comment(texi_cg *g, texi_sb *sb, const char *what, const tex_expr *e)
{
    texi_sb tmp;
    texi_sb_init(&tmp);
    texi_expr_print(&tmp, e);
    indent(g, sb);
    texi_sb_printf(sb, "/* %s: ", what);
    comment_text(sb, tmp.oom || !tmp.buf ? "?" : tmp.buf);
    texi_sb_puts(sb, " */\n");
    texi_sb_fini(&tmp);
}

static void emit_stmt(texi_cg *g, texi_sb *sb, const tex_stmt *s, int unroll);

/* Sets tex_rc = code (atomically inside a parallel region). */
static void set_rc(texi_cg *g, texi_sb *sb, int code)
{
    g->uses_rc = true;
    if (g->par_depth)
        line(g, sb, "#pragma omp atomic write");
    line(g, sb, "tex_rc = %d;", code);
}

/* After a scope that may have failed: return where that is safe. */
static void check_rc(texi_cg *g, texi_sb *sb)
{
    if (!g->par_depth && !g->heap_depth) {
        g->rc_check_at[0] = sb->len;
        line(g, sb, "if (tex_rc != 0)\n%*sreturn tex_rc;", 4 * g->indent + 4, "");
        g->rc_check_at[1] = sb->len;
    }
}

static void emit_block(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    g->indent++;
    emit_stmt(g, sb, s, 0);
    g->indent--;
}

/* ---------------------------------------------------------------- loops */

typedef struct {
    const tex_expr *v;
    bool found;
} var_probe;

static bool probe_var(tex_expr *e, void *ud)
{
    var_probe *p = ud;
    p->found |= e == p->v;
    return !p->found;
}

static bool mentions(tex_expr *e, const tex_expr *v)
{
    var_probe p = {v, false};
    texi_expr_visit(e, probe_var, &p);
    return p.found;
}

/* Whether e is linear in v (sums, products by constants, integer casts);
 * *coef receives v's coefficient. */
static bool linear_in(tex_expr *e, const tex_expr *v, int64_t *coef)
{
    int64_t a, b, k;
    *coef = 0;
    switch (e->kind) {
    case TEXI_EXPR_VAR:
        *coef = e == v;
        return true;
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
        if (!linear_in(e->u.bin.a, v, &a) || !linear_in(e->u.bin.b, v, &b))
            return false;
        *coef = e->kind == TEXI_EXPR_ADD ? a + b : a - b;
        return true;
    case TEXI_EXPR_MUL:
        if (texi_expr_is_int_const(e->u.bin.b, &k) && linear_in(e->u.bin.a, v, &a)) {
            *coef = a * k;
            return true;
        }
        if (texi_expr_is_int_const(e->u.bin.a, &k) && linear_in(e->u.bin.b, v, &b)) {
            *coef = b * k;
            return true;
        }
        break;
    case TEXI_EXPR_CAST:
        if (!texi_dtype_is_float(e->dtype))
            return linear_in(e->u.un.a, v, coef);
        break;
    default:
        break;
    }
    return !mentions(e, v);
}

/* The stores of a vector loop's body: one index per buffer. */
typedef struct {
    const tex_expr *v;
    const texi_buffer *bufs[32];
    tex_expr *idx[32];
    int n;
    bool unsafe;
} simd_check;

static const void *store_key(const texi_buffer *b)
{
    return b->data ? (const void *)b->data : (const void *)b;
}

static int find_store(const simd_check *sc, const texi_buffer *b)
{
    for (int i = 0; i < sc->n; i++)
        if (store_key(sc->bufs[i]) == store_key(b))
            return i;
    return -1;
}

static void collect_stores(simd_check *sc, const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_STORE: {
        int64_t c;
        int k = find_store(sc, s->u.store.buf);
        if (!linear_in(s->u.store.index, sc->v, &c) || c == 0)
            sc->unsafe = true;
        else if (k >= 0 && !texi_expr_equal(sc->idx[k], s->u.store.index))
            sc->unsafe = true;
        else if (k < 0 && sc->n < 32) {
            sc->bufs[sc->n] = s->u.store.buf;
            sc->idx[sc->n++] = s->u.store.index;
        } else if (k < 0)
            sc->unsafe = true;
        return;
    }
    case TEXI_STMT_IF:
        collect_stores(sc, s->u.ifs.then_s);
        if (s->u.ifs.else_s)
            collect_stores(sc, s->u.ifs.else_s);
        return;
    case TEXI_STMT_LET:
        collect_stores(sc, s->u.let.body);
        return;
    case TEXI_STMT_ATTR:
        collect_stores(sc, s->u.attr.body);
        return;
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            collect_stores(sc, s->u.seq.items[i]);
        return;
    case TEXI_STMT_EVALUATE:
        return;
    default:
        sc->unsafe = true;
        return; /* loops, allocations, barriers */
    }
}

static bool probe_load(tex_expr *e, void *ud)
{
    simd_check *sc = ud;
    if (e->kind == TEXI_EXPR_LOAD) {
        int k = find_store(sc, e->u.load.buf);
        if (k >= 0 && !texi_expr_equal(sc->idx[k], e->u.load.index))
            sc->unsafe = true;
    }
    return !sc->unsafe;
}

static void check_expr(simd_check *sc, tex_expr *e)
{
    if (e && !sc->unsafe)
        texi_expr_visit(e, probe_load, sc);
}

/* Every load of a stored buffer must read the stored index. */
static void check_loads(simd_check *sc, const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_STORE:
        check_expr(sc, s->u.store.index);
        check_expr(sc, s->u.store.value);
        return;
    case TEXI_STMT_IF:
        check_expr(sc, s->u.ifs.cond);
        check_loads(sc, s->u.ifs.then_s);
        if (s->u.ifs.else_s)
            check_loads(sc, s->u.ifs.else_s);
        return;
    case TEXI_STMT_LET:
        check_expr(sc, s->u.let.value);
        check_loads(sc, s->u.let.body);
        return;
    case TEXI_STMT_ATTR:
        check_expr(sc, s->u.attr.value);
        check_loads(sc, s->u.attr.body);
        return;
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            check_loads(sc, s->u.seq.items[i]);
        return;
    case TEXI_STMT_EVALUATE:
        check_expr(sc, s->u.eval.value);
        return;
    default:
        sc->unsafe = true;
        return;
    }
}

/* Whether `#pragma omp simd` is safe for the vector loop s (essay). */
static bool simd_safe(const tex_stmt *s)
{
    simd_check sc = {.v = s->u.loop.var};
    collect_stores(&sc, s->u.loop.body);
    if (!sc.unsafe)
        check_loads(&sc, s->u.loop.body);
    return !sc.unsafe;
}

/* The buffers a top-level nest stores to, as a comment. */
static void stored_names(texi_cg *g, const tex_stmt *s, texi_sb *out, int *n)
{
    switch (s->kind) {
    case TEXI_STMT_STORE: {
        const char *nm = find_name(g, texi_buffer_key(s->u.store.buf))
                             ? find_name(g, texi_buffer_key(s->u.store.buf))->cname
                             : s->u.store.buf->name;
        if (out->buf && strstr(out->buf, nm))
            return; /* approximate dedupe: enough for a comment */
        texi_sb_printf(out, "%s%s", (*n)++ ? ", " : "", nm);
        return;
    }
    case TEXI_STMT_FOR:
        stored_names(g, s->u.loop.body, out, n);
        return;
    case TEXI_STMT_ALLOCATE:
        stored_names(g, s->u.alloc.body, out, n);
        return;
    case TEXI_STMT_IF:
        stored_names(g, s->u.ifs.then_s, out, n);
        if (s->u.ifs.else_s)
            stored_names(g, s->u.ifs.else_s, out, n);
        return;
    case TEXI_STMT_LET:
        stored_names(g, s->u.let.body, out, n);
        return;
    case TEXI_STMT_ATTR:
        stored_names(g, s->u.attr.body, out, n);
        return;
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            stored_names(g, s->u.seq.items[i], out, n);
        return;
    default:
        return;
    }
}

static void nest_comment(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    texi_sb names;
    texi_sb_init(&names);
    int n = 0;
    stored_names(g, s, &names, &n);
    if (n && names.buf && !names.oom) {
        indent(g, sb);
        texi_sb_puts(sb, "/* computes ");
        comment_text(sb, names.buf);
        texi_sb_puts(sb, " */\n");
    }
    texi_sb_fini(&names);
}

/* The pragma line of loop s (or a comment saying why there is none). */
static void loop_pragma(texi_cg *g, texi_sb *sb, const tex_stmt *s, int unroll, bool *parallel)
{
    *parallel = false;
    switch (s->u.loop.for_kind) {
    case TEXI_FOR_SERIAL:
        break;
    case TEXI_FOR_PARALLEL:
        if (g->par_depth) {
            line(g, sb, "/* parallel loop inside a parallel region: serial */");
            break;
        }
        *parallel = true;
        if (g->threads > 0)
            line(g, sb, "#pragma omp parallel for num_threads(%d)", g->threads);
        else
            line(g, sb, "#pragma omp parallel for");
        break;
    case TEXI_FOR_VECTORIZED:
        if (simd_safe(s))
            line(g, sb, "#pragma omp simd");
        else
            line(g, sb,
                 "/* vectorized: a loop-carried dependence is possible, "
                 "left to the auto-vectorizer */");
        break;
    case TEXI_FOR_UNROLLED: {
        int64_t n;
        if (texi_expr_is_int_const(s->u.loop.extent, &n) && n >= 1 && n <= UNROLL_MAX)
            unroll = (int)n;
        break;
    }
    case TEXI_FOR_THREAD:
        line(g, sb, "/* thread-bound loop: serial on the CPU */");
        break;
    }
    if (unroll > 0)
        line(g, sb, "#pragma GCC unroll %d", unroll);
}

static void emit_for(texi_cg *g, texi_sb *sb, const tex_stmt *s, int unroll)
{
    tex_expr *var = s->u.loop.var;
    bool parallel;
    if (g->loop_depth == 0)
        nest_comment(g, sb, s);
    loop_pragma(g, sb, s, unroll, &parallel);
    const char *name = name_for(g, var, var->u.var.name);
    indent(g, sb);
    texi_sb_printf(sb, "for (%s %s = ", texi_cg_value_type(var->dtype), name);
    texi_cg_expr(g, sb, s->u.loop.min, TEXI_CG_P_TOP, true);
    texi_sb_printf(sb, "; %s < ", name);
    if (!texi_expr_is_int_const(s->u.loop.min, NULL) || s->u.loop.min->u.i != 0) {
        texi_cg_expr(g, sb, s->u.loop.min, TEXI_CG_P_ADD, true);
        texi_sb_puts(sb, " + ");
        texi_cg_expr(g, sb, s->u.loop.extent, TEXI_CG_P_ADD + 1, true);
    } else {
        texi_cg_expr(g, sb, s->u.loop.extent, TEXI_CG_P_REL + 1, true);
    }
    texi_sb_printf(sb, "; ++%s) {\n", name);
    const char *saved_thread = g->thread_loop;
    if (s->u.loop.for_kind == TEXI_FOR_THREAD)
        g->thread_loop = name;
    bool ranged = push_range(g, var, s->u.loop.min, s->u.loop.extent);
    g->par_depth += parallel;
    g->loop_depth++;
    emit_block(g, sb, s->u.loop.body);
    g->loop_depth--;
    g->par_depth -= parallel;
    g->n_ranges -= ranged;
    g->thread_loop = saved_thread;
    line(g, sb, "}");
}

/* ----------------------------------------------------------- allocations */

/* The constant element count of b, or -1. */
static int64_t const_elems(const texi_buffer *b)
{
    int64_t n = 1, d;
    for (int i = 0; i < b->ndim; i++) {
        if (!texi_expr_is_int_const(b->shape[i], &d) || d < 0 || (d && n > INT64_MAX / d))
            return -1;
        n *= d;
    }
    return n;
}

static void emit_heap_alloc(texi_cg *g, texi_sb *sb, const tex_stmt *s, const char *name)
{
    const texi_buffer *b = s->u.alloc.buf;
    const char *t = texi_cg_storage_type(b->dtype);
    g->helpers |= TEXI_CG_H_ALLOC;
    line(g, sb, "{");
    g->indent++;
    indent(g, sb);
    texi_sb_printf(sb, "%s *%s = (%s *)tex_alloc(", t, name, t);
    for (int i = 0; i < b->ndim; i++) {
        texi_sb_puts(sb, i ? " * (int64_t)" : "(int64_t)");
        texi_cg_expr(g, sb, b->shape[i], TEXI_CG_P_UNARY, true);
    }
    if (b->ndim == 0)
        texi_sb_puts(sb, "1");
    texi_sb_printf(sb, ", sizeof(%s));\n", t);
    line(g, sb, "if (%s) {", name);
    g->heap_depth++;
    emit_block(g, sb, s->u.alloc.body);
    g->heap_depth--;
    g->indent++;
    line(g, sb, "free(%s);", name);
    g->indent--;
    line(g, sb, "} else {");
    g->indent++;
    set_rc(g, sb, -2);
    g->indent--;
    line(g, sb, "}");
    g->indent--;
    line(g, sb, "}");
    check_rc(g, sb);
}

static void emit_allocate(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    const texi_buffer *b = s->u.alloc.buf;
    const char *name = name_for(g, texi_buffer_key(b), b->name);
    int64_t n = const_elems(b);
    int64_t bytes = tex_dtype_bytes(b->dtype);
    if (n < 0 || n > STACK_MAX_BYTES / bytes) {
        emit_heap_alloc(g, sb, s, name);
        return;
    }
    g->stack_arrays = true;
    line(g, sb, "{");
    g->indent++;
    line(g, sb, "%s %s[%lld] __attribute__((aligned(64)));", texi_cg_storage_type(b->dtype), name,
         (long long)(n ? n : 1));
    emit_stmt(g, sb, s->u.alloc.body, 0);
    g->indent--;
    line(g, sb, "}");
}

/* ---------------------------------------------------------- other nodes */

static void emit_assert(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    expr_comment(g, sb, "runtime check (fails with TEX_EINVAL)", s->u.attr.value);
    indent(g, sb);
    texi_sb_puts(sb, "if (!(");
    texi_cg_expr(g, sb, s->u.attr.value, TEXI_CG_P_TOP, true);
    texi_sb_puts(sb, ")) {\n");
    g->indent++;
    if (!g->par_depth && !g->heap_depth) {
        line(g, sb, "return -1;");
        g->indent--;
        line(g, sb, "}");
        emit_stmt(g, sb, s->u.attr.body, 0);
        return;
    }
    set_rc(g, sb, -1);
    g->indent--;
    line(g, sb, "} else {");
    emit_block(g, sb, s->u.attr.body);
    line(g, sb, "}");
}

/* ATTR "atomic" (tex_atomic): a sum or product of a plain scalar type is
 * one OpenMP atomic update; max, min and the types stored through
 * conversions (f16, bf16, bool) update inside a named critical section. */
static void emit_atomic(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    texi_atomic_update u;
    if (texi_atomic_parts(g->ctx, s, &u) < 0) {
        texi_cg_fail(g, TEX_EINTERNAL, "%s", tex_errmsg(g->ctx));
        return;
    }
    tex_dtype t = u.store->u.store.buf->dtype;
    bool plain = t != TEX_F16 && t != TEX_BF16 && t != TEX_BOOL;
    if (!plain || u.op == TEXI_REDUCE_MAX || u.op == TEXI_REDUCE_MIN) {
        line(g, sb, "#pragma omp critical(tex_atomic)");
        emit_stmt(g, sb, u.store, 0);
        return;
    }
    const texi_buffer *b = u.store->u.store.buf;
    line(g, sb, "#pragma omp atomic update");
    indent(g, sb);
    texi_sb_printf(sb, "%s[", texi_cg_lookup(g, texi_buffer_key(b), b->name));
    texi_cg_expr(g, sb, u.store->u.store.index, TEXI_CG_P_TOP, true);
    texi_sb_puts(sb, u.op == TEXI_REDUCE_SUM ? "] += " : "] *= ");
    texi_cg_store_value(g, sb, u.delta, t);
    texi_sb_puts(sb, ";\n");
}

static void emit_attr(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    enum texi_attr_key key = s->u.attr.id;
    int64_t n;
    if (key == TEXI_ATTR_ATOMIC) {
        emit_atomic(g, sb, s);
        return;
    }
    if (key == TEXI_ATTR_ASSERT && s->u.attr.value) {
        emit_assert(g, sb, s);
        return;
    }
    if (key == TEXI_ATTR_PRAGMA_UNROLL && s->u.attr.value &&
        texi_expr_is_int_const(s->u.attr.value, &n) && n >= 1 && n <= UNROLL_MAX) {
        emit_stmt(g, sb, s->u.attr.body, (int)n);
        return;
    }
    if (key == TEXI_ATTR_VECTORIZE_FAILED || key == TEXI_ATTR_CROSS_THREAD_REDUCTION) {
        const char *why = texi_vector_reason_text(s);
        indent(g, sb);
        texi_sb_puts(sb, "/* ");
        comment_text(sb, s->u.attr.key);
        if (why) {
            texi_sb_putc(sb, '(');
            comment_text(sb, why);
            texi_sb_putc(sb, ')');
        }
        texi_sb_puts(sb, " */\n");
    }
    emit_stmt(g, sb, s->u.attr.body, 0);
}

static void emit_let(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    tex_expr *var = s->u.let.var;
    line(g, sb, "{");
    g->indent++;
    indent(g, sb);
    texi_sb_printf(sb, "const %s ", texi_cg_value_type(var->dtype));
    texi_sb tmp;
    texi_sb_init(&tmp); /* the value first: it may use an outer binding of var */
    texi_cg_expr(g, &tmp, s->u.let.value, TEXI_CG_P_TOP, !texi_dtype_is_float(var->dtype));
    const char *name = name_for(g, var, var->u.var.name);
    texi_sb_printf(sb, "%s = %s;\n", name, tmp.buf ? tmp.buf : "0");
    if (tmp.oom)
        texi_cg_fail(g, TEX_ENOMEM, "out of memory (source text)");
    texi_sb_fini(&tmp);
    bool intv = !texi_dtype_is_float(var->dtype);
    tex_expr *one = intv ? texi_int_imm(g->ctx, var->dtype, 1) : NULL;
    bool ranged = one && push_range(g, var, s->u.let.value, one);
    emit_stmt(g, sb, s->u.let.body, 0);
    g->n_ranges -= ranged;
    texi_cname *nm = find_name(g, var);
    if (nm && !nm->used)
        line(g, sb, "(void)%s;", name);
    g->indent--;
    line(g, sb, "}");
}

static void emit_if(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    indent(g, sb);
    texi_sb_puts(sb, "if (");
    texi_cg_expr(g, sb, s->u.ifs.cond, TEXI_CG_P_TOP, true);
    texi_sb_puts(sb, ") {\n");
    emit_block(g, sb, s->u.ifs.then_s);
    if (s->u.ifs.else_s) {
        line(g, sb, "} else {");
        emit_block(g, sb, s->u.ifs.else_s);
    }
    line(g, sb, "}");
}

static void emit_store(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    const texi_buffer *b = s->u.store.buf;
    indent(g, sb);
    texi_sb_printf(sb, "%s[", texi_cg_lookup(g, texi_buffer_key(b), b->name));
    texi_cg_expr(g, sb, s->u.store.index, TEXI_CG_P_TOP, true);
    texi_sb_puts(sb, "] = ");
    texi_cg_store_value(g, sb, s->u.store.value, b->dtype);
    texi_sb_puts(sb, ";\n");
}

/* One tile argument of an intrinsic call: pointer, then strides. */
static void emit_tile(texi_cg *g, texi_sb *sb, const texi_intrin_arg *a, bool input)
{
    const texi_buffer *b = a->buf;
    if (!b || !a->offset || !a->strides) {
        texi_cg_fail(g, TEX_EINTERNAL, "a tensor intrinsic's tile was not flattened");
        return;
    }
    if (input)
        texi_sb_printf(sb, "(const %s *)", texi_cg_storage_type(b->dtype));
    texi_sb_printf(sb, "(%s + (", texi_cg_lookup(g, texi_buffer_key(b), b->name));
    texi_cg_expr(g, sb, a->offset, TEXI_CG_P_TOP, true);
    texi_sb_puts(sb, "))");
    for (int j = 0; j < a->ndim; j++) {
        texi_sb_puts(sb, ", (int64_t)(");
        texi_cg_expr(g, sb, a->strides[j], TEXI_CG_P_TOP, true);
        texi_sb_putc(sb, ')');
    }
}

/* The intrinsic's source is C for the CPU (not a CUDA built-in's device code). */
static bool has_c_source(const tex_intrin *in)
{
    return in->c_source && !(in->builtin && strncmp(in->builtin, "cuda.", 5) == 0);
}

static void emit_intrin(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    const tex_intrin *in = s->u.intrin.intrin;
    const char *fn = in->fn[s->u.intrin.fn];
    if (!has_c_source(in) || !fn) {
        texi_cg_fail(g, TEX_EUNAVAILABLE,
                     "tensor intrinsic '%s' has no C %s for the CPU (a CUDA intrinsic needs the "
                     "\"cuda\" target)",
                     in->name, has_c_source(in) ? "function for this call" : "source");
        return;
    }
    indent(g, sb);
    texi_sb_printf(sb, "%s(", fn);
    for (int i = 0; i < s->u.intrin.n_args; i++) {
        texi_sb_puts(sb, i ? ", " : "");
        emit_tile(g, sb, &s->u.intrin.args[i], i < s->u.intrin.n_args - 1);
    }
    texi_sb_puts(sb, ");\n");
}

#define MAX_INTRINS 64

/* The sources of the intrinsics the body calls, each once. */
static void intrin_sources(texi_cg *g, texi_sb *out)
{
    const tex_intrin *list[MAX_INTRINS];
    int n = texi_stmt_intrins(g->f->body, list, MAX_INTRINS);
    if (n < 0)
        texi_cg_fail(g, TEX_EUNAVAILABLE, "more than %d distinct tensor intrinsics", MAX_INTRINS);
    for (int i = 0; i < n; i++)
        if (has_c_source(list[i]))
            texi_sb_printf(out, "/* tensor intrinsic '%s' */\n%s\n\n", list[i]->name,
                           list[i]->c_source);
}

static void emit_stmt(texi_cg *g, texi_sb *sb, const tex_stmt *s, int unroll)
{
    if (g->rc)
        return;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        emit_for(g, sb, s, unroll);
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
            emit_stmt(g, sb, s->u.seq.items[i], 0);
        return;
    case TEXI_STMT_EVALUATE:
        indent(g, sb);
        texi_sb_puts(sb, "(void)(");
        texi_cg_expr(g, sb, s->u.eval.value, TEXI_CG_P_TOP, false);
        texi_sb_puts(sb, ");\n");
        return;
    case TEXI_STMT_ATTR:
        emit_attr(g, sb, s);
        return;
    case TEXI_STMT_BARRIER:
        /* barrier fission (gpu_to_cpu.c) removed every barrier under a
         * thread loop before emission; one outside them has no meaning */
        texi_cg_fail(g, TEX_EINTERNAL, "a barrier outside barrier fission's reach%s%s",
                     g->thread_loop ? " in loop " : "", g->thread_loop ? g->thread_loop : "");
        return;
    case TEXI_STMT_INTRIN:
        emit_intrin(g, sb, s);
        return;
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    texi_cg_fail(g, TEX_EINTERNAL, "a '%s' statement cannot occur in a lowered function",
                 s->kind < TEXI_STMT_KIND_COUNT ? texi_stmt_kind_names[s->kind] : "?");
}

/* ------------------------------------------------------------ entry point */

/* The C type of a scalar argument: int64_t for a size, else the storage
 * type of var's dtype. */
static const char *arg_type(const tex_expr *var, bool size)
{
    return size ? "int64_t" : texi_cg_storage_type(var->dtype);
}

/* A scalar argument named after var when its C type is var's value type;
 * otherwise "<name>_arg", converted into a local by param_prologue. */
static void scalar_param(texi_cg *g, texi_sb *proto, const void *argkey, tex_expr *var, bool size)
{
    const char *name = name_for(g, var, var->u.var.name);
    const char *type = arg_type(var, size);
    if (strcmp(type, texi_cg_value_type(var->dtype)) == 0) {
        texi_sb_printf(proto, "%s %s", type, name);
        return;
    }
    if (!size && (var->dtype == TEX_F16 || var->dtype == TEX_BF16))
        g->helpers |= var->dtype == TEX_F16 ? TEXI_CG_H_F16 : TEXI_CG_H_BF16;
    size_t n = strlen(name) + 8;
    char *arg = malloc(n);
    if (!arg) {
        texi_cg_fail(g, TEX_ENOMEM, "out of memory (names)");
        return;
    }
    snprintf(arg, n, "%s_arg", name);
    texi_sb_printf(proto, "%s %s", type, name_for(g, argkey, arg));
    free(arg);
}

/* Binds every parameter's name and appends the prototype (no ';'). */
static void prototype(texi_cg *g, texi_sb *proto)
{
    const tex_func *f = g->f;
    texi_sb_printf(proto, "int %s(", f->name);
    for (int i = 0; i < f->n_params; i++) {
        const texi_param *p = &f->params[i];
        if (i)
            texi_sb_puts(proto, ", ");
        if (p->kind == TEX_ARG_VAR) {
            scalar_param(g, proto, p, p->var, p->size);
            continue;
        }
        const void *key = texi_buffer_key(p->buf);
        const char *name = name_for(g, key, p->tensor->name);
        bool written = texi_stmt_stores_to(f->body, p->buf);
        texi_sb_printf(proto, "%s%s *restrict %s", written ? "" : "const ",
                       texi_cg_storage_type(p->buf->dtype), name);
    }
    for (int i = 0; i < f->n_size_vars; i++) {
        texi_sb_puts(proto, f->n_params + i ? ", " : "");
        scalar_param(g, proto, &f->size_vars[i], f->size_vars[i], true);
    }
    if (f->n_params + f->n_size_vars == 0)
        texi_sb_puts(proto, "void");
    texi_sb_putc(proto, ')');
}

/* Whether name is one the generated code defines or uses itself. */
static bool name_clashes(const texi_cg *g, const char *name)
{
    if (texi_cnames_is_reserved(&g->names, name))
        return true;
    texi_sb all;
    texi_sb_init(&all);
    texi_cg_helpers(&all, ~0u);
    bool clash = false;
    for (const char *p = all.buf; p && (p = strstr(p, name)); p++) {
        size_t n = strlen(name);
        if (p > all.buf && !isalnum((unsigned char)p[-1]) && p[-1] != '_' && p[n] == '(')
            clash = true;
    }
    texi_sb_fini(&all);
    return clash || strcmp(name, "tex_rc") == 0;
}

static void cg_init(texi_cg *g, const tex_func *f, int threads)
{
    memset(g, 0, sizeof *g);
    g->ctx = f->ctx;
    g->f = f;
    g->threads = threads;
    texi_cnames_init(&g->names, reserved, sizeof reserved / sizeof reserved[0]);
}

static void cg_fini(texi_cg *g)
{
    texi_cnames_fini(&g->names);
    free(g->ranges);
}

/* Size variables are non-negative: [0, max of their type). */
static void size_ranges(texi_cg *g)
{
    for (int i = 0; i < g->f->n_size_vars; i++) {
        tex_expr *v = g->f->size_vars[i];
        int64_t hi = texi_dtype_bits(v->dtype) >= 64
                         ? INT64_MAX
                         : (int64_t)((1ull << (texi_dtype_bits(v->dtype) - 1)) - 1);
        tex_expr *zero = texi_int_imm(g->ctx, v->dtype, 0),
                 *ext = texi_int_imm(g->ctx, v->dtype, hi);
        if (!zero || !ext) {
            texi_cg_fail(g, TEX_ENOMEM, "out of memory (ranges)");
            return;
        }
        push_range(g, v, zero, ext);
    }
}

/* The local of a scalar whose argument has another C type (scalar_param):
 * halves decoded from their bits, bool tested, sizes cast from int64_t. */
static void scalar_local(texi_cg *g, texi_sb *sb, const tex_expr *var, bool size, const char *name,
                         const char *arg)
{
    const char *vt = texi_cg_value_type(var->dtype);
    if (!size && (var->dtype == TEX_F16 || var->dtype == TEX_BF16))
        line(g, sb, "const float %s = tex_%s_to_f32(%s);", name,
             var->dtype == TEX_F16 ? "f16" : "bf16", arg);
    else if (!size && var->dtype == TEX_BOOL)
        line(g, sb, "const int %s = %s != 0;", name, arg);
    else
        line(g, sb, "const %s %s = (%s)%s;", vt, name, vt, arg);
}

/* `(void)x;` for unused arguments and the locals of converted scalars. */
static void param_prologue(texi_cg *g, texi_sb *sb)
{
    const tex_func *f = g->f;
    for (int i = 0; i < f->n_params + f->n_size_vars; i++) {
        const texi_param *p = i < f->n_params ? &f->params[i] : NULL;
        tex_expr *var = p ? p->var : f->size_vars[i - f->n_params];
        const void *argkey = p ? (const void *)p : (const void *)&f->size_vars[i - f->n_params];
        texi_cname *nm =
            find_name(g, p && p->kind == TEX_ARG_TENSOR ? texi_buffer_key(p->buf) : var);
        texi_cname *arg = find_name(g, argkey);
        if (!nm)
            continue;
        if (arg && nm->used)
            scalar_local(g, sb, var, !p || p->size, nm->cname, arg->cname);
        else if (!nm->used)
            line(g, sb, "(void)%s;", arg ? arg->cname : nm->cname);
    }
}

static void assemble(texi_cg *g, texi_sb *out, const char *proto, const char *body)
{
    texi_sb_printf(out, "/* Generated by tex: function '%s' (C99 + OpenMP). */\n", g->f->name);
    if (g->helpers & TEXI_CG_H_ALLOC)
        texi_sb_puts(out, "#ifndef _POSIX_C_SOURCE\n#define _POSIX_C_SOURCE 200112L\n#endif\n");
    texi_sb_puts(out, "#include <stdint.h>\n#include <stddef.h>\n#include <math.h>\n"
                      "#include <string.h>\n#include <stdlib.h>\n\n");
    if (g->stack_arrays) /* see the essay */
        texi_sb_puts(out, "#if defined(__GNUC__) && !defined(__clang__)\n"
                          "#pragma GCC diagnostic ignored \"-Wmaybe-uninitialized\"\n"
                          "#pragma GCC diagnostic ignored \"-Wunused-but-set-variable\"\n"
                          "#endif\n\n");
    texi_cg_helpers(out, g->helpers);
    intrin_sources(g, out);
    texi_sb_printf(out, "%s\n{\n", proto);
    g->indent = 1;
    param_prologue(g, out);
    if (g->uses_rc)
        line(g, out, "int tex_rc = 0;");
    /* A check of tex_rc that ends the body would only precede `return tex_rc`. */
    size_t len = strlen(body);
    size_t from = g->rc_check_at[0];
    bool check_last = g->uses_rc && g->rc_check_at[1] == len && from < len &&
                      strncmp(body + from + strspn(body + from, " "), "if (tex_rc != 0)", 16) == 0;
    texi_sb_printf(out, "%.*s", (int)(check_last ? from : len), body);
    line(g, out, g->uses_rc ? "return tex_rc;" : "return 0;");
    texi_sb_puts(out, "}\n");
}

char *texi_cpu_emit(const tex_func *f, int threads)
{
    if (!f || !f->ctx || !f->body)
        return NULL;
    texi_cg g;
    cg_init(&g, f, threads);
    if (name_clashes(&g, f->name))
        texi_cg_fail(&g, TEX_EINVAL, "the name is reserved in the generated C code");
    texi_sb proto, body, out;
    texi_sb_init(&proto);
    texi_sb_init(&body);
    texi_sb_init(&out);
    if (!g.rc && bind_name(&g, f, f->name) == NULL)
        texi_cg_fail(&g, TEX_ENOMEM, "out of memory (names)");
    prototype(&g, &proto);
    size_ranges(&g);
    g.indent = 1;
    emit_stmt(&g, &body, f->body, 0);
    if (!g.rc && !proto.oom && !body.oom)
        assemble(&g, &out, proto.buf, body.buf ? body.buf : "");
    char *text = g.rc ? NULL : texi_sb_take(&out);
    if (!g.rc && !text)
        texi_error(f->ctx, TEX_ENOMEM, "tex_build: function '%s': out of memory (source text)",
                   f->name);
    texi_sb_fini(&proto);
    texi_sb_fini(&body);
    texi_sb_fini(&out);
    cg_fini(&g);
    return text;
}

/* One comment line per parameter: name, dtype, shape, role. */
static void param_comments(texi_cg *g, texi_sb *sb)
{
    const tex_func *f = g->f;
    for (int i = 0; i < f->n_params; i++) {
        const texi_param *p = &f->params[i];
        texi_sb_puts(sb, " *   ");
        if (p->kind == TEX_ARG_VAR) {
            tex_dtype t = p->var->dtype;
            comment_text(sb, p->var->u.var.name);
            if (p->size)
                texi_sb_printf(sb, ": size %s as int64_t, must match the tensors' shapes\n",
                               tex_dtype_name(t));
            else
                texi_sb_printf(sb, ": scalar %s%s\n", tex_dtype_name(t),
                               t == TEX_BOOL                   ? " (0 or 1)"
                               : t == TEX_F16 || t == TEX_BF16 ? " (its bits)"
                                                               : "");
            continue;
        }
        texi_sb tmp;
        texi_sb_init(&tmp);
        for (int d = 0; d < p->tensor->ndim; d++) {
            texi_sb_puts(&tmp, d ? ", " : "");
            texi_expr_print(&tmp, p->tensor->shape[d]);
        }
        comment_text(sb, p->tensor->name);
        texi_sb_printf(sb, ": tensor %s [", tex_dtype_name(p->buf->dtype));
        comment_text(sb, tmp.buf && !tmp.oom ? tmp.buf : "");
        texi_sb_printf(sb, "]%s\n", texi_stmt_stores_to(f->body, p->buf) ? ", written" : "");
        texi_sb_fini(&tmp);
    }
    for (int i = 0; i < f->n_size_vars; i++) {
        texi_sb_puts(sb, " *   ");
        comment_text(sb, f->size_vars[i]->u.var.name);
        texi_sb_printf(sb, ": size variable (%s), must match the tensors' shapes\n",
                       tex_dtype_name(f->size_vars[i]->dtype));
    }
}

char *texi_cpu_emit_header(const tex_func *f)
{
    if (!f || !f->ctx)
        return NULL;
    texi_cg g;
    cg_init(&g, f, 0);
    texi_sb proto, out;
    texi_sb_init(&proto);
    texi_sb_init(&out);
    if (bind_name(&g, f, f->name) == NULL)
        texi_cg_fail(&g, TEX_ENOMEM, "out of memory (names)");
    prototype(&g, &proto);
    texi_sb_printf(&out, "/* Generated by tex: entry point of function '%s'. */\n", f->name);
    texi_sb_printf(&out, "#ifndef TEX_KERNEL_%s_H\n#define TEX_KERNEL_%s_H\n\n", f->name, f->name);
    texi_sb_puts(&out, "#include <stdint.h>\n\n/*\n");
    texi_sb_printf(&out,
                   " * %s: returns 0, -1 when a runtime check fails, -2 when out of "
                   "memory.\n * Tensors are compact row-major arrays.\n",
                   f->name);
    param_comments(&g, &out);
    texi_sb_printf(&out, " */\n%s;\n\n#endif\n", proto.buf ? proto.buf : "");
    char *text = g.rc || proto.oom ? NULL : texi_sb_take(&out);
    if (!g.rc && !text)
        texi_error(f->ctx, TEX_ENOMEM, "tex_kernel_export: out of memory (header text)");
    texi_sb_fini(&proto);
    texi_sb_fini(&out);
    cg_fini(&g);
    return text;
}
