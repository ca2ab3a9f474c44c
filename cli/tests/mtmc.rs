//! MTMC task logs: the document's example line and its reference topdown,
//! every layout the profiler writes (a writer per layout, property-tested),
//! counters that belong to CPUs (migrated tasks, resets, signed deltas),
//! the task report, CSV export, the process id, and bad input.

mod common;
#[path = "common/mtmc_writer.rs"]
mod mtmc_writer;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::check_vtune_csv;
use common::export_vtune_csv;
use common::import_mtmc_file;
use mtmc_writer::{v01, v2023, Line};
use proptest::prelude::*;
use tbrw::*;
use tbrw_export::vtune_csv::CsvOptions;
use tbrw_import::mtmc::{self, Layout, MtmcOptions, PidSource};
use tbrw_query::report::Report;
use tbrw_query::tasks::{self as tasks, topdown};
use tbrw_schema::mtmc::{counters_of, decode, record_size, Shape};

/// The example line of the MTMC document, as it is (11 in the number-of-events field: 8 readings and 3 topdown events).
const EXAMPLE: &str = "1107138,1602152192,1662113994732217088,1662113994733739014,1107181,1241265920,1662113994732206443,3786_3411785758808611119_140737493906307_18412794_13836746939049903115_140737493909085,11_12_0,1731201101_3690717719_1463852088_10519267_10356736_3476234_356044729_6979630,11_12_0,1734269057_3691050936_1466446788_13052429_12885932_5936761_358428561_6987354,";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mtmc").join(name)
}

fn import_named(name: &str, text: &str, dir: &Path) -> Result<(PathBuf, mtmc::MtmcStats), String> {
    let log = dir.join(name);
    std::fs::write(&log, text).unwrap();
    let out = dir.join("tasks.tb5");
    import_mtmc_file(&log, &out, &MtmcOptions::default()).map(|s| (out, s)).map_err(|e| e.to_string())
}

fn import(text: &str, dir: &Path) -> Result<(PathBuf, mtmc::MtmcStats), String> {
    import_named("tasks.log", text, dir)
}

fn report(out: &Path) -> Report {
    tasks::task_report(&Tb5File::open(out).unwrap(), 0, None).unwrap()
}

fn report_text(out: &Path) -> String {
    let mut text = Vec::new();
    tasks::write_task_text(&report(out), &mut text).unwrap();
    String::from_utf8(text).unwrap()
}

fn decoded(out: &Path) -> Vec<(mtmc::Task, String)> {
    let f = Tb5File::open(out).unwrap();
    f.verify().unwrap();
    let s = f.stream(0).unwrap();
    let shape = counters_of(&s.descriptor().unwrap().unwrap(), &f).unwrap();
    let events = s.events().unwrap().unwrap();
    let name = |id: u32| f.string(events.iter().find(|e| e.id == id).unwrap().name).unwrap().to_owned();
    s.data().unwrap().unwrap().records().map(|r| decode(r, shape)).map(|d| (d.task, name(d.event))).collect()
}

#[test]
fn the_shipped_example_log_is_the_documents_line() {
    assert_eq!(std::fs::read_to_string(data("doc_example.log")).unwrap(), format!("{EXAMPLE}\n"));
}

