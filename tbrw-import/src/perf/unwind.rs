//! `perf record --call-graph dwarf` samples unwound into user frames.
//! Such a sample carries no user call chain: it carries the user
//! registers and a copy of the top of the user stack, and perf unwinds
//! them when it reports. The import does it once, as it reads:
//! [`DwarfUnwinding`] follows the processes' executable mappings (MMAP,
//! FORK, exec, EXIT) into a [`tbrw_symbols::unwind::Unwinder`], which
//! finds each file as the symbolizer does and reads its CFI, and gives
//! each sample its user frames: the user pc, then each caller's return
//! address, innermost first (the layout of perf's frame-pointer chains,
//! which the call-chain stream holds).

use tbrw_symbols::unwind::{Arch, Registers, Unwinder};
use tbrw_symbols::{BuildId, Config, Mapping, ModuleSpec};

use super::sample::Sample;

/// perf's `PERF_SAMPLE_REGS_ABI_64`: the registers of a 64-bit task (a
/// 32-bit task's, ABI 1, are not unwound: the unwinder is 64-bit).
const REGS_ABI_64: u64 = 2;

/// How many files that could not be used for unwinding are named.
const MISSING_NAMED: usize = 8;

/// The unwinding state of one import.
pub struct DwarfUnwinding {
    unwinder: Unwinder,
    callers: Vec<u64>,
    /// Samples given user frames.
    pub samples: u64,
    /// Files whose unwind information could not be used, or was used in
    /// part (their frames unwind by frame pointers), each once with why:
    /// at most eight.
    pub missing: Vec<String>,
}

impl DwarfUnwinding {
    /// Unwinding for samples of `arch`, files found with `config`.
    pub fn new(arch: Arch, config: Config) -> DwarfUnwinding {
        DwarfUnwinding { unwinder: Unwinder::new(arch, config), callers: Vec::new(), samples: 0, missing: Vec::new() }
    }

    /// The architecture of a recording whose header says `arch` (perf's
    /// `uname -m`), or, without one, this machine's; `None` for one the
    /// unwinder does not know.
    pub fn arch_of(arch: Option<&str>) -> Option<Arch> {
        match arch {
            Some("x86_64") => Some(Arch::X86_64),
            Some("aarch64" | "arm64") => Some(Arch::Aarch64),
            Some(_) => None,
            None => Arch::native(),
        }
    }

    /// An executable file mapping of process `pid` (its path as recorded,
    /// range, file offset and build id).
    pub fn mmap(&mut self, pid: i32, path: &str, start: u64, len: u64, pgoff: u64, build_id: Option<&str>) {
        // Memory of no file (`[vdso]`, `//anon`, JIT code) unwinds by the
        // fallback rule: there is nothing to read.
        if !path.starts_with('/') || path.starts_with("//") {
            return;
        }
        let mut spec = ModuleSpec::new(path, Mapping::FileOffset { map_start: start, pgoff });
        if let Some(id) = build_id.and_then(BuildId::from_hex) {
            spec = spec.with_build_id(id);
        }
        if let Err(why) = self.unwinder.add_module(pid as u32, &spec, start..start.saturating_add(len)) {
            let known = self.missing.iter().any(|m| m.starts_with(path) && m[path.len()..].starts_with(':'));
            if !known && self.missing.len() < MISSING_NAMED {
                self.missing.push(format!("{path}: {why}"));
            }
        }
        // Unwind sections left out (a compressed `.eh_frame` claiming more
        // than its file can hold): said once per file, as the file is read once.
        for w in self.unwinder.take_warnings() {
            if self.missing.len() < MISSING_NAMED {
                self.missing.push(w.to_string());
            }
        }
    }

    /// A new process `child` with the mappings of `parent`.
    pub fn fork(&mut self, parent: i32, child: i32) {
        self.unwinder.fork(parent as u32, child as u32);
    }

    /// Process `pid` exec'd or exited: its mappings are gone.
    pub fn forget(&mut self, pid: i32) {
        self.unwinder.remove_process(pid as u32);
    }

    /// The user frames of a sample of process `pid` whose event records
    /// the registers `mask` selects (`sample_regs_user`), into `out`
    /// (cleared): the user pc, then the callers' return addresses,
    /// innermost first. Nothing when the sample has no user registers or
    /// no stack bytes (perf unwinds nothing then either).
    pub fn user_frames(&mut self, pid: i32, mask: u64, sample: &Sample, out: &mut Vec<u64>) {
        out.clear();
        let (Some((abi, values)), Some(stack)) = (sample.user_regs, sample.user_stack) else { return };
        if abi != REGS_ABI_64 {
            return;
        }
        let regs = Registers::from_perf(self.unwinder.arch(), |n| {
            let bit = 1u64.checked_shl(n)?;
            if mask & bit == 0 {
                return None;
            }
            values.get((mask & (bit - 1)).count_ones() as usize)
        });
        let Some(regs) = regs else { return };
        self.unwinder.unwind(pid as u32, &regs, stack, regs.sp(), &mut self.callers);
        out.push(regs.pc());
        out.extend_from_slice(&self.callers);
        self.samples += 1;
    }
}
