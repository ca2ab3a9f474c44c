//! Where a thread stopped at a signal handler's first instruction was
//! running. When the tracer lets a thread take a signal (it resumes it from
//! its signal-delivery-stop with the signal), the kernel builds the
//! handler's frame and points the thread at the handler; a stop that comes
//! before the thread runs on (a tick's `PTRACE_INTERRUPT`, or another
//! signal's delivery) shows the handler's first instruction, where the
//! thread has not spent any time. The time since its previous sample was
//! spent where the signal interrupted it, which the kernel saved in the
//! frame: that is the state a sample must show.
//!
//! x86-64: at a handler's first instruction the stack pointer points at
//! the frame (`struct rt_sigframe`: the return address into the restorer,
//! then the `ucontext`, then the `siginfo`), and the kernel has set
//! `rdi` = the signal, `rsi` = the `siginfo`, `rdx` = the `ucontext`
//! (`arch/x86/kernel/signal_64.c`, whatever `SA_SIGINFO` says). Those three
//! together, and a return address into a restorer (the `rt_sigreturn`
//! system call's two instructions, as glibc, musl and Go write them), are
//! the handler's entry; the interrupted registers are the `ucontext`'s
//! `uc_mcontext` (`struct sigcontext`). Other architectures: not
//! recognised (aarch64 sets `x1`/`x2` only with `SA_SIGINFO`), the stop is
//! sampled as it is.
//!
//! Imports `sys`.

use crate::sys::{self, Regs};

/// Bytes of the kernel's x86-64 `struct ucontext`: `uc_flags`, `uc_link`,
/// `uc_stack` (24), `uc_mcontext` (`struct sigcontext`, 256), `uc_sigmask`.
const UCONTEXT_SIZE: u64 = 8 + 8 + 24 + 256 + 8;

/// Where `uc_mcontext` starts in the `ucontext`.
const MCONTEXT_AT: u64 = 8 + 8 + 24;

/// `struct sigcontext`'s first 17 words: `r8`..`r15`, `rdi`, `rsi`,
/// `rbp`, `rbx`, `rdx`, `rax`, `rcx`, `rsp`, `rip`; the indices of those
/// a sample reads.
const SIGCONTEXT_WORDS: usize = 17;
const RDI: usize = 8;
const RSI: usize = 9;
const RBP: usize = 10;
const RDX: usize = 12;
const RSP: usize = 15;
const RIP: usize = 16;

/// The restorers' code: `mov $15, %rax; syscall` (glibc, Go) and
/// `mov $15, %eax; syscall` (musl): `rt_sigreturn`.
const RESTORERS: [&[u8]; 2] = [&[0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05], &[0xb8, 0x0f, 0, 0, 0, 0x0f, 0x05]];

/// Nested frames followed at most (a signal delivered at the entry of
/// another's handler, and so on).
const MAX_NESTED: usize = 8;

/// Whether `regs` have the registers of a thread at a signal handler's
/// first instruction (see the module's doc; the restorer is checked by
/// [`interrupted`]).
pub fn at_handler_entry(regs: &Regs) -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let [sig, info, uc] = regs.args;
    (1..=64).contains(&sig) && uc == regs.sp.wrapping_add(8) && info == uc.wrapping_add(UCONTEXT_SIZE)
}

/// The registers of thread `pid`'s process where the signal whose handler
/// `regs` enter interrupted it (and the signal before, when that one was
/// delivered at another handler's entry); `None` when `regs` are not at a
/// handler's entry or the frame cannot be read.
pub fn interrupted(pid: u32, regs: &Regs) -> Option<Regs> {
    let mut r = *regs;
    let mut found = false;
    for _ in 0..MAX_NESTED {
        if !at_handler_entry(&r) || !returns_to_restorer(pid, r.sp) {
            break;
        }
        let mut bytes = [0u8; SIGCONTEXT_WORDS * 8];
        if sys::read_mem(pid, r.args[2] + MCONTEXT_AT, &mut bytes).ok()? != bytes.len() {
            return None;
        }
        let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        r = Regs { pc: word(RIP), sp: word(RSP), fp: word(RBP), lr: 0, args: [word(RDI), word(RSI), word(RDX)] };
        found = true;
    }
    found.then_some(r)
}

