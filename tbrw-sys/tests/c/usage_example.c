/* The guide's chapter 10 example (writing a stream section), with its
 * error handling. As printed, the example writes only the stream info; the
 * guide's 5.2 says the data descriptor must be written too, so:
 * run 1 follows the example literally and must take its error path
 * (TBRW_done_stream fails, TBRW_error_string explains, abort leaves no file);
 * run 2 adds the data descriptor and must succeed.
 * Usage: usage_example FILE.tb5 */
#include <unistd.h>

#include "check.h"

static int example(const wchar_t *file_name, int with_descriptor) {
    TBRW_U32 ret_val;
    void *tbrw_ptr;
    int stream = 0;
    const wchar_t *err_text = NULL;
    TBRW_STREAM_INFO stream_info;
    TBRW_U32 access_mode = TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS;

    memset(&stream_info, 0, sizeof stream_info);
    stream_info.stream_info_size = sizeof stream_info;
    stream_info.stream_type = TBRW_CUSTOM_STREAM;
    stream_info.comment.soi_ptr = (TBRW_CHAR *)L"chapter 10";

    ret_val = TBRW_open(&tbrw_ptr, file_name, access_mode);
    if (ret_val != VT_SUCCESS) {
        printf("TBRW_open failed\n");
        return 1;
    }
    ret_val = TBRW_writing_stream(tbrw_ptr, stream);
    if (ret_val != VT_SUCCESS) {
        ret_val = TBRW_error_string(ret_val, &err_text);
        printf("TBRW_writing_stream number %d returned error \"%ls\"\n", stream, err_text);
        ret_val = TBRW_abort_cleanup_and_close(tbrw_ptr);
        return 1;
    }
    ret_val = TBRW_writing_stream_section(tbrw_ptr, stream, TBRW_STREAM_INFO_SECTION);
    OK(ret_val);
    ret_val = TBRW_set_stream_info(tbrw_ptr, stream, &stream_info);
    OK(ret_val);
    ret_val = TBRW_done_stream_section(tbrw_ptr, stream, TBRW_STREAM_INFO_SECTION);
    OK(ret_val);
    if (with_descriptor) {
        TBRW_SAMPREC_DESC_ENTRY d;
        memset(&d, 0, sizeof d);
        d.desc_size = sizeof d;
        d.desc_type = ST_START_USER_DEFINED;
        d.desc_data_size = 8;
        d.desc_name.soi_ptr = (TBRW_CHAR *)L"value";
        OK(TBRW_writing_stream_section(tbrw_ptr, stream, TBRW_DATA_DESCRIPTION_SECTION));
        OK(TBRW_add_data_descriptor_entry(tbrw_ptr, stream, &d));
        OK(TBRW_done_stream_section(tbrw_ptr, stream, TBRW_DATA_DESCRIPTION_SECTION));
    }
    ret_val = TBRW_done_stream(tbrw_ptr, stream);
    if (ret_val != VT_SUCCESS) {
        TBRW_U32 code = ret_val;
        ret_val = TBRW_error_string(ret_val, &err_text);
        printf("TBRW_done_stream number %d returned error %u \"%ls\"\n", stream, code, err_text);
        ret_val = TBRW_abort_cleanup_and_close(tbrw_ptr);
        return 1;
    }
    ret_val = TBRW_close(tbrw_ptr);
    if (ret_val != VT_SUCCESS) {
        printf("TBRW_close failed\n");
    }
    return 0;
} /* end example */

int main(int argc, char **argv) {
    wchar_t *name;
    char *narrow;
    if (argc != 2) return 2;
    name = wide_path(argv[1]);
    OK(TBRW_convert_wcs_to_utf8_malloced(name, &narrow));
    ASSERT(strcmp(narrow, argv[1]) == 0);
    free(narrow);
    remove(argv[1]); /* from an earlier run */
    ASSERT(example(name, 0) == 1);
    ASSERT(access(argv[1], F_OK) != 0); /* aborted: no file */
    ASSERT(example(name, 1) == 0);
    ASSERT(access(argv[1], F_OK) == 0);
    free(name);
    printf("chapter 10 example: ok\n");
    return 0;
}
