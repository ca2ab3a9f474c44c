//! The exported functions of `tbrw.h`. Each one checks its pointers, runs
//! inside [`boundary`] (no panic crosses into C) and forwards to the
//! `tbrw` engine; what the function does is documented in `tbrw.h` and the
//! guide's chapter 9.
#![allow(clippy::missing_safety_doc)] // every function's contract is the C header's

use std::cell::RefCell;
use std::mem::size_of;
use std::os::raw::{c_char, c_void};
use std::path::PathBuf;

use tb5::codes::*;
use tb5::{GlobalSection, SectionRef, StreamSection, StringId};

use crate::convert::*;
use crate::ctypes::*;
use crate::handle::{after_callback, boundary, non_null, register, unregister, with, Code, Handle, R};

fn global(section: u32) -> R<GlobalSection> {
    GlobalSection::from_u32(section).ok_or(Code(TBRW_UNKNOWN_SECTION_NUMBER))
}

fn stream_section(section: u32) -> R<StreamSection> {
    StreamSection::from_u32(section).ok_or(Code(TBRW_UNKNOWN_SECTION_NUMBER))
}

unsafe fn set_out<T>(p: *mut T, v: T) -> R {
    non_null(p)?;
    p.write(v);
    Ok(())
}

unsafe fn path_arg(p: *const TBRW_CHAR) -> R<PathBuf> {
    non_null(p)?;
    wide_arg(p)?.map(PathBuf::from).ok_or(Code(TBRW_UNEXPECTED_NULL_PTR))
}

// ====================================================================== high level

/// `TBRW_get_version`: the API revision implemented (2.3).
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_version(major: *mut u32, minor: *mut u32) -> u32 {
    boundary(|| {
        non_null(major)?;
        non_null(minor)?;
        *major = tb5::API_VERSION.0;
        *minor = tb5::API_VERSION.1;
        Ok(())
    })
}

/// `TBRW_open`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_open(ptr: *mut *mut c_void, filename: *const TBRW_CHAR, access_mode: u32) -> u32 {
    boundary(|| {
        non_null(ptr)?;
        *ptr = std::ptr::null_mut();
        let path = path_arg(filename)?;
        let engine = tb5::Engine::open(path, access_mode)?;
        *ptr = register(Handle::new(engine));
        Ok(())
    })
}

/// `TBRW_close`: commits what was written. With a section or stream still
/// open the handle stays open (finish or abort it); otherwise it is gone.
#[no_mangle]
pub unsafe extern "C" fn TBRW_close(ptr: *mut c_void) -> u32 {
    boundary(|| {
        let r = with(ptr, |h| h.engine.close().map_err(Code::from));
        let finished = with(ptr, |h| Ok(h.engine.is_finished())).unwrap_or(true);
        if finished {
            let _ = unregister(ptr);
        }
        r
    })
}

/// `TBRW_abort_cleanup_and_close`: discards everything written, removes
/// temporary files, closes the handle.
#[no_mangle]
pub unsafe extern "C" fn TBRW_abort_cleanup_and_close(ptr: *mut c_void) -> u32 {
    boundary(|| {
        with(ptr, |h| {
            h.engine.abort();
            Ok(())
        })?;
        unregister(ptr).map(drop)
    })
}

/// `TBRW_error_string`: a static wide string for every code of `tbrw.h`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_error_string(error_code: u32, error_string: *mut *const TBRW_CHAR) -> u32 {
    boundary(|| {
        non_null(error_string)?;
        *error_string = crate::messages::message(error_code).ok_or(Code(TBRW_INVALID_ERROR_CODE))?;
        Ok(())
    })
}

/// `TBRW_verify`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_verify(ptr: *mut c_void) -> u32 {
    boundary(|| with(ptr, |h| h.engine.verify().map_err(Code::from)))
}

