/*
 * A kernel's signature (backend.h): the parameters, the size table and the
 * derived dimensions of a lowered function, copied out of its context so
 * that arguments can be checked after tex_ctx_free.
 *
 * The size table holds the VAR params (in params order) then the size
 * variables (tex_func.size_vars order). A dimension is a constant, an index
 * into that table for a bare size variable, or TEXI_DIM_DERIVED for any
 * other expression (n + 1), which keeps the size program launch_plan.c
 * compiles and is checked once every size is bound.
 */
#include "rt/backend.h"

#include <stdlib.h>
#include <string.h>

static int size_index(tex_expr *const *sizes, int n_sizes, const tex_expr *v)
{
    for (int i = 0; i < n_sizes; i++)
        if (sizes[i] == v)
            return i;
    return -1;
}

/* Appends dimension dim of parameter param, given by e; false on ENOMEM. */
static bool add_derived(tex_kernel *k, const tex_func *f, int param, int dim, const tex_expr *e)
{
    texi_derived_dim *grown = realloc(k->derived, (size_t)(k->n_derived + 1) * sizeof *grown);
    if (!grown)
        return false;
    k->derived = grown;
    texi_derived_dim *d = &grown[k->n_derived++];
    *d = (texi_derived_dim){.param = param, .dim = dim};
    int rc = texi_size_prog_compile(f, e, &d->prog, NULL);
    d->ok = rc == 0;
    return rc != TEX_ENOMEM;
}

typedef struct {
    const void *key;
    bool found;
} find_walk;

static bool find_in_expr(tex_expr *e, void *ud)
{
    find_walk *w = ud;
    w->found |= e->kind == TEXI_EXPR_SEARCH && e->u.search.op == TEXI_SEARCH_FIND &&
                e->u.search.buf && texi_buffer_key(e->u.search.buf) == w->key;
    return !w->found;
}

static bool find_in_stmt(const tex_stmt *s, void *ud)
{
    texi_stmt_visit_exprs(s, find_in_expr, ud);
    return !((find_walk *)ud)->found;
}

/* Whether f's body searches parameter i's indices (SEARCH find): then each
 * of its rows must be sorted, and the kernel checks that (index_check.c)
 * over the rows of its axis's indptr parameter or of its fixed length. */
static int note_sorted(texi_kernel_param *kp, const tex_func *f, int i)
{
    const tex_tensor *t = f->params[i].tensor;
    find_walk w = {texi_buffer_key(f->params[i].buf), false};
    texi_stmt_visit(f->body, find_in_stmt, &w);
    kp->sorted = w.found;
    kp->rows_param = -1;
    for (int j = 0; kp->sorted && t->index_rows && j < f->n_params; j++)
        if (f->params[j].kind != TEX_ARG_VAR && f->params[j].tensor == t->index_rows)
            kp->rows_param = j;
    if (!kp->sorted || !t->index_row_len)
        return 0;
    int rc = texi_size_prog_compile(f, t->index_row_len, &kp->row_len, NULL);
    kp->row_len_ok = rc == 0;
    return rc == TEX_ENOMEM ? rc : 0;
}

static bool copy_param(tex_kernel *k, const tex_func *f, int i, tex_expr *const *sizes)
{
    const texi_param *p = &f->params[i];
    texi_kernel_param *kp = &k->params[i];
    kp->kind = p->kind;
    if (p->kind == TEX_ARG_VAR) {
        kp->name = strdup(p->var->u.var.name);
        kp->dtype = p->var->dtype;
        kp->size = p->size;
        return kp->name != NULL;
    }
    const tex_tensor *t = p->tensor;
    kp->name = strdup(t->name);
    kp->dtype = t->dtype;
    kp->ndim = t->ndim;
    kp->dims = calloc(t->ndim > 0 ? (size_t)t->ndim : 1, sizeof *kp->dims);
    if (!kp->name || !kp->dims)
        return false;
    kp->index_role = t->index_role;
    if (t->index_role != TEXI_INDEX_NONE) {
        int rc = texi_size_prog_compile(f, t->index_bound, &kp->index_bound, NULL);
        if (rc == TEX_ENOMEM || note_sorted(kp, f, i) == TEX_ENOMEM)
            return false;
        kp->index_ok = rc == 0;
    }
    for (int d = 0; d < t->ndim; d++) {
        const tex_expr *e = t->shape[d];
        int j = e->kind == TEXI_EXPR_VAR ? size_index(sizes, k->n_sizes, e) : -1;
        if (e->kind == TEXI_EXPR_INT)
            kp->dims[d] = e->u.i;
        else if (j >= 0)
            kp->dims[d] = -1 - (int64_t)j;
        else if (!add_derived(k, f, i, d, e))
            return false;
        else
            kp->dims[d] = TEXI_DIM_DERIVED;
    }
    return true;
}

bool texi_kernel_signature(tex_kernel *k, const tex_func *f)
{
    int n_var = 0;
    for (int i = 0; i < f->n_params; i++)
        n_var += f->params[i].kind == TEX_ARG_VAR;
    k->n_sizes = n_var + f->n_size_vars;
    k->n_extra = f->n_size_vars;
    tex_expr **sizes = calloc((size_t)k->n_sizes + 1, sizeof *sizes);
    k->size_names = calloc((size_t)k->n_sizes + 1, sizeof *k->size_names);
    k->extra_size_index = calloc((size_t)k->n_extra + 1, sizeof *k->extra_size_index);
    k->params = calloc((size_t)f->n_params + 1, sizeof *k->params);
    bool ok = sizes && k->size_names && k->extra_size_index && k->params;
    for (int i = 0, v = 0; ok && i < f->n_params; i++)
        if (f->params[i].kind == TEX_ARG_VAR)
            sizes[v++] = f->params[i].var;
    for (int i = 0; ok && i < f->n_size_vars; i++) {
        sizes[n_var + i] = f->size_vars[i];
        k->extra_size_index[i] = n_var + i;
    }
    for (int i = 0; ok && i < k->n_sizes; i++)
        ok = (k->size_names[i] = strdup(sizes[i]->u.var.name)) != NULL;
    k->n_params = k->params ? f->n_params : 0; /* params calloc'ed: fini handles partial copies */
    for (int i = 0; ok && i < f->n_params; i++)
        ok = copy_param(k, f, i, sizes);
    free(sizes);
    return ok;
}

void texi_kernel_fini(tex_kernel *k)
{
    if (k->backend && k->backend->free)
        k->backend->free(k);
    for (int i = 0; i < k->n_params; i++) {
        free(k->params[i].name);
        free(k->params[i].dims);
        free(k->params[i].index_bound.code);
        free(k->params[i].row_len.code);
    }
    free(k->params);
    for (int i = 0; k->size_names && i < k->n_sizes; i++)
        free(k->size_names[i]);
    free(k->size_names);
    free(k->extra_size_index);
    for (int i = 0; i < k->n_derived; i++)
        free(k->derived[i].prog.code);
    free(k->derived);
    free(k->name);
    free(k->target);
    free(k->source);
    free(k->header);
}
