//! What DWARF unwinding costs an importer per sample, against a
//! frame-pointer import: the chain program of the unwinder's test
//! (`tests/common/perf_data.rs`), recorded here twice, built with frame
//! pointers and `--call-graph fp`, and built without and `--call-graph
//! dwarf`. Each pass reads its perf.data as an importer would
//! (`linux-perf-data`: every record read and parsed, the mappings added to
//! the unwinder, each sample's chain made: copied from the record, or
//! unwound from its registers and stack copy), best of 15 passes.
//!
//! Prints ns per sample: the frame-pointer import; the DWARF import with
//! a fresh unwinder each pass (files read, rules found: the first pass of
//! an import) and with one kept across passes (the rules cached: most of a
//! long import), and the unwinding alone. `cargo bench -p tbrw-symbols
//! --bench unwind`; needs perf and cc, on x86-64.

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::perf_data::{record, CHAIN};
use linux_perf_data::{PerfFileReader, PerfFileRecord};
use linux_perf_event_reader::EventRecord;
use tbrw_symbols::unwind::{Arch, Registers, Unwinder};
use tbrw_symbols::{Config, KernelSymbols, Mapping, ModuleSpec};

const PASSES: usize = 15;

/// What a pass did: samples read, frames made, time spent unwinding.
#[derive(Default)]
struct Pass {
    samples: u64,
    frames: u64,
    unwinding: Duration,
}

/// One importer pass over `path`: chains copied from the records, or
/// unwound by `unwinder`.
fn pass(path: &Path, mut unwinder: Option<&mut Unwinder>) -> Pass {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let PerfFileReader { mut perf_file, mut record_iter } = PerfFileReader::parse_file(file).unwrap();
    let mut out = Pass::default();
    let mut chain: Vec<u64> = Vec::with_capacity(256);
    while let Some(record) = record_iter.next_record(&mut perf_file).unwrap() {
        let PerfFileRecord::EventRecord { record, .. } = record else { continue };
        match record.parse().unwrap() {
            EventRecord::Mmap2(m) if m.protection & 4 != 0 => {
                if let Some(u) = unwinder.as_deref_mut() {
                    let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                    let spec =
                        ModuleSpec::new(path, Mapping::FileOffset { map_start: m.address, pgoff: m.page_offset });
                    let _ = u.add_module(m.pid as u32, &spec, m.address..m.address + m.length);
                }
            }
            EventRecord::Sample(s) => {
                out.samples += 1;
                match unwinder.as_deref_mut() {
                    None => {
                        chain.clear();
                        if let Some(c) = &s.callchain {
                            chain.extend((0..c.len()).filter_map(|i| c.get(i)));
                        }
                    }
                    Some(u) => {
                        let regs = s
                            .user_regs
                            .as_ref()
                            .and_then(|r| Registers::from_perf(Arch::X86_64, |n| r.get(u64::from(n))));
                        let (Some(regs), Some((stack, dyn_size))) = (regs, &s.user_stack) else { continue };
                        let stack = stack.as_slice();
                        let stack = &stack[..(*dyn_size as usize).min(stack.len())];
                        let t = Instant::now();
                        u.unwind(s.pid.unwrap_or(0) as u32, &regs, stack, regs.sp(), &mut chain);
                        out.unwinding += t.elapsed();
                    }
                }
                out.frames += chain.len() as u64;
            }
            _ => {}
        }
    }
    out
}

fn best(mut run: impl FnMut() -> (Duration, Pass)) -> (Duration, Pass) {
    let mut best: Option<(Duration, Pass)> = None;
    for _ in 0..PASSES {
        let (t, p) = run();
        if best.as_ref().is_none_or(|b| t < b.0) {
            best = Some((t, p));
        }
    }
    best.unwrap()
}

fn ns(d: Duration, samples: u64) -> f64 {
    d.as_nanos() as f64 / samples.max(1) as f64
}

fn main() {
    if Arch::native() != Some(Arch::X86_64) {
        println!("the unwinding bench runs on x86-64 only");
        return;
    }
    let Some(fp) = record(CHAIN, &["-O2", "-fno-omit-frame-pointer", "-fno-builtin", "-lm"], &["--call-graph", "fp"])
    else {
        return;
    };
    let dwarf_flags = ["-O2", "-fomit-frame-pointer", "-fno-builtin", "-lm"];
    let Some(dwarf) = record(CHAIN, &dwarf_flags, &["--call-graph", "dwarf"]) else { return };
    let config = || Config { kernel: KernelSymbols::Off, ..Config::default() };

    let (t_fp, p_fp) = best(|| {
        let t = Instant::now();
        let p = pass(&fp.data, None);
        (t.elapsed(), p)
    });
    let (t_read, p_read) = best(|| {
        let t = Instant::now();
        let p = pass(&dwarf.data, None);
        (t.elapsed(), p)
    });
    let (t_cold, p_cold) = best(|| {
        let mut u = Unwinder::new(Arch::X86_64, config());
        let t = Instant::now();
        let p = pass(&dwarf.data, Some(&mut u));
        (t.elapsed(), p)
    });
    let mut kept = Unwinder::new(Arch::X86_64, config());
    pass(&dwarf.data, Some(&mut kept));
    let (t_warm, p_warm) = best(|| {
        let t = Instant::now();
        let p = pass(&dwarf.data, Some(&mut kept));
        (t.elapsed(), p)
    });
    let fp_ns = ns(t_fp, p_fp.samples);
    println!(
        "frame-pointer import: {} samples, {:.1} frames each: {fp_ns:.0} ns/sample",
        p_fp.samples,
        p_fp.frames as f64 / p_fp.samples as f64
    );
    println!(
        "DWARF perf.data read and parsed, no unwinding: {} samples: {:.0} ns/sample ({:.1} x the fp import)",
        p_read.samples,
        ns(t_read, p_read.samples),
        ns(t_read, p_read.samples) / fp_ns
    );
    for (label, t, p) in [("fresh unwinder", t_cold, p_cold), ("kept unwinder", t_warm, p_warm)] {
        println!(
            "DWARF import, {label}: {:.1} frames each: {:.0} ns/sample ({:.1} x the fp import), of which unwinding {:.0} ns/sample",
            p.frames as f64 / p.samples as f64,
            ns(t, p.samples),
            ns(t, p.samples) / fp_ns,
            ns(p.unwinding, p.samples)
        );
    }
}
