//! The conversion of one perf recording: a [`Converter`] holds what the
//! import keeps across records (the events' layouts, the side-band
//! [`Tables`], the stack table, the batch of encoded records, the
//! statistics), and has one `handle_*` method per kind of perf record.
//! [`convert`] drives it: the global sections first, then every record in
//! perf's time order, then stream 0's tables and the file's modules,
//! processes and threads. What an import takes ([`PerfOptions`]) and
//! reports ([`ImportStats`]) are here too. It reads nothing itself (the entry points in
//! [`super::stream`] open the input) and imports nothing above
//! `tbrw`, `tbrw-schema` and `tbrw-symbols`.
//!
//! A sample becomes one stream-0 record per event perf counts it for: one,
//! or, when it reads a group (`PERF_SAMPLE_READ`, leader sampling), one per
//! member whose count grew since that member's previous sample, weighed
//! by the growth (perf's `deliver_sample_value`). A `--call-graph dwarf`
//! sample's user frames are unwound here ([`super::unwind`]) and follow
//! its kernel frames in its stack.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::Read;
use std::rc::Rc;

use linux_perf_data::{AttributeDescription, Feature, PerfFile, PerfFileRecord, PerfRecordIter};
use linux_perf_event_reader::{
    CommOrExecRecord, CpuMode, Endianness, EventRecord, ForkOrExitRecord, Mmap2FileId, Mmap2Record, MmapRecord,
    PerfClock, RawEventRecord, RecordParseInfo, RecordType,
};
use tbrw::*;

use super::events::{perf_name, sample_id, tracepoint_names};
use super::layout::{clock_name, descriptor, event_of, period_width, Widths};
use super::map::{MmapEvent, Tables, UNPLACED};
use super::sample::{self, bits, ReadValues, Sample};
use super::unwind::DwarfUnwinding;
use crate::error::{ImportError, Place};
use crate::globals::write_globals;
use crate::progress::Progress;

/// perf marks context switches inside a chain with values from here up.
const PERF_CONTEXT_MAX: u64 = 0xffff_ffff_ffff_f001;

