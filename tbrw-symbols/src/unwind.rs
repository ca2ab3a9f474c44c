//! Stack unwinding with DWARF CFI, for samples that carry the user
//! registers and a copy of the top of the user stack: perf's
//! `--call-graph dwarf` (`PERF_SAMPLE_REGS_USER` and
//! `PERF_SAMPLE_STACK_USER`), or a collector that copies the same.
//!
//! An [`Unwinder`] knows the modules mapped in each process (given as the
//! symbolizer's [`ModuleSpec`]s, found by the same search rules, placed by
//! the same [`crate::Mapping`]s) and turns one sample's [`Registers`], stack
//! bytes and stack address into the return addresses of the calling frames.
//! The CFI (`.eh_frame` with `.eh_frame_hdr`'s table, else `.eh_frame`, else
//! `.debug_frame`) is read by the `framehop` crate, which evaluates it with
//! `gimli`; where a module has none, or an address is in no module,
//! framehop's fallback rule (frame pointers) applies. Files are read once
//! per (path, build id), framehop's module data once per mapping, and the
//! rules found are cached per address across samples and processes.
//!
//! Garbage (registers, stack bytes, unwind tables) gives short or wrong
//! chains, never a panic; a chain has at most [`Unwinder::max_frames`]
//! callers.
//!
//! ```no_run
//! use tbrw_symbols::unwind::{Arch, Registers, Unwinder};
//! use tbrw_symbols::{Config, Mapping, ModuleSpec};
//!
//! let mut unwinder = Unwinder::new(Arch::X86_64, Config::default());
//! // Each executable mapping of process 4242 (a perf MMAP2 event, a line of
//! // /proc/4242/maps): path, where it was mapped and the file offset.
//! let libc = ModuleSpec::new(
//!     "/usr/lib/x86_64-linux-gnu/libc.so.6",
//!     Mapping::FileOffset { map_start: 0x7f00_0002_6000, pgoff: 0x26000 },
//! );
//! if let Err(why) = unwinder.add_module(4242, &libc, 0x7f00_0002_6000..0x7f00_0017_c000) {
//!     eprintln!("warning: libc.so.6: {why}; its frames unwind by frame pointers");
//! }
//! // One sample: perf's user registers (by perf's register numbers) and
//! // the `dyn_size` valid bytes of its stack copy, which starts at sp.
//! let values = [0x7ffd_0000_1000u64, 0x7ffd_0000_0f00, 0x7f00_0003_0123];
//! let regs = Registers::from_perf_mask(Arch::X86_64, (1 << 6) | (1 << 7) | (1 << 8), &values).unwrap();
//! let stack = vec![0u8; 8192];
//! let mut callers = Vec::new();
//! let end = unwinder.unwind(4242, &regs, &stack, regs.sp(), &mut callers);
//! // `callers` holds return addresses, innermost first; `ra - 1` is in the
//! // calling instruction (what perf prints, what to symbolize).
//! println!("{:#x} then {} callers ({end:?})", regs.pc(), callers.len());
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::{Deref, Range};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use framehop::aarch64::{CacheAarch64, UnwindRegsAarch64, UnwinderAarch64};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder as _};
use object::{Object, ObjectSection};

use crate::elf::{BuildId, Bytes, ElfFile, OpenError};
use crate::find::locate;
use crate::frame::Unknown;
use crate::mapping::Mapping;
use crate::sections::{section_data, SectionData};
use crate::symbolizer::{Config, ModuleSpec};
use crate::warning::Warning;

/// The most callers [`Unwinder::unwind`] gives by default.
pub const MAX_FRAMES: usize = 256;

/// The CPU architectures unwound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// x86-64 (registers ip, sp, bp).
    X86_64,
    /// AArch64 (registers pc, sp, fp = x29, lr = x30).
    Aarch64,
}

impl Arch {
    /// The architecture this program runs on, when it is one of these.
    pub fn native() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Arch::Aarch64)
        } else {
            None
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Arch::X86_64 => "x86-64",
            Arch::Aarch64 => "aarch64",
        })
    }
}

