//! Thin safe wrappers over the few system calls the tracer needs: ptrace,
//! waitpid, clocks, signal masks, fork/exec. Nothing here keeps state;
//! every function maps one call and turns `errno` into [`io::Error`].

use std::ffi::CString;
use std::io;

/// Options set on every traced task: follow threads, forks, vforks and
/// execs, stop each task at its exit (where it is then), and kill the
/// tracees if the sampler dies.
pub const TRACE_OPTIONS: libc::c_int = libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACEEXEC
    | libc::PTRACE_O_TRACEEXIT
    | libc::PTRACE_O_EXITKILL;

fn check(r: libc::c_long) -> io::Result<libc::c_long> {
    if r == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn ptrace(req: libc::c_uint, tid: i32, addr: usize, data: usize) -> io::Result<libc::c_long> {
    // SAFETY: the requests used here take integers or pointers to memory
    // owned by the caller for the duration of the call.
    check(unsafe { libc::ptrace(req, tid, addr as *mut libc::c_void, data as *mut libc::c_void) })
}

/// `PTRACE_SEIZE` with [`TRACE_OPTIONS`].
pub fn seize(pid: i32) -> io::Result<()> {
    ptrace(libc::PTRACE_SEIZE, pid, 0, TRACE_OPTIONS as usize).map(drop)
}

/// `PTRACE_INTERRUPT`: ask a running tracee to stop.
pub fn interrupt(tid: i32) -> io::Result<()> {
    ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0).map(drop)
}

/// `PTRACE_CONT`, delivering `sig` (0: none).
pub fn cont(tid: i32, sig: i32) -> io::Result<()> {
    ptrace(libc::PTRACE_CONT, tid, 0, sig as usize).map(drop)
}

/// `PTRACE_LISTEN`: leave a tracee in its group-stop, but let it report
/// the next event.
pub fn listen(tid: i32) -> io::Result<()> {
    ptrace(libc::PTRACE_LISTEN, tid, 0, 0).map(drop)
}

/// `PTRACE_DETACH`, delivering `sig`.
pub fn detach(tid: i32, sig: i32) -> io::Result<()> {
    ptrace(libc::PTRACE_DETACH, tid, 0, sig as usize).map(drop)
}

/// `PTRACE_GETEVENTMSG`: the new task of a clone/fork event, the former
/// tid of an exec event.
pub fn event_msg(tid: i32) -> io::Result<u64> {
    let mut msg: libc::c_ulong = 0;
    ptrace(libc::PTRACE_GETEVENTMSG, tid, 0, &mut msg as *mut libc::c_ulong as usize)?;
    Ok(msg as u64)
}

/// What the call stacks need of a stopped tracee's registers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    /// The program counter.
    pub pc: u64,
    /// The stack pointer.
    pub sp: u64,
    /// The frame pointer (x86-64 `rbp`, aarch64 `x29`).
    pub fp: u64,
    /// The link register (aarch64 `x30`; 0 on x86-64).
    pub lr: u64,
    /// The first three argument registers (x86-64 `rdi`, `rsi`, `rdx`;
    /// aarch64 `x0`..`x2`): at a signal handler's first instruction, the
    /// kernel's arguments to it (`crate::sigframe`).
    pub args: [u64; 3],
}

/// The registers of a stopped tracee (`PTRACE_GETREGSET`, `NT_PRSTATUS`).
pub fn regs(tid: i32) -> io::Result<Regs> {
    // SAFETY: user_regs_struct is plain integers; zero is a valid value.
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: &mut regs as *mut libc::user_regs_struct as *mut libc::c_void,
        iov_len: std::mem::size_of::<libc::user_regs_struct>(),
    };
    ptrace(libc::PTRACE_GETREGSET, tid, libc::NT_PRSTATUS as usize, &mut iov as *mut libc::iovec as usize)?;
    #[cfg(target_arch = "x86_64")]
    return Ok(Regs { pc: regs.rip, sp: regs.rsp, fp: regs.rbp, lr: 0, args: [regs.rdi, regs.rsi, regs.rdx] });
    #[cfg(target_arch = "aarch64")]
    return Ok(Regs {
        pc: regs.pc,
        sp: regs.sp,
        fp: regs.regs[29],
        lr: regs.regs[30],
        args: [regs.regs[0], regs.regs[1], regs.regs[2]],
    });
}

