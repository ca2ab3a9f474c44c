//! The text `TBRW_error_string` returns for each code: static wide strings.

use std::collections::HashMap;
use std::sync::OnceLock;

use tb5::codes::*;

use crate::ctypes::TBRW_CHAR;

fn text(code: u32) -> Option<&'static str> {
    Some(match code {
        TBRW_SUCCESS => "success",
        TBRW_SAM_ERROR => "the sample file is damaged or could not be read or written",
        TBRW_UNKNOWN_SECTION_NUMBER => "unknown section identifier",
        TBRW_NO_MEMORY => "out of memory",
        TBRW_BUFFER_OVERFLOW => "the data does not fit a 32-bit size",
        TBRW_SAMPLE_FILE_MAPPING_ERROR => "the file is not a TB5 file",
        TBRW_UNEXPECTED_NULL_PTR => "a required pointer is NULL",
        TBRW_ENTRY_NOT_FOUND => "no entry at that index",
        TBRW_FILE_OPEN_FAILED => "the file could not be opened",
        TBRW_BAD_PARAMETER => {
            "a parameter is not valid (unknown handle, structure size too small, or a value out of range)"
        }
        TBRW_UNEXPECTED_VALUE => "unexpected value",
        TBRW_NOT_IMPLEMENTED => "not implemented",
        TBRW_SECTION_ALREADY_IN_USE => "the section already exists or is in use",
        TBRW_SECTION_NOT_EXIST => "the section does not exist",
        TBRW_STREAM_NOT_EXIST => "the stream does not exist",
        TBRW_INVALID_STREAM => "the stream cannot be used here",
        TBRW_STREAM_ALREADY_IN_USE => "the stream already exists or is in use",
        TBRW_INVALID_ERROR_CODE => "unknown error code",
        TBRW_INCOMPATIBLE_VERSION => "incompatible file version",
        TBRW_INVALID_READ_START => "the start index is past the end",
        TBRW_INVALID_STRING => "the string id names no string",
        TBRW_UNSUPPORTED_DATA_SIZE => "data of a size the data descriptor does not allow",
        TBRW_BUFFER_TOO_SMALL => "the buffer is too small",
        TBRW_INVALID_ACCESS_PERMS => "the file was not opened with the access this needs",
        TBRW_TB5_IS_NOT_BOUND => "the file is not bound",
        TBRW_SECTION_NOT_READABLE => "the section is not open for reading",
        TBRW_SECTION_NOT_WRITEABLE => "the section is not open for writing",
        TBRW_GLOBAL_SECTION_NOT_CLOSED => "a global section is still open",
        TBRW_STREAM_SECTION_NOT_CLOSED => "a stream section is still open",
        TBRW_STREAM_NOT_CLOSED => "a stream is still open",
        TBRW_STREAM_NOT_BOUND => "the stream is not bound",
        TBRW_NOT_ALL_SECTIONS_CLOSED => "not all sections are closed",
        TBRW_BIND_MODULES_NOT_SORTED => "the modules are not sorted",
        TBRW_UNEXPECTED_NUM_CPUIDS => "unexpected number of cpuids",
        TBRW_UNSUPPORTED_ARCH_TYPE => "unsupported CPU architecture type",
        TBRW_NO_DATA_TO_WRITE => "nothing was written to the section",
        _ => return None,
    })
}

static MESSAGES: OnceLock<HashMap<u32, Vec<TBRW_CHAR>>> = OnceLock::new();

/// The message of a code as a NUL-terminated wide string that lives as long as the program.
pub(crate) fn message(code: u32) -> Option<*const TBRW_CHAR> {
    let map = MESSAGES.get_or_init(|| {
        ALL.iter()
            .filter_map(|(c, _)| {
                text(*c).map(|t| (*c, t.chars().map(|ch| ch as u32 as TBRW_CHAR).chain([0]).collect()))
            })
            .collect()
    });
    map.get(&code).map(|w| w.as_ptr())
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_code_has_a_message() {
        for (c, name) in tb5::codes::ALL {
            assert!(super::text(*c).is_some(), "{name}");
        }
    }
}
