//! Recording a run to TB5 through `tbrw`'s typestate writer: the global
//! sections a VTune-compatible file needs (guide 6.2), stream 0 whose data
//! section streams to disk tick by tick, then the process/thread and
//! module sections from what the tracer saw.
//!
//! Record layout of stream 0 (little-endian, packed):
//!
//! | bytes | field | descriptor |
//! |---|---|---|
//! | 0..8 | pc | `ST_IP` |
//! | 8..12 | pid | `ST_PID` |
//! | 12..16 | tid | `ST_TID` |
//! | 16..24 | ns of `CLOCK_MONOTONIC_RAW` | `ST_TIME_STAMP`/`SST_TS_NANOSECONDS`, named `time_monotonic_raw_ns` |
//! | 24..32 | cumulative CPU time, ns | user-defined [`field_type::CPUTIME`] |
//! | 32..40 | CPU time since the thread's previous sample, ns | user-defined [`field_type::CPUTIME_DELTA`] |
//! | 40..44 | CPU number | `ST_PROCESSOR_NUMBER` |
//! | 44..52 | PMU value, f64 (with `-p` only) | [`field_type`] or `ST_POWER` |
//! | last 4 | stack id, u32 (with `--call-graph fp`/`dwarf` only) | `tbrw::STACK_ID_FIELD`, named `stack_id` |
//!
//! The user-defined types are those `tbrw import sampler` writes, so the
//! command line's reports and CSV export read both alike; the delta is what
//! `tbrw report --weight cputime` weighs by.
//!
//! With call stacks, each sample's stack is interned in the stream's stack
//! table ([`tbrw::StackTable`], docs/FORMAT.md "Stack table") as the perf
//! import interns perf's call chains: innermost first, the sampled pc
//! itself, then its callers' return addresses; the record holds its node.
//! The table (memory: the distinct frames, not the samples) is stored when
//! the data section is done, on every way the run ends that completes the
//! file (the command exits or is killed, ^C).

use std::io;
use std::path::Path;

use tbrw::*;
use tbrw_schema::descriptor::{SampleDescriptor, STACK_ID_NAME};
use tbrw_schema::module_notes::{self, ModuleNote};

use crate::callstack::CallGraph;
use crate::pmu::Kind;
use crate::tracer::{History, Outcome, ThreadSample, Threads, Tracer};

/// The user-defined descriptor types: the project's registry
/// (`tbrw_schema::fields`), so reports and exports read what is written here.
pub mod field_type {
    pub use tbrw_schema::fields::{CPUTIME, CPUTIME_DELTA, CURRENT, CUSTOM_VALUE as CUSTOM, VOLTAGE};
}

/// The name of the time stamp field: it says which clock it is, as the
/// CSV export reads it.
pub const TIME_FIELD: &str = "time_monotonic_raw_ns";

/// Bytes of a record without / with a PMU value (without a stack id).
pub const RECORD_SIZE: [usize; 2] = [44, 52];

/// Bytes a stack id adds to a record (`--call-graph fp`/`dwarf`).
pub const STACK_ID_SIZE: usize = 4;

/// The name of the stack id field: the perf import's.
pub const STACK_FIELD: &str = STACK_ID_NAME;

/// The descriptor type of a PMU value.
pub fn value_type(kind: Kind) -> u16 {
    match kind {
        Kind::Custom => field_type::CUSTOM,
        Kind::Current => field_type::CURRENT,
        Kind::Voltage => field_type::VOLTAGE,
        Kind::Power => desc_type::POWER,
    }
}

/// The data descriptor of stream 0 (the standard sample descriptor, as
/// the perf import's); `stacks`: records end with a stack id.
pub fn descriptor(pmu: Option<Kind>, stacks: bool) -> Vec<DescEntry> {
    let mut d = SampleDescriptor::new("pc", TIME_FIELD)
        .with(field_type::CPUTIME, 8, "cputime")
        // The import's name for it, so both spell it alike.
        .with(field_type::CPUTIME_DELTA, 8, "cputime_delta_ns")
        .cpu(4);
    if let Some(k) = pmu {
        d = d.with(value_type(k), 8, k.name());
    }
    d.finish(stacks)
}

/// Appends the record of `s` to `out`, with its stack id when the
/// descriptor has the field.
pub fn encode(s: &ThreadSample, value: Option<f64>, stack_id: Option<u32>, out: &mut Vec<u8>) {
    out.extend_from_slice(&s.pc.to_le_bytes());
    out.extend_from_slice(&s.pid.to_le_bytes());
    out.extend_from_slice(&s.tid.to_le_bytes());
    out.extend_from_slice(&s.time_ns.to_le_bytes());
    out.extend_from_slice(&s.cputime_ns.to_le_bytes());
    out.extend_from_slice(&s.cputime_delta_ns.to_le_bytes());
    out.extend_from_slice(&s.cpu.to_le_bytes());
    if let Some(v) = value {
        out.extend_from_slice(&v.to_le_bytes());
    }
    if let Some(id) = stack_id {
        out.extend_from_slice(&id.to_le_bytes());
    }
}

