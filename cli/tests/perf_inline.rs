//! Inlined functions as frames of the stacks, from DWARF: a C++ -O2
//! program whose `std::vector::push_back`, `std::generate_n` and a
//! `static inline` function are inlined into `fill`, recorded with `perf
//! record -g`. `report --children` gives each inlined function its
//! children (the samples with it in their stack, once each) and no self
//! (self stays by symbol, as perf's `--no-children` counts it); the folded
//! flame graph, pprof (each location's `Line` list), the Firefox profile
//! and Parquet (`stacks` rows, the documented query) have them as frames
//! inside `fill`, the same stacks in each; `annotate --source` names them;
//! `--no-inline` leaves them out, and then every `--children` figure is
//! perf 6.1's (whose addr2line-based build here shows no inline frames).
//! The inline rows are what `addr2line -f -i` says at the sampled
//! addresses (demangled by `c++filt -p`, as perf shows names). Skipped,
//! with a note, where `g++` or `perf record` fail.

mod perf_support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use prost::Message;

use perf_support::*;

const PROG: &str = r#"
#include <vector>
#include <algorithm>
#include <cstdio>
static unsigned long long state = 88172645463325252ULL;
static inline unsigned long long next_rand() { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return state; }
__attribute__((noinline)) unsigned long long fill(int rounds) {
  unsigned long long sum = 0;
  for (int r = 0; r < rounds; r++) {
    std::vector<unsigned long long> v;
    for (int i = 0; i < 20000; i++) v.push_back(next_rand() % 1000);
    std::vector<unsigned long long> w(20000);
    std::generate_n(w.begin(), w.size(), next_rand);
    for (size_t i = 0; i < v.size(); i++) sum += v[i] * w[i];
  }
  return sum;
}
int main() { std::printf("%llu\n", fill(1500)); return 0; }
"#;

/// A row's children %, self %, children and self samples.
type Figures = (f64, f64, u64, u64);

/// `tbrw report --children --json [extra]`: name → its [`Figures`].
fn children(tb5: &Path, extra: &[&str]) -> BTreeMap<String, Figures> {
    let o = tbrw().arg("report").arg(tb5).args(["--children", "--json"]).args(extra).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut m = BTreeMap::new();
    for row in v["rows"].as_array().unwrap() {
        let name = row["key"]["name"].as_str().or(row["key"]["unknown"].as_str()).unwrap().to_owned();
        let c = &row["children"];
        let f = (
            c["percent"].as_f64().unwrap(),
            row["percent"].as_f64().unwrap(),
            c["samples"].as_u64().unwrap(),
            row["samples"].as_u64().unwrap(),
        );
        m.insert(name, f);
    }
    m
}

/// `perf report --children --sort sym`: symbol → (children %, self %).
fn perf_children(data: &Path) -> BTreeMap<String, (f64, f64)> {
    let o = Command::new("perf")
        .args(["report", "--children", "--sort", "sym", "--stdio", "-q", "-g", "none", "-i"])
        .arg(data)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let pct = |s: &str| s.strip_suffix('%').and_then(|p| p.parse::<f64>().ok());
        if let [c, s, _mode, sym @ ..] = &w[..] {
            if let (Some(c), Some(s)) = (pct(c), pct(s)) {
                m.insert(sym.join(" "), (c, s));
            }
        }
    }
    m
}

/// Stacks (outermost first, `;`-joined) → samples.
type Stacks = BTreeMap<String, u64>;

fn folded(tb5: &Path, extra: &[&str]) -> Stacks {
    let o = tbrw()
        .args(["export", "flamegraph", "--folded", "--by", "function"])
        .arg(tb5)
        .args(["-o", "-"])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut m = Stacks::new();
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        let (s, n) = l.rsplit_once(' ').unwrap();
        *m.entry(s.to_owned()).or_default() += n.parse::<u64>().unwrap();
    }
    m
}

/// Per function, the samples of the stacks it is in (once per stack).
fn inclusive(stacks: &Stacks) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for (s, n) in stacks {
        for f in s.split(';').collect::<BTreeSet<_>>() {
            *m.entry(f.to_owned()).or_default() += n;
        }
    }
    m
}

fn export(tb5: &Path, what: &str, out: &Path, extra: &[&str]) {
    let o = tbrw().args(["export", what]).arg(tb5).arg("-o").arg(out).arg("-f").args(extra).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn gunzip(p: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap()).read_to_end(&mut out).unwrap();
    out
}

