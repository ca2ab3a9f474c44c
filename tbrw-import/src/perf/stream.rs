//! The import loop: perf's records read in time order, samples encoded
//! straight into stream 0's data section in batches (each call chain
//! interned in the stream's stack table, [`tbrw::StackTable`]), side-band
//! records collected into [`Tables`], and the global sections written last.
//!
//! Stream 0 record (little-endian): `ip` u64, `pid` u32, `tid` u32, time
//! u64 (ns, field named after perf's clock), `period` u32 or u64, `cpu`
//! u16 or u32 ([`Widths`]),
//! `event_id` u32 when the recording has several events, and `stack_id` u32
//! when samples carry call chains (a node of the stack table, docs/FORMAT.md
//! "Stack table"). Imports before the stack table wrote each frame as a
//! 36-byte record of a stream 1 ([`callchain_descriptor`]); readers still
//! read those.

use std::cell::Cell;
use std::io::{BufReader, Read, Seek};
use std::rc::Rc;

use linux_perf_data::{AttributeDescription, PerfFile, PerfFileReader, PerfFileRecord, PerfRecordIter};
use linux_perf_event_reader::{
    CpuMode, EventRecord, Mmap2FileId, PerfClock, PerfEventType, SampleFormat, SamplingPolicy,
};
use tbrw::*;

use super::map::{MmapEvent, Tables};
use super::read::{self, Counting};
use crate::error::{ImportError, Place};
use crate::fields;
use crate::globals::{field, write_globals};
use crate::progress::Progress;

/// Bytes per call-chain frame record of the stream 1 that imports before
/// the stack table wrote.
pub const CALLCHAIN_RECORD_SIZE: usize = 36;

/// perf marks context switches inside a chain with values from here up.
const PERF_CONTEXT_MAX: u64 = 0xffff_ffff_ffff_f001;

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportStats {
    /// Samples written to stream 0.
    pub samples: u64,
    /// Call-chain frames of the samples (perf's context markers left out).
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
}

/// The name of the time stamp field: perf's clock, so that `tbrw export
/// vtune-csv` finds the clock VTune should use.
pub fn clock_name(clock: &PerfClock) -> String {
    use linux_perf_event_reader::ClockId;
    match clock {
        // perf's default clock is the kernel's local clock: nanoseconds
        // since boot, never set back, i.e. a monotonic clock.
        PerfClock::Default => "time_perf_clock_monotonic".into(),
        PerfClock::ClockId(ClockId::Monotonic) => "time_CLOCK_MONOTONIC".into(),
        PerfClock::ClockId(ClockId::MonotonicRaw) => "time_CLOCK_MONOTONIC_RAW".into(),
        PerfClock::ClockId(ClockId::Realtime) => "time_CLOCK_REALTIME".into(),
        PerfClock::ClockId(c) => format!("time_clock_{c:?}"),
    }
}

fn event_of(i: usize, a: &AttributeDescription) -> Event {
    let sav = match a.attr.sampling_policy {
        SamplingPolicy::Period(p) => p.get(),
        SamplingPolicy::Frequency(f) => f,
        SamplingPolicy::NoSampling => 0,
    };
    let flags = match a.attr.type_ {
        PerfEventType::Software(_) => EventFlags::TBS,
        _ => EventFlags::EBS,
    };
    Event {
        id: i as u32,
        flags,
        sav,
        name: Some(a.name.clone().unwrap_or_else(|| format!("event{i}"))),
        ..Default::default()
    }
}

/// The widths of stream 0's fields that depend on the recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Widths {
    /// Bytes of `period`: 4 when every event's period fits 32 bits (see [`period_width`]), else 8.
    pub period: u32,
    /// Bytes of `cpu`: 2 when the header says the machine has at most 65,536 CPUs, else 4.
    pub cpu: u32,
}

/// 4 when no sample of `attrs` can have a period of 32 bits or more: a
/// fixed period (`-c N`) below 2^32, or a software clock (`cpu-clock`,
/// `task-clock`, the default without a PMU) sampled by frequency, whose
/// period the kernel fixes at 10^9 / frequency ns (at most 10^9); else 8
/// (a hardware event by frequency: the kernel's period adapts to the
/// event's rate).
pub fn period_width(attrs: &[AttributeDescription]) -> u32 {
    use linux_perf_event_reader::SoftwareCounterType;
    let narrow = |a: &AttributeDescription| match (a.attr.sampling_policy, a.attr.type_) {
        (SamplingPolicy::Period(p), _) => p.get() <= u64::from(u32::MAX),
        (SamplingPolicy::NoSampling, _) => true,
        (
            SamplingPolicy::Frequency(f),
            PerfEventType::Software(SoftwareCounterType::CpuClock | SoftwareCounterType::TaskClock),
        ) => f >= 1,
        (SamplingPolicy::Frequency(_), _) => false,
    };
    if attrs.iter().all(narrow) {
        4
    } else {
        8
    }
}

