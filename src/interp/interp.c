/*
 * The interpreter of lowered functions (texi_interp_run, interp.h): the
 * second oracle of tex and the judge of lowering bugs. It runs either stage
 * of the AST on host arrays:
 *   - tensor level: a parameter tensor is its argument array (region = the
 *     whole shape, compact row-major); REALIZE allocates the region
 *     [mins, mins + extents) of a temporary; PROVIDE and ACCESS take global
 *     coordinates, translated by the region's min and checked per dimension.
 *   - flat: a parameter's buffer (texi_param.buf) is its argument array;
 *     ALLOCATE allocates product(shape) elements; LOAD / STORE index in
 *     elements, checked against the size.
 * Any access outside its storage is TEX_EINTERNAL with a message naming the
 * buffer, the index and the size; the interpreter never touches memory
 * outside what it allocated or was given. Temporaries are filled with poison
 * at allocation (NaN for floats, bytes 0x5A for integers), so reading an
 * element nobody wrote shows up in the results.
 *
 * Execution is serial: SERIAL, PARALLEL, VECTORIZED and UNROLLED loops run
 * in order. Thread-bound loops (TEXI_FOR_THREAD) run their iterations one
 * after another too, which is exact for code without barriers. A thread loop
 * whose body contains a BARRIER switches to lock-step ("group") execution:
 * one frame (environment) per thread, and every statement that contains a
 * barrier is executed structurally for all frames together:
 *   SEQ    item by item, each item for all threads (so all threads finish the
 *          segment before a barrier before any starts the next);
 *   FOR    over a thread tag: the frames multiply (each thread of the outer
 *          group gets the inner thread loop's threads); any other loop runs
 *          its iterations in lock-step and requires the same bounds in every
 *          thread; IF and LET likewise (the condition must agree: a barrier
 *          under divergent control flow is an error, as it is undefined in
 *          CUDA);
 *   ALLOCATE / REALIZE: LOCAL scope gives each thread its own storage, other
 *          scopes one storage shared by the group (a block).
 * Statements without a barrier are executed for each frame in turn. Loops
 * over blocks (BLOCK_* tags) run one after another like serial loops, so
 * each block gets its own shared storage.
 *
 * Limits: a barrier is reached through SEQ, loops, IF, LET, ATTR, ALLOCATE
 * and REALIZE only (no other statement has a body); storage allocated inside
 * a thread loop without a barrier in its body is private to each iteration
 * (threads cannot communicate without a barrier anyway). A missing barrier
 * is not diagnosed as such: threads run in order, so it shows only when a
 * thread reads an element no earlier thread wrote (poison).
 *
 * ATTR "assert" checks its value (false: TEX_EINVAL); other attributes are
 * transparent. INTRIN runs the intrinsic's description on its tiles
 * (interp_intrin.c). Arguments are bound and checked by texi_bind_args (rt/args.c).
 */
#include "interp/interp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIMS 16
#define MAX_ELEMS (INT64_C(1) << 32)

/* ------------------------------------------------------------- frames */

static void frame_fini(texi_frame *fr)
{
    free(fr->vars);
    free(fr->bufs);
    memset(fr, 0, sizeof *fr);
}

static int frame_copy(texi_interp *ip, texi_frame *dst, const texi_frame *src)
{
    memset(dst, 0, sizeof *dst);
    dst->cap_vars = src->n_vars + 8;
    dst->cap_bufs = src->n_bufs + 8;
    dst->vars = malloc(sizeof *dst->vars * (size_t)dst->cap_vars);
    dst->bufs = malloc(sizeof *dst->bufs * (size_t)dst->cap_bufs);
    if (!dst->vars || !dst->bufs) {
        frame_fini(dst);
        return texi_interp_fail(ip, TEX_ENOMEM, "out of memory (thread frames)");
    }
    if (src->n_vars)
        memcpy(dst->vars, src->vars, sizeof *dst->vars * (size_t)src->n_vars);
    if (src->n_bufs)
        memcpy(dst->bufs, src->bufs, sizeof *dst->bufs * (size_t)src->n_bufs);
    dst->n_vars = src->n_vars;
    dst->n_bufs = src->n_bufs;
    return 0;
}

