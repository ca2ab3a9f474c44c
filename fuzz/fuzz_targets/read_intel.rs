//! Feeds arbitrary bytes to the reader as a file in Intel's layout: the
//! first byte picks the eyecatcher written over bytes 0-7 (TB5, TB6 or
//! TB7), so every input reaches the Intel parser (section tables, the
//! chain of stream tables, every section's decoder, strings at file
//! offsets, VTune's legacy events, the bind streams) rather than stopping
//! at the magic. Everything reachable is touched. Any panic, abort or
//! allocation larger than the input justifies is a bug (Intel's layout has
//! no checksums: every offset, count and length must be checked).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tb5::Tb5File;

const EYECATCHERS: [&[u8; 8]; 3] = [b"SampleF ", b"Sample6 ", b"Sample7 "];

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    if bytes.len() >= 8 {
        let eye = EYECATCHERS[usize::from(bytes[0]) % 3];
        bytes[..8].copy_from_slice(eye);
    }
    let Ok(file) = Tb5File::from_bytes("fuzz.tb7", bytes) else { return };
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
    for n in 0..file.stream_count() {
        let Ok(s) = file.stream(n) else { continue };
        if let Ok(Some(i)) = s.info() {
            let _ = file.resolve(i);
        }
        if let Ok(Some(events)) = s.events() {
            events.into_iter().for_each(|e| drop(file.resolve(e)));
        }
        if let Ok(Some(descs)) = s.descriptor() {
            descs.into_iter().for_each(|d| drop(file.resolve(d)));
        }
        let _ = s.layout();
        let _ = s.user_defined();
        if let Ok(Some(d)) = s.data() {
            d.records().for_each(drop);
            let _ = d.chunks_from(d.len() / 2, 100).map(|c| c.count());
        }
        if let Ok(samples) = s.legacy_samples() {
            samples.for_each(drop);
        }
        let _ = s.is_bound();
        if let Ok(Some(b)) = s.bind_view() {
            let mut v = Vec::new();
            b.data_binds(0, 10_000, &mut v);
            let _ = (0..b.process_count().min(10_000)).filter_map(|i| b.process(i)).count();
            let _ = (0..b.thread_count().min(10_000)).filter_map(|i| b.thread(i)).count();
            (0..b.module_bind_count().min(10_000)).for_each(|i| {
                let _ = b.module_bind(i);
            });
        }
    }
});
