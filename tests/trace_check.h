/* trace_check.h — what the trace file tests share (test_trace.c, test_trace_damage.c):
 * comparing records (record_check.h), writing a generated run through the writer (its
 * checks count in the caller's binary), reading a file's size and every event, and the
 * realistic run both read (2 ps, 4 workers, 6 variables, RT_STEPS steps, sync). Include
 * after tests/check.h. Header-only, static. */
#ifndef TESTS_TRACE_CHECK_H
#define TESTS_TRACE_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "events/event.h"
#include "events/trace.h"
#include "tests/evgen.h"
#include "tests/record_check.h"

/* Writes g's events to path, remapping string ids through the writer (so definitions
 * land in the block where each first appears). *out gets the written records. */
static inline void write_gen(const char *path, const evgen *g, evt_record **out, const char *final)
{
    char err[DP_ERRLEN];
    trace_writer *w = trace_writer_open(path, "{\"engine\":\"sim\",\"seed\":7}", err);
    CHECK_MSG(w != NULL, "%s", err);
    if (!w) exit(1);
    evt_record *ev = xmalloc(g->n * sizeof *ev);
    int added = 1;
    for (size_t i = 0; i < g->n; i++) {
        evt_record e = g->ev[i];
        e.device = trace_writer_intern(w, evt_strtab_get(g->strs, e.device));
        e.var = trace_writer_intern(w, evt_strtab_get(g->strs, e.var));
        e.str = trace_writer_intern(w, evt_strtab_get(g->strs, e.str));
        if (trace_writer_add(w, &e) != 0) added = 0;
        ev[i] = e;
    }
    CHECK(added);
    CHECK(trace_writer_events(w) == g->n);
    if (final) trace_writer_set_final_metadata(w, final);
    CHECK_MSG(trace_writer_close(w, err) == 0, "%s", err);
    *out = ev;
}

static inline long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* Reads every event of path; returns the count, filling ev (up to cap). */
static inline size_t read_all(trace_reader *r, evt_record *ev, size_t cap)
{
    size_t n = 0;
    evt_record e;
    trace_reader_rewind(r);
    while (trace_reader_next(r, &e) == 1) {
        if (n < cap) ev[n] = e;
        n++;
    }
    return n;
}

#define RT_STEPS 1000

/* The realistic run into gen, written to path with final metadata; *written gets the
 * records as written (caller frees, and frees gen with evgen_free). */
static inline void write_rt(const char *path, evgen *gen, evt_record **written)
{
    evgen_run(gen, 2, 4, 6, RT_STEPS, 1, 1);
    write_gen(path, gen, written, "{\"engine\":\"sim\",\"final_loss\":0.3}");
}

#endif
