//! The bind of a stream as readers see it: [`BindView`], over the bind
//! sections stored in the file or over a [`MemoryBind`] computed by the
//! `bind` layer (which this layer must not import: it only holds the result).

use tbrw_bind::{DataBind, ModuleBind, TidBind};

use super::data_section::DataSection;
use super::file::Tb5File;
use crate::format::codec;
use crate::format::intel::codec as intel_codec;
use crate::format::intel::raw as intel_raw;
use crate::format::intel::section_type as intel_type;
use crate::format::packed_bind::{self, Widths};
use crate::format::raw::{DataBindRaw, PidRaw, Raw, TidRaw};
use crate::model::error::{Error, Result};
use crate::model::process::{Pid, Tid};
use crate::model::section::BindSection;
use crate::model::strings::StringId;

/// The tables a bind generates, as TB5 records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BindTables {
    /// The generated process table.
    pub processes: Vec<Pid<StringId>>,
    /// The generated thread table.
    pub threads: Vec<Tid<StringId>>,
    /// One per module.
    pub module_binds: Vec<ModuleBind>,
    /// One per thread.
    pub tid_binds: Vec<TidBind>,
}

/// A bind computed in memory (a read-only file, or before a commit).
///
/// The per-record binds are held packed as the file stores them (module
/// and thread index in the narrowest widths, docs/FORMAT.md): 6 bytes a
/// record or less for most files, where `DATA_BIND_STRUCT`s take 24.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryBind {
    entries: Vec<u8>,
    widths: Widths,
    /// The tables.
    pub tables: BindTables,
}

impl MemoryBind {
    /// A bind of packed `entries` (see [`Widths::encode`]).
    pub(crate) fn from_packed(entries: Vec<u8>, widths: Widths, tables: BindTables) -> MemoryBind {
        MemoryBind { entries, widths, tables }
    }

    /// The widths and the packed entries, as the packed data binds section stores them.
    pub(crate) fn packed(&self) -> (Widths, &[u8]) {
        (self.widths, &self.entries)
    }

    /// The number of data binds (= records of the stream).
    pub fn len(&self) -> u64 {
        (self.entries.len() / self.widths.entry_size()) as u64
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The bind of record `i`.
    pub fn data_bind(&self, i: u64) -> Option<DataBind> {
        BindView::Memory(self).data_bind(i)
    }

    /// Every record's bind, in record order.
    pub fn to_vec(&self) -> Vec<DataBind> {
        let mut out = Vec::new();
        BindView::Memory(self).data_binds(0, usize::MAX, &mut out);
        out
    }

    /// The process index of thread `t` (`u64::MAX` past the table).
    fn pid_of(&self, t: u64) -> u64 {
        usize::try_from(t).ok().and_then(|t| self.tables.tid_binds.get(t)).map_or(u64::MAX, |b| b.pid_index)
    }
}

/// The bind of a stream, stored in the file or computed in memory.
#[derive(Clone, Copy, Debug)]
pub enum BindView<'a> {
    /// Stored in the file: read from the mapping.
    Stored {
        /// The per-record binds.
        data: StoredData<'a>,
        /// `MODULE_BIND_STRUCT`s.
        modules: &'a [u8],
        /// Generated processes (`PidRaw`).
        processes: &'a [u8],
        /// Generated threads (`TidRaw`).
        threads: &'a [u8],
        /// `TID_BIND_STRUCT`s.
        tid_binds: &'a [u8],
    },
    /// Computed in memory.
    Memory(&'a MemoryBind),
    /// Stored in Intel's layout: the bind streams VTune and `TBRW_dobind`
    /// write (docs/FORMAT.md, "Binds"), read from the mapping.
    Intel(IntelBind<'a>),
}

/// A bind stored in Intel's layout: its three bind streams' records, and
/// the file's own process and thread tables the indexes name.
#[derive(Clone, Copy)]
pub struct IntelBind<'a> {
    /// Per record: module, process, thread index (u64), `data_stride` bytes apart.
    data: &'a [u8],
    data_stride: usize,
    /// Per module: its process index (u64), 8 bytes apart.
    modules: &'a [u8],
    /// Per thread: its process index (u64).
    tid_binds: &'a [u8],
    /// The file's process (0x1D) and thread (0x1E) records, and their strides.
    pids: (&'a [u8], usize),
    tids: (&'a [u8], usize),
}

impl std::fmt::Debug for IntelBind<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntelBind")
            .field("records", &(self.data.len() / self.data_stride.max(1)))
            .field("modules", &(self.modules.len() / PID_INDEX_SIZE))
            .field("threads", &(self.tid_binds.len() / PID_INDEX_SIZE))
            .finish()
    }
}

impl IntelBind<'_> {
    fn process_count(&self) -> u64 {
        (self.pids.0.len() / self.pids.1.max(1)) as u64
    }

