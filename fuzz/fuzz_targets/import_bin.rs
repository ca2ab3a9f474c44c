//! Feeds arbitrary bytes to the binary importers: the winIDEA `.BIN`
//! timeline in both layouts (and the layout detection), and the ELF
//! sampler's profile reader. Errors are expected; a panic, an abort or an
//! outsized allocation is a bug.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tbrw_cli::sampler::{Next, ProfileReader, Sample};
use tbrw_cli::winidea::{self, BinVersion};

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.BIN");
    let _ = winidea::detect_bin(data);
    let _ = winidea::parse_bin(data, BinVersion::V1_0, path);
    let _ = winidea::parse_bin(data, BinVersion::V1_1, path);
    if let Ok(mut r) = ProfileReader::new(data, Path::new("fuzz.prof"), Some(data.len() as u64)) {
        let mut s = Sample::default();
        while let Ok(Next::Sample) = r.next_sample(&mut s) {}
    }
});
