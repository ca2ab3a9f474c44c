/* A reader written to the guide that knows nothing of stack tables: it
 * reads stream 0 of FILE (its descriptor, its records and their binds)
 * and prints what it saw. A file with a stack table reads as any other:
 * the table is an extra section that C readers skip. Binds the stream
 * first when it is not bound (so FILE is opened for writing too).
 * Usage: read_stream FILE.tb5 */
#include "check.h"

typedef struct {
    TBRW_PTR h;
    TBRW_U32 record_size;
    TBRW_U64 records;
    TBRW_U64 bound;
    TBRW_U64 with_module;
    TBRW_U64 ip_sum;
} reader;

static TBRW_U32 on_desc(TBRW_SAMPREC_DESC_ENTRY *d, TBRW_U32 size, TBRW_U32 n, void *user) {
    reader *r = (reader *)user;
    TBRW_U32 k;
    ASSERT(size == n * sizeof *d);
    for (k = 0; k < n; k++) {
        TBRW_U32 end = d[k].desc_offset + d[k].desc_data_size;
        if (end > r->record_size) r->record_size = end;
        printf("field %ls offset %u size %u\n", text_of(r->h, d[k].desc_name), d[k].desc_offset,
               d[k].desc_data_size);
    }
    return TRUE;
}

static TBRW_U32 on_data(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    reader *r = (reader *)user;
    const unsigned char *p = (const unsigned char *)data;
    TBRW_U32 k;
    ASSERT(size == n * r->record_size);
    for (k = 0; k < n; k++) {
        TBRW_U64 ip;
        memcpy(&ip, p + (size_t)k * r->record_size, sizeof ip);
        r->ip_sum += ip;
    }
    r->records += n;
    return TRUE;
}

static TBRW_U32 on_bind(const void *data, TBRW_U32 size, TBRW_U64 n, const DATA_BIND_STRUCT *b, TBRW_U32 bsize,
                        void *user) {
    reader *r = (reader *)user;
    TBRW_U64 k;
    (void)data;
    ASSERT(size == n * r->record_size);
    ASSERT(bsize == n * sizeof *b);
    for (k = 0; k < n; k++)
        if (b[k].module_index != (TBRW_U64)-1) r->with_module++;
    r->bound += n;
    return TRUE;
}

int main(int argc, char **argv) {
    TBRW_PTR h = NULL;
    wchar_t *name;
    reader r;
    TBRW_U32 is_bound = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE.tb5\n", argv[0]);
        return 2;
    }
    memset(&r, 0, sizeof r);
    name = wide_path(argv[1]);
    OK(TBRW_open(&h, name, TBRW_FILE_READ | TBRW_FILE_WRITE));
    r.h = h;
    OK(TBRW_is_bound(h, 0, &is_bound));
    if (!is_bound) OK(TBRW_dobind(h, 0));
    OK(TBRW_reading_stream(h, 0));
    OK(TBRW_reading_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_enumerate_data_descriptor_entries(h, 0, on_desc, &r));
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_reading_stream_section(h, 0, TBRW_DATA_SECTION));
    OK(TBRW_enumerate_data(h, 0, on_data, &r, 0));
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(h, 0));
    OK(TBRW_bind_enumerate_data(h, 0, on_bind, &r, 0));
    OK(TBRW_close(h));
    free(name);
    printf("record size %u\nrecords %llu\nip sum %#llx\nbound %llu\nin a module %llu\n", r.record_size,
           (unsigned long long)r.records, (unsigned long long)r.ip_sum, (unsigned long long)r.bound,
           (unsigned long long)r.with_module);
    return 0;
}