/// Reads `buf.len()` bytes of process `pid` at `addr` (`process_vm_readv`):
/// the bytes read, fewer where the mapping ends.
pub fn read_mem(pid: u32, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
    let local = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: the local buffer is ours and `buf.len()` long; the remote
    // address is only read by the kernel, which checks it.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    if n < 0 {
        let e = io::Error::last_os_error();
        // A read across the end of a mapping: the part before it.
        if e.raw_os_error() == Some(libc::EFAULT) && buf.len() > 4096 {
            let first = (4096 - (addr % 4096) as usize).min(buf.len());
            return read_mem(pid, addr, &mut buf[..first]);
        }
        return Err(e);
    }
    Ok(n as usize)
}

/// How a waited-for task changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it.
    Killed(i32),
    /// It is in a ptrace-stop: the stop signal and the `PTRACE_EVENT_*`
    /// (0 for a signal-delivery-stop).
    Stopped {
        /// `WSTOPSIG`.
        sig: i32,
        /// `status >> 16`.
        event: i32,
    },
}

/// `waitpid(-1, __WALL | __WNOTHREAD [| WNOHANG])`: the next change of a
/// tracee of the calling thread. `None`: nothing (with `nohang`), or no
/// tracee left (`ECHILD`).
pub fn wait_any(nohang: bool) -> io::Result<Option<(i32, Status)>> {
    let mut status = 0;
    let flags = libc::__WALL | libc::__WNOTHREAD | if nohang { libc::WNOHANG } else { 0 };
    loop {
        // SAFETY: status is a valid out pointer.
        let r = unsafe { libc::waitpid(-1, &mut status, flags) };
        if r == -1 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECHILD) => return Ok(None),
                _ => return Err(e),
            }
        }
        if r == 0 {
            return Ok(None);
        }
        return Ok(Some((r, decode_status(status))));
    }
}

/// The next change of a tracee of the calling thread, without waiting
/// (`None`: nothing now, or no tracee left). An exit is only looked at
/// (`waitid(WNOWAIT)`): the task stays a zombie, its `/proc` files still
/// readable (its final CPU time), until [`reap`]; a stop is taken
/// (`waitpid`, which gives the `PTRACE_EVENT_*` bits `waitid` does not).
/// `Ok(Some((tid, status, true)))`: an exit still to reap.
pub fn next_change() -> io::Result<Option<(i32, Status, bool)>> {
    loop {
        // SAFETY: siginfo_t is plain data; zero is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WSTOPPED | libc::WNOWAIT | libc::WNOHANG | libc::__WALL;
        // SAFETY: info is a valid out pointer.
        let r = unsafe { libc::waitid(libc::P_ALL, 0, &mut info, flags) };
        if r == -1 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECHILD) => return Ok(None),
                _ => return Err(e),
            }
        }
        // SAFETY: waitid filled the CLD_* fields (or left si_pid 0: nothing).
        let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
        if pid == 0 {
            return Ok(None);
        }
        return match info.si_code {
            libc::CLD_EXITED => Ok(Some((pid, Status::Exited(status), true))),
            libc::CLD_KILLED | libc::CLD_DUMPED => Ok(Some((pid, Status::Killed(status), true))),
            // A stop: taken with its event bits. Nothing then (it was
            // resumed by a SIGKILL meanwhile): its exit comes next.
            _ => match wait_one(pid, true)? {
                Some(s) => Ok(Some((pid, s, false))),
                None => continue,
            },
        };
    }
}

/// Takes the exit of task `tid` that [`next_change`] looked at.
pub fn reap(tid: i32) -> io::Result<()> {
    wait_one(tid, false).map(drop)
}

/// `waitpid(tid, __WALL [| WNOHANG])`.
fn wait_one(tid: i32, nohang: bool) -> io::Result<Option<Status>> {
    let mut status = 0;
    let flags = libc::__WALL | if nohang { libc::WNOHANG } else { 0 };
    loop {
        // SAFETY: status is a valid out pointer.
        let r = unsafe { libc::waitpid(tid, &mut status, flags) };
        if r == -1 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECHILD) => return Ok(None),
                _ => return Err(e),
            }
        }
        return Ok((r != 0).then(|| decode_status(status)));
    }
}

fn decode_status(status: i32) -> Status {
    if libc::WIFEXITED(status) {
        Status::Exited(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Status::Killed(libc::WTERMSIG(status))
    } else {
        Status::Stopped { sig: libc::WSTOPSIG(status), event: status >> 16 }
    }
}

/// Nanoseconds of `CLOCK_MONOTONIC_RAW`: the time base of every record.
pub fn monotonic_raw_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC_RAW)
}

