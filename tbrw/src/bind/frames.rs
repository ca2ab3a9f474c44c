//! Binding the frames of a stream's stacks (docs/FORMAT.md "Stack table",
//! "Binding frames"): a frame's module is the module the bind gives its
//! address in its sample's process at its sample's time, exactly as if the
//! frame were a record of the stream with the sample's pid, tid and time
//! stamp. Nothing is stored: a node of the table is shared by every
//! process whose stacks pass through it, so a node has no one module;
//! readers bind a (sample's pid, stack) once and reuse the answer while the
//! sample's time stays inside the span [`FrameBinder::module_of`] gives.

pub use tbrw_bind::Span;
use tbrw_bind::{ModuleMap, Sample};

use super::compute::module_map;
use super::decode::Decoder;
use crate::model::error::Result;
use crate::read::Tb5File;

/// Binds frame addresses with the pid and time of their sample's record.
#[derive(Debug)]
pub struct FrameBinder {
    map: ModuleMap,
    decoder: Decoder,
}

/// A record of a stream as the bind reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindKey {
    /// The pid.
    pub pid: u32,
    /// The time stamp the bind compares module times with, if any.
    pub tsc: Option<u64>,
    sample: Sample,
}

impl FrameBinder {
    /// The binder of stream `n`'s frames: its module map and how its
    /// records give the pid and time (an error when the stream cannot be
    /// bound, as for `dobind`).
    pub fn of(file: &Tb5File, n: u32) -> Result<FrameBinder> {
        let s = file.stream(n)?;
        Ok(FrameBinder { map: module_map(file)?, decoder: Decoder::for_stream(file, &s)? })
    }

    /// What the bind reads of record `rec`.
    #[inline]
    pub fn key(&self, rec: &[u8]) -> BindKey {
        let sample = self.decoder.decode(rec);
        BindKey { pid: sample.pid, tsc: sample.tsc, sample }
    }

    /// The module index of frame `address` of the sample `key` (record
    /// `index` of the stream), and the span of times over which the same
    /// pid and address get the same answer (`None`: this sample alone).
    #[inline]
    pub fn module_of(&self, key: &BindKey, index: u64, address: u64) -> (Option<u64>, Option<Span>) {
        let s = Sample { ip: address, ..key.sample };
        let (m, span) = self.map.module_at(&s, index);
        (m.map(u64::from), span)
    }
}