static void frames_free(texi_frame *frs, int n)
{
    for (int k = 0; k < n; k++)
        frame_fini(&frs[k]);
    free(frs);
}

static int push_storage(texi_interp *ip, texi_frame *fr, const tex_tensor *t, const texi_buffer *b,
                        texi_storage *st)
{
    if (fr->n_bufs == fr->cap_bufs) {
        int cap = fr->cap_bufs ? 2 * fr->cap_bufs : 16;
        texi_storage_bind *nb = realloc(fr->bufs, sizeof *nb * (size_t)cap);
        if (!nb)
            return texi_interp_fail(ip, TEX_ENOMEM, "out of memory (storage bindings)");
        fr->bufs = nb;
        fr->cap_bufs = cap;
    }
    fr->bufs[fr->n_bufs++] = (texi_storage_bind){t, b, st};
    return 0;
}

/* ------------------------------------------------------------- storage */

static void storage_free(texi_storage *st)
{
    if (st && st->owned) {
        free(st->data);
        free(st->mins);
        free(st->extents);
    }
    free(st);
}

static void poison(texi_storage *st)
{
    size_t n = (size_t)st->size;
    switch (st->dtype) {
    case TEX_F32:
        for (size_t i = 0; i < n; i++)
            ((float *)st->data)[i] = NAN;
        break;
    case TEX_F64:
        for (size_t i = 0; i < n; i++)
            ((double *)st->data)[i] = NAN;
        break;
    case TEX_F16:
    case TEX_BF16:
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)st->data)[i] = st->dtype == TEX_F16 ? 0x7E00 : 0x7FC0;
        break;
    case TEX_BOOL:
    case TEX_I8:
    case TEX_I16:
    case TEX_I32:
    case TEX_I64:
    case TEX_U8:
    case TEX_U16:
    case TEX_U32:
    case TEX_U64:
        memset(st->data, 0x5A, n * (size_t)tex_dtype_bytes(st->dtype));
        break;
    }
}

/* A poisoned temporary of `ndim` dimensions (extents ext, region mins; mins
 * NULL for a flat buffer of product(ext) elements). */
static int storage_new(texi_interp *ip, const char *name, tex_dtype t, int ndim,
                       const int64_t *mins, const int64_t *ext, texi_storage **out)
{
    int64_t size = 1;
    for (int d = 0; d < ndim; d++) {
        if (ext[d] < 0)
            return texi_interp_fail(ip, TEX_EINTERNAL,
                                    "allocation of '%s' with negative extent %lld (dimension %d)",
                                    name, (long long)ext[d], d);
        size = ext[d] && size > MAX_ELEMS / ext[d] ? MAX_ELEMS + 1 : size * ext[d];
    }
    if (size > MAX_ELEMS)
        return texi_interp_fail(ip, TEX_EINTERNAL, "allocation of '%s' is too large", name);
    texi_storage *st = calloc(1, sizeof *st);
    if (!st)
        return texi_interp_fail(ip, TEX_ENOMEM, "out of memory (storage of '%s')", name);
    *st = (texi_storage){.name = name, .dtype = t, .size = size, .owned = true};
    st->data = malloc((size_t)(size ? size : 1) * (size_t)tex_dtype_bytes(t));
    if (mins) {
        st->ndim = ndim;
        st->mins = malloc(sizeof *st->mins * (size_t)(ndim + 1));
        st->extents = malloc(sizeof *st->extents * (size_t)(ndim + 1));
    }
    if (!st->data || (mins && (!st->mins || !st->extents))) {
        storage_free(st);
        return texi_interp_fail(ip, TEX_ENOMEM, "out of memory (storage of '%s')", name);
    }
    if (mins) {
        memcpy(st->mins, mins, sizeof *mins * (size_t)ndim);
        memcpy(st->extents, ext, sizeof *ext * (size_t)ndim);
    }
    poison(st);
    *out = st;
    return 0;
}

