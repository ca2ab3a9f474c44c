//! Strings (guide 9): a string id's text, and the UTF-8 / `wchar_t`
//! conversions into a caller's buffer or into `malloc`ed memory.

use std::ffi::CStr;
use std::mem::size_of;
use std::os::raw::{c_char, c_void};

use tb5::codes::*;

use crate::convert::{decode_id, put, text_of_handle, to_wide, wide_arg};
use crate::ctypes::*;
use crate::handle::{boundary, non_null, serial_of, with, Code, R};

/// A UTF-8 C string argument (NULL is refused, invalid UTF-8 is `TBRW_BAD_PARAMETER`).
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that lives, unchanged,
/// as long as the returned `&str`.
unsafe fn utf8_arg<'a>(p: *const c_char) -> R<&'a str> {
    non_null(p)?;
    CStr::from_ptr(p).to_str().map_err(|_| Code(TBRW_BAD_PARAMETER))
}

/// A wide C string argument as UTF-8 (NULL is refused).
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated `wchar_t` string.
unsafe fn wcs_arg(p: *const libc_wchar) -> R<String> {
    non_null(p)?;
    Ok(wide_arg(p)?.unwrap_or_default())
}

/// Copies `src` (terminator included) to the caller's `dst` of `*size`
/// elements, the convention of the sized conversions: `*size` becomes the
/// number needed; too few is `TBRW_BUFFER_TOO_SMALL`, and `dst` may then be NULL.
///
/// # Safety
/// `size` is NULL or valid for reads and writes; `dst` is NULL or valid for
/// writes of `*size` elements.
unsafe fn copy_out<T: Copy>(src: &[T], dst: *mut T, size: *mut u32) -> R {
    non_null(size)?;
    let needed = u32::try_from(src.len()).map_err(|_| Code(TBRW_BUFFER_OVERFLOW))?;
    let room = *size;
    *size = needed;
    if room < needed {
        return Err(Code(TBRW_BUFFER_TOO_SMALL));
    }
    non_null(dst)?;
    std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
    Ok(())
}

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
}

/// Copies `src` (terminator included) into memory from the C library's
/// `malloc`, so that the caller releases it with `free`.
fn malloc_copy<T: Copy>(src: &[T]) -> R<*mut T> {
    // SAFETY: malloc has no precondition; a non-NULL result is valid for
    // `src.len()` elements of T (malloc aligns for every fundamental type).
    unsafe {
        let p = malloc(std::mem::size_of_val(src)) as *mut T;
        if p.is_null() {
            return Err(Code(TBRW_NO_MEMORY));
        }
        std::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len());
        Ok(p)
    }
}

/// UTF-8 text followed by its NUL terminator.
fn with_nul(s: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len() + 1);
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    v
}

/// `TBRW_convert_uniqueid_to_string`: the text of a string id into
/// `buffer` (`size_of_buffer` bytes, terminating NUL included); the size
/// needed goes to `*size_buffer_needed`. `string_id` is only read (Intel's
/// header has it `const`). An id names the handle it came from and is
/// resolved there (see [`crate::convert`]); a bare string number, through `ptr`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_convert_uniqueid_to_string(
    ptr: *mut c_void,
    size_of_buffer: u32,
    string_id: *const TBRW_STRING_OR_ID,
    buffer: *mut TBRW_CHAR,
    size_buffer_needed: *mut u32,
) -> u32 {
    boundary(|| {
        non_null(string_id)?;
        let (serial, id) = decode_id((*string_id).soi_uniqueid);
        let own = with(ptr, |h| {
            if serial != 0 && serial != serial_of(ptr) {
                return Ok(None);
            }
            Ok(Some(to_wide(h.engine.string(id)?)))
        })?;
        let wide = match own {
            Some(w) => w,
            None => to_wide(&text_of_handle(serial, id)?),
        };
        let bytes = std::slice::from_raw_parts(wide.as_ptr() as *const u8, wide.len() * size_of::<TBRW_CHAR>());
        put(bytes, size_of_buffer, buffer as *mut c_void, size_buffer_needed)
    })
}

/// `TBRW_convert_utf8_to_wcs`: `*wcs_size` is in characters, NUL included.
#[no_mangle]
pub unsafe extern "C" fn TBRW_convert_utf8_to_wcs(
    utf8: *const c_char,
    wcs: *mut libc_wchar,
    wcs_size: *mut u32,
) -> u32 {
    boundary(|| {
        non_null(wcs_size)?;
        copy_out(&to_wide(utf8_arg(utf8)?), wcs, wcs_size)
    })
}

/// `TBRW_convert_wcs_to_utf8`: `*utf8_size` is in bytes, NUL included.
#[no_mangle]
pub unsafe extern "C" fn TBRW_convert_wcs_to_utf8(
    wcs: *const libc_wchar,
    utf8: *mut c_char,
    utf8_size: *mut u32,
) -> u32 {
    boundary(|| {
        non_null(utf8_size)?;
        let s = wcs_arg(wcs)?;
        copy_out(&with_nul(&s), utf8 as *mut u8, utf8_size)
    })
}

/// `TBRW_convert_utf8_to_wcs_malloced`: the result is allocated with
/// `malloc`; the caller frees it.
#[no_mangle]
pub unsafe extern "C" fn TBRW_convert_utf8_to_wcs_malloced(utf8: *const c_char, wcs: *mut *mut libc_wchar) -> u32 {
    boundary(|| {
        non_null(wcs)?;
        let wide = to_wide(utf8_arg(utf8)?);
        *wcs = malloc_copy(&wide)?;
        Ok(())
    })
}

/// `TBRW_convert_wcs_to_utf8_malloced`: the result is allocated with
/// `malloc`; the caller frees it.
#[no_mangle]
pub unsafe extern "C" fn TBRW_convert_wcs_to_utf8_malloced(wcs: *const libc_wchar, utf8: *mut *mut c_char) -> u32 {
    boundary(|| {
        non_null(utf8)?;
        let s = wcs_arg(wcs)?;
        *utf8 = malloc_copy(&with_nul(&s))? as *mut c_char;
        Ok(())
    })
}
