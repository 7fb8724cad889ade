/*
 * Arena allocation: the memory behind every IR object of a context.
 *
 * Objects are bump-allocated from chunks of at least 64 KiB and never freed one
 * by one; texi_arena_release returns every chunk at once. Allocations are
 * 16-byte aligned and zero-filled. Failure returns NULL and the caller turns it
 * into TEX_ENOMEM. The chunks come from the tex_allocator given at init, so
 * tests can inject allocation failures.
 */
#ifndef TEX_UTIL_ARENA_H
#define TEX_UTIL_ARENA_H

#include <stddef.h>
#include "tex/tex.h"

typedef struct texi_arena_chunk texi_arena_chunk;

typedef struct {
    tex_allocator allocator; /* where chunks come from */
    texi_arena_chunk *head;  /* newest chunk, linked to older ones */
    size_t used;             /* bytes used in head */
    size_t total;            /* bytes handed out overall, for statistics */
} texi_arena;

/* Prepares an empty arena; `allocator` NULL means malloc/free. */
void texi_arena_init(texi_arena *a, const tex_allocator *allocator);

/* size bytes, zeroed, 16-byte aligned; NULL when the allocator fails. */
void *texi_arena_alloc(texi_arena *a, size_t size);

/* A copy of s in the arena; NULL when out of memory. */
char *texi_arena_strdup(texi_arena *a, const char *s);

/* Frees every chunk; the arena is empty and reusable afterwards. */
void texi_arena_release(texi_arena *a);

#endif