/* The extents (and mins) of a REALIZE or ALLOCATE evaluated in fr. */
static int alloc_dims(texi_interp *ip, texi_frame *fr, const tex_stmt *s, int64_t mins[],
                      int64_t ext[], int *ndim)
{
    bool realize = s->kind == TEXI_STMT_REALIZE;
    int n = realize ? s->u.realize.ndim : s->u.alloc.buf->ndim;
    if (n > MAX_DIMS)
        return texi_interp_fail(ip, TEX_EINTERNAL, "too many dimensions in an allocation");
    for (int d = 0; d < n; d++) {
        if (realize) {
            TEXI_TRY(texi_interp_int(ip, fr, s->u.realize.mins[d], &mins[d]));
            TEXI_TRY(texi_interp_int(ip, fr, s->u.realize.extents[d], &ext[d]));
        } else {
            mins[d] = 0;
            TEXI_TRY(texi_interp_int(ip, fr, s->u.alloc.buf->shape[d], &ext[d]));
        }
    }
    *ndim = n;
    return 0;
}

/* A new temporary for REALIZE / ALLOCATE s, dimensions evaluated in fr. */
static int alloc_for(texi_interp *ip, texi_frame *fr, const tex_stmt *s, texi_storage **out)
{
    int64_t mins[MAX_DIMS], ext[MAX_DIMS];
    int n = 0;
    TEXI_TRY(alloc_dims(ip, fr, s, mins, ext, &n));
    if (s->kind == TEXI_STMT_REALIZE)
        return storage_new(ip, s->u.realize.tensor->name, s->u.realize.tensor->dtype, n, mins, ext,
                           out);
    return storage_new(ip, s->u.alloc.buf->name, s->u.alloc.buf->dtype, n, NULL, ext, out);
}

static int bind_alloc(texi_interp *ip, texi_frame *fr, const tex_stmt *s, texi_storage *st)
{
    if (s->kind == TEXI_STMT_REALIZE)
        return push_storage(ip, fr, s->u.realize.tensor, NULL, st);
    return push_storage(ip, fr, NULL, s->u.alloc.buf, st);
}

static bool is_local(const tex_stmt *s)
{
    enum texi_scope sc = s->kind == TEXI_STMT_REALIZE ? s->u.realize.scope : s->u.alloc.buf->scope;
    return sc == TEXI_SCOPE_LOCAL;
}

/* ------------------------------------------------------------ statements */

static int exec(texi_interp *ip, texi_frame *fr, const tex_stmt *s);
static int gexec(texi_interp *ip, texi_frame *frs, int n, const tex_stmt *s);

static int exec_provide(texi_interp *ip, texi_frame *fr, const tex_stmt *s)
{
    const tex_tensor *t = s->u.provide.tensor;
    texi_storage *st = texi_interp_find_tensor(fr, t);
    if (!st)
        return texi_interp_fail(ip, TEX_EINTERNAL, "write of tensor '%s', which is not realized",
                                t->name);
    int n = s->u.provide.n_idx;
    int64_t idx[MAX_DIMS], flat;
    if (n > MAX_DIMS)
        return texi_interp_fail(ip, TEX_EINTERNAL, "tensor '%s' has too many indices", t->name);
    for (int d = 0; d < n; d++)
        TEXI_TRY(texi_interp_int(ip, fr, s->u.provide.idx[d], &idx[d]));
    TEXI_TRY(texi_interp_tensor_index(ip, st, n, idx, "write", &flat));
    texi_eval_value v;
    TEXI_TRY(texi_interp_expr(ip, fr, s->u.provide.value, &v));
    texi_eval_store(st->dtype, st->data, flat,
                    texi_eval_convert(s->u.provide.value->dtype, st->dtype, v));
    return 0;
}

/* A STORE of lanes elements (1: scalar): every lane's index and value is
 * evaluated before the first is stored, as a vector store does; lanes its
 * mask turns off are skipped. */
