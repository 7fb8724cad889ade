/*
 * Lowered functions: tex_lower, tex_lower_tensors, texi_lower_all (every
 * input, output and free variable a parameter) and tex_func_str.
 *
 * tex_lower validates the request, builds the tex_func shell (parameters with
 * their global buffers, the size variables) and hands it to the pipeline
 * (texi_lower_run), which fills in the body. Validation (docs/api.md, rule 7):
 *   - a function name that is a C identifier, at least one parameter;
 *   - a tensor parameter belongs to the schedule (has a stage) and is listed
 *     once; a VAR parameter is a free tex_var (of any dtype) listed once;
 *   - every placeholder that a computed (non-inlined) stage reads, directly
 *     or through inlined stages, is a parameter, and so is every output;
 *   - every symbolic size the schedule uses (shapes, axis extents, split
 *     factors, bodies) is a VAR parameter or a dimension of a tensor
 *     parameter, so that a call can bind it.
 * Size variables are the free variables of the tensor parameters' shapes
 * that are not VAR parameters, in order of first appearance; a call binds
 * them from the arrays' shapes (rt/args.c). A VAR parameter that is such a free
 * variable is a size too (texi_param.size: int64_t, bound like the others);
 * every other VAR parameter is a scalar passed in its own type.
 *
 * Every failure is recorded in the schedule's context and gives NULL. The
 * function lives in the context's arena.
 */
#include "lower/lower.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE_VARS 256

typedef struct {
    tex_ctx *ctx;
    tex_schedule *sch;
    const char *call; /* "tex_lower" or "tex_lower_tensors" */
    const char *name;
    int n;
    const tex_param *params;
    bool quiet; /* texi_lower_all: a check's function, not dumped */
} request;

