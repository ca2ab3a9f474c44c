//! The DWARF CFI unwinder against perf's own: a program built here with
//! `-fomit-frame-pointer -O2` (`top` → `middle` → `leaf` → libm's `sin`,
//! libc's `memcpy`), recorded with `perf record --call-graph dwarf -e
//! cpu-clock`; each sample's registers and stack copy (read with
//! `linux-perf-data`) unwound by the crate must give the user frames
//! `perf script` prints for it. Skipped, with a note, when perf is missing
//! or `perf record` fails. `cargo test -p tbrw-symbols --test unwind --
//! --nocapture` prints the agreement.
//!
//! What perf prints, checked here: for the sampled frame its address, for
//! each caller the return address minus 1 (inside the call instruction),
//! each as an offset in its mapping's file (`address − start + pgoff`)
//! with the mapping's path.

mod common;

use std::collections::HashMap;
use std::process::Command;

use common::perf_data::{read, record, Event, Mmap, CHAIN};
use tbrw_symbols::unwind::{Arch, Registers, StackEnd, UnwindError, UnwindInfo, Unwinder};
use tbrw_symbols::{Config, KernelSymbols, Mapping, ModuleSpec, Unknown};

/// A frame as perf script prints it: (file offset, mapping path).
type Frame = (u64, String);

/// The user frames of each sample of `perf script -F tid,time,ip,dso --ns
/// --no-inline`, by (tid, time in ns).
fn perf_frames(script: &str) -> HashMap<(u32, u64), Vec<Frame>> {
    let mut out = HashMap::new();
    let mut current: Option<((u32, u64), Vec<Frame>)> = None;
    for line in script.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with('\t') {
            // `TID SECONDS.NANOSECONDS:`
            if let Some((k, v)) = current.take() {
                out.insert(k, v);
            }
            let mut words = line.split_whitespace();
            let tid = words.next().and_then(|w| w.parse().ok());
            let time = words.next().and_then(|w| {
                let (s, ns) = w.trim_end_matches(':').split_once('.')?;
                Some(s.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?)
            });
            if let (Some(tid), Some(time)) = (tid, time) {
                current = Some(((tid, time), Vec::new()));
            }
            continue;
        }
        // `\t ADDR SYM (DSO)`
        let Some((_, frames)) = current.as_mut() else { continue };
        let mut words = line.split_whitespace();
        let Some(addr) = words.next().and_then(|w| u64::from_str_radix(w, 16).ok()) else { continue };
        let dso = line.rsplit_once(" (").map_or("", |(_, d)| d.trim_end_matches(')')).to_owned();
        if dso != "[kernel.kallsyms]" && !dso.starts_with("[guest") {
            frames.push((addr, dso));
        }
    }
    if let Some((k, v)) = current {
        out.insert(k, v);
    }
    out
}

/// The frame perf prints for address `a` of process `pid`.
fn as_perf(maps: &[Mmap], pid: u32, a: u64) -> Frame {
    match maps.iter().rev().find(|m| m.pid == pid && (m.start..m.start + m.len).contains(&a)) {
        Some(m) => (a - m.start + m.pgoff, m.path.clone()),
        None => (a, "[unknown]".to_owned()),
    }
}

fn config() -> Config {
    Config { kernel: KernelSymbols::Off, ..Config::default() }
}

