//! winIDEA exports: the document's example (as given, and completed so its
//! statistics can all be recomputed), generated timelines checked against a
//! model of the calls that made them, `.BIN` files in both layouts, CSV
//! export, the command line, and bad input.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::export_vtune_csv;
use common::{check_vtune_csv, import_winidea_file, Rng};
use tbrw::*;
use tbrw_export::vtune_csv::{Clock, CsvOptions};
use tbrw_import::winidea::{self, BinVersion, Pos, TimelineEvent};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/winidea").join(name)
}

fn le(r: &[u8], at: usize, n: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&r[at..at + n]);
    u64::from_le_bytes(b)
}

/// (handle, context, start, end, net, gross) of every stored call, sorted.
fn stored_calls(f: &Tb5File) -> Vec<(u32, u32, u64, u64, u64, u64)> {
    let d = f.stream(0).unwrap().data().unwrap().unwrap();
    assert_eq!(d.record_size(), 40);
    let mut v: Vec<_> = d
        .records()
        .map(|r| (le(r, 32, 4) as u32, le(r, 36, 4) as u32, le(r, 0, 8), le(r, 8, 8), le(r, 16, 8), le(r, 24, 8)))
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn the_documents_example_imports_and_its_differences_are_the_excerpts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("doc.tb5");
    let stats = import_winidea_file(&data("doc_example.txt"), None, None, &out, true).unwrap();
    assert_eq!((stats.events, stats.calls, stats.writes), (5, 0, 1));
    // main resumes at 4469 without an entry in the excerpt; line 59 enters and never exits.
    assert_eq!((stats.started_before, stats.unfinished), (1, 1));
    assert_eq!(stats.agree, 13);
    assert!(stats.unchecked.is_empty());
    let diffs: Vec<(u64, &str, i64, i64)> =
        stats.differences.iter().map(|d| (d.line, d.what.as_str(), d.export, d.timeline)).collect();
    // Explained in docs/IMPORT.md: the timeline is an excerpt (main runs
    // again after it; the write of 0 comes before it; the INFO total is of
    // another session), and the per-context rows are of another program.
    assert_eq!(
        &diffs[..5],
        [
            (35, "00000000 T.NET", 267, 133),
            (43, "20000000 COUNT", 2, 1),
            (44, "30000000 value 0 COUNT", 1, 0),
            (44, "30000000 value 0 T.NET", 7521, 0),
            (45, "30000000 value 1 T.NET", 3491, 7962907051 - 4336),
        ]
    );
    assert_eq!(diffs.len(), 5 + 12);
    assert!(diffs[5..].iter().all(|d| d.3 == 0 && [48, 49, 50, 53, 54, 55].contains(&d.0)));
    // What agrees: line 59 (10000004) entered once and ran 133 ns; main had no entry.
    let f = Tb5File::open(&out).unwrap();
    f.verify().unwrap();
    let events = f.stream(0).unwrap().events().unwrap().unwrap();
    let name =
        |id: u32| events.iter().find(|e| e.id == id).map(|e| f.string(e.name).unwrap().to_owned()).unwrap_or_default();
    assert_eq!(name(0x10000004), "main:59: TestStatic1();");
    assert_eq!(name(0x10000008), "\"TestStatic1.c\"#StaticFunc:7: g_cStaticSignal = STATIC;");
    assert_eq!(name(0x00000001), "\"TestStatic1.c\"#StaticFunc");
    let vars = f.stream(1).unwrap().events().unwrap().unwrap();
    let var_names: Vec<&str> = vars.iter().map(|e| f.string(e.name).unwrap()).collect();
    assert_eq!(var_names, ["TestStatic1##s_cStatic", "iCounter", "TestStatic2##s_cStatic"]);
    let d = f.stream(1).unwrap().data().unwrap().unwrap();
    let r = d.record(0).unwrap();
    assert_eq!((le(r, 0, 8), le(r, 8, 8), le(r, 16, 4)), (4336, 1, 0x20000000));
}

#[test]
fn the_completed_example_agrees_with_every_statistic() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("doc.tb5");
    let stats = import_winidea_file(&data("doc_completed.txt"), None, None, &out, true).unwrap();
    assert_eq!(stats.differences, []);
    assert_eq!(stats.agree, 18);
    // The write of 0 at -3185 makes the stored time stamps start there.
    assert_eq!(stats.time_origin_ns, -3185);
    let f = Tb5File::open(&out).unwrap();
    let s = f.stream(1).unwrap();
    assert_eq!(s.user_defined().unwrap().unwrap(), b"time_origin_ns -3185\n");
    let d = s.data().unwrap().unwrap();
    let stamps: Vec<u64> = d.records().map(|r| le(r, 0, 8)).collect();
    assert_eq!(stamps, [0, 4336 + 3185]);
}

/// A call the generator made, with the figures winIDEA would give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ModelCall {
    handle: u32,
    context: u32,
    start: i64,
    end: i64,
    net: i64,
    gross: i64,
}

