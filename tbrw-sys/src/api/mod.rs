//! The exported functions of `tbrw.h`, one file per chapter-9 group of the
//! guide, and the helpers they share.
//!
//! Every exported function checks its pointers, runs its body inside
//! [`boundary`](crate::handle::boundary) (no panic crosses into C) and
//! forwards to the `tbrw` engine; what each one does is documented in
//! `tbrw.h` and the guide's chapter 9. This module holds what several of
//! them need: the raw-pointer argument helpers, the one enumeration loop
//! ([`enumerate`]) and the constants that size its chunks. A callback
//! argument is taken as an untyped address and resolved once per call by
//! `crate::callback::resolve`: the function or a pointer to it, whichever
//! header the caller was built with.
//!
//! - [`file`](mod@file): open, close, abort, verify, version, error strings;
//! - [`global`]: the global sections' lifecycle, hardware, software, version
//!   info, user-defined global data;
//! - [`process`]: processes and threads, `get_one_pid/tid`;
//! - [`module`]: the module table;
//! - [`stream`]: streams and stream sections, stream info, events, data
//!   descriptors, user-defined stream data;
//! - [`data`]: data records;
//! - [`bind`]: binding and the bind enumerations;
//! - [`strings`]: string ids and UTF-8 / `wchar_t` conversions.
//!
//! This layer sits on `handle`, `convert`, `ctypes` and `messages`; none of
//! them may import it.
#![allow(clippy::missing_safety_doc)] // every exported function's contract is the C header's

use std::os::raw::c_void;
use std::path::PathBuf;

use tb5::codes::*;
use tb5::SectionRef;

use crate::convert::wide_arg;
use crate::ctypes::TBRW_CHAR;
use crate::handle::{after_callback, non_null, with, Code, Handle, R};

mod bind;
mod data;
mod file;
mod global;
mod module;
mod process;
mod stream;
mod strings;

pub use bind::*;
pub use data::*;
pub use file::*;
pub use global::*;
pub use module::*;
pub use process::*;
pub use stream::*;
pub use strings::*;

/// Table entries (processes, threads, modules and their binds) handed to
/// one enumeration callback: small enough that a chunk of converted C
/// structures stays in a few KiB, large enough that the callback and the
/// lock are not taken per entry.
const ENTRIES_PER_CALLBACK: usize = 256;

/// Bytes of data records handed to one enumeration callback (at least one
/// record, however large).
const DATA_BYTES_PER_CALLBACK: usize = 1 << 20;

/// Writes `v` to an out-parameter.
///
/// # Safety
/// `p` is NULL or valid for a write of a `T`.
unsafe fn set_out<T>(p: *mut T, v: T) -> R {
    non_null(p)?;
    p.write(v);
    Ok(())
}

/// A file name argument (NULL is refused).
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated `wchar_t` string.
unsafe fn path_arg(p: *const TBRW_CHAR) -> R<PathBuf> {
    non_null(p)?;
    wide_arg(p)?.map(PathBuf::from).ok_or(Code(TBRW_UNEXPECTED_NULL_PTR))
}

/// `len` bytes at `p` (NULL is allowed when `len` is 0).
///
/// # Safety
/// When `len` is not 0, `p` is NULL or valid for reads of `len` bytes that
/// nothing writes to while the slice lives.
unsafe fn raw_slice<'a>(p: *const c_void, len: u32) -> R<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    non_null(p)?;
    Ok(std::slice::from_raw_parts(p as *const u8, len as usize))
}

/// The committed file of a handle (a file being created has none yet).
fn file_of(h: &Handle) -> R<&tb5::Tb5File> {
    h.engine.existing().ok_or(Code(TBRW_SECTION_NOT_EXIST))
}

/// What an enumeration walks: how many entries, where (for the error of a
/// start past the end), and how many to hand to one callback.
struct Extent {
    len: u64,
    section: SectionRef,
    per_chunk: usize,
}

impl Extent {
    /// A table of C structures, [`ENTRIES_PER_CALLBACK`] per callback.
    fn table(len: u64, section: impl Into<SectionRef>) -> Extent {
        Extent { len, section: section.into(), per_chunk: ENTRIES_PER_CALLBACK }
    }
}

/// One chunk an enumeration fetched: it knows how many entries it holds.
trait Chunk {
    fn count(&self) -> usize;
}

impl<T> Chunk for Vec<T> {
    fn count(&self) -> usize {
        self.len()
    }
}

/// Data records, `record_size` bytes each, in the file's mapping.
struct Records {
    bytes: tb5::SharedBytes,
    record_size: usize,
}

impl Chunk for Records {
    fn count(&self) -> usize {
        self.bytes.len() / self.record_size.max(1)
    }
}

/// The loop of every chunked enumeration (guide 5.9): `extent` measures
/// what is there, `fetch(handle, from, max)` returns the next chunk (empty
/// at the end), `call` hands it to the C callback and returns what the
/// callback returned.
///
/// `extent` and `fetch` run with the handle's lock held; `call` runs
/// without it, so a callback may call back into the API on the same handle
/// (to convert strings, say). For the same reason `fetch` re-checks what it
/// needs each time: the callback may have closed the section in between.
fn enumerate<C: Chunk>(
    ptr: *mut c_void,
    start: u64,
    extent: impl FnOnce(&mut Handle) -> R<Extent>,
    mut fetch: impl FnMut(&mut Handle, u64, usize) -> R<C>,
    mut call: impl FnMut(&mut C) -> u32,
) -> R {
    let (Extent { len, section, per_chunk }, intel) =
        with(ptr, |h| Ok((extent(h)?, h.engine.existing().is_some_and(|f| f.layout().is_intel()))))?;
    // Intel's library finds no entry in an empty process, thread or module
    // table of a file in its layout (a table this project's writer keeps
    // where Intel's leaves the section out), nor in the records of a stream
    // that has none: so does this one there.
    let table = matches!(
        section,
        SectionRef::Global(tb5::GlobalSection::ProcessThread | tb5::GlobalSection::Module)
            | SectionRef::Stream(_, tb5::StreamSection::Data)
    );
    if intel && table && len == 0 {
        return Err(Code(TBRW_ENTRY_NOT_FOUND));
    }
    if start > len {
        return Err(tb5::Error::InvalidReadStart { section, start, len }.into());
    }
    let mut at = start;
    while at < len {
        let mut chunk = with(ptr, |h| fetch(h, at, per_chunk))?;
        let n = chunk.count();
        if n == 0 {
            break;
        }
        at += n as u64;
        if !after_callback(call(&mut chunk))? {
            break;
        }
    }
    Ok(())
}

/// The size in bytes of `n` C structures, as the callbacks' `u32` size argument.
fn byte_size<T>(n: usize) -> u32 {
    (n * std::mem::size_of::<T>()) as u32
}