static int exec_store(texi_interp *ip, texi_frame *fr, const tex_stmt *s)
{
    enum { MAX_LANES = 64 };
    texi_storage *st[MAX_LANES];
    int64_t idx[MAX_LANES];
    texi_eval_value v[MAX_LANES];
    bool on[MAX_LANES];
    int lanes = s->u.store.index->lanes, rc = 0;
    if (lanes > MAX_LANES)
        return texi_interp_fail(ip, TEX_EINTERNAL, "a store of %d lanes", lanes);
    for (ip->lane = 0; ip->lane < lanes && rc == 0; ip->lane++) {
        int k = ip->lane;
        rc = texi_interp_mask(ip, fr, s->u.store.mask, &on[k]);
        if (rc || !on[k])
            continue; /* a lane the mask turns off: neither index nor value */
        rc = texi_interp_buffer_index(ip, fr, s->u.store.buf, s->u.store.index, true, &st[k],
                                      &idx[k]);
        rc = rc ? rc : texi_interp_expr(ip, fr, s->u.store.value, &v[k]);
    }
    ip->lane = 0;
    for (int k = 0; k < lanes && rc == 0; k++)
        if (on[k])
            texi_eval_store(st[k]->dtype, st[k]->data, idx[k],
                            texi_eval_convert(s->u.store.value->dtype, st[k]->dtype, v[k]));
    return rc;
}

static int loop_bounds(texi_interp *ip, texi_frame *fr, const tex_stmt *s, int64_t *min,
                       int64_t *ext)
{
    TEXI_TRY(texi_interp_int(ip, fr, s->u.loop.min, min));
    return texi_interp_int(ip, fr, s->u.loop.extent, ext);
}

static int exec_for(texi_interp *ip, texi_frame *fr, const tex_stmt *s)
{
    if (texi_stmt_is_thread_loop(s, true) && texi_stmt_has_barrier(s->u.loop.body))
        return gexec(ip, fr, 1, s); /* its iterations become a lock-step group */
    int64_t min, ext;
    TEXI_TRY(loop_bounds(ip, fr, s, &min, &ext));
    texi_eval_value v = {.i = min};
    TEXI_TRY(texi_interp_push_var(ip, fr, s->u.loop.var, v));
    int top = fr->n_vars - 1, n_bufs = fr->n_bufs, rc = 0;
    for (int64_t k = 0; k < ext && rc == 0; k++) {
        fr->vars[top].v.i = min + k;
        fr->vars[top].v = texi_eval_convert(TEX_I64, s->u.loop.var->dtype, fr->vars[top].v);
        rc = exec(ip, fr, s->u.loop.body);
        fr->n_vars = top + 1;
        fr->n_bufs = n_bufs;
    }
    fr->n_vars = top;
    return rc;
}

static int exec_alloc(texi_interp *ip, texi_frame *fr, const tex_stmt *s)
{
    texi_storage *st;
    TEXI_TRY(alloc_for(ip, fr, s, &st));
    int n_bufs = fr->n_bufs;
    int rc = bind_alloc(ip, fr, s, st);
    if (rc == 0)
        rc = exec(ip, fr, s->kind == TEXI_STMT_REALIZE ? s->u.realize.body : s->u.alloc.body);
    fr->n_bufs = n_bufs;
    storage_free(st);
    return rc;
}

static int check_assert(texi_interp *ip, texi_frame *fr, const tex_stmt *s)
{
    if (s->u.attr.id != TEXI_ATTR_ASSERT || !s->u.attr.value)
        return 0;
    texi_eval_value c;
    TEXI_TRY(texi_interp_expr(ip, fr, s->u.attr.value, &c));
    if (texi_eval_convert(s->u.attr.value->dtype, TEX_BOOL, c).i)
        return 0;
    char *txt = tex_expr_str(s->u.attr.value);
    int rc = texi_interp_fail(ip, TEX_EINVAL, "assertion failed: %s", txt ? txt : "?");
    free(txt);
    return rc;
}

/* A LET of a scalar, or of a vector: one binding per lane. */
static int exec_let(texi_interp *ip, texi_frame *fr, const tex_stmt *s)
{
    int n_vars = fr->n_vars, rc = 0;
    for (ip->lane = 0; ip->lane < s->u.let.value->lanes && rc == 0; ip->lane++) {
        texi_eval_value v;
        rc = texi_interp_expr(ip, fr, s->u.let.value, &v);
        v = texi_eval_convert(s->u.let.value->dtype, s->u.let.var->dtype, v);
        rc = rc ? rc : texi_interp_push_var(ip, fr, s->u.let.var, v);
    }
    ip->lane = 0;
    rc = rc ? rc : exec(ip, fr, s->u.let.body);
    fr->n_vars = n_vars;
    return rc;
}

