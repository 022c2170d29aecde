/* trace.h — recorded runs. A trace file is: a header (magic "DPTRACE\0", format version,
 * the run's metadata as JSON), then blocks of events (string definitions + encoded
 * records) compressed with zstd, each with its length, time range, event count and a
 * CRC32 of its compressed bytes, then an index (block offsets and first times) and a
 * footer pointing at it. A file cut short has no index/footer: the reader rebuilds it
 * by scanning blocks and stops at the last complete one. A corrupt block is reported
 * with its file offset and skipped. Writers and readers are single-threaded. */
#ifndef EVENTS_TRACE_H
#define EVENTS_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "events/event.h"

typedef struct trace_writer trace_writer;

/* Creates path and writes the header with metadata_json (copied; "{}" if NULL).
 * Returns NULL and fills err on failure. Close with trace_writer_close(). */
trace_writer *trace_writer_open(const char *path, const char *metadata_json, char *err);

/* Interns s in the trace's string table; the definition is written in the block where
 * it first appears, before any event using it. */
uint32_t trace_writer_intern(trace_writer *w, const char *s);

/* Appends one event. Events should come in non-decreasing time; a slightly earlier
 * one is accepted (merged streams) and readers order by (t, arrival). A block is
 * flushed (compressed, written, fflush'd) every 4096 events or 250 ms of trace time,
 * so a crash loses at most one block. Returns 0 or a dp_err (write failure). */
int trace_writer_add(trace_writer *w, const evt_record *e);

/* Flushes the current block now. */
int trace_writer_flush(trace_writer *w, char *err);

/* Replaces the metadata JSON written at close (in the footer); used for final run
 * summaries. */
void trace_writer_set_final_metadata(trace_writer *w, const char *json);

/* Flushes, writes index and footer, closes and frees. NULL is a no-op. Returns 0 or
 * a dp_err (message in err). */
int trace_writer_close(trace_writer *w, char *err);

uint64_t trace_writer_events(const trace_writer *w);

/* ---- reader --------------------------------------------------------------------- */
typedef struct trace_reader trace_reader;

/* Opens a trace. Damage does not fail the open when a readable prefix exists:
 * trace_reader_damage() then describes it ("block at offset 123456: checksum mismatch;
 * skipped"; "truncated at offset 98765: last complete block ends at 98000").
 * Returns NULL with err filled when nothing is readable (not a trace, bad header,
 * unsupported version) or when its blocks' times span more than int64 holds. Every event
 * it returns lies within its block's [t_min, t_max] (a block holding one outside is
 * damaged and skipped), so t1 - t0 and any e.t - t0 fit in int64. Close with
 * trace_reader_close(). */
trace_reader *trace_reader_open(const char *path, char *err);
void trace_reader_close(trace_reader *r);

/* Metadata JSON (final if present, else the header's); borrowed. */
const char *trace_reader_metadata(const trace_reader *r);
/* NULL when undamaged; otherwise a one-line description; borrowed. When there are
 * several problems the line describes the first and counts the others. */
const char *trace_reader_damage(const trace_reader *r);
/* File offset of the first problem, or -1 when undamaged. */
int64_t trace_reader_damage_offset(const trace_reader *r);

/* The readable blocks, in file order (damaged ones are not listed). */
typedef struct trace_block_info {
    uint64_t offset;       /* of the block header in the file */
    uint32_t bytes;        /* header + compressed payload */
    uint32_t events;
    int64_t t_min, t_max;
} trace_block_info;
size_t trace_reader_block_count(const trace_reader *r);
/* Fills *out for block i; DP_EINVAL when i is out of range. */
int trace_reader_block_info(const trace_reader *r, size_t i, trace_block_info *out);

uint64_t trace_reader_count(const trace_reader *r);   /* events readable */
int64_t trace_reader_t0(const trace_reader *r);       /* first event time */
int64_t trace_reader_t1(const trace_reader *r);       /* last event time */

/* String for an id in this trace; "" if unknown. Borrowed until close. */
const char *trace_reader_string(const trace_reader *r, uint32_t id);

/* Positions the cursor at the first event with time >= t (O(log blocks) + one
 * block decode). Within a block events are ordered by (t, arrival); across blocks in
 * file order, and the search uses each block's running maximum time, so for a trace
 * with slightly late events this is the first event >= t in reader order. */
int trace_reader_seek(trace_reader *r, int64_t t);
/* Positions at the first event. */
int trace_reader_rewind(trace_reader *r);
/* Reads the next event into *e; returns 1, 0 at the end, or a negative dp_err. */
int trace_reader_next(trace_reader *r, evt_record *e);

#endif
