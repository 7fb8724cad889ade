/*
 * The launch plan (launch_plan.h): a device module's host side compiled into
 * small stack programs the runtime evaluates at call time, after the
 * context that built the kernel may be gone. Everything here is malloc'ed
 * and owned by the plan; nothing points into an arena.
 *
 * A program is the postfix form of one integer expression over the size
 * table (the values of the VAR parameters in order, then the size
 * variables, as texi_backend.call receives them): constants, size-table
 * loads, + - * floordiv floormod min max, comparisons, && || !, select and
 * integer casts (wrapping to the cast's width as the device would). True
 * division of integers is floordiv, as in the evaluator. Evaluation is in
 * int64 and overflow safe: a division by zero or an overflowing operation
 * "poisons" its result instead of trapping; select and && / || drop the
 * poison of an operand they do not need (so `select(n > 0, m / n, 0)` is
 * fine), and a poisoned final value is TEX_EINVAL. Stack misuse (a corrupt
 * program) is TEX_EINVAL too.
 *
 * Not here: float expressions, loads or math calls (TEX_EUNAVAILABLE at
 * build time, naming the expression), launching, allocating.
 */
#include "rt/launch_plan.h"
#include "ir/arith.h"

#include <stdlib.h>
#include <string.h>

#define MAX_STACK 64

enum {
    OP_CONST, /* push imm */
    OP_SIZE,  /* push sizes[imm] */
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_FLOORDIV,
    OP_FLOORMOD,
    OP_MIN,
    OP_MAX,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_AND,
    OP_OR,
    OP_NOT,
    OP_SELECT, /* cond, t, f -> cond ? t : f */
    OP_CAST,   /* wrap to the width of dtype imm (bool: != 0) */
    OP_COUNT
};

/* ------------------------------------------------------------- compiling */

typedef struct {
    const tex_func *f;
    texi_launch_insn *code;
    int n, cap;
    int depth, max_depth;
    int rc;
    const tex_expr *bad; /* the first unsupported node */
} compiler;

static void emit(compiler *c, int op, int64_t imm, int pops)
{
    if (c->rc)
        return;
    if (c->n == c->cap) {
        int nc = c->cap ? c->cap * 2 : 16;
        texi_launch_insn *p = realloc(c->code, sizeof *p * (size_t)nc);
        if (!p) {
            c->rc = TEX_ENOMEM;
            return;
        }
        c->code = p;
        c->cap = nc;
    }
    c->code[c->n++] = (texi_launch_insn){op, imm};
    c->depth += 1 - pops;
    if (c->depth > c->max_depth)
        c->max_depth = c->depth;
}

/* The size-table index of variable v, or -1. */
static int size_index(const tex_func *f, const tex_expr *v)
{
    int k = 0;
    for (int p = 0; p < f->n_params; p++)
        if (f->params[p].kind == TEX_ARG_VAR) {
            if (f->params[p].var == v)
                return k;
            k++;
        }
    for (int p = 0; p < f->n_size_vars; p++)
        if (f->size_vars[p] == v)
            return k + p;
    return -1;
}

static int binary_op(enum texi_expr_kind k)
{
    switch (k) {
    case TEXI_EXPR_ADD:
        return OP_ADD;
    case TEXI_EXPR_SUB:
        return OP_SUB;
    case TEXI_EXPR_MUL:
        return OP_MUL;
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
        return OP_FLOORDIV;
    case TEXI_EXPR_FLOORMOD:
        return OP_FLOORMOD;
    case TEXI_EXPR_MIN:
        return OP_MIN;
    case TEXI_EXPR_MAX:
        return OP_MAX;
    case TEXI_EXPR_EQ:
        return OP_EQ;
    case TEXI_EXPR_NE:
        return OP_NE;
    case TEXI_EXPR_LT:
        return OP_LT;
    case TEXI_EXPR_LE:
        return OP_LE;
    case TEXI_EXPR_GT:
        return OP_GT;
    case TEXI_EXPR_GE:
        return OP_GE;
    case TEXI_EXPR_AND:
        return OP_AND;
    default:
        return OP_OR;
    }
}