static int exec(texi_interp *ip, texi_frame *fr, const tex_stmt *s)
{
    texi_eval_value c;
    if (!s)
        return 0;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        return exec_for(ip, fr, s);
    case TEXI_STMT_PROVIDE:
        return exec_provide(ip, fr, s);
    case TEXI_STMT_STORE:
        return exec_store(ip, fr, s);
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_ALLOCATE:
        return exec_alloc(ip, fr, s);
    case TEXI_STMT_IF:
        TEXI_TRY(texi_interp_expr(ip, fr, s->u.ifs.cond, &c));
        c = texi_eval_convert(s->u.ifs.cond->dtype, TEX_BOOL, c);
        return exec(ip, fr, c.i ? s->u.ifs.then_s : s->u.ifs.else_s);
    case TEXI_STMT_LET:
        return exec_let(ip, fr, s);
    case TEXI_STMT_SEQ:
        for (int k = 0; k < s->u.seq.n; k++)
            TEXI_TRY(exec(ip, fr, s->u.seq.items[k]));
        return 0;
    case TEXI_STMT_EVALUATE:
        return texi_interp_expr(ip, fr, s->u.eval.value, &c);
    case TEXI_STMT_BARRIER:
        return 0; /* outside a lock-step group: one thread */
    case TEXI_STMT_ATTR:
        TEXI_TRY(check_assert(ip, fr, s));
        return texi_attr_is(s, TEXI_ATTR_STRICT_ONLY) ? 0 : exec(ip, fr, s->u.attr.body);
    case TEXI_STMT_INTRIN:
        return texi_interp_intrin(ip, fr, s);
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    return texi_interp_fail(ip, TEX_EINTERNAL, "unknown statement kind %d", (int)s->kind);
}

/* ------------------------------------------------- lock-step thread groups */

/* A thread loop in a group: every frame gets one copy per iteration. */
static int gexec_threads(texi_interp *ip, texi_frame *frs, int n, const tex_stmt *s)
{
    int64_t total = 0, min, ext;
    for (int k = 0; k < n; k++) {
        TEXI_TRY(loop_bounds(ip, &frs[k], s, &min, &ext));
        total += ext > 0 ? ext : 0;
    }
    if (total > (1 << 20))
        return texi_interp_fail(ip, TEX_EINTERNAL, "too many threads (%lld) in loop '%s'",
                                (long long)total, s->u.loop.var->u.var.name);
    texi_frame *sub = calloc((size_t)(total ? total : 1), sizeof *sub);
    if (!sub)
        return texi_interp_fail(ip, TEX_ENOMEM, "out of memory (thread frames)");
    int m = 0, rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        rc = loop_bounds(ip, &frs[k], s, &min, &ext);
        for (int64_t t = 0; t < ext && rc == 0; t++) {
            rc = frame_copy(ip, &sub[m], &frs[k]);
            if (rc == 0)
                rc = texi_interp_push_var(ip, &sub[m], s->u.loop.var,
                                          (texi_eval_value){.i = min + t});
            m++;
        }
    }
    if (rc == 0)
        rc = gexec(ip, sub, m, s->u.loop.body);
    frames_free(sub, m);
    return rc;
}

/* Evaluates integer (or bool) e in every frame; all must agree. */
static int uniform(texi_interp *ip, texi_frame *frs, int n, const tex_expr *e, const char *what,
                   int64_t *out)
{
    for (int k = 0; k < n; k++) {
        int64_t v;
        TEXI_TRY(texi_interp_int(ip, &frs[k], e, &v));
        if (k > 0 && v != *out) {
            char *txt = tex_expr_str(e);
            int rc = texi_interp_fail(ip, TEX_EINTERNAL,
                                      "a barrier lies under %s %s, which differs between threads",
                                      what, txt ? txt : "?");
            free(txt);
            return rc;
        }
        *out = v;
    }
    return 0;
}

