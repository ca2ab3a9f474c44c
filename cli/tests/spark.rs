//! The Spark queries of docs/PARQUET.md ("The same in Spark"), run by
//! PySpark in local mode (`cli/tests/spark_queries.py`) over a dataset of
//! two hosts and several runs, compared with `tbrw report --json` on the
//! same files and with DuckDB's answers (`cli/tests/parquet_queries.py`).
//! Skips with a note where pyspark or a Java runtime is missing; `.ci/run`
//! installs both, so CI runs it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn shipped(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn ok(args: &[&str]) -> Vec<u8> {
    let o = Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap();
    assert!(o.status.success(), "tbrw {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

/// `tbrw report FILE --by BY --json`: each row's label (`name`, else
/// `[unknown]`, or the tid) and samples.
fn report(file: &Path, by: &str) -> BTreeMap<String, u64> {
    let v: Value = serde_json::from_slice(&ok(&["report", file.to_str().unwrap(), "--by", by, "--json"])).unwrap();
    let mut m = BTreeMap::new();
    for r in v["rows"].as_array().unwrap() {
        let k = &r["key"];
        let label = match by {
            "thread" => k["tid"].to_string(),
            _ => k["name"].as_str().or(k["unknown"].as_str()).unwrap_or("[unknown]").to_owned(),
        };
        *m.entry(label).or_default() += r["samples"].as_u64().unwrap();
    }
    m
}

#[test]
fn the_documented_spark_queries_give_the_reports_answers() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("fleet");
    let collector = shipped("cli/tests/data/matrix/collector.tb5");
    let perf = shipped("cli/tests/data/matrix/perf.tb5");
    let sample = shipped("examples/data/sample.tb5");
    let tasks = dir.path().join("tasks.tb5");
    ok(&[
        "import",
        "mtmc",
        shipped("cli/tests/data/mtmc/doc_example.log").to_str().unwrap(),
        "-o",
        tasks.to_str().unwrap(),
    ]);
    // Two hosts, several runs: the collector and perf recordings on one,
    // the shipped sample and the MTMC tasks (appended) on the other.
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    ok(&["export", "parquet", &s(&collector), &s(&perf), "-o", &s(&ds), "--hostname", "box-a", "--functions"]);
    ok(&[
        "export",
        "parquet",
        &s(&sample),
        &s(&tasks),
        "-o",
        &s(&ds),
        "--hostname",
        "box-b",
        "--append",
        "--functions",
    ]);
    let o = Command::new("python3").arg(shipped("cli/tests/spark_queries.py")).arg(&ds).output();
    let o = match o {
        Ok(o) if o.status.code() == Some(3) => {
            eprintln!("note: the Spark queries were skipped: {}", String::from_utf8_lossy(&o.stderr).trim());
            return;
        }
        Ok(o) => o,
        Err(e) => {
            eprintln!("note: the Spark queries were skipped: python3 cannot run ({e})");
            return;
        }
    };
    assert!(o.status.success(), "Spark: {}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = |q: &str| v[q].as_array().unwrap().clone();
    // Per run, what the report says of its file.
    let runs = [("box-a", "collector", &collector), ("box-a", "perf", &perf), ("box-b", "sample", &sample)];
    for (host, run, file) in runs {
        let per = |q: &str, at: usize| -> BTreeMap<String, u64> {
            rows(q)
                .iter()
                .filter(|r| r[0] == host && r[1] == run)
                .map(|r| (r[2].as_str().map_or_else(|| r[2].to_string(), str::to_owned), r[at].as_u64().unwrap()))
                .collect()
        };
        assert_eq!(per("modules_per_run", 3), report(file, "module"), "{host}/{run}: samples per module");
        assert_eq!(per("threads_per_run", 3), report(file, "thread"), "{host}/{run}: samples per thread");
        // Functions: the named ones (Parquet's functions table holds names only).
        let mut named = report(file, "function");
        named.retain(|k, _| !k.starts_with('['));
        assert_eq!(per("functions_per_run", 3), named, "{host}/{run}: samples per function");
    }
    // The thread names: crunch-A's samples are all its samples.
    let a = rows("threads_per_run").into_iter().find(|r| r[0] == "box-a" && r[1] == "perf" && r[4].as_u64() > Some(0));
    let a = a.expect("perf's crunch-A thread, named in the threads table");
    assert_eq!(a[3], a[4]);
    // The MTMC tasks as calls, and the runs' own counts.
    let tasks_report: Value = serde_json::from_slice(&ok(&["report", tasks.to_str().unwrap(), "--json"])).unwrap();
    let calls: u64 = rows("calls_by_name").iter().filter(|r| r[1] == "tasks").map(|r| r[4].as_u64().unwrap()).sum();
    assert_eq!(calls, tasks_report["samples"].as_u64().unwrap());
    assert_eq!(rows("runs").len(), 4);
    // DuckDB gives the same top modules, when it is installed.
    let duck =
        Command::new("python3").arg(shipped("cli/tests/parquet_queries.py")).arg(&ds).arg("top_modules").output();
    match duck {
        Ok(d) if d.status.success() => {
            let duck: Value = serde_json::from_slice(&d.stdout).unwrap();
            assert_eq!(duck.as_array().unwrap(), &rows("top_modules"), "DuckDB and Spark");
        }
        _ => eprintln!("note: DuckDB's answer not compared: duckdb is not installed"),
    }
}
