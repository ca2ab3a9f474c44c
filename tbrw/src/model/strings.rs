//! Strings: ids as stored in records and the UTF-8 / `wchar_t`
//! conversions the C layer needs (the writer's interner is in `write`).
//!
//! Writers hand over text (`Option<String>`, `None` being the C `NULL`);
//! every distinct text is stored once, as UTF-8, in a string block of the
//! file. Readers see [`StringId`]s and resolve them through
//! [`Tb5File::string`](crate::Tb5File::string). Id 0 is "no string".

use widestring::{WideCStr, WideCString, WideStr};

use super::error::{Error, Result};

/// Text as the writing side gives it: `None` is the C `NULL` string pointer.
pub type Text = Option<String>;

/// The unique id of a string in a TB5 file (`soi_uniqueid`). 0 means "no string".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StringId(pub u64);

impl StringId {
    /// The id that names no string (a `NULL` pointer on the writing side).
    pub const NONE: StringId = StringId(0);

    /// Whether this is [`StringId::NONE`].
    pub fn is_none(self) -> bool {
        self.0 == 0
    }
}

/// Converts the text of read-side values (ids) to owned text, or any other
/// string representation to another. Implemented by every model type that
/// holds strings; `S` is the representation it holds now.
pub trait MapStrings<S>: Sized {
    /// The same value with strings of type `T`.
    type Output<T>;
    /// Maps every string field through `f`, in field order.
    fn map_strings<T, E>(
        self,
        f: &mut impl FnMut(S) -> std::result::Result<T, E>,
    ) -> std::result::Result<Self::Output<T>, E>;
}

/// Converts a C wide string (`wchar_t`, UTF-32 on Linux) to UTF-8.
///
/// Fails with [`Error::BadParameter`] when it holds a value that is not a
/// Unicode scalar value (a surrogate or a number above U+10FFFF).
pub fn wide_to_string(wide: &WideCStr) -> Result<String> {
    wide_slice_to_string(wide.as_ustr())
}

/// Like [`wide_to_string`] for a string without terminator.
pub fn wide_slice_to_string(wide: &WideStr) -> Result<String> {
    wide.to_string().map_err(|e| Error::bad(format!("wide string is not valid Unicode: {e}")))
}

/// Converts UTF-8 to a NUL-terminated C wide string. Fails when the text
/// contains a NUL character, which a C string cannot hold.
pub fn string_to_wide(s: &str) -> Result<WideCString> {
    WideCString::from_str(s).map_err(|_| Error::bad("string contains a NUL character"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_round_trip_any_unicode() {
        for s in ["", "ascii", "Grüße", "日本語", "emoji 🦀 and 𝄞"] {
            let w = string_to_wide(s).unwrap();
            assert_eq!(w.len(), s.chars().count());
            assert_eq!(wide_to_string(&w).unwrap(), s);
        }
        assert!(string_to_wide("a\0b").is_err());
    }

    #[test]
    fn invalid_wide_is_an_error() {
        let bad = widestring::WideCString::from_vec(vec![0xD800u32 as widestring::WideChar, 0x41]).unwrap();
        assert!(wide_to_string(&bad).is_err());
    }
}
