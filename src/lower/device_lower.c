/*
 * GPU lowering driver (texi_device_lower, device.h): the one place that
 * lists the device passes, in order.
 *
 *   tex_func body (after the host pipeline, pipeline.c)
 *        |
 *   thread_allreduce   ATTR "cross_thread_reduction" -> partial + ATTR "thread_allreduce"
 *        |
 *   double_buffer      shared buffers under ATTR "double_buffer": two copies, fetch k+1
 *        |             overlapping compute k
 *   device_split       kernels + launch extents, workspace, asserts (device_split.c)
 *        |
 *   thread_sync        per kernel: BARRIERs where shared memory crosses threads
 *        |
 *   texi_device_module
 *
 * Each step goes through texi_lower_apply (pipeline.c), so it is verified
 * like a host pass and dumped when TEX_DUMP names it. device_split's result
 * is a module, not a statement: for the verifier and the dump it is shown
 * as one statement (built only for that; the module keeps the bare
 * bodies): the asserts as ATTR "assert", around the workspace buffers as
 * global ALLOCATEs, around a SEQ of each kernel's body under an ATTR keyed
 * by the kernel's name.
 * thread_sync runs once per kernel (its dump appears once per kernel), on
 * the body wrapped in the workspace's ALLOCATEs so that the verifier sees
 * every buffer defined; the wrappers are removed afterwards.
 * This file does no printing or environment reading of its own.
 */
#include "lower/device.h"

#include <string.h>

/* The module as one statement (file comment), handed through unchanged. */
static int module_view(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    (void)lw;
    *out = in;
    return 0;
}

static int dump_split(texi_lower *lw, const texi_device_module *m)
{
    int n = m->n_kernels;
    tex_stmt **items = texi_alloc(lw->ctx, sizeof *items * (size_t)(n > 0 ? n : 1), "a dump");
    if (!items)
        return TEX_ENOMEM;
    for (int i = 0; i < n; i++) {
        items[i] = texi_attr_new(lw->ctx, m->kernels[i].name, NULL, m->kernels[i].body);
        if (!items[i])
            return TEX_ENOMEM;
    }
    tex_stmt *view = texi_seq_new(lw->ctx, n, items);
    for (int i = m->n_workspace - 1; view && i >= 0; i--)
        view = texi_allocate_new(lw->ctx, m->workspace[i], view);
    for (int i = m->n_asserts - 1; view && i >= 0; i--)
        view = texi_attr_new(lw->ctx, "assert", m->asserts[i], view);
    if (!view)
        return TEX_ENOMEM;
    return texi_lower_apply(lw, "device_split", module_view, view, &view);
}

/* thread_sync on kernel k. For the verifier, the body is wrapped in the
 * workspace's global ALLOCATEs (which the kernel uses but does not
 * allocate); they are stripped again after the pass. */
static int sync_kernel(texi_lower *lw, const texi_device_module *m, texi_device_kernel *k)
{
    tex_stmt *body = k->body;
    for (int i = m->n_workspace - 1; body && i >= 0; i--)
        body = texi_allocate_new(lw->ctx, m->workspace[i], body);
    if (!body)
        return TEX_ENOMEM;
    TEXI_TRY(texi_lower_apply(lw, "thread_sync", texi_pass_thread_sync, body, &body));
    for (int i = 0; i < m->n_workspace; i++) {
        if (body->kind != TEXI_STMT_ALLOCATE || body->u.alloc.buf != m->workspace[i])
            return texi_error(lw->ctx, TEX_EINTERNAL,
                              "tex_build: function '%s': thread_sync moved workspace '%s'",
                              lw->func->name, m->workspace[i]->name);
        body = body->u.alloc.body;
    }
    k->body = body;
    return 0;
}

int texi_device_lower(const tex_func *f, texi_device_module *out)
{
    memset(out, 0, sizeof *out);
    if (!f || !f->ctx || !f->body)
        return TEX_EINTERNAL;
    tex_func fn = *f; /* the passes see a mutable handle; none writes to it */
    texi_lower lw = {.ctx = f->ctx, .sch = NULL, .func = &fn};
    tex_stmt *body = f->body;
    TEXI_TRY(texi_lower_apply(&lw, "thread_allreduce", texi_pass_thread_allreduce, body, &body));
    TEXI_TRY(texi_lower_apply(&lw, "double_buffer", texi_pass_double_buffer, body, &body));
    texi_device_module m;
    TEXI_TRY(texi_device_split(&lw, body, &m));
    TEXI_TRY(dump_split(&lw, &m));
    for (int i = 0; i < m.n_kernels; i++)
        TEXI_TRY(sync_kernel(&lw, &m, &m.kernels[i]));
    *out = m;
    return 0;
}