/// Whether the return address at `sp` in process `pid` is a restorer's.
fn returns_to_restorer(pid: u32, sp: u64) -> bool {
    let mut ret = [0u8; 8];
    if sys::read_mem(pid, sp, &mut ret).ok() != Some(8) {
        return false;
    }
    let mut code = [0u8; 9];
    let n = sys::read_mem(pid, u64::from_le_bytes(ret), &mut code).unwrap_or(0);
    RESTORERS.iter().any(|r| code[..n].starts_with(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry's three registers, each needed: a function called with a
    /// small first argument and a pointer to its own frame is not one.
    #[test]
    fn the_entry_is_the_three_registers_together() {
        let sp = 0x7ffc_0000_1000;
        let entry = Regs { pc: 0x401000, sp, fp: 0, lr: 0, args: [14, sp + 8 + UCONTEXT_SIZE, sp + 8] };
        assert_eq!(at_handler_entry(&entry), cfg!(target_arch = "x86_64"));
        for bad in [
            Regs { args: [0, sp + 8 + UCONTEXT_SIZE, sp + 8], ..entry },
            Regs { args: [65, sp + 8 + UCONTEXT_SIZE, sp + 8], ..entry },
            Regs { args: [14, sp + 8 + UCONTEXT_SIZE, sp + 16], ..entry },
            Regs { args: [14, sp + 8, sp + 8], ..entry },
        ] {
            assert!(!at_handler_entry(&bad), "{bad:?}");
        }
        assert_eq!(interrupted(std::process::id(), &Regs { args: [0, 0, 0], ..entry }), None);
    }

    /// A frame laid out as the kernel lays it, in this process's memory:
    /// the registers it saved come back, through a nested frame too.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_saved_registers_are_read_from_the_frame() {
        // Two frames: the outer one interrupted the program at 0x1234; the
        // inner one was delivered at the outer handler's entry. Each
        // returns into glibc's restorer.
        let restorer: [u8; 9] = [0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05];
        let mut outer = vec![0u64; (8 + UCONTEXT_SIZE as usize + 128) / 8];
        let mut inner = vec![0u64; outer.len()];
        outer[0] = restorer.as_ptr() as u64;
        inner[0] = restorer.as_ptr() as u64;
        let outer_sp = outer.as_ptr() as u64;
        let mc = (8 + MCONTEXT_AT as usize) / 8;
        outer[mc + RIP] = 0x1234;
        outer[mc + RSP] = 0x7000;
        outer[mc + RBP] = 0x7010;
        outer[mc + RDI] = 5;
        // The inner frame saved the outer handler's entry registers.
        inner[mc + RIP] = 0x9999;
        inner[mc + RSP] = outer_sp;
        inner[mc + RDI] = 14;
        inner[mc + RSI] = outer_sp + 8 + UCONTEXT_SIZE;
        inner[mc + RDX] = outer_sp + 8;
        let inner_sp = inner.as_ptr() as u64;
        let at_inner =
            Regs { pc: 0x9999, sp: inner_sp, fp: 0, lr: 0, args: [10, inner_sp + 8 + UCONTEXT_SIZE, inner_sp + 8] };
        let r = interrupted(std::process::id(), &at_inner).expect("a frame");
        assert_eq!((r.pc, r.sp, r.fp, r.args[0]), (0x1234, 0x7000, 0x7010, 5));
        // Not returning into a restorer: not a handler's entry.
        inner[0] = outer_sp;
        assert_eq!(interrupted(std::process::id(), &at_inner), None);
        std::hint::black_box((&outer, &inner, &restorer));
    }
}
