//! Call stacks (`--call-graph fp|dwarf`, `-g`) stored in the stream's
//! stack table and read the way a user reads them: tests/c/oncpu.c (a
//! CPU-bound thread calling `crunch -> stage -> leaf_deep` and a second
//! leaf `leaf_side`, a thread mostly asleep, a fork+exec child with its
//! own hot loop) recorded by `sampler`, with frame pointers on an `-O1
//! -fno-omit-frame-pointer` build and with DWARF CFI on an `-O2
//! -fomit-frame-pointer` one. The folded flame graph (what `tbrw export
//! flamegraph --folded` writes) must show `crunch;stage;leaf_deep` for at
//! least 90 % of `leaf_deep`'s samples; the report by function must answer
//! as without stacks; `report --children` must agree with the inclusive
//! counts the folded stacks give. Where ptrace is refused the tests say so
//! and pass without checking.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::*;
use tbrw::Tb5File;
use tbrw_export::flamegraph::{folded, FlameOptions};
use tbrw_query::file_symbols::SymbolOptions;
use tbrw_query::report::{Key, ReportOptions};
use tbrw_query::stacks::ViewOptions;
use tbrw_query::By;

struct Run {
    _dir: tempfile::TempDir,
    tb5: PathBuf,
}

/// oncpu.c built with `flags` and recorded with `call_graph` (sampler
/// arguments); `None` where ptrace is refused.
fn recording(call_graph: &[&str], flags: &[&str]) -> Option<Run> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let bin = dir.join("oncpu");
    // The flags after cc's `-O1 -g`: a later -O wins.
    let mut extra = flags.to_vec();
    extra.push("-lpthread");
    cc(&c_source("oncpu"), &bin, &extra);
    let tb5 = dir.join("run.tb5");
    let mut args: Vec<&OsStr> = vec!["-F".as_ref(), "1000".as_ref()];
    args.extend(call_graph.iter().map(|a| -> &OsStr { a.as_ref() }));
    args.extend::<[&OsStr; 3]>(["-o".as_ref(), tb5.as_ref(), bin.as_ref()]);
    let out = sampler_in(&dir, &args)?;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    Some(Run { _dir: tmp, tb5 })
}

fn fp() -> Option<&'static Run> {
    static RUN: OnceLock<Option<Run>> = OnceLock::new();
    RUN.get_or_init(|| recording(&["--call-graph", "fp"], &["-O1", "-fno-omit-frame-pointer"])).as_ref()
}

fn dwarf() -> Option<&'static Run> {
    static RUN: OnceLock<Option<Run>> = OnceLock::new();
    RUN.get_or_init(|| recording(&["--call-graph", "dwarf"], &["-O2", "-fomit-frame-pointer"])).as_ref()
}

fn without_stacks() -> Option<&'static Run> {
    static RUN: OnceLock<Option<Run>> = OnceLock::new();
    RUN.get_or_init(|| recording(&[], &["-O1", "-fno-omit-frame-pointer"])).as_ref()
}

/// The folded stacks `tbrw export flamegraph --folded` writes (`by`: its
/// `--by`), each as its frames, outermost first, with its samples.
fn folded_stacks(path: &Path, by: &[By]) -> Vec<(Vec<String>, u64)> {
    let file = Tb5File::open(path).unwrap();
    let fopts = FlameOptions { by: by.to_vec(), folded: true, title: None };
    let mut warn = Vec::new();
    // Frames as unwound: inlined functions (`cpu_now` in `crunch`) are not
    // what these tests check.
    let mut view = ViewOptions::default();
    view.symbols.no_inline = true;
    let lines = folded(&file, &view, &fopts, &mut warn, &mut |_| {}).unwrap();
    lines.into_iter().map(|(stack, n)| (stack.split(';').map(str::to_owned).collect(), n)).collect()
}

/// Of `leaf`'s samples (stacks ending in it), the share whose stack has
/// `chain` as consecutive frames, and the samples.
fn chain_share(stacks: &[(Vec<String>, u64)], leaf: &str, chain: &[&str]) -> (f64, u64) {
    let (mut all, mut hit) = (0, 0);
    for (frames, n) in stacks {
        if frames.last().map(String::as_str) != Some(leaf) {
            continue;
        }
        all += n;
        if frames.windows(chain.len()).any(|w| w.iter().zip(chain).all(|(a, b)| a == b)) {
            hit += n;
        }
    }
    (hit as f64 / all.max(1) as f64, all)
}