#[test]
fn the_documents_example_line_imports_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stats) = import(&format!("{EXAMPLE}\n"), dir.path()).unwrap();
    assert_eq!((stats.tasks, stats.counters, stats.threads), (1, 8, 2));
    assert_eq!(stats.layout, Some(Layout::V01));
    assert!(stats.topdown);
    assert_eq!(stats.events_field_mismatch, None, "11 = 8 readings + 3 topdown events");
    let f = Tb5File::open(&out).unwrap();
    let s = f.stream(0).unwrap();
    let descs = s.descriptor().unwrap().unwrap();
    let names: Vec<String> = descs.iter().map(|d| f.string(d.name).unwrap().to_owned()).collect();
    assert!(names.contains(&"numa_node_begin".to_owned()) && names.contains(&"topdown_uop_drop_end".to_owned()));
    assert_eq!(names.last().unwrap(), "counter7_end");
    let data = s.data().unwrap().unwrap();
    assert_eq!(data.record_size(), record_size(Shape { counters: 8, constants: 0 }));
    let (t, name) = decoded(&out).remove(0);
    assert_eq!(name, "mtmc_task");
    assert_eq!((t.tid, t.pthread, t.parent_tid, t.parent_pthread), (1107138, 1602152192, 1107181, 1241265920));
    assert_eq!((t.start, t.end, t.scheduled), (1662113994732217088, 1662113994733739014, 1662113994732206443));
    assert_eq!(
        t.topdown,
        Some([3786, 3411785758808611119, 140737493906307, 18412794, 13836746939049903115, 140737493909085])
    );
    assert_eq!((t.begin_info, t.end_info), ([11, 12, 0], [11, 12, 0]), "events, CPU, NUMA node");
    assert_eq!((t.begin[0], t.end_counters[7]), (1731201101, 6987354));
    assert_eq!(t.extra, None);
    let pt = f.processes().unwrap().unwrap();
    assert_eq!(pt.tids().map(|t| t.id).collect::<Vec<_>>(), [1107138, 1107181]);
}

#[test]
fn the_documents_line_gives_the_reference_topdown() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = import(&format!("{EXAMPLE}\n"), dir.path()).unwrap();
    let r = report(&out);
    let td = r.rows[0].task.as_ref().unwrap().topdown.clone().unwrap();
    let p3 = |v: f64| (v * 1000.0).round() / 1000.0;
    assert_eq!(
        [td.retiring, td.bad_speculation, td.frontend_bound, td.backend_bound].map(p3),
        [4.311, 1.582, 4.289, 89.818]
    );
    let l2 = td.level2.unwrap();
    assert_eq!(
        [
            l2.heavy_operations,
            l2.light_operations,
            l2.branch_mispredicts,
            l2.machine_clears,
            l2.fetch_latency,
            l2.fetch_bandwidth,
            l2.memory_bound,
            l2.core_bound
        ]
        .map(p3),
        [2.744, 1.567, -0.002, 1.584, 2.331, 1.958, 75.306, 14.512],
        "not clamped: branch mispredicts stays negative"
    );
    assert_eq!(td.slots, 18412794 - 3786);
    // The task's totals (one task) give the same.
    let tot = r.totals[0].task.as_ref().unwrap().topdown.clone().unwrap();
    assert_eq!(p3(tot.frontend_bound), 4.289);
}

fn metrics(bytes: [u8; 8]) -> u64 {
    u64::from_le_bytes(bytes)
}

