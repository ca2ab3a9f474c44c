//! What the sampler reads from `/proc`: executable mappings, a thread's
//! cumulative CPU time and last CPU, names, thread groups. Parsing is
//! separate from reading so the tests can feed it text.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// One executable mapping of `/proc/<pid>/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Offset in the file.
    pub offset: u64,
    /// The device of the file, `(major, minor)` as `maps` writes it (0:0
    /// for pseudo and anonymous mappings).
    pub dev: (u32, u32),
    /// The inode of the file (0 for pseudo and anonymous mappings). With
    /// `dev`, it tells a file replaced at the same path from the one mapped.
    pub inode: u64,
    /// The file's path, a pseudo name like `[vdso]`, or empty (anonymous).
    pub path: String,
}

impl Mapping {
    /// Whether `pc` is inside.
    pub fn contains(&self, pc: u64) -> bool {
        (self.start..self.end).contains(&pc)
    }

    /// Whether this is a module worth recording: a file, or a named
    /// pseudo mapping such as `[vdso]`. Anonymous executable memory (JIT
    /// code) is not.
    pub fn is_module(&self) -> bool {
        self.path.starts_with('/') || (self.path.starts_with('[') && self.path.ends_with(']'))
    }
}

/// The executable mappings in the text of a `maps` file.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines().filter_map(parse_maps_line).collect()
}

fn parse_maps_line(line: &str) -> Option<Mapping> {
    // address perms offset dev inode path (the path may contain spaces)
    let mut it = line.splitn(6, ' ');
    let range = it.next()?;
    let perms = it.next()?;
    let offset = it.next()?;
    let dev = it.next()?;
    let inode = it.next()?;
    let path = it.next().unwrap_or("").trim_start();
    if perms.as_bytes().get(2) != Some(&b'x') {
        return None;
    }
    let (a, b) = range.split_once('-')?;
    let (major, minor) = dev.split_once(':')?;
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    Some(Mapping {
        start: u64::from_str_radix(a, 16).ok()?,
        end: u64::from_str_radix(b, 16).ok()?,
        offset: u64::from_str_radix(offset, 16).ok()?,
        dev: (u32::from_str_radix(major, 16).ok()?, u32::from_str_radix(minor, 16).ok()?),
        inode: inode.parse().ok()?,
        path: path.to_owned(),
    })
}

/// The executable mappings of process `pid`.
pub fn read_maps(pid: i32) -> io::Result<Vec<Mapping>> {
    Ok(parse_maps(&std::fs::read_to_string(format!("/proc/{pid}/maps"))?))
}

/// The executable's path (`/proc/<pid>/exe`).
pub fn exe(pid: i32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok().map(|p| {
        let s = p.to_string_lossy().into_owned();
        s.strip_suffix(" (deleted)").map(str::to_owned).unwrap_or(s)
    })
}

/// The name of a task (`comm`).
pub fn comm(pid: i32, tid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).ok().map(|s| s.trim_end().to_owned())
}

/// The thread group (process) of task `tid`.
pub fn tgid(tid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    s.lines().find_map(|l| l.strip_prefix("Tgid:")).and_then(|v| v.trim().parse().ok())
}

/// Whether task `tid` exists and has not ended (not a zombie).
pub fn task_alive(tid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{tid}/stat"))
        .ok()
        .and_then(|s| parse_stat_state(&s))
        .is_some_and(|c| c != 'Z' && c != 'X')
}

/// The first field of a `schedstat` file: nanoseconds on a CPU.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The first and third fields of a `schedstat` file: nanoseconds on a CPU,
/// and how many times the task was switched in.
pub fn parse_schedstat_runs(text: &str) -> Option<(u64, u64)> {
    let mut f = text.split_whitespace();
    let ns = f.next()?.parse().ok()?;
    Some((ns, f.nth(1)?.parse().ok()?))
}

/// Field 39 of a `stat` file: the CPU the task last ran on. Fields are
/// counted after the command name, which may contain spaces and `)`.
pub fn parse_stat_cpu(text: &str) -> Option<u32> {
    let rest = &text[text.rfind(')')? + 1..];
    // `rest` starts at field 3.
    rest.split_whitespace().nth(39 - 3)?.parse().ok()
}

/// Field 3 of a `stat` file: the state letter (`R` running or runnable,
/// `S` sleeping, `D` waiting for I/O, `T`/`t` stopped, `Z` zombie...).
pub fn parse_stat_state(text: &str) -> Option<char> {
    text[text.rfind(')')? + 1..].split_whitespace().next()?.chars().next()
}