/// `TBRW_convert_uniqueid_to_string`: the text of a string id into
/// `buffer` (`size_of_buffer` bytes, terminating NUL included); the size
/// needed goes to `*size_buffer_needed`. `string_id` is not changed.
#[no_mangle]
pub unsafe extern "C" fn TBRW_convert_uniqueid_to_string(
    ptr: *mut c_void,
    size_of_buffer: u32,
    string_id: *mut TBRW_STRING_OR_ID,
    buffer: *mut TBRW_CHAR,
    size_buffer_needed: *mut u32,
) -> u32 {
    boundary(|| {
        non_null(string_id)?;
        let id = StringId((*string_id).soi_uniqueid);
        let wide = with(ptr, |h| {
            let file = h.engine.existing().ok_or(Code(TBRW_INVALID_STRING))?;
            let s = file.string(id)?;
            Ok(s.chars().map(|c| c as u32 as TBRW_CHAR).chain(std::iter::once(0)).collect::<Vec<TBRW_CHAR>>())
        })?;
        let bytes = std::slice::from_raw_parts(wide.as_ptr() as *const u8, wide.len() * size_of::<TBRW_CHAR>());
        put(bytes, size_of_buffer, buffer as *mut c_void, size_buffer_needed)
    })
}

// ====================================================================== lifecycle

/// `TBRW_reading_section`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_reading_section(ptr: *mut c_void, section: u32) -> u32 {
    boundary(|| with(ptr, |h| Ok(h.engine.reading_section(global(section)?)?)))
}

/// `TBRW_writing_section`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_writing_section(ptr: *mut c_void, section: u32) -> u32 {
    boundary(|| with(ptr, |h| Ok(h.engine.writing_section(global(section)?)?)))
}

/// `TBRW_done_section`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_done_section(ptr: *mut c_void, section: u32) -> u32 {
    boundary(|| with(ptr, |h| Ok(h.engine.done_section(global(section)?)?)))
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

// ====================================================================== hardware, software, version

/// `TBRW_set_system`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_set_system(ptr: *mut c_void, system: *mut TBRW_SYSTEM) -> u32 {
    boundary(|| {
        let sys = system_in(system)?;
        with(ptr, |h| Ok(h.engine.set_system(&sys)?))
    })
}

/// `TBRW_get_system`: one self-contained buffer (every pointer in it points inside it).
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_system(
    ptr: *mut c_void,
    size_of_buffer: u32,
    buf_ptr: *mut TBRW_SYSTEM,
    used: *mut u32,
) -> u32 {
    boundary(|| {
        let sys = with(ptr, |h| {
            let f = h.engine.check_readable(GlobalSection::Hardware)?;
            f.hardware()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))
        })?;
        let image = system_image(&sys, buf_ptr as usize);
        put(&image, size_of_buffer, buf_ptr as *mut c_void, used)
    })
}

/// `TBRW_set_host`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_set_host(ptr: *mut c_void, host: *mut TBRW_HOST) -> u32 {
    boundary(|| {
        let v = host_in(host)?;
        with(ptr, |h| Ok(h.engine.set_host(&v)?))
    })
}

/// `TBRW_set_os`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_set_os(ptr: *mut c_void, os: *mut TBRW_OS) -> u32 {
    boundary(|| {
        let v = os_in(os)?;
        with(ptr, |h| Ok(h.engine.set_os(&v)?))
    })
}

/// `TBRW_set_application`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_set_application(ptr: *mut c_void, application: *mut TBRW_APPLICATION) -> u32 {
    boundary(|| {
        let v = application_in(application)?;
        with(ptr, |h| Ok(h.engine.set_application(&v)?))
    })
}

/// A software part, for the `get_` functions.
unsafe fn get_software(
    ptr: *mut c_void,
    size_of_buffer: u32,
    buf: *mut c_void,
    used: *mut u32,
    part: impl FnOnce(tb5::Software<StringId>) -> Option<Vec<u8>>,
) -> R {
    let bytes = with(ptr, |h| {
        let f = h.engine.check_readable(GlobalSection::Software)?;
        let sw = f.software()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
        part(sw).ok_or(Code(TBRW_ENTRY_NOT_FOUND))
    })?;
    put(&bytes, size_of_buffer, buf, used)
}

/// `TBRW_get_host` (`TBRW_ENTRY_NOT_FOUND` when no host was set).
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_host(
    ptr: *mut c_void,
    size_of_buffer: u32,
    buf_ptr: *mut c_void,
    used: *mut u32,
) -> u32 {
    boundary(|| get_software(ptr, size_of_buffer, buf_ptr, used, |s| s.host.map(|h| bytes_of(&host_out(&h)))))
}

