//! Feeds arbitrary bytes to the TB5 reader and touches everything it can
//! reach: every section, every record, every string. Any panic, abort or
//! huge allocation is a bug; errors are the expected outcome.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tb5::{StringId, Tb5File};

fuzz_target!(|data: &[u8]| {
    let Ok(file) = Tb5File::from_bytes("fuzz.tb5", data.to_vec()) else { return };
    let _ = file.verify();
    let _ = file.hardware();
    if let Ok(Some(sw)) = file.software() {
        let _ = file.resolve(sw);
    }
    let _ = file.version_info();
    let _ = file.user_defined_global();
    if let Ok(Some(pt)) = file.processes() {
        pt.pids().for_each(|p| drop(file.resolve(p)));
        pt.tids().for_each(|t| drop(file.resolve(t)));
    }
    if let Ok(Some(mt)) = file.modules() {
        mt.iter().flatten().for_each(|m| drop(file.resolve(m)));
        let _ = mt.get(u64::MAX);
    }
    for id in 0..file.string_count().min(10_000) + 2 {
        let _ = file.string(StringId(id));
    }
    for n in 0..file.stream_count() {
        let Ok(s) = file.stream(n) else { continue };
        let _ = s.info();
        let _ = s.events();
        let _ = s.descriptor();
        let _ = s.user_defined();
        if let Ok(Some(d)) = s.data() {
            d.records().for_each(drop);
            let _ = d.chunks_from(d.len() / 2, 100).map(|c| c.count());
        }
        if let Ok(samples) = s.legacy_samples() {
            samples.for_each(drop);
        }
    }
});
