/*
 * The shared statements of the C-family printer (cprint.h): names, lines
 * and errors; LET, IF, STORE, SEQ, EVALUATE, ATTR bodies, serial loops and
 * intrinsic calls; the entry point's parameters.
 *
 * Every variable and buffer gets a unique identifier derived from its name
 * ("A.shared" -> A_shared; the target's reserved words and the helpers'
 * tex_ prefix avoided; collisions get _1, _2 ...). A LET is a block with a
 * const local; an integer LET's value is a range [v, v] for the proofs of
 * cexpr.c, as is every loop's [min, min + extent). An INTRIN is the call
 * `fn((const T *)(A + (off)), (int64_t)(s0), ..., C + (off), ...)`, inputs
 * then the output (RESET: the output only), T the target's storage type.
 */
#include "codegen_c/cprint.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void texi_cp_init(texi_cp *p, const tex_func *f, const texi_cp_target *target)
{
    memset(p, 0, sizeof *p);
    p->ctx = f->ctx;
    p->f = f;
    p->target = target;
    p->lane = -1;
    texi_cnames_init(&p->names, target->reserved, target->n_reserved);
}

void texi_cp_fini(texi_cp *p)
{
    texi_cnames_fini(&p->names);
    free(p->ranges);
}

void texi_cp_fail(texi_cp *p, int code, const char *fmt, ...)
{
    if (p->rc)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->rc = texi_error(p->ctx, code, "tex_build: function '%s'%s: %s", p->f->name, p->target->label,
                       msg);
}

/* ------------------------------------------------------------------ names */

const char *texi_cp_bind(texi_cp *p, const void *key, const char *name)
{
    texi_cname *nm = texi_cnames_find(&p->names, key);
    const char *c = nm ? nm->cname : texi_cnames_bind(&p->names, key, name);
    if (!c)
        texi_cp_fail(p, TEX_ENOMEM, "out of memory (names)");
    if ((nm = texi_cnames_find(&p->names, key)))
        nm->used = false;
    return c ? c : "?";
}

const char *texi_cp_lookup(texi_cp *p, const void *key, const char *name)
{
    texi_cname *nm = texi_cnames_find(&p->names, key);
    if (!nm) {
        texi_cp_fail(p, TEX_EINTERNAL, "'%s' is used but not bound", name ? name : "?");
        return "?";
    }
    nm->used = true;
    return nm->cname;
}

bool texi_cp_used(const texi_cp *p, const void *key)
{
    texi_cname *nm = texi_cnames_find(&p->names, key);
    return nm && nm->used;
}

void texi_cp_mark_unused(texi_cp *p)
{
    for (int i = 0; i < p->names.n; i++)
        p->names.names[i].used = false;
}

/* ----------------------------------------------------------------- ranges */

bool texi_cp_push_range(texi_cp *p, tex_expr *var, tex_expr *min, tex_expr *extent)
{
    if (p->n_ranges == p->cap_ranges) {
        int cap = p->cap_ranges ? 2 * p->cap_ranges : 16;
        texi_range *nr = realloc(p->ranges, sizeof *nr * (size_t)cap);
        if (!nr) {
            texi_cp_fail(p, TEX_ENOMEM, "out of memory (ranges)");
            return false;
        }
        p->ranges = nr;
        p->cap_ranges = cap;
    }
    p->ranges[p->n_ranges++] = (texi_range){var, min, extent};
    return true;
}

void texi_cp_size_ranges(texi_cp *p)
{
    for (int i = 0; i < p->f->n_size_vars; i++) {
        tex_expr *v = p->f->size_vars[i];
        int bits = texi_dtype_bits(v->dtype);
        int64_t hi = bits >= 64 ? INT64_MAX : (int64_t)((1ull << (bits - 1)) - 1);
        tex_expr *zero = texi_int_imm(p->ctx, v->dtype, 0),
                 *ext = texi_int_imm(p->ctx, v->dtype, hi);
        if (!zero || !ext) {
            texi_cp_fail(p, TEX_ENOMEM, "out of memory (ranges)");
            return;
        }
        texi_cp_push_range(p, v, zero, ext);
    }
}

/* ------------------------------------------------------------------ lines */

void texi_cp_indent(texi_cp *p, texi_sb *sb)
{
    for (int i = 0; i < p->indent; i++)
        texi_sb_puts(sb, "    ");
}

void texi_cp_line(texi_cp *p, texi_sb *sb, const char *fmt, ...)
{
    texi_cp_indent(p, sb);
    va_list ap;
    va_start(ap, fmt);
    texi_sb_vprintf(sb, fmt, ap);
    va_end(ap);
    texi_sb_putc(sb, '\n');
}