/// Encoded records are handed to the data section in batches of about this size.
const BATCH: usize = 1 << 20;

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportStats {
    /// Samples written to stream 0.
    pub samples: u64,
    /// Call-chain frames of the samples' records (perf's context markers
    /// left out; a group member's record counts its sample's frames).
    pub frames: u64,
    /// Nodes of the stack table: the distinct (caller, frame) pairs.
    pub stack_nodes: u64,
    /// Modules written.
    pub modules: u64,
    /// Events (perf attributes).
    pub events: u64,
    /// Records of types the importer does not use, skipped.
    pub skipped: u64,
    /// Samples perf reported lost (LOST records).
    pub lost: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Stream-0 records whose cpu mode perf places in no mapping (a
    /// user-mode sample at a kernel address, say): their ip is
    /// [`UNPLACED`](super::UNPLACED), `[unknown]` as perf shows them.
    pub unplaced: u64,
    /// `--call-graph dwarf` samples given unwound user frames.
    pub unwound: u64,
    /// Files whose unwind information could not be used (their frames
    /// unwind by frame pointers), each with why; at most eight.
    pub unwind_missing: Vec<String>,
    /// Group-read values perf counts no sample for: an id no event of the
    /// file has.
    pub unknown_ids: u64,
    /// Feature sections cut short (whole ones, declared ones): perf reads
    /// such a file without them, and so does the import (no host name,
    /// command line or build ids from those).
    pub features_cut: Option<(u32, u32)>,
    /// A pipe-format input that ends inside a record: which, and where.
    /// perf reports the records before it, and so does the import.
    pub cut: Option<super::read::Damage>,
}

/// What a perf import does beyond reading its input.
#[derive(Clone, Debug)]
pub struct PerfOptions {
    /// Unwind `--call-graph dwarf` samples into call chains (default: on).
    pub unwind: bool,
    /// Where the unwinder finds the modules' files: the symbolizer's
    /// rules (docs/SYMBOLS.md); by default the paths as recorded, then the
    /// build-id directories of `/usr/lib/debug`.
    pub symbols: tbrw_symbols::Config,
}

impl Default for PerfOptions {
    fn default() -> Self {
        PerfOptions {
            unwind: true,
            symbols: tbrw_symbols::Config {
                kernel: tbrw_symbols::KernelSymbols::Off,
                lines: false,
                ..tbrw_symbols::Config::default()
            },
        }
    }
}

/// Why the conversion stopped: a read of the perf data, located by the
/// caller (which may walk the input again), or anything else.
pub(super) enum Stop {
    Read(linux_perf_data::Error),
    Import(ImportError),
}

impl<E: Into<ImportError>> From<E> for Stop {
    fn from(e: E) -> Self {
        Stop::Import(e.into())
    }
}

/// What the import reads beside `linux-perf-data`'s reader.
pub(super) struct SideBand {
    /// The bytes read so far.
    pub pos: Rc<Cell<u64>>,
    /// The ids of each attribute of the file header's attribute section.
    pub section_ids: Vec<Vec<u64>>,
    /// The pipe's tracing data, as it is read (`WholeRecords` keeps it).
    pub tracing: Option<Rc<RefCell<Vec<u8>>>>,
}

/// Converts the records of `iter` into stream 0 of `w`, with the file's
/// global sections, modules, processes and threads.
pub(super) fn convert<R: Read>(
    name: &str,
    w: &mut Tb5Writer,
    perf: &mut PerfFile,
    iter: &mut PerfRecordIter<R>,
    side: &SideBand,
    opts: &PerfOptions,
    mut progress: impl Progress,
) -> Result<ImportStats, Stop> {
    let mut c = Converter::new(name, perf, side, opts);
    write_globals(w, &software(perf))?;
    let mut stream = w.stream(0)?.info(&stream_info(name, perf))?.data_descriptor(&descriptor(
        &c.clock,
        c.several,
        c.with_stacks,
        c.widths,
    ))?;
    let mut data = stream.data()?;
    loop {
        match iter.next_record(perf) {
            Ok(Some(PerfFileRecord::EventRecord { attr_index, record })) => {
                c.handle_record(attr_index, &record, &mut data, &mut progress)?
            }
            Ok(Some(PerfFileRecord::UserRecord(_))) => c.stats.skipped += 1,
            Ok(None) => break,
            Err(e) => return Err(Stop::Read(e)),
        }
    }
    data.add(&c.batch)?;
    data.done()?;
    let events = c.events(perf, side);
    let (stats, stacks, tables) = c.finish();
    stream.events(&events)?;
    if let Some(stacks) = stacks {
        stream.stack_table(stacks)?;
    }
    stream.user_defined(summary(&stats, &stream_clock(perf)).as_bytes())?;
    stream.finish()?;

    let modules: Vec<Module> = tables.modules.iter().map(|m| m.module.clone()).collect();
    w.write_modules(&modules)?;
    w.write_process_threads(&tables.pids, &tables.tids)?;
    let notes = tables.module_notes();
    if !notes.is_empty() {
        w.write_user_defined_global(notes.as_bytes())?;
    }
    let stats = ImportStats { modules: modules.len() as u64, ..stats };
    progress.done(stats.bytes);
    Ok(stats)
}

/// The state of one conversion, kept across records.
struct Converter<'a> {
    /// The input's name, for errors.
    name: &'a str,
    /// The bytes read so far: the nearest place an error can name, since
    /// perf's records come sorted by time, out of file order.
    pos: Rc<Cell<u64>>,
    /// Each attribute's sample layout and parse info.
    layouts: Vec<sample::Layout>,
    parse_infos: Vec<RecordParseInfo>,
    /// Each event id's attribute.
    id_to_attr: HashMap<u64, usize>,
    /// perf's `sid->period`: each counter's value at its previous sample.
    last_read: HashMap<u64, u64>,
    /// The unwinder of `--call-graph dwarf` samples, when asked and recorded.
    dwarf: Option<DwarfUnwinding>,
    /// Records carry an event id (several attributes).
    several: bool,
    /// Records carry a stack id (call chains recorded or unwound here).
    with_stacks: bool,
    /// The period and cpu fields' widths.
    widths: Widths,
    /// The time field's name, after perf's clock.
    clock: String,
    /// The side-band records: modules, processes, threads.
    tables: Tables,
    stacks: StackTable,
    /// The stream-0 records encoded and not yet handed to the data section.
    batch: Vec<u8>,
    /// Per sample, reused: its stack's frames innermost first, the events
    /// it counts for with their periods, its user frames when unwound.
    frames: Vec<u64>,
    members: Vec<(usize, u64)>,
    user: Vec<u64>,
    stats: ImportStats,
}

