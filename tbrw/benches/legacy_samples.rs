//! Write and read back legacy samples (32-byte PC record + 8-byte TSC),
//! printing throughput and the writer's peak resident memory.
//!
//! `cargo bench -p tbrw --bench legacy_samples` runs 10 million samples
//! (400 MB) and, for the memory-growth check, 1 and 3 million first. Pass
//! a sample count to run just that: `cargo bench -p tbrw --bench
//! legacy_samples -- 50000000`. Set TBRW_BENCH_DIR to choose the disk.
//!
//! Figures:
//! - write: the whole create → add → close path, synced (`Durability::Synced`: the final fsync included),
//!   against `dd if=/dev/zero bs=1M conv=fsync` of the same size on the
//!   same disk;
//! - read: iterating over every record from the page cache, raw and
//!   decoded as `LegacySample`;
//! - writer peak RSS (VmHWM after resetting it), for several record counts.

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use tbrw::*;

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field)).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

fn fill(start: u64, buf: &mut [u8]) {
    for (k, r) in buf.chunks_exact_mut(40).enumerate() {
        let i = start + k as u64;
        let mut pc = SampleRecordPc::default();
        pc.set_ia32(0x400000 + (i as u32 & 0xFFFF), 0x246, CodeDescriptor::default());
        pc.pid_rec_index = 0x1000 + (i % 7) as u32;
        pc.set_pid_rec_index_raw(true);
        pc.tid = (i % 31) as u32;
        r[..32].copy_from_slice(&pc.to_bytes());
        r[32..].copy_from_slice(&(i * 1000).to_le_bytes());
    }
}

/// Returns (seconds, peak RSS KiB).
fn write(path: &Path, samples: u64, guide_style: bool) -> (f64, u64) {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let t = Instant::now();
    let mut w = Tb5Writer::create_with(path, Durability::Synced).unwrap();
    w.write_version_info(&VersionInfo {
        sampling_driver_version: UNKNOWN_DRIVER_VERSION,
        bind_version: 0,
        sample_file_version: 16,
    })
    .unwrap();
    // The other sections verify() requires, so the read side can verify the file.
    w.write_hardware(&System::default()).unwrap();
    w.write_software(&Software { application: Some(Application::default()), ..Default::default() }).unwrap();
    w.write_modules(&[Module {
        associated_pid: 0x1000,
        load_address: 0x400000,
        length: 0x10000,
        ..Default::default()
    }])
    .unwrap();
    let mut s =
        w.stream(0).unwrap().info(&StreamInfo::default()).unwrap().data_descriptor(&legacy_descriptor()).unwrap();
    s.events(&[Event::default()]).unwrap();
    let mut data = s.data().unwrap();
    // Samples are produced in batches, as a collector's ring buffer would hand them over.
    let batch = 8192u64;
    let mut buf = vec![0u8; batch as usize * 40];
    let mut i = 0;
    while i < samples {
        let n = (samples - i).min(batch);
        let b = &mut buf[..n as usize * 40];
        fill(i, b);
        if guide_style {
            for r in b.chunks_exact(40) {
                data.add(&r[..32]).unwrap();
                data.add(&r[32..]).unwrap();
            }
        } else {
            data.add(b).unwrap();
        }
        i += n;
    }
    data.done().unwrap();
    s.finish().unwrap();
    w.close().unwrap();
    (t.elapsed().as_secs_f64(), status_kib("VmHWM:"))
}

fn dd(path: &Path, bytes: u64) -> Option<f64> {
    let mib = bytes.div_ceil(1 << 20);
    let t = Instant::now();
    let ok = Command::new("dd")
        .args(["if=/dev/zero", &format!("of={}", path.display()), "bs=1M", &format!("count={mib}"), "conv=fsync"])
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?
        .success();
    let s = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(path);
    ok.then_some(s * bytes as f64 / (mib << 20) as f64)
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let counts = if args.is_empty() { vec![1_000_000, 3_000_000, 10_000_000] } else { args };
    let dir = match std::env::var_os("TBRW_BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d).unwrap(),
        None => tempfile::tempdir_in(".").unwrap(),
    };
    let path = dir.path().join("bench.tb5");
    let mb = |bytes: u64, s: f64| bytes as f64 / s / 1e6;
    println!("legacy samples: 40-byte records (PC + TSC), data section only in the MB figures");
    for &n in &counts {
        let bytes = n * 40;
        let (ws, peak) = write(&path, n, false);
        let dds = dd(&dir.path().join("dd.bin"), bytes);
        let ratio =
            dds.map_or(String::from("dd unavailable"), |d| format!("dd {:.0} MB/s, ratio {:.2}", mb(bytes, d), d / ws));
        println!(
            "{n:>11} samples  write {:>7.0} MB/s ({ws:.2} s)  [{ratio}]  writer peak RSS {:>6} KiB",
            mb(bytes, ws),
            peak
        );
    }
    let n = *counts.last().unwrap();
    let bytes = n * 40;
    let (gs, _) = write(&path, n, true);
    println!("{n:>11} samples  write, guide style (two add calls per sample) {:>7.0} MB/s", mb(bytes, gs));
    let (_, _) = write(&path, n, false);

    let t = Instant::now();
    bind::dobind(&path, 0).unwrap();
    let bs = t.elapsed().as_secs_f64();
    println!(
        "{n:>11} samples  dobind (decode, bind, store {} MB of binds): {bs:.2} s, {:.1} M samples/s",
        n * 24 / 1_000_000,
        n as f64 / bs / 1e6
    );

    let f = Tb5File::open(&path).unwrap();
    let s = f.stream(0).unwrap();
    let data = s.data().unwrap().unwrap();
    // Warm the page cache, then time.
    black_box(data.records().map(|r| r[0] as u64).sum::<u64>());
    for round in 0..2 {
        let t = Instant::now();
        let mut acc = 0u64;
        for r in data.records() {
            acc = acc.wrapping_add(u64::from_le_bytes(r[32..40].try_into().unwrap()));
        }
        black_box(acc);
        let raw = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut acc = 0u64;
        for smp in s.legacy_samples().unwrap() {
            acc = acc.wrapping_add(smp.pc.ip() ^ smp.tsc.unwrap_or(0));
        }
        black_box(acc);
        let dec = t.elapsed().as_secs_f64();
        let t = Instant::now();
        f.verify().unwrap();
        let ver = t.elapsed().as_secs_f64();
        println!(
            "read round {round}: raw records {:>7.0} MB/s, decoded LegacySample {:>7.0} MB/s, verify {:>7.0} MB/s",
            mb(bytes, raw),
            mb(bytes, dec),
            mb(bytes, ver)
        );
    }
}