void texi_cp_comment_text(texi_sb *sb, const char *s)
{
    for (; *s; s++) {
        if (s[0] == '*' && s[1] == '/')
            texi_sb_puts(sb, "* ");
        else
            texi_sb_putc(sb, *s == '\n' ? ' ' : *s);
    }
}

void texi_cp_expr_comment(texi_cp *p, texi_sb *sb, const char *what, const tex_expr *e)
{
    texi_sb tmp;
    texi_sb_init(&tmp);
    texi_expr_print(&tmp, e);
    texi_cp_indent(p, sb);
    texi_sb_printf(sb, "/* %s: ", what);
    texi_cp_comment_text(sb, tmp.oom || !tmp.buf ? "?" : tmp.buf);
    texi_sb_puts(sb, " */\n");
    texi_sb_fini(&tmp);
}

/* ------------------------------------------------------------- statements */

void texi_cp_block(texi_cp *p, texi_sb *sb, const tex_stmt *s)
{
    p->indent++;
    texi_cp_stmt(p, sb, s);
    p->indent--;
}

void texi_cp_loop(texi_cp *p, texi_sb *sb, const tex_stmt *s)
{
    tex_expr *var = s->u.loop.var;
    const char *name = texi_cp_bind(p, var, var->u.var.name);
    texi_cp_indent(p, sb);
    texi_sb_printf(sb, "for (%s %s = ", p->target->value_type(var->dtype), name);
    texi_cp_expr(p, sb, s->u.loop.min, TEXI_CP_P_TOP, true);
    texi_sb_printf(sb, "; %s < ", name);
    if (!texi_expr_is_int_const(s->u.loop.min, NULL) || s->u.loop.min->u.i != 0) {
        texi_cp_expr(p, sb, s->u.loop.min, TEXI_CP_P_ADD, true);
        texi_sb_puts(sb, " + ");
        texi_cp_expr(p, sb, s->u.loop.extent, TEXI_CP_P_ADD + 1, true);
    } else {
        texi_cp_expr(p, sb, s->u.loop.extent, TEXI_CP_P_REL + 1, true);
    }
    texi_sb_printf(sb, "; ++%s) {\n", name);
    bool ranged = texi_cp_push_range(p, var, s->u.loop.min, s->u.loop.extent);
    p->indent++;
    int bases = texi_cp_bases_begin(p, sb, s->u.loop.body);
    texi_cp_stmt(p, sb, s->u.loop.body);
    texi_cp_bases_end(p, sb, bases);
    p->indent--;
    p->n_ranges -= ranged;
    texi_cp_line(p, sb, "}");
}

static void emit_let(texi_cp *p, texi_sb *sb, const tex_stmt *s)
{
    tex_expr *var = s->u.let.var;
    bool intv = !texi_dtype_is_float(var->dtype) && var->lanes == 1;
    texi_cp_line(p, sb, "{");
    p->indent++;
    texi_sb tmp;
    texi_sb_init(&tmp); /* the value first: it may use an outer binding of var */
    texi_cp_expr(p, &tmp, s->u.let.value, TEXI_CP_P_TOP, intv);
    const char *name = texi_cp_bind(p, var, var->u.var.name);
    texi_cp_line(p, sb, "const %s %s = %s;",
                 var->lanes > 1 ? texi_cp_vector_type(p, var->dtype, var->lanes, false)
                                : p->target->value_type(var->dtype),
                 name, tmp.buf ? tmp.buf : "0");
    if (tmp.oom)
        texi_cp_fail(p, TEX_ENOMEM, "out of memory (source text)");
    texi_sb_fini(&tmp);
    tex_expr *one = intv ? texi_int_imm(p->ctx, var->dtype, 1) : NULL;
    bool ranged = one && texi_cp_push_range(p, var, s->u.let.value, one);
    texi_cp_stmt(p, sb, s->u.let.body);
    p->n_ranges -= ranged;
    if (!texi_cp_used(p, var))
        texi_cp_line(p, sb, "(void)%s;", name);
    p->indent--;
    texi_cp_line(p, sb, "}");
}

static void emit_if(texi_cp *p, texi_sb *sb, const tex_stmt *s)
{
    texi_cp_indent(p, sb);
    texi_sb_puts(sb, "if (");
    texi_cp_expr(p, sb, s->u.ifs.cond, TEXI_CP_P_TOP, true);
    texi_sb_puts(sb, ") {\n");
    texi_cp_block(p, sb, s->u.ifs.then_s);
    if (s->u.ifs.else_s) {
        texi_cp_line(p, sb, "} else {");
        texi_cp_block(p, sb, s->u.ifs.else_s);
    }
    texi_cp_line(p, sb, "}");
}

