/*
 * The steps of the GPU tail (pipeline.c lists them) that work on the
 * device module rather than on one statement.
 *
 * device_split's result is a module, not a statement: for the verifier and
 * the dump it is shown as one statement (built only for that; the module
 * keeps the bare bodies): the asserts as ATTR "assert", around the
 * workspace buffers as global ALLOCATEs, around a SEQ of each kernel's body
 * under an ATTR keyed by the kernel's name.
 * A per-kernel pass (thread_sync, simd) runs once per kernel (its dump appears
 * once per kernel), on the body wrapped in the workspace's ALLOCATEs so that
 * the verifier sees every buffer defined; the wrappers are removed
 * afterwards.
 * This file does no printing or environment reading of its own.
 */
#include "lower/device.h"

/* The module as one statement (file comment), handed through unchanged. */
static int module_view(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    (void)lw;
    *out = in;
    return 0;
}

int texi_device_split_step(texi_lower *lw, const char *name, tex_stmt *body, texi_device_module *m)
{
    TEXI_TRY(texi_device_split(lw, body, m));
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
        view = texi_attr_named(lw->ctx, TEXI_ATTR_ASSERT, m->asserts[i], view);
    if (!view)
        return TEX_ENOMEM;
    return texi_lower_apply(lw, name, module_view, view, &view);
}

int texi_device_kernel_step(texi_lower *lw, const char *name, texi_pass_fn fn,
                            const texi_device_module *m, texi_device_kernel *k)
{
    tex_stmt *body = k->body;
    for (int i = m->n_workspace - 1; body && i >= 0; i--)
        body = texi_allocate_new(lw->ctx, m->workspace[i], body);
    if (!body)
        return TEX_ENOMEM;
    TEXI_TRY(texi_lower_apply(lw, name, fn, body, &body));
    for (int i = 0; i < m->n_workspace; i++) {
        if (body->kind != TEXI_STMT_ALLOCATE || body->u.alloc.buf != m->workspace[i])
            return texi_error(lw->ctx, TEX_EINTERNAL,
                              "tex_build: function '%s': %s moved workspace '%s'", lw->func->name,
                              name, m->workspace[i]->name);
        body = body->u.alloc.body;
    }
    k->body = body;
    return 0;
}
