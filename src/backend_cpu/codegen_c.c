/*
 * C99 + OpenMP source of a lowered function (texi_cpu_emit) and the header
 * of its entry point (texi_cpu_emit_header): the C target of the C-family
 * printer (src/codegen_c), which prints expressions, the plain statements
 * and the parameters; this file prints what is the CPU's own.
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
 * `#pragma omp parallel for` (num_threads when fixed; schedule(dynamic, C)
 * under a "parallel_dynamic" ATTR, C about 1/32 of a thread's share, see
 * dynamic_schedule), except inside another parallel loop, where
 * they run serially; a "parallel_region" ATTR is `#pragma omp parallel`
 * around its body, whose parallel loops are then `#pragma omp for`, as is a
 * "disjoint_nests" ATTR of parallel loops, whose loops are then `#pragma omp
 * for schedule(dynamic, C) nowait`; VECTORIZED loops get `#pragma
 * omp simd` when every store of the body writes one index, linear in the loop variable with a
 * nonzero coefficient, and every load of a stored buffer reads that same index (otherwise a
 * loop-carried dependence is possible and the loop is left to the auto-vectorizer); UNROLLED loops
 * and "pragma_unroll" ATTRs get `#pragma GCC unroll N` (constant N <= 64); THREAD loops run
 * serially, and a BARRIER makes the build fail with TEX_EUNAVAILABLE. ALLOCATE: a constant size of
 * at most 16 KiB is a 64-byte aligned stack array, anything else 64-byte aligned heap memory
 * checked for NULL and freed at the end of its scope. Inside a parallel region or a heap scope,
 * failures cannot return directly (OpenMP forbids leaving the region; memory would leak), so they
 * set tex_rc and skip the failed scope; the function checks tex_rc where returning is safe and at
 * its end.
 *
 * Tensor intrinsics (docs/api.md, rule 10): the c_source of each distinct
 * intrinsic the body calls is pasted as-is before the entry point, once, in
 * order of first call (it may define static functions and include headers);
 * an INTRIN is the call `fn((const T *)(A + off), (int64_t)(s0), ..., C +
 * off, ...)`, inputs then the output (RESET: the output only). An intrinsic
 * without C source (a "cuda." built-in without host_source) fails with
 * TEX_EUNAVAILABLE.
 *
 * Stack temporaries switch off two GCC warnings: -Wmaybe-uninitialized
 * (guarded writes cover every read, which GCC cannot always see) and
 * -Wunused-but-set-variable (a schedule may leave a temporary that is
 * written and never read).
 */
#include "backend_cpu/cpu.h"
#include "codegen_c/cprint.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK_MAX_BYTES 16384
#define UNROLL_MAX 64

/* The CPU printer's state: the shared printer, then what OpenMP needs. */
typedef struct {
    texi_cp p;       /* first: the hooks receive &g->p */
    int threads;     /* fixed OpenMP thread count, or 0 */
    int par_depth;   /* > 0 inside an OpenMP parallel region */
    int heap_depth;  /* > 0 inside the scope of a heap temporary */
    int loop_depth;  /* enclosing loops */
    int unroll;      /* "pragma_unroll" factor for the loop printed next, or 0 */
    bool dynamic;    /* "parallel_dynamic": the loop printed next is scheduled dynamically */
    bool region;     /* directly inside a "parallel_region": its parallel loops share its team */
    bool nowait;     /* the region is a "disjoint_nests": its loops are dynamic and nowait */
    bool uses_rc;    /* the body sets tex_rc */
    bool uses_alloc; /* the body calls tex_alloc */
    bool uses_chunk; /* the body calls tex_chunk (and so includes <omp.h>) */
    size_t rc_check_at[2];   /* body text [from, to) of the last tex_rc check, see assemble */
    bool stack_arrays;       /* some temporary is a stack array */
    const char *thread_loop; /* innermost thread-bound loop's variable, or NULL */
} texi_cg;

/* Identifiers the generated code may not redefine. */
static const char *const reserved[] = {
    "auto",    "break",    "case",      "char",      "const",          "continue",   "default",
    "do",      "double",   "else",      "enum",      "extern",         "float",      "for",
    "goto",    "if",       "inline",    "int",       "long",           "register",   "restrict",
    "return",  "short",    "signed",    "sizeof",    "static",         "struct",     "switch",
    "typedef", "union",    "unsigned",  "void",      "volatile",       "while",      "asm",
    "typeof",  "bool",     "true",      "false",     "int8_t",         "int16_t",    "int32_t",
    "int64_t", "uint8_t",  "uint16_t",  "uint32_t",  "uint64_t",       "size_t",     "ptrdiff_t",
    "NULL",    "INFINITY", "NAN",       "free",      "posix_memalign", "memcpy",     "exp",
    "expf",    "log",      "logf",      "sqrt",      "sqrtf",          "tanh",       "tanhf",
    "erf",     "erff",     "fabs",      "fabsf",     "floor",          "floorf",     "ceil",
    "ceilf",   "round",    "roundf",    "sin",       "sinf",           "cos",        "cosf",
    "pow",     "powf",     "fma",       "fmaf",      "main",           "errno",      "signbit",
    "isnan",   "isinf",    "INT32_MIN", "INT64_MIN", "INT64_MAX",      "UINT64_MAX", "SIZE_MAX"};