const CONTEXT_NAMES: [&str; 3] = ["TSK: first", "TSK: second", "ISR: tick"];
const VAR: u32 = 0x2000_0000;
const STATE: u32 = 0x3000_0000;

struct Generated {
    calls: Vec<ModelCall>,
    /// (time, value, context) of each write to VAR.
    writes: Vec<(i64, u64, u32)>,
    events: Vec<TimelineEvent>,
    end: i64,
}

/// Jobs in three contexts: a function that may call another, and may be
/// preempted by a whole call in another context.
fn generate(jobs: usize, seed: u64, preempt: bool) -> Generated {
    let mut rng = Rng(seed);
    let mut t: i64 = -5000;
    let mut g = Generated { calls: Vec::new(), writes: Vec::new(), events: Vec::new(), end: 0 };
    let ev = |g: &mut Generated, handle: u32, kind: u8, value: u64, time: i64, context: u32| {
        g.events.push(TimelineEvent { handle, kind, value, time, context, at: Pos::Line(0) });
    };
    for _ in 0..jobs {
        let c = rng.below(3) as u32;
        let f = rng.below(4) as u32;
        let (a, cc) = (1 + rng.below(500) as i64, 1 + rng.below(500) as i64);
        let start = t;
        ev(&mut g, f, b'E', 0, t, c);
        t += a;
        let mut gross = a + cc;
        if rng.below(2) == 0 {
            let callee = (f + 1 + rng.below(3) as u32) % 4;
            let b = 1 + rng.below(300) as i64;
            ev(&mut g, f, b'S', 0, t, c);
            ev(&mut g, callee, b'E', 0, t, c);
            g.calls.push(ModelCall { handle: callee, context: c, start: t, end: t + b, net: b, gross: b });
            t += b;
            ev(&mut g, callee, b'X', 0, t, c);
            ev(&mut g, f, b'R', 0, t, c);
            gross += b;
        }
        if preempt && rng.below(3) == 0 {
            let c2 = (c + 1 + rng.below(2) as u32) % 3;
            let h = rng.below(4) as u32;
            let d = 1 + rng.below(200) as i64;
            ev(&mut g, f, b'S', 0, t, c);
            ev(&mut g, h, b'E', 0, t, c2);
            g.calls.push(ModelCall { handle: h, context: c2, start: t, end: t + d, net: d, gross: d });
            t += d;
            ev(&mut g, h, b'X', 0, t, c2);
            ev(&mut g, f, b'R', 0, t, c);
        }
        t += cc;
        ev(&mut g, f, b'X', 0, t, c);
        g.calls.push(ModelCall { handle: f, context: c, start, end: t, net: a + cc, gross });
        t += rng.below(100) as i64;
        if rng.below(4) == 0 {
            let v = rng.below(3);
            // Both ways winIDEA reports a write: W on the variable, E on its state.
            if rng.below(2) == 0 {
                ev(&mut g, VAR, b'W', v, t, c);
            } else {
                ev(&mut g, STATE, b'E', v, t, c);
            }
            g.writes.push((t, v, c));
            t += 1 + rng.below(50) as i64;
        }
    }
    g.end = t + 10;
    g
}

/// Rounds half up, as a tool might: the check accepts either rounding.
fn avg(v: &[i64]) -> i64 {
    if v.is_empty() {
        0
    } else {
        (v.iter().sum::<i64>() * 2 + v.len() as i64).div_euclid(2 * v.len() as i64)
    }
}

/// Statistics rows for `calls` (already filtered), in the shuffled column order.
fn stat_row(handle: u32, calls: &[&ModelCall], columns: &[&str]) -> String {
    let nets: Vec<i64> = calls.iter().map(|c| c.net).collect();
    let gross: Vec<i64> = calls.iter().map(|c| c.gross).collect();
    let call: Vec<i64> = calls.iter().map(|c| c.end - c.start).collect();
    let mut entries: Vec<i64> = calls.iter().map(|c| c.start).collect();
    entries.sort_unstable();
    let periods: Vec<i64> = entries.windows(2).map(|w| w[1] - w[0]).collect();
    let mm = |v: &[i64], w: &str| match w {
        "MIN" => v.iter().min().copied().unwrap_or(0),
        "MAX" => v.iter().max().copied().unwrap_or(0),
        _ => avg(v),
    };
    let cells: Vec<String> = columns
        .iter()
        .map(|c| match *c {
            "HANDLE" => format!("{handle:08X}"),
            "VALUE" => String::new(),
            "NAME" => format!("fn_{handle}"),
            "COUNT" => calls.len().to_string(),
            "T.NET" => nets.iter().sum::<i64>().to_string(),
            "T.GROSS" => gross.iter().sum::<i64>().to_string(),
            "T.CALL" => call.iter().sum::<i64>().to_string(),
            "T.OUTSIDE" => "12345".into(),
            other => {
                let (cat, w) = other.strip_prefix("T.").unwrap().split_once('.').unwrap();
                let v = match cat {
                    "NET" => &nets,
                    "GROSS" => &gross,
                    "CALL" => &call,
                    _ => &periods,
                };
                mm(v, w).to_string()
            }
        })
        .collect();
    cells.join(",")
}

