//! `tbrw export parquet`: the documented queries (docs/PARQUET.md, run by
//! DuckDB through `cli/tests/parquet_queries.py`) over a dataset made from
//! the shipped data and imports, compared with `tbrw report` on the same
//! files; the dataset's layout read back with the parquet crate; and the
//! output rules (`--force`, `--append`, inputs, nothing left on failure).
//! The DuckDB tests skip with a note when `import duckdb` fails; `.ci/run`
//! installs it, so CI runs them. The perf import's test records with `perf
//! record` and skips, with a note, where `cc` or perf cannot run.

mod program;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use program::{build_prog, elf_symbol};
use serde_json::Value;
use tbrw::*;
use tbrw_import::globals::write_globals;
use tbrw_schema::descriptor::field;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn tbrw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = tbrw(args);
    assert!(o.status.success(), "tbrw {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn report(args: &[&str]) -> Value {
    let mut a = vec!["report"];
    a.extend_from_slice(args);
    a.push("--json");
    serde_json::from_str(&ok(&a)).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn shipped(rel: &str) -> PathBuf {
    Path::new(ROOT).join(rel)
}

/// The answer of query `name` over `dir`, or `None` (with a note) when
/// DuckDB cannot be imported.
fn duckdb(dir: &Path, name: &str, args: &[&str]) -> Option<Vec<Value>> {
    let script = shipped("cli/tests/parquet_queries.py");
    let o = match Command::new("python3").arg(&script).arg(dir).arg(name).args(args).output() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("note: python3 cannot be run ({e}): DuckDB queries skipped");
            return None;
        }
    };
    if o.status.code() == Some(3) {
        eprintln!("note: {}DuckDB queries skipped", String::from_utf8_lossy(&o.stderr));
        return None;
    }
    assert!(o.status.success(), "query {name}: {}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    Some(v.as_array().unwrap().clone())
}

/// A report's rows summed by module name (`[unknown]` for samples
/// no module covers; two processes' `libc.so.6` are one name).
fn modules(r: &Value) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for row in r["rows"].as_array().unwrap() {
        let k = &row["key"];
        let name = match k["kind"].as_str() {
            Some("module") => k["name"].as_str().unwrap().to_owned(),
            _ => "[unknown]".to_owned(),
        };
        *m.entry(name).or_default() += row["samples"].as_u64().unwrap();
    }
    m
}

fn pairs(rows: &[Value]) -> BTreeMap<String, u64> {
    rows.iter().map(|r| (r[0].as_str().unwrap().to_owned(), r[1].as_u64().unwrap())).collect()
}

/// Imports of the shipped data, in `dir`: an MTMC log, a winIDEA export, a sampler profile.
fn imports(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let tasks = dir.join("tasks.tb5");
    ok(&["import", "mtmc", s(&shipped("cli/tests/data/mtmc/doc_example.log")), "-o", s(&tasks)]);
    let w = dir.join("w.tb5");
    // The export's statistics differ from its timeline (docs/IMPORT.md): exit 0 without --check.
    ok(&["import", "winidea", s(&shipped("cli/tests/data/winidea/doc_example.txt")), "-o", s(&w)]);
    let run = dir.join("run.tb5");
    ok(&["import", "sampler", s(&shipped("examples/data/sampler/current.prof")), "-o", s(&run)]);
    (tasks, w, run)
}

