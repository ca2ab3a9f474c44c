//! MTMC task logs: the document's example line, topdown arithmetic on
//! hand-computed cases, the task report, CSV export, and bad input.

mod common;

use std::path::Path;
use std::process::Command;

use common::check_vtune_csv;
use tbrw::*;
use tbrw_cli::csv::{export_vtune_csv, CsvOptions};
use tbrw_cli::mtmc::{self, import_mtmc, topdown};

/// The example line of the MTMC document, as it is (11 in the number-of-events field, 8 readings).
const EXAMPLE: &str = "1107138,1602152192,1662113994732217088,1662113994733739014,1107181,1241265920,1662113994732206443,3786_3411785758808611119_140737493906307_18412794_13836746939049903115_140737493909085,11_12_0,1731201101_3690717719_1463852088_10519267_10356736_3476234_356044729_6979630,11_12_0,1734269057_3691050936_1466446788_13052429_12885932_5936761_358428561_6987354,";

fn import(text: &str, dir: &Path) -> Result<(std::path::PathBuf, mtmc::MtmcStats), String> {
    let log = dir.join("tasks.log");
    std::fs::write(&log, text).unwrap();
    let out = dir.join("tasks.tb5");
    import_mtmc(&log, &out, &mut |_| {}).map(|s| (out, s)).map_err(|e| e.to_string())
}

#[test]
fn the_shipped_example_log_is_the_documents_line() {
    let shipped =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mtmc/doc_example.log")).unwrap();
    assert_eq!(shipped, format!("{EXAMPLE}\n"));
}

#[test]
fn the_documents_example_line_imports_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stats) = import(&format!("{EXAMPLE}\n"), dir.path()).unwrap();
    assert_eq!((stats.tasks, stats.counters, stats.threads), (1, 8, 2));
    assert_eq!(stats.events_field_mismatch, Some((1, 11, 8)), "warned about, kept as given");
    let f = Tb5File::open(&out).unwrap();
    f.verify().unwrap();
    let s = f.stream(0).unwrap();
    let descs = s.descriptor().unwrap().unwrap();
    assert_eq!(descs.len(), 19 + 16);
    let names: Vec<String> = descs.iter().map(|d| f.string(d.name).unwrap().to_owned()).collect();
    assert_eq!(&names[..4], ["tid", "pthread_id", "start_realtime_ns", "end_realtime_ns"]);
    assert_eq!(names[34], "counter7_end");
    let data = s.data().unwrap().unwrap();
    assert_eq!(data.record_size(), mtmc::record_size(8));
    let t = mtmc::decode(data.record(0).unwrap(), 8);
    assert_eq!((t.tid, t.pthread, t.parent_tid, t.parent_pthread), (1107138, 1602152192, 1107181, 1241265920));
    assert_eq!((t.start, t.end, t.scheduled), (1662113994732217088, 1662113994733739014, 1662113994732206443));
    assert_eq!(
        t.topdown,
        [3786, 3411785758808611119, 140737493906307, 18412794, 13836746939049903115, 140737493909085]
    );
    assert_eq!((t.begin_info, t.end_info), ([11, 12, 0], [11, 12, 0]));
    assert_eq!(t.begin[0], 1731201101);
    assert_eq!(t.end_counters[7], 6987354);
    // The threads went to the thread table.
    let pt = f.processes().unwrap().unwrap();
    assert_eq!(pt.tids().map(|t| t.id).collect::<Vec<_>>(), [1107138, 1107181]);
    // Topdown of the example, computed by hand from the bytes of PERF_METRICS:
    // begin 0x2f5919123b86192f = [47,25,134,59 | 18,25,89,47], end 0xc0060007e50b040b = [11,4,11,229 | 7,0,6,192];
    // retiring = (18412794*11/255 - 3786*47/255) / (18412794-3786) = 4.311 %, and so on.
    let td = topdown(t.topdown[0], t.topdown[1], t.topdown[3], t.topdown[4]).unwrap();
    let pct = |v: f64| (v * 100000.0).round() / 1000.0;
    assert_eq!(td.level1.map(pct), [4.311, 1.567, 4.304, 89.818]);
    // The begin reading's bytes add up to 265/255 (the MSR's own rounding), so the sum is 1 only to 1e-5.
    assert!((td.level1.iter().sum::<f64>() - 1.0).abs() < 1e-4);
    assert_eq!(td.level2.unwrap().map(pct), [2.744, 0.0, 2.346, 75.306], "branch mispredicts -0.002 % clamps to 0");
}

#[test]
fn topdown_on_hand_computed_cases() {
    // All slots since a zero begin: the end bytes are the task's own fractions.
    let td = topdown(0, 0, 255, u64::from_le_bytes([51, 0, 102, 102, 0, 0, 0, 0])).unwrap();
    assert_eq!(td.level1, [0.2, 0.0, 0.4, 0.4]);
    assert_eq!(td.level2, None, "no level-2 bytes");
    // Begin: 1000 slots, all retiring. End: 3000 slots, 1/3 retiring, 2/3 frontend.
    // The task's own 2000 slots: retiring 1000-1000 = 0, frontend 2000-0 = 2000: 100 % frontend bound.
    let td = topdown(
        1000,
        u64::from_le_bytes([255, 0, 0, 0, 0, 0, 0, 0]),
        3000,
        u64::from_le_bytes([85, 0, 170, 0, 0, 0, 0, 0]),
    )
    .unwrap();
    assert_eq!(td.level1, [0.0, 0.0, 1.0, 0.0]);
    assert_eq!(td.slots, 2000);
    // Level 2 present: memory bound is half the backend.
    let td = topdown(0, 0, 510, u64::from_le_bytes([0, 0, 0, 255, 0, 0, 0, 128])).unwrap();
    assert_eq!(td.level1, [0.0, 0.0, 0.0, 1.0]);
    assert_eq!(td.level2.unwrap()[3], 128.0 / 255.0);
    // The slot counter did not advance: no breakdown.
    assert_eq!(topdown(500, 0, 500, 0), None);
    assert_eq!(topdown(600, 0, 500, 0), None);
}