/// A Text1 export of the generated session; with `timeline`, its TIMELINE section.
fn text1(g: &Generated, with_contexts: bool, timeline: bool) -> String {
    let mut s = format!("* INFO %TOTAL_TIME%\n{}\n\n", g.end);
    s += "* CONTEXTS %HANDLE%,%NAME%\n";
    for (i, n) in CONTEXT_NAMES.iter().enumerate() {
        s += &format!("{i:#x},{n}\n");
    }
    s += "\n* HANDLE(Functions) %NAME%,%HANDLE%\n";
    for h in 0..4 {
        s += &format!("fn_{h},{h:08X}\n");
    }
    s += "\n* HANDLE(Data) %HANDLE%,%NAME%,%VALUE%\n20000000,state_var,\n30000000,,0\n30000000,,1\n30000000,,2\n\n";
    let columns = [
        "T.GROSS.MAX",
        "COUNT",
        "HANDLE",
        "T.NET",
        "T.CALL",
        "T.NET.MIN",
        "T.PERIOD.AVG",
        "NAME",
        "T.NET.MAX",
        "T.NET.AVG",
        "T.GROSS",
        "T.GROSS.MIN",
        "T.GROSS.AVG",
        "T.CALL.MIN",
        "T.CALL.MAX",
        "T.CALL.AVG",
        "T.PERIOD.MIN",
        "T.PERIOD.MAX",
        "VALUE",
    ];
    let header = |ctx: Option<&str>, cols: &[&str]| {
        let macros: Vec<String> = cols.iter().map(|c| format!("%{c}%")).collect();
        match ctx {
            Some(c) => format!("* STATISTICS(Functions) CONTEXT({c}) {}\n", macros.join(",")),
            None => format!("* STATISTICS(Functions) {}\n", macros.join(",")),
        }
    };
    // Neutral rows (all contexts), with one column a timeline cannot give.
    let mut neutral = columns.to_vec();
    neutral.push("T.OUTSIDE");
    s += &header(None, &neutral);
    for h in 0..4u32 {
        let calls: Vec<&ModelCall> = g.calls.iter().filter(|c| c.handle == h).collect();
        s += &stat_row(h, &calls, &neutral);
        s += "\n";
    }
    if with_contexts {
        for (ci, cn) in CONTEXT_NAMES.iter().enumerate() {
            s += "\n";
            s += &header(Some(cn), &columns);
            for h in 0..4u32 {
                let calls: Vec<&ModelCall> =
                    g.calls.iter().filter(|c| c.handle == h && c.context == ci as u32).collect();
                s += &stat_row(h, &calls, &columns);
                s += "\n";
            }
        }
    }
    // Data: writes per value, time in each state until the next write or the end.
    s += "\n* STATISTICS(Data) %COUNT%,%T.NET%,%VALUE%,%HANDLE%\n";
    s += &format!("{},0,,20000000\n", g.writes.len());
    let mut per_value: BTreeMap<u64, (i64, i64)> = BTreeMap::new();
    for (i, (t, v, _)) in g.writes.iter().enumerate() {
        let next = g.writes.get(i + 1).map_or(g.end, |w| w.0);
        let e = per_value.entry(*v).or_default();
        e.0 += 1;
        e.1 += next - t;
    }
    for (v, (n, net)) in per_value {
        s += &format!("{n},{net},{v},30000000\n");
    }
    if timeline {
        s += "\n* TIMELINE %TIME%,%CONTEXT%,%EVENT%,%HANDLE%,%VALUE%\n";
        for e in &g.events {
            let value = if e.kind == b'W' || e.handle >> 28 == 3 { format!("{:08X}", e.value) } else { String::new() };
            s += &format!(
                "{},{},{},{:08X},{value}\n",
                e.time, CONTEXT_NAMES[e.context as usize], e.kind as char, e.handle
            );
        }
    }
    s
}

