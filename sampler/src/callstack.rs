//! The call stack of a stopped thread, as `--call-graph` asks: by its frame
//! pointers (`fp`: the saved frame pointer and return address of each
//! frame, read with `process_vm_readv` from a window above the stack
//! pointer, one call for most stacks), or by the modules' DWARF CFI
//! (`dwarf`: a copy of the top of the stack and the registers, unwound by
//! `tbrw_symbols::unwind`, as perf's `--call-graph dwarf` and samply do).
//! Either gives the callers' return addresses, innermost first; the
//! sampled pc is not among them. Knows nothing of TB5.
//!
//! Frame pointers miss the caller of a function that has no frame of its
//! own where it was sampled: a leaf function compilers leave frameless
//! even with `-fno-omit-frame-pointer` (GCC before 14 on x86-64 ignores
//! `-mno-omit-leaf-frame-pointer` for leaves that need no stack), or any
//! function at its first instruction or its `ret`. On x86-64 its return
//! address is then the word at the stack pointer: it is taken as the first
//! caller when the instruction before it is a direct `call` (`e8 rel32`)
//! whose target is at most [`LEAF_SPAN`] below the sampled pc, which a
//! local or saved register a framed function keeps there almost never is
//! (perf's `--call-graph fp` has no such step, and shows such samples
//! without their caller).

use std::ops::Range;

use tbrw_symbols::unwind::{Arch, Registers, Unwinder};
use tbrw_symbols::{Config, Mapping, ModuleSpec};

use crate::sys;

/// How call stacks are taken (`--call-graph`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CallGraph {
    /// None: the sampled pc alone.
    #[default]
    None,
    /// Frame pointers.
    Fp,
    /// DWARF CFI, from a copy of the top of the stack.
    Dwarf,
}

impl CallGraph {
    /// Every mode, as `--call-graph` spells them.
    pub const ALL: [CallGraph; 3] = [CallGraph::Fp, CallGraph::Dwarf, CallGraph::None];

    /// The name `--call-graph` takes.
    pub fn name(self) -> &'static str {
        match self {
            CallGraph::None => "none",
            CallGraph::Fp => "fp",
            CallGraph::Dwarf => "dwarf",
        }
    }

    /// From [`CallGraph::name`].
    pub fn from_name(s: &str) -> Option<CallGraph> {
        CallGraph::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// The most frames a stack keeps (as perf's default `kernel.perf_event_max_stack`, 127).
pub const MAX_FRAMES: usize = 127;

/// Bytes of the stack read at once above the stack pointer: most frame
/// chains lie inside, so one system call reads them.
const FP_WINDOW: usize = 16 << 10;

/// Bytes of the stack copied for DWARF unwinding (perf's default for
/// `--call-graph dwarf`).
pub const DWARF_STACK: usize = 8 << 10;

/// How far below the sampled pc the target of the call before the word at
/// the stack pointer may be for that word to be taken as the return
/// address of a frameless function (its size, at most).
pub const LEAF_SPAN: u64 = 64 << 10;

/// Call targets remembered, at most (then forgotten all at once).
const CALL_TARGETS: usize = 1 << 16;

/// Takes call stacks of one run's threads.
pub struct Stacks {
    mode: CallGraph,
    unwinder: Option<Unwinder>,
    buf: Vec<u8>,
    /// Per (pid, address after a call): the direct call's target, `None`
    /// when the bytes before it are not one.
    call_targets: std::collections::HashMap<(u32, u64), Option<u64>>,
}

impl std::fmt::Debug for Stacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stacks").field("mode", &self.mode).finish_non_exhaustive()
    }
}

impl Stacks {
    /// Stacks of the mode `mode` (DWARF on this machine's architecture).
    pub fn new(mode: CallGraph) -> Stacks {
        let unwinder = match (mode, Arch::native()) {
            (CallGraph::Dwarf, Some(arch)) => Some(Unwinder::new(arch, Config::default())),
            _ => None,
        };
        Stacks { mode, unwinder, buf: Vec::new(), call_targets: std::collections::HashMap::new() }
    }

    /// The mode.
    pub fn mode(&self) -> CallGraph {
        self.mode
    }

    /// A module of process `pid` mapped at `avma` from `path` at file
    /// offset `offset` (its unwind tables are read when DWARF unwinding).
    pub fn add_module(&mut self, pid: u32, path: &str, offset: u64, avma: Range<u64>) {
        if let Some(u) = &mut self.unwinder {
            let spec = ModuleSpec::new(path.to_owned(), Mapping::FileOffset { map_start: avma.start, pgoff: offset });
            // A module without unwind tables (or unreadable) leaves the
            // stacks through it to end there: not an error of the run.
            let _ = u.add_module(pid, &spec, avma);
        }
    }

    /// A module of `pid` that went (at `avma_start`).
    pub fn remove_module(&mut self, pid: u32, avma_start: u64) {
        if let Some(u) = &mut self.unwinder {
            u.remove_module(pid, avma_start);
        }
    }

    /// A process that ended (or exec'd: its modules are read again).
    pub fn remove_process(&mut self, pid: u32) {
        // Its code is another after an exec.
        self.call_targets.retain(|k, _| k.0 != pid);
        if let Some(u) = &mut self.unwinder {
            u.remove_process(pid);
        }
    }

