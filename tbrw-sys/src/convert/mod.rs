//! Conversions between the C structures and the `tbrw` model, and the
//! `get_` buffer protocol (guide 5.8).
//!
//! Writing: a caller's structure is read field by field; its `*_size` field
//! must be at least the size of the structure this library knows (a newer,
//! larger structure is accepted), strings are read from `soi_ptr` (NULL:
//! no string). Reading: strings become `soi_uniqueid`s.
//!
//! String ids (guide 8.1 lets bit 63 of `TBRW_STRING_OR_ID` tell an id from
//! a pointer): an id this library hands out has bit 63 set, bit 62 set, the
//! serial of the handle it came from in bits 39..62 and the string's number
//! in the file in bits 0..39 (0 stays 0, "no string"). A structure read from one
//! handle can so be given to a `set_`/`add_` function of another: its ids
//! are resolved through the handle they came from while that handle is
//! open, and refused with `TBRW_BAD_PARAMETER` once it is closed. An id is
//! never dereferenced; neither is a value below [`NEVER_A_POINTER`].
//!
//! The structures a caller gives (`set_`/`add_`) are read in `write`; the
//! ones handed back (`get_`/`enumerate_`) are made in `read`, with the
//! system's image; this module holds the string ids and the buffer
//! protocol they all use.

mod read;
mod write;

pub(crate) use read::*;
pub(crate) use write::*;

use std::mem::size_of;
use std::os::raw::c_void;

use tb5::codes::*;
use tb5::*;
use widestring::{WideCStr, WideChar};

use crate::ctypes::*;
use crate::handle::{locked_serial, non_null, token_of, with, Code, R};

pub(crate) fn check_size(size: u32, expected: usize) -> R {
    if (size as usize) < expected {
        return Err(Code(TBRW_BAD_PARAMETER));
    }
    Ok(())
}

/// Reads a wide C string; NULL is "no string".
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated `wchar_t` string.
pub(crate) unsafe fn wide_arg(p: *const TBRW_CHAR) -> R<Option<String>> {
    if p.is_null() {
        return Ok(None);
    }
    // `TBRW_CHAR` is `wchar_t` (32 bits on Linux), the unit of `WideCStr`.
    let s = WideCStr::from_ptr_str(p as *const WideChar);
    Ok(Some(wide_to_string(s)?))
}

/// UTF-8 text as a NUL-terminated `wchar_t` string, the form every wide
/// string the library hands out takes.
///
/// Not `tb5::string_to_wide`: that refuses text holding a NUL,
/// and a string id's text read from a file may hold one (a file written
/// through the Rust API); C then sees the text up to it, as it would any
/// `wchar_t` string.
pub(crate) fn to_wide(s: &str) -> Vec<TBRW_CHAR> {
    s.chars().map(|c| c as u32 as TBRW_CHAR).chain(std::iter::once(0)).collect()
}

/// Bit 63: the value is a string id, not a pointer.
const ID_FLAG: u64 = 1 << 63;
/// Bit 62: the id names its handle (serial in bits 39..62, number below).
const HANDLE_FLAG: u64 = 1 << 62;
/// Where the handle's serial starts in an id.
const SERIAL_SHIFT: u32 = 39;
/// The string number's bits in an id that names its handle.
const NUMBER_MASK: u64 = (1 << SERIAL_SHIFT) - 1;
/// The largest serial an id can carry.
const MAX_SERIAL: u64 = (1 << (62 - SERIAL_SHIFT)) - 1;

/// Linux maps nothing below `vm.mmap_min_addr` (64 KiB by default), so a
/// smaller non-zero value is a caller's bare string number, never a string.
pub(crate) const NEVER_A_POINTER: u64 = 0x1_0000;

/// A string id as this library hands it out: see the module doc. An id
/// made outside any handle, or whose number or serial does not fit, names
/// no handle (bit 62 clear, the number in bits 0..62): it can only be
/// resolved by `TBRW_convert_uniqueid_to_string` on the handle it came from.
pub(crate) fn encode_id(serial: u64, id: StringId) -> u64 {
    if id.0 == 0 {
        0
    } else if serial != 0 && serial <= MAX_SERIAL && id.0 <= NUMBER_MASK {
        ID_FLAG | HANDLE_FLAG | serial << SERIAL_SHIFT | id.0
    } else {
        ID_FLAG | (id.0 & !(ID_FLAG | HANDLE_FLAG))
    }
}

/// A `soi_uniqueid` split into the serial of the handle it names (0: none)
/// and the string number. A value without bit 63 is a bare string number.
pub(crate) fn decode_id(raw: u64) -> (u64, StringId) {
    if raw & ID_FLAG == 0 {
        (0, StringId(raw))
    } else if raw & HANDLE_FLAG == 0 {
        (0, StringId(raw & !ID_FLAG))
    } else {
        ((raw & !(ID_FLAG | HANDLE_FLAG)) >> SERIAL_SHIFT, StringId(raw & NUMBER_MASK))
    }
}