/// The registers unwinding starts from: those of the sampled user code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registers {
    /// x86-64.
    X86_64 {
        /// The instruction pointer (the sampled address).
        ip: u64,
        /// The stack pointer.
        sp: u64,
        /// The frame pointer register (used where no CFI applies).
        bp: u64,
    },
    /// AArch64.
    Aarch64 {
        /// The program counter (the sampled address).
        pc: u64,
        /// The stack pointer.
        sp: u64,
        /// The frame pointer, x29.
        fp: u64,
        /// The link register, x30.
        lr: u64,
    },
}

/// perf's register numbers (`PERF_REG_X86_*`, `PERF_REG_ARM64_*` of the
/// kernel's `perf_regs.h`): bits of `sample_regs_user`.
mod perf_reg {
    pub(super) const X86_BP: u32 = 6;
    pub(super) const X86_SP: u32 = 7;
    pub(super) const X86_IP: u32 = 8;
    pub(super) const ARM64_FP: u32 = 29;
    pub(super) const ARM64_LR: u32 = 30;
    pub(super) const ARM64_SP: u32 = 31;
    pub(super) const ARM64_PC: u32 = 32;
}

impl Registers {
    /// The architecture of these registers.
    pub fn arch(&self) -> Arch {
        match self {
            Registers::X86_64 { .. } => Arch::X86_64,
            Registers::Aarch64 { .. } => Arch::Aarch64,
        }
    }

    /// The sampled address (ip, pc).
    pub fn pc(&self) -> u64 {
        match *self {
            Registers::X86_64 { ip, .. } => ip,
            Registers::Aarch64 { pc, .. } => pc,
        }
    }

    /// The stack pointer: where perf's stack copy starts.
    pub fn sp(&self) -> u64 {
        match *self {
            Registers::X86_64 { sp, .. } | Registers::Aarch64 { sp, .. } => sp,
        }
    }

    /// The registers of a perf sample, `reg(n)` giving perf's register
    /// number `n` (x86-64: bp 6, sp 7, ip 8; aarch64: x29 29, lr 30, sp 31,
    /// pc 32), `None` when the sample lacks it. `None` when one of these is
    /// missing.
    pub fn from_perf(arch: Arch, mut reg: impl FnMut(u32) -> Option<u64>) -> Option<Registers> {
        use perf_reg::*;
        Some(match arch {
            Arch::X86_64 => Registers::X86_64 { ip: reg(X86_IP)?, sp: reg(X86_SP)?, bp: reg(X86_BP)? },
            Arch::Aarch64 => {
                Registers::Aarch64 { pc: reg(ARM64_PC)?, sp: reg(ARM64_SP)?, fp: reg(ARM64_FP)?, lr: reg(ARM64_LR)? }
            }
        })
    }

    /// The registers of a perf sample as `PERF_SAMPLE_REGS_USER` lays them
    /// out: `mask` is the event's `sample_regs_user`, `values` one value
    /// per set bit, lowest bit first.
    pub fn from_perf_mask(arch: Arch, mask: u64, values: &[u64]) -> Option<Registers> {
        Registers::from_perf(arch, |n| {
            let bit = 1u64.checked_shl(n)?;
            if mask & bit == 0 {
                return None;
            }
            values.get((mask & (bit - 1)).count_ones() as usize).copied()
        })
    }
}

/// Which unwind information a module's addresses are unwound with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnwindInfo {
    /// `.eh_frame`, looked up through `.eh_frame_hdr`'s binary search
    /// table (what linkers make for nearly every binary).
    EhFrameHdr,
    /// `.eh_frame` without a table: indexed when the module is added.
    EhFrame,
    /// `.debug_frame` (of the file or its separate debug file): indexed
    /// when the module is added.
    DebugFrame,
    /// None: addresses of the module unwind by the fallback rule (frame
    /// pointers).
    None,
}