/// `TBRW_get_os` (`TBRW_ENTRY_NOT_FOUND` when no OS was set).
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_os(
    ptr: *mut c_void,
    size_of_buffer: u32,
    buf_ptr: *mut c_void,
    used: *mut u32,
) -> u32 {
    boundary(|| get_software(ptr, size_of_buffer, buf_ptr, used, |s| s.os.map(|o| bytes_of(&os_out(&o)))))
}

/// `TBRW_get_application` (`TBRW_ENTRY_NOT_FOUND` when none was set).
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_application(
    ptr: *mut c_void,
    size_of_buffer: u32,
    buf_ptr: *mut c_void,
    used: *mut u32,
) -> u32 {
    boundary(|| {
        get_software(ptr, size_of_buffer, buf_ptr, used, |s| s.application.map(|a| bytes_of(&application_out(&a))))
    })
}

/// `TBRW_set_version_info`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_set_version_info(ptr: *mut c_void, version_info: *mut TBRW_VERSION_INFO) -> u32 {
    boundary(|| {
        let v = version_in(version_info)?;
        with(ptr, |h| Ok(h.engine.set_version_info(&v)?))
    })
}

/// `TBRW_get_version_info`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_version_info(
    ptr: *mut c_void,
    size_of_buffer: u32,
    buf_ptr: *mut c_void,
    used: *mut u32,
) -> u32 {
    boundary(|| {
        let v = with(ptr, |h| {
            let f = h.engine.check_readable(GlobalSection::VersionInfo)?;
            f.version_info()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))
        })?;
        put(&bytes_of(&version_out(&v)), size_of_buffer, buf_ptr, used)
    })
}

/// `TBRW_set_user_defined_global`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_set_user_defined_global(
    ptr: *mut c_void,
    size_of_data: u32,
    data_ptr: *mut c_void,
) -> u32 {
    boundary(|| {
        let data = raw_slice(data_ptr, size_of_data)?;
        with(ptr, |h| Ok(h.engine.set_user_defined_global(data)?))
    })
}

/// `TBRW_get_user_defined_global`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_user_defined_global(
    ptr: *mut c_void,
    size_of_buffer: u32,
    buf_ptr: *mut c_void,
    used: *mut u32,
) -> u32 {
    boundary(|| {
        with(ptr, |h| {
            let f = h.engine.check_readable(GlobalSection::UserDefinedGlobal)?;
            let bytes = f.user_defined_global()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
            put(bytes, size_of_buffer, buf_ptr, used)
        })
    })
}

unsafe fn raw_slice<'a>(p: *const c_void, len: u32) -> R<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    non_null(p)?;
    Ok(std::slice::from_raw_parts(p as *const u8, len as usize))
}

// ====================================================================== enumerations

/// Calls `cb` with chunks from `start`: `fetch(handle, from, max)` returns
/// the next chunk (empty at the end) with the lock held; the callback runs
/// without it, so it may call back into the API on the same handle.
unsafe fn enumerate<T>(
    ptr: *mut c_void,
    start: u64,
    per_chunk: usize,
    len: impl FnOnce(&mut Handle) -> R<(u64, SectionRef)>,
    mut fetch: impl FnMut(&mut Handle, u64, usize) -> R<Vec<T>>,
    mut call: impl FnMut(&mut Vec<T>) -> u32,
) -> R {
    let (total, section) = with(ptr, len)?;
    if start > total {
        return Err(tb5::Error::InvalidReadStart { section, start, len: total }.into());
    }
    let mut at = start;
    while at < total {
        let mut chunk = with(ptr, |h| fetch(h, at, per_chunk))?;
        if chunk.is_empty() {
            break;
        }
        at += chunk.len() as u64;
        if !after_callback(call(&mut chunk))? {
            break;
        }
    }
    Ok(())
}

fn file_of(h: &Handle) -> R<&tb5::Tb5File> {
    h.engine.existing().ok_or(Code(TBRW_SECTION_NOT_EXIST))
}

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

