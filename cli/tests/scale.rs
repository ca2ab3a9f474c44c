//! Files at scale, each command a child of the test under an address-space
//! and a CPU-time limit (`RLIMIT_AS`, `RLIMIT_CPU`), its peak resident set
//! read from `/proc` (`VmHWM`): a command whose memory or time grows
//! with what the issues say it must not fails its limit fast instead of
//! taking the machine's memory (before, `report --children` of the deep
//! stacks below took 23.8 GB and 104 s).
//!
//! - Deep stacks (issue #38, "Deep stacks"): 20,000 samples on distinct
//!   stacks 65,535 frames deep (sharing their callers), which written out
//!   frame by frame are 1.3 G frames: every walk keeps them as the file
//!   does, as nodes.
//! - A file from another machine (issue #40): 10,000 modules whose files
//!   are not here, samples at random addresses in them: a module's
//!   addresses are its one frame where functions are asked for, none is
//!   resolved where only processes and modules are, the warnings are one
//!   line, and the report by address holds its rows' counts only.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

#[allow(dead_code)]
#[path = "../benches/support/scale_inputs.rs"]
mod scale_inputs;

/// The address space a command may take (the mapped file, the binary,
/// thread stacks and the allocator's arenas included).
const ADDRESS_SPACE: u64 = 2 << 30;

/// The CPU time a command may take, s: each takes under 2 s here (the
/// walks that bound every frame of every deep stack took 60 to 280 s).
const CPU_SECONDS: u64 = 30;

/// What a command run by [`limited`] did.
struct Ran {
    ok: bool,
    stdout: String,
    stderr: String,
    /// Peak resident set (`VmHWM`), KiB.
    maxrss_kib: u64,
}

/// Runs `tbrw args` with [`ADDRESS_SPACE`] and [`CPU_SECONDS`] as its
/// limits, set by `sh` before it runs `tbrw` in its place: a child forked
/// from this test would count the test's own pages in its peak.
fn limited<S: AsRef<OsStr>>(args: &[S]) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let script = format!("ulimit -v {}; ulimit -t {CPU_SECONDS}; exec \"$0\" \"$@\"", ADDRESS_SPACE / 1024);
    let child = Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_tbrw")])
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    // The peak is the child's own high-water mark (`VmHWM`: of its memory
    // since it ran `tbrw`), read until it ends: monotone, so the last read
    // is the peak but for the last few milliseconds. Its rusage would not
    // do: a child spawned from this test counts the test's pages too.
    let status_file = format!("/proc/{pid}/status");
    let mut peak = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file) {
            let hwm = text.lines().find_map(|l| l.strip_prefix("VmHWM:"));
            if let Some(kib) = hwm.and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()) {
                peak = peak.max(kib);
            }
        }
        let mut status = 0;
        // SAFETY: a plain system call on our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break status;
        }
        assert_eq!(r, 0, "waitpid: {}", std::io::Error::last_os_error());
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    std::mem::forget(child);
    Ran {
        ok: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        maxrss_kib: peak,
    }
}

/// [`limited`], which must succeed within `mib` MiB of resident memory.
fn within<S: AsRef<OsStr> + std::fmt::Debug>(mib: u64, args: &[S]) -> Ran {
    let r = limited(args);
    assert!(r.ok, "tbrw {args:?} failed: {}", r.stderr);
    assert!(r.maxrss_kib <= mib * 1024, "tbrw {args:?} took {} MiB, more than {mib} MiB", r.maxrss_kib / 1024);
    r
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A module file that is here (no DWARF to read: the exports' memory is
/// theirs), so that every frame's address is kept.
const PROGRAM_HERE: &str = "/bin/sh";

#[test]
fn deep_distinct_stacks_cost_their_nodes_not_their_frames() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("deep.tb5");
    // 20,000 stacks of 65,535 frames: 1.3 G frames written out, 86 K nodes.
    scale_inputs::deep_stacks(&deep, 20_000, 65_535, PROGRAM_HERE).unwrap();
    let v = within(64, &["verify", s(&deep)]);
    assert!(v.stdout.contains("ok"), "{}", v.stdout);

    let r = within(64, &["report", s(&deep), "--children", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(json["samples"], 20_000);
    // Every sample's stack holds the outermost frame's function.
    let most = json["rows"][0]["children"]["samples"].as_u64().unwrap();
    assert_eq!(most, 20_000, "{}", r.stdout.chars().take(400).collect::<String>());

    let ff = dir.path().join("deep.json.gz");
    within(128, &["export", "firefox", s(&deep), "-o", s(&ff)]);
    let pq = dir.path().join("deep-parquet");
    within(96, &["export", "parquet", s(&deep), "-o", s(&pq)]);
}

#[test]
fn deep_stacks_written_out_whole_are_made_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("deep.tb5");
    // 200 stacks of 65,535 frames: what they are one by one is 13 M
    // frames, 315 MB as frame lists; the outputs hold each whole.
    scale_inputs::deep_stacks(&deep, 200, 65_535, PROGRAM_HERE).unwrap();
    let folded = dir.path().join("deep.folded");
    within(80, &["export", "flamegraph", "--folded", "--by", "address", s(&deep), "-o", s(&folded)]);
    let text = std::fs::read_to_string(&folded).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 200);
    assert!(lines.iter().all(|l| l.split(';').count() == 65_535 && l.ends_with(" 1")), "{}", &lines[0][..200]);
    assert!(lines.windows(2).all(|w| w[0] < w[1]), "the lines in the order of their text");
    let pb = dir.path().join("deep.pb.gz");
    within(80, &["export", "pprof", s(&deep), "-o", s(&pb)]);
    let svg = dir.path().join("deep.svg");
    within(80, &["export", "flamegraph", s(&deep), "-o", s(&svg)]);
}

/// The file from another machine: 10,000 modules, none here.
fn other_machine(dir: &Path, samples: u64) -> std::path::PathBuf {
    let f = dir.join("remote.tb5");
    scale_inputs::other_machine(&f, samples, None).unwrap();
    f
}

/// Sums the counts of folded lines.
fn folded_total(text: &str) -> u64 {
    text.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum()
}

#[test]
fn a_file_from_another_machine_costs_what_its_answer_needs() {
    let dir = tempfile::tempdir().unwrap();
    let f = other_machine(dir.path(), 400_000);
    // Per distinct address, before: about 200 B (flame graphs) to 600 B
    // (pprof, the report by address): 80 to 240 MB here.
    let folded = dir.path().join("m.folded");
    let by_module =
        within(56, &["export", "flamegraph", s(&f), "--by", "process,module", "--folded", "-o", s(&folded)]);
    assert_eq!(by_module.stderr, "", "no function is resolved: no warning");
    let text = std::fs::read_to_string(&folded).unwrap();
    assert!(text.lines().count() <= 10_000);
    assert_eq!(folded_total(&text), 400_000);

    // The default frames: functions unknown, so one per module.
    let r = within(64, &["export", "flamegraph", "-f", s(&f), "--folded", "-o", s(&folded)]);
    let text = std::fs::read_to_string(&folded).unwrap();
    assert!(text.lines().count() <= 10_000);
    assert_eq!(folded_total(&text), 400_000);
    assert!(text.lines().all(|l| l.split(';').count() == 3 && l.contains(";[lib")), "{}", &text[..200]);
    // One warning line, not one per module.
    let warn: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(warn.len(), 1, "{}", r.stderr);
    assert!(
        warn[0].starts_with("tbrw: warning: 10,000 modules' files not found, e.g. lib0.so, lib1.so, lib10.so, ...;")
            && warn[0].ends_with("--symfs or --search-path to point at them; --verbose lists them"),
        "{}",
        warn[0]
    );

    let r = within(72, &["report", s(&f), "--by", "function", "--json"]);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), 10_000);
    let r = within(72, &["report", s(&f), "--by", "function", "--verbose", "--top", "1"]);
    assert_eq!(r.stderr.lines().count(), 10_000, "--verbose: a line per module");
    assert!(r.stderr.lines().all(|l| l.contains("file not found (tried ")), "{}", &r.stderr[..300]);

    // A sample per record, 12 B in the export's columns (77 MiB here when
    // they were the library's 36 B and the records were walked twice).
    let ff = dir.path().join("f.json.gz");
    within(64, &["export", "firefox", s(&f), "-o", s(&ff)]);
}