#[test]
fn topdown_on_hand_computed_cases() {
    // From zero: the end bytes are the task's own shares; sum 255, no drops.
    let td = topdown(&[0, 0, 0, 255, metrics([51, 0, 102, 102, 0, 0, 0, 0]), 0]).unwrap();
    assert_eq!(td.level1, [0.2, 0.0, 0.4, 0.4]);
    assert_eq!(td.level2, None, "no level-2 bytes");
    // 1000 slots all retiring, then 3000 slots 1/3 retiring 2/3 frontend:
    // the task's 2000 slots are all frontend bound.
    let td = topdown(&[1000, metrics([255, 0, 0, 0, 0, 0, 0, 0]), 0, 3000, metrics([85, 0, 170, 0, 0, 0, 0, 0]), 0])
        .unwrap();
    assert_eq!(td.level1, [0.0, 0.0, 1.0, 0.0]);
    assert_eq!(td.slots, 2000);
    // Dropped uops move slots from frontend bound (and fetch latency) to bad speculation:
    // 100 of 1000 slots dropped, frontend 0.5 - 0.1 = 0.4, bad speculation 0.1.
    let td = topdown(&[0, 0, 5, 1000, metrics([0, 0, 128, 128, 0, 0, 128, 64]), 105]).unwrap();
    assert!((td.level1[2] - 0.4).abs() < 1e-12 && (td.level1[1] - 0.1).abs() < 1e-12, "{td:?}");
    let l2 = td.level2.unwrap();
    assert!((l2[4] - 0.4).abs() < 1e-12, "fetch latency 0.5 - 0.1: {l2:?}");
    assert!((l2[5] - 0.0).abs() < 1e-12, "fetch bandwidth = frontend - fetch latency");
    assert!((l2[6] - 0.25).abs() < 1e-12 && (l2[7] - 0.25).abs() < 1e-12, "memory and core bound halve the backend");
    assert!((l2[3] - 0.1).abs() < 1e-12, "machine clears = bad speculation - branch mispredicts");
    // No slots, or counters that went back (reset between begin and end): none.
    assert_eq!(topdown(&[500, 0, 0, 500, 0, 0]), Err(tasks::NoTopdown::NoSlots));
    assert_eq!(topdown(&[600, 0, 0, 500, 0, 0]), Err(tasks::NoTopdown::Reset));
    assert_eq!(topdown(&[0, 0, 9, 500, metrics([255, 0, 0, 0, 0, 0, 0, 0]), 3]), Err(tasks::NoTopdown::Reset));
}

/// Tasks of every shape the tests use: two CPUs, sign-extended readings.
fn sample_lines() -> Vec<Line> {
    let t0 = 1_700_000_000_123_456_789u64;
    let neg = |v: i64| v as u64;
    vec![
        Line::plain(10, t0, t0 + 500, 0, vec![1, neg(-100)], vec![1001, 50]),
        Line::plain(11, t0 + 1000, t0 + 1700, 1, vec![5, 6], vec![1005, 1006]),
        Line::plain(10, t0 + 2000, t0 + 2300, 0, vec![1001, 50], vec![2001, 1050]),
    ]
}

