//! Importing a large winIDEA export: `cargo bench -p tbrw-cli --bench winidea`
//! writes a Text1 export whose TIMELINE has 1 million events (nested calls in
//! four contexts, some data writes) and the same events as a version 1.1
//! `.BIN`, and imports each, with its peak resident memory. Pass an event
//! count to choose (`-- 5000000`).

use std::io::{BufWriter, Write};
use std::time::Instant;

use tbrw_import::winidea::{self, BinVersion, Pos, TimelineEvent};

mod support;
use support::status_kib;

fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir_in(std::env::var_os("TBRW_BENCH_DIR").unwrap_or_else(|| ".".into())).unwrap();
    let mut events = Vec::with_capacity(n);
    let mut x = 0x1234_5678_9abc_def1u64;
    let mut t = 0i64;
    while events.len() + 6 <= n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let ctx = (x % 4) as u32;
        let (f, g) = ((x >> 8) as u32 % 64, 64 + (x >> 16) as u32 % 64);
        let mut ev = |handle: u32, kind: u8, value: u64, dt: i64| {
            t += dt;
            events.push(TimelineEvent { handle, kind, value, time: t, context: ctx, at: Pos::Byte(0) });
        };
        ev(f, b'E', 0, 1 + (x % 50) as i64);
        ev(f, b'S', 0, 10 + (x % 300) as i64);
        ev(g, b'E', 0, 0);
        ev(g, b'X', 0, 5 + (x % 200) as i64);
        ev(f, b'R', 0, 0);
        if x.is_multiple_of(2) {
            ev(0x2000_0000 + (x % 8) as u32, b'W', x & 0xFFFF, 1);
        } else {
            ev(f, b'X', 0, 3 + (x % 100) as i64);
            continue;
        }
        ev(f, b'X', 0, 3 + (x % 100) as i64);
    }
    let export = dir.path().join("export.txt");
    let header = {
        let mut h = String::from("* HANDLE(Functions) %HANDLE%,%NAME%,%VALUE%\n");
        for f in 0..128 {
            h += &format!("{f:08X},function_{f},\n");
        }
        h += "* HANDLE(Data) %HANDLE%,%NAME%,%VALUE%\n";
        for v in 0..8 {
            h += &format!("{:08X},variable_{v},\n", 0x2000_0000 + v);
        }
        h += "* STATISTICS(Functions) %HANDLE%,%COUNT%,%T.NET%,%T.GROSS.AVG%,%T.PERIOD.MAX%\n00000000,1,1,1,1\n";
        h
    };
    {
        let mut out = BufWriter::new(std::fs::File::create(&export).unwrap());
        out.write_all(header.as_bytes()).unwrap();
        writeln!(out, "* TIMELINE %HANDLE%,%EVENT%,%VALUE%,%TIME%,%CONTEXT%").unwrap();
        for e in &events {
            let value = if e.kind == b'W' { format!("{:08X}", e.value) } else { String::new() };
            writeln!(out, "{:08X},{},{value},{},{:#x}", e.handle, e.kind as char, e.time, e.context).unwrap();
        }
    }
    let text_only = dir.path().join("header.txt");
    std::fs::write(&text_only, &header).unwrap();
    let bin = dir.path().join("header.txt.BIN");
    std::fs::write(&bin, winidea::write_bin(&events, BinVersion::V1_1)).unwrap();

    drop(events);
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
