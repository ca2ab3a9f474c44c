//! The viewer exports opened by the programs their users open them with,
//! and what those programs show compared with `tbrw report --json`:
//!
//! - pprof profiles in `go tool pprof` (Debian's `golang-go`): `-top`
//!   (flat and cumulative per function), `-tags` (pid, tid, thread, cpu),
//!   `-raw` (sample types, period), `-lines` and `-list` (source lines);
//! - Firefox profiles in the Firefox Profiler's own loading code, through
//!   its command line (`profiler-cli` of npm's `@firefox-devtools/profiler-cli`):
//!   threads, their CPU time, functions' self and total samples per thread,
//!   whether it went looking for symbols on the network;
//! - the SVGs (timeline, flame graph) in headless Chromium: where every
//!   text is drawn.
//!
//! Each test skips with a note where its reader is not installed; `.ci/run`
//! installs all three. The recordings: the shipped sample, the matrix's
//! `perf record -g` import and collector recording, and a program built
//! here with `cc -g` whose samples are placed at known addresses (a
//! sampler profile with CPU times), so that source lines are known.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod program;

use program::{build_prog, elf_symbol, exec_vaddr};
use serde_json::Value;
use tbrw_elf_profile::{write_header, write_sample, Header, Magic, Sample, ThreadSample, VmMap};
use tbrw_import::elf_profile::{import_profile, ImportOptions};
use tbrw_query::stacks::ViewOptions;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn sample() -> PathBuf {
    root().join("examples/data/sample.tb5")
}

fn perf() -> PathBuf {
    root().join("cli/tests/data/matrix/perf.tb5")
}