impl<'a> Converter<'a> {
    fn new(name: &'a str, perf: &PerfFile, side: &SideBand, opts: &PerfOptions) -> Self {
        let attrs: &[AttributeDescription] = perf.event_attributes();
        let endian = perf.endian();
        let read_formats = raw_read_formats(perf, attrs);
        let parse_infos: Vec<RecordParseInfo> = attrs.iter().map(|a| RecordParseInfo::new(&a.attr, endian)).collect();
        let layouts: Vec<sample::Layout> =
            parse_infos.iter().zip(&read_formats).map(|(info, &f)| sample::Layout::new(info, f)).collect();
        let dwarf_recorded =
            layouts.iter().any(|l| l.sample_type & bits::REGS_USER != 0 && l.sample_type & bits::STACK_USER != 0);
        let dwarf = match DwarfUnwinding::arch_of(text(perf.arch()).as_deref()) {
            Some(arch) if opts.unwind && dwarf_recorded => Some(DwarfUnwinding::new(arch, opts.symbols.clone())),
            _ => None,
        };
        // Samples carry call chains (`perf record -g`, or user stacks
        // unwound here): each sample's record gets the id of its stack in
        // the stream's stack table.
        let with_stacks = dwarf.is_some() || layouts.iter().any(|l| l.sample_type & bits::CALLCHAIN != 0);
        // Narrow fields where the recording guarantees the values fit: 6 of
        // the 36 bytes a sample took (docs/IMPORT.md). A group member's
        // period is its count's growth, which no attribute bounds.
        let reads_groups = layouts.iter().any(|l| l.sample_type & bits::READ != 0);
        let cpus = perf.nr_cpus().ok().flatten();
        let widths = Widths {
            period: if reads_groups { 8 } else { period_width(attrs) },
            cpu: if cpus.is_some_and(|n| n.nr_cpus_available <= 1 << 16) { 2 } else { 4 },
        };
        Converter {
            name,
            pos: side.pos.clone(),
            id_to_attr: ids_to_attrs(attrs, &side.section_ids),
            layouts,
            parse_infos,
            last_read: HashMap::new(),
            dwarf,
            several: attrs.len() > 1,
            with_stacks,
            widths,
            clock: stream_clock(perf),
            tables: side_band_tables(perf),
            stacks: StackTable::new(),
            batch: Vec::with_capacity(BATCH),
            frames: Vec::new(),
            members: Vec::new(),
            user: Vec::new(),
            stats: ImportStats { events: attrs.len() as u64, ..Default::default() },
        }
    }

    /// An error about the record being converted, placed where reading had got to.
    fn invalid(&self, what: String) -> ImportError {
        ImportError::invalid(self.name, Place::Offset(self.pos.get()), what)
    }