static int gexec_for(texi_interp *ip, texi_frame *frs, int n, const tex_stmt *s)
{
    if (texi_stmt_is_thread_loop(s, true))
        return gexec_threads(ip, frs, n, s);
    int64_t min = 0, ext = 0;
    TEXI_TRY(uniform(ip, frs, n, s->u.loop.min, "the loop start", &min));
    TEXI_TRY(uniform(ip, frs, n, s->u.loop.extent, "the loop extent", &ext));
    int rc = 0, pushed = 0;
    for (; pushed < n && rc == 0; pushed++)
        rc = texi_interp_push_var(ip, &frs[pushed], s->u.loop.var, (texi_eval_value){.i = min});
    for (int64_t i = 0; i < ext && rc == 0; i++) {
        for (int k = 0; k < n; k++) {
            texi_var_bind *vb = &frs[k].vars[frs[k].n_vars - 1];
            vb->v = texi_eval_convert(TEX_I64, vb->var->dtype, (texi_eval_value){.i = min + i});
        }
        rc = gexec(ip, frs, n, s->u.loop.body);
    }
    for (int k = 0; k < pushed; k++)
        if (frs[k].n_vars > 0 && frs[k].vars[frs[k].n_vars - 1].var == s->u.loop.var)
            frs[k].n_vars--;
    return rc;
}

static int gexec_alloc(texi_interp *ip, texi_frame *frs, int n, const tex_stmt *s)
{
    bool local = is_local(s);
    int n_st = local ? n : 1, rc = 0, made = 0;
    texi_storage **st = calloc((size_t)n_st, sizeof *st);
    if (!st)
        return texi_interp_fail(ip, TEX_ENOMEM, "out of memory (storage)");
    for (; made < n_st && rc == 0; made++)
        rc = alloc_for(ip, &frs[made], s, &st[made]);
    for (int k = 0; k < n && rc == 0; k++)
        rc = bind_alloc(ip, &frs[k], s, st[local ? k : 0]);
    if (rc == 0)
        rc = gexec(ip, frs, n, s->kind == TEXI_STMT_REALIZE ? s->u.realize.body : s->u.alloc.body);
    for (int k = 0; k < n; k++)
        if (frs[k].n_bufs > 0 && frs[k].bufs[frs[k].n_bufs - 1].st == st[local ? k : 0])
            frs[k].n_bufs--;
    for (int k = 0; k < made; k++)
        storage_free(st[k]);
    free(st);
    return rc;
}

static int gexec_let(texi_interp *ip, texi_frame *frs, int n, const tex_stmt *s)
{
    if (s->u.let.value->lanes > 1) /* vectors come after gpu_to_cpu */
        return texi_interp_fail(ip, TEX_EINTERNAL, "a vector LET in a thread group");
    int rc = 0, pushed = 0;
    for (; pushed < n; pushed++) {
        texi_eval_value v;
        rc = texi_interp_expr(ip, &frs[pushed], s->u.let.value, &v);
        v = texi_eval_convert(s->u.let.value->dtype, s->u.let.var->dtype, v);
        if (rc == 0)
            rc = texi_interp_push_var(ip, &frs[pushed], s->u.let.var, v);
        if (rc != 0)
            break;
    }
    if (rc == 0)
        rc = gexec(ip, frs, n, s->u.let.body);
    for (int k = 0; k < pushed; k++)
        frs[k].n_vars--;
    return rc;
}

