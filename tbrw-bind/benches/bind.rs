//! Bind throughput: 10,000 modules in 100 processes (with loads, unloads,
//! pid reuse and global kernel modules) against 1, 10 and 100 million
//! samples, single-threaded and with `bind_parallel`; and the naive
//! reference on a prefix of the same input, for the speed-up.
//!
//! `cargo bench -p tbrw-bind --bench bind` (add `-- quick` to skip 100 M).

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

const PROCESSES: u32 = 100;
const MODULES: usize = 10_000;
const HORIZON: u64 = 100_000_000; // sample indices the loads and unloads spread over

fn modules(rng: &mut Rng) -> Vec<ModuleSpec> {
    let mut v = Vec::with_capacity(MODULES);
    // 40 global kernel modules.
    for k in 0..40u64 {
        v.push(ModuleSpec {
            pid: 0,
            load_address: 0xFFFF_FFFF_8000_0000 + k * 0x20_0000,
            length: 0x1F_0000,
            load_time: 0,
            unload_time: NEVER,
            global: true,
            ..Default::default()
        });
    }
    let per_base = (MODULES - 40) / PROCESSES as usize;
    let extra = (MODULES - 40) % PROCESSES as usize;
    for p in 0..PROCESSES {
        let per = per_base + usize::from((p as usize) < extra);
        let pid = 1000 + p;
        // An exe loaded before collection, and for every tenth pid a second
        // process (pid reuse) half-way through.
        v.push(ModuleSpec {
            pid,
            load_address: 0x40_0000,
            length: 0x10_0000,
            unload_time: NEVER,
            exe: true,
            ..Default::default()
        });
        if p % 10 == 0 {
            v.push(ModuleSpec {
                pid,
                load_address: 0x40_0000,
                length: 0x20_0000,
                load_time: HORIZON / 2,
                unload_time: NEVER,
                exe: true,
                ..Default::default()
            });
        }
        for i in 0..per - 1 - usize::from(p % 10 == 0) {
            let dynamic = rng.below(4) == 0; // a quarter are loaded and unloaded during the run
            let load = if dynamic { rng.below(HORIZON) } else { 0 };
            let unload = if dynamic { load + rng.below(HORIZON / 4) } else { NEVER };
            v.push(ModuleSpec {
                pid,
                load_address: 0x7F00_0000_0000 + i as u64 * 0x10_0000,
                length: 0x8_0000 + rng.below(0x8_0000),
                load_time: load,
                unload_time: unload,
                ..Default::default()
            });
        }
    }
    assert_eq!(v.len(), MODULES);
    v
}

/// Samples in runs of one thread, ips mostly inside modules.
fn samples(rng: &mut Rng, n: usize, out: &mut Vec<Sample>, mods: &[ModuleSpec]) {
    out.clear();
    while out.len() < n {
        let p = rng.below(u64::from(PROCESSES)) as u32;
        let tid = (1000 + p) * 10 + rng.below(4) as u32;
        let run = 1 + rng.below(48) as usize;
        for _ in 0..run.min(n - out.len()) {
            let ip = match rng.below(10) {
                0 => mods[rng.below(40) as usize].load_address + rng.below(0x1F_0000), // kernel
                1 => rng.next(),                                                       // anywhere
                _ => {
                    let m = &mods[40 + rng.below((mods.len() - 40) as u64) as usize];
                    m.load_address + rng.below(m.length.max(1))
                }
            };
            out.push(Sample { ip, pid: 1000 + p, tid, tsc: None });
        }
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mods = modules(&mut rng);
    let t = Instant::now();
    let map = ModuleMap::new(&mods);
    println!(
        "{} modules in {} processes: map built in {:.1} ms",
        mods.len(),
        PROCESSES,
        t.elapsed().as_secs_f64() * 1e3
    );

    const CHUNK: usize = 1 << 20;
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut out = Vec::with_capacity(CHUNK);
    let totals: &[usize] = if quick { &[1_000_000, 10_000_000] } else { &[1_000_000, 10_000_000, 100_000_000] };
    for &total in totals {
        let mut rng = Rng(42);
        let mut b = Binder::new(&map);
        let mut bound = 0usize;
        let mut secs = 0.0;
        let mut unknown = 0u64;
        while bound < total {
            samples(&mut rng, CHUNK.min(total - bound), &mut chunk, &mods);
            out.clear();
            let t = Instant::now();
            b.bind(&chunk, &mut out);
            secs += t.elapsed().as_secs_f64();
            unknown += out.iter().filter(|d| d.module_index == UNKNOWN_MODULE).count() as u64;
            bound += chunk.len();
        }
        let tables = b.finish();
        println!(
            "{total:>11} samples: {:>6.2} s, {:>6.1} M samples/s on one core ({} processes, {} threads, {:.1}% unknown module)",
            secs,
            total as f64 / secs / 1e6,
            tables.processes.len(),
            tables.threads.len(),
            unknown as f64 * 100.0 / total as f64
        );
    }

    let mut all = Vec::new();
    samples(&mut Rng(42), 10_000_000, &mut all, &mods);
    for threads in [1, 2] {
        let t = Instant::now();
        let (data, tables) = bind_parallel(&map, &all, threads);
        let s = t.elapsed().as_secs_f64();
        black_box((data.len(), tables.threads.len()));
        println!("bind_parallel, {threads} thread(s), 10 M samples: {:.1} M samples/s", 10.0 / s);
    }

    let prefix = 20_000;
    let t = Instant::now();
    let r = reference::bind(&mods, &all[..prefix]);
    let ref_rate = prefix as f64 / t.elapsed().as_secs_f64();
    let mut b = Binder::new(&map);
    let mut out = Vec::new();
    let t = Instant::now();
    b.bind(&all, &mut out);
    let rate = all.len() as f64 / t.elapsed().as_secs_f64();
    assert_eq!(&out[..prefix], &r.data[..], "engine and reference disagree");
    println!(
        "reference (naive scan of all modules per sample): {:.3} M samples/s on the first {prefix}; engine {:.1} M samples/s: {:.0}x faster",
        ref_rate / 1e6,
        rate / 1e6,
        rate / ref_rate
    );
}
