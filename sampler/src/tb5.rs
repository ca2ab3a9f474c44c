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
//!
//! The user-defined types are those `tbrw import sampler` writes, so the
//! command line's reports and CSV export read both alike; the delta is what
//! `tbrw report --weight cputime` weighs by.

use std::io;
use std::path::Path;

use tbrw::*;
use tbrw_import::module_notes::{self, ModuleNote};

use crate::pmu::Kind;
use crate::tracer::{History, Outcome, ThreadSample, Threads, Tracer};

/// The user-defined descriptor types: the project's registry
/// (`tbrw_import::fields`), so reports and exports read what is written here.
pub mod field_type {
    pub use tbrw_import::fields::{CPUTIME, CPUTIME_DELTA, CURRENT, CUSTOM_VALUE as CUSTOM, VOLTAGE};
}

/// The name of the time stamp field: it says which clock it is, as the
/// CSV export reads it.
pub const TIME_FIELD: &str = "time_monotonic_raw_ns";

/// Bytes of a record without / with a PMU value.
pub const RECORD_SIZE: [usize; 2] = [44, 52];

fn entry(desc_type: u16, subtype: u16, data_size: u32, name: &str) -> DescEntry {
    DescEntry { desc_type, subtype, data_size, name: Some(name.into()), ..Default::default() }
}

/// The descriptor type of a PMU value.
pub fn value_type(kind: Kind) -> u16 {
    match kind {
        Kind::Custom => field_type::CUSTOM,
        Kind::Current => field_type::CURRENT,
        Kind::Voltage => field_type::VOLTAGE,
        Kind::Power => desc_type::POWER,
    }
}

/// The data descriptor of stream 0.
pub fn descriptor(pmu: Option<Kind>) -> Vec<DescEntry> {
    let mut v = vec![
        entry(desc_type::IP, desc_subtype::NONE, 8, "pc"),
        entry(desc_type::PID, desc_subtype::NONE, 4, "pid"),
        entry(desc_type::TID, desc_subtype::NONE, 4, "tid"),
        entry(desc_type::TIME_STAMP, desc_subtype::TS_NANOSECONDS, 8, TIME_FIELD),
        entry(field_type::CPUTIME, desc_subtype::NONE, 8, "cputime"),
        // The import's name for it, so both spell it alike.
        entry(field_type::CPUTIME_DELTA, desc_subtype::NONE, 8, "cputime_delta_ns"),
        entry(desc_type::PROCESSOR_NUMBER, desc_subtype::NONE, 4, "cpu"),
    ];
    if let Some(k) = pmu {
        v.push(entry(value_type(k), desc_subtype::NONE, 8, k.name()));
    }
    v
}

/// Appends the record of `s` to `out`.
pub fn encode(s: &ThreadSample, value: Option<f64>, out: &mut Vec<u8>) {
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
        sample_file_version: MIN_SAMPLE_FILE_VERSION,
    })?;
    let kind = info.pmu.as_ref().map(|p| p.0);
    let mut stream = w.stream(0)?.data_descriptor(&descriptor(kind))?;
    stream.events(&[Event {
        id: 0,
        flags: EventFlags::TBS,
        sav: info.period_ns / 1000,
        name: Some("sampler-tick".into()),
        arch_name: Some(std::env::consts::ARCH.into()),
        details: Vec::new(),
    }])?;
    let outcome = {
        let mut data = stream.data()?;
        let mut buf = Vec::new();
        let outcome = tracer.run(&mut |samples, value| {
            buf.clear();
            for s in samples {
                encode(s, value, &mut buf);
            }
            data.add(&buf).map_err(io::Error::other)
        })?;
        data.done()?;
        outcome
    };
    let st = &outcome.stats;
    stream.user_defined(
        format!(
            "sampler wall_time={} cpu_time={} samples={} records={} missed_ticks={} reached_hz={:.1} clock=CLOCK_MONOTONIC_RAW threads={}{}\n",
            st.wall_ns() / 1000,
            st.stopped_ns / 1000,
            st.ticks,
            st.records,
            st.missed_ticks,
            st.reached_hz(),
            threads_word(info.threads),
            info.pmu.as_ref().map(|(k, s)| format!(" magic={} pmu={s}", k.magic())).unwrap_or_default(),
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
            "sampler: ptrace, {:.0} Hz asked, {:.1} Hz reached, {}, time stamps in ns of CLOCK_MONOTONIC_RAW",
            1e9 / info.period_ns as f64,
            st.reached_hz(),
            match info.threads {
                Threads::OnCpu => "on-CPU",
                Threads::All => "all threads",
            }
        )),
    })?;
    stream.finish()?;
    let (pids, tids) = process_section(&outcome.history);
    w.write_process_threads(&pids, &tids)?;
    w.write_modules(&modules(&outcome.history))?;
    w.write_user_defined_global(module_offsets(&outcome.history).as_bytes())?;
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
/// global section holds the module notes (`tbrw_import::module_notes`), one
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
        for (pmu, size) in [(None, RECORD_SIZE[0]), (Some(Kind::Power), RECORD_SIZE[1])] {
            let layout = RecordLayout::from_entries(&descriptor(pmu)).unwrap();
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
            encode(&s, pmu.map(|_| 1.5), &mut out);
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
        }
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
