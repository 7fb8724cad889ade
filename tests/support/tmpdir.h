/*
 * tmpdir.h: the temporary files and directories (kernel caches, exported
 * sources) that test programs make under /tmp: reading and removing them.
 * Header-only.
 */
#ifndef TEX_TESTS_SUPPORT_TMPDIR_H
#define TEX_TESTS_SUPPORT_TMPDIR_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Makes the directory dir (a mkdtemp template, rewritten) and points
 * TEX_CACHE_DIR at it, so that the program's kernels are compiled for real
 * into a cache of its own; false, with a line naming prog, when it cannot. */
static inline bool tt_private_cache(char *dir, const char *prog)
{
    if (mkdtemp(dir) && setenv("TEX_CACHE_DIR", dir, 1) == 0)
        return true;
    printf("%s: cannot make a temporary cache directory\n", prog);
    return false;
}

/* Removes path and everything under it (symbolic links are removed, never
 * followed). */
static inline void tt_remove_tree(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char sub[4096];
        struct stat st;
        int len = snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        if (len < 0 || (size_t)len >= sizeof sub)
            continue; /* too long for a test's own temporary files */
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
            tt_remove_tree(sub);
        else
            unlink(sub);
    }
    if (d)
        closedir(d);
    rmdir(path);
}

/* The number of entries of dir whose names end in suffix; -1 when dir
 * cannot be opened. */
static inline int tt_count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    size_t sl = strlen(suffix);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        n += l >= sl && strcmp(e->d_name + l - sl, suffix) == 0;
    }
    closedir(d);
    return n;
}

/* Whether the file at path (its first 64 KiB) contains text. */
static inline bool tt_file_has(const char *path, const char *text)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return false;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return strstr(buf, text) != NULL;
}

#endif
