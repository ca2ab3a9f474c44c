//! Feeds arbitrary bytes, as a TB5 file on disk, to what the command line
//! and the example programs do with a file that opens, through the
//! libraries the command line is a thin layer over: every report (each
//! grouping, each weight, filters; they bind in memory), the VTune CSV,
//! sampler and viewer exports (flame graph, folded stacks, pprof, Firefox,
//! timeline), `print_tb5` in text and JSON, and last a bind stored in the
//! file (an append). Built with `--cfg fuzzing`, the reader accepts any
//! stored checksum, so a mutated file reaches all of them with content
//! `verify` would reject. Errors are expected; a panic, an abort or an
//! outsized allocation is a bug.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tbrw_examples::print::{print_file, Options, Records};
use tbrw_export::flamegraph::FlameOptions;
use tbrw_export::timeline::TimelineOptions;
use tbrw_export::vtune_csv::{export_vtune_csv, Clock, CsvOptions};
use tbrw_export::MemoryFolder;
use tbrw_query::file_symbols::SymbolOptions;
use tbrw_query::report::{self, ReportOptions};
use tbrw_query::By;
use tbrw_query::stacks::ViewOptions;
use tbrw_query::{Filters, Query, Weight};

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

const BY: [By; 7] = [By::Auto, By::Process, By::Thread, By::Module, By::Event, By::Task, By::Function];

fuzz_target!(|data: &[u8]| {
    let dir = scratch();
    let file = dir.join("in.tb5");
    let _ = std::fs::remove_file(&file);
    if std::fs::write(&file, data).is_err() {
        return;
    }
    let Ok(f) = tb5::Tb5File::open(&file) else { return };
    let mut sink = std::io::sink();
    // Module paths in a fuzzed file name anything: symbols are looked for
    // under an empty root only, and the kernel's nowhere.
    let symbols =
        SymbolOptions { symfs: Some(dir.join("no-symbols")), kallsyms: Some(dir.join("no-kallsyms")), ..Default::default() };
    for stream in 0..f.stream_count().min(4) {
        for by in BY {
            for weight in [Weight::Samples, Weight::Cputime] {
                let query = Query { stream, weight, ..Query::default() };
                let opts = ReportOptions::new(query, &[by]).top(Some(20)).symbols(symbols.clone());
                let _ = report::run(&f, &opts, &mut Vec::new(), &mut |_| {});
            }
        }
        let filters = Filters { pid: Some(1), time: Some((0, u64::MAX / 2)), ..Filters::default() };
        let query = Query { stream, filters, ..Query::default() };
        let _ = report::run(&f, &ReportOptions::new(query, &[]).symbols(symbols.clone()), &mut Vec::new(), &mut |_| {});
        let _ = tbrw_export::elf_profile::export_profile(&f, stream, None, &mut sink);
        let view = ViewOptions { query: Query { stream, ..Query::default() }, symbols: symbols.clone() };
        for folded in [false, true] {
            let fopts = FlameOptions { folded, ..Default::default() };
            let _ = tbrw_export::flamegraph::write(&f, &view, &fopts, &mut sink, &mut Vec::new(), &mut |_| {});
        }
        let _ = tbrw_export::pprof::write(&f, &view, &mut sink, &mut Vec::new(), &mut |_| {});
        let _ = tbrw_export::firefox::write(&f, &view, &mut sink, &mut Vec::new(), &mut |_| {});
        let timeline = TimelineOptions { stream, ..Default::default() };
        let _ = tbrw_export::timeline::write(&f, &timeline, &mut sink);
    }
    let opts = CsvOptions { hostname: Some("fuzz".into()), stream: None, clock: Some(Clock::Utc) };
    let _ = export_vtune_csv(&f, &mut MemoryFolder::new(), &opts);
    drop(f);
    for json in [false, true] {
        let _ = print_file(&file, Options { json, records: Records::First(64) }, &mut sink);
    }
    if let Ok(mut w) = tb5::Tb5Writer::append(&file) {
        for n in 0..4 {
            let _ = w.dobind(n);
        }
        let _ = w.close();
    }
});
