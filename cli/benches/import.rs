//! Importing a large sampler profile: MB/s of profile read and the peak
//! resident memory, against the profile's size.
//!
//! `cargo bench -p tbrw-cli --bench import` writes profiles of 64 MiB and
//! 1 GiB (4 threads per sample) and imports each; pass sizes in MiB to
//! choose (`-- 256 2048`). Set TBRW_BENCH_DIR to choose the disk.

use std::io::{BufWriter, Write};
use std::time::Instant;

use tbrw_elf_profile::{write_header, write_sample, Header, Magic, Sample, ThreadSample, VmMap};
use tbrw_import::elf_profile::{import_profile, ImportOptions};

mod support;
use support::status_kib;

fn main() {
    let sizes: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![64, 1024] } else { sizes };
    let dir = match std::env::var_os("TBRW_BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d).unwrap(),
        None => tempfile::tempdir_in(".").unwrap(),
    };
    let maps: Vec<VmMap> = (0..64u64)
        .map(|i| VmMap {
            address: 0x7f00_0000_0000 + i * 0x10_0000,
            size: 0x8_0000,
            label: format!("/usr/lib/lib{i}.so"),
        })
        .collect();
    for mib in sizes {
        let per_sample = 12 + 4 * 20u64;
        let samples = mib * (1 << 20) / per_sample;
        let profile = dir.path().join("profile.bin");
        {
            let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&profile).unwrap());
            write_header(
                &mut out,
                &Header { magic: Magic::Current, wall_time: 1, cpu_time: 1, samples, maps: maps.clone() },
            )
            .unwrap();
            let mut s = Sample { value: 0.0, threads: vec![ThreadSample { tid: 0, pc: 0, cputime: 0 }; 4] };
            for i in 0..samples {
                s.value = (i % 1000) as f64 * 0.001;
                for (t, th) in s.threads.iter_mut().enumerate() {
                    th.tid = 100 + t as u32;
                    th.pc = 0x7f00_0000_0000 + ((i * 7919 + t as u64 * 104729) % (64 * 0x10_0000));
                    th.cputime = i * 1000;
                }
                write_sample(&mut out, &s).unwrap();
            }
            out.flush().unwrap();
        }
        let bytes = std::fs::metadata(&profile).unwrap().len();
        let out = dir.path().join("profile.tb5");
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let base = status_kib("VmRSS:");
        let t = Instant::now();
        let mut w = tbrw::Tb5Writer::create(&out).unwrap();
        let input = std::fs::File::open(&profile).unwrap();
        let input_name = profile.display().to_string();
        let stats =
            import_profile(input, &input_name, &mut w, &ImportOptions::default(), &Default::default(), ()).unwrap();
        w.close().unwrap();
        let s = t.elapsed().as_secs_f64();
        let peak = status_kib("VmHWM:");
        println!(
            "{mib:>6} MiB profile: {} samples, {} records, imported in {s:.2} s = {:.0} MB/s of profile; peak RSS {peak} KiB (before {base} KiB); TB5 file {} MiB",
            stats.samples,
            stats.records,
            bytes as f64 / s / 1e6,
            std::fs::metadata(&out).unwrap().len() >> 20
        );
        std::fs::remove_file(&profile).unwrap();
        std::fs::remove_file(&out).unwrap();
    }
}