/// The stacks of a recording with `--call-graph`: each sample's stack
/// interned once in the table, the last one remembered (a tick's repeats
/// and a thread spinning in one place cost one comparison).
#[derive(Debug, Default)]
pub struct Stacks {
    table: StackTable,
    frames: Vec<u64>,
    last: Option<u32>,
    /// Frames of the samples' stacks, summed.
    pub frames_seen: u64,
}

impl Stacks {
    /// The stack id of `s`: its pc, then its callers.
    pub fn id(&mut self, s: &ThreadSample) -> io::Result<u32> {
        let n = 1 + s.callers.len();
        self.frames_seen += n as u64;
        if let Some(id) = self.last {
            if self.frames.len() == n && self.frames[0] == s.pc && self.frames[1..] == s.callers[..] {
                return Ok(id);
            }
        }
        self.frames.clear();
        self.frames.push(s.pc);
        self.frames.extend_from_slice(&s.callers);
        let id = self.table.intern_innermost_first(&self.frames).map_err(io::Error::other)?;
        self.last = Some(id);
        Ok(id)
    }

    /// The table's nodes.
    pub fn nodes(&self) -> usize {
        self.table.len()
    }

    /// The table, to store.
    pub fn into_table(self) -> StackTable {
        self.table
    }
}

/// What the stream info and descriptions say about the run.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The command line, as given.
    pub command_line: String,
    /// Nanoseconds between ticks.
    pub period_ns: u64,
    /// What the PMU value measures and the `-p` that chose it.
    pub pmu: Option<(Kind, String)>,
    /// Which threads were sampled at each tick.
    pub threads: Threads,
    /// How call stacks were taken (`None`: no stack id field, no table).
    pub call_graph: CallGraph,
}

/// Ticks of 100 ns since 1601 (Windows `FILETIME`) from ns since 1970.
pub fn filetime(unix_ns: u64) -> FileTime {
    FileTime::from_ticks(unix_ns / 100 + 116_444_736_000_000_000)
}

/// Runs `tracer` recording into a new TB5 file at `path`. The file
/// appears only when complete; a run the tracer ends early (a killed
/// command, ^C) still completes it.
pub fn record(path: &Path, tracer: Tracer, info: &RunInfo) -> Result<Outcome, Box<dyn std::error::Error>> {
    let mut w = Tb5Writer::create(path)?;
    w.write_hardware(&crate::host::system())?;
    w.write_software(&crate::host::software())?;
    w.write_version_info(&VersionInfo {
        sampling_driver_version: UNKNOWN_DRIVER_VERSION,
        bind_version: 0,
        // The cpus above are Intel 64 ones on x86-64: Intel's reader reads
        // them right only under the version its own writer states.
        sample_file_version: INTEL_SAMPLE_FILE_VERSION,
    })?;
    let kind = info.pmu.as_ref().map(|p| p.0);
    let with_stacks = info.call_graph != CallGraph::None;
    let mut stream = w.stream(0)?.data_descriptor(&descriptor(kind, with_stacks))?;
    stream.events(&[Event {
        id: 0,
        flags: EventFlags::TBS,
        sav: info.period_ns / 1000,
        name: Some("sampler-tick".into()),
        arch_name: Some(std::env::consts::ARCH.into()),
        details: Vec::new(),
    }])?;
    let mut stacks = with_stacks.then(Stacks::default);
    let outcome = {
        let mut data = stream.data()?;
        let mut buf = Vec::new();
        let outcome = tracer.run(&mut |samples, value| {
            buf.clear();
            for s in samples {
                let id = match stacks.as_mut() {
                    Some(t) => Some(t.id(s)?),
                    None => None,
                };
                encode(s, value, id, &mut buf);
            }
            data.add(&buf).map_err(io::Error::other)
        })?;
        data.done()?;
        outcome
    };
    // Stored whatever ended the run: tracer.run returns (and the file is
    // completed) when the command exits, is killed, or ^C stops recording.
    let stack_words = match stacks {
        Some(t) => {
            let words =
                format!(" call_graph={} frames={} stack_nodes={}", info.call_graph.name(), t.frames_seen, t.nodes());
            stream.stack_table(t.into_table())?;
            words
        }
        None => String::new(),
    };
    let st = &outcome.stats;
    stream.user_defined(
        format!(
            "sampler wall_time={} cpu_time={} samples={} records={} missed_ticks={} reached_hz={:.1} clock=CLOCK_MONOTONIC_RAW threads={}{}{}\n",
            st.wall_ns() / 1000,
            st.stopped_ns / 1000,
            st.ticks,
            st.records,
            st.missed_ticks,
            st.reached_hz(),
            threads_word(info.threads),
            info.pmu.as_ref().map(|(k, s)| format!(" magic={} pmu={s}", k.magic())).unwrap_or_default(),
            stack_words,
        )
        .as_bytes(),
    )?;
    let stream = stream.info(&StreamInfo {
        sampling_duration_ms: (st.wall_ns() / 1_000_000).min(u32::MAX as u64) as u32,
        stream_type: stream_type::SAMPLING,
        sampling_interval_us: (info.period_ns / 1000).min(u32::MAX as u64) as u32,
        start_time: filetime(st.start_realtime_ns),
        end_time: filetime(st.end_realtime_ns),
        command_line: Some(info.command_line.clone()),
        cpu_mask: std::fs::read_to_string("/sys/devices/system/cpu/online").ok().map(|s| s.trim().to_owned()),
        comment: Some(format!(
            "sampler: ptrace, {:.0} Hz asked, {:.1} Hz reached, {}{}, time stamps in ns of CLOCK_MONOTONIC_RAW",
            1e9 / info.period_ns as f64,
            st.reached_hz(),
            match info.threads {
                Threads::OnCpu => "on-CPU",
                Threads::All => "all threads",
            },
            match info.call_graph {
                CallGraph::None => String::new(),
                g => format!(", call stacks by --call-graph {}", g.name()),
            }
        )),
    })?;
    stream.finish()?;
    let (pids, tids) = process_section(&outcome.history);
    w.write_process_threads(&pids, &tids)?;
    w.write_modules(&modules(&outcome.history))?;
    w.write_user_defined_global(module_offsets(&outcome.history).as_bytes())?;
    if !outcome.history.images.is_empty() {
        // The vDSO's symbols, which no file holds (docs/SAMPLER.md, "The vDSO").
        w.store_symbols(&tbrw_symbols::stored::encode(&outcome.history.images))?;
    }
    w.close()?;
    Ok(outcome)
}