#[test]
fn the_documented_queries_answer_what_tbrw_report_says() {
    let t = tempfile::tempdir().unwrap();
    let (tasks, w, run) = imports(t.path());
    let sample = shipped("examples/data/sample.tb5");
    let ds = t.path().join("ds");
    let out = ok(&["export", "parquet", s(&sample), s(&tasks), "-o", s(&ds)]);
    assert!(out.contains("host=perfbox run=sample: 3200 samples"), "{out}");
    // A second host's runs, added without rewriting the first ones.
    let before = std::fs::read(ds.join("host=perfbox/run=sample/samples.parquet")).unwrap();
    ok(&["export", "parquet", s(&run), s(&w), "-o", s(&ds), "--append", "--hostname", "lab2"]);
    assert_eq!(std::fs::read(ds.join("host=perfbox/run=sample/samples.parquet")).unwrap(), before);

    let Some(runs) = duckdb(&ds, "runs", &[]) else { return };
    let kinds: Vec<(String, String, String)> = runs
        .iter()
        .map(|r| (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into(), r[3].as_str().unwrap().into()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("lab2".into(), "run".into(), "sampler".into()),
            ("lab2".into(), "w".into(), "winidea".into()),
            ("perfbox".into(), "sample".into(), "tb5".into()),
            ("unknown".into(), "tasks".into(), "mtmc".into()),
        ]
    );

    // Samples per module of each run, and across hosts.
    let want_sample = modules(&report(&[s(&sample), "--by", "module"]));
    let want_run = modules(&report(&[s(&run), "--by", "module"]));
    assert_eq!(pairs(&duckdb(&ds, "modules_of_run", &["sample"]).unwrap()), want_sample);
    assert_eq!(pairs(&duckdb(&ds, "modules_of_run", &["run"]).unwrap()), want_run);
    // Across hosts: every stream with addresses (sample.tb5's lock waits too).
    let mut across = want_sample.clone();
    let locks = modules(&report(&[s(&sample), "--stream", "1", "--by", "module"]));
    for (m, n) in locks.iter().chain(&want_run) {
        *across.entry(m.clone()).or_default() += n;
    }
    let top = duckdb(&ds, "top_modules", &[]).unwrap();
    assert_eq!(pairs(&top), across);
    assert!(top.windows(2).all(|w| w[0][1].as_u64() >= w[1][1].as_u64()), "ordered by samples: {top:?}");

    // The difference between two runs: each module's percent in each report.
    let pct = |r: &Value| -> BTreeMap<String, f64> {
        let total = r["samples"].as_f64().unwrap();
        modules(r).into_iter().map(|(m, n)| (m, n as f64 * 100.0 / total)).collect()
    };
    let (a, b) = (pct(&report(&[s(&sample), "--by", "module"])), pct(&report(&[s(&run), "--by", "module"])));
    let diff = duckdb(&ds, "run_diff", &["sample", "run"]).unwrap();
    assert_eq!(diff.len(), a.keys().chain(b.keys()).collect::<std::collections::BTreeSet<_>>().len());
    for r in &diff {
        let m = r[0].as_str().unwrap();
        assert_eq!(r[1].as_u64().unwrap(), want_sample.get(m).copied().unwrap_or(0), "{m}");
        assert_eq!(r[2].as_u64().unwrap(), want_run.get(m).copied().unwrap_or(0), "{m}");
        let change = b.get(m).copied().unwrap_or(0.0) - a.get(m).copied().unwrap_or(0.0);
        assert!((r[3].as_f64().unwrap() - change).abs() < 0.006, "{m}: {r:?} against {change}");
    }

    // Tasks whose backend bound exceeds 80 % (and every task, with 0).
    let tr = report(&[s(&tasks), "--by", "task"]);
    for limit in [80.0, 0.0] {
        let want: Vec<(u64, u64, u64, u64, u64, f64)> = tr["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| {
                let td = &r["task"]["topdown"];
                let bb = td["backend_bound"].as_f64()?;
                let k = &r["key"];
                (bb > limit).then(|| {
                    (
                        k["index"].as_u64().unwrap(),
                        k["tid"].as_u64().unwrap(),
                        k["core"].as_u64().unwrap(),
                        k["start_ns"].as_u64().unwrap(),
                        r["task"]["duration_ns"].as_u64().unwrap(),
                        bb,
                    )
                })
            })
            .collect();
        let got: Vec<(u64, u64, u64, u64, u64, f64)> = duckdb(&ds, "backend_bound", &[&limit.to_string()])
            .unwrap()
            .iter()
            .map(|r| {
                assert_eq!(r[0], "tasks");
                let u = |i: usize| r[i].as_u64().unwrap();
                (u(1), u(2), u(3), u(4), u(5), r[6].as_f64().unwrap())
            })
            .collect();
        assert_eq!(got, want, "backend bound > {limit}");
        assert!(!got.is_empty(), "the document's task is backend bound (89.8 %)");
    }

    // winIDEA records per thread (context), stream 1 as the README reports it.
    let wr = report(&[s(&w), "--stream", "1"]);
    let want: BTreeMap<u64, u64> = wr["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["key"]["tid"].as_u64().unwrap(), r["samples"].as_u64().unwrap()))
        .collect();
    let got: BTreeMap<u64, u64> = duckdb(&ds, "threads_of_run", &["w", "1"])
        .unwrap()
        .iter()
        .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()))
        .collect();
    assert_eq!(got, want);
}

