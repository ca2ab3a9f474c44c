//! A large winIDEA import for timing the interval exports (`tbrw export
//! timeline` and `firefox`, docs/EXPORT.md):
//! `cargo run --release -p tbrw-cli --example make_interval_bench -- CALLS OUT.tb5`
//! writes a Text1 export naming 4 contexts and 16 functions and a `.BIN`
//! 1.1 timeline of CALLS calls (an entry and an exit each) spread over the
//! 4 cores, one call in 16 holding a nested call, and imports them into
//! OUT.tb5 as `tbrw import winidea` does. A call starts every µs and lasts
//! 200 to 900 ns, so that nearly all of them are narrower than a pixel of
//! a 1,200-pixel drawing: the case the timeline sums per pixel.

use std::io::{BufWriter, Write};

use tbrw_import::winidea::{import_winidea, write_bin, BinInput, BinVersion, Pos, TimelineEvent, WinIdeaOptions};

const CONTEXTS: u32 = 4;
const FUNCTIONS: u32 = 16;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(calls), Some(out)) = (args.first().and_then(|a| a.parse::<u64>().ok()), args.get(1)) else {
        eprintln!("usage: make_interval_bench CALLS OUT.tb5");
        std::process::exit(2);
    };
    let dir = tempfile::tempdir_in(std::path::Path::new(out).parent().unwrap_or(std::path::Path::new("."))).unwrap();
    let text = dir.path().join("session.txt");
    let bin = dir.path().join("session.txt.BIN");
    let mut t = String::from("* CONTEXTS %NAME%,%HANDLE%\n");
    for c in 0..CONTEXTS {
        t.push_str(&format!("CORE{c}_TASKS,{c:#x}\n"));
    }
    t.push_str("\n* HANDLE(Functions) %HANDLE%,%NAME%,%VALUE%\n");
    for f in 0..FUNCTIONS {
        t.push_str(&format!("{f:08X},func_{f:02},\n"));
    }
    std::fs::write(&text, t).unwrap();
    {
        let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(&bin).unwrap());
        let event = |handle: u32, kind: u8, time: i64, context: u32| TimelineEvent {
            handle,
            kind,
            value: 0,
            time,
            context,
            at: Pos::Byte(0),
        };
        // Calls one after the other, the cores taking turns (a `.BIN` is
        // in time order, and calls that do not overlap keep it so without
        // a sort); an outer call holds its nested one.
        let mut batch = Vec::with_capacity(4096);
        let mut now = 0i64;
        let mut i = 0u64;
        while i < calls {
            let core = (i % u64::from(CONTEXTS)) as u32;
            let f = (i.wrapping_mul(7919) % u64::from(FUNCTIONS)) as u32;
            let len = 200 + (i.wrapping_mul(104_729) % 600) as i64;
            if i.is_multiple_of(16) && i + 1 < calls {
                let inner = (f + 1) % FUNCTIONS;
                batch.push(event(f, b'E', now, core));
                batch.push(event(inner, b'E', now + 50, core));
                batch.push(event(inner, b'X', now + 50 + len, core));
                batch.push(event(f, b'X', now + 100 + len, core));
                i += 2;
            } else {
                batch.push(event(f, b'E', now, core));
                batch.push(event(f, b'X', now + len, core));
                i += 1;
            }
            now += 1_000;
            if batch.len() >= 4096 {
                w.write_all(&write_bin(&batch, BinVersion::V1_1)).unwrap();
                batch.clear();
            }
        }
        w.write_all(&write_bin(&batch, BinVersion::V1_1)).unwrap();
        w.flush().unwrap();
    }
    let mut w = tbrw::Tb5Writer::create(out).unwrap();
    let mut bin_file = std::fs::File::open(&bin).unwrap();
    let bin_name = bin.display().to_string();
    let bin = BinInput { input: &mut bin_file, name: &bin_name };
    let opts = WinIdeaOptions { bin_version: Some(BinVersion::V1_1), check: false };
    let text_file = std::fs::File::open(&text).unwrap();
    let stats = import_winidea(text_file, &text.display().to_string(), Some(bin), &mut w, &opts).unwrap();
    w.close().unwrap();
    println!("{out}: {} calls over {} contexts", stats.calls, CONTEXTS);
}