/* ------------------------------------------------------------------ types */

/* f16/bf16/bool are stored as uint16_t bits and uint8_t. */
static const char *storage_type(tex_dtype t)
{
    return texi_dtype_ctype(t);
}

/* f16/bf16 values are float, bool int. */
static const char *value_type(tex_dtype t)
{
    return t == TEX_BOOL ? "int" : t == TEX_F16 || t == TEX_BF16 ? "float" : texi_dtype_ctype(t);
}

static const char helper_bits[] =
    "static inline uint32_t tex_bits_f32(float v)\n"
    "{\n    uint32_t u;\n    memcpy(&u, &v, sizeof u);\n    return u;\n}\n\n"
    "static inline float tex_f32_bits(uint32_t u)\n"
    "{\n    float v;\n    memcpy(&v, &u, sizeof v);\n    return v;\n}\n\n";

/* Mirrors src/util/half.c: round to nearest even, NaN kept quiet. */
static const char helper_f16[] =
    "static inline uint16_t tex_f16_from_f32(float v)\n"
    "{\n"
    "    uint32_t u = tex_bits_f32(v);\n"
    "    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);\n"
    "    uint32_t a = u & 0x7fffffffu;\n"
    "    if (a > 0x7f800000u)\n"
    "        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));\n"
    "    if (a >= 0x477ff000u)\n"
    "        return (uint16_t)(sign | 0x7c00u);\n"
    "    if (a < 0x38800000u) {\n"
    "        if (a < 0x33000000u)\n"
    "            return sign;\n"
    "        uint32_t mant = (a & 0x7fffffu) | 0x800000u;\n"
    "        int shift = 126 - (int)(a >> 23);\n"
    "        uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u);\n"
    "        uint32_t half = 1u << (shift - 1);\n"
    "        if (rem > half || (rem == half && (q & 1u)))\n"
    "            q++;\n"
    "        return (uint16_t)(sign | q);\n"
    "    }\n"
    "    uint32_t r = a - 0x38000000u;\n"
    "    r += 0xfffu + ((r >> 13) & 1u);\n"
    "    return (uint16_t)(sign | (r >> 13));\n"
    "}\n\n"
    "static inline float tex_f16_to_f32(uint16_t h)\n"
    "{\n"
    "    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;\n"
    "    uint32_t e = (h >> 10) & 0x1fu, mant = h & 0x3ffu;\n"
    "    if (e == 0x1f)\n"
    "        return tex_f32_bits(sign | 0x7f800000u | (mant << 13));\n"
    "    if (e != 0)\n"
    "        return tex_f32_bits(sign | ((e + 112u) << 23) | (mant << 13));\n"
    "    float v = (float)mant * (1.0f / 16777216.0f);\n"
    "    return sign ? -v : v;\n"
    "}\n\n"
    "static inline float tex_round_f16(float v)\n"
    "{\n    return tex_f16_to_f32(tex_f16_from_f32(v));\n}\n\n";

static const char helper_bf16[] = "static inline uint16_t tex_bf16_from_f32(float v)\n"
                                  "{\n"
                                  "    uint32_t u = tex_bits_f32(v);\n"
                                  "    if ((u & 0x7fffffffu) > 0x7f800000u)\n"
                                  "        return (uint16_t)((u >> 16) | 0x0040u);\n"
                                  "    u += 0x7fffu + ((u >> 16) & 1u);\n"
                                  "    return (uint16_t)(u >> 16);\n"
                                  "}\n\n"
                                  "static inline float tex_bf16_to_f32(uint16_t h)\n"
                                  "{\n    return tex_f32_bits((uint32_t)h << 16);\n}\n\n"
                                  "static inline float tex_round_bf16(float v)\n"
                                  "{\n    return tex_bf16_to_f32(tex_bf16_from_f32(v));\n}\n\n";

/* n elements of elem bytes, 64-byte aligned (at least 64 bytes); NULL on failure. */
static const char helper_alloc[] =
    "static inline void *tex_alloc(int64_t n, size_t elem)\n{\n"
    "    void *p = NULL;\n"
    "    if (n < 0 || (uint64_t)n > SIZE_MAX / 2 / elem)\n        return NULL;\n"
    "    return posix_memalign(&p, 64, ((size_t)n * elem / 64 + 1) * 64) == 0 ? p : NULL;\n}\n\n";

/* The share of a dynamically scheduled loop of n iterations on a team of
 * `threads` (0: OpenMP's default): about 32 shares a thread, see
 * dynamic_schedule. */
static const char helper_chunk[] =
    "static inline int tex_chunk(int64_t n, int threads)\n{\n"
    "    int64_t t = threads > 0 ? threads : omp_get_max_threads();\n"
    "    int64_t c = n / (t * 32);\n"
    "    return c < 1 ? 1 : c > (1 << 30) ? (1 << 30) : (int)c;\n}\n\n";

