/* record_check.h — whether two event records are the same, field by field (the values
 * bit for bit): the codec's and the trace files' round trips (test_events.c,
 * trace_check.h). Header-only, static. */
#ifndef TESTS_RECORD_CHECK_H
#define TESTS_RECORD_CHECK_H

#include <string.h>

#include "events/event.h"

static inline int same_record(const evt_record *a, const evt_record *b)
{
    return a->t == b->t && a->kind == b->kind && a->job == b->job &&
           a->peer_job == b->peer_job && a->task == b->task && a->peer == b->peer &&
           a->device == b->device && a->var == b->var && a->str == b->str &&
           a->step == b->step && a->bytes == b->bytes && a->dur == b->dur &&
           a->id == b->id && memcmp(&a->value, &b->value, sizeof a->value) == 0 &&
           memcmp(&a->value2, &b->value2, sizeof a->value2) == 0;
}

#endif
