//! Feeds arbitrary bytes to the binary importers: the winIDEA `.BIN`
//! timeline in both layouts (and the layout detection), and the ELF
//! sampler's profile reader. Errors are expected; a panic, an abort or an
//! outsized allocation is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tbrw_elf_profile::Opened;
use tbrw_elf_profile::{detect, Next, ProfileReader, SampleHead};
use tbrw_import::winidea::{self, BinVersion};

fuzz_target!(|data: &[u8]| {
    let path = "fuzz.BIN";
    let _ = winidea::detect_bin(data);
    let _ = winidea::parse_bin(data, BinVersion::V1_0, path);
    let _ = winidea::parse_bin(data, BinVersion::V1_1, path);
    // The profile as the importer sees a plain file: every layout is tried
    // on the bytes, then the samples are walked in the layout detected.
    let prof = "fuzz.prof";
    let size = Some(data.len() as u64);
    let opened = Opened { prefix: data.to_vec(), rest: Box::new(std::io::empty()), compressed: false, size };
    if let Ok(found) = detect(&opened, prof, None) {
        let mut r = ProfileReader::new(data, prof, size, &found);
        let mut s = SampleHead::default();
        while let Ok(Next::Sample) = r.next_sample(&mut s) {}
    }
});
