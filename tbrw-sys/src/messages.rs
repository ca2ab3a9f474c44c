//! The text `TBRW_error_string` returns for each code: static wide strings
//! built once from the code table of the `tbrw` crate (`codes::TABLE`), so
//! the numbers, names and messages come from one list.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::convert::to_wide;
use crate::ctypes::TBRW_CHAR;

static MESSAGES: OnceLock<HashMap<u32, Vec<TBRW_CHAR>>> = OnceLock::new();

/// The message of a code as a NUL-terminated wide string that lives as long as the program.
pub(crate) fn message(code: u32) -> Option<*const TBRW_CHAR> {
    let map = MESSAGES.get_or_init(|| tb5::codes::TABLE.iter().map(|c| (c.value, to_wide(c.message))).collect());
    map.get(&code).map(|w| w.as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_table_message_as_a_wide_string() {
        for c in tb5::codes::TABLE {
            let p = message(c.value).unwrap_or_else(|| panic!("{}", c.name));
            let mut text = String::new();
            for i in 0.. {
                // SAFETY: `message` returns a NUL-terminated string that lives as long as the program.
                let ch = unsafe { *p.add(i) };
                if ch == 0 {
                    break;
                }
                text.push(char::from_u32(ch as u32).expect("a Unicode scalar value"));
            }
            assert_eq!(text, c.message, "{}", c.name);
        }
        assert!(message(1).is_none());
    }
}