/* The intrinsic's source when it is C for the CPU: a CUDA built-in's device
 * code is not, but its host_source (when it has one) is. */
static const char *intrin_source(const tex_intrin *in)
{
    return in->builtin && strncmp(in->builtin, "cuda.", 5) == 0 ? in->host_source : in->c_source;
}

static bool cpu_stmt(texi_cp *p, texi_sb *sb, const tex_stmt *s);

static const texi_cp_target cpu_target = {
    .label = "",
    .reserved = reserved,
    .n_reserved = sizeof reserved / sizeof reserved[0],
    .restrict_kw = "restrict",
    .inline_kw = "static inline",
    .storage_type = storage_type,
    .value_type = value_type,
    .decode = {"tex_f16_to_f32(", "tex_bf16_to_f32("},
    .encode = {"tex_f16_from_f32(", "tex_bf16_from_f32("},
    .half_helpers = {helper_f16, helper_bf16},
    .vectors = true,
    .base_pointers = true,
    .intrin_source = intrin_source,
    .intrin_lang = "C ",
    .missing_intrin = " for the CPU (a CUDA intrinsic needs the \"cuda\" target)",
    .stmt = cpu_stmt,
};

/* -------------------------------------------------------------- failures */

/* Sets tex_rc = code (atomically inside a parallel region). */
static void set_rc(texi_cg *g, texi_sb *sb, int code)
{
    g->uses_rc = true;
    if (g->par_depth)
        texi_cp_line(&g->p, sb, "#pragma omp atomic write");
    texi_cp_line(&g->p, sb, "tex_rc = %d;", code);
}

/* After a scope that may have failed: return where that is safe. */
static void check_rc(texi_cg *g, texi_sb *sb)
{
    if (!g->par_depth && !g->heap_depth) {
        g->rc_check_at[0] = sb->len;
        texi_cp_line(&g->p, sb, "if (tex_rc != 0)\n%*sreturn tex_rc;", 4 * g->p.indent + 4, "");
        g->rc_check_at[1] = sb->len;
    }
}

/* ---------------------------------------------------------------- loops */

typedef struct {
    texi_cg *g;
    texi_sb *out;
    int n;
} stored_names;

/* Adds the name of a stored buffer to the comment (once). */
static bool add_stored(const tex_stmt *s, void *ud)
{
    stored_names *sn = ud;
    if (s->kind != TEXI_STMT_STORE)
        return true;
    const texi_buffer *b = s->u.store.buf;
    texi_cname *nm = texi_cnames_find(&sn->g->p.names, texi_buffer_key(b));
    const char *name = nm ? nm->cname : b->name;
    if (!sn->out->buf || !strstr(sn->out->buf, name)) /* approximate dedupe: enough for a comment */
        texi_sb_printf(sn->out, "%s%s", sn->n++ ? ", " : "", name);
    return true;
}

/* "/ * computes A, B * /" above a top-level nest: the buffers it stores to. */
static void nest_comment(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    texi_sb names;
    texi_sb_init(&names);
    stored_names sn = {g, &names, 0};
    texi_stmt_visit(s, add_stored, &sn);
    if (sn.n && names.buf && !names.oom) {
        texi_cp_indent(&g->p, sb);
        texi_sb_puts(sb, "/* computes ");
        texi_cp_comment_text(sb, names.buf);
        texi_sb_puts(sb, " */\n");
    }
    texi_sb_fini(&names);
}

/* " schedule(dynamic, tex_chunk(extent, threads))" for parallel loop s:
 * shares of about 1/32 of a thread's part of its iterations (helper_chunk;
 * threads 0 when not fixed). A thread takes its next share by an atomic
 * update of a counter the team shares, which costs more than a short
 * iteration (a sparse row of a few non-zeros) when taken one iteration at
 * a time; shares of 1/32 of a thread's part still balance iterations of
 * uneven cost. The C compiler folds constant arguments. */
static void dynamic_schedule(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    g->uses_chunk = true;
    texi_sb_puts(sb, " schedule(dynamic, tex_chunk(");
    texi_cp_expr(&g->p, sb, s->u.loop.extent, TEXI_CP_P_TOP, true);
    texi_sb_printf(sb, ", %d))", g->threads > 0 ? g->threads : 0);
}