fn expected_calls(g: &Generated, origin: i64, context: Option<u32>) -> Vec<(u32, u32, u64, u64, u64, u64)> {
    let mut v: Vec<_> = g
        .calls
        .iter()
        .map(|c| {
            (
                c.handle,
                context.unwrap_or(c.context),
                (c.start - origin) as u64,
                (c.end - origin) as u64,
                c.net as u64,
                c.gross as u64,
            )
        })
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn a_generated_text1_timeline_gives_the_models_calls_and_statistics() {
    let dir = tempfile::tempdir().unwrap();
    for seed in [1u64, 7, 99] {
        let g = generate(400, seed, true);
        let path = dir.path().join(format!("gen{seed}.txt"));
        std::fs::write(&path, text1(&g, true, true)).unwrap();
        let out = dir.path().join(format!("gen{seed}.tb5"));
        let stats = import_winidea_file(&path, None, None, &out, true).unwrap();
        assert_eq!(stats.differences, [], "seed {seed}");
        // 4 neutral rows + 12 per-context rows of 17 figures, 4 T.OUTSIDE; data rows.
        assert_eq!(stats.unchecked.iter().map(|u| u.count).sum::<u64>(), 4);
        let values: std::collections::BTreeSet<u64> = g.writes.iter().map(|w| w.1).collect();
        assert_eq!(stats.agree, 16 * 16 + 2 + 2 * values.len() as u64, "seed {seed}");
        assert_eq!((stats.started_before, stats.unfinished), (0, 0));
        assert_eq!(stats.calls, g.calls.len() as u64);
        assert_eq!(stats.writes, g.writes.len() as u64);
        assert_eq!(stats.time_origin_ns, -5000);
        let f = Tb5File::open(&out).unwrap();
        f.verify().unwrap();
        assert_eq!(stored_calls(&f), expected_calls(&g, -5000, None), "seed {seed}");
        // The contexts are the thread table, by name.
        let pt = f.processes().unwrap().unwrap();
        let threads: Vec<(u32, String)> = pt.tids().map(|t| (t.id, f.string(t.name).unwrap().to_owned())).collect();
        let want: Vec<(u32, String)> =
            CONTEXT_NAMES.iter().enumerate().map(|(i, n)| (i as u32, n.to_string())).collect();
        assert_eq!(threads, want);
    }
}

#[test]
fn bin_timelines_in_both_layouts_give_the_same_calls() {
    let dir = tempfile::tempdir().unwrap();
    // 1.1 keeps the core index, which the CONTEXTS handles name here.
    let g = generate(300, 5, true);
    let export = dir.path().join("v11.txt");
    std::fs::write(&export, text1(&g, true, false)).unwrap();
    let bin = dir.path().join("v11.txt.BIN");
    let bytes = winidea::write_bin(&g.events, BinVersion::V1_1);
    assert_eq!(bytes.len(), g.events.len() * 24);
    assert_eq!(winidea::detect_bin(&bytes), BinVersion::V1_1);
    std::fs::write(&bin, &bytes).unwrap();
    let out = dir.path().join("v11.tb5");
    let stats = import_winidea_file(&export, Some(&bin), None, &out, true).unwrap();
    assert_eq!(stats.bin_version, Some(BinVersion::V1_1));
    assert_eq!(stats.differences, []);
    assert_eq!(stored_calls(&Tb5File::open(&out).unwrap()), expected_calls(&g, -5000, None));

    // 1.0 has no core index (0xFF, unknown): one context, so no preemption
    // in this session and only neutral statistics.
    let g = generate(300, 6, false);
    let export = dir.path().join("v10.txt");
    std::fs::write(&export, text1(&g, false, false)).unwrap();
    let bytes = winidea::write_bin(&g.events, BinVersion::V1_0);
    assert_eq!(winidea::detect_bin(&bytes), BinVersion::V1_0);
    let bin = dir.path().join("v10.txt.BIN");
    std::fs::write(&bin, &bytes).unwrap();
    let out = dir.path().join("v10.tb5");
    let stats = import_winidea_file(&export, Some(&bin), None, &out, true).unwrap();
    assert_eq!(stats.bin_version, Some(BinVersion::V1_0));
    assert_eq!(stats.differences, []);
    let f = Tb5File::open(&out).unwrap();
    assert_eq!(stored_calls(&f), expected_calls(&g, -5000, Some(0xFF)));
    let pt = f.processes().unwrap().unwrap();
    let last = pt.tids().last().unwrap();
    assert_eq!((last.id, f.string(last.name).unwrap()), (0xFF, "unknown context"));
    // Forcing the wrong layout is caught: 1.0 words set bits 1.1 does not define.
    let err =
        import_winidea_file(&export, Some(&bin), Some(BinVersion::V1_1), &dir.path().join("x.tb5"), true).unwrap_err();
    assert!(
        err.to_string().contains("v10.txt.BIN: byte 4: flags 0x03000000 set bits outside the version 1.1 masks"),
        "{err}"
    );
}

#[test]
fn bin_entries_round_trip_in_both_layouts() {
    let mut rng = Rng(3);
    let kinds = [b'E', b'S', b'R', b'X', b'W'];
    let events: Vec<TimelineEvent> = (0..500)
        .map(|i| TimelineEvent {
            handle: rng.next() as u32,
            kind: kinds[rng.below(5) as usize],
            value: rng.next(),
            time: rng.next() as i64,
            context: rng.below(256) as u32,
            at: Pos::Byte(i * 24),
        })
        .collect();
    let p = "t.BIN";
    let v11 = winidea::parse_bin(&winidea::write_bin(&events, BinVersion::V1_1), BinVersion::V1_1, p).unwrap();
    assert_eq!(v11, events);
    let v10 = winidea::parse_bin(&winidea::write_bin(&events, BinVersion::V1_0), BinVersion::V1_0, p).unwrap();
    let unknown_core: Vec<TimelineEvent> = events.iter().map(|e| TimelineEvent { context: 0xFF, ..*e }).collect();
    assert_eq!(v10, unknown_core);
}

#[test]
fn calls_and_data_export_to_vtune_csv() {
    let dir = tempfile::tempdir().unwrap();
    let g = generate(200, 11, true);
    let path = dir.path().join("gen.txt");
    std::fs::write(&path, text1(&g, true, true)).unwrap();
    let out = dir.path().join("gen.tb5");
    import_winidea_file(&path, None, None, &out, true).unwrap();
    let csv = dir.path().join("csv");
    // Session time is no host clock: without --clock the streams cannot go.
    let err = export_vtune_csv(&out, &csv, &CsvOptions { hostname: Some("target".into()), ..Default::default() })
        .unwrap_err();
    // A variant the command line names `--clock` for.
    assert!(matches!(&err, tbrw_export::ExportError::MissingOptions { clock, .. } if !clock.is_empty()), "{err:?}");
    let r = export_vtune_csv(
        &out,
        &csv,
        &CsvOptions { hostname: Some("target".into()), clock: Some(Clock::MonotonicRaw), ..Default::default() },
    )
    .unwrap();
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    // The calls, then one file of values per variable written.
    assert_eq!(r.files.len(), 2);
    assert_eq!(check_vtune_csv(&r.files[0]), g.calls.len());
    let calls = std::fs::read_to_string(&r.files[0]).unwrap();
    // With the context as tid: VTune shows the calls as tasks of each context.
    assert!(calls.starts_with("name,start_tsc.CLOCK_MONOTONIC_RAW,end_tsc,tid\n"), "{calls}");
    let mut rows: Vec<String> = calls.lines().skip(1).map(str::to_owned).collect();
    rows.sort();
    let mut want: Vec<String> =
        g.calls.iter().map(|c| format!("fn_{},{},{},{}", c.handle, c.start + 5000, c.end + 5000, c.context)).collect();
    want.sort();
    assert_eq!(rows, want);
    assert!(r.files[1].file_name().unwrap().to_str().unwrap().starts_with("winidea_data-s1-state_var-hostname-target"));
    assert_eq!(check_vtune_csv(&r.files[1]), g.writes.len());
    let values = std::fs::read_to_string(&r.files[1]).unwrap();
    let want: String = std::iter::once("tsc.CLOCK_MONOTONIC_RAW,state_var.INST,tid".to_owned())
        .chain(g.writes.iter().map(|(t, v, c)| format!("{},{v},{c}", t + 5000)))
        .map(|l| l + "\n")
        .collect();
    assert_eq!(values, want);
}

fn tbrw(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

#[test]
fn the_command_line_imports_checks_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("doc.tb5");
    let o =
        tbrw(&["import", "winidea", data("doc_example.txt").to_str().unwrap(), "-o", out.to_str().unwrap(), "--check"]);
    assert_eq!(o.status.code(), Some(3), "differences give status 3");
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("statistics check: 13 figures agree, 17 differ, 0 not checked"), "{text}");
    assert!(text.contains("line 35: 00000000 T.NET: export 267, timeline 133"), "{text}");
    assert!(String::from_utf8(o.stderr).unwrap().contains("1 call was under way"));
    assert!(out.exists(), "the import is written even when statistics differ");

    let o = tbrw(&[
        "import",
        "winidea",
        data("doc_completed.txt").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--check",
        "-f",
    ]);
    assert!(o.status.success());
    assert!(String::from_utf8(o.stdout).unwrap().contains("18 figures agree, 0 differ"));

    // A generated session: report calls by event (the handle field names them).
    let g = generate(100, 2, true);
    let export = dir.path().join("gen.txt");
    std::fs::write(&export, text1(&g, true, true)).unwrap();
    let gen = dir.path().join("gen.tb5");
    let o = tbrw(&["import", "winidea", export.to_str().unwrap(), "-o", gen.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = tbrw(&["report", gen.to_str().unwrap(), "--by", "event", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = json["rows"].as_array().unwrap();
    for h in 0..4u32 {
        let n = g.calls.iter().filter(|c| c.handle == h).count();
        let row = rows.iter().find(|r| r["key"]["id"] == h).unwrap_or_else(|| panic!("no row for {h}: {json}"));
        assert_eq!(row["key"]["kind"], "event");
        assert_eq!(row["key"]["name"], format!("fn_{h}"));
        assert_eq!(row["samples"], n as u64, "{json}");
    }
    // By thread: the contexts, named from the thread table, and --tid filters.
    let o = tbrw(&["report", gen.to_str().unwrap(), "--by", "thread", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = json["rows"].as_array().unwrap();
    for (c, name) in CONTEXT_NAMES.iter().enumerate() {
        let n = g.calls.iter().filter(|k| k.context == c as u32).count();
        let row = rows.iter().find(|r| r["key"]["tid"] == c).unwrap_or_else(|| panic!("no row for {c}: {json}"));
        assert_eq!(row["key"]["kind"], "thread");
        assert_eq!(row["key"]["name"], *name);
        assert_eq!((&row["key"]["index"], &row["key"]["pid"]), (&serde_json::Value::Null, &serde_json::Value::Null));
        assert_eq!(row["samples"], n as u64, "{json}");
    }
    let o = tbrw(&["report", gen.to_str().unwrap(), "--by", "event", "--tid", "1"]);
    let text = String::from_utf8(o.stdout).unwrap();
    let in_1 = g.calls.iter().filter(|k| k.context == 1).count();
    assert!(text.contains(&format!("{in_1} of {} samples", g.calls.len())), "{text}");
    // Grouping that needs a bind says why it cannot be had.
    let o = tbrw(&["report", gen.to_str().unwrap(), "--by", "module"]);
    assert!(!o.status.success());
    assert!(String::from_utf8(o.stderr).unwrap().contains("cannot be bound"));

    // The .BIN next to the export is found without --bin.
    let g = generate(50, 4, true);
    let export = dir.path().join("session.txt");
    std::fs::write(&export, text1(&g, true, false)).unwrap();
    std::fs::write(dir.path().join("session.txt.BIN"), winidea::write_bin(&g.events, BinVersion::V1_1)).unwrap();
    let o = tbrw(&["import", "winidea", export.to_str().unwrap(), "-o", gen.to_str().unwrap(), "--check", "--force"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8(o.stderr).unwrap().contains("session.txt.BIN too"));
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(stdout.contains(&format!("{} calls", g.calls.len())) && stdout.contains("(.BIN version 1.1)"), "{stdout}");
    let o = tbrw(&[
        "export",
        "vtune-csv",
        gen.to_str().unwrap(),
        "-o",
        dir.path().join("csv").to_str().unwrap(),
        "--hostname",
        "t",
        "--clock",
        "qpc",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Imports `text` (and `bin`), expecting an error that contains `want`, and nothing at the output.
fn rejects(text: &str, bin: Option<&[u8]>, want: &str) {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("bad.txt");
    std::fs::write(&export, text).unwrap();
    let bin_path = dir.path().join("bad.txt.BIN");
    if let Some(b) = bin {
        std::fs::write(&bin_path, b).unwrap();
    }
    let out = dir.path().join("out.tb5");
    let err = import_winidea_file(&export, bin.map(|_| bin_path.as_path()), None, &out, true)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(err.contains(want), "{err:?} does not contain {want:?}");
    assert!(!out.exists(), "{want}: something was left at the output path");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1 + usize::from(bin.is_some()),
        "{want}: temp files left"
    );
}

const FUNCS: &str = "* HANDLE(Functions) %HANDLE%,%NAME%,%VALUE%\n00000000,main,\n10000000,{,51\n";

#[test]
fn bad_input_is_an_error_with_its_line_or_byte() {
    rejects("00000000,main,\n", None, "bad.txt: line 1: data before the first section header");
    rejects("* HANDLE(Functions %HANDLE%\n", None, "line 1: malformed section header");
    rejects("* HANDLE(Functions)\n", None, "line 1: section header \"* HANDLE(Functions)\" names no %MACRO% columns");
    rejects("* BOGUS %A%\n1\n", None, "line 2: unknown section \"BOGUS\"");
    rejects("* HANDLE %HANDLE%\n0\n", None, "line 2: a HANDLE section needs its class");
    rejects(&format!("{FUNCS}zz,f,\n"), None, "line 4: %HANDLE% \"zz\" is not a 32-bit hexadecimal handle");
    rejects(&format!("{FUNCS}60000000,f,\n"), None, "line 4: handle 60000000 has area type 6");
    rejects(
        &format!("{FUNCS}* STATISTICS(Functions) %HANDLE%,%COUNT%\n00000000,many\n"),
        None,
        "line 5: %COUNT% \"many\" is not a number",
    );
    rejects(
        &format!("{FUNCS}* STATISTICS(Functions) %HANDLE%,%COUNT%,%T.NET%\n00000000,1\n"),
        None,
        "line 5: 2 fields where the header has 3 columns",
    );
    let tl = "* TIMELINE %HANDLE%,%EVENT%,%VALUE%,%TIME%\n";
    rejects(
        &format!("{FUNCS}{tl}00000000,E,,-4611686018427387904\n"),
        None,
        "line 5: time -4611686018427387904 ns is 2^62 ns (146 years) or more",
    );
    rejects(&format!("{FUNCS}{tl}00000000,Q,,5\n"), None, "line 5: event \"Q\" is not E, S, R, X or W");
    rejects(&format!("{FUNCS}{tl}00000000,E,,soon\n"), None, "line 5: %TIME% \"soon\" is not a number");
    rejects(&format!("{FUNCS}{tl}20000000,W,xyz,5\n"), None, "line 5: %VALUE% \"xyz\" is not hexadecimal");
    rejects(&format!("{FUNCS}{tl}00000007,E,,5\n"), None, "line 5: handle 00000007 is not in any HANDLE section");
    // An exit before its entry's time: time goes backwards.
    rejects(&format!("{FUNCS}{tl}00000000,E,,50\n00000000,X,,40\n"), None, "line 6: time 40 goes back from 50");
    let mut latin1 = b"* INFO %TOTAL_TIME%\n".to_vec();
    latin1.push(0xE9);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("l.txt"), &latin1).unwrap();
    let err = import_winidea_file(&dir.path().join("l.txt"), None, None, &dir.path().join("o.tb5"), true).unwrap_err();
    assert!(err.to_string().contains("l.txt: line 2 (byte 20): not UTF-8 text"), "{err}");

    // .BIN: a partial entry, a bad event type, an unknown handle.
    let ok = winidea::write_bin(
        &[TimelineEvent { handle: 0, kind: b'E', value: 0, time: 1, context: 0, at: Pos::Byte(0) }],
        BinVersion::V1_1,
    );
    let mut partial = ok.clone();
    partial.push(0);
    rejects(FUNCS, Some(&partial), "bad.txt.BIN: byte 24: 25 bytes is not a whole number of 24-byte entries");
    let mut bad_type = ok.clone();
    bad_type[4] = 0x07;
    rejects(FUNCS, Some(&bad_type), "bad.txt.BIN: byte 4: event type 7");
    let mut unknown = ok.clone();
    unknown.extend_from_slice(&ok);
    unknown[24] = 9;
    rejects(FUNCS, Some(&unknown), "bad.txt.BIN: byte 24: handle 00000009 is not in any HANDLE section");
}

#[test]
fn exits_without_entries_are_counted_skips() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("x.txt");
    std::fs::write(
        &export,
        format!(
            "{FUNCS}* TIMELINE %HANDLE%,%EVENT%,%TIME%\n00000000,X,10\n00000000,E,20\n00000000,X,30\n00000000,E,40\n"
        ),
    )
    .unwrap();
    let stats = import_winidea_file(&export, None, None, &dir.path().join("x.tb5"), true).unwrap();
    assert_eq!((stats.calls, stats.started_before, stats.unfinished), (1, 1, 1));
    let f = Tb5File::open(dir.path().join("x.tb5")).unwrap();
    assert_eq!(stored_calls(&f), [(0, 0, 20, 30, 10, 10)]);
}

#[test]
fn values_and_quoted_names_with_commas() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("q.txt");
    // A source line with commas, not quoted: the surplus fields belong to NAME.
    std::fs::write(
        &export,
        "* HANDLE(Functions) %HANDLE%,%NAME%,%VALUE%\n00000000,\"a.c\"#f,\n10000000,g(1, 2, 3);,12\n",
    )
    .unwrap();
    let out = dir.path().join("q.tb5");
    import_winidea_file(&export, None, None, &out, true).unwrap();
    let f = Tb5File::open(&out).unwrap();
    let ev = f.stream(0).unwrap().events().unwrap().unwrap();
    assert_eq!(f.string(ev[1].name).unwrap(), "\"a.c\"#f:12: g(1, 2, 3);");
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    fn event() -> impl Strategy<Value = (u32, u8, u64, i64, u32)> {
        let handles =
            prop::sample::select(vec![0u32, 1, 0x1000_0000, 0x2000_0000, 0x3000_0000, 0x4000_0000, 0x5000_0000]);
        let kinds = prop::sample::select(vec![b'E', b'S', b'R', b'X', b'W']);
        let times = prop_oneof![any::<i64>(), -1000i64..1000, Just(1i64 << 62), Just(-(1i64 << 62))];
        (handles, kinds, any::<u64>(), times, 0u32..3)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Any sequence of known handles and kinds, in time order or not,
        /// with any times and totals: an answer or an error, never a panic.
        #[test]
        fn build_and_check_never_panic(raw in prop::collection::vec(event(), 0..60), sort in any::<bool>(), total in any::<Option<i64>>()) {
            let text = "* HANDLE(Functions) %HANDLE%,%NAME%,%VALUE%\n00000000,f,\n00000001,g,\n10000000,l,1\n\
                * HANDLE(Data) %HANDLE%,%NAME%,%VALUE%\n20000000,v,\n30000000,,0\n40000000,aux,\n50000000,,0\n\
                * STATISTICS(Functions) %HANDLE%,%COUNT%,%T.NET%,%T.GROSS.AVG%,%T.PERIOD.MAX%,%T.CALL%\n00000000,1,2,3,4,5\n\
                * STATISTICS(Data) %HANDLE%,%VALUE%,%COUNT%,%T.NET%\n30000000,0,1,1\n";
            let mut ex = winidea::parse_text1(text, "p.txt").unwrap();
            ex.total_time = total;
            let mut events: Vec<TimelineEvent> = raw
                .iter()
                .map(|&(handle, kind, value, time, context)| TimelineEvent { handle, kind, value, time, context, at: Pos::Byte(0) })
                .collect();
            if sort {
                events.sort_by_key(|e| e.time);
            }
            if let Ok(tl) = winidea::build(&ex, &events, "p.txt", "p.txt.BIN", ex.total_time) {
                let r = winidea::check(&ex, &tl);
                prop_assert_eq!(r.agree + r.differences.len() as u64 + r.unchecked_count(), 5 + 2);
                for c in &tl.calls {
                    prop_assert!(c.start <= c.end && c.net >= 0 && c.gross >= c.net && c.gross <= c.end - c.start);
                }
            }
        }

        /// Any bytes as a `.BIN` file, either layout: entries or an error.
        #[test]
        fn any_bin_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            for v in [BinVersion::V1_0, BinVersion::V1_1] {
                if let Ok(ev) = winidea::parse_bin(&bytes, v, "x.BIN") {
                    prop_assert_eq!(ev.len() * 24, bytes.len());
                }
            }
        }

        /// Any text as a Text1 export: a parse or an error.
        #[test]
        fn any_text(text in "(\\* [A-Z]{1,10}(\\([A-Za-z]*\\))? (%[A-Z.]{1,8}%,?){0,4}\n)?([0-9A-Fa-fx,\" EWSRX-]{0,30}\n){0,6}") {
            let _ = winidea::parse_text1(&text, "t.txt");
        }
    }
}

#[test]
fn a_call_running_at_the_end_counts_until_the_session_ends() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("r.txt");
    std::fs::write(
        &export,
        format!(
            "* INFO %TOTAL_TIME%\n100\n\n{FUNCS}* STATISTICS(Functions) %HANDLE%,%COUNT%,%T.NET%\n00000000,1,70\n\
             * TIMELINE %HANDLE%,%EVENT%,%TIME%\n00000000,E,10\n00000000,S,20\n00000000,R,40\n"
        ),
    )
    .unwrap();
    let stats = import_winidea_file(&export, None, None, &dir.path().join("r.tb5"), true).unwrap();
    // 10-20 and 40-100 (TOTAL_TIME): 70 ns.
    assert_eq!((stats.agree, stats.differences.len(), stats.unfinished), (2, 0, 1));
}

#[test]
fn bin_files_are_read_in_pieces_like_a_whole_slice() {
    // 100,000 entries span three 1 MiB pieces; the one 1.0 marker is in the last.
    let mut events: Vec<TimelineEvent> = (0..100_000u64)
        .map(|i| TimelineEvent {
            handle: (i % 7) as u32,
            kind: [b'E', b'X'][(i % 2) as usize],
            value: i,
            time: i as i64,
            context: 3,
            at: Pos::Byte(i * 24),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.BIN");
    let name = path.display().to_string();
    let read_bin = |version, out: &mut Vec<TimelineEvent>| {
        winidea::read_bin(&mut std::fs::File::open(&path).unwrap(), &name, version, out)
    };
    let mut bytes = winidea::write_bin(&events, BinVersion::V1_1);
    std::fs::write(&path, &bytes).unwrap();
    let mut read = Vec::new();
    assert_eq!(read_bin(None, &mut read).unwrap(), BinVersion::V1_1);
    assert_eq!(read, events);
    // The same events as 1.0: detected from the first piece.
    bytes = winidea::write_bin(&events, BinVersion::V1_0);
    std::fs::write(&path, &bytes).unwrap();
    let mut read = Vec::new();
    assert_eq!(read_bin(None, &mut read).unwrap(), BinVersion::V1_0);
    assert_eq!(read, winidea::parse_bin(&bytes, BinVersion::V1_0, &name).unwrap());
    // A bad type in the last piece is reported at its byte.
    events[99_999].kind = b'E';
    let mut bytes = winidea::write_bin(&events, BinVersion::V1_1);
    bytes[99_999 * 24 + 4] = 9;
    std::fs::write(&path, &bytes).unwrap();
    let err = read_bin(Some(BinVersion::V1_1), &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains(&format!("big.BIN: byte {}: event type 9", 99_999 * 24 + 4)), "{err}");
}

#[test]
fn a_bin_out_of_time_order_is_an_error_at_its_byte() {
    let ev = |time: i64| TimelineEvent { handle: 0, kind: b'E', value: 0, time, context: 0, at: Pos::Byte(0) };
    let bytes = winidea::write_bin(&[ev(10), ev(20), ev(15)], BinVersion::V1_1);
    rejects(FUNCS, Some(&bytes), "bad.txt.BIN: byte 48: time 15 goes back from 20");
}