    /// One record of the attribute `attr_index`, dispatched by its kind.
    fn handle_record(
        &mut self,
        attr_index: usize,
        raw: &RawEventRecord<'_>,
        data: &mut DataSectionWriter<'_>,
        progress: &mut impl Progress,
    ) -> Result<(), ImportError> {
        if raw.record_type == RecordType::SAMPLE {
            return self.handle_sample(attr_index, raw, data, progress);
        }
        let parsed = raw.parse().map_err(|e| {
            self.invalid(format!("a {:?} record that cannot be parsed (read by then): {e}", raw.record_type))
        })?;
        let time = raw.timestamp().unwrap_or(0);
        match parsed {
            EventRecord::Mmap(m) => self.handle_mmap(&m, time),
            EventRecord::Mmap2(m) => self.handle_mmap2(&m, time),
            EventRecord::Comm(c) => self.handle_comm(&c, time),
            EventRecord::Fork(f) => self.handle_fork(&f),
            EventRecord::Exit(f) => self.handle_exit(&f),
            EventRecord::Lost(l) => self.stats.lost += l.count,
            _ => self.stats.skipped += 1,
        }
        Ok(())
    }

    /// A SAMPLE: its stream-0 records, one per event it counts for.
    fn handle_sample(
        &mut self,
        attr_index: usize,
        raw: &RawEventRecord<'_>,
        data: &mut DataSectionWriter<'_>,
        progress: &mut impl Progress,
    ) -> Result<(), ImportError> {
        let body = raw.data.as_slice();
        // The event is the one of the sample's id, as perf finds it.
        let attr_index = self
            .layouts
            .get(attr_index)
            .and_then(|l| sample_id(&body, l))
            .and_then(|id| self.id_to_attr.get(&id).copied())
            .unwrap_or(attr_index);
        let layout = self.layouts.get(attr_index).copied().unwrap_or_default();
        let s = sample::parse(&body, &layout)
            .map_err(|why| self.invalid(format!("a sample that cannot be read (read by then): {why}")))?;
        let (pid, tid) = (s.pid.unwrap_or(0) as u32, s.tid.unwrap_or(0) as u32);
        let mut ip = s.ip.unwrap_or(0);
        if !self.tables.placed_as_perf(pid as i32, ip, raw.misc & 7) {
            ip = UNPLACED;
            self.stats.unplaced += 1;
        }
        self.count_members(attr_index, &s);
        if let Some(d) = self.dwarf.as_mut() {
            let mask = self.parse_infos.get(attr_index).map_or(0, |p| p.sample_regs_user);
            d.user_frames(pid as i32, mask, &s, &mut self.user);
        }
        let stack_id = self.intern_stack(&s)?;
        let head = Head { ip, pid, tid, time: s.time.unwrap_or(0), cpu: s.cpu.unwrap_or(0), stack_id };
        for k in 0..self.members.len() {
            let (member, period) = self.members[k];
            self.encode(&head, member, period)?;
            if self.batch.len() >= BATCH - 64 {
                data.add(&self.batch)?;
                self.batch.clear();
                progress.done(self.pos.get());
            }
        }
        Ok(())
    }

    /// The events sample `s` counts for, with their periods, into `members`.
    fn count_members(&mut self, attr_index: usize, s: &Sample) {
        self.members.clear();
        match &s.read {
            ReadValues::None => self.members.push((attr_index, s.period.unwrap_or(1))),
            read => {
                for (value, id) in read.each() {
                    // perf's `deliver_sample_value`: a sample for the event
                    // of each value's id, weighed by the value's growth
                    // since that id's previous sample; none for an id it
                    // does not know or a value that did not grow.
                    let Some(&member) = id.and_then(|id| self.id_to_attr.get(&id)) else {
                        self.stats.unknown_ids += 1;
                        continue;
                    };
                    let grew = value.wrapping_sub(self.last_read.insert(id.unwrap_or(0), value).unwrap_or(0));
                    if grew != 0 {
                        self.members.push((member, grew));
                    }
                }
            }
        }
    }

    /// The sample's stack, interned once for all its records: its call
    /// chain innermost first (perf's context markers are not frames), then
    /// its user frames when unwound here.
    fn intern_stack(&mut self, s: &Sample) -> Result<u32, ImportError> {
        if !self.with_stacks {
            return Ok(NO_STACK);
        }
        self.frames.clear();
        if let Some(chain) = &s.callchain {
            self.frames.extend((0..chain.len()).filter_map(|k| chain.get(k)).filter(|&ip| ip < PERF_CONTEXT_MAX));
        }
        self.frames.extend_from_slice(&self.user);
        self.stacks.intern_innermost_first(&self.frames).map_err(|e| {
            self.invalid(format!("sample {}: its call chain of {} frames: {e}", self.stats.samples, self.frames.len()))
        })
    }

