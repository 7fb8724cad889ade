/*
 * The printer: expressions and statements as stable, readable text (golden
 * tests and TEX_DUMP rely on it never changing by accident).
 *
 * Expressions are infix with the fewest parentheses precedence allows.
 *   - Integer floor division and modulo print as `a / b` and `a % b` (tex has
 *     no truncating integer division); float division prints `a / b`;
 *     floordiv/floormod of floats print as calls.
 *   - Constants: i32 plain (`3`), other integers with a suffix (`3i64`, `7u8`),
 *     bool `true`/`false`, f32 `1.5f`, f64 `1.5`, f16 `1.5f16`, bf16 `1.5bf16`;
 *     floats keep enough digits to round-trip; infinities and NaN of types
 *     other than f64 print as a conversion, `f32(-inf)`.
 *   - Casts print as the type applied (`f32(x)`), math as calls (`exp(x)`),
 *     reductions as `sum(body, axis=[k, l], where=cond)`.
 *   - Variables print by name; two variables with one name print alike.
 * Statements, indented two spaces a level (TVM's layout):
 *   for (i, 0, 64) parallel {        loops: (var, min, extent) [kind]
 *   realize B([0, 8], [j*8, 8]) local {   regions as [min, extent] per dimension
 *   allocate B: f32[64] shared {
 *   if (cond) { ... } else { ... }
 *   let x = value                    (body follows at the same level)
 *   attr key = value {
 *   barrier(shared)
 *   C[i, j] = value                  provide;  B[index] = value: store
 */
#include "ir/ir.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const scope_names[] = {"global", "shared", "local"};
static const char *const thread_names[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                           "threadIdx.x", "threadIdx.y", "threadIdx.z",
                                           "vthread"};

/* Binding strength of an operator's node; higher binds tighter. */
static int precedence(const tex_expr *e)
{
    switch (e->kind) {
    case TEXI_EXPR_OR:
        return 1;
    case TEXI_EXPR_AND:
        return 2;
    case TEXI_EXPR_EQ:
    case TEXI_EXPR_NE:
        return 3;
    case TEXI_EXPR_LT:
    case TEXI_EXPR_LE:
    case TEXI_EXPR_GT:
    case TEXI_EXPR_GE:
        return 4;
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
        return 5;
    case TEXI_EXPR_MUL:
    case TEXI_EXPR_DIV:
        return 6;
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
        return texi_dtype_is_float(e->dtype) ? 9 : 6;
    case TEXI_EXPR_NOT:
        return 7;
    default:
        return 9;
    }
}

static void print_float(texi_sb *sb, tex_dtype t, double v)
{
    char buf[64];
    if (isnan(v))
        snprintf(buf, sizeof buf, "nan");
    else if (isinf(v))
        snprintf(buf, sizeof buf, "%sinf", v < 0 ? "-" : "");
    else
        snprintf(buf, sizeof buf, t == TEX_F64 ? "%.17g" : "%.9g", v);
    if (!isfinite(v) && t != TEX_F64) { /* "-inff" would read as a name: f32(-inf) */
        texi_sb_printf(sb, "%s(%s)", tex_dtype_name(t), buf);
        return;
    }
    if (!strpbrk(buf, ".en"))
        strcat(buf, ".0");
    texi_sb_puts(sb, buf);
    if (t == TEX_F32)
        texi_sb_putc(sb, 'f');
    else if (t != TEX_F64)
        texi_sb_puts(sb, tex_dtype_name(t));
}

static void print_int(texi_sb *sb, tex_dtype t, int64_t v)
{
    if (t == TEX_BOOL)
        texi_sb_puts(sb, v ? "true" : "false");
    else if (t == TEX_U64)
        texi_sb_printf(sb, "%llu", (unsigned long long)(uint64_t)v);
    else
        texi_sb_printf(sb, "%lld", (long long)v);
    if (t != TEX_I32 && t != TEX_BOOL)
        texi_sb_puts(sb, tex_dtype_name(t));
}

static void print_operand(texi_sb *sb, const tex_expr *e, int min_prec)
{
    bool paren = precedence(e) < min_prec;
    if (paren)
        texi_sb_putc(sb, '(');
    texi_expr_print(sb, e);
    if (paren)
        texi_sb_putc(sb, ')');
}

static void print_list(texi_sb *sb, int n, tex_expr *const *items)
{
    for (int i = 0; i < n; i++) {
        if (i)
            texi_sb_puts(sb, ", ");
        texi_expr_print(sb, items[i]);
    }
}

