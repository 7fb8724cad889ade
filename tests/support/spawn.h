/*
 * spawn.h: running a program from a test (a compiler, mostly) through
 * posix_spawnp, never a shell, with its stdout and stderr in a log file.
 * Header-only.
 */
#ifndef TEX_TESTS_SUPPORT_SPAWN_H
#define TEX_TESTS_SUPPORT_SPAWN_H

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>

extern char **environ;

/* Starts argv with stdout and stderr into log_path; the pid or -1. */
static inline pid_t tt_spawn_start(char *const argv[], const char *log_path)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc == 0 ? pid : -1;
}

/* The exit status of pid (-1 for a failed start), or -1. */
static inline int tt_spawn_wait(pid_t pid)
{
    int st;
    if (pid < 0)
        return -1;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs argv with stdout and stderr into log_path; the exit status or -1. */
static inline int tt_spawn(char *const argv[], const char *log_path)
{
    return tt_spawn_wait(tt_spawn_start(argv, log_path));
}

#endif
