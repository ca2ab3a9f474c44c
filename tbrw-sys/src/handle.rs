//! Handles and the boundary every exported function goes through.
//!
//! A `TBRW_PTR` is an opaque token, never a pointer to Rust memory: the
//! registry maps it to the handle, so a pointer that is not one of ours (or
//! one already closed) is rejected without being dereferenced. Each handle
//! has its own lock, so several handles work from several threads at once;
//! the registry lock is held only to look a token up.
//!
//! [`boundary`] runs a function body, turns its `Result` into a TBRW code
//! and stops a panic from unwinding into C. On a failure it also sets
//! `errno`: to the operating system's error behind it (`ENOSPC`, `EISDIR`,
//! `EWOULDBLOCK` for a file another writer holds, ...), `ENOMEM` for
//! `TBRW_NO_MEMORY`, and 0 when no OS error was involved (a damaged file, a
//! lifecycle error), so a caller can tell a full disk from a bad file with
//! `strerror(errno)`. `errno` is per thread, as the handle's calls are.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tb5::codes::*;
use tb5::Engine;

use crate::ctypes::{TBRW_MODULE, TBRW_PID, TBRW_TID};

/// A TBRW error code as a Rust error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Code(pub(crate) u32);

thread_local! {
    /// The OS error behind the last library error of this thread's current call.
    static OS_ERROR: Cell<i32> = const { Cell::new(0) };
}

impl From<tb5::Error> for Code {
    fn from(e: tb5::Error) -> Self {
        OS_ERROR.with(|c| c.set(os_error_of(&e)));
        Code(e.code())
    }
}

/// The `errno` value of the first OS error in `e`'s chain of causes; 0 if none.
fn os_error_of(e: &(dyn std::error::Error + 'static)) -> i32 {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return io.raw_os_error().unwrap_or_else(|| errno_of_kind(io.kind()));
        }
        cause = c.source();
    }
    0
}

/// An `errno` for an OS-level error the library made up itself (no number).
fn errno_of_kind(kind: std::io::ErrorKind) -> i32 {
    use std::io::ErrorKind::*;
    match kind {
        NotFound => libc::ENOENT,
        PermissionDenied => libc::EACCES,
        WouldBlock => libc::EWOULDBLOCK,
        IsADirectory => libc::EISDIR,
        StorageFull => libc::ENOSPC,
        OutOfMemory => libc::ENOMEM,
        InvalidInput => libc::EINVAL,
        _ => libc::EIO,
    }
}

fn set_errno(v: i32) {
    // SAFETY: __errno_location returns this thread's errno, always valid.
    unsafe { *libc::__errno_location() = v };
}

pub(crate) type R<T = ()> = Result<T, Code>;

/// One open file and what the C API keeps for it.
pub(crate) struct Handle {
    pub(crate) engine: Engine,
    /// Targets of the pointers `TBRW_get_one_*` hand out: valid until the
    /// next call of the same function on this handle.
    pub(crate) one_module: Box<TBRW_MODULE>,
    pub(crate) one_pid: Box<TBRW_PID>,
    pub(crate) one_tid: Box<TBRW_TID>,
    /// The stream whose bind the stream-less functions
    /// (`bind_enumerate_modules/threads`, `get_one_pid/tid`) use: the last
    /// stream named to a bind function of this handle.
    pub(crate) bind_stream: u32,
}

// SAFETY: the only raw pointers in a Handle are in the `one_*` structs,
// whose string fields hold unique ids (never pointers) and whose pointer
// fields are null: nothing in them refers to thread-local or borrowed memory.
unsafe impl Send for Handle {}

impl Handle {
    pub(crate) fn new(engine: Engine) -> Handle {
        // SAFETY: these structs are integers, unions of integers and raw
        // pointers: all-zero is a valid value (null pointers, id 0).
        let (m, p, t) = unsafe { (std::mem::zeroed(), std::mem::zeroed(), std::mem::zeroed()) };
        Handle { engine, one_module: Box::new(m), one_pid: Box::new(p), one_tid: Box::new(t), bind_stream: 0 }
    }
}

type Shared = Arc<Mutex<Handle>>;

static HANDLES: Mutex<BTreeMap<usize, Shared>> = Mutex::new(BTreeMap::new());
static NEXT: AtomicUsize = AtomicUsize::new(1);
/// Counts the handles closed: a thread's [`RECENT`] handle is good while
/// this has not changed since it was looked up.
static CLOSED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The handle this thread used last, with its token and the [`CLOSED`]
    /// count when it was looked up: a collector calls `TBRW_add_data` once
    /// per record on one handle, and this spares each call the registry's
    /// lock and search (what is left is the handle's own lock).
    static RECENT: RefCell<Option<(usize, u64, Shared)>> = const { RefCell::new(None) };
}