/// The process and thread records: a creation record for each process
/// instance and thread, and a termination record for each that ended.
pub fn process_section(h: &History) -> (Vec<Pid>, Vec<Tid>) {
    let when = PidTidFlags::WHEN_TSC;
    let mut pids = Vec::new();
    for p in &h.processes {
        let base = Pid {
            id: p.pid,
            flags: when,
            event_when: p.start_ns,
            path: Some(p.path.clone()),
            name: Some(p.name.clone()),
            ..Default::default()
        };
        if let Some(end) = p.end_ns {
            pids.push(base.clone());
            pids.push(Pid { flags: when | PidTidFlags::DESTROYED, event_when: end, ..base });
        } else {
            pids.push(base);
        }
    }
    let mut tids = Vec::new();
    for t in &h.threads {
        let base = Tid {
            associated_pid: t.pid,
            id: t.tid,
            flags: when,
            event_when: t.start_ns,
            name: Some(t.name.clone()),
            ..Default::default()
        };
        if let Some(end) = t.end_ns {
            tids.push(base.clone());
            tids.push(Tid { flags: when | PidTidFlags::DESTROYED, event_when: end, ..base });
        } else {
            tids.push(base);
        }
    }
    (pids, tids)
}

/// The module records. Times are on the stream's time stamp clock, so
/// they carry `TSC_USED` (binding compares them with the time stamps).
pub fn modules(h: &History) -> Vec<Module> {
    h.modules
        .iter()
        .map(|m| {
            let mut flags = ModuleFlags::LOADED | ModuleFlags::TSC_USED;
            if m.is_exe {
                flags |= ModuleFlags::IS_EXE;
            }
            if m.first {
                flags |= ModuleFlags::FIRST_MODULE_REC_IN_PROCESS;
            }
            Module {
                associated_pid: m.pid,
                flags,
                event_when: m.load_ns,
                segment_type: processor_mode::BIT64,
                length: m.len,
                load_address: m.start,
                unload_tsc: m.unload_ns.unwrap_or(NEVER_UNLOADED),
                name: Some(m.path.rsplit('/').next().unwrap_or(&m.path).to_owned()),
                path: Some(m.path.clone()),
                ..Default::default()
            }
        })
        .collect()
}

/// How the stream's user-defined line names [`Threads`].
pub fn threads_word(t: Threads) -> &'static str {
    match t {
        Threads::OnCpu => "on-cpu",
        Threads::All => "all",
    }
}

