//! Data records (guide 9): adding them and enumerating them in chunks of
//! about [`DATA_BYTES_PER_CALLBACK`].

use std::os::raw::c_void;

use tb5::codes::*;
use tb5::{SectionRef, StreamSection};

use super::{enumerate, path_arg, raw_slice, Chunk, Extent, Records, DATA_BYTES_PER_CALLBACK};
use crate::callback::resolve;
use crate::ctypes::*;
use crate::handle::{boundary, non_null, with, with_no_strings, Code, R};

/// `TBRW_add_data`: a record, several, or a piece of one ending at a
/// descriptor field boundary (`TBRW_UNSUPPORTED_DATA_SIZE` otherwise).
#[no_mangle]
pub unsafe extern "C" fn TBRW_add_data(
    ptr: *mut c_void,
    stream: u32,
    size_of_data_entry: u32,
    data_entry: *mut c_void,
) -> u32 {
    boundary(|| {
        non_null(data_entry)?;
        let data = raw_slice(data_entry, size_of_data_entry)?;
        with_no_strings(ptr, |h| Ok(h.engine.add_data(stream, data)?))
    })
}

/// `TBRW_add_data_from_file`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_add_data_from_file(ptr: *mut c_void, stream: u32, filename: *mut TBRW_CHAR) -> u32 {
    boundary(|| {
        let path = path_arg(filename)?;
        with(ptr, |h| Ok(h.engine.add_data_from_file(stream, &path)?))
    })
}

/// The records of a stream's data section as an enumeration walks them
/// (a stream without data has none).
///
/// The section is checked against the data descriptor here, once, so that
/// no callback is handed a record count its bytes do not hold; the kernel
/// is told the records are about to be read in order.
pub(super) fn data_extent(file: &tb5::Tb5File, stream: u32, start: u64) -> R<Extent> {
    let d = file.stream(stream)?.checked_data()?;
    if let Some(d) = &d {
        d.advise_sequential(start);
    }
    let (len, record_size) = d.map_or((0, 1), |d| (d.len(), d.record_size()));
    Ok(Extent {
        len,
        section: SectionRef::Stream(stream, StreamSection::Data),
        per_chunk: (DATA_BYTES_PER_CALLBACK / record_size.max(1)).max(1),
    })
}

/// Up to `n` records from `from`, sharing the file's mapping (no copy) so
/// that the callback gets them without the handle's lock, even if it
/// closes the handle.
pub(super) fn records_chunk(file: &tb5::Tb5File, stream: u32, from: u64, n: usize) -> R<Records> {
    let d = file.stream(stream)?.data()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
    Ok(Records { bytes: d.shared_chunk(from, n)?, record_size: d.record_size() })
}

/// `TBRW_enumerate_data` (the data section must be open for reading).
#[no_mangle]
pub unsafe extern "C" fn TBRW_enumerate_data(
    ptr: *mut c_void,
    stream: u32,
    callback: *const c_void,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb: EnumCallback<c_void> = resolve(callback)?;
        enumerate(
            ptr,
            start_index,
            |h| data_extent(h.engine.check_stream_readable(stream, StreamSection::Data)?, stream, start_index),
            |h, from, n| records_chunk(h.engine.check_stream_readable(stream, StreamSection::Data)?, stream, from, n),
            // The records are the file's mapped pages, read-only: the guide's
            // callback reads them (the prototype's `void *` is Intel's).
            |r| cb(r.bytes.as_ptr() as *mut c_void, r.bytes.len() as u32, r.count() as u32, user_ptr),
        )
    })
}

/// `TBRW_get_size_of_each_data_entry` (Intel's, beyond the guide): the
/// bytes of one record of a committed stream, as its data descriptor
/// defines them (`TBRW_STREAM_NOT_EXIST` for a stream the file does not
/// have, `TBRW_SECTION_NOT_EXIST` for one without a descriptor). Like
/// Intel's, it needs no section open: a program learns the record size
/// before it enumerates, whatever the file's layout.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_size_of_each_data_entry(ptr: *mut c_void, stream: u32, size: *mut u32) -> u32 {
    boundary(|| {
        non_null(size)?;
        let n = with(ptr, |h| {
            let file = h.engine.existing().ok_or(Code(TBRW_STREAM_NOT_EXIST))?;
            let layout = file.stream(stream)?.layout()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
            Ok(layout.record_size())
        })?;
        *size = n;
        Ok(())
    })
}
