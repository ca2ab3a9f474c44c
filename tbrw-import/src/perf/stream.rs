//! The import loop: perf's records read in time order, samples encoded
//! straight into stream 0's data section in batches (each call chain
//! interned in the stream's stack table, [`tbrw::StackTable`]), side-band
//! records collected into [`Tables`], and the global sections written last.
//!
//! Stream 0 record (little-endian): `ip` u64, `pid` u32, `tid` u32, time
//! u64 (ns, field named after perf's clock), `period` u32 or u64, `cpu`
//! u16 or u32 ([`super::layout::Widths`]), `event_id` u32 when the recording has several
//! events, and `stack_id` u32 when samples carry call chains (a node of the
//! stack table, docs/FORMAT.md "Stack table"). Imports before the stack
//! table wrote each frame as a 36-byte record of a stream 1
//! ([`super::layout::callchain_descriptor`]); readers still read those.
//!
//! A sample becomes one stream-0 record per event perf counts it for: one,
//! or, when it reads a group (`PERF_SAMPLE_READ`, leader sampling), one per
//! member whose count grew since that member's previous sample, weighed
//! by the growth (perf's `deliver_sample_value`). A `--call-graph dwarf`
//! sample's user frames are unwound here ([`super::unwind`]) and follow
//! its kernel frames in its stack.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::rc::Rc;

use linux_perf_data::{AttributeDescription, Feature, PerfFile, PerfFileReader, PerfFileRecord, PerfRecordIter};
use linux_perf_event_reader::{CpuMode, Endianness, EventRecord, Mmap2FileId, PerfClock, RecordParseInfo, RecordType};
use tbrw::*;

use super::events::{attr_section_ids, perf_name, sample_id, tracepoint_names};
use super::layout::{clock_name, descriptor, event_of, period_width, Widths};
use super::map::{MmapEvent, Tables, UNPLACED};
use super::read::{self, Counting, Detected, Overlay, PipeEnd, WholeRecords, FILE_HEADER, PIPE_HEADER};
use super::sample::{self, bits, ReadValues};
use super::unwind::DwarfUnwinding;
use crate::error::{ImportError, Place};
use crate::globals::write_globals;
use crate::progress::Progress;

/// perf marks context switches inside a chain with values from here up.
const PERF_CONTEXT_MAX: u64 = 0xffff_ffff_ffff_f001;

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
    pub cut: Option<read::Damage>,
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

/// Imports the perf.data file `input` (file mode: perf's default
/// `perf.data`, which starts at byte 0 of `input` and is read with seeks)
/// into `w`; `name` names it in errors and in stream 0's comment, and
/// `progress` gets the bytes read so far. The caller closes `w`, or drops
/// it on error and nothing is written. A damaged file's error names the
/// record and its byte offset. A pipe-format file (saved from `perf
/// record -o -`, or written by `perf inject` from a pipe) is told by its
/// header and read in pipe mode; a version 1 header (`PERFFILE`) is read
/// as perf reads it.
pub fn import_perf_file<R: Read + Seek>(
    input: R,
    name: &str,
    w: &mut Tb5Writer,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    import_perf_file_with(input, name, w, &PerfOptions::default(), progress)
}