/* The pragma line of loop s (or a comment saying why there is none). */
static void loop_pragma(texi_cg *g, texi_sb *sb, const tex_stmt *s, int unroll, bool dynamic,
                        bool *parallel)
{
    texi_cp *p = &g->p;
    *parallel = false;
    switch (s->u.loop.for_kind) {
    case TEXI_FOR_SERIAL:
        break;
    case TEXI_FOR_PARALLEL:
        if (g->region) {
            *parallel = true;
            texi_cp_indent(p, sb);
            texi_sb_puts(sb, "#pragma omp for");
            if (dynamic || g->nowait)
                dynamic_schedule(g, sb, s);
            texi_sb_puts(sb, g->nowait ? " nowait\n" : "\n");
            break;
        }
        if (g->par_depth) {
            texi_cp_line(p, sb, "/* parallel loop inside a parallel region: serial */");
            break;
        }
        *parallel = true;
        texi_cp_indent(p, sb);
        texi_sb_puts(sb, "#pragma omp parallel for");
        if (g->threads > 0)
            texi_sb_printf(sb, " num_threads(%d)", g->threads);
        if (dynamic)
            dynamic_schedule(g, sb, s);
        texi_sb_putc(sb, '\n');
        break;
    case TEXI_FOR_VECTORIZED:
        if (texi_simd_safe(s))
            texi_cp_line(p, sb, "#pragma omp simd");
        else
            texi_cp_line(p, sb,
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
        texi_cp_line(p, sb, "/* thread-bound loop: serial on the CPU */");
        break;
    }
    if (unroll > 0)
        texi_cp_line(p, sb, "#pragma GCC unroll %d", unroll);
}

static void emit_for(texi_cg *g, texi_sb *sb, const tex_stmt *s, int unroll, bool dynamic)
{
    bool parallel;
    if (g->loop_depth == 0)
        nest_comment(g, sb, s);
    loop_pragma(g, sb, s, unroll, dynamic, &parallel);
    const char *saved_thread = g->thread_loop;
    bool saved_region = g->region;
    g->region = false;
    if (s->u.loop.for_kind == TEXI_FOR_THREAD)
        g->thread_loop = texi_cp_bind(&g->p, s->u.loop.var, s->u.loop.var->u.var.name);
    g->par_depth += parallel;
    g->loop_depth++;
    texi_cp_loop(&g->p, sb, s);
    g->loop_depth--;
    g->par_depth -= parallel;
    g->thread_loop = saved_thread;
    g->region = saved_region;
}

/* ----------------------------------------------------------- allocations */

static bool is_parallel_for(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_FOR && s->u.loop.for_kind == TEXI_FOR_PARALLEL;
}

/* Whether a masked access to buffer `key` was found (private_slack's walk). */
typedef struct {
    const void *key;
    bool found;
} masked_walk;

static bool masked_load_of(tex_expr *e, void *ud)
{
    masked_walk *w = ud;
    w->found |=
        e->kind == TEXI_EXPR_LOAD && e->u.load.mask && texi_buffer_key(e->u.load.buf) == w->key;
    return !w->found;
}

static bool masked_in_stmt(const tex_stmt *s, void *ud)
{
    masked_walk *w = ud;
    w->found |=
        s->kind == TEXI_STMT_STORE && s->u.store.mask && texi_buffer_key(s->u.store.buf) == w->key;
    if (!w->found)
        texi_stmt_visit_exprs(s, masked_load_of, w);
    return !w->found;
}

/* The slack, in elements, after the buffer of ALLOCATE s, which becomes a
 * private buffer of the printer (cvmask.c) when one thread alone uses it
 * (it is allocated inside a parallel region, or no parallel loop is inside
 * it) and its body moves it in masked chunks. 0: not private. */
static int64_t private_slack(const texi_cg *g, const tex_stmt *s)
{
    const texi_cp *p = &g->p;
    masked_walk w = {texi_buffer_key(s->u.alloc.buf), false};
    if (p->n_private == TEXI_CP_MAX_PRIVATE ||
        (!g->par_depth && texi_stmt_any(s->u.alloc.body, is_parallel_for)))
        return 0;
    texi_stmt_visit(s->u.alloc.body, masked_in_stmt, &w);
    return w.found ? TEXI_CP_PRIVATE_SLACK / tex_dtype_bytes(s->u.alloc.buf->dtype) : 0;
}

/* ALLOCATE s's body, its buffer private while it is printed when slack. */
static void alloc_body(texi_cg *g, texi_sb *sb, const tex_stmt *s, int64_t slack)
{
    texi_cp *p = &g->p;
    if (slack)
        p->private_bufs[p->n_private++] = texi_buffer_key(s->u.alloc.buf);
    texi_cp_block(p, sb, s->u.alloc.body);
    p->n_private -= slack ? 1 : 0;
}

/* A heap temporary (a constant size above STACK_MAX_BYTES, or a symbolic
 * one). A symbolic size is often small (a row of a softmax over a sequence
 * length), and the temporary sits in a loop: it lives in a stack array of
 * STACK_MAX_BYTES when it fits, so that a row costs no malloc and free. */
static void emit_heap_alloc(texi_cg *g, texi_sb *sb, const tex_stmt *s, const char *name)
{
    texi_cp *p = &g->p;
    const texi_buffer *b = s->u.alloc.buf;
    const char *t = storage_type(b->dtype);
    int64_t slack = private_slack(g, s), stack_elems = STACK_MAX_BYTES / tex_dtype_bytes(b->dtype);
    char base[256]; /* a longer name is cut; texi_cp_bind keeps it unique */
    snprintf(base, sizeof base, "%s_stack", name);
    /* keys of the two names: addresses inside s, which no buffer or variable has */
    const char *stack = texi_cp_const_elems(b) < 0 ? texi_cp_bind(p, s, base) : NULL;
    snprintf(base, sizeof base, "%s_elems", name);
    const char *elems = texi_cp_bind(p, &s->u.alloc.body, base);
    g->uses_alloc = true;
    texi_cp_line(p, sb, "{");
    p->indent++;
    if (stack)
        texi_cp_line(p, sb, "%s %s[%lld] __attribute__((aligned(64)));", t, stack,
                     (long long)stack_elems);
    texi_cp_indent(p, sb);
    texi_sb_printf(sb, "const int64_t %s = ", elems);
    for (int i = 0; i < b->ndim; i++) {
        texi_sb_puts(sb, i ? " * (int64_t)" : "(int64_t)");
        texi_cp_expr(p, sb, b->shape[i], TEXI_CP_P_UNARY, true);
    }
    if (b->ndim == 0)
        texi_sb_puts(sb, "1");
    if (slack)
        texi_sb_printf(sb, " + %lld", (long long)slack);
    texi_sb_puts(sb, ";\n");
    texi_cp_indent(p, sb);
    texi_sb_printf(sb, "%s *%s = ", t, name);
    if (stack)
        texi_sb_printf(sb, "%s >= 0 && %s <= %lld ? %s : ", elems, elems, (long long)stack_elems,
                       stack);
    texi_sb_printf(sb, "(%s *)tex_alloc(%s, sizeof(%s));\n", t, elems, t);
    texi_cp_line(p, sb, "if (%s) {", name);
    g->heap_depth++;
    alloc_body(g, sb, s, slack);
    g->heap_depth--;
    p->indent++;
    if (stack)
        texi_cp_line(p, sb, "if (%s != %s)", name, stack);
    p->indent += stack != NULL;
    texi_cp_line(p, sb, "free(%s);", name);
    p->indent -= stack != NULL;
    p->indent--;
    texi_cp_line(p, sb, "} else {");
    p->indent++;
    set_rc(g, sb, -2);
    p->indent--;
    texi_cp_line(p, sb, "}");
    p->indent--;
    texi_cp_line(p, sb, "}");
    check_rc(g, sb);
}

static void emit_allocate(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    texi_cp *p = &g->p;
    const texi_buffer *b = s->u.alloc.buf;
    const char *name = texi_cp_bind(p, texi_buffer_key(b), b->name);
    int64_t n = texi_cp_const_elems(b);
    int64_t bytes = tex_dtype_bytes(b->dtype);
    if (n < 0 || n > STACK_MAX_BYTES / bytes) {
        emit_heap_alloc(g, sb, s, name);
        return;
    }
    int64_t slack = private_slack(g, s);
    g->stack_arrays = true;
    texi_cp_line(p, sb, "{");
    p->indent++;
    texi_cp_line(p, sb, "%s %s[%lld] __attribute__((aligned(64)));", storage_type(b->dtype), name,
                 (long long)((n ? n : 1) + slack));
    p->indent--;
    alloc_body(g, sb, s, slack);
    texi_cp_line(p, sb, "}");
}

/* ---------------------------------------------------------- attributes */

static void emit_assert(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    texi_cp *p = &g->p;
    texi_cp_expr_comment(p, sb, "runtime check (fails with TEX_EINVAL)", s->u.attr.value);
    texi_cp_indent(p, sb);
    texi_sb_puts(sb, "if (!(");
    texi_cp_expr(p, sb, s->u.attr.value, TEXI_CP_P_TOP, true);
    texi_sb_puts(sb, ")) {\n");
    p->indent++;
    if (!g->par_depth && !g->heap_depth) {
        texi_cp_line(p, sb, "return -1;");
        p->indent--;
        texi_cp_line(p, sb, "}");
        texi_cp_stmt(p, sb, s->u.attr.body);
        return;
    }
    set_rc(g, sb, -1);
    p->indent--;
    texi_cp_line(p, sb, "} else {");
    texi_cp_block(p, sb, s->u.attr.body);
    texi_cp_line(p, sb, "}");
}

/* ATTR "atomic" (tex_atomic): a sum or product of a plain scalar type is
 * one OpenMP atomic update; max, min and the types stored through
 * conversions (f16, bf16, bool) update inside a named critical section. */
static void emit_atomic(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    texi_cp *p = &g->p;
    texi_atomic_update u;
    if (texi_atomic_parts(p->ctx, s, &u) < 0) {
        texi_cp_fail(p, TEX_EINTERNAL, "%s", tex_errmsg(p->ctx));
        return;
    }
    tex_dtype t = u.store->u.store.buf->dtype;
    bool plain = t != TEX_F16 && t != TEX_BF16 && t != TEX_BOOL;
    if (!plain || u.op == TEXI_REDUCE_MAX || u.op == TEXI_REDUCE_MIN) {
        texi_cp_line(p, sb, "#pragma omp critical(tex_atomic)");
        texi_cp_stmt(p, sb, u.store);
        return;
    }
    const texi_buffer *b = u.store->u.store.buf;
    texi_cp_line(p, sb, "#pragma omp atomic update");
    texi_cp_indent(p, sb);
    texi_sb_printf(sb, "%s[", texi_cp_lookup(p, texi_buffer_key(b), b->name));
    texi_cp_expr(p, sb, u.store->u.store.index, TEXI_CP_P_TOP, true);
    texi_sb_puts(sb, u.op == TEXI_REDUCE_SUM ? "] += " : "] *= ");
    texi_cp_store_value(p, sb, u.delta, t);
    texi_sb_puts(sb, ";\n");
}

/* ATTR "parallel_region": one thread team for the parallel loops of its
 * body, each a worksharing loop (its implicit barrier orders the next). */
static void emit_region(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    texi_cp *p = &g->p;
    if (g->threads > 0)
        texi_cp_line(p, sb, "#pragma omp parallel num_threads(%d)", g->threads);
    else
        texi_cp_line(p, sb, "#pragma omp parallel");
    texi_cp_line(p, sb, "{");
    p->indent++;
    g->par_depth++;
    g->region = true;
    texi_cp_stmt(p, sb, s->u.attr.body);
    g->region = false;
    g->par_depth--;
    p->indent--;
    texi_cp_line(p, sb, "}");
}

/* s is a PARALLEL loop, maybe under ATTR "parallel_dynamic". */
static bool is_parallel_loop(const tex_stmt *s)
{
    if (s->kind == TEXI_STMT_ATTR && s->u.attr.id == TEXI_ATTR_PARALLEL_DYNAMIC)
        s = s->u.attr.body;
    return s->kind == TEXI_STMT_FOR && s->u.loop.for_kind == TEXI_FOR_PARALLEL;
}

/* ATTR "disjoint_nests" whose nests are all parallel loops: one thread team
 * runs them, each a worksharing loop handed out dynamically (its
 * iterations: rows of uneven cost) with no barrier after it (the nests
 * write disjoint elements). Otherwise the nests are printed one by one. */
static bool emit_disjoint(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    const tex_stmt *body = s->u.attr.body;
    if (g->par_depth || body->kind != TEXI_STMT_SEQ)
        return false;
    for (int i = 0; i < body->u.seq.n; i++)
        if (!is_parallel_loop(body->u.seq.items[i]))
            return false;
    g->nowait = true;
    emit_region(g, sb, s);
    g->nowait = false;
    return true;
}

/* A cache hint (tex_prefetch, ATTR "prefetch" / "prefetch_write" around
 * nothing): __builtin_prefetch of its element's address, kept in every
 * cache level; of a vector's first lane when the index is a ramp (a hint
 * under a thread loop gpu_threads vectorized), none for other vectors. */
static void emit_prefetch(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    const tex_expr *e = s->u.attr.value;
    if (!e || e->kind != TEXI_EXPR_LOAD)
        return;
    const tex_expr *index = e->u.load.index;
    if (index->kind == TEXI_EXPR_RAMP)
        index = index->u.ramp.base;
    if (index->lanes > 1)
        return;
    const texi_buffer *b = e->u.load.buf;
    texi_cp_indent(&g->p, sb);
    texi_sb_printf(sb, "__builtin_prefetch(&%s[",
                   texi_cp_lookup(&g->p, texi_buffer_key(b), b->name));
    texi_cp_expr(&g->p, sb, index, TEXI_CP_P_TOP, true);
    texi_sb_printf(sb, "], %d, 3);\n", s->u.attr.id == TEXI_ATTR_PREFETCH_WRITE);
}

/* The ATTRs the CPU prints itself; false for the others (their body is printed). */
static bool emit_attr(texi_cg *g, texi_sb *sb, const tex_stmt *s)
{
    enum texi_attr_key key = s->u.attr.id;
    int64_t n;
    if (key == TEXI_ATTR_ATOMIC) {
        emit_atomic(g, sb, s);
        return true;
    }
    if (texi_is_prefetch(s)) {
        emit_prefetch(g, sb, s);
        return true;
    }
    if (key == TEXI_ATTR_ASSERT && s->u.attr.value) {
        emit_assert(g, sb, s);
        return true;
    }
    if (key == TEXI_ATTR_PRAGMA_UNROLL && s->u.attr.value &&
        texi_expr_is_int_const(s->u.attr.value, &n) && n >= 1 && n <= UNROLL_MAX) {
        g->unroll = (int)n;
        texi_cp_stmt(&g->p, sb, s->u.attr.body);
        return true;
    }
    if (key == TEXI_ATTR_PARALLEL_REGION && !g->par_depth) {
        emit_region(g, sb, s);
        return true;
    }
    if (key == TEXI_ATTR_DISJOINT_NESTS)
        return emit_disjoint(g, sb, s);
    if (key == TEXI_ATTR_PARALLEL_DYNAMIC) {
        g->dynamic = true;
        texi_cp_stmt(&g->p, sb, s->u.attr.body);
        return true;
    }
    if (key == TEXI_ATTR_VECTORIZE_FAILED || key == TEXI_ATTR_CROSS_THREAD_REDUCTION) {
        const char *why = texi_vector_reason_text(s);
        texi_cp_indent(&g->p, sb);
        texi_sb_puts(sb, "/* ");
        texi_cp_comment_text(sb, s->u.attr.key);
        if (why) {
            texi_sb_putc(sb, '(');
            texi_cp_comment_text(sb, why);
            texi_sb_putc(sb, ')');
        }
        texi_sb_puts(sb, " */\n");
    }
    return false;
}

/* The statements the CPU prints itself (cprint.h's stmt hook). */
static bool cpu_stmt(texi_cp *p, texi_sb *sb, const tex_stmt *s)
{
    texi_cg *g = (texi_cg *)p;
    int unroll = g->unroll;    /* a "pragma_unroll" ATTR's, for the statement right below it */
    bool dynamic = g->dynamic; /* a "parallel_dynamic" ATTR's, likewise */
    g->unroll = 0;
    g->dynamic = false;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        emit_for(g, sb, s, unroll, dynamic);
        return true;
    case TEXI_STMT_ALLOCATE:
        emit_allocate(g, sb, s);
        return true;
    case TEXI_STMT_ATTR:
        return emit_attr(g, sb, s);
    case TEXI_STMT_BARRIER:
        /* barrier fission (gpu_to_cpu.c) removed every barrier under a
         * thread loop before emission; one outside them has no meaning */
        texi_cp_fail(p, TEX_EINTERNAL, "a barrier outside barrier fission's reach%s%s",
                     g->thread_loop ? " in loop " : "", g->thread_loop ? g->thread_loop : "");
        return true;
    default:
        return false;
    }
}