/// `TBRW_enumerate_processes` (the process/thread section must be open for reading).
#[no_mangle]
pub unsafe extern "C" fn TBRW_enumerate_processes(
    ptr: *mut c_void,
    callback: Option<EnumCallback<TBRW_PID>>,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb = callback.ok_or(Code(TBRW_UNEXPECTED_NULL_PTR))?;
        let pt = |h: &Handle| -> R<u64> {
            let f = h.engine.check_readable(GlobalSection::ProcessThread)?;
            Ok(f.processes()?.map_or(0, |p| p.pid_count()))
        };
        enumerate(
            ptr,
            start_index,
            256,
            |h| Ok((pt(h)?, GlobalSection::ProcessThread.into())),
            |h, from, n| {
                let f = h.engine.check_readable(GlobalSection::ProcessThread)?;
                let t = f.processes()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
                Ok((from..(from + n as u64).min(t.pid_count())).filter_map(|i| t.pid(i)).map(|p| pid_out(&p)).collect())
            },
            |v| cb(v.as_mut_ptr(), (v.len() * size_of::<TBRW_PID>()) as u32, v.len() as u32, user_ptr),
        )
    })
}

/// `TBRW_enumerate_threads` (the process/thread section must be open for reading).
#[no_mangle]
pub unsafe extern "C" fn TBRW_enumerate_threads(
    ptr: *mut c_void,
    callback: Option<EnumCallback<TBRW_TID>>,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb = callback.ok_or(Code(TBRW_UNEXPECTED_NULL_PTR))?;
        enumerate(
            ptr,
            start_index,
            256,
            |h| {
                let f = h.engine.check_readable(GlobalSection::ProcessThread)?;
                Ok((f.processes()?.map_or(0, |p| p.tid_count()), GlobalSection::ProcessThread.into()))
            },
            |h, from, n| {
                let f = h.engine.check_readable(GlobalSection::ProcessThread)?;
                let t = f.processes()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
                Ok((from..(from + n as u64).min(t.tid_count())).filter_map(|i| t.tid(i)).map(|x| tid_out(&x)).collect())
            },
            |v| cb(v.as_mut_ptr(), (v.len() * size_of::<TBRW_TID>()) as u32, v.len() as u32, user_ptr),
        )
    })
}

/// `TBRW_add_module`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_add_module(ptr: *mut c_void, module: *mut TBRW_MODULE) -> u32 {
    boundary(|| {
        let v = module_in(module)?;
        with(ptr, |h| Ok(h.engine.add_module(&v)?))
    })
}

/// `TBRW_enumerate_modules` (the module section must be open for reading).
#[no_mangle]
pub unsafe extern "C" fn TBRW_enumerate_modules(
    ptr: *mut c_void,
    callback: Option<EnumCallback<TBRW_MODULE>>,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb = callback.ok_or(Code(TBRW_UNEXPECTED_NULL_PTR))?;
        enumerate(
            ptr,
            start_index,
            256,
            |h| {
                let f = h.engine.check_readable(GlobalSection::Module)?;
                Ok((f.modules()?.map_or(0, |m| m.len()), GlobalSection::Module.into()))
            },
            |h, from, n| modules_chunk(h.engine.check_readable(GlobalSection::Module)?, from, n),
            |v| cb(v.as_mut_ptr(), (v.len() * size_of::<TBRW_MODULE>()) as u32, v.len() as u32, user_ptr),
        )
    })
}

fn modules_chunk(f: &tb5::Tb5File, from: u64, n: usize) -> R<Vec<TBRW_MODULE>> {
    let t = f.modules()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
    (from..(from + n as u64).min(t.len())).map(|i| Ok(module_out(&t.get(i)?))).collect()
}

/// `TBRW_get_one_module`: the pointer stays valid until the next call on this handle.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_one_module(
    ptr: *mut c_void,
    module_index: u64,
    p_module: *mut *const TBRW_MODULE,
) -> u32 {
    boundary(|| {
        non_null(p_module)?;
        let p = with(ptr, |h| {
            let t = file_of(h)?.modules()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
            *h.one_module = module_out(&t.get(module_index)?);
            Ok(&*h.one_module as *const TBRW_MODULE)
        })?;
        *p_module = p;
        Ok(())
    })
}

/// The process and thread tables `get_one_pid/tid` use: the bind's of the
/// handle's bind stream when it is bound, else the process/thread section.
enum Table {
    Bind,
    Section,
}

fn table(h: &mut Handle) -> R<Table> {
    let n = h.bind_stream;
    if h.engine.existing().is_some_and(|f| n < f.stream_count()) && h.engine.is_bound(n)? {
        return Ok(Table::Bind);
    }
    Ok(Table::Section)
}