#[test]
fn pprof_keeps_each_address_with_its_mapping_unless_folded() {
    use prost::Message;
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let f = other_machine(dir.path(), 200_000);
    let pb = dir.path().join("p.pb.gz");
    within(80, &["export", "pprof", s(&f), "-o", s(&pb)]);
    let decode = |p: &Path| {
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap()).read_to_end(&mut bytes).unwrap();
        tbrw_export::pprof::Profile::decode(bytes.as_slice()).unwrap()
    };
    let p = decode(&pb);
    let total: i64 = p.sample.iter().map(|s| s.value[0]).sum();
    assert_eq!(total, 200_000);
    // Each distinct address its location, in its mapping, for `pprof -symbolize`.
    let distinct: std::collections::HashSet<u64> = p.location.iter().map(|l| l.address).collect();
    assert!(p.location.len() > 190_000 && distinct.len() > 190_000, "{}", p.location.len());
    for l in &p.location {
        let m = &p.mapping[l.mapping_id as usize - 1];
        assert!(m.memory_start <= l.address && l.address < m.memory_limit);
        let name = &p.string_table[p.function[l.line[0].function_id as usize - 1].name as usize];
        assert!(name.starts_with("[lib") && name.ends_with(".so]"), "{name}");
    }
    let folded = dir.path().join("q.pb.gz");
    within(56, &["export", "pprof", "--fold-unresolved", s(&f), "-o", s(&folded)]);
    let q = decode(&folded);
    assert_eq!(q.sample.iter().map(|s| s.value[0]).sum::<i64>(), 200_000);
    assert!(q.location.len() <= 10_000 && q.location.len() == q.sample.len(), "{}", q.location.len());
}

#[test]
fn the_report_by_address_holds_its_counts_and_writes_what_the_library_gives() {
    let dir = tempfile::tempdir().unwrap();
    let f = other_machine(dir.path(), 400_000);
    // 400,000 distinct addresses: at most 100 B each, and the program's own.
    let r = within(96, &["report", s(&f), "--by", "address", "--json"]);
    let file = tbrw::Tb5File::open(&f).unwrap();
    let opts = tbrw_query::report::ReportOptions::new(Default::default(), &[tbrw_query::By::Address]);
    let whole = tbrw_query::report::run(&file, &opts, &mut Vec::new(), &mut |_| {}).unwrap();
    assert!(whole.rows.len() > 390_000);
    let mut json = Vec::new();
    tbrw_query::report::write_json(&whole, &mut json).unwrap();
    assert_eq!(r.stdout.as_bytes(), json.as_slice(), "the same bytes as the report made whole");
    let t = within(96, &["report", s(&f), "--by", "address", "--top", "20"]);
    let mut text = Vec::new();
    let whole = tbrw_query::report::run(&file, &opts.top(Some(20)), &mut Vec::new(), &mut |_| {}).unwrap();
    tbrw_query::report::write_text(&whole, &mut text).unwrap();
    assert_eq!(t.stdout, String::from_utf8(text).unwrap());
    assert_eq!(t.stdout.lines().count(), 22);
}
