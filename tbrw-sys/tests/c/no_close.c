/* A collector that dies without closing: the target file never appears.
 * Usage: no_close FILE.tb5 (exits without TBRW_close) */
#include <unistd.h>

#include "check.h"

int main(int argc, char **argv) {
    TBRW_PTR h = NULL;
    TBRW_VERSION_INFO vi;
    wchar_t *name;
    if (argc != 2) return 2;
    name = wide_path(argv[1]);
    memset(&vi, 0, sizeof vi);
    vi.version_info_size = sizeof vi;
    OK(TBRW_open(&h, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_writing_section(h, TBRW_VERSION_INFO_SECTION));
    OK(TBRW_set_version_info(h, &vi));
    OK(TBRW_done_section(h, TBRW_VERSION_INFO_SECTION));
    free(name);
    printf("exiting without close\n");
    fflush(stdout);
    _exit(0);
}