/* ------------------------------------------------------------ entry point */

/* Binds every parameter's name and appends the prototype (no ';'). */
static void prototype(texi_cg *g, texi_sb *proto)
{
    texi_sb_printf(proto, "int %s(", g->p.f->name);
    if (texi_cp_params(&g->p, proto) == 0)
        texi_sb_puts(proto, "void");
    texi_sb_putc(proto, ')');
}

/* Whether name is one the generated code defines or uses itself. */
static bool name_clashes(const texi_cg *g, const char *name)
{
    if (texi_cnames_is_reserved(&g->p.names, name))
        return true;
    texi_sb all;
    texi_sb_init(&all);
    texi_cp_helpers(&cpu_target, &all, ~0u);
    texi_sb_puts(&all, helper_bits);
    texi_sb_puts(&all, helper_alloc);
    texi_sb_puts(&all, helper_chunk);
    bool clash = false;
    for (const char *p = all.buf; p && (p = strstr(p, name)); p++) {
        size_t n = strlen(name);
        if (p > all.buf && !isalnum((unsigned char)p[-1]) && p[-1] != '_' && p[n] == '(')
            clash = true;
    }
    texi_sb_fini(&all);
    bool vector_name = strncmp(name, "tex_v", 5) == 0; /* types and helpers of cvector.c */
    return clash || vector_name || strcmp(name, "tex_rc") == 0;
}

