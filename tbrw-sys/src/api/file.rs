//! The file as a whole (guide 9, high-level functions): open, close, abort,
//! verify, the API version and the error strings.

use std::os::raw::c_void;

use tb5::codes::*;

use super::path_arg;
use crate::ctypes::TBRW_CHAR;
use crate::handle::{boundary, non_null, register, unregister, with, Code, Handle};

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

/// `TBRW_open`. The path is checked before anything is done: an empty
/// name, a directory, a missing folder or one this process cannot write to
/// is `TBRW_FILE_OPEN_FAILED` with `errno` saying which. For writing, a
/// device node, FIFO or socket at the path is refused (`EINVAL`) and left
/// as it is, and so is a link planted in a shared sticky folder (`EACCES`);
/// a new file at any other link replaces the link, not the file it names
/// (docs/FORMAT.md, "Output paths").
#[no_mangle]
pub unsafe extern "C" fn TBRW_open(ptr: *mut *mut c_void, filename: *const TBRW_CHAR, access_mode: u32) -> u32 {
    boundary(|| {
        non_null(ptr)?;
        *ptr = std::ptr::null_mut();
        let path = path_arg(filename)?;
        let known = tb5::access::READ | tb5::access::WRITE | tb5::access::CREATE_ALWAYS;
        // A new file's path is checked by the engine; an existing one here,
        // since `open(2)` itself accepts a directory for reading. Bad flags
        // are left to the engine, which names them.
        if access_mode & tb5::access::CREATE_ALWAYS == 0 && access_mode != 0 && access_mode & !known == 0 {
            tb5::work_file::check_existing(&path)
                .map_err(|source| tb5::Error::FileOpen { path: path.clone(), source })?;
        }
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileTypeExt;

    use super::*;
    use crate::convert::to_wide;

    /// `TBRW_open` for writing at a FIFO or a socket (and a character
    /// device, where this process may make one): `TBRW_FILE_OPEN_FAILED`,
    /// `errno` `EINVAL`, and the node left as it was, never replaced by a
    /// TB5 file (docs/FORMAT.md, "Output paths"; before: replaced).
    #[test]
    fn a_new_file_at_a_device_fifo_or_socket_is_refused_and_the_node_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (fifo, dev, sock) = (dir.path().join("fifo"), dir.path().join("null"), dir.path().join("socket"));
        let c = |p: &std::path::Path| std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: NUL-terminated paths in a temporary folder.
        assert_eq!(unsafe { libc::mkfifo(c(&fifo).as_ptr(), 0o666) }, 0);
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let mut nodes = vec![fifo, sock];
        // SAFETY: as above.
        if unsafe { libc::mknod(c(&dev).as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0 {
            nodes.push(dev);
        } else {
            eprintln!("NOTE: no character device tried: mknod: {}", std::io::Error::last_os_error());
        }
        for p in &nodes {
            let kind = std::fs::symlink_metadata(p).unwrap().file_type();
            for mode in [tb5::access::WRITE | tb5::access::CREATE_ALWAYS, tb5::access::WRITE] {
                let mut h = std::ptr::null_mut();
                let name = to_wide(p.to_str().unwrap());
                // SAFETY: valid out pointer and NUL-terminated wide string.
                let r = unsafe { TBRW_open(&mut h, name.as_ptr(), mode) };
                assert_eq!((r, h.is_null()), (TBRW_FILE_OPEN_FAILED, true), "{}", p.display());
                assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EINVAL), "{}", p.display());
                let now = std::fs::symlink_metadata(p).unwrap().file_type();
                assert_eq!(
                    (now.is_fifo(), now.is_socket(), now.is_char_device()),
                    (kind.is_fifo(), kind.is_socket(), kind.is_char_device())
                );
            }
        }
    }
}
