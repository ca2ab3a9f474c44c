//! Processes and threads (guide 9): adding them, enumerating the
//! process/thread section, and `get_one_pid/tid`, which read the bind's
//! generated tables when the handle's bind stream is bound.

use std::os::raw::c_void;

use tb5::codes::*;
use tb5::{BindView, GlobalSection, ProcessTable, SectionRef};

use super::{byte_size, enumerate, Extent};
use crate::callback::resolve;
use crate::convert::*;
use crate::ctypes::*;
use crate::handle::{boundary, non_null, with, Code, Handle, R};

/// `TBRW_add_process`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_add_process(ptr: *mut c_void, process: *mut TBRW_PID) -> u32 {
    boundary(|| {
        let v = pid_in(process)?;
        with(ptr, |h| Ok(h.engine.add_process(&v)?))
    })
}

/// `TBRW_add_thread`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_add_thread(ptr: *mut c_void, thread: *mut TBRW_TID) -> u32 {
    boundary(|| {
        let v = tid_in(thread)?;
        with(ptr, |h| Ok(h.engine.add_thread(&v)?))
    })
}

/// The process/thread section of a handle, which must be open for reading.
fn readable_table(h: &Handle) -> R<Option<ProcessTable<'_>>> {
    Ok(h.engine.process_table()?)
}

/// `TBRW_enumerate_processes` (the process/thread section must be open for reading).
#[no_mangle]
pub unsafe extern "C" fn TBRW_enumerate_processes(
    ptr: *mut c_void,
    callback: *const c_void,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb: EnumCallback<TBRW_PID> = resolve(callback)?;
        enumerate(
            ptr,
            start_index,
            |h| Ok(Extent::table(readable_table(h)?.map_or(0, |t| t.pid_count()), GlobalSection::ProcessThread)),
            |h, from, n| {
                let t = readable_table(h)?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
                Ok((from..(from + n as u64).min(t.pid_count()))
                    .filter_map(|i| t.pid(i))
                    .map(|p| pid_out(&p))
                    .collect::<Vec<_>>())
            },
            |v| cb(v.as_mut_ptr(), byte_size::<TBRW_PID>(v.len()), v.len() as u32, user_ptr),
        )
    })
}

/// `TBRW_enumerate_threads` (the process/thread section must be open for reading).
#[no_mangle]
pub unsafe extern "C" fn TBRW_enumerate_threads(
    ptr: *mut c_void,
    callback: *const c_void,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb: EnumCallback<TBRW_TID> = resolve(callback)?;
        enumerate(
            ptr,
            start_index,
            |h| Ok(Extent::table(readable_table(h)?.map_or(0, |t| t.tid_count()), GlobalSection::ProcessThread)),
            |h, from, n| {
                let t = readable_table(h)?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
                Ok((from..(from + n as u64).min(t.tid_count()))
                    .filter_map(|i| t.tid(i))
                    .map(|x| tid_out(&x))
                    .collect::<Vec<_>>())
            },
            |v| cb(v.as_mut_ptr(), byte_size::<TBRW_TID>(v.len()), v.len() as u32, user_ptr),
        )
    })
}

/// Whether `get_one_pid/tid` read the bind's tables: the handle's bind
/// stream exists and is bound. Otherwise they read the process/thread section.
fn reads_bind(h: &mut Handle) -> R<bool> {
    let n = h.bind_stream;
    Ok(h.engine.existing().is_some_and(|f| n < f.stream_count()) && h.engine.is_bound(n)?)
}

/// An entry of one of the two tables `get_one_pid/tid` read, and that table's length.
type Lookup<T> = (Option<T>, u64);

/// The body of `get_one_pid/tid`: entry `index` of the bind's table
/// (`in_bind`) or of the section's (`in_section`), converted by `keep` into
/// the handle's slot for it, whose address goes to `*out`.
///
/// # Safety
/// `out` is NULL or valid for a write of a pointer.
unsafe fn get_one<T, C>(
    ptr: *mut c_void,
    index: u64,
    out: *mut *const C,
    in_bind: impl FnOnce(&BindView<'_>, u64) -> Lookup<T>,
    in_section: impl FnOnce(&ProcessTable<'_>, u64) -> Lookup<T>,
    keep: impl FnOnce(&mut Handle, T) -> *const C,
) -> R {
    non_null(out)?;
    let p = with(ptr, |h| {
        let (entry, section, len) = if reads_bind(h)? {
            let n = h.bind_stream;
            let (entry, len) = in_bind(&h.engine.bound(n)?, index);
            (entry, SectionRef::WholeStream(n), len)
        } else {
            let file = h.engine.readable_file(GlobalSection::ProcessThread)?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
            let t = file.processes()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
            let (entry, len) = in_section(&t, index);
            (entry, GlobalSection::ProcessThread.into(), len)
        };
        let entry = entry.ok_or(tb5::Error::EntryNotFound { section, index, len })?;
        Ok(keep(h, entry))
    })?;
    *out = p;
    Ok(())
}

/// `TBRW_get_one_pid`: from the bind of the handle's bind stream when it is
/// bound (the indices `DATA_BIND_STRUCT` holds), else from the
/// process/thread section (with read permission, also one this session
/// finished). Valid until the next call on this handle.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_one_pid(ptr: *mut c_void, pid_index: u64, p_pid: *mut *const TBRW_PID) -> u32 {
    boundary(|| {
        get_one(
            ptr,
            pid_index,
            p_pid,
            |v, i| (v.process(i), v.process_count()),
            |t, i| (t.pid(i), t.pid_count()),
            |h, pid| {
                *h.one_pid = pid_out(&pid);
                &*h.one_pid
            },
        )
    })
}

/// `TBRW_get_one_tid`: like `TBRW_get_one_pid`, for threads.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_one_tid(ptr: *mut c_void, tid_index: u64, p_tid: *mut *const TBRW_TID) -> u32 {
    boundary(|| {
        get_one(
            ptr,
            tid_index,
            p_tid,
            |v, i| (v.thread(i), v.thread_count()),
            |t, i| (t.tid(i), t.tid_count()),
            |h, tid| {
                *h.one_tid = tid_out(&tid);
                &*h.one_tid
            },
        )
    })
}
