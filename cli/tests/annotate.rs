//! `tbrw annotate`'s instruction view against `perf annotate --stdio`: two
//! test loops (`hot_main`, a floating-point loop on one source line, and
//! `hash_loop`, an integer one) built with gcc, recorded by `perf record`,
//! imported, and annotated by both. The top three instructions perf shows
//! must have the same percentages in tbrw's view, and the hottest must be
//! the same instruction. Skipped with a note where gcc or perf is missing
//! or perf cannot record (perf_event_paranoid). The source-file note and
//! the view choice are checked on a recording of the collector, which
//! needs no perf.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const LOOPS: &str = r#"#include <stdlib.h>
__attribute__((noinline)) double hot_main(long n) {
    double x = 0.0;
    for (long i = 1; i < n; i++) { x += 1.0 / (double)i; if (x > 1e300) x = 0; }
    return x;
}
__attribute__((noinline)) unsigned long hash_loop(long n) {
    unsigned long h = 1469598103934665603UL;
    for (long i = 0; i < n; i++) { h ^= (unsigned long)i; h *= 1099511628211UL; h = (h << 7) | (h >> 57); }
    return h;
}
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 300000000L;
    double d = hot_main(n);
    unsigned long h = hash_loop(n);
    return (int)(d + (double)(h & 1)) == 12345;
}
"#;

