/* chrome.h — export of a recorded trace as Chrome trace-event JSON (chrome://tracing,
 * Perfetto), following TensorFlow's timeline convention:
 *   - one process per task ("/job:worker/replica:0/task:1") and one per device
 *     ("/job:worker/replica:0/task:1/device:GPU:0 Compute"), named by process_name /
 *     thread_name metadata ("M");
 *   - compute as complete slices ("X" with "dur") on the device's process; barrier and
 *     SSP waits as X slices on the task; --pace waits as X slices named "paced" on the
 *     task's "paced" thread; the chief's evaluations as X slices named "evaluation" (as
 *     long as the eval event's duration) on its "evaluations" thread; short "send" X
 *     slices mark each push and
 *     "apply"/"drop" X slices each gradient on the ps. X slices that would partially
 *     overlap on one thread are spread over extra lanes ("compute #2", ...), so no two
 *     X slices on one tid ever partially overlap (Perfetto drops those);
 *   - pulls and pushes (which overlap) as async "b"/"e" pairs with numeric ids, always
 *     balanced (a begin without an end is closed at the end of the trace, an end without
 *     a begin gets a begin at t - dur);
 *   - flows ("s" -> "f", numeric ids, "bp":"e") from each worker push to the ps apply
 *     or drop of that gradient;
 *   - counters ("C") for global_step, loss (per worker), staleness (per ps) and the
 *     evaluations' accuracy (none for the simulator's, which have no test set);
 *   - other events (task start/stop, step end, eval, checkpoint, failure, log, ...) as
 *     instant events ("i").
 * Times are microseconds with three decimals (exact nanoseconds). Strings are escaped
 * and invalid UTF-8 replaced, so the output is always valid JSON. */
#ifndef EVENTS_CHROME_H
#define EVENTS_CHROME_H

#include <stdio.h>

#include "events/trace.h"

/* Writes all of r's events (from the start; the cursor is rewound and left at the end)
 * as one JSON object {"traceEvents":[...],"displayTimeUnit":"ms","otherData":{...}} to
 * out. The trace's metadata goes into otherData.metadata. Returns 0 or a dp_err with
 * err filled (a write failure). Blocks found damaged while reading are skipped, as
 * trace_reader_next does. */
int chrome_export(trace_reader *r, FILE *out, char *err);

/* As chrome_export, into a new file at path ("-" = stdout). */
int chrome_export_file(trace_reader *r, const char *path, char *err);

#endif
