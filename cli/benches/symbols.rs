//! Symbolizing 1 M samples over 20 modules against binding them: a C
//! library of 2,000 functions built with `cc -g -O1`, copied under 20
//! names (each found and parsed on its own), samples with a profile-like
//! skew written to a TB5 file through the C-API layout (load bases).
//! Prints, for 1 M and then 10 M samples, `report --by function`'s time
//! against the in-memory bind's (the bind is part of the report: the rest
//! is what symbolizing costs), what grouping by function costs beyond
//! `report --by module`, and the time of a count per distinct address
//! (what `--by line` and `--by address` do first); from the two runs, the
//! cost per sample of symbolizing and of binding, and what symbolizing
//! pays once (the files, a row per function); then symbolizing alone, the
//! issue's figure: the 20 files read once and the function of each of 1 M
//! samples found (on both cores, a function per sample kept, as the bind
//! keeps a module per sample), alternating with the bind of the same
//! samples; last, the full symbolizer's time for every sample one by one
//! (names and lines, no counting first, DWARF on and off).
//! `cargo bench -p tbrw-cli --bench symbols`.

use std::fmt::Write as _;
use std::process::Command;
use std::time::Instant;

use object::{Object, ObjectSymbol};
use tbrw::*;
use tbrw_import::globals::write_globals;
use tbrw_query::file_symbols::{FileSymbols, SymbolOptions};
use tbrw_query::report::{functions, ReportOptions};
use tbrw_query::By;
use tbrw_schema::descriptor::field;

const MODULES: u64 = 20;
const FUNCTIONS: usize = 2000;
const SAMPLES: u64 = 1_000_000;
/// The second run's samples: the same functions, ten times the samples.
const MORE_SAMPLES: u64 = 10_000_000;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let mut src = String::from("__attribute__((noinline)) int f0(int x) { return x + 1; }\n");
    for i in 1..FUNCTIONS {
        writeln!(src, "__attribute__((noinline)) int f{i}(int x) {{ int s = 0; for (int j = 0; j < (x & 7); j++) s += (x ^ j) * {i}; return s + f{}(x >> 1); }}", i - 1).unwrap();
    }
    let c = dir.path().join("lib.c");
    std::fs::write(&c, src).unwrap();
    let lib = dir.path().join("libbench.so");
    let built = Command::new("cc").args(["-g", "-O1", "-shared", "-fPIC"]).arg(&c).arg("-o").arg(&lib).status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("note: cc could not build the library: bench skipped");
        return;
    }
    let data = std::fs::read(&lib).unwrap();
    let elf = object::File::parse(&*data).unwrap();
    let funcs: Vec<(u64, u64)> = elf
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .map(|s| (s.address(), s.size()))
        .collect();
    let modules: Vec<Module> = (0..MODULES)
        .map(|m| {
            let path = dir.path().join(format!("libbench{m}.so"));
            std::fs::copy(&lib, &path).unwrap();
            Module {
                associated_pid: 1,
                flags: if m == 0 {
                    ModuleFlags::LOADED | ModuleFlags::FIRST_MODULE_REC_IN_PROCESS
                } else {
                    ModuleFlags::LOADED
                },
                segment_type: processor_mode::BIT64,
                load_address: base(m),
                length: 0x100_0000,
                unload_tsc: NEVER_UNLOADED,
                path: Some(path.to_str().unwrap().to_owned()),
                ..Default::default()
            }
        })
        .collect();
    let opts = SymbolOptions { debug_dirs: Vec::new(), ..Default::default() };
    let small = run(dir.path(), &funcs, &modules, SAMPLES, &opts);
    let large = run(dir.path(), &funcs, &modules, MORE_SAMPLES, &opts);
    // Two runs of one set of functions: (time at 10 M − time at 1 M) / 9 M
    // is the cost per sample, the rest (reading the files, making a row
    // per function) is paid once.
    let per_sample = |a: f64, b: f64| (b - a) / (MORE_SAMPLES - SAMPLES) as f64;
    let (sym_ns, bind_ns) = (per_sample(small.0, large.0) * 1e9, per_sample(small.1, large.1) * 1e9);
    println!(
        "per sample: symbolizing and grouping {sym_ns:.1} ns, binding {bind_ns:.1} ns (ratio {:.2}); paid once by \
         symbolizing (20 files, ~40 k rows): {:.3} s",
        sym_ns / bind_ns,
        small.0 - sym_ns * 1e-9 * SAMPLES as f64
    );
    // What the "symbolizing" is: the files read once, then the
    // function of every sample, next to the bind that gives each sample's
    // module (the report by function above also counts, names and orders
    // 40,000 rows).
    let (files, lookups, bind_s) =
        symbolize_indexed(&file_of(dir.path(), SAMPLES), &modules, &opts, &samples(&funcs, SAMPLES));
    println!(
        "symbolizing 1 M samples (best of 9): {:.3} s = reading 20 files {files:.3} s + a function per sample {lookups:.3} \
         s; their bind (alternating, best of 9): {bind_s:.3} s; symbolizing / bind = {:.2}",
        files + lookups,
        (files + lookups) / bind_s
    );
    symbolize_each(&file_of(dir.path(), SAMPLES), &modules, &opts, &samples(&funcs, SAMPLES), small.1);
}