fn tbrw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = tbrw(args);
    assert!(o.status.success(), "tbrw {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The loops built with gcc in `dir` (`None`, with a note, without gcc).
fn build_loops(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("loops.c");
    std::fs::write(&src, LOOPS).unwrap();
    let exe = dir.join("loops");
    match Command::new("gcc").args(["-O2", "-g", "-o"]).arg(&exe).arg(&src).status() {
        Ok(s) if s.success() => Some(exe),
        _ => {
            eprintln!("note: gcc cannot build the test loops: skipped");
            None
        }
    }
}

/// `perf annotate --stdio -s FUNCTION`: percent per address (function-relative hex as perf prints).
fn perf_annotate(data: &Path, function: &str) -> BTreeMap<u64, f64> {
    let o = Command::new("perf")
        .args(["annotate", "--stdio", "--no-source", "-i"])
        .arg(data)
        .args(["-s", function])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let mut rows = BTreeMap::new();
    for l in text.lines() {
        // `   50.73 :   11cd:   divsd  %xmm2,%xmm1`
        let Some((pct, rest)) = l.split_once(':') else { continue };
        let Ok(pct) = pct.trim().parse::<f64>() else { continue };
        let Some((addr, _)) = rest.trim().split_once(':') else { continue };
        if let Ok(a) = u64::from_str_radix(addr.trim(), 16) {
            rows.insert(a, pct);
        }
    }
    assert!(!rows.is_empty(), "perf annotate printed no instruction of {function}:\n{text}");
    rows
}

/// tbrw's instruction view as JSON: percent per address, and the hottest.
fn tbrw_annotate(tb5: &Path, function: &str) -> (BTreeMap<u64, f64>, u64) {
    let json = ok(&["annotate", tb5.to_str().unwrap(), "--function", function, "--asm", "--json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let a = &v[0];
    assert_eq!(a["view"], "asm", "{json}");
    let mut rows = BTreeMap::new();
    let mut hottest = None;
    for i in a["instructions"].as_array().unwrap() {
        let addr = i["vaddr"].as_u64().unwrap();
        rows.insert(addr, i["percent"].as_f64().unwrap());
        if i["hot"] == 1 {
            hottest = Some(addr);
        }
    }
    (rows, hottest.expect("an instruction marked hottest"))
}

fn top3(rows: &BTreeMap<u64, f64>) -> Vec<(u64, f64)> {
    let mut v: Vec<(u64, f64)> = rows.iter().map(|(a, p)| (*a, *p)).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(3);
    v
}

#[test]
fn the_hottest_instructions_agree_with_perf_annotate() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build_loops(dir.path()) else { return };
    let data = dir.path().join("perf.data");
    let rec = Command::new("perf")
        .args(["record", "-N", "-q", "-F", "4000", "-e", "cpu-clock", "-o"])
        .arg(&data)
        .arg(&exe)
        .arg("200000000")
        .output();
    match rec {
        Ok(o) if o.status.success() && data.exists() => {}
        Ok(o) => {
            eprintln!("note: perf record cannot record here: skipped ({})", String::from_utf8_lossy(&o.stderr).trim());
            return;
        }
        Err(e) => {
            eprintln!("note: no perf ({e}): skipped");
            return;
        }
    }
    let tb5 = dir.path().join("loops.tb5");
    ok(&["import", "perf", data.to_str().unwrap(), "-o", tb5.to_str().unwrap()]);
    for function in ["hot_main", "hash_loop"] {
        let perf = perf_annotate(&data, function);
        let (ours, hottest) = tbrw_annotate(&tb5, function);
        let (perf_top, our_top) = (top3(&perf), top3(&ours));
        eprintln!("{function}: perf {perf_top:x?}, tbrw {our_top:x?}");
        assert_eq!(
            hottest, perf_top[0].0,
            "{function}: the hottest instruction differs: perf {perf_top:x?}, tbrw {our_top:x?}"
        );
        for (addr, pct) in &perf_top {
            let mine = ours.get(addr).copied().unwrap_or(f64::NAN);
            // perf prints two decimals; the samples are the same.
            assert!((mine - pct).abs() < 0.006, "{function} {addr:#x}: perf {pct}%, tbrw {mine}%");
        }
    }
    // The text view names jump targets in the function and marks the hottest.
    let text = ok(&["annotate", tb5.to_str().unwrap(), "--function", "hot_main"]);
    assert!(text.contains("jne hot_main+0x"), "{text}");
    assert!(text.contains(" #1 "), "{text}");
    assert!(text.contains("loops.c:4  for (long i = 1; i < n; i++)"), "{text}");
}

/// Without perf: the collector records the loops; the instruction view is
/// the default for a loop on one line, `--source` keeps the line view, and
/// a source file that is gone is named once with "not found".
#[test]
fn the_view_follows_the_lines_and_a_missing_source_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build_loops(dir.path()) else { return };
    let tb5 = dir.path().join("rec.tb5");
    let o = tbrw(&["record", "-o", tb5.to_str().unwrap(), "-F", "2000", "--", exe.to_str().unwrap(), "100000000"]);
    if !o.status.success() {
        eprintln!("note: tbrw record cannot trace here: skipped ({})", String::from_utf8_lossy(&o.stderr).trim());
        return;
    }
    let f = tb5.to_str().unwrap();
    let asm = ok(&["annotate", f, "--function", "hash_loop"]);
    assert!(asm.contains("hot instruction") && asm.contains("#1"), "the loop on one line shows instructions: {asm}");
    let source = ok(&["annotate", f, "--function", "hash_loop", "--source"]);
    assert!(source.contains(" source\n") && !source.contains("#1"), "{source}");
    let json: Value = serde_json::from_str(&ok(&["annotate", f, "--function", "hash_loop", "--json"])).unwrap();
    assert_eq!(json[0]["view"], "asm");
    let rows = json[0]["instructions"].as_array().unwrap();
    let text_rows = asm.lines().filter(|l| l.contains(&format!("{:x}  ", rows[0]["vaddr"].as_u64().unwrap()))).count();
    assert_eq!(text_rows, 1, "the JSON's rows are the text's");
    std::fs::remove_file(dir.path().join("loops.c")).unwrap();
    let gone = ok(&["annotate", f, "--function", "hash_loop"]);
    let note = format!("{}: not found", dir.path().join("loops.c").display());
    assert_eq!(gone.matches(&note).count(), 1, "{gone}");
    let json: Value = serde_json::from_str(&ok(&["annotate", f, "--function", "hash_loop", "--json"])).unwrap();
    assert_eq!(json[0]["sources_missing"][0], dir.path().join("loops.c").to_str().unwrap());
    // The program gone, its functions known from the symbols stored in the
    // file: the source-line view, and why there are no instructions.
    ok(&["symbolize", f]);
    std::fs::remove_file(&exe).unwrap();
    let text = ok(&["annotate", f, "--function", "hash_loop", "--asm"]);
    assert!(text.contains("no instruction view: the module's file cannot be read here: "), "{text}");
    assert!(!text.contains("hot instruction"), "{text}");
}

/// A function no sample is in: an error.
#[test]
fn a_function_without_samples_is_an_error() {
    let f = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/data/sample.tb5");
    let o = tbrw(&["annotate", f, "--function", "nothing_is_called_this"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no sample of stream 0 is in a function named"));
}
