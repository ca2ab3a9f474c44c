//! Test support: realistic sampler profiles, and a strict checker of
//! VTune's "CSV file with external data" format.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;

use tbrw_cli::sampler::{write_header, write_sample, Header, Magic, Sample, ThreadSample, VmMap};

pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// VM maps of a typical small program: its ELF segments, libc, heap, stack, vdso.
pub fn maps() -> Vec<VmMap> {
    let m = |a: u64, s: u64, l: &str| VmMap { address: a, size: s, label: l.into() };
    vec![
        m(0x55d0_0000_0000, 0x1000, "/usr/local/bin/prog"),
        m(0x55d0_0000_1000, 0x6000, "/usr/local/bin/prog"),
        m(0x55d0_0000_7000, 0x2000, "/usr/local/bin/prog"),
        m(0x55d0_0100_0000, 0x21000, "[heap]"),
        m(0x7f3a_0000_0000, 0x28000, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
        m(0x7f3a_0002_8000, 0x195000, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
        m(0x7f3a_0040_0000, 0x1000, "/usr/lib/x86_64-linux-gnu/libm.so.6"),
        m(0x7ffd_1234_0000, 0x21000, "[stack]"),
        m(0x7ffd_1237_0000, 0x2000, "[vdso]"),
        m(0x7ffd_1238_0000, 0x1000, ""),
    ]
}

/// A profile of `samples` samples with 1-3 threads each; returns the bytes
/// and, per VM map index, how many (sample, thread) pcs fall in it (the
/// reference the import's binding must agree with), plus those in no map.
pub fn profile(magic: Magic, samples: u64, seed: u64) -> (Vec<u8>, Vec<u64>, u64) {
    let maps = maps();
    let mut rng = Rng(seed | 1);
    let mut out = Vec::new();
    write_header(&mut out, &Header { magic, wall_time: 123_456_789, cpu_time: 4_321, samples, maps: maps.clone() })
        .unwrap();
    let mut per_map = vec![0u64; maps.len()];
    let mut none = 0;
    let mut cputime = [0u64; 3];
    for i in 0..samples {
        let n = 1 + rng.below(3) as usize;
        let mut s = Sample { value: 0.25 + (i % 100) as f64 / 64.0, threads: Vec::new() };
        for (t, ct) in cputime.iter_mut().enumerate().take(n) {
            let pc = if rng.below(20) == 0 {
                0x1000 + rng.below(0x1000) // no map
            } else {
                let m = &maps[rng.below(maps.len() as u64) as usize];
                m.address + rng.below(m.size)
            };
            match maps.iter().position(|m| m.address <= pc && pc < m.address + m.size) {
                Some(k) => per_map[k] += 1,
                None => none += 1,
            }
            *ct += 1000 + rng.below(100);
            s.threads.push(ThreadSample { tid: 7000 + t as u32, pc, cputime: *ct });
        }
        write_sample(&mut out, &s).unwrap();
    }
    (out, per_map, none)
}

pub fn bzip2(bytes: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Checks one CSV file against VTune's external-data format, strictly.
/// Returns the number of data rows.
pub fn check_vtune_csv(path: &Path) -> usize {
    let name = path.file_name().unwrap().to_str().unwrap();
    let stem = name.strip_suffix(".csv").unwrap_or_else(|| panic!("{name}: not a .csv file"));
    let (_user, host) = stem.rsplit_once("-hostname-").unwrap_or_else(|| panic!("{name}: no -hostname- in the name"));
    assert!(!host.is_empty() && !host.contains('/'), "{name}: bad host name");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "{name}: last line not terminated");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_else(|| panic!("{name}: empty")).split(',').collect();
    let clocks = ["QPC", "CLOCK_MONOTONIC_RAW", "RDTSC", "UTC"];
    let interval = header[0] == "name";
    let mut optional_from;
    if interval {
        assert!(header.len() >= 3, "{name}: interval header too short");
        let clock =
            header[1].strip_prefix("start_tsc.").unwrap_or_else(|| panic!("{name}: column 2 is {:?}", header[1]));
        assert!(clocks.contains(&clock), "{name}: clock {clock:?}");
        assert_eq!(header[2], "end_tsc", "{name}");
        optional_from = 3;
    } else {
        let clock = header[0].strip_prefix("tsc.").unwrap_or_else(|| panic!("{name}: column 1 is {:?}", header[0]));
        assert!(clocks.contains(&clock), "{name}: clock {clock:?}");
        optional_from = 1;
        while optional_from < header.len() && header[optional_from] != "pid" && header[optional_from] != "tid" {
            let c = header[optional_from];
            let (counter, kind) = c.rsplit_once('.').unwrap_or_else(|| panic!("{name}: counter column {c:?}"));
            assert!(!counter.is_empty() && (kind == "COUNT" || kind == "INST"), "{name}: counter column {c:?}");
            assert!(!counter.contains(','), "{name}");
            optional_from += 1;
        }
        assert!(optional_from > 1, "{name}: no counter column");
    }
    let rest = &header[optional_from..];
    assert!(
        rest.is_empty() || rest == ["pid"] || rest == ["tid"] || rest == ["pid", "tid"],
        "{name}: trailing columns {rest:?}"
    );
    let mut rows = 0;
    for (i, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{name}: row {} has {} cells", i + 1, cells.len());
        let int =
            |s: &str, what: &str| s.parse::<u64>().unwrap_or_else(|_| panic!("{name}: row {}: {what} {s:?}", i + 1));
        if interval {
            assert!(!cells[0].is_empty(), "{name}: row {}: empty name", i + 1);
            let (s, e) = (int(cells[1], "start"), int(cells[2], "end"));
            assert!(e >= s, "{name}: row {}: ends before it starts", i + 1);
        } else {
            int(cells[0], "tsc");
            for c in &cells[1..optional_from] {
                assert!(
                    c.is_empty() || c.parse::<f64>().is_ok_and(f64::is_finite),
                    "{name}: row {}: value {c:?}",
                    i + 1
                );
            }
        }
        for c in &cells[optional_from..] {
            assert!(c.is_empty() || c.parse::<u32>().is_ok(), "{name}: row {}: pid/tid {c:?}", i + 1);
        }
        rows += 1;
    }
    rows
}
