/*
 * Identifiers of generated C-family code (the C and CUDA emitters): each key
 * (an IR variable or a buffer's storage) is bound to a unique identifier
 * derived from its name. Characters that are not letters or digits become
 * '_'; a name that starts with a digit or '_', with "tex_" (the helpers'
 * prefix) or is empty gets a 'v' in front; a reserved word gets a '_' behind;
 * a name already bound gets "_1", "_2", ... Bindings are searched newest
 * first, so a key bound again (a loop variable re-bound in a sibling scope)
 * finds its latest identifier.
 */
#ifndef TEX_UTIL_CNAMES_H
#define TEX_UTIL_CNAMES_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const void *key; /* what is named */
    char *cname;     /* malloc'ed identifier */
    bool used;       /* for the emitter's own bookkeeping */
} texi_cname;

typedef struct {
    texi_cname *names;
    int n, cap;
    const char *const *reserved; /* words the generated code may not redefine */
    size_t n_reserved;
} texi_cnames;

void texi_cnames_init(texi_cnames *t, const char *const reserved[], size_t n_reserved);
void texi_cnames_fini(texi_cnames *t);

/* True when s is one of the reserved words. */
bool texi_cnames_is_reserved(const texi_cnames *t, const char *s);

/* The latest binding of key, or NULL. */
texi_cname *texi_cnames_find(const texi_cnames *t, const void *key);

/* Binds key to a fresh identifier derived from name; NULL when out of memory. */
const char *texi_cnames_bind(texi_cnames *t, const void *key, const char *name);

#endif