    /// The callers of stopped thread `tid` of process `pid`, whose
    /// registers are `regs`, into `out` (cleared first): return addresses,
    /// innermost first, at most [`MAX_FRAMES`].
    pub fn take(&mut self, pid: u32, regs: &sys::Regs, out: &mut Vec<u64>) {
        out.clear();
        match self.mode {
            CallGraph::None => {}
            CallGraph::Fp => self.frame_pointers(pid, regs, out),
            CallGraph::Dwarf => {
                let Some(u) = &mut self.unwinder else { return };
                self.buf.resize(DWARF_STACK, 0);
                // The stack ends at the top of its mapping: read what there is.
                let n = sys::read_mem(pid, regs.sp, &mut self.buf).unwrap_or(0);
                let regs = regs.unwind_registers();
                u.unwind(pid, &regs, &self.buf[..n], regs.sp(), out);
                out.truncate(MAX_FRAMES);
            }
        }
    }

    /// Follows the frame pointer chain: each frame's saved frame pointer
    /// and return address lie at its frame pointer (x86-64: `[bp]`,
    /// `[bp + 8]`; aarch64: `[fp]`, `[fp + 8]`), and frame pointers grow
    /// toward the stack's top; a chain that stops growing, leaves the
    /// readable stack, or is not aligned ends there.
    fn frame_pointers(&mut self, pid: u32, regs: &sys::Regs, out: &mut Vec<u64>) {
        // aarch64: the link register is the caller of a leaf that has not
        // saved it yet; perf takes it from the frame record, as here.
        self.buf.resize(FP_WINDOW, 0);
        let base = regs.sp;
        let have = sys::read_mem(pid, base, &mut self.buf).unwrap_or(0) as u64;
        let mut fp = regs.fp;
        let mut word = [0u8; 16];
        // A frameless function's return address, at the stack pointer.
        let leaf_caller = if cfg!(target_arch = "x86_64") && have >= 8 {
            let top = read_u64(&self.buf);
            self.is_return_into_caller_of(pid, top, regs.pc).then_some(top)
        } else {
            None
        };
        if let Some(ret) = leaf_caller {
            out.push(ret);
        }
        while out.len() < MAX_FRAMES {
            if fp < base || !fp.is_multiple_of(8) {
                break;
            }
            let (next, ret) = if fp + 16 <= base + have {
                let at = (fp - base) as usize;
                (read_u64(&self.buf[at..]), read_u64(&self.buf[at + 8..]))
            } else {
                // Above the window: one more read for this frame.
                match sys::read_mem(pid, fp, &mut word) {
                    Ok(16) => (read_u64(&word), read_u64(&word[8..])),
                    _ => break,
                }
            };
            if ret == 0 {
                break;
            }
            // The frame the stack pointer's word already gave.
            if out.len() == 1 && leaf_caller == Some(ret) {
                out.clear();
            }
            out.push(ret);
            if next <= fp {
                break;
            }
            fp = next;
        }
    }
}

impl Stacks {
    /// Whether `ret` follows a direct call (`e8 rel32`, x86-64) in process
    /// `pid` whose target is at most [`LEAF_SPAN`] below `pc`: then `ret`
    /// is the return address of the function holding `pc`.
    fn is_return_into_caller_of(&mut self, pid: u32, ret: u64, pc: u64) -> bool {
        if ret < 5 {
            return false;
        }
        if self.call_targets.len() >= CALL_TARGETS {
            self.call_targets.clear();
        }
        let target = *self.call_targets.entry((pid, ret)).or_insert_with(|| {
            let mut code = [0u8; 5];
            match sys::read_mem(pid, ret - 5, &mut code) {
                Ok(5) if code[0] == 0xe8 => {
                    let rel = i32::from_le_bytes([code[1], code[2], code[3], code[4]]);
                    Some(ret.wrapping_add(rel as i64 as u64))
                }
                _ => None,
            }
        });
        target.is_some_and(|t| t <= pc && pc - t < LEAF_SPAN)
    }
}

fn read_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().unwrap_or_default())
}

impl sys::Regs {
    /// The registers the unwinder takes.
    fn unwind_registers(&self) -> Registers {
        #[cfg(target_arch = "aarch64")]
        return Registers::Aarch64 { pc: self.pc, sp: self.sp, fp: self.fp, lr: self.lr };
        #[cfg(not(target_arch = "aarch64"))]
        return Registers::X86_64 { ip: self.pc, sp: self.sp, bp: self.fp };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_spelled_as_perf_spells_them() {
        for m in CallGraph::ALL {
            assert_eq!(CallGraph::from_name(m.name()), Some(m));
        }
        assert_eq!(CallGraph::from_name("lbr"), None);
    }

    /// This process's own frame chain, read as the tracer reads a
    /// tracee's: the callers' return addresses, inner first.
    #[test]
    #[inline(never)]
    fn frame_pointers_of_this_thread() {
        #[inline(never)]
        fn inner(out: &mut Vec<u64>) {
            let fp: u64;
            let sp: u64;
            // SAFETY: reads two registers.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                std::arch::asm!("mov {}, rbp", "mov {}, rsp", out(reg) fp, out(reg) sp)
            };
            #[cfg(target_arch = "aarch64")]
            unsafe {
                std::arch::asm!("mov {}, x29", "mov {}, sp", out(reg) fp, out(reg) sp)
            };
            let regs = sys::Regs { pc: 0, sp, fp, ..Default::default() };
            let mut s = Stacks::new(CallGraph::Fp);
            s.take(std::process::id(), &regs, out);
        }
        let mut out = Vec::new();
        inner(&mut out);
        // Frame pointers are kept in this crate's test builds only when
        // forced; without them the chain may be short: at least no garbage.
        assert!(out.len() <= MAX_FRAMES);
        assert!(out.iter().all(|&r| r != 0));
    }
}
