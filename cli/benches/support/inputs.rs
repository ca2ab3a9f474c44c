//! Inputs the benches write: an MTMC task log and a winIDEA export with
//! its `.BIN`, of any size, the same every time (a fixed xorshift); and
//! `perf record -g` recordings of `scripts/stacks-bench/busy.c`.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use tbrw_import::winidea::{self, BinVersion, Pos, TimelineEvent};

/// An MTMC log of `tasks` lines (64 threads, 16 cores, 8 counters at both
/// ends, no prefix).
pub fn mtmc_log(path: &Path, tasks: u64) {
    let mut out = BufWriter::new(std::fs::File::create(path).unwrap());
    let mut x = 0x1234_5678_9abc_def1u64;
    for i in 0..tasks {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let start = 1_662_113_994_732_217_088 + i * 1_000;
        let c: Vec<String> = (0..8).map(|k| (x >> k).to_string()).collect();
        let e: Vec<String> = (0..8).map(|k| ((x >> k) + 1000 + k).to_string()).collect();
        writeln!(
            out,
            "{},{},{start},{},{},{},{},{}_{}_0_{}_{}_0,8_{}_0,{},8_{}_0,{},",
            1_100_000 + i % 64,
            1_600_000_000 + i % 64,
            start + 500 + (x % 400),
            1_100_000,
            1_241_265_920,
            start - 10,
            i * 1000,
            x,
            i * 1000 + 900,
            x.rotate_left(8),
            i % 16,
            c.join("_"),
            i % 16,
            e.join("_")
        )
        .unwrap();
    }
    out.flush().unwrap();
}

/// A winIDEA Text1 export of about `n` TIMELINE events (nested calls in 4 contexts, 128 functions, data writes to 8
/// variables), `export.txt`; and the same events as a version 1.1 `.BIN`
/// beside a Text1 file without a TIMELINE, `header.txt` and `header.txt.BIN`.
pub fn winidea_inputs(dir: &Path, n: usize) {
    let mut events = Vec::with_capacity(n);
    let mut x = 0x1234_5678_9abc_def1u64;
    let mut t = 0i64;
    while events.len() + 6 <= n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let ctx = (x % 4) as u32;
        let (f, g) = ((x >> 8) as u32 % 64, 64 + (x >> 16) as u32 % 64);
        let mut ev = |handle: u32, kind: u8, value: u64, dt: i64| {
            t += dt;
            events.push(TimelineEvent { handle, kind, value, time: t, context: ctx, at: Pos::Byte(0) });
        };
        ev(f, b'E', 0, 1 + (x % 50) as i64);
        ev(f, b'S', 0, 10 + (x % 300) as i64);
        ev(g, b'E', 0, 0);
        ev(g, b'X', 0, 5 + (x % 200) as i64);
        ev(f, b'R', 0, 0);
        if x.is_multiple_of(2) {
            ev(0x2000_0000 + (x % 8) as u32, b'W', x & 0xFFFF, 1);
        }
        ev(f, b'X', 0, 3 + (x % 100) as i64);
    }
    let mut header = String::from("* HANDLE(Functions) %HANDLE%,%NAME%,%VALUE%\n");
    for f in 0..128 {
        header += &format!("{f:08X},function_{f},\n");
    }
    header += "* HANDLE(Data) %HANDLE%,%NAME%,%VALUE%\n";
    for v in 0..8 {
        header += &format!("{:08X},variable_{v},\n", 0x2000_0000 + v);
    }
    header += "* STATISTICS(Functions) %HANDLE%,%COUNT%,%T.NET%,%T.GROSS.AVG%,%T.PERIOD.MAX%\n00000000,1,1,1,1\n";
    let mut out = BufWriter::new(std::fs::File::create(dir.join("export.txt")).unwrap());
    out.write_all(header.as_bytes()).unwrap();
    writeln!(out, "* TIMELINE %HANDLE%,%EVENT%,%VALUE%,%TIME%,%CONTEXT%").unwrap();
    for e in &events {
        let value = if e.kind == b'W' { format!("{:08X}", e.value) } else { String::new() };
        writeln!(out, "{:08X},{},{value},{},{:#x}", e.handle, e.kind as char, e.time, e.context).unwrap();
    }
    out.flush().unwrap();
    std::fs::write(dir.join("header.txt"), &header).unwrap();
    std::fs::write(dir.join("events"), events.len().to_string()).unwrap();
    std::fs::write(dir.join("header.txt.BIN"), winidea::write_bin(&events, BinVersion::V1_1)).unwrap();
}

const BUSY: &str = include_str!("../../../scripts/stacks-bench/busy.c");

/// `scripts/stacks-bench/busy.c` built in `dir` (once), or why not.
pub fn busy_program(dir: &Path) -> Result<PathBuf, String> {
    let prog = dir.join("busy");
    if prog.exists() {
        return Ok(prog);
    }
    std::fs::write(dir.join("busy.c"), BUSY).unwrap();
    let cc = Command::new("cc")
        .args(["-O2", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&prog)
        .arg(dir.join("busy.c"))
        .args(["-lm", "-lpthread"])
        .status();
    if cc.is_ok_and(|s| s.success()) {
        Ok(prog)
    } else {
        Err("cc cannot build scripts/stacks-bench/busy.c".into())
    }
}

/// `perf record -F 20000 -g` of `prog` (`busy_program`) spinning for
/// `seconds` on `threads` threads, to `data`: written under another name
/// and renamed when complete, so that a recording cut short is never
/// taken for one. Or why not.
pub fn perf_record_busy(prog: &Path, seconds: f64, threads: usize, data: &Path) -> Result<(), String> {
    let part = data.with_extension("part");
    let rec = Command::new("perf")
        .args(["record", "-q", "-F", "20000", "-g", "-o"])
        .arg(&part)
        .arg("--")
        .arg(prog)
        .arg(seconds.to_string())
        .arg(threads.to_string())
        .output();
    match rec {
        Ok(o) if o.status.success() => std::fs::rename(&part, data).map_err(|e| format!("{}: {e}", data.display())),
        Ok(o) => Err(format!("perf record -g failed: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Err(format!("perf: {e}")),
    }
}