static bool is_identifier(const char *s)
{
    if (!*s || isdigit((unsigned char)*s))
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

static int find_tensor_param(const request *r, const tex_tensor *t)
{
    for (int i = 0; i < r->n; i++)
        if (r->params[i].kind == TEX_ARG_TENSOR && r->params[i].t == t)
            return i;
    return -1;
}

static int find_var_param(const request *r, const tex_expr *v)
{
    for (int i = 0; i < r->n; i++)
        if (r->params[i].kind == TEX_ARG_VAR && r->params[i].v == v)
            return i;
    return -1;
}

static int check_param(const request *r, int i)
{
    const tex_param *p = &r->params[i];
    if (p->kind == TEX_ARG_TENSOR) {
        if (!p->t)
            return texi_error(r->ctx, TEX_EMISUSE, "%s: parameter %d of '%s' is a NULL tensor",
                              r->call, i, r->name);
        if (p->t->ctx != r->ctx || !texi_schedule_find_stage(r->sch, p->t))
            return texi_error(r->ctx, TEX_EINVAL,
                              "%s: parameter %d of '%s': tensor '%s' is not part of the schedule",
                              r->call, i, r->name, p->t->name);
        if (find_tensor_param(r, p->t) != i)
            return texi_error(r->ctx, TEX_EINVAL,
                              "%s: tensor '%s' is listed twice in the parameters of '%s'", r->call,
                              p->t->name, r->name);
        return 0;
    }
    if (p->kind != TEX_ARG_VAR)
        return texi_error(r->ctx, TEX_EINVAL, "%s: parameter %d of '%s' has an unknown kind %d",
                          r->call, i, r->name, (int)p->kind);
    if (!p->v)
        return texi_error(r->ctx, TEX_EMISUSE, "%s: parameter %d of '%s' is a NULL variable",
                          r->call, i, r->name);
    if (p->v->ctx != r->ctx)
        return texi_error(r->ctx, TEX_EMISUSE,
                          "%s: parameter %d of '%s' belongs to another context", r->call, i,
                          r->name);
    if (p->v->kind != TEXI_EXPR_VAR || p->v->u.var.iter)
        return texi_error(r->ctx, TEX_EINVAL,
                          "%s: parameter %d of '%s' must be a tex_var (a symbolic size or a "
                          "scalar), not an expression or an axis",
                          r->call, i, r->name);
    if (find_var_param(r, p->v) != i)
        return texi_error(r->ctx, TEX_EINVAL,
                          "%s: variable '%s' is listed twice in the parameters of '%s'", r->call,
                          p->v->u.var.name, r->name);
    return 0;
}

/* The placeholders read by stage st's op, looking through inlined stages,
 * must be parameters. `depth` bounds the walk (the graph is acyclic). */
static int check_reads(const request *r, const tex_stage *st, int depth)
{
    const texi_op *op = st->op;
    for (int i = 0; op && i < op->n_inputs && depth < r->sch->n_stages; i++) {
        tex_tensor *in = op->inputs[i];
        const tex_stage *ps = texi_schedule_find_stage(r->sch, in);
        if (find_tensor_param(r, in) >= 0)
            continue;
        if (!ps || !ps->op || ps->op->kind == TEXI_OP_PLACEHOLDER)
            return texi_error(r->ctx, TEX_EINVAL,
                              "%s: tensor '%s' is read but is not a parameter of '%s'", r->call,
                              in->name, r->name);
        if (ps->attach == TEXI_ATTACH_INLINE)
            TEXI_TRY(check_reads(r, ps, depth + 1));
    }
    return 0;
}

static int check_graph(const request *r)
{
    tex_schedule *s = r->sch;
    for (int i = 0; i < s->n_outputs; i++)
        if (find_tensor_param(r, texi_scatter_target(s->outputs[i])) < 0)
            return texi_error(r->ctx, TEX_EINVAL,
                              "%s: output '%s' of the schedule is not a parameter of '%s'", r->call,
                              s->outputs[i]->name, r->name);
    for (int i = 0; i < s->n_stages; i++) {
        const tex_stage *st = s->stages[i];
        if (st->op && st->op->kind == TEXI_OP_COMPUTE && st->attach != TEXI_ATTACH_INLINE)
            TEXI_TRY(check_reads(r, st, 0));
    }
    return 0;
}

/* ------------------------------------------------------ symbolic sizes */

typedef struct {
    const request *r;
    tex_func *f;
    tex_expr **vars; /* scratch for texi_collect_free_vars */
    int n;
} size_walk;

static bool known_size(const size_walk *w, const tex_expr *v)
{
    if (find_var_param(w->r, v) >= 0)
        return true;
    for (int i = 0; i < w->f->n_size_vars; i++)
        if (w->f->size_vars[i] == v)
            return true;
    return false;
}

static int too_many(const size_walk *w)
{
    return texi_error(w->r->ctx, TEX_EINVAL, "%s: '%s' uses more than %d symbolic sizes",
                      w->r->call, w->r->name, MAX_SIZE_VARS);
}

/* Size variables: free variables of the tensor parameters' shapes; VAR
 * parameters among them are marked as sizes. */
static int collect_size_vars(size_walk *w)
{
    tex_func *f = w->f;
    for (int i = 0; i < f->n_params; i++) {
        const tex_tensor *t = f->params[i].tensor;
        for (int d = 0; t && d < t->ndim; d++) {
            w->n = 0;
            if (texi_collect_free_vars(t->shape[d], w->vars, &w->n, MAX_SIZE_VARS) < 0)
                return too_many(w);
            for (int k = 0; k < w->n; k++) {
                int v = find_var_param(w->r, w->vars[k]);
                if (v >= 0 && texi_dtype_is_int(w->vars[k]->dtype))
                    f->params[v].size = true;
                if (known_size(w, w->vars[k]))
                    continue;
                if (f->n_size_vars == MAX_SIZE_VARS)
                    return too_many(w);
                f->size_vars[f->n_size_vars++] = w->vars[k];
            }
        }
    }
    return 0;
}

/* Every free variable of e must be a parameter or a size variable. */
static int check_bound(size_walk *w, tex_expr *e, const char *stage)
{
    w->n = 0;
    if (e && texi_collect_free_vars(e, w->vars, &w->n, MAX_SIZE_VARS) < 0)
        return too_many(w);
    for (int k = 0; k < w->n; k++)
        if (!known_size(w, w->vars[k]))
            return texi_error(w->r->ctx, TEX_EINVAL,
                              "%s: symbolic '%s' used by stage '%s' is neither a parameter of "
                              "'%s' nor a dimension of one of its tensor parameters",
                              w->r->call, w->vars[k]->u.var.name, stage, w->r->name);
    return 0;
}

static int check_stage_sizes(size_walk *w, const tex_stage *st)
{
    const char *name = st->tensor->name;
    for (int d = 0; d < st->tensor->ndim; d++)
        TEXI_TRY(check_bound(w, st->tensor->shape[d], name));
    if (!st->op || st->op->kind != TEXI_OP_COMPUTE || st->attach == TEXI_ATTACH_INLINE)
        return 0;
    for (int i = 0; i < st->n_all; i++)
        TEXI_TRY(check_bound(w, st->all[i]->extent, name));
    for (int i = 0; i < st->n_rel; i++) {
        TEXI_TRY(check_bound(w, st->rel[i].factor, name));
        TEXI_TRY(check_bound(w, st->rel[i].nparts, name));
    }
    return check_bound(w, st->op->body, name);
}

static int setup_sizes(const request *r, tex_func *f)
{
    size_walk w = {r, f, texi_alloc(r->ctx, sizeof(tex_expr *) * MAX_SIZE_VARS, "size variables"),
                   0};
    f->size_vars = texi_alloc(r->ctx, sizeof(tex_expr *) * MAX_SIZE_VARS, "size variables");
    if (!w.vars || !f->size_vars)
        return TEX_ENOMEM;
    TEXI_TRY(collect_size_vars(&w));
    for (int i = 0; i < r->sch->n_stages; i++)
        TEXI_TRY(check_stage_sizes(&w, r->sch->stages[i]));
    return 0;
}

/* ------------------------------------------------------------- entry */

static tex_func *func_new(const request *r)
{
    tex_func *f = texi_alloc(r->ctx, sizeof *f, "a function");
    if (!f || !(f->name = texi_strdup(r->ctx, r->name)) ||
        !(f->params = texi_alloc(r->ctx, sizeof *f->params * (size_t)r->n, "parameters")))
        return NULL;
    f->ctx = r->ctx;
    f->n_params = r->n;
    f->quiet = r->quiet;
    for (int i = 0; i < r->n; i++) {
        texi_param *p = &f->params[i];
        p->kind = r->params[i].kind;
        if (p->kind == TEX_ARG_VAR) {
            p->var = r->params[i].v;
            continue;
        }
        tex_tensor *t = r->params[i].t;
        p->tensor = t;
        p->buf = texi_buffer_new(r->ctx, t->name, t->dtype, TEXI_SCOPE_GLOBAL, t->ndim, t->shape);
        if (!p->buf)
            return NULL;
    }
    return f;
}

static tex_func *lower(const request *r)
{
    if (!r->name || (r->n > 0 && !r->params)) {
        texi_error(r->ctx, TEX_EMISUSE, "%s: NULL %s", r->call, r->name ? "parameters" : "name");
        return NULL;
    }
    if (!is_identifier(r->name)) {
        texi_error(r->ctx, TEX_EINVAL, "%s: function name '%s' is not a C identifier", r->call,
                   r->name);
        return NULL;
    }
    if (r->n < 1) {
        texi_error(r->ctx, TEX_EINVAL, "%s: function '%s' needs at least one parameter (got %d)",
                   r->call, r->name, r->n);
        return NULL;
    }
    for (int i = 0; i < r->n; i++)
        if (check_param(r, i) < 0)
            return NULL;
    if (check_graph(r) < 0)
        return NULL;
    tex_func *f = func_new(r);
    if (!f || setup_sizes(r, f) < 0)
        return NULL;
    texi_lower lw = {r->ctx, r->sch, f, false};
    int rc = texi_lower_run(&lw, &f->body);
    if (rc < 0 && tex_errcode(r->ctx) == 0)
        texi_error(r->ctx, rc, "%s: lowering '%s' failed", r->call, r->name);
    return rc < 0 ? NULL : f;
}

tex_func *tex_lower(tex_schedule *s, const char *name, int n, const tex_param params[])
{
    if (!s)
        return NULL;
    request r = {s->ctx, s, "tex_lower", name, n, params, false};
    return lower(&r);
}

tex_func *tex_lower_tensors(tex_schedule *s, const char *name, int n, tex_tensor *const args[])
{
    if (!s)
        return NULL;
    if (n > 0 && !args) {
        texi_error(s->ctx, TEX_EMISUSE, "tex_lower_tensors: NULL args");
        return NULL;
    }
    tex_param *params = texi_alloc(s->ctx, sizeof *params * (size_t)(n > 0 ? n : 1), "parameters");
    if (!params)
        return NULL;
    for (int i = 0; i < n; i++) {
        params[i].kind = TEX_ARG_TENSOR;
        params[i].t = args[i];
    }
    request r = {s->ctx, s, "tex_lower_tensors", name, n, params, false};
    return lower(&r);
}

/* Adds the free variables of e (sizes and scalars) to the VAR parameters
 * in params[*n] (capacity cap), each once; -1 when they do not fit. */
static int add_free_vars(tex_expr *e, tex_param *params, int *n, int cap, tex_expr **scratch)
{
    int nv = 0;
    if (!e)
        return 0;
    if (texi_collect_free_vars(e, scratch, &nv, MAX_SIZE_VARS) < 0)
        return -1;
    for (int k = 0; k < nv; k++) {
        int i = 0;
        while (i < *n && !(params[i].kind == TEX_ARG_VAR && params[i].v == scratch[k]))
            i++;
        if (i < *n)
            continue;
        if (*n == cap)
            return -1;
        params[(*n)++] = (tex_param){.kind = TEX_ARG_VAR, .v = scratch[k]};
    }
    return 0;
}

/* The free variables a stage's lowering may read: its shape, extents,
 * split factors and body. */
static int add_stage_vars(const tex_stage *st, tex_param *params, int *n, int cap,
                          tex_expr **scratch)
{
    for (int d = 0; d < st->tensor->ndim; d++)
        TEXI_TRY(add_free_vars(st->tensor->shape[d], params, n, cap, scratch));
    if (!st->op || st->op->kind != TEXI_OP_COMPUTE)
        return 0;
    for (int i = 0; i < st->n_all; i++)
        TEXI_TRY(add_free_vars(st->all[i]->extent, params, n, cap, scratch));
    for (int i = 0; i < st->n_rel; i++) {
        TEXI_TRY(add_free_vars(st->rel[i].factor, params, n, cap, scratch));
        TEXI_TRY(add_free_vars(st->rel[i].nparts, params, n, cap, scratch));
    }
    return add_free_vars(st->op->body, params, n, cap, scratch);
}

tex_func *texi_lower_all(tex_schedule *s, const char *call, const char *name)
{
    int cap = s->n_stages + s->n_outputs + MAX_SIZE_VARS, n = 0;
    tex_param *params = texi_alloc(s->ctx, sizeof *params * (size_t)cap, "parameters");
    tex_expr **scratch = texi_alloc(s->ctx, sizeof *scratch * MAX_SIZE_VARS, "variables");
    if (!params || !scratch)
        return NULL;
    for (int i = 0; i < s->n_stages; i++)
        if (s->stages[i]->op && s->stages[i]->op->kind == TEXI_OP_PLACEHOLDER)
            params[n++] = (tex_param){.kind = TEX_ARG_TENSOR, .t = s->stages[i]->tensor};
    for (int i = 0; i < s->n_outputs; i++) {
        tex_tensor *t = texi_scatter_target(s->outputs[i]);
        int k = 0;
        while (k < n && params[k].t != t)
            k++;
        if (k == n)
            params[n++] = (tex_param){.kind = TEX_ARG_TENSOR, .t = t};
    }
    for (int i = 0; i < s->n_stages; i++)
        if (add_stage_vars(s->stages[i], params, &n, cap, scratch) < 0) {
            texi_error(s->ctx, TEX_EINVAL, "%s: more than %d symbolic sizes and scalars", call,
                       MAX_SIZE_VARS);
            return NULL;
        }
    request r = {s->ctx, s, call, name, n, params, true};
    return lower(&r);
}

/* ------------------------------------------------------------ printing */

static void print_param(texi_sb *sb, const texi_param *p)
{
    if (p->kind == TEX_ARG_VAR) {
        texi_sb_printf(sb, "%s: %s", p->var->u.var.name, tex_dtype_name(p->var->dtype));
        return;
    }
    const tex_tensor *t = p->tensor;
    texi_sb_printf(sb, "%s: %s[", t->name, tex_dtype_name(t->dtype));
    for (int d = 0; d < t->ndim; d++) {
        if (d)
            texi_sb_puts(sb, ", ");
        texi_expr_print(sb, t->shape[d]);
    }
    texi_sb_putc(sb, ']');
}

char *tex_func_str(const tex_func *f)
{
    if (!f)
        return NULL;
    texi_sb sb;
    texi_sb_init(&sb);
    texi_sb_printf(&sb, "func %s(", f->name);
    for (int i = 0; i < f->n_params; i++) {
        if (i)
            texi_sb_puts(&sb, ", ");
        print_param(&sb, &f->params[i]);
    }
    texi_sb_puts(&sb, ") {\n");
    if (f->n_size_vars) {
        texi_sb_puts(&sb, "  // sizes from the arguments' shapes:");
        for (int i = 0; i < f->n_size_vars; i++)
            texi_sb_printf(&sb, "%s %s", i ? "," : "", f->size_vars[i]->u.var.name);
        texi_sb_putc(&sb, '\n');
    }
    texi_stmt_print(&sb, f->body, 1);
    texi_sb_puts(&sb, "}\n");
    return texi_sb_take(&sb);
}