/// Why a module could not be added ([`Unwinder::add_module`]). Its
/// addresses then unwind by the fallback rule, as addresses in no module do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnwindError {
    /// No usable file was found (the reasons of [`Unknown`]).
    #[error("{0}")]
    File(Unknown),
    /// The file is for another architecture than the unwinder's.
    #[error("{path} is not an {expected} file")]
    Architecture {
        /// The file.
        path: PathBuf,
        /// The unwinder's architecture.
        expected: Arch,
    },
    /// The mapping places no executable segment of the file, or places it
    /// below address 0.
    #[error("the mapping places no code of {path}")]
    Mapping {
        /// The file.
        path: PathBuf,
    },
}

/// Why a chain ends ([`Unwinder::unwind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackEnd {
    /// The unwind information marks the outermost frame (`_start`, a
    /// thread's start): the chain is whole.
    Root,
    /// The next frame's data lies outside the stack copy (perf copies 8 KiB
    /// by default): the chain is cut there.
    OutsideCopy {
        /// The stack address that could not be read.
        address: u64,
    },
    /// The rules gave a frame that cannot be right (it does not advance,
    /// the stack moves backwards, a null return address, an overflow):
    /// wrong or missing unwind information, or garbage registers.
    Stopped,
    /// [`Unwinder::max_frames`] callers were found.
    Limit,
    /// The registers are of another architecture than the unwinder's.
    WrongArch,
}

/// A section's bytes: a range of a file's shared bytes (no copy), or a
/// decompressed copy.
#[derive(Clone)]
struct SectionBytes {
    bytes: Bytes,
    range: Range<usize>,
}

impl Deref for SectionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes.get(self.range.clone()).unwrap_or_default()
    }
}

/// A file read for unwinding: where its code is, and its unwind sections.
struct UnwindFile {
    /// A number of its own, per unwinder (the module cache's key).
    id: usize,
    path: Arc<Path>,
    main: ElfFile,
    sections: ExplicitModuleSectionInfo<SectionBytes>,
    info: UnwindInfo,
}

enum Arches {
    X86_64(UnwinderX86_64<SectionBytes>),
    Aarch64(UnwinderAarch64<SectionBytes>),
}

impl Arches {
    fn new(arch: Arch) -> Arches {
        match arch {
            Arch::X86_64 => Arches::X86_64(UnwinderX86_64::new()),
            Arch::Aarch64 => Arches::Aarch64(UnwinderAarch64::new()),
        }
    }

    fn add(&mut self, module: Module<SectionBytes>) {
        match self {
            Arches::X86_64(u) => u.add_module(module),
            Arches::Aarch64(u) => u.add_module(module),
        }
    }

    fn remove(&mut self, start: u64) {
        match self {
            Arches::X86_64(u) => u.remove_module(start),
            Arches::Aarch64(u) => u.remove_module(start),
        }
    }

    fn clone_all(&self) -> Arches {
        match self {
            Arches::X86_64(u) => Arches::X86_64(u.clone()),
            Arches::Aarch64(u) => Arches::Aarch64(u.clone()),
        }
    }
}

/// The modules of one process.
struct Process {
    unwinder: Arches,
    /// Module ranges by start (framehop's modules must not overlap).
    ranges: BTreeMap<u64, u64>,
}

enum Caches {
    X86_64(Box<CacheX86_64>),
    Aarch64(Box<CacheAarch64>),
}

impl Caches {
    fn new(arch: Arch) -> Caches {
        match arch {
            Arch::X86_64 => Caches::X86_64(Box::new(CacheX86_64::new())),
            Arch::Aarch64 => Caches::Aarch64(Box::new(CacheAarch64::new())),
        }
    }
}

/// The key of a file: its path as given and the build id recorded.
type FileKey = (Arc<str>, Option<BuildId>);

/// Unwinds samples of the processes whose modules it was given. See the
/// [module documentation](self).
pub struct Unwinder {
    arch: Arch,
    config: Config,
    max_frames: usize,
    files: HashMap<FileKey, Result<Arc<UnwindFile>, UnwindError>>,
    /// The number the next file read gets.
    next_file: usize,
    /// framehop's module per (file number, mapped range, bias): processes
    /// mapping a file alike share one (its index, for tables without a
    /// header).
    modules: HashMap<(usize, u64, u64, u64), Module<SectionBytes>>,
    processes: HashMap<u32, Process>,
    /// For processes given no module: the fallback rules only.
    empty: Arches,
    cache: Caches,
    /// Sections left out of the files read, not yet taken by the caller.
    warnings: Vec<Warning>,
}

