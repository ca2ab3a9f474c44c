//! Streams (guide 9): the stream and stream-section lifecycle, stream
//! info, events, the data descriptor and user-defined stream data. The data
//! records themselves are in [`super::data`].

use std::os::raw::c_void;

use tb5::codes::*;
use tb5::{SectionRef, StreamSection};

use super::{byte_size, path_arg, raw_slice, set_out};
use crate::callback::resolve;
use crate::convert::*;
use crate::ctypes::*;
use crate::handle::{after_callback, boundary, with, Code, R};

fn stream_section(section: u32) -> R<StreamSection> {
    StreamSection::from_u32(section).ok_or(Code(TBRW_UNKNOWN_SECTION_NUMBER))
}

/// `TBRW_get_number_data_streams`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_number_data_streams(ptr: *mut c_void, num_streams: *mut u32) -> u32 {
    boundary(|| {
        let n = with(ptr, |h| Ok(h.engine.number_of_streams()))?;
        set_out(num_streams, n)
    })
}

/// `TBRW_reading_stream`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_reading_stream(ptr: *mut c_void, stream: u32) -> u32 {
    boundary(|| with(ptr, |h| Ok(h.engine.reading_stream(stream)?)))
}

/// `TBRW_writing_stream`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_writing_stream(ptr: *mut c_void, stream: u32) -> u32 {
    boundary(|| with(ptr, |h| Ok(h.engine.writing_stream(stream)?)))
}

/// `TBRW_done_stream`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_done_stream(ptr: *mut c_void, stream: u32) -> u32 {
    boundary(|| with(ptr, |h| Ok(h.engine.done_stream(stream)?)))
}

/// `TBRW_reading_stream_section`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_reading_stream_section(ptr: *mut c_void, stream: u32, section: u32) -> u32 {
    boundary(|| with(ptr, |h| Ok(h.engine.reading_stream_section(stream, stream_section(section)?)?)))
}

/// `TBRW_writing_stream_section`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_writing_stream_section(ptr: *mut c_void, stream: u32, section: u32) -> u32 {
    boundary(|| with(ptr, |h| Ok(h.engine.writing_stream_section(stream, stream_section(section)?)?)))
}

/// `TBRW_done_stream_section`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_done_stream_section(ptr: *mut c_void, stream: u32, section: u32) -> u32 {
    boundary(|| with(ptr, |h| Ok(h.engine.done_stream_section(stream, stream_section(section)?)?)))
}

/// `TBRW_set_stream_info`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_set_stream_info(
    ptr: *mut c_void,
    stream: u32,
    stream_info: *mut TBRW_STREAM_INFO,
) -> u32 {
    boundary(|| {
        let v = stream_info_in(stream_info)?;
        with(ptr, |h| Ok(h.engine.set_stream_info(stream, &v)?))
    })
}

/// `TBRW_get_stream_info`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_stream_info(
    ptr: *mut c_void,
    stream: u32,
    size_of_buffer: u32,
    buf_ptr: *mut c_void,
    used: *mut u32,
) -> u32 {
    boundary(|| {
        let info = with(ptr, |h| {
            let f = h.engine.check_stream_readable(stream, StreamSection::StreamInfo)?;
            f.stream(stream)?.info()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))
        })?;
        put(&bytes_of(&stream_info_out(&info)), size_of_buffer, buf_ptr, used)
    })
}

/// `TBRW_add_event`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_add_event(ptr: *mut c_void, stream: u32, event: *mut TBRW_EVENT) -> u32 {
    boundary(|| {
        let v = event_in(event)?;
        with(ptr, |h| Ok(h.engine.add_event(stream, &v)?))
    })
}

/// `TBRW_add_events_from_file`: `numEvents` events, each a `TBRW_EVENT`
/// followed by its `event_num_details` `TBRW_EVENT_DETAIL`s (string and
/// pointer fields of the file are ignored).
#[no_mangle]
pub unsafe extern "C" fn TBRW_add_events_from_file(
    ptr: *mut c_void,
    stream: u32,
    filename: *mut TBRW_CHAR,
    num_events: u32,
) -> u32 {
    boundary(|| {
        let path = path_arg(filename)?;
        let bytes = std::fs::read(&path).map_err(|_| Code(TBRW_FILE_OPEN_FAILED))?;
        let mut at = 0;
        let mut events = Vec::new();
        for _ in 0..num_events {
            let (e, used) = event_from_file(&bytes[at..])?;
            at += used;
            events.push(e);
        }
        with(ptr, |h| events.iter().try_for_each(|e| h.engine.add_event(stream, e)).map_err(Code::from))
    })
}

