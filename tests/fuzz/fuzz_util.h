/* fuzz_util.h — shared plumbing of the libFuzzer targets in tests/fuzz/ (not part of the
 * library): a once-per-process setup that silences the project's log lines (a bad input
 * is expected to be refused, and a refusal is not a finding) and ignores SIGPIPE, and an
 * in-memory file (memfd) that readers taking a path open as /proc/self/fd/N. Each target
 * is a single .c file including this header; everything here is static. */
#ifndef TESTS_FUZZ_UTIL_H
#define TESTS_FUZZ_UTIL_H

#define _GNU_SOURCE 1
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/dp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Logs off (FUZZ_LOG=1 in the environment keeps them, down to debug: to see why an
 * input is refused), SIGPIPE ignored; call at the top of every input (cheap). */
static inline void fuzz_quiet(void)
{
    static int done;
    if (done) return;
    done = 1;
    dp_log_level = getenv("FUZZ_LOG") ? DP_LOG_DEBUG : -1;
    signal(SIGPIPE, SIG_IGN);
}

/* A memfd holding exactly (data, size), and its path; one per process, rewritten per
 * input. Aborts when the system refuses (the harness cannot work, not a finding). */
typedef struct fuzz_file { int fd; char path[64]; } fuzz_file;

static inline const char *fuzz_file_put(fuzz_file *f, const uint8_t *data, size_t size)
{
    if (f->fd <= 0) {
        f->fd = memfd_create("fuzz-input", 0);
        if (f->fd < 0) { perror("memfd_create"); abort(); }
        snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
    }
    if (ftruncate(f->fd, 0) < 0) { perror("ftruncate"); abort(); }
    size_t off = 0;
    while (off < size) {
        ssize_t w = pwrite(f->fd, data + off, size - off, (off_t)off);
        if (w <= 0) { perror("pwrite"); abort(); }
        off += (size_t)w;
    }
    return f->path;
}

#endif
