//! Handles and the boundary every exported function goes through.
//!
//! A `TBRW_PTR` is an opaque token, never a pointer to Rust memory: the
//! registry maps it to the handle, so a pointer that is not one of ours (or
//! one already closed) is rejected without being dereferenced. Each handle
//! has its own lock, so several handles work from several threads at once;
//! the registry lock is held only to look a token up.
//!
//! [`boundary`] runs a function body, turns its `Result` into a TBRW code
//! and stops a panic from unwinding into C.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tb5::codes::*;
use tb5::Engine;

use crate::ctypes::{TBRW_MODULE, TBRW_PID, TBRW_TID};

/// A TBRW error code as a Rust error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Code(pub(crate) u32);

impl From<tb5::Error> for Code {
    fn from(e: tb5::Error) -> Self {
        Code(e.code())
    }
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
    registry().remove(&(ptr as usize)).ok_or(Code(TBRW_BAD_PARAMETER))
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
    let shared = lookup(ptr)?;
    // A handle whose lock was poisoned by a panic may be half-updated: refuse it.
    let mut h = shared.lock().map_err(|_| Code(TBRW_SAM_ERROR))?;
    let _restore = Locked(LOCKED.with(|l| l.replace(serial_of(ptr))));
    f(&mut h)
}

/// Runs an exported function's body: `Ok` is `TBRW_SUCCESS`, `Err(code)`
/// the code, a panic `TBRW_SAM_ERROR` (it never crosses into C).
pub(crate) fn boundary(f: impl FnOnce() -> R) -> u32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => TBRW_SUCCESS,
        Ok(Err(Code(c))) => c,
        Err(_) => TBRW_SAM_ERROR,
    }
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
