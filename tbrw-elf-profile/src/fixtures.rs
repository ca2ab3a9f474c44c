//! The example profiles shipped in `examples/data/sampler/` (see its
//! README): a fixed, synthetic run written by this crate's profile writer,
//! the same bytes on every machine. `cargo run -p tbrw-cli --example
//! make_sampler_fixtures` writes them; a test checks the shipped files
//! are what it writes.

use crate::codec::{write_profile, Format, FullSample, Layout, Magic, ProfileHeader, ThreadSample, VmMap};

/// Each shipped file: its name and its bytes.
pub fn files() -> Vec<(&'static str, Vec<u8>)> {
    vec![("current.prof", current()), ("seed-era.prof", seed_era())]
}

/// The maps of the run: executable segments only, basenames, the target first.
fn maps() -> Vec<VmMap> {
    let m = |address: u64, size: u64, label: &str| VmMap { address, size, label: label.into() };
    vec![
        m(0x5563_2a40_1000, 0x2_4000, "fixture-app"),
        m(0x7f8e_1c22_8000, 0x17_d000, "libc.so.6"),
        m(0x7f8e_1c5e_1000, 0x8_3000, "libm.so.6"),
        m(0x7f8e_1c6a_1000, 0x2_5000, "ld-linux-x86-64.so.2"),
    ]
}

/// 120 samples every millisecond of a main thread and a worker that
/// blocks for the second half; the current drawn rises while both run.
fn samples(timed_first_empty: bool, scale: f64) -> Vec<FullSample> {
    let maps = maps();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut cpu = [0u64; 2];
    let start_us = 1_718_000_000_000_000; // 2024-06-10 06:13:20 UTC
    (0..120u64)
        .map(|i| {
            let time_us = start_us + i * 1000 + next() % 7;
            if timed_first_empty && i == 0 {
                return FullSample::with_value(time_us, 0.41, Vec::new());
            }
            let worker_runs = i < 60;
            let mut threads = Vec::new();
            for (k, c) in cpu.iter_mut().enumerate() {
                // Mostly in the program, then libc, libm, the loader, or nowhere known.
                let r = next() % 100;
                let m = match r {
                    0..=54 => Some(0),
                    55..=79 => Some(1),
                    80..=91 => Some(2),
                    92..=95 => Some(3),
                    _ => None,
                };
                let pc = m.map_or(0x7ffd_4000_0000 + next() % 0x1000, |m: usize| {
                    maps[m].address + next() % (maps[m].size + 1)
                });
                if k == 0 || worker_runs {
                    *c += 950_000 + next() % 50_000;
                }
                threads.push(ThreadSample { tid: 31_400 + k as u32, pc, cputime: *c });
            }
            let amps = if worker_runs { 0.62 } else { 0.47 } + (next() % 100) as f64 / 2000.0;
            FullSample::with_value(time_us, amps * scale, threads)
        })
        .collect()
}

fn profile(layout: Layout, magic: Magic, scale: f64) -> Vec<u8> {
    let samples = samples(layout == Layout::Head, scale);
    let maps = maps();
    let header = ProfileHeader {
        magic,
        wall_us: 120_000,
        latency_us: 1_830,
        samples: samples.len() as u64,
        maps: maps.len() as u64,
        killed: false,
    };
    let mut out = Vec::new();
    // Writing to memory fails only for labels that do not fit, and these fit.
    if let Err(e) = write_profile(&mut out, &Format::new(layout), &header, &maps, &samples) {
        unreachable!("the fixture's labels fit: {e}");
    }
    out
}

/// The current writer's layout, a current (amperes) profile.
pub fn current() -> Vec<u8> {
    profile(Layout::Head, Magic::Current, 1.0)
}

/// The seed-era writer's layout: the same run as a power profile (the
/// current at 5 V, in watts), without per-sample times.
pub fn seed_era() -> Vec<u8> {
    profile(Layout::Seed, Magic::Power, 5.0)
}