/// `TBRW_get_one_pid`: from the bind of the handle's bind stream when it is
/// bound (the indices `DATA_BIND_STRUCT` holds), else from the
/// process/thread section. Valid until the next call on this handle.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_one_pid(ptr: *mut c_void, pid_index: u64, p_pid: *mut *const TBRW_PID) -> u32 {
    boundary(|| {
        non_null(p_pid)?;
        let p = with(ptr, |h| {
            let pid = match table(h)? {
                Table::Bind => {
                    let n = h.bind_stream;
                    let v = h.engine.bound(n)?;
                    let len = v.process_count();
                    v.process(pid_index).ok_or(tb5::Error::EntryNotFound {
                        section: SectionRef::WholeStream(n),
                        index: pid_index,
                        len,
                    })?
                }
                Table::Section => {
                    let t = file_of(h)?.processes()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
                    t.pid(pid_index).ok_or(tb5::Error::EntryNotFound {
                        section: GlobalSection::ProcessThread.into(),
                        index: pid_index,
                        len: t.pid_count(),
                    })?
                }
            };
            *h.one_pid = pid_out(&pid);
            Ok(&*h.one_pid as *const TBRW_PID)
        })?;
        *p_pid = p;
        Ok(())
    })
}

/// `TBRW_get_one_tid`: like `TBRW_get_one_pid`, for threads.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_one_tid(ptr: *mut c_void, tid_index: u64, p_tid: *mut *const TBRW_TID) -> u32 {
    boundary(|| {
        non_null(p_tid)?;
        let p = with(ptr, |h| {
            let tid = match table(h)? {
                Table::Bind => {
                    let n = h.bind_stream;
                    let v = h.engine.bound(n)?;
                    let len = v.thread_count();
                    v.thread(tid_index).ok_or(tb5::Error::EntryNotFound {
                        section: SectionRef::WholeStream(n),
                        index: tid_index,
                        len,
                    })?
                }
                Table::Section => {
                    let t = file_of(h)?.processes()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
                    t.tid(tid_index).ok_or(tb5::Error::EntryNotFound {
                        section: GlobalSection::ProcessThread.into(),
                        index: tid_index,
                        len: t.tid_count(),
                    })?
                }
            };
            *h.one_tid = tid_out(&tid);
            Ok(&*h.one_tid as *const TBRW_TID)
        })?;
        *p_tid = p;
        Ok(())
    })
}

// ====================================================================== streams

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
    callback: Option<EnumCallback<TBRW_EVENT>>,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb = callback.ok_or(Code(TBRW_UNEXPECTED_NULL_PTR))?;
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
            let size = (buf.len() * 8) as u32;
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
    callback: Option<EnumCallback<TBRW_SAMPREC_DESC_ENTRY>>,
    user_ptr: *mut c_void,
) -> u32 {
    boundary(|| {
        let cb = callback.ok_or(Code(TBRW_UNEXPECTED_NULL_PTR))?;
        let mut v: Vec<TBRW_SAMPREC_DESC_ENTRY> = with(ptr, |h| {
            let f = h.engine.check_stream_readable(stream, StreamSection::DataDescription)?;
            Ok(f.stream(stream)?.descriptor()?.unwrap_or_default().iter().map(desc_out).collect())
        })?;
        if !v.is_empty() {
            after_callback(cb(
                v.as_mut_ptr(),
                (v.len() * size_of::<TBRW_SAMPREC_DESC_ENTRY>()) as u32,
                v.len() as u32,
                user_ptr,
            ))?;
        }
        Ok(())
    })
}

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
        with(ptr, |h| Ok(h.engine.add_data(stream, data)?))
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

/// Bytes of records handed to one callback.
const DATA_CHUNK_BYTES: usize = 1 << 20;

fn data_len(h: &Handle, stream: u32) -> R<(u64, usize)> {
    let f = file_of(h)?;
    let d = f.stream(stream)?.data()?;
    Ok(d.map_or((0, 1), |d| (d.len(), d.record_size())))
}

fn records_chunk(h: &Handle, stream: u32, from: u64, n: usize) -> R<Vec<u8>> {
    let f = file_of(h)?;
    let d = f.stream(stream)?.data()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
    Ok(d.chunks_from(from, n)?.next().map(<[u8]>::to_vec).unwrap_or_default())
}