    fn thread_count(&self) -> u64 {
        (self.tids.0.len() / self.tids.1.max(1)) as u64
    }

    fn process(&self, i: u64) -> Option<Pid<StringId>> {
        let at = usize::try_from(i).ok()?.checked_mul(self.pids.1)?;
        intel_raw::PidRaw::decode(self.pids.0.get(at..)?).map(|r| intel_codec::decode_pid(&r))
    }

    fn thread(&self, i: u64) -> Option<Tid<StringId>> {
        let at = usize::try_from(i).ok()?.checked_mul(self.tids.1)?;
        intel_raw::TidRaw::decode(self.tids.0.get(at..)?).map(|r| intel_codec::decode_tid(&r))
    }

    fn data_bind(&self, i: u64) -> Option<DataBind> {
        let at = usize::try_from(i).ok()?.checked_mul(self.data_stride)?;
        let e = self.data.get(at..at.checked_add(24)?)?;
        let word = |k: usize| u64::from_le_bytes(e[8 * k..8 * k + 8].try_into().unwrap_or_default());
        Some(DataBind { module_index: word(0), pid_index: word(1), tid_index: word(2) })
    }
}

/// The per-record binds of a stored bind.
#[derive(Clone, Copy, Debug)]
pub enum StoredData<'a> {
    /// `DATA_BIND_STRUCT`s, 24 bytes each (the bind data section).
    Structs(&'a [u8]),
    /// The packed data binds section's entries (after its head).
    Packed(PackedData<'a>),
}

/// The entries of a packed data binds section: module and thread index per
/// record, the process index being the thread's (docs/FORMAT.md).
#[derive(Clone, Copy, Debug)]
pub struct PackedData<'a> {
    entries: &'a [u8],
    widths: Widths,
}

/// Bytes of a module or thread bind entry (a `u64` process index).
const PID_INDEX_SIZE: usize = 8;

/// The `u64` process index of entry `i` of a module or thread bind section.
fn pid_index_at(b: &[u8], i: usize) -> Option<u64> {
    let size = PID_INDEX_SIZE;
    b.get(i.checked_mul(size)?..)?.get(..size).map(|x| u64::from_le_bytes(x.try_into().unwrap_or_default()))
}

/// The process index of thread `t` in a stored thread binds section; a
/// thread index past the table (a damaged file) binds to no process.
fn thread_pid(tid_binds: &[u8], t: u64) -> u64 {
    usize::try_from(t).ok().and_then(|t| pid_index_at(tid_binds, t)).unwrap_or(u64::MAX)
}