fn task_line(tid: u32, start: u64, dur: u64, core: u64, counters: &[u64]) -> String {
    let begin: Vec<String> = counters.iter().map(|c| c.to_string()).collect();
    let end: Vec<String> = counters.iter().map(|c| (c + 1000).to_string()).collect();
    format!(
        "{tid},{},{start},{},{},{},{},0_0_0_510_{}_0,{n}_{core}_0,{},{n}_{core}_0,{},",
        tid + 1,
        start + dur,
        tid + 100,
        tid + 101,
        start - 5,
        u64::from_le_bytes([0, 0, 255, 0, 0, 0, 0, 0]),
        begin.join("_"),
        end.join("_"),
        n = counters.len()
    )
}

#[test]
fn task_report_and_totals_per_thread_and_core() {
    let dir = tempfile::tempdir().unwrap();
    let log = [
        task_line(10, 1_000, 500, 0, &[1, 2]),
        task_line(11, 2_000, 700, 1, &[5, 6]),
        task_line(10, 3_000, 300, 1, &[9, 9]),
    ]
    .join("\n");
    let (out, stats) = import(&log, dir.path()).unwrap();
    assert_eq!(stats.events_field_mismatch, None);
    let f = Tb5File::open(&out).unwrap();
    let mut text = Vec::new();
    mtmc::write_task_text(&mtmc::task_report(&f, 0, None).unwrap(), &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("{}: stream 0, 3 tasks, 2 counters", out.display()));
    assert_eq!(
        lines[1],
        "task 0: tid=10 core=0 start=1000 duration_ns=500 counter_deltas=[1000,1000] retiring=0.00% bad_speculation=0.00% frontend_bound=100.00% backend_bound=0.00%"
    );
    assert!(lines.contains(&"thread 10: tasks=2 duration_ns=800 counter_deltas=[2000,2000] retiring=0.00% bad_speculation=0.00% frontend_bound=100.00% backend_bound=0.00%"), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("core 1: tasks=2 duration_ns=1000 ")), "{text}");
    let mut top = Vec::new();
    mtmc::write_task_text(&mtmc::task_report(&f, 0, Some(1)).unwrap(), &mut top).unwrap();
    assert!(String::from_utf8(top).unwrap().contains("task 1: tid=11 core=1 start=2000 duration_ns=700"));
    // The binary.
    let o = Command::new(env!("CARGO_BIN_EXE_tbrw"))
        .args(["report", out.to_str().unwrap(), "--by", "task"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8(o.stdout).unwrap(), text);
    // CSV: tasks as intervals with their tid, counter readings as discrete rows.
    let r = export_vtune_csv(
        &out,
        &dir.path().join("csv"),
        &CsvOptions { hostname: Some("mtmc-box".into()), ..Default::default() },
    )
    .unwrap();
    assert_eq!(r.files.len(), 2);
    assert_eq!(check_vtune_csv(&r.files[0]), 3);
    assert_eq!(check_vtune_csv(&r.files[1]), 6);
    let intervals = std::fs::read_to_string(&r.files[0]).unwrap();
    assert_eq!(intervals.lines().next().unwrap(), "name,start_tsc.UTC,end_tsc,tid");
    assert_eq!(intervals.lines().nth(1).unwrap(), "mtmc_tasks,1000,1500,10");
    let counters = std::fs::read_to_string(&r.files[1]).unwrap();
    assert_eq!(
        counters.lines().take(3).collect::<Vec<_>>(),
        ["tsc.UTC,counter0.COUNT,counter1.COUNT,tid", "1000,1,2,10", "1500,1001,1002,10"]
    );
}

#[test]
fn bad_logs_name_the_line_and_write_nothing() {
    let good = task_line(10, 1_000, 500, 0, &[1, 2]);
    let cases = [
        (format!("{good}\n{}", task_line(11, 2_000, 5, 0, &[1, 2, 3])), "line 2", "lines before have 2"),
        (good.replacen("1000", "1x00", 1), "line 1", "not an unsigned integer"),
        ("1,2,3\n".to_owned(), "line 1", "3 comma-separated sections"),
        (good.replacen("10,", "99999999999,", 1), "line 1", "does not fit 32 bits"),
        (good.replace(",0_0_0_510_", ",0_0_510_"), "line 1", "where 6 are expected"),
        ("\n\n".to_owned(), "line 1", "no task"),
    ];
    for (text, line, what) in cases {
        let dir = tempfile::tempdir().unwrap();
        let e = import(&text, dir.path()).expect_err(&text);
        assert!(e.contains(line) && e.contains(what) && e.contains("tasks.log"), "{e}");
        assert!(!dir.path().join("tasks.tb5").exists());
    }
    // End before start.
    let swapped = good.replacen(",1000,1500,", ",1500,1000,", 1);
    let dir = tempfile::tempdir().unwrap();
    let e = import(&swapped, dir.path()).unwrap_err();
    assert!(e.contains("ends (1000) before it starts (1500)"), "{e}");
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
    assert!(text.contains("         2  66.67%  tid 1107138 pthread 0x5f7ee700"), "{text}");
    assert!(text.contains("         1  33.33%  tid 1107200 pthread 0x5f7ee700"), "{text}");
}