/// Nanoseconds of `CLOCK_REALTIME` since the Unix epoch.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out pointer; these clocks always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The signals the sampler takes synchronously with [`wait_signal`]
/// instead of by handler: a tracee changed (`SIGCHLD`), or the user
/// wants the run to end.
pub const WATCHED: [i32; 5] = [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

fn sigset(sigs: &[i32]) -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set; the signals are valid.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in sigs {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks [`WATCHED`] in the calling thread, so they wait for
/// [`wait_signal`]. Returns the previous mask (to restore in the child).
pub fn block_watched() -> io::Result<libc::sigset_t> {
    let set = sigset(&WATCHED);
    // SAFETY: both pointers are valid.
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        Ok(old)
    }
}

/// Waits up to `timeout_ns` for one of [`WATCHED`]; `None` on timeout.
pub fn wait_signal(timeout_ns: u64) -> Option<i32> {
    let set = sigset(&WATCHED);
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: valid set and timeout; the siginfo is not wanted.
    let r = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
    (r > 0).then_some(r)
}

/// Sends `sig` to process `pid`.
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: plain system call.
    check(unsafe { libc::kill(pid, sig) } as libc::c_long).map(drop)
}

/// A child that waits, before `execve`, until [`Child::release`]: the
/// parent seizes it in between, so the exec is its first traced event.
#[derive(Debug)]
pub struct Child {
    /// Its pid.
    pub pid: i32,
    go: i32,
}

/// The shell a file the kernel cannot execute (`ENOEXEC`: a script
/// without `#!`) is run with, as `execvp` and perf run it.
const SHELL: &std::ffi::CStr = c"/bin/sh";

/// Forks a child that will `execve(path, argv, environ)` once released,
/// with the signal mask `mask`. A file the kernel refuses as not
/// executable (`ENOEXEC`: a script without `#!`) is run by `/bin/sh`
/// instead, as `execvp` does: `/bin/sh path argv[1..]`. Everything the
/// child needs is prepared here: after `fork` it only makes
/// async-signal-safe calls.
pub fn spawn_held(path: &CString, argv: &[CString], mask: &libc::sigset_t) -> io::Result<Child> {
    let mut argp: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argp.push(std::ptr::null());
    let mut shell_argp: Vec<*const libc::c_char> = vec![SHELL.as_ptr(), path.as_ptr()];
    shell_argp.extend(argv.iter().skip(1).map(|a| a.as_ptr()));
    shell_argp.push(std::ptr::null());
    let mut fds = [0; 2];
    // SAFETY: fds is a valid out array.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } as libc::c_long)?;
    // SAFETY: after fork the child only calls read, close,
    // pthread_sigmask, execve and _exit, all async-signal-safe, and reads
    // errno, on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        let e = io::Error::last_os_error();
        // SAFETY: closing our own descriptors.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        return Err(e);
    }
    if pid == 0 {
        // SAFETY: see above.
        unsafe {
            libc::close(fds[1]);
            let mut b = 0u8;
            // The parent closes its end after seizing (or on failure).
            let n = libc::read(fds[0], &mut b as *mut u8 as *mut libc::c_void, 1);
            if n != 1 {
                libc::_exit(126);
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, mask, std::ptr::null_mut());
            extern "C" {
                static environ: *const *const libc::c_char;
            }
            libc::execve(path.as_ptr(), argp.as_ptr(), environ);
            if *libc::__errno_location() == libc::ENOEXEC {
                libc::execve(SHELL.as_ptr(), shell_argp.as_ptr(), environ);
            }
            libc::_exit(127);
        }
    }
    // SAFETY: closing our copy of the read end.
    unsafe { libc::close(fds[0]) };
    Ok(Child { pid, go: fds[1] })
}

impl Child {
    /// Lets the child go on to `execve`.
    pub fn release(mut self) -> io::Result<()> {
        let b = 1u8;
        // SAFETY: writing one byte from a valid buffer to our pipe.
        let r = unsafe { libc::write(self.go, &b as *const u8 as *const libc::c_void, 1) };
        let e = io::Error::last_os_error();
        self.close();
        if r == 1 {
            Ok(())
        } else {
            Err(e)
        }
    }

    fn close(&mut self) {
        if self.go >= 0 {
            // SAFETY: our own descriptor, closed once.
            unsafe { libc::close(self.go) };
            self.go = -1;
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // Not released: the child reads end-of-file and exits without exec.
        self.close();
    }
}

/// The host name (`uname`).
pub fn hostname() -> String {
    // SAFETY: utsname is plain bytes; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    cstr(&u.nodename)
}

/// The kernel's name, release and version (`uname`).
pub fn os_release() -> (String, String, String) {
    // SAFETY: as in hostname.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return Default::default();
    }
    (cstr(&u.sysname), cstr(&u.release), cstr(&u.version))
}

fn cstr(b: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = b.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The page size.
pub fn page_size() -> u64 {
    // SAFETY: plain query.
    let r = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if r > 0 {
        r as u64
    } else {
        4096
    }
}
