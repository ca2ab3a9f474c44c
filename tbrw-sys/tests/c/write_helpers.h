/* Helpers of the writing-side C tests. Valid C11 and C++. */
#ifndef TBRW_TEST_ISSUE12_WRITE_H
#define TBRW_TEST_ISSUE12_WRITE_H

#include "check.h"

static inline TBRW_SAMPREC_DESC_ENTRY desc_entry(TBRW_U16 type, TBRW_U16 subtype, TBRW_U32 size) {
    TBRW_SAMPREC_DESC_ENTRY d;
    memset(&d, 0, sizeof d);
    d.desc_size = sizeof d;
    d.desc_type = type;
    d.desc_subtype = subtype;
    d.desc_data_size = size;
    return d;
}

/* The guide's stream 0 descriptor: the 32-byte PC record and the TSC. */
static inline void add_legacy_descriptor(TBRW_PTR h) {
    TBRW_SAMPREC_DESC_ENTRY pc = desc_entry(ST_LEGACY_SAMPLE_RECORD, SST_NONE, 32);
    TBRW_SAMPREC_DESC_ENTRY tsc = desc_entry(ST_TIME_STAMP, SST_TSC, 8);
    OK(TBRW_add_data_descriptor_entry(h, 0, &pc));
    OK(TBRW_add_data_descriptor_entry(h, 0, &tsc));
}

static inline void add_sample(TBRW_PTR h, TBRW_U32 eip, TBRW_U32 event, TBRW_U64 tsc) {
    TBRW_SampleRecordPC s;
    memset(&s, 0, sizeof s);
    s.eip = eip;
    s.eventIndex = event;
    OK(TBRW_add_data(h, 0, sizeof s, &s));
    OK(TBRW_add_data(h, 0, sizeof tsc, &tsc));
}

static inline void stream_info_and_events(TBRW_PTR h, const TBRW_U32 *ids, int n) {
    TBRW_STREAM_INFO si;
    TBRW_EVENT ev;
    int i;
    memset(&si, 0, sizeof si);
    si.stream_info_size = sizeof si;
    OK(TBRW_writing_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_set_stream_info(h, 0, &si));
    OK(TBRW_done_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_writing_stream_section(h, 0, TBRW_EVENT_DESCRIPTION_SECTION));
    for (i = 0; i < n; i++) {
        memset(&ev, 0, sizeof ev);
        ev.event_size = sizeof ev;
        ev.event_id = ids[i];
        OK(TBRW_add_event(h, 0, &ev));
    }
    OK(TBRW_done_stream_section(h, 0, TBRW_EVENT_DESCRIPTION_SECTION));
}

#endif
