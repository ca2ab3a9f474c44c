//! Function names checked against perf's own: a program built here that
//! calls libm through its PLT and libc functions with aliases (`puts`,
//! `fstatat`, `sbrk`/`brk`), recorded with `perf record -e cpu-clock`;
//! every user-space sample perf names (`perf script -F pid,ip,sym,symoff,dso
//! --show-mmap-events`: its ip, perf's `sym+off`, and the mapping perf
//! recorded) is symbolized through the crate with that mapping and must get
//! perf's name and offset, and the names `perf report --sort dso,sym` lists
//! for the program, libm and libc must be the names the crate gives.
//!
//! Skipped, with a note, when perf is missing or `perf record` fails.
//! `cargo test -p tbrw-symbols --test perf_names -- --nocapture` prints the
//! counts.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{compile, have};
use object::{Object, ObjectSection, ObjectSymbol};
use tbrw_symbols::{Config, KernelSymbols, Mapping, ModuleSpec, Symbolizer};

const PROGRAM: &str = "#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

volatile double seed = 0.25;

__attribute__((noinline)) double waves(int n, double x) {
    double s = 0;
    for (int i = 0; i < n; i++)
        s += sin(x + i) * cos(x - i);
    return s;
}

__attribute__((noinline)) void calls(FILE *f) {
    struct stat st;
    for (int k = 0; k < 1500; k++) {
        fputs(\"x\", f);
        puts(\"\");
    }
    for (int k = 0; k < 60; k++) {
        fstatat(AT_FDCWD, \"/\", &st, 0);
        sbrk(4096);
        sbrk(-4096);
    }
}

int main(void) {
    FILE *f = fopen(\"/dev/null\", \"w\");
    double t = 0;
    for (int r = 0; r < 250; r++) {
        t += waves(20000, seed + r);
        calls(f);
    }
    return (int)t & 1;
}
";

/// A `PERF_RECORD_MMAP2` line of `perf script --show-mmap-events`:
/// `PID PERF_RECORD_MMAP2 PID/TID: [0xSTART(0xLEN) @ PGOFF MAJ:MIN INO GEN]: PROT FILE`.
fn parse_mmap(line: &str) -> Option<(u32, u64, u64, u64, String)> {
    let pid = line.split_whitespace().next()?.parse().ok()?;
    let rest = &line[line.find(": [0x")? + 3..];
    let (start, rest) = rest.split_once('(')?;
    let (len, rest) = rest.split_once(')')?;
    let pgoff = rest.trim_start().strip_prefix('@')?.split_whitespace().next()?;
    let file = rest.split_once("]: ")?.1.split_once(' ')?.1;
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    Some((pid, hex(start)?, hex(len)?, hex(pgoff)?, file.to_owned()))
}

/// A sample line: `PID IP SYM+0xOFF (DSO)` or `PID IP [unknown] (DSO)`.
fn parse_sample(line: &str) -> Option<(u32, u64, String, String)> {
    let line = line.trim_start();
    let (pid, rest) = line.split_once(char::is_whitespace)?;
    let rest = rest.trim_start();
    let (ip, after_ip) = rest.split_once(char::is_whitespace)?;
    let (pid, ip) = (pid.parse().ok()?, u64::from_str_radix(ip, 16).ok()?);
    let after_ip = after_ip.trim();
    let open = after_ip.rfind(" (")?;
    let sym = after_ip[..open].trim().to_owned();
    let dso = after_ip[open + 2..].strip_suffix(')')?.to_owned();
    Some((pid, ip, sym, dso))
}

fn run(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).stderr(Stdio::piped()).output().ok()?;
    if !out.status.success() {
        eprintln!("note: {program} {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether ELF address `vaddr` of `path` lies in a PLT section, and the
/// address of its size-0 `_init` symbol.
fn plt_and_init(path: &Path, vaddr: u64) -> (bool, Option<u64>) {
    let Ok(data) = std::fs::read(path) else { return (false, None) };
    let Ok(file) = object::File::parse(&*data) else { return (false, None) };
    let in_plt = file.sections().any(|s| {
        s.name().is_ok_and(|n| n.starts_with(".plt")) && (s.address()..s.address() + s.size()).contains(&vaddr)
    });
    let init = file.symbols().find(|s| s.name() == Ok("_init") && s.size() == 0).map(|s| s.address());
    (in_plt, init)
}

/// The name perf 6.1 gives the PLT stub at ELF address `vaddr` of `path`:
/// it pairs the stubs after the PLT's first entry with `.rela.plt`'s
/// relocations in their order (`dso__synthesize_plt_symbols`), whatever
/// slot a stub jumps through, and names a stub after its relocation's
/// symbol, `@plt` alone for one without a symbol (IRELATIVE). Where the
/// linker put the stubs in another order (libc's IFUNC stubs), perf's name
/// is a neighbour's; the crate names the slot the stub jumps through.
fn perf_plt_name(path: &Path, vaddr: u64) -> Option<String> {
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let plt = file.section_by_name(".plt")?;
    let entry = (vaddr.checked_sub(plt.address())? / 16).checked_sub(1)? as usize;
    let rela = file.section_by_name(".rela.plt")?.data().ok()?;
    let info = u64::from_le_bytes(rela.get(entry * 24 + 8..entry * 24 + 16)?.try_into().ok()?);
    let symbol = (info >> 32) as usize;
    let name = match symbol {
        0 => String::new(),
        k => file.dynamic_symbols().find(|y| y.index() == object::SymbolIndex(k))?.name().ok()?.to_owned(),
    };
    Some(format!("{name}@plt"))
}

#[test]
fn names_agree_with_perf() {
    if !have("perf") {
        eprintln!("note: no perf on this machine, skipping the comparison with perf");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let flags = ["-O2", "-fno-omit-frame-pointer", "-fno-builtin", "-lm"];
    let Some(prog) = compile(dir.path(), "names", PROGRAM, &flags) else { return };
    let data = dir.path().join("perf.data");
    let (data_s, prog_s) = (data.to_str().unwrap(), prog.to_str().unwrap());
    let recorded = Command::new("perf")
        .args(["record", "-N", "-e", "cpu-clock", "-o", data_s, prog_s])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    if !recorded.status.success() || !data.exists() {
        eprintln!(
            "note: perf record failed, skipping the comparison with perf: {}",
            String::from_utf8_lossy(&recorded.stderr)
        );
        return;
    }
    let Some(script) = run("perf", &["script", "-i", data_s, "-F", "pid,ip,sym,symoff,dso", "--show-mmap-events"])
    else {
        return;
    };

    let mut maps: HashMap<u32, Vec<(u64, u64, u64, String)>> = HashMap::new();
    let mut symbolizer = Symbolizer::new(Config { kernel: KernelSymbols::Off, ..Config::default() });
    let mut ids = HashMap::new();
    let (mut compared, mut agreed, mut plt_as_init, mut by_position, mut skipped) = (0, 0, 0, 0, 0);
    // Per dso short name: the names perf gives and the names the crate
    // gives the same samples (PLT samples perf gives `_init`: `_init`).
    let mut perf_names: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut ours: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut mismatches = Vec::new();
    let mut ifunc_stubs = BTreeSet::new();
    for line in script.lines() {
        if line.contains("PERF_RECORD_MMAP2") {
            if let Some((pid, start, len, pgoff, file)) = parse_mmap(line) {
                maps.entry(pid).or_default().push((start, len, pgoff, file));
            }
            continue;
        }
        if line.contains("PERF_RECORD_") {
            continue;
        }
        let Some((pid, ip, sym, dso)) = parse_sample(line) else { continue };
        let map =
            maps.get(&pid).and_then(|m| m.iter().rev().find(|(start, len, _, _)| (*start..start + len).contains(&ip)));
        let Some((start, _, pgoff, file)) = map else {
            skipped += 1; // the kernel
            continue;
        };
        if sym == "[unknown]" || file.starts_with('[') {
            skipped += 1; // [vdso], or perf found no symbol
            continue;
        }
        let id = *ids.entry((file.clone(), *start, *pgoff)).or_insert_with(|| {
            symbolizer
                .add_module(ModuleSpec::new(file.as_str(), Mapping::FileOffset { map_start: *start, pgoff: *pgoff }))
        });
        let s = symbolizer.symbolize(id, ip);
        let ours_name = s.function.as_deref().unwrap_or("[none]").to_owned();
        let ours_text = format!("{ours_name}+{:#x}", s.offset.unwrap_or(0));
        let short = dso.rsplit('/').next().unwrap_or(&dso).to_owned();
        compared += 1;
        let perf_name = sym.rsplit_once("+0x").map_or(sym.as_str(), |(n, _)| n).to_owned();
        let mut shown = ours_name.clone();
        if ours_text == sym {
            agreed += 1;
        } else {
            // perf stretches a size-0 `_init` to the next symbol it read
            // from the table, and adds the PLT stubs after that: a stub's
            // samples can go to `_init` (depending on its tree's shape).
            // Check that this is that case exactly: the address is in a
            // PLT section, the crate names a stub, and perf's offset is
            // from `_init`.
            let (in_plt, init) = s.vaddr.map_or((false, None), |v| plt_and_init(Path::new(file), v));
            let perf_off = sym.rsplit_once("+0x").and_then(|(_, o)| u64::from_str_radix(o, 16).ok());
            let init_case = perf_name == "_init"
                && in_plt
                && ours_name.ends_with("@plt")
                && init.zip(s.vaddr).is_some_and(|(i, v)| Some(v - i) == perf_off);
            // perf 6.1 names a stub by its position, after the relocation
            // of that rank (`perf_plt_name`): libc's stubs for its own
            // IFUNCs (IRELATIVE relocations, symbol 0: `@plt`) and those
            // after them get a neighbour's name. The crate names the slot
            // each stub jumps through (tests/plt.rs checks which).
            let by_rank = in_plt
                && ours_name.ends_with("@plt")
                && perf_off.is_some_and(|o| Some(o) == s.offset)
                && s.vaddr.and_then(|v| perf_plt_name(Path::new(file), v)).as_deref() == Some(perf_name.as_str());
            if init_case {
                plt_as_init += 1;
                shown = "_init".into();
            } else if by_rank {
                by_position += 1;
                if perf_name == "@plt" {
                    ifunc_stubs.insert(ours_name.clone());
                }
                shown = perf_name.clone();
            } else {
                mismatches.push(format!("{ip:#x} in {short}: perf {sym}, crate {ours_text}"));
            }
        }
        perf_names.entry(short.clone()).or_default().insert(perf_name);
        ours.entry(short).or_default().insert(shown);
    }
    eprintln!(
        "perf names: {agreed} of {compared} user samples agree exactly, {plt_as_init} PLT samples perf gives \
         `_init` and {by_position} PLT samples perf names by the stub's rank (the crate: the slot's name@plt), {} \
         differ; {skipped} not compared (kernel, [vdso], [unknown])",
        mismatches.len()
    );
    eprintln!("IFUNC stubs perf gives `@plt`, as the crate names them: {ifunc_stubs:?}");
    assert!(compared >= 100, "too few samples to compare: {compared}");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    let aliases = ["_IO_puts", "__brk", "__GI___fstatat64", "__sbrk"];
    let libc_names = perf_names.get("libc.so.6").cloned().unwrap_or_default();
    eprintln!(
        "libc aliases perf names here: {:?}",
        aliases.iter().filter(|a| libc_names.contains(**a)).collect::<Vec<_>>()
    );

    // `perf report --sort dso,sym`: the names of the program, libm, libc.
    let Some(report) = run("perf", &["report", "-i", data_s, "--stdio", "-q", "--sort", "dso,sym"]) else { return };
    let mut reported: HashMap<String, BTreeSet<String>> = HashMap::new();
    for line in report.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| *w == "[.]") else { continue };
        if at < 1 || words.len() <= at + 1 || words[at + 1].starts_with("0x") {
            continue;
        }
        reported.entry(words[at - 1].to_owned()).or_default().insert(words[at + 1..].join(" "));
    }
    for dso in ["names", "libm.so.6", "libc.so.6"] {
        let want = reported.get(dso).cloned().unwrap_or_default();
        let got = ours.get(dso).cloned().unwrap_or_default();
        eprintln!("{dso}: perf report {want:?}, the crate {got:?}");
        assert_eq!(got, want, "{dso}: the crate's names against perf report's");
    }
    assert!(reported.get("names").is_some_and(|n| !n.is_empty()), "the program's own samples");
}
