/*
 * Host/device split (texi_device_split): a lowered function's body becomes
 * the kernels of a device module, their launch extents, the global
 * workspace shared between kernels and the call-time asserts (device.h).
 *
 * Input: the body after the host pipeline, thread_allreduce and
 * double_buffer, its runtime checks at the top (entry_checks).
 * Output: a texi_device_module. The top of the body is host code (asserts,
 * host-value LETs, global ALLOCATEs, SEQs); every other statement there is
 * a nest and becomes a kernel (the walk in full: above split_top()); each
 * kernel's launch extents come from its thread-bound loops (the launch
 * extents section).
 *
 * Does not: run other passes, check that kernels are race free, fuse
 * consecutive nests into one kernel, or emit code. Nodes are built in the
 * function's arena; the input is not modified.
 */
#include "lower/device.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_LETS 32

typedef struct {
    texi_lower *lw;
    tex_ctx *ctx;
    const tex_func *f;
    texi_device_module *m;
    int cap_kernels, cap_ws, cap_asserts;
    int n_lets;
    tex_stmt *lets[MAX_LETS];    /* enclosing top-level LETs, outermost first */
    tex_expr *let_val[MAX_LETS]; /* their values as host values */
    tex_expr *let_var[MAX_LETS];
    texi_device_kernel *cur; /* the kernel whose nest is being scanned */
    int rc;                  /* first failure of a walk callback */
} splitter;