/// `TBRW_enumerate_data` (the data section must be open for reading).
#[no_mangle]
pub unsafe extern "C" fn TBRW_enumerate_data(
    ptr: *mut c_void,
    stream: u32,
    callback: Option<EnumCallback<c_void>>,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb = callback.ok_or(Code(TBRW_UNEXPECTED_NULL_PTR))?;
        let (total, rs) = with(ptr, |h| {
            h.engine.check_stream_readable(stream, StreamSection::Data)?;
            data_len(h, stream)
        })?;
        let per = (DATA_CHUNK_BYTES / rs).max(1);
        chunked(
            ptr,
            stream,
            total,
            rs,
            start_index,
            per,
            StreamSection::Data,
            |h, from, n| {
                h.engine.check_stream_readable(stream, StreamSection::Data)?;
                records_chunk(h, stream, from, n)
            },
            |bytes, n| cb(bytes.as_mut_ptr() as *mut c_void, bytes.len() as u32, n as u32, user_ptr),
        )
    })
}

/// Record chunks from `start`, each passed with its record count.
#[allow(clippy::too_many_arguments)]
unsafe fn chunked(
    ptr: *mut c_void,
    stream: u32,
    total: u64,
    rs: usize,
    start: u64,
    per: usize,
    section: StreamSection,
    mut fetch: impl FnMut(&mut Handle, u64, usize) -> R<Vec<u8>>,
    mut call: impl FnMut(&mut Vec<u8>, usize) -> u32,
) -> R {
    if start > total {
        return Err(
            tb5::Error::InvalidReadStart { section: SectionRef::Stream(stream, section), start, len: total }.into()
        );
    }
    let mut at = start;
    while at < total {
        let mut bytes = with(ptr, |h| fetch(h, at, per))?;
        let n = bytes.len() / rs.max(1);
        if n == 0 {
            break;
        }
        let keep = after_callback(call(&mut bytes, n))?;
        at += n as u64;
        if !keep {
            break;
        }
    }
    Ok(())
}

// ====================================================================== bind

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