static void unsupported(compiler *c, const tex_expr *e)
{
    if (!c->rc) {
        c->rc = TEX_EUNAVAILABLE;
        c->bad = e;
    }
}

static void compile(compiler *c, const tex_expr *e)
{
    if (c->rc)
        return;
    if (texi_dtype_is_float(e->dtype)) {
        unsupported(c, e);
        return;
    }
    switch (e->kind) {
    case TEXI_EXPR_INT:
        emit(c, OP_CONST, e->dtype == TEX_BOOL ? e->u.i != 0 : e->u.i, 0);
        return;
    case TEXI_EXPR_VAR: {
        int k = size_index(c->f, e);
        if (k < 0)
            unsupported(c, e);
        else
            emit(c, OP_SIZE, k, 0);
        return;
    }
    TEXI_CASE_BINARY:
        compile(c, e->u.bin.a);
        compile(c, e->u.bin.b);
        emit(c, binary_op(e->kind), 0, 2);
        return;
    case TEXI_EXPR_NOT:
        compile(c, e->u.un.a);
        emit(c, OP_NOT, 0, 1);
        return;
    case TEXI_EXPR_CAST:
        compile(c, e->u.un.a);
        emit(c, OP_CAST, (int64_t)e->dtype, 1);
        return;
    case TEXI_EXPR_SELECT:
        compile(c, e->u.sel.cond);
        compile(c, e->u.sel.t);
        compile(c, e->u.sel.f);
        emit(c, OP_SELECT, 0, 3);
        return;
    case TEXI_EXPR_FLOAT:
    case TEXI_EXPR_CALL:
    case TEXI_EXPR_ACCESS:
    case TEXI_EXPR_LOAD:
    case TEXI_EXPR_SEARCH:
    case TEXI_EXPR_RAMP:
    case TEXI_EXPR_BROADCAST:
    case TEXI_EXPR_VREDUCE:
    case TEXI_EXPR_REDUCE:
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    unsupported(c, e);
}

/* Records the failure of compiling `what` in f->ctx. */
static int compile_error(const tex_func *f, const compiler *c, const char *what,
                         const tex_expr *whole)
{
    if (c->rc == TEX_ENOMEM)
        return texi_error(f->ctx, TEX_ENOMEM,
                          "tex_build: function '%s': out of memory (launch "
                          "plan)",
                          f->name);
    texi_sb a, b;
    texi_sb_init(&a);
    texi_sb_init(&b);
    texi_expr_print(&a, whole);
    if (c->bad)
        texi_expr_print(&b, c->bad);
    int rc = texi_error(f->ctx, TEX_EUNAVAILABLE,
                        "tex_build: function '%s': the %s %s cannot be computed on the host "
                        "(%s%s): only integer expressions of the parameters and sizes can",
                        f->name, what, a.buf ? a.buf : "?", c->bad ? "it uses " : "too complex",
                        c->bad && b.buf ? b.buf : "");
    texi_sb_fini(&a);
    texi_sb_fini(&b);
    return rc;
}

int texi_size_prog_compile(const tex_func *f, const tex_expr *e, texi_launch_prog *p,
                           const tex_expr **bad)
{
    memset(p, 0, sizeof *p);
    if (!e)
        return 0;
    compiler c = {.f = f};
    compile(&c, e);
    if (!c.rc && c.max_depth > MAX_STACK)
        c.rc = TEX_EUNAVAILABLE;
    if (bad)
        *bad = c.bad;
    if (c.rc) {
        free(c.code);
        return c.rc;
    }
    p->n = c.n;
    p->code = c.code;
    return 0;
}

/* Compiles e into *p, recording a failure in f->ctx. */
static int compile_prog(const tex_func *f, const tex_expr *e, const char *what, texi_launch_prog *p)
{
    compiler c = {.f = f};
    c.rc = texi_size_prog_compile(f, e, p, &c.bad);
    return c.rc ? compile_error(f, &c, what, e) : 0;
}

/* The product of b's shape, i64 (NULL on ENOMEM). */
static tex_expr *elem_count(tex_ctx *ctx, const texi_buffer *b)
{
    tex_expr *n = texi_int_imm(ctx, TEX_I64, 1);
    for (int i = 0; n && i < b->ndim; i++) {
        tex_expr *d = texi_convert(b->shape[i], TEX_I64);
        n = d ? texi_binary(TEXI_EXPR_MUL, n, d) : NULL;
    }
    return n;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static char *expr_text(const tex_expr *e)
{
    texi_sb sb;
    texi_sb_init(&sb);
    texi_expr_print(&sb, e);
    char *s = texi_sb_take(&sb);
    texi_sb_fini(&sb);
    return s;
}

static int oom(const tex_func *f)
{
    return texi_error(f->ctx, TEX_ENOMEM, "tex_build: function '%s': out of memory (launch plan)",
                      f->name);
}

static int build_kernels(const tex_func *f, const texi_device_module *m, texi_launch_plan *p)
{
    static const char *const what[TEXI_N_LAUNCH_TAGS] = {"grid.x extent",  "grid.y extent",
                                                         "grid.z extent",  "block.x extent",
                                                         "block.y extent", "block.z extent"};
    p->kernels = calloc((size_t)(m->n_kernels > 0 ? m->n_kernels : 1), sizeof *p->kernels);
    if (!p->kernels)
        return oom(f);
    p->n_kernels = m->n_kernels;
    for (int i = 0; i < m->n_kernels; i++) {
        p->kernels[i].name = dup_str(m->kernels[i].name);
        if (!p->kernels[i].name)
            return oom(f);
        for (int t = 0; t < TEXI_N_LAUNCH_TAGS; t++)
            TEXI_TRY(compile_prog(f, m->kernels[i].extent[t], what[t], &p->kernels[i].extent[t]));
    }
    return 0;
}

static int build_workspace(const tex_func *f, const texi_device_module *m, texi_launch_plan *p)
{
    p->workspace = calloc((size_t)(m->n_workspace > 0 ? m->n_workspace : 1), sizeof *p->workspace);
    if (!p->workspace)
        return oom(f);
    p->n_workspace = m->n_workspace;
    for (int i = 0; i < m->n_workspace; i++) {
        const texi_buffer *b = m->workspace[i];
        p->workspace[i].name = dup_str(b->name);
        p->workspace[i].dtype = b->dtype;
        tex_expr *n = elem_count(f->ctx, b);
        if (!p->workspace[i].name || !n)
            return oom(f);
        TEXI_TRY(compile_prog(f, n, "workspace size", &p->workspace[i].elems));
    }
    return 0;
}

static int build_asserts(const tex_func *f, const texi_device_module *m, texi_launch_plan *p)
{
    size_t n = (size_t)(m->n_asserts > 0 ? m->n_asserts : 1);
    p->asserts = calloc(n, sizeof *p->asserts);
    p->assert_text = calloc(n, sizeof *p->assert_text);
    if (!p->asserts || !p->assert_text)
        return oom(f);
    p->n_asserts = m->n_asserts;
    for (int i = 0; i < m->n_asserts; i++) {
        p->assert_text[i] = expr_text(m->asserts[i]);
        if (!p->assert_text[i])
            return oom(f);
        TEXI_TRY(compile_prog(f, m->asserts[i], "runtime check", &p->asserts[i]));
    }
    return 0;
}

int texi_launch_plan_build(const tex_func *f, const texi_device_module *m, texi_launch_plan *out)
{
    memset(out, 0, sizeof *out);
    int rc = build_kernels(f, m, out);
    if (rc == 0)
        rc = build_workspace(f, m, out);
    if (rc == 0)
        rc = build_asserts(f, m, out);
    if (rc < 0)
        texi_launch_plan_free(out);
    return rc < 0 ? rc : 0;
}

void texi_launch_plan_free(texi_launch_plan *p)
{
    if (!p)
        return;
    for (int i = 0; p->kernels && i < p->n_kernels; i++) {
        free(p->kernels[i].name);
        for (int t = 0; t < TEXI_N_LAUNCH_TAGS; t++)
            free(p->kernels[i].extent[t].code);
    }
    for (int i = 0; p->workspace && i < p->n_workspace; i++) {
        free(p->workspace[i].name);
        free(p->workspace[i].elems.code);
    }
    for (int i = 0; p->asserts && i < p->n_asserts; i++) {
        free(p->asserts[i].code);
        free(p->assert_text ? p->assert_text[i] : NULL);
    }
    free(p->kernels);
    free(p->workspace);
    free(p->asserts);
    free(p->assert_text);
    memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------ evaluating */

/* A stack slot: the value, and whether it is poisoned (file comment). */
typedef struct {
    int64_t v;
    bool bad;
} slot;

/* a op b for the arithmetic ops; *bad on division by zero or overflow. */
static int64_t arith(int op, int64_t a, int64_t b, bool *bad)
{
    int64_t r = 0;
    switch (op) {
    case OP_ADD:
        *bad |= __builtin_add_overflow(a, b, &r);
        return r;
    case OP_SUB:
        *bad |= __builtin_sub_overflow(a, b, &r);
        return r;
    case OP_MUL:
        *bad |= __builtin_mul_overflow(a, b, &r);
        return r;
    case OP_FLOORDIV:
    case OP_FLOORMOD:
        if (b == 0 || (a == INT64_MIN && b == -1)) {
            *bad = true;
            return 0;
        }
        return op == OP_FLOORDIV ? texi_arith_floordiv(a, b) : texi_arith_floormod(a, b);
    case OP_MIN:
        return a < b ? a : b;
    case OP_MAX:
        return a > b ? a : b;
    case OP_EQ:
        return a == b;
    case OP_NE:
        return a != b;
    case OP_LT:
        return a < b;
    case OP_LE:
        return a <= b;
    case OP_GT:
        return a > b;
    default:
        return a >= b; /* OP_GE */
    }
}

/* Applies one operator instruction to the stack (top at st[*sp - 1]). */
static int apply(int op, int64_t imm, slot *st, int *sp)
{
    int need = op == OP_SELECT ? 3 : op == OP_NOT || op == OP_CAST ? 1 : 2;
    if (*sp < need)
        return TEX_EINVAL;
    slot *a = &st[*sp - need];
    if (op == OP_NOT || op == OP_CAST) {
        a->v = op == OP_NOT ? !a->v : texi_wrap_int((tex_dtype)imm, (uint64_t)a->v);
        return 0;
    }
    slot *b = a + 1;
    if (op == OP_SELECT) {
        slot cond = *a;
        *a = cond.v ? b[0] : b[1];
        a->bad |= cond.bad;
    } else if (op == OP_AND || op == OP_OR) {
        bool dec = op == OP_AND ? (!a->bad && !a->v) || (!b->bad && !b->v)
                                : (!a->bad && a->v) || (!b->bad && b->v);
        a->bad = !dec && (a->bad || b->bad);
        a->v = op == OP_AND ? a->v && b->v : a->v || b->v;
        if (dec)
            a->v = op == OP_OR;
    } else {
        bool bad = a->bad || b->bad;
        a->v = bad ? 0 : arith(op, a->v, b->v, &bad);
        a->bad = bad;
    }
    *sp -= need - 1;
    return 0;
}

int texi_launch_prog_eval(const texi_launch_prog *p, const int64_t *sizes, int64_t *value)
{
    if (!p || p->n == 0) {
        *value = 1;
        return 0;
    }
    slot st[MAX_STACK];
    int sp = 0;
    for (int i = 0; i < p->n; i++) {
        const texi_launch_insn *in = &p->code[i];
        if (in->op == OP_CONST || in->op == OP_SIZE) {
            if (sp == MAX_STACK || (in->op == OP_SIZE && (!sizes || in->imm < 0)))
                return TEX_EINVAL;
            st[sp++] = (slot){in->op == OP_CONST ? in->imm : sizes[in->imm], false};
        } else if (in->op < 0 || in->op >= OP_COUNT || apply(in->op, in->imm, st, &sp) != 0) {
            return TEX_EINVAL;
        }
    }
    if (sp != 1 || st[0].bad)
        return TEX_EINVAL;
    *value = st[0].v;
    return 0;
}
