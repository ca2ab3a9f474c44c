//! `tbrw export flamegraph|pprof|firefox|timeline` on the shipped sample,
//! a sampler import, an MTMC import and a winIDEA import: the outputs
//! decoded back (profile.proto with prost, the Firefox JSON with
//! serde_json, the SVGs as XML with roxmltree) and checked against the
//! sample report's counts; the refusals of streams an export cannot show.
//!
//! Golden outputs: the exports of small shipped inputs are compared byte
//! for byte with the files in `cli/tests/golden/view/` (the pprof profile
//! as a text dump of its decoded fields, the Firefox profile as its
//! gunzipped JSON); no file of this machine may name a frame in them (see
//! [`export_stdout`]). When an output changes on
//! purpose, rewrite the expected files with
//! `TBRW_BLESS=1 cargo test -p tbrw-cli --test view_export golden` and
//! read the diff before committing it.

#[path = "common/mtmc_writer.rs"]
mod mtmc_writer;
mod program;

use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use program::build_prog;
use prost::Message;
use tbrw_export::firefox;
use tbrw_export::flamegraph::{self, FlameOptions};
use tbrw_export::pprof::{self, Profile};
use tbrw_export::timeline::{self, TimelineOptions};
use tbrw_query::report::{self, ReportOptions};
use tbrw_query::stacks::ViewOptions;
use tbrw_query::{By, Weight};
use tbrw_query::{Filters, Query};

/// inferno's SVG has a DOCTYPE.
const XML: roxmltree::ParsingOptions = roxmltree::ParsingOptions { allow_dtd: true, nodes_limit: u32::MAX };

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn sample() -> PathBuf {
    root().join("examples/data/sample.tb5")
}

fn tbrw(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

fn open(p: &Path) -> tbrw::Tb5File {
    tbrw::Tb5File::open(p).unwrap()
}

fn gunzip(p: &Path) -> Vec<u8> {
    let mut v = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap()).read_to_end(&mut v).unwrap();
    v
}

/// The sample report's rows as label -> samples.
fn report_counts(file: &Path, opts: &ReportOptions) -> (u64, BTreeMap<String, u64>) {
    let r = report::run(&open(file), opts, &mut Vec::new(), &mut |_| {}).unwrap();
    (r.samples, r.rows.iter().map(|row| (row.key.to_string(), row.samples)).collect())
}

fn sampler_import(dir: &Path) -> PathBuf {
    let out = dir.join("current.tb5");
    let o = tbrw(&[
        "import",
        "sampler",
        root().join("examples/data/sampler/current.prof").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--volts",
        "12",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn mtmc_import(dir: &Path, tasks: u32) -> PathBuf {
    let mut text = String::new();
    for i in 0..tasks {
        let tid = 100 + i % 4;
        let start = 1_662_113_994_000_000_000 + u64::from(i) * 10_000 + u64::from(i % 7) * 100;
        let end = start + 2_000 + u64::from(i % 13) * 500;
        let line = mtmc_writer::Line::plain(
            tid,
            start,
            end,
            u64::from(i % 3),
            vec![10 * u64::from(i), 5],
            vec![10 * u64::from(i) + 7, 9],
        );
        text.push_str(&mtmc_writer::v01(&line));
        text.push('\n');
    }
    let log = dir.join(format!("tasks{tasks}.log"));
    std::fs::write(&log, text).unwrap();
    let out = dir.join(format!("tasks{tasks}.tb5"));
    let mut w = tbrw::Tb5Writer::create(&out).unwrap();
    let log_file = std::fs::File::open(&log).unwrap();
    tbrw_import::mtmc::import_mtmc(log_file, &log.display().to_string(), &mut w, &Default::default(), ()).unwrap();
    w.close().unwrap();
    out
}

/// main calls CPU_Init, then StaticFunc twice.
const WINIDEA: &str = "* INFO %TOTAL_TIME%\n5000\n\n* HANDLE(Functions) %HANDLE%,%NAME%,%VALUE%\n\
00000000,main,\n00000001,\"TestStatic1.c\"#StaticFunc,\n00000002,CPU_Init,\n\n\
* TIMELINE %HANDLE%,%EVENT%,%VALUE%,%TIME%\n00000000,E,,100\n00000002,E,,150\n00000002,X,,400\n\
00000001,E,,600\n00000001,X,,1500\n00000001,E,,1700\n00000001,X,,2100\n00000000,X,,4000\n";

/// Two contexts, as winIDEA names them: main calls CPU_Init in one while
/// StaticFunc runs in the other.
const WINIDEA_CONTEXTS: &str = "* INFO %TOTAL_TIME%\n5000\n\n* CONTEXTS %NAME%,%HANDLE%\nID_TASK_1MS,0x0\nID_TASK_10MS,0x1\n\n\
* HANDLE(Functions) %HANDLE%,%NAME%,%VALUE%\n00000000,main,\n00000001,\"TestStatic1.c\"#StaticFunc,\n00000002,CPU_Init,\n\n\
* TIMELINE %HANDLE%,%EVENT%,%VALUE%,%TIME%,%CONTEXT%\n00000000,E,,100,ID_TASK_1MS\n00000002,E,,150,ID_TASK_1MS\n\
00000002,X,,400,ID_TASK_1MS\n00000001,E,,600,ID_TASK_10MS\n00000001,X,,1500,ID_TASK_10MS\n00000000,X,,4000,ID_TASK_1MS\n";

fn winidea_contexts_import(dir: &Path) -> PathBuf {
    let text = dir.join("contexts.txt");
    std::fs::write(&text, WINIDEA_CONTEXTS).unwrap();
    let out = dir.join("contexts.tb5");
    let mut w = tbrw::Tb5Writer::create(&out).unwrap();
    let text_file = std::fs::File::open(&text).unwrap();
    let opts = tbrw_import::winidea::WinIdeaOptions::default();
    let stats =
        tbrw_import::winidea::import_winidea(text_file, &text.display().to_string(), None, &mut w, &opts).unwrap();
    w.close().unwrap();
    assert_eq!(stats.calls, 3);
    out
}

fn winidea_import(dir: &Path) -> PathBuf {
    let text = dir.join("calls.txt");
    std::fs::write(&text, WINIDEA).unwrap();
    let out = dir.join("winidea.tb5");
    let mut w = tbrw::Tb5Writer::create(&out).unwrap();
    let text_file = std::fs::File::open(&text).unwrap();
    let opts = tbrw_import::winidea::WinIdeaOptions::default();
    let stats =
        tbrw_import::winidea::import_winidea(text_file, &text.display().to_string(), None, &mut w, &opts).unwrap();
    w.close().unwrap();
    assert_eq!(stats.calls, 4);
    out
}

fn folded(file: &Path, opts: &ViewOptions, by: Vec<By>) -> Vec<(String, u64)> {
    let f = FlameOptions { by, folded: true, title: None };
    flamegraph::folded(&open(file), opts, &f, &mut Vec::new(), &mut |_| {}).unwrap()
}

#[test]
fn folded_stacks_add_up_to_the_module_report_per_module() {
    let opts = ViewOptions::default();
    let lines = folded(&sample(), &opts, vec![By::Module]);
    let (total, _) = report_counts(&sample(), &ReportOptions::new(Default::default(), &[By::Module]));
    assert_eq!(lines.iter().map(|(_, n)| n).sum::<u64>(), total);
    // One frame per line here: the module's file name (or unknown module).
    let r = report::run(
        &open(&sample()),
        &ReportOptions::new(Default::default(), &[By::Module]),
        &mut Vec::new(),
        &mut |_| {},
    )
    .unwrap();
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for row in &r.rows {
        let label = match &row.key {
            report::Key::Module { name, path, .. } => name
                .clone()
                .or_else(|| path.as_deref().map(|p| p.rsplit('/').next().unwrap().to_owned()))
                .unwrap_or_else(|| "[unnamed module]".into()),
            _ => "[unknown]".into(),
        };
        *want.entry(label).or_default() += row.samples;
    }
    let got: BTreeMap<String, u64> = lines.into_iter().collect();
    assert_eq!(got, want);
}

#[test]
fn process_frames_and_filters_follow_the_report() {
    let all = folded(&sample(), &ViewOptions::default(), vec![By::Process, By::Module]);
    let (_, by_process) = report_counts(&sample(), &ReportOptions::new(Default::default(), &[By::Process]));
    // The first frame is the process: its sums are the process report's.
    let mut firsts: BTreeMap<String, u64> = BTreeMap::new();
    for (stack, n) in &all {
        *firsts.entry(stack.split(';').next().unwrap().to_owned()).or_default() += n;
    }
    let mut want: Vec<u64> = by_process.values().copied().collect();
    let mut got: Vec<u64> = firsts.values().copied().collect();
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want);
    // --pid keeps one process's samples.
    let r = report::run(
        &open(&sample()),
        &ReportOptions::new(Default::default(), &[By::Process]),
        &mut Vec::new(),
        &mut |_| {},
    )
    .unwrap();
    let (pid, n) = match &r.rows[0].key {
        report::Key::Process { pid, .. } => (*pid, r.rows[0].samples),
        k => panic!("{k:?}"),
    };
    let only = folded(
        &sample(),
        &ViewOptions {
            query: Query { filters: Filters { pid: Some(pid), ..Filters::default() }, ..Query::default() },
            ..ViewOptions::default()
        },
        vec![By::Process],
    );
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].1, n);
    assert!(only[0].0.contains(&format!("(pid {pid})")), "{only:?}");
}

