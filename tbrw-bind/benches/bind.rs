//! Bind throughput of the engine on two workloads:
//!
//! - large: 10,000 module records in 100 processes (global kernel modules,
//!   pid reuse, a quarter of the libraries loaded and unloaded during the
//!   run, half of those through separate unload records) and 10 M samples;
//! - small: 1 process with 50 modules and 10 M samples.
//!
//! Each figure is the best of a few runs (the machine may be shared). Also
//! `bind_parallel` on 1 and 2 threads, and the naive reference on a prefix
//! of the large input, for the speed-up.
//!
//! `cargo bench -p tbrw-bind --bench bind` (add `-- quick` for one run of
//! each, `-- samples=N` for another sample count, e.g. under a profiler).

use std::hint::black_box;
use std::time::Instant;

use tbrw_bind::*;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const SAMPLES: usize = 10_000_000;
const KERNEL: usize = 40;

struct Workload {
    name: &'static str,
    modules: Vec<ModuleSpec>,
    samples: Vec<Sample>,
}

/// `records` module records in `processes` processes, `kernel` of them
/// global; loads and unloads spread over `horizon` samples (the whole run).
fn modules(rng: &mut Rng, records: usize, processes: u32, kernel: usize, horizon: u64) -> Vec<ModuleSpec> {
    let mut v = Vec::with_capacity(records);
    for k in 0..kernel as u64 {
        v.push(ModuleSpec {
            pid: 0,
            load_address: 0xFFFF_FFFF_8000_0000 + k * 0x20_0000,
            length: 0x1F_0000,
            unload_time: NEVER,
            global: true,
            ..Default::default()
        });
    }
    let per_base = (records - kernel) / processes as usize;
    let extra = (records - kernel) % processes as usize;
    for p in 0..processes {
        let mut left = per_base + usize::from((p as usize) < extra);
        let pid = 1000 + p;
        // An exe loaded before collection, and for every tenth pid (of
        // several) a second process (pid reuse) half-way through.
        v.push(ModuleSpec {
            pid,
            load_address: 0x40_0000,
            length: 0x10_0000,
            unload_time: NEVER,
            exe: true,
            ..Default::default()
        });
        left -= 1;
        if processes > 1 && p % 10 == 0 {
            v.push(ModuleSpec {
                pid,
                load_address: 0x40_0000,
                length: 0x20_0000,
                load_time: horizon / 2,
                unload_time: NEVER,
                exe: true,
                first_in_process: true,
                ..Default::default()
            });
            left -= 1;
        }
        let mut i = 0u64;
        while left > 0 {
            let dynamic = rng.below(4) == 0; // loaded and unloaded during the run
            let load = if dynamic { rng.below(horizon) } else { 0 };
            let unload = if dynamic { load + rng.below(horizon / 4) } else { NEVER };
            let separate = dynamic && left >= 2 && rng.below(2) == 0;
            let m = ModuleSpec {
                pid,
                load_address: 0x7F00_0000_0000 + i * 0x10_0000,
                length: 0x8_0000 + rng.below(0x8_0000),
                load_time: load,
                unload_time: if separate { NEVER } else { unload },
                ..Default::default()
            };
            v.push(m);
            left -= 1;
            if separate {
                v.push(ModuleSpec { kind: ModuleKind::Unload, load_time: unload, length: 0, ..m });
                left -= 1;
            }
            i += 1;
        }
    }
    assert_eq!(v.len(), records);
    v
}

/// Samples in runs of one thread, ips mostly inside modules.
fn samples(rng: &mut Rng, n: usize, mods: &[ModuleSpec], kernel: usize, processes: u32) -> Vec<Sample> {
    let libs: Vec<&ModuleSpec> = mods[kernel..].iter().filter(|m| m.kind == ModuleKind::Load).collect();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let p = rng.below(u64::from(processes)) as u32;
        let tid = (1000 + p) * 10 + rng.below(4) as u32;
        let run = 1 + rng.below(48) as usize;
        for _ in 0..run.min(n - out.len()) {
            let ip = match rng.below(10) {
                0 if kernel > 0 => mods[rng.below(kernel as u64) as usize].load_address + rng.below(0x1F_0000),
                1 => rng.next(), // anywhere
                _ => {
                    let m = libs[rng.below(libs.len() as u64) as usize];
                    m.load_address + rng.below(m.length.max(1))
                }
            };
            out.push(Sample { ip, pid: 1000 + p, tid, tsc: None });
        }
    }
    out
}