fn collector() -> PathBuf {
    root().join("cli/tests/data/matrix/collector.tb5")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn tbrw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> Vec<u8> {
    let o = tbrw(args);
    assert!(o.status.success(), "tbrw {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
    o.stdout
}

fn report(file: &Path, by: &str, extra: &[&str]) -> Value {
    let mut args = vec!["report", s(file), "--by", by, "--json"];
    args.extend_from_slice(extra);
    serde_json::from_slice(&ok(&args)).unwrap()
}

fn rows(v: &Value) -> &Vec<Value> {
    v["rows"].as_array().unwrap()
}

/// The report's samples per function name (unknown functions by their
/// one spelling, `[libfoo.so]`); functions of the same name in several
/// modules added up, as pprof shows them.
fn report_functions(file: &Path, extra: &[&str]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for r in rows(&report(file, "function", extra)) {
        let k = &r["key"];
        let name = k["name"].as_str().or(k["unknown"].as_str()).unwrap().to_owned();
        *m.entry(name).or_default() += r["samples"].as_u64().unwrap();
    }
    m
}

/// Per thread (tid): samples and name.
fn report_threads(file: &Path, extra: &[&str]) -> BTreeMap<u64, (u64, Option<String>)> {
    rows(&report(file, "thread", extra))
        .iter()
        .map(|r| {
            let k = &r["key"];
            (k["tid"].as_u64().unwrap(), (r["samples"].as_u64().unwrap(), k["name"].as_str().map(str::to_owned)))
        })
        .collect()
}

/// Per tid: the thread's CPU time in ns (`--weight cputime`).
fn report_cputime(file: &Path) -> BTreeMap<u64, f64> {
    rows(&report(file, "thread", &["--weight", "cputime"]))
        .iter()
        .map(|r| (r["key"]["tid"].as_u64().unwrap(), r["weight"].as_f64().unwrap()))
        .collect()
}

/// Per (tid, function name), the samples whose stack holds the function
/// (each sample once): the cumulative counts a call tree shows, from
/// tbrw's one sample walk with the exports' names.
fn cumulative(file: &Path, extra: &ViewOptions) -> BTreeMap<(u32, String), u64> {
    use tbrw_query::names;
    use tbrw_query::stacks::{walk, Names, Resolution, StackTree};
    let f = tbrw::Tb5File::open(file).unwrap();
    let modules = tbrw_query::stream::modules(&f).unwrap();
    let mut fnames = Names::new(&f, &modules, Some(&extra.symbols)).unwrap();
    let mut cum: BTreeMap<(u32, String), u64> = BTreeMap::new();
    let mut tree = StackTree::new();
    walk(&f, extra, "a test", &mut tree, &mut Resolution::addresses(), &mut |_| {}, &mut |smp| {
        let mut seen = BTreeSet::new();
        for fr in smp.frames() {
            let module = fr.module.and_then(|m| modules.get(m as usize)).map(names::module_label);
            let name =
                fnames.function(fr).map_or_else(|| names::unknown_function(module.as_deref()), |n| n.to_string());
            seen.insert(name);
        }
        for n in seen {
            *cum.entry((smp.tid, n)).or_default() += 1;
        }
        Ok(())
    })
    .unwrap();
    cum
}

/// [`cumulative`] of all threads.
fn cumulative_all(file: &Path) -> BTreeMap<String, u64> {
    let mut all = BTreeMap::new();
    for ((_, name), n) in cumulative(file, &ViewOptions::default()) {
        *all.entry(name).or_default() += n;
    }
    all
}

// ---------------------------------------------------------------------
// A program built here, sampled at known addresses.

/// `hot_main` calls `hot_leaf` (lines 3-8) and spins itself (lines 9-15).
const SOURCE: &str = "volatile double sink;
#define N 1
__attribute__((noinline)) void hot_leaf(long n) {
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)(i ^ (i >> 3));
    sink = s;
}
__attribute__((noinline)) void hot_main(long n) {
    double s = 0;
    hot_leaf(n);
    for (long i = 0; i < n; i++)
        s += (double)(i * 7 + (i >> 5));
    sink = s;
}
int main(void) {
    for (int r = 0; r < 40; r++) hot_main(3000000);
    return 0;
}
";

/// `dir/prog` built with `cc -g -O1` from `dir/main.c`; `None` without cc.
fn build(dir: &Path) -> Option<PathBuf> {
    build_prog(dir, "main.c", SOURCE, &["-g", "-O1", "-Wl,--build-id"])
}

/// The program's samples as a sampler import (two threads, CPU times
/// growing 1 ms a sample on thread 7, 0.5 ms on thread 8): 600 over
/// `hot_leaf`, 400 over `hot_main`, spread over their addresses.
fn program_tb5(dir: &Path, prog: &Path) -> PathBuf {
    let map_start = 0x5555_5555_5000u64;
    let exec = exec_vaddr(prog);
    let (leaf, leaf_size) = elf_symbol(prog, "hot_leaf");
    let (main, main_size) = elf_symbol(prog, "hot_main");
    let vaddrs: Vec<u64> =
        (0..600u64).map(|i| leaf + i % leaf_size).chain((0..400u64).map(|i| main + i % main_size)).collect();
    let mut profile = Vec::new();
    let header = Header {
        magic: Magic::Custom,
        wall_time: 1,
        cpu_time: 1,
        samples: vaddrs.len() as u64,
        maps: vec![VmMap { address: map_start, size: 0x1000, label: "prog".into() }],
    };
    write_header(&mut profile, &header).unwrap();
    let mut cpu = [0u64; 2];
    for (i, v) in vaddrs.iter().enumerate() {
        let t = i % 2;
        cpu[t] += if t == 0 { 1_000_000 } else { 500_000 };
        let ts = ThreadSample { tid: 7 + t as u32, pc: map_start + v - exec, cputime: cpu[t] };
        write_sample(&mut profile, &Sample { value: 0.0, threads: vec![ts] }).unwrap();
    }
    let pf = dir.join("prog.profile");
    std::fs::write(&pf, &profile).unwrap();
    let tb5 = dir.join("prog.tb5");
    let mut w = tbrw::Tb5Writer::create(&tb5).unwrap();
    let input = std::fs::File::open(&pf).unwrap();
    import_profile(input, &pf.display().to_string(), &mut w, &ImportOptions::default(), &Default::default(), ())
        .unwrap();
    w.close().unwrap();
    tb5
}

// ---------------------------------------------------------------------
// go tool pprof

fn have_go() -> bool {
    let there = Command::new("go").arg("version").output().is_ok_and(|o| o.status.success());
    if !there {
        eprintln!("note: skipped: go is not installed (Debian: apt-get install golang-go; .ci/run does)");
    }
    there
}

/// `go tool pprof ARGS PROFILE`'s standard output.
fn go_pprof(args: &[&str], profile: &Path) -> String {
    let o = Command::new("go").args(["tool", "pprof"]).args(args).arg(profile).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "go tool pprof {args:?}: {err}");
    // What pprof says when it would name frames itself: it must not need to.
    assert!(!err.contains("symbolization"), "go tool pprof {args:?} tried to symbolize: {err}");
    String::from_utf8(o.stdout).unwrap()
}