#[test]
fn the_svg_is_well_formed_with_a_frame_per_stack_part() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("flame.svg");
    let o = tbrw(&["export", "flamegraph", sample().to_str().unwrap(), "-o", out.to_str().unwrap(), "--by", "module"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    let doc = roxmltree::Document::parse_with_options(&text, XML).unwrap();
    let titles: Vec<String> =
        doc.descendants().filter(|n| n.has_tag_name("title")).filter_map(|n| n.text()).map(str::to_owned).collect();
    let (total, _) = report_counts(&sample(), &ReportOptions::new(Default::default(), &[By::Module]));
    // inferno's root frame counts every sample, and each module has its frame.
    assert!(
        titles.iter().any(|t| t.starts_with(&format!("all ({} samples, 100%)", fmt_thousands(total)))),
        "{titles:?}"
    );
    for (stack, n) in folded(&sample(), &ViewOptions::default(), vec![By::Module]) {
        assert!(
            titles.iter().any(|t| t.starts_with(&format!("{stack} ({} samples", fmt_thousands(n)))),
            "{stack} {n} not in {titles:?}"
        );
    }
    // The widths: the root frame spans the whole graph, a module its share.
    let rects: Vec<(String, f64)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("g"))
        .filter_map(|g| {
            let t = g.children().find(|c| c.has_tag_name("title"))?.text()?.to_owned();
            let r = g.children().find(|c| c.has_tag_name("rect"))?;
            Some((t, r.attribute("width")?.trim_end_matches('%').parse().ok()?))
        })
        .collect();
    let root = rects.iter().find(|(t, _)| t.starts_with("all ")).unwrap().1;
    for (t, w) in &rects {
        assert!(*w <= root + 1e-9, "{t} wider than all");
    }
    assert!((root - 100.0).abs() < 1.0, "root width {root}");
}

/// inferno's thousands separators.
fn fmt_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut o = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(c);
    }
    o
}

