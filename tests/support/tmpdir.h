/*
 * tmpdir.h: removing the temporary directories (kernel caches, exported
 * sources) that test programs make under /tmp. Header-only.
 */
#ifndef TEX_TESTS_SUPPORT_TMPDIR_H
#define TEX_TESTS_SUPPORT_TMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

#endif
