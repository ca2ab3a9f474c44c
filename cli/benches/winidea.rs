//! Importing a large winIDEA export: `cargo bench -p tbrw-cli --bench winidea`
//! writes a Text1 export whose TIMELINE has 1 million events (nested calls in
//! four contexts, some data writes) and the same events as a version 1.1
//! `.BIN`, and imports each, with its peak resident memory. Pass an event
//! count to choose (`-- 5000000`).

use std::time::Instant;

use tbrw_import::winidea;

mod support;
use support::inputs::winidea_inputs;
use support::status_kib;

fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir_in(std::env::var_os("TBRW_BENCH_DIR").unwrap_or_else(|| ".".into())).unwrap();
    winidea_inputs(dir.path(), n);
    let export = dir.path().join("export.txt");
    let text_only = dir.path().join("header.txt");
    let bin = dir.path().join("header.txt.BIN");
    for (what, text, bin) in [("Text1 TIMELINE", &export, None), (".BIN 1.1", &text_only, Some(bin.as_path()))] {
        let bytes = std::fs::metadata(bin.unwrap_or(text)).unwrap().len();
        let out = dir.path().join("out.tb5");
        // Resets the peak-RSS mark (Linux), so the figure is this import's.
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let base = status_kib("VmRSS:");
        let t = Instant::now();
        let mut w = tbrw::Tb5Writer::create(&out).unwrap();
        let text_file = std::fs::File::open(text).unwrap();
        let mut bin_file = bin.map(|b| std::fs::File::open(b).unwrap());
        let bin_name = bin.map(|b| b.display().to_string()).unwrap_or_default();
        let bin = bin_file.as_mut().map(|f| winidea::BinInput { input: f, name: &bin_name });
        let opts = winidea::WinIdeaOptions { bin_version: None, check: true };
        let stats = winidea::import_winidea(text_file, &text.display().to_string(), bin, &mut w, &opts).unwrap();
        w.close().unwrap();
        let s = t.elapsed().as_secs_f64();
        let peak = status_kib("VmHWM:");
        println!(
            "{what}: {} events ({} MB) imported in {s:.2} s: {:.2} M events/s, {:.0} MB/s; {} calls, {} writes; peak RSS {} MiB (before {} MiB)",
            stats.events,
            bytes / 1_000_000,
            stats.events as f64 / s / 1e6,
            bytes as f64 / s / 1e6,
            stats.calls,
            stats.writes,
            peak / 1024,
            base / 1024
        );
    }
}
