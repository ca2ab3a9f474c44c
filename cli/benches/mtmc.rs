//! Importing a large MTMC task log: `cargo bench -p tbrw-cli --bench mtmc`
//! writes a 1-million-line log (8 counters per task) and imports it.
//! Pass a line count to choose (`-- 5000000`).

use std::io::{BufWriter, Write};
use std::time::Instant;

fn main() {
    let lines: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir_in(std::env::var_os("TBRW_BENCH_DIR").unwrap_or_else(|| ".".into())).unwrap();
    let log = dir.path().join("tasks.log");
    {
        let mut out = BufWriter::new(std::fs::File::create(&log).unwrap());
        let mut x = 0x1234_5678_9abc_def1u64;
        for i in 0..lines {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let start = 1_662_113_994_732_217_088 + i * 1_000;
            let c: Vec<String> = (0..8).map(|k| (x >> k).to_string()).collect();
            let e: Vec<String> = (0..8).map(|k| ((x >> k) + 1000 + k).to_string()).collect();
            writeln!(
                out,
                "{},{},{start},{},{},{},{},{}_{}_0_{}_{}_0,8_{}_0,{},8_{}_0,{},",
                1_100_000 + i % 64,
                1_600_000_000 + i % 64,
                start + 500 + (x % 400),
                1_100_000,
                1_241_265_920,
                start - 10,
                i * 1000,
                x,
                i * 1000 + 900,
                x.rotate_left(8),
                i % 16,
                c.join("_"),
                i % 16,
                e.join("_")
            )
            .unwrap();
        }
    }
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