    /// One stream-0 record of `head` for the event `member`, onto the batch.
    fn encode(&mut self, head: &Head, member: usize, period: u64) -> Result<(), ImportError> {
        // The widths hold every value the recording can have; one that
        // does not fit is damage, never cut short.
        let too_wide = |what: &str, v: u64, bytes: u32| {
            self.invalid(format!(
                "sample {}: its {what} {v} does not fit the {bytes} bytes the header allows",
                self.stats.samples
            ))
        };
        let period = match self.widths.period {
            4 => u64::from(u32::try_from(period).map_err(|_| too_wide("period", period, 4))?),
            _ => period,
        };
        if self.widths.cpu == 2 && u16::try_from(head.cpu).is_err() {
            return Err(too_wide("cpu", u64::from(head.cpu), 2));
        }
        let b = &mut self.batch;
        b.extend_from_slice(&head.ip.to_le_bytes());
        b.extend_from_slice(&head.pid.to_le_bytes());
        b.extend_from_slice(&head.tid.to_le_bytes());
        b.extend_from_slice(&head.time.to_le_bytes());
        // Little-endian: the narrow fields are the wide values' first bytes.
        b.extend_from_slice(&period.to_le_bytes()[..self.widths.period as usize]);
        b.extend_from_slice(&head.cpu.to_le_bytes()[..self.widths.cpu as usize]);
        if self.several {
            b.extend_from_slice(&(member as u32).to_le_bytes());
        }
        if self.with_stacks {
            b.extend_from_slice(&head.stack_id.to_le_bytes());
            self.stats.frames += self.frames.len() as u64;
        }
        self.stats.samples += 1;
        Ok(())
    }

    /// An MMAP: a module (PROT_EXEC is told by the record's misc bits).
    fn handle_mmap(&mut self, m: &MmapRecord, time: u64) {
        let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
        let kernel = m.cpu_mode == CpuMode::Kernel;
        if let (Some(d), false, true) = (self.dwarf.as_mut(), kernel, m.is_executable) {
            let id = self.tables.header_build_ids.get(&path).map(String::as_str);
            d.mmap(m.pid, &path, m.address, m.length, m.page_offset, id);
        }
        self.tables.mmap(&MmapEvent {
            pid: m.pid,
            address: m.address,
            length: m.length,
            pgoff: m.page_offset,
            path: &path,
            kernel,
            executable: m.is_executable,
            time,
            build_id: None,
            flags: 0,
        })
    }

    /// An MMAP2: a module, with its build id when the record carries one.
    fn handle_mmap2(&mut self, m: &Mmap2Record, time: u64) {
        let build_id = match &m.file_id {
            Mmap2FileId::BuildId(b) => Some(b.as_slice()),
            Mmap2FileId::InodeAndVersion(_) => None,
        };
        let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
        let kernel = m.cpu_mode == CpuMode::Kernel;
        // PROT_EXEC
        let executable = m.protection & 4 != 0;
        if let (Some(d), false, true) = (self.dwarf.as_mut(), kernel, executable) {
            let id = build_id.map(super::map::hex).or_else(|| self.tables.header_build_ids.get(&path).cloned());
            d.mmap(m.pid, &path, m.address, m.length, m.page_offset, id.as_deref());
        }
        self.tables.mmap(&MmapEvent {
            pid: m.pid,
            address: m.address,
            length: m.length,
            pgoff: m.page_offset,
            path: &path,
            kernel,
            executable,
            time,
            build_id,
            flags: m.flags,
        })
    }