fn registry() -> std::sync::MutexGuard<'static, BTreeMap<usize, Shared>> {
    // The map is only inserted into and removed from; a panic while it was
    // held cannot have left it half-changed.
    HANDLES.lock().unwrap_or_else(|p| p.into_inner())
}

// Tokens are `TOKEN_BASE + serial * TOKEN_STEP`: far from any heap
// address and never a multiple of a page, so a token is never mistaken
// for memory, and the serial (which string ids carry) gives the token back.
const TOKEN_BASE: usize = 0x7B50_0000_0000;
const TOKEN_STEP: usize = 16;

/// Registers a handle and returns its token. Tokens are never reused.
pub(crate) fn register(h: Handle) -> *mut c_void {
    let token = TOKEN_BASE + NEXT.fetch_add(1, Ordering::Relaxed) * TOKEN_STEP;
    registry().insert(token, Arc::new(Mutex::new(h)));
    token as *mut c_void
}

fn lookup(ptr: *mut c_void) -> R<Shared> {
    if ptr.is_null() {
        return Err(Code(TBRW_UNEXPECTED_NULL_PTR));
    }
    registry().get(&(ptr as usize)).cloned().ok_or(Code(TBRW_BAD_PARAMETER))
}

/// Removes a handle from the registry (it is dropped when the last call using it ends).
pub(crate) fn unregister(ptr: *mut c_void) -> R<Shared> {
    if ptr.is_null() {
        return Err(Code(TBRW_UNEXPECTED_NULL_PTR));
    }
    let removed = {
        let mut handles = registry();
        let removed = handles.remove(&(ptr as usize)).ok_or(Code(TBRW_BAD_PARAMETER))?;
        // Under the registry's lock, so no lookup can see the handle gone
        // from the registry and the count unchanged.
        CLOSED.fetch_add(1, Ordering::Release);
        removed
    };
    // This thread lets go of it now; other threads when they next call.
    RECENT.with(|r| {
        if let Ok(mut r) = r.try_borrow_mut() {
            *r = None;
        }
    });
    Ok(removed)
}

/// The serial number of a token (0 for anything that is not a token).
pub(crate) fn serial_of(ptr: *mut c_void) -> u64 {
    let p = ptr as usize;
    if p <= TOKEN_BASE || !(p - TOKEN_BASE).is_multiple_of(TOKEN_STEP) {
        return 0;
    }
    ((p - TOKEN_BASE) / TOKEN_STEP) as u64
}

/// The token of a serial number (whether or not that handle is still open).
pub(crate) fn token_of(serial: u64) -> *mut c_void {
    (TOKEN_BASE as u64).saturating_add(serial.saturating_mul(TOKEN_STEP as u64)) as usize as *mut c_void
}

thread_local! {
    // The serial of the handle this thread holds locked in `with`: the
    // string ids converted while it is held name that handle (see `convert`).
    static LOCKED: Cell<u64> = const { Cell::new(0) };
}

/// The serial of the handle the current thread is working on inside
/// [`with`], 0 outside.
pub(crate) fn locked_serial() -> u64 {
    LOCKED.with(Cell::get)
}

/// Restores the previous [`LOCKED`] value, also when `f` panics.
struct Locked(u64);

impl Drop for Locked {
    fn drop(&mut self) {
        LOCKED.with(|l| l.set(self.0));
    }
}

/// Runs `f` on the handle behind `ptr`, holding its lock.
pub(crate) fn with<T>(ptr: *mut c_void, f: impl FnOnce(&mut Handle) -> R<T>) -> R<T> {
    with_handle(ptr, true, f)
}

/// [`with`] for calls that convert no strings (`TBRW_add_data`, once per
/// record): the handle is not noted in [`LOCKED`], two thread-local
/// accesses fewer (each a `__tls_get_addr` call in a shared library).
pub(crate) fn with_no_strings<T>(ptr: *mut c_void, f: impl FnOnce(&mut Handle) -> R<T>) -> R<T> {
    with_handle(ptr, false, f)
}

fn with_handle<T>(ptr: *mut c_void, strings: bool, f: impl FnOnce(&mut Handle) -> R<T>) -> R<T> {
    fn run<T>(shared: &Shared, ptr: *mut c_void, strings: bool, f: impl FnOnce(&mut Handle) -> R<T>) -> R<T> {
        // A handle whose lock was poisoned by a panic may be half-updated: refuse it.
        let mut h = shared.lock().map_err(|_| Code(TBRW_SAM_ERROR))?;
        let _restore = strings.then(|| Locked(LOCKED.with(|l| l.replace(serial_of(ptr)))));
        f(&mut h)
    }
    if ptr.is_null() {
        return Err(Code(TBRW_UNEXPECTED_NULL_PTR));
    }
    let closed = CLOSED.load(Ordering::Acquire);
    RECENT.with(|recent| {
        // Borrowed, not cloned, for the call: the cached Arc keeps the
        // handle alive. A nested call (none exists today) would only miss.
        if let Ok(r) = recent.try_borrow() {
            if let Some((token, at, shared)) = r.as_ref() {
                if *token == ptr as usize && *at == closed {
                    return run(shared, ptr, strings, f);
                }
            }
        }
        let shared = lookup(ptr)?;
        if let Ok(mut r) = recent.try_borrow_mut() {
            *r = Some((ptr as usize, closed, shared.clone()));
        }
        run(&shared, ptr, strings, f)
    })
}