/// pprof's stacks: each sample's locations, each location's lines
/// innermost first (its inlined functions, then its own), as `go tool
/// pprof` expands them; and per leaf address its lines' functions.
fn pprof_stacks(pb: &Path) -> (Stacks, BTreeMap<u64, Vec<String>>) {
    let p = tbrw_export::pprof::Profile::decode(gunzip(pb).as_slice()).unwrap();
    let s = |i: i64| p.string_table[i as usize].clone();
    let names = |id: u64| -> Vec<String> {
        let loc = p.location.iter().find(|l| l.id == id).unwrap();
        loc.line.iter().map(|l| s(p.function.iter().find(|f| f.id == l.function_id).unwrap().name)).collect()
    };
    let (mut stacks, mut leaves) = (Stacks::new(), BTreeMap::new());
    for smp in &p.sample {
        let frames: Vec<String> = smp.location_id.iter().flat_map(|&id| names(id)).collect();
        let joined: Vec<&str> = frames.iter().rev().map(String::as_str).collect();
        *stacks.entry(joined.join(";")).or_default() += smp.value[0] as u64;
        let leaf = p.location.iter().find(|l| l.id == smp.location_id[0]).unwrap();
        leaves.insert(leaf.address, names(leaf.id));
    }
    (stacks, leaves)
}

/// The Firefox profile's stacks: each sample's stack's frames by their
/// functions' names, outermost first.
fn firefox_stacks(json: &Path) -> Stacks {
    let v: serde_json::Value = serde_json::from_slice(&gunzip(json)).unwrap();
    let mut stacks = Stacks::new();
    for th in v["threads"].as_array().unwrap() {
        let string = |i: &serde_json::Value| th["stringArray"][i.as_u64().unwrap() as usize].as_str().unwrap();
        let (st, ft) = (&th["stackTable"], &th["frameTable"]);
        for stack in th["samples"]["stack"].as_array().unwrap() {
            let mut frames = Vec::new();
            let mut at = stack.as_u64();
            while let Some(i) = at {
                let frame = st["frame"][i as usize].as_u64().unwrap() as usize;
                let func = ft["func"][frame].as_u64().unwrap() as usize;
                frames.push(string(&th["funcTable"]["name"][func]));
                at = st["prefix"][i as usize].as_u64();
            }
            frames.reverse();
            *stacks.entry(frames.join(";")).or_default() += 1;
        }
    }
    stacks
}

/// The documented Parquet query of inclusive functions (DuckDB, through
/// `parquet_queries.py`); `None` where DuckDB is missing.
fn parquet_inclusive(ds: &Path, run: &str) -> Option<BTreeMap<String, u64>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parquet_queries.py");
    let o = Command::new("python3").arg(script).arg(ds).args(["inclusive_functions", run]).output().ok()?;
    if o.status.code() == Some(3) {
        eprintln!("note: {}the Parquet check skipped", String::from_utf8_lossy(&o.stderr));
        return None;
    }
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap().iter();
    Some(rows.map(|r| (r[0].as_str().unwrap().to_owned(), r[1].as_u64().unwrap())).collect())
}