const char *const texi_device_tag_names[TEXI_N_LAUNCH_TAGS] = {
    "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};

static int fail(splitter *sp, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(splitter *sp, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!sp->rc)
        sp->rc = code;
    return texi_error(sp->ctx, code, "tex_build: function '%s' (device split): %s", sp->f->name,
                      msg);
}

/* ------------------------------------------------------------ host values */

typedef struct {
    const tex_func *f;
    const char *bad; /* the first variable that is neither a parameter nor a size */
} host_check;

static bool is_host_var(const tex_func *f, const tex_expr *v)
{
    for (int p = 0; p < f->n_params; p++)
        if (f->params[p].kind == TEX_ARG_VAR && f->params[p].var == v)
            return true;
    for (int p = 0; p < f->n_size_vars; p++)
        if (f->size_vars[p] == v)
            return true;
    return false;
}

static bool check_var(tex_expr *e, void *ud)
{
    host_check *hc = ud;
    if (e->kind == TEXI_EXPR_VAR && !hc->bad && !is_host_var(hc->f, e))
        hc->bad = e->u.var.name;
    if (e->kind == TEXI_EXPR_LOAD && !hc->bad)
        hc->bad = e->u.load.buf->name;
    if (e->kind == TEXI_EXPR_SEARCH && !hc->bad)
        hc->bad = e->u.search.buf ? e->u.search.buf->name : e->u.search.tensor->name;
    return !hc->bad;
}

/* e with the enclosing LETs' values substituted, or NULL when it is not a
 * host value (*bad: the offending variable or buffer) or on ENOMEM. */
static tex_expr *host_value(splitter *sp, tex_expr *e, const char **bad)
{
    tex_expr *v = sp->n_lets ? texi_substitute(e, sp->n_lets, sp->let_var, sp->let_val) : e;
    if (!v) {
        fail(sp, TEX_ENOMEM, "out of memory");
        *bad = "?";
        return NULL;
    }
    host_check hc = {sp->f, NULL};
    texi_expr_visit(v, check_var, &hc);
    *bad = hc.bad;
    return hc.bad ? NULL : v;
}

static int add_assert(splitter *sp, tex_expr *cond)
{
    const char *bad = NULL;
    tex_expr *v = host_value(sp, cond, &bad);
    if (!v)
        return sp->rc ? sp->rc
                      : fail(sp, TEX_EUNAVAILABLE,
                             "a runtime check uses '%s', which is not a parameter or size", bad);
    tex_expr **a = texi_grow(sp->ctx, sp->m->asserts, sp->m->n_asserts, &sp->cap_asserts, sizeof *a,
                             "the device module");
    if (!a)
        return TEX_ENOMEM;
    sp->m->asserts = a;
    a[sp->m->n_asserts++] = v;
    return 0;
}

/* A top-level global ALLOCATE's buffer as workspace. The module keeps the
 * buffer itself (the kernels' loads and stores name it), so its shape must
 * be a host value as it stands: the enclosing LETs are not substituted. */
static int add_workspace(splitter *sp, texi_buffer *b)
{
    for (int i = 0; i < b->ndim; i++) {
        host_check hc = {sp->f, NULL};
        texi_expr_visit(b->shape[i], check_var, &hc);
        if (hc.bad)
            return fail(sp, TEX_EUNAVAILABLE,
                        "the size of global temporary '%s' uses '%s', which is not a parameter "
                        "or size",
                        b->name, hc.bad);
    }
    texi_buffer **ws = texi_grow(sp->ctx, sp->m->workspace, sp->m->n_workspace, &sp->cap_ws,
                                 sizeof *ws, "the device module");
    if (!ws)
        return TEX_ENOMEM;
    sp->m->workspace = ws;
    ws[sp->m->n_workspace++] = b;
    return 0;
}

/* ------------------------------------------------------- launch extents */

/*
 * Launch extents of a kernel, per tag blockIdx.x/y/z, threadIdx.x/y/z: the
 * extents of the nest's FOR THREAD loops bound to it (virtual threads, tag
 * TEX_VTHREAD, are not launch dimensions). Two extents of one tag merge to
 * the one that provably bounds the other (equal expressions; the larger
 * constant; 32 over min(n, 32)); the emitter guards loops whose extent is
 * not the launch extent. Every extent must be a host value, else
 * TEX_EUNAVAILABLE naming the loop. A nest without bound loops is launched
 * <<<1, 1>>> (all extents NULL).
 */

/* Merges extent e of a loop bound to tag into the current kernel. */
static void merge_extent(splitter *sp, const tex_stmt *loop, int tag, tex_expr *e)
{
    tex_expr **cur = &sp->cur->extent[tag];
    if (!*cur || texi_expr_equal(*cur, e)) {
        *cur = e;
        return;
    }
    tex_expr *le = texi_binary(TEXI_EXPR_LE, texi_convert(e, TEX_I64), texi_convert(*cur, TEX_I64));
    tex_expr *ge = texi_binary(TEXI_EXPR_GE, texi_convert(e, TEX_I64), texi_convert(*cur, TEX_I64));
    if (!le || !ge) {
        fail(sp, TEX_ENOMEM, "out of memory");
        return;
    }
    if (texi_prove(le, 0, NULL))
        return;
    if (texi_prove(ge, 0, NULL)) {
        *cur = e;
        return;
    }
    texi_sb a, b;
    texi_sb_init(&a);
    texi_sb_init(&b);
    texi_expr_print(&a, *cur);
    texi_expr_print(&b, e);
    fail(sp, TEX_EUNAVAILABLE,
         "loop '%s' is bound to %s with extent %s, but another loop of the same kernel has "
         "extent %s and neither provably bounds the other",
         loop->u.loop.var->u.var.name, texi_device_tag_names[tag], b.buf ? b.buf : "?",
         a.buf ? a.buf : "?");
    texi_sb_fini(&a);
    texi_sb_fini(&b);
}

/* Walk callback: launch extents from FOR THREAD loops. */
static tex_stmt *scan_stmt(tex_stmt *s, void *ud)
{
    splitter *sp = ud;
    if (sp->rc)
        return NULL;
    if (s->kind != TEXI_STMT_FOR || s->u.loop.for_kind != TEXI_FOR_THREAD)
        return NULL;
    int tag = s->u.loop.thread_tag;
    if (tag == TEX_VTHREAD)
        return NULL;
    if (tag < 0 || tag >= TEXI_N_LAUNCH_TAGS) {
        fail(sp, TEX_EUNAVAILABLE, "loop '%s' has an unknown thread tag %d",
             s->u.loop.var->u.var.name, tag);
        return NULL;
    }
    const char *bad = NULL;
    tex_expr *e = host_value(sp, s->u.loop.extent, &bad);
    if (!e && !sp->rc)
        fail(sp, TEX_EUNAVAILABLE,
             "the extent of loop '%s' (bound to %s) uses '%s': launch extents may only use "
             "the parameters and sizes",
             s->u.loop.var->u.var.name, texi_device_tag_names[tag], bad);
    if (e)
        merge_extent(sp, s, tag, e);
    return NULL;
}

/* ---------------------------------------------------------------- kernels */

typedef struct {
    const tex_expr *var;
    bool used;
} use_check;

static tex_expr *find_use(tex_expr *e, void *ud)
{
    use_check *u = ud;
    u->used |= e == u->var;
    return u->used ? e : NULL; /* stop descending once found */
}

static bool stmt_uses(tex_ctx *ctx, tex_stmt *s, const tex_expr *var)
{
    use_check u = {var, false};
    (void)texi_stmt_mutate(ctx, s, NULL, find_use, &u);
    return u.used;
}

/* Nest s as the next kernel: extents, the LETs it uses. */
static int add_kernel(splitter *sp, tex_stmt *s)
{
    texi_device_module *m = sp->m;
    texi_device_kernel *ks = texi_grow(sp->ctx, m->kernels, m->n_kernels, &sp->cap_kernels,
                                       sizeof *ks, "the device module");
    if (!ks)
        return TEX_ENOMEM;
    m->kernels = ks;
    texi_device_kernel *k = &ks[m->n_kernels];
    memset(k, 0, sizeof *k);
    sp->cur = k;
    tex_stmt *body = texi_stmt_mutate(sp->ctx, s, scan_stmt, NULL, sp);
    if (sp->rc)
        return sp->rc;
    if (!body)
        return TEX_ENOMEM;
    for (int i = sp->n_lets - 1; i >= 0; i--)
        if (stmt_uses(sp->ctx, body, sp->let_var[i])) {
            tex_stmt *l = sp->lets[i];
            body = texi_let_new(sp->ctx, l->u.let.var, l->u.let.value, body);
            if (!body)
                return TEX_ENOMEM;
        }
    char name[512];
    snprintf(name, sizeof name, "%s_kernel%d", sp->f->name, m->n_kernels);
    k->name = texi_strdup(sp->ctx, name);
    k->body = body;
    if (!k->name)
        return TEX_ENOMEM;
    m->n_kernels++;
    return 0;
}

/* ATTRs looked through at the top (above split_top()). */
static bool transparent_attr(const tex_stmt *s)
{
    const tex_stmt *b = s->u.attr.body;
    if (s->u.attr.id == TEXI_ATTR_THREAD_ALLREDUCE ||
        s->u.attr.id == TEXI_ATTR_CROSS_THREAD_REDUCTION)
        return false;
    return b->kind == TEXI_STMT_SEQ ||
           (b->kind == TEXI_STMT_ALLOCATE && b->u.alloc.buf->scope == TEXI_SCOPE_GLOBAL);
}

static int split_top(splitter *sp, tex_stmt *s);

static int split_let(splitter *sp, tex_stmt *s)
{
    const char *bad = NULL;
    tex_expr *v = host_value(sp, s->u.let.value, &bad);
    if (!v || sp->n_lets == MAX_LETS)
        return sp->rc ? sp->rc : add_kernel(sp, s);
    sp->lets[sp->n_lets] = s;
    sp->let_var[sp->n_lets] = s->u.let.var;
    sp->let_val[sp->n_lets] = v;
    sp->n_lets++;
    int rc = split_top(sp, s->u.let.body);
    sp->n_lets--;
    return rc;
}

/*
 * The top of the body is host code; walking down from it:
 *   - SEQ: each item in order.
 *   - ATTR "assert": its condition becomes a module assert; then its body.
 *     The entry_checks pass has put every one at the top of the body, so
 *     the asserts are checked before the first launch; one left inside a
 *     nest stays in the kernel, where the CUDA emitter rejects it.
 *   - Another ATTR whose body is a SEQ or a global ALLOCATE (one spanning
 *     several nests) is looked through and dropped;
 *     any other ATTR stays with its nest ("cross_thread_reduction" and
 *     "thread_allreduce" around a top-level thread loop, in particular).
 *   - LET whose value is an expression of the parameters and size variables
 *     ("host value"): its body; every kernel cut out of it that uses the
 *     variable gets the LET back around its body, and the launch extents
 *     and asserts have the value substituted.
 *   - ALLOCATE of global scope: the buffer becomes module workspace (the
 *     node is dropped; the runtime allocates product(shape) elements,
 *     zero-filled, per call, and passes it to every kernel), then its body.
 *     That is how a temporary written by one kernel and read by the next
 *     (the rfactor partials of a reduction across blocks) lives. Its shape
 *     must be a host value without the LETs' substitution.
 *   - Anything else is a nest and becomes the kernel "<func>_kernel<K>", K
 *     counting from 0 in execution order.
 */
static int split_top(splitter *sp, tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            TEXI_TRY(split_top(sp, s->u.seq.items[i]));
        return 0;
    case TEXI_STMT_ATTR:
        if (s->u.attr.id == TEXI_ATTR_ASSERT) {
            TEXI_TRY(add_assert(sp, s->u.attr.value));
            return split_top(sp, s->u.attr.body);
        }
        return transparent_attr(s) ? split_top(sp, s->u.attr.body) : add_kernel(sp, s);
    case TEXI_STMT_LET:
        return split_let(sp, s);
    case TEXI_STMT_ALLOCATE:
        if (s->u.alloc.buf->scope != TEXI_SCOPE_GLOBAL)
            return add_kernel(sp, s);
        TEXI_TRY(add_workspace(sp, s->u.alloc.buf));
        return split_top(sp, s->u.alloc.body);
    case TEXI_STMT_FOR:
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_STORE:
    case TEXI_STMT_IF:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    return add_kernel(sp, s);
}

int texi_device_split(texi_lower *lw, tex_stmt *body, texi_device_module *out)
{
    memset(out, 0, sizeof *out);
    if (!lw || !lw->ctx || !lw->func || !body)
        return lw && lw->ctx ? texi_error(lw->ctx, TEX_EINTERNAL,
                                          "tex_build: device split of "
                                          "an incomplete function")
                             : TEX_EINTERNAL;
    splitter sp = {.lw = lw, .ctx = lw->ctx, .f = lw->func, .m = out};
    int rc = split_top(&sp, body);
    if (rc < 0 && tex_errcode(lw->ctx) == 0)
        texi_error(lw->ctx, rc, "tex_build: function '%s': device split failed", lw->func->name);
    if (rc < 0)
        memset(out, 0, sizeof *out);
    return rc < 0 ? rc : 0;
}
