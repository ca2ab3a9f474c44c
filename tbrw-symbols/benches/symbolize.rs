//! Symbolizing 1 M samples spread over 20 modules: a C library of 2,000
//! functions (with inlined helpers) built with `cc -g -O1`, copied under 20
//! names so that each is found, parsed and read for DWARF on its own.
//!
//! Prints samples/s for a cold pass (files parsed, every address new) and a
//! warm pass (every address cached), with addresses uniform over all code
//! (the worst case: real profiles concentrate on few addresses) and with a
//! profile-like skew; then the same with DWARF off (`Config::lines`), which
//! is all `report --by function` needs. `cargo bench -p tbrw-symbols`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use object::{Object, ObjectSymbol};

use tbrw_symbols::{Config, KernelSymbols, Mapping, ModuleSpec, Symbolizer};

const MODULES: usize = 20;
const FUNCTIONS: usize = 2000;
const SAMPLES: usize = 1_000_000;

fn source() -> String {
    let mut s = String::from(
        "static inline __attribute__((always_inline)) int mix(int x, int k) { return (x ^ k) * 31 + (x >> 3); }\n",
    );
    s.push_str("__attribute__((noinline)) int f0(int x) { return x + 1; }\n");
    for i in 1..FUNCTIONS {
        writeln!(s, "__attribute__((noinline)) int f{i}(int x) {{ int s = 0; for (int j = 0; j < (x & 7); j++) s += mix(x + j, {i}); return s + f{}(x >> 1); }}", i - 1).unwrap();
    }
    s
}

/// xorshift64: deterministic and dependency free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn run(label: &str, lines: bool, dir: &Path, text: (u64, u64), samples: &[(usize, u64)]) {
    let base = |m: usize| 0x7f00_0000_0000 + (m as u64) * 0x100_0000;
    let config = Config { debug_dirs: Vec::new(), kernel: KernelSymbols::Off, lines, ..Config::default() };
    let mut symbolizer = Symbolizer::new(config);
    let ids: Vec<_> = (0..MODULES)
        .map(|m| {
            let path = dir.join(format!("libbench{m}.so"));
            symbolizer.add_module(ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: base(m) }))
        })
        .collect();
    let pcs: Vec<(usize, u64)> = samples.iter().map(|&(m, v)| (m, base(m) + v)).collect();
    let mut known = 0usize;
    for pass in ["cold", "warm"] {
        let start = Instant::now();
        known = 0;
        for &(m, pc) in &pcs {
            known += usize::from(symbolizer.symbolize(ids[m], pc).function.is_some());
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{label:>16} {pass}: {:>10.0} samples/s ({:.3} s for {} samples, {} distinct addresses cached)",
            pcs.len() as f64 / secs,
            secs,
            pcs.len(),
            symbolizer.cached()
        );
    }
    assert!(known * 100 >= pcs.len() * 99, "only {known} of {} samples named a function (text {text:x?})", pcs.len());
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    if !common::have("cc") {
        println!("no cc on this machine: nothing to measure");
        return;
    }
    let src = dir.path().join("bench.c");
    std::fs::write(&src, source()).unwrap();
    let lib = dir.path().join("libbench.so");
    common::run(
        "cc",
        &["-g", "-O1", "-fPIC", "-shared", "-Wl,--build-id", src.to_str().unwrap(), "-o", lib.to_str().unwrap()],
    );
    for m in 0..MODULES {
        std::fs::copy(&lib, dir.path().join(format!("libbench{m}.so"))).unwrap();
    }
    // The code of the generated functions: from f0 to the end of the last.
    let data = std::fs::read(&lib).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let generated =
        |s: &object::Symbol<'_, '_>| s.name().is_ok_and(|n| n.starts_with('f') && n[1..].parse::<u32>().is_ok());
    let ranges: Vec<(u64, u64)> =
        file.symbols().filter(generated).map(|s| (s.address(), s.address() + s.size())).collect();
    assert_eq!(ranges.len(), FUNCTIONS);
    let text = (ranges.iter().map(|r| r.0).min().unwrap(), ranges.iter().map(|r| r.1).max().unwrap());

    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let uniform: Vec<(usize, u64)> = (0..SAMPLES)
        .map(|_| ((rng.next() % MODULES as u64) as usize, text.0 + rng.next() % (text.1 - text.0)))
        .collect();
    // Skewed: 90 % of samples on 1,000 hot addresses, the rest uniform.
    let hot: Vec<(usize, u64)> = uniform[..1000].to_vec();
    let skewed: Vec<(usize, u64)> =
        uniform.iter().map(|&s| if rng.next() % 10 < 9 { hot[(rng.next() % 1000) as usize] } else { s }).collect();
    run("uniform", true, dir.path(), text, &uniform);
    run("skewed", true, dir.path(), text, &skewed);
    // `report --by function` needs no DWARF.
    run("uniform, no lines", false, dir.path(), text, &uniform);
    run("skewed, no lines", false, dir.path(), text, &skewed);
}