static void print_call(texi_sb *sb, const char *name, int n, tex_expr *const *args)
{
    texi_sb_printf(sb, "%s(", name);
    print_list(sb, n, args);
    texi_sb_putc(sb, ')');
}

static void print_binary(texi_sb *sb, const tex_expr *e)
{
    const tex_expr *a = e->u.bin.a, *b = e->u.bin.b;
    int p = precedence(e);
    const char *op = texi_expr_kind_names[e->kind];
    switch (e->kind) {
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        print_call(sb, op, 2, (tex_expr *const[]){e->u.bin.a, e->u.bin.b});
        return;
    case TEXI_EXPR_FLOORDIV:
    case TEXI_EXPR_FLOORMOD:
        if (texi_dtype_is_float(e->dtype)) {
            print_call(sb, op, 2, (tex_expr *const[]){e->u.bin.a, e->u.bin.b});
            return;
        }
        op = e->kind == TEXI_EXPR_FLOORDIV ? "/" : "%";
        break;
    default:
        break;
    }
    /* left-associative: the right operand needs parentheses at equal precedence */
    print_operand(sb, a, p);
    texi_sb_printf(sb,
                   e->kind == TEXI_EXPR_MUL || e->kind == TEXI_EXPR_DIV ||
                           e->kind == TEXI_EXPR_FLOORDIV || e->kind == TEXI_EXPR_FLOORMOD
                       ? "%s"
                       : " %s ",
                   op);
    print_operand(sb, b, p + 1);
}

static void print_reduce(texi_sb *sb, const tex_expr *e)
{
    texi_sb_printf(sb, "%s(", texi_reduce_names[e->u.red.op]);
    texi_expr_print(sb, e->u.red.body);
    texi_sb_puts(sb, ", axis=[");
    for (int i = 0; i < e->u.red.n_axes; i++)
        texi_sb_printf(sb, "%s%s", i ? ", " : "", e->u.red.axes[i]->name);
    texi_sb_putc(sb, ']');
    if (e->u.red.cond) {
        texi_sb_puts(sb, ", where=");
        texi_expr_print(sb, e->u.red.cond);
    }
    texi_sb_putc(sb, ')');
}

/* `buf[index]`, or `buf[index if mask]` for a predicated vector access. */
static void print_access(texi_sb *sb, const texi_buffer *buf, const tex_expr *index,
                         const tex_expr *mask)
{
    texi_sb_printf(sb, "%s[", buf->name);
    texi_expr_print(sb, index);
    if (mask) {
        texi_sb_puts(sb, " if ");
        texi_expr_print(sb, mask);
    }
    texi_sb_putc(sb, ']');
}