/// The text of string `id` of handle `serial` (committed, or new in its
/// writing session; `TBRW_BAD_PARAMETER` once that handle is closed).
pub(crate) fn text_of_handle(serial: u64, id: StringId) -> R<String> {
    let r = with(token_of(serial), |h| Ok(h.engine.string(id)?.to_owned()));
    r.map_err(|c| if c.0 == TBRW_UNEXPECTED_NULL_PTR { Code(TBRW_BAD_PARAMETER) } else { c })
}

/// A string field of a structure given to a `set_`/`add_` function: NULL,
/// a `wchar_t` pointer, or an id read from an open handle (see the module doc).
///
/// # Safety
/// A value with bit 63 clear and not below [`NEVER_A_POINTER`] is a valid
/// string pointer: see [`wide_arg`]. Must not be called with a handle
/// locked (an id's handle is locked to resolve it).
pub(crate) unsafe fn text(s: TBRW_STRING_OR_ID) -> R<Text> {
    let raw = s.soi_uniqueid;
    if raw & ID_FLAG != 0 {
        return match decode_id(raw) {
            (0, _) => Err(Code(TBRW_BAD_PARAMETER)),
            (serial, id) => text_of_handle(serial, id).map(Some),
        };
    }
    if raw != 0 && raw < NEVER_A_POINTER {
        return Err(Code(TBRW_BAD_PARAMETER));
    }
    wide_arg(s.soi_ptr)
}

/// An id handed out while the handle it belongs to is locked (every
/// `get_`/`enumerate_` converts inside `handle::with`).
fn soi(id: StringId) -> TBRW_STRING_OR_ID {
    TBRW_STRING_OR_ID::id(encode_id(locked_serial(), id))
}

// ------------------------------------------------------------------ buffer protocol

/// Hands `bytes` to the caller with the protocol of guide 5.8: the size
/// needed goes to `*used` (when given); a buffer smaller than that is
/// `TBRW_BUFFER_TOO_SMALL`.
///
/// # Safety
/// `buf` is NULL or valid for `size_of_buffer` bytes; `used` is NULL or valid.
pub(crate) unsafe fn put(bytes: &[u8], size_of_buffer: u32, buf: *mut c_void, used: *mut u32) -> R {
    let needed = u32::try_from(bytes.len()).map_err(|_| Code(TBRW_BUFFER_OVERFLOW))?;
    if !used.is_null() {
        *used = needed;
    }
    if size_of_buffer < needed {
        return Err(Code(TBRW_BUFFER_TOO_SMALL));
    }
    if needed > 0 {
        non_null(buf)?;
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, bytes.len());
    }
    Ok(())
}

/// The bytes of a plain C struct.
pub(crate) fn bytes_of<T: Copy>(v: &T) -> Vec<u8> {
    let mut out = vec![0u8; size_of::<T>()];
    // SAFETY: T is a plain-data #[repr(C)] struct; copying its bytes is what C would do.
    unsafe { std::ptr::copy_nonoverlapping(v as *const T as *const u8, out.as_mut_ptr(), size_of::<T>()) };
    out
}

/// The whole hardware section as one buffer, laid out for the address
/// `at`: `TBRW_SYSTEM`, then the nodes, then each node's cpus, each cpu's
/// architectures and each architecture's cpuids, every pointer pointing
/// inside the buffer.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_handle_and_are_never_pointers() {
        assert_eq!(encode_id(7, StringId(0)), 0);
        let id = encode_id(7, StringId(12));
        assert_eq!(id >> 63, 1);
        assert_eq!(decode_id(id), (7, StringId(12)));
        // A number or serial that does not fit: serial 0, the number kept whole.
        let big = encode_id(MAX_SERIAL + 1, StringId(5));
        assert_eq!(decode_id(big), (0, StringId(5)));
        assert_eq!(decode_id(encode_id(3, StringId(NUMBER_MASK + 1))), (0, StringId(NUMBER_MASK + 1)));
        assert_eq!(decode_id(encode_id(MAX_SERIAL, StringId(NUMBER_MASK))), (MAX_SERIAL, StringId(NUMBER_MASK)));
        assert_eq!(decode_id(12), (0, StringId(12)));
        // SAFETY: none of these is a pointer; `text` must not dereference them.
        unsafe {
            assert_eq!(text(TBRW_STRING_OR_ID::id(0)), Ok(None));
            assert_eq!(text(TBRW_STRING_OR_ID::id(3)), Err(Code(TBRW_BAD_PARAMETER)));
            assert_eq!(text(TBRW_STRING_OR_ID::id(big)), Err(Code(TBRW_BAD_PARAMETER)));
            assert_eq!(text(TBRW_STRING_OR_ID::id(id)), Err(Code(TBRW_BAD_PARAMETER)));
        }
    }
}