#[test]
fn chains_agree_with_perf() {
    if Arch::native() != Some(Arch::X86_64) {
        eprintln!("note: the comparison with perf runs on x86-64 only");
        return;
    }
    let flags = ["-O2", "-fomit-frame-pointer", "-fno-builtin", "-lm"];
    let Some(rec) = record(CHAIN, &flags, &["--call-graph", "dwarf"]) else { return };
    let data = rec.data.to_str().unwrap();
    let script = Command::new("perf")
        .args(["script", "-i", data, "-F", "tid,time,ip,dso", "--ns", "--no-inline"])
        .output()
        .unwrap();
    assert!(script.status.success(), "perf script: {}", String::from_utf8_lossy(&script.stderr));
    let perf = perf_frames(&String::from_utf8_lossy(&script.stdout));

    let mut unwinder = Unwinder::new(Arch::X86_64, config());
    let mut maps = Vec::new();
    let (mut compared, mut agreed, mut deep, mut roots) = (0usize, 0usize, 0usize, 0usize);
    let mut differences = Vec::new();
    let mut callers = Vec::new();
    let program = rec.program.to_str().unwrap().to_owned();
    for event in read(&rec.data, Arch::X86_64) {
        match event {
            Event::Mmap(m) => {
                let spec = ModuleSpec::new(m.path.as_str(), Mapping::FileOffset { map_start: m.start, pgoff: m.pgoff });
                match unwinder.add_module(m.pid, &spec, m.start..m.start + m.len) {
                    Ok(info) => {
                        if m.path == program {
                            assert_eq!(info, UnwindInfo::EhFrameHdr);
                        }
                    }
                    Err(e) => assert!(m.path.starts_with('['), "{}: {e}", m.path),
                }
                maps.push(m);
            }
            Event::Sample(s) => {
                let Some(regs) = s.regs else { continue };
                let Some(want) = perf.get(&(s.tid, s.time)) else { continue };
                if want.is_empty() {
                    continue;
                }
                let end = unwinder.unwind(s.pid, &regs, &s.stack, regs.sp(), &mut callers);
                let mut got = vec![as_perf(&maps, s.pid, regs.pc())];
                got.extend(callers.iter().map(|&ra| as_perf(&maps, s.pid, ra - 1)));
                compared += 1;
                roots += usize::from(end == StackEnd::Root);
                if &got == want {
                    agreed += 1;
                    // leaf → middle → top → main, all in the program.
                    deep += usize::from(got.iter().filter(|f| f.1 == program).count() >= 4);
                } else if differences.len() < 5 {
                    differences.push(format!("perf {want:x?}\ncrate {got:x?} ({end:?})"));
                }
            }
        }
    }
    let share = agreed as f64 / compared.max(1) as f64;
    eprintln!(
        "unwinding: {agreed} of {compared} samples give perf's user frames ({:.2} %); {deep} of them through \
         leaf, middle, top and main; {roots} reached the root",
        100.0 * share
    );
    for d in &differences {
        eprintln!("{d}");
    }
    assert!(compared >= 200, "too few samples: {compared}");
    assert!(deep * 2 >= compared, "most samples are in leaf or below it: {deep} of {compared}");
    assert!(share >= 0.95, "{agreed} of {compared}");
}

/// Garbage never panics and chains stay bounded: random registers and
/// stacks over real modules, corrupt unwind tables, a frame limit.
#[test]
fn garbage_in_bounded_out() {
    let Some(arch) = Arch::native() else { return };
    let dir = tempfile::tempdir().unwrap();
    let flags = ["-O2", "-fomit-frame-pointer", "-fno-builtin", "-lm"];
    let Some(path) = common::compile(dir.path(), "chain", CHAIN, &flags) else { return };
    let bytes = std::fs::read(&path).unwrap();
    // The file range of `.eh_frame_hdr` and `.eh_frame` (next to each other).
    let unwind_tables = {
        use object::{Object, ObjectSection};
        let file = object::File::parse(&*bytes).unwrap();
        let range = |n| file.section_by_name(n).and_then(|s| s.file_range()).unwrap();
        let (hdr, eh) = (range(".eh_frame_hdr"), range(".eh_frame"));
        (hdr.0.min(eh.0) as usize, (hdr.0 + hdr.1).max(eh.0 + eh.1) as usize)
    };
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let base = 0x5555_0000_0000u64;
    let mut callers = Vec::new();
    for round in 0..300 {
        let mut unwinder = Unwinder::new(arch, config());
        unwinder.set_max_frames(64);
        // Rounds after the first corrupt the file's bytes: odd ones its
        // unwind tables only, even ones anywhere.
        let mut b = bytes.clone();
        let (lo, hi) = if round % 2 == 1 { unwind_tables } else { (0, b.len()) };
        if round > 0 {
            for _ in 0..24 {
                let at = lo + (next() % (hi - lo) as u64) as usize;
                b[at] = next() as u8;
            }
        }
        let _ = unwinder.add_module_bytes(1, "chain", b, Mapping::LoadBase { load_base: base }, base..base + 0x10_0000);
        for _ in 0..20 {
            let words: Vec<u64> = (0..512)
                .map(|i| match next() % 4 {
                    0 => base + 0x1000 + next() % 0x1000,
                    1 => 0x7ffd_0000_0000 + i * 8 + next() % 64,
                    _ => next(),
                })
                .collect();
            let stack: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            let sp = 0x7ffd_0000_0000;
            let regs = match arch {
                Arch::X86_64 => Registers::X86_64 { ip: base + 0x1000 + next() % 0x1000, sp, bp: sp + next() % 4096 },
                Arch::Aarch64 => Registers::Aarch64 {
                    pc: base + 0x1000 + next() % 0x1000,
                    sp,
                    fp: sp + next() % 4096,
                    lr: base + 0x1000 + next() % 0x1000,
                },
            };
            let end = unwinder.unwind(1, &regs, &stack, sp, &mut callers);
            assert!(callers.len() <= 64, "{end:?}");
            // Registers only, no stack; a process with no modules.
            unwinder.unwind(1, &regs, &[], sp, &mut callers);
            unwinder.unwind(2, &regs, &stack[..13], sp, &mut callers);
        }
    }
    // Registers of the other architecture.
    let other = match arch {
        Arch::X86_64 => Registers::Aarch64 { pc: 1, sp: 2, fp: 3, lr: 4 },
        Arch::Aarch64 => Registers::X86_64 { ip: 1, sp: 2, bp: 3 },
    };
    assert_eq!(Unwinder::new(arch, config()).unwind(1, &other, &[], 0, &mut callers), StackEnd::WrongArch);
}