/// The `/proc` files of one thread, kept open: re-reading an open file
/// costs one `pread` instead of open, read and close.
#[derive(Debug)]
pub struct ThreadFiles {
    schedstat: File,
    stat: File,
    buf: Vec<u8>,
}

impl ThreadFiles {
    /// Opens the files of task `tid` of process `pid`.
    pub fn open(pid: i32, tid: i32) -> io::Result<ThreadFiles> {
        Ok(ThreadFiles {
            schedstat: File::open(format!("/proc/{pid}/task/{tid}/schedstat"))?,
            stat: File::open(format!("/proc/{pid}/task/{tid}/stat"))?,
            buf: vec![0; 1024],
        })
    }

    fn read(file: &File, buf: &mut [u8]) -> Option<String> {
        let n = file.read_at(buf, 0).ok()?;
        Some(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    /// Cumulative CPU time in nanoseconds.
    pub fn cputime(&mut self) -> Option<u64> {
        Self::read(&self.schedstat, &mut self.buf).as_deref().and_then(parse_schedstat)
    }

    /// Cumulative CPU time in nanoseconds, and how many times the thread
    /// was switched in.
    pub fn cputime_runs(&mut self) -> Option<(u64, u64)> {
        Self::read(&self.schedstat, &mut self.buf).as_deref().and_then(parse_schedstat_runs)
    }

    /// The CPU the thread last ran on.
    pub fn cpu(&mut self) -> Option<u32> {
        Self::read(&self.stat, &mut self.buf).as_deref().and_then(parse_stat_cpu)
    }

    /// Whether the thread is running or waiting for a CPU (state `R`).
    pub fn runnable(&mut self) -> Option<bool> {
        Self::read(&self.stat, &mut self.buf).as_deref().and_then(parse_stat_state).map(|c| c == 'R')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_keep_executable_mappings_only() {
        let text = "\
55d0c0000000-55d0c0001000 r--p 00000000 08:01 123 /usr/bin/my prog
55d0c0001000-55d0c0002000 r-xp 00001000 08:01 123 /usr/bin/my prog
7f0000000000-7f0000010000 r-xp 00000000 00:00 0 
7fff00000000-7fff00002000 r-xp 00000000 00:00 0                          [vdso]
7f1000000000-7f1000001000 r-xp 00002000 fe:1a 9 /tmp/libx.so (deleted)
";
        let m = parse_maps(text);
        assert_eq!(m.len(), 4);
        assert_eq!(
            m[0],
            Mapping {
                start: 0x55d0c0001000,
                end: 0x55d0c0002000,
                offset: 0x1000,
                dev: (8, 1),
                inode: 123,
                path: "/usr/bin/my prog".into()
            }
        );
        assert!(m[0].is_module());
        assert_eq!(m[1].path, "");
        assert!(!m[1].is_module());
        assert_eq!(m[2].path, "[vdso]");
        assert!(m[2].is_module());
        assert_eq!((m[3].path.as_str(), m[3].dev, m[3].inode), ("/tmp/libx.so", (0xfe, 0x1a), 9));
        assert!(m[0].contains(0x55d0c0001fff) && !m[0].contains(0x55d0c0002000));
    }

    #[test]
    fn stat_cpu_counts_fields_after_the_name() {
        let mut fields: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        fields[39 - 3] = "7".into();
        let text = format!("123 (a) b (c)) {}", fields.join(" "));
        assert_eq!(parse_stat_cpu(&text), Some(7));
        assert_eq!(parse_stat_state("12 (a) b) (R) S 1 2"), Some('S'));
        assert_eq!(parse_stat_state("12 (x"), None);
        assert_eq!(parse_schedstat("242853213 319785217 73\n"), Some(242853213));
        assert_eq!(parse_schedstat(""), None);
        assert_eq!(parse_schedstat_runs("242853213 319785217 73\n"), Some((242853213, 73)));
        assert_eq!(parse_schedstat_runs("242853213 319785217"), None);
    }

    #[test]
    fn own_thread_files_read() {
        let pid = std::process::id() as i32;
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let mut f = ThreadFiles::open(pid, tid).unwrap();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(f.cputime().is_some());
        assert!(f.cpu().is_some());
        assert_eq!(f.runnable(), Some(true), "this thread, reading its own state, runs");
        assert_eq!(tgid(tid), Some(pid));
        assert!(exe(pid).is_some());
        assert!(read_maps(pid).unwrap().iter().any(|m| m.is_module()));
    }
}
