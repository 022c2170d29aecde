/* trace_hdr.h — the fields of a trace file's 48-byte block header (docs/trace-format.md),
 * for the tests that damage one and expect the reader to notice (test_trace_damage.c,
 * test_cmd_trace.c): the byte flipped and its mask. Masks keep the damaged value inside
 * the reader's other limits (N <= U, t_min <= t_max, lengths under 64 MiB), so the header
 * CRC32 is what tells the damage; only the magic (compared too) and, with an index, C, U
 * and N (compared with the index entry) are also caught another way. */
#ifndef TESTS_TRACE_HDR_H
#define TESTS_TRACE_HDR_H

#include <stdint.h>

static const struct hdr_field {
    const char *name;
    int at;
    uint8_t mask;
} hdr_fields[] = {
    {"magic", 1, 0x5a},
    {"flags", 4, 0x01},
    {"compressed length C", 8, 0x01},
    {"uncompressed length U", 12, 0x01},
    {"event count N", 16, 0x01},
    {"string definition count S", 20, 0x01},
    {"t_min", 31, 0x80},                  /* sign bit: far below t_max */
    {"t_max", 38, 0x01},                  /* + 2^48 ns: still above t_min */
    {"payload CRC32", 40, 0x5a},
    {"header CRC32", 44, 0x5a},
};

#endif