/// `TBRW_MODULE` has no field for a mapping's file offset nor for the
/// file's build id, which a symbolizer needs (the offset to place the
/// module, the build id to refuse a file rebuilt since): the user-defined
/// global section holds the module notes (`tbrw_schema::module_notes`), one
/// line per module.
pub fn module_offsets(h: &History) -> String {
    let notes: Vec<ModuleNote> =
        h.modules.iter().map(|m| ModuleNote { offset: Some(m.offset), build_id: m.build_id.clone() }).collect();
    module_notes::encode(notes.iter().enumerate().map(|(i, n)| (i as u64, n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_match_the_descriptor() {
        for (pmu, stacks) in [(None, false), (Some(Kind::Power), false), (None, true), (Some(Kind::Power), true)] {
            let size = RECORD_SIZE[pmu.is_some() as usize] + if stacks { STACK_ID_SIZE } else { 0 };
            let layout = RecordLayout::from_entries(&descriptor(pmu, stacks)).unwrap();
            assert_eq!(layout.record_size() as usize, size);
            let s = ThreadSample {
                time_ns: 5,
                pid: 2,
                tid: 3,
                pc: 0x401000,
                cputime_ns: 7,
                cputime_delta_ns: 6,
                cpu: 1,
                callers: Vec::new(),
            };
            let mut out = Vec::new();
            encode(&s, pmu.map(|_| 1.5), stacks.then_some(9), &mut out);
            assert_eq!(out.len(), size);
            let at = |t: u16| layout.find(t, None).unwrap();
            let f = at(desc_type::TIME_STAMP);
            assert_eq!(out[f.offset as usize..][..8], 5u64.to_le_bytes());
            let f = at(desc_type::PROCESSOR_NUMBER);
            assert_eq!(out[f.offset as usize..][..4], 1u32.to_le_bytes());
            let f = at(field_type::CPUTIME);
            assert_eq!(out[f.offset as usize..][..8], 7u64.to_le_bytes());
            let f = at(field_type::CPUTIME_DELTA);
            assert_eq!(out[f.offset as usize..][..8], 6u64.to_le_bytes());
            match layout.find(STACK_ID_FIELD, None) {
                Some(f) => {
                    assert!(stacks);
                    assert_eq!(f.size, 4);
                    assert_eq!(out[f.offset as usize..][..4], 9u32.to_le_bytes());
                }
                None => assert!(!stacks),
            }
        }
    }

    /// A stack is the sampled pc then its callers, as the perf import
    /// stores perf's call chains; equal stacks share an id.
    #[test]
    fn stacks_start_with_the_sampled_pc() {
        let sample = |pc, callers: &[u64]| ThreadSample {
            time_ns: 0,
            pid: 1,
            tid: 1,
            pc,
            cputime_ns: 0,
            cputime_delta_ns: 0,
            cpu: 0,
            callers: callers.to_vec(),
        };
        let mut st = Stacks::default();
        let a = st.id(&sample(0x30, &[0x20, 0x10])).unwrap();
        assert_eq!(st.id(&sample(0x30, &[0x20, 0x10])).unwrap(), a);
        let b = st.id(&sample(0x31, &[0x20, 0x10])).unwrap();
        let c = st.id(&sample(0x30, &[0x21, 0x10])).unwrap();
        assert_eq!(st.id(&sample(0x30, &[0x20, 0x10])).unwrap(), a);
        assert!(a != b && a != c && b != c);
        let lone = st.id(&sample(0x30, &[])).unwrap();
        assert!(lone != a);
        assert_eq!(st.nodes(), 7);
        assert_eq!(st.frames_seen, 3 + 3 + 3 + 3 + 3 + 1);
        let mut table = st.into_table();
        assert_eq!(table.intern_innermost_first(&[0x30, 0x20, 0x10]).unwrap(), a);
    }

    #[test]
    fn module_notes_carry_offsets_and_build_ids() {
        let m = |offset, build_id| crate::tracer::ModRec {
            pid: 1,
            path: "/bin/x".into(),
            start: 0x1000,
            len: 0x1000,
            offset,
            load_ns: 0,
            unload_ns: None,
            build_id,
            is_exe: false,
            first: false,
        };
        let h = History { modules: vec![m(0x2000, Some(vec![0xab, 0x01])), m(0, None)], ..History::default() };
        let text = module_offsets(&h);
        assert!(text.contains("module 0 offset=0x2000 build_id=ab01\n"), "{text}");
        let back = module_notes::decode(&text);
        assert_eq!(back[&0], ModuleNote { offset: Some(0x2000), build_id: Some(vec![0xab, 0x01]) });
        assert_eq!(back[&1], ModuleNote { offset: Some(0), build_id: None });
    }

    #[test]
    fn filetime_of_the_unix_epoch() {
        assert_eq!(filetime(0).ticks(), 116_444_736_000_000_000);
    }
}