impl Unwinder {
    /// An unwinder for samples of `arch`, finding files as the symbolizer
    /// does with `config` (symfs, debug directories, search paths).
    pub fn new(arch: Arch, config: Config) -> Unwinder {
        let cache = Caches::new(arch);
        Unwinder {
            arch,
            config,
            max_frames: MAX_FRAMES,
            files: HashMap::new(),
            next_file: 0,
            modules: HashMap::new(),
            processes: HashMap::new(),
            empty: Arches::new(arch),
            cache,
            warnings: Vec::new(),
        }
    }

    /// What the files read since the last call lacked while still being
    /// used: compressed unwind sections left out because they claim more
    /// than the file can justify, or are damaged (each file is read once,
    /// so each warning comes once). Those sections' addresses unwind by
    /// what else the file has, else by the fallback rule.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.warnings)
    }

    /// The unwinder's architecture.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The most callers a chain gets ([`MAX_FRAMES`] unless changed).
    pub fn max_frames(&self) -> usize {
        self.max_frames
    }

    /// Sets the most callers a chain gets.
    pub fn set_max_frames(&mut self, max_frames: usize) {
        self.max_frames = max_frames;
    }

    /// Adds a module of process `pid`: the file `spec` names (found as the
    /// symbolizer finds it; a recorded build id must match), mapped at
    /// `avma` as `spec.mapping` says. A module overlapping `avma` is
    /// replaced (a new mapping over an old one). Says which unwind
    /// information the module's addresses use.
    pub fn add_module(&mut self, pid: u32, spec: &ModuleSpec, avma: Range<u64>) -> Result<UnwindInfo, UnwindError> {
        let key: FileKey = (Arc::from(spec.path.as_str()), spec.build_id.clone());
        let file = match self.files.get(&key) {
            Some(found) => found.clone()?,
            None => {
                let found = self.read_file(&key.0, key.1.as_ref());
                self.files.insert(key, found.clone());
                found?
            }
        };
        self.place(pid, file, spec.mapping, avma)
    }

    /// Adds a module of process `pid` from the bytes of its ELF file
    /// (labelled `label`, with no separate debug file), mapped at `avma` as
    /// `mapping` says; as [`Unwinder::add_module`] otherwise. Nothing is
    /// cached by label: each call reads its bytes anew.
    pub fn add_module_bytes(
        &mut self,
        pid: u32,
        label: &str,
        bytes: Vec<u8>,
        mapping: Mapping,
        avma: Range<u64>,
    ) -> Result<UnwindInfo, UnwindError> {
        let path: Arc<Path> = Arc::from(Path::new(label));
        let main = ElfFile::parse(path.clone(), Bytes::owned(bytes)).map_err(|e| {
            let message = match e {
                OpenError::Malformed(m) | OpenError::Unreadable(m) => m,
                OpenError::NotFound | OpenError::Directory => "not a file".into(),
            };
            UnwindError::File(Unknown::Malformed { path: path.to_path_buf(), message })
        })?;
        let file = self.unwind_file(main, None)?;
        self.place(pid, file, mapping, avma)
    }

    /// Removes the module of process `pid` that starts at `avma_start`
    /// (an unmapping); nothing when there is none.
    pub fn remove_module(&mut self, pid: u32, avma_start: u64) {
        if let Some(p) = self.processes.get_mut(&pid) {
            if p.ranges.remove(&avma_start).is_some() {
                p.unwinder.remove(avma_start);
            }
        }
    }

    /// Forgets process `pid` (its exit, or an exec, before the new image's
    /// modules are added).
    pub fn remove_process(&mut self, pid: u32) {
        self.processes.remove(&pid);
    }

    /// Gives process `child` the modules of `parent` (a fork), replacing
    /// those `child` had.
    pub fn fork(&mut self, parent: u32, child: u32) {
        let copy = match self.processes.get(&parent) {
            Some(p) => Process { unwinder: p.unwinder.clone_all(), ranges: p.ranges.clone() },
            None => Process { unwinder: Arches::new(self.arch), ranges: BTreeMap::new() },
        };
        self.processes.insert(child, copy);
    }

    /// The number of modules process `pid` has.
    pub fn module_count(&self, pid: u32) -> usize {
        self.processes.get(&pid).map_or(0, |p| p.ranges.len())
    }

    /// Unwinds one sample of process `pid`: from `regs`, with `stack` the
    /// copy of the stack memory starting at address `stack_start` (perf:
    /// the first `dyn_size` bytes of the sample's stack copy, which starts
    /// at sp). `callers` is cleared and gets the return address of each
    /// calling frame, innermost first (not the sampled address itself); the
    /// calling instruction is at `ra - 1`, which is what perf prints and
    /// what to symbolize. Says why the chain ends. A process with no
    /// modules unwinds by the fallback rule (frame pointers).
    pub fn unwind(
        &mut self,
        pid: u32,
        regs: &Registers,
        stack: &[u8],
        stack_start: u64,
        callers: &mut Vec<u64>,
    ) -> StackEnd {
        callers.clear();
        let mut read = |address: u64| -> Result<u64, ()> {
            let at = usize::try_from(address.wrapping_sub(stack_start)).map_err(|_| ())?;
            let word = stack.get(at..at.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_le_bytes(word.try_into().map_err(|_| ())?))
        };
        let unwinder = self.processes.get(&pid).map_or(&self.empty, |p| &p.unwinder);
        let max = self.max_frames;
        let cache = &mut self.cache;
        // framehop (and gimli under it) compute some addresses unchecked:
        // on garbage, builds with overflow checks (debug builds, tests) can
        // panic where release builds wrap and stop. Such a chain ends
        // there; the cache, perhaps left half-updated, is started afresh.
        let walked = std::panic::catch_unwind(AssertUnwindSafe(|| match (unwinder, &mut *cache, *regs) {
            (Arches::X86_64(u), Caches::X86_64(cache), Registers::X86_64 { ip, sp, bp }) => {
                let mut frames = u.iter_frames(ip, UnwindRegsX86_64::new(ip, sp, bp), cache, &mut read);
                collect(|| frames.next(), callers, max)
            }
            (Arches::Aarch64(u), Caches::Aarch64(cache), Registers::Aarch64 { pc, sp, fp, lr }) => {
                let mut frames = u.iter_frames(pc, UnwindRegsAarch64::new(lr, sp, fp), cache, &mut read);
                collect(|| frames.next(), callers, max)
            }
            _ => StackEnd::WrongArch,
        }));
        walked.unwrap_or_else(|_| {
            self.cache = Caches::new(self.arch);
            StackEnd::Stopped
        })
    }

    /// Finds and reads the file of `label`.
    fn read_file(&mut self, label: &str, build_id: Option<&BuildId>) -> Result<Arc<UnwindFile>, UnwindError> {
        let located = locate(label, build_id, &self.config).map_err(UnwindError::File)?;
        self.unwind_file(located.main, located.debug)
    }

    /// The unwind sections of `main` (`.debug_frame` from `debug` when
    /// `main` has none).
    fn unwind_file(&mut self, main: ElfFile, debug: Option<ElfFile>) -> Result<Arc<UnwindFile>, UnwindError> {
        let path = main.path.clone();
        let obj = main.object().ok_or_else(|| {
            UnwindError::File(Unknown::Malformed { path: path.to_path_buf(), message: "does not parse".into() })
        })?;
        let arch = match obj.architecture() {
            object::Architecture::X86_64 => Some(Arch::X86_64),
            object::Architecture::Aarch64 => Some(Arch::Aarch64),
            _ => None,
        };
        if arch != Some(self.arch) {
            return Err(UnwindError::Architecture { path: path.to_path_buf(), expected: self.arch });
        }
        let range = |name: &str| {
            let s = obj.section_by_name(name)?;
            Some(s.address()..s.address().checked_add(s.size())?)
        };
        let mut sections = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: range(".text"),
            got_svma: range(".got"),
            eh_frame_svma: range(".eh_frame"),
            eh_frame: section_bytes(&main, &obj, ".eh_frame", &mut self.warnings),
            eh_frame_hdr_svma: range(".eh_frame_hdr"),
            eh_frame_hdr: section_bytes(&main, &obj, ".eh_frame_hdr", &mut self.warnings),
            debug_frame: section_bytes(&main, &obj, ".debug_frame", &mut self.warnings),
            // Mach-O's, and the code (framehop reads it for Mach-O only).
            text: None,
            stubs_svma: None,
            stub_helper_svma: None,
            unwind_info: None,
            text_segment_svma: None,
            text_segment: None,
        };
        // framehop trusts `.eh_frame_hdr`'s table; a table it cannot trust
        // is left out, and `.eh_frame` indexed instead.
        let hdr_sound = match (&sections.eh_frame_hdr, &sections.eh_frame_hdr_svma, &sections.eh_frame_svma) {
            (Some(hdr), Some(hdr_at), Some(eh)) => hdr_table_sound(hdr, hdr_at.start, eh),
            _ => false,
        };
        if !hdr_sound {
            sections.eh_frame_hdr = None;
        }
        if sections.debug_frame.is_none() {
            if let Some(d) = &debug {
                sections.debug_frame =
                    d.object().and_then(|o| section_bytes(d, &o, ".debug_frame", &mut self.warnings));
            }
        }
        let info = match (&sections.eh_frame, &sections.eh_frame_hdr, &sections.debug_frame) {
            (Some(_), Some(_), _) => UnwindInfo::EhFrameHdr,
            (Some(_), None, _) => UnwindInfo::EhFrame,
            (None, _, Some(_)) => UnwindInfo::DebugFrame,
            (None, _, None) => UnwindInfo::None,
        };
        drop(obj);
        self.next_file += 1;
        Ok(Arc::new(UnwindFile { id: self.next_file, path, main, sections, info }))
    }

    /// Adds `file`, mapped at `avma` as `mapping` says, to process `pid`.
    fn place(
        &mut self,
        pid: u32,
        file: Arc<UnwindFile>,
        mapping: Mapping,
        avma: Range<u64>,
    ) -> Result<UnwindInfo, UnwindError> {
        let no_code = || UnwindError::Mapping { path: file.path.to_path_buf() };
        let bias = mapping.code_span(&file.main.layout).and_then(|span| span.bias()).ok_or_else(no_code)?;
        if avma.start >= avma.end {
            return Err(no_code());
        }
        let key = (file.id, avma.start, avma.end, bias);
        let module = self
            .modules
            .entry(key)
            .or_insert_with(|| {
                let name = file.path.to_string_lossy().into_owned();
                Module::new(name, avma.clone(), bias, file.sections.clone())
            })
            .clone();
        let arch = self.arch;
        let process = self
            .processes
            .entry(pid)
            .or_insert_with(|| Process { unwinder: Arches::new(arch), ranges: BTreeMap::new() });
        let overlapping: Vec<u64> =
            process.ranges.range(..avma.end).filter(|(_, &end)| end > avma.start).map(|(&start, _)| start).collect();
        for start in overlapping {
            process.ranges.remove(&start);
            process.unwinder.remove(start);
        }
        process.ranges.insert(avma.start, avma.end);
        process.unwinder.add(module);
        Ok(file.info)
    }
}