#[test]
fn every_layout_imports_and_reads_back() {
    let mut lines = sample_lines();
    // Parent fields 0, a task with no end, a task that migrated.
    lines[0].parent_tid = 0;
    lines[0].parent_pthread = 0;
    lines.push(Line { end: 0, ..Line::plain(12, lines[2].start + 100, 0, 1, vec![7, 8], vec![0, 0]) });
    lines.push(Line {
        cpu: [0, 1],
        ..Line::plain(13, lines[2].start + 200, lines[2].start + 900, 0, vec![9, 9], vec![3, 3])
    });
    let with_topdown: Vec<Line> = lines
        .iter()
        .map(|l| Line { topdown: Some([10, metrics([64; 8]), 1, 1010, metrics([64; 8]), 2]), ..l.clone() })
        .collect();
    let no_events: Vec<Line> =
        lines.iter().map(|l| Line { begin: vec![], end_readings: vec![], ..l.clone() }).collect();
    let named: Vec<Line> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| Line {
            extra: Some((-(i as i64), ["conv", "", "matmul"][i % 3].into(), i as i64 % 2, vec![2.5e9, 0.5 + i as f64])),
            ..l.clone()
        })
        .collect();
    let named_no_events: Vec<Line> =
        named.iter().map(|l| Line { begin: vec![], end_readings: vec![], ..l.clone() }).collect();
    let cases: Vec<(&str, Vec<String>, &Vec<Line>, Layout)> = vec![
        ("v0.1, topdown off", lines.iter().map(v01).collect(), &lines, Layout::V01),
        ("v0.1, topdown on", with_topdown.iter().map(v01).collect(), &with_topdown, Layout::V01),
        ("v0.1, no PMU events", no_events.iter().map(v01).collect(), &no_events, Layout::V01),
        ("2023", named.iter().map(v2023).collect(), &named, Layout::V2023),
        ("2023, no PMU events", named_no_events.iter().map(v2023).collect(), &named_no_events, Layout::V2023),
    ];
    for (what, text, want, layout) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (out, stats) = import(&(text.join("\n") + "\n"), dir.path()).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(stats.layout, Some(layout), "{what}");
        assert_eq!(stats.events_field_mismatch, None, "{what}");
        assert_eq!((stats.unended, stats.migrated), (1, 1), "{what}");
        let got = decoded(&out);
        assert_eq!(got.len(), want.len(), "{what}");
        for ((t, name), l) in got.iter().zip(want) {
            assert_eq!((t.tid, t.start, t.end, t.parent_tid), (l.tid, l.start, l.end, l.parent_tid), "{what}");
            assert_eq!((t.begin_info[1], t.end_info[1]), (l.cpu[0], l.cpu[1]), "{what}");
            assert_eq!((&t.begin, &t.end_counters), (&l.begin, &l.end_readings), "{what}");
            assert_eq!(t.topdown, l.topdown, "{what}");
            match &l.extra {
                None => assert_eq!((t.extra.is_none(), name.as_str()), (true, "mtmc_task"), "{what}"),
                Some((ip, prefix, cfg, consts)) => {
                    let e = t.extra.as_ref().unwrap();
                    assert_eq!((e.int_prefix, e.config, &e.constants), (*ip, *cfg, consts), "{what}");
                    assert_eq!(name, if prefix.is_empty() { "mtmc_task" } else { prefix }, "{what}");
                }
            }
        }
        // The parent tid 0 is no thread.
        let f = Tb5File::open(&out).unwrap();
        assert!(f.processes().unwrap().unwrap().tids().all(|t| t.id != 0), "{what}");
        // The report shows what each task has and leaves out what it lacks, and passes as JSON.
        let r = report(&out);
        let json = serde_json::to_string(&r).unwrap();
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!((back.rows.len(), back.totals.len()), (r.rows.len(), r.totals.len()), "{what}");
        let unended = r.rows[3].task.as_ref().unwrap();
        assert_eq!((unended.duration_ns, &unended.counter_deltas), (None, &None), "{what}");
        assert_eq!(unended.invalid, ["no end"], "{what}");
        let migrated = r.rows[4].task.as_ref().unwrap();
        assert_eq!(migrated.counter_deltas, None, "{what}");
        assert_eq!(migrated.invalid, ["migrated from cpu 0 to cpu 1"], "{what}");
        let text = report_text(&out);
        assert!(!text.contains("1844674407"), "{what}: a wrapped-around value: {text}");
        assert!(text.lines().nth(4).unwrap().contains("invalid=(no end)"), "{what}: {text}");
        if !l_has_events(want) {
            assert!(!text.contains("counter_deltas"), "{what}: {text}");
        }
    }
}

fn l_has_events(v: &[Line]) -> bool {
    v.iter().any(|l| !l.begin.is_empty())
}

#[test]
fn deltas_are_signed_and_belong_to_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let lines = sample_lines();
    let text: Vec<String> = lines.iter().map(v01).collect();
    let (out, _) = import(&(text.join("\n") + "\n"), dir.path()).unwrap();
    let r = report(&out);
    let d = |i: usize| r.rows[i].task.as_ref().unwrap().counter_deltas.clone().unwrap();
    // Begin -100 (written as its 64-bit two's complement), end 50: 150, not a wrapped number.
    assert_eq!(d(0), [1000, 150]);
    assert_eq!(d(1), [1000, 1000]);
    let text = report_text(&out);
    assert!(text.contains("thread 10: tasks=2 duration_ns=800 counter_deltas=[2000,1150]"), "{text}");
    assert!(text.contains("cpu 0: tasks=2 duration_ns=800 counter_deltas=[2000,1150]"), "{text}");
    // Topdown counters reset within a task (slots went back): its topdown is invalid, its user counters are not.
    let mut l = sample_lines().remove(0);
    l.topdown = Some([5000, metrics([64; 8]), 0, 200, metrics([64; 8]), 0]);
    let (out, _) = import(&(v01(&l) + "\n"), dir.path()).unwrap();
    let r = report(&out);
    let t = r.rows[0].task.as_ref().unwrap();
    assert_eq!((t.topdown.is_none(), t.counter_deltas.is_some()), (true, true));
    assert_eq!(t.invalid, ["the topdown counters were reset between begin and end"]);
    assert_eq!(r.totals[0].task.as_ref().unwrap().invalid_tasks, 1);
}