/// Stream 0's descriptor.
pub fn descriptor(clock: &str, several_events: bool, stacks: bool, w: Widths) -> Vec<DescEntry> {
    let mut d = vec![
        field(desc_type::IP, desc_subtype::NONE, 8, "ip"),
        field(desc_type::PID, desc_subtype::NONE, 4, "pid"),
        field(desc_type::TID, desc_subtype::NONE, 4, "tid"),
        field(desc_type::TIME_STAMP, desc_subtype::TS_NANOSECONDS, 8, clock),
        field(fields::PERIOD, desc_subtype::NONE, w.period, "period"),
        field(desc_type::PROCESSOR_NUMBER, desc_subtype::NONE, w.cpu, "cpu"),
    ];
    if several_events {
        d.push(field(fields::EVENT_ID, desc_subtype::NONE, 4, "event_id"));
    }
    if stacks {
        d.push(stack::stack_id_entry("stack_id"));
    }
    d
}

/// The descriptor of the stream 1 of call-chain frames that imports wrote
/// before the stack table (still read by `tbrw-query`'s stacks).
pub fn callchain_descriptor(clock: &str) -> Vec<DescEntry> {
    vec![
        field(desc_type::IP, desc_subtype::NONE, 8, "ip"),
        field(desc_type::PID, desc_subtype::NONE, 4, "pid"),
        field(desc_type::TID, desc_subtype::NONE, 4, "tid"),
        field(desc_type::TIME_STAMP, desc_subtype::TS_NANOSECONDS, 8, clock),
        field(fields::CALLCHAIN_SAMPLE, desc_subtype::NONE, 8, "sample"),
        field(fields::CALLCHAIN_DEPTH, desc_subtype::NONE, 4, "depth"),
    ]
}

/// Imports the perf.data file `input` (file mode: perf's default
/// `perf.data`, which starts at byte 0 of `input` and is read with seeks)
/// into `w`; `name` names it in errors and in stream 0's comment, and
/// `progress` gets the bytes read so far. The caller closes `w`, or drops
/// it on error and nothing is written. A damaged file's error names the
/// record and its byte offset.
pub fn import_perf_file<R: Read + Seek>(
    input: R,
    name: &str,
    w: &mut Tb5Writer,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    let pos = Rc::new(Cell::new(0u64));
    let mut r = Counting::new(BufReader::with_capacity(1 << 20, input), pos.clone());
    // The reader takes the input by `&mut`, so that after a failed read the
    // same input can be walked for the damaged record.
    let done = match PerfFileReader::parse_file(&mut r) {
        Ok(PerfFileReader { mut perf_file, mut record_iter }) => {
            convert(name, w, &mut perf_file, &mut record_iter, &pos, progress)
        }
        Err(e) => Err(Stop::Read(e)),
    };
    done.map_err(|stop| match stop {
        Stop::Read(e) => {
            let read = pos.get();
            read::read_error(name, &e, read, read::find_damage(r.get_mut()))
        }
        Stop::Import(e) => e,
    })
}

