//! The tables of the global sections that hold many entries: modules, and
//! processes with threads ([`Tb5File::modules`], [`Tb5File::processes`]).
//! Entries are decoded by index on access.
//!
//! Imports the file and the bind view's generated tables; neither imports this.

use super::bind_view::BindTables;
use super::file::Tb5File;
use crate::format::codec;
use crate::format::raw::{ModuleRaw, PidRaw, ProcessThreadRaw, Raw, TidRaw};
use crate::model::error::{Error, Location, Result};
use crate::model::module::Module;
use crate::model::process::{Pid, Tid};
use crate::model::section::GlobalSection;
use crate::model::strings::StringId;

/// The module section of a file: modules decoded by index on access.
#[derive(Clone, Copy)]
pub struct ModuleTable<'f> {
    bytes: &'f [u8],
    len: u64,
    base: u64,
    file: &'f Tb5File,
}

impl<'f> ModuleTable<'f> {
    /// `bytes` holds whole modules; `base` is their file offset.
    pub(crate) fn new(bytes: &'f [u8], base: u64, file: &'f Tb5File) -> Self {
        ModuleTable { bytes, len: (bytes.len() / ModuleRaw::SIZE) as u64, base, file }
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
        let at = index as usize * ModuleRaw::SIZE;
        ModuleRaw::decode(&self.bytes[at..]).map(codec::decode_module).ok_or_else(|| {
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
    Stored { pids: &'f [u8], tids: &'f [u8] },
    Generated(&'f BindTables),
}

impl<'f> ProcessTable<'f> {
    /// `pids` and `tids` hold whole records.
    pub(crate) fn new(pids: &'f [u8], tids: &'f [u8]) -> Self {
        ProcessTable { source: TableSource::Stored { pids, tids } }
    }

    /// The processes and threads a bind generated.
    pub fn generated(tables: &'f BindTables) -> Self {
        ProcessTable { source: TableSource::Generated(tables) }
    }

    /// The number of processes.
    pub fn pid_count(&self) -> u64 {
        match self.source {
            TableSource::Stored { pids, .. } => (pids.len() / PidRaw::SIZE) as u64,
            TableSource::Generated(t) => t.processes.len() as u64,
        }
    }

    /// The number of threads.
    pub fn tid_count(&self) -> u64 {
        match self.source {
            TableSource::Stored { tids, .. } => (tids.len() / TidRaw::SIZE) as u64,
            TableSource::Generated(t) => t.threads.len() as u64,
        }
    }

    /// Process `index`, if it exists.
    pub fn pid(&self, index: u64) -> Option<Pid<StringId>> {
        let i = usize::try_from(index).ok()?;
        match self.source {
            TableSource::Stored { pids, .. } => {
                PidRaw::decode(pids.get(i.checked_mul(PidRaw::SIZE)?..)?).map(codec::decode_pid)
            }
            TableSource::Generated(t) => t.processes.get(i).cloned(),
        }
    }

    /// Thread `index`, if it exists.
    pub fn tid(&self, index: u64) -> Option<Tid<StringId>> {
        let i = usize::try_from(index).ok()?;
        match self.source {
            TableSource::Stored { tids, .. } => {
                TidRaw::decode(tids.get(i.checked_mul(TidRaw::SIZE)?..)?).map(codec::decode_tid)
            }
            TableSource::Generated(t) => t.threads.get(i).cloned(),
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
        let Some(e) = self.global(GlobalSection::Module) else { return Ok(None) };
        let mut c = self.cursor(e)?;
        let n = c.check_count(e.raw.count, ModuleRaw::SIZE, "modules")?;
        let bytes = c.bytes(n * ModuleRaw::SIZE, "modules")?;
        c.finish("the modules")?;
        Ok(Some(ModuleTable::new(bytes, e.raw.offset, self)))
    }

    /// The process/thread section.
    pub fn processes(&self) -> Result<Option<ProcessTable<'_>>> {
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
