/*
 * Bump allocator over a list of chunks (see arena.h). A request larger than a
 * default chunk gets a chunk of its own, so large arrays of pointers never
 * waste the rest of the current chunk.
 */
#include "util/arena.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 16
#define ARENA_CHUNK_SIZE (64 * 1024)

struct texi_arena_chunk {
    texi_arena_chunk *next; /* older chunk */
    size_t size;            /* usable bytes in data */
    _Alignas(ARENA_ALIGN) unsigned char data[];
};

static void *default_alloc(void *user, size_t size)
{
    (void)user;
    return malloc(size);
}

static void default_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

void texi_arena_init(texi_arena *a, const tex_allocator *allocator)
{
    memset(a, 0, sizeof *a);
    if (allocator && allocator->alloc && allocator->free) {
        a->allocator = *allocator;
    } else {
        a->allocator.size = sizeof(tex_allocator);
        a->allocator.alloc = default_alloc;
        a->allocator.free = default_free;
    }
}

void *texi_arena_alloc(texi_arena *a, size_t size)
{
    size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (size == 0)
        size = ARENA_ALIGN;
    if (!a->head || a->head->size - a->used < size) {
        size_t chunk = size > ARENA_CHUNK_SIZE ? size : ARENA_CHUNK_SIZE;
        texi_arena_chunk *c = a->allocator.alloc(a->allocator.user, sizeof *c + chunk);
        if (!c)
            return NULL;
        c->size = chunk;
        /* A dedicated oversized chunk goes behind the head so the head's free
         * space stays usable. */
        if (a->head && chunk > ARENA_CHUNK_SIZE) {
            c->next = a->head->next;
            a->head->next = c;
            memset(c->data, 0, size);
            a->total += size;
            return c->data;
        }
        c->next = a->head;
        a->head = c;
        a->used = 0;
    }
    void *p = a->head->data + a->used;
    a->used += size;
    a->total += size;
    memset(p, 0, size);
    return p;
}

char *texi_arena_strdup(texi_arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = texi_arena_alloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void texi_arena_release(texi_arena *a)
{
    texi_arena_chunk *c = a->head;
    while (c) {
        texi_arena_chunk *next = c->next;
        a->allocator.free(a->allocator.user, c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
    a->total = 0;
}