/// [`import_perf_file`] with options.
pub fn import_perf_file_with<R: Read + Seek>(
    input: R,
    name: &str,
    w: &mut Tb5Writer,
    opts: &PerfOptions,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    let io = |e| ImportError::io(name, e);
    let mut input = BufReader::with_capacity(1 << 20, input);
    let len = input.seek(SeekFrom::End(0)).map_err(io)?;
    input.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut head = [0u8; FILE_HEADER];
    let n = read_full(&mut input, &mut head).map_err(io)?;
    let d = read::detect(&head[..n]).map_err(|what| ImportError::invalid(name, Place::Whole, what))?;
    if d.pipe {
        input.seek(SeekFrom::Start(PIPE_HEADER as u64)).map_err(io)?;
        let header: [u8; PIPE_HEADER] = head[..PIPE_HEADER].try_into().unwrap_or_default();
        return pipe(input, header, &d, name, w, opts, progress);
    }
    if n < FILE_HEADER {
        let what = format!("its header is cut short: the file has {len} bytes, perf's header {FILE_HEADER}");
        return Err(ImportError::invalid(name, Place::Whole, what));
    }
    let (_, _, data_offset, data_size) = read::sections(&head, d.big_endian);
    if data_size == 0 {
        // What `perf record` leaves when it is killed: the header it wrote
        // at the start, before it knew the data's size.
        let what = format!(
            "the recording was not finished: its header says the data section (at byte {data_offset}) is empty, \
             which `perf record` leaves when it is killed before it ends; perf cannot read it either"
        );
        return Err(ImportError::invalid(name, Place::Whole, what));
    }
    // Feature sections cut short (the file was copied or written only in
    // part) are left out, as perf leaves them out; a cut data section is
    // the reader's error, located below.
    let base = read::patched_header(&head, &d, None);
    let h = base.unwrap_or(head);
    let (whole, declared) = if data_offset.saturating_add(data_size) <= len {
        read::whole_features(&mut input, &h, d.big_endian, len)
    } else {
        (0, 0)
    };
    // The attribute section's ids: perf's own way to a sample's event where
    // no EVENT_DESC lists them (simpleperf writes none).
    let section_ids = attr_section_ids(&mut input, &h, d.big_endian, len);
    let v2 = Detected { version: 2, ..d };
    let patch = if whole < declared { read::patched_header(&h, &v2, Some(whole)) } else { base };
    input.seek(SeekFrom::Start(0)).map_err(io)?;

    let pos = Rc::new(Cell::new(0u64));
    let mut r = Counting::new(Overlay::new(input, patch), pos.clone());
    // The reader takes the input by `&mut`, so that after a failed read the
    // same input can be walked for the damaged record.
    let done = match PerfFileReader::parse_file(&mut r) {
        Ok(PerfFileReader { mut perf_file, mut record_iter }) => {
            let side = SideBand { pos: pos.clone(), section_ids, tracing: None };
            convert(name, w, &mut perf_file, &mut record_iter, &side, opts, progress)
        }
        Err(e) => Err(Stop::Read(e)),
    };
    let mut stats = done.map_err(|stop| match stop {
        Stop::Read(e) => {
            let read = pos.get();
            read::read_error(name, &e, read, read::find_damage(r.get_mut().get_mut()))
        }
        Stop::Import(e) => e,
    })?;
    stats.features_cut = (whole < declared).then_some((whole, declared));
    Ok(stats)
}

/// Reads into `buf` until it is full or the input ends; the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Imports a perf.data stream in pipe mode (`perf record -o -`), read
/// once from `input` to its end, into `w`; as [`import_perf_file`]
/// otherwise. The end of the input ends the data, as it does for perf:
/// an input that ends inside a record gives the records before it
/// ([`ImportStats::cut`]).
pub fn import_perf_pipe<R: Read>(
    input: R,
    name: &str,
    w: &mut Tb5Writer,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    import_perf_pipe_with(input, name, w, &PerfOptions::default(), progress)
}

/// [`import_perf_pipe`] with options.
pub fn import_perf_pipe_with<R: Read>(
    mut input: R,
    name: &str,
    w: &mut Tb5Writer,
    opts: &PerfOptions,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    let mut header = [0u8; PIPE_HEADER];
    let n = read_full(&mut input, &mut header).map_err(|e| ImportError::io(name, e))?;
    let d = read::detect(&header[..n]).map_err(|what| ImportError::invalid(name, Place::Whole, what))?;
    if !d.pipe {
        let what = "a perf.data in file format, which is read with seeks: give its path, not a pipe";
        return Err(ImportError::invalid(name, Place::Whole, what));
    }
    pipe(input, header, &d, name, w, opts, progress)
}

/// The pipe-mode import of `input`, positioned after its 16-byte
/// `header`.
fn pipe<R: Read>(
    input: R,
    header: [u8; PIPE_HEADER],
    d: &Detected,
    name: &str,
    w: &mut Tb5Writer,
    opts: &PerfOptions,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    let pos = Rc::new(Cell::new(0u64));
    let end = Rc::new(RefCell::new(PipeEnd::default()));
    let tracing = Rc::new(RefCell::new(Vec::new()));
    let whole = WholeRecords::new(BufReader::with_capacity(1 << 20, input), header, d, end.clone())
        .counting_dropped(pos.clone())
        .keeping_tracing_data(tracing.clone());
    let r = Counting::new(whole, pos.clone());
    let done = match PerfFileReader::parse_pipe(r) {
        Ok(PerfFileReader { mut perf_file, mut record_iter }) => {
            let side = SideBand { pos: pos.clone(), section_ids: Vec::new(), tracing: Some(tracing) };
            convert(name, w, &mut perf_file, &mut record_iter, &side, opts, progress)
        }
        Err(e) => Err(Stop::Read(e)),
    };
    let mut stats = done.map_err(|stop| match stop {
        Stop::Read(e) => read::read_error(name, &e, pos.get(), end.borrow().bad.clone()),
        Stop::Import(e) => e,
    })?;
    stats.cut = end.borrow().cut.clone();
    Ok(stats)
}

