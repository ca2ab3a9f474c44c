//! Binding the streams of a TB5 file (guide 3.3, 5.10, 6.1): samples are
//! read through the stream's data descriptor, modules from the module
//! section, and `tbrw-bind` does the work (rules: docs/BIND.md).
//!
//! A bind is stored as five sections of the stream ([`BindSection`]) by an
//! append, or kept in memory when the file is open read-only. [`BindView`]
//! (in the read layer) reads either. The engine's `dobind`, `is_bound`,
//! `unbind` and `bound` are what the C API's bind functions call.
//!
//! The top layer: imports `model`, `format`, `read` and `write`; nothing
//! imports it.
//!
//! [`BindSection`]: crate::BindSection

use std::path::Path;

use tbrw_bind::{DataBind, ModuleBind, TidBind};

use crate::model::error::Result;
use crate::read::{BindView, MemoryBind};
use crate::write::writer::Tb5Writer;

mod compute;
mod decode;
mod frames;
mod session;

pub use compute::{bind_in_memory, bind_in_memory_on, bind_threads};
pub use frames::{BindKey, FrameBinder, Span};

/// Size of one `DATA_BIND_STRUCT` (`TBRW_get_size_of_data_bind_entry`).
pub const DATA_BIND_SIZE: u32 = std::mem::size_of::<DataBind>() as u32;
/// Size of one `MODULE_BIND_STRUCT` (`TBRW_get_size_of_module_bind_entry`).
pub const MODULE_BIND_SIZE: u32 = std::mem::size_of::<ModuleBind>() as u32;
/// Size of one `TID_BIND_STRUCT` (`TBRW_get_size_of_tid_bind_entry`).
pub const TID_BIND_SIZE: u32 = std::mem::size_of::<TidBind>() as u32;

/// The bind of a stream as a reader wants it: the stored one when the file
/// has it, else one made now in memory (the reports' and exports' rule).
#[derive(Debug)]
pub enum Bound<'a> {
    /// The bind stored in the file.
    Stored(BindView<'a>),
    /// Made in memory because the file has none for the stream.
    Made(MemoryBind),
}

impl<'a> Bound<'a> {
    /// The stored bind of stream `stream` of `file`, or one made in memory.
    pub fn of(file: &'a crate::read::Tb5File, stream: u32) -> Result<Bound<'a>> {
        Ok(match file.stream(stream)?.bind_view()? {
            Some(v) => Bound::Stored(v),
            None => Bound::Made(bind_in_memory(file, stream)?),
        })
    }

    /// The bind, to read.
    pub fn view(&self) -> BindView<'_> {
        match self {
            Bound::Stored(v) => *v,
            Bound::Made(m) => BindView::Memory(m),
        }
    }
}

/// Binds stream `stream` of the file at `path` and stores the result
/// (an atomic append). A bound stream is left as it is.
pub fn dobind(path: impl AsRef<Path>, stream: u32) -> Result<()> {
    let mut w = Tb5Writer::append(path)?;
    w.dobind(stream)?;
    w.close()
}

/// Removes the stored bind of a stream of the file at `path`.
pub fn unbind(path: impl AsRef<Path>, stream: u32) -> Result<()> {
    let mut w = Tb5Writer::append(path)?;
    w.unbind(stream)?;
    w.close()
}
