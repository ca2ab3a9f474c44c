/* Unload notifications with and without an address (guide 8.6 fills
 * module_load_address and module_length for loads only): an unload that
 * names its module ends the open load of that module in its process, so
 * samples at the module's addresses after it bind to no module. One module
 * is loaded twice at two addresses, with both loads written before both
 * unloads; another is unloaded by address. Checked on a read-only bind (in
 * memory) and on the bind stored at the close of the writing session.
 * Usage: bind_unloads FILE.tb5 */
#include "check.h"

#define NONE ((TBRW_U64)-1)

static void add_module(TBRW_PTR h, TBRW_U64 at, TBRW_U64 len, TBRW_U64 when, TBRW_U32 kind, const wchar_t *path,
                       const wchar_t *name) {
    TBRW_MODULE m;
    memset(&m, 0, sizeof m);
    m.module_size = sizeof m;
    m.module_associated_pid = 10;
    m.module_load_address = at;
    m.module_length = len;
    m.module_event_when = when;
    m.module_unload_tsc = (TBRW_U64)-1;
    m.module_flags = TBRW_MODULE_TSC_USED | kind;
    m.module_path.soi_ptr = (TBRW_CHAR *)path;
    m.module_name.soi_ptr = (TBRW_CHAR *)name;
    OK(TBRW_add_module(h, &m));
}

/* (eip, tsc) of each sample and the module it must bind to. */
static const struct {
    TBRW_U32 eip;
    TBRW_U64 tsc;
    TBRW_U64 module;
} samples[] = {
    {0x400010, 50, 0},     /* a.out */
    {0x500010, 150, 1},    /* plugin.dll, first load */
    {0x500010, 250, NONE}, /* unloaded at 200 by a record without address */
    {0x600010, 350, 2},    /* plugin.dll, second load (at 300) */
    {0x500010, 350, NONE}, /* the first load's address, still unloaded */
    {0x600010, 450, NONE}, /* unloaded at 400 */
    {0x700010, 200, 5},    /* lib2.so */
    {0x700010, 300, NONE}, /* unloaded at 250 by a record with its address */
};
#define N_SAMPLES (sizeof samples / sizeof samples[0])

static void write_file(const wchar_t *name) {
    TBRW_PTR h = NULL;
    unsigned i;
    OK(TBRW_open(&h, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_writing_section(h, TBRW_MODULE_SECTION));
    add_module(h, 0x400000, 0x10000, 0, TBRW_MODULE_LOADED | TBRW_MODULE_IS_EXE, L"/app/a.out", L"a.out");
    add_module(h, 0x500000, 0x1000, 100, TBRW_MODULE_LOADED, L"C:\\app\\plugin.dll", L"plugin.dll");
    add_module(h, 0x600000, 0x1000, 300, TBRW_MODULE_LOADED, L"C:\\app\\plugin.dll", L"plugin.dll");
    add_module(h, 0, 0, 200, TBRW_MODULE_UNLOADED, L"C:\\app\\plugin.dll", L"plugin.dll");
    add_module(h, 0, 0, 400, TBRW_MODULE_UNLOADED, NULL, L"plugin.dll"); /* by name alone */
    add_module(h, 0x700000, 0x1000, 100, TBRW_MODULE_LOADED, L"/app/lib2.so", L"lib2.so");
    add_module(h, 0x700000, 0, 250, TBRW_MODULE_UNLOADED, NULL, NULL);
    add_module(h, 0, 0, 150, TBRW_MODULE_UNLOADED, L"C:\\app\\other.dll", L"other.dll"); /* never loaded */
    OK(TBRW_done_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_writing_stream(h, 0));
    {
        TBRW_STREAM_INFO si;
        TBRW_SAMPREC_DESC_ENTRY pc, tsc;
        memset(&si, 0, sizeof si);
        si.stream_info_size = sizeof si;
        si.stream_type = TBRW_SAMPLING_STREAM;
        OK(TBRW_writing_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
        OK(TBRW_set_stream_info(h, 0, &si));
        OK(TBRW_done_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
        memset(&pc, 0, sizeof pc);
        pc.desc_size = sizeof pc;
        pc.desc_type = ST_LEGACY_SAMPLE_RECORD;
        pc.desc_data_size = 32;
        tsc = pc;
        tsc.desc_type = ST_TIME_STAMP;
        tsc.desc_subtype = SST_TSC;
        tsc.desc_data_size = 8;
        OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
        OK(TBRW_add_data_descriptor_entry(h, 0, &pc));
        OK(TBRW_add_data_descriptor_entry(h, 0, &tsc));
        OK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    }
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
    for (i = 0; i < N_SAMPLES; i++) {
        TBRW_SampleRecordPC s;
        TBRW_U64 tsc = samples[i].tsc;
        memset(&s, 0, sizeof s);
        s.eip = samples[i].eip;
        s.pidRecIndexRaw = 1;
        s.pidRecIndex = 10;
        s.tidIsRaw = 1;
        s.tid = 11;
        OK(TBRW_add_data(h, 0, sizeof s, &s));
        OK(TBRW_add_data(h, 0, sizeof tsc, &tsc));
    }
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(h, 0));
    OK(TBRW_dobind(h, 0)); /* stored right after the close's commit */
    OK(TBRW_close(h));
}

static unsigned checked;

static TBRW_U32 check_binds(const void *data, TBRW_U32 size, TBRW_U64 n, const DATA_BIND_STRUCT *b, TBRW_U32 bsize,
                            void *user) {
    TBRW_U64 k;
    (void)data;
    (void)size;
    (void)bsize;
    (void)user;
    for (k = 0; k < n; k++, checked++) {
        if (b[k].module_index != samples[checked].module) {
            fprintf(stderr, "sample %u (eip %#x, tsc %llu): module %lld, expected %lld\n", checked,
                    samples[checked].eip, (unsigned long long)samples[checked].tsc, (long long)b[k].module_index,
                    (long long)samples[checked].module);
            exit(1);
        }
    }
    return TRUE;
}

int main(int argc, char **argv) {
    TBRW_PTR h = NULL;
    wchar_t *name;
    TBRW_U32 bound = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE.tb5\n", argv[0]);
        return 2;
    }
    name = wide_path(argv[1]);
    write_file(name);

    /* The bind stored at close. */
    OK(TBRW_open(&h, name, TBRW_FILE_READ));
    OK(TBRW_is_bound(h, 0, &bound));
    ASSERT(bound == 1);
    checked = 0;
    OK(TBRW_bind_enumerate_data(h, 0, check_binds, NULL, 0));
    ASSERT(checked == N_SAMPLES);
    OK(TBRW_close(h));
    /* Unbound, then bound again in memory by a read-only handle: the same. */
    OK(TBRW_open(&h, name, TBRW_FILE_READ | TBRW_FILE_WRITE));
    OK(TBRW_unbind(h, 0));
    OK(TBRW_close(h));
    OK(TBRW_open(&h, name, TBRW_FILE_READ));
    OK(TBRW_is_bound(h, 0, &bound));
    ASSERT(bound == 0);
    OK(TBRW_dobind(h, 0));
    checked = 0;
    OK(TBRW_bind_enumerate_data(h, 0, check_binds, NULL, 0));
    ASSERT(checked == N_SAMPLES);
    OK(TBRW_close(h));
    free(name);
    printf("bind unloads: ok\n");
    return 0;
}
