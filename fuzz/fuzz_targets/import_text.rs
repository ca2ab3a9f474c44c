//! Feeds arbitrary text to the line-oriented importers: each line to the
//! MTMC task-log parser, the whole text to the winIDEA Text1 parser, and
//! what parses through the call builder and the statistics check. Errors
//! are expected; a panic, an abort or an outsized allocation is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tbrw_import::{mtmc, winidea};
use tbrw_query::tasks::topdown;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = "fuzz.txt";
    for (i, line) in text.lines().enumerate() {
        if let Ok(Some(td)) = mtmc::parse_line(line, path, i as u64 + 1).map(|t| t.topdown) {
            let _ = topdown(&td);
        }
    }
    if let Ok(ex) = winidea::parse_text1(text, path) {
        if let Ok(tl) = winidea::build(&ex, &ex.timeline, path, "fuzz.BIN", ex.total_time) {
            let _ = winidea::check(&ex, &tl);
        }
    }
});