#[test]
fn task_report_text_and_binary_agree() {
    let dir = tempfile::tempdir().unwrap();
    let text: Vec<String> = sample_lines().iter().map(v01).collect();
    let (out, _) = import(&(text.join("\n") + "\n"), dir.path()).unwrap();
    let text = report_text(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("{}: stream 0, 3 tasks, 2 counters", out.display()));
    assert_eq!(
        lines[1],
        "task 0: tid=10 cpu=0 numa=0 start=1700000000123456789 duration_ns=500 counter_deltas=[1000,150]"
    );
    let top = tasks::task_report(&Tb5File::open(&out).unwrap(), 0, Some(1)).unwrap();
    assert_eq!(top.rows.len(), 1);
    assert_eq!(top.rows[0].task.as_ref().unwrap().duration_ns, Some(700));
    let o = Command::new(env!("CARGO_BIN_EXE_tbrw"))
        .args(["report", out.to_str().unwrap(), "--by", "task"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8(o.stdout).unwrap(), text);
}

#[test]
fn vtune_csv_of_tasks_has_utc_text_and_cumulative_counters_per_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = sample_lines();
    lines.push(Line { end: 0, ..Line::plain(12, lines[2].start + 100, 0, 1, vec![1007, 1008], vec![0, 0]) });
    let (out, _) = import(&(lines.iter().map(v01).collect::<Vec<_>>().join("\n") + "\n"), dir.path()).unwrap();
    let r = export_vtune_csv(
        &out,
        &dir.path().join("csv"),
        &CsvOptions { hostname: Some("mtmc-box".into()), ..Default::default() },
    )
    .unwrap();
    let names: Vec<String> = r.files.iter().map(|p| p.file_name().unwrap().to_str().unwrap().to_owned()).collect();
    assert_eq!(
        names,
        [
            "mtmc_tasks-s0-hostname-mtmc-box.csv",
            "mtmc_tasks-s0-cpu0-counters-hostname-mtmc-box.csv",
            "mtmc_tasks-s0-cpu1-counters-hostname-mtmc-box.csv"
        ]
    );
    assert_eq!(r.unended, [(0, 1)], "the task with no end is no interval");
    assert_eq!(check_vtune_csv(&r.files[0]), 3);
    let intervals = std::fs::read_to_string(&r.files[0]).unwrap();
    let mut il = intervals.lines();
    assert_eq!(il.next().unwrap(), "name,start_tsc.UTC,end_tsc,pid,tid");
    assert_eq!(il.next().unwrap(), "mtmc_task,2023-11-14 22:13:20.123456789,2023-11-14 22:13:20.123457289,0,10");
    // CPU 0: tasks 0 and 2, begin and end readings in time order, no thread (counters belong to CPUs).
    assert_eq!(check_vtune_csv(&r.files[1]), 4);
    let cpu0 = std::fs::read_to_string(&r.files[1]).unwrap();
    assert_eq!(
        cpu0.lines().collect::<Vec<_>>(),
        [
            "tsc.UTC,counter0.COUNT,counter1.COUNT",
            "2023-11-14 22:13:20.123456789,1,-100",
            "2023-11-14 22:13:20.123457289,1001,50",
            "2023-11-14 22:13:20.123458789,1001,50",
            "2023-11-14 22:13:20.123459089,2001,1050",
        ]
    );
    // CPU 1: task 1, and the begin reading of the task that never ended.
    assert_eq!(check_vtune_csv(&r.files[2]), 3);
    // A reading lower than the one before on its CPU would not be cumulative: left out and counted.
    let mut bad = sample_lines();
    bad[2].begin = vec![0, 0];
    let (out, _) = import(&(bad.iter().map(v01).collect::<Vec<_>>().join("\n") + "\n"), dir.path()).unwrap();
    let r = export_vtune_csv(
        &out,
        &dir.path().join("csv2"),
        &CsvOptions { hostname: Some("mtmc-box".into()), ..Default::default() },
    )
    .unwrap();
    assert_eq!(r.decreasing, [(0, 1)]);
    for f in &r.files {
        check_vtune_csv(f);
    }
}