fn check_chains(run: &Run, mode: &str) {
    let stacks = folded_stacks(&run.tb5, &FlameOptions::default().by);
    let (deep, n) = chain_share(&stacks, "leaf_deep", &["crunch", "stage", "leaf_deep"]);
    let (side, m) = chain_share(&stacks, "leaf_side", &["crunch", "leaf_side"]);
    let (child, c) = chain_share(&stacks, "child_loop", &["main", "child_loop"]);
    eprintln!(
        "--call-graph {mode}: crunch;stage;leaf_deep in {:.1} % of leaf_deep's {n} samples, crunch;leaf_side in {:.1} % of leaf_side's {m}, main;child_loop in {:.1} % of child_loop's {c}",
        deep * 100.0,
        side * 100.0,
        child * 100.0
    );
    let shown: Vec<String> = stacks.iter().take(40).map(|(f, n)| format!("{} {n}", f.join(";"))).collect();
    assert!(n > 50, "leaf_deep has {n} samples: {shown:#?}");
    assert!(deep >= 0.9, "--call-graph {mode}: crunch;stage;leaf_deep in {deep:.3} of leaf_deep's samples: {shown:#?}");
    assert!(side >= 0.9, "--call-graph {mode}: crunch;leaf_side in {side:.3} of leaf_side's samples: {shown:#?}");
    assert!(child >= 0.9, "--call-graph {mode}: main;child_loop in {child:.3} of child_loop's samples: {shown:#?}");
}

#[test]
fn frame_pointers_give_top_middle_leaf() {
    let Some(run) = fp() else { return };
    check_chains(run, "fp");
}

#[test]
fn dwarf_cfi_gives_top_middle_leaf_without_frame_pointers() {
    let Some(run) = dwarf() else { return };
    check_chains(run, "dwarf");
}

/// The file's stream 0: its records' size, whether it has a stack id field
/// and a stack table; every record's stack starts with its own pc.
fn layout_of(path: &Path) -> (u32, bool, bool) {
    let file = Tb5File::open(path).unwrap();
    file.verify().unwrap();
    let s = file.stream(0).unwrap();
    let layout = s.layout().unwrap().unwrap();
    let table = s.stack_table().unwrap();
    let field = layout.find(tbrw::STACK_ID_FIELD, None).copied();
    if let (Some(id), Some(table)) = (field, &table) {
        let ip = *layout.find(tbrw::desc_type::IP, None).unwrap();
        let mut frames = Vec::new();
        let (mut records, mut deep) = (0u64, 0u64);
        for rec in s.data().unwrap().unwrap().records() {
            frames.clear();
            table.frames(id.read_le(rec).unwrap() as u32, &mut frames).unwrap();
            assert_eq!(frames[0], ip.read_le(rec).unwrap(), "a stack starts with its sample's pc, as perf's");
            records += 1;
            deep += u64::from(frames.len() > 2);
        }
        assert!(deep * 2 > records, "{deep} of {records} stacks more than two deep");
        // Memory and the file grow with distinct frames, not samples.
        assert!(table.len() < records, "{} nodes for {records} samples", table.len());
    }
    (layout.record_size(), field.is_some(), table.is_some())
}

#[test]
fn the_stack_id_is_the_perf_imports_field_and_none_keeps_the_old_layout() {
    let (Some(fp), Some(dwarf), Some(none)) = (fp(), dwarf(), without_stacks()) else { return };
    assert_eq!(layout_of(&fp.tb5), (48, true, true));
    assert_eq!(layout_of(&dwarf.tb5), (48, true, true));
    assert_eq!(layout_of(&none.tb5), (sampler::tb5::RECORD_SIZE[0] as u32, false, false));
    let file = Tb5File::open(&fp.tb5).unwrap();
    let s = file.stream(0).unwrap();
    let layout = s.layout().unwrap().unwrap();
    let f = layout.find(tbrw::STACK_ID_FIELD, None).unwrap();
    let name = s.descriptor().unwrap().unwrap()[f.entry].name;
    assert_eq!(file.string(name).unwrap(), "stack_id");
}

