//! `tbrw import perf` checked against perf itself: a small C program is
//! recorded with `perf record` (plain, with `-g`, with two events), imported,
//! and `tbrw report` counts per module, process and thread must equal
//! perf's (`perf report --sort dso`/`--sort pid`, `perf script -F pid`). Skipped, with a note, where `cc` or `perf record` fail.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROG: &str = r#"
#include <math.h>
#include <stdlib.h>
#include <pthread.h>
static volatile double sink;
static int cmp(const void *a, const void *b) { int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }
static void *work(void *arg) { double s = 0; for (long i = 0; i < 3000000L; i++) s += sin((double)i) * (long)arg; sink = s; return 0; }
int main(void) {
  pthread_t t; pthread_create(&t, 0, work, (void *)2);
  int *v = malloc(sizeof(int) * 1000000);
  for (int r = 0; r < 2; r++) { for (int i = 0; i < 1000000; i++) v[i] = (i * 2654435761u) >> 7; qsort(v, 1000000, sizeof(int), cmp); }
  sink = v[7]; free(v); pthread_join(t, 0); return 0; }
"#;

fn tbrw() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tbrw"))
}

/// The program, built in `dir`, or `None` (with a note) without a compiler.
fn program(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("prog.c");
    std::fs::write(&src, PROG).unwrap();
    let exe = dir.join("prog");
    let ok = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(["-lm", "-lpthread"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("note: skipped: cc cannot build the test program");
        return None;
    }
    Some(exe)
}

/// `perf record ARGS -o OUT PROG`, or `None` (with a note) where perf cannot record.
fn record(dir: &Path, name: &str, args: &[&str]) -> Option<PathBuf> {
    let exe = program(dir)?;
    let out = dir.join(name);
    let r = Command::new("perf").arg("record").args(args).arg("-o").arg(&out).arg(&exe).output();
    match r {
        Ok(o) if o.status.success() && out.exists() => Some(out),
        Ok(o) => {
            eprintln!("note: skipped: perf record failed: {}", String::from_utf8_lossy(&o.stderr));
            None
        }
        Err(e) => {
            eprintln!("note: skipped: perf cannot run: {e}");
            None
        }
    }
}

/// `perf report --sort KEY -F sample,KEY` as key → samples, per event name.
fn perf_counts(data: &Path, key: &str) -> BTreeMap<String, BTreeMap<String, u64>> {
    let o = Command::new("perf")
        .args(["report", "--stdio", "--no-children", "-g", "none", "-i"])
        .arg(data)
        .args(["--sort", key, "-F", &format!("sample,{key}")])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut all: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut event = String::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        if let Some(rest) = line.strip_prefix("# Samples: ") {
            event = rest.split('\'').nth(1).unwrap_or("").split(':').next().unwrap_or("").to_owned();
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (n, k) = line.split_once(char::is_whitespace).unwrap();
        let k = k.trim();
        // --sort pid/tid show "ID:comm": the id is what is compared.
        let k = if key == "dso" { k.to_owned() } else { k.split(':').next().unwrap().to_owned() };
        *all.entry(event.clone()).or_default().entry(k).or_default() += n.parse::<u64>().unwrap();
    }
    all
}

/// Samples per process id, from `perf script -F pid`.
fn perf_script_pids(data: &Path) -> BTreeMap<String, u64> {
    let o = Command::new("perf").args(["script", "-F", "pid", "-i"]).arg(data).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines().map(str::trim).filter(|l| !l.is_empty()) {
        *m.entry(line.to_owned()).or_default() += 1;
    }
    m
}

/// `tbrw report --by BY --json` as key → samples.
fn tbrw_counts(file: &Path, by: &str) -> BTreeMap<String, u64> {
    let o = tbrw().arg("report").arg(file).args(["--by", by, "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut m = BTreeMap::new();
    for row in v["rows"].as_array().unwrap() {
        let k = &row["key"];
        let key = match by {
            "module" if k["kind"] == "unknown_module" => "[unknown]".to_owned(),
            "module" => k["name"].as_str().unwrap().to_owned(),
            "process" => k["pid"].to_string(),
            _ => k["tid"].to_string(),
        };
        *m.entry(key).or_default() += row["samples"].as_u64().unwrap();
    }
    m
}

/// Per event, per module name, from the file itself (the report has no
/// event filter): the in-memory bind's module of each record.
fn tbrw_module_counts_per_event(file: &Path) -> BTreeMap<String, BTreeMap<String, u64>> {
    use tbrw::*;
    let f = Tb5File::open(file).unwrap();
    let s = f.stream(0).unwrap();
    let layout = s.layout().unwrap().unwrap();
    let ev = layout.find(0x4402, None).unwrap();
    let events = s.events().unwrap().unwrap();
    let modules: Vec<Module> = f.modules().unwrap().unwrap().iter().map(|m| f.resolve(m.unwrap()).unwrap()).collect();
    let bind = tbrw::bind::bind_in_memory(&f, 0).unwrap();
    let data = s.data().unwrap().unwrap();
    let mut all: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (rec, b) in data.records().zip(&bind.to_vec()) {
        let id = u32::from_le_bytes(rec[ev.offset as usize..ev.offset as usize + 4].try_into().unwrap());
        let e = events.iter().find(|e| e.id == id).unwrap();
        let name = f.resolve(e.clone()).unwrap().name.unwrap();
        let m = modules.get(b.module_index as usize).and_then(|m| m.name.clone()).unwrap_or("[unknown]".into());
        *all.entry(name).or_default().entry(m).or_default() += 1;
    }
    all
}

fn import(data: &Path) -> PathBuf {
    let out = data.with_extension("tb5");
    let o = tbrw().args(["import", "perf"]).arg(data).arg("-o").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = tbrw().arg("verify").arg(&out).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    out
}

fn single(m: BTreeMap<String, BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    assert_eq!(m.len(), 1, "{m:?}");
    m.into_values().next().unwrap()
}

fn check_single_event(data: &Path) {
    let tb5 = import(data);
    let modules = single(perf_counts(data, "dso"));
    assert!(modules.values().sum::<u64>() > 20, "too few samples to compare: {modules:?}");
    assert_eq!(tbrw_counts(&tb5, "module"), modules);
    // perf's `--sort pid` key is the thread ("tid:comm"); its processes
    // come from `perf script -F pid`, one line per sample.
    assert_eq!(tbrw_counts(&tb5, "thread"), single(perf_counts(data, "pid")));
    assert_eq!(tbrw_counts(&tb5, "process"), perf_script_pids(data));
}

#[test]
fn module_process_and_thread_counts_equal_perfs() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record(dir.path(), "plain.data", &["-F", "2000"]) else { return };
    check_single_event(&data);
}

#[test]
fn call_chains_become_a_stack_table_and_counts_still_equal_perfs() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record(dir.path(), "g.data", &["-F", "2000", "-g"]) else { return };
    check_single_event(&data);
    let f = tbrw::Tb5File::open(data.with_extension("tb5")).unwrap();
    assert_eq!(f.stream_count(), 1, "no stream of frames");
    let s0 = f.stream(0).unwrap();
    let table = s0.stack_table().unwrap().expect("a stack table");
    let layout = s0.layout().unwrap().unwrap();
    let id = *layout.find(tbrw::STACK_ID_FIELD, None).expect("a stack id field");
    // Every sample's stack: innermost its own ip (perf's chain starts with
    // the sampled ip), and far fewer nodes than frames.
    let ip = *layout.find(tbrw::desc_type::IP, None).unwrap();
    let (mut frames, mut out) = (0usize, Vec::new());
    let data = s0.data().unwrap().unwrap();
    for rec in data.records() {
        out.clear();
        table.frames(id.read_le(rec).unwrap() as u32, &mut out).unwrap();
        assert_eq!(out[0], ip.read_le(rec).unwrap());
        frames += out.len();
    }
    assert!(frames as u64 > 2 * table.len(), "{frames} frames in {} nodes", table.len());
}

#[test]
fn two_events_count_per_event_as_perf_does() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record(dir.path(), "two.data", &["-F", "2000", "-e", "cpu-clock,task-clock"]) else { return };
    let tb5 = import(&data);
    let theirs = perf_counts(&data, "dso");
    assert_eq!(theirs.len(), 2, "{theirs:?}");
    assert_eq!(tbrw_module_counts_per_event(&tb5), theirs);
}

#[test]
fn a_truncated_file_names_file_record_and_offset_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record(dir.path(), "cut.data", &["-F", "2000"]) else { return };
    let bytes = std::fs::read(&data).unwrap();
    // The data section ends before the feature sections: cut inside it.
    let data_offset = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let data_size = u64::from_le_bytes(bytes[48..56].try_into().unwrap()) as usize;
    let cut = dir.path().join("cut-short.data");
    std::fs::write(&cut, &bytes[..data_offset + data_size / 2 + 3]).unwrap();
    let out = dir.path().join("cut.tb5");
    let o = tbrw().args(["import", "perf"]).arg(&cut).arg("-o").arg(&out).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cut-short.data") && err.contains("record ") && err.contains("byte offset"), "{err}");
    assert!(!out.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name().to_string_lossy().contains("tb5") || e.file_name().to_string_lossy().starts_with(".tbrw")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
