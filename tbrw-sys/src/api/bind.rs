//! Binding (guide 9): bind entry sizes, `is_bound`, `dobind`, `unbind`,
//! and the enumerations that hand out records, modules and threads with
//! their bind structures.
//!
//! The functions without a stream argument use the handle's bind stream:
//! the last stream named to a bind function of that handle.

use std::cell::RefCell;
use std::os::raw::c_void;

use tb5::{GlobalSection, SectionRef};

use super::data::{data_extent, records_chunk};
use super::module::modules_chunk;
use super::{byte_size, enumerate, file_of, Chunk, Extent};
use crate::callback::resolve;
use crate::convert::*;
use crate::ctypes::*;
use crate::handle::{boundary, non_null, with, R};

/// The body of the `get_size_of_*_bind_entry` functions: `stream` becomes
/// the bind stream when it exists, and `*size` is `value`.
///
/// # Safety
/// `size` is NULL or valid for a write.
unsafe fn bind_entry_size(ptr: *mut c_void, stream: u32, size: *mut u32, value: u32) -> R {
    non_null(size)?;
    with(ptr, |h| {
        h.engine.is_bound(stream)?;
        h.bind_stream = stream;
        Ok(())
    })?;
    *size = value;
    Ok(())
}

/// `TBRW_get_size_of_data_bind_entry`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_size_of_data_bind_entry(ptr: *mut c_void, data_stream: u32, size: *mut u32) -> u32 {
    boundary(|| bind_entry_size(ptr, data_stream, size, tb5::bind::DATA_BIND_SIZE))
}

/// `TBRW_get_size_of_module_bind_entry`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_size_of_module_bind_entry(ptr: *mut c_void, data_stream: u32, size: *mut u32) -> u32 {
    boundary(|| bind_entry_size(ptr, data_stream, size, tb5::bind::MODULE_BIND_SIZE))
}

/// `TBRW_get_size_of_tid_bind_entry`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_size_of_tid_bind_entry(ptr: *mut c_void, data_stream: u32, size: *mut u32) -> u32 {
    boundary(|| bind_entry_size(ptr, data_stream, size, tb5::bind::TID_BIND_SIZE))
}

/// `TBRW_is_bound`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_is_bound(ptr: *mut c_void, data_stream: u32, is_bound: *mut u32) -> u32 {
    boundary(|| {
        non_null(is_bound)?;
        let b = with(ptr, |h| {
            let b = h.engine.is_bound(data_stream)?;
            h.bind_stream = data_stream;
            Ok(b)
        })?;
        *is_bound = u32::from(b);
        Ok(())
    })
}

/// `TBRW_dobind`: opened for writing, the bind is stored on close;
/// read-only, it is kept in memory for this handle.
#[no_mangle]
pub unsafe extern "C" fn TBRW_dobind(ptr: *mut c_void, data_stream: u32) -> u32 {
    boundary(|| {
        with(ptr, |h| {
            h.engine.dobind(data_stream)?;
            h.bind_stream = data_stream;
            Ok(())
        })
    })
}

/// `TBRW_unbind`: removes the stream's bind (not bound: `TBRW_STREAM_NOT_BOUND`).
#[no_mangle]
pub unsafe extern "C" fn TBRW_unbind(ptr: *mut c_void, data_stream: u32) -> u32 {
    boundary(|| with(ptr, |h| Ok(h.engine.unbind(data_stream)?)))
}

// In the bind enumerations the fetch step fills the bind structures of the
// chunk it fetched and the callback step hands them out: a `RefCell` passes
// them between the two closures.