/// Bad modules are refused with the reason, and leave the process as it
/// was; overlapping mappings replace each other; forks copy the modules.
#[test]
fn modules_refused_replaced_and_forked() {
    let mut u = Unwinder::new(Arch::X86_64, config());
    let missing = ModuleSpec::new("/nowhere/libx.so", Mapping::LoadBase { load_base: 0x1000 });
    assert!(matches!(u.add_module(1, &missing, 0x1000..0x2000), Err(UnwindError::File(Unknown::NotFound { .. }))));
    let vdso = ModuleSpec::new("[vdso]", Mapping::LoadBase { load_base: 0x1000 });
    assert_eq!(u.add_module(1, &vdso, 0x1000..0x2000), Err(UnwindError::File(Unknown::NotAFile)));
    let garbage = u.add_module_bytes(1, "junk", vec![7; 100], Mapping::LoadBase { load_base: 0 }, 0..100);
    assert!(matches!(garbage, Err(UnwindError::File(Unknown::Malformed { .. }))), "{garbage:?}");
    assert_eq!(u.module_count(1), 0);

    let dir = tempfile::tempdir().unwrap();
    let Some(path) = common::compile(dir.path(), "m", "int main(void) { return 0; }", &["-O2"]) else { return };
    let spec = |base| ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: base });
    assert_eq!(u.add_module(1, &spec(0x10_0000), 0x10_0000..0x20_0000), Ok(UnwindInfo::EhFrameHdr));
    assert_eq!(u.add_module(1, &spec(0x30_0000), 0x30_0000..0x40_0000), Ok(UnwindInfo::EhFrameHdr));
    assert_eq!(u.module_count(1), 2);
    // Over both: replaces them.
    assert_eq!(u.add_module(1, &spec(0x18_0000), 0x18_0000..0x38_0000), Ok(UnwindInfo::EhFrameHdr));
    assert_eq!(u.module_count(1), 1);
    u.fork(1, 7);
    assert_eq!(u.module_count(7), 1);
    u.remove_module(1, 0x18_0000);
    assert_eq!((u.module_count(1), u.module_count(7)), (0, 1));
    u.remove_process(7);
    assert_eq!(u.module_count(7), 0);
    // A mapping that places the code below address 0.
    let below = ModuleSpec::new(path.to_str().unwrap(), Mapping::ExecSegment { map_start: 0 });
    assert!(matches!(u.add_module(1, &below, 0..0x1000), Err(UnwindError::Mapping { .. })));
}