/// The bytes of section `name` of `file`: a range of the file's bytes, or
/// a copy decompressed within its bound (`crate::sections`). `None` when
/// it is missing, empty or `SHT_NOBITS`, or left out (with a warning in
/// `warnings`).
fn section_bytes(
    file: &ElfFile,
    obj: &object::File<'_>,
    name: &str,
    warnings: &mut Vec<Warning>,
) -> Option<SectionBytes> {
    let s = obj.section_by_name(name)?;
    let (_, size) = s.file_range()?;
    if size == 0 {
        return None;
    }
    match section_data(&s, file.bytes.len()) {
        Ok(Some(SectionData::InPlace(range))) => Some(SectionBytes { bytes: file.bytes.clone(), range }),
        Ok(Some(SectionData::Owned(data))) => {
            let len = data.len();
            Some(SectionBytes { bytes: Bytes::owned(data), range: 0..len })
        }
        Ok(None) => None,
        Err(problem) => {
            let section = s.name().unwrap_or(name).to_owned();
            warnings.push(Warning::SectionSkipped { path: file.path.to_path_buf(), section, problem });
            None
        }
    }
}

/// Whether the binary search table of an `.eh_frame_hdr` (its bytes `hdr`,
/// at address `hdr_at`) can be used with the `.eh_frame` at `eh_frame`:
/// it says `.eh_frame` is there, and each of its rows (all it claims to
/// have) reads and points into `.eh_frame`. gimli's lookup in the table
/// computes an FDE's offset and the search's steps unchecked, so a corrupt
/// table would overflow there.
fn hdr_table_sound(hdr: &[u8], hdr_at: u64, eh_frame: &Range<u64>) -> bool {
    let bases = gimli::BaseAddresses::default().set_eh_frame_hdr(hdr_at).set_eh_frame(eh_frame.start);
    let Ok(parsed) = gimli::EhFrameHdr::new(hdr, gimli::LittleEndian).parse(&bases, 8) else { return false };
    if parsed.eh_frame_ptr() != gimli::Pointer::Direct(eh_frame.start) {
        return false;
    }
    let Some(table) = parsed.table() else { return false };
    let mut rows = table.iter(&bases);
    loop {
        match rows.next() {
            Ok(Some((_, gimli::Pointer::Direct(fde)))) if eh_frame.contains(&fde) => {}
            Ok(None) => return true,
            _ => return false,
        }
    }
}