static void emit_store(texi_cp *p, texi_sb *sb, const tex_stmt *s)
{
    const texi_buffer *b = s->u.store.buf;
    if (s->u.store.index->lanes > 1) {
        texi_cp_vector_store(p, sb, s);
        return;
    }
    texi_cp_indent(p, sb);
    texi_cp_element(p, sb, b, s->u.store.index);
    texi_sb_puts(sb, " = ");
    texi_cp_store_value(p, sb, s->u.store.value, b->dtype);
    texi_sb_puts(sb, ";\n");
}

/* One tile argument of an intrinsic call: pointer, then strides. */
static void emit_tile(texi_cp *p, texi_sb *sb, const texi_intrin_arg *a, bool input)
{
    const texi_buffer *b = a->buf;
    if (!b || !a->offset || !a->strides) {
        texi_cp_fail(p, TEX_EINTERNAL, "a tensor intrinsic's tile was not flattened");
        return;
    }
    if (input)
        texi_sb_printf(sb, "(const %s *)", p->target->storage_type(b->dtype));
    texi_sb_printf(sb, "(%s + ", texi_cp_lookup(p, texi_buffer_key(b), b->name));
    texi_cp_expr(p, sb, a->offset, TEXI_CP_P_ADD + 1, true);
    texi_sb_putc(sb, ')');
    for (int j = 0; j < a->ndim; j++) {
        texi_sb_puts(sb, ", (int64_t)");
        texi_cp_expr(p, sb, a->strides[j], TEXI_CP_P_UNARY, true);
    }
}

static void emit_intrin(texi_cp *p, texi_sb *sb, const tex_stmt *s)
{
    const tex_intrin *in = s->u.intrin.intrin;
    const char *fn = in->fn[s->u.intrin.fn];
    const char *src = p->target->intrin_source(in);
    if (!src || !fn) {
        texi_cp_fail(p, TEX_EUNAVAILABLE, "tensor intrinsic '%s' has no %s%s%s", in->name,
                     p->target->intrin_lang, src ? "function for this call" : "source",
                     p->target->missing_intrin);
        return;
    }
    texi_cp_indent(p, sb);
    texi_sb_printf(sb, "%s(", fn);
    for (int i = 0; i < s->u.intrin.n_args; i++) {
        texi_sb_puts(sb, i ? ", " : "");
        emit_tile(p, sb, &s->u.intrin.args[i], i < s->u.intrin.n_args - 1);
    }
    texi_sb_puts(sb, ");\n");
}

#define MAX_INTRINS 64

/* Whether one of list[0..i) has the source src: two handles of one built-in
 * (or of one depth of a CPU GEMM built-in) define the same functions, which
 * the file may define only once. */
static bool same_source_before(texi_cp *p, const tex_intrin *const *list, int i, const char *src)
{
    for (int j = 0; j < i; j++) {
        const char *other = p->target->intrin_source(list[j]);
        if (other && strcmp(other, src) == 0)
            return true;
    }
    return false;
}

void texi_cp_intrin_sources(texi_cp *p, texi_sb *sb)
{
    const tex_intrin *list[MAX_INTRINS];
    int n = texi_stmt_intrins(p->f->body, list, MAX_INTRINS);
    if (n < 0)
        texi_cp_fail(p, TEX_EUNAVAILABLE, "more than %d distinct tensor intrinsics", MAX_INTRINS);
    for (int i = 0; i < n; i++) {
        const char *src = p->target->intrin_source(list[i]);
        if (src && !same_source_before(p, list, i, src))
            texi_sb_printf(sb, "/* tensor intrinsic '%s' */\n%s\n\n", list[i]->name, src);
    }
}

void texi_cp_stmt(texi_cp *p, texi_sb *sb, const tex_stmt *s)
{
    if (p->rc || p->target->stmt(p, sb, s))
        return;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        texi_cp_loop(p, sb, s);
        return;
    case TEXI_STMT_STORE:
        emit_store(p, sb, s);
        return;
    case TEXI_STMT_IF:
        emit_if(p, sb, s);
        return;
    case TEXI_STMT_LET:
        emit_let(p, sb, s);
        return;
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            texi_cp_stmt(p, sb, s->u.seq.items[i]);
        return;
    case TEXI_STMT_EVALUATE:
        texi_cp_indent(p, sb);
        texi_sb_puts(sb, "(void)(");
        texi_cp_expr(p, sb, s->u.eval.value, TEXI_CP_P_TOP, false);
        texi_sb_puts(sb, ");\n");
        return;
    case TEXI_STMT_ATTR:
        texi_cp_stmt(p, sb, s->u.attr.body);
        return;
    case TEXI_STMT_INTRIN:
        emit_intrin(p, sb, s);
        return;
    case TEXI_STMT_ALLOCATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    texi_cp_fail(p, TEX_EINTERNAL, "a '%s' statement cannot occur in a lowered function",
                 s->kind < TEXI_STMT_KIND_COUNT ? texi_stmt_kind_names[s->kind] : "?");
}