/// Why the conversion stopped: a read of the perf data, located by the
/// caller (which may walk the input again), or anything else.
enum Stop {
    Read(linux_perf_data::Error),
    Import(ImportError),
}

impl<E: Into<ImportError>> From<E> for Stop {
    fn from(e: E) -> Self {
        Stop::Import(e.into())
    }
}

/// What the import reads beside `linux-perf-data`'s reader.
struct SideBand {
    /// The bytes read so far.
    pos: Rc<Cell<u64>>,
    /// The ids of each attribute of the file header's attribute section.
    section_ids: Vec<Vec<u64>>,
    /// The pipe's tracing data, as it is read ([`WholeRecords`] keeps it).
    tracing: Option<Rc<RefCell<Vec<u8>>>>,
}

fn text(r: Result<Option<&str>, linux_perf_data::Error>) -> Option<String> {
    r.ok().flatten().map(str::to_owned)
}

fn convert<R: Read>(
    name: &str,
    w: &mut Tb5Writer,
    perf: &mut PerfFile,
    iter: &mut PerfRecordIter<R>,
    side: &SideBand,
    opts: &PerfOptions,
    mut progress: impl Progress,
) -> Result<ImportStats, Stop> {
    let pos = &side.pos;
    let attrs: Vec<AttributeDescription> = perf.event_attributes().to_vec();
    let endian = perf.endian();
    let read_formats = raw_read_formats(perf, &attrs);
    let parse_infos: Vec<RecordParseInfo> = attrs.iter().map(|a| RecordParseInfo::new(&a.attr, endian)).collect();
    let layouts: Vec<sample::Layout> =
        parse_infos.iter().zip(&read_formats).map(|(info, &f)| sample::Layout::new(info, f)).collect();
    let id_to_attr = ids_to_attrs(&attrs, &side.section_ids);
    // perf's `sid->period`: each counter's value at its previous sample.
    let mut last_read: HashMap<u64, u64> = HashMap::new();
    let dwarf_recorded =
        layouts.iter().any(|l| l.sample_type & bits::REGS_USER != 0 && l.sample_type & bits::STACK_USER != 0);
    let arch = text(perf.arch());
    let mut dwarf = match DwarfUnwinding::arch_of(arch.as_deref()) {
        Some(arch) if opts.unwind && dwarf_recorded => Some(DwarfUnwinding::new(arch, opts.symbols.clone())),
        _ => None,
    };
    let several = attrs.len() > 1;
    // Samples carry call chains (`perf record -g`, or user stacks unwound
    // here): each sample's record gets the id of its stack in the stream's
    // stack table.
    let with_stacks = dwarf.is_some() || layouts.iter().any(|l| l.sample_type & bits::CALLCHAIN != 0);
    // Narrow fields where the recording guarantees the values fit: 6 of the
    // 36 bytes a sample took (docs/IMPORT.md). A group member's period is
    // its count's growth, which no attribute bounds.
    let cpus = perf.nr_cpus().ok().flatten();
    let reads_groups = layouts.iter().any(|l| l.sample_type & bits::READ != 0);
    let widths = Widths {
        period: if reads_groups { 8 } else { period_width(&attrs) },
        cpu: if cpus.is_some_and(|n| n.nr_cpus_available <= 1 << 16) { 2 } else { 4 },
    };
    let clock = clock_name(&attrs.first().map(|a| a.attr.clock).unwrap_or(PerfClock::Default));
    let hostname = text(perf.hostname());
    let release = text(perf.os_release());
    let cpu = text(perf.cpu_desc());
    let cmdline = perf.cmdline().ok().flatten().map(|v| v.join(" "));
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
    let mut stats = ImportStats { events: attrs.len() as u64, ..Default::default() };

    write_globals(
        w,
        &Software {
            host: Some(Host { reserved: 0, ip_address: None, name: hostname }),
            os: Some(Os {
                platform: os_family::LINUX64,
                name: Some("Linux".into()),
                name_extra: release,
                ..Default::default()
            }),
            application: None,
        },
    )?;
    let comment = format!(
        "perf.data {name}{}{}",
        cpu.map(|c| format!("; cpu {c}")).unwrap_or_default(),
        cpus.map(|n| format!("; {} cpus online of {}", n.nr_cpus_online, n.nr_cpus_available)).unwrap_or_default()
    );
    let mut stream = w
        .stream(0)?
        .info(&StreamInfo {
            stream_type: stream_type::SAMPLING,
            command_line: cmdline,
            comment: Some(comment),
            ..Default::default()
        })?
        .data_descriptor(&descriptor(&clock, several, with_stacks, widths))?;
    let rec_size =
        24 + (widths.period + widths.cpu) as usize + if several { 4 } else { 0 } + if with_stacks { 4 } else { 0 };
    let mut stacks = StackTable::new();
    let mut frames: Vec<u64> = Vec::new();
    let mut data = stream.data()?;
    let mut batch: Vec<u8> = Vec::with_capacity(1 << 20);
    // Per sample: the events it counts for, with their periods; its user
    // frames when unwound.
    let mut members: Vec<(usize, u64)> = Vec::new();
    let mut user: Vec<u64> = Vec::new();
    loop {
        let record = match iter.next_record(perf) {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => return Err(Stop::Read(e)),
        };
        let (attr_index, raw) = match record {
            PerfFileRecord::EventRecord { attr_index, record } => (attr_index, record),
            PerfFileRecord::UserRecord(_) => {
                stats.skipped += 1;
                continue;
            }
        };
        if raw.record_type == RecordType::SAMPLE {
            let body = raw.data.as_slice();
            // The event is the one of the sample's id, as perf finds it.
            let attr_index = layouts
                .get(attr_index)
                .and_then(|l| sample_id(&body, l))
                .and_then(|id| id_to_attr.get(&id).copied())
                .unwrap_or(attr_index);
            let layout = layouts.get(attr_index).copied().unwrap_or_default();
            let s = sample::parse(&body, &layout).map_err(|why| {
                // Records come sorted by time, out of file order: where
                // reading had got to is the nearest place that can be named.
                ImportError::invalid(
                    name,
                    Place::Offset(pos.get()),
                    format!("a sample that cannot be read (read by then): {why}"),
                )
            })?;
            let (pid, tid, t) = (s.pid.unwrap_or(0) as u32, s.tid.unwrap_or(0) as u32, s.time.unwrap_or(0));
            let mut ip = s.ip.unwrap_or(0);
            if !tables.placed_as_perf(pid as i32, ip, raw.misc & 7) {
                ip = UNPLACED;
                stats.unplaced += 1;
            }
            members.clear();
            match s.read {
                ReadValues::None => members.push((attr_index, s.period.unwrap_or(1))),
                read => {
                    for (value, id) in read.each() {
                        // perf's `deliver_sample_value`: a sample for the
                        // event of each value's id, weighed by the value's
                        // growth since that id's previous sample; none for
                        // an id it does not know or a value that did not grow.
                        let Some(&member) = id.and_then(|id| id_to_attr.get(&id)) else {
                            stats.unknown_ids += 1;
                            continue;
                        };
                        let grew = value.wrapping_sub(last_read.insert(id.unwrap_or(0), value).unwrap_or(0));
                        if grew != 0 {
                            members.push((member, grew));
                        }
                    }
                }
            }
            if let Some(d) = dwarf.as_mut() {
                let mask = parse_infos.get(attr_index).map_or(0, |p| p.sample_regs_user);
                d.user_frames(pid as i32, mask, &s, &mut user);
            }
            // The sample's stack, interned once for all its records:
            // its call chain innermost first (perf's context markers are
            // not frames), then its user frames when unwound here.
            let stack_id = if with_stacks {
                frames.clear();
                if let Some(chain) = s.callchain {
                    frames.extend((0..chain.len()).filter_map(|k| chain.get(k)).filter(|&ip| ip < PERF_CONTEXT_MAX));
                }
                frames.extend_from_slice(&user);
                stacks.intern_innermost_first(&frames).map_err(|e| {
                    ImportError::invalid(
                        name,
                        Place::Offset(pos.get()),
                        format!("sample {}: its call chain of {} frames: {e}", stats.samples, frames.len()),
                    )
                })?
            } else {
                NO_STACK
            };
            let cpu = s.cpu.unwrap_or(0);
            for &(member, period) in &members {
                let start = batch.len();
                batch.extend_from_slice(&ip.to_le_bytes());
                batch.extend_from_slice(&pid.to_le_bytes());
                batch.extend_from_slice(&tid.to_le_bytes());
                batch.extend_from_slice(&t.to_le_bytes());
                // The widths hold every value the recording can have; one
                // that does not fit is damage, never cut short.
                let too_wide = |what: &str, v: u64, bytes: u32| {
                    ImportError::invalid(
                        name,
                        Place::Offset(pos.get()),
                        format!(
                            "sample {}: its {what} {v} does not fit the {bytes} bytes the header allows",
                            stats.samples
                        ),
                    )
                };
                match widths.period {
                    4 => batch.extend_from_slice(
                        &u32::try_from(period).map_err(|_| too_wide("period", period, 4))?.to_le_bytes(),
                    ),
                    _ => batch.extend_from_slice(&period.to_le_bytes()),
                }
                match widths.cpu {
                    2 => batch.extend_from_slice(
                        &u16::try_from(cpu).map_err(|_| too_wide("cpu", u64::from(cpu), 2))?.to_le_bytes(),
                    ),
                    _ => batch.extend_from_slice(&cpu.to_le_bytes()),
                }
                if several {
                    batch.extend_from_slice(&(member as u32).to_le_bytes());
                }
                if with_stacks {
                    batch.extend_from_slice(&stack_id.to_le_bytes());
                    stats.frames += frames.len() as u64;
                }
                debug_assert_eq!(batch.len() - start, rec_size);
                stats.samples += 1;
                if batch.len() >= (1 << 20) - 64 {
                    data.add(&batch)?;
                    batch.clear();
                    progress.done(pos.get());
                }
            }
            continue;
        }
        let parsed = raw.parse().map_err(|e| {
            let what = format!("a {:?} record that cannot be parsed (read by then): {e}", raw.record_type);
            ImportError::invalid(name, Place::Offset(pos.get()), what)
        })?;
        let time = || raw.timestamp().unwrap_or(0);
        match parsed {
            EventRecord::Mmap(m) => {
                let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                let kernel = m.cpu_mode == CpuMode::Kernel;
                if let (Some(d), false, true) = (dwarf.as_mut(), kernel, m.is_executable) {
                    let id = tables.header_build_ids.get(&path).map(String::as_str);
                    d.mmap(m.pid, &path, m.address, m.length, m.page_offset, id);
                }
                tables.mmap(&MmapEvent {
                    pid: m.pid,
                    address: m.address,
                    length: m.length,
                    pgoff: m.page_offset,
                    path: &path,
                    kernel,
                    executable: m.is_executable,
                    time: time(),
                    build_id: None,
                    flags: 0,
                })
            }
            EventRecord::Mmap2(m) => {
                let build_id = match &m.file_id {
                    Mmap2FileId::BuildId(b) => Some(b.as_slice()),
                    Mmap2FileId::InodeAndVersion(_) => None,
                };
                let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                let kernel = m.cpu_mode == CpuMode::Kernel;
                // PROT_EXEC
                let executable = m.protection & 4 != 0;
                if let (Some(d), false, true) = (dwarf.as_mut(), kernel, executable) {
                    let id = build_id.map(super::map::hex).or_else(|| tables.header_build_ids.get(&path).cloned());
                    d.mmap(m.pid, &path, m.address, m.length, m.page_offset, id.as_deref());
                }
                tables.mmap(&MmapEvent {
                    pid: m.pid,
                    address: m.address,
                    length: m.length,
                    pgoff: m.page_offset,
                    path: &path,
                    kernel,
                    executable,
                    time: time(),
                    build_id,
                    flags: m.flags,
                })
            }
            EventRecord::Comm(c) => {
                if let (Some(d), true) = (dwarf.as_mut(), c.is_execve) {
                    d.forget(c.pid);
                }
                tables.comm(c.pid, c.tid, &String::from_utf8_lossy(&c.name.as_slice()), c.is_execve, time())
            }
            EventRecord::Fork(f) => {
                if let (Some(d), true) = (dwarf.as_mut(), f.pid != f.ppid) {
                    d.fork(f.ppid, f.pid);
                }
                tables.fork(f.pid, f.ppid, f.tid, f.timestamp)
            }
            EventRecord::Exit(f) => {
                if let (Some(d), true) = (dwarf.as_mut(), f.pid == f.tid) {
                    d.forget(f.pid);
                }
                tables.exit(f.pid, f.tid, f.timestamp)
            }
            EventRecord::Lost(l) => stats.lost += l.count,
            _ => stats.skipped += 1,
        }
    }
    if let Some(d) = dwarf {
        stats.unwound = d.samples;
        stats.unwind_missing = d.missing;
    }
    data.add(&batch)?;
    data.done()?;
    // The events, named now that the pipe's tracing data has been read.
    let tracing = match &side.tracing {
        Some(kept) => tracepoint_names(&kept.borrow()),
        None => perf.feature_section_data(Feature::TRACING_DATA).map(tracepoint_names).unwrap_or_default(),
    };
    let events: Vec<Event> = attrs
        .iter()
        .enumerate()
        .map(|(i, a)| event_of(i, a, a.name.clone().unwrap_or_else(|| perf_name(&a.attr, &tracing))))
        .collect();
    stream.events(&events)?;
    stats.bytes = pos.get();
    stats.stack_nodes = stacks.len() as u64;
    if with_stacks {
        stream.stack_table(stacks)?;
    }
    stream.user_defined(
        format!(
            "perf samples={} frames={} stack_nodes={} lost={} skipped_records={} unplaced={} unwound={} clock={clock}\n",
            stats.samples,
            stats.frames,
            stats.stack_nodes,
            stats.lost,
            stats.skipped,
            stats.unplaced,
            stats.unwound
        )
        .as_bytes(),
    )?;
    stream.finish()?;

    let modules: Vec<Module> = tables.modules.iter().map(|m| m.module.clone()).collect();
    stats.modules = modules.len() as u64;
    w.write_modules(&modules)?;
    w.write_process_threads(&tables.pids, &tables.tids)?;
    let notes = tables.module_notes();
    if !notes.is_empty() {
        w.write_user_defined_global(notes.as_bytes())?;
    }
    progress.done(stats.bytes);
    Ok(stats)
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

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    /// `perf record -e cpu-clock -c 200000 -- true`, in file and in pipe mode.
    const FILE: &[u8] = include_bytes!("../../tests/data/true.perf.data");
    const PIPE: &[u8] = include_bytes!("../../tests/data/true.pipe.perf.data");

    /// A reader that cannot seek and hands out at most 7 bytes a call, as
    /// a pipe may.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(7).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn stream0(path: &std::path::Path) -> (String, u64) {
        let f = Tb5File::open(path).unwrap();
        let s = f.stream(0).unwrap();
        let comment = f.string_opt(s.info().unwrap().unwrap().comment).unwrap().unwrap_or_default().to_owned();
        (comment, s.data().unwrap().map_or(0, |d| d.len()))
    }

    #[test]
    fn pipe_mode_reads_a_reader_that_cannot_seek() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("pipe.tb5");
        let mut w = Tb5Writer::create(&out).unwrap();
        let mut last = 0;
        let stats = import_perf_pipe(Trickle(PIPE), "-", &mut w, |n| last = n).unwrap();
        w.close().unwrap();
        assert_eq!((stats.samples, stats.events, stats.bytes, last), (3, 1, PIPE.len() as u64, PIPE.len() as u64));
        let (comment, records) = stream0(&out);
        assert!(comment.starts_with("perf.data -; cpu "), "{comment}");
        assert_eq!(records, 3);
    }

    #[test]
    fn file_mode_reads_a_cursor_and_names_a_damaged_record() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("file.tb5");
        let mut w = Tb5Writer::create(&out).unwrap();
        let stats = import_perf_file(Cursor::new(FILE), "true.perf.data", &mut w, ()).unwrap();
        w.close().unwrap();
        assert_eq!((stats.samples, stats.modules), (3, 5));
        assert_eq!(stream0(&out).1, 3);

        // Cut inside the data section (perf's header says where it is): the
        // walk over the same input finds the record cut short.
        let data_end = u64::from_le_bytes(FILE[40..48].try_into().unwrap()) + 200;
        let cut = &FILE[..data_end as usize];
        let mut w = Tb5Writer::create(dir.path().join("cut.tb5")).unwrap();
        let e = import_perf_file(Cursor::new(cut), "cut.data", &mut w, ()).unwrap_err();
        match &e {
            ImportError::Invalid { input, place: Place::Record { offset, .. }, what } => {
                assert_eq!(input, "cut.data");
                assert!(*offset < data_end && what.contains("cut short"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        // A file-format header on a stream, and garbage, are refused with why.
        let e = import_perf_pipe(&b"PERFILE2 and then nothing a pipe header has"[..], "-", &mut w, ()).unwrap_err();
        assert!(e.to_string().contains("file format"), "{e}");
        let e = import_perf_pipe(&b"GIF89a and then some more"[..], "-", &mut w, ()).unwrap_err();
        assert!(e.to_string().contains("not a perf.data file"), "{e}");
    }
}
