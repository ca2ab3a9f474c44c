//! The sampler's own binary profile (`--format profile`), in the layout of
//! the current writer of the original tool (`Layout::Head`, little-endian),
//! written through the one codec of the format,
//! `tbrw-elf-profile`:
//!
//! * the header, written last (the file starts with zeros until the run
//!   ends, which is how a killed run is recognised);
//! * per sample: the time (µs of `CLOCK_REALTIME`), the PMU data, the
//!   thread count, then per thread its tid, pc and cumulative CPU time;
//! * the maps, the target's executable first.
//!
//! Each sample is one `write`: nothing is buffered beyond the kernel's
//! page cache, as in the original. The writes go to a work file put at the
//! output path when the run ends (`tbrw::work_file`, as every other output):
//! a sampler killed meanwhile leaves no profile, never one whose header is
//! still zeros.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;

use tbrw::work_file::WorkFile;
use tbrw_elf_profile::{
    encode_header, write_map, write_sample_head, write_thread, Endian, Format, Layout, Magic, ProfileHeader,
    ThreadSample, VmMap,
};

use crate::pmu::Kind;
use crate::tracer::{History, Outcome, Tracer};

/// The maps of the profile: the modules of the command's first process
/// instance, its executable first.
pub fn maps(h: &History) -> Vec<VmMap> {
    let Some(first) = h.processes.first() else { return Vec::new() };
    let mut v: Vec<(bool, VmMap)> = h
        .modules
        .iter()
        .filter(|m| m.pid == first.pid && m.load_ns >= first.start_ns && first.end_ns.is_none_or(|e| m.load_ns < e))
        .map(|m| {
            let label = m.path.rsplit('/').next().unwrap_or(&m.path);
            // The format's labels are 255 bytes at most, without NUL.
            let label: String = label
                .chars()
                .filter(|&c| c != '\0')
                .scan(0, |n, c| {
                    *n += c.len_utf8();
                    (*n <= 255).then_some(c)
                })
                .collect();
            (!m.is_exe, VmMap { address: m.start, size: m.len, label })
        })
        .collect();
    v.sort_by_key(|(not_exe, m)| (*not_exe, m.address));
    v.into_iter().map(|(_, m)| m).collect()
}

/// The profile's format: the current writer's layout, little-endian, with
/// an 8-byte PMU value when a PMU source is given.
pub fn format(pmu: Option<Kind>) -> Format {
    Format { layout: Layout::Head, endian: Endian::Little, pmu_size: if pmu.is_some() { 8 } else { 0 } }
}

/// Runs `tracer` writing a profile to `path`: built in a work file, which
/// takes the name when the run ends (a link there is replaced itself, never
/// followed; see `tbrw::work_file`).
pub fn record(path: &Path, tracer: Tracer, pmu: Option<Kind>) -> Result<Outcome, Box<dyn std::error::Error>> {
    let fmt = format(pmu);
    let work = WorkFile::create(path).map_err(|source| tbrw::Error::FileOpen { path: path.to_owned(), source })?;
    let mut f: &File = work.file();
    f.write_all(&vec![0u8; fmt.layout.header_size() as usize])?;
    let mut buf = Vec::new();
    // Samples written: the ticks, and the last CPU time of the threads
    // that ended after the last tick (one more sample).
    let mut written = 0u64;
    let outcome = tracer.run(&mut |samples, value| {
        buf.clear();
        written += 1;
        let time_us = crate::sys::realtime_ns() / 1000;
        let pmu = value.map(|v| v.to_le_bytes().to_vec()).unwrap_or_default();
        let threads = u32::try_from(samples.len()).map_err(|_| io::Error::other("more than 2^32 threads"))?;
        write_sample_head(&mut buf, &fmt, time_us, &pmu, threads)?;
        for s in samples {
            write_thread(&mut buf, &fmt, &ThreadSample { tid: s.tid, pc: s.pc, cputime: s.cputime_ns })?;
        }
        f.write_all(&buf)
    })?;
    let maps = maps(&outcome.history);
    let mut tail = Vec::new();
    for m in &maps {
        write_map(&mut tail, &fmt, m)?;
    }
    f.write_all(&tail)?;
    let magic = Magic::from_value(pmu.map_or(0, Kind::magic)).unwrap_or(Magic::Custom);
    let header = ProfileHeader {
        magic,
        wall_us: outcome.stats.wall_ns() / 1000,
        latency_us: outcome.stats.stopped_ns / 1000,
        samples: written,
        maps: maps.len() as u64,
        killed: false,
    };
    f.seek(SeekFrom::Start(0))?;
    f.write_all(&encode_header(&fmt, &header)?)?;
    f.sync_all()?;
    work.persist().map_err(|e| format!("{}: put into place: {e}", path.display()))?;
    Ok(outcome)
}