#[test]
fn the_pid_comes_from_the_logs_name_or_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stats) = import_named("mtmc_raw_140736934563840", &format!("{EXAMPLE}\n"), dir.path()).unwrap();
    let want = (140736934563840u64 & 0xFFFF_FFFF) as u32;
    assert_eq!(stats.pid, Some((want, PidSource::FileName)));
    let f = Tb5File::open(&out).unwrap();
    let pt = f.processes().unwrap().unwrap();
    let pids: Vec<(u32, String)> = pt.pids().map(|p| (p.id, f.string(p.name).unwrap().to_owned())).collect();
    assert_eq!(pids, [(want, "mtmc_raw_140736934563840".to_owned())]);
    assert!(pt.tids().all(|t| t.associated_pid == want));
    assert_eq!(mtmc::address_of("/x/mtmc_raw_-42"), Some(-42));
    assert_eq!(mtmc::address_of("mtmc_raw_12ab"), None);
    assert_eq!(mtmc::address_of("tasks.log"), None);
    // --pid wins; the binary says where the pid came from.
    let log = dir.path().join("mtmc_raw_140736934563840");
    let out = dir.path().join("p.tb5");
    let o = Command::new(env!("CARGO_BIN_EXE_tbrw"))
        .args(["import", "mtmc", log.to_str().unwrap(), "-o", out.to_str().unwrap(), "--pid", "4242"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("pid 4242"), "{}", String::from_utf8_lossy(&o.stdout));
    let s = import_mtmc_file(&log, &out, &MtmcOptions { pid: Some(4242) }).unwrap();
    assert_eq!(s.pid, Some((4242, PidSource::Option)));
    // A plain name without --pid: no process.
    let (_, stats) = import(&format!("{EXAMPLE}\n"), dir.path()).unwrap();
    assert_eq!(stats.pid, None);
}

#[test]
fn the_shipped_fixtures_import() {
    let cases = [
        ("mtmc_raw_140736934563840", Layout::V2023, 4, 2),
        ("v01_topdown_off.log", Layout::V01, 3, 2),
        ("v01_no_events.log", Layout::V01, 3, 0),
    ];
    for (name, layout, tasks, counters) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("f.tb5");
        let stats =
            import_mtmc_file(&data(name), &out, &MtmcOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((stats.layout, stats.tasks, stats.counters), (Some(layout), tasks, counters), "{name}");
        assert_eq!(stats.events_field_mismatch, None, "{name}");
        let text = report_text(&out);
        assert!(!text.contains("1844674407"), "{name}: {text}");
        let r = export_vtune_csv(
            &out,
            &dir.path().join("csv"),
            &CsvOptions { hostname: Some("h".into()), ..Default::default() },
        )
        .unwrap();
        for f in &r.files {
            check_vtune_csv(f);
        }
    }
}

