/* Identifiers of generated code (see cnames.h). */
#include "util/cnames.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void texi_cnames_init(texi_cnames *t, const char *const reserved[], size_t n_reserved)
{
    memset(t, 0, sizeof *t);
    t->reserved = reserved;
    t->n_reserved = n_reserved;
}

void texi_cnames_fini(texi_cnames *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->names[i].cname);
    free(t->names);
    memset(t, 0, sizeof *t);
}

bool texi_cnames_is_reserved(const texi_cnames *t, const char *s)
{
    for (size_t i = 0; i < t->n_reserved; i++)
        if (strcmp(s, t->reserved[i]) == 0)
            return true;
    return false;
}

static bool taken(const texi_cnames *t, const char *s)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->names[i].cname, s) == 0)
            return true;
    return texi_cnames_is_reserved(t, s);
}

texi_cname *texi_cnames_find(const texi_cnames *t, const void *key)
{
    for (int i = t->n - 1; i >= 0; i--)
        if (t->names[i].key == key)
            return &t->names[i];
    return NULL;
}

/* A fresh identifier derived from name (malloc'ed), or NULL. */
static char *fresh(const texi_cnames *t, const char *name)
{
    size_t n = strlen(name ? name : "");
    char *base = malloc(n + 4), *out = malloc(n + 24);
    if (!base || !out) {
        free(base);
        free(out);
        return NULL;
    }
    size_t k = 0;
    if (n == 0 || isdigit((unsigned char)name[0]) || name[0] == '_' ||
        strncmp(name, "tex_", 4) == 0)
        base[k++] = 'v';
    for (size_t i = 0; i < n; i++)
        base[k++] = isalnum((unsigned char)name[i]) ? name[i] : '_';
    base[k] = '\0';
    if (texi_cnames_is_reserved(t, base)) {
        base[k++] = '_';
        base[k] = '\0';
    }
    snprintf(out, n + 24, "%s", base);
    for (int s = 1; taken(t, out); s++)
        snprintf(out, n + 24, "%s_%d", base, s);
    free(base);
    return out;
}

const char *texi_cnames_bind(texi_cnames *t, const void *key, const char *name)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 32;
        texi_cname *grown = realloc(t->names, sizeof *grown * (size_t)cap);
        if (!grown)
            return NULL;
        t->names = grown;
        t->cap = cap;
    }
    char *c = fresh(t, name);
    if (!c)
        return NULL;
    t->names[t->n++] = (texi_cname){key, c, false};
    return c;
}
