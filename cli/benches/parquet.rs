//! `tbrw export parquet` at scale: `cargo bench -p tbrw-cli --bench parquet`
//! writes a TB5 file of 10 million samples (ip, pid, tid, a nanosecond
//! clock; 40 modules in 4 processes), exports it without a stored bind (the
//! bind is made in memory, as `tbrw report` does) and again after `tbrw
//! bind`, and prints MB/s of TB5 read, the dataset's size against the TB5
//! file's, and the export's peak resident memory: all of it (VmHWM, which
//! counts the pages of the mapped TB5 file read so far) and the anonymous
//! part (RssAnon, polled), the memory the export itself holds. Then the same
//! samples out of time order (each time up to 1000 s early), bound, go
//! through the external sort. Then DuckDB's top-modules query over the
//! dataset (cli/tests/parquet_queries.py, when python3 can import duckdb)
//! is timed against `tbrw report --by module` on the TB5 file. Pass a
//! sample count to choose (`-- 2000000`); TBRW_BENCH_DIR names the scratch
//! folder (default: the current one); `--keep` leaves the TB5 files and
//! datasets there (`fleet.tb5`, `fleet-unsorted.tb5`, `ds`, `ds-unsorted`)
//! to measure the command line on.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tbrw::*;
use tbrw_export::parquet::{export_run, RunSource};
use tbrw_import::globals::write_globals;
use tbrw_schema::descriptor::field;

mod support;
use support::status_kib;

const PROCESSES: u32 = 4;
const MODULES_PER_PROCESS: u64 = 10;
const MODULE_LEN: u64 = 0x10_0000;

/// `n` samples; `unsorted`: each stored time up to 1000 s (a million
/// samples) before its place, so every sort chunk overlaps many others.
fn write_tb5(path: &Path, n: u64, unsorted: bool) {
    let mut w = Tb5Writer::create(path).unwrap();
    let os = Os { platform: os_family::LINUX64, name: Some("Linux".into()), ..Default::default() };
    write_globals(&mut w, &Software { host: None, os: Some(os), application: None }).unwrap();
    let mut modules = Vec::new();
    for p in 0..PROCESSES {
        for m in 0..MODULES_PER_PROCESS {
            let mut flags = ModuleFlags::LOADED;
            if m == 0 {
                flags |= ModuleFlags::FIRST_MODULE_REC_IN_PROCESS;
            }
            modules.push(Module {
                associated_pid: 100 + p,
                flags,
                segment_type: processor_mode::BIT64,
                load_address: 0x7f00_0000_0000 + m * MODULE_LEN,
                length: MODULE_LEN,
                unload_tsc: NEVER_UNLOADED,
                name: Some(format!("lib{m}.so")),
                path: Some(format!("/usr/lib/lib{m}.so")),
                ..Default::default()
            });
        }
    }
    w.write_modules(&modules).unwrap();
    let mut st = w
        .stream(0)
        .unwrap()
        .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })
        .unwrap()
        .data_descriptor(&[
            field(desc_type::IP, desc_subtype::NONE, 8, "ip"),
            field(desc_type::PID, desc_subtype::NONE, 4, "pid"),
            field(desc_type::TID, desc_subtype::NONE, 4, "tid"),
            field(desc_type::TIME_STAMP, desc_subtype::TS_NANOSECONDS, 8, "time_realtime_ns"),
        ])
        .unwrap();
    st.events(&[Event { id: 0, flags: EventFlags::TBS, name: Some("cpu-clock".into()), ..Default::default() }])
        .unwrap();
    let mut data = st.data().unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = Vec::with_capacity(24 << 16);
    let mut t = 1_700_000_000_000_000_000u64;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Skewed towards the first modules, like a real profile.
        let m = (x % 1024).leading_zeros().saturating_sub(54).min(MODULES_PER_PROCESS as u32 - 1) as u64;
        let ip = 0x7f00_0000_0000 + m * MODULE_LEN + (x >> 20) % MODULE_LEN;
        let pid = 100 + (x >> 40) as u32 % PROCESSES;
        t += 1_000_000 + (x >> 50) % 1000;
        buf.extend_from_slice(&ip.to_le_bytes());
        buf.extend_from_slice(&pid.to_le_bytes());
        buf.extend_from_slice(&(pid * 10 + (x >> 44) as u32 % 8).to_le_bytes());
        let stamp = if unsorted { t - (x >> 8) % 1_000_000_000_000 } else { t };
        buf.extend_from_slice(&stamp.to_le_bytes());
        if buf.len() >= 24 << 16 || i + 1 == n {
            data.add(&buf).unwrap();
            buf.clear();
        }
    }
    data.done().unwrap();
    st.finish().unwrap();
    w.close().unwrap();
}

fn folder_bytes(p: &Path) -> u64 {
    std::fs::read_dir(p).map_or(0, |rd| {
        rd.flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => folder_bytes(&e.path()),
                _ => e.metadata().map_or(0, |m| m.len()),
            })
            .sum()
    })
}

fn timed(c: &mut Command) -> Option<(Duration, String)> {
    let t = Instant::now();
    let o = c.output().ok()?;
    let d = t.elapsed();
    if !o.status.success() {
        eprintln!("note: {c:?} failed: {}", String::from_utf8_lossy(&o.stderr));
        return None;
    }
    Some((d, String::from_utf8_lossy(&o.stdout).into_owned()))
}

