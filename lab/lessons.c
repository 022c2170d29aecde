/* lessons.c — `downpour lessons`: the lesson library (scenarios/lessons/NN-name.ini),
 * one line each with its number, title, planned duration and the command that runs it
 * (`compare` for a lesson with [compare], `run` otherwise).
 * A file that does not parse is listed with its error, so a broken lesson is seen. */
#include "lab/lab.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int lab_lessons(FILE *out, const char *dir, char *err)
{
    DIR *d = opendir(dir);
    if (!d) return dp_fail(err, DP_EIO, "%s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".ini")) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            names = xrealloc(names, cap * sizeof *names);
        }
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    scenario *s = xmalloc(sizeof *s);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        char path[1024], msg[DP_ERRLEN];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (lab_load(s, path, msg)) {
            fprintf(out, "  ??  %s: %s\n", names[i], msg);
            bad++;
        } else {
            char dur[32] = "";
            if (s->lesson.duration_s > 0) snprintf(dur, sizeof dur, "%.0f min", s->lesson.duration_s / 60.0 + 0.49);
            fprintf(out, "  %02d  %-62s %-7s downpour %s %s\n", s->lesson.number, s->title, dur,
                    s->n_vary ? "compare" : "run", path);
        }
        free(names[i]);
    }
    free(names);
    free(s);
    if (n == 0) return dp_fail(err, DP_ENOTFOUND, "%s: no lessons (*.ini)", dir);
    return bad ? dp_fail(err, DP_EINVAL, "%d of %zu lessons do not parse", bad, n) : DP_OK;
}