impl<'a> BindView<'a> {
    pub(crate) fn stored(file: &'a Tb5File, n: u32) -> Result<Option<BindView<'a>>> {
        if file.intel().is_some() {
            return Self::intel(file, n);
        }
        if file.bind_entry(n, BindSection::Modules).is_none() {
            return Ok(None);
        }
        // Every reader hands these out by the stream's record count and the
        // table sizes: a bind that does not match them is refused here, before
        // any entry is read, rather than read past.
        let records = file.stream(n)?.data()?.map_or(0, |d| d.len());
        Self::stored_sections(file, n, records)
    }

    /// The bind sections of stream `n` of `file` (this project's layout),
    /// for a stream of `records` records (which may be another file's: an
    /// append's work file holds the bind of a stream of the file appended to).
    pub(crate) fn stored_sections(file: &'a Tb5File, n: u32, records: u64) -> Result<Option<BindView<'a>>> {
        if file.bind_entry(n, BindSection::Modules).is_none() {
            return Ok(None);
        }
        let get = |b| file.bind_bytes(n, b).map(Option::unwrap_or_default);
        let at = |b: BindSection| {
            let e = file.bind_entry(n, b).expect("read above");
            file.loc(e.section, e.raw.offset)
        };
        let data = match file.bind_bytes(n, BindSection::PackedData)? {
            Some(bytes) => {
                let widths =
                    Widths::from_head(bytes).map_err(|why| Error::malformed(at(BindSection::PackedData), why))?;
                let entries = &bytes[packed_bind::HEAD_SIZE..];
                let count = file.bind_entry(n, BindSection::PackedData).map_or(0, |e| e.raw.count);
                if count != records || entries.len() as u64 != records.saturating_mul(widths.entry_size() as u64) {
                    return Err(Error::malformed(
                        at(BindSection::PackedData),
                        format!(
                            "the packed data binds ({count} entries, {} bytes of {}-byte entries) do not hold \
                             the binds of {records} records",
                            entries.len(),
                            widths.entry_size()
                        ),
                    ));
                }
                StoredData::Packed(PackedData { entries, widths })
            }
            None => {
                let data = get(BindSection::Data)?;
                let binds = (data.len() / DataBindRaw::SIZE) as u64;
                if binds != records || data.len() % DataBindRaw::SIZE != 0 {
                    return Err(Error::malformed(
                        at(BindSection::Data),
                        format!("the stored bind holds {binds} data binds for {records} records"),
                    ));
                }
                StoredData::Structs(data)
            }
        };
        let (threads, tid_binds) = (get(BindSection::Threads)?, get(BindSection::TidBinds)?);
        let tid_size = PID_INDEX_SIZE;
        if threads.len() / TidRaw::SIZE != tid_binds.len() / tid_size {
            return Err(Error::malformed(
                at(BindSection::TidBinds),
                format!(
                    "the stored bind holds {} thread binds for {} threads",
                    tid_binds.len() / tid_size,
                    threads.len() / TidRaw::SIZE
                ),
            ));
        }
        Ok(Some(BindView::Stored {
            data,
            modules: get(BindSection::Modules)?,
            processes: get(BindSection::Processes)?,
            threads,
            tid_binds,
        }))
    }

    /// The bind of stream `n` of an Intel file, if it is bound: the
    /// stream's records and the bind's entries must match in number.
    fn intel(file: &'a Tb5File, n: u32) -> Result<Option<BindView<'a>>> {
        let Some(index) = file.intel() else { return Ok(None) };
        let Some(streams) = super::intel::find_bind(index, n) else { return Ok(None) };
        let at = |e: Option<super::intel::IntelEntry>| {
            file.loc(crate::model::section::SectionRef::WholeStream(streams.data_stream), e.map_or(0, |e| e.offset))
        };
        let records = file.stream(n)?.data()?.map_or(0, |d| d.len());
        let bind_data = file.stream(streams.data_stream)?.data()?;
        let data_stride = bind_data.map_or(0, |d| d.record_size());
        let binds = bind_data.map_or(0, |d| d.len());
        if binds != records || (binds > 0 && data_stride < 24) {
            return Err(Error::malformed(
                at(streams.data),
                format!(
                    "the bind of stream {n} (stream {}) holds {binds} entries of {data_stride} bytes for {records} records",
                    streams.data_stream
                ),
            ));
        }
        let bytes = |e: Option<super::intel::IntelEntry>| {
            let b = e.map_or(&[][..], |e| &file.bytes()[e.range()]);
            &b[..b.len() / PID_INDEX_SIZE * PID_INDEX_SIZE]
        };
        let table = |t, min, what| -> Result<(&'a [u8], usize)> {
            let Some(e) = index.global(t) else { return Ok((&[][..], min)) };
            let r = super::intel::records(file.path(), file.bytes(), e, min, what)?;
            Ok((&r.bytes[..r.stride * r.count as usize], r.stride))
        };
        Ok(Some(BindView::Intel(IntelBind {
            data: bind_data.map_or(&[][..], |d| d.as_bytes()),
            data_stride,
            modules: bytes(streams.modules),
            tid_binds: bytes(streams.threads),
            pids: table(intel_type::PIDS, intel_raw::PidRaw::SIZE, "processes")?,
            tids: table(intel_type::TIDS, intel_raw::TidRaw::SIZE, "threads")?,
        })))
    }

    /// The number of data binds (= records of the stream).
    pub fn len(&self) -> u64 {
        match self {
            BindView::Intel(b) => (b.data.len() / b.data_stride.max(1)) as u64,
            BindView::Stored { data: StoredData::Structs(data), .. } => (data.len() / DataBindRaw::SIZE) as u64,
            BindView::Stored { data: StoredData::Packed(p), .. } => (p.entries.len() / p.widths.entry_size()) as u64,
            BindView::Memory(m) => m.len(),
        }
    }

    /// The section the per-record binds are stored in; `None` in memory.
    pub fn data_section(&self) -> Option<BindSection> {
        match self {
            BindView::Stored { data: StoredData::Structs(_), .. } => Some(BindSection::Data),
            BindView::Stored { data: StoredData::Packed(_), .. } => Some(BindSection::PackedData),
            BindView::Memory(_) | BindView::Intel(_) => None,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bind of record `i`.
    pub fn data_bind(&self, i: u64) -> Option<DataBind> {
        if let BindView::Intel(b) = self {
            return b.data_bind(i);
        }
        let i = usize::try_from(i).ok()?;
        match self {
            BindView::Stored { data: StoredData::Structs(data), .. } => {
                let r = DataBindRaw::decode(data.get(i.checked_mul(DataBindRaw::SIZE)?..)?)?;
                Some(DataBind { module_index: r.module_index, pid_index: r.pid_index, tid_index: r.tid_index })
            }
            BindView::Stored { data: StoredData::Packed(p), tid_binds, .. } => {
                let w = p.widths;
                let (module_index, tid_index) = w.decode(p.entries.get(i.checked_mul(w.entry_size())?..)?)?;
                Some(DataBind { module_index, pid_index: thread_pid(tid_binds, tid_index), tid_index })
            }
            BindView::Memory(m) => {
                let w = m.widths;
                let (module_index, tid_index) = w.decode(m.entries.get(i.checked_mul(w.entry_size())?..)?)?;
                Some(DataBind { module_index, pid_index: m.pid_of(tid_index), tid_index })
            }
            BindView::Intel(_) => None,
        }
    }

    /// The packed entries of records `start..start + max` (or to the end)
    /// and their widths, when the bind is packed (stored by this project
    /// or made in memory): what a writer converting every entry reads
    /// without going through [`DataBind`]s.
    pub(crate) fn packed_range(&self, start: u64, max: usize) -> Option<(Widths, &'a [u8])> {
        let end = self.len().min(start.saturating_add(max as u64));
        let (widths, entries) = match *self {
            BindView::Stored { data: StoredData::Packed(p), .. } => (p.widths, p.entries),
            BindView::Memory(m) => (m.widths, &m.entries[..]),
            _ => return None,
        };
        let size = widths.entry_size();
        entries.get(start.min(end) as usize * size..end as usize * size).map(|e| (widths, e))
    }

    /// Appends the binds of records `start..start + max` (or to the end) to `out`.
    pub fn data_binds(&self, start: u64, max: usize, out: &mut Vec<DataBind>) {
        let end = self.len().min(start.saturating_add(max as u64));
        match self {
            BindView::Stored { data: StoredData::Packed(p), tid_binds, .. } => {
                let size = p.widths.entry_size();
                let (s, e) = (start.min(end) as usize * size, end as usize * size);
                unpack(p.widths, &p.entries[s..e], |t| thread_pid(tid_binds, t), out);
            }
            BindView::Memory(m) => {
                let size = m.widths.entry_size();
                let (s, e) = (start.min(end) as usize * size, end as usize * size);
                unpack(m.widths, &m.entries[s..e], |t| m.pid_of(t), out);
            }
            // One pass over the entries (what an enumeration of a bound
            // stream runs per record), not a lookup per record.
            BindView::Intel(b) if b.data_stride >= 24 => {
                let (s, e) = (start.min(end) as usize * b.data_stride, end as usize * b.data_stride);
                let word = |e: &[u8], k: usize| u64::from_le_bytes(e[8 * k..8 * k + 8].try_into().unwrap_or_default());
                out.extend(b.data.get(s..e).unwrap_or_default().chunks_exact(b.data_stride).map(|e| DataBind {
                    module_index: word(e, 0),
                    pid_index: word(e, 1),
                    tid_index: word(e, 2),
                }));
            }
            BindView::Stored { data: StoredData::Structs(_), .. } | BindView::Intel(_) => {
                out.extend((start..end).filter_map(|i| self.data_bind(i)))
            }
        }
    }

    /// The records of `data` from `start` on, in chunks of at most
    /// `per_chunk`, each with the binds of its records: what
    /// `TBRW_bind_enumerate_data` hands to its callback.
    pub fn chunks<'d>(
        &self,
        data: &DataSection<'d>,
        start: u64,
        per_chunk: usize,
    ) -> Result<impl Iterator<Item = (&'d [u8], Vec<DataBind>)> + use<'a, 'd>> {
        if data.len() != self.len() {
            return Err(Error::bad(format!("{} binds for {} records", self.len(), data.len())));
        }
        let rs = data.record_size().max(1);
        let mut next = start;
        let view = *self;
        Ok(data.chunks_from(start, per_chunk)?.map(move |records| {
            let n = records.len() / rs;
            let mut binds = Vec::with_capacity(n);
            view.data_binds(next, n, &mut binds);
            next += n as u64;
            (records, binds)
        }))
    }

    /// The number of generated processes.
    pub fn process_count(&self) -> u64 {
        match self {
            BindView::Stored { processes, .. } => (processes.len() / PidRaw::SIZE) as u64,
            BindView::Memory(m) => m.tables.processes.len() as u64,
            BindView::Intel(b) => b.process_count(),
        }
    }

    /// Generated process `i`.
    pub fn process(&self, i: u64) -> Option<Pid<StringId>> {
        let i = usize::try_from(i).ok()?;
        match self {
            BindView::Stored { processes, .. } => {
                PidRaw::decode(processes.get(i.checked_mul(PidRaw::SIZE)?..)?).map(codec::decode_pid)
            }
            BindView::Memory(m) => m.tables.processes.get(i).cloned(),
            BindView::Intel(b) => b.process(i as u64),
        }
    }

    /// The number of generated threads.
    pub fn thread_count(&self) -> u64 {
        match self {
            BindView::Stored { threads, .. } => (threads.len() / TidRaw::SIZE) as u64,
            BindView::Memory(m) => m.tables.threads.len() as u64,
            BindView::Intel(b) => b.thread_count(),
        }
    }

    /// Generated thread `i`.
    pub fn thread(&self, i: u64) -> Option<Tid<StringId>> {
        let i = usize::try_from(i).ok()?;
        match self {
            BindView::Stored { threads, .. } => {
                TidRaw::decode(threads.get(i.checked_mul(TidRaw::SIZE)?..)?).map(codec::decode_tid)
            }
            BindView::Memory(m) => m.tables.threads.get(i).cloned(),
            BindView::Intel(b) => b.thread(i as u64),
        }
    }

    /// The number of module binds (= modules of the file).
    pub fn module_bind_count(&self) -> u64 {
        match self {
            BindView::Stored { modules, .. } | BindView::Intel(IntelBind { modules, .. }) => {
                (modules.len() / PID_INDEX_SIZE) as u64
            }
            BindView::Memory(m) => m.tables.module_binds.len() as u64,
        }
    }

    /// The bind of module `i`.
    pub fn module_bind(&self, i: u64) -> Option<ModuleBind> {
        match self {
            BindView::Stored { modules, .. } | BindView::Intel(IntelBind { modules, .. }) => {
                pid_index_at(modules, usize::try_from(i).ok()?).map(|p| ModuleBind { pid_index: p })
            }
            BindView::Memory(m) => m.tables.module_binds.get(usize::try_from(i).ok()?).copied(),
        }
    }

    /// The bind of thread `i`.
    pub fn tid_bind(&self, i: u64) -> Option<TidBind> {
        match self {
            BindView::Stored { tid_binds, .. } | BindView::Intel(IntelBind { tid_binds, .. }) => {
                pid_index_at(tid_binds, usize::try_from(i).ok()?).map(|p| TidBind { pid_index: p })
            }
            BindView::Memory(m) => m.tables.tid_binds.get(usize::try_from(i).ok()?).copied(),
        }
    }
}

/// Appends the binds of packed `entries` to `out`: one pass with the
/// widths fixed at compile time, so each index is one load (this is what
/// an enumeration of a bound stream runs per record).
fn unpack(w: Widths, entries: &[u8], pid_of: impl Fn(u64) -> u64, out: &mut Vec<DataBind>) {
    fn run<const M: usize, const T: usize>(entries: &[u8], pid_of: impl Fn(u64) -> u64, out: &mut Vec<DataBind>) {
        out.reserve(entries.len() / (M + T));
        for e in entries.chunks_exact(M + T) {
            let (module_index, t) = packed_bind::entry_at::<M, T>(e);
            out.push(DataBind { module_index, pid_index: pid_of(t), tid_index: t });
        }
    }
    packed_bind::with_widths!(w, run(entries, pid_of, out))
}