/// Imports a perf.data stream in pipe mode (`perf record -o -`), read
/// once from `input` to its end, into `w`; as [`import_perf_file`]
/// otherwise. The end of the input ends the data, as it does for perf.
pub fn import_perf_pipe<R: Read>(
    input: R,
    name: &str,
    w: &mut Tb5Writer,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    let pos = Rc::new(Cell::new(0u64));
    let r = Counting::new(BufReader::with_capacity(1 << 20, input), pos.clone());
    let done = match PerfFileReader::parse_pipe(r) {
        Ok(PerfFileReader { mut perf_file, mut record_iter }) => {
            convert(name, w, &mut perf_file, &mut record_iter, &pos, progress)
        }
        Err(e) => Err(Stop::Read(e)),
    };
    done.map_err(|stop| match stop {
        Stop::Read(e) => read::read_error(name, &e, pos.get(), None),
        Stop::Import(e) => e,
    })
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

fn text(r: Result<Option<&str>, linux_perf_data::Error>) -> Option<String> {
    r.ok().flatten().map(str::to_owned)
}

fn convert<R: Read>(
    name: &str,
    w: &mut Tb5Writer,
    perf: &mut PerfFile,
    iter: &mut PerfRecordIter<R>,
    pos: &Rc<Cell<u64>>,
    mut progress: impl Progress,
) -> Result<ImportStats, Stop> {
    let attrs: Vec<AttributeDescription> = perf.event_attributes().to_vec();
    let several = attrs.len() > 1;
    // Samples carry call chains (`perf record -g`): each sample's record
    // gets the id of its stack in the stream's stack table.
    let with_stacks = attrs.iter().any(|a| a.attr.sample_format.contains(SampleFormat::CALLCHAIN));
    // Narrow fields where the recording guarantees the values fit: 6 of the
    // 36 bytes a sample took (docs/IMPORT.md).
    let cpus = perf.nr_cpus().ok().flatten();
    let widths = Widths {
        period: period_width(&attrs),
        cpu: if cpus.is_some_and(|n| n.nr_cpus_available <= 1 << 16) { 2 } else { 4 },
    };
    let events: Vec<Event> = attrs.iter().enumerate().map(|(i, a)| event_of(i, a)).collect();
    let clock = clock_name(&attrs.first().map(|a| a.attr.clock).unwrap_or(PerfClock::Default));
    let hostname = text(perf.hostname());
    let release = text(perf.os_release());
    let cpu = text(perf.cpu_desc());
    let cmdline = perf.cmdline().ok().flatten().map(|v| v.join(" "));
    let mut tables = Tables::default();
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
    stream.events(&events)?;
    let rec_size =
        24 + (widths.period + widths.cpu) as usize + if several { 4 } else { 0 } + if with_stacks { 4 } else { 0 };
    let mut stacks = StackTable::new();
    let mut frames: Vec<u64> = Vec::new();
    let mut data = stream.data()?;
    let mut batch: Vec<u8> = Vec::with_capacity(1 << 20);
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
        let parsed = raw.parse().map_err(|e| {
            // Records come sorted by time, out of file order: where reading
            // had got to is the nearest place that can be named.
            let what = format!("a {:?} record that cannot be parsed (read by then): {e}", raw.record_type);
            ImportError::invalid(name, Place::Offset(pos.get()), what)
        })?;
        let time = || raw.timestamp().unwrap_or(0);
        match parsed {
            EventRecord::Sample(s) => {
                let (pid, tid, t) = (s.pid.unwrap_or(0) as u32, s.tid.unwrap_or(0) as u32, s.timestamp.unwrap_or(0));
                let start = batch.len();
                batch.extend_from_slice(&s.ip.unwrap_or(0).to_le_bytes());
                batch.extend_from_slice(&pid.to_le_bytes());
                batch.extend_from_slice(&tid.to_le_bytes());
                batch.extend_from_slice(&t.to_le_bytes());
                let (period, cpu) = (s.period.unwrap_or(1), s.cpu.unwrap_or(0));
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
                    batch.extend_from_slice(&(attr_index as u32).to_le_bytes());
                }
                if with_stacks {
                    frames.clear();
                    if let Some(chain) = s.callchain {
                        // Innermost first; perf's context markers are not frames.
                        frames
                            .extend((0..chain.len()).filter_map(|k| chain.get(k)).filter(|&ip| ip < PERF_CONTEXT_MAX));
                    }
                    stats.frames += frames.len() as u64;
                    let id = stacks.intern_innermost_first(&frames).map_err(|e| {
                        ImportError::invalid(
                            name,
                            Place::Offset(pos.get()),
                            format!("sample {}: its call chain of {} frames: {e}", stats.samples, frames.len()),
                        )
                    })?;
                    batch.extend_from_slice(&id.to_le_bytes());
                }
                debug_assert_eq!(batch.len() - start, rec_size);
                stats.samples += 1;
                if batch.len() >= (1 << 20) - 64 {
                    data.add(&batch)?;
                    batch.clear();
                    progress.done(pos.get());
                }
            }
            EventRecord::Mmap(m) => tables.mmap(&MmapEvent {
                pid: m.pid,
                address: m.address,
                length: m.length,
                pgoff: m.page_offset,
                path: &String::from_utf8_lossy(&m.path.as_slice()),
                kernel: m.cpu_mode == CpuMode::Kernel,
                executable: m.is_executable,
                time: time(),
                build_id: None,
            }),
            EventRecord::Mmap2(m) => {
                let build_id = match &m.file_id {
                    Mmap2FileId::BuildId(b) => Some(b.as_slice()),
                    Mmap2FileId::InodeAndVersion(_) => None,
                };
                tables.mmap(&MmapEvent {
                    pid: m.pid,
                    address: m.address,
                    length: m.length,
                    pgoff: m.page_offset,
                    path: &String::from_utf8_lossy(&m.path.as_slice()),
                    kernel: m.cpu_mode == CpuMode::Kernel,
                    // PROT_EXEC
                    executable: m.protection & 4 != 0,
                    time: time(),
                    build_id,
                })
            }
            EventRecord::Comm(c) => {
                tables.comm(c.pid, c.tid, &String::from_utf8_lossy(&c.name.as_slice()), c.is_execve, time())
            }
            EventRecord::Fork(f) => tables.fork(f.pid, f.ppid, f.tid, f.timestamp),
            EventRecord::Exit(f) => tables.exit(f.pid, f.tid, f.timestamp),
            EventRecord::Lost(l) => stats.lost += l.count,
            _ => stats.skipped += 1,
        }
    }
    data.add(&batch)?;
    data.done()?;
    stats.bytes = pos.get();
    stats.stack_nodes = stacks.len() as u64;
    if with_stacks {
        stream.stack_table(stacks)?;
    }
    stream.user_defined(
        format!(
            "perf samples={} frames={} stack_nodes={} lost={} skipped_records={} clock={clock}\n",
            stats.samples, stats.frames, stats.stack_nodes, stats.lost, stats.skipped
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
        // In pipe mode the end of the input ends the data; garbage is an
        // error at the byte where reading stopped.
        let e = import_perf_pipe(&b"PERFILE2 and then nothing a pipe header has"[..], "-", &mut w, ()).unwrap_err();
        assert!(matches!(e, ImportError::Invalid { place: Place::Offset(_), .. }), "{e:?}");
    }
}
