//! The registry: every export run through [`Export`] writes what its own
//! function writes, says it in its summary, and refuses the kind of output
//! it does not write. The list here is the list of exports: a new one
//! gets a line in `registry()`.
#![cfg(all(feature = "flamegraph", feature = "pprof", feature = "firefox"))]

use tbrw_export::{elf_profile, firefox, flamegraph, pprof, timeline, vtune_csv, MemoryFolder, ViewOptions};
use tbrw_export::{Export, Output, OutputKind, Summary};

const PERF: &str = "../cli/tests/data/matrix/perf.tb5";

/// Every export of the crate, with default options.
fn registry() -> Vec<Box<dyn Export>> {
    vec![
        Box::new(vtune_csv::VtuneCsv {
            options: vtune_csv::CsvOptions { hostname: Some("h".into()), ..Default::default() },
        }),
        Box::new(elf_profile::SamplerProfile::default()),
        Box::new(flamegraph::Flamegraph::default()),
        Box::new(pprof::Pprof::default()),
        Box::new(firefox::Firefox::default()),
        Box::new(timeline::SvgTimeline::default()),
    ]
}

/// Runs `e` on `file` into the output it writes: the bytes (a file), or
/// the files (a folder).
fn run(e: &dyn Export, file: &tbrw::Tb5File) -> (Result<Summary, String>, Vec<u8>, MemoryFolder) {
    let (mut bytes, mut folder) = (Vec::new(), MemoryFolder::new());
    let out = match e.output() {
        OutputKind::File => Output::File(&mut bytes),
        OutputKind::Folder(_) => Output::Folder(&mut folder),
    };
    let r = e.export(file, out, &mut Vec::new(), &mut ()).map_err(|e| e.to_string());
    (r, bytes, folder)
}

#[test]
fn the_registry_names_each_export_once_with_its_output() {
    let names: Vec<&str> = registry().iter().map(|e| e.name()).collect();
    assert_eq!(names, ["vtune-csv", "sampler", "flamegraph", "pprof", "firefox", "timeline"]);
    for e in registry() {
        let folder = matches!(e.output(), OutputKind::Folder(_));
        assert_eq!(folder, e.name() == "vtune-csv", "{}", e.name());
        if let OutputKind::Folder(files) = e.output() {
            assert!((files.owns)("a-s0-hostname-h.csv") && !(files.owns)("notes.txt"));
        }
    }
}

#[test]
fn each_export_through_the_registry_writes_what_its_function_writes() {
    let file = tbrw::Tb5File::open(PERF).unwrap();
    let view = ViewOptions::default();
    let sink = &mut Vec::new();
    for e in registry() {
        let (summary, bytes, folder) = run(&*e, &file);
        let mut direct = Vec::new();
        match e.name() {
            "pprof" => {
                let p = pprof::write(&file, &view, &mut direct, sink, &mut ()).unwrap();
                let line = summary.unwrap().line;
                assert!(line.starts_with(&format!("{} samples aggregated into {} stacks,", p.samples, p.stacks)));
                // The gzip stream's blocks depend on threads: compare the profile.
                assert_eq!(pprof::profile(&file, &view, sink, &mut ()).unwrap().sample.len(), p.stacks);
                assert_eq!(&bytes[..2], &[0x1f, 0x8b]);
            }
            "flamegraph" => {
                let n = flamegraph::write(&file, &view, &Default::default(), &mut direct, sink, &mut ()).unwrap();
                assert_eq!(summary.unwrap().line, format!("{n} distinct stacks"));
                assert_eq!(bytes, direct);
            }
            "firefox" => {
                let s = firefox::write(&file, &view, &mut direct, sink, &mut ()).unwrap();
                let summary = summary.unwrap();
                assert_eq!(
                    summary.line,
                    format!("{} threads, {} samples, {} markers", s.threads, s.samples, s.markers)
                );
                assert!(summary.built.is_some_and(|b| b.is::<firefox::FirefoxProfile>()));
            }
            "sampler" => {
                let d = elf_profile::export_profile(&file, 0, None, &mut direct).map_err(|e| e.to_string());
                match d {
                    Ok(n) => {
                        assert_eq!(summary.unwrap().line, format!("{n} samples"));
                        assert_eq!(bytes, direct);
                    }
                    Err(d) => assert_eq!(summary.unwrap_err(), d),
                }
            }
            "timeline" => {
                let d = timeline::write(&file, &Default::default(), &mut direct).map_err(|e| e.to_string());
                assert_eq!(summary.map(|s| s.line).unwrap_err(), d.unwrap_err(), "perf.tb5 has no intervals");
            }
            "vtune-csv" => {
                let mut d = MemoryFolder::new();
                let opts = vtune_csv::CsvOptions { hostname: Some("h".into()), ..Default::default() };
                let r = vtune_csv::export_vtune_csv(&file, &mut d, &opts).unwrap();
                let summary = summary.unwrap();
                assert_eq!(summary.files, r.files);
                assert!(!summary.files.is_empty());
                assert_eq!(folder.files(), d.files());
                assert_eq!(summary.notes.len(), r.skipped.len() + r.unended.len() + r.decreasing.len());
            }
            other => panic!("{other}: an export this test does not know"),
        }
    }
}

#[test]
fn an_export_refuses_the_kind_of_output_it_does_not_write() {
    let file = tbrw::Tb5File::open(PERF).unwrap();
    for e in registry() {
        let (mut bytes, mut folder) = (Vec::new(), MemoryFolder::new());
        let wrong = match e.output() {
            OutputKind::File => Output::Folder(&mut folder),
            OutputKind::Folder(_) => Output::File(&mut bytes),
        };
        let err = e.export(&file, wrong, &mut Vec::new(), &mut ()).unwrap_err();
        assert!(err.to_string().contains(&format!("{} export", e.name())), "{}: {err}", e.name());
        assert!(bytes.is_empty() && folder.files().is_empty(), "{}: nothing written", e.name());
    }
}
