//! `tbrw report --json`: one shape for every grouping (`--by task`
//! included), parsed back with serde_json; keys are structured fields, not
//! display labels; any name, control characters included, stays valid JSON.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tbrw_elf_profile::{write_header, write_sample, Header};
use tbrw_elf_profile::{Magic, Sample, ThreadSample, VmMap};
use tbrw_import::elf_profile::{import_profile, ImportOptions};
use tbrw_query::report::{Report, ReportOptions};
use tbrw_query::By;

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/sample.tb5")
}

/// The binary's stdout for `tbrw report FILE ARGS...`, checked to succeed.
fn run(file: &Path, args: &[&str]) -> Vec<u8> {
    let o = Command::new(env!("CARGO_BIN_EXE_tbrw")).arg("report").arg(file).args(args).output().unwrap();
    assert!(o.status.success(), "report {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

fn json(file: &Path, args: &[&str]) -> Value {
    let out = run(file, args);
    assert_eq!(out.last(), Some(&b'\n'), "one line");
    serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out)))
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

/// The fields every report has, whatever it is grouped by.
fn check_top_level(v: &Value, by: &str, records: u64) {
    assert_eq!(keys(v), ["by", "file", "records", "rows", "samples", "stream", "totals"], "{v}");
    assert_eq!(v["by"], by);
    assert_eq!(v["stream"], 0);
    assert_eq!(v["records"], records);
    assert!(v["file"].as_str().unwrap().ends_with(".tb5"), "{v}");
}

#[test]
fn every_sample_grouping_has_one_shape_with_structured_keys() {
    let file = sample();
    for by in ["process", "thread", "module", "event"] {
        let v = json(&file, &["--by", by, "--json"]);
        check_top_level(&v, by, 3000);
        assert_eq!(v["samples"], 3000);
        assert_eq!(v["totals"], Value::Array(Vec::new()), "only task reports have totals");
        let rows = v["rows"].as_array().unwrap();
        assert!(rows.len() >= 2, "{v}");
        let sum: u64 = rows.iter().map(|r| r["samples"].as_u64().unwrap()).sum();
        assert_eq!(sum, 3000);
        let percent: f64 = rows.iter().map(|r| r["percent"].as_f64().unwrap()).sum();
        assert!((percent - 100.0).abs() < 1e-9, "{percent}");
        for r in rows {
            assert_eq!(keys(r), ["key", "percent", "samples"], "no label, no task figures: {r}");
            let k = &r["key"];
            let want: &[&str] = match (by, k["kind"].as_str().unwrap()) {
                ("process", "process") => &["index", "kind", "name", "pid"],
                ("thread", "thread") => &["index", "kind", "name", "pid", "tid"],
                ("module", "module") => &["index", "kind", "name", "path", "pid"],
                ("module", "unknown_module") => &["kind"],
                ("event", "event") => &["id", "kind", "name"],
                (_, kind) => panic!("--by {by} has a {kind} row: {r}"),
            };
            assert_eq!(keys(k), want, "{r}");
        }
        // Parsed back into the library's own types, it is the same report.
        let typed: Report = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap(), v);
    }
    let v = json(&file, &["--by", "process", "--json"]);
    let app = v["rows"].as_array().unwrap().iter().find(|r| r["key"]["pid"] == 1000).unwrap();
    assert_eq!((&app["key"]["name"], &app["samples"]), (&Value::from("app"), &Value::from(1541)));
    let v = json(&file, &["--by", "thread", "--pid", "1001", "--json"]);
    assert!(v["rows"].as_array().unwrap().iter().all(|r| r["key"]["pid"] == 1001), "{v}");
    let v = json(&file, &["--by", "module", "--json"]);
    let vmlinux = v["rows"].as_array().unwrap().iter().find(|r| r["key"]["name"] == "vmlinux-6.1.0-18-amd64");
    assert_eq!(vmlinux.unwrap()["key"]["pid"], 0, "{v}");
    assert_eq!(json(&file, &["--top", "1", "--json"])["rows"].as_array().unwrap().len(), 1);
}

#[test]
fn the_library_writes_what_the_binary_prints() {
    let file = sample();
    for json in [false, true] {
        let mut out = Vec::new();
        let opts = ReportOptions::new(Default::default(), &[By::Event]);
        let mut seen = 0;
        let f = tbrw::Tb5File::open(&file).unwrap();
        let r = tbrw_query::report::run(&f, &opts, &mut Vec::new(), &mut |done| seen = done).unwrap();
        if json {
            tbrw_query::report::write_json(&r, &mut out).unwrap();
        } else {
            tbrw_query::report::write_table(&r, &mut out).unwrap();
        }
        assert_eq!(seen, 3000);
        let args: &[&str] = if json { &["--by", "event", "--json"] } else { &["--by", "event"] };
        assert_eq!(out, run(&file, args));
    }
}

