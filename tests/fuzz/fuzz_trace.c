/* fuzz_trace.c — libFuzzer target: the trace reader (events/trace_read.c). The input is a
 * whole .dptrace file on a memfd. A trace that opens is read the ways its users read it:
 * metadata, damage, block list, every event in order with its strings, a seek into the
 * middle and the replay state there (the viewer's path). Blocks are checksummed, so
 * mutations mostly exercise the damage paths (checksum refusal, index rebuild by
 * scanning, truncation); record decoding itself is fuzzed behind no checksum by
 * fuzz_frame. */
#include "tests/fuzz/fuzz_util.h"

#include "events/state.h"
#include "events/trace.h"

static fuzz_file file;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    const char *path = fuzz_file_put(&file, data, size);
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return 0;
    trace_reader_metadata(r);
    trace_reader_damage(r);
    trace_reader_damage_offset(r);
    size_t nb = trace_reader_block_count(r);
    trace_block_info bi;
    for (size_t i = 0; i <= nb; i++) trace_reader_block_info(r, i, &bi);
    evt_record e;
    uint64_t n = 0;
    int rc;
    while (n < 200000 && (rc = trace_reader_next(r, &e)) == 1) {
        trace_reader_string(r, e.device);
        trace_reader_string(r, e.var);
        trace_reader_string(r, e.str);
        n++;
    }
    int64_t t0 = trace_reader_t0(r), t1 = trace_reader_t1(r);
    int64_t mid = t0 / 2 + t1 / 2;
    if (trace_reader_seek(r, mid) == 0) trace_reader_next(r, &e);
    evt_state st;
    evt_state_init(&st);
    trace_reader_state_at(r, mid, &st);
    evt_state_release(&st);
    trace_reader_rewind(r);
    trace_reader_close(r);
    return 0;
}
