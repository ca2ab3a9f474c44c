//! The sampler's own binary profile (`--format profile`), in the layout of
//! the current writer of the original tool (little-endian, packed):
//!
//! * header, 36 bytes, written last (the file starts with zeros until the
//!   run ends): u32 magic (0 custom, 1 current, 2 voltage, 3 power), u64
//!   wall time µs, u64 latency (time the target was stopped) µs, u64
//!   sample count, u32 PMU data size (8: an f64; 0: none), u32 map count;
//! * per sample: u64 time (µs of `CLOCK_REALTIME`), the PMU data, u32
//!   thread count, then per thread u32 tid, u64 pc, u64 cumulative CPU
//!   time ns;
//! * the maps: u64 address, u64 size, 256-byte NUL-padded label (the
//!   file's base name); the first is the target's executable.
//!
//! Each sample is one `write`: nothing is buffered beyond the kernel's
//! page cache, as in the original.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;

use crate::pmu::Kind;
use crate::tracer::{History, Outcome, Tracer};

/// Bytes of the header.
pub const HEADER_SIZE: usize = 36;
/// Bytes of a map's label.
pub const LABEL_SIZE: usize = 256;

/// The header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// What the PMU value is.
    pub magic: u32,
    /// Wall time, µs.
    pub wall_us: u64,
    /// Time the target was stopped, µs.
    pub latency_us: u64,
    /// Samples.
    pub samples: u64,
    /// Bytes of PMU data per sample.
    pub pmu_size: u32,
    /// Maps after the samples.
    pub maps: u32,
}

impl Header {
    /// The 36 bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[0..4].copy_from_slice(&self.magic.to_le_bytes());
        b[4..12].copy_from_slice(&self.wall_us.to_le_bytes());
        b[12..20].copy_from_slice(&self.latency_us.to_le_bytes());
        b[20..28].copy_from_slice(&self.samples.to_le_bytes());
        b[28..32].copy_from_slice(&self.pmu_size.to_le_bytes());
        b[32..36].copy_from_slice(&self.maps.to_le_bytes());
        b
    }

    /// From the first 36 bytes of a profile.
    pub fn from_bytes(b: &[u8]) -> Option<Header> {
        let b: &[u8; HEADER_SIZE] = b.get(..HEADER_SIZE)?.try_into().ok()?;
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Some(Header {
            magic: u32_at(0),
            wall_us: u64_at(4),
            latency_us: u64_at(12),
            samples: u64_at(20),
            pmu_size: u32_at(28),
            maps: u32_at(32),
        })
    }
}

/// The maps of the profile: the modules of the command's first process
/// instance, its executable first.
pub fn maps(h: &History) -> Vec<(u64, u64, String)> {
    let Some(first) = h.processes.first() else { return Vec::new() };
    let mut v: Vec<(bool, u64, u64, String)> = h
        .modules
        .iter()
        .filter(|m| m.pid == first.pid && m.load_ns >= first.start_ns && first.end_ns.is_none_or(|e| m.load_ns < e))
        .map(|m| (!m.is_exe, m.start, m.len, m.path.rsplit('/').next().unwrap_or(&m.path).to_owned()))
        .collect();
    v.sort_by_key(|m| (m.0, m.1));
    v.into_iter().map(|(_, a, s, l)| (a, s, l)).collect()
}

/// Runs `tracer` writing a profile to `path`.
pub fn record(path: &Path, tracer: Tracer, pmu: Option<Kind>) -> Result<Outcome, Box<dyn std::error::Error>> {
    let mut f = File::create(path)?;
    f.write_all(&[0u8; HEADER_SIZE])?;
    let mut buf = Vec::new();
    let outcome = tracer.run(&mut |samples, value| {
        buf.clear();
        buf.extend_from_slice(&(crate::sys::realtime_ns() / 1000).to_le_bytes());
        if let Some(v) = value {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        buf.extend_from_slice(&(samples.len() as u32).to_le_bytes());
        for s in samples {
            buf.extend_from_slice(&s.tid.to_le_bytes());
            buf.extend_from_slice(&s.pc.to_le_bytes());
            buf.extend_from_slice(&s.cputime_ns.to_le_bytes());
        }
        f.write_all(&buf)
    })?;
    let maps = maps(&outcome.history);
    let mut tail = Vec::with_capacity(maps.len() * (16 + LABEL_SIZE));
    for (addr, size, label) in &maps {
        tail.extend_from_slice(&addr.to_le_bytes());
        tail.extend_from_slice(&size.to_le_bytes());
        let mut l = [0u8; LABEL_SIZE];
        let n = label.len().min(LABEL_SIZE - 1);
        l[..n].copy_from_slice(&label.as_bytes()[..n]);
        tail.extend_from_slice(&l);
    }
    f.write_all(&tail)?;
    let header = Header {
        magic: pmu.map_or(0, Kind::magic),
        wall_us: outcome.stats.wall_ns() / 1000,
        latency_us: outcome.stats.stopped_ns / 1000,
        samples: outcome.stats.ticks,
        pmu_size: if pmu.is_some() { 8 } else { 0 },
        maps: maps.len() as u32,
    };
    f.seek(SeekFrom::Start(0))?;
    f.write_all(&header.to_bytes())?;
    f.sync_all().or_else(|e| if e.kind() == io::ErrorKind::InvalidInput { Ok(()) } else { Err(e) })?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let h = Header { magic: 3, wall_us: 1, latency_us: 2, samples: 3, pmu_size: 8, maps: 4 };
        assert_eq!(Header::from_bytes(&h.to_bytes()), Some(h));
        assert_eq!(h.to_bytes()[28], 8);
        assert_eq!(Header::from_bytes(&[0; 35]), None);
    }
}
