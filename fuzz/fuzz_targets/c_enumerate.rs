//! Feeds arbitrary bytes, as a TB5 file on disk, to the C API's read paths
//! (tbrw-sys, compiled into this target from its sources): every
//! enumeration, with and without binds (made in memory by `TBRW_dobind` on
//! the read-only handle), from the start and from the middle, and the
//! `get_one_` functions. The callbacks read every byte of the buffers they
//! are handed (under AddressSanitizer, cargo-fuzz's default, a read past a
//! buffer is a crash) and check that the sizes agree with `num_entries`
//! (guide 5.9). Errors are expected; a panic, an abort or an outsized
//! allocation is a bug.
#![no_main]
#![allow(dead_code, unused_imports, missing_docs, non_snake_case, non_camel_case_types, clippy::all)]

// The C library's modules, as they are in tbrw-sys (whose crate is a
// cdylib/staticlib only, so it cannot be a Rust dependency here).
#[path = "../../tbrw-sys/src/api/mod.rs"]
mod api;
#[path = "../../tbrw-sys/src/callback.rs"]
mod callback;
#[path = "../../tbrw-sys/src/convert/mod.rs"]
mod convert;
#[path = "../../tbrw-sys/src/ctypes.rs"]
mod ctypes;
#[path = "../../tbrw-sys/src/handle.rs"]
mod handle;
#[path = "../../tbrw-sys/src/messages.rs"]
mod messages;

use std::os::raw::c_void;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use api::*;
use ctypes::*;
use libfuzzer_sys::fuzz_target;

// tbrw_types.h's section identifiers and access mode.
const TBRW_PROCESS_THREAD_SECTION: u32 = 2;
const TBRW_MODULE_SECTION: u32 = 3;
const TBRW_DATA_SECTION: u32 = 2;
const TBRW_FILE_READ: u32 = 0x1;

fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() { shm.to_owned() } else { std::env::temp_dir() };
        let dir = base.join(format!("tbrw-fuzz-c-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch folder");
        dir
    })
}

/// Reads every byte of a buffer the library handed out.
unsafe fn touch(p: *const u8, len: usize) {
    if len == 0 {
        return;
    }
    assert!(!p.is_null(), "a NULL buffer of {len} bytes");
    let bytes = std::slice::from_raw_parts(p, len);
    std::hint::black_box(bytes.iter().fold(0u8, |a, b| a ^ b));
}

unsafe extern "C" fn data_cb(data: *mut c_void, size: u32, n: u32, _: *mut c_void) -> u32 {
    assert!(n > 0 && size % n == 0, "{size} bytes for {n} records");
    touch(data as *const u8, size as usize);
    1
}

unsafe extern "C" fn table_cb<T>(data: *mut T, size: u32, n: u32, _: *mut c_void) -> u32 {
    assert_eq!(size as usize, n as usize * std::mem::size_of::<T>());
    touch(data as *const u8, size as usize);
    1
}

unsafe extern "C" fn bind_cb<T, B>(data: *const T, size: u32, n: u64, binds: *const B, bsize: u32, _: *mut c_void) -> u32 {
    assert_eq!(bsize as u64, n * std::mem::size_of::<B>() as u64, "bind buffer for {n} entries");
    assert_eq!(size as u64, n * std::mem::size_of::<T>() as u64);
    touch(data as *const u8, size as usize);
    touch(binds as *const u8, bsize as usize);
    1
}

/// Records are of the stream's record size, which the callback is not told.
unsafe extern "C" fn bind_data_cb(
    data: *const c_void,
    size: u32,
    n: u64,
    binds: *const DATA_BIND_STRUCT,
    bsize: u32,
    _: *mut c_void,
) -> u32 {
    assert_eq!(bsize as u64, n * std::mem::size_of::<DATA_BIND_STRUCT>() as u64, "bind buffer for {n} entries");
    assert!(n > 0 && size as u64 % n == 0, "{size} bytes for {n} records");
    touch(data as *const u8, size as usize);
    touch(binds as *const u8, bsize as usize);
    1
}

fn wide(path: &Path) -> Vec<TBRW_CHAR> {
    path.to_str().expect("a UTF-8 scratch path").chars().map(|c| c as TBRW_CHAR).chain([0]).collect()
}

fuzz_target!(|data: &[u8]| {
    let file = scratch().join("in.tb5");
    if std::fs::write(&file, data).is_err() {
        return;
    }
    let path = wide(&file);
    unsafe {
        let mut h: *mut c_void = std::ptr::null_mut();
        if TBRW_open(&mut h, path.as_ptr(), TBRW_FILE_READ) != 0 {
            return;
        }
        let user = std::ptr::null_mut();
        let _ = TBRW_verify(h);
        for (section, run) in [
            (TBRW_MODULE_SECTION, 0),
            (TBRW_PROCESS_THREAD_SECTION, 1),
        ] {
            if TBRW_reading_section(h, section) == 0 {
                for start in [0, 1, 1000] {
                    if run == 0 {
                        let _ = TBRW_enumerate_modules(h, table_cb::<TBRW_MODULE> as *const () as *const c_void, user, start);
                    } else {
                        let _ = TBRW_enumerate_processes(h, table_cb::<TBRW_PID> as *const () as *const c_void, user, start);
                        let _ = TBRW_enumerate_threads(h, table_cb::<TBRW_TID> as *const () as *const c_void, user, start);
                    }
                }
                let _ = TBRW_done_section(h, section);
            }
        }
        let mut streams = 0u32;
        let _ = TBRW_get_number_data_streams(h, &mut streams);
        for n in 0..streams.min(4) {
            if TBRW_reading_stream(h, n) == 0 {
                if TBRW_reading_stream_section(h, n, TBRW_DATA_SECTION) == 0 {
                    for start in [0, 7, 1 << 20] {
                        let _ = TBRW_enumerate_data(h, n, data_cb as *const () as *const c_void, user, start);
                    }
                    // Intel's convention: the address of a variable holding the callback.
                    let cb: EnumCallback<c_void> = data_cb;
                    let _ = TBRW_enumerate_data(h, n, &cb as *const EnumCallback<c_void> as *const c_void, user, 0);
                    let _ = TBRW_done_stream_section(h, n, TBRW_DATA_SECTION);
                }
                let _ = TBRW_done_stream(h, n);
            }
            let mut bound = 0u32;
            if TBRW_is_bound(h, n, &mut bound) == 0 && (bound == 1 || TBRW_dobind(h, n) == 0) {
                for start in [0, 3] {
                    let _ = TBRW_bind_enumerate_data(h, n, bind_data_cb as *const () as *const c_void, user, start);
                    let _ = TBRW_bind_enumerate_modules(h, bind_cb::<TBRW_MODULE, MODULE_BIND_STRUCT> as *const () as *const c_void, user, start);
                    let _ = TBRW_bind_enumerate_threads(h, bind_cb::<TBRW_TID, TID_BIND_STRUCT> as *const () as *const c_void, user, start);
                }
                for i in [0u64, 1, u64::MAX] {
                    let mut pid: *const TBRW_PID = std::ptr::null();
                    if TBRW_get_one_pid(h, i, &mut pid) == 0 {
                        touch(pid as *const u8, std::mem::size_of::<TBRW_PID>());
                    }
                    let mut tid: *const TBRW_TID = std::ptr::null();
                    if TBRW_get_one_tid(h, i, &mut tid) == 0 {
                        touch(tid as *const u8, std::mem::size_of::<TBRW_TID>());
                    }
                }
            }
        }
        let _ = TBRW_close(h);
    }
});