/// The frame limit, on a real sample's chain.
#[test]
fn frame_limit() {
    if Arch::native() != Some(Arch::X86_64) {
        return;
    }
    let flags = ["-O2", "-fomit-frame-pointer", "-fno-builtin", "-lm"];
    let Some(rec) = record(CHAIN, &flags, &["--call-graph", "dwarf"]) else { return };
    let mut u = Unwinder::new(Arch::X86_64, config());
    u.set_max_frames(2);
    let mut callers = Vec::new();
    let mut limited = 0;
    for event in read(&rec.data, Arch::X86_64) {
        match event {
            Event::Mmap(m) => {
                let spec = ModuleSpec::new(m.path.as_str(), Mapping::FileOffset { map_start: m.start, pgoff: m.pgoff });
                let _ = u.add_module(m.pid, &spec, m.start..m.start + m.len);
            }
            Event::Sample(s) => {
                let Some(regs) = s.regs else { continue };
                if u.unwind(s.pid, &regs, &s.stack, regs.sp(), &mut callers) == StackEnd::Limit {
                    assert_eq!(callers.len(), 2);
                    limited += 1;
                }
            }
        }
    }
    assert!(limited > 100, "{limited} chains cut at 2 callers");
}

/// An `.eh_frame_hdr` whose table points outside `.eh_frame` is not
/// trusted (gimli's lookup would overflow on it): `.eh_frame` is indexed
/// instead, and unwinding there does not panic.
#[test]
fn a_corrupt_eh_frame_hdr_table_is_not_used() {
    let Some(arch) = Arch::native() else { return };
    let dir = tempfile::tempdir().unwrap();
    let flags = ["-O2", "-fomit-frame-pointer", "-fno-builtin", "-lm"];
    let Some(path) = common::compile(dir.path(), "chain", CHAIN, &flags) else { return };
    let mut bytes = std::fs::read(&path).unwrap();
    let (hdr, text) = {
        use object::{Object, ObjectSection};
        let file = object::File::parse(&*bytes).unwrap();
        let text = file.section_by_name(".text").unwrap();
        (file.section_by_name(".eh_frame_hdr").unwrap().file_range().unwrap(), (text.address(), text.size()))
    };
    let hdr = hdr.0 as usize;
    // GNU ld's encodings: eh_frame_ptr pcrel sdata4, count udata4, rows
    // datarel sdata4 (initial location, FDE).
    assert_eq!(bytes[hdr..hdr + 4], [1, 0x1b, 0x03, 0x3b]);
    let base = 0x5555_0000_0000u64;
    let mapping = Mapping::LoadBase { load_base: base };
    let mut sound = Unwinder::new(arch, config());
    assert_eq!(
        sound.add_module_bytes(1, "chain", bytes.clone(), mapping, base..base + 0x10_0000),
        Ok(UnwindInfo::EhFrameHdr)
    );
    let count = u32::from_le_bytes(bytes[hdr + 8..hdr + 12].try_into().unwrap()) as usize;
    for row in 0..count {
        let fde = hdr + 12 + 8 * row + 4;
        bytes[fde..fde + 4].copy_from_slice(&(-0x10_0000i32).to_le_bytes());
    }
    let mut u = Unwinder::new(arch, config());
    assert_eq!(u.add_module_bytes(1, "chain", bytes, mapping, base..base + 0x10_0000), Ok(UnwindInfo::EhFrame));
    let stack: Vec<u8> = (0..4096u64).flat_map(|i| (base + text.0 + i * 13 % text.1).to_le_bytes()).collect();
    let mut callers = Vec::new();
    for k in 0..text.1 {
        let pc = base + text.0 + k;
        let regs = match arch {
            Arch::X86_64 => Registers::X86_64 { ip: pc, sp: 0x7000_0000, bp: 0x7000_0100 },
            Arch::Aarch64 => Registers::Aarch64 { pc, sp: 0x7000_0000, fp: 0x7000_0100, lr: pc + 4 },
        };
        assert_ne!(u.unwind(1, &regs, &stack, 0x7000_0000, &mut callers), StackEnd::WrongArch);
    }
}
