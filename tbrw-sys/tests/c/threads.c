/* Several handles used from several threads at once: each thread writes
 * its own file and reads it back. Usage: threads DIR */
#include <pthread.h>

#include "check.h"

#define THREADS 4
#define RECORDS 20000

struct job {
    char path[4096];
    unsigned seed;
};

static void *work(void *arg) {
    struct job *j = (struct job *)arg;
    wchar_t *name = wide_path(j->path);
    TBRW_PTR h = NULL;
    TBRW_STREAM_INFO si;
    TBRW_SAMPREC_DESC_ENTRY d;
    TBRW_VERSION_INFO vi;
    TBRW_U64 v;
    TBRW_U32 i, n = 0;
    memset(&si, 0, sizeof si);
    si.stream_info_size = sizeof si;
    si.stream_type = TBRW_CUSTOM_STREAM;
    memset(&d, 0, sizeof d);
    d.desc_size = sizeof d;
    d.desc_type = ST_START_USER_DEFINED;
    d.desc_data_size = 8;
    memset(&vi, 0, sizeof vi);
    vi.version_info_size = sizeof vi;
    vi.bind_version = j->seed;

    OK(TBRW_open(&h, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_writing_section(h, TBRW_VERSION_INFO_SECTION));
    OK(TBRW_set_version_info(h, &vi));
    OK(TBRW_done_section(h, TBRW_VERSION_INFO_SECTION));
    OK(TBRW_writing_stream(h, 0));
    OK(TBRW_writing_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_set_stream_info(h, 0, &si));
    OK(TBRW_done_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_add_data_descriptor_entry(h, 0, &d));
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
    for (i = 0; i < RECORDS; i++) {
        v = (TBRW_U64)j->seed * 1000000 + i;
        OK(TBRW_add_data(h, 0, 8, &v));
    }
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(h, 0));
    OK(TBRW_close(h));

    OK(TBRW_open(&h, name, TBRW_FILE_READ));
    OK(TBRW_reading_section(h, TBRW_VERSION_INFO_SECTION));
    OK(TBRW_get_version_info(h, sizeof vi, &vi, NULL));
    ASSERT(vi.bind_version == j->seed);
    OK(TBRW_done_section(h, TBRW_VERSION_INFO_SECTION));
    OK(TBRW_get_number_data_streams(h, &n));
    ASSERT(n == 1);
    OK(TBRW_close(h));
    free(name);
    return NULL;
}

int main(int argc, char **argv) {
    pthread_t t[THREADS];
    struct job jobs[THREADS];
    int i;
    if (argc != 2) return 2;
    for (i = 0; i < THREADS; i++) {
        snprintf(jobs[i].path, sizeof jobs[i].path, "%s/t%d.tb5", argv[1], i);
        jobs[i].seed = (unsigned)i + 1;
        ASSERT(pthread_create(&t[i], NULL, work, &jobs[i]) == 0);
    }
    for (i = 0; i < THREADS; i++) ASSERT(pthread_join(t[i], NULL) == 0);
    printf("threads: ok\n");
    return 0;
}