int64_t texi_cp_const_elems(const texi_buffer *b)
{
    int64_t n = 1, d;
    for (int i = 0; i < b->ndim; i++) {
        if (!texi_expr_is_int_const(b->shape[i], &d) || d < 0 || (d && n > INT64_MAX / d))
            return -1;
        n *= d;
    }
    return b->ndim < 0 ? -1 : n;
}

/* ------------------------------------------------------------- parameters */

/* A scalar argument (int64_t for a size, else its dtype's storage type),
 * named after var when that is var's value type, else "<name>_arg". */
static void scalar_param(texi_cp *p, texi_sb *sb, const void *argkey, tex_expr *var, bool size)
{
    const char *name = texi_cp_bind(p, var, var->u.var.name);
    const char *type = size ? "int64_t" : p->target->storage_type(var->dtype);
    if (strcmp(type, p->target->value_type(var->dtype)) == 0) {
        texi_sb_printf(sb, "%s %s", type, name);
        return;
    }
    if (!size && (var->dtype == TEX_F16 || var->dtype == TEX_BF16))
        p->helpers |= var->dtype == TEX_F16 ? TEXI_CP_H_F16 : TEXI_CP_H_BF16; /* the decoding */
    size_t n = strlen(name) + 8;
    char *arg = malloc(n);
    if (!arg) {
        texi_cp_fail(p, TEX_ENOMEM, "out of memory (names)");
        return;
    }
    snprintf(arg, n, "%s_arg", name);
    texi_sb_printf(sb, "%s %s", type, texi_cp_bind(p, argkey, arg));
    free(arg);
}

int texi_cp_params(texi_cp *p, texi_sb *sb)
{
    const tex_func *f = p->f;
    for (int i = 0; i < f->n_params; i++) {
        const texi_param *prm = &f->params[i];
        texi_sb_puts(sb, i ? ", " : "");
        if (prm->kind == TEX_ARG_VAR) {
            scalar_param(p, sb, prm, prm->var, prm->size);
            continue;
        }
        const char *name = texi_cp_bind(p, texi_buffer_key(prm->buf), prm->tensor->name);
        bool written = texi_stmt_stores_to(f->body, prm->buf);
        texi_sb_printf(sb, "%s%s *%s %s", written ? "" : "const ",
                       p->target->storage_type(prm->buf->dtype), p->target->restrict_kw, name);
    }
    for (int i = 0; i < f->n_size_vars; i++) {
        texi_sb_puts(sb, f->n_params + i ? ", " : "");
        scalar_param(p, sb, &f->size_vars[i], f->size_vars[i], true);
    }
    return f->n_params + f->n_size_vars;
}

/* The local of a scalar whose argument has another type (scalar_param). */
static void scalar_local(texi_cp *p, texi_sb *sb, const tex_expr *var, bool size, const char *name,
                         const char *arg)
{
    tex_dtype t = var->dtype;
    const char *vt = p->target->value_type(t);
    if (!size && (t == TEX_F16 || t == TEX_BF16))
        texi_cp_line(p, sb, "const float %s = %s%s);", name, p->target->decode[t == TEX_BF16], arg);
    else if (!size && t == TEX_BOOL)
        texi_cp_line(p, sb, "const %s %s = %s != 0;", vt, name, arg);
    else
        texi_cp_line(p, sb, "const %s %s = (%s)%s;", vt, name, vt, arg);
}

void texi_cp_param_prologue(texi_cp *p, texi_sb *sb)
{
    const tex_func *f = p->f;
    for (int i = 0; i < f->n_params + f->n_size_vars; i++) {
        const texi_param *prm = i < f->n_params ? &f->params[i] : NULL;
        tex_expr *var = prm ? prm->var : f->size_vars[i - f->n_params];
        const void *argkey = prm ? (const void *)prm : (const void *)&f->size_vars[i - f->n_params];
        const void *key = prm && prm->kind == TEX_ARG_TENSOR ? texi_buffer_key(prm->buf) : var;
        texi_cname *nm = texi_cnames_find(&p->names, key);
        texi_cname *arg = texi_cnames_find(&p->names, argkey);
        if (!nm)
            continue;
        if (arg && nm->used)
            scalar_local(p, sb, var, !prm || prm->size, nm->cname, arg->cname);
        else if (!nm->used)
            texi_cp_line(p, sb, "(void)%s;", arg ? arg->cname : nm->cname);
    }
}