fn arb_line(events: usize, topdown: bool, layout2023: bool) -> impl Strategy<Value = Line> {
    (
        (1u32..u32::MAX, any::<u32>(), 1u64..u64::MAX / 2, 0u64..1_000_000, any::<bool>()),
        (any::<u32>(), any::<u32>(), 0u64..64, 0u64..64, 0u64..4),
        prop::collection::vec(any::<u64>(), events * 2),
        prop::collection::vec(0u64..(1 << 48), 6),
        (any::<i64>(), "[a-zA-Z0-9_:~ .-]{0,20}", any::<i64>(), prop::collection::vec(-1e12f64..1e12, 0..3)),
    )
        .prop_map(
            move |((tid, pthread, start, dur, ended), (ptid, pp, c0, c1, numa), r, td, (ip, pre, cfg, consts))| Line {
                tid,
                pthread,
                start,
                end: if ended { start + dur } else { 0 },
                parent_tid: ptid,
                parent_pthread: pp,
                scheduled: start / 2,
                topdown: topdown.then(|| [td[0], td[1], td[2], td[3], td[4], td[5]]).filter(|t| *t != [0; 6]),
                cpu: [c0, c1],
                numa: [numa, numa],
                begin: r[..events].to_vec(),
                end_readings: r[events..].to_vec(),
                extra: layout2023.then_some((ip, pre, cfg, consts)),
            },
        )
}