/// `TBRW_bind_enumerate_data`: records and their `DATA_BIND_STRUCT`s from `start_index`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_bind_enumerate_data(
    ptr: *mut c_void,
    data_stream: u32,
    callback: *const c_void,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb: BindCallback<c_void, DATA_BIND_STRUCT> = resolve(callback)?;
        let binds = RefCell::new(Vec::new());
        enumerate(
            ptr,
            start_index,
            |h| {
                h.engine.bound(data_stream)?;
                h.bind_stream = data_stream;
                data_extent(file_of(h)?, data_stream, start_index)
            },
            |h, from, n| {
                let records = records_chunk(file_of(h)?, data_stream, from, n)?;
                let mut b = binds.borrow_mut();
                b.clear();
                h.engine.bound(data_stream)?.data_binds(from, records.count(), &mut b);
                Ok(records)
            },
            |r| {
                let b = binds.borrow();
                cb(
                    r.bytes.as_ptr() as *const c_void,
                    r.bytes.len() as u32,
                    r.count() as u64,
                    b.as_ptr(),
                    byte_size::<DATA_BIND_STRUCT>(b.len()),
                    user_ptr,
                )
            },
        )
    })
}

/// `TBRW_bind_enumerate_modules`: modules with their `MODULE_BIND_STRUCT`s,
/// from the bind of the handle's bind stream (the last stream named to a
/// bind function; 0 at first).
#[no_mangle]
pub unsafe extern "C" fn TBRW_bind_enumerate_modules(
    ptr: *mut c_void,
    callback: *const c_void,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb: BindCallback<TBRW_MODULE, MODULE_BIND_STRUCT> = resolve(callback)?;
        let binds: RefCell<Vec<MODULE_BIND_STRUCT>> = RefCell::default();
        enumerate(
            ptr,
            start_index,
            |h| {
                let n = h.bind_stream;
                Ok(Extent::table(h.engine.bound(n)?.module_bind_count(), GlobalSection::Module))
            },
            |h, from, k| {
                let n = h.bind_stream;
                let mods = modules_chunk(file_of(h)?, from, k)?;
                let v = h.engine.bound(n)?;
                *binds.borrow_mut() =
                    (from..from + mods.len() as u64).map(|i| v.module_bind(i).unwrap_or_default()).collect();
                Ok(mods)
            },
            |m| {
                let b = binds.borrow();
                cb(
                    m.as_ptr(),
                    byte_size::<TBRW_MODULE>(m.len()),
                    m.len() as u64,
                    b.as_ptr(),
                    byte_size::<MODULE_BIND_STRUCT>(b.len()),
                    user_ptr,
                )
            },
        )
    })
}

/// `TBRW_bind_enumerate_threads`: the bind's threads with their `TID_BIND_STRUCT`s.
#[no_mangle]
pub unsafe extern "C" fn TBRW_bind_enumerate_threads(
    ptr: *mut c_void,
    callback: *const c_void,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb: BindCallback<TBRW_TID, TID_BIND_STRUCT> = resolve(callback)?;
        let binds: RefCell<Vec<TID_BIND_STRUCT>> = RefCell::default();
        enumerate(
            ptr,
            start_index,
            |h| {
                let n = h.bind_stream;
                Ok(Extent::table(h.engine.bound(n)?.thread_count(), SectionRef::WholeStream(n)))
            },
            |h, from, k| {
                let n = h.bind_stream;
                let v = h.engine.bound(n)?;
                let end = (from + k as u64).min(v.thread_count());
                *binds.borrow_mut() = (from..end).map(|i| v.tid_bind(i).unwrap_or_default()).collect();
                Ok((from..end).filter_map(|i| v.thread(i)).map(|t| tid_out(&t)).collect::<Vec<_>>())
            },
            |t| {
                let b = binds.borrow();
                cb(
                    t.as_ptr(),
                    byte_size::<TBRW_TID>(t.len()),
                    t.len() as u64,
                    b.as_ptr(),
                    byte_size::<TID_BIND_STRUCT>(b.len()),
                    user_ptr,
                )
            },
        )
    })
}

/// `TBRW_bind_enumerate_tids`: the header's name for `TBRW_bind_enumerate_threads`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_bind_enumerate_tids(
    ptr: *mut c_void,
    callback: *const c_void,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    TBRW_bind_enumerate_threads(ptr, callback, user_ptr, start_index)
}
