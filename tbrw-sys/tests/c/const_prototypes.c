/* The prototypes take const where Intel's public tbrw.h
 * does, so the ids of a structure from TBRW_get_one_module (a const
 * TBRW_MODULE) go straight to TBRW_convert_uniqueid_to_string from C and
 * C++ under -Werror. Usage: const_prototypes FILE */
#include "check.h"

int main(int argc, char **argv) {
    TBRW_PTR h = NULL;
    wchar_t *path;
    TBRW_MODULE m;
    const TBRW_MODULE *mod = NULL;
    const TBRW_STRING_OR_ID name_of_copy = {{0}};
    wchar_t name[64];
    TBRW_U32 needed = 0;
    if (argc != 2) return 2;
    path = wide_path(argv[1]);

    memset(&m, 0, sizeof m);
    m.module_size = sizeof m;
    m.module_name.soi_ptr = (TBRW_CHAR *)L"libconst.so";
    OK(TBRW_open(&h, path, TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_writing_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_add_module(h, &m));
    OK(TBRW_done_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_close(h));

    OK(TBRW_open(&h, path, TBRW_FILE_READ));
    OK(TBRW_get_one_module(h, 0, &mod));
    OK(TBRW_convert_uniqueid_to_string(h, sizeof name, &mod->module_name, name, &needed));
    ASSERT(wcscmp(name, L"libconst.so") == 0);
    ASSERT(needed == sizeof(L"libconst.so"));
    /* A const id of 0 is "no string", as before. */
    EXPECT(TBRW_convert_uniqueid_to_string(h, sizeof name, &name_of_copy, name, &needed), TBRW_INVALID_STRING);
    OK(TBRW_close(h));
    free(path);
    printf("const prototypes: ok\n");
    return 0;
}
