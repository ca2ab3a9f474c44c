//! The global sections (guide 9): their reading/writing/done lifecycle,
//! hardware (`TBRW_SYSTEM`), software (host, OS, application), version
//! info and user-defined global data.

use std::os::raw::c_void;

use tb5::codes::*;
use tb5::{GlobalSection, StringId};

use super::raw_slice;
use crate::convert::*;
use crate::ctypes::*;
use crate::handle::{boundary, with, Code, R};

fn global(section: u32) -> R<GlobalSection> {
    GlobalSection::from_u32(section).ok_or(Code(TBRW_UNKNOWN_SECTION_NUMBER))
}

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
            // A file in Intel's layout without a system: 80, as Intel's library gives.
            let missing = if f.layout().is_intel() { TBRW_INVALID_STREAM } else { TBRW_SECTION_NOT_EXIST };
            f.hardware()?.ok_or(Code(missing))
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

/// One part of the software section through the `get_` buffer protocol:
/// `part` picks it (`None`: it was never set, `TBRW_ENTRY_NOT_FOUND`).
///
/// # Safety
/// As [`put`]: `buf` is NULL or valid for `size_of_buffer` bytes, `used` NULL or valid.
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