/// Column `name` of a Parquet file as i64 values (nulls as `None`).
fn column(path: &Path, name: &str) -> Vec<Option<i64>> {
    let f = std::fs::File::open(path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap();
    let mut v = Vec::new();
    for b in reader {
        let b = b.unwrap();
        let c = b.column_by_name(name).unwrap().as_primitive::<Int64Type>();
        v.extend(c.iter());
    }
    v
}

fn column32(path: &Path, name: &str) -> Vec<i32> {
    let f = std::fs::File::open(path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap();
    let mut v = Vec::new();
    for b in reader {
        let b = b.unwrap();
        v.extend(b.column_by_name(name).unwrap().as_primitive::<Int32Type>().iter().map(Option::unwrap));
    }
    v
}

#[test]
fn samples_are_every_record_in_time_order_with_partitions_and_tables() {
    let t = tempfile::tempdir().unwrap();
    let ds = t.path().join("ds");
    let sample = shipped("examples/data/sample.tb5");
    ok(&["export", "parquet", s(&sample), "-o", s(&ds)]);
    let part = ds.join("host=perfbox/run=sample/samples.parquet");
    let times: Vec<i64> = column(&part, "time").into_iter().map(Option::unwrap).collect();
    let streams = column32(&part, "stream");
    let records: Vec<i64> = column(&part, "record").into_iter().map(Option::unwrap).collect();
    let f = Tb5File::open(&sample).unwrap();
    for n in 0..f.stream_count() {
        let len = f.stream(n).unwrap().data().unwrap().unwrap().len();
        let rows: Vec<usize> = (0..times.len()).filter(|&i| streams[i] == n as i32).collect();
        assert_eq!(rows.len() as u64, len, "stream {n}");
        assert!(rows.windows(2).all(|w| w[0] + 1 == w[1]), "stream {n} in one piece");
        assert!(rows.windows(2).all(|w| times[w[0]] <= times[w[1]]), "stream {n} sorted by time");
        let mut rec: Vec<i64> = rows.iter().map(|&i| records[i]).collect();
        rec.sort_unstable();
        assert!(rec.iter().enumerate().all(|(i, r)| *r == i as i64), "stream {n}: each record once");
    }
    for table in ["runs", "samples", "intervals", "modules", "processes", "threads", "events", "functions", "stacks"] {
        let p = ds.join(format!("host=perfbox/run=sample/{table}.parquet"));
        assert!(p.is_file(), "{}", p.display());
    }
    assert!(ds.join("_tbrw_dataset.json").is_file());
    // The module table as the file has it.
    let modules = column(&ds.join("host=perfbox/run=sample/modules.parquet"), "pid");
    assert_eq!(modules.len() as u64, f.modules().unwrap().unwrap().len());
}

#[test]
fn output_rules_force_append_inputs_and_failures() {
    let t = tempfile::tempdir().unwrap();
    let sample = t.path().join("sample.tb5");
    std::fs::copy(shipped("examples/data/sample.tb5"), &sample).unwrap();
    let ds = t.path().join("ds");
    ok(&["export", "parquet", s(&sample), "-o", s(&ds)]);
    let again = tbrw(&["export", "parquet", s(&sample), "-o", s(&ds)]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists: add --append"), "{again:?}");
    // --force replaces the dataset: one run again, not two.
    ok(&["export", "parquet", s(&sample), "-o", s(&ds), "--force"]);
    let runs: Vec<_> = std::fs::read_dir(ds.join("host=perfbox")).unwrap().collect();
    assert_eq!(runs.len(), 1);
    // --append adds a second run of the same name under another id.
    let out = ok(&["export", "parquet", s(&sample), "-o", s(&ds), "--append"]);
    assert!(out.contains("run=sample-2"), "{out}");
    // A folder that is not a dataset is never written into or replaced.
    let other = t.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    for flag in ["--force", "--append"] {
        let o = tbrw(&["export", "parquet", s(&sample), "-o", s(&other), flag]);
        assert_eq!(o.status.code(), Some(1), "{flag}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("is not a dataset"), "{o:?}");
    }
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 1);
    // --force never replaces a dataset holding an input.
    let inside = ds.join("input.tb5");
    std::fs::copy(&sample, &inside).unwrap();
    let o = tbrw(&["export", "parquet", s(&inside), "-o", s(&ds), "--force"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("holds the input"), "{o:?}");
    assert!(inside.is_file());
    // A bad input among good ones: nothing is written, nothing left behind.
    let bad = t.path().join("bad.tb5");
    std::fs::write(&bad, b"not a TB5 file").unwrap();
    let fresh = t.path().join("fresh");
    let o = tbrw(&["export", "parquet", s(&sample), s(&bad), "-o", s(&fresh)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.tb5"), "{o:?}");
    assert!(!fresh.exists());
    let o = tbrw(&["export", "parquet", s(&sample), s(&bad), "-o", s(&ds), "--append"]);
    assert_eq!(o.status.code(), Some(1));
    let mut names: Vec<String> =
        std::fs::read_dir(t.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["bad.tb5", "ds", "other", "sample.tb5"]);
    let partial = std::fs::read_dir(&ds).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().contains("partial"));
    assert!(!partial);
    // A file where the folder should be.
    let o = tbrw(&["export", "parquet", s(&sample), "-o", s(&sample)]);
    assert_eq!(o.status.code(), Some(1));
}

/// Functions: a program built here, samples placed in its two functions
/// with a nanosecond clock; the share query per time bucket equals `tbrw
/// report --by function --time` on each bucket.
#[test]
fn a_functions_share_per_run_over_time() {
    let t = tempfile::tempdir().unwrap();
    let source = "volatile long sink;\n__attribute__((noinline)) void spin_a(long n) { for (long i = 0; i < n; i++) sink += i; }\n\
         __attribute__((noinline)) void spin_b(long n) { for (long i = 0; i < n; i++) sink ^= i; }\n\
         int main(void) { spin_a(10); spin_b(10); return 0; }\n";
    let Some(prog) = build_prog(t.path(), "prog.c", source, &["-g", "-O1"]) else { return };
    let (a, b) = (elf_symbol(&prog, "spin_a").0, elf_symbol(&prog, "spin_b").0);
    let base = 0x5600_0000_0000u64;
    // Two runs of 1000 samples over 1 s: spin_a takes 80 % then 40 % (run 1),
    // 20 % throughout (run 2).
    let runs = [("one", [8u64, 4]), ("two", [2, 2])];
    let ds = t.path().join("ds");
    let mut files = Vec::new();
    for (name, tenths) in runs {
        let samples: Vec<(u64, u64)> = (0..1000u64)
            .map(|i| {
                let half = usize::from(i >= 500);
                let pc = if i % 10 < tenths[half] { base + a } else { base + b };
                (1_700_000_000_000_000_000 + i * 1_000_000, pc)
            })
            .collect();
        let path = t.path().join(format!("{name}.tb5"));
        write_tb5(&path, s(&prog), base, &samples);
        files.push(path);
    }
    let mut args = vec!["export", "parquet", "--functions", "-o", s(&ds)];
    args.extend(files.iter().map(|p| s(p)));
    ok(&args);
    let bucket = 500_000_000u64;
    let Some(rows) = duckdb(&ds, "function_share", &["spin_a", &bucket.to_string()]) else { return };
    assert_eq!(rows.len(), 4, "{rows:?}");
    for r in &rows {
        let (run, lo) = (r[0].as_str().unwrap(), r[1].as_u64().unwrap());
        let file = t.path().join(format!("{run}.tb5"));
        let range = format!("{lo}..{}", lo + bucket);
        let rep = report(&[s(&file), "--by", "function", "--time", &range]);
        let hits = rep["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["key"]["name"] == "spin_a")
            .map_or(0, |x| x["samples"].as_u64().unwrap());
        assert_eq!(r[2].as_u64().unwrap(), hits, "{r:?}");
        assert_eq!(r[3].as_u64().unwrap(), rep["samples"].as_u64().unwrap(), "{r:?}");
    }
    let shares: Vec<f64> = rows.iter().map(|r| r[4].as_f64().unwrap()).collect();
    assert_eq!(shares, [80.0, 40.0, 20.0, 20.0]);
}

/// A TB5 file with one module (`prog` loaded at `base`) and a stream of
/// (ns time, pc) samples of pid 1.
fn write_tb5(path: &Path, prog: &str, base: u64, samples: &[(u64, u64)]) {
    let mut w = Tb5Writer::create(path).unwrap();
    let os = Os { platform: os_family::LINUX64, name: Some("Linux".into()), ..Default::default() };
    write_globals(&mut w, &Software { host: None, os: Some(os), application: None }).unwrap();
    let module = Module {
        associated_pid: 1,
        flags: ModuleFlags::LOADED | ModuleFlags::FIRST_MODULE_REC_IN_PROCESS,
        segment_type: processor_mode::BIT64,
        load_address: base,
        length: 0x10_0000,
        unload_tsc: NEVER_UNLOADED,
        name: Some("prog".into()),
        path: Some(prog.to_owned()),
        ..Default::default()
    };
    w.write_modules(&[module]).unwrap();
    let mut st = w
        .stream(0)
        .unwrap()
        .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })
        .unwrap()
        .data_descriptor(&[
            field(desc_type::TIME_STAMP, desc_subtype::TS_NANOSECONDS, 8, "time_realtime_ns"),
            field(desc_type::IP, desc_subtype::NONE, 8, "pc"),
            field(desc_type::PID, desc_subtype::NONE, 4, "pid"),
            field(desc_type::TID, desc_subtype::NONE, 4, "tid"),
        ])
        .unwrap();
    st.events(&[Event { id: 0, flags: EventFlags::TBS, name: Some("cpu-clock".into()), ..Default::default() }])
        .unwrap();
    let mut data = st.data().unwrap();
    let mut bytes = Vec::new();
    for &(time, pc) in samples {
        bytes.extend_from_slice(&time.to_le_bytes());
        bytes.extend_from_slice(&pc.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
    }
    data.add(&bytes).unwrap();
    data.done().unwrap();
    st.finish().unwrap();
    w.close().unwrap();
}

/// A stream out of time order, larger than the sort's chunk (set small by
/// its environment variable, so the sorted chunks are spilled and merged):
/// DuckDB reads the run back in time order, ties in record order, every
/// record once, with the per-module counts of `tbrw report`.
#[test]
fn an_unsorted_stream_larger_than_a_sort_chunk_comes_out_in_time_order() {
    let t = tempfile::tempdir().unwrap();
    let base = 0x5600_0000_0000u64;
    // 5000 records over 1000 distinct times (each five times), in a
    // scrambled order; one in three outside the module.
    let n = 5000u64;
    let samples: Vec<(u64, u64)> = (0..n)
        .map(|i| {
            let time = 1_700_000_000_000_000_000 + ((i * 7919) % 1000) * 1_000_000;
            let pc = if i % 3 == 0 { 0x1000 + i } else { base + (i * 64) % 0x10_0000 };
            (time, pc)
        })
        .collect();
    let file = t.path().join("shuffled.tb5");
    write_tb5(&file, "/nonexistent/prog", base, &samples);
    let ds = t.path().join("ds");
    let o = Command::new(env!("CARGO_BIN_EXE_tbrw"))
        .args(["export", "parquet", s(&file), "-o", s(&ds)])
        .env("TBRW_PARQUET_SORT_RECORDS", "700")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // Read back with the parquet crate: the stable sort by time of the records.
    let part = ds.join("host=unknown/run=shuffled/samples.parquet");
    let times: Vec<i64> = column(&part, "time").into_iter().map(Option::unwrap).collect();
    let records: Vec<i64> = column(&part, "record").into_iter().map(Option::unwrap).collect();
    let mut want: Vec<u64> = (0..n).collect();
    want.sort_by_key(|&k| samples[k as usize].0);
    assert_eq!(records, want.iter().map(|&k| k as i64).collect::<Vec<_>>());
    assert_eq!(times, want.iter().map(|&k| samples[k as usize].0 as i64).collect::<Vec<_>>());

    // The spilled chunks were unnamed temporary files: nothing beside the output.
    let mut names: Vec<String> =
        std::fs::read_dir(t.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["ds", "shuffled.tb5"]);
    // Where no temporary file can be made, the error names the file, the
    // stream and the folder, and nothing is written.
    let o = Command::new(env!("CARGO_BIN_EXE_tbrw"))
        .args(["export", "parquet", s(&file), "-o", s(&t.path().join("no"))])
        .env("TBRW_PARQUET_SORT_RECORDS", "700")
        .env("TMPDIR", t.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("shuffled.tb5: stream 0: sorting its 5000 records by time") && err.contains("missing"),
        "{err}"
    );
    assert!(!t.path().join("no").exists());
    // A bad chunk size is refused before anything is written.
    let o = Command::new(env!("CARGO_BIN_EXE_tbrw"))
        .args(["export", "parquet", s(&file), "-o", s(&t.path().join("no"))])
        .env("TBRW_PARQUET_SORT_RECORDS", "0")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("TBRW_PARQUET_SORT_RECORDS"), "{o:?}");
    let after: Vec<String> =
        std::fs::read_dir(t.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(after.len(), 2, "the failed exports left {after:?}");

    let Some(order) = duckdb(&ds, "time_order", &[]) else { return };
    assert_eq!(order.len(), 1, "{order:?}");
    let r = &order[0];
    assert_eq!((r[0].as_str().unwrap(), r[1].as_u64().unwrap()), ("shuffled", 0));
    let count = |i: usize| r[i].as_u64().unwrap();
    assert_eq!(
        (count(2), count(3), count(4), count(5)),
        (n, 0, 0, n),
        "rows, backwards, ties reordered, distinct records"
    );
    let rep = report(&[s(&file), "--by", "module"]);
    assert_eq!(rep["samples"].as_u64().unwrap(), n);
    let by_module = pairs(&duckdb(&ds, "modules_of_run", &["shuffled"]).unwrap());
    assert_eq!(by_module, modules(&rep));
    assert_eq!(by_module.len(), 2, "{by_module:?}");
}

/// A winIDEA export of calls in three contexts, a function calling another
/// in every other job, imported: the `intervals` rows are its calls with
/// the names, start and end, net and gross times they were written with,
/// and the calls per context (thread) and per function equal `tbrw
/// report`'s on the same file.
#[test]
fn winidea_calls_are_intervals_with_the_reports_counts() {
    let contexts = ["TSK: a", "TSK: b", "ISR: c"];
    let mut text = String::from("* INFO %TOTAL_TIME%\n100000\n\n* CONTEXTS %HANDLE%,%NAME%\n");
    for (i, c) in contexts.iter().enumerate() {
        text += &format!("{i:#x},{c}\n");
    }
    text += "\n* HANDLE(Functions) %NAME%,%HANDLE%\n";
    for h in 0..4 {
        text += &format!("fn_{h},{h:08X}\n");
    }
    text += "\n* TIMELINE %TIME%,%CONTEXT%,%EVENT%,%HANDLE%,%VALUE%\n";
    // (name, context, start, end, net, gross), in exit order as the import stores them.
    let mut calls: Vec<(String, u64, i64, i64, i64, i64)> = Vec::new();
    let mut t = 1000i64;
    for i in 0..90u32 {
        let (c, f) = (i % 3, (i * 5 + i / 3) % 4);
        let mut ev = |t: i64, e: char, h: u32| text += &format!("{t},{},{e},{h:08X},\n", contexts[c as usize]);
        let start = t;
        ev(t, 'E', f);
        t += 10 + i64::from(i % 7);
        let mut inner = 0;
        if i % 2 == 0 {
            let g = (f + 1) % 4;
            ev(t, 'S', f);
            ev(t, 'E', g);
            let d = 5 + i64::from(i % 4);
            calls.push((format!("fn_{g}"), u64::from(c), t, t + d, d, d));
            t += d;
            ev(t, 'X', g);
            ev(t, 'R', f);
            inner = d;
        }
        t += 20;
        ev(t, 'X', f);
        calls.push((format!("fn_{f}"), u64::from(c), start, t, t - start - inner, t - start));
        t += 3;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("calls.txt");
    std::fs::write(&src, text).unwrap();
    let file = dir.path().join("calls.tb5");
    ok(&["import", "winidea", s(&src), "-o", s(&file)]);
    let ds = dir.path().join("ds");
    ok(&["export", "parquet", s(&file), "-o", s(&ds)]);

    let Some(rows) = duckdb(&ds, "calls_of_run", &["calls", "0"]) else { return };
    let got: Vec<(String, u64, i64, i64, i64, i64)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            assert_eq!(r[0].as_u64(), Some(i as u64), "record order: {r:?}");
            let n = |j: usize| r[j].as_i64().unwrap();
            (r[1].as_str().unwrap().to_owned(), r[2].as_u64().unwrap(), n(3), n(4), n(5), n(6))
        })
        .collect();
    assert_eq!(got, calls);

    // Per context, as `tbrw report --stream 0` (by thread) counts them.
    let by_thread = |r: &Value| -> BTreeMap<u64, u64> {
        r["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (x["key"]["tid"].as_u64().unwrap(), x["samples"].as_u64().unwrap()))
            .collect()
    };
    let want = by_thread(&report(&[s(&file), "--stream", "0", "--by", "thread"]));
    let threads: BTreeMap<u64, u64> = duckdb(&ds, "threads_of_run", &["calls", "0"])
        .unwrap()
        .iter()
        .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()))
        .collect();
    assert_eq!(threads, want);
    assert_eq!(threads.len(), 3);
    assert_eq!(threads.values().sum::<u64>(), calls.len() as u64);
    // Per function, as `tbrw report --by event` counts them.
    let rep = report(&[s(&file), "--stream", "0", "--by", "event"]);
    let want: BTreeMap<String, u64> = rep["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["key"]["name"].as_str().unwrap().to_owned(), x["samples"].as_u64().unwrap()))
        .collect();
    let by_name = duckdb(&ds, "calls_by_name", &["calls", "0"]).unwrap();
    assert_eq!(pairs(&by_name), want);
    assert_eq!(want.len(), 4, "{want:?}");
    for r in &by_name {
        let name = r[0].as_str().unwrap();
        let net: i64 = calls.iter().filter(|c| c.0 == name).map(|c| c.4).sum();
        assert_eq!(r[2].as_i64(), Some(net), "{name}");
    }
}

/// `perf record` of a program built here, with two events, imported with
/// `tbrw import perf`: samples per module and per event equal `tbrw report
/// --by module` and `--by event`. Skipped, with a note, where `cc` or `perf record` fail.
#[test]
fn a_perf_import_counts_per_event_and_module_as_tbrw_report() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("spin.c");
    std::fs::write(
        &src,
        "#include <math.h>\n#include <stdlib.h>\nvolatile double sink;\n\
         int main(void) { double s = 0; for (long i = 0; i < 4000000L; i++) s += sin((double)i);\n\
         char *p = malloc(1 << 24); for (int r = 0; r < 8; r++) for (int i = 0; i < (1 << 24); i += 64) p[i] += r;\n\
         sink = s + p[64]; free(p); return 0; }\n",
    )
    .unwrap();
    let prog = t.path().join("spin");
    let cc = Command::new("cc").args(["-O1", "-o"]).arg(&prog).arg(&src).arg("-lm").output();
    if !cc.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("note: cc cannot build the test program: test skipped");
        return;
    }
    let data = t.path().join("spin.data");
    let rec = Command::new("perf")
        .args(["record", "-N", "-F", "2000", "-e", "cpu-clock,task-clock", "-o"])
        .arg(&data)
        .arg(&prog)
        .output();
    match rec {
        Ok(o) if o.status.success() && data.exists() => {}
        Ok(o) => {
            eprintln!("note: perf record failed ({}): test skipped", String::from_utf8_lossy(&o.stderr).trim());
            return;
        }
        Err(e) => {
            eprintln!("note: perf cannot run ({e}): test skipped");
            return;
        }
    }
    let file = t.path().join("spin.tb5");
    ok(&["import", "perf", s(&data), "-o", s(&file)]);
    let ds = t.path().join("ds");
    ok(&["export", "parquet", s(&file), "-o", s(&ds)]);

    // Per module and per event (the report groups by one or the other).
    let Some(by_module) = duckdb(&ds, "modules_of_run", &["spin"]) else { return };
    let rep = report(&[s(&file), "--by", "module"]);
    assert_eq!(pairs(&by_module), modules(&rep));
    assert!(rep["samples"].as_u64().unwrap() > 20, "too few samples to compare: {rep}");
    let by_event = report(&[s(&file), "--by", "event"]);
    let want: BTreeMap<String, u64> = by_event["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["key"]["name"].as_str().unwrap().to_owned(), x["samples"].as_u64().unwrap()))
        .collect();
    let got = pairs(&duckdb(&ds, "events_of_run", &["spin"]).unwrap());
    assert_eq!(got, want);
    assert_eq!(got.keys().collect::<Vec<_>>(), ["cpu-clock", "task-clock"]);
    // The run's kind and sample count as the report has them.
    let runs = duckdb(&ds, "runs", &[]).unwrap();
    assert_eq!(runs[0][3], "perf");
    assert_eq!(runs[0][4].as_u64(), rep["samples"].as_u64());
}

/// `perf record -g` of a program built here whose two threads of work go
/// through known call chains, imported (a stack table) and exported with
/// `--functions`: the `stacks` table has one row per node, parents before
/// children, and the documented query of the top inclusive functions (a
/// recursive CTE over the stack nodes) gives per function what the folded
/// flame graph (`tbrw export flamegraph --folded --by function`) counts:
/// the samples whose stack holds it. Skipped, with a note, where `cc` or
/// `perf record -g` fail.
#[test]
fn a_perf_g_import_has_stacks_and_inclusive_functions_as_the_flame_graph() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("chains.c");
    std::fs::write(
        &src,
        "#include <math.h>\nvolatile double sink;\n\
         __attribute__((noinline)) void leaf_work(int n) { double s = 0; for (int i = 0; i < n; i++) s += sin(i); sink += s; }\n\
         __attribute__((noinline)) void middle_a(int n) { leaf_work(n); sink += 1; }\n\
         __attribute__((noinline)) void middle_b(int n) { leaf_work(2 * n); sink += 1; }\n\
         __attribute__((noinline)) void outer(int k) { if (k % 3) middle_a(20000); else middle_b(20000); }\n\
         int main(void) { for (int k = 0; k < 1500; k++) outer(k); return 0; }\n",
    )
    .unwrap();
    let prog = t.path().join("chains");
    let cc = Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&prog)
        .arg(&src)
        .arg("-lm")
        .output();
    if !cc.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("note: cc cannot build the test program: test skipped");
        return;
    }
    let data = t.path().join("chains.data");
    let rec = Command::new("perf").args(["record", "-N", "-F", "4000", "-g", "-o"]).arg(&data).arg(&prog).output();
    match rec {
        Ok(o) if o.status.success() && data.exists() => {}
        Ok(o) => {
            eprintln!("note: perf record -g failed ({}): test skipped", String::from_utf8_lossy(&o.stderr).trim());
            return;
        }
        Err(e) => {
            eprintln!("note: perf cannot run ({e}): test skipped");
            return;
        }
    }
    let file = t.path().join("chains.tb5");
    ok(&["import", "perf", s(&data), "-o", s(&file)]);
    ok(&["verify", s(&file)]);
    let f = Tb5File::open(&file).unwrap();
    // The call chains are a stack table, not a stream of frames: in Intel's
    // layout (the default) the table is stream 1, a custom stream that says
    // whose table it is (docs/FORMAT.md, "This project's sections in Intel's layout").
    assert_eq!(f.stream_count(), 2, "stream 0 and its stack table");
    let info = f.stream(1).unwrap().info().unwrap().unwrap();
    assert_eq!(f.string(info.comment).unwrap(), "tbrw stack table 01 of data stream 0000");
    let nodes = f.stream(0).unwrap().stack_table().unwrap().expect("a stack table").len();
    let ds = t.path().join("ds");
    ok(&["export", "parquet", s(&file), "-o", s(&ds), "--functions", "--search-path", s(t.path())]);

    // The stacks table: ids 0..n in order, every parent before its child,
    // depth one more than the parent's; every sample's stack one of them.
    let part = std::fs::read_dir(&ds)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("host="))
        .unwrap()
        .join("run=chains");
    let ids = column32(&part.join("stacks.parquet"), "stack_id");
    let parents = column_opt32(&part.join("stacks.parquet"), "parent");
    let depths = column32(&part.join("stacks.parquet"), "depth");
    // A row per node of the walk, plus one per function inlined at a
    // node's address (inline_depth above 0, docs/PARQUET.md).
    let inline_depths = column32(&part.join("stacks.parquet"), "inline_depth");
    let frames = inline_depths.iter().filter(|&&d| d == 0).count() as u64;
    assert!(!ids.is_empty() && frames <= nodes, "{frames} frames for {nodes} nodes ({} rows)", ids.len());
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(*id, i as i32);
        match parents[i] {
            None => assert_eq!(depths[i], 0),
            Some(p) => {
                assert!(p < *id, "node {id}'s parent {p}");
                assert_eq!(depths[i], depths[p as usize] + 1);
            }
        }
    }
    let stack_ids = column_opt32(&part.join("samples.parquet"), "stack_id");
    assert!(stack_ids.iter().all(|s| s.is_some_and(|s| (s as usize) < ids.len())), "every sample has a stack");

    // Inclusive per function: the folded stacks holding it.
    let folded = t.path().join("f.folded");
    ok(&[
        "export",
        "flamegraph",
        s(&file),
        "--folded",
        "--by",
        "function",
        "-o",
        s(&folded),
        "--search-path",
        s(t.path()),
    ]);
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for line in std::fs::read_to_string(&folded).unwrap().lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let names: std::collections::BTreeSet<&str> = stack.split(';').filter(|f| !f.starts_with('[')).collect();
        for f in names {
            *want.entry(f.to_owned()).or_default() += n.parse::<u64>().unwrap();
        }
    }
    let Some(rows) = duckdb(&ds, "inclusive_functions", &["chains"]) else { return };
    let got = pairs(&rows);
    assert_eq!(got, want);
    let total = report(&[s(&file)])["samples"].as_u64().unwrap();
    assert!(total > 50, "too few samples to compare: {total}");
    for f in ["main", "outer"] {
        assert!(got.get(f).is_some_and(|&n| n * 10 > total * 8), "{f} holds most samples: {got:?} of {total}");
    }
    // (Frame-pointer unwinding loses leaf_work under libm's sin, which keeps
    // no frame: its samples are middle_a's and middle_b's.)
    assert!(got["middle_a"] > total / 10 && got["middle_b"] > total / 10, "{got:?}");
}

fn column_opt32(path: &Path, name: &str) -> Vec<Option<i32>> {
    let f = std::fs::File::open(path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap();
    let mut v = Vec::new();
    for b in reader {
        let b = b.unwrap();
        v.extend(b.column_by_name(name).unwrap().as_primitive::<Int32Type>().iter());
    }
    v
}