void texi_expr_print(texi_sb *sb, const tex_expr *e)
{
    if (!e) {
        texi_sb_puts(sb, "<null>");
        return;
    }
    switch (e->kind) {
    case TEXI_EXPR_INT:
        print_int(sb, e->dtype, e->u.i);
        return;
    case TEXI_EXPR_FLOAT:
        print_float(sb, e->dtype, e->u.f);
        return;
    case TEXI_EXPR_VAR:
        texi_sb_puts(sb, e->u.var.name);
        return;
    TEXI_CASE_BINARY:
        print_binary(sb, e);
        return;
    case TEXI_EXPR_NOT:
        texi_sb_putc(sb, '!');
        print_operand(sb, e->u.un.a, 7);
        return;
    case TEXI_EXPR_CAST:
        print_call(sb, tex_dtype_name(e->dtype), 1, &e->u.un.a);
        return;
    case TEXI_EXPR_SELECT:
        print_call(sb, "select", 3, (tex_expr *const[]){e->u.sel.cond, e->u.sel.t, e->u.sel.f});
        return;
    case TEXI_EXPR_CALL:
        print_call(sb, texi_math_names[e->u.call.op], e->u.call.n_args, e->u.call.args);
        return;
    case TEXI_EXPR_ACCESS:
        texi_sb_printf(sb, "%s[", e->u.access.tensor->name);
        print_list(sb, e->u.access.n_idx, e->u.access.idx);
        texi_sb_putc(sb, ']');
        return;
    case TEXI_EXPR_LOAD:
        print_access(sb, e->u.load.buf, e->u.load.index, e->u.load.mask);
        return;
    case TEXI_EXPR_RAMP:
        texi_sb_puts(sb, "ramp(");
        print_list(sb, 2, (tex_expr *const[]){e->u.ramp.base, e->u.ramp.stride});
        texi_sb_printf(sb, ", %d)", e->lanes);
        return;
    case TEXI_EXPR_BROADCAST:
        texi_sb_puts(sb, "broadcast(");
        texi_expr_print(sb, e->u.un.a);
        texi_sb_printf(sb, ", %d)", e->lanes);
        return;
    case TEXI_EXPR_VREDUCE:
        texi_sb_printf(sb, "vreduce_%s(", texi_vreduce_names[e->u.vred.op]);
        texi_expr_print(sb, e->u.vred.a);
        texi_sb_putc(sb, ')');
        return;
    case TEXI_EXPR_SEARCH:
        texi_sb_printf(sb, "%s(%s, ", texi_search_names[e->u.search.op],
                       e->u.search.tensor ? e->u.search.tensor->name : e->u.search.buf->name);
        print_list(sb, 3, (tex_expr *const[]){e->u.search.lo, e->u.search.hi, e->u.search.value});
        texi_sb_putc(sb, ')');
        return;
    case TEXI_EXPR_REDUCE:
        print_reduce(sb, e);
        return;
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    texi_sb_puts(sb, "<bad expression>");
}

char *tex_expr_str(const tex_expr *e)
{
    if (!e)
        return NULL;
    texi_sb sb;
    texi_sb_init(&sb);
    texi_expr_print(&sb, e);
    return texi_sb_take(&sb);
}

/* ----------------------------------------------------------- statements */

static void indent_to(texi_sb *sb, int indent)
{
    for (int i = 0; i < indent; i++)
        texi_sb_puts(sb, "  ");
}

static const char *for_kind_name(const tex_stmt *s)
{
    switch (s->u.loop.for_kind) {
    case TEXI_FOR_SERIAL:
        return "";
    case TEXI_FOR_PARALLEL:
        return " parallel";
    case TEXI_FOR_VECTORIZED:
        return " vectorized";
    case TEXI_FOR_UNROLLED:
        return " unrolled";
    case TEXI_FOR_THREAD:
        return " bind";
    }
    return "";
}

/* " {", the body one level deeper, then "}" without its newline. */
static void print_block_open(texi_sb *sb, const tex_stmt *body, int indent)
{
    texi_sb_puts(sb, " {\n");
    texi_stmt_print(sb, body, indent + 1);
    indent_to(sb, indent);
    texi_sb_putc(sb, '}');
}

static void print_block(texi_sb *sb, const tex_stmt *body, int indent)
{
    print_block_open(sb, body, indent);
    texi_sb_putc(sb, '\n');
}

static void print_loop(texi_sb *sb, const tex_stmt *s, int indent)
{
    texi_sb_puts(sb, "for (");
    texi_expr_print(sb, s->u.loop.var);
    texi_sb_puts(sb, ", ");
    texi_expr_print(sb, s->u.loop.min);
    texi_sb_puts(sb, ", ");
    texi_expr_print(sb, s->u.loop.extent);
    texi_sb_printf(sb, ")%s", for_kind_name(s));
    int tag = s->u.loop.thread_tag;
    if (s->u.loop.for_kind == TEXI_FOR_THREAD && tag >= 0 && tag <= 6)
        texi_sb_printf(sb, " %s", thread_names[tag]);
    print_block(sb, s->u.loop.body, indent);
}

static void print_realize(texi_sb *sb, const tex_stmt *s, int indent)
{
    texi_sb_printf(sb, "realize %s(", s->u.realize.tensor->name);
    for (int i = 0; i < s->u.realize.ndim; i++) {
        texi_sb_puts(sb, i ? ", [" : "[");
        texi_expr_print(sb, s->u.realize.mins[i]);
        texi_sb_puts(sb, ", ");
        texi_expr_print(sb, s->u.realize.extents[i]);
        texi_sb_putc(sb, ']');
    }
    texi_sb_printf(sb, ") %s", scope_names[s->u.realize.scope]);
    print_block(sb, s->u.realize.body, indent);
}

static void print_allocate(texi_sb *sb, const tex_stmt *s, int indent)
{
    const texi_buffer *b = s->u.alloc.buf;
    texi_sb_printf(sb, "allocate %s: %s[", b->name, tex_dtype_name(b->dtype));
    print_list(sb, b->ndim, b->shape);
    texi_sb_printf(sb, "] %s", scope_names[b->scope]);
    print_block(sb, s->u.alloc.body, indent);
}

static void print_if(texi_sb *sb, const tex_stmt *s, int indent)
{
    texi_sb_puts(sb, "if (");
    texi_expr_print(sb, s->u.ifs.cond);
    texi_sb_putc(sb, ')');
    print_block_open(sb, s->u.ifs.then_s, indent);
    if (s->u.ifs.else_s) {
        texi_sb_puts(sb, " else");
        print_block_open(sb, s->u.ifs.else_s, indent);
    }
    texi_sb_putc(sb, '\n');
}

/* `intrin NAME.fn(A[i, k] dims (0, 1), ...)` before flattening,
 * `intrin NAME.fn(A + off strides (s0, s1), ...)` after. */
static void print_intrin(texi_sb *sb, const tex_stmt *s)
{
    static const char *const fn_names[TEXI_INTRIN_FN_COUNT] = {"body", "reset", "update"};
    texi_sb_printf(sb, "intrin %s.%s(", s->u.intrin.intrin->name, fn_names[s->u.intrin.fn]);
    for (int i = 0; i < s->u.intrin.n_args; i++) {
        const texi_intrin_arg *a = &s->u.intrin.args[i];
        texi_sb_puts(sb, i ? ", " : "");
        if (a->tensor) {
            texi_sb_printf(sb, "%s[", a->tensor->name);
            print_list(sb, a->tensor_ndim, a->mins);
            texi_sb_puts(sb, "] dims (");
            for (int d = 0; d < a->ndim; d++)
                texi_sb_printf(sb, "%s%d", d ? ", " : "", a->dim_map ? a->dim_map[d] : -1);
        } else {
            texi_sb_printf(sb, "%s + ", a->buf ? a->buf->name : "?");
            texi_expr_print(sb, a->offset);
            texi_sb_puts(sb, " strides (");
            if (a->strides)
                print_list(sb, a->ndim, a->strides);
        }
        texi_sb_putc(sb, ')');
    }
    texi_sb_puts(sb, ")\n");
}

void texi_stmt_print(texi_sb *sb, const tex_stmt *s, int indent)
{
    if (!s)
        return;
    if (s->kind == TEXI_STMT_SEQ) {
        for (int i = 0; i < s->u.seq.n; i++)
            texi_stmt_print(sb, s->u.seq.items[i], indent);
        return;
    }
    indent_to(sb, indent);
    switch (s->kind) {
    case TEXI_STMT_FOR:
        print_loop(sb, s, indent);
        return;
    case TEXI_STMT_PROVIDE:
        texi_sb_printf(sb, "%s[", s->u.provide.tensor->name);
        print_list(sb, s->u.provide.n_idx, s->u.provide.idx);
        texi_sb_puts(sb, "] = ");
        texi_expr_print(sb, s->u.provide.value);
        texi_sb_putc(sb, '\n');
        return;
    case TEXI_STMT_REALIZE:
        print_realize(sb, s, indent);
        return;
    case TEXI_STMT_STORE:
        print_access(sb, s->u.store.buf, s->u.store.index, s->u.store.mask);
        texi_sb_puts(sb, " = ");
        texi_expr_print(sb, s->u.store.value);
        texi_sb_putc(sb, '\n');
        return;
    case TEXI_STMT_ALLOCATE:
        print_allocate(sb, s, indent);
        return;
    case TEXI_STMT_IF:
        print_if(sb, s, indent);
        return;
    case TEXI_STMT_LET:
        texi_sb_puts(sb, "let ");
        texi_expr_print(sb, s->u.let.var);
        texi_sb_puts(sb, " = ");
        texi_expr_print(sb, s->u.let.value);
        texi_sb_putc(sb, '\n');
        texi_stmt_print(sb, s->u.let.body, indent);
        return;
    case TEXI_STMT_SEQ:
        return;
    case TEXI_STMT_EVALUATE:
        texi_expr_print(sb, s->u.eval.value);
        texi_sb_putc(sb, '\n');
        return;
    case TEXI_STMT_BARRIER:
        texi_sb_printf(sb, "barrier(%s)\n", scope_names[s->u.barrier.scope]);
        return;
    case TEXI_STMT_ATTR:
        texi_sb_printf(sb, "attr %s", s->u.attr.key);
        if (texi_vector_reason_text(s))
            texi_sb_printf(sb, "(%s)", texi_vector_reason_text(s));
        else if (s->u.attr.value) {
            texi_sb_puts(sb, " = ");
            texi_expr_print(sb, s->u.attr.value);
        }
        print_block(sb, s->u.attr.body, indent);
        return;
    case TEXI_STMT_INTRIN:
        print_intrin(sb, s);
        return;
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    texi_sb_puts(sb, "<bad statement>\n");
}

char *texi_stmt_str(const tex_stmt *s)
{
    texi_sb sb;
    texi_sb_init(&sb);
    texi_stmt_print(&sb, s, 0);
    return texi_sb_take(&sb);
}