/// `TOOL -f -i -e EXE ADDR` (binutils' `addr2line`, `llvm-addr2line`),
/// its function names demangled as perf shows them (`c++filt -p`): the
/// inline chain, innermost first. Empty when the tool cannot run.
fn addr2line(tool: &str, exe: &Path, addr: u64) -> Vec<String> {
    let Ok(o) = Command::new(tool).args(["-f", "-i", "-e"]).arg(exe).arg(format!("{addr:#x}")).output() else {
        return Vec::new();
    };
    let mangled: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().step_by(2).map(str::to_owned).collect();
    let mut filt = Command::new("c++filt").arg("-p").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(filt.stdin.as_mut().unwrap(), mangled.join("\n").as_bytes()).unwrap();
    let out = filt.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

#[test]
fn inlined_functions_are_frames_and_no_inline_gives_perfs_figures() {
    if !have_perf() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("inl.cpp");
    std::fs::write(&src, PROG).unwrap();
    let exe = dir.path().join("inl");
    // Not position-independent: a sampled address is the ELF address addr2line takes.
    let flags = ["-O2", "-g", "-fno-omit-frame-pointer", "-fno-pie", "-no-pie", "-o"];
    let built = Command::new("g++").args(flags).arg(&exe).arg(&src).status();
    if !built.is_ok_and(|s| s.success()) {
        return eprintln!("note: skipped: g++ cannot build the test program");
    }
    let args = ["-e", "cpu-clock:u", "-c", "250000", "-g"];
    let Some(data) = record(&dir.path().join("inl.data"), &args, &[&exe]) else { return };
    let (tb5, _) = import(&data);
    let theirs = perf_children(&data);
    let plain = children(&tb5, &["--no-inline"]);
    let inlined = children(&tb5, &[]);
    eprintln!("perf: {theirs:?}\n--no-inline: {plain:?}\ninline: {inlined:?}");

    // Without inline frames: perf's figures, row by row.
    for (name, &(c, s, ..)) in &plain {
        let Some(&(pc, ps)) = theirs.get(name) else { continue };
        assert!((c - pc).abs() < 0.011 && (s - ps).abs() < 0.011, "{name}: {c} {s}, perf's {pc} {ps}");
    }
    assert!(plain.contains_key("fill") && theirs.contains_key("fill"));

    // With them: the same rows, the same self of every row, and the
    // inlined functions as rows of children only, within fill's.
    let fill = inlined["fill"];
    for (name, row) in &plain {
        assert_eq!(inlined.get(name), Some(row), "{name}");
    }
    let extra: Vec<(&String, &Figures)> = inlined.iter().filter(|(k, _)| !plain.contains_key(*k)).collect();
    let has = |name: &str| extra.iter().any(|(k, _)| *k == name);
    let push_back = "std::vector<unsigned long long, std::allocator<unsigned long long> >::push_back";
    assert!(has(push_back) && has("next_rand"), "{extra:?}");
    assert!(extra.iter().any(|(k, _)| k.starts_with("std::generate_n<")), "{extra:?}");
    for (name, &(_, _, c, s)) in &extra {
        assert!(s == 0 && c > 0 && c <= fill.2, "{name}: children {c}, self {s}");
    }

    // The folded stacks: inlined frames inside fill, the same samples in
    // all; a function's children are the samples of the stacks it is in.
    let with = folded(&tb5, &[]);
    let without = folded(&tb5, &["--no-inline"]);
    assert_eq!(with.values().sum::<u64>(), without.values().sum::<u64>());
    assert!(with.keys().any(|s| s.contains(";fill;") && s.ends_with(";next_rand")), "{with:?}");
    assert!(without.keys().all(|s| !s.contains("next_rand")));
    let per_function = inclusive(&with);
    for (name, &(_, _, c, _)) in &inlined {
        assert_eq!(per_function.get(name), Some(&c), "{name}");
    }

    // pprof: the same stacks, each location's lines expanded; --no-inline
    // one line a location. The leaf addresses' lines are addr2line's chain.
    let pb = dir.path().join("p.pb.gz");
    export(&tb5, "pprof", &pb, &[]);
    let (stacks, leaves) = pprof_stacks(&pb);
    assert_eq!(stacks, with, "pprof's stacks, inline lines expanded, are the folded ones");
    export(&tb5, "pprof", &pb, &["--no-inline"]);
    assert_eq!(pprof_stacks(&pb).0, without);
    let mut checked = 0;
    for (addr, lines) in leaves.iter().filter(|(_, l)| l.len() > 1).take(8) {
        // binutils' addr2line names an inlined function that has no
        // linkage name (a `static inline` one: `next_rand`) by the
        // enclosing symbol (`fill`); llvm-addr2line reads its DW_AT_name,
        // as we do.
        let theirs = addr2line("addr2line", &exe, *addr);
        if theirs[..theirs.len() - 1].iter().all(|f| *f != theirs[theirs.len() - 1]) {
            assert_eq!(&theirs, lines, "{addr:#x}");
            checked += 1;
        }
        let llvm = addr2line("llvm-addr2line", &exe, *addr);
        if !llvm.is_empty() {
            assert_eq!(&llvm, lines, "{addr:#x}: llvm-addr2line");
        }
    }
    assert!(checked > 0, "sampled addresses in inlined code: {leaves:?}");
    if let Ok(o) = Command::new("go").args(["tool", "pprof", "-top", "-nodecount=100"]).arg(&pb).output() {
        if o.status.success() {
            export(&tb5, "pprof", &pb, &[]);
            let o = Command::new("go").args(["tool", "pprof", "-traces"]).arg(&pb).output().unwrap();
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(text.contains("next_rand (inline)"), "go tool pprof -traces shows inline frames:\n{text}");
        }
    }

    // Firefox: the same stacks, inline frames as frames.
    let ff = dir.path().join("f.json.gz");
    export(&tb5, "firefox", &ff, &[]);
    assert_eq!(firefox_stacks(&ff), with);
    export(&tb5, "firefox", &ff, &["--no-inline"]);
    assert_eq!(firefox_stacks(&ff), without);

    // Parquet: the documented inclusive query gives the folded stacks'
    // figures (its `[module]` frames aside, as the query names functions only).
    let ds = dir.path().join("ds");
    export(&tb5, "parquet", &ds, &["--functions"]);
    if let Some(got) = parquet_inclusive(&ds, "inl") {
        let want: BTreeMap<String, u64> = per_function.into_iter().filter(|(f, _)| !f.starts_with('[')).collect();
        assert_eq!(got, want);
    }

    // annotate --source: next_rand's line named as its inlined code.
    let o = tbrw().arg("annotate").arg(&tb5).args(["--function", "fill", "--source", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let lines = v[0]["lines"].as_array().unwrap();
    let text = |l: &serde_json::Value| l["text"].as_str().unwrap_or("").to_owned();
    let next_rand = lines.iter().find(|l| text(l).starts_with("static inline")).expect("next_rand's line");
    assert_eq!(next_rand["inlined"], "next_rand", "{next_rand}");
    assert!(next_rand["samples"].as_u64().unwrap() > 0);
    let own = lines.iter().filter(|l| l["samples"].as_u64() > Some(0) && l["inlined"].is_null());
    assert!(own.count() > 0, "fill's own lines are not named as inlined code");
    let args = ["--function", "fill", "--source", "--json", "--no-inline"];
    let o = tbrw().arg("annotate").arg(&tb5).args(args).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v[0]["lines"].as_array().unwrap().iter().all(|l| l["inlined"].is_null()));
}