#[test]
fn the_task_report_has_the_same_shape() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tasks.tb5");
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mtmc/doc_example.log");
    let mut w = tbrw::Tb5Writer::create(&out).unwrap();
    let log_file = std::fs::File::open(&log).unwrap();
    tbrw_import::mtmc::import_mtmc(log_file, &log.display().to_string(), &mut w, &Default::default(), ()).unwrap();
    w.close().unwrap();
    let v = json(&out, &["--by", "task", "--json"]);
    check_top_level(&v, "task", 1);
    assert_eq!(v["samples"], 1);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let task = &rows[0];
    assert_eq!(keys(task), ["key", "percent", "samples", "task"]);
    assert_eq!(task["key"]["kind"], "task");
    assert_eq!(
        (&task["key"]["index"], &task["key"]["tid"], &task["key"]["core"], &task["key"]["start_ns"]),
        (&Value::from(0), &Value::from(1107138), &Value::from(12), &Value::from(1662113994732217088u64))
    );
    assert_eq!((&task["samples"], &task["percent"]), (&Value::from(1), &Value::from(100.0)));
    let t = &task["task"];
    assert_eq!(t["duration_ns"], 1662113994733739014u64 - 1662113994732217088);
    let deltas: Vec<u64> = t["counter_deltas"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
    assert_eq!(deltas.len(), 8);
    assert_eq!(deltas[0], 1734269057 - 1731201101);
    assert_eq!(deltas[7], 6987354 - 6979630);
    // The same figures as the text report, which rounds them.
    let text = String::from_utf8(run(&out, &["--by", "task"])).unwrap();
    let td = &t["topdown"];
    for name in ["retiring", "bad_speculation", "frontend_bound", "backend_bound"] {
        let pct = td[name].as_f64().unwrap_or_else(|| panic!("{name}: {td}"));
        assert!(text.contains(&format!("{name}={pct:.2}%")), "{name} {pct}: {text}");
    }
    assert!(td["slots"].as_u64().unwrap() > 0);
    // Totals: the task's thread (named from the thread table), then its core.
    let totals = v["totals"].as_array().unwrap();
    assert_eq!(totals.len(), 2, "{v}");
    assert_eq!(totals[0]["key"]["kind"], "thread");
    assert_eq!(totals[0]["key"]["tid"], 1107138);
    assert_eq!(totals[0]["key"]["name"], "pthread 0x5f7ee700");
    assert_eq!(totals[1]["key"], serde_json::json!({"kind": "core", "core": 12}));
    for tot in totals {
        assert_eq!(tot["samples"], 1);
        assert_eq!(tot["task"]["counter_deltas"], t["counter_deltas"]);
        assert_eq!(tot["task"]["duration_ns"], t["duration_ns"]);
    }
    let typed: Report = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(typed.by, By::Task);
    assert_eq!(serde_json::to_value(&typed).unwrap(), v);
}

#[test]
fn a_module_name_with_control_characters_is_valid_json() {
    let dir = tempfile::tempdir().unwrap();
    let name = "we\u{1}ird\t\"lib\"\\\u{1b}[31m\n\u{7f}.so";
    let label = format!("/opt/{name}");
    let map = VmMap { address: 0x7f00_0000_0000, size: 0x1000, label: label.clone() };
    let mut bytes = Vec::new();
    write_header(&mut bytes, &Header { magic: Magic::Power, wall_time: 1, cpu_time: 1, samples: 3, maps: vec![map] })
        .unwrap();
    for (i, pc) in [0x7f00_0000_0010u64, 0x7f00_0000_0020, 0x10].into_iter().enumerate() {
        let threads = vec![ThreadSample { tid: 5, pc, cputime: i as u64 }];
        write_sample(&mut bytes, &Sample { value: 1.0, threads }).unwrap();
    }
    let profile = dir.path().join("p.bin");
    std::fs::write(&profile, bytes).unwrap();
    let out = dir.path().join("p.tb5");
    let mut w = tbrw::Tb5Writer::create(&out).unwrap();
    let input = std::fs::File::open(&profile).unwrap();
    let input_name = profile.display().to_string();
    import_profile(input, &input_name, &mut w, &ImportOptions::default(), &Default::default(), ()).unwrap();
    w.close().unwrap();

    let raw = run(&out, &["--by", "module", "--json"]);
    assert!(raw[..raw.len() - 1].iter().all(|&b| b >= 0x20), "control characters are escaped");
    let v: Value = serde_json::from_slice(&raw).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let module = rows.iter().find(|r| r["key"]["kind"] == "module").unwrap();
    assert_eq!(module["key"]["name"], name);
    assert_eq!(module["key"]["path"], label.as_str());
    assert_eq!((&module["key"]["pid"], &module["samples"]), (&Value::from(1), &Value::from(2)));
    assert!(rows.iter().any(|r| r["key"]["kind"] == "unknown_module" && r["samples"] == 1), "{v}");
}