/// Runs `f` and gives its result with the peak of this process's anonymous
/// resident memory in KiB while it ran (RssAnon, polled every 5 ms).
fn peak_anon<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let done = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let poll = sc.spawn(|| {
            let mut peak = 0;
            while !done.load(Ordering::Relaxed) {
                peak = peak.max(status_kib("RssAnon:"));
                std::thread::sleep(Duration::from_millis(5));
            }
            peak.max(status_kib("RssAnon:"))
        });
        let r = f();
        done.store(true, Ordering::Relaxed);
        (r, poll.join().unwrap_or(0))
    })
}

/// The dataset's files, on disk.
struct DiskFolder(std::path::PathBuf);

impl tbrw_export::Folder for DiskFolder {
    fn create(&mut self, name: &str) -> std::io::Result<Box<dyn std::io::Write + Send>> {
        let p = self.0.join(name);
        std::fs::create_dir_all(p.parent().unwrap_or(&self.0))?;
        Ok(Box::new(std::io::BufWriter::new(std::fs::File::create(p)?)))
    }
}

/// Exports `tb5` to `ds` (replacing it) and prints the figures.
fn export(tb5: &Path, ds: &Path, what: &str) {
    let tb5_bytes = std::fs::metadata(tb5).unwrap().len();
    // Resets the peak-RSS mark (Linux), so the figure is the export's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let base = status_kib("VmRSS:");
    let _ = std::fs::remove_dir_all(ds);
    let t = Instant::now();
    let (rows, anon) = peak_anon(|| {
        let file = Tb5File::open(tb5).unwrap();
        let name = tb5.display().to_string();
        let source =
            RunSource { source_file: &name, source_bytes: tb5_bytes, host_name: None, host: "bench", run: "r" };
        export_run(&file, &source, &mut DiskFolder(ds.to_path_buf()), None, &mut |_| {}, &mut Vec::new()).unwrap()
    });
    let s = t.elapsed().as_secs_f64();
    let peak = status_kib("VmHWM:");
    let out = folder_bytes(ds);
    println!(
        "export ({what}): {} samples in {s:.2} s = {:.0} MB/s of TB5, {:.2} M samples/s; dataset {:.1} MB = {:.1} % of the TB5 file; peak RSS {} MiB (before {} MiB), peak anonymous {} MiB",
        rows.samples,
        tb5_bytes as f64 / 1e6 / s,
        rows.samples as f64 / 1e6 / s,
        out as f64 / 1e6,
        out as f64 * 100.0 / tb5_bytes as f64,
        peak / 1024,
        base / 1024,
        anon / 1024,
    );
}

fn bind(tb5: &Path) {
    let mut w = Tb5Writer::append(tb5).unwrap();
    w.dobind(0).unwrap();
    w.close().unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u64 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(10_000_000);
    let keep = args.iter().any(|a| a == "--keep");
    let scratch = std::env::var_os("TBRW_BENCH_DIR").unwrap_or_else(|| ".".into());
    let tmp = tempfile::tempdir_in(&scratch).unwrap();
    let dir = if keep { Path::new(&scratch) } else { tmp.path() };
    let tb5 = dir.join("fleet.tb5");
    let t = Instant::now();
    write_tb5(&tb5, n, false);
    let tb5_bytes = std::fs::metadata(&tb5).unwrap().len();
    println!("{n} samples: TB5 file {:.1} MB written in {:.1} s", tb5_bytes as f64 / 1e6, t.elapsed().as_secs_f64());
    let ds = dir.join("ds");
    export(&tb5, &ds, "bind made in memory");
    bind(&tb5);
    export(&tb5, &ds, "stored bind (after tbrw bind)");
    let unsorted = dir.join("fleet-unsorted.tb5");
    write_tb5(&unsorted, n, true);
    bind(&unsorted);
    export(&unsorted, &dir.join("ds-unsorted"), "out of time order, stored bind: external sort");

    let tbrw = env!("CARGO_BIN_EXE_tbrw");
    let report = timed(Command::new(tbrw).arg("report").arg(&tb5).args(["--by", "module"]));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parquet_queries.py");
    let query = timed(Command::new("python3").arg(&script).arg(&ds).arg("top_modules"));
    let startup = timed(Command::new("python3").args(["-c", "import duckdb; duckdb.connect().execute('select 1')"]));
    match (report, query, startup) {
        (Some((r, _)), Some((q, answer)), Some((st, _))) => {
            println!(
                "top modules: tbrw report --by module (stored bind) {:.2} s; DuckDB query over the dataset {:.2} s (of which {:.2} s python3 + duckdb start-up); {} rows",
                r.as_secs_f64(),
                q.as_secs_f64(),
                st.as_secs_f64(),
                answer.matches("], [").count() + 1
            );
        }
        (Some((r, _)), _, _) => println!(
            "top modules: tbrw report --by module {:.2} s; DuckDB not run (python3 cannot import duckdb)",
            r.as_secs_f64()
        ),
        _ => eprintln!("note: tbrw report failed"),
    }
}
