//! Inlined functions as frames of the stacks, from DWARF: a C++ -O2
//! program whose `std::vector::push_back`, `std::generate_n` and a
//! `static inline` function are inlined into `fill`, recorded with `perf
//! record -g`. `report --children` gives each inlined function its
//! children (the samples with it in their stack, once each) and no self
//! (self stays by symbol, as perf's `--no-children` counts it); the folded
//! flame graph has them as frames inside `fill`; `--no-inline` leaves
//! them out, and then every figure is perf 6.1's `report --children`
//! (whose addr2line-based build here shows no inline frames). Skipped, with
//! a note, where `g++` or `perf record` fail.

mod perf_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

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

fn folded(tb5: &Path, extra: &[&str]) -> Vec<(String, u64)> {
    let o = tbrw()
        .args(["export", "flamegraph", "--folded", "--by", "function"])
        .arg(tb5)
        .args(["-o", "-"])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let (s, n) = l.rsplit_once(' ').unwrap();
            (s.to_owned(), n.parse().unwrap())
        })
        .collect()
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
    let built = Command::new("g++").args(["-O2", "-g", "-fno-omit-frame-pointer", "-o"]).arg(&exe).arg(&src).status();
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

    // Without inline frames: perf's figures (C++ names: perf's without
    // their parameters).
    for (name, &(c, s, ..)) in &plain {
        let short = name.split('(').next().unwrap();
        let Some(&(pc, ps)) = theirs.get(short) else { continue };
        assert!((c - pc).abs() < 0.011 && (s - ps).abs() < 0.011, "{name}: {c} {s}, perf's {pc} {ps}");
    }
    assert!(plain.keys().any(|k| k.starts_with("fill")) && theirs.contains_key("fill"));

    // With them: the same rows, the same self of every row, and the
    // inlined functions as rows of children only, within fill's.
    let fill = inlined.iter().find(|(k, _)| k.starts_with("fill(")).map(|(_, v)| *v).unwrap();
    for (name, row) in &plain {
        assert_eq!(inlined.get(name), Some(row), "{name}");
    }
    let extra: Vec<(&String, &Figures)> = inlined.iter().filter(|(k, _)| !plain.contains_key(*k)).collect();
    let has = |part: &str| extra.iter().any(|(k, _)| k.contains(part));
    assert!(has("push_back") && has("generate_n") && has("next_rand"), "{extra:?}");
    for (name, &(_, _, c, s)) in &extra {
        assert!(s == 0 && c > 0 && c <= fill.2, "{name}: children {c}, self {s}");
    }

    // The folded stacks: inlined frames inside fill, the same samples in all.
    let with = folded(&tb5, &[]);
    let without = folded(&tb5, &["--no-inline"]);
    let total = |v: &[(String, u64)]| v.iter().map(|(_, n)| n).sum::<u64>();
    assert_eq!(total(&with), total(&without));
    assert!(with.iter().any(|(s, _)| s.contains("fill(int);") && s.contains("next_rand")), "{with:?}");
    assert!(without.iter().all(|(s, _)| !s.contains("next_rand")));
    // A function's children are the samples of the folded stacks it is in.
    for (name, &(_, _, c, _)) in &extra {
        let inclusive: u64 =
            with.iter().filter(|(s, _)| s.split(';').any(|f| f == name.as_str())).map(|(_, n)| n).sum();
        assert_eq!(inclusive, c, "{name}");
    }
}