/// `TBRW_enumerate_events`: one event per callback, its details right
/// after it in the same buffer (`event_detail_array` points at them).
#[no_mangle]
pub unsafe extern "C" fn TBRW_enumerate_events(
    ptr: *mut c_void,
    stream: u32,
    callback: *const c_void,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb: EnumCallback<TBRW_EVENT> = resolve(callback)?;
        // Events are few and each has its own buffer layout: they are read
        // once, not fetched in chunks like the tables.
        let events = with(ptr, |h| {
            let f = h.engine.check_stream_readable(stream, StreamSection::EventDescription)?;
            Ok(f.stream(stream)?.events()?.unwrap_or_default())
        })?;
        if start_index > events.len() as u64 {
            return Err(tb5::Error::InvalidReadStart {
                section: SectionRef::Stream(stream, StreamSection::EventDescription),
                start: start_index,
                len: events.len() as u64,
            }
            .into());
        }
        for e in &events[start_index as usize..] {
            let mut buf = event_out(e);
            let size = byte_size::<u64>(buf.len());
            if !after_callback(cb(buf.as_mut_ptr() as *mut TBRW_EVENT, size, 1, user_ptr))? {
                break;
            }
        }
        Ok(())
    })
}

/// `TBRW_add_data_descriptor_entry`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_add_data_descriptor_entry(
    ptr: *mut c_void,
    stream: u32,
    entry: *mut TBRW_SAMPREC_DESC_ENTRY,
) -> u32 {
    boundary(|| {
        let v = desc_in(entry)?;
        with(ptr, |h| Ok(h.engine.add_data_descriptor_entry(stream, &v)?))
    })
}

/// `TBRW_enumerate_data_descriptor_entries`: all entries in one callback
/// (offsets as the file stores them: effective offsets).
#[no_mangle]
pub unsafe extern "C" fn TBRW_enumerate_data_descriptor_entries(
    ptr: *mut c_void,
    stream: u32,
    callback: *const c_void,
    user_ptr: *mut c_void,
) -> u32 {
    boundary(|| {
        let cb: EnumCallback<TBRW_SAMPREC_DESC_ENTRY> = resolve(callback)?;
        let mut v: Vec<TBRW_SAMPREC_DESC_ENTRY> = with(ptr, |h| {
            let f = h.engine.check_stream_readable(stream, StreamSection::DataDescription)?;
            Ok(f.stream(stream)?.descriptor()?.unwrap_or_default().iter().map(desc_out).collect())
        })?;
        if !v.is_empty() {
            after_callback(cb(
                v.as_mut_ptr(),
                byte_size::<TBRW_SAMPREC_DESC_ENTRY>(v.len()),
                v.len() as u32,
                user_ptr,
            ))?;
        }
        Ok(())
    })
}

/// `TBRW_set_user_defined_stream`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_set_user_defined_stream(
    ptr: *mut c_void,
    stream: u32,
    size_of_data: u32,
    data_ptr: *mut c_void,
) -> u32 {
    boundary(|| {
        let data = raw_slice(data_ptr, size_of_data)?;
        with(ptr, |h| Ok(h.engine.set_user_defined_stream(stream, data)?))
    })
}

/// `TBRW_get_user_defined_stream`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_user_defined_stream(
    ptr: *mut c_void,
    stream: u32,
    size_of_buffer: u32,
    buf_ptr: *mut c_void,
    used: *mut u32,
) -> u32 {
    boundary(|| {
        with(ptr, |h| {
            let f = h.engine.check_stream_readable(stream, StreamSection::UserDefinedStream)?;
            let bytes = f.stream(stream)?.user_defined()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
            put(bytes, size_of_buffer, buf_ptr, used)
        })
    })
}