/// The pcs of `n` samples over the modules (16-byte records: pc, pid 1,
/// tid 1).
fn samples(funcs: &[(u64, u64)], n: u64) -> Vec<u8> {
    // xorshift; a skew like a profile's: most samples in few functions.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut bytes = Vec::with_capacity(n as usize * 16);
    for _ in 0..n {
        let m = next() % MODULES;
        let r = next();
        let f = if r % 4 == 0 { (r >> 8) as usize % funcs.len() } else { (r >> 8) as usize % 40 };
        let (a, size) = funcs[f];
        let pc = base(m) + a + (r >> 32) % size;
        bytes.extend_from_slice(&pc.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
    }
    bytes
}

fn file_of(dir: &std::path::Path, n: u64) -> std::path::PathBuf {
    dir.join(format!("bench{n}.tb5"))
}

/// Writes `n` samples to a file and prints the reports' and the bind's
/// best times; returns (report − bind, bind) in seconds.
fn run(dir: &std::path::Path, funcs: &[(u64, u64)], modules: &[Module], n: u64, opts: &SymbolOptions) -> (f64, f64) {
    let bytes = samples(funcs, n);
    let tb5 = file_of(dir, n);
    let mut w = Tb5Writer::create(&tb5).unwrap();
    let os = Os { platform: os_family::LINUX64, name: Some("Linux".into()), ..Default::default() };
    write_globals(&mut w, &Software { host: None, os: Some(os), application: None }).unwrap();
    w.write_modules(modules).unwrap();
    let mut st = w
        .stream(0)
        .unwrap()
        .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })
        .unwrap()
        .data_descriptor(&[
            field(desc_type::IP, desc_subtype::NONE, 8, "pc"),
            field(desc_type::PID, desc_subtype::NONE, 4, "pid"),
            field(desc_type::TID, desc_subtype::NONE, 4, "tid"),
        ])
        .unwrap();
    st.events(&[Event { id: 0, flags: EventFlags::TBS, name: Some("cycles".into()), ..Default::default() }]).unwrap();
    let mut d = st.data().unwrap();
    d.add(&bytes).unwrap();
    d.done().unwrap();
    st.finish().unwrap();
    w.close().unwrap();

    drop(bytes);
    let file = Tb5File::open(&tb5).unwrap();
    // What `tbrw report --by function` costs beyond the bind: one pass that
    // binds (in memory: the file has no stored bind), filters and counts
    // each sample under its function symbol, then one result per function
    // and the rows. The whole report less the bind alone is what
    // symbolizing costs.
    let t = Instant::now();
    let counted = functions::count(&file, &tbrw_query::Query::default(), false, false, &mut |_| {}).unwrap();
    let count_s = t.elapsed().as_secs_f64();
    let distinct = counted.counts.len();
    drop(counted);
    // The bind, the report by module and the report by function
    // alternate, best of 5 each: this machine's speed drifts, and the
    // ratios are what count.
    let (mut best, mut bind_best, mut module_best, mut rows) = (f64::MAX, f64::MAX, f64::MAX, 0);
    for _ in 0..5 {
        let t = Instant::now();
        drop(bind::bind_in_memory(&file, 0).unwrap());
        bind_best = bind_best.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let by_module = ReportOptions::new(Default::default(), &[By::Module]);
        drop(tbrw_query::report::run(&file, &by_module, &mut Vec::new(), &mut |_| {}).unwrap());
        module_best = module_best.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let by_function = ReportOptions::new(Default::default(), &[By::Function]).symbols(opts.clone());
        let r = tbrw_query::report::run(&file, &by_function, &mut Vec::new(), &mut |_| {}).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
        rows = r.rows.len();
    }
    let bind_s = bind_best;
    let symbolize_s = best - bind_s;
    println!(
        "{n} samples: report --by function (best of 5): {best:.3} s, {rows} rows = the bind ({bind_s:.3} s) + symbolizing \
         ({distinct} distinct addresses) and grouping by function: {symbolize_s:.3} s; symbolizing / bind = {:.2} \
         (a count per distinct address alone, as --by line and --by address do first: {count_s:.3} s)",
        symbolize_s / bind_s
    );
    // What grouping by function costs beyond grouping by module (both bind
    // in memory, filter and count the same samples): the symbols alone.
    let beyond = best - module_best;
    println!(
        "{n} samples: report --by module (best of 5): {module_best:.3} s; by function beyond by module: {beyond:.3} s; \
         that / bind = {:.2}",
        beyond / bind_s
    );
    (symbolize_s, bind_s)
}