static void cg_init(texi_cg *g, const tex_func *f, int threads)
{
    memset(g, 0, sizeof *g);
    texi_cp_init(&g->p, f, &cpu_target);
    g->threads = threads;
}

/* The f16/bf16 helpers that the CUDA built-ins' host C (host_source) of
 * the body's intrinsics uses for their 16-bit tiles. */
static unsigned host_source_helpers(const texi_cp *p)
{
    const tex_intrin *list[64];
    int n = texi_stmt_intrins(p->f->body, list, (int)(sizeof list / sizeof list[0]));
    unsigned mask = 0;
    for (int i = 0; i < n; i++) {
        const tex_intrin *in = list[i];
        for (int t = 0; in->host_source && t <= in->n_inputs; t++) {
            tex_dtype d = (t < in->n_inputs ? in->inputs[t] : in->desc)->dtype;
            mask |= d == TEX_F16 ? TEXI_CP_H_F16 : d == TEX_BF16 ? TEXI_CP_H_BF16 : 0;
        }
    }
    return mask;
}

static void assemble(texi_cg *g, texi_sb *out, const char *proto, const char *body)
{
    texi_cp *p = &g->p;
    p->helpers |= host_source_helpers(p);
    texi_sb_printf(out, "/* Generated by tex: function '%s' (C99 + OpenMP). */\n", p->f->name);
    if (g->uses_alloc)
        texi_sb_puts(out, "#ifndef _POSIX_C_SOURCE\n#define _POSIX_C_SOURCE 200112L\n#endif\n");
    texi_sb_puts(out, "#include <stdint.h>\n#include <stddef.h>\n#include <math.h>\n"
                      "#include <string.h>\n#include <stdlib.h>\n");
    texi_sb_puts(out, g->uses_chunk ? "#include <omp.h>\n\n" : "\n");
    if (g->stack_arrays) /* see the essay */
        texi_sb_puts(out, "#if defined(__GNUC__) && !defined(__clang__)\n"
                          "#pragma GCC diagnostic ignored \"-Wmaybe-uninitialized\"\n"
                          "#pragma GCC diagnostic ignored \"-Wunused-but-set-variable\"\n"
                          "#endif\n\n");
    /* Clang only: helpers come in families (min with max, a select per
     * vector type), not every one of which a kernel calls (GCC does not warn
     * about an unused static inline function); and a `#pragma omp simd`
     * loop is a request the vectorizer may decline (a loop pass simd left
     * scalar), which Clang reports */
    texi_sb_puts(out, "#ifdef __clang__\n#pragma clang diagnostic ignored \"-Wunused-function\"\n"
                      "#pragma clang diagnostic ignored \"-Wpass-failed\"\n#endif\n\n");
    if (p->helpers & (TEXI_CP_H_F16 | TEXI_CP_H_BF16))
        texi_sb_puts(out, helper_bits);
    texi_cp_helpers(&cpu_target, out, p->helpers);
    texi_cp_vector_typedefs(p, out);
    if (g->uses_alloc)
        texi_sb_puts(out, helper_alloc);
    if (g->uses_chunk)
        texi_sb_puts(out, helper_chunk);
    texi_cp_intrin_sources(p, out);
    texi_sb_printf(out, "%s\n{\n", proto);
    p->indent = 1;
    texi_cp_param_prologue(p, out);
    if (g->uses_rc)
        texi_cp_line(p, out, "int tex_rc = 0;");
    /* A check of tex_rc that ends the body would only precede `return tex_rc`. */
    size_t len = strlen(body);
    size_t from = g->rc_check_at[0];
    bool check_last = g->uses_rc && g->rc_check_at[1] == len && from < len &&
                      strncmp(body + from + strspn(body + from, " "), "if (tex_rc != 0)", 16) == 0;
    texi_sb_printf(out, "%.*s", (int)(check_last ? from : len), body);
    texi_cp_line(p, out, g->uses_rc ? "return tex_rc;" : "return 0;");
    texi_sb_puts(out, "}\n");
}