    /// A COMM: a thread's name; an exec's also starts its process anew.
    fn handle_comm(&mut self, c: &CommOrExecRecord, time: u64) {
        if let (Some(d), true) = (self.dwarf.as_mut(), c.is_execve) {
            d.forget(c.pid);
        }
        self.tables.comm(c.pid, c.tid, &String::from_utf8_lossy(&c.name.as_slice()), c.is_execve, time)
    }

    /// A FORK: a new thread, or a new process with its parent's mappings.
    fn handle_fork(&mut self, f: &ForkOrExitRecord) {
        if let (Some(d), true) = (self.dwarf.as_mut(), f.pid != f.ppid) {
            d.fork(f.ppid, f.pid);
        }
        self.tables.fork(f.pid, f.ppid, f.tid, f.timestamp)
    }

    /// An EXIT: a thread, or a process when its main thread, ends.
    fn handle_exit(&mut self, f: &ForkOrExitRecord) {
        if let (Some(d), true) = (self.dwarf.as_mut(), f.pid == f.tid) {
            d.forget(f.pid);
        }
        self.tables.exit(f.pid, f.tid, f.timestamp)
    }

    /// The events, named now that the pipe's tracing data has been read.
    fn events(&self, perf: &PerfFile, side: &SideBand) -> Vec<Event> {
        let tracing = match &side.tracing {
            Some(kept) => tracepoint_names(&kept.borrow()),
            None => perf.feature_section_data(Feature::TRACING_DATA).map(tracepoint_names).unwrap_or_default(),
        };
        perf.event_attributes()
            .iter()
            .enumerate()
            .map(|(i, a)| event_of(i, a, a.name.clone().unwrap_or_else(|| perf_name(&a.attr, &tracing))))
            .collect()
    }

    /// The statistics, the stack table (when samples carry stacks) and the
    /// side-band tables, once every record is handled.
    fn finish(mut self) -> (ImportStats, Option<StackTable>, Tables) {
        if let Some(d) = self.dwarf.take() {
            self.stats.unwound = d.samples;
            self.stats.unwind_missing = d.missing;
        }
        self.stats.bytes = self.pos.get();
        self.stats.stack_nodes = self.stacks.len() as u64;
        let stacks = self.with_stacks.then_some(self.stacks);
        (self.stats, stacks, self.tables)
    }
}

/// The fields every record of one sample shares.
struct Head {
    ip: u64,
    pid: u32,
    tid: u32,
    time: u64,
    cpu: u32,
    stack_id: u32,
}

fn text(r: Result<Option<&str>, linux_perf_data::Error>) -> Option<String> {
    r.ok().flatten().map(str::to_owned)
}

/// The time field's name, after the first attribute's clock.
fn stream_clock(perf: &PerfFile) -> String {
    clock_name(&perf.event_attributes().first().map(|a| a.attr.clock).unwrap_or(PerfClock::Default))
}

/// The host and OS the recording's header names.
fn software(perf: &PerfFile) -> Software {
    Software {
        host: Some(Host { reserved: 0, ip_address: None, name: text(perf.hostname()) }),
        os: Some(Os {
            platform: os_family::LINUX64,
            name: Some("Linux".into()),
            name_extra: text(perf.os_release()),
            ..Default::default()
        }),
        application: None,
    }
}

/// Stream 0's info: perf's command line, and a comment naming the input,
/// its cpu and how many cpus were online.
fn stream_info(name: &str, perf: &PerfFile) -> StreamInfo {
    let cpus = perf.nr_cpus().ok().flatten();
    let comment = format!(
        "perf.data {name}{}{}",
        text(perf.cpu_desc()).map(|c| format!("; cpu {c}")).unwrap_or_default(),
        cpus.map(|n| format!("; {} cpus online of {}", n.nr_cpus_online, n.nr_cpus_available)).unwrap_or_default()
    );
    StreamInfo {
        stream_type: stream_type::SAMPLING,
        command_line: perf.cmdline().ok().flatten().map(|v| v.join(" ")),
        comment: Some(comment),
        ..Default::default()
    }
}