/// Collects the return addresses framehop's iterator `next` yields into
/// `callers` (at most `max`), after the first frame (the sampled address).
fn collect(
    mut next: impl FnMut() -> Result<Option<FrameAddress>, framehop::Error>,
    callers: &mut Vec<u64>,
    max: usize,
) -> StackEnd {
    loop {
        match next() {
            Ok(Some(FrameAddress::InstructionPointer(_))) => {}
            Ok(Some(FrameAddress::ReturnAddress(ra))) => {
                if callers.len() >= max {
                    return StackEnd::Limit;
                }
                callers.push(ra.get());
            }
            Ok(None) => return StackEnd::Root,
            Err(framehop::Error::CouldNotReadStack(address)) => return StackEnd::OutsideCopy { address },
            Err(_) => return StackEnd::Stopped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_from_perf_masks() {
        // perf's default x86-64 user mask (ax … r15 but no segment
        // registers): bp is bit 6, sp 7, ip 8.
        let mask = 0xff0fffu64;
        let values: Vec<u64> = (0..mask.count_ones() as u64).map(|i| 100 + i).collect();
        assert_eq!(
            Registers::from_perf_mask(Arch::X86_64, mask, &values),
            Some(Registers::X86_64 { ip: 108, sp: 107, bp: 106 })
        );
        // Only the three, in bit order.
        let r = Registers::from_perf_mask(Arch::X86_64, 0b1_1100_0000, &[1, 2, 3]).unwrap();
        assert_eq!((r.pc(), r.sp(), r.arch()), (3, 2, Arch::X86_64));
        // aarch64: x0 … x30, sp, pc (bits 0 to 32).
        let all: Vec<u64> = (0..33).collect();
        assert_eq!(
            Registers::from_perf_mask(Arch::Aarch64, (1 << 33) - 1, &all),
            Some(Registers::Aarch64 { pc: 32, sp: 31, fp: 29, lr: 30 })
        );
        // A register missing from the mask, or from the values.
        assert_eq!(Registers::from_perf_mask(Arch::X86_64, 0b0_1100_0000, &[1, 2]), None);
        assert_eq!(Registers::from_perf_mask(Arch::X86_64, 0b1_1100_0000, &[1, 2]), None);
        assert_eq!(Registers::from_perf_mask(Arch::Aarch64, u64::MAX, &[]), None);
    }
}