char *texi_cpu_emit(const tex_func *f, int threads, bool libm_math)
{
    if (!f || !f->ctx || !f->body)
        return NULL;
    texi_cg g;
    cg_init(&g, f, threads);
    g.p.libm_math = libm_math;
    if (name_clashes(&g, f->name))
        texi_cp_fail(&g.p, TEX_EINVAL, "the name is reserved in the generated C code");
    texi_sb proto, body, out;
    texi_sb_init(&proto);
    texi_sb_init(&body);
    texi_sb_init(&out);
    if (!g.p.rc)
        texi_cp_bind(&g.p, f, f->name);
    prototype(&g, &proto);
    texi_cp_size_ranges(&g.p);
    g.p.indent = 1;
    texi_cp_stmt(&g.p, &body, f->body);
    if (!g.p.rc && !proto.oom && !body.oom)
        assemble(&g, &out, proto.buf, body.buf ? body.buf : "");
    char *text = g.p.rc ? NULL : texi_sb_take(&out);
    if (!g.p.rc && !text)
        texi_error(f->ctx, TEX_ENOMEM, "tex_build: function '%s': out of memory (source text)",
                   f->name);
    texi_sb_fini(&proto);
    texi_sb_fini(&body);
    texi_sb_fini(&out);
    texi_cp_fini(&g.p);
    return text;
}

