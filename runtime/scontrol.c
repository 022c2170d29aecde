/* scontrol.c — `scontrol show hostnames LIST` run without a shell (see scontrol.h):
 * posix_spawnp with stdout on a pipe, read to the end (bounded), then waited for. */
#include "runtime/scontrol.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster/resolver.h"
#include "common/dp.h"

extern char **environ;

#define SCONTROL_MAX_OUTPUT (16u << 20)

/* Reads fd to its end into a new NUL-terminated buffer (*len bytes). Returns it, or
 * NULL with err filled when reading fails or the output passes the bound. */
static char *read_all(int fd, const char *prog, size_t *len, char *err)
{
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= SCONTROL_MAX_OUTPUT) {
                free(buf);
                dp_fail(err, DP_ERR, "%s printed more than %u MiB", prog, SCONTROL_MAX_OUTPUT >> 20);
                return NULL;
            }
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        ssize_t got = read(fd, buf + n, cap - 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            dp_fail(err, DP_ERR, "reading from %s: %s", prog, strerror(errno));
            free(buf);
            return NULL;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Splits text into its non-empty, whitespace-trimmed lines: a new array of new strings. */
static int split_lines(char *text, char ***hosts)
{
    int n = 0, cap = 0;
    char **v = NULL, *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        while (*line == ' ' || *line == '\t' || *line == '\r') line++;
        size_t len = strlen(line);
        while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r')) len--;
        if (!len) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            v = xrealloc(v, (size_t)cap * sizeof *v);
        }
        line[len] = '\0';
        v[n++] = xstrdup(line);
    }
    *hosts = v;
    return n;
}

int scontrol_hostnames(void *ctx, const char *nodelist, char ***hosts, int *n, char *err)
{
    const char *prog = ctx && *(const char *)ctx ? ctx : "scontrol";
    char *argv[] = {(char *)prog, "show", "hostnames", (char *)nodelist, NULL};
    int fds[2] = {-1, -1}, rc = DP_ERR, spawned = 0;
    char *out = NULL;
    pid_t pid = -1;
    posix_spawn_file_actions_t fa;
    *hosts = NULL;
    *n = 0;
    if (pipe(fds)) {
        rc = dp_fail(err, DP_ERR, "pipe: %s", strerror(errno));
        goto fail;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    int e = posix_spawnp(&pid, prog, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    fds[1] = -1;
    if (e == ENOENT) {
        rc = dp_fail(err, DP_ENOTFOUND, "%s: not found (Slurm's scontrol expands the node list: put it on "
                     "PATH, or set DOWNPOUR_SCONTROL to its path)", prog);
        goto fail;
    }
    if (e) {
        rc = dp_fail(err, DP_ERR, "%s: cannot run it: %s", prog, strerror(e));
        goto fail;
    }
    spawned = 1;
    size_t len = 0;
    out = read_all(fds[0], prog, &len, err);
    /* closed before the wait: a program still writing gets SIGPIPE instead of blocking */
    close(fds[0]);
    fds[0] = -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    spawned = 0;
    if (!out) goto fail;
    if (WIFSIGNALED(status)) {
        rc = dp_fail(err, DP_ERR, "%s show hostnames was killed by signal %d", prog, WTERMSIG(status));
        goto fail;
    }
    if (WEXITSTATUS(status)) {
        rc = dp_fail(err, DP_ERR, "%s show hostnames exited with status %d", prog, WEXITSTATUS(status));
        goto fail;
    }
    *n = split_lines(out, hosts);
    if (!*n) {
        rc = dp_fail(err, DP_ERR, "%s show hostnames printed no host names", prog);
        goto fail;
    }
    free(out);
    return DP_OK;
fail:
    if (fds[0] >= 0) close(fds[0]);
    if (fds[1] >= 0) close(fds[1]);
    if (spawned) while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    free(out);
    resolver_hosts_free(*hosts, *n);
    *hosts = NULL;
    *n = 0;
    return rc;
}
