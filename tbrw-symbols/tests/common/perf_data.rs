//! perf recordings of a program built here, read back with
//! `linux-perf-data`: the mappings and, per sample, what an importer gets
//! (user registers and the stack copy of `--call-graph dwarf`, or the
//! frame-pointer call chain of `--call-graph fp`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use linux_perf_data::{PerfFileReader, PerfFileRecord};
use linux_perf_event_reader::EventRecord;
use tbrw_symbols::unwind::{Arch, Registers};

/// A three-deep chain (`top` → `middle` → `leaf`) below `main`, `leaf`
/// calling libm's `sin` and libc's `memcpy` in a loop. Built with
/// `-fomit-frame-pointer`: only CFI unwinds it.
pub const CHAIN: &str = "#include <math.h>
#include <string.h>
volatile double sink;
static char src[8192], dst[8192];
__attribute__((noinline)) double leaf(int n, double x) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        s += sin(x + i);
        memcpy(dst + (i & 1023), src + ((i * 7) & 1023), 1024 + (i & 2047));
        s += dst[i & 4095];
    }
    return s;
}
__attribute__((noinline)) double middle(int n, double x) { double r = leaf(n, x); sink = r; return r * 2; }
__attribute__((noinline)) double top(int n, double x) { double r = middle(n, x) + 1; sink = r; return r; }
int main(void) {
    double t = 0;
    for (int r = 0; r < 250; r++) t += top(40000, r);
    return (int)t & 1;
}
";

/// An executable mapping (`PERF_RECORD_MMAP2` with `PROT_EXEC`).
#[derive(Clone, Debug)]
pub struct Mmap {
    pub pid: u32,
    pub start: u64,
    pub len: u64,
    pub pgoff: u64,
    pub path: String,
}

/// A sample: its thread, time, and user registers and stack (the
/// `dyn_size` bytes perf copied), or its call chain.
#[derive(Clone, Debug)]
pub struct Sample {
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub regs: Option<Registers>,
    pub stack: Vec<u8>,
    pub callchain: Vec<u64>,
}

/// The records an importer acts on, in perf.data's (time) order.
#[derive(Clone, Debug)]
pub enum Event {
    Mmap(Mmap),
    Sample(Sample),
}

/// The program built and recorded here.
pub struct Recording {
    pub dir: tempfile::TempDir,
    pub program: PathBuf,
    pub data: PathBuf,
}

/// Builds `source` with `flags` and records it with `perf record -e
/// cpu-clock` plus `record_args`; `None` (after a note) when cc or perf is
/// missing or `perf record` fails.
pub fn record(source: &str, flags: &[&str], record_args: &[&str]) -> Option<Recording> {
    if !super::have("perf") {
        eprintln!("note: no perf on this machine, skipping");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = super::compile(dir.path(), "chain", source, flags)?;
    let data = dir.path().join("perf.data");
    let mut args = vec!["record", "-N", "-e", "cpu-clock", "-o", data.to_str().unwrap()];
    args.extend_from_slice(record_args);
    args.push(program.to_str().unwrap());
    let out = Command::new("perf").args(&args).stdout(Stdio::null()).stderr(Stdio::piped()).output().ok()?;
    if !out.status.success() || !data.exists() {
        eprintln!("note: perf {args:?} failed, skipping: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    Some(Recording { dir, program, data })
}

/// The mappings and samples of `path` (x86-64 or aarch64 registers as
/// `arch`).
pub fn read(path: &Path, arch: Arch) -> Vec<Event> {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let PerfFileReader { mut perf_file, mut record_iter } = PerfFileReader::parse_file(file).unwrap();
    let mut events = Vec::new();
    while let Some(record) = record_iter.next_record(&mut perf_file).unwrap() {
        let PerfFileRecord::EventRecord { record, .. } = record else { continue };
        match record.parse().unwrap() {
            EventRecord::Mmap2(m) if m.protection & 4 != 0 => events.push(Event::Mmap(Mmap {
                pid: m.pid as u32,
                start: m.address,
                len: m.length,
                pgoff: m.page_offset,
                path: String::from_utf8_lossy(&m.path.as_slice()).into_owned(),
            })),
            EventRecord::Sample(s) => {
                let regs = s.user_regs.as_ref().and_then(|r| Registers::from_perf(arch, |n| r.get(u64::from(n))));
                let stack = match &s.user_stack {
                    Some((data, dyn_size)) => {
                        let bytes = data.as_slice();
                        bytes[..(*dyn_size as usize).min(bytes.len())].to_vec()
                    }
                    None => Vec::new(),
                };
                let callchain = match &s.callchain {
                    Some(c) => (0..c.len()).filter_map(|i| c.get(i)).collect(),
                    None => Vec::new(),
                };
                events.push(Event::Sample(Sample {
                    pid: s.pid.unwrap_or(0) as u32,
                    tid: s.tid.unwrap_or(0) as u32,
                    time: s.timestamp.unwrap_or(0),
                    regs,
                    stack,
                    callchain,
                }));
            }
            _ => {}
        }
    }
    events
}