fn workload(name: &'static str, records: usize, processes: u32, kernel: usize, n: usize) -> Workload {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let modules = modules(&mut rng, records, processes, kernel, n as u64);
    let samples = samples(&mut Rng(42), n, &modules, kernel, processes);
    Workload { name, modules, samples }
}

/// Nanoseconds this thread has spent on a CPU (Linux), so that a busy
/// machine does not count other processes' time against the engine.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}

/// Best of `reps` runs of `f`: (wall seconds, on-CPU seconds of this thread if known).
fn best(reps: usize, mut f: impl FnMut()) -> (f64, Option<f64>) {
    let mut wall = f64::INFINITY;
    let mut cpu: Option<f64> = None;
    for _ in 0..reps {
        let c = cpu_ns();
        let t = Instant::now();
        f();
        wall = wall.min(t.elapsed().as_secs_f64());
        if let (Some(a), Some(b)) = (c, cpu_ns()) {
            let s = (b - a) as f64 * 1e-9;
            cpu = Some(cpu.map_or(s, |x| x.min(s)));
        }
    }
    (wall, cpu)
}

/// "X M samples/s" from a sample count and `best`'s figures.
fn rates(n: usize, (wall, cpu): (f64, Option<f64>)) -> String {
    let m = n as f64 / 1e6;
    match cpu {
        Some(c) => format!("{:.1} M samples/s on-CPU ({:.1} M samples/s wall)", m / c, m / wall),
        None => format!("{:.1} M samples/s wall", m / wall),
    }
}

fn main() {
    let reps = if std::env::args().any(|a| a == "quick") { 1 } else { 3 };
    let n = std::env::args().find_map(|a| a.strip_prefix("samples=")?.parse().ok()).unwrap_or(SAMPLES);
    let large = workload("large", 10_000, 100, KERNEL, n);
    let small = workload("small", 50, 1, 0, n);
    for w in [&large, &small] {
        let t = Instant::now();
        let map = ModuleMap::new(&w.modules);
        let built = t.elapsed().as_secs_f64();
        let n = w.samples.len();
        // One core, the stream in chunks of 1 Mi samples into a reused buffer.
        let mut out = Vec::with_capacity(1 << 20);
        let mut last = None;
        let timing = best(reps, || {
            let mut b = Binder::new(&map);
            for c in w.samples.chunks(1 << 20) {
                out.clear();
                b.bind(c, &mut out);
                black_box(&out);
            }
            last = Some(b.finish());
        });
        let tables = last.expect("ran once");
        let (data, _) = bind_parallel(&map, &w.samples, 1);
        let unknown = data.iter().filter(|d| d.module_index == UNKNOWN_MODULE).count();
        println!(
            "{}: {} module records in {} processes (map built in {:.1} ms), {:.1} M samples, one core: {} \
             ({} process instances, {} threads, {:.1}% unknown module, {} unmatched unloads)",
            w.name,
            w.modules.len(),
            w.modules.iter().map(|m| m.pid).filter(|&p| p != 0).collect::<std::collections::BTreeSet<_>>().len(),
            built * 1e3,
            n as f64 / 1e6,
            rates(n, timing),
            tables.processes.len(),
            tables.threads.len(),
            unknown as f64 * 100.0 / n as f64,
            map.unmatched_unloads(),
        );
        drop(data);
        for threads in [1, 2] {
            let (wall, _) = best(reps, || {
                black_box(bind_parallel(&map, &w.samples, threads));
            });
            println!("{}: bind_parallel, {threads} thread(s): {}", w.name, rates(n, (wall, None)));
        }
    }

    let map = ModuleMap::new(&large.modules);
    let prefix = n.min(20_000);
    let t = Instant::now();
    let r = reference::bind(&large.modules, &large.samples[..prefix]);
    let ref_rate = prefix as f64 / t.elapsed().as_secs_f64();
    let mut b = Binder::new(&map);
    let mut out = Vec::new();
    b.bind(&large.samples[..prefix], &mut out);
    assert_eq!(out, r.data, "engine and reference disagree");
    println!(
        "large: reference (naive scan of all modules per sample): {:.3} M samples/s on the first {prefix}",
        ref_rate / 1e6
    );
}
