//! Feeds arbitrary bytes, as a TB5 file on disk, to what the command line
//! and the example programs do with a file that opens: every sample
//! grouping and the task report of every stream (which bind in memory),
//! the VTune CSV, sampler and viewer exports (flame graph, folded stacks,
//! pprof, Firefox, timeline), `print_tb5` in text and JSON, and
//! last `tbrw bind` (an append). Built with `--cfg fuzzing`, the reader
//! accepts any stored checksum, so a mutated file reaches all of them with
//! content `verify` would reject. Errors are expected; a panic, an abort or
//! an outsized allocation is a bug.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tbrw_cli::commands;
use tbrw_export::vtune_csv::{export_vtune_csv, Clock, CsvOptions};
use tbrw_query::report::{By, ReportOptions, Weight};
use tbrw_import::elf_profile::export_sampler;
use tbrw_query::file_symbols::SymbolOptions;
use tbrw_export::flamegraph::FlameOptions;
use tbrw_export::timeline::TimelineOptions;
use tbrw_query::walk::ViewOptions;
use tbrw_examples::print::{print_file, Options, Records};

/// A private folder in memory when the machine has one (the fuzzer writes a file per input).
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() { shm.to_owned() } else { std::env::temp_dir() };
        let dir = base.join(format!("tbrw-fuzz-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch folder");
        dir
    })
}

const BY: [By; 6] = [By::Auto, By::Process, By::Thread, By::Module, By::Event, By::Task];

fuzz_target!(|data: &[u8]| {
    let dir = scratch();
    let file = dir.join("in.tb5");
    let _ = std::fs::remove_file(&file);
    if std::fs::write(&file, data).is_err() {
        return;
    }
    let Ok(f) = tb5::Tb5File::open(&file) else { return };
    let streams = f.stream_count().min(4);
    drop(f);
    let mut sink = std::io::sink();
    for stream in 0..streams {
        for by in BY {
            for weight in [Weight::Samples, Weight::Cputime] {
                let opts = ReportOptions { stream, by, weight, top: Some(20), ..Default::default() };
                let _ = commands::report(&file, &opts, by == By::Module, &mut |_, _| {}, &mut sink);
            }
        }
        let filtered = ReportOptions { stream, pid: Some(1), time: Some((0, u64::MAX / 2)), ..Default::default() };
        let _ = commands::report(&file, &filtered, false, &mut |_, _| {}, &mut sink);
        let prof = dir.join("out.prof");
        let _ = export_sampler(&file, stream, &prof);
        let _ = std::fs::remove_file(&prof);
        // Module paths in a fuzzed file name anything: symbols are looked for
        // under an empty root only, and the kernel's nowhere.
        let symbols = SymbolOptions {
            symfs: Some(dir.join("no-symbols")),
            kallsyms: Some(dir.join("no-kallsyms")),
            ..Default::default()
        };
        let view = ViewOptions { stream, symbols, ..Default::default() };
        let out = dir.join("view.out");
        let (o, e) = (&mut std::io::sink(), &mut std::io::sink());
        for folded in [false, true] {
            let fopts = FlameOptions { folded, ..Default::default() };
            let _ = commands::export_flamegraph(&file, &out, &view, &fopts, true, o, e);
        }
        let _ = commands::export_pprof(&file, &out, &view, true, o, e);
        let _ = commands::export_firefox(&file, &out, &view, true, o, e);
        let timeline = TimelineOptions { stream, ..Default::default() };
        let _ = commands::export_timeline(&file, &out, &timeline, true, o, e);
        let _ = std::fs::remove_file(&out);
    }
    let csv = dir.join("csv");
    let opts = CsvOptions { hostname: Some("fuzz".into()), stream: None, clock: Some(Clock::Utc) };
    let _ = export_vtune_csv(&file, &csv, &opts);
    let _ = std::fs::remove_dir_all(&csv);
    for json in [false, true] {
        let _ = print_file(&file, Options { json, records: Records::First(64) }, &mut sink);
    }
    let _ = commands::bind(&file, None, &mut |_| {}, &mut sink);
});
