//! The tables of the global sections that hold many entries: modules, and
//! processes with threads ([`Tb5File::modules`], [`Tb5File::processes`]).
//! Entries are decoded by index on access.
//!
//! Imports the file and the bind view's generated tables; neither imports this.

use super::bind_view::BindTables;
use super::file::Tb5File;
use super::intel;
use crate::format::codec;
use crate::format::intel::codec as intel_codec;
use crate::format::intel::raw as intel_raw;
use crate::format::intel::section_type as intel_type;
use crate::format::raw::{ModuleRaw, PidRaw, ProcessThreadRaw, Raw, TidRaw};
use crate::model::error::{Error, Location, Result};
use crate::model::module::Module;
use crate::model::process::{Pid, Tid};
use crate::model::section::GlobalSection;
use crate::model::strings::StringId;

/// Which layout a table's records are in, and their stride.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecordFormat {
    /// This project's `PidRaw`, `TidRaw`, `ModuleRaw`.
    Project,
    /// Intel's records, `stride` bytes apart (at least the structure's size).
    Intel { stride: usize },
}

impl RecordFormat {
    fn stride(self, project: usize) -> usize {
        match self {
            RecordFormat::Project => project,
            RecordFormat::Intel { stride } => stride,
        }
    }
}

/// Record `i` of `bytes` (records `stride` apart), if it is whole.
fn record_at(bytes: &[u8], i: u64, stride: usize) -> Option<&[u8]> {
    let at = usize::try_from(i).ok()?.checked_mul(stride)?;
    bytes.get(at..at.checked_add(stride)?)
}

/// The module section of a file: modules decoded by index on access.
#[derive(Clone, Copy)]
pub struct ModuleTable<'f> {
    bytes: &'f [u8],
    len: u64,
    base: u64,
    format: RecordFormat,
    file: &'f Tb5File,
}

impl<'f> ModuleTable<'f> {
    /// `bytes` holds whole modules; `base` is their file offset.
    pub(crate) fn new(bytes: &'f [u8], base: u64, file: &'f Tb5File) -> Self {
        ModuleTable { bytes, len: (bytes.len() / ModuleRaw::SIZE) as u64, base, format: RecordFormat::Project, file }
    }

    /// The number of modules.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Module `index` (strings as ids).
    pub fn get(&self, index: u64) -> Result<Module<StringId>> {
        if index >= self.len {
            return Err(Error::EntryNotFound { section: GlobalSection::Module.into(), index, len: self.len });
        }
        let stride = self.format.stride(ModuleRaw::SIZE);
        let record = record_at(self.bytes, index, stride);
        let module = match self.format {
            RecordFormat::Project => record.and_then(ModuleRaw::decode).map(codec::decode_module),
            RecordFormat::Intel { .. } => {
                record.and_then(intel_raw::ModuleRaw::decode).map(|r| intel_codec::decode_module(&r))
            }
        };
        module.ok_or_else(|| {
            let loc = Location { record: Some(index), ..self.file.loc(GlobalSection::Module.into(), self.base) };
            Error::malformed(loc, "undecodable module")
        })
    }

    /// Every module in order.
    pub fn iter(&self) -> impl Iterator<Item = Result<Module<StringId>>> + '_ {
        (0..self.len).map(|i| self.get(i))
    }
}

/// The process/thread section of a file, or the tables a bind generated
/// in memory standing in for it (a file without the section, bound
/// read-only: guide 6.2 has the API generate them).
#[derive(Clone, Copy)]
pub struct ProcessTable<'f> {
    source: TableSource<'f>,
}

#[derive(Clone, Copy)]
enum TableSource<'f> {
    Stored { pids: &'f [u8], tids: &'f [u8], pid_format: RecordFormat, tid_format: RecordFormat },
    Generated(&'f BindTables),
}

impl<'f> ProcessTable<'f> {
    /// `pids` and `tids` hold whole records.
    pub(crate) fn new(pids: &'f [u8], tids: &'f [u8]) -> Self {
        Self::stored(pids, RecordFormat::Project, tids, RecordFormat::Project)
    }

    /// `pids` and `tids` hold whole records of their formats.
    pub(crate) fn stored(pids: &'f [u8], pid_format: RecordFormat, tids: &'f [u8], tid_format: RecordFormat) -> Self {
        ProcessTable { source: TableSource::Stored { pids, tids, pid_format, tid_format } }
    }

    /// The processes and threads a bind generated.
    pub fn generated(tables: &'f BindTables) -> Self {
        ProcessTable { source: TableSource::Generated(tables) }
    }

    /// The number of processes.
    pub fn pid_count(&self) -> u64 {
        match self.source {
            TableSource::Stored { pids, pid_format, .. } => (pids.len() / pid_format.stride(PidRaw::SIZE)) as u64,
            TableSource::Generated(t) => t.processes.len() as u64,
        }
    }