/// Stream 0's user-defined section: the import's counts, for `tbrw info`.
fn summary(stats: &ImportStats, clock: &str) -> String {
    format!(
        "perf samples={} frames={} stack_nodes={} lost={} skipped_records={} unplaced={} unwound={} clock={clock}\n",
        stats.samples, stats.frames, stats.stack_nodes, stats.lost, stats.skipped, stats.unplaced, stats.unwound
    )
}

/// Empty side-band tables that know the header's build ids and the kernel's module.
fn side_band_tables(perf: &PerfFile) -> Tables {
    let mut tables = Tables::default();
    let big_endian = perf.endian() == Endianness::BigEndian;
    tables.kernel_dso =
        perf.feature_section_data(Feature::BUILD_ID).and_then(|s| super::map::kernel_dso(s, big_endian));
    if let Ok(ids) = perf.build_ids() {
        for info in ids.values() {
            tables
                .header_build_ids
                .insert(String::from_utf8_lossy(&info.path).into_owned(), super::map::hex(&info.build_id));
        }
    }
    tables
}

/// Each event id's attribute: the ids `linux-perf-data` read (EVENT_DESC,
/// the pipe's attribute records), and for attributes it found none for,
/// those of the header's attribute section at the same place.
fn ids_to_attrs(attrs: &[AttributeDescription], section_ids: &[Vec<u64>]) -> HashMap<u64, usize> {
    let mut map = HashMap::new();
    for (i, a) in attrs.iter().enumerate() {
        let ids = match (a.event_ids.is_empty(), section_ids.len() == attrs.len()) {
            (true, true) => &section_ids[i],
            _ => &a.event_ids,
        };
        for &id in ids {
            map.insert(id, i);
        }
    }
    map
}

/// Each attribute's `read_format` as the file has it: from the
/// `EVENT_DESC` feature section (by the event's first id, else by its
/// place), which keeps the bits `linux-perf-event-reader` drops
/// (`PERF_FORMAT_LOST`, kernel 6.0, whose extra word per value must be
/// skipped); the reader's bits where the section is missing or damaged
/// (recordings older than the bit).
fn raw_read_formats(perf: &PerfFile, attrs: &[AttributeDescription]) -> Vec<u64> {
    let known: Vec<u64> = attrs.iter().map(|a| a.attr.read_format.bits()).collect();
    let Some(section) = perf.feature_section_data(Feature::EVENT_DESC) else { return known };
    let big = perf.endian() == Endianness::BigEndian;
    let u32_at = |at: usize| -> Option<u32> {
        let b: [u8; 4] = section.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
    };
    let u64_at = |at: usize| -> Option<u64> {
        let b: [u8; 8] = section.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(if big { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) })
    };
    // struct { u32 nr; u32 attr_size; { attr; u32 nr_ids; u32 len; char
    // str[len]; u64 ids[nr_ids]; } [nr] }, read_format at byte 32 of attr.
    let mut desc: Vec<(u64, Option<u64>)> = Vec::new();
    let parsed = (|| -> Option<()> {
        let nr = u32_at(0)?;
        let attr_size = u32_at(4)? as usize;
        let mut at = 8usize;
        for _ in 0..nr.min(4096) {
            let read_format = u64_at(at.checked_add(32)?)?;
            at = at.checked_add(attr_size)?;
            let nr_ids = u32_at(at)? as usize;
            let len = u32_at(at + 4)? as usize;
            at = at.checked_add(8)?.checked_add(len)?;
            let first_id = if nr_ids > 0 { Some(u64_at(at)?) } else { None };
            at = at.checked_add(nr_ids.checked_mul(8)?)?;
            desc.push((read_format, first_id));
        }
        Some(())
    })();
    if parsed.is_none() {
        return known;
    }
    attrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let by_id = a.event_ids.first().and_then(|id| desc.iter().find(|d| d.1 == Some(*id)));
            let by_place = (desc.len() == attrs.len()).then(|| desc.get(i)).flatten();
            by_id.or(by_place).map_or(known[i], |d| d.0)
        })
        .collect()
}