/* One comment line per parameter: name, dtype, shape, role. */
static void param_comments(texi_cg *g, texi_sb *sb)
{
    const tex_func *f = g->p.f;
    for (int i = 0; i < f->n_params; i++) {
        const texi_param *p = &f->params[i];
        texi_sb_puts(sb, " *   ");
        if (p->kind == TEX_ARG_VAR) {
            tex_dtype t = p->var->dtype;
            texi_cp_comment_text(sb, p->var->u.var.name);
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
        texi_cp_comment_text(sb, p->tensor->name);
        texi_sb_printf(sb, ": tensor %s [", tex_dtype_name(p->buf->dtype));
        texi_cp_comment_text(sb, tmp.buf && !tmp.oom ? tmp.buf : "");
        texi_sb_printf(sb, "]%s\n", texi_stmt_stores_to(f->body, p->buf) ? ", written" : "");
        texi_sb_fini(&tmp);
    }
    for (int i = 0; i < f->n_size_vars; i++) {
        texi_sb_puts(sb, " *   ");
        texi_cp_comment_text(sb, f->size_vars[i]->u.var.name);
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
    texi_cp_bind(&g.p, f, f->name);
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
    char *text = g.p.rc || proto.oom ? NULL : texi_sb_take(&out);
    if (!g.p.rc && !text)
        texi_error(f->ctx, TEX_ENOMEM, "tex_kernel_export: out of memory (header text)");
    texi_sb_fini(&proto);
    texi_sb_fini(&out);
    texi_cp_fini(&g.p);
    return text;
}