#[test]
fn pprof_decodes_back_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.pb.gz");
    let o = tbrw(&["export", "pprof", sample().to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p = Profile::decode(gunzip(&out).as_slice()).unwrap();
    let s = |i: i64| p.string_table[i as usize].as_str();
    assert_eq!(s(0), "");
    assert_eq!((s(p.sample_type[0].r#type), s(p.sample_type[0].unit)), ("samples", "count"));
    let (total, by_thread) = report_counts(&sample(), &ReportOptions::new(Default::default(), &[By::Thread]));
    assert_eq!(p.sample.iter().map(|x| x.value[0]).sum::<i64>() as u64, total);
    // Per tid label, the thread report's counts.
    let mut per_tid: BTreeMap<i64, u64> = BTreeMap::new();
    for x in &p.sample {
        assert_eq!(x.value.len(), p.sample_type.len());
        let keys: Vec<&str> = x.label.iter().map(|l| s(l.key)).collect();
        assert_eq!(&keys[..2], ["pid", "tid"]);
        *per_tid.entry(x.label[1].num).or_default() += x.value[0] as u64;
        for id in &x.location_id {
            assert!(*id >= 1 && *id as usize <= p.location.len());
        }
    }
    let mut want: Vec<u64> = by_thread.values().copied().collect();
    let mut got: Vec<u64> = per_tid.values().copied().collect();
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want);
    // Locations: ids in order, one per distinct (mapping, address).
    let mut seen = HashSet::new();
    for (i, l) in p.location.iter().enumerate() {
        assert_eq!(l.id, i as u64 + 1);
        assert!(seen.insert((l.mapping_id, l.address)), "location {l:?} twice");
        if l.mapping_id != 0 {
            let m = &p.mapping[l.mapping_id as usize - 1];
            assert!(m.memory_start <= l.address && l.address < m.memory_limit, "{l:?} outside {m:?}");
        }
    }
    for (i, m) in p.mapping.iter().enumerate() {
        assert_eq!(m.id, i as u64 + 1);
        assert!(m.memory_start < m.memory_limit);
        assert!(!s(m.filename).is_empty());
    }
    // The same bytes from the library.
    let q = pprof::profile(&open(&sample()), &ViewOptions::default(), &mut Vec::new(), &mut |_| {}).unwrap();
    assert_eq!(p, q);
}

#[test]
fn pprof_of_a_sampler_import_has_cputime_time_and_opens_in_go_pprof() {
    let dir = tempfile::tempdir().unwrap();
    let file = sampler_import(dir.path());
    let out = dir.path().join("p.pb.gz");
    let o = tbrw(&[
        "export",
        "pprof",
        file.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--weight",
        "cputime",
        "--search-path",
        "/nonexistent",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p = Profile::decode(gunzip(&out).as_slice()).unwrap();
    let s = |i: i64| p.string_table[i as usize].as_str();
    assert_eq!(p.sample_type.len(), 2);
    assert_eq!((s(p.sample_type[1].r#type), s(p.sample_type[1].unit)), ("cpu", "nanoseconds"));
    let (total, _) = report_counts(&file, &ReportOptions::default());
    assert_eq!(p.sample.iter().map(|x| x.value[0]).sum::<i64>() as u64, total);
    let query = Query { weight: Weight::Cputime, ..Query::default() };
    let r = report::run(&open(&file), &ReportOptions::new(query, &[By::Thread]), &mut Vec::new(), &mut |_| {}).unwrap();
    let want = r.weight.unwrap().total;
    let got: i64 = p.sample.iter().map(|x| x.value[1]).sum();
    assert!((got as f64 - want).abs() <= p.sample.len() as f64, "{got} vs {want}");
    // 120 samples a millisecond apart.
    assert!(p.duration_nanos > 100_000_000 && p.duration_nanos < 130_000_000, "{}", p.duration_nanos);
    match Command::new("go").args(["tool", "pprof", "-raw"]).arg(&out).output() {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(text.contains("samples/count"), "{text}");
        }
        Ok(o) => panic!("go tool pprof refused the profile: {}", String::from_utf8_lossy(&o.stderr)),
        Err(_) => eprintln!("note: skipped go tool pprof -raw: go is not installed"),
    }
}

#[test]
fn firefox_has_a_thread_per_tb5_thread_with_its_samples() {
    let dir = tempfile::tempdir().unwrap();
    let file = sampler_import(dir.path());
    let out = dir.path().join("f.json.gz");
    let o = tbrw(&["export", "firefox", file.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&gunzip(&out)).unwrap();
    assert!(v["meta"]["version"].as_u64().is_some(), "{}", v["meta"]);
    let threads = v["threads"].as_array().unwrap();
    let (_, by_thread) = report_counts(&file, &ReportOptions::new(Default::default(), &[By::Thread]));
    assert_eq!(threads.len(), by_thread.len());
    let mut got = Vec::new();
    for t in threads {
        let samples = &t["samples"];
        let n = samples["length"].as_u64().unwrap();
        got.push(n);
        // Time stamps never go back, stacks point into the stack table.
        let times: Vec<f64> = match samples.get("time") {
            Some(a) => a.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect(),
            None => {
                let mut acc = 0.0;
                samples["timeDeltas"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| {
                        acc += x.as_f64().unwrap();
                        acc
                    })
                    .collect()
            }
        };
        assert_eq!(times.len() as u64, n);
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        let stacks = t["stackTable"]["length"].as_u64().unwrap();
        for s in samples["stack"].as_array().unwrap() {
            assert!(s.as_u64().unwrap() < stacks);
        }
        assert!(t["tid"].as_str().is_some() || t["tid"].as_u64().is_some());
    }
    let mut want: Vec<u64> = by_thread.values().copied().collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    // Libraries from the modules.
    let libs = v["libs"].as_array().unwrap();
    assert!(libs.iter().any(|l| l["name"] == "fixture-app"), "{libs:?}");
}

#[test]
fn firefox_writes_gzip_for_a_gz_name_and_plain_json_otherwise_as_samply() {
    let dir = tempfile::tempdir().unwrap();
    let file = sample();
    let export = |name: &str| {
        let out = dir.path().join(name);
        let o = tbrw(&["export", "firefox", file.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(out).unwrap()
    };
    let gz = export("p.json.gz");
    assert_eq!(gz[..2], [0x1f, 0x8b], "a .gz name is gzip");
    let unzipped = gunzip(&dir.path().join("p.json.gz"));
    for plain in ["p.json", "profile"] {
        let bytes = export(plain);
        assert_eq!(bytes.first(), Some(&b'{'), "{plain}: plain JSON");
        assert!(bytes == unzipped, "{plain}: the JSON the .gz holds");
    }
    // Standard output has no name: gzip, as before.
    let o = tbrw(&["export", "firefox", file.to_str().unwrap(), "-o", "-"]);
    assert!(o.status.success());
    assert_eq!(o.stdout[..2], [0x1f, 0x8b]);
}

#[test]
fn mtmc_tasks_become_markers_and_timeline_bars_with_their_figures() {
    let dir = tempfile::tempdir().unwrap();
    let file = mtmc_import(dir.path(), 40);
    let out = dir.path().join("t.svg");
    let opts = TimelineOptions { width: 40_000, ..TimelineOptions::default() };
    let mut svg = Vec::new();
    let s = timeline::write(&open(&file), &opts, &mut svg).unwrap();
    assert_eq!((s.intervals, s.bars, s.summed, s.lanes), (40, 40, 0, 4));
    let text = String::from_utf8(svg).unwrap();
    let doc = roxmltree::Document::parse_with_options(&text, XML).unwrap();
    let titles: Vec<&str> = doc.descendants().filter(|n| n.has_tag_name("title")).filter_map(|n| n.text()).collect();
    assert_eq!(titles.len(), 40);
    // Task 0: 2,000 ns, counter deltas 7 and 4.
    assert!(
        titles.iter().any(|t| t.contains("duration: 2.000 µs")
            && t.contains("counter 0 delta: 7")
            && t.contains("counter 1 delta: 4")),
        "{titles:?}"
    );
    // The command line writes the same drawing.
    let o = tbrw(&["export", "timeline", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "--width", "40000"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);

    let ff = dir.path().join("t.json.gz");
    let o = tbrw(&["export", "firefox", file.to_str().unwrap(), "-o", ff.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&gunzip(&ff)).unwrap();
    let threads = v["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 4);
    let markers: u64 = threads.iter().map(|t| t["markers"]["length"].as_u64().unwrap()).sum();
    assert_eq!(markers, 40);
    // Task 0 starts the profile and lasts 2 µs.
    let first = threads
        .iter()
        .flat_map(|t| {
            let m = &t["markers"];
            let n = m["length"].as_u64().unwrap() as usize;
            (0..n).map(move |i| (m["startTime"][i].as_f64().unwrap(), m["endTime"][i].as_f64().unwrap()))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap();
    assert_eq!(first.0, 0.0);
    assert!((first.1 - 0.002).abs() < 1e-9, "task 0 lasts 2 µs: {first:?}");
}

#[test]
fn ten_thousand_intervals_are_summed_below_a_pixel() {
    let dir = tempfile::tempdir().unwrap();
    let file = mtmc_import(dir.path(), 10_000);
    let mut svg = Vec::new();
    let s = timeline::write(&open(&file), &TimelineOptions::default(), &mut svg).unwrap();
    assert_eq!(s.intervals, 10_000);
    assert_eq!(s.bars + s.summed, 10_000);
    // Four lanes of about 1,000 pixels: a bar per pixel at most.
    assert!(s.summed_bars <= 4 * 1_200, "{s:?}");
    assert!(svg.len() < 2_000_000, "{} bytes", svg.len());
    let text = String::from_utf8(svg).unwrap();
    roxmltree::Document::parse_with_options(&text, XML).unwrap();
}

#[test]
fn winidea_calls_nest_in_their_context_lane() {
    let dir = tempfile::tempdir().unwrap();
    let file = winidea_import(dir.path());
    let mut svg = Vec::new();
    let s = timeline::write(&open(&file), &TimelineOptions::default(), &mut svg).unwrap();
    assert!(s.intervals > 0 && s.bars > 0, "{s:?}");
    let text = String::from_utf8(svg).unwrap();
    let doc = roxmltree::Document::parse_with_options(&text, XML).unwrap();
    let titles: Vec<&str> = doc.descendants().filter(|n| n.has_tag_name("title")).filter_map(|n| n.text()).collect();
    assert_eq!(s.intervals, 4);
    assert!(
        titles.iter().any(|t| t.starts_with("main") && t.contains("net: ") && t.contains("duration: 3.900 µs")),
        "{titles:?}"
    );
    // A call inside main is drawn a row below it.
    let ys: HashSet<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.parent().is_some_and(|p| p.has_tag_name("g")))
        .filter_map(|n| n.attribute("y").map(str::to_owned))
        .collect();
    assert!(ys.len() >= 2, "no nesting: {ys:?}");
}

#[test]
fn exports_that_make_no_sense_say_which_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x");
    let o = tbrw(&["export", "timeline", sample().to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(e.contains("sample.tb5: stream 0 has no intervals") && e.contains("export flamegraph"), "{e}");
    let file = winidea_import(dir.path());
    for what in ["flamegraph", "pprof"] {
        let o = tbrw(&["export", what, file.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(
            e.contains("winidea.tb5: stream 0: it has no instruction pointer") && e.contains("export timeline"),
            "{e}"
        );
        assert!(!out.exists(), "nothing is left behind");
    }
    // --weight cputime needs a thread CPU time field, and says so.
    let o = tbrw(&["export", "pprof", sample().to_str().unwrap(), "-o", out.to_str().unwrap(), "--weight", "cputime"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("--weight cputime needs a thread CPU time field (cputime_delta 0x4004 or cputime 0x4000"),
        "{e}"
    );
    assert!(!out.exists());
}

#[test]
fn outputs_need_force_and_never_replace_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.txt");
    std::fs::write(&out, "old").unwrap();
    let s = sample();
    let args = ["export", "flamegraph", s.to_str().unwrap(), "-o", out.to_str().unwrap(), "--folded"];
    let o = tbrw(&args);
    assert!(String::from_utf8_lossy(&o.stderr).contains("add --force"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    let o = tbrw(&[&args[..], &["--force"]].concat());
    assert!(o.status.success());
    assert!(std::fs::read_to_string(&out).unwrap().lines().all(|l| l
        .rsplit_once(' ')
        .unwrap()
        .1
        .parse::<u64>()
        .is_ok()));
    let o = tbrw(&["export", "pprof", s.to_str().unwrap(), "-o", s.to_str().unwrap(), "--force"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("is the input"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn call_chains_of_a_perf_import_become_deeper_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    let rec = Command::new("perf")
        .args(["record", "-N", "-q", "-g", "-F", "2000", "-o"])
        .arg(&data)
        .args(["--", "sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"])
        .output();
    match rec {
        Ok(o) if o.status.success() && data.exists() => {}
        Ok(o) => {
            eprintln!("note: skipped: perf record failed: {}", String::from_utf8_lossy(&o.stderr));
            return;
        }
        Err(e) => {
            eprintln!("note: skipped: perf cannot run: {e}");
            return;
        }
    }
    let file = dir.path().join("perf.tb5");
    let o = tbrw(&["import", "perf", data.to_str().unwrap(), "-o", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines = folded(&file, &ViewOptions::default(), vec![By::Module, By::Function]);
    let (total, _) = report_counts(&file, &ReportOptions::new(Default::default(), &[By::Module]));
    assert_eq!(lines.iter().map(|(_, n)| n).sum::<u64>(), total);
    assert!(lines.iter().any(|(s, _)| s.split(';').count() >= 3), "no chain: {lines:?}");
    let p = pprof::profile(&open(&file), &ViewOptions::default(), &mut Vec::new(), &mut |_| {}).unwrap();
    assert!(p.sample.iter().any(|s| s.location_id.len() > 1));
    assert_eq!(p.sample_type.len(), 2, "samples and perf's periods");
}

#[test]
fn firefox_of_the_shipped_sample_counts_every_sample() {
    let (v, s) = firefox_profile(&sample());
    let (total, by_thread) = report_counts(&sample(), &ReportOptions::new(Default::default(), &[By::Thread]));
    assert_eq!(s.samples, total);
    assert_eq!(s.threads, by_thread.len());
    let n: u64 = v["threads"].as_array().unwrap().iter().map(|t| t["samples"]["length"].as_u64().unwrap()).sum();
    assert_eq!(n, total);
}

/// The Firefox profile of `file` (default options) as its JSON, and what
/// the export says it holds.
fn firefox_profile(file: &Path) -> (serde_json::Value, firefox::FirefoxSummary) {
    let (p, s) = firefox::profile(&open(file), &ViewOptions::default(), &mut Vec::new(), &mut |_| {}).unwrap();
    let mut json = Vec::new();
    firefox::json(&p, &s, &mut json).unwrap();
    (serde_json::from_slice(&json).unwrap(), s)
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/view")
}

/// Compares `got` with the golden file `name`, or writes it with `TBRW_BLESS=1`.
fn check_golden(name: &str, got: &[u8]) {
    let path = golden_dir().join(name);
    if std::env::var_os("TBRW_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read(&path)
        .unwrap_or_else(|_| panic!("{} is missing: run with TBRW_BLESS=1 (see this file's doc)", path.display()));
    if want != got {
        let at = want.iter().zip(got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
        let line = want[..at].iter().filter(|&&c| c == b'\n').count() + 1;
        let around = |v: &[u8]| String::from_utf8_lossy(&v[at.saturating_sub(60)..(at + 60).min(v.len())]).into_owned();
        panic!(
            "{} differs from the output at byte {at} (line {line}):\n  expected: {:?}\n  got:      {:?}\n\
             (rewrite with TBRW_BLESS=1 if the change is intended)",
            path.display(),
            around(&want),
            around(got)
        );
    }
}

/// `tbrw export ARGS... -o -` (standard output), run in the empty directory
/// `empty` with `--symfs empty` for the sample exports: a module's file is
/// then looked for under `empty` and at its recorded path, and the
/// sampler import's modules are recorded as bare file names (`libc.so.6`),
/// which no directory of this machine resolves. The shipped sample's
/// modules have absolute paths (`/usr/lib/x86_64-linux-gnu/libc.so.6`)
/// that this machine's files would name, so its goldens leave out
/// function frames.
fn export_stdout(args: &[&str], empty: &Path) -> Vec<u8> {
    let mut all: Vec<&str> = vec!["export"];
    all.extend_from_slice(args);
    all.extend(["-o", "-"]);
    if args[0] != "timeline" {
        all.extend(["--symfs", empty.to_str().unwrap()]);
    }
    let o = Command::new(env!("CARGO_BIN_EXE_tbrw")).args(&all).current_dir(empty).output().unwrap();
    assert!(o.status.success(), "{all:?}: {}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

/// A new empty directory in `dir`.
fn empty_dir(dir: &Path) -> PathBuf {
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).unwrap();
    empty
}

fn gunzip_bytes(b: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    flate2::read::GzDecoder::new(b).read_to_end(&mut v).unwrap();
    v
}

/// A decoded profile.proto as text: every field, in the proto's order,
/// strings resolved, one item per line.
fn pprof_text(p: &Profile) -> String {
    use std::fmt::Write as _;
    let s = |i: i64| format!("{:?}", p.string_table.get(i as usize).map_or("<bad string index>", String::as_str));
    let vt = |v: &pprof::ValueType| format!("{}/{}", s(v.r#type), s(v.unit));
    let mut o = String::new();
    let types: Vec<String> = p.sample_type.iter().map(vt).collect();
    writeln!(o, "sample_type: {}", types.join(", ")).unwrap();
    writeln!(o, "default_sample_type: {}", s(p.default_sample_type)).unwrap();
    writeln!(o, "time_nanos: {}", p.time_nanos).unwrap();
    writeln!(o, "duration_nanos: {}", p.duration_nanos).unwrap();
    writeln!(o, "period_type: {}", p.period_type.as_ref().map_or("none".into(), vt)).unwrap();
    writeln!(o, "period: {}", p.period).unwrap();
    writeln!(o, "drop_frames: {}", s(p.drop_frames)).unwrap();
    writeln!(o, "keep_frames: {}", s(p.keep_frames)).unwrap();
    for c in &p.comment {
        writeln!(o, "comment: {}", s(*c)).unwrap();
    }
    writeln!(o, "string_table: {} strings", p.string_table.len()).unwrap();
    for m in &p.mapping {
        writeln!(
            o,
            "mapping {}: {:#x}..{:#x} file_offset {:#x} filename {} build_id {} functions {} filenames {} lines {} inline {}",
            m.id,
            m.memory_start,
            m.memory_limit,
            m.file_offset,
            s(m.filename),
            s(m.build_id),
            m.has_functions,
            m.has_filenames,
            m.has_line_numbers,
            m.has_inline_frames
        )
        .unwrap();
    }
    for l in &p.location {
        let lines: Vec<String> =
            l.line.iter().map(|x| format!("function {} line {} column {}", x.function_id, x.line, x.column)).collect();
        writeln!(
            o,
            "location {}: mapping {} address {:#x} folded {} [{}]",
            l.id,
            l.mapping_id,
            l.address,
            l.is_folded,
            lines.join("; ")
        )
        .unwrap();
    }
    for f in &p.function {
        writeln!(
            o,
            "function {}: name {} system_name {} filename {} start_line {}",
            f.id,
            s(f.name),
            s(f.system_name),
            s(f.filename),
            f.start_line
        )
        .unwrap();
    }
    for x in &p.sample {
        let labels: Vec<String> = x
            .label
            .iter()
            .map(|l| {
                let unit = if l.num_unit == 0 { String::new() } else { format!(" {}", s(l.num_unit)) };
                let key = p.string_table.get(l.key as usize).map_or("<bad string index>", String::as_str);
                if l.str != 0 {
                    format!("{key}={}", s(l.str))
                } else {
                    format!("{key}={}{unit}", l.num)
                }
            })
            .collect();
        writeln!(o, "sample: locations {:?} values {:?} labels {}", x.location_id, x.value, labels.join(" ")).unwrap();
    }
    o
}

#[test]
fn golden_folded_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let empty = empty_dir(dir.path());
    let s = sample();
    check_golden(
        "sample.folded",
        &export_stdout(&["flamegraph", s.to_str().unwrap(), "--folded", "--by", "process,thread,module"], &empty),
    );
    let imported = sampler_import(dir.path());
    check_golden(
        "current.folded",
        &export_stdout(
            &["flamegraph", imported.to_str().unwrap(), "--folded", "--by", "thread,module,function"],
            &empty,
        ),
    );
}

#[test]
fn golden_flame_graph_svg() {
    let dir = tempfile::tempdir().unwrap();
    let empty = empty_dir(dir.path());
    let s = sample();
    check_golden(
        "sample.flamegraph.svg",
        &export_stdout(&["flamegraph", s.to_str().unwrap(), "--by", "process,thread,module"], &empty),
    );
}

#[test]
fn golden_pprof_dump() {
    let dir = tempfile::tempdir().unwrap();
    let empty = empty_dir(dir.path());
    let imported = sampler_import(dir.path());
    let bytes = export_stdout(&["pprof", imported.to_str().unwrap(), "--weight", "energy"], &empty);
    let p = Profile::decode(gunzip_bytes(&bytes).as_slice()).unwrap();
    check_golden("current.pprof.txt", pprof_text(&p).as_bytes());
}

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(p)
}

/// The MTMC test log with a migrated task and one that never ends, named
/// as README's Pictures section names it (outputs name their input file),
/// so that the golden timeline is the SVG of its picture.
fn golden_mtmc(dir: &Path) -> PathBuf {
    let mtmc = dir.join("raw.tb5");
    let log = data("mtmc/mtmc_raw_140736934563840");
    let mut w = tbrw::Tb5Writer::create(&mtmc).unwrap();
    let log_file = std::fs::File::open(&log).unwrap();
    tbrw_import::mtmc::import_mtmc(log_file, &log.display().to_string(), &mut w, &Default::default(), ()).unwrap();
    w.close().unwrap();
    mtmc
}

#[test]
fn golden_firefox_json() {
    let dir = tempfile::tempdir().unwrap();
    let empty = empty_dir(dir.path());
    let imported = sampler_import(dir.path());
    check_golden(
        "current.firefox.json",
        &gunzip_bytes(&export_stdout(&["firefox", imported.to_str().unwrap()], &empty)),
    );
    let mtmc = golden_mtmc(dir.path());
    check_golden("mtmc.firefox.json", &gunzip_bytes(&export_stdout(&["firefox", mtmc.to_str().unwrap()], &empty)));
}

#[test]
fn golden_timelines() {
    let dir = tempfile::tempdir().unwrap();
    let empty = empty_dir(dir.path());
    let mtmc = golden_mtmc(dir.path());
    check_golden("mtmc.timeline.svg", &export_stdout(&["timeline", mtmc.to_str().unwrap()], &empty));
    let winidea = winidea_contexts_import(dir.path());
    check_golden("winidea.timeline.svg", &export_stdout(&["timeline", winidea.to_str().unwrap()], &empty));
}

#[test]
fn winidea_lanes_and_hover_text_name_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let file = winidea_contexts_import(dir.path());
    let mut svg = Vec::new();
    let s = timeline::write(&open(&file), &TimelineOptions { width: 4_000, ..TimelineOptions::default() }, &mut svg)
        .unwrap();
    assert_eq!((s.intervals, s.bars, s.lanes), (3, 3, 2));
    let text = String::from_utf8(svg).unwrap();
    let doc = roxmltree::Document::parse_with_options(&text, XML).unwrap();
    let titles: Vec<&str> = doc.descendants().filter(|n| n.has_tag_name("title")).filter_map(|n| n.text()).collect();
    // Each call's hover text names its context as winIDEA does; none says tid.
    let of = |name: &str| titles.iter().find(|t| t.starts_with(name)).unwrap_or_else(|| panic!("{name}: {titles:?}"));
    assert!(of("main\n").contains("\ncontext: ID_TASK_1MS"), "{titles:?}");
    assert!(of("CPU_Init\n").contains("\ncontext: ID_TASK_1MS"), "{titles:?}");
    assert!(of("\"TestStatic1.c\"#StaticFunc\n").contains("\ncontext: ID_TASK_10MS"), "{titles:?}");
    assert!(titles.iter().all(|t| !t.contains("tid")), "{titles:?}");
    // The lanes are labelled with the context names alone.
    let labels: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("text-anchor") == Some("end"))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(labels, ["ID_TASK_1MS", "ID_TASK_10MS"]);
    // The Firefox export names its threads the same way, and its markers too.
    let (v, _) = firefox_profile(&file);
    let mut names: Vec<&str> = v["threads"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["ID_TASK_10MS", "ID_TASK_1MS"]);
    let strings = v["shared"]["stringArray"].to_string() + &v["threads"].to_string();
    assert!(strings.contains("context ID_TASK_10MS"), "{strings}");
    // MTMC tasks keep their tid.
    let mtmc = mtmc_import(dir.path(), 4);
    let mut svg = Vec::new();
    timeline::write(&open(&mtmc), &TimelineOptions { width: 40_000, ..TimelineOptions::default() }, &mut svg).unwrap();
    let text = String::from_utf8(svg).unwrap();
    assert!(text.contains("\ntid: 100\n") && text.contains(" (tid 100)</text>"), "{text}");
}

#[test]
fn firefox_cpu_deltas_add_up_to_each_threads_cputime() {
    let dir = tempfile::tempdir().unwrap();
    let file = sampler_import(dir.path());
    let (v, _) = firefox_profile(&file);
    let query = Query { weight: Weight::Cputime, ..Query::default() };
    let r = report::run(&open(&file), &ReportOptions::new(query, &[By::Thread]), &mut Vec::new(), &mut |_| {}).unwrap();
    let want: BTreeMap<String, f64> = r
        .rows
        .iter()
        .map(|row| {
            let tid = match &row.key {
                report::Key::Thread { tid, .. } => tid.to_string(),
                k => panic!("{k:?}"),
            };
            (tid, row.weight.unwrap())
        })
        .collect();
    assert_eq!(want.len(), 2);
    for t in v["threads"].as_array().unwrap() {
        let micros: u64 = t["samples"]["threadCPUDelta"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).sum();
        let ns = want[t["tid"].as_str().map_or_else(|| t["tid"].to_string(), str::to_owned).as_str()];
        // Whole microseconds, the remainder carried: never a microsecond off.
        assert!((micros as f64 * 1e3 - ns).abs() < 1e3, "tid {}: {micros} µs for {ns} ns", t["tid"]);
    }
}

fn perf_matrix() -> PathBuf {
    data("matrix/perf.tb5")
}

/// The JSON `tbrw export firefox FILE` writes.
fn firefox_json(file: &Path, dir: &Path, extra: &[&str]) -> serde_json::Value {
    let out = dir.join("f.json.gz");
    let mut args = vec!["export", "firefox", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "-f"];
    args.extend_from_slice(extra);
    let o = tbrw(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&gunzip(&out)).unwrap()
}

/// Issue 33, item 1: a stream without CPU time has no `threadCPUDelta`
/// column (the profiler reads 0 as idle, a missing column as running);
/// one with CPU time has it, in µs, adding up to each thread's cputime.
#[test]
fn firefox_cpu_deltas_only_where_cpu_time_is_known() {
    let dir = tempfile::tempdir().unwrap();
    for file in [sample(), perf_matrix()] {
        let v = firefox_json(&file, dir.path(), &[]);
        for t in v["threads"].as_array().unwrap() {
            assert!(t["samples"].get("threadCPUDelta").is_none(), "{}: {}", file.display(), t["name"]);
            assert!(t["samples"]["length"].as_u64().unwrap() > 0);
        }
        // The unit stays declared: the profiler requires it.
        assert_eq!(v["meta"]["sampleUnits"]["threadCPUDelta"], "µs");
    }
    let imported = sampler_import(dir.path());
    let v = firefox_json(&imported, dir.path(), &[]);
    let query = Query { weight: Weight::Cputime, ..Query::default() };
    let r =
        report::run(&open(&imported), &ReportOptions::new(query, &[By::Thread]), &mut Vec::new(), &mut |_| {}).unwrap();
    let total_ns = r.weight.unwrap().total;
    let micros: u64 = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["samples"]["threadCPUDelta"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()))
        .sum();
    assert!(micros > 0 && (micros as f64 * 1e3 - total_ns).abs() < 2e3, "{micros} µs for {total_ns} ns");
}

/// Issue 33, item 3: the profile says its frames are named (the profiler
/// then asks no symbol server), and libraries with a noted build id carry
/// it as their code id and its Breakpad form as their debug id.
#[test]
fn firefox_is_symbolicated_with_build_ids_as_library_ids() {
    let dir = tempfile::tempdir().unwrap();
    let v = firefox_json(&perf_matrix(), dir.path(), &[]);
    assert_eq!(v["meta"]["symbolicated"], true);
    let libs = v["libs"].as_array().unwrap();
    let lib = |name: &str| libs.iter().find(|l| l["name"] == name).unwrap_or_else(|| panic!("{name}: {libs:?}"));
    // `named`'s build id, 389e8736b9dba3d530ec2cf0251bcc363a8900bb (the
    // perf import's module notes): its first 16 bytes as a GUID, age 0.
    assert_eq!(lib("named")["codeId"], "389e8736b9dba3d530ec2cf0251bcc363a8900bb");
    assert_eq!(lib("named")["breakpadId"], "36879E38DBB9D5A330EC2CF0251BCC360");
    // No build id noted: no code id, the nil debug id.
    assert!(lib("[kernel.kallsyms]")["codeId"].is_null());
    assert_eq!(lib("[kernel.kallsyms]")["breakpadId"], "0".repeat(33));
    // An interval profile has nothing to name either.
    let v = firefox_json(&golden_mtmc(dir.path()), dir.path(), &[]);
    assert_eq!(v["meta"]["symbolicated"], true);
}

/// A program built here (`cc -g`), for exports that need a module's
/// file: `dir/prog`, or `None` (with a note) without cc.
fn build_program(dir: &Path) -> Option<PathBuf> {
    const SOURCE: &str = "volatile double sink;\n\
__attribute__((noinline)) void spin_a(long n) {\n    double s = 0;\n    for (long i = 0; i < n; i++)\n        s += (double)(i ^ (i >> 3));\n    sink = s;\n}\n\
__attribute__((noinline)) void spin_b(long n) {\n    double s = 0;\n    for (long i = 0; i < n; i++)\n        s += (double)(i * 7 + (i >> 5));\n    sink = s;\n}\n\
int main(void) { spin_a(100); spin_b(100); return 0; }\n";
    build_prog(dir, "prog.c", SOURCE, &["-g", "-O1"])
}

/// `prog`'s function symbols, (name, address, size), from its symbol table.
fn functions_of(prog: &Path) -> Vec<(String, u64, u64)> {
    let o = Command::new("nm").args(["-S", "--defined-only"]).arg(prog).output();
    let text = match o {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => return Vec::new(),
    };
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let (true, Ok(a), Ok(s)) = (
                w.len() == 4 && w[2].eq_ignore_ascii_case("t"),
                u64::from_str_radix(w[0], 16),
                u64::from_str_radix(w[1], 16),
            ) else {
                return None;
            };
            w[3].starts_with("spin_").then(|| (w[3].to_owned(), a, s))
        })
        .collect()
}

/// A TB5 file of `prog` mapped in two processes (pids 1 and 2, at
/// different addresses, no file offset noted: the module starts at the
/// file's first byte), with `per` samples in each function in each.
fn two_processes(dir: &Path, prog: &Path, per: u64) -> PathBuf {
    use tbrw::*;
    let spins = functions_of(prog);
    assert_eq!(spins.len(), 2, "nm found {spins:?}");
    let loads = [0x5555_0000_0000u64, 0x5566_0000_0000];
    let len = std::fs::metadata(prog).unwrap().len().max(0x10000);
    let path = prog.to_str().unwrap().to_owned();
    let modules: Vec<Module> = [1u32, 2]
        .iter()
        .zip(loads)
        .map(|(&pid, load_address)| Module {
            associated_pid: pid,
            flags: ModuleFlags::LOADED | ModuleFlags::IS_EXE | ModuleFlags::FIRST_MODULE_REC_IN_PROCESS,
            segment_type: processor_mode::BIT64,
            load_address,
            length: len,
            unload_tsc: NEVER_UNLOADED,
            name: Some("prog".into()),
            path: Some(path.clone()),
            ..Default::default()
        })
        .collect();
    let out = dir.join("two.tb5");
    let mut w = Tb5Writer::create(&out).unwrap();
    let os = Os { platform: os_family::LINUX64, name: Some("Linux".into()), ..Default::default() };
    tbrw_import::globals::write_globals(&mut w, &Software { host: None, os: Some(os), application: None }).unwrap();
    w.write_modules(&modules).unwrap();
    let field = tbrw_schema::descriptor::field;
    let mut st = w
        .stream(0)
        .unwrap()
        .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })
        .unwrap()
        .data_descriptor(&[
            field(desc_type::IP, desc_subtype::NONE, 8, "pc"),
            field(desc_type::PID, desc_subtype::NONE, 4, "pid"),
            field(desc_type::TID, desc_subtype::NONE, 4, "tid"),
        ])
        .unwrap();
    st.events(&[Event { id: 0, flags: EventFlags::TBS, name: Some("cpu-clock".into()), ..Default::default() }])
        .unwrap();
    let mut data = st.data().unwrap();
    let mut bytes = Vec::new();
    for (pid, load) in [1u32, 2].into_iter().zip(loads) {
        for (_, a, size) in &spins {
            for i in 0..per {
                // Each process at addresses of its own (even offsets, odd
                // ones): names from one process's addresses must not be
                // all the library has.
                bytes.extend_from_slice(&(load + a + (2 * i + u64::from(pid) - 1) % size).to_le_bytes());
                bytes.extend_from_slice(&pid.to_le_bytes());
                bytes.extend_from_slice(&pid.to_le_bytes());
            }
        }
    }
    data.add(&bytes).unwrap();
    data.done().unwrap();
    st.finish().unwrap();
    w.close().unwrap();
    out
}

/// Issue 33, item 2: a library mapped in several processes is one
/// library of the profile, and its functions are named in every process.
#[test]
fn firefox_names_a_library_in_every_process_that_maps_it() {
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build_program(dir.path()) else { return };
    let file = two_processes(dir.path(), &prog, 50);
    let v = firefox_json(&file, dir.path(), &[]);
    let libs: Vec<&str> = v["libs"].as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(libs, ["prog"]);
    let threads = v["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2);
    for t in threads {
        let strings = t["stringArray"].as_array().unwrap();
        // Each sample's frame's function, by name.
        let mut per: BTreeMap<&str, u64> = BTreeMap::new();
        for stack in t["samples"]["stack"].as_array().unwrap() {
            let frame = t["stackTable"]["frame"][stack.as_u64().unwrap() as usize].as_u64().unwrap() as usize;
            let func = t["frameTable"]["func"][frame].as_u64().unwrap() as usize;
            let name = t["funcTable"]["name"][func].as_u64().unwrap() as usize;
            *per.entry(strings[name].as_str().unwrap()).or_default() += 1;
        }
        assert_eq!(per, BTreeMap::from([("spin_a", 50), ("spin_b", 50)]), "{}", t["name"]);
    }
}

fn decode_pprof(file: &Path, dir: &Path, extra: &[&str]) -> Profile {
    let out = dir.join("p.pb.gz");
    let mut args = vec!["export", "pprof", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "-f"];
    args.extend_from_slice(extra);
    let o = tbrw(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Profile::decode(gunzip(&out).as_slice()).unwrap()
}

/// Issue 33, items 4 and 5: every numeric label keeps a unit (pprof drops
/// one that has neither value nor unit: cpu 0 vanished), and every
/// location has a function with a name.
#[test]
fn pprof_labels_keep_a_unit_and_locations_a_named_function() {
    let dir = tempfile::tempdir().unwrap();
    for file in [sample(), perf_matrix()] {
        let p = decode_pprof(&file, dir.path(), &[]);
        let s = |i: i64| p.string_table[i as usize].as_str();
        let mut cpu0 = 0;
        for x in &p.sample {
            for l in &x.label {
                if l.str == 0 {
                    assert_eq!(s(l.num_unit), s(l.key), "{}: label {}", file.display(), s(l.key));
                    cpu0 += i64::from(s(l.key) == "cpu" && l.num == 0) * x.value[0];
                }
            }
            assert!(x.label.iter().any(|l| s(l.key) == "cpu"), "{}: a sample without its cpu", file.display());
        }
        assert!(cpu0 > 0, "{}: samples on cpu 0", file.display());
        // One line a location, or with inline frames one per function
        // inlined there before its own: each named.
        for l in &p.location {
            assert!(!l.line.is_empty(), "{l:?}");
            for line in &l.line {
                let f = &p.function[line.function_id as usize - 1];
                assert!(!s(f.name).is_empty(), "{l:?}");
            }
        }
    }
}

/// Issue 33, item 6: the executable's mapping first (pprof's `File:`),
/// the period and its type from the event, values in their units.
#[test]
fn pprof_names_the_program_and_the_events_period_and_units() {
    let dir = tempfile::tempdir().unwrap();
    let p = decode_pprof(&perf_matrix(), dir.path(), &[]);
    let s = |i: i64| p.string_table[i as usize].as_str();
    let vt = |v: &pprof::ValueType| (s(v.r#type).to_owned(), s(v.unit).to_owned());
    assert_eq!(s(p.mapping[0].filename), "/tmp/mx/named");
    // cpu-clock at 999 Hz: each sample stands for 1,001,001 ns of CPU time.
    let types: Vec<_> = p.sample_type.iter().map(vt).collect();
    assert_eq!(types, [("samples".into(), "count".into()), ("cpu".into(), "nanoseconds".into())]);
    assert_eq!(s(p.default_sample_type), "cpu");
    assert_eq!(p.period_type.as_ref().map(vt), Some(("cpu".into(), "nanoseconds".into())));
    assert_eq!(p.period, 1_001_001);
    let cpu_ns: i64 = p.sample.iter().map(|x| x.value[1]).sum();
    assert_eq!(cpu_ns, 987 * 1_001_001);

    // The shipped sample: two events counted every 2,000,003 occurrences;
    // its busiest program first.
    let p = decode_pprof(&sample(), dir.path(), &[]);
    let s = |i: i64| p.string_table[i as usize].as_str();
    assert_eq!(s(p.mapping[0].filename), "/usr/bin/app");
    assert_eq!(p.period_type.as_ref().map(|v| (s(v.r#type), s(v.unit))), Some(("events", "count")));
    assert_eq!(p.period, 2_000_003);
    // A sampler import: its tick's value has no stated unit, so no period.
    let p = decode_pprof(&sampler_import(dir.path()), dir.path(), &[]);
    let s = |i: i64| p.string_table[i as usize].as_str();
    assert_eq!(s(p.mapping[0].filename), "fixture-app");
    assert_eq!((p.period_type, p.period), (None, 0));
}

/// Issue 33, item 7: locations carry the file and line `tbrw report --by
/// line` gives them, through their function's file.
#[test]
fn pprof_lines_are_the_line_reports() {
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build_program(dir.path()) else { return };
    let file = two_processes(dir.path(), &prog, 40);
    let p = decode_pprof(&file, dir.path(), &[]);
    let s = |i: i64| p.string_table[i as usize].as_str();
    let mut got: BTreeMap<(String, String, i64), i64> = BTreeMap::new();
    for x in &p.sample {
        let loc = &p.location[x.location_id[0] as usize - 1];
        let line = &loc.line[0];
        let f = &p.function[line.function_id as usize - 1];
        *got.entry((s(f.name).to_owned(), s(f.filename).to_owned(), line.line)).or_default() += x.value[0];
    }
    assert!(p.mapping.iter().all(|m| m.has_filenames && m.has_line_numbers), "{:?}", p.mapping);
    let opts = ReportOptions::new(Default::default(), &[By::Line]);
    let r = report::run(&open(&file), &opts, &mut Vec::new(), &mut |_| {}).unwrap();
    let mut want: BTreeMap<(String, String, i64), i64> = BTreeMap::new();
    for row in &r.rows {
        let report::Key::Line { file: Some(f), line: Some(l), function: Some(func), .. } = &row.key else {
            panic!("{:?}", row.key)
        };
        *want.entry((func.clone(), f.clone(), i64::from(*l))).or_default() += row.samples as i64;
    }
    assert!(want.len() > 4 && want.keys().all(|k| k.1.ends_with("prog.c")), "{want:?}");
    assert_eq!(got, want);
}

/// Issue 33, item 8: the subtitle's start is a date, tick labels stay on
/// the axis, and the same bars have names whichever the lanes are.
#[test]
fn timeline_dates_its_start_keeps_ticks_on_the_axis_and_labels_bars_alike() {
    let dir = tempfile::tempdir().unwrap();
    let mtmc = golden_mtmc(dir.path());
    let draw = |lanes: timeline::Lanes, width: u32| {
        let mut svg = Vec::new();
        timeline::write(&open(&mtmc), &TimelineOptions { lanes, width, ..TimelineOptions::default() }, &mut svg)
            .unwrap();
        String::from_utf8(svg).unwrap()
    };
    let text = draw(timeline::Lanes::Thread, 1200);
    assert!(text.contains(">from 2023-09-01 00:00:00.100000000 UTC (start_realtime_ns)</text>"), "{text}");
    for width in [300, 700, 1200, 3000] {
        let mut labelled = Vec::new();
        for lanes in timeline::Lanes::ALL {
            let text = draw(lanes, width);
            let doc = roxmltree::Document::parse(&text).unwrap();
            let axis =
                doc.descendants().find(|n| n.has_tag_name("line") && n.attribute("y1") == n.attribute("y2")).unwrap();
            let at = |n: roxmltree::Node, a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
            let (left, right, y) = (at(axis, "x1"), at(axis, "x2"), at(axis, "y1"));
            // Tick labels, with their width as the drawing estimates it (7 px a character).
            for t in doc
                .descendants()
                .filter(|n| n.has_tag_name("text") && n.attribute("y").is_some_and(|v| v.parse::<f64>().unwrap() > y))
            {
                let (x, w) = (at(t, "x"), t.text().unwrap().chars().count() as f64 * 7.0);
                let (a, z) = match t.attribute("text-anchor") {
                    Some("start") => (x, x + w),
                    Some("end") => (x - w, x),
                    Some("middle") => (x - w / 2.0, x + w / 2.0),
                    // The note under the axis.
                    _ => continue,
                };
                assert!(
                    a >= left - 1e-6 && z <= right + 1e-6,
                    "{width} {lanes:?}: {:?} at {a}..{z} off the axis {left}..{right}",
                    t.text()
                );
            }
            // The bars' labels: the text inside each bar's group, and where the bars are.
            let bars: Vec<(String, String)> = doc
                .descendants()
                .filter(|n| n.has_tag_name("g"))
                .map(|g| {
                    let r = g.children().find(|c| c.has_tag_name("rect")).unwrap();
                    let label = g.children().find(|c| c.has_tag_name("text")).and_then(|t| t.text()).unwrap_or("");
                    (format!("{}+{}", r.attribute("x").unwrap(), r.attribute("width").unwrap()), label.to_owned())
                })
                .collect();
            let mut bars = bars;
            bars.sort();
            labelled.push(bars);
        }
        assert_eq!(labelled[0], labelled[1], "width {width}: bars and their labels, --lanes thread and cpu");
        assert!(labelled[0].iter().any(|b| !b.1.is_empty()) || width < 400, "{width}: {labelled:?}");
    }
}