/* s (containing a barrier, or not) executed by every frame of a group. */
static int gexec(texi_interp *ip, texi_frame *frs, int n, const tex_stmt *s)
{
    int64_t c = 0;
    if (!texi_stmt_has_barrier(s)) {
        for (int k = 0; k < n; k++)
            TEXI_TRY(exec(ip, &frs[k], s));
        return 0;
    }
    switch (s->kind) {
    case TEXI_STMT_FOR:
        return gexec_for(ip, frs, n, s);
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_ALLOCATE:
        return gexec_alloc(ip, frs, n, s);
    case TEXI_STMT_IF:
        TEXI_TRY(uniform(ip, frs, n, s->u.ifs.cond, "the condition", &c));
        return gexec(ip, frs, n, c ? s->u.ifs.then_s : s->u.ifs.else_s);
    case TEXI_STMT_LET:
        return gexec_let(ip, frs, n, s);
    case TEXI_STMT_SEQ:
        for (int k = 0; k < s->u.seq.n; k++)
            TEXI_TRY(gexec(ip, frs, n, s->u.seq.items[k]));
        return 0;
    case TEXI_STMT_ATTR:
        for (int k = 0; k < n; k++)
            TEXI_TRY(check_assert(ip, &frs[k], s));
        return texi_attr_is(s, TEXI_ATTR_STRICT_ONLY) ? 0 : gexec(ip, frs, n, s->u.attr.body);
    case TEXI_STMT_BARRIER:
        return 0; /* every thread has finished the previous segment */
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_STORE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    return texi_interp_fail(ip, TEX_EINTERNAL, "unexpected statement kind %d", (int)s->kind);
}

/* ------------------------------------------------------------- entry */

/* The storage of tensor parameter p: the argument array itself. */
static int param_storage(texi_interp *ip, const texi_param *p, const DLTensor *a,
                         texi_storage **out)
{
    texi_storage *st = calloc(1, sizeof *st);
    if (!st)
        return texi_interp_fail(ip, TEX_ENOMEM, "out of memory (parameters)");
    st->name = p->tensor->name;
    st->dtype = p->tensor->dtype;
    st->data = (char *)a->data + a->byte_offset;
    st->ndim = a->ndim;
    st->mins = calloc((size_t)a->ndim + 1, sizeof *st->mins);
    st->extents = malloc(sizeof *st->extents * ((size_t)a->ndim + 1));
    st->owned = false;
    st->size = 1;
    if (!st->mins || !st->extents) {
        free(st->mins);
        free(st->extents);
        free(st);
        return texi_interp_fail(ip, TEX_ENOMEM, "out of memory (parameters)");
    }
    for (int d = 0; d < a->ndim; d++) {
        st->extents[d] = a->shape[d];
        st->size *= a->shape[d];
    }
    *out = st;
    return 0;
}

static void param_storage_free(texi_storage *st)
{
    if (st) {
        free(st->mins);
        free(st->extents);
        free(st);
    }
}

/* Binds the arguments in fr: scalars and sizes, then every tensor parameter
 * under its tensor and its buffer. st[] receives the parameters' storage. */
static int bind_params(texi_interp *ip, texi_frame *fr, int n, const tex_value args[],
                       texi_storage **st)
{
    const tex_func *f = ip->f;
    int cap = f->n_params + f->n_size_vars + 1, n_env = 0;
    texi_binding *env = calloc((size_t)cap, sizeof *env);
    if (!env)
        return texi_interp_fail(ip, TEX_ENOMEM, "out of memory (arguments)");
    char msg[TEXI_ERRMSG_MAX / 2] = "";
    int rc = texi_bind_args(f, n, args, env, cap, &n_env, msg, sizeof msg);
    if (rc < 0)
        texi_interp_fail(ip, rc, "%s", msg);
    for (int k = 0; k < n_env && rc == 0; k++)
        rc = texi_interp_push_var(ip, fr, env[k].var, env[k].value);
    free(env);
    for (int i = 0; i < f->n_params && rc == 0; i++) {
        const texi_param *p = &f->params[i];
        if (p->kind != TEX_ARG_TENSOR)
            continue;
        rc = param_storage(ip, p, args[i].t, &st[i]);
        if (rc == 0)
            rc = push_storage(ip, fr, p->tensor, p->buf, st[i]);
    }
    return rc;
}

int texi_interp_run(const tex_func *f, int n, const tex_value args[], char *err, size_t err_size)
{
    if (err && err_size)
        err[0] = '\0';
    texi_interp ip = {.f = f, .err = err, .err_size = err_size};
    if (!f || (n > 0 && !args))
        return texi_interp_fail(&ip, TEX_EMISUSE, "NULL function or arguments");
    texi_frame fr = {0};
    texi_storage **st = calloc((size_t)f->n_params + 1, sizeof *st);
    int rc = st ? bind_params(&ip, &fr, n, args, st)
                : texi_interp_fail(&ip, TEX_ENOMEM, "out of memory (parameters)");
    if (rc == 0)
        rc = exec(&ip, &fr, f->body);
    for (int i = 0; st && i < f->n_params; i++)
        param_storage_free(st[i]);
    free(st);
    frame_fini(&fr);
    return rc < 0 ? rc : 0;
}