/// The symbolizer's time for every sample of `bytes` one by one (no
/// counting first), DWARF on and off, against the bind's `bind_s`.
fn symbolize_each(tb5: &std::path::Path, modules: &[Module], opts: &SymbolOptions, bytes: &[u8], bind_s: f64) {
    let file = Tb5File::open(tb5).unwrap();
    for lines in [true, false] {
        let mut syms = FileSymbols::new(&file, modules, opts).unwrap();
        if !lines {
            syms = FileSymbols::with_config(&file, modules, tbrw_symbols::Config { lines: false, ..opts.config() })
                .unwrap();
        }
        let t = Instant::now();
        let mut named = 0u64;
        for rec in bytes.chunks_exact(16) {
            let pc = u64::from_le_bytes(rec[..8].try_into().unwrap());
            let m = (pc - base(0)) / 0x100_0000;
            named += u64::from(syms.symbolize(Some(m), pc).function.is_some());
        }
        let s = t.elapsed().as_secs_f64();
        assert!(named * 100 >= SAMPLES * 99, "{named} named");
        println!(
            "symbolize 1 M samples, 20 modules, DWARF {}: {s:.3} s; bind: {bind_s:.3} s; ratio {:.2}",
            if lines { "on " } else { "off" },
            s / bind_s
        );
    }
}

/// Where module `m` is loaded.
fn base(m: u64) -> u64 {
    0x7f00_0000_0000 + m * 0x100_0000
}

/// The symbolizer alone: reading the modules' files (their symbol tables)
/// and finding the function of every sample of `bytes` in the module the
/// bind gives it, on both cores as the bind runs, a function per sample
/// kept as the bind keeps a module per sample. Alternates with the bind of
/// the same samples, best of 9 each; returns (files, lookups, bind) in
/// seconds.
fn symbolize_indexed(tb5: &std::path::Path, modules: &[Module], opts: &SymbolOptions, bytes: &[u8]) -> (f64, f64, f64) {
    let file = Tb5File::open(tb5).unwrap();
    let (mut files_best, mut lookups_best, mut bind_best) = (f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..9 {
        let t = Instant::now();
        drop(bind::bind_in_memory(&file, 0).unwrap());
        bind_best = bind_best.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut syms = FileSymbols::new(&file, modules, opts).unwrap();
        let lookups = syms.function_index(&vec![true; modules.len()]);
        let files = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let half = bytes.len() / 32 * 16;
        let named: u64 = std::thread::scope(|s| {
            let parts = [&bytes[..half], &bytes[half..]].map(|part| {
                let lookups = &lookups;
                s.spawn(move || {
                    let mut recent = tbrw_symbols::RecentSymbols::default();
                    let mut functions = Vec::with_capacity(part.len() / 16);
                    for rec in part.chunks_exact(16) {
                        let pc = u64::from_le_bytes(rec[..8].try_into().unwrap());
                        let m = (pc - base(0)) / 0x100_0000;
                        functions.push(match lookups.module(m).map(|l| l.function_symbol(pc, &mut recent)) {
                            Some(tbrw_symbols::IndexedSymbol::Found(f)) => f.ordinal() as u32,
                            _ => u32::MAX,
                        });
                    }
                    functions.iter().filter(|&&f| f != u32::MAX).count() as u64
                })
            });
            parts.into_iter().map(|p| p.join().unwrap()).sum()
        });
        let looked_up = t.elapsed().as_secs_f64();
        if files + looked_up < files_best + lookups_best {
            (files_best, lookups_best) = (files, looked_up);
        }
        assert!(named * 100 >= (bytes.len() / 16) as u64 * 99, "{named} named");
    }
    (files_best, lookups_best, bind_best)
}