/// The text after the first `n` whitespace-separated words of `line`.
fn after_words(line: &str, n: usize) -> &str {
    let mut rest = line.trim_start();
    for _ in 0..n {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        rest = rest[end..].trim_start();
    }
    rest
}

/// A `-top` report: per row name, (flat, cum) as pprof prints them
/// (counts with `-sample_index=samples`), and the header lines above the table.
fn top_rows(text: &str) -> (BTreeMap<String, (u64, u64)>, Vec<String>) {
    let mut header = Vec::new();
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in text.lines() {
        if !in_table {
            if line.trim_start().starts_with("flat  flat%") {
                in_table = true;
            } else {
                header.push(line.to_owned());
            }
            continue;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        let n = |s: &str| s.parse::<u64>().unwrap_or_else(|_| panic!("{s:?} in {line:?}"));
        let name = after_words(line, 5).to_owned();
        let old = rows.insert(name.clone(), (n(w[0]), n(w[3])));
        assert!(old.is_none(), "{name} twice in -top");
    }
    (rows, header)
}

/// A `-tags` report: per key, its total and per value the samples.
fn tags(text: &str) -> BTreeMap<String, (f64, BTreeMap<String, f64>)> {
    let mut out: BTreeMap<String, (f64, BTreeMap<String, f64>)> = BTreeMap::new();
    let mut key = None;
    for line in text.lines() {
        if let Some((k, total)) = line.trim().split_once(": Total ") {
            key = Some(k.to_owned());
            out.insert(k.to_owned(), (total.parse().unwrap(), BTreeMap::new()));
        } else if let (Some(k), Some((n, value))) = (&key, line.trim().split_once(" (")) {
            let value = value.split_once("): ").unwrap().1;
            out.get_mut(k).unwrap().1.insert(value.to_owned(), n.parse().unwrap());
        }
    }
    out
}

fn pprof_export(file: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec!["export", "pprof", s(file), "-o", s(out), "-f"];
    args.extend_from_slice(extra);
    ok(&args);
}

/// What `go tool pprof` shows of FILE's profile against the report:
/// every function's flat (and, with call chains, cumulative) samples, the
/// threads' and processes' samples and names, every sample under a cpu
/// label where the records have one, the header's program.
fn pprof_against_report(dir: &Path, file: &Path, extra: &[&str], program: &str, cpus: bool) {
    let out = dir.join(format!("{}.pb.gz", file.file_stem().unwrap().to_string_lossy()));
    // Without inline frames: a location's one line is its symbol's
    // function, what the report counts (perf_inline.rs checks pprof's
    // inline lines with `go tool pprof -traces`).
    pprof_export(file, &out, &[extra, &["--no-inline"]].concat());
    let what = file.display();
    let top =
        go_pprof(&["-top", "-sample_index=samples", "-nodecount=1000000", "-nodefraction=0", "-edgefraction=0"], &out);
    let (rows, header) = top_rows(&top);
    // pprof names the profile after its first mapping's file name.
    assert!(header.iter().any(|l| l == &format!("File: {program}")), "{what}: the program first: {header:?}");
    let total: u64 = report_threads(file, extra).values().map(|(n, _)| n).sum();
    assert!(header.iter().any(|l| l.ends_with(&format!(" of {total} total"))), "{what}: {header:?}");
    let flat: BTreeMap<String, u64> = rows.iter().filter(|(_, v)| v.0 > 0).map(|(k, v)| (k.clone(), v.0)).collect();
    let want = report_functions(file, extra);
    assert_eq!(flat, want, "{what}: go tool pprof -top's flat samples per function, and the report's");
    if extra.is_empty() {
        let cum: BTreeMap<String, u64> = rows.iter().map(|(k, v)| (k.clone(), v.1)).collect();
        assert_eq!(cum, cumulative_all(file), "{what}: cumulative samples per function");
    }
    assert!(!rows.keys().any(|k| k.is_empty() || k.starts_with("0x")), "{what}: a frame without a name: {rows:?}");

    let t = tags(&go_pprof(&["-tags", "-sample_index=samples"], &out));
    let threads = report_threads(file, extra);
    let per_tid: BTreeMap<u64, u64> = t["tid"].1.iter().map(|(k, v)| (k.parse().unwrap(), *v as u64)).collect();
    let want: BTreeMap<u64, u64> = threads.iter().map(|(k, v)| (*k, v.0)).collect();
    assert_eq!(per_tid, want, "{what}: -tags tid, and the report by thread");
    for (tid, (n, name)) in &threads {
        if let Some(name) = name {
            let got = t.get("thread").and_then(|(_, m)| m.get(name)).copied().unwrap_or(0.0) as u64;
            assert!(got >= *n, "{what}: thread {tid} named {name}: {got} samples under -tags thread");
        }
    }
    let processes: BTreeMap<u64, u64> = rows_by(&report(file, "process", extra), "pid");
    let per_pid: BTreeMap<u64, u64> = t["pid"].1.iter().map(|(k, v)| (k.parse().unwrap(), *v as u64)).collect();
    assert_eq!(per_pid, processes, "{what}: -tags pid, and the report by process");
    if cpus {
        // Every sample has its cpu, cpu 0 too.
        assert_eq!(t["cpu"].0 as u64, total, "{what}: -tags cpu: {:?}", t["cpu"]);
    }
}

fn rows_by(v: &Value, key: &str) -> BTreeMap<u64, u64> {
    rows(v).iter().map(|r| (r["key"][key].as_u64().unwrap(), r["samples"].as_u64().unwrap())).collect()
}

#[test]
fn go_pprof_shows_the_reports_functions_threads_and_labels() {
    if !have_go() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    pprof_against_report(dir.path(), &sample(), &[], "app", true);
    pprof_against_report(dir.path(), &perf(), &[], "named", true);
    let tid = ["--tid", "2744"];
    pprof_against_report(dir.path(), &perf(), &tid, "named", true);
    pprof_against_report(dir.path(), &collector(), &[], "named", true);

    // perf's cpu-clock: its periods are CPU time in ns, and so is the period.
    let out = dir.path().join("perf.pb.gz");
    pprof_export(&perf(), &out, &[]);
    let raw = go_pprof(&["-raw"], &out);
    assert!(raw.contains("\nPeriodType: cpu nanoseconds\n"), "{raw}");
    // 999 Hz: 1,001,001 ns a sample.
    assert!(raw.contains("\nPeriod: 1001001\n"), "{raw}");
    assert!(raw.contains("\nsamples/count cpu/nanoseconds[dflt]\n"), "{raw}");
    let top = go_pprof(&["-top"], &out);
    assert!(top.contains("Type: cpu\n"), "{top}");
    // 987 samples of 1.001 ms.
    assert!(top.contains("Total samples = 987.99ms"), "{top}");
}

#[test]
fn go_pprof_lists_the_lines_the_report_knows() {
    if !have_go() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build(dir.path()) else { return };
    let tb5 = program_tb5(dir.path(), &prog);
    let search = ["--search-path", s(dir.path())];
    pprof_against_report(dir.path(), &tb5, &search, "prog", false);
    let out = dir.path().join("prog.pb.gz");

    // The report by line: per (function, line), samples.
    let mut want: BTreeMap<(String, u64), u64> = BTreeMap::new();
    for r in rows(&report(&tb5, "line", &search)) {
        let k = &r["key"];
        assert!(k["file"].as_str().unwrap().ends_with("main.c"), "{k}");
        let key = (k["function"].as_str().unwrap().to_owned(), k["line"].as_u64().unwrap());
        *want.entry(key).or_default() += r["samples"].as_u64().unwrap();
    }
    assert!(want.len() > 4, "{want:?}");
    // -lines: one row per source line, `function file:line`.
    let (rows, _) = top_rows(&go_pprof(
        &["-lines", "-top", "-sample_index=samples", "-nodecount=1000000", "-nodefraction=0"],
        &out,
    ));
    let mut got: BTreeMap<(String, u64), u64> = BTreeMap::new();
    for (name, (flat, _)) in rows {
        let (function, at) = name.split_once(' ').unwrap_or_else(|| panic!("no line in {name:?}"));
        let (file, line) = at.rsplit_once(':').unwrap();
        assert!(file.ends_with("main.c"), "{name}");
        *got.entry((function.to_owned(), line.parse().unwrap())).or_default() += flat;
    }
    assert_eq!(got, want, "go tool pprof -lines, and tbrw report --by line");

    // -list: each function's source with its samples per line.
    for function in ["hot_leaf", "hot_main"] {
        let text = go_pprof(&["-list", &format!("^{function}$"), "-sample_index=samples"], &out);
        assert!(text.contains(&format!("ROUTINE ======================== {function} in ")), "{text}");
        let mut listed: BTreeMap<u64, u64> = BTreeMap::new();
        for line in text.lines() {
            // `  flat  cum  line:source`, `.` for none.
            let w: Vec<&str> = line.split_whitespace().collect();
            let line_no = w.get(2).and_then(|x| x.split_once(':')).and_then(|(n, _)| n.parse::<u64>().ok());
            if let (Some(n), false) = (line_no, w[0] == ".") {
                listed.insert(n, w[0].parse().unwrap());
            }
        }
        let expected: BTreeMap<u64, u64> =
            want.iter().filter(|((f, _), _)| f == function).map(|((_, l), n)| (*l, *n)).collect();
        assert_eq!(listed, expected, "go tool pprof -list {function}:\n{text}");
        // The source text itself, read from the file the lines name.
        assert!(text.contains("s += (double)"), "{text}");
    }
}

// ---------------------------------------------------------------------
// The Firefox Profiler's loader

/// `profiler-cli`: `TBRW_PROFILER_CLI`, else on the PATH.
fn profiler_cli() -> Option<PathBuf> {
    let bin = std::env::var_os("TBRW_PROFILER_CLI").map_or_else(|| PathBuf::from("profiler-cli"), PathBuf::from);
    let there = Command::new(&bin).arg("--version").output().is_ok_and(|o| o.status.success());
    if !there {
        eprintln!(
            "note: skipped: profiler-cli is not installed (npm install -g @firefox-devtools/profiler-cli; .ci/run does)"
        );
    }
    there.then_some(bin)
}

/// A profile loaded by the profiler's daemon, in a session of its own,
/// stopped when dropped.
struct Loaded {
    bin: PathBuf,
    sessions: PathBuf,
    id: String,
}

impl Loaded {
    fn new(bin: &Path, sessions: &Path, id: &str, profile: &Path) -> Loaded {
        let l = Loaded { bin: bin.to_owned(), sessions: sessions.to_owned(), id: id.to_owned() };
        // On a busy machine the daemon can miss profiler-cli's 500 ms to
        // start; it says so and that retrying works. The daemon it left
        // starting is stopped first, so that each try starts its own.
        for attempt in 1.. {
            let o = l.run(&["load", s(profile)]);
            let err = String::from_utf8_lossy(&o.stderr);
            if o.status.success() {
                break;
            }
            let slow = err.contains("did not become ready");
            assert!(slow && attempt < 5, "profiler-cli load {} (try {attempt}): {err}", profile.display());
            if let Some(pid) =
                err.split("running as pid ").nth(1).and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            {
                let _ = Command::new("kill").arg(pid).status();
            }
            std::thread::sleep(std::time::Duration::from_millis(500 * attempt));
        }
        l
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(&self.bin)
            .args(args)
            .args(["--session", &self.id])
            .env("PROFILER_CLI_SESSION_DIR", &self.sessions)
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let o = self.run(&all);
        assert!(o.status.success(), "profiler-cli {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
    }

    /// The daemon's log: what it did while loading.
    fn log(&self) -> String {
        std::fs::read_to_string(self.sessions.join(format!("{}.log", self.id))).unwrap_or_default()
    }
}

impl Drop for Loaded {
    fn drop(&mut self) {
        let _ =
            Command::new(&self.bin).args(["stop", &self.id]).env("PROFILER_CLI_SESSION_DIR", &self.sessions).output();
    }
}

/// One thread as the profiler shows it: tid, name, CPU ms, and per
/// function (`library!name` for a library's frames) self and total samples
/// (idle samples left out, as the profiler does by default).
#[derive(Debug)]
struct FxThread {
    name: String,
    cpu_ms: f64,
    functions: BTreeMap<String, (u64, u64)>,
}

fn fx_threads(l: &Loaded) -> BTreeMap<u64, FxThread> {
    let info = l.json(&["profile", "info", "--all"]);
    let mut out = BTreeMap::new();
    for p in info["processes"].as_array().unwrap() {
        for t in p["threads"].as_array().unwrap() {
            let handle = t["threadHandle"].as_str().unwrap();
            let f = l.json(&["thread", "functions", "--thread", handle, "--limit", "0"]);
            let mut functions = BTreeMap::new();
            for x in f["functions"].as_array().unwrap() {
                let name = x["name"].as_str().unwrap().to_owned();
                let e: &mut (u64, u64) = functions.entry(name).or_default();
                e.0 += x["selfSamples"].as_u64().unwrap();
                e.1 += x["totalSamples"].as_u64().unwrap();
            }
            let tid: u64 = t["tid"].as_str().unwrap().parse().unwrap();
            let th = FxThread {
                name: t["name"].as_str().unwrap().to_owned(),
                cpu_ms: t["cpuMs"].as_f64().unwrap(),
                functions,
            };
            out.insert(tid, th);
        }
    }
    out
}

/// What the Firefox Profiler shows of FILE's profile against the report:
/// per thread its name, every sample as running (where no CPU time is
/// known, none idle), and its CPU time where the records have it; per thread and function the self samples;
/// no trip to a symbol server.
fn firefox_against_report(bin: &Path, dir: &Path, file: &Path, extra: &[&str], cputime: bool, view: &ViewOptions) {
    let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
    let out = dir.join(format!("{stem}.json.gz"));
    // Without inline frames: a sample's frame is its symbol's function,
    // what the report counts self by (perf_inline.rs has the inline frames).
    let mut args = vec!["export", "firefox", s(file), "-o", s(&out), "-f", "--no-inline"];
    args.extend_from_slice(extra);
    ok(&args);
    let what = file.display();
    let sessions = dir.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let l = Loaded::new(bin, &sessions, &stem, &out);
    let threads = fx_threads(&l);
    let want = report_threads(file, extra);
    assert_eq!(threads.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "{what}: the threads");
    // Per thread and function, the report's samples.
    let mut by_thread_function: BTreeMap<(u64, String), u64> = BTreeMap::new();
    for r in rows(&report(file, "thread,function", extra)) {
        let parts = r["key"]["parts"].as_array().unwrap();
        let tid = parts[0]["tid"].as_u64().unwrap();
        let f = &parts[1];
        let name = f["name"].as_str().or(f["unknown"].as_str()).unwrap().to_owned();
        *by_thread_function.entry((tid, name)).or_default() += r["samples"].as_u64().unwrap();
    }
    let cpu = if cputime { report_cputime(file) } else { BTreeMap::new() };
    let total = cumulative(file, view);
    for (tid, t) in &threads {
        let (n, name) = &want[tid];
        if let Some(name) = name {
            assert!(
                t.name.starts_with(name.as_str()),
                "{what}: thread {tid} is {:?}, the report names it {name}",
                t.name
            );
        }
        // Every sample running, none idle: the self samples add up to the thread's.
        let running: u64 = t.functions.values().map(|f| f.0).sum();
        assert_eq!(running, *n, "{what}: thread {tid}: running samples, and the report's samples");
        let got: BTreeMap<String, u64> =
            t.functions.iter().filter(|(_, v)| v.0 > 0).map(|(k, v)| (k.clone(), v.0)).collect();
        let expected: BTreeMap<String, u64> =
            by_thread_function.iter().filter(|((t, _), _)| t == tid).map(|((_, f), n)| (f.clone(), *n)).collect();
        assert_eq!(got, expected, "{what}: thread {tid}: self samples per function");
        let got: BTreeMap<String, u64> = t.functions.iter().map(|(k, v)| (k.clone(), v.1)).collect();
        let expected: BTreeMap<String, u64> =
            total.iter().filter(|((t, _), _)| u64::from(*t) == *tid).map(|((_, f), n)| (f.clone(), *n)).collect();
        assert_eq!(got, expected, "{what}: thread {tid}: total samples per function");
        if cputime {
            let ms = cpu[tid] / 1e6;
            // The first sample's delta has no time before it: the profiler leaves it out.
            assert!(
                (t.cpu_ms - ms).abs() <= ms * 0.05 + 1.0,
                "{what}: thread {tid}: {} ms of CPU, the report {ms} ms",
                t.cpu_ms
            );
        }
    }
    let log = l.log();
    assert!(log.contains("Profile loaded successfully"), "{log}");
    assert!(!log.contains("Symbolicating profile using"), "{what}: the profiler went to a symbol server:\n{log}");
}

#[test]
fn firefox_profiler_shows_the_reports_threads_functions_and_cpu() {
    let Some(bin) = profiler_cli() else { return };
    let dir = tempfile::tempdir().unwrap();
    let plain = ViewOptions::default();
    firefox_against_report(&bin, dir.path(), &sample(), &[], false, &plain);
    firefox_against_report(&bin, dir.path(), &perf(), &[], false, &plain);
    firefox_against_report(&bin, dir.path(), &collector(), &[], true, &plain);
    if let Some(prog) = build(dir.path()) {
        let tb5 = program_tb5(dir.path(), &prog);
        let mut view = ViewOptions::default();
        view.symbols.search_paths.push(dir.path().to_owned());
        firefox_against_report(&bin, dir.path(), &tb5, &["--search-path", s(dir.path())], true, &view);
    }
}

// ---------------------------------------------------------------------
// Chromium

fn chromium() -> Option<PathBuf> {
    let bin = std::env::var_os("TBRW_CHROMIUM").map_or_else(|| PathBuf::from("chromium"), PathBuf::from);
    let there = Command::new(&bin).arg("--version").output().is_ok_and(|o| o.status.success());
    if !there {
        eprintln!("note: skipped: chromium is not installed (Debian: apt-get install chromium; .ci/run does)");
    }
    there.then_some(bin)
}

/// A `<text>` as Chromium lays it out: its text, and x, y, width, height
/// of its bounding box.
type TextBox = (String, f64, f64, f64, f64);

/// Each `<text>` of the SVG at `svg` as Chromium lays it out, and the
/// drawing's width. A script added before `</svg>` measures them once the
/// drawing is parsed and writes them into the document, which
/// `--dump-dom` prints.
fn chromium_texts(bin: &Path, dir: &Path, svg: &Path) -> (Vec<TextBox>, f64) {
    let text = std::fs::read_to_string(svg).unwrap();
    let script = r#"<script><![CDATA[
(function () {
  var out = [];
  var texts = document.getElementsByTagName('text');
  for (var i = 0; i < texts.length; i++) {
    var b = texts[i].getBBox();
    out.push([texts[i].textContent.replace(/[\t\n]/g, ' '), b.x, b.y, b.width, b.height].join('\t'));
  }
  var d = document.createElementNS('http://www.w3.org/2000/svg', 'desc');
  d.setAttribute('id', 'tbrw-measured');
  d.textContent = '\n' + out.join('\n') + '\n';
  document.documentElement.appendChild(d);
})();
]]></script></svg>"#;
    let measured = dir.join(format!("measured-{}", svg.file_name().unwrap().to_string_lossy()));
    std::fs::write(&measured, text.replacen("</svg>", script, 1)).unwrap();
    let profile = dir.join("chromium-profile");
    let o = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", measured.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&o.stdout).into_owned();
    let start = dom
        .find("id=\"tbrw-measured\">")
        .unwrap_or_else(|| panic!("chromium: no measurement: {dom}\n{}", String::from_utf8_lossy(&o.stderr)));
    let body = &dom[start..];
    let body = &body[body.find('>').unwrap() + 1..body.find("</desc>").unwrap()];
    let rows = body
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let n = |i: usize| f[i].parse::<f64>().unwrap();
            (f[0].to_owned(), n(1), n(2), n(3), n(4))
        })
        .collect();
    let doc = roxmltree::Document::parse_with_options(
        &text,
        roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() },
    )
    .unwrap();
    let width = doc.root_element().attribute("width").unwrap().trim_end_matches("px").parse().unwrap();
    (rows, width)
}

