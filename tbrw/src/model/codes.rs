//! The `TBRW_*` error codes of `tbrw.h` (TBRW 2.3), as one table: each
//! code's number, C name and message. The constants, [`TABLE`], [`ALL`],
//! [`name`] and [`message`] all come from the one list below, so they cannot
//! disagree; `TBRW_error_string` in the C layer builds its texts from it.

/// One TBRW error code: its number, its C name and the text
/// `TBRW_error_string` returns for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeInfo {
    /// The number `tbrw.h` gives the code.
    pub value: u32,
    /// The C name, e.g. `TBRW_SUCCESS`.
    pub name: &'static str,
    /// The message text.
    pub message: &'static str,
}

macro_rules! tbrw_codes {
    ($($name:ident = $value:literal => $message:literal,)*) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: ", $message, ".")]
            pub const $name: u32 = $value;
        )*

        /// Every code, in value order.
        pub const TABLE: &[CodeInfo] = &[$(CodeInfo { value: $value, name: stringify!($name), message: $message }),*];

        /// Every code with its C name, in value order.
        pub const ALL: &[(u32, &str)] = &[$(($value, stringify!($name))),*];
    };
}

tbrw_codes! {
    TBRW_SUCCESS = 0 => "success",
    TBRW_SAM_ERROR = 22 => "the sample file is damaged or could not be read or written",
    TBRW_INVALID_SAMPLE_FILE = 24 => "invalid sample file: not a sample file, or one missing a section Intel's library requires",
    TBRW_UNKNOWN_SECTION_NUMBER = 25 => "unknown section identifier",
    TBRW_NO_MEMORY = 26 => "out of memory",
    TBRW_BUFFER_OVERFLOW = 29 => "the data does not fit a 32-bit size",
    TBRW_SAMPLE_FILE_MAPPING_ERROR = 34 => "the file is not a TB5 file",
    TBRW_UNEXPECTED_NULL_PTR = 36 => "a required pointer is NULL",
    TBRW_ENTRY_NOT_FOUND = 39 => "no entry at that index",
    TBRW_FILE_OPEN_FAILED = 44 => "the file could not be opened",
    TBRW_BAD_PARAMETER = 63
        => "a parameter is not valid (unknown handle, structure size too small, or a value out of range)",
    TBRW_UNEXPECTED_VALUE = 72 => "unexpected value",
    TBRW_NOT_IMPLEMENTED = 73 => "not implemented",
    TBRW_SECTION_ALREADY_IN_USE = 77 => "the section already exists or is in use",
    TBRW_SECTION_NOT_EXIST = 78 => "the section does not exist",
    TBRW_STREAM_NOT_EXIST = 79 => "the stream does not exist",
    TBRW_INVALID_STREAM = 80 => "the stream cannot be used here",
    TBRW_STREAM_ALREADY_IN_USE = 81 => "the stream already exists or is in use",
    TBRW_INVALID_ERROR_CODE = 83 => "unknown error code",
    TBRW_INCOMPATIBLE_VERSION = 84 => "incompatible file version",
    TBRW_INVALID_READ_START = 86 => "the start index is past the end",
    TBRW_INVALID_STRING = 97 => "the string id names no string",
    TBRW_UNSUPPORTED_DATA_SIZE = 98 => "data of a size the data descriptor does not allow",
    TBRW_BUFFER_TOO_SMALL = 103 => "the buffer is too small",
    TBRW_INVALID_ACCESS_PERMS = 111 => "the file was not opened with the access this needs",
    TBRW_TB5_IS_NOT_BOUND = 113 => "the file is not bound",
    TBRW_SECTION_NOT_READABLE = 124 => "the section is not open for reading",
    TBRW_SECTION_NOT_WRITEABLE = 125 => "the section is not open for writing",
    TBRW_GLOBAL_SECTION_NOT_CLOSED = 126 => "a global section is still open",
    TBRW_STREAM_SECTION_NOT_CLOSED = 127 => "a stream section is still open",
    TBRW_STREAM_NOT_CLOSED = 128 => "a stream is still open",
    TBRW_STREAM_NOT_BOUND = 129 => "the stream is not bound",
    TBRW_NOT_ALL_SECTIONS_CLOSED = 131 => "not all sections are closed",
    TBRW_BIND_MODULES_NOT_SORTED = 142 => "the modules are not sorted",
    TBRW_UNEXPECTED_NUM_CPUIDS = 143 => "unexpected number of cpuids",
    TBRW_UNSUPPORTED_ARCH_TYPE = 144 => "unsupported CPU architecture type",
    TBRW_NO_DATA_TO_WRITE = 145 => "nothing was written to the section",
}

/// The table entry of a code, or `None` when `tbrw.h` does not define it.
pub fn info(code: u32) -> Option<&'static CodeInfo> {
    TABLE.iter().find(|c| c.value == code)
}

/// The C name of a code, or `None` when `tbrw.h` does not define it.
pub fn name(code: u32) -> Option<&'static str> {
    info(code).map(|c| c.name)
}

/// The message of a code (what `TBRW_error_string` returns), or `None`
/// when `tbrw.h` does not define it.
pub fn message(code: u32) -> Option<&'static str> {
    info(code).map(|c| c.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_in_value_order_without_duplicates() {
        assert!(TABLE.windows(2).all(|w| w[0].value < w[1].value));
        let mut names: Vec<&str> = TABLE.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLE.len());
        assert!(TABLE.iter().all(|c| c.name.starts_with("TBRW_") && !c.message.is_empty()));
    }

    #[test]
    fn lookups_agree_with_the_constants() {
        assert_eq!(ALL.len(), TABLE.len());
        assert_eq!(name(TBRW_STREAM_NOT_BOUND), Some("TBRW_STREAM_NOT_BOUND"));
        assert_eq!(message(TBRW_SUCCESS), Some("success"));
        assert_eq!(info(TBRW_NO_DATA_TO_WRITE).map(|c| c.value), Some(145));
        assert_eq!((name(1), message(1000)), (None, None));
    }
}
