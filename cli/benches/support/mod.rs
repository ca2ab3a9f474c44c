//! Shared by the benches: reading this process's memory figures, and a
//! child's (`timed`); the inputs they write ([`inputs`]).
#![allow(dead_code)]

pub mod inputs;
pub mod scale_inputs;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A `/proc/self/status` figure in KiB (`VmRSS:`, `VmHWM:`), 0 where there is none.
pub fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field)).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

/// What a step took: wall time, CPU time (user + system, from the
/// child's rusage: on a machine shared with other work the wall time is
/// mostly waiting, the CPU time is the figure to compare) and the peak
/// anonymous memory in KiB (`RssAnon`: the heap, not the pages of
/// mapped files).
pub struct Took {
    pub wall: Duration,
    pub cpu: Duration,
    pub anon_kib: u64,
    /// Peak resident memory (`VmHWM`): the heap and the pages of mapped
    /// files the child touched.
    pub maxrss_kib: u64,
}

/// Runs `cmd`, polling its `RssAnon` (and its `VmHWM`, the peak of its
/// resident set since it ran the command: its rusage would count the pages
/// of this process, which spawned it) every 2 ms until it ends.
// The child is reaped by `wait4`, which `Child::wait` cannot replace: it
// gives the child's rusage.
#[allow(clippy::zombie_processes)]
pub fn timed(cmd: &mut Command) -> Took {
    let err = tempfile::tempfile().expect("temp file");
    let t = Instant::now();
    let child = cmd.stdout(Stdio::null()).stderr(err.try_clone().expect("dup")).spawn().expect("runs");
    let pid = child.id() as libc::pid_t;
    let status_file = format!("/proc/{pid}/status");
    let mut peak = 0u64;
    let mut hwm = 0u64;
    let (status, usage) = loop {
        if let Ok(s) = std::fs::read_to_string(&status_file) {
            let kib = |field: &str| {
                s.lines()
                    .find_map(|l| l.strip_prefix(field))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            };
            peak = peak.max(kib("RssAnon:").unwrap_or(0));
            hwm = hwm.max(kib("VmHWM:").unwrap_or(0));
        }
        let mut status = 0;
        // SAFETY: a plain system call on our own child; rusage is written by the kernel.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, usage);
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        std::thread::sleep(Duration::from_millis(2));
    };
    let wall = t.elapsed();
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        let mut text = String::new();
        let mut e = err;
        use std::io::{Read, Seek};
        let _ = e.seek(std::io::SeekFrom::Start(0));
        let _ = e.read_to_string(&mut text);
        panic!("{cmd:?} failed: {text}");
    }
    // The last `VmHWM` read is the peak but for the command's last
    // milliseconds; its rusage's, when this process held less.
    let maxrss = if hwm > 0 { hwm } else { usage.ru_maxrss as u64 };
    Took { wall, cpu: cpu_time(&usage), anon_kib: peak, maxrss_kib: maxrss }
}

/// A child's user and system time, from its rusage.
fn cpu_time(usage: &libc::rusage) -> Duration {
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Runs `cmd` to its end (its output and messages dropped), waiting on it
/// without polling: for wall times that the polling of [`timed`] would
/// take from the child on a small machine. `anon_kib` is 0; the peak
/// resident set is the child's rusage's.
// The child is reaped by `wait4`, which `Child::wait` cannot replace: it
// gives the child's rusage.
#[allow(clippy::zombie_processes)]
pub fn waited(cmd: &mut Command) -> Took {
    let t = Instant::now();
    let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("runs");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: a plain system call on our own child; rusage is written by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = t.elapsed();
    assert!(r == pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{cmd:?} failed");
    Took { wall, cpu: cpu_time(&usage), anon_kib: 0, maxrss_kib: usage.ru_maxrss as u64 }
}