/// `TBRW_bind_enumerate_data`: records and their `DATA_BIND_STRUCT`s from `start_index`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_bind_enumerate_data(
    ptr: *mut c_void,
    data_stream: u32,
    callback: Option<BindCallback<c_void, DATA_BIND_STRUCT>>,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb = callback.ok_or(Code(TBRW_UNEXPECTED_NULL_PTR))?;
        let (total, rs) = with(ptr, |h| {
            h.engine.bound(data_stream)?;
            h.bind_stream = data_stream;
            data_len(h, data_stream)
        })?;
        let per = (DATA_CHUNK_BYTES / rs).max(1);
        // Filled by the fetch step, read by the callback step.
        let binds = RefCell::new(Vec::new());
        chunked(
            ptr,
            data_stream,
            total,
            rs,
            start_index,
            per,
            StreamSection::Data,
            |h, from, n| {
                let bytes = records_chunk(h, data_stream, from, n)?;
                let mut b = binds.borrow_mut();
                b.clear();
                h.engine.bound(data_stream)?.data_binds(from, bytes.len() / rs, &mut b);
                Ok(bytes)
            },
            |bytes, n| {
                let b = binds.borrow();
                cb(
                    bytes.as_ptr() as *const c_void,
                    bytes.len() as u32,
                    n as u64,
                    b.as_ptr(),
                    (b.len() * size_of::<DATA_BIND_STRUCT>()) as u32,
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
    callback: Option<BindCallback<TBRW_MODULE, MODULE_BIND_STRUCT>>,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb = callback.ok_or(Code(TBRW_UNEXPECTED_NULL_PTR))?;
        let binds: RefCell<Vec<MODULE_BIND_STRUCT>> = RefCell::default();
        enumerate(
            ptr,
            start_index,
            256,
            |h| {
                let n = h.bind_stream;
                Ok((h.engine.bound(n)?.module_bind_count(), GlobalSection::Module.into()))
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
                    (m.len() * size_of::<TBRW_MODULE>()) as u32,
                    m.len() as u64,
                    b.as_ptr(),
                    (b.len() * 8) as u32,
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
    callback: Option<BindCallback<TBRW_TID, TID_BIND_STRUCT>>,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb = callback.ok_or(Code(TBRW_UNEXPECTED_NULL_PTR))?;
        let binds: RefCell<Vec<TID_BIND_STRUCT>> = RefCell::default();
        enumerate(
            ptr,
            start_index,
            256,
            |h| {
                let n = h.bind_stream;
                Ok((h.engine.bound(n)?.thread_count(), SectionRef::WholeStream(n)))
            },
            |h, from, k| {
                let n = h.bind_stream;
                let v = h.engine.bound(n)?;
                let end = (from + k as u64).min(v.thread_count());
                *binds.borrow_mut() = (from..end).map(|i| v.tid_bind(i).unwrap_or_default()).collect();
                Ok((from..end).filter_map(|i| v.thread(i)).map(|t| tid_out(&t)).collect())
            },
            |t| {
                let b = binds.borrow();
                cb(
                    t.as_ptr(),
                    (t.len() * size_of::<TBRW_TID>()) as u32,
                    t.len() as u64,
                    b.as_ptr(),
                    (b.len() * 8) as u32,
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
    callback: Option<BindCallback<TBRW_TID, TID_BIND_STRUCT>>,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    TBRW_bind_enumerate_threads(ptr, callback, user_ptr, start_index)
}

// ====================================================================== user-defined stream

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

// ====================================================================== string conversions

fn utf8_arg<'a>(p: *const c_char) -> R<&'a str> {
    non_null(p)?;
    // SAFETY: the caller passes a NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_str().map_err(|_| Code(TBRW_BAD_PARAMETER))
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
        let s = utf8_arg(utf8)?;
        let wide: Vec<libc_wchar> = s.chars().map(|c| c as u32 as libc_wchar).chain(std::iter::once(0)).collect();
        let needed = u32::try_from(wide.len()).map_err(|_| Code(TBRW_BUFFER_OVERFLOW))?;
        let room = *wcs_size;
        *wcs_size = needed;
        if room < needed {
            return Err(Code(TBRW_BUFFER_TOO_SMALL));
        }
        non_null(wcs)?;
        std::ptr::copy_nonoverlapping(wide.as_ptr(), wcs, wide.len());
        Ok(())
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
        non_null(wcs)?;
        let s = wide_arg(wcs)?.unwrap_or_default();
        let needed = u32::try_from(s.len() + 1).map_err(|_| Code(TBRW_BUFFER_OVERFLOW))?;
        let room = *utf8_size;
        *utf8_size = needed;
        if room < needed {
            return Err(Code(TBRW_BUFFER_TOO_SMALL));
        }
        non_null(utf8)?;
        std::ptr::copy_nonoverlapping(s.as_ptr(), utf8 as *mut u8, s.len());
        *utf8.add(s.len()) = 0;
        Ok(())
    })
}

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
}

/// `TBRW_convert_utf8_to_wcs_malloced`: the result is allocated with
/// `malloc`; the caller frees it.
#[no_mangle]
pub unsafe extern "C" fn TBRW_convert_utf8_to_wcs_malloced(utf8: *const c_char, wcs: *mut *mut libc_wchar) -> u32 {
    boundary(|| {
        non_null(wcs)?;
        let s = utf8_arg(utf8)?;
        let wide: Vec<libc_wchar> = s.chars().map(|c| c as u32 as libc_wchar).chain(std::iter::once(0)).collect();
        let p = malloc(wide.len() * size_of::<libc_wchar>()) as *mut libc_wchar;
        if p.is_null() {
            return Err(Code(TBRW_NO_MEMORY));
        }
        std::ptr::copy_nonoverlapping(wide.as_ptr(), p, wide.len());
        *wcs = p;
        Ok(())
    })
}

/// `TBRW_convert_wcs_to_utf8_malloced`: the result is allocated with
/// `malloc`; the caller frees it.
#[no_mangle]
pub unsafe extern "C" fn TBRW_convert_wcs_to_utf8_malloced(wcs: *const libc_wchar, utf8: *mut *mut c_char) -> u32 {
    boundary(|| {
        non_null(utf8)?;
        non_null(wcs)?;
        let s = wide_arg(wcs)?.unwrap_or_default();
        let p = malloc(s.len() + 1) as *mut u8;
        if p.is_null() {
            return Err(Code(TBRW_NO_MEMORY));
        }
        std::ptr::copy_nonoverlapping(s.as_ptr(), p, s.len());
        *p.add(s.len()) = 0;
        *utf8 = p as *mut c_char;
        Ok(())
    })
}