    /// The number of threads.
    pub fn tid_count(&self) -> u64 {
        match self.source {
            TableSource::Stored { tids, tid_format, .. } => (tids.len() / tid_format.stride(TidRaw::SIZE)) as u64,
            TableSource::Generated(t) => t.threads.len() as u64,
        }
    }

    /// Process `index`, if it exists.
    pub fn pid(&self, index: u64) -> Option<Pid<StringId>> {
        match self.source {
            TableSource::Stored { pids, pid_format: RecordFormat::Project, .. } => {
                PidRaw::decode(record_at(pids, index, PidRaw::SIZE)?).map(codec::decode_pid)
            }
            TableSource::Stored { pids, pid_format: RecordFormat::Intel { stride }, .. } => {
                intel_raw::PidRaw::decode(record_at(pids, index, stride)?).map(|r| intel_codec::decode_pid(&r))
            }
            TableSource::Generated(t) => t.processes.get(usize::try_from(index).ok()?).cloned(),
        }
    }

    /// Thread `index`, if it exists.
    pub fn tid(&self, index: u64) -> Option<Tid<StringId>> {
        match self.source {
            TableSource::Stored { tids, tid_format: RecordFormat::Project, .. } => {
                TidRaw::decode(record_at(tids, index, TidRaw::SIZE)?).map(codec::decode_tid)
            }
            TableSource::Stored { tids, tid_format: RecordFormat::Intel { stride }, .. } => {
                intel_raw::TidRaw::decode(record_at(tids, index, stride)?).map(|r| intel_codec::decode_tid(&r))
            }
            TableSource::Generated(t) => t.threads.get(usize::try_from(index).ok()?).cloned(),
        }
    }

    /// Every process in order.
    pub fn pids(&self) -> impl Iterator<Item = Pid<StringId>> + '_ {
        (0..self.pid_count()).filter_map(|i| self.pid(i))
    }

    /// Every thread in order.
    pub fn tids(&self) -> impl Iterator<Item = Tid<StringId>> + '_ {
        (0..self.tid_count()).filter_map(|i| self.tid(i))
    }
}

/// The tables of a file.
impl Tb5File {
    /// The module section.
    pub fn modules(&self) -> Result<Option<ModuleTable<'_>>> {
        if let Some(i) = self.intel() {
            let Some(e) = i.global(intel_type::MODULES) else { return Ok(None) };
            let r = intel::records(self.path(), self.bytes(), e, intel_raw::ModuleRaw::SIZE, "modules")?;
            let bytes = &r.bytes[..r.stride * r.count as usize];
            let format = RecordFormat::Intel { stride: r.stride };
            return Ok(Some(ModuleTable { bytes, len: r.count, base: r.base, format, file: self }));
        }
        let Some(e) = self.global(GlobalSection::Module) else { return Ok(None) };
        let mut c = self.cursor(e)?;
        let n = c.check_count(e.raw.count, ModuleRaw::SIZE, "modules")?;
        let bytes = c.bytes(n * ModuleRaw::SIZE, "modules")?;
        c.finish("the modules")?;
        Ok(Some(ModuleTable::new(bytes, e.raw.offset, self)))
    }

    /// The process/thread section.
    pub fn processes(&self) -> Result<Option<ProcessTable<'_>>> {
        if let Some(i) = self.intel() {
            if !i.has_global(GlobalSection::ProcessThread) {
                return Ok(None);
            }
            // Processes (0x1D) and threads (0x1E) are two sections; either may be missing.
            let table = |t, min, what| -> Result<(&[u8], RecordFormat)> {
                let Some(e) = i.global(t) else { return Ok((&[], RecordFormat::Intel { stride: min })) };
                let r = intel::records(self.path(), self.bytes(), e, min, what)?;
                Ok((&r.bytes[..r.stride * r.count as usize], RecordFormat::Intel { stride: r.stride }))
            };
            let (pids, pf) = table(intel_type::PIDS, intel_raw::PidRaw::SIZE, "processes")?;
            let (tids, tf) = table(intel_type::TIDS, intel_raw::TidRaw::SIZE, "threads")?;
            return Ok(Some(ProcessTable::stored(pids, pf, tids, tf)));
        }
        let Some(e) = self.global(GlobalSection::ProcessThread) else { return Ok(None) };
        let mut c = self.cursor(e)?;
        let head: ProcessThreadRaw = c.read("process/thread header")?;
        let np = c.check_count(head.pid_count, PidRaw::SIZE, "processes")?;
        let pids = c.bytes(np * PidRaw::SIZE, "processes")?;
        let nt = c.check_count(head.tid_count, TidRaw::SIZE, "threads")?;
        let tids = c.bytes(nt * TidRaw::SIZE, "threads")?;
        c.finish("the threads")?;
        Ok(Some(ProcessTable::new(pids, tids)))
    }
}
