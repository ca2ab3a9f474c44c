//! Importing a large MTMC task log: `cargo bench -p tbrw-cli --bench mtmc`
//! writes a 1-million-line log (8 counters per task) and imports it.
//! Pass a line count to choose (`-- 5000000`).

use std::time::Instant;

mod support;
use support::inputs::mtmc_log;

fn main() {
    let lines: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir_in(std::env::var_os("TBRW_BENCH_DIR").unwrap_or_else(|| ".".into())).unwrap();
    let log = dir.path().join("tasks.log");
    mtmc_log(&log, lines);
    let bytes = std::fs::metadata(&log).unwrap().len();
    let out = dir.path().join("tasks.tb5");
    let t = Instant::now();
    let mut w = tbrw::Tb5Writer::create(&out).unwrap();
    let input = std::fs::File::open(&log).unwrap();
    let stats =
        tbrw_import::mtmc::import_mtmc(input, &log.display().to_string(), &mut w, &Default::default(), ()).unwrap();
    w.close().unwrap();
    let s = t.elapsed().as_secs_f64();
    println!(
        "{} lines ({} MB) imported in {s:.2} s: {:.2} M lines/s, {:.0} MB/s; TB5 file {} MB",
        stats.tasks,
        bytes / 1_000_000,
        stats.tasks as f64 / s / 1e6,
        bytes as f64 / s / 1e6,
        std::fs::metadata(&out).unwrap().len() / 1_000_000
    );
}