/// Runs an exported function's body: `Ok` is `TBRW_SUCCESS`, `Err(code)`
/// the code, a panic `TBRW_SAM_ERROR` (it never crosses into C). A failure
/// sets `errno` (see the module doc); a success leaves it alone, as C does.
pub(crate) fn boundary(f: impl FnOnce() -> R) -> u32 {
    OS_ERROR.with(|c| c.set(0));
    let code = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => TBRW_SUCCESS,
        Ok(Err(Code(c))) => c,
        Err(_) => TBRW_SAM_ERROR,
    };
    if code != TBRW_SUCCESS {
        let os = OS_ERROR.with(Cell::get);
        set_errno(match os {
            0 if code == TBRW_NO_MEMORY => libc::ENOMEM,
            _ => os,
        });
    }
    code
}

/// Fails with `TBRW_UNEXPECTED_NULL_PTR` when `p` is null.
pub(crate) fn non_null<T>(p: *const T) -> R<()> {
    if p.is_null() {
        Err(Code(TBRW_UNEXPECTED_NULL_PTR))
    } else {
        Ok(())
    }
}

/// What an enumeration does with a callback's return value.
pub(crate) fn after_callback(ret: u32) -> R<bool> {
    match ret {
        1 => Ok(true),
        0 => Ok(false),
        other => Err(Code(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_code() {
        assert_eq!(boundary(|| panic!("boom")), TBRW_SAM_ERROR);
        assert_eq!(boundary(|| Err(Code(TBRW_BUFFER_TOO_SMALL))), TBRW_BUFFER_TOO_SMALL);
        assert_eq!(boundary(|| Ok(())), TBRW_SUCCESS);
    }

    fn errno() -> i32 {
        std::io::Error::last_os_error().raw_os_error().unwrap()
    }

    #[test]
    fn a_failure_sets_errno_to_its_os_error_or_zero() {
        let dir = tempfile::tempdir().unwrap();
        let full = tb5::Error::Io {
            path: dir.path().join("f.tb5"),
            action: "write",
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        };
        assert_eq!(boundary(|| Err(Code::from(full))), TBRW_SAM_ERROR);
        assert_eq!(errno(), libc::ENOSPC);
        let damaged = tb5::Error::NotTb5 { path: dir.path().into(), what: "zeros".into() };
        assert_eq!(boundary(|| Err(Code::from(damaged))), TBRW_SAMPLE_FILE_MAPPING_ERROR);
        assert_eq!(errno(), 0, "no OS error: errno says so");
        assert_eq!(boundary(|| Err(Code(TBRW_NO_MEMORY))), TBRW_NO_MEMORY);
        assert_eq!(errno(), libc::ENOMEM);
        set_errno(libc::EINTR);
        assert_eq!(boundary(|| Ok(())), TBRW_SUCCESS);
        assert_eq!(errno(), libc::EINTR, "success leaves errno alone");
        let busy = tb5::Engine::open(dir.path(), tb5::access::CREATE_ALWAYS).unwrap_err();
        assert_eq!(boundary(|| Err(Code::from(busy))), TBRW_FILE_OPEN_FAILED);
        assert_eq!(errno(), libc::EISDIR);
    }

    #[test]
    fn unknown_and_closed_tokens_are_rejected() {
        assert_eq!(with(std::ptr::null_mut(), |_| Ok(())), Err(Code(TBRW_UNEXPECTED_NULL_PTR)));
        assert_eq!(with(0x1234 as *mut c_void, |_| Ok(())), Err(Code(TBRW_BAD_PARAMETER)));
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path().join("x.tb5"), tb5::access::CREATE_ALWAYS).unwrap();
        let t = register(Handle::new(engine));
        assert!(with(t, |_| Ok(())).is_ok());
        // A panic while the handle is locked poisons it: it is refused from then on.
        let r = boundary(|| with(t, |_| -> R { panic!("inside") }));
        assert_eq!(r, TBRW_SAM_ERROR);
        assert_eq!(with(t, |_| Ok(())), Err(Code(TBRW_SAM_ERROR)));
        assert!(unregister(t).is_ok());
        assert_eq!(with(t, |_| Ok(())), Err(Code(TBRW_BAD_PARAMETER)));
    }
}