fn arb_log() -> impl Strategy<Value = (bool, Vec<Line>)> {
    (0usize..5, any::<bool>(), any::<bool>(), 0usize..3).prop_flat_map(|(events, topdown, v2023, nconst)| {
        let topdown = topdown && !v2023;
        prop::collection::vec(arb_line(events, topdown, v2023), 1..12).prop_map(move |mut v| {
            // One configuration per log: the same number of constants on every line.
            for l in &mut v {
                if let Some(e) = &mut l.extra {
                    e.3.resize(nconst, 1.0);
                }
            }
            (v2023, v)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Any log the writer of either layout produces imports to the same tasks.
    #[test]
    fn any_written_log_imports_to_the_same_tasks((is2023, lines) in arb_log()) {
        let dir = tempfile::tempdir().unwrap();
        let text: Vec<String> = lines.iter().map(|l| if is2023 { v2023(l) } else { v01(l) }).collect();
        let (out, stats) = import(&(text.join("\n") + "\n"), dir.path()).map_err(TestCaseError::fail)?;
        prop_assert_eq!(stats.tasks, lines.len() as u64);
        prop_assert_eq!(stats.events_field_mismatch, None);
        let got = decoded(&out);
        for ((t, name), l) in got.iter().zip(&lines) {
            prop_assert_eq!((t.tid, t.pthread, t.start, t.end, t.scheduled), (l.tid, l.pthread, l.start, l.end, l.scheduled));
            prop_assert_eq!((t.parent_tid, t.parent_pthread), (l.parent_tid, l.parent_pthread));
            prop_assert_eq!([t.begin_info[1], t.begin_info[2], t.end_info[1], t.end_info[2]], [l.cpu[0], l.numa[0], l.cpu[1], l.numa[1]]);
            prop_assert_eq!((&t.begin, &t.end_counters, t.topdown), (&l.begin, &l.end_readings, l.topdown));
            if let Some((ip, pre, cfg, consts)) = &l.extra {
                let e = t.extra.as_ref().unwrap();
                prop_assert_eq!((e.int_prefix, e.config, &e.constants), (*ip, *cfg, consts));
                prop_assert_eq!(name.as_str(), if pre.is_empty() { "mtmc_task" } else { pre.as_str() });
            }
        }
        // No report of it holds a wrapped-around delta.
        let r = report(&out);
        for row in r.rows.iter().chain(&r.totals) {
            let t = row.task.as_ref().unwrap();
            prop_assert!(t.duration_ns.is_none_or(|d| d < u64::MAX / 2));
        }
        for f in export_vtune_csv(&out, &dir.path().join("csv"), &CsvOptions { hostname: Some("h".into()), ..Default::default() })
            .unwrap()
            .files
        {
            check_vtune_csv(&f);
        }
    }
}

#[test]
fn bad_logs_name_the_line_and_write_nothing() {
    let good = v01(&sample_lines()[0]);
    let three = v01(&Line::plain(11, 2_000, 2_005, 0, vec![1, 2, 3], vec![1, 2, 3]));
    let cases = [
        (format!("{good}\n{three}"), "line 2", "lines before have 2"),
        (good.replacen("1700000000123456789", "17x0", 1), "line 1", "not an unsigned integer"),
        ("1,2,3\n".to_owned(), "line 1", "3 comma-separated sections"),
        (good.replacen("10,", "99999999999,", 1), "line 1", "does not fit 32 bits"),
        (good.replacen(",2_0_0,", ",2_0,", 1), "line 1", "where 3 are expected"),
        ("\n\n".to_owned(), "line 1", "no task"),
        (format!("{good}\n{}", v2023(&sample_lines()[1])), "line 2", "lines before have the V01 layout"),
        (good.replacen("10,", &format!("{},", "1".repeat(5000)), 1), "line 1", "5000 characters long"),
    ];
    for (text, line, what) in cases {
        let dir = tempfile::tempdir().unwrap();
        let e = import(&text, dir.path()).expect_err(&text);
        assert!(e.contains(line) && e.contains(what) && e.contains("tasks.log"), "{e}");
        assert!(e.len() < 400, "the error quotes an excerpt, not the input: {} bytes", e.len());
        assert!(!dir.path().join("tasks.tb5").exists());
    }
    let swapped =
        good.replacen(",1700000000123456789,1700000000123457289,", ",1700000000123457289,1700000000123456789,", 1);
    let dir = tempfile::tempdir().unwrap();
    let e = import(&swapped, dir.path()).unwrap_err();
    assert!(e.contains("ends (1700000000123456789) before it starts (1700000000123457289)"), "{e}");
}

#[test]
fn a_100_mb_line_of_commas_is_rejected_early_with_a_short_message() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("commas.log");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&log).unwrap());
        let chunk = vec![b','; 1 << 20];
        for _ in 0..100 {
            f.write_all(&chunk).unwrap();
        }
        f.write_all(b"\n").unwrap();
    }
    let out = dir.path().join("o.tb5");
    let e = import_mtmc_file(&log, &out, &MtmcOptions::default()).unwrap_err().to_string();
    assert!(e.contains("line 1") && e.contains(&format!("longer than {} bytes", mtmc::MAX_LINE)), "{e}");
    assert!(e.len() < 400, "{e}");
    assert!(!out.exists());
    // Many sections in a line under the limit: rejected at the 18th, quoted briefly.
    let e = import(&",".repeat(60_000), dir.path()).unwrap_err();
    assert!(e.contains("more than 17 comma-separated sections") && e.len() < 400, "{e}");
    // A field of 60000 underscores in [9]: rejected at the 257th value.
    let l = sample_lines().remove(0);
    let text = v01(&l).replacen(",1_", &format!(",1{}", "_1".repeat(300)), 1);
    let e = import(&text, dir.path()).unwrap_err();
    assert!(e.contains("more than 256 '_'-separated values"), "{e}");
}

#[test]
fn report_by_thread_counts_tasks_per_tid() {
    let dir = tempfile::tempdir().unwrap();
    let other = EXAMPLE.replacen("1107138,", "1107200,", 1);
    let (out, _) = import(&format!("{EXAMPLE}\n{other}\n{EXAMPLE}\n"), dir.path()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tbrw"))
        .args(["report", out.to_str().unwrap(), "--by", "thread"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("2  66.67%  pthread 0x5f7ee700 (tid 1107138)"), "{text}");
    assert!(text.contains("1  33.33%  pthread 0x5f7ee700 (tid 1107200)"), "{text}");
}
