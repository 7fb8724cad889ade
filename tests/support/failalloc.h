/*
 * failalloc.h: an allocator for tex_ctx_new_ex that fails from its Nth
 * request on, so a test can run a chain of calls with every allocation
 * failing in turn and check that each run ends in TEX_ENOMEM, never a
 * crash. Header-only.
 */
#ifndef TEX_TESTS_SUPPORT_FAILALLOC_H
#define TEX_TESTS_SUPPORT_FAILALLOC_H

#include <stdlib.h>

#include "tex/tex.h"

/* Requests so far, and the first one (counted from 1) that fails. */
typedef struct {
    int calls, fail_at;
} tt_failing;

static inline void *tt_failing_alloc(void *user, size_t size)
{
    tt_failing *f = user;
    return ++f->calls >= f->fail_at ? NULL : malloc(size);
}

static inline void tt_failing_free(void *user, void *p)
{
    (void)user;
    free(p);
}

/* The allocator of f (f must outlive the contexts made with it). */
static inline tex_allocator tt_failing_allocator(tt_failing *f)
{
    return (tex_allocator){sizeof(tex_allocator), tt_failing_alloc, tt_failing_free, f};
}

#endif
