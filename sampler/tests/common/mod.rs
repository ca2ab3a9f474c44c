//! Helpers of the tests that check recordings the way a user reads them:
//! building the C programs, running the sampler, reports by function
//! through `tbrw-query` (what `tbrw report` runs), the `tbrw` binary where
//! it is built, and perf's `cpu-clock` profile where perf works.

#![allow(dead_code)] // each test file uses its part

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tbrw::Tb5File;
use tbrw_query::By;

pub const SAMPLER: &str = env!("CARGO_BIN_EXE_sampler");

/// The source of test program `name`.
pub fn c_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(format!("{name}.c"))
}

/// Compiles C source `src` to `out` with `cc -O1 -g` and `extra`.
pub fn cc(src: &Path, out: &Path, extra: &[&str]) {
    let st = Command::new("cc").args(["-O1", "-g"]).arg(src).arg("-o").arg(out).args(extra).status().expect("cc runs");
    assert!(st.success(), "cc {}", src.display());
}

/// Test program `name` built in `dir`.
pub fn build(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(name);
    cc(&c_source(name), &out, extra);
    out
}

/// Runs the sampler with `args` (the command among them) in `cwd`; `None`
/// (after saying why) where ptrace is refused.
pub fn sampler_in(cwd: &Path, args: &[&std::ffi::OsStr]) -> Option<Output> {
    let out = Command::new(SAMPLER).current_dir(cwd).args(args).output().expect("sampler runs");
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("ptrace is refused") {
        eprintln!("SKIPPED: {}", err.trim());
        return None;
    }
    Some(out)
}

/// The `tbrw` binary of this build (`cargo build -p tbrw-cli`), if built:
/// it is in the same target folder as this test (`target/debug/deps/..`).
pub fn tbrw_bin() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("tbrw");
    bin.is_file().then_some(bin)
}

/// A report by function as `tbrw report --by function` makes it: (label,
/// percent, function named) per row, and the warnings it printed.
pub fn function_report(path: &Path) -> (Vec<(String, f64, bool)>, String) {
    let file = Tb5File::open(path).unwrap();
    let mut warn = Vec::new();
    let opts = tbrw_query::report::ReportOptions::new(Default::default(), &[By::Function]);
    let r = tbrw_query::report::run(&file, &opts, &mut warn, &mut |_| {}).unwrap();
    let rows = r
        .rows
        .iter()
        .map(|row| {
            let named = matches!(&row.key, tbrw_query::report::Key::Function { name: Some(_), .. });
            (row.key.printed_str().unwrap_or("?").to_owned(), row.percent, named)
        })
        .collect();
    (rows, warn.iter().map(|w| format!("{w}\n")).collect())
}

/// A report of the recording at `path` grouped `by` and weighed by
/// `weight`, as `tbrw report` makes it.
pub fn report(path: &Path, by: By, weight: tbrw_query::Weight) -> Vec<tbrw_query::report::Row> {
    let file = Tb5File::open(path).unwrap();
    let query = tbrw_query::Query { weight, ..Default::default() };
    let mut warn = Vec::new();
    let opts = tbrw_query::report::ReportOptions::new(query, &[by]);
    tbrw_query::report::run(&file, &opts, &mut warn, &mut |_| {}).unwrap().rows
}

/// perf's `cpu-clock` profile of `cmd`: percent per symbol. `Err` says why
/// perf could not give one here (not installed, not allowed).
pub fn perf_shares(dir: &Path, cmd: &[&Path]) -> Result<HashMap<String, f64>, String> {
    perf_shares_by(dir, cmd, "sym").map(|(shares, _)| shares)
}

/// perf's `cpu-clock` profile of `cmd`, percent per `perf report --sort`
/// key (`sym`; `pid`, whose keys are `TID:comm`; `comm`...), and what the command wrote
/// on its standard output in that run.
pub fn perf_shares_by(dir: &Path, cmd: &[&Path], sort: &str) -> Result<(HashMap<String, f64>, String), String> {
    let data = dir.join("perf.data");
    let rec = Command::new("perf")
        .args(["record", "-N", "-q", "-e", "cpu-clock", "-F", "1000", "-o"])
        .arg(&data)
        .arg("--")
        .args(cmd)
        .output()
        .map_err(|e| format!("perf: {e}"))?;
    if !rec.status.success() {
        return Err(format!("perf record failed: {}", String::from_utf8_lossy(&rec.stderr).trim()));
    }
    let rep = Command::new("perf")
        .args(["report", "--stdio", "-q", "--sort", sort, "-i"])
        .arg(&data)
        .output()
        .map_err(|e| format!("perf report: {e}"))?;
    if !rep.status.success() {
        return Err(format!("perf report failed: {}", String::from_utf8_lossy(&rep.stderr).trim()));
    }
    // "    51.66%  [.] leaf_deep" (`sym`), "    60.12%    12423:work-0" (`pid`)
    let mut shares = HashMap::new();
    for line in String::from_utf8_lossy(&rep.stdout).lines() {
        let mut words = line.split_whitespace();
        let Some(pct) = words.next() else { continue };
        if sort == "sym" && words.next().is_none() {
            continue; // the `[.]` mode
        }
        let Some(Ok(pct)) = pct.strip_suffix('%').map(str::parse::<f64>) else { continue };
        *shares.entry(words.collect::<Vec<_>>().join(" ")).or_insert(0.0) += pct;
    }
    if shares.is_empty() {
        return Err("perf report gave no samples".into());
    }
    Ok((shares, String::from_utf8_lossy(&rec.stdout).into_owned()))
}

/// One record of a recording's stream 0.
#[derive(Clone, Copy, Debug)]
pub struct Rec {
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub cputime: u64,
    pub cputime_delta: u64,
}

/// The records of a recording, read through its data descriptor.
pub fn records(file: &Tb5File) -> Vec<Rec> {
    let s = file.stream(0).unwrap();
    let layout = s.layout().unwrap().unwrap();
    let at = |t: u16| {
        let f = layout.find(t, None).unwrap();
        (f.offset as usize, f.size as usize)
    };
    let (pid, tid, ts) = (at(tbrw::desc_type::PID), at(tbrw::desc_type::TID), at(tbrw::desc_type::TIME_STAMP));
    let (ct, cd) = (at(tbrw_schema::fields::CPUTIME), at(tbrw_schema::fields::CPUTIME_DELTA));
    let rd = |r: &[u8], (o, n): (usize, usize)| tbrw_schema::fields::read_le(r, o, n);
    match s.data().unwrap() {
        Some(d) => d
            .records()
            .map(|r| Rec {
                pid: rd(r, pid) as u32,
                tid: rd(r, tid) as u32,
                time: rd(r, ts),
                cputime: rd(r, ct),
                cputime_delta: rd(r, cd),
            })
            .collect(),
        None => Vec::new(),
    }
}