#[test]
fn chromium_draws_every_timeline_text_inside_the_drawing_and_the_axis() {
    let Some(bin) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mtmc = dir.path().join("raw.tb5");
    ok(&["import", "mtmc", s(&root().join("cli/tests/data/mtmc/mtmc_raw_140736934563840")), "-o", s(&mtmc)]);
    for lanes in ["thread", "cpu"] {
        for width in ["1200", "700"] {
            let svg = dir.path().join(format!("t-{lanes}-{width}.svg"));
            ok(&["export", "timeline", s(&mtmc), "-o", s(&svg), "--lanes", lanes, "--width", width]);
            let (texts, w) = chromium_texts(&bin, dir.path(), &svg);
            assert!(texts.len() > 8, "{texts:?}");
            let doc_text = std::fs::read_to_string(&svg).unwrap();
            let doc = roxmltree::Document::parse(&doc_text).unwrap();
            // The axis: the one horizontal line drawn with a stroke, its ends the plot's.
            let axis = doc
                .descendants()
                .filter(|n| n.has_tag_name("line"))
                .find(|n| n.attribute("y1") == n.attribute("y2") && n.attribute("x1") != n.attribute("x2"))
                .unwrap();
            let x = |a: &str| axis.attribute(a).unwrap().parse::<f64>().unwrap();
            let (left, right) = (x("x1"), x("x2"));
            let axis_y: f64 = axis.attribute("y1").unwrap().parse().unwrap();
            for (t, bx, _, bw, _) in &texts {
                assert!(*bx >= 0.0 && bx + bw <= w, "{lanes} {width}: {t:?} drawn at {bx}..{} outside 0..{w}", bx + bw);
            }
            // Tick labels (below the axis) inside the plot's width.
            let ticks: Vec<_> = texts.iter().filter(|(_, _, by, _, _)| *by > axis_y).collect();
            assert!(ticks.len() >= 3, "{lanes} {width}: {texts:?}");
            for (t, bx, _, bw, _) in ticks {
                assert!(
                    *bx >= left - 0.5 && bx + bw <= right + 0.5,
                    "{lanes} {width}: tick {t:?} at {bx}..{} outside the axis {left}..{right}",
                    bx + bw
                );
            }
        }
    }
}

#[test]
fn chromium_draws_the_flame_graph_text_inside_its_frames() {
    let Some(bin) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("flame.svg");
    ok(&["export", "flamegraph", s(&perf()), "-o", s(&svg), "--by", "thread,function"]);
    let (texts, w) = chromium_texts(&bin, dir.path(), &svg);
    let names: Vec<&str> = texts.iter().map(|t| t.0.as_str()).collect();
    // inferno's script fits each frame's text to its frame once loaded;
    // the widest frames keep their names.
    assert!(names.iter().any(|n| n.contains("crunch-B (tid 2744)")), "{names:?}");
    assert!(names.contains(&"middle_b.constprop.0"), "{names:?}");
    for (t, bx, _, bw, _) in &texts {
        assert!(*bx >= 0.0 && bx + bw <= w + 0.5, "{t:?} drawn at {bx}..{} outside 0..{w}", bx + bw);
    }
}