/// `report --by function` reads the sampled pc, never the stacks: with
/// stacks it answers as without (the on-CPU test's shares), and the self
/// figures of `--children` are its rows.
#[test]
fn report_by_function_answers_as_without_stacks() {
    let (Some(fp), Some(none)) = (fp(), without_stacks()) else { return };
    let (with, _) = function_report(&fp.tb5);
    let (without, _) = function_report(&none.tb5);
    let share = |rows: &[(String, f64, bool)], f: &str| rows.iter().find(|r| r.0 == f).map_or(0.0, |r| r.1);
    for f in ["leaf_deep", "leaf_side", "child_loop"] {
        let (a, b) = (share(&with, f), share(&without, f));
        assert!(a > 10.0, "{f}: {a:.1} % with stacks: {with:?}");
        assert!((a - b).abs() < 12.0, "{f}: {a:.1} % with stacks, {b:.1} % without: {with:?} / {without:?}");
    }
    let waits: f64 = with
        .iter()
        .filter(|(f, ..)| ["nanosleep", "futex", "wait4", "waitpid", "pthread_join"].iter().any(|w| f.contains(w)))
        .map(|r| r.1)
        .sum();
    assert!(waits < 3.0, "{waits:.1} % in waits with stacks: {with:?}");

    // `--by auto` chooses function, as before.
    let file = Tb5File::open(&fp.tb5).unwrap();
    let mut warn = Vec::new();
    let auto = tbrw_query::report::run(&file, &ReportOptions::default(), &mut warn, &mut |_| {}).unwrap();
    assert_eq!(auto.by, By::Function, "{:?}", auto.auto);
    let by_function: HashMap<Key, u64> = auto.rows.iter().map(|r| (r.key.clone(), r.samples)).collect();
    let children =
        tbrw_query::report::run(&file, &ReportOptions::default().children(true), &mut warn, &mut |_| {}).unwrap();
    let selves: HashMap<Key, u64> =
        children.rows.iter().filter(|r| r.samples > 0).map(|r| (r.key.clone(), r.samples)).collect();
    assert_eq!(selves, by_function, "--children's self column is --by function's");
    assert_eq!(children.samples, auto.samples);
}

/// `report --children` against the folded stacks: a function's children
/// are the samples of the stacks it is in (once per stack), its self
/// those of the stacks it ends.
#[test]
fn children_equal_the_folded_stacks_inclusive_counts() {
    let Some(run) = fp() else { return };
    let stacks = folded_stacks(&run.tb5, &[By::Function]);
    let mut inclusive: BTreeMap<&str, u64> = BTreeMap::new();
    let mut own: BTreeMap<&str, u64> = BTreeMap::new();
    for (frames, n) in &stacks {
        let distinct: BTreeSet<&str> = frames.iter().map(String::as_str).collect();
        for f in distinct {
            *inclusive.entry(f).or_default() += n;
        }
        *own.entry(frames.last().unwrap()).or_default() += n;
    }
    let file = Tb5File::open(&run.tb5).unwrap();
    let opts = ReportOptions::new(Default::default(), &[By::Function])
        .children(true)
        .symbols(SymbolOptions { no_inline: true, ..Default::default() });
    let r = tbrw_query::report::run(&file, &opts, &mut Vec::new(), &mut |_| {}).unwrap();
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    assert_eq!(r.samples, total);
    let row = |f: &str| r.rows.iter().find(|row| row.key.printed_str() == Some(f)).unwrap_or_else(|| panic!("{f}"));
    for f in ["crunch", "stage", "leaf_deep", "leaf_side", "child_loop", "main", "cruncher"] {
        let got = row(f);
        let c = got.children.as_ref().unwrap();
        assert_eq!(c.samples, inclusive[f], "{f}'s children");
        assert_eq!(got.samples, own.get(f).copied().unwrap_or(0), "{f}'s self");
        assert!((c.percent - c.samples as f64 * 100.0 / total as f64).abs() < 1e-9);
    }
    // Sorted by children, as perf's --children.
    let by_children: Vec<u64> = r.rows.iter().map(|row| row.children.as_ref().unwrap().samples).collect();
    assert!(by_children.windows(2).all(|w| w[0] >= w[1]), "{by_children:?}");
    let children = |f: &str| row(f).children.as_ref().unwrap().samples;
    assert!(children("cruncher") >= children("crunch"));
    assert!(children("crunch") >= children("stage") + children("leaf_side"));
}

#[test]
fn children_are_refused_without_stacks() {
    let Some(run) = without_stacks() else { return };
    let file = Tb5File::open(&run.tb5).unwrap();
    let e = tbrw_query::report::run(&file, &ReportOptions::default().children(true), &mut Vec::new(), &mut |_| {})
        .unwrap_err();
    // A variant the command line matches to say how to record stacks
    // (`sampler -g`); the library's message names no option.
    assert!(matches!(e, tbrw_query::QueryError::NoCallStacks { .. }), "{e:?}");
    assert!(e.to_string().contains("no call stacks"), "{e}");
}
