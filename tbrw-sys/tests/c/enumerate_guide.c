/* Every enumeration with the guide's calling convention (5.9, chapter 10):
 * the callback function's name is the argument. Writes FILE, then prints
 * what every callback is handed; enumerate_intel prints the same from the
 * same file through Intel's convention. Usage: enumerate_guide FILE.tb5 */
#include "enum_dump.h"

/* Intel's other names are there in the guide's style too. */
TBRW_VERIFY_SIZEOF(TBRW_MODULE, 104);
TBRW_VERIFY_SIZEOF(TBRW_UIOP, sizeof(void *));

int main(int argc, char **argv) {
    TBRW_PTR h = NULL;
    wchar_t *name;
    const dump_callbacks cb = {dump_data,  dump_first_only, dump_module,    dump_pid,         dump_tid,
                               dump_event, dump_desc,       dump_bind_data, dump_bind_module, dump_bind_tid};
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE.tb5\n", argv[0]);
        return 2;
    }
    name = wide_path(argv[1]);
    dump_write_file(name);
    OK(TBRW_open(&h, name, TBRW_FILE_READ));
    dump_all(h, &cb);
    OK(TBRW_close(h));
    free(name);
    return 0;
}
